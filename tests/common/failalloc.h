/* tests/common/failalloc.h: make the Nth allocation fail, and count the blocks.
 *
 * A test that links tests/common/failalloc.o is linked with --wrap for malloc, calloc,
 * realloc, free, strdup and aligned_alloc (TESTS_COMMON_FAILALLOC_LDFLAGS in
 * tests/build.mk), so every call the objects and static libraries of that program make
 * comes here; shared libraries (jansson) get the same allocator through
 * json_set_alloc_funcs(jtc_malloc, jtc_free).  A run arms one failure with
 * jtc_alloc_fail_at(n): the allocation n from then (0: the next) returns NULL, and
 * jtc_alloc_failed() says whether that happened.  Driving n = 0, 1, 2 ... until a run
 * meets no failure visits every allocation of the run.  jtc_alloc_live() counts the blocks
 * allocated and not freed, so a test can check that an error path leaks nothing without
 * ASan.  For single-threaded tests: the counters are plain variables.
 */
#ifndef JTC_FAILALLOC_H
#define JTC_FAILALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* jtc_alloc_fail_at: arm the failure of the allocation `n` from now (0: the next one),
 * clearing what jtc_alloc_failed reports; n < 0 disarms (and keeps that report). */
void jtc_alloc_fail_at(long n);

/* jtc_alloc_failed: whether the armed failure has happened since jtc_alloc_fail_at. */
bool jtc_alloc_failed(void);

/* jtc_alloc_calls: the allocation calls made so far (refused ones included), for a test
 * that counts how many a run makes or checks that a step makes none. */
long jtc_alloc_calls(void);

/* jtc_alloc_live: the blocks allocated through the wrappers and not yet freed. */
long jtc_alloc_live(void);

/* jtc_alloc_hold, jtc_alloc_release: between the two (they nest), allocations are
 * neither counted nor refused, for the test's own scaffolding (a scripted peer writing
 * its frame); blocks are still counted in jtc_alloc_live. */
void jtc_alloc_hold(void);
void jtc_alloc_release(void);

/* jtc_malloc, jtc_free: the wrapped malloc and free, for json_set_alloc_funcs. */
void *jtc_malloc(size_t n);
void jtc_free(void *p);

#endif /* JTC_FAILALLOC_H */
