/* daemon/net/follow.c: following a job's output as it arrives (see follow.h). */
#include "daemon/net/follow.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/core/exec_job.h"
#include "daemon/core/jobs.h"
#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/server.h"
#include "daemon/net/session.h"
#include "jsched/error.h"

struct jd_follow {
	struct jd_follow *next, *prev;	/* d->follow.all */
	struct jd_conn *c;
	uint64_t job;
	unsigned mask;			/* bit 0 stdout, bit 1 stderr */
	bool follow;			/* until the job ends (else: what there is now) */
	uint32_t gen;			/* the log's gen the cursor is in */
	uint64_t from[2];		/* sent up to these stream offsets */
};

static const char *const stream_name[2] = {"stdout", "stderr"};

static void drop(struct jd_net *d, struct jd_follow *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		d->follow.all = f->next;
	if (f->next)
		f->next->prev = f->prev;
	d->follow.n--;
	f->c->n_follows--;
	free(f);
}

/* ensure_log: j's output in its log: read from the output files if it is there, or made
 * from the single buffers a Slurm job or a recovered record has. */
static void ensure_log(struct jd_net *d, struct jd_job *j)
{
	struct jd_exec_result *x = &j->exec->res;

	(void)jd_exec_output_load(j, d->jobs->outfiles);
	if (x->log.first || x->log.total[0] || x->log.total[1] || !(x->out.len || x->err.len))
		return;
	x->log.limit = 2 * (x->out.len > x->err.len ? x->out.len : x->err.len) + 2;
	(void)jd_outlog_add(&x->log, 0, x->out.data, x->out.len);
	(void)jd_outlog_add(&x->log, 1, x->err.data, x->err.len);
}

/* send_end: the follower's last event. */
static void send_end(struct jd_follow *f, const struct jd_job *j, bool forgotten)
{
	const struct jd_outlog *l = j ? &j->exec->res.log : NULL;
	json_t *ev = json_pack("{s:s, s:I, s:s, s:b, s:I, s:I}", "event", "output_end", "job_id",
			       (json_int_t)f->job, "state", j ? jd_state_name(j->state) : "forgotten",
			       "complete", !j || jd_state_final(j->state), "stdout_bytes",
			       (json_int_t)(l ? l->total[0] : 0), "stderr_bytes",
			       (json_int_t)(l ? l->total[1] : 0));

	if (ev && forgotten)
		json_object_set_new(ev, "forgotten", json_true());
	if (ev)
		jd_conn_send(f->c, ev);
	json_decref(ev);
}

/* pump: send f what its job's log holds past its cursor while the connection has room;
 * at the job's end, the end event.  Returns true when f was dropped. */
static bool pump(struct jd_net *d, struct jd_follow *f)
{
	struct jd_job *j = jd_job_find(d->jobs, f->job, NULL);
	const struct jd_outlog *l;

	if (f->c->closing) {
		drop(d, f);
		return true;
	}
	if (!j || !j->exec) {
		send_end(f, NULL, true);
		drop(d, f);
		return true;
	}
	if (jd_state_final(j->state))
		ensure_log(d, j);
	l = &j->exec->res.log;
	if (f->gen != l->gen) {
		/* The job runs again (a retry): its output starts over, and so does the cursor
		 * (the events' offsets go back to 0). */
		f->gen = l->gen;
		f->from[0] = f->from[1] = 0;
	}
	for (;;) {
		const struct jd_out_chunk *ch = jd_outlog_seek(l, f->mask, f->from);
		uint64_t start, n, dropped;
		unsigned s;
		json_t *ev;

		if (!ch)
			break;
		if (jd_conn_pending(f->c) >= FOLLOW_WINDOW) {
			d->follow.waits++;
			return false; /* its writes' completion goes on (jd_follow_drained) */
		}
		s = ch->stream;
		start = ch->off > f->from[s] ? ch->off : f->from[s];
		dropped = start - f->from[s];
		n = ch->off + ch->len - start;
		if (n > FOLLOW_EVENT_BYTES)
			n = FOLLOW_EVENT_BYTES;
		ev = json_pack("{s:s, s:I, s:s, s:I, s:o}", "event", "output", "job_id",
			       (json_int_t)f->job, "stream", stream_name[s], "offset",
			       (json_int_t)start, "data",
			       jp_base64_json(ch->data + ch->skip + (start - ch->off), (size_t)n));
		if (ev && dropped)
			json_object_set_new(ev, "dropped", json_integer((json_int_t)dropped));
		if (!ev || jd_conn_send(f->c, ev) < 0) {
			json_decref(ev);
			drop(d, f); /* out of memory, or the connection was cut */
			return true;
		}
		json_decref(ev);
		f->from[s] = start + n;
		d->follow.events++;
		d->follow.bytes += n;
	}
	if (f->follow && !jd_state_final(j->state))
		return false;
	send_end(f, j, false);
	drop(d, f);
	return true;
}

