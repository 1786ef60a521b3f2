/* arch/ucontext.c: the portable context switch, built with `make CTX=ucontext` or on a
 * CPU without an assembly switch.  POSIX getcontext/makecontext/swapcontext (removed
 * from POSIX 2008 but kept by glibc and musl) on any CPU.
 *
 * No heap: a context that is switched away from keeps its ucontext_t on its own stack,
 * as a local of jd_arch_switch() (the assembly switch keeps its frame there too), and
 * jd_ctx.sp points to it.  A new context's ucontext_t, with fn and arg, sits at the top
 * of its stack; the fiber's frames grow below it.
 *
 * What it costs: glibc's swapcontext saves and restores the signal mask with a system
 * call on every switch (see arch/README.md for the figure).  What it carries: glibc
 * saves the callee-saved registers and the FP environment (x86-64: x87 control word and
 * MXCSR; AArch64: FPCR and FPSR with d8-d15), so the test suite's per-context FP checks
 * hold here as well.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "arch/impl.h"

#ifdef JD_CTX_IMPL_UCONTEXT

/* What a new context finds at the top of its stack. */
struct start {
	ucontext_t uc;
	jd_ctx_fn fn;
	void *arg;
};

static _Noreturn void die(const char *what)
{
	perror(what);
	abort();
}

/* makecontext passes only int arguments: the pointer travels in two halves. */
static void entry(unsigned int hi, unsigned int lo)
{
	struct start *s = (struct start *)(uintptr_t)(((uint64_t)hi << 32) | lo);

	s->fn(s->arg);
	jd_ctx_fn_returned(s->fn);
}

/* jd_arch_switch: see arch/impl.h.  Any thread. */
void jd_arch_switch(struct jd_ctx *from, struct jd_ctx *to)
{
	ucontext_t here;

	from->sp = &here;
	if (swapcontext(&here, to->sp) != 0)
		die("jd_ctx: swapcontext");
}

/* jd_arch_make: see arch/impl.h.  Any thread. */
void jd_arch_make(struct jd_ctx *c, void *stack_lo, size_t stack_size, jd_ctx_fn fn, void *arg)
{
	uintptr_t top = (uintptr_t)stack_lo + stack_size;
	struct start *s = (struct start *)((top - sizeof(struct start)) & ~(uintptr_t)63);
	uint64_t p = (uintptr_t)s;

	if (getcontext(&s->uc) != 0)
		die("jd_ctx: getcontext");
	s->fn = fn;
	s->arg = arg;
	s->uc.uc_link = NULL;
	s->uc.uc_stack.ss_sp = stack_lo;
	s->uc.uc_stack.ss_size = (size_t)((uintptr_t)s - (uintptr_t)stack_lo);
	s->uc.uc_stack.ss_flags = 0;
	makecontext(&s->uc, (void (*)(void))entry, 2, (unsigned int)(p >> 32),
		    (unsigned int)(p & 0xffffffffu));
	c->sp = &s->uc;
}

#endif /* JD_CTX_IMPL_UCONTEXT */
