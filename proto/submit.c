/* proto/submit.c: a whole submit (PROTOCOL.md section 6.2): one spec, a batch, or a graph
 * whose specs name each other by ref.
 *
 * Everything that can be judged from the message alone is judged here, so that the daemon
 * admits a message whole or not at all without undoing anything: each spec strictly, refs
 * unique (sorted once, then binary search: O(n log n) for the 10,000 specs a message may
 * hold, where comparing every pair would cost 50 million strcmp), every ref resolved to the
 * index of its spec, and the ref graph acyclic (Kahn's algorithm, which also yields the
 * order in which to create the jobs).  Dependencies on existing job ids are the daemon's to
 * check: only it knows its jobs.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct refent {
	const char *ref;
	size_t index;
};

static int refcmp(const void *a, const void *b)
{
	return strcmp(((const struct refent *)a)->ref, ((const struct refent *)b)->ref);
}

void jp_submit_clear(struct jp_submit *s)
{
	for (size_t i = 0; s->specs && i < s->n; i++)
		jp_job_spec_clear(&s->specs[i]);
	if (!s->borrowed) {
		free(s->specs);
		free(s->order);
	}
	*s = (struct jp_submit){0};
}

/* spec_path: how errors name spec i. */
static void spec_path(const struct jp_submit *s, size_t i, char *buf, size_t size)
{
	if (s->single)
		snprintf(buf, size, "job");
	else
		snprintf(buf, size, "jobs[%zu]", i);
}

/* dep_at: the j-th dependency of spec sp, counting through after, then any_of. */
static struct jp_dep *dep_at(const struct jp_job_spec *sp, size_t j)
{
	return j < sp->n_after ? &sp->after[j] : &sp->any_of[j - sp->n_after];
}

/* resolve: give every ref dependency the index of the spec it names; *edges counts them. */
static int resolve(struct jp_submit *s, struct refent *refs, size_t nrefs, size_t *edges,
		   struct jp_err *err)
{
	char path[64];

	*edges = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct jp_job_spec *sp = &s->specs[i];

		for (size_t j = 0; j < sp->n_after + sp->n_any_of; j++) {
			bool in_after = j < sp->n_after;
			struct jp_dep *d = dep_at(sp, j);
			struct refent key = {.ref = d->ref}, *hit;

			if (!d->ref)
				continue;
			hit = nrefs ? bsearch(&key, refs, nrefs, sizeof(*refs), refcmp) : NULL;
			if (!hit) {
				char f[128];

				spec_path(s, i, path, sizeof(path));
				snprintf(f, sizeof(f), "%s.%s[%zu]", path, in_after ? "after" : "any_of",
					 in_after ? j : j - sp->n_after);
				return jp_err_set(err, JSCHED_EUNKNOWN_DEPENDENCY, f,
						  "%s names ref \"%.*s\", which no spec of this "
						  "submit has", f, jp_utf8_cut(d->ref, 64), d->ref);
			}
			d->index = hit->index;
			++*edges;
		}
	}
	return 0;
}

/* sort: fill s->order with a topological order of the ref graph (edges ref dependencies,
 * at least one), or report a cycle with the path of one spec on it. */
