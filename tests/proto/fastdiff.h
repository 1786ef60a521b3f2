/* tests/proto/fastdiff.h: the differential check of the fast request reader against the
 * tree's way, shared by tests/proto/test_fastreq.c (a table of edge cases) and
 * tests/fuzz/fuzz_fastreq.c (any bytes).
 *
 * fastdiff(data, size, lim, &fast) runs the frame through jp_fast_parse and, when it takes
 * it, through jp_frame_parse + jp_request_parse (+ jp_submit_parse), and returns NULL when
 * both give the same answer, else the first difference found: the tree's way refused what
 * the fast path took, or a value read differently (id, op, every member the op reads,
 * every field of every spec, the creation order, each spec's text, the submit's reply
 * text).  *fast tells whether the fast path took the frame.
 */
#ifndef JSCHED_TESTS_FASTDIFF_H
#define JSCHED_TESTS_FASTDIFF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"

static bool fd_streq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool fd_deps_eq(const struct jp_dep *a, const struct jp_dep *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].job != b[i].job || !fd_streq(a[i].ref, b[i].ref) ||
		    a[i].index != b[i].index || a[i].on != b[i].on)
			return false;
	return true;
}

/* fd_spec_diff: the first field in which a and b differ, or NULL. */
static const char *fd_spec_diff(const struct jp_job_spec *a, const struct jp_job_spec *b)
{
	if (a->kind != b->kind)
		return "kind";
	if (!fd_streq(a->name, b->name) || !fd_streq(a->ref, b->ref) || !fd_streq(a->key, b->key))
		return "name, ref or key";
	if (a->priority != b->priority || a->deadline != b->deadline ||
	    a->deadline_ms != b->deadline_ms || a->not_before_ms != b->not_before_ms)
		return "priority, deadline or not_before";
	if (a->n_after != b->n_after || a->n_any_of != b->n_any_of ||
	    !fd_deps_eq(a->after, b->after, a->n_after) ||
	    !fd_deps_eq(a->any_of, b->any_of, a->n_any_of))
		return "after or any_of";
	if (a->cost != b->cost)
		return "cost";
	if (a->argc != b->argc || (a->argv == NULL) != (b->argv == NULL))
		return "argc";
	for (size_t i = 0; i < a->argc; i++)
		if (!fd_streq(a->argv[i], b->argv[i]))
			return "argv";
	if (a->argv && (a->argv[a->argc] || b->argv[b->argc]))
		return "argv's NULL";
	if (a->n_env != b->n_env)
		return "n_env";
	for (size_t i = 0; i < a->n_env; i++)
		if (!fd_streq(a->env[i].name, b->env[i].name) ||
		    !fd_streq(a->env[i].value, b->env[i].value))
			return "env";
	if (!fd_streq(a->cwd, b->cwd) || a->timeout_ms != b->timeout_ms ||
	    !fd_streq(a->backend, b->backend))
		return "cwd, timeout_ms or backend";
	if (a->has_stdin != b->has_stdin || a->stdin_len != b->stdin_len ||
	    (a->stdin_len && memcmp(a->stdin_data, b->stdin_data, a->stdin_len) != 0))
		return "stdin";
	if (a->res_memory != b->res_memory || a->res_pids != b->res_pids ||
	    a->res_cpu_milli != b->res_cpu_milli)
		return "resources";
	if (!fd_streq(a->array_text, b->array_text) || a->array.count != b->array.count ||
	    a->array_replace != b->array_replace)
		return "array";
	if (a->n_needs != b->n_needs)
		return "needs";
	if (!fd_streq(a->on_exit, b->on_exit) || a->notify != b->notify ||
	    a->hook_timeout_ms != b->hook_timeout_ms)
		return "hooks";
	if (a->retry.max_attempts != b->retry.max_attempts)
		return "retry";
	if (!fd_streq(a->fn, b->fn))
		return "fn";
	if ((a->args == NULL) != (b->args == NULL) || (a->args && !json_equal(a->args, b->args)))
		return "args";
	return NULL;
}

/* fd_reply_diff: the submit reply's text written straight against jansson's dump. */
static const char *fd_reply_diff(int64_t id, const struct jp_submit *s)
{
	int64_t *ids = calloc(s->n, sizeof(*ids));
	bool *existing = calloc(s->n, sizeof(*existing));
	const char *why = NULL;

	if (!ids || !existing) {
		free(ids);
		free(existing);
		return NULL;	/* out of memory: nothing to compare */
	}
	for (size_t i = 0; i < s->n; i++) {
		ids[i] = (int64_t)(i * 7919 % 1000003) + 1;
		existing[i] = i % 3 == 1;
	}
	for (int with = 0; with < 2 && !why; with++) {
		const bool *ex = with ? existing : NULL;
		json_t *rep = jp_submit_reply_new(id, s, ids, ex);
		char *dump = rep ? json_dumps(rep, JSON_COMPACT) : NULL;
		struct jp_buf b = {0};
		int rc;

		jp_buf_append(&b, "{\"id\":", 6);
		jp_buf_append_int(&b, id);
		rc = jp_submit_reply_text(&b, s, ids, ex);
		jp_buf_append(&b, "}", 2);
		if (s->has_refs) {
			if (rc != JSCHED_EINVAL)
				why = "reply text with refs";
		} else if (rc != 0 || !dump || strcmp((const char *)b.data, dump) != 0) {
			why = "reply text";
		}
		free(dump);
		json_decref(rep);
		jp_buf_free(&b);
	}
	free(ids);
	free(existing);
	return why;
}

