/* daemon/run/runner.h: where jobs meet the worker pool: admission, running, completion.
 *
 * The runner owns the fair-admission instance and the pool.  Workers pull jobs through
 * the pool's feeder hook: a worker with nothing in its deque, its inbox or to steal
 * takes the next few jobs in fair order (jd_fair_take), so jobs leave their clients'
 * queues only when a worker is free to start them.  That is the bounded window: at most
 * JD_FEED_BATCH (2) jobs per idle worker are released at a time, and fairness is decided in
 * the fair layer, not undone by queues further down.  A job suspended in a sleep or a
 * join does not hold a place in it (nor a worker).
 *
 * Workers talk back to the loop thread through one lock-free notice list and a
 * wake-up (libuv's uv_async, or with the loop ahead of the workers an eventfd of the
 * runner's own, core/wake.h: own_wake below): a job's start and its end are each one push; the loop thread takes the
 * whole list at once, so a burst of completions costs one wake-up, not one per job.
 * A push wakes the loop only when something waits for it (runner.c, "Which ends wake
 * the loop": a wait, a dependent, a watch, a freed slot, a command, a shutdown); the
 * other notices wait in the list for the next wake-up or request, and every request is
 * handled after the list is taken (jd_runner_drain), so no reply tells of stale state.
 */
#ifndef JD_RUNNER_H
#define JD_RUNNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pthread.h>
#include <uv.h>

#include "daemon/core/clients.h"
#include "daemon/core/config.h"
#include "daemon/core/jobs.h"
#include "daemon/core/wake.h"
#include "daemon/core/security.h"
#include "daemon/fair/fair.h"
#include "daemon/pool/pool.h"
#include "daemon/run/exec.h"
#include "daemon/run/resources.h"

struct jd_notice;
struct jd_backends;

/* What the runner works with (borrowed, kept; jd_runner_start). */
struct jd_runner_env {
	uv_loop_t *loop;
	struct jd_jobs *jobs;
	const struct jd_config *cfg;	/* the config in force (replaced in place on reload) */
	struct jd_security *sec;	/* for the commands (exec.c) */
	const char *remote_tag;		/* names remote jobs' files and tags them in Slurm
					 * (the same across restarts on one journal) */
	/* unblocked: client c, overflow `block`, has room in its queue again. */
	void (*unblocked)(void *ctx, struct jd_client *c);
	void *ctx;
	const char *socket_path;	/* the daemon's socket: names the cgroup subtree */
};

enum { JD_NOTICE_START = 1, JD_NOTICE_DONE = 2, JD_NOTICE_EXPIRED = 3 };

struct jd_runner {
	struct jd_runner_env env;
	struct jd_fair *fair;	/* thread-safe (its own lock) */
	struct jd_pool *pool;	/* thread-safe */
	struct jd_exec exec;	/* commands: slots, processes (exec.h) */
	uv_timer_t deadline;	/* the earliest queued deadline (the fair layer's) */
	/* The notices' wake-up of the loop, one of two (own_wake says which): the loop
	 * thread's handles; any thread sends. */
	struct jd_wake wake;	/* an eventfd of its own: never waits for a sender (core/wake.h) */
	uv_async_t async;	/* libuv's: its loop spins while a sender is inside uv_async_send */
	/* own_wake: the eventfd, for worker_scheduling other than "normal", where a worker
	 * preempted inside uv_async_send (by the loop itself, ahead of it) held the loop
	 * spinning for the rest of its time off the CPU (1 ms jobs: loop CPU 81-106 -> 15-16
	 * µs per job, 0.45-0.48 -> 0.75-0.80 of the ideal).  libuv's under "normal", where a
	 * sender is rarely preempted there and the loop's short spin gathers the notices that
	 * come meanwhile: the eventfd there cost 100 µs jobs 5.4-5.6 -> 10.7-10.9 µs of loop
	 * CPU and 104 -> 109 µs of the workers' per job (daemon/README.md, "The loop thread's
	 * CPU"). */
	bool own_wake;
	pthread_t loop_thread;	/* to tell the fair hook's caller */
	_Atomic(struct jd_notice *) notices;	/* any thread pushes, loop thread takes all */
	atomic_uint_fast64_t wakeups;	/* async sends (metrics: batching) */
	atomic_bool woken;	/* a wake-up is sent that the loop has not begun to take */
	atomic_uint eager;	/* > 0: every push wakes the loop (jd_runner_eager) */
	unsigned raced;		/* loop thread: wanted jobs whose end was already pushing
				 * (jd_runner_want_end), each holding one unit of eager */
	bool draining;		/* loop thread: the notices are being taken */
	/* The sweep: a timer that takes the notices nobody woke the loop for, 10 ms after
	 * the list was last found non-empty (or a job was queued), then at doubling delays up
	 * to 1 s while jobs are queued or running, so that such an end reaches its state, the
	 * journal and retention within that (runner.c, "Which ends wake the loop"). */
	uv_timer_t sweep;
	uint64_t sweep_ms;	/* its delay now (0: not armed) */
	uint64_t swept;		/* loop thread: lists taken by the sweep */
	uint64_t drained;	/* loop thread: lists taken by requests, not wake-ups */
	uint64_t batches, noticed;	/* loop thread: batches taken, notices in them */
	unsigned kicks;		/* loop thread: jobs queued since the last flush */
	int res_proc, res_fiber;	/* the fair layer's resources "process" and "fiber" */
	int res_call_fiber;		/* "call_fiber": the fibers suspending calls may hold,
					 * the rest kept for commands */
	uint32_t fibers_reserved;	/* those kept for commands (metrics fibers.reserved) */
	uint8_t cls_exec, cls_fiber;	/* needs classes: a command; a suspending call */
	uint8_t cls_inline;		/* an inline handler's call: the loop thread runs it */
	bool inlining;			/* loop thread: run_inline is on the stack */
	bool ended_here;		/* loop thread: a job ended in a fair hook meanwhile */
	uint64_t inlined;		/* loop thread: jobs it ran itself (metrics) */
	const char *priority;		/* how the loop thread was put ahead of the workers
					 * (worker_scheduling; metrics loop.priority) */
	struct jd_backends *backends;	/* exec jobs elsewhere: Slurm (backend.h) */
	struct jd_resources resources;	/* named resources (resources.h) */
};

