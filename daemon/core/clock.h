/* daemon/core/clock.h: the daemon's two clocks.
 *
 * Monotonic nanoseconds for every duration the daemon measures or waits out (latencies,
 * deadlines, time limits), wall-clock milliseconds for the timestamps a job record
 * carries and for the times a job is scheduled at (a spec's not_before, the next attempt
 * of a job between retries).  Any thread.
 *
 * The test clock.  Started only by `jschedd --test-clock` (never by the config file, so
 * no deployed configuration can turn it on), it stops the wall clock at the moment it
 * starts; from then on jd_now_ms moves only when jd_clock_test_advance moves it (the
 * admin operation test_clock), so a test steps the scheduler through hours without a
 * sleep.  The monotonic clock is never touched.
 */
#ifndef JD_CLOCK_H
#define JD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* jd_now_ns: CLOCK_MONOTONIC, in ns. */
uint64_t jd_now_ns(void);

/* jd_now_ms: CLOCK_REALTIME, in ms since the epoch (the test clock's time when it is on). */
uint64_t jd_now_ms(void);

/* jd_loop_woke: called at the top of the loop thread's callbacks that run after a poll
 * (a request read, a connection, the workers' notices, the journal's, a process's exit or
 * output, a signal): the first one of an iteration stamps the time (one clock read), the
 * others cost a test.  jd_loop_woke_take returns the stamp (0: none since the last take)
 * and clears it.  They time the loop's busy stretch per iteration without libuv's
 * idle-time metric, which made every poll that would block poll twice (daemon/net/server.c,
 * "Busy time").  The loop thread only. */
void jd_loop_woke(void);
uint64_t jd_loop_woke_take(void);

/* jd_loop_now_ns: the loop thread's clock for what needs the time of the iteration rather
 * than of the instant (the time a request was read, the retention's ages): this
 * iteration's stamp (jd_loop_woke) when there is one, else jd_now_ns.  Never later than
 * jd_now_ns; earlier by at most the iteration's busy time so far, so a caller that
 * subtracts a time read since (a job's end) must not assume the difference positive.
 * Before the loop's first jd_loop_woke_take (start, recovery) always jd_now_ns.  It saves
 * the clock reads of a request beside the one of its wake-up: 3 of the 18 per noop
 * submit with wait (about 33 ns each on this VM: vDSO, TSC).  The loop thread only. */
uint64_t jd_loop_now_ns(void);

/* jd_clock_test_start: stop the wall clock at the current time (the test clock; once per
 * process, at start: a second call changes nothing). */
void jd_clock_test_start(void);

/* jd_clock_test_on: is the test clock on? */
bool jd_clock_test_on(void);

/* jd_clock_test_advance: move the test clock ms forward (saturating).  Returns its new
 * time, or 0 if the test clock is off (then nothing moves). */
uint64_t jd_clock_test_advance(uint64_t ms);

#endif /* JD_CLOCK_H */
