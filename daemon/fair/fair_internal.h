/* daemon/fair/fair_internal.h: the structures shared by the files of daemon/fair.
 *
 * Everything in these structures is owned by the instance lock (struct jd_fair.lock)
 * unless a field says otherwise: the loop thread and the workers reach them only through
 * the functions of fair.h, which take the lock.  The files:
 *
 *   fair.c     the API: lock, admission, take, complete, cancel, drain, expiry, clients
 *   queue.c    one flow's four priority queues (arrival list + deadline heap each)
 *   policy.c   which client goes next: the fair heaps, the wrr/drr rings (one of each per
 *              needs class), the scan baseline
 *   window.c   the sliding window of service and the fairness figures
 *   pheap.c    the intrusive pairing heap the deadline orders use
 */
#ifndef JD_FAIR_INTERNAL_H
#define JD_FAIR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/fair/fair.h"

#define JD_FAIR_WINDOW_BUCKETS JD_FAIR_WINDOW_SLICES

/* Why a client is blocked (overflow strategy `block`); both bits must clear. */
#define JD_FAIR_BLK_CLIENT 1u	/* its own queue reached max_queued */
#define JD_FAIR_BLK_GLOBAL 2u	/* its admission filled the global cap */

/* One bucket of the sliding window: the service given in one window_ns / 8 slice, and
 * whether the client was backlogged in it (window.c). */
struct jd_fair_bucket {
	uint64_t epoch;		/* which slice (clock / slice width + 1); 0 = never used */
	uint64_t jobs, cost, ns;
	bool busy;
};

/* A client's queued jobs of one priority: all of them in arrival order (FIFO, and what
 * drop_oldest / drop_newest pick from), and those with a deadline also in a heap by
 * (deadline, seq), which is served first: earliest deadline first, then FIFO. */
struct jd_fair_pq {
	struct jd_fair_job *head, *tail;
	struct jd_fair_hnode *edf;
	uint64_t n;
} __attribute__((aligned(32)));

/* A flow: one client's queued jobs of one needs class, and its membership of that class's
 * policy structure (the fair heap or the ring).  Class 0's flow is embedded in the client
 * record; the others are allocated on the client's first job of another class. */
struct jd_fair_flow {
	uint64_t queued;	/* jobs in pq[] */
	uint64_t ticket;	/* wrr/drr: when it joined the tail of its class's ring */
	struct jd_fair_flow *rprev, *rnext; /* its class's ring; NULL if out */
	struct jd_fair_client *client;
	uint8_t nonempty;	/* bit p set: pq[p] has jobs (so the head is one lookup) */
	uint8_t cls;
	bool in;		/* in its class's policy structure */
	bool est_known;		/* est_ns comes from at least one completion */
	double est_ns;		/* fair: the run-time estimate of this client's jobs of this
				 * class, a mean of their recent completions (per class: a
				 * client's short calls say nothing of its long commands) */
	struct jd_fair_pq pq[JD_FAIR_NPRIO];
};

/* A client.  The fields are grouped by when they are touched, so that a dispatch at
 * 10,000 clients (where every client record is a cache miss) touches few lines: the
 * first (hot) line, the counters, class 0's flow and one priority's queue.  Allocated
 * 64-byte aligned. */
struct jd_fair_client {
	/* Hot: every admission, dispatch and completion (the first cache line). */
	uint64_t queued;	/* in its flows (held jobs not counted) */
	double vtime;		/* fair: charged service / weight */
	union {
		uint64_t deficit;	/* drr */
		uint64_t left;		/* wrr: jobs left in this turn */
	};
	uint32_t inflight;	/* dispatched, not completed (each is a job the caller holds:
				 * far fewer than 2^32) */
	uint32_t reg_idx;	/* index in fair->clients[] and the classes' heap_pos[] */
	/* Copies of cfg (which is cold) for every admission, dispatch and completion. */
	uint32_t weight, max_queued, max_running;
	uint8_t overflow;	/* enum jd_fair_overflow */
	bool res_limits;	/* some cfg.max_res[] is set */
	uint16_t fmask;		/* bit k set: flow k has queued jobs */
	uint16_t inmask;	/* bit k set: flow k is in its class's policy structure */
	bool visited;		/* wrr/drr: the current turn has started */
	uint8_t blocked;	/* JD_FAIR_BLK_* bits (strategy block) */
	bool paused;

	/* Counters (lines two and three). */
	_Alignas(64) struct jd_fair_counters ctr;
	struct jd_fair_flow *xflow;	/* flows of classes 1 .. JD_FAIR_MAX_CLASSES-1 */

	/* Class 0's flow: the queues, one line each. */
	struct jd_fair_flow flow0;

