/* tests/fair/test_fair_caps.c: capacities, limits, pause and hold, on the virtual clock.
 *
 * The setting of most tests is the daemon's: a resource "process" (the process slots)
 * and a resource "fiber", a class P of commands (a process and a fiber), a class F of
 * suspending calls (a fiber) and class 0 (plain calls, nothing).  Each test states the
 * promise of fair.h it checks, and would fail if that promise were broken.
 */
#include <stdio.h>

#include "tests/fair/fair_test.h"

enum { RES_PROC, RES_FIBER };

struct caps {
	struct jd_fair *f;
	int proc, fiber;	/* resource indices */
	uint8_t P, F;		/* classes */
};

static struct caps caps_new(enum jd_fair_policy policy, uint32_t procs, uint32_t fibers)
{
	struct jd_fair_config cfg = test_config(policy);
	struct caps k;
	uint32_t need[JD_FAIR_MAX_RES] = {0};

	k.f = fair_new_or_die(&cfg);
	k.proc = jd_fair_resource_add(k.f, "process", procs);
	k.fiber = jd_fair_resource_add(k.f, "fiber", fibers);
	assert_int_equal(k.proc, RES_PROC);
	assert_int_equal(k.fiber, RES_FIBER);
	need[k.proc] = 1;
	need[k.fiber] = 1;
	int p = jd_fair_class_add(k.f, need);
	need[k.proc] = 0;
	int fb = jd_fair_class_add(k.f, need);
	assert_int_equal(p, 1);
	assert_int_equal(fb, 2);
	k.P = (uint8_t)p;
	k.F = (uint8_t)fb;
	return k;
}

/* Admit t as a job of class cls, tagged. */
static int admit_cls(struct jd_fair *f, struct jd_fair_client *c, struct tjob *t, int tag,
		     uint8_t cls, int prio, uint64_t deadline)
{
	return admit_in(f, c, t, 0, tag, cls, prio, deadline, 0);
}

/* Take one job if there is one (NULL if none). */
static struct tjob *take_or_null(struct jd_fair *f)
{
	struct jd_fair_job *j = NULL;

	return jd_fair_take(f, &j, 1) == 1 ? TJOB(j) : NULL;
}

static void free_all(struct jd_fair *f, struct jd_fair_client **c, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(jd_fair_client_remove(f, c[i]), 0);
	jd_fair_free(f);
}

/* The daemon's defect, in the fair layer: one process slot, a command running, four
 * commands queued, then a critical one: the critical one goes next when the slot frees,
 * and the client's call jobs run meanwhile, not held up behind its waiting commands. */
static void test_slot_priority_and_calls_pass(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 1, 100);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob t[8];

	assert_int_equal(admit_cls(k.f, a, &t[0], 0, k.P, JD_FAIR_NORMAL, 0), 0);
	assert_ptr_equal(take1(k.f), &t[0]);
	for (int i = 1; i <= 4; i++)
		assert_int_equal(admit_cls(k.f, a, &t[i], i, k.P, JD_FAIR_NORMAL, 0), 0);
	assert_int_equal(admit_cls(k.f, a, &t[5], 5, k.P, JD_FAIR_CRITICAL, 0), 0);
	assert_int_equal(admit_cls(k.f, a, &t[6], 6, 0, JD_FAIR_LOW, 0), 0);
	assert_int_equal(admit_cls(k.f, a, &t[7], 7, k.F, JD_FAIR_LOW, 0), 0);
	/* The slot is taken: the two calls go (low priority, but they fit), no command. */
	assert_int_equal(jd_fair_ready(k.f), 2);
	assert_ptr_equal(take1(k.f), &t[6]);
	assert_ptr_equal(take1(k.f), &t[7]);
	assert_null(take_or_null(k.f));
	assert_int_equal(jd_fair_ready(k.f), 0);
	struct jd_fair_job *done = &t[0].fj;
	assert_true(jd_fair_complete(k.f, &done, 1));	/* made room: wake a taker */
	assert_int_equal(jd_fair_ready(k.f), 5);
	struct tjob *run = take1(k.f);
	assert_ptr_equal(run, &t[5]);		/* the critical one first */
	assert_null(take_or_null(k.f));		/* one slot */
	for (int i = 1; i <= 4; i++) {
		complete1(k.f, run, 1000);
		run = take1(k.f);
		assert_ptr_equal(run, &t[i]);	/* then in arrival order */
	}
	complete1(k.f, run, 1000);
	done = &t[6].fj;
	assert_false(jd_fair_complete(k.f, &done, 1));	/* a plain call: nothing waited */
	complete1(k.f, &t[7], 1000);
	struct jd_fair_stats st;
	jd_fair_stats(k.f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[RES_PROC], 0);
	assert_int_equal(st.res_used[RES_FIBER], 0);
	free_all(k.f, &a, 1);
}

