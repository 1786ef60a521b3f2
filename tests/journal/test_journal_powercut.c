/* tests/journal/test_journal_powercut.c: no acknowledged record is lost to a power cut.
 *
 * pc_writer runs under powercut_shim.so, which logs every write, sync, create, rename
 * and unlink in the journal's directory and every acknowledgement, in order.  This
 * program replays that log into a model of a disk with a volatile cache:
 *
 *   - a file's writes since its last fsync/fdatasync are pending: a power cut may drop
 *     each of them, keep it, or keep some of its 512-byte sectors (torn);
 *   - the directory's entries (create, rename, unlink) are durable at its fsync: a cut
 *     may leave the names as of the last directory fsync, or as they are now.
 *
 * At many moments (right after every acknowledgement, and others spread over the run)
 * it builds the disk images a cut could leave (all pending writes dropped, all kept, and
 * random mixtures with torn writes, each with both directory states), recovers each
 * with the journal, and checks that every record acknowledged before the cut comes back
 * with its payload (from the snapshot or the log) and that recovery succeeds.
 *
 * The negative control: pc_writer_early, built with a journal that acknowledges before
 * its fdatasync, must be caught by the same check (at least one image loses an
 * acknowledged record).  If it is not, the test is not testing anything, and fails.
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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/core/journal.h"
#include "tests/journal/pc_payload.h"

#define N_RECORDS 700
#define MAX_CUTS 260
#define SECTOR 512

struct event {
	char op;
	char *n1, *n2;
	const unsigned char *data;
	size_t len;
	uint64_t off;
};

struct pending {
	uint64_t off;
	size_t len;
	const unsigned char *data;
};

struct inode {
	unsigned char *buf;	/* durable content */
	size_t size, cap;
	struct pending *pend;
	size_t npend, cappend;
};

struct entry {
	char name[64];
	int ino;
};

struct model {
	struct inode *inodes;
	size_t ninodes, capinodes;
	struct entry cur[256], dur[256];
	size_t ncur, ndur;
	uint64_t acked;
};

static char bindir[PATH_MAX];

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	assert_non_null(q);
	return q;
}

