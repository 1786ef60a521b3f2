/* daemon/fair/fair.h: fair admission, the layer that decides which queued job runs next.
 *
 * The loop thread admits jobs into per-client queues; worker threads take the next jobs
 * in small batches, in fair order, when their own work runs out, and report each one's
 * completion with its measured run time.  Everything here is data structures plus a
 * clock: no sockets, no JSON, no threads of its own, nothing but libc and one pthread
 * mutex.  The clock is injected, so tests drive it by hand (a virtual clock).
 *
 * What it keeps (see README.md for the design and the measured figures):
 * - per client: a name, a weight, four priority queues, a queue limit with an overflow
 *   strategy, counters, and its accumulated service (jobs, declared cost, run time);
 * - the policy choosing the next client: `fair` (default: weighted fair sharing of
 *   measured run time), `drr` (deficit round robin on declared cost) or `wrr` (weighted
 *   round robin on job count), switchable at run time without losing a queued job;
 * - within a client: strict priority (critical first), then earliest deadline first,
 *   then FIFO;
 * - deadlines (a job not started by its deadline expires and never runs; the caller
 *   drives a timer from jd_fair_next_deadline), backpressure, cancel, drain, a bounded
 *   window of dispatched-but-not-completed jobs, and the fairness figures (Jain's index
 *   and realized against configured share over a sliding window);
 * - capacities: counted resources of the instance (registered at run time with a
 *   capacity, e.g. "process" = 64, "fiber" = 4, "gpu" = 2) and needs classes (what a job
 *   holds while it runs: so many units of each).  jd_fair_take dispatches only a job
 *   whose needs fit and skips the others without their losing their place; completion
 *   gives the units back.  Per client: max_running (jobs in flight) and a per-resource
 *   maximum; pause / resume of a client or of the whole instance; hold / release of one
 *   queued job;
 * - dominant resource fairness (`fair` charges time x a class's dominant share over the
 *   counted resources) and reservations (a class passed over backfill_max times gets
 *   the units it lacks held for it: no job needing all of a resource starves).
 *
 * Jobs belong to the daemon.  It embeds a struct jd_fair_job in its own job record and
 * hands its address to jd_fair_admit; admission allocates nothing per job.  Each admitted
 * job ends in exactly one final state, reported once through the final hook:
 * dispatched, cancelled, expired or dropped.  (A rejected job never entered: its
 * jd_fair_admit returned an error, the client's `rejected` counter counts it, and no hook
 * fires for it.)
 *
 * Threads.  Every function is thread-safe (one mutex inside; each critical section is
 * O(classes x log clients) per job, or O(log jobs) amortized for jobs with deadlines).  The
 * intended split: the loop thread creates clients, admits, cancels, drains, expires and
 * reconfigures; workers call jd_fair_take and jd_fair_complete.  The hooks (final_cb,
 * wake_cb) are called WITHOUT the lock held, on whichever thread made the call that
 * caused them (a worker's jd_fair_take reports `dispatched` and `expired`), after the
 * job has left every structure here; so a hook may call any jd_fair_* function, and the
 * final hook of a cancelled, expired or dropped job may free the job.  The call that
 * caused a hook returns only after its hooks have run.
 *
 * Errors follow include/jsched/error.h: 0 (or a count) on success, a negative JSCHED_E*.
 */
#ifndef JD_FAIR_H
#define JD_FAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsched/error.h"

struct jd_fair;
struct jd_fair_client;

/* The four priorities, in service order: a client's critical jobs go before its high
 * ones, and so on.  (The numbering is the index of the queue, not a "level".) */
enum jd_fair_prio {
	JD_FAIR_CRITICAL = 0,
	JD_FAIR_HIGH = 1,
	JD_FAIR_NORMAL = 2,
	JD_FAIR_LOW = 3,
};
#define JD_FAIR_NPRIO 4

/* Capacities (see jd_fair_resource_add and jd_fair_class_add). */
#define JD_FAIR_MAX_RES 11	/* counted resources per instance */
#define JD_FAIR_MAX_CLASSES 16	/* needs classes per instance, class 0 included */
#define JD_FAIR_RES_NAME_MAX 31	/* bytes of a resource's name */
#define JD_FAIR_BACKFILL_DEFAULT 16u /* jd_fair_config.backfill_max's default */
/* A need of JD_FAIR_PER_JOB in jd_fair_class_add: each job of the class says how many
 * units of that resource it holds, in jd_fair_job.amount[] (at most JD_FAIR_AMOUNTS such
 * resources per class; amount[i] is the i-th of them in resource order). */
