/* bench/pool/bench_pool.c: jschedd's worker pool (daemon/pool/pool.h) side by side with
 * oneTBB, row by row (the rows are defined in rows.h).
 *
 * The measuring goes in rounds, one per run (--runs, default 5).  A round first runs the
 * oneTBB side: this program starts tbb_bench (built next to it) as a child with
 * --machine-readable --runs 1 and reads one "key value unit" line per row, so that
 * oneTBB's threads have exited before a jschedd worker starts and the two never compete
 * for the cores.  Then, for each idle policy (spin, then sleep), a fresh pool with the
 * default configuration (one worker per online CPU) runs every row once untimed and once
 * timed.  At the end each row is printed as the median over the rounds, beside oneTBB's
 * median as its baseline.  If tbb_bench cannot be run, the rows have no baseline and a
 * note says why.
 *
 * All measuring happens on the main thread, which is not a worker: it submits from
 * outside and waits from outside, as the daemon's loop thread will.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common/bench.h"
#include "bench/pool/kernels.h"
#include "bench/pool/releaser.h"
#include "bench/pool/rows.h"
#include "daemon/pool/pool.h"
#include "jsched/error.h"

/* parallel-for grain: the most items one body call gets.  jd_parallel_for splits lazily,
 * so a small grain costs little when nobody steals; 256 items of sqrt are ~0.3 us. */
#define PFOR_GRAIN 256

/* The oneTBB figures, by row key. */
struct baseline {
	char name[64];		/* "oneTBB 2021.8"; empty if tbb_bench could not run */
	char why[160];		/* why not, for the note */
	size_t n;
	struct {
		char key[32];
		double value;
	} rows[32];		/* the rows, and the releaser's lateness (late_*) */
};

static int scaled(int n, bool quick)
{
	return quick ? (n / QUICK_DIV > 0 ? n / QUICK_DIV : 1) : n;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_pool: %s failed (%d)\n", what, err);
	exit(1);
}

/* ---- the oneTBB child -------------------------------------------------------------- */

/* The path of tbb_bench: the directory of this executable + "/tbb_bench". */
static int tbb_bench_path(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0)
		return -1;
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	int n = snprintf(buf, size, "%s/tbb_bench", self);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Run tbb_bench and fill *b from its output; on failure b->name stays empty and b->why
 * says what went wrong. */
static void run_tbb(struct baseline *b, int runs, bool quick, unsigned threads)
{
	memset(b, 0, sizeof *b);
	char path[PATH_MAX], runs_s[16], threads_s[16];
	if (tbb_bench_path(path, sizeof path) != 0 || access(path, X_OK) != 0) {
		snprintf(b->why, sizeof b->why, "tbb_bench not found next to bench_pool");
		return;
	}
	snprintf(runs_s, sizeof runs_s, "%d", runs);
	snprintf(threads_s, sizeof threads_s, "%u", threads);
	char *argv[] = {path, "--machine-readable", "--runs", runs_s, "--threads", threads_s,
			quick ? "--quick" : NULL, NULL};

	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(b->why, sizeof b->why, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(b->why, sizeof b->why, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv(path, argv);
		_exit(127);
	}
	close(fds[1]);
	FILE *in = fdopen(fds[0], "r");
	char line[256], name[64];
	while (in && fgets(line, sizeof line, in)) {
		char key[32];
		double v;
		if (sscanf(line, "version %63[^\n]", name) == 1) {
			snprintf(b->name, sizeof b->name, "%s", name);
		} else if (sscanf(line, "%31s %lf", key, &v) == 2 &&
			   b->n < sizeof b->rows / sizeof b->rows[0]) {
			snprintf(b->rows[b->n].key, sizeof b->rows[0].key, "%s", key);
			b->rows[b->n++].value = v;
		}
	}
	if (in)
		fclose(in);
	else
		close(fds[0]);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(b->why, sizeof b->why, "tbb_bench failed (status %d)", status);
		b->name[0] = '\0';
	} else if (!b->name[0]) {
		snprintf(b->why, sizeof b->why, "tbb_bench printed no version line");
	}
}

