/* tests/journal/unit_journal.c: the journal engine (daemon/core/journal.h) on its own.
 *
 * CRC-32C (check value, hardware against table); append, flush and replay across
 * segments and restarts; records of up to 1.5 MB in flushes across the pieces recovery
 * reads them in; an empty and a missing directory; a torn last flush (cut, and
 * appending continues after it); a flipped bit in every field of a record and of a flush
 * header, in the middle of the log (the open fails naming the file and offset) and in
 * the last flush (cut as torn); a missing segment; a snapshot with and without its
 * segments, and one whose file is damaged; a file-size limit (EFBIG, the same path as
 * ENOSPC: submits must fail, nothing is reported durable, and it recovers when the limit
 * is lifted); a read-only directory; and a stress test of the caller's thread against
 * the flusher (run under TSan by `make test SAN=thread`).
 *
 * Waiting is on the journal's own notify callback (a condition variable), bounded by a
 * generous limit that only a hang would reach.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/core/crc32c.h"
#include "daemon/core/journal.h"
#include "jsched/error.h"

#define SEG (256u << 10) /* small segments: rollovers happen */
#define LIMIT_NS (20ull * 1000000000ull)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned notified;

static void notify_cb(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	notified++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* wait_until: wait on notifications until pred(j) holds; fails the test after LIMIT_NS. */
static void wait_until(struct jd_journal *j, bool (*pred)(struct jd_journal *, uint64_t),
		       uint64_t arg)
{
	uint64_t until = mono_ns() + LIMIT_NS;

	pthread_mutex_lock(&mu);
	while (!pred(j, arg)) {
		struct timespec ts;

		if (mono_ns() > until) {
			pthread_mutex_unlock(&mu);
			fail_msg("timed out waiting for the journal");
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cv, &mu, &ts);
	}
	pthread_mutex_unlock(&mu);
}

static bool durable_at(struct jd_journal *j, uint64_t seq)
{
	return jd_journal_durable(j) >= seq;
}

static bool failing(struct jd_journal *j, uint64_t unused)
{
	(void)unused;
	return jd_journal_status(j, NULL, 0) != 0;
}

static bool snap_settled(struct jd_journal *j, uint64_t unused)
{
	enum jd_journal_snap_state st = jd_journal_snap_state(j);

	(void)unused;
	return st == JD_SNAP_DONE || st == JD_SNAP_FAILED;
}

/* ---- a temp dir and what recovery hands back ---- */

struct got {
	uint64_t n, snap_n, last_seq;
	uint64_t ids[4096];
	bool bad;
};

static int collect_cb(void *arg, const struct jd_journal_rec *r)
{
	struct got *g = arg;
	char want[64];

	if (r->in_snapshot) {
		g->snap_n++;
		return 0;
	}
	snprintf(want, sizeof(want), "payload of record %" PRIu64, r->id);
	if (r->type != 7 || r->len != strlen(want) || memcmp(r->data, want, r->len) != 0)
		g->bad = true;
	if (g->n < 4096)
		g->ids[g->n] = r->id;
	g->n++;
	g->last_seq = r->seq;
	return 0;
}

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/jsched-journal-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void rmrf(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char p[512];

	if (!dp)
		return;
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	closedir(dp);
	rmdir(dir);
}

static struct jd_journal_opts opts_for(const char *dir, struct got *g)
{
	struct jd_journal_opts o = {
		.dir = dir,
		.sync = JD_JOURNAL_SYNC_ALWAYS,
		.segment_bytes = SEG,
		.notify_cb = notify_cb,
		.replay_cb = collect_cb,
		.replay_arg = g,
	};
	return o;
}

static int open_dir(const char *dir, struct got *g, struct jd_journal **j,
		    struct jd_journal_info *info, char *err, size_t errlen)
{
	struct jd_journal_opts o = opts_for(dir, g);

	memset(g, 0, sizeof(*g));
	return jd_journal_open(j, &o, info, err, errlen);
}

static int64_t put(struct jd_journal *j, uint64_t id)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "payload of record %" PRIu64, id);
	return jd_journal_append(j, 7, id, buf, strlen(buf));
}

/* write_n: append records first..first+n-1, each flushed on its own (so each is one
 * flush on disk) when `each`, else all at once; returns the last sequence number. */
