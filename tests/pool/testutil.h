/* tests/pool/testutil.h: what the pool's tests share: cmocka, the sanitizer scale factor,
 * a deadline helper for bounded loops.
 *
 * Sizes in these tests are set for the 2-core machine in the release build.  Under
 * ThreadSanitizer (several times slower here, more at every contended atomic) the
 * stress counts are divided by TSAN_DIV, so that each program stays well under 30 s; the
 * default counts are the ones the brief asks for.
 */
#ifndef TESTS_POOL_TESTUTIL_H
#define TESTS_POOL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#ifdef TEST_TSAN
#define TSAN_DIV 4
#else
#define TSAN_DIV 1
#endif

static inline uint64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A bound for polling loops: generous (it only decides when a test gives up). */
#define TEST_PATIENCE_NS (10ull * 1000000000u)

#endif /* TESTS_POOL_TESTUTIL_H */
