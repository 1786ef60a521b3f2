/* test_tool_daemon.c: the jsched tool against a real jschedd (started by the daemon tests'
 * harness, tests/daemon/harness.h): an exec job's output and exit status through
 * `submit --wait`, the caller's working directory and environment, a graph through
 * --batch, cancel of a running job, ls, metrics --json, and `admin shutdown` ending the
 * daemon.  test_tool covers the tool's every message against a scripted fake; this one
 * proves the two real programs agree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

#define JSCHED_BIN JSCHED_BUILD_DIR "/bin/jsched"

static struct jdt jd;
static char out[16384], err[8192];

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, size - 1, f) : 0;
	buf[n] = '\0';
	if (f != NULL)
		fclose(f);
}

/* sh_line: run a shell command line (a %s in it is the daemon's socket) with its stdout
 * in out and its stderr in err; returns its exit status. */
static int sh_line(const char *line)
{
	char o[400], e[400], cmd[9000];
	snprintf(o, sizeof o, "%s/out", jd.dir);
	snprintf(e, sizeof e, "%s/err", jd.dir);
	const char *hole = strstr(line, "%s");
	if (hole != NULL)
		snprintf(cmd, sizeof cmd, "%.*s%s%s >%s 2>%s", (int)(hole - line), line, jd.sock, hole + 2, o, e);
	else
		snprintf(cmd, sizeof cmd, "%s >%s 2>%s", line, o, e);
	int status = system(cmd);
	slurp(o, out, sizeof out);
	slurp(e, err, sizeof err);
	unlink(o);
	unlink(e);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Run `[prefix] jsched args` as it stands (a %s in args is the socket); returns its exit
 * status, output in out and err. */
static int run_raw(const char *prefix, const char *args)
{
	char line[8192];
	snprintf(line, sizeof line, "%s %s %s", prefix, JSCHED_BIN, args);
	return sh_line(line);
}

/* Run `[prefix] jsched -s SOCK args`. */
static int run(const char *prefix, const char *args)
{
	char line[4096];
	snprintf(line, sizeof line, "-s %%s %s", args);
	return run_raw(prefix, line);
}

#define CONTAINS(hay, needle)                                              \
	do {                                                               \
		if (strstr(hay, needle) == NULL)                           \
			fail_msg("expected \"%s\" in:\n%s", needle, hay); \
	} while (0)

static void test_exec_through_the_tool(void **state)
{
	(void)state;
	assert_int_equal(run("", "submit --wait -- sh -c 'echo out; echo err >&2; exit 3'"), 3);
	assert_string_equal(out, "out\n");
	assert_string_equal(err, "err\n");
	assert_int_equal(run("cd /tmp && JSCHED_TOOL_VAR=seen", "submit --wait -- sh -c 'pwd; echo $JSCHED_TOOL_VAR'"),
			 0);
	assert_string_equal(out, "/tmp\nseen\n");
	assert_int_equal(run("echo piped |", "submit --wait --stdin - -- cat"), 0);
	assert_string_equal(out, "piped\n");
	assert_int_equal(run("", "submit --wait --fn echo --args '{\"x\": 1}'"), 0);
	assert_string_equal(out, "{\"x\":1}\n");
	/* A command that cannot start exits as in a shell: 127 not found, 126 not runnable. */
	assert_int_equal(run("", "submit --wait -- /nonexistent/command"), 127);
	CONTAINS(err, "(spawn)");
	char path[400], args[600];
	snprintf(path, sizeof path, "%s/not-executable", jd.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho never\n", f);
	fclose(f);
	snprintf(args, sizeof args, "submit --wait -- %s", path);
	assert_int_equal(run("", args), 126);
	unlink(path);
	/* No "--" needed when the command's first word is not an option; jsched's own
	 * options may follow the subcommand. */
	assert_int_equal(run_raw("", "submit --wait -s %s sh -c 'echo $0 $1' a b"), 0);
	assert_string_equal(out, "a b\n");
}

static void test_batch_cancel_ls(void **state)
{
	(void)state;
	char path[400], args[600];
	snprintf(path, sizeof path, "%s/graph.json", jd.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[{\"ref\": \"a\", \"kind\": \"call\", \"fn\": \"echo\", \"args\": 1},"
	      " {\"ref\": \"b\", \"kind\": \"call\", \"fn\": \"fail\", \"after\": [\"a\"]},"
	      " {\"kind\": \"call\", \"fn\": \"echo\", \"args\": 3, \"after\": [{\"ref\": \"b\", \"on\": \"failure\"}]}]",
	      f);
	fclose(f);
	snprintf(args, sizeof args, "submit --batch %s --wait", path);
	assert_int_equal(run("", args), 1); /* b failed, as written */
	CONTAINS(out, "succeeded  call  value 1");
	CONTAINS(out, "failed     call");
	CONTAINS(out, "succeeded  call  value 3");
	unlink(path);

	/* A running command, cancelled: its wait says so. */
	assert_int_equal(run("", "submit --name sleeper -- sleep 30"), 0);
	unsigned long long id = strtoull(out, NULL, 10);
	assert_true(id > 0);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "wait --timeout 50ms %llu", id);
	assert_int_equal(run("", cmd), 75); /* still running */
	snprintf(cmd, sizeof cmd, "cancel %llu", id);
	assert_int_equal(run("", cmd), 0);
	snprintf(cmd, sizeof cmd, "wait %llu", id);
	run("", cmd);
	CONTAINS(out, "cancelled");
	assert_int_equal(run("", "ls --state cancelled"), 0);
	CONTAINS(out, "sleeper");
}

/* column_at: the offset of column `title` in the header line of table text t, or -1. */
static long column_at(const char *t, const char *title)
{
	size_t head = strcspn(t, "\n");
	const char *p = strstr(t, title);
	return p != NULL && (size_t)(p - t) < head ? (long)(p - t) : -1;
}

/* check_aligned: every line of table t is at most width columns, and in every row the
 * cell of a left-aligned column starts where its title does (a space before it). */
static void check_aligned(const char *t, const char *title, size_t width)
{
	long at = column_at(t, title);
	if (at < 0)
		fail_msg("no column %s in:\n%s", title, t);
	for (const char *line = t; *line != '\0';) {
		size_t len = strcspn(line, "\n");
		if (width > 0 && len > width)
			fail_msg("a line of %zu columns (at most %zu):\n%s", len, width, t);
		if ((size_t)at < len && (line[at] == ' ' || (at > 0 && line[at - 1] != ' ')))
			fail_msg("column %s does not start at %ld in \"%.*s\":\n%s", title, at, (int)len, line, t);
		line += len + (line[len] == '\n');
	}
}

static void test_listings(void **state)
{
	(void)state;
	/* Jobs of two clients, one with a long name, and a command longer than the screen. */
	assert_int_equal(run("", "submit --wait --name lister-a --fn echo --args 41"), 0);
	assert_int_equal(run("", "-C nightly-ci-pipeline-west submit --wait --name lister-b -- sh -c 'exit 4'"), 4);
	assert_int_equal(run("cd / && JSCHED_LISTING_KEY=secret-value",
			     "submit --name lister-c --wait -- sh -c 'echo this command line goes on and on "
			     "and on and on and on well past the edge of any terminal'"),
			 0);
	assert_int_equal(run("COLUMNS=80", "ls --name 'lister-*'"), 0);
	CONTAINS(out, "ID ");
	CONTAINS(out, "COMMAND");
	CONTAINS(out, "nightly-ci-pipeline-west");
	CONTAINS(out, "--fn echo");
	CONTAINS(out, "value 41");
	CONTAINS(out, "exit 4");
	check_aligned(out, "STATE", 80);
	check_aligned(out, "CLIENT", 80);
	check_aligned(out, "COMMAND", 80);
	assert_null(strstr(out, "terminal")); /* the long command was shortened to fit */
	assert_int_equal(run("COLUMNS=200", "ls --name 'lister-*'"), 0);
	CONTAINS(out, "past the edge of any terminal");

	/* --limit: the newest N and how many more; --sort; -o; filters. */
	assert_int_equal(run("", "ls --name 'lister-*' --limit 2"), 0);
	assert_null(strstr(out, "lister-a"));
	CONTAINS(out, "lister-c");
	CONTAINS(err, "1 more not shown");
	assert_int_equal(run("", "ls --name 'lister-*' --sort -name --limit 1 -o name,result"), 0);
	assert_string_equal(out, "NAME     RESULT\nlister-c exit 0\n");
	assert_int_equal(run("", "ls --client nightly-ci-pipeline-west -o name"), 0);
	assert_string_equal(out, "NAME\nlister-b\n");
	assert_int_equal(run("", "ls --state succeeded --name 'lister-*' -o name"), 0);
	assert_string_equal(out, "NAME\nlister-a\nlister-c\n");
	assert_int_equal(run("", "ls --name 'lister-*' --json --limit 2"), 0);
	json_t *doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "jobs")), 2);
	assert_int_equal(json_integer_value(json_object_get(doc, "not_shown")), 1);
	json_t *rec = json_array_get(json_object_get(doc, "jobs"), 1);
	assert_string_equal(json_string_value(json_object_get(rec, "name")), "lister-c");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "command")), "sh -c 'echo this"));
	json_decref(doc);

	/* status: the jobs that exist and one line per id that does not; -l with the spec. */
	assert_int_equal(run("", "ls --name lister-a --json"), 0);
	doc = json_loads(out, 0, NULL);
	long a = (long)json_integer_value(json_object_get(json_array_get(json_object_get(doc, "jobs"), 0), "job"));
	json_decref(doc);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "status %ld 999999 %ld", a, a + 1);
	assert_int_equal(run("", cmd), 1);
	CONTAINS(out, "lister-a");
	CONTAINS(out, "lister-b");
	assert_string_equal(err, "jsched status: 999999: no_such_job: no job 999999\n");
	snprintf(cmd, sizeof cmd, "status -l %ld", a + 2);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "  argv       [\"sh\",\"-c\",\"echo this command line");
	CONTAINS(out, "  cwd        /\n");
	CONTAINS(out, "JSCHED_LISTING_KEY");
	assert_null(strstr(out, "secret-value")); /* names only, never values */
}

