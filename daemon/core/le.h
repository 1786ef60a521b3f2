/*
 * le.h: little-endian integers in byte buffers, the on-disk order of the journal's records
 * and of the output files (journal.c, outfile.c).  Byte by byte, so neither the host's
 * order nor the buffer's alignment matters; compilers turn each into one load or store.
 */
#ifndef JD_CORE_LE_H
#define JD_CORE_LE_H

#include <stdint.h>

static inline void jd_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void jd_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t jd_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t jd_get64(const unsigned char *p)
{
	return (uint64_t)jd_get32(p) | (uint64_t)jd_get32(p + 4) << 32;
}

#endif /* JD_CORE_LE_H */
