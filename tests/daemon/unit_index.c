/* tests/daemon/unit_index.c: the job table's id index (daemon/core/jobs_index.c) against a
 * plain scan: jobs put in shuffled order (as a journal snapshot replays them) and in
 * order, states moved, jobs removed, and every walk compared with the scan's answer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "daemon/core/jobs.h"
#include "daemon/core/jobs_index.h"

enum { N = 5000 };

static struct jd_job jobs[N];
static bool in[N];

struct got {
	uint64_t ids[N];
	size_t n, max;
};

static bool got_keep(struct jd_job *j, void *arg)
{
	struct got *g = arg;

	g->ids[g->n++] = j->id;
	return g->n < g->max;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* check: walks from several places with several masks give what a scan gives. */
static void check(const struct jd_idx *x, uint32_t *seed)
{
	static struct got g;

	for (int q = 0; q < 200; q++) {
		uint64_t after = rnd(seed) % (N + 2);
		unsigned mask = rnd(seed) & 0xffu;
		size_t max = 1 + rnd(seed) % 300, n = 0;

		g.n = 0;
		g.max = max;
		jd_idx_walk(x, after, mask, got_keep, &g);
		for (size_t i = 0; i < N && n < max; i++)
			if (in[i] && jobs[i].id > after && (mask & (1u << jobs[i].state))) {
				assert_true(n < g.n);
				assert_int_equal(g.ids[n], jobs[i].id);
				n++;
			}
		assert_int_equal(g.n, n);
	}
}

static void run(bool shuffled)
{
	struct jd_idx x = {.pos_off = offsetof(struct jd_job, ipos_all)};
	size_t order[N];
	uint32_t seed = shuffled ? 12345u : 777u;
	size_t count = 0;

	memset(jobs, 0, sizeof(jobs));
	memset(in, 0, sizeof(in));
	for (size_t i = 0; i < N; i++) {
		order[i] = i;
		jobs[i].id = i + 1;
		jobs[i].state = (enum jd_state)(rnd(&seed) % JD_NSTATES);
	}
	for (size_t i = N - 1; shuffled && i > 0; i--) {
		size_t k = rnd(&seed) % (i + 1), t = order[i];

		order[i] = order[k];
		order[k] = t;
	}
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(jd_idx_add(&x, &jobs[order[i]]), 0);
		in[order[i]] = true;
		if (i % 1000 == 999)
			check(&x, &seed);
	}
	assert_int_equal(x.count, N);
	check(&x, &seed);
	/* States move, jobs leave (in bursts, as retention forgets), some come back. */
	for (int round = 0; round < 20; round++) {
		for (int k = 0; k < 300; k++) {
			size_t i = rnd(&seed) % N;
			unsigned to = rnd(&seed) % JD_NSTATES;

			if (!in[i])
				continue;
			jd_idx_move(&jobs[i].ipos_all, jobs[i].state, to);
			jobs[i].state = (enum jd_state)to;
		}
		for (int k = 0; k < 400; k++) {
			size_t i = (size_t)(round * 250 + k) % N;

			if (in[i]) {
				jd_idx_remove(&x, &jobs[i]);
				in[i] = false;
			}
		}
		for (int k = 0; k < 100; k++) {
			size_t i = rnd(&seed) % N;

			if (!in[i]) {
				assert_int_equal(jd_idx_add(&x, &jobs[i]), 0);
				in[i] = true;
			}
		}
		check(&x, &seed);
	}
	for (size_t i = 0; i < N; i++)
		count += in[i];
	assert_int_equal(x.count, count);
	for (size_t i = 0; i < N; i++)
		if (in[i])
			jd_idx_remove(&x, &jobs[i]);
	assert_int_equal(x.count, 0);
	assert_int_equal(x.n, 0);
	jd_idx_free(&x);
}

static void test_in_order(void **state)
{
	(void)state;
	run(false);
}

static void test_shuffled(void **state)
{
	(void)state;
	run(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_shuffled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
