/* daemon/fair/pheap.h: an intrusive pairing heap.
 *
 * The queued jobs with a deadline sit in two of these: their priority's earliest-deadline
 * heap in their client, and the instance's expiry heap.  The links live in the job
 * (struct jd_fair_hnode in fair.h), so inserting allocates nothing.  Insert and meld are
 * O(1); pop and removing an arbitrary node are O(log n) amortized.
 *
 * Why a pairing heap and not a binary heap over an array: an array needs growing (an
 * allocation that can fail inside an admission) and an index stored back in each job; a
 * pairing heap needs neither, and its removal of an arbitrary node (cancel) is as cheap
 * as a pop.  Not thread-safe: the caller holds the instance lock.
 */
#ifndef JD_FAIR_PHEAP_H
#define JD_FAIR_PHEAP_H

#include <stdbool.h>

#include "daemon/fair/fair.h"

/* The order: true if a must come out before b. */
typedef bool (*jd_pheap_less)(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b);

/* jd_pheap_insert: add the detached node n to the heap at *root. */
void jd_pheap_insert(struct jd_fair_hnode **root, struct jd_fair_hnode *n, jd_pheap_less less);

/* jd_pheap_remove: take node n (which must be in the heap at *root) out of it. */
void jd_pheap_remove(struct jd_fair_hnode **root, struct jd_fair_hnode *n, jd_pheap_less less);

#endif /* JD_FAIR_PHEAP_H */
