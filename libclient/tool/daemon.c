/* daemon.c: the jsched subcommands about the daemon as a whole: metrics (the document as a
 * readable table), top (the same view, redrawn), drain and admin.
 *
 * The view reads the metrics document of PROTOCOL.md section 8 defensively: every member
 * may be missing (an older daemon) or joined by new ones (a newer daemon), and a missing
 * figure prints as "-" rather than failing the command.
 */
#include "libclient/tool/tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* A number member as text ("-" when absent); buf must be 32 bytes. */
static const char *num(const json_t *obj, const char *key, char *buf)
{
	const json_t *v = json_object_get(obj, key);
	if (json_is_integer(v))
		snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, 32, "%.3g", json_real_value(v));
	else
		snprintf(buf, 32, "-");
	return buf;
}

/* A number member, or -1 when absent. */
static double numv(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_number(v) ? json_number_value(v) : -1;
}

/* A microseconds member in a person's units ("4.97 s"); buf 32 bytes. */
static const char *us(const json_t *obj, const char *key, char *buf)
{
	return tool_us(buf, 32, numv(obj, key));
}

/* A count member, shortened ("12.3k"); buf 32 bytes. */
static const char *cnt(const json_t *obj, const char *key, char *buf)
{
	return tool_count(buf, 32, numv(obj, key));
}

/* tool_uptime: see tool.h. */
const char *tool_uptime(char *buf, size_t len, const json_t *m)
{
	const json_t *v = json_object_get(m, "uptime_ms");
	if (!json_is_integer(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	long long s = json_integer_value(v) / 1000;
	if (s >= 86400)
		snprintf(buf, len, "%lldd %02lldh %02lldm", s / 86400, s % 86400 / 3600, s % 3600 / 60);
	else if (s >= 3600)
		snprintf(buf, len, "%lldh %02lldm %02llds", s / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, len, "%lldm %02llds", s / 60, s % 60);
	return buf;
}

/* Add a line of cells (NULL-terminated) to tb; false when memory ran out. */
static bool row(struct libscols_table *tb, const char *const *cells)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	for (size_t i = 0; ln != NULL && cells[i] != NULL; i++)
		if (scols_line_set_data(ln, i, cells[i]) != 0)
			return false;
	return ln != NULL;
}

/* Print a table whose columns are titles (NULL-terminated; the first left-aligned and
 * truncated if the terminal is narrow, the rest right-aligned) and whose rows come from
 * fill(tb, arg). */
static void print_table(const char *const *titles, bool (*fill)(struct libscols_table *, const void *),
			const void *arg)
{
	struct libscols_table *tb = tool_table_new();
	bool ok = tb != NULL;
	for (size_t i = 0; ok && titles[i] != NULL; i++)
		ok = tool_table_column(tb, titles[i], i == 0 ? 0.2 : 1, i == 0 ? SCOLS_FL_TRUNC : SCOLS_FL_RIGHT) != NULL;
	if (ok && fill(tb, arg))
		tool_table_print(tb);
	else if (tb != NULL)
		scols_unref_table(tb);
}

static bool fill_latency(struct libscols_table *tb, const void *arg)
{
	const json_t *lat = json_object_get(arg, "latency_us");
	const json_t *l1 = json_object_get(arg, "latency_us_1m"), *l5 = json_object_get(arg, "latency_us_5m");
	static const char *const kinds[] = { "queue_wait", "run", "end_to_end", NULL };
	for (size_t i = 0; kinds[i] != NULL; i++) {
		const json_t *h = json_object_get(lat, kinds[i]);
		const json_t *h1 = json_object_get(l1, kinds[i]), *h5 = json_object_get(l5, kinds[i]);
		char a[32], b[32], c[32], d[32], e[32], f[32], g[32], k[32];
		const char *cells[] = { kinds[i], us(h, "p50", a), us(h, "p90", b), us(h, "p99", c), us(h, "max", d),
					cnt(h, "count", e), us(h1, "p50", f), us(h1, "p99", g), us(h5, "p99", k), NULL };
		if (!row(tb, cells))
			return false;
	}
	return true;
}

/* tool_fill_clients: see tool.h. */
bool tool_fill_clients(struct libscols_table *tb, const void *arg)
{
	size_t i;
	const json_t *cl;
	json_array_foreach(json_object_get(arg, "clients"), i, cl) {
		const char *name = json_string_value(json_object_get(cl, "name"));
		const json_t *q = json_object_get(cl, "queued");
		char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32], l[32], n[32], who[96];
		/* A paused client (jsched pause) says so beside its name. */
		snprintf(who, sizeof who, "%s%s", name != NULL ? name : "?",
			 json_is_true(json_object_get(cl, "paused")) ? " (paused)" : "");
		const char *cells[] = { who, num(cl, "weight", a), cnt(q, "critical", b),
					cnt(q, "high", c), cnt(q, "normal", d), cnt(q, "low", e), cnt(cl, "running", g),
					cnt(cl, "succeeded", h), num(cl, "share", k), num(cl, "target_share", l),
					us(json_object_get(json_object_get(cl, "latency_us"), "end_to_end"), "p99", n),
					NULL };
		if (!row(tb, cells))
			return false;
	}
	return true;
}

