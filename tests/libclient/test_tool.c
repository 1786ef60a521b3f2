/* test_tool.c: the jsched tool as a person or a script meets it, against a fake daemon
 * (a thread of this test answering from a script, through the codec): what each command
 * sends (the caller's cwd and environment with an exec job), what it prints, the messages
 * that name what went wrong, and the exit statuses of libclient/README.md.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/libclient/peer.h"

#define JSCHED_BIN JSCHED_BUILD_DIR "/bin/jsched"
#define JSCHED_FULL_BIN JSCHED_BUILD_DIR "/bin/jsched-full"
#ifndef JSCHED_TOOL_STATIC
#define JSCHED_TOOL_STATIC 0 /* 1: jsched is static-pie and hands tables to jsched-full (build.mk) */
#endif

/* The fake daemon's state: the script it answers from ("%d" stands for the request's id;
 * NULL: no answer at all)
 * and the requests it got, both guarded by lock (the test and the fake's thread share
 * them). */
static struct {
	pthread_mutex_t lock;
	const char *const *script;
	size_t n, next;
	json_t *requests[16];
	size_t n_requests;
} fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct fake_server server;
static char dir[64], sock[128], out_path[128], err_path[128];

static char *answer(const json_t *req, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&fake.lock);
	const char *tmpl = fake.next < fake.n ? fake.script[fake.next++]
					      : "{\"id\": %d, \"ok\": false, \"error\": {\"code\": \"internal\", "
						"\"message\": \"script ran out\"}}";
	/* A copy, not a reference: jansson's reference counts are not a synchronisation
	 * between threads (TSan says so), so the test thread gets an object of its own. */
	if (fake.n_requests < 16)
		fake.requests[fake.n_requests++] = json_deep_copy(req);
	pthread_mutex_unlock(&fake.lock);
	if (tmpl == NULL)
		return strdup(""); /* a script entry NULL: stay silent */
	char buf[4096];
	const char *hole = strstr(tmpl, "%d");
	snprintf(buf, sizeof buf, "%.*s%d%s", (int)(hole - tmpl), tmpl, (int)json_integer_value(json_object_get(req, "id")),
		 hole + 2);
	return strdup(buf);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/jsched-tool-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(sock, sizeof sock, "%s/j.sock", dir);
	snprintf(out_path, sizeof out_path, "%s/out", dir);
	snprintf(err_path, sizeof err_path, "%s/err", dir);
	return fake_start(&server, sock, answer, NULL);
}

static int teardown(void **state)
{
	(void)state;
	fake_stop(&server);
	for (size_t i = 0; i < fake.n_requests; i++)
		json_decref(fake.requests[i]);
	unlink(sock);
	unlink(out_path);
	unlink(err_path);
	rmdir(dir);
	return 0;
}

/* Give the fake daemon its next script, forgetting the requests of the last one. */
static void script(const char *const *replies, size_t n)
{
	pthread_mutex_lock(&fake.lock);
	for (size_t i = 0; i < fake.n_requests; i++)
		json_decref(fake.requests[i]);
	fake.n_requests = 0;
	fake.script = replies;
	fake.n = n;
	fake.next = 0;
	pthread_mutex_unlock(&fake.lock);
}

static json_t *request(size_t i)
{
	pthread_mutex_lock(&fake.lock);
	json_t *r = i < fake.n_requests ? fake.requests[i] : NULL;
	pthread_mutex_unlock(&fake.lock);
	assert_non_null(r);
	return r;
}

static char out[8192], err[8192];

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, size - 1, f) : 0;
	buf[n] = '\0';
	if (f != NULL)
		fclose(f);
}

