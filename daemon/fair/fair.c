/* daemon/fair/fair.c: the admission API of fair.h: the lock, the life of a job (admit,
 * take, complete, cancel, hold, drain, expire), clients, pause, capacities, backpressure
 * and the figures.
 *
 * Every entry point takes the one instance mutex, changes the structures, collects the
 * jobs that reached a final state on a list threaded through the jobs themselves
 * (struct jd_fair_done), releases the mutex, and only then calls the hooks.  So a hook
 * never runs with the lock held (it may call back in), the critical sections stay short,
 * and a job is reported after it has left every structure (its owner may free it).  Why
 * one mutex and not finer locks: every operation touches shared state anyway (the
 * policy's structure and the instance counters), the critical sections are a few hundred
 * ns, and takers take in batches; README.md has the measurement.  The functions defined
 * here are documented in fair.h.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/fair/fair_internal.h"
#include "daemon/fair/pheap.h"

/* amount[] sits in what was padding: a job record is no larger for it. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct jd_fair_job) == 128,
	       "struct jd_fair_job is 128 bytes");

#define job_of_exp(node) \
	((struct jd_fair_job *)(void *)((char *)(node) - offsetof(struct jd_fair_job, exp)))

static uint64_t mono_clock(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ns(const struct jd_fair *f)
{
	return f->clock(f->clock_ctx);
}

/* The counters read lock-free are written only under the lock: a plain load and store
 * (no read-modify-write) is enough, and cheaper. */
static inline uint64_t rd(const _Atomic uint64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static inline void add(_Atomic uint64_t *a, uint64_t d)
{
	atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static inline void sub(_Atomic uint64_t *a, uint64_t d)
{
	atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) - d,
			      memory_order_relaxed);
}

/* ready_of_classes: with several classes, the jobs queued in the structures of those
 * that fit; a reservation whose class has nothing left to serve is dropped first (it
 * holds nothing).  Out of line, so that the one-class unlock stays small. */
static __attribute__((noinline)) uint64_t ready_of_classes(struct jd_fair *f)
{
	uint64_t ready = 0;
	unsigned queued = 0;

	if (f->resv >= 0 && f->cls[f->resv].heap_n == 0 && f->cls[f->resv].ring_n == 0)
		f->resv = -1;
	/* Only the classes with jobs queued are fitted: the others add nothing.  Fitting all
	 * of them was ~130 instructions a call, two calls a job on each worker (callgrind of
	 * the 10 us efficiency row, five classes, the jobs all in one). */
	for (uint32_t k = 0; k < f->nclasses; k++)
		queued |= (f->cls[k].queued_in != 0 ? 1u : 0u) << k;
	for (unsigned m = queued ? jd_fp_fit_among(f, queued) : 0; m != 0; m &= m - 1)
		ready += f->cls[__builtin_ctz(m)].queued_in;
	return ready;
}

/* Release the lock, first publishing for jd_fair_ready how many jobs could be taken:
 * those queued in the structures of the classes that fit. */
static inline void unlock(struct jd_fair *f)
{
	uint64_t ready = 0;

	if (!f->paused)
		ready = f->nclasses == 1 ? f->cls[0].queued_in : ready_of_classes(f);
	atomic_store_explicit(&f->ready, ready, memory_order_relaxed);
	pthread_mutex_unlock(&f->lock);
}

/* Jobs queued or held, against the limits: a client's, the instance's. */
static inline uint64_t client_load(const struct jd_fair_client *c)
{
	return c->queued + c->held;
}

static inline uint64_t fair_load(const struct jd_fair *f)
{
	return rd(&f->queued) + f->held;
}

/* ---- final states, reported after the lock ------------------------------------------ */

static void done_add(struct jd_fair_done *d, struct jd_fair_job *job, enum jd_fair_final s)
{
	job->state = (uint8_t)s;
	job->prev = NULL;
	job->next = NULL;
	if (d->tail != NULL)
		d->tail->next = job;
	else
		d->head = job;
	d->tail = job;
}

/* Call the hooks for what the locked section collected.  The lock is not held. */
static void report(const struct jd_fair *f, struct jd_fair_done *d)
{
	struct jd_fair_job *job = d->head, *next;

	for (; job != NULL; job = next) {
		enum jd_fair_final s = (enum jd_fair_final)job->state;
		next = job->next;
		job->next = NULL;
		if (f->final_cb != NULL)
			f->final_cb(job, s, f->udata);
	}
	if (d->wake && f->wake_cb != NULL)
		f->wake_cb(f->udata);
}

/* ---- backpressure ------------------------------------------------------------------ */

static void list_push(struct jd_fair_client **head, struct jd_fair_client *c)
{
	c->bprev = NULL;
	c->bnext = *head;
	if (*head != NULL)
		(*head)->bprev = c;
	*head = c;
}

static void list_del(struct jd_fair_client **head, struct jd_fair_client *c)
{
	if (c->bprev != NULL)
		c->bprev->bnext = c->bnext;
	else
		*head = c->bnext;
	if (c->bnext != NULL)
		c->bnext->bprev = c->bprev;
	c->bprev = c->bnext = NULL;
}

static void block(struct jd_fair *f, struct jd_fair_client *c, unsigned bits)
{
	if (c->on_unblocked) {
		list_del(&f->unblocked, c);
		c->on_unblocked = false;
	}
	if ((bits & JD_FAIR_BLK_GLOBAL) && !(c->blocked & JD_FAIR_BLK_GLOBAL))
		list_push(&f->gblocked, c);
	c->blocked = (uint8_t)(c->blocked | bits);
}

/* Clear the reasons client c is blocked that no longer hold (its queue at half its
 * limit; the instance's at half the cap; or it no longer uses `block`); once none is
 * left, hand it to the caller through the unblocked list. */
static void check_unblock(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_done *d)
{
	unsigned was = c->blocked, now = was;
	bool blocking = c->overflow == JD_FAIR_BLOCK;

	if (was == 0)
		return;
	if ((now & JD_FAIR_BLK_CLIENT) &&
	    (!blocking || c->max_queued == 0 || client_load(c) <= c->max_queued / 2))
		now &= ~JD_FAIR_BLK_CLIENT;
	if ((now & JD_FAIR_BLK_GLOBAL) &&
	    (!blocking || f->max_queued == 0 || fair_load(f) <= f->max_queued / 2)) {
		now &= ~JD_FAIR_BLK_GLOBAL;
		list_del(&f->gblocked, c);
	}
	c->blocked = (uint8_t)now;
	if (now == 0) {
		list_push(&f->unblocked, c);
		c->on_unblocked = true;
		d->wake = true;
	}
}

