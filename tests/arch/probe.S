/* tests/arch/probe.S: register probes for tests/arch/test_ctx.c, one section per CPU.
 *
 * C cannot hold chosen values in chosen callee-saved registers across a call, so these
 * helpers do it in assembly:
 *
 *   void probe_switch(struct jd_ctx *from, struct jd_ctx *to,
 *                     const uint64_t *in, uint64_t *out);
 *       loads in[] into every callee-saved register, calls jd_ctx_switch(from, to), and
 *       when that returns stores the same registers into out[] (then restores its
 *       caller's registers).  x86-64: rbx, rbp, r12-r15 (6 values).  AArch64: x19-x29
 *       then d8-d15 (19 values).
 *   uintptr_t probe_sp(void);
 *       the stack pointer the caller had at its call instruction (x86-64: rsp + 8 at
 *       entry; AArch64: sp), to check the ABI's 16-byte alignment.
 *
 * On other CPUs the file is empty and the tests that need it are skipped.
 */
#if defined(__x86_64__)
	.text
	.globl	probe_switch
	.type	probe_switch, @function
	.p2align 4
probe_switch:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	pushq	%rcx			/* out; also makes rsp 16-byte aligned for the call */
	.cfi_adjust_cfa_offset 8
	movq	0(%rdx), %rbx
	movq	8(%rdx), %rbp
	movq	16(%rdx), %r12
	movq	24(%rdx), %r13
	movq	32(%rdx), %r14
	movq	40(%rdx), %r15
	call	jd_ctx_switch
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	movq	%rbx, 0(%rcx)
	movq	%rbp, 8(%rcx)
	movq	%r12, 16(%rcx)
	movq	%r13, 24(%rcx)
	movq	%r14, 32(%rcx)
	movq	%r15, 40(%rcx)
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	probe_switch, .-probe_switch

	.globl	probe_sp
	.type	probe_sp, @function
	.p2align 4
probe_sp:
	leaq	8(%rsp), %rax
	ret
	.size	probe_sp, .-probe_sp

#elif defined(__aarch64__)
	.text
	.globl	probe_switch
	.type	probe_switch, %function
	.p2align 4
probe_switch:
	.cfi_startproc
	sub	sp, sp, #176
	.cfi_def_cfa_offset 176
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	.cfi_rel_offset x29, 80
	.cfi_rel_offset x30, 88
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	str	x3, [sp, #160]		/* out */
	ldp	x19, x20, [x2, #0]
	ldp	x21, x22, [x2, #16]
	ldp	x23, x24, [x2, #32]
	ldp	x25, x26, [x2, #48]
	ldp	x27, x28, [x2, #64]
	ldr	x29, [x2, #80]
	ldp	d8, d9, [x2, #88]
	ldp	d10, d11, [x2, #104]
	ldp	d12, d13, [x2, #120]
	ldp	d14, d15, [x2, #136]
	bl	jd_ctx_switch
	ldr	x3, [sp, #160]
	stp	x19, x20, [x3, #0]
	stp	x21, x22, [x3, #16]
	stp	x23, x24, [x3, #32]
	stp	x25, x26, [x3, #48]
	stp	x27, x28, [x3, #64]
	str	x29, [x3, #80]
	stp	d8, d9, [x3, #88]
	stp	d10, d11, [x3, #104]
	stp	d12, d13, [x3, #120]
	stp	d14, d15, [x3, #136]
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #176
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	probe_switch, .-probe_switch

	.globl	probe_sp
	.type	probe_sp, %function
	.p2align 4
probe_sp:
	mov	x0, sp
	ret
	.size	probe_sp, .-probe_sp
#endif

#if defined(__linux__) && defined(__ELF__)
	.section .note.GNU-stack, "", %progbits
#endif
