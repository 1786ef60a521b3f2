/* daemon/net/metrics.c: building the metrics document from the live counters.
 *
 * Sources: the job table's state counts (jobs.c), the clients' counters and histograms
 * (clients.h), the fair layer's service figures and Jain's index (jd_fair_stats), the
 * pool's per-worker counters (jd_pool_stats), the server's connection counts, and the
 * runner's notice batching.  Everything is read on the loop thread, which owns all of it
 * except the fair and pool figures (those are snapshots taken under their own rules).
 */
#include "daemon/run/backend.h"
#include "daemon/net/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/net/prom_export.h"
#include "daemon/net/prometheus.h"
#include "daemon/core/log.h"
#include "jsched_version.h"

void jd_throughput_tick(struct jd_net *d, uint64_t now_ms)
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
static double rate(struct jd_net *d, unsigned secs)
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

static const struct jd_latency no_latency;

/* latencies: the three percentile sets; l NULL reads as empty. */
static json_t *latencies(const struct jd_latency *l)
{
	if (!l)
		l = &no_latency;
	return json_pack("{s:o, s:o, s:o}", "queue_wait", percentiles(&l->queue_wait), "run",
			 percentiles(&l->run), "end_to_end", percentiles(&l->end_to_end));
}

/* windowed: the three percentile sets over window `win` as of mono_ms, and in *rate the
 * jobs finished per second over the time it covers; l NULL reads as empty. */
static json_t *windowed(const struct jd_latency *l, enum jd_window win, uint64_t mono_ms,
			double *rate_out)
{
	static struct jd_hist h; /* 7.8 KiB, merged into one at a time (loop thread) */
	json_t *qw, *run, *e2e;
	uint64_t covered;

	if (!l)
		l = &no_latency;
	jd_whist_read(&l->w_queue_wait, mono_ms, win, &h);
	qw = percentiles(&h);
	jd_whist_read(&l->w_run, mono_ms, win, &h);
	run = percentiles(&h);
	covered = jd_whist_read(&l->w_end_to_end, mono_ms, win, &h);
	e2e = percentiles(&h);
	*rate_out = (double)h.count * 1000.0 / (double)covered;
	return json_pack("{s:o, s:o, s:o}", "queue_wait", qw, "run", run, "end_to_end", e2e);
}

/* add_windows: latency_us_1m, latency_us_5m and throughput {"1m", "5m"} into o. */
static void add_windows(json_t *o, const struct jd_latency *l, uint64_t mono_ms)
{
	double r1 = 0, r5 = 0;

	json_object_set_new(o, "latency_us_1m", windowed(l, JD_WINDOW_1M, mono_ms, &r1));
	json_object_set_new(o, "latency_us_5m", windowed(l, JD_WINDOW_5M, mono_ms, &r5));
	json_object_set_new(o, "throughput_windows", json_pack("{s:f, s:f}", "1m", r1, "5m", r5));
}

/* The Prometheus buckets' edges: 2^k - 1 ns for k = 10 .. 38 (1.02 us .. 275 s), each the
 * top of a log-linear bucket, so the count at or below an edge is exact. */
#define EDGE_FIRST 10
#define EDGE_LAST 38

/* hist_counts: {"counts": [cumulative count at each edge], "count", "sum_ns"}. */
static json_t *hist_counts(const struct jd_hist *h)
{
	json_t *counts = json_array();
	uint64_t seen = 0;
	unsigned b = 0;

	for (unsigned k = EDGE_FIRST; k <= EDGE_LAST; k++) {
		unsigned top = jd_hist_bucket((1ull << k) - 1);

		for (; b <= top; b++)
			seen += h->bucket[b];
		json_array_append_new(counts, json_integer((json_int_t)seen));
	}
	return json_pack("{s:o, s:I, s:I}", "counts", counts, "count", (json_int_t)h->count,
			 "sum_ns", (json_int_t)h->sum);
}

static json_t *lat_counts(const struct jd_latency *l)
{
	if (!l)
		l = &no_latency;
	return json_pack("{s:o, s:o, s:o}", "queue_wait", hist_counts(&l->queue_wait), "run",
			 hist_counts(&l->run), "end_to_end", hist_counts(&l->end_to_end));
}

