/* bench_timers.c: what a delayed job costs jschedd, beside the same job queued without a
 * delay, in one run.
 *
 * Each run starts the build's jschedd twice, one after the other, with the same config
 * (one worker, no journal, room for every job), and submits N call jobs (noop) to each in
 * batches of 10,000:
 *
 *   baseline  the jobs without a delay, to a paused client: they stay queued (in the fair
 *             layer's queue) until the client is resumed;
 *   delayed   the same jobs with a not_before: they wait in the daemon's timer heap
 *             (state scheduled), due over one second (1,000 distinct milliseconds) a
 *             little after the last submit.
 *
 * and measures, the median over --runs runs:
 *
 *   submit, per job             us per job over the whole submit (the heap's push beside
 *                               a queue's admission)
 *   daemon memory per job       the daemon's resident memory after the submits minus
 *                               before, per job (VmRSS)
 *   idle: context switches/s    the daemon's context switches (all its threads) per
 *                               second while it holds the N jobs and nothing is due:
 *                               what holding them costs in wake-ups
 *   idle: timer wake-ups        the heap timer's firings in that window (the metrics'
 *                               timers.wakeups); one timer for all, so 0 until the first
 *                               is due (the queued side has no timer: 0)
 *   release: daemon CPU time    the daemon's CPU time (user + system, all threads)
 *                               from the end of the idle window (delayed; the jobs come
 *                               due on their own) or the resume (baseline) until every
 *                               job has succeeded: releasing and running them all
 *   release: timer wake-ups     firings of the heap timer while the N jobs came due
 *                               over 1,000 distinct ms: at most 1,000, where a timer per
 *                               job would fire N times (no baseline row: the queued
 *                               jobs have no timer)
 *
 * N is 1,000,000 (--quick: 20,000).  The daemon and this client share the machine's
 * cores, so the times are of the whole path; the memory and the counts are exact.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <jsched/jsched.h>

#include "bench/common/bench.h"
#include "bench/common/daemon.h"

enum { BATCH = 10000 };

static struct bench_daemon jd = {.pid = -1};

static void die(const char *what, int code)
{
	fprintf(stderr, "bench-timers: %s: %s\n", what, code < 0 ? jsched_strerror(code) : strerror(code));
	bench_daemon_kill(&jd);
	exit(1);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* start_daemon: jschedd with room for n jobs, one worker, no journal; connected. */
static struct jsched_conn *start_daemon(long n)
{
	char members[256];
	struct jsched_conn *c;
	int rc;

	snprintf(members, sizeof members, "\"workers\": 1, \"journal\": {\"sync\": \"off\"},"
		 " \"limits\": {\"queued_jobs\": %ld}, \"retention\": {\"jobs\": 1000},"
		 " \"clients\": {\"default\": {\"max_queued\": %ld}}", n + BATCH, n + BATCH);
	if ((rc = bench_daemon_start(&jd, JSCHEDD_BIN, NULL, "timers", members, "bench", &c)) < 0)
		die("cannot start " JSCHEDD_BIN, rc);
	return c;
}

static void stop_daemon(struct jsched_conn *c)
{
	jsched_close(c);
	/* The jobs left do not matter, and no journal is kept. */
	bench_daemon_stop(&jd, SIGKILL);
}

/* status_sum: the sum of `key` (in kB or a count) over the daemon's threads' status
 * files (task = true) or its process status (false). */
static long long status_sum(const char *key, bool tasks)
{
	char path[320], line[256];
	long long sum = 0;
	size_t klen = strlen(key);
	DIR *d = NULL;
	struct dirent *e = NULL;

	if (tasks) {
		snprintf(path, sizeof path, "/proc/%d/task", (int)jd.pid);
		if ((d = opendir(path)) == NULL)
			die(path, errno);
	}
	for (;;) {
		if (tasks) {
			if ((e = readdir(d)) == NULL)
				break;
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)jd.pid, e->d_name);
		} else {
			snprintf(path, sizeof path, "/proc/%d/status", (int)jd.pid);
		}
		FILE *f = fopen(path, "r");
		while (f != NULL && fgets(line, sizeof line, f))
			if (strncmp(line, key, klen) == 0 && line[klen] == ':')
				sum += strtoll(line + klen + 1, NULL, 10);
		if (f != NULL)
			fclose(f);
		if (!tasks)
			break;
	}
	if (d != NULL)
		closedir(d);
	return sum;
}

