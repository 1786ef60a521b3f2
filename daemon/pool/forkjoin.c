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
 * the pool works too (as oneTBB's and OpenMP's callers do): it submits the upper half,
 * works through the lower one, and offers half of what it has left again each time a
 * range task has started since its last offer; the first chunk then starts at once rather
 * than after a hand-off to a worker.  The caller keeps one count in the wait group while
 * it works on its own part, so the count cannot reach zero while pieces are still being
 * added.
 */
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
	struct jd_wg wg;
	atomic_bool taken;	/* a range task has started since the outside caller's
				 * last offer (outside callers only) */
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
	if (!atomic_load_explicit(&r->pf->taken, memory_order_relaxed))
		atomic_store_explicit(&r->pf->taken, true, memory_order_relaxed);
	run_range(r->pf, r->lo, r->hi);
}

/* run_outside: the part of an outside caller: offer the upper half of what is left to
 * the pool whenever the previous offer has been taken, work through the rest. */
static int run_outside(struct pfor *pf, size_t lo, size_t hi)
{
	size_t g = pf->grain;
	bool offered = false;
	while (hi - lo > g) {
		if (hi - lo >= 2 * g &&
		    (!offered || atomic_load_explicit(&pf->taken, memory_order_relaxed))) {
			struct range up = {pf, lo + (hi - lo) / 2, hi};
			struct jd_task_spec s = {.fn = range_task,
						 .payload = &up,
						 .payload_len = sizeof(up),
						 .wg = &pf->wg};
			atomic_store_explicit(&pf->taken, false, memory_order_relaxed);
			jd_wg_add(&pf->wg, 1);
			int rc = jd_pool_submit(pf->pool, &s);
			if (rc) {
				jd_wg_done(&pf->wg);
				if (!offered)
					return rc; /* nothing handed over: refuse the whole loop */
			} else {
				offered = true;
				hi = up.lo;
				continue;
			}
		}
		pf->body(pf->ctx, lo, lo + g);
		lo += g;
	}
	if (lo < hi)
		pf->body(pf->ctx, lo, hi);
	return 0;
}

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

int jd_parallel_for(struct jd_pool *p, size_t begin, size_t end, size_t grain,
		    jd_range_fn body, void *ctx)
{
	if (end <= begin)
		return 0;
	struct pfor pf = {.body = body, .ctx = ctx, .grain = grain ? grain : 1, .pool = p};
	jd_wg_init(&pf.wg);
	atomic_init(&pf.taken, false);
	jd_wg_add(&pf.wg, 1); /* the caller's count, held until its own part is done */
	struct jd_worker *w = jd_self();
	int rc = 0;
	if (w && w->pool == p)
		run_range(&pf, begin, end);
	else
		rc = run_outside(&pf, begin, end);
	jd_wg_done(&pf.wg);
	jd_wg_wait(&pf.wg);
	return rc;
}
