/* tests/fair/test_fair_drf.c: dominant resource fairness and the reservation that keeps a
 * big job from starving, on the virtual clock.
 *
 * - The example of Ghodsi et al. (NSDI 2011): a machine of <9 CPU, 18 GB>, user A's tasks
 *   need <1 CPU, 4 GB>, B's <3 CPU, 1 GB>: DRF gives A 3 tasks and B 2 (both at a
 *   dominant share of 2/3), and keeps that split round after round when every task runs
 *   1 s.
 * - Where DRF differs from charging time: one resource of 10 units, A's tasks take 1, B's 5,
 *   both always backlogged: DRF gives A 5 tasks per B's 1 (equal shares of the resource),
 *   time charging about as many of each (equal machine time): the test checks both.
 * - The factors: a class's charge per ns is its dominant share / drf_base.
 * - Reservation: a job that needs both GPUs, while two clients keep one-GPU jobs coming: with
 *   backfill_max 4 it starts after at most a few of theirs, and plain calls are still
 *   served while the GPUs drain for it; with reservations off it never starts in 200
 *   completions (what the reservation is for).
 * - The run-time estimate a dispatch is charged is per class: a client's short calls do
 *   not make its long commands look short.
 */
#include <stdio.h>
#include <string.h>

#include "tests/fair/fair_test.h"

#define SEC UINT64_C(1000000000)

/* A pool of test jobs, used in order. */
enum { POOL = 4096 };
static struct tjob pool[POOL];
static size_t pool_next;

static struct tjob *fresh(void)
{
	assert_true(pool_next < POOL);
	return &pool[pool_next++];
}

static void queue(struct jd_fair *f, struct jd_fair_client *c, int client, uint8_t cls, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(admit_in(f, c, fresh(), client, i, cls, JD_FAIR_NORMAL, 0, 0), 0);
}

/* fill: take until nothing more fits; counts per client into got[], jobs into run[]. */
static size_t fill(struct jd_fair *f, int got[], struct tjob **run, size_t nrun)
{
	struct jd_fair_job *out[8];
	size_t n;

	while ((n = jd_fair_take(f, out, 8)) > 0)
		for (size_t i = 0; i < n; i++) {
			got[TJOB(out[i])->client]++;
			run[nrun++] = TJOB(out[i]);
		}
	return nrun;
}

static void complete_all(struct jd_fair *f, struct tjob **run, size_t n, uint64_t run_ns)
{
	for (size_t i = 0; i < n; i++)
		complete1(f, run[i], run_ns);
}

static struct jd_fair *drf_new(double base, uint32_t backfill_max)
{
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);

	cfg.drf_base = base;
	cfg.backfill_max = backfill_max;
	pool_next = 0;
	return fair_new_or_die(&cfg);
}

/* clients_new: n clients named A, B, ... (at most 4), weight 1, into c[]. */
static void clients_new(struct jd_fair *f, struct jd_fair_client **c, int n)
{
	static const char *const names[] = {"A", "B", "C", "D"};

	assert_true(n <= 4);
	for (int i = 0; i < n; i++)
		c[i] = client_new(f, names[i], 1, 0, JD_FAIR_REJECT);
}

/* finish: drain and remove the n clients c[], then free f. */
static void finish(struct jd_fair *f, struct jd_fair_client **c, int n)
{
	for (int i = 0; i < n; i++) {
		jd_fair_drain(f, c[i]);
		assert_int_equal(jd_fair_client_remove(f, c[i]), 0);
	}
	jd_fair_free(f);
}

/* rounds: n rounds of 1 s for clients 0 and 1: take all that fits (then nothing is said
 * to be ready: no taker is woken for nothing), count each client's into total[], call
 * check(f, got) if not NULL, and complete every job after 1 s (then no unit is held). */
static void rounds(struct jd_fair *f, int n, int total[2], void (*check)(struct jd_fair *f, const int got[2]))
{
	struct jd_fair_stats st;
	struct tjob *run[64];

	for (int round = 0; round < n; round++) {
		int got[2] = {0, 0};
		size_t k = fill(f, got, run, 0);

		assert_int_equal(jd_fair_ready(f), 0);
		if (check)
			check(f, got);
		total[0] += got[0];
		total[1] += got[1];
		vclock_advance(SEC);
		complete_all(f, run, k, SEC);
		jd_fair_stats(f, JD_FAIR_METRIC_TIME, &st);
		for (int r = 0; r < JD_FAIR_MAX_RES; r++)
			assert_int_equal(st.res_used[r], 0);
	}
}

