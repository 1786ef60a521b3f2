/* bench/e2e/scale.c: part 5, scale: 1,000 connected clients and 100,000 queued jobs.
 *
 * The daemon's limits are raised in its config (connections, queued jobs per client and in
 * all).  To keep 100,000 jobs *queued* (not run as fast as they come), the workers are first
 * occupied: one spin job per worker, long enough to cover the filling and the measuring
 * (6 s; 3 s with --quick), confirmed running from the metrics; and every client is paused
 * (the loop thread runs noops itself, so busy workers alone no longer keep them queued),
 * until the drain.  Then:
 *
 *   1. resident memory: VmRSS of the daemon (/proc/PID/status) after the 1,000 hellos and
 *      after every client has submitted one batch of 100 noop jobs; the difference over
 *      the jobs queued (metrics jobs.queued) is the memory per queued job, beside the
 *      target of 1 KiB.  The first difference, over the connections, is reported
 *      too (per connection).
 *   2. submit latency at that depth: 200 single submits (jsched_submit, one round trip
 *      each) from one of the clients, p50 / p99, beside the same measured before the
 *      100,000 were queued (same spinning workers, empty queue, after 200 unmeasured
 *      submits), so that the ratio is the cost of depth alone.
 *   3. time to drain: from the moment the spin jobs end (a wait on them returns; then the
 *      clients are resumed) until a
 *      client has learned that every queued job ended (wait requests of 1,000 ids); in
 *      jobs/s beside part 2's batch throughput of the same run when part 2 ran, else alone.
 * One run per --runs (at most 3): each takes about 10 s.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/e2e/e2e.h"

enum { PER_CLIENT = 100, LAT_N = 200 };

struct scale_run {
	double conn_kib, job_bytes, queued, lat0_50, lat0_99, lat_50, lat_99, drain_s, drain_rate;
	bool blocked; /* the workers were still busy when the depth was measured */
};

static void submit_latency(struct jsched_conn *c, const struct jsched_spec *spec, uint64_t *ids, double *p50,
			   double *p99)
{
	double lat[LAT_N];

	for (int i = 0; i < LAT_N; i++) {
		uint64_t t0 = bench_now_ns();
		int r = jsched_submit(c, spec, &ids[i]);

		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
		if (r < 0)
			e2e_die("submit at depth: %s (%s)", jsched_strerror(r), jsched_error_message(c));
	}
	*p50 = e2e_percentile(lat, LAT_N, 0.50);
	*p99 = e2e_percentile(lat, LAT_N, 0.99);
}

