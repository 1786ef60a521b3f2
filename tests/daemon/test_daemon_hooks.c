/* tests/daemon/test_daemon_hooks.c: completion hooks (on_exit, notify) end to end: the
 * daemon keeps them with the job and in its record, grants one claim to run them and
 * records how they went without touching the job's result; the jsched tool runs them as
 * the user with the job's id, state and exit code in their environment, bounded by their
 * time limit, in the foreground (--wait) or from a background process that outlives a
 * kill -9 of the daemon; hooks not yet run survive kill -9 + restart and `jsched hooks`
 * runs them; bad members are refused with stable codes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

/* hooks: job id's "hooks" member (new reference). */
static json_t *hooks(struct jsched_conn *conn, uint64_t id)
{
	json_t *r = jdt_ok(conn, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *h = json_incref(json_object_get(json_object_get(r, "job"), "hooks"));

	json_decref(r);
	assert_non_null(h);
	return h;
}

static const char *hstate(const json_t *h)
{
	return json_string_value(json_object_get(h, "state"));
}

static void test_protocol(void **state)
{
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"on_exit\": \"true\", "
				      "\"hook_timeout_ms\": 5000}");
	uint64_t plain, slow;
	json_t *h, *r;

	(void)state;
	h = hooks(c, id);
	assert_string_equal(json_string_value(json_object_get(h, "on_exit")), "true");
	assert_int_equal(json_integer_value(json_object_get(h, "timeout_ms")), 5000);
	assert_string_equal(hstate(h), "pending");
	json_decref(h);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	r = jdt_ok(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"running\"}", (unsigned long long)id);
	assert_true(json_is_true(json_object_get(r, "claimed")));
	json_decref(r);
	/* One claim: a second runner is told no. */
	r = jdt_ok(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"running\"}", (unsigned long long)id);
	assert_true(json_is_false(json_object_get(r, "claimed")));
	assert_string_equal(hstate(json_object_get(r, "hooks")), "running");
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"failed\", \"exit_code\": 3, "
		      "\"reason\": \"on_exit exited with status 3\"}", (unsigned long long)id);
	json_decref(r);
	h = hooks(c, id);
	assert_string_equal(hstate(h), "failed");
	assert_int_equal(json_integer_value(json_object_get(h, "exit_code")), 3);
	json_decref(h);
	/* The job's own result is as it was. */
	assert_string_equal(jdt_state(c, id), "succeeded");
	r = jdt_req(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"succeeded\"}", (unsigned long long)id);
	assert_string_equal(jdt_err_code(r), "protocol_error");
	json_decref(r);

	plain = jdt_submit_call(c, "noop", "null");
	r = jdt_req(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"running\"}", (unsigned long long)plain);
	assert_string_equal(jdt_err_code(r), "not_supported");
	json_decref(r);
	slow = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 60000}, \"notify\": true}");
	r = jdt_req(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"running\"}", (unsigned long long)slow);
	assert_string_equal(jdt_err_code(r), "protocol_error");
	json_decref(r);
	assert_int_equal(jsched_cancel(c, slow), 0);
	r = jdt_req(c, "{\"op\": \"hook\", \"job\": %llu, \"state\": \"bogus\"}", (unsigned long long)id);
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"hook_timeout_ms\": 5}}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "job.hook_timeout_ms");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"on_exit\": \"\"}}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
}

/* tool: jdt_tool as client "hooks". */
#define tool(d, out, len, ...) jdt_tool((d), "hooks", (out), (len), __VA_ARGS__)

static uint64_t job_of(const char *json_out)
{
	json_t *o = json_loads(json_out, 0, NULL);
	uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "job"));

	if (json_is_object(json_object_get(o, "job")))
		id = (uint64_t)json_integer_value(json_object_get(json_object_get(o, "job"), "job"));
	json_decref(o);
	assert_true(id > 0);
	return id;
}

/* slurp: the first line of file path into buf ("" if it is missing). */
static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
}