/* The oneTBB figure for `key`, NAN if there is none. */
static double tbb_value(const struct baseline *b, const char *key)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->rows[i].key, key) == 0)
			return b->rows[i].value;
	return NAN;
}

/* ---- measuring --------------------------------------------------------------------- */

struct ctx {
	struct jd_pool *pool;
	struct releaser *rel;
	bool quick;
	int wait_us;			/* the blocking row's wait */
	double late_mean_us, late_max_us; /* the releaser's lateness in the last row */
	const uint32_t *fj_data;	/* fork-join input */
	double *pfor_out;		/* parallel-for output */
};

typedef double (*run_fn)(struct ctx *c);

static atomic_long ran;

static void count_task(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

/* Exit unless exactly `want` counted tasks have run since the last check_ran: a figure
 * from a wait that returned early would be no figure at all. */
static void check_ran(long want)
{
	/* relaxed: no task runs now, and the wait that just returned ordered their counts */
	long got = atomic_load_explicit(&ran, memory_order_relaxed);
	atomic_store_explicit(&ran, 0, memory_order_relaxed);
	if (got != want) {
		fprintf(stderr, "bench_pool: %ld tasks ran, expected %ld\n", got, want);
		exit(1);
	}
}

/* Row round_trip: submit one empty task, wait for it on its wait group; the median
 * chunk's mean (us). */
static double run_round_trip(struct ctx *c)
{
	int chunks = scaled(ROUND_TRIP_REPS, c->quick) / ROUND_TRIP_CHUNK;
	double v[ROUND_TRIP_REPS / ROUND_TRIP_CHUNK];
	struct jd_wg wg = JD_WG_INIT;
	struct jd_task_spec t = {.fn = count_task, .wg = &wg};
	for (int k = 0; k < chunks; k++) {
		uint64_t t0 = rows_now_ns();
		for (int i = 0; i < ROUND_TRIP_CHUNK; i++) {
			jd_wg_add(&wg, 1);
			int err = jd_pool_submit(c->pool, &t);
			if (err)
				die("jd_pool_submit", err);
			jd_wg_wait(&wg);
			check_ran(1);
		}
		v[k] = (double)(rows_now_ns() - t0) / ROUND_TRIP_CHUNK / 1e3;
	}
	return bench_median(v, (size_t)chunks);
}

/* Row tasks: TASKS_N submits, then one wait (ns per task). */
static double run_tasks(struct ctx *c)
{
	int n = scaled(TASKS_N, c->quick);
	struct jd_wg wg = JD_WG_INIT;
	struct jd_task_spec t = {.fn = count_task, .wg = &wg};
	uint64_t t0 = rows_now_ns();
	jd_wg_add(&wg, n);
	for (int i = 0; i < n; i++) {
		int err = jd_pool_submit(c->pool, &t);
		if (err)
			die("jd_pool_submit", err);
	}
	jd_wg_wait(&wg);
	double ns = (double)(rows_now_ns() - t0) / n;
	check_ran(n);
	return ns;
}

/* Row tasks_batch: the same in batches of TASKS_BATCH (ns per task). */
static double run_tasks_batch(struct ctx *c)
{
	int n = scaled(TASKS_N, c->quick);
	struct jd_wg wg = JD_WG_INIT;
	struct jd_task_spec t[TASKS_BATCH];
	for (int i = 0; i < TASKS_BATCH; i++)
		t[i] = (struct jd_task_spec){.fn = count_task, .wg = &wg};
	uint64_t t0 = rows_now_ns();
	jd_wg_add(&wg, n);
	for (int i = 0; i < n; i += TASKS_BATCH) {
		int k = n - i < TASKS_BATCH ? n - i : TASKS_BATCH;
		int err = jd_pool_submit_batch(c->pool, t, (size_t)k);
		if (err)
			die("jd_pool_submit_batch", err);
	}
	jd_wg_wait(&wg);
	double ns = (double)(rows_now_ns() - t0) / n;
	check_ran(n);
	return ns;
}

struct fj {
	const uint32_t *data;
	size_t lo, hi;
	uint64_t sum;
};

/* The fork-join task: sum [lo, hi), halving with jd_fork2 down to FJ_LEAF elements. */
static void fj_task(void *arg)
{
	struct fj *f = arg;
	if (f->hi - f->lo <= FJ_LEAF) {
		f->sum = kernel_sum(f->data, f->lo, f->hi);
		return;
	}
	size_t mid = f->lo + (f->hi - f->lo) / 2;
	struct fj l = {f->data, f->lo, mid, 0}, r = {f->data, mid, f->hi, 0};
	jd_fork2(fj_task, &l, fj_task, &r);
	f->sum = l.sum + r.sum;
}

/* Row fork_join: submit the root, wait for it (ms). */
static double run_fork_join(struct ctx *c)
{
	size_t n = (size_t)scaled(FJ_N, c->quick);
	int reps = scaled(FJ_REPS, c->quick);
	struct jd_wg wg = JD_WG_INIT;
	uint64_t t0 = rows_now_ns();
	for (int i = 0; i < reps; i++) {
		struct fj root = {c->fj_data, 0, n, 0};
		struct jd_task_spec t = {.fn = fj_task, .arg = &root, .wg = &wg};
		jd_wg_add(&wg, 1);
		int err = jd_pool_submit(c->pool, &t);
		if (err)
			die("jd_pool_submit", err);
		jd_wg_wait(&wg);
		if (root.sum != fj_expected(n)) {
			fprintf(stderr, "bench_pool: fork-join sum %llu, expected %llu\n",
				(unsigned long long)root.sum, (unsigned long long)fj_expected(n));
			exit(1);
		}
	}
	return (double)(rows_now_ns() - t0) / reps / 1e6;
}

static void pfor_body(void *arg, size_t lo, size_t hi)
{
	kernel_sqrt(arg, lo, hi);
}

/* Row parallel_for: one jd_parallel_for over PFOR_N items (ms). */
static double run_parallel_for(struct ctx *c)
{
	int reps = scaled(PFOR_REPS, c->quick);
	uint64_t t0 = rows_now_ns();
	for (int i = 0; i < reps; i++) {
		int err = jd_parallel_for(c->pool, 0, PFOR_N, PFOR_GRAIN, pfor_body, c->pfor_out);
		if (err)
			die("jd_parallel_for", err);
	}
	double ms = (double)(rows_now_ns() - t0) / reps / 1e6;
	if (c->pfor_out[PFOR_N - 1] != sqrt((double)(PFOR_N - 1)))
		die("parallel-for result", 0);
	return ms;
}

struct block_arg {
	struct releaser *rel;
	int wait_us;
};

static void fire_event(void *arg)
{
	jd_event_set(arg);
}

/* A blocking task: a fiber that waits for the releaser to set an event on its own stack
 * (jd_event_set never touches the event once its waiter may have returned). */
static void block_wait_task(void *arg)
{
	const struct block_arg *a = arg;
	struct jd_event ev = JD_EVENT_INIT;
	uint64_t when = rows_now_ns() + (uint64_t)a->wait_us * 1000u;
	if (releaser_after(a->rel, when, fire_event, &ev) != 0)
		die("releaser_after", 0);
	int err = jd_event_wait(&ev);
	if (err)
		die("jd_event_wait", err);
	count_task(NULL);
}

static void block_work_task(void *arg)
{
	(void)arg;
	busy_work(BLOCK_WORK_NS);
	count_task(NULL);
}

/* Row blocking_<us>: BLOCK_BATCHES batches of BLOCK_BATCH tasks, each batch one
 * jd_pool_submit_batch and one wait (ms).  Only the waiting tasks ask for a fiber. */
static double run_blocking(struct ctx *c)
{
	int batches = scaled(BLOCK_BATCHES, c->quick);
	struct block_arg a = {c->rel, c->wait_us};
	struct jd_wg wg = JD_WG_INIT;
	struct jd_task_spec t[BLOCK_BATCH];
	for (int i = 0; i < BLOCK_BATCH; i++) {
		if (i % BLOCK_EVERY == 0)
			t[i] = (struct jd_task_spec){.fn = block_wait_task, .arg = &a,
						     .flags = JD_TASK_FIBER, .wg = &wg};
		else
			t[i] = (struct jd_task_spec){.fn = block_work_task, .wg = &wg};
	}
	uint64_t t0 = rows_now_ns();
	for (int b = 0; b < batches; b++) {
		jd_wg_add(&wg, BLOCK_BATCH);
		int err = jd_pool_submit_batch(c->pool, t, BLOCK_BATCH);
		if (err)
			die("jd_pool_submit_batch", err);
		jd_wg_wait(&wg);
		check_ran(BLOCK_BATCH);
	}
	return (double)(rows_now_ns() - t0) / 1e6;
}

/* One DAG A -> {B, C, D} -> E -> F: build, run, wait, destroy. */
static void dag_once(struct ctx *c)
{
	static const int edges[][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}, {4, 5}};
	struct jd_task_spec t = {.fn = count_task};
	struct jd_dag *d;
	int err = jd_dag_create(&d, c->pool);
	if (err)
		die("jd_dag_create", err);
	int n[6];
	for (int i = 0; i < 6; i++)
		if ((n[i] = jd_dag_add(d, &t, JD_GATE_AND)) < 0)
			die("jd_dag_add", n[i]);
	for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
		if ((err = jd_dag_edge(d, n[edges[e][0]], n[edges[e][1]])) != 0)
			die("jd_dag_edge", err);
	if ((err = jd_dag_run(d)) != 0)
		die("jd_dag_run", err);
	if ((err = jd_dag_wait(d)) != 0)
		die("jd_dag_wait", err);
	jd_dag_destroy(d);
	check_ran(6);
}

