/* arch/ctx.h: the execution-context switch, the only CPU-specific interface in the tree.
 *
 * A struct jd_ctx is a place to save one stack's registers.  jd_ctx_make() prepares a
 * fresh stack so that the first switch to it calls fn(arg); jd_ctx_switch() saves the
 * current context into `from` and resumes `to`.  The switch itself is hand-written
 * assembly per ABI (arch/x86_64.S, arch/aarch64.S); building with CTX=ucontext selects
 * the portable fallback (arch/ucontext.c) for CPUs without one.
 *
 * The wrappers in arch/ctx.c tell AddressSanitizer and ThreadSanitizer about every
 * switch, so sanitizer builds stay meaningful with fibers, and register fiber stacks with
 * Valgrind when its header is installed.
 *
 * Contract (all functions): the caller owns the jd_ctx memory; a context is resumed by
 * at most one thread at a time, but may be resumed on a different thread than the one
 * it last ran on; fn must never return (it ends by jd_ctx_switch_final() to some other
 * context; if it does return, the process aborts with a message saying so).  No function
 * here allocates except for sanitizer bookkeeping.
 *
 * What a switch carries: the callee-saved registers of the ABI, the stack pointer and the
 * floating-point control state (x86-64: MXCSR and the x87 control word; AArch64: d8-d15
 * and FPCR).  So the rounding mode is per context, and a new context starts with the FP
 * control state of the thread that called jd_ctx_make() (as a new pthread does).  Not
 * carried: thread-local storage.  Code after jd_ctx_switch() may be running on another
 * thread than before it, and compilers may keep a TLS address (errno's included: glibc
 * declares __errno_location() const) in a register across the call; see arch/README.md.
 */
#ifndef JD_ARCH_CTX_H
#define JD_ARCH_CTX_H

#include <stdbool.h>
#include <stddef.h>

typedef void (*jd_ctx_fn)(void *arg);

/* Implementation detail of the contract above; the pool treats it as opaque.  All fields
 * belong to whichever thread is switching from or to the context (a context is touched
 * by one thread at a time).  The layout is the same in every build, so that sanitizer
 * and release objects agree on sizeof(struct jd_ctx). */
struct jd_ctx {
	void *sp;		/* where the context was saved: the stack pointer (asm
				 * switch, the frame of arch/ctx_frame.h) or a ucontext_t *
				 * (fallback); offset 0, checked in arch/frame.c */
	struct jd_ctx *self;	/* == this struct while it holds sanitizer/Valgrind state
				 * (set by make/init_thread, cleared by destroy) */
	void *stack_lo;		/* stack bounds, told to ASan on each switch to here */
	size_t stack_size;
	void *asan_fake_stack;	/* ASan fake-stack handle saved while switched away */
	void *tsan_fiber;	/* TSan fiber handle */
	jd_ctx_fn fn;		/* what the first resumption runs (sanitizer builds start */
	void *arg;		/*   through a wrapper that first finishes the ASan switch) */
	unsigned valgrind_id;	/* Valgrind stack id, 0 if none */
	bool is_thread;		/* made by jd_ctx_init_thread: a thread's own stack */
};

/* jd_ctx_init_thread: make `c` stand for the calling thread's own stack, so that a
 * fiber can switch back to it.  Call on the thread itself. */
void jd_ctx_init_thread(struct jd_ctx *c);

/* jd_ctx_make: prepare `c` to run fn(arg) on [stack_lo, stack_lo + stack_size) at its
 * first resumption.  stack_lo is page-aligned; the caller keeps the stack alive.  The
 * first frame sits at the top of the range, aligned down to 16 bytes.  `c` is either
 * memory holding no context (preferably zeroed: jd_ctx_make reads it to tell, and
 * Valgrind flags a read of garbage) or a context made earlier that is not running (a
 * finished fiber being reused), whose sanitizer state is then released first, so no
 * jd_ctx_destroy is needed between two makes.  Any thread may call it. */
void jd_ctx_make(struct jd_ctx *c, void *stack_lo, size_t stack_size, jd_ctx_fn fn,
		 void *arg);

/* jd_ctx_switch: save the running context into `from` and resume `to`.  Returns when
 * something switches back to `from`, possibly on another thread. */
void jd_ctx_switch(struct jd_ctx *from, struct jd_ctx *to);

/* jd_ctx_switch_final: like jd_ctx_switch, for a context that will never be resumed
 * again (a finished fiber); lets ASan drop its fake stack.  Does not return (aborts if
 * `from` is resumed anyway). */
void jd_ctx_switch_final(struct jd_ctx *from, struct jd_ctx *to);

/* jd_ctx_destroy: release the sanitizer state of a context made by jd_ctx_make (or of
 * a thread context).  The context must not be running.  Destroying twice is harmless;
 * jd_ctx_make may follow to reuse the memory. */
void jd_ctx_destroy(struct jd_ctx *c);

/* jd_ctx_name: "x86_64", "aarch64" or "ucontext": the implementation built in. */
const char *jd_ctx_name(void);

#endif /* JD_ARCH_CTX_H */
