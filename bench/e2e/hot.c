/* bench/e2e/hot.c: part 8, the hot path: one row per target a user of a job server feels,
 * each beside its baseline from the same run.
 *
 *   1. round trip: in each run, n 64-byte ping-pongs over a Unix socket pair (the floor,
 *      not pinned, as every process here) and then n noop submit + wait round trips
 *      through a jschedd (sleep policy, the CPUs' worker count); the ratio of the two p50s
 *      is taken per run, the row is the median of the runs and a second row the worst
 *      run (the target holds "in every run").  Twice: with the journal off (what the
 *      figures before the journal measured) and with journal.sync "always" (the
 *      default: every reply waits for its records' flush), the latter with n / 10.
 *      When the daemon takes submit's `wait` flag, the same with one request per job
 *      (jsched_submit_wait), beside the same ping-pong and beside the two requests; and
 *      its breakdown per round trip from the kernel's schedstat: the client's CPU (this
 *      process), the daemon's (every thread), the run-queue waits of both and the mean,
 *      beside the same of the ping-pong and its echo peer.
 *   2. counts per round trip, in the daemon: system calls and context switches, counted
 *      by perf over K round trips exactly (counts.c), journal off; beside the echo peer
 *      of a ping-pong counted the same way (one read and one write, one sleep, per
 *      round trip); the noop's also in one request (submit's `wait` flag), back to back
 *      and with the client pausing 100 µs between round trips.  The note lists
 *      the calls one by one.
 *   3. a light client's noop round trip (p50, p99 over n_light) while another client
 *      process keeps 10,000 spin(100 µs) jobs queued (it submits 10 batches of 1,000,
 *      then waits for its oldest batch and submits it again, until told to stop),
 *      beside the light client's own round trip on the same daemon, idle, just before.
 *      And the same client beside one busy-loop process per core at nice 0 (this
 *      benchmark's own children, at most 60 s each), beside its idle figure per run: the
 *      machine loaded the way other work loads it.
 *   4. efficiency of short call jobs: 20,000 spin jobs of 10 µs and 100 µs (2,000 of
 *      1 ms), batches of 1,000 with 4 in flight, waited for, with the CPUs' worker
 *      count; jobs/s beside the ideal, workers / job length.  And where their CPU went,
 *      per job over the timed runs: the daemon's workers (the job's own time included),
 *      its loop thread (schedstat) and this client (getrusage): the three share the
 *      CPUs, so the rate is at most the CPUs over their sum per job.
 *   5. resident memory after 1,000,000 queued noop jobs drained (100,000 with --quick):
 *      the client pauses itself while they are submitted, so that all are queued at
 *      once, then resumes, and the queue drains (seen in the metrics' succeeded
 *      counter); VmRSS then, and 1.5 s later (after a tick's give-back), beside VmRSS
 *      after 20,000 noops drained on the same daemon before (idle plus what retention
 *      keeps: the default 10,000 jobs and events).
 * The exec part (exec.c) has this table's command rows: /bin/true at the same
 * parallelism as a raw posix_spawn loop, and `jsched submit --wait` beside `tsp -f`.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

enum { FLOOD_BATCH = 1000, FLOOD_BATCHES = 10 };

static const char *const room = "\"limits\": {\"queued_jobs\": 10000000}, "
				"\"clients\": {\"default\": {\"max_queued\": 10000000}}";

/* start: a daemon with the CPUs' workers, the sleep policy, raised queue limits, and the
 * journal off or (journal) on in its own folder with sync "always". */
static void start(struct e2e *e, struct e2e_daemon *d, bool journal, const char *more)
{
	char conf[1024];

	snprintf(conf, sizeof(conf), "\"workers\": %u, \"idle_policy\": \"sleep\", %s%s%s", e->cpus, room,
		 more ? ", " : "", more ? more : "");
	if (!journal) {
		e2e_daemon_start(d, conf);
		return;
	}
	e2e_daemon_start(d, conf);
	char on[1200];
	snprintf(on, sizeof(on), "%s, \"journal\": {\"dir\": \"%s/journal\", \"sync\": \"always\"}", conf,
		 d->dir);
	e2e_daemon_restart(d, on);
}

/* ---- 1. the round trip beside the floor, per run --------------------------------------- */

/* ratios_text: "1.23x, 1.31x, ..." of r[0..n) into buf (cut at its size). */
static void ratios_text(char *buf, size_t size, const double *r, int n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%.2fx", i ? ", " : "", r[i]);
}