static void scale_once(struct e2e *e, struct scale_run *out)
{
	size_t nclients = e->quick ? 100 : 1000;
	unsigned block_us = e->quick ? 3000000 : 6000000;
	size_t njobs = nclients * PER_CLIENT + 3 * LAT_N;
	struct jsched_conn **c = calloc(nclients, sizeof(*c));
	uint64_t *ids = malloc(njobs * sizeof(*ids)), blockers[64];
	struct jsched_spec *noop, *spin, *specs[PER_CLIENT];
	struct e2e_daemon d;
	char conf[512], args[32];

	if (!c || !ids || jsched_spec_call("noop", NULL, &noop) < 0)
		e2e_die("out of memory");
	snprintf(args, sizeof(args), "{\"us\": %u}", block_us);
	if (jsched_spec_call("spin", args, &spin) < 0)
		e2e_die("out of memory");
	snprintf(conf, sizeof(conf),
		 "\"workers\": %u, \"limits\": {\"connections\": 5000, \"connections_per_uid\": 5000, "
		 "\"queued_jobs\": 10000000}, \"clients\": {\"default\": {\"max_queued\": 1000000}}, "
		 "\"retention\": {\"jobs\": 1000000}",
		 e->cpus);
	e2e_daemon_start(&d, conf);
	struct jsched_conn *ctl = e2e_connect(&d, "blocker");
	long rss0 = e2e_rss_kib(d.pid);
	for (size_t i = 0; i < nclients; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%zu", i);
		c[i] = e2e_connect(&d, name);
	}
	long rss1 = e2e_rss_kib(d.pid);
	out->conn_kib = (double)(rss1 - rss0) / (double)nclients;

	/* Occupy every worker, and see them all running. */
	for (unsigned w = 0; w < e->cpus && w < 64; w++)
		if (jsched_submit(ctl, spin, &blockers[w]) < 0)
			e2e_die("submit spin: %s", jsched_error_message(ctl));
	for (int i = 0; i < 1000 && e2e_metrics_number(ctl, "jobs/running") < e->cpus; i++)
		e2e_sleep_ms(2);
	/* And pause every client: the loop thread runs noops itself (inline handlers),
	 * busy workers or not, so only a pause keeps them queued. */
	if (jsched_pause(ctl, NULL, true) < 0)
		e2e_die("pause all: %s", jsched_error_message(ctl));

	/* A first round unmeasured: the first submits after the spin jobs started met the
	 * workers' start-up and gave a p99 of a millisecond in a trial run. */
	size_t at = 0;
	double ignored;
	submit_latency(c[0], noop, ids + at, &ignored, &ignored);
	at += LAT_N;
	submit_latency(c[0], noop, ids + at, &out->lat0_50, &out->lat0_99);
	at += LAT_N;
	for (size_t k = 0; k < PER_CLIENT; k++)
		specs[k] = noop;
	for (size_t i = 0; i < nclients; i++) {
		int r = jsched_submit_batch(c[i], (const struct jsched_spec *const *)specs, PER_CLIENT, ids + at);
		if (r < 0)
			e2e_die("submit batch: %s (%s)", jsched_strerror(r), jsched_error_message(c[i]));
		at += PER_CLIENT;
	}
	out->queued = e2e_metrics_number(ctl, "jobs/queued");
	long rss2 = e2e_rss_kib(d.pid);
	out->job_bytes = (double)(rss2 - rss1) * 1024.0 / out->queued;
	submit_latency(c[0], noop, ids + at, &out->lat_50, &out->lat_99);
	at += LAT_N;
	out->blocked = e2e_metrics_number(ctl, "jobs/running") >= e->cpus;

	/* Drain: from the end of the spin jobs to the last queued job known to have ended. */
	struct jsched_results *res = NULL;
	int r = jsched_wait_many(ctl, blockers, e->cpus, JSCHED_WAIT_ALL, 60000, &res);
	if (r < 0)
		e2e_die("wait for the spin jobs: %s", jsched_strerror(r));
	jsched_results_free(res);
	uint64_t t0 = bench_now_ns();
	if (jsched_resume(ctl, NULL, true) < 0)
		e2e_die("resume all: %s", jsched_error_message(ctl));
	e2e_wait_ids(ctl, ids, at);
	out->drain_s = (double)(bench_now_ns() - t0) / 1e9;
	out->drain_rate = (double)at / out->drain_s;

	for (size_t i = 0; i < nclients; i++)
		jsched_close(c[i]);
	jsched_close(ctl);
	e2e_daemon_stop(&d);
	jsched_spec_free(noop);
	jsched_spec_free(spin);
	free(ids);
	free(c);
}

void e2e_scale(struct e2e *e)
{
	struct scale_run runs[3];
	double v[9][3];
	int n = e->runs_long, blocked = 0;

	for (int i = 0; i < n; i++) {
		scale_once(e, &runs[i]);
		v[0][i] = runs[i].job_bytes;
		v[1][i] = runs[i].conn_kib;
		v[2][i] = runs[i].lat_50;
		v[3][i] = runs[i].lat0_50;
		v[4][i] = runs[i].lat_99;
		v[5][i] = runs[i].lat0_99;
		v[6][i] = runs[i].drain_s;
		v[7][i] = runs[i].drain_rate;
		v[8][i] = runs[i].queued;
		blocked += !runs[i].blocked;
	}
	size_t k = (size_t)n;
	bench_row(e->rep, "scale: resident memory per queued job", "bytes", NULL, e2e_median_of(v[0], k),
		  "target 1 KiB", 1024);
	bench_row(e->rep, "scale: resident memory per connected client", "KiB", NULL, e2e_median_of(v[1], k),
		  NULL, 0);
	bench_row(e->rep, "scale: submit latency at depth, p50", "us", NULL, e2e_median_of(v[2], k),
		  "same, empty queue", e2e_median_of(v[3], k));
	bench_row(e->rep, "scale: submit latency at depth, p99", "us", NULL, e2e_median_of(v[4], k),
		  "same, empty queue", e2e_median_of(v[5], k));
	bench_row(e->rep, "scale: time to drain the queue", "s", NULL, e2e_median_of(v[6], k), NULL, 0);
	bench_row(e->rep, "scale: drain rate", "jobs/s", NULL, e2e_median_of(v[7], k),
		  e->tput_batch > 0 ? "tput: 1 client, batches" : NULL, e->tput_batch);
	bench_note(e->rep, "scale: %s clients x %d noop jobs (%.0f queued at the measurement), %u workers held "
			   "by spin jobs meanwhile; %d runs%s",
		   e->quick ? "100" : "1000", PER_CLIENT, e2e_median_of(v[8], k), e->cpus, n,
		   blocked ? "; WARNING: the spin jobs ended before the depth was measured" : "");
}
