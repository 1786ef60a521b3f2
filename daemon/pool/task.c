/* daemon/pool/task.c: fixed-size task records without malloc on the hot path.
 *
 * Records come from slabs of TASKS_PER_SLAB.  Each worker keeps a private free list (no
 * atomics: it allocates the tasks it spawns and frees every task it runs); a thread
 * outside the pool keeps a thread-local cache.  Both refill from, and spill to, one shared
 * stack of chunks of TASK_BATCH records under a spin lock, so the lock is taken once per
 * TASK_BATCH tasks; a new slab is malloc'd only when the shared list is empty.  Slabs are
 * freed when the pool is destroyed, never before, so a record's memory stays valid for the
 * pool's lifetime (the deque's ABA-free reasoning relies on records being reused only
 * through these lists).
 *
 * A non-worker keeps caches for up to EXT_CACHES pools, each tagged with the pool's id
 * (unique in the process).  A cache is never handed back: its pool may be gone.  When a
 * thread feeds more pools than that, the oldest slot's records are abandoned to their
 * pool (unused until it is destroyed, at most 63 records each time), never reused.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

#define TASKS_PER_SLAB 256
#define TASK_BATCH 64

#define EXT_CACHES 4 /* pools a thread outside them can feed without losing its cache */

struct ext_cache {
	uint64_t pool_id;
	struct jd_task *free;
	unsigned n;
};

static _Thread_local struct ext_cache ext_caches[EXT_CACHES];
static _Thread_local unsigned ext_next_victim;

/* ext_cache_of: this thread's cache for pool p (taking over the least recently claimed
 * slot, whose records are abandoned to their pool, if p has none). */
static struct ext_cache *ext_cache_of(struct jd_pool *p)
{
	for (unsigned i = 0; i < EXT_CACHES; i++)
		if (ext_caches[i].pool_id == p->id)
			return &ext_caches[i];
	struct ext_cache *c = &ext_caches[ext_next_victim++ % EXT_CACHES];
	c->pool_id = p->id;
	c->free = NULL;
	c->n = 0;
	return c;
}

int jd_tasks_init(struct jd_pool *p)
{
	atomic_init(&p->task_lock, 0);
	p->task_free = NULL;
	p->task_nfree = 0;
	p->slabs = NULL;
	p->nslabs = p->capslabs = 0;
	return 0;
}

void jd_tasks_fini(struct jd_pool *p)
{
	for (size_t i = 0; i < p->nslabs; i++)
		free(p->slabs[i]);
	free(p->slabs);
	p->slabs = NULL;
	p->nslabs = p->capslabs = 0;
	p->task_free = NULL;
}

/* The shared free list is a stack of chunks of TASK_BATCH records each, so that taking
 * or giving back a batch is O(1) under the lock.  (It first was one long list, cut
 * TASK_BATCH links deep on every refill: the cut walked records last written by another
 * core, one cache miss per link, and refill became 23% of the profile of 100k tasks
 * submitted from one thread.)  A chunk's first record carries the link to the next chunk
 * in `arg` and its length in `unused`; the records of a chunk are linked by `next`. */

/* refill: take one chunk (allocating a slab when there is none); *n gets its length.
 * NULL when out of memory. */
