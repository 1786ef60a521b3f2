/* bench/pool/releaser.h: the timer thread of the blocking row.
 *
 * A task that "waits 600 us on a timer-signalled event" registers its event here with a
 * deadline and then waits on it; the releaser thread calls fire(arg) at the deadline.
 * The same C code serves both sides of the benchmark (jschedd's pool, where fire() sets
 * a pool event and the waiting fiber resumes, and oneTBB, where fire() wakes a thread
 * blocked in a futex), so the two see the same timer behaviour.
 *
 * One releaser thread, a binary heap of deadlines behind a mutex, a condition variable on
 * CLOCK_MONOTONIC, and a timer slack of 1 ns (the default 50 us would blur the 50 us row).
 * All functions may be called from any thread; releaser_after from many at once.
 */
#ifndef BENCH_POOL_RELEASER_H
#define BENCH_POOL_RELEASER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct releaser;

/* releaser_start: start the releaser thread; NULL on failure (errno set). */
struct releaser *releaser_start(void);

/* releaser_after: have the releaser call fire(arg) once CLOCK_MONOTONIC reaches
 * deadline_ns (at once if it already has).  Returns 0, or -1 if out of memory. */
int releaser_after(struct releaser *r, uint64_t deadline_ns, void (*fire)(void *arg),
		   void *arg);

/* releaser_lateness: how late the releaser fired since the last call (or the start):
 * the number of timers fired, their mean and their largest lateness (fire time minus
 * deadline) in nanoseconds; then starts counting afresh.  A late releaser makes every
 * waiting task wait longer than the row says, so the benchmark reports this beside it. */
void releaser_lateness(struct releaser *r, uint64_t *count, uint64_t *mean_ns,
		       uint64_t *max_ns);

/* releaser_stop: fire everything still pending (at once), stop the thread, free. */
void releaser_stop(struct releaser *r);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_POOL_RELEASER_H */
