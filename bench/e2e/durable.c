/* bench/e2e/durable.c: part 6, durability: what the journal costs and what it buys.
 *
 *   - durable acknowledged submits/s with 1, 8 and 64 concurrent submitters (threads,
 *     each with its own connection, each submitting one noop at a time and waiting for
 *     its reply: with journal.sync "always" a reply means the job is on disk), and the
 *     p50 / p99 latency of one submit at 8; and as counts, which a shared machine does
 *     not blur: fdatasyncs per submit (1 / the records a flush carries), the daemon's
 *     context switches and CPU time per submit, beside the same with the journal off;
 *   - one client submitting batches of 1,000 (4 in flight), durable jobs/s, and the
 *     daemon's CPU time per job beside the journal off;
 * beside, in the same run: the floor, a bare group-commit log in this process (one
 * flusher thread, k submitter threads each with one 256-byte record outstanding: the
 * issue's own measurement of what the disk allows), through O_DIRECT | O_DSYNC and
 * through pwrite + fdatasync, flushing as soon as the last flush ended, and through
 * O_DIRECT | O_DSYNC with each flush waiting until all k records are in (the most a flush
 * of closed-loop submitters can carry), and with 2 and 4 flushes in flight (a flusher
 * thread each, every flush in blocks of its own, durable in order), and with its flusher
 * pinned to the disk's interrupt CPU (as jschedd's journal.cpu "auto"), with its records per
 * flush and its write + sync per flush beside jschedd's; jschedd with journal.sync "off" (nothing kept: the same rows),
 * jschedd with journal.io "fdatasync" (the page cache and an fdatasync per flush, beside
 * the default O_DIRECT writes; builds that have journal.io),
 * and beanstalkd with its binlog, `-b DIR -f 0` (fsync after every write) and `-f 50`
 * (at most every 50 ms: a crash can lose up to 50 ms of acknowledged puts), each
 * submitter putting one job at a time over its own connection;
 *   - tiny-job throughput (200,000 noops, batches, waited for) with the journal beside
 *     without it;
 *   - journal bytes per job, from the metrics (records of submit, queued, running, final);
 *   - the flush cycle with 1, 8 and 64 submitters: the run's time per flush (every build
 *     has the flush count) beside beanstalkd -f 0's time per put (one fsync each, taken
 *     in turn, so that is its sync), and where a cycle's time goes, from the journal's
 *     metrics (journal.cycle, in builds that have them): the write + sync, the
 *     flusher's gathering, its wake-up by a demand, the hand-off to the loop (notify
 *     to the uv_async's callback), the replies' release, and the rest (the submitters'
 *     next requests and the loop reading them);
 *   - recovery: the daemon killed (SIGKILL) holding N retained jobs, restarted; the
 *     recovery time it reports, per million jobs (N = 1,000,000 in one run, 20,000 with
 *     --quick), the CPU time the restarted daemon had used when it first answered, and
 *     its RSS then: for jobs submitted with one spec, and for jobs whose specs all differ
 *     (a name and args of their own).  BENCH_E2E_DURABLE=recovery runs only these.
 *
 * BENCH_E2E_DURABLE=submitters runs only the submitter rows (1, 8 and 64 and the flush
 * cycle), for trying a change; =jschedd only jschedd's own submitter rows with the journal
 * on (rates, cycle, counts: no floor, no beanstalkd, no journal off), for A/B of builds
 * alternated in the same minutes (BENCH_E2E_JSCHEDD; BENCH_E2E_DURABLE_KS=8 or 1,64 picks
 * the submitter counts); =batches only the rows of batches and tiny jobs (journal on
 * and off); =bare only the floor's rows, its
 * variants side by side (among them 2 and 4 flushes in flight: what that would give on
 * this disk).
 *
 * The journal lives in the part's temporary folder, which is on the machine's disk
 * (/tmp here is ext4: a tmpfs would make every sync free and the rows meaningless).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"
#include "daemon/core/diskcpu.h"

enum { MAX_SUBMITTERS = 64, LAT_MAX = 200000 };

struct submitter {
	pthread_t th;
	struct e2e_daemon *d;	/* jschedd, or NULL for beanstalkd */
	int bs_port;
	const struct jsched_spec *spec;
	uint64_t until_ns;
	uint64_t n;
	double *lat_us;		/* latencies, if not NULL (up to LAT_MAX) */
	size_t nlat;
	pthread_barrier_t *go;
};

static void *submitter_main(void *arg)
{
	struct submitter *s = arg;
	struct jsched_conn *c = NULL;
	struct bs_conn *bs = NULL;

	if (s->d) {
		c = e2e_connect(s->d, "durable");
	} else {
		bs = malloc(sizeof(*bs));
		if (!bs)
			e2e_die("out of memory");
		bs_connect(bs, s->bs_port);
	}
	pthread_barrier_wait(s->go);
	while (bench_now_ns() < s->until_ns) {
		uint64_t t0 = bench_now_ns(), id;

		if (c) {
			int rc = jsched_submit(c, s->spec, &id);

			if (rc != 0)
				e2e_die("submit: %s", jsched_strerror(rc));
		} else {
			bs_put(bs, "noop", 4);
		}
		if (s->lat_us && s->nlat < LAT_MAX)
			s->lat_us[s->nlat++] = (double)(bench_now_ns() - t0) / 1e3;
		s->n++;
	}
	if (c)
		jsched_close(c);
	if (bs) {
		bs_close(bs);
		free(bs);
	}
	return NULL;
}

/* What the daemon spent on a run, as counts (less noisy than times on a shared machine):
 * its context switches (every thread's, voluntary and not), its CPU time, and from its
 * metrics the submits, the journal's fdatasyncs and records. */
struct counts {
	double submitted, syncs, records, csw, cpu_s;
	double flushes, io_us, gather_us, gap_us, wakes, wake_us, handoffs, handoff_us,
		release_us; /* journal.cycle (NAN where a build has none) */
	double gathers, gathers_late; /* journal.cycle, newer builds */
	double gathers_spun;	      /* journal.cycle.gathers_spun (journal.gather_spin) */
	double loop_windows;	      /* loop.poll.journal_windows: the loop polled for a flush */
	uint64_t t_ns;
};

