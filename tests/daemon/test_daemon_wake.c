/* tests/daemon/test_daemon_wake.c: a worker's notice wakes the loop thread only when
 * something waits for it (run/runner.c, "Which ends wake the loop"): here each kind of
 * waiter sees an end that came with no other wake-up pending.
 *
 * The daemon runs with --test-clock, which turns off the sweep (the timer that takes the
 * notices nobody woke the loop for), so the only ways a worker's end reaches the loop are
 * the wake-up under test and a request; after the request that sets each case up, the
 * client sends nothing until its answer (or event) has come.  A skipped wake-up leaves
 * the end in the list for good: the client's own bound (20 s; the waits have no timeout
 * of the daemon's, whose expiry would take the list first) runs out and the test fails.  Each case fails so with its wake-up taken out of runner.c (checked
 * by hand: WANT ignored fails the waits and the stress; the re-pick of a wait of all
 * taken out fails test_wait_all_last_named_ends_first; the wake bit not kept across a retry
 * fails test_wait_on_retried; no eager watch fails the watch; no
 * dependent's want fails the dependency; no shutdown eager fails the shutdown).
 */
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

#define BOUND_MS 20000

static struct jsched_conn *conn(const char *client)
{
	struct jsched_conn *c = jdt_connect(&t, client);

	jsched_set_timeout(c, BOUND_MS);
	return c;
}

static uint64_t submit(struct jsched_conn *c, const char *fn, const char *args)
{
	struct jsched_spec *spec;
	uint64_t id = 0;

	assert_int_equal(jsched_spec_call(fn, args, &spec), 0);
	assert_int_equal(jsched_submit(c, spec, &id), 0);
	jsched_spec_free(spec);
	return id;
}

/* The answer of a wait_bounded: its status and its records. */
struct answer {
	bool done;
	int status;
	struct jsched_results *res;
};

static void answer_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	struct answer *a = arg;

	(void)c;
	a->done = true;
	a->status = status;
	if (jsched_reply_results(reply, &a->res) < 0)
		a->res = NULL;
}

/* pump: process c until *done, at most BOUND_MS (polls of 10 ms); asserts it came. */
static void pump(struct jsched_conn *c, const bool *done)
{
	for (int i = 0; i < BOUND_MS / 10 && !*done; i++) {
		struct pollfd p = {.fd = jsched_fd(c), .events = POLLIN | (jsched_want_write(c) ? POLLOUT : 0)};

		if (poll(&p, 1, 10) > 0)
			assert_true(jsched_process(c) >= 0);
	}
	if (!*done)
		fail_msg("no answer within %d ms: an end did not wake the loop", BOUND_MS);
}

/* wait_bounded: a wait with no timeout of the daemon's (a daemon's timeout takes the
 * notices first, which would hide a skipped wake-up), bounded here; asserts that every
 * job it answers with (all: each named; any: at least one) ended in state want
 * (wait_bounded: succeeded). */
static void wait_ended(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode,
		       enum jsched_state want)
{
	struct answer a = {0};
	size_t ok = 0;

	assert_true(jsched_wait_async(c, ids, n, mode, -1, answer_cb, &a) > 0);
	pump(c, &a.done);
	assert_int_equal(a.status, 0);
	assert_non_null(a.res);
	assert_int_equal(a.res->count, n);
	for (size_t i = 0; i < n; i++)
		ok += a.res->items[i]->state == want;
	if (mode == JSCHED_WAIT_ALL)
		assert_int_equal(ok, n);
	else
		assert_true(ok >= 1);
	jsched_results_free(a.res);
}

static void wait_bounded(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode)
{
	wait_ended(c, ids, n, mode, JSCHED_STATE_SUCCEEDED);
}

/* A wait on one job that a worker runs: its end wakes the loop. */
static void test_wait_one(void **state)
{
	struct jsched_conn *c = conn("w1");
	uint64_t id = submit(c, "spin", "{\"us\": 20000}");

	(void)state;
	wait_bounded(c, &id, 1, JSCHED_WAIT_ALL);
	jsched_close(c);
}

/* A wait of all of several jobs asks for one end at a time, the last one named first:
 * here that one (submitted first, short) ends first, so the wait must ask for the next
 * one's end, whose wake-up answers it. */
static void test_wait_all_last_named_ends_first(void **state)
{
	struct jsched_conn *c = conn("w2");
	uint64_t ids[3];

	(void)state;
	ids[2] = submit(c, "spin", "{\"us\": 1000}");
	ids[0] = submit(c, "spin", "{\"us\": 30000}");
	ids[1] = submit(c, "spin", "{\"us\": 20000}");
	wait_bounded(c, ids, 3, JSCHED_WAIT_ALL);
	/* And a wait of any: the first end answers it. */
	ids[0] = submit(c, "spin", "{\"us\": 20000}");
	ids[1] = submit(c, "spin", "{\"us\": 20000}");
	wait_bounded(c, ids, 2, JSCHED_WAIT_ANY);
	jsched_close(c);
}

/* A wait on a job that fails on a worker and is tried again: each attempt's end wakes the
 * loop (what waited for the first waits for the last). */
static void test_wait_on_retried(void **state)
{
	struct jsched_conn *c = conn("retry");
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": -1}, "
					 "\"retry\": {\"max_attempts\": 3, \"backoff_ms\": 0}}");

	(void)state;
	wait_ended(c, &id, 1, JSCHED_WAIT_ALL, JSCHED_STATE_FAILED);
	jsched_close(c);
}