static int sort(struct jp_submit *s, size_t edges, struct jp_err *err)
{
	size_t n = s->n, head = 0, tail = 0;
	size_t *indeg = calloc(n, sizeof(size_t)), *start = calloc(n + 1, sizeof(size_t));
	size_t *fill = calloc(n, sizeof(size_t)), *next = malloc(edges * sizeof(size_t));
	char path[64];
	int rc = 0;

	if (!indeg || !start || !fill || !next) {
		rc = jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* The edges dependency -> dependent in compressed rows: next[start[v] ..
	 * start[v + 1]) are the specs that name spec v. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s->specs[i].n_after + s->specs[i].n_any_of; j++) {
			const struct jp_dep *d = dep_at(&s->specs[i], j);

			if (d->ref) {
				start[d->index + 1]++;
				indeg[i]++;
			}
		}
	for (size_t i = 0; i < n; i++)
		start[i + 1] += start[i];
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s->specs[i].n_after + s->specs[i].n_any_of; j++) {
			const struct jp_dep *d = dep_at(&s->specs[i], j);

			if (d->ref)
				next[start[d->index] + fill[d->index]++] = i;
		}
	/* Kahn: take the specs no one is waiting on, releasing those that wait on them. */
	for (size_t i = 0; i < n; i++)
		if (indeg[i] == 0)
			s->order[tail++] = i;
	while (head < tail) {
		size_t v = s->order[head++];

		for (size_t e = start[v]; e < start[v + 1]; e++)
			if (--indeg[next[e]] == 0)
				s->order[tail++] = next[e];
	}
	if (tail < n) {
		/* Every spec left waits on a spec also left: walking n steps along such
		 * dependencies from any of them ends on a cycle. */
		size_t v = 0;

		while (indeg[v] == 0)
			v++;
		for (size_t step = 0; step < n; step++) {
			const struct jp_job_spec *sp = &s->specs[v];

			for (size_t j = 0; j < sp->n_after + sp->n_any_of; j++) {
				const struct jp_dep *d = dep_at(sp, j);

				if (d->ref && indeg[d->index] > 0) {
					v = d->index;
					break;
				}
			}
		}
		spec_path(s, v, path, sizeof(path));
		rc = jp_err_set(err, JSCHED_EDEPENDENCY_CYCLE, path,
				"the refs form a cycle through %s (ref \"%.*s\")", path,
				s->specs[v].ref ? jp_utf8_cut(s->specs[v].ref, 64) : 0,
				s->specs[v].ref ? s->specs[v].ref : "");
	}
out:
	free(indeg);
	free(start);
	free(fill);
	free(next);
	return rc;
}

/* parse_wait: the request's `wait` (checked by jp_request_parse) into s.  The output
 * comes with one job only: a batch's outputs could pass any reply's size.  Returns 0 or
 * JSCHED_EBAD_REQUEST (err filled). */
static int parse_wait(const json_t *w, struct jp_submit *s, struct jp_err *err)
{
	const json_t *t = json_object_get(w, "timeout_ms");

	s->wait = json_is_true(w) || json_is_object(w);
	s->wait_any = json_is_string(json_object_get(w, "mode")) &&
		      strcmp(json_string_value(json_object_get(w, "mode")), "any") == 0;
	s->wait_output = json_is_true(json_object_get(w, "output"));
	s->wait_timeout_ms = json_is_integer(t) ? (int64_t)json_integer_value(t) : -1;
	if (s->wait_output && !s->single)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "wait.output",
				  "wait.output goes with job (one spec), not with jobs: use "
				  "output for each job of a batch");
	return 0;
}

int jp__submit_finish(struct jp_submit *out, struct jp_err *err)
{
	struct refent *refs = NULL;
	size_t nrefs = 0, edges;
	char path[64];
	int rc;

	for (size_t i = 0; i < out->n; i++) {
		if (!out->specs[i].ref)
			continue;
		if (!refs && !(refs = calloc(out->n, sizeof(*refs))))	/* at the first ref */
			return jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
		refs[nrefs++] = (struct refent){.ref = out->specs[i].ref, .index = i};
	}
	out->has_refs = nrefs > 0;
	if (nrefs > 1)
		qsort(refs, nrefs, sizeof(*refs), refcmp);
	for (size_t i = 1; i < nrefs; i++)
		if (strcmp(refs[i - 1].ref, refs[i].ref) == 0) {
			size_t a = refs[i - 1].index > refs[i].index ? refs[i - 1].index : refs[i].index;
			char f[80];

			spec_path(out, a, path, sizeof(path));
			snprintf(f, sizeof(f), "%s.ref", path);
			rc = jp_err_set(err, JSCHED_EBAD_REQUEST, f,
					"ref \"%.*s\" is used by two specs",
					jp_utf8_cut(refs[i].ref, 64), refs[i].ref);
			goto out;
		}
	rc = resolve(out, refs, nrefs, &edges, err);
	if (rc < 0)
		goto out;
	if (edges == 0) {	/* no spec waits for another: any order will do */
		for (size_t i = 0; i < out->n; i++)
			out->order[i] = i;
	} else {
		rc = sort(out, edges, err);
	}
out:
	free(refs);
	return rc;
}

int jp_submit_parse(const struct jp_request *r, const struct jp_limits *lim,
		    struct jp_submit *out, struct jp_err *err)
{
	const json_t *one, *many;
	int rc;

