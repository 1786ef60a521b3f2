/* unit_timeheap.c: the job table's timer heap (daemon/core/timeheap.c): entries come out
 * in (due, tie) order whatever order they went in, removal from any place keeps the
 * order, pop_due never hands out an entry before its time, and a removed or popped
 * entry is no longer in the heap (a second removal is harmless); and the retry policy's
 * arithmetic (proto's jp_retry_backoff_ms, saturating) and choice of failures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "daemon/core/timeheap.h"
#include "tests/common/rnd.h"
#include "proto/jproto.h"

#define N 5000

static struct jd_timed e[N];

/* rnd: a fixed pseudo-random sequence (xorshift), so a failure repeats. */
static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	return jtc_xorshift(&x);
}

static void fill(struct jd_timeheap *h, uint64_t spread)
{
	for (size_t i = 0; i < N; i++) {
		e[i] = (struct jd_timed){.due_ms = 1000 + rnd() % spread, .tie = i};
		assert_int_equal(jd_timeheap_push(h, &e[i]), 0);
		assert_int_equal(e[i].slot != 0, 1);
	}
	assert_int_equal(h->n, N);
}

/* drain: pop everything at the end of time; each entry is after the one before it.
 * Returns how many came out. */
static size_t drain(struct jd_timeheap *h)
{
	struct jd_timed *p, *prev = NULL;
	size_t n = 0;

	while ((p = jd_timeheap_pop_due(h, UINT64_MAX))) {
		assert_int_equal(p->slot, 0);
		if (prev)
			assert_true(prev->due_ms < p->due_ms ||
				    (prev->due_ms == p->due_ms && prev->tie < p->tie));
		prev = p;
		n++;
	}
	return n;
}

static void test_order(void **state)
{
	struct jd_timeheap h = {0};

	(void)state;
	/* A narrow spread: many equal times, where only the tie orders them. */
	fill(&h, 50);
	assert_int_equal(drain(&h), N);
	assert_null(jd_timeheap_top(&h));
	fill(&h, 1u << 30);
	assert_int_equal(drain(&h), N);
	jd_timeheap_free(&h);
}

static void test_remove_anywhere(void **state)
{
	struct jd_timeheap h = {0};
	size_t removed = 0;

	(void)state;
	fill(&h, 1000);
	for (size_t i = 0; i < N; i += 3) {
		jd_timeheap_remove(&h, &e[i]);
		assert_int_equal(e[i].slot, 0);
		jd_timeheap_remove(&h, &e[i]); /* not in it any more: nothing happens */
		removed++;
	}
	assert_int_equal(h.n, N - removed);
	assert_int_equal(drain(&h), N - removed);
	jd_timeheap_free(&h);
}

static void test_pop_due(void **state)
{
	struct jd_timeheap h = {0};
	struct jd_timed a = {.due_ms = 100, .tie = 2}, b = {.due_ms = 100, .tie = 1},
			c = {.due_ms = 200, .tie = 0};

	(void)state;
	assert_null(jd_timeheap_pop_due(&h, UINT64_MAX));
	assert_int_equal(jd_timeheap_push(&h, &c), 0);
	assert_int_equal(jd_timeheap_push(&h, &a), 0);
	assert_int_equal(jd_timeheap_push(&h, &b), 0);
	assert_null(jd_timeheap_pop_due(&h, 99));
	assert_ptr_equal(jd_timeheap_pop_due(&h, 100), &b);
	assert_ptr_equal(jd_timeheap_pop_due(&h, 100), &a);
	assert_null(jd_timeheap_pop_due(&h, 199));
	assert_ptr_equal(jd_timeheap_top(&h), &c);
	assert_ptr_equal(jd_timeheap_pop_due(&h, 200), &c);
	assert_int_equal(h.n, 0);
	jd_timeheap_free(&h);
}

/* The retry backoff: backoff_ms * factor^(failed - 1), capped, and saturating where the
 * product would overflow anything (a factor of 1000 over 1000 attempts). */
static void test_backoff(void **state)
{
	struct jp_retry r = {.max_attempts = 10, .backoff_ms = 1000, .factor = 2, .max_backoff_ms = 3600000};

	(void)state;
	assert_int_equal(jp_retry_backoff_ms(&r, 1), 1000);
	assert_int_equal(jp_retry_backoff_ms(&r, 2), 2000);
	assert_int_equal(jp_retry_backoff_ms(&r, 3), 4000);
	assert_int_equal(jp_retry_backoff_ms(&r, 12), 2048000);
	assert_int_equal(jp_retry_backoff_ms(&r, 13), 3600000); /* 4,096,000 capped */
	assert_int_equal(jp_retry_backoff_ms(&r, 1000), 3600000);
	r.factor = 1000;
	r.max_backoff_ms = JP_MAX_INT;
	assert_int_equal(jp_retry_backoff_ms(&r, 1000), JP_MAX_INT);
	r.backoff_ms = JP_MAX_INT;
	assert_int_equal(jp_retry_backoff_ms(&r, 1), JP_MAX_INT);
	assert_int_equal(jp_retry_backoff_ms(&r, UINT32_MAX), JP_MAX_INT);
	r.factor = 1;
	r.backoff_ms = 250;
	assert_int_equal(jp_retry_backoff_ms(&r, 500), 250);
	r.backoff_ms = 0;
	assert_int_equal(jp_retry_backoff_ms(&r, 7), 0);
	r.backoff_ms = 5000;
	r.max_backoff_ms = 100; /* a cap below the first backoff wins */
	assert_int_equal(jp_retry_backoff_ms(&r, 1), 100);
}

/* Which failures a policy retries. */
static void test_wanted(void **state)
{
	struct jp_retry r = {.max_attempts = 2, .on = JP_RETRY_ON_CODES};

	(void)state;
	r.codes[3 / 8] |= 1u << (3 % 8);
	assert_true(jp_retry_wanted(&r, JP_CAUSE_EXIT, 3));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_EXIT, 4));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_TIMEOUT, -1));
	r.on = JP_RETRY_ON_TIMEOUT | JP_RETRY_ON_SIGNAL;
	assert_true(jp_retry_wanted(&r, JP_CAUSE_TIMEOUT, -1));
	assert_true(jp_retry_wanted(&r, JP_CAUSE_SIGNAL, -1));
	assert_true(jp_retry_wanted(&r, JP_CAUSE_MEMORY, -1));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_EXIT, 1));
	r.on = JP_RETRY_ON_FAILURE;
	assert_true(jp_retry_wanted(&r, JP_CAUSE_EXIT, 1));
	assert_true(jp_retry_wanted(&r, JP_CAUSE_SPAWN, -1));
	assert_true(jp_retry_wanted(&r, JP_CAUSE_HANDLER, -1));
	assert_true(jp_retry_wanted(&r, JP_CAUSE_DAEMON_RESTART, -1));
	/* Never: what is not a failure of the job itself. */
	assert_false(jp_retry_wanted(&r, JP_CAUSE_CANCEL, -1));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_DEADLINE, -1));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_DEPENDENCY, -1));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_SHUTDOWN, -1));
	assert_false(jp_retry_wanted(&r, JP_CAUSE_OVERFLOW, -1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_remove_anywhere),
		cmocka_unit_test(test_pop_due),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_wanted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
