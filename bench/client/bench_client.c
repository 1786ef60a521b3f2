/* bench_client.c: what a libjsched client pays per request against a real jschedd, and
 * what the event-loop mode's pipelining buys over synchronous calls.
 *
 * It starts its own jschedd (the build's, on a socket in a temporary folder, default
 * config), then measures, each row the median of --runs runs:
 *
 *   ping, sync                 one request, wait for its reply, repeat (the round trip)
 *   ping, pipelined (64)       64 requests in flight with jsched_*_async + jsched_process;
 *                              per request; baseline: the sync row
 *   echo job, sync             jsched_submit + jsched_wait of a call job, one at a time
 *   echo jobs, batch of 100    jsched_submit_batch + jsched_wait_many, per job; baseline:
 *                              the sync row
 *   jsched tool, submit --wait the command-line tool, run by posix_spawn: process start,
 *                              connect, hello, submit, wait, exit; baseline: /bin/true
 *                              spawned the same way (the cost of a process alone)
 *   the one call, A/B          with BENCH_CLIENT_OLD_TOOL=PATH (another build's jsched):
 *                              `submit --wait -- /bin/true` and `submit --wait --fn noop`
 *                              by this build's tool and by that one, call by call
 *                              alternated (which goes first alternates too), against the
 *                              same daemon; each row the median of the calls' times, the
 *                              old tool's the baseline.  The load moves from minute to
 *                              minute; alternating call by call puts both in the same one.
 *
 * The daemon runs on the same 2 cores as the client, so these are loopback figures of the
 * whole path (client, socket, daemon), not of the library alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

#include <jsched/jsched.h>

#include "bench/common/bench.h"
#include "bench/common/daemon.h"
#include "jsched_version.h"

extern char **environ;

static struct bench_daemon jd = {.pid = -1};

static void die(const char *what, int code)
{
	fprintf(stderr, "bench-client: %s: %s\n", what, code < 0 ? jsched_strerror(code) : strerror(code));
	bench_daemon_kill(&jd);
	exit(1);
}

/* Start jschedd on a socket of its own and wait (at most 10 s) until it answers. */
static struct jsched_conn *start_daemon(void)
{
	struct jsched_conn *c;
	int rc;

	/* The config is the defaults (the journal on, sync always) but for the socket. */
	if ((rc = bench_daemon_start(&jd, JSCHEDD_BIN, NULL, "client", NULL, "bench", &c)) < 0)
		die("cannot start " JSCHEDD_BIN, rc);
	setenv("JSCHED_SOCKET", jd.sock, 1); /* for the jsched tool's runs */
	return c;
}

static void stop_daemon(void)
{
	bench_daemon_stop(&jd, SIGTERM);
}

static double ping_sync(struct jsched_conn *c, int n)
{
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < n; i++) {
		int r = jsched_ping(c);
		if (r < 0)
			die("ping", r);
	}
	return (double)(bench_now_ns() - t0) / 1e3 / n;
}

static int pending;
static void done_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	(void)c, (void)reply, (void)arg;
	if (status < 0)
		die("async reply", status);
	pending--;
}

static double ping_pipelined(struct jsched_conn *c, int n, int window)
{
	uint64_t t0 = bench_now_ns();
	int sent = 0;
	pending = 0;
	while (sent < n || pending > 0) {
		while (sent < n && pending < window) {
			int r = jsched_request_async(c, "{\"op\": \"ping\"}", done_cb, NULL);
			if (r < 0)
				die("ping_async", r);
			sent++;
			pending++;
		}
		struct pollfd pfd = { .fd = jsched_fd(c), .events = (short)(POLLIN | (jsched_want_write(c) ? POLLOUT : 0)) };
		if (poll(&pfd, 1, 10000) <= 0)
			die("poll", errno != 0 ? errno : ETIMEDOUT);
		int r = jsched_process(c);
		if (r < 0)
			die("process", r);
	}
	return (double)(bench_now_ns() - t0) / 1e3 / n;
}

static double echo_sync(struct jsched_conn *c, int n)
{
	struct jsched_spec *spec;
	jsched_spec_call("echo", "{\"x\": 1}", &spec);
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < n; i++) {
		uint64_t id;
		struct jsched_result *res;
		int r = jsched_submit(c, spec, &id);
		if (r == 0)
			r = jsched_wait(c, id, -1, &res);
		if (r < 0)
			die(jsched_error_message(c), r);
		jsched_result_free(res);
	}
	double per = (double)(bench_now_ns() - t0) / 1e3 / n;
	jsched_spec_free(spec);
	return per;
}

static double echo_batch(struct jsched_conn *c, int n)
{
	enum { BATCH = 100 };
	struct jsched_spec *spec;
	jsched_spec_call("echo", "{\"x\": 1}", &spec);
	const struct jsched_spec *specs[BATCH];
	for (int i = 0; i < BATCH; i++)
		specs[i] = spec;
	uint64_t ids[BATCH];
	uint64_t t0 = bench_now_ns();
	for (int done = 0; done < n; done += BATCH) {
		int r = jsched_submit_batch(c, specs, BATCH, ids);
		struct jsched_results *l = NULL;
		if (r == 0)
			r = jsched_wait_many(c, ids, BATCH, JSCHED_WAIT_ALL, -1, &l);
		if (r < 0)
			die(jsched_error_message(c), r);
		jsched_results_free(l);
	}
	double per = (double)(bench_now_ns() - t0) / 1e3 / n;
	jsched_spec_free(spec);
	return per;
}

/* call_ms: one run of argv (posix_spawn, stdout to /dev/null, waited for), in ms. */
static double call_ms(char *const argv[])
{
	uint64_t t0 = bench_now_ns();
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		die(argv[0], rc);
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die(argv[0], EINVAL);
	return (double)(bench_now_ns() - t0) / 1e6;
}

