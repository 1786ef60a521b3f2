/* daemon/pool/pool_demo.c: a tour of the pool's API in one program ($(B)/bin/pool_demo;
 * `make run` starts jschedd, not this).
 *
 * Starts a pool, runs a fork-join sum, a parallel-for, a few fibers that sleep on the
 * pool's timer while the workers keep computing, and a small DAG, then prints each result
 * and the pool's counters.  Exits 0 when every result is right.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/pool/pool.h"
#include "jsched_version.h"

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

static void sqrt_body(void *ctx, size_t lo, size_t hi)
{
	double *out = ctx;
	for (size_t i = lo; i < hi; i++)
		out[i] = sqrt((double)i);
}

static void sleeper(void *arg)
{
	int *ok = arg;
	*ok = jd_in_fiber() && jd_sleep(2000000, NULL) == 0; /* 2 ms, suspended */
}

static int order[6], norder;
static void dag_node(void *arg)
{
	order[__atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST)] = (int)(intptr_t)arg;
}

int main(void)
{
	printf("%s\npool demo\n", JSCHED_VERSION_LINE);
	struct jd_pool *p;
	int rc = jd_pool_create(&p, NULL);
	if (rc) {
		fprintf(stderr, "pool_demo: jd_pool_create: %d\n", rc);
		return 1;
	}
	int bad = 0;

	uint32_t *v = malloc(FJ_N * sizeof(*v));
	uint64_t want = 0;
	for (size_t i = 0; i < FJ_N; i++)
		want += v[i] = (uint32_t)(i % 1000);
	struct sum root = {v, 0, FJ_N, 0};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = sum_task, .arg = &root, .wg = &wg});
	jd_wg_wait(&wg);
	printf("fork-join sum of %u: %" PRIu64 " (%s)\n", FJ_N, root.out,
	       root.out == want ? "ok" : "WRONG");
	bad += root.out != want;
	free(v);

	double *out = calloc(20000, sizeof(*out));
	jd_parallel_for(p, 0, 20000, 256, sqrt_body, out);
	int pf_ok = out[19999] == sqrt(19999.0) && out[12345] == sqrt(12345.0);
	printf("parallel-for sqrt of 20000: out[19999] = %.6f (%s)\n", out[19999],
	       pf_ok ? "ok" : "WRONG");
	bad += !pf_ok;
	free(out);

	int ok[8] = {0};
	jd_wg_add(&wg, 8);
	for (int i = 0; i < 8; i++)
		jd_pool_submit(p, &(struct jd_task_spec){
					  .fn = sleeper, .arg = &ok[i], .flags = JD_TASK_FIBER, .wg = &wg});
	jd_wg_wait(&wg);
	int nok = 0;
	for (int i = 0; i < 8; i++)
		nok += ok[i];
	printf("fibers that slept 2 ms suspended: %d of 8 (%s)\n", nok, nok == 8 ? "ok" : "WRONG");
	bad += nok != 8;

	struct jd_dag *d;
	jd_dag_create(&d, p);
	int id[6];
	for (int i = 0; i < 6; i++)
		id[i] = jd_dag_add(d, &(struct jd_task_spec){.fn = dag_node, .arg = (void *)(intptr_t)i},
				   JD_GATE_AND);
	jd_dag_edge(d, id[0], id[1]);
	jd_dag_edge(d, id[0], id[2]);
	jd_dag_edge(d, id[0], id[3]);
	for (int i = 1; i <= 3; i++)
		jd_dag_edge(d, id[i], id[4]);
	jd_dag_edge(d, id[4], id[5]);
	jd_dag_run(d);
	jd_dag_wait(d);
	jd_dag_destroy(d);
	int dag_ok = norder == 6 && order[0] == 0 && order[4] == 4 && order[5] == 5;
	printf("DAG A -> {B,C,D} -> E -> F: order %d %d %d %d %d %d (%s)\n", order[0], order[1],
	       order[2], order[3], order[4], order[5], dag_ok ? "ok" : "WRONG");
	bad += !dag_ok;

	struct jd_pool_stats st;
	struct jd_worker_stats ws[64];
	int nw = jd_pool_stats(p, &st, ws, 64);
	printf("\n%-8s %10s %8s %8s %12s %8s\n", "worker", "tasks", "steals", "parks", "busy ms",
	       "fibers");
	for (int i = 0; i < nw && i < 64; i++)
		printf("%-8d %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12.3f %8u\n", i, ws[i].tasks_run,
		       ws[i].steals, ws[i].parks, (double)ws[i].busy_ns / 1e6, ws[i].fibers_in_use);
	printf("fibers: %u standard, %u large; in use %u, suspended %u; exhausted %" PRIu64 "\n",
	       st.fibers, st.large_fibers, st.fibers_in_use, st.fibers_suspended,
	       st.fiber_exhausted);
	jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL);
	printf("%s\n", bad ? "FAILED" : "all ok");
	return bad ? 1 : 0;
}
