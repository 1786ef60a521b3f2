/* tests/daemon/test_daemon_sleep.c: sleeping jobs do not hold workers.  With two
 * workers, 200 `sleep` jobs of a minute each are all running (suspended on fibers) at
 * once, and a `noop` submitted after them completes while every sleep is still running:
 * the assertion is about order (the noop ended; no sleep had), not about time.  Then a
 * cancel ends every suspended sleep at once. */
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

#define SLEEPERS 200

static void test_sleepers_hold_no_worker(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	struct jsched_results *res = NULL;
	uint64_t ids[SLEEPERS], noop;
	json_t *m;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"fibers\": 512");
	c = jdt_connect(&t, "sleepy");
	for (int i = 0; i < SLEEPERS; i++)
		ids[i] = jdt_submit_call(c, "sleep", "{\"ms\": 60000}");
	/* Every sleeper gets a fiber and starts: none is left queued behind a worker.  (Each
	 * one is waited for: two workers start them in fair order, but a later one may be seen
	 * running a moment before an earlier one's start has been settled.) */
	for (int i = 0; i < SLEEPERS; i++)
		jdt_until_state(c, ids[i], "running");
	noop = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, noop, NULL), "succeeded");
	assert_true(jsched_status_many(c, ids, SLEEPERS, &res) >= 0);
	for (size_t i = 0; i < res->count; i++)
		assert_int_equal(res->items[i]->state, JSCHED_STATE_RUNNING);
	jsched_results_free(res);
	m = jdt_metrics(c);
	assert_true(json_integer_value(json_object_get(json_object_get(m, "fibers"), "suspended")) >= SLEEPERS);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "jobs"), "running")), SLEEPERS);
	json_decref(m);
	/* Cancel them all: their suspended waits return and every one ends cancelled. */
	assert_true(jsched_cancel_many(c, ids, SLEEPERS, &res) >= 0);
	jsched_results_free(res);
	assert_true(jsched_wait_many(c, ids, SLEEPERS, JSCHED_WAIT_ALL, 30000, &res) >= 0);
	for (size_t i = 0; i < res->count; i++)
		assert_int_equal(res->items[i]->state, JSCHED_STATE_CANCELLED);
	jsched_results_free(res);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sleepers_hold_no_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
