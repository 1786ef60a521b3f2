/* daemon/net/prometheus.c: the metrics document as Prometheus text (see prometheus.h).
 *
 * Every metric family is written whole (its HELP and TYPE lines, then every sample) before
 * the next, as the format requires; per-client families walk the clients once each.
 * Written through open_memstream: the text of a daemon with a thousand clients is a few
 * hundred kilobytes, built once per scrape.
 */
#include "daemon/net/prometheus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* num: a member as a double (integer or real), or -1 when absent. */
static double num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : -1;
}

/* path: the member at "a.b.c", or NULL. */
static json_t *path(const json_t *o, const char *p)
{
	json_t *v = NULL;
	char key[64];

	while (*p) {
		size_t n = strcspn(p, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		v = json_object_get(v ? v : o, key);
		if (!v)
			return NULL;
		p += n + (p[n] == '.');
	}
	return v;
}

/* put_label: a label value, escaped as the format says (backslash, quote, newline). */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* sample: `name{labels} value`; labels is "" or `k="v",...` already escaped. */
static void sample(FILE *f, const char *name, const char *labels, double v)
{
	if (v < 0)
		return;
	fprintf(f, "%s%s%s%s %.17g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "", v);
}

/* scalar: one family with one unlabelled sample from doc member `member`, scaled. */
static void scalar(FILE *f, const json_t *doc, const char *member, double scale,
		   const char *name, const char *type, const char *help)
{
	json_t *v = path(doc, member);

	if (!json_is_number(v))
		return;
	family(f, name, type, help);
	sample(f, name, "", json_number_value(v) * scale);
}

/* client_label: `client="NAME"` into lab (escaped; names are at most 64 bytes of
 * A-Z a-z 0-9 . _ - by the protocol, so nothing needs escaping today, but a label is
 * escaped wherever it is written).  Returns lab. */
#define LABEL_MAX 160
static const char *client_label(char lab[LABEL_MAX], const char *name)
{
	size_t n = 0;

	n += (size_t)snprintf(lab, LABEL_MAX, "client=\"");
	for (name = name ? name : ""; *name && n + 4 < LABEL_MAX; name++) {
		if (*name == '\\' || *name == '"' || *name == '\n')
			lab[n++] = '\\';
		lab[n++] = *name == '\n' ? 'n' : *name;
	}
	lab[n++] = '"';
	lab[n] = '\0';
	return lab;
}

/* per_client: one family with a sample per client of member `member` (scaled). */
static void per_client(FILE *f, const json_t *clients,
		       const char *member, double scale, const char *name, const char *type,
		       const char *help)
{
	char lab[LABEL_MAX];
	size_t i;
	json_t *c;

	if (json_array_size(clients) == 0)
		return;
	family(f, name, type, help);
	json_array_foreach(clients, i, c) {
		json_t *v = path(c, member);

		if (json_is_number(v))
			sample(f, name, client_label(lab, json_string_value(json_object_get(c, "name"))), json_number_value(v) * scale);
	}
}

/* histogram: the samples of one histogram h ({"counts", "count", "sum_ns"}) at edges. */
static void histogram(FILE *f, const char *name, const char *labels, const json_t *h,
		      const json_t *edges)
{
	json_t *counts = json_object_get(h, "counts");
	size_t i;
	json_t *e;

	if (!json_is_array(counts) || json_array_size(counts) != json_array_size(edges))
		return;
	json_array_foreach(edges, i, e) {
		fprintf(f, "%s_bucket{%s%sle=\"%.9g\"} %lld\n", name, labels, *labels ? "," : "",
			json_number_value(e) / 1e9,
			(long long)json_integer_value(json_array_get(counts, i)));
	}
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %lld\n", name, labels, *labels ? "," : "",
		(long long)json_integer_value(json_object_get(h, "count")));
	fprintf(f, "%s_sum%s%s%s %.9f\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
		num(h, "sum_ns") / 1e9);
	fprintf(f, "%s_count%s%s%s %lld\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
		(long long)json_integer_value(json_object_get(h, "count")));
}

static const char *const latency_names[] = {"queue_wait", "run", "end_to_end"};
static const char *const latency_help[] = {
	"Time from queued to started.",
	"Time from started to finished (wall time).",
	"Time from submitted to finished.",
};
static const char *const final_states[] = {"succeeded", "failed", "cancelled", "expired",
					   "dropped"};
static const char *const now_states[] = {"waiting", "scheduled", "retrying", "queued", "running"};
static const char *const prios[] = {"critical", "high", "normal", "low"};

static void latencies(FILE *f, const json_t *doc)
{
	json_t *hs = json_object_get(doc, "histograms");
	json_t *edges = json_object_get(hs, "edges_ns");
	json_t *clients = json_object_get(hs, "clients");
	char name[96], lab[LABEL_MAX];

	if (!json_is_array(edges))
		return;
	for (unsigned k = 0; k < 3; k++) {
		json_t *h = path(hs, "all");

		snprintf(name, sizeof(name), "jschedd_%s_seconds", latency_names[k]);
		family(f, name, "histogram", latency_help[k]);
		histogram(f, name, "", json_object_get(h, latency_names[k]), edges);
	}
	for (unsigned k = 0; k < 3 && json_is_object(clients); k++) {
		const char *cname;
		json_t *ch;

		snprintf(name, sizeof(name), "jschedd_client_%s_seconds", latency_names[k]);
		family(f, name, "histogram", latency_help[k]);
		json_object_foreach(clients, cname, ch)
			histogram(f, name, client_label(lab, cname),
				  json_object_get(ch, latency_names[k]), edges);
	}
}

static void jobs(FILE *f, const json_t *doc)
{
	json_t *j = json_object_get(doc, "jobs"), *clients = json_object_get(doc, "clients");
	char labels[LABEL_MAX + 40], lab[LABEL_MAX];
	size_t i;
	json_t *c;

	if (!json_is_object(j))
		return;
	family(f, "jschedd_jobs_submitted_total", "counter", "Jobs accepted by submits.");
	sample(f, "jschedd_jobs_submitted_total", "", num(j, "submitted"));
	family(f, "jschedd_jobs_rejected_total", "counter",
	       "Jobs in submits refused with queue_full.");
	sample(f, "jschedd_jobs_rejected_total", "", num(j, "rejected"));
	family(f, "jschedd_jobs", "gauge", "Jobs not final now, by state.");
	for (unsigned s = 0; s < sizeof(now_states) / sizeof(now_states[0]); s++) {
		snprintf(labels, sizeof(labels), "state=\"%s\"", now_states[s]);
		sample(f, "jschedd_jobs", labels, num(j, now_states[s]));
	}
	family(f, "jschedd_jobs_total", "counter", "Jobs that reached a final state, by client.");
	json_array_foreach(clients, i, c) {
		const char *cl = client_label(lab, json_string_value(json_object_get(c, "name")));

		for (unsigned s = 0; s < 5; s++) {
			snprintf(labels, sizeof(labels), "%s,state=\"%s\"", cl, final_states[s]);
			sample(f, "jschedd_jobs_total", labels, num(c, final_states[s]));
		}
	}
	family(f, "jschedd_jobs_retained", "gauge", "Final jobs kept for their owners now.");
	sample(f, "jschedd_jobs_retained", "", num(j, "retained"));
	family(f, "jschedd_jobs_retained_bytes", "gauge",
	       "Memory of the final jobs kept now (retention.bytes bounds it).");
	sample(f, "jschedd_jobs_retained_bytes", "", num(j, "retained_bytes"));
	family(f, "jschedd_jobs_forgotten_total", "counter", "Final jobs dropped by retention.");
	sample(f, "jschedd_jobs_forgotten_total", "", num(j, "forgotten"));
	family(f, "jschedd_queue_depth", "gauge", "Queued jobs by client and priority.");
	json_array_foreach(clients, i, c) {
		const char *cl = client_label(lab, json_string_value(json_object_get(c, "name")));
		json_t *q = json_object_get(c, "queued");

		for (unsigned p = 0; p < 4; p++) {
			snprintf(labels, sizeof(labels), "%s,priority=\"%s\"", cl, prios[p]);
			sample(f, "jschedd_queue_depth", labels, num(q, prios[p]));
		}
	}
}

/* The figures as a family each: member path, scale, name, type, help. */
static const struct fig {
	const char *member;
	double scale;
	const char *name, *type, *help;
} figures[] = {
	{"uptime_ms", 1e-3, "jschedd_uptime_seconds", "gauge", "Time since the daemon started."},
	{"fairness.jain_index", 1, "jschedd_fair_jain_index", "gauge",
	 "Jain's fairness index over the clients backlogged in the window (1 is fair)."},
	{"fairness.backlogged", 1, "jschedd_fair_backlogged_clients", "gauge",
	 "Clients with queued jobs now."},
	{"fairness.reservations", 1, "jschedd_fair_reservations_total", "counter",
	 "Times named resources were held for a command waiting for more than were free."},
	{"fairness.ready", 1, "jschedd_fair_ready_jobs", "gauge",
	 "Queued jobs whose needs fit now (they start as workers take them)."},
	{"fibers.total", 1, "jschedd_fibers", "gauge", "Fiber stacks configured."},
	{"fibers.in_use", 1, "jschedd_fibers_in_use", "gauge", "Fiber stacks taken now."},
	{"fibers.suspended", 1, "jschedd_fibers_suspended", "gauge",
	 "Fibers suspended in a wait now."},
	{"fibers.exhausted", 1, "jschedd_fibers_exhausted_total", "counter",
	 "Fiber tasks that found no free fiber."},
	{"exec.max_processes", 1, "jschedd_exec_max_processes", "gauge",
	 "Commands allowed to run at once."},
	{"exec.running", 1, "jschedd_exec_running", "gauge", "Commands running now."},
	{"exec.spawned", 1, "jschedd_exec_spawned_total", "counter", "Commands started."},
	{"exec.spawn_failed", 1, "jschedd_exec_spawn_failed_total", "counter",
	 "Commands that could not start."},
	{"exec.timed_out", 1, "jschedd_exec_timed_out_total", "counter",
	 "Commands stopped at their time limit."},
	{"connections.open", 1, "jschedd_connections", "gauge", "Client connections open now."},
	{"connections.watching", 1, "jschedd_connections_watching", "gauge",
	 "Connections with a watch now."},
	{"connections.total_accepted", 1, "jschedd_connections_accepted_total", "counter",
	 "Connections accepted."},
	{"connections.closed_over_limit", 1, "jschedd_connections_closed_over_limit_total",
	 "counter", "Clients disconnected for not reading their replies."},
	{"connections.refused", 1, "jschedd_connections_refused_total", "counter",
	 "Connections refused over a connection limit."},
	{"connections.requests", 1, "jschedd_requests_total", "counter",
	 "Requests read, over every connection."},
	{"security.denied", 1, "jschedd_permission_denied_total", "counter",
	 "Requests answered permission_denied."},
};

static const struct fig client_figures[] = {
	{"weight", 1, "jschedd_client_weight", "gauge", "The client's fair-share weight."},
	{"share", 1, "jschedd_fair_share", "gauge",
	 "Realized share of service over the fairness window."},
	{"target_share", 1, "jschedd_fair_target_share", "gauge",
	 "Configured share (weight over the backlogged clients' weights)."},
	{"running", 1, "jschedd_client_running", "gauge", "The client's jobs running now."},
	{"submitted", 1, "jschedd_client_submitted_total", "counter",
	 "The client's jobs accepted."},
	{"service_us", 1e-6, "jschedd_client_service_seconds_total", "counter",
	 "CPU time the client's handlers used (what the fair policy charges)."},
};

/* resources: the named resources' units and what running commands hold of them. */
static void resources(FILE *f, const json_t *doc)
{
	json_t *res = json_object_get(doc, "resources"), *r;
	const char *name;
	char labels[64];

	if (json_object_size(res) == 0)
		return;
	family(f, "jschedd_resource_units", "gauge",
	       "Units of a resource: a named one's count; cpus in thousandths of a CPU, memory in MiB.");
	json_object_foreach(res, name, r) {
		snprintf(labels, sizeof(labels), "resource=\"%.40s\"", name); /* a-z, 0-9, _ */
		sample(f, "jschedd_resource_units", labels, num(r, "count"));
	}
	family(f, "jschedd_resource_used", "gauge", "Units held by running commands now.");
	json_object_foreach(res, name, r) {
		snprintf(labels, sizeof(labels), "resource=\"%.40s\"", name);
		sample(f, "jschedd_resource_used", labels, num(r, "used"));
	}
}

static void workers(FILE *f, const json_t *doc)
{
	static const struct {
		const char *member, *name, *help;
		double scale;
	} w[] = {
		{"tasks", "jschedd_worker_tasks_total", "Task bodies started by the worker.", 1},
		{"steals", "jschedd_worker_steals_total", "Tasks the worker stole.", 1},
		{"parks", "jschedd_worker_parks_total", "Times the worker parked idle.", 1},
		{"feeds", "jschedd_worker_feeds_total", "Jobs the worker took from the fair queues.", 1},
		{"busy_ms", "jschedd_worker_busy_seconds_total", "Time the worker ran tasks.", 1e-3},
	};
	json_t *arr = json_object_get(doc, "workers"), *x;
	char labels[32];
	size_t i;

	if (json_array_size(arr) == 0)
		return;
	for (unsigned k = 0; k < sizeof(w) / sizeof(w[0]); k++) {
		family(f, w[k].name, "counter", w[k].help);
		json_array_foreach(arr, i, x) {
			snprintf(labels, sizeof(labels), "worker=\"%zu\"", i);
			sample(f, w[k].name, labels, num(x, w[k].member) * w[k].scale);
		}
	}
}

char *jd_prometheus_text(const json_t *doc, size_t *len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	json_t *clients = json_object_get(doc, "clients");
	const char *version = json_string_value(json_object_get(doc, "version"));

	if (!f)
		return NULL;
	family(f, "jschedd_build_info", "gauge", "The daemon's version line, as a label.");
	fputs("jschedd_build_info{version=\"", f);
	put_label(f, version ? version : "");
	fputs("\"} 1\n", f);
	jobs(f, doc);
	for (size_t k = 0; k < sizeof(figures) / sizeof(figures[0]); k++)
		scalar(f, doc, figures[k].member, figures[k].scale, figures[k].name,
		       figures[k].type, figures[k].help);
	for (size_t k = 0; k < sizeof(client_figures) / sizeof(client_figures[0]); k++)
		per_client(f, clients, client_figures[k].member,
			   client_figures[k].scale, client_figures[k].name, client_figures[k].type,
			   client_figures[k].help);
	workers(f, doc);
	resources(f, doc);
	latencies(f, doc);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	if (len)
		*len = n;
	return text;
}
