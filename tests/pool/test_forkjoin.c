/* tests/pool/test_forkjoin.c: structured parallelism gives exact results: jd_fork2
 * recursive sums (plain tasks, fibers, one worker), jd_parallel_for touching every index
 * exactly once for many sizes and grains (from outside, from a task, from a fiber), and
 * the DAG helper (order of AND gates, OR gates releasing once, cycles refused).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pool/pool.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

static struct jd_pool *make_pool(unsigned workers, enum jd_idle idle)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = workers;
	cfg.idle = idle;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	return p;
}

#define FJ_N 1000000u
#define FJ_LEAF 10000u

struct sum {
	const uint32_t *v;
	size_t lo, hi;
	uint64_t out;
};

static void sum_task(void *arg)
{
	struct sum *s = arg;
	if (s->hi - s->lo <= FJ_LEAF) {
		uint64_t acc = 0;
		for (size_t i = s->lo; i < s->hi; i++)
			acc += s->v[i];
		s->out = acc;
		return;
	}
	size_t mid = s->lo + (s->hi - s->lo) / 2;
	struct sum a = {s->v, s->lo, mid, 0}, b = {s->v, mid, s->hi, 0};
	jd_fork2(sum_task, &a, sum_task, &b);
	s->out = a.out + b.out;
}

static uint32_t *input(uint64_t *want)
{
	uint32_t *v = malloc(FJ_N * sizeof(*v));
	*want = 0;
	for (size_t i = 0; i < FJ_N; i++)
		*want += v[i] = (uint32_t)(i * 2654435761u >> 20);
	return v;
}

static void fork_join(unsigned workers, enum jd_idle idle, unsigned flags)
{
	struct jd_pool *p = make_pool(workers, idle);
	uint64_t want;
	uint32_t *v = input(&want);
	for (int rep = 0; rep < 20; rep++) {
		struct sum root = {v, 0, FJ_N, 0};
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		struct jd_task_spec s = {.fn = sum_task, .arg = &root, .flags = flags, .wg = &wg};
		assert_int_equal(jd_pool_submit(p, &s), 0);
		assert_int_equal(jd_wg_wait(&wg), 0);
		assert_int_equal(root.out, want);
	}
	/* Outside the pool jd_fork2 runs both halves on the caller. */
	struct sum root = {v, 0, FJ_N, 0};
	sum_task(&root);
	assert_int_equal(root.out, want);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(v);
}

static void test_fork2(void **state)
{
	(void)state;
	fork_join(2, JD_IDLE_SLEEP, 0);
	fork_join(2, JD_IDLE_SPIN, 0);
	fork_join(1, JD_IDLE_SLEEP, 0);
	fork_join(2, JD_IDLE_SLEEP, JD_TASK_FIBER);
	fork_join(1, JD_IDLE_SLEEP, JD_TASK_FIBER);
}

struct marks {
	atomic_uchar *hit;
	size_t lo_seen, hi_seen;
	size_t grain;
	atomic_uint bad_piece;
};

static void mark_body(void *ctx, size_t lo, size_t hi)
{
	struct marks *m = ctx;
	if (hi <= lo || hi - lo > m->grain)
		atomic_fetch_add(&m->bad_piece, 1);
	for (size_t i = lo; i < hi; i++)
		atomic_fetch_add(&m->hit[i], 1);
}

static void check_pfor(struct jd_pool *p, size_t begin, size_t end, size_t grain)
{
	struct marks m = {.grain = grain ? grain : 1};
	m.hit = calloc(end + 1, 1);
	atomic_init(&m.bad_piece, 0);
	assert_int_equal(jd_parallel_for(p, begin, end, grain, mark_body, &m), 0);
	for (size_t i = 0; i <= end; i++) {
		unsigned want = i >= begin && i < end;
		if (atomic_load(&m.hit[i]) != want)
			fail_msg("pfor [%zu, %zu) grain %zu: index %zu hit %u times", begin, end,
				 grain, i, (unsigned)atomic_load(&m.hit[i]));
	}
	assert_int_equal(atomic_load(&m.bad_piece), 0);
	free(m.hit);
}

static const size_t sizes[][3] = {
	{0, 0, 1},     {0, 1, 1},	 {5, 6, 100},	{0, 20000, 256}, {3, 20000, 1},
	{0, 99999, 7}, {10, 100000, 1000}, {0, 1000, 0},	{0, 4097, 4096},
};