static void counts_take(struct e2e_daemon *d, struct counts *out)
{
	char path[96], line[256];
	struct jsched_conn *c = e2e_connect(d, "m");
	struct dirent *de;
	DIR *dp;
	FILE *f;

	memset(out, 0, sizeof(*out));
	out->submitted = e2e_metrics_number(c, "jobs/submitted");
	out->syncs = e2e_metrics_number(c, "journal/syncs");
	out->records = e2e_metrics_number(c, "journal/records");
	out->flushes = e2e_metrics_number(c, "journal/flushes");
	out->io_us = e2e_metrics_number(c, "journal/cycle/io_us");
	out->gather_us = e2e_metrics_number(c, "journal/cycle/gather_us");
	out->gap_us = e2e_metrics_number(c, "journal/cycle/gap_us");
	out->wakes = e2e_metrics_number(c, "journal/cycle/wakes");
	out->wake_us = e2e_metrics_number(c, "journal/cycle/wake_us");
	out->handoffs = e2e_metrics_number(c, "journal/cycle/handoffs");
	out->handoff_us = e2e_metrics_number(c, "journal/cycle/handoff_us");
	out->release_us = e2e_metrics_number(c, "journal/cycle/release_us");
	out->gathers = e2e_metrics_number(c, "journal/cycle/gathers");
	out->gathers_late = e2e_metrics_number(c, "journal/cycle/gathers_late");
	out->gathers_spun = e2e_metrics_number(c, "journal/cycle/gathers_spun");
	out->loop_windows = e2e_metrics_number(c, "loop/poll/journal_windows");
	out->t_ns = bench_now_ns();
	jsched_close(c);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)d->pid);
	if ((dp = opendir(path))) {
		while ((de = readdir(dp))) {
			long v;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.20s/status", (int)d->pid,
				 de->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			while (fgets(line, sizeof(line), f))
				if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
				    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
					out->csw += (double)v;
			fclose(f);
		}
		closedir(dp);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)d->pid);
	if ((f = fopen(path, "r"))) {
		unsigned long ut = 0, st = 0;
		char *p;

		if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')) &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			   &st) == 2)
			out->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
		fclose(f);
	}
}

/* counts_per_submit: b - a, per submit made between them. */
static void counts_per_submit(const struct counts *a, const struct counts *b, struct counts *per)
{
	double n = b->submitted - a->submitted;

	if (n <= 0)
		n = 1;
	per->submitted = n;
	per->syncs = (b->syncs - a->syncs) / n;
	per->records = (b->records - a->records) / n;
	per->csw = (b->csw - a->csw) / n;
	per->cpu_s = (b->cpu_s - a->cpu_s) / n;
}

/* The flush cycle's parts, per flush, between two counts (us). */
enum { P_CYCLE, P_IO, P_GATHER, P_WAKE, P_HANDOFF, P_RELEASE, P_REST, P_GATHERS, P_LATE,
       P_SPUN, P_LOOPWIN, NPARTS };
static const char *const part_names[NPARTS] = {
	"flush cycle (run time per flush)", "cycle part: write + sync",
	"of which the flusher gathered waiters", "cycle part: flusher woken by a demand",
	"cycle part: hand-off to the loop (notify to uv_async callback)",
	"cycle part: releasing the held replies",
	"cycle part: the rest (replies to next demand: submitters, loop)",
	"flushes after which the flusher gathered (share)",
	"gathers that ran out of time (share of flushes)",
	"gathers polled for, not slept (share of flushes)",
	"loop's polls for a group's flush (per flush)"};
/* The unit of each part's row. */
static const char *const part_units[NPARTS] = {"us", "us", "us", "us", "us", "us", "us",
					       "share", "share", "share", "windows"};

static void cycle_parts(const struct counts *a, const struct counts *b, double out[NPARTS])
{
	double fl = b->flushes - a->flushes, ho = b->handoffs - a->handoffs;

	if (!(fl > 0))
		fl = 1;
	out[P_CYCLE] = (double)(b->t_ns - a->t_ns) / 1e3 / fl;
	out[P_IO] = (b->io_us - a->io_us) / fl;
	out[P_GATHER] = (b->gather_us - a->gather_us) / fl;
	/* per flush: a flush that gathered was not woken, so spread over all */
	out[P_WAKE] = (b->wake_us - a->wake_us) / fl;
	out[P_HANDOFF] = ho > 0 ? (b->handoff_us - a->handoff_us) / ho : NAN;
	out[P_RELEASE] = ho > 0 ? (b->release_us - a->release_us) / ho : NAN;
	/* The gathering overlaps the loop's side (the flusher waits while the replies go and
	 * the next demands come), so the rest is what the chain leaves. */
	out[P_REST] = out[P_CYCLE] - out[P_IO] - out[P_WAKE] - out[P_HANDOFF] - out[P_RELEASE];
	out[P_GATHERS] = (b->gathers - a->gathers) / fl;
	out[P_LATE] = (b->gathers_late - a->gathers_late) / fl;
	out[P_SPUN] = (b->gathers_spun - a->gathers_spun) / fl;
	out[P_LOOPWIN] = (b->loop_windows - a->loop_windows) / fl;
}

/* submitters: k threads submitting for secs; returns submits/s, and the p50/p99 latency
 * in us if lat is not NULL. */
