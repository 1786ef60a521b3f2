/* daemon/core/outfile.c: commands' output in files in the journal directory (see
 * outfile.h for the format, the bounds and what is durable when). */
#include "daemon/core/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/core/crc32c.h"
#include "daemon/core/le.h"
#include "daemon/core/log.h"
#include "daemon/core/outlog.h"
#include "jsched/error.h"

#define HDR 32u
#define FILE_MAGIC 0x464f534au	/* "JSOF" */
#define REC_MAGIC 0x524f534au	/* "JSOR" */
#define REC_MAX (1u << 20)	/* a record's bytes, at most (reads are 16 KiB) */

static const char *const ext[2] = {"out", "err"};

enum { PARTS = 3 };		/* per stream: the head file, two tail files */

struct work {
	struct work *next;
	int fd[2 * PARTS];		/* -1: none; a close when any is >= 0 */
	uint64_t id;			/* the job; a removal when every fd is -1 */
	bool value;			/* a removal of its result's file, not its output's */
	bool failed;			/* a write or sync failed */
	void (*done)(void *arg, int rc);
	void *arg;
};

struct jd_outfiles {
	char path[4200];
	int dirfd;
	pthread_t th;
	bool started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct work *head, *tail;
	_Atomic uint64_t files, bytes_written, syncs, tails_dropped, removed, failures;
};

struct ofile {
	int fd;				/* -1: not open */
	uint64_t wpos;			/* where the next record goes */
};

struct ofstream {
	struct ofile f[PARTS];		/* 0 the head; 1, 2 the tail files */
	unsigned cur;			/* the tail file taking records (0: none yet) */
	uint64_t tbytes;		/* data bytes in it */
};

struct jd_outfile {
	struct jd_outfiles *o;
	uint64_t id, limit;
	struct ofstream s[2];
	bool failed, wrote;
};

/* name_of: the file of job id's stream s, part 0 (the head: "<id>.out") or a tail file
 * ("<id>.out.1", "<id>.out.2"). */
static void name_of(uint64_t id, unsigned s, unsigned part, char *buf, size_t len)
{
	if (part)
		snprintf(buf, len, "%" PRIu64 ".%s.%u", id, ext[s], part);
	else
		snprintf(buf, len, "%" PRIu64 ".%s", id, ext[s]);
}

/* unlink_all: every file job id may have. */
static void unlink_all(struct jd_outfiles *o, uint64_t id)
{
	char name[64];

	for (unsigned k = 0; k < 2 * PARTS; k++) {
		name_of(id, k / PARTS, k % PARTS, name, sizeof(name));
		if (unlinkat(o->dirfd, name, 0) == 0)
			atomic_fetch_add_explicit(&o->removed, 1, memory_order_relaxed);
	}
}

/* ---- the thread ------------------------------------------------------------------------ */

/* run_batch: sync and close every file of the closes in w, one directory sync for all,
 * then their callbacks; unlink the removals.  Frees w. */
static void run_batch(struct jd_outfiles *o, struct work *w)
{
	bool closes = false;
	int dir_rc = 0;

	for (struct work *k = w; k; k = k->next)
		for (unsigned i = 0; i < 2 * PARTS; i++)
			if (k->fd[i] >= 0) {
				closes = true;
				if (fdatasync(k->fd[i]) < 0) {
					jd_log(JD_LOG_ERR, "output %s: job %" PRIu64 "'s %s: fdatasync: %s",
					       o->path, k->id, ext[i / PARTS], strerror(errno));
					k->failed = true;
					atomic_fetch_add_explicit(&o->failures, 1, memory_order_relaxed);
				}
				atomic_fetch_add_explicit(&o->syncs, 1, memory_order_relaxed);
				close(k->fd[i]);
				k->fd[i] = INT_MAX; /* a close, done */
			}
	if (closes && fsync(o->dirfd) < 0) {
		jd_log(JD_LOG_ERR, "output %s: fsync of the directory: %s", o->path, strerror(errno));
		dir_rc = JSCHED_EIO;
	}
	while (w) {
		struct work *next = w->next;
		bool close_work = false;

		for (unsigned i = 0; i < 2 * PARTS; i++)
			close_work |= w->fd[i] >= 0;
		if (close_work) {
			if (w->done)
				w->done(w->arg, w->failed || dir_rc ? JSCHED_EIO : 0);
		} else if (w->value) {
			char name[40];

			snprintf(name, sizeof(name), "%" PRIu64 ".value", w->id);
			if (unlinkat(o->dirfd, name, 0) == 0)
				atomic_fetch_add_explicit(&o->removed, 1, memory_order_relaxed);
		} else {
			unlink_all(o, w->id);
		}
		free(w);
		w = next;
	}
}