static uint64_t write_n(struct jd_journal *j, uint64_t first, uint64_t n, bool each)
{
	int64_t seq = 0;

	for (uint64_t i = 0; i < n; i++) {
		seq = put(j, first + i);
		assert_true(seq > 0);
		if (each)
			wait_until(j, durable_at, (uint64_t)seq);
	}
	wait_until(j, durable_at, (uint64_t)seq);
	return (uint64_t)seq;
}

static uint64_t file_size(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void patch(const char *dir, const char *name, uint64_t off, const void *b, size_t n)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void flip(const char *dir, const char *name, uint64_t off, unsigned bit)
{
	char p[512];
	unsigned char c;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= (unsigned char)(1u << bit);
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

/* ---- tests ---- */

static void test_crc32c(void **state)
{
	unsigned char buf[4099];

	(void)state;
	assert_int_equal(jd_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(jd_crc32c_sw(0, "123456789", 9), 0xe3069283u);
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	for (size_t n = 0; n < sizeof(buf); n += 37)
		assert_int_equal(jd_crc32c(0, buf + (n % 8), n - (n % 8)),
				 jd_crc32c_sw(0, buf + (n % 8), n - (n % 8)));
	/* extending equals one pass */
	assert_int_equal(jd_crc32c(jd_crc32c(0, buf, 1000), buf + 1000, 3000),
			 jd_crc32c(0, buf, 4000));
}

/* test_crc32c_long: buffers long enough for the hardware path's three streams side by
 * side (runs of 3 x 8 KiB, then of 3 x 256 bytes, then the rest), at every length around
 * the edges of those runs and at odd offsets, equal the table version. */
static void test_crc32c_long(void **state)
{
	enum { LEN = 3 * 8192 * 3 + 3 * 256 * 2 + 64 };
	unsigned char *buf = malloc(LEN + 8);
	static const size_t edges[] = {3 * 256, 3 * 8192, 2 * 3 * 8192, 3 * 3 * 8192};

	(void)state;
	assert_non_null(buf);
	srand(11);
	for (size_t i = 0; i < LEN + 8; i++)
		buf[i] = (unsigned char)rand();
	for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++)
		for (size_t n = edges[e] - 9; n <= edges[e] + 3 * 256 + 9 && n <= LEN; n++)
			for (size_t off = 0; off < 8; off += 3)
				assert_int_equal(jd_crc32c(0x5eed, buf + off, n),
						 jd_crc32c_sw(0x5eed, buf + off, n));
	for (size_t n = 0; n <= LEN; n += 997)
		assert_int_equal(jd_crc32c(0, buf, n), jd_crc32c_sw(0, buf, n));
	free(buf);
}

static void test_roundtrip_and_rollover(void **state)
{
	char *dir = tmpdir(), sub[600], err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	uint64_t last;
	struct jd_journal_stats st;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/a", dir); /* missing: created */
	assert_int_equal(open_dir(sub, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(info.last_seq, 0);
	/* 3,000 records of ~60 bytes each in small flushes: more than one 256 KiB segment */
	last = write_n(j, 1, 3000, false);
	for (uint64_t i = 0; i < 3000; i += 50)
		last = write_n(j, 3001 + i, 50, false);
	assert_int_equal(last, 6000);
	jd_journal_stats(j, &st);
	assert_true(st.segments_created >= 2);
	assert_int_equal(st.durable_seq, 6000);
	assert_int_equal(jd_journal_close(j), 0);

	assert_int_equal(open_dir(sub, &g, &j, &info, err, sizeof(err)), 0);
	assert_false(g.bad);
	assert_int_equal(g.n, 6000);
	for (uint64_t i = 0; i < 4096; i++)
		assert_int_equal(g.ids[i], i + 1);
	assert_true(info.segments >= 2);
	assert_false(info.torn_tail);
	/* numbering goes on */
	assert_int_equal(put(j, 6001), 6001);
	wait_until(j, durable_at, 6001);
	assert_int_equal(jd_journal_close(j), 0);
	assert_int_equal(open_dir(sub, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 6001);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(sub);
	rmrf(dir);
	free(dir);
}

static void test_empty_dir(void **state)
{
	char *dir = tmpdir(), err[512];
	struct jd_journal *j, *j2;
	struct jd_journal_info info;
	struct got g;

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(info.snapshot_seq, 0);
	/* a second journal on the same directory is refused while the first is open */
	assert_int_equal(open_dir(dir, &g, &j2, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, "in use"));
	assert_int_equal(jd_journal_close(j), 0);
	/* closed without a record: opens again, empty */
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

static const char *first_seg(const char *dir, char *buf, size_t len)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char best[256] = "";

	assert_non_null(dp);
	while ((de = readdir(dp)))
		if (strncmp(de->d_name, "seg-", 4) == 0 && strlen(de->d_name) == 20 &&
		    (!best[0] || strcmp(de->d_name, best) < 0))
			memcpy(best, de->d_name, 21);
	closedir(dp);
	snprintf(buf, len, "%s", best);
	return buf;
}

/* ---- large flushes: recovery reads segments through a ring of 1 MiB pieces ---- */

struct big {
	uint64_t n, bytes;
	bool bad;
};

static size_t big_len(uint64_t id)
{
	return 100000 + (size_t)(id * 2654435761u % 1400000u); /* 0.1 to 1.5 MB */
}

static unsigned char big_byte(uint64_t id, size_t i)
{
	return (unsigned char)(id * 31u + i * 7u + (i >> 12));
}

static int big_cb(void *arg, const struct jd_journal_rec *r)
{
	struct big *b = arg;

	if (r->id != b->n + 1 || r->len != big_len(r->id))
		b->bad = true;
	for (size_t i = 0; !b->bad && i < r->len; i++)
		if (((const unsigned char *)r->data)[i] != big_byte(r->id, i))
			b->bad = true;
	b->n++;
	b->bytes += r->len;
	return 0;
}

/* test_large_flushes: records of 0.1 to 1.5 MB, so that flushes of up to 4 MiB lie
 * across the reader's pieces and its ring (8 MiB) goes round several times per segment,
 * in three segments of 16 MiB: every record comes back byte for byte; then a flipped
 * bit in a flush past the ring's first round fails the open with that segment named. */
static void test_large_flushes(void **state)
{
	enum { N = 48 };
	char *dir = tmpdir(), err[512], seg[64];
	struct jd_journal_opts o;
	struct jd_journal *j;
	struct jd_journal_info info;
	struct big b = {0};
	unsigned char *buf = malloc(1500000);
	int64_t seq = 0;

	(void)state;
	assert_non_null(buf);
	o = (struct jd_journal_opts){.dir = dir, .sync = JD_JOURNAL_SYNC_ALWAYS,
				     .segment_bytes = 16u << 20, .notify_cb = notify_cb,
				     .replay_cb = big_cb, .replay_arg = &b};
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	for (uint64_t id = 1; id <= N; id++) {
		for (size_t i = 0; i < big_len(id); i++)
			buf[i] = big_byte(id, i);
		seq = jd_journal_append(j, 7, id, buf, big_len(id));
		assert_true(seq > 0);
		if (id % 6 == 0)
			wait_until(j, durable_at, (uint64_t)seq);
	}
	wait_until(j, durable_at, (uint64_t)seq);
	assert_int_equal(jd_journal_close(j), 0);

	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_false(b.bad);
	assert_int_equal(b.n, N);
	assert_true(b.bytes > 32u << 20);
	assert_true(info.segments >= 3);
	assert_false(info.torn_tail);
	assert_int_equal(jd_journal_close(j), 0);

	/* 12 MiB into the first segment (not the last: damage, not a torn tail) */
	first_seg(dir, seg, sizeof(seg));
	assert_true(file_size(dir, seg) == 16u << 20);
	flip(dir, seg, 12u << 20, 3);
	b = (struct big){0};
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, seg));
	assert_non_null(strstr(err, "checksum mismatch"));
	free(buf);
	rmrf(dir);
	free(dir);
}

/* Record layout in the first segment of a journal written by write_n(each): flush k
 * (0-based) of a record "payload of record N" (N < 10: 19 bytes, padded) starts at
 * 4096 + k * 96: 32 flush header, 32 record header, 19 payload, pad to 96. */
#define FLUSH0 4096u
#define FLUSH_SZ 96u

static void test_torn_tail(void **state)
{
	char *dir = tmpdir(), err[512], seg[64];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	unsigned char junk[40];

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	write_n(j, 1, 5, true);
	assert_int_equal(jd_journal_close(j), 0);
	first_seg(dir, seg, sizeof(seg));
	/* a sixth flush half written: a sound header, the rest of it missing */
	memset(junk, 0x5a, sizeof(junk));
	patch(dir, seg, FLUSH0 + 5 * FLUSH_SZ + 40, junk, sizeof(junk));
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_true(info.torn_tail);
	assert_int_equal(info.tail_offset, FLUSH0 + 5 * FLUSH_SZ);
	assert_int_equal(g.n, 5);
	assert_int_equal(put(j, 6), 6);
	wait_until(j, durable_at, 6);
	assert_int_equal(jd_journal_close(j), 0);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_false(info.torn_tail); /* it was cut and fsynced */
	assert_int_equal(g.n, 6);
	assert_false(g.bad);
	assert_int_equal(jd_journal_close(j), 0);

	/* the last flush with a bad checksum (sound header), zeros after it: torn */
	flip(dir, seg, FLUSH0 + 5 * FLUSH_SZ + 70, 3);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_true(info.torn_tail);
	assert_int_equal(g.n, 5);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

/* IO_DIRECT: the same records, the same layout on disk, written in whole blocks through
 * O_DIRECT | O_DSYNC, the last block written again by each flush: records that share a
 * block with a later flush survive it, across restarts, rollovers and a torn last flush
 * (the block's bytes are read back from the file after the cut).  Skipped where /tmp
 * refuses O_DIRECT. */
static void test_direct(void **state)
{
	char *dir = tmpdir(), err[512], seg[64], buf[600];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct jd_journal_opts o;
	struct jd_journal_stats st;
	struct got g;
	unsigned char junk[40];
	int fd;

	(void)state;
	memset(&g, 0, sizeof(g));
	o = opts_for(dir, &g);
	o.io = JD_JOURNAL_IO_DIRECT;
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	jd_journal_stats(j, &st);
	if (st.io != JD_JOURNAL_IO_DIRECT) {
		jd_journal_close(j);
		rmrf(dir);
		free(dir);
		printf("skipped: /tmp refuses O_DIRECT\n");
		skip();
	}
	write_n(j, 1, 5, true); /* five flushes in the segment's first data block */
	jd_journal_stats(j, &st);
	assert_int_equal(st.syncs, 5);
	assert_int_equal(st.io, JD_JOURNAL_IO_DIRECT);
	assert_int_equal(jd_journal_close(j), 0);
	/* the layout is the page cache's: flush 4 (0-based) where test_torn_tail expects it */
	first_seg(dir, seg, sizeof(seg));
	snprintf(buf, sizeof(buf), "%s/%s", dir, seg);
	fd = open(buf, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 19, FLUSH0 + 4 * FLUSH_SZ + 64), 19);
	close(fd);
	assert_memory_equal(buf, "payload of record 5", 19);
	/* a sixth flush torn: a sound header, its record's sectors missing */
	memset(junk, 0x5a, sizeof(junk));
	patch(dir, seg, FLUSH0 + 5 * FLUSH_SZ + 40, junk, sizeof(junk));
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_true(info.torn_tail);
	assert_int_equal(g.n, 5);
	/* appended into the block that holds records 1 to 5, then many more: rollovers */
	assert_int_equal(put(j, 6), 6);
	wait_until(j, durable_at, 6);
	write_n(j, 7, 5000, false);
	for (uint64_t i = 0; i < 1000; i += 20)
		write_n(j, 5007 + i, 20, false);
	jd_journal_stats(j, &st);
	assert_true(st.segments_created >= 2);
	assert_int_equal(jd_journal_close(j), 0);
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_false(info.torn_tail);
	assert_false(g.bad);
	assert_int_equal(g.n, 6006);
	for (uint64_t i = 0; i < 4096; i++)
		assert_int_equal(g.ids[i], i + 1);
	/* and once more after a restart in the middle of a block */
	assert_int_equal(put(j, 6007), 6007);
	wait_until(j, durable_at, 6007);
	assert_int_equal(jd_journal_close(j), 0);
	o.io = JD_JOURNAL_IO_FDATASYNC; /* the same journal read by the other way of writing */
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 6007);
	assert_false(g.bad);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

/* A flipped bit in every byte of the third flush (of five): its header, its record's
 * header, its payload.  The open must fail naming the segment and an offset within the
 * flush, and replay nothing after it. */
static void test_flipped_bits(void **state)
{
	char *dir = tmpdir(), err[512], seg[64], path[600], saved[600];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	write_n(j, 1, 5, true);
	assert_int_equal(jd_journal_close(j), 0);
	first_seg(dir, seg, sizeof(seg));
	snprintf(path, sizeof(path), "%s/%s", dir, seg);
	snprintf(saved, sizeof(saved), "%s/saved", dir);
	{
		char cmd[1300];

		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, saved);
		assert_int_equal(system(cmd), 0);
	}
	for (unsigned b = 0; b < 32 + 32 + 19; b++) {
		uint64_t off = FLUSH0 + 2 * FLUSH_SZ + b;
		char cmd[1300], where[64];
		int rc;

		flip(dir, seg, off, b % 8);
		rc = open_dir(dir, &g, &j, &info, err, sizeof(err));
		if (rc == 0)
			fail_msg("byte %u of the third flush flipped: the open succeeded", b);
		assert_int_equal(rc, JSCHED_EIO);
		assert_non_null(strstr(err, seg));
		snprintf(where, sizeof(where), "offset %u", FLUSH0 + 2 * FLUSH_SZ);
		if (!strstr(err, where))
			fail_msg("byte %u: '%s' does not say %s", b, err, where);
		assert_true(g.n <= 2);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", saved, path);
		assert_int_equal(system(cmd), 0);
	}
	/* the same flips in the last flush: cut as a torn tail, four records kept */
	for (unsigned b = 32; b < 32 + 32 + 19; b += 5) {
		char cmd[1300];

		flip(dir, seg, FLUSH0 + 4 * FLUSH_SZ + b, b % 8);
		assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
		assert_true(info.torn_tail);
		assert_int_equal(g.n, 4);
		assert_int_equal(jd_journal_close(j), 0);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", saved, path);
		assert_int_equal(system(cmd), 0);
	}
	/* A damaged flush header in the last flush is damage, not a tear (it is never
	 * split across sectors). */
	flip(dir, seg, FLUSH0 + 4 * FLUSH_SZ + 9, 1);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, "bad flush header"));
	unlink(saved);
	rmrf(dir);
	free(dir);
}

