/* tests/daemon/unit_whist.c: the windowed histograms on a hand-driven clock: a window
 * holds what happened in its span and forgets what is older, agrees with the lifetime
 * histogram on the same values (over five minutes too, where 10 s slices are folded
 * into their minute), says exactly how much time it covers, and holds memory
 * only for the slices its windows still cover. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "daemon/core/hist.h"

static struct jd_hist merged;

static void test_window_forgets(void **state)
{
	struct jd_whist w;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* A spike of 1 s latencies at t = 10 s, then 1 ms latencies from 100 s on. */
	for (int i = 0; i < 100; i++)
		jd_whist_record(&w, 10000 + (uint64_t)i, 1000000000);
	for (uint64_t t = 100000; t < 160000; t += 100)
		jd_whist_record(&w, t, 1000000);
	/* At 160 s the last minute is the 1 ms stream alone; five minutes still hold the
	 * spike. */
	jd_whist_read(&w, 160000, JD_WINDOW_1M, &merged);
	assert_int_equal(merged.max, 1000000);
	assert_true(merged.count >= 500 && merged.count <= 600);
	jd_whist_read(&w, 160000, JD_WINDOW_5M, &merged);
	assert_int_equal(merged.count, 100 + 600);
	assert_int_equal(merged.max, 1000000000);
	/* At 10 min nothing is left in either. */
	jd_whist_read(&w, 600000, JD_WINDOW_5M, &merged);
	assert_int_equal(merged.count, 0);
	assert_int_equal(jd_hist_percentile(&merged, 0.99), 0);
	jd_whist_read(&w, 600000, JD_WINDOW_1M, &merged);
	assert_int_equal(merged.count, 0);
	/* Recording again reuses the slices (the stale epoch is restarted). */
	jd_whist_record(&w, 600000, 5);
	jd_whist_read(&w, 600001, JD_WINDOW_1M, &merged);
	assert_int_equal(merged.count, 1);
	assert_int_equal(merged.min, 5);
	jd_whist_free(&w);
}

/* assert_same: a window's merge is the lifetime histogram, bucket for bucket. */
static void assert_same(const struct jd_hist *m, const struct jd_hist *life)
{
	assert_int_equal(m->count, life->count);
	assert_int_equal(m->sum, life->sum);
	assert_int_equal(m->min, life->min);
	assert_int_equal(m->max, life->max);
	assert_memory_equal(m->bucket, life->bucket, sizeof(life->bucket));
}

static void test_agrees_with_lifetime(void **state)
{
	static struct jd_hist life;
	struct jd_whist w;
	uint64_t v = 1;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&life, 0, sizeof(life));
	/* Values over nine decades, all inside one minute: the window's merge must be the
	 * lifetime histogram bucket for bucket. */
	for (int i = 0; i < 5000; i++) {
		v = v * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t x = (v >> 20) % 1000000000ull;

		jd_hist_record(&life, x);
		jd_whist_record(&w, 120000 + (uint64_t)i % 50000, x);
	}
	jd_whist_read(&w, 170000, JD_WINDOW_1M, &merged);
	assert_same(&merged, &life);
	for (double q = 0.5; q < 1.0; q += 0.1)
		assert_int_equal(jd_hist_percentile(&merged, q), jd_hist_percentile(&life, q));
	jd_whist_free(&w);
}

static void test_five_minutes_agree(void **state)
{
	static struct jd_hist life;
	struct jd_whist w;
	uint64_t v = 7;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&life, 0, sizeof(life));
	/* Four minutes of values (60 .. 300 s), trimmed every second as the daemon does: each
	 * 10 s slice reaches its minute by a fold (restarted or trimmed), once.  At 330 s the
	 * five minutes from 60 s on hold them all, bucket for bucket, some folded, the last
	 * ones not yet. */
	for (uint64_t t = 60000; t < 300000; t += 50) {
		v = v * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t x = (v >> 24) % 100000000ull;

		jd_hist_record(&life, x);
		jd_whist_record(&w, t, x);
		if (t % 1000 == 0)
			jd_whist_trim(&w, t);
	}
	for (uint64_t now = 300000; now <= 330000; now += 30000) {
		jd_whist_trim(&w, now);
		jd_whist_read(&w, now, JD_WINDOW_5M, &merged);
		assert_same(&merged, &life);
	}
	assert_int_equal(w.lost, 0);
	/* At 400 s the minute of 60 .. 120 s has left the window: a fifth of the values. */
	jd_whist_trim(&w, 400000);
	jd_whist_read(&w, 400000, JD_WINDOW_5M, &merged);
	assert_int_equal(merged.count, life.count - 60000 / 50);
	jd_whist_free(&w);
}

static void test_covered(void **state)
{
	struct jd_whist w;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* 1m: the current 10 s slice's elapsed part and five complete ones. */
	assert_int_equal(jd_whist_read(&w, 1000000 + 3000, JD_WINDOW_1M, &merged), 53000);
	assert_int_equal(jd_whist_read(&w, 1000000, JD_WINDOW_1M, &merged), 50000);
	/* 5m: the current minute's part and four complete ones. */
	assert_int_equal(jd_whist_read(&w, 600000 + 30000, JD_WINDOW_5M, &merged), 270000);
	/* Just after start a window covers only the time since. */
	assert_int_equal(jd_whist_read(&w, 4000, JD_WINDOW_5M, &merged), 4000);
	assert_int_equal(jd_whist_read(&w, 0, JD_WINDOW_1M, &merged), 1);
	jd_whist_free(&w);
}

static void test_memory(void **state)
{
	const size_t slice = JD_HIST_BUCKETS * sizeof(uint32_t);
	struct jd_whist w;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(jd_whist_bytes(&w), 0);
	/* Six minutes of values: every slice of both rings holds counters, no more. */
	for (uint64_t t = 0; t < 360000; t += 10)
		jd_whist_record(&w, t, 1900000 + (t * 7919) % 200000);
	assert_int_equal(jd_whist_bytes(&w), 11 * slice);
	assert_int_equal(w.lost, 0);
	/* Trimming keeps what a window still counts ... */
	jd_whist_trim(&w, 365000);
	jd_whist_read(&w, 365000, JD_WINDOW_1M, &merged);
	assert_int_equal(merged.count, 5000); /* the slices of 310 .. 370 s: 310 .. 360 s of values */
	/* At 365 s the fine slice of 300 .. 310 s and the coarse one of 60 .. 120 s are out. */
	assert_int_equal(jd_whist_bytes(&w), 9 * slice);
	/* ... and releases what lies outside: after an idle minute the fine ring is empty,
	 * after five the whole window, and the reads agree that nothing is left. */
	jd_whist_trim(&w, 430000);
	assert_int_equal(jd_whist_bytes(&w), 3 * slice); /* the minutes from 180 s on */
	jd_whist_read(&w, 430000, JD_WINDOW_1M, &merged);
	assert_int_equal(merged.count, 0);
	jd_whist_trim(&w, 720000);
	assert_int_equal(jd_whist_bytes(&w), 0);
	/* A trimmed window records again. */
	jd_whist_record(&w, 720000, 42);
	jd_whist_read(&w, 720001, JD_WINDOW_5M, &merged);
	assert_int_equal(merged.count, 1);
	jd_whist_free(&w);
	assert_int_equal(jd_whist_bytes(&w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_forgets),
		cmocka_unit_test(test_agrees_with_lifetime),
		cmocka_unit_test(test_five_minutes_agree),
		cmocka_unit_test(test_covered),
		cmocka_unit_test(test_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
