/* daemon/pool/pool.h: the fiber work-stealing worker pool, its whole public interface.
 *
 * A pool is N worker threads.  Each worker owns a Chase-Lev deque (work it spawned itself,
 * popped LIFO by the owner and stolen FIFO by the others, nearest first in the cache/SMT
 * topology) and an inbox (work pushed from outside the pool).  Idle workers either park
 * (JD_IDLE_SLEEP, the default) or keep searching (JD_IDLE_SPIN); the policy may be changed
 * while the pool runs.  When a worker finds nothing anywhere it asks the optional feeder
 * (the daemon's fair admission layer) for a few tasks.
 *
 * A task is a function pointer, an argument and a small inline payload, copied into a
 * fixed-size record from a per-worker free list.  A task runs on the worker's own stack
 * unless it asks for a fiber (JD_TASK_FIBER): then it gets a stack from a guard-paged arena
 * and every wait inside it (events, wait groups, sleeps) suspends the fiber and frees the
 * worker.  A wait outside a fiber blocks the caller; on a worker thread it keeps running
 * other tasks while it waits (so fork-join works on a single worker).  When every fiber
 * is in use, a fiber task runs on the worker's stack instead (its waits then run other
 * tasks), so the pool keeps making progress.
 *
 * Errors follow include/jsched/error.h: 0 or a count on success, a negative JSCHED_E*
 * code on failure.  Threads: every function says which thread may call it; "any thread"
 * includes threads that are not workers of the pool (the daemon's loop thread, a timer).
 *
 * Thread-local storage: a fiber resumes on the worker thread where it suspended, so
 * errno, thread-local variables and their addresses stay valid across a wait (compilers
 * do keep such addresses across calls: glibc declares __errno_location const, and GCC
 * reuses its result within a function).  The price: a woken fiber waits for its own
 * worker, even if another is idle.  A task that holds nothing thread-derived across its
 * waits (no TLS address, no errno read after a wait without an intervening call that sets
 * it, no pthread_self) may say JD_TASK_MIGRATE: then any worker may resume it.  The pool
 * keeps errno's value across every wait either way.
 */
#ifndef JD_POOL_H
#define JD_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jd_pool;
struct jd_wg;

/* ---- tasks ---------------------------------------------------------------------------- */

/* A task body.  `arg` is the spec's arg, or a pointer to the task's inline copy of the
 * payload when the spec carried one (valid until the function returns). */
typedef void (*jd_task_fn)(void *arg);

#define JD_TASK_FIBER 0x1u	 /* run on a fiber: waits inside suspend instead of blocking */
#define JD_TASK_LARGE_STACK 0x2u /* a large-stack fiber (implies JD_TASK_FIBER) */
#define JD_TASK_MIGRATE 0x4u	 /* the fiber may resume on any worker (see below) */
/* (bits from 0x100 up are the pool's own) */

/* Bytes of payload a task record carries inline (spec.payload_len <= this). */
#define JD_TASK_PAYLOAD_MAX 24

/* What to run.  The pool copies it; the spec itself may be reused at once. */
struct jd_task_spec {
	jd_task_fn fn;
	void *arg;		/* passed to fn when payload_len == 0 */
	const void *payload;	/* copied inline; fn then gets a pointer to the copy */
	size_t payload_len;	/* 0 ... JD_TASK_PAYLOAD_MAX */
	unsigned flags;		/* JD_TASK_* */
	struct jd_wg *wg;	/* if set: jd_wg_done(wg) after fn returns (or if dropped).
				 * The caller does jd_wg_add() before submitting. */
};

/* ---- the pool ------------------------------------------------------------------------- */

enum jd_idle {
	JD_IDLE_SLEEP = 0, /* idle workers park (after park_after_ns of searching); a submit
			    * wakes one (never a lost wake-up) */
	JD_IDLE_SPIN = 1,  /* idle workers keep searching; for a machine the application owns */
};

