/* proto/buf.c: a growable byte buffer, the output side of the frame encoder and the
 * input side of the decoder.  Growth doubles (amortised O(1) appends); consuming from the
 * front moves the rest down, which callers keep cheap by consuming whole batches. */
#include "proto/jproto.h"

#include <stdlib.h>
#include <string.h>

void jp_buf_init(struct jp_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

int jp_buf_reserve(struct jp_buf *b, size_t extra)
{
	size_t need, cap;
	unsigned char *p;

	if (extra > SIZE_MAX - b->len)
		return JSCHED_ENOMEM;
	need = b->len + extra;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return JSCHED_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

void jp_buf_consume(struct jp_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void jp_buf_free(struct jp_buf *b)
{
	free(b->data);
	jp_buf_init(b);
}

int jp_buf_append_int(struct jp_buf *b, int64_t v)
{
	char t[24], *p = t + sizeof(t);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return jp_buf_append(b, p, (size_t)(t + sizeof(t) - p));
}