static void check_global(struct jd_fair *f, struct jd_fair_done *d)
{
	if (f->gblocked == NULL)
		return;
	if (f->max_queued != 0 && fair_load(f) > f->max_queued / 2)
		return;
	for (struct jd_fair_client *c = f->gblocked, *next; c != NULL; c = next) {
		next = c->bnext;
		check_unblock(f, c, d);
	}
}

/* ---- queue membership ------------------------------------------------------------- */

/* Take a queued or held job out of its flow or the held list (not the expiry heap; its
 * flow's structure membership is settled by the caller: jd_fp_sync).  Returns whether
 * client c's queue became empty (its busy spell ended). */
static bool unlink_job(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job)
{
	if (job->state == JD_FAIR_STATE_HELD) {
		if (job->prev != NULL)
			job->prev->next = job->next;
		else
			c->held_head = job->next;
		if (job->next != NULL)
			job->next->prev = job->prev;
		job->prev = job->next = NULL;
		c->held--;
		f->held--;
		return false;
	}
	struct jd_fair_flow *fl = jd_fair_flow_of(c, job->cls);
	jd_fq_remove(fl, job);
	if (--fl->queued == 0)
		c->fmask = (uint16_t)(c->fmask & ~(1u << job->cls));
	if (fl->in)
		f->cls[job->cls].queued_in--;
	f->cls[job->cls].queued--;
	c->queued--;
	sub(&f->queued, 1);
	return c->queued == 0;
}

/* Take a queued or held job out of every structure; returns what unlink_job returns. */
static bool unqueue(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job)
{
	if (job->deadline_ns != 0)
		jd_pheap_remove(&f->expiry, &job->exp, jd_fq_expiry_less);
	return unlink_job(f, c, job);
}

/* Put a job into its client's flow (it must exist): at the tail, or, for a released
 * job, at its place by arrival. */
static void enqueue(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job,
		    bool in_order)
{
	struct jd_fair_flow *fl = jd_fair_flow_of(c, job->cls);

	job->state = JD_FAIR_STATE_QUEUED;
	if (in_order)
		jd_fq_insert(fl, job);
	else
		jd_fq_push(fl, job);
	fl->queued++;
	c->fmask = (uint16_t)(c->fmask | (1u << job->cls));
	if (fl->in)
		f->cls[job->cls].queued_in++;
	f->cls[job->cls].queued++;
	c->queued++;
	add(&f->queued, 1);
}

/* After jobs of client c left its queue other than by being dispatched; `now` is the
 * clock if that ended its busy spell, else 0. */
static void after_removal(struct jd_fair *f, struct jd_fair_client *c, uint64_t now,
			  struct jd_fair_done *d)
{
	jd_fp_sync(f, c);
	if (now != 0)
		jd_fw_idle(f, c, now);
	if (c->blocked != 0)
		check_unblock(f, c, d);
}

static size_t expire_due(struct jd_fair *f, uint64_t now, struct jd_fair_done *d)
{
	size_t n = 0;

	while (f->expiry != NULL) {
		struct jd_fair_job *job = job_of_exp(f->expiry);
		struct jd_fair_client *c = job->client;
		if (job->deadline_ns > now)
			break;
		bool emptied = unqueue(f, c, job);
		c->ctr.expired++;
		done_add(d, job, JD_FAIR_EXPIRED);
		after_removal(f, c, emptied ? now : 0, d);
		n++;
	}
	if (n != 0)
		check_global(f, d);
	return n;
}

/* ---- the instance ------------------------------------------------------------------ */

int jd_fair_new(const struct jd_fair_config *cfg, struct jd_fair **out)
{
	struct jd_fair_config def = {0};
	struct jd_fair *f;

	if (cfg == NULL)
		cfg = &def;
	if ((unsigned)cfg->policy > JD_FAIR_POLICY_WRR)
		return JSCHED_EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return JSCHED_ENOMEM;
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		free(f);
		return JSCHED_ENOMEM;
	}
	f->policy = cfg->policy;
	f->max_queued = cfg->max_queued;
	atomic_init(&f->max_inflight, cfg->max_inflight);
	f->drr_quantum = cfg->drr_quantum;
	f->fair_estimate_ns = cfg->fair_estimate_ns != 0 ? cfg->fair_estimate_ns : 1000000;
	f->window_ns = cfg->window_ns != 0 ? cfg->window_ns : 10000000000u;
	f->slice_ns = f->window_ns / JD_FAIR_WINDOW_BUCKETS;
	if (f->slice_ns == 0)
		f->slice_ns = 1;
	f->scan_select = cfg->scan_select;
	f->clock = cfg->clock != NULL ? cfg->clock : mono_clock;
	f->clock_ctx = cfg->clock_ctx;
	f->final_cb = cfg->final_cb;
	f->wake_cb = cfg->wake_cb;
	f->udata = cfg->udata;
	atomic_init(&f->queued, 0);
	atomic_init(&f->inflight, 0);
	atomic_init(&f->ready, 0);
	f->nclasses = 1;	/* class 0: needs nothing */
	for (unsigned k = 0; k < JD_FAIR_MAX_CLASSES; k++)
		f->cls[k].factor = 1;
	f->drf_base = cfg->drf_base > 0 && cfg->drf_base <= 1 ? cfg->drf_base : 0;
	f->backfill_max = cfg->backfill_max != 0 ? cfg->backfill_max : JD_FAIR_BACKFILL_DEFAULT;
	f->resv = -1;
	*out = f;
	return 0;
}

