/* bench/ctx/bench_ctx.c: what one context switch costs (arch/ctx.h), beside glibc's
 * swapcontext measured in the same run.
 *
 * Each figure is a ping-pong between the main thread's context and one fiber: N round
 * trips are 2N switches, timed together and divided; the median of --runs runs (default
 * 5) is printed.  The "3 frames deep" rows switch from three calls down on both sides,
 * so each resumed side returns through frames the CPU's return predictor did not see
 * being entered: that is where switch shapes differ (see the pop-and-jmp rows).  In an asm build two rows more measure shapes of the switch that were
 * considered and not shipped (bench/ctx/variants.S), against the shipped one, for the
 * record in arch/README.md.  Nothing else runs: one thread, two stacks, hot caches, so
 * this is the floor a fiber switch in the pool can reach, not what a suspend costs there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "arch/ctx.h"
#include "bench/common/bench.h"

enum { STACK_SIZE = 64 * 1024, MAX_RUNS = 101 };

typedef void (*switch_fn)(struct jd_ctx *from, struct jd_ctx *to);

#if !defined(JD_CTX_UCONTEXT) && (defined(__x86_64__) || defined(__aarch64__))
#define HAVE_VARIANTS 1
void bench_switch_nofp(struct jd_ctx *from, struct jd_ctx *to);
#if defined(__x86_64__)
void bench_switch_fpcmp(struct jd_ctx *from, struct jd_ctx *to);
void bench_switch_jmp(struct jd_ctx *from, struct jd_ctx *to);
#endif
#endif

static void *stack_new(void)
{
	void *p = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("bench_ctx: mmap");
		exit(1);
	}
	return p;
}

/* ---- jd_ctx_switch and its variants ------------------------------------------------ */

struct pingpong {
	struct jd_ctx main, fiber;
	switch_fn sw;
	int depth;	/* frames between the loop and the switch, on both sides */
};

/* Switch from `depth` calls down, so that each side returns through that many frames
 * after being resumed, as a suspended job does (the return predictor sees that). */
__attribute__((noinline)) static void switch_at(struct pingpong *p, int depth,
					       struct jd_ctx *from, struct jd_ctx *to)
{
	if (depth > 0)
		switch_at(p, depth - 1, from, to);
	else
		p->sw(from, to);
	__asm__ volatile("" ::: "memory"); /* not a tail call: a real frame */
}

static void pingpong_fn(void *arg)
{
	struct pingpong *p = arg;

	for (;;)
		switch_at(p, p->depth, &p->fiber, &p->main);
}

/* ns per switch of `sw` over `rounds` round trips on a fresh fiber. */
static double measure_ctx(switch_fn sw, int depth, long rounds)
{
	struct pingpong p = { .sw = sw, .depth = depth };
	void *stack = stack_new();

	jd_ctx_init_thread(&p.main);
	jd_ctx_make(&p.fiber, stack, STACK_SIZE, pingpong_fn, &p);
	sw(&p.main, &p.fiber); /* start it: the first switch is not timed */
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < rounds; i++)
		switch_at(&p, depth, &p.main, &p.fiber);
	uint64_t t1 = bench_now_ns();
	/* The fiber stays suspended in its loop; its stack and context just go away. */
	jd_ctx_destroy(&p.fiber);
	jd_ctx_destroy(&p.main);
	munmap(stack, STACK_SIZE);
	return (double)(t1 - t0) / (2.0 * (double)rounds);
}

/* ---- swapcontext ---------------------------------------------------------------------- */

static ucontext_t uc_main, uc_fiber;

static void uc_fn(void)
{
	for (;;)
		swapcontext(&uc_fiber, &uc_main);
}

static double measure_swapcontext(long rounds)
{
	void *stack = stack_new();

	if (getcontext(&uc_fiber) != 0) {
		perror("bench_ctx: getcontext");
		exit(1);
	}
	uc_fiber.uc_stack.ss_sp = stack;
	uc_fiber.uc_stack.ss_size = STACK_SIZE;
	uc_fiber.uc_link = NULL;
	makecontext(&uc_fiber, uc_fn, 0);
	swapcontext(&uc_main, &uc_fiber);
	uint64_t t0 = bench_now_ns();
	for (long i = 0; i < rounds; i++)
		swapcontext(&uc_main, &uc_fiber);
	uint64_t t1 = bench_now_ns();
	munmap(stack, STACK_SIZE);
	return (double)(t1 - t0) / (2.0 * (double)rounds);
}

enum { DEEP = 3 };

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench-ctx", argc, argv);
	const bool quick = bench_quick(r);
	const long rounds = quick ? 100000 : 2000000;		/* ~20-50 ms each, asm */
	const long uc_rounds = quick ? 10000 : 200000;		/* swapcontext: a syscall each */
	int runs = bench_runs(r);
	static double ctx[MAX_RUNS], ctx_deep[MAX_RUNS], uc[MAX_RUNS], nofp[MAX_RUNS],
		fpcmp[MAX_RUNS], jmp[MAX_RUNS], jmp_deep[MAX_RUNS];

	(void)nofp; /* some rows exist only on some CPUs */
	(void)fpcmp;
	(void)jmp;
	(void)jmp_deep;
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	/* Interleaved, so that a slow moment of the machine hits every row alike. */
	for (int i = 0; i < runs; i++) {
		ctx[i] = measure_ctx(jd_ctx_switch, 0, rounds);
		ctx_deep[i] = measure_ctx(jd_ctx_switch, DEEP, rounds);
		uc[i] = measure_swapcontext(uc_rounds);
#ifdef HAVE_VARIANTS
		nofp[i] = measure_ctx(bench_switch_nofp, 0, rounds);
#if defined(__x86_64__)
		fpcmp[i] = measure_ctx(bench_switch_fpcmp, 0, rounds);
		jmp[i] = measure_ctx(bench_switch_jmp, 0, rounds);
		jmp_deep[i] = measure_ctx(bench_switch_jmp, DEEP, rounds);
#endif
#endif
	}
	double v_ctx = bench_median(ctx, (size_t)runs);
	double v_deep = bench_median(ctx_deep, (size_t)runs);

	bench_row(r, "context switch", "ns", NULL, v_ctx, "ucontext swapcontext",
		  bench_median(uc, (size_t)runs));
	bench_row(r, "context switch, 3 frames deep", "ns", NULL, v_deep, NULL, 0);
#ifdef HAVE_VARIANTS
	bench_row(r, "switch, no FP control (not shipped)", "ns", NULL,
		  bench_median(nofp, (size_t)runs), "jd_ctx_switch", v_ctx);
#if defined(__x86_64__)
	bench_row(r, "switch, FP loads if changed (not shipped)", "ns", NULL,
		  bench_median(fpcmp, (size_t)runs), "jd_ctx_switch", v_ctx);
	bench_row(r, "switch, pop and jmp (not shipped)", "ns", NULL,
		  bench_median(jmp, (size_t)runs), "jd_ctx_switch", v_ctx);
	bench_row(r, "switch, pop and jmp, 3 deep (not shipped)", "ns", NULL,
		  bench_median(jmp_deep, (size_t)runs), "jd_ctx_switch, 3 deep", v_deep);
#endif
#endif
	bench_note(r, "jd_ctx_switch is the %s implementation; one switch = half a round trip "
		      "between a thread and one fiber, median of %d runs; \"3 frames deep\": "
		      "both sides switch from 3 calls down and return through them",
		   jd_ctx_name(), runs);
	return bench_report_finish(r);
}
