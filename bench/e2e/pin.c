/* bench/e2e/pin.c: part 8's one-request round trip by where its two sides run, and what
 * the daemon's poll after a request ("loop_poll_us") costs when requests are sparse.
 *
 *   1. placement (BENCH_HOT_ONLY=pin): in each run, three placements one after the
 *      other, each with its own floor measured the same way: not pinned; pinned, both
 *      sides on CPU 0 (the ping-pong's two peers; this client and the daemon's loop
 *      thread; this client and the minimal server); pinned, each side on its own CPU
 *      (this process on CPU 0, the other on CPU 1).  The daemon's workers are never
 *      pinned (a noop runs on the loop thread).  Per placement: the ping-pong's p50, the
 *      one-request noop round trip's (jsched_submit_wait) and the minimal server's, the
 *      ratio to the ping-pong taken per run, the median of the runs and the worst run
 *      (the target holds "in every run"); BENCH_HOT_POLL_US=N runs its daemon with
 *      loop_poll_us N.  The placements matter on a virtual machine
 *      whose idle vCPU halts: a message to a peer asleep on another vCPU costs the
 *      host's wake-up of that vCPU, one to a peer on the same CPU a context switch.
 *   2. sparse requests (BENCH_HOT_ONLY=sparse): one request every 100 µs, 1 ms and
 *      10 ms (a nanosleep between them on the client), against a daemon with
 *      loop_poll_us 0 (the default) and one with 50 (or BENCH_HOT_POLL_US's), one run
 *      of each alternated per gap: the daemon's CPU per request (schedstat, every
 *      thread) and its share of one CPU over the run, beside the daemon that does not
 *      poll.  The poll's cost is the difference.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

enum { PLACES = 3 };
static const char *const place_name[PLACES] = {"not pinned", "pinned, both sides on one CPU",
					       "pinned, each side on its own CPU"};

/* poll_member: ", \"loop_poll_us\": N" from BENCH_HOT_POLL_US (the setting to try), else
 * from otherwise (NULL: "", the build's default). */
static const char *poll_member(char *buf, size_t size, const char *otherwise)
{
	const char *v = getenv("BENCH_HOT_POLL_US");

	if (!v || !*v)
		v = otherwise;
	buf[0] = '\0';
	if (v && *v)
		snprintf(buf, size, ", \"loop_poll_us\": %s", v);
	return buf;
}

/* pin: keep thread tid (0: this one) on CPU cpu, or on every online CPU when cpu < 0. */
static void pin(pid_t tid, int cpu, unsigned cpus)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (unsigned i = 0; i < cpus; i++)
		if (cpu < 0 || (unsigned)cpu == i)
			CPU_SET(i, &set);
	if (sched_setaffinity(tid, sizeof(set), &set) < 0)
		e2e_die("sched_setaffinity(%d, CPU %d): %m", (int)tid, cpu);
}

/* place: put this process and the other side (peer) where placement p says. */
static void place(int p, pid_t peer, unsigned cpus)
{
	pin(0, p == 0 ? -1 : 0, cpus);
	pin(peer, p == 0 ? -1 : p == 1 ? 0 : 1, cpus);
}

static double worst_of(const double *r, int n, int *at)
{
	double w = 0;

	for (int i = 0; i < n; i++)
		if (r[i] > w) {
			w = r[i];
			*at = i;
		}
	return w;
}

static void ratios(char *buf, size_t size, const double *r, int n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%.2fx", i ? ", " : "", r[i]);
}

