/* tests/daemon/test_daemon_start.c: a command starts the same way on every start path.
 *
 * jschedd starts a command of its own identity directly (run/process.c: a clone that
 * execs) and every other one through posix_spawn, of the command itself or of
 * jschedd-runas when there is an identity or a control group to set up (`exec.direct`
 * false forces that path; a TSan build has only it).  Each case here runs on one daemon
 * per path, both started with a descriptor the test left open without close-on-exec:
 *   - the command's descriptors are 0, 1 and 2, nothing jschedd inherited;
 *   - every signal is at its default (none ignored) and none is blocked;
 *   - an executable file the kernel cannot run (a script without "#!") fails with cause
 *     spawn and "exec format error: FILE", by path and found through PATH: not run by sh.
 * Which path ran is read from the daemon's exec.direct count; with no direct start in the
 * build both daemons use the other path, and the program says so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/daemon/harness.h"

/* One daemon per start path. */
struct path {
	const char *name;
	const char *members;
	struct jdt t;
	struct jsched_conn *c;
	json_int_t direct0;	/* exec.direct before the cases */
};

static struct path paths[] = {
	{.name = "direct", .members = "\"exec\": {\"direct\": true}"},
	{.name = "posix_spawn or jschedd-runas", .members = "\"exec\": {\"direct\": false}"},
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static char inherited[64];	/* the open file each daemon inherited, /proc/self/fd's text */

static int setup(void **state)
{
	char name[] = "/tmp/jdt-inherited-XXXXXX";
	int fd;

	(void)state;
	/* Left open without close-on-exec, as a careless starter would, at a number no
	 * start path puts anything at (dup2's copy is not close-on-exec), then unlinked:
	 * its link reads "... (deleted)". */
	fd = mkstemp(name);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, 100), 100);
	close(fd);
	fd = 100;
	snprintf(inherited, sizeof(inherited), "%s", name);
	for (size_t i = 0; i < NPATHS; i++) {
		jdt_start(&paths[i].t, paths[i].members);
		paths[i].c = jdt_connect(&paths[i].t, NULL);
		paths[i].direct0 = jdt_metric_int(paths[i].c, "exec/direct");
	}
	unlink(name);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	int rc = 0;

	(void)state;
	for (size_t i = 0; i < NPATHS; i++) {
		jsched_close(paths[i].c);
		rc |= jdt_stop(&paths[i].t, SIGTERM);
	}
	assert_int_equal(rc, 0);
	return 0;
}

/* stdout_of: job id's final record must say succeeded; its stdout (free it). */
static char *stdout_of(struct jsched_conn *c, uint64_t id)
{
	json_t *rec, *r;
	unsigned char *data = NULL;
	size_t len = 0;
	bool tr = false;
	const char *s = jdt_wait_final(c, id, &rec);

	if (strcmp(s, "succeeded") != 0)
		fail_msg("job %llu ended %s: %s", (unsigned long long)id, s,
			 json_string_value(json_object_get(rec, "reason")));
	json_decref(rec);
	r = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	assert_int_equal(jp_output_stream_parse(json_object_get(r, "stdout"), &data, &len, &tr, NULL), 0);
	json_decref(r);
	return (char *)data;
}

/* run_sh: run `sh -c script` on path p; its stdout (free it). */
static char *run_sh(struct path *p, const char *script)
{
	json_t *argv = json_pack("[sss]", "sh", "-c", script);
	char *text = json_dumps(argv, 0);
	uint64_t id = jdt_submit_spec(p->c, "{\"kind\": \"exec\", \"argv\": %s}", text);

	free(text);
	json_decref(argv);
	return stdout_of(p->c, id);
}

/* test_descriptors: the command's shell has 0, 1 and 2 only: not the file its daemon
 * inherited, not the daemon's own (the report pipe, the socket, the journal). */
