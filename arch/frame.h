/* arch/frame.h: the frame the assembly switch saves on a stack, as byte offsets from the
 * saved stack pointer.  One header shared by the assembler (arch/x86_64.S,
 * arch/aarch64.S) and C (arch/frame.c builds the first frame of a new context from a
 * struct with the same layout and checks every offset with _Static_assert(offsetof)).
 * Plain #defines only: the assembler reads this file too.
 *
 * JD_CTX_SP is offsetof(struct jd_ctx, sp): where the switch stores the stack pointer of
 * the context it leaves and finds the one of the context it resumes.
 */
#ifndef JD_ARCH_FRAME_H
#define JD_ARCH_FRAME_H

#define JD_CTX_SP 0

#if defined(__x86_64__)
/* System V x86-64: rbx, rbp, r12-r15 are callee-saved, plus the control bits of MXCSR
 * and the x87 control word.  The return address was pushed by the call; the switch
 * makes room for the rest below it, so the frame is 64 bytes and the saved stack
 * pointer is 16-byte aligned (the caller's rsp was, before its call). */
#define JD_FRAME_MXCSR 0	/* 4 bytes */
#define JD_FRAME_X87CW 4	/* 2 bytes, then 2 bytes of padding */
#define JD_FRAME_R12 8
#define JD_FRAME_R13 16
#define JD_FRAME_R14 24
#define JD_FRAME_R15 32
#define JD_FRAME_RBX 40
#define JD_FRAME_RBP 48
#define JD_FRAME_RET 56		/* return address, pushed by the caller's call */
#define JD_FRAME_SAVED 56	/* bytes the switch itself reserves below it */
#define JD_FRAME_SIZE 64

#elif defined(__aarch64__)
/* AAPCS64: x19-x28, the frame pointer x29, the link register x30, the low 64 bits of
 * v8-v15 (d8-d15) and FPCR.  Never x18 (the platform register).  sp stays 16-byte
 * aligned throughout, as the architecture requires. */
#define JD_FRAME_X19 0		/* x19, x20 */
#define JD_FRAME_X21 16		/* x21, x22 */
#define JD_FRAME_X23 32		/* x23, x24 */
#define JD_FRAME_X25 48		/* x25, x26 */
#define JD_FRAME_X27 64		/* x27, x28 */
#define JD_FRAME_X29 80		/* x29 (fp), x30 (lr: where the switch returns to) */
#define JD_FRAME_D8 96		/* d8, d9 */
#define JD_FRAME_D10 112	/* d10, d11 */
#define JD_FRAME_D12 128	/* d12, d13 */
#define JD_FRAME_D14 144	/* d14, d15 */
#define JD_FRAME_FPCR 160	/* 8 bytes, then 8 bytes of padding */
#define JD_FRAME_SIZE 176

#endif

#endif /* JD_ARCH_FRAME_H */
