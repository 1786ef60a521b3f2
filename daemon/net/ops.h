/* daemon/net/ops.h: what the dispatcher (session.c) and the operation files
 * (op_*.c, watch.c) share; internal to daemon/net/, so its names have the jd__ prefix.
 * One function per operation, each called with the parsed request after the handshake
 * and admin gates.  Loop thread only.
 */
#ifndef JD_NET_OPS_H
#define JD_NET_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto/jproto.h"

struct jd_conn;
struct jd_job;

/* jd__reply_error: send an error reply with a printf message. */
__attribute__((format(printf, 5, 6))) void jd__reply_error(struct jd_conn *c, int64_t id, int code,
							  const char *field, const char *fmt, ...);

/* jd__limits_of: the limits in force on c (the hello reply's).  Loop thread. */
void jd__limits_of(const struct jd_conn *c, struct jp_limits *lim);

/* jd__find_owned: job `id` if it exists and c may see it; else replies the error to
 * req_id (with `field`) and returns NULL. */
struct jd_job *jd__find_owned(struct jd_conn *c, int64_t req_id, int64_t id, const char *field);

/* jd__find_all_owned: the jobs of a request's `job` / `jobs` (in order, *out malloc'd),
 * all owned by c's uid (or c is admin).  On any failure replies and returns < 0. */
int jd__find_all_owned(struct jd_conn *c, const struct jp_request *r, struct jd_job ***out,
		       size_t *n, bool *single);

/* jd__about_jobs: the frame c sends next tells only of jobs[0..n) (a status or a wait):
 * it waits for the journal up to the last record of any of them (jd_job.jseq), not for
 * every record appended before it (server.h, jh_upto), unless one of them belongs to an
 * array (a parent's record counts its elements, whose records are their own: then it
 * waits for every record, as any frame).  jd__about_end after the send.  Loop thread. */
void jd__about_jobs(struct jd_conn *c, struct jd_job *const *jobs, size_t n);
void jd__about_end(struct jd_conn *c);

/* jd__op_submit (op_submit.c), jd__op_wait (op_wait.c): the two operations that may
 * answer later.  msg is the whole request (borrowed), kept if the submit must wait for
 * room. */
void jd__op_submit(struct jd_conn *c, const struct jp_request *r, json_t *msg);
void jd__op_wait(struct jd_conn *c, const struct jp_request *r);

/* op_pause.c: pause, resume, hold and release (answered at once). */
void jd__op_pause(struct jd_conn *c, const struct jp_request *r);
void jd__op_resume(struct jd_conn *c, const struct jp_request *r);
void jd__op_hold(struct jd_conn *c, const struct jp_request *r);
void jd__op_release(struct jd_conn *c, const struct jp_request *r);

/* op_hook.c */
void jd__op_hook(struct jd_conn *c, const struct jp_request *r);

/* op_jobs.c: status, cancel, list, output and drain (answered at once). */
void jd__op_status(struct jd_conn *c, const struct jp_request *r);
void jd__op_cancel(struct jd_conn *c, const struct jp_request *r);
void jd__op_list(struct jd_conn *c, const struct jp_request *r);
void jd__op_output(struct jd_conn *c, const struct jp_request *r);
void jd__op_drain(struct jd_conn *c, const struct jp_request *r);

/* watch.c: subscribe to the caller's job events (unwatch is jd_watch_stop). */
void jd__op_watch(struct jd_conn *c, const struct jp_request *r);

/* op_admin.c: reload, set_client, shutdown and test_clock (the caller is an admin). */
void jd__op_reload(struct jd_conn *c, const struct jp_request *r);
void jd__op_set_client(struct jd_conn *c, const struct jp_request *r);
void jd__op_shutdown(struct jd_conn *c, const struct jp_request *r);
void jd__op_test_clock(struct jd_conn *c, const struct jp_request *r);

/* op_retry.c: retry (answered at once). */
void jd__op_retry(struct jd_conn *c, const struct jp_request *r);

/* A pending wait (op_wait.c): of `wait`, or of a submit with `wait` (op_submit.c). */
struct jd_wait_req;

/* How a wait answers (jd__wait_begin).  head: NULL for a `wait`; for a submit, its reply
 * members from `,"ok":true` on (malloc'd text, taken by the wait), after which the
 * answer carries `record` / `records` and, with output, the one job's output.  job: a
 * submit of one new job without refs (head NULL then): its id, and the members
 * `,"ok":true,"job":ID` are written at the answer instead of kept as text (the text's
 * making, allocation and free were about 450 instructions of a noop submit with wait). */
struct jd__wait_how {
	bool any, single, output;
	bool brief;		/* wait's `fields` "brief": records of job and state only */
	int64_t timeout_ms;	/* -1: none; 0: answer at once */
	char *head;
	int64_t job;		/* 0: none */
};

/* jd__wait_new: a wait of n jobs for request id on c, not yet begun.  With field (not
 * NULL) it is first checked against c's wait limits (limits.waits_per_connection,
 * limits.wait_ids_per_uid).  Returns NULL after replying the error (limit_exceeded with
 * field, or no_memory). */
struct jd_wait_req *jd__wait_new(struct jd_conn *c, int64_t id, size_t n, const char *field);

/* jd__wait_discard: free a wait that was never begun. */
void jd__wait_discard(struct jd_wait_req *w);

/* jd__wait_jobs_new: room for w's n jobs, to fill and give to jd__wait_begin (inside w
 * for one job, else malloc'd), or NULL when out of memory. */
struct jd_job **jd__wait_jobs_new(struct jd_wait_req *w);

/* jd__wait_begin: start w on jobs (n of them, malloc'd or jd__wait_jobs_new's, taken;
 * each pinned until the answer): answered at once if it can be (every job final, one
 * for "any", or timeout 0), else when its jobs end, its time runs out or (dropped) its
 * connection closes. */
void jd__wait_begin(struct jd_wait_req *w, struct jd_job **jobs, const struct jd__wait_how *how);

/* op_result.c: result, a job's result alone, in pieces (answered at once). */
void jd__op_result(struct jd_conn *c, const struct jp_request *r);

/* jd__submit_drop: drop c's submit in slices, its jobs discarded (the connection is
 * closing). */
void jd__submit_drop(struct jd_conn *c);

/* jd__waits_drop: forget c's pending waits (the connection is closing). */
void jd__waits_drop(struct jd_conn *c);

#endif /* JD_NET_OPS_H */