#define JD_FAIR_PER_JOB UINT32_MAX
#define JD_FAIR_AMOUNTS 2

/* The policy choosing which client's job goes next.  A zeroed config selects `fair`. */
enum jd_fair_policy {
	/* Weighted fair sharing of measured run time.  A job is charged at dispatch an
	 * estimate (the recent mean run time of the client's jobs of its class), corrected at completion to its
	 * measured run time, divided by the client's weight; the backlogged client with the
	 * least charged service goes next (a heap of clients: O(log clients)).  A client
	 * that was idle re-enters at the current minimum, so it cannot bank credit. */
	JD_FAIR_POLICY_FAIR = 0,
	/* Deficit round robin: each visit of a client in the round adds weight x quantum to
	 * its deficit; a job costs its declared cost hint.  O(1) per job when the quantum is
	 * at least the largest cost (the default quantum adapts to that). */
	JD_FAIR_POLICY_DRR = 1,
	/* Weighted round robin: a client is served up to `weight` jobs per round.  O(1). */
	JD_FAIR_POLICY_WRR = 2,
};

/* What a client's queue does when its max_queued is reached. */
enum jd_fair_overflow {
	/* The submit fails: jd_fair_admit returns JSCHED_EQUEUE_FULL, the job never
	 * entered, the client's `rejected` counter counts it. */
	JD_FAIR_REJECT = 0,
	/* Room is made by dropping the OLDEST job of the LOWEST priority among the client's
	 * queued jobs and the incoming one; that job ends `dropped`.  (If the incoming job's
	 * priority is lower than every queued job's, the incoming job is the one dropped.) */
	JD_FAIR_DROP_OLDEST = 1,
	/* Same, dropping the NEWEST job of the lowest priority: usually the incoming job
	 * itself, unless it outranks a queued job, which is then dropped instead. */
	JD_FAIR_DROP_NEWEST = 2,
	/* Nothing is dropped or refused for the client's limit: jd_fair_admit returns
	 * JD_FAIR_BLOCKED once the client's queue is at or over max_queued, and the caller
	 * must stop reading from that client.  Jobs the caller had already read (the rest
	 * of a batch frame) may still be admitted over the limit.  When the client's queue
	 * falls to half its limit, the client is put on the unblocked list and wake_cb
	 * fires; the caller then collects it with jd_fair_unblocked and resumes reading. */
	JD_FAIR_BLOCK = 3,
};

/* The final state of an admitted job, reported once through the final hook.  (The
 * values are also those of jd_fair_job.state after the hook.) */
enum jd_fair_final {
	JD_FAIR_DISPATCHED = 1,	/* returned by jd_fair_take: the caller runs it */
	JD_FAIR_CANCELLED = 2,	/* jd_fair_cancel or jd_fair_drain */
	JD_FAIR_EXPIRED = 3,	/* its deadline passed before it was dispatched */
	JD_FAIR_DROPPED = 4,	/* overflow strategy drop_oldest / drop_newest */
};
#define JD_FAIR_STATE_QUEUED 5	/* jd_fair_job.state between admit and its final state */
#define JD_FAIR_STATE_HELD 6	/* queued, but held (jd_fair_hold) */

/* Results of jd_fair_admit other than 0 (queued) and the negative errors. */
enum jd_fair_admit_result {
	JD_FAIR_QUEUED = 0,	  /* the job is queued */
	JD_FAIR_BLOCKED = 1,	  /* queued; the client is now blocked: stop reading it */
	JD_FAIR_DROPPED_NEW = 2,  /* the incoming job itself was dropped (hook has fired) */
};

/* Pairing-heap links (internal; here only because jd_fair_job embeds them). */
struct jd_fair_hnode {
	struct jd_fair_hnode *child, *next, *prev;
};

/* The queued-job record the daemon embeds in its own records (in the part of a job that
 * lives until the job ends: container_of gets back to it).  Zero it (or memset the enclosing record) before the first use; then set the
 * five "caller" fields and call jd_fair_admit.  Do not touch the rest. */
