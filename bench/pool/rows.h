/* bench/pool/rows.h: what each row of the pool benchmark measures, shared by the C side
 * (bench_pool.c, jschedd's pool) and the oneTBB side (tbb_bench.cpp), so that both run
 * exactly the same sizes.  Read this before either program.
 *
 * Each row is measured `runs` times (bench_runs(), default 5) after one untimed warm-up
 * run, and the median is reported.  A run of a short row repeats the operation REPS times
 * and reports the mean, so that one run is long enough for the clock.  The two shortest
 * (round_trip, dag) time their REPS in chunks of CHUNK operations and report the median
 * chunk's mean: on two shared cores a preemption in the middle of a round trip costs a
 * scheduler tick (milliseconds), and a handful of those would otherwise be the figure.
 *
 * The rows (key: what is timed, unit):
 *   round_trip      one empty task submitted from a thread outside the pool, run on a
 *                   worker, and waited for by the submitter (us)
 *   tasks           TASKS_N empty tasks submitted from one thread outside the pool one at
 *                   a time, then one wait for all of them (ns per task)
 *   tasks_batch     the same, submitted in batches of TASKS_BATCH (ns per task)
 *   fork_join       recursive sum of FJ_N integers, halving down to leaves of at most
 *                   FJ_LEAF elements, from submission of the root to its result (ms)
 *   parallel_for    PFOR_N items, out[i] = sqrt(i), one parallel-for (ms)
 *   blocking_<us>   BLOCK_BATCHES batches of BLOCK_BATCH tasks, one batch waited before the
 *                   next; every BLOCK_EVERY-th task waits <us> microseconds for an event a
 *                   timer thread (releaser.h) signals, the others busy-work BLOCK_WORK_NS (ms)
 *   dag             a six-node graph A -> {B, C, D} -> E -> F of empty nodes: built, run and
 *                   waited (us)
 *
 * --quick divides the counts (QUICK_*) so that a smoke test finishes in a second or two.
 */
#ifndef BENCH_POOL_ROWS_H
#define BENCH_POOL_ROWS_H

#include <stdint.h>
#include <time.h>

#define ROUND_TRIP_REPS 20000
#define ROUND_TRIP_CHUNK 200
#define TASKS_N 100000
#define TASKS_BATCH 64
#define TASKS_REPS 1
#define FJ_N 1000000
#define FJ_LEAF 10000
#define FJ_REPS 20
#define PFOR_N 20000
#define PFOR_REPS 50
#define BLOCK_BATCHES 10
#define BLOCK_BATCH 256
#define BLOCK_EVERY 4		/* 25% of the tasks wait */
#define BLOCK_WORK_NS 50000	/* the others work ~50 us */
#define DAG_REPS 2000
#define DAG_CHUNK 100

/* --quick: every count above divided by this (at least 1). */
#define QUICK_DIV 10

/* The three waits of the blocking row, in microseconds. */
#define BLOCK_WAITS_US {50, 600, 2000}
#define BLOCK_NWAITS 3

/* The fork-join input: element i is i % 1000, so the sum of n elements is known. */
static inline uint64_t fj_expected(uint64_t n)
{
	uint64_t full = n / 1000, rest = n % 1000;
	return full * (999 * 1000 / 2) + rest * (rest - 1) / 2;
}

/* fj_fill: write the fork-join input and return its sum, read back (the caller checks it
 * against fj_expected). */
static inline uint64_t fj_fill(uint32_t *data, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		data[i] = (uint32_t)(i % 1000);
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += ((volatile const uint32_t *)data)[i];
	return s;
}

static inline uint64_t rows_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* rows_cpu_relax: tell the CPU this is a spin-wait loop. */
static inline void rows_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* busy_work: keep the CPU busy for `ns` nanoseconds of wall time (the blocking row's
 * "work" tasks).  Wall time rather than a calibrated loop, so the two programs do the
 * same amount whatever the compiler makes of a loop. */
static inline void busy_work(uint64_t ns)
{
	uint64_t end = rows_now_ns() + ns;
	while (rows_now_ns() < end)
		rows_cpu_relax();
}

#endif /* BENCH_POOL_ROWS_H */
