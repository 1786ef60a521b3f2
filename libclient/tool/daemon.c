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

static void print_latency_row(FILE *f, const char *label, const json_t *lat)
{
	char a[32], b[32], c[32], d[32], e[32];
	fprintf(f, "  %-12s %10s %10s %10s %10s %10s\n", label, num(lat, "p50", a), num(lat, "p90", b),
		num(lat, "p99", c), num(lat, "max", d), num(lat, "count", e));
}

static void print_uptime(FILE *f, const json_t *m)
{
	const json_t *v = json_object_get(m, "uptime_ms");
	if (!json_is_integer(v)) {
		fputs("-", f);
		return;
	}
	long long s = json_integer_value(v) / 1000;
	if (s >= 86400)
		fprintf(f, "%lldd %02lldh %02lldm", s / 86400, s % 86400 / 3600, s % 3600 / 60);
	else if (s >= 3600)
		fprintf(f, "%lldh %02lldm %02llds", s / 3600, s % 3600 / 60, s % 60);
	else
		fprintf(f, "%lldm %02llds", s / 60, s % 60);
}

/* Print the metrics document m as a few tables. */
static void print_view(FILE *f, const json_t *m)
{
	char a[32], b[32], c[32], d[32], e[32], g[32];
	const char *version = json_string_value(json_object_get(m, "version"));
	fprintf(f, "%s\nup ", version != NULL ? version : "jschedd (version unknown)");
	print_uptime(f, m);
	fputc('\n', f);

	const json_t *jobs = json_object_get(m, "jobs");
	static const char *const counters[] = { "submitted", "waiting", "queued", "running", "succeeded",
						"failed", "cancelled", "expired", "dropped", "rejected", "retained",
						"forgotten" };
	fputs("\njobs        ", f);
	for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
		fprintf(f, " %s %s", counters[i], num(jobs, counters[i], a));
	const json_t *tp = json_object_get(m, "throughput");
	fprintf(f, "\nthroughput   %s/s over 1 s, %s/s over 10 s, %s/s over 60 s\n", num(tp, "1s", a),
		num(tp, "10s", b), num(tp, "60s", c));

	const json_t *lat = json_object_get(m, "latency_us");
	fprintf(f, "\nlatency (us) %10s %10s %10s %10s %10s\n", "p50", "p90", "p99", "max", "count");
	print_latency_row(f, "queue_wait", json_object_get(lat, "queue_wait"));
	print_latency_row(f, "run", json_object_get(lat, "run"));
	print_latency_row(f, "end_to_end", json_object_get(lat, "end_to_end"));

	const json_t *fair = json_object_get(m, "fairness");
	const char *policy = json_string_value(json_object_get(fair, "policy"));
	const char *metric = json_string_value(json_object_get(fair, "metric"));
	fprintf(f, "\nfairness     policy %s, Jain's index %s over %s backlogged clients, shares in %s\n",
		policy != NULL ? policy : "-", num(fair, "jain_index", a), num(fair, "backlogged", b),
		metric != NULL ? metric : "-");

	const json_t *clients = json_object_get(m, "clients");
	fprintf(f, "\n%-16s %6s %6s %6s %6s %6s %8s %9s %8s %8s %10s\n", "CLIENT", "WEIGHT", "CRIT", "HIGH",
		"NORMAL", "LOW", "RUNNING", "SUCCEEDED", "SHARE", "TARGET", "E2E p99 us");
	size_t i;
	const json_t *cl;
	json_array_foreach(clients, i, cl) {
		const char *name = json_string_value(json_object_get(cl, "name"));
		const json_t *q = json_object_get(cl, "queued");
		char h[32], k[32], l[32], n[32];
		fprintf(f, "%-16s %6s %6s %6s %6s %6s %8s %9s %8s %8s %10s\n", name != NULL ? name : "?",
			num(cl, "weight", a), num(q, "critical", b), num(q, "high", c), num(q, "normal", d),
			num(q, "low", e), num(cl, "running", g), num(cl, "succeeded", h), num(cl, "share", k),
			num(cl, "target_share", l),
			num(json_object_get(json_object_get(cl, "latency_us"), "end_to_end"), "p99", n));
	}

	const json_t *workers = json_object_get(m, "workers");
	fprintf(f, "\n%-8s %10s %10s %10s %10s\n", "WORKER", "TASKS", "STEALS", "PARKS", "BUSY ms");
	const json_t *w;
	json_array_foreach(workers, i, w)
		fprintf(f, "%-8zu %10s %10s %10s %10s\n", i, num(w, "tasks", a), num(w, "steals", b),
			num(w, "parks", c), num(w, "busy_ms", d));

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

/* Fetch and parse the metrics document; NULL with the failure printed (*rc set). */
static json_t *fetch(struct jsched_conn *conn, const struct cli_cmd *cmd, char **text, int *rc)
{
	int r = jsched_metrics(conn, text);
	if (r < 0) {
		*rc = tool_fail(conn, cmd, r);
		return NULL;
	}
	json_t *m = json_loads(*text, 0, NULL);
	if (m == NULL) {
		fprintf(stderr, "jsched %s: the metrics document is not JSON\n", tool_verb_name(cmd->verb));
		*rc = CLI_EXIT_FAILED;
	}
	return m;
}

/* cmd_metrics: see tool.h. */
int cmd_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	char *text = NULL;
	int rc = CLI_EXIT_OK;
	json_t *m = fetch(conn, cmd, &text, &rc);
	if (m != NULL) {
		if (cmd->json)
			puts(text);
		else
			print_view(stdout, m);
	}
	json_decref(m);
	jsched_free(text);
	return rc;
}

