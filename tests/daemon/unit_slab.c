/* unit_slab.c: the job table's record slab (daemon/core/slab.c): records are zeroed,
 * aligned, distinct and keep what is written in them under any order of allocations and
 * frees; a page left with no record is kept for the next records (a count that goes up
 * and down across pages maps none again) until a trim gives it back (the kernel no longer
 * maps it), all but the number asked to keep; a freed record is handed out again first;
 * sizes that do not fit are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/core/slab.h"
#include "jsched/error.h"
#include "tests/common/rnd.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNIT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UNIT_ASAN)
#define UNIT_ASAN 1
#endif

/* The size of the job table's run part, about (what the slab is for). */
#define SIZE 344

struct rec {
	uint64_t id;
	unsigned char fill[SIZE - sizeof(uint64_t)];
};

static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	return jtc_xorshift(&x);
}

static void *page_of(const void *p)
{
	return (void *)((uintptr_t)p & ~(uintptr_t)(JD_SLAB_PAGE - 1));
}

#ifndef UNIT_ASAN
/* mapped: is the page at pg mapped in this process? (mincore fails with ENOMEM on an
 * address nothing maps.)  Not under ASan, whose build of the slab takes its pages from
 * aligned_alloc. */
static int mapped(void *pg)
{
	unsigned char v[JD_SLAB_PAGE / 4096 + 1];

	if (mincore(pg, JD_SLAB_PAGE, v) == 0)
		return 1;
	assert_int_equal(errno, ENOMEM);
	return 0;
}
#endif

static void fill(struct rec *r, uint64_t id)
{
	r->id = id;
	memset(r->fill, (int)(id & 0xff), sizeof(r->fill));
}

static void check(const struct rec *r, uint64_t id)
{
	assert_int_equal(r->id, id);
	for (size_t i = 0; i < sizeof(r->fill); i++)
		assert_int_equal(r->fill[i], (unsigned char)(id & 0xff));
}

static void test_sizes(void **state)
{
	struct jd_slab s;

	(void)state;
	assert_int_equal(jd_slab_init(&s, 0), JSCHED_EINVAL);
	assert_int_equal(jd_slab_init(&s, JD_SLAB_PAGE / 4 + 1), JSCHED_EINVAL);
	assert_int_equal(jd_slab_init(&s, 1), 0);
	assert_int_equal(s.size, 16);
	assert_int_equal(jd_slab_init(&s, SIZE), 0);
	assert_int_equal(s.size % 16, 0);
	assert_true(s.size >= SIZE && s.size < SIZE + 16);
	assert_true(s.per_page > 100 && (size_t)s.per_page * s.size <= JD_SLAB_PAGE);
	assert_int_equal(s.pages, 0); /* nothing mapped before the first record */
	jd_slab_destroy(&s);
}

/* A FIFO drain, as a flood of jobs ends: each page is empty as its last record goes, and
 * the trim unmaps them. */
static void test_drain_gives_back(void **state)
{
	struct jd_slab s;
	const size_t npages = 12;

	(void)state;
	assert_int_equal(jd_slab_init(&s, sizeof(struct rec)), 0);
	size_t n = npages * s.per_page;
	struct rec **v = calloc(n, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(v[i] = jd_slab_alloc(&s));
		assert_int_equal((uintptr_t)v[i] % 16, 0);
		for (size_t k = 0; k < sizeof(struct rec); k++) /* zeroed */
			assert_int_equal(((unsigned char *)v[i])[k], 0);
		fill(v[i], i + 1);
	}
	assert_int_equal(s.pages, npages);
	assert_int_equal(s.used, n);
	for (size_t i = 0; i < n; i++)
		check(v[i], i + 1);
	for (size_t p = 0; p < npages; p++) {
		void *pg = page_of(v[p * s.per_page]);

		for (size_t i = 0; i < s.per_page; i++) {
			assert_ptr_equal(page_of(v[p * s.per_page + i]), pg);
			jd_slab_free(v[p * s.per_page + i]);
		}
		assert_int_equal(s.n_empty, p + 1);
		assert_int_equal(s.pages, npages);
	}
	assert_int_equal(s.used, 0);
	/* Refilled from the kept pages: nothing mapped. */
	for (size_t i = 0; i < 3 * s.per_page; i++)
		assert_non_null(v[i] = jd_slab_alloc(&s));
	assert_int_equal(s.maps, npages);
	assert_int_equal(s.n_empty, npages - 3);
	for (size_t i = 0; i < 3 * s.per_page; i++)
		jd_slab_free(v[i]);
	assert_int_equal(jd_slab_trim(&s, 2), npages - 2);
	assert_int_equal(s.pages, 2);
	assert_int_equal(s.n_empty, 2);
	assert_int_equal(jd_slab_trim(&s, 2), 0);
#ifndef UNIT_ASAN
	/* The two kept are the two emptied last (the pages of v[2 * per_page] and v[per_page]);
	 * v[0]'s, emptied before them, is gone, as are the original pages 3 to npages - 4
	 * (pages npages - 3 and on are the refilled ones, v[0..3 * per_page) again). */
	assert_int_equal(mapped(page_of(v[2 * s.per_page])), 1);
	assert_int_equal(mapped(page_of(v[s.per_page])), 1);
	assert_int_equal(mapped(page_of(v[0])), 0);
	for (size_t p = 3; p + 3 < npages; p++)
		assert_int_equal(mapped(page_of(v[p * s.per_page])), 0);
#endif
	jd_slab_free(NULL);
	jd_slab_destroy(&s);
	assert_int_equal(s.pages, 0);
	free(v);
}

