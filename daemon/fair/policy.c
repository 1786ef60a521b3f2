/* daemon/fair/policy.c: which client is served next.
 *
 * The scheduling entity is a flow: one client's queued jobs of one needs class.  Each
 * class has its own policy structure over the flows that may be served (jobs queued,
 * client neither paused nor at its max_running, nor at a per-resource maximum that the
 * class's needs would pass); a client whose jobs do not fit is simply not looked at in
 * that class, and keeps its place.  Choosing looks at the classes whose needs fit the
 * free capacity (a bit mask, `fit`) and takes the best of their candidates, so a
 * client's call jobs are not held up behind its commands waiting for a process slot:
 *
 * - fair: per class, a min-heap of flows keyed by their client's vtime, the client's
 *   charged service divided by its weight (one vtime per client, shared by its flows).
 *   Pick is the least top among the fitting classes, O(classes); serving charges the
 *   client an estimate and sifts each of its flows, O(classes x log clients); a
 *   completion corrects the charge to the measured run time.  A client becoming active
 *   (its first flow entering a structure: after idling, a pause, a limit) starts no
 *   lower than the least vtime there (or the latest dispatched one when all are empty),
 *   so an idle or paused spell banks no credit.  A flow waiting for capacity stays in
 *   its heap with its vtime: it was not idle, it was refused.
 * - wrr and drr: per class, a ring of flows and a cursor on the one being served.  A
 *   ring with a cursor and "insert just before the cursor" is a FIFO of clients whose
 *   turn ends by moving to the tail; every flow carries the ticket of when it joined its
 *   tail, so each ring's cursor holds its least ticket, and the next client over all
 *   fitting classes is the cursor with the least ticket.  A client whose turn ends moves
 *   to the tail of every ring it is in, O(classes).  A client entering goes to the tail
 *   (the end of the current round), so it never jumps ahead of clients already waiting.
 *   wrr serves `weight` jobs per turn; drr adds weight x quantum to the client's deficit
 *   per turn and serves jobs while the head job's cost fits.  O(classes) per job (drr:
 *   when quantum >= largest cost).
 * - the scan baseline (config scan_select, for the benchmark only, class 0 only): the
 *   same three policies, choosing by walking the whole registry as the seed design does,
 *   O(clients) per choice for fair and O(clients / backlogged) for the rings.
 *
 * With class 0 alone (jobs that need nothing) each structure is the single heap or ring
 * it was before classes existed.  The heap's shape (4-ary, keys inline, aligned) was
 * chosen by measurement at 10,000 clients; README.md has the figures.  Caller holds the
 * instance lock for everything.
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

static inline void heap_put(struct jd_fair_cls *h, size_t i, struct jd_fair_hent e)
{
	h->heap[i] = e;
	h->heap_pos[e.ci] = (uint32_t)i;
}

static inline size_t pos_of(const struct jd_fair_cls *h, const struct jd_fair_client *c)
{
	return h->heap_pos[c->reg_idx];
}

static void sift_up(struct jd_fair_cls *h, size_t i)
{
	struct jd_fair_hent e = h->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / ARITY;
		if (!ent_less(&e, &h->heap[p]))
			break;
		heap_put(h, i, h->heap[p]);
		i = p;
	}
	heap_put(h, i, e);
}

/* The least child of i, or SIZE_MAX for a leaf. */
static inline size_t least_child(const struct jd_fair_cls *h, size_t i)
{
	size_t first = ARITY * i + 1, best = first, end = first + ARITY;

	if (first >= h->heap_n)
		return SIZE_MAX;
	if (end <= h->heap_n) {
		/* All four: a tournament, two independent comparisons then one. */
		const struct jd_fair_hent *e = h->heap;
		size_t a = first + (e[first + 1].key < e[first].key);
		size_t b = first + 2 + (e[first + 3].key < e[first + 2].key);
		return e[b].key < e[a].key ? b : a;
	}
	end = h->heap_n;
	for (size_t k = first + 1; k < end; k++)
		best = h->heap[k].key < h->heap[best].key ? k : best;
	return best;
}

