/* tests/daemon/unit_hist.c: the latency histogram: exact below 16, every percentile
 * within the promised 6.25 % of the true value over nine decades, max exact, and the
 * edges (empty, one value, the largest value). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/core/hist.h"

static void test_small_exact(void **state)
{
	struct jd_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(jd_hist_percentile(&h, 0.5), 0);
	for (uint64_t v = 0; v < 16; v++)
		jd_hist_record(&h, v);
	assert_int_equal(jd_hist_percentile(&h, 0.5), 7);
	assert_int_equal(jd_hist_percentile(&h, 1.0), 15);
	assert_int_equal(h.count, 16);
}

static void test_relative_error(void **state)
{
	static struct jd_hist h;

	(void)state;
	/* 1 .. 10^9 ns in steps of ~1 %: for each quantile, the answer is within 6.25 % of
	 * the value at that rank. */
	uint64_t *vals = malloc(3000 * sizeof(*vals));
	size_t n = 0;

	for (double v = 1; v < 1e9 && n < 3000; v *= 1.01)
		vals[n++] = (uint64_t)v;
	memset(&h, 0, sizeof(h));
	for (size_t i = 0; i < n; i++)
		jd_hist_record(&h, vals[i]);
	for (double q = 0.01; q <= 1.0; q += 0.01) {
		size_t rank = (size_t)(q * (double)n + 0.5);
		uint64_t want = vals[(rank ? rank : 1) - 1], got = jd_hist_percentile(&h, q);
		double err = ((double)got - (double)want) / (double)want;

		if (err > 0.0625 || err < -0.0625)
			fail_msg("q %.2f: got %llu for %llu", q, (unsigned long long)got,
				 (unsigned long long)want);
	}
	assert_int_equal(h.max, vals[n - 1]);
	free(vals);
}

static void test_extremes(void **state)
{
	static struct jd_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	jd_hist_record(&h, UINT64_MAX);
	assert_int_equal(jd_hist_percentile(&h, 0.99), UINT64_MAX);
	jd_hist_record(&h, UINT64_MAX - (UINT64_MAX >> 4)); /* same top bucket */
	assert_true(jd_hist_percentile(&h, 0.5) >= UINT64_MAX - (UINT64_MAX >> 4));
	memset(&h, 0, sizeof(h));
	jd_hist_record(&h, 123456789);
	/* One value: every percentile is it (clamped to the exact min and max). */
	assert_int_equal(jd_hist_percentile(&h, 0.5), 123456789);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_exact),
		cmocka_unit_test(test_relative_error),
		cmocka_unit_test(test_extremes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