	/* Cold. */
	struct jd_fair_client_config cfg;
	struct jd_fair *fair;
	char *name;		/* immutable after add */
	void *udata;		/* immutable after add */
	uint64_t id;		/* registration order */
	uint64_t held;		/* its held jobs */
	struct jd_fair_job *held_head;	/* held jobs, linked through prev/next */
	uint64_t jump_mark;	/* drr_jump: visited in the jump numbered so */
	uint32_t res_held[JD_FAIR_MAX_RES];
	bool on_unblocked;	/* in fair->unblocked list */
	struct jd_fair_client *bprev, *bnext; /* fair->gblocked or fair->unblocked list */
	uint64_t busy_since;	/* clock when its queue last became non-empty */
	struct jd_fair_bucket win[JD_FAIR_WINDOW_BUCKETS]; /* the sliding window */
};

/* The hot line: every admission, dispatch and completion touches it, nothing else. */
_Static_assert(offsetof(struct jd_fair_client, ctr) == 64, "the client's hot fields fill one line");
_Static_assert(JD_FAIR_MAX_CLASSES <= 16, "fmask and inmask have 16 bits");

/* An entry of a `fair` heap: the client's vtime as an integer key (policy.c: vkey),
 * and its registry index. */
struct jd_fair_hent {
	uint64_t key;
	uint32_t ci;
	uint32_t pad;
};
#define JD_FAIR_NOPOS UINT32_MAX	/* heap_pos of a client not in the heap */

/* A needs class: what its jobs hold while they run, and the policy's structure over the
 * flows of that class that may be served (queued jobs, client neither paused nor at a
 * limit that the class's needs would pass). */
struct jd_fair_cls {
	/* Policy fair: the 4-ary min-heap of flows by their client's vtime. */
	struct jd_fair_hent *heap;	/* = heap_mem + 3: see grow_registry */
	uint32_t *heap_pos;		/* by registry index: position in heap, or NOPOS */
	uint32_t heap_n;		/* capacity (of both) is clients_cap (registry
					 * indices are 32 bits) */
	/* Policies wrr and drr: the ring, its cursor the flow with the least ticket. */
	uint32_t ring_n;
	struct jd_fair_flow *cur;
	uint64_t queued_in;		/* jobs queued in the flows of the structure */
	uint64_t queued;		/* jobs queued in all flows of the class */
	uint64_t running;		/* dispatched, not completed (classes with needs) */
	double factor;			/* fair: what a ns of its jobs is charged (DRF) */
	uint32_t rmask;			/* bit r set: need[r] > 0, or r in vmask */
	uint32_t passes;		/* jobs of classes sharing its resources dispatched
					 * while its best flow, ahead of them, did not fit */
	uint32_t need[JD_FAIR_MAX_RES];	/* 0 for the resources in vmask */
	uint32_t vmask;			/* bit r set: each job holds its own amount of r
					 * (JD_FAIR_PER_JOB) */
	/* 128 bytes with JD_FAIR_MAX_RES 11: f->cls[k] is then one shift from k (each
	 * enqueue, unqueue, take and completion indexes it; measured: 1 instruction less
	 * at each than at 104 bytes). */
	struct jd_fair_hent *heap_mem;
};
_Static_assert(sizeof(struct jd_fair_cls) == 128, "struct jd_fair_cls is 128 bytes");

struct jd_fair {
	pthread_mutex_t lock;

	/* Configuration (mutable through the setters, under the lock). */
	enum jd_fair_policy policy;
	uint32_t max_queued, drr_quantum;
	_Atomic uint32_t max_inflight;	/* also read lock-free by jd_fair_ready */
	uint64_t fair_estimate_ns, window_ns, slice_ns;
	bool scan_select;
	bool paused;			/* the whole instance */
	uint64_t (*clock)(void *clock_ctx);
	void *clock_ctx;
	void (*final_cb)(struct jd_fair_job *job, enum jd_fair_final state, void *udata);
	void (*wake_cb)(void *udata);
	void *udata;

	/* Registry. */
	struct jd_fair_client **clients;
	size_t nclients, clients_cap;
	uint64_t next_client_id;
	struct jd_fair_counters removed;	/* counters of removed clients */

	/* Jobs.  queued, inflight and ready are written under the lock and read lock-free
	 * by jd_fair_ready (relaxed atomics). */
	_Atomic uint64_t queued, inflight, ready;
	uint64_t held;
	uint64_t seq;
	struct jd_fair_hnode *expiry;	/* every queued job with a deadline, by deadline */
	/* drr's default quantum: the largest cost hint among the last 4096 to 8192
	 * admissions (two generations, so a one-off huge hint ages out). */
	uint32_t max_cost, max_cost_prev, cost_count;

	/* Capacities. */
	uint32_t nres, nclasses;
	uint32_t cls_free;		/* bit k: class k was removed and may be reused */
	/* Dominant resource fairness (policy fair): the resources counted in a class's
	 * dominant share, and the share of a job that needs none of them. */
	uint32_t drf_mask;
	double drf_base;		/* 0: off (every factor 1) */
	/* Reservation: the class whose best flow was passed over backfill_max times; the
	 * classes that would take what it waits for are not dispatched until it is. */
	int resv;			/* -1: none */
	uint32_t backfill_max;		/* UINT32_MAX: never reserve */
	uint64_t reservations;		/* made so far */
	uint32_t res_cap[JD_FAIR_MAX_RES], res_used[JD_FAIR_MAX_RES];
	char res_name[JD_FAIR_MAX_RES][JD_FAIR_RES_NAME_MAX + 1];
	struct jd_fair_cls cls[JD_FAIR_MAX_CLASSES];

