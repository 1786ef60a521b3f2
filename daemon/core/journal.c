/* daemon/core/journal.c: the journal (journal.h says what it promises; this file is how).
 *
 * Memory.  Appended records go into "chunks" (a byte buffer each, at most
 * JD_JOURNAL_FLUSH_MAX), kept in a FIFO under j->mu.  The flusher takes the oldest chunk
 * whole, writes and syncs it, and recycles it; while it does, the caller fills the next
 * chunk, which is therefore everything that arrived during one flush: the group.  A chunk
 * that fails to become durable goes back to the front of the FIFO.
 *
 * Disk.  The flusher owns the current segment file (fd, seg_off).  The next one is made
 * by a thread of its own, the preparer (creates it as seg-N.tmp, zeroes it, fsyncs it,
 * renames it, fsyncs the directory), a megabyte at a time with a pause between (so the
 * zeros do not crowd the disk's queue ahead of the flushes), each megabyte's writeback
 * started at once (sync_file_range) so that the fdatasync that completes the file is
 * short; the next segment's fields are under prep_mu.  A rollover takes the prepared
 * segment, or, when the preparer is behind, finishes it itself.  Before, the flusher
 * zeroed the next segment whenever it had nothing to flush, and a flush asked for during
 * a step waited for that step (a megabyte through the page cache).  The chain of segments is kept in j->segs (under j->mu) for the snapshot
 * thread, which deletes the ones a durable snapshot covers.
 *
 * Direct writes (IO_DIRECT).  The flusher copies a chunk into an aligned staging buffer
 * behind the bytes already in the log's last block (j->tailblk, kept in memory), pads it
 * with zeros to a whole block and writes it with one pwrite on a descriptor opened
 * O_DIRECT | O_DSYNC: the write returns when the device has it, with no page cache in
 * between and no fdatasync after it.  The block holding the end of the log is therefore
 * written again, whole, by the next flush: the bytes it held are written again as they
 * were (and the zeros after them are zeros on disk already), so a write torn at a
 * sector boundary leaves each sector as it was or as it is now, which recovery sees as
 * an intact log followed by a torn last flush.  The copy is what an unaligned chunk
 * costs (a flush of records of 300 bytes moves a few KiB); the alternative, building
 * chunks in place at their disk offset, would tie the caller's buffer to the flusher's
 * segment state.  Measured on this machine's disk (tests/journal/README.md): a small
 * write through O_DIRECT | O_DSYNC took 82-91 us at p50 and 167-250 us at p99, where
 * pwrite + fdatasync took 83-89 us and 3,991 us, in the same minute on the shared disk.
 *
 * Built with -DJD_JOURNAL_ACK_EARLY (the power-loss test's negative control only), the
 * flusher reports a chunk durable before its fdatasync (before its write, when direct):
 * the test must catch that.
 */
#include "daemon/core/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "daemon/core/crc32c.h"
#include "daemon/core/le.h"
#include "daemon/core/proc.h"
#include "jsched/error.h"

#define REC_MAGIC 0x524au
#define FLUSH_MAGIC 0x4c46534au /* "JSFL" */
#define FLUSH_HDR 32u
#define FLUSH_ALIGN 32u
#define T_SNAP_END 255u
#define SEG_MAGIC "JSCHDSEG"
#define SNAP_MAGIC "JSCHDSNP"
#define FORMAT_VERSION 1u
#define PREP_STEP (1u << 20)
#define PREP_PACE_MS 5u	/* between the preparer's steps: at most 200 MB/s of zeros */
#define CHUNK_MIN (64u << 10)
#define STAGE_BYTES (JD_JOURNAL_FLUSH_MAX + 2 * JD_JOURNAL_BLOCK) /* IO_DIRECT's buffer */

_Static_assert(JD_JOURNAL_SEG_HDR == JD_JOURNAL_BLOCK, "a segment's header is one block");

struct chunk {
	struct chunk *next;
	unsigned char *buf;
	size_t len, cap;
	uint64_t first_seq, last_seq;
	bool sealed;		/* flush header filled in, padded (the flusher's) */
	size_t raw_len;		/* len before the padding, while sealed */
};

struct seg {
	uint64_t index, first_seq, last_seq;	/* last_seq 0: no record yet */
	uint64_t end;				/* bytes of valid data (header block included) */
};

struct snap {
	pthread_t thread;
	enum jd_journal_snap_state state;	/* under j->mu */
	uint64_t covers;
	uint64_t nrec;
	struct chunk *cur;			/* caller's buffer */
	struct chunk *q_head, *q_tail;		/* to write (under j->mu) */
	bool committed, abandon;		/* under j->mu */
	int rc;
};

struct jd_journal {
	struct jd_journal_opts o;
	char dir[PATH_MAX];
	int dirfd, lockfd;
	uint64_t seg_bytes;

	pthread_mutex_t mu;
	pthread_cond_t cv;		/* to the flusher: work, stop */
	pthread_cond_t cv_durable;	/* from the flusher: a flush ended */
	pthread_cond_t cv_snap;		/* to the snapshot thread */
	struct chunk *head, *tail, *spare;
	uint64_t last_seq;		/* written under mu by the caller */
	uint64_t want;			/* on_demand: flush up to here (under mu) */
	/* on_demand's gathering (under mu): waiters asked since the flusher last took a
	 * chunk, how many it waits for, and until when (0: not gathering). */
	unsigned want_n, gather_target;
	uint64_t gather_until;
	_Atomic unsigned want_n_seen;	/* want_n, for the flusher polling without mu */
	bool last_gather_late;		/* flusher's: the last gather ran out of time */
	bool gather_polled;		/* flusher's: this gather was counted in n_gathers_spun */
	bool stop, kick, flusher_waiting, started;
	char why[PATH_MAX + 128];	/* the fault, under mu */
	pthread_t flusher;

	/* flusher's own */
	int fd;
	uint64_t seg_index, seg_off, seg_first;
	bool need_new;			/* the current segment failed: never write it again */
	uint64_t good_index, good_end;	/* the last segment with durable data, and its end */
	/* the next segment (under prep_mu: the preparer's, and the flusher's at a rollover) */
	pthread_mutex_t prep_mu;
	pthread_cond_t cv_prep;		/* to the preparer: a segment was taken, or stop */
	pthread_t preparer;
	bool prep_stop, prep_started;
	uint64_t prep_base;		/* the current segment's index: the next is one up */
	int next_fd;
	uint64_t next_index, next_zeroed;
	bool next_ready;
	uint64_t last_flush_ns;
	uint64_t last_end_ns;		/* when the last flush ended (0: none yet) */
	unsigned char *stage;		/* IO_DIRECT: STAGE_BYTES, mapped (page-aligned) */
	size_t stage_dirty;		/* IO_DIRECT: stage bytes from here on are zero */
	bool stage_tail;		/* IO_DIRECT: the log's last block is at the stage's
					 * start (tailblk is stale) */
	unsigned char *tailblk;		/* IO_DIRECT: the log's last block (its valid part is
					 * seg_off % JD_JOURNAL_BLOCK bytes, zeros after) */
	uint64_t wake_ns;		/* under mu: when jd_journal_want woke the flusher */

	struct seg *segs;		/* the chain, oldest first (under mu) */
	size_t nsegs, capsegs;
	uint64_t snap_bytes;		/* under mu */
	struct snap *snap;		/* caller's thread; its state under mu */

	_Atomic uint64_t durable;
	_Atomic int err;
	_Atomic uint64_t n_appended, n_flushes, n_bytes, n_syncs, n_failures, n_created,
		n_removed, n_snapshots, flush_ns_max, log_bytes;
	_Atomic uint64_t last_io_ns;	/* the last flush's write and sync */
	_Atomic uint64_t n_io_ns, n_gather_ns, n_gap_ns, n_notified_ns, n_wake_ns, n_wakes;
	_Atomic uint64_t n_gathers, n_gathers_late, n_gathers_spun;
	_Atomic int io_used;		/* enum jd_journal_io, as in effect */
	_Atomic int pinned_cpu;		/* the flusher's CPU, or -1 */
};

/* ---- small helpers ---- */

static size_t rec_size(size_t len)
{
	return (JD_JOURNAL_HDR + len + 7) & ~(size_t)7;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return JSCHED_EIO;
}

/* lock_owner: the pid /proc/locks gives for the flock on fd's file (the process that
 * took it; 0 when it is not visible from here), or -1 if none is listed. */
static pid_t lock_owner(int fd)
{
	char line[256], type[16];
	unsigned maj, mnr;
	unsigned long ino;
	struct stat st;
	pid_t owner = -1;
	FILE *f;
	int pid;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return -1;
	while (owner < 0 && fgets(line, sizeof(line), f))
		if (!strstr(line, "->") &&
		    sscanf(line, "%*s %15s %*s %*s %d %x:%x:%lu", type, &pid, &maj, &mnr, &ino) == 5 &&
		    strcmp(type, "FLOCK") == 0 && maj == major(st.st_dev) && mnr == minor(st.st_dev) &&
		    ino == (unsigned long)st.st_ino)
			owner = pid;
	fclose(f);
	return owner;
}

/* lock_from_heir: the journal's lock is held.  If the jschedd that took it is gone, what
 * holds it is a process that jschedd was starting when it was killed, until that
 * process's close_range or exec (core/proc.h): wait for it, a bounded time
 * (JD_JOURNAL_HEIR_WAIT_MS).  A lock whose taker lives is another jschedd's. */