/* nothing_fits: a take finds nothing to dispatch. */
static void nothing_fits(struct jd_fair *f)
{
	struct jd_fair_job *out[4];

	assert_int_equal(jd_fair_take(f, out, 4), 0);
}

/* paper_round: the allocation of DRF's example every round: A 3 tasks, B 2, holding
 * <9 CPU, 14 GB> (cpu and mem are resources 0 and 1). */
static void paper_round(struct jd_fair *f, const int got[2])
{
	struct jd_fair_stats st;

	assert_int_equal(got[0], 3);
	assert_int_equal(got[1], 2);
	jd_fair_stats(f, JD_FAIR_METRIC_TIME, &st);
	assert_int_equal(st.res_used[0], 9);
	assert_int_equal(st.res_used[1], 14);
}

static uint8_t class_of(struct jd_fair *f, int r0, uint32_t n0, int r1, uint32_t n1)
{
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	int k;

	need[r0] = n0;
	if (r1 >= 0)
		need[r1] = n1;
	k = jd_fair_class_add(f, need);
	assert_true(k > 0);
	return (uint8_t)k;
}

static void test_paper_example(void **state)
{
	(void)state;
	struct jd_fair *f = drf_new(1.0 / 18, UINT32_MAX);
	int cpu = jd_fair_resource_add(f, "cpu", 9), mem = jd_fair_resource_add(f, "mem", 18);
	struct jd_fair_client *c[2];
	struct jd_fair_stats st;
	int total[2] = {0, 0};

	clients_new(f, c, 2);
	assert_int_equal(cpu, 0);
	assert_int_equal(mem, 1);
	assert_int_equal(jd_fair_resource_share(f, cpu, true), 0);
	assert_int_equal(jd_fair_resource_share(f, mem, true), 0);
	assert_int_equal(jd_fair_resource_share(f, 7, true), JSCHED_EINVAL);
	uint8_t ka = class_of(f, cpu, 1, mem, 4), kb = class_of(f, cpu, 3, mem, 1);
	/* Dominant shares 4/18 and 3/9, over the base 1/18. */
	jd_fair_stats(f, JD_FAIR_METRIC_TIME, &st);
	assert_true(st.cls_factor[ka] > 3.999 && st.cls_factor[ka] < 4.001);
	assert_true(st.cls_factor[kb] > 5.999 && st.cls_factor[kb] < 6.001);
	assert_true(st.cls_factor[0] == 1);
	queue(f, c[0], 0, ka, 120);
	queue(f, c[1], 1, kb, 120);
	/* The DRF allocation, every round: <3 CPU, 12 GB> and <6 CPU, 2 GB>. */
	rounds(f, 30, total, paper_round);
	assert_int_equal(total[0], 90);
	assert_int_equal(total[1], 60);
	for (int i = 0; i < 2; i++)
		assert_int_equal(jd_fair_drain(f, c[i]), 120 - (size_t)total[i]);
	finish(f, c, 2);
}

/* queue_amounts: n jobs of class cls that each hold <a0, a1> of the class's per-job
 * resources. */
static void queue_amounts(struct jd_fair *f, struct jd_fair_client *c, int client, uint8_t cls,
			  int n, uint32_t a0, uint32_t a1)
{
	for (int i = 0; i < n; i++) {
		struct tjob *t = fresh();

		memset(t, 0, sizeof(*t));
		t->client = client;
		t->tag = i;
		t->fj.prio = JD_FAIR_NORMAL;
		t->fj.cls = cls;
		t->fj.amount[0] = a0;
		t->fj.amount[1] = a1;
		assert_int_equal(jd_fair_admit(f, c, &t->fj), 0);
	}
}

/* per_job_class: the class whose jobs each hold their own amounts of r0 and r1 (and
 * `fixed` units of rf if rf >= 0). */
static uint8_t per_job_class(struct jd_fair *f, int r0, int r1, int rf, uint32_t fixed)
{
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	int k;

	need[r0] = JD_FAIR_PER_JOB;
	if (r1 >= 0)
		need[r1] = JD_FAIR_PER_JOB;
	if (rf >= 0)
		need[rf] = fixed;
	k = jd_fair_class_add(f, need);
	assert_true(k > 0);
	return (uint8_t)k;
}