void jd_fair_free(struct jd_fair *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nclients; i++) {
		free(f->clients[i]->name);
		free(f->clients[i]->xflow);
		free(f->clients[i]);
	}
	free(f->clients);
	for (uint32_t k = 0; k < f->nclasses; k++) {
		free(f->cls[k].heap_mem);
		free(f->cls[k].heap_pos);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int jd_fair_set_policy(struct jd_fair *f, enum jd_fair_policy policy)
{
	if ((unsigned)policy > JD_FAIR_POLICY_WRR)
		return JSCHED_EINVAL;
	pthread_mutex_lock(&f->lock);
	if (f->policy != policy) {
		f->policy = policy;
		jd_fp_rebuild(f);
	}
	unlock(f);
	return 0;
}

void jd_fair_set_max_inflight(struct jd_fair *f, uint32_t max_inflight)
{
	atomic_store_explicit(&f->max_inflight, max_inflight, memory_order_relaxed);
}

void jd_fair_set_max_queued(struct jd_fair *f, uint32_t max_queued)
{
	struct jd_fair_done d = {0};

	pthread_mutex_lock(&f->lock);
	f->max_queued = max_queued;
	check_global(f, &d);
	unlock(f);
	report(f, &d);
}

int jd_fair_pause(struct jd_fair *f, struct jd_fair_client *c, bool paused)
{
	pthread_mutex_lock(&f->lock);
	if (c == NULL) {
		f->paused = paused;
	} else if (c->paused != paused) {
		c->paused = paused;
		jd_fp_sync(f, c);
	}
	unlock(f);
	return 0;
}

/* ---- capacities -------------------------------------------------------------------- */

static int find_res(const struct jd_fair *f, const char *name)
{
	for (uint32_t r = 0; r < f->nres; r++) {
		if (strcmp(f->res_name[r], name) == 0)
			return (int)r;
	}
	return JSCHED_ENOT_SUPPORTED;
}

int jd_fair_resource_add(struct jd_fair *f, const char *name, uint32_t capacity)
{
	size_t len = name != NULL ? strlen(name) : 0;
	int rc;

	if (len == 0 || len > JD_FAIR_RES_NAME_MAX)
		return JSCHED_EINVAL;
	pthread_mutex_lock(&f->lock);
	if (find_res(f, name) >= 0) {
		rc = JSCHED_EEXISTS;
	} else if (f->nres == JD_FAIR_MAX_RES) {
		rc = JSCHED_ELIMIT_EXCEEDED;
	} else {
		rc = (int)f->nres++;
		memcpy(f->res_name[rc], name, len + 1);
		f->res_cap[rc] = capacity;
	}
	unlock(f);
	return rc;
}

int jd_fair_resource_find(struct jd_fair *f, const char *name)
{
	pthread_mutex_lock(&f->lock);
	int rc = name != NULL ? find_res(f, name) : JSCHED_ENOT_SUPPORTED;
	unlock(f);
	return rc;
}

const char *jd_fair_resource_name(struct jd_fair *f, int res)
{
	const char *name = NULL;

	pthread_mutex_lock(&f->lock);
	if (res >= 0 && (uint32_t)res < f->nres)
		name = f->res_name[res];
	unlock(f);
	return name;
}

int jd_fair_resource_set(struct jd_fair *f, int res, uint32_t capacity)
{
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (res < 0 || (uint32_t)res >= f->nres) {
		rc = JSCHED_EINVAL;
	} else {
		f->res_cap[res] = capacity;
		jd_fp_factors(f);
	}
	unlock(f);
	return rc;
}

int jd_fair_resource_share(struct jd_fair *f, int res, bool counted)
{
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (res < 0 || (uint32_t)res >= f->nres) {
		rc = JSCHED_EINVAL;
	} else {
		f->drf_mask = counted ? f->drf_mask | (1u << res) : f->drf_mask & ~(1u << res);
		jd_fp_factors(f);
	}
	unlock(f);
	return rc;
}

void jd_fair_set_drf(struct jd_fair *f, double drf_base)
{
	pthread_mutex_lock(&f->lock);
	f->drf_base = drf_base > 0 && drf_base <= 1 ? drf_base : 0;
	jd_fp_factors(f);
	unlock(f);
}

void jd_fair_set_backfill_max(struct jd_fair *f, uint32_t backfill_max)
{
	pthread_mutex_lock(&f->lock);
	f->backfill_max = backfill_max != 0 ? backfill_max : JD_FAIR_BACKFILL_DEFAULT;
	unlock(f);
}

int jd_fair_resource_take(struct jd_fair *f, int res, uint32_t n)
{
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (res < 0 || (uint32_t)res >= f->nres)
		rc = JSCHED_EINVAL;
	else if (f->res_used[res] + (uint64_t)n > f->res_cap[res])
		rc = JSCHED_EAGAIN;
	else
		f->res_used[res] += n;
	unlock(f);
	return rc;
}

void jd_fair_resource_give(struct jd_fair *f, int res, uint32_t n)
{
	pthread_mutex_lock(&f->lock);
	if (res >= 0 && (uint32_t)res < f->nres)
		f->res_used[res] -= n < f->res_used[res] ? n : f->res_used[res];
	unlock(f);
}

/* held_of: whether a held job of class k exists (O(held jobs); only class removal asks). */
static bool held_of(const struct jd_fair *f, unsigned k)
{
	for (size_t i = 0; f->held != 0 && i < f->nclients; i++)
		for (const struct jd_fair_job *j = f->clients[i]->held_head; j; j = j->next)
			if (j->cls == k)
				return true;
	return false;
}

/* The heap arrays of class h for `cap` clients (at a class's creation, or when the
 * registry grows), keeping the first `n` entries. */
static int grow_class(struct jd_fair_cls *h, size_t cap, size_t n)
{
	struct jd_fair_hent *heap;
	uint32_t *pos;

	/* The heap starts 3 entries into a 64-byte aligned block, so that the four
	 * children of every node (4i+1 .. 4i+4) share one cache line. */
	heap = aligned_alloc(64, ((cap + 3) * sizeof(*heap) + 63) & ~(size_t)63);
	if (heap == NULL)
		return JSCHED_ENOMEM;
	if (h->heap_n != 0)
		memcpy(heap + 3, h->heap, h->heap_n * sizeof(*heap));
	free(h->heap_mem);
	h->heap_mem = heap;
	h->heap = heap + 3;
	pos = realloc(h->heap_pos, cap * sizeof(*pos));
	if (pos == NULL)
		return JSCHED_ENOMEM;
	for (size_t i = n; i < cap; i++)
		pos[i] = JD_FAIR_NOPOS;
	h->heap_pos = pos;
	return 0;
}

/* class_add: jd_fair_class_add; `own`: a new class even if one with these needs exists. */
static int class_add(struct jd_fair *f, const uint32_t need[JD_FAIR_MAX_RES], bool own)
{
	struct jd_fair_cls *h;
	uint32_t rmask = 0, vmask = 0, fixed[JD_FAIR_MAX_RES];
	int rc;

	pthread_mutex_lock(&f->lock);
	for (unsigned r = 0; r < JD_FAIR_MAX_RES; r++) {
		fixed[r] = need[r] == JD_FAIR_PER_JOB ? 0 : need[r];
		if (need[r] == 0)
			continue;
		if (r >= f->nres || f->scan_select) {
			rc = JSCHED_EINVAL;
			goto out;
		}
		rmask |= 1u << r;
		if (need[r] == JD_FAIR_PER_JOB)
			vmask |= 1u << r;
	}
	if (__builtin_popcount(vmask) > JD_FAIR_AMOUNTS) {
		rc = JSCHED_EINVAL;
		goto out;
	}
	for (uint32_t k = 0; k < f->nclasses && !own; k++) {
		h = &f->cls[k];
		if (!(f->cls_free & (1u << k)) && h->rmask == rmask && h->vmask == vmask &&
		    memcmp(h->need, fixed, sizeof(h->need)) == 0) {
			rc = (int)k;
			goto out;
		}
	}
	if (f->cls_free != 0) {	/* a removed class's number: its arrays are in place */
		rc = __builtin_ctz(f->cls_free);
		h = &f->cls[rc];
		f->cls_free &= ~(1u << rc);
		memcpy(h->need, fixed, sizeof(h->need));
		h->rmask = rmask;
		h->vmask = vmask;
		h->passes = 0;
		jd_fp_factors(f);
		goto out;
	}
	if (f->nclasses == JD_FAIR_MAX_CLASSES) {
		rc = JSCHED_ELIMIT_EXCEEDED;
		goto out;
	}
	h = &f->cls[f->nclasses];
	if (f->clients_cap != 0 && (rc = grow_class(h, f->clients_cap, 0)) != 0) {
		free(h->heap_mem);
		free(h->heap_pos);
		memset(h, 0, sizeof(*h));
		goto out;
	}
	memcpy(h->need, fixed, sizeof(h->need));
	h->rmask = rmask;
	h->vmask = vmask;
	rc = (int)f->nclasses++;
	jd_fp_factors(f);
out:
	unlock(f);
	return rc;
}

int jd_fair_class_remove(struct jd_fair *f, int cls)
{
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (cls <= 0 || (uint32_t)cls >= f->nclasses || (f->cls_free & (1u << cls))) {
		rc = JSCHED_EINVAL;
	} else if (f->cls[cls].queued != 0 || f->cls[cls].running != 0 ||
		   f->cls[cls].heap_n != 0 || f->cls[cls].ring_n != 0 || held_of(f, (unsigned)cls)) {
		rc = JSCHED_EAGAIN;
	} else {
		/* Needs nothing from now on (so it "fits" and is empty: never picked). */
		memset(f->cls[cls].need, 0, sizeof(f->cls[cls].need));
		f->cls[cls].rmask = 0;
		f->cls[cls].vmask = 0;
		f->cls[cls].factor = 1;
		f->cls_free |= 1u << cls;
		if (f->resv == cls)
			f->resv = -1;
	}
	unlock(f);
	return rc;
}

int jd_fair_class_add(struct jd_fair *f, const uint32_t need[JD_FAIR_MAX_RES])
{
	return class_add(f, need, false);
}

int jd_fair_class_add_own(struct jd_fair *f, const uint32_t need[JD_FAIR_MAX_RES])
{
	if (f->scan_select)
		return JSCHED_EINVAL;
	return class_add(f, need, true);
}

/* ---- clients ----------------------------------------------------------------------- */

static int client_config(const struct jd_fair_client_config *in, struct jd_fair_client_config *out)
{
	struct jd_fair_client_config def = {0};

	if (in == NULL)
		in = &def;
	if ((unsigned)in->overflow > JD_FAIR_BLOCK)
		return JSCHED_EINVAL;
	*out = *in;
	if (out->weight == 0)
		out->weight = 1;
	return 0;
}

/* The client record's hot copies of its settings. */
static void hot_copies(struct jd_fair_client *c)
{
	c->weight = c->cfg.weight;
	c->max_queued = c->cfg.max_queued;
	c->max_running = c->cfg.max_running;
	c->overflow = (uint8_t)c->cfg.overflow;
	c->res_limits = false;
	for (unsigned r = 0; r < JD_FAIR_MAX_RES; r++)
		c->res_limits |= c->cfg.max_res[r] != 0;
}

static int grow_registry(struct jd_fair *f)
{
	size_t cap = f->clients_cap != 0 ? 2 * f->clients_cap : 16;
	struct jd_fair_client **clients;
	int rc;

	clients = realloc(f->clients, cap * sizeof(*clients));
	if (clients == NULL)
		return JSCHED_ENOMEM;
	f->clients = clients;
	for (uint32_t k = 0; k < f->nclasses; k++) {
		if ((rc = grow_class(&f->cls[k], cap, f->clients_cap)) != 0)
			return rc;
	}
	f->clients_cap = cap;
	return 0;
}

int jd_fair_client_add(struct jd_fair *f, const char *name,
		       const struct jd_fair_client_config *cfg, void *udata,
		       struct jd_fair_client **out)
{
	struct jd_fair_client *c;
	int rc;

	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (c == NULL)
		return JSCHED_ENOMEM;
	memset(c, 0, sizeof(*c));
	rc = client_config(cfg, &c->cfg);
	if (rc != 0)
		goto out_free;
	c->name = strdup(name != NULL ? name : "");
	if (c->name == NULL) {
		rc = JSCHED_ENOMEM;
		goto out_free;
	}
	c->fair = f;
	c->udata = udata;
	hot_copies(c);
	c->flow0.client = c;

	pthread_mutex_lock(&f->lock);
	if (f->nclients == f->clients_cap && (rc = grow_registry(f)) != 0) {
		unlock(f);
		goto out_free_name;
	}
	c->id = f->next_client_id++;
	c->reg_idx = (uint32_t)f->nclients;
	f->clients[f->nclients++] = c;
	unlock(f);
	*out = c;
	return 0;

out_free_name:
	free(c->name);
out_free:
	free(c);
	return rc;
}

int jd_fair_client_set(struct jd_fair *f, struct jd_fair_client *c,
		       const struct jd_fair_client_config *cfg)
{
	struct jd_fair_client_config conf;
	struct jd_fair_done d = {0};
	int rc = client_config(cfg, &conf);

	if (rc != 0)
		return rc;
	pthread_mutex_lock(&f->lock);
	c->cfg = conf;
	hot_copies(c);
	jd_fp_sync(f, c);
	check_unblock(f, c, &d);
	unlock(f);
	report(f, &d);
	return 0;
}

static void counters_add(struct jd_fair_counters *t, const struct jd_fair_counters *c)
{
	t->submitted += c->submitted;
	t->dispatched += c->dispatched;
	t->completed += c->completed;
	t->cancelled += c->cancelled;
	t->expired += c->expired;
	t->dropped += c->dropped;
	t->rejected += c->rejected;
	t->service_jobs += c->service_jobs;
	t->service_cost += c->service_cost;
	t->service_ns += c->service_ns;
}

int jd_fair_client_remove(struct jd_fair *f, struct jd_fair_client *c)
{
	pthread_mutex_lock(&f->lock);
	if (c->queued != 0 || c->held != 0 || c->inflight != 0) {
		unlock(f);
		return JSCHED_EAGAIN;
	}
	if (c->blocked & JD_FAIR_BLK_GLOBAL)
		list_del(&f->gblocked, c);
	if (c->on_unblocked)
		list_del(&f->unblocked, c);
	counters_add(&f->removed, &c->ctr);
	struct jd_fair_client *last = f->clients[--f->nclients];
	if (last != c) {
		f->clients[c->reg_idx] = last;
		jd_fp_renumber(f, last->reg_idx, c->reg_idx);
		last->reg_idx = c->reg_idx;
	}
	unlock(f);
	free(c->name);
	free(c->xflow);
	free(c);
	return 0;
}

void *jd_fair_client_udata(const struct jd_fair_client *c)
{
	return c->udata;
}

const char *jd_fair_client_name(const struct jd_fair_client *c)
{
	return c->name;
}

/* ---- jobs -------------------------------------------------------------------------- */

int jd_fair_admit(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job)
{
	struct jd_fair_done d = {0};
	int rc = JD_FAIR_QUEUED;

	if (job->prio >= JD_FAIR_NPRIO)
		return JSCHED_EINVAL;
	pthread_mutex_lock(&f->lock);
	if (job->state == JD_FAIR_STATE_QUEUED || job->state == JD_FAIR_STATE_HELD ||
	    job->cls >= f->nclasses) {
		unlock(f);
		return JSCHED_EINVAL;
	}
	if (job->cls != 0 && c->xflow == NULL) {
		/* The client's first job of a class other than 0: its other flows. */
		size_t sz = (JD_FAIR_MAX_CLASSES - 1) * sizeof(*c->xflow);
		c->xflow = aligned_alloc(64, (sz + 63) & ~(size_t)63);
		if (c->xflow == NULL) {
			unlock(f);
			return JSCHED_ENOMEM;
		}
		memset(c->xflow, 0, sz);
		for (unsigned k = 1; k < JD_FAIR_MAX_CLASSES; k++) {
			c->xflow[k - 1].client = c;
			c->xflow[k - 1].cls = (uint8_t)k;
		}
	}
	bool was_backlogged = c->queued > 0;
	bool gfull = f->max_queued != 0 && fair_load(f) >= f->max_queued;
	bool cfull = c->max_queued != 0 && client_load(c) >= c->max_queued;

	if (gfull || cfull) {
		struct jd_fair_job *victim;
		switch ((enum jd_fair_overflow)c->overflow) {
		case JD_FAIR_BLOCK:
			if (!gfull)
				break;	/* the client's own limit is soft under block */
			/* fall through */
		case JD_FAIR_REJECT:
			c->ctr.rejected++;
			unlock(f);
			return JSCHED_EQUEUE_FULL;
		case JD_FAIR_DROP_OLDEST:
		case JD_FAIR_DROP_NEWEST:
			victim = jd_fq_victim(c, job, c->overflow == JD_FAIR_DROP_OLDEST);
			c->ctr.dropped++;
			if (victim == job) {
				job->client = c;
				job->seq = ++f->seq;
				c->ctr.submitted++;
				done_add(&d, job, JD_FAIR_DROPPED);
				rc = JD_FAIR_DROPPED_NEW;
				goto out_unlock;
			}
			/* The incoming job takes its place: the client stays backlogged (the
			 * flows' membership is settled below). */
			unqueue(f, c, victim);
			done_add(&d, victim, JD_FAIR_DROPPED);
			was_backlogged = was_backlogged && c->queued > 0;
			break;
		}
	}

	job->client = c;
	job->seq = ++f->seq;
	job->charge = 0;
	enqueue(f, c, job, false);
	if (job->deadline_ns != 0)
		jd_pheap_insert(&f->expiry, &job->exp, jd_fq_expiry_less);
	c->ctr.submitted++;
	jd_fp_note_cost(f, jd_fair_job_cost(job));
	if (!was_backlogged)
		jd_fw_busy(c, now_ns(f));
	if (jd_fair_flow_of(c, job->cls)->queued == 1)
		jd_fp_sync(f, c);
	if (c->overflow == JD_FAIR_BLOCK) {
		unsigned bits = 0;
		if (c->max_queued != 0 && client_load(c) >= c->max_queued)
			bits |= JD_FAIR_BLK_CLIENT;
		if (f->max_queued != 0 && fair_load(f) >= f->max_queued)
			bits |= JD_FAIR_BLK_GLOBAL;
		if (bits != 0)
			block(f, c, bits);
		if (c->blocked != 0)
			rc = JD_FAIR_BLOCKED;
	}
out_unlock:
	unlock(f);
	report(f, &d);
	return rc;
}

/* per_job_taken: job, of class h with per-job needs, has been dispatched to client c:
 * it holds its own amounts; under `fair` with DRF its charge (made at its class's fixed
 * factor) grows to its own dominant share.  Out of line: class 0 never comes here. */
static __attribute__((noinline)) void per_job_taken(struct jd_fair *f, struct jd_fair_client *c,
						    const struct jd_fair_cls *h,
						    struct jd_fair_job *job)
{
	for (uint32_t m = h->vmask; m != 0; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);
		uint32_t a = jd_fair_amount(h, job, r);

		f->res_used[r] += a;
		c->res_held[r] += a;
	}
	if (f->policy == JD_FAIR_POLICY_FAIR && job->charge != 0) {
		double more = job->charge * (jd_fp_job_factor(f, h, job) / h->factor - 1);

		job->charge += more;
		jd_fp_correct(f, c, more);
	}
}

