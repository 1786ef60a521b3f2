/* tests/daemon/test_daemon_deps.c: dependencies end to end: after / any_of on success,
 * failure and any end; a dependency that can never be satisfied cancels the dependent
 * (and, through it, a chain) with the reason; graphs by ref, whole or not at all;
 * cycles, unknown refs and unknown job ids refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

/* submit_dep: a noop depending on job `on_id` through `gate` with `on`. */
static uint64_t submit_dep(const char *gate, uint64_t on_id, const char *on)
{
	json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"echo\", "
			      "\"args\": \"ran\", \"%s\": [{\"job\": %llu, \"on\": \"%s\"}]}}",
			   gate, (unsigned long long)on_id, on);
	uint64_t id = (uint64_t)json_integer_value(json_object_get(r, "job"));

	json_decref(r);
	return id;
}

static void expect_cancelled_dependency(uint64_t id)
{
	json_t *rec;

	assert_string_equal(jdt_wait_final(c, id, &rec), "cancelled");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "dependency");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "dependency"));
	json_decref(rec);
}

static void test_after_each_outcome(void **state)
{
	uint64_t ok, bad, h;

	(void)state;
	/* The targets are still running when the dependents arrive: example.hold keeps
	 * them until cancelled, fail ends at once. */
	ok = jdt_submit_call(c, "example.nap", "{\"ms\": 20}");
	bad = jdt_submit_call(c, "fail", NULL);
	uint64_t on_ok_success = submit_dep("after", ok, "success");
	uint64_t on_ok_failure = submit_dep("after", ok, "failure");
	uint64_t on_ok_any = submit_dep("after", ok, "any");
	uint64_t on_bad_success = submit_dep("after", bad, "success");
	uint64_t on_bad_failure = submit_dep("after", bad, "failure");
	uint64_t on_bad_any = submit_dep("after", bad, "any");

	assert_string_equal(jdt_wait_final(c, on_ok_success, NULL), "succeeded");
	expect_cancelled_dependency(on_ok_failure);
	assert_string_equal(jdt_wait_final(c, on_ok_any, NULL), "succeeded");
	expect_cancelled_dependency(on_bad_success);
	assert_string_equal(jdt_wait_final(c, on_bad_failure, NULL), "succeeded");
	assert_string_equal(jdt_wait_final(c, on_bad_any, NULL), "succeeded");

	/* A cancelled target counts as a failure. */
	h = jdt_submit_call(c, "example.hold", NULL);
	uint64_t after_h = submit_dep("after", h, "failure");
	uint64_t after_h_success = submit_dep("after", h, "success");

	assert_string_equal(jdt_state(c, after_h), "waiting");
	assert_int_equal(jsched_cancel(c, h), 0);
	assert_string_equal(jdt_wait_final(c, h, NULL), "cancelled");
	assert_string_equal(jdt_wait_final(c, after_h, NULL), "succeeded");
	expect_cancelled_dependency(after_h_success);
}

static void test_any_of(void **state)
{
	uint64_t good, bad1, bad2;
	json_t *r;

	(void)state;
	good = jdt_submit_call(c, "example.nap", "{\"ms\": 10}");
	bad1 = jdt_submit_call(c, "fail", NULL);
	bad2 = jdt_submit_call(c, "fail", NULL);
	/* One of three succeeds: the gate opens. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", "
		      "\"any_of\": [%llu, %llu, %llu]}}", (unsigned long long)bad1,
		   (unsigned long long)bad2, (unsigned long long)good);
	assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(json_object_get(r, "job")), NULL), "succeeded");
	json_decref(r);
	/* All of them fail: it can never open. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", "
		      "\"any_of\": [%llu, %llu]}}", (unsigned long long)bad1, (unsigned long long)bad2);
	expect_cancelled_dependency((uint64_t)json_integer_value(json_object_get(r, "job")));
	json_decref(r);
}

static void test_never_satisfiable_chain(void **state)
{
	json_t *r;
	uint64_t ids[4];

	(void)state;
	/* root fails; mid waits for its success (never); leaf waits for mid's success;
	 * tail waits for leaf to end in any way, so it runs after the cascade. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"ref\": \"root\", \"kind\": \"call\", \"fn\": \"fail\"},"
		      "{\"ref\": \"mid\", \"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"root\"]},"
		      "{\"ref\": \"leaf\", \"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"mid\"]},"
		      "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [{\"ref\": \"leaf\", \"on\": \"any\"}]}]}");
	for (int i = 0; i < 4; i++)
		ids[i] = (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), (size_t)i));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "refs"), "mid")), (json_int_t)ids[1]);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, ids[0], NULL), "failed");
	expect_cancelled_dependency(ids[1]);
	expect_cancelled_dependency(ids[2]);
	assert_string_equal(jdt_wait_final(c, ids[3], NULL), "succeeded");
}

static void test_graph_diamond_order(void **state)
{
	json_t *r, *w;
	char *ids;
	int64_t started[4], finished[4];

	(void)state;
	/* a -> b, c -> d: d starts only after both b and c have finished. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"ref\": \"d\", \"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"b\", \"c\"]},"
		      "{\"ref\": \"b\", \"kind\": \"call\", \"fn\": \"example.nap\", \"args\": {\"ms\": 5}, \"after\": [\"a\"]},"
		      "{\"ref\": \"c\", \"kind\": \"call\", \"fn\": \"example.nap\", \"args\": {\"ms\": 5}, \"after\": [\"a\"]},"
		      "{\"ref\": \"a\", \"kind\": \"call\", \"fn\": \"noop\"}]}");
	ids = json_dumps(json_object_get(r, "jobs"), 0);
	w = jdt_ok(c, "{\"op\": \"wait\", \"jobs\": %s, \"timeout_ms\": 30000}", ids);
	free(ids);
	for (int i = 0; i < 4; i++) {
		json_t *rec = json_array_get(json_object_get(w, "jobs"), (size_t)i);

		assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
		started[i] = json_integer_value(json_object_get(rec, "started_ms"));
		finished[i] = json_integer_value(json_object_get(rec, "finished_ms"));
	}
	/* Spec order: d, b, c, a. */
	assert_true(started[1] >= finished[3] && started[2] >= finished[3]);
	assert_true(started[0] >= finished[1] && started[0] >= finished[2]);
	json_decref(w);
	json_decref(r);
}

static void test_graph_refused_whole(void **state)
{
	json_int_t before = jdt_jobs_submitted(c);
	json_t *r;

	(void)state;
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": ["
		       "{\"ref\": \"x\", \"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"y\"]},"
		       "{\"ref\": \"y\", \"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"x\"]}]}");
	assert_string_equal(jdt_err_code(r), "dependency_cycle");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": ["
		       "{\"ref\": \"x\", \"kind\": \"call\", \"fn\": \"noop\"},"
		       "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"nowhere\"]}]}");
	assert_string_equal(jdt_err_code(r), "unknown_dependency");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": ["
		       "{\"kind\": \"call\", \"fn\": \"noop\"},"
		       "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [987654]}]}");
	assert_string_equal(jdt_err_code(r), "unknown_dependency");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[1].after[0]");
	json_decref(r);
	/* None of the refused graphs left a job behind. */
	assert_int_equal(jdt_jobs_submitted(c), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_after_each_outcome),
		cmocka_unit_test(test_any_of),
		cmocka_unit_test(test_never_satisfiable_chain),
		cmocka_unit_test(test_graph_diamond_order),
		cmocka_unit_test(test_graph_refused_whole),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2", &c, "deps");
}