/* JSON from every command that prints, in the protocol's shapes. */
static void test_json_everywhere(void **state)
{
	(void)state;
	char path[400], args[600];
	assert_int_equal(run("", "submit --json --fn noop"), 0);
	json_t *v = json_loads(out, 0, NULL);
	assert_true(json_integer_value(json_object_get(v, "job")) > 0);
	json_decref(v);
	/* --key: the second submit prints the first job's id and says so. */
	assert_int_equal(run("", "submit --key tool-key --fn noop"), 0);
	char first[32];
	snprintf(first, sizeof first, "%.20s", out);
	assert_int_equal(run("", "submit --key tool-key --fn echo"), 0);
	assert_string_equal(out, first);
	CONTAINS(err, "already has key 'tool-key'");
	assert_int_equal(run("", "submit --json --key tool-key --fn noop"), 0);
	v = json_loads(out, 0, NULL);
	assert_true(json_is_true(json_object_get(v, "existing")));
	assert_int_equal(json_integer_value(json_object_get(v, "job")), strtoll(first, NULL, 10));
	json_decref(v);
	assert_int_equal(run("", "submit --key '' --fn noop"), 64);
	snprintf(path, sizeof path, "%s/refs.json", jd.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[{\"ref\": \"a\", \"kind\": \"call\", \"fn\": \"noop\"}, {\"kind\": \"call\", \"fn\": \"noop\", "
	      "\"after\": [\"a\"]}]", f);
	fclose(f);
	snprintf(args, sizeof args, "submit --batch %s --json", path);
	assert_int_equal(run("", args), 0);
	v = json_loads(out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(v, "jobs")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "refs"), "a")),
			 json_integer_value(json_array_get(json_object_get(v, "jobs"), 0)));
	json_decref(v);
	unlink(path);
	assert_int_equal(run("", "drain --json"), 0);
	v = json_loads(out, 0, NULL);
	assert_true(json_is_integer(json_object_get(v, "cancelled")));
	assert_true(json_is_integer(json_object_get(v, "cancelling")));
	json_decref(v);
	assert_int_equal(run("", "admin reload --json"), 0);
	v = json_loads(out, 0, NULL);
	assert_true(json_is_array(json_object_get(v, "applied")));
	json_decref(v);
	assert_int_equal(run("", "admin reload"), 0);
	assert_string_equal(out, "reloaded: nothing changed\n");
	/* Figures read as written: no 0.40000000000000002. */
	assert_int_equal(run("", "metrics --json"), 0);
	assert_null(strstr(out, "0000000"));
	/* watch --json: first what a later --since needs, then the events. */
	assert_int_equal(run("", "watch --json --since 0 -n 1"), 0);
	char *nl = strchr(out, '\n');
	assert_non_null(nl);
	*nl = '\0';
	v = json_loads(out, 0, NULL);
	assert_non_null(json_string_value(json_object_get(v, "instance")));
	assert_true(json_is_integer(json_object_get(v, "seq")));
	json_decref(v);
	v = json_loads(nl + 1, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(v, "event")), "job");
	json_decref(v);
	/* call: any request, the reply printed; a refusal too, with the refusal's status. */
	assert_int_equal(run("", "call ping"), 0);
	v = json_loads(out, 0, NULL);
	assert_true(json_is_true(json_object_get(v, "ok")));
	json_decref(v);
	assert_int_equal(run("", "call status '{\"job\": 999999}'"), 1);
	v = json_loads(out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "error"), "code")), "no_such_job");
	json_decref(v);
	assert_int_equal(run("", "call status '[1]'"), 64);
	CONTAINS(err, "not a JSON object");
}

