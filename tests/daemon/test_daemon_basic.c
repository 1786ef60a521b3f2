/* tests/daemon/test_daemon_basic.c: the end-to-end path against a real jschedd: hello,
 * call jobs (built-ins and the example module's), batches, status, list, the metrics
 * document, and the errors of the submit path (unknown handler, bad
 * ids, a forgotten job). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <string.h>

#include "tests/daemon/harness.h"

static struct jdt t;

static void test_hello_identity(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	json_t *hello = json_loads(jsched_hello_json(c), 0, NULL);
	json_t *who = json_object_get(hello, "identity");

	(void)state;
	assert_int_equal(json_integer_value(json_object_get(who, "uid")), (json_int_t)getuid());
	assert_int_equal(json_integer_value(json_object_get(who, "pid")), (json_int_t)getpid());
	assert_string_equal(json_string_value(json_object_get(who, "client")), "basic");
	assert_true(json_is_true(json_object_get(who, "admin"))); /* root / the daemon's uid */
	assert_non_null(json_object_get(json_object_get(hello, "limits"), "frame_bytes"));
	json_decref(hello);
	assert_int_equal(jsched_ping(c), 0);
	jsched_close(c);
}

static void test_call_builtins(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	json_t *rec;
	uint64_t id;

	(void)state;
	id = jdt_submit_call(c, "echo", "{\"x\": [1, 2, \"three\"]}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	{
		json_t *want = json_pack("{s:[i,i,s]}", "x", 1, 2, "three");

		assert_true(json_equal(json_object_get(rec, "value"), want));
		json_decref(want);
	}
	assert_int_equal(json_integer_value(json_object_get(rec, "job")), (json_int_t)id);
	assert_non_null(json_object_get(rec, "started_ms"));
	assert_non_null(json_object_get(rec, "finished_ms"));
	json_decref(rec);

	id = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	assert_true(json_is_null(json_object_get(rec, "value")));
	json_decref(rec);

	id = jdt_submit_call(c, "fail", "{\"message\": \"on purpose\"}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "failed");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "handler");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "on purpose"));
	json_decref(rec);

	id = jdt_submit_call(c, "spin", "{\"us\": 1000}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	id = jdt_submit_call(c, "sleep", "{\"ms\": 5}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	/* A bad argument fails the job, naming what was wrong. */
	id = jdt_submit_call(c, "sleep", "{\"seconds\": 5}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "ms"));
	json_decref(rec);
	/* The key found among other members, in a small object and a larger one; absent
	 * among others, or negative, it fails. */
	id = jdt_submit_call(c, "spin", "{\"i\": 7, \"us\": 10}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	id = jdt_submit_call(c, "sleep", "{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"ms\": 1}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	id = jdt_submit_call(c, "spin", "{\"i\": 7, \"usec\": 10}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "failed");
	id = jdt_submit_call(c, "spin", "{\"us\": -1}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "failed");
	jsched_close(c);
}

/* Records written one after another in a reply each carry their own job's times: b,
 * submitted after a ended, started after it, and both ran their 30 ms (the writer keeps
 * the last record's times to copy a repeated one, record.c). */
static void test_records_own_times(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	uint64_t a, b;
	json_t *w, *recs;
	json_int_t sub[4], start[4], fin[4];

	(void)state;
	a = jdt_submit_call(c, "sleep", "{\"ms\": 30}");
	assert_string_equal(jdt_wait_final(c, a, NULL), "succeeded");
	b = jdt_submit_call(c, "sleep", "{\"ms\": 30}");
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
	w = jdt_ok(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu, %llu, %llu], \"timeout_ms\": 30000}",
		   (unsigned long long)a, (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
	recs = json_object_get(w, "jobs");
	assert_int_equal(json_array_size(recs), 4);
	for (size_t i = 0; i < 4; i++) {
		json_t *rec = json_array_get(recs, i);

		assert_int_equal(json_integer_value(json_object_get(rec, "job")), i % 2 ? b : a);
		sub[i] = json_integer_value(json_object_get(rec, "submitted_ms"));
		start[i] = json_integer_value(json_object_get(rec, "started_ms"));
		fin[i] = json_integer_value(json_object_get(rec, "finished_ms"));
		assert_true(sub[i] > 0 && sub[i] <= start[i] && start[i] + 30 <= fin[i]);
		if (i >= 2) {
			assert_int_equal(sub[i], sub[i - 2]);
			assert_int_equal(start[i], start[i - 2]);
			assert_int_equal(fin[i], fin[i - 2]);
		}
	}
	assert_true(fin[0] <= sub[1]);
	json_decref(w);
	jsched_close(c);
}

static void test_module_handlers(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	json_t *rec;
	uint64_t id;

	(void)state;
	id = jdt_submit_call(c, "example.add", "{\"a\": 40, \"b\": 2}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(rec, "value")), 42);
	json_decref(rec);
	/* Sub-tasks spawned and joined through the module API. */
	id = jdt_submit_call(c, "example.psum", "{\"n\": 100000, \"parts\": 16}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(rec, "value")), 5000050000LL);
	json_decref(rec);
	id = jdt_submit_call(c, "example.nap", "{\"ms\": 1}");
	assert_string_equal(jdt_wait_final(c, id, &rec), "succeeded");
	assert_string_equal(json_string_value(json_object_get(rec, "value")), "rested");
	json_decref(rec);
	jsched_close(c);
}

static void test_batch_and_wait_many(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
			      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 1},"
			      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 2, \"name\": \"two\"},"
			      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 3, \"priority\": \"high\"}]}");
	json_t *ids = json_object_get(r, "jobs"), *w;
	uint64_t v[3];

	(void)state;
	assert_int_equal(json_array_size(ids), 3);
	for (int i = 0; i < 3; i++)
		v[i] = (uint64_t)json_integer_value(json_array_get(ids, (size_t)i));
	assert_true(v[0] < v[1] && v[1] < v[2]);
	w = jdt_ok(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu, %llu], \"timeout_ms\": 30000}",
		   (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2]);
	for (int i = 0; i < 3; i++) {
		json_t *rec = json_array_get(json_object_get(w, "jobs"), (size_t)i);

		assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
		assert_int_equal(json_integer_value(json_object_get(rec, "value")), i + 1);
	}
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(w, "jobs"), 1), "name")), "two");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(w, "jobs"), 2), "priority")), "high");
	json_decref(w);
	json_decref(r);
	jsched_close(c);
}