static void rtt_rows(struct e2e *e, double *lat, bool journal)
{
	size_t n = e->quick ? 500 : 10000;
	double r50[64], r99[64], f50[64], f99[64], j50[64], j99[64], w50[64], w99[64], wr50[64];
	/* The breakdown per round trip (us), per run: the CPU time of the client (this
	 * process) and of the daemon (every thread) or the echo peer, the time both waited on
	 * a run queue, and the mean round trip; for the one-request round trip and the
	 * ping-pong beside it (schedstat, counted by the kernel). */
	double wc[64], wd[64], wq[64], wm[64], pc[64], pd[64], pq[64], pm[64];
	/* The same job against the floor of a job server's work (e2e_minimal_start: libjsched
	 * against a process that only finds the id and writes the reply), journal off only. */
	double m50[64], m99[64], mc[64], md[64], mr50[64];
	bool sched = true, minimal = !journal;
	struct jsched_spec *spec;
	struct e2e_daemon d;
	int runs = e->runs < 64 ? e->runs : 64;
	const char *pol = journal ? "sleep, journal sync always" : "sleep, journal off";

	if (journal)
		n /= 10;
	if (jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	start(e, &d, journal, NULL);
	struct jsched_conn *c = e2e_connect(&d, "hot");
	e2e_rtt_wait(c, spec, n / 10, NULL); /* warm-up */
	bool flag = e2e_rtt_submit_wait(c, spec, n / 10, NULL);
	for (int run = 0; run < runs; run++) {
		pid_t peer;
		int fd = e2e_echo_start(&peer);
		double c0 = 0, cq0 = 0, d0 = 0, dq0 = 0, c1 = 0, cq1 = 0, d1 = 0, dq1 = 0;

		e2e_pingpong(fd, n / 10, NULL); /* the peer's first touches */
		sched = e2e_sched(getpid(), &c0, &cq0) && e2e_sched(peer, &d0, &dq0) && sched;
		uint64_t t0 = bench_now_ns();
		e2e_pingpong(fd, n, lat);
		pm[run] = (double)(bench_now_ns() - t0) / 1e3 / (double)n;
		sched = e2e_sched(getpid(), &c1, &cq1) && e2e_sched(peer, &d1, &dq1) && sched;
		pc[run] = (c1 - c0) / 1e3 / (double)n;
		pd[run] = (d1 - d0) / 1e3 / (double)n;
		pq[run] = (cq1 - cq0 + dq1 - dq0) / 1e3 / (double)n;
		e2e_echo_stop(fd, peer);
		f50[run] = e2e_percentile(lat, n, 0.50);
		f99[run] = e2e_percentile(lat, n, 0.99);
		e2e_rtt_wait(c, spec, n, lat);
		j50[run] = e2e_percentile(lat, n, 0.50);
		j99[run] = e2e_percentile(lat, n, 0.99);
		r50[run] = j50[run] / f50[run];
		r99[run] = j99[run] / f99[run];
		if (flag) {
			sched = e2e_sched(getpid(), &c0, &cq0) && e2e_sched(d.pid, &d0, &dq0) && sched;
			t0 = bench_now_ns();
			e2e_rtt_submit_wait(c, spec, n, lat);
			wm[run] = (double)(bench_now_ns() - t0) / 1e3 / (double)n;
			sched = e2e_sched(getpid(), &c1, &cq1) && e2e_sched(d.pid, &d1, &dq1) && sched;
			wc[run] = (c1 - c0) / 1e3 / (double)n;
			wd[run] = (d1 - d0) / 1e3 / (double)n;
			wq[run] = (cq1 - cq0 + dq1 - dq0) / 1e3 / (double)n;
			w50[run] = e2e_percentile(lat, n, 0.50);
			if (minimal) {
				pid_t mp;
				struct jsched_conn *mcn;
				int mfd = e2e_minimal_start(jsched_hello_json(c), &mp);

				if (jsched_connect_fd(mfd, "hot", &mcn) < 0)
					e2e_die("the minimal server's hello failed");
				e2e_rtt_submit_wait(mcn, spec, n / 10, NULL);
				sched = e2e_sched(getpid(), &c0, &cq0) && e2e_sched(mp, &d0, &dq0) && sched;
				e2e_rtt_submit_wait(mcn, spec, n, lat);
				sched = e2e_sched(getpid(), &c1, &cq1) && e2e_sched(mp, &d1, &dq1) && sched;
				mc[run] = (c1 - c0) / 1e3 / (double)n;
				md[run] = (d1 - d0) / 1e3 / (double)n;
				jsched_close(mcn);
				e2e_wait_ok(mp, "minimal server");
				m50[run] = e2e_percentile(lat, n, 0.50);
				m99[run] = e2e_percentile(lat, n, 0.99);
			}
			w99[run] = e2e_percentile(lat, n, 0.99);
			wr50[run] = w50[run] / f50[run];
			if (minimal)
				mr50[run] = m50[run] / f50[run];
		}
	}
	jsched_close(c);
	e2e_daemon_stop(&d);

	double worst = 0, worst_f = 0, worst_j = 0;
	for (int run = 0; run < runs; run++)
		if (r50[run] > worst) {
			worst = r50[run];
			worst_f = f50[run];
			worst_j = j50[run];
		}
	size_t k = (size_t)runs;
	bench_row(e->rep, "hot: noop submit + wait, p50", "us", pol, e2e_median_of(j50, k),
		  "unix ping-pong p50, same runs", e2e_median_of(f50, k));
	bench_row(e->rep, "hot: noop submit + wait, p99", "us", pol, e2e_median_of(j99, k),
		  "unix ping-pong p99, same runs", e2e_median_of(f99, k));
	bench_row(e->rep, "hot: noop submit + wait, p50, the worst run", "us", pol, worst_j,
		  "unix ping-pong p50 of that run", worst_f);
	char per[512];
	ratios_text(per, sizeof(per), r50, runs);
	bench_note(e->rep, "hot: round trip (%s): %zu per run, %d runs; p50 ratio per run %s (p99: median %.2fx)",
		   pol, n, runs, per, e2e_median_of(r99, k));
	if (!flag) {
		bench_note(e->rep, "hot: MISSING: the one-request round trip (this jschedd has no wait flag on submit)");
		jsched_spec_free(spec);
		return;
	}
	/* The same job in one request: submit with `wait` (jsched_submit_wait). */
	bench_row(e->rep, "hot: noop submit with wait (one request), p50", "us", pol, e2e_median_of(w50, k),
		  "unix ping-pong p50, same runs", e2e_median_of(f50, k));
	bench_row(e->rep, "hot: noop submit with wait (one request), p99", "us", pol, e2e_median_of(w99, k),
		  "unix ping-pong p99, same runs", e2e_median_of(f99, k));
	bench_row(e->rep, "hot: noop submit with wait vs submit + wait, p50", "us", pol, e2e_median_of(w50, k),
		  "submit + wait p50, same runs", e2e_median_of(j50, k));
	ratios_text(per, sizeof(per), wr50, runs);
	bench_note(e->rep, "hot: one-request round trip (%s): p50 ratio to the ping-pong per run %s", pol, per);
	if (minimal) {
		bench_row(e->rep, "hot: noop submit with wait against a minimal server (the work's floor), p50", "us", pol,
			  e2e_median_of(m50, k), "unix ping-pong p50, same runs", e2e_median_of(f50, k));
		bench_row(e->rep, "hot: noop submit with wait against a minimal server (the work's floor), p99", "us", pol,
			  e2e_median_of(m99, k), "unix ping-pong p99, same runs", e2e_median_of(f99, k));
		bench_row(e->rep, "hot: noop submit with wait (one request) vs the minimal server, p50", "us", pol,
			  e2e_median_of(w50, k), "minimal server p50, same runs", e2e_median_of(m50, k));
		ratios_text(per, sizeof(per), mr50, runs);
		bench_note(e->rep, "hot: the minimal server (libjsched's submit with wait against a process that reads the "
				   "frame, finds its id and writes a noop's reply of the daemon's size): p50 ratio to the "
				   "ping-pong per run %s; per round trip, client CPU %.2f us, server CPU %.2f us",
			   per, e2e_median_of(mc, k), e2e_median_of(md, k));
	}
	if (!sched) {
		bench_note(e->rep, "hot: MISSING: the round trip's breakdown (no /proc/PID/task/*/schedstat)");
		jsched_spec_free(spec);
		return;
	}
	/* Where a round trip's time goes: CPU on each side and the run-queue waits, counted by
	 * the kernel, beside the ping-pong's.  They are not a sum of the round trip: each side
	 * goes on running after its write (the daemon's flush and next poll, the client's
	 * free) while the other wakes, and under load the waits include the other side's
	 * runs.  What they say is how much work each side does per round trip against the
	 * bare read and write of the ping-pong. */
	bench_row(e->rep, "hot: one-request round trip, client CPU (libjsched + kernel) per round trip", "us", pol,
		  e2e_median_of(wc, k), "ping-pong client CPU per round trip", e2e_median_of(pc, k));
	bench_row(e->rep, "hot: one-request round trip, daemon CPU (every thread) per round trip", "us", pol,
		  e2e_median_of(wd, k), "ping-pong echo peer CPU per round trip", e2e_median_of(pd, k));
	bench_row(e->rep, "hot: one-request round trip, run-queue waits (both sides) per round trip", "us", pol,
		  e2e_median_of(wq, k), "the ping-pong's, both peers", e2e_median_of(pq, k));
	bench_row(e->rep, "hot: one-request round trip, mean", "us", pol, e2e_median_of(wm, k), "ping-pong mean",
		  e2e_median_of(pm, k));
	bench_note(e->rep, "hot: one-request round trip (%s), per round trip (schedstat, medians of %d runs): client "
			   "CPU %.2f us, daemon CPU %.2f us, run-queue waits %.2f us, mean %.2f us; the ping-pong: "
			   "%.2f, %.2f, %.2f, %.2f us",
		   pol, runs, e2e_median_of(wc, k), e2e_median_of(wd, k), e2e_median_of(wq, k), e2e_median_of(wm, k),
		   e2e_median_of(pc, k), e2e_median_of(pd, k), e2e_median_of(pq, k), e2e_median_of(pm, k));
	jsched_spec_free(spec);
}

/* ---- 2. counts per round trip ----------------------------------------------------------- */

static void count_rows(struct e2e *e)
{
	size_t k = e->quick ? 300 : 5000;
	struct e2e_counter ctr;
	struct e2e_counts peer_c;
	struct jsched_spec *spec;
	struct e2e_daemon d;
	pid_t peer;
	char br[512];

	/* The floor's echo peer, counted the same way. */
	int fd = e2e_echo_start(&peer);
	e2e_pingpong(fd, 100, NULL);
	if (!e2e_counter_start(&ctr, peer)) {
		e2e_echo_stop(fd, peer);
		bench_note(e->rep, "hot: MISSING: the count rows (perf stat could not count; see stderr)");
		return;
	}
	e2e_counter_enable(&ctr);
	e2e_pingpong(fd, k, NULL);
	bool ok = e2e_counter_stop(&ctr, &peer_c);
	e2e_echo_stop(fd, peer);

	/* The noop's (the loop thread runs it), spin 0 us's (a worker runs it), and the noop's
	 * in one request (the submit's wait flag), when the daemon has it; the last also with
	 * the client pausing GAP_US between round trips, as a client that does anything
	 * between its requests: then every request finds the loop asleep in its poll (back to
	 * back, a fast client's next request can be there before the loop polls again). */
	enum { GAP_US = 100 };
	static const char *const fns[4][2] = {{"noop", NULL}, {"spin", "{\"us\": 0}"}, {"noop", NULL}, {"noop", NULL}};
	struct e2e_counts dc[4];
	bool flag = true;
	for (int f = 0; f < 4 && ok && flag; f++) {
		if (jsched_spec_call(fns[f][0], fns[f][1], &spec) < 0)
			e2e_die("out of memory");
		start(e, &d, false, NULL);
		struct jsched_conn *c = e2e_connect(&d, "hot");
		if (f < 2)
			e2e_rtt_wait(c, spec, 1000, NULL); /* warm-up */
		else
			flag = e2e_rtt_submit_wait(c, spec, 1000, NULL);
		if (flag && !e2e_counter_start(&ctr, d.pid))
			ok = false;
		if (flag) {
			e2e_counter_enable(&ctr);
			if (f < 2)
				e2e_rtt_wait(c, spec, k, NULL);
			else if (f == 2)
				e2e_rtt_submit_wait(c, spec, k, NULL);
			for (size_t i = 0; f == 3 && i < k; i++) {
				struct timespec gap = {.tv_nsec = GAP_US * 1000L};

				e2e_rtt_submit_wait(c, spec, 1, NULL);
				nanosleep(&gap, NULL);
			}
			ok = e2e_counter_stop(&ctr, &dc[f]) && ok;
		}
		jsched_close(c);
		e2e_daemon_stop(&d);
		jsched_spec_free(spec);
	}
	if (!ok) {
		bench_note(e->rep, "hot: MISSING: the count rows (perf stat counted nothing)");
		return;
	}
	double kk = (double)k;
	bench_row(e->rep, "hot: system calls per round trip, daemon (submit + wait)", "calls", "sleep, journal off",
		  dc[0].syscalls / kk, "ping-pong echo peer", peer_c.syscalls / kk);
	bench_row(e->rep, "hot: context switches per round trip, daemon (submit + wait)", "switches",
		  "sleep, journal off", dc[0].ctxsw / kk, "ping-pong echo peer", peer_c.ctxsw / kk);
	bench_row(e->rep, "hot: system calls per round trip, daemon, spin 0 us (a worker's job)", "calls",
		  "sleep, journal off", dc[1].syscalls / kk, "ping-pong echo peer", peer_c.syscalls / kk);
	bench_row(e->rep, "hot: context switches per round trip, daemon, spin 0 us (a worker's job)", "switches",
		  "sleep, journal off", dc[1].ctxsw / kk, "ping-pong echo peer", peer_c.ctxsw / kk);
	if (flag) {
		bench_row(e->rep, "hot: system calls per round trip, daemon (submit with wait, one request)", "calls",
			  "sleep, journal off", dc[2].syscalls / kk, "ping-pong echo peer", peer_c.syscalls / kk);
		bench_row(e->rep, "hot: context switches per round trip, daemon (submit with wait, one request)",
			  "switches", "sleep, journal off", dc[2].ctxsw / kk, "ping-pong echo peer", peer_c.ctxsw / kk);
		bench_row(e->rep, "hot: system calls per round trip, daemon (one request, 100 us between)", "calls",
			  "sleep, journal off", dc[3].syscalls / kk, "ping-pong echo peer", peer_c.syscalls / kk);
	} else {
		bench_note(e->rep, "hot: MISSING: the one-request counts (this jschedd has no wait flag on submit)");
	}
	for (int f = 0; f < (flag ? 4 : 2); f++) {
		e2e_counts_breakdown(&dc[f], kk, br, sizeof(br));
		bench_note(e->rep, "hot: counts over %zu round trips (perf stat, every thread): the daemon's calls per "
				   "round trip, %s%s: %s",
			   k, fns[f][0], f == 2 ? " in one request" : f == 3 ? " in one request, 100 us between" : "", br);
	}
}

/* ---- 3. a light client beside a flood ---------------------------------------------------- */

/* flood: the heavy client's process: keep FLOOD_BATCHES x FLOOD_BATCH spin(100 µs) jobs
 * queued until `stop` reads end of file.  Writes one byte to `ready` once they are. */
/* flood_fail: the flood client's request `what` failed with rc: say so and end the process. */
static __attribute__((noreturn)) void flood_fail(const char *what, int rc)
{
	fprintf(stderr, "bench-e2e: the flood client's %s failed: %s\n", what, jsched_strerror(rc));
	_exit(1);
}

static __attribute__((noreturn)) void flood(struct e2e_daemon *d, int ready, int stop)
{
	static uint64_t ids[FLOOD_BATCHES][FLOOD_BATCH];
	const struct jsched_spec *specs[FLOOD_BATCH];
	struct jsched_spec *spin;
	char byte = 0;
	int rc;

	if (jsched_spec_call("spin", "{\"us\": 100}", &spin) < 0)
		_exit(1);
	for (size_t i = 0; i < FLOOD_BATCH; i++)
		specs[i] = spin;
	struct jsched_conn *c = e2e_connect(d, "flood");
	for (int b = 0; b < FLOOD_BATCHES; b++)
		if ((rc = jsched_submit_batch(c, specs, FLOOD_BATCH, ids[b])) < 0)
			flood_fail("submit", rc);
	if (write(ready, &byte, 1) != 1)
		_exit(1);
	for (int b = 0;; b = (b + 1) % FLOOD_BATCHES) {
		struct pollfd p = {.fd = stop, .events = POLLIN};
		struct jsched_results *res = NULL;

		if (poll(&p, 1, 0) == 1)
			break;
		if ((rc = jsched_wait_many(c, ids[b], FLOOD_BATCH, JSCHED_WAIT_ALL, 60000, &res)) < 0)
			flood_fail("wait", rc);
		jsched_results_free(res);
		if ((rc = jsched_submit_batch(c, specs, FLOOD_BATCH, ids[b])) < 0)
			flood_fail("submit", rc);
	}
	/* Leave nothing queued for the next row: cancel what is not final. */
	for (int b = 0; b < FLOOD_BATCHES; b++)
		jsched_cancel_many(c, ids[b], FLOOD_BATCH, NULL);
	jsched_close(c);
	_exit(0);
}

/* loop_sched: the daemon's loop thread (its main thread) as the kernel counts it: the time it
 * waited on a run queue (schedstat, ns) and its involuntary context switches. */
static void loop_sched(pid_t pid, double *wait_ns, double *invol)
{
	char path[64], line[128];
	unsigned long long run, wait;
	FILE *f;

	*wait_ns = *invol = NAN;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)pid);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			*wait_ns = (double)wait;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)pid);
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &run) == 1)
				*invol = (double)run;
		fclose(f);
	}
}

