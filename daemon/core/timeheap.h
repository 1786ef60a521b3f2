/* daemon/core/timeheap.h: a binary min-heap of timed entries, earliest first.
 *
 * The job table's one timer: every job that waits for a time of day (a scheduled job's
 * not_before, a retrying job's next attempt) has an entry here, and the table keeps one
 * libuv timer armed for the top entry instead of one timer per job.  An entry is
 * embedded in its owner (struct jd_job) and knows its own place, so it is removed in
 * O(log n) when its job is cancelled; the heap itself is one array of (time, tie, entry).  Entries
 * with the same time come out in the order of their tie value (the job id: first
 * submitted, first released).  Data only; the owner's thread (the loop thread).
 */
#ifndef JD_TIMEHEAP_H
#define JD_TIMEHEAP_H

#include <stddef.h>
#include <stdint.h>

struct jd_timed {
	uint64_t due_ms;	/* when (wall-clock ms, jd_now_ms) */
	uint64_t tie;		/* among equal times, smaller first */
	size_t slot;		/* its index in the heap + 1; 0: not in a heap */
};

/* A slot of the heap: the entry's key copied beside its pointer, so that sifting compares
 * within the array and never follows a pointer into a job (a cache miss per level of a
 * heap of a million).  Measured with bench/timers (a million delayed jobs, due times
 * cycling over 1,000 ms): with pointers only, their submit cost 1.52x the same jobs
 * queued; with the keys copied, 1.09x, for 16 more bytes an entry. */
struct jd_timeheap_slot {
	uint64_t due_ms, tie;
	struct jd_timed *e;
};

struct jd_timeheap {
	struct jd_timeheap_slot *v;
	size_t n, cap;
};

/* jd_timeheap_push: add e (not in a heap) with its due_ms and tie set.  Returns 0 or
 * JSCHED_ENOMEM (then e is not in the heap). */
int jd_timeheap_push(struct jd_timeheap *h, struct jd_timed *e);

/* jd_timeheap_remove: take e out of h if it is in it (else nothing happens). */
void jd_timeheap_remove(struct jd_timeheap *h, struct jd_timed *e);

/* jd_timeheap_top: the earliest entry, or NULL when h is empty. */
static inline struct jd_timed *jd_timeheap_top(const struct jd_timeheap *h)
{
	return h->n ? h->v[0].e : NULL;
}

/* jd_timeheap_pop: remove and return the earliest entry due at or before now_ms, or NULL
 * if there is none. */
struct jd_timed *jd_timeheap_pop_due(struct jd_timeheap *h, uint64_t now_ms);

/* jd_timeheap_free: release the array (the entries belong to their owners). */
void jd_timeheap_free(struct jd_timeheap *h);

#endif /* JD_TIMEHEAP_H */
