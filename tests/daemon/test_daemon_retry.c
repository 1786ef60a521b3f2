/* tests/daemon/test_daemon_retry.c: retries end to end on a jschedd whose wall clock the
 * test drives (--test-clock): a failed attempt that the policy names makes the job
 * `retrying` with its next attempt at exactly backoff_ms * factor^(retries so far) after
 * the failure, on the daemon's clock (checked at the millisecond: not a moment before);
 * each `on` case (an exit code, timeout, signal, failure) and one it does not name; the
 * record lists every attempt; after the last the job ends failed as usual; dependents are
 * judged on the final state only; a retrying job can be cancelled; `retry` runs a finished
 * job again as a new attempt of the same id, and refuses what it cannot (with stable
 * codes); bad policies are refused with bad_request and the field; and a job in the middle
 * of a backoff survives a kill -9 and runs at its time after the restart, also from a
 * snapshot (compaction), with a scheduled job beside it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

static json_int_t advance(int64_t ms)
{
	json_t *rep = jdt_ok(c, "{\"op\": \"test_clock\", \"advance_ms\": %lld}", (long long)ms);
	json_int_t due = json_integer_value(json_object_get(rep, "due"));

	json_decref(rep);
	return due;
}

static json_t *status(uint64_t id)
{
	json_t *r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *job = json_incref(json_object_get(r, "job"));

	json_decref(r);
	return job;
}

static json_int_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* sh: an exec job of `sh -c script` with `extra` spec members. */
static uint64_t sh(const char *script, const char *extra)
{
	return jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", \"%s\"]%s}", script,
			       extra);
}

static void test_backoff_on_the_clock(void **state)
{
	uint64_t id = sh("exit 3", ", \"retry\": {\"max_attempts\": 3, \"backoff_ms\": 1000, "
			 "\"factor\": 2, \"on\": [3]}");
	json_t *rec, *a;

	(void)state;
	jdt_until_state(c, id, "retrying");
	rec = status(id);
	a = json_object_get(rec, "attempts");
	assert_int_equal(json_array_size(a), 1);
	assert_int_equal(num(json_array_get(a, 0), "exit_code"), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "cause")), "exit");
	assert_int_equal(num(rec, "attempt"), 2);
	assert_int_equal(num(rec, "max_attempts"), 3);
	assert_int_equal(num(rec, "next_attempt_ms") - num(json_array_get(a, 0), "finished_ms"), 1000);
	json_decref(rec);
	assert_int_equal(advance(999), 0);
	assert_string_equal(jdt_state(c, id), "retrying");
	assert_int_equal(advance(1), 1);
	/* The second failure waits twice as long. */
	for (int i = 0; i < 3000; i++) {
		rec = status(id);
		if (num(rec, "attempt") == 3 && strcmp(json_string_value(json_object_get(rec, "state")), "retrying") == 0)
			break;
		json_decref(rec);
		rec = NULL;
		jdt_sleep_ms(10);
	}
	assert_non_null(rec);
	a = json_object_get(rec, "attempts");
	assert_int_equal(num(rec, "next_attempt_ms") - num(json_array_get(a, 1), "finished_ms"), 2000);
	json_decref(rec);
	assert_int_equal(advance(1999), 0);
	assert_int_equal(advance(1), 1);
	assert_string_equal(jdt_wait_final(c, id, &rec), "failed");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "exit");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 3);
	assert_int_equal(num(json_array_get(json_object_get(rec, "attempts"), 2), "exit_code"), 3);
	json_decref(rec);
}