/* jd_runner_start: create the fair instance, the pool and the process machinery from
 * the config.  Returns 0 or a negative code with the reason in err.  Loop thread, before
 * serving. */
int jd_runner_start(struct jd_runner *r, const struct jd_runner_env *env, char *err,
		    size_t errlen);

/* jd_runner_stop: stop the pool (graceful: let running tasks end) and free both.  Every
 * job must be final.  Loop thread, at exit. */
void jd_runner_stop(struct jd_runner *r);

/* jd_runner_kick: a job was queued: an idle worker should feed.  The wake-ups are sent
 * by jd_runner_flush_kicks, at most one per worker however many jobs were queued (a
 * batch of 1,000 does not make 1,000 calls into the pool).  Loop thread. */
void jd_runner_kick(struct jd_runner *r);

/* jd_runner_flush_kicks: send the wake-ups the kicks since the last flush asked for.
 * jd_jobs_settle calls it, which runs after every message and notice batch.  Loop
 * thread. */
void jd_runner_flush_kicks(struct jd_runner *r);

/* jd_runner_job_class: set job j's needs class in the fair layer (j->cls) and the
 * amounts it holds of its class's per-job resources (j->amount): a command needs a
 * process slot and a fiber (and its named resources and declared CPUs and memory: a class
 * per set of needs, resources.h), a suspending call a fiber, others nothing.
 * Loop thread. */
void jd_runner_job_class(struct jd_runner *r, struct jd_job *j);

/* jd_runner_wake: wake every idle worker to feed (capacity came back, a client was
 * resumed, a job released: jobs may fit now).  Loop thread. */
void jd_runner_wake(struct jd_runner *r);

/* jd_runner_want_end: something waits for j's end (a wait, a dependent, a cancel): when
 * a worker ends it, its DONE notice wakes the loop.  Where the worker had already passed
 * that choice, every push wakes the loop until that DONE is taken (and the list is taken
 * at the next iteration if it is already there).  Loop thread. */
void jd_runner_want_end(struct jd_runner *r, struct jd_job *j);

/* jd_runner_eager: delta +1: every notice wakes the loop from now on (a watch stream that
 * tells every state, a shutdown that waits for every end), until as many -1.  Notices
 * already in the list are taken at the next iteration.  Loop thread. */
void jd_runner_eager(struct jd_runner *r, int delta);

/* jd_runner_drain: take the notices pushed since the last wake-up (and settle), so
 * that what follows reads the jobs' states as the workers left them.  Cheap when the list
 * is empty (one load).  Not from inside the taking itself (ignored then).  Loop thread. */
void jd_runner_drain(struct jd_runner *r);

/* jd_runner_cancel: ask a running job to stop (its cancel token fires).  Loop thread. */
void jd_runner_cancel(struct jd_runner *r, struct jd_job *j);

/* jd_runner_arm_deadline: re-arm the deadline timer for the fair layer's earliest
 * deadline (when it fires, the expired jobs end and the table settles).  Loop thread. */
void jd_runner_arm_deadline(struct jd_runner *r);

/* jd_runner_apply_config: push the live config (policy, idle, process cap) to fair,
 * pool and the process machinery. */
void jd_runner_apply_config(struct jd_runner *r);

#endif /* JD_RUNNER_H */
