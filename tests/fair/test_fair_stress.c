/* tests/fair/test_fair_stress.c: threads.  One "loop" thread admits jobs (every overflow
 * strategy, a global cap, deadlines on the virtual clock), cancels, drains, expires,
 * changes weights and switches policy, while three taker threads take batches and
 * complete them, with an in-flight window.  Every job that entered must end in exactly
 * one final state: the hook counts per job with atomics, and the totals must match the
 * instance's counters exactly.  Meant to run under TSan (make test SAN=thread) too.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "tests/fair/fair_test.h"

#define N_JOBS 200000
#define N_CLIENTS 16
#define N_TAKERS 3
#define DEADLINE_S 30	/* the whole test, loop and drain, must finish within this */

static struct tjob jobs[N_JOBS];
static struct jd_fair *F;
static struct jd_fair_client *C[N_CLIENTS];
static _Atomic bool stop;
static _Atomic int wake_flag;
static _Atomic uint64_t taken, completed, bad;

static void stress_wake_cb(void *udata)
{
	(void)udata;
	atomic_store(&wake_flag, 1);
}



/* A worker: takes a batch, "runs" it, completes it.  Odd takers complete and take under
 * one lock (jd_fair_complete_take, in place), even ones call the two functions. */
static void *taker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t seed = 0x9e3779b97f4a7c15u * (uint64_t)id + 1;
	struct jd_fair_job *out[8];
	size_t n = 0;

	while (!atomic_load(&stop)) {
		size_t max = 1 + jtc_xorshift(&seed) % 8;
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
			/* The hook has run before take returned.  (cmocka's asserts belong
			 * to the main thread: count here, assert there.) */
			if (atomic_load(&TJOB(out[i])->finals) != 1 ||
			    atomic_load(&TJOB(out[i])->last) != JD_FAIR_DISPATCHED)
				atomic_fetch_add(&bad, 1);
			out[i]->run_ns = 100 + jtc_xorshift(&seed) % 5000;
		}
		/* Counted as completed now: the next call completes them. */
		atomic_fetch_add(&completed, n);
	}
	jd_fair_complete(F, out, n);
	return NULL;
}

/* The loop thread's bookkeeping. */
static uint64_t entered, rejected, blocked, resumed;
static bool paused[N_CLIENTS];
static int next;

/* Admit jobs[next] to client ci and count the outcome. */
static int loop_admit(int ci, int prio, uint64_t deadline, uint32_t cost)
{
	int rc = admit(F, C[ci], &jobs[next], ci, prio, deadline, cost);

	next++;
	if (rc == JSCHED_EQUEUE_FULL) {
		rejected++;
	} else {
		assert_true(rc >= 0);
		entered++;
		if (rc == JD_FAIR_BLOCKED) {
			blocked += !paused[ci];
			paused[ci] = true;
		}
	}
	return rc;
}

/* Resume reading from the clients the instance says have room again. */
static void loop_unblocked(void)
{
	struct jd_fair_client *un[N_CLIENTS];
	size_t n = jd_fair_unblocked(F, un, N_CLIENTS);

	for (size_t k = 0; k < n; k++)
		for (int i = 0; i < N_CLIENTS; i++)
			if (un[k] == C[i]) {
				resumed += paused[i];
				paused[i] = false;
			}
}


