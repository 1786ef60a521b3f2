/* tests/pool/test_shutdown.c: destroying a pool with work in flight.
 *
 * Graceful: everything submitted, everything those tasks spawn, and fibers sleeping on the
 * timer all finish before destroy returns, which reports 0 dropped.  Immediate: a task
 * that is running finishes; the tasks queued behind it are dropped, counted exactly, never
 * run, and their wait groups are done all the same; fibers suspended in waits get
 * JSCHED_ECANCELLED and finish.  The determinism comes from a blocker task that holds the
 * only worker until jd_pool_stopping() turns true.
 *
 * A fiber woken by a thread outside the pool as the pool is destroyed: the woken fiber
 * can finish and the pool quiesce and be freed while the waker is still returning from
 * the wake (its last touches of the worker's parker and idle count); destroy waits for
 * it.  Without that wait ThreadSanitizer reports the free racing the waker's reads (as
 * it did for the daemon's output thread, whose sync callback sets a command fiber's
 * event at shutdown).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "daemon/pool/pool.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

static struct jd_pool *make_pool(unsigned workers)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = workers;
	cfg.fibers = 32;
	cfg.large_fibers = 2;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	return p;
}

static atomic_uint ran;

struct tree {
	uint32_t depth;
};

static void tree_task(void *arg)
{
	struct tree t = *(struct tree *)arg;
	atomic_fetch_add(&ran, 1);
	if (!t.depth)
		return;
	for (int k = 0; k < 3; k++) {
		struct tree ch = {t.depth - 1};
		struct jd_task_spec s = {.fn = tree_task, .payload = &ch, .payload_len = sizeof(ch)};
		if (jd_spawn(&s))
			abort();
	}
}

static void sleepy_fiber(void *arg)
{
	(void)arg;
	if (jd_sleep(1000000, NULL) == 0) /* 1 ms on the timer */
		atomic_fetch_add(&ran, 1);
}

static void test_graceful(void **state)
{
	(void)state;
	for (unsigned workers = 1; workers <= 2; workers++) {
		atomic_store(&ran, 0);
		struct jd_pool *p = make_pool(workers);
		/* 200 trees of depth 5 (364 nodes each), fire and forget, and 20 sleepers. */
		for (int i = 0; i < 200; i++) {
			struct tree t = {5};
			struct jd_task_spec s = {.fn = tree_task, .payload = &t, .payload_len = sizeof(t)};
			assert_int_equal(jd_pool_submit(p, &s), 0);
			if (i % 10 == 0) {
				struct jd_task_spec f = {.fn = sleepy_fiber, .flags = JD_TASK_FIBER};
				assert_int_equal(jd_pool_submit(p, &f), 0);
			}
		}
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
		assert_int_equal(atomic_load(&ran), 200 * 364 + 20);
	}
}

static void test_graceful_idle(void **state)
{
	(void)state;
	/* Nothing submitted at all, and a pool whose work finished long ago. */
	struct jd_pool *p = make_pool(2);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	p = make_pool(2);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_IMMEDIATE), 0);
}

struct blocker {
	struct jd_pool *p;
	atomic_bool running;
	atomic_bool saw_stop;
};

static void blocker_task(void *arg)
{
	struct blocker *b = arg;
	atomic_store(&b->running, true);
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	while (!jd_pool_stopping(b->p) && test_now_ns() < give_up)
		;
	atomic_store(&b->saw_stop, jd_pool_stopping(b->p));
}

static void counted(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
}

struct waiter {
	struct jd_event *never;
	atomic_int result;
};

static void waiting_fiber(void *arg)
{
	struct waiter *w = arg;
	atomic_store(&w->result, jd_event_wait(w->never));
	/* After an immediate destroy began, every further wait returns at once. */
	if (jd_sleep(1000000000, NULL) != JSCHED_ECANCELLED)
		atomic_store(&w->result, 1);
}

struct destroyer {
	struct jd_pool *p;
	int dropped;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;
	d->dropped = jd_pool_destroy(d->p, JD_SHUTDOWN_IMMEDIATE);
	return NULL;
}

static void test_immediate(void **state)
{
	(void)state;
	atomic_store(&ran, 0);
	struct jd_pool *p = make_pool(1);
	/* Fibers suspended on an event nobody will set. */
	struct jd_event never = JD_EVENT_INIT;
	struct waiter ws[5];
	struct jd_wg fibers = JD_WG_INIT;
	jd_wg_add(&fibers, 5);
	for (int i = 0; i < 5; i++) {
		ws[i].never = &never;
		atomic_init(&ws[i].result, 99);
		struct jd_task_spec s = {
			.fn = waiting_fiber, .arg = &ws[i], .flags = JD_TASK_FIBER, .wg = &fibers};
		assert_int_equal(jd_pool_submit(p, &s), 0);
	}
	struct jd_pool_stats st;
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	do
		jd_pool_stats(p, &st, NULL, 0);
	while (st.fibers_suspended < 5 && test_now_ns() < give_up);
	assert_int_equal(st.fibers_suspended, 5);
	/* The only worker is held by the blocker; 1000 tasks queue behind it. */
	struct blocker b = {.p = p};
	atomic_init(&b.running, false);
	atomic_init(&b.saw_stop, false);
	assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = blocker_task, .arg = &b}), 0);
	while (!atomic_load(&b.running) && test_now_ns() < give_up)
		;
	struct jd_wg queued = JD_WG_INIT;
	jd_wg_add(&queued, 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = counted, .wg = &queued}), 0);
	struct destroyer d = {p, -1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, destroy_thread, &d), 0);
	pthread_join(th, NULL);
	assert_true(atomic_load(&b.saw_stop));
	assert_int_equal(d.dropped, 1000);
	assert_int_equal(atomic_load(&ran), 0);
	assert_int_equal(jd_wg_wait_for(&queued, 0, NULL), 0); /* done by the drops */
	assert_int_equal(jd_wg_wait_for(&fibers, 0, NULL), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(atomic_load(&ws[i].result), JSCHED_ECANCELLED);
}

