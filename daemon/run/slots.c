/* daemon/run/slots.c: process slots, and the exec jobs parked while none is free.
 *
 * At most exec.max_processes commands run at once (never more than the pool's fibers).
 * An exec job takes its slot when a worker's feeder takes it from the fair layer
 * (jd_exec_take, under the same lock as the take): with no free slot it is parked here,
 * still "queued", holding no fiber and no worker, and dispatched when a slot frees, to
 * the parked job whose client has the fewest running processes per unit of weight
 * (ties: the client served least recently, then the oldest job).  A handler's process
 * asks for its slot at spawn time (its fiber is already running) and goes first when one
 * frees.  This parking is a second scheduler beside the fair layer's, kept in this file
 * alone so that it can be replaced by a capacity the fair layer knows.
 */
#include <stddef.h>
#include <stdlib.h>

#include "daemon/core/clients.h"
#include "daemon/core/clock.h"
#include "daemon/core/log.h"
#include "daemon/run/exec_internal.h"

size_t jd_exec_take(struct jd_exec *x, struct jd_fair_job **fjs, size_t want, size_t *taken)
{
	size_t n, k = 0;

	/* Lock order: ours, then the fair layer's (inside jd_fair_take); nothing takes
	 * ours while holding the fair lock (its hooks run without it). */
	pthread_mutex_lock(&x->lock);
	n = jd_fair_take(x->fair, fjs, want);
	for (size_t i = 0; i < n; i++) {
		struct jd_job *j = (struct jd_job *)((char *)fjs[i] - offsetof(struct jd_job, fj));

		if (j->exec && x->slots_used >= x->cap) {
			j->exec->parked = true;
			j->exec->park_next = NULL;
			if (x->parked_tail)
				x->parked_tail->exec->park_next = j;
			else
				x->parked = j;
			x->parked_tail = j;
			x->n_parked++;
			continue;
		}
		if (j->exec)
			x->slots_used++;
		fjs[k++] = fjs[i];
	}
	pthread_mutex_unlock(&x->lock);
	*taken = n;
	return k;
}

/* unpark: take j off the parked list.  Under x->lock. */
void jd__unpark(struct jd_exec *x, struct jd_job *j)
{
	struct jd_job **pp = &x->parked, *prev = NULL;

	while (*pp && *pp != j) {
		prev = *pp;
		pp = &(*pp)->exec->park_next;
	}
	if (!*pp)
		return;
	*pp = j->exec->park_next;
	if (x->parked_tail == j)
		x->parked_tail = prev;
	j->exec->parked = false;
	j->exec->park_next = NULL;
	x->n_parked--;
}

/* last_grant: when a parked job of client c last got a slot (0: never, or forgotten).
 * Loop thread. */
static uint64_t last_grant(const struct jd_exec *x, const struct jd_client *c)
{
	for (size_t i = 0; i < 64; i++)
		if (x->granted[i].client == c)
			return x->granted[i].at;
	return 0;
}

/* note_grant: remember that client c got a slot now (the table keeps the 64 most recent
 * clients; one forgotten counts as never served, which only helps it).  Loop thread. */
static void note_grant(struct jd_exec *x, const struct jd_client *c)
{
	size_t oldest = 0;

	x->grants++;
	for (size_t i = 0; i < 64; i++) {
		if (x->granted[i].client == c) {
			x->granted[i].at = x->grants;
			return;
		}
		if (x->granted[i].at < x->granted[oldest].at)
			oldest = i;
	}
	x->granted[oldest].client = c;
	x->granted[oldest].at = x->grants;
}

/* best_parked: the parked job whose client has the fewest running processes per unit of
 * weight; among equals, the client served least recently, then the oldest job.  Only the
 * oldest parked job of each client is a candidate, so one pass over the list with a small
 * table of clients does it.  Loop thread, under x->lock. */
static struct jd_job *best_parked(struct jd_exec *x)
{
	struct {
		const struct jd_client *c;
		unsigned running;
		bool seen;
	} cl[64];
	size_t nc = 0;
	struct jd_job *best = NULL;
	double best_load = 0;
	uint64_t best_at = 0;

