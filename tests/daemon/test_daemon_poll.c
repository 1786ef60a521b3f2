/* tests/daemon/test_daemon_poll.c: the loop's poll after a request ("loop_poll_us",
 * daemon/net/server.c "The poll after a request"), on the real daemon, through its counters
 * in the metrics (loop.poll): never a timing.
 *
 * - Off (0, the default: the daemon starts without the setting): no window opens, nothing
 *   is polled, every counter stays 0.
 * - On: every read of a request opens a window or is counted as skipped, exactly; the loop
 *   polls without blocking in them (over 20 requests with windows of 1 ms, some iteration
 *   polled or a request came in one).
 * - While every worker runs a job (the workers leave the loop no CPU), no window opens:
 *   each request is counted as skipped.
 * - A reload changes the setting live.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;

struct poll_counts {
	json_int_t us, windows, polls, hits, skipped;
};

/* ask: send req as one frame in one write (so the daemon reads it in one read: the
 * windows are counted per read) and return its reply. */
static json_t *ask(int fd, const char *req)
{
	char buf[256];
	uint32_t len = htonl((uint32_t)strlen(req));

	assert_true(strlen(req) + 4 <= sizeof(buf));
	memcpy(buf, &len, 4);
	memcpy(buf + 4, req, strlen(req));
	jdt_send_all(fd, buf, strlen(req) + 4);
	json_t *r = jdt_read_frame(fd);
	assert_non_null(r);
	return r;
}

/* counts: the metrics' loop.poll, asked on fd (that request itself is not in them). */
static struct poll_counts counts(int fd)
{
	json_t *r = ask(fd, "{\"op\": \"metrics\", \"id\": 90}");
	json_t *p = json_object_get(json_object_get(json_object_get(r, "metrics"), "loop"), "poll");
	struct poll_counts k;

	assert_non_null(p);
	k.us = json_integer_value(json_object_get(p, "us"));
	k.windows = json_integer_value(json_object_get(p, "windows"));
	k.polls = json_integer_value(json_object_get(p, "polls"));
	k.hits = json_integer_value(json_object_get(p, "hits"));
	k.skipped = json_integer_value(json_object_get(p, "skipped"));
	json_decref(r);
	return k;
}

/* pings: n pings asked one after another (each read alone: one write each, the next
 * sent after its reply). */
static void pings(int fd, int n)
{
	for (int i = 0; i < n; i++) {
		json_t *r = ask(fd, "{\"op\": \"ping\", \"id\": 7}");

		assert_true(json_is_true(json_object_get(r, "ok")));
		json_decref(r);
	}
}

static void test_off_counts_nothing(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 1");
	int fd = jdt_raw_hello(&t, "poll");
	pings(fd, 20);
	struct poll_counts k = counts(fd);
	assert_int_equal(k.us, 0);
	assert_int_equal(k.windows, 0);
	assert_int_equal(k.polls, 0);
	assert_int_equal(k.hits, 0);
	assert_int_equal(k.skipped, 0);
	close(fd);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_on_opens_a_window_per_request(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 1, \"loop_poll_us\": 1000");
	int fd = jdt_raw_hello(&t, "poll");
	struct poll_counts a = counts(fd);
	pings(fd, 20);
	struct poll_counts b = counts(fd);
	assert_int_equal(b.us, 1000);
	/* the 20 pings and the first metrics request: each opened a window or was skipped */
	assert_int_equal((b.windows - a.windows) + (b.skipped - a.skipped), 21);
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		/* The worker parks between the pings (nothing runs), so windows open. */
		assert_true(b.windows > a.windows);
		assert_true((b.polls - a.polls) + (b.hits - a.hits) > 0);
	}
	assert_true(b.hits - a.hits <= 21);
	close(fd);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_not_while_workers_run_jobs(void **state)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char conf[128];
	uint64_t ids[64];

	(void)state;
	if (cpus < 1 || cpus > 64)
		skip();
	/* As many workers as CPUs, each running a long spin: no CPU is left for the loop. */
	snprintf(conf, sizeof(conf), "\"workers\": %ld, \"loop_poll_us\": 1000", cpus);
	jdt_start(&t, conf);
	struct jsched_conn *c = jdt_connect(&t, "busy");
	for (long i = 0; i < cpus; i++)
		ids[i] = jdt_submit_call(c, "spin", "{\"us\": 60000000}");
	for (long i = 0; i < cpus; i++)
		jdt_until_state(c, ids[i], "running");
	int fd = jdt_raw_hello(&t, "poll");
	struct poll_counts a = counts(fd);
	pings(fd, 10);
	struct poll_counts b = counts(fd);
	assert_int_equal(b.windows, a.windows);
	assert_int_equal(b.skipped - a.skipped, 11);
	for (long i = 0; i < cpus; i++)
		json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"jobs\": [%llu]}", (unsigned long long)ids[i]));
	for (long i = 0; i < cpus; i++)
		jdt_wait_final(c, ids[i], NULL);
	close(fd);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_reload_changes_it(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 1, \"loop_poll_us\": 0");
	struct jsched_conn *c = jdt_connect(&t, "poll");
	assert_int_equal(jdt_metric_int(c, "loop/poll/us"), 0);
	jdt_write_config(&t, "\"workers\": 1, \"loop_poll_us\": 40");
	json_decref(jdt_ok(c, "{\"op\": \"reload\"}"));
	assert_int_equal(jdt_metric_int(c, "loop/poll/us"), 40);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_counts_nothing),
		cmocka_unit_test(test_on_opens_a_window_per_request),
		cmocka_unit_test(test_not_while_workers_run_jobs),
		cmocka_unit_test(test_reload_changes_it),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
