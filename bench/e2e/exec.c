/* bench/e2e/exec.c: part 3, commands: 2,000 /bin/true exec jobs end to end, in jobs/s,
 * beside what a user runs instead, in the same run, N = the daemon's workers (the CPUs):
 *
 *   - raw posix_spawn: N children at a time, the next spawned as one is reaped (the floor:
 *     no server, no queue, no capture);
 *   - xargs -P N -n 1 /bin/true, fed 2,000 lines;
 *   - task-spooler: tsp -S N, then one `tsp /bin/true` process per job (that is how it is
 *     used), the last queued with -N N so that `tsp -w` on it returns only once every
 *     earlier job has ended; its own TS_SOCKET and TMPDIR (output files) in a temp folder;
 *   - nq: one `nq /bin/true` per job (nq runs its queue one job at a time: no -P), then
 *     `nq -w`; NQDIR in a temp folder.
 * jschedd: 2,000 exec specs (/bin/true, empty environment) in batches of 500, 4 in flight,
 * then wait for all; the daemon captures each job's (empty) output.  Twice: with the
 * default process cap (64: more processes at once than the floor starts), and with
 * exec.max_processes = N, the same parallelism as the floor (a second daemon, idle while
 * the first runs).
 *
 * And the cost of one command-line call: `jsched submit -- /bin/true` (the job is queued,
 * the tool does not wait; it sends its environment and working directory, as by default)
 * and `jsched submit --fn noop` (no command for the daemon to start meanwhile) against
 * `tsp /bin/true`, each spawned and reaped one at a time, in ms per call; and the calls
 * that wait for their job to end: `jsched submit --wait -- /bin/true` and `jsched submit
 * --wait --fn noop` against `tsp -f /bin/true` (task-spooler's foreground mode: queued,
 * run, and waited for); and `jsched submit --wait -- /bin/true` against `tsp -f` once more
 * with the calls 50 ms apart (the gaps not counted), since a user's call usually comes
 * after a quiet spell, which the back-to-back calls never have.  And the counts of the calls
 * that wait (getrusage of the children, around each row's calls): CPU and minor page faults
 * of the tool's process beside tsp -f's client (which runs the job itself: included), and
 * of `jsched submit --wait --fn noop` beside a run of /bin/true (a program's start and exit).
 *
 * Exec jobs came to the daemon after this benchmark: when the daemon answers the first
 * exec submit with not_supported, the jschedd exec rows (and the exec CLI row) are left
 * out with a note, and the baselines are still measured.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

static char tmp[64];

static void rm_rf(const char *path)
{
	char *argv[] = {(char *)(uintptr_t)"/bin/rm", (char *)(uintptr_t)"-rf", (char *)(uintptr_t)path, NULL};

	e2e_run_ok(argv, NULL, "rm -rf");
}

static double raw_spawn(size_t n, unsigned par)
{
	char *argv[] = {(char *)(uintptr_t)"/bin/true", NULL};
	size_t started = 0, done = 0;
	pid_t pids[64] = {0};
	uint64_t t0 = bench_now_ns();

	if (par > 64)
		par = 64;
	while (done < n) {
		for (unsigned i = 0; i < par && started < n; i++)
			if (pids[i] == 0) {
				pids[i] = e2e_spawn(argv, NULL, false);
				started++;
			}
		int status;
		pid_t pid = wait(&status);
		if (pid < 0)
			e2e_die("wait: %s", strerror(errno));
		unsigned i = 0;
		while (i < par && pids[i] != pid)
			i++;
		if (i == par)
			continue; /* an orphan reparented to us (bench.c's subreaper), not ours */
		pids[i] = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			e2e_die("/bin/true failed");
		done++;
	}
	return (double)n / ((double)(bench_now_ns() - t0) / 1e9);
}