/* Errors that say what is wrong. */
static void test_errors(void **state)
{
	(void)state;
	assert_int_equal(run_raw("", "-s /nonexistent-dir/j.sock ls"), 69);
	assert_string_equal(err, "jsched ls: no jschedd at /nonexistent-dir/j.sock: the directory /nonexistent-dir "
				 "does not exist (is jschedd running? see --socket)\n");
	char args[600];
	snprintf(args, sizeof args, "ls -s %s/nothing.sock", jd.dir);
	assert_int_equal(run_raw("", args), 69);
	CONTAINS(err, "nothing.sock: nothing is there");
}

/* shell: run script with bash, zsh or fish (-c), jsched on its PATH and $JSCHED_SOCKET the
 * test daemon's; 0 with out filled, or -1 when the shell is not installed. */
static int shell(const char *sh, const char *script)
{
	char check[64], line[8192];
	snprintf(check, sizeof check, "command -v %s >/dev/null 2>&1", sh);
	if (system(check) != 0)
		return -1;
	char path[400];
	snprintf(path, sizeof path, "%s/script", jd.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(script, f);
	fclose(f);
	snprintf(line, sizeof line, "PATH=%s/bin:$PATH JSCHED_SOCKET=%%s %s %s%s", JSCHED_BUILD_DIR, sh,
		 strcmp(sh, "zsh") == 0 ? "-f " : "", path);
	int st = sh_line(line);
	if (st != 0)
		fail_msg("%s exited %d: %s\n%s", sh, st, err, out);
	return 0;
}

/* The completions of each shell: commands, a command's options (from its --help), and
 * the ids of this user's jobs, from the daemon. */
static void test_completions(void **state)
{
	(void)state;
	assert_int_equal(run("", "submit --name completed-job --fn noop"), 0);
	char id[32];
	snprintf(id, sizeof id, "%.*s", (int)strcspn(out, "\n"), out);
	char script[2048], want[64];
	snprintf(want, sizeof want, "\n%s\n", id);
	snprintf(script, sizeof script,
		 "source %s/completions/jsched.bash\n"
		 "COMP_WORDS=(jsched st); COMP_CWORD=1; _jsched; printf '%%s\\n' \"${COMPREPLY[@]}\"; echo --\n"
		 "COMP_WORDS=(jsched ls --li); COMP_CWORD=2; _jsched; printf '%%s\\n' \"${COMPREPLY[@]}\"; echo --\n"
		 "COMP_WORDS=(jsched -s \"$JSCHED_SOCKET\" status ''); COMP_CWORD=4; _jsched; echo; "
		 "printf '%%s\\n' \"${COMPREPLY[@]}\"\n",
		 JSCHED_SRCDIR);
	assert_int_equal(shell("bash", script), 0);
	CONTAINS(out, "status\n");
	CONTAINS(out, "--limit\n");
	CONTAINS(out, want);

	snprintf(script, sizeof script,
		 "source %s/completions/jsched.fish\n"
		 "complete -C 'jsched st'; echo --; complete -C 'jsched ls --li'; echo --; complete -C 'jsched status '\n",
		 JSCHED_SRCDIR);
	if (shell("fish", script) == 0) {
		CONTAINS(out, "status\n");
		CONTAINS(out, "--limit\n");
		snprintf(want, sizeof want, "\n%s\t", id);
		CONTAINS(out, want);
		CONTAINS(out, "completed-job");
	} else {
		fprintf(stderr, "skipped: fish is not installed\n");
	}

	snprintf(script, sizeof script,
		 "autoload -Uz compinit && compinit -u -D\n"
		 "source %s/completions/_jsched\n"
		 "words=(jsched status ''); CURRENT=3; _jsched_ids; echo --; _jsched_options ls\n",
		 JSCHED_SRCDIR);
	if (shell("zsh", script) == 0) {
		snprintf(want, sizeof want, "%s:succeeded completed-job\n", id);
		CONTAINS(out, want);
		CONTAINS(out, "--limit\n");
	} else {
		fprintf(stderr, "skipped: zsh is not installed\n");
	}
}

static void test_metrics_and_shutdown(void **state)
{
	(void)state;
	assert_int_equal(run("", "metrics --json"), 0);
	json_t *doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_true(json_integer_value(json_object_get(json_object_get(doc, "jobs"), "submitted")) >= 5);
	json_decref(doc);
	assert_int_equal(run("", "top --once"), 0);
	CONTAINS(out, "CLIENT");
	assert_int_equal(run("", "status 999999"), 1);
	CONTAINS(err, "no_such_job");
	/* A client configured before it ever connected gets its settings when it does; the
	 * weight goes as high as the config's. */
	assert_int_equal(run("", "admin set-client not-yet-seen --weight 1000000 --overflow drop_oldest"), 0);
	CONTAINS(out, "client not-yet-seen: weight 1000000");
	assert_int_equal(run("", "-C not-yet-seen submit --wait --fn noop"), 0);
	assert_int_equal(run("", "metrics --json"), 0);
	doc = json_loads(out, 0, NULL);
	size_t i;
	json_t *cl, *seen = NULL;
	json_array_foreach(json_object_get(doc, "clients"), i, cl)
		if (strcmp(json_string_value(json_object_get(cl, "name")), "not-yet-seen") == 0)
			seen = cl;
	assert_non_null(seen);
	assert_int_equal(json_integer_value(json_object_get(seen, "weight")), 1000000);
	assert_string_equal(json_string_value(json_object_get(seen, "overflow")), "drop_oldest");
	json_decref(doc);
	assert_int_equal(run("", "admin set-client not-yet-seen --weight 1000001"), 1);
	CONTAINS(err, "weight");

	/* A graceful shutdown with a job still running: the tool keeps working (ls,
	 * status, cancel) until the last job ends, submits are refused, and a watcher
	 * sees the shutdown and then the last job's end, and exits 0 with the daemon. */
	assert_int_equal(run("", "submit --name the-last-one -- sleep 30"), 0);
	unsigned long long last = strtoull(out, NULL, 10);
	char line[1200], watch_out[400], watch_rc[400];
	snprintf(watch_out, sizeof watch_out, "%s/watch.out", jd.dir);
	snprintf(watch_rc, sizeof watch_rc, "%s/watch.rc", jd.dir);
	snprintf(line, sizeof line, "(%s -s %s watch > %s 2>&1; echo $? > %s) &", JSCHED_BIN, jd.sock, watch_out,
		 watch_rc);
	assert_int_equal(system(line), 0);
	bool watching = false;
	for (int k = 0; k < 400 && !watching; k++) {
		assert_int_equal(run("", "metrics --json"), 0);
		doc = json_loads(out, 0, NULL);
		watching = json_integer_value(json_object_get(json_object_get(doc, "connections"), "watching")) >= 1;
		json_decref(doc);
		if (!watching)
			jdt_sleep_ms(25);
	}
	assert_true(watching);
	assert_int_equal(run("", "admin shutdown"), 0);
	assert_int_equal(run("", "ls --name the-last-one -o state"), 0);
	assert_string_equal(out, "STATE\nrunning\n");
	assert_int_equal(run("", "submit --fn noop"), 1);
	CONTAINS(err, "shutting_down");
	snprintf(line, sizeof line, "cancel %llu", last);
	assert_int_equal(run("", line), 0);
	assert_int_equal(jdt_wait_exit(&jd, 20000), 0);
	assert_int_equal(run("", "ls"), 69);
	for (int k = 0; k < 400 && access(watch_rc, F_OK) != 0; k++)
		jdt_sleep_ms(25);
	slurp(watch_rc, out, sizeof out);
	assert_string_equal(out, "0\n");
	slurp(watch_out, out, sizeof out);
	CONTAINS(out, "shutdown graceful");
	CONTAINS(out, "cancelled");
	CONTAINS(out, "the-last-one");
}

/* pause, hold, release and resume through the tool: a paused client's job stays queued
 * and its client shows "(paused)" in metrics; a held job shows "held" in ls; released and
 * resumed, both run. */
static void test_pause_hold(void **state)
{
	(void)state;
	char cmd[96];
	assert_int_equal(run("", "-C pz pause"), 0);
	CONTAINS(out, "paused pz");
	assert_int_equal(run("", "-C pz submit --fn noop"), 0);
	unsigned long long a = strtoull(out, NULL, 10);
	assert_int_equal(run("", "-C pz submit --fn noop"), 0);
	unsigned long long b = strtoull(out, NULL, 10);
	snprintf(cmd, sizeof cmd, "hold %llu", b);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "held");
	assert_int_equal(run("", "metrics"), 0);
	CONTAINS(out, "pz (paused)");
	assert_int_equal(run("", "ls --client pz"), 0);
	CONTAINS(out, "held");
	CONTAINS(out, "queued");
	assert_int_equal(run("", "-C pz resume"), 0);
	snprintf(cmd, sizeof cmd, "wait %llu", a);
	assert_int_equal(run("", cmd), 0);
	snprintf(cmd, sizeof cmd, "release %llu", b);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "released");
	snprintf(cmd, sizeof cmd, "wait %llu", b);
	assert_int_equal(run("", cmd), 0);
	snprintf(cmd, sizeof cmd, "hold %llu", b); /* not queued any more: exit 1, said so */
	assert_int_equal(run("", cmd), 1);
	CONTAINS(out, "not queued");
}