/* A wait with `"fields": "brief"`: every record is the job's id and state and nothing
 * else, in a wait of ids, of one id, in a timeout's `jobs`, and through libjsched's
 * jsched_wait_brief; another value is a bad request. */
static void test_brief_wait(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	uint64_t ok = jdt_submit_call(c, "echo", "{\"x\": 1}"), bad = jdt_submit_call(c, "fail", NULL);
	uint64_t slow = jdt_submit_call(c, "sleep", "{\"ms\": 60000}");
	json_t *w, *recs, *rec;

	(void)state;
	w = jdt_ok(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu], \"fields\": \"brief\", \"timeout_ms\": 30000}",
		   (unsigned long long)ok, (unsigned long long)bad);
	recs = json_object_get(w, "jobs");
	assert_int_equal(json_array_size(recs), 2);
	for (size_t i = 0; i < 2; i++) {
		rec = json_array_get(recs, i);
		assert_int_equal(json_object_size(rec), 2);
		assert_int_equal(json_integer_value(json_object_get(rec, "job")), (json_int_t)(i ? bad : ok));
		assert_string_equal(json_string_value(json_object_get(rec, "state")), i ? "failed" : "succeeded");
	}
	json_decref(w);
	w = jdt_ok(c, "{\"op\": \"wait\", \"job\": %llu, \"fields\": \"brief\"}", (unsigned long long)ok);
	rec = json_object_get(w, "job");
	assert_int_equal(json_object_size(rec), 2);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
	json_decref(w);
	/* "all" is the whole record, as without the member */
	w = jdt_ok(c, "{\"op\": \"wait\", \"job\": %llu, \"fields\": \"all\"}", (unsigned long long)ok);
	assert_true(json_object_size(json_object_get(w, "job")) > 2);
	assert_non_null(json_object_get(json_object_get(json_object_get(w, "job"), "value"), "x"));
	json_decref(w);
	/* a timeout's records as they stand, brief too */
	w = jdt_req(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu], \"fields\": \"brief\", \"timeout_ms\": 0}",
		    (unsigned long long)ok, (unsigned long long)slow);
	assert_string_equal(jdt_err_code(w), "timeout");
	recs = json_object_get(json_object_get(w, "error"), "jobs");
	assert_int_equal(json_array_size(recs), 2);
	assert_int_equal(json_object_size(json_array_get(recs, 1)), 2);
	assert_false(jsched_state_final(jsched_state_from_name(
		json_string_value(json_object_get(json_array_get(recs, 1), "state")))));
	json_decref(w);
	/* the library's call: id and state, nothing else */
	{
		uint64_t ids[2] = {ok, bad};
		struct jsched_results *res = NULL;

		assert_int_equal(jsched_wait_brief(c, ids, 2, JSCHED_WAIT_ALL, 30000, &res), 2);
		assert_int_equal(res->count, 2);
		assert_int_equal(res->items[0]->id, ok);
		assert_int_equal(res->items[0]->state, JSCHED_STATE_SUCCEEDED);
		assert_null(res->items[0]->value_json);
		assert_int_equal(res->items[1]->id, bad);
		assert_int_equal(res->items[1]->state, JSCHED_STATE_FAILED);
		assert_string_equal(res->items[1]->state_name, "failed");
		assert_null(res->items[1]->reason);
		jsched_results_free(res);
	}
	w = jdt_req(c, "{\"op\": \"wait\", \"job\": %llu, \"fields\": \"short\"}", (unsigned long long)ok);
	assert_string_equal(jdt_err_code(w), "bad_request");
	assert_string_equal(json_string_value(json_object_get(json_object_get(w, "error"), "field")), "fields");
	json_decref(w);
	assert_int_equal(jsched_cancel(c, slow), 0);
	assert_string_equal(jdt_wait_final(c, slow, NULL), "cancelled");
	jsched_close(c);
}