/* tool_client_titles: see tool.h. */
const char *const tool_client_titles[] = { "CLIENT", "WEIGHT", "CRIT", "HIGH", "NORMAL", "LOW", "RUNNING",
					   "SUCCEEDED", "SHARE", "TARGET", "E2E P99", NULL };

static bool fill_workers(struct libscols_table *tb, const void *arg)
{
	size_t i;
	const json_t *w;
	json_array_foreach(json_object_get(arg, "workers"), i, w) {
		char id[32], a[32], b[32], c[32], d[32];
		snprintf(id, sizeof id, "%zu", i);
		const char *cells[] = { id, cnt(w, "tasks", a), cnt(w, "steals", b), cnt(w, "parks", c),
					tool_duration(d, sizeof d, (int64_t)numv(w, "busy_ms")), NULL };
		if (!row(tb, cells))
			return false;
	}
	return true;
}

/* Print the metrics document m as a few tables. */
static void print_view(FILE *f, const json_t *m)
{
	char a[32], b[32], c[32], d[32], e[32], g[32];
	const char *version = json_string_value(json_object_get(m, "version"));
	fprintf(f, "%s\nup %s\n", version != NULL ? version : "jschedd (version unknown)", tool_uptime(a, sizeof a, m));

	const json_t *jobs = json_object_get(m, "jobs");
	static const char *const now[] = { "waiting", "scheduled", "retrying", "queued", "running", "retained", NULL };
	static const char *const ever[] = { "submitted", "succeeded", "failed", "cancelled", "expired", "dropped",
					    "rejected", "forgotten", NULL };
	fputs("\njobs now    ", f);
	for (size_t i = 0; now[i] != NULL; i++)
		fprintf(f, " %s %s", now[i], num(jobs, now[i], a));
	fputs("\njobs ever   ", f);
	for (size_t i = 0; ever[i] != NULL; i++)
		fprintf(f, " %s %s", ever[i], num(jobs, ever[i], a));
	const json_t *tp = json_object_get(m, "throughput");
	fprintf(f, "\nthroughput   %s/s over 1 s, %s/s over 10 s, %s/s over 60 s\n\n", num(tp, "1s", a),
		num(tp, "10s", b), num(tp, "60s", c));
	fflush(f);

	static const char *const lat_titles[] = { "LATENCY", "P50", "P90", "P99", "MAX", "COUNT",
						  "P50 1M", "P99 1M", "P99 5M", NULL };
	print_table(lat_titles, fill_latency, m);

	const json_t *fair = json_object_get(m, "fairness");
	const char *policy = json_string_value(json_object_get(fair, "policy"));
	const char *metric = json_string_value(json_object_get(fair, "metric"));
	fprintf(f, "\nfairness     policy %s, Jain's index %s over %s backlogged clients, shares in %s\n\n",
		policy != NULL ? policy : "-", num(fair, "jain_index", a), num(fair, "backlogged", b),
		metric != NULL ? metric : "-");
	fflush(f);
	print_table(tool_client_titles, tool_fill_clients, m);
	fputc('\n', f);
	fflush(f);
	static const char *const worker_titles[] = { "WORKER", "TASKS", "STEALS", "PARKS", "BUSY", NULL };
	print_table(worker_titles, fill_workers, m);

	const json_t *fib = json_object_get(m, "fibers");
	const json_t *conn = json_object_get(m, "connections");
	const json_t *ex = json_object_get(m, "exec");
	fprintf(f, "\nfibers       total %s, in use %s, suspended %s, none free %s times\n", num(fib, "total", a),
		num(fib, "in_use", b), num(fib, "suspended", c), num(fib, "exhausted", d));
	fprintf(f, "exec         running %s of %s, waiting for a slot %s, spawned %s, failed to spawn %s, "
		   "timed out %s\n", num(ex, "running", a), num(ex, "max_processes", b), num(ex, "parked", c),
		num(ex, "spawned", d), num(ex, "spawn_failed", e), num(ex, "timed_out", g));
	fprintf(f, "connections  open %s, watching %s, accepted %s, closed over limit %s, refused %s\n",
		num(conn, "open", a), num(conn, "watching", b), num(conn, "total_accepted", c),
		num(conn, "closed_over_limit", d), num(conn, "refused", e));
}

