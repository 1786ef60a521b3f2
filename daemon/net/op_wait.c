/* daemon/net/op_wait.c: the `wait` operation: answer when one or all of a list of jobs end.
 *
 * A pending wait is a struct jd_wait_req with one link per job it names, threaded on that
 * job's `waiters` list until the job ends, and on its connection's list.  When a job
 * settles, each link on it leaves the list; the wait is answered when its condition holds
 * (every job final, or one for "any"), when its timer fires (the `timeout` error, carrying
 * the records as they stand), or dropped silently with its connection.  A wait pins every
 * job it names (jd_job_pin), so none is forgotten by retention before it answers, and the
 * records are written from the jobs when it answers, as JSON text (record.h says why).
 * So a pending wait costs its links and nothing per job beyond them, whatever the jobs'
 * records hold (the alternative, capturing each record as its job ends, cost a copy of
 * every result: 117 MiB for 300 waits).  Pending waits are capped per connection
 * (limits.waits_per_connection) and their ids per uid (limits.wait_ids_per_uid).
 *
 * Answers in slices: an answer of more than WAIT_SLICE records, every job final (they no
 * longer change), is written WAIT_SLICE records per loop iteration into one frame, sent
 * whole when the last is written; meanwhile its connection is not read (so the replies to
 * its later requests keep their order behind it), and every other connection is served
 * between the slices (server.c's more_cb hands the connection its next slice, as it hands
 * a connection whose read budget ran out its next frames).  A 1,000-record answer held
 * the loop for ~0.5 ms (1.9M instructions) in one go, and a light client's request that
 * arrived then waited for all of it.  An answer with records not yet final (a timeout, a
 * wait of any) is written at once: its records say how the jobs stand at one moment.
 * One connection has at most one answer in slices; another of its answers due meanwhile
 * is written at once (answers to different waits have no order between them).
 *
 * A submit with `wait` (op_submit.c) is the same pending wait on the jobs it made: its
 * request is allocated before the jobs are made (so the submit stays whole or nothing),
 * begun before any of them can end, and its answer is the submit's reply members (the
 * `head`, written once by jp_submit_reply_new) followed by `record` or `records`, and
 * for one command its output.  A timeout there is not an error: the jobs exist, so the
 * reply is ok with `"timed_out": true` and the records as they stand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"
#include "daemon/net/ops.h"
#include "daemon/core/exec_job.h"

/* WAIT_SLICE: the records of an answer written per loop iteration, about 60 us of the
 * loop's time for call jobs' records (~1,900 instructions each). */
#define WAIT_SLICE 128u

struct jd_wait_link {
	struct jd_wait_req *w;
	bool on_list;		/* on its job's waiters list (the job has not ended) */
	struct jd_wait_link *next, *prev;
};

struct jd_wait_req {
	struct jd_conn *c;
	struct jd_wait_req *next, *prev;	/* the connection's waits */
	int64_t id;
	bool any, single;
	bool brief;		/* `fields` "brief": its records are job and state only */
	bool output;		/* a submit's wait.output: the one job's output too */
	char *head;		/* a submit's reply members (NULL: a wait's reply, or head_job) */
	int64_t head_job;	/* a submit of one job whose members are `,"ok":true,"job":` it */
	size_t n, pending;
	size_t scan;		/* a wait of all: links[scan..n) have ended; links[scan - 1]
				 * is the one whose end wakes the loop (want_next) */
	uv_timer_t timer;
	bool has_timer;
	/* A timeout not yet armed (wait_arm): begun at begun_ms (uv_now), on the server's
	 * list of waits to arm (to_arm) until the loop's prepare phase arms it. */
	bool to_arm;
	uint64_t begun_ms, timeout_ms;
	struct jd_wait_req *arm_next, *arm_prev;
	struct jd_job **jobs;	/* per id: the job, pinned until the wait ends */
	struct jd_job *one;	/* jobs' room for a wait of one job (jd__wait_jobs_new) */
	struct jp_buf sb;	/* an answer in slices: the frame so far */
	size_t sliced;		/* its records written so far */
	struct jd_wait_link links[];
};

/* is_submit: is w a submit's wait (answered with the submit's members), not a `wait`'s? */
static inline bool is_submit(const struct jd_wait_req *w)
{
	return w->head || w->head_job;
}

static void unlink_link(struct jd_wait_link *l)
{
	struct jd_job *j = l->w->jobs[l - l->w->links];

	if (!l->on_list)
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		j->waiters = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->on_list = false;
}

