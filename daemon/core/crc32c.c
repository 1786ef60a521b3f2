/* daemon/core/crc32c.c: CRC-32C, hardware (SSE4.2) or slicing-by-8. */
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
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t c = ~crc;

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