/* EDF and deadlines hold for jobs waiting for capacity: the earliest deadline goes first
 * when the slot frees, and a deadline passing while the job waits expires it then (by
 * the timer, and by a take that finds it due), not when the slot frees. */
static void test_slot_edf_and_expiry(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 1, 100);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob run, late, early, soon, other;
	uint64_t t0 = vclock(NULL);

	admit_cls(k.f, a, &run, 0, k.P, JD_FAIR_NORMAL, 0);
	assert_ptr_equal(take1(k.f), &run);
	admit_cls(k.f, a, &late, 1, k.P, JD_FAIR_NORMAL, t0 + 3000000);
	admit_cls(k.f, a, &early, 2, k.P, JD_FAIR_NORMAL, t0 + 2000000);
	admit_cls(k.f, a, &soon, 3, k.P, JD_FAIR_NORMAL, t0 + 200);
	admit_cls(k.f, a, &other, 4, k.P, JD_FAIR_NORMAL, t0 + 400);
	assert_int_equal(jd_fair_next_deadline(k.f), t0 + 200);
	vclock_advance(201);			/* the timer at 200 ns */
	assert_int_equal(jd_fair_expire(k.f), 1);
	assert_int_equal(atomic_load(&soon.last), JD_FAIR_EXPIRED);
	vclock_advance(200);			/* due, found by a take (nothing fits) */
	assert_null(take_or_null(k.f));
	assert_int_equal(atomic_load(&other.last), JD_FAIR_EXPIRED);
	complete1(k.f, &run, 500);
	assert_ptr_equal(take1(k.f), &early);
	complete1(k.f, &early, 500);
	assert_ptr_equal(take1(k.f), &late);
	complete1(k.f, &late, 500);
	free_all(k.f, &a, 1);
}

/* Each policy shares a scarce resource between clients as it shares the machine: two
 * clients with commands, one slot, alternate; a third client's calls are not held up. */
static void policy_share(enum jd_fair_policy policy)
{
	struct caps k = caps_new(policy, 1, 100);
	struct jd_fair_client *c[3] = {client_new(k.f, "a", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "b", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "calls", 1, 0, JD_FAIR_REJECT)};
	struct tjob ja[10], jb[10], jc[10];
	int got[2] = {0, 0};

	for (int i = 0; i < 10; i++) {
		admit_cls(k.f, c[0], &ja[i], 0, k.P, JD_FAIR_NORMAL, 0);
		admit_cls(k.f, c[1], &jb[i], 1, k.P, JD_FAIR_NORMAL, 0);
	}
	struct tjob *run = take1(k.f);
	for (int i = 0; i < 10; i++)	/* calls arrive later, and all pass */
		admit_cls(k.f, c[2], &jc[i], 2, 0, JD_FAIR_NORMAL, 0);
	for (int i = 0; i < 10; i++) {
		struct tjob *t = take1(k.f);
		assert_int_equal(t->tag, 2);
		complete1(k.f, t, 1000);
	}
	int prev = -1, alternations = 0;
	for (int i = 0; i < 19; i++) {
		got[run->tag]++;
		alternations += run->tag != prev;
		prev = run->tag;
		assert_null(take_or_null(k.f));		/* one slot */
		complete1(k.f, run, 1000);
		run = take1(k.f);
	}
	got[run->tag]++;
	complete1(k.f, run, 1000);
	assert_int_equal(got[0], 10);
	assert_int_equal(got[1], 10);
	assert_true(alternations >= 18);	/* a b a b ...: turns of one job each */
	free_all(k.f, c, 3);
}

static void test_policy_share_fair(void **state)
{
	(void)state;
	policy_share(JD_FAIR_POLICY_FAIR);
}

static void test_policy_share_drr(void **state)
{
	(void)state;
	policy_share(JD_FAIR_POLICY_DRR);
}

static void test_policy_share_wrr(void **state)
{
	(void)state;
	policy_share(JD_FAIR_POLICY_WRR);
}

/* Cancel and drain end waiting commands `cancelled` (never dispatched), and a policy
 * switch with jobs waiting for capacity loses none. */