static double xargs_rate(size_t n, unsigned par)
{
	char file[128], cmd[256];

	snprintf(file, sizeof(file), "%s/lines", tmp);
	FILE *f = fopen(file, "w");
	if (!f)
		e2e_die("%s: %s", file, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%zu\n", i);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "exec /usr/bin/xargs -P %u -n 1 /bin/true < %s", par, file);
	char *argv[] = {(char *)(uintptr_t)"/bin/sh", (char *)(uintptr_t)"-c", cmd, NULL};
	uint64_t t0 = bench_now_ns();
	e2e_run_ok(argv, NULL, "xargs");
	return (double)n / ((double)(bench_now_ns() - t0) / 1e9);
}

/* The environment that points task-spooler at its own socket and output folder. */
static char ts_socket[160], ts_tmpdir[160];
static char *ts_env[] = {ts_socket, ts_tmpdir, NULL};

static void tsp(const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {(char *)(uintptr_t)"/usr/bin/tsp", (char *)(uintptr_t)a1, (char *)(uintptr_t)a2,
			(char *)(uintptr_t)a3, NULL};

	e2e_run_ok(argv, ts_env, "tsp");
}

/* If the benchmark fails midway: stop the task-spooler server, which is not our child. */
static void tsp_kill(void)
{
	char *argv[] = {(char *)(uintptr_t)"/usr/bin/tsp", (char *)(uintptr_t)"-K", NULL};

	e2e_run_ok(argv, ts_env, "tsp -K");
}

static double tsp_rate(size_t n, unsigned par)
{
	char slots[16];

	snprintf(slots, sizeof(slots), "%u", par);
	tsp("-C", NULL, NULL); /* forget the previous run's finished jobs */
	uint64_t t0 = bench_now_ns();
	for (size_t i = 0; i + 1 < n; i++)
		tsp("/bin/true", NULL, NULL);
	tsp("-N", slots, "/bin/true");
	tsp("-w", NULL, NULL);
	return (double)n / ((double)(bench_now_ns() - t0) / 1e9);
}

static double nq_rate(size_t n, int run)
{
	char dir[128], env_dir[160];

	snprintf(dir, sizeof(dir), "%s/nq%d", tmp, run);
	snprintf(env_dir, sizeof(env_dir), "NQDIR=%s", dir);
	char *env[] = {env_dir, NULL};
	char *job[] = {(char *)(uintptr_t)"/usr/bin/nq", (char *)(uintptr_t)"-q", (char *)(uintptr_t)"/bin/true", NULL};
	char *waitall[] = {(char *)(uintptr_t)"/usr/bin/nq", (char *)(uintptr_t)"-w", NULL};
	uint64_t t0 = bench_now_ns();
	for (size_t i = 0; i < n; i++)
		e2e_run_ok(job, env, "nq");
	e2e_run_ok(waitall, env, "nq -w");
	double rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	rm_rf(dir);
	return rate;
}

/* Whether this daemon runs exec jobs: one /bin/true, submitted and waited for. */
static bool exec_supported(struct jsched_conn *c, const struct jsched_spec *spec)
{
	struct jsched_result *res = NULL;
	uint64_t id;
	int r = jsched_submit(c, spec, &id);

	if (r == JSCHED_ENOT_SUPPORTED)
		return false;
	if (r == 0)
		r = jsched_wait(c, id, 10000, &res);
	if (r < 0 || res->state != JSCHED_STATE_SUCCEEDED)
		e2e_die("exec /bin/true: %s (%s)", jsched_strerror(r), res && res->reason ? res->reason
							 : jsched_error_message(c));
	jsched_result_free(res);
	return true;
}

double e2e_exec_rate(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "exec");
	uint64_t *ids = malloc(n * sizeof(*ids));

	if (!ids)
		e2e_die("out of memory");
	uint64_t t0 = bench_now_ns();
	e2e_submit_pipelined(c, spec, n, 500, 4, ids);
	e2e_wait_ids(c, ids, n);
	double rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	free(ids);
	jsched_close(c);
	return rate;
}

/* What the processes of one call cost, from getrusage(RUSAGE_CHILDREN) around the calls:
 * the program spawned and what it waited for itself (tsp -f's client runs its job; jsched's
 * job runs in jschedd, not counted here), in CPU ms and minor page faults per call.  Counts
 * move less with the machine's load than times. */
struct call_cost {
	double cpu_ms, faults;
};

static struct rusage children_usage(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		e2e_die("getrusage: %s", strerror(errno));
	return ru;
}

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* ms per run of argv (spawned and reaped one at a time), k times; *cost (if not NULL) what
 * each run cost its processes. */
