/* daemon/pool/internal.h: the pool's private structures, shared by the files of
 * daemon/pool/ and by nothing else.
 *
 * Reading order: a task record (struct jd_task), a fiber, a wait (one waiting context
 * parked on one event), a worker, the pool.  Every field that more than one thread
 * touches says who owns it; "owner" means the worker the struct belongs to.
 */
#ifndef JD_POOL_INTERNAL_H
#define JD_POOL_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/ctx.h"
#include "daemon/pool/deque.h"
#include "daemon/pool/pool.h"
#include "daemon/pool/sync.h"

#define JD_CACHELINE 128 /* two x86 lines (adjacent-line prefetch), one Apple M line */

struct jd_worker;
struct jd_fiber;

/* ---- task records (task.c) ------------------------------------------------------------ */

enum jd_task_kind {
	JD_TK_USER = 0,	  /* a submitted task: fn(arg), then done */
	JD_TK_RESUME = 1, /* resume the suspended fiber `arg` (embedded in the fiber) */
};

/* JD_TASK_KEEP: a task of the pool's own helpers (DAG drainers, parallel-for claims)
 * that runs even under an immediate destroy, to retire its state; it drops the user work
 * it would have started itself.  pool.h keeps flag bits from 0x100 up for the pool. */
#define JD_TASK_KEEP 0x100u

/* One task: exactly one cache line.  Owned by whoever holds it: a queue while queued,
 * then the worker running it, which frees it when fn returns. */
struct jd_task {
	struct jd_task *next;	/* inbox / free-list link */
	jd_task_fn fn;
	void *arg;		/* spec arg, or &payload */
	struct jd_wg *wg;
	uint16_t flags;		/* JD_TASK_* */
	uint16_t kind;		/* enum jd_task_kind */
	uint32_t unused;
	alignas(8) unsigned char payload[JD_TASK_PAYLOAD_MAX];
};
_Static_assert(sizeof(struct jd_task) == 64, "a task record is one 64-byte line");

/* jd_task_alloc: a record from the calling thread's free list (worker `w`, or the
 * thread-local cache of a non-worker when w is NULL).  NULL only when out of memory. */
struct jd_task *jd_task_alloc(struct jd_pool *p, struct jd_worker *w);

/* jd_task_free: give a record back to worker w's free list.  Worker w only. */
void jd_task_free(struct jd_worker *w, struct jd_task *t);

/* jd_task_fill: copy a spec into a record.  Returns 0 or JSCHED_EINVAL. */
int jd_task_fill(struct jd_task *t, const struct jd_task_spec *s);

/* jd_task_unalloc: give back a record that jd_task_alloc(p, w) returned and that was
 * never queued.  The same thread. */
void jd_task_unalloc(struct jd_pool *p, struct jd_worker *w, struct jd_task *t);

/* jd_task_check: whether a spec is valid (0 or JSCHED_EINVAL). */
int jd_task_check(const struct jd_task_spec *s);

/* jd_tasks_init / jd_tasks_fini: the pool's slab list and shared free list (fini frees
 * every record).  The creating / destroying thread. */
int jd_tasks_init(struct jd_pool *p);
void jd_tasks_fini(struct jd_pool *p);

/* ---- fibers (fiber.c) ----------------------------------------------------------------- */

enum jd_fiber_state {
	JD_FS_FREE = 0,
	JD_FS_RUNNING,		/* running on a worker, or queued to run (resume task) */
	JD_FS_WANTS_SUSPEND,	/* published as a waiter, still switching out */
	JD_FS_SUSPENDED,	/* switched out; a waker may requeue it */
	JD_FS_RESUME_PENDING,	/* woken before it had switched out: its worker requeues it */
	JD_FS_DEAD,		/* its task returned; the worker releases it */
};

struct jd_fiber {
	struct jd_ctx ctx;		/* the fiber's own saved registers */
	struct jd_ctx *ret;		/* where it switches to when it suspends or ends: set
					 * by the worker on every resume (that worker owns it) */
	atomic_int state;		/* enum jd_fiber_state: see fiber.c for the protocol */
	struct jd_task *task;		/* the task it runs (owned by the fiber) */
	struct jd_task resume;		/* the JD_TK_RESUME record queued to wake it */
	struct jd_worker *worker;	/* the worker running it now (set on each resume) */
	struct jd_worker *starter;	/* the worker that started it (counts fibers_in_use) */
	struct jd_cancel stop;		/* fired by an immediate destroy: cancels its waits */
	struct jd_fiber *next_free;	/* free-list link (under the class lock) */
	char *stack_lo;			/* usable stack (the guard page sits just below) */
	size_t stack_size;
	bool large;
	int saved_errno;		/* errno carried across a suspend */
};

