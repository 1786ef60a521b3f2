/* daemon/core/slab.h: records of one size from pages of their own, the pages that hold no
 * record given back to the kernel whole.
 *
 * The job table takes each job's run part (struct jd_job_run: what only a job not yet
 * final needs) from here instead of malloc.  From malloc, a run part sat between its job's
 * record and the next job's, so once the jobs had ended the retained ones kept a 352-byte
 * hole each between them: no page of a million drained jobs' last 10,000 was free, and
 * malloc_trim could return none of it.  From pages of their own, the run parts of ended
 * jobs leave whole pages, and the records that stay lie next to each other in the heap.
 *
 * A page is JD_SLAB_PAGE bytes, aligned to its size, so a record's page is its address
 * rounded down: jd_slab_free needs no table and no size.  A page is mapped on its own
 * (mmap), never carved from malloc's heap, so that unmapping it is a real give-back; an
 * ASan build takes it from aligned_alloc instead, so that LeakSanitizer still scans the
 * pointers the records hold, and it poisons every free record.  A page left empty is
 * kept for the next records until jd_slab_trim: unmapping it at once cost the daemon a
 * page mapped and unmapped per 190 jobs and half again as many page faults when batches
 * of 1,000 came and went (100,000 noops, 4 batches in flight: 722 mmap and 1,156 munmap
 * calls, 18,876 faults against malloc's 12,399), as each batch's pages emptied before the
 * next one came.  The table trims at the daemon's give-back moments (jd_jobs_shrink).
 * The table's second slab holds jobs' names of up to 15 bytes in 16-byte records
 * (jd_job_set_name, jobs.h), where malloc made each a 32-byte chunk.
 * Loop thread only (the owner's thread): no locks.
 */
#ifndef JD_SLAB_H
#define JD_SLAB_H

#include <stddef.h>
#include <stdint.h>

/* 64 KiB: 190 run parts a page.  A smaller page is more mappings to make (and more entries
 * in the kernel's map, where adjacent pages do not merge); a larger one keeps more
 * resident when few records are in use (a page with one record left). */
#define JD_SLAB_PAGE 65536u

struct jd_slab_page;

struct jd_slab {
	size_t size;			/* a record's bytes (a multiple of 16) */
	uint32_t per_page;		/* records a page holds */
	struct jd_slab_page *partial;	/* pages with a free record and a used one */
	struct jd_slab_page *empty;	/* pages with no record, kept until jd_slab_trim */
	size_t n_empty;			/* on that list */
	size_t pages;			/* mapped now, the empty ones included */
	size_t used;			/* records handed out and not freed */
	uint64_t maps, unmaps;		/* pages mapped and given back, ever */
};

/* jd_slab_init: an empty slab of records of size bytes (at most a quarter of a page);
 * maps nothing yet.  0, or JSCHED_EINVAL for a size that does not fit. */
int jd_slab_init(struct jd_slab *s, size_t size);

/* jd_slab_alloc: a record of s, zeroed (as calloc); NULL without memory. */
void *jd_slab_alloc(struct jd_slab *s);

/* jd_slab_free: give back p, a record from jd_slab_alloc of any slab (its page knows
 * which); NULL is fine.  A page left without a record is kept (s->empty). */
void jd_slab_free(void *p);

/* jd_slab_trim: unmap the pages of s that hold no record, all but keep of them.  Returns
 * how many it unmapped. */
size_t jd_slab_trim(struct jd_slab *s, size_t keep);

/* jd_slab_destroy: unmap every page of s; no record of s may be used after. */
void jd_slab_destroy(struct jd_slab *s);

#endif
