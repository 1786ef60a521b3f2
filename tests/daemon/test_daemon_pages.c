/* tests/daemon/test_daemon_pages.c: replies larger than a frame may be, against the real
 * daemon with its default limits.
 *
 * - No reply passes reply_frame_bytes (16 MiB): `status` of 4,500 ids whose records hold
 *   4 KB each (18 MB) answers for a prefix and says `more`; `list` ends its page at the
 *   budget and says `more`; libjsched's jsched_status_many and jsched_list follow and
 *   return every record.
 * - A wait on 20 jobs with 900 KB results answers within the limit with `more`;
 *   jsched_wait_many fetches the rest.
 * - The output limit (8 MiB by default) leaves room for one whole reply: nine jobs whose
 *   results are ~1 MiB each are listed in one 9 MB reply to a client that reads, which
 *   is not disconnected for it (jdt_read_frame asserts every frame is within 16 MiB).
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

/* submit_echoes: n echo jobs whose args (and so results) are a string of `bytes` bytes,
 * in batches that fit a frame; their ids into ids[], all waited for. */
static void submit_echoes(struct jsched_conn *c, size_t n, size_t bytes, uint64_t *ids)
{
	char *args = malloc(bytes + 3);
	struct jsched_spec *spec;
	size_t per = (900u * 1024u) / (bytes + 64);

	assert_non_null(args);
	args[0] = '"';
	memset(args + 1, 'a', bytes);
	strcpy(args + 1 + bytes, "\"");
	assert_int_equal(jsched_spec_call("echo", args, &spec), 0);
	if (per == 0)
		per = 1;
	for (size_t i = 0; i < n; i += per) {
		size_t k = n - i < per ? n - i : per;
		const struct jsched_spec **v = calloc(k, sizeof(*v));

		for (size_t j = 0; j < k; j++)
			v[j] = spec;
		struct jsched_results *done;

		for (size_t j = 0; j < k; j++)
			v[j] = spec;
		if (jsched_submit_batch(c, v, k, ids + i) != 0)
			fail_msg("submit: %s", jsched_error_message(c));
		free(v);
		/* A batch's wait reply is under a frame's worth; all of them would not be. */
		assert_true(jsched_wait_many(c, ids + i, k, JSCHED_WAIT_ALL, 60000, &done) >= 0);
		for (size_t j = 0; j < k; j++)
			assert_int_equal(done->items[j]->state, JSCHED_STATE_SUCCEEDED);
		jsched_results_free(done);
	}
	jsched_spec_free(spec);
	free(args);
}

static void test_status_and_list_page(void **state)
{
	enum { N = 4500 };
	struct jsched_conn *c = jdt_connect(&t, "pages");
	static uint64_t ids[N];
	struct jsched_results *res;
	int fd = jdt_raw_hello(&t, "pages");
	char *req = malloc(N * 24 + 64);
	size_t off;
	json_t *r;

	(void)state;
	submit_echoes(c, N, 4000, ids);
	/* Raw: the status reply stops within the budget and says more. */
	off = (size_t)sprintf(req, "{\"op\": \"status\", \"id\": 1, \"jobs\": [");
	for (size_t i = 0; i < N; i++)
		off += (size_t)sprintf(req + off, "%s%llu", i ? "," : "", (unsigned long long)ids[i]);
	strcpy(req + off, "]}");
	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_true(json_is_true(json_object_get(r, "more")));
	assert_true(json_array_size(json_object_get(r, "jobs")) < N);
	assert_true(json_array_size(json_object_get(r, "jobs")) > 0);
	json_decref(r);
	jdt_send_frame(fd, "{\"op\": \"list\", \"id\": 2, \"limit\": 10000}");
	r = jdt_read_frame(fd);
	assert_true(json_is_true(json_object_get(r, "more")));
	assert_true(json_array_size(json_object_get(r, "jobs")) < N);
	json_decref(r);
	close(fd);
	free(req);
	/* libjsched follows both. */
	assert_int_equal(jsched_status_many(c, ids, N, &res), 0);
	assert_int_equal(res->count, N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(res->items[i]->id, ids[i]);
	jsched_results_free(res);
	assert_int_equal(jsched_list(c, 0, "pages", false, &res), 0);
	assert_int_equal(res->count, N);
	jsched_results_free(res);
	jsched_close(c);
}

static void test_one_large_reply_is_not_cut(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "large");
	uint64_t ids[9];
	struct jsched_results *res;
	int fd = jdt_raw_hello(&t, "large");
	json_t *r;

	(void)state;
	submit_echoes(c, 9, 1000000, ids);
	jdt_send_frame(fd, "{\"op\": \"list\", \"id\": 1, \"client\": \"large\"}");
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 9);
	json_decref(r);
	close(fd);
	assert_int_equal(jsched_list(c, 0, "large", false, &res), 0);
	assert_int_equal(res->count, 9);
	jsched_results_free(res);
	jsched_close(c);
}

/* test_wait_pages: a wait on 20 jobs with 900 KB results each (18 MB of records) answers
 * within reply_frame_bytes with the first records and `more`; jsched_wait_many fetches
 * the rest through status and returns all 20. */
static void test_wait_pages(void **state)
{
	enum { N = 20, BYTES = 900000 };
	struct jsched_conn *c = jdt_connect(&t, "waitpages");
	uint64_t ids[N];
	struct jsched_results *res = NULL;
	int fd = jdt_raw_hello(&t, "waitpages");
	char req[1024];
	size_t off, got;
	json_t *r;

	(void)state;
	submit_echoes(c, N, BYTES, ids);
	off = (size_t)snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 1, \"jobs\": [");
	for (size_t i = 0; i < N; i++)
		off += (size_t)snprintf(req + off, sizeof(req) - off, "%s%llu", i ? "," : "",
					(unsigned long long)ids[i]);
	snprintf(req + off, sizeof(req) - off, "]}");
	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd); /* asserts the frame is within 16 MiB */
	assert_non_null(r);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_true(json_is_true(json_object_get(r, "more")));
	got = json_array_size(json_object_get(r, "jobs"));
	assert_true(got > 0 && got < N);
	json_decref(r);
	close(fd);
	assert_int_equal(jsched_wait_many(c, ids, N, JSCHED_WAIT_ALL, 30000, &res), N);
	assert_int_equal(res->count, N);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(res->items[i]->id, ids[i]);
		assert_int_equal(res->items[i]->state, JSCHED_STATE_SUCCEEDED);
	}
	jsched_results_free(res);
	jsched_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_and_list_page),
		cmocka_unit_test(test_one_large_reply_is_not_cut),
		cmocka_unit_test(test_wait_pages),
	};

	signal(SIGPIPE, SIG_IGN);
	/* Records that carry their results whole (up to 2 MiB each), so that replies of many
	 * records are large; past the default value_bytes they would carry sizes
	 * (test_daemon_result). */
	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"retention\": {\"jobs\": 20000}, "
			     "\"limits\": {\"value_bytes\": 2097152}",
			     NULL, NULL);
}