/* Run `BIN -s SOCK args` (a shell fragment) with env_prefix; returns its exit status. */
static int run_bin(const char *bin, const char *env_prefix, const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s %s -s %s %s >%s 2>%s", env_prefix, bin, sock, args, out_path, err_path);
	int status = system(cmd);
	slurp(out_path, out, sizeof out);
	slurp(err_path, err, sizeof err);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Run `jsched -s SOCK args` with env_prefix; returns its exit status. */
static int run(const char *env_prefix, const char *args)
{
	return run_bin(JSCHED_BIN, env_prefix, args);
}

#ifndef JSCHED_TOOL_JANSSON_STATIC
#define JSCHED_TOOL_JANSSON_STATIC 0 /* libclient/build.mk says */
#endif

#define CONTAINS(hay, needle)                                                            \
	do {                                                                             \
		if (strstr(hay, needle) == NULL)                                         \
			fail_msg("expected \"%s\" in:\n%s", needle, hay);               \
	} while (0)

/* test_start_loads_little: what the dynamic loader maps before jsched's main runs: not
 * libmicrohttpd (and GnuTLS behind it), libsmartcols or ncurses, which the tool loads when
 * a dashboard, a table or top first needs them (libclient/tool/lazy.h): linked, they were
 * most of every run's start (5.35 million instructions of `jsched --version`, now 0.19);
 * not libm or libdl, which it does not use (a sanitizer build's runtime loads libm); and
 * jansson only where it could not be linked in (no static library at build time:
 * libclient/build.mk). */
static void test_start_loads_little(void **state)
{
	static const char *const later[] = {"microhttpd", "gnutls", "smartcols", "ncurses", "tinfo",
					    "libm.so", "libdl.so"};
	/* A sanitizer's runtime needs libm itself: the last two only in a plain build. */
	size_t n = sizeof(later) / sizeof(later[0]) - (JSCHED_TEST_SANFLAGS[0] ? 2 : 0);

	(void)state;
	/* The static jsched has no loader to ask: its main runs (and prints the version)
	 * where a dynamic program would only list its libraries.  The rest is about
	 * jsched-full, the dynamic link it hands tables, top and the dashboard to. */
	if (JSCHED_TOOL_STATIC) {
		assert_int_equal(run("LD_TRACE_LOADED_OBJECTS=1", "--version"), 0);
		if (strncmp(out, "jsched ", 7) != 0 || strstr(out, ".so") != NULL)
			fail_msg("jsched is not static: under LD_TRACE_LOADED_OBJECTS=1 it printed:\n%s", out);
	}
	assert_int_equal(run_bin(JSCHED_TOOL_STATIC ? JSCHED_FULL_BIN : JSCHED_BIN, "LD_TRACE_LOADED_OBJECTS=1", ""), 0);
	if (JSCHED_TOOL_JANSSON_STATIC && strstr(out, "libjansson") != NULL)
		fail_msg("jsched loads libjansson at start, though linked with its static "
			 "library:\n%s", out);
	if (!JSCHED_TOOL_JANSSON_STATIC)
		CONTAINS(out, "libjansson");
	for (size_t i = 0; i < n; i++)
		if (strstr(out, later[i]) != NULL)
			fail_msg("jsched loads %s at start:\n%s", later[i], out);
}

/* test_handoff: the static jsched runs jsched-full, with its own arguments, for the
 * commands that load a library (a table, top, the dashboard), and nothing else: a stub
 * jsched-full records its arguments and exits 7; the commands it must not get meet a
 * socket with nothing behind it (69, the stub untouched).  jsched-full is found by
 * $JSCHED_FULL, beside jsched, or in ../libexec/jsched/; when none is there the message
 * says where it looked. */
static void test_handoff(void **state)
{
	(void)state;
	if (!JSCHED_TOOL_STATIC) {
		printf("skipped: this build's jsched is linked dynamically (a sanitizer, or no libc.a): "
		       "nothing is handed to jsched-full\n");
		return;
	}
	char stub[256], marker[256], cmd[2048], env[512], alone[256], inst[256];
	snprintf(stub, sizeof stub, "%s/full.sh", dir);
	snprintf(marker, sizeof marker, "%s/full.args", dir);
	FILE *f = fopen(stub, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nprintf '%%s\\n' \"$@\" > '%s'\nexit 7\n", marker);
	fclose(f);
	assert_int_equal(chmod(stub, 0755), 0);
	snprintf(env, sizeof env, "JSCHED_FULL=%s", stub);

	static const struct {
		const char *args, *sent; /* sent: the stub's arguments after -s SOCK, one a line */
	} handed[] = {
		{ "ls --state queued", "ls\n--state\nqueued\n" },
		{ "status 3 4", "status\n3\n4\n" },
		{ "metrics", "metrics\n" },
		{ "top --once", "top\n--once\n" },
		{ "dashboard --port 8999", "dashboard\n--port\n8999\n" },
	};
	char want[256];
	for (size_t i = 0; i < sizeof handed / sizeof handed[0]; i++) {
		unlink(marker);
		assert_int_equal(run(env, handed[i].args), 7);
		slurp(marker, out, sizeof out);
		snprintf(want, sizeof want, "-s\n%s\n%s", sock, handed[i].sent);
		assert_string_equal(out, want);
	}
	static const char *const kept[] = { "ls --json", "status -l 3", "metrics --prometheus",
					    "submit --wait --fn noop", "submit -- /bin/true", "wait 3" };
	char nosock[256];
	snprintf(nosock, sizeof nosock, "%s/none.sock", dir);
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
		unlink(marker);
		snprintf(cmd, sizeof cmd, "%s %s -s %s %s >%s 2>%s", env, JSCHED_BIN, nosock, kept[i], out_path, err_path);
		int st = system(cmd);
		slurp(err_path, err, sizeof err);
		assert_true(WIFEXITED(st));
		if (WEXITSTATUS(st) != 69 || access(marker, F_OK) == 0)
			fail_msg("jsched %s: exit %d (expected 69, run by jsched itself), stub %s; stderr: %s", kept[i],
				 WEXITSTATUS(st), access(marker, F_OK) == 0 ? "ran" : "not run", err);
	}

	assert_int_equal(run("JSCHED_FULL=/nonexistent/jsched-full", "ls"), 1);
	CONTAINS(err, "cannot run $JSCHED_FULL (/nonexistent/jsched-full)");
	/* A copy of jsched alone: nothing beside it, nothing in ../libexec/jsched/. */
	snprintf(alone, sizeof alone, "%s/bin/jsched", dir);
	snprintf(cmd, sizeof cmd, "mkdir -p %s/bin && cp %s %s", dir, JSCHED_BIN, alone);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(run_bin(alone, "env -u JSCHED_FULL", "ls"), 1);
	CONTAINS(err, "jsched ls: jsched-full, which prints tables, top and the dashboard, is neither beside jsched in");
	CONTAINS(err, "/bin/../libexec/jsched/");
	/* Where `make install` puts it (the stub in its place). */
	snprintf(inst, sizeof inst, "%s/libexec/jsched/jsched-full", dir);
	snprintf(cmd, sizeof cmd, "mkdir -p %s/libexec/jsched && cp %s %s", dir, stub, inst);
	assert_int_equal(system(cmd), 0);
	unlink(marker);
	assert_int_equal(run_bin(alone, "env -u JSCHED_FULL", "metrics"), 7);
	assert_int_equal(access(marker, F_OK), 0);
	snprintf(cmd, sizeof cmd, "rm -rf %s/bin %s/libexec %s %s", dir, dir, stub, marker);
	assert_int_equal(system(cmd), 0);
}