static void sift_down(struct jd_fair_cls *h, size_t i)
{
	struct jd_fair_hent e = h->heap[i];
	size_t hole = i, k;

	/* Down to a leaf along the least children, moving each up one level ... */
	while ((k = least_child(h, hole)) != SIZE_MAX) {
		heap_put(h, hole, h->heap[k]);
		hole = k;
	}
	/* ... then back up to where e belongs (rarely far). */
	while (hole > i) {
		size_t p = (hole - 1) / ARITY;
		if (!ent_less(&e, &h->heap[p]))
			break;
		heap_put(h, hole, h->heap[p]);
		hole = p;
	}
	heap_put(h, hole, e);
}

/* The client's vtime has changed: move its flow to its place in class heap h. */
static void heap_update(struct jd_fair_cls *h, struct jd_fair_client *c, bool up)
{
	size_t i = pos_of(h, c);

	h->heap[i].key = vkey(c->vtime);
	if (up)
		sift_up(h, i);
	else
		sift_down(h, i);
}

static void heap_insert(struct jd_fair_cls *h, struct jd_fair_client *c)
{
	struct jd_fair_hent e = {vkey(c->vtime), (uint32_t)c->reg_idx, 0};

	heap_put(h, h->heap_n++, e);
	sift_up(h, h->heap_n - 1);
}

static void heap_remove(struct jd_fair_cls *h, struct jd_fair_client *c)
{
	size_t i = pos_of(h, c);
	struct jd_fair_hent last = h->heap[--h->heap_n];

	h->heap_pos[c->reg_idx] = JD_FAIR_NOPOS;
	if (last.ci == c->reg_idx)
		return;
	heap_put(h, i, last);
	sift_up(h, i);
	sift_down(h, h->heap_pos[last.ci]);
}

/* cls_head: the job class k would serve next (its best flow's head: the heap's top, the
 * ring's cursor), or NULL when its structure is empty. */
static const struct jd_fair_job *cls_head(const struct jd_fair *f, unsigned k)
{
	const struct jd_fair_cls *h = &f->cls[k];

	if (f->policy == JD_FAIR_POLICY_FAIR)
		return h->heap_n != 0 ? jd_fq_head(jd_fair_cflow_of(f->clients[h->heap[0].ci], k))
				      : NULL;
	return h->cur != NULL ? jd_fq_head(h->cur) : NULL;
}

/* need_of: the units of resource r that class h's job `job` holds (the class's need, or
 * for a per-job resource the job's amount; 0 without a job). */
static inline uint32_t need_of(const struct jd_fair_cls *h, const struct jd_fair_job *job,
			       unsigned r)
{
	if (!((h->vmask >> r) & 1u))
		return h->need[r];
	return job != NULL ? jd_fair_amount(h, job, r) : 0;
}

/* jd_fp_amounts_fit: whether job's own amounts of class h's per-job resources fit the
 * free capacity (an amount of 0 holds nothing and always fits). */
bool jd_fp_amounts_fit(const struct jd_fair *f, const struct jd_fair_cls *h,
		       const struct jd_fair_job *job)
{
	for (uint32_t m = h->vmask; m != 0; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);
		uint32_t a = jd_fair_amount(h, job, r);

		if (a != 0 && f->res_used[r] + (uint64_t)a > f->res_cap[r])
			return false;
	}
	return true;
}

/* jd_fp_job_factor: the DRF charge per ns of job, of class h with per-job resources: the
 * largest of the class's fixed dominant share and the job's amounts over the capacities
 * in force, at least drf_base, / drf_base (1 when DRF is off). */
double jd_fp_job_factor(const struct jd_fair *f, const struct jd_fair_cls *h,
			const struct jd_fair_job *job)
{
	double share = h->factor * f->drf_base;

	if (f->drf_base <= 0)
		return 1;
	for (uint32_t m = h->vmask & f->drf_mask; m != 0; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);
		uint32_t a = jd_fair_amount(h, job, r);
		double s = a == 0 ? 0 : f->res_cap[r] != 0 ? (double)a / (double)f->res_cap[r] : 1;

		if (s > share)
			share = s;
	}
	return share / f->drf_base;
}

/* jd_fp_fit: the classes whose needs fit the free capacity now: bit k for class k
 * (class 0 needs nothing and always fits; a class with per-job needs fits when its
 * head job's do).  O(classes x resources). */
unsigned jd_fp_fit(const struct jd_fair *f)
{
	return jd_fp_fit_among(f, ~0u);
}

/* jd_fp_fit_among: jd_fp_fit(f) & among, the classes outside among not looked at (each
 * class's fit is its own: a reservation only takes classes out). */