/* histograms_doc: the lifetime histograms' counts at the edges, in all and per client. */
static json_t *histograms_doc(struct jd_net *d)
{
	json_t *edges = json_array(), *clients = json_object();

	for (unsigned k = EDGE_FIRST; k <= EDGE_LAST; k++)
		json_array_append_new(edges, json_integer((json_int_t)((1ull << k) - 1)));
	for (struct jd_client *c = d->clients->head; c; c = c->next)
		json_object_set_new(clients, c->name, lat_counts(c->lat));
	return json_pack("{s:o, s:o, s:o}", "edges_ns", edges, "all", lat_counts(&d->lat),
			 "clients", clients);
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

static json_t *client_doc(struct jd_net *d, struct jd_client *c, const struct jd_fair_stats *st)
{
	struct jd_fair_client_stats cs;
	json_t *o, *q;

	jd_fair_client_stats(d->runner->fair, c->fc, st, &cs);
	q = json_object();
	for (unsigned p = 0; p < JD_FAIR_NPRIO; p++)
		json_object_set_new(q, jd_prio_name(p), json_integer((json_int_t)cs.queued_prio[p]));
	o = counters(c->by_state, c->submitted, c->rejected);
	json_object_set_new(o, "retained", json_integer((json_int_t)c->n_retained));
	json_object_set_new(o, "retained_bytes", json_integer((json_int_t)c->retained_bytes));
	json_object_set_new(o, "queued_bytes", json_integer((json_int_t)c->live_bytes));
	json_object_set_new(o, "forgotten", json_integer((json_int_t)c->forgotten));
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "weight", json_integer(c->conf.weight));
	json_object_set_new(o, "max_queued", json_integer(c->conf.max_queued));
	json_object_set_new(o, "overflow", json_string(jd_overflow_name(c->conf.overflow)));
	json_object_set_new(o, "max_running", json_integer(c->conf.max_running));
	json_object_set_new(o, "max_processes", json_integer(c->conf.max_processes));
	json_object_set_new(o, "blocked", json_boolean(c->blocked));
	json_object_set_new(o, "paused", json_boolean(cs.paused));
	json_object_set_new(o, "at_limit", json_boolean(cs.at_limit));
	json_object_set_new(o, "held", json_integer((json_int_t)cs.held));
	json_object_set_new(o, "queued", q);
	json_object_set_new(o, "dispatched", json_integer((json_int_t)cs.counters.dispatched));
	json_object_set_new(o, "service_us",
			    json_integer((json_int_t)(cs.counters.service_ns / 1000)));
	json_object_set_new(o, "service_cost", json_integer((json_int_t)cs.counters.service_cost));
	json_object_set_new(o, "share", json_real(cs.realized_share));
	json_object_set_new(o, "target_share", json_real(cs.configured_share));
	json_object_set_new(o, "latency_us", latencies(c->lat));
	add_windows(o, c->lat, jd_now_ns() / 1000000);
	return o;
}

static json_t *workers_doc(struct jd_net *d, json_t **fibers)
{
	struct jd_pool_stats ps;
	unsigned n = jd_pool_workers(d->runner->pool);
	struct jd_worker_stats *ws = calloc(n ? n : 1, sizeof(*ws));
	json_t *arr = json_array();

	jd_pool_stats(d->runner->pool, &ps, ws, ws ? n : 0);
	for (unsigned i = 0; ws && i < n; i++)
		json_array_append_new(
			arr, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "tasks",
				       (json_int_t)ws[i].tasks_run, "steals", (json_int_t)ws[i].steals,
				       "parks", (json_int_t)ws[i].parks, "feeds",
				       (json_int_t)ws[i].feeds, "busy_ms",
				       (json_int_t)(ws[i].busy_ns / 1000000), "fibers_in_use",
				       (json_int_t)ws[i].fibers_in_use));
	free(ws);
	/* total: the standard fibers jobs run on (the "fibers" setting); the large-stack
	 * ones are the pool's own, for tasks that ask for a large stack. */
	*fibers = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "total", (json_int_t)ps.fibers,
			    "large", (json_int_t)ps.large_fibers, "in_use",
			    (json_int_t)ps.fibers_in_use, "suspended",
			    (json_int_t)ps.fibers_suspended, "exhausted",
			    (json_int_t)ps.fiber_exhausted, "reserved",
			    (json_int_t)d->runner->fibers_reserved);
	return arr;
}