enum jd_shutdown {
	JD_SHUTDOWN_GRACEFUL = 0,  /* run everything submitted (and spawned) to completion */
	JD_SHUTDOWN_IMMEDIATE = 1, /* let running tasks finish, drop what has not started, and
				    * make every wait of a suspended fiber return
				    * JSCHED_ECANCELLED so that it can finish too */
};

/* The feeder: called on a worker that found no work in its deque, its inbox or by
 * stealing, and only after jd_pool_notify() announced new work.  It writes up to `max`
 * task specs into `out` and returns how many; the worker runs them (the others may steal
 * them).  It may be called on several workers at once, so it must be thread-safe, and it
 * must not block.  Returning `max` means "there may be more": the worker will ask again. */
typedef size_t (*jd_feeder_fn)(void *ctx, struct jd_task_spec *out, size_t max);

/* How the worker threads are scheduled (set by each worker as it starts).  NORMAL leaves
 * them as the creating thread was; BATCH is SCHED_BATCH (a woken worker does not preempt
 * a running thread); LOW is nice 10 above the creator's (what an unprivileged process may
 * always do); IDLE is SCHED_IDLE (a worker runs only when no normal thread of its group
 * wants the CPU). */
enum jd_worker_sched { JD_WORKER_NORMAL, JD_WORKER_BATCH, JD_WORKER_LOW, JD_WORKER_IDLE };

struct jd_pool_config {
	unsigned workers;		/* worker threads; 0: the CPUs this process may use */
	enum jd_idle idle;		/* initial idle policy */
	bool pin;			/* pin worker i to the i-th allowed CPU */
	unsigned fibers;		/* standard fibers; 0: 64 per worker */
	unsigned large_fibers;		/* large-stack fibers; 0: 8 per worker */
	size_t fiber_stack;		/* usable bytes per standard stack; 0: 64 KiB */
	size_t large_fiber_stack;	/* usable bytes per large stack; 0: 512 KiB */
	bool fibers_dontfork;		/* mark the fiber arena MADV_DONTFORK: fork() in this
					 * process stops copying its 2 mappings per fiber
					 * (jschedd's exec rate +52%, README).  A fiber must
					 * then never fork(): the child would have no stack
					 * (posix_spawn, vfork, system, popen are fine) */
	jd_feeder_fn feeder;		/* optional; see jd_pool_set_feeder() */
	void *feeder_ctx;
	unsigned feed_batch;		/* max tasks per feeder call; 0: 8 */
	int64_t park_after_ns;		/* SLEEP: an idle worker keeps searching this long
					 * (a pause per round; it yields only to a thread
					 * that needs its CPU) before it parks, and up to 5x
					 * as long while its parks turn out short; 0: park at
					 * once; -1: 10 µs (a wake-up here costs 40-70 µs;
					 * see README.md) */
	int64_t wait_spin_ns;		/* a waiting thread outside the pool spins this long
					 * before it sleeps; -1: 20 µs.  Process-wide: the
					 * last created pool's value applies */
	const char *name;		/* worker thread name prefix (<= 10 chars); NULL: "jd-pool" */
	enum jd_worker_sched sched;	/* how the kernel schedules the workers against the
					 * process's other threads (README "Worker threads'
					 * priority"); 0: as created */
};

/* jd_pool_config_init: fill `cfg` with the defaults (all zero; park_after_ns and
 * wait_spin_ns -1).  Any thread. */
void jd_pool_config_init(struct jd_pool_config *cfg);

/* jd_pool_create: start a pool described by `cfg` (NULL: defaults) and store it in *out.
 * Returns 0, JSCHED_ENOMEM, JSCHED_EINVAL (bad sizes), or JSCHED_EINTERNAL (a thread or
 * mapping could not be created).  Installs the fiber-overflow SIGSEGV handler the first
 * time.  Any thread that is not a worker of some pool. */