unsigned jd_fp_fit_among(const struct jd_fair *f, unsigned among)
{
	unsigned fit = 1;

	for (uint32_t cm = among & ~1u & ((1u << f->nclasses) - 1u); cm != 0; cm &= cm - 1) {
		uint32_t k = (uint32_t)__builtin_ctz(cm);
		const struct jd_fair_cls *h = &f->cls[k];
		bool ok = true;
		for (uint32_t m = h->rmask & ~h->vmask; m != 0 && ok; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctz(m);
			ok = f->res_used[r] + (uint64_t)h->need[r] <= f->res_cap[r];
		}
		if (ok && h->vmask != 0) {
			const struct jd_fair_job *head = cls_head(f, k);
			ok = head == NULL || jd_fp_amounts_fit(f, h, head);
		}
		if (ok)
			fit |= 1u << k;
	}
	if (f->resv >= 0) {
		/* A reservation: the classes that would take what the reserved class lacks
		 * (or, once it fits, any of what it needs) are left out until it goes. */
		const struct jd_fair_cls *r = &f->cls[f->resv];
		const struct jd_fair_job *head = r->vmask != 0 ? cls_head(f, (unsigned)f->resv) : NULL;
		uint32_t lack = 0, hold;

		for (uint32_t m = r->rmask; m != 0; m &= m - 1) {
			unsigned x = (unsigned)__builtin_ctz(m);
			if (f->res_used[x] + (uint64_t)need_of(r, head, x) > f->res_cap[x])
				lack |= 1u << x;
		}
		hold = lack != 0 ? lack : r->rmask;
		for (unsigned m = fit & ~(1u << f->resv); m != 0; m &= m - 1) {
			unsigned k = (unsigned)__builtin_ctz(m);
			if (f->cls[k].rmask & hold)
				fit &= ~(1u << k);
		}
	}
	return fit & among;
}

/* jd_fp_factors: each class's charge per ns under dominant resource fairness: its
 * dominant share over the counted resources (at least drf_base) / drf_base; 1 for every
 * class when DRF is off.  O(classes x resources); at each change of a capacity, a class,
 * the counted resources or drf_base. */
void jd_fp_factors(struct jd_fair *f)
{
	for (uint32_t k = 0; k < f->nclasses; k++) {
		struct jd_fair_cls *h = &f->cls[k];
		double share = f->drf_base;

		for (uint32_t m = h->rmask & f->drf_mask; m != 0 && f->drf_base > 0; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctz(m);
			/* A capacity of 0 cannot be held: count it as all of it. */
			double s = f->res_cap[r] != 0 ? (double)h->need[r] / (double)f->res_cap[r] : 1;
			if (s > share)
				share = s;
		}
		h->factor = f->drf_base > 0 ? share / f->drf_base : 1;
	}
}

/* jd_fp_passed: client c's job of class `k` is about to be dispatched while some classes do
 * not fit (`fit`): each of those that needs a resource class k takes, and whose best flow
 * is ahead of c in the policy's order (it would have gone first had it fitted), has been
 * passed over once more; at backfill_max passes its class gets the reservation (fair.h).
 * O(classes). */
void jd_fp_passed(struct jd_fair *f, unsigned fit, const struct jd_fair_client *c,
		  const struct jd_fair_job *job)
{
	unsigned k = job->cls;
	uint32_t takes = f->cls[k].rmask;
	uint64_t key = vkey(c->vtime);
	uint64_t ticket = jd_fair_cflow_of(c, k)->ticket;

	if (takes == 0 || f->backfill_max == UINT32_MAX || f->scan_select)
		return;
	/* A per-job resource the job holds none of is not taken. */
	for (uint32_t m = f->cls[k].vmask; m != 0; m &= m - 1)
		if (jd_fair_amount(&f->cls[k], job, (unsigned)__builtin_ctz(m)) == 0)
			takes &= ~(1u << __builtin_ctz(m));
	for (uint32_t j = 1; j < f->nclasses; j++) {
		struct jd_fair_cls *h = &f->cls[j];
		const struct jd_fair_job *head;
		bool ahead, possible = true;

		if ((fit >> j) & 1u || (f->cls_free >> j) & 1u || !(h->rmask & takes))
			continue;
		if (f->policy == JD_FAIR_POLICY_FAIR)
			ahead = h->heap_n != 0 && h->heap[0].key < key;
		else
			ahead = h->cur != NULL && h->cur->ticket < ticket;
		/* Needs more than there is at all: holding units would not help it. */
		head = h->vmask != 0 ? cls_head(f, j) : NULL;
		for (uint32_t m = h->rmask; m != 0 && possible; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctz(m);
			possible = need_of(h, head, r) <= f->res_cap[r];
		}
		if (ahead && possible && ++h->passes >= f->backfill_max) {
			f->resv = (int)j;
			f->reservations++;
			return;
		}
	}
}

