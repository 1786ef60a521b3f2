/* bench/e2e/fair.c: part 4, fairness under contention, read from the daemon's metrics.
 *
 * Three clients A, B, C with weights 1:2:3 (the daemon's config, "clients") keep the pool
 * saturated with spin jobs for 10 s (each submits more than the machine can run in that
 * time, up front, then the benchmark only watches):
 *   - equal jobs: every job spins 1 ms;
 *   - unequal jobs: A's jobs spin 10 ms, B's and C's 1 ms.  No cost hint is given: the
 *     fair policy is expected to split machine time by weight from what it measures.
 * Rows: each client's realized share of machine time over the daemon's fairness window
 * (the metrics' clients[].share, window = the 10 s of the measurement), beside its target
 * (weight / sum of weights), and Jain's index (fairness.jain_index) beside the
 * target of 0.98.  The note adds the share computed from the clients' succeeded counts
 * times their job length over the same 10 s, as a check of the daemon's own figure.
 *
 * Then the fair job system's published shape: 4 client processes x 10,000 jobs of 1 µs
 * spin, jobs/s with the daemon at 1 worker and at 2 (the 2-worker row's baseline is the
 * 1-worker row: the scaling).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/e2e/e2e.h"

static const char *const names[3] = {"A", "B", "C"};
static const double weights[3] = {1, 2, 3};

/* What the metrics say of the three clients. */
struct snap {
	double share[3], succeeded[3], jain;
};

static void snapshot(struct jsched_conn *obs, struct snap *s)
{
	json_t *doc = e2e_metrics_doc(obs);
	json_t *clients = json_object_get(doc, "clients"), *cl;
	size_t i;
	for (int k = 0; k < 3; k++)
		s->share[k] = s->succeeded[k] = NAN;
	json_array_foreach(clients, i, cl) {
		const char *name = json_string_value(json_object_get(cl, "name"));
		for (int k = 0; k < 3; k++)
			if (name && strcmp(name, names[k]) == 0) {
				s->share[k] = json_number_value(json_object_get(cl, "share"));
				s->succeeded[k] = json_number_value(json_object_get(cl, "succeeded"));
			}
	}
	json_t *jain = json_object_get(json_object_get(doc, "fairness"), "jain_index");
	s->jain = jain ? json_number_value(jain) : NAN;
	json_decref(doc);
}

/* One saturation run: A's jobs spin a_us, B's and C's 1,000 µs, for secs seconds. */
static void saturate(struct e2e *e, const char *label, unsigned a_us, int secs)
{
	struct e2e_daemon d;
	struct jsched_conn *c[3];
	char conf[512];
	unsigned us[3] = {a_us, 1000, 1000};

	snprintf(conf, sizeof(conf),
		 "\"workers\": %u, \"fairness\": {\"policy\": \"fair\", \"window_ms\": %d}, "
		 "\"limits\": {\"queued_jobs\": 1000000}, "
		 "\"clients\": {\"default\": {\"max_queued\": 1000000}, \"A\": {\"weight\": 1}, "
		 "\"B\": {\"weight\": 2}, \"C\": {\"weight\": 3}}",
		 e->cpus, secs * 1000);
	e2e_daemon_start(&d, conf);
	struct jsched_conn *obs = e2e_connect(&d, "observer");
	for (int k = 0; k < 3; k++) {
		struct jsched_spec *spec;
		char args[32];
		/* More than the whole machine could run of this client's jobs in secs. */
		size_t n = (size_t)secs * 1000000u * e->cpus / us[k] + 1000;
		uint64_t *ids = malloc(n * sizeof(*ids));

		snprintf(args, sizeof(args), "{\"us\": %u}", us[k]);
		if (!ids || jsched_spec_call("spin", args, &spec) < 0)
			e2e_die("out of memory");
		c[k] = e2e_connect(&d, names[k]);
		e2e_submit_pipelined(c[k], spec, n, 1000, 4, ids);
		jsched_spec_free(spec);
		free(ids);
	}
	struct snap a, b;
	snapshot(obs, &a);
	e2e_sleep_ms(secs * 1000);
	snapshot(obs, &b);

	double work[3], total = 0;
	for (int k = 0; k < 3; k++) {
		work[k] = (b.succeeded[k] - a.succeeded[k]) * us[k];
		total += work[k];
	}
	for (int k = 0; k < 3; k++) {
		char name[96], base[32];

		snprintf(name, sizeof(name), "fair: %s, share of %s (weight %g)", label, names[k], weights[k]);
		snprintf(base, sizeof(base), "target %g/6", weights[k]);
		bench_row(e->rep, name, "share", "fair", b.share[k], base, weights[k] / 6);
	}
	char name[96];
	snprintf(name, sizeof(name), "fair: %s, Jain's index", label);
	bench_row(e->rep, name, "index", "fair", b.jain, "target 0.98", 0.98);
	bench_note(e->rep, "fair: %s: shares from succeeded x job length over the %d s: A %.3f, B %.3f, C %.3f "
			   "(jobs: %.0f, %.0f, %.0f)",
		   label, secs, work[0] / total, work[1] / total, work[2] / total, b.succeeded[0] - a.succeeded[0],
		   b.succeeded[1] - a.succeeded[1], b.succeeded[2] - a.succeeded[2]);
	for (int k = 0; k < 3; k++) {
		int r = jsched_drain(c[k], NULL, true, NULL, NULL);
		if (r < 0)
			e2e_die("drain: %s", jsched_strerror(r));
		jsched_close(c[k]);
	}
	jsched_close(obs);
	e2e_daemon_stop(&d);
}

void e2e_fair(struct e2e *e)
{
	int secs = e->quick ? 2 : 10;
	size_t per = e->quick ? 2000 : 10000;
	double rate[2][64];
	struct jsched_spec *spec;

	saturate(e, "1:2:3, 1 ms jobs", 1000, secs);
	saturate(e, "1:2:3, A's jobs 10 ms", 10000, secs);

	if (jsched_spec_call("spin", "{\"us\": 1}", &spec) < 0)
		e2e_die("out of memory");
	for (unsigned w = 1; w <= 2; w++) {
		struct e2e_daemon d;
		char conf[256];

		/* Every job's record kept until the client's final wait reads it. */
		snprintf(conf, sizeof(conf),
			 "\"workers\": %u, \"limits\": {\"queued_jobs\": 1000000}, "
			 "\"clients\": {\"default\": {\"max_queued\": 1000000}}, "
			 "\"retention\": {\"jobs\": 1000000}",
			 w);
		e2e_daemon_start(&d, conf);
		for (int run = 0; run < e->runs && run < 64; run++)
			rate[w - 1][run] = e2e_clients_run(&d, spec, 4, per);
		e2e_daemon_stop(&d);
	}
	jsched_spec_free(spec);
	double one = e2e_median_of(rate[0], (size_t)e->runs);
	char name[96];
	snprintf(name, sizeof(name), "fair: 4 clients x %zu spin 1us, 1 worker", per);
	bench_row(e->rep, name, "jobs/s", "fair", one, NULL, 0);
	snprintf(name, sizeof(name), "fair: 4 clients x %zu spin 1us, 2 workers", per);
	bench_row(e->rep, name, "jobs/s", "fair", e2e_median_of(rate[1], (size_t)e->runs), "1 worker", one);
	bench_note(e->rep, "fair: saturation %d s each, one run (shares over the daemon's %d s window); "
			   "4 x %zu spin jobs: %d runs",
		   secs, secs, per, e->runs);
}
