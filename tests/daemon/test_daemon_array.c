/* tests/daemon/test_daemon_array.c: job arrays end to end against the real daemon: an array
 * of one and of 100,000 with %N (never more than N of its elements running, counted from
 * the watch events), each command's index in its environment and in place of {}, element
 * ids and records, wait/status/cancel/hold/release and a dependency on the whole array,
 * its aggregate state, bad indices and the element limit refused with stable codes, and an
 * array half done surviving kill -9 (elements that were running end failed with cause
 * daemon_restart, those not started run after the restart, a cancel of the rest holds). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

/* count: the parent record's count of elements in state s. */
static json_int_t count(const json_t *rec, const char *s)
{
	return json_integer_value(json_object_get(json_object_get(json_object_get(rec, "array"), "states"), s));
}

/* kill9_restart: kill -9 daemon d, start it again, and give *k a new connection. */
static void kill9_restart(struct jdt *d, struct jsched_conn **k)
{
	jsched_close(*k);
	jdt_kill9(d);
	jdt_restart(d);
	*k = jdt_connect(d, "arrays");
}

static json_t *status(struct jsched_conn *conn, uint64_t id)
{
	json_t *r = jdt_ok(conn, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *rec = json_incref(json_object_get(r, "job"));

	json_decref(r);
	return rec;
}

static void test_array_of_one(void **state)
{
	uint64_t p = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 5, \"array\": \"7\"}");
	json_t *rec, *el;

	(void)state;
	assert_string_equal(jdt_wait_final(c, p, &rec), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "array"), "count")), 1);
	assert_int_equal(count(rec, "succeeded"), 1);
	json_decref(rec);
	el = status(c, p + 1);
	assert_int_equal(json_integer_value(json_object_get(el, "array_id")), (json_int_t)p);
	assert_int_equal(json_integer_value(json_object_get(el, "array_index")), 7);
	assert_string_equal(json_string_value(json_object_get(el, "state")), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(el, "value")), 5);
	json_decref(el);
	/* The id after the array's last element is not one of its own. */
	rec = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)p + 2);
	assert_string_equal(jdt_err_code(rec), "no_such_job");
	json_decref(rec);
}

/* test_large_with_limit: 20,000 noops, at most 50 at once: the watch events of the
 * elements never show more than 50 running; then 100,000 (the default limit). */
static void test_large_with_limit(void **state)
{
	int fd = jdt_raw_hello(&t, "arrays");
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"watch\", \"id\": 1}"), *ev, *rec;
	uint64_t p, ended = 0;
	long running = 0, peak = 0;

	(void)state;
	json_decref(r);
	r = jdt_raw_ask(fd, "{\"op\": \"submit\", \"id\": 2, \"job\": {\"kind\": \"call\", \"fn\": \"noop\", "
			    "\"array\": \"1-20000%50\"}}");
	p = (uint64_t)json_integer_value(json_object_get(r, "job"));
	assert_true(p > 0);
	json_decref(r);
	/* Every element's running and final events, in order: bounded by the element count
	 * (at most four events each, and the parent's). */
	for (long n = 0; n < 100010 && ended < 20000; n++) {
		const char *st;
		uint64_t id;

		ev = jdt_read_frame(fd);
		assert_non_null(ev);
		rec = json_object_get(ev, "job");
		id = (uint64_t)json_integer_value(json_object_get(rec, "job"));
		st = json_string_value(json_object_get(rec, "state"));
		if (id > p && id <= p + 20000 && st) {
			if (strcmp(st, "running") == 0 && ++running > peak)
				peak = running;
			else if (strcmp(st, "succeeded") == 0 && rec && json_object_get(rec, "started_ms")) {
				running--;
				ended++;
			}
		}
		json_decref(ev);
	}
	close(fd);
	assert_int_equal(ended, 20000);
	assert_true(peak >= 1 && peak <= 50);
	assert_string_equal(jdt_wait_final(c, p, &rec), "succeeded");
	assert_int_equal(count(rec, "succeeded"), 20000);
	json_decref(rec);
	p = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-100000%%50\"}");
	assert_string_equal(jdt_wait_final(c, p, &rec), "succeeded");
	assert_int_equal(count(rec, "succeeded"), 100000);
	json_decref(rec);
	/* A list of the elements goes by index, a page at a time. */
	r = jdt_ok(c, "{\"op\": \"list\", \"array\": %llu, \"after_job\": %llu, \"limit\": 3}",
		   (unsigned long long)p, (unsigned long long)p + 99997);
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(r, "jobs"), 2),
							    "array_index")), 100000);
	assert_true(json_is_false(json_object_get(r, "more")));
	json_decref(r);
}