static void test_missing_segment(void **state)
{
	char *dir = tmpdir(), err[512], seg[64], p[600];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	for (int k = 0; k < 100; k++)
		write_n(j, 1 + (uint64_t)k * 100, 100, false); /* several segments */
	assert_int_equal(jd_journal_close(j), 0);
	first_seg(dir, seg, sizeof(seg));
	snprintf(p, sizeof(p), "%s/%s", dir, seg);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, "missing"));
	rmrf(dir);
	free(dir);
}

static void test_snapshot(void **state)
{
	char *dir = tmpdir(), err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct jd_journal_stats st;
	uint64_t n_segs_before;

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	for (int k = 0; k < 40; k++)
		write_n(j, 1 + (uint64_t)k * 300, 300, false);
	jd_journal_stats(j, &st);
	n_segs_before = st.disk_bytes / SEG;
	assert_true(n_segs_before >= 3);
	/* The state: 10 records, written in slices; records appended meanwhile come after
	 * what it covers. */
	assert_int_equal(jd_journal_snap_begin(j), 0);
	assert_int_equal(jd_journal_snap_begin(j), JSCHED_EAGAIN);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(jd_journal_snap_add(j, 9, (uint64_t)i, "state", 5), 0);
		if (i == 4)
			write_n(j, 12001, 20, false);
	}
	assert_int_equal(jd_journal_snap_commit(j), 0);
	wait_until(j, snap_settled, 0);
	assert_int_equal(jd_journal_snap_state(j), JD_SNAP_DONE);
	assert_int_equal(jd_journal_snap_finish(j), 0);
	jd_journal_stats(j, &st);
	assert_true(st.segments_removed >= 2);
	assert_int_equal(st.snapshots, 1);
	assert_int_equal(jd_journal_close(j), 0);

	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(info.snapshot_seq, 12000);
	assert_int_equal(info.snapshot_records, 10);
	assert_int_equal(g.snap_n, 10);
	assert_int_equal(g.n, 20); /* the records after it */
	assert_int_equal(g.ids[0], 12001);
	assert_false(g.bad);
	assert_int_equal(jd_journal_close(j), 0);

	/* a snapshot without its segments: the state it holds, numbering after it */
	{
		DIR *dp = opendir(dir);
		struct dirent *de;
		char p[600];

		while ((de = readdir(dp)))
			if (strncmp(de->d_name, "seg-", 4) == 0) {
				snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
				unlink(p);
			}
		closedir(dp);
	}
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	assert_int_equal(g.snap_n, 10);
	assert_int_equal(g.n, 0);
	assert_int_equal(info.last_seq, 12000);
	assert_int_equal(put(j, 77), 12001);
	wait_until(j, durable_at, 12001);
	assert_int_equal(jd_journal_close(j), 0);

	/* a damaged snapshot stops the open (it was complete when renamed) */
	{
		char name[64];

		snprintf(name, sizeof(name), "snap-%016x", 12000);
		flip(dir, name, file_size(dir, name) - 20, 2);
		assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), JSCHED_EIO);
		assert_non_null(strstr(err, name));
	}
	rmrf(dir);
	free(dir);
}