/* Row dag: DAG_REPS graphs; the median chunk's mean (us). */
static double run_dag(struct ctx *c)
{
	int chunks = scaled(DAG_REPS, c->quick) / DAG_CHUNK;
	double v[DAG_REPS / DAG_CHUNK];
	for (int k = 0; k < chunks; k++) {
		uint64_t t0 = rows_now_ns();
		for (int r = 0; r < DAG_CHUNK; r++)
			dag_once(c);
		v[k] = (double)(rows_now_ns() - t0) / DAG_CHUNK / 1e3;
	}
	return bench_median(v, (size_t)chunks);
}

/* ---- main -------------------------------------------------------------------------- */

struct row {
	const char *key, *name, *unit;
	run_fn run;
	int wait_us; /* blocking rows only */
};

static const struct row rows[] = {
	{"round_trip", "round trip: submit, run, wait", "us", run_round_trip, 0},
	{"tasks", "100k empty tasks, one submit each", "ns/task", run_tasks, 0},
	{"tasks_batch", "100k empty tasks, batches of 64", "ns/task", run_tasks_batch, 0},
	{"fork_join", "fork-join sum 1M, 10k leaves", "ms", run_fork_join, 0},
	{"parallel_for", "parallel-for 20k sqrt", "ms", run_parallel_for, 0},
	{"blocking_50", "blocking 10x256, 25% wait 50us", "ms", run_blocking, 50},
	{"blocking_600", "blocking 10x256, 25% wait 600us", "ms", run_blocking, 600},
	{"blocking_2000", "blocking 10x256, 25% wait 2000us", "ms", run_blocking, 2000},
	{"dag", "DAG A->{B,C,D}->E->F", "us", run_dag, 0},
};