struct jd_fiber_class {
	atomic_uint lock;
	struct jd_fiber *free;		/* under lock */
	unsigned count;
	size_t stack;			/* usable bytes */
	char *lo;			/* the first guard page of this class in the arena */
	size_t stride;			/* guard + stack */
	struct jd_fiber *fibers;	/* count fibers */
};

/* jd_fibers_init: map the arena (guard pages included) and fill both classes' free lists
 * as cfg says; 0, JSCHED_EINVAL (sizes) or JSCHED_ENOMEM.  jd_fibers_fini: unmap it.
 * The creating / destroying thread, while no worker runs. */
int jd_fibers_init(struct jd_pool *p, const struct jd_pool_config *cfg);
void jd_fibers_fini(struct jd_pool *p);

/* jd_fiber_acquire: a free fiber of the class, or NULL if all are in use.  Any worker. */
struct jd_fiber *jd_fiber_acquire(struct jd_pool *p, bool large);

/* jd_fiber_start: run task t on fiber f from worker w (w's thread); returns when the
 * fiber has ended or suspended. */
void jd_fiber_start(struct jd_worker *w, struct jd_fiber *f, struct jd_task *t);

/* jd_fiber_run: resume fiber f on worker w (w's thread); returns when it has ended or
 * suspended again. */
void jd_fiber_run(struct jd_worker *w, struct jd_fiber *f);

/* jd_fiber_suspend: called by the fiber itself after it has set its state to
 * JD_FS_WANTS_SUSPEND and published itself as a waiter; returns when resumed (possibly
 * on another worker thread). */
void jd_fiber_suspend(struct jd_fiber *f);

/* jd_fiber_wake: make a suspended (or suspending) fiber run again.  Called once per
 * suspend, by whoever claimed its wait.  Any thread. */
void jd_fiber_wake(struct jd_fiber *f);

/* jd_overflow_register: install the process-wide SIGSEGV handler that reports fiber stack
 * overflows (again, if someone replaced it) and list p's arena; unregister: unlist it.
 * The creating / destroying thread.  jd_altstack_init / fini: the calling worker's
 * alternate signal stack (the handler must not run on the overflowed stack); 0,
 * JSCHED_ENOMEM or JSCHED_EINTERNAL.  The worker's own thread. */
void jd_overflow_register(struct jd_pool *p);
void jd_overflow_unregister(struct jd_pool *p);
int jd_altstack_init(void **mem);
void jd_altstack_fini(void *mem);

/* ---- waits (wait.c, timer.c) ---------------------------------------------------------- */

/* A registration of a wait with a cancel token (a token's list, under its lock). */
struct jd_cancel_reg {
	struct jd_cancel_reg *next, *prev;
	struct jd_wait *wait;
};

/* One context waiting on one event.  Lives on the waiter's stack.  Linked into the
 * event's waiter list (under the event's lock) until claimed: by jd_event_set, by the
 * timer, by a cancel, or by the waiter itself at its timeout.  The claimer writes
 * `result`, unlinks it, and then wakes the waiter; after the wake it no longer touches
 * the wait, so the waiter may return and free it. */
struct jd_wait {
	struct jd_wait *next, *prev;	/* in the event's list (event lock) */
	struct jd_event *ev;
	bool linked;			/* in the event's list (event lock) */
	int result;			/* 0, JSCHED_ETIMEOUT, JSCHED_ECANCELLED (claimer) */
	struct jd_fiber *fiber;		/* the waiting fiber, or NULL for a thread */
	struct jd_parker *parker;	/* a worker thread's parker, or NULL: futex on done */
	struct jd_pool *pool;		/* the waiter's pool (a fiber or a worker), or NULL */
	atomic_uint done;		/* thread waiters: 1 once claimed (release) */
	/* timer.c (timer lock) */
	uint64_t deadline;
	size_t heap_index;		/* position in the timer heap + 1; 0: not in it */
	struct jd_cancel_reg reg[2];	/* user token, the context's stop token */
	struct jd_cancel *tok[2];
};

/* jd_wait_claim: claim w for `result` if nobody has; then wake it.  Returns whether
 * this call claimed it.  The caller guarantees w's waiter has not returned. */
bool jd_wait_claim(struct jd_wait *w, int result);

/* jd_wait_set_thread_spin: how long a non-worker thread spins before it sleeps in a
 * wait (the last created pool's setting).  Any thread. */
void jd_wait_set_thread_spin(int64_t ns);

