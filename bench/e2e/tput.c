/* bench/e2e/tput.c: part 2, tiny-job throughput: 200,000 noop call jobs end to end, from
 * the first submit to the last completion known to the client, in jobs/s.
 *
 *   - one client, batches: submit messages of 1,000 jobs, 4 in flight (event-loop mode),
 *     then wait for all (jsched_wait_many, 1,000 ids a request);
 *   - the same, but the end seen in the metrics' succeeded counter instead of wait
 *     replies: a diagnostic row (it is not how a client learns of its jobs) that tells
 *     the daemon's share of the batch row from the client library's (parsing 1,000
 *     records per wait reply);
 *   - one client, one job per submit message, 256 messages in flight, then wait for all;
 *   - 4 client processes at once, each 50,000 jobs in batches as above (forked, started
 *     together through a pipe, timed until the last has seen all its jobs end).
 * Beside them: beanstalkd with 2 worker processes (reserve, delete) and one producer that
 * pipelines its puts 1,000 at a time, timed until both workers have taken the "q" job the
 * producer puts last.  beanstalkd's workers do no more than jschedd's noop: take the job,
 * say it is done.
 *
 * Each run has a daemon of its own, which keeps every job's record of the run (retention
 * sized to the run's four rows: 4 x 200,000 jobs, and no byte bound that they reach), so
 * that the final waits find them, and the run checks that the daemon forgot none.  (One
 * daemon for every run, retention.jobs 1,000,000 and the default retention.bytes 256 MiB,
 * forgot 427,173 of the first run's 800,000 jobs already, the byte bound's doing, and more
 * with each run: a wait could name a job forgotten.)  Every row is the median over
 * min(--runs, 3) runs: one run of the four takes about 40 s here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

enum { BATCH = 1000, NCLIENTS = 4 };

/* One client's whole job: submit n noop jobs (batch per message, window in flight), then
 * wait for all of them. */
/* The time the last client_run spent submitting, and in all (s). */
static double last_submit_s, last_total_s;

static void client_run(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, size_t batch,
		       size_t window)
{
	uint64_t *ids = malloc(n * sizeof(*ids));
	uint64_t t0 = bench_now_ns();

	if (!ids)
		e2e_die("out of memory");
	e2e_submit_pipelined(c, spec, n, batch, window, ids);
	uint64_t t1 = bench_now_ns();
	e2e_wait_ids(c, ids, n);
	last_submit_s = (double)(t1 - t0) / 1e9;
	last_total_s = (double)(bench_now_ns() - t0) / 1e9;
	free(ids);
}

static double one_client(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n, size_t batch,
			 size_t window)
{
	struct jsched_conn *c = e2e_connect(d, "tput");
	uint64_t t0 = bench_now_ns();

	client_run(c, spec, n, batch, window);
	double s = (double)(bench_now_ns() - t0) / 1e9;
	jsched_close(c);
	return (double)n / s;
}

/* The daemon's side alone: the same batches, but the end is seen in the metrics' succeeded
 * counter (polled every millisecond) instead of in wait replies, so the client parses no
 * job records.  A diagnostic row: it shows how much of the batch row is the client's. */
static double one_client_counter(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "tput");
	uint64_t *ids = malloc(n * sizeof(*ids));

	if (!ids)
		e2e_die("out of memory");
	double goal = e2e_metrics_number(c, "jobs/succeeded") + (double)n;
	uint64_t t0 = bench_now_ns();
	e2e_submit_pipelined(c, spec, n, BATCH, 4, ids);
	for (int i = 0; e2e_metrics_number(c, "jobs/succeeded") < goal; i++) {
		if (i == 60000)
			e2e_die("the metrics did not count %zu more succeeded jobs within 60 s", n);
		e2e_sleep_ms(1);
	}
	double rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	free(ids);
	jsched_close(c);
	return rate;
}