/* A file-size limit makes the flush fail (EFBIG, handled as ENOSPC is): the status
 * says so, nothing more becomes durable, and once the limit is lifted the flusher's
 * retry puts everything in a fresh segment. */
static void test_file_size_limit(void **state)
{
	char *dir = tmpdir(), err[512], why[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct rlimit old, lim;
	uint64_t durable;
	int64_t seq = 0;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	write_n(j, 1, 10, false);
	/* The segment is written up to ~5 KiB; a 64 KiB limit stops the first write
	 * past it (and any new segment, which is 256 KiB). */
	lim = old;
	lim.rlim_cur = 64 << 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (uint64_t i = 11; i <= 2000; i++) {
		seq = put(j, i);
		assert_true(seq > 0);
	}
	wait_until(j, failing, 0);
	assert_int_equal(jd_journal_status(j, why, sizeof(why)), JSCHED_EJOURNAL);
	assert_non_null(strstr(why, dir));
	durable = jd_journal_durable(j);
	assert_true(durable < (uint64_t)seq);
	assert_true(durable >= 10);
	/* more records while it fails: they join the group that failed */
	for (uint64_t i = 2001; i <= 2100; i++) {
		seq = put(j, i);
		assert_true(seq > 0);
	}
	assert_int_equal(jd_journal_status(j, NULL, 0), JSCHED_EJOURNAL);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	wait_until(j, durable_at, (uint64_t)seq);
	assert_int_equal(jd_journal_status(j, NULL, 0), 0);
	assert_int_equal(jd_journal_close(j), 0);
	if (open_dir(dir, &g, &j, &info, err, sizeof(err)) != 0)
		fail_msg("reopening after the fault: %s", err);
	assert_int_equal(g.n, 2100);
	assert_false(g.bad);
	for (uint64_t i = 0; i < 2100; i++)
		assert_int_equal(g.ids[i], i + 1);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

static void test_read_only_dir(void **state)
{
	char *dir = tmpdir(), sub[600], err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;

	(void)state;
	if (geteuid() == 0) {
		printf("skipped: read-only directory (root writes anywhere)\n");
		rmrf(dir);
		free(dir);
		skip();
	}
	assert_int_equal(chmod(dir, 0500), 0);
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, "not writable"));
	assert_non_null(strstr(err, dir));
	snprintf(sub, sizeof(sub), "%s/x/y", dir);
	assert_int_equal(open_dir(sub, &g, &j, &info, err, sizeof(err)), JSCHED_EIO);
	assert_non_null(strstr(err, "cannot be created"));
	chmod(dir, 0700);
	rmrf(dir);
	free(dir);
}

