/* daemon/pool/forkjoin.c: fork-join (jd_fork2) and the lazily splitting parallel-for.
 *
 * jd_fork2 is the classic work-first join: push b, run a, then pop b back and run it
 * here unless a thief took it, in which case wait for it (a fiber suspends, a plain task
 * helps).  If a popped record is not b it goes back, and the wait runs it.  (A stolen b
 * may finish and its record be reused by a task that is then popped here: that task is
 * run here, which is legitimate work, and b's group is already done.)
 *
 * jd_parallel_for splits lazily, as in Tzannes et al.'s lazy binary splitting and JLib's
 * final design (it removed a timing probe that "looked deterministic while wrong"): a
 * worker running a range splits off the upper half only when its own deque is empty,
 * i.e. when the previous half it offered has been stolen.  An idle pool steals big
 * halves early; a busy pool pays one owner-only size check per chunk.  A caller outside
 * the pool works too (as oneTBB's and OpenMP's callers do): it puts the upper half of its
 * range in an offer cell and queues a claim task, works through the lower half, offers
 * half of what is left again whenever the cell has been emptied, and at the end takes
 * back an offer nobody claimed.  So the first chunk starts at once, and the caller never
 * waits for a parked worker to wake up just to hand it work (measured on the 2-CPU guest,
 * 20k sqrt, sleep policy: 68 us when the whole range went through a worker, 12 us so).
 * Claim tasks may run after the call returned, so the outside caller's state is reference
 * counted.  The caller keeps one count in the wait group until its own part is done, so
 * the count cannot reach zero while pieces are still being added.
 */
#include <stdlib.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

void jd_fork2(jd_task_fn a, void *aa, jd_task_fn b, void *ba)
{
	struct jd_worker *w = jd_self();
	struct jd_task *t = w ? jd_task_alloc(w->pool, w) : NULL;
	if (!t) {
		a(aa);
		b(ba);
		return;
	}
	struct jd_wg wg;
	jd_wg_init(&wg);
	jd_wg_add(&wg, 1);
	struct jd_task_spec s = {.fn = b, .arg = ba, .wg = &wg};
	jd_task_fill(t, &s);
	jd_bump(&w->created, 1);
	if (jd_deque_push(&w->deque, t)) {
		t->wg = NULL;
		jd_task_complete(w, t);
		a(aa);
		b(ba);
		return;
	}
	jd_wake_one(w->pool, NULL);
	a(aa);
	w = jd_self(); /* a() may have suspended and moved this fiber */
	struct jd_task *x = jd_deque_pop(&w->deque);
	if (x == t && x->kind == JD_TK_USER && !(x->flags & JD_TASK_FIBER)) {
		x->fn(x->arg);
		jd_task_complete(jd_self(), x);
	} else if (x) {
		jd_deque_push(&w->deque, x); /* cannot fail: its slot was just freed */
	}
	jd_wg_wait(&wg);
}

struct pfor {
	jd_range_fn body;
	void *ctx;
	size_t grain;
	struct jd_pool *pool;
	struct jd_wg wg;	/* the caller's share + claimed offers + spawned ranges */
	/* Outside callers only: the offer cell and the references of claim tasks. */
	atomic_uint lock;	/* over the cell */
	bool offered;		/* the cell holds [offer_lo, offer_hi) (lock) */
	size_t offer_lo, offer_hi;
	atomic_int refs;	/* the caller + queued claim tasks; the last frees */
};

struct range {
	struct pfor *pf;
	size_t lo, hi;
};
_Static_assert(sizeof(struct range) <= JD_TASK_PAYLOAD_MAX, "a range fits in a task");

static void run_range(struct pfor *pf, size_t lo, size_t hi);

static void range_task(void *arg)
{
	struct range *r = arg;
	run_range(r->pf, r->lo, r->hi);
}

/* run_range: a worker's part: split off the upper half while the deque is empty. */
static void run_range(struct pfor *pf, size_t lo, size_t hi)
{
	size_t g = pf->grain;
	while (hi - lo > g) {
		struct jd_worker *w = jd_self();
		if (w && w->pool == pf->pool && hi - lo >= 2 * g &&
		    jd_deque_size(&w->deque) == 0) {
			struct range up = {pf, lo + (hi - lo) / 2, hi};
			struct jd_task_spec s = {.fn = range_task,
						 .payload = &up,
						 .payload_len = sizeof(up),
						 .wg = &pf->wg};
			jd_wg_add(&pf->wg, 1);
			if (jd_spawn(&s) == 0) {
				hi = up.lo;
				continue;
			}
			jd_wg_done(&pf->wg); /* could not spawn: do it all here */
		}
		pf->body(pf->ctx, lo, lo + g);
		lo += g;
	}
	if (lo < hi)
		pf->body(pf->ctx, lo, hi);
}