/* per_job_completed: job, of class h with per-job needs, has completed: its amounts come
 * back, and under `fair` its client is charged the part of its run time that its own
 * dominant share adds to its class's fixed factor (complete_locked charges the rest). */
static __attribute__((noinline)) void per_job_completed(struct jd_fair *f,
							struct jd_fair_client *c,
							const struct jd_fair_cls *h,
							const struct jd_fair_job *job)
{
	for (uint32_t m = h->vmask; m != 0; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);
		uint32_t a = jd_fair_amount(h, job, r);

		f->res_used[r] -= a;
		c->res_held[r] -= a;
	}
	if (f->policy == JD_FAIR_POLICY_FAIR) {
		double extra = (double)job->run_ns * (jd_fp_job_factor(f, h, job) - h->factor);

		if (extra > 0)
			jd_fp_correct(f, c, extra / (double)c->weight);
	}
}

/* Dispatch up to max jobs of the classes in `classes` into out[] (the lock is held);
 * returns how many.  Inlined, so that the callers taking every class (~0u) compile to the
 * loop without the mask. */
static inline __attribute__((always_inline)) size_t take_locked(struct jd_fair *f, struct jd_fair_job **out, size_t max, uint64_t now,
			  unsigned classes, struct jd_fair_done *d)
{
	size_t n = 0, room = max;

	if (f->expiry != NULL)
		expire_due(f, now, d);
	if (f->paused)
		return 0;
	uint32_t lim = atomic_load_explicit(&f->max_inflight, memory_order_relaxed);
	if (lim != 0) {
		uint64_t inflight = rd(&f->inflight);
		uint64_t free_room = inflight >= lim ? 0 : lim - inflight;
		if (free_room < room)
			room = (size_t)free_room;
	}
	unsigned fit = (f->nclasses == 1 ? 1u : jd_fp_fit(f)) & classes;
	/* Every class (fit == all: nothing waits for capacity, no pass to count).  A take
	 * restricted to some classes passes over no one: it counts no passes. */
	unsigned all = f->nclasses == 1 ? 1u : ((1u << f->nclasses) - 1) & ~f->cls_free;
	bool count_passes = classes == ~0u, several = f->nclasses != 1;
	while (n < room && rd(&f->queued) > 0 && (classes == ~0u || fit != 0)) {
		struct jd_fair_client *c = jd_fp_pick(f, fit);
		if (c == NULL)
			break;
		struct jd_fair_job *job = jd_fp_head(f, c, fit);

		if (several) {
			/* Per-job needs: the job's own amounts must fit (jd_fp_fit looked at
			 * the class's head; c's head of that class may be another job).  Its
			 * class is out until the next dispatch: each turn of the loop
			 * dispatches or takes a class out of `fit`, so the loop ends. */
			if (f->cls[job->cls].vmask != 0 &&
			    !jd_fp_amounts_fit(f, &f->cls[job->cls], job)) {
				fit &= ~(1u << job->cls);
				continue;
			}
			/* Was a better flow of another class passed over (it does not fit),
			 * and is it time to hold what it lacks for it? */
			if (count_passes && fit != all && f->resv < 0) {
				jd_fp_passed(f, fit, c, job);
				if (f->resv >= 0) {
					fit = jd_fp_fit(f);
					continue; /* choose again without the held resources */
				}
			}
		}
		/* The policy first (for `fair` it needs only the client and the heap), so
		 * the job's cache miss overlaps the sift; then prefetch the next client. */
		__builtin_prefetch(job, 1);
		double charged = jd_fp_served(f, c, job);
		jd_fp_prefetch(f);
		uint32_t cost = jd_fair_job_cost(job);
		bool emptied = unqueue(f, c, job);
		struct jd_fair_cls *h = &f->cls[job->cls];	/* before the byte stores */
		job->charge = charged;
		c->inflight++;
		job->state = JD_FAIR_DISPATCHED;
		c->ctr.dispatched++;
		c->ctr.service_jobs++;
		c->ctr.service_cost += cost;
		if (h->rmask != 0) {
			f->cls[job->cls].running++;
			f->cls[job->cls].passes = 0;
			if (f->resv == (int)job->cls)
				f->resv = -1;	/* it got what was held for it */
			for (uint32_t m = h->rmask; m != 0; m &= m - 1) {
				unsigned r = (unsigned)__builtin_ctz(m);
				f->res_used[r] += h->need[r];
				c->res_held[r] += h->need[r];
			}
			if (h->vmask != 0)
				per_job_taken(f, c, h, job);
			fit = jd_fp_fit(f) & classes;
		}
		/* Its flows' membership changes only if the job's flow emptied or a limit
		 * may have been reached. */
		if (jd_fair_flow_of(c, job->cls)->queued == 0 || c->max_running != 0 || c->res_limits)
			jd_fp_sync(f, c);
		if (emptied)
			jd_fw_idle(f, c, now);
		if (c->blocked != 0)
			check_unblock(f, c, d);
		out[n++] = job;
	}
	add(&f->inflight, n);
	if (n != 0)
		check_global(f, d);
	return n;
}