struct jd_fair_job {
	/* Set by the caller before jd_fair_admit; jd_fair never changes them. */
	uint64_t id;		/* the daemon's job id: for the daemon's own use */
	uint64_t deadline_ns;	/* absolute time on the fair clock; 0 = no deadline */
	uint32_t cost;		/* declared cost hint (drr's unit); 0 counts as 1 */
	uint8_t prio;		/* enum jd_fair_prio */
	uint8_t cls;		/* its needs class (jd_fair_class_add); 0 = needs nothing */
	/* Owned by jd_fair under its lock from admit until the final hook; after the hook
	 * `state` is the final state and may be read by whoever owns the job.  (Here, in
	 * what was padding, so that amount[] costs no byte.) */
	uint8_t state;		/* 0 = never admitted, JD_FAIR_STATE_QUEUED / _HELD, else
				 * enum jd_fair_final */
	/* Set by the caller before jd_fair_admit when its class has JD_FAIR_PER_JOB needs:
	 * the units of each of them it holds while it runs (0: none of that one). */
	uint32_t amount[JD_FAIR_AMOUNTS];

	/* Set by the caller before jd_fair_complete: the measured run time. */
	uint64_t run_ns;

	/* Owned by jd_fair under its lock from admit until the final hook. */
	struct jd_fair_client *client;
	uint64_t seq;		/* admission order */
	double charge;		/* `fair` policy: virtual service charged at dispatch */
	struct jd_fair_job *prev, *next; /* the client's arrival list for this priority */
	struct jd_fair_hnode edf;	 /* the priority's deadline heap (if deadline) */
	struct jd_fair_hnode exp;	 /* the global expiry heap (if deadline) */
};

/* The whole-instance configuration, copied by jd_fair_new.  Zero means "default" for
 * every field. */
struct jd_fair_config {
	enum jd_fair_policy policy;	/* default JD_FAIR_POLICY_FAIR */
	uint32_t max_queued;		/* global cap on queued jobs; 0 = none.  Hard: an
					 * admission over it fails with JSCHED_EQUEUE_FULL
					 * whatever the client's strategy (block clients get
					 * JD_FAIR_BLOCKED when their admission fills it) */
	uint32_t max_inflight;		/* dispatched but not yet completed; 0 = no limit.
					 * jd_fair_take returns no more than the free room,
					 * so fairness is decided here and not undone by a
					 * deep queue further down; every dispatched job must
					 * then be passed to jd_fair_complete */
	uint32_t drr_quantum;		/* drr units added per visit per unit of weight;
					 * 0 = the largest cost hint seen so far (keeps drr
					 * O(1): every visit can send at least one job) */
	uint64_t fair_estimate_ns;	/* `fair`: the run-time estimate of a client with no
					 * completed job yet; default 1 ms */
	uint64_t window_ns;		/* the fairness figures' sliding window; default
					 * 10 s (kept in JD_FAIR_WINDOW_SLICES slices, so it
					 * slides by 1/8); a job's service counts when it
					 * completes */
	/* Dominant resource fairness (policy fair; Ghodsi et al., NSDI 2011): > 0 turns it
	 * on.  A job is charged its measured time x its class's dominant share / weight,
	 * the dominant share being the largest need[r] / capacity[r] over the resources
	 * counted (jd_fair_resource_share), and at least drf_base: the share of a job that
	 * needs none of them.  The charge is scaled by 1 / drf_base, so such a job (class 0
	 * always) is charged its time as without DRF.  0: off, every job is charged its
	 * time. */
	double drf_base;
	/* Reservation: how many jobs of classes that take a resource the best waiting flow
	 * of another class needs may be dispatched past it (its client ahead of theirs in
	 * the policy's order, its needs not fitting) before the resources it lacks are held
	 * for it: no job of a class needing those is dispatched until one of its class
	 * is.  0: JD_FAIR_BACKFILL_DEFAULT; UINT32_MAX: never (a job needing all of a
	 * resource can then wait for ever behind a stream of small ones). */
	uint32_t backfill_max;
	bool scan_select;		/* choose the next client by a linear scan over all
					 * clients (the seed's shape), O(clients): only for
					 * the benchmark's baseline */

	/* The clock, in ns, monotonic; NULL = CLOCK_MONOTONIC.  Called at most once per
	 * jd_fair_* call (by jd_fair_admit only when a client's queue goes from empty to
	 * non-empty), with the lock held, from any thread. */
	uint64_t (*clock)(void *clock_ctx);
	void *clock_ctx;

