/* bench/e2e/hostile.c: part 10, hostile: what one client's large or repeated requests cost
 * the daemon and the other clients.
 *
 *   1. retained memory: the daemon's VmRSS growth (/proc/PID/status) once one call job
 *      whose args are a 1 MiB array of small integers ([1,1,...], the frame limit's worth)
 *      has ended and been retained: `noop` (the args only), `echo` (args and an equal
 *      result), and six `echo`s one after the other.  Each from a fresh daemon, after a
 *      warm-up job, with retention's defaults; measured 3.5 s after the last job ended
 *      (three of the daemon's 1 s ticks, whose heap give-back is paced to 1% of the loop:
 *      after one tick a large heap may not be handed back yet).  And twenty `echo`s with
 *      the journal on (sync batch, in a directory of its own): results past
 *      limits.value_bytes are kept in files in the journal's directory, not in memory.
 *   2. list on a large table: 99,000 retained noop jobs of client A; A pipelines 1,000
 *      `list` requests for the first of its succeeded jobs (states ["succeeded"], limit 1: 61
 *      bytes each, every job matches), and client B
 *      then times one noop submit + wait: the time the loop thread needs to get to B.
 *      Beside: B's submit + wait on the same daemon without the lists.
 *
 * The baseline of every row is another jschedd binary measured in the same run when
 * BENCH_E2E_BEFORE=PATH names one (an older build: before/after), else the row's own
 * floor (the bytes submitted; B's round trip without the lists).  One run per --runs (at
 * most 3 for part 2: filling the table takes a few seconds).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

enum { LISTS = 1000, TABLE_JOBS = 99000 };

/* start: a daemon of `bin` (NULL: this build) with config members. */
static void start(struct e2e_daemon *d, const char *bin, const char *members)
{
	const char *old = getenv("BENCH_E2E_JSCHEDD");
	char *saved = old ? strdup(old) : NULL;

	if (bin)
		setenv("BENCH_E2E_JSCHEDD", bin, 1);
	e2e_daemon_start(d, members);
	if (saved)
		setenv("BENCH_E2E_JSCHEDD", saved, 1);
	else
		unsetenv("BENCH_E2E_JSCHEDD");
	free(saved);
}

/* big_args: a JSON array of small integers that fills a frame of about `bytes`. */
static char *big_args(size_t bytes)
{
	size_t n = bytes / 2 - 8;
	char *s = malloc(n * 2 + 4);

	if (!s)
		e2e_die("out of memory");
	s[0] = '[';
	for (size_t i = 0; i < n; i++) {
		s[1 + 2 * i] = '1';
		s[2 + 2 * i] = ',';
	}
	s[2 * n] = ']';
	s[2 * n + 1] = '\0';
	return s;
}

/* run_one: submit `fn` with args and wait for it. */
static void run_one(struct jsched_conn *c, const char *fn, const char *args)
{
	struct jsched_spec *sp;
	struct jsched_result *res = NULL;
	uint64_t id;

	if (jsched_spec_call(fn, args, &sp) < 0 || jsched_submit(c, sp, &id) < 0)
		e2e_die("submit %s: %s", fn, jsched_error_message(c));
	jsched_spec_free(sp);
	if (jsched_wait(c, id, 60000, &res) < 0)
		e2e_die("wait %s: %s", fn, jsched_error_message(c));
	jsched_result_free(res);
}

/* retained_mib: RSS growth in MiB of a fresh daemon of bin once `count` jobs of fn with
 * args have ended; with `journal`, the daemon keeps a journal (sync batch) in a
 * directory of its own. */
static double retained_mib(const char *bin, const char *fn, const char *args, int count,
			   bool journal)
{
	struct e2e_daemon d;
	struct jsched_conn *c;
	long before, after;
	char dir[64] = "/tmp/bench-e2e-journal-XXXXXX", members[160];

	if (journal && !mkdtemp(dir))
		e2e_die("mkdtemp: %s", strerror(errno));
	if (journal)
		e2e_track_dir(dir, true);
	snprintf(members, sizeof members, journal ? "\"workers\": 2, \"journal\": {\"dir\": "
						    "\"%s\", \"sync\": \"batch\"}" : "\"workers\": 2",
		 dir);
	start(&d, bin, members);
	c = e2e_connect(&d, "big");
	run_one(c, "noop", NULL);
	before = e2e_rss_kib(d.pid);
	for (int i = 0; i < count; i++)
		run_one(c, fn, args);
	/* What stays: measured after three of the daemon's 1 s ticks, which hand freed heap
	 * back to the kernel (either build gets the same wait). */
	jsched_ping(c);
	e2e_sleep_ms(3500);
	after = e2e_rss_kib(d.pid);
	jsched_close(c);
	e2e_daemon_stop(&d);
	if (journal) {
		e2e_rm_rf(dir);
		e2e_track_dir(dir, false);
	}
	return (double)(after - before) / 1024.0;
}

/* noop_rtt_us: one noop submit + wait on c, in µs. */
static double noop_rtt_us(struct jsched_conn *c)
{
	uint64_t t0 = bench_now_ns();

	run_one(c, "noop", NULL);
	return (double)(bench_now_ns() - t0) / 1e3;
}

