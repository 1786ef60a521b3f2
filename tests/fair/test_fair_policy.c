/* tests/fair/test_fair_policy.c: the policies, measured on a virtual clock.
 *
 * Each test keeps some clients backlogged (a dispatched job is completed after its run
 * time on the virtual clock and admitted again to the same client) and counts the
 * service each receives: weighted shares for every policy (and the scan baseline),
 * machine-time shares under `fair` when one client's jobs run 10x longer, drr with
 * unequal declared costs, no burst from a new or returning client, a weight change and
 * policy switches mid-stream, and the sliding-window figures.
 */
#include <math.h>

#include "tests/fair/fair_test.h"

#define MAXC 4
#define DEPTH 8

static const enum jd_fair_policy policies[3] = {JD_FAIR_POLICY_FAIR, JD_FAIR_POLICY_DRR,
						JD_FAIR_POLICY_WRR};

/* A small world of backlogged clients. */
struct sim {
	struct jd_fair *f;
	struct jd_fair_client *c[MAXC];
	int nc;
	uint64_t run_ns[MAXC];		/* each job's run time, per client */
	uint32_t cost[MAXC];		/* each job's declared cost, per client */
	bool active[MAXC];		/* re-admit its jobs after they complete */
	struct tjob pool[MAXC][DEPTH];
	uint64_t jobs[MAXC], costs[MAXC], ns[MAXC];	/* service counted by the test */
	int last;			/* client of the latest dispatch */
};

static struct sim S;

static void sim_start(struct jd_fair_config *cfg)
{
	memset(&S, 0, sizeof(S));
	S.f = fair_new_or_die(cfg);
}

static void sim_client(const char *name, uint32_t weight, uint64_t run_ns, uint32_t cost,
		       bool active)
{
	int i = S.nc++;

	S.c[i] = client_new(S.f, name, weight, 0, JD_FAIR_REJECT);
	S.run_ns[i] = run_ns;
	S.cost[i] = cost;
	S.active[i] = false;
	if (active) {
		S.active[i] = true;
		for (int k = 0; k < DEPTH; k++)
			assert_int_equal(admit(S.f, S.c[i], &S.pool[i][k], i, JD_FAIR_NORMAL, 0,
					       cost), 0);
	}
}

/* Start (or restart) feeding client i. */
static void sim_activate(int i)
{
	S.active[i] = true;
	for (int k = 0; k < DEPTH; k++) {
		if (S.pool[i][k].fj.state != 5 /* queued */)
			assert_int_equal(admit(S.f, S.c[i], &S.pool[i][k], i, JD_FAIR_NORMAL, 0,
					       S.cost[i]), 0);
	}
}

/* Stop feeding client i and cancel what it has queued. */
static void sim_deactivate(int i)
{
	S.active[i] = false;
	jd_fair_drain(S.f, S.c[i]);
}

static void sim_reset_counts(void)
{
	memset(S.jobs, 0, sizeof(S.jobs));
	memset(S.costs, 0, sizeof(S.costs));
	memset(S.ns, 0, sizeof(S.ns));
}

/* One worker, serial: take, run (advance the clock), complete, re-admit. */
static void sim_step(void)
{
	struct tjob *t = take1(S.f);
	int i = t->client;

	vclock_advance(S.run_ns[i]);
	complete1(S.f, t, S.run_ns[i]);
	S.jobs[i]++;
	S.costs[i] += S.cost[i];
	S.ns[i] += S.run_ns[i];
	S.last = i;
	if (S.active[i])
		assert_int_equal(jd_fair_admit(S.f, S.c[i], &t->fj), 0);
}

static void sim_run(int steps)
{
	for (int s = 0; s < steps; s++)
		sim_step();
}

static double share(const uint64_t *v, int i)
{
	uint64_t tot = 0;

	for (int k = 0; k < S.nc; k++)
		tot += v[k];
	return tot != 0 ? (double)v[i] / (double)tot : 0;
}

static void assert_near(double got, double want, double tol, const char *what)
{
	if (fabs(got - want) > tol)
		fail_msg("%s: got %.5f, want %.5f +- %.5f", what, got, want, tol);
}

/* ---- weighted shares ---------------------------------------------------------------- */

