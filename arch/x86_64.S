/* arch/x86_64.S: the context switch for x86-64, System V ABI.  Only the switch and the
 * entry trampoline of a new context live here; arch/ctx.c wraps them for the sanitizers
 * and arch/frame.c builds a new context's first frame.
 *
 * void jd_arch_switch(struct jd_ctx *from (rdi), struct jd_ctx *to (rsi))
 *
 * saves what the ABI says a callee must preserve into a frame on the running stack,
 * stores the stack pointer into from->sp, loads to->sp and pops the same frame from the
 * other stack.  Offsets come from arch/frame.h:
 *
 *          higher addresses
 *        +-------------------+
 *     56 | return address    |  pushed by the caller's `call`
 *     48 | rbp               |
 *     40 | rbx               |
 *     32 | r15               |
 *     24 | r14               |
 *     16 | r13               |  first frame: arg
 *      8 | r12               |  first frame: fn
 *      4 | x87 CW |  (pad)   |
 *      0 | MXCSR             |  <- from->sp / to->sp (16-byte aligned)
 *        +-------------------+
 *
 * The caller-saved registers need no saving: the C caller assumes a call clobbers them.
 * Both stacks hold the same frame shape, so the CFI below stays true after the stack
 * pointer changes; it just describes the other context.
 *
 * A new context's first frame returns into jd_arch_entry with r12 = fn, r13 = arg and
 * rsp 16-byte aligned; it calls fn(arg).  Its CFI marks the return address undefined,
 * so debuggers and unwinders stop at a fiber's first frame instead of walking into
 * garbage.  fn must never return; if it does, jd_ctx_fn_returned(fn) says so and aborts.
 */
#include "arch/frame.h"

	.text

	.globl	jd_arch_switch
	.hidden	jd_arch_switch
	.type	jd_arch_switch, @function
	.p2align 4
jd_arch_switch:
	.cfi_startproc
	leaq	-JD_FRAME_SAVED(%rsp), %rsp
	.cfi_adjust_cfa_offset JD_FRAME_SAVED
	movq	%r12, JD_FRAME_R12(%rsp)
	.cfi_rel_offset %r12, JD_FRAME_R12
	movq	%r13, JD_FRAME_R13(%rsp)
	.cfi_rel_offset %r13, JD_FRAME_R13
	movq	%r14, JD_FRAME_R14(%rsp)
	.cfi_rel_offset %r14, JD_FRAME_R14
	movq	%r15, JD_FRAME_R15(%rsp)
	.cfi_rel_offset %r15, JD_FRAME_R15
	movq	%rbx, JD_FRAME_RBX(%rsp)
	.cfi_rel_offset %rbx, JD_FRAME_RBX
	movq	%rbp, JD_FRAME_RBP(%rsp)
	.cfi_rel_offset %rbp, JD_FRAME_RBP
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
	leaq	JD_FRAME_SAVED(%rsp), %rsp
	.cfi_adjust_cfa_offset -JD_FRAME_SAVED
	ret
	.cfi_endproc
	.size	jd_arch_switch, .-jd_arch_switch

	.hidden	jd_ctx_fn_returned	/* arch/ctx.c */

	.globl	jd_arch_entry
	.hidden	jd_arch_entry
	.type	jd_arch_entry, @function
	.p2align 4
jd_arch_entry:
	.cfi_startproc
	.cfi_undefined %rip
	movq	%r13, %rdi
	call	*%r12
	movq	%r12, %rdi
	call	jd_ctx_fn_returned
	ud2
	.cfi_endproc
	.size	jd_arch_entry, .-jd_arch_entry

	.section .note.GNU-stack, "", @progbits