/* The vtime a client becoming active starts from at least: the least vtime in the
 * heaps of the classes that fit now (a flow waiting for capacity may hold an old vtime:
 * it is no measure of where service is), else the latest dispatched one. */
static double vtime_floor(const struct jd_fair *f)
{
	double floor = f->vnow;
	bool any = false;

	if (f->scan_select)
		return floor;
	for (unsigned m = f->nclasses == 1 ? 1u : jd_fp_fit(f); m != 0; m &= m - 1) {
		const struct jd_fair_cls *h = &f->cls[__builtin_ctz(m)];
		if (h->heap_n == 0)
			continue;
		double v = f->clients[h->heap[0].ci]->vtime;
		if (!any || v < floor)
			floor = v;
		any = true;
	}
	return floor;
}

/* Client c's vtime has changed by delta: restore the order of every heap it is in. */
static void vtime_moved(struct jd_fair *f, struct jd_fair_client *c, bool up, unsigned skip)
{
	for (unsigned m = c->inmask & ~skip; m != 0; m &= m - 1)
		heap_update(&f->cls[__builtin_ctz(m)], c, up);
}

/* charge: add the estimate of a job of flow fl (its client c's, of its class) to c's
 * vtime; returns the charge. */
static double charge(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_flow *fl,
		     double factor)
{
	double est = fl->est_known ? fl->est_ns : (double)f->fair_estimate_ns;
	double charged = est * factor / (double)c->weight;

	if (c->vtime > f->vnow)
		f->vnow = c->vtime;
	c->vtime += charged;
	return charged;
}

/* ---- wrr and drr: the rings of flows ------------------------------------------------- */

/* Flow fl joins the tail of its class's ring: just before the cursor, the end of the
 * current round. */
static void ring_insert(struct jd_fair *f, struct jd_fair_cls *h, struct jd_fair_flow *fl)
{
	struct jd_fair_flow *cur = h->cur;

	fl->ticket = ++f->ticket;
	h->ring_n++;
	if (cur == NULL) {
		fl->rnext = fl->rprev = fl;
		h->cur = fl;
		return;
	}
	fl->rnext = cur;
	fl->rprev = cur->rprev;
	cur->rprev->rnext = fl;
	cur->rprev = fl;
}

static void ring_remove(struct jd_fair_cls *h, struct jd_fair_flow *fl)
{
	h->ring_n--;
	if (fl->rnext == fl) {
		h->cur = NULL;
	} else {
		if (h->cur == fl)
			h->cur = fl->rnext;
		fl->rprev->rnext = fl->rnext;
		fl->rnext->rprev = fl->rprev;
	}
	fl->rnext = fl->rprev = NULL;
}

/* Client c's turn is over: each of its flows goes to the tail of its ring (for the
 * cursor that is one step of the cursor, as in a plain ring). */
static void turn_end(struct jd_fair *f, struct jd_fair_client *c)
{
	c->visited = false;
	if (f->scan_select) {
		f->scan_cur++;
		return;
	}
	for (unsigned m = c->inmask; m != 0; m &= m - 1) {
		struct jd_fair_cls *h = &f->cls[__builtin_ctz(m)];
		struct jd_fair_flow *fl = jd_fair_flow_of(c, (unsigned)__builtin_ctz(m));
		if (h->cur == fl) {
			h->cur = fl->rnext;
			fl->ticket = ++f->ticket;
		} else {
			ring_remove(h, fl);
			ring_insert(f, h, fl);
		}
	}
}

static uint64_t quantum(const struct jd_fair *f)
{
	uint32_t q = f->drr_quantum;

	if (q == 0)
		q = f->max_cost > f->max_cost_prev ? f->max_cost : f->max_cost_prev;
	return q != 0 ? q : 1;
}

/* The flow with the least ticket among the cursors of the fitting classes' rings. */
static struct jd_fair_flow *ring_next(const struct jd_fair *f, unsigned fit)
{
	struct jd_fair_flow *best = NULL;