/* want_next: a wait of all: ask the runner to wake the loop at the end of one job not yet
 * ended, the last such one named (the one likely to end last: a batch runs in order), so
 * that a wait of 1,000 jobs costs the loop one or two wake-ups, not 1,000; when that job
 * ends with others still pending, the next one (jd_session_job_final).  A wait of any:
 * every job's end.  Jobs that end on the loop thread (inline calls, plain commands, a
 * cancel) settle without a wake-up; only a worker's end needs one. */
static void want_next(struct jd_net *d, struct jd_wait_req *w)
{
	if (!d->runner)
		return;
	if (w->any) {
		for (size_t i = 0; i < w->n; i++)
			if (w->links[i].on_list)
				jd_runner_want_end(d->runner, w->jobs[i]);
		return;
	}
	while (w->scan > 0 && (!w->links[w->scan - 1].on_list ||
			       jd_state_final(w->jobs[w->scan - 1]->state)))
		w->scan--;
	if (w->scan > 0)
		jd_runner_want_end(d->runner, w->jobs[w->scan - 1]);
}

static void wait_free_cb(uv_handle_t *h)
{
	free(h->data);
}

/* Spare waits: a wait of one job without a timer (every submit of one spec with wait, a
 * `wait` for one id), once ended, is kept on the server's list, up to WAIT_SPARE, for the
 * next such wait to take instead of a calloc; its free and that calloc were about 300
 * instructions of a noop submit with wait (callgrind).  jd_session_waits_free frees them. */
#define WAIT_SPARE 64u
#define WAIT1_BYTES (sizeof(struct jd_wait_req) + sizeof(struct jd_wait_link))

/* wait_release: free w (never begun, or ended), or keep it as a spare. */
static void wait_release(struct jd_server *s, struct jd_wait_req *w)
{
	if (w->n == 1 && !w->has_timer && s->n_spare_waits < WAIT_SPARE) {
		w->next = s->spare_waits;
		s->spare_waits = w;
		s->n_spare_waits++;
		return;
	}
	free(w);
}

void jd_session_waits_free(struct jd_net *d)
{
	while (d->srv.spare_waits) {
		struct jd_wait_req *w = d->srv.spare_waits;

		d->srv.spare_waits = w->next;
		free(w);
	}
	d->srv.n_spare_waits = 0;
}

/* disarm: w's timeout, not yet armed, is not to be (w answered). */
static void disarm(struct jd_wait_req *w)
{
	struct jd_server *s = &w->c->d->srv;

	if (!w->to_arm)
		return;
	if (w->arm_prev)
		w->arm_prev->arm_next = w->arm_next;
	else
		s->to_arm = w->arm_next;
	if (w->arm_next)
		w->arm_next->arm_prev = w->arm_prev;
	w->to_arm = false;
}


/* wait_end: take w off every list, unpin its jobs and free it (the timer first closes). */
static void wait_end(struct jd_wait_req *w)
{
	struct jd_net *d = w->c->d;
	struct jd_uid_count *u = jd__uid_count(d, w->c->uid);

	for (size_t i = 0; i < w->n; i++) {
		unlink_link(&w->links[i]);
		jd_job_unpin(d->jobs, w->jobs[i]);
	}
	if (u)
		u->wait_ids -= w->n;
	if (w->c->answering == w) {	/* its connection closed while it was being written */
		w->c->answering = NULL;
		d->srv.answering--;
	}
	jp_buf_free(&w->sb);
	w->c->n_waits--;
	if (w->jobs != &w->one)
		free(w->jobs);
	free(w->head);
	if (w->prev)
		w->prev->next = w->next;
	else
		w->c->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	disarm(w);
	if (w->has_timer) {
		uv_timer_stop(&w->timer);
		w->timer.data = w;
		uv_close((uv_handle_t *)&w->timer, wait_free_cb);
	} else {
		wait_release(&d->srv, w);
	}
}

/* output_text: the `output` member of a submit's answer for its one job: the `output`
 * operation's reply body (exec, not an array's parent), as JSON text in *out (malloc'd;
 * NULL: the job has none).  Returns 0 or JSCHED_ENOMEM. */
static int output_text(struct jd_net *d, const struct jd_wait_req *w, char **out)
{
	struct jd_job *j = w->jobs[0];
	json_t *o;

	*out = NULL;
	if (!w->output || !j->exec || j->arr)
		return 0;
	o = jd_exec_output(j, d->jobs->outfiles);
	*out = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return *out ? 0 : JSCHED_ENOMEM;
}

/* reply_budget: where w's records stop for `more` (the reply's other members' room). */
static size_t reply_budget(const struct jd_wait_req *w)
{
	size_t head = w->head ? strlen(w->head) : 32;

	if (!is_submit(w))
		return JD_REPLY_BUDGET;
	return head < JD_REPLY_BUDGET / 2 ? JD_REPLY_BUDGET - head : JD_REPLY_BUDGET / 2;
}