/* cmd_top: see tool.h. */
int cmd_top(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	bool tty = isatty(STDOUT_FILENO);
	for (long n = 0; cmd->count == 0 || n < cmd->count; n++) {
		if (n > 0) {
			struct timespec ts = { .tv_sec = cmd->interval_ms / 1000,
					       .tv_nsec = (long)(cmd->interval_ms % 1000) * 1000000 };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		char *text = NULL;
		int rc = CLI_EXIT_OK;
		json_t *m = fetch(conn, cmd, &text, &rc);
		jsched_free(text);
		if (m == NULL)
			return rc;
		if (tty)
			fputs("\033[H\033[2J", stdout); /* home, clear: redraw in place */
		else if (n > 0)
			fputs("\n", stdout);
		time_t now = time(NULL);
		struct tm tm;
		char when[32];
		strftime(when, sizeof when, "%H:%M:%S", localtime_r(&now, &tm));
		printf("jsched top  %s  (every %.1f s, client %s)\n", when, (double)cmd->interval_ms / 1000.0,
		       jsched_client_name(conn) != NULL ? jsched_client_name(conn) : "?");
		print_view(stdout, m);
		json_decref(m);
		fflush(stdout);
	}
	return CLI_EXIT_OK;
}

/* cmd_drain: see tool.h. */
int cmd_drain(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	uint64_t cancelled = 0, cancelling = 0;
	int r = jsched_drain(conn, cmd->client, cmd->running, &cancelled, &cancelling);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	printf("cancelled %" PRIu64 " jobs", cancelled);
	if (cmd->running)
		printf(", asked %" PRIu64 " running jobs to stop", cancelling);
	putchar('\n');
	return CLI_EXIT_OK;
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
	json_t *v = reply != NULL ? json_loads(reply, 0, NULL) : NULL;
	if (cmd->verb == CLI_ADMIN_RELOAD) {
		char *applied = json_dumps(json_object_get(v, "applied"), JSON_COMPACT | JSON_ENCODE_ANY);
		char *restart = json_dumps(json_object_get(v, "restart_needed"), JSON_COMPACT | JSON_ENCODE_ANY);
		printf("reloaded; applied %s; needing a restart %s\n", applied != NULL ? applied : "[]",
		       restart != NULL ? restart : "[]");
		free(applied);
		free(restart);
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
	jsched_free(reply);
	return CLI_EXIT_OK;
}
