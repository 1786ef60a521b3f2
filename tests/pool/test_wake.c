/* tests/pool/test_wake.c: no lost wake-ups under the sleep policy.
 *
 * A million times: submit one task from a thread outside the pool, then wait for it with a
 * generous timeout.  Between two cycles every worker goes idle and parks, so each submit
 * races the workers' park handshake somewhere in its window (announce, fence, look,
 * futex wait); a lost wake-up would leave the task queued and the wait would time out,
 * which fails the test with the cycle number (it does not hang).  The waiter's own spin is
 * turned off so that it sleeps too and the wake-up back to it is exercised as well.
 *
 * The same runs with the feeder path (jd_pool_notify then the feeder hands the task over),
 * and with a task that spawns a child onto its deque just before finishing (the wake-up of
 * a thief by a worker).  Counts: CYCLES in the release build; under ThreadSanitizer,
 * CYCLES / TSAN_DIV (see testutil.h), so that it stays under 30 s on 2 cores.
 *
 * SLEEP's grace (the search before a park, worker.c): the same cycles with the default
 * grace while another thread keeps raising and lowering jd_pool_want_cpu, so that the
 * grace's yields, its growth and the park race each other; an idle worker with the flag
 * up yields before it parks; and the growth rule itself (jd_grace_next).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/pool/internal.h" /* jd_grace_next */
#include "daemon/pool/pool.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

#define CYCLES (1000000 / TSAN_DIV)
#define LOST_NS (5ull * 1000000000u) /* a wait this long means a lost wake-up */

static struct jd_pool *make_pool_grace(unsigned workers, jd_feeder_fn feeder, void *ctx,
				   int64_t wait_spin_ns, int64_t park_after_ns)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = workers;
	cfg.idle = JD_IDLE_SLEEP;
	cfg.wait_spin_ns = wait_spin_ns;
	cfg.park_after_ns = park_after_ns;
	cfg.feeder = feeder;
	cfg.feeder_ctx = ctx;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	return p;
}

/* make_pool: park at once, so that every cycle races a real park. */
static struct jd_pool *make_pool(unsigned workers, jd_feeder_fn feeder, void *ctx,
			     int64_t wait_spin_ns)
{
	return make_pool_grace(workers, feeder, ctx, wait_spin_ns, 0);
}

static void count_task(void *arg)
{
	atomic_fetch_add((atomic_ulong *)arg, 1);
}

static void check_cycles(struct jd_pool *p, atomic_ulong *ran, int n, void (*submit)(struct jd_pool *, struct jd_wg *, atomic_ulong *))
{
	struct jd_wg wg = JD_WG_INIT;
	for (int i = 0; i < n; i++) {
		jd_wg_add(&wg, 1);
		submit(p, &wg, ran);
		int rc = jd_wg_wait_for(&wg, (int64_t)LOST_NS, NULL);
		if (rc)
			fail_msg("cycle %d: wait returned %d: lost wake-up", i, rc);
	}
	assert_int_equal(atomic_load(ran), (unsigned long)n);
	struct jd_pool_stats st;
	jd_pool_stats(p, &st, NULL, 0);
	printf("    %d cycles, %llu parks\n", n, (unsigned long long)st.parks);
}

static void submit_one(struct jd_pool *p, struct jd_wg *wg, atomic_ulong *ran)
{
	struct jd_task_spec s = {.fn = count_task, .arg = ran, .wg = wg};
	if (jd_pool_submit(p, &s))
		fail();
}

static void test_submit_wait(void **state)
{
	(void)state;
	/* The million: the waiter spins its default while the worker parks. */
	atomic_ulong ran = 0;
	struct jd_pool *p = make_pool(2, NULL, NULL, -1);
	check_cycles(p, &ran, CYCLES, submit_one);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	/* Both sides sleep: the waiter's futex wake-up is raced too; one and two workers. */
	for (unsigned workers = 1; workers <= 2; workers++) {
		atomic_store(&ran, 0);
		p = make_pool(workers, NULL, NULL, 0);
		check_cycles(p, &ran, CYCLES / 10, submit_one);
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	}
}

/* The feeder hands out one pending task per notify. */
struct feed {
	atomic_int pending;
	atomic_ulong *ran;
	struct jd_wg *wg;
};
static struct feed the_feed;

static size_t feeder(void *ctx, struct jd_task_spec *out, size_t max)
{
	struct feed *f = ctx;
	(void)max;
	if (!atomic_exchange(&f->pending, 0))
		return 0;
	out[0] = (struct jd_task_spec){.fn = count_task, .arg = f->ran, .wg = f->wg};
	return 1;
}

static void submit_feed(struct jd_pool *p, struct jd_wg *wg, atomic_ulong *ran)
{
	the_feed.ran = ran;
	the_feed.wg = wg;
	atomic_store(&the_feed.pending, 1);
	jd_pool_notify(p);
}

