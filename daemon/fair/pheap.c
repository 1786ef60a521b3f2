/* daemon/fair/pheap.c: an intrusive pairing heap (see pheap.h).
 *
 * Representation: the root has no siblings; each node points to its leftmost child
 * (`child`) and its right sibling (`next`); `prev` points to the left sibling, or to the
 * parent for a leftmost child (told apart by parent->child == node).  Removal cuts the
 * node out of its sibling list and melds the two-pass pairing of its children back in.
 */
#include <stddef.h>

#include "daemon/fair/pheap.h"

/* meld: join two detached heaps; returns the new root. */
static struct jd_fair_hnode *meld(struct jd_fair_hnode *a, struct jd_fair_hnode *b,
				  jd_pheap_less less)
{
	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	if (less(b, a)) {
		struct jd_fair_hnode *t = a;
		a = b;
		b = t;
	}
	/* b becomes a's leftmost child. */
	b->prev = a;
	b->next = a->child;
	if (a->child != NULL)
		a->child->prev = b;
	a->child = b;
	a->prev = NULL;
	a->next = NULL;
	return a;
}

/* merge_pairs: the two-pass pairing of a sibling list starting at first; returns the
 * root of the result.  Pass one melds neighbours left to right and stacks the pairs
 * (through `next`); pass two melds the stack, so right to left. */
static struct jd_fair_hnode *merge_pairs(struct jd_fair_hnode *first, jd_pheap_less less)
{
	struct jd_fair_hnode *stack = NULL;

	while (first != NULL) {
		struct jd_fair_hnode *a = first, *b = a->next, *pair;

		if (b == NULL) {
			first = NULL;
			a->prev = a->next = NULL;
			pair = a;
		} else {
			first = b->next;
			a->prev = a->next = NULL;
			b->prev = b->next = NULL;
			pair = meld(a, b, less);
		}
		pair->next = stack;
		stack = pair;
	}
	struct jd_fair_hnode *root = NULL;
	while (stack != NULL) {
		struct jd_fair_hnode *next = stack->next;
		stack->next = NULL;
		root = meld(root, stack, less);
		stack = next;
	}
	return root;
}

/* jd_pheap_insert: meld the detached node n, as a one-node heap, into *root.  O(1). */
void jd_pheap_insert(struct jd_fair_hnode **root, struct jd_fair_hnode *n, jd_pheap_less less)
{
	n->child = n->next = n->prev = NULL;
	*root = meld(*root, n, less);
}

/* jd_pheap_remove: cut n out (the root, or a subtree from its sibling list) and meld the
 * pairing of its children back into *root.  O(log n) amortized. */
void jd_pheap_remove(struct jd_fair_hnode **root, struct jd_fair_hnode *n, jd_pheap_less less)
{
	struct jd_fair_hnode *kids = n->child;

	if (n == *root) {
		*root = merge_pairs(kids, less);
	} else {
		if (n->prev->child == n)
			n->prev->child = n->next;
		else
			n->prev->next = n->next;
		if (n->next != NULL)
			n->next->prev = n->prev;
		*root = meld(*root, merge_pairs(kids, less), less);
	}
	n->child = n->next = n->prev = NULL;
}
