/* tests/daemon/test_daemon_submitwait.c: a submit with `wait` (PROTOCOL.md 6.2, "Waiting
 * in the submit"), against the real daemon (journal on, sync always, as by default):
 * - one reply carries the id and the final record (a call's value), and it is the only
 *   frame the submit gets (a ping after it is answered next); the daemon counts one
 *   request for it (metrics connections.requests);
 * - a failing command: the record's exit code and cause, and with wait.output its output;
 * - a timeout: ok, "timed_out", the record as it stands, the job going on;
 * - a cancel from another connection ends the wait with the cancelled record; a deadline
 *   already past is answered expired;
 * - a wait ended on one connection and reused by the next on another answers that one
 *   with its own members (a submit's, then a `wait`'s);
 * - bad types of `wait` and its members are bad_request naming the member, and make no job;
 * - the wait limits refuse it (limit_exceeded, field wait) and make no job;
 * - a batch: ids, refs and records in spec order; records past the reply budget are left
 *   with "more" (specs whose key names earlier jobs with 4 KB results), and
 *   jsched_submit_batch_wait fetches the rest;
 * - a closed connection only loses the reply: the job ends all the same;
 * - libjsched's jsched_submit_wait and `jsched submit --wait`, which make one request
 *   after their hello (counted by the daemon);
 * - jsched_connect_deferred, whose hello goes out with the first request: the call works
 *   and the hello's answer is read; a refused hello fails that call with the code and the
 *   words jsched_connect_error gives, and no job is made; a first request over the
 *   handshake's frame limit waits for the hello's answer and is taken.
 */
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

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 2, \"retention\": {\"jobs\": 20000}, "
		      "\"limits\": {\"waits_per_connection\": 2}");
	return 0;
}

/* teardown: a graceful stop, which exits 0 (a sanitizer's report at exit would not). */
static int teardown(void **state)
{
	(void)state;
	return jdt_stop(&t, SIGTERM) == 0 ? 0 : -1;
}

/* requests: the daemon's count of requests read (metrics connections.requests). */
static json_int_t requests(struct jsched_conn *m)
{
	json_t *doc = jdt_metrics(m);
	json_int_t n = json_integer_value(json_object_get(json_object_get(doc, "connections"), "requests"));

	json_decref(doc);
	return n;
}

/* state_of: the state name of a record object (borrowed), "" if none. */
static const char *state_of(const json_t *rec)
{
	const char *s = json_string_value(json_object_get(rec, "state"));

	return s ? s : "";
}

static void test_one_reply(void **state)
{
	struct jsched_conn *m = jdt_connect(&t, NULL);
	int fd = jdt_raw_hello(&t, NULL);
	json_int_t before, after;
	json_t *r, *rec;

	(void)state;
	before = requests(m);
	jdt_send_frame(fd, "{\"op\": \"submit\", \"id\": 5, \"job\": {\"kind\": \"call\", \"fn\": \"echo\", "
			   "\"args\": {\"x\": [1, 2]}}, \"wait\": true}");
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_true(json_integer_value(json_object_get(r, "job")) > 0);
	rec = json_object_get(r, "record");
	assert_string_equal(state_of(rec), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(rec, "job")),
			 json_integer_value(json_object_get(r, "job")));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(json_object_get(rec, "value"), "x"), 1)), 2);
	assert_null(json_object_get(r, "timed_out"));
	assert_null(json_object_get(r, "more"));
	json_decref(r);
	/* Nothing else came for the submit: the next frame is the ping's reply. */
	jdt_send_frame(fd, "{\"op\": \"ping\", \"id\": 6}");
	r = jdt_read_frame(fd);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 6);
	json_decref(r);
	after = requests(m);
	assert_int_equal(after - before, 3); /* the submit, the ping, and this metrics request */
	close(fd);
	jsched_close(m);
}

