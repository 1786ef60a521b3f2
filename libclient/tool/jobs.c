/* jobs.c: the jsched subcommands about jobs: submit, wait, status, cancel, ls, output,
 * watch; and how a job record is printed.
 */
#include "libclient/tool/tool.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* ---- printing ------------------------------------------------------------------------ */

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Print a duration in ms the way a person reads it. */
static void put_duration(FILE *f, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (ms < 10000)
		fprintf(f, "%.3f s", (double)ms / 1000.0);
	else if (ms < 600000)
		fprintf(f, "%.1f s", (double)ms / 1000.0);
	else
		fprintf(f, "%" PRId64 " min", ms / 60000);
}

/* What happened to the job, or how long it has been as it is. */
static void put_outcome(FILE *f, const struct jsched_result *r)
{
	switch (r->state) {
	case JSCHED_STATE_WAITING:
	case JSCHED_STATE_QUEUED:
		fputs("for ", f);
		put_duration(f, wall_ms() - r->submitted_ms);
		break;
	case JSCHED_STATE_RUNNING:
		fputs("for ", f);
		put_duration(f, wall_ms() - r->started_ms);
		break;
	case JSCHED_STATE_SUCCEEDED:
		if (r->value_json != NULL)
			fprintf(f, "value %s, ", r->value_json);
		else if (r->exit_code >= 0)
			fprintf(f, "exit %d, ", r->exit_code);
		fputs("ran ", f);
		put_duration(f, r->finished_ms - r->started_ms);
		break;
	default:
		if (r->reason != NULL)
			fprintf(f, "%s", r->reason);
		else if (r->signal > 0)
			fprintf(f, "signal %d", r->signal);
		else if (r->exit_code >= 0)
			fprintf(f, "exit %d", r->exit_code);
		if (r->cause != NULL)
			fprintf(f, " (%s)", r->cause);
		break;
	}
}

/* tool_print_record: see tool.h. */
void tool_print_record(const struct jsched_result *r, bool json)
{
	if (json) {
		puts(r->json);
		return;
	}
	printf("%-8" PRIu64 " %-10s %-5s ", r->id, r->state_name != NULL ? r->state_name : "?",
	       r->kind != NULL ? r->kind : "?");
	put_outcome(stdout, r);
	if (r->name != NULL)
		printf("  [%s]", r->name);
	putchar('\n');
}