/* cpu_ms: the daemon's CPU time so far (user + system, every thread), in ms. */
static double cpu_ms(void)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)jd.pid);
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	/* after ") S": fields 3 .. ; utime is field 14, stime 15 */
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		die("cannot read the daemon's CPU time", EINVAL);
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static long long ctx_switches(void)
{
	return status_sum("voluntary_ctxt_switches", true) + status_sum("nonvoluntary_ctxt_switches", true);
}

/* metric: a number from the metrics document: jobs.<key> or timers.<key>. */
static long long metric(struct jsched_conn *c, const char *section, const char *key)
{
	char *text;
	int r = jsched_metrics(c, &text);
	if (r < 0)
		die("metrics", r);
	json_t *m = json_loads(text, 0, NULL);
	jsched_free(text);
	long long v = (long long)json_integer_value(json_object_get(json_object_get(m, section), key));
	json_decref(m);
	return v;
}

/* wait_succeeded: poll (every 20 ms, at most 600 s) until n jobs have succeeded. */
static void wait_succeeded(struct jsched_conn *c, long n)
{
	for (int i = 0; i < 30000; i++) {
		if (metric(c, "jobs", "succeeded") >= n)
			return;
		sleep_ms(20);
	}
	die("the jobs did not all succeed within 600 s", ETIMEDOUT);
}

struct side {
	double submit_us, bytes, idle_ctx_s, idle_wakeups, release_cpu_ms, release_wakeups;
};

/* one: a daemon, n jobs (delayed or not), its figures.  first_due_ms (delayed) is when
 * the first comes due, the rest over the next 999 ms; idle_ms the idle window. */
static void one(long n, bool delayed, int64_t lead_ms, int idle_ms, struct side *out)
{
	struct jsched_conn *c = start_daemon(n);
	struct jsched_spec *spec[1000];
	const struct jsched_spec *specs[BATCH];
	uint64_t *ids = malloc(BATCH * sizeof *ids);
	if (ids == NULL)
		die("malloc", ENOMEM);
	int r = delayed ? 0 : jsched_pause(c, NULL, false);
	if (r < 0)
		die("pause", r);
	sleep_ms(200); /* the daemon settled after its start */
	long long rss0 = status_sum("VmRSS", false);
	int64_t t_sub = wall_ms(), first_due = t_sub + lead_ms;
	/* 1,000 specs, one per due millisecond (the same ones for the baseline, undelayed). */
	for (int k = 0; k < 1000; k++) {
		if ((r = jsched_spec_call("noop", NULL, &spec[k])) < 0 ||
		    (delayed && (r = jsched_spec_set_not_before(spec[k], first_due + k)) < 0))
			die("spec", r);
	}
	for (int i = 0; i < BATCH; i++)
		specs[i] = spec[i % 1000];
	uint64_t t0 = bench_now_ns();
	for (long done = 0; done < n; done += BATCH) {
		size_t m = (size_t)(n - done < BATCH ? n - done : BATCH);
		if ((r = jsched_submit_batch(c, specs, m, ids)) < 0)
			die(jsched_error_message(c), r);
	}
	out->submit_us = (double)(bench_now_ns() - t0) / 1e3 / (double)n;
	if (metric(c, "jobs", delayed ? "scheduled" : "queued") != n)
		die("the jobs are not all scheduled (or queued) after the submit", EINVAL);
	out->bytes = (double)(status_sum("VmRSS", false) - rss0) * 1024.0 / (double)n;
	/* Idle: nothing due in the window (it ends before the first due time). */
	long long cs0 = ctx_switches(), w0 = metric(c, "timers", "wakeups");
	sleep_ms(idle_ms);
	out->idle_ctx_s = (double)(ctx_switches() - cs0) * 1000.0 / idle_ms;
	out->idle_wakeups = (double)(metric(c, "timers", "wakeups") - w0);
	if (delayed && wall_ms() >= first_due)
		die("the idle window ran into the due times (a slow machine?)", EINVAL);
	/* Release. */
	long long w1 = metric(c, "timers", "wakeups");
	double cpu0 = cpu_ms();
	if (!delayed && (r = jsched_resume(c, NULL, false)) < 0)
		die("resume", r);
	wait_succeeded(c, n);
	out->release_cpu_ms = cpu_ms() - cpu0;
	out->release_wakeups = (double)(metric(c, "timers", "wakeups") - w1);
	for (int k = 0; k < 1000; k++)
		jsched_spec_free(spec[k]);
	free(ids);
	stop_daemon(c);
}