/* Account for completed jobs (the lock is held).  Returns whether they made room for
 * jobs that had to wait (units given back, a client back under max_running). */
static bool complete_locked(struct jd_fair *f, struct jd_fair_job *const *jobs, size_t n,
			    uint64_t now)
{
	uint64_t epoch = jd_fw_epoch(f, now);
	bool room = false;

	for (size_t i = 0; i < n; i++) {
		struct jd_fair_job *job = jobs[i];
		struct jd_fair_client *c = job->client;
		struct jd_fair_cls *h = &f->cls[job->cls];
		double run = (double)job->run_ns;

		c->inflight--;
		if (h->rmask != 0) {
			for (uint32_t m = h->rmask; m != 0; m &= m - 1) {
				unsigned r = (unsigned)__builtin_ctz(m);
				f->res_used[r] -= h->need[r];
				c->res_held[r] -= h->need[r];
			}
			if (h->vmask != 0)
				per_job_completed(f, c, h, job);
		}
		c->ctr.completed++;
		c->ctr.service_ns += job->run_ns;
		jd_fw_add(c, epoch, 1, jd_fair_job_cost(job), job->run_ns);
		if (f->policy == JD_FAIR_POLICY_FAIR)
			jd_fp_correct(f, c, run * h->factor / (double)c->weight - job->charge);
		job->charge = 0;
		/* The estimate of the client's jobs of this class: a running mean over about
		 * their last 8 completions. */
		struct jd_fair_flow *fl = jd_fair_flow_of(c, job->cls);
		if (fl->est_known) {
			fl->est_ns += (run - fl->est_ns) / 8;
		} else {
			fl->est_ns = run;
			fl->est_known = true;
		}
		/* Back under a limit: its flows may be served again. */
		if (c->max_running != 0 || h->rmask != 0) {
			room = true;
			if (h->rmask != 0)
				h->running--;
			if (c->fmask != 0 && (c->max_running != 0 || c->res_limits))
				jd_fp_sync(f, c);
		}
	}
	sub(&f->inflight, n);
	return room;
}

