/* daemon/core/jobs_index.h: jobs in id order, with counts per state, so that `list` and
 * `drain` cost what they return rather than the table's size.
 *
 * An index is an array of chunks sorted by id; a chunk holds up to JD_IDX_CHUNK jobs in
 * increasing id order (NULL where a job left) and how many of them are in each state.  A
 * job enters at the end in the usual case (ids are handed out in increasing order), or
 * in its place (a graph inserted out of id order, a journal replayed from a snapshot).
 * A walk from an id finds its chunk by binary search and skips every chunk with no job in
 * the states asked for, so a page of `limit` records costs O(log chunks + the chunks it
 * passes + JD_IDX_CHUNK per chunk it reads).  The job table keeps three: every job, each
 * uid's, each client's (core/jobs.h).  Loop thread only.
 */
#ifndef JD_JOBS_INDEX_H
#define JD_JOBS_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JD_IDX_CHUNK 64
#define JD_IDX_NSTATES 10 /* JD_NSTATES (checked in jobs_index.c) */

struct jd_job;
struct jd_idx_chunk;

struct jd_idx {
	struct jd_idx_chunk **chunks;	/* sorted by id, none empty */
	size_t n, cap;
	size_t count;			/* jobs in it */
	size_t pos_off;			/* offsetof(struct jd_job, the jd_idx_pos for this
					 * index): set before the first add */
};

/* Where a job sits in one index (kept in the job): its chunk (its slot there is found
 * by a scan of at most JD_IDX_CHUNK pointers when it leaves, rather than kept: 8 bytes a
 * job instead of 16, for each of the three indexes). */
struct jd_idx_pos {
	struct jd_idx_chunk *chunk;
};

/* jd_idx_add: put j (its id and state set) into x, recording where in j's position for
 * x.  Returns 0 or JSCHED_ENOMEM (then j is not in x: its position's chunk is NULL). */
int jd_idx_add(struct jd_idx *x, struct jd_job *j);

/* jd_idx_remove: take j out of x (nothing if it is not in x). */
void jd_idx_remove(struct jd_idx *x, struct jd_job *j);

/* jd_idx_move: j, at pos in an index, goes from state `from` to `to` (called before its
 * state field changes, or after: the index reads only its arguments). */
void jd_idx_move(const struct jd_idx_pos *pos, unsigned from, unsigned to);

/* jd_idx_walk: call keep(job, arg) for jobs of x with id > after whose state is in the
 * bit mask `states` (bit s for state s), in increasing id order, until keep returns
 * false.  x must not change during the walk.  Returns how many slots it looked at. */
size_t jd_idx_walk(const struct jd_idx *x, uint64_t after, unsigned states,
		 bool (*keep)(struct jd_job *j, void *arg), void *arg);

/* jd_idx_free: release x's chunks (not the jobs). */
void jd_idx_free(struct jd_idx *x);

#endif /* JD_JOBS_INDEX_H */
