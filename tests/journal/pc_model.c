/* tests/journal/pc_model.c: the disk model of the power-loss tests (pc_model.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/journal/pc_model.h"

void *pc_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	assert_non_null(q);
	return q;
}

unsigned char *pc_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	size_t cap = 0, n = 0, r;

	assert_non_null(f);
	do {
		if (n == cap)
			b = pc_xrealloc(b, cap = cap ? cap * 2 : 1 << 20);
		r = fread(b + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	*len = n;
	return b;
}

struct event *pc_parse(const unsigned char *b, size_t len, size_t *nev, size_t *used)
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
		if (off + 24 + l1 + l2 > len)
			break; /* the writer was killed while it logged this one */
		e.n1 = strndup((const char *)b + off + 24, l1);
		if (e.op == 'R')
			e.n2 = strndup((const char *)b + off + 24 + l1, l2);
		e.data = b + off + 24 + l1;
		e.len = l2;
		off += 24 + l1 + l2;
		if (n == cap)
			ev = pc_xrealloc(ev, (cap = cap ? cap * 2 : 1024) * sizeof(*ev));
		ev[n++] = e;
	}
	*nev = n;
	*used = off;
	return ev;
}

void pc_free_events(struct event *ev, size_t nev)
{
	for (size_t i = 0; i < nev; i++) {
		free(ev[i].n1);
		free(ev[i].n2);
	}
	free(ev);
}

void pc_free_model(struct model *m)
{
	for (size_t i = 0; i < m->ninodes; i++) {
		free(m->inodes[i].buf);
		free(m->inodes[i].pend);
	}
	free(m->inodes);
	memset(m, 0, sizeof(*m));
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
		in->buf = pc_xrealloc(in->buf, cap);
		memset(in->buf + in->cap, 0, cap - in->cap);
		in->cap = cap;
	}
	memcpy(in->buf + off, p, len);
	if (off + len > in->size)
		in->size = (size_t)(off + len);
}

void pc_apply(struct model *m, const struct event *e)
{
	int k;

	switch (e->op) {
	case 'C':
		m->inodes = pc_xrealloc(m->inodes, (m->ninodes + 1) * sizeof(*m->inodes));
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
			in->pend = pc_xrealloc(in->pend, (in->cappend = in->cappend ? in->cappend * 2 : 16) *
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

void pc_rm_dir(const char *dir)
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

void pc_image(const struct model *m, const char *dir, int mode, bool durable_names,
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

