/* daemon/net/op_jobs.c: the operations on jobs that answer at once: status, cancel,
 * list, output, drain.  Each finds the jobs it names through jd__find_owned (ops.h), so
 * ownership is checked in one place.
 */
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
	free(jobs);
	if (!ok) {
		json_decref(arr);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else if (single) {
		json_t *one = json_incref(json_array_get(arr, 0));

		json_decref(arr);
		jd_reply_ok(c, r->id, json_pack("{s:o}", "job", one));
	} else {
		jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
	}
}

void jd__op_status(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	struct jd_records recs;
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
		jd_conn_send_frame(c, &b);
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

static int cmp_job_id(const void *a, const void *b)
{
	uint64_t x = (*(struct jd_job *const *)a)->id, y = (*(struct jd_job *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* collect: every job in the table for which keep() says yes, sorted by id.  *out is
 * malloc'd.  O(table). */
static size_t collect(struct jd_net *d, bool (*keep)(const struct jd_job *, const void *),
		      const void *arg, struct jd_job ***out)
{
	struct jd_jobs *t = d->jobs;
	struct jd_job **v = malloc((t->count ? t->count : 1) * sizeof(*v)), *j;
	struct jd_jobs_iter it;
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (jd_jobs_iter_init(t, &it); (j = jd_jobs_iter_next(t, &it));)
		if (keep(j, arg))
			v[n++] = j;
	qsort(v, n, sizeof(*v), cmp_job_id);
	return n;
}

struct list_filter {
	unsigned states;
	const char *client;
	bool all;
	uid_t uid;
	uint64_t after;
};

static bool list_keep(const struct jd_job *j, const void *arg)
{
	const struct list_filter *f = arg;

	/* An array's elements are folded into its parent's record (list them with
	 * "array"). */
	return j->id > f->after && !j->array_id && (f->states & (1u << j->state)) &&
	       (f->all || j->uid == f->uid) && (!f->client || strcmp(j->client->name, f->client) == 0);
}

/* list_elements: the elements of the array `array` names that pass the filter's states,
 * after after_job, at most limit + 1 (so that `more` is known), made into jobs where they
 * are not (views, core/array.h).  Returns their number, or (size_t)-1 after replying an
 * error. */
static size_t list_elements(struct jd_conn *c, const struct jp_request *r,
			    const struct list_filter *f, size_t limit, struct jd_job ***out)
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
	pos = f->after > p->id ? f->after - p->id : 0;
	for (; pos < p->arr->n && n <= limit; pos++) {
		struct jd_job *j;

		if (!(f->states & (1u << jd_array_elem_state(c->d->jobs, p, pos))))
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
	struct list_filter f = {
		.states = jp_req_states(r),
		.client = jp_req_str(r, "client", NULL),
		.all = jp_req_bool(r, "all", false),
		.uid = c->uid,
		.after = (uint64_t)jp_req_int(r, "after_job", 0),
	};
	size_t limit = (size_t)jp_req_int(r, "limit", 1000);
	struct jd_job **v;
	struct jd_records recs = {0};
	struct jp_buf b;
	size_t n, written = 0;

	if (f.all && !jd_security_is_admin(c->d->sec, c->uid)) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "all",
			        "listing every user's jobs needs an admin uid");
		return;
	}
	/* The jp_state numbering is ours too (checked in daemon.c). */
	if (jp_req_int(r, "array", 0)) {
		n = list_elements(c, r, &f, limit, &v);
		if (n == (size_t)-1)
			return;
	} else {
		n = collect(c->d, list_keep, &f, &v);
	}
	recs.n = n < limit ? n : limit;
	recs.jobs = v;
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
	free(v);
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

struct drain_filter {
	const struct jd_client *client;
	bool all_uids;
	uid_t uid;
	bool running;
};

static bool drain_keep(const struct jd_job *j, const void *arg)
{
	const struct drain_filter *f = arg;

	return j->client == f->client && (f->all_uids || j->uid == f->uid) &&
	       (j->state <= JD_QUEUED || (f->running && j->state == JD_RUNNING));
}

void jd__op_drain(struct jd_conn *c, const struct jp_request *r)
{
	const char *name = jp_req_str(r, "client", c->client->name);
	struct drain_filter f = {.uid = c->uid, .running = jp_req_bool(r, "running", false)};
	struct jd_job **v;
	size_t n, cancelled = 0, cancelling = 0;

	f.client = jd_client_find(c->d->clients, name);
	if (!f.client) {
		jd__reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client", "no client '%s'", name);
		return;
	}
	/* An admin drains everyone's jobs charged to the client; others only their own, and
	 * only under a client name their uid may use (another user's client is refused,
	 * rather than answered "0 cancelled"). */
	f.all_uids = jd_security_is_admin(c->d->sec, c->uid);
	if (!f.all_uids && !jd_security_name_usable(c->d->sec, c->uid, name)) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "client",
			       "uid %u may not use the client name '%s': draining it needs an "
			       "admin uid", (unsigned)c->uid, name);
		return;
	}
	n = collect(c->d, drain_keep, &f, &v);
	for (size_t i = 0; i < n; i++) {
		if (jd_job_cancel(c->d->jobs, v[i], JP_CAUSE_CANCEL))
			cancelling++;
		else if (v[i]->state == JD_CANCELLED)
			cancelled++;
	}
	free(v);
	jd_reply_ok(c, r->id, json_pack("{s:I, s:I}", "cancelled", (json_int_t)cancelled,
					"cancelling", (json_int_t)cancelling));
}