/* The pool's timer thread: wakes fibers whose timed waits expire. */
struct jd_timer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct jd_wait **heap;	/* min-heap by deadline (lock) */
	size_t n, cap;
	bool stop;
	bool started;
	pthread_t thread;
};

/* jd_timer_init: start the timer thread (0, JSCHED_ENOMEM or JSCHED_EINTERNAL);
 * jd_timer_fini: stop and join it.  The creating / destroying thread. */
int jd_timer_init(struct jd_pool *p);
void jd_timer_fini(struct jd_pool *p);

/* jd_timer_add: end fiber wait w with JSCHED_ETIMEOUT at w->deadline unless claimed first;
 * 0 or JSCHED_ENOMEM (cannot happen: one entry per fiber).  jd_timer_remove: forget it if
 * still there; after it returns the timer no longer touches w.  The waiting fiber. */
int jd_timer_add(struct jd_pool *p, struct jd_wait *w);
void jd_timer_remove(struct jd_pool *p, struct jd_wait *w);

/* ---- workers (worker.c) --------------------------------------------------------------- */

/* A worker's inbox: tasks pushed from outside the pool, a spin-locked list.  Any thread
 * pushes; the owner drains it into its deque, and thieves may take it whole (an inbox
 * that only its owner could empty strands work behind a busy or blocked owner). */
struct jd_inbox {
	alignas(JD_CACHELINE) atomic_uint lock;
	atomic_uint_least64_t count;	/* written under lock; read by anyone as a hint */
	struct jd_task *head, *tail;	/* under lock */
};

struct jd_worker {
	struct jd_deque deque;		/* owner pushes/pops, anyone steals */
	struct jd_inbox inbox;
	struct jd_inbox resumes;	/* resume records of fibers that live on this worker:
					 * anyone pushes, only the owner takes (not stealable) */
	alignas(JD_CACHELINE) struct jd_parker parker; /* owner parks, anyone unparks */
	atomic_int idle;		/* 1: announced idle (parking); cleared by the one who
					 * wakes it or by itself */
	struct jd_cancel stop;		/* cancels its thread's waits at an immediate destroy */

	/* Owned by the worker thread. */
	alignas(JD_CACHELINE) struct jd_pool *pool;
	unsigned index;
	int cpu;			/* the CPU its topology was read for (-1: unknown) */
	struct jd_task *ready;		/* resume records taken from `resumes` */
	struct jd_task *free;		/* free task records */
	unsigned nfree;
	uint64_t rng;
	unsigned *victims;		/* other workers, nearest tier first */
	unsigned tier_end[3];		/* victims[tier_end[k-1] .. tier_end[k]) is tier k */
	struct jd_fiber *cur_fiber;	/* the fiber running on this thread, or NULL */
	struct jd_ctx thread_ctx;	/* the worker loop's own context */
	uint64_t busy_since;		/* 0 while idle */
	void *altstack;
	pthread_t thread;

	/* Counters: written by the owner only (jd_bump), read by anyone. */
	alignas(JD_CACHELINE) atomic_uint_least64_t tasks_run;
	atomic_uint_least64_t steals, parks, feeds, busy_ns;
	atomic_uint_least64_t grace_yields; /* sched_yield calls in SLEEP's grace */
	atomic_uint_least64_t created;	/* tasks this worker created (quiescence) */
	atomic_uint_least64_t completed; /* tasks finished or dropped here (release) */
	atomic_uint fibers_in_use;	/* started here, not ended: any worker (fetch_add/sub) */
	atomic_uint fibers_suspended;	/* suspended here now: any thread (fetch_add/sub) */
};

/* jd_self: the worker the calling thread is, or NULL.  Never inlined, so that no caller
 * keeps a thread-local address across a fiber switch. */
struct jd_worker *jd_self(void);

/* jd_worker_main: a worker thread's body. */
void *jd_worker_main(void *arg);

/* jd_push_local: queue t on worker w's own deque (w's thread) and wake a parked worker
 * if one is needed.  Returns 0 or JSCHED_ENOMEM. */
int jd_push_local(struct jd_worker *w, struct jd_task *t);

/* jd_push_inbox: queue the chain first..last (n tasks) on worker w's inbox and wake a
 * worker if needed.  Any thread. */
void jd_push_inbox(struct jd_pool *p, struct jd_worker *w, struct jd_task *first,
		   struct jd_task *last, uint64_t n);

/* jd_wake_one: after publishing work (any queue or flag), wake one parked worker if
 * every worker is parked or parking, preferring `hint` (may be NULL).  Contains the
 * publisher's side of the park handshake (a seq_cst fence, then nidle).  Any thread. */
void jd_wake_one(struct jd_pool *p, struct jd_worker *hint);

