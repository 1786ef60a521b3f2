/* tests/daemon/test_daemon_watch.c: watch and resume.  A watcher sees every state change
 * of its uid's jobs, numbered without gaps; a client that reconnects resumes from the
 * last number it saw and gets exactly the events it missed, in order; asking for events
 * no longer retained, or from another daemon instance, is refused with events_lost. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <string.h>

#include "tests/daemon/harness.h"

static struct jdt t;

/* next_job_event: the next event, asserted to be a job event; returns its seq. */
static uint64_t next_job_event(struct jsched_conn *w, uint64_t *job, enum jsched_state *st)
{
	struct jsched_event *ev = NULL;
	uint64_t seq;
	int rc = jsched_next_event(w, 30000, &ev);

	if (rc != 0)
		fail_msg("no event: %s", jsched_strerror(rc));
	assert_string_equal(ev->type, "job");
	seq = ev->seq;
	*job = ev->job->id;
	*st = ev->job->state;
	jsched_event_free(ev);
	return seq;
}

static void test_live_events_in_order(void **state)
{
	struct jsched_conn *w = jdt_connect(&t, "watcher"), *s = jdt_connect(&t, "submitter");
	uint64_t last = 0, seq, job, id;
	enum jsched_state st, want[] = {JSCHED_STATE_WAITING, JSCHED_STATE_QUEUED,
					JSCHED_STATE_RUNNING, JSCHED_STATE_SUCCEEDED};

	(void)state;
	assert_int_equal(jsched_watch(w, -1, NULL, &last), 0);
	id = jdt_submit_call(s, "noop", NULL);
	for (int i = 0; i < 4; i++) {
		seq = next_job_event(w, &job, &st);
		assert_int_equal(seq, last + 1 + (uint64_t)i);
		assert_int_equal(job, id);
		assert_int_equal(st, want[i]);
	}
	jsched_close(w);
	jsched_close(s);
}

static void test_resume_after_reconnect(void **state)
{
	struct jsched_conn *w = jdt_connect(&t, "watcher"), *s = jdt_connect(&t, "submitter");
	char instance[128];
	uint64_t last = 0, seq, job, id;
	enum jsched_state st;

	(void)state;
	snprintf(instance, sizeof(instance), "%s", jsched_server_instance(w));
	assert_int_equal(jsched_watch(w, -1, NULL, &last), 0);
	jsched_close(w);
	/* Events happen while nobody watches. */
	id = jdt_submit_call(s, "noop", NULL);
	assert_string_equal(jdt_wait_final(s, id, NULL), "succeeded");
	w = jdt_connect(&t, "watcher");
	assert_int_equal(jsched_watch(w, (int64_t)last, instance, NULL), 0);
	for (int i = 0; i < 4; i++) {
		seq = next_job_event(w, &job, &st);
		assert_int_equal(seq, last + 1 + (uint64_t)i);
		assert_int_equal(job, id);
	}
	assert_int_equal(st, JSCHED_STATE_SUCCEEDED);
	/* And live events follow the replay without a gap. */
	id = jdt_submit_call(s, "noop", NULL);
	seq = next_job_event(w, &job, &st);
	assert_int_equal(seq, last + 5);
	assert_int_equal(job, id);
	jsched_close(w);
	jsched_close(s);
}

static void test_events_lost(void **state)
{
	struct jsched_conn *w = jdt_connect(&t, "watcher"), *s = jdt_connect(&t, "submitter");
	json_t *r;
	uint64_t id = 0;

	(void)state;
	r = jdt_req(w, "{\"op\": \"watch\", \"from_seq\": 1, \"instance\": \"not-this-daemon\"}");
	assert_string_equal(jdt_err_code(r), "events_lost");
	assert_non_null(json_object_get(json_object_get(r, "error"), "oldest_seq"));
	json_decref(r);
	/* 16 events retained: 8 jobs make 32, so the first ones are gone. */
	for (int i = 0; i < 8; i++)
		id = jdt_submit_call(s, "noop", NULL);
	assert_string_equal(jdt_wait_final(s, id, NULL), "succeeded");
	r = jdt_req(w, "{\"op\": \"watch\", \"from_seq\": 1, \"instance\": \"%s\"}",
		    jsched_server_instance(w));
	assert_string_equal(jdt_err_code(r), "events_lost");
	assert_true(json_integer_value(json_object_get(json_object_get(r, "error"), "oldest_seq")) > 2);
	json_decref(r);
	jsched_close(w);
	jsched_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_events_in_order),
		cmocka_unit_test(test_resume_after_reconnect),
		cmocka_unit_test(test_events_lost),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"retention\": {\"events\": 16}",
			     NULL, NULL);
}
