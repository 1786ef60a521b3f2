/* bench/journal/bench_journal.c: how fast records become durable through the journal.
 *
 * One thread plays the daemon's loop thread: it keeps K records outstanding (K
 * submitters each waiting for its own acknowledgement: 1, 8, 64) or appends batches of
 * 1,000 and waits for each batch, and counts a record when the journal reports it
 * durable (its notify callback, as the daemon's uv_async would).  Records carry 300
 * bytes, about a small job spec.  Rows, for the journal's two ways to sync:
 *
 *   fdatasync   pwrite of the whole group, then fdatasync
 *   O_DSYNC     pwrite on a descriptor opened O_DSYNC
 *   O_DIRECT    pwrite of whole blocks on a descriptor opened O_DIRECT | O_DSYNC (the
 *               daemon's default, journal.io "direct")
 *
 * beside the baseline a plain log without group commit would give: one pwrite +
 * fdatasync per record, into the same kind of preallocated file, measured in the same
 * run.  Also: journal bytes per record, and fdatasyncs per record, at 1 and 64; and the
 * CRC-32C that checks every flush when written and again at a restart, in MB/s over a
 * 256 KiB flush, beside the portable table version (the hardware one runs three streams
 * side by side: daemon/core/crc32c.c).
 * The directory is under $JSCHED_BENCH_DIR (default /var/tmp): it must be a real disk,
 * since tmpfs makes every sync free.
 *
 *   bench_journal [--json FILE] [--runs N] [--quick]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/bench.h"
#include "daemon/core/crc32c.h"
#include "daemon/core/diskcpu.h"
#include "daemon/core/journal.h"

#define PAYLOAD 300

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void notify_cb(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void wait_past(struct jd_journal *j, uint64_t seen)
{
	pthread_mutex_lock(&mu);
	while (jd_journal_durable(j) <= seen)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static char base[2048];

static void rm_journal(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_journal: could not remove %s\n", dir);
}

struct result {
	double per_s, bytes_per_rec, syncs_per_rec;
};

/* run_journal: K outstanding (batch 0) or batches of `batch`, for `secs` seconds. */
static struct result run_journal(enum jd_journal_io io, unsigned k, unsigned batch, double secs)
{
	char dir[2100], err[512], payload[PAYLOAD];
	struct jd_journal_opts o = {.io = io, .notify_cb = notify_cb}; /* 64 MiB segments */
	struct jd_journal *j;
	struct jd_journal_stats st0, st1;
	uint64_t t0, t1, done0, n = 0;
	struct result res;

