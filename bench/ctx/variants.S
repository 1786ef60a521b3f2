/* bench/ctx/variants.S: other shapes of the switch, measured by bench_ctx beside the one
 * in arch/ so that arch/README.md can say with figures why the shipped one looks as it
 * does.  None of these is linked into jschedd.
 *
 *   void bench_switch_nofp(struct jd_ctx *from, struct jd_ctx *to)
 *       the same frame without the FP control state (as some fiber libraries
 *       offer as an option): what saving MXCSR/x87 CW or FPCR costs.
 *   void bench_switch_fpcmp(struct jd_ctx *from, struct jd_ctx *to)
 *       x86-64 only: the shipped frame, but the MXCSR / x87 CW loads are skipped when the
 *       resumed context's values equal the current ones (AArch64's shipped switch
 *       already does this for FPCR).
 *
 * Both keep the shipped frame's shape (the FP slots just go unused in the first), so a
 * context made by jd_ctx_make in a release asm build starts under either of them.
 */
#include "arch/frame.h"

#if defined(__x86_64__)
	.text
	.globl	bench_switch_nofp
	.type	bench_switch_nofp, @function
	.p2align 4
bench_switch_nofp:
	leaq	-JD_FRAME_SAVED(%rsp), %rsp
	movq	%r12, JD_FRAME_R12(%rsp)
	movq	%r13, JD_FRAME_R13(%rsp)
	movq	%r14, JD_FRAME_R14(%rsp)
	movq	%r15, JD_FRAME_R15(%rsp)
	movq	%rbx, JD_FRAME_RBX(%rsp)
	movq	%rbp, JD_FRAME_RBP(%rsp)
	movq	%rsp, JD_CTX_SP(%rdi)
	movq	JD_CTX_SP(%rsi), %rsp
	movq	JD_FRAME_R12(%rsp), %r12
	movq	JD_FRAME_R13(%rsp), %r13
	movq	JD_FRAME_R14(%rsp), %r14
	movq	JD_FRAME_R15(%rsp), %r15
	movq	JD_FRAME_RBX(%rsp), %rbx
	movq	JD_FRAME_RBP(%rsp), %rbp
	leaq	JD_FRAME_SAVED(%rsp), %rsp
	ret
	.size	bench_switch_nofp, .-bench_switch_nofp

	.globl	bench_switch_fpcmp
	.type	bench_switch_fpcmp, @function
	.p2align 4
bench_switch_fpcmp:
	leaq	-JD_FRAME_SAVED(%rsp), %rsp
	movq	%r12, JD_FRAME_R12(%rsp)
	movq	%r13, JD_FRAME_R13(%rsp)
	movq	%r14, JD_FRAME_R14(%rsp)
	movq	%r15, JD_FRAME_R15(%rsp)
	movq	%rbx, JD_FRAME_RBX(%rsp)
	movq	%rbp, JD_FRAME_RBP(%rsp)
	stmxcsr	JD_FRAME_MXCSR(%rsp)
	fnstcw	JD_FRAME_X87CW(%rsp)
	movq	JD_FRAME_MXCSR(%rsp), %rax	/* MXCSR and CW together (8 bytes) */
	movq	%rsp, JD_CTX_SP(%rdi)
	movq	JD_CTX_SP(%rsi), %rsp
	cmpq	JD_FRAME_MXCSR(%rsp), %rax
	je	1f
	ldmxcsr	JD_FRAME_MXCSR(%rsp)
	fldcw	JD_FRAME_X87CW(%rsp)
1:
	movq	JD_FRAME_R12(%rsp), %r12
	movq	JD_FRAME_R13(%rsp), %r13
	movq	JD_FRAME_R14(%rsp), %r14
	movq	JD_FRAME_R15(%rsp), %r15
	movq	JD_FRAME_RBX(%rsp), %rbx
	movq	JD_FRAME_RBP(%rsp), %rbp
	leaq	JD_FRAME_SAVED(%rsp), %rsp
	ret
	.size	bench_switch_fpcmp, .-bench_switch_fpcmp

	.globl	bench_switch_jmp
	.type	bench_switch_jmp, @function
	.p2align 4
bench_switch_jmp:
	leaq	-JD_FRAME_SAVED(%rsp), %rsp
	movq	%r12, JD_FRAME_R12(%rsp)
	movq	%r13, JD_FRAME_R13(%rsp)
	movq	%r14, JD_FRAME_R14(%rsp)
	movq	%r15, JD_FRAME_R15(%rsp)
	movq	%rbx, JD_FRAME_RBX(%rsp)
	movq	%rbp, JD_FRAME_RBP(%rsp)
	stmxcsr	JD_FRAME_MXCSR(%rsp)
	fnstcw	JD_FRAME_X87CW(%rsp)
	movq	%rsp, JD_CTX_SP(%rdi)
	movq	JD_CTX_SP(%rsi), %rsp
	ldmxcsr	JD_FRAME_MXCSR(%rsp)
	fldcw	JD_FRAME_X87CW(%rsp)
	movq	JD_FRAME_R12(%rsp), %r12
	movq	JD_FRAME_R13(%rsp), %r13
	movq	JD_FRAME_R14(%rsp), %r14
	movq	JD_FRAME_R15(%rsp), %r15
	movq	JD_FRAME_RBX(%rsp), %rbx
	movq	JD_FRAME_RBP(%rsp), %rbp
	movq	JD_FRAME_RET(%rsp), %rcx
	leaq	JD_FRAME_SIZE(%rsp), %rsp
	jmp	*%rcx
	.size	bench_switch_jmp, .-bench_switch_jmp

#elif defined(__aarch64__)
	.text
	.globl	bench_switch_nofp
	.type	bench_switch_nofp, %function
	.p2align 4
bench_switch_nofp:
	sub	sp, sp, #JD_FRAME_SIZE
	stp	x19, x20, [sp, #JD_FRAME_X19]
	stp	x21, x22, [sp, #JD_FRAME_X21]
	stp	x23, x24, [sp, #JD_FRAME_X23]
	stp	x25, x26, [sp, #JD_FRAME_X25]
	stp	x27, x28, [sp, #JD_FRAME_X27]
	stp	x29, x30, [sp, #JD_FRAME_X29]
	stp	d8, d9, [sp, #JD_FRAME_D8]
	stp	d10, d11, [sp, #JD_FRAME_D10]
	stp	d12, d13, [sp, #JD_FRAME_D12]
	stp	d14, d15, [sp, #JD_FRAME_D14]
	mov	x10, sp
	str	x10, [x0, #JD_CTX_SP]
	ldr	x10, [x1, #JD_CTX_SP]
	mov	sp, x10
	ldp	x19, x20, [sp, #JD_FRAME_X19]
	ldp	x21, x22, [sp, #JD_FRAME_X21]
	ldp	x23, x24, [sp, #JD_FRAME_X23]
	ldp	x25, x26, [sp, #JD_FRAME_X25]
	ldp	x27, x28, [sp, #JD_FRAME_X27]
	ldp	x29, x30, [sp, #JD_FRAME_X29]
	ldp	d8, d9, [sp, #JD_FRAME_D8]
	ldp	d10, d11, [sp, #JD_FRAME_D10]
	ldp	d12, d13, [sp, #JD_FRAME_D12]
	ldp	d14, d15, [sp, #JD_FRAME_D14]
	add	sp, sp, #JD_FRAME_SIZE
	ret
	.size	bench_switch_nofp, .-bench_switch_nofp
#endif

#if defined(__linux__) && defined(__ELF__)
	.section .note.GNU-stack, "", %progbits
#endif