static void test_cancel_drain_switch(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 1, 100);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob run, w[6];

	admit_cls(k.f, a, &run, 0, k.P, JD_FAIR_NORMAL, 0);
	assert_ptr_equal(take1(k.f), &run);
	for (int i = 0; i < 6; i++)
		admit_cls(k.f, a, &w[i], i, k.P, JD_FAIR_NORMAL, 0);
	assert_int_equal(jd_fair_cancel(k.f, &w[0].fj), 0);
	assert_int_equal(atomic_load(&w[0].last), JD_FAIR_CANCELLED);
	assert_int_equal(jd_fair_set_policy(k.f, JD_FAIR_POLICY_DRR), 0);
	assert_null(take_or_null(k.f));
	complete1(k.f, &run, 10);
	assert_ptr_equal(take1(k.f), &w[1]);
	assert_int_equal(jd_fair_set_policy(k.f, JD_FAIR_POLICY_WRR), 0);
	assert_int_equal(jd_fair_drain(k.f, a), 4);
	for (int i = 2; i < 6; i++) {
		assert_int_equal(atomic_load(&w[i].finals), 1);
		assert_int_equal(atomic_load(&w[i].last), JD_FAIR_CANCELLED);
	}
	complete1(k.f, &w[1], 10);
	free_all(k.f, &a, 1);
}

/* max_running: a client at its limit is skipped (others go on), and goes on when one of
 * its jobs completes; a per-resource maximum (max_processes) limits only the classes
 * that need the resource. */
static void test_client_limits(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 8, 100);
	struct jd_fair_client_config cc = {.max_running = 2};
	struct jd_fair_client *a, *b;
	struct tjob ja[6], jb[6], *run[2];

	assert_int_equal(jd_fair_client_add(k.f, "a", &cc, NULL, &a), 0);
	cc = (struct jd_fair_client_config){0};
	cc.max_res[RES_PROC] = 1;
	assert_int_equal(jd_fair_client_add(k.f, "b", &cc, NULL, &b), 0);
	for (int i = 0; i < 6; i++)
		admit_cls(k.f, a, &ja[i], 0, (uint8_t)(i % 2 ? k.F : 0), JD_FAIR_NORMAL, 0);
	for (int i = 0; i < 3; i++)
		admit_cls(k.f, b, &jb[i], 1, k.P, JD_FAIR_NORMAL, 0);
	for (int i = 3; i < 6; i++)
		admit_cls(k.f, b, &jb[i], 1, 0, JD_FAIR_NORMAL, 0);
	/* a: two at once of any class; b: one command at once, its calls pass. */
	struct jd_fair_job *out[16];
	size_t n = jd_fair_take(k.f, out, 16);
	int na = 0, nbp = 0, nbc = 0;
	for (size_t i = 0; i < n; i++) {
		struct tjob *t = TJOB(out[i]);
		if (t->tag == 0)
			run[na++] = t;
		else if (t->fj.cls == k.P)
			nbp++;
		else
			nbc++;
	}
	assert_int_equal(na, 2);
	assert_int_equal(nbp, 1);
	assert_int_equal(nbc, 3);
	struct jd_fair_client_stats cs;
	jd_fair_client_stats(k.f, a, NULL, &cs);
	assert_true(cs.at_limit);
	jd_fair_client_stats(k.f, b, NULL, &cs);
	assert_int_equal(cs.res_held[RES_PROC], 1);
	assert_null(take_or_null(k.f));
	complete1(k.f, run[0], 100);
	struct tjob *t = take1(k.f);
	assert_int_equal(t->tag, 0);		/* a goes on */
	assert_null(take_or_null(k.f));
	/* Raising a's limit at run time lets the rest go at once. */
	cc = (struct jd_fair_client_config){.max_running = 10};
	assert_int_equal(jd_fair_client_set(k.f, a, &cc), 0);
	n = jd_fair_take(k.f, out, 16);
	assert_int_equal(n, 3);
	jd_fair_complete(k.f, out, n);
	complete1(k.f, run[1], 100);
	complete1(k.f, t, 100);
	/* b's commands one at a time. */
	for (int i = 0; i < 6; i++)
		if (jb[i].fj.state == JD_FAIR_DISPATCHED)
			complete1(k.f, &jb[i], 100);
	t = take1(k.f);
	assert_int_equal(t->fj.cls, k.P);
	assert_null(take_or_null(k.f));
	complete1(k.f, t, 100);
	t = take1(k.f);
	complete1(k.f, t, 100);
	assert_null(take_or_null(k.f));
	struct jd_fair_client *cl[2] = {a, b};
	free_all(k.f, cl, 2);
}

