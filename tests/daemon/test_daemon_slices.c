/* tests/daemon/test_daemon_slices.c: a wait's answer of many records is written in slices
 * (net/op_wait.c, "Answers in slices"), another client's requests answered between them,
 * and the answer's connection keeps its replies in order behind it.
 *
 * The heavy connection waits for 2,000 scheduled jobs (not_before far ahead; the daemon
 * runs with --test-clock, so nothing ever makes them due).  The light connection then sends
 * two frames in one write: a cancel of those jobs, which ends them all on the loop thread
 * inside that request and so makes the heavy answer due, and a metrics request.  Both
 * frames are read in one go, so the metrics are answered in the same loop iteration as the
 * cancel, before the loop has had a next iteration for a second slice: they must say that
 * an answer is being written in slices.  Without slices the whole answer was written
 * inside the cancel, and the metrics say nothing is (the check fails so with reply()'s
 * slicing taken out of op_wait.c).  Then the heavy answer must be whole (2,000 records,
 * each cancelled, in the order asked), and a ping the heavy connection sent after its
 * wait answered after it.
 *
 * A batch of many jobs is admitted in slices too (net/op_submit.c, "Slices"): with the
 * daemon stopped (SIGSTOP) the heavy connection writes a batch of 2,000 and the light one
 * a batch of 100; continued, the daemon finds both readable in one poll.  When it reads
 * the heavy one first, the light batch is admitted between the heavy one's slices, and
 * with the daemon's queue capped at 2,050 jobs the heavy batch, judged again after its
 * last slice, no longer fits: it is refused whole and none of its jobs exists, while the
 * light batch's 100 do (without slices the heavy batch was admitted whole and the light
 * one refused).  jdt_pause stops the daemon with its loop asleep in epoll_wait, so that
 * epoll reports the two in the order they became readable; kill(2) alone let the light
 * connection's entry from its last request be reported first (in 5 tries of one CI run,
 * as an ordinary user); up to 5 tries stay, for a wake-up between the check and the stop.
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

#define N_JOBS 2000

/* hello2: a raw connection that has done a version 2 hello as `client`. */
static int hello2(const char *client)
{
	int fd = jdt_raw(&t);
	char req[160];
	json_t *r;

	snprintf(req, sizeof(req), "{\"op\": \"hello\", \"id\": 0, \"version\": 2, \"client\": \"%s\"}",
		 client);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	return fd;
}

/* ids_text: "[id0,id1,...]" of the reply's ids (malloc'd). */
static char *ids_text(const json_t *ids, size_t n)
{
	char *s = malloc(n * 24 + 3);
	size_t at = 0;

	assert_non_null(s);
	s[at++] = '[';
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(s + at, "%s%lld", i ? "," : "",
				      (long long)json_integer_value(json_array_get(ids, i)));
	s[at++] = ']';
	s[at] = '\0';
	return s;
}

/* frame_text: the 4-byte length and the JSON text, appended to buf at *at. */
static void frame_text(char *buf, size_t *at, const char *json)
{
	uint32_t n = (uint32_t)strlen(json);
	unsigned char h[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8), (unsigned char)n};

	memcpy(buf + *at, h, 4);
	memcpy(buf + *at + 4, json, n);
	*at += 4 + n;
}

/* read_reply: the next frame on fd that is a reply (events skipped). */
static json_t *read_reply(int fd)
{
	for (;;) {
		json_t *f = jdt_read_frame(fd);

		assert_non_null(f);
		if (!json_object_get(f, "event"))
			return f;
		json_decref(f);
	}
}

/* loop_metric: the metrics reply's loop.<name>. */
static json_int_t loop_metric(const json_t *metrics, const char *name)
{
	return json_integer_value(
		json_object_get(json_object_get(json_object_get(metrics, "metrics"), "loop"), name));
}

/* batch_text: a submit (request id) of n noop calls scheduled a day ahead, malloc'd. */
static char *batch_text(int64_t id, size_t n)
{
	char *req = malloc(64 + n * 64);
	size_t at;

	assert_non_null(req);
	at = (size_t)sprintf(req, "{\"op\": \"submit\", \"id\": %lld, \"jobs\": [", (long long)id);
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(req + at, "%s{\"kind\": \"call\", \"fn\": \"noop\", \"not_before\": "
					       "9000000000000}", i ? "," : "");
	sprintf(req + at, "]}");
	return req;
}

