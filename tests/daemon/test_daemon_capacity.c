/* tests/daemon/test_daemon_capacity.c: commands and suspending jobs under the fair layer,
 * against the real daemon.  A command needs a process slot and a fiber, a suspending call
 * a fiber; a job that finds none free stays in its client's queue, where priorities,
 * deadlines, the policy, cancel and drain act on it as on any queued job, and it holds no
 * worker meanwhile.  Finished jobs settle in the order they ended.  Every wait is for a
 * state or an event; the time limits are only the harness's bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tests/daemon/harness.h"

#define HOG "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}"
#define SHORT "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"0.02\"]"

/* submit: one job from its JSON spec (the members of "job"); returns its id. */
static uint64_t submit(struct jsched_conn *c, const char *spec)
{
	json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"job\": %s}", spec);
	uint64_t id = (uint64_t)json_integer_value(json_object_get(r, "job"));

	json_decref(r);
	assert_true(id > 0);
	return id;
}

static void cancel(struct jsched_conn *c, uint64_t id)
{
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)id));
}

static int64_t member(const json_t *rec, const char *key)
{
	const json_t *v = json_object_get(rec, key);

	if (!json_is_integer(v))
		fail_msg("record without %s", key);
	return (int64_t)json_integer_value(v);
}

/* A critical command submitted behind four queued ones runs as soon as the one slot is
 * free, before all of them. */
static void test_critical_command_goes_next(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t hog, q[4], crit;
	json_t *rc, *rq;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"max_processes\": 1}");
	c = jdt_connect(&t, NULL);
	hog = submit(c, HOG);
	jdt_until_state(c, hog, "running");
	for (int i = 0; i < 4; i++)
		q[i] = submit(c, SHORT "}");
	crit = submit(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"priority\": \"critical\"}");
	assert_string_equal(jdt_state(c, crit), "queued");
	cancel(c, hog);
	assert_string_equal(jdt_wait_final(c, crit, &rc), "succeeded");
	for (int i = 0; i < 4; i++) {
		assert_string_equal(jdt_wait_final(c, q[i], &rq), "succeeded");
		/* Each normal one started after the critical one (which, run last, would
		 * have started 20 ms after each of them: one slot). */
		assert_true(member(rq, "started_ms") >= member(rc, "started_ms"));
		json_decref(rq);
	}
	json_decref(rc);
	jdt_wait_final(c, hog, NULL);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* A deadline counts while a command waits for a slot: a 200 ms deadline behind a running
 * `sleep 300` expires while that one still runs (not when the slot frees); an earliest
 * deadline goes first among the waiting; cancel and drain end waiting commands
 * `cancelled` at once. */
static void test_deadline_edf_cancel_drain(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t hog, late, soon, none, dl, w[3];
	json_t *r, *rl, *rs, *rn;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"max_processes\": 1}");
	c = jdt_connect(&t, NULL);
	hog = submit(c, HOG);
	jdt_until_state(c, hog, "running");
	dl = submit(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"deadline_in_ms\": 200}");
	assert_string_equal(jdt_wait_final(c, dl, &r), "expired");
	assert_null(json_object_get(r, "started_ms"));
	json_decref(r);
	assert_string_equal(jdt_state(c, hog), "running");

	none = submit(c, SHORT "}");
	late = submit(c, SHORT ", \"deadline_in_ms\": 600000}");
	soon = submit(c, SHORT ", \"deadline_in_ms\": 300000}");
	for (int i = 0; i < 3; i++)
		w[i] = submit(c, HOG);
	/* cancel: the reply says cancelled, not cancelling (it never started). */
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)w[0]);
	{
		json_t *o = json_array_get(json_object_get(r, "jobs"), 0);
		assert_string_equal(json_string_value(json_object_get(o, "state")), "cancelled");
		assert_null(json_object_get(o, "cancelling"));
	}
	json_decref(r);
	cancel(c, hog);
	assert_string_equal(jdt_wait_final(c, none, &rn), "succeeded");
	assert_string_equal(jdt_wait_final(c, late, &rl), "succeeded");
	assert_string_equal(jdt_wait_final(c, soon, &rs), "succeeded");
	/* Start order (one slot, 20 ms each: no two in the same ms).  A job's finished_ms
	 * is when the loop thread saw it end, which may be after the next one started. */
	assert_true(member(rs, "started_ms") < member(rl, "started_ms"));
	assert_true(member(rl, "started_ms") < member(rn, "started_ms"));
	json_decref(rn);
	json_decref(rl);
	json_decref(rs);
	/* w[1] runs now, w[2] waits: drain cancels the waiting one, counted as cancelled. */
	jdt_until_state(c, w[1], "running");
	r = jdt_ok(c, "{\"op\": \"drain\"}");
	assert_int_equal(json_integer_value(json_object_get(r, "cancelled")), 1);
	assert_int_equal(json_integer_value(json_object_get(r, "cancelling")), 0);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, w[2], NULL), "cancelled");
	cancel(c, w[1]);
	jdt_wait_final(c, w[1], NULL);
	jdt_wait_final(c, hog, NULL);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* Each policy shares the one slot between two clients' commands as it shares the
 * machine: drr and wrr (cost 1, weight 1) strictly alternate; `fair` shares measured CPU
 * time (a command's is its fiber's, a few us that vary from job to job, more under a
 * sanitizer), so the counts need not match: neither client waits for the other's whole
 * backlog (each has one of the first 3). */
