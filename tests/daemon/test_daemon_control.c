/* tests/daemon/test_daemon_control.c: cancel (queued, running, suspended in a sleep),
 * deadlines (relative, absolute in the past), drain, and each overflow strategy
 * (reject, drop_oldest, drop_newest, block) against a real jschedd.
 *
 * The daemon runs one worker, and example.hold keeps that worker busy until the test
 * cancels it: "queued" is then a state the test controls, not a race it hopes to win.
 * The jobs queued behind it are spin jobs of 0 µs, not noops: the loop thread runs an
 * inline handler's job (noop's) itself, held worker or not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <string.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

/* hold: occupy the only worker; returns the holding job (running). */
static uint64_t hold(void)
{
	uint64_t h = jdt_submit_call(c, "example.hold", NULL);

	jdt_until_state(c, h, "running");
	return h;
}

static void release(uint64_t h)
{
	assert_int_equal(jsched_cancel(c, h), 0);
	assert_string_equal(jdt_wait_final(c, h, NULL), "cancelled");
}

static void test_cancel_queued_and_running(void **state)
{
	uint64_t h = hold(), q = jdt_submit_call(c, "spin", "{\"us\": 0}");
	json_t *r, *rec;

	(void)state;
	assert_string_equal(jdt_state(c, q), "queued");
	r = jdt_ok(c, "{\"op\": \"cancel\", \"jobs\": [%llu, %llu]}", (unsigned long long)q,
		   (unsigned long long)h);
	/* The queued one is cancelled at once; the running one is asked to stop. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "jobs"), 0), "state")), "cancelled");
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(r, "jobs"), 1), "cancelling")));
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, h, &rec), "cancelled");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "cancel");
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, q, &rec), "cancelled");
	assert_null(json_object_get(rec, "started_ms")); /* it never ran */
	json_decref(rec);
	/* Cancelling a final job is not an error and changes nothing. */
	assert_int_equal(jsched_cancel(c, q), 0);
	assert_string_equal(jdt_state(c, q), "cancelled");
}

/* inline_count / dispatched: the metrics' count of jobs the loop thread ran itself, and
 * the client's dispatched counter. */
static json_int_t inline_count(json_int_t *dispatched)
{
	json_t *m = jdt_metrics(c);
	json_int_t n = json_integer_value(json_object_get(json_object_get(m, "notices"), "inline"));

	*dispatched = json_integer_value(json_object_get(jdt_client_metrics(m, "control"), "dispatched"));
	json_decref(m);
	return n;
}

/* An inline handler's job (echo's) runs on the loop thread: it ends while the only worker
 * is held and a spin job waits queued for it, and it is dispatched through the fair layer
 * like any other (the client's counter counts it). */
static void test_inline_beside_held_worker(void **state)
{
	uint64_t h = hold(), q = jdt_submit_call(c, "spin", "{\"us\": 0}"), e;
	json_int_t d0, d1, n0 = inline_count(&d0), n1;
	json_t *rec;

	(void)state;
	e = jdt_submit_call(c, "echo", "{\"x\": 7}");
	assert_string_equal(jdt_wait_final(c, e, &rec), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "value"), "x")), 7);
	assert_non_null(json_object_get(rec, "started_ms"));
	json_decref(rec);
	assert_string_equal(jdt_state(c, q), "queued");
	n1 = inline_count(&d1);
	assert_int_equal(n1, n0 + 1);
	assert_int_equal(d1, d0 + 1);
	release(h);
	assert_string_equal(jdt_wait_final(c, q, NULL), "succeeded");
	n1 = inline_count(&d1);
	assert_int_equal(n1, n0 + 1); /* the spin job ran on the worker */
	assert_int_equal(d1, d0 + 2);
}

static void test_cancel_suspended_sleep(void **state)
{
	/* A minute-long sleep on a fiber: the cancel makes its wait return at once. */
	uint64_t s = jdt_submit_call(c, "sleep", "{\"ms\": 60000}");
	json_t *rec;

	(void)state;
	jdt_until_state(c, s, "running");
	assert_int_equal(jsched_cancel(c, s), 0);
	assert_string_equal(jdt_wait_final(c, s, &rec), "cancelled");
	assert_true(json_integer_value(json_object_get(rec, "finished_ms")) -
			    json_integer_value(json_object_get(rec, "started_ms")) < 60000);
	json_decref(rec);
}