int jd_pool_create(struct jd_pool **out, const struct jd_pool_config *cfg);

/* jd_pool_destroy: shut the pool down as `how` says, join the workers and free
 * everything.  Returns the number of tasks dropped (0 for a graceful shutdown).  No
 * submit may race with or follow it, except from tasks of this pool (dropped when
 * immediate).  The feeder is no longer called once destroy has begun.  Call it from a
 * thread that is not a worker of this pool. */
int jd_pool_destroy(struct jd_pool *p, enum jd_shutdown how);

/* jd_pool_submit: queue one task.  On a worker of `p` it goes to the worker's own deque
 * (as jd_spawn); elsewhere to a worker's inbox, waking a parked worker if needed.
 * Returns 0, JSCHED_EINVAL (no fn, payload too large), JSCHED_ESHUTTING_DOWN (from
 * outside, once destroy has begun) or JSCHED_ENOMEM.  Any thread. */
int jd_pool_submit(struct jd_pool *p, const struct jd_task_spec *t);

/* jd_pool_submit_batch: queue n tasks with one hand-off (from outside: one inbox, one
 * lock, one wake-up; the woken worker moves them to its deque, where others steal).  Returns 0 or an error as jd_pool_submit (then nothing was
 * queued).  Any thread. */
int jd_pool_submit_batch(struct jd_pool *p, const struct jd_task_spec *t, size_t n);

/* jd_spawn: queue one task on the calling worker's own deque (LIFO for the worker,
 * stealable by the others).  Returns as jd_pool_submit; JSCHED_EINVAL if the caller is
 * not a worker.  Worker threads only (inside a task). */
int jd_spawn(const struct jd_task_spec *t);

/* jd_pool_set_idle: switch the idle policy; takes effect at once (parked workers are
 * woken when switching to SPIN).  Any thread. */
void jd_pool_set_idle(struct jd_pool *p, enum jd_idle idle);

/* jd_pool_idle: the current idle policy.  Any thread. */
enum jd_idle jd_pool_idle(const struct jd_pool *p);

/* jd_pool_set_feeder: install (or, with fn NULL, remove) the feeder.  Any thread; a
 * feeder call already under way on a worker may still use the old one. */
void jd_pool_set_feeder(struct jd_pool *p, jd_feeder_fn fn, void *ctx);

/* jd_pool_notify: tell the pool that the feeder has new work: the next idle worker calls
 * it, and a parked worker is woken if all are parked (no lost wake-ups: a notify that
 * races with workers going to sleep is seen by one of them).  Cheap when a worker is
 * awake.  Any thread (the daemon's loop thread). */
void jd_pool_notify(struct jd_pool *p);

/* jd_pool_feed_here: from a task on one of p's workers, at its end: if that worker has
 * nothing of its own queued (resumed fibers, deque, inbox), so that it would call the
 * feeder as soon as the task returns, and jd_pool_notify() announced work, call fn(ctx,
 * out, max) now in the feeder's place (same contract) and queue what it gives on this
 * worker, the first to run next.  So a task that has something to give back to the
 * feeder's source (the daemon: a job's completion in the fair layer) can do both under
 * one lock.  Returns true if fn was called, false if nothing was done.  Worker threads
 * (elsewhere: false). */
bool jd_pool_feed_here(struct jd_pool *p, jd_feeder_fn fn, void *ctx);

/* jd_pool_want_cpu: tell the pool that a thread outside it is runnable and needs a CPU
 * now (the daemon's loop thread, just woken by a worker): until jd_pool_got_cpu, workers
 * searching for work in SLEEP's grace yield their CPU each round instead of spinning on
 * it, so that on a machine with more runnable threads than CPUs the woken thread does not
 * wait behind a searcher.  Cheap when already set.  Any thread. */
void jd_pool_want_cpu(struct jd_pool *p);

/* jd_pool_got_cpu: the thread that jd_pool_want_cpu announced is running.  Any thread
 * (the announced one). */