#define NROWS (sizeof rows / sizeof rows[0])

static const struct {
	enum jd_idle idle;
	const char *name;
} policies[] = {{JD_IDLE_SPIN, "spin"}, {JD_IDLE_SLEEP, "sleep"}};
#define NPOLICIES (sizeof policies / sizeof policies[0])

/* For profiling one row: BENCH_POOL_ONLY=key[,key...] (keys as in rows.h) runs only
 * those rows, only on the pool side, and BENCH_POOL_POLICY=spin|sleep only that policy.
 * Environment rather than options, because the options are the harness's (bench.h). */
static bool row_selected(const char *key)
{
	const char *only = getenv("BENCH_POOL_ONLY");
	if (!only || !*only)
		return true;
	size_t len = strlen(key);
	for (const char *s = only; (s = strstr(s, key)); s += len)
		if ((s == only || s[-1] == ',') && (s[len] == ',' || s[len] == '\0'))
			return true;
	return false;
}

static bool policy_selected(const char *name)
{
	const char *only = getenv("BENCH_POOL_POLICY");
	return !only || !*only || strcmp(only, name) == 0;
}

/* The releaser's lateness per row (blocking rows only): the sum over rounds of each
 * round's mean (divided by the rounds when printed), and the largest. */
struct lateness {
	double sum_mean_us, max_us;
};