/* After the lock: the hooks of what expired, then of what was dispatched. */
static void report_take(const struct jd_fair *f, struct jd_fair_done *d,
			struct jd_fair_job *const *out, size_t n)
{
	report(f, d);
	if (f->final_cb != NULL) {
		for (size_t i = 0; i < n; i++)
			f->final_cb(out[i], JD_FAIR_DISPATCHED, f->udata);
	}
}

size_t jd_fair_take(struct jd_fair *f, struct jd_fair_job **out, size_t max)
{
	struct jd_fair_done d = {0};

	pthread_mutex_lock(&f->lock);
	size_t n = take_locked(f, out, max, now_ns(f), ~0u, &d);
	unlock(f);
	report_take(f, &d, out, n);
	return n;
}

size_t jd_fair_take_classes(struct jd_fair *f, struct jd_fair_job **out, size_t max, unsigned classes)
{
	struct jd_fair_done d = {0};

	pthread_mutex_lock(&f->lock);
	size_t n = take_locked(f, out, max, now_ns(f), classes, &d);
	unlock(f);
	report_take(f, &d, out, n);
	return n;
}

bool jd_fair_complete(struct jd_fair *f, struct jd_fair_job *const *jobs, size_t n)
{
	if (n == 0)
		return false;
	pthread_mutex_lock(&f->lock);
	bool room = complete_locked(f, jobs, n, now_ns(f));
	unlock(f);
	return room && rd(&f->ready) > 0;
}