/* The paper's example again, with the two users' tasks in ONE class whose jobs carry
 * their own CPU and memory (what the daemon does with --cpus and --mem): the same 3 and 2
 * tasks every round, holding <9, 14>. */
static void test_paper_example_per_job(void **state)
{
	(void)state;
	struct jd_fair *f = drf_new(1.0 / 18, UINT32_MAX);
	int cpu = jd_fair_resource_add(f, "cpu", 9), mem = jd_fair_resource_add(f, "mem", 18);
	struct jd_fair_client *c[2];
	int total[2] = {0, 0};

	clients_new(f, c, 2);
	jd_fair_resource_share(f, cpu, true);
	jd_fair_resource_share(f, mem, true);
	uint8_t k = per_job_class(f, cpu, mem, -1, 0);
	/* Same needs, same class; a fixed need of the same resources is another class. */
	assert_int_equal(per_job_class(f, cpu, mem, -1, 0), k);
	assert_int_not_equal(class_of(f, cpu, 1, mem, 4), k);
	queue_amounts(f, c[0], 0, k, 120, 1, 4);
	queue_amounts(f, c[1], 1, k, 120, 3, 1);
	rounds(f, 30, total, paper_round);
	assert_int_equal(total[0], 90);
	assert_int_equal(total[1], 60);
	finish(f, c, 2);
}

/* Per-job amounts: 0 holds nothing; a class has at most JD_FAIR_AMOUNTS per-job
 * resources; the head of the class's order is not passed by a smaller job of the same
 * class, while other classes go on; lowering the capacity below what is held recalls
 * nothing. */
static void test_per_job_amounts(void **state)
{
	(void)state;
	struct jd_fair *f = drf_new(0, UINT32_MAX);
	int cpu = jd_fair_resource_add(f, "cpu", 4), mem = jd_fair_resource_add(f, "mem", 10);
	int x = jd_fair_resource_add(f, "x", 1);
	struct jd_fair_client *a = client_new(f, "A", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *b = client_new(f, "B", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *d = client_new(f, "D", 1, 0, JD_FAIR_REJECT);
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	struct jd_fair_stats st;
	struct tjob *t, *held, *big;

	need[cpu] = need[mem] = need[x] = JD_FAIR_PER_JOB;
	assert_int_equal(jd_fair_class_add(f, need), JSCHED_EINVAL);
	uint8_t k = per_job_class(f, cpu, mem, -1, 0);
	/* Amount 0 of memory: only CPUs held. */
	queue_amounts(f, b, 1, k, 1, 2, 0);
	held = take1(f);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[cpu], 2);
	assert_int_equal(st.res_used[mem], 0);
	/* A's job wants all 4 CPUs; B's want 1 each and would fit.  A is ahead (B has been
	 * served): its job holds the class, B's do not go past it; D's plain calls go on. */
	big = fresh();
	memset(big, 0, sizeof(*big));
	big->fj.prio = JD_FAIR_NORMAL;
	big->fj.cls = k;
	big->fj.amount[0] = 4;
	assert_int_equal(jd_fair_admit(f, a, &big->fj), 0);
	queue_amounts(f, b, 1, k, 3, 1, 1);
	queue(f, d, 2, 0, 2);
	assert_int_equal(jd_fair_ready(f), 2);	/* D's two: class k's head does not fit */
	t = take1(f);
	assert_int_equal(t->client, 2);
	complete1(f, t, 1000);
	t = take1(f);
	assert_int_equal(t->client, 2);
	complete1(f, t, 1000);
	nothing_fits(f);
	/* B's running job ends: A's goes, then (all 4 CPUs held) nothing. */
	complete1(f, held, 1000);
	t = take1(f);
	assert_ptr_equal(t, big);
	nothing_fits(f);
	/* Lowered below what is held: nothing recalled, nothing more dispatched. */
	jd_fair_resource_set(f, cpu, 2);
	complete1(f, big, 1000);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[cpu], 0);
	/* Now 2 CPUs: B's three 1-CPU, 1-unit jobs go two at a time. */
	struct tjob *r1 = take1(f), *r2 = take1(f);
	nothing_fits(f);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[cpu], 2);
	assert_int_equal(st.res_used[mem], 2);
	complete1(f, r1, 1000);
	complete1(f, r2, 1000);
	complete1(f, take1(f), 1000);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.res_used[cpu], 0);
	assert_int_equal(st.res_used[mem], 0);
	assert_int_equal(jd_fair_client_remove(f, a), 0);
	assert_int_equal(jd_fair_client_remove(f, b), 0);
	assert_int_equal(jd_fair_client_remove(f, d), 0);
	jd_fair_free(f);
}