static int lock_from_heir(struct jd_journal *j, char *err, size_t errlen)
{
	pid_t owner = -1;

	for (int waited = 0; waited < JD_JOURNAL_HEIR_WAIT_MS; waited += 5) {
		struct timespec ts = {0, 5 * 1000000L};

		/* -1, none listed: let go of since the last try */
		owner = lock_owner(j->lockfd);
		if (owner > 0 && !jd_proc_gone(owner))
			return fail(err, errlen, "journal directory %s is in use by another jschedd "
				    "(pid %d holds %s/lock)", j->dir, (int)owner, j->dir);
		if (flock(j->lockfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return fail(err, errlen, "journal directory %s: its lock (%s/lock) is still held "
		    "%d ms after the jschedd that took it (pid %d) was gone, by a process it "
		    "started (`fuser -v %s/lock` names it)", j->dir, j->dir,
		    JD_JOURNAL_HEIR_WAIT_MS, (int)owner, j->dir);
}

static void notify(struct jd_journal *j)
{
	if (j->o.notify_cb)
		j->o.notify_cb(j->o.notify_arg);
}

static void add_stat(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static int dir_sync(struct jd_journal *j)
{
	return fsync(j->dirfd) < 0 ? -errno : 0;
}

/* open_in: open the file `name` of the journal's directory; returns the descriptor or
 * -1 (errno set).  By its path, not openat(dirfd): ThreadSanitizer sees a descriptor
 * that open creates but not one from openat, and reports a write through a number the
 * loop thread closed and this thread got again as a race with the loop's use of it. */
static int open_in(const struct jd_journal *j, const char *name, int flags, mode_t mode)
{
	char path[PATH_MAX + 64];

	if (snprintf(path, sizeof(path), "%s/%s", j->dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(path, flags, mode);
}

/* write_all: pwrite every byte; returns 0 or -errno. */
static int write_all(int fd, const void *p, size_t n, uint64_t off)
{
	const unsigned char *b = p;

	while (n) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* encode: one record at p (rec_size(n1 + n2) bytes, zero-padded). */
static void encode(unsigned char *p, unsigned type, uint64_t seq, uint64_t id, const void *p1,
		   size_t n1, const void *p2, size_t n2)
{
	size_t n = n1 + n2, sz = rec_size(n);

	jd_put32(p + 4, (uint32_t)n);
	p[8] = (unsigned char)type;
	p[9] = 0;
	p[10] = REC_MAGIC & 0xff;
	p[11] = REC_MAGIC >> 8;
	jd_put32(p + 12, 0);
	jd_put64(p + 16, seq);
	jd_put64(p + 24, id);
	if (n1)
		memcpy(p + JD_JOURNAL_HDR, p1, n1);
	if (n2)
		memcpy(p + JD_JOURNAL_HDR + n1, p2, n2);
	memset(p + JD_JOURNAL_HDR + n, 0, sz - JD_JOURNAL_HDR - n);
	jd_put32(p, jd_crc32c(0, p + 4, JD_JOURNAL_HDR - 4 + n));
}

enum rec_check { REC_OK, REC_ZERO, REC_BAD };

/* decode: the record at p (avail bytes readable).  Returns REC_OK with *r filled and
 * *size its size, REC_ZERO for an all-zero header, else REC_BAD with the reason.  With
 * `covered` the record's own CRC is not computed: it lies inside a flush whose CRC, over
 * every byte of its records, matched (scan_segment), so it cannot fail where that passed
 * but by a collision of the same odds; checking both read every byte of a segment twice
 * (callgrind, restart with 100,000 retained noops: CRC32C 392 -> 200 instructions a job).
 * A snapshot's records have no flush around them and are checked one by one. */
static enum rec_check decode(const unsigned char *p, size_t avail, bool covered,
			     struct jd_journal_rec *r, size_t *size, const char **why)
{
	static const unsigned char zero[JD_JOURNAL_HDR];
	uint32_t len;

	if (avail < JD_JOURNAL_HDR) {
		*why = "a record header runs past the end";
		for (size_t i = 0; i < avail; i++)
			if (p[i])
				return REC_BAD;
		return REC_ZERO;
	}
	if (memcmp(p, zero, JD_JOURNAL_HDR) == 0)
		return REC_ZERO;
	len = jd_get32(p + 4);
	if (p[10] != (REC_MAGIC & 0xff) || p[11] != REC_MAGIC >> 8 || p[9] != 0 ||
	    jd_get32(p + 12) != 0 || p[8] == 0) {
		*why = "bad record header (magic, flags or type)";
		return REC_BAD;
	}
	if (len > JD_JOURNAL_RECORD_MAX || rec_size(len) > avail) {
		*why = "a record's length runs past the end";
		return REC_BAD;
	}
	if (!covered && jd_get32(p) != jd_crc32c(0, p + 4, JD_JOURNAL_HDR - 4 + len)) {
		*why = "checksum mismatch";
		return REC_BAD;
	}
	r->type = p[8];
	r->seq = jd_get64(p + 16);
	r->id = jd_get64(p + 24);
	r->data = p + JD_JOURNAL_HDR;
	r->len = len;
	*size = rec_size(len);
	return REC_OK;
}

/* ---- chunks ---- */

static struct chunk *chunk_get(struct jd_journal *j, size_t need)
{
	struct chunk *c = j->spare;
	size_t cap;

	need += FLUSH_HDR + FLUSH_ALIGN; /* the flush header, and room to pad the end */
	cap = need > CHUNK_MIN ? need : CHUNK_MIN;
	if (c && c->cap >= need) {
		j->spare = c->next;
	} else {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->buf = malloc(cap);
		if (!c->buf) {
			free(c);
			return NULL;
		}
		c->cap = cap;
	}
	c->next = NULL;
	c->len = FLUSH_HDR;
	c->first_seq = c->last_seq = 0;
	c->sealed = false;
	return c;
}

static void chunk_free(struct chunk *c)
{
	if (c) {
		free(c->buf);
		free(c);
	}
}

/* chunk_room: make room for sz more bytes in chunk c (growing it up to FLUSH_MAX, with
 * room left to pad it to FLUSH_ALIGN); returns false if it cannot hold them (full, or out
 * of memory). */
static bool chunk_room(struct chunk *c, size_t sz)
{
	size_t cap, need = c->len + sz + FLUSH_ALIGN;
	unsigned char *b;

	if (need <= c->cap)
		return true;
	if (need > JD_JOURNAL_FLUSH_MAX)
		return false;
	cap = c->cap * 2;
	while (cap < need)
		cap *= 2;
	if (cap > JD_JOURNAL_FLUSH_MAX)
		cap = JD_JOURNAL_FLUSH_MAX;
	b = realloc(c->buf, cap);
	if (!b)
		return false;
	c->buf = b;
	c->cap = cap;
	return true;
}

/* ---- append ---- */

int64_t jd_journal_append2(struct jd_journal *j, unsigned type, uint64_t id, const void *p1,
			   size_t n1, const void *p2, size_t n2)
{
	size_t sz;
	struct chunk *c;
	uint64_t seq;
	bool wake;

	if (type == 0 || type >= T_SNAP_END || j->o.read_only)
		return JSCHED_EINVAL;
	if (n1 + n2 > JD_JOURNAL_RECORD_MAX)
		return JSCHED_ELIMIT_EXCEEDED;
	sz = rec_size(n1 + n2);
	pthread_mutex_lock(&j->mu);
	c = j->tail;
	if (!c || !chunk_room(c, sz)) {
		struct chunk *n = chunk_get(j, sz);

		if (!n) {
			pthread_mutex_unlock(&j->mu);
			return JSCHED_ENOMEM;
		}
		if (c)
			c->next = n;
		else
			j->head = n;
		j->tail = c = n;
	}
	seq = ++j->last_seq;
	encode(c->buf + c->len, type, seq, id, p1, n1, p2, n2);
	c->len += sz;
	if (!c->first_seq)
		c->first_seq = seq;
	c->last_seq = seq;
	/* on_demand: only a full chunk (one behind the tail) is due without being asked. */
	wake = j->flusher_waiting && (!j->o.on_demand || j->head != j->tail);
	if (wake)
		j->flusher_waiting = false;
	pthread_mutex_unlock(&j->mu);
	if (wake)
		pthread_cond_signal(&j->cv);
	add_stat(&j->n_appended, 1);
	return (int64_t)seq;
}

int64_t jd_journal_append(struct jd_journal *j, unsigned type, uint64_t id, const void *p,
			  size_t n)
{
	return jd_journal_append2(j, type, id, p, n, NULL, 0);
}

uint64_t jd_journal_last(const struct jd_journal *j)
{
	return j->last_seq;
}

uint64_t jd_journal_last_io_ns(const struct jd_journal *j)
{
	return atomic_load_explicit(&j->last_io_ns, memory_order_relaxed);
}

uint64_t jd_journal_durable(const struct jd_journal *j)
{
	return atomic_load_explicit(&j->durable, memory_order_acquire);
}

int jd_journal_status(struct jd_journal *j, char *why, size_t whylen)
{
	int e = atomic_load_explicit(&j->err, memory_order_acquire);

	if (e && why && whylen) {
		pthread_mutex_lock(&j->mu);
		snprintf(why, whylen, "%s", j->why);
		pthread_mutex_unlock(&j->mu);
	}
	return e;
}

bool jd_journal_want(struct jd_journal *j, uint64_t seq, unsigned waiters)
{
	bool wake = false, due;

	pthread_mutex_lock(&j->mu);
	j->want_n += waiters;
	atomic_store_explicit(&j->want_n_seen, j->want_n, memory_order_relaxed);
	if (seq > j->want) {
		/* Wake a flusher that sleeps for want of a demand, or that gathers and now
		 * has every waiter it waits for. */
		bool was_due = j->head && j->want >= j->head->first_seq;

		j->want = seq;
		wake = j->flusher_waiting && (!was_due || !j->gather_until ||
					      j->want_n >= j->gather_target);
		if (wake) {
			j->flusher_waiting = false;
			j->wake_ns = now_ns();
		}
	}
	due = !j->gather_until || j->want_n >= j->gather_target;
	pthread_mutex_unlock(&j->mu);
	if (wake)
		pthread_cond_signal(&j->cv);
	return due;
}

void jd_journal_kick(struct jd_journal *j)
{
	pthread_mutex_lock(&j->mu);
	j->kick = true;
	pthread_mutex_unlock(&j->mu);
	pthread_cond_signal(&j->cv);
}

/* ---- segments (flusher thread, and open before the flusher starts) ---- */

static void seg_name(char *buf, size_t len, uint64_t index, bool tmp)
{
	snprintf(buf, len, "seg-%016" PRIx64 "%s", index, tmp ? ".tmp" : "");
}

static int open_flags(const struct jd_journal *j)
{
	if (j->o.io == JD_JOURNAL_IO_DIRECT)
		return O_RDWR | O_CLOEXEC | O_DIRECT | O_DSYNC;
	return O_RDWR | O_CLOEXEC | (j->o.io == JD_JOURNAL_IO_DSYNC ? O_DSYNC : 0);
}

/* fall_back: O_DIRECT refused here (EINVAL at open or write): write through the page
 * cache and fdatasync from now on. */
static void fall_back(struct jd_journal *j)
{
	j->o.io = JD_JOURNAL_IO_FDATASYNC;
	atomic_store_explicit(&j->io_used, JD_JOURNAL_IO_FDATASYNC, memory_order_relaxed);
}

/* reopen_plain: O_DIRECT opened but refused at the write (EINVAL): fall back, and the
 * segment of `index`, open as *fd, opened again for the page cache.  Returns 0 or -errno
 * (*fd is then left as it was). */
static int reopen_plain(struct jd_journal *j, uint64_t index, int *fd)
{
	char name[64];
	int nfd;

	fall_back(j);
	seg_name(name, sizeof(name), index, false);
	nfd = open_in(j, name, open_flags(j), 0);
	if (nfd < 0)
		return -errno;
	close(*fd);
	*fd = nfd;
	return 0;
}

/* reopen_sync: segment `name`, open as fd without its sync flags, opened again with
 * them (IO_DSYNC, IO_DIRECT; an O_DIRECT the filesystem refuses falls back).  Returns
 * the descriptor to use from now on (fd itself when nothing changed) or -1 (errno set;
 * fd is left open). */
static int reopen_sync(struct jd_journal *j, const char *name, int fd)
{
	int nfd;

	if (j->o.io == JD_JOURNAL_IO_FDATASYNC)
		return fd;
	nfd = open_in(j, name, open_flags(j), 0);
	if (nfd < 0 && errno == EINVAL && j->o.io == JD_JOURNAL_IO_DIRECT) {
		fall_back(j);
		return fd;
	}
	if (nfd < 0)
		return -1;
	close(fd);
	return nfd;
}

/* prepare_step: create or extend the next segment by one step (all of it if `whole`);
 * when it is complete, sync and rename it.  Returns 0 or -errno (the half-made file is
 * then removed, to be tried again later). */
static int prepare_step(struct jd_journal *j, bool whole)
{
	static const unsigned char zeros[64 << 10];
	char tmp[64], fin[64];
	int rc = 0;

	if (j->next_fd < 0)
		j->next_index = j->prep_base + 1;
	seg_name(tmp, sizeof(tmp), j->next_index, true);
	if (j->next_fd < 0) {
		j->next_fd = open_in(j, tmp, O_RDWR | O_CLOEXEC | O_CREAT | O_TRUNC, 0600);
		if (j->next_fd < 0)
			return -errno;
		j->next_zeroed = 0;
	}
	do {
		uint64_t from = j->next_zeroed, end = from + PREP_STEP;

		if (end > j->seg_bytes)
			end = j->seg_bytes;
		while (j->next_zeroed < end) {
			size_t n = end - j->next_zeroed > sizeof(zeros) ? sizeof(zeros)
								       : (size_t)(end - j->next_zeroed);

			rc = write_all(j->next_fd, zeros, n, j->next_zeroed);
			if (rc < 0)
				goto fail;
			j->next_zeroed += n;
		}
		/* Start writing the step back now, without waiting (advice: its result is
		 * not needed): the fdatasync that completes the segment then finds little
		 * left to write, instead of holding the flusher, and every reply behind
		 * it, while the whole file goes to disk (measured: 104 ms for 64 MiB on
		 * the shared disk, 3 ms with this). */
		sync_file_range(j->next_fd, (off64_t)from, (off64_t)(end - from),
				SYNC_FILE_RANGE_WRITE);
	} while (whole && j->next_zeroed < j->seg_bytes);
	if (j->next_zeroed < j->seg_bytes)
		return 0;
	if (fdatasync(j->next_fd) < 0) {
		rc = -errno;
		goto fail;
	}
	seg_name(fin, sizeof(fin), j->next_index, false);
	if (renameat(j->dirfd, tmp, j->dirfd, fin) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = dir_sync(j);
	if (rc < 0) {
		unlinkat(j->dirfd, fin, 0);
		goto fail_closed;
	}
	j->next_ready = true;
	add_stat(&j->n_created, 1);
	return 0;
fail:
	unlinkat(j->dirfd, tmp, 0);
fail_closed:
	close(j->next_fd);
	j->next_fd = -1;
	return rc;
}

/* switch_locked: switch_segment, under prep_mu. */
static int switch_locked(struct jd_journal *j)
{
	unsigned char h[64];
	int rc;

	if (!j->next_ready) {
		rc = prepare_step(j, true);
		if (rc < 0)
			return rc;
	}
	memset(h, 0, sizeof(h));
	memcpy(h, SEG_MAGIC, 8);
	jd_put32(h + 8, FORMAT_VERSION);
	jd_put64(h + 16, j->next_index);
	/* Its first record is the one after the last durable one (chunks are written in
	 * order, and a failed one again from its start). */
	jd_put64(h + 24, atomic_load_explicit(&j->durable, memory_order_relaxed) + 1);
	jd_put64(h + 32, j->good_index);
	jd_put64(h + 40, j->good_end);
	jd_put32(h + 12, jd_crc32c(0, h + 16, sizeof(h) - 16));
	{
		/* Prepared without O_DSYNC or O_DIRECT (zeroing through them would sync
		 * every step). */
		char fin[64];
		int fd;

		seg_name(fin, sizeof(fin), j->next_index, false);
		fd = reopen_sync(j, fin, j->next_fd);
		if (fd < 0)
			return -errno;
		j->next_fd = fd;
	}
	if (j->o.io == JD_JOURNAL_IO_DIRECT) {
		/* The whole header block, from the aligned buffer. */
		j->stage_tail = false; /* a new segment: its last block is zeros (below) */
		memset(j->stage, 0, JD_JOURNAL_SEG_HDR);
		memcpy(j->stage, h, sizeof(h));
		if (j->stage_dirty < sizeof(h))
			j->stage_dirty = sizeof(h);
		rc = write_all(j->next_fd, j->stage, JD_JOURNAL_SEG_HDR, 0);
		if (rc == -EINVAL) {
			if ((rc = reopen_plain(j, j->next_index, &j->next_fd)) < 0)
				return rc;
			rc = write_all(j->next_fd, h, sizeof(h), 0);
		}
		memset(j->tailblk, 0, JD_JOURNAL_BLOCK);
	} else {
		rc = write_all(j->next_fd, h, sizeof(h), 0);
	}
	if (rc < 0) {
		/* The prepared file may be damaged: make another. */
		char fin[64];

		seg_name(fin, sizeof(fin), j->next_index, false);
		unlinkat(j->dirfd, fin, 0);
		close(j->next_fd);
		j->next_fd = -1;
		j->next_ready = false;
		j->seg_index = j->next_index; /* never reuse the index */
		return rc;
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = j->next_fd;
	j->seg_index = j->next_index;
	j->seg_off = JD_JOURNAL_SEG_HDR;
	j->seg_first = jd_get64(h + 24);
	j->next_fd = -1;
	j->next_ready = false;
	j->need_new = false;
	pthread_mutex_lock(&j->mu);
	if (j->nsegs == j->capsegs) {
		size_t cap = j->capsegs ? j->capsegs * 2 : 16;
		struct seg *v = realloc(j->segs, cap * sizeof(*v));

		if (v) {
			j->segs = v;
			j->capsegs = cap;
		}
	}
	if (j->nsegs < j->capsegs)
		j->segs[j->nsegs++] = (struct seg){j->seg_index, j->seg_first, 0, JD_JOURNAL_SEG_HDR};
	pthread_mutex_unlock(&j->mu);
	return 0;
}

/* switch_segment: make the prepared next segment current (finishing it first if the
 * preparer has not), writing its header (which names the last segment with durable
 * data), and have the preparer make the one after.  Returns 0 or -errno. */
static int switch_segment(struct jd_journal *j)
{
	int rc;

	pthread_mutex_lock(&j->prep_mu);
	rc = switch_locked(j);
	j->prep_base = j->seg_index;
	pthread_mutex_unlock(&j->prep_mu);
	pthread_cond_signal(&j->cv_prep);
	return rc;
}

static void timed_wait_on(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t until_ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(until_ns / 1000000000ull);
	ts.tv_nsec = (long)(until_ns % 1000000000ull);
	pthread_cond_timedwait(cv, mu, &ts); /* both conds run on CLOCK_MONOTONIC */
}

/* preparer_main: the next segment, made a step at a time (PREP_PACE_MS apart) while
 * none is ready; a failure (no room yet) is tried again after a pause: it is not a
 * fault until a rollover needs the segment (the flusher then tries itself). */
static void *preparer_main(void *arg)
{
	struct jd_journal *j = arg;

	pthread_setname_np(pthread_self(), "jd-jprepare");
	pthread_mutex_lock(&j->prep_mu);
	while (!j->prep_stop) {
		int rc;

		if (j->next_ready) {
			pthread_cond_wait(&j->cv_prep, &j->prep_mu);
			continue;
		}
		rc = prepare_step(j, false);
		if (j->prep_stop)
			break;
		if (rc < 0)
			timed_wait_on(&j->cv_prep, &j->prep_mu,
				      now_ns() + 10 * JD_JOURNAL_RETRY_MS * 1000000ull);
		else if (!j->next_ready)
			timed_wait_on(&j->cv_prep, &j->prep_mu, now_ns() + PREP_PACE_MS * 1000000ull);
	}
	pthread_mutex_unlock(&j->prep_mu);
	return NULL;
}

/* write_direct: IO_DIRECT: chunk c (sealed) written at seg_off behind the log's last
 * block, whole blocks from the staging buffer; on success j->tailblk holds the new last
 * block (or the staging buffer does, at its start: stage_tail).  Returns 0 or -errno
 * (-EINVAL: the filesystem refuses O_DIRECT writes).
 *
 * The staging buffer is not built from scratch each time: bytes after the data that are
 * zero already (stage_dirty says up to where they may not be) are not zeroed again, and
 * a flush that ended in the block it began in leaves that block, the new last one, at
 * the buffer's start, where the next flush needs it.  With one submitter (a record per
 * flush, a 4 KiB block each) zeroing the rest of the block and copying the log's last
 * block into place were 1,700 of the 20,400 user instructions per durable submit
 * (callgrind). */
static int write_direct(struct jd_journal *j, const struct chunk *c)
{
	uint64_t off0 = j->seg_off & ~(uint64_t)(JD_JOURNAL_BLOCK - 1), end = j->seg_off + c->len,
		 last = end & ~(uint64_t)(JD_JOURNAL_BLOCK - 1);
	size_t pre = (size_t)(j->seg_off - off0), total = pre + c->len,
	       padded = (total + JD_JOURNAL_BLOCK - 1) & ~(size_t)(JD_JOURNAL_BLOCK - 1);
	int rc;

	if (!j->stage_tail)
		memcpy(j->stage, j->tailblk, pre);
	j->stage_tail = false;
	memcpy(j->stage + pre, c->buf, c->len);
	if (j->stage_dirty > total) /* (past padded too: each byte is zeroed once) */
		memset(j->stage + total, 0, j->stage_dirty - total);
	j->stage_dirty = total;
#ifdef JD_JOURNAL_ACK_EARLY
	atomic_store_explicit(&j->durable, c->last_seq, memory_order_release);
	notify(j);
#endif
	rc = write_all(j->fd, j->stage, padded, off0);
	if (rc < 0)
		return rc;
	if (last == off0 && last < end)
		j->stage_tail = true; /* the new last block is the one at the start */
	else if (last < end)
		memcpy(j->tailblk, j->stage + (last - off0), JD_JOURNAL_BLOCK);
	else
		memset(j->tailblk, 0, JD_JOURNAL_BLOCK);
	return 0;
}

/* flush_chunk: write and sync one chunk.  Returns 0 or -errno. */
static int flush_chunk(struct jd_journal *j, struct chunk *c)
{
	uint64_t t0 = now_ns(), dt, prev;
	int rc;

	if (!c->sealed) {
		size_t padded = (c->len + FLUSH_ALIGN - 1) & ~(size_t)(FLUSH_ALIGN - 1);

		memset(c->buf + c->len, 0, padded - c->len);
		jd_put32(c->buf + 4, FLUSH_MAGIC);
		jd_put32(c->buf + 8, (uint32_t)(c->len - FLUSH_HDR));
		jd_put32(c->buf + 12, jd_crc32c(0, c->buf + FLUSH_HDR, c->len - FLUSH_HDR));
		jd_put64(c->buf + 16, c->first_seq);
		jd_put64(c->buf + 24, c->last_seq);
		jd_put32(c->buf, jd_crc32c(0, c->buf + 4, FLUSH_HDR - 4));
		c->raw_len = c->len;
		c->len = padded;
		c->sealed = true;
	}
	if (j->fd < 0 || j->need_new || j->seg_off + c->len > j->seg_bytes) {
		rc = switch_segment(j);
		if (rc < 0)
			return rc;
	}
	if (j->o.io == JD_JOURNAL_IO_DIRECT) {
		rc = write_direct(j, c);
		if (rc == -EINVAL)
			rc = reopen_plain(j, j->seg_index, &j->fd);
		if (rc < 0)
			goto failed;
	}
	if (j->o.io != JD_JOURNAL_IO_DIRECT) {
		rc = write_all(j->fd, c->buf, c->len, j->seg_off);
		if (rc < 0)
			goto failed;
#ifdef JD_JOURNAL_ACK_EARLY
		atomic_store_explicit(&j->durable, c->last_seq, memory_order_release);
		notify(j);
#endif
	}
	if (j->o.io == JD_JOURNAL_IO_FDATASYNC) {
		if (fdatasync(j->fd) < 0) {
			rc = -errno;
			goto failed;
		}
	}
	add_stat(&j->n_syncs, 1);
	j->seg_off += c->len;
	j->good_index = j->seg_index;
	j->good_end = j->seg_off;
	add_stat(&j->n_bytes, c->len);
	add_stat(&j->log_bytes, c->len);
	pthread_mutex_lock(&j->mu);
	if (j->nsegs) {
		j->segs[j->nsegs - 1].last_seq = c->last_seq;
		j->segs[j->nsegs - 1].end = j->seg_off;
	}
	pthread_mutex_unlock(&j->mu);
	dt = now_ns() - t0;
	add_stat(&j->n_io_ns, dt);
	atomic_store_explicit(&j->last_io_ns, dt, memory_order_relaxed);
	prev = atomic_load_explicit(&j->flush_ns_max, memory_order_relaxed);
	if (dt > prev)
		atomic_store_explicit(&j->flush_ns_max, dt, memory_order_relaxed);
	return 0;
failed:
	/* After a failed write or fsync this file is never written again: its pages may be
	 * lost, and the next segment's header says where its durable data ends. */
	j->need_new = true;
	return rc;
}

static void timed_wait(struct jd_journal *j, uint64_t until_ns)
{
	timed_wait_on(&j->cv, &j->mu, until_ns);
}

/* polls: does this gather poll (gather_polling) rather than sleep?  Under mu. */
static bool polls(const struct jd_journal *j)
{
	return j->o.gather_spin && !j->last_gather_late && j->gather_target >= 2;
}

/* gather_polling: gather_spin: poll, without mu, until the waiters gathered for asked or
 * the gather's bound passed (from the flush's end: before the first of them asks, too).
 * Called and returns with mu held.
 *
 * Why poll.  A waiter's demand (jd_journal_want) wakes a sleeping flusher through its
 * condition variable: a futex wake, which on a VM whose idle CPUs halt is a trip through
 * the host when the flusher's CPU went idle (45 µs of a 343 µs cycle at 8 submitters in
 * the lead's quiet run, "flusher woken by a demand").  Polling keeps the flusher's CPU
 * awake for at most the gather's bound (twice a flush's time, JD_JOURNAL_GATHER_MAX_US at
 * most), and sched_yield gives the CPU to anything else that wants it meanwhile (the
 * loop, a client, a worker).  A stop or kick is seen when the bound passes.  Only for a
 * group (two waiters or more): a lone submitter's flush has nothing to hold together,
 * and polling through its whole way back cost more than the wake-up it saved (polls). */
static void gather_polling(struct jd_journal *j, uint64_t now)
{
	uint64_t until = j->gather_until, t = now;
	unsigned target = j->gather_target;

	if (!j->gather_polled)
		add_stat(&j->n_gathers_spun, 1);
	j->gather_polled = true;
	pthread_mutex_unlock(&j->mu);
	while (t < until && atomic_load_explicit(&j->want_n_seen, memory_order_relaxed) < target) {
		sched_yield();
		t = now_ns();
	}
	pthread_mutex_lock(&j->mu);
	add_stat(&j->n_gather_ns, t - now);
}

static void *flusher_main(void *arg)
{
	struct jd_journal *j = arg;
	uint64_t retry_at = 0;

	pthread_setname_np(pthread_self(), "jd-journal");

	pthread_mutex_lock(&j->mu);
	for (;;) {
		struct chunk *c;
		uint64_t now;
		unsigned gathered;
		int rc, e = atomic_load_explicit(&j->err, memory_order_relaxed);

		if (j->stop && (!j->head || e))
			break;
		if (!j->head || (j->o.on_demand && j->o.sync == JD_JOURNAL_SYNC_ALWAYS &&
				 j->head == j->tail && j->want < j->head->first_seq && !j->kick &&
				 !j->stop)) {
			if (j->gather_until && polls(j) && !j->kick && !j->stop && !e &&
			    (now = now_ns()) < j->gather_until) {
				/* the waiters of the last flush are on their way back */
				gather_polling(j, now);
				continue;
			}
			j->flusher_waiting = true;
			pthread_cond_wait(&j->cv, &j->mu);
			j->flusher_waiting = false;
			continue;
		}
		now = now_ns();
		if (e && now < retry_at && !j->kick) {
			timed_wait(j, retry_at);
			continue;
		}
		if (j->o.sync == JD_JOURNAL_SYNC_BATCH && !j->kick && !j->stop &&
		    now < j->last_flush_ns + (uint64_t)j->o.batch_ms * 1000000ull) {
			timed_wait(j, j->last_flush_ns + (uint64_t)j->o.batch_ms * 1000000ull);
			continue;
		}
		if (j->gather_until && now < j->gather_until && j->want_n < j->gather_target &&
		    !j->kick && !j->stop && !e && j->head == j->tail && polls(j)) {
			gather_polling(j, now);
			continue;
		}
		if (j->gather_until && now < j->gather_until && j->want_n < j->gather_target &&
		    !j->kick && !j->stop && !e && j->head == j->tail) {
			j->flusher_waiting = true;
			timed_wait(j, j->gather_until);
			j->flusher_waiting = false;
			add_stat(&j->n_gather_ns, now_ns() - now);
			continue;
		}
		j->last_gather_late = j->gather_until && j->want_n < j->gather_target &&
				      now >= j->gather_until;
		if (j->last_gather_late)
			add_stat(&j->n_gathers_late, 1); /* out of time, not everyone back */
		j->gather_until = 0;
		if (j->wake_ns) {
			add_stat(&j->n_wake_ns, now - j->wake_ns);
			add_stat(&j->n_wakes, 1);
			j->wake_ns = 0;
		}
		if (j->last_end_ns && now > j->last_end_ns)
			add_stat(&j->n_gap_ns, now - j->last_end_ns);
		gathered = j->want_n;
		j->want_n = 0;
		atomic_store_explicit(&j->want_n_seen, 0, memory_order_relaxed);
		j->kick = false;
		c = j->head;
		j->head = c->next;
		if (!j->head)
			j->tail = NULL;
		c->next = NULL;
		pthread_mutex_unlock(&j->mu);
		j->last_flush_ns = now;
		rc = flush_chunk(j, c);
		add_stat(&j->n_flushes, 1);
		pthread_mutex_lock(&j->mu);
		j->last_end_ns = rc == 0 ? now_ns() : 0;
		if (rc == 0 && j->o.on_demand && gathered) {
			/* The waiters of this flush come back now, beside those that asked
			 * during it: wait for them all, up to twice the flush's time.  One
			 * flush's time (the bound before) cut a median 22% of the gathers
			 * short at 8 submitters on a busy machine: the waiters' way back
			 * (hand-off, reply, next request) is close to a write + sync there.
			 * With twice: 3.1% ran short, fdatasyncs per submit 0.1335 -> 0.127
			 * (8 per flush is 0.125), rate 9,404 -> 10,416/s (medians of twelve
			 * rounds alternated with the build before, bench_e2e --part durable,
			 * BENCH_E2E_DURABLE=jschedd, KS=8; the machine was loaded).  Checked
			 * again beside a build with one flush's bound, 28 alternated rounds:
			 * fdatasyncs per submit 0.129 against 0.149, late gathers 10% against
			 * 30%, daemon CPU per submit no higher (daemon/README.md). */
			uint64_t end = now_ns(), bound = 2 * (end - now);

			if (bound > JD_JOURNAL_GATHER_MAX_US * 1000ull)
				bound = JD_JOURNAL_GATHER_MAX_US * 1000ull;
			j->gather_target = gathered + j->want_n;
			j->gather_until = end + bound;
			j->gather_polled = false;
			add_stat(&j->n_gathers, 1);
		}
		if (rc == 0) {
			atomic_store_explicit(&j->durable, c->last_seq, memory_order_release);
			if (e) {
				j->why[0] = 0;
				atomic_store_explicit(&j->err, 0, memory_order_release);
			}
			if (j->spare)
				chunk_free(c);
			else
				j->spare = c;
		} else {
			snprintf(j->why, sizeof(j->why), "writing the journal in %s: %s", j->dir,
				 strerror(-rc));
			atomic_store_explicit(&j->err, JSCHED_EJOURNAL, memory_order_release);
			add_stat(&j->n_failures, 1);
			/* Back to the front, open again: the caller may append to it (if it is
			 * the only one), and the next attempt seals it anew. */
			c->len = c->raw_len;
			c->sealed = false;
			c->next = j->head;
			j->head = c;
			if (!j->tail)
				j->tail = c;
			retry_at = now_ns() + JD_JOURNAL_RETRY_MS * 1000000ull;
		}
		pthread_cond_broadcast(&j->cv_durable);
		pthread_mutex_unlock(&j->mu);
		if (rc == 0 || !e) {
			atomic_store_explicit(&j->n_notified_ns, now_ns(), memory_order_relaxed);
			notify(j);
		}
		pthread_mutex_lock(&j->mu);
	}
	pthread_cond_broadcast(&j->cv_durable);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* start_flusher: the flusher thread, on opts.flusher_cpu when asked to and the process
 * may run there (the affinity set at its creation, so the stats say it from the start).
 * Returns 0 or pthread_create's error. */
static int start_flusher(struct jd_journal *j)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int cpu = j->o.flusher_cpu, rc;

	if (!j->o.pin_flusher || cpu < 0 || cpu >= CPU_SETSIZE ||
	    sched_getaffinity(0, sizeof(set), &set) < 0 || !CPU_ISSET(cpu, &set))
		return pthread_create(&j->flusher, NULL, flusher_main, j);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if ((rc = pthread_attr_init(&attr)))
		return rc;
	rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (rc == 0 && (rc = pthread_create(&j->flusher, &attr, flusher_main, j)) == 0)
		atomic_store_explicit(&j->pinned_cpu, cpu, memory_order_relaxed);
	pthread_attr_destroy(&attr);
	if (rc) /* a CPU refused after all (a cpuset changing under us): anywhere, then */
		rc = pthread_create(&j->flusher, NULL, flusher_main, j);
	return rc;
}

/* ---- recovery ---- */

struct found {
	uint64_t index;
	uint64_t size;
	bool valid;		/* header valid */
	uint64_t first_seq, prev_index, prev_end;
};

static int cmp_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* map_file: read-only mapping of a whole file (NULL for an empty one). */
static int map_file(struct jd_journal *j, const char *name, const unsigned char **p,
		    uint64_t *size, char *err, size_t errlen)
{
	int fd = open_in(j, name, O_RDONLY | O_CLOEXEC, 0);
	struct stat st;
	void *m;

	*p = NULL;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return fail(err, errlen, "journal %s/%s: %s", j->dir, name, strerror(e));
	}
	*size = (uint64_t)st.st_size;
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return fail(err, errlen, "journal %s/%s: mmap: %s", j->dir, name, strerror(errno));
	madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
	*p = m;
	return 0;
}

static void unmap(const unsigned char *p, uint64_t size)
{
	if (p)
		munmap((void *)(uintptr_t)p, (size_t)size);
}

/* all_zero: are p[from..to) all zero?  Compared 4 KiB at a time against a block of zeros
 * (memcmp's vector loop): a restart checks the rest of the last segment, most of 64 MiB,
 * and byte by byte that was 207M instructions, 39 % of a restart with 100,000 retained
 * jobs (callgrind); now 8M. */
static bool all_zero(const unsigned char *p, uint64_t from, uint64_t to)
{
	static const unsigned char zeros[4096];

	while (from < to) {
		size_t n = to - from > sizeof(zeros) ? sizeof(zeros) : (size_t)(to - from);

		if (memcmp(p + from, zeros, n) != 0)
			return false;
		from += n;
	}
	return true;
}

static bool seg_header(const unsigned char *p, uint64_t size, struct found *f)
{
	if (size < JD_JOURNAL_SEG_HDR || memcmp(p, SEG_MAGIC, 8) != 0 ||
	    jd_get32(p + 8) != FORMAT_VERSION || jd_get32(p + 12) != jd_crc32c(0, p + 16, 64 - 16) ||
	    jd_get64(p + 16) != f->index)
		return false;
	f->first_seq = jd_get64(p + 24);
	f->prev_index = jd_get64(p + 32);
	f->prev_end = jd_get64(p + 40);
	return f->first_seq > 0;
}

/* load_snapshot: replay snap-<covers>.  Returns 0 or a negative code. */
static int load_snapshot(struct jd_journal *j, const char *name, uint64_t covers,
			 struct jd_journal_info *info, char *err, size_t errlen)
{
	const unsigned char *p;
	uint64_t size, off = 64, n = 0;
	int rc = map_file(j, name, &p, &size, err, errlen);

	if (rc < 0)
		return rc;
	if (size < 64 || memcmp(p, SNAP_MAGIC, 8) != 0 || jd_get32(p + 8) != FORMAT_VERSION ||
	    jd_get32(p + 12) != jd_crc32c(0, p + 16, 64 - 16) || jd_get64(p + 16) != covers) {
		rc = fail(err, errlen, "journal %s/%s: bad snapshot header", j->dir, name);
		goto out;
	}
	for (;;) {
		struct jd_journal_rec r;
		size_t sz;
		const char *why = "unexpected end";
		enum rec_check k = off < size ? decode(p + off, size - off, false, &r, &sz, &why) : REC_ZERO;

		if (k != REC_OK || r.seq != n + 1) {
			if (k == REC_OK)
				why = "sequence number out of order";
			rc = fail(err, errlen, "journal %s/%s: offset %" PRIu64 ": %s (a snapshot is "
				  "complete when renamed; this one is damaged)", j->dir, name, off, why);
			goto out;
		}
		off += sz;
		if (r.type == T_SNAP_END) {
			if (r.len != 8 || jd_get64(r.data) != n) {
				rc = fail(err, errlen, "journal %s/%s: bad end record", j->dir, name);
				goto out;
			}
			break;
		}
		n++;
		r.in_snapshot = true;
		if (j->o.replay_cb && (rc = j->o.replay_cb(j->o.replay_arg, &r)) < 0) {
			fail(err, errlen, "journal %s/%s: record %" PRIu64 " refused by the reader",
			     j->dir, name, n);
			goto out;
		}
	}
	info->snapshot_seq = covers;
	info->snapshot_records = n;
	j->snap_bytes = size;
out:
	unmap(p, size);
	return rc;
}

/* flush_header: is the 32 bytes at p a sound flush header (for `expect` as its first
 * record)?  Returns true with the length of its records in *len and its records' CRC. */
static bool flush_header(const unsigned char *p, uint64_t expect, uint32_t *len, uint32_t *crc)
{
	if (jd_get32(p) != jd_crc32c(0, p + 4, FLUSH_HDR - 4) || jd_get32(p + 4) != FLUSH_MAGIC)
		return false;
	*len = jd_get32(p + 8);
	*crc = jd_get32(p + 12);
	return *len >= JD_JOURNAL_HDR && *len <= JD_JOURNAL_FLUSH_MAX - FLUSH_HDR &&
	       jd_get64(p + 16) == expect && jd_get64(p + 24) >= expect;
}

/* ---- reading a segment at recovery ----
 *
 * A segment's flushes are read by a thread of their own (the reader) into a ring of
 * RD_PIECES pieces of RD_PIECE bytes, through O_DIRECT where the filesystem takes it,
 * while the caller replays the flushes before: the read of a piece overlaps the replay
 * of the last.  The ring is made once per recovery and reused for every segment, so a
 * restart touches its 8 MiB, not a page-cache page per 4 KiB of the journal.  Mapping
 * the segments instead (as before) cost a restart on a million retained jobs (320 MB of
 * journal, not in the page cache after a kill -9, since the flushes went to the disk
 * through O_DIRECT) 0.25-0.35 s of user time in the CRC's first touch of each page, on
 * this VM, whose fresh pages are slow (the host backs them on first use); a program
 * reading those 5 segments cold took 26-500 ms of user time mapped and 32-38 ms through
 * a reused buffer (three rounds each, alternated).  The zeros past the log's end are
 * still checked through a mapping: the preparer wrote them through the page cache, so
 * they are usually there. */
#define RD_PIECE (1u << 20)
#define RD_PIECES 8u
_Static_assert(RD_PIECES * RD_PIECE >= JD_JOURNAL_FLUSH_MAX + 2 * RD_PIECE,
	       "the ring holds a whole flush and the piece after it");

struct rd {
	unsigned char *ring;		/* RD_PIECES * RD_PIECE, page-aligned */
	unsigned char *scratch;		/* a flush across pieces, copied whole */
	size_t scratch_cap;
	int fd;
	uint64_t size;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* both ways: a piece read, a piece freed or stop */
	uint64_t read_to;		/* under mu: the file's bytes [0, read_to) were read */
	uint64_t free_from;		/* under mu: the caller needs nothing before this */
	int err;			/* under mu: the reader's error (a negative errno) */
	bool stop;			/* under mu */
};

/* rd_main: the reader: the file's pieces in order, each once its slot is free. */
static void *rd_main(void *arg)
{
	struct rd *r = arg;

	for (uint64_t at = 0; at < r->size; at += RD_PIECE) {
		size_t n = r->size - at < RD_PIECE ? (size_t)(r->size - at) : RD_PIECE, got = 0;
		unsigned char *to = r->ring + (at / RD_PIECE % RD_PIECES) * RD_PIECE;
		int e = 0;

		pthread_mutex_lock(&r->mu);
		while (!r->stop && at >= (r->free_from / RD_PIECE + RD_PIECES) * RD_PIECE)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->stop) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		pthread_mutex_unlock(&r->mu);
		while (got < n && e == 0) {
			ssize_t k = pread(r->fd, to + got, n - got, (off_t)(at + got));

			if (k < 0 && errno == EINVAL && (fcntl(r->fd, F_GETFL) & O_DIRECT)) {
				/* a filesystem that opens O_DIRECT but refuses it here */
				if (fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) & ~O_DIRECT) < 0)
					e = -errno;
			} else if (k < 0 && errno != EINTR) {
				e = -errno;
			} else if (k == 0) {
				e = -EIO; /* shorter than its size: truncated under us */
			} else if (k > 0) {
				got += (size_t)k;
			}
		}
		pthread_mutex_lock(&r->mu);
		if (e)
			r->err = e;
		else
			r->read_to = at + n;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		if (e)
			break;
	}
	return NULL;
}

/* rd_start: read the segment `name` of `size` bytes with r (its ring made by the
 * caller).  0 or a negative errno. */
static int rd_start(struct jd_journal *j, struct rd *r, const char *name, uint64_t size)
{
	int rc;

	r->fd = open_in(j, name, O_RDONLY | O_CLOEXEC | O_DIRECT, 0);
	if (r->fd < 0 && errno == EINVAL)
		r->fd = open_in(j, name, O_RDONLY | O_CLOEXEC, 0);
	if (r->fd < 0)
		return -errno;
	r->size = size;
	r->read_to = r->free_from = 0;
	r->err = 0;
	r->stop = false;
	if ((rc = pthread_create(&r->thread, NULL, rd_main, r)) != 0) {
		close(r->fd);
		return -rc;
	}
	return 0;
}

/* rd_stop: stop the reader (it may be reading ahead) and close the file. */
static void rd_stop(struct rd *r)
{
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	close(r->fd);
}

/* rd_get: the file's bytes [off, off + n) in one piece of memory, valid until the next
 * rd_get; off never goes back, and n is at most a flush.  Returns NULL with *e the
 * reader's error if they cannot be read. */
static const unsigned char *rd_get(struct rd *r, uint64_t off, size_t n, int *e)
{
	uint64_t first = off / RD_PIECE, last = (off + n - 1) / RD_PIECE;

	pthread_mutex_lock(&r->mu);
	if (off > r->free_from) {
		r->free_from = off; /* the pieces before off's may be read over */
		pthread_cond_broadcast(&r->cv);
	}
	while (!r->err && r->read_to < off + n)
		pthread_cond_wait(&r->cv, &r->mu);
	*e = r->err;
	pthread_mutex_unlock(&r->mu);
	if (*e)
		return NULL;
	if (first == last)
		return r->ring + (first % RD_PIECES) * RD_PIECE + off % RD_PIECE;
	if (n > r->scratch_cap) {
		unsigned char *s = realloc(r->scratch, n);

		if (!s) {
			*e = -ENOMEM;
			return NULL;
		}
		r->scratch = s;
		r->scratch_cap = n;
	}
	for (size_t done = 0; done < n;) {
		uint64_t at = off + done;
		size_t in = RD_PIECE - (size_t)(at % RD_PIECE), k = n - done < in ? n - done : in;

		memcpy(r->scratch + done, r->ring + (at / RD_PIECE % RD_PIECES) * RD_PIECE + at % RD_PIECE,
		       k);
		done += k;
	}
	return r->scratch;
}

/* scan_segment: replay a segment's flushes, skipping records up to skip_to.  `end` is
 * where its data ends (from the next segment's header), or for the last segment
 * (last: true) the end is found: the first all-zero flush header, or a flush whose
 * checksum fails with nothing but zeros after it (the torn last flush), is the crash
 * point.  Returns 0 with *seq the last sequence number and *stop the end of the valid
 * data, or a negative code with the file and offset of what is wrong in err. */
static int scan_segment(struct jd_journal *j, struct rd *rd, const struct found *f, uint64_t end,
			bool last, uint64_t skip_to, uint64_t *seq, uint64_t *stop,
			struct jd_journal_info *info, char *err, size_t errlen)
{
	char name[64];
	const unsigned char *p, *q;
	uint64_t size, off = JD_JOURNAL_SEG_HDR, expect = f->first_seq;
	const char *why = NULL;
	int rc, e;

	seg_name(name, sizeof(name), f->index, false);
	rc = map_file(j, name, &p, &size, err, errlen);
	if (rc < 0)
		return rc;
	if (!last && end > size) {
		rc = fail(err, errlen, "journal %s/%s: shorter (%" PRIu64 " bytes) than its data "
			  "(%" PRIu64 ")", j->dir, name, size, end);
		unmap(p, size);
		return rc;
	}
	if (last)
		end = size;
	/* The flushes through the reader (whole blocks, for O_DIRECT); p, the mapping,
	 * only for the zeros after them. */
	if ((e = rd_start(j, rd, name, (end + JD_JOURNAL_BLOCK - 1) / JD_JOURNAL_BLOCK *
				       JD_JOURNAL_BLOCK < size ? (end + JD_JOURNAL_BLOCK - 1) /
				       JD_JOURNAL_BLOCK * JD_JOURNAL_BLOCK : size)) < 0) {
		rc = fail(err, errlen, "journal %s/%s: %s", j->dir, name, strerror(-e));
		unmap(p, size);
		return rc;
	}
	while (off + FLUSH_HDR <= end) {
		uint32_t len, crc;
		uint64_t next, roff;

		if (!(q = rd_get(rd, off, FLUSH_HDR, &e)))
			goto read_failed;
		if (all_zero(q, 0, FLUSH_HDR)) {
			if (!last) {
				why = "zeros where a flush should be";
				goto bad;
			}
			/* The end, or a torn flush whose first sector never arrived: then
			 * its other sectors lie within one flush's length. */
			if (off + JD_JOURNAL_FLUSH_MAX < size &&
			    !all_zero(p, off + JD_JOURNAL_FLUSH_MAX, size)) {
				why = "zeros, and data after them";
				goto bad;
			}
			if (!all_zero(p, off, off + JD_JOURNAL_FLUSH_MAX < size ? off + JD_JOURNAL_FLUSH_MAX
									  : size))
				goto torn;
			break;
		}
		/* A header is 32-byte aligned, so it is never split across sectors: a torn
		 * write leaves it whole or zero, and a bad one is damage. */
		if (!flush_header(q, expect, &len, &crc)) {
			why = "bad flush header";
			goto bad;
		}
		next = off + ((FLUSH_HDR + len + FLUSH_ALIGN - 1) & ~(uint64_t)(FLUSH_ALIGN - 1));
		if (next > end) {
			why = "a flush runs past the end of the segment's data";
			goto bad;
		}
		if (!(q = rd_get(rd, off, FLUSH_HDR + len, &e)))
			goto read_failed;
		if (jd_crc32c(0, q + FLUSH_HDR, len) != crc) {
			/* Torn if it is the last flush: nothing but zeros after it. */
			if (last && all_zero(p, next, size))
				goto torn;
			why = "flush checksum mismatch";
			goto bad;
		}
		for (roff = off + FLUSH_HDR; roff < off + FLUSH_HDR + len;) {
			struct jd_journal_rec r;
			size_t sz;
			enum rec_check k = decode(q + (roff - off), off + FLUSH_HDR + len - roff, true,
						  &r, &sz, &why);

			if (k != REC_OK || r.seq != expect) {
				if (k == REC_OK)
					why = "record sequence number out of order";
				else if (k == REC_ZERO)
					why = "zeros inside a flush";
				off = roff;
				goto bad;
			}
			r.in_snapshot = false;
			if (r.seq > skip_to) {
				info->records++;
				if (j->o.replay_cb && (rc = j->o.replay_cb(j->o.replay_arg, &r)) < 0) {
					fail(err, errlen, "journal %s/%s: offset %" PRIu64
					     ": record %" PRIu64 " refused by the reader", j->dir,
					     name, roff, r.seq);
					goto out;
				}
			}
			*seq = expect++;
			roff += sz;
		}
		info->bytes += next - off;
		off = next;
	}
	if (!last && off != end) {
		why = "the segment's data does not end where the next segment says";
		goto bad;
	}
	*stop = off;
	goto out;
torn:
	info->torn_tail = true;
	snprintf(info->tail_file, sizeof(info->tail_file), "%s", name);
	info->tail_offset = off;
	*stop = off;
	goto out;
read_failed:
	rc = fail(err, errlen, "journal %s/%s: offset %" PRIu64 ": reading it: %s", j->dir, name,
		  off, strerror(-e));
	goto out;
bad:
	rc = fail(err, errlen, "journal %s/%s: offset %" PRIu64 ": %s: the journal is damaged "
		  "(inspect it with jschedd --check-journal)", j->dir, name, off, why);
out:
	rd_stop(rd);
	unmap(p, size);
	return rc;
}

/* cut_tail: zero the torn end of the last segment and sync it. */
static int cut_tail(struct jd_journal *j, int fd, uint64_t from, uint64_t size)
{
	static const unsigned char zeros[64 << 10];
	uint64_t to = from + JD_JOURNAL_FLUSH_MAX < size ? from + JD_JOURNAL_FLUSH_MAX : size;
	int rc = 0;

	(void)j;
	for (uint64_t o = from; o < to && rc == 0;) {
		size_t n = to - o > sizeof(zeros) ? sizeof(zeros) : (size_t)(to - o);

		rc = write_all(fd, zeros, n, o);
		o += n;
	}
	if (rc == 0 && fdatasync(fd) < 0)
		rc = -errno;
	return rc;
}

static int recover(struct jd_journal *j, struct jd_journal_info *info, char *err, size_t errlen)
{
	DIR *dp = NULL;
	struct dirent *de;
	struct found *segs = NULL;
	size_t *chain = NULL;
	size_t n = 0, cap = 0, nc = 0, lastv;
	uint64_t snap = 0, seq = 0, stop = 0;
	bool have_snap = false, dirty = false;
	int rc = 0, dfd;
	char name[64];
	struct rd rd = {.ring = MAP_FAILED};

	dfd = dup(j->dirfd);
	if (dfd < 0 || !(dp = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return fail(err, errlen, "journal %s: %s", j->dir, strerror(errno));
	}
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		unsigned long long v;
		char tail;

		if (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) {
			if (!j->o.read_only) {
				unlinkat(j->dirfd, de->d_name, 0);
				dirty = true;
			}
			continue;
		}
		if (sscanf(de->d_name, "snap-%16llx%c", &v, &tail) == 1 && len == 21) {
			if (!have_snap || v > snap)
				snap = v;
			have_snap = true;
		} else if (sscanf(de->d_name, "seg-%16llx%c", &v, &tail) == 1 && len == 20) {
			if (n == cap) {
				struct found *nv;

				cap = cap ? cap * 2 : 16;
				nv = realloc(segs, cap * sizeof(*nv));
				if (!nv) {
					rc = JSCHED_ENOMEM;
					goto out;
				}
				segs = nv;
			}
			segs[n++] = (struct found){.index = v};
		}
	}
	if (n)
		qsort(segs, n, sizeof(*segs), cmp_found);
	if (have_snap) {
		snprintf(name, sizeof(name), "snap-%016llx", (unsigned long long)snap);
		rc = load_snapshot(j, name, snap, info, err, errlen);
		if (rc < 0)
			goto out;
	}
	/* Headers; the chain runs back from the newest segment with a valid one. */
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p;

		seg_name(name, sizeof(name), segs[i].index, false);
		rc = map_file(j, name, &p, &segs[i].size, err, errlen);
		if (rc < 0)
			goto out;
		segs[i].valid = p && seg_header(p, segs[i].size, &segs[i]);
		unmap(p, segs[i].size);
	}
	lastv = n;
	for (size_t i = n; i-- > 0;)
		if (segs[i].valid) {
			lastv = i;
			break;
		}
	/* Newer segments with no valid header never held durable data (prepared, or
	 * their first flush never completed): they are removed below. */
	/* The chain: back from the newest valid segment, each header naming the last
	 * segment before it that holds durable data, until one that the snapshot reaches
	 * (or the first ever). */
	if (lastv < n) {
		size_t i = lastv;

		chain = malloc(n * sizeof(*chain));
		if (!chain) {
			rc = JSCHED_ENOMEM;
			goto out;
		}
		chain[nc++] = i;
		for (;;) {
			size_t k;

			if (have_snap && segs[i].first_seq <= snap + 1)
				break;
			if (segs[i].prev_index == 0) {
				if (segs[i].first_seq != 1) {
					rc = fail(err, errlen, "journal %s: segment %016" PRIx64
						  " starts at record %" PRIu64 " but no snapshot or "
						  "segment holds the records before it", j->dir,
						  segs[i].index, segs[i].first_seq);
					goto out;
				}
				break;
			}
			for (k = i; k-- > 0;)
				if (segs[k].index == segs[i].prev_index)
					break;
			if (k == (size_t)-1 || !segs[k].valid) {
				rc = fail(err, errlen, "journal %s: segment %016" PRIx64 " is missing "
					  "or damaged (segment %016" PRIx64 " continues it)", j->dir,
					  segs[i].prev_index, segs[i].index);
				goto out;
			}
			chain[nc++] = i = k;
		}
		for (size_t a = 0, b = nc - 1; a < b; a++, b--) {
			size_t t = chain[a];

			chain[a] = chain[b];
			chain[b] = t;
		}
	}
	if (nc) {
		rd.ring = mmap(NULL, RD_PIECES * RD_PIECE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (rd.ring == MAP_FAILED) {
			rc = JSCHED_ENOMEM;
			goto out;
		}
		pthread_mutex_init(&rd.mu, NULL);
		pthread_cond_init(&rd.cv, NULL);
	}
	for (size_t c = 0; c < nc; c++) {
		const struct found *f = &segs[chain[c]];
		bool last = c + 1 == nc;

		if (c > 0 && f->first_seq != seq + 1) {
			rc = fail(err, errlen, "journal %s: segment %016" PRIx64 " starts at record "
				  "%" PRIu64 ", expected %" PRIu64, j->dir, f->index, f->first_seq,
				  seq + 1);
			goto out;
		}
		rc = scan_segment(j, &rd, f, last ? UINT64_MAX : segs[chain[c + 1]].prev_end, last,
				  have_snap ? snap : 0, &seq, &stop, info, err, errlen);
		if (rc < 0)
			goto out;
		info->segments++;
	}
	if (have_snap && seq < snap)
		seq = snap;
	info->last_seq = seq;
	j->last_seq = seq;
	atomic_store_explicit(&j->durable, seq, memory_order_relaxed);
	if (j->o.read_only)
		goto out;
	/* Remove what is not in the chain, keep the chain for the snapshot thread. */
	for (size_t i = 0; i < n; i++) {
		bool in = false;

		for (size_t c = 0; c < nc && !in; c++)
			in = chain[c] == i;
		if (!in) {
			seg_name(name, sizeof(name), segs[i].index, false);
			unlinkat(j->dirfd, name, 0);
			dirty = true;
		}
	}
	if (nc) {
		j->segs = calloc(nc, sizeof(*j->segs));
		if (!j->segs) {
			rc = JSCHED_ENOMEM;
			goto out;
		}
		j->capsegs = nc;
		for (size_t c = 0; c < nc; c++)
			j->segs[j->nsegs++] = (struct seg){segs[chain[c]].index, segs[chain[c]].first_seq,
							   0, 0};
		j->segs[nc - 1].last_seq = seq;
	}
	if (lastv != n) {
		/* Continue in the last segment, after cutting a torn tail. */
		seg_name(name, sizeof(name), segs[lastv].index, false);
		j->fd = open_in(j, name, j->o.io == JD_JOURNAL_IO_DIRECT ? O_RDWR | O_CLOEXEC
									: open_flags(j), 0);
		if (j->fd < 0) {
			rc = fail(err, errlen, "journal %s/%s: %s", j->dir, name, strerror(errno));
			goto out;
		}
		if (info->torn_tail && (rc = cut_tail(j, j->fd, stop, segs[lastv].size)) < 0) {
			rc = fail(err, errlen, "journal %s/%s: cutting the torn tail: %s", j->dir, name,
				  strerror(-rc));
			goto out;
		}
		if (j->o.io == JD_JOURNAL_IO_DIRECT) {
			/* The last block's bytes, which the next flush writes again. */
			uint64_t at = stop & ~(uint64_t)(JD_JOURNAL_BLOCK - 1);
			size_t keep = (size_t)(stop - at);
			ssize_t got;
			int fd;

			memset(j->tailblk, 0, JD_JOURNAL_BLOCK);
			got = keep ? pread(j->fd, j->tailblk, keep, (off_t)at) : 0;
			if (got != (ssize_t)keep) {
				rc = fail(err, errlen, "journal %s/%s: reading its last block: %s",
					  j->dir, name, got < 0 ? strerror(errno) : "short read");
				goto out;
			}
			if ((fd = reopen_sync(j, name, j->fd)) < 0) {
				rc = fail(err, errlen, "journal %s/%s: %s", j->dir, name,
					  strerror(errno));
				goto out;
			}
			j->fd = fd;
		}
		j->seg_index = segs[lastv].index;
		j->seg_first = segs[lastv].first_seq;
		j->seg_off = stop;
		j->good_index = j->seg_index;
		j->good_end = stop;
		j->segs[j->nsegs - 1].end = stop;
		if (stop > j->seg_bytes)
			j->seg_bytes = stop; /* written with a larger size: fine */
	} else {
		j->seg_index = n ? segs[n - 1].index : 0;
	}
	if (dirty)
		dir_sync(j);
out:
	if (rd.ring != MAP_FAILED) {
		munmap(rd.ring, RD_PIECES * RD_PIECE);
		free(rd.scratch);
		pthread_mutex_destroy(&rd.mu);
		pthread_cond_destroy(&rd.cv);
	}
	if (dp)
		closedir(dp);
	free(segs);
	free(chain);
	return rc;
}

/* ---- open / close ---- */

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0700) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int jd_journal_open(struct jd_journal **out, const struct jd_journal_opts *opts,
		    struct jd_journal_info *info, char *err, size_t errlen)
{
	struct jd_journal *j;
	struct jd_journal_info dummy;
	struct sigaction sa;
	int rc;

	*out = NULL;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	if (!opts->dir || !opts->dir[0] || strlen(opts->dir) >= PATH_MAX - 80)
		return fail(err, errlen, "journal.dir: must be a path");
	j = calloc(1, sizeof(*j));
	if (!j)
		return JSCHED_ENOMEM;
	j->o = *opts;
	snprintf(j->dir, sizeof(j->dir), "%s", opts->dir);
	j->o.dir = j->dir;
	j->seg_bytes = opts->segment_bytes ? opts->segment_bytes : JD_JOURNAL_SEGMENT_DEFAULT;
	if (j->seg_bytes < JD_JOURNAL_SEG_HDR + 4096)
		j->seg_bytes = JD_JOURNAL_SEG_HDR + 4096;
	j->seg_bytes = (j->seg_bytes + 4095) & ~(uint64_t)4095;
	j->dirfd = j->lockfd = j->fd = j->next_fd = -1;
	pthread_mutex_init(&j->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&j->cv, &ca);
		pthread_cond_init(&j->cv_prep, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&j->prep_mu, NULL);
	pthread_cond_init(&j->cv_durable, NULL);
	pthread_cond_init(&j->cv_snap, NULL);
	if (!opts->read_only && (rc = mkdirs(j->dir)) < 0) {
		rc = fail(err, errlen, "journal directory %s cannot be created: %s", j->dir,
			  strerror(-rc));
		goto fail;
	}
	j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd < 0) {
		rc = fail(err, errlen, "journal directory %s: %s", j->dir, strerror(errno));
		goto fail;
	}
	if (!opts->read_only) {
		j->lockfd = open_in(j, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (j->lockfd < 0) {
			rc = fail(err, errlen, "journal directory %s is not writable: %s", j->dir,
				  strerror(errno));
			goto fail;
		}
		if (flock(j->lockfd, LOCK_EX | LOCK_NB) < 0 &&
		    (rc = lock_from_heir(j, err, errlen)) < 0)
			goto fail;
		/* A file-size limit must fail writes (EFBIG), not kill the process. */
		if (sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
			signal(SIGXFSZ, SIG_IGN);
	}
	if (j->o.io == JD_JOURNAL_IO_DIRECT && !opts->read_only) {
		void *tb = NULL;
		/* Mapped, not malloc'd: zeros that take no memory until a flush that large
		 * uses them (stage_dirty 0). */
		void *st = mmap(NULL, STAGE_BYTES, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (st == MAP_FAILED || posix_memalign(&tb, JD_JOURNAL_BLOCK, JD_JOURNAL_BLOCK)) {
			if (st != MAP_FAILED)
				munmap(st, STAGE_BYTES);
			rc = JSCHED_ENOMEM;
			goto fail;
		}
		j->stage = st;
		j->stage_dirty = 0;
		j->tailblk = tb;
		memset(j->tailblk, 0, JD_JOURNAL_BLOCK);
	} else if (j->o.io == JD_JOURNAL_IO_DIRECT) {
		j->o.io = JD_JOURNAL_IO_FDATASYNC; /* reads only */
	}
	atomic_store_explicit(&j->io_used, (int)j->o.io, memory_order_relaxed);
	atomic_store_explicit(&j->pinned_cpu, -1, memory_order_relaxed);
	rc = recover(j, info, err, errlen);
	if (rc < 0)
		goto fail;
	j->prep_base = j->seg_index;
	if (opts->read_only) {
		*out = j;
		return 0;
	}
	if (j->fd < 0 && (rc = switch_segment(j)) < 0) {
		rc = fail(err, errlen, "journal directory %s: creating a segment: %s", j->dir,
			  strerror(-rc));
		goto fail;
	}
	rc = start_flusher(j);
	if (rc) {
		rc = fail(err, errlen, "journal: cannot start its thread: %s", strerror(rc));
		goto fail;
	}
	j->started = true;
	rc = pthread_create(&j->preparer, NULL, preparer_main, j);
	if (rc) {
		rc = fail(err, errlen, "journal: cannot start its thread: %s", strerror(rc));
		goto fail;
	}
	j->prep_started = true;
	*out = j;
	return 0;
fail:
	jd_journal_close(j);
	return rc;
}

/* stop_join: tell thread th to stop (*stop, under mu; cv wakes it) and wait for it. */
static void stop_join(pthread_mutex_t *mu, bool *stop, pthread_cond_t *cv, pthread_t th)
{
	pthread_mutex_lock(mu);
	*stop = true;
	pthread_mutex_unlock(mu);
	pthread_cond_signal(cv);
	pthread_join(th, NULL);
}

int jd_journal_close(struct jd_journal *j)
{
	int rc;

	if (!j)
		return 0;
	if (j->snap)
		jd_journal_snap_finish(j);
	if (j->started)
		stop_join(&j->mu, &j->stop, &j->cv, j->flusher);
	if (j->prep_started)
		stop_join(&j->prep_mu, &j->prep_stop, &j->cv_prep, j->preparer);
	rc = j->head ? (atomic_load(&j->err) ? atomic_load(&j->err) : JSCHED_EJOURNAL) : 0;
	while (j->head) {
		struct chunk *c = j->head;

		j->head = c->next;
		chunk_free(c);
	}
	while (j->spare) {
		struct chunk *c = j->spare;

		j->spare = c->next;
		chunk_free(c);
	}
	if (j->next_fd >= 0) {
		/* Half prepared: remove it (a complete one stays, to be reused or removed at
		 * the next open). */
		if (!j->next_ready) {
			char tmp[64];

			seg_name(tmp, sizeof(tmp), j->next_index, true);
			unlinkat(j->dirfd, tmp, 0);
		}
		close(j->next_fd);
	}
	if (j->fd >= 0)
		close(j->fd);
	if (j->lockfd >= 0)
		close(j->lockfd);
	if (j->dirfd >= 0)
		close(j->dirfd);
	pthread_cond_destroy(&j->cv);
	pthread_cond_destroy(&j->cv_prep);
	pthread_mutex_destroy(&j->prep_mu);
	pthread_cond_destroy(&j->cv_durable);
	pthread_cond_destroy(&j->cv_snap);
	pthread_mutex_destroy(&j->mu);
	free(j->segs);
	if (j->stage)
		munmap(j->stage, STAGE_BYTES);
	free(j->tailblk);
	free(j);
	return rc;
}

void jd_journal_stats(struct jd_journal *j, struct jd_journal_stats *st)
{
#define LD(x) atomic_load_explicit(&j->x, memory_order_relaxed)
	st->appended = LD(n_appended);
	st->durable_seq = LD(durable);
	st->flushes = LD(n_flushes);
	st->bytes_written = LD(n_bytes);
	st->syncs = LD(n_syncs);
	st->failures = LD(n_failures);
	st->segments_created = LD(n_created);
	st->segments_removed = LD(n_removed);
	st->snapshots = LD(n_snapshots);
	st->flush_ns_max = LD(flush_ns_max);
	st->io_ns = LD(n_io_ns);
	st->gather_ns = LD(n_gather_ns);
	st->cycle_gap_ns = LD(n_gap_ns);
	st->notified_ns = LD(n_notified_ns);
	st->wake_ns = LD(n_wake_ns);
	st->wakes = LD(n_wakes);
	st->gathers = LD(n_gathers);
	st->gathers_late = LD(n_gathers_late);
	st->gathers_spun = LD(n_gathers_spun);
	st->io = (enum jd_journal_io)LD(io_used);
	st->flusher_cpu = LD(pinned_cpu);
#undef LD
	pthread_mutex_lock(&j->mu);
	st->disk_bytes = j->nsegs * j->seg_bytes + j->snap_bytes;
	pthread_mutex_unlock(&j->mu);
}

uint64_t jd_journal_log_bytes(struct jd_journal *j)
{
	return atomic_load_explicit(&j->log_bytes, memory_order_relaxed);
}

/* ---- snapshots ---- */

static void *snap_main(void *arg)
{
	struct jd_journal *j = arg;
	struct snap *s = j->snap;
	char tmp[64], fin[64];
	unsigned char h[64];
	uint64_t off = 0;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "snap-%016" PRIx64 ".tmp", s->covers);
	snprintf(fin, sizeof(fin), "snap-%016" PRIx64, s->covers);
	fd = open_in(j, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto done;
	}
	memset(h, 0, sizeof(h));
	memcpy(h, SNAP_MAGIC, 8);
	jd_put32(h + 8, FORMAT_VERSION);
	jd_put64(h + 16, s->covers);
	jd_put32(h + 12, jd_crc32c(0, h + 16, sizeof(h) - 16));
	rc = write_all(fd, h, sizeof(h), 0);
	off = sizeof(h);
	pthread_mutex_lock(&j->mu);
	while (rc == 0) {
		struct chunk *c = s->q_head;

		if (s->abandon) {
			rc = JSCHED_ECANCELLED;
			break;
		}
		if (!c) {
			if (s->committed)
				break;
			pthread_cond_wait(&j->cv_snap, &j->mu);
			continue;
		}
		s->q_head = c->next;
		if (!s->q_head)
			s->q_tail = NULL;
		pthread_mutex_unlock(&j->mu);
		rc = write_all(fd, c->buf, c->len, off);
		off += c->len;
		chunk_free(c);
		pthread_mutex_lock(&j->mu);
	}
	/* What it covers must be durable before it replaces anything. */
	while (rc == 0 && jd_journal_durable(j) < s->covers && !s->abandon && !j->stop)
		pthread_cond_wait(&j->cv_durable, &j->mu);
	if (rc == 0 && jd_journal_durable(j) < s->covers)
		rc = JSCHED_ECANCELLED;
	pthread_mutex_unlock(&j->mu);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(j->dirfd, tmp, j->dirfd, fin) < 0)
		rc = -errno;
	if (rc == 0)
		rc = dir_sync(j);
	if (rc < 0) {
		unlinkat(j->dirfd, tmp, 0);
		goto done;
	}
	/* Now the older snapshots and the segments this one covers go. */
	{
		DIR *dp;
		int dfd = dup(j->dirfd);
		struct dirent *de;
		size_t drop = 0;

		if (dfd >= 0 && (dp = fdopendir(dfd))) {
			while ((de = readdir(dp))) {
				unsigned long long v;
				char tail;

				if (sscanf(de->d_name, "snap-%16llx%c", &v, &tail) == 1 &&
				    strlen(de->d_name) == 21 && v < s->covers)
					unlinkat(j->dirfd, de->d_name, 0);
			}
			closedir(dp);
		} else if (dfd >= 0) {
			close(dfd);
		}
		pthread_mutex_lock(&j->mu);
		/* A segment goes when the next one starts within what the snapshot covers. */
		while (drop + 1 < j->nsegs && j->segs[drop + 1].first_seq <= s->covers + 1)
			drop++;
		for (size_t i = 0; i < drop; i++) {
			char name[64];

			seg_name(name, sizeof(name), j->segs[i].index, false);
			unlinkat(j->dirfd, name, 0);
		}
		memmove(j->segs, j->segs + drop, (j->nsegs - drop) * sizeof(*j->segs));
		j->nsegs -= drop;
		j->snap_bytes = off;
		pthread_mutex_unlock(&j->mu);
		add_stat(&j->n_removed, drop);
		add_stat(&j->n_snapshots, 1);
		dir_sync(j);
	}
done:
	pthread_mutex_lock(&j->mu);
	s->rc = rc;
	s->state = rc == 0 ? JD_SNAP_DONE : JD_SNAP_FAILED;
	pthread_mutex_unlock(&j->mu);
	notify(j);
	return NULL;
}

int jd_journal_snap_begin(struct jd_journal *j)
{
	struct snap *s;
	int rc;

	if (j->o.read_only)
		return JSCHED_EINVAL;
	if (j->snap)
		return JSCHED_EAGAIN;
	s = calloc(1, sizeof(*s));
	if (!s)
		return JSCHED_ENOMEM;
	s->covers = j->last_seq;
	s->state = JD_SNAP_WRITING;
	j->snap = s;
	rc = pthread_create(&s->thread, NULL, snap_main, j);
	if (rc) {
		free(s);
		j->snap = NULL;
		return JSCHED_ENOMEM;
	}
	return 0;
}

/* snap_push: hand the caller's buffer to the snapshot thread. */
static void snap_push(struct jd_journal *j, struct snap *s)
{
	if (!s->cur)
		return;
	pthread_mutex_lock(&j->mu);
	if (s->q_tail)
		s->q_tail->next = s->cur;
	else
		s->q_head = s->cur;
	s->q_tail = s->cur;
	pthread_mutex_unlock(&j->mu);
	pthread_cond_signal(&j->cv_snap);
	s->cur = NULL;
}

static int snap_rec(struct jd_journal *j, unsigned type, uint64_t id, const void *p, size_t n)
{
	struct snap *s = j->snap;
	size_t sz = rec_size(n);

	if (!s || s->committed)
		return JSCHED_EINVAL;
	if (n > JD_JOURNAL_RECORD_MAX)
		return JSCHED_ELIMIT_EXCEEDED;
	if (s->cur && !chunk_room(s->cur, sz))
		snap_push(j, s);
	if (!s->cur) {
		s->cur = calloc(1, sizeof(*s->cur));
		if (!s->cur || !(s->cur->buf = malloc(CHUNK_MIN > sz ? CHUNK_MIN : sz))) {
			free(s->cur);
			s->cur = NULL;
			return JSCHED_ENOMEM;
		}
		s->cur->cap = CHUNK_MIN > sz ? CHUNK_MIN : sz;
	}
	encode(s->cur->buf + s->cur->len, type, ++s->nrec, id, p, n, NULL, 0);
	s->cur->len += sz;
	return 0;
}

int jd_journal_snap_add(struct jd_journal *j, unsigned type, uint64_t id, const void *p,
			size_t n)
{
	if (type == 0 || type >= T_SNAP_END)
		return JSCHED_EINVAL;
	return snap_rec(j, type, id, p, n);
}

int jd_journal_snap_commit(struct jd_journal *j)
{
	struct snap *s = j->snap;
	unsigned char cnt[8];
	int rc;

	if (!s || s->committed)
		return JSCHED_EINVAL;
	jd_put64(cnt, s->nrec);
	rc = snap_rec(j, T_SNAP_END, 0, cnt, sizeof(cnt));
	s->nrec--; /* the end record does not count itself */
	if (rc < 0)
		return rc;
	snap_push(j, s);
	pthread_mutex_lock(&j->mu);
	s->committed = true;
	s->state = s->state == JD_SNAP_WRITING ? JD_SNAP_COMMITTING : s->state;
	pthread_mutex_unlock(&j->mu);
	pthread_cond_signal(&j->cv_snap);
	jd_journal_want(j, s->covers, 0); /* it waits for them to be durable */
	return 0;
}

enum jd_journal_snap_state jd_journal_snap_state(struct jd_journal *j)
{
	enum jd_journal_snap_state st;

	if (!j->snap)
		return JD_SNAP_NONE;
	pthread_mutex_lock(&j->mu);
	st = j->snap->state;
	pthread_mutex_unlock(&j->mu);
	return st;
}

int jd_journal_snap_finish(struct jd_journal *j)
{
	struct snap *s = j->snap;
	int rc;

	if (!s)
		return JSCHED_EINVAL;
	pthread_mutex_lock(&j->mu);
	if (s->state != JD_SNAP_DONE)
		s->abandon = true;
	pthread_mutex_unlock(&j->mu);
	pthread_cond_broadcast(&j->cv_snap);
	pthread_cond_broadcast(&j->cv_durable);
	pthread_join(s->thread, NULL);
	rc = s->rc;
	chunk_free(s->cur);
	while (s->q_head) {
		struct chunk *c = s->q_head;

		s->q_head = c->next;
		chunk_free(c);
	}
	free(s);
	j->snap = NULL;
	return rc;
}
