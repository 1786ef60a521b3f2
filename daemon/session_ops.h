/* daemon/session_ops.h: what session.c, submit.c and wait.c share (internal to them).
 * Loop thread only.
 */
#ifndef JD_SESSION_OPS_H
#define JD_SESSION_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto/jproto.h"

struct jd_conn;
struct jd_job;

/* jd_reply_error: send an error reply with a printf message. */
__attribute__((format(printf, 5, 6))) void jd_reply_error(struct jd_conn *c, int64_t id, int code,
							 const char *field, const char *fmt, ...);

/* jd_limits_of: the limits in force on c (the hello reply's). */
void jd_limits_of(const struct jd_conn *c, struct jp_limits *lim);

/* jd_find_owned: job `id` if it exists and c may see it; else replies the error to
 * req_id (with `field`) and returns NULL. */
struct jd_job *jd_find_owned(struct jd_conn *c, int64_t req_id, int64_t id, const char *field);

/* jd_find_all_owned: the jobs of a request's `job` / `jobs` (in order, *out malloc'd),
 * all owned by c's uid (or c is admin).  On any failure replies and returns < 0. */
int jd_find_all_owned(struct jd_conn *c, const struct jp_request *r, struct jd_job ***out,
		      size_t *n, bool *single);

/* jd_op_submit (submit.c), jd_op_wait (wait.c): the two operations that may answer
 * later.  msg is the whole request (borrowed), kept if the submit must wait for room. */
void jd_op_submit(struct jd_conn *c, const struct jp_request *r, json_t *msg);
void jd_op_wait(struct jd_conn *c, const struct jp_request *r);

/* jd_waits_drop: forget c's pending waits (the connection is closing). */
void jd_waits_drop(struct jd_conn *c);

#endif /* JD_SESSION_OPS_H */