static void test_deadlines(void **state)
{
	uint64_t h = hold();
	json_t *r, *rec;
	uint64_t rel, past;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": 0}, \"deadline_in_ms\": 1}}");
	rel = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": 0}, \"deadline_at_ms\": 1000}}");
	past = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	/* The worker is held for as long as these take to expire: neither can start. */
	assert_string_equal(jdt_wait_final(c, rel, &rec), "expired");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "deadline");
	assert_null(json_object_get(rec, "started_ms"));
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, past, NULL), "expired");
	/* A job still waiting for its dependencies expires at its deadline too. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": 0}, "
		      "\"deadline_in_ms\": 1, \"after\": [%llu]}}", (unsigned long long)h);
	assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(json_object_get(r, "job")), &rec), "expired");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "waited"));
	json_decref(rec);
	json_decref(r);
	release(h);
	/* A generous deadline is met. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": 0}, \"deadline_in_ms\": 600000}}");
	assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(json_object_get(r, "job")), NULL), "succeeded");
	json_decref(r);
}

static struct jsched_results *any_results;
static void any_cb(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	(void)conn;
	(void)arg;
	assert_int_equal(status, 0);
	assert_int_equal(jsched_reply_results(reply, &any_results), 0);
}

static void test_wait_timeout(void **state)
{
	uint64_t h = hold(), q = jdt_submit_call(c, "spin", "{\"us\": 0}");
	json_t *r, *jobs;

	(void)state;
	/* 0 polls; a short timeout runs out: both answer `timeout` with the records as they
	 * stand, in request order. */
	r = jdt_req(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu], \"timeout_ms\": 0}",
		    (unsigned long long)h, (unsigned long long)q);
	assert_string_equal(jdt_err_code(r), "timeout");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"wait\", \"jobs\": [%llu, %llu], \"timeout_ms\": 20}",
		    (unsigned long long)h, (unsigned long long)q);
	assert_string_equal(jdt_err_code(r), "timeout");
	jobs = json_object_get(json_object_get(r, "error"), "jobs");
	assert_int_equal(json_array_size(jobs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 0), "state")), "running");
	assert_string_equal(json_string_value(json_object_get(json_array_get(jobs, 1), "state")), "queued");
	json_decref(r);
	/* "any": answered when the first one ends (the held job, cancelled here). */
	{
		struct jsched_conn *o = jdt_connect(&t, "control");
		uint64_t ids[2] = {q, h};

		any_results = NULL;
		assert_true(jsched_wait_async(o, ids, 2, JSCHED_WAIT_ANY, 30000, any_cb, NULL) > 0);
		assert_int_equal(jsched_ping(o), 0); /* the wait is registered */
		assert_int_equal(jsched_cancel(c, h), 0);
		for (int i = 0; i < 3000 && !any_results; i++) {
			struct pollfd p = {.fd = jsched_fd(o), .events = POLLIN};

			if (poll(&p, 1, 10) > 0)
				assert_true(jsched_process(o) >= 0);
		}
		assert_non_null(any_results);
		assert_int_equal(any_results->count, 2);
		assert_int_equal(any_results->items[1]->state, JSCHED_STATE_CANCELLED);
		assert_false(jsched_state_final(any_results->items[0]->state) &&
			     any_results->items[0]->state != JSCHED_STATE_SUCCEEDED);
		jsched_results_free(any_results);
		jsched_close(o);
	}
	assert_string_equal(jdt_wait_final(c, q, NULL), "succeeded");
}

static void test_drain(void **state)
{
	uint64_t h = hold(), q[3];
	uint64_t cancelled = 0, cancelling = 0;

	(void)state;
	for (int i = 0; i < 3; i++)
		q[i] = jdt_submit_call(c, "spin", "{\"us\": 0}");
	assert_int_equal(jsched_drain(c, NULL, false, &cancelled, &cancelling), 0);
	assert_int_equal(cancelled, 3);
	assert_int_equal(cancelling, 0);
	for (int i = 0; i < 3; i++)
		assert_string_equal(jdt_state(c, q[i]), "cancelled");
	assert_string_equal(jdt_state(c, h), "running");
	release(h);
}

static void fill_two(struct jsched_conn *o, uint64_t *a, uint64_t *b)
{
	*a = jdt_submit_call(o, "spin", "{\"us\": 0}");
	*b = jdt_submit_call(o, "spin", "{\"us\": 0}");
}

static void test_overflow_reject_and_drops(void **state)
{
	uint64_t h = hold(), a, b, n;
	struct jsched_conn *o;
	json_t *r, *rec;

	(void)state;
	o = jdt_connect(&t, "rej");
	fill_two(o, &a, &b);
	r = jdt_req(o, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": 0}}}");
	assert_string_equal(jdt_err_code(r), "queue_full");
	json_decref(r);
	jsched_close(o);

	o = jdt_connect(&t, "dold");
	fill_two(o, &a, &b);
	n = jdt_submit_call(o, "spin", "{\"us\": 0}");
	assert_string_equal(jdt_wait_final(o, a, &rec), "dropped");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "overflow");
	json_decref(rec);
	assert_string_equal(jdt_state(o, b), "queued");
	assert_string_equal(jdt_state(o, n), "queued");
	jsched_close(o);

	o = jdt_connect(&t, "dnew");
	fill_two(o, &a, &b);
	n = jdt_submit_call(o, "spin", "{\"us\": 0}");
	assert_string_equal(jdt_wait_final(o, n, NULL), "dropped");
	assert_string_equal(jdt_state(o, a), "queued");
	assert_string_equal(jdt_state(o, b), "queued");
	jsched_close(o);

	release(h);
	r = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(r, "rej"), "rejected")), 1);
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(r, "dold"), "dropped")), 1);
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(r, "dnew"), "dropped")), 1);
	json_decref(r);
}

