/* arch/impl.h: what arch/ctx.c needs from the implementation chosen at build time.
 *
 * The asm builds link arch/frame.c (jd_arch_make) with arch/x86_64.S or arch/aarch64.S
 * (jd_arch_switch); the fallback links arch/ucontext.c, which defines both.  ctx.c wraps
 * them with the sanitizer hooks; nothing outside arch/ includes this header.
 */
#ifndef JD_ARCH_IMPL_H
#define JD_ARCH_IMPL_H

#include "arch/ctx.h"

/* Which implementation this build compiles: the fallback when asked (CTX=ucontext) or
 * when the CPU has no assembly switch.  arch/build.mk makes the same choice from
 * `$(CC) -dumpmachine`; a disagreement is a link error, never a silent mix. */
#if defined(JD_CTX_UCONTEXT) || !(defined(__x86_64__) || defined(__aarch64__))
#define JD_CTX_IMPL_UCONTEXT 1
#endif

#define JD_ARCH_HIDDEN __attribute__((visibility("hidden")))

/* jd_arch_switch: the raw switch: save the running context's registers (its own stack
 * for the asm switch, a ucontext_t on it for the fallback), record where in from->sp,
 * resume the context recorded in to->sp.  No sanitizer bookkeeping. */
JD_ARCH_HIDDEN void jd_arch_switch(struct jd_ctx *from, struct jd_ctx *to);

/* jd_arch_make: build the first frame of a new context at the top of the stack, so that
 * the first jd_arch_switch to `c` calls fn(arg) with the FP control state of the calling
 * thread, and set c->sp.  Writes only c->sp. */
JD_ARCH_HIDDEN void jd_arch_make(struct jd_ctx *c, void *stack_lo, size_t stack_size,
				 jd_ctx_fn fn, void *arg);

/* jd_ctx_fn_returned: called (by the asm entry trampoline or the fallback's entry) when a
 * context's fn returned, which the contract forbids: prints which function and aborts. */
JD_ARCH_HIDDEN _Noreturn void jd_ctx_fn_returned(jd_ctx_fn fn);

#endif /* JD_ARCH_IMPL_H */