static double submitters(struct e2e_daemon *d, int bs_port, const struct jsched_spec *spec, int k,
			 double secs, double lat[2])
{
	struct submitter s[MAX_SUBMITTERS];
	pthread_barrier_t go;
	uint64_t t0, total = 0;
	double *all = NULL;
	size_t nall = 0;

	pthread_barrier_init(&go, NULL, (unsigned)k + 1);
	memset(s, 0, sizeof(s));
	for (int i = 0; i < k; i++) {
		s[i].d = d;
		s[i].bs_port = bs_port;
		s[i].spec = spec;
		s[i].go = &go;
		s[i].until_ns = UINT64_MAX;
		if (lat && !(s[i].lat_us = malloc(LAT_MAX * sizeof(double))))
			e2e_die("out of memory");
		pthread_create(&s[i].th, NULL, submitter_main, &s[i]);
	}
	t0 = bench_now_ns();
	for (int i = 0; i < k; i++)
		s[i].until_ns = t0 + (uint64_t)(secs * 1e9);
	pthread_barrier_wait(&go);
	t0 = bench_now_ns();
	for (int i = 0; i < k; i++) {
		pthread_join(s[i].th, NULL);
		total += s[i].n;
	}
	if (lat) {
		all = malloc((size_t)k * LAT_MAX * sizeof(double));
		for (int i = 0; i < k; i++) {
			memcpy(all + nall, s[i].lat_us, s[i].nlat * sizeof(double));
			nall += s[i].nlat;
			free(s[i].lat_us);
		}
		lat[0] = e2e_percentile(all, nall, 0.50);
		lat[1] = e2e_percentile(all, nall, 0.99);
		free(all);
	}
	pthread_barrier_destroy(&go);
	return (double)total / ((double)(bench_now_ns() - t0) / 1e9);
}

static double batches(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "batches");
	uint64_t *ids = malloc(n * sizeof(*ids)), t0 = bench_now_ns();
	double r;

	if (!ids)
		e2e_die("out of memory");
	e2e_submit_pipelined(c, spec, n, 1000, 4, ids);
	r = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	free(ids);
	jsched_close(c);
	return r;
}

static double tiny(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "tiny");
	uint64_t *ids = malloc(n * sizeof(*ids)), t0 = bench_now_ns();
	double r;

	if (!ids)
		e2e_die("out of memory");
	e2e_submit_pipelined(c, spec, n, 1000, 4, ids);
	e2e_wait_ids(c, ids, n);
	r = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	free(ids);
	jsched_close(c);
	return r;
}

/* ---- the floor: a bare group-commit log in this process ----------------------------- *
 *
 * What the disk allows, measured beside jschedd in the same run: one flusher thread and
 * k submitter threads, each with one 256-byte record outstanding (append it under the
 * log's mutex, wait until it is durable, again).  The flusher takes everything appended
 * since its last flush (two buffers, swapped) and writes it with one pwrite + fdatasync
 * into a file written with zeros beforehand (never grown under a flush), or with one
 * pwrite of whole blocks through O_DIRECT | O_DSYNC; the next flush starts as soon as the
 * last one ends, with whatever has arrived (no gathering).  A submitter waits on the
 * condition variable of its flush's parity, so a flush's end wakes only its own
 * submitters.  No checksums, no framing, no sockets: the records are copied and written.
 * The file is BARE_FILE bytes, and a flush that would run past its end starts again at
 * offset 0 (its blocks are written already, as a preallocated segment's are: a log would
 * go on in the next such segment).  */
enum { BARE_REC = 256, BARE_BLOCK = 4096, BARE_BUF = 1 << 20, BARE_FLIGHT_MAX = 4 };
#define BARE_FILE (32u << 20)

struct bare {
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done[BARE_FLIGHT_MAX + 1];
	unsigned char *buf[BARE_FLIGHT_MAX + 1];	/* aligned, BARE_BUF each */
	size_t len;		/* of buf[cur] */
	int cur;
	int free_bufs[BARE_FLIGHT_MAX + 1], nfree;	/* buffers not in use */
	uint64_t appended, durable, started, flushes;
	/* flushes in flight ended out of order: the last record of flush k (started k)
	 * when it ended and durable has not passed it yet, else 0 */
	uint64_t ended_last[BARE_FLIGHT_MAX + 1];
	uint64_t durable_flush;	/* every flush up to this one ended */
	bool stop;
	int waiting;		/* flushers asleep for want of records */
	bool gather;		/* wait until every running submitter has a record in */
	int flight;		/* flushes in flight at most (one flusher thread each) */
	int active;		/* submitters still running (under mu) */
	int fd;
	bool direct;
	uint64_t off;
	uint64_t until_ns;
	uint64_t sync_ns;	/* the flushers' time in pwrite (+ fdatasync), summed */
	pthread_barrier_t go;
};

/* The floor's variants, in the order they run. */
enum { NBARE = 6 };
static const struct {
	const char *name;
	bool direct, gather;
	int flight;
	bool pin;	/* the flusher on the disk's interrupt CPU (jschedd's journal.cpu "auto") */
} bare_modes[NBARE] = {
	{"O_DIRECT|O_DSYNC", true, false, 1, false},
	{"pwrite+fdatasync", false, false, 1, false},
	{"O_DIRECT|O_DSYNC, each flush waiting for all k", true, true, 1, false},
	{"O_DIRECT|O_DSYNC, 2 flushes in flight", true, false, 2, false},
	{"O_DIRECT|O_DSYNC, 4 flushes in flight", true, false, 4, false},
	{"O_DIRECT|O_DSYNC, flusher on the disk's interrupt CPU", true, false, 1, true},
};

/* bare_flusher: one of b->flight flusher threads.  Each takes everything appended since
 * the last flush began (the current buffer, swapped for a free one) as soon as it is
 * free and there is something, writes it at the next offset (whole blocks: no two
 * flushes share one, so flushes in flight never write the same block), and marks its
 * flush ended; the durable position advances in order, over every flush that ended
 * with all those before it. */
