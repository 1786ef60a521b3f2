/* bench/pool/kernels.c: the fork-join and parallel-for loops, shared by both sides of
 * the benchmark and aligned so that their speed does not depend on where the linker puts
 * them (see kernels.h). */
#include "bench/pool/kernels.h"

#include <math.h>

__attribute__((aligned(64))) uint64_t kernel_sum(const uint32_t *data, size_t lo, size_t hi)
{
	uint64_t s = 0;
	for (size_t i = lo; i < hi; i++)
		s += data[i];
	return s;
}

__attribute__((aligned(64))) void kernel_sqrt(double *out, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		out[i] = sqrt((double)i);
}