static void test_on_cases(void **state)
{
	json_t *rec;
	uint64_t other = sh("exit 4", ", \"retry\": {\"max_attempts\": 3, \"backoff_ms\": 0, \"on\": [3]}");
	uint64_t tmo = sh("sleep 10", ", \"timeout_ms\": 50, \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 0, "
			  "\"on\": [\"timeout\"]}");
	uint64_t sig = sh("kill -9 $$", ", \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 0, \"on\": [\"signal\"]}");
	uint64_t sig_not = sh("kill -9 $$", ", \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 0, \"on\": [\"timeout\"]}");
	uint64_t call = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"fail\", \"retry\": {\"max_attempts\": 2, "
					"\"backoff_ms\": 0}}");

	(void)state;
	/* Not named: it ends at its first failure. */
	assert_string_equal(jdt_wait_final(c, other, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 1);
	json_decref(rec);
	/* A backoff of 0 runs the next attempt at once, without moving the clock. */
	assert_string_equal(jdt_wait_final(c, tmo, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(rec, "attempts"), 0),
							      "cause")), "timeout");
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, sig, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	assert_int_equal(num(json_array_get(json_object_get(rec, "attempts"), 0), "signal"), 9);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, sig_not, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 1);
	json_decref(rec);
	/* "failure" (the default) takes a failed handler too. */
	assert_string_equal(jdt_wait_final(c, call, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "handler");
	json_decref(rec);
}

/* The first attempt fails and leaves a file, the second succeeds: a dependent waits for the
 * final state and runs; a cancel of a retrying job ends it. */
static void test_dependents_and_cancel(void **state)
{
	char script[700];
	json_t *rec, *r;
	uint64_t a, b, x;

	(void)state;
	snprintf(script, sizeof(script), "test -e %s/once || { touch %s/once; exit 1; }", t.dir, t.dir);
	a = sh(script, ", \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 5000}");
	b = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [%llu]}", (unsigned long long)a);
	jdt_until_state(c, a, "retrying");
	assert_string_equal(jdt_state(c, b), "waiting");
	advance(5000);
	assert_string_equal(jdt_wait_final(c, a, &rec), "succeeded");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");

	x = sh("exit 1", ", \"retry\": {\"max_attempts\": 5, \"backoff_ms\": 60000}");
	jdt_until_state(c, x, "retrying");
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)x);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, x, &rec), "cancelled");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "cancel");
	json_decref(rec);
	assert_int_equal(advance(60000), 0);
}

static void test_retry_op(void **state)
{
	json_t *r, *rec;
	uint64_t ok = sh("exit 0", ""), later, call;

	(void)state;
	assert_string_equal(jdt_wait_final(c, ok, NULL), "succeeded");
	r = jdt_ok(c, "{\"op\": \"retry\", \"job\": %llu}", (unsigned long long)ok);
	assert_int_equal(num(json_array_get(json_object_get(r, "jobs"), 0), "attempt"), 2);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, ok, &rec), "succeeded");
	assert_int_equal(num(rec, "attempt"), 2);
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	json_decref(rec);
	/* Refused, nothing changed: a job not ended, a call job, an id never issued. */
	later = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"not_before\": %lld}",
				(long long)jdt_clock_advance(c, 0) + 3600000);
	r = jdt_req(c, "{\"op\": \"retry\", \"jobs\": [%llu, %llu]}", (unsigned long long)ok,
		    (unsigned long long)later);
	assert_string_equal(jdt_err_code(r), "protocol_error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[1]");
	json_decref(r);
	call = jdt_submit_call(c, "noop", "null");
	assert_string_equal(jdt_wait_final(c, call, NULL), "succeeded");
	r = jdt_req(c, "{\"op\": \"retry\", \"job\": %llu}", (unsigned long long)call);
	assert_string_equal(jdt_err_code(r), "not_supported");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"retry\", \"job\": 999999}");
	assert_string_equal(jdt_err_code(r), "no_such_job");
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)later);
	json_decref(r);
}

static void test_bad_policies(void **state)
{
	static const struct {
		const char *retry, *field;
	} bad[] = {
		{"{}", "job.retry.max_attempts"},
		{"{\"max_attempts\": 0}", "job.retry.max_attempts"},
		{"{\"max_attempts\": 1001}", "job.retry.max_attempts"},
		{"{\"max_attempts\": 2, \"factor\": 0.5}", "job.retry.factor"},
		{"{\"max_attempts\": 2, \"backoff_ms\": -1}", "job.retry.backoff_ms"},
		{"{\"max_attempts\": 2, \"on\": []}", "job.retry.on"},
		{"{\"max_attempts\": 2, \"on\": [\"sometimes\"]}", "job.retry.on[0]"},
		{"{\"max_attempts\": 2, \"on\": [3, 256]}", "job.retry.on[1]"},
		{"{\"max_attempts\": 2, \"tries\": 3}", "job.retry.tries"},
		{"3", "job.retry"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"true\"], "
				    "\"retry\": %s}}", bad[i].retry);

		assert_string_equal(jdt_err_code(r), "bad_request");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    bad[i].field);
		json_decref(r);
	}
}