	for (unsigned m = fit; m != 0; m &= m - 1) {
		struct jd_fair_flow *fl = f->cls[__builtin_ctz(m)].cur;
		if (fl != NULL && (best == NULL || fl->ticket < best->ticket))
			best = fl;
	}
	return best;
}

/* drr: a whole pass over the fitting rings found no client whose head job fits its
 * deficit (the quantum is below some costs).  Rather than walk the rings again and
 * again, give every client at once the quanta of the empty rounds that would pass before
 * the first one can send: O(flows) per jump, and the next pass sends.  (The next pass
 * adds one more quantum to each client as it visits: k - 1 here.)  A client in several
 * rings is counted once (jump_mark). */
struct jump {
	uint64_t q, k;		/* the quantum; the least rounds any client needs */
	bool grant;		/* second pass: grant k - 1 quanta */
};

static void jump_visit(struct jd_fair *f, unsigned fit, struct jd_fair_client *c, struct jump *j)
{
	uint64_t per = (uint64_t)c->weight * j->q;

	if (j->grant) {
		c->deficit += (j->k - 1) * per;
		return;
	}
	uint64_t need = jd_fair_job_cost(jd_fp_head(f, c, fit)) - c->deficit; /* > 0 */
	uint64_t rounds = (need + per - 1) / per;
	if (rounds < j->k)
		j->k = rounds;
}

/* Visit each client of the fitting classes' rings once (jump_mark). */
static void jump_pass(struct jd_fair *f, unsigned fit, struct jump *j)
{
	uint64_t mark = ++f->jumps;

	for (unsigned m = fit; m != 0; m &= m - 1) {
		struct jd_fair_flow *first = f->cls[__builtin_ctz(m)].cur, *fl = first;
		if (fl == NULL)
			continue;
		do {
			if (fl->client->jump_mark != mark) {
				fl->client->jump_mark = mark;
				jump_visit(f, fit, fl->client, j);
			}
			fl = fl->rnext;
		} while (fl != first);
	}
}

static void drr_jump(struct jd_fair *f, unsigned fit)
{
	struct jump j = {quantum(f), UINT64_MAX, false};

	jump_pass(f, fit, &j);
	j.grant = true;
	jump_pass(f, fit, &j);
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
 * quantum.  Returns whether c may send its head job (among the fitting classes) now. */
static bool turn(struct jd_fair *f, struct jd_fair_client *c, unsigned fit)
{
	if (f->policy == JD_FAIR_POLICY_WRR) {
		if (!c->visited) {
			c->left = c->weight;
			c->visited = true;
		}
		return true;
	}
	uint64_t grant = (uint64_t)c->weight * quantum(f);
	if (!c->visited) {
		c->deficit += grant;
		c->visited = true;
	} else if (c->deficit > grant) {
		c->deficit = grant;	/* the default quantum shrank mid-turn: end the long turn */
	}
	return jd_fair_job_cost(jd_fp_head(f, c, fit)) <= c->deficit;
}

/* ---- the scan baseline ------------------------------------------------------------- */

static struct jd_fair_client *scan_pick(struct jd_fair *f)
{
	if (f->cls[0].queued_in == 0)
		return NULL;
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		struct jd_fair_client *best = NULL;
		for (size_t i = 0; i < f->nclients; i++) {
			struct jd_fair_client *c = f->clients[i];
			if (c->flow0.in && (best == NULL || key_less(c, best)))
				best = c;
		}
		return best;
	}
	for (;;) {
		if (f->scan_cur >= f->nclients)
			f->scan_cur = 0;
		struct jd_fair_client *c = f->clients[f->scan_cur];
		if (c->flow0.in && turn(f, c, 1))
			return c;
		c->visited = false;
		f->scan_cur++;
	}
}

/* ---- membership ------------------------------------------------------------------- */

static void flow_enter(struct jd_fair *f, struct jd_fair_client *c, unsigned k)
{
	struct jd_fair_cls *h = &f->cls[k];
	struct jd_fair_flow *fl = jd_fair_flow_of(c, k);

	fl->in = true;
	c->inmask = (uint16_t)(c->inmask | (1u << k));
	h->queued_in += fl->queued;
	if (f->scan_select)
		return;
	if (f->policy == JD_FAIR_POLICY_FAIR)
		heap_insert(h, c);
	else
		ring_insert(f, h, fl);
}