static void test_failing_command_and_output(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 7", NULL};
	struct jsched_spec *sp = NULL;
	struct jsched_result *res = NULL;
	struct jsched_output *o = NULL;
	uint64_t id = 0;
	bool existing = true;

	(void)state;
	assert_int_equal(jsched_spec_exec(argv, &sp), 0);
	assert_int_equal(jsched_submit_wait(c, sp, -1, &id, &existing, &res, &o), 0);
	assert_true(id > 0);
	assert_false(existing);
	assert_non_null(res);
	assert_int_equal(res->id, id);
	assert_int_equal(res->state, JSCHED_STATE_FAILED);
	assert_int_equal(res->exit_code, 7);
	assert_string_equal(res->cause, "exit");
	assert_non_null(o);
	assert_true(o->complete);
	assert_int_equal(o->out_len, 4);
	assert_memory_equal(o->out, "out\n", 4);
	assert_int_equal(o->err_len, 4);
	assert_memory_equal(o->err, "err\n", 4);
	jsched_output_free(o);
	jsched_result_free(res);
	/* Without asking for the output: none comes. */
	assert_int_equal(jsched_submit_wait(c, sp, -1, &id, NULL, &res, NULL), 0);
	assert_int_equal(res->exit_code, 7);
	jsched_result_free(res);
	jsched_spec_free(sp);
	jsched_close(c);
}

static void test_timeout(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	struct jsched_spec *sp = NULL;
	struct jsched_result *res = NULL;
	uint64_t id = 0;
	json_t *r;

	(void)state;
	assert_int_equal(jsched_spec_call("sleep", "{\"ms\": 600000}", &sp), 0);
	/* The library: JSCHED_ETIMEOUT, with the id and the record as it stands. */
	assert_int_equal(jsched_submit_wait(c, sp, 30, &id, NULL, &res, NULL), JSCHED_ETIMEOUT);
	assert_true(id > 0);
	assert_non_null(res);
	assert_int_equal(res->id, id);
	assert_false(jsched_state_final(res->state));
	jsched_result_free(res);
	assert_false(jsched_state_final(jsched_state_from_name(jdt_state(c, id)))); /* it goes on */
	assert_int_equal(jsched_cancel(c, id), 0);
	/* On the wire: ok (the job exists), timed_out, the record; timeout 0 only looks. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"sleep\", "
		      "\"args\": {\"ms\": 600000}}, \"wait\": {\"timeout_ms\": 0}}");
	assert_true(json_is_true(json_object_get(r, "timed_out")));
	assert_false(jsched_state_final(jsched_state_from_name(state_of(json_object_get(r, "record")))));
	id = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	assert_int_equal(jsched_cancel(c, id), 0);
	jsched_spec_free(sp);
	jsched_close(c);
}

/* submit_seen: on raw connection fd, watch, then send the submit-with-wait req; returns
 * the job's id from its `waiting` event, asserting that no reply came before it.  Only a
 * `waiting` event names the new job: the uid's earlier jobs may still send theirs (the
 * previous test cancels a running sleep and does not wait for its end), and taking the
 * id of one of those cancelled that job instead, a run in ten under TSan on a loaded
 * machine, after which the submit's wait never ended. */
static json_int_t submit_seen(int fd, const char *req)
{
	json_int_t id = 0;

	json_decref(jdt_raw_ask(fd, "{\"op\": \"watch\", \"id\": 1}"));
	jdt_send_frame(fd, req);
	for (int i = 0; i < 20 && !id; i++) {
		json_t *m = jdt_read_frame(fd), *job;

		assert_non_null(m);
		assert_null(json_object_get(m, "ok")); /* no reply before the job ends */
		job = json_object_get(m, "job");
		if (!strcmp(state_of(job), "waiting"))
			id = json_integer_value(json_object_get(job, "job"));
		json_decref(m);
	}
	assert_true(id > 0);
	return id;
}

static void test_cancel_and_deadline(void **state)
{
	struct jsched_conn *other = jdt_connect(&t, NULL);
	int fd = jdt_raw_hello(&t, NULL);
	json_int_t id;
	json_t *r = NULL;

	(void)state;
	/* The watch's `waiting` event tells the id before the submit's reply comes. */
	id = submit_seen(fd, "{\"op\": \"submit\", \"id\": 2, \"job\": {\"kind\": \"call\", \"fn\": \"sleep\", "
			     "\"args\": {\"ms\": 600000}}, \"wait\": true}");
	assert_int_equal(jsched_cancel(other, (uint64_t)id), 0);
	for (int i = 0; i < 10 && !r; i++) {
		json_t *m = jdt_read_frame(fd);

		assert_non_null(m);
		if (json_object_get(m, "ok"))
			r = m;
		else
			json_decref(m);
	}
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 2);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "job")), id);
	assert_string_equal(state_of(json_object_get(r, "record")), "cancelled");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "record"), "cause")), "cancel");
	json_decref(r);
	close(fd);
	/* A deadline already past: expired, answered all the same. */
	r = jdt_ok(other, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", "
			  "\"deadline_at_ms\": 1}, \"wait\": true}");
	assert_string_equal(state_of(json_object_get(r, "record")), "expired");
	json_decref(r);
	jsched_close(other);
}

