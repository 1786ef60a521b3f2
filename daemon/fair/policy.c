/* daemon/fair/policy.c: which backlogged client is served next.
 *
 * Only backlogged clients (queued > 0) are in the policy's structure, so choosing costs
 * nothing for the idle ones:
 *
 * - fair: a min-heap of clients keyed by vtime, the client's charged service divided by
 *   its weight.  Pick is the top, O(1); serving
 *   charges the client an estimate and sifts it down, O(log clients); a completion
 *   corrects the charge to the measured run time and sifts the client if it is in the
 *   heap.  A client entering the heap starts no lower than the least vtime there (or the
 *   latest dispatched one when the heap is empty), so an idle spell banks no credit.
 * - wrr and drr: a ring of the backlogged clients and a cursor on the one being served.
 *   A client entering the ring goes just before the cursor, at the end of the current
 *   round, so it never jumps ahead of clients already waiting.  wrr serves `weight` jobs
 *   per turn; drr adds weight x quantum to the client's deficit per turn and serves jobs
 *   while the head job's cost fits.  O(1) per job (drr: when quantum >= largest cost).
 * - the scan baseline (config scan_select, for the benchmark only): the same three
 *   policies, choosing by walking the whole registry as the seed design does, O(clients)
 *   per choice for fair and O(clients / backlogged) for the rings.
 *
 * The heap's shape (4-ary, keys inline, aligned) was chosen by measurement at 10,000
 * clients; README.md has the figures.  Caller holds the instance lock for everything.
 */
#include <stddef.h>
#include <stdint.h>

#include "daemon/fair/fair_internal.h"

/* ---- fair: the heap of clients by vtime ------------------------------------------- */

/* A 4-ary heap whose entries carry the key and the client's registry index, and whose
 * positions are kept in a dense array by registry index (heap_pos), so a sift touches
 * only those two arrays (four children in one cache line), never a client record.
 * Equal keys are left in whatever order the heap has them (deterministic, but not
 * registration order): a tie-break would cost a second comparison per child, and ties
 * are common.  A served client usually sinks to the bottom (it was just charged), so
 * sift_down first walks the path of least children to a leaf and then climbs back
 * (Floyd's bottom-up variant): three comparisons per level instead of four, two of
 * them independent (a tournament).  README.md has the figures. */
#define ARITY 4

/* The heap orders clients by vtime in 1/16 ns, as integers: an integer comparison is
 * shorter than a floating-point one on the sift's dependency chain (65 -> 53 ns per
 * cycle at 100 clients).  1/16 ns is far below any charge, and 2^64 / 16 ns is 36 years
 * of one weight-1 client's service. */
static inline uint64_t vkey(double vtime)
{
	double k = vtime * 16;

	if (k <= 0)
		return 0;
	return k < 0x1p64 ? (uint64_t)k : UINT64_MAX;
}

static inline bool ent_less(const struct jd_fair_hent *a, const struct jd_fair_hent *b)
{
	return a->key < b->key;
}

static bool key_less(const struct jd_fair_client *a, const struct jd_fair_client *b)
{
	return a->vtime < b->vtime;
}

static inline void heap_put(struct jd_fair *f, size_t i, struct jd_fair_hent e)
{
	f->heap[i] = e;
	f->heap_pos[e.ci] = (uint32_t)i;
}

static inline size_t pos_of(const struct jd_fair *f, const struct jd_fair_client *c)
{
	return f->heap_pos[c->reg_idx];
}

static void sift_up(struct jd_fair *f, size_t i)
{
	struct jd_fair_hent e = f->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / ARITY;
		if (!ent_less(&e, &f->heap[p]))
			break;
		heap_put(f, i, f->heap[p]);
		i = p;
	}
	heap_put(f, i, e);
}