/* reply_prefix: w's answer into b up to its records: a wait's (ok, or the timeout error),
 * or a submit's (its reply members, `timed_out`).  Returns 0 or JSCHED_ENOMEM. */
static int reply_prefix(struct jp_buf *b, const struct jd_wait_req *w, bool timed_out)
{
	if (!is_submit(w))
		return jd_reply_text_start(b, w->id) ||
		       jd_json_text_raw(b, timed_out ? ",\"ok\":false,\"error\":{\"code\":\"timeout\","
						       "\"message\":\"the jobs did not end in time\",\"jobs\":"
				       : w->single ? ",\"ok\":true,\"job\":"
						   : ",\"ok\":true,\"jobs\":")
		       ? JSCHED_ENOMEM : 0;
	return jd_reply_text_start(b, w->id) ||
	       (w->head ? jd_json_text_raw(b, w->head)
			: jd_json_text_raw(b, ",\"ok\":true,\"job\":") ||
				  jp_buf_append_int(b, w->head_job)) ||
	       (timed_out && jd_json_text_raw(b, ",\"timed_out\":true")) ||
	       jd_json_text_raw(b, w->single ? ",\"record\":" : ",\"records\":")
	       ? JSCHED_ENOMEM : 0;
}

/* reply_suffix: the rest of w's answer after `written` records: `more` if some were left
 * for `status`, a submit's output, the closing braces.  Returns 0 or JSCHED_ENOMEM. */
static int reply_suffix(struct jp_buf *b, struct jd_net *d, const struct jd_wait_req *w,
			bool timed_out, size_t written)
{
	char *out = NULL;
	int rc;

	if (!is_submit(w))
		return (written < w->n && jd_json_text_raw(b, ",\"more\":true")) ||
		       jd_json_text_raw(b, timed_out ? "}}" : "}")
		       ? JSCHED_ENOMEM : 0;
	rc = output_text(d, w, &out) ||
	     (written < w->n && jd_json_text_raw(b, ",\"more\":true")) ||
	     (out && (jd_json_text_raw(b, ",\"output\":") || jd_json_text_raw(b, out))) ||
	     jd_json_text_raw(b, "}");
	free(out);
	return rc ? JSCHED_ENOMEM : 0;
}

/* reply_text: w's whole answer into b.  Records past the reply budget are left for
 * `status` (`more`: the client asks for the ids after the last record), so no reply
 * passes reply_frame_bytes.  Returns 0 or JSCHED_ENOMEM. */
static int reply_text(struct jp_buf *b, struct jd_net *d, struct jd_wait_req *w, bool timed_out)
{
	struct jd_records recs = {.n = w->n, .jobs = w->jobs, .texts = NULL, .brief = w->brief};
	size_t written = 0;

	return reply_prefix(b, w, timed_out) ||
	       /* A wait's timeout error lists `jobs`; a submit's answer has its `record`. */
	       jd_records_text_paged(b, d, &recs, w->single && (is_submit(w) || !timed_out),
				     reply_budget(w), &written) ||
	       reply_suffix(b, d, w, timed_out, written)
	       ? JSCHED_ENOMEM : 0;
}

/* send_reply: send the answer in b (its frame written whole), or the out-of-memory error
 * when `failed`; then end w. */
static void send_reply(struct jd_net *d, struct jd_wait_req *w, struct jp_buf *b, bool failed)
{
	struct jd_conn *c = w->c;

	(void)d;
	if (failed) {
		jp_buf_free(b);
		jd_reply_error_obj(c, w->id, jp_error_new(JSCHED_ENOMEM, NULL, "out of memory"));
	} else {
		/* A wait's answer tells of its jobs only (a submit's also of the submit) */
		if (!is_submit(w))
			jd__about_jobs(c, w->jobs, w->n);
		jd_conn_send_frame(c, b);
		jd__about_end(c);
	}
	wait_end(w);
	jd_conn_maybe_done(c); /* a half-closed connection ends with its last answer */
}

/* slice_step: write the next WAIT_SLICE records of w's answer in slices; when the last is
 * written (or the reply budget is full), finish the answer and send it.  Returns whether
 * the answer is still in progress. */