void jd_pool_got_cpu(struct jd_pool *p);

/* jd_pool_workers: the number of worker threads.  Any thread. */
unsigned jd_pool_workers(const struct jd_pool *p);

/* jd_pool_parked: the workers parked now (announced idle, asleep or about to be), a hint
 * read without a fence: what remains of jd_pool_workers is running tasks or searching
 * for them.  Any thread (the daemon's loop, deciding whether its CPU may poll). */
unsigned jd_pool_parked(const struct jd_pool *p);

/* jd_pool_stopping: whether jd_pool_destroy has begun, so that a long task can end
 * early (under an immediate destroy, nothing queued behind it will run).  Any thread
 * that may use the pool. */
bool jd_pool_stopping(const struct jd_pool *p);

/* ---- where am I ----------------------------------------------------------------------- */

/* jd_in_fiber: true if the caller runs on a pool fiber (so a wait will suspend, not
 * block).  Any thread; costs one thread-local read. */
bool jd_in_fiber(void);

/* jd_worker_index: the calling worker's index in its pool (0 ... workers-1), or -1 on a
 * thread that is not a worker.  Any thread.  In a JD_TASK_MIGRATE fiber the answer may
 * change at a wait. */
int jd_worker_index(void);

/* jd_current_pool: the pool whose worker is calling, or NULL.  Any thread. */
struct jd_pool *jd_current_pool(void);

/* ---- cancellation --------------------------------------------------------------------- */

/* A cancel token: the daemon keeps one per cancellable job and passes it to the job's
 * waits.  Firing it makes every wait registered with it (now or later) return
 * JSCHED_ECANCELLED at once.  Initialise with jd_cancel_init (or JD_CANCEL_INIT); it must
 * outlive every wait that uses it. */
struct jd_cancel {
	atomic_uint lock;	/* spin lock over `waits` (any thread) */
	atomic_bool fired;	/* set once by jd_cancel_fire */
	void *waits;		/* the waits registered now (internal list, under lock) */
};
#define JD_CANCEL_INIT { 0, false, NULL }

/* jd_cancel_init: make `c` an unfired token.  Any thread. */
void jd_cancel_init(struct jd_cancel *c);

/* jd_cancel_fire: fire the token (idempotent).  Any thread, including the loop thread. */
void jd_cancel_fire(struct jd_cancel *c);

/* jd_cancel_fired: whether the token has fired (for polling in long computations).
 * Any thread. */
bool jd_cancel_fired(const struct jd_cancel *c);

/* ---- events --------------------------------------------------------------------------- */

/* An event: unset until jd_event_set, then set until jd_event_reset ("sticky").  Waiting
 * on a set event returns at once.  jd_event_set is the external wake: any thread (another
 * task, a timer, the daemon's loop thread) may call it, and it resumes every fiber
 * suspended on the event.  The memory may be freed as soon as every waiter has returned,
 * even while jd_event_set is still returning in another thread (the setter does not touch
 * the event after making it set), so an event may live on the waiting fiber's stack.
 * Initialise with jd_event_init or JD_EVENT_INIT. */
struct jd_event {
	atomic_uintptr_t word; /* set bit, lock bit, waiter list head (internal) */
};
#define JD_EVENT_INIT { 0 }

/* jd_event_init: make `ev` unset with no waiters.  Any thread. */
void jd_event_init(struct jd_event *ev);

/* jd_event_set: set `ev` and wake every waiter.  Any thread. */
void jd_event_set(struct jd_event *ev);

/* jd_event_reset: make a set event unset again.  No wait may race with it.  Any thread. */
void jd_event_reset(struct jd_event *ev);

/* jd_event_is_set: whether `ev` is set (acquire).  Any thread. */
bool jd_event_is_set(const struct jd_event *ev);