size_t jd_fair_complete_take(struct jd_fair *f, struct jd_fair_job **done, size_t ndone,
			     struct jd_fair_job **out, size_t max, bool *room)
{
	struct jd_fair_done d = {0};

	pthread_mutex_lock(&f->lock);
	uint64_t now = now_ns(f);
	bool made = complete_locked(f, done, ndone, now); /* reads done[] before out[] is written */
	size_t n = take_locked(f, out, max, now, ~0u, &d);
	unlock(f);
	report_take(f, &d, out, n);
	if (room)
		*room = made && rd(&f->ready) > 0;
	return n;
}

int jd_fair_hold(struct jd_fair *f, struct jd_fair_job *job)
{
	pthread_mutex_lock(&f->lock);
	if (job->state != JD_FAIR_STATE_QUEUED) {
		unlock(f);
		return JSCHED_ENO_SUCH_JOB;
	}
	struct jd_fair_client *c = job->client;
	/* Out of its flow, but still in the expiry heap: a held job expires. */
	bool emptied = unlink_job(f, c, job);
	job->state = JD_FAIR_STATE_HELD;
	job->prev = NULL;
	job->next = c->held_head;
	if (c->held_head != NULL)
		c->held_head->prev = job;
	c->held_head = job;
	c->held++;
	f->held++;
	jd_fp_sync(f, c);
	if (emptied)
		jd_fw_idle(f, c, now_ns(f));
	unlock(f);
	return 0;
}

int jd_fair_release(struct jd_fair *f, struct jd_fair_job *job)
{
	pthread_mutex_lock(&f->lock);
	if (job->state != JD_FAIR_STATE_HELD) {
		unlock(f);
		return JSCHED_ENO_SUCH_JOB;
	}
	struct jd_fair_client *c = job->client;
	unlink_job(f, c, job);	/* it stays in the expiry heap */
	bool was_backlogged = c->queued > 0;
	enqueue(f, c, job, true);
	if (!was_backlogged)
		jd_fw_busy(c, now_ns(f));
	jd_fp_sync(f, c);
	unlock(f);
	return 0;
}

int jd_fair_cancel(struct jd_fair *f, struct jd_fair_job *job)
{
	struct jd_fair_done d = {0};

	pthread_mutex_lock(&f->lock);
	if (job->state != JD_FAIR_STATE_QUEUED && job->state != JD_FAIR_STATE_HELD) {
		unlock(f);
		return JSCHED_ENO_SUCH_JOB;
	}
	struct jd_fair_client *c = job->client;
	bool emptied = unqueue(f, c, job);
	c->ctr.cancelled++;
	done_add(&d, job, JD_FAIR_CANCELLED);
	after_removal(f, c, emptied ? now_ns(f) : 0, &d);
	check_global(f, &d);
	unlock(f);
	report(f, &d);
	return 0;
}

