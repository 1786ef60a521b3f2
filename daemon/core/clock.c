/* daemon/core/clock.c: the daemon's clocks (see clock.h). */
#include "daemon/core/clock.h"

#include <stdatomic.h>
#include <time.h>

/* The test clock's wall time in ms; 0 while it is off (the real clock is read). */
static _Atomic uint64_t test_ms;

uint64_t jd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The loop thread's stamp (jd_loop_woke): touched by that thread only. */
static uint64_t loop_woke_ns;

void jd_loop_woke(void)
{
	if (!loop_woke_ns)
		loop_woke_ns = jd_now_ns();
}

/* Whether the loop takes its stamps (the server's prepare phase, every iteration): until
 * then a stamp may be old (one made at start, with no iteration to end it). */
static bool loop_taking;

uint64_t jd_loop_woke_take(void)
{
	uint64_t t = loop_woke_ns;

	loop_woke_ns = 0;
	loop_taking = true;
	return t;
}

uint64_t jd_loop_now_ns(void)
{
	return loop_taking && loop_woke_ns ? loop_woke_ns : jd_now_ns();
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

uint64_t jd_now_ms(void)
{
	uint64_t t = atomic_load_explicit(&test_ms, memory_order_relaxed);

	return t ? t : real_ms();
}

void jd_clock_test_start(void)
{
	uint64_t zero = 0;

	atomic_compare_exchange_strong(&test_ms, &zero, real_ms());
}

bool jd_clock_test_on(void)
{
	return atomic_load_explicit(&test_ms, memory_order_relaxed) != 0;
}

uint64_t jd_clock_test_advance(uint64_t ms)
{
	uint64_t t = atomic_load(&test_ms);

	if (!t)
		return 0;
	/* Saturating: the clock stands at the end of time rather than wrapping to "off". */
	while (!atomic_compare_exchange_weak(&test_ms, &t, ms > UINT64_MAX - t ? UINT64_MAX : t + ms))
		;
	return atomic_load(&test_ms);
}