/* jd_event_wait: wait until `ev` is set.  In a fiber: suspends the fiber (the worker runs
 * other tasks).  On a worker thread outside a fiber: runs other tasks while waiting.
 * Elsewhere: spins briefly, then blocks.  Returns 0, or JSCHED_ECANCELLED on a worker of a
 * pool being destroyed immediately.  Beware: then the event was NOT set, and if another
 * thread still holds its address (to set it later), the waiter must not free it (for
 * example, leave the event where the setter can still reach it).  Any thread. */
int jd_event_wait(struct jd_event *ev);

/* jd_event_wait_for: as jd_event_wait with a timeout (nanoseconds, < 0: none) and an
 * optional cancel token.  Returns 0 (set), JSCHED_ETIMEOUT or JSCHED_ECANCELLED.  When a
 * set, a timeout and a cancel race, exactly one wins and its code is returned.
 * Any thread. */
int jd_event_wait_for(struct jd_event *ev, int64_t timeout_ns, struct jd_cancel *c);

/* ---- wait groups ---------------------------------------------------------------------- */

/* A wait group: a counter of outstanding work and an event set while it is zero.  Add
 * before submitting; a task spec's wg is done automatically.  Adding more while tasks
 * run is fine, even if the count touches zero in between (the event follows the count;
 * a waiter returns when it sees zero).  Like an event it may be freed as soon as every
 * waiter has returned, even while the last jd_wg_done is still returning. */
struct jd_wg {
	atomic_llong count;
	struct jd_event zero;	/* set while count is zero */
};
#define JD_WG_INIT { 0, { 1 } } /* count 0, event set */

/* jd_wg_init: a wait group with count 0 (waiting on it returns at once).  Any thread. */
void jd_wg_init(struct jd_wg *wg);

/* jd_wg_add: add n (> 0) to the count, before the matching submits.  Any thread. */
void jd_wg_add(struct jd_wg *wg, long long n);

/* jd_wg_done: subtract one; the last one wakes the waiters.  Any thread. */
void jd_wg_done(struct jd_wg *wg);

/* jd_wg_wait: wait for the count to reach zero, as jd_event_wait.  Any thread. */
int jd_wg_wait(struct jd_wg *wg);

/* jd_wg_wait_for: as jd_event_wait_for, for a wait group.  Any thread. */
int jd_wg_wait_for(struct jd_wg *wg, int64_t timeout_ns, struct jd_cancel *c);

/* jd_sleep: sleep ns nanoseconds.  In a fiber the fiber suspends on the pool's timer
 * (the worker runs other tasks); elsewhere the thread sleeps.  Returns 0, or
 * JSCHED_ECANCELLED if `c` fired (or an immediate destroy began).  Any thread. */
int jd_sleep(int64_t ns, struct jd_cancel *c);

/* ---- fork-join, parallel-for ---------------------------------------------------------- */

/* jd_fork2: run a(aa) and b(ba) in parallel and return when both have returned: b is
 * spawned, a runs here, then b runs here too unless another worker stole it (then this
 * waits for it).  Worker threads only (inside a task); on other threads both run here,
 * one after the other.  Any thread. */
void jd_fork2(jd_task_fn a, void *aa, jd_task_fn b, void *ba);

/* A parallel-for body: process [lo, hi). */
typedef void (*jd_range_fn)(void *ctx, size_t lo, size_t hi);

/* jd_parallel_for: call body over [begin, end) in pieces of at most `grain` (0: 1)
 * items, on the pool's workers, and return when all have been processed.  The range is
 * split lazily: a worker splits off the upper half of what it has left only while its own
 * deque is empty, so idle workers steal big ranges and busy ones pay nothing.  The
 * caller takes part, on a worker of `p` or not (so body runs on the calling thread too),
 * and returns when every piece is done; what the pool cannot take (out of memory) the
 * caller does itself.  Returns 0, or JSCHED_ENOMEM from a thread outside the pool if
 * even the loop's small state could not be allocated (then nothing ran).  Any thread. */
