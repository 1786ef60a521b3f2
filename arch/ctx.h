/* arch/ctx.h: the execution-context switch, the only CPU-specific interface in the tree.
 *
 * A struct jd_ctx is a place to save one stack's registers.  jd_ctx_make() prepares a
 * fresh stack so that the first switch to it calls fn(arg); jd_ctx_switch() saves the
 * current context into `from` and resumes `to`.  The switch itself is hand-written
 * assembly per ABI (arch/x86_64.S, arch/aarch64.S); building with CTX=ucontext selects
 * the portable fallback (arch/ucontext.c) for CPUs without one.
 *
 * The wrappers in arch/ctx.c tell AddressSanitizer and ThreadSanitizer about every
 * switch, so sanitizer builds stay meaningful with fibers.
 *
 * Contract (all functions): the caller owns the jd_ctx memory; a context is resumed by
 * at most one thread at a time; fn must never return (it ends by jd_ctx_switch_final()
 * to some other context).  No function here allocates except for sanitizer bookkeeping.
 */
#ifndef JD_ARCH_CTX_H
#define JD_ARCH_CTX_H

#include <stddef.h>

typedef void (*jd_ctx_fn)(void *arg);

/* Implementation detail of the contract above; the pool treats it as opaque. The
 * assembly switch finds the saved stack pointer at offset 0 (checked in arch/ctx.c). */
struct jd_ctx {
	void *sp;		/* saved stack pointer (asm switch) */
	void *impl;		/* ucontext_t * (fallback build), else unused */
	void *stack_lo;		/* stack bounds, for ASan; NULL for a thread's own stack */
	size_t stack_size;
	void *asan_fake_stack;	/* ASan fake-stack handle saved while switched away */
	void *tsan_fiber;	/* TSan fiber handle */
};

/* jd_ctx_init_thread: make `c` stand for the calling thread's own stack, so that a
 * fiber can switch back to it.  Call on the thread itself. */
void jd_ctx_init_thread(struct jd_ctx *c);

/* jd_ctx_make: prepare `c` to run fn(arg) on [stack_lo, stack_lo + stack_size) at its
 * first resumption.  stack_lo is page-aligned; the caller keeps the stack alive. */
void jd_ctx_make(struct jd_ctx *c, void *stack_lo, size_t stack_size, jd_ctx_fn fn,
		 void *arg);

/* jd_ctx_switch: save the running context into `from` and resume `to`.  Returns when
 * something switches back to `from`. */
void jd_ctx_switch(struct jd_ctx *from, struct jd_ctx *to);

/* jd_ctx_switch_final: like jd_ctx_switch, for a context that will never be resumed
 * again (a finished fiber); lets ASan drop its fake stack.  Does not return. */
void jd_ctx_switch_final(struct jd_ctx *from, struct jd_ctx *to);

/* jd_ctx_destroy: release the sanitizer state of a context made by jd_ctx_make (or of
 * a thread context).  The context must not be running. */
void jd_ctx_destroy(struct jd_ctx *c);

/* jd_ctx_name: "x86_64", "aarch64" or "ucontext": the implementation built in. */
const char *jd_ctx_name(void);

#endif /* JD_ARCH_CTX_H */