static void policy_share(const char *policy)
{
	struct jdt t;
	struct jsched_conn *a, *b;
	uint64_t hog, ja[6], jb[6];
	int64_t start[12];
	int who[12], n = 0;
	char conf[240];

	/* No journal: the order checked below depends on how much service the hog has
	 * had when it is cancelled, and with journal.sync "always" each of the 12 submits
	 * waits for a disk flush first (tens of ms on a busy disk), which lets it run longer. */
	snprintf(conf, sizeof(conf), "\"workers\": 2, \"fairness\": {\"policy\": \"%s\"}, "
		 "\"exec\": {\"max_processes\": 1}, \"journal\": {\"sync\": \"off\"}", policy);
	jdt_start(&t, conf);
	a = jdt_connect(&t, "tenant-a");
	b = jdt_connect(&t, "tenant-b");
	hog = submit(a, HOG);
	jdt_until_state(a, hog, "running");
	for (int i = 0; i < 6; i++) {
		ja[i] = submit(a, SHORT "}");
		jb[i] = submit(b, SHORT "}");
	}
	cancel(a, hog);
	for (int i = 0; i < 6; i++) {
		json_t *r;
		assert_string_equal(jdt_wait_final(a, ja[i], &r), "succeeded");
		start[n] = member(r, "started_ms");
		who[n++] = 0;
		json_decref(r);
		assert_string_equal(jdt_wait_final(b, jb[i], &r), "succeeded");
		start[n] = member(r, "started_ms");
		who[n++] = 1;
		json_decref(r);
	}
	/* In start order (one slot: no two start in the same ms, each runs 20 ms). */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && start[k] < start[k - 1]; k--) {
			int64_t ts = start[k];
			int tw = who[k];
			start[k] = start[k - 1];
			who[k] = who[k - 1];
			start[k - 1] = ts;
			who[k - 1] = tw;
		}
	int first_a = 0;
	for (int i = 0; i < 3; i++)
		first_a += who[i] == 0;
	if (strcmp(policy, "fair") == 0) {
		assert_in_range(first_a, 1, 2);
	} else {
		for (int i = 1; i < n; i++)
			assert_int_not_equal(who[i], who[i - 1]);
	}
	jdt_wait_final(a, hog, NULL);
	jsched_close(a);
	jsched_close(b);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_policy_fair(void **state)
{
	(void)state;
	policy_share("fair");
}

static void test_policy_drr(void **state)
{
	(void)state;
	policy_share("drr");
}

static void test_policy_wrr(void **state)
{
	(void)state;
	policy_share("wrr");
}

/* One worker and five fibers, one kept for commands: five sleepers of 300 s take the
 * four call fibers, the fifth waits queued (holding no worker), and a noop runs at once;
 * fibers.total is the configured 5, reserved 1. */
