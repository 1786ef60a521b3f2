/* daemon/watch.c: numbered job events per uid and the `watch` subscriptions. */
#include "daemon/watch.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/session.h"
#include "jsched/error.h"

static struct jd_uid_stream *stream_of(struct jd_daemon *d, uid_t uid, bool create)
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
	s->cap = d->cfg.retain_events;
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

/* event_json: the event `seq` of stream s as sent (new reference). */
static json_t *event_json(struct jd_daemon *d, const struct jd_uid_stream *s, uint64_t seq)
{
	const struct jd_event_rec *e = &s->ring[seq % s->cap];
	struct jd_job *j = jd_job_find(d, e->job, NULL);
	json_t *rec = j ? jd_job_record_as(d, j, (enum jd_state)e->state)
			: json_pack("{s:I, s:s, s:I, s:b}", "job", (json_int_t)e->job, "state",
				    jd_state_name((enum jd_state)e->state), "uid",
				    (json_int_t)s->uid, "forgotten", 1);

	return rec ? jp_event_job_new((int64_t)seq, rec) : NULL;
}

void jd_watch_job(struct jd_daemon *d, const struct jd_job *j)
{
	struct jd_uid_stream *s = stream_of(d, j->uid, true);
	json_t *ev = NULL;

	if (!s)
		return;
	s->last_seq++;
	d->watch.events++;
	s->ring[s->last_seq % s->cap] = (struct jd_event_rec){.job = j->id, .state = (uint8_t)j->state};
	for (struct jd_conn *c = d->watch.watchers; c; c = c->watch_next) {
		if (c->uid != j->uid || c->closing)
			continue;
		if (!ev && !(ev = event_json(d, s, s->last_seq)))
			return;
		jd_conn_send(c, ev);
	}
	json_decref(ev);
}

static void unlink_watcher(struct jd_daemon *d, struct jd_conn *c)
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
}

int jd_watch_start(struct jd_daemon *d, struct jd_conn *c, int64_t id, bool has_from,
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
			json_t *ev = event_json(d, s, q);

			if (ev)
				jd_conn_send(c, ev);
			json_decref(ev);
		}
	c->watching = true;
	c->watch_next = d->watch.watchers;
	c->watch_prev = NULL;
	if (d->watch.watchers)
		d->watch.watchers->watch_prev = c;
	d->watch.watchers = c;
	d->watch.n_watchers++;
	return 0;
}

void jd_watch_stop(struct jd_daemon *d, struct jd_conn *c)
{
	unlink_watcher(d, c);
}

void jd_watch_free(struct jd_daemon *d)
{
	while (d->watch.streams) {
		struct jd_uid_stream *s = d->watch.streams;

		d->watch.streams = s->next;
		free(s->ring);
		free(s);
	}
}