	*out = (struct jp_submit){0};
	if (r->fast && r->op == JP_OP_SUBMIT && r->fast->submit.n) {
		/* read, checked and ordered already (fastreq.c): taken over whole */
		*out = r->fast->submit;
		r->fast->submit = (struct jp_submit){0};
		return 0;
	}
	one = r->fast ? NULL : json_object_get(r->msg, "job");
	many = r->fast ? NULL : json_object_get(r->msg, "jobs");
	if (r->op != JP_OP_SUBMIT || (!json_is_object(one) && !json_is_array(many)))
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "job", "not a submit request");
	out->single = one != NULL;
	out->n = one ? 1 : json_array_size(many);
	if ((rc = parse_wait(json_object_get(r->msg, "wait"), out, err)) < 0)
		return rc;
	if (out->n == 0)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "jobs", "jobs must not be empty");
	out->specs = calloc(out->n, sizeof(*out->specs));
	out->order = calloc(out->n, sizeof(*out->order));
	if (!out->specs || !out->order) {
		rc = jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < out->n; i++)
		jp_job_spec_init(&out->specs[i]);
	for (size_t i = 0; i < out->n; i++) {
		rc = jp_job_spec_parse_at(one ? one : json_array_get(many, i), one ? "job" : "jobs",
					  one ? -1 : (long)i, lim, &out->specs[i], err);
		if (rc < 0)
			goto fail;
	}
	if ((rc = jp__submit_finish(out, err)) < 0)
		goto fail;
	return 0;
fail:
	jp_submit_clear(out);
	return rc;
}

/* put: append the string s. */
static int put(struct jp_buf *b, const char *s)
{
	return jp_buf_append(b, s, strlen(s));
}

int jp_submit_reply_text(struct jp_buf *b, const struct jp_submit *s, const int64_t *ids,
			 const bool *existing)
{
	bool any = false;
	int rc;

	if (s->has_refs)
		return JSCHED_EINVAL;
	if (s->single)
		return put(b, ",\"ok\":true,\"job\":") || jp_buf_append_int(b, ids[0]) ||
			       (existing && existing[0] && put(b, ",\"existing\":true"))
			       ? JSCHED_ENOMEM
			       : 0;
	if ((rc = put(b, ",\"ok\":true")) < 0)
		return rc;
	/* the members in jp_submit_reply_new's order: existing (when any), then jobs */
	for (size_t i = 0; existing && i < s->n; i++) {
		if (!existing[i])
			continue;
		if (put(b, any ? "," : ",\"existing\":[") ||
		    jp_buf_append_int(b, (int64_t)i))
			return JSCHED_ENOMEM;
		any = true;
	}
	if ((any && put(b, "]")) || put(b, ",\"jobs\":["))
		return JSCHED_ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		if ((i && put(b, ",")) || jp_buf_append_int(b, ids[i]))
			return JSCHED_ENOMEM;
	return put(b, "]");
}

json_t *jp_submit_reply_new(int64_t id, const struct jp_submit *s, const int64_t *ids,
			    const bool *existing)
{
	json_t *o = jp_reply_new(id), *a, *refs, *ex = NULL;

	if (!o)
		return NULL;
	if (s->single) {
		if (json_object_set_new(o, "job", json_integer(ids[0])) < 0 ||
		    (existing && existing[0] && json_object_set_new(o, "existing", json_true()) < 0))
			goto fail;
		return o;
	}
	for (size_t i = 0; existing && i < s->n; i++) {
		if (!existing[i])
			continue;
		if (!ex && (!(ex = json_array()) || json_object_set_new(o, "existing", ex) < 0))
			goto fail;
		if (json_array_append_new(ex, json_integer((json_int_t)i)) < 0)
			goto fail;
	}
	a = json_array();
	if (!a || json_object_set_new(o, "jobs", a) < 0)
		goto fail;
	for (size_t i = 0; i < s->n; i++)
		if (json_array_append_new(a, json_integer(ids[i])) < 0)
			goto fail;
	if (!s->has_refs)
		return o;
	refs = json_object();
	if (!refs || json_object_set_new(o, "refs", refs) < 0)
		goto fail;
	for (size_t i = 0; i < s->n; i++)
		if (s->specs[i].ref &&
		    json_object_set_new(refs, s->specs[i].ref, json_integer(ids[i])) < 0)
			goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}
