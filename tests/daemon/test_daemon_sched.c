/* tests/daemon/test_daemon_sched.c: delayed and scheduled jobs end to end, on a jschedd
 * whose wall clock the test drives (--test-clock): a job with a not_before ahead is
 * `scheduled` (record, list, metrics) until the clock reaches it, to the millisecond,
 * and jobs come due in time order; a scheduled job can be cancelled and held (it enters
 * the queue held); a deadline counts from submission, so one shorter than the delay
 * expires the job at the deadline; a not_before in the past starts the job at once;
 * dependencies come first (waiting, then scheduled); bad not_before values are refused
 * with bad_request and the field; the test clock exists only with --test-clock; and a
 * scheduled job survives a graceful stop and a kill -9 through the journal, coming due
 * after the restart at its own time.  No test sleeps for a schedule: time moves only
 * when the test moves it. */
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

/* now_ms: the daemon's (stopped) wall clock. */
static json_int_t now_ms(void)
{
	return jdt_clock_advance(c, 0);
}

/* advance: move the clock; returns how many jobs came due. */
static json_int_t advance(int64_t ms)
{
	json_t *rep = jdt_ok(c, "{\"op\": \"test_clock\", \"advance_ms\": %lld}", (long long)ms);
	json_int_t due = json_integer_value(json_object_get(rep, "due"));

	json_decref(rep);
	return due;
}

/* at: a noop call job not before `when`; returns its id. */
static uint64_t at(json_int_t when, const char *extra)
{
	return jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"not_before\": %lld%s}",
			       (long long)when, extra ? extra : "");
}

static json_int_t scheduled_count(void)
{
	json_t *m = jdt_metrics(c);
	json_int_t n = json_integer_value(json_object_get(json_object_get(m, "jobs"), "scheduled"));

	json_decref(m);
	return n;
}

static json_t *status(uint64_t id)
{
	json_t *r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *job = json_incref(json_object_get(r, "job"));

	json_decref(r);
	return job;
}

static void test_due_to_the_ms(void **state)
{
	json_int_t t0 = now_ms(), base = scheduled_count();
	uint64_t id = at(t0 + 600000, NULL);
	json_t *rec = status(id), *l;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "scheduled");
	assert_int_equal(json_integer_value(json_object_get(rec, "not_before")), t0 + 600000);
	json_decref(rec);
	assert_int_equal(scheduled_count(), base + 1);
	/* list by state finds it */
	l = jdt_ok(c, "{\"op\": \"list\", \"states\": [\"scheduled\"]}");
	assert_true(json_array_size(json_object_get(l, "jobs")) >= 1);
	json_decref(l);
	assert_int_equal(advance(599999), 0);
	assert_string_equal(jdt_state(c, id), "scheduled");
	assert_int_equal(advance(1), 1);
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	assert_true(json_integer_value(json_object_get(rec, "started_ms")) >= t0 + 600000);
	json_decref(rec);
	assert_int_equal(scheduled_count(), base);
}

static void test_time_order(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t late = at(t0 + 3000, NULL), early = at(t0 + 1000, NULL), mid = at(t0 + 2000, NULL);

	(void)state;
	assert_int_equal(advance(1000), 1);
	assert_string_equal(jdt_wait_final(c, early, NULL), "succeeded");
	assert_string_equal(jdt_state(c, mid), "scheduled");
	assert_string_equal(jdt_state(c, late), "scheduled");
	assert_int_equal(advance(5000), 2);
	assert_string_equal(jdt_wait_final(c, mid, NULL), "succeeded");
	assert_string_equal(jdt_wait_final(c, late, NULL), "succeeded");
}

static void test_cancel(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t id = at(t0 + 5000, NULL);
	json_t *r, *rec;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)id);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, id, &rec), "cancelled");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "cancel");
	json_decref(rec);
	/* Out of the heap: nothing comes due at its time. */
	assert_int_equal(advance(5000), 0);
}

static void test_hold(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t id = at(t0 + 1000, NULL);
	json_t *r, *rec;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"hold\", \"job\": %llu}", (unsigned long long)id);
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(r, "jobs"), 0), "held")));
	json_decref(r);
	rec = status(id);
	assert_true(json_is_true(json_object_get(rec, "held")));
	json_decref(rec);
	assert_int_equal(advance(1000), 1);
	/* Due, but held: queued and not started. */
	rec = status(id);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "queued");
	assert_true(json_is_true(json_object_get(rec, "held")));
	json_decref(rec);
	r = jdt_ok(c, "{\"op\": \"release\", \"job\": %llu}", (unsigned long long)id);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
}

