/* bench/pool/kernels.h: the computing loops of the fork-join and parallel-for rows, in
 * one object file linked into both sides of the benchmark (bench_pool and tbb_bench).
 *
 * Why a file of their own: the fork-join leaf is a five-instruction loop, and on the
 * project's AMD EPYC machine it runs 1.7x slower when it straddles a 64-byte boundary.
 * Compiled into each program, where it lands depends on the size of unrelated code: one
 * build of bench_pool took 0.30 ms for the fork-join row and the next, after main() grew
 * by a few lines, 0.21 ms, with the pool unchanged (the loop at 0x4978 against 0x4a08).
 * Here each function is 64-byte aligned, so both programs run the same bytes at the same
 * alignment, and the rows compare the schedulers, not the code layout.
 */
#ifndef BENCH_POOL_KERNELS_H
#define BENCH_POOL_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kernel_sum: the sum of data[lo..hi). */
uint64_t kernel_sum(const uint32_t *data, size_t lo, size_t hi);

/* kernel_sqrt: out[i] = sqrt(i) for i in [lo, hi). */
void kernel_sqrt(double *out, size_t lo, size_t hi);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_POOL_KERNELS_H */
