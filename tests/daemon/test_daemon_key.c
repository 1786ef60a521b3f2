/* tests/daemon/test_daemon_key.c: idempotent submits end to end: a second submit with the
 * same key answers the first job's id and says so (raw protocol and libjsched), per uid
 * and not per client name; batches mix new and existing specs, and a ref to an existing
 * spec depends on that job; a key repeated in one message and bad keys are refused with
 * nothing created; a key is free again once its job is forgotten; the queue's room counts
 * only the jobs made; keys survive kill -9 through the journal (test_daemon_journal's
 * compaction test checks a key rebuilt from a snapshot). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/common/proc.h"
#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *c;

/* submit_key: submit a call job echoing `args` with key `key`; returns the reply. */
static json_t *submit_key(struct jsched_conn *conn, const char *key, const char *fn, const char *args)
{
	return jdt_ok(conn, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"%s\", "
			    "\"args\": %s, \"key\": \"%s\"}}", fn, args, key);
}

static void test_repeat_answers_first(void **state)
{
	json_int_t before = jdt_jobs_submitted(c);
	json_t *a = submit_key(c, "k-repeat", "sleep", "{\"ms\": 100}");
	json_t *b = submit_key(c, "k-repeat", "echo", "\"other spec\""), *rec;
	json_int_t id = json_integer_value(json_object_get(a, "job"));

	(void)state;
	assert_true(id > 0);
	assert_null(json_object_get(a, "existing"));
	assert_int_equal(json_integer_value(json_object_get(b, "job")), id);
	assert_true(json_is_true(json_object_get(b, "existing")));
	assert_int_equal(jdt_jobs_submitted(c), before + 1);
	/* The record is the first spec's, with its key; once final the key still finds it. */
	assert_string_equal(jdt_wait_final(c, (uint64_t)id, &rec), "succeeded");
	assert_string_equal(json_string_value(json_object_get(rec, "key")), "k-repeat");
	assert_string_equal(json_string_value(json_object_get(rec, "fn")), "sleep");
	json_decref(rec);
	json_decref(b);
	b = submit_key(c, "k-repeat", "noop", "null");
	assert_int_equal(json_integer_value(json_object_get(b, "job")), id);
	assert_true(json_is_true(json_object_get(b, "existing")));
	/* Another key makes another job. */
	json_decref(b);
	b = submit_key(c, "k-repeat-2", "noop", "null");
	assert_int_not_equal(json_integer_value(json_object_get(b, "job")), id);
	assert_null(json_object_get(b, "existing"));
	json_decref(a);
	json_decref(b);
}

static void test_library_and_other_client(void **state)
{
	struct jsched_conn *other = jdt_connect(&t, "keys-other");
	struct jsched_spec *spec;
	uint64_t id1, id2, id3;
	bool ex1 = true, ex2 = false, ex3 = false;

	(void)state;
	assert_int_equal(jsched_spec_call("noop", NULL, &spec), 0);
	assert_int_equal(jsched_spec_set_key(spec, "k-lib"), 0);
	assert_int_equal(jsched_submit_ex(c, spec, &id1, &ex1), 0);
	assert_false(ex1);
	assert_int_equal(jsched_submit_ex(c, spec, &id2, &ex2), 0);
	assert_true(ex2);
	assert_int_equal(id1, id2);
	/* Keys belong to the uid: the same uid under another client name finds the job. */
	assert_int_equal(jsched_submit_ex(other, spec, &id3, &ex3), 0);
	assert_true(ex3);
	assert_int_equal(id3, id1);
	/* The library refuses what the daemon would. */
	assert_int_equal(jsched_spec_set_key(spec, ""), JSCHED_EINVAL);
	jsched_spec_free(spec);
	jsched_close(other);
}

static void test_batch_mixes_existing(void **state)
{
	json_t *first = submit_key(c, "k-batch-a", "echo", "\"a\"");
	json_int_t a = json_integer_value(json_object_get(first, "job"));
	json_int_t before = jdt_jobs_submitted(c);
	json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
			      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-batch-b\"},"
			      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-batch-a\", \"ref\": \"a\"},"
			      "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": \"after a\", \"after\": [\"a\"]}]}");
	json_t *ids = json_object_get(r, "jobs"), *ex = json_object_get(r, "existing"), *rec;

	(void)state;
	assert_int_equal(json_array_size(ids), 3);
	assert_int_equal(json_integer_value(json_array_get(ids, 1)), a);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "refs"), "a")), a);
	assert_int_equal(json_array_size(ex), 1);
	assert_int_equal(json_integer_value(json_array_get(ex, 0)), 1);
	assert_int_equal(jdt_jobs_submitted(c), before + 2);
	/* The dependent on the existing spec ran after that job. */
	assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(json_array_get(ids, 2)), &rec),
			    "succeeded");
	assert_string_equal(json_string_value(json_object_get(rec, "value")), "after a");
	json_decref(rec);
	json_decref(r);
	/* The whole batch again: every spec with a key finds its job; the third makes one. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-batch-b\"},"
		      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-batch-a\"}]}");
	ex = json_object_get(r, "existing");
	assert_int_equal(json_array_size(ex), 2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "jobs"), 1)), a);
	assert_int_equal(jdt_jobs_submitted(c), before + 2);
	json_decref(r);
	json_decref(first);
}

static void test_bad_keys_refused(void **state)
{
	json_int_t before = jdt_jobs_submitted(c);
	char long_key[130];
	json_t *r;

	(void)state;
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": ["
		       "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-dup\"},"
		       "{\"kind\": \"call\", \"fn\": \"noop\"},"
		       "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-dup\"}]}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "jobs[2].key");
	json_decref(r);
	memset(long_key, 'k', 129);
	long_key[129] = '\0';
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"%s\"}}",
		    long_key);
	assert_string_equal(jdt_err_code(r), "bad_request");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "job.key");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"\"}}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"key\": 7}}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	/* The duplicate-key message made nothing, so k-dup is still free; 128 bytes is fine. */
	assert_int_equal(jdt_jobs_submitted(c), before);
	long_key[128] = '\0';
	r = submit_key(c, long_key, "noop", "null");
	json_decref(r);
	r = submit_key(c, "k-dup", "noop", "null");
	assert_null(json_object_get(r, "existing"));
	json_decref(r);
}

