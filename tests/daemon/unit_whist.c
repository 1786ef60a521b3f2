/* tests/daemon/unit_whist.c: the windowed histograms on a hand-driven clock: a window
 * holds what happened in its span and forgets what is older, agrees with the lifetime
 * histogram on the same values, says exactly how much time it covers, and a steady
 * latency costs a few pairs per slice. */
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
	assert_int_equal(merged.count, life.count);
	assert_int_equal(merged.sum, life.sum);
	assert_int_equal(merged.min, life.min);
	assert_int_equal(merged.max, life.max);
	assert_memory_equal(merged.bucket, life.bucket, sizeof(life.bucket));
	for (double q = 0.5; q < 1.0; q += 0.1)
		assert_int_equal(jd_hist_percentile(&merged, q), jd_hist_percentile(&life, q));
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
	struct jd_whist w;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(jd_whist_bytes(&w), 0);
	/* A steady latency around 2 ms (+-5 %) for six minutes touches a handful of buckets
	 * per slice. */
	for (uint64_t t = 0; t < 360000; t += 10)
		jd_whist_record(&w, t, 1900000 + (t * 7919) % 200000);
	assert_true(jd_whist_bytes(&w) <= 11 * 16 * sizeof(struct jd_whist_pair));
	/* The worst case is bounded: every bucket in every slice. */
	for (unsigned b = 0; b < 64; b++)
		for (uint64_t k = 0; k < 16; k++)
			jd_whist_record(&w, 360000, (1ull << b) + (k << (b > 4 ? b - 4 : 0)));
	assert_true(jd_whist_bytes(&w) <= 11 * JD_HIST_BUCKETS * sizeof(struct jd_whist_pair));
	assert_int_equal(w.lost, 0);
	jd_whist_free(&w);
	assert_int_equal(jd_whist_bytes(&w), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_forgets),
		cmocka_unit_test(test_agrees_with_lifetime),
		cmocka_unit_test(test_covered),
		cmocka_unit_test(test_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
