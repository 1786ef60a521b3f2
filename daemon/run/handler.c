/* daemon/run/handler.c: the handler API of include/jsched/module.h.
 *
 * These functions are exported from the jschedd binary to the modules it loads (and to
 * nothing else: daemon/run/module.syms lists them for the linker).  Sleeps and joins go
 * through the pool's waits with the job's cancel token, so on a fiber they suspend
 * without holding a worker, and a cancel makes them return at once.
 *
 * Run-time accounting: the "run time" the fair policy charges is the CPU time of a
 * handler's stretches on a thread (a worker, or the loop thread for an inline handler),
 * sleeps and joins left out, so that contention from other processes does not inflate
 * anyone's bill.  The thread CPU clock is a system call on Linux (no vDSO), and reading it
 * at both ends of every stretch cost two per job, a tenth of a 10 µs job here.  So each
 * stretch is first timed with the monotonic clock (vDSO), read anyway at the job's start
 * and end and around each wait, and:
 *   - a stretch shorter than SHORT_NS is charged its wall time: preemption inside a few
 *     tens of microseconds is rare, and its error is bounded by the stretch itself;
 *   - a longer one reads the thread CPU clock once, at its end.  Its start is the read
 *     before it on this thread (cpu_mark, thread-local), and the CPU time since then,
 *     less what short stretches were charged meanwhile, is its charge, at most its wall
 *     time (so the thread's own work between jobs, a search or a feed, is not billed
 *     beyond the stretch).
 * One read per long job, none per short one, and one more per thread: the first job a
 * thread begins reads the clock for cpu_mark.  Without it the first long stretch on each
 * thread was charged its wall time, and on a loaded machine (workers at nice +10,
 * preempted for milliseconds) that one bill was worth a hundred 200 µs jobs: the client
 * whose job it was got almost nothing while it paid it back (a share of 0.028 against 1/6
 * in the fairness test, once, during a make test beside four benchmarks).  A fiber that
 * resumes on another thread is timed there the same way.
 */
#include "daemon/run/handler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/core/clock.h"
#include "daemon/core/jobs.h"

#define SHORT_NS 50000u

static _Thread_local uint64_t cpu_mark;	  /* this thread's CPU clock at its last read (0: none) */
static _Thread_local uint64_t short_wall; /* charged to short stretches since that read */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* stretch_charge: the run time to charge for a stretch that took `wall` ns of the
 * monotonic clock and has just ended on this thread (see the top). */
static uint64_t stretch_charge(uint64_t wall)
{
	if (wall < SHORT_NS) {
		short_wall += wall;
		return wall;
	}
	uint64_t cpu = thread_cpu_ns(), charge = wall;

	if (cpu_mark != 0) {
		uint64_t used = cpu - cpu_mark;

		used = used > short_wall ? used - short_wall : 0;
		charge = used < wall ? used : wall;
	}
	cpu_mark = cpu;
	short_wall = 0;
	return charge;
}

void jd_task_begin(struct jsched_task *t, struct jd_job *j, struct jd_pool *p,
		   struct jd_exec *x, uint64_t now_ns)
{
	memset(t, 0, sizeof(*t));
	t->job = j;
	t->pool = p;
	t->exec = x;
	jd_wg_init(&t->subtasks);
	t->run_mark = now_ns;
	if (__builtin_expect(cpu_mark == 0, 0))
		cpu_mark = thread_cpu_ns(); /* this thread's first job: the start of its bills */
}

uint64_t jd_task_end(struct jsched_task *t, uint64_t *now_ns)
{
	/* Whoever starts a sub-task also waits for it: none outlives its handler. */
	jsched_task_join(t);
	*now_ns = jd_now_ns();
	t->run_ns += stretch_charge(*now_ns - t->run_mark);
	/* A command the job ran is charged for its wall time: its CPU is not ours to see
	 * (libuv reaps it without rusage), and its slot was held all along. */
	return t->run_ns + t->child_ns;
}

/* suspend_begin / suspend_end: bracket a wait that may move the fiber: the stretch
 * before it is run time, the wait is not. */
static uint64_t suspend_begin(struct jsched_task *t)
{
	uint64_t now = jd_now_ns();

	t->run_ns += stretch_charge(now - t->run_mark);
	return now;
}

static void suspend_end(struct jsched_task *t, uint64_t began)
{
	t->run_mark = jd_now_ns();
	t->suspended_ns += t->run_mark - began;
}

bool jsched_task_cancelled(const struct jsched_task *t)
{
	return jd_cancel_fired(&t->job->run->ctok);
}

int jsched_task_sleep(struct jsched_task *t, uint64_t ms)
{
	uint64_t began = suspend_begin(t);
	int rc = jd_sleep((int64_t)(ms > INT64_MAX / 1000000 ? INT64_MAX : ms * 1000000),
			  &t->job->run->ctok);

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
	free(t->job->run->run_error);
	t->job->run->run_error = message ? strdup(message) : NULL;
}

uint64_t jsched_task_id(const struct jsched_task *t)
{
	return t->job->id;
}
