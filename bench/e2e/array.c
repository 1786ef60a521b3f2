/* bench/e2e/array.c: part 9, job arrays: one submit of a 100,000-element array beside the
 * same work as 100 batches of 1,000 single jobs (pipelined, 4 in flight: the fastest way
 * the protocol had before arrays), in the same run, alternated.
 *
 * Rows: time from the first submit to the last job final, for noop calls (100,000) and for
 * commands (`true`, 2,000 against 2 batches of 1,000); and the daemon's memory: the peak
 * resident size (VmHWM) above what it held before the work, each variant in a daemon of
 * its own so that one's peak is not the other's.  Both keep every result until it has been
 * read (retention.jobs 1,000,000): the array holds one spec and 32 bytes per element once
 * an element has ended; the batches hold a retained job (and, for commands, its copied
 * spec) per id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/e2e/e2e.h"

/* hwm_kib: the VmHWM (peak resident size) of pid in KiB, or -1. */
static long hwm_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

struct outcome {
	double secs;
	double mib;	/* peak resident size above the start's */
};

/* run_one: n jobs of spec, as one array (indices "1-n") or as batches of `batch`, in a
 * daemon of their own. */
static struct jsched_spec *make_spec(bool exec)
{
	const char *argv[] = {"true", NULL};
	struct jsched_spec *s = NULL;

	if ((exec ? jsched_spec_exec(argv, &s) : jsched_spec_call("noop", NULL, &s)) < 0)
		e2e_die("out of memory");
	return s;
}

static struct outcome run_one(bool exec, size_t n, bool array, size_t batch)
{
	struct jsched_spec *spec = make_spec(exec);
	struct e2e_daemon d;
	struct jsched_conn *c;
	struct outcome o;
	long rss0;
	uint64_t t0;

	/* No journal: what is measured is the table.  Retention keeps every result until it
	 * has been waited for (the batches' waits come after their last submit). */
	e2e_daemon_start(&d, "\"journal\": {\"sync\": \"off\"}, \"limits\": {\"array_elements\": 1000000}, "
			     "\"retention\": {\"jobs\": 1000000}, "
			     "\"clients\": {\"bench\": {\"max_queued\": 1000000}}");
	c = e2e_connect(&d, "bench");
	rss0 = e2e_rss_kib(d.pid);
	t0 = bench_now_ns();
	if (array) {
		struct jsched_spec *a = spec;
		struct jsched_result *res = NULL;
		char idx[32];
		uint64_t id;
		int r;

		snprintf(idx, sizeof(idx), "1-%zu", n);
		if (!a || jsched_spec_set_array(a, idx) < 0 || (r = jsched_submit(c, a, &id)) < 0 ||
		    (r = jsched_wait(c, id, -1, &res)) < 0 || res->state != JSCHED_STATE_SUCCEEDED)
			e2e_die("array of %zu: %s", n, jsched_error_message(c));
		jsched_result_free(res);
	} else {
		uint64_t *ids = malloc(n * sizeof(*ids));

		if (!ids)
			e2e_die("out of memory");
		e2e_submit_pipelined(c, spec, n, batch, 4, ids);
		e2e_wait_ids(c, ids, n);
		free(ids);
	}
	o.secs = (double)(bench_now_ns() - t0) / 1e9;
	jsched_spec_free(spec);
	o.mib = (double)(hwm_kib(d.pid) - rss0) / 1024.0;
	jsched_close(c);
	e2e_daemon_stop(&d);
	return o;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* compare: the array and the batches, alternated, runs times each; four rows. */
static void compare(struct e2e *e, const char *what, bool exec, size_t n, size_t batch)
{
	double at[8], bt[8], am[8], bm[8];
	int runs = e->runs_long < 8 ? e->runs_long : 8;
	char name[160], base[160];

	for (int i = 0; i < runs; i++) {
		struct outcome a = run_one(exec, n, true, batch), b = run_one(exec, n, false, batch);

		at[i] = a.secs;
		am[i] = a.mib;
		bt[i] = b.secs;
		bm[i] = b.mib;
	}
	snprintf(name, sizeof(name), "array of %zu %s: submit to all final", n, what);
	snprintf(base, sizeof(base), "%zu batches of %zu", n / batch, batch);
	bench_row(e->rep, name, "s", NULL, median(at, runs), base, median(bt, runs));
	snprintf(name, sizeof(name), "array of %zu %s: daemon peak RSS growth", n, what);
	bench_row(e->rep, name, "MiB", NULL, median(am, runs), base, median(bm, runs));
}

void e2e_array(struct e2e *e)
{
	size_t calls = e->quick ? 10000 : 100000, cmds = e->quick ? 200 : 2000;

	compare(e, "noop calls", false, calls, calls / 100);
	compare(e, "commands (true)", true, cmds, cmds / 2);
}
