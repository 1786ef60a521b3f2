/* daemon/pool/deque.c: the Chase-Lev deque (see deque.h for the algorithm and its source).
 *
 * Where the ordering lives: the seq_cst fence in pop (between publishing the decremented
 * bottom and reading top: a StoreLoad that thieves pair with their own fence between
 * reading top and bottom) and the seq_cst CAS on top.  JLib's model-checking negative
 * control shows the pop fence is not optional: without it two threads take one item.
 * The steal CAS stays seq_cst as in the paper (the same instruction on x86-64).
 */
#include "daemon/pool/deque.h"

#include <stdlib.h>

#include "jsched/error.h"

static struct jd_deque_array *array_new(int64_t cap)
{
	struct jd_deque_array *a = malloc(sizeof(*a) + (size_t)cap * sizeof(a->slot[0]));
	if (!a)
		return NULL;
	a->mask = cap - 1;
	a->older = NULL;
	for (int64_t i = 0; i < cap; i++)
		atomic_init(&a->slot[i], NULL);
	return a;
}

int jd_deque_init(struct jd_deque *q, unsigned log2cap)
{
	struct jd_deque_array *a = array_new((int64_t)1 << log2cap);
	if (!a)
		return JSCHED_ENOMEM;
	atomic_init(&q->top, 0);
	atomic_init(&q->bottom, 0);
	atomic_init(&q->array, a);
	return 0;
}

void jd_deque_fini(struct jd_deque *q)
{
	struct jd_deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
	while (a) {
		struct jd_deque_array *older = a->older;
		free(a);
		a = older;
	}
	atomic_store_explicit(&q->array, NULL, memory_order_relaxed);
}

/* grow: copy [t, b) into an array twice as large and publish it (release, pairing with
 * the thieves' acquire load of the array).  The old array stays readable. */
static struct jd_deque_array *grow(struct jd_deque *q, struct jd_deque_array *a, int64_t t,
				   int64_t b)
{
	struct jd_deque_array *n = array_new((a->mask + 1) * 2);
	if (!n)
		return NULL;
	for (int64_t i = t; i < b; i++)
		atomic_store_explicit(&n->slot[i & n->mask],
				      atomic_load_explicit(&a->slot[i & a->mask],
							   memory_order_relaxed),
				      memory_order_relaxed);
	n->older = a;
	atomic_store_explicit(&q->array, n, memory_order_release);
	return n;
}

int jd_deque_push(struct jd_deque *q, void *x)
{
	int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit(&q->top, memory_order_acquire);
	struct jd_deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
	if (b - t > a->mask) {
		a = grow(q, a, t, b); /* the re-read the published text forgot */
		if (!a)
			return JSCHED_ENOMEM;
	}
	atomic_store_explicit(&a->slot[b & a->mask], x, memory_order_relaxed);
	/* F2: publish the slot (and the item it points to) before the new bottom.  The
	 * paper has a release fence and a relaxed store; a release store is the same
	 * instruction on x86-64 and is what ThreadSanitizer, which ignores fences, sees. */
	atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
	return 0;
}

void *jd_deque_pop(struct jd_deque *q)
{
	int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed) - 1;
	struct jd_deque_array *a = atomic_load_explicit(&q->array, memory_order_relaxed);
	atomic_store_explicit(&q->bottom, b, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst); /* F1: never remove (see the top) */
	int64_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
	void *x = NULL;
	if (t <= b) {
		x = atomic_load_explicit(&a->slot[b & a->mask], memory_order_relaxed);
		if (t == b) { /* the last item: race the thieves for it */
			if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1,
								     memory_order_seq_cst,
								     memory_order_relaxed))
				x = NULL;
			atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
		}
	} else {
		atomic_store_explicit(&q->bottom, b + 1, memory_order_relaxed);
	}
	return x;
}

void *jd_deque_steal(struct jd_deque *q)
{
	int64_t t = atomic_load_explicit(&q->top, memory_order_acquire);
	atomic_thread_fence(memory_order_seq_cst); /* F3: pairs with F1 */
	int64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
	if (t >= b)
		return NULL;
	struct jd_deque_array *a = atomic_load_explicit(&q->array, memory_order_acquire);
	void *x = atomic_load_explicit(&a->slot[t & a->mask], memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&q->top, &t, t + 1, memory_order_seq_cst,
						     memory_order_relaxed))
		return JD_DEQUE_ABORT;
	return x;
}