static void test_deadline_from_submission(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t id = at(t0 + 600000, ", \"deadline_in_ms\": 60000");
	uint64_t ok = at(t0 + 1000, ", \"deadline_in_ms\": 60000");
	json_t *rec;

	(void)state;
	assert_int_equal(advance(1000), 1);
	assert_string_equal(jdt_wait_final(c, ok, NULL), "succeeded");
	assert_int_equal(advance(58999), 0);
	assert_string_equal(jdt_state(c, id), "scheduled");
	assert_int_equal(advance(1), 1);
	assert_string_equal(jdt_wait_final(c, id, &rec), "expired");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "deadline");
	json_decref(rec);
}

static void test_past_runs_at_once(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t id = at(t0 - 5000, NULL), zero = at(0, NULL);

	(void)state;
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	assert_string_equal(jdt_wait_final(c, zero, NULL), "succeeded");
}

static void test_deps_first(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t a = at(t0 + 1000, NULL);
	uint64_t b = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"not_before\": %lld, "
				     "\"after\": [%llu]}", (long long)(t0 + 2000), (unsigned long long)a);

	(void)state;
	assert_string_equal(jdt_state(c, b), "waiting");
	assert_int_equal(advance(1000), 1);
	assert_string_equal(jdt_wait_final(c, a, NULL), "succeeded");
	jdt_until_state(c, b, "scheduled");
	assert_int_equal(advance(1000), 1);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
}

static void test_bad_values(void **state)
{
	static const char *const bad[] = {"-1", "\"soon\"", "1.5", "true", "null", "[]"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": "
				    "\"noop\", \"not_before\": %s}}", bad[i]);
		const char *code = jdt_err_code(r);

		assert_string_equal(code, "bad_request");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    "job.not_before");
		json_decref(r);
	}
	{
		json_t *r = jdt_req(c, "{\"op\": \"test_clock\", \"advance_ms\": -5}");

		assert_string_equal(jdt_err_code(r), "bad_request");
		json_decref(r);
	}
}

/* Without --test-clock the operation is refused and the wall clock is the system's. */
static void test_no_test_clock(void **state)
{
	struct jdt plain;
	struct jsched_conn *pc;
	json_t *r;

	(void)state;
	jdt_start(&plain, "\"journal\": {\"sync\": \"off\"}");
	pc = jdt_connect(&plain, NULL);
	r = jdt_req(pc, "{\"op\": \"test_clock\", \"advance_ms\": 1000}");
	assert_string_equal(jdt_err_code(r), "not_supported");
	json_decref(r);
	jsched_close(pc);
	assert_int_equal(jdt_stop(&plain, SIGTERM), 0);
}

/* A graceful stop leaves a scheduled job for the next start (the journal keeps it); a
 * kill -9 as well; after each restart it is scheduled still and comes due at its time.
 * The restarted daemon's clock starts from the real time again, which is behind. */
static void test_survives_restart(void **state)
{
	json_int_t t0 = now_ms();
	uint64_t a = at(t0 + 3600000, NULL), b = at(t0 + 7200000, ", \"name\": \"later\"");
	json_t *rec;

	(void)state;
	jsched_close(c);
	/* SIGTERM: exits at once although two jobs are not final. */
	kill(t.pid, SIGTERM);
	assert_int_equal(jdt_wait_exit(&t, 30000), 0);
	jdt_restart(&t);
	c = jdt_connect(&t, "sched");
	assert_string_equal(jdt_state(c, a), "scheduled");
	assert_string_equal(jdt_state(c, b), "scheduled");
	jdt_kill9(&t);
	jsched_close(c);
	jdt_restart(&t);
	c = jdt_connect(&t, "sched");
	rec = status(b);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "scheduled");
	assert_int_equal(json_integer_value(json_object_get(rec, "not_before")), t0 + 7200000);
	assert_string_equal(json_string_value(json_object_get(rec, "name")), "later");
	json_decref(rec);
	/* Move the new clock to just before a's time, then past it, then past b's. */
	advance(t0 + 3600000 - 1 - now_ms());
	assert_string_equal(jdt_state(c, a), "scheduled");
	assert_int_equal(advance(1), 1);
	assert_string_equal(jdt_wait_final(c, a, NULL), "succeeded");
	assert_string_equal(jdt_state(c, b), "scheduled");
	assert_int_equal(advance(3600000), 1);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due_to_the_ms),
		cmocka_unit_test(test_time_order),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_deadline_from_submission),
		cmocka_unit_test(test_past_runs_at_once),
		cmocka_unit_test(test_deps_first),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_no_test_clock),
		cmocka_unit_test(test_survives_restart),
	};

	return JDT_RUN_GROUP_CLOCKED(tests, &t, "\"workers\": 2", &c, "sched");
}