/* self_wait_ns: the time this thread (the light client) has waited on a run queue so far
 * (schedstat, ns), NaN where the kernel does not say. */
static double self_wait_ns(void)
{
	unsigned long long run, wait;
	double ns = NAN;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			ns = (double)wait;
		fclose(f);
	}
	return ns;
}

/* ---- a light client's round trips beside a load ------------------------------------------- */

/* A load the light client's noop round trips are measured beside: `begin` starts it after
 * a run's idle round trips, `end` stops it after the loaded ones (both get the light
 * client's connection and the daemon); `what` ends the rows' names ("under a flood"). */
struct light_load {
	const char *what;
	const char *members;	/* the daemon's config members, or NULL */
	void (*begin)(void *ctx, struct jsched_conn *c, struct e2e_daemon *d);
	void (*end)(void *ctx, struct jsched_conn *c, struct e2e_daemon *d);
	void *ctx;
	size_t loaded;		/* loaded round trips per run (at most 10,000); 0: as idle */
};

/* light_rows: per run (e->runs_long), n light round trips idle, then ld->loaded (or n)
 * beside the load, on one daemon; the p50 and p99 rows of the loaded ones beside the idle
 * ones, and the loaded ones' p99.9 and worst in a note.  Returns the loaded round trips
 * per run. */
