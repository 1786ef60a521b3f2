/* daemon/pool/worker.c: a worker thread: find work, run it, and park when there is none.
 *
 * Where a worker looks, in order: its resume queue (fibers that live on it, woken); its
 * own deque (LIFO: what it spawned last is hot in its
 * cache); its inbox (moved whole into its deque, so that the others can steal from it);
 * the other workers, nearest tier first (topo.c), a deque steal or a whole inbox; then,
 * if jd_pool_notify() announced work, the feeder.  Then it idles: under SPIN it loops;
 * under SLEEP it parks.
 *
 * Parking without lost wake-ups (README.md has the argument at length).  Two sides:
 *   parker:    idle := 1; nidle += 1; FENCE; look at every queue, the feeder flag, the
 *              stop flags (and the wait it helps, if any); park only if all are empty.
 *   publisher: make the work visible (deque bottom, inbox, feeder flag); FENCE; if
 *              nidle > 0, pick a worker with idle == 1, exchange idle to 0 (only one
 *              waker wins it) and unpark it.
 * The two FENCEs are seq_cst, so one of them comes first in their single total order: if
 * the parker's comes first, the publisher reads nidle > 0 and wakes someone; if the
 * publisher's comes first, the parker's look sees the work and it does not park.  The
 * unpark leaves a token (sync.h), so an unpark that lands before the futex wait is not
 * lost either.  A worker woken this way may find that another took the work: it looks
 * again and parks again, which is harmless.  A publisher that finds nidle == 0 pays one
 * fence and one load, which is the common case under load and always the case under SPIN.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/pool/internal.h"
#include "daemon/pool/topo.h"
#include "jsched/error.h"

static _Thread_local struct jd_worker *tls_self;

__attribute__((noinline)) struct jd_worker *jd_self(void)
{
	/* The empty asm keeps the compiler from treating this as a pure function whose
	 * result it may reuse across a fiber switch. */
	__asm__ __volatile__("" ::: "memory");
	return tls_self;
}

bool jd_in_fiber(void)
{
	struct jd_worker *w = jd_self();
	return w && w->cur_fiber;
}

int jd_worker_index(void)
{
	struct jd_worker *w = jd_self();
	return w ? (int)w->index : -1;
}

struct jd_pool *jd_current_pool(void)
{
	struct jd_worker *w = jd_self();
	return w ? w->pool : NULL;
}

static uint64_t next_rand(struct jd_worker *w)
{
	uint64_t x = w->rng; /* xorshift64 */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	w->rng = x;
	return x;
}

/* ---- waking --------------------------------------------------------------------------- */

static bool try_wake(struct jd_pool *p, struct jd_worker *v)
{
	if (!atomic_load_explicit(&v->idle, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&v->idle, 0, memory_order_acq_rel))
		return false;
	atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
	jd_unpark(&v->parker);
	return true;
}

void jd_wake_one(struct jd_pool *p, struct jd_worker *hint)
{
	atomic_thread_fence(memory_order_seq_cst); /* the publisher's FENCE */
	if (atomic_load_explicit(&p->nidle, memory_order_relaxed) == 0)
		return;
	if (hint && try_wake(p, hint))
		return;
	unsigned n = p->nworkers;
	unsigned start = hint ? hint->index + 1 : 0;
	for (unsigned k = 0; k < n; k++)
		if (try_wake(p, &p->workers[(start + k) % n]))
			return;
}

void jd_wake_all(struct jd_pool *p)
{
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned k = 0; k < p->nworkers; k++)
		try_wake(p, &p->workers[k]);
}

/* ---- queues --------------------------------------------------------------------------- */

int jd_push_local(struct jd_worker *w, struct jd_task *t)
{
	int rc = jd_deque_push(&w->deque, t);
	if (rc == 0)
		jd_wake_one(w->pool, NULL);
	return rc;
}