double e2e_clients_run(struct e2e_daemon *d, const struct jsched_spec *spec, int nclients, size_t per_client)
{
	int ready[2], go[2];
	pid_t pids[64];
	char byte = 0;

	if (pipe(ready) < 0 || pipe(go) < 0)
		e2e_die("pipe: %s", strerror(errno));
	if (nclients > 64)
		e2e_die("at most 64 client processes");
	for (int i = 0; i < nclients; i++) {
		if ((pids[i] = fork()) < 0)
			e2e_die("fork: %s", strerror(errno));
		if (pids[i] == 0) {
			char name[32];

			close(ready[0]);
			close(go[1]);
			snprintf(name, sizeof(name), "client%d", i);
			struct jsched_conn *c = e2e_connect(d, name);
			if (write(ready[1], &byte, 1) != 1 || read(go[0], &byte, 1) != 0)
				_exit(1);
			client_run(c, spec, per_client, BATCH, 4);
			jsched_close(c);
			_exit(0);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < nclients; i++)
		if (read(ready[0], &byte, 1) != 1)
			e2e_die("a client process died before it was ready");
	close(ready[0]);
	uint64_t t0 = bench_now_ns();
	close(go[1]); /* every client's read returns 0: go */
	for (int i = 0; i < nclients; i++)
		e2e_wait_ok(pids[i], "client process");
	return (double)per_client * nclients / ((double)(bench_now_ns() - t0) / 1e9);
}

/* beanstalkd: n jobs through 2 workers; the producer pipelines BATCH puts at a time. */
static double beanstalk_tput(int port, size_t n)
{
	struct bs_conn *c = malloc(sizeof(*c));
	static char buf[BATCH * 32];
	char line[64];
	pid_t w[2];

	if (!c)
		e2e_die("out of memory");
	for (int i = 0; i < 2; i++) {
		if ((w[i] = fork()) < 0)
			e2e_die("fork: %s", strerror(errno));
		if (w[i] == 0)
			bs_worker(port, false);
	}
	bs_connect(c, port);
	bs_cmd(c, "use jobs", "USING", line, sizeof(line));
	uint64_t t0 = bench_now_ns();
	for (size_t sent = 0; sent < n;) {
		size_t k = n - sent < BATCH ? n - sent : BATCH, len = 0;

		for (size_t i = 0; i < k; i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "put 1024 0 60 4\r\nnoop\r\n");
		bs_send(c, buf, len);
		for (size_t i = 0; i < k; i++) {
			bs_line(c, line, sizeof(line));
			if (strncmp(line, "INSERTED", 8) != 0)
				e2e_die("beanstalkd: put answered '%s'", line);
		}
		sent += k;
	}
	bs_put(c, "q", 1);
	bs_put(c, "q", 1);
	for (int i = 0; i < 2; i++)
		e2e_wait_ok(w[i], "beanstalkd worker");
	double rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	bs_close(c);
	free(c);
	return rate;
}

void e2e_tput(struct e2e *e)
{
	size_t n = e->quick ? 20000 : 200000;
	double batch[64], counter[64], single[64], many[64], bs[64];
	struct jsched_spec *spec;
	struct e2e_beanstalkd b;
	struct e2e_daemon d;
	char conf[512];

	if (jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	e2e_beanstalkd_start(&b);
	for (int run = 0; run < e->runs_long; run++)
		bs[run] = beanstalk_tput(b.port, n);
	e2e_beanstalkd_stop(&b);

	/* A run's jobs, each row's n, all retained (and a byte bound none of them reaches). */
	snprintf(conf, sizeof(conf),
		 "\"workers\": %u, \"limits\": {\"queued_jobs\": 10000000}, "
		 "\"clients\": {\"default\": {\"max_queued\": 10000000}}, "
		 "\"retention\": {\"jobs\": %zu, \"bytes\": \"1T\"}",
		 e->cpus, 4 * n + 1000);
	double sub_frac[64];
	long rss = 0;
	for (int run = 0; run < e->runs_long; run++) {
		e2e_daemon_start(&d, conf);
		batch[run] = one_client(&d, spec, n, BATCH, 4);
		sub_frac[run] = last_submit_s / last_total_s;
		counter[run] = one_client_counter(&d, spec, n);
		single[run] = one_client(&d, spec, n, 1, 256);
		many[run] = e2e_clients_run(&d, spec, NCLIENTS, n / NCLIENTS);
		struct jsched_conn *c = e2e_connect(&d, "tput");
		double forgot = e2e_metrics_number(c, "jobs/forgotten");
		jsched_close(c);
		if (forgot > 0)
			e2e_die("tput: the daemon forgot %.0f jobs of the run: its waits could meet them",
				forgot);
		rss = e2e_rss_kib(d.pid);
		e2e_daemon_stop(&d);
	}

	size_t runs = (size_t)e->runs_long, lruns = (size_t)e->runs_long;
	double bsm = e2e_median_of(bs, lruns);
	bench_row(e->rep, "tput: beanstalkd, 1 producer + 2 workers", "jobs/s", NULL, bsm, NULL, 0);
	e->tput_batch = e2e_median_of(batch, runs);
	bench_row(e->rep, "tput: noop, 1 client, batches of 1000", "jobs/s", NULL, e->tput_batch,
		  "beanstalkd 2 workers", bsm);
	bench_row(e->rep, "tput: noop, 1 client, batches, end seen in metrics (diagnostic)", "jobs/s", NULL,
		  e2e_median_of(counter, runs), "the same, end seen in wait replies", e->tput_batch);
	bench_row(e->rep, "tput: noop, 1 client, 1 job/submit, 256 in flight", "jobs/s", NULL,
		  e2e_median_of(single, runs), "beanstalkd 2 workers", bsm);
	bench_row(e->rep, "tput: noop, 4 client processes, batches of 1000", "jobs/s", NULL,
		  e2e_median_of(many, runs), "beanstalkd 2 workers", bsm);
	bench_note(e->rep, "tput: 1 client, batches: submitting took %.0f%% of the time, waiting for the "
			   "rest the remainder", 100 * e2e_median_of(sub_frac, runs));
	bench_note(e->rep, "tput: %zu jobs per row and run; jschedd %d runs, a daemon each, %u workers "
			   "(RSS after the last run %ld KiB, every job of it retained); beanstalkd %d runs",
		   n, e->runs_long, e->cpus, rss, e->runs_long);
	jsched_spec_free(spec);
}
