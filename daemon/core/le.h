/*
 * le.h: little-endian integers in byte buffers, the on-disk order of the journal's records
 * and of the output files (journal.c, outfile.c).  Through memcpy, so the buffer's
 * alignment does not matter, with a byte swap on a big-endian host; each is one load or
 * store.  The byte-by-byte form before was not merged by gcc -O2 for eight bytes (a loop
 * of byte stores, or eight of them unrolled: callgrind counted about 960 instructions per
 * durable submit in them).
 */
#ifndef JD_CORE_LE_H
#define JD_CORE_LE_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define JD_LE32(v) __builtin_bswap32(v)
#define JD_LE64(v) __builtin_bswap64(v)
#else
#define JD_LE32(v) (v)
#define JD_LE64(v) (v)
#endif

static inline void jd_put32(unsigned char *p, uint32_t v)
{
	v = JD_LE32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void jd_put64(unsigned char *p, uint64_t v)
{
	v = JD_LE64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint32_t jd_get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return JD_LE32(v);
}

static inline uint64_t jd_get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return JD_LE64(v);
}

#endif /* JD_CORE_LE_H */
