/* daemon/pool/wait.c: events, wait groups, cancel tokens, sleeping: every way to wait.
 *
 * An event is one word: a "set" bit, a lock bit, and the head of a doubly linked list of
 * waits (struct jd_wait, each on its waiter's stack).  The lock bit guards the list; it is
 * held for a few instructions only.  jd_event_set takes the lock, detaches the whole list,
 * and releases the lock by storing "set" alone: that store is its last touch of the event,
 * so a waiter that sees "set" may free the event at once.  It then wakes each detached wait.
 *
 * A wait ends when it is claimed, exactly once, by one of: the setter, the pool's timer
 * (fiber waits with a timeout), a cancel token (user token, or the stop token of the
 * fiber/worker that an immediate destroy fires), or the waiter itself at its own timeout.
 * To claim is to unlink the wait under the event's lock and write its result; only the
 * claimer wakes the waiter, so a fiber is never woken twice.  Whoever claims needs the
 * event alive: the setter has it; the timer and the tokens hold their own lock, which the
 * waiter must take to deregister before it returns, so the event outlives their claim.
 * Lock order: token -> event, timer -> event; the event lock is a leaf (apart from the
 * inbox lock taken to queue a woken fiber).
 *
 * How a context waits, by where it runs:
 *   - a fiber: publishes itself (state WANTS_SUSPEND first, see fiber.c), links its wait,
 *     registers with the tokens and the timer, and suspends; its worker runs other work.
 *   - a plain task on a worker: links a wait whose wake-up unparks the worker, and runs
 *     other tasks until it is claimed (jd_help_wait in worker.c), so fork-join from a
 *     plain task works even on one worker.
 *   - any other thread: spins for a short while (the round trip to a running worker is
 *     about a microsecond; a futex wake across CPUs here costs 40-70 µs), then sleeps on
 *     a futex word in its wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

#define EV_SET ((uintptr_t)1)
#define EV_LOCK ((uintptr_t)2)
#define EV_HEAD(v) ((struct jd_wait *)((v) & ~(uintptr_t)3))

atomic_uint jd_thread_spinners;

/* The spin time of thread waiters: the last created pool's wait_spin_ns. */
static atomic_llong thread_spin_ns = 20000;

void jd_wait_set_thread_spin(int64_t ns)
{
	atomic_store_explicit(&thread_spin_ns, ns, memory_order_relaxed);
}

static uintptr_t ev_lock(struct jd_event *ev)
{
	unsigned spins = 0;
	uintptr_t v = atomic_load_explicit(&ev->word, memory_order_relaxed);
	for (;;) {
		if (!(v & EV_LOCK)) {
			if (atomic_compare_exchange_weak_explicit(&ev->word, &v, v | EV_LOCK,
								  memory_order_acquire,
								  memory_order_relaxed))
				return v;
			continue;
		}
		if (++spins < 64)
			jd_cpu_relax();
		else
			sched_yield();
		v = atomic_load_explicit(&ev->word, memory_order_relaxed);
	}
}

static void ev_unlock(struct jd_event *ev, uintptr_t v)
{
	atomic_store_explicit(&ev->word, v & ~EV_LOCK, memory_order_release);
}

void jd_event_init(struct jd_event *ev)
{
	atomic_init(&ev->word, 0);
}

bool jd_event_is_set(const struct jd_event *ev)
{
	return atomic_load_explicit(&ev->word, memory_order_acquire) ==
	       EV_SET;
}

void jd_event_reset(struct jd_event *ev)
{
	uintptr_t v = EV_SET;
	atomic_compare_exchange_strong_explicit(&ev->word, &v, 0, memory_order_relaxed,
						memory_order_relaxed);
}

/* signal: tell a claimed wait's owner.  Reads everything it needs from w before the
 * signal, after which w may be gone. */
static void signal_waiter(struct jd_wait *w)
{
	struct jd_fiber *f = w->fiber;
	if (f) {
		jd_fiber_wake(f);
		return;
	}
	struct jd_parker *pk = w->parker;
	atomic_store_explicit(&w->done, 1, memory_order_release);
	if (pk)
		jd_unpark(pk); /* a worker's parker lives as long as the pool */
	else
		jd_futex_wake(&w->done, 1);
}

/* wake: signal_waiter, holding the waiter's pool when this thread is not one of its
 * workers (an output thread setting an event, the daemon's loop): the woken fiber may
 * finish and the pool quiesce and be destroyed while the signal still touches the
 * worker's queue and parker.  jd_pool_destroy waits for outside_wakes to drain. */
