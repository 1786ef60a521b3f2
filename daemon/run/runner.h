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

/* jd_runner_job_class: set job j's needs class in the fair layer (j->fj.cls) and the
 * amounts it holds of its class's per-job resources (j->fj.amount): a command needs a
 * process slot and a fiber (and its named resources and declared CPUs and memory: a class
 * per set of needs, resources.h), a suspending call a fiber, others nothing.
 * Loop thread. */
void jd_runner_job_class(struct jd_runner *r, struct jd_job *j);

/* jd_runner_wake: wake every idle worker to feed (capacity came back, a client was
 * resumed, a job released: jobs may fit now).  Loop thread. */
void jd_runner_wake(struct jd_runner *r);

/* jd_runner_cancel: ask a running job to stop (its cancel token fires).  Loop thread. */
void jd_runner_cancel(struct jd_runner *r, struct jd_job *j);

/* jd_runner_arm_deadline: re-arm the deadline timer for the fair layer's earliest
 * deadline (when it fires, the expired jobs end and the table settles).  Loop thread. */
void jd_runner_arm_deadline(struct jd_runner *r);

/* jd_runner_apply_config: push the live config (policy, idle, process cap) to fair,
 * pool and the process machinery. */
void jd_runner_apply_config(struct jd_runner *r);

#endif /* JD_RUNNER_H */
