/* daemon/run/backend.h: where an exec job's command runs: here (`local`, run/exec.c), on a
 * Slurm cluster (`slurm`, run/backend_slurm.c), or `auto`.
 *
 * Choosing.  At submit: the spec's `backend`, else its client's (clients.NAME.backend,
 * set_client), else backends.default ("local").  A backend this daemon does not have is
 * refused at submit with not_supported and the reason (not configured, or not built:
 * the build's libslurm is named by `jschedd --version`).  `auto` waits in its client's
 * queue for a process slot like a local job; if it is still queued when it has waited
 * backends.slurm.overflow_after_ms, a tick holds it in the fair layer, gives it the
 * Slurm class and releases it at its place, so it goes to Slurm in the fair order.
 *
 * The fair order.  jschedd's fair layer keeps deciding who goes next; Slurm only ever
 * sees the jobs at the head.  A job bound for Slurm carries a needs class holding one
 * unit of the fair layer's counted resource "slurm", whose capacity is
 * backends.slurm.max_submitted: so at most that many jobs are handed to Slurm and not
 * yet ended, and they are handed over in the fair layer's order (the window).  Within
 * the window a job's priority becomes its Slurm nice (critical 0, high 100, normal 200,
 * low 300), so Slurm starts them in the same order when it has room.  The fairness
 * charge of a remote job is its wall run time (Slurm's start to end in its whole
 * seconds, or as jschedd saw it to the poll interval, whichever is longer; at least
 * 1 ms): there is no thread CPU time to measure here.
 *
 * The path of a remote job.  A worker's feeder takes it from the fair layer like any job
 * (runner.c asks jd_backend_take first) and hands it to the loop thread (a list under a
 * mutex and a uv_async): no worker, fiber or process slot is held for it.  The loop
 * thread submits it through the slurm backend; Slurm's start is the job's
 * start (running, with the node in the record), Slurm's end its end, through
 * jd_exec_job_done like a local command, so the final states, causes and reasons are
 * the same.  Cancel and immediate shutdown reach it through jd_backend_cancel.
 * Dependencies between local and remote jobs are jschedd's gates only: Slurm is never
 * told of them, so a remote job whose dependency fails ends cancelled (cause
 * `dependency`) without ever reaching Slurm.
 */
#ifndef JD_BACKEND_H
#define JD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/core/exec_job.h"

struct jd_runner;
struct jd_job;
struct jd_client;

/* jd_backends_start: the backends the config names (the slurm one opened, the fair
 * layer's "slurm" resource registered).  After jd_runner_start's fair layer exists.
 * Returns 0 or a negative code with the reason in err.  Loop thread.
 * jd_backends_stop: close them; every job is final by then.  Loop thread, at exit. */
int jd_backends_start(struct jd_runner *r, char *err, size_t errlen);
void jd_backends_stop(struct jd_runner *r);

/* jd_backend_choose: the backend an exec job of client `cl` owned by `uid` runs on,
 * given the spec's `backend` (NULL: none).  Returns the kind, or a negative code with
 * the reason in why: JSCHED_ENOT_SUPPORTED (this daemon has no such backend),
 * JSCHED_EPERMISSION_DENIED (Slurm jobs of another uid need jschedd to run as root).
 * Loop thread. */
int jd_backend_choose(struct jd_runner *r, const struct jd_client *cl, uid_t uid,
		      const char *asked, char *why, size_t len);

/* jd_backend_assign: make j (an exec job) one of `kind` (its needs class follows, from
 * jd_runner_job_class); an auto job is watched until it starts here or is moved to
 * Slurm.  Loop thread, at submit, before the class is set. */
void jd_backend_assign(struct jd_runner *r, struct jd_job *j, enum jd_backend_kind kind);

/* jd_backend_take: called by the feeder for each job the fair layer gave it; true if j
 * is to run on Slurm (it has been handed to the loop thread: the feeder forgets it).
 * Worker threads. */
bool jd_backend_take(struct jd_runner *r, struct jd_job *j);

/* jd_backend_class: the fair layer's needs class of j if it is a Slurm job (one unit of
 * the window), else -1.  Any thread. */
int jd_backend_class(const struct jd_runner *r, const struct jd_job *j);

/* jd_backend_reattach: watch again recovered job j (queued or running), which was
 * handed to Slurm as job slurm_id with its files named by `tag` before jschedd stopped
 * (the journal's record): it ends with Slurm's result as if jschedd had never stopped.
 * It takes a unit of the window if there is room (outside the fair layer's dispatch:
 * its client is not charged for it).  Returns 0, or a negative code with the reason in
 * why (JSCHED_ENOT_SUPPORTED: this jschedd has no slurm backend; the caller ends the
 * job).  Loop thread, at recovery. */
int jd_backend_reattach(struct jd_runner *r, struct jd_job *j, uint32_t slurm_id, const char *tag,
			char *why, size_t len);

/* jd_backend_cancel: stop a remote job (cause: JP_CAUSE_CANCEL or _SHUTDOWN).  Returns
 * true if j is remote (handled here).  Loop thread. */
bool jd_backend_cancel(struct jd_runner *r, struct jd_job *j, enum jp_cause cause);

/* jd_backends_metrics: the metrics document's "backends" member (new reference).
 * Loop thread. */
json_t *jd_backends_metrics(struct jd_runner *r);

/* jd_backends_build: the backends this build has, for `jschedd --version`:
 * "backends: local, slurm (libslurm 22.05.8)" or "... slurm not built: <why>". */
const char *jd_backends_build(void);

#endif /* JD_BACKEND_H */