	/* The final hook: called once per admitted job, without the lock, after the job
	 * has left every structure here (see "Threads" above).  For `dispatched` it is
	 * called before jd_fair_take returns the job, and must not free it.  May be NULL. */
	void (*final_cb)(struct jd_fair_job *job, enum jd_fair_final state, void *udata);
	/* Called without the lock when at least one blocked client was put on the
	 * unblocked list (any thread); typically uv_async_send.  May be NULL (then poll
	 * jd_fair_unblocked). */
	void (*wake_cb)(void *udata);
	void *udata;
};

/* A client's settings: at jd_fair_client_add and jd_fair_client_set.  Zero weight means
 * 1; zero in any limit means no limit. */
struct jd_fair_client_config {
	uint32_t weight;
	uint32_t max_queued;
	enum jd_fair_overflow overflow;
	uint32_t max_running;		/* jobs in flight at once (dispatched, not completed),
					 * of any class */
	uint32_t max_res[JD_FAIR_MAX_RES]; /* units of resource r held at once by its
					 * running jobs (e.g. max_processes) */
};

/* What the fairness figures measure service in.  JD_FAIR_METRIC_POLICY picks the unit of
 * the current policy: run time for fair, declared cost for drr, jobs for wrr. */
enum jd_fair_metric {
	JD_FAIR_METRIC_POLICY = 0,
	JD_FAIR_METRIC_JOBS = 1,
	JD_FAIR_METRIC_COST = 2,
	JD_FAIR_METRIC_TIME = 3,
};

/* The counters of one client (or, summed, of all). */
struct jd_fair_counters {
	uint64_t submitted;	/* admissions that entered (not rejected) */
	uint64_t dispatched, completed, cancelled, expired, dropped;
	uint64_t rejected;	/* admissions refused (JSCHED_EQUEUE_FULL) */
	uint64_t service_jobs;	/* = dispatched */
	uint64_t service_cost;	/* sum of the declared costs of dispatched jobs */
	uint64_t service_ns;	/* sum of the measured run times of completed jobs */
};

/* The sliding window's slices (window_ns / JD_FAIR_WINDOW_SLICES each). */
#define JD_FAIR_WINDOW_SLICES 8

/* Instance-wide figures: jd_fair_stats.  The fairness figures are judged slice by slice
 * of the window, among the clients backlogged (queue non-empty at some time) in each
 * slice, so that a client alone on the machine for a while does not count as unfairness
 * once others arrive. */
struct jd_fair_stats {
	enum jd_fair_policy policy;
	enum jd_fair_metric metric;	/* the unit the figures below use (never POLICY) */
	uint64_t queued, inflight;
	uint64_t held;			/* queued jobs held (not counted in queued) */
	bool paused;			/* the whole instance (jd_fair_pause(f, NULL, ...)) */
	uint32_t nres;			/* resources registered: res_cap/res_used[0..nres) */
	uint32_t res_cap[JD_FAIR_MAX_RES], res_used[JD_FAIR_MAX_RES];
	uint64_t cls_queued[JD_FAIR_MAX_CLASSES]; /* queued jobs per needs class */
	double cls_factor[JD_FAIR_MAX_CLASSES];	/* fair: the charge per ns of each class (DRF) */
	int reserved;			/* the class holding a reservation, or -1 */
	uint64_t reservations;		/* reservations made */
	uint32_t clients;		/* registered clients */
	uint32_t backlogged;		/* clients with queued jobs now */
	uint32_t window_clients;	/* clients backlogged in at least one slice */
	double jain;			/* Jain's index of (service / weight) over the
					 * clients backlogged in each slice, averaged over
					 * the slices weighted by their service; 1 =
					 * perfectly fair (and 1 when there is no service) */
	double window_service;		/* total service of backlogged clients, all slices */
	double window_weight;		/* total weight of the window clients */
	struct jd_fair_counters total;	/* summed over all clients, removed ones included */
	/* Per slice, oldest first (the last is the current, partial one), for
	 * jd_fair_client_stats: the service and the weight of the clients backlogged in
	 * it.  slice_last identifies the window. */
	uint64_t slice_last;
	double slice_service[JD_FAIR_WINDOW_SLICES];
	double slice_weight[JD_FAIR_WINDOW_SLICES];
};