/* tool_job_exit: see tool.h. */
int tool_job_exit(const struct jsched_result *r)
{
	if (r->signal > 0)
		return 128 + r->signal;
	if (r->exit_code >= 0 && (r->state == JSCHED_STATE_SUCCEEDED || r->state == JSCHED_STATE_FAILED))
		return r->exit_code;
	return r->state == JSCHED_STATE_SUCCEEDED ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* ---- submit --------------------------------------------------------------------------- */

/* Read a whole file (or stdin for "-") into *data, for option opt.  0, or -1 with a
 * message printed. */
static int read_file(const char *opt, const char *path, char **data, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "jsched submit: %s %s: %s\n", opt, path, strerror(errno));
		return -1;
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	/* 64 MiB is far above any daemon's stdin limit: past it, stop reading and let the
	 * daemon's limit_exceeded say the rest. */
	while (buf != NULL && n < ((size_t)64 << 20)) {
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int err = buf == NULL || ferror(f);
	if (f != stdin)
		fclose(f);
	if (err) {
		fprintf(stderr, "jsched submit: %s %s: %s\n", opt, path, buf == NULL ? "out of memory" : "read error");
		free(buf);
		return -1;
	}
	*data = buf;
	*len = n;
	return 0;
}

/* Build the spec the command line describes.  0, or an exit status (message printed). */
static int build_spec(const struct cli_cmd *cmd, struct jsched_spec **out)
{
	struct jsched_spec *spec = NULL;
	int r;
	if (cmd->fn != NULL) {
		if (cmd->args != NULL) {
			json_error_t jerr;
			json_t *v = json_loads(cmd->args, JSON_DECODE_ANY, &jerr);
			if (v == NULL) {
				fprintf(stderr, "jsched submit: --args is not JSON: %s (column %d)\n", jerr.text,
					jerr.column);
				return CLI_EXIT_USAGE;
			}
			json_decref(v);
		}
		r = jsched_spec_call(cmd->fn, cmd->args, &spec);
	} else {
		r = jsched_spec_exec((const char *const *)cmd->command, &spec);
		if (r == 0 && !cmd->clear_env) {
			r = jsched_spec_inherit(spec); /* this shell's environment and cwd */
			if (r == JSCHED_EIO) {
				fprintf(stderr, "jsched submit: cannot read the current directory: %s (was it "
						"removed? cd elsewhere)\n", strerror(errno));
				jsched_spec_free(spec);
				return CLI_EXIT_FAILED;
			}
		}
		if (r == 0 && cmd->clear_env) {
			char *cwd = realpath(".", NULL);
			r = cwd != NULL ? jsched_spec_set_cwd(spec, cwd) : JSCHED_EIO;
			free(cwd);
		}
		for (size_t i = 0; r == 0 && i < cmd->n_env; i++) {
			const char *eq = strchr(cmd->env[i], '=');
			char name[256];
			snprintf(name, sizeof name, "%.*s", (int)(eq - cmd->env[i]), cmd->env[i]);
			r = jsched_spec_setenv(spec, name, eq + 1);
		}
		if (r == 0 && cmd->cwd != NULL) {
			char *abs = realpath(cmd->cwd, NULL);
			if (abs == NULL) {
				fprintf(stderr, "jsched submit: --cwd %s: %s\n", cmd->cwd, strerror(errno));
				jsched_spec_free(spec);
				return CLI_EXIT_USAGE;
			}
			r = jsched_spec_set_cwd(spec, abs);
			free(abs);
		}
		if (r == 0 && cmd->stdin_file != NULL) {
			char *data;
			size_t len;
			if (read_file("--stdin", cmd->stdin_file, &data, &len) < 0) {
				jsched_spec_free(spec);
				return CLI_EXIT_USAGE;
			}
			r = jsched_spec_set_stdin(spec, data, len);
			free(data);
		}
		if (r == 0 && cmd->time_limit_ms > 0)
			r = jsched_spec_set_timeout(spec, cmd->time_limit_ms);
	}
	if (r == 0 && cmd->name != NULL)
		r = jsched_spec_set_name(spec, cmd->name);
	if (r == 0 && cmd->priority >= 0)
		r = jsched_spec_set_priority(spec, (enum jsched_priority)cmd->priority);
	if (r == 0 && cmd->deadline_ms > 0)
		r = jsched_spec_set_deadline_in(spec, cmd->deadline_ms);
	if (r == 0 && cmd->cost > 0)
		r = jsched_spec_set_cost(spec, cmd->cost);
	for (size_t i = 0; r == 0 && i < cmd->n_ids; i++)
		r = jsched_spec_add_dep(spec, JSCHED_GATE_AFTER, cmd->ids[i], JSCHED_DEP_SUCCESS);
	for (size_t i = 0; r == 0 && i < cmd->n_any_of; i++)
		r = jsched_spec_add_dep(spec, JSCHED_GATE_ANY_OF, cmd->any_of[i], JSCHED_DEP_SUCCESS);
	if (r < 0) {
		/* The parser let through only what is well-formed; what is left is text that is
		 * not UTF-8 (JSON cannot carry it) or an unusable working directory. */
		fprintf(stderr, "jsched submit: cannot build the job: %s (an argument or --env value that is "
				"not UTF-8?)\n", jsched_strerror(r));
		jsched_spec_free(spec);
		return r == JSCHED_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
	}
	*out = spec;
	return 0;
}

/* Print what the job left (output or value) and its fate; return the job's exit status. */
static int report_finished(struct jsched_conn *conn, const struct cli_cmd *cmd, const struct jsched_result *r)
{
	if (cmd->json) {
		tool_print_record(r, true);
		return tool_job_exit(r);
	}
	if (r->kind != NULL && strcmp(r->kind, "exec") == 0 && r->started_ms > 0) {
		struct jsched_output *o;
		if (jsched_output(conn, r->id, &o) == 0) {
			fwrite(o->out, 1, o->out_len, stdout);
			fflush(stdout);
			fwrite(o->err, 1, o->err_len, stderr);
			if (o->out_truncated || o->err_truncated)
				fprintf(stderr, "jsched: job %" PRIu64 "'s output was truncated by the daemon\n", r->id);
			jsched_output_free(o);
		}
	} else if (r->value_json != NULL) {
		puts(r->value_json);
	}
	if (r->state != JSCHED_STATE_SUCCEEDED && !(r->state == JSCHED_STATE_FAILED && r->cause != NULL &&
						    strcmp(r->cause, "exit") == 0)) {
		/* A command's own non-zero exit speaks for itself through the exit status. */
		fprintf(stderr, "jsched: job %" PRIu64 " %s: ", r->id, r->state_name != NULL ? r->state_name : "?");
		put_outcome(stderr, r);
		fputc('\n', stderr);
	}
	return tool_job_exit(r);
}

/* submit --batch: the specs of a JSON array, in one message; ids in order. */
static int submit_batch(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	char *text;
	size_t len;
	if (read_file("--batch", cmd->batch, &text, &len) < 0)
		return CLI_EXIT_USAGE;
	json_error_t jerr;
	json_t *arr = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		fprintf(stderr, "jsched submit: --batch %s: %s%s (line %d)\n", cmd->batch,
			arr == NULL ? "not JSON: " : "expected a non-empty array of job specs",
			arr == NULL ? jerr.text : "", arr == NULL ? jerr.line : 1);
		json_decref(arr);
		return CLI_EXIT_USAGE;
	}
	size_t n = json_array_size(arr);
	struct jsched_spec **specs = calloc(n, sizeof *specs);
	uint64_t *ids = calloc(n, sizeof *ids);
	int rc = specs != NULL && ids != NULL ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) {
		char *one = json_dumps(json_array_get(arr, i), JSON_COMPACT);
		if (one == NULL || jsched_spec_from_json(one, &specs[i]) < 0) {
			fprintf(stderr, "jsched submit: --batch %s: element %zu is not a job spec object\n", cmd->batch, i);
			rc = CLI_EXIT_USAGE;
		}
		free(one);
	}
	json_decref(arr);
	int r = 0;
	if (rc == CLI_EXIT_OK) {
		r = jsched_submit_batch(conn, (const struct jsched_spec *const *)specs, n, ids);
		rc = r < 0 ? tool_fail(conn, cmd, r) : CLI_EXIT_OK;
	}
	for (size_t i = 0; rc == CLI_EXIT_OK && !cmd->wait && i < n; i++)
		printf(cmd->json ? "{\"job\": %" PRIu64 "}\n" : "%" PRIu64 "\n", ids[i]);
	if (rc == CLI_EXIT_OK && cmd->wait) {
		struct jsched_results *l = NULL;
		r = jsched_wait_many(conn, ids, n, JSCHED_WAIT_ALL, cmd->timeout_ms, &l);
		if (r < 0 && r != JSCHED_ETIMEOUT) {
			rc = tool_fail(conn, cmd, r);
		} else {
			for (size_t i = 0; l != NULL && i < l->count; i++) {
				tool_print_record(l->items[i], cmd->json);
				if (l->items[i]->state != JSCHED_STATE_SUCCEEDED)
					rc = CLI_EXIT_FAILED;
			}
			if (r == JSCHED_ETIMEOUT) {
				fprintf(stderr, "jsched submit: the --timeout expired before the jobs ended\n");
				rc = CLI_EXIT_TIMEOUT;
			}
		}
		jsched_results_free(l);
	}
	for (size_t i = 0; specs != NULL && i < n; i++)
		jsched_spec_free(specs[i]);
	free(specs);
	free(ids);
	return rc;
}