/* feed: pump every follower matching (c or job). */
static void feed(struct jd_net *d, const struct jd_conn *c, uint64_t job)
{
	for (struct jd_follow *f = d->follow.all, *next; f; f = next) {
		next = f->next;
		if ((c && f->c == c) || (!c && f->job == job))
			(void)pump(d, f);
	}
}

void jd__op_follow(struct jd_conn *c, const struct jp_request *r, struct jd_job *j)
{
	struct jd_net *d = c->d;
	const char *streams = jp_req_str(r, "streams", "both");
	struct jd_follow *f;
	int64_t tail = jp_req_int(r, "tail_lines", -1);

	if (c->n_follows >= FOLLOW_PER_CONN) {
		jd__reply_error(c, r->id, JSCHED_ELIMIT_EXCEEDED, "follow",
				"this connection follows %u jobs already (the limit)", FOLLOW_PER_CONN);
		return;
	}
	if (!(f = calloc(1, sizeof(*f)))) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	f->c = c;
	f->job = j->id;
	f->follow = jp_req_bool(r, "follow", false);
	f->mask = strcmp(streams, "stdout") == 0 ? 1u : strcmp(streams, "stderr") == 0 ? 2u : 3u;
	if (jd_state_final(j->state))
		ensure_log(d, j);
	f->gen = j->exec->res.log.gen;
	if (tail >= 0) {
		jd_outlog_tail_start(&j->exec->res.log, f->mask, (uint64_t)tail, f->from);
	} else {
		f->from[0] = (uint64_t)jp_req_int(r, "from_stdout", 0);
		f->from[1] = (uint64_t)jp_req_int(r, "from_stderr", 0);
	}
	f->next = d->follow.all;
	if (f->next)
		f->next->prev = f;
	d->follow.all = f;
	d->follow.n++;
	d->follow.started++;
	c->n_follows++;
	jd_reply_ok(c, r->id, json_pack("{s:I, s:I, s:I}", "job", (json_int_t)j->id, "from_stdout",
					(json_int_t)f->from[0], "from_stderr", (json_int_t)f->from[1]));
	(void)pump(d, f);
}

void jd_follow_output(struct jd_net *d, struct jd_job *j)
{
	if (d->follow.n)
		feed(d, NULL, j->id);
}

void jd_follow_final(struct jd_net *d, struct jd_job *j)
{
	if (d->follow.n && j->exec)
		feed(d, NULL, j->id);
}

void jd_follow_forgotten(struct jd_net *d, const struct jd_job *j)
{
	if (!d->follow.n)
		return;
	for (struct jd_follow *f = d->follow.all, *next; f; f = next) {
		next = f->next;
		if (f->job == j->id) {
			send_end(f, j->exec ? j : NULL, true);
			drop(d, f);
		}
	}
}

void jd_follow_drained(struct jd_conn *c)
{
	if (c->n_follows && !c->closing && jd_conn_pending(c) < FOLLOW_WINDOW / 2)
		feed(c->d, c, 0);
}

void jd_follow_closed(struct jd_conn *c)
{
	struct jd_net *d = c->d;

	for (struct jd_follow *f = d->follow.all, *next; f && c->n_follows; f = next) {
		next = f->next;
		if (f->c == c)
			drop(d, f);
	}
}

json_t *jd_follow_metrics(const struct jd_net *d)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "followers", (json_int_t)d->follow.n,
			 "started", (json_int_t)d->follow.started, "events",
			 (json_int_t)d->follow.events, "bytes", (json_int_t)d->follow.bytes,
			 "window_waits", (json_int_t)d->follow.waits, "window_bytes",
			 (json_int_t)FOLLOW_WINDOW);
}