/* Once destroy has begun an outside submit is refused; a task of the pool may still
 * spawn, and what it spawns is dropped (under an immediate destroy). */
struct late {
	struct jd_pool *p;
	atomic_bool running;
	int outside_rc, spawn_rc;
};

static void *outside_submit(void *arg)
{
	struct late *l = arg;
	l->outside_rc = jd_pool_submit(l->p, &(struct jd_task_spec){.fn = counted});
	return NULL;
}

static void late_task(void *arg)
{
	struct late *l = arg;
	atomic_store(&l->running, true);
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	while (!jd_pool_stopping(l->p) && test_now_ns() < give_up)
		;
	pthread_t th;
	if (pthread_create(&th, NULL, outside_submit, l) == 0)
		pthread_join(th, NULL);
	l->spawn_rc = jd_spawn(&(struct jd_task_spec){.fn = counted});
}

static void test_submit_while_stopping(void **state)
{
	(void)state;
	atomic_store(&ran, 0);
	struct jd_pool *p = make_pool(1);
	struct late l = {.p = p, .outside_rc = 1, .spawn_rc = 1};
	atomic_init(&l.running, false);
	assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = late_task, .arg = &l}), 0);
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	while (!atomic_load(&l.running) && test_now_ns() < give_up)
		;
	struct destroyer d = {p, -1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, destroy_thread, &d), 0);
	pthread_join(th, NULL);
	assert_int_equal(l.outside_rc, JSCHED_ESHUTTING_DOWN);
	assert_int_equal(l.spawn_rc, 0);
	assert_int_equal(d.dropped, 1);
	assert_int_equal(atomic_load(&ran), 0);
}

/* A graph queued behind the blocker when an immediate destroy begins: its nodes are
 * dropped (counted), none runs, and jd_dag_wait returns. */
static void test_immediate_dag(void **state)
{
	(void)state;
	atomic_store(&ran, 0);
	struct jd_pool *p = make_pool(1);
	struct blocker b = {.p = p};
	atomic_init(&b.running, false);
	atomic_init(&b.saw_stop, false);
	assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = blocker_task, .arg = &b}), 0);
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	while (!atomic_load(&b.running) && test_now_ns() < give_up)
		;
	struct jd_dag *g;
	assert_int_equal(jd_dag_create(&g, p), 0);
	/* Fiber nodes: an outside waiter does not run those itself. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(jd_dag_add(g, &(struct jd_task_spec){.fn = counted, .flags = JD_TASK_FIBER},
					    JD_GATE_AND),
				 i);
		if (i)
			assert_int_equal(jd_dag_edge(g, i - 1, i), 0);
	}
	assert_int_equal(jd_dag_run(g), 0);
	struct destroyer d = {p, -1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, destroy_thread, &d), 0);
	pthread_join(th, NULL);
	assert_int_equal(d.dropped, 4);
	assert_int_equal(atomic_load(&ran), 0);
	assert_int_equal(jd_dag_wait(g), 0);
	jd_dag_destroy(g);
}

struct outside_wake {
	struct jd_event ev;
	atomic_int waiting;	/* the fiber is about to wait */
	atomic_int woke;	/* its wait returned 0 */
};

static void outside_waiter(void *arg)
{
	struct outside_wake *o = arg;
	atomic_store(&o->waiting, 1);
	if (jd_event_wait(&o->ev) == 0)
		atomic_store(&o->woke, 1);
}

static void *setter_thread(void *arg)
{
	struct outside_wake *o = arg;
	/* bounded: the fiber runs at once on an idle pool */
	for (int i = 0; i < 2000000 && !atomic_load(&o->waiting); i++)
		sched_yield();
	jd_event_set(&o->ev);
	return NULL;
}

static void test_woken_from_outside_while_destroyed(void **state)
{
	(void)state;
	for (int round = 0; round < 50; round++) {
		struct outside_wake o = {.ev = JD_EVENT_INIT};
		struct jd_pool *p = make_pool(1 + (unsigned)(round & 1));
		struct jd_task_spec s = {.fn = outside_waiter, .arg = &o, .flags = JD_TASK_FIBER};
		pthread_t th;

		assert_int_equal(jd_pool_submit(p, &s), 0);
		assert_int_equal(pthread_create(&th, NULL, setter_thread, &o), 0);
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
		assert_int_equal(atomic_load(&o.woke), 1);
		pthread_join(th, NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graceful),
		cmocka_unit_test(test_graceful_idle),
		cmocka_unit_test(test_immediate),
		cmocka_unit_test(test_submit_while_stopping),
		cmocka_unit_test(test_immediate_dag),
		cmocka_unit_test(test_woken_from_outside_while_destroyed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
