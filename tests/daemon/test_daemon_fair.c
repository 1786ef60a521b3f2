/* tests/daemon/test_daemon_fair.c: fairness observed end to end.  Three clients with
 * weights 1:2:3 saturate the pool with identical `spin` jobs; between two metrics
 * snapshots taken while all three are backlogged, each client's share of the service
 * the daemon charged (the per-client `service_us` counters: CPU time of the handlers)
 * must be within 5 % of 1/6, 2/6, 3/6.  No wall-clock timing is involved: the spin
 * handler burns CPU time, and service is measured in CPU time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/daemon/harness.h"

#define JOBS 2000	/* per client */
#define SPIN_US 200

static const char *const names[3] = {"w1", "w2", "w3"};

/* submit_spins: one message with JOBS spin jobs. */
static void submit_spins(struct jsched_conn *c)
{
	size_t len = 64 + JOBS * 64;
	char *req = malloc(len), *p = req;
	char *reply = NULL;

	p += sprintf(p, "{\"op\": \"submit\", \"jobs\": [");
	for (int i = 0; i < JOBS; i++)
		p += sprintf(p, "%s{\"kind\": \"call\", \"fn\": \"spin\", \"args\": {\"us\": %d}}",
			     i ? "," : "", SPIN_US);
	sprintf(p, "]}");
	assert_int_equal(jsched_request(c, req, &reply), 0);
	jsched_free(reply);
	free(req);
}

/* request_ok: send req on c and require an ok reply. */
static void request_ok(struct jsched_conn *c, const char *req)
{
	char *reply = NULL;
	json_t *r;

	assert_int_equal(jsched_request(c, req, &reply), 0);
	r = json_loads(reply, 0, NULL);
	if (!r || !json_is_true(json_object_get(r, "ok")))
		fail_msg("%s: %s", req, reply);
	json_decref(r);
	jsched_free(reply);
}

struct snap {
	double service[3];
	json_int_t queued[3];
	json_int_t dispatched;
};

static void snapshot(struct jsched_conn *c, struct snap *s)
{
	json_t *m = jdt_metrics(c);

	s->dispatched = 0;
	for (int i = 0; i < 3; i++) {
		json_t *cl = jdt_client_metrics(m, names[i]);
		json_t *q = json_object_get(cl, "queued");
		const char *k;
		json_t *v;

		assert_non_null(cl);
		s->service[i] = (double)json_integer_value(json_object_get(cl, "service_us"));
		s->queued[i] = 0;
		json_object_foreach(q, k, v)
			s->queued[i] += json_integer_value(v);
		s->dispatched += json_integer_value(json_object_get(cl, "dispatched"));
	}
	json_decref(m);
}

static void test_weights_1_2_3(void **state)
{
	struct jdt t;
	struct jsched_conn *c[3], *obs;
	struct snap a, b;
	double total = 0;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"fairness\": {\"policy\": \"fair\", \"window_ms\": 2000},"
		      " \"clients\": {\"w1\": {\"weight\": 1}, \"w2\": {\"weight\": 2},"
		      " \"w3\": {\"weight\": 3}}");
	for (int i = 0; i < 3; i++)
		c[i] = jdt_connect(&t, names[i]);
	obs = jdt_connect(&t, "observer");
	/* Each client paused while the three submit, and resumed together: a client that ran
	 * alone while the next ones' batches were still read (2,000 jobs of 200 us drain in
	 * 0.2 s on two workers; under TSan a batch takes longer than that to read) could run
	 * out of jobs before the measurement. */
	for (int i = 0; i < 3; i++) {
		request_ok(c[i], "{\"op\": \"pause\"}");
		submit_spins(c[i]);
	}
	for (int i = 0; i < 3; i++)
		request_ok(c[i], "{\"op\": \"resume\"}");
	/* Warm up: let the fair layer settle into the steady state with all three
	 * backlogged (a few hundred dispatches), then measure over 1,500 more. */
	snapshot(obs, &a);
	for (int i = 0; i < 3000 && a.dispatched < 300; i++) {
		jdt_sleep_ms(5);
		snapshot(obs, &a);
	}
	b = a;
	for (int i = 0; i < 6000 && b.dispatched < a.dispatched + 1500; i++) {
		jdt_sleep_ms(5);
		snapshot(obs, &b);
	}
	assert_true(b.dispatched >= a.dispatched + 1500);
	for (int i = 0; i < 3; i++) {
		if (b.queued[i] == 0)
			fail_msg("client %s ran out of jobs during the measurement", names[i]);
		total += b.service[i] - a.service[i];
	}
	{
		double x[3], sx = 0, sxx = 0, jain;

		for (int i = 0; i < 3; i++) {
			double share = (b.service[i] - a.service[i]) / total, want = (i + 1) / 6.0;

			fprintf(stderr, "client %s: share %.4f, target %.4f\n", names[i], share, want);
			assert_true(fabs(share - want) <= 0.05 * want);
			x[i] = share / (i + 1);
			sx += x[i];
			sxx += x[i] * x[i];
		}
		/* Jain's index of service / weight over the measurement: 1 is perfectly fair.
		 * (The daemon's own figure covers its sliding window, which also saw the
		 * ramp-up while the clients were still submitting; it is printed only.) */
		jain = sx * sx / (3 * sxx);
		fprintf(stderr, "Jain's index over the measurement: %.4f\n", jain);
		assert_true(jain > 0.99);
	}
	{
		json_t *m = jdt_metrics(obs);

		fprintf(stderr, "Jain's index (daemon's window): %.4f\n",
			json_real_value(json_object_get(json_object_get(m, "fairness"), "jain_index")));
		json_decref(m);
	}
	/* Done measuring: drop the rest so the shutdown is quick. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(jsched_drain(c[i], NULL, false, NULL, NULL), 0);
		jsched_close(c[i]);
	}
	jsched_close(obs);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* A handler that blocks its thread (a blocking system call, here nanosleep) is charged
 * the CPU time it used, not the wall time it held the worker: also for the first job a
 * worker thread runs, which once was charged its wall time (then the client it belonged
 * to was held back until the others had caught up with that bill). */
static void test_blocking_handler_charged_cpu(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *obs;
	json_t *m;
	json_int_t service;

	(void)state;
	jdt_start(&t, "\"workers\": 1, \"fairness\": {\"policy\": \"fair\"}");
	c = jdt_connect(&t, "blocker");
	obs = jdt_connect(&t, "observer");
	for (int i = 0; i < 2; i++) {
		uint64_t id = jdt_submit_call(c, "example.block", "{\"ms\": 300}");

		assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
		m = jdt_metrics(obs);
		service = json_integer_value(json_object_get(jdt_client_metrics(m, "blocker"), "service_us"));
		json_decref(m);
		fprintf(stderr, "after %d blocking jobs of 300 ms: service_us %lld\n", i + 1,
			(long long)service);
		/* CPU time: the syscall and the job's own bookkeeping, far below a 300 ms wall. */
		assert_true(service >= 0 && service < 100000);
	}
	jsched_close(c);
	jsched_close(obs);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weights_1_2_3),
		cmocka_unit_test(test_blocking_handler_charged_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