static void test_notify_wait(void **state)
{
	(void)state;
	atomic_ulong ran = 0;
	struct jd_pool *p = make_pool(2, feeder, &the_feed, 0);
	check_cycles(p, &ran, CYCLES / 10, submit_feed);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* A task that spawns its child last: the child sits on the deque of a worker that then
 * goes idle itself, or is stolen by the other one after a wake-up. */
struct pair {
	atomic_ulong *ran;
	struct jd_wg *wg;
};

static void parent_task(void *arg)
{
	struct pair *pr = arg;
	atomic_fetch_add(pr->ran, 1);
	jd_wg_add(pr->wg, 1);
	struct jd_task_spec s = {.fn = count_task, .arg = pr->ran, .wg = pr->wg};
	if (jd_spawn(&s))
		abort();
}

static struct pair the_pair;

static void submit_parent(struct jd_pool *p, struct jd_wg *wg, atomic_ulong *ran)
{
	the_pair = (struct pair){ran, wg};
	struct jd_task_spec s = {.fn = parent_task, .arg = &the_pair, .wg = wg};
	if (jd_pool_submit(p, &s))
		fail();
}

static void test_spawn_wait(void **state)
{
	(void)state;
	atomic_ulong ran = 0;
	struct jd_pool *p = make_pool(2, NULL, NULL, 0);
	struct jd_wg wg = JD_WG_INIT;
	int n = CYCLES / 10;
	for (int i = 0; i < n; i++) {
		jd_wg_add(&wg, 1);
		submit_parent(p, &wg, &ran);
		int rc = jd_wg_wait_for(&wg, (int64_t)LOST_NS, NULL);
		if (rc)
			fail_msg("cycle %d: wait returned %d: lost wake-up", i, rc);
	}
	assert_int_equal(atomic_load(&ran), 2ul * (unsigned long)n);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* The thread that raises and lowers jd_pool_want_cpu until told to stop. */
struct toggler {
	struct jd_pool *p;
	atomic_int stop;
	unsigned long flips;
};

static void *toggle_main(void *arg)
{
	struct toggler *t = arg;
	while (!atomic_load(&t->stop)) {
		jd_pool_want_cpu(t->p);
		for (int i = 0; i < 64; i++)
			__asm__ __volatile__("" ::: "memory");
		jd_pool_got_cpu(t->p);
		t->flips++;
	}
	return NULL;
}

static void test_grace_wait(void **state)
{
	(void)state;
	/* The default grace, the waiter spinning (its default) and sleeping (0), the flag
	 * flipping all along: no cycle may lose its task. */
	for (int spin = 0; spin < 2; spin++) {
		atomic_ulong ran = 0;
		struct jd_pool *p = make_pool_grace(2, NULL, NULL, spin ? -1 : 0, -1);
		struct toggler t = {.p = p};
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, toggle_main, &t), 0);
		check_cycles(p, &ran, CYCLES / 10, submit_one);
		atomic_store(&t.stop, 1);
		pthread_join(th, NULL);
		assert_true(t.flips > 0);
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	}
}

/* wait_parks: poll the pool's counters into *st until its workers have parked more than
 * `after` times in all, within the tests' patience. */
static void wait_parks(struct jd_pool *p, struct jd_pool_stats *st, uint64_t after)
{
	uint64_t end = test_now_ns() + TEST_PATIENCE_NS;
	do
		jd_pool_stats(p, st, NULL, 0);
	while (st->parks <= after && test_now_ns() < end);
	assert_true(st->parks > after);
}

/* With jd_pool_want_cpu up, a worker that runs out of work yields before it parks: the
 * counters show a grace yield once it has parked after its task (without the flag's yield,
 * a quiet worker searches with pauses only and the count stays 0).  The worker is let park
 * once first, so the park counted after the task is the one that ends the idle stretch
 * following it: a park from before the task would end the poll while that stretch, whose
 * yield the test looks for, has not begun (seen under TSan in CI).  The waiter sleeps
 * (wait_spin_ns 0): a spinning waiter is itself a reason to yield, which would hide the
 * flag's. */
static void test_grace_yields_to_wanted(void **state)
{
	(void)state;
	atomic_ulong ran = 0;
	struct jd_pool *p = make_pool_grace(1, NULL, NULL, 0, -1);
	struct jd_pool_stats st;
	wait_parks(p, &st, 0);
	uint64_t parks = st.parks;
	jd_pool_want_cpu(p);
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1);
	submit_one(p, &wg, &ran);
	assert_int_equal(jd_wg_wait_for(&wg, (int64_t)LOST_NS, NULL), 0);
	wait_parks(p, &st, parks);
	assert_true(st.grace_yields > 0);
	jd_pool_got_cpu(p);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* The growth rule: short parks double the grace up to 5x the base, a long one resets it. */
static void test_grace_next(void **state)
{
	(void)state;
	const uint64_t base = 10000, max = base * JD_GRACE_MAX_X;
	uint64_t g = base;
	g = jd_grace_next(base, g, 0); /* a park that found work at its look */
	assert_int_equal(g, 2 * base);
	g = jd_grace_next(base, g, 30000);
	assert_int_equal(g, 4 * base);
	g = jd_grace_next(base, g, 2 * max - 1);
	assert_int_equal(g, max);
	g = jd_grace_next(base, g, 1000);
	assert_int_equal(g, max); /* never past the longest */
	g = jd_grace_next(base, g, 2 * max); /* idle a while: back to the base */
	assert_int_equal(g, base);
	assert_int_equal(jd_grace_next(base, base, 5000000), base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_submit_wait),
		cmocka_unit_test(test_notify_wait),
		cmocka_unit_test(test_spawn_wait),
		cmocka_unit_test(test_grace_wait),
		cmocka_unit_test(test_grace_yields_to_wanted),
		cmocka_unit_test(test_grace_next),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