/* test_exec_index: each command sees its index and the array's id, and {} becomes the
 * index in its words. */
static void test_exec_index(void **state)
{
	uint64_t p = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
				     "\"printf '%%s %%s %%s' \\\"$JSCHED_ARRAY_INDEX\\\" \\\"$JSCHED_ARRAY_ID\\\" \\\"$1\\\"\", "
				     "\"sh\", \"x{}y{}\"], \"array\": \"0-6:3\", \"array_replace\": true}");
	static const int idx[] = {0, 3, 6};

	(void)state;
	assert_string_equal(jdt_wait_final(c, p, NULL), "succeeded");
	for (int i = 0; i < 3; i++) {
		struct jsched_output *o = NULL;
		char want[64];

		assert_int_equal(jsched_output(c, p + 1 + (uint64_t)i, &o), 0);
		snprintf(want, sizeof(want), "%d %llu x%dy%d", idx[i], (unsigned long long)p, idx[i], idx[i]);
		assert_string_equal(o->out, want);
		jsched_output_free(o);
	}
	{
		json_t *r = jdt_req(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)p);

		assert_string_equal(jdt_err_code(r), "not_supported");
		json_decref(r);
	}
}

/* test_cancel_and_fail: cancelling the array cancels every element (not started ones at
 * once); an array with a failed element fails, naming the first; a dependency waits for
 * the whole array. */
static void test_cancel_and_fail(void **state)
{
	uint64_t p = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 60000}, "
				     "\"array\": \"1-1000%%2\"}");
	json_t *rec, *r;
	uint64_t f, dep, ok;

	(void)state;
	jdt_until_state(c, p, "running");
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)p);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, p, &rec), "cancelled");
	assert_int_equal(count(rec, "cancelled"), 1000);
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "cancel");
	json_decref(rec);
	rec = status(c, p + 600);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "cancelled");
	json_decref(rec);

	f = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 1, \"array\": \"1-3,5\"}");
	dep = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [%llu]}", (unsigned long long)f);
	assert_string_equal(jdt_wait_final(c, dep, NULL), "succeeded");
	assert_string_equal(jdt_state(c, f), "succeeded");
	f = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"fail\", \"array\": \"1-4\"}");
	dep = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [%llu]}", (unsigned long long)f);
	ok = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [{\"job\": %llu, \"on\": \"failure\"}]}",
			     (unsigned long long)f);
	assert_string_equal(jdt_wait_final(c, f, &rec), "failed");
	assert_int_equal(count(rec, "failed"), 4);
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "index 1"));
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, dep, NULL), "cancelled");
	assert_string_equal(jdt_wait_final(c, ok, NULL), "succeeded");
}

/* test_hold_release: a held array releases nothing when its gate opens; released, it
 * runs. */
static void test_hold_release(void **state)
{
	uint64_t b = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 100}}");
	uint64_t p = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-5\", "
				     "\"after\": [%llu]}", (unsigned long long)b);
	json_t *r, *rec;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"hold\", \"job\": %llu}", (unsigned long long)p);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
	rec = status(c, p);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "queued");
	assert_true(json_is_true(json_object_get(rec, "held")));
	assert_int_equal(count(rec, "waiting"), 5);
	json_decref(rec);
	r = jdt_ok(c, "{\"op\": \"release\", \"job\": %llu}", (unsigned long long)p);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, p, &rec), "succeeded");
	assert_int_equal(count(rec, "succeeded"), 5);
	json_decref(rec);
}