/* fd_span_diff: each spec's text, parsed, is the tree's spec object. */
static const char *fd_span_diff(const struct jp_fast *f, const json_t *msg)
{
	const json_t *one = json_object_get(msg, "job"), *many = json_object_get(msg, "jobs");

	for (size_t i = 0; i < f->submit.n; i++) {
		json_t *t = json_loadb(f->spans[i].text, f->spans[i].len, 0, NULL);
		bool same = t && json_equal(t, one ? one : json_array_get(many, i));

		json_decref(t);
		if (!same)
			return "a spec's text";
	}
	return NULL;
}

static const char *fastdiff(const void *data, size_t size, const struct jp_limits *lim,
			    bool *fast)
{
	struct jp_fast *f = malloc(sizeof(*f));
	struct jp_request fr, tr;
	struct jp_submit fs = {0}, ts = {0};
	struct jp_err err;
	json_t *msg = NULL;
	const char *why = NULL;

	*fast = false;
	if (!f)
		return NULL;
	jp_fast_init(f);
	if (!jp_fast_parse(data, size, lim, f)) {
		free(f);
		return NULL;	/* not taken: the tree's way answers, as before */
	}
	*fast = true;
	fr = (struct jp_request){.id = f->id, .op = f->op, .fast = f};
	if (jp_frame_parse(data, size, &msg, &err) < 0) {
		why = err.code == JSCHED_ENOMEM ? NULL : "taken, but jansson refuses the frame";
		goto out;
	}
	if (jp_request_parse(msg, lim, &tr, &err) < 0) {
		why = "taken, but the request checker refuses it";
		goto out;
	}
	if (tr.id != fr.id || tr.op != fr.op) {
		why = "id or op";
		goto out;
	}
	if (fr.op != JP_OP_SUBMIT) {	/* a submit's job and jobs are specs, read below */
		int64_t *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;
		bool sa = false, sb = false;
		int ra = jp_req_ids(&fr, &a, &na, &sa), rb = jp_req_ids(&tr, &b, &nb, &sb);

		if (ra != rb || na != nb || sa != sb || (na && memcmp(a, b, na * sizeof(*a)) != 0))
			why = "job or jobs";
		free(a);
		free(b);
		if (why)
			goto out;
	}
	if (jp_req_bool(&fr, "detail", false) != jp_req_bool(&tr, "detail", false) ||
	    jp_req_bool(&fr, "detail", true) != jp_req_bool(&tr, "detail", true) ||
	    !fd_streq(jp_req_str(&fr, "mode", NULL), jp_req_str(&tr, "mode", NULL)) ||
	    !fd_streq(jp_req_str(&fr, "fields", NULL), jp_req_str(&tr, "fields", NULL)) ||
	    jp_req_int(&fr, "timeout_ms", -7) != jp_req_int(&tr, "timeout_ms", -7) ||
	    jp_req_int(&fr, "job", -7) != jp_req_int(&tr, "job", -7)) {
		why = "detail, mode, fields, timeout_ms or job";
		goto out;
	}
	if (fr.op != JP_OP_SUBMIT)
		goto out;
	if ((why = fd_span_diff(f, msg)))
		goto out;
	if (jp_submit_parse(&tr, lim, &ts, &err) < 0) {
		why = err.code == JSCHED_ENOMEM ? NULL : "taken, but the submit parser refuses it";
		goto out;
	}
	if (jp_submit_parse(&fr, lim, &fs, &err) < 0) {
		why = "the fast submit was not taken over";
		goto out;
	}
	if (fs.single != ts.single || fs.n != ts.n || fs.has_refs != ts.has_refs ||
	    fs.wait != ts.wait || fs.wait_any != ts.wait_any || fs.wait_output != ts.wait_output ||
	    fs.wait_timeout_ms != ts.wait_timeout_ms) {
		why = "the submit's members";
		goto out;
	}
	for (size_t i = 0; i < fs.n && !why; i++)
		if (fs.order[i] != ts.order[i])
			why = "the creation order";
		else
			why = fd_spec_diff(&fs.specs[i], &ts.specs[i]);
	if (!why)
		why = fd_reply_diff(fr.id, &fs);
out:
	jp_submit_clear(&fs);
	jp_submit_clear(&ts);
	json_decref(msg);
	jp_fast_free(f);
	free(f);
	return why;
}

#endif /* JSCHED_TESTS_FASTDIFF_H */
