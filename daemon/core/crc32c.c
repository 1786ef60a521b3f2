/* daemon/core/crc32c.c: CRC-32C, hardware (SSE4.2, three streams side by side) or
 * slicing-by-8. */
#include "daemon/core/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t jd_crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;

	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (n >= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
		      table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
		      table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^
		      table[0][(w >> 56) & 0xff];
		b += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *b++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
/* The crc32 instruction takes 3 cycles and can start one each cycle: one CRC over a
 * buffer waits on itself, so a long buffer is cut into three blocks whose CRCs run side by
 * side and are then joined, as in Mark Adler's crc32c.c: the CRC so far is moved past a
 * block's length of zero bytes (a table lookup per byte of it: shift_long / shift_short)
 * and the next block's CRC is added.  A restart checks every flush of the journal with
 * it (320 MB for a million retained jobs): 64 MiB took 10.4-11.0 ms one way and 6.3-7.4
 * ms three ways side by side (six passes of each, alternated, on this VM), about 20 ms
 * less per million jobs; bench_journal has the row (a 256 KiB flush, in cache: 19,870
 * MB/s, the table version 1,332). */
#define LONG_BLK 8192u
#define SHORT_BLK 256u

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* gf2_times: the 32x32 matrix mat (a column per bit) times vec, over GF(2). */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;

	for (; vec; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat)
{
	for (int n = 0; n < 32; n++)
		square[n] = gf2_times(mat, mat[n]);
}

/* zeros_op: in even, the operator that moves a CRC (its register, not inverted) past
 * len zero bytes: one zero bit is the polynomial's step, squared to 2, 4, 8 ... bits. */
static void zeros_op(uint32_t *even, size_t len)
{
	uint32_t odd[32], row = 1;

	odd[0] = POLY;
	for (int n = 1; n < 32; n++) {
		odd[n] = row;
		row <<= 1;
	}
	gf2_square(even, odd); /* 2 zero bits */
	gf2_square(odd, even); /* 4 zero bits */
	do {			/* 8 zero bits (a byte) the first time round */
		gf2_square(even, odd);
		len >>= 1;
		if (len == 0)
			return;
		gf2_square(odd, even);
		len >>= 1;
	} while (len);
	memcpy(even, odd, sizeof(odd));
}

/* zeros_table: the operator for len zero bytes, as a lookup per byte of the CRC. */
static void zeros_table(uint32_t t[4][256], size_t len)
{
	uint32_t op[32];

	zeros_op(op, len);
	for (uint32_t n = 0; n < 256; n++) {
		t[0][n] = gf2_times(op, n);
		t[1][n] = gf2_times(op, n << 8);
		t[2][n] = gf2_times(op, n << 16);
		t[3][n] = gf2_times(op, n << 24);
	}
}

static void shift_init(void)
{
	zeros_table(shift_long, LONG_BLK);
	zeros_table(shift_short, SHORT_BLK);
}

static uint32_t shift(uint32_t t[4][256], uint32_t crc)
{
	return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
	       t[3][crc >> 24];
}

/* crc_hw_3way: c over the bytes at *p in runs of three blocks of blk bytes, each run's
 * three CRCs side by side; *p and *n move past them (under 3 * blk bytes are left). */
__attribute__((target("sse4.2"))) static uint64_t crc_hw_3way(uint64_t c, const unsigned char **p,
							      size_t *n, size_t blk,
							      uint32_t t[4][256])
{
	const unsigned char *b = *p;
	size_t left = *n;

	while (left >= 3 * blk) {
		const unsigned char *end = b + blk;
		uint64_t c1 = 0, c2 = 0;

		do {
			uint64_t w0, w1, w2;

			memcpy(&w0, b, 8);
			memcpy(&w1, b + blk, 8);
			memcpy(&w2, b + 2 * blk, 8);
			c = __builtin_ia32_crc32di(c, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
			b += 8;
		} while (b < end);
		c = shift(t, (uint32_t)c) ^ c1;
		c = shift(t, (uint32_t)c) ^ c2;
		b += 2 * blk;
		left -= 3 * blk;
	}
	*p = b;
	*n = left;
	return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t c = ~crc;

	if (n >= 3 * SHORT_BLK) {
		pthread_once(&shift_once, shift_init);
		c = crc_hw_3way(c, &b, &n, LONG_BLK, shift_long);
		c = crc_hw_3way(c, &b, &n, SHORT_BLK, shift_short);
	}
	while (n >= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
		c = __builtin_ia32_crc32di(c, w);
		b += 8;
		n -= 8;
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
	return ~(uint32_t)c;
}

uint32_t jd_crc32c(uint32_t crc, const void *p, size_t n)
{
	static int have = -1; /* every thread that races here computes the same value */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);

	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h ? crc_hw(crc, p, n) : jd_crc32c_sw(crc, p, n);
}
#else
uint32_t jd_crc32c(uint32_t crc, const void *p, size_t n)
{
	return jd_crc32c_sw(crc, p, n);
}
#endif