static void refused(const char *spec, const char *code, const char *field)
{
	json_t *r = jdt_req(c, "{\"op\": \"submit\", \"job\": %s}", spec);

	assert_string_equal(jdt_err_code(r), code);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), field);
	json_decref(r);
}

static void test_bad_indices(void **state)
{
	json_int_t before = jdt_jobs_submitted(c);

	(void)state;
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"5-1\"}", "bad_request", "job.array");
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-10%0\"}", "bad_request", "job.array");
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-10:0\"}", "bad_request", "job.array");
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"3,1\"}", "bad_request", "job.array");
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"\"}", "bad_request", "job.array");
	/* limits.array_elements: 100,000 by default (the hello reply says so). */
	refused("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"0-100000\"}", "limit_exceeded", "job.array");
	refused("{\"kind\": \"exec\", \"argv\": [\"true\"], \"array_replace\": true}", "bad_request",
		"job.array_replace");
	assert_int_equal(jdt_jobs_submitted(c), before);
}

/* test_tool: jsched submit --array prints the array's id; wait, status and ls --array take
 * its elements; bad indices exit 64 before anything is sent. */
static void test_tool(void **state)
{
	char out[8192], want[64];
	uint64_t p;

	(void)state;
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "submit --array 2,4%%1 --fn echo --args 7"), 0);
	p = strtoull(out, NULL, 10);
	assert_true(p > 0);
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "wait --array %llu", (unsigned long long)p), 0);
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "status --json --array %llu",
				  (unsigned long long)p), 0);
	{
		json_t *o = json_loads(out, 0, NULL), *jobs = json_object_get(o, "jobs");

		assert_int_equal(json_array_size(jobs), 2);
		assert_int_equal(json_integer_value(json_object_get(json_array_get(jobs, 1), "array_index")), 4);
		json_decref(o);
	}
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "ls --no-headings -o id,result"), 0);
	snprintf(want, sizeof(want), "%llu 2: 2 succeeded", (unsigned long long)p);
	assert_non_null(strstr(out, want));
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "submit --array 5-1 --fn noop 2>/dev/null"), 64);
	assert_int_equal(jdt_tool(&t, "arrays", out, sizeof(out), "submit --array 1-3%%0 --fn noop 2>/dev/null"), 64);
}

/* test_restart_half_done: kill -9 with two elements done, two running and two not
 * started; after the restart the running two are failed (daemon_restart), the last two
 * run; a cancel of an array's not started elements survives a second kill -9. */
static void test_restart_half_done(void **state)
{
	struct jdt d;
	struct jsched_conn *k;
	json_t *rec = NULL;
	uint64_t p, q;

	(void)state;
	jdt_start(&d, "\"workers\": 2");
	k = jdt_connect(&d, "arrays");
	p = jdt_submit_spec(k, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"[ $JSCHED_ARRAY_INDEX -le 2 ] || "
				"[ -e %s/go ] || sleep 60\"], \"array\": \"1-6%%2\"}", d.dir);
	for (int i = 0; i < 3000; i++) {
		json_decref(rec);
		rec = status(k, p);
		if (count(rec, "succeeded") == 2 && count(rec, "running") == 2)
			break;
		jdt_sleep_ms(10);
	}
	assert_int_equal(count(rec, "succeeded"), 2);
	assert_int_equal(count(rec, "running"), 2);
	json_decref(rec);
	jsched_close(k);
	jdt_kill9(&d);
	{
		/* The elements not yet started find the file and end at once. */
		char go[400];
		FILE *f;

		snprintf(go, sizeof(go), "%s/go", d.dir);
		assert_non_null(f = fopen(go, "w"));
		fclose(f);
	}
	jdt_restart(&d);
	k = jdt_connect(&d, "arrays");
	assert_string_equal(jdt_wait_final(k, p, &rec), "failed");
	assert_int_equal(count(rec, "succeeded"), 4);
	assert_int_equal(count(rec, "failed"), 2);
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "daemon_restart");
	json_decref(rec);
	for (uint64_t i = 1; i <= 6; i++) {
		rec = status(k, p + i);
		assert_string_equal(json_string_value(json_object_get(rec, "state")),
				    i == 3 || i == 4 ? "failed" : "succeeded");
		json_decref(rec);
	}
	q = jdt_submit_spec(k, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 60000}, "
				"\"array\": \"1-100%%1\"}");
	jdt_until_state(k, q, "running");
	rec = jdt_ok(k, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)q);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(k, q, NULL), "cancelled");
	kill9_restart(&d, &k);
	rec = status(k, q);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "cancelled");
	assert_int_equal(count(rec, "cancelled"), 100);
	json_decref(rec);
	rec = status(k, q + 50);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "cancelled");
	json_decref(rec);
	/* New ids come after every id the arrays reserved. */
	assert_true(jdt_submit_call(k, "noop", "null") > q + 100);
	jsched_close(k);
	assert_int_equal(jdt_stop(&d, SIGTERM), 0);
}