/* One client's figures: jd_fair_client_stats. */
struct jd_fair_client_stats {
	const char *name;		/* borrowed: valid until the client is removed */
	struct jd_fair_client_config config;
	uint64_t queued, inflight;
	uint64_t queued_prio[JD_FAIR_NPRIO];
	uint64_t held;			/* its held jobs (not counted in queued) */
	uint32_t res_held[JD_FAIR_MAX_RES]; /* units its running jobs hold */
	bool paused;
	bool at_limit;			/* inflight has reached max_running */
	bool blocked;
	bool in_window;			/* backlogged in at least one slice of the window */
	double window_service;		/* its service in the slices where it was
					 * backlogged, in the stats' metric */
	double realized_share;		/* that, over all backlogged clients' service in
					 * the same slices (0 if none) */
	double configured_share;	/* its weight over the backlogged clients' total
					 * weight, averaged over the same slices (weighted
					 * by their service) */
	struct jd_fair_counters counters;
};

/* ---- the instance ------------------------------------------------------------------ */

/* jd_fair_new: create an instance from `cfg` (NULL = all defaults).  Returns 0 and sets
 * *out, JSCHED_EINVAL for a bad policy, or JSCHED_ENOMEM.  Any thread. */
int jd_fair_new(const struct jd_fair_config *cfg, struct jd_fair **out);

/* jd_fair_free: free the instance and every client still registered.  Queued jobs are
 * abandoned silently (no hook): drain the clients first if they matter.  No other thread
 * may be using the instance. */
void jd_fair_free(struct jd_fair *f);

/* jd_fair_set_policy: switch the policy at run time.  No queued job is lost or reordered
 * within its client; the new policy starts from equal footing for the clients backlogged
 * now (O(clients), once).  Returns 0 or JSCHED_EINVAL.  Any thread. */
int jd_fair_set_policy(struct jd_fair *f, enum jd_fair_policy policy);

/* jd_fair_set_max_inflight / jd_fair_set_max_queued: change the window or the global cap
 * at run time (0 = no limit).  Lowering one never drops or recalls anything.  Any
 * thread. */
void jd_fair_set_max_inflight(struct jd_fair *f, uint32_t max_inflight);
void jd_fair_set_max_queued(struct jd_fair *f, uint32_t max_queued);

/* jd_fair_pause: pause (paused = true) or resume client c, or the whole instance when c
 * is NULL.  A paused client's queued jobs stay where they are (cancel, drain and
 * deadlines act on them as on any), jd_fair_take skips them whatever the policy, and its
 * running jobs are not touched.  A paused client banks no credit: it comes back like a
 * client returning from idle (at the end of the round, or at the least vtime).  While
 * the instance is paused jd_fair_take dispatches nothing (it still expires).  Returns 0.
 * Any thread. */
int jd_fair_pause(struct jd_fair *f, struct jd_fair_client *c, bool paused);

/* ---- capacities -------------------------------------------------------------------- */

/* jd_fair_resource_add: register a counted resource `name` (1 to JD_FAIR_RES_NAME_MAX
 * bytes, copied) with `capacity` units.  Returns its index (0 ..  JD_FAIR_MAX_RES - 1),
 * JSCHED_EEXISTS (the name is taken), JSCHED_ELIMIT_EXCEEDED (JD_FAIR_MAX_RES already)
 * or JSCHED_EINVAL (bad name).  Any thread. */
int jd_fair_resource_add(struct jd_fair *f, const char *name, uint32_t capacity);

/* jd_fair_resource_find: the index of resource `name`, or JSCHED_ENOT_SUPPORTED when
 * there is none.  jd_fair_resource_name: its name (valid as long as the instance), or
 * NULL for an index not registered.  Any thread. */
int jd_fair_resource_find(struct jd_fair *f, const char *name);
const char *jd_fair_resource_name(struct jd_fair *f, int res);

/* jd_fair_resource_set: change resource `res`'s capacity at run time.  Lowering it below
 * what running jobs hold recalls nothing: no job needing it is dispatched until enough
 * have completed.  Returns 0 or JSCHED_EINVAL.  Any thread. */
int jd_fair_resource_set(struct jd_fair *f, int res, uint32_t capacity);