static void test_stress(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.max_queued = 3000;
	cfg.max_inflight = 24;
	cfg.wake_cb = stress_wake_cb;
	F = fair_new_or_die(&cfg);

	entered = rejected = blocked = resumed = 0;
	next = 0;
	for (int i = 0; i < N_CLIENTS; i++) {
		paused[i] = false;
		enum jd_fair_overflow ov = (enum jd_fair_overflow)(i % 4);
		C[i] = client_new(F, "c", (uint32_t)(1 + i % 5), 64 + 32 * (uint32_t)(i % 3), ov);
	}

	/* A prelude before the takers start, so that every final state and backpressure
	 * both ways happen whatever the timing of the random part: client 1 (drop_oldest,
	 * limit 96) gets 100 jobs, client 3 (block, limit 64) is filled until it blocks,
	 * client 0 (reject) has one job cancelled and one expired. */
	for (int k = 0; k < 100; k++)
		loop_admit(1, JD_FAIR_NORMAL, 0, 1);
	while (loop_admit(3, JD_FAIR_NORMAL, 0, 1) != JD_FAIR_BLOCKED)
		assert_true(next < 200);
	loop_admit(0, JD_FAIR_LOW, 0, 1);
	assert_int_equal(jd_fair_cancel(F, &jobs[next - 1].fj), 0);
	loop_admit(0, JD_FAIR_LOW, vclock(NULL) + 10, 1);
	vclock_advance(20);
	assert_int_equal(jd_fair_expire(F), 1);

	pthread_t th[N_TAKERS];
	for (uintptr_t i = 0; i < N_TAKERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, taker, (void *)i), 0);

	uint64_t seed = 42, start = wall_s();
	while (next < N_JOBS) {
		assert_true(wall_s() - start < DEADLINE_S);
		vclock_advance(100);
		if (atomic_exchange(&wake_flag, 0))
			loop_unblocked();
		uint64_t r = jtc_xorshift(&seed);
		int ci = (int)(r % N_CLIENTS);
		if (!paused[ci])
			loop_admit(ci, (int)((r >> 4) % 4),
				   r % 4 == 0 ? vclock(NULL) + (r >> 8) % 200000 : 0,
				   1 + (uint32_t)((r >> 6) % 4));
		else
			sched_yield();
		if (r % 50 == 1 && next > 0)		/* cancel a recent job, maybe running */
			(void)jd_fair_cancel(F, &jobs[next - 1 - (int)((r >> 20) % (uint64_t)(next < 500 ? next : 500))].fj);
		if (r % 5000 == 2)
			jd_fair_drain(F, C[(r >> 24) % N_CLIENTS]);
		if (r % 64 == 3)
			jd_fair_expire(F);
		if (r % 3000 == 4)
			jd_fair_set_policy(F, (enum jd_fair_policy)((r >> 28) % 3));
		if (r % 4000 == 6)
			jd_fair_set_max_inflight(F, 8 + (uint32_t)((r >> 12) % 32));
		if (r % 4000 == 7)
			jd_fair_set_max_queued(F, 1000 + (uint32_t)((r >> 12) % 4000));
		if (r % 1000 == 5) {	/* new weight and limit, same strategy */
			int k = (int)((r >> 40) % N_CLIENTS);
			struct jd_fair_client_config cc = {
				.weight = 1 + (uint32_t)((r >> 32) % 7), .max_queued = 64,
				.overflow = (enum jd_fair_overflow)(k % 4)};
			assert_int_equal(jd_fair_client_set(F, C[k], &cc), 0);
		}
	}
	/* Let the takers finish the queue; expire what has a deadline.  (A taker completes
	 * its last batch when it stops.) */
	while (hooks_total() != entered) {
		assert_true(wall_s() - start < DEADLINE_S);
		vclock_advance(1000);
		jd_fair_expire(F);
		sched_yield();
	}
	atomic_store(&stop, true);
	for (int i = 0; i < N_TAKERS; i++)
		pthread_join(th[i], NULL);
	loop_unblocked();	/* the queues are empty: every blocked client has room */

	assert_int_equal(atomic_load(&bad), 0);
	/* Exactly once, for every job. */
	uint64_t state_count[6] = {0};
	for (int i = 0; i < N_JOBS; i++) {
		int finals = atomic_load(&jobs[i].finals);
		if (jobs[i].fj.state == 0) {
			assert_int_equal(finals, 0);	/* rejected */
		} else {
			assert_int_equal(finals, 1);
			assert_int_equal(atomic_load(&jobs[i].last), jobs[i].fj.state);
		}
		state_count[jobs[i].fj.state]++;
	}
	assert_int_equal(state_count[0], rejected);
	assert_int_equal(state_count[5], 0);	/* nothing left queued */

	struct jd_fair_stats st;
	jd_fair_stats(F, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.inflight, 0);
	assert_int_equal(st.total.submitted, entered);
	assert_int_equal(st.total.rejected, rejected);
	assert_int_equal(st.total.dispatched, atomic_load(&hook_count[JD_FAIR_DISPATCHED]));
	assert_int_equal(st.total.cancelled, atomic_load(&hook_count[JD_FAIR_CANCELLED]));
	assert_int_equal(st.total.expired, atomic_load(&hook_count[JD_FAIR_EXPIRED]));
	assert_int_equal(st.total.dropped, atomic_load(&hook_count[JD_FAIR_DROPPED]));
	assert_int_equal(st.total.dispatched, atomic_load(&taken));
	assert_int_equal(st.total.completed, atomic_load(&completed));
	assert_int_equal(st.total.dispatched + st.total.cancelled + st.total.expired +
			 st.total.dropped, entered);
	/* The load exercised every final state, and backpressure both ways. */
	for (int s = 1; s <= 4; s++)
		assert_true(atomic_load(&hook_count[s]) > 0);
	assert_true(blocked > 0 && resumed > 0);
	print_message("blocked %llu resumed %llu\n", (unsigned long long)blocked,
		      (unsigned long long)resumed);
	print_message("entered %llu rejected %llu: dispatched %llu cancelled %llu expired %llu "
		      "dropped %llu\n", (unsigned long long)entered, (unsigned long long)rejected,
		      (unsigned long long)st.total.dispatched,
		      (unsigned long long)st.total.cancelled, (unsigned long long)st.total.expired,
		      (unsigned long long)st.total.dropped);
	for (int i = 0; i < N_CLIENTS; i++)
		assert_int_equal(jd_fair_client_remove(F, C[i]), 0);
	jd_fair_free(F);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