/* A global per-kind limit is a resource's capacity, changed at run time: raising it
 * dispatches more at once; lowering it below what runs recalls nothing and dispatches
 * nothing needing it until enough have completed. */
static void test_capacity_at_run_time(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_WRR, 2, 100);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob j[8];
	struct jd_fair_job *out[8];

	for (int i = 0; i < 8; i++)
		admit_cls(k.f, a, &j[i], i, k.P, JD_FAIR_NORMAL, 0);
	assert_int_equal(jd_fair_take(k.f, out, 8), 2);
	assert_int_equal(jd_fair_resource_set(k.f, k.proc, 5), 0);
	assert_int_equal(jd_fair_take(k.f, out + 2, 6), 3);
	assert_int_equal(jd_fair_resource_set(k.f, k.proc, 1), 0);
	jd_fair_complete(k.f, out, 4);		/* 1 still runs: at the capacity */
	assert_null(take_or_null(k.f));
	jd_fair_complete(k.f, out + 4, 1);
	struct tjob *t = take1(k.f);
	assert_null(take_or_null(k.f));
	complete1(k.f, t, 10);
	assert_int_equal(jd_fair_resource_set(k.f, 7, 1), JSCHED_EINVAL);
	/* Units held outside jobs count against the same capacity. */
	assert_int_equal(jd_fair_resource_take(k.f, k.proc, 1), 0);
	assert_int_equal(jd_fair_resource_take(k.f, k.proc, 1), JSCHED_EAGAIN);
	assert_int_equal(jd_fair_resource_take(k.f, 7, 1), JSCHED_EINVAL);
	assert_null(take_or_null(k.f));
	jd_fair_resource_give(k.f, k.proc, 1);
	t = take1(k.f);
	assert_int_equal(jd_fair_resource_take(k.f, k.proc, 1), JSCHED_EAGAIN);
	complete1(k.f, t, 10);
	assert_int_equal(jd_fair_drain(k.f, a), 1);
	free_all(k.f, &a, 1);
}

/* Pause: a paused client's queued jobs are skipped by every policy (others go on),
 * cancel and deadlines still act on them; after resume it banks no credit: `fair` does
 * not give it a burst for the time it was paused. */
static void pause_policy(enum jd_fair_policy policy)
{
	struct caps k = caps_new(policy, 1, 100);
	struct jd_fair_client *c[2] = {client_new(k.f, "a", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "b", 1, 0, JD_FAIR_REJECT)};
	static struct tjob ja[60], jb[60];
	struct tjob dl;

	for (int i = 0; i < 60; i++) {
		admit_cls(k.f, c[0], &ja[i], 0, 0, JD_FAIR_NORMAL, 0);
		admit_cls(k.f, c[1], &jb[i], 1, 0, JD_FAIR_NORMAL, 0);
	}
	admit_cls(k.f, c[0], &dl, 0, k.P, JD_FAIR_CRITICAL, vclock(NULL) + 100);
	assert_int_equal(jd_fair_pause(k.f, c[0], true), 0);
	struct jd_fair_client_stats cs;
	jd_fair_client_stats(k.f, c[0], NULL, &cs);
	assert_true(cs.paused);
	for (int i = 0; i < 30; i++) {
		struct tjob *t = take1(k.f);
		assert_int_equal(t->tag, 1);
		complete1(k.f, t, 1000);
	}
	vclock_advance(200);
	assert_int_equal(jd_fair_expire(k.f), 1);	/* a deadline still expires */
	assert_int_equal(atomic_load(&dl.last), JD_FAIR_EXPIRED);
	assert_int_equal(jd_fair_cancel(k.f, &ja[59].fj), 0);
	assert_int_equal(jd_fair_pause(k.f, c[0], false), 0);
	/* After resume: shared from here on, no catching up: of the next 20, about 10. */
	int a = 0;
	for (int i = 0; i < 20; i++) {
		struct tjob *t = take1(k.f);
		a += t->tag == 0;
		complete1(k.f, t, 1000);
	}
	assert_in_range(a, 9, 11);
	assert_int_equal(ja[0].fj.state, JD_FAIR_DISPATCHED); /* its own order kept */
	jd_fair_drain(k.f, c[0]);
	jd_fair_drain(k.f, c[1]);
	free_all(k.f, c, 2);
}

static void test_pause_fair(void **state)
{
	(void)state;
	pause_policy(JD_FAIR_POLICY_FAIR);
}

static void test_pause_drr(void **state)
{
	(void)state;
	pause_policy(JD_FAIR_POLICY_DRR);
}