	snprintf(dir, sizeof(dir), "%s/j", base);
	rm_journal(dir);
	o.dir = dir;
	memset(payload, 'x', sizeof(payload));
	if (jd_journal_open(&j, &o, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_journal: %s\n", err);
		exit(1);
	}
	/* warm up: a few flushes */
	for (int i = 0; i < 50; i++)
		wait_past(j, (uint64_t)jd_journal_append(j, 1, 1, payload, sizeof(payload)) - 1);
	jd_journal_stats(j, &st0);
	done0 = jd_journal_durable(j);
	t0 = bench_now_ns();
	t1 = t0 + (uint64_t)(secs * 1e9);
	if (batch) {
		while (bench_now_ns() < t1) {
			int64_t last = 0;

			for (unsigned i = 0; i < batch; i++)
				last = jd_journal_append(j, 1, (uint64_t)i, payload, sizeof(payload));
			wait_past(j, (uint64_t)last - 1);
		}
	} else {
		while (bench_now_ns() < t1) {
			uint64_t d = jd_journal_durable(j);

			while (jd_journal_last(j) - d < k)
				jd_journal_append(j, 1, ++n, payload, sizeof(payload));
			wait_past(j, d);
		}
		wait_past(j, jd_journal_last(j) - 1);
	}
	t1 = bench_now_ns();
	jd_journal_stats(j, &st1);
	res.per_s = (double)(jd_journal_durable(j) - done0) / ((double)(t1 - t0) / 1e9);
	res.bytes_per_rec = (double)(st1.bytes_written - st0.bytes_written) /
			    (double)(st1.durable_seq - st0.durable_seq);
	res.syncs_per_rec = (double)(st1.syncs - st0.syncs) / (double)(st1.durable_seq - st0.durable_seq);
	jd_journal_close(j);
	rm_journal(dir);
	return res;
}

/* run_plain: the baseline, one pwrite + fdatasync per record into a preallocated file. */
static double run_plain(double secs)
{
	char path[2100], rec[PAYLOAD + 32];
	static char zeros[1 << 20];
	uint64_t t0, t1, n = 0, off = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/plain", base);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		exit(1);
	for (int i = 0; i < 64; i++)
		if (write(fd, zeros, sizeof(zeros)) != (ssize_t)sizeof(zeros))
			exit(1);
	fdatasync(fd);
	memset(rec, 'x', sizeof(rec));
	t0 = bench_now_ns();
	t1 = t0 + (uint64_t)(secs * 1e9);
	while (bench_now_ns() < t1 && off + sizeof(rec) < (64u << 20)) {
		if (pwrite(fd, rec, sizeof(rec), (off_t)off) != (ssize_t)sizeof(rec) ||
		    fdatasync(fd) < 0)
			exit(1);
		off += sizeof(rec);
		n++;
	}
	t1 = bench_now_ns();
	close(fd);
	unlink(path);
	return (double)n / ((double)(t1 - t0) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* disk_cpu_rows: one 4 KiB block written through O_DIRECT | O_DSYNC, from each CPU in
 * turn (this thread pinned there, 25 writes a turn, so every CPU sees the same minutes),
 * p10 and p50 per CPU beside the CPU the daemon's "auto" picks for its flusher
 * (core/diskcpu.h): where the write's time goes when the disk's interrupt comes to
 * another CPU than the writer's. */
static void disk_cpu_rows(struct bench_report *r, bool quick)
{
	enum { TURN = 25, MAXCPU = 8 };
	int per = quick ? 100 : 1000, cpus[MAXCPU], ncpu = 0, fd, irq;
	char path[2100], why[256], name[128], base_name[96];
	double *t[MAXCPU], p10[MAXCPU], p50[MAXCPU];
	cpu_set_t allowed;
	void *buf;

	if (!bench_wanted(r, "from CPU") || sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && ncpu < MAXCPU; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;
	snprintf(path, sizeof(path), "%s/cpu", base);
	if (posix_memalign(&buf, 4096, 4096))
		exit(1);
	memset(buf, 'x', 4096);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (int i = 0; fd >= 0 && i < 256; i++)
		if (pwrite(fd, buf, 4096, (off_t)i * 4096) != 4096)
			exit(1);
	if (fd < 0 || fsync(fd) < 0)
		exit(1);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT | O_DSYNC);
	if (fd < 0) { /* a filesystem without O_DIRECT: no rows */
		unlink(path);
		free(buf);
		return;
	}
	for (int c = 0; c < ncpu; c++)
		t[c] = calloc((size_t)per, sizeof(double));
	for (int i = 0; i < per * ncpu; i++) {
		int c = (i / TURN) % ncpu, k = (i / (TURN * ncpu)) * TURN + i % TURN;
		cpu_set_t one;
		uint64_t a;

		if (i % TURN == 0) {
			CPU_ZERO(&one);
			CPU_SET(cpus[c], &one);
			sched_setaffinity(0, sizeof(one), &one);
		}
		a = bench_now_ns();
		if (pwrite(fd, buf, 4096, (off_t)(i % 256) * 4096) != 4096)
			exit(1);
		if (k < per)
			t[c][k] = (double)(bench_now_ns() - a) / 1e3;
	}
	sched_setaffinity(0, sizeof(allowed), &allowed);
	close(fd);
	unlink(path);
	free(buf);
	irq = jd_disk_irq_cpu(base, why, sizeof(why));
	for (int c = 0; c < ncpu; c++) {
		qsort(t[c], (size_t)per, sizeof(double), cmp_double);
		p10[c] = t[c][per / 10];
		p50[c] = t[c][per / 2];
	}
	for (int c = 0; c < ncpu; c++) {
		int ib = -1;

		for (int x = 0; x < ncpu; x++)
			if (cpus[x] == irq)
				ib = x;
		snprintf(base_name, sizeof(base_name), "from CPU %d, the disk's interrupt CPU", irq);
		snprintf(name, sizeof(name), "4 KiB write + sync (O_DIRECT|O_DSYNC) from CPU %d, p50",
			 cpus[c]);
		bench_row(r, name, "us", NULL, p50[c], ib >= 0 ? base_name : NULL,
			  ib >= 0 ? p50[ib] : 0);
		snprintf(name, sizeof(name), "4 KiB write + sync (O_DIRECT|O_DSYNC) from CPU %d, p10",
			 cpus[c]);
		bench_row(r, name, "us", NULL, p10[c], ib >= 0 ? base_name : NULL,
			  ib >= 0 ? p10[ib] : 0);
		free(t[c]);
	}
	bench_note(r, "write from each CPU: %d writes per CPU, %d at a time per CPU in turn; the "
		   "daemon's journal.cpu \"auto\" finds: %s", per, TURN, why);
}

/* crc_rate: MB/s of fn over a 256 KiB buffer, for about secs. */
static double crc_rate(uint32_t (*fn)(uint32_t, const void *, size_t), double secs)
{
	enum { LEN = 256 << 10 };
	unsigned char *buf = malloc(LEN);
	volatile uint32_t sink = 0;
	uint64_t t0, done = 0;

	if (!buf)
		return 0;
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	t0 = bench_now_ns();
	do {
		for (int k = 0; k < 16; k++)
			sink = fn(sink, buf, LEN);
		done += 16u * LEN;
	} while ((double)(bench_now_ns() - t0) < secs * 1e9);
	free(buf);
	return (double)done / 1e6 / ((double)(bench_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench_journal", argc, argv);
	int runs = bench_runs(r);
	double secs = bench_quick(r) ? 0.1 : 0.6;
	const char *b = getenv("JSCHED_BENCH_DIR");
	char tmpl[2048];
	double *p = calloc((size_t)runs, sizeof(double));
	static const struct {
		const char *name;
		unsigned k, batch;
	} shapes[] = {
		{"durable records/s, 1 outstanding", 1, 0},
		{"durable records/s, 8 outstanding", 8, 0},
		{"durable records/s, 64 outstanding", 64, 0},
		{"durable records/s, batches of 1000", 0, 1000},
	};
	double plain;

	snprintf(tmpl, sizeof(tmpl), "%s/jsched-bench-journal-XXXXXX", b ? b : "/var/tmp");
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "bench_journal: mkdtemp %s: %s\n", tmpl, strerror(errno));
		return 1;
	}
	snprintf(base, sizeof(base), "%s", tmpl);
	for (int i = 0; i < runs; i++)
		p[i] = run_plain(secs);
	plain = bench_median(p, (size_t)runs);
	/* For each shape the three ways alternate run by run, so that all see the same
	 * minutes of a disk shared with other work. */
	for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
		static const char *const pols[] = {"fdatasync", "O_DSYNC", "O_DIRECT"};
		struct result res[3] = {{0}};
		double *vio[3];

		for (int io = 0; io < 3; io++)
			vio[io] = calloc((size_t)runs, sizeof(double));
		for (int i = 0; i < runs; i++)
			for (int io = 0; io < 3; io++) {
				res[io] = run_journal((enum jd_journal_io)io, shapes[sh].k, shapes[sh].batch,
						      secs);
				vio[io][i] = res[io].per_s;
			}
		for (int io = 0; io < 3; io++) {
			bench_row(r, shapes[sh].name, "records/s", pols[io],
				  bench_median(vio[io], (size_t)runs), "pwrite+fdatasync per record",
				  plain);
			if (io != 1 && (shapes[sh].k == 1 || shapes[sh].k == 64)) {
				char name[96];

				snprintf(name, sizeof(name), "journal bytes per record, %u outstanding",
					 shapes[sh].k);
				bench_row(r, name, "bytes", pols[io], res[io].bytes_per_rec, "payload",
					  PAYLOAD);
				snprintf(name, sizeof(name), "syncs per record, %u outstanding",
					 shapes[sh].k);
				bench_row(r, name, "syncs", pols[io], res[io].syncs_per_rec, NULL, 0);
			}
			free(vio[io]);
		}
	}
	disk_cpu_rows(r, bench_quick(r));
	{
		double hw[16], sw[16];
		int n = runs < 16 ? runs : 16;

		for (int i = 0; i < n; i++) {
			hw[i] = crc_rate(jd_crc32c, secs / 3);
			sw[i] = crc_rate(jd_crc32c_sw, secs / 3);
		}
		bench_row(r, "CRC-32C over a 256 KiB flush", "MB/s", "this build",
			  bench_median(hw, (size_t)n), "table (slicing-by-8)",
			  bench_median(sw, (size_t)n));
	}
	bench_note(r, "records of %d bytes; the journal in %s (ext4 here); the baseline writes "
		   "the same records one pwrite + fdatasync each", PAYLOAD, base);
	rmdir(base);
	free(p);
	return bench_report_finish(r);
}