/* --delay and --at through the tool: a delayed job is scheduled (status says until
 * when, ls --state scheduled lists it, metrics counts it), can be held and cancelled; an
 * --at already past says so and starts the job at once; a time of day already past
 * today is tomorrow's, and the tool says so. */
static void test_delay_at(void **state)
{
	(void)state;
	char cmd[128];
	assert_int_equal(run("", "submit --delay 1h --name later --fn noop"), 0);
	unsigned long long id = strtoull(out, NULL, 10);
	snprintf(cmd, sizeof cmd, "status %llu", id);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "scheduled");
	CONTAINS(out, "until ");
	assert_int_equal(run("", "ls --state scheduled"), 0);
	CONTAINS(out, "later");
	assert_int_equal(run("", "metrics"), 0);
	CONTAINS(out, "scheduled 1");
	snprintf(cmd, sizeof cmd, "hold %llu", id);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "held");
	snprintf(cmd, sizeof cmd, "cancel %llu", id);
	assert_int_equal(run("", cmd), 0);
	snprintf(cmd, sizeof cmd, "wait %llu", id);
	assert_int_equal(run("", cmd), 1);
	CONTAINS(out, "cancelled");

	assert_int_equal(run("", "submit --at 2020-01-01T00:00 --wait --fn noop"), 0);
	CONTAINS(err, "is in the past: the job starts at once");

	time_t now = time(NULL), before = now - 120;
	struct tm tn, tb;
	localtime_r(&now, &tn);
	localtime_r(&before, &tb);
	if (tn.tm_yday == tb.tm_yday) {
		snprintf(cmd, sizeof cmd, "submit --at %02d:%02d --fn noop", tb.tm_hour, tb.tm_min);
		assert_int_equal(run("", cmd), 0);
		CONTAINS(err, "has passed today: the job is scheduled for tomorrow");
		id = strtoull(out, NULL, 10);
		snprintf(cmd, sizeof cmd, "cancel %llu", id);
		assert_int_equal(run("", cmd), 0);
	} else {
		printf("skipped the --at HH:MM check: two minutes ago was yesterday\n");
	}
	assert_int_equal(run("", "submit --at 24:00 --fn noop"), 64);
	CONTAINS(err, "--at: '24:00' is not a time");
}