static bool slice_step(struct jd_net *d, struct jd_wait_req *w)
{
	struct jd_records recs = {.n = w->n, .jobs = w->jobs, .texts = NULL, .brief = w->brief};
	size_t to = w->n - w->sliced < WAIT_SLICE ? w->n : w->sliced + WAIT_SLICE;
	bool full = false;
	int rc;

	d->srv.reply_slices++;
	rc = jd_records_text_range(&w->sb, d, &recs, to, reply_budget(w), &w->sliced, &full);
	if (!rc && w->sliced < w->n && !full)
		return true;
	if (!rc)
		rc = jd_json_text_raw(&w->sb, "]") || reply_suffix(&w->sb, d, w, false, w->sliced);
	w->c->answering = NULL;
	d->srv.answering--;
	send_reply(d, w, &w->sb, rc != 0);
	return false;
}

bool jd_session_answer_more(struct jd_conn *c)
{
	return c->answering && slice_step(c->d, c->answering);
}

/* reply: send w's answer (final records as they ended: a final record does not change),
 * then end w.  An answer of more than WAIT_SLICE records, all final, is written in
 * slices, one per loop iteration ("Answers in slices" above). */
static void reply(struct jd_net *d, struct jd_wait_req *w, bool timed_out)
{
	struct jd_conn *c = w->c;
	struct jp_buf b;

	if (!timed_out && !w->single && w->pending == 0 && w->n > WAIT_SLICE && !c->answering &&
	    !c->closing) {
		if (w->has_timer)
			uv_timer_stop(&w->timer);
		disarm(w);
		jp_buf_init(&w->sb);
		if (reply_prefix(&w->sb, w, false)) {
			send_reply(d, w, &w->sb, true);
			return;
		}
		c->answering = w;
		d->srv.answering++;
		d->srv.sliced_replies++;
		if (slice_step(d, w))
			jd_conn_defer(c);
		return;
	}
	jp_buf_init(&b);
	send_reply(d, w, &b, reply_text(&b, d, w, timed_out) != 0);
}

static void timeout_cb(uv_timer_t *t)
{
	struct jd_wait_req *w = t->data;
	struct jd_net *d = w->c->d;

	/* Ends that woke no one first: they may answer w (wait_end then closes its timer,
	 * whose close frees w later). */
	if (d->runner) {
		jd_runner_drain(d->runner);
		if (uv_is_closing((uv_handle_t *)t))
			return;
	}
	reply(d, w, true);
}

/* The timeout's timer is armed in the loop's prepare phase, not when the wait begins
 * (jd_session_waits_arm): a submit with `wait` whose job ends in the same loop iteration
 * (a call run inline, a cancel) is answered before then, and its wait never has a timer
 * at all.  Arming it at once cost uv_timer_init and _start, then _stop, uv_close and the
 * close callback's pass, about 400 of the daemon's 16,500 instructions per noop submit
 * with a timeout (callgrind, libjsched's jsched_submit_wait with 10 s).  The due time is
 * the same: the prepare phase arms it for what is left of timeout_ms since begun_ms, the
 * loop's time when it began (libuv's timers count from that time too), and the prepare
 * phase is the last before the poll, so no poll waits past it. */
void jd_session_waits_arm(struct jd_net *d)
{
	uint64_t now = uv_now(d->loop);

	while (d->srv.to_arm) {
		struct jd_wait_req *w = d->srv.to_arm;
		uint64_t gone = now > w->begun_ms ? now - w->begun_ms : 0;

		disarm(w);
		uv_timer_init(d->loop, &w->timer);
		w->timer.data = w;
		w->has_timer = true;
		uv_timer_start(&w->timer, timeout_cb, w->timeout_ms > gone ? w->timeout_ms - gone : 0, 0);
	}
}

/* over_limits: would a wait of n ids put c over its limits?  Replies the error (with
 * `field`) if so. */
static bool over_limits(struct jd_conn *c, int64_t id, size_t n, const char *field)
{
	const struct jd_config *cfg = c->d->cfg;
	struct jd_uid_count *u = jd__uid_count(c->d, c->uid);

	if (c->n_waits >= cfg->max_waits_per_conn) {
		jd__reply_error(c, id, JSCHED_ELIMIT_EXCEEDED, field,
				"this connection has %u waits pending, its limit "
				"(limits.waits_per_connection)", (unsigned)c->n_waits);
		return true;
	}
	if (u && u->wait_ids + n > cfg->max_wait_ids_per_uid) {
		jd__reply_error(c, id, JSCHED_ELIMIT_EXCEEDED, field,
				"uid %u's pending waits name %llu jobs; %zu more would pass the "
				"limit of %u (limits.wait_ids_per_uid)", (unsigned)c->uid,
				(unsigned long long)u->wait_ids, n, cfg->max_wait_ids_per_uid);
		return true;
	}
	return false;
}

