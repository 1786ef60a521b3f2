/* daemon/net/metrics.c: building the metrics document from the live counters.
 *
 * Sources: the job table's state counts (jobs.c), the clients' counters and histograms
 * (clients.h), the fair layer's service figures and Jain's index (jd_fair_stats), the
 * pool's per-worker counters (jd_pool_stats), the server's connection counts, and the
 * runner's notice batching.  Everything is read on the loop thread, which owns all of it
 * except the fair and pool figures (those are snapshots taken under their own rules).
 */
#include "daemon/net/metrics.h"

#include <stdlib.h>

#include "daemon/daemon.h"
#include "jsched_version.h"

void jd_throughput_tick(struct jd_daemon *d, uint64_t now_ms)
{
	uint64_t sec = now_ms / 1000;

	if (d->tp_last_sec == 0 || sec > d->tp_last_sec + 64)
		d->tp_last_sec = sec > 64 ? sec - 64 : 0;
	while (d->tp_last_sec < sec) {
		d->tp_last_sec++;
		d->tp_sec[d->tp_last_sec % 64] = 0;
	}
}

/* rate: completions per second over the last `secs` whole seconds. */
static double rate(struct jd_daemon *d, unsigned secs)
{
	uint64_t sum = 0;

	for (unsigned i = 1; i <= secs; i++)
		sum += d->tp_sec[(d->tp_last_sec - i) % 64];
	return (double)sum / secs;
}

static json_t *percentiles(const struct jd_hist *h)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "p50",
			 (json_int_t)(jd_hist_percentile(h, 0.50) / 1000), "p90",
			 (json_int_t)(jd_hist_percentile(h, 0.90) / 1000), "p99",
			 (json_int_t)(jd_hist_percentile(h, 0.99) / 1000), "max",
			 (json_int_t)(h->max / 1000), "count", (json_int_t)h->count);
}

/* latencies: the three percentile sets; l NULL reads as empty. */
static json_t *latencies(const struct jd_latency *l)
{
	static const struct jd_latency none;

	if (!l)
		l = &none;
	return json_pack("{s:o, s:o, s:o}", "queue_wait", percentiles(&l->queue_wait), "run",
			 percentiles(&l->run), "end_to_end", percentiles(&l->end_to_end));
}

/* counters: the state counts of a client or of everything. */
static json_t *counters(const uint64_t *by_state, uint64_t submitted, uint64_t rejected)
{
	json_t *o = json_pack("{s:I, s:I}", "submitted", (json_int_t)submitted, "rejected",
			      (json_int_t)rejected);

	for (int s = 0; s < JD_NSTATES; s++)
		json_object_set_new(o, jd_state_name((enum jd_state)s),
				    json_integer((json_int_t)by_state[s]));
	return o;
}

static json_t *client_doc(struct jd_daemon *d, struct jd_client *c, const struct jd_fair_stats *st)
{
	struct jd_fair_client_stats cs;
	json_t *o, *q;

	jd_fair_client_stats(d->runner.fair, c->fc, st, &cs);
	q = json_object();
	for (unsigned p = 0; p < JD_FAIR_NPRIO; p++)
		json_object_set_new(q, jd_prio_name(p), json_integer((json_int_t)cs.queued_prio[p]));
	o = counters(c->by_state, c->submitted, c->rejected);
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "weight", json_integer(c->conf.weight));
	json_object_set_new(o, "max_queued", json_integer(c->conf.max_queued));
	json_object_set_new(o, "overflow", json_string(jd_overflow_name(c->conf.overflow)));
	json_object_set_new(o, "blocked", json_boolean(c->blocked));
	json_object_set_new(o, "queued", q);
	json_object_set_new(o, "dispatched", json_integer((json_int_t)cs.counters.dispatched));
	json_object_set_new(o, "service_us",
			    json_integer((json_int_t)(cs.counters.service_ns / 1000)));
	json_object_set_new(o, "service_cost", json_integer((json_int_t)cs.counters.service_cost));
	json_object_set_new(o, "share", json_real(cs.realized_share));
	json_object_set_new(o, "target_share", json_real(cs.configured_share));
	json_object_set_new(o, "latency_us", latencies(c->lat));
	return o;
}