static void test_submit_sends_cwd_and_env(void **state)
{
	(void)state;
	static const char *const s[] = { "{\"id\": %d, \"ok\": true, \"job\": 5}" };
	script(s, 1);
	assert_int_equal(run("cd /tmp && JSCHED_TOOL_VAR='a b'", "submit --name build --priority high "
								      "--after 3 --any-of 4 -- make -j2 'all'"), 0);
	assert_string_equal(out, "5\n");
	json_t *job = json_object_get(request(0), "job");
	assert_string_equal(json_string_value(json_object_get(job, "kind")), "exec");
	assert_string_equal(json_string_value(json_array_get(json_object_get(job, "argv"), 2)), "all");
	assert_string_equal(json_string_value(json_object_get(job, "cwd")), "/tmp");
	assert_string_equal(json_string_value(json_object_get(json_object_get(job, "env"), "JSCHED_TOOL_VAR")), "a b");
	assert_string_equal(json_string_value(json_object_get(job, "priority")), "high");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(job, "after"), 0), "job")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(job, "any_of"), 0), "job")), 4);

	script(s, 1);
	assert_int_equal(run("cd /tmp &&", "submit --clear-env --env A=1 --cwd / --stdin /dev/null -- true"), 0);
	job = json_object_get(request(0), "job");
	json_t *env = json_object_get(job, "env");
	assert_int_equal(json_object_size(env), 1);
	assert_string_equal(json_string_value(json_object_get(env, "A")), "1");
	assert_string_equal(json_string_value(json_object_get(job, "cwd")), "/");

	script(s, 1);
	assert_int_equal(run("", "submit --fn echo --args '[1, 2]' --deadline 2s --json"), 0);
	assert_string_equal(out, "{\"job\":5}\n");
	job = json_object_get(request(0), "job");
	assert_int_equal(json_array_size(json_object_get(job, "args")), 2);
	assert_int_equal(json_integer_value(json_object_get(job, "deadline_in_ms")), 2000);
	assert_null(json_object_get(job, "env"));

	/* A working directory that no longer exists: said so, nothing sent. */
	script(s, 1);
	char prefix[512];
	snprintf(prefix, sizeof prefix, "mkdir %s/gone && cd %s/gone && rmdir %s/gone &&", dir, dir, dir);
	assert_int_equal(run(prefix, "submit -- ls"), 1);
	CONTAINS(err, "cannot read the current directory");

	/* Not JSON: refused before anything is sent. */
	script(s, 1);
	assert_int_equal(run("", "submit --fn echo --args '{x'"), 64);
	CONTAINS(err, "--args is not JSON");
}

