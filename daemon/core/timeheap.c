/* daemon/core/timeheap.c: the job table's timer heap (see timeheap.h). */
#include "daemon/core/timeheap.h"

#include <stdbool.h>
#include <stdlib.h>

#include "jsched/error.h"

static bool before(const struct jd_timeheap_slot *a, const struct jd_timeheap_slot *b)
{
	return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->tie < b->tie);
}

static void place(struct jd_timeheap *h, size_t i, const struct jd_timeheap_slot *s)
{
	h->v[i] = *s;
	s->e->slot = i + 1;
}

/* up / down: put slot s at index i's hole and move it until the heap is in order. */
static void up(struct jd_timeheap *h, size_t i, const struct jd_timeheap_slot *s)
{
	while (i > 0 && before(s, &h->v[(i - 1) / 2])) {
		place(h, i, &h->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(h, i, s);
}

static void down(struct jd_timeheap *h, size_t i, const struct jd_timeheap_slot *s)
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], s))
			break;
		place(h, i, &h->v[c]);
		i = c;
	}
	place(h, i, s);
}

int jd_timeheap_push(struct jd_timeheap *h, struct jd_timed *e)
{
	struct jd_timeheap_slot s = {e->due_ms, e->tie, e};

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct jd_timeheap_slot *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	up(h, h->n++, &s);
	return 0;
}

void jd_timeheap_remove(struct jd_timeheap *h, struct jd_timed *e)
{
	struct jd_timeheap_slot last;
	size_t i;

	if (!e->slot || e->slot > h->n || h->v[e->slot - 1].e != e)
		return;
	i = e->slot - 1;
	e->slot = 0;
	last = h->v[--h->n];
	if (i == h->n)
		return;
	/* The last entry fills the hole, then moves whichever way it must. */
	if (i > 0 && before(&last, &h->v[(i - 1) / 2]))
		up(h, i, &last);
	else
		down(h, i, &last);
}

struct jd_timed *jd_timeheap_pop_due(struct jd_timeheap *h, uint64_t now_ms)
{
	struct jd_timed *e;

	if (!h->n || h->v[0].due_ms > now_ms)
		return NULL;
	e = h->v[0].e;
	jd_timeheap_remove(h, e);
	return e;
}

void jd_timeheap_free(struct jd_timeheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