/* DRF with per-job amounts: a job's charge is its own dominant share.  One class, CPU 10:
 * A's jobs take 1 CPU, B's 5; DRF gives A 5 jobs per B's 1, as with two fixed classes. */
static void test_per_job_drf_factor(void **state)
{
	(void)state;
	struct jd_fair *f = drf_new(1.0 / 10, UINT32_MAX);
	int cpu = jd_fair_resource_add(f, "cpu", 10), mem = jd_fair_resource_add(f, "mem", 10);
	struct jd_fair_client *c[2];
	int total[2] = {0, 0};

	clients_new(f, c, 2);
	jd_fair_resource_share(f, cpu, true);
	jd_fair_resource_share(f, mem, true);
	uint8_t k = per_job_class(f, cpu, mem, -1, 0);
	queue_amounts(f, c[0], 0, k, 400, 1, 0);
	queue_amounts(f, c[1], 1, k, 400, 5, 0);
	rounds(f, 20, total, NULL);
	if (total[0] != 5 * total[1] || total[1] != 20)
		fail_msg("A %d tasks, B %d (DRF: 100 and 20)", total[0], total[1]);
	finish(f, c, 2);
}

/* One resource of 10; A's tasks take 1, B's 5; 20 rounds of 1 s.  Returns A's tasks / B's. */
static double share_run(double base, int *ta, int *tb)
{
	struct jd_fair *f = drf_new(base, UINT32_MAX);
	int slot = jd_fair_resource_add(f, "slot", 10);
	struct jd_fair_client *c[2];
	int total[2] = {0, 0};

	clients_new(f, c, 2);
	assert_int_equal(jd_fair_resource_share(f, slot, true), 0);
	uint8_t ka = class_of(f, slot, 1, -1, 0), kb = class_of(f, slot, 5, -1, 0);
	queue(f, c[0], 0, ka, 400);
	queue(f, c[1], 1, kb, 400);
	rounds(f, 20, total, NULL);
	finish(f, c, 2);
	*ta = total[0];
	*tb = total[1];
	return (double)total[0] / total[1];
}

static void test_drf_against_time(void **state)
{
	int a, b;

	(void)state;
	/* DRF: 5 of A's per B's, every round (A holds 5 units, B 5). */
	assert_true(share_run(1.0 / 10, &a, &b) == 5.0);
	assert_int_equal(b, 20);
	/* Time charging, same load: equal machine time, so about as many of each. */
	double r = share_run(0, &a, &b);
	if (!(r < 2.0))
		fail_msg("time charging gave A %d tasks and B %d (ratio %.2f)", a, b, r);
}

/* The big job: A needs both GPUs; B and C keep one-GPU jobs queued and running.  Each step
 * one running job ends (1 ms) and the free units are taken.  Returns the step at which
 * A's job started (-1: not in `steps`), with B and C's dispatches after A's admission in
 * *passed and D's plain calls taken while A held the reservation in *calls. */