static size_t light_rows(struct e2e *e, double *lat, const struct light_load *ld)
{
	size_t n = e->quick ? 200 : 2000, nl = ld->loaded ? ld->loaded : n;
	int runs = e->runs_long;
	double i50[64], i99[64], l50[64], l99[64], l999[64], lmax[64], iwait = 0, lwait = 0, w0;
	struct jsched_spec *spec;
	struct e2e_daemon d;
	char name[160];

	if (jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	start(e, &d, false, ld->members);
	struct jsched_conn *c = e2e_connect(&d, "light");
	e2e_rtt_wait(c, spec, n / 4, NULL);
	for (int run = 0; run < runs; run++) {
		w0 = self_wait_ns();
		e2e_rtt_wait(c, spec, n, lat);
		iwait += self_wait_ns() - w0;
		i50[run] = e2e_percentile(lat, n, 0.50);
		i99[run] = e2e_percentile(lat, n, 0.99);
		ld->begin(ld->ctx, c, &d);
		w0 = self_wait_ns();
		e2e_rtt_wait(c, spec, nl, lat);
		lwait += self_wait_ns() - w0;
		ld->end(ld->ctx, c, &d);
		l50[run] = e2e_percentile(lat, nl, 0.50);
		l99[run] = e2e_percentile(lat, nl, 0.99);
		l999[run] = e2e_percentile(lat, nl, 0.999);
		lmax[run] = e2e_percentile(lat, nl, 1.0);
	}
	jsched_close(c);
	e2e_daemon_stop(&d);
	jsched_spec_free(spec);
	size_t k = (size_t)runs;
	snprintf(name, sizeof(name), "hot: light client's noop round trip %s, p50", ld->what);
	bench_row(e->rep, name, "us", "sleep, journal off", e2e_median_of(l50, k),
		  "the same client idle, p50", e2e_median_of(i50, k));
	snprintf(name, sizeof(name), "hot: light client's noop round trip %s, p99", ld->what);
	bench_row(e->rep, name, "us", "sleep, journal off", e2e_median_of(l99, k),
		  "the same client idle, p99", e2e_median_of(i99, k));
	/* Whether the light client's own wake-ups wait for a CPU (a worker's or a burner's
	 * slice), which no work of the daemon's loop changes. */
	bench_note(e->rep, "hot: light client %s: the client itself waited %.1f us on a run queue per round trip "
			   "(schedstat), %.1f us idle",
		   ld->what, lwait / 1000.0 / (double)(nl * k), iwait / 1000.0 / (double)(n * k));
	bench_note(e->rep, "hot: light client %s: %zu round trips per run (%zu idle), p99.9 %.0f us, the worst %.0f us "
			   "(medians of the runs)",
		   ld->what, nl, n, e2e_median_of(l999, k), e2e_median_of(lmax, k));
	return nl;
}

/* A flood under way, and the loop's figures counted around the light round trips. */
struct flood_run {
	pid_t pid;
	int stop;
	double o0, i0, w0, v0, s0, r0;
	double over, iters, qwait, invol, subs, waits;	/* summed over the runs */
};

static void flood_begin(void *ctx, struct jsched_conn *c, struct e2e_daemon *d)
{
	struct flood_run *f = ctx;
	int ready[2], stop[2];
	char byte;

	if (pipe(ready) < 0 || pipe(stop) < 0)
		e2e_die("pipe: %s", strerror(errno));
	f->pid = fork();
	if (f->pid < 0)
		e2e_die("fork: %s", strerror(errno));
	if (f->pid == 0) {
		close(ready[0]);
		close(stop[1]);
		flood(d, ready[1], stop[0]);
	}
	close(ready[1]);
	close(stop[0]);
	if (read(ready[0], &byte, 1) != 1)
		e2e_die("the flood client died before its jobs were queued");
	close(ready[0]);
	f->stop = stop[1];
	f->o0 = e2e_metrics_number(c, "loop/over_bound");
	f->i0 = e2e_metrics_number(c, "loop/iterations");
	f->s0 = e2e_metrics_number(c, "loop/sliced_submits");
	f->r0 = e2e_metrics_number(c, "loop/sliced_replies");
	loop_sched(d->pid, &f->w0, &f->v0);
}

static void flood_end(void *ctx, struct jsched_conn *c, struct e2e_daemon *d)
{
	struct flood_run *f = ctx;
	double w1, v1;

	loop_sched(d->pid, &w1, &v1);
	f->qwait += w1 - f->w0;
	f->invol += v1 - f->v0;
	f->over += e2e_metrics_number(c, "loop/over_bound") - f->o0;
	f->iters += e2e_metrics_number(c, "loop/iterations") - f->i0;
	f->subs += e2e_metrics_number(c, "loop/sliced_submits") - f->s0;
	f->waits += e2e_metrics_number(c, "loop/sliced_replies") - f->r0;
	close(f->stop);
	e2e_wait_ok(f->pid, "flood client");
}

static void flood_rows(struct e2e *e, double *lat)
{
	struct flood_run f = {0};
	/* Retention room for the flood's jobs: its first wait, after 10 batches, finds jobs of
	 * batch 0 that ended meanwhile, which the default 10,000 retained jobs (the light
	 * client's noops among them) may have forgotten (job_forgotten), the sooner the faster
	 * the light client goes. */
	/* 10,000 loaded round trips: 2,000 of ~15 us took less than the flood's first wait
	 * (1,000 jobs of 100 us on 2 workers: 50 ms), so none of its submits or answers fell
	 * among them. */
	struct light_load ld = {"under a flood", "\"retention\": {\"jobs\": 1000000}", flood_begin,
				flood_end, &f, e->quick ? 1000 : 10000};
	int runs = e->runs_long;
	size_t n = light_rows(e, lat, &ld);

	bench_note(e->rep, "hot: flood: another client process keeps %d spin(100 us) jobs queued "
			   "(batches of %d); %zu light round trips per run, %d runs",
		   FLOOD_BATCH * FLOOD_BATCHES, FLOOD_BATCH, n, runs);
	/* NaN for a daemon without the loop's metrics (an older build). */
	bench_note(e->rep, "hot: flood: the daemon's loop iterations busier than 200 us while the light client ran "
			   "under the flood (metrics loop.over_bound): %.0f of %.0f, %d runs",
		   f.over, f.iters, runs);
	bench_note(e->rep, "hot: flood: the loop thread per light round trip under the flood: %.1f us waiting on a run "
			   "queue (schedstat), %.2f involuntary switches",
		   f.qwait / 1000.0 / (double)(n * (size_t)runs), f.invol / (double)(n * (size_t)runs));
	/* How many of the flood client's 1,000-job submits and 1,000-record wait answers fell
	 * among the light round trips (each admitted or answered in slices; NaN for a build
	 * without them): each can delay one or two light round trips, so they reach the p99
	 * only when they are over a hundredth of the round trips. */
	bench_note(e->rep, "hot: flood: the flood client's batches admitted and answers written in slices while the "
			   "light client ran: %.0f and %.0f, %d runs",
		   f.subs, f.waits, runs);
}

/* ---- 3b. a light client beside CPU burners ---------------------------------------------- */

/* burn: a child's busy loop at nice 0, for at most 60 s (and not past its parent). */
static __attribute__((noreturn)) void burn(void)
{
	uint64_t end = bench_now_ns() + 60ull * 1000000000ull;
	unsigned spins = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (++spins & 0xfffff || bench_now_ns() < end)
		__asm__ volatile("" ::: "memory");
	_exit(0);
}

/* The burners of one run. */
struct burners {
	pid_t kids[64];
	unsigned nk;
};

static void burners_begin(void *ctx, struct jsched_conn *c, struct e2e_daemon *d)
{
	struct burners *b = ctx;

	(void)c;
	(void)d;
	for (unsigned k = 0; k < b->nk; k++) {
		b->kids[k] = fork();
		if (b->kids[k] < 0)
			e2e_die("fork: %s", strerror(errno));
		if (b->kids[k] == 0)
			burn();
		e2e_track(b->kids[k]);
	}
}

static void burners_end(void *ctx, struct jsched_conn *c, struct e2e_daemon *d)
{
	struct burners *b = ctx;

	(void)c;
	(void)d;
	for (unsigned k = 0; k < b->nk; k++) {
		kill(b->kids[k], SIGKILL);
		waitpid(b->kids[k], NULL, 0);
		e2e_untrack(b->kids[k]);
	}
}

/* burner_rows: the light client's noop round trip with one CPU burner per core (processes
 * of this benchmark, nice 0: load the machine the way other work would), beside its idle
 * figure on the same daemon just before, per run. */
static void burner_rows(struct e2e *e, double *lat)
{
	struct burners b = {.nk = e->cpus < 64 ? e->cpus : 64};
	struct light_load ld = {"beside a CPU burner per core", NULL, burners_begin, burners_end,
				&b, 0};
	size_t n = light_rows(e, lat, &ld);

	bench_note(e->rep, "hot: burners: %u busy-loop processes at nice 0 (this benchmark's own); %zu light round "
			   "trips per run, %d runs",
		   b.nk, n, e->runs_long);
}

/* ---- 4. efficiency of short call jobs ------------------------------------------------------ */

/* Where the CPU of short jobs goes: the daemon's loop thread, its workers (the jobs' own
 * time included) and this client, in ns, from the kernel's schedstat and getrusage. */
struct eff_cpu {
	double loop, workers, client;
};

/* eff_cpu_now: the CPU time so far of pid's loop thread (its main thread), of its threads
 * named jd-work/N, and of this process. */
static void eff_cpu_now(pid_t pid, struct eff_cpu *c)
{
	char path[384], comm[32];
	struct dirent *de;
	struct rusage ru;
	DIR *dir;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((dir = opendir(path))) {
		while ((de = readdir(dir))) {
			unsigned long long run = 0;
			FILE *f;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, de->d_name);
			comm[0] = '\0';
			if ((f = fopen(path, "r"))) {
				if (!fgets(comm, sizeof(comm), f))
					comm[0] = '\0';
				fclose(f);
			}
			snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
			if ((f = fopen(path, "r"))) {
				if (fscanf(f, "%llu", &run) != 1)
					run = 0;
				fclose(f);
			}
			if (atoi(de->d_name) == (int)pid)
				c->loop += (double)run;
			else if (strncmp(comm, "jd-work/", 8) == 0)
				c->workers += (double)run;
		}
		closedir(dir);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c->client = ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
			    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

/* eff_cpu_add: add what was used since `then` to *sum. */
static void eff_cpu_add(pid_t pid, const struct eff_cpu *then, struct eff_cpu *sum)
{
	struct eff_cpu now;

	eff_cpu_now(pid, &now);
	sum->loop += now.loop - then->loop;
	sum->workers += now.workers - then->workers;
	sum->client += now.client - then->client;
}

/* spin_rate: n spin(us) jobs through d, timed, their CPU added to *cpu (if not NULL).  With
 * `each`, job i's args are {"us": us, "i": i}, so no spec repeats the one before it (the
 * daemon's reader copies a repeated spec instead of reading it: proto/fastreq.c); the specs
 * are made before the clock starts. */
static double spin_rate(struct e2e_daemon *d, unsigned us, size_t n, bool each, struct eff_cpu *cpu)
{
	struct eff_cpu then;
	struct jsched_spec *spec = NULL, **specs = each ? calloc(n, sizeof(*specs)) : NULL;
	char args[64];
	uint64_t *ids = malloc(n * sizeof(*ids));

	snprintf(args, sizeof(args), "{\"us\": %u}", us);
	if (!ids || (each && !specs) || jsched_spec_call("spin", args, &spec) < 0)
		e2e_die("out of memory");
	for (size_t i = 0; each && i < n; i++) {
		snprintf(args, sizeof(args), "{\"us\": %u, \"i\": %zu}", us, i);
		if (jsched_spec_call("spin", args, &specs[i]) < 0)
			e2e_die("out of memory");
	}
	struct jsched_conn *c = e2e_connect(d, "eff");
	eff_cpu_now(d->pid, &then);
	uint64_t t0 = bench_now_ns();
	if (each)
		e2e_submit_pipelined_each(c, (const struct jsched_spec *const *)specs, n, 1000, 4, ids);
	else
		e2e_submit_pipelined(c, spec, n, 1000, 4, ids);
	/* Only the states are needed (each job's success), as a client that runs a batch of
	 * short calls for their effects would ask: brief records (PROTOCOL.md 6.4). */
	e2e_wait_ids_brief(c, ids, n);
	double rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	if (cpu)
		eff_cpu_add(d->pid, &then, cpu);
	jsched_close(c);
	jsched_spec_free(spec);
	for (size_t i = 0; each && i < n; i++)
		jsched_spec_free(specs[i]);
	free(specs);
	free(ids);
	return rate;
}

/* eff_cpu_rows: the CPU per job rows of one length, `what` naming the kind of args; and
 * the ceiling those rows put on the rate, beside the ideal and beside the rate (the median
 * of the runs'): the CPUs over the job's own length plus the loop's and the client's CPU
 * per job, the rate if the workers spent nothing but the job, with the loop and the client
 * on the same CPUs. */
static void eff_cpu_rows(struct e2e *e, unsigned us, const char *what, const struct eff_cpu *cpu,
			 double per, double rate, double ideal)
{
	char name[160];
	double ceiling = (double)e->cpus * 1e6 / ((double)us + cpu->loop / per + cpu->client / per);

	snprintf(name, sizeof(name), "hot: CPU per %u us call job%s, the daemon's workers", us, what);
	bench_row(e->rep, name, "us", "sleep, journal off", cpu->workers / per, "the job's own", us);
	snprintf(name, sizeof(name), "hot: CPU per %u us call job%s, the daemon's loop thread", us, what);
	bench_row(e->rep, name, "us", "sleep, journal off", cpu->loop / per, NULL, 0);
	snprintf(name, sizeof(name), "hot: CPU per %u us call job%s, the client", us, what);
	bench_row(e->rep, name, "us", "sleep, journal off", cpu->client / per, NULL, 0);
	snprintf(name, sizeof(name), "hot: %u us call jobs%s, the ceiling: CPUs / (job + loop + client CPU)",
		 us, what);
	bench_row(e->rep, name, "jobs/s", "sleep, journal off", ceiling, "ideal: workers / job", ideal);
	snprintf(name, sizeof(name), "hot: %u us call jobs%s, against that ceiling", us, what);
	bench_row(e->rep, name, "jobs/s", "sleep, journal off", rate, "the ceiling", ceiling);
}

static void efficiency_rows(struct e2e *e)
{
	static const unsigned lens[] = {10, 100, 1000};
	struct e2e_daemon d;
	int runs = e->runs_long;

	const char *only = getenv("BENCH_HOT_EFF_US"); /* profiling one length: "10" */

	start(e, &d, false, "\"retention\": {\"jobs\": 1000000}");
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		size_t n = lens[l] >= 1000 ? 2000 : 20000;

		if (only && *only && strtoul(only, NULL, 10) != lens[l])
			continue;
		double v[64], ideal = (double)e->cpus * 1e6 / lens[l];
		char name[96], base[64];

		if (e->quick)
			n /= 10;
		struct eff_cpu cpu = {0}, cpu_each = {0};
		double v_each[64], wakes = 0, polls = 0, windows = 0;
		/* The 10 us row again with args that differ per job, run for run beside the
		 * repeated spec's ($BENCH_HOT_EFF_ARGS=each or same: only that one, for
		 * profiling). */
		const char *kind = getenv("BENCH_HOT_EFF_ARGS");
		bool same = l > 0 || !kind || strcmp(kind, "each") != 0;
		bool each = l == 0 && (!kind || strcmp(kind, "same") != 0);
		/* The loop's wake-ups by the workers' notices (metrics notices.wakeups) over the
		 * repeated spec's runs, a count that says what the loop's CPU per job cannot:
		 * how often a worker woke it. */
		struct jsched_conn *m = e2e_connect(&d, "eff-metrics");

		for (int run = 0; run < runs; run++) {
			if (same) {
				double w0 = e2e_metrics_number(m, "notices/wakeups");
				double p0 = e2e_metrics_number(m, "loop/poll/polls");
				double o0 = e2e_metrics_number(m, "loop/poll/windows");

				v[run] = spin_rate(&d, lens[l], n, false, &cpu);
				wakes += e2e_metrics_number(m, "notices/wakeups") - w0;
				polls += e2e_metrics_number(m, "loop/poll/polls") - p0;
				windows += e2e_metrics_number(m, "loop/poll/windows") - o0;
			}
			if (each)
				v_each[run] = spin_rate(&d, lens[l], n, true, &cpu_each);
		}
		jsched_close(m);
		if (l == 0) { /* and counted: the daemon's system calls and switches per job */
			struct e2e_counter ctr;
			struct e2e_counts k;
			char br[512];

			if (e2e_counter_start(&ctr, d.pid)) {
				e2e_counter_enable(&ctr);
				spin_rate(&d, lens[l], n, !same, NULL);
				if (e2e_counter_stop(&ctr, &k)) {
					snprintf(name, sizeof(name), "hot: system calls per %u us call job, daemon", lens[l]);
					bench_row(e->rep, name, "calls", "sleep, journal off", k.syscalls / (double)n, NULL, 0);
					snprintf(name, sizeof(name), "hot: context switches per %u us call job, daemon", lens[l]);
					bench_row(e->rep, name, "switches", "sleep, journal off", k.ctxsw / (double)n, NULL, 0);
					e2e_counts_breakdown(&k, (double)n, br, sizeof(br));
					bench_note(e->rep, "hot: %u us jobs: the daemon's calls per job: %s", lens[l], br);
				}
			}
		}
		snprintf(base, sizeof(base), "ideal: %u workers / %u us", e->cpus, lens[l]);
		/* CPU per job, all runs: counts of a kind that hold under load better than the
		 * rate (the workers' row includes the job's own us). */
		double per = 1000.0 * (double)n * (double)runs;
		if (same) {
			snprintf(name, sizeof(name), "hot: %u us call jobs, %zu, %u workers", lens[l], n, e->cpus);
			double rate = e2e_median_of(v, (size_t)runs);

			bench_row(e->rep, name, "jobs/s", "sleep, journal off", rate, base, ideal);
			eff_cpu_rows(e, lens[l], "", &cpu, per, rate, ideal);
			snprintf(name, sizeof(name), "hot: loop wake-ups by the workers per %u us call job", lens[l]);
			bench_row(e->rep, name, "wake-ups", "sleep, journal off", wakes / ((double)n * (double)runs),
				  NULL, 0);
			/* The loop's poll after a request (loop_poll_us): how often it polled
			 * instead of sleeping while these jobs ran (NaN: a build without it). */
			snprintf(name, sizeof(name), "hot: loop polls without blocking per %u us call job", lens[l]);
			bench_row(e->rep, name, "polls", "sleep, journal off", polls / ((double)n * (double)runs),
				  NULL, 0);
			bench_note(e->rep, "hot: %u us jobs: the loop's poll windows opened per job %.4f, polls per job "
					   "%.4f (metrics loop.poll over the repeated spec's runs)",
				   lens[l], windows / ((double)n * (double)runs), polls / ((double)n * (double)runs));
		}
		if (each) {
			snprintf(name, sizeof(name), "hot: %u us call jobs, args differing per job, %zu, %u workers",
				 lens[l], n, e->cpus);
			bench_row(e->rep, name, "jobs/s", "sleep, journal off",
				  e2e_median_of(v_each, (size_t)runs), base, ideal);
			eff_cpu_rows(e, lens[l], ", args differing per job", &cpu_each, per,
				     e2e_median_of(v_each, (size_t)runs), ideal);
		}
	}
	e2e_daemon_stop(&d);
}

/* ---- 5. memory after a drained flood of queued jobs ---------------------------------------- */

/* noops_until_done: submit n noops (batches of 1,000, 4 in flight); then, if goal > 0,
 * wait until the metrics' succeeded counter reaches goal. */
static void noops_until_done(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double goal)
{
	uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids));

	if (!ids)
		e2e_die("out of memory");
	e2e_submit_pipelined(c, spec, n, 1000, 4, ids);
	free(ids);
	if (goal > 0)
		for (int i = 0; e2e_metrics_number(c, "jobs/succeeded") < goal; i++) {
			if (i == 120000)
				e2e_die("the metrics did not count %.0f succeeded jobs within 120 s", goal);
			e2e_sleep_ms(1);
		}
}