static void flow_leave(struct jd_fair *f, struct jd_fair_client *c, unsigned k)
{
	struct jd_fair_cls *h = &f->cls[k];
	struct jd_fair_flow *fl = jd_fair_flow_of(c, k);

	fl->in = false;
	c->inmask = (uint16_t)(c->inmask & ~(1u << k));
	h->queued_in -= fl->queued;
	if (f->scan_select)
		return;
	if (f->policy == JD_FAIR_POLICY_FAIR)
		heap_remove(h, c);
	else
		ring_remove(h, fl);
}

/* Whether flow k of client c belongs in its class's structure now. */
static bool wanted(const struct jd_fair *f, const struct jd_fair_client *c, unsigned k)
{
	const struct jd_fair_cls *h = &f->cls[k];

	if (!(c->fmask & (1u << k)) || c->paused)
		return false;
	if (c->max_running != 0 && c->inflight >= c->max_running)
		return false;
	for (uint32_t m = c->res_limits ? h->rmask : 0; m != 0; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);
		if (c->cfg.max_res[r] != 0 && c->res_held[r] + h->need[r] > c->cfg.max_res[r])
			return false;
	}
	return true;
}

/* jd_fp_sync: client c's queues, limits, pause or holdings changed: put each of its
 * flows in or out of its class's structure.  O(classes x log clients). */
void jd_fp_sync(struct jd_fair *f, struct jd_fair_client *c)
{
	unsigned was = c->inmask;

	for (unsigned m = (unsigned)(c->fmask | c->inmask); m != 0; m &= m - 1) {
		unsigned k = (unsigned)__builtin_ctz(m);
		bool want = wanted(f, c, k), in = (c->inmask >> k) & 1u;
		if (want == in)
			continue;
		if (!want) {
			flow_leave(f, c, k);
			continue;
		}
		if (c->inmask == 0) {	/* becoming active: no credit from the spell */
			if (f->policy == JD_FAIR_POLICY_FAIR) {
				double floor = vtime_floor(f);
				if (c->vtime < floor)
					c->vtime = floor;
			} else {
				c->visited = false;
				c->deficit = 0;
			}
		}
		flow_enter(f, c, k);
	}
	if (was != 0 && c->inmask == 0 && f->policy != JD_FAIR_POLICY_FAIR) {
		c->visited = false;
		c->deficit = 0;
	}
}

/* ---- the interface used by fair.c --------------------------------------------------- */

/* jd_fp_head: the job client c would run next among its flows in the structures of the
 * classes in `fit`, or NULL.  O(classes). */
struct jd_fair_job *jd_fp_head(const struct jd_fair *f, const struct jd_fair_client *c,
			       unsigned fit)
{
	unsigned m = c->inmask & fit;
	struct jd_fair_job *best = NULL;

	(void)f;
	if (m == 1)
		return jd_fq_head(&c->flow0);
	for (; m != 0; m &= m - 1) {
		struct jd_fair_job *j = jd_fq_head(jd_fair_cflow_of(c, (unsigned)__builtin_ctz(m)));
		if (best == NULL || jd_fq_before(j, best))
			best = j;
	}
	return best;
}

/* jd_fp_pick: the client whose head job (jd_fp_head with the same `fit`) goes next, or
 * NULL when no flow of a fitting class may be served. */
struct jd_fair_client *jd_fp_pick(struct jd_fair *f, unsigned fit)
{
	if (f->scan_select)
		return (fit & 1u) ? scan_pick(f) : NULL;
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		const struct jd_fair_cls *best = NULL;
		for (unsigned m = fit; m != 0; m &= m - 1) {
			const struct jd_fair_cls *h = &f->cls[__builtin_ctz(m)];
			if (h->heap_n != 0 && (best == NULL || h->heap[0].key < best->heap[0].key))
				best = h;
		}
		return best != NULL ? f->clients[best->heap[0].ci] : NULL;
	}
	size_t total = 0;
	for (unsigned m = fit; m != 0; m &= m - 1)
		total += f->cls[__builtin_ctz(m)].ring_n;
	if (total == 0)
		return NULL;
	for (size_t visits = 0;; visits++) {
		struct jd_fair_client *c = ring_next(f, fit)->client;
		if (visits == total) {	/* drr only: wrr always sends */
			drr_jump(f, fit);
			visits = 0;
		}
		if (turn(f, c, fit))
			return c;
		turn_end(f, c);
	}
}

