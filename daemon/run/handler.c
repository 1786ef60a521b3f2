/* daemon/run/handler.c: the handler API of include/jsched/module.h.
 *
 * These functions are exported from the jschedd binary to the modules it loads (and to
 * nothing else: daemon/run/module.syms lists them for the linker).  Sleeps and joins go
 * through the pool's waits with the job's cancel token, so on a fiber they suspend
 * without holding a worker, and a cancel makes them return at once.
 *
 * CPU accounting: a handler's stretches on workers are timed with the thread CPU clock,
 * read again after each suspension because the fiber may resume on another thread.  The
 * sum is the "run time" the fair policy charges: a job that sleeps is not charged for
 * its sleep, and contention from other processes does not inflate anyone's bill.
 */
#include "daemon/run/handler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/core/clock.h"
#include "daemon/core/jobs.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void jd_task_begin(struct jsched_task *t, struct jd_job *j, struct jd_pool *p,
		   struct jd_exec *x)
{
	memset(t, 0, sizeof(*t));
	t->job = j;
	t->pool = p;
	t->exec = x;
	jd_wg_init(&t->subtasks);
	t->cpu_mark = thread_cpu_ns();
}

uint64_t jd_task_end(struct jsched_task *t)
{
	/* Whoever starts a sub-task also waits for it: none outlives its handler. */
	jsched_task_join(t);
	t->cpu_ns += thread_cpu_ns() - t->cpu_mark;
	/* A command the job ran is charged for its wall time: its CPU is not ours to see
	 * (libuv reaps it without rusage), and its slot was held all along. */
	return t->cpu_ns + t->child_ns;
}

/* suspend_begin / suspend_end: bracket a wait that may move the fiber. */
static uint64_t suspend_begin(struct jsched_task *t)
{
	t->cpu_ns += thread_cpu_ns() - t->cpu_mark;
	return jd_now_ns();
}

static void suspend_end(struct jsched_task *t, uint64_t began)
{
	t->suspended_ns += jd_now_ns() - began;
	t->cpu_mark = thread_cpu_ns();
}

bool jsched_task_cancelled(const struct jsched_task *t)
{
	return jd_cancel_fired(&t->job->ctok);
}

int jsched_task_sleep(struct jsched_task *t, uint64_t ms)
{
	uint64_t began = suspend_begin(t);
	int rc = jd_sleep((int64_t)(ms > INT64_MAX / 1000000 ? INT64_MAX : ms * 1000000),
			  &t->job->ctok);

	suspend_end(t, began);
	return rc;
}

int jsched_task_spawn(struct jsched_task *t, jsched_subtask_fn fn, void *arg)
{
	struct jd_task_spec spec = {.fn = fn, .arg = arg, .wg = &t->subtasks};
	int rc;

	jd_wg_add(&t->subtasks, 1);
	rc = jd_worker_index() >= 0 ? jd_spawn(&spec) : jd_pool_submit(t->pool, &spec);
	if (rc < 0)
		jd_wg_done(&t->subtasks);
	return rc;
}

int jsched_task_join(struct jsched_task *t)
{
	uint64_t began;

	if (atomic_load(&t->subtasks.count) == 0)
		return 0;
	began = suspend_begin(t);
	jd_wg_wait(&t->subtasks);
	suspend_end(t, began);
	return 0;
}

void jsched_task_set_error(struct jsched_task *t, const char *message)
{
	free(t->job->run_error);
	t->job->run_error = message ? strdup(message) : NULL;
}

uint64_t jsched_task_id(const struct jsched_task *t)
{
	return t->job->id;
}