/* Ended waits of one job are kept and reused (op_wait.c, "Spare waits"): a wait ended on
 * one connection and taken by the next wait on another answers that one only, with its
 * own members: a submit's wait after a submit's, a `wait`'s after a submit's. */
static void test_reused_waits(void **state)
{
	struct jsched_conn *other = jdt_connect(&t, NULL);
	struct jsched_spec *noop;
	struct jsched_result *res = NULL;
	int fd = jdt_raw_hello(&t, NULL);
	json_int_t id;
	uint64_t nid = 0;
	json_t *r = NULL, *m;

	(void)state;
	id = submit_seen(fd, "{\"op\": \"submit\", \"id\": 2, \"job\": {\"kind\": \"call\", \"fn\": \"sleep\", "
			     "\"args\": {\"ms\": 600000}}, \"wait\": true}");
	assert_int_equal(jsched_cancel(other, (uint64_t)id), 0);
	for (int i = 0; i < 10 && !r; i++) {
		assert_non_null(m = jdt_read_frame(fd));
		if (json_object_get(m, "ok"))
			r = m;
		else
			json_decref(m);
	}
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "job")), id);
	json_decref(r);
	/* The other connection's submit with wait, then its wait of the same job. */
	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	assert_int_equal(jsched_submit_wait(other, noop, -1, &nid, NULL, &res, NULL), 0);
	assert_true(nid > 0 && nid != (uint64_t)id);
	assert_int_equal(res->id, nid);
	assert_int_equal(res->state, JSCHED_STATE_SUCCEEDED);
	jsched_result_free(res);
	r = jdt_ok(other, "{\"op\": \"wait\", \"job\": %llu}", (unsigned long long)nid);
	assert_true(json_is_object(json_object_get(r, "job"))); /* a wait's: the record */
	assert_null(json_object_get(r, "record"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "job"), "job")), (json_int_t)nid);
	json_decref(r);
	/* The first connection got nothing of theirs: its next frames are its own. */
	r = jdt_raw_ask(fd, "{\"op\": \"ping\", \"id\": 3}");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
	json_decref(r);
	close(fd);
	jsched_spec_free(noop);
	jsched_close(other);
}

static void test_bad_types(void **state)
{
	static const struct {
		const char *wait, *field;
	} bad[] = {
		{"3", "wait"},
		{"\"yes\"", "wait"},
		{"null", "wait"},
		{"[true]", "wait"},
		{"{\"timeout_ms\": \"1\"}", "wait.timeout_ms"},
		{"{\"timeout_ms\": -1}", "wait.timeout_ms"},
		{"{\"timeout_ms\": 1.5}", "wait.timeout_ms"},
		{"{\"mode\": \"some\"}", "wait.mode"},
		{"{\"mode\": 1}", "wait.mode"},
		{"{\"output\": 1}", "wait.output"},
		{"{\"ouptut\": true}", "wait.ouptut"},
	};
	struct jsched_conn *c = jdt_connect(&t, NULL);
	json_int_t before = jdt_jobs_submitted(c);

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}, "
				       "\"wait\": %s}", bad[i].wait);

		assert_string_equal(jdt_err_code(r), "bad_request");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    bad[i].field);
		json_decref(r);
	}
	{
		/* The output goes with one job only. */
		json_t *r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"call\", \"fn\": \"noop\"}], "
				       "\"wait\": {\"output\": true}}");

		assert_string_equal(jdt_err_code(r), "bad_request");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    "wait.output");
		json_decref(r);
	}
	assert_int_equal(jdt_jobs_submitted(c), before);
	/* false is no wait at all: the plain submit reply. */
	{
		json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}, "
				      "\"wait\": false}");

		assert_null(json_object_get(r, "record"));
		json_decref(r);
	}
	jsched_close(c);
}

