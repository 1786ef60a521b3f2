/* daemon/core/clock.h: the daemon's two clocks.
 *
 * Monotonic nanoseconds for every duration the daemon measures or waits out (latencies,
 * deadlines, time limits), wall-clock milliseconds for the timestamps a job record
 * carries.  Any thread.
 */
#ifndef JD_CLOCK_H
#define JD_CLOCK_H

#include <stdint.h>

/* jd_now_ns: CLOCK_MONOTONIC, in ns. */
uint64_t jd_now_ns(void);

/* jd_now_ms: CLOCK_REALTIME, in ms since the epoch. */
uint64_t jd_now_ms(void);

#endif /* JD_CLOCK_H */