static void test_forgotten_frees_key(void **state)
{
	json_t *a = submit_key(c, "k-forget", "noop", "null"), *b, *r;
	json_int_t id = json_integer_value(json_object_get(a, "job"));
	uint64_t last = 0;

	(void)state;
	assert_string_equal(jdt_wait_final(c, (uint64_t)id, NULL), "succeeded");
	for (int i = 0; i < 30; i++)
		last = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, last, NULL), "succeeded");
	r = jdt_req(c, "{\"op\": \"status\", \"job\": %lld}", (long long)id);
	assert_string_equal(jdt_err_code(r), "job_forgotten");
	json_decref(r);
	b = submit_key(c, "k-forget", "noop", "null");
	assert_true(json_integer_value(json_object_get(b, "job")) > (json_int_t)last);
	assert_null(json_object_get(b, "existing"));
	json_decref(a);
	json_decref(b);
}

static void test_room_counts_new_jobs(void **state)
{
	struct jsched_conn *tight = jdt_connect(&t, "tight");
	uint64_t gate = jdt_submit_call(c, "sleep", "{\"ms\": 30000}");
	json_t *r, *first;
	json_int_t a;

	(void)state;
	/* Two jobs waiting for a sleeper of another client fill the client's queue of 2. */
	first = jdt_ok(tight, "{\"op\": \"submit\", \"jobs\": ["
			      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-t1\", \"after\": [%llu]},"
			      "{\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"k-t2\", \"after\": [%llu]}]}",
		       (unsigned long long)gate, (unsigned long long)gate);
	a = json_integer_value(json_array_get(json_object_get(first, "jobs"), 1));
	/* A new job does not fit ... */
	r = jdt_req(tight, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
	assert_string_equal(jdt_err_code(r), "queue_full");
	json_decref(r);
	/* ... but the same key again makes none, so it is answered. */
	r = submit_key(tight, "k-t2", "noop", "null");
	assert_int_equal(json_integer_value(json_object_get(r, "job")), a);
	assert_true(json_is_true(json_object_get(r, "existing")));
	json_decref(r);
	/* Cancelling the sleeper cancels both (their gate can no longer open). */
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)gate));
	assert_string_equal(jdt_wait_final(c, (uint64_t)a, NULL), "cancelled");
	json_decref(first);
	jsched_close(tight);
}

/* restart: keys come back with their jobs after kill -9 (the journal's submit records
 * carry the spec, key included, and recovery indexes it again). */
static void test_restart_keeps_keys(void **state)
{
	struct jdt d;
	struct jsched_conn *k;
	char members[600];
	json_t *r;
	json_int_t done, waiting;

	(void)state;
	jdt_start(&d, "\"workers\": 1");
	snprintf(members, sizeof(members), "\"workers\": 1, \"journal\": {\"dir\": \"%s/journal\"}", d.dir);
	jdt_write_config(&d, members);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "keys");
	r = submit_key(k, "k-done", "noop", "null");
	done = json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	assert_string_equal(jdt_wait_final(k, (uint64_t)done, NULL), "succeeded");
	r = jdt_ok(k, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", "
		      "\"key\": \"k-waiting\", \"after\": [%lld], \"deadline_in_ms\": 600000}}", (long long)done);
	waiting = json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	jsched_close(k);
	jdt_kill9(&d);
	jdt_restart(&d);
	k = jdt_connect(&d, "keys");
	r = submit_key(k, "k-done", "echo", "1");
	assert_int_equal(json_integer_value(json_object_get(r, "job")), done);
	assert_true(json_is_true(json_object_get(r, "existing")));
	json_decref(r);
	r = submit_key(k, "k-waiting", "echo", "1");
	assert_int_equal(json_integer_value(json_object_get(r, "job")), waiting);
	assert_true(json_is_true(json_object_get(r, "existing")));
	json_decref(r);
	r = submit_key(k, "k-new", "noop", "null");
	assert_null(json_object_get(r, "existing"));
	assert_true(json_integer_value(json_object_get(r, "job")) > waiting);
	json_decref(r);
	jsched_close(k);
	assert_int_equal(jdt_stop(&d, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeat_answers_first),
		cmocka_unit_test(test_library_and_other_client),
		cmocka_unit_test(test_batch_mixes_existing),
		cmocka_unit_test(test_bad_keys_refused),
		cmocka_unit_test(test_forgotten_frees_key),
		cmocka_unit_test(test_room_counts_new_jobs),
		cmocka_unit_test(test_restart_keeps_keys),
	};

	/* Retention keeps 20 final jobs (the forgotten test pushes one out); a client
	 * "tight" has room for 2 waiting or queued jobs. */
	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"retention\": {\"jobs\": 20}, "
			     "\"clients\": {\"tight\": {\"max_queued\": 2, \"overflow\": \"reject\"}}",
			     &c, "keys");
}
