/* daemon/core/array.h: job arrays: one parent job and its elements, kept compactly.
 *
 * An array is one job in the table, its parent, with the spec every element shares and
 * one 32-byte slot per element (struct jd_array_elem).  The parent's id is P; element
 * k (0-based position, index jp_array_index(k)) has id P + 1 + k, so ids of an array are
 * reserved in one block at submit and an element is found from its id in O(log arrays).
 *
 * Elements become jobs of the table only while they are needed:
 *   - released: when the parent's gates open, the array releases elements into its
 *     client's fair queue in position order, keeping at most `window` released and not
 *     yet final (the %N of the indices, or JD_ARRAY_WINDOW) and never more than the
 *     client's queue has room for; each element that settles releases the next;
 *   - compacted: an element that has settled (and that no wait still reads) leaves the
 *     table; its slot keeps its state, cause, exit code or signal, times, and (only when
 *     there is one) its reason, value and output;
 *   - shown again (a "view"): a request that names a compacted element's id gets a final
 *     job made from its slot and the shared spec, retained like any final job (and
 *     forgotten by retention; the slot stays).  A request naming an element not yet
 *     released gets it made now, waiting, held back by the array until its turn.
 * So a 100,000-element array costs one spec, 3.2 MB of slots and the jobs in its window.
 *
 * The parent's state follows its elements: waiting (gates closed), queued, running (some
 * element started), and final once every element is: succeeded if all succeeded, else
 * failed if any failed, else cancelled, expired or dropped, in that order; its cause and
 * reason are those of the first element (by position) that did not succeed.  Cancel,
 * hold and release of the parent act on every element; a dependency on the parent waits
 * for the whole array.
 *
 * Loop thread, as the rest of the table.
 */
#ifndef JD_ARRAY_H
#define JD_ARRAY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/core/jobs.h"
#include "proto/jproto.h"

/* Released elements not yet final, at most, when the indices have no %N. */
#define JD_ARRAY_WINDOW 1024u

/* What an element's slot keeps beyond the fixed part: only elements that have one. */
struct jd_array_extra {
	char *reason;
	json_t *value;
	unsigned char *out, *err;
	size_t out_len, err_len;
};

enum {
	JD_ELEM_LIVE = 1,	/* a job of the table stands for it (not compacted) */
	JD_ELEM_RELEASED = 2,	/* released into the fair queue (counted in `released`) */
	JD_ELEM_OUT_TRUNC = 4,
	JD_ELEM_ERR_TRUNC = 8,
	JD_ELEM_TIMED_OUT = 16,
	JD_ELEM_WAS_RUNNING = 32,	/* recovery: recorded running, no final state */
};

/* One element.  state: JD_WAITING until final (the live job, if any, has the truth). */
struct jd_array_elem {
	uint8_t state;		/* enum jd_state */
	uint8_t cause;		/* enum jp_cause */
	uint8_t flags;		/* JD_ELEM_* */
	uint8_t end;		/* enum jd_exec_end, exec */
	int32_t code;		/* exit code or signal */
	uint64_t started_ms, finished_ms;
	struct jd_array_extra *extra;	/* or NULL */
};

struct jd_array {
	struct jd_job *parent;
	json_t *spec;			/* the shared spec (without deps, deadline, ref, key) */
	struct jp_job_spec sp;		/* parsed from spec; sp.array holds the indices */
	uint64_t n;			/* elements */
	uint32_t window;		/* released and not final, at most */
	uint32_t released;		/* released and not final, now */
	uint64_t next;			/* positions below it were released or ended */
	uint64_t done;			/* final elements */
	uint64_t counts[JD_NSTATES];	/* elements in each state (waiting: not released) */
	uint64_t first_bad;		/* position of the first that did not succeed, or n */
	bool active;			/* the parent's gates opened */
	bool held;			/* the parent is held: nothing more is released */
	bool stopped;			/* cancelled: nothing more is released */
	struct jd_array *anext, *aprev;	/* the table's active arrays */
	struct jd_array_elem el[];
};