static int replied;
static void reply_cb(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	(void)conn;
	(void)reply;
	(void)arg;
	replied = status == 0 ? 1 : -1;
}

static json_t *client_doc(const char *name, json_t **doc)
{
	*doc = jdt_metrics(c);
	return jdt_client_metrics(*doc, name);
}

static void test_overflow_block(void **state)
{
	uint64_t h = hold(), a, b;
	struct jsched_conn *o = jdt_connect(&t, "blk");
	struct jsched_spec *spec;
	json_t *doc, *cl;

	(void)state;
	fill_two(o, &a, &b);
	/* The queue is at its limit: the client is blocked, and its next submit is held
	 * (the daemon stops reading that connection) instead of refused. */
	cl = client_doc("blk", &doc);
	assert_true(json_is_true(json_object_get(cl, "blocked")));
	json_decref(doc);
	assert_int_equal(jsched_spec_call("spin", "{\"us\": 0}", &spec), 0);
	replied = 0;
	assert_true(jsched_submit_async(o, spec, reply_cb, NULL) > 0);
	jsched_spec_free(spec);
	/* Until there is room, the daemon has admitted nothing more: the held submit is
	 * not counted (asked on another connection, which is served meanwhile). */
	for (int i = 0; i < 20; i++) {
		struct pollfd p = {.fd = jsched_fd(o), .events = POLLIN | (jsched_want_write(o) ? POLLOUT : 0)};

		if (poll(&p, 1, 5) > 0)
			assert_true(jsched_process(o) >= 0);
	}
	assert_int_equal(replied, 0);
	cl = client_doc("blk", &doc);
	assert_int_equal(json_integer_value(json_object_get(cl, "submitted")), 2);
	json_decref(doc);
	/* Free the worker: the queue drains, the client unblocks, the submit goes in. */
	release(h);
	for (int i = 0; i < 3000 && replied == 0; i++) {
		struct pollfd p = {.fd = jsched_fd(o), .events = POLLIN | (jsched_want_write(o) ? POLLOUT : 0)};

		if (poll(&p, 1, 10) > 0)
			assert_true(jsched_process(o) >= 0);
	}
	assert_int_equal(replied, 1);
	cl = client_doc("blk", &doc);
	assert_int_equal(json_integer_value(json_object_get(cl, "submitted")), 3);
	json_decref(doc);
	jsched_close(o);
}

static void test_priority_order(void **state)
{
	static const char *const prios[4] = {"low", "normal", "high", "critical"};
	struct jsched_conn *w = jdt_connect(&t, "control");
	uint64_t h, ids[4], order[4];
	size_t n = 0;

	(void)state;
	assert_int_equal(jsched_watch(w, -1, NULL, NULL), 0);
	h = hold();
	/* Queued lowest first; they must start highest first once the worker is free. */
	for (int i = 0; i < 4; i++) {
		json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", "
				      "\"fn\": \"spin\", \"args\": {\"us\": 0}, \"priority\": \"%s\"}}", prios[i]);

		ids[i] = (uint64_t)json_integer_value(json_object_get(r, "job"));
		json_decref(r);
	}
	release(h);
	/* The watch stream has every start, in the order the worker took them. */
	for (int i = 0; i < 400 && n < 4; i++) {
		struct jsched_event *ev = NULL;

		if (jsched_next_event(w, 30000, &ev) != 0)
			fail_msg("no event");
		if (ev->job && ev->job->state == JSCHED_STATE_RUNNING)
			for (int k = 0; k < 4; k++)
				if (ev->job->id == ids[k])
					order[n++] = ids[k];
		jsched_event_free(ev);
	}
	assert_int_equal(n, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(order[k], ids[3 - k]);
	jsched_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cancel_queued_and_running),
		cmocka_unit_test(test_inline_beside_held_worker),
		cmocka_unit_test(test_cancel_suspended_sleep),
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_wait_timeout),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_overflow_reject_and_drops),
		cmocka_unit_test(test_overflow_block),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 1, \"clients\": {"
			     "\"rej\": {\"max_queued\": 2, \"overflow\": \"reject\"},"
			     "\"dold\": {\"max_queued\": 2, \"overflow\": \"drop_oldest\"},"
			     "\"dnew\": {\"max_queued\": 2, \"overflow\": \"drop_newest\"},"
			     "\"blk\": {\"max_queued\": 2, \"overflow\": \"block\"}}",
			     &c, "control");
}