static double per_call_ms(char *const argv[], char *const env[], int k, struct call_cost *cost)
{
	struct rusage r0 = children_usage();
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < k; i++)
		e2e_run_ok(argv, env, argv[0]);
	double ms = (double)(bench_now_ns() - t0) / 1e6 / k;
	if (cost != NULL) {
		struct rusage r1 = children_usage();
		cost->cpu_ms = (tv_ms(r1.ru_utime) + tv_ms(r1.ru_stime) - tv_ms(r0.ru_utime) - tv_ms(r0.ru_stime)) / k;
		cost->faults = (double)(r1.ru_minflt - r0.ru_minflt) / k;
	}
	return ms;
}

static double median_cpu(const struct call_cost *c, size_t n)
{
	double v[64];

	for (size_t i = 0; i < n && i < 64; i++)
		v[i] = c[i].cpu_ms;
	return e2e_median_of(v, n);
}

static double median_faults(const struct call_cost *c, size_t n)
{
	double v[64];

	for (size_t i = 0; i < n && i < 64; i++)
		v[i] = c[i].faults;
	return e2e_median_of(v, n);
}

/* ms per run of argv, k times, gap_ms apart (the gaps not counted): a call after a quiet
 * spell, as a user's usually is.  Back to back, the calls keep warm what a lone one meets
 * cold (an RCU grace period in a cgroup v1 attach through cgroup.procs, waited for when no
 * other writer came within the last one: daemon/README.md). */
static double per_call_apart_ms(char *const argv[], char *const env[], int k, int gap_ms)
{
	uint64_t sum = 0;

	for (int i = 0; i < k; i++) {
		e2e_sleep_ms(gap_ms);
		uint64_t t0 = bench_now_ns();
		e2e_run_ok(argv, env, argv[0]);
		sum += bench_now_ns() - t0;
	}
	return (double)sum / 1e6 / k;
}

