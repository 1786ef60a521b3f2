/* tests/daemon/test_daemon_index.c: `list` and `drain` through the job table's indexes,
 * against the real daemon: what they cost is counted (metrics jobs.walked, the index
 * slots looked at), not timed.
 *
 * - 20,000 retained noops: a page of one record looks at under 200 slots (the table's
 *   size before); a list of a state no job is in looks at none; paging with after_job
 *   returns every job once, in id order, at about one slot per record.
 * - Another client's 3 jobs listed (admin, by client) look at 3 slots; a graph whose
 *   specs are made in one order and inserted in another lists in id order.
 * - drain of a client with 2 queued jobs among 20,000 final ones looks at a few slots.
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

enum { N = 20000 };

static struct jdt t;

static json_int_t walked(struct jsched_conn *c)
{
	json_t *doc = jdt_metrics(c);
	json_t *v = json_object_get(json_object_get(doc, "jobs"), "walked");
	json_int_t n;

	if (!json_is_integer(v))
		fail_msg("metrics: no jobs.walked");
	n = json_integer_value(v);
	json_decref(doc);
	return n;
}

/* submit_noops: n noops on c in batches of 1,000, all waited for. */
static void submit_noops(struct jsched_conn *c, size_t n)
{
	struct jsched_spec *noop;
	const struct jsched_spec *v[1000];
	uint64_t ids[1000];
	struct jsched_results *res = NULL;

	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	for (size_t i = 0; i < 1000; i++)
		v[i] = noop;
	for (size_t done = 0; done < n; done += 1000) {
		size_t k = n - done < 1000 ? n - done : 1000;

		assert_int_equal(jsched_submit_batch(c, v, k, ids), 0);
		assert_int_equal(jsched_wait_many(c, ids, k, JSCHED_WAIT_ALL, 30000, &res), (int)k);
		jsched_results_free(res);
	}
	jsched_spec_free(noop);
}

static int setup(void **state)
{
	struct jsched_conn *c;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
		      "\"retention\": {\"jobs\": 100000}");
	c = jdt_connect(&t, "many");
	submit_noops(c, N);
	jsched_close(c);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

static void test_page_costs_what_it_returns(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "many");
	json_int_t w0, w1;
	json_t *r;
	uint64_t after = 0, last = 0;
	size_t total = 0, pages = 0;
	bool more = true;

	(void)state;
	w0 = walked(c);
	r = jdt_ok(c, "{\"op\": \"list\", \"states\": [\"succeeded\"], \"limit\": 1}");
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 1);
	assert_true(json_is_true(json_object_get(r, "more")));
	json_decref(r);
	w1 = walked(c);
	assert_true(w1 - w0 < 200);
	/* No job queued: every chunk skipped by its counts. */
	r = jdt_ok(c, "{\"op\": \"list\", \"states\": [\"queued\", \"running\"]}");
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 0);
	json_decref(r);
	assert_int_equal(walked(c), w1);
	/* Every job once, in id order. */
	while (more) {
		json_t *jobs, *j;
		size_t i;

		r = jdt_ok(c, "{\"op\": \"list\", \"client\": \"many\", \"after_job\": %llu, \"limit\": 1000}",
			   (unsigned long long)after);
		jobs = json_object_get(r, "jobs");
		json_array_foreach(jobs, i, j) {
			uint64_t id = (uint64_t)json_integer_value(json_object_get(j, "job"));

			assert_true(id > last);
			last = after = id;
			total++;
		}
		more = json_is_true(json_object_get(r, "more"));
		json_decref(r);
		assert_true(++pages <= N / 1000 + 1);
	}
	assert_int_equal(total, N);
	assert_true(walked(c) - w1 <= N + 64 * (json_int_t)pages);
	jsched_close(c);
}

static void test_other_client_and_graph(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "few");
	json_int_t w0;
	json_t *r, *jobs;
	uint64_t prev = 0;
	size_t i;
	json_t *j;

	(void)state;
	/* The graph's second spec depends on the third, so the third is made first. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"kind\": \"call\", \"fn\": \"noop\"},"
		      "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [\"z\"]},"
		      "{\"kind\": \"call\", \"fn\": \"noop\", \"ref\": \"z\"}]}");
	jobs = json_object_get(r, "jobs");
	assert_int_equal(json_array_size(jobs), 3);
	json_array_foreach(jobs, i, j)
		assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(j), NULL), "succeeded");
	json_decref(r);
	w0 = walked(c);
	r = jdt_ok(c, "{\"op\": \"list\", \"client\": \"few\", \"all\": true}");
	jobs = json_object_get(r, "jobs");
	assert_int_equal(json_array_size(jobs), 3);
	json_array_foreach(jobs, i, j) {
		uint64_t id = (uint64_t)json_integer_value(json_object_get(j, "job"));

		assert_true(id > prev);
		prev = id;
	}
	json_decref(r);
	assert_true(walked(c) - w0 <= 3);
	jsched_close(c);
}

static void test_drain(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "drainme");
	json_int_t w0;
	json_t *r;
	uint64_t hold;

	(void)state;
	json_decref(jdt_ok(c, "{\"op\": \"pause\"}"));
	jdt_submit_call(c, "noop", NULL);
	hold = jdt_submit_call(c, "noop", NULL);
	jdt_until_state(c, hold, "queued");
	w0 = walked(c);
	r = jdt_ok(c, "{\"op\": \"drain\"}");
	assert_int_equal(json_integer_value(json_object_get(r, "cancelled")), 2);
	json_decref(r);
	/* The uid's index holds all 20,000: its final chunks are skipped by their counts. */
	assert_true(walked(c) - w0 < 200);
	json_decref(jdt_ok(c, "{\"op\": \"resume\"}"));
	jsched_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_costs_what_it_returns),
		cmocka_unit_test(test_other_client_and_graph),
		cmocka_unit_test(test_drain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
