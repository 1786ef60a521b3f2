/* bench/common/bench.h: the harness every benchmark program in bench/ shares.
 *
 * A benchmark creates one report from its command line, measures, adds one row per
 * figure, and finishes the report:
 *
 *	struct bench_report *r = bench_report_new("bench-pool", argc, argv);
 *	for (int i = 0; i < bench_runs(r); i++) v[i] = measure();
 *	bench_row(r, "round trip", "us", "spin", bench_median(v, n), "oneTBB 2021.8", 1.23);
 *	return bench_report_finish(r);
 *
 * bench_report_new prints the build's version line and the machine first, so that every
 * figure printed below it can be traced to the build and the hardware that made it.  Each
 * row is printed as one aligned table line when it is added, and kept; with --json FILE,
 * bench_report_finish writes them all as
 *
 *	{"version": "...", "program": "...", "runs": N, "quick": false,
 *	 "machine": {"cpu_model", "online_cpus", "kernel", "memory_bytes", "vm"},
 *	 "load_start": 0.42, "load_end": 0.57, "others_cpu_share": 0.03,
 *	 "rows": [{"name", "unit", "policy", "value", "baseline", "baseline_value",
 *		   "ratio"}],
 *	 "notes": ["..."]}
 *
 * where policy, baseline, baseline_value and ratio are null when the row has none, and
 * load_* is the 1-minute load average (/proc/loadavg) when the report began and ended,
 * and others_cpu_share the fraction of all CPU time, between bench_report_new and
 * bench_report_finish, that other processes used (busy time from /proc/stat minus this
 * process's and its waited-for children's): on a shared machine a figure means little
 * without them.
 * bench/compare.py compares two such files row by row.
 *
 * Everything here is meant for the benchmark's main thread; none of it is thread-safe
 * except bench_now_ns and bench_median (which touch only their arguments).
 */
#ifndef JSCHED_BENCH_H
#define JSCHED_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_report;

/* bench_report_new: parse the command line (--json FILE, --runs N, --quick, --help),
 * print the version line and the machine, and return a new report.  `program` names the
 * benchmark in the usage text and the JSON.  On --help it prints the usage and exits the
 * process with status 0; on an unknown or malformed option, with status 2; on out of
 * memory, with status 1 (a benchmark cannot do anything useful in those cases, and
 * exiting here keeps every caller's main short). */
struct bench_report *bench_report_new(const char *program, int argc, char **argv);

/* bench_runs: how many runs a row's median is taken over (default 5; --runs N). */
int bench_runs(const struct bench_report *r);

/* bench_quick: true with --quick: the benchmark should use smaller sizes, for a smoke
 * test that only proves it still runs. */
bool bench_quick(const struct bench_report *r);

/* bench_wanted: whether the row named `name` is to be measured: every row, or with
 * --only TEXT those whose name contains TEXT (a benchmark asks before measuring one, so a
 * before / after comparison can repeat one row many times: bench/ab.py). */
bool bench_wanted(const struct bench_report *r, const char *name);

/* bench_row: print one row (name, policy, value and unit, baseline and its value, and
 * ratio = value / baseline_value) and record it for the JSON.  policy and baseline may
 * be NULL (no policy, no baseline); the ratio is omitted when there is no baseline or
 * its value is not a positive number.  The strings are copied. */
void bench_row(struct bench_report *r, const char *name, const char *unit,
	       const char *policy, double value, const char *baseline, double baseline_value);

/* bench_note: print one free-form line under the table (a remark about how a row was
 * measured) and record it in the JSON's "notes" array. */
void bench_note(struct bench_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* bench_report_finish: write the JSON file if --json was given, free the report, and
 * return the process exit code: 0, or 1 if the JSON could not be written. */
int bench_report_finish(struct bench_report *r);

/* bench_median: the median of v[0..n) (the mean of the middle two for even n; NaN for
 * n == 0).  Sorts v in place. */
double bench_median(double *v, size_t n);

/* bench_now_ns: CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

#endif /* JSCHED_BENCH_H */