static void test_fiber_waiter_holds_no_worker(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t s[5], noop;
	json_t *m;
	int running = 0;

	(void)state;
	/* Five fibers, one kept for commands (exec.max_processes 1): four for sleepers. */
	jdt_start(&t, "\"workers\": 1, \"fibers\": 5, \"exec\": {\"max_processes\": 1}");
	c = jdt_connect(&t, NULL);
	for (int i = 0; i < 5; i++)
		s[i] = jdt_submit_call(c, "sleep", "{\"ms\": 300000}");
	for (int i = 0; i < 4; i++)
		jdt_until_state(c, s[i], "running");
	assert_string_equal(jdt_state(c, s[4]), "queued");
	noop = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, noop, NULL), "succeeded");
	assert_string_equal(jdt_state(c, s[4]), "queued");
	m = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "fibers"), "total")), 5);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "fibers"), "reserved")), 1);
	json_decref(m);
	/* A fiber frees: the waiting one takes it. */
	cancel(c, s[0]);
	assert_string_equal(jdt_wait_final(c, s[0], NULL), "cancelled");
	jdt_until_state(c, s[4], "running");
	for (int i = 1; i < 5; i++) {
		running += strcmp(jdt_state(c, s[i]), "running") == 0;
		cancel(c, s[i]);
	}
	assert_int_equal(running, 4);
	for (int i = 1; i < 5; i++)
		assert_string_equal(jdt_wait_final(c, s[i], NULL), "cancelled");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* Settling in the order jobs ended: one worker runs 120 echo jobs in order; retention 50
 * keeps the newest 50 (71-120), and the final watch events arrive in completion order. */
static void test_settle_in_completion_order(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *w;
	char *batch;
	size_t len = 0, cap = 120 * 48 + 64;
	uint64_t ids[120], last_final = 0;
	int finals = 0;
	json_t *r, *arr;

	(void)state;
	jdt_start(&t, "\"workers\": 1, \"retention\": {\"jobs\": 50}");
	c = jdt_connect(&t, NULL);
	w = jdt_connect(&t, NULL);
	assert_int_equal(jsched_watch(w, -1, NULL, NULL), 0);
	batch = malloc(cap);
	assert_non_null(batch);
	len += (size_t)snprintf(batch + len, cap - len, "{\"op\": \"submit\", \"jobs\": [");
	for (int i = 0; i < 120; i++)
		len += (size_t)snprintf(batch + len, cap - len,
					"%s{\"kind\": \"call\", \"fn\": \"echo\", \"args\": %d}",
					i ? ", " : "", i);
	snprintf(batch + len, cap - len, "]}");
	r = jdt_ok(c, "%s", batch);
	free(batch);
	arr = json_object_get(r, "jobs");
	assert_int_equal(json_array_size(arr), 120);
	for (int i = 0; i < 120; i++)
		ids[i] = (uint64_t)json_integer_value(json_array_get(arr, (size_t)i));
	json_decref(r);
	for (int guard = 0; finals < 120 && guard < 2000; guard++) {
		struct jsched_event *ev = NULL;
		int rc = jsched_next_event(w, 30000, &ev);
		if (rc != 0)
			fail_msg("no event: %s", jsched_strerror(rc));
		if (strcmp(ev->type, "job") == 0 && ev->job->state >= JSCHED_STATE_SUCCEEDED) {
			assert_true(ev->job->id > last_final);	/* completion order */
			last_final = ev->job->id;
			finals++;
		}
		jsched_event_free(ev);
	}
	assert_int_equal(finals, 120);
	/* Retention keeps the newest. */
	r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)ids[69]);
	assert_string_equal(jdt_err_code(r), "job_forgotten");
	json_decref(r);
	assert_string_equal(jdt_state(c, ids[70]), "succeeded");
	assert_string_equal(jdt_state(c, ids[119]), "succeeded");
	jsched_close(w);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* Limits under several clients: "a" may run one job at a time (max_running), "b" one
 * command (max_processes, its calls pass), "c" has no limit; a client at its limit holds
 * up no one, and set_client raises a limit at run time. */
