/* bench/hist/bench_hist.c: what the latency windows add to each finished job.
 *
 * The loop thread records three latencies per finished job, in all and for the job's
 * client: with the windows (daemon/core/hist.h) each value also goes into two rotating
 * sparse slices.  This measures, in one process and one run, ns per value for the
 * lifetime histogram alone (the baseline: what the daemon did before the windows), for a
 * window alone, and for jd_latency_record (the three latencies, lifetime and windowed: one
 * call per job per histogram set), with values spread the way job latencies are (log-
 * uniform over 1 us .. 100 ms) and the clock advancing 1 ms per value (so the slices
 * rotate as they do at 1,000 jobs/s).  Also the cost of reading a window (the merge a
 * `metrics` request does per client and latency).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common/bench.h"
#include "daemon/core/hist.h"

#define N 2000000u

static uint64_t vals[4096];

static void make_values(void)
{
	uint64_t x = 88172645463325252ull;

	for (unsigned i = 0; i < 4096; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* log-uniform over 2^10 .. 2^27 ns */
		unsigned shift = 10 + (unsigned)(x % 17);
		vals[i] = (1ull << shift) + (x >> 40) % (1ull << shift);
	}
}

static double per_value_lifetime(unsigned n)
{
	static struct jd_hist h;
	uint64_t t0 = bench_now_ns();

	for (unsigned i = 0; i < n; i++)
		jd_hist_record(&h, vals[i & 4095]);
	return (double)(bench_now_ns() - t0) / n;
}

static double per_value_window(unsigned n)
{
	struct jd_whist w;
	uint64_t t0;

	memset(&w, 0, sizeof(w));
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		jd_whist_record(&w, i, vals[i & 4095]);
	double ns = (double)(bench_now_ns() - t0) / n;
	jd_whist_free(&w);
	return ns;
}

static double per_job_latency(unsigned n)
{
	static struct jd_latency l;
	uint64_t t0;

	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		jd_latency_record(&l, i, 1, vals[i & 4095], vals[(i + 7) & 4095], vals[(i + 13) & 4095]);
	double ns = (double)(bench_now_ns() - t0) / n;
	jd_latency_free(&l);
	memset(&l, 0, sizeof(l));
	return ns;
}

static double per_job_lifetime3(unsigned n)
{
	static struct jd_hist a, b, c;
	uint64_t t0 = bench_now_ns();

	for (unsigned i = 0; i < n; i++) {
		jd_hist_record(&a, vals[i & 4095]);
		jd_hist_record(&b, vals[(i + 7) & 4095]);
		jd_hist_record(&c, vals[(i + 13) & 4095]);
	}
	return (double)(bench_now_ns() - t0) / n;
}

static double read_window_us(void)
{
	static struct jd_hist out;
	struct jd_whist w;
	uint64_t t0;

	memset(&w, 0, sizeof(w));
	for (unsigned i = 0; i < 60000; i++) /* a minute at 1,000 jobs/s */
		jd_whist_record(&w, i, vals[i & 4095]);
	t0 = bench_now_ns();
	for (unsigned k = 0; k < 1000; k++)
		jd_whist_read(&w, 60000, JD_WINDOW_1M, &out);
	double us = (double)(bench_now_ns() - t0) / 1000 / 1000;
	jd_whist_free(&w);
	return us;
}

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench-hist", argc, argv);
	unsigned n = bench_quick(r) ? N / 100 : N;
	int runs = bench_runs(r);
	double *life = calloc((size_t)runs, sizeof(double)), *win = calloc((size_t)runs, sizeof(double));
	double *lat = calloc((size_t)runs, sizeof(double)), *life3 = calloc((size_t)runs, sizeof(double));
	double *rd = calloc((size_t)runs, sizeof(double));

	if (!life || !win || !lat || !life3 || !rd)
		return 1;
	make_values();
	for (int i = 0; i < runs; i++) {
		life[i] = per_value_lifetime(n);
		win[i] = per_value_window(n);
		life3[i] = per_job_lifetime3(n);
		lat[i] = per_job_latency(n);
		rd[i] = read_window_us();
	}
	double l = bench_median(life, (size_t)runs), l3 = bench_median(life3, (size_t)runs);
	bench_row(r, "record one value: lifetime histogram", "ns", NULL, l, NULL, 0);
	bench_row(r, "record one value: both windows (1m, 5m)", "ns", NULL,
		  bench_median(win, (size_t)runs), "lifetime histogram", l);
	bench_row(r, "record a finished job's 3 latencies, lifetime + windows", "ns", NULL,
		  bench_median(lat, (size_t)runs), "lifetime only (before the windows)", l3);
	bench_row(r, "read the last minute (merge 6 slices) at 1,000 jobs/s", "us", NULL,
		  bench_median(rd, (size_t)runs), NULL, 0);
	bench_note(r, "a finished job is recorded twice (in all and for its client)");
	free(life);
	free(win);
	free(lat);
	free(life3);
	free(rd);
	return bench_report_finish(r);
}
