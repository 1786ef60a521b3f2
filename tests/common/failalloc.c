/* tests/common/failalloc.c: the link-time allocation wrappers (see failalloc.h). */
#include <stdbool.h>
#include <stddef.h>

#include "tests/common/failalloc.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
void *__wrap_aligned_alloc(size_t align, size_t size);

static long countdown = -1;	/* allocations left before the one that fails; -1: none */
static bool failed;		/* the armed failure happened */
static long calls;		/* allocation calls counted */
static long live;		/* blocks allocated and not freed */
static int held;		/* jtc_alloc_hold depth */

void jtc_alloc_fail_at(long n)
{
	if (n < 0) {
		countdown = -1;
		return;
	}
	countdown = n;
	failed = false;
}

bool jtc_alloc_failed(void)
{
	return failed;
}

long jtc_alloc_calls(void)
{
	return calls;
}

long jtc_alloc_live(void)
{
	return live;
}

void jtc_alloc_hold(void)
{
	held++;
}

void jtc_alloc_release(void)
{
	held--;
}

/* refuse: count one allocation call; returns whether it is the one to fail. */
static bool refuse(void)
{
	if (held)
		return false;
	calls++;
	if (countdown < 0)
		return false;
	if (countdown-- == 0) {
		failed = true;
		return true;
	}
	return false;
}

/* counted: count the block p (if any) as live; returns p. */
static void *counted(void *p)
{
	live += p != NULL;
	return p;
}

void *__wrap_malloc(size_t n)
{
	return counted(refuse() ? NULL : __real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t size)
{
	return counted(refuse() ? NULL : __real_calloc(n, size));
}

void *__wrap_realloc(void *p, size_t n)
{
	void *q;

	if (refuse())
		return NULL;
	q = __real_realloc(p, n);
	if (!p && q)
		live++;		/* realloc(NULL, n) is malloc(n) */
	else if (p && !q && n == 0)
		live--;		/* realloc(p, 0) freed p */
	return q;
}

void __wrap_free(void *p)
{
	live -= p != NULL;
	__real_free(p);
}

char *__wrap_strdup(const char *s)
{
	return counted(refuse() ? NULL : __real_strdup(s));
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return counted(refuse() ? NULL : __real_aligned_alloc(align, size));
}

void *jtc_malloc(size_t n)
{
	return __wrap_malloc(n);
}

void jtc_free(void *p)
{
	__wrap_free(p);
}
