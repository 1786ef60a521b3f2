/* daemon/net/op_wait.c: the `wait` operation: answer when one or all of a list of jobs end.
 *
 * A pending wait is a struct jd_wait_req with one link per job it still waits for, threaded
 * on that job's `waiters` list, and on its connection's list.  When a job settles, each
 * link on it records the job's final record into its wait and goes away; the wait is
 * answered when its condition holds (every job final, or one for "any"), when its timer
 * fires (the `timeout` error, carrying the records as they stand), or dropped silently
 * with its connection.  Records are captured at the moment each job ends, so a job
 * forgotten by retention before the last one ends is still reported exactly.  They are
 * captured, and the reply written, as JSON text (record.h says why).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"
#include "daemon/net/ops.h"

struct jd_wait_link {
	struct jd_wait_req *w;
	struct jd_job *job;	/* NULL once it has ended (and the link is off its list) */
	struct jd_wait_link *next, *prev;
};

struct jd_wait_req {
	struct jd_conn *c;
	struct jd_wait_req *next, *prev;	/* the connection's waits */
	int64_t id;
	bool any, single;
	size_t n, pending;
	uv_timer_t timer;
	bool has_timer;
	struct jp_buf *records;	/* per job: its final record once it ended (JSON text) */
	struct jd_job **jobs;	/* per job, for the records of those still running */
	struct jd_wait_link links[];
};

static void unlink_link(struct jd_wait_link *l)
{
	if (!l->job)
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		l->job->waiters = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->job = NULL;
}

static void wait_free_cb(uv_handle_t *h)
{
	free(h->data);
}

/* wait_end: take w off every list and free it (the timer first closes). */
static void wait_end(struct jd_wait_req *w)
{
	for (size_t i = 0; i < w->n; i++) {
		unlink_link(&w->links[i]);
		jp_buf_free(&w->records[i]);
	}
	free(w->records);
	free(w->jobs);
	if (w->prev)
		w->prev->next = w->next;
	else
		w->c->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	if (w->has_timer) {
		uv_timer_stop(&w->timer);
		w->timer.data = w;
		uv_close((uv_handle_t *)&w->timer, wait_free_cb);
	} else {
		free(w);
	}
}

/* reply: send the answer (ok) or the timeout error, with the jobs' records: final ones
 * as captured, the others as they stand. */
static void reply(struct jd_net *d, struct jd_wait_req *w, bool timed_out)
{
	struct jd_records recs = {.n = w->n, .jobs = w->jobs, .texts = w->records};
	struct jp_buf b;
	int rc;

	jp_buf_init(&b);
	rc = jd_reply_text_start(&b, w->id) ||
	     jd_json_text_raw(&b, timed_out ? ",\"ok\":false,\"error\":{\"code\":\"timeout\","
					      "\"message\":\"the jobs did not end in time\",\"jobs\":"
			      : w->single ? ",\"ok\":true,\"job\":"
					  : ",\"ok\":true,\"jobs\":") ||
	     jd_records_text(&b, d, &recs, w->single && !timed_out) ||
	     jd_json_text_raw(&b, timed_out ? "}}" : "}");
	struct jd_conn *c = w->c;

	if (rc) {
		jp_buf_free(&b);
		jd_reply_error_obj(c, w->id, jp_error_new(JSCHED_ENOMEM, NULL, "out of memory"));
	} else {
		jd_conn_send_frame(c, &b);
	}
	wait_end(w);
	jd_conn_maybe_done(c); /* a half-closed connection ends with its last answer */
}

static void timeout_cb(uv_timer_t *t)
{
	struct jd_wait_req *w = t->data;

	reply(w->c->d, w, true);
}

void jd__op_wait(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_net *d = c->d;
	struct jd_job **jobs;
	size_t n, done = 0;
	bool single;
	int64_t timeout = jp_req_int(r, "timeout_ms", -1);
	bool any = strcmp(jp_req_str(r, "mode", "all"), "any") == 0;
	struct jd_wait_req *w;

	if (jd__find_all_owned(c, r, &jobs, &n, &single) < 0)
		return;
	w = calloc(1, sizeof(*w) + n * sizeof(w->links[0]));
	if (w) {
		w->records = calloc(n, sizeof(*w->records));
		w->jobs = jobs;
	}
	if (!w || !w->records) {
		if (w)
			free(w->records);
		free(w);
		free(jobs);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	w->c = c;
	w->id = r->id;
	w->any = any;
	w->single = single;
	w->n = n;
	w->next = c->waits;
	if (c->waits)
		c->waits->prev = w;
	c->waits = w;
	for (size_t i = 0; i < n; i++) {
		struct jd_wait_link *l = &w->links[i];

		l->w = w;
		/* A job that is final but not yet settled counts as ended: its record is
		 * complete. */
		if (jd_state_final(jobs[i]->state)) {
			jd_record_text(&w->records[i], d, jobs[i], jobs[i]->state);
			done++;
			continue;
		}
		l->job = jobs[i];
		l->next = jobs[i]->waiters;
		if (l->next)
			l->next->prev = l;
		jobs[i]->waiters = l;
		w->pending++;
	}
	if (done == n || (any && done > 0)) {
		reply(d, w, false);
		return;
	}
	if (timeout >= 0) {
		uv_timer_init(d->loop, &w->timer);
		w->timer.data = w;
		w->has_timer = true;
		uv_timer_start(&w->timer, timeout_cb, (uint64_t)timeout, 0);
	}
}

void jd_session_job_final(struct jd_net *d, struct jd_job *j)
{
	/* Detach the whole list first: answering a wait unlinks its other links, which
	 * may sit on this same list (a wait naming the job twice). */
	while (j->waiters) {
		struct jd_wait_link *l = j->waiters;
		struct jd_wait_req *w = l->w;

		unlink_link(l);
		jd_record_text(&w->records[l - w->links], d, j, j->state);
		w->pending--;
		if (w->pending == 0 || w->any)
			reply(d, w, false);
	}
}

void jd__waits_drop(struct jd_conn *c)
{
	while (c->waits)
		wait_end(c->waits);
}