/* list_stall: B's noop round trip behind A's 1,000 pipelined lists on a table of 99,000
 * jobs (*alone: the same without the lists), on a daemon of bin. */
static void list_stall(struct e2e *e, const char *bin, double *stalled, double *alone)
{
	size_t njobs = e->quick ? TABLE_JOBS / 10 : TABLE_JOBS;
	struct jsched_spec *noop;
	struct e2e_daemon d;
	struct jsched_conn *a, *b;
	uint64_t *ids = malloc(njobs * sizeof(*ids));
	char req[128];
	int fd;

	if (!ids || jsched_spec_call("noop", NULL, &noop) < 0)
		e2e_die("out of memory");
	start(&d, bin, "\"workers\": 2, \"retention\": {\"jobs\": 1000000}, "
		       "\"limits\": {\"queued_jobs\": 1000000}, "
		       "\"clients\": {\"default\": {\"max_queued\": 1000000}}");
	a = e2e_connect(&d, "lister");
	b = e2e_connect(&d, "bystander");
	e2e_submit_pipelined(a, noop, njobs, 1000, 4, ids);
	e2e_wait_ids(a, ids, njobs);
	for (int i = 0; i < 20; i++)
		noop_rtt_us(b);
	*alone = noop_rtt_us(b);
	/* A's lists as raw frames on its connection (the hello done by libjsched; nothing
	 * else is in flight on it), all written before B asks. */
	fd = jsched_fd(a);
	for (int i = 0; i < LISTS; i++) {
		int n = snprintf(req + 4, sizeof(req) - 4,
				 "{\"op\":\"list\",\"id\":%d,\"states\":[\"succeeded\"],\"limit\":1}", 1000 + i);

		req[0] = 0;
		req[1] = 0;
		req[2] = (char)(n >> 8);
		req[3] = (char)n;
		for (size_t off = 0; off < (size_t)n + 4;) {
			ssize_t w = write(fd, req + off, (size_t)n + 4 - off);

			if (w < 0 && errno != EINTR && errno != EAGAIN)
				e2e_die("write: %s", strerror(errno));
			off += w > 0 ? (size_t)w : 0;
		}
	}
	*stalled = noop_rtt_us(b);
	jsched_close(a); /* its replies unread: the daemon drops them with the connection */
	jsched_close(b);
	e2e_daemon_stop(&d);
	jsched_spec_free(noop);
	free(ids);
}

void e2e_hostile(struct e2e *e)
{
	const char *before = getenv("BENCH_E2E_BEFORE");
	int n = e->runs < 3 ? e->runs : 3;
	size_t bytes = e->quick ? 65536 : 1048576 - 256;
	char *args = big_args(bytes);
	double floor_mib = (double)bytes / 1048576.0;
	static const struct {
		const char *name, *fn;
		int count;
	} rows[] = {
		{"hostile: RSS kept by one 1 MiB noop submit", "noop", 1},
		{"hostile: RSS kept by one 1 MiB echo submit", "echo", 1},
		{"hostile: RSS kept by six 1 MiB echo submits", "echo", 6},
		{"hostile: RSS kept by twenty 1 MiB echo results, journal on", "echo", 20},
	};
	double v[6][3], w[6][3];

	if (before && !before[0])
		before = NULL;
	for (size_t r = 0; r < 4; r++) {
		/* The last row with the journal: results past value_bytes are kept in files. */
		bool journal = r == 3;

		for (int i = 0; i < n; i++) {
			v[r][i] = retained_mib(NULL, rows[r].fn, args, rows[r].count, journal);
			w[r][i] = before ? retained_mib(before, rows[r].fn, args, rows[r].count, journal)
					 : 0;
		}
		bench_row(e->rep, rows[r].name, "MiB", NULL, e2e_median_of(v[r], (size_t)n),
			  before ? "BENCH_E2E_BEFORE" : "the bytes submitted",
			  before ? e2e_median_of(w[r], (size_t)n) : floor_mib * rows[r].count);
	}
	for (int i = 0; i < n; i++) {
		list_stall(e, NULL, &v[4][i], &v[5][i]);
		if (before)
			list_stall(e, before, &w[4][i], &w[5][i]);
	}
	bench_row(e->rep, "hostile: noop behind 1,000 lists of a 99,000-job table", "us", NULL,
		  e2e_median_of(v[4], (size_t)n), before ? "BENCH_E2E_BEFORE" : "same, no lists",
		  before ? e2e_median_of(w[4], (size_t)n) : e2e_median_of(v[5], (size_t)n));
	if (before)
		bench_note(e->rep, "hostile: noop round trip without the lists: %.0f us (this build), %.0f us "
				   "(BENCH_E2E_BEFORE=%s)",
			   e2e_median_of(v[5], (size_t)n), e2e_median_of(w[5], (size_t)n), before);
	bench_note(e->rep, "hostile: args of %zu bytes; %s jobs in the table; %d runs", bytes,
		   e->quick ? "9,900" : "99,000", n);
	free(args);
}
