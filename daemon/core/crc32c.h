/* daemon/core/crc32c.h: CRC-32C (Castagnoli), the checksum of every journal record.
 *
 * The SSE4.2 crc32 instruction when the CPU has it (checked once, at the first call;
 * three streams side by side over a buffer of 768 bytes or more), else a slicing-by-8
 * table in portable C; both give the same values (the unit tests check them against each
 * other, at the lengths where the streams' runs begin and end, and against the standard
 * check value of "123456789", 0xe3069283).
 */
#ifndef JD_CRC32C_H
#define JD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* jd_crc32c: extend `crc` (0 to start) over n bytes at p; returns the new CRC. */
uint32_t jd_crc32c(uint32_t crc, const void *p, size_t n);

/* jd_crc32c_sw: the portable table version (for tests and for CPUs without SSE4.2). */
uint32_t jd_crc32c_sw(uint32_t crc, const void *p, size_t n);

#endif /* JD_CRC32C_H */