static void test_submit_errors(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	json_t *r;

	(void)state;
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"nope\"}}");
	assert_string_equal(jdt_err_code(r), "no_such_function");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "job.fn");
	json_decref(r);
	/* In a batch, a call naming another function than the one before it is looked up
	 * again (a run of one function shares its lookup). */
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"call\", \"fn\": \"noop\"},"
		       "{\"kind\": \"call\", \"fn\": \"noop\"}, {\"kind\": \"call\", \"fn\": \"nope\"}]}");
	assert_string_equal(jdt_err_code(r), "no_such_function");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[2].fn");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"exec\", \"argv\": [\"true\"]},"
		       "{\"kind\": \"call\", \"fn\": \"nope\"}]}");
	assert_string_equal(jdt_err_code(r), "no_such_function");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[1].fn");
	json_decref(r);
	{
		/* ... and runs its own handler: noop's null, then echo's 5. */
		json_t *rec;

		r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"call\", \"fn\": \"noop\"},"
			      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 5}]}");
		assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(json_array_get(
						    json_object_get(r, "jobs"), 1)), &rec), "succeeded");
		assert_int_equal(json_integer_value(json_object_get(rec, "value")), 5);
		json_decref(rec);
		json_decref(r);
	}
	/* Exec jobs are accepted (tests/daemon/test_daemon_exec.c covers them). */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"true\"]}}");
	json_decref(r);
	/* Whole or nothing: the second spec is bad, so the first is not created either. */
	{
		json_t *m0 = jdt_metrics(c), *m1;
		json_int_t before = json_integer_value(json_object_get(json_object_get(m0, "jobs"), "submitted"));

		r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"call\", \"fn\": \"noop\"},"
			       "{\"kind\": \"call\", \"fn\": \"noop\", \"colour\": \"red\"}]}");
		assert_string_equal(jdt_err_code(r), "bad_request");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[1].colour");
		json_decref(r);
		m1 = jdt_metrics(c);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(m1, "jobs"), "submitted")), before);
		json_decref(m0);
		json_decref(m1);
	}
	r = jdt_req(c, "{\"op\": \"status\", \"job\": 999999}");
	assert_string_equal(jdt_err_code(r), "no_such_job");
	json_decref(r);
	/* In a list, the error names the member of the id that failed. */
	uint64_t known = jdt_submit_call(c, "noop", NULL);
	static const char *const list_ops[] = {"status", "wait"};
	for (int i = 0; i < 2; i++) {
		r = jdt_req(c, "{\"op\": \"%s\", \"jobs\": [%llu, %llu, 999999]}", list_ops[i],
			    (unsigned long long)known, (unsigned long long)known);
		assert_string_equal(jdt_err_code(r), "no_such_job");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "jobs[2]");
		json_decref(r);
	}
	r = jdt_req(c, "{\"op\": \"output\", \"job\": %llu}",
		    (unsigned long long)jdt_submit_call(c, "noop", NULL));
	assert_string_equal(jdt_err_code(r), "not_supported");
	json_decref(r);
	jsched_close(c);
}