/* The least child of i, or SIZE_MAX for a leaf. */
static inline size_t least_child(const struct jd_fair *f, size_t i)
{
	size_t first = ARITY * i + 1, best = first, end = first + ARITY;

	if (first >= f->heap_n)
		return SIZE_MAX;
	if (end <= f->heap_n) {
		/* All four: a tournament, two independent comparisons then one. */
		const struct jd_fair_hent *h = f->heap;
		size_t a = first + (h[first + 1].key < h[first].key);
		size_t b = first + 2 + (h[first + 3].key < h[first + 2].key);
		return h[b].key < h[a].key ? b : a;
	}
	end = f->heap_n;
	for (size_t k = first + 1; k < end; k++)
		best = f->heap[k].key < f->heap[best].key ? k : best;
	return best;
}

static void sift_down(struct jd_fair *f, size_t i)
{
	struct jd_fair_hent e = f->heap[i];
	size_t hole = i, k;

	/* Down to a leaf along the least children, moving each up one level ... */
	while ((k = least_child(f, hole)) != SIZE_MAX) {
		heap_put(f, hole, f->heap[k]);
		hole = k;
	}
	/* ... then back up to where e belongs (rarely far). */
	while (hole > i) {
		size_t p = (hole - 1) / ARITY;
		if (!ent_less(&e, &f->heap[p]))
			break;
		heap_put(f, hole, f->heap[p]);
		hole = p;
	}
	heap_put(f, hole, e);
}

/* The client's vtime has changed: move it to its place. */
static void heap_update(struct jd_fair *f, struct jd_fair_client *c, bool up)
{
	f->heap[pos_of(f, c)].key = vkey(c->vtime);
	if (up)
		sift_up(f, pos_of(f, c));
	else
		sift_down(f, pos_of(f, c));
}

static void heap_insert(struct jd_fair *f, struct jd_fair_client *c)
{
	struct jd_fair_hent e = {vkey(c->vtime), (uint32_t)c->reg_idx, 0};

	heap_put(f, f->heap_n++, e);
	sift_up(f, f->heap_n - 1);
}

static void heap_remove(struct jd_fair *f, struct jd_fair_client *c)
{
	size_t i = pos_of(f, c);
	struct jd_fair_hent last = f->heap[--f->heap_n];

	f->heap_pos[c->reg_idx] = JD_FAIR_NOPOS;
	if (last.ci == c->reg_idx)
		return;
	heap_put(f, i, last);
	sift_up(f, i);
	sift_down(f, f->heap_pos[last.ci]);
}

static double vtime_floor(const struct jd_fair *f)
{
	if (!f->scan_select && f->heap_n > 0)
		return f->clients[f->heap[0].ci]->vtime;
	return f->vnow;
}

static double charge(struct jd_fair *f, struct jd_fair_client *c)
{
	double est = c->est_known ? c->est_ns : (double)f->fair_estimate_ns;
	double charged = est / (double)c->cfg.weight;

	if (c->vtime > f->vnow)
		f->vnow = c->vtime;
	c->vtime += charged;
	return charged;
}

/* ---- wrr and drr: the ring of backlogged clients ------------------------------------ */

static void ring_insert(struct jd_fair *f, struct jd_fair_client *c)
{
	struct jd_fair_client *cur = f->cur;

	c->visited = false;
	c->deficit = 0;
	f->ring_n++;
	if (cur == NULL) {
		c->rnext = c->rprev = c;
		f->cur = c;
		return;
	}
	/* Just before the cursor: the end of the current round. */
	c->rnext = cur;
	c->rprev = cur->rprev;
	cur->rprev->rnext = c;
	cur->rprev = c;
}

static void ring_remove(struct jd_fair *f, struct jd_fair_client *c)
{
	f->ring_n--;
	if (c->rnext == c) {
		f->cur = NULL;
	} else {
		if (f->cur == c)
			f->cur = c->rnext;
		c->rprev->rnext = c->rnext;
		c->rnext->rprev = c->rprev;
	}
	c->rnext = c->rprev = NULL;
	c->visited = false;
	c->deficit = 0;
}

static uint64_t quantum(const struct jd_fair *f)
{
	uint32_t q = f->drr_quantum;

	if (q == 0)
		q = f->max_cost > f->max_cost_prev ? f->max_cost : f->max_cost_prev;
	return q != 0 ? q : 1;
}