static void test_wait_limits(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	int fd = jdt_raw_hello(&t, NULL);
	uint64_t a = jdt_submit_call(c, "sleep", "{\"ms\": 600000}");
	char req[256];
	json_int_t before;
	json_t *r;

	(void)state;
	/* Two waits pending fill this connection's limits.waits_per_connection (2). */
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 1, \"job\": %llu}", (unsigned long long)a);
	jdt_send_frame(fd, req);
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 2, \"job\": %llu}", (unsigned long long)a);
	jdt_send_frame(fd, req);
	before = jdt_jobs_submitted(c);
	r = jdt_raw_ask(fd, "{\"op\": \"submit\", \"id\": 3, \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}, "
			    "\"wait\": true}");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
	assert_string_equal(jdt_err_code(r), "limit_exceeded");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "wait");
	json_decref(r);
	assert_int_equal(jdt_jobs_submitted(c), before); /* nothing made */
	/* timeout_ms 0 only looks: never refused for the limits. */
	r = jdt_raw_ask(fd, "{\"op\": \"submit\", \"id\": 4, \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}, "
			    "\"wait\": {\"timeout_ms\": 0}}");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	assert_int_equal(jsched_cancel(c, a), 0);
	close(fd);
	jsched_close(c);
}

static void test_batch(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	json_t *r, *recs;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": 5, \"after\": [\"a\"]},"
		      "{\"ref\": \"a\", \"kind\": \"call\", \"fn\": \"noop\"},"
		      "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"exit 9\"]}], \"wait\": true}");
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "refs"), "a")),
			 json_integer_value(json_array_get(json_object_get(r, "jobs"), 1)));
	recs = json_object_get(r, "records");
	assert_int_equal(json_array_size(recs), 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, i), "job")),
				 json_integer_value(json_array_get(json_object_get(r, "jobs"), i)));
	assert_string_equal(state_of(json_array_get(recs, 0)), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, 0), "value")), 5);
	assert_string_equal(state_of(json_array_get(recs, 1)), "succeeded");
	assert_string_equal(state_of(json_array_get(recs, 2)), "failed");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, 2), "exit_code")), 9);
	json_decref(r);
	/* mode any: answered once one has ended; the sleeper as it stands. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"call\", \"fn\": \"sleep\", "
		      "\"args\": {\"ms\": 600000}}, {\"kind\": \"call\", \"fn\": \"noop\"}], "
		      "\"wait\": {\"mode\": \"any\"}}");
	recs = json_object_get(r, "records");
	assert_false(jsched_state_final(jsched_state_from_name(state_of(json_array_get(recs, 0)))));
	assert_string_equal(state_of(json_array_get(recs, 1)), "succeeded");
	assert_int_equal(jsched_cancel(c, (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), 0))),
			 0);
	json_decref(r);
	jsched_close(c);
}

/* test_batch_pages: 4,500 records of 4 KB results (18 MB) pass the reply budget: the
 * reply holds a prefix and says more; the library fetches the rest.  The big results
 * are earlier jobs that the batch's specs name by key (so the request stays small). */
