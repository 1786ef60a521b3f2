/* daemon/core/outlog.c: a command's output in memory (see outlog.h). */
#include "daemon/core/outlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsched/error.h"

void jd_outlog_init(struct jd_outlog *l, uint64_t limit)
{
	memset(l, 0, sizeof(*l));
	l->limit = limit;
}

void jd_outlog_clear(struct jd_outlog *l)
{
	uint64_t limit = l->limit;
	uint32_t gen = l->gen;

	for (struct jd_out_chunk *c = l->first, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	jd_outlog_init(l, limit);
	l->gen = gen + 1;
}

/* unlink_chunk: take c out of the arrival list and free it. */
static void unlink_chunk(struct jd_outlog *l, struct jd_out_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->first = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->last = c->prev;
	l->chunks--;
	free(c);
}

/* append: n bytes of stream s at (seq, off), head or tail, into the last chunk where
 * they continue it, else into new ones.  Returns 0 or JSCHED_ENOMEM. */
static int append(struct jd_outlog *l, unsigned s, bool tail, uint64_t seq, uint64_t off,
		  const unsigned char *p, size_t n)
{
	while (n) {
		struct jd_out_chunk *c = l->last;
		size_t take;

		if (!c || c->stream != s || c->tail != tail || c->off + c->len != off ||
		    c->seq + c->len != seq || c->skip + c->len >= c->cap) {
			if (!(c = malloc(sizeof(*c) + JD_OUTLOG_CHUNK))) {
				l->oom[s] = true;
				return JSCHED_ENOMEM;
			}
			memset(c, 0, sizeof(*c));
			c->cap = JD_OUTLOG_CHUNK;
			c->seq = seq;
			c->off = off;
			c->stream = (uint8_t)s;
			c->tail = tail;
			c->prev = l->last;
			if (l->last)
				l->last->next = c;
			else
				l->first = c;
			l->last = c;
			l->chunks++;
			if (tail) {
				if (l->tq_last[s])
					l->tq_last[s]->snext = c;
				else
					l->tq[s] = c;
				l->tq_last[s] = c;
			}
		}
		take = c->cap - c->skip - c->len;
		if (take > n)
			take = n;
		memcpy(c->data + c->skip + c->len, p, take);
		c->len += (uint32_t)take;
		l->kept[s] += take;
		if (tail)
			l->tail_kept[s] += take;
		p += take;
		n -= take;
		seq += take;
		off += take;
	}
	return 0;
}

/* trim: drop stream s's oldest tail bytes past its share of the limit. */
static void trim(struct jd_outlog *l, unsigned s, uint64_t keep)
{
	while (l->tail_kept[s] > keep && l->tq[s]) {
		struct jd_out_chunk *c = l->tq[s];
		uint64_t drop = l->tail_kept[s] - keep;

		if (drop > c->len)
			drop = c->len;
		c->skip += (uint32_t)drop;
		c->len -= (uint32_t)drop;
		c->off += drop;
		c->seq += drop;
		l->tail_kept[s] -= drop;
		l->kept[s] -= drop;
		if (c->len == 0) {
			l->tq[s] = c->snext;
			if (!l->tq[s])
				l->tq_last[s] = NULL;
			unlink_chunk(l, c);
		}
	}
}

int jd_outlog_add_at(struct jd_outlog *l, unsigned s, uint64_t seq, uint64_t off, const void *pv,
		     size_t n)
{
	const unsigned char *p = pv;
	uint64_t head = l->limit / 2, keep = l->limit - head;
	int rc = 0;

	if (s > 1)
		return JSCHED_EINVAL;
	if (off < l->total[s])
		off = l->total[s];
	if (seq < l->seq)
		seq = l->seq;
	l->total[s] = off + n;
	l->seq = seq + n;
	if (off < head) {
		size_t take = head - off < n ? (size_t)(head - off) : n;

		rc = append(l, s, false, seq, off, p, take);
		p += take;
		n -= take;
		seq += take;
		off += take;
	}
	if (n == 0 || rc < 0 || keep == 0)
		return rc;
	if (n > keep) {
		p += n - keep;
		seq += n - keep;
		off += n - keep;
		n = (size_t)keep;
	}
	rc = append(l, s, true, seq, off, p, n);
	trim(l, s, keep);
	return rc;
}

int jd_outlog_add(struct jd_outlog *l, unsigned s, const void *p, size_t n)
{
	return s > 1 ? JSCHED_EINVAL : jd_outlog_add_at(l, s, l->seq, l->total[s], p, n);
}

size_t jd_outlog_mem_bytes(const struct jd_outlog *l)
{
	return l->chunks * (sizeof(struct jd_out_chunk) + JD_OUTLOG_CHUNK + 16);
}

bool jd_outlog_truncated(const struct jd_outlog *l, unsigned s)
{
	return s < 2 && l->total[s] > l->kept[s];
}

size_t jd_outlog_marker(uint64_t n, char *buf, size_t len)
{
	int k = snprintf(buf, len, "\n[jschedd: %llu bytes not kept]\n", (unsigned long long)n);

	return k < 0 ? 0 : (size_t)k < len ? (size_t)k : len - 1;
}

int jd_outlog_flat(const struct jd_outlog *l, unsigned s, unsigned char **data, size_t *len)
{
	size_t cap = 1, n = 0, markers = 0;
	uint64_t at = 0;
	unsigned char *b;
	char mark[64];

	/* the size: the kept bytes and a marker per gap */
	for (const struct jd_out_chunk *c = l->first; c; c = c->next)
		if (c->stream == s) {
			markers += c->off > at;
			at = c->off + c->len;
		}
	markers += s < 2 && l->total[s] > at;
	cap += (s < 2 ? l->kept[s] : 0) + markers * sizeof(mark);
	if (!(b = malloc(cap)))
		return JSCHED_ENOMEM;
	at = 0;
	for (const struct jd_out_chunk *c = l->first; c; c = c->next) {
		if (c->stream != s)
			continue;
		if (c->off > at)
			n += jd_outlog_marker(c->off - at, (char *)b + n, sizeof(mark));
		memcpy(b + n, c->data + c->skip, c->len);
		n += c->len;
		at = c->off + c->len;
	}
	if (s < 2 && l->total[s] > at)
		n += jd_outlog_marker(l->total[s] - at, (char *)b + n, sizeof(mark));
	b[n] = 0;
	*data = b;
	*len = n;
	return 0;
}

const struct jd_out_chunk *jd_outlog_seek(const struct jd_outlog *l, unsigned mask,
					  const uint64_t from[2])
{
	for (const struct jd_out_chunk *c = l->first; c; c = c->next)
		if ((mask >> c->stream & 1) && c->off + c->len > from[c->stream])
			return c;
	return NULL;
}

void jd_outlog_tail_start(const struct jd_outlog *l, unsigned mask, uint64_t lines,
			  uint64_t from[2])
{
	uint64_t seen = 0;
	bool last = true;

	from[0] = l->total[0];
	from[1] = l->total[1];
	if (lines == 0)
		return;
	for (const struct jd_out_chunk *c = l->last; c; c = c->prev) {
		if (!(mask >> c->stream & 1))
			continue;
		for (uint32_t i = c->len; i-- > 0;) {
			if (c->data[c->skip + i] == '\n' && !last && ++seen == lines)
				return;
			last = false;
			from[c->stream] = c->off + i;
		}
	}
}