/* One round: a fresh pool with idle policy `idle`; every row once untimed, once timed
 * into v[row] (NAN for a row not selected); the releaser's lateness added to lateness[]. */
static void pool_round(struct ctx *c, enum jd_idle idle, unsigned threads, double *v,
		       struct lateness *lateness)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.idle = idle;
	cfg.workers = threads;
	int err = jd_pool_create(&c->pool, &cfg);
	if (err)
		die("jd_pool_create", err);
	if (!(c->rel = releaser_start()))
		die("releaser_start", errno);
	for (size_t i = 0; i < NROWS; i++) {
		v[i] = NAN;
		if (!row_selected(rows[i].key))
			continue;
		c->wait_us = rows[i].wait_us;
		uint64_t fired, mean, max;
		releaser_lateness(c->rel, &fired, &mean, &max);
		rows[i].run(c);
		struct jd_pool_stats s0, s1;
		jd_pool_stats(c->pool, &s0, NULL, 0);
		v[i] = rows[i].run(c);
		jd_pool_stats(c->pool, &s1, NULL, 0);
		if (getenv("BENCH_POOL_ONLY")) /* profiling: the pool's counters of the timed run */
			fprintf(stderr, "bench-pool: %s %s: parks %llu, grace yields %llu, steals %llu\n",
				rows[i].key, idle == JD_IDLE_SPIN ? "spin" : "sleep",
				(unsigned long long)(s1.parks - s0.parks),
				(unsigned long long)(s1.grace_yields - s0.grace_yields),
				(unsigned long long)(s1.steals - s0.steals));
		releaser_lateness(c->rel, &fired, &mean, &max);
		lateness[i].sum_mean_us += (double)mean / 1e3;
		if ((double)max / 1e3 > lateness[i].max_us)
			lateness[i].max_us = (double)max / 1e3;
	}
	releaser_stop(c->rel);
	jd_pool_destroy(c->pool, JD_SHUTDOWN_GRACEFUL);
	c->pool = NULL;
}

