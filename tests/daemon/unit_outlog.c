/* tests/daemon/unit_outlog.c: a command's output in memory (daemon/core/outlog.c): the
 * whole of a stream within its limit, its beginning and end past it with the marker
 * between, both streams in arrival order, gaps from recovery, where a follower starts
 * (seek) and where the last N lines begin. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/outlog.h"

static char *flat(const struct jd_outlog *l, unsigned s, size_t *n)
{
	unsigned char *d;

	assert_int_equal(jd_outlog_flat(l, s, &d, n), 0);
	return (char *)d;
}

static void test_within_limit(void **state)
{
	struct jd_outlog l;
	size_t n;
	char *d;

	(void)state;
	jd_outlog_init(&l, 10);
	assert_int_equal(jd_outlog_add(&l, 0, "0123", 4), 0);
	assert_int_equal(jd_outlog_add(&l, 1, "e", 1), 0);
	assert_int_equal(jd_outlog_add(&l, 0, "456789", 6), 0);
	d = flat(&l, 0, &n);
	assert_string_equal(d, "0123456789");
	assert_false(jd_outlog_truncated(&l, 0));
	free(d);
	d = flat(&l, 1, &n);
	assert_string_equal(d, "e");
	free(d);
	assert_int_equal(l.seq, 11);
	jd_outlog_clear(&l);
}

static void test_begin_and_end(void **state)
{
	char want[20000], got_mark[64];
	struct jd_outlog l;
	size_t n, k = 0;
	char *d;

	(void)state;
	jd_outlog_init(&l, 1000);
	for (int i = 0; i < 3000; i++) {
		char line[16];
		int m = snprintf(line, sizeof(line), "%d\n", i);

		memcpy(want + k, line, (size_t)m);
		k += (size_t)m;
		assert_int_equal(jd_outlog_add(&l, 0, line, (size_t)m), 0);
		/* stderr in between, never over its limit */
		if (i % 1000 == 0)
			assert_int_equal(jd_outlog_add(&l, 1, "!", 1), 0);
	}
	assert_true(jd_outlog_truncated(&l, 0));
	assert_false(jd_outlog_truncated(&l, 1));
	assert_int_equal(l.kept[0], 1000);
	d = flat(&l, 0, &n);
	jd_outlog_marker(k - 1000, got_mark, sizeof(got_mark));
	assert_int_equal(n, 1000 + strlen(got_mark));
	assert_memory_equal(d, want, 500);
	assert_memory_equal(d + 500, got_mark, strlen(got_mark));
	assert_memory_equal(d + 500 + strlen(got_mark), want + k - 500, 500);
	free(d);
	/* one write larger than the whole limit */
	jd_outlog_clear(&l);
	{
		char big[5000];

		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (char)('a' + i % 26);
		assert_int_equal(jd_outlog_add(&l, 1, big, sizeof(big)), 0);
		d = flat(&l, 1, &n);
		assert_memory_equal(d, big, 500);
		assert_memory_equal(d + n - 500, big + sizeof(big) - 500, 500);
		free(d);
	}
	jd_outlog_clear(&l);
}

/* The arrival order across both streams, and a follower's start. */
static void test_arrival_order_and_seek(void **state)
{
	struct jd_outlog l;
	const struct jd_out_chunk *c;
	uint64_t from[2] = {0, 0};
	char merged[64];
	size_t n = 0;

	(void)state;
	jd_outlog_init(&l, 1 << 20);
	jd_outlog_add(&l, 0, "a1 ", 3);
	jd_outlog_add(&l, 1, "b1 ", 3);
	jd_outlog_add(&l, 0, "a2 ", 3);
	jd_outlog_add(&l, 1, "b2 ", 3);
	for (c = l.first; c; c = c->next) {
		memcpy(merged + n, c->data + c->skip, c->len);
		n += c->len;
	}
	merged[n] = 0;
	assert_string_equal(merged, "a1 b1 a2 b2 ");
	/* stdout only, from its offset 3: "a2 " */
	from[0] = 3;
	c = jd_outlog_seek(&l, 1, from);
	assert_non_null(c);
	assert_int_equal(c->stream, 0);
	assert_int_equal(c->off, 3);
	/* both, stdout from 3, stderr from 3: the first is "a2 " (seq 6) */
	from[1] = 3;
	c = jd_outlog_seek(&l, 3, from);
	assert_int_equal(c->seq, 6);
	from[0] = 6;
	c = jd_outlog_seek(&l, 3, from);
	assert_int_equal(c->stream, 1);
	from[1] = 6;
	assert_null(jd_outlog_seek(&l, 3, from));
	jd_outlog_clear(&l);
}

static void test_tail_lines(void **state)
{
	struct jd_outlog l;
	uint64_t from[2];

	(void)state;
	jd_outlog_init(&l, 1 << 20);
	jd_outlog_add(&l, 0, "one\ntwo\n", 8);
	jd_outlog_add(&l, 1, "ERR\n", 4);
	jd_outlog_add(&l, 0, "three\n", 6);
	/* last 2 lines of both: "ERR\n" "three\n" */
	jd_outlog_tail_start(&l, 3, 2, from);
	assert_int_equal(from[0], 8);
	assert_int_equal(from[1], 0);
	/* last 2 of stdout: "two\n" "three\n" */
	jd_outlog_tail_start(&l, 1, 2, from);
	assert_int_equal(from[0], 4);
	/* more lines than there are: everything */
	jd_outlog_tail_start(&l, 3, 100, from);
	assert_int_equal(from[0], 0);
	assert_int_equal(from[1], 0);
	/* 0 lines: only what comes next */
	jd_outlog_tail_start(&l, 3, 0, from);
	assert_int_equal(from[0], 14);
	assert_int_equal(from[1], 4);
	/* a last line without its newline counts as one */
	jd_outlog_add(&l, 0, "four", 4);
	jd_outlog_tail_start(&l, 1, 1, from);
	assert_int_equal(from[0], 14);
	jd_outlog_clear(&l);
}

/* Recovery: records with gaps between them (bytes a crash lost) show the marker. */
static void test_gaps(void **state)
{
	struct jd_outlog l;
	char mark[64];
	size_t n;
	char *d;

	(void)state;
	jd_outlog_init(&l, 1 << 20);
	assert_int_equal(jd_outlog_add_at(&l, 0, 0, 0, "abc", 3), 0);
	assert_int_equal(jd_outlog_add_at(&l, 0, 10, 10, "xyz", 3), 0);
	d = flat(&l, 0, &n);
	jd_outlog_marker(7, mark, sizeof(mark));
	assert_int_equal(n, 6 + strlen(mark));
	assert_memory_equal(d, "abc", 3);
	assert_memory_equal(d + 3, mark, strlen(mark));
	assert_memory_equal(d + 3 + strlen(mark), "xyz", 3);
	assert_true(jd_outlog_truncated(&l, 0));
	free(d);
	jd_outlog_clear(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within_limit),
		cmocka_unit_test(test_begin_and_end),
		cmocka_unit_test(test_arrival_order_and_seek),
		cmocka_unit_test(test_tail_lines),
		cmocka_unit_test(test_gaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