static void wake(struct jd_wait *w)
{
	struct jd_pool *p = w->pool;
	struct jd_worker *me;

	if (!p || ((me = jd_self()) && me->pool == p)) {
		signal_waiter(w);
		return;
	}
	atomic_fetch_add_explicit(&p->outside_wakes, 1, memory_order_seq_cst);
	signal_waiter(w);
	atomic_fetch_sub_explicit(&p->outside_wakes, 1, memory_order_release);
}

/* set_locked: set ev, whose lock the caller holds (v: the word read when locking), and
 * wake its waiters. */
static void set_locked(struct jd_event *ev, uintptr_t v)
{
	struct jd_wait *list = EV_HEAD(v);
	for (struct jd_wait *w = list; w; w = w->next) {
		w->linked = false;
		w->result = 0;
	}
	ev_unlock(ev, EV_SET); /* the last touch of *ev */
	while (list) {
		struct jd_wait *next = list->next;
		wake(list);
		list = next;
	}
}

void jd_event_set(struct jd_event *ev)
{
	if (atomic_load_explicit(&ev->word, memory_order_acquire) == EV_SET)
		return;
	uintptr_t v = ev_lock(ev);
	if (v & EV_SET)
		ev_unlock(ev, v);
	else
		set_locked(ev, v);
}

/* unlink: take w out of the list whose word is v (locked); returns the new word. */
static uintptr_t unlink_wait(struct jd_wait *w, uintptr_t v)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		v = (uintptr_t)w->next | (v & (EV_SET | EV_LOCK));
	if (w->next)
		w->next->prev = w->prev;
	w->linked = false;
	return v;
}

/* claim: unlink w with `result` if it is still linked.  Does not wake. */
static bool claim(struct jd_wait *w, int result)
{
	struct jd_event *ev = w->ev;
	uintptr_t v = ev_lock(ev);
	bool won = w->linked;
	if (won) {
		v = unlink_wait(w, v);
		w->result = result;
	}
	ev_unlock(ev, v);
	return won;
}

bool jd_wait_claim(struct jd_wait *w, int result)
{
	if (!claim(w, result))
		return false;
	wake(w);
	return true;
}

/* link: add w to ev's waiters; false if ev is already set (nothing linked). */
static bool link_wait(struct jd_wait *w)
{
	uintptr_t v = ev_lock(w->ev);
	if (v & EV_SET) {
		ev_unlock(w->ev, v);
		return false;
	}
	w->prev = NULL;
	w->next = EV_HEAD(v);
	if (w->next)
		w->next->prev = w;
	w->linked = true;
	ev_unlock(w->ev, (uintptr_t)w);
	return true;
}

static void wait_init(struct jd_wait *w, struct jd_event *ev)
{
	memset(w, 0, sizeof(*w));
	w->ev = ev;
	atomic_init(&w->done, 0);
}

/* ---- cancel tokens -------------------------------------------------------------------- */

void jd_cancel_init(struct jd_cancel *c)
{
	atomic_init(&c->lock, 0);
	atomic_init(&c->fired, false);
	c->waits = NULL;
}

bool jd_cancel_fired(const struct jd_cancel *c)
{
	return atomic_load_explicit(&c->fired, memory_order_acquire);
}

void jd_cancel_fire(struct jd_cancel *c)
{
	jd_spin_lock(&c->lock);
	atomic_store_explicit(&c->fired, true, memory_order_release);
	for (struct jd_cancel_reg *r = c->waits; r; r = r->next)
		jd_wait_claim(r->wait, JSCHED_ECANCELLED);
	jd_spin_unlock(&c->lock);
}

/* tokens_register: register w with its tokens (w->tok[]).  Returns 0, or
 * JSCHED_ECANCELLED if one has fired (or the pool is being destroyed immediately and
 * the token is a stop token); then w is registered with none. */
static int tokens_register(struct jd_wait *w, struct jd_pool *p)
{
	for (int i = 0; i < 2; i++) {
		struct jd_cancel *c = w->tok[i];
		if (!c)
			continue;
		struct jd_cancel_reg *r = &w->reg[i];
		r->wait = w;
		jd_spin_lock(&c->lock);
		if (atomic_load_explicit(&c->fired, memory_order_relaxed) ||
		    (i == 1 && p &&
		     atomic_load_explicit(&p->stopping, memory_order_acquire) ==
			     JD_STOP_IMMEDIATE)) {
			jd_spin_unlock(&c->lock);
			for (int j = 0; j < i; j++) {
				if (!w->tok[j])
					continue;
				jd_spin_lock(&w->tok[j]->lock);
				struct jd_cancel_reg *q = &w->reg[j];
				if (q->prev)
					q->prev->next = q->next;
				else
					w->tok[j]->waits = q->next;
				if (q->next)
					q->next->prev = q->prev;
				jd_spin_unlock(&w->tok[j]->lock);
			}
			return JSCHED_ECANCELLED;
		}
		r->prev = NULL;
		r->next = c->waits;
		if (r->next)
			r->next->prev = r;
		c->waits = r;
		jd_spin_unlock(&c->lock);
	}
	return 0;
}