static void test_light_answered_between_slices(void **state)
{
	int heavy = hello2("heavy"), light = hello2("light");
	size_t len = 64 + N_JOBS * 64, at = 0; /* batch_text's size */
	/* 2,000 jobs scheduled a day ahead of the test clock: they stay scheduled. */
	char *req = batch_text(1, N_JOBS), *ids, *both;
	json_t *r, *got, *recs;

	(void)state;
	r = jdt_raw_ask(heavy, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), N_JOBS);
	ids = ids_text(json_object_get(r, "jobs"), N_JOBS);
	json_decref(r);

	/* The wait, pending; the ping behind it answered says the wait has been read. */
	at = (size_t)sprintf(req, "{\"op\": \"wait\", \"id\": 2, \"mode\": \"all\", \"jobs\": %s}", ids);
	jdt_send_frame(heavy, req);
	r = jdt_raw_ask(heavy, "{\"op\": \"ping\", \"id\": 3}");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
	json_decref(r);

	/* The cancel and the metrics in one write. */
	both = malloc(len + 128);
	assert_non_null(both);
	at = 0;
	sprintf(req, "{\"op\": \"cancel\", \"id\": 10, \"jobs\": %s}", ids);
	frame_text(both, &at, req);
	frame_text(both, &at, "{\"op\": \"metrics\", \"id\": 11}");
	jdt_send_all(light, both, at);
	r = read_reply(light);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 10);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	r = read_reply(light);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 11);
	assert_int_equal(loop_metric(r, "answering"), 1);
	assert_int_equal(loop_metric(r, "sliced_replies"), 1);
	json_decref(r);
	/* A request of the heavy connection sent now waits for its answer in slices. */
	jdt_send_frame(heavy, "{\"op\": \"ping\", \"id\": 4}");

	got = read_reply(heavy);
	assert_int_equal(json_integer_value(json_object_get(got, "id")), 2);
	assert_true(json_is_true(json_object_get(got, "ok")));
	assert_null(json_object_get(got, "more"));
	recs = json_object_get(got, "jobs");
	assert_int_equal(json_array_size(recs), N_JOBS);
	r = json_loads(ids, 0, NULL);
	for (size_t i = 0; i < N_JOBS; i++) {
		const json_t *rec = json_array_get(recs, i);

		assert_int_equal(json_integer_value(json_object_get(rec, "job")),
				 json_integer_value(json_array_get(r, i)));
		assert_string_equal(json_string_value(json_object_get(rec, "state")), "cancelled");
	}
	json_decref(r);
	json_decref(got);
	r = read_reply(heavy);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
	json_decref(r);

	/* All sent: nothing in slices any more, and it took more than one. */
	r = jdt_raw_ask(light, "{\"op\": \"metrics\", \"id\": 12}");
	assert_int_equal(loop_metric(r, "answering"), 0);
	assert_true(loop_metric(r, "reply_slices") >= N_JOBS / 128);
	json_decref(r);
	free(both);
	free(ids);
	free(req);
	close(heavy);
	close(light);
}

/* A connection that closes while its answer is in slices: the answer is dropped, the
 * daemon goes on (the sanitizer builds check that nothing leaks or is used after free). */
static void test_closed_while_sliced(void **state)
{
	int heavy = hello2("heavy2"), light = hello2("light2");
	char *req = batch_text(1, N_JOBS), *ids;
	json_t *r;

	(void)state;
	r = jdt_raw_ask(heavy, req);
	ids = ids_text(json_object_get(r, "jobs"), N_JOBS);
	json_decref(r);
	sprintf(req, "{\"op\": \"wait\", \"id\": 2, \"jobs\": %s}", ids);
	jdt_send_frame(heavy, req);
	r = jdt_raw_ask(heavy, "{\"op\": \"ping\", \"id\": 3}");
	json_decref(r);
	sprintf(req, "{\"op\": \"cancel\", \"id\": 10, \"jobs\": %s}", ids);
	r = jdt_raw_ask(light, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	close(heavy);
	r = jdt_raw_ask(light, "{\"op\": \"ping\", \"id\": 11}");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 11);
	json_decref(r);
	free(ids);
	free(req);
	close(light);
}

/* scheduled: how many jobs the daemon has in state scheduled. */
static json_int_t scheduled(int fd)
{
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 99}");
	json_int_t n = json_integer_value(json_object_get(
		json_object_get(json_object_get(r, "metrics"), "jobs"), "scheduled"));

	json_decref(r);
	return n;
}