static void pin_rows(struct e2e *e, double *lat)
{
	size_t n = e->quick ? 500 : 10000;
	int runs = e->runs < 32 ? e->runs : 32;
	double f50[PLACES][32], w50[PLACES][32], m50[PLACES][32], wr[PLACES][32], mr[PLACES][32];
	double hits[PLACES] = {0}; /* requests read in a poll window (metrics loop.poll.hits) */
	struct jsched_spec *spec;
	struct e2e_daemon d;
	char conf[512], pol[96], per[256], per2[256], name[192], pm[64];

	if (e->cpus < 2) {
		bench_note(e->rep, "hot: MISSING: the placement rows (one CPU: nothing to place)");
		return;
	}
	if (jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	snprintf(conf, sizeof(conf), "\"workers\": %u, \"idle_policy\": \"sleep\"%s", e->cpus,
		 poll_member(pm, sizeof(pm), NULL));
	e2e_daemon_start(&d, conf);
	struct jsched_conn *c = e2e_connect(&d, "hot");
	if (!e2e_rtt_submit_wait(c, spec, n / 10, NULL)) {
		bench_note(e->rep, "hot: MISSING: the placement rows (this jschedd has no wait flag on submit)");
		goto out;
	}
	double us = e2e_metrics_number(c, "loop/poll/us");
	if (isnan(us))
		snprintf(pol, sizeof(pol), "sleep, journal off");
	else
		snprintf(pol, sizeof(pol), "sleep, journal off, loop_poll_us %.0f", us);
	for (int run = 0; run < runs; run++)
		for (int p = 0; p < PLACES; p++) {
			pid_t peer, mp;
			int fd = e2e_echo_start(&peer);
			struct jsched_conn *mc;

			place(p, peer, e->cpus);
			e2e_pingpong(fd, n / 10, NULL);
			e2e_pingpong(fd, n, lat);
			f50[p][run] = e2e_percentile(lat, n, 0.50);
			e2e_echo_stop(fd, peer);

			place(p, d.pid, e->cpus); /* the daemon's main thread is its loop thread */
			e2e_rtt_submit_wait(c, spec, n / 10, NULL);
			double h0 = e2e_metrics_number(c, "loop/poll/hits");
			e2e_rtt_submit_wait(c, spec, n, lat);
			hits[p] += e2e_metrics_number(c, "loop/poll/hits") - h0;
			w50[p][run] = e2e_percentile(lat, n, 0.50);
			pin(d.pid, -1, e->cpus);

			int mfd = e2e_minimal_start(jsched_hello_json(c), &mp);
			if (jsched_connect_fd(mfd, "hot", &mc) < 0)
				e2e_die("the minimal server's hello failed");
			place(p, mp, e->cpus);
			e2e_rtt_submit_wait(mc, spec, n / 10, NULL);
			e2e_rtt_submit_wait(mc, spec, n, lat);
			m50[p][run] = e2e_percentile(lat, n, 0.50);
			jsched_close(mc);
			e2e_wait_ok(mp, "minimal server");
			wr[p][run] = w50[p][run] / f50[p][run];
			mr[p][run] = m50[p][run] / f50[p][run];
		}
	pin(0, -1, e->cpus);
	size_t k = (size_t)runs;
	for (int p = 0; p < PLACES; p++) {
		int at = 0;
		double worst = worst_of(wr[p], runs, &at);
		char base[96];

		snprintf(base, sizeof(base), "unix ping-pong p50, %s, same runs", place_name[p]);
		snprintf(name, sizeof(name), "hot: noop submit with wait (one request), p50, %s", place_name[p]);
		bench_row(e->rep, name, "us", pol, e2e_median_of(w50[p], k), base, e2e_median_of(f50[p], k));
		snprintf(name, sizeof(name), "hot: noop submit with wait (one request), p50, %s, the worst run",
			 place_name[p]);
		bench_row(e->rep, name, "us", pol, w50[p][at], "unix ping-pong p50 of that run", f50[p][at]);
		snprintf(name, sizeof(name), "hot: noop submit with wait against a minimal server, p50, %s",
			 place_name[p]);
		bench_row(e->rep, name, "us", pol, e2e_median_of(m50[p], k), base, e2e_median_of(f50[p], k));
		ratios(per, sizeof(per), wr[p], runs);
		ratios(per2, sizeof(per2), mr[p], runs);
		bench_note(e->rep, "hot: one-request round trip, %s: %zu per run, %d runs; p50 ratio to the ping-pong "
				   "per run %s (worst %.2fx); the minimal server's %s; requests read in the loop's poll "
				   "window %.3f per round trip",
			   place_name[p], n, runs, per, worst, per2, hits[p] / ((double)n * (double)runs));
	}
out:
	jsched_close(c);
	e2e_daemon_stop(&d);
	jsched_spec_free(spec);
}

/* sparse_run: n requests, one every gap_us, on c; the daemon's CPU per request (us) and
 * its share of one CPU over the run. */
static void sparse_run(struct jsched_conn *c, pid_t pid, const struct jsched_spec *spec, size_t n, long gap_us,
		       double *cpu_us, double *share)
{
	double r0 = 0, q0 = 0, r1 = 0, q1 = 0;

	if (!e2e_sched(pid, &r0, &q0))
		r0 = NAN;
	uint64_t t0 = bench_now_ns();
	for (size_t i = 0; i < n; i++) {
		struct timespec gap = {.tv_sec = gap_us / 1000000, .tv_nsec = (gap_us % 1000000) * 1000L};

		e2e_rtt_submit_wait(c, spec, 1, NULL);
		nanosleep(&gap, NULL);
	}
	double wall = (double)(bench_now_ns() - t0);
	if (!e2e_sched(pid, &r1, &q1))
		r1 = NAN;
	*cpu_us = (r1 - r0) / 1e3 / (double)n;
	*share = (r1 - r0) / wall;
}

static void sparse_rows(struct e2e *e)
{
	static const long gaps[] = {100, 1000, 10000};
	struct e2e_daemon d[2];
	struct jsched_conn *c[2];
	struct jsched_spec *spec;
	char conf[512], pm[64];
	double us = NAN;
	const char *extra = getenv("BENCH_E2E_CONF");

	if (jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	if (extra && strstr(extra, "loop_poll_us"))
		e2e_die("the sparse rows set loop_poll_us themselves: use BENCH_HOT_POLL_US, not BENCH_E2E_CONF");
	/* d[0]: a poll of 50 µs (or BENCH_HOT_POLL_US's); d[1]: no poll. */
	snprintf(conf, sizeof(conf), "\"workers\": %u, \"idle_policy\": \"sleep\"%s", e->cpus,
		 poll_member(pm, sizeof(pm), "50"));
	e2e_daemon_start(&d[0], conf);
	c[0] = e2e_connect(&d[0], "hot");
	us = e2e_metrics_number(c[0], "loop/poll/us");
	if (isnan(us) || !e2e_rtt_submit_wait(c[0], spec, 100, NULL)) {
		bench_note(e->rep, "hot: MISSING: the sparse rows (this jschedd has no loop_poll_us or no wait flag)");
		jsched_close(c[0]);
		e2e_daemon_stop(&d[0]);
		jsched_spec_free(spec);
		return;
	}
	snprintf(conf, sizeof(conf), "\"workers\": %u, \"idle_policy\": \"sleep\", \"loop_poll_us\": 0", e->cpus);
	e2e_daemon_start(&d[1], conf);
	c[1] = e2e_connect(&d[1], "hot");
	e2e_rtt_submit_wait(c[1], spec, 100, NULL);
	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		/* about 0.3 s of requests per run at each gap (--quick: a tenth) */
		size_t n = gaps[g] == 100 ? 2000 : gaps[g] == 1000 ? 300 : 30;
		double cpu[2][3], share[2][3];
		int runs = e->runs_long < 3 ? e->runs_long : 3;
		char name[160], pol[96], base[96];

		if (e->quick)
			n = n / 10 > 3 ? n / 10 : 3;
		for (int run = 0; run < runs; run++)
			for (int k = 0; k < 2; k++)
				sparse_run(c[k], d[k].pid, spec, n, gaps[g], &cpu[k][run], &share[k][run]);
		snprintf(name, sizeof(name), "hot: daemon CPU per request, one request every %ld us", gaps[g]);
		snprintf(pol, sizeof(pol), "sleep, journal off, loop_poll_us %.0f", us);
		snprintf(base, sizeof(base), "the same, loop_poll_us 0, same runs");
		bench_row(e->rep, name, "us", pol, e2e_median_of(cpu[0], (size_t)runs), base,
			  e2e_median_of(cpu[1], (size_t)runs));
		snprintf(name, sizeof(name), "hot: daemon's share of one CPU, one request every %ld us", gaps[g]);
		bench_row(e->rep, name, "share", pol, e2e_median_of(share[0], (size_t)runs), base,
			  e2e_median_of(share[1], (size_t)runs));
		bench_note(e->rep, "hot: sparse requests every %ld us (a nanosleep after each reply): %zu per run, %d "
				   "runs alternated between the two daemons",
			   gaps[g], n, runs);
	}
	for (int k = 0; k < 2; k++) {
		jsched_close(c[k]);
		e2e_daemon_stop(&d[k]);
	}
	jsched_spec_free(spec);
}

void e2e_hot_placed(struct e2e *e, double *lat, bool placement, bool sparse)
{
	if (placement)
		pin_rows(e, lat);
	if (sparse)
		sparse_rows(e);
}