/* jd_fp_served: client c's `job` is being dispatched (called before it leaves its flow):
 * charge c and move the policy on.  Returns the charge to record in job->charge (policy
 * fair; else 0).  For `fair` it does not touch the job beyond its class, so the caller
 * can let the job's cache miss overlap the sift. */
double jd_fp_served(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_job *job)
{
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		unsigned k = job->cls;
		const struct jd_fair_flow *fl = jd_fair_cflow_of(c, k);
		/* A job with per-job needs is charged its own share after (per_job_taken). */
		double charged = charge(f, c, fl, f->cls[k].factor);
		if (f->scan_select)
			return charged;
		/* A flow about to empty leaves its heap at the next jd_fp_sync: not sifted. */
		unsigned skip = fl->queued == 1 ? 1u << k : 0;
		vtime_moved(f, c, false, skip);
		return charged;
	}
	if (f->policy == JD_FAIR_POLICY_WRR) {
		if (--c->left == 0)
			turn_end(f, c);
	} else {
		c->deficit -= jd_fair_job_cost(job);
	}
	return 0;
}

/* jd_fp_prefetch: start loading the record of the client likely to be picked next (class
 * 0's candidate). */
void jd_fp_prefetch(const struct jd_fair *f)
{
	const struct jd_fair_client *c = NULL;
	const struct jd_fair_cls *h = &f->cls[0];

	if (f->scan_select)
		return;
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		if (h->heap_n > 0)
			c = f->clients[h->heap[0].ci];
	} else if (h->cur != NULL) {
		c = h->cur->client;
	}
	if (c == NULL)
		return;
	__builtin_prefetch(c, 1);
	__builtin_prefetch(&c->flow0.pq[JD_FAIR_CRITICAL], 1);
	__builtin_prefetch(&c->flow0.pq[JD_FAIR_NORMAL], 1);
	__builtin_prefetch(&c->ctr, 1);
}

/* jd_fp_correct: policy fair: add delta to client c's vtime (a completion's correction of
 * the estimate charged at dispatch) and restore the heaps' order. */
void jd_fp_correct(struct jd_fair *f, struct jd_fair_client *c, double delta)
{
	c->vtime += delta;
	if (delta == 0 || f->policy != JD_FAIR_POLICY_FAIR || f->scan_select)
		return;
	vtime_moved(f, c, delta < 0, 0);
}

/* jd_fp_renumber: the client at registry index `from` has moved to index `to` (a
 * removal filled its hole); follow it in the heaps. */
void jd_fp_renumber(struct jd_fair *f, size_t from, size_t to)
{
	for (uint32_t k = 0; k < f->nclasses; k++) {
		struct jd_fair_cls *h = &f->cls[k];
		uint32_t pos = h->heap_pos[from];

		h->heap_pos[to] = pos;
		h->heap_pos[from] = JD_FAIR_NOPOS;
		if (pos != JD_FAIR_NOPOS)
			h->heap[pos].ci = (uint32_t)to;
	}
}

/* jd_fp_rebuild: after a policy switch, rebuild the structures from the clients' flows,
 * all on equal footing (same vtime, empty deficits, fresh turns). */
void jd_fp_rebuild(struct jd_fair *f)
{
	for (uint32_t k = 0; k < f->nclasses; k++) {
		struct jd_fair_cls *h = &f->cls[k];
		h->heap_n = 0;
		h->cur = NULL;
		h->ring_n = 0;
		h->queued_in = 0;
	}
	f->scan_cur = 0;
	for (size_t i = 0; i < f->nclients; i++) {
		struct jd_fair_client *c = f->clients[i];
		for (uint32_t k = 0; k < f->nclasses; k++) {
			f->cls[k].heap_pos[i] = JD_FAIR_NOPOS;
			if (k == 0 || c->xflow != NULL) {
				struct jd_fair_flow *fl = jd_fair_flow_of(c, k);
				fl->rnext = fl->rprev = NULL;
				fl->in = false;
			}
		}
		c->inmask = 0;
		c->visited = false;
		c->deficit = 0;
		c->left = 0;
		c->vtime = f->vnow;
	}
	for (size_t i = 0; i < f->nclients; i++)
		jd_fp_sync(f, f->clients[i]);
}