	double vnow;			/* fair: the least vtime at the latest dispatch */
	uint64_t ticket;		/* wrr/drr: the last ticket given to a flow */
	uint64_t jumps;			/* drr: jumps made (jump_mark) */
	/* The scan baseline: the registry index being served. */
	size_t scan_cur;

	/* Backpressure. */
	struct jd_fair_client *gblocked;	/* clients with JD_FAIR_BLK_GLOBAL */
	struct jd_fair_client *unblocked;	/* blocked before, free now: for the caller */
};

/* Jobs that reached a final state under the lock, reported after it is released. */
struct jd_fair_done {
	struct jd_fair_job *head, *tail;
	bool wake;		/* a client was put on the unblocked list */
};

/* queue.c */
void jd_fq_push(struct jd_fair_flow *fl, struct jd_fair_job *job);
void jd_fq_insert(struct jd_fair_flow *fl, struct jd_fair_job *job);
struct jd_fair_job *jd_fq_head(const struct jd_fair_flow *fl);
void jd_fq_remove(struct jd_fair_flow *fl, struct jd_fair_job *job);
struct jd_fair_job *jd_fq_victim(const struct jd_fair_client *c, struct jd_fair_job *in,
				 bool oldest);
bool jd_fq_before(const struct jd_fair_job *a, const struct jd_fair_job *b);
bool jd_fq_deadline_less(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b);
bool jd_fq_expiry_less(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b);

/* policy.c */
unsigned jd_fp_fit(const struct jd_fair *f);
unsigned jd_fp_fit_among(const struct jd_fair *f, unsigned among);
void jd_fp_sync(struct jd_fair *f, struct jd_fair_client *c);
struct jd_fair_client *jd_fp_pick(struct jd_fair *f, unsigned fit);
struct jd_fair_job *jd_fp_head(const struct jd_fair *f, const struct jd_fair_client *c,
			       unsigned fit);
double jd_fp_served(struct jd_fair *f, struct jd_fair_client *c, const struct jd_fair_job *job);
void jd_fp_passed(struct jd_fair *f, unsigned fit, const struct jd_fair_client *c,
		  const struct jd_fair_job *job);
bool jd_fp_amounts_fit(const struct jd_fair *f, const struct jd_fair_cls *h,
		       const struct jd_fair_job *job);
double jd_fp_job_factor(const struct jd_fair *f, const struct jd_fair_cls *h,
			const struct jd_fair_job *job);
void jd_fp_factors(struct jd_fair *f);
void jd_fp_prefetch(const struct jd_fair *f);
void jd_fp_correct(struct jd_fair *f, struct jd_fair_client *c, double delta);
void jd_fp_rebuild(struct jd_fair *f);
void jd_fp_note_cost(struct jd_fair *f, uint32_t cost);
void jd_fp_renumber(struct jd_fair *f, size_t from, size_t to);

/* window.c */
uint64_t jd_fw_epoch(const struct jd_fair *f, uint64_t now);
void jd_fw_add(struct jd_fair_client *c, uint64_t epoch, uint64_t jobs, uint64_t cost,
	       uint64_t ns);
void jd_fw_busy(struct jd_fair_client *c, uint64_t now);
void jd_fw_idle(struct jd_fair *f, struct jd_fair_client *c, uint64_t now);
enum jd_fair_metric jd_fw_metric(const struct jd_fair *f, enum jd_fair_metric m);
void jd_fw_figures(const struct jd_fair *f, uint64_t now, struct jd_fair_stats *out);
void jd_fw_client_figures(const struct jd_fair *f, const struct jd_fair_client *c,
			  const struct jd_fair_stats *totals, struct jd_fair_client_stats *out);

/* The flow of class k of client c (k > 0 only once c->xflow is allocated). */
static inline struct jd_fair_flow *jd_fair_flow_of(struct jd_fair_client *c, unsigned k)
{
	return k == 0 ? &c->flow0 : &c->xflow[k - 1];
}

static inline const struct jd_fair_flow *jd_fair_cflow_of(const struct jd_fair_client *c,
							  unsigned k)
{
	return k == 0 ? &c->flow0 : &c->xflow[k - 1];
}

/* The units of resource r (in h->vmask) that job, of class h, holds: its amount[i] for
 * the i-th resource of vmask. */
static inline uint32_t jd_fair_amount(const struct jd_fair_cls *h, const struct jd_fair_job *job,
				      unsigned r)
{
	return job->amount[__builtin_popcount(h->vmask & ((1u << r) - 1))];
}

static inline uint32_t jd_fair_job_cost(const struct jd_fair_job *job)
{
	return job->cost != 0 ? job->cost : 1;
}

#endif /* JD_FAIR_INTERNAL_H */