/* test_snapshot: arrays written into a snapshot (journal.compact_bytes small: 3,000
 * elements' final records pass it) come back from it after kill -9: a finished array with
 * its elements' values, a cancelled one, and one running (its running element failed,
 * the rest released again). */
static void test_snapshot(void **state)
{
	struct jdt d;
	struct jsched_conn *k;
	char members[600];
	uint64_t done, stopped, live;
	json_t *rec;

	(void)state;
	jdt_start(&d, "\"workers\": 2");
	snprintf(members, sizeof(members), "\"workers\": 2, \"journal\": {\"dir\": \"%s/journal\", "
		 "\"compact_bytes\": 65536}", d.dir);
	jdt_write_config(&d, members);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "arrays");
	done = jdt_submit_spec(k, "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": {\"n\": 1}, "
				  "\"array\": \"1-3000\"}");
	assert_string_equal(jdt_wait_final(k, done, NULL), "succeeded");
	stopped = jdt_submit_spec(k, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 600000}, "
				     "\"array\": \"1-50%%1\"}");
	jdt_until_state(k, stopped, "running");
	rec = jdt_ok(k, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)stopped);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(k, stopped, NULL), "cancelled");
	live = jdt_submit_spec(k, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 600000}, "
				  "\"array\": \"1-10%%1\"}");
	jdt_until_state(k, live, "running");
	/* The 1 s tick starts the snapshot: bounded wait for the metrics to say it is done. */
	jdt_wait_snapshots(k, 1);
	kill9_restart(&d, &k);
	rec = status(k, done);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
	assert_int_equal(count(rec, "succeeded"), 3000);
	json_decref(rec);
	rec = status(k, done + 1500);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "value"), "n")), 1);
	json_decref(rec);
	rec = status(k, stopped);
	assert_int_equal(count(rec, "cancelled"), 50);
	json_decref(rec);
	rec = status(k, live + 1);
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "daemon_restart");
	json_decref(rec);
	jdt_until_state(k, live + 2, "running");
	rec = jdt_ok(k, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)live);
	json_decref(rec);
	assert_string_equal(jdt_wait_final(k, live, &rec), "failed");
	assert_int_equal(count(rec, "failed"), 1);
	assert_int_equal(count(rec, "cancelled"), 9);
	json_decref(rec);
	jsched_close(k);
	assert_int_equal(jdt_stop(&d, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_of_one),
		cmocka_unit_test(test_large_with_limit),
		cmocka_unit_test(test_exec_index),
		cmocka_unit_test(test_cancel_and_fail),
		cmocka_unit_test(test_hold_release),
		cmocka_unit_test(test_bad_indices),
		cmocka_unit_test(test_tool),
		cmocka_unit_test(test_restart_half_done),
		cmocka_unit_test(test_snapshot),
	};

	/* The watch of 20,000 elements' events needs room for them in its output buffer
	 * (the test reads them as fast as it can; the daemon makes them faster). */
	return JDT_RUN_GROUP(tests, &t, "\"workers\": 4, \"journal\": {\"sync\": \"off\"}, "
			     "\"limits\": {\"output_buffer_bytes\": 67108864}",
			     &c, "arrays");
}