/* spawn_ms: n runs of argv one after the other, in ms per run. */
static double spawn_ms(char *const argv[], int n)
{
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < n; i++)
		(void)call_ms(argv);
	return (double)(bench_now_ns() - t0) / 1e6 / n;
}

/* ab_rows: the one call by this build's tool and by old's, n calls each, alternated call
 * by call (the first of each pair alternating too); a row each, old's the baseline. */
static void ab_rows(struct bench_report *rep, const char *old, const char *what, char **args, int n)
{
	char *argv_new[8], *argv_old[8];
	double *tn = calloc((size_t)n, sizeof *tn), *to = calloc((size_t)n, sizeof *to);
	char name[160], base[160];
	size_t k = 0;

	argv_new[0] = (char *)(uintptr_t)JSCHED_TOOL_BIN;
	argv_old[0] = (char *)(uintptr_t)old;
	for (; args[k] != NULL && k < 6; k++)
		argv_new[k + 1] = argv_old[k + 1] = args[k];
	argv_new[k + 1] = argv_old[k + 1] = NULL;
	for (int i = 0; i < n; i++) {
		if (i % 2 == 0) {
			to[i] = call_ms(argv_old);
			tn[i] = call_ms(argv_new);
		} else {
			tn[i] = call_ms(argv_new);
			to[i] = call_ms(argv_old);
		}
	}
	snprintf(name, sizeof name, "A/B: jsched %s, this build (median of %d calls)", what, n);
	snprintf(base, sizeof base, "the old tool, alternated");
	double mo = bench_median(to, (size_t)n);
	bench_row(rep, name, "ms/call", NULL, bench_median(tn, (size_t)n), base, mo);
	free(tn);
	free(to);
}

int main(int argc, char **argv)
{
	struct bench_report *rep = bench_report_new("bench-client", argc, argv);
	bool quick = bench_quick(rep);
	int runs = bench_runs(rep);
	int n_ping = quick ? 200 : 5000, n_echo = quick ? 100 : 2000, n_spawn = quick ? 5 : 50;
	struct jsched_conn *c = start_daemon();
	double *v = calloc((size_t)runs, sizeof *v);

	/* --only TEXT measures the rows whose names contain it (bench/ab.py; the A/B rows
	 * alone: --only A/B). */
	if (bench_wanted(rep, "ping")) {
		for (int i = 0; i < runs; i++)
			v[i] = ping_sync(c, n_ping);
		double sync_ping = bench_median(v, (size_t)runs);
		bench_row(rep, "ping, sync", "us/request", NULL, sync_ping, NULL, 0);
		for (int i = 0; i < runs; i++)
			v[i] = ping_pipelined(c, n_ping * 4, 64);
		bench_row(rep, "ping, pipelined (64 in flight)", "us/request", NULL, bench_median(v, (size_t)runs),
			  "ping, sync", sync_ping);
	}
	if (bench_wanted(rep, "echo job")) {
		for (int i = 0; i < runs; i++)
			v[i] = echo_sync(c, n_echo);
		double sync_echo = bench_median(v, (size_t)runs);
		bench_row(rep, "echo job, submit + wait, sync", "us/job", NULL, sync_echo, NULL, 0);
		for (int i = 0; i < runs; i++)
			v[i] = echo_batch(c, n_echo);
		bench_row(rep, "echo jobs, batch of 100 + wait_many", "us/job", NULL, bench_median(v, (size_t)runs),
			  "echo job, sync", sync_echo);
	}
	if (bench_wanted(rep, "jsched submit --wait --fn noop")) {
		char *truth[] = { (char *)(uintptr_t)"/bin/true", NULL };
		for (int i = 0; i < runs; i++)
			v[i] = spawn_ms(truth, n_spawn);
		double spawn_true = bench_median(v, (size_t)runs);
		char *tool[] = { (char *)(uintptr_t)JSCHED_TOOL_BIN, (char *)(uintptr_t)"submit",
				 (char *)(uintptr_t)"--wait", (char *)(uintptr_t)"--fn", (char *)(uintptr_t)"noop", NULL };
		for (int i = 0; i < runs; i++)
			v[i] = spawn_ms(tool, n_spawn);
		bench_row(rep, "jsched submit --wait --fn noop", "ms/run", NULL, bench_median(v, (size_t)runs),
			  "/bin/true", spawn_true);
	}
	bench_note(rep, "jschedd and the client share the machine's cores; sizes: %d pings, %d jobs, %d spawns per run",
		   n_ping, n_echo, n_spawn);

	const char *old = getenv("BENCH_CLIENT_OLD_TOOL");
	if (old != NULL && old[0] != '\0') {
		int n_ab = quick ? 10 : 100 * runs;
		char *cmd[] = { (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--wait", (char *)(uintptr_t)"--",
				(char *)(uintptr_t)"/bin/true", NULL };
		char *noop[] = { (char *)(uintptr_t)"submit", (char *)(uintptr_t)"--wait", (char *)(uintptr_t)"--fn",
				 (char *)(uintptr_t)"noop", NULL };
		if (bench_wanted(rep, "A/B: jsched submit --wait -- /bin/true"))
			ab_rows(rep, old, "submit --wait -- /bin/true", cmd, n_ab);
		if (bench_wanted(rep, "A/B: jsched submit --wait --fn noop"))
			ab_rows(rep, old, "submit --wait --fn noop", noop, n_ab);
		bench_note(rep, "A/B rows: the old tool is %s", old);
	}

	free(v);
	jsched_close(c);
	stop_daemon();
	return bench_report_finish(rep);
}