/* drr: a whole pass over the ring found no client whose head job fits its deficit (the
 * quantum is below some costs).  Rather than walk the ring again and again, give every
 * client at once the quanta of the empty rounds that would pass before the first one
 * can send: O(ring) per jump, and the next pass sends.  (The next pass adds one more
 * quantum to each client as it visits: k - 1 here.) */
static void drr_jump(struct jd_fair *f)
{
	uint64_t q = quantum(f), k = UINT64_MAX;
	struct jd_fair_client *c = f->cur;

	do {
		uint64_t per = (uint64_t)c->cfg.weight * q;
		uint64_t need = jd_fair_job_cost(jd_fq_head(c)) - c->deficit; /* > 0 */
		uint64_t rounds = (need + per - 1) / per;
		if (rounds < k)
			k = rounds;
		c = c->rnext;
	} while (c != f->cur);
	do {
		c->deficit += (k - 1) * c->cfg.weight * q;
		c = c->rnext;
	} while (c != f->cur);
}

/* jd_fp_note_cost: an admitted job's cost, for drr's default quantum. */
void jd_fp_note_cost(struct jd_fair *f, uint32_t cost)
{
	if (cost > f->max_cost)
		f->max_cost = cost;
	if (++f->cost_count == 4096) {
		f->max_cost_prev = f->max_cost;
		f->max_cost = 0;
		f->cost_count = 0;
	}
}

/* Start client c's turn if it has not started: wrr sets its job allowance, drr adds its
 * quantum.  Returns whether c may send its head job now. */
static bool turn(struct jd_fair *f, struct jd_fair_client *c)
{
	if (f->policy == JD_FAIR_POLICY_WRR) {
		if (!c->visited) {
			c->left = c->cfg.weight;
			c->visited = true;
		}
		return true;
	}
	uint64_t grant = (uint64_t)c->cfg.weight * quantum(f);
	if (!c->visited) {
		c->deficit += grant;
		c->visited = true;
	} else if (c->deficit > grant) {
		c->deficit = grant;	/* the default quantum shrank mid-turn: end the long turn */
	}
	return jd_fair_job_cost(jd_fq_head(c)) <= c->deficit;
}

/* Whether client c's turn is over after serving `job` (c->queued already counts it out). */
static bool turn_over(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_job *job,
		      bool emptied)
{
	if (f->policy == JD_FAIR_POLICY_WRR) {
		c->left--;
		return emptied || c->left == 0;
	}
	c->deficit -= jd_fair_job_cost(job);
	return emptied;	/* else the next pick checks whether the head fits */
}

/* ---- the scan baseline ------------------------------------------------------------- */

static struct jd_fair_client *scan_pick(struct jd_fair *f)
{
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		struct jd_fair_client *best = NULL;
		for (size_t i = 0; i < f->nclients; i++) {
			struct jd_fair_client *c = f->clients[i];
			if (c->queued > 0 && (best == NULL || key_less(c, best)))
				best = c;
		}
		return best;
	}
	for (;;) {
		if (f->scan_cur >= f->nclients)
			f->scan_cur = 0;
		struct jd_fair_client *c = f->clients[f->scan_cur];
		if (c->queued > 0 && turn(f, c))
			return c;
		c->visited = false;
		f->scan_cur++;
	}
}

/* ---- the interface used by fair.c --------------------------------------------------- */

/* jd_fp_enter: client c has just become backlogged; add it to the policy's structure. */
void jd_fp_enter(struct jd_fair *f, struct jd_fair_client *c)
{
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		double floor = vtime_floor(f);
		if (c->vtime < floor)
			c->vtime = floor;
		if (!f->scan_select)
			heap_insert(f, c);
	} else if (!f->scan_select) {
		ring_insert(f, c);
	} else {
		c->visited = false;
		c->deficit = 0;
	}
}

/* jd_fp_leave: client c's queue has become empty by a cancel, drain, expiry or drop (not
 * by being served); take it out of the policy's structure. */
void jd_fp_leave(struct jd_fair *f, struct jd_fair_client *c)
{
	if (f->scan_select) {
		c->visited = false;
		c->deficit = 0;
	} else if (f->policy == JD_FAIR_POLICY_FAIR) {
		heap_remove(f, c);
	} else {
		ring_remove(f, c);
	}
}