static void tokens_unregister(struct jd_wait *w)
{
	for (int i = 0; i < 2; i++) {
		struct jd_cancel *c = w->tok[i];
		if (!c)
			continue;
		struct jd_cancel_reg *r = &w->reg[i];
		jd_spin_lock(&c->lock);
		if (r->prev)
			r->prev->next = r->next;
		else
			c->waits = r->next;
		if (r->next)
			r->next->prev = r->prev;
		jd_spin_unlock(&c->lock);
	}
}

/* ---- the three kinds of waiter -------------------------------------------------------- */

static int fiber_wait(struct jd_worker *w, struct jd_event *ev, uint64_t deadline,
		      struct jd_cancel *user)
{
	struct jd_fiber *f = w->cur_fiber;
	struct jd_pool *p = w->pool;
	struct jd_wait wt;
	wait_init(&wt, ev);
	wt.fiber = f;
	wt.pool = p;
	wt.tok[0] = user;
	wt.tok[1] = &f->stop;
	/* Parkable before published: a waker that finds the wait sees WANTS_SUSPEND. */
	atomic_store_explicit(&f->state, JD_FS_WANTS_SUSPEND, memory_order_relaxed);
	if (!link_wait(&wt)) {
		atomic_store_explicit(&f->state, JD_FS_RUNNING, memory_order_relaxed);
		return 0;
	}
	int rc = tokens_register(&wt, p);
	if (rc) {
		if (claim(&wt, rc)) {
			atomic_store_explicit(&f->state, JD_FS_RUNNING, memory_order_relaxed);
			return rc;
		}
		wt.tok[0] = wt.tok[1] = NULL; /* claimed by another: take its wake-up */
	}
	wt.deadline = deadline;
	bool timed = deadline && jd_timer_add(p, &wt) == 0;
	jd_fiber_suspend(f);
	/* Resumed, perhaps on another worker: only p, f and wt are still valid here. */
	if (timed)
		jd_timer_remove(p, &wt);
	tokens_unregister(&wt);
	return wt.result;
}

static int helper_wait(struct jd_worker *w, struct jd_event *ev, uint64_t deadline,
		       struct jd_cancel *user)
{
	struct jd_wait wt;
	wait_init(&wt, ev);
	wt.parker = &w->parker;
	wt.pool = w->pool;
	wt.tok[0] = user;
	wt.tok[1] = &w->stop;
	if (!link_wait(&wt))
		return 0;
	int rc = tokens_register(&wt, w->pool);
	if (rc) {
		if (claim(&wt, rc))
			return rc;
		wt.tok[0] = wt.tok[1] = NULL;
	}
	if (!jd_help_wait(w, &wt.done, deadline) && !claim(&wt, JSCHED_ETIMEOUT))
		jd_help_wait(w, &wt.done, 0); /* lost the race: its claimer wakes us */
	tokens_unregister(&wt);
	return wt.result;
}

/* thread_spin: the spin of a thread outside the pool before it sleeps: 0 when ev was set,
 * JSCHED_ECANCELLED, or 1 when the spin ended.  After its first 2 µs it counts itself in
 * jd_thread_spinners (so that searching workers yield: the task it waits for needs a
 * worker on a CPU) and yields on each round itself: with more runnable threads than CPUs
 * the worker it waits for may be the one that needs this CPU (a DAG row without this:
 * 108 µs per graph with a 100 µs spin, 6.7 µs with a 2 µs one). */
static int thread_spin(struct jd_event *ev, uint64_t deadline, struct jd_cancel *user, int64_t spin)
{
	uint64_t start = jd_now_ns(), end = start + (uint64_t)spin;
	bool counted = false;
	int rc = 1;

	if (deadline && deadline < end)
		end = deadline;
	for (;;) {
		for (int i = 0; i < 32; i++) {
			if (jd_event_is_set(ev)) {
				rc = 0;
				goto out;
			}
			jd_cpu_relax();
		}
		if (user && jd_cancel_fired(user)) {
			rc = JSCHED_ECANCELLED;
			goto out;
		}
		uint64_t now = jd_now_ns();
		if (now >= end)
			goto out;
		if (now - start > 2000) {
			if (!counted) {
				atomic_fetch_add_explicit(&jd_thread_spinners, 1, memory_order_relaxed);
				counted = true;
			}
			sched_yield();
		}
	}
out:
	if (counted)
		atomic_fetch_sub_explicit(&jd_thread_spinners, 1, memory_order_relaxed);
	return rc;
}