/* jd_array_new: an array for parent job j from its parsed spec sp (which has `array`):
 * the shared spec is copied.  Returns NULL on ENOMEM.  jd_array_free: free it. */
struct jd_array *jd_array_new(struct jd_job *j, const struct jp_job_spec *sp);
void jd_array_free(struct jd_array *a);

/* jd_array_mem_bytes: the memory a holds: itself, its slots, the extras of the elements
 * that have one (reason, output; a result counted at 64 bytes, its tree not walked),
 * with malloc's 16 bytes per allocation.  O(elements). */
size_t jd_array_mem_bytes(const struct jd_array *a);

/* jd_array_index_of: element pos's index. */
int64_t jd_array_index_of(const struct jd_array *a, uint64_t pos);

/* jd_arrays_add / jd_arrays_remove: enter a parent in the table's index of arrays (ids in
 * increasing order) / take it out (when it is forgotten). */
int jd_arrays_add(struct jd_jobs *t, struct jd_job *parent);
void jd_arrays_remove(struct jd_jobs *t, struct jd_job *parent);

/* jd_arrays_find: the parent whose array holds element id, or NULL; *pos its position. */
struct jd_job *jd_arrays_find(const struct jd_jobs *t, uint64_t id, uint64_t *pos);

/* jd_arrays_refill_all: jd_array_refill for every array still releasing (room in a
 * client's queue comes back when any of its jobs ends: the table calls it after settling). */
void jd_arrays_refill_all(struct jd_jobs *t);

/* jd_array_view_fill: fill job j (made from the shared spec) with compacted element pos's
 * result: a view (array.h). */
void jd_array_view_fill(struct jd_job *j, const struct jd_array *a, uint64_t pos);

/* jd_array_elem_restore: recovery: element pos ended as v says (state, cause, end, code,
 * flags, times), with its reason, value (borrowed) and output (copied).  0 or
 * JSCHED_ENOMEM. */
int jd_array_elem_restore(struct jd_array *a, uint64_t pos, const struct jd_array_elem *v,
			  const char *reason, size_t rl, json_t *value, const void *out, size_t ol,
			  const void *err, size_t el);

/* jd_array_activate: parent's gates opened (it is queued now): release elements. */
void jd_array_activate(struct jd_jobs *t, struct jd_job *parent);

/* jd_array_refill: release elements while the window and the client's queue have room. */
void jd_array_refill(struct jd_jobs *t, struct jd_array *a);

/* jd_array_elem_settled: live element j has settled: its slot takes its result, the next
 * element is released, and the parent ends with its last element. */
void jd_array_elem_settled(struct jd_jobs *t, struct jd_job *j);

/* jd_array_elem_running: element j started: the parent runs too (once). */
void jd_array_elem_running(struct jd_jobs *t, struct jd_job *j);

/* jd_array_cancel: cancel every element not final (those not made yet at once, live ones
 * through jd_job_cancel).  Returns true if some element is running (asked to stop). */
bool jd_array_cancel(struct jd_jobs *t, struct jd_job *parent, enum jp_cause cause);

/* jd_array_hold: hold (or release) the array: its queued elements, and whether more are
 * released.  Returns true if anything changed. */
bool jd_array_hold(struct jd_jobs *t, struct jd_job *parent, bool hold);

/* jd_array_finish_pending: a parent that ends before its elements ran (a dependency, a
 * deadline while it waited): every element not final ends the same way. */
void jd_array_finish_pending(struct jd_jobs *t, struct jd_job *parent, enum jd_state s,
			     enum jp_cause cause, const char *reason);

/* jd_array_elem_state: the state of element pos, as its record would say it. */
enum jd_state jd_array_elem_state(const struct jd_jobs *t, const struct jd_job *parent,
				  uint64_t pos);

#endif /* JD_ARRAY_H */
