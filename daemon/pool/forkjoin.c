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
 * halves early; a busy pool pays one owner-only size check per chunk.  The caller keeps
 * one count in the wait group while it works on its own part, so the count cannot reach
 * zero (and the group's event cannot be set) while pieces are still being added.
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
	jd_wg_add(&pf.wg, 1); /* the root's count, held until the root's part is done */
	struct jd_worker *w = jd_self();
	if (w && w->pool == p) {
		run_range(&pf, begin, end);
		jd_wg_done(&pf.wg);
	} else {
		struct range r = {&pf, begin, end};
		struct jd_task_spec s = {
			.fn = range_task, .payload = &r, .payload_len = sizeof(r), .wg = &pf.wg};
		int rc = jd_pool_submit(p, &s);
		if (rc)
			return rc;
	}
	jd_wg_wait(&pf.wg);
	return 0;
}