/* cmd_submit: see tool.h. */
int cmd_submit(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	if (cmd->batch != NULL)
		return submit_batch(conn, cmd);
	struct jsched_spec *spec;
	int rc = build_spec(cmd, &spec);
	if (rc != 0)
		return rc;
	uint64_t id;
	int r = jsched_submit(conn, spec, &id);
	jsched_spec_free(spec);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (!cmd->wait) {
		if (cmd->json)
			printf("{\"job\": %" PRIu64 "}\n", id);
		else
			printf("%" PRIu64 "\n", id);
		return CLI_EXIT_OK;
	}
	struct jsched_result *res;
	r = jsched_wait(conn, id, cmd->timeout_ms, &res);
	if (r == JSCHED_ETIMEOUT) {
		fprintf(stderr, "jsched submit: job %" PRIu64 " still %s after the --timeout\n", id,
			res != NULL && res->state_name != NULL ? res->state_name : "not done");
		jsched_result_free(res);
		return CLI_EXIT_TIMEOUT;
	}
	if (r < 0)
		return tool_fail(conn, cmd, r);
	rc = report_finished(conn, cmd, res);
	jsched_result_free(res);
	return rc;
}

/* ---- wait, status, cancel --------------------------------------------------------------- */

/* cmd_wait: see tool.h. */
int cmd_wait(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_results *l;
	int r = jsched_wait_many(conn, cmd->ids, cmd->n_ids, cmd->any ? JSCHED_WAIT_ANY : JSCHED_WAIT_ALL,
				 cmd->timeout_ms, &l);
	if (r < 0 && r != JSCHED_ETIMEOUT)
		return tool_fail(conn, cmd, r);
	int rc = CLI_EXIT_OK;
	bool any_ok = false;
	for (size_t i = 0; l != NULL && i < l->count; i++) {
		const struct jsched_result *res = l->items[i];
		tool_print_record(res, cmd->json);
		if (jsched_state_final(res->state) && res->state != JSCHED_STATE_SUCCEEDED)
			rc = CLI_EXIT_FAILED;
		any_ok |= res->state == JSCHED_STATE_SUCCEEDED;
	}
	if (cmd->any)
		rc = any_ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	if (r == JSCHED_ETIMEOUT) {
		fprintf(stderr, "jsched wait: the --timeout expired first\n");
		rc = CLI_EXIT_TIMEOUT;
	} else if (l != NULL && l->count == 1 && l->items[0]->kind != NULL && strcmp(l->items[0]->kind, "exec") == 0) {
		rc = tool_job_exit(l->items[0]);
	}
	jsched_results_free(l);
	return rc;
}