static void test_refused_midway_leaves_no_job(void **state)
{
	enum { TRIES = 5 };
	int heavy = hello2("heavy3"), light = hello2("light3"), try;
	char *big = batch_text(20, N_JOBS), *small = batch_text(30, 100);

	(void)state;
	for (try = 0; try < TRIES; try++) {
		json_int_t sliced0, sliced1;
		json_t *r, *hr, *lr;

		assert_int_equal(scheduled(light), 0);
		r = jdt_raw_ask(light, "{\"op\": \"metrics\", \"id\": 1}");
		sliced0 = loop_metric(r, "sliced_submits");
		json_decref(r);
		jdt_pause(&t);
		jdt_send_frame(heavy, big);
		jdt_send_frame(light, small);
		jdt_resume(&t);
		lr = read_reply(light);
		hr = read_reply(heavy);
		r = jdt_raw_ask(light, "{\"op\": \"metrics\", \"id\": 2}");
		sliced1 = loop_metric(r, "sliced_submits");
		assert_int_equal(loop_metric(r, "admitting"), 0);
		json_decref(r);
		/* Either way the light batch fits and the heavy one does not. */
		assert_true(json_is_true(json_object_get(lr, "ok")));
		assert_int_equal(json_array_size(json_object_get(lr, "jobs")), 100);
		assert_false(json_is_true(json_object_get(hr, "ok")));
		assert_string_equal(jdt_err_code(hr), "queue_full");
		/* None of the heavy batch's jobs exists. */
		assert_int_equal(scheduled(light), 100);
		json_decref(lr);
		json_decref(hr);
		r = jdt_raw_ask(light, "{\"op\": \"drain\", \"id\": 3}");
		assert_int_equal(json_integer_value(json_object_get(r, "cancelled")), 100);
		json_decref(r);
		if (sliced1 > sliced0)
			break; /* the heavy batch was read first and refused after its slices */
	}
	if (try == TRIES)
		fail_msg("in %d tries the daemon never read the heavy batch first", TRIES);
	/* The heavy connection is read again after its refusal. */
	{
		json_t *r = jdt_raw_ask(heavy, "{\"op\": \"ping\", \"id\": 4}");

		assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
		json_decref(r);
	}
	free(big);
	free(small);
	close(heavy);
	close(light);
}

/* A batch in slices is admitted whole: its reply after its last slice, every job there,
 * and the light connection's request answered meanwhile. */
static void test_light_answered_between_submit_slices(void **state)
{
	enum { TRIES = 5 };
	int heavy = hello2("heavy4"), light = hello2("light4"), try;
	char *big = batch_text(40, N_JOBS);

	(void)state;
	for (try = 0; try < TRIES; try++) {
		json_int_t admitting;
		json_t *r;

		jdt_pause(&t);
		jdt_send_frame(heavy, big);
		jdt_send_frame(light, "{\"op\": \"metrics\", \"id\": 5}");
		jdt_resume(&t);
		r = read_reply(light);
		admitting = loop_metric(r, "admitting");
		json_decref(r);
		r = read_reply(heavy);
		assert_true(json_is_true(json_object_get(r, "ok")));
		assert_int_equal(json_array_size(json_object_get(r, "jobs")), N_JOBS);
		json_decref(r);
		assert_int_equal(scheduled(light), N_JOBS);
		r = jdt_raw_ask(heavy, "{\"op\": \"drain\", \"id\": 6}");
		assert_int_equal(json_integer_value(json_object_get(r, "cancelled")), N_JOBS);
		json_decref(r);
		if (admitting == 1)
			break; /* read after the heavy batch's first slice, before its last */
	}
	if (try == TRIES)
		fail_msg("in %d tries no request was answered between a batch's slices", TRIES);
	free(big);
	close(heavy);
	close(light);
}

/* A batch admitted in slices is in the journal whole, each spec from its frame's copy:
 * after kill -9 every job is back, scheduled as it was. */
static void test_sliced_batch_survives_restart(void **state)
{
	int fd = hello2("heavy5");
	char *big = batch_text(50, N_JOBS);
	json_int_t sliced0;
	json_t *r;

	(void)state;
	r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 1}");
	sliced0 = loop_metric(r, "sliced_submits");
	json_decref(r);
	r = jdt_raw_ask(fd, big);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 2}");
	assert_int_equal(loop_metric(r, "sliced_submits"), sliced0 + 1);
	json_decref(r);
	close(fd);
	jdt_kill9(&t);
	jdt_restart(&t);
	fd = hello2("heavy5");
	assert_int_equal(scheduled(fd), N_JOBS);
	r = jdt_raw_ask(fd, "{\"op\": \"drain\", \"id\": 3}");
	assert_int_equal(json_integer_value(json_object_get(r, "cancelled")), N_JOBS);
	json_decref(r);
	free(big);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_light_answered_between_slices),
		cmocka_unit_test(test_closed_while_sliced),
		cmocka_unit_test(test_refused_midway_leaves_no_job),
		cmocka_unit_test(test_light_answered_between_submit_slices),
		cmocka_unit_test(test_sliced_batch_survives_restart),
	};

	return JDT_RUN_GROUP_CLOCKED(tests, &t, "\"limits\": {\"wait_ids_per_uid\": 100000, \"queued_jobs\": 2050}", NULL, NULL);
}
