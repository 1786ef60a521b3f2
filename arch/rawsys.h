/* arch/rawsys.h: a Linux system call without libc: no errno, no thread-local storage,
 * nothing but registers and the kernel.
 *
 * For code that must not touch libc's state: a child that shares its parent's memory and
 * thread pointer until it execs (daemon/run/process.c, which starts commands that way),
 * where a libc wrapper failing would write errno into the parent thread's.  The two CPUs
 * the rest of arch/ knows get an inline `syscall` / `svc 0`; on any other, JD_RAWSYS is
 * not defined and such callers keep a path that does not need one.
 *
 * jd_rawsys6: system call number n with six arguments (unused ones: 0).  Returns what the
 * kernel returns: >= 0, or -errno.
 */
#ifndef JD_ARCH_RAWSYS_H
#define JD_ARCH_RAWSYS_H

#if defined(__x86_64__)
#define JD_RAWSYS 1
static inline __attribute__((always_inline)) long jd_rawsys6(long n, long a, long b, long c,
							     long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define JD_RAWSYS 1
static inline __attribute__((always_inline)) long jd_rawsys6(long n, long a, long b, long c,
							     long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#endif

#endif /* JD_ARCH_RAWSYS_H */
