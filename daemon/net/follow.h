/* daemon/net/follow.h: following a job's output as it arrives (`output` with `follow`,
 * PROTOCOL.md section 6.7).
 *
 * A follower is one (connection, job) pair with a cursor: the stream offsets up to which
 * it was sent, per stream.  It is fed from the job's output log in memory
 * (core/outlog.h), in arrival order, as `output` events of at most FOLLOW_EVENT_BYTES
 * each, then one `output_end` event once the job is final and everything was sent (with
 * `follow`; with `events` alone, once what there is was sent).
 *
 * Bounded: a connection's followers send only while the connection has fewer than
 * FOLLOW_WINDOW bytes queued for it (in the kernel's stead: libuv's write queue, and
 * frames held for the journal); past that they wait, holding nothing but their cursor,
 * and go on when its writes complete.  So a follower that never reads costs the daemon at
 * most the window plus one event, whatever the command prints, and it is never cut for
 * it (the window is below limits.output_buffer_bytes).  If it falls so far behind that
 * the bytes after its cursor left the log (past exec.output_bytes the log keeps the
 * beginning and the end), its next event says how many it missed (`dropped`), and its
 * offsets show the jump.  At most FOLLOW_PER_CONN followers per connection.
 *
 * Who may follow: the job's owner or an admin (jd__find_owned).  Loop thread.
 */
#ifndef JD_FOLLOW_H
#define JD_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "proto/jproto.h"

#define FOLLOW_WINDOW (256u << 10)	/* bytes queued on a connection before followers wait */
#define FOLLOW_EVENT_BYTES (48u << 10)	/* output bytes per event, at most */
#define FOLLOW_PER_CONN 64u

struct jd_net;
struct jd_conn;
struct jd_job;
struct jd_follow;

/* Counters for the metrics (net.h's struct jd_net: follow). */
struct jd_follow_stats {
	struct jd_follow *all;		/* every follower */
	uint64_t n, started, events, bytes, waits;
};

/* jd__op_follow: `output` with follow (after the job was found and is an exec job). */
void jd__op_follow(struct jd_conn *c, const struct jp_request *r, struct jd_job *j);

/* jd_follow_output: job j has new output: feed its followers.  jd_follow_final: j is
 * final: feed them to the end.  jd_follow_forgotten: j is leaving the table: end them.
 * jd_follow_drained: c's queue went down: feed its followers.  jd_follow_closed: c is
 * going away: drop its followers. */
void jd_follow_output(struct jd_net *d, struct jd_job *j);
void jd_follow_final(struct jd_net *d, struct jd_job *j);
void jd_follow_forgotten(struct jd_net *d, const struct jd_job *j);
void jd_follow_drained(struct jd_conn *c);
void jd_follow_closed(struct jd_conn *c);

/* jd_follow_metrics: the metrics' "output_follow" member (new reference). */
json_t *jd_follow_metrics(const struct jd_net *d);

#endif /* JD_FOLLOW_H */
