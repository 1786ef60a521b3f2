/* daemon/net/watch.c: numbered job events per uid and the `watch` subscriptions. */
#include "daemon/net/watch.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"
#include "jsched/error.h"

static struct jd_uid_stream *stream_of(struct jd_net *d, uid_t uid, bool create)
{
	struct jd_uid_stream *s;

	for (s = d->watch.streams; s; s = s->next)
		if (s->uid == uid)
			return s;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cap = d->cfg->retain_events;
	s->ring = calloc(s->cap, sizeof(*s->ring));
	if (!s->ring) {
		free(s);
		return NULL;
	}
	s->uid = uid;
	s->next = d->watch.streams;
	d->watch.streams = s;
	return s;
}

/* oldest_seq: the oldest event still retained, or the next to come if none is. */
static uint64_t oldest_seq(const struct jd_uid_stream *s)
{
	if (!s || s->last_seq == 0)
		return s ? s->last_seq + 1 : 1;
	return s->last_seq >= s->cap ? s->last_seq - s->cap + 1 : 1;
}

/* event_frame: the event `seq` of stream s, as a frame ready for jd_conn_send_frame
 * (header room, then JSON text).  Returns 0 or JSCHED_ENOMEM (b then empty). */
static int event_frame(struct jp_buf *b, struct jd_net *d, const struct jd_uid_stream *s,
		       uint64_t seq)
{
	const struct jd_event_rec *e = &s->ring[seq % s->cap];
	struct jd_job *j = jd_job_find(d->jobs, e->job, NULL);
	int rc;

	jp_buf_init(b);
	rc = jp_buf_append(b, "\0\0\0\0", JP_HEADER_BYTES) ||
	     jd_json_text_raw(b, "{\"event\":\"job\",\"seq\":") ||
	     jd_json_text_int(b, (int64_t)seq) || jd_json_text_raw(b, ",\"job\":");
	if (!rc && j)
		rc = jd_record_text(b, d, j, (enum jd_state)e->state);
	else if (!rc) /* forgotten since: what the ring still knows */
		rc = jd_json_text_raw(b, "{\"job\":") || jd_json_text_int(b, (int64_t)e->job) ||
		     jd_json_text_raw(b, ",\"state\":") ||
		     jd_json_text_string(b, jd_state_name((enum jd_state)e->state)) ||
		     jd_json_text_raw(b, ",\"uid\":") || jd_json_text_int(b, (int64_t)s->uid) ||
		     jd_json_text_raw(b, ",\"forgotten\":true}");
	if (!rc)
		rc = jd_json_text_raw(b, "}");
	if (rc) {
		jp_buf_free(b);
		return JSCHED_ENOMEM;
	}
	return 0;
}

/* send_copy: send the frame in b to c, keeping b (each watcher gets its own copy). */
static void send_copy(struct jd_conn *c, const struct jp_buf *b)
{
	struct jp_buf copy;

	jp_buf_init(&copy);
	if (jp_buf_append(&copy, b->data, b->len) == 0)
		jd_conn_send_frame(c, &copy);
}

/* watch_send: the event of seq in s (j's) to each watcher of j's uid. */
static __attribute__((noinline)) void watch_send(struct jd_net *d, struct jd_uid_stream *s,
						 const struct jd_job *j)
{
	struct jp_buf ev;
	bool built = false;

	for (struct jd_conn *c = d->watch.watchers; c; c = c->watch_next) {
		if (c->uid != j->uid || c->closing)
			continue;
		if (!built && event_frame(&ev, d, s, s->last_seq) < 0)
			return;
		built = true;
		send_copy(c, &ev);
	}
	if (built)
		jp_buf_free(&ev);
}

void jd_watch_job(struct jd_net *d, const struct jd_job *j)
{
	/* The list's head first, without the call: the newest uid's stream, the only one
	 * where one uid submits (four events a job reach here).  The sending is out of
	 * line: with the loop over the watchers inline, a call without any saved the
	 * registers that loop needs (38 -> 29 instructions a call, callgrind). */
	struct jd_uid_stream *s = d->watch.streams;

	if (!s || s->uid != j->uid)
		s = stream_of(d, j->uid, true);
	if (!s)
		return;
	s->last_seq++;
	d->watch.events++;
	s->ring[s->last_seq % s->cap] = (struct jd_event_rec){.job = j->id, .state = (uint8_t)j->state};
	if (d->watch.watchers)
		watch_send(d, s, j);
}

static void unlink_watcher(struct jd_net *d, struct jd_conn *c)
{
	if (!c->watching)
		return;
	if (c->watch_prev)
		c->watch_prev->watch_next = c->watch_next;
	else
		d->watch.watchers = c->watch_next;
	if (c->watch_next)
		c->watch_next->watch_prev = c->watch_prev;
	c->watch_next = c->watch_prev = NULL;
	c->watching = false;
	d->watch.n_watchers--;
	if (d->runner)
		jd_runner_eager(d->runner, -1);
}

int jd_watch_start(struct jd_net *d, struct jd_conn *c, int64_t id, bool has_from,
		   uint64_t from_seq, const char *instance)
{
	struct jd_uid_stream *s = stream_of(d, c->uid, false);
	uint64_t last = s ? s->last_seq : 0;
	uint64_t oldest = oldest_seq(s);

	unlink_watcher(d, c);
	if (has_from && ((instance && strcmp(instance, d->instance) != 0) ||
			 from_seq + 1 < oldest || from_seq > last)) {
		json_t *err = jd_error_obj(JSCHED_EEVENTS_LOST, NULL,
					   "events after %llu are no longer retained (oldest is %llu)",
					   (unsigned long long)from_seq, (unsigned long long)oldest);

		json_object_set_new(err, "oldest_seq", json_integer((json_int_t)oldest));
		json_object_set_new(err, "instance", json_string(d->instance));
		jd_reply_error_obj(c, id, err);
		return JSCHED_EEVENTS_LOST;
	}
	jd_reply_ok(c, id, json_pack("{s:I, s:s}", "seq", (json_int_t)last, "instance",
				     d->instance));
	if (has_from)
		for (uint64_t q = from_seq + 1; q <= last && !c->closing; q++) {
			struct jp_buf ev;

			if (event_frame(&ev, d, s, q) == 0)
				jd_conn_send_frame(c, &ev);
		}
	c->watching = true;
	c->watch_next = d->watch.watchers;
	c->watch_prev = NULL;
	if (d->watch.watchers)
		d->watch.watchers->watch_prev = c;
	d->watch.watchers = c;
	d->watch.n_watchers++;
	/* A watcher is told of every start and end as it happens: each notice wakes the
	 * loop while one is open (runner.c, "Which ends wake the loop"). */
	if (d->runner)
		jd_runner_eager(d->runner, 1);
	return 0;
}

void jd_watch_stop(struct jd_net *d, struct jd_conn *c)
{
	unlink_watcher(d, c);
}

void jd_watch_free(struct jd_net *d)
{
	while (d->watch.streams) {
		struct jd_uid_stream *s = d->watch.streams;

		d->watch.streams = s->next;
		free(s->ring);
		free(s);
	}
}

void jd__op_watch(struct jd_conn *c, const struct jp_request *r)
{
	json_t *from = json_object_get(r->msg, "from_seq");

	jd_watch_start(c->d, c, r->id, from != NULL, (uint64_t)jp_req_int(r, "from_seq", 0),
		       jp_req_str(r, "instance", NULL));
}
