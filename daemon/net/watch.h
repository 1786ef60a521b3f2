/* daemon/net/watch.h: job events per uid, numbered and retained for `watch` resume.
 *
 * PROTOCOL.md section 7: every state change of a job is an event of its owner's uid,
 * numbered 1, 2, 3 ... per uid for the daemon's lifetime.  The last `retain_events` of
 * each uid are kept in a ring, so a client that reconnects can ask for everything after
 * the last number it saw; older ones are gone and the client is told so (events_lost).
 * Connections that watch are on one list; an event goes to those of its uid.
 *
 * The ring holds small fixed records (seq, job, state), not JSON: the event's job record
 * is built only when it is sent, from the job table (the record as of that state).  A
 * daemon with nobody watching builds no JSON for events at all.  Keeping a JSON object
 * per event (the first version) made jansson and malloc/free about 60 % of the loop
 * thread's perf profile, and batches of 10,000 noops slowed from 36k to 9k jobs/s as the
 * ring filled and old events were freed; with records, a steady ~40k jobs/s (measured on
 * this 2-core VM, one client, rel build).  The price: replaying an event whose
 * job has since been forgotten (events retained longer than jobs) gives a short record,
 * {"job", "state", "uid", "forgotten": true}.
 * Loop thread only.
 */
#ifndef JD_WATCH_H
#define JD_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct jd_net;
struct jd_conn;
struct jd_job;

/* One retained event. */
struct jd_event_rec {
	uint64_t job;
	uint8_t state;		/* enum jd_state the job entered */
};

/* One uid's stream. */
struct jd_uid_stream {
	uid_t uid;
	uint64_t last_seq;	/* number of the newest event (0: none yet) */
	struct jd_event_rec *ring;	/* ring[seq % cap]: the event with that seq */
	size_t cap;
	struct jd_uid_stream *next;
};

struct jd_watch {
	struct jd_uid_stream *streams;
	struct jd_conn *watchers;	/* connections watching, any uid */
	size_t n_watchers;
	uint64_t events;
};

/* jd_watch_job: record and send the event "job j is now in its current state". */
void jd_watch_job(struct jd_net *d, const struct jd_job *j);

/* jd_watch_start: subscribe c (PROTOCOL.md `watch`): replies to request `id`,
 * replaying from from_seq if has_from.  Returns 0, or JSCHED_EEVENTS_LOST after
 * sending that error (not subscribed). */
int jd_watch_start(struct jd_net *d, struct jd_conn *c, int64_t id, bool has_from,
		   uint64_t from_seq, const char *instance);

/* jd_watch_stop: unsubscribe c (idempotent). */
void jd_watch_stop(struct jd_net *d, struct jd_conn *c);

/* jd_watch_free: release every stream. */
void jd_watch_free(struct jd_net *d);

#endif /* JD_WATCH_H */