static void test_parallel_for_outside(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		check_pfor(p, sizes[k][0], sizes[k][1], sizes[k][2]);
	jd_pool_set_idle(p, JD_IDLE_SPIN);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		check_pfor(p, sizes[k][0], sizes[k][1], sizes[k][2]);
	jd_pool_set_idle(p, JD_IDLE_SLEEP);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

struct inner {
	struct jd_pool *p;
};

static void pfor_inside(void *arg)
{
	struct inner *in = arg;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		check_pfor(in->p, sizes[k][0], sizes[k][1], sizes[k][2]);
}

static void test_parallel_for_inside(void **state)
{
	(void)state;
	for (unsigned workers = 1; workers <= 2; workers++) {
		struct jd_pool *p = make_pool(workers, JD_IDLE_SLEEP);
		struct inner in = {p};
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 2);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = pfor_inside, .arg = &in, .wg = &wg});
		jd_pool_submit(p, &(struct jd_task_spec){
					  .fn = pfor_inside, .arg = &in, .flags = JD_TASK_FIBER, .wg = &wg});
		assert_int_equal(jd_wg_wait(&wg), 0);
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	}
}

/* ---- DAG ------------------------------------------------------------------------------ */

struct trace {
	atomic_int seq;
	atomic_int at[16];	/* position in the run order + 1 (0: never ran) */
	atomic_int runs[16];
};

struct dnode {
	struct trace *t;
	int id;
};

static void dag_body(void *arg)
{
	struct dnode *d = arg;
	atomic_fetch_add(&d->t->runs[d->id], 1);
	atomic_store(&d->t->at[d->id], atomic_fetch_add(&d->t->seq, 1) + 1);
}

static int add(struct jd_dag *g, struct trace *t, int id, enum jd_gate gate, unsigned flags)
{
	struct dnode d = {t, id};
	struct jd_task_spec s = {.fn = dag_body, .payload = &d, .payload_len = sizeof(d), .flags = flags};
	int r = jd_dag_add(g, &s, gate);
	assert_int_equal(r, id);
	return r;
}