int jd_parallel_for(struct jd_pool *p, size_t begin, size_t end, size_t grain,
		    jd_range_fn body, void *ctx);

/* ---- DAG ------------------------------------------------------------------------------ */

enum jd_gate {
	JD_GATE_AND = 0, /* the node runs when all its predecessors have finished */
	JD_GATE_OR = 1,	 /* the node runs (once) when the first predecessor finishes */
};

struct jd_dag;

/* jd_dag_create: an empty graph whose nodes will run on `p`.  Returns 0 or
 * JSCHED_ENOMEM.  Build it on one thread. */
int jd_dag_create(struct jd_dag **out, struct jd_pool *p);

/* jd_dag_add: add a node running `t` (its wg field is ignored) behind `gate`.  Returns
 * the node's id (>= 0), JSCHED_EINVAL or JSCHED_ENOMEM.  Before jd_dag_run only. */
int jd_dag_add(struct jd_dag *d, const struct jd_task_spec *t, enum jd_gate gate);

/* jd_dag_edge: `to` runs after `from` (subject to to's gate).  Returns 0, JSCHED_EINVAL
 * (bad id, self-edge) or JSCHED_ENOMEM.  Before jd_dag_run only. */
int jd_dag_edge(struct jd_dag *d, int from, int to);

/* jd_dag_run: check the graph for cycles and start its roots.  Returns 0,
 * JSCHED_EDEPENDENCY_CYCLE (nothing ran), JSCHED_EINVAL (already run) or JSCHED_ENOMEM.
 * Every node runs exactly once (if the pool cannot take a ready node, the thread that
 * released it runs it).  Any thread. */
int jd_dag_run(struct jd_dag *d);

/* jd_dag_wait: wait for every node to finish, as jd_wg_wait.  A thread outside the pool
 * that waits also runs ready plain nodes itself (as oneTBB's wait_for_all does): plain
 * node bodies must not assume they run on a worker.  Any thread. */
int jd_dag_wait(struct jd_dag *d);

/* jd_dag_destroy: release the graph (it is freed once no queued task of it remains).
 * After jd_dag_wait, or instead of jd_dag_run.  Any thread. */
void jd_dag_destroy(struct jd_dag *d);

/* ---- counters ------------------------------------------------------------------------- */

/* One worker's counters, each written only by that worker (relaxed), read by anyone. */
struct jd_worker_stats {
	uint64_t tasks_run;	/* task bodies started (fiber resumes not counted) */
	uint64_t steals;	/* tasks taken from another worker's deque or inbox */
	uint64_t parks;		/* times the worker went to sleep */
	uint64_t grace_yields;	/* sched_yield calls while searching before a park */
	uint64_t feeds;		/* tasks received from the feeder */
	uint64_t busy_ns;	/* time spent outside the idle search/park */
	uint32_t fibers_in_use; /* fibers this worker took that are running or suspended */
	uint32_t fibers_suspended; /* fibers suspended in a wait, on this worker */
};

struct jd_pool_stats {
	unsigned workers;
	enum jd_idle idle;
	uint64_t tasks_run, steals, parks, feeds, busy_ns, grace_yields; /* sums over workers */
	uint64_t dropped;		/* tasks dropped by an immediate shutdown so far */
	uint64_t fiber_exhausted;	/* fiber tasks that found no free fiber */
	unsigned fibers, large_fibers;	/* configured counts */
	unsigned fibers_in_use;		/* standard + large, running or suspended */
	unsigned fibers_suspended;	/* suspended in a wait */
};

/* jd_pool_stats: copy a consistent-enough snapshot (each counter read atomically, not
 * all at one instant) into *out, and up to n workers' counters into per_worker (may be
 * NULL).  Returns the number of workers.  Any thread. */
int jd_pool_stats(const struct jd_pool *p, struct jd_pool_stats *out,
		  struct jd_worker_stats *per_worker, size_t n);

#endif /* JD_POOL_H */