/* --retries through the tool: the attempts in status, the exit status of the last one,
 * and jsched retry making another attempt of the same id. */
static void test_retries(void **state)
{
	(void)state;
	char cmd[128];
	assert_int_equal(run("", "submit --retries 2 --backoff 0 --retry-on 3 --wait -- sh -c 'exit 3'"), 3);
	assert_int_equal(run("", "ls --state failed -o id,result --sort -id --limit 1"), 0);
	unsigned long long id = strtoull(strchr(out, '\n') + 1, NULL, 10);
	snprintf(cmd, sizeof cmd, "status --json %llu", id);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "\"attempt\":3");
	CONTAINS(out, "\"max_attempts\":3");
	snprintf(cmd, sizeof cmd, "retry %llu", id);
	assert_int_equal(run("", cmd), 0);
	CONTAINS(out, "attempt 4");
	snprintf(cmd, sizeof cmd, "wait %llu", id);
	assert_int_equal(run("", cmd), 3);
	assert_int_equal(run("", "submit --fn noop --wait"), 0);
	assert_int_equal(run("", "ls -o id --sort -id --limit 1"), 0);
	id = strtoull(strchr(out, '\n') + 1, NULL, 10);
	snprintf(cmd, sizeof cmd, "retry %llu", id);
	assert_int_equal(run("", cmd), 1);
	CONTAINS(err, "call job");
}

