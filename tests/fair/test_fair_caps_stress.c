/* tests/fair/test_fair_caps_stress.c: threads, with capacities.  Three taker threads take
 * and complete batches of jobs of six classes (a command: a process slot and a fiber;
 * a suspending call: a fiber; a plain call: nothing; commands that also need one or both
 * of two GPUs, under dominant resource fairness with reservations after 3 passes;
 * commands that each hold their own amounts of CPUs and memory, per-job needs) while
 * the "loop" thread admits,
 * cancels, drains, expires, pauses and resumes clients, holds and releases jobs, moves
 * the process capacity between 2 and 3, switches policy, turns DRF off and on, and
 * removes and re-adds the two-GPU class when it is unused, and moves the CPU capacity
 * between 3 and 4.  The takers count what they
 * hold: the units in their hands never exceed the largest capacity, a client with
 * max_running never has more jobs in their hands, and every job that entered ends in
 * exactly one final state.  Meant to run under TSan (make test SAN=thread) too.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "tests/fair/fair_test.h"

#define N_JOBS 60000
#define N_CLIENTS 8
#define N_TAKERS 3
#define PROC_MAX 3	/* the process capacity moves between 2 and this */
#define FIBERS 5
#define GPUS 2
#define CPUS_MAX 4	/* the CPU capacity moves between 3 and this */
#define MEM 8
#define LIMITED 2	/* clients 0 .. LIMITED-1 have max_running = 2 */
#define DEADLINE_S 30

static struct tjob jobs[N_JOBS];
static struct jd_fair *F;
static struct jd_fair_client *C[N_CLIENTS];
static uint8_t CLS_P, CLS_F, CLS_G1, CLS_G2, CLS_V;
static _Atomic bool stop;
static _Atomic uint64_t taken, bad;
static _Atomic int in_proc, in_fiber, in_gpu, in_cpu, in_mem, in_client[N_CLIENTS];



/* Count a job into (d = 1) or out of (d = -1) the takers' hands, checking the bounds. */
static void hands(struct tjob *t, int d)
{
	uint8_t cls = t->fj.cls;

	bool cmd = cls == CLS_P || cls == CLS_G1 || cls == CLS_G2 || cls == CLS_V;
	int cpu = cls == CLS_V ? (int)t->fj.amount[0] : 0, mem = cls == CLS_V ? (int)t->fj.amount[1] : 0;
	int g = cls == CLS_G1 ? 1 : cls == CLS_G2 ? 2 : 0;

	if (cmd && atomic_fetch_add(&in_proc, d) + d > PROC_MAX)
		atomic_fetch_add(&bad, 1);
	if ((cmd || cls == CLS_F) && atomic_fetch_add(&in_fiber, d) + d > FIBERS)
		atomic_fetch_add(&bad, 1);
	if (g && atomic_fetch_add(&in_gpu, d * g) + d * g > GPUS)
		atomic_fetch_add(&bad, 1);
	if (cpu && atomic_fetch_add(&in_cpu, d * cpu) + d * cpu > CPUS_MAX)
		atomic_fetch_add(&bad, 1);
	if (mem && atomic_fetch_add(&in_mem, d * mem) + d * mem > MEM)
		atomic_fetch_add(&bad, 1);
	if (atomic_fetch_add(&in_client[t->client], d) + d > 2 && t->client < LIMITED)
		atomic_fetch_add(&bad, 1);
}

static void *taker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t seed = 0x9e3779b97f4a7c15u * (uint64_t)id + 7;
	struct jd_fair_job *out[8];
	size_t n = 0;

	while (!atomic_load(&stop)) {
		size_t max = 1 + jtc_xorshift(&seed) % 8;
		for (size_t i = 0; i < n; i++)
			hands(TJOB(out[i]), -1);
		if (id % 2 == 1) {
			n = jd_fair_complete_take(F, out, n, out, max, NULL);
		} else {
			jd_fair_complete(F, out, n);
			n = jd_fair_take(F, out, max);
		}
		if (n == 0) {
			sched_yield();
			continue;
		}
		atomic_fetch_add(&taken, n);
		for (size_t i = 0; i < n; i++) {
			struct tjob *t = TJOB(out[i]);
			if (atomic_load(&t->finals) != 1 ||
			    atomic_load(&t->last) != JD_FAIR_DISPATCHED)
				atomic_fetch_add(&bad, 1);
			hands(t, 1);
			out[i]->run_ns = 100 + jtc_xorshift(&seed) % 5000;
		}
	}
	for (size_t i = 0; i < n; i++)
		hands(TJOB(out[i]), -1);
	jd_fair_complete(F, out, n);
	return NULL;
}