static void *bare_flusher(void *arg)
{
	struct bare *b = arg;
	const int ncv = BARE_FLIGHT_MAX + 1;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		unsigned char *p;
		size_t n, w;
		uint64_t last, k, t0, off;
		int bi;

		/* (Not a flush more than `flight` past the durable one: the ring of ended
		 * flushes has that many slots, and a slow flush holds the others' turn.) */
		while ((!b->len || (b->gather && b->len < (size_t)b->active * BARE_REC) ||
			b->started - b->durable_flush >= (uint64_t)b->flight) &&
		       !b->stop) {
			b->waiting++;
			pthread_cond_wait(&b->cv_work, &b->mu);
			b->waiting--;
		}
		if (!b->len)
			break;
		bi = b->cur;
		p = b->buf[bi];
		n = b->len;
		b->cur = b->free_bufs[--b->nfree];
		b->len = 0;
		k = ++b->started;
		last = b->appended;
		w = b->direct ? (n + BARE_BLOCK - 1) & ~(size_t)(BARE_BLOCK - 1) : n;
		if (b->off + w > BARE_FILE)
			b->off = 0;
		off = b->off;
		b->off += w;
		pthread_mutex_unlock(&b->mu);
		memset(p + n, 0, w - n);
		t0 = bench_now_ns();
		if (pwrite(b->fd, p, w, (off_t)off) != (ssize_t)w)
			e2e_die("bare log: pwrite: %s", strerror(errno));
		if (!b->direct && fdatasync(b->fd) < 0)
			e2e_die("bare log: fdatasync: %s", strerror(errno));
		pthread_mutex_lock(&b->mu);
		b->sync_ns += bench_now_ns() - t0;
		b->flushes++;
		b->free_bufs[b->nfree++] = bi;
		b->ended_last[k % (uint64_t)ncv] = last;
		while (b->ended_last[(b->durable_flush + 1) % (uint64_t)ncv]) {
			uint64_t f = ++b->durable_flush;

			b->durable = b->ended_last[f % (uint64_t)ncv];
			b->ended_last[f % (uint64_t)ncv] = 0;
			pthread_cond_broadcast(&b->cv_done[f % (uint64_t)ncv]);
			if (b->waiting)
				pthread_cond_broadcast(&b->cv_work); /* a turn came free */
		}
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

struct bare_sub {
	pthread_t th;
	struct bare *b;
	uint64_t n;
};

static void *bare_submitter(void *arg)
{
	struct bare_sub *s = arg;
	struct bare *b = s->b;
	unsigned char rec[BARE_REC];

	memset(rec, 'r', sizeof(rec));
	pthread_barrier_wait(&b->go);
	while (bench_now_ns() < b->until_ns) {
		uint64_t seq, k;

		pthread_mutex_lock(&b->mu);
		seq = ++b->appended;
		memcpy(rec, &seq, sizeof(seq));
		memcpy(b->buf[b->cur] + b->len, rec, sizeof(rec));
		b->len += sizeof(rec);
		k = b->started + 1; /* the flush that will carry it */
		if (b->waiting)
			pthread_cond_signal(&b->cv_work);
		while (b->durable < seq)
			pthread_cond_wait(&b->cv_done[k % (BARE_FLIGHT_MAX + 1)], &b->mu);
		pthread_mutex_unlock(&b->mu);
		s->n++;
	}
	pthread_mutex_lock(&b->mu);
	b->active--; /* a gathering flusher waits for one record fewer */
	pthread_cond_broadcast(&b->cv_work);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* bare_file: the floor's file in dir, BARE_FILE bytes of zeros on disk. */
static void bare_file(const char *dir, char *path, size_t len)
{
	static unsigned char zeros[1 << 20];
	int fd;

	snprintf(path, len, "%s/log", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		e2e_die("bare log: %s: %s", path, strerror(errno));
	for (uint64_t off = 0; off < BARE_FILE; off += sizeof(zeros))
		if (pwrite(fd, zeros, sizeof(zeros), (off_t)off) != (ssize_t)sizeof(zeros))
			e2e_die("bare log: zeroing %s: %s", path, strerror(errno));
	if (fsync(fd) < 0)
		e2e_die("bare log: fsync %s: %s", path, strerror(errno));
	close(fd);
}

/* bare_run: k submitters for secs on the floor's file at path, through O_DIRECT |
 * O_DSYNC if direct, else pwrite + fdatasync; each flush waiting until all k have a
 * record in if gather (what no server can know: the most a flush of closed-loop
 * submitters can carry); up to `flight` flushes in flight; returns records/s, and the
 * records per flush and a flush's time in the write (+ sync) (us). */
static double bare_run(const char *path, bool direct, bool gather, int flight, bool pin, int k,
		       double secs, double *per_flush, double *sync_us)
{
	int cpu = pin ? jd_disk_irq_cpu(path, NULL, 0) : -1;
	struct bare b;
	struct bare_sub s[MAX_SUBMITTERS];
	pthread_t fl[BARE_FLIGHT_MAX];
	uint64_t t0, total = 0;
	double rate;

	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv_work, NULL);
	for (int i = 0; i <= BARE_FLIGHT_MAX; i++)
		pthread_cond_init(&b.cv_done[i], NULL);
	pthread_barrier_init(&b.go, NULL, (unsigned)k + 1);
	for (int i = 0; i <= flight; i++) {
		void *p;

		if (posix_memalign(&p, BARE_BLOCK, BARE_BUF))
			e2e_die("out of memory");
		b.buf[i] = p;
		if (i)
			b.free_bufs[b.nfree++] = i;
	}
	b.direct = direct;
	b.gather = gather;
	b.flight = flight;
	b.active = k;
	b.fd = open(path, O_RDWR | O_CLOEXEC | (direct ? O_DIRECT | O_DSYNC : 0));
	if (b.fd < 0)
		e2e_die("bare log: %s: %s", path, strerror(errno));
	b.until_ns = UINT64_MAX;
	memset(s, 0, sizeof(s));
	for (int i = 0; i < flight; i++) {
		pthread_create(&fl[i], NULL, bare_flusher, &b);
		if (cpu >= 0) { /* (none found: the row is the first variant again) */
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pthread_setaffinity_np(fl[i], sizeof(one), &one);
		}
	}
	for (int i = 0; i < k; i++) {
		s[i].b = &b;
		pthread_create(&s[i].th, NULL, bare_submitter, &s[i]);
	}
	b.until_ns = bench_now_ns() + (uint64_t)(secs * 1e9);
	pthread_barrier_wait(&b.go);
	t0 = bench_now_ns();
	for (int i = 0; i < k; i++) {
		pthread_join(s[i].th, NULL);
		total += s[i].n;
	}
	rate = (double)total / ((double)(bench_now_ns() - t0) / 1e9);
	pthread_mutex_lock(&b.mu);
	b.stop = true;
	pthread_cond_broadcast(&b.cv_work);
	pthread_mutex_unlock(&b.mu);
	for (int i = 0; i < flight; i++)
		pthread_join(fl[i], NULL);
	*per_flush = b.flushes ? (double)total / (double)b.flushes : NAN;
	*sync_us = b.flushes ? (double)b.sync_ns / 1e3 / (double)b.flushes : NAN;
	close(b.fd);
	for (int i = 0; i <= flight; i++)
		free(b.buf[i]);
	pthread_barrier_destroy(&b.go);
	for (int i = 0; i <= BARE_FLIGHT_MAX; i++)
		pthread_cond_destroy(&b.cv_done[i]);
	pthread_cond_destroy(&b.cv_work);
	pthread_mutex_destroy(&b.mu);
	return rate;
}

/* bare_rows: the floor alone (BENCH_E2E_DURABLE=bare), each variant beside the first
 * (O_DIRECT | O_DSYNC, one flush in flight), the variants alternated within every run:
 * what several flushes in flight would give on this disk, without a daemon. */
static void bare_rows(struct e2e *e, const char *path, const int *ks, size_t nk, double secs,
		      int runs)
{
	double rate[NBARE][16], per[NBARE][16], sync[NBARE][16];

	for (size_t ki = 0; ki < nk; ki++) {
		int k = ks[ki];

		for (int r = 0; r < runs; r++)
			for (int m = 0; m < NBARE; m++)
				rate[m][r] = bare_run(path, bare_modes[m].direct, bare_modes[m].gather,
						      bare_modes[m].flight, bare_modes[m].pin, k, secs, &per[m][r],
						      &sync[m][r]);
		for (int m = 0; m < NBARE; m++) {
			char name[160], base[96];

			snprintf(base, sizeof(base), "bare log, %s", bare_modes[0].name);
			snprintf(name, sizeof(name), "bare group-commit log, %s, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "records/s", NULL, e2e_median_of(rate[m], (size_t)runs),
				  base, e2e_median_of(rate[0], (size_t)runs));
			snprintf(name, sizeof(name), "bare log, %s, records per flush, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "records", NULL, e2e_median_of(per[m], (size_t)runs),
				  base, e2e_median_of(per[0], (size_t)runs));
			snprintf(name, sizeof(name),
				 "bare log, %s, write + sync per flush, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "us", NULL, e2e_median_of(sync[m], (size_t)runs), base,
				  e2e_median_of(sync[0], (size_t)runs));
		}
	}
}

#define ROOM "\"retention\": {\"jobs\": 2000000}, \"limits\": {\"queued_jobs\": 2000000}, " \
	"\"clients\": {\"default\": {\"max_queued\": 2000000}}"
static const char *const journal_on = "\"journal\": {\"dir\": \"%s/journal\"}, " ROOM;
static const char *const journal_off = "\"journal\": {\"sync\": \"off\"}, " ROOM;

/* For the recovery row: a million retained jobs are over the default retention.bytes;
 * a build from before that limit refuses the key, so it is given only to a jschedd whose
 * --check-config takes it. */
#define ROOM_BIG "\"retention\": {\"jobs\": 2000000, \"bytes\": \"64G\"}, " \
	"\"limits\": {\"queued_jobs\": 2000000}, \"clients\": {\"default\": {\"max_queued\": 2000000}}"
static const char *const journal_on_big = "\"journal\": {\"dir\": \"%s/journal\"}, " ROOM_BIG;

static bool takes_config(const char *dir, const char *doc)
{
	const char *bin = getenv("BENCH_E2E_JSCHEDD");
	char path[256], cmd[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/check.json", dir);
	if (!(f = fopen(path, "w")))
		return false;
	fprintf(f, "%s\n", doc);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' --check-config -c '%s' >/dev/null 2>&1",
		 bin && bin[0] ? bin : JSCHEDD_BIN, path);
	return system(cmd) == 0;
}

static bool takes_retention_bytes(const char *dir)
{
	return takes_config(dir, "{\"retention\": {\"bytes\": \"64G\"}, \"journal\": {\"sync\": \"off\"}}");
}

/* The journal written through the page cache and fdatasync (journal.io), beside the
 * default: for builds that have the choice. */
static const char *const journal_fdatasync =
	"\"journal\": {\"dir\": \"%s/journal\", \"io\": \"fdatasync\"}, " ROOM;

/* start_with: a daemon with the journal in its own folder (on) or none; written through
 * the page cache and fdatasync if `fdatasync` (else the build's default). */
static void start_with(struct e2e_daemon *d, bool on, bool fdatasync)
{
	char members[512];

	if (!on) {
		e2e_daemon_start(d, journal_off);
		return;
	}
	/* The folder is made by e2e_daemon_start; the journal dir goes inside it, so
	 * start once to learn it, then again with the dir set. */
	e2e_daemon_start(d, journal_off);
	if (fdatasync)
		snprintf(members, sizeof(members), journal_fdatasync, d->dir);
	else
		snprintf(members, sizeof(members), journal_on, d->dir);
	e2e_daemon_restart(d, members);
}

static void start(struct e2e_daemon *d, bool on)
{
	start_with(d, on, false);
}

/* on_off: the row `name` of fn (jobs/s) with the journal beside without it, in the same
 * runs, and the journal's bytes per job after fn (row `bytes_name`). */
static void on_off(struct e2e *e, const char *name, const char *bytes_name, const char *cpu_name,
		   double (*fn)(struct e2e_daemon *, const struct jsched_spec *, size_t),
		   const struct jsched_spec *spec, size_t n)
{
	double v[16], b0[16], cpu_on[16], cpu_off[16], bytes = 0;
	struct e2e_daemon d;
	struct counts c0, c1, per;
	int runs = e->runs_long;

	for (int r = 0; r < runs; r++) {
		struct jsched_conn *c;

		start(&d, true);
		counts_take(&d, &c0);
		v[r] = fn(&d, spec, n);
		counts_take(&d, &c1);
		counts_per_submit(&c0, &c1, &per);
		cpu_on[r] = per.cpu_s * 1e6;
		c = e2e_connect(&d, "m");
		bytes = e2e_metrics_number(c, "journal/bytes_written") /
			e2e_metrics_number(c, "jobs/submitted");
		jsched_close(c);
		e2e_daemon_stop(&d);
		start(&d, false);
		counts_take(&d, &c0);
		b0[r] = fn(&d, spec, n);
		counts_take(&d, &c1);
		counts_per_submit(&c0, &c1, &per);
		cpu_off[r] = per.cpu_s * 1e6;
		e2e_daemon_stop(&d);
	}
	bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
		  "jschedd journal off", e2e_median_of(b0, (size_t)runs));
	bench_row(e->rep, cpu_name, "us", "always", e2e_median_of(cpu_on, (size_t)runs),
		  "jschedd journal off", e2e_median_of(cpu_off, (size_t)runs));
	bench_row(e->rep, bytes_name, "bytes", "always", bytes, NULL, 0);
}

/* What a restart with n retained jobs took: the recovery time it reports and the CPU time
 * it had used when it first answered (s per million jobs), and its RSS then (per job). */
struct recovered {
	double s_per_million, cpu_per_million, rss_per_job;
};

/* fill_distinct: n noop calls, each with a name and args of its own ("job-N", {"i": N}),
 * in batches of 1,000, waited for until final. */
static void fill_distinct(struct e2e_daemon *d, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "distinct");
	uint64_t *ids = malloc(n * sizeof(*ids));
	struct jsched_spec *specs[1000];

	if (!ids)
		e2e_die("out of memory");
	for (size_t at = 0; at < n; at += 1000) {
		size_t k = n - at < 1000 ? n - at : 1000;
		char args[64], name[64];
		int rc;

		for (size_t i = 0; i < k; i++) {
			snprintf(args, sizeof(args), "{\"i\": %zu}", at + i);
			snprintf(name, sizeof(name), "job-%zu", at + i);
			if (jsched_spec_call("noop", args, &specs[i]) != 0 ||
			    jsched_spec_set_name(specs[i], name) != 0)
				e2e_die("spec");
		}
		rc = jsched_submit_batch(c, (const struct jsched_spec *const *)specs, k, ids + at);
		if (rc != 0)
			e2e_die("submit: %s (%s)", jsched_strerror(rc), jsched_error_message(c));
		for (size_t i = 0; i < k; i++)
			jsched_spec_free(specs[i]);
	}
	e2e_wait_ids(c, ids, n);
	free(ids);
	jsched_close(c);
}