static void test_submit_wait_exit_status(void **state)
{
	(void)state;
	/* exit 3, with its output passed through and no message from jsched: one request, the
	 * submit waiting with the output. */
	static const char *const exited[] = {
		("{\"id\": %d, \"ok\": true, \"job\": 5, \"record\": {\"job\": 5, \"kind\": \"exec\", "
		"\"state\": \"failed\", \"submitted_ms\": 1, \"started_ms\": 2, \"finished_ms\": 3, \"exit_code\": 3, "
		"\"cause\": \"exit\", \"reason\": \"exited with status 3\"}, \"output\": {\"complete\": true, "
		"\"stdout\": {\"data\": \"b3V0Cg==\", \"bytes\": 4, \"truncated\": false}, \"stderr\": {\"data\": "
		"\"ZXJyCg==\", \"bytes\": 4, \"truncated\": false}}}"),
	};
	script(exited, 1);
	assert_int_equal(run("", "submit --wait -- sh -c 'exit 3'"), 3);
	assert_string_equal(out, "out\n");
	assert_string_equal(err, "err\n");
	assert_string_equal(json_string_value(json_object_get(request(0), "op")), "submit");
	assert_true(json_is_true(json_object_get(json_object_get(request(0), "wait"), "output")));
	assert_null(json_object_get(json_object_get(request(0), "wait"), "timeout_ms"));

	/* Killed by signal 9: 128+9, and a word on stderr. */
	static const char *const killed[] = {
		("{\"id\": %d, \"ok\": true, \"job\": 6, \"record\": {\"job\": 6, \"kind\": \"exec\", "
		"\"state\": \"failed\", \"submitted_ms\": 1, \"started_ms\": 2, \"finished_ms\": 3, \"signal\": 9, "
		"\"cause\": \"signal\", \"reason\": \"killed by signal 9\"}, \"output\": {\"complete\": true, "
		"\"stdout\": {\"data\": \"\", \"bytes\": 0, \"truncated\": false}, \"stderr\": {\"data\": \"\", "
		"\"bytes\": 0, \"truncated\": false}}}"),
	};
	script(killed, 1);
	assert_int_equal(run("", "submit -w -- sleep 100"), 137);
	CONTAINS(err, "job 6 failed: killed by signal 9");

	/* A call job: its value on stdout; 0. */
	static const char *const call[] = {
		("{\"id\": %d, \"ok\": true, \"job\": 7, \"record\": {\"job\": 7, \"kind\": \"call\", "
		"\"state\": \"succeeded\", \"value\": {\"x\": 1}}}"),
	};
	script(call, 1);
	assert_int_equal(run("", "submit --wait --fn echo --args '{\"x\": 1}'"), 0);
	assert_string_equal(out, "{\"x\":1}\n");

	/* Still running when --timeout expires: 75. */
	static const char *const slow[] = {
		("{\"id\": %d, \"ok\": true, \"job\": 8, \"timed_out\": true, \"record\": {\"job\": 8, "
		"\"state\": \"running\"}}"),
	};
	script(slow, 1);
	assert_int_equal(run("", "submit --wait --timeout 100ms --fn sleep"), 75);
	CONTAINS(err, "job 8 still running");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(request(0), "wait"), "timeout_ms")), 100);
}