static void memory_rows(struct e2e *e)
{
	size_t n = e->quick ? 100000 : 1000000, warm = 20000;
	struct jsched_spec *noop;
	struct e2e_daemon d;
	int r;

	if (jsched_spec_call("noop", NULL, &noop) < 0)
		e2e_die("out of memory");
	start(e, &d, false, NULL);
	struct jsched_conn *c = e2e_connect(&d, "mem");
	long idle = e2e_rss_kib(d.pid);
	double done = e2e_metrics_number(c, "jobs/succeeded");
	noops_until_done(c, noop, warm, done + (double)warm);
	done += (double)warm;
	long base = e2e_rss_kib(d.pid);
	if ((r = jsched_pause(c, NULL, false)) < 0) /* every job queued until the resume */
		e2e_die("pause: %s", jsched_strerror(r));
	noops_until_done(c, noop, n, 0);
	double queued = e2e_metrics_number(c, "jobs/queued");
	long peak = e2e_rss_kib(d.pid);
	if ((r = jsched_resume(c, NULL, false)) < 0)
		e2e_die("resume: %s", jsched_strerror(r));
	noops_until_done(c, noop, 0, done + (double)n);
	long after = e2e_rss_kib(d.pid);
	e2e_sleep_ms(1500); /* the 1 s tick's give-back, at least once */
	long later = e2e_rss_kib(d.pid);
	jsched_close(c);
	e2e_daemon_stop(&d);
	jsched_spec_free(noop);
	char name[96];
	snprintf(name, sizeof(name), "hot: resident memory after %zu queued noops drained", n);
	bench_row(e->rep, name, "KiB", "sleep, journal off", (double)after,
		  "after 20,000 noops drained (idle + retention)", (double)base);
	snprintf(name, sizeof(name), "hot: resident memory 1.5 s after %zu queued noops drained", n);
	bench_row(e->rep, name, "KiB", "sleep, journal off", (double)later,
		  "after 20,000 noops drained (idle + retention)", (double)base);
	bench_row(e->rep, "hot: resident memory per queued job (while queued)", "bytes", "sleep, journal off",
		  queued > 0 ? (double)(peak - base) * 1024.0 / queued : NAN, NULL, 0);
	bench_note(e->rep, "hot: memory: VmRSS idle %ld KiB, after 20,000 noops %ld KiB, with %.0f queued %ld KiB, "
			   "drained %ld KiB, 1.5 s later %ld KiB",
		   idle, base, queued, peak, after, later);
}