/* jd_fair_resource_take / jd_fair_resource_give: units of resource `res` held outside any
 * job (the daemon: a process a running call job starts, which needs a process slot as a
 * command does).  take returns 0 (n units now held), JSCHED_EAGAIN (they do not fit the
 * free capacity: nothing taken; try again after units come back) or JSCHED_EINVAL;
 * give returns them.  Any thread. */
int jd_fair_resource_take(struct jd_fair *f, int res, uint32_t n);
void jd_fair_resource_give(struct jd_fair *f, int res, uint32_t n);

/* jd_fair_resource_share: whether resource `res` counts in the dominant shares of dominant
 * resource fairness (jd_fair_config.drf_base): the resources people share and care
 * about (GPUs, licences), not internal limits.  Returns 0 or JSCHED_EINVAL.
 * jd_fair_set_drf: drf_base at run time (0: off); the next charges use it.
 * jd_fair_set_backfill_max: backfill_max at run time (0: the default).  Any thread. */
int jd_fair_resource_share(struct jd_fair *f, int res, bool counted);
void jd_fair_set_drf(struct jd_fair *f, double drf_base);
void jd_fair_set_backfill_max(struct jd_fair *f, uint32_t backfill_max);

/* jd_fair_class_add: the needs class of a job that holds need[r] units of each resource
 * r (indices from jd_fair_resource_add; the others 0) while it runs: an existing class
 * with the same needs, else a new one (a removed class's number first).  Class 0 needs
 * nothing and always exists.  need[r] == JD_FAIR_PER_JOB (at most JD_FAIR_AMOUNTS of
 * them): each job of the class holds its own jd_fair_job.amount[] of r (CPUs, memory),
 * so jobs of different sizes share one class.  Such a class fits while the job at its
 * head (the next one its policy order would serve) fits: a smaller job of the class
 * does not go past it, as in the DRF paper's progressive filling; other classes do,
 * under the reservation rule (README.md).  A job's DRF charge uses its own amounts.
 * Returns the class (put it in jd_fair_job.cls), JSCHED_ELIMIT_EXCEEDED
 * (JD_FAIR_MAX_CLASSES already), JSCHED_EINVAL (a need of an unregistered resource, or
 * an instance with scan_select, which knows class 0 only) or JSCHED_ENOMEM.  Any
 * thread. */
int jd_fair_class_add(struct jd_fair *f, const uint32_t need[JD_FAIR_MAX_RES]);

/* jd_fair_class_remove: forget class `cls` (not 0), which no job uses: its number may be
 * handed out again by jd_fair_class_add for other needs.  The caller must know that no
 * job it will still admit carries the number.  Returns 0, JSCHED_EAGAIN (jobs of the
 * class are queued, held or running) or JSCHED_EINVAL (class 0, or not a class).  Any
 * thread. */
int jd_fair_class_remove(struct jd_fair *f, int cls);

/* jd_fair_class_add_own: the same, but always a new class, even where one with the same
 * needs exists: a class of its own, so that jd_fair_take_classes can take its jobs alone
 * (the daemon's jobs its loop thread may run itself).  Returns as jd_fair_class_add. */
int jd_fair_class_add_own(struct jd_fair *f, const uint32_t need[JD_FAIR_MAX_RES]);

/* ---- clients ----------------------------------------------------------------------- */

/* jd_fair_client_add: register a client named `name` (copied; names need not be unique,
 * the handle is the identity) with `cfg` (NULL = weight 1, no limit, reject) and `udata`
 * for the caller.  Returns 0 and sets *out, JSCHED_EINVAL (bad overflow strategy), or
 * JSCHED_ENOMEM.  Any thread (the loop thread in the daemon). */
int jd_fair_client_add(struct jd_fair *f, const char *name,
		       const struct jd_fair_client_config *cfg, void *udata,
		       struct jd_fair_client **out);

/* jd_fair_client_set: change a client's weight, limits and strategy at run time.  Queued
 * jobs stay; a lowered limit applies to the next admission or dispatch (nothing is
 * dropped or recalled now); a weight change applies from the next job charged or the
 * next round.  Returns 0 or JSCHED_EINVAL.  Any thread. */
int jd_fair_client_set(struct jd_fair *f, struct jd_fair_client *c,
		       const struct jd_fair_client_config *cfg);

