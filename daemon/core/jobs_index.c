/* daemon/core/jobs_index.c: jobs in id order with counts per state (see jobs_index.h). */
#include "daemon/core/jobs_index.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/core/jobs.h"
#include "jsched/error.h"

_Static_assert(JD_IDX_NSTATES == JD_NSTATES, "jobs_index.h's state count");

struct jd_idx_chunk {
	uint64_t lo, hi;		/* the ids of v[0] and v[n - 1] when they were put */
	uint32_t n, live;		/* slots used (some NULL since), jobs in them */
	uint32_t by_state[JD_IDX_NSTATES];
	struct jd_job *v[JD_IDX_CHUNK];
};

static struct jd_idx_pos *pos_of(const struct jd_idx *x, struct jd_job *j)
{
	return (struct jd_idx_pos *)(void *)((char *)j + x->pos_off);
}

/* insert_chunk: a new empty chunk at x->chunks[at].  NULL on ENOMEM. */
static struct jd_idx_chunk *insert_chunk(struct jd_idx *x, size_t at)
{
	struct jd_idx_chunk *c;

	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 8;
		struct jd_idx_chunk **v = realloc(x->chunks, cap * sizeof(*v));

		if (!v)
			return NULL;
		x->chunks = v;
		x->cap = cap;
	}
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	memmove(x->chunks + at + 1, x->chunks + at, (x->n - at) * sizeof(*x->chunks));
	x->chunks[at] = c;
	x->n++;
	return c;
}

/* fill: c holds v[0..n) (sorted, none NULL) and nothing else. */
static void fill(const struct jd_idx *x, struct jd_idx_chunk *c, struct jd_job *const *v,
		 uint32_t n)
{
	memset(c->by_state, 0, sizeof(c->by_state));
	memset(c->v, 0, sizeof(c->v));
	c->n = c->live = n;
	for (uint32_t i = 0; i < n; i++) {
		struct jd_idx_pos *p = pos_of(x, v[i]);

		c->v[i] = v[i];
		c->by_state[v[i]->state]++;
		p->chunk = c;
	}
	c->lo = v[0]->id;
	c->hi = v[n - 1]->id;
}

/* first_above: the index of the first chunk whose hi is above id (x->n if none). */
static size_t first_above(const struct jd_idx *x, uint64_t id)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->chunks[mid]->hi > id)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* insert_inside: j's id is below chunk k's hi (and above the previous chunk's): with
 * room at the chunk's end, the slots above j's place move up one; else chunk k again
 * with j in its place, its empty slots dropped, split in two when that is more than a
 * chunk holds.  Ids mostly arrive in increasing order; a recovery restores final jobs
 * in the order they ended, a little out of id order, so j's place is near the end. */
static int insert_inside(struct jd_idx *x, size_t k, struct jd_job *j)
{
	struct jd_idx_chunk *c = x->chunks[k], *d;
	struct jd_job *v[JD_IDX_CHUNK + 1];
	uint32_t n = 0;
	bool placed = false;

	if (c->n < JD_IDX_CHUNK) {
		uint32_t i = c->n;

		for (; i > 0 && (!c->v[i - 1] || c->v[i - 1]->id > j->id); i--)
			c->v[i] = c->v[i - 1];
		c->v[i] = j;
		pos_of(x, j)->chunk = c;
		if (i == 0)
			c->lo = j->id;
		c->n++;
		c->live++;
		c->by_state[j->state]++;
		return 0;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		if (!c->v[i])
			continue;
		if (!placed && c->v[i]->id > j->id) {
			v[n++] = j;
			placed = true;
		}
		v[n++] = c->v[i];
	}
	if (!placed)
		v[n++] = j;
	if (n <= JD_IDX_CHUNK) {
		fill(x, c, v, n);
		return 0;
	}
	if (!(d = insert_chunk(x, k + 1)))
		return JSCHED_ENOMEM;
	fill(x, x->chunks[k], v, n / 2);
	fill(x, d, v + n / 2, n - n / 2);
	return 0;
}

int jd_idx_add(struct jd_idx *x, struct jd_job *j)
{
	struct jd_idx_chunk *c = x->n ? x->chunks[x->n - 1] : NULL;
	struct jd_idx_pos *p = pos_of(x, j);

	p->chunk = NULL;
	if (c && j->id < c->hi) {
		if (insert_inside(x, first_above(x, j->id), j) < 0)
			return JSCHED_ENOMEM;
	} else {
		/* The usual case: after every job in the index. */
		if ((!c || c->n == JD_IDX_CHUNK) && !(c = insert_chunk(x, x->n)))
			return JSCHED_ENOMEM;
		if (c->n == 0)
			c->lo = j->id;
		c->hi = j->id;
		c->v[c->n++] = j;
		p->chunk = c;
		c->live++;
		c->by_state[j->state]++;
	}
	x->count++;
	return 0;
}

void jd_idx_remove(struct jd_idx *x, struct jd_job *j)
{
	struct jd_idx_pos *p = pos_of(x, j);
	struct jd_idx_chunk *c = p->chunk;
	size_t k;
	uint32_t i = 0;

	if (!c)
		return;
	while (i < c->n - 1 && c->v[i] != j)
		i++;
	c->v[i] = NULL;
	c->by_state[j->state]--;
	p->chunk = NULL;
	x->count--;
	if (--c->live > 0)
		return;
	/* Empty: out of the array (found by its range; no two chunks share an id). */
	k = first_above(x, c->hi - 1);
	memmove(x->chunks + k, x->chunks + k + 1, (x->n - k - 1) * sizeof(*x->chunks));
	x->n--;
	free(c);
}

void jd_idx_move(const struct jd_idx_pos *pos, unsigned from, unsigned to)
{
	if (!pos->chunk)
		return;
	pos->chunk->by_state[from]--;
	pos->chunk->by_state[to]++;
}

size_t jd_idx_walk(const struct jd_idx *x, uint64_t after, unsigned states,
		   bool (*keep)(struct jd_job *j, void *arg), void *arg)
{
	size_t seen = 0;

	for (size_t k = first_above(x, after); k < x->n; k++) {
		const struct jd_idx_chunk *c = x->chunks[k];
		uint32_t any = 0;

		for (unsigned s = 0; s < JD_IDX_NSTATES; s++)
			if (states & (1u << s))
				any += c->by_state[s];
		if (!any)
			continue;
		for (uint32_t i = 0; i < c->n; i++) {
			struct jd_job *j = c->v[i];

			seen++;
			if (j && j->id > after && (states & (1u << j->state)) && !keep(j, arg))
				return seen;
		}
	}
	return seen;
}

void jd_idx_free(struct jd_idx *x)
{
	for (size_t k = 0; k < x->n; k++)
		free(x->chunks[k]);
	free(x->chunks);
	x->chunks = NULL;
	x->n = x->cap = x->count = 0;
}