static void test_batch(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof path, "%s/graph.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[{\"ref\": \"a\", \"kind\": \"call\", \"fn\": \"echo\"},\n"
	      " {\"kind\": \"exec\", \"argv\": [\"true\"], \"after\": [\"a\"]}]\n", f);
	fclose(f);
	static const char *const ok[] = { "{\"id\": %d, \"ok\": true, \"jobs\": [7, 8], \"refs\": {\"a\": 7}}" };
	script(ok, 1);
	char args[512];
	snprintf(args, sizeof args, "submit --batch %s", path);
	assert_int_equal(run("", args), 0);
	assert_string_equal(out, "7\n8\n");
	json_t *jobs = json_object_get(request(0), "jobs");
	assert_int_equal(json_array_size(jobs), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(jobs, 1), "after"), 0)), "a");
	/* The specs go as written: no cwd or environment added to the exec one. */
	assert_null(json_object_get(json_array_get(jobs, 1), "env"));

	static const char *const waited[] = {
		"{\"id\": %d, \"ok\": true, \"jobs\": [7, 8], \"records\": [{\"job\": 7, \"kind\": \"call\", "
		"\"state\": \"succeeded\"}, {\"job\": 8, \"kind\": \"exec\", \"state\": \"cancelled\", "
		"\"cause\": \"dependency\"}]}",
	};
	script(waited, 1);
	snprintf(args, sizeof args, "submit --batch - --wait < %s", path);
	assert_int_equal(run("", args), 1); /* one did not succeed */
	CONTAINS(out, "cancelled");
	assert_int_equal(json_array_size(json_object_get(request(0), "jobs")), 2);
	assert_true(json_is_true(json_object_get(request(0), "wait")) ||
		    json_is_object(json_object_get(request(0), "wait")));

	script(ok, 1);
	assert_int_equal(run("echo '{\"kind\": \"call\"}' |", "submit --batch -"), 64);
	CONTAINS(err, "expected a non-empty array of job specs");
	unlink(path);
}