/* jd_fair_client_remove: unregister an idle client (nothing queued, nothing in flight)
 * and free it; its counters stay in the instance totals.  Returns 0, or JSCHED_EAGAIN if
 * it is not idle (drain it and wait for its in-flight jobs to complete).  Any thread. */
int jd_fair_client_remove(struct jd_fair *f, struct jd_fair_client *c);

/* jd_fair_client_udata / jd_fair_client_name: what was given to jd_fair_client_add.
 * Lock-free; valid until the client is removed. */
void *jd_fair_client_udata(const struct jd_fair_client *c);
const char *jd_fair_client_name(const struct jd_fair_client *c);

/* ---- jobs -------------------------------------------------------------------------- */

/* jd_fair_admit: queue `job` (caller fields set, the rest zero or left from a previous
 * final state) for client `c`.  Returns JD_FAIR_QUEUED (0), JD_FAIR_BLOCKED (queued; stop
 * reading from this client until jd_fair_unblocked returns it), JD_FAIR_DROPPED_NEW (the
 * incoming job ended `dropped`: its hook has run), or a negative error with no hook and
 * the job untouched: JSCHED_EQUEUE_FULL (client limit with `reject`, or the global cap),
 * JSCHED_EINVAL (bad priority, or the job is queued already).  A drop_oldest /
 * drop_newest admission that dropped a job already queued returns 0 after that job's
 * hook.
 * Any thread (the loop thread in the daemon). */
int jd_fair_admit(struct jd_fair *f, struct jd_fair_client *c, struct jd_fair_job *job);

/* jd_fair_take: dispatch up to `max` jobs, in fair order, into out[0..n) and return n
 * (0 when nothing is queued or the in-flight window is full).  Jobs whose deadline has
 * passed are expired first, never returned.  Only jobs that can run now are dispatched:
 * not held, of a client neither paused nor at one of its limits, and whose needs fit the
 * free capacity; every other job keeps its place, and its client keeps its place in the
 * policy (so a client's call jobs are not held up behind its commands waiting for a
 * process slot, nor anyone's behind another's).  A dispatched job holds its class's
 * units until jd_fair_complete.  Each returned job's hook (`dispatched`) has
 * run; the caller runs the job and passes it to jd_fair_complete when done (every
 * dispatched job, whatever the policy: that frees its in-flight room and lets its
 * client be removed).  Any thread (workers). */
size_t jd_fair_take(struct jd_fair *f, struct jd_fair_job **out, size_t max);

/* jd_fair_take_classes: jd_fair_take, but only jobs of the classes in the bit mask
 * `classes` (bit k: class k), as if the others did not fit: they keep their places, and
 * the policy orders the clients among the jobs it may take.  For a taker that can run
 * only some kinds of job.  Any thread. */
size_t jd_fair_take_classes(struct jd_fair *f, struct jd_fair_job **out, size_t max, unsigned classes);

/* jd_fair_complete: report that jobs[0..n), all dispatched by jd_fair_take, have
 * finished, each with its measured run time in job->run_ns.  Frees their in-flight room,
 * adds their run time to their clients' service, and (policy `fair`) corrects the charge
 * made at dispatch.  Call it once per dispatched job, before removing its client; the
 * job's memory may be reused once it returns.  Returns true when the completions made
 * room for jobs that had to wait (they gave back units, or took their client back under
 * its max_running) and some job can be taken now: a taker that had found nothing should
 * be woken.  Any thread (workers). */
bool jd_fair_complete(struct jd_fair *f, struct jd_fair_job *const *jobs, size_t n);

/* jd_fair_complete_take: jd_fair_complete(done, ndone) then jd_fair_take(out, max) under
 * one acquisition of the lock: what a worker calls when its batch is finished.  done and
 * out may be the same array (done[] is read before out[] is written).  Returns what
 * jd_fair_take returns; *room (if room is not NULL) what jd_fair_complete would have
 * returned, judged after the take: jobs that had to wait can be taken now, by someone
 * else.  Any thread (workers). */
size_t jd_fair_complete_take(struct jd_fair *f, struct jd_fair_job **done, size_t ndone,
			     struct jd_fair_job **out, size_t max, bool *room);