/* recovery: a daemon holding n final jobs (of one spec, or distinct), killed with SIGKILL
 * and started again on its journal. */
static void recovery(struct e2e *e, const struct jsched_spec *spec, size_t n, bool distinct,
		     struct recovered *out)
{
	char members[512];
	struct e2e_daemon d;
	struct counts c1;
	struct jsched_conn *c;

	(void)e;
	e2e_daemon_start(&d, journal_off);
	if (takes_retention_bytes(d.dir))
		snprintf(members, sizeof(members), journal_on_big, d.dir);
	else
		snprintf(members, sizeof(members), journal_on, d.dir);
	e2e_daemon_restart(&d, members);
	if (distinct)
		fill_distinct(&d, n);
	else
		tiny(&d, spec, n);
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	e2e_untrack(d.pid);
	e2e_daemon_respawn(&d, members);
	counts_take(&d, &c1);
	out->cpu_per_million = c1.cpu_s * (1e6 / (double)n);
	out->rss_per_job = (double)e2e_rss_kib(d.pid) * 1024.0 / (double)n;
	c = e2e_connect(&d, "m");
	out->s_per_million = e2e_metrics_number(c, "journal/recover_ms") / 1e3 * (1e6 / (double)n);
	if ((size_t)e2e_metrics_number(c, "journal/recovered_jobs") < n)
		e2e_die("recovery found %.0f jobs of %zu",
			e2e_metrics_number(c, "journal/recovered_jobs"), n);
	jsched_close(c);
	e2e_daemon_stop(&d);
}