void jd_push_inbox(struct jd_pool *p, struct jd_worker *w, struct jd_task *first,
		   struct jd_task *last, uint64_t n)
{
	struct jd_inbox *in = &w->inbox;
	last->next = NULL;
	jd_spin_lock(&in->lock);
	if (in->tail)
		in->tail->next = first;
	else
		in->head = first;
	in->tail = last;
	atomic_store_explicit(&in->count,
			      atomic_load_explicit(&in->count, memory_order_relaxed) + n,
			      memory_order_relaxed);
	jd_spin_unlock(&in->lock);
	jd_wake_one(p, w);
}

void jd_push_resume(struct jd_pool *p, struct jd_worker *w, struct jd_task *t)
{
	struct jd_inbox *in = &w->resumes;
	t->next = NULL;
	jd_spin_lock(&in->lock);
	if (in->tail)
		in->tail->next = t;
	else
		in->head = t;
	in->tail = t;
	atomic_store_explicit(&in->count,
			      atomic_load_explicit(&in->count, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	jd_spin_unlock(&in->lock);
	/* Only w can run it: wake w itself (the same handshake, aimed at one worker). */
	atomic_thread_fence(memory_order_seq_cst);
	try_wake(p, w);
}

/* take_resume: the next resume record of a fiber living on w.  w's thread. */
static struct jd_task *take_resume(struct jd_worker *w)
{
	if (!w->ready) {
		struct jd_inbox *in = &w->resumes;
		if (!atomic_load_explicit(&in->count, memory_order_relaxed))
			return NULL;
		jd_spin_lock(&in->lock);
		w->ready = in->head;
		in->head = in->tail = NULL;
		atomic_store_explicit(&in->count, 0, memory_order_relaxed);
		jd_spin_unlock(&in->lock);
		if (!w->ready)
			return NULL;
	}
	struct jd_task *t = w->ready;
	w->ready = t->next;
	return t;
}

/* take_inbox: empty v's inbox (me == v: the owner; else a thief, which does not wait for
 * the lock); return the first task and push the rest on me's deque. */
static struct jd_task *take_inbox(struct jd_worker *me, struct jd_worker *v)
{
	struct jd_inbox *in = &v->inbox;
	if (!atomic_load_explicit(&in->count, memory_order_relaxed))
		return NULL;
	if (me == v)
		jd_spin_lock(&in->lock);
	else if (!jd_spin_trylock(&in->lock))
		return NULL;
	struct jd_task *first = in->head, *last = in->tail;
	uint64_t n = atomic_load_explicit(&in->count, memory_order_relaxed);
	in->head = in->tail = NULL;
	atomic_store_explicit(&in->count, 0, memory_order_relaxed);
	jd_spin_unlock(&in->lock);
	if (!first)
		return NULL;
	struct jd_task *t = first->next;
	bool pushed = false;
	n--; /* `first` is ours: n counts the rest */
	while (t) {
		struct jd_task *next = t->next;
		if (jd_deque_push(&me->deque, t)) { /* out of memory: keep the rest queued */
			jd_push_inbox(me->pool, me, t, last, n);
			break;
		}
		pushed = true;
		n--;
		t = next;
	}
	if (pushed)
		jd_wake_one(me->pool, NULL); /* there is something to steal now */
	return first;
}

static struct jd_task *steal(struct jd_worker *w)
{
	struct jd_pool *p = w->pool;
	unsigned lo = 0;
	for (unsigned tier = 0; tier < 3; tier++) {
		unsigned hi = w->tier_end[tier], n = hi - lo;
		if (n) {
			unsigned start = (unsigned)(next_rand(w) % n);
			for (unsigned k = 0; k < n; k++) {
				struct jd_worker *v = &p->workers[w->victims[lo + (start + k) % n]];
				for (int tries = 0; tries < 4 && jd_deque_size(&v->deque) > 0;
				     tries++) {
					void *x = jd_deque_steal(&v->deque);
					if (x == NULL)
						break;
					if (x != JD_DEQUE_ABORT) {
						jd_bump(&w->steals, 1);
						return x;
					}
				}
				struct jd_task *t = take_inbox(w, v);
				if (t) {
					jd_bump(&w->steals, 1);
					return t;
				}
			}
		}
		lo = hi;
	}
	return NULL;
}

/* feed_with: the feeder's call on w, through fn (the feeder's, or jd_pool_feed_here's):
 * if jd_pool_notify() said there is work, take the announcement and call fn; returns the
 * first task it gave (the caller runs it) and queues the rest on w's deque, where the
 * others may steal them.  *called: fn was called. */
static struct jd_task *feed_with(struct jd_worker *w, jd_feeder_fn fn, void *ctx, bool *called)
{
	struct jd_pool *p = w->pool;
	*called = false;
	if (!atomic_load_explicit(&p->feed_pending, memory_order_relaxed) ||
	    atomic_load_explicit(&p->stopping, memory_order_relaxed))
		return NULL;
	if (!atomic_exchange_explicit(&p->feed_pending, 0, memory_order_acq_rel))
		return NULL;
	struct jd_task_spec specs[64];
	size_t max = p->feed_batch;
	size_t n = fn(ctx, specs, max);
	*called = true;
	if (n > max)
		n = max;
	if (n == max) { /* there may be more: keep the flag up for us or another worker */
		atomic_store_explicit(&p->feed_pending, 1, memory_order_release);
		jd_wake_one(p, NULL);
	}
	struct jd_task *first = NULL;
	for (size_t i = 0; i < n; i++) {
		struct jd_task *t;
		if (jd_task_check(&specs[i]) || !(t = jd_task_alloc(p, w))) {
			fprintf(stderr, "jschedd: pool: feeder task %zu of %zu rejected (%s)\n",
				i, n, jd_task_check(&specs[i]) ? "invalid spec" : "out of memory");
			continue;
		}
		jd_task_fill(t, &specs[i]);
		jd_bump(&w->created, 1);
		jd_bump(&w->feeds, 1);
		if (!first) {
			first = t;
		} else if (jd_deque_push(&w->deque, t)) {
			jd_push_inbox(p, w, t, t, 1);
		}
	}
	if (n > 1)
		jd_wake_one(p, NULL);
	return first;
}

/* feed: ask the feeder for work if jd_pool_notify() said there is some. */
static struct jd_task *feed(struct jd_worker *w)
{
	struct jd_feeder *fd = atomic_load_explicit(&w->pool->feeder, memory_order_acquire);
	bool called;
	if (!fd || !fd->fn)
		return NULL;
	return feed_with(w, fd->fn, fd->ctx, &called);
}

bool jd_pool_feed_here(struct jd_pool *p, jd_feeder_fn fn, void *ctx)
{
	struct jd_worker *w = jd_self();
	struct jd_feeder *fd = atomic_load_explicit(&p->feeder, memory_order_acquire);
	bool called;
	/* Only where the worker would call the feeder next: nothing of its own queued (and
	 * a feeder installed: removing it stops the feeding). */
	if (!w || w->pool != p || !fd || !fd->fn || w->ready ||
	    atomic_load_explicit(&w->resumes.count, memory_order_relaxed) ||
	    jd_deque_size(&w->deque) > 0 || atomic_load_explicit(&w->inbox.count, memory_order_relaxed))
		return false;
	struct jd_task *first = feed_with(w, fn, ctx, &called);
	/* It runs next: its own deque's bottom is what the worker pops first. */
	if (first && jd_deque_push(&w->deque, first))
		jd_push_inbox(p, w, first, first, 1);
	return called;
}

static struct jd_task *find_work(struct jd_worker *w, bool may_feed)
{
	/* Resumed fibers first: they hold a fiber each, and they have waited already. */
	struct jd_task *t = take_resume(w);
	if (t)
		return t;
	if ((t = jd_deque_pop(&w->deque)))
		return t;
	if ((t = take_inbox(w, w)))
		return t;
	if (w->victims && (t = steal(w)))
		return t;
	if (may_feed)
		return feed(w);
	return NULL;
}

/* work_visible: is there anything for w to do (the parker's look)?  A helping worker
 * (inside a wait) does not call the feeder, so the feeder's flag is not work for it: else
 * a pool whose every worker helps would spin on the flag instead of parking. */
static bool work_visible(struct jd_pool *p, struct jd_worker *w, bool may_feed)
{
	if (w->ready || atomic_load_explicit(&w->resumes.count, memory_order_relaxed))
		return true;
	for (unsigned i = 0; i < p->nworkers; i++) {
		struct jd_worker *v = &p->workers[i];
		if (jd_deque_size(&v->deque) > 0 ||
		    atomic_load_explicit(&v->inbox.count, memory_order_relaxed))
			return true;
	}
	return may_feed && atomic_load_explicit(&p->feed_pending, memory_order_relaxed) &&
	       atomic_load_explicit(&p->feeder, memory_order_relaxed) &&
	       !atomic_load_explicit(&p->stopping, memory_order_relaxed);
}

/* park: the parker's side of the handshake; returns when woken, at the deadline (0:
 * none), or at once if the look finds something (or *done is set). */
static void park(struct jd_worker *w, uint64_t deadline, atomic_uint *done)
{
	struct jd_pool *p = w->pool;
	atomic_store_explicit(&w->idle, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->nidle, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst); /* the parker's FENCE */
	bool stay = (done && atomic_load_explicit(done, memory_order_acquire)) ||
		    work_visible(p, w, !done) || atomic_load_explicit(&p->quit, memory_order_relaxed) ||
		    atomic_load_explicit(&p->idle_policy, memory_order_relaxed) == JD_IDLE_SPIN ||
		    (!done && atomic_load_explicit(&p->stopping, memory_order_relaxed) &&
		     jd_quiescent(p));
	if (!stay) {
		jd_bump(&w->parks, 1);
		jd_park(&w->parker, deadline);
	}
	if (atomic_exchange_explicit(&w->idle, 0, memory_order_acq_rel))
		atomic_fetch_sub_explicit(&p->nidle, 1, memory_order_relaxed);
}

/* ---- running -------------------------------------------------------------------------- */

void jd_task_complete(struct jd_worker *w, struct jd_task *t)
{
	struct jd_wg *wg = t->wg;
	jd_task_free(w, t);
	if (wg)
		jd_wg_done(wg);
	atomic_store_explicit(&w->completed,
			      atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
			      memory_order_release);
}

void jd_run_task(struct jd_worker *w, struct jd_task *t)
{
	struct jd_pool *p = w->pool;
	if (t->kind == JD_TK_RESUME) {
		jd_fiber_run(w, t->arg);
		return;
	}
	if (atomic_load_explicit(&p->stopping, memory_order_relaxed) == JD_STOP_IMMEDIATE &&
	    !(t->flags & JD_TASK_KEEP)) {
		atomic_fetch_add_explicit(&p->dropped, 1, memory_order_relaxed);
		jd_task_complete(w, t); /* dropped: its wait group is done all the same */
		return;
	}
	jd_bump(&w->tasks_run, 1);
	if (t->flags & JD_TASK_FIBER) {
		struct jd_fiber *f = jd_fiber_acquire(p, t->flags & JD_TASK_LARGE_STACK);
		if (f) {
			jd_fiber_start(w, f, t);
			return;
		}
		/* Fibers exhausted: run it here, on the worker's stack.  Its waits then
		 * run other tasks until they end (jd_help_wait), so the pool keeps making
		 * progress where "requeue and retry" deadlocks (README.md). */
		atomic_fetch_add_explicit(&p->fiber_exhausted, 1, memory_order_relaxed);
	}
	t->fn(t->arg);
	jd_task_complete(w, t);
}

#define SPIN_HOT 64

/* spin_idle: one idle round under SPIN.  Keep searching, but once a search has come up
 * empty SPIN_HOT times in a row, yield the CPU on every round: on a machine with more
 * runnable threads than CPUs (two workers and the submitting thread on two CPUs) a worker
 * that only spins takes the CPU from the thread that is about to give it work. */
static void spin_idle(unsigned *spins)
{
	if (++*spins < SPIN_HOT)
		jd_cpu_relax();
	else
		sched_yield();
}

/* grace_idle: one round of SLEEP's grace, the bounded search before the futex park.
 *
 * Normally a pause, not sched_yield: a search that yields every round makes a system call
 * per round (7 to 28 per round trip of a worker's job in the daemon, where nothing else
 * wanted the CPU most of the time).  But a searcher that only spins keeps its CPU from a
 * thread that is runnable and needs it: with more runnable threads than CPUs (two workers
 * and a submitter on two CPUs) that thread waits behind the searcher for the rest of the
 * grace, or until the scheduler's slice ends.  So the searcher yields where it has
 * evidence of such a thread:
 *   - `contended`: it was itself preempted during this idle stretch (a round took far
 *     longer than a round does: another thread ran on its CPU): every round, for the rest
 *     of the stretch;
 *   - a thread outside the pool spinning in a wait past its first 2 µs
 *     (jd_thread_spinners, wait.c): it waits for a task a worker must run and yields on
 *     every round itself: every round while it spins;
 *   - a thread outside the pool announced by jd_pool_want_cpu (the daemon's loop thread,
 *     woken by a worker's notice, until it runs): once per stretch, which lets it in if
 *     it waits for this CPU; more would only repeat a system call while it runs elsewhere;
 *   - `woken`: after a wake-up that found no work, once: the waker, e.g. a submitter
 *     outside the pool, may be the thread this worker has just preempted on its CPU.
 * The last two only while no worker is parked: a parked worker's CPU is where the other
 * thread can run (without that condition a worker's job in the daemon, one worker running
 * it and the other parked, cost 1.5 more sched_yield and 0.3 more loop wake-ups per round
 * trip, for nothing).  `*yielded`: this idle stretch has yielded already. */
static void grace_idle(struct jd_worker *w, bool woken, bool contended, bool *yielded)
{
	struct jd_pool *p = w->pool;
	bool once = !*yielded && (woken || atomic_load_explicit(&p->cpu_wanted, memory_order_relaxed)) &&
		    atomic_load_explicit(&p->nidle, memory_order_relaxed) == 0;

	if (once || contended || atomic_load_explicit(&jd_thread_spinners, memory_order_relaxed)) {
		jd_bump(&w->grace_yields, 1);
		sched_yield();
		*yielded = true;
		return;
	}
	jd_cpu_relax();
}

/* jd_grace_next (internal.h): SLEEP's grace for the next idle stretch.
 *
 * A park pays for itself only if it lasts longer than the wake-up it costs (40-70 µs for a
 * parked vCPU here, and a futex call on both sides).  So: a park shorter than twice the
 * longest grace, i.e. work that came soon after the worker gave up, doubles the grace, up
 * to JD_GRACE_MAX_X times the base (park_after_ns); a longer one (the worker had nothing to
 * do for a while) sets it back to the base.  A steady stream of work whose gaps are under
 * the longest grace then stops parking (a submitter's round trips, parallel-fors one
 * after the other), while work that comes rarely, or with gaps longer than any grace (a
 * daemon's jobs, each a client's round trip apart), keeps the short grace and costs its
 * CPU little. */
uint64_t jd_grace_next(uint64_t base, uint64_t grace, uint64_t parked)
{
	uint64_t max = base * JD_GRACE_MAX_X;

	if (parked >= 2 * max)
		return base;
	return grace * 2 < max ? grace * 2 : max;
}

/* A grace round (a look at every queue, a pause, the clock) takes well under a
 * microsecond; one that took this long was preempted, or its yield let another thread
 * run. */
#define PREEMPTED_NS 20000

bool jd_help_wait(struct jd_worker *w, atomic_uint *done, uint64_t deadline)
{
	struct jd_pool *p = w->pool;
	unsigned spins = 0;
	for (;;) {
		if (atomic_load_explicit(done, memory_order_acquire))
			return true;
		struct jd_task *t = find_work(w, false);
		if (t) {
			spins = 0;
			jd_run_task(w, t);
			continue;
		}
		if (deadline && jd_now_ns() >= deadline)
			return false;
		if (atomic_load_explicit(&p->idle_policy, memory_order_relaxed) == JD_IDLE_SPIN) {
			spin_idle(&spins);
			continue;
		}
		park(w, deadline, done);
	}
}

static void note_busy(struct jd_worker *w)
{
	if (!w->busy_since)
		w->busy_since = jd_now_ns();
}

static void note_idle(struct jd_worker *w)
{
	if (w->busy_since) {
		jd_bump(&w->busy_ns, jd_now_ns() - w->busy_since);
		w->busy_since = 0;
	}
}

/* apply_sched: schedule the calling worker thread as `how` says (pool.h enum
 * jd_worker_sched; on Linux the nice value and the policy are per thread).  A worker the
 * kernel refuses stays as it was. */
static void apply_sched(enum jd_worker_sched how)
{
	struct sched_param none = {0};
	int nice;

	switch (how) {
	case JD_WORKER_NORMAL:
		break;
	case JD_WORKER_BATCH:
		(void)sched_setscheduler(0, SCHED_BATCH, &none);
		break;
	case JD_WORKER_LOW:
		errno = 0;
		nice = getpriority(PRIO_PROCESS, 0);
		if (errno == 0)
			(void)setpriority(PRIO_PROCESS, 0, nice + 10 > 19 ? 19 : nice + 10);
		break;
	case JD_WORKER_IDLE:
		(void)sched_setscheduler(0, SCHED_IDLE, &none);
		break;
	}
}

void *jd_worker_main(void *arg)
{
	struct jd_worker *w = arg;
	struct jd_pool *p = w->pool;
	tls_self = w;
	apply_sched(p->sched);
	if (p->pin)
		jd_topo_pin(w);
	jd_altstack_init(&w->altstack);
	jd_ctx_init_thread(&w->thread_ctx);
	unsigned spins = 0;
	uint64_t idle_since = 0;
	uint64_t grace = p->park_after_ns; /* this worker's grace now (jd_grace_next) */
	bool woken = false;     /* parked, woken, and found nothing yet */
	bool yielded = false;   /* this idle stretch's grace has yielded */
	bool contended = false; /* preempted during this idle stretch */
	uint64_t last_round = 0; /* when the last grace round ended */
	w->busy_since = jd_now_ns();
	for (;;) {
		struct jd_task *t = find_work(w, true);
		if (t) {
			note_busy(w);
			spins = 0;
			idle_since = 0;
			woken = yielded = contended = false;
			jd_run_task(w, t);
			continue;
		}
		note_idle(w);
		if (atomic_load_explicit(&p->quit, memory_order_acquire))
			break;
		if (atomic_load_explicit(&p->stopping, memory_order_acquire) && jd_quiescent(p)) {
			atomic_store_explicit(&p->quit, 1, memory_order_release);
			jd_wake_all(p);
			break;
		}
		if (atomic_load_explicit(&p->idle_policy, memory_order_relaxed) == JD_IDLE_SPIN) {
			spin_idle(&spins);
			continue;
		}
		if (p->park_after_ns) { /* SLEEP's grace: search a while before parking */
			uint64_t now = jd_now_ns();
			if (!idle_since)
				idle_since = now;
			else if (now - last_round > PREEMPTED_NS)
				contended = true;
			if (now - idle_since < grace) {
				grace_idle(w, woken, contended, &yielded);
				last_round = now;
				continue;
			}
		}
		idle_since = 0;
		contended = false;
		uint64_t parked_at = p->park_after_ns ? jd_now_ns() : 0;
		park(w, 0, NULL);
		woken = true;
		yielded = false;
		if (p->park_after_ns)
			grace = jd_grace_next(p->park_after_ns, grace, jd_now_ns() - parked_at);
	}
	note_idle(w);
	jd_ctx_destroy(&w->thread_ctx);
	jd_altstack_fini(w->altstack);
	w->altstack = NULL;
	tls_self = NULL;
	return NULL;
}
