/* tests/pool/test_deque.c: the Chase-Lev deque alone: its semantics on one thread, and,
 * under contention (one owner pushing and popping, several thieves stealing), that every
 * item is taken exactly once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "daemon/pool/deque.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

#define ITEM(i) ((void *)(uintptr_t)(((uintptr_t)(i) + 1) << 4))
#define INDEX(x) ((size_t)(((uintptr_t)(x) >> 4) - 1))

static void test_single_thread(void **state)
{
	(void)state;
	struct jd_deque q;
	assert_int_equal(jd_deque_init(&q, 2), 0);
	/* A never-used deque is empty at both ends (the unsigned-index bug of the paper). */
	assert_null(jd_deque_pop(&q));
	assert_null(jd_deque_steal(&q));
	assert_int_equal(jd_deque_size(&q), 0);
	/* LIFO for the owner, FIFO for thieves, across growth (capacity 4 -> 64). */
	for (int i = 0; i < 50; i++)
		assert_int_equal(jd_deque_push(&q, ITEM(i)), 0);
	assert_int_equal(jd_deque_size(&q), 50);
	assert_ptr_equal(jd_deque_steal(&q), ITEM(0));
	assert_ptr_equal(jd_deque_steal(&q), ITEM(1));
	assert_ptr_equal(jd_deque_pop(&q), ITEM(49));
	assert_ptr_equal(jd_deque_pop(&q), ITEM(48));
	for (int i = 2; i < 48; i++)
		assert_ptr_equal(jd_deque_steal(&q), ITEM(i));
	assert_null(jd_deque_pop(&q));
	assert_null(jd_deque_steal(&q));
	/* Wrap-around: indices keep growing while the array is reused. */
	for (int round = 0; round < 1000; round++) {
		assert_int_equal(jd_deque_push(&q, ITEM(round)), 0);
		assert_int_equal(jd_deque_push(&q, ITEM(round + 1)), 0);
		assert_ptr_equal(jd_deque_steal(&q), ITEM(round));
		assert_ptr_equal(jd_deque_pop(&q), ITEM(round + 1));
	}
	assert_int_equal(jd_deque_size(&q), 0);
	jd_deque_fini(&q);
}

#define THIEVES 3
static const size_t contention_n = 1000000 / TSAN_DIV;

struct shared {
	struct jd_deque q;
	atomic_uchar *taken;
	atomic_bool done;
	atomic_size_t stolen;
};

static void take(struct shared *s, void *x)
{
	size_t i = INDEX(x);
	assert_true(i < contention_n);
	unsigned char before = atomic_fetch_add(&s->taken[i], 1);
	if (before != 0)
		fail_msg("item %zu taken twice", i);
}

static void *thief(void *arg)
{
	struct shared *s = arg;
	size_t n = 0;
	for (;;) {
		void *x = jd_deque_steal(&s->q);
		if (x == NULL) {
			if (atomic_load(&s->done) && jd_deque_size(&s->q) == 0)
				break;
			continue;
		}
		if (x == JD_DEQUE_ABORT)
			continue;
		take(s, x);
		n++;
	}
	atomic_fetch_add(&s->stolen, n);
	return NULL;
}

static void test_contention(void **state)
{
	(void)state;
	struct shared s;
	assert_int_equal(jd_deque_init(&s.q, 3), 0); /* small: it grows under the thieves */
	s.taken = calloc(contention_n, sizeof(*s.taken));
	assert_non_null(s.taken);
	atomic_init(&s.done, false);
	atomic_init(&s.stolen, 0);
	pthread_t th[THIEVES];
	for (int i = 0; i < THIEVES; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thief, &s), 0);
	/* The owner pushes in bursts and pops some back, racing the thieves for the last
	 * item again and again. */
	size_t next = 0, popped = 0;
	unsigned rng = 12345;
	while (next < contention_n) {
		rng = rng * 1103515245u + 12345u;
		size_t burst = 1 + (rng >> 16) % 64;
		for (size_t k = 0; k < burst && next < contention_n; k++)
			assert_int_equal(jd_deque_push(&s.q, ITEM(next++)), 0);
		size_t pops = (rng >> 8) % (burst + 2);
		for (size_t k = 0; k < pops; k++) {
			void *x = jd_deque_pop(&s.q);
			if (!x)
				break;
			take(&s, x);
			popped++;
		}
	}
	void *x;
	while ((x = jd_deque_pop(&s.q)) != NULL) {
		take(&s, x);
		popped++;
	}
	atomic_store(&s.done, true);
	for (int i = 0; i < THIEVES; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(popped + atomic_load(&s.stolen), contention_n);
	for (size_t i = 0; i < contention_n; i++)
		if (atomic_load(&s.taken[i]) != 1)
			fail_msg("item %zu taken %u times", i, (unsigned)atomic_load(&s.taken[i]));
	free(s.taken);
	jd_deque_fini(&s.q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_contention),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