static void test_limits_under_several_clients(void **state)
{
	struct jdt t;
	struct jsched_conn *a, *b, *cc;
	uint64_t ja[3], jb[3], jbc, jc[2];
	json_t *r;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"max_processes\": 8}, \"clients\": "
		  "{\"a\": {\"max_running\": 1}, \"b\": {\"max_processes\": 1}}");
	a = jdt_connect(&t, "a");
	b = jdt_connect(&t, "b");
	cc = jdt_connect(&t, "c");
	for (int i = 0; i < 3; i++) {
		ja[i] = jdt_submit_call(a, "sleep", "{\"ms\": 300000}");
		jb[i] = submit(b, HOG);
	}
	jbc = jdt_submit_call(b, "sleep", "{\"ms\": 300000}");
	jc[0] = submit(cc, HOG);
	jc[1] = submit(cc, HOG);
	jdt_until_state(a, ja[0], "running");
	jdt_until_state(b, jb[0], "running");
	jdt_until_state(b, jbc, "running");	/* b's call passes its waiting commands */
	jdt_until_state(cc, jc[0], "running");
	jdt_until_state(cc, jc[1], "running");
	assert_string_equal(jdt_state(a, ja[1]), "queued");
	assert_string_equal(jdt_state(b, jb[1]), "queued");
	r = jdt_metrics(a);
	assert_true(json_is_true(json_object_get(jdt_client_metrics(r, "a"), "at_limit")));
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(r, "b"),
							    "max_processes")), 1);
	json_decref(r);
	/* Raised at run time: a's second job starts. */
	r = jdt_req(a, "{\"op\": \"set_client\", \"client\": \"a\", \"max_running\": 2}");
	assert_string_equal(jdt_err_code(r), "");	/* the daemon's own uid is an admin */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "client"),
							    "max_running")), 2);
	json_decref(r);
	jdt_until_state(a, ja[1], "running");
	assert_string_equal(jdt_state(a, ja[2]), "queued");
	/* A bad limit is refused with the field named. */
	r = jdt_req(a, "{\"op\": \"set_client\", \"client\": \"a\", \"max_processes\": -1}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	json_decref(jdt_ok(a, "{\"op\": \"drain\", \"running\": true}"));
	json_decref(jdt_ok(b, "{\"op\": \"drain\", \"running\": true}"));
	json_decref(jdt_ok(cc, "{\"op\": \"drain\", \"running\": true}"));
	for (int i = 0; i < 3; i++) {
		jdt_wait_final(a, ja[i], NULL);
		jdt_wait_final(b, jb[i], NULL);
	}
	jdt_wait_final(b, jbc, NULL);
	jdt_wait_final(cc, jc[0], NULL);
	jdt_wait_final(cc, jc[1], NULL);
	jsched_close(a);
	jsched_close(b);
	jsched_close(cc);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* started_of: each job's started_ms (final, succeeded). */
static void started_of(struct jsched_conn *c, const uint64_t *ids, int n, int64_t *out)
{
	for (int i = 0; i < n; i++) {
		json_t *r;
		assert_string_equal(jdt_wait_final(c, ids[i], &r), "succeeded");
		out[i] = member(r, "started_ms");
		json_decref(r);
	}
}

/* Pause with queued jobs: a paused client's jobs wait while another's run; after resume
 * (wrr, one slot) it takes turns with the other, no burst and no lost place.  Pausing
 * another's client or everything needs an admin (the test runs as one, so it checks the
 * reply of a client that is not its own connection's). */