static void *thread_main(void *arg)
{
	struct jd_outfiles *o = arg;

	pthread_mutex_lock(&o->mu);
	for (;;) {
		struct work *w;

		while (!o->head && !o->stop)
			pthread_cond_wait(&o->cv, &o->mu);
		if (!o->head)
			break;
		w = o->head;
		o->head = o->tail = NULL;
		pthread_mutex_unlock(&o->mu);
		run_batch(o, w);
		pthread_mutex_lock(&o->mu);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

/* enqueue: hand w to the thread (or do it here when there is none). */
static void enqueue(struct jd_outfiles *o, struct work *w)
{
	w->next = NULL;
	if (!o->started) {
		run_batch(o, w);
		return;
	}
	pthread_mutex_lock(&o->mu);
	if (o->tail)
		o->tail->next = w;
	else
		o->head = w;
	o->tail = w;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

/* ---- the directory --------------------------------------------------------------------- */

int jd_outfiles_open(struct jd_outfiles **out, const char *journal_dir, char *err, size_t errlen)
{
	struct jd_outfiles *o = calloc(1, sizeof(*o));
	int pfd;

	*out = NULL;
	if (!o)
		return JSCHED_ENOMEM;
	o->dirfd = -1;
	snprintf(o->path, sizeof(o->path), "%s/output", journal_dir);
	if (mkdir(o->path, 0700) == 0) {
		/* its entry in the journal directory, durable */
		if ((pfd = open(journal_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			(void)fsync(pfd);
			close(pfd);
		}
	} else if (errno != EEXIST) {
		snprintf(err, errlen, "output directory %s: cannot create it: %s", o->path,
			 strerror(errno));
		free(o);
		return JSCHED_EIO;
	}
	if ((o->dirfd = open(o->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "output directory %s: %s", o->path, strerror(errno));
		free(o);
		return JSCHED_EIO;
	}
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (pthread_create(&o->th, NULL, thread_main, o) == 0)
		o->started = true; /* else every sync is done on the caller's thread */
	*out = o;
	return 0;
}

void jd_outfiles_close(struct jd_outfiles *o)
{
	if (!o)
		return;
	if (o->started) {
		pthread_mutex_lock(&o->mu);
		o->stop = true;
		pthread_cond_signal(&o->cv);
		pthread_mutex_unlock(&o->mu);
		pthread_join(o->th, NULL);
	}
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	close(o->dirfd);
	free(o);
}

const char *jd_outfiles_path(const struct jd_outfiles *o)
{
	return o->path;
}

void jd_outfiles_stats(struct jd_outfiles *o, struct jd_outfiles_stats *st)
{
	st->files = atomic_load_explicit(&o->files, memory_order_relaxed);
	st->bytes_written = atomic_load_explicit(&o->bytes_written, memory_order_relaxed);
	st->syncs = atomic_load_explicit(&o->syncs, memory_order_relaxed);
	st->tails_dropped = atomic_load_explicit(&o->tails_dropped, memory_order_relaxed);
	st->removed = atomic_load_explicit(&o->removed, memory_order_relaxed);
	st->failures = atomic_load_explicit(&o->failures, memory_order_relaxed);
}

int jd_outfiles_value_write(struct jd_outfiles *o, uint64_t id, const char *text, size_t len)
{
	char name[40];
	int fd;
	size_t done = 0;

	snprintf(name, sizeof(name), "%" PRIu64 ".value", id);
	errno = 0;
	fd = openat(o->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (fd >= 0 && done < len) {
		ssize_t w = pwrite(fd, text + done, len - done, (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (fd < 0 || done < len) {
		jd_log(JD_LOG_WARN, "output %s: job %" PRIu64 "'s result: %s (kept in memory)", o->path,
		       id, fd < 0 || errno ? strerror(errno) : "short write");
		atomic_fetch_add_explicit(&o->failures, 1, memory_order_relaxed);
		if (fd >= 0) {
			close(fd);
			unlinkat(o->dirfd, name, 0);
		}
		return JSCHED_EIO;
	}
	close(fd);
	atomic_fetch_add_explicit(&o->files, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&o->bytes_written, len, memory_order_relaxed);
	return 0;
}

long jd_outfiles_value_read(const struct jd_outfiles *o, uint64_t id, uint64_t off, void *buf,
			    size_t n)
{
	char name[40];
	size_t done = 0;
	int fd;

	snprintf(name, sizeof(name), "%" PRIu64 ".value", id);
	if ((fd = openat(o->dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return JSCHED_EIO;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	return (long)done;
}

void jd_outfiles_remove_value(struct jd_outfiles *o, uint64_t id)
{
	struct work *w = calloc(1, sizeof(*w));

	if (!w)
		return; /* the next recovery's sweep removes it */
	for (unsigned i = 0; i < 2 * PARTS; i++)
		w->fd[i] = -1;
	w->id = id;
	w->value = true;
	enqueue(o, w);
}

void jd_outfiles_remove(struct jd_outfiles *o, uint64_t id)
{
	struct work *w = calloc(1, sizeof(*w));

	if (!w) {
		unlink_all(o, id);
		return;
	}
	for (unsigned i = 0; i < 2 * PARTS; i++)
		w->fd[i] = -1;
	w->id = id;
	enqueue(o, w);
}

size_t jd_outfiles_sweep(struct jd_outfiles *o, bool (*keep)(void *arg, uint64_t id), void *arg)
{
	int fd = dup(o->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		char *end;
		unsigned long long id;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		errno = 0;
		id = strtoull(e->d_name, &end, 10);
		if (errno || (strcmp(end, ".value") != 0 &&
			      ((strncmp(end, ".out", 4) != 0 && strncmp(end, ".err", 4) != 0) ||
			       (end[4] && strcmp(end + 4, ".1") != 0 && strcmp(end + 4, ".2") != 0))) ||
		    keep(arg, id))
			continue;
		if (unlinkat(o->dirfd, e->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int jd_outfiles_sync(struct jd_outfiles *o, uint64_t id)
{
	char name[64];
	int rc = 0;

	for (unsigned k = 0; k < 2 * PARTS; k++) {
		int fd;

		name_of(id, k / PARTS, k % PARTS, name, sizeof(name));
		if ((fd = openat(o->dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (fdatasync(fd) < 0)
			rc = JSCHED_EIO;
		close(fd);
	}
	if (fsync(o->dirfd) < 0)
		rc = JSCHED_EIO;
	return rc;
}

/* ---- writing --------------------------------------------------------------------------- */

struct jd_outfile *jd_outfile_new(struct jd_outfiles *o, uint64_t id, uint64_t limit, bool again)
{
	struct jd_outfile *f = calloc(1, sizeof(*f));

	if (again)
		unlink_all(o, id); /* none of a previous run's records may mix with these */
	if (!f)
		return NULL;
	f->o = o;
	f->id = id;
	f->limit = limit;
	for (unsigned s = 0; s < 2; s++)
		for (unsigned k = 0; k < PARTS; k++)
			f->s[s].f[k].fd = -1;
	return f;
}

bool jd_outfile_failed(const struct jd_outfile *f)
{
	return f->failed;
}

bool jd_outfile_wrote(const struct jd_outfile *f)
{
	return f->wrote;
}

static void fail(struct jd_outfile *f, unsigned s, const char *what, int e)
{
	if (!f->failed)
		jd_log(JD_LOG_ERR, "output %s: job %" PRIu64 "'s %s: %s: %s; its output is kept in "
		       "memory only", f->o->path, f->id, ext[s], what, strerror(e));
	f->failed = true;
	atomic_fetch_add_explicit(&f->o->failures, 1, memory_order_relaxed);
}

/* pwrite_all: the bytes of iov at pos.  Returns 0 or an errno. */
static int pwrite_all(int fd, struct iovec *iov, int niov, uint64_t pos)
{
	while (niov > 0) {
		ssize_t k = pwritev(fd, iov, niov, (off_t)pos);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (k == 0)
			return EIO;
		pos += (uint64_t)k;
		while (niov > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			niov--;
		}
		if (niov > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* open_part: create part k of stream s (truncating a previous one) with its header. */
static int open_part(struct jd_outfile *f, unsigned s, unsigned k)
{
	struct ofile *of = &f->s[s].f[k];
	unsigned char h[HDR] = {0};
	struct iovec iov = {h, HDR};
	char name[64];
	int e;

	name_of(f->id, s, k, name, sizeof(name));
	of->fd = openat(f->o->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (of->fd < 0) {
		fail(f, s, "cannot create it", errno);
		return -1;
	}
	jd_put32(h + 4, FILE_MAGIC);
	jd_put32(h + 8, s);
	jd_put32(h + 12, k);
	jd_put64(h + 16, f->id);
	jd_put64(h + 24, f->limit);
	jd_put32(h, jd_crc32c(0, h + 4, HDR - 4));
	if ((e = pwrite_all(of->fd, &iov, 1, 0))) {
		fail(f, s, "write", e);
		return -1;
	}
	of->wpos = HDR;
	f->wrote = true;
	atomic_fetch_add_explicit(&f->o->files, 1, memory_order_relaxed);
	return 0;
}

/* put_record: one record at the end of part k of stream s.  Returns 0 or -1 (failed). */
static int put_record(struct jd_outfile *f, unsigned s, unsigned k, uint64_t seq, uint64_t off,
		      const unsigned char *p, size_t n)
{
	struct ofile *of = &f->s[s].f[k];
	static unsigned char zeros[8];
	unsigned char h[HDR] = {0};
	size_t pad = (8 - n % 8) % 8;
	struct iovec iov[3] = {{h, HDR}, {NULL, n}, {zeros, pad}};
	uint32_t crc;
	int e;

	if (of->fd < 0 && open_part(f, s, k) < 0)
		return -1;
	jd_put32(h + 4, (uint32_t)n);
	jd_put32(h + 8, REC_MAGIC);
	jd_put64(h + 16, seq);
	jd_put64(h + 24, off);
	crc = jd_crc32c(0, h + 4, HDR - 4);
	jd_put32(h, jd_crc32c(crc, p, n));
	memcpy(&iov[1].iov_base, &p, sizeof(p)); /* pwritev only reads it */
	if ((e = pwrite_all(of->fd, iov, 3, of->wpos))) {
		fail(f, s, "write", e);
		return -1;
	}
	of->wpos += HDR + n + pad;
	atomic_fetch_add_explicit(&f->o->bytes_written, HDR + n + pad, memory_order_relaxed);
	return 0;
}

/* put_tail: a tail record of stream s into its current tail file; once that holds the
 * tail's share, the other one (older) is deleted and becomes the next current. */
static void put_tail(struct jd_outfile *f, unsigned s, uint64_t seq, uint64_t off,
		     const unsigned char *p, size_t n)
{
	struct ofstream *st = &f->s[s];
	uint64_t keep = f->limit - f->limit / 2;
	unsigned other;
	char name[64];

	if (!st->cur)
		st->cur = 1;
	if (put_record(f, s, st->cur, seq, off, p, n) < 0)
		return;
	st->tbytes += n;
	if (st->tbytes < keep)
		return;
	other = st->cur == 1 ? 2 : 1;
	if (st->f[other].fd >= 0) {
		close(st->f[other].fd);
		st->f[other].fd = -1;
		name_of(f->id, s, other, name, sizeof(name));
		if (unlinkat(f->o->dirfd, name, 0) == 0)
			atomic_fetch_add_explicit(&f->o->tails_dropped, 1, memory_order_relaxed);
	}
	st->cur = other;
	st->tbytes = 0;
}

void jd_outfile_write(struct jd_outfile *f, unsigned s, uint64_t seq, uint64_t off,
		      const void *pv, size_t n)
{
	const unsigned char *p = pv;
	uint64_t head = f->limit / 2, keep = f->limit - head;

	if (f->failed || s > 1 || n == 0)
		return;
	if (off < head) {
		size_t take = head - off < n ? (size_t)(head - off) : n;

		if (put_record(f, s, 0, seq, off, p, take) < 0)
			return;
		p += take;
		n -= take;
		seq += take;
		off += take;
	}
	if (n == 0 || keep == 0)
		return;
	if (n > keep) {
		p += n - keep;
		seq += n - keep;
		off += n - keep;
		n = (size_t)keep;
	}
	put_tail(f, s, seq, off, p, n);
}

void jd_outfile_close(struct jd_outfile *f, void (*done)(void *arg, int rc), void *arg)
{
	struct work *w;

	if (!f->wrote || !(w = calloc(1, sizeof(*w)))) {
		int rc = f->wrote ? JSCHED_ENOMEM : 0;

		for (unsigned s = 0; s < 2; s++)
			for (unsigned k = 0; k < PARTS; k++)
				if (f->s[s].f[k].fd >= 0)
					close(f->s[s].f[k].fd);
		free(f);
		if (done)
			done(arg, rc);
		return;
	}
	for (unsigned s = 0; s < 2; s++)
		for (unsigned k = 0; k < PARTS; k++)
			w->fd[s * PARTS + k] = f->s[s].f[k].fd;
	w->id = f->id;
	w->failed = f->failed;
	w->done = done;
	w->arg = arg;
	enqueue(f->o, w);
	free(f);
}

/* ---- reading --------------------------------------------------------------------------- */

struct rec {
	uint64_t seq, off;
	const unsigned char *p;
	uint32_t len;
	uint8_t stream;
};

struct reader {
	struct rec *v;
	size_t n, cap;
	unsigned char **bufs;
	size_t nbufs;
	uint64_t limit;
	bool have_limit;
};

/* parse: the records in buf[0..n) (a file after its header) into r: a bad record (one a
 * power cut tore) is skipped by looking for the next magic on an 8-byte boundary. */
static int parse(struct reader *r, unsigned s, const unsigned char *buf, size_t n)
{
	size_t i = 0;

	while (i + HDR <= n) {
		const unsigned char *h = buf + i;
		uint32_t len = jd_get32(h + 4);

		if (jd_get32(h + 8) != REC_MAGIC || len > REC_MAX || i + HDR + len > n ||
		    jd_crc32c(jd_crc32c(0, h + 4, HDR - 4), h + HDR, len) != jd_get32(h)) {
			i += 8;
			continue;
		}
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 256;
			struct rec *v = realloc(r->v, cap * sizeof(*v));

			if (!v)
				return JSCHED_ENOMEM;
			r->v = v;
			r->cap = cap;
		}
		r->v[r->n++] = (struct rec){jd_get64(h + 16), jd_get64(h + 24), h + HDR, len, (uint8_t)s};
		i += HDR + len + (8 - len % 8) % 8;
	}
	return 0;
}

/* read_part: part k of stream s of job id into r.  Returns 1 (read), 0 (none), or an
 * error code. */
static int read_part(const struct jd_outfiles *o, uint64_t id, unsigned s, unsigned k,
		     struct reader *r)
{
	unsigned char h[HDR], *buf = NULL, **bufs;
	char name[64];
	struct stat sb;
	size_t n;
	int fd, rc = 1;

	name_of(id, s, k, name, sizeof(name));
	if ((fd = openat(o->dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : JSCHED_EIO;
	if (fstat(fd, &sb) < 0 || pread(fd, h, HDR, 0) != HDR || jd_get32(h + 4) != FILE_MAGIC ||
	    jd_get32(h) != jd_crc32c(0, h + 4, HDR - 4) || jd_get64(h + 16) != id) {
		/* created but its header never reached the disk: nothing in it counts */
		close(fd);
		return 0;
	}
	if (!r->have_limit) {
		r->limit = jd_get64(h + 24);
		r->have_limit = true;
	}
	n = sb.st_size > HDR ? (size_t)sb.st_size - HDR : 0;
	if (n && (!(buf = malloc(n)) || !(bufs = realloc(r->bufs, (r->nbufs + 1) * sizeof(*bufs))))) {
		free(buf);
		close(fd);
		return JSCHED_ENOMEM;
	}
	if (n) {
		r->bufs = bufs;
		r->bufs[r->nbufs++] = buf;
		if (pread(fd, buf, n, HDR) != (ssize_t)n)
			rc = JSCHED_EIO;
		else if ((rc = parse(r, s, buf, n)) == 0)
			rc = 1;
	}
	close(fd);
	return rc;
}

static int by_seq(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : (int)x->stream - (int)y->stream;
}

int jd_outfiles_load(const struct jd_outfiles *o, uint64_t id, struct jd_outlog *l)
{
	struct reader r = {0};
	int rc = 0, k;

	for (unsigned i = 0; i < 2 * PARTS; i++) {
		if ((k = read_part(o, id, i / PARTS, i % PARTS, &r)) < 0) {
			rc = k;
			goto out;
		}
		if (k > 0)
			rc = 1;
	}
	if (r.have_limit)
		l->limit = r.limit;
	if (r.n)
		qsort(r.v, r.n, sizeof(*r.v), by_seq);
	for (size_t i = 0; i < r.n; i++)
		if (jd_outlog_add_at(l, r.v[i].stream, r.v[i].seq, r.v[i].off, r.v[i].p, r.v[i].len) < 0) {
			rc = JSCHED_ENOMEM;
			break;
		}
out:
	free(r.v);
	for (size_t i = 0; i < r.nbufs; i++)
		free(r.bufs[i]);
	free(r.bufs);
	return rc;
}