/* Print an instant (ms since the epoch) as local date and time, or "-". */
static void put_instant(const char *label, int64_t at)
{
	printf("  %-10s ", label);
	time_t secs = (time_t)(at / 1000);
	struct tm tm;
	char when[32];
	if (at > 0 && localtime_r(&secs, &tm) != NULL && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm) > 0)
		printf("%s.%03d\n", when, (int)(at % 1000));
	else
		puts("-");
}

/* status -l: a record, every member a line. */
static void print_long(const struct jsched_result *r)
{
	printf("job %" PRIu64 "%s%s%s\n", r->id, r->name != NULL ? " (" : "", r->name != NULL ? r->name : "",
	       r->name != NULL ? ")" : "");
	printf("  %-10s %s\n", "state", r->state_name != NULL ? r->state_name : "?");
	printf("  %-10s %s\n", "kind", r->kind != NULL ? r->kind : "?");
	printf("  %-10s %s (uid %u)\n", "client", r->client != NULL ? r->client : "?", (unsigned)r->uid);
	printf("  %-10s %s\n", "priority", r->priority != NULL ? r->priority : "?");
	put_instant("submitted", r->submitted_ms);
	put_instant("started", r->started_ms);
	put_instant("finished", r->finished_ms);
	if (r->exit_code >= 0)
		printf("  %-10s %d\n", "exit code", r->exit_code);
	if (r->signal > 0)
		printf("  %-10s %d\n", "signal", r->signal);
	if (r->value_json != NULL)
		printf("  %-10s %s\n", "value", r->value_json);
	if (r->cause != NULL)
		printf("  %-10s %s: %s\n", "cause", r->cause, r->reason != NULL ? r->reason : "");
}

/* cmd_status: see tool.h. */
int cmd_status(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_results *l;
	int r = jsched_status_many(conn, cmd->ids, cmd->n_ids, &l);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	for (size_t i = 0; i < l->count; i++) {
		if (cmd->longform && !cmd->json)
			print_long(l->items[i]);
		else
			tool_print_record(l->items[i], cmd->json);
	}
	jsched_results_free(l);
	return CLI_EXIT_OK;
}

/* cmd_cancel: see tool.h. */
int cmd_cancel(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_results *l;
	int r = jsched_cancel_many(conn, cmd->ids, cmd->n_ids, &l);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	for (size_t i = 0; i < l->count; i++) {
		const struct jsched_result *res = l->items[i];
		printf("%-8" PRIu64 " %s%s\n", res->id, res->state_name != NULL ? res->state_name : "?",
		       res->cancelling ? " (asked to stop)"
		       : res->state != JSCHED_STATE_CANCELLED && jsched_state_final(res->state) ? " (had already ended)"
											       : "");
	}
	jsched_results_free(l);
	return CLI_EXIT_OK;
}

/* ---- ls, output ----------------------------------------------------------------------------- */

