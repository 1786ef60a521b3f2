/* daemon/pool/sync.h: the pool's small synchronization primitives, all inline.
 *
 * A test-and-test-and-set spin lock for the few-instruction critical sections (inboxes,
 * event waiter lists, free lists), a futex wrapper, a clock, and the owner-only counter
 * bump.  The spin lock yields the CPU after a short spin: on a 2-vCPU guest the holder may
 * be descheduled, and spinning through its whole time slice would only delay it.
 */
#ifndef JD_POOL_SYNC_H
#define JD_POOL_SYNC_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* cpu_relax: tell the CPU this is a spin-wait iteration. */
static inline void jd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("isb" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline void jd_spin_lock(atomic_uint *l)
{
	unsigned spins = 0;
	for (;;) {
		if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
			return;
		while (atomic_load_explicit(l, memory_order_relaxed)) {
			if (++spins < 64)
				jd_cpu_relax();
			else
				sched_yield();
		}
	}
}

static inline bool jd_spin_trylock(atomic_uint *l)
{
	return !atomic_load_explicit(l, memory_order_relaxed) &&
	       !atomic_exchange_explicit(l, 1, memory_order_acquire);
}

static inline void jd_spin_unlock(atomic_uint *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static inline uint64_t jd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* jd_futex_wait: sleep while *addr == val, at most until the CLOCK_MONOTONIC deadline
 * (0: none).  Returns 0 when woken (or spuriously), -ETIMEDOUT at the deadline. */
static inline int jd_futex_wait(atomic_uint *addr, unsigned val, uint64_t deadline_ns)
{
	struct timespec ts, *tp = NULL;
	if (deadline_ns) {
		ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
		ts.tv_nsec = (long)(deadline_ns % 1000000000u);
		tp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	long r = syscall(SYS_futex, (void *)(uintptr_t)addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val,
			 tp, NULL, FUTEX_BITSET_MATCH_ANY);
	if (r < 0 && errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return 0;
}

/* jd_futex_wake: wake up to n threads sleeping on addr.  addr may already be freed
 * memory of a waiter that returned: the kernel only hashes the address, so that is at
 * worst a spurious wake-up for some later user of it, which every waiter tolerates. */
static inline void jd_futex_wake(atomic_uint *addr, int n)
{
	syscall(SYS_futex, (void *)(uintptr_t)addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

/* jd_bump: add to a counter that only one thread writes and any thread may read. */
static inline void jd_bump(atomic_uint_least64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* jd_parker: one thread's sleep/wake word (the scheme of Rust's thread::park): a token
 * that unpark() leaves and park() consumes, so an unpark that comes first is not lost.
 * States: EMPTY 0, NOTIFIED 1, PARKED 2.  Owned by the parking thread; unparked by any. */
struct jd_parker {
	atomic_uint state;
};

enum { JD_PARK_EMPTY = 0, JD_PARK_NOTIFIED = 1, JD_PARK_PARKED = 2 };

/* jd_park: sleep until unparked or the deadline (0: none); may return spuriously. */
static inline void jd_park(struct jd_parker *p, uint64_t deadline_ns)
{
	unsigned s = JD_PARK_NOTIFIED;
	if (atomic_compare_exchange_strong_explicit(&p->state, &s, JD_PARK_EMPTY,
						    memory_order_acquire, memory_order_relaxed))
		return; /* a token was waiting */
	s = JD_PARK_EMPTY;
	if (!atomic_compare_exchange_strong_explicit(&p->state, &s, JD_PARK_PARKED,
						     memory_order_acquire, memory_order_relaxed)) {
		atomic_exchange_explicit(&p->state, JD_PARK_EMPTY, memory_order_acquire);
		return; /* the token arrived just now */
	}
	for (;;) {
		int r = jd_futex_wait(&p->state, JD_PARK_PARKED, deadline_ns);
		s = JD_PARK_NOTIFIED;
		if (atomic_compare_exchange_strong_explicit(&p->state, &s, JD_PARK_EMPTY,
							    memory_order_acquire,
							    memory_order_relaxed))
			return;
		if (r == -ETIMEDOUT) {
			atomic_exchange_explicit(&p->state, JD_PARK_EMPTY, memory_order_acquire);
			return;
		}
	}
}

/* jd_unpark: leave the token and wake the thread if it sleeps.  Any thread. */
static inline void jd_unpark(struct jd_parker *p)
{
	if (atomic_exchange_explicit(&p->state, JD_PARK_NOTIFIED, memory_order_release) ==
	    JD_PARK_PARKED)
		jd_futex_wake(&p->state, 1);
}

#endif /* JD_POOL_SYNC_H */