/* jd_fair_hold: hold queued `job`: it stays queued (counted against its client's limit,
 * cancellable, and it expires at its deadline) but is not dispatched until released.
 * jd_fair_release puts a held job back where it was in its client's order (by priority,
 * deadline and arrival; O(jobs of that priority that arrived after it)).  Both return 0,
 * or JSCHED_ENO_SUCH_JOB if the job is not queued (hold) / held (release).  Any thread. */
int jd_fair_hold(struct jd_fair *f, struct jd_fair_job *job);
int jd_fair_release(struct jd_fair *f, struct jd_fair_job *job);

/* jd_fair_cancel: cancel one queued (or held) job, O(1) (O(log jobs) amortized if it has a
 * deadline): it ends `cancelled` (the hook runs before this returns).  The daemon's job
 * table maps an id to its record, and so to the embedded jd_fair_job.  Returns 0, or
 * JSCHED_ENO_SUCH_JOB if the job is not queued (never admitted, or already in a final
 * state: dispatched jobs are the daemon's to cancel).  Any thread. */
int jd_fair_cancel(struct jd_fair *f, struct jd_fair_job *job);

/* jd_fair_drain: cancel every queued job of client `c`, held ones included (each ends
 * `cancelled`).  Returns
 * how many.  Any thread. */
size_t jd_fair_drain(struct jd_fair *f, struct jd_fair_client *c);

/* jd_fair_next_deadline: the earliest deadline among queued jobs, in clock ns, or
 * UINT64_MAX if none.  The caller arms a timer for it and calls jd_fair_expire when it
 * fires (and re-arms after each admission that returns an earlier deadline).  Any thread. */
uint64_t jd_fair_next_deadline(struct jd_fair *f);

/* jd_fair_expire: expire every queued job whose deadline is at or before now (the
 * clock); each ends `expired`.  Returns how many.  Any thread (the loop's timer). */
size_t jd_fair_expire(struct jd_fair *f);

/* jd_fair_ready: how many jobs jd_fair_take could return now (queued in classes that fit,
 * of clients not paused nor at a limit, bounded by the in-flight room; an upper bound,
 * since each dispatch uses capacity); a hint for waking idle workers.  Lock-free,
 * possibly stale.  Any thread. */
size_t jd_fair_ready(const struct jd_fair *f);

/* jd_fair_unblocked: pop up to `max` clients that were blocked (overflow strategy
 * `block`) and have room again into out[] and return how many; the caller resumes
 * reading from them.  Any thread (the loop thread, after wake_cb). */
size_t jd_fair_unblocked(struct jd_fair *f, struct jd_fair_client **out, size_t max);

/* ---- figures ----------------------------------------------------------------------- */

/* jd_fair_stats: instance-wide figures, with the fairness figures in unit `metric`.
 * O(clients).  Any thread. */
void jd_fair_stats(struct jd_fair *f, enum jd_fair_metric metric, struct jd_fair_stats *out);

/* jd_fair_client_stats: one client's figures; shares are relative to `totals`, a
 * jd_fair_stats result taken just before (pass NULL to leave the shares 0), and use
 * totals->metric.  O(1).  Any thread. */
void jd_fair_client_stats(struct jd_fair *f, struct jd_fair_client *c,
			  const struct jd_fair_stats *totals, struct jd_fair_client_stats *out);

/* jd_fair_foreach_client: call fn(client, arg) for each registered client, in no
 * particular order, WITH the lock held (fn must not call jd_fair_* on this instance;
 * collect the handles and call jd_fair_client_stats afterwards).  Any thread. */
void jd_fair_foreach_client(struct jd_fair *f, void (*fn)(struct jd_fair_client *c, void *arg),
			    void *arg);

/* jd_fair_policy_name / jd_fair_policy_parse: "fair", "drr", "wrr".  parse returns 0 and
 * sets *out, or JSCHED_EINVAL. */
const char *jd_fair_policy_name(enum jd_fair_policy p);
int jd_fair_policy_parse(const char *name, enum jd_fair_policy *out);

/* jd_fair_final_name: "dispatched", "cancelled", "expired", "dropped". */
const char *jd_fair_final_name(enum jd_fair_final s);

/* jd_fair_overflow_name / jd_fair_overflow_parse: "reject", "drop_oldest",
 * "drop_newest", "block". */
const char *jd_fair_overflow_name(enum jd_fair_overflow o);
int jd_fair_overflow_parse(const char *name, enum jd_fair_overflow *out);

#endif /* JD_FAIR_H */