static void test_batch_pages(void **state)
{
	enum { N = 4500, PER = 150 };
	struct jsched_conn *c = jdt_connect(&t, NULL);
	struct jsched_spec **specs = calloc(N, sizeof(*specs));
	uint64_t *ids = calloc(N, sizeof(*ids));
	char *big = malloc(4100), *req = malloc(PER * 4200 + 64);
	struct jsched_results *res = NULL;
	int fd = jdt_raw_hello(&t, NULL);
	size_t off;
	json_t *r;

	(void)state;
	assert_non_null(specs);
	assert_non_null(ids);
	assert_non_null(big);
	assert_non_null(req);
	memset(big, 'x', 4000);
	big[4000] = 0;
	for (size_t k = 0; k < N; k += PER) {
		off = (size_t)sprintf(req, "{\"op\": \"submit\", \"id\": 1, \"jobs\": [");
		for (size_t i = k; i < k + PER; i++)
			off += (size_t)sprintf(req + off, "%s{\"kind\": \"call\", \"fn\": \"echo\", \"key\": \"k%zu\", "
						      "\"args\": \"%s\"}", i > k ? "," : "", i, big);
		strcpy(req + off, "]}");
		r = jdt_raw_ask(fd, req);
		assert_true(json_is_true(json_object_get(r, "ok")));
		json_decref(r);
	}
	free(req);
	req = malloc(N * 64 + 64);
	assert_non_null(req);
	off = (size_t)sprintf(req, "{\"op\": \"submit\", \"id\": 9, \"jobs\": [");
	for (size_t i = 0; i < N; i++)
		off += (size_t)sprintf(req + off, "%s{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k%zu\"}",
				       i ? "," : "", i);
	strcpy(req + off, "], \"wait\": true}");
	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), N);
	assert_int_equal(json_array_size(json_object_get(r, "existing")), N);
	assert_true(json_is_true(json_object_get(r, "more")));
	assert_true(json_array_size(json_object_get(r, "records")) > 0);
	assert_true(json_array_size(json_object_get(r, "records")) < N);
	json_decref(r);
	/* The library: every record, in order, the rest through status. */
	for (size_t i = 0; i < N; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k%zu", i);
		assert_int_equal(jsched_spec_call("noop", NULL, &specs[i]), 0);
		assert_int_equal(jsched_spec_set_key(specs[i], key), 0);
	}
	assert_int_equal(jsched_submit_batch_wait(c, (const struct jsched_spec *const *)specs, N, JSCHED_WAIT_ALL,
						  -1, ids, &res), N);
	assert_int_equal(res->count, N);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(res->items[i]->id, ids[i]);
		assert_int_equal(res->items[i]->state, JSCHED_STATE_SUCCEEDED);
		assert_int_equal(strlen(res->items[i]->value_json), 4002);
	}
	jsched_results_free(res);
	for (size_t i = 0; i < N; i++)
		jsched_spec_free(specs[i]);
	free(specs);
	free(ids);
	free(big);
	free(req);
	close(fd);
	jsched_close(c);
}

static void test_disconnect(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	int fd = jdt_raw_hello(&t, NULL);
	json_int_t id;

	(void)state;
	id = submit_seen(fd, "{\"op\": \"submit\", \"id\": 2, \"job\": {\"kind\": \"exec\", \"argv\": "
			     "[\"sh\", \"-c\", \"sleep 0.2\"]}, \"wait\": true}");
	close(fd); /* only the reply is lost */
	assert_string_equal(jdt_wait_final(c, (uint64_t)id, NULL), "succeeded");
	jsched_close(c);
}

/* test_cli: jsched submit --wait prints the command's output and exits with its status,
 * in one request after its hello (the daemon counts 2 requests for the whole run). */