static void shares_1_2_3(enum jd_fair_policy policy, bool scan)
{
	struct jd_fair_config cfg = test_config(policy);
	cfg.scan_select = scan;
	sim_start(&cfg);
	sim_client("w1", 1, 1000, 1, true);
	sim_client("w2", 2, 1000, 1, true);
	sim_client("w3", 3, 1000, 1, true);
	sim_run(60000);

	struct jd_fair_stats st;
	jd_fair_stats(S.f, JD_FAIR_METRIC_POLICY, &st);
	assert_true(st.jain > 0.99);
	assert_int_equal(st.window_clients, 3);
	for (int i = 0; i < 3; i++) {
		double want = (i + 1) / 6.0;
		const uint64_t *v = policy == JD_FAIR_POLICY_FAIR ? S.ns :
				    policy == JD_FAIR_POLICY_DRR ? S.costs : S.jobs;
		/* Within 1% of the configured share, by the test's own count ... */
		assert_near(share(v, i), want, 0.01 * want, jd_fair_policy_name(policy));
		/* ... and by the instance's figures. */
		struct jd_fair_client_stats cs;
		jd_fair_client_stats(S.f, S.c[i], &st, &cs);
		assert_near(cs.realized_share, want, 0.01 * want, "realized share");
		assert_near(cs.configured_share, want, 1e-9, "configured share");
		assert_int_equal(cs.counters.dispatched, S.jobs[i]);
	}
	jd_fair_free(S.f);
}

static void test_shares_fair(void **state)
{
	(void)state;
	shares_1_2_3(JD_FAIR_POLICY_FAIR, false);
}

static void test_shares_drr(void **state)
{
	(void)state;
	shares_1_2_3(JD_FAIR_POLICY_DRR, false);
}

static void test_shares_wrr(void **state)
{
	(void)state;
	shares_1_2_3(JD_FAIR_POLICY_WRR, false);
}

/* The benchmark's baseline must be the same policy, only slower to choose. */
static void test_shares_scan_baseline(void **state)
{
	(void)state;
	for (int p = 0; p < 3; p++)
		shares_1_2_3(policies[p], true);
}

/* ---- fair: machine time, not job counts --------------------------------------------- */

static void test_fair_unequal_run_times(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	sim_start(&cfg);
	sim_client("long", 1, 10000, 1, true);
	sim_client("short", 1, 1000, 1, true);
	sim_run(60000);
	assert_near(share(S.ns, 0), 0.5, 0.01, "machine time of the long-job client");
	assert_near((double)S.jobs[1] / (double)S.jobs[0], 10, 0.2, "job ratio");
	struct jd_fair_stats st;
	jd_fair_stats(S.f, JD_FAIR_METRIC_TIME, &st);
	assert_true(st.jain > 0.99);
	/* In jobs it is as unfair as it should be: 10:1, Jain = 11^2 / (2 * 101). */
	jd_fair_stats(S.f, JD_FAIR_METRIC_JOBS, &st);
	assert_near(st.jain, 121.0 / 202.0, 0.01, "jain over jobs");

	/* wrr on the same load gives equal job counts: 10/11 of the machine to "long". */
	jd_fair_set_policy(S.f, JD_FAIR_POLICY_WRR);
	sim_reset_counts();
	sim_run(20000);
	assert_near(share(S.ns, 0), 10.0 / 11, 0.01, "wrr machine time");
	jd_fair_free(S.f);
}

/* Two workers on the virtual clock: the charge at dispatch is an estimate, corrected at
 * completion; the split must hold with jobs overlapping too. */
static void test_fair_two_workers(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.max_inflight = 2;
	sim_start(&cfg);
	sim_client("long", 1, 10000, 1, true);
	sim_client("short", 1, 1000, 1, true);

	struct tjob *run[2] = {NULL, NULL};
	uint64_t end[2] = {0, 0};
	for (int step = 0; step < 60000; step++) {
		for (int w = 0; w < 2; w++) {
			if (run[w] == NULL) {
				run[w] = take1(S.f);
				end[w] = vclock(NULL) + S.run_ns[run[w]->client];
			}
		}
		int w = end[0] <= end[1] ? 0 : 1;
		struct tjob *t = run[w];
		int i = t->client;
		vclock_set(end[w]);
		complete1(S.f, t, S.run_ns[i]);
		S.ns[i] += S.run_ns[i];
		run[w] = NULL;
		assert_int_equal(jd_fair_admit(S.f, S.c[i], &t->fj), 0);
	}
	assert_near(share(S.ns, 0), 0.5, 0.01, "machine time, two workers");
	jd_fair_free(S.f);
}