static void test_forgotten(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "basic");
	uint64_t first = jdt_submit_call(c, "noop", NULL), last = 0;
	json_t *r;

	(void)state;
	assert_string_equal(jdt_wait_final(c, first, NULL), "succeeded");
	/* Retention keeps 50 final jobs: 60 more push the first out. */
	for (int i = 0; i < 60; i++)
		last = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, last, NULL), "succeeded");
	r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)first);
	assert_string_equal(jdt_err_code(r), "job_forgotten");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"wait\", \"job\": %llu}", (unsigned long long)first);
	assert_string_equal(jdt_err_code(r), "job_forgotten");
	json_decref(r);
	jsched_close(c);
}

static void test_list_and_metrics(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "lister");
	uint64_t a = jdt_submit_call(c, "noop", NULL), b = jdt_submit_call(c, "fail", NULL);
	json_t *r, *m, *cl;

	(void)state;
	jdt_wait_final(c, a, NULL);
	jdt_wait_final(c, b, NULL);
	r = jdt_ok(c, "{\"op\": \"list\", \"client\": \"lister\", \"states\": [\"failed\"]}");
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(r, "jobs"), 0), "job")), (json_int_t)b);
	json_decref(r);

	m = jdt_metrics(c);
	assert_non_null(strstr(json_string_value(json_object_get(m, "version")), "jschedd"));
	assert_true(json_integer_value(json_object_get(json_object_get(m, "jobs"), "succeeded")) >= 1);
	assert_non_null(json_object_get(json_object_get(json_object_get(m, "latency_us"), "end_to_end"), "p99"));
	assert_non_null(json_object_get(json_object_get(m, "throughput"), "10s"));
	assert_non_null(json_object_get(json_object_get(m, "fairness"), "jain_index"));
	assert_int_equal(json_array_size(json_object_get(m, "workers")), 2);
	assert_non_null(json_object_get(json_object_get(m, "fibers"), "in_use"));
	assert_true(json_integer_value(json_object_get(json_object_get(m, "connections"), "open")) >= 1);
	cl = jdt_client_metrics(m, "lister");
	assert_non_null(cl);
	assert_int_equal(json_integer_value(json_object_get(cl, "succeeded")), 1);
	assert_int_equal(json_integer_value(json_object_get(cl, "failed")), 1);
	assert_int_equal(json_integer_value(json_object_get(cl, "weight")), 1);
	assert_non_null(json_object_get(json_object_get(cl, "queued"), "critical"));
	json_decref(m);
	jsched_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_identity),
		cmocka_unit_test(test_call_builtins),
		cmocka_unit_test(test_module_handlers),
		cmocka_unit_test(test_batch_and_wait_many),
		cmocka_unit_test(test_records_own_times),
		cmocka_unit_test(test_brief_wait),
		cmocka_unit_test(test_submit_errors),
		cmocka_unit_test(test_forgotten),
		cmocka_unit_test(test_list_and_metrics),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"retention\": {\"jobs\": 50}",
			     NULL, NULL);
}