	if (!x->parked || !x->parked->exec->park_next)
		return x->parked;
	for (struct jd_proc *p = x->live; p; p = p->next) {
		size_t i;

		if (p->finished || !p->job)
			continue;
		for (i = 0; i < nc && cl[i].c != p->job->client; i++)
			;
		if (i == nc && nc < 64)
			cl[nc++] = (__typeof__(cl[0])){p->job->client, 0, false};
		if (i < nc)
			cl[i].running++;
	}
	for (struct jd_job *j = x->parked; j; j = j->exec->park_next) {
		size_t i;
		double load;
		uint64_t at;

		for (i = 0; i < nc && cl[i].c != j->client; i++)
			;
		if (i == nc) {
			if (nc == 64)
				continue; /* past 64 clients: they wait for a later pass */
			cl[nc++] = (__typeof__(cl[0])){j->client, 0, false};
		}
		if (cl[i].seen)
			continue; /* an older job of this client was the candidate */
		cl[i].seen = true;
		load = (double)cl[i].running / (j->client->conf.weight ? j->client->conf.weight : 1);
		at = last_grant(x, j->client);
		if (!best || load < best_load || (load == best_load && at < best_at)) {
			best = j;
			best_load = load;
			best_at = at;
		}
	}
	return best ? best : x->parked;
}

/* slot_release: a process slot is free: hand it to a waiting handler spawn, else to the
 * best parked exec job (expiring those whose deadline passed while parked), else give it
 * back.  Loop thread. */
void jd__slot_release(struct jd_exec *x)
{
	for (;;) {
		struct jd_job *j = NULL;
		struct jd_proc *w = NULL;

		pthread_mutex_lock(&x->lock);
		if (x->slots_used > x->cap) {
			x->slots_used--; /* the cap was lowered: this slot is gone */
		} else if ((w = x->slot_waiters)) {
			x->slot_waiters = w->req_next;
			if (!x->slot_waiters)
				x->slot_waiters_tail = NULL;
		} else if ((j = best_parked(x))) {
			jd__unpark(x, j);
			note_grant(x, j->client);
		} else {
			x->slots_used--;
		}
		pthread_mutex_unlock(&x->lock);
		if (w) {
			w->has_slot = true;
			jd__proc_spawn(w);
			return;
		}
		if (!j)
			return;
		if (j->fj.deadline_ns && jd_now_ns() > j->fj.deadline_ns) {
			/* It was dispatched in time but never started: its deadline says expired. */
			struct jd_fair_job *fj = &j->fj;

			jd_fair_complete(x->fair, &fj, 1);
			jd_job_finish(x->jobs, j, JD_EXPIRED, JP_CAUSE_DEADLINE, "not started before its deadline");
			continue;
		}
		x->dispatch(x->dispatch_ctx, j);
		return;
	}
}

/* slot_try: take a slot for a handler's process, or queue it.  Loop thread. */
bool jd__slot_try(struct jd_exec *x, struct jd_proc *p)
{
	bool got;

	pthread_mutex_lock(&x->lock);
	got = x->slots_used < x->cap;
	if (got) {
		x->slots_used++;
	} else {
		p->req_next = NULL;
		if (x->slot_waiters_tail)
			x->slot_waiters_tail->req_next = p;
		else
			x->slot_waiters = p;
		x->slot_waiters_tail = p;
	}
	pthread_mutex_unlock(&x->lock);
	return got;
}

/* cap_of: the cap in force: exec.max_processes, but no more than the pool's fibers (each
 * running command's job waits on one; past them, waits would nest on worker stacks). */
uint32_t jd__slot_cap(const struct jd_exec *x)
{
	uint32_t cap = x->cfg->exec.max_processes;

	if (x->cfg->fibers && cap > x->cfg->fibers) {
		jd_log(JD_LOG_WARN, "exec.max_processes %u is more than the %u fibers: %u apply",
		       (unsigned)cap, x->cfg->fibers, x->cfg->fibers);
		cap = x->cfg->fibers;
	}
	return cap;
}

void jd_exec_apply_config(struct jd_exec *x)
{
	uint32_t cap = jd__slot_cap(x), more = 0;

	pthread_mutex_lock(&x->lock);
	if (cap > x->cap)
		more = cap - x->cap;
	x->cap = cap;
	/* Each newly free slot is taken the way a released one is. */
	x->slots_used += more;
	pthread_mutex_unlock(&x->lock);
	while (more-- > 0)
		jd__slot_release(x);
	jd_jobs_settle(x->jobs); /* parked jobs found expired on the way */
}