/* kill -9 in the middle of a backoff: the restarted daemon keeps the attempts and the
 * next attempt's time, and runs it then. */
static void test_survives_kill9(void **state)
{
	uint64_t id = sh("exit 7", ", \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 3600000, \"on\": [7]}");
	json_t *rec;
	json_int_t next, now;

	(void)state;
	jdt_until_state(c, id, "retrying");
	rec = status(id);
	next = num(rec, "next_attempt_ms");
	json_decref(rec);
	jsched_close(c);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "retry");
	rec = status(id);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "retrying");
	assert_int_equal(num(rec, "next_attempt_ms"), next);
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 1);
	assert_int_equal(num(json_array_get(json_object_get(rec, "attempts"), 0), "exit_code"), 7);
	json_decref(rec);
	now = jdt_clock_advance(c, 0);
	assert_true(now < next);
	advance(next - 1 - now);
	assert_string_equal(jdt_state(c, id), "retrying");
	assert_int_equal(advance(1), 1);
	assert_string_equal(jdt_wait_final(c, id, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	json_decref(rec);
}

/* Compaction: a snapshot rebuilds each job from what it holds; a scheduled job's
 * not_before, a retrying job's policy, attempts and next attempt must come back from it
 * (kill -9 after the snapshot, the log before it gone). */
static void test_snapshot(void **state)
{
	char members[600];
	uint64_t sched, retrying, last = 0;
	json_int_t now, next;
	json_t *rec;

	(void)state;
	snprintf(members, sizeof(members), "\"workers\": 2, \"retention\": {\"jobs\": 500}, "
		 "\"journal\": {\"dir\": \"%s/journal\", \"compact_bytes\": 65536}", t.dir);
	jdt_write_config(&t, members);
	jsched_close(c);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "retry");
	now = jdt_clock_advance(c, 0);
	sched = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"not_before\": %lld}",
				(long long)(now + 3600000));
	retrying = sh("exit 7", ", \"retry\": {\"max_attempts\": 2, \"backoff_ms\": 3600000, \"on\": [7]}");
	jdt_until_state(c, retrying, "retrying");
	rec = status(retrying);
	next = num(rec, "next_attempt_ms");
	json_decref(rec);
	for (int i = 0; i < 3000; i++)
		last = jdt_submit_call(c, "echo", "{\"n\": 1}");
	assert_string_equal(jdt_wait_final(c, last, NULL), "succeeded");
	jdt_wait_snapshots(c, 1);
	jsched_close(c);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "retry");
	rec = status(sched);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "scheduled");
	assert_int_equal(num(rec, "not_before"), now + 3600000);
	json_decref(rec);
	rec = status(retrying);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "retrying");
	assert_int_equal(num(rec, "next_attempt_ms"), next);
	assert_int_equal(num(rec, "max_attempts"), 2);
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 1);
	json_decref(rec);
	now = jdt_clock_advance(c, 0);
	advance(next - now);
	assert_string_equal(jdt_wait_final(c, retrying, &rec), "failed");
	assert_int_equal(json_array_size(json_object_get(rec, "attempts")), 2);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, sched, NULL), "succeeded");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff_on_the_clock),
		cmocka_unit_test(test_on_cases),
		cmocka_unit_test(test_dependents_and_cancel),
		cmocka_unit_test(test_retry_op),
		cmocka_unit_test(test_bad_policies),
		cmocka_unit_test(test_survives_kill9),
		cmocka_unit_test(test_snapshot),
	};

	return JDT_RUN_GROUP_CLOCKED(tests, &t, "\"workers\": 2", &c, "retry");
}
