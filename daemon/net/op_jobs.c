/* daemon/net/op_jobs.c: the operations on jobs that answer at once: status, cancel,
 * list, output, drain.  Each finds the jobs it names through jd__find_owned (ops.h), so
 * ownership is checked in one place.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/array.h"
#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"

/* status_detail: the status reply with "detail": each record with what its spec said
 * (jd_record_detail).  Frees jobs. */
static void status_detail(struct jd_conn *c, const struct jp_request *r, struct jd_job **jobs,
			  size_t n, bool single)
{
	json_t *arr = json_array();
	bool ok = arr != NULL;

	for (size_t i = 0; i < n && ok; i++) {
		json_t *rec = jd_record_detail(c->d, jobs[i]);

		ok = rec && json_array_append_new(arr, rec) == 0;
	}
	if (!ok) {
		json_decref(arr);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else if (single) {
		json_t *one = json_incref(json_array_get(arr, 0));

		json_decref(arr);
		jd__about_jobs(c, jobs, n);
		jd_reply_ok(c, r->id, json_pack("{s:o}", "job", one));
		jd__about_end(c);
	} else {
		jd__about_jobs(c, jobs, n);
		jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
		jd__about_end(c);
	}
	free(jobs);
}

void jd__op_status(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	struct jd_records recs = {0};
	struct jp_buf b;
	size_t written = 0;
	bool single;

	if (jd__find_all_owned(c, r, &jobs, &recs.n, &single) < 0)
		return;
	if (jp_req_bool(r, "detail", false)) {
		status_detail(c, r, jobs, recs.n, single);
		return;
	}
	recs.jobs = jobs;
	recs.texts = NULL;
	jp_buf_init(&b);
	/* Records past the reply budget are left for the next request: `more` (the client
	 * asks again for the ids after the last record). */
	if (jd_reply_text_start(&b, r->id) ||
	    jd_json_text_raw(&b, single ? ",\"ok\":true,\"job\":" : ",\"ok\":true,\"jobs\":") ||
	    jd_records_text_paged(&b, c->d, &recs, single, JD_REPLY_BUDGET, &written) ||
	    (written < recs.n && jd_json_text_raw(&b, ",\"more\":true")) ||
	    jd_json_text_raw(&b, "}")) {
		jp_buf_free(&b);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else {
		jd__about_jobs(c, jobs, recs.n);
		jd_conn_send_frame(c, &b);
		jd__about_end(c);
	}
	free(jobs);
}

void jd__op_cancel(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	size_t n;
	bool single;
	json_t *arr;

	if (jd__find_all_owned(c, r, &jobs, &n, &single) < 0)
		return;
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		bool running = jd_job_cancel(c->d->jobs, jobs[i], JP_CAUSE_CANCEL);
		json_t *o = json_pack("{s:I, s:s}", "job", (json_int_t)jobs[i]->id, "state",
				      jd_state_name(jobs[i]->state));

		if (running)
			json_object_set_new(o, "cancelling", json_true());
		json_array_append_new(arr, o);
	}
	free(jobs);
	jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
}

/* The jobs a walk of the table's indexes found (jd_jobs_walk), in id order, at most max. */
struct found {
	struct jd_job **v;
	size_t n, cap, max;
	bool oom;
};

static bool found_keep(struct jd_job *j, void *arg)
{
	struct found *f = arg;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct jd_job **v = realloc(f->v, cap * sizeof(*v));

		if (!v) {
			f->oom = true;
			return false;
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = j;
	return f->n < f->max;
}

/* list_elements: the elements of the array `array` names that pass the filter's states,
 * after after_job, at most limit + 1 (so that `more` is known), made into jobs where they
 * are not (views, core/array.h).  Returns their number, or (size_t)-1 after replying an
 * error. */
static size_t list_elements(struct jd_conn *c, const struct jp_request *r, uint64_t after,
			    unsigned states, size_t limit, struct jd_job ***out)
{
	struct jd_job *p = jd__find_owned(c, r->id, jp_req_int(r, "array", 0), "array");
	struct jd_job **v;
	uint64_t pos;
	size_t n = 0;

	*out = NULL;
	if (!p)
		return (size_t)-1;
	if (!p->arr) {
		jd__reply_error(c, r->id, JSCHED_EBAD_REQUEST, "array", "job %llu is not an array",
				(unsigned long long)p->id);
		return (size_t)-1;
	}
	if (!(v = malloc((limit + 1) * sizeof(*v)))) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return (size_t)-1;
	}
	pos = after > p->id ? after - p->id : 0;
	for (; pos < p->arr->n && n <= limit; pos++) {
		struct jd_job *j;

		if (!(states & (1u << jd_array_elem_state(c->d->jobs, p, pos))))
			continue;
		if (!(j = jd_job_get(c->d->jobs, p->id + 1 + pos, NULL)))
			break; /* out of memory: the page ends here */
		v[n++] = j;
	}
	*out = v;
	return n;
}

void jd__op_list(struct jd_conn *c, const struct jp_request *r)
{
	const char *client = jp_req_str(r, "client", NULL);
	bool all = jp_req_bool(r, "all", false);
	size_t limit = (size_t)jp_req_int(r, "limit", 1000);
	uint64_t after = (uint64_t)jp_req_int(r, "after_job", 0);
	unsigned states = jp_req_states(r);
	/* One more than a page holds tells whether there is more. */
	struct found f = {.max = limit + 1};
	const struct jd_client *cl = NULL;
	struct jd_records recs = {0};
	struct jp_buf b;
	size_t n, written = 0;

	if (all && !jd_security_is_admin(c->d->sec, c->uid)) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "all",
			        "listing every user's jobs needs an admin uid");
		return;
	}
	/* Through the indexes: a page costs what it returns, not the table's size (an
	 * array's elements are not in them: they are folded into its parent's record, and
	 * listed with "array").  The jp_state numbering is ours too (checked in daemon.c). */
	if (jp_req_int(r, "array", 0)) {
		n = list_elements(c, r, after, states, limit, &f.v);
		if (n == (size_t)-1)
			return;
	} else {
		if (!client || (cl = jd_client_find(c->d->clients, client)))
			jd_jobs_walk(c->d->jobs, cl, all, c->uid, after, states, found_keep, &f);
		if (f.oom) {
			free(f.v);
			jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
			return;
		}
		n = f.n;
	}
	recs.n = n < limit ? n : limit;
	recs.jobs = f.v;
	jp_buf_init(&b);
	/* A page ends at `limit` records or at the reply budget, whichever comes first;
	 * `more` sends the client on from the last id (after_job). */
	if (jd_reply_text_start(&b, r->id) || jd_json_text_raw(&b, ",\"ok\":true,\"jobs\":") ||
	    jd_records_text_paged(&b, c->d, &recs, false, JD_REPLY_BUDGET, &written) ||
	    jd_json_text_raw(&b, n > written ? ",\"more\":true}" : ",\"more\":false}")) {
		jp_buf_free(&b);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else {
		jd_conn_send_frame(c, &b);
	}
	free(f.v);
}