static int thread_wait(struct jd_event *ev, uint64_t deadline, struct jd_cancel *user)
{
	int64_t spin = atomic_load_explicit(&thread_spin_ns, memory_order_relaxed);
	if (spin > 0) {
		int rc = thread_spin(ev, deadline, user, spin);
		if (rc <= 0)
			return rc;
	}
	struct jd_wait wt;
	wait_init(&wt, ev);
	wt.tok[0] = user;
	if (!link_wait(&wt))
		return 0;
	int rc = tokens_register(&wt, NULL);
	if (rc) {
		if (claim(&wt, rc))
			return rc;
		wt.tok[0] = NULL;
	}
	while (!atomic_load_explicit(&wt.done, memory_order_acquire)) {
		if (jd_futex_wait(&wt.done, 0, deadline) == -ETIMEDOUT && deadline &&
		    jd_now_ns() >= deadline) {
			if (claim(&wt, JSCHED_ETIMEOUT))
				break;
			deadline = 0;
		}
	}
	tokens_unregister(&wt);
	return wt.result;
}

int jd_event_wait_for(struct jd_event *ev, int64_t timeout_ns, struct jd_cancel *c)
{
	if (jd_event_is_set(ev))
		return 0;
	if (c && jd_cancel_fired(c))
		return JSCHED_ECANCELLED;
	if (timeout_ns == 0)
		return JSCHED_ETIMEOUT;
	uint64_t deadline = timeout_ns > 0 ? jd_now_ns() + (uint64_t)timeout_ns : 0;
	struct jd_worker *w = jd_self();
	if (w && w->cur_fiber)
		return fiber_wait(w, ev, deadline, c);
	if (w)
		return helper_wait(w, ev, deadline, c);
	return thread_wait(ev, deadline, c);
}

int jd_event_wait(struct jd_event *ev)
{
	return jd_event_wait_for(ev, -1, NULL);
}

/* ---- wait groups ---------------------------------------------------------------------- */

void jd_wg_init(struct jd_wg *wg)
{
	atomic_init(&wg->count, 0);
	atomic_init(&wg->zero.word, EV_SET);
}

/* settle: make the group's event agree with its count (set at zero, unset otherwise).
 * Called by whoever moved the count to or from zero; deciding under the event's lock
 * with the count read there means a late "set" from a 1 -> 0 cannot undo the reset of a
 * following 0 -> 1 (the count may touch zero between waits without a wait returning
 * early). */
static void settle(struct jd_wg *wg)
{
	uintptr_t v = ev_lock(&wg->zero);
	bool zero = atomic_load_explicit(&wg->count, memory_order_acquire) == 0;
	if (zero && !(v & EV_SET))
		set_locked(&wg->zero, v);
	else if (!zero && (v & EV_SET))
		ev_unlock(&wg->zero, 0);
	else
		ev_unlock(&wg->zero, v);
}

void jd_wg_add(struct jd_wg *wg, long long n)
{
	if (atomic_fetch_add_explicit(&wg->count, n, memory_order_acq_rel) == 0)
		settle(wg);
}

void jd_wg_done(struct jd_wg *wg)
{
	long long before = atomic_fetch_sub_explicit(&wg->count, 1, memory_order_acq_rel);
	if (before == 1) {
		settle(wg);
	} else if (before <= 0) {
		fprintf(stderr, "jschedd: fatal: jd_wg_done on wait group %p with count %lld\n",
			(void *)wg, before);
		abort();
	}
}

int jd_wg_wait(struct jd_wg *wg)
{
	return jd_event_wait_for(&wg->zero, -1, NULL);
}

int jd_wg_wait_for(struct jd_wg *wg, int64_t timeout_ns, struct jd_cancel *c)
{
	return jd_event_wait_for(&wg->zero, timeout_ns, c);
}

/* ---- sleep ---------------------------------------------------------------------------- */

int jd_sleep(int64_t ns, struct jd_cancel *c)
{
	if (ns <= 0)
		return c && jd_cancel_fired(c) ? JSCHED_ECANCELLED : 0;
	struct jd_worker *w = jd_self();
	if (!w && !c) {
		struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000),
				      .tv_nsec = (long)(ns % 1000000000)};
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		return 0;
	}
	/* A private event nobody sets: the wait ends by its timeout or a cancel. */
	struct jd_event never = JD_EVENT_INIT;
	int rc = jd_event_wait_for(&never, ns, c);
	return rc == JSCHED_ETIMEOUT ? 0 : rc;
}
