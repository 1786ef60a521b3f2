/* arch/aarch64.S: the context switch for AArch64, AAPCS64.  Only the switch and the entry
 * trampoline of a new context live here; arch/ctx.c wraps them for the sanitizers and
 * arch/frame.c builds a new context's first frame.
 *
 * void jd_arch_switch(struct jd_ctx *from (x0), struct jd_ctx *to (x1))
 *
 * saves what the ABI says a callee must preserve into a frame on the running stack,
 * stores sp into from->sp, loads to->sp and restores the same frame from the other
 * stack, returning through the x30 saved there.  Offsets come from arch/frame.h:
 *
 *          higher addresses
 *        +-------------+-------------+
 *    160 | FPCR        |  (pad)      |
 *    144 | d14         | d15         |
 *    128 | d12         | d13         |
 *    112 | d10         | d11         |
 *     96 | d8          | d9          |
 *     80 | x29 (fp)    | x30 (lr)    |  first frame: 0, jd_arch_entry
 *     64 | x27         | x28         |
 *     48 | x25         | x26         |
 *     32 | x23         | x24         |
 *     16 | x21         | x22         |
 *      0 | x19         | x20         |  first frame: fn, arg;  <- from->sp / to->sp
 *        +-------------+-------------+
 *
 * x18 is the platform register and is never touched.  Only the low halves of v8-v15
 * are callee-saved.  FPCR is written only when the two contexts differ: the write is
 * the one instruction here that may stall, and most switches carry the same value.
 *
 * A new context's first frame returns into jd_arch_entry with x19 = fn, x20 = arg; it
 * calls fn(arg).  Its CFI marks the return address (x30) undefined, so debuggers and
 * unwinders stop at a fiber's first frame.  fn must never return; if it does,
 * jd_ctx_fn_returned(fn) says so and aborts.
 */
#include "arch/frame.h"

	.text

	.globl	jd_arch_switch
	.hidden	jd_arch_switch
	.type	jd_arch_switch, %function
	.p2align 4
jd_arch_switch:
	.cfi_startproc
	sub	sp, sp, #JD_FRAME_SIZE
	.cfi_def_cfa_offset JD_FRAME_SIZE
	stp	x19, x20, [sp, #JD_FRAME_X19]
	.cfi_rel_offset x19, JD_FRAME_X19
	.cfi_rel_offset x20, JD_FRAME_X19 + 8
	stp	x21, x22, [sp, #JD_FRAME_X21]
	.cfi_rel_offset x21, JD_FRAME_X21
	.cfi_rel_offset x22, JD_FRAME_X21 + 8
	stp	x23, x24, [sp, #JD_FRAME_X23]
	.cfi_rel_offset x23, JD_FRAME_X23
	.cfi_rel_offset x24, JD_FRAME_X23 + 8
	stp	x25, x26, [sp, #JD_FRAME_X25]
	.cfi_rel_offset x25, JD_FRAME_X25
	.cfi_rel_offset x26, JD_FRAME_X25 + 8
	stp	x27, x28, [sp, #JD_FRAME_X27]
	.cfi_rel_offset x27, JD_FRAME_X27
	.cfi_rel_offset x28, JD_FRAME_X27 + 8
	stp	x29, x30, [sp, #JD_FRAME_X29]
	.cfi_rel_offset x29, JD_FRAME_X29
	.cfi_rel_offset x30, JD_FRAME_X29 + 8
	stp	d8, d9, [sp, #JD_FRAME_D8]
	.cfi_rel_offset d8, JD_FRAME_D8
	.cfi_rel_offset d9, JD_FRAME_D8 + 8
	stp	d10, d11, [sp, #JD_FRAME_D10]
	.cfi_rel_offset d10, JD_FRAME_D10
	.cfi_rel_offset d11, JD_FRAME_D10 + 8
	stp	d12, d13, [sp, #JD_FRAME_D12]
	.cfi_rel_offset d12, JD_FRAME_D12
	.cfi_rel_offset d13, JD_FRAME_D12 + 8
	stp	d14, d15, [sp, #JD_FRAME_D14]
	.cfi_rel_offset d14, JD_FRAME_D14
	.cfi_rel_offset d15, JD_FRAME_D14 + 8
	mrs	x9, fpcr
	str	x9, [sp, #JD_FRAME_FPCR]

	mov	x10, sp
	str	x10, [x0, #JD_CTX_SP]
	ldr	x10, [x1, #JD_CTX_SP]
	mov	sp, x10

	ldr	x10, [sp, #JD_FRAME_FPCR]
	cmp	x9, x10
	b.eq	1f
	msr	fpcr, x10
1:
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
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	jd_arch_switch, .-jd_arch_switch

	.hidden	jd_ctx_fn_returned	/* arch/ctx.c */

	.globl	jd_arch_entry
	.hidden	jd_arch_entry
	.type	jd_arch_entry, %function
	.p2align 4
jd_arch_entry:
	.cfi_startproc
	.cfi_undefined x30
	mov	x0, x20
	blr	x19
	mov	x0, x19
	bl	jd_ctx_fn_returned
	brk	#0x3e8
	.cfi_endproc
	.size	jd_arch_entry, .-jd_arch_entry

	.section .note.GNU-stack, "", %progbits