void jd__op_output(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job *j = jd__find_owned(c, r->id, jp_req_int(r, "job", 0), "job");

	if (!j)
		return;
	if (j->arr) {
		jd__reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, "job",
				"job %llu is an array: each of its elements has its own output "
				"(ids %llu to %llu)", (unsigned long long)j->id,
				(unsigned long long)j->id + 1, (unsigned long long)(j->id + j->arr->n));
		return;
	}
	if (j->exec && (jp_req_bool(r, "follow", false) || jp_req_bool(r, "events", false))) {
		jd__op_follow(c, r, j);
		return;
	}
	if (j->exec) {
		json_t *body = jd_exec_output(j, c->d->jobs->outfiles);

		if (body)
			jd_reply_ok(c, r->id, body);
		else
			jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	jd__reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, "job",
		        "job %llu is a call job: it has no output (its result is in its record)",
		        (unsigned long long)j->id);
}

void jd__op_drain(struct jd_conn *c, const struct jp_request *r)
{
	const char *name = jp_req_str(r, "client", c->client->name);
	bool running = jp_req_bool(r, "running", false), all_uids;
	const struct jd_client *cl = jd_client_find(c->d->clients, name);
	struct found f = {.max = SIZE_MAX};
	size_t cancelled = 0, cancelling = 0;

	if (!cl) {
		jd__reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client", "no client '%s'", name);
		return;
	}
	/* An admin drains everyone's jobs charged to the client; others only their own, and
	 * only under a client name their uid may use (another user's client is refused,
	 * rather than answered "0 cancelled"). */
	all_uids = jd_security_is_admin(c->d->sec, c->uid);
	if (!all_uids && !jd_security_name_usable(c->d->sec, c->uid, name)) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "client",
			       "uid %u may not use the client name '%s': draining it needs an "
			       "admin uid", (unsigned)c->uid, name);
		return;
	}
	/* Collected first: cancelling changes states under the walk. */
	jd_jobs_walk(c->d->jobs, cl, all_uids, c->uid, 0,
		     (1u << JD_WAITING) | (1u << JD_SCHEDULED) | (1u << JD_QUEUED) |
			     (running ? 1u << JD_RUNNING : 0),
		     found_keep, &f);
	if (f.oom) {
		free(f.v);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	for (size_t i = 0; i < f.n; i++) {
		if (jd_job_cancel(c->d->jobs, f.v[i], JP_CAUSE_CANCEL))
			cancelling++;
		else if (f.v[i]->state == JD_CANCELLED)
			cancelled++;
	}
	free(f.v);
	jd_reply_ok(c, r->id, json_pack("{s:I, s:I}", "cancelled", (json_int_t)cancelled,
					"cancelling", (json_int_t)cancelling));
}