/* jd_push_resume: queue a fiber's resume record on the worker it lives on and wake that
 * worker if it is parked.  Any thread. */
void jd_push_resume(struct jd_pool *p, struct jd_worker *w, struct jd_task *t);

/* jd_wake_all: wake every parked worker.  Any thread. */
void jd_wake_all(struct jd_pool *p);

/* jd_help_wait: the wait loop of a plain task on worker w: run other tasks until
 * w_done is set or the deadline (0: none) passes; park on w's parker when there is
 * nothing to run.  Returns false on timeout.  w's thread. */
bool jd_help_wait(struct jd_worker *w, atomic_uint *w_done, uint64_t deadline);

/* jd_grace_next: SLEEP's grace (the search before a park) after a park that lasted
 * `parked` ns, from the park to running again, with grace `grace` and the configured
 * park_after_ns `base`: doubled, up to JD_GRACE_MAX_X x base, after a park shorter than
 * twice that; base after a longer one (worker.c says why).  Returns it.  Pure. */
#define JD_GRACE_MAX_X 5
uint64_t jd_grace_next(uint64_t base, uint64_t grace, uint64_t parked);

/* jd_run_task: run (or drop, during an immediate destroy) one task on w.  w's thread. */
void jd_run_task(struct jd_worker *w, struct jd_task *t);

/* jd_task_complete: after t's body returned: done its wait group, free it, count it. */
void jd_task_complete(struct jd_worker *w, struct jd_task *t);

/* ---- the pool (pool.c) ---------------------------------------------------------------- */

enum { JD_RUNNING = 0, JD_STOP_GRACEFUL = 1, JD_STOP_IMMEDIATE = 2 };

struct jd_feeder {
	jd_feeder_fn fn;
	void *ctx;
	struct jd_feeder *older;	/* retired ones, freed at destroy */
};

struct jd_pool {
	unsigned nworkers;
	struct jd_worker *workers;	/* array, fixed after create */
	uint64_t id;			/* unique per pool in the process (task caches) */

	alignas(JD_CACHELINE) atomic_int nidle;	/* workers announced idle (any thread) */
	atomic_int idle_policy;		/* enum jd_idle (any thread) */
	atomic_int stopping;		/* JD_RUNNING / JD_STOP_* (destroy sets it) */
	atomic_int quit;		/* workers exit (set once quiescent) */
	atomic_int feed_pending;	/* jd_pool_notify sets, an idle worker clears */
	_Atomic(struct jd_feeder *) feeder;
	unsigned feed_batch;		/* 1 ... 64 */
	bool pin;
	enum jd_worker_sched sched;	/* each worker applies it as it starts */
	uint64_t park_after_ns;		/* SLEEP: keep searching this long before parking */

	/* A thread outside the pool is runnable and waits for a CPU (jd_pool_want_cpu):
	 * searching workers yield instead of spinning.  Any thread; read by searchers. */
	alignas(JD_CACHELINE) atomic_uint cpu_wanted;

	/* Wakes under way in threads outside the pool (wait.c, wake): from before a waiter
	 * is signalled until the signal's last touch of the pool (its worker's queues and
	 * parker).  The signalled fiber may finish and the pool quiesce meanwhile, so
	 * jd_pool_destroy waits for this to reach 0 after joining the workers. */
	alignas(JD_CACHELINE) atomic_uint outside_wakes;

	alignas(JD_CACHELINE) atomic_uint_least64_t ext_created; /* by non-workers */
	atomic_uint rr;			/* round robin over inboxes for external submits */

	alignas(JD_CACHELINE) atomic_uint_least64_t fiber_exhausted;
	atomic_uint_least64_t dropped;

	/* task.c */
	alignas(JD_CACHELINE) atomic_uint task_lock;
	struct jd_task *task_free;	/* stack of free chunks (task_lock; task.c) */
	uint64_t task_nfree;
	void **slabs;			/* every slab ever allocated (task_lock) */
	size_t nslabs, capslabs;

	/* fiber.c */
	char *arena;
	size_t arena_size;
	struct jd_fiber_class fclass[2]; /* standard, large */

	struct jd_timer timer;
	pthread_mutex_t feeder_lock;	/* serializes jd_pool_set_feeder */
};

/* jd_thread_spinners: threads outside every pool spinning in a wait past its first 2 µs
 * (wait.c); searching workers yield while there are any.  Any thread. */
extern atomic_uint jd_thread_spinners;

/* jd_quiescent: every task created so far has finished or been dropped.  Any thread. */
bool jd_quiescent(struct jd_pool *p);


#endif /* JD_POOL_INTERNAL_H */