static void pfor_unref(struct pfor *pf)
{
	if (atomic_fetch_sub_explicit(&pf->refs, 1, memory_order_acq_rel) == 1)
		free(pf);
}

/* take_offer: empty the cell into [*lo, *hi); false if it was empty. */
static bool take_offer(struct pfor *pf, size_t *lo, size_t *hi, bool count)
{
	jd_spin_lock(&pf->lock);
	bool got = pf->offered;
	if (got) {
		*lo = pf->offer_lo;
		*hi = pf->offer_hi;
		pf->offered = false;
		if (count) /* the caller still holds its count, so no zero crossing */
			jd_wg_add(&pf->wg, 1);
	}
	jd_spin_unlock(&pf->lock);
	return got;
}

/* claim_task: a worker takes the outside caller's offer, if the caller has not taken it
 * back yet. */
static void claim_task(void *arg)
{
	struct pfor *pf = arg;
	size_t lo, hi;
	if (take_offer(pf, &lo, &hi, true)) {
		/* Under an immediate destroy the claim still runs (JD_TASK_KEEP) to drop its
		 * reference; the range it took is dropped. */
		if (atomic_load_explicit(&pf->pool->stopping, memory_order_relaxed) !=
		    JD_STOP_IMMEDIATE)
			run_range(pf, lo, hi);
		jd_wg_done(&pf->wg);
	}
	pfor_unref(pf);
}

/* run_outside: an outside caller's part of [lo, hi): whenever the cell is empty, put the
 * upper half of what is left in it and queue a claim task; work through the rest; then
 * take back an offer nobody claimed and go on with it.  If the pool refuses a claim task
 * (out of memory, shutting down), the caller takes the offer back and does the work. */
static void run_outside(struct pfor *pf, size_t lo, size_t hi)
{
	size_t g = pf->grain;
	do {
		while (hi - lo > g) {
			if (hi - lo >= 2 * g) {
				size_t mid = lo + (hi - lo) / 2;
				jd_spin_lock(&pf->lock);
				bool free_cell = !pf->offered;
				if (free_cell) {
					pf->offer_lo = mid;
					pf->offer_hi = hi;
					pf->offered = true;
				}
				jd_spin_unlock(&pf->lock);
				if (free_cell) {
					atomic_fetch_add_explicit(&pf->refs, 1, memory_order_relaxed);
					struct jd_task_spec s = {
						.fn = claim_task, .arg = pf, .flags = JD_TASK_KEEP};
					if (jd_pool_submit(pf->pool, &s) == 0) {
						hi = mid;
						continue;
					}
					atomic_fetch_sub_explicit(&pf->refs, 1, memory_order_relaxed);
					size_t l2, h2; /* take it back; keep going alone */
					take_offer(pf, &l2, &h2, false);
				}
			}
			pf->body(pf->ctx, lo, lo + g);
			lo += g;
		}
		if (lo < hi)
			pf->body(pf->ctx, lo, hi);
	} while (take_offer(pf, &lo, &hi, false));
}

int jd_parallel_for(struct jd_pool *p, size_t begin, size_t end, size_t grain,
		    jd_range_fn body, void *ctx)
{
	if (end <= begin)
		return 0;
	struct jd_worker *w = jd_self();
	if (w && w->pool == p) {
		struct pfor pf = {.body = body, .ctx = ctx, .grain = grain ? grain : 1, .pool = p};
		jd_wg_init(&pf.wg);
		jd_wg_add(&pf.wg, 1); /* the caller's count, held until its part is done */
		run_range(&pf, begin, end);
		jd_wg_done(&pf.wg);
		jd_wg_wait(&pf.wg);
		return 0;
	}
	/* Outside the pool: claim tasks may run after we return, so pf lives on the heap. */
	struct pfor *pf = malloc(sizeof(*pf));
	if (!pf)
		return JSCHED_ENOMEM;
	*pf = (struct pfor){.body = body, .ctx = ctx, .grain = grain ? grain : 1, .pool = p};
	jd_wg_init(&pf->wg);
	atomic_init(&pf->lock, 0);
	atomic_init(&pf->refs, 1);
	jd_wg_add(&pf->wg, 1);
	run_outside(pf, begin, end);
	jd_wg_done(&pf->wg);
	jd_wg_wait(&pf->wg);
	pfor_unref(pf);
	return 0;
}
