/* daemon/pool/deque.h: the Chase-Lev work-stealing deque (one owner, any number of thieves).
 *
 * The owner pushes and pops at the bottom (LIFO, no atomic read-modify-write except when
 * taking the last item); thieves take from the top (FIFO) with one CAS.  The memory
 * orderings are those of Le, Pop, Cohen and Zappa Nardelli, "Correct and efficient
 * work-stealing for weak memory models" (PPoPP 2013), with the two known repairs: indices
 * are signed 64-bit (a pop on an empty deque must not wrap), and push re-reads the array
 * after growing it.  Slots are atomics (a thief may read a slot the owner is overwriting;
 * the CAS then fails, but the read itself must not be a data race).  Growing copies into
 * a twice larger array; the old one is kept until jd_deque_fini, because a thief that
 * loaded its address may still read it.  Items are non-NULL pointers.
 */
#ifndef JD_POOL_DEQUE_H
#define JD_POOL_DEQUE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jd_deque_array {
	int64_t mask;			/* capacity - 1 (capacity is a power of two) */
	struct jd_deque_array *older;	/* retired arrays, freed by jd_deque_fini */
	_Atomic(void *) slot[];
};

/* Returned by jd_deque_steal when it lost a race (the deque may not be empty). */
#define JD_DEQUE_ABORT ((void *)1)

struct jd_deque {
	alignas(128) atomic_int_least64_t top;		/* thieves CAS it; owner reads */
	alignas(128) atomic_int_least64_t bottom;	/* owner writes; thieves read */
	_Atomic(struct jd_deque_array *) array;		/* owner replaces; thieves read */
	char pad[128 - sizeof(void *)];
};

/* jd_deque_init: an empty deque with room for 2^log2cap items before it grows.
 * Returns 0 or JSCHED_ENOMEM.  Before the deque is shared. */
int jd_deque_init(struct jd_deque *q, unsigned log2cap);

/* jd_deque_fini: free the arrays.  No thread may use the deque any more. */
void jd_deque_fini(struct jd_deque *q);

/* jd_deque_push: put x (non-NULL) at the bottom.  Returns 0, or JSCHED_ENOMEM if the
 * deque was full and could not grow.  Owner only. */
int jd_deque_push(struct jd_deque *q, void *x);

/* jd_deque_pop: take the bottom item; NULL if empty.  Owner only. */
void *jd_deque_pop(struct jd_deque *q);

/* jd_deque_steal: take the top item; NULL if empty, JD_DEQUE_ABORT if another thread won
 * the race for it.  Any thread. */
void *jd_deque_steal(struct jd_deque *q);

/* jd_deque_size: the number of items, exact for the owner, a hint for anyone else. */
static inline int64_t jd_deque_size(const struct jd_deque *q)
{
	int64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit(&q->top, memory_order_relaxed);
	return b > t ? b - t : 0;
}

#endif /* JD_POOL_DEQUE_H */