static void test_pause_wrr(void **state)
{
	(void)state;
	pause_policy(JD_FAIR_POLICY_WRR);
}

/* A resumed client takes its floor from where service is: not from a client whose
 * command has waited for a slot all along (its vtime is old), or it would come back with
 * all the credit of that wait. */
static void test_no_credit_from_a_waiting_flow(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 1, 100);
	struct jd_fair_client *c[4] = {client_new(k.f, "x", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "waits", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "b", 1, 0, JD_FAIR_REJECT),
				       client_new(k.f, "paused", 1, 0, JD_FAIR_REJECT)};
	struct tjob x, w, jb[40], jc[40];

	admit_cls(k.f, c[0], &x, 0, k.P, JD_FAIR_NORMAL, 0);
	assert_ptr_equal(take1(k.f), &x);		/* holds the slot throughout */
	admit_cls(k.f, c[1], &w, 1, k.P, JD_FAIR_NORMAL, 0);
	for (int i = 0; i < 40; i++) {
		admit_cls(k.f, c[2], &jb[i], 2, 0, JD_FAIR_NORMAL, 0);
		admit_cls(k.f, c[3], &jc[i], 3, 0, JD_FAIR_NORMAL, 0);
	}
	jd_fair_pause(k.f, c[3], true);
	for (int i = 0; i < 20; i++) {
		struct tjob *t = take1(k.f);
		assert_int_equal(t->tag, 2);
		complete1(k.f, t, 1000);
	}
	jd_fair_pause(k.f, c[3], false);
	int resumed = 0;
	for (int i = 0; i < 20; i++) {
		struct tjob *t = take1(k.f);
		resumed += t->tag == 3;
		complete1(k.f, t, 1000);
	}
	assert_in_range(resumed, 9, 11);
	complete1(k.f, &x, 1000);
	assert_ptr_equal(take1(k.f), &w);
	complete1(k.f, &w, 1000);
	jd_fair_drain(k.f, c[2]);
	jd_fair_drain(k.f, c[3]);
	free_all(k.f, c, 4);
}

/* drr with a fixed quantum far below the costs, each client's jobs in two classes: the
 * jump that skips the empty rounds works over two rings (the take returns, no pass over
 * pass), and the split by cost holds (a's jobs cost 2x b's: b sends two for each of a's). */
static void test_drr_jump_across_classes(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	cfg.drr_quantum = 1;
	struct jd_fair *f = fair_new_or_die(&cfg);
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	need[jd_fair_resource_add(f, "fiber", 1000)] = 1;
	uint8_t F = (uint8_t)jd_fair_class_add(f, need);
	struct jd_fair_client *c[2] = {client_new(f, "a", 1, 0, JD_FAIR_REJECT),
				       client_new(f, "b", 1, 0, JD_FAIR_REJECT)};
	static struct tjob ja[20], jb[40];
	int got[2] = {0, 0};

	for (int i = 0; i < 20; i++)
		admit_in(f, c[0], &ja[i], 0, 0, (uint8_t)(i % 2 ? F : 0), JD_FAIR_NORMAL, 0, 2000);
	for (int i = 0; i < 40; i++)
		admit_in(f, c[1], &jb[i], 1, 1, (uint8_t)(i % 2 ? F : 0), JD_FAIR_NORMAL, 0, 1000);
	for (int i = 0; i < 30; i++) {
		struct tjob *t = take1(f);
		got[t->tag]++;
		complete1(f, t, 10);
	}
	assert_in_range(got[0], 9, 11);
	assert_in_range(got[1], 19, 21);
	jd_fair_drain(f, c[0]);
	jd_fair_drain(f, c[1]);
	free_all(f, c, 2);
}

/* Pause of the whole instance: nothing is dispatched, deadlines still expire, resume
 * goes on where it was. */
static void test_pause_all(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob j1, j2;

	admit(f, a, &j1, 0, JD_FAIR_NORMAL, 0, 1);
	admit(f, a, &j2, 0, JD_FAIR_NORMAL, vclock(NULL) + 10, 1);
	assert_int_equal(jd_fair_pause(f, NULL, true), 0);
	assert_int_equal(jd_fair_ready(f), 0);
	vclock_advance(20);
	assert_null(take_or_null(f));
	assert_int_equal(atomic_load(&j2.last), JD_FAIR_EXPIRED);
	struct jd_fair_stats st;
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_true(st.paused);
	assert_int_equal(jd_fair_pause(f, NULL, false), 0);
	assert_int_equal(jd_fair_ready(f), 1);
	assert_ptr_equal(take1(f), &j1);
	complete1(f, &j1, 1);
	free_all(f, &a, 1);
}