static void test_tool_foreground(void **state)
{
	char out[8192], file[400], got[256], want[256];
	uint64_t id;
	json_t *h;

	(void)state;
	snprintf(file, sizeof(file), "%s/hook1", t.dir);
	/* The job's exit status is jsched's; the hook sees the job's id, state and code. */
	assert_int_equal(tool(&t, out, sizeof(out), "submit --wait --json --on-exit 'echo $JSCHED_JOB_ID "
			      "$JSCHED_JOB_STATE $JSCHED_JOB_EXIT_CODE > %s' -- sh -c 'exit 3'", file), 3);
	id = job_of(out);
	slurp(file, got, sizeof(got));
	snprintf(want, sizeof(want), "%llu failed 3", (unsigned long long)id);
	assert_string_equal(got, want);
	h = hooks(c, id);
	assert_string_equal(hstate(h), "succeeded");
	json_decref(h);

	/* A failing hook is in the record; the job and jsched's status are untouched. */
	assert_int_equal(tool(&t, out, sizeof(out), "submit --wait --json --on-exit 'exit 7' -- true"), 0);
	id = job_of(out);
	h = hooks(c, id);
	assert_string_equal(hstate(h), "failed");
	assert_int_equal(json_integer_value(json_object_get(h, "exit_code")), 7);
	json_decref(h);
	assert_string_equal(jdt_state(c, id), "succeeded");

	/* A hook that would run for 30 s is stopped at its limit. */
	assert_int_equal(tool(&t, out, sizeof(out), "submit --wait --json --hook-timeout 200ms "
			      "--on-exit 'sleep 30' -- true"), 0);
	id = job_of(out);
	h = hooks(c, id);
	assert_string_equal(hstate(h), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(h, "reason")), "time limit"));
	json_decref(h);

	/* A hook may make only so many processes (RLIMIT_NPROC is set: a fork bomb fails
	 * to fork; the kernel does not hold root to it, but the limit is in place). */
	snprintf(file, sizeof(file), "%s/nproc", t.dir);
	assert_int_equal(tool(&t, out, sizeof(out), "submit --wait --json --on-exit \"awk '/^Max processes/ {print \\$3}' "
			      "/proc/self/limits > %s\" "
			      "--fn noop", file), 0);
	slurp(file, got, sizeof(got));
	assert_true(got[0] >= '1' && got[0] <= '9');
	assert_true(strtol(got, NULL, 10) > 256);

	/* --notify without a desktop: a bell and a line; it counts as done. */
	assert_int_equal(tool(&t, out, sizeof(out), "submit --wait --json --notify --fn noop"), 0);
	h = hooks(c, job_of(out));
	assert_string_equal(hstate(h), "succeeded");
	assert_true(json_is_true(json_object_get(h, "notify")));
	json_decref(h);
}

/* wait_hooks: poll (bounded 30 s) until job id's hooks are no longer pending or running. */
static json_t *wait_hooks(struct jsched_conn *conn, uint64_t id)
{
	json_t *h = NULL;

	for (int i = 0; i < 3000; i++) {
		json_decref(h);
		h = hooks(conn, id);
		if (strcmp(hstate(h), "succeeded") == 0 || strcmp(hstate(h), "failed") == 0)
			return h;
		jdt_sleep_ms(10);
	}
	fail_msg("job %llu's hooks never ran (%s)", (unsigned long long)id, hstate(h));
	return NULL;
}

/* test_survive_kill9: a background runner waits across a kill -9 of the daemon; hooks
 * not yet run survive kill -9 + restart and `jsched hooks` runs them; their outcome
 * survives the next kill -9. */
static void test_survive_kill9(void **state)
{
	struct jdt d;
	struct jsched_conn *k;
	char out[4096], file[400], got[64];
	struct pollfd pfd;
	uint64_t id, p;
	int held[2];
	json_t *h;

	(void)state;
	jdt_start(&d, "\"workers\": 2");
	snprintf(file, sizeof(file), "%s/bg", d.dir);
	/* The background runner keeps nothing its caller had open: the write end of this
	 * pipe (inherited by the tool, as a lock or a caller's pipe would be) is closed
	 * everywhere once the tool has returned, so the read end sees its end at once. */
	assert_int_equal(pipe(held), 0);
	assert_int_equal(tool(&d, out, sizeof(out), "submit --json --on-exit 'echo $JSCHED_JOB_STATE > %s' "
			      "-- sh -c 'sleep 60'", file), 0);
	close(held[1]);
	pfd.fd = held[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1 || read(held[0], got, 1) != 0)
		fail_msg("the background hook runner kept a descriptor the tool inherited");
	close(held[0]);
	id = job_of(out);
	k = jdt_connect(&d, "hooks");
	jdt_until_state(k, id, "running");
	jsched_close(k);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "hooks");
	h = wait_hooks(k, id);
	assert_string_equal(hstate(h), "succeeded");
	json_decref(h);
	slurp(file, got, sizeof(got));
	assert_string_equal(got, "failed"); /* it was running: daemon_restart */

	snprintf(file, sizeof(file), "%s/later", d.dir);
	p = jdt_submit_spec(k, "{\"kind\": \"call\", \"fn\": \"noop\", \"on_exit\": \"echo ran > %s\"}", file);
	assert_string_equal(jdt_wait_final(k, p, NULL), "succeeded");
	jsched_close(k);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "hooks");
	h = hooks(k, p);
	assert_string_equal(hstate(h), "pending");
	json_decref(h);
	assert_int_equal(tool(&d, out, sizeof(out), "hooks"), 0);
	slurp(file, got, sizeof(got));
	assert_string_equal(got, "ran");
	jsched_close(k);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "hooks");
	h = hooks(k, p);
	assert_string_equal(hstate(h), "succeeded");
	json_decref(h);
	/* Run again: nothing left to run. */
	assert_int_equal(tool(&d, out, sizeof(out), "hooks %llu", (unsigned long long)p), 0);
	jsched_close(k);
	assert_int_equal(jdt_stop(&d, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_protocol),
		cmocka_unit_test(test_tool_foreground),
		cmocka_unit_test(test_survive_kill9),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2", &c, "hooks");
}
