/* unit_wake.c: the loop's wake-up by an eventfd of its own (daemon/core/wake.c), used as
 * the runner uses it: SENDERS threads each push ITEMS nodes onto one lock-free list and
 * send a wake-up only when their push made the list non-empty; the loop's callback takes
 * the whole list.  Every node must reach the loop (a lost wake-up leaves the list
 * non-empty for good, so no sender sends again and the guard timer fails the test), and
 * the handle must close cleanly (uv_loop_close returns 0).  Three senders on two CPUs,
 * so senders are preempted between their push and their write; each waits for the loop
 * to take its node before pushing the next, so that almost every push sends and races
 * the loop's callback.  Negative control: with the callback before the read of the
 * count (wake.c), 5 runs of 5 failed on the guard (a lost wake-up); it passes in ~1 s
 * (~2 s under TSan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include <uv.h>

#include "daemon/core/wake.h"

enum { SENDERS = 3, ITEMS = 60000, GUARD_MS = 30000 };

struct node {
	struct node *next;
	atomic_bool taken; /* set by the loop's callback */
};

struct state {
	struct jd_wake wake;
	uv_timer_t guard;
	_Atomic(struct node *) list;
	atomic_uint_fast64_t sends;
	uint64_t got, callbacks;
	atomic_bool timed_out;
	struct node *nodes;
};

static void push(struct state *s, struct node *n)
{
	struct node *old = atomic_load_explicit(&s->list, memory_order_relaxed);

	do {
		n->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&s->list, &old, n, memory_order_release,
							memory_order_relaxed));
	if (!old) {
		atomic_fetch_add_explicit(&s->sends, 1, memory_order_relaxed);
		jd_wake_send(&s->wake);
	}
}

struct sender {
	struct state *s;
	struct node *nodes;
};

static void *sender_main(void *arg)
{
	struct sender *t = arg;

	/* Each node waits until the loop took it, so that nearly every push finds the
	 * list empty and sends, and the next push races the loop's callback. */
	for (size_t i = 0; i < ITEMS && !atomic_load(&t->s->timed_out); i++) {
		push(t->s, &t->nodes[i]);
		while (!atomic_load_explicit(&t->nodes[i].taken, memory_order_acquire) &&
		       !atomic_load(&t->s->timed_out))
			sched_yield();
	}
	return NULL;
}

static void guard_closed(uv_handle_t *h)
{
	(void)h;
}

static void finish(struct state *s)
{
	jd_wake_close(&s->wake);
	uv_close((uv_handle_t *)&s->guard, guard_closed);
}

static void woken(struct jd_wake *w)
{
	struct state *s = w->data;
	struct node *n = atomic_exchange_explicit(&s->list, NULL, memory_order_acquire);

	s->callbacks++;
	while (n) {
		struct node *next = n->next;

		s->got++;
		atomic_store_explicit(&n->taken, true, memory_order_release);
		n = next;
	}
	if (s->got == (uint64_t)SENDERS * ITEMS)
		finish(s);
}

static void guard_cb(uv_timer_t *t)
{
	struct state *s = t->data;

	atomic_store(&s->timed_out, true);
	finish(s);
}

static void test_no_lost_wakeup(void **unused)
{
	(void)unused;
	uv_loop_t loop;
	struct state s = {0};
	struct sender t[SENDERS];
	pthread_t th[SENDERS];

	assert_int_equal(uv_loop_init(&loop), 0);
	s.nodes = calloc((size_t)SENDERS * ITEMS, sizeof(*s.nodes));
	assert_non_null(s.nodes);
	s.wake.data = &s;
	assert_int_equal(jd_wake_init(&loop, &s.wake, woken), 0);
	uv_timer_init(&loop, &s.guard);
	s.guard.data = &s;
	uv_timer_start(&s.guard, guard_cb, GUARD_MS, 0);
	for (int i = 0; i < SENDERS; i++) {
		t[i] = (struct sender){.s = &s, .nodes = s.nodes + (size_t)i * ITEMS};
		assert_int_equal(pthread_create(&th[i], NULL, sender_main, &t[i]), 0);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	for (int i = 0; i < SENDERS; i++)
		pthread_join(th[i], NULL);
	assert_false(atomic_load(&s.timed_out));
	assert_int_equal(s.got, (uint64_t)SENDERS * ITEMS);
	/* One callback may take the nodes of many sends, never more callbacks than sends. */
	assert_true(s.callbacks <= atomic_load(&s.sends));
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_int_equal(s.wake.fd, -1);
	free(s.nodes);
}

/* A send before the loop runs, and several: one callback for all of them. */
static void test_sends_coalesce(void **unused)
{
	(void)unused;
	uv_loop_t loop;
	struct state s = {0};

	assert_int_equal(uv_loop_init(&loop), 0);
	s.wake.data = &s;
	assert_int_equal(jd_wake_init(&loop, &s.wake, woken), 0);
	uv_timer_init(&loop, &s.guard);
	s.guard.data = &s;
	for (int i = 0; i < 5; i++)
		jd_wake_send(&s.wake);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 1);
	assert_int_equal(s.callbacks, 1);
	finish(&s);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(s.callbacks, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_lost_wakeup),
		cmocka_unit_test(test_sends_coalesce),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