void jd_metrics_job_ended(struct jd_net *d, const struct jd_job *j)
{
	struct jd_client *c = j->client;
	uint64_t qw = 0, run = 0, e2e = j->finished_ns - j->submitted_ns;
	uint64_t mono_ms = j->finished_ns / 1000000; /* the windows' clock: monotonic */

	/* A client's lifetime histograms cost 23 KiB (its windows what they hold): only
	 * clients that run jobs pay for them. */
	if (!c->lat)
		c->lat = calloc(1, sizeof(*c->lat));
	if (j->started_ns && j->run) {
		/* Run time as the worker measured it (the loop thread may learn of the end a
		 * little later, with its batch); the other two end when the client can know. */
		uint64_t end = j->run->run_finished_ns ? j->run->run_finished_ns : j->finished_ns;

		qw = j->started_ns - (j->run->queued_ns ? j->run->queued_ns : j->submitted_ns);
		run = end > j->started_ns ? end - j->started_ns : 0;
	}
	jd_latency_record_pair(&d->lat, c->lat, mono_ms, j->started_ns != 0, qw, run, e2e);
	jd_throughput_tick(d, j->finished_ms);
	d->tp_sec[(j->finished_ms / 1000) % 64]++;
}

void jd_metrics_tick(struct jd_net *d)
{
	uint64_t mono_ms = jd_now_ns() / 1000000;

	jd_latency_trim(&d->lat, mono_ms);
	for (struct jd_client *c = d->clients->head; c; c = c->next)
		if (c->lat)
			jd_latency_trim(c->lat, mono_ms);
}

/* exports_doc: where the Prometheus text goes besides the metrics operation. */
static json_t *exports_doc(struct jd_net *d)
{
	uint64_t scrapes = 0, failed = 0;

	if (d->prom_http)
		jd_prom_http_counts(d->prom_http, &scrapes, &failed);
	return json_pack("{s:s, s:I, s:I, s:I, s:s, s:s}", "listen", d->cfg->metrics_listen,
			 "port", (json_int_t)(d->prom_http ? jd_prom_http_port(d->prom_http) : 0),
			 "scrapes", (json_int_t)scrapes, "scrapes_failed", (json_int_t)failed,
			 "textfile", d->cfg->metrics_textfile, "textfile_error", d->prom_file_err);
}

/* timers_doc: the timer heap: its entries, the next one's time, the timer's wake-ups,
 * and whether the test clock is on. */
static json_t *timers_doc(const struct jd_jobs *t)
{
	const struct jd_timed *top = jd_timeheap_top(&t->timers);

	return json_pack("{s:I, s:I, s:I, s:b}", "entries", (json_int_t)t->timers.n, "next_ms",
			 (json_int_t)(top ? top->due_ms : 0), "wakeups", (json_int_t)t->timer_wakeups,
			 "test_clock", jd_clock_test_on());
}