/* A watcher is told of a worker's start and end as they happen. */
static void test_watch_sees_start_and_end(void **state)
{
	struct jsched_conn *w = conn("watcher"), *s = conn("submitter");
	enum jsched_state want[] = {JSCHED_STATE_WAITING, JSCHED_STATE_QUEUED, JSCHED_STATE_RUNNING,
				    JSCHED_STATE_SUCCEEDED};
	uint64_t last = 0, id;

	(void)state;
	assert_int_equal(jsched_watch(w, -1, NULL, &last), 0);
	id = submit(s, "spin", "{\"us\": 20000}");
	/* Other jobs of this uid may still end meanwhile (the wait of any above): skipped. */
	size_t i = 0;

	for (size_t seen = 0; i < sizeof(want) / sizeof(want[0]) && seen < 64; seen++) {
		struct jsched_event *ev = NULL;
		int rc = jsched_next_event(w, BOUND_MS, &ev);

		if (rc != 0)
			fail_msg("event %zu: %s", i, jsched_strerror(rc));
		if (ev->job->id == id) {
			assert_int_equal(ev->job->state, want[i]);
			i++;
		}
		jsched_event_free(ev);
	}
	assert_int_equal(i, sizeof(want) / sizeof(want[0]));
	jsched_close(w);
	jsched_close(s);
}

/* A dependent's gate: nothing waits for the first job but the second, whose release
 * needs the first one's end. */
static void test_dependent_released(void **state)
{
	struct jsched_conn *c = conn("dep");
	struct jsched_spec *spec;
	uint64_t a = submit(c, "spin", "{\"us\": 20000}"), b;

	(void)state;
	assert_int_equal(jsched_spec_call("noop", NULL, &spec), 0);
	assert_int_equal(jsched_spec_add_dep(spec, JSCHED_GATE_AFTER, a, JSCHED_DEP_SUCCESS), 0);
	assert_int_equal(jsched_submit(c, spec, &b), 0);
	jsched_spec_free(spec);
	wait_bounded(c, &b, 1, JSCHED_WAIT_ALL);
	jsched_close(c);
}

static bool replied;
static void reply_cb(struct jsched_conn *conn_, int status, const struct jsched_reply *reply, void *arg)
{
	(void)conn_;
	(void)reply;
	(void)arg;
	assert_int_equal(status, 0);
	replied = true;
}

/* A client held at its window (overflow "block", max_queued 1, max_running 1): its
 * submit is read once a worker has taken its queued job, after the running one ended. */
static void test_blocked_client_resumed(void **state)
{
	struct jsched_conn *c = conn("blk");
	struct jsched_spec *spec;

	(void)state;
	submit(c, "spin", "{\"us\": 30000}");
	submit(c, "spin", "{\"us\": 0}"); /* queued: max_running */
	assert_int_equal(jsched_spec_call("spin", "{\"us\": 0}", &spec), 0);
	replied = false;
	assert_true(jsched_submit_async(c, spec, reply_cb, NULL) > 0);
	jsched_spec_free(spec);
	pump(c, &replied);
	assert_true(replied);
	jsched_close(c);
}

/* Stress: a wait sent just as its job ends on a worker (the loop asks for an end that the
 * worker may be pushing at that moment): every wait is answered. */
static void test_wait_races_end(void **state)
{
	struct jsched_conn *c = conn("race");

	(void)state;
	for (unsigned i = 0; i < 3000; i++) {
		char args[32];
		uint64_t id;

		snprintf(args, sizeof(args), "{\"us\": %u}", (i * 7) % 40);
		id = submit(c, "spin", args);
		wait_bounded(c, &id, 1, JSCHED_WAIT_ALL);
	}
	jsched_close(c);
}

#define MEMBERS "\"workers\": 2, \"worker_scheduling\": \"%s\", \"clients\": {" \
		"\"blk\": {\"max_queued\": 1, \"max_running\": 1, \"overflow\": \"block\"}}"

/* A graceful shutdown waits for a running job nobody waits for: its end wakes the loop. */
static void shutdown_waits_for_end(const char *sched)
{
	char members[256];
	struct jsched_conn *c;

	snprintf(members, sizeof(members), MEMBERS, sched);
	jdt_start_clocked(&t, members);
	c = conn("late");
	submit(c, "spin", "{\"us\": 30000}");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_shutdown_waits_for_end(void **state)
{
	(void)state;
	shutdown_waits_for_end("low");
	shutdown_waits_for_end("normal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_one),
		cmocka_unit_test(test_wait_all_last_named_ends_first),
		cmocka_unit_test(test_wait_on_retried),
		cmocka_unit_test(test_watch_sees_start_and_end),
		cmocka_unit_test(test_dependent_released),
		cmocka_unit_test(test_blocked_client_resumed),
		cmocka_unit_test(test_wait_races_end),
	};
	const struct CMUnitTest alone[] = {
		cmocka_unit_test(test_shutdown_waits_for_end),
	};
	char members[256];
	int failed = 0;

	/* Both wake-ups: the runner's eventfd ("low") and libuv's uv_async ("normal"). */
	snprintf(members, sizeof(members), MEMBERS, "low");
	failed += jdt_run_group("wake_low", tests, sizeof(tests) / sizeof(tests[0]), &t, true, members,
				NULL, NULL);
	snprintf(members, sizeof(members), MEMBERS, "normal");
	failed += jdt_run_group("wake_normal", tests, sizeof(tests) / sizeof(tests[0]), &t, true,
				members, NULL, NULL);
	failed += cmocka_run_group_tests(alone, NULL, NULL);
	return failed;
}