/* The caller's thread appends as fast as it can while the flusher flushes, in both sync
 * modes and on demand (asked for now and then, gathering), with rollovers; every record
 * comes back, in order. */
static void test_stress(void **state)
{
	char *dir = tmpdir(), err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct jd_journal_opts o = opts_for(dir, &g);
	struct jd_journal_stats st;
	int64_t seq = 0;

	(void)state;
	for (int mode = 0; mode < 4; mode++) {
		o.sync = mode == 1 ? JD_JOURNAL_SYNC_BATCH : JD_JOURNAL_SYNC_ALWAYS;
		o.on_demand = mode >= 2; /* asked for now and then, with waiters to gather */
		o.io = mode == 3 ? JD_JOURNAL_IO_DIRECT : JD_JOURNAL_IO_FDATASYNC;
		o.batch_ms = 2;
		memset(&g, 0, sizeof(g));
		assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
		assert_int_equal(g.n, (uint64_t)mode * 20000);
		for (uint64_t i = 1; i <= 20000; i++) {
			uint64_t d;

			seq = put(j, (uint64_t)mode * 20000 + i);
			assert_true(seq > 0);
			d = jd_journal_durable(j);
			assert_true(d <= (uint64_t)seq);
			if (i % 5000 == 0)
				jd_journal_kick(j);
			if (o.on_demand && i % 7 == 0)
				jd_journal_want(j, (uint64_t)seq, (unsigned)(i % 13));
		}
		if (o.on_demand)
			jd_journal_want(j, (uint64_t)seq, 1);
		wait_until(j, durable_at, (uint64_t)seq);
		jd_journal_stats(j, &st);
		assert_int_equal(st.durable_seq, (uint64_t)seq);
		assert_int_equal(jd_journal_close(j), 0);
	}
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, 80000);
	assert_false(g.bad);
	assert_int_equal(g.last_seq, 80000);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