json_t *jd_metrics(struct jd_net *d, unsigned flags)
{
	struct jd_fair_stats st;
	uint64_t now_ms = jd_now_ms();
	json_t *doc, *clients = json_array(), *fibers = NULL, *workers, *jobs;

	jd_throughput_tick(d, now_ms);
	jd_fair_stats(d->runner->fair, JD_FAIR_METRIC_POLICY, &st);
	for (struct jd_client *c = d->clients->head; c; c = c->next)
		json_array_append_new(clients, client_doc(d, c, &st));
	workers = workers_doc(d, &fibers);
	jobs = counters(d->jobs->by_state, d->jobs->submitted, d->jobs->rejected);
	json_object_set_new(jobs, "forgotten", json_integer((json_int_t)d->jobs->forgotten));
	json_object_set_new(jobs, "retained", json_integer((json_int_t)d->jobs->n_retained));
	json_object_set_new(jobs, "retained_bytes", json_integer((json_int_t)d->jobs->retained_bytes));
	json_object_set_new(jobs, "queued_bytes", json_integer((json_int_t)d->jobs->live_bytes));
	json_object_set_new(jobs, "walked", json_integer((json_int_t)d->jobs->walked));
	json_object_set_new(jobs, "index_buckets", json_integer((json_int_t)d->jobs->n_buckets));
	json_object_set_new(jobs, "index_shrinks", json_integer((json_int_t)d->jobs->shrinks));
	json_object_set_new(jobs, "forgotten_by",
			    json_pack("{s:I, s:I, s:I}", "age",
				      (json_int_t)d->jobs->forgotten_by[JD_FORGET_AGE], "jobs",
				      (json_int_t)d->jobs->forgotten_by[JD_FORGET_JOBS], "bytes",
				      (json_int_t)d->jobs->forgotten_by[JD_FORGET_BYTES]));
	json_object_set_new(jobs, "retention",
			    json_pack("{s:I, s:I, s:I}", "jobs", (json_int_t)d->cfg->retain_jobs,
				      "bytes", (json_int_t)d->cfg->retain_bytes, "seconds",
				      (json_int_t)d->cfg->retain_seconds));
	doc = json_pack(
		"{s:s, s:s, s:I, s:o, s:{s:f, s:f, s:f}, s:o, s:o, s:{s:s, s:s, s:f, s:I, s:I, s:I},"
		" s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
		"version", JSCHED_VERSION_LINE, "instance", d->instance, "uptime_ms",
		(json_int_t)(jd_now_ns() - d->start_ns) / 1000000, "jobs", jobs, "throughput", "1s",
		rate(d, 1), "10s", rate(d, 10), "60s", rate(d, 60), "latency_us",
		latencies(&d->lat), "clients", clients, "fairness",
		"policy", jd_fair_policy_name(st.policy), "metric",
		st.metric == JD_FAIR_METRIC_TIME   ? "time"
		: st.metric == JD_FAIR_METRIC_COST ? "cost"
						   : "jobs",
		"jain_index", st.jain, "window_ms", (json_int_t)d->cfg->fair_window_ms, "backlogged",
		(json_int_t)st.backlogged, "window_clients", (json_int_t)st.window_clients,
		"workers", workers, "fibers", fibers, "connections", "open",
		(json_int_t)d->srv.n_conns, "watching", (json_int_t)d->watch.n_watchers,
		"total_accepted", (json_int_t)d->srv.accepted, "closed_over_limit",
		(json_int_t)d->srv.disconnected_limit, "refused", (json_int_t)d->srv.refused,
		"requests", (json_int_t)d->srv.requests,
		"frame_bytes_held", (json_int_t)d->srv.held_bytes, "writes",
		(json_int_t)d->srv.flushes, "frames_written", (json_int_t)d->srv.flushed_frames,
		"notices", "wakeups",
		(json_int_t)atomic_load_explicit(&d->runner->wakeups, memory_order_relaxed), "batches",
		(json_int_t)d->runner->batches, "notices", (json_int_t)d->runner->noticed, "inline",
		(json_int_t)d->runner->inlined, "drained", (json_int_t)d->runner->drained, "swept",
		(json_int_t)d->runner->swept);
	if (doc) {
		/* The whole daemon paused (pause with all): no job starts. */
		json_object_set_new(json_object_get(doc, "fairness"), "paused",
				    json_boolean(st.paused));
		/* Dominant resource fairness, and the reservations for waiting commands. */
		json_object_set_new(json_object_get(doc, "fairness"), "drf",
				    json_boolean(d->cfg->fair_drf));
		json_object_set_new(json_object_get(doc, "fairness"), "reservations",
				    json_integer((json_int_t)st.reservations));
		/* Queued jobs the fair layer could start now (their needs fit). */
		json_object_set_new(json_object_get(doc, "fairness"), "ready",
				    json_integer((json_int_t)jd_fair_ready(d->runner->fair)));
		/* Client names known, idle ones forgotten, and names with settings of
		 * their own, in use or not (core/clients.h). */
		json_object_set_new(doc, "client_names",
				    json_pack("{s:I, s:I, s:I, s:I}", "known",
					      (json_int_t)d->clients->count, "forgotten",
					      (json_int_t)d->clients->forgotten, "with_settings",
					      (json_int_t)d->clients->n_pins, "limit",
					      (json_int_t)d->cfg->max_clients));
		/* Times a connection's read budget for an iteration ran out (server.c). */
		json_object_set_new(json_object_get(doc, "connections"), "read_yields",
				    json_integer((json_int_t)d->srv.read_yields));
		json_object_set_new(json_object_get(doc, "connections"), "limit_polls",
				    json_integer((json_int_t)d->srv.limit_polls));
		/* The loop thread's iterations and how long each kept it busy (server.c). */
		json_object_set_new(doc, "loop",
				    json_pack("{s:s, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "priority",
					      d->runner->priority ? d->runner->priority : "none",
					      "iterations", (json_int_t)d->srv.iterations, "over_bound",
					      (json_int_t)d->srv.busy_over, "bound_us",
					      (json_int_t)(JD_LOOP_BUSY_BOUND_NS / 1000), "busy_us",
					      percentiles(&d->srv.busy), "sliced_replies",
					      (json_int_t)d->srv.sliced_replies, "reply_slices",
					      (json_int_t)d->srv.reply_slices, "answering",
					      (json_int_t)d->srv.answering, "sliced_submits",
					      (json_int_t)d->srv.sliced_submits, "submit_slices",
					      (json_int_t)d->srv.submit_slices, "admitting",
					      (json_int_t)d->srv.admitting));
		/* The poll after a request (server.c): its setting and what it did. */
		json_object_set_new(json_object_get(doc, "loop"), "poll",
				    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "us",
					      (json_int_t)d->cfg->loop_poll_us, "windows",
					      (json_int_t)d->srv.poll_windows, "journal_windows",
					      (json_int_t)d->srv.poll_journal, "polls",
					      (json_int_t)d->srv.polls, "hits",
					      (json_int_t)d->srv.poll_hits, "skipped",
					      (json_int_t)d->srv.poll_skipped, "gaps",
					      (json_int_t)d->srv.poll_gaps));
		json_object_set_new(doc, "exec", jd_exec_metrics(&d->runner->exec));
		json_object_set_new(doc, "backends", jd_backends_metrics(d->runner));
		json_object_set_new(doc, "resources", jd_resources_metrics(&d->runner->resources));
		json_object_set_new(doc, "security", jd_security_metrics(d->sec));
		json_object_set_new(doc, "timers", timers_doc(d->jobs));
		json_object_set_new(doc, "output_follow", jd_follow_metrics(d));
		if (d->hooks.journal_metrics)
			json_object_set_new(doc, "journal", d->hooks.journal_metrics(d->hooks.ctx));
		json_object_set_new(doc, "config",
				    json_pack("{s:s, s:I, s:I}", "path", d->config_path, "reloads",
					      (json_int_t)d->reloads, "reload_failures",
					      (json_int_t)d->reload_failures));
		add_windows(doc, &d->lat, jd_now_ns() / 1000000);
		json_object_set_new(doc, "prometheus", exports_doc(d));
		if (flags & JD_METRICS_HISTOGRAMS)
			json_object_set_new(doc, "histograms", histograms_doc(d));
	}
	return doc;
}