/* Hold and release: a held job is skipped (the next goes), stays counted against the
 * client's limit, blocks the client's removal, expires at its deadline, can be
 * cancelled and is drained; a released job goes back to its place in the order. */
static void test_hold_release(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 3, JD_FAIR_REJECT);
	struct tjob j[6];

	for (int i = 0; i < 3; i++)
		assert_int_equal(admit(f, a, &j[i], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(jd_fair_hold(f, &j[0].fj), 0);
	assert_int_equal(jd_fair_hold(f, &j[0].fj), JSCHED_ENO_SUCH_JOB);
	assert_int_equal(jd_fair_release(f, &j[1].fj), JSCHED_ENO_SUCH_JOB);
	assert_int_equal(admit(f, a, &j[3], 0, JD_FAIR_NORMAL, 0, 1), JSCHED_EQUEUE_FULL);
	assert_int_equal(jd_fair_ready(f), 2);
	assert_ptr_equal(take1(f), &j[1]);
	complete1(f, &j[1], 1);
	assert_int_equal(admit(f, a, &j[3], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(jd_fair_release(f, &j[0].fj), 0);
	assert_ptr_equal(take1(f), &j[0]);	/* back at its place: before j[2] */
	assert_ptr_equal(take1(f), &j[2]);
	complete1(f, &j[0], 1);
	complete1(f, &j[2], 1);
	/* j[3] held: removal refused; then a deadline, a cancel, a drain. */
	assert_int_equal(jd_fair_hold(f, &j[3].fj), 0);
	assert_null(take_or_null(f));
	assert_int_equal(jd_fair_client_remove(f, a), JSCHED_EAGAIN);
	admit(f, a, &j[4], 0, JD_FAIR_HIGH, vclock(NULL) + 5, 1);
	assert_int_equal(jd_fair_hold(f, &j[4].fj), 0);
	vclock_advance(10);
	assert_int_equal(jd_fair_expire(f), 1);
	assert_int_equal(atomic_load(&j[4].last), JD_FAIR_EXPIRED);
	admit(f, a, &j[5], 0, JD_FAIR_LOW, 0, 1);
	assert_int_equal(jd_fair_hold(f, &j[5].fj), 0);
	assert_int_equal(jd_fair_cancel(f, &j[5].fj), 0);
	assert_int_equal(atomic_load(&j[5].last), JD_FAIR_CANCELLED);
	struct jd_fair_client_stats cs;
	jd_fair_client_stats(f, a, NULL, &cs);
	assert_int_equal(cs.held, 1);
	assert_int_equal(cs.queued, 0);
	assert_int_equal(jd_fair_drain(f, a), 1);
	assert_int_equal(atomic_load(&j[3].last), JD_FAIR_CANCELLED);
	free_all(f, &a, 1);
}

/* A released job with a deadline goes back in EDF order; release into a queue where it
 * is oldest puts it at the head. */
static void test_release_order_edf(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob j[5];
	uint64_t t0 = vclock(NULL);

	admit(f, a, &j[0], 0, JD_FAIR_NORMAL, t0 + 5000, 1);
	admit(f, a, &j[1], 0, JD_FAIR_NORMAL, t0 + 9000, 1);
	admit(f, a, &j[2], 0, JD_FAIR_NORMAL, 0, 1);
	admit(f, a, &j[3], 0, JD_FAIR_NORMAL, 0, 1);
	admit(f, a, &j[4], 0, JD_FAIR_NORMAL, 0, 1);
	assert_int_equal(jd_fair_hold(f, &j[0].fj), 0);
	assert_int_equal(jd_fair_hold(f, &j[2].fj), 0);
	assert_int_equal(jd_fair_hold(f, &j[3].fj), 0);
	assert_int_equal(jd_fair_release(f, &j[3].fj), 0);
	assert_int_equal(jd_fair_release(f, &j[2].fj), 0);
	assert_int_equal(jd_fair_release(f, &j[0].fj), 0);
	for (int i = 0; i < 5; i++) {
		struct tjob *t = take1(f);
		assert_ptr_equal(t, &j[i]);
		complete1(f, t, 1);
	}
	free_all(f, &a, 1);
}

/* Within one client the order holds across classes: priority, then deadline, then
 * arrival, whatever the class of each job (when all fit). */
static void test_order_across_classes(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 100, 100);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob j[6];
	uint8_t cls[6] = {0, k.P, k.F, k.P, 0, k.F};
	int prio[6] = {JD_FAIR_LOW, JD_FAIR_NORMAL, JD_FAIR_NORMAL, JD_FAIR_HIGH, JD_FAIR_NORMAL,
		       JD_FAIR_NORMAL};
	int want[6] = {3, 5, 1, 2, 4, 0};	/* high; normal: deadline, then arrival; low */

	for (int i = 0; i < 6; i++)
		admit_cls(k.f, a, &j[i], i, cls[i], prio[i], i == 5 ? vclock(NULL) + 100000 : 0);
	for (int i = 0; i < 6; i++) {
		struct tjob *t = take1(k.f);
		assert_int_equal(t->tag, want[i]);
		complete1(k.f, t, 1);
	}
	free_all(k.f, &a, 1);
}

/* Registration: classes are shared by equal needs, bounded, and need registered
 * resources; names are unique and bounded. */
static void test_registration(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	char name[16];

	assert_int_equal(jd_fair_class_add(f, need), 0);	/* needs nothing: class 0 */
	need[0] = 1;
	assert_int_equal(jd_fair_class_add(f, need), JSCHED_EINVAL); /* no resource 0 yet */
	assert_int_equal(jd_fair_resource_add(f, "", 1), JSCHED_EINVAL);
	assert_int_equal(jd_fair_resource_add(f, "a-name-longer-than-thirty-one-bytes", 1),
			 JSCHED_EINVAL);
	for (int r = 0; r < JD_FAIR_MAX_RES; r++) {
		snprintf(name, sizeof(name), "r%d", r);
		assert_int_equal(jd_fair_resource_add(f, name, 2), r);
	}
	assert_int_equal(jd_fair_resource_add(f, "r3", 1), JSCHED_EEXISTS);
	assert_int_equal(jd_fair_resource_add(f, "gpu", 2), JSCHED_ELIMIT_EXCEEDED);
	assert_int_equal(jd_fair_resource_find(f, "r5"), 5);
	assert_int_equal(jd_fair_resource_find(f, "gpu"), JSCHED_ENOT_SUPPORTED);
	assert_string_equal(jd_fair_resource_name(f, 2), "r2");
	assert_null(jd_fair_resource_name(f, JD_FAIR_MAX_RES));
	int c1 = jd_fair_class_add(f, need);
	assert_int_equal(c1, 1);
	assert_int_equal(jd_fair_class_add(f, need), 1);	/* same needs, same class */
	for (int k = 2; k < JD_FAIR_MAX_CLASSES; k++) {
		need[0] = (uint32_t)k;
		assert_int_equal(jd_fair_class_add(f, need), k);
	}
	need[0] = 99;
	assert_int_equal(jd_fair_class_add(f, need), JSCHED_ELIMIT_EXCEEDED);
	/* A job of an unknown class is refused. */
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct tjob t;
	memset(&t, 0, sizeof(t));
	t.fj.cls = JD_FAIR_MAX_CLASSES;
	assert_int_equal(jd_fair_admit(f, a, &t.fj), JSCHED_EINVAL);
	/* A job that needs more than there is waits (and can be cancelled). */
	assert_int_equal(admit_cls(f, a, &t, 0, 3, JD_FAIR_NORMAL, 0), 0);
	assert_null(take_or_null(f));
	assert_int_equal(jd_fair_resource_set(f, 0, 3), 0);
	struct tjob *got = take1(f);
	assert_ptr_equal(got, &t);
	complete1(f, got, 1);
	free_all(f, &a, 1);

	/* The scan baseline knows class 0 only. */
	cfg.scan_select = true;
	f = fair_new_or_die(&cfg);
	assert_int_equal(jd_fair_resource_add(f, "p", 1), 0);
	need[0] = 1;
	assert_int_equal(jd_fair_class_add(f, need), JSCHED_EINVAL);
	jd_fair_free(f);
}

/* Removing a class: refused while a job of it is queued, held or running; after, its
 * number is handed to the next new needs, which then behave as their own (no units of the
 * old needs are taken). */
static void test_class_remove(void **state)
{
	(void)state;
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 4, 8);
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	int gpu = jd_fair_resource_add(k.f, "gpu", 2);
	struct jd_fair_client *a = client_new(k.f, "a", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_stats st;
	struct tjob t, u;

	need[k.proc] = 1;
	need[gpu] = 2;
	int g2 = jd_fair_class_add(k.f, need);
	assert_int_equal(g2, 3);
	assert_int_equal(jd_fair_class_remove(k.f, 0), JSCHED_EINVAL);
	assert_int_equal(jd_fair_class_remove(k.f, JD_FAIR_MAX_CLASSES), JSCHED_EINVAL);
	assert_int_equal(admit_cls(k.f, a, &t, 0, (uint8_t)g2, JD_FAIR_NORMAL, 0), 0);
	assert_int_equal(jd_fair_class_remove(k.f, g2), JSCHED_EAGAIN); /* queued */
	assert_int_equal(jd_fair_hold(k.f, &t.fj), 0);
	assert_int_equal(jd_fair_class_remove(k.f, g2), JSCHED_EAGAIN); /* held */
	assert_int_equal(jd_fair_release(k.f, &t.fj), 0);
	assert_ptr_equal(take1(k.f), &t);
	assert_int_equal(jd_fair_class_remove(k.f, g2), JSCHED_EAGAIN); /* running */
	complete1(k.f, &t, 10);
	assert_int_equal(jd_fair_class_remove(k.f, g2), 0);
	assert_int_equal(jd_fair_class_remove(k.f, g2), JSCHED_EINVAL); /* gone already */
	/* The same needs make a class again: the freed number. */
	need[gpu] = 1;
	int g1 = jd_fair_class_add(k.f, need);
	assert_int_equal(g1, g2);
	assert_int_equal(admit_cls(k.f, a, &t, 0, (uint8_t)g1, JD_FAIR_NORMAL, 0), 0);
	assert_int_equal(admit_cls(k.f, a, &u, 1, (uint8_t)g1, JD_FAIR_NORMAL, 0), 0);
	assert_ptr_equal(take1(k.f), &t);
	assert_ptr_equal(take1(k.f), &u);
	jd_fair_stats(k.f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[gpu], 2); /* 1 each, the new needs */
	assert_int_equal(st.res_used[k.proc], 2);
	complete1(k.f, &t, 10);
	complete1(k.f, &u, 10);
	jd_fair_stats(k.f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[gpu], 0);
	free_all(k.f, &a, 1);
}

/* Many clients, one slot, the `fair` heap: a command waiting for a slot in each of 1,000
 * clients does not slow choosing among the others, and each gets the slot in turn. */
static void test_many_waiting_clients(void **state)
{
	(void)state;
	enum { N = 1000 };
	struct caps k = caps_new(JD_FAIR_POLICY_FAIR, 1, 1u << 20);
	static struct jd_fair_client *c[N + 1];
	static struct tjob cmd[N], call[N];
	static bool seen[N];

	for (int i = 0; i < N; i++) {
		c[i] = client_new(k.f, "c", 1, 0, JD_FAIR_REJECT);
		admit_cls(k.f, c[i], &cmd[i], i, k.P, JD_FAIR_NORMAL, 0);
	}
	c[N] = client_new(k.f, "calls", 1, 0, JD_FAIR_REJECT);
	struct tjob *run = take1(k.f);
	for (int i = 0; i < N; i++)
		admit_cls(k.f, c[N], &call[i], N, 0, JD_FAIR_NORMAL, 0);
	struct jd_fair_job *out[N];
	assert_int_equal(jd_fair_take(k.f, out, N), N);	/* every call, no command */
	for (int i = 0; i < N; i++)
		assert_int_equal(TJOB(out[i])->tag, N);
	jd_fair_complete(k.f, out, N);
	for (int i = 0; i < N; i++) {
		assert_false(seen[run->tag]);
		seen[run->tag] = true;
		complete1(k.f, run, 1000);
		if (i < N - 1)
			run = take1(k.f);
	}
	free_all(k.f, c, N + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_priority_and_calls_pass),
		cmocka_unit_test(test_slot_edf_and_expiry),
		cmocka_unit_test(test_policy_share_fair),
		cmocka_unit_test(test_policy_share_drr),
		cmocka_unit_test(test_policy_share_wrr),
		cmocka_unit_test(test_cancel_drain_switch),
		cmocka_unit_test(test_client_limits),
		cmocka_unit_test(test_capacity_at_run_time),
		cmocka_unit_test(test_pause_fair),
		cmocka_unit_test(test_pause_drr),
		cmocka_unit_test(test_pause_wrr),
		cmocka_unit_test(test_no_credit_from_a_waiting_flow),
		cmocka_unit_test(test_drr_jump_across_classes),
		cmocka_unit_test(test_pause_all),
		cmocka_unit_test(test_hold_release),
		cmocka_unit_test(test_release_order_edf),
		cmocka_unit_test(test_order_across_classes),
		cmocka_unit_test(test_registration),
		cmocka_unit_test(test_class_remove),
		cmocka_unit_test(test_many_waiting_clients),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