/* ---- drr: declared costs ------------------------------------------------------------ */

static void test_drr_unequal_costs(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	sim_start(&cfg);
	sim_client("cheap", 1, 1000, 1, true);
	sim_client("dear", 1, 1000, 4, true);
	sim_run(50000);
	assert_near(share(S.costs, 0), 0.5, 0.005, "equal weights: cost split");
	assert_near((double)S.jobs[0] / (double)S.jobs[1], 4, 0.05, "job ratio");
	jd_fair_free(S.f);

	/* Weights 1:2 with costs 3 and 1, and a fixed quantum smaller than the largest
	 * cost (a visit may then send nothing): cost split 1/3 : 2/3. */
	cfg.drr_quantum = 2;
	sim_start(&cfg);
	sim_client("w1c3", 1, 1000, 3, true);
	sim_client("w2c1", 2, 1000, 1, true);
	sim_run(60000);
	assert_near(share(S.costs, 0), 1.0 / 3, 0.01 / 3, "weights 1:2, costs 3:1");
	struct jd_fair_stats st;
	jd_fair_stats(S.f, JD_FAIR_METRIC_COST, &st);
	assert_true(st.jain > 0.99);
	jd_fair_free(S.f);
}

/* drr with a quantum far below every cost: whole rounds in which nobody can send are
 * skipped at once (each choice stays cheap), and the cost split still holds. */
static void test_drr_small_quantum(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	cfg.drr_quantum = 1;
	sim_start(&cfg);
	sim_client("c1000", 1, 1000, 1000, true);
	sim_client("c2000", 1, 1000, 2000, true);
	sim_client("c3000", 2, 1000, 3000, true);
	sim_run(30000);
	assert_near(share(S.costs, 0), 0.25, 0.0025, "cost 1000, weight 1");
	assert_near(share(S.costs, 1), 0.25, 0.0025, "cost 2000, weight 1");
	assert_near(share(S.costs, 2), 0.50, 0.005, "cost 3000, weight 2");
	jd_fair_free(S.f);
}

/* drr's default quantum follows the largest recent cost: one huge hint makes turns long
 * for a while (a turn's deficit is then huge), then ages out, long turns included. */
static int longest_run(int steps)
{
	int run = 0, longest = 0, prev = -1;

	for (int s = 0; s < steps; s++) {
		sim_step();
		run = S.last == prev ? run + 1 : 1;
		prev = S.last;
		if (run > longest)
			longest = run;
	}
	return longest;
}

static void test_drr_quantum_ages(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	sim_start(&cfg);
	sim_client("a", 1, 1000, 1, true);
	sim_client("b", 1, 1000, 1, true);
	sim_client("huge", 1, 1000, 1, false);
	assert_int_equal(longest_run(1000), 1);
	/* One job with a huge declared cost. */
	assert_int_equal(admit(S.f, S.c[2], &S.pool[2][0], 2, JD_FAIR_NORMAL, 0, 1000000), 0);
	assert_true(longest_run(1000) > 100);		/* one client's long turn */
	sim_run(9000);					/* > 8192 admissions later */
	assert_int_equal(longest_run(1000), 1);
	jd_fair_free(S.f);
}

/* ---- no burst from a newcomer or a returning client ---------------------------------- */

/* Client `i` has just become active among k backlogged equal-weight clients: in every
 * prefix of the next 600 dispatches it gets at most its share plus one round. */
static void assert_no_burst(int i, int k, const char *what)
{
	int got = 0;

	for (int s = 1; s <= 600; s++) {
		sim_step();
		got += S.last == i;
		if (got > s / k + 2)
			fail_msg("%s: %d of the first %d dispatches", what, got, s);
	}
	if (got < 600 / k - 3)
		fail_msg("%s: only %d of 600 dispatches", what, got);
}

