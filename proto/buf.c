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
	/* Two digits per division: a record's times have 13. */
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
				       "25262728293031323334353637383940414243444546474849"
				       "50515253545556575859606162636465666768697071727374"
				       "75767778798081828384858687888990919293949596979899";
	char t[24], *p = t + sizeof(t);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	while (u >= 100) {
		unsigned k = (unsigned)(u % 100) * 2;

		u /= 100;
		*--p = pairs[k + 1];
		*--p = pairs[k];
	}
	if (u >= 10) {
		*--p = pairs[u * 2 + 1];
		*--p = pairs[u * 2];
	} else {
		*--p = (char)('0' + u);
	}
	if (v < 0)
		*--p = '-';
	return jp_buf_append(b, p, (size_t)(t + sizeof(t) - p));
}