struct jd_wait_req *jd__wait_new(struct jd_conn *c, int64_t id, size_t n, const char *field)
{
	struct jd_wait_req *w;

	if (field && over_limits(c, id, n, field))
		return NULL;
	if (n == 1 && (w = c->d->srv.spare_waits)) {
		c->d->srv.spare_waits = w->next;
		c->d->srv.n_spare_waits--;
		memset(w, 0, WAIT1_BYTES);
	} else if (!(w = calloc(1, sizeof(*w) + n * sizeof(w->links[0])))) {
		jd__reply_error(c, id, JSCHED_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	w->c = c;
	w->id = id;
	w->n = n;
	return w;
}

struct jd_job **jd__wait_jobs_new(struct jd_wait_req *w)
{
	/* One job (every submit of one spec with wait): no allocation of its own, nor its
	 * free (about 150 instructions of a noop submit with wait, callgrind). */
	return w->n == 1 ? &w->one : malloc(w->n * sizeof(*w->jobs));
}

void jd__wait_discard(struct jd_wait_req *w)
{
	wait_release(&w->c->d->srv, w);
}

void jd__wait_begin(struct jd_wait_req *w, struct jd_job **jobs, const struct jd__wait_how *how)
{
	struct jd_conn *c = w->c;
	struct jd_net *d = c->d;
	struct jd_uid_count *u;
	size_t done = 0;

	w->any = how->any;
	w->single = how->single;
	w->brief = how->brief;
	w->output = how->output;
	w->head = how->head;
	w->head_job = how->job;
	w->jobs = jobs;
	w->next = c->waits;
	if (c->waits)
		c->waits->prev = w;
	c->waits = w;
	c->n_waits++;
	if ((u = jd__uid_count(d, c->uid)))
		u->wait_ids += w->n;
	for (size_t i = 0; i < w->n; i++) {
		struct jd_wait_link *l = &w->links[i];

		l->w = w;
		jd_job_pin(d->jobs, jobs[i]);
		/* A job that is final but not yet settled counts as ended. */
		if (jd_state_final(jobs[i]->state)) {
			done++;
			continue;
		}
		l->on_list = true;
		l->next = jobs[i]->waiters;
		if (l->next)
			l->next->prev = l;
		jobs[i]->waiters = l;
		w->pending++;
	}
	if (done == w->n || (w->any && done > 0) || how->timeout_ms == 0) {
		reply(d, w, done < w->n && !(w->any && done > 0));
		return;
	}
	w->scan = w->n;
	want_next(d, w);
	if (how->timeout_ms > 0) {
		/* Armed before the next poll, if it is still pending then (wait_arm). */
		w->to_arm = true;
		w->begun_ms = uv_now(d->loop);
		w->timeout_ms = (uint64_t)how->timeout_ms;
		w->arm_prev = NULL;
		w->arm_next = d->srv.to_arm;
		if (w->arm_next)
			w->arm_next->arm_prev = w;
		d->srv.to_arm = w;
	}
}

void jd__op_wait(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	size_t n, done = 0;
	struct jd__wait_how how = {.timeout_ms = jp_req_int(r, "timeout_ms", -1)};
	struct jd_wait_req *w;

	how.any = strcmp(jp_req_str(r, "mode", "all"), "any") == 0;
	how.brief = strcmp(jp_req_str(r, "fields", "all"), "brief") == 0;
	if (jd__find_all_owned(c, r, &jobs, &n, &how.single) < 0)
		return;
	/* Already answerable: answered at once, never refused for the limits. */
	for (size_t i = 0; i < n; i++)
		done += jd_state_final(jobs[i]->state);
	w = jd__wait_new(c, r->id, n, done < n && !(how.any && done > 0) && how.timeout_ms != 0
					      ? (how.single ? "job" : "jobs") : NULL);
	if (!w) {
		free(jobs);
		return;
	}
	jd__wait_begin(w, jobs, &how);
}

void jd_session_job_final(struct jd_net *d, struct jd_job *j)
{
	/* Detach the whole list first: answering a wait unlinks its other links, which
	 * may sit on this same list (a wait naming the job twice). */
	while (j->waiters) {
		struct jd_wait_link *l = j->waiters;
		struct jd_wait_req *w = l->w;

		unlink_link(l);
		w->pending--;
		if (w->pending == 0 || w->any)
			reply(d, w, false);
		else if (w->scan > 0 && l == &w->links[w->scan - 1])
			want_next(d, w); /* the one it asked for ended: the next */
	}
}

void jd__waits_drop(struct jd_conn *c)
{
	while (c->waits)
		wait_end(c->waits);
}