static struct jd_task *refill(struct jd_pool *p, unsigned *n)
{
	jd_spin_lock(&p->task_lock);
	struct jd_task *chunk = p->task_free;
	if (chunk) {
		p->task_free = chunk->arg;
		p->task_nfree -= chunk->unused;
		jd_spin_unlock(&p->task_lock);
		*n = chunk->unused;
		return chunk;
	}
	if (p->nslabs == p->capslabs) {
		size_t cap = p->capslabs ? p->capslabs * 2 : 16;
		void **s = realloc(p->slabs, cap * sizeof(*s));
		if (!s) {
			jd_spin_unlock(&p->task_lock);
			return NULL;
		}
		p->slabs = s;
		p->capslabs = cap;
	}
	struct jd_task *slab = aligned_alloc(64, TASKS_PER_SLAB * sizeof(*slab));
	if (!slab) {
		jd_spin_unlock(&p->task_lock);
		return NULL;
	}
	p->slabs[p->nslabs++] = slab;
	/* Cut the slab into chunks; keep the first, stack the others. */
	for (unsigned c = 0; c < TASKS_PER_SLAB; c += TASK_BATCH) {
		for (unsigned i = c; i < c + TASK_BATCH; i++)
			slab[i].next = i + 1 < c + TASK_BATCH ? &slab[i + 1] : NULL;
		slab[c].unused = TASK_BATCH;
		if (c) {
			slab[c].arg = p->task_free;
			p->task_free = &slab[c];
			p->task_nfree += TASK_BATCH;
		}
	}
	jd_spin_unlock(&p->task_lock);
	*n = TASK_BATCH;
	return slab;
}

struct jd_task *jd_task_alloc(struct jd_pool *p, struct jd_worker *w)
{
	struct jd_task *t;
	if (w) {
		if (!w->free) {
			unsigned n;
			w->free = refill(p, &n);
			if (!w->free)
				return NULL;
			w->nfree = n;
		}
		t = w->free;
		w->free = t->next;
		w->nfree--;
		return t;
	}
	struct ext_cache *c = ext_cache_of(p);
	if (!c->free) {
		unsigned n;
		c->free = refill(p, &n);
		if (!c->free)
			return NULL;
		c->n = n;
	}
	t = c->free;
	c->free = t->next;
	c->n--;
	return t;
}

void jd_task_free(struct jd_worker *w, struct jd_task *t)
{
	t->next = w->free;
	w->free = t;
	if (++w->nfree < 2 * TASK_BATCH)
		return;
	/* Give one chunk back to the shared stack: tasks submitted from outside are
	 * allocated by one thread and freed by the workers, so records flow that way.
	 * The cut walks records this worker has just freed (in its cache). */
	struct jd_task *last = w->free;
	for (unsigned i = 1; i < TASK_BATCH; i++)
		last = last->next;
	struct jd_task *chunk = w->free;
	w->free = last->next;
	w->nfree -= TASK_BATCH;
	last->next = NULL;
	chunk->unused = TASK_BATCH;
	struct jd_pool *p = w->pool;
	jd_spin_lock(&p->task_lock);
	chunk->arg = p->task_free;
	p->task_free = chunk;
	p->task_nfree += TASK_BATCH;
	jd_spin_unlock(&p->task_lock);
}

void jd_task_unalloc(struct jd_pool *p, struct jd_worker *w, struct jd_task *t)
{
	if (w) {
		jd_task_free(w, t);
	} else {
		struct ext_cache *c = ext_cache_of(p);
		t->next = c->free;
		c->free = t;
		c->n++;
	}
}

int jd_task_check(const struct jd_task_spec *s)
{
	if (!s || !s->fn || s->payload_len > JD_TASK_PAYLOAD_MAX ||
	    (s->payload_len && !s->payload))
		return JSCHED_EINVAL;
	return 0;
}

int jd_task_fill(struct jd_task *t, const struct jd_task_spec *s)
{
	t->next = NULL;
	t->fn = s->fn;
	t->wg = s->wg;
	t->flags = (uint16_t)(s->flags & (JD_TASK_FIBER | JD_TASK_LARGE_STACK | JD_TASK_MIGRATE |
					  JD_TASK_KEEP));
	if (t->flags & JD_TASK_LARGE_STACK)
		t->flags |= JD_TASK_FIBER;
	t->kind = JD_TK_USER;
	if (s->payload_len) {
		memcpy(t->payload, s->payload, s->payload_len);
		t->arg = t->payload;
	} else {
		t->arg = s->arg;
	}
	return 0;
}