static void test_no_burst(void **state)
{
	(void)state;
	for (int p = 0; p < 3; p++) {
		struct jd_fair_config cfg = test_config(policies[p]);
		sim_start(&cfg);
		sim_client("a", 1, 1000, 1, true);
		sim_client("b", 1, 1000, 1, true);
		sim_client("late", 1, 1000, 1, false);
		sim_client("away", 1, 1000, 1, true);
		sim_run(3000);
		sim_deactivate(3);
		sim_run(30000);		/* "away" banks nothing while idle */
		sim_activate(2);
		assert_no_burst(2, 3, jd_fair_policy_name(policies[p]));
		sim_activate(3);
		assert_no_burst(3, 4, jd_fair_policy_name(policies[p]));
		jd_fair_free(S.f);
	}
}

/* ---- run-time changes --------------------------------------------------------------- */

static void test_weight_change_mid_stream(void **state)
{
	(void)state;
	for (int p = 0; p < 3; p++) {
		struct jd_fair_config cfg = test_config(policies[p]);
		sim_start(&cfg);
		sim_client("a", 1, 1000, 1, true);
		sim_client("b", 1, 1000, 1, true);
		sim_run(30000);
		assert_near(share(S.jobs, 0), 0.5, 0.005, "before");
		struct jd_fair_client_config cc = {.weight = 3};
		assert_int_equal(jd_fair_client_set(S.f, S.c[0], &cc), 0);
		sim_reset_counts();
		sim_run(40000);
		assert_near(share(S.jobs, 0), 0.75, 0.0075, jd_fair_policy_name(policies[p]));
		jd_fair_free(S.f);
	}
}

/* Every client's jobs admitted up front (mixed priorities, some deadlines); the policy
 * switches every 500 dispatches.  Every job is dispatched exactly once, each client's
 * jobs come out in its own order (priority, deadline, arrival), and the weighted shares
 * hold in every stretch while all are backlogged. */
#define SW_PER 3000
static struct tjob sw_jobs[3][SW_PER];

static void test_policy_switch_mid_stream(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c[3];
	int64_t last_key[3];

	for (int i = 0; i < 3; i++) {
		c[i] = client_new(f, "c", (uint32_t)(i + 1), 0, JD_FAIR_REJECT);
		last_key[i] = -1;
	}
	/* Priority i % 4; every third job has a deadline (decreasing, far ahead). */
	for (int k = 0; k < SW_PER; k++) {
		for (int i = 0; i < 3; i++) {
			uint64_t dl = k % 3 == 0 ? UINT64_C(1000000000000) - (uint64_t)k : 0;
			assert_int_equal(admit(f, c[i], &sw_jobs[i][k], i, k % 4, dl, 1), 0);
			sw_jobs[i][k].tag = k;
		}
	}
	/* The order each client must serve in, as a sortable key per job. */
	int64_t key_of[3][SW_PER];
	for (int i = 0; i < 3; i++) {
		int rank = 0;
		for (int p = 0; p < 4; p++) {
			for (int k = SW_PER - 1; k >= 0; k--)	/* deadline jobs: later k first */
				if (k % 4 == p && k % 3 == 0)
					key_of[i][k] = rank++;
			for (int k = 0; k < SW_PER; k++)
				if (k % 4 == p && k % 3 != 0)
					key_of[i][k] = rank++;
		}
	}

	int total = 0, sw = 0;
	struct jd_fair_job *out[500];
	for (;;) {
		uint64_t got[3] = {0, 0, 0};
		size_t n = 0;
		while (n < 500) {
			size_t m = jd_fair_take(f, out + n, 500 - n < 7 ? 500 - n : 7);
			if (m == 0)
				break;
			for (size_t j = n; j < n + m; j++) {
				out[j]->run_ns = 1000;
				vclock_advance(1000);
			}
			jd_fair_complete(f, out + n, m);
			n += m;
		}
		if (n == 0)
			break;
		for (size_t j = 0; j < n; j++) {
			struct tjob *t = TJOB(out[j]);
			assert_true(key_of[t->client][t->tag] > last_key[t->client]);
			last_key[t->client] = key_of[t->client][t->tag];
			got[t->client]++;
		}
		total += (int)n;
		if (n == 500 && total <= 3 * SW_PER / 2) {	/* all still backlogged */
			for (int i = 0; i < 3; i++)
				assert_near((double)got[i], 500.0 * (i + 1) / 6, 6, "stretch share");
		}
		sw++;
		assert_int_equal(jd_fair_set_policy(f, policies[sw % 3]), 0);
	}
	assert_int_equal(total, 3 * SW_PER);
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < SW_PER; k++)
			assert_int_equal(atomic_load(&sw_jobs[i][k].finals), 1);
	jd_fair_free(f);
}

