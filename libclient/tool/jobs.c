/* jobs.c: the jsched subcommands about jobs: submit, wait, status, cancel, ls, output,
 * watch; and how a job record is printed.
 */
#include "libclient/tool/tool.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* ---- printing ------------------------------------------------------------------------ */

/* Print a duration in ms the way a person reads it. */
static void put_duration(FILE *f, int64_t ms)
{
	char buf[32];
	fputs(tool_duration(buf, sizeof buf, ms), f);
}

/* until_text: "until HH:MM:SS" (local time) for an instant within a day of now, else
 * "until YYYY-MM-DD HH:MM"; returns buf. */
static const char *until_text(char *buf, size_t len, int64_t at_ms, int64_t now_ms)
{
	time_t t = (time_t)(at_ms / 1000);
	struct tm tm;
	char when[32] = "?";

	if (localtime_r(&t, &tm))
		strftime(when, sizeof when, at_ms - now_ms < 86400000 ? "%H:%M:%S" : "%Y-%m-%d %H:%M", &tm);
	snprintf(buf, len, "until %s", when);
	return buf;
}

/* What happened to the job, or how long it has been as it is. */
static void put_outcome(FILE *f, const struct jsched_result *r)
{
	switch (r->state) {
	case JSCHED_STATE_WAITING:
	case JSCHED_STATE_QUEUED:
		fputs("for ", f);
		put_duration(f, tool_now_ms() - r->submitted_ms);
		break;
	case JSCHED_STATE_RUNNING:
		fputs("for ", f);
		put_duration(f, tool_now_ms() - r->started_ms);
		break;
	case JSCHED_STATE_RETRYING: {
		char when[48];

		fprintf(f, "attempt %u %s (in ", (unsigned)r->attempt,
			until_text(when, sizeof when, r->next_attempt_ms, tool_now_ms()));
		put_duration(f, r->next_attempt_ms > tool_now_ms() ? r->next_attempt_ms - tool_now_ms() : 0);
		fputs("), after ", f);
		if (r->reason != NULL)
			fputs(r->reason, f);
		else
			fputs("a failure", f);
		break;
	}
	case JSCHED_STATE_SCHEDULED: {
		char when[48];

		fprintf(f, "%s (in ", until_text(when, sizeof when, r->not_before_ms, tool_now_ms()));
		put_duration(f, r->not_before_ms > tool_now_ms() ? r->not_before_ms - tool_now_ms() : 0);
		fputc(')', f);
		break;
	}
	case JSCHED_STATE_SUCCEEDED:
		if (r->result_omitted) /* too long for a line: `jsched result ID` prints it */
			fprintf(f, "value of %" PRIu64 " bytes, ", r->result_bytes);
		else if (r->value_json != NULL)
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
	printf("%-8" PRIu64 " %-10s %-5s ", r->id, r->held ? "held" : r->state_name != NULL ? r->state_name : "?",
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
	if (r->cause != NULL && strcmp(r->cause, "spawn") == 0)
		/* As a shell: 127 for a command not found, 126 for one found that could not
		 * start.  The reason begins with libuv's words for the errno. */
		return r->reason != NULL && strncmp(r->reason, "no such file or directory", 25) == 0
			       ? CLI_EXIT_NOT_FOUND : CLI_EXIT_CANNOT_RUN;
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
		if (r == 0 && (cmd->mem_bytes || cmd->pids || cmd->cpus > 0))
			r = jsched_spec_set_resources(spec, cmd->mem_bytes, cmd->pids, cmd->cpus);
		if (r == 0 && cmd->backend != NULL)
			r = jsched_spec_set_backend(spec, cmd->backend);
		for (size_t i = 0; r == 0 && i < cmd->n_needs; i++)
			r = jsched_spec_set_need(spec, cmd->need_name[i], cmd->need_count[i]);
	}
	if (r == 0 && cmd->name != NULL)
		r = jsched_spec_set_name(spec, cmd->name);
	if (r == 0 && cmd->key != NULL)
		r = jsched_spec_set_key(spec, cmd->key);
	if (r == 0 && cmd->array != NULL && (r = jsched_spec_set_array(spec, cmd->array)) == JSCHED_EINVAL) {
		fprintf(stderr, "jsched submit: --array '%s': not job array indices (1-100, 1-99:2 with a "
				"step of at least 1, 1,5,7 increasing, then %%N with N >= 1 if wanted)\n",
			cmd->array);
		jsched_spec_free(spec);
		return CLI_EXIT_USAGE;
	}
	if (r == 0 && cmd->array_replace)
		r = jsched_spec_set_array_replace(spec, true);
	if (r == 0 && cmd->on_exit != NULL)
		r = jsched_spec_set_on_exit(spec, cmd->on_exit);
	if (r == 0 && cmd->notify)
		r = jsched_spec_set_notify(spec, true);
	if (r == 0 && cmd->hook_timeout_ms > 0)
		r = jsched_spec_set_hook_timeout(spec, cmd->hook_timeout_ms);
	if (r == 0 && cmd->priority >= 0)
		r = jsched_spec_set_priority(spec, (enum jsched_priority)cmd->priority);
	if (r == 0 && cmd->deadline_ms > 0)
		r = jsched_spec_set_deadline_in(spec, cmd->deadline_ms);
	if (r == 0 && cmd->not_before_ms > 0)
		r = jsched_spec_set_not_before(spec, cmd->not_before_ms);
	if (r == 0 && cmd->retries > 0)
		r = jsched_spec_set_retry(spec, cmd->retries + 1, cmd->backoff_ms >= 0 ? cmd->backoff_ms : 1000,
					  cmd->backoff_factor > 0 ? cmd->backoff_factor : 2,
					  cmd->max_backoff_ms >= 0 ? cmd->max_backoff_ms : 3600000,
					  cmd->retry_on ? cmd->retry_on : JSCHED_RETRY_ON_FAILURE, cmd->retry_codes,
					  cmd->n_retry_codes);
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

/* record_json_whole: r's record as a jansson object (tool_record_json), with a result the
 * daemon left out of it for its size (result_omitted) fetched and put back as "value" (or
 * "detail", a failed handler's): what a script reading --json of wait or status expects.
 * A fetch that fails leaves the record as sent.  New reference, or NULL. */
static json_t *record_json_whole(struct jsched_conn *conn, const struct jsched_result *r)
{
	json_t *o = tool_record_json(r), *v = NULL;
	char *text;
	size_t len;
	if (o == NULL || !r->result_omitted || jsched_value(conn, r->id, &text, &len) < 0)
		return o;
	v = json_loadb(text, len, JSON_DECODE_ANY, NULL);
	jsched_free(text);
	if (v != NULL && json_object_set_new(o, r->state == JSCHED_STATE_SUCCEEDED ? "value" : "detail", v) == 0) {
		json_object_del(o, "result_bytes");
		json_object_del(o, "result_omitted");
	}
	return o;
}

/* results_json_whole: {"<key>": [records]} as tool_results_json, each through
 * record_json_whole.  New reference, or NULL. */
static json_t *results_json_whole(struct jsched_conn *conn, const char *key, struct jsched_result *const *items,
				  size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (json_array_append_new(arr, record_json_whole(conn, items[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr != NULL ? json_pack("{s:o}", key, arr) : NULL;
}

/* Print what the job left (output o, which the submit brought (taken; NULL: asked for
 * now), or its value) and its fate; return the job's exit status. */
static int report_finished(struct jsched_conn *conn, const struct cli_cmd *cmd, const struct jsched_result *r,
			   struct jsched_output *o)
{
	if (cmd->json) {
		jsched_output_free(o);
		tool_print_json(record_json_whole(conn, r), false);
		return tool_job_exit(r);
	}
	if (r->kind != NULL && strcmp(r->kind, "exec") == 0 && r->started_ms > 0) {
		if (o != NULL || jsched_output(conn, r->id, &o) == 0) {
			fwrite(o->out, 1, o->out_len, stdout);
			fflush(stdout);
			fwrite(o->err, 1, o->err_len, stderr);
			if (o->out_truncated || o->err_truncated)
				fprintf(stderr, "jsched: job %" PRIu64 "'s output was truncated by the daemon\n", r->id);
			jsched_output_free(o);
			o = NULL;
		}
	} else if (r->result_omitted) {
		/* Too large for the record: fetched alone, whole. */
		char *text;
		size_t len;
		if (jsched_value(conn, r->id, &text, &len) == 0) {
			fwrite(text, 1, len, stdout);
			putchar('\n');
			jsched_free(text);
		} else {
			fprintf(stderr, "jsched: job %" PRIu64 "'s result (%" PRIu64 " bytes): %s\n", r->id,
				r->result_bytes, jsched_error_message(conn));
		}
	} else if (r->value_json != NULL) {
		puts(r->value_json);
	}
	jsched_output_free(o); /* a command that never started: nothing to print */
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
	const char **refs = calloc(n, sizeof *refs); /* borrowed from arr */
	int rc = specs != NULL && ids != NULL && refs != NULL ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) {
		char *one = json_dumps(json_array_get(arr, i), JSON_COMPACT);
		if (one == NULL || jsched_spec_from_json(one, &specs[i]) < 0) {
			fprintf(stderr, "jsched submit: --batch %s: element %zu is not a job spec object\n", cmd->batch, i);
			rc = CLI_EXIT_USAGE;
		}
		free(one);
		if (rc == CLI_EXIT_OK)
			refs[i] = json_string_value(json_object_get(json_array_get(arr, i), "ref"));
	}
	int r = 0;
	struct jsched_results *l = NULL;
	if (rc == CLI_EXIT_OK && cmd->wait) {
		/* One request: the submit waits for the jobs and brings their records. */
		r = jsched_submit_batch_wait(conn, (const struct jsched_spec *const *)specs, n, JSCHED_WAIT_ALL,
					     cmd->timeout_ms, ids, &l);
		rc = r < 0 && (r != JSCHED_ETIMEOUT || l == NULL) ? tool_fail(conn, cmd, r) : CLI_EXIT_OK;
	} else if (rc == CLI_EXIT_OK) {
		r = jsched_submit_batch(conn, (const struct jsched_spec *const *)specs, n, ids);
		rc = r < 0 ? tool_fail(conn, cmd, r) : CLI_EXIT_OK;
	}
	if (rc == CLI_EXIT_OK && !cmd->wait && cmd->json) {
		/* The submit reply's shape: "jobs", and "refs" when a spec had one. */
		json_t *jids = json_array(), *jrefs = json_object();
		for (size_t i = 0; i < n; i++) {
			json_array_append_new(jids, json_integer((json_int_t)ids[i]));
			if (refs[i] != NULL)
				json_object_set_new(jrefs, refs[i], json_integer((json_int_t)ids[i]));
		}
		json_t *doc = json_pack("{s:o}", "jobs", jids);
		if (doc != NULL && json_object_size(jrefs) > 0)
			json_object_set(doc, "refs", jrefs);
		json_decref(jrefs);
		rc = tool_print_json(doc, false);
	}
	for (size_t i = 0; rc == CLI_EXIT_OK && !cmd->wait && !cmd->json && i < n; i++)
		printf("%" PRIu64 "\n", ids[i]);
	json_decref(arr);
	if (rc == CLI_EXIT_OK && cmd->wait) {
		if (cmd->json && l != NULL)
			tool_print_json(results_json_whole(conn, "jobs", l->items, l->count), false);
		for (size_t i = 0; l != NULL && i < l->count; i++) {
			if (!cmd->json)
				tool_print_record(l->items[i], false);
			if (l->items[i]->state != JSCHED_STATE_SUCCEEDED)
				rc = CLI_EXIT_FAILED;
		}
		if (r == JSCHED_ETIMEOUT) {
			fprintf(stderr, "jsched submit: the --timeout expired before the jobs ended\n");
			rc = CLI_EXIT_TIMEOUT;
		}
	}
	jsched_results_free(l);
	for (size_t i = 0; specs != NULL && i < n; i++)
		jsched_spec_free(specs[i]);
	free(specs);
	free(ids);
	free(refs);
	return rc;
}

static int follow_print(void *arg, unsigned stream, uint64_t offset, uint64_t dropped,
			const void *data, size_t len);

/* submit_follow: submit --follow: the new job's output as it comes (the same stream as
 * jsched output -f), then its record; *res is the job's result for the hooks. */
static int submit_follow(struct jsched_conn *conn, const struct cli_cmd *cmd, uint64_t id,
			 struct jsched_result **res)
{
	struct jsched_follow o = { 0, true, -1, 0, 0 };
	struct jsched_follow_end end;
	int r = jsched_output_follow(conn, id, &o, follow_print, (void *)(uintptr_t)cmd, &end);

	*res = NULL;
	if (r == 0)
		r = jsched_wait(conn, id, -1, res); /* the output ended with the job: at once */
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if ((*res)->state != JSCHED_STATE_SUCCEEDED &&
	    !((*res)->state == JSCHED_STATE_FAILED && (*res)->cause != NULL && strcmp((*res)->cause, "exit") == 0)) {
		fprintf(stderr, "jsched: job %" PRIu64 " %s: ", id,
			(*res)->state_name != NULL ? (*res)->state_name : "?");
		put_outcome(stderr, *res);
		fputc('\n', stderr);
	}
	return tool_job_exit(*res);
}

/* note_at: say on stderr what an --at TIME that was not plainly ahead did. */
static void note_at(const struct cli_cmd *cmd)
{
	time_t t = (time_t)(cmd->not_before_ms / 1000);
	struct tm tm;
	char when[64] = "?";

	if (localtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
	if (cmd->at_when == CLI_AT_TOMORROW)
		fprintf(stderr, "jsched submit: note: %s has passed today: the job is scheduled for "
				"tomorrow, %s\n", cmd->at, when);
	else
		fprintf(stderr, "jsched submit: note: --at %s is in the past: the job starts at once\n",
			cmd->at);
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
	bool existing = false;
	struct jsched_result *res = NULL;
	struct jsched_output *out = NULL;
	int r;
	if (cmd->wait && !cmd->follow) {
		/* One request: the submit waits for the job and brings its record and, to be
		 * printed, its output. */
		r = jsched_submit_wait(conn, spec, cmd->timeout_ms, &id, &existing, &res, cmd->json ? NULL : &out);
		if (r == JSCHED_ETIMEOUT && res == NULL)
			r = JSCHED_EDISCONNECTED; /* jsched_set_timeout's: nothing came back */
	} else {
		r = jsched_submit_ex(conn, spec, &id, &existing);
	}
	jsched_spec_free(spec);
	if (r < 0 && r != JSCHED_ETIMEOUT)
		return tool_fail(conn, cmd, r);
	if (existing && !cmd->json)
		fprintf(stderr, "jsched submit: job %" PRIu64 " already has key '%s': not submitted again\n",
			id, cmd->key);
	if (cmd->at != NULL && cmd->at_when != CLI_AT_FUTURE)
		note_at(cmd);
	if (!cmd->wait) {
		/* Its hooks: a process of ours waits for it, so that we can return now. */
		if ((cmd->on_exit != NULL || cmd->notify) && !existing && tool_hooks_background(cmd, id) < 0)
			fprintf(stderr, "jsched submit: job %" PRIu64 ": cannot start the process that runs "
					"its hooks (%s); run jsched hooks %" PRIu64 " once it has ended\n",
				id, strerror(errno), id);
		if (cmd->json)
			return tool_print_json(existing ? json_pack("{s:I,s:b}", "job", (json_int_t)id, "existing", 1)
						       : json_pack("{s:I}", "job", (json_int_t)id), false);
		printf("%" PRIu64 "\n", id);
		return CLI_EXIT_OK;
	}
	if (cmd->follow) {
		rc = submit_follow(conn, cmd, id, &res);
		goto hooks;
	}
	if (r == JSCHED_ETIMEOUT) {
		fprintf(stderr, "jsched submit: job %" PRIu64 " still %s after the --timeout\n", id,
			res != NULL && res->state_name != NULL ? res->state_name : "not done");
		jsched_result_free(res);
		jsched_output_free(out);
		return CLI_EXIT_TIMEOUT;
	}
	rc = report_finished(conn, cmd, res, out);
hooks:
	/* The hooks run after the job's report; they never change its exit status. */
	if (res != NULL && (cmd->on_exit != NULL || cmd->notify)) {
		fflush(stdout);
		tool_hooks_run(conn, res, isatty(STDERR_FILENO) ? STDERR_FILENO : -1);
	}
	jsched_result_free(res);
	return rc;
}

/* ---- wait, status, cancel --------------------------------------------------------------- */

/* Ids per status, wait or cancel request: the protocol's jobs_per_submit. */
enum { IDS_PER_REQUEST = 10000 };

/* The ids a wait, status or cancel names: its operands, then (--all) every job of the
 * caller's not final and (--name) every job of the caller's whose name matches, each once,
 * in id order after the operands. */
struct idset {
	uint64_t *ids;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* gather_ids: fill *set (free set->ids).  0, or an exit status after printing why. */
static int gather_ids(struct jsched_conn *conn, const struct cli_cmd *cmd, struct idset *set)
{
	struct jsched_results *l = NULL;
	uint64_t *sorted = NULL;
	size_t cap = cmd->n_ids;
	int r;

	set->n = 0;
	if (cmd->array_id) {
		/* --array ID: the array's elements (they are not in the list below). */
		if ((r = jsched_list_array(conn, cmd->array_id, 0, &l)) < 0)
			return tool_fail(conn, cmd, r);
		cap += l->count;
	} else if (cmd->mine || cmd->name_glob != NULL) {
		if ((r = jsched_list(conn, 0, NULL, false, &l)) < 0)
			return tool_fail(conn, cmd, r);
		cap += l->count;
	}
	set->ids = malloc((cap ? cap : 1) * sizeof(*set->ids));
	sorted = cmd->n_ids ? malloc(cmd->n_ids * sizeof(*sorted)) : NULL;
	if (set->ids == NULL || (cmd->n_ids && sorted == NULL)) {
		free(sorted);
		jsched_results_free(l);
		fprintf(stderr, "jsched: out of memory\n");
		return CLI_EXIT_FAILED;
	}
	set->n = cmd->n_ids;
	if (cmd->n_ids) {
		memcpy(set->ids, cmd->ids, cmd->n_ids * sizeof(*set->ids));
		memcpy(sorted, cmd->ids, cmd->n_ids * sizeof(*sorted));
		qsort(sorted, cmd->n_ids, sizeof(*sorted), cmp_u64);
	}
	for (size_t i = 0; l != NULL && i < l->count; i++) {
		const struct jsched_result *res = l->items[i];
		bool take = cmd->array_id != 0 || (cmd->mine && !jsched_state_final(res->state)) ||
			    (cmd->name_glob != NULL && res->name != NULL && fnmatch(cmd->name_glob, res->name, 0) == 0);
		if (take && (sorted == NULL || !bsearch(&res->id, sorted, cmd->n_ids, sizeof(*sorted), cmp_u64)))
			set->ids[set->n++] = res->id;
	}
	free(sorted);
	jsched_results_free(l);
	return 0;
}

/* The records of several requests' replies, in order: the lists own them. */
struct many {
	struct jsched_results **lists;
	size_t n_lists;
	struct jsched_result **items;
	size_t count;
};

/* many_add: keep l (stolen) and its records.  false when out of memory (l freed). */
static bool many_add(struct many *m, struct jsched_results *l)
{
	struct jsched_results **ls = realloc(m->lists, (m->n_lists + 1) * sizeof(*ls));
	struct jsched_result **it = ls ? realloc(m->items, (m->count + l->count + 1) * sizeof(*it)) : NULL;

	if (ls)
		m->lists = ls;
	if (!it) {
		jsched_results_free(l);
		return false;
	}
	m->items = it;
	m->lists[m->n_lists++] = l;
	if (l->count)
		memcpy(m->items + m->count, l->items, l->count * sizeof(*it));
	m->count += l->count;
	return true;
}

static void many_free(struct many *m)
{
	for (size_t i = 0; i < m->n_lists; i++)
		jsched_results_free(m->lists[i]);
	free(m->lists);
	free(m->items);
}

/* cmd_wait: see tool.h.  Ids go IDS_PER_REQUEST to a wait, one after the other, each with
 * what is left of the --timeout (once it ran out, the rest are polled for their records). */
int cmd_wait(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct idset set;
	struct many m = { 0 };
	int rc = gather_ids(conn, cmd, &set), r = 0;
	if (rc != 0)
		return rc;
	if (cmd->any && set.n > IDS_PER_REQUEST) {
		fprintf(stderr, "jsched wait: --any waits for at most %d jobs, not %zu\n", IDS_PER_REQUEST, set.n);
		free(set.ids);
		return CLI_EXIT_USAGE;
	}
	int64_t end = cmd->timeout_ms >= 0 ? tool_now_ms() + cmd->timeout_ms : -1;
	bool timed_out = false;
	for (size_t off = 0; off < set.n; off += IDS_PER_REQUEST) {
		size_t k = set.n - off < IDS_PER_REQUEST ? set.n - off : IDS_PER_REQUEST;
		int64_t left = end < 0 ? -1 : timed_out ? 0 : end - tool_now_ms();
		struct jsched_results *l = NULL;
		r = jsched_wait_many(conn, set.ids + off, k, cmd->any ? JSCHED_WAIT_ANY : JSCHED_WAIT_ALL,
				     left < 0 && end >= 0 ? 0 : left, &l);
		if (r < 0 && r != JSCHED_ETIMEOUT) {
			jsched_results_free(l);
			many_free(&m);
			free(set.ids);
			return tool_fail(conn, cmd, r);
		}
		timed_out |= r == JSCHED_ETIMEOUT;
		if (l != NULL && !many_add(&m, l)) {
			many_free(&m);
			free(set.ids);
			fprintf(stderr, "jsched: out of memory\n");
			return CLI_EXIT_FAILED;
		}
	}
	free(set.ids);
	bool any_ok = false;
	if (cmd->json)
		tool_print_json(results_json_whole(conn, "jobs", m.items, m.count), false);
	for (size_t i = 0; i < m.count; i++) {
		const struct jsched_result *res = m.items[i];
		if (!cmd->json)
			tool_print_record(res, false);
		if (jsched_state_final(res->state) && res->state != JSCHED_STATE_SUCCEEDED)
			rc = CLI_EXIT_FAILED;
		any_ok |= res->state == JSCHED_STATE_SUCCEEDED;
	}
	if (cmd->any)
		rc = any_ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	if (timed_out) {
		fprintf(stderr, "jsched wait: the --timeout expired first\n");
		rc = CLI_EXIT_TIMEOUT;
	} else if (m.count == 1 && m.items[0]->kind != NULL && strcmp(m.items[0]->kind, "exec") == 0) {
		rc = tool_job_exit(m.items[0]);
	}
	many_free(&m);
	return rc;
}

/* ---- the job table (ls, status) ----------------------------------------------------- */

/* array_text: an array's elements per state, "100: 60 succeeded, 4 running, 36 waiting"
 * (from its record's "array" member), or false if r is not an array. */
static bool array_text(char *buf, size_t len, const struct jsched_result *r)
{
	json_t *rec = r->json != NULL && strstr(r->json, "\"array\":{") ? json_loads(r->json, 0, NULL) : NULL;
	json_t *a = json_object_get(rec, "array"), *v;
	const json_t *states = json_object_get(a, "states");
	const char *k;
	size_t at;

	if (!json_is_object(states)) {
		json_decref(rec);
		return false;
	}
	at = (size_t)snprintf(buf, len, "%" JSON_INTEGER_FORMAT ":",
			      json_integer_value(json_object_get(a, "count")));
	json_object_foreach(json_object_get(a, "states"), k, v)
		if (json_integer_value(v) > 0 && at < len)
			at += (size_t)snprintf(buf + at, len - at, " %" JSON_INTEGER_FORMAT " %s",
					       json_integer_value(v), k);
	json_decref(rec);
	return true;
}

/* result_text: what became of a job, for the RESULT column: "exit 0", "signal 9",
 * "value 42", "cancel" (the cause), an array's counts, "until 14:30:00" while scheduled,
 * or "" while it has not ended. */
static const char *result_text(char *buf, size_t len, const struct jsched_result *r)
{
	buf[0] = '\0';
	if (array_text(buf, len, r))
		return buf;
	if (r->state == JSCHED_STATE_SCHEDULED)
		return until_text(buf, len, r->not_before_ms, tool_now_ms());
	if (r->state == JSCHED_STATE_RETRYING) {
		char when[48];

		snprintf(buf, len, "attempt %u %s", (unsigned)r->attempt,
			 until_text(when, sizeof when, r->next_attempt_ms, tool_now_ms()));
		return buf;
	}
	if (!jsched_state_final(r->state))
		return buf;
	if (r->signal > 0)
		snprintf(buf, len, "signal %d", r->signal);
	else if (r->exit_code >= 0)
		snprintf(buf, len, "exit %d", r->exit_code);
	else if (r->result_omitted && r->state == JSCHED_STATE_SUCCEEDED)
		snprintf(buf, len, "value of %" PRIu64 " bytes", r->result_bytes);
	else if (r->value_json != NULL)
		snprintf(buf, len, "value %s", r->value_json);
	else if (r->cause != NULL)
		snprintf(buf, len, "%s", r->cause);
	else
		snprintf(buf, len, "%s", r->state_name != NULL ? r->state_name : "?");
	return buf;
}

/* The numbers behind the time columns (ms; -1: not applicable). */
static int64_t age_ms(const struct jsched_result *r, int64_t now)
{
	return r->submitted_ms > 0 ? now - r->submitted_ms : -1;
}

static int64_t waited_ms(const struct jsched_result *r, int64_t now)
{
	if (r->submitted_ms <= 0)
		return -1;
	if (r->started_ms > 0)
		return r->started_ms - r->submitted_ms;
	return jsched_state_final(r->state) ? r->finished_ms - r->submitted_ms : now - r->submitted_ms;
}

static int64_t run_ms(const struct jsched_result *r, int64_t now)
{
	if (r->started_ms <= 0)
		return -1;
	return r->finished_ms > 0 ? r->finished_ms - r->started_ms : now - r->started_ms;
}

enum col { C_ID, C_STATE, C_KIND, C_CLIENT, C_UID, C_PRIORITY, C_NAME, C_AGE, C_WAITED, C_RUN, C_RESULT,
	   C_COMMAND, C_SUBMITTED, C_STARTED, C_FINISHED, C_COUNT };

/* The cell of column c for job r, in buf. */
static const char *cell(char *buf, size_t len, enum col c, const struct jsched_result *r, int64_t now)
{
	int64_t ms;
	buf[0] = '\0';
	switch (c) {
	case C_ID: snprintf(buf, len, "%" PRIu64, r->id); break;
	case C_STATE: snprintf(buf, len, "%s", r->held ? "held" : r->state_name != NULL ? r->state_name : "?"); break;
	case C_KIND: snprintf(buf, len, "%s", r->kind != NULL ? r->kind : "?"); break;
	case C_CLIENT: snprintf(buf, len, "%s", r->client != NULL ? r->client : "-"); break;
	case C_UID: snprintf(buf, len, "%u", (unsigned)r->uid); break;
	case C_PRIORITY: snprintf(buf, len, "%s", r->priority != NULL ? r->priority : "-"); break;
	case C_NAME: snprintf(buf, len, "%s", r->name != NULL ? r->name : ""); break;
	case C_AGE:
	case C_WAITED:
	case C_RUN:
		ms = c == C_AGE ? age_ms(r, now) : c == C_WAITED ? waited_ms(r, now) : run_ms(r, now);
		if (ms < 0)
			snprintf(buf, len, "-");
		else
			tool_duration(buf, len, ms);
		break;
	case C_RESULT: result_text(buf, len, r); break;
	case C_COMMAND:
		if (r->command != NULL)
			snprintf(buf, len, "%s", r->command);
		else if (r->fn != NULL)
			snprintf(buf, len, "--fn %s", r->fn);
		break;
	case C_SUBMITTED: tool_instant(buf, len, r->submitted_ms); break;
	case C_STARTED: tool_instant(buf, len, r->started_ms); break;
	case C_FINISHED: tool_instant(buf, len, r->finished_ms); break;
	default: break;
	}
	return buf;
}

/* The ordering key of a numeric column (-1 for "not applicable" sorts first). */
static int64_t num_key(enum col c, const struct jsched_result *r, int64_t now)
{
	switch (c) {
	case C_ID: return (int64_t)r->id;
	case C_UID: return r->uid;
	case C_AGE: return age_ms(r, now);
	case C_WAITED: return waited_ms(r, now);
	case C_RUN: return run_ms(r, now);
	case C_SUBMITTED: return r->submitted_ms;
	case C_STARTED: return r->started_ms;
	case C_FINISHED: return r->finished_ms;
	case C_STATE: return r->state;
	default: return INT64_MIN; /* a text column */
	}
}

struct sort_by {
	enum col col;
	int dir; /* 1 or -1 */
	int64_t now;
};

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct sort_by *s = arg;
	const struct jsched_result *x = *(struct jsched_result *const *)a, *y = *(struct jsched_result *const *)b;
	int64_t kx = num_key(s->col, x, s->now), ky = num_key(s->col, y, s->now);
	int c;
	if (kx != INT64_MIN) {
		c = (kx > ky) - (kx < ky);
	} else {
		char bx[512], by[512];
		c = strcmp(cell(bx, sizeof bx, s->col, x, s->now), cell(by, sizeof by, s->col, y, s->now));
	}
	if (c == 0)
		c = (x->id > y->id) - (x->id < y->id);
	return c * s->dir;
}

/* print_jobs: the records as a table of the columns in `columns` (a checked list). */
static int print_jobs(struct jsched_result *const *items, size_t n, const char *columns, bool headings)
{
	static const struct {
		double whint;
		int flags;
	} look[C_COUNT] = {
		[C_ID] = { 1, SCOLS_FL_RIGHT },	      [C_STATE] = { 1, 0 },
		[C_KIND] = { 1, 0 },		      [C_CLIENT] = { 0.1, 0 },
		[C_UID] = { 1, SCOLS_FL_RIGHT },      [C_PRIORITY] = { 1, 0 },
		[C_NAME] = { 0.1, 0 },		      [C_AGE] = { 1, SCOLS_FL_RIGHT },
		[C_WAITED] = { 1, SCOLS_FL_RIGHT },   [C_RUN] = { 1, SCOLS_FL_RIGHT },
		[C_RESULT] = { 0.1, 0 },	      [C_COMMAND] = { 0.5, SCOLS_FL_TRUNC },
		[C_SUBMITTED] = { 1, 0 },	      [C_STARTED] = { 1, 0 },
		[C_FINISHED] = { 1, 0 },
	};
	enum col cols[C_COUNT * 2];
	size_t ncols = 0;
	struct libscols_table *tb = tool_table_new();
	if (tb == NULL)
		return CLI_EXIT_FAILED;
	scols_table_enable_noheadings(tb, !headings);
	for (const char *s = columns; *s != '\0' && ncols < sizeof cols / sizeof cols[0];) {
		size_t len = strcspn(s, ",");
		int c = cli_ls_column(s, len);
		char title[32];
		snprintf(title, sizeof title, "%s", cli_ls_columns[c]);
		for (char *t = title; *t != '\0'; t++)
			*t = (char)(*t >= 'a' && *t <= 'z' ? *t - 'a' + 'A' : *t);
		if (tool_table_column(tb, title, look[c].whint, look[c].flags) == NULL)
			goto oom;
		cols[ncols++] = (enum col)c;
		s += len + (s[len] == ',');
	}
	int64_t now = tool_now_ms();
	for (size_t i = 0; i < n; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		if (ln == NULL)
			goto oom;
		for (size_t k = 0; k < ncols; k++) {
			char buf[512];
			if (scols_line_set_data(ln, k, cell(buf, sizeof buf, cols[k], items[i], now)) != 0)
				goto oom;
		}
	}
	return tool_table_print(tb);
oom:
	scols_unref_table(tb);
	fprintf(stderr, "jsched: out of memory\n");
	return CLI_EXIT_FAILED;
}

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
	int r = cmd->array_id ? jsched_list_array(conn, cmd->array_id, mask, &l)
			      : jsched_list(conn, mask, cmd->client, cmd->all, &l);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	/* --name filters here: the protocol's list has no name filter. */
	size_t n = 0;
	for (size_t i = 0; i < l->count; i++)
		if (cmd->name_glob == NULL || (l->items[i]->name != NULL && fnmatch(cmd->name_glob, l->items[i]->name, 0) == 0))
			l->items[n++] = l->items[i];
		else
			jsched_result_free(l->items[i]);
	l->count = n;
	struct jsched_result **show = l->items;
	size_t shown = n;
	if (cmd->sort != NULL) {
		bool desc = cmd->sort[0] == '-';
		struct sort_by by = { (enum col)cli_ls_column(cmd->sort + desc, strlen(cmd->sort + desc)), desc ? -1 : 1,
				      tool_now_ms() };
		qsort_r(l->items, n, sizeof *l->items, cmp_rows, &by);
		if (cmd->limit > 0 && n > (size_t)cmd->limit)
			shown = (size_t)cmd->limit; /* the first of the order asked for */
	} else if (cmd->limit > 0 && n > (size_t)cmd->limit) {
		shown = (size_t)cmd->limit; /* the newest, still in id order */
		show = l->items + (n - shown);
	}
	size_t more = n - shown;
	int rc = CLI_EXIT_OK;
	if (cmd->json)
		rc = tool_print_json(tool_results_json("jobs", show, shown, (long)more), false);
	else if (shown > 0)
		rc = print_jobs(show, shown, cmd->columns != NULL ? cmd->columns : cli_ls_default_columns, !cmd->no_headings);
	if (!cmd->json && more > 0)
		fprintf(stderr, "jsched ls: %zu more not shown (the %s); --limit 0 shows all\n", more,
			cmd->sort != NULL ? "rest of the order" : "older ones");
	jsched_results_free(l);
	return rc;
}

/* put_str: "  KEY        value" for a string member of rec, nothing if it has none. */
static void put_str(const json_t *rec, const char *key)
{
	const char *v = json_string_value(json_object_get(rec, key));
	if (v != NULL)
		printf("  %-10s %s\n", key, v);
}

/* print_long: a record with its spec (status -l), every member a line. */
static void print_long(const json_t *rec)
{
	const char *name = json_string_value(json_object_get(rec, "name"));
	printf("job %" JSON_INTEGER_FORMAT "%s%s%s\n", json_integer_value(json_object_get(rec, "job")),
	       name != NULL ? " (" : "", name != NULL ? name : "", name != NULL ? ")" : "");
	const json_t *v;
	put_str(rec, "state");
	put_str(rec, "kind");
	const char *client = json_string_value(json_object_get(rec, "client"));
	printf("  %-10s %s (uid %" JSON_INTEGER_FORMAT ")\n", "client", client != NULL ? client : "?",
	       json_integer_value(json_object_get(rec, "uid")));
	put_str(rec, "priority");
	put_str(rec, "fn");
	put_str(rec, "cwd");
	/* argv as JSON: every word exactly, spaces and quotes included. */
	if ((v = json_object_get(rec, "argv")) != NULL) {
		char *t = json_dumps(v, JSON_COMPACT);
		printf("  %-10s %s\n", "argv", t != NULL ? t : "?");
		free(t);
	}
	if ((v = json_object_get(rec, "env_keys")) != NULL) {
		/* Folded to the terminal (80 columns when not one), under the label. */
		size_t width = tool_term_width(), col = 13;
		printf("  %-10s", "env keys");
		size_t i;
		const json_t *k;
		json_array_foreach(v, i, k) {
			size_t len = strlen(json_string_value(k));
			if (col > 13 && col + 1 + len > (width > 0 ? width : 80)) {
				printf("\n  %-10s", "");
				col = 13;
			}
			printf(" %s", json_string_value(k));
			col += 1 + len;
		}
		putchar('\n');
	}
	static const char *const times[] = { "submitted_ms", "started_ms", "finished_ms", NULL };
	for (size_t i = 0; times[i] != NULL; i++) {
		int64_t at = json_integer_value(json_object_get(rec, times[i]));
		time_t secs = (time_t)(at / 1000);
		struct tm tm;
		char when[32];
		printf("  %-10.*s ", (int)(strlen(times[i]) - 3), times[i]);
		if (at > 0 && localtime_r(&secs, &tm) != NULL && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm) > 0)
			printf("%s.%03d\n", when, (int)(at % 1000));
		else
			puts("-");
	}
	static const struct {
		const char *key, *label;
	} rest[] = { { "exit_code", "exit code" }, { "signal", "signal" }, { "value", "value" },
		     { "args", "args" }, { "after", "after" }, { "any_of", "any of" },
		     { "stdin_bytes", "stdin" }, { "timeout_ms", "time limit" }, { NULL, NULL } };
	for (size_t i = 0; rest[i].key != NULL; i++) {
		if ((v = json_object_get(rec, rest[i].key)) == NULL)
			continue;
		char buf[32];
		if (strcmp(rest[i].key, "timeout_ms") == 0) {
			printf("  %-10s %s\n", rest[i].label, tool_duration(buf, sizeof buf, json_integer_value(v)));
		} else if (strcmp(rest[i].key, "stdin_bytes") == 0) {
			printf("  %-10s %" JSON_INTEGER_FORMAT " bytes\n", rest[i].label, json_integer_value(v));
		} else {
			char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			printf("  %-10s %s\n", rest[i].label, t != NULL ? t : "?");
			free(t);
		}
	}
	const char *cause = json_string_value(json_object_get(rec, "cause"));
	const char *reason = json_string_value(json_object_get(rec, "reason"));
	if (cause != NULL)
		printf("  %-10s %s: %s\n", "cause", cause, reason != NULL ? reason : "");
}

/* status_request: ask for the records of ids (with the spec when detail), through the
 * generic request (the library's status call has no detail).  0 and *out (a JSON array of
 * records, new), or the error. */
static int status_request(struct jsched_conn *conn, const uint64_t *ids, size_t n, bool detail, json_t **out)
{
	json_t *req = json_pack("{s:s, s:[], s:b}", "op", "status", "jobs", "detail", detail);
	for (size_t i = 0; req != NULL && i < n; i++)
		json_array_append_new(json_object_get(req, "jobs"), json_integer((json_int_t)ids[i]));
	char *text = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (text == NULL)
		return JSCHED_ENOMEM;
	char *reply = NULL;
	int r = jsched_request(conn, text, &reply);
	free(text);
	if (r < 0)
		return r;
	json_t *v = json_loads(reply, 0, NULL);
	jsched_free(reply);
	*out = json_incref(json_object_get(v, "jobs"));
	json_decref(v);
	return *out != NULL ? 0 : JSCHED_EPROTOCOL;
}

/* status_chunk: the records of ids[0..n) (reordered: bad ids are dropped with a line
 * each) into *l or, with -l, appended to recs.  Returns the worst exit status, or -1 - the
 * exit status of a failure that is not about one id. */
static int status_chunk(struct jsched_conn *conn, const struct cli_cmd *cmd, uint64_t *ids, size_t n,
			struct jsched_results **l, json_t *recs)
{
	int rc = CLI_EXIT_OK;
	json_t *got = NULL;
	*l = NULL;
	while (n > 0) {
		int r = cmd->longform ? status_request(conn, ids, n, true, &got) : jsched_status_many(conn, ids, n, l);
		if (r == 0)
			break;
		const char *field = jsched_error_field(conn);
		size_t bad;
		if (field == NULL || sscanf(field, "jobs[%zu]", &bad) != 1 || bad >= n)
			return -1 - tool_fail(conn, cmd, r);
		const char *code = jsched_error_code(conn), *msg = jsched_error_message(conn);
		fprintf(stderr, "jsched status: %" PRIu64 ": %s: %s\n", ids[bad], code != NULL ? code : jsched_err_name(r),
			msg != NULL ? msg : jsched_strerror(r));
		int e = tool_exit_of(r);
		if (rc == CLI_EXIT_OK || e > rc)
			rc = e;
		memmove(ids + bad, ids + bad + 1, (n - bad - 1) * sizeof ids[0]);
		n--;
	}
	if (got != NULL)
		json_array_extend(recs, got);
	json_decref(got);
	return rc;
}

/* cmd_status: see tool.h.  One bad id fails a status request whole (the protocol's rule);
 * the tool says so for that id in a line of its own and asks again for the others.  Ids
 * go IDS_PER_REQUEST to a request. */
int cmd_status(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct idset set;
	struct many m = { 0 };
	json_t *recs = json_array();
	int rc = gather_ids(conn, cmd, &set);
	if (rc != 0) {
		json_decref(recs);
		return rc;
	}
	for (size_t off = 0; off < set.n; off += IDS_PER_REQUEST) {
		size_t k = set.n - off < IDS_PER_REQUEST ? set.n - off : IDS_PER_REQUEST;
		struct jsched_results *l;
		int e = status_chunk(conn, cmd, set.ids + off, k, &l, recs);
		if (e < 0) {
			many_free(&m);
			json_decref(recs);
			free(set.ids);
			return -1 - e;
		}
		if (rc == CLI_EXIT_OK || e > rc)
			rc = e;
		if (l != NULL && !many_add(&m, l)) {
			rc = CLI_EXIT_FAILED;
			fprintf(stderr, "jsched: out of memory\n");
			break;
		}
	}
	free(set.ids);
	if (cmd->longform) {
		size_t i;
		json_t *rec;
		if (cmd->json)
			tool_print_json(json_pack("{s:O}", "jobs", recs), false);
		else
			json_array_foreach(recs, i, rec) {
				if (i > 0)
					putchar('\n');
				print_long(rec);
			}
	} else if (m.count > 0 || cmd->json) {
		if (cmd->json)
			tool_print_json(results_json_whole(conn, "jobs", m.items, m.count), false);
		else
			print_jobs(m.items, m.count, cli_ls_default_columns, true);
	}
	json_decref(recs);
	many_free(&m);
	return rc;
}

/* cmd_cancel: see tool.h.  Ids go IDS_PER_REQUEST to a request. */
int cmd_cancel(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct idset set;
	struct many m = { 0 }, *l = &m;
	int r = gather_ids(conn, cmd, &set);
	if (r != 0)
		return r;
	for (size_t off = 0; off < set.n; off += IDS_PER_REQUEST) {
		size_t k = set.n - off < IDS_PER_REQUEST ? set.n - off : IDS_PER_REQUEST;
		struct jsched_results *one;
		if ((r = jsched_cancel_many(conn, set.ids + off, k, &one)) < 0) {
			many_free(&m);
			free(set.ids);
			return tool_fail(conn, cmd, r);
		}
		if (!many_add(&m, one)) {
			many_free(&m);
			free(set.ids);
			fprintf(stderr, "jsched: out of memory\n");
			return CLI_EXIT_FAILED;
		}
	}
	free(set.ids);
	if (cmd->json) {
		r = tool_print_json(tool_results_json("jobs", l->items, l->count, -1), false);
		many_free(&m);
		return r;
	}
	for (size_t i = 0; i < l->count; i++) {
		const struct jsched_result *res = l->items[i];
		printf("%-8" PRIu64 " %s%s\n", res->id, res->state_name != NULL ? res->state_name : "?",
		       res->cancelling ? " (asked to stop)"
		       : res->state != JSCHED_STATE_CANCELLED && jsched_state_final(res->state) ? " (had already ended)"
											       : "");
	}
	many_free(&m);
	return CLI_EXIT_OK;
}

/* ---- output ----------------------------------------------------------------------------- */

/* follow_print: jsched output -f / --merged / --tail: one piece to stdout (or stderr),
 * the marker where the daemon dropped bytes. */
static int follow_print(void *arg, unsigned stream, uint64_t offset, uint64_t dropped,
			const void *data, size_t len)
{
	const struct cli_cmd *cmd = arg;
	FILE *to = stream == JSCHED_STDERR && !cmd->merged ? stderr : stdout;

	(void)offset;
	if (dropped)
		fprintf(to, "\n[jschedd: %" PRIu64 " bytes not kept]\n", dropped);
	fwrite(data, 1, len, to);
	fflush(to);
	return ferror(to) ? 1 : 0;
}

/* output_follow: cmd_output's streaming part. */
static int output_follow(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_follow o = { cmd->out_only ? JSCHED_STDOUT : cmd->err_only ? JSCHED_STDERR : 0,
				   cmd->follow, cmd->tail_lines, 0, 0 };
	struct jsched_follow_end end;
	int r = jsched_output_follow(conn, cmd->ids[0], &o, follow_print, (void *)(uintptr_t)cmd, &end);

	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (!end.complete)
		fprintf(stderr, "jsched output: job %" PRIu64 " has not ended: this is its output so far\n",
			cmd->ids[0]);
	if (cmd->follow)
		return strcmp(end.state, "succeeded") == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	return CLI_EXIT_OK;
}

/* cmd_output: see tool.h. */
int cmd_output(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	if (cmd->follow || cmd->merged || cmd->tail_lines >= 0) {
		if (cmd->json) {
			fprintf(stderr, "jsched output: --json prints the reply; it does not go with -f, "
				"--merged or --tail\n");
			return CLI_EXIT_USAGE;
		}
		return output_follow(conn, cmd);
	}
	if (cmd->json) {
		/* The reply as the protocol has it (base64 data), through the generic request. */
		char req[96], *reply = NULL;
		snprintf(req, sizeof req, "{\"op\":\"output\",\"job\":%" PRIu64 "}", cmd->ids[0]);
		int r = jsched_request(conn, req, &reply);
		if (r < 0)
			return tool_fail(conn, cmd, r);
		json_t *v = json_loads(reply, 0, NULL);
		jsched_free(reply);
		json_object_del(v, "id");
		json_object_del(v, "ok");
		return tool_print_json(v, false);
	}
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
		fprintf(stderr, "jsched output: the daemon kept only the beginning and the end of the %s\n",
			o->out_truncated && o->err_truncated ? "stdout and stderr" : o->out_truncated ? "stdout" : "stderr");
	if (!o->complete)
		fprintf(stderr, "jsched output: job %" PRIu64 " has not ended: this is its output so far\n",
			cmd->ids[0]);
	jsched_output_free(o);
	return CLI_EXIT_OK;
}

/* cmd_result: see tool.h. */
int cmd_result(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	char *text;
	size_t len;
	int r = jsched_value(conn, cmd->ids[0], &text, &len);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	fwrite(text, 1, len, stdout);
	putchar('\n');
	jsched_free(text);
	return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* ---- watch ----------------------------------------------------------------------------------- */

/* cmd_watch: see tool.h. */
int cmd_watch(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	uint64_t last;
	int r = jsched_watch(conn, cmd->since, cmd->instance, &last);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	if (cmd->json)
		/* What a later --since --instance needs, first: the watch reply's members. */
		tool_print_json(json_pack("{s:s, s:I}", "instance", jsched_server_instance(conn), "seq",
					  (json_int_t)last), false);
	else
		fprintf(stderr, "jsched watch: watching (instance %s, last event %" PRIu64 ")\n",
			jsched_server_instance(conn), last);
	fflush(stdout);
	fflush(stderr);
	bool draining = false; /* a graceful shutdown was announced: its jobs still end */
	for (long n = 0; cmd->count == 0 || n < cmd->count; n++) {
		struct jsched_event *ev;
		r = jsched_next_event(conn, -1, &ev);
		if (r == JSCHED_EDISCONNECTED && draining)
			return CLI_EXIT_OK; /* the daemon exited once the last job had ended */
		if (r < 0)
			return tool_fail(conn, cmd, r);
		if (cmd->json) {
			tool_print_json(json_loads(ev->json, 0, NULL), false);
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
		/* After a graceful shutdown's event, the remaining jobs' events still come. */
		draining |= shutdown && ev->mode != NULL && strcmp(ev->mode, "graceful") == 0;
		jsched_event_free(ev);
		if (shutdown && !draining)
			break;
	}
	return CLI_EXIT_OK;
}