/* ---- running the writer and reading its log ---- */

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	size_t cap = 0, n = 0, r;

	assert_non_null(f);
	do {
		if (n == cap)
			b = xrealloc(b, cap = cap ? cap * 2 : 1 << 20);
		r = fread(b + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	*len = n;
	return b;
}

static void run_writer(const char *writer, const char *base, unsigned seed)
{
	char dir[PATH_MAX], ack[PATH_MAX], logp[PATH_MAX], shim[PATH_MAX], exe[PATH_MAX],
		n[32], s[32];
	pid_t pid;
	int st;

	snprintf(dir, sizeof(dir), "%s/j", base);
	snprintf(ack, sizeof(ack), "%s/ack", base);
	snprintf(logp, sizeof(logp), "%s/log", base);
	if (snprintf(shim, sizeof(shim), "%s/powercut_shim.so", bindir) >= (int)sizeof(shim) ||
	    snprintf(exe, sizeof(exe), "%s/%s", bindir, writer) >= (int)sizeof(exe))
		fail_msg("path too long");
	snprintf(n, sizeof(n), "%d", N_RECORDS);
	snprintf(s, sizeof(s), "%u", seed);
	assert_int_equal(mkdir(dir, 0700), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("JSCHED_PC_DIR", dir, 1);
		setenv("JSCHED_PC_LOG", logp, 1);
		setenv("JSCHED_PC_ACK", ack, 1);
		execl(exe, exe, dir, ack, n, s, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s exited with status %d", writer, st);
}

static struct event *parse(const unsigned char *b, size_t len, size_t *nev)
{
	struct event *ev = NULL;
	size_t n = 0, cap = 0, off = 0;

	while (off + 24 <= len) {
		uint32_t l1, l2;
		struct event e = {0};

		memcpy(&l1, b + off + 4, 4);
		memcpy(&l2, b + off + 8, 4);
		memcpy(&e.off, b + off + 16, 8);
		e.op = (char)b[off];
		assert_true(off + 24 + l1 + l2 <= len);
		e.n1 = strndup((const char *)b + off + 24, l1);
		if (e.op == 'R')
			e.n2 = strndup((const char *)b + off + 24 + l1, l2);
		e.data = b + off + 24 + l1;
		e.len = l2;
		off += 24 + l1 + l2;
		if (n == cap)
			ev = xrealloc(ev, (cap = cap ? cap * 2 : 1024) * sizeof(*ev));
		ev[n++] = e;
	}
	assert_int_equal(off, len);
	*nev = n;
	return ev;
}

/* ---- the disk model ---- */

static int find(struct entry *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void put_bytes(struct inode *in, uint64_t off, const unsigned char *p, size_t len)
{
	if (off + len > in->cap) {
		size_t cap = in->cap ? in->cap : 65536;

		while (cap < off + len)
			cap *= 2;
		in->buf = xrealloc(in->buf, cap);
		memset(in->buf + in->cap, 0, cap - in->cap);
		in->cap = cap;
	}
	memcpy(in->buf + off, p, len);
	if (off + len > in->size)
		in->size = (size_t)(off + len);
}

static void apply(struct model *m, const struct event *e)
{
	int k;

	switch (e->op) {
	case 'C':
		m->inodes = xrealloc(m->inodes, (m->ninodes + 1) * sizeof(*m->inodes));
		memset(&m->inodes[m->ninodes], 0, sizeof(*m->inodes));
		k = find(m->cur, m->ncur, e->n1);
		if (k < 0) {
			assert_true(m->ncur < 256);
			k = (int)m->ncur++;
			snprintf(m->cur[k].name, sizeof(m->cur[k].name), "%s", e->n1);
		}
		m->cur[k].ino = (int)m->ninodes++;
		break;
	case 'W': {
		struct inode *in;

		k = find(m->cur, m->ncur, e->n1);
		assert_true(k >= 0);
		in = &m->inodes[m->cur[k].ino];
		if (in->npend == in->cappend)
			in->pend = xrealloc(in->pend, (in->cappend = in->cappend ? in->cappend * 2 : 16) *
							      sizeof(*in->pend));
		in->pend[in->npend++] = (struct pending){e->off, e->len, e->data};
		break;
	}
	case 'S': {
		struct inode *in;

		k = find(m->cur, m->ncur, e->n1);
		assert_true(k >= 0);
		in = &m->inodes[m->cur[k].ino];
		for (size_t i = 0; i < in->npend; i++)
			put_bytes(in, in->pend[i].off, in->pend[i].data, in->pend[i].len);
		in->npend = 0;
		break;
	}
	case 'D':
		memcpy(m->dur, m->cur, sizeof(m->cur));
		m->ndur = m->ncur;
		break;
	case 'R': {
		int d;

		k = find(m->cur, m->ncur, e->n1);
		assert_true(k >= 0);
		d = find(m->cur, m->ncur, e->n2);
		if (d >= 0) {
			m->cur[d].ino = m->cur[k].ino;
			m->cur[k] = m->cur[--m->ncur];
		} else {
			snprintf(m->cur[k].name, sizeof(m->cur[k].name), "%s", e->n2);
		}
		break;
	}
	case 'U':
		k = find(m->cur, m->ncur, e->n1);
		assert_true(k >= 0);
		m->cur[k] = m->cur[--m->ncur];
		break;
	case 'A':
		assert_int_equal(e->len, 8);
		memcpy(&m->acked, e->data, 8);
		break;
	default:
		fail_msg("unknown event '%c'", e->op);
	}
}

/* ---- one image, recovered ---- */

struct check {
	unsigned char *present;
	uint64_t acked;
	bool bad_payload;
};

static int check_cb(void *arg, const struct jd_journal_rec *r)
{
	struct check *c = arg;
	char want[PC_PAYLOAD_MAX];
	size_t len;

	if (r->type != PC_TYPE || r->id == 0 || r->id > N_RECORDS ||
	    (!r->in_snapshot && r->id != r->seq)) {
		c->bad_payload = true;
		return 0;
	}
	len = pc_payload(r->id, want);
	if (r->len != len || memcmp(r->data, want, len) != 0)
		c->bad_payload = true;
	c->present[r->id] = 1;
	return 0;
}

static void rm_dir(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char p[PATH_MAX + 300];

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

/* image: write the disk a cut now could leave into dir.  mode 0: pending writes dropped,
 * 1: kept, 2: each dropped, kept or torn at random.  durable_names: the directory as of
 * its last fsync, else as it is. */
static void image(const struct model *m, const char *dir, int mode, bool durable_names,
		  unsigned *seed)
{
	const struct entry *ents = durable_names ? m->dur : m->cur;
	size_t n = durable_names ? m->ndur : m->ncur;

	assert_int_equal(mkdir(dir, 0700), 0);
	for (size_t i = 0; i < n; i++) {
		const struct inode *src = &m->inodes[ents[i].ino];
		struct inode in = {0};
		char p[PATH_MAX + 80];
		int fd;

		if (src->size)
			put_bytes(&in, 0, src->buf, src->size);
		for (size_t w = 0; w < src->npend; w++) {
			const struct pending *pw = &src->pend[w];
			int what = mode == 2 ? (int)(rand_r(seed) % 3) : mode;

			if (what == 0)
				continue;
			if (what == 1) {
				put_bytes(&in, pw->off, pw->data, pw->len);
				continue;
			}
			/* torn: each 512-byte sector of the write kept or not */
			for (uint64_t o = pw->off; o < pw->off + pw->len;) {
				uint64_t e = (o / SECTOR + 1) * SECTOR;

				if (e > pw->off + pw->len)
					e = pw->off + pw->len;
				if (rand_r(seed) % 2)
					put_bytes(&in, o, pw->data + (o - pw->off), (size_t)(e - o));
				o = e;
			}
		}
		if (snprintf(p, sizeof(p), "%s/%s", dir, ents[i].name) >= (int)sizeof(p))
			fail_msg("path too long");
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		if (in.size)
			assert_int_equal(write(fd, in.buf, in.size), (ssize_t)in.size);
		close(fd);
		free(in.buf);
	}
}

/* recover_image: 0 if every acknowledged record came back intact, else 1 (and the
 * first such failure is described).  Read-only (as --check-journal reads) unless
 * `writable`: then the torn tail is cut as at a start, which costs fsyncs. */
static int recover_image(const char *dir, uint64_t acked, bool writable, char *what,
			 size_t whatlen)
{
	struct check c = {.acked = acked};
	struct jd_journal_opts o = {.dir = dir, .segment_bytes = 64 << 10,
				    .replay_cb = check_cb, .replay_arg = &c,
				    .read_only = !writable};
	struct jd_journal *j;
	char err[512];
	int rc;

	c.present = calloc(N_RECORDS + 1, 1);
	rc = jd_journal_open(&j, &o, NULL, err, sizeof(err));
	if (rc < 0) {
		if (snprintf(what, whatlen, "recovery failed: %s", err) >= (int)whatlen)
			what[whatlen - 1] = 0;
		free(c.present);
		return 1;
	}
	jd_journal_close(j);
	if (c.bad_payload) {
		snprintf(what, whatlen, "a record came back with the wrong payload");
		free(c.present);
		return 1;
	}
	for (uint64_t s = 1; s <= acked; s++)
		if (!c.present[s]) {
			snprintf(what, whatlen, "record %" PRIu64 " (acknowledged up to %" PRIu64
				 ") is lost", s, acked);
			free(c.present);
			return 1;
		}
	free(c.present);
	return 0;
}

/* run: write with `writer`, then cut; returns how many images lost an acknowledged
 * record (or failed to recover), and counts the images. */
static unsigned run(const char *writer, unsigned seed, unsigned *images, char *first,
		    size_t firstlen)
{
	char tmpl[] = "/tmp/jsched-powercut-XXXXXX", logp[PATH_MAX], img[PATH_MAX];
	char *base = mkdtemp(tmpl);
	unsigned char *log;
	size_t loglen, nev, ncut = 0, acks = 0;
	struct event *ev;
	struct model m = {0};
	unsigned losses = 0, rs = seed * 7u + 1u;
	bool *cut;

	assert_non_null(base);
	run_writer(writer, base, seed);
	snprintf(logp, sizeof(logp), "%s/log", base);
	log = slurp(logp, &loglen);
	ev = parse(log, loglen, &nev);
	assert_true(nev > 100);
	/* The moments to cut at: just after each acknowledgement, and others spread over
	 * the run, at most MAX_CUTS. */
	cut = calloc(nev + 1, sizeof(*cut));
	for (size_t i = 0; i < nev; i++)
		if (ev[i].op == 'A')
			acks++;
	for (size_t i = 0, a = 0, stride = acks / (MAX_CUTS / 2) + 1; i < nev; i++)
		if (ev[i].op == 'A' && a++ % stride == 0)
			cut[i + 1] = true;
	for (size_t k = 1; k <= MAX_CUTS / 2; k++)
		cut[(nev * k) / (MAX_CUTS / 2 + 1)] = true;
	snprintf(img, sizeof(img), "%s/img", base);
	*images = 0;
	for (size_t i = 0; i <= nev; i++) {
		if (cut[i]) {
			ncut++;
			for (int v = 0; v < 6; v++) {
				char what[256];

				image(&m, img, v % 3, v >= 3, &rs);
				/* Every 8th image is recovered for real (a torn tail cut, a
				 * segment made) and then read again. */
				bool full = *images % 8 == 0;

				if (recover_image(img, m.acked, full, what, sizeof(what)) ||
				    (full && recover_image(img, m.acked, false, what, sizeof(what)))) {
					if (!losses)
						snprintf(first, firstlen, "cut after event %zu of %zu, "
							 "variant %d: %s", i, nev, v, what);
					losses++;
				}
				(*images)++;
				rm_dir(img);
			}
		}
		if (i < nev)
			apply(&m, &ev[i]);
	}
	printf("%s: %zu events, %zu acknowledgements, %zu cuts, %u images, %u lost "
	       "acknowledged records or failed to recover\n", writer, nev, acks, ncut, *images,
	       losses);
	for (size_t i = 0; i < nev; i++) {
		free(ev[i].n1);
		free(ev[i].n2);
	}
	for (size_t i = 0; i < m.ninodes; i++) {
		free(m.inodes[i].buf);
		free(m.inodes[i].pend);
	}
	free(m.inodes);
	free(ev);
	free(log);
	free(cut);
	{
		char p[PATH_MAX + 8];

		snprintf(p, sizeof(p), "%s/j", base);
		rm_dir(p);
		snprintf(p, sizeof(p), "%s/ack", base);
		unlink(p);
		unlink(logp);
		rmdir(base);
	}
	return losses;
}

static void test_powercut(void **state)
{
	unsigned images, losses;
	char first[512] = "";

	(void)state;
	for (unsigned seed = 1; seed <= 2; seed++) {
		losses = run("pc_writer", seed, &images, first, sizeof(first));
		if (losses)
			fail_msg("%u of %u images lost acknowledged records; the first: %s", losses,
				 images, first);
	}
}

static void test_negative_control(void **state)
{
	unsigned images, losses;
	char first[512] = "";

	(void)state;
	losses = run("pc_writer_early", 1, &images, first, sizeof(first));
	printf("negative control (acknowledging before fdatasync): %u of %u images lost "
	       "records; the first: %s\n", losses, images, first);
	if (losses == 0)
		fail_msg("a journal that acknowledges before it syncs was not caught");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_powercut),
		cmocka_unit_test(test_negative_control),
	};
	ssize_t n = readlink("/proc/self/exe", bindir, sizeof(bindir) - 1);

	(void)argc;
	(void)argv;
	if (n < 0)
		return 1;
	bindir[n] = 0;
	*strrchr(bindir, '/') = 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