/* ---- the sliding window ------------------------------------------------------------- */

static void test_window(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.window_ns = 8000000;	/* 8 ms, in 1 ms slices */
	sim_start(&cfg);
	sim_client("early", 1, 1000, 1, true);
	sim_client("b", 1, 1000, 1, false);
	sim_client("c", 1, 1000, 1, false);
	sim_run(20000);			/* 20 ms of "early" alone */
	sim_deactivate(0);		/* its queue empties now: it leaves in 8 ms */
	sim_activate(1);
	sim_activate(2);
	sim_run(20000);			/* 20 ms of b and c */

	struct jd_fair_stats st;
	struct jd_fair_client_stats cs;
	jd_fair_stats(S.f, JD_FAIR_METRIC_POLICY, &st);
	assert_int_equal(st.metric, JD_FAIR_METRIC_TIME);
	assert_int_equal(st.window_clients, 2);	/* "early" left the window */
	assert_true(st.jain > 0.99);
	/* The window holds between 7/8 and all of 8 ms of service. */
	assert_true(st.window_service >= 7000000 && st.window_service <= 8000000);
	jd_fair_client_stats(S.f, S.c[0], &st, &cs);
	assert_false(cs.in_window);
	assert_true(cs.realized_share == 0);
	assert_int_equal(cs.counters.service_ns, 20000 * 1000);
	jd_fair_client_stats(S.f, S.c[1], &st, &cs);
	assert_near(cs.realized_share, 0.5, 0.01, "b's share");
	assert_near(cs.configured_share, 0.5, 1e-9, "b's configured share");
	jd_fair_free(S.f);
}

/* A client alone on the machine gets everything, fairly: the figures judge each slice
 * among the clients backlogged in it, so the ramp-up does not read as unfairness. */
static void test_window_ramp_up(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.window_ns = 8000000;	/* 8 ms, in 1 ms slices */
	sim_start(&cfg);
	sim_client("first", 1, 1000, 1, true);
	sim_client("later", 1, 1000, 1, false);
	sim_run(5000);			/* 5 ms alone */
	sim_activate(1);
	sim_run(3000);			/* 3 ms shared */

	struct jd_fair_stats st;
	struct jd_fair_client_stats a, b;
	jd_fair_stats(S.f, JD_FAIR_METRIC_POLICY, &st);
	jd_fair_client_stats(S.f, S.c[0], &st, &a);
	jd_fair_client_stats(S.f, S.c[1], &st, &b);
	assert_int_equal(st.window_clients, 2);
	/* One index over the whole window would say (6.5 + 1.5)^2 / (2 (6.5^2 + 1.5^2)):
	 * 0.72. */
	assert_true(st.jain > 0.99);
	assert_true(a.realized_share > 0.7);	/* most of the window, rightly */
	assert_near(a.realized_share, a.configured_share, 0.02, "first: realized vs configured");
	assert_near(b.realized_share, 0.5, 0.02, "later's realized share");
	assert_near(b.configured_share, 0.5, 0.02, "later's configured share");
	/* Without totals: window figures, no shares. */
	jd_fair_client_stats(S.f, S.c[1], NULL, &b);
	assert_true(b.in_window && b.window_service > 0);
	assert_true(b.realized_share == 0 && b.configured_share == 0);
	jd_fair_free(S.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_fair),
		cmocka_unit_test(test_shares_drr),
		cmocka_unit_test(test_shares_wrr),
		cmocka_unit_test(test_shares_scan_baseline),
		cmocka_unit_test(test_fair_unequal_run_times),
		cmocka_unit_test(test_fair_two_workers),
		cmocka_unit_test(test_drr_unequal_costs),
		cmocka_unit_test(test_drr_small_quantum),
		cmocka_unit_test(test_drr_quantum_ages),
		cmocka_unit_test(test_no_burst),
		cmocka_unit_test(test_weight_change_mid_stream),
		cmocka_unit_test(test_policy_switch_mid_stream),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_window_ramp_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
