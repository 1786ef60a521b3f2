/* arch/ctx.c: the public functions of arch/ctx.h, around the raw switch of arch/impl.h.
 *
 * Release builds compile nothing here but a tail call into the raw switch.  Sanitizer
 * builds tell the tools about every switch, because both keep per-stack state that a
 * silent stack change would corrupt:
 *   - AddressSanitizer: __sanitizer_start_switch_fiber() before the switch (with the
 *     destination stack's bounds; it saves the leaving context's fake stack, or frees it
 *     when the context will never run again) and __sanitizer_finish_switch_fiber() right
 *     after it, on the resumed side.  A new context finishes its first switch in
 *     fiber_start(), which is why sanitizer builds start contexts through it.
 *   - ThreadSanitizer: one TSan fiber per context (__tsan_create_fiber, or the thread's
 *     own from __tsan_get_current_fiber), __tsan_switch_to_fiber() just before the
 *     switch.  Flags 0: the switch is a synchronisation, as it is in the program.
 * Valgrind, when <valgrind/valgrind.h> is installed, learns each fiber stack's bounds
 * (VALGRIND_STACK_REGISTER) so memcheck does not take a switch for a huge stack
 * allocation; outside Valgrind the request is a few no-op instructions, and only in
 * make/destroy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/impl.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JD_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define JD_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(JD_ASAN)
#define JD_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(JD_TSAN)
#define JD_TSAN 1
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define JD_VALGRIND 1
#endif
#endif

#if defined(JD_ASAN) || defined(JD_TSAN)
#define JD_SANITIZED 1
#include <pthread.h>
#endif

/* The sanitizer runtimes' fiber interfaces (declared here rather than through
 * the sanitizer headers, whose presence varies between compiler versions). */
#ifdef JD_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
				     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif
#ifdef JD_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* jd_ctx_fn_returned: see arch/impl.h.  Runs on the context whose fn returned. */
void jd_ctx_fn_returned(jd_ctx_fn fn)
{
	fprintf(stderr,
		"jschedd: fatal: the function %p of a context returned; a context must end "
		"with jd_ctx_switch_final()\n",
		(void *)(uintptr_t)fn);
	abort();
}

#ifdef JD_SANITIZED
/* First code run on a new context in sanitizer builds: finish the switch that got here
 * (there is no fake stack to restore yet), then run fn(arg). */
static void fiber_start(void *p)
{
	struct jd_ctx *c = p;

#ifdef JD_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	c->fn(c->arg);
	jd_ctx_fn_returned(c->fn);
}
#endif

/* jd_ctx_init_thread: see arch/ctx.h.  The calling thread, for itself. */
void jd_ctx_init_thread(struct jd_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->self = c;
	c->is_thread = true;
#ifdef JD_ASAN
	/* ASan wants the destination's bounds on every switch, a thread's stack included. */
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		void *lo;
		size_t size;
		if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
			c->stack_lo = lo;
			c->stack_size = size;
		}
		pthread_attr_destroy(&attr);
	}
#endif
#ifdef JD_TSAN
	c->tsan_fiber = __tsan_get_current_fiber();
#endif
}

/* jd_ctx_make: see arch/ctx.h.  Any thread. */
void jd_ctx_make(struct jd_ctx *c, void *stack_lo, size_t stack_size, jd_ctx_fn fn, void *arg)
{
	if (c->self == c)
		jd_ctx_destroy(c);
	memset(c, 0, sizeof(*c));
	c->self = c;
	c->stack_lo = stack_lo;
	c->stack_size = stack_size;
	c->fn = fn;
	c->arg = arg;
#ifdef JD_ASAN
	/* Frames abandoned on a reused stack leave their redzones poisoned. */
	__asan_unpoison_memory_region(stack_lo, stack_size);
#endif
#ifdef JD_TSAN
	c->tsan_fiber = __tsan_create_fiber(0);
#endif
#ifdef JD_VALGRIND
	c->valgrind_id = VALGRIND_STACK_REGISTER(stack_lo, (char *)stack_lo + stack_size);
#endif
#ifdef JD_SANITIZED
	jd_arch_make(c, stack_lo, stack_size, fiber_start, c);
#else
	jd_arch_make(c, stack_lo, stack_size, fn, arg);
#endif
}

/* jd_ctx_switch: see arch/ctx.h.  The thread running `from`. */
void jd_ctx_switch(struct jd_ctx *from, struct jd_ctx *to)
{
#ifdef JD_ASAN
	__sanitizer_start_switch_fiber(&from->asan_fake_stack, to->stack_lo, to->stack_size);
#endif
#ifdef JD_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
	jd_arch_switch(from, to);
#ifdef JD_ASAN
	__sanitizer_finish_switch_fiber(from->asan_fake_stack, NULL, NULL);
#endif
}

/* jd_ctx_switch_final: see arch/ctx.h.  The thread running `from`, which is finished. */
void jd_ctx_switch_final(struct jd_ctx *from, struct jd_ctx *to)
{
#ifdef JD_ASAN
	__sanitizer_start_switch_fiber(NULL, to->stack_lo, to->stack_size);
#endif
#ifdef JD_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
	jd_arch_switch(from, to);
	fprintf(stderr, "jschedd: fatal: a context ended by jd_ctx_switch_final() was resumed\n");
	abort();
}

/* jd_ctx_destroy: see arch/ctx.h.  Any thread, while `c` is not running. */
void jd_ctx_destroy(struct jd_ctx *c)
{
	if (c->self != c)
		return;
#ifdef JD_TSAN
	if (!c->is_thread && c->tsan_fiber)
		__tsan_destroy_fiber(c->tsan_fiber);
#endif
#ifdef JD_VALGRIND
	if (c->valgrind_id)
		VALGRIND_STACK_DEREGISTER(c->valgrind_id);
#endif
	c->tsan_fiber = NULL;
	c->valgrind_id = 0;
	c->self = NULL;
}

/* jd_ctx_name: see arch/ctx.h.  Any thread. */
const char *jd_ctx_name(void)
{
#if defined(JD_CTX_IMPL_UCONTEXT)
	return "ucontext";
#elif defined(__x86_64__)
	return "x86_64";
#else
	return "aarch64";
#endif
}
