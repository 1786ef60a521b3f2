/* tests/journal/pc_payload.h: the payload of record `seq` in the power-loss test, a
 * function of seq alone (16 to ~1,200 bytes, so flushes span several sectors), that the
 * writer appends and the checker expects back. */
#ifndef JSCHED_PC_PAYLOAD_H
#define JSCHED_PC_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#define PC_TYPE 3u
#define PC_PAYLOAD_MAX 1300

static inline size_t pc_payload(uint64_t seq, char *buf)
{
	size_t len = 16 + (size_t)((seq * 7919u) % 1200u);

	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((seq * 31u + i * 7u) & 0xff);
	return len;
}

#endif
