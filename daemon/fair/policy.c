/* daemon/fair/policy.c: which backlogged client is served next.
 *
 * Only backlogged clients (queued > 0) are in the policy's structure, so choosing costs
 * nothing for the idle ones:
 *
 * - fair: a binary min-heap of clients keyed by (vtime, registration id), where vtime is
 *   the client's charged service divided by its weight.  Pick is the top, O(1); serving
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
 * A 4-ary heap and a pairing heap of clients were considered for `fair`; see README.md
 * for what was measured.  Caller holds the instance lock for everything here.
 */
#include <stddef.h>
#include <stdint.h>

#include "daemon/fair/fair_internal.h"

/* ---- fair: the heap of clients by (vtime, id) --------------------------------------- */

static bool key_less(const struct jd_fair_client *a, const struct jd_fair_client *b)
{
	if (a->vtime != b->vtime)
		return a->vtime < b->vtime;
	return a->id < b->id;
}

static void heap_put(struct jd_fair *f, size_t i, struct jd_fair_client *c)
{
	f->heap[i] = c;
	c->heap_idx = i;
}

static void sift_up(struct jd_fair *f, size_t i)
{
	struct jd_fair_client *c = f->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!key_less(c, f->heap[p]))
			break;
		heap_put(f, i, f->heap[p]);
		i = p;
	}
	heap_put(f, i, c);
}

static void sift_down(struct jd_fair *f, size_t i)
{
	struct jd_fair_client *c = f->heap[i];
	size_t n = f->heap_n;

	for (;;) {
		size_t l = 2 * i + 1, m = l;
		if (l >= n)
			break;
		if (l + 1 < n && key_less(f->heap[l + 1], f->heap[l]))
			m = l + 1;
		if (!key_less(f->heap[m], c))
			break;
		heap_put(f, i, f->heap[m]);
		i = m;
	}
	heap_put(f, i, c);
}

static void heap_remove(struct jd_fair *f, struct jd_fair_client *c)
{
	size_t i = c->heap_idx;
	struct jd_fair_client *last = f->heap[--f->heap_n];

	c->heap_idx = SIZE_MAX;
	if (last == c)
		return;
	heap_put(f, i, last);
	sift_up(f, i);
	sift_down(f, last->heap_idx);
}

static double vtime_floor(const struct jd_fair *f)
{
	if (!f->scan_select && f->heap_n > 0)
		return f->heap[0]->vtime;
	return f->vnow;
}

static void charge(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job)
{
	double est = c->est_known ? c->est_ns : (double)f->fair_estimate_ns;

	if (c->vtime > f->vnow)
		f->vnow = c->vtime;
	job->charge = est / (double)c->cfg.weight;
	c->vtime += job->charge;
}

/* ---- wrr and drr: the ring of backlogged clients ------------------------------------ */

static void ring_insert(struct jd_fair *f, struct jd_fair_client *c)
{
	struct jd_fair_client *cur = f->cur;

	c->visited = false;
	c->deficit = 0;
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
	uint32_t q = f->drr_quantum != 0 ? f->drr_quantum : f->max_cost;
	return q != 0 ? q : 1;
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
	if (!c->visited) {
		c->deficit += (uint64_t)c->cfg.weight * quantum(f);
		c->visited = true;
	}
	return jd_fair_job_cost(jd_fq_head(c)) <= c->deficit;
}

/* Whether client c's turn is over after serving `job` (c->queued already counts it out). */
static bool turn_over(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_job *job)
{
	if (f->policy == JD_FAIR_POLICY_WRR) {
		c->left--;
		return c->queued == 0 || c->left == 0;
	}
	c->deficit -= jd_fair_job_cost(job);
	return c->queued == 0;	/* else the next pick checks whether the head fits */
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
		if (!f->scan_select) {
			heap_put(f, f->heap_n++, c);
			sift_up(f, c->heap_idx);
		}
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
		return f->heap[0];
	for (;;) {
		struct jd_fair_client *c = f->cur;
		if (turn(f, c))
			return c;
		c->visited = false;
		f->cur = c->rnext;
	}
}

/* jd_fp_served: `job`, client c's head, has just been taken out of its queue (c->queued
 * already excludes it) and dispatched: charge c and move the policy on. */
void jd_fp_served(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job)
{
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		charge(f, c, job);
		if (f->scan_select)
			return;
		if (c->queued == 0)
			heap_remove(f, c);
		else
			sift_down(f, c->heap_idx);
		return;
	}
	job->charge = 0;
	if (!turn_over(f, c, job))
		return;
	if (f->scan_select) {
		c->visited = false;
		if (c->queued == 0)
			c->deficit = 0;
		f->scan_cur++;
	} else if (c->queued == 0) {
		ring_remove(f, c);
	} else {
		c->visited = false;
		f->cur = c->rnext;
	}
}

/* jd_fp_correct: policy fair: add delta to client c's vtime (a completion's correction of
 * the estimate charged at dispatch) and restore the heap order. */
void jd_fp_correct(struct jd_fair *f, struct jd_fair_client *c, double delta)
{
	c->vtime += delta;
	if (f->policy != JD_FAIR_POLICY_FAIR || f->scan_select || c->heap_idx == SIZE_MAX)
		return;
	if (delta < 0)
		sift_up(f, c->heap_idx);
	else
		sift_down(f, c->heap_idx);
}

/* jd_fp_rebuild: after a policy switch, rebuild the structure from the backlogged
 * clients, all on equal footing (same vtime, empty deficits, fresh turns). */
void jd_fp_rebuild(struct jd_fair *f)
{
	f->heap_n = 0;
	f->cur = NULL;
	f->scan_cur = 0;
	for (size_t i = 0; i < f->nclients; i++) {
		struct jd_fair_client *c = f->clients[i];
		c->heap_idx = SIZE_MAX;
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
