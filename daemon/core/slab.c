/* slab.c: records of one size from pages of their own (slab.h). */
#include "daemon/core/slab.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jsched/error.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SLAB_ASAN)
#define SLAB_ASAN 1
#endif

#ifdef SLAB_ASAN
/* The runtime's interface, declared here as arch/ctx.c does (the header's presence
 * varies between compiler versions). */
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define POISON(p, n) __asan_poison_memory_region((p), (n))
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A page: this header, then per_page records.  A full page is on no list (its records'
 * frees find it by address). */
struct jd_slab_page {
	struct jd_slab *owner;
	struct jd_slab_page *next, *prev;	/* on owner->partial (or next on owner->empty) */
	void *free;		/* freed records, linked through their first word */
	uint32_t used;		/* records handed out */
	uint32_t fresh;		/* records from this index on were never handed out: a new
				 * page is not written (its memory not touched) beyond what
				 * is used */
};

#define HEADER ((sizeof(struct jd_slab_page) + 15u) & ~(size_t)15u)

int jd_slab_init(struct jd_slab *s, size_t size)
{
	memset(s, 0, sizeof(*s));
	if (size == 0 || size > JD_SLAB_PAGE / 4)
		return JSCHED_EINVAL;
	s->size = (size + 15u) & ~(size_t)15u;
	s->per_page = (uint32_t)((JD_SLAB_PAGE - HEADER) / s->size);
	return 0;
}

/* page_map: a fresh page, aligned to its size; NULL without memory.  First one mapping
 * of the page's size: the kernel places a new mapping just below the last, so after one
 * aligned page the next ones are aligned too, and adjacent ones merge into one mapping
 * in the kernel's map count.  Only when it is not aligned, one of twice the size, cut
 * down to the aligned page inside it. */
static void *page_map(void)
{
#ifdef SLAB_ASAN
	return aligned_alloc(JD_SLAB_PAGE, JD_SLAB_PAGE);
#else
	const size_t n = JD_SLAB_PAGE;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (((uintptr_t)p & (n - 1)) == 0)
		return p;
	munmap(p, n);
	p = mmap(NULL, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + n - 1) & ~(uintptr_t)(n - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + n < p + 2 * n)
		munmap(a + n, (size_t)(p + 2 * n - (a + n)));
	return a;
#endif
}

static void page_unmap(struct jd_slab_page *pg)
{
#ifdef SLAB_ASAN
	UNPOISON(pg, JD_SLAB_PAGE);
	free(pg);
#else
	munmap(pg, JD_SLAB_PAGE);
#endif
}

static void partial_push(struct jd_slab *s, struct jd_slab_page *pg)
{
	pg->prev = NULL;
	pg->next = s->partial;
	if (s->partial)
		s->partial->prev = pg;
	s->partial = pg;
}

static void partial_unlink(struct jd_slab *s, struct jd_slab_page *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		s->partial = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	pg->next = pg->prev = NULL;
}

/* page_new: an empty page for s (a kept one, else a fresh one), on the partial list
 * (the pages with room); NULL without memory. */
static struct jd_slab_page *page_new(struct jd_slab *s)
{
	struct jd_slab_page *pg = s->empty;

	if (pg) {
		s->empty = pg->next;
		s->n_empty--;
	} else {
		if (!(pg = page_map()))
			return NULL;
		s->pages++;
		s->maps++;
		POISON((char *)pg + HEADER, JD_SLAB_PAGE - HEADER);
	}
	*pg = (struct jd_slab_page){.owner = s};
	partial_push(s, pg);
	return pg;
}

void *jd_slab_alloc(struct jd_slab *s)
{
	struct jd_slab_page *pg = s->partial;
	char *r;

	if (!pg && !(pg = page_new(s)))
		return NULL;
	if (pg->free) {
		r = pg->free;
		UNPOISON(r, s->size);
		memcpy(&pg->free, r, sizeof(pg->free));
	} else {
		r = (char *)pg + HEADER + (size_t)pg->fresh++ * s->size;
		UNPOISON(r, s->size);
	}
	if (++pg->used == s->per_page)
		partial_unlink(s, pg);
	s->used++;
	memset(r, 0, s->size);
	return r;
}

void jd_slab_free(void *p)
{
	if (!p)
		return;
	struct jd_slab_page *pg = (struct jd_slab_page *)((uintptr_t)p & ~(uintptr_t)(JD_SLAB_PAGE - 1));
	struct jd_slab *s = pg->owner;

	if (pg->used == s->per_page)
		partial_push(s, pg);
	memcpy(p, &pg->free, sizeof(pg->free));
	pg->free = p;
	POISON(p, s->size);
	s->used--;
	if (--pg->used > 0)
		return;
	partial_unlink(s, pg);
	pg->next = s->empty;
	s->empty = pg;
	s->n_empty++;
}

size_t jd_slab_trim(struct jd_slab *s, size_t keep)
{
	struct jd_slab_page **link = &s->empty;
	size_t n = 0;

	/* keep the ones emptied last (the list's head): the likeliest still in the cache */
	for (size_t k = 0; k < keep && *link; k++)
		link = &(*link)->next;
	while (*link) {
		struct jd_slab_page *pg = *link;

		*link = pg->next;
		s->n_empty--;
		s->pages--;
		s->unmaps++;
		page_unmap(pg);
		n++;
	}
	return n;
}

void jd_slab_destroy(struct jd_slab *s)
{
	struct jd_slab_page *pg, *next;

	for (pg = s->partial; pg; pg = next) {
		next = pg->next;
		page_unmap(pg);
	}
	for (pg = s->empty; pg; pg = next) {
		next = pg->next;
		page_unmap(pg);
	}
	/* Full pages are on no list: their records must all be gone (slab.h), so none is. */
	s->partial = s->empty = NULL;
	s->n_empty = 0;
	s->pages = 0;
	s->used = 0;
}