/* cmd_ls: see tool.h. */
int cmd_ls(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	unsigned mask = 0;
	for (const char *s = cmd->states; s != NULL && *s != '\0';) {
		size_t len = strcspn(s, ",");
		char name[32];
		snprintf(name, sizeof name, "%.*s", (int)len, s);
		mask |= 1u << jsched_state_from_name(name); /* the parser checked the names */
		s += len + (s[len] == ',');
	}
	struct jsched_results *l;
	int r = jsched_list(conn, mask, cmd->client, cmd->all, &l);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (!cmd->json && l->count > 0)
		printf("%-8s %-10s %-5s %-12s %-8s %s\n", "ID", "STATE", "KIND", "CLIENT", "PRIORITY", "NAME");
	for (size_t i = 0; i < l->count; i++) {
		const struct jsched_result *res = l->items[i];
		if (cmd->json)
			puts(res->json);
		else
			printf("%-8" PRIu64 " %-10s %-5s %-12s %-8s %s\n", res->id,
			       res->state_name != NULL ? res->state_name : "?", res->kind != NULL ? res->kind : "?",
			       res->client != NULL ? res->client : "-", res->priority != NULL ? res->priority : "-",
			       res->name != NULL ? res->name : "");
	}
	jsched_results_free(l);
	return CLI_EXIT_OK;
}

/* cmd_output: see tool.h. */
int cmd_output(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_output *o;
	int r = jsched_output(conn, cmd->ids[0], &o);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (!cmd->err_only)
		fwrite(o->out, 1, o->out_len, stdout);
	fflush(stdout);
	if (!cmd->out_only)
		fwrite(o->err, 1, o->err_len, stderr);
	if ((o->out_truncated && !cmd->err_only) || (o->err_truncated && !cmd->out_only))
		fprintf(stderr, "jsched output: the daemon kept only the first bytes of the %s\n",
			o->out_truncated && o->err_truncated ? "stdout and stderr" : o->out_truncated ? "stdout" : "stderr");
	if (!o->complete)
		fprintf(stderr, "jsched output: job %" PRIu64 " has not ended: this is its output so far\n",
			cmd->ids[0]);
	jsched_output_free(o);
	return CLI_EXIT_OK;
}

/* ---- watch ----------------------------------------------------------------------------------- */

/* cmd_watch: see tool.h. */
int cmd_watch(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	uint64_t last;
	int r = jsched_watch(conn, cmd->since, cmd->instance, &last);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (!cmd->json)
		fprintf(stderr, "jsched watch: watching (instance %s, last event %" PRIu64 ")\n",
			jsched_server_instance(conn), last);
	fflush(stderr);
	for (long n = 0; cmd->count == 0 || n < cmd->count; n++) {
		struct jsched_event *ev;
		r = jsched_next_event(conn, -1, &ev);
		if (r < 0)
			return tool_fail(conn, cmd, r);
		if (cmd->json) {
			puts(ev->json);
		} else if (ev->job != NULL) {
			/* When the state was entered (a replayed event is older than now). */
			const struct jsched_result *j = ev->job;
			int64_t at = j->finished_ms > 0 ? j->finished_ms : j->started_ms > 0 ? j->started_ms : j->submitted_ms;
			time_t secs = (time_t)(at / 1000);
			struct tm tm;
			char when[32] = "-";
			if (at > 0 && localtime_r(&secs, &tm) != NULL) {
				size_t len = strftime(when, sizeof when, "%H:%M:%S", &tm);
				snprintf(when + len, sizeof when - len, ".%03d", (int)(at % 1000));
			}
			printf("%-8" PRIu64 " %-12s %-8" PRIu64 " %-10s %s", ev->seq, when, j->id,
			       j->state_name != NULL ? j->state_name : "?", j->kind != NULL ? j->kind : "?");
			if (jsched_state_final(j->state)) {
				fputs("  ", stdout);
				put_outcome(stdout, j);
			}
			if (j->name != NULL)
				printf("  [%s]", j->name);
			putchar('\n');
		} else {
			printf("%-8s %s %s\n", "-", ev->type, ev->mode != NULL ? ev->mode : "");
		}
		fflush(stdout); /* a watcher reads line by line, often through a pipe */
		bool shutdown = strcmp(ev->type, "shutdown") == 0;
		jsched_event_free(ev);
		if (shutdown)
			break;
	}
	return CLI_EXIT_OK;
}
