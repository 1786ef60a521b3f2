/* tests/common/rnd.h: the tests' pseudo-random sequence (xorshift64), from a seed the test
 * keeps, so that a failure repeats with the same numbers.  Header only. */
#ifndef JTC_RND_H
#define JTC_RND_H

#include <stdint.h>

/* jtc_xorshift: the next number of the sequence whose state is *s (never 0). */
static inline uint64_t jtc_xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