/* The median of the finite values among v[0..n) (sorts them to the front). */
static double median_finite(double *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[k++] = v[i];
	return bench_median(v, k);
}

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench-pool", argc, argv);
	bool quick = bench_quick(r);
	size_t runs = (size_t)bench_runs(r);

	/* One worker per online CPU, as jd_pool_create chooses by default; oneTBB gets the
	 * same number of threads. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus > 0 ? (unsigned)cpus : 1;

	size_t fj_n = (size_t)scaled(FJ_N, quick);
	uint32_t *fj_data = malloc(fj_n * sizeof *fj_data);
	double *pfor_out = calloc(PFOR_N, sizeof *pfor_out);
	/* [round][row] for oneTBB, [round][policy][row] for the pool */
	double *tbb_v = malloc(runs * NROWS * sizeof *tbb_v);
	double *pool_v = malloc(runs * NPOLICIES * NROWS * sizeof *pool_v);
	double *col = malloc(runs * sizeof *col);
	if (!fj_data || !pfor_out || !tbb_v || !pool_v || !col)
		die("malloc", JSCHED_ENOMEM);
	if (fj_fill(fj_data, fj_n) != fj_expected(fj_n))
		die("fork-join input", 0);

	/* Rounds, not one block per side: on a shared machine the load drifts over the
	 * minute a run takes, and interleaving makes both sides see the same drift. */
	bool profiling = getenv("BENCH_POOL_ONLY") || getenv("BENCH_POOL_POLICY");
	if (profiling)
		bench_note(r, "BENCH_POOL_ONLY/BENCH_POOL_POLICY set: selected rows, no oneTBB");
	char tbb_name[64] = "";
	struct lateness late[NPOLICIES][NROWS], tbb_late[NROWS];
	memset(late, 0, sizeof late);
	memset(tbb_late, 0, sizeof tbb_late);
	for (size_t k = 0; k < runs; k++) {
		struct baseline tbb = {.name = ""};
		if (!profiling)
			run_tbb(&tbb, 1, quick, threads);
		if (tbb.name[0] && !tbb_name[0])
			snprintf(tbb_name, sizeof tbb_name, "%s", tbb.name);
		else if (!tbb.name[0] && !profiling)
			bench_note(r, "round %zu: no oneTBB figures: %s", k + 1, tbb.why);
		for (size_t i = 0; i < NROWS; i++) {
			tbb_v[k * NROWS + i] = tbb.name[0] ? tbb_value(&tbb, rows[i].key) : NAN;
			if (!rows[i].wait_us || !tbb.name[0])
				continue;
			char key[64];
			snprintf(key, sizeof key, "late_mean_%s", rows[i].key);
			tbb_late[i].sum_mean_us += tbb_value(&tbb, key);
			snprintf(key, sizeof key, "late_max_%s", rows[i].key);
			tbb_late[i].max_us = fmax(tbb_late[i].max_us, tbb_value(&tbb, key));
		}

		struct ctx c = {.quick = quick, .fj_data = fj_data, .pfor_out = pfor_out};
		for (size_t p = 0; p < NPOLICIES; p++) {
			double *v = &pool_v[(k * NPOLICIES + p) * NROWS];
			if (policy_selected(policies[p].name))
				pool_round(&c, policies[p].idle, threads, v, late[p]);
			else
				for (size_t i = 0; i < NROWS; i++)
					v[i] = NAN;
		}
	}

	for (size_t p = 0; p < NPOLICIES; p++) {
		for (size_t i = 0; i < NROWS; i++) {
			if (!row_selected(rows[i].key) || !policy_selected(policies[p].name))
				continue;
			for (size_t k = 0; k < runs; k++)
				col[k] = tbb_v[k * NROWS + i];
			double base = median_finite(col, runs);
			for (size_t k = 0; k < runs; k++)
				col[k] = pool_v[(k * NPOLICIES + p) * NROWS + i];
			bench_row(r, rows[i].name, rows[i].unit, policies[p].name, bench_median(col, runs),
				  tbb_name[0] ? tbb_name : NULL, base);
		}
	}
	for (size_t i = 0; i < NROWS; i++) {
		if (!rows[i].wait_us || !row_selected(rows[i].key))
			continue;
		bench_note(r,
			   "releaser lateness in %s, mean/max us: spin %.1f/%.0f, sleep %.1f/%.0f, "
			   "oneTBB %.1f/%.0f",
			   rows[i].key, late[0][i].sum_mean_us / (double)runs, late[0][i].max_us,
			   late[1][i].sum_mean_us / (double)runs, late[1][i].max_us,
			   tbb_late[i].sum_mean_us / (double)runs, tbb_late[i].max_us);
	}
	bench_note(r, "each run is one round: oneTBB (own process), then a fresh pool per policy; "
		      "every row warmed up once per round");
	bench_note(r, "oneTBB has no batch submit: its batch row is its one-at-a-time figure");
	bench_note(r, "oneTBB's DAG is a tbb::flow::graph of continue_nodes; its blocking rows "
		      "hold the thread (spin 20 us, then a futex)");
	free(col);
	free(pool_v);
	free(tbb_v);
	free(fj_data);
	free(pfor_out);
	return bench_report_finish(r);
}