/* in_list: is k one of the comma-separated numbers in list? */
static bool in_list(const char *list, int k)
{
	while (*list) {
		char *end;
		long v = strtol(list, &end, 10);

		if (end == list)
			return false;
		if (v == k)
			return true;
		list = *end == ',' ? end + 1 : end;
	}
	return false;
}

void e2e_durable(struct e2e *e)
{
	struct jsched_spec *spec = NULL;
	static const int ks[] = {1, 8, 64};
	double secs = e->quick ? 0.3 : 1.5;
	int runs = e->runs_long;
	double v[16], b0[16], b1[16], b2[16];
	/* the floor, per bare_modes: records/s, records per flush, write + sync per flush */
	double bare_rate[NBARE][16], bare_per[NBARE][16], bare_sync[NBARE][16];
	char bare_dir[64] = "", bare_path[128];
	double sy[16], cs_on[16], cs_off[16], cpu_on[16], cpu_off[16], parts[NPARTS][16], b3[16];
	int has_io = -1;
	const char *only = getenv("BENCH_E2E_DURABLE");
	bool ours_only = only && strcmp(only, "jschedd") == 0;
	double lat_on[2] = {0}, lat_off[2] = {0}, lat_bs[2] = {0};
	struct e2e_daemon d;
	struct e2e_beanstalkd bs;
	char bsdir[128];

	if (jsched_spec_call("noop", NULL, &spec) != 0)
		e2e_die("spec");
	if (only && strcmp(only, "recovery") == 0)
		goto recovery_rows;
	if (only && strcmp(only, "batches") == 0)
		goto batch_rows;
	snprintf(bare_dir, sizeof(bare_dir), "/tmp/bench-bare-XXXXXX");
	if (!mkdtemp(bare_dir))
		e2e_die("mkdtemp: %s", strerror(errno));
	e2e_track_dir(bare_dir, true);
	bare_file(bare_dir, bare_path, sizeof(bare_path));
	if (only && strcmp(only, "bare") == 0) {
		bare_rows(e, bare_path, ks, 3, secs, runs);
		e2e_rm_rf(bare_dir);
		e2e_track_dir(bare_dir, false);
		goto out;
	}
	for (size_t ki = 0; ki < 3; ki++) {
		int k = ks[ki];
		char name[96];

		if (ours_only && getenv("BENCH_E2E_DURABLE_KS") &&
		    !in_list(getenv("BENCH_E2E_DURABLE_KS"), k))
			continue;

		for (int r = 0; r < runs; r++) {
			double *lon = k == 8 ? lat_on : NULL, *loff = k == 8 ? lat_off : NULL,
			       *lbs = k == 8 ? lat_bs : NULL;

			struct counts c0, c1, per;

			/* The floor first, then jschedd, then the baselines, in every run. */
			for (int m = 0; m < NBARE; m++)
				bare_rate[m][r] = ours_only ? NAN : bare_run(bare_path, bare_modes[m].direct,
							   bare_modes[m].gather,
							   bare_modes[m].flight, bare_modes[m].pin,
							   k, secs, &bare_per[m][r], &bare_sync[m][r]);
			start(&d, true);
			counts_take(&d, &c0);
			v[r] = submitters(&d, 0, spec, k, secs, lon);
			counts_take(&d, &c1);
			counts_per_submit(&c0, &c1, &per);
			{
				double pp[NPARTS];

				cycle_parts(&c0, &c1, pp);
				for (int q = 0; q < NPARTS; q++)
					parts[q][r] = pp[q];
			}
			sy[r] = per.syncs;
			cs_on[r] = per.csw;
			cpu_on[r] = per.cpu_s * 1e6;
			e2e_daemon_stop(&d);
			if (ours_only) {
				b0[r] = b1[r] = b2[r] = b3[r] = cs_off[r] = cpu_off[r] = NAN;
				for (int m = 0; m < NBARE; m++)
					bare_per[m][r] = bare_sync[m][r] = NAN;
				if (k == 8)
					lat_off[0] = lat_off[1] = lat_bs[0] = lat_bs[1] = NAN;
				continue;
			}
			start(&d, false);
			counts_take(&d, &c0);
			b0[r] = submitters(&d, 0, spec, k, secs, loff);
			counts_take(&d, &c1);
			counts_per_submit(&c0, &c1, &per);
			cs_off[r] = per.csw;
			cpu_off[r] = per.cpu_s * 1e6;
			if (has_io < 0)
				has_io = takes_config(d.dir, "{\"journal\": {\"io\": \"fdatasync\", "
						      "\"sync\": \"off\"}}");
			e2e_daemon_stop(&d);
			b3[r] = NAN;
			if (has_io) {
				start_with(&d, true, true);
				b3[r] = submitters(&d, 0, spec, k, secs, NULL);
				e2e_daemon_stop(&d);
			}
			snprintf(bsdir, sizeof(bsdir), "/tmp/bench-bs-XXXXXX");
			if (!mkdtemp(bsdir))
				e2e_die("mkdtemp: %s", strerror(errno));
			e2e_track_dir(bsdir, true);
			e2e_beanstalkd_start_binlog(&bs, bsdir, 0);
			b1[r] = submitters(NULL, bs.port, spec, k, secs, lbs);
			e2e_beanstalkd_stop(&bs);
			e2e_rm_rf(bsdir);
			if (!mkdtemp(strcpy(bsdir, "/tmp/bench-bs-XXXXXX")))
				e2e_die("mkdtemp: %s", strerror(errno));
			e2e_beanstalkd_start_binlog(&bs, bsdir, 50);
			b2[r] = submitters(NULL, bs.port, spec, k, secs, NULL);
			e2e_beanstalkd_stop(&bs);
			e2e_rm_rf(bsdir);
			e2e_track_dir(bsdir, false);
		}
		snprintf(name, sizeof(name), "durable submits, %d submitter%s", k, k > 1 ? "s" : "");
		if (ours_only)
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  NULL, 0);
		for (int m = 0; m < NBARE && !ours_only; m++) {
			char base[96];

			snprintf(base, sizeof(base), "bare group-commit log, %s", bare_modes[m].name);
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  base, e2e_median_of(bare_rate[m], (size_t)runs));
		}
		if (!ours_only) {
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  "beanstalkd -b -f 0", e2e_median_of(b1, (size_t)runs));
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  "beanstalkd -b -f 50 (not durable)", e2e_median_of(b2, (size_t)runs));
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  "jschedd journal off", e2e_median_of(b0, (size_t)runs));
		}
		if (has_io > 0 && !ours_only)
			bench_row(e->rep, name, "jobs/s", "always", e2e_median_of(v, (size_t)runs),
				  "jschedd journal.io fdatasync", e2e_median_of(b3, (size_t)runs));
		{
			double bs_put[16];

			for (int r = 0; r < runs; r++)
				bs_put[r] = b1[r] > 0 ? 1e6 / b1[r] : NAN;
			for (int q = 0; q < NPARTS; q++) {
				snprintf(name, sizeof(name), "%s, %d submitter%s", part_names[q], k,
					 k > 1 ? "s" : "");
				if (isnan(e2e_median_of(parts[q], (size_t)runs)))
					continue; /* a build without journal.cycle */
				bench_row(e->rep, name, part_units[q], "always",
					  e2e_median_of(parts[q], (size_t)runs),
					  q == P_CYCLE ? "beanstalkd -f 0, time per put (its fsync)"
						       : NULL,
					  q == P_CYCLE ? e2e_median_of(bs_put, (size_t)runs) : 0);
			}
		}
		for (int m = 0; m < NBARE && !ours_only; m++) {
			snprintf(name, sizeof(name), "bare group-commit log, %s, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "records/s", NULL,
				  e2e_median_of(bare_rate[m], (size_t)runs), "beanstalkd -b -f 0",
				  e2e_median_of(b1, (size_t)runs));
			snprintf(name, sizeof(name), "bare log, %s, records per flush, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "records", NULL,
				  e2e_median_of(bare_per[m], (size_t)runs), "jschedd",
				  1 / e2e_median_of(sy, (size_t)runs));
			snprintf(name, sizeof(name),
				 "bare log, %s, write + sync per flush, %d submitter%s",
				 bare_modes[m].name, k, k > 1 ? "s" : "");
			bench_row(e->rep, name, "us", NULL, e2e_median_of(bare_sync[m], (size_t)runs),
				  "jschedd", e2e_median_of(parts[P_IO], (size_t)runs));
		}
		snprintf(name, sizeof(name), "fdatasyncs per durable submit, %d submitter%s", k,
			 k > 1 ? "s" : "");
		bench_row(e->rep, name, "syncs", "always", e2e_median_of(sy, (size_t)runs),
			  "one per submit", 1.0);
		snprintf(name, sizeof(name), "daemon context switches per submit, %d submitter%s",
			 k, k > 1 ? "s" : "");
		bench_row(e->rep, name, "switches", "always", e2e_median_of(cs_on, (size_t)runs),
			  "jschedd journal off", e2e_median_of(cs_off, (size_t)runs));
		snprintf(name, sizeof(name), "daemon CPU per submit, %d submitter%s", k,
			 k > 1 ? "s" : "");
		bench_row(e->rep, name, "us", "always", e2e_median_of(cpu_on, (size_t)runs),
			  "jschedd journal off", e2e_median_of(cpu_off, (size_t)runs));
		if (k == 8) {
			bench_row(e->rep, "submit latency p50, 8 submitters", "us", "always", lat_on[0],
				  "jschedd journal off", lat_off[0]);
			bench_row(e->rep, "submit latency p99, 8 submitters", "us", "always", lat_on[1],
				  "jschedd journal off", lat_off[1]);
			bench_row(e->rep, "submit latency p50, 8 submitters", "us", "always", lat_on[0],
				  "beanstalkd -b -f 0", lat_bs[0]);
			bench_row(e->rep, "submit latency p99, 8 submitters", "us", "always", lat_on[1],
				  "beanstalkd -b -f 0", lat_bs[1]);
		}
	}
	e2e_rm_rf(bare_dir);
	e2e_track_dir(bare_dir, false);
	bench_note(e->rep, "bare group-commit log: one flusher thread (one per flush in flight), k "
		   "submitter threads of this process each with one %d-byte record outstanding, the "
		   "next flush as soon as a flusher is free; a %u MiB file zeroed beforehand, in the "
		   "part's /tmp; \"flusher on the disk's interrupt CPU\": CPU %d (-1: none found, "
		   "unpinned)",
		   BARE_REC, BARE_FILE >> 20, jd_disk_irq_cpu("/tmp", NULL, 0));
	if (only && (strcmp(only, "submitters") == 0 || ours_only))
		goto out;

	/* batches of 1,000, and tiny jobs end to end; bytes per job */