static void test_errors_and_exit_codes(void **state)
{
	(void)state;
	static const char *const full[] = { "{\"id\": %d, \"ok\": false, \"error\": {\"code\": \"queue_full\", "
					    "\"message\": \"client tester has 10000 jobs queued\", \"field\": \"job\"}}" };
	script(full, 1);
	assert_int_equal(run("", "submit --fn noop"), 1);
	assert_string_equal(err, "jsched submit: queue_full: client tester has 10000 jobs queued (in job)\n");

	static const char *const denied[] = { "{\"id\": %d, \"ok\": false, \"error\": {\"code\": "
					      "\"permission_denied\", \"message\": \"not an admin\"}}" };
	script(denied, 1);
	assert_int_equal(run("", "admin shutdown --immediate"), 77);
	assert_string_equal(json_string_value(json_object_get(request(0), "mode")), "immediate");
	CONTAINS(err, "jsched admin shutdown: permission_denied: not an admin");

	/* One bad id fails a status request whole: the tool says so for that id and asks
	 * again for the rest. */
	static const char *const none[] = { "{\"id\": %d, \"ok\": false, \"error\": {\"code\": \"no_such_job\", "
					    "\"message\": \"no job 99\", \"field\": \"jobs[1]\"}}",
					    "{\"id\": %d, \"ok\": true, \"jobs\": [{\"job\": 1, \"state\": \"queued\", "
					    "\"kind\": \"call\", \"fn\": \"echo\", \"client\": \"me\", \"submitted_ms\": 1}]}" };
	script(none, 2);
	assert_int_equal(run("", "status 1 99"), 1);
	assert_string_equal(err, "jsched status: 99: no_such_job: no job 99\n");
	CONTAINS(out, "--fn echo");
	assert_int_equal(json_array_size(json_object_get(request(1), "jobs")), 1);

	/* A daemon that does not answer (a NULL script entry): --reply-timeout gives up, 75. */
	static const char *const silent[] = { NULL };
	script(silent, 1);
	assert_int_equal(run("", "--reply-timeout 50ms ls"), 75);
	CONTAINS(err, "no reply from jschedd within 50 ms");

	/* No daemon there: 69, and the message names the path. */
	assert_int_equal(run("", "-s /nonexistent/j.sock ls"), 69);
	CONTAINS(err, "/nonexistent/j.sock");
	assert_int_equal(run("", "wait"), 64);
	CONTAINS(err, "jsched wait: expected one or more job ids");
}

static void test_listing_commands(void **state)
{
	(void)state;
	static const char *const ls[] = {
		("{\"id\": %d, \"ok\": true, \"more\": false, \"jobs\": [{\"job\": 1, \"state\": \"queued\", \"kind\": "
		"\"exec\", \"client\": \"tester\", \"priority\": \"low\", \"name\": \"nightly\"}]}"),
	};
	script(ls, 1);
	assert_int_equal(run("", "ls --state queued"), 0);
	CONTAINS(out, "ID");
	CONTAINS(out, "nightly");
	CONTAINS(out, "tester");
	assert_string_equal(json_string_value(json_array_get(json_object_get(request(0), "states"), 0)), "queued");

	static const char *const wait_many[] = {
		("{\"id\": %d, \"ok\": true, \"jobs\": [{\"job\": 1, \"kind\": \"call\", \"state\": \"succeeded\", "
		"\"value\": 1}, {\"job\": 2, \"kind\": \"call\", \"state\": \"failed\", \"cause\": \"handler\", "
		"\"reason\": \"boom\"}]}"),
	};
	script(wait_many, 1);
	assert_int_equal(run("", "wait 1 2"), 1); /* one did not succeed */
	CONTAINS(out, "boom");
	script(wait_many, 1);
	assert_int_equal(run("", "wait --any 1 2"), 0); /* one did */
	assert_string_equal(json_string_value(json_object_get(request(0), "mode")), "any");

	static const char *const status[] = {
		"{\"id\": %d, \"ok\": true, \"jobs\": [{\"job\": 42, \"name\": \"unit tests\", \"client\": \"ana\", "
		"\"uid\": 1000, \"kind\": \"exec\", \"priority\": \"high\", \"state\": \"failed\", \"submitted_ms\": "
		"1764460812345, \"started_ms\": 1764460812350, \"finished_ms\": 1764460873002, \"exit_code\": 2, "
		"\"cause\": \"exit\", \"reason\": \"exited with status 2\"}]}",
	};
	script(status, 1);
	assert_int_equal(run("", "status -l 42"), 0);
	CONTAINS(out, "job 42 (unit tests)\n");
	CONTAINS(out, "  client     ana (uid 1000)\n");
	CONTAINS(out, "  exit code  2\n");
	CONTAINS(out, "  cause      exit: exited with status 2\n");
	CONTAINS(out, ".350\n"); /* started, to the millisecond */

	static const char *const cancel[] = {
		"{\"id\": %d, \"ok\": true, \"jobs\": [{\"job\": 4, \"state\": \"running\", \"cancelling\": true}]}",
	};
	script(cancel, 1);
	assert_int_equal(run("", "cancel 4"), 0);
	CONTAINS(out, "asked to stop");

#define METRICS_REPLY                                                                                       \
	("{\"id\": %d, \"ok\": true, \"metrics\": {\"version\": \"jschedd test\", \"uptime_ms\": 61000, "          \
	 "\"jobs\": {\"submitted\": 12}, \"clients\": [{\"name\": \"alice\", \"weight\": 3, \"queued\": "           \
	 "{\"high\": 2}}], \"workers\": [{\"tasks\": 7}], \"fairness\": {\"policy\": \"fair\", "                \
	 "\"jain_index\": 0.5}}}")
	static const char *const metrics[] = { METRICS_REPLY };
	script(metrics, 1);
	assert_int_equal(run("", "metrics"), 0);
	CONTAINS(out, "jschedd test");
	CONTAINS(out, "up 1m 01s");
	CONTAINS(out, "submitted 12");
	CONTAINS(out, "alice");
	CONTAINS(out, "Jain's index 0.5");
	script(metrics, 1);
	assert_int_equal(run("", "metrics --json"), 0);
	json_t *doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "uptime_ms")), 61000);
	json_decref(doc);
	static const char *const three[] = { METRICS_REPLY, METRICS_REPLY, METRICS_REPLY };
	script(three, 3);
	assert_int_equal(run("", "top -n 3 --interval 10ms"), 0);
	const char *p = out;
	for (int i = 0; i < 3; i++) {
		p = strstr(p, "jsched top");
		assert_non_null(p);
		p++;
	}

	static const char *const output[] = {
		("{\"id\": %d, \"ok\": true, \"complete\": false, \"stdout\": {\"data\": \"AAEC\", \"bytes\": 3, "
		"\"truncated\": true}, \"stderr\": {\"data\": \"\", \"bytes\": 0, \"truncated\": false}}"),
	};
	script(output, 1);
	assert_int_equal(run("", "output 3"), 0);
	assert_memory_equal(out, "\0\1\2", 3);
	CONTAINS(err, "only the beginning and the end of the stdout");
	CONTAINS(err, "has not ended");
}