static int big_job(uint32_t backfill_max, int steps, int *passed, int *calls)
{
	struct jd_fair *f = drf_new(0, backfill_max);
	int gpu = jd_fair_resource_add(f, "gpu", 2);
	struct jd_fair_client *c[4];
	uint8_t g1 = class_of(f, gpu, 1, -1, 0), g2 = class_of(f, gpu, 2, -1, 0);
	struct tjob *run[8], *big = NULL;
	size_t nrun = 0;
	int started = -1;
	struct jd_fair_stats st;

	*passed = *calls = 0;
	clients_new(f, c, 4);
	queue(f, c[1], 1, g1, 2);
	queue(f, c[2], 2, g1, 2);
	{
		int got[4] = {0};
		nrun = fill(f, got, run, 0);
		assert_int_equal(nrun, 2);
	}
	big = fresh();
	assert_int_equal(admit_in(f, c[0], big, 0, 0, g2, JD_FAIR_NORMAL, 0, 0), 0);
	for (int step = 0; step < steps && started < 0; step++) {
		struct jd_fair_job *out[8];
		size_t n;

		queue(f, c[1], 1, g1, 1);
		queue(f, c[2], 2, g1, 1);
		queue(f, c[3], 3, 0, 1);
		vclock_advance(1000000);
		if (nrun > 0) {
			complete1(f, run[0], 1000000);
			memmove(run, run + 1, --nrun * sizeof(run[0]));
		}
		jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
		bool reserved = st.reserved == g2;
		while ((n = jd_fair_take(f, out, 8)) > 0) {
			for (size_t i = 0; i < n; i++) {
				struct tjob *t = TJOB(out[i]);

				if (t->client == 3) {
					*calls += reserved;
					complete1(f, t, 1000);
					continue;
				}
				if (t == big)
					started = step;
				else
					(*passed)++;
				assert_true(nrun < 8);
				run[nrun++] = t;
			}
		}
		/* Never more than the two GPUs out. */
		jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
		assert_true(st.res_used[gpu] <= 2);
	}
	complete_all(f, run, nrun, 1000);
	finish(f, c, 4);
	return started;
}

static void test_big_job_not_starved(void **state)
{
	int passed, calls;

	(void)state;
	/* Reservations off: every freed GPU goes to a small job at once. */
	assert_int_equal(big_job(UINT32_MAX, 200, &passed, &calls), -1);
	assert_true(passed >= 200);
	/* backfill_max 4: at most 4 passes counted (plus the one or two dispatched before A's
	 * client was ahead of theirs), then the GPUs drain for it. */
	int at = big_job(4, 200, &passed, &calls);
	if (at < 0)
		fail_msg("the big job never started (%d small jobs went past it)", passed);
	assert_true(passed <= 4 + 2);
	/* The GPUs drained for it while plain calls went on. */
	assert_true(calls > 0);
}

/* test_estimate_per_class: a dispatch is charged the estimate of the client's jobs of the
 * job's class, not of all its jobs: A's many 10 us calls do not make its 1 s commands
 * look short.  With one estimate per client, A's commands were charged about 5 ms each,
 * and A took three of the four slots. */
static void test_estimate_per_class(void **state)
{
	(void)state;
	struct jd_fair *f = drf_new(0, UINT32_MAX);
	int slot = jd_fair_resource_add(f, "slot", 4);
	struct jd_fair_client *c[2];
	uint8_t k;
	struct jd_fair_job *out[8];
	struct tjob *run[64];
	int got[2] = {0, 0};
	size_t n;

	clients_new(f, c, 2);
	k = class_of(f, slot, 1, -1, 0);
	/* Both learn that their commands take 1 s. */
	queue(f, c[0], 0, k, 2);
	queue(f, c[1], 1, k, 2);
	n = fill(f, got, run, 0);
	assert_int_equal(n, 4);
	vclock_advance(SEC);
	complete_all(f, run, n, SEC);
	/* A alone runs 40 calls of 10 us, one at a time. */
	queue(f, c[0], 0, 0, 40);
	for (int i = 0; i < 40; i++) {
		assert_int_equal(jd_fair_take(f, out, 1), 1);
		vclock_advance(10000);
		complete1(f, TJOB(out[0]), 10000);
	}
	/* Then both queue commands: the four slots go two and two. */
	queue(f, c[0], 0, k, 8);
	queue(f, c[1], 1, k, 8);
	got[0] = got[1] = 0;
	n = fill(f, got, run, 0);
	assert_int_equal(n, 4);
	if (got[0] != 2 || got[1] != 2)
		fail_msg("the four slots went %d to A and %d to B", got[0], got[1]);
	vclock_advance(SEC);
	complete_all(f, run, n, SEC);
	for (int i = 0; i < 2; i++)
		assert_int_equal(jd_fair_drain(f, c[i]), 6);
	finish(f, c, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paper_example),
		cmocka_unit_test(test_drf_against_time),
		cmocka_unit_test(test_big_job_not_starved),
		cmocka_unit_test(test_paper_example_per_job),
		cmocka_unit_test(test_per_job_amounts),
		cmocka_unit_test(test_per_job_drf_factor),
		cmocka_unit_test(test_estimate_per_class),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