/* on_demand: records are flushed when asked for (one flush for all appended by then),
 * when a chunk is full, and at close; a snapshot's commit asks for what it covers. */
static void test_on_demand(void **state)
{
	char *dir = tmpdir(), err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct jd_journal_opts o = opts_for(dir, &g);
	struct jd_journal_stats st;
	uint64_t syncs0, seq = 0;
	static char big[60000];

	(void)state;
	o.on_demand = true;
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	jd_journal_stats(j, &st);
	syncs0 = st.syncs;
	for (uint64_t i = 1; i <= 10; i++)
		seq = (uint64_t)put(j, i);
	jd_journal_want(j, 5, 1);
	wait_until(j, durable_at, 10); /* the whole chunk went: 1..10 */
	jd_journal_stats(j, &st);
	assert_int_equal(st.syncs - syncs0, 1);
	/* 11..30 unasked, then asked for: one flush, not two. */
	for (uint64_t i = 11; i <= 30; i++)
		seq = (uint64_t)put(j, i);
	assert_true(jd_journal_durable(j) < 30);
	jd_journal_want(j, 30, 4);
	wait_until(j, durable_at, 30);
	jd_journal_stats(j, &st);
	assert_int_equal(st.syncs - syncs0, 2);
	/* Gathering after a flush of 4 waiters: one waiter asking still gets its flush
	 * (within one flush's time), the gather counted as one that ran out of time. */
	jd_journal_stats(j, &st);
	assert_true(st.gathers >= 1);
	syncs0 = st.gathers_late;
	seq = (uint64_t)put(j, 31);
	jd_journal_want(j, seq, 1);
	wait_until(j, durable_at, seq);
	jd_journal_stats(j, &st);
	assert_int_equal(st.gathers_late - syncs0, 1);
	/* A full chunk goes unasked (records past JD_JOURNAL_FLUSH_MAX). */
	for (uint64_t i = 0; i < (JD_JOURNAL_FLUSH_MAX / sizeof(big)) + 2; i++)
		seq = (uint64_t)jd_journal_append(j, 8, 0, big, sizeof(big));
	wait_until(j, durable_at, 32); /* the first full chunk, not asked for */
	/* A snapshot's commit asks for what it covers. */
	assert_int_equal(jd_journal_snap_begin(j), 0);
	assert_int_equal(jd_journal_snap_add(j, 9, 1, "state", 5), 0);
	assert_int_equal(jd_journal_snap_commit(j), 0);
	wait_until(j, snap_settled, 0);
	assert_int_equal(jd_journal_snap_finish(j), 0);
	assert_true(jd_journal_durable(j) >= seq);
	/* Unasked at close: flushed by the close. */
	for (uint64_t i = 100; i < 110; i++)
		seq = (uint64_t)put(j, i);
	assert_int_equal(jd_journal_close(j), 0);
	memset(&g, 0, sizeof(g));
	o.replay_cb = collect_cb;
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_int_equal(info.last_seq, seq);
	assert_int_equal(g.n, 10);
	assert_int_equal(g.ids[9], 109);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

/* gather_spin: a flusher gathering for a group of waiters polls for them (counted in
 * gathers_spun) rather than sleeping, never for a lone waiter, never with gather_spin
 * off; every record is durable either way.  The caller plays 4 submitters, each asking
 * for its record as it comes back from the last flush. */
static void test_gather_spin(void **state)
{
	char *dir = tmpdir(), err[512];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct jd_journal_opts o = opts_for(dir, &g);
	struct jd_journal_stats st;
	uint64_t seq = 0, spun;

	(void)state;
	o.on_demand = true;
	for (int spin = 0; spin < 2; spin++) {
		o.gather_spin = spin;
		memset(&g, 0, sizeof(g));
		assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
		for (int round = 0; round < 200; round++) {
			for (int w = 0; w < 4; w++) {
				seq = (uint64_t)put(j, seq + 1);
				jd_journal_want(j, seq, 1);
			}
			wait_until(j, durable_at, seq);
		}
		jd_journal_stats(j, &st);
		assert_true(st.gathers >= 1);
		if (spin) {
			assert_true(st.gathers_spun >= 1);
			assert_true(st.gathers_spun <= st.gathers);
		} else {
			assert_int_equal(st.gathers_spun, 0);
		}
		/* a lone waiter per flush: nothing to poll for */
		spun = st.gathers_spun;
		for (int round = 0; round < 50; round++) {
			seq = (uint64_t)put(j, seq + 1);
			jd_journal_want(j, seq, 1);
			wait_until(j, durable_at, seq);
		}
		jd_journal_stats(j, &st);
		assert_true(st.gathers_spun - spun <= 1); /* the first, after the group's flush */
		assert_int_equal(st.durable_seq, seq);
		assert_int_equal(jd_journal_close(j), 0);
	}
	memset(&g, 0, sizeof(g));
	assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
	assert_int_equal(g.n, seq);
	assert_false(g.bad);
	assert_int_equal(jd_journal_close(j), 0);
	rmrf(dir);
	free(dir);
}

/* Read-only inspection (--check-journal) reports a torn tail without cutting it. */
static void test_check_only(void **state)
{
	char *dir = tmpdir(), err[512], seg[64];
	struct jd_journal *j;
	struct jd_journal_info info;
	struct got g;
	struct jd_journal_opts o;
	unsigned char junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};

	(void)state;
	assert_int_equal(open_dir(dir, &g, &j, &info, err, sizeof(err)), 0);
	write_n(j, 1, 3, true);
	assert_int_equal(jd_journal_close(j), 0);
	first_seg(dir, seg, sizeof(seg));
	patch(dir, seg, FLUSH0 + 3 * FLUSH_SZ + 64, junk, sizeof(junk));
	for (int k = 0; k < 2; k++) {
		o = opts_for(dir, &g);
		o.read_only = true;
		memset(&g, 0, sizeof(g));
		assert_int_equal(jd_journal_open(&j, &o, &info, err, sizeof(err)), 0);
		assert_true(info.torn_tail);
		assert_int_equal(g.n, 3);
		assert_int_equal(jd_journal_append(j, 7, 1, "x", 1), JSCHED_EINVAL);
		assert_int_equal(jd_journal_close(j), 0);
	}
	rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_crc32c_long),
		cmocka_unit_test(test_roundtrip_and_rollover),
		cmocka_unit_test(test_large_flushes),
		cmocka_unit_test(test_empty_dir),
		cmocka_unit_test(test_torn_tail),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_flipped_bits),
		cmocka_unit_test(test_missing_segment),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_read_only_dir),
		cmocka_unit_test(test_stress),
		cmocka_unit_test(test_on_demand),
		cmocka_unit_test(test_gather_spin),
		cmocka_unit_test(test_check_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