static json_t *workers_doc(struct jd_daemon *d, json_t **fibers)
{
	struct jd_pool_stats ps;
	unsigned n = jd_pool_workers(d->runner.pool);
	struct jd_worker_stats *ws = calloc(n ? n : 1, sizeof(*ws));
	json_t *arr = json_array();

	jd_pool_stats(d->runner.pool, &ps, ws, ws ? n : 0);
	for (unsigned i = 0; ws && i < n; i++)
		json_array_append_new(
			arr, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "tasks",
				       (json_int_t)ws[i].tasks_run, "steals", (json_int_t)ws[i].steals,
				       "parks", (json_int_t)ws[i].parks, "feeds",
				       (json_int_t)ws[i].feeds, "busy_ms",
				       (json_int_t)(ws[i].busy_ns / 1000000), "fibers_in_use",
				       (json_int_t)ws[i].fibers_in_use));
	free(ws);
	*fibers = json_pack("{s:I, s:I, s:I, s:I}", "total",
			    (json_int_t)(ps.fibers + ps.large_fibers), "in_use",
			    (json_int_t)ps.fibers_in_use, "suspended",
			    (json_int_t)ps.fibers_suspended, "exhausted",
			    (json_int_t)ps.fiber_exhausted);
	return arr;
}

json_t *jd_metrics(struct jd_daemon *d)
{
	struct jd_fair_stats st;
	uint64_t now_ms = jd_now_ms();
	json_t *doc, *clients = json_array(), *fibers = NULL, *workers, *jobs;

	jd_throughput_tick(d, now_ms);
	jd_fair_stats(d->runner.fair, JD_FAIR_METRIC_POLICY, &st);
	for (struct jd_client *c = d->clients.head; c; c = c->next)
		json_array_append_new(clients, client_doc(d, c, &st));
	workers = workers_doc(d, &fibers);
	jobs = counters(d->jobs.by_state, d->jobs.submitted, d->jobs.rejected);
	json_object_set_new(jobs, "forgotten", json_integer((json_int_t)d->jobs.forgotten));
	json_object_set_new(jobs, "retained", json_integer((json_int_t)d->jobs.n_retained));
	doc = json_pack(
		"{s:s, s:s, s:I, s:o, s:{s:f, s:f, s:f}, s:o, s:o, s:{s:s, s:s, s:f, s:I, s:I, s:I},"
		" s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I}}",
		"version", JSCHED_VERSION_LINE, "instance", d->instance, "uptime_ms",
		(json_int_t)(jd_now_ns() - d->start_ns) / 1000000, "jobs", jobs, "throughput", "1s",
		rate(d, 1), "10s", rate(d, 10), "60s", rate(d, 60), "latency_us",
		latencies(&d->lat), "clients", clients, "fairness",
		"policy", jd_fair_policy_name(st.policy), "metric",
		st.metric == JD_FAIR_METRIC_TIME   ? "time"
		: st.metric == JD_FAIR_METRIC_COST ? "cost"
						   : "jobs",
		"jain_index", st.jain, "window_ms", (json_int_t)d->cfg.fair_window_ms, "backlogged",
		(json_int_t)st.backlogged, "window_clients", (json_int_t)st.window_clients,
		"workers", workers, "fibers", fibers, "connections", "open",
		(json_int_t)d->srv.n_conns, "watching", (json_int_t)d->watch.n_watchers,
		"total_accepted", (json_int_t)d->srv.accepted, "closed_over_limit",
		(json_int_t)d->srv.disconnected_limit, "refused", (json_int_t)d->srv.refused,
		"notices", "wakeups",
		(json_int_t)atomic_load_explicit(&d->runner.wakeups, memory_order_relaxed), "batches",
		(json_int_t)d->runner.batches, "notices", (json_int_t)d->runner.noticed);
	if (doc) {
		json_object_set_new(doc, "exec", jd_exec_metrics(d));
		json_object_set_new(doc, "security", jd_security_metrics(d));
		json_object_set_new(doc, "config",
				    json_pack("{s:s, s:I, s:I}", "path", d->config_path, "reloads",
					      (json_int_t)d->reloads, "reload_failures",
					      (json_int_t)d->reload_failures));
	}
	return doc;
}
