/* tests/daemon/test_daemon_retention.c: what the daemon keeps of finished jobs, against
 * the real daemon.
 *
 * - retention.bytes bounds the memory of the final jobs kept: ten echo jobs with 600 KB
 *   results under a 4 MiB bound leave at most 4 MiB retained (metrics retained_bytes,
 *   which counts at least each retained result), the oldest forgotten first (a small job
 *   submitted before them goes first), the newest whole.
 * - A job's args are dropped once it ends: status "detail" shows them while it runs and
 *   says args_dropped after; a finished noop whose args were 600 KB keeps under 64 KiB.
 * - Shares: one client's flood (200 noops under retention.jobs 20; ten 600 KB results
 *   under a 4 MiB bound) forgets only its own jobs, never another client's.
 * - retention.min_seconds: with an hour, 20 jobs stay under retention.jobs 5 (the count
 *   waits), while retention.bytes still holds; a reload to 0 forgets down to 5 at once.
 * - The job table's id index, grown for 5,000 queued jobs, shrinks back once they have
 *   gone (metrics index_buckets).
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

#include "tests/daemon/harness.h"

enum { BIG = 600000 };

/* big_string: a JSON string of n 'a's (malloc'd). */
static char *big_string(size_t n)
{
	char *s = malloc(n + 3);

	assert_non_null(s);
	s[0] = '"';
	memset(s + 1, 'a', n);
	strcpy(s + 1 + n, "\"");
	return s;
}

/* metric: the integer at jobs.<key> (client NULL) or in client's entry. */
static json_int_t metric(struct jsched_conn *c, const char *client, const char *key)
{
	json_t *doc = jdt_metrics(c), *o = client ? jdt_client_metrics(doc, client)
						   : json_object_get(doc, "jobs");
	json_t *v = json_object_get(o, key);
	json_int_t n;

	if (!json_is_integer(v))
		fail_msg("metrics: no integer %s.%s", client ? client : "jobs", key);
	n = json_integer_value(v);
	json_decref(doc);
	return n;
}

static const char *status_code(struct jsched_conn *c, uint64_t id)
{
	static char code[64];
	json_t *r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);

	snprintf(code, sizeof(code), "%s", jdt_err_code(r));
	json_decref(r);
	return code;
}

static void test_bytes_bound(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char *args = big_string(BIG);
	uint64_t small, ids[10];
	json_t *rec = NULL, *doc;
	json_int_t retained, bytes;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
		      "\"retention\": {\"jobs\": 1000, \"bytes\": \"4M\"}");
	c = jdt_connect(&t, "big");
	small = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, small, NULL), "succeeded");
	for (int i = 0; i < 10; i++) {
		ids[i] = jdt_submit_call(c, "echo", args);
		assert_string_equal(jdt_wait_final(c, ids[i], NULL), "succeeded");
	}
	retained = metric(c, NULL, "retained");
	bytes = metric(c, NULL, "retained_bytes");
	assert_true(bytes <= 4 << 20);
	/* Accounted, not guessed: every retained result is counted. */
	assert_true(bytes >= retained * BIG);
	assert_true(retained >= 5 && retained <= 6);
	assert_int_equal(metric(c, "big", "retained_bytes"), bytes);
	doc = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(doc, "jobs"), "forgotten_by"), "bytes")),
			 11 - retained);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(doc, "jobs"), "retention"), "bytes")),
			 4 << 20);
	json_decref(doc);
	/* Oldest first: the small job went before any big one. */
	assert_string_equal(status_code(c, small), "job_forgotten");
	assert_string_equal(status_code(c, ids[0]), "job_forgotten");
	assert_string_equal(status_code(c, ids[9]), "");
	assert_string_equal(jdt_wait_final(c, ids[9], &rec), "succeeded");
	/* Past limits.value_bytes the record says the result's size (its text: BIG + 2). */
	assert_int_equal(json_integer_value(json_object_get(rec, "result_bytes")), BIG + 2);
	json_decref(rec);
	jsched_close(c);
	free(args);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_args_dropped(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char *args = big_string(BIG), *big;
	uint64_t id;
	json_t *r, *job;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}");
	c = jdt_connect(&t, "args");
	id = jdt_submit_call(c, "sleep", "{\"ms\": 600000}");
	jdt_until_state(c, id, "running");
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu, \"detail\": true}", (unsigned long long)id);
	job = json_object_get(r, "job");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "args"), "ms")), 600000);
	assert_null(json_object_get(job, "args_dropped"));
	json_decref(r);
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)id));
	assert_string_equal(jdt_wait_final(c, id, NULL), "cancelled");
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu, \"detail\": true}", (unsigned long long)id);
	job = json_object_get(r, "job");
	assert_null(json_object_get(job, "args"));
	assert_true(json_is_true(json_object_get(job, "args_dropped")));
	json_decref(r);
	/* A noop's 600 KB of args are not kept once it has ended. */
	big = malloc(BIG + 32);
	assert_non_null(big);
	snprintf(big, BIG + 32, "{\"pad\": %s}", args);
	id = jdt_submit_call(c, "noop", big);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	assert_true(metric(c, "args", "retained") == 2);
	assert_true(metric(c, "args", "retained_bytes") < 64 * 1024);
	jsched_close(c);
	free(big);
	free(args);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* submit_n: n jobs of fn with args, all waited for; ids into ids (may be NULL). */