static void test_watch(void **state)
{
	(void)state;
	/* The reply to watch, then two events on its heels (one script entry, three frames). */
	static const char *const events[] = {
		("{\"id\": %d, \"ok\": true, \"seq\": 10, \"instance\": \"111-22\"}\x1e"
		"{\"event\": \"job\", \"seq\": 11, \"job\": {\"job\": 4, \"kind\": \"call\", \"state\": \"running\"}}\x1e"
		"{\"event\": \"job\", \"seq\": 12, \"job\": {\"job\": 4, \"kind\": \"call\", \"state\": \"succeeded\", "
		"\"value\": 5}}"),
	};
	script(events, 1);
	assert_int_equal(run("", "watch -n 2"), 0);
	CONTAINS(out, "4        running    call\n");
	CONTAINS(out, "4        succeeded  call  value 5, ran");
	CONTAINS(out, "11       -            4");
	assert_null(json_object_get(request(0), "from_seq")); /* live only */

	static const char *const lost[] = { "{\"id\": %d, \"ok\": false, \"error\": {\"code\": \"events_lost\", "
					    "\"message\": \"events after 3 are gone\", \"oldest_seq\": 9}}" };
	script(lost, 1);
	assert_int_equal(run("", "watch --since 3 --instance 999-1 -n 1"), 1);
	CONTAINS(err, "events_lost: events after 3 are gone");
	assert_int_equal(json_integer_value(json_object_get(request(0), "from_seq")), 3);
	assert_string_equal(json_string_value(json_object_get(request(0), "instance")), "999-1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_loads_little),
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_submit_sends_cwd_and_env),
		cmocka_unit_test(test_submit_wait_exit_status),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_errors_and_exit_codes),
		cmocka_unit_test(test_listing_commands),
		cmocka_unit_test(test_watch),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