static void test_descriptors(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPATHS; i++) {
		/* ls of the shell's table while nothing else is open there: a glob would list
		 * its directory stream, a pipeline its pipe; not the last command, which sh
		 * may exec in its own place. */
		char *out = run_sh(&paths[i], "ls -l /proc/$$/fd; exit 0");
		int n = 0;

		for (const char *at = out; (at = strstr(at, " -> ")); at += 4)
			n++;
		if (n != 3 || !strstr(out, " 0 -> ") || !strstr(out, " 1 -> ") ||
		    !strstr(out, " 2 -> ") || strstr(out, inherited))
			fail_msg("%s: the command's descriptors (the daemon inherited %s):\n%s",
				 paths[i].name, inherited, out);
		free(out);
	}
}

/* test_signals: no signal ignored, none blocked, on each path. */
static void test_signals(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPATHS; i++) {
		char *out = run_sh(&paths[i], "grep -E '^Sig(Blk|Ign)' /proc/self/status");

		if (!strstr(out, "SigBlk:\t0000000000000000\n") ||
		    !strstr(out, "SigIgn:\t0000000000000000\n"))
			fail_msg("%s: the command's signals:\n%s", paths[i].name, out);
		free(out);
	}
}

/* expect_spawn_failure: job id failed with cause spawn and exactly `reason`. */
static void expect_spawn_failure(struct path *p, uint64_t id, const char *reason)
{
	json_t *rec;
	const char *s = jdt_wait_final(p->c, id, &rec);
	const char *cause = json_string_value(json_object_get(rec, "cause"));
	const char *why = json_string_value(json_object_get(rec, "reason"));

	if (strcmp(s, "failed") != 0 || !cause || strcmp(cause, "spawn") != 0 || !why ||
	    strcmp(why, reason) != 0)
		fail_msg("%s: job %llu ended %s, cause %s, reason \"%s\"; expected failed, spawn, "
			 "\"%s\"", p->name, (unsigned long long)id, s, cause ? cause : "-",
			 why ? why : "", reason);
	json_decref(rec);
}

/* test_exec_format_error: an executable script without "#!" is not handed to sh on any
 * path: named by its path, or found through PATH, it fails with the same reason. */
static void test_exec_format_error(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPATHS; i++) {
		struct path *p = &paths[i];
		char file[400], marker[400], want[500];
		uint64_t by_path, by_lookup;
		FILE *f;

		snprintf(file, sizeof(file), "%s/noshebang", p->t.dir);
		snprintf(marker, sizeof(marker), "%s/ran", p->t.dir);
		assert_non_null(f = fopen(file, "w"));
		fprintf(f, "touch %s\n", marker);
		fclose(f);
		assert_int_equal(chmod(file, 0755), 0);
		by_path = jdt_submit_spec(p->c, "{\"kind\": \"exec\", \"argv\": [\"%s\"]}", file);
		by_lookup = jdt_submit_spec(p->c, "{\"kind\": \"exec\", \"argv\": [\"noshebang\"], "
					    "\"env\": {\"PATH\": \"%s\"}}", p->t.dir);
		snprintf(want, sizeof(want), "exec format error: %s", file);
		expect_spawn_failure(p, by_path, want);
		expect_spawn_failure(p, by_lookup, "exec format error: noshebang");
		if (access(marker, F_OK) == 0)
			fail_msg("%s: the script without #! ran", p->name);
	}
}

/* test_paths_taken: the first daemon started its commands directly (when the build can)
 * and the second never did. */
static void test_paths_taken(void **state)
{
	json_int_t d0 = jdt_metric_int(paths[0].c, "exec/direct") - paths[0].direct0;
	json_int_t d1 = jdt_metric_int(paths[1].c, "exec/direct") - paths[1].direct0;

	(void)state;
	assert_int_equal(d1, 0);
	if (d0 == 0) {
		fprintf(stderr, "  no direct start in this build (TSan's, or a CPU without "
				"arch/rawsys.h): both daemons used posix_spawn or jschedd-runas\n");
		return;
	}
	assert_true(d0 >= 4); /* the descriptors' and the signals' commands, two exec errors */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_exec_format_error),
		cmocka_unit_test(test_paths_taken),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
