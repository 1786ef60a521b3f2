/* daemon/net/session.h: the protocol's operations, one connection's requests at a time.
 *
 * The server (server.c) hands every decoded message to jd_session_message(); this layer
 * checks it with the codec (proto/jproto.h), enforces identity and ownership (a client
 * sees and cancels only its own uid's jobs; admin operations need an admin uid), runs
 * the operation against the job table and replies.  Replies to `wait` and blocked
 * `submit`s come later, from jd_session_job_final() and jd_session_client_unblocked().
 * Loop thread only.
 */
#ifndef JD_SESSION_H
#define JD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct jd_conn;
struct jd_net;
struct jd_job;
struct jd_client;
struct jd_jobs;
struct jd_runner;
struct jp_job_spec;
struct jsched_handler;

/* jd_session_message: handle one message (borrowed) from c. */
void jd_session_message(struct jd_conn *c, json_t *msg);

/* jd_session_frame: handle one frame's request (text[0..len), borrowed) without a tree
 * when it is one the codec reads that way (jp_fast_parse: the hot requests, after
 * hello).  Returns false, having done nothing, for every other frame: the caller then
 * parses it and calls jd_session_message, which gives the same answer either way. */
bool jd_session_frame(struct jd_conn *c, const void *text, size_t len);

/* jd_session_fatal: send an error with id null (code, message) and close c. */
void jd_session_fatal(struct jd_conn *c, int code, const char *message);

/* jd_session_closed: c is going away: drop its waits, its watch and a held submit. */
void jd_session_closed(struct jd_conn *c);

/* jd_session_answer_more: write the next slice of c's answer in slices (c->answering,
 * op_wait.c), sending it when it is whole.  Returns whether some of it is still to
 * write.  Loop thread. */
bool jd_session_answer_more(struct jd_conn *c);
/* jd_session_waits_arm: start the timers of the waits begun since the last call that are
 * still pending (d->srv.to_arm); the loop's prepare phase calls it.  Loop thread. */
void jd_session_waits_arm(struct jd_net *d);

/* jd_session_waits_free: free the ended waits kept for reuse (op_wait.c, "Spare waits"),
 * when the server's memory is freed.  Loop thread. */
void jd_session_waits_free(struct jd_net *d);

/* jd_session_admit_more: make the next slice of the jobs of c's submit in slices
 * (c->admitting, op_submit.c), admitting or refusing it whole after the last.  Returns
 * whether some of it is still to make.  Loop thread. */
bool jd_session_admit_more(struct jd_conn *c);

/* jd_session_job_final: j has reached its final state: answer the waits on it. */
void jd_session_job_final(struct jd_net *d, struct jd_job *j);

/* jd_session_client_unblocked: client c has room again: retry its held submits. */
void jd_session_client_unblocked(struct jd_net *d, struct jd_client *c);

/* jd_session_broadcast_shutdown: send the shutdown event to every connection. */
void jd_session_broadcast_shutdown(struct jd_net *d, const char *mode);

/* jd_error_obj: an error object with code, field (may be NULL) and a printf message.
 * New reference. */
__attribute__((format(printf, 3, 4))) json_t *jd_error_obj(int code, const char *field,
							   const char *fmt, ...);

/* jd_reply_ok: send {"id": id, "ok": true} plus the members of body (stolen; may be
 * NULL). */
void jd_reply_ok(struct jd_conn *c, int64_t id, json_t *body);

/* jd_reply_error_obj: send {"id": id, "ok": false, "error": err} (err stolen). */
void jd_reply_error_obj(struct jd_conn *c, int64_t id, json_t *err);

/* jd_job_from_spec: a job made from a parsed spec for client cl and owner uid/gid, with
 * the next id, in state WAITING, not in the table, its deps and (unless the spec has
 * one) deadline unset: what a submit makes of each spec, and what recovery makes of a
 * recorded one (op_submit.c).  NULL on ENOMEM. */
struct jd_job *jd_job_from_spec(struct jd_jobs *t, struct jd_runner *runner, struct jd_client *cl,
				uid_t uid, gid_t gid, const struct jp_job_spec *sp,
				const struct jsched_handler *h, uint64_t now_ns, uint64_t now_ms);

/* jd_session_make_element: element pos of array parent p (core/array.h), made from the
 * shared spec with its index in its environment (JSCHED_ARRAY_ID, JSCHED_ARRAY_INDEX) and,
 * with array_replace, in place of "{}" in its argv; not yet in the table.  NULL on ENOMEM. */
struct jd_job *jd_session_make_element(struct jd_net *d, struct jd_job *p, uint64_t pos);

#endif /* JD_SESSION_H */
