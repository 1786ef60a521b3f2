/* daemon/run/handler.h: struct jsched_task, the running call job as its handler sees it.
 *
 * It lives on the stack of the worker (or fiber) running the handler, for exactly the
 * handler's run; handler.c implements include/jsched/module.h's jsched_task_* functions on
 * it, and runner.c creates it.  Fields: the worker running the handler only.
 */
#ifndef JD_TASK_H
#define JD_TASK_H

#include <stdint.h>

#include "daemon/pool/pool.h"
#include "jsched/module.h"

struct jd_job;
struct jd_exec;

struct jsched_task {
	struct jd_job *job;
	struct jd_pool *pool;
	struct jd_exec *exec;	/* where its commands run (exec.c) */
	struct jd_wg subtasks;	/* spawned and not yet returned */
	uint64_t run_mark;	/* monotonic clock at the start of the current stretch */
	uint64_t run_ns;	/* run time of the finished stretches (handler.c) */
	uint64_t suspended_ns;	/* wall time spent in sleeps and joins */
	uint64_t child_ns;	/* wall time of the commands it ran (exec.c), charged as run time */
};

/* jd_task_begin / jd_task_end: open and close the task's run-time accounting (handler.c):
 * begin is given the monotonic clock at the start (jd_now_ns, which the caller has read
 * for the job anyway), end reads it once more, stores it in *now_ns for the caller, and
 * returns the run time, the handler's stretches on threads plus its commands' wall time
 * (what fairness charges). */
void jd_task_begin(struct jsched_task *t, struct jd_job *j, struct jd_pool *p,
		   struct jd_exec *x, uint64_t now_ns);
uint64_t jd_task_end(struct jsched_task *t, uint64_t *now_ns);

#endif /* JD_TASK_H */
