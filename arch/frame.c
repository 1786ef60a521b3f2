/* arch/frame.c: the first frame of a new context, for the assembly switch.
 *
 * A new context is a stack whose top holds a frame shaped exactly like the one
 * jd_arch_switch() saves (arch/frame.h), so that the first switch to it "returns" into
 * the entry trampoline jd_arch_entry with fn and arg in callee-saved registers.  The
 * frame is written here in C, through a struct whose every offset is checked against
 * the header the assembly uses, so the two cannot drift apart.
 *
 * The FP control words are copied from the calling thread (a new context starts like a
 * new pthread, with its creator's rounding mode and exception masks); the frame pointer
 * is zero, so frame-pointer walkers (ASan's fast unwinder, perf) stop there too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/frame.h"
#include "arch/impl.h"

#ifndef JD_CTX_IMPL_UCONTEXT

_Static_assert(offsetof(struct jd_ctx, sp) == JD_CTX_SP, "jd_ctx.sp must sit where the asm looks");
_Static_assert(JD_FRAME_SIZE % 16 == 0, "frames keep the stack 16-byte aligned");

/* The entry trampoline (arch/x86_64.S, arch/aarch64.S). */
JD_ARCH_HIDDEN void jd_arch_entry(void);

#if defined(__x86_64__)
struct first_frame {
	uint32_t mxcsr;
	uint16_t x87cw;
	uint16_t pad;
	uint64_t r12, r13, r14, r15, rbx, rbp;
	uint64_t ret;
};
_Static_assert(offsetof(struct first_frame, mxcsr) == JD_FRAME_MXCSR, "mxcsr");
_Static_assert(offsetof(struct first_frame, x87cw) == JD_FRAME_X87CW, "x87cw");
_Static_assert(offsetof(struct first_frame, r12) == JD_FRAME_R12, "r12");
_Static_assert(offsetof(struct first_frame, r13) == JD_FRAME_R13, "r13");
_Static_assert(offsetof(struct first_frame, r14) == JD_FRAME_R14, "r14");
_Static_assert(offsetof(struct first_frame, r15) == JD_FRAME_R15, "r15");
_Static_assert(offsetof(struct first_frame, rbx) == JD_FRAME_RBX, "rbx");
_Static_assert(offsetof(struct first_frame, rbp) == JD_FRAME_RBP, "rbp");
_Static_assert(offsetof(struct first_frame, ret) == JD_FRAME_RET, "ret");
_Static_assert(sizeof(struct first_frame) == JD_FRAME_SIZE, "frame size");
_Static_assert(JD_FRAME_SAVED + 8 == JD_FRAME_SIZE, "the call pushes the last 8 bytes");

static void fill(struct first_frame *f, jd_ctx_fn fn, void *arg)
{
	__asm__ volatile("stmxcsr %0" : "=m"(f->mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(f->x87cw));
	f->r12 = (uint64_t)(uintptr_t)fn;
	f->r13 = (uint64_t)(uintptr_t)arg;
	f->ret = (uint64_t)(uintptr_t)jd_arch_entry;
}

#elif defined(__aarch64__)
struct first_frame {
	uint64_t x19, x20, x21, x22, x23, x24, x25, x26, x27, x28, x29, x30;
	uint64_t d8, d9, d10, d11, d12, d13, d14, d15;
	uint64_t fpcr, pad;
};
_Static_assert(offsetof(struct first_frame, x19) == JD_FRAME_X19, "x19");
_Static_assert(offsetof(struct first_frame, x21) == JD_FRAME_X21, "x21");
_Static_assert(offsetof(struct first_frame, x23) == JD_FRAME_X23, "x23");
_Static_assert(offsetof(struct first_frame, x25) == JD_FRAME_X25, "x25");
_Static_assert(offsetof(struct first_frame, x27) == JD_FRAME_X27, "x27");
_Static_assert(offsetof(struct first_frame, x29) == JD_FRAME_X29, "x29");
_Static_assert(offsetof(struct first_frame, d8) == JD_FRAME_D8, "d8");
_Static_assert(offsetof(struct first_frame, d10) == JD_FRAME_D10, "d10");
_Static_assert(offsetof(struct first_frame, d12) == JD_FRAME_D12, "d12");
_Static_assert(offsetof(struct first_frame, d14) == JD_FRAME_D14, "d14");
_Static_assert(offsetof(struct first_frame, fpcr) == JD_FRAME_FPCR, "fpcr");
_Static_assert(sizeof(struct first_frame) == JD_FRAME_SIZE, "frame size");

static void fill(struct first_frame *f, jd_ctx_fn fn, void *arg)
{
	uint64_t fpcr;

	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	f->fpcr = fpcr;
	f->x19 = (uint64_t)(uintptr_t)fn;
	f->x20 = (uint64_t)(uintptr_t)arg;
	f->x30 = (uint64_t)(uintptr_t)jd_arch_entry;
}
#endif

/* jd_arch_make: see arch/impl.h.  Any thread. */
void jd_arch_make(struct jd_ctx *c, void *stack_lo, size_t stack_size, jd_ctx_fn fn, void *arg)
{
	uintptr_t top = ((uintptr_t)stack_lo + stack_size) & ~(uintptr_t)15;
	struct first_frame *f = (struct first_frame *)(top - sizeof(*f));

	memset(f, 0, sizeof(*f));
	fill(f, fn, arg);
	c->sp = f;
}

#endif /* !JD_CTX_IMPL_UCONTEXT */