static void test_pause_resume_share(void **state)
{
	struct jdt t;
	struct jsched_conn *a, *b;
	uint64_t ja[4], jb[6];
	int64_t sa[4], sb[6];
	json_t *r;

	(void)state;
	/* No journal: the resume must arrive while b still has queued jobs (20 ms each),
	 * and with journal.sync "always" each reply before it waits for a disk flush,
	 * tens of ms on a loaded disk. */
	jdt_start(&t, "\"workers\": 2, \"fairness\": {\"policy\": \"wrr\"}, "
		  "\"exec\": {\"max_processes\": 1}, \"journal\": {\"sync\": \"off\"}");
	a = jdt_connect(&t, "tenant-a");
	b = jdt_connect(&t, "tenant-b");
	r = jdt_ok(a, "{\"op\": \"pause\"}");
	assert_string_equal(json_string_value(json_object_get(r, "client")), "tenant-a");
	json_decref(r);
	r = jdt_req(a, "{\"op\": \"pause\", \"client\": \"nobody-here\"}");
	assert_string_equal(jdt_err_code(r), "no_such_client");
	json_decref(r);
	for (int i = 0; i < 4; i++)
		ja[i] = submit(a, SHORT "}");
	for (int i = 0; i < 6; i++)
		jb[i] = submit(b, SHORT "}");
	assert_string_equal(jdt_wait_final(b, jb[1], NULL), "succeeded");
	assert_string_equal(jdt_state(a, ja[0]), "queued");	/* paused: not started */
	r = jdt_metrics(a);
	assert_true(json_is_true(json_object_get(jdt_client_metrics(r, "tenant-a"), "paused")));
	json_decref(r);
	json_decref(jdt_ok(a, "{\"op\": \"resume\"}"));
	started_of(a, ja, 4, sa);
	started_of(b, jb, 6, sb);
	/* In start order, a takes turns with b while b has jobs left (b has at least its
	 * last three then: b1 had ended when a resumed): one of b's between a's first three,
	 * not a burst of a's for the time it was paused. */
	for (int i = 1; i < 3; i++) {
		int between = 0;
		for (int k = 0; k < 6; k++)
			between += sb[k] > sa[i - 1] && sb[k] < sa[i];
		assert_int_equal(between, 1);
	}
	/* Pause everything: nothing starts; resume: it does. */
	json_decref(jdt_ok(a, "{\"op\": \"pause\", \"all\": true}"));
	uint64_t late = submit(b, "{\"kind\": \"call\", \"fn\": \"noop\"}");
	r = jdt_metrics(a);
	assert_true(json_is_true(json_object_get(json_object_get(r, "fairness"), "paused")));
	json_decref(r);
	assert_string_equal(jdt_state(b, late), "queued");
	json_decref(jdt_ok(a, "{\"op\": \"resume\", \"all\": true}"));
	assert_string_equal(jdt_wait_final(b, late, NULL), "succeeded");
	jsched_close(a);
	jsched_close(b);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* Hold and release: a held job stays queued (its record says held) while the next goes;
 * released, it goes back to its place (before a job that arrived after it); a job that
 * is not queued is reported as it is. */
static void test_hold_release(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t hog, j[3];
	int64_t s[3];
	json_t *r;

	(void)state;
	/* No journal: the release must arrive while j[1] runs (20 ms), and with
	 * journal.sync "always" each reply before it waits for a disk flush. */
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"max_processes\": 1}, "
		  "\"journal\": {\"sync\": \"off\"}");
	c = jdt_connect(&t, NULL);
	hog = submit(c, HOG);
	jdt_until_state(c, hog, "running");
	for (int i = 0; i < 3; i++)
		j[i] = submit(c, SHORT "}");
	r = jdt_ok(c, "{\"op\": \"hold\", \"jobs\": [%llu, %llu]}", (unsigned long long)j[0],
		   (unsigned long long)hog);
	{
		json_t *a = json_object_get(r, "jobs");
		assert_true(json_is_true(json_object_get(json_array_get(a, 0), "held")));
		assert_false(json_is_true(json_object_get(json_array_get(a, 1), "held")));
		assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "state")),
				    "running");
	}
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)j[0]);
	assert_true(json_is_true(json_object_get(json_object_get(r, "job"), "held")));
	json_decref(r);
	cancel(c, hog);
	jdt_until_state(c, j[1], "running");
	assert_string_equal(jdt_state(c, j[0]), "queued");
	json_decref(jdt_ok(c, "{\"op\": \"release\", \"job\": %llu}", (unsigned long long)j[0]));
	started_of(c, j, 3, s);
	assert_true(s[1] < s[0] && s[0] < s[2]);
	jdt_wait_final(c, hog, NULL);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_critical_command_goes_next),
		cmocka_unit_test(test_deadline_edf_cancel_drain),
		cmocka_unit_test(test_policy_fair),
		cmocka_unit_test(test_policy_drr),
		cmocka_unit_test(test_policy_wrr),
		cmocka_unit_test(test_fiber_waiter_holds_no_worker),
		cmocka_unit_test(test_settle_in_completion_order),
		cmocka_unit_test(test_limits_under_several_clients),
		cmocka_unit_test(test_pause_resume_share),
		cmocka_unit_test(test_hold_release),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