batch_rows:
	{
		size_t n = e->quick ? 20000 : 200000;

		on_off(e, "durable submits, batches of 1,000",
		       "journal bytes per job (submitted, not yet run)",
		       "daemon CPU per job, batches of 1,000", batches, spec, n);
		on_off(e, "tiny jobs end to end, batches of 1,000",
		       "journal bytes per job (run to the end)",
		       "daemon CPU per job, tiny jobs end to end", tiny, spec, n);
	}
	if (only && strcmp(only, "batches") == 0)
		goto out;
recovery_rows:
	/* recovery: kill -9 holding n finished jobs, restart, the time it reports (one run
	 * of a million each: filling it takes about 10 s), for jobs of one spec and for jobs
	 * whose specs all differ */
	{
		size_t n = e->quick ? 20000 : 1000000;
		struct recovered one, distinct;

		recovery(e, spec, n, false, &one);
		recovery(e, spec, n, true, &distinct);
		bench_row(e->rep, "recovery after kill -9, per million retained jobs", "s", "always",
			  one.s_per_million, "target", 1.0);
		/* The CPU time (user + system) the restarted daemon had used when it first
		 * answered: the recovery's, which a busy machine does not stretch. */
		bench_row(e->rep, "daemon CPU to recover, per million retained jobs", "s", "always",
			  one.cpu_per_million, "target (its time)", 1.0);
		bench_row(e->rep, "recovery after kill -9, per million retained jobs, distinct specs",
			  "s", "always", distinct.s_per_million, "jobs of one spec", one.s_per_million);
		bench_row(e->rep, "daemon CPU to recover, per million retained jobs, distinct specs",
			  "s", "always", distinct.cpu_per_million, "jobs of one spec",
			  one.cpu_per_million);
		bench_row(e->rep, "daemon RSS after recovery, per retained job", "bytes", "always",
			  one.rss_per_job, NULL, 0);
		bench_row(e->rep, "daemon RSS after recovery, per retained job, distinct specs",
			  "bytes", "always", distinct.rss_per_job, "jobs of one spec", one.rss_per_job);
		bench_note(e->rep, "recovery rows: %zu retained jobs (submitted, run, final), one run "
			   "each; distinct specs: noop calls each with its own name and args "
			   "({\"i\": N}), submitted in batches of 1,000", n);
	}
out:
	jsched_spec_free(spec);
	bench_note(e->rep, "durable part: \"always\" replies once the journal has the job on disk "
		   "(fdatasync); beanstalkd -f 0 fsyncs each put; -f 50 and \"off\" keep less");
}