static void test_cli(void **state)
{
	struct jsched_conn *m = jdt_connect(&t, NULL);
	char out[256];
	json_int_t before;

	(void)state;
	before = requests(m);
	assert_int_equal(jdt_tool(&t, "cli", out, sizeof(out), "submit --wait -- sh -c 'echo hi; exit 3'"), 3);
	assert_string_equal(out, "hi\n");
	assert_int_equal(requests(m) - before, 2 + 1); /* hello, submit; and this metrics */
	before = requests(m);
	assert_int_equal(jdt_tool(&t, "cli", out, sizeof(out), "submit --wait --fn echo --args '[7]'"), 0);
	assert_string_equal(out, "[7]\n");
	assert_int_equal(requests(m) - before, 2 + 1);
	assert_int_equal(jdt_tool(&t, "cli", out, sizeof(out),
				  "submit --wait --timeout 20ms --fn sleep --args '{\"ms\": 600000}' 2>/dev/null"), 75);
	{
		/* The job it left goes on: cancelled here, so the daemon can stop. */
		struct jsched_results *l = NULL;

		assert_int_equal(jsched_list(m, (1u << JSCHED_STATE_QUEUED) | (1u << JSCHED_STATE_RUNNING), "cli",
					     false, &l), 0);
		assert_int_equal(l->count, 1);
		assert_int_equal(jsched_cancel(m, l->items[0]->id), 0);
		jsched_results_free(l);
	}
	jsched_close(m);
}

static void test_deferred_hello(void **state)
{
	struct jsched_conn *m = jdt_connect(&t, NULL), *c, *d = NULL;
	struct jsched_spec *sp = NULL, *big = NULL;
	struct jsched_result *res = NULL;
	char msg[256], msg2[256], *arg;
	json_int_t submitted;
	uint64_t id;
	int code;

	(void)state;
	assert_int_equal(jsched_spec_call("echo", "[5]", &sp), 0);
	/* Accepted: the call works; what the hello said is there once it has been read. */
	assert_int_equal(jsched_connect_deferred(t.sock, "deferred", &c, msg, sizeof(msg)), 0);
	assert_null(jsched_client_name(c));
	assert_int_equal(jsched_submit_wait(c, sp, -1, &id, NULL, &res, NULL), 0);
	assert_string_equal(res->value_json, "[5]");
	assert_string_equal(jsched_client_name(c), "deferred");
	assert_non_null(jsched_server_version(c));
	jsched_result_free(res);
	res = NULL;
	assert_int_equal(jsched_ping(c), 0);
	jsched_close(c);
	/* Refused (a client name that is not one): the first call fails as the connect
	 * would have, and the daemon made no job of it. */
	code = jsched_connect_error(t.sock, "not a name", &d, msg2, sizeof(msg2));
	assert_int_equal(code, JSCHED_EBAD_REQUEST);
	assert_null(d);
	submitted = jdt_jobs_submitted(m);
	assert_int_equal(jsched_connect_deferred(t.sock, "not a name", &c, msg, sizeof(msg)), 0);
	assert_int_equal(jsched_submit_wait(c, sp, -1, &id, NULL, &res, NULL), code);
	assert_null(res);
	assert_string_equal(jsched_error_message(c), msg2);
	assert_int_equal(jsched_ping(c), code); /* and the connection is done */
	jsched_close(c);
	assert_int_equal(jdt_jobs_submitted(m), submitted);
	/* A first request over the handshake's 64 KiB: sent once the hello is answered. */
	arg = malloc(100002);
	assert_non_null(arg);
	memset(arg, 'x', 100002);
	arg[0] = '"';
	arg[100000] = '"';
	arg[100001] = '\0';
	assert_int_equal(jsched_spec_call("echo", arg, &big), 0);
	assert_int_equal(jsched_connect_deferred(t.sock, "deferred", &c, msg, sizeof(msg)), 0);
	assert_int_equal(jsched_submit_wait(c, big, -1, &id, NULL, &res, NULL), 0);
	assert_int_equal(res->state, JSCHED_STATE_SUCCEEDED); /* its value past value_bytes */
	jsched_result_free(res);
	jsched_close(c);
	free(arg);
	jsched_spec_free(big);
	jsched_spec_free(sp);
	jsched_close(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_reply),
		cmocka_unit_test(test_failing_command_and_output),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_cancel_and_deadline),
		cmocka_unit_test(test_reused_waits),
		cmocka_unit_test(test_bad_types),
		cmocka_unit_test(test_wait_limits),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_batch_pages),
		cmocka_unit_test(test_disconnect),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_deferred_hello),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