static void test_dag(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	for (int rep = 0; rep < 200; rep++) {
		/* A -> {B, C, D} -> E -> F, with C on a fiber; plus G = OR(B, C, D). */
		struct trace t = {0};
		struct jd_dag *g;
		assert_int_equal(jd_dag_create(&g, p), 0);
		for (int i = 0; i < 6; i++)
			add(g, &t, i, JD_GATE_AND, i == 2 ? JD_TASK_FIBER : 0);
		add(g, &t, 6, JD_GATE_OR, 0);
		for (int i = 1; i <= 3; i++) {
			assert_int_equal(jd_dag_edge(g, 0, i), 0);
			assert_int_equal(jd_dag_edge(g, i, 4), 0);
			assert_int_equal(jd_dag_edge(g, i, 6), 0);
		}
		assert_int_equal(jd_dag_edge(g, 4, 5), 0);
		assert_int_equal(jd_dag_edge(g, 4, 4), JSCHED_EINVAL);
		assert_int_equal(jd_dag_edge(g, 4, 99), JSCHED_EINVAL);
		assert_int_equal(jd_dag_run(g), 0);
		assert_int_equal(jd_dag_run(g), JSCHED_EINVAL);
		assert_int_equal(jd_dag_wait(g), 0);
		for (int i = 0; i < 7; i++)
			assert_int_equal(atomic_load(&t.runs[i]), 1);
		for (int i = 1; i <= 3; i++) {
			assert_true(atomic_load(&t.at[0]) < atomic_load(&t.at[i]));
			assert_true(atomic_load(&t.at[i]) < atomic_load(&t.at[4]));
		}
		assert_true(atomic_load(&t.at[4]) < atomic_load(&t.at[5]));
		int first = atomic_load(&t.at[1]);
		for (int i = 2; i <= 3; i++)
			if (atomic_load(&t.at[i]) < first)
				first = atomic_load(&t.at[i]);
		assert_true(first < atomic_load(&t.at[6])); /* OR: after at least one */
		jd_dag_destroy(g);
	}
	/* A cycle is refused and nothing runs. */
	struct trace t = {0};
	struct jd_dag *g;
	assert_int_equal(jd_dag_create(&g, p), 0);
	for (int i = 0; i < 4; i++)
		add(g, &t, i, i == 3 ? JD_GATE_OR : JD_GATE_AND, 0);
	jd_dag_edge(g, 0, 1);
	jd_dag_edge(g, 1, 2);
	jd_dag_edge(g, 2, 3);
	jd_dag_edge(g, 3, 1);
	assert_int_equal(jd_dag_run(g), JSCHED_EDEPENDENCY_CYCLE);
	for (int i = 0; i < 4; i++)
		assert_int_equal(atomic_load(&t.runs[i]), 0);
	jd_dag_destroy(g);
	/* An empty graph runs and waits at once. */
	assert_int_equal(jd_dag_create(&g, p), 0);
	assert_int_equal(jd_dag_run(g), 0);
	assert_int_equal(jd_dag_wait(g), 0);
	jd_dag_destroy(g);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* A bigger random graph (past the inline sizes: 200 nodes, up to 12 successors each),
 * edges only forward so it is acyclic, AND and OR gates, some nodes on fibers, waited
 * from outside and from inside a task. */
struct big {
	atomic_int seq;
	atomic_int at[200];
	atomic_int runs[200];
};

struct bnode {
	struct big *b;
	int id;
};

static void big_body(void *arg)
{
	struct bnode *n = arg;
	atomic_fetch_add(&n->b->runs[n->id], 1);
	atomic_store(&n->b->at[n->id], atomic_fetch_add(&n->b->seq, 1) + 1);
}

struct big_run {
	struct jd_pool *p;
	unsigned seed;
};

static void run_big(struct jd_pool *p, unsigned seed)
{
	enum { N = 200 };
	static bool edge[N][N];
	memset(edge, 0, sizeof(edge));
	struct big *b = calloc(1, sizeof(*b));
	struct jd_dag *g;
	assert_int_equal(jd_dag_create(&g, p), 0);
	enum jd_gate gate[N];
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		gate[i] = (seed >> 16) % 3 == 0 ? JD_GATE_OR : JD_GATE_AND;
		struct bnode n = {b, i};
		struct jd_task_spec s = {.fn = big_body, .payload = &n, .payload_len = sizeof(n),
					 .flags = (seed >> 20) % 5 == 0 ? JD_TASK_FIBER : 0};
		assert_int_equal(jd_dag_add(g, &s, gate[i]), i);
	}
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		int fan = (int)((seed >> 16) % 13);
		for (int k = 0; k < fan && i + 1 < N; k++) {
			seed = seed * 1103515245u + 12345u;
			int j = i + 1 + (int)((seed >> 16) % (unsigned)(N - i - 1));
			if (edge[i][j])
				continue;
			edge[i][j] = true;
			assert_int_equal(jd_dag_edge(g, i, j), 0);
		}
	}
	assert_int_equal(jd_dag_run(g), 0);
	assert_int_equal(jd_dag_wait(g), 0);
	for (int j = 0; j < N; j++) {
		assert_int_equal(atomic_load(&b->runs[j]), 1);
		int before = 0, preds = 0;
		for (int i = 0; i < j; i++) {
			if (!edge[i][j])
				continue;
			preds++;
			before += atomic_load(&b->at[i]) < atomic_load(&b->at[j]);
		}
		if (gate[j] == JD_GATE_AND)
			assert_int_equal(before, preds);
		else if (preds)
			assert_true(before >= 1);
	}
	jd_dag_destroy(g);
	free(b);
}

static void big_task(void *arg)
{
	struct big_run *r = arg;
	run_big(r->p, r->seed);
}

static void test_dag_big(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	for (unsigned seed = 1; seed <= 20; seed++)
		run_big(p, seed);
	for (unsigned seed = 21; seed <= 30; seed++) {
		struct big_run r = {p, seed};
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = big_task, .arg = &r,
							 .flags = seed % 2 ? JD_TASK_FIBER : 0, .wg = &wg});
		assert_int_equal(jd_wg_wait(&wg), 0);
	}
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork2),
		cmocka_unit_test(test_parallel_for_outside),
		cmocka_unit_test(test_parallel_for_inside),
		cmocka_unit_test(test_dag),
		cmocka_unit_test(test_dag_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