size_t jd_fair_drain(struct jd_fair *f, struct jd_fair_client *c)
{
	struct jd_fair_done d = {0};
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	bool busy = c->queued > 0;
	while (c->held_head != NULL) {
		struct jd_fair_job *job = c->held_head;
		unqueue(f, c, job);
		done_add(&d, job, JD_FAIR_CANCELLED);
		n++;
	}
	while (c->fmask != 0) {
		struct jd_fair_flow *fl = jd_fair_flow_of(c, (unsigned)__builtin_ctz(c->fmask));
		for (int p = 0; p < JD_FAIR_NPRIO; p++) {
			while (fl->pq[p].head != NULL) {
				struct jd_fair_job *job = fl->pq[p].head;
				unqueue(f, c, job);
				done_add(&d, job, JD_FAIR_CANCELLED);
				n++;
			}
		}
	}
	if (n != 0) {
		c->ctr.cancelled += n;
		after_removal(f, c, busy ? now_ns(f) : 0, &d);
		check_global(f, &d);
	}
	unlock(f);
	report(f, &d);
	return n;
}

uint64_t jd_fair_next_deadline(struct jd_fair *f)
{
	uint64_t t = UINT64_MAX;

	pthread_mutex_lock(&f->lock);
	if (f->expiry != NULL)
		t = job_of_exp(f->expiry)->deadline_ns;
	unlock(f);
	return t;
}

size_t jd_fair_expire(struct jd_fair *f)
{
	struct jd_fair_done d = {0};
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	if (f->expiry != NULL)
		n = expire_due(f, now_ns(f), &d);
	unlock(f);
	report(f, &d);
	return n;
}

size_t jd_fair_ready(const struct jd_fair *f)
{
	uint64_t q = rd(&f->ready);
	uint32_t lim = atomic_load_explicit(&f->max_inflight, memory_order_relaxed);

	if (lim != 0) {
		uint64_t inflight = rd(&f->inflight);
		uint64_t room = inflight >= lim ? 0 : lim - inflight;
		if (room < q)
			q = room;
	}
	return (size_t)q;
}

size_t jd_fair_unblocked(struct jd_fair *f, struct jd_fair_client **out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&f->lock);
	while (n < max && f->unblocked != NULL) {
		struct jd_fair_client *c = f->unblocked;
		list_del(&f->unblocked, c);
		c->on_unblocked = false;
		out[n++] = c;
	}
	unlock(f);
	return n;
}

/* ---- figures ----------------------------------------------------------------------- */

void jd_fair_stats(struct jd_fair *f, enum jd_fair_metric metric, struct jd_fair_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->lock);
	out->policy = f->policy;
	out->metric = jd_fw_metric(f, metric);
	out->queued = rd(&f->queued);
	out->inflight = rd(&f->inflight);
	out->held = f->held;
	out->paused = f->paused;
	out->nres = f->nres;
	memcpy(out->res_cap, f->res_cap, sizeof(out->res_cap));
	memcpy(out->res_used, f->res_used, sizeof(out->res_used));
	for (uint32_t k = 0; k < f->nclasses; k++) {
		out->cls_queued[k] = f->cls[k].queued;
		out->cls_factor[k] = f->cls[k].factor;
	}
	out->reserved = f->resv;
	out->reservations = f->reservations;
	out->clients = (uint32_t)f->nclients;
	out->total = f->removed;
	for (size_t i = 0; i < f->nclients; i++) {
		const struct jd_fair_client *c = f->clients[i];
		counters_add(&out->total, &c->ctr);
		if (c->queued > 0)
			out->backlogged++;
	}
	jd_fw_figures(f, now_ns(f), out);
	unlock(f);
}

void jd_fair_client_stats(struct jd_fair *f, struct jd_fair_client *c,
			  const struct jd_fair_stats *totals, struct jd_fair_client_stats *out)
{
	struct jd_fair_stats none;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->lock);
	if (totals == NULL) {	/* no totals: the window's own figures, shares 0 */
		memset(&none, 0, sizeof(none));
		none.metric = jd_fw_metric(f, JD_FAIR_METRIC_POLICY);
		none.slice_last = jd_fw_epoch(f, now_ns(f));
		totals = &none;
	}
	out->name = c->name;
	out->config = c->cfg;
	out->queued = c->queued;
	out->inflight = c->inflight;
	for (unsigned m = c->fmask; m != 0; m &= m - 1) {
		const struct jd_fair_flow *fl = jd_fair_cflow_of(c, (unsigned)__builtin_ctz(m));
		for (int p = 0; p < JD_FAIR_NPRIO; p++)
			out->queued_prio[p] += fl->pq[p].n;
	}
	out->held = c->held;
	memcpy(out->res_held, c->res_held, sizeof(out->res_held));
	out->paused = c->paused;
	out->at_limit = c->max_running != 0 && c->inflight >= c->max_running;
	out->blocked = c->blocked != 0;
	out->counters = c->ctr;
	jd_fw_client_figures(f, c, totals, out);
	unlock(f);
}

void jd_fair_foreach_client(struct jd_fair *f, void (*fn)(struct jd_fair_client *c, void *arg),
			    void *arg)
{
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nclients; i++)
		fn(f->clients[i], arg);
	unlock(f);
}

/* ---- names ------------------------------------------------------------------------- */

static const char *const policy_names[] = {"fair", "drr", "wrr"};
static const char *const overflow_names[] = {"reject", "drop_oldest", "drop_newest", "block"};
static const char *const final_names[] = {"?", "dispatched", "cancelled", "expired", "dropped"};

const char *jd_fair_policy_name(enum jd_fair_policy p)
{
	return (unsigned)p <= JD_FAIR_POLICY_WRR ? policy_names[p] : "?";
}

int jd_fair_policy_parse(const char *name, enum jd_fair_policy *out)
{
	for (unsigned i = 0; i <= JD_FAIR_POLICY_WRR; i++) {
		if (strcmp(name, policy_names[i]) == 0) {
			*out = (enum jd_fair_policy)i;
			return 0;
		}
	}
	return JSCHED_EINVAL;
}

const char *jd_fair_final_name(enum jd_fair_final s)
{
	return (unsigned)s <= JD_FAIR_DROPPED ? final_names[s] : "?";
}

const char *jd_fair_overflow_name(enum jd_fair_overflow o)
{
	return (unsigned)o <= JD_FAIR_BLOCK ? overflow_names[o] : "?";
}

int jd_fair_overflow_parse(const char *name, enum jd_fair_overflow *out)
{
	for (unsigned i = 0; i <= JD_FAIR_BLOCK; i++) {
		if (strcmp(name, overflow_names[i]) == 0) {
			*out = (enum jd_fair_overflow)i;
			return 0;
		}
	}
	return JSCHED_EINVAL;
}