/* count_lines: the lines of text. */
static size_t count_lines(const char *text)
{
	size_t n = 0;
	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* run_count: run `jsched -s SOCK args` (a shell's words: $(cat FILE) works) with its
 * stdout counted by `grep -c PATTERN` (the output is too long for `out`); returns its exit
 * status and the count in *n. */
static int run_count(const char *args, const char *pattern, long *n)
{
	char line[1500], file[400];
	snprintf(file, sizeof file, "%s/count", jd.dir);
	snprintf(line, sizeof line, "(%s -s %s %s > %s; rc=$?; grep -c -- '%s' < %s; exit $rc)", JSCHED_BIN, jd.sock,
		 args, file, pattern, file);
	int rc = sh_line(line);
	*n = strtol(out, NULL, 10);
	unlink(file);
	return rc;
}

/* Many ids: more than one request holds (10,000), from two clients of this uid, all
 * waiting for a sleeper; status, wait and cancel take them all (batched), and --all and
 * --name find them without ids. */
static void test_many_ids(void **state)
{
	enum { PER_CLIENT = 5030, BATCH = 1000 };
	struct jsched_conn *cs[2] = { jdt_connect(&jd, "many-a"), jdt_connect(&jd, "many-b") };
	uint64_t gate = jdt_submit_call(cs[0], "sleep", "{\"ms\": 600000}"), ids[BATCH];
	char path[400], line[1200], dep[64];
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/ids", jd.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	snprintf(dep, sizeof dep, "%llu", (unsigned long long)gate);
	for (int k = 0; k < 2; k++)
		for (int done = 0; done < PER_CLIENT; done += BATCH) {
			int n = PER_CLIENT - done < BATCH ? PER_CLIENT - done : BATCH;
			struct jsched_spec *specs[BATCH];
			for (int i = 0; i < n; i++) {
				assert_int_equal(jsched_spec_call("noop", NULL, &specs[i]), 0);
				assert_int_equal(jsched_spec_add_dep(specs[i], JSCHED_GATE_AFTER, gate, JSCHED_DEP_SUCCESS), 0);
				assert_int_equal(jsched_spec_set_name(specs[i], done + i >= PER_CLIENT - 3 ? "many-named" : "many-other"), 0);
			}
			assert_int_equal(jsched_submit_batch(cs[k], (const struct jsched_spec *const *)specs, (size_t)n, ids), 0);
			for (int i = 0; i < n; i++) {
				fprintf(f, "%llu\n", (unsigned long long)ids[i]);
				jsched_spec_free(specs[i]);
			}
		}
	fclose(f);
	long n;
	/* 10,060 ids: status in two requests, a line each. */
	snprintf(line, sizeof line, "status $(cat %s)", path);
	assert_int_equal(run_count(line, "waiting", &n), 0);
	assert_int_equal(n, 2 * PER_CLIENT);
	/* wait polls all of them; none has ended: the timeout, with every record. */
	snprintf(line, sizeof line, "wait --timeout 0 $(cat %s)", path);
	assert_int_equal(run_count(line, "waiting", &n), 75);
	assert_int_equal(n, 2 * PER_CLIENT);
	json_t *v;
	/* --name: the six named ones (three per client); --any refuses more than one request. */
	assert_int_equal(run("", "status --json --name many-named"), 0);
	v = json_loads(out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(v, "jobs")), 6);
	json_decref(v);
	snprintf(line, sizeof line, "%s -s %s wait --any $(cat %s)", JSCHED_BIN, jd.sock, path);
	assert_int_equal(sh_line(line), 64);
	CONTAINS(err, "at most 10000");
	/* cancel --all: every job of this uid not ended (the sleeper too), in two requests. */
	assert_int_equal(run_count("cancel --all", "^[0-9]", &n), 0);
	assert_int_equal(n, 2 * PER_CLIENT + 1);
	assert_int_equal(run("", "status --all"), 0);
	assert_string_equal(out, "");
	/* (the last three of each client: retention keeps the newest 10,000 final jobs) */
	assert_int_equal(run("", "wait --name many-named"), 1); /* all cancelled */
	assert_int_equal(count_lines(out), 6);
	unlink(path);
	jsched_close(cs[0]);
	jsched_close(cs[1]);
}

static int setup(void **state)
{
	(void)state;
	setenv("JSCHED_BUILD_DIR", JSCHED_BUILD_DIR, 0);
	char members[128];
	snprintf(members, sizeof members, "\"client_names\": {\"%u\": [\"*\"]}", (unsigned)getuid());
	jdt_start(&jd, members);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jdt_stop(&jd, SIGTERM); /* already gone after the shutdown test: reaps, cleans */
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_through_the_tool),
		cmocka_unit_test(test_batch_cancel_ls),
		cmocka_unit_test(test_listings),
		cmocka_unit_test(test_json_everywhere),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_completions),
		cmocka_unit_test(test_pause_hold),
		cmocka_unit_test(test_delay_at),
		cmocka_unit_test(test_retries),
		cmocka_unit_test(test_many_ids),
		cmocka_unit_test(test_metrics_and_shutdown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