/* Up and down across a page's edge: the kept page takes it, nothing is mapped again. */
static void test_spare(void **state)
{
	struct jd_slab s;

	(void)state;
	assert_int_equal(jd_slab_init(&s, sizeof(struct rec)), 0);
	struct rec **v = calloc(s.per_page, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < s.per_page; i++)
		assert_non_null(v[i] = jd_slab_alloc(&s));
	assert_int_equal(s.maps, 1);
	for (int round = 0; round < 1000; round++) {
		struct rec *r = jd_slab_alloc(&s);

		assert_non_null(r);
		assert_ptr_not_equal(page_of(r), page_of(v[0]));
		fill(r, 7);
		jd_slab_free(r);
	}
	assert_int_equal(s.maps, 2);
	assert_int_equal(s.unmaps, 0);
	/* A record freed from the full page is the next handed out, zeroed again. */
	fill(v[5], 5);
	jd_slab_free(v[5]);
	struct rec *again = jd_slab_alloc(&s);
	assert_ptr_equal(again, v[5]);
	assert_int_equal(again->id, 0);
	for (size_t i = 0; i < s.per_page; i++)
		jd_slab_free(v[i]);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.n_empty, 2);
	assert_int_equal(jd_slab_trim(&s, 0), 2);
	assert_int_equal(s.pages, 0);
	jd_slab_destroy(&s);
	free(v);
}

/* Any order: 200,000 random allocations and frees against a list of the live ones; each
 * keeps what was written in it, and when all are gone a trim leaves the one page kept. */
static void test_random(void **state)
{
	struct jd_slab s;
	enum { CAP = 5000 };
	struct rec **live = calloc(CAP, sizeof(*live));
	uint64_t *ids = calloc(CAP, sizeof(*ids));
	size_t n = 0;
	uint64_t next = 1;

	(void)state;
	assert_non_null(live);
	assert_non_null(ids);
	assert_int_equal(jd_slab_init(&s, sizeof(struct rec)), 0);
	for (int op = 0; op < 200000; op++) {
		/* drift the live count up and down over thousands, across many pages */
		int grow = (op / 20000) % 2 == 0;
		if (n < CAP && (n == 0 || rnd() % 100 < (grow ? 65u : 35u))) {
			struct rec *r = jd_slab_alloc(&s);

			assert_non_null(r);
			assert_int_equal(r->id, 0);
			fill(r, next);
			live[n] = r;
			ids[n++] = next++;
		} else {
			size_t k = (size_t)(rnd() % n);

			check(live[k], ids[k]);
			jd_slab_free(live[k]);
			live[k] = live[--n];
			ids[k] = ids[n];
		}
		assert_int_equal(s.used, n);
		assert_true(s.pages >= (n + s.per_page - 1) / s.per_page);
	}
	for (size_t k = 0; k < n; k++)
		check(live[k], ids[k]);
	while (n)
		jd_slab_free(live[--n]);
	assert_int_equal(s.n_empty, s.pages);
	jd_slab_trim(&s, 1);
	assert_int_equal(s.pages, 1);
	assert_int_equal(s.maps - s.unmaps, 1);
	jd_slab_destroy(&s);
	free(live);
	free(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_drain_gives_back),
		cmocka_unit_test(test_spare),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