void e2e_exec(struct e2e *e)
{
	size_t n = e->quick ? 200 : 2000;
	int calls = e->quick ? 10 : 100, apart = e->quick ? 5 : 20;
	unsigned par = e->cpus;
	double raw[64], xa[64], ts[64], nq[64], js[64], jsn[64], cli_js[64], cli_noop[64], cli_ts[64];
	double cliw_js[64], cliw_noop[64], cliw_ts[64], clia_js[64], clia_ts[64];
	struct call_cost cost_js[64], cost_noop[64], cost_ts[64], cost_true[64];
	const char *const truth[] = {"/bin/true", NULL};
	struct jsched_spec *spec;
	struct e2e_daemon d, dn;
	char conf[128];

	snprintf(tmp, sizeof(tmp), "/tmp/bench-e2e-exec-XXXXXX");
	if (!mkdtemp(tmp))
		e2e_die("mkdtemp: %s", strerror(errno));
	e2e_track_dir(tmp, true);
	snprintf(ts_socket, sizeof(ts_socket), "TS_SOCKET=%s/ts.sock", tmp);
	snprintf(ts_tmpdir, sizeof(ts_tmpdir), "TMPDIR=%s", tmp);
	if (jsched_spec_exec(truth, &spec) < 0)
		e2e_die("out of memory");

	snprintf(conf, sizeof(conf), "\"workers\": %u", e->cpus);
	e2e_daemon_start(&d, conf);
	struct jsched_conn *c = e2e_connect(&d, "exec");
	bool has_exec = exec_supported(c, spec);
	jsched_close(c);
	snprintf(conf, sizeof(conf), "\"workers\": %u, \"exec\": {\"max_processes\": %u}", e->cpus, par);
	e2e_daemon_start(&dn, conf);

	char slots[16];
	snprintf(slots, sizeof(slots), "%u", par);
	tsp("-S", slots, NULL); /* starts the task-spooler server with N slots */
	e2e_on_die(tsp_kill);
	/* $BENCH_E2E_EXEC=cli: only the one-call rows (a quick look at the tool's latency). */
	const char *only = getenv("BENCH_E2E_EXEC");
	bool rates = !only || strcmp(only, "cli") != 0;
	for (int run = 0; rates && run < e->runs && run < 64; run++) {
		raw[run] = raw_spawn(n, par);
		xa[run] = xargs_rate(n, par);
		if (has_exec) {
			js[run] = e2e_exec_rate(&d, spec, n);
			jsn[run] = e2e_exec_rate(&dn, spec, n);
		}
	}
	for (int run = 0; rates && run < e->runs_long; run++) {
		ts[run] = tsp_rate(n, par);
		nq[run] = nq_rate(n, run);
	}

	/* One command-line call each, by this build's jsched, or $BENCH_E2E_JSCHED's (an A/B
	 * run's old side: bench/e2e/ab.sh sets it beside BENCH_E2E_JSCHEDD). */
	char *tool = getenv("BENCH_E2E_JSCHED") ? getenv("BENCH_E2E_JSCHED") : (char *)(uintptr_t)JSCHED_TOOL_BIN;
	char *js_exec[] = {tool, (char *)(uintptr_t)"-s", d.sock,
			   (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--", (char *)(uintptr_t)"/bin/true", NULL};
	char *js_noop[] = {tool, (char *)(uintptr_t)"-s", d.sock,
			   (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--fn", (char *)(uintptr_t)"noop", NULL};
	char *ts_call[] = {(char *)(uintptr_t)"/usr/bin/tsp", (char *)(uintptr_t)"/bin/true", NULL};
	char *jsw_exec[] = {tool, (char *)(uintptr_t)"-s", d.sock,
			    (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--wait", (char *)(uintptr_t)"--",
			    (char *)(uintptr_t)"/bin/true", NULL};
	char *jsw_noop[] = {tool, (char *)(uintptr_t)"-s", d.sock,
			    (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--wait", (char *)(uintptr_t)"--fn",
			    (char *)(uintptr_t)"noop", NULL};
	char *tsw_call[] = {(char *)(uintptr_t)"/usr/bin/tsp", (char *)(uintptr_t)"-f", (char *)(uintptr_t)"/bin/true",
			    NULL};
	char *true_call[] = {(char *)(uintptr_t)"/bin/true", NULL};
	for (int run = 0; run < e->runs && run < 64; run++) {
		if (has_exec)
			cli_js[run] = per_call_ms(js_exec, NULL, calls, NULL);
		cli_noop[run] = per_call_ms(js_noop, NULL, calls, NULL);
		tsp("-C", NULL, NULL);
		cli_ts[run] = per_call_ms(ts_call, ts_env, calls, NULL);
		tsp("-w", NULL, NULL);
		if (has_exec)
			cliw_js[run] = per_call_ms(jsw_exec, NULL, calls, &cost_js[run]);
		cliw_noop[run] = per_call_ms(jsw_noop, NULL, calls, &cost_noop[run]);
		tsp("-C", NULL, NULL);
		cliw_ts[run] = per_call_ms(tsw_call, ts_env, calls, &cost_ts[run]);
		per_call_ms(true_call, NULL, calls, &cost_true[run]);
		if (has_exec)
			clia_js[run] = per_call_apart_ms(jsw_exec, NULL, apart, 50);
		tsp("-C", NULL, NULL);
		clia_ts[run] = per_call_apart_ms(tsw_call, ts_env, apart, 50);
	}
	e2e_on_die(NULL);
	tsp("-K", NULL, NULL); /* stop the task-spooler server */
	e2e_daemon_stop(&d);
	e2e_daemon_stop(&dn);
	e2e_track_dir(tmp, false);
	rm_rf(tmp);

	size_t runs = (size_t)e->runs, lruns = (size_t)e->runs_long;
	if (rates) {
		double rawm = e2e_median_of(raw, runs), xam = e2e_median_of(xa, runs);
		double tsm = e2e_median_of(ts, lruns), nqm = e2e_median_of(nq, lruns);
		char label[64];
		snprintf(label, sizeof(label), "raw posix_spawn x%u", par);
		bench_row(e->rep, "exec: raw posix_spawn, N in parallel (floor)", "jobs/s", NULL, rawm, NULL, 0);
		bench_row(e->rep, "exec: xargs -P N", "jobs/s", NULL, xam, label, rawm);
		bench_row(e->rep, "exec: task-spooler tsp -S N", "jobs/s", NULL, tsm, label, rawm);
		bench_row(e->rep, "exec: nq (one at a time)", "jobs/s", NULL, nqm, label, rawm);
		if (has_exec) {
			double jsm = e2e_median_of(js, runs);
			bench_row(e->rep, "exec: jschedd /bin/true, batches of 500", "jobs/s", NULL, jsm, label, rawm);
			bench_row(e->rep, "exec: jschedd /bin/true vs xargs", "jobs/s", NULL, jsm, "xargs -P N", xam);
			bench_row(e->rep, "exec: jschedd /bin/true vs task-spooler", "jobs/s", NULL, jsm, "tsp -S N", tsm);
			bench_row(e->rep, "exec: jschedd /bin/true vs nq", "jobs/s", NULL, jsm, "nq", nqm);
			double jsnm = e2e_median_of(jsn, runs);
			snprintf(label, sizeof(label), "raw posix_spawn x%u", par);
			char name[96];
			snprintf(name, sizeof(name), "exec: jschedd /bin/true, at most %u processes", par);
			bench_row(e->rep, name, "jobs/s", NULL, jsnm, label, rawm);
			snprintf(name, sizeof(name), "exec: jschedd /bin/true, at most %u processes, vs task-spooler", par);
			bench_row(e->rep, name, "jobs/s", NULL, jsnm, "tsp -S N", tsm);
		} else {
			bench_note(e->rep, "exec: MISSING: this jschedd answers exec submits with not_supported; "
					   "the jschedd exec rows are left out");
		}
	}
	double tscli = e2e_median_of(cli_ts, runs);
	if (has_exec)
		bench_row(e->rep, "cli: jsched submit -- /bin/true (one call)", "ms/call", NULL,
			  e2e_median_of(cli_js, runs), "tsp /bin/true (one call)", tscli);
	bench_row(e->rep, "cli: jsched submit --fn noop (one call)", "ms/call", NULL, e2e_median_of(cli_noop, runs),
		  "tsp /bin/true (one call)", tscli);
	double tswcli = e2e_median_of(cliw_ts, runs);
	if (has_exec)
		bench_row(e->rep, "cli: jsched submit --wait -- /bin/true (one call)", "ms/call", NULL,
			  e2e_median_of(cliw_js, runs), "tsp -f /bin/true (one call)", tswcli);
	bench_row(e->rep, "cli: jsched submit --wait --fn noop (one call)", "ms/call", NULL,
		  e2e_median_of(cliw_noop, runs), "tsp -f /bin/true (one call)", tswcli);
	if (has_exec)
		bench_row(e->rep, "cli: jsched submit --wait -- /bin/true, calls 50 ms apart", "ms/call", NULL,
			  e2e_median_of(clia_js, runs), "tsp -f /bin/true, calls 50 ms apart",
			  e2e_median_of(clia_ts, runs));
	/* The counts of the one call: the tool's own process against tsp -f's client with the
	 * job it runs, and the call without a command against a run of /bin/true (what any
	 * program's start and exit cost). */
	if (has_exec) {
		bench_row(e->rep, "cli: submit --wait -- /bin/true, CPU of the tool", "ms/call", NULL,
			  median_cpu(cost_js, runs), "tsp -f /bin/true, its client + job", median_cpu(cost_ts, runs));
		bench_row(e->rep, "cli: submit --wait -- /bin/true, page faults of the tool", "faults/call", NULL,
			  median_faults(cost_js, runs), "tsp -f /bin/true, its client + job",
			  median_faults(cost_ts, runs));
	}
	bench_row(e->rep, "cli: submit --wait --fn noop, CPU of the tool", "ms/call", NULL, median_cpu(cost_noop, runs),
		  "/bin/true, one run", median_cpu(cost_true, runs));
	bench_row(e->rep, "cli: submit --wait --fn noop, page faults of the tool", "faults/call", NULL,
		  median_faults(cost_noop, runs), "/bin/true, one run", median_faults(cost_true, runs));
	bench_note(e->rep, "exec: %zu jobs per run, N = %u; raw/xargs/jschedd %d runs, tsp/nq %d runs; "
			   "cli: %d calls per run (%d for the calls 50 ms apart, the gaps not counted), %d runs",
		   n, par, e->runs, e->runs_long, calls, apart, e->runs);
	jsched_spec_free(spec);
}