static void test_caps_stress(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	static int held[N_JOBS];
	int nheld = 0, next = 0;
	uint64_t entered = 0, holds = 0, releases = 0, pauses = 0;
	bool paused[N_CLIENTS] = {false};

	uint32_t need_g2[JD_FAIR_MAX_RES] = {0};
	uint64_t removed = 0;

	cfg.max_inflight = 12;
	cfg.drf_base = 1.0 / PROC_MAX;
	cfg.backfill_max = 3;
	F = fair_new_or_die(&cfg);
	int proc = jd_fair_resource_add(F, "process", PROC_MAX);
	int fiber = jd_fair_resource_add(F, "fiber", FIBERS);
	int gpu = jd_fair_resource_add(F, "gpu", GPUS);
	int cpus = jd_fair_resource_add(F, "cpus", CPUS_MAX);
	int mem = jd_fair_resource_add(F, "memory", MEM);
	assert_int_equal(jd_fair_resource_share(F, cpus, true), 0);
	assert_int_equal(jd_fair_resource_share(F, mem, true), 0);
	assert_int_equal(jd_fair_resource_share(F, gpu, true), 0);
	assert_int_equal(jd_fair_resource_share(F, proc, true), 0);
	need[proc] = 1;
	need[fiber] = 1;
	CLS_P = (uint8_t)jd_fair_class_add(F, need);
	need[gpu] = 1;
	CLS_G1 = (uint8_t)jd_fair_class_add(F, need);
	need[gpu] = 2;
	memcpy(need_g2, need, sizeof(need));
	CLS_G2 = (uint8_t)jd_fair_class_add(F, need);
	need[gpu] = 0;
	need[cpus] = need[mem] = JD_FAIR_PER_JOB;
	CLS_V = (uint8_t)jd_fair_class_add(F, need);
	need[cpus] = need[mem] = 0;
	need[proc] = 0;
	CLS_F = (uint8_t)jd_fair_class_add(F, need);
	for (int i = 0; i < N_CLIENTS; i++) {
		struct jd_fair_client_config cc = {.weight = 1 + (uint32_t)(i % 3)};
		if (i < LIMITED)
			cc.max_running = 2;
		if (i % 3 == 2)
			cc.max_res[proc] = 1;
		assert_int_equal(jd_fair_client_add(F, "c", &cc, NULL, &C[i]), 0);
	}

	pthread_t th[N_TAKERS];
	for (uintptr_t i = 0; i < N_TAKERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, taker, (void *)i), 0);

	uint64_t seed = 4242, start = wall_s();
	while (next < N_JOBS) {
		assert_true(wall_s() - start < DEADLINE_S);
		vclock_advance(100);
		uint64_t r = jtc_xorshift(&seed);
		int ci = (int)(r % N_CLIENTS);
		static const uint8_t *const pick[6] = {NULL, &CLS_P, &CLS_F, &CLS_G1, &CLS_G2, &CLS_V};
		unsigned pk = (unsigned)((r >> 8) % 6);
		uint8_t cls = pk == 0 ? 0 : *pick[pk];
		struct tjob *t = &jobs[next];

		memset(t, 0, sizeof(*t));
		t->client = ci;
		t->fj.prio = (uint8_t)((r >> 4) % 4);
		t->fj.deadline_ns = r % 5 == 0 ? vclock(NULL) + (r >> 12) % 100000 : 0;
		t->fj.cls = cls;
		if (cls == CLS_V) {	/* 0 to 3 CPUs, 0 to 8 units of memory */
			t->fj.amount[0] = (uint32_t)((r >> 52) % 4);
			t->fj.amount[1] = (uint32_t)((r >> 56) % (MEM + 1));
		}
		assert_int_equal(jd_fair_admit(F, C[ci], &t->fj), 0);
		entered++;
		next++;
		if (r % 7 == 1) {	/* hold a recent job (maybe running or gone) */
			int k = next - 1 - (int)((r >> 20) % (uint64_t)(next < 64 ? next : 64));
			if (jd_fair_hold(F, &jobs[k].fj) == 0) {
				held[nheld++] = k;
				holds++;
			}
		}
		if (r % 5 == 2 && nheld > 0) {	/* release one (maybe expired or cancelled) */
			int k = (int)((r >> 24) % (uint64_t)nheld);
			releases += jd_fair_release(F, &jobs[held[k]].fj) == 0;
			held[k] = held[--nheld];
		}
		if (r % 97 == 3) {
			int k = (int)((r >> 28) % N_CLIENTS);
			paused[k] = !paused[k];
			pauses += paused[k];
			assert_int_equal(jd_fair_pause(F, C[k], paused[k]), 0);
		}
		if (r % 40 == 4)
			(void)jd_fair_cancel(F, &jobs[next - 1 - (int)((r >> 32) % (uint64_t)(next < 200 ? next : 200))].fj);
		if (r % 3000 == 5)
			jd_fair_drain(F, C[(r >> 36) % N_CLIENTS]);
		if (r % 64 == 6)
			jd_fair_expire(F);
		if (r % 500 == 7)
			assert_int_equal(jd_fair_resource_set(F, proc, 2 + (uint32_t)((r >> 40) % 2)), 0);
		if (r % 700 == 12)
			assert_int_equal(jd_fair_resource_set(F, cpus, 3 + (uint32_t)((r >> 42) % 2)), 0);
		if (r % 2000 == 8)
			jd_fair_set_policy(F, (enum jd_fair_policy)((r >> 44) % 3));
		if (r % 5000 == 9)
			jd_fair_pause(F, NULL, (r >> 48) % 2 == 0);
		if (r % 3000 == 10)
			jd_fair_set_drf(F, (r >> 50) % 2 == 0 ? 1.0 / PROC_MAX : 0);
		if (r % 300 == 11 && jd_fair_class_remove(F, CLS_G2) == 0) {
			/* Unused now: gone and back under the same number (only this thread
			 * admits, so no job of the old number is in flight). */
			removed++;
			assert_int_equal(jd_fair_class_add(F, need_g2), CLS_G2);
		}
		if (entered - hooks_total() > 4000)	/* let the takers catch up */
			sched_yield();
	}
	/* Release, resume, and let the takers finish; expire what has a deadline. */
	for (int k = 0; k < nheld; k++)
		releases += jd_fair_release(F, &jobs[held[k]].fj) == 0;
	jd_fair_pause(F, NULL, false);
	for (int i = 0; i < N_CLIENTS; i++)
		jd_fair_pause(F, C[i], false);
	while (hooks_total() != entered) {
		assert_true(wall_s() - start < DEADLINE_S);
		vclock_advance(1000);
		jd_fair_expire(F);
		sched_yield();
	}
	atomic_store(&stop, true);
	for (int i = 0; i < N_TAKERS; i++)
		pthread_join(th[i], NULL);

	assert_int_equal(atomic_load(&bad), 0);
	for (int i = 0; i < N_JOBS; i++) {
		assert_int_equal(atomic_load(&jobs[i].finals), 1);
		assert_int_equal(atomic_load(&jobs[i].last), jobs[i].fj.state);
	}
	struct jd_fair_stats st;
	jd_fair_stats(F, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.held, 0);
	assert_int_equal(st.inflight, 0);
	assert_int_equal(st.res_used[proc], 0);
	assert_int_equal(st.res_used[fiber], 0);
	assert_int_equal(st.total.dispatched, atomic_load(&taken));
	assert_int_equal(st.total.completed, st.total.dispatched);
	assert_int_equal(st.total.dispatched + st.total.cancelled + st.total.expired, entered);
	assert_true(holds > 0 && releases > 0 && pauses > 0);
	assert_true(st.total.expired > 0 && st.total.cancelled > 0);
	assert_int_equal(st.res_used[gpu], 0);
	assert_int_equal(st.res_used[cpus], 0);
	assert_int_equal(st.res_used[mem], 0);
	assert_true(st.cls_queued[CLS_V] == 0 && st.total.dispatched > 0);
	assert_true(st.reservations > 0);
	print_message("reservations %llu, class removals %llu\n",
		      (unsigned long long)st.reservations, (unsigned long long)removed);
	print_message("dispatched %llu cancelled %llu expired %llu; holds %llu releases %llu "
		      "pauses %llu\n", (unsigned long long)st.total.dispatched,
		      (unsigned long long)st.total.cancelled, (unsigned long long)st.total.expired,
		      (unsigned long long)holds, (unsigned long long)releases,
		      (unsigned long long)pauses);
	for (int i = 0; i < N_CLIENTS; i++)
		assert_int_equal(jd_fair_client_remove(F, C[i]), 0);
	jd_fair_free(F);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
