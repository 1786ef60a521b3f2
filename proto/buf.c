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

/* pairs: "00".."99", the two digits of each number below 100. */
static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
			       "25262728293031323334353637383940414243444546474849"
			       "50515253545556575859606162636465666768697071727374"
			       "75767778798081828384858687888990919293949596979899";

/* put8: the eight digits of x (< 10^8, zero-padded) before p; returns where they start. */
static unsigned char *put8(unsigned char *p, uint32_t x)
{
	for (int i = 0; i < 4; i++) {
		unsigned k = (x % 100) * 2;

		x /= 100;
		*--p = (unsigned char)pairs[k + 1];
		*--p = (unsigned char)pairs[k];
	}
	return p;
}

int jp_buf_append_int(struct jp_buf *b, int64_t v)
{
	/* Two digits per division, in 32 bits: the eight low digits at a time are split off
	 * with one 64-bit division, the rest is 32-bit arithmetic (a 64-bit division by 100 is
	 * a 64-bit multiply and shifts per pair: 13-digit times took 105 instructions each,
	 * seven integers per noop submit with wait).  The digits are written into t and copied
	 * into the buffer as one fixed-size block when it has the room (no memcpy call). */
	unsigned char t[48], *end = t + 24, *p = end;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	while (u >= 100000000u) {
		p = put8(p, (uint32_t)(u % 100000000u));
		u /= 100000000u;
	}
	uint32_t w = (uint32_t)u;
	while (w >= 100) {
		unsigned k = (w % 100) * 2;

		w /= 100;
		*--p = (unsigned char)pairs[k + 1];
		*--p = (unsigned char)pairs[k];
	}
	if (w >= 10) {
		*--p = (unsigned char)pairs[w * 2 + 1];
		*--p = (unsigned char)pairs[w * 2];
	} else {
		*--p = (unsigned char)('0' + w);
	}
	if (v < 0)
		*--p = '-';
	size_t n = (size_t)(end - p);	/* 1 to 20: p is t + 4 to t + 23, so p + 24 <= t + 47 */
	if (b->cap - b->len >= 24) {
		memcpy(b->data + b->len, p, 24); /* the bytes past n are room, not content */
		b->len += n;
		return 0;
	}
	return jp_buf_append(b, p, n);
}
