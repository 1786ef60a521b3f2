/* daemon/fair/queue.c: one flow's queued jobs (a client's jobs of one needs class), in
 * the order the client is served.
 *
 * Four priorities, served strictly in order (critical first).  Within a priority the
 * jobs with a deadline go first, earliest deadline first (ties and everything else in
 * arrival order), then the jobs without one, FIFO: a job with no deadline has an
 * infinite one.  Each priority keeps every job on an arrival list, O(1) to append, to
 * unlink (cancel) and to find the oldest and newest (the overflow strategies), and the
 * jobs with a deadline also in a pairing heap by (deadline, seq).  A client without
 * deadlines therefore pays for lists only.  A client with jobs of several classes is
 * served in the same order across its flows (jd_fq_before compares their heads).
 * Caller holds the instance lock.
 */
#include <stddef.h>

#include "daemon/fair/fair_internal.h"
#include "daemon/fair/pheap.h"

#define job_of(node, field) \
	((struct jd_fair_job *)(void *)((char *)(node) - offsetof(struct jd_fair_job, field)))
#define cjob_of(node, field) ((const struct jd_fair_job *)(const void *)( \
	(const char *)(node) - offsetof(struct jd_fair_job, field)))

static bool deadline_before(const struct jd_fair_job *a, const struct jd_fair_job *b)
{
	if (a->deadline_ns != b->deadline_ns)
		return a->deadline_ns < b->deadline_ns;
	return a->seq < b->seq;
}

/* jd_fq_deadline_less: the order of a priority's deadline heap, (deadline, seq). */
bool jd_fq_deadline_less(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b)
{
	return deadline_before(cjob_of(a, edf), cjob_of(b, edf));
}

/* jd_fq_expiry_less: the order of the instance's expiry heap, (deadline, seq). */
bool jd_fq_expiry_less(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b)
{
	return deadline_before(cjob_of(a, exp), cjob_of(b, exp));
}

/* jd_fq_before: whether queued job a goes before b in their client's order: priority,
 * then the jobs with a deadline (earliest first), then arrival. */
bool jd_fq_before(const struct jd_fair_job *a, const struct jd_fair_job *b)
{
	if (a->prio != b->prio)
		return a->prio < b->prio;
	if ((a->deadline_ns != 0) != (b->deadline_ns != 0))
		return a->deadline_ns != 0;
	if (a->deadline_ns != 0)
		return deadline_before(a, b);
	return a->seq < b->seq;
}

/* jd_fq_push: append job (prio already checked) to flow fl's queue of its priority. */
void jd_fq_push(struct jd_fair_flow *fl, struct jd_fair_job *job)
{
	struct jd_fair_pq *q = &fl->pq[job->prio];

	job->next = NULL;
	job->prev = q->tail;
	if (q->tail != NULL)
		q->tail->next = job;
	else
		q->head = job;
	q->tail = job;
	if (job->deadline_ns != 0)
		jd_pheap_insert(&q->edf, &job->edf, jd_fq_deadline_less);
	q->n++;
	fl->nonempty |= (uint8_t)(1u << job->prio);
}

/* jd_fq_insert: put job back into flow fl's queue at its place by arrival (seq), walking
 * back from the tail: O(jobs of its priority that arrived after it).  (The head's `prev`
 * is undefined: the walk stops there.) */
void jd_fq_insert(struct jd_fair_flow *fl, struct jd_fair_job *job)
{
	struct jd_fair_pq *q = &fl->pq[job->prio];
	struct jd_fair_job *p = q->tail;

	while (p != NULL && p->seq > job->seq)
		p = p == q->head ? NULL : p->prev;
	if (p == q->tail) {
		jd_fq_push(fl, job);
		return;
	}
	if (p == NULL) {	/* before the head */
		job->next = q->head;
		q->head->prev = job;
		q->head = job;
	} else {
		job->next = p->next;
		job->prev = p;
		p->next->prev = job;
		p->next = job;
	}
	if (job->deadline_ns != 0)
		jd_pheap_insert(&q->edf, &job->edf, jd_fq_deadline_less);
	q->n++;
	fl->nonempty |= (uint8_t)(1u << job->prio);
}

/* jd_fq_head: the job flow fl would run next, or NULL if it has none queued. */
struct jd_fair_job *jd_fq_head(const struct jd_fair_flow *fl)
{
	if (fl->nonempty == 0)
		return NULL;
	const struct jd_fair_pq *q = &fl->pq[__builtin_ctz(fl->nonempty)];
	return q->edf != NULL ? job_of(q->edf, edf) : q->head;
}

/* jd_fq_remove: unlink a queued job from flow fl's queues.  The `prev` of a queue's
 * head is left undefined: taking the head (the common case) then writes nothing into
 * the next job, which at 10,000 clients is a cache miss saved per dispatch. */
void jd_fq_remove(struct jd_fair_flow *fl, struct jd_fair_job *job)
{
	struct jd_fair_pq *q = &fl->pq[job->prio];

	if (q->head == job) {
		q->head = job->next;
		if (q->head == NULL)
			q->tail = NULL;
	} else {
		job->prev->next = job->next;
		if (job->next != NULL)
			job->next->prev = job->prev;
		else
			q->tail = job->prev;
	}
	job->prev = job->next = NULL;
	if (job->deadline_ns != 0)
		jd_pheap_remove(&q->edf, &job->edf, jd_fq_deadline_less);
	if (--q->n == 0)
		fl->nonempty &= (uint8_t)~(1u << job->prio);
}

/* jd_fq_victim: the job an overflow drop removes when `in` arrives at a full queue: the
 * oldest (or newest) job of the lowest priority among client c's queued jobs (of every
 * flow; held ones are not candidates) and `in`.  Returns `in` itself when it is that job. */
struct jd_fair_job *jd_fq_victim(const struct jd_fair_client *c, struct jd_fair_job *in,
				 bool oldest)
{
	int low = -1;
	struct jd_fair_job *best = NULL;

	for (unsigned m = c->fmask; m != 0; m &= m - 1) {
		const struct jd_fair_flow *fl = jd_fair_cflow_of(c, (unsigned)__builtin_ctz(m));
		int l = 31 - __builtin_clz(fl->nonempty);
		if (l > low) {
			low = l;
			best = NULL;
		}
		if (l == low) {
			struct jd_fair_job *j = oldest ? fl->pq[l].head : fl->pq[l].tail;
			if (best == NULL || (oldest ? j->seq < best->seq : j->seq > best->seq))
				best = j;
		}
	}
	if (low < 0 || in->prio > low)
		return in;
	if (in->prio < low)
		return best;
	/* Same priority: the queued ones are older than the incoming one. */
	return oldest ? best : in;
}
