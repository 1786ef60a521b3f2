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

/* Run `[prefix] jsched -s SOCK args`; returns its exit status, output in out and err. */
static int run(const char *prefix, const char *args)
{
	char o[400], e[400], cmd[4096];
	snprintf(o, sizeof o, "%s/out", jd.dir);
	snprintf(e, sizeof e, "%s/err", jd.dir);
	snprintf(cmd, sizeof cmd, "%s %s -s %s %s >%s 2>%s", prefix, JSCHED_BIN, jd.sock, args, o, e);
	int status = system(cmd);
	slurp(o, out, sizeof out);
	slurp(e, err, sizeof err);
	unlink(o);
	unlink(e);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
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
	assert_int_equal(run("", "submit --wait -- /nonexistent/command"), 1);
	CONTAINS(err, "(spawn)");
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
	assert_int_equal(run("", "admin shutdown"), 0);
	assert_int_equal(jdt_wait_exit(&jd, 20000), 0);
	assert_int_equal(run("", "ls"), 69);
}

static int setup(void **state)
{
	(void)state;
	setenv("JSCHED_BUILD_DIR", JSCHED_BUILD_DIR, 0);
	jdt_start(&jd, "");
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
		cmocka_unit_test(test_metrics_and_shutdown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