/* tool_fetch_metrics: see tool.h. */
json_t *tool_fetch_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd, int *rc)
{
	char *text = NULL;
	int r = jsched_metrics(conn, &text);
	if (r < 0) {
		*rc = tool_fail(conn, cmd, r);
		return NULL;
	}
	json_t *m = json_loads(text, 0, NULL);
	jsched_free(text);
	if (m == NULL) {
		fprintf(stderr, "jsched %s: the metrics document is not JSON\n", tool_verb_name(cmd->verb));
		*rc = CLI_EXIT_FAILED;
	}
	return m;
}

/* cmd_metrics: see tool.h. */
int cmd_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	int rc = CLI_EXIT_OK;
	if (cmd->prometheus) {
		char *text = NULL;
		int r = jsched_metrics_prometheus(conn, &text);
		if (r < 0)
			return tool_fail(conn, cmd, r);
		fputs(text, stdout);
		jsched_free(text);
		return CLI_EXIT_OK;
	}
	json_t *m = tool_fetch_metrics(conn, cmd, &rc);
	if (m == NULL)
		return rc;
	if (cmd->json)
		return tool_print_json(m, true);
	print_view(stdout, m);
	json_decref(m);
	return CLI_EXIT_OK;
}

/* cmd_drain: see tool.h. */
int cmd_drain(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	uint64_t cancelled = 0, cancelling = 0;
	int r = jsched_drain(conn, cmd->client, cmd->running, &cancelled, &cancelling);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (cmd->json)
		return tool_print_json(json_pack("{s:I, s:I}", "cancelled", (json_int_t)cancelled, "cancelling",
						 (json_int_t)cancelling), false);
	printf("cancelled %" PRIu64 " jobs", cancelled);
	if (cmd->running)
		printf(", asked %" PRIu64 " running jobs to stop", cancelling);
	putchar('\n');
	return CLI_EXIT_OK;
}

/* cmd_pause: see tool.h. */
int cmd_pause(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	bool pause = cmd->verb == CLI_PAUSE;
	int r = (pause ? jsched_pause : jsched_resume)(conn, cmd->client_name, cmd->all);
	const char *who = cmd->all ? "every client" : cmd->client_name ? cmd->client_name : "your client";
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (cmd->json)
		return tool_print_json(json_pack("{s:s?, s:b, s:b}", "client", cmd->all ? NULL : cmd->client_name,
						 "all", cmd->all, "paused", pause), false);
	printf("%s %s\n", pause ? "paused" : "resumed", who);
	return CLI_EXIT_OK;
}

/* cmd_retry: see tool.h. */
int cmd_retry(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_results *res = NULL;
	int r = jsched_retry(conn, cmd->ids, cmd->n_ids, &res);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	for (size_t i = 0; i < res->count; i++) {
		const struct jsched_result *j = res->items[i];
		if (cmd->json)
			puts(j->json);
		else
			printf("%-8" PRIu64 " %s, attempt %u\n", j->id, j->state_name != NULL ? j->state_name : "?",
			       (unsigned)j->attempt);
	}
	jsched_results_free(res);
	return CLI_EXIT_OK;
}