/* jd_fp_pick: the client whose head job goes next (some client must be backlogged). */
struct jd_fair_client *jd_fp_pick(struct jd_fair *f)
{
	if (f->scan_select)
		return scan_pick(f);
	if (f->policy == JD_FAIR_POLICY_FAIR)
		return f->clients[f->heap[0].ci];
	for (size_t visits = 0;; visits++) {
		struct jd_fair_client *c = f->cur;
		if (visits == f->ring_n) {	/* drr only: wrr always sends */
			drr_jump(f);
			visits = 0;
		}
		if (turn(f, c))
			return c;
		c->visited = false;
		f->cur = c->rnext;
	}
}

/* jd_fp_served: client c's head `job` is being dispatched (called before it leaves the
 * queue; `emptied` tells whether it is c's last queued job): charge c and move the policy
 * on.  Returns the charge to record in job->charge (policy fair; else 0).  For `fair` it
 * does not touch the job, so the caller can let the job's cache miss overlap the sift. */
double jd_fp_served(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_job *job,
		    bool emptied)
{
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		double charged = charge(f, c);
		if (f->scan_select)
			return charged;
		if (emptied)
			heap_remove(f, c);
		else
			heap_update(f, c, false);
		return charged;
	}
	if (!turn_over(f, c, job, emptied))
		return 0;
	if (f->scan_select) {
		c->visited = false;
		if (emptied)
			c->deficit = 0;
		f->scan_cur++;
	} else if (emptied) {
		ring_remove(f, c);
	} else {
		c->visited = false;
		f->cur = c->rnext;
	}
	return 0;
}

/* jd_fp_prefetch: start loading the record of the client likely to be picked next. */
void jd_fp_prefetch(const struct jd_fair *f)
{
	const struct jd_fair_client *c = NULL;

	if (f->scan_select)
		return;
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		if (f->heap_n > 0)
			c = f->clients[f->heap[0].ci];
	} else {
		c = f->cur;
	}
	if (c == NULL)
		return;
	__builtin_prefetch(c, 1);
	__builtin_prefetch(&c->pq[JD_FAIR_CRITICAL], 1);
	__builtin_prefetch(&c->pq[JD_FAIR_NORMAL], 1);
	__builtin_prefetch(&c->ctr, 1);
}

/* jd_fp_correct: policy fair: add delta to client c's vtime (a completion's correction of
 * the estimate charged at dispatch) and restore the heap order. */
void jd_fp_correct(struct jd_fair *f, struct jd_fair_client *c, double delta)
{
	c->vtime += delta;
	if (delta == 0 || f->policy != JD_FAIR_POLICY_FAIR || f->scan_select ||
	    pos_of(f, c) == JD_FAIR_NOPOS)
		return;
	heap_update(f, c, delta < 0);
}

/* jd_fp_renumber: the client at registry index `from` has moved to index `to` (a
 * removal filled its hole); follow it in the heap. */
void jd_fp_renumber(struct jd_fair *f, size_t from, size_t to)
{
	uint32_t pos = f->heap_pos[from];

	f->heap_pos[to] = pos;
	f->heap_pos[from] = JD_FAIR_NOPOS;
	if (pos != JD_FAIR_NOPOS)
		f->heap[pos].ci = (uint32_t)to;
}

/* jd_fp_rebuild: after a policy switch, rebuild the structure from the backlogged
 * clients, all on equal footing (same vtime, empty deficits, fresh turns). */
void jd_fp_rebuild(struct jd_fair *f)
{
	f->heap_n = 0;
	f->cur = NULL;
	f->ring_n = 0;
	f->scan_cur = 0;
	for (size_t i = 0; i < f->nclients; i++) {
		struct jd_fair_client *c = f->clients[i];
		f->heap_pos[i] = JD_FAIR_NOPOS;
		c->rnext = c->rprev = NULL;
		c->visited = false;
		c->deficit = 0;
		c->left = 0;
		c->vtime = f->vnow;
	}
	for (size_t i = 0; i < f->nclients; i++) {
		if (f->clients[i]->queued > 0)
			jd_fp_enter(f, f->clients[i]);
	}
}