int main(int argc, char **argv)
{
	struct bench_report *rep = bench_report_new("bench_timers", argc, argv);
	long n = bench_quick(rep) ? 20000 : 1000000;
	int runs = bench_runs(rep), idle_ms = bench_quick(rep) ? 500 : 2000;
	double v[6][16], b[6][16];
	if (runs > 16)
		runs = 16;
	for (int i = 0; i < runs; i++) {
		struct side base, del;
		one(n, false, 0, idle_ms, &base);
		/* The delayed jobs come due after the submit and the idle window: twice the
		 * baseline's submit time, the window, and a second of margin. */
		int64_t lead = (int64_t)(2 * base.submit_us * (double)n / 1000.0) + idle_ms + 1000;
		one(n, true, lead, idle_ms, &del);
		double *bv[6] = { &base.submit_us, &base.bytes, &base.idle_ctx_s, &base.idle_wakeups,
				  &base.release_cpu_ms, &base.release_wakeups };
		double *dv[6] = { &del.submit_us, &del.bytes, &del.idle_ctx_s, &del.idle_wakeups,
				  &del.release_cpu_ms, &del.release_wakeups };
		for (int k = 0; k < 6; k++) {
			b[k][i] = *bv[k];
			v[k][i] = *dv[k];
		}
	}
	static const char *const base_name = "queued, no delay (client paused)";
	char name[128];
	snprintf(name, sizeof name, "submit %ld delayed jobs, per job", n);
	bench_row(rep, name, "us/job", NULL, bench_median(v[0], (size_t)runs), base_name,
		  bench_median(b[0], (size_t)runs));
	snprintf(name, sizeof name, "daemon memory per job, %ld delayed", n);
	bench_row(rep, name, "bytes/job", NULL, bench_median(v[1], (size_t)runs), base_name,
		  bench_median(b[1], (size_t)runs));
	bench_row(rep, "idle, holding them: daemon context switches", "per s", NULL,
		  bench_median(v[2], (size_t)runs), base_name, bench_median(b[2], (size_t)runs));
	bench_row(rep, "idle, holding them: heap timer wake-ups", "count", NULL,
		  bench_median(v[3], (size_t)runs), NULL, 0);
	snprintf(name, sizeof name, "release and run all %ld: daemon CPU time", n);
	bench_row(rep, name, "ms", NULL, bench_median(v[4], (size_t)runs), "resume the paused client",
		  bench_median(b[4], (size_t)runs));
	snprintf(name, sizeof name, "release: heap timer wake-ups for %ld jobs", n);
	bench_row(rep, name, "count", NULL, bench_median(v[5], (size_t)runs), NULL, 0);
	bench_note(rep, "the idle window is %d ms, after the submits; the release's CPU time counts "
			"from the end of that window until the last job succeeded (user + system, every "
			"thread of the daemon, from /proc)", idle_ms);
	bench_note(rep, "a timer per job would wake %ld times for the release; the heap's one timer "
			"wakes at most once per distinct due millisecond (1,000 here)", n);
	return bench_report_finish(rep);
}