/* cmd_hold: see tool.h. */
int cmd_hold(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	bool hold = cmd->verb == CLI_HOLD;
	struct jsched_results *res = NULL;
	int r = (hold ? jsched_hold : jsched_release)(conn, cmd->ids, cmd->n_ids, &res);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	int status = CLI_EXIT_OK;
	for (size_t i = 0; i < res->count; i++) {
		const struct jsched_result *j = res->items[i];
		if (cmd->json) {
			printf("{\"job\": %" PRIu64 ", \"state\": \"%s\", \"held\": %s}\n", j->id,
			       j->state_name != NULL ? j->state_name : "?", j->held ? "true" : "false");
			continue;
		}
		if (hold ? j->held
			 : (j->state == JSCHED_STATE_QUEUED || j->state == JSCHED_STATE_SCHEDULED) && !j->held) {
			printf("%-8" PRIu64 " %s\n", j->id, hold ? "held" : "released");
		} else {
			printf("%-8" PRIu64 " %s: not queued or scheduled, left as it is\n", j->id,
			       j->state_name != NULL ? j->state_name : "?");
			status = CLI_EXIT_FAILED;
		}
	}
	jsched_results_free(res);
	return status;
}

/* put_keys: "<what> k1, k2" for an array of config keys; nothing when it is empty. */
static void put_keys(const char *what, const json_t *keys)
{
	size_t i;
	const json_t *k;
	if (json_array_size(keys) == 0)
		return;
	fputs(what, stdout);
	json_array_foreach(keys, i, k)
		printf("%s %s", i > 0 ? "," : "", json_string_value(k));
}

/* cmd_admin: see tool.h. */
int cmd_admin(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	char *reply = NULL;
	int r;
	switch (cmd->verb) {
	case CLI_ADMIN_RELOAD:
		r = jsched_admin_reload(conn, &reply);
		break;
	case CLI_ADMIN_SET_CLIENT:
		r = jsched_admin_set_client(conn, cmd->client, cmd->weight, cmd->max_queued, cmd->overflow, &reply);
		break;
	default:
		r = jsched_admin_shutdown(conn, cmd->immediate);
		break;
	}
	if (r < 0)
		return tool_fail(conn, cmd, r);
	json_t *v = reply != NULL ? json_loads(reply, 0, NULL) : json_object();
	jsched_free(reply);
	if (cmd->json) {
		/* The reply's own members, without the envelope. */
		json_object_del(v, "id");
		json_object_del(v, "ok");
		return tool_print_json(v, false);
	}
	if (cmd->verb == CLI_ADMIN_RELOAD) {
		const json_t *applied = json_object_get(v, "applied"), *restart = json_object_get(v, "restart_needed");
		fputs("reloaded", stdout);
		if (json_array_size(applied) == 0 && json_array_size(restart) == 0)
			fputs(": nothing changed", stdout);
		put_keys(": applied", applied);
		put_keys("; changed but needing a restart:", restart);
		putchar('\n');
	} else if (cmd->verb == CLI_ADMIN_SET_CLIENT) {
		const json_t *c = json_object_get(v, "client");
		char a[32], b[32];
		const char *ov = json_string_value(json_object_get(c, "overflow"));
		printf("client %s: weight %s, max_queued %s, overflow %s\n", cmd->client, num(c, "weight", a),
		       num(c, "max_queued", b), ov != NULL ? ov : "-");
	} else {
		printf("jschedd is shutting down (%s)\n", cmd->immediate ? "immediate" : "graceful");
	}
	json_decref(v);
	return CLI_EXIT_OK;
}

/* cmd_call: see tool.h.  The request is the JSON object with "op" set; the reply is
 * printed whole, also an error reply (rebuilt from the error the library kept). */
int cmd_call(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	json_error_t jerr;
	json_t *req = json_loads(cmd->op_json != NULL ? cmd->op_json : "{}", 0, &jerr);
	if (!json_is_object(req)) {
		fprintf(stderr, "jsched call: %s: %s\n", req == NULL ? "not JSON" : "not a JSON object",
			req == NULL ? jerr.text : cmd->op_json);
		json_decref(req);
		return CLI_EXIT_USAGE;
	}
	json_object_set_new(req, "op", json_string(cmd->op));
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	char *reply = NULL;
	int r = text != NULL ? jsched_request(conn, text, &reply) : JSCHED_ENOMEM;
	free(text);
	if (r == 0) {
		json_t *v = json_loads(reply, 0, NULL);
		jsched_free(reply);
		return tool_print_json(v, false);
	}
	const char *err = jsched_error_json(conn);
	json_t *e = err != NULL ? json_loads(err, 0, NULL) : NULL;
	if (e == NULL)
		return tool_fail(conn, cmd, r);
	tool_print_json(json_pack("{s:b, s:o}", "ok", false, "error", e), false);
	return tool_exit_of(r);
}