static void submit_n(struct jsched_conn *c, const char *fn, const char *args, int n, uint64_t *ids)
{
	for (int i = 0; i < n; i++) {
		uint64_t id = jdt_submit_call(c, fn, args);

		assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
		if (ids)
			ids[i] = id;
	}
}

static void test_shares(void **state)
{
	struct jdt t;
	struct jsched_conn *a, *b;
	char *args = big_string(BIG);
	uint64_t mine[5], big;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
		      "\"retention\": {\"jobs\": 20, \"bytes\": \"4M\"}");
	a = jdt_connect(&t, "reader");
	b = jdt_connect(&t, "flooder");
	submit_n(a, "noop", NULL, 5, mine);
	submit_n(b, "noop", NULL, 200, NULL);
	for (int i = 0; i < 5; i++)
		assert_string_equal(status_code(a, mine[i]), "");
	assert_int_equal(metric(a, "reader", "retained"), 5);
	assert_int_equal(metric(a, "reader", "forgotten"), 0);
	assert_int_equal(metric(a, "flooder", "retained"), 15);
	assert_int_equal(metric(a, "flooder", "forgotten"), 185);
	/* By bytes: the reader's one large result stays through the flooder's ten. */
	big = jdt_submit_call(a, "echo", args);
	assert_string_equal(jdt_wait_final(a, big, NULL), "succeeded");
	submit_n(b, "echo", args, 10, NULL);
	assert_string_equal(status_code(a, big), "");
	assert_true(metric(a, NULL, "retained_bytes") <= 4 << 20);
	assert_true(metric(a, "reader", "retained_bytes") > BIG);
	assert_true(metric(a, "flooder", "forgotten") > 185);
	for (int i = 0; i < 5; i++)
		assert_string_equal(status_code(a, mine[i]), "");
	jsched_close(a);
	jsched_close(b);
	free(args);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_min_seconds(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char *args = big_string(BIG);
	uint64_t ids[20];
	json_t *r;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
		      "\"retention\": {\"jobs\": 5, \"bytes\": \"4M\", \"min_seconds\": 3600}");
	c = jdt_connect(&t, "slow-reader");
	submit_n(c, "noop", NULL, 20, ids);
	assert_int_equal(metric(c, NULL, "retained"), 20);
	assert_string_equal(status_code(c, ids[0]), "");
	/* The memory bound does not wait. */
	submit_n(c, "echo", args, 10, NULL);
	assert_true(metric(c, NULL, "retained_bytes") <= 4 << 20);
	assert_string_equal(status_code(c, ids[0]), "job_forgotten");
	/* Without the reading time the count applies at once (the reload trims). */
	jdt_write_config(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
			     "\"retention\": {\"jobs\": 5, \"bytes\": \"4M\", \"min_seconds\": 0}");
	r = jdt_ok(c, "{\"op\": \"reload\"}");
	json_decref(r);
	assert_int_equal(metric(c, NULL, "retained"), 5);
	jsched_close(c);
	free(args);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* test_index_shrinks: the job table's id index grows to a bucket per job while 5,000 are
 * queued, and once they have ended and all but 100 are forgotten it goes back to its
 * least size (1,024 buckets) at the next give-back: the tick's, or the drained flood's. */
static void test_index_shrinks(void **state)
{
	enum { N = 5000, BATCH = 1000 };
	struct jsched_spec *specs[BATCH];
	struct jdt t;
	struct jsched_conn *c;
	uint64_t *ids = malloc(N * sizeof(*ids));
	json_int_t buckets = 0;

	(void)state;
	assert_non_null(ids);
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
		      "\"retention\": {\"jobs\": 100, \"min_seconds\": 0}");
	c = jdt_connect(&t, "flood");
	assert_int_equal(metric(c, NULL, "index_buckets"), 1024);
	for (int i = 0; i < BATCH; i++)
		assert_int_equal(jsched_spec_call("noop", NULL, &specs[i]), 0);
	assert_int_equal(jsched_pause(c, NULL, false), 0); /* all queued at once */
	for (int at = 0; at < N; at += BATCH)
		assert_int_equal(jsched_submit_batch(c, (const struct jsched_spec *const *)specs,
						     BATCH, ids + at), 0);
	assert_true(metric(c, NULL, "index_buckets") >= N);
	assert_int_equal(jsched_resume(c, NULL, false), 0);
	assert_string_equal(jdt_wait_final(c, ids[N - 1], NULL), "succeeded");
	for (int i = 0; i < 1000 && (buckets = metric(c, NULL, "index_buckets")) > 1024; i++)
		jdt_sleep_ms(10);
	if (buckets != 1024)
		fail_msg("the id index still has %lld buckets for %lld jobs", (long long)buckets,
			 (long long)metric(c, NULL, "retained"));
	assert_true(metric(c, NULL, "index_shrinks") >= 1);
	for (int i = 0; i < BATCH; i++)
		jsched_spec_free(specs[i]);
	free(ids);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_bound),
		cmocka_unit_test(test_args_dropped),
		cmocka_unit_test(test_shares),
		cmocka_unit_test(test_min_seconds),
		cmocka_unit_test(test_index_shrinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