/* hot_selected: is the group `key` (rtt, pin, sparse, counts, flood, burn, eff, mem) to run?  For profiling
 * one group: BENCH_HOT_ONLY=key[,key...]; unset, all of them. */
static bool hot_selected(const char *key)
{
	const char *only = getenv("BENCH_HOT_ONLY");
	size_t len = strlen(key);

	if (!only || !*only)
		return true;
	for (const char *s = only; (s = strstr(s, key)); s += len)
		if ((s == only || s[-1] == ',') && (s[len] == ',' || s[len] == '\0'))
			return true;
	return false;
}

void e2e_hot(struct e2e *e)
{
	size_t nmax = 10000;
	double *lat = malloc(nmax * sizeof(*lat));

	if (!lat)
		e2e_die("out of memory");
	if (hot_selected("rtt")) {
		rtt_rows(e, lat, false);
		rtt_rows(e, lat, true);
	}
	if (hot_selected("pin") || hot_selected("sparse"))
		e2e_hot_placed(e, lat, hot_selected("pin"), hot_selected("sparse"));
	if (hot_selected("counts"))
		count_rows(e);
	if (hot_selected("flood"))
		flood_rows(e, lat);
	if (hot_selected("burn"))
		burner_rows(e, lat);
	if (hot_selected("eff"))
		efficiency_rows(e);
	if (hot_selected("mem"))
		memory_rows(e);
	free(lat);
}