char *jd_metrics_prometheus(void *net, size_t *len)
{
	json_t *doc = jd_metrics(net, JD_METRICS_HISTOGRAMS);
	char *text;

	if (!doc)
		return NULL;
	text = jd_prometheus_text(doc, len);
	json_decref(doc);
	return text;
}

/* prom_file_cb: rewrite the text file; a failure is logged once until it changes. */
static void prom_file_cb(uv_timer_t *t)
{
	struct jd_net *d = t->data;
	char why[256] = "";

	if (jd_prom_textfile_write(d->cfg->metrics_textfile, jd_metrics_prometheus, d, why,
				   sizeof(why)) == 0)
		why[0] = '\0';
	if (strcmp(why, d->prom_file_err) != 0 && why[0])
		jd_log(JD_LOG_WARN, "%s", why);
	snprintf(d->prom_file_err, sizeof(d->prom_file_err), "%s", why);
}

int jd_metrics_exports_start(struct jd_net *d, char *err, size_t errlen)
{
	int r;

	if (d->cfg->metrics_listen[0]) {
		r = jd_prom_http_start(d->loop, d->cfg->metrics_listen, jd_metrics_prometheus, d,
				       &d->prom_http, err, errlen);
		if (r < 0)
			return r;
		jd_log(JD_LOG_INFO, "metrics: GET /metrics on %s (port %u)", d->cfg->metrics_listen,
		       jd_prom_http_port(d->prom_http));
	}
	if (d->cfg->metrics_textfile[0]) {
		uv_timer_init(d->loop, &d->prom_file);
		d->prom_file.data = d;
		d->prom_file_on = true;
		uv_timer_start(&d->prom_file, prom_file_cb, 0, d->cfg->metrics_textfile_ms);
	}
	return 0;
}

void jd_metrics_exports_stop(struct jd_net *d)
{
	if (d->prom_http) {
		jd_prom_http_stop(d->prom_http);
		d->prom_http = NULL;
	}
	if (d->prom_file_on) {
		uv_close((uv_handle_t *)&d->prom_file, NULL);
		d->prom_file_on = false;
	}
}
