/* daemon/core/jobs.h: the job table, job states and the dependency gates.
 *
 * Every job the daemon ever accepts has a struct jd_job here from submission until it is
 * forgotten (its result retained for `retention.jobs` jobs and `retention.seconds`).
 * Ids are handed out in increasing order and never reused, so an id below the next one
 * that is no longer in the table is "forgotten", and any other id "never issued".
 *
 * State changes go through this file and nowhere else, so that each job reaches exactly
 * one final state, once: jd_job_finish() is the single door, and it is idempotent on
 * final jobs (a failed attempt that the job's retry policy takes is not final: the job is
 * retrying; and only jd_job_retry, the retry operation, takes a final job back).  A final
 * state is then "settled" (dependents judged here, the record queued
 * for retention, and through the hooks waiters answered and watchers told) by
 * jd_jobs_settle(), which the loop thread runs after every message and every completion
 * batch: the work that a state change triggers never runs inside the code that caused it
 * (a cancel in the middle of a batch, a drop inside an admission).
 *
 * The table knows nothing above it.  It reports through struct jd_jobs_hooks, which the
 * daemon installs (daemon.c), as the fair layer reports through its final_cb: `change`
 * for every change a client could be told of (submitted, queued, running, final,
 * forgotten, a client's settings, the id counter), `settled` and `settle_done` for the
 * fan-out of settling, and `stop` to ask whoever runs a job to stop it.
 *
 * Threads: the loop thread owns the table and every field not marked otherwise.  A
 * running job's fields marked "worker" belong to the worker running it until it posts
 * its completion (runner.c), which hands them back to the loop thread.
 */
#ifndef JD_JOBS_H
#define JD_JOBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/core/slab.h"
#include "daemon/core/timeheap.h"
#include "daemon/core/jobs_index.h"
#include "daemon/fair/fair.h"
#include "daemon/pool/pool.h"
#include "proto/jproto.h"

#include <uv.h>

struct jd_client;
struct jd_clients;
struct jd_client_conf;
struct jd_wait_link;
struct jd_wait_deadline;
struct jsched_handler;
struct jd_exec_job;
struct jd_array;

/* A job's completion hooks (the spec's on_exit, notify): run by the submitting client
 * when the job ends, which reports how the run went (net/op_hook.c); the job's own result
 * never changes for it.  Loop thread. */
enum jd_hook_state { JD_HOOK_PENDING, JD_HOOK_RUNNING, JD_HOOK_SUCCEEDED, JD_HOOK_FAILED };
struct jd_hook {
	char *on_exit;		/* shell command line, or NULL */
	bool notify;
	uint32_t timeout_ms;
	uint8_t state;		/* enum jd_hook_state */
	int exit_code;		/* -1: none */
	int signal;		/* 0: none */
	char *reason;		/* or NULL */
	uint64_t claimed_ms, finished_ms;	/* wall clock; 0: not yet */
};

/* The states of section 5 of proto/PROTOCOL.md, in the order a job passes them. */
enum jd_state {
	JD_WAITING,
	JD_SCHEDULED,	/* its gates are open; it waits for its not_before time */
	JD_RETRYING,	/* an attempt failed and its retry policy runs it again: it waits
			 * for the time of its next attempt */
	JD_QUEUED,
	JD_RUNNING,
	JD_SUCCEEDED,
	JD_FAILED,
	JD_CANCELLED,
	JD_EXPIRED,
	JD_DROPPED,
};
#define JD_NSTATES 10

static inline bool jd_state_final(enum jd_state s)
{
	return s >= JD_SUCCEEDED;
}

/* What a dependency waits for (PROTOCOL.md section 4). */
enum jd_dep_on { JD_ON_SUCCESS, JD_ON_FAILURE, JD_ON_ANY };

enum jd_kind { JD_KIND_CALL, JD_KIND_EXEC };

/* One attempt of a job that ended: when, and how (exit code or signal, and the cause). */
struct jd_attempt {
	uint64_t started_ms, finished_ms;	/* 0: it never started */
	int32_t exit_code;			/* -1: none */
	int32_t signal;				/* 0: none */
	uint8_t state;				/* enum jd_state it ended in */
	uint8_t cause;				/* enum jp_cause */
};

/* One edge: this job depends on `id`.  */
struct jd_dep {
	uint64_t id;
	struct jd_job *target;	/* NULL once judged (the target may be forgotten later) */
	uint8_t on;		/* enum jd_dep_on */
	bool any;		/* in the any_of gate (else after) */
};

/* A notice from a worker to the loop thread (runner.c's completion queue). */
struct jd_notice {
	struct jd_notice *next;
	struct jd_job *job;
	uint8_t what;		/* JD_NOTICE_* (runner.c) */
	/* the job's DONE notice only: whether its end must wake the loop (JD_END_* bits,
	 * runner.c "Which ends wake the loop"); the loop and the worker each change it with
	 * one atomic fetch-or, so exactly one of them sees the other's bit */
	_Atomic uint8_t flags;
};

/* A submitted job's spec, as the journal records it: the JSON text the client sent (its
 * deps and deadline in it too, which the job holds resolved: a recovery ignores them), or
 * where there is no text (a held submit run again) JSON made from the parsed spec,
 * without them. */
struct jd_spec_src {
	const json_t *json;	/* or NULL: then text */
	const char *text;	/* len bytes, not NUL-terminated */
	size_t len;
};

/* What a job needs only until it ends: its record in the fair layer, who runs it, the
 * worker's results until the loop thread takes them, the cancel token, the notices, its
 * process, its place in the timer heap and its dependency gates.  An allocation of its
 * own (jd_job.run), so that a final job, which is most of a large table (retained), is
 * smaller: 720 -> 512 bytes of malloc chunk when the loop's live-only fields moved here,
 * 512 -> 400 with the fair record; a restart with a million retained jobs touches that
 * much less fresh memory (its page faults and the kernel's zeroing of them were most of a
 * restart's time).  Taken from the table's slab (t->runs, slab.h), not malloc, so that once
 * it goes the job records that stay are not each beside a hole. */
struct jd_job_run {
	/* the fair layer's record (jd_fair_admit to its final hook): its caller fields are
	 * copied from the job's (jd_job.deadline_ns, cost, cls, amount) when it is admitted
	 * (jd_job_fair_inputs); the job is n_start.job */
	struct jd_fair_job fj;
	pid_t proc_pid;			/* its command's process (group), while it runs; 0 */
	int run_rc;			/* worker: the handler's return */
	/* worker: written by the worker running the job, read by the loop thread after
	 * the completion notice */
	void *runner;		/* the runner running it (set when a worker takes it) */
	char *run_value;	/* handler's result as JSON text (malloc'd), or NULL */
	size_t run_value_len;
	char *run_error;	/* jsched_task_set_error message */
	uint64_t run_started_ns, run_finished_ns, run_started_ms;

	/* shared: fired by the loop thread, seen by the handler and its waits */
	struct jd_cancel ctok;

	struct jd_notice n_start, n_done;

	/* the loop thread's, until the job has settled: */
	uint64_t queued_ns;		/* when it entered the fair queue (monotonic) */
	struct jd_job *settle_next;	/* on the to-settle list (on_settle) */
	/* its entry in the table's timer heap while it is scheduled or retrying, and while
	 * retrying the time of its next attempt */
	struct jd_timed timer;
	uint64_t next_attempt_ms;
	/* dependencies: the gates' counts, a waiting job's deadline timer (or NULL), and
	 * the jobs with an unjudged dep on this one (judged when it settles) */
	uint32_t after_pending;	/* unjudged `after` deps */
	uint32_t n_any, any_failed;
	bool any_ok;			/* an any_of target ended as asked */
	struct jd_wait_deadline *wdl;
	struct jd_job **dependents;
	uint32_t n_dependents, cap_dependents;
};

struct jd_job {
	uint64_t id;
	struct jd_job *hnext;	/* hash chain */
	struct jd_job *rnext, *rprev;	/* retention list (final jobs, oldest first) */
	struct jd_job *cnext, *cprev;	/* its client's retention list (oldest first) */

	struct jd_client *client;	/* charged to */
	uid_t uid;			/* owned by */
	gid_t gid;			/* its primary gid (peer credentials at submit) */
	char *name;			/* or NULL; set by jd_job_set_name */
	char *key;			/* idempotency key (malloc'd), or NULL */
	struct jd_job *knext;		/* key index chain (jd_job_find_key) */
	struct jd_idx_pos ipos_all, ipos_uid, ipos_client;	/* in the id indexes */
	enum jd_kind kind;
	enum jd_state state;
	enum jp_cause cause;		/* final and not succeeded; else JP_CAUSE_NONE */
	uint8_t prio;			/* enum jd_fair_prio */
	/* Loop-thread flags, one bit each in one byte (beside prio): so that jseq below
	 * fits without the struct passing 704 bytes (a 720-byte malloc chunk; 712 would
	 * take the next, 736).  Never written from a worker. */
	bool on_settle : 1;		/* on the to-settle list */
	bool shutdown_cancel : 1;	/* loop: cancelled by immediate shutdown */
	bool elem_view : 1;		/* a compacted element shown again (array.h) */
	bool cancel_requested : 1;	/* loop: cancel asked while running */
	bool value_file : 1;	/* the result is in the output directory's "<id>.value"
				 * (jd_job_value_spill), not in memory: value is NULL, value_len
				 * its size */
	bool name_slab : 1;	/* name is a record of the table's names slab (jd_job_set_name) */
	bool held;		/* loop: held in the fair layer (jd_fair_hold) while queued;
				 * while scheduled: to be held when it comes due */
	/* What the fair layer's record (run->fj) is made from each time the job is admitted
	 * (a final job may be run again: retry): its needs class and the amounts it holds of
	 * the class's per-job resources (jd_runner_job_class), its declared cost (0 counts as
	 * 1) and its deadline on the fair clock (0: none).  Kept here, not in the record, so
	 * that a final job carries 21 bytes of it instead of the record's 128 (cost sits
	 * beside n_deps, in what was padding). */
	uint8_t cls;
	uint32_t amount[JD_FAIR_AMOUNTS];
	uint64_t deadline_ns;
	char *reason;			/* malloc'd, or NULL */
	/* a call's result (or a failed handler's detail) as compact JSON text, made on the
	 * worker (runner.c): malloc'd, or NULL */
	char *value;
	size_t value_len;	/* its length (value_file, with the small fields below: on disk) */

	/* the time of day it may start (spec not_before, wall-clock ms; 0: none), and its
	 * entry in the table's timer heap while it is scheduled */
	uint64_t not_before_ms;
	uint64_t deadline_ms;	/* its deadline on the wall clock (0: none): where it leaves
				 * the heap at the latest, expired (run->timer) */

	/* retries: the policy (the spec's "retry", malloc'd; NULL: none), every attempt
	 * that ended (the last one too once final); while retrying the time of the next is
	 * run->next_attempt_ms */
	struct jp_retry *retry;
	struct jd_attempt *attempts;
	uint32_t n_attempts, cap_attempts;

	/* timestamps: wall clock for the record, monotonic for the histograms */
	uint64_t submitted_ms, started_ms, finished_ms;
	uint64_t submitted_ns, started_ns, finished_ns;

	/* dependencies */
	struct jd_dep *deps;
	uint32_t n_deps;
	uint32_t cost;			/* see cls above */

	struct jd_wait_link *waiters;	/* pending waits (net/op_wait.c) */
	uint32_t pins;			/* holders that need it kept (pending waits): not
					 * forgotten while > 0 (jd_job_pin) */
	bool retain_deferred;		/* settled while pinned: retained at the last unpin */
	bool retained;			/* on the retention list */
	bool live_counted;		/* mem is counted in live_bytes (not final yet) */
	size_t mem;			/* while retained: its bytes (jd_job_mem_bytes); before
					 * it ends: jd_job_live_bytes, counted in live_bytes */

	/* call job: set at submit, read by the worker (an exec job's handler is
	 * jd_exec_handler) */
	const struct jsched_handler *handler;
	struct jd_exec_job *exec;	/* exec job: spec, result, output (exec.h); else NULL */
	json_t *args;		/* new ref; read-only once admitted; dropped (NULL) once the
				 * job has ended (jd_jobs_settle) */
	/* what only a job not yet final needs to run (struct jd_job_run): made with the job,
	 * freed once it has ended and settled (jd_jobs_settle), so a retained job does not
	 * carry it; a job recovered final never has one.  NULL then. */
	struct jd_job_run *run;

	struct jd_hook *hook;		/* its completion hooks, or NULL */

	/* job arrays (array.h) */
	struct jd_array *arr;		/* this job is an array's parent: its array; else NULL */
	struct jd_array *elem_of;	/* a live element: its array (NULL for a view) */
	uint64_t array_id;		/* an element (live or view): the parent's id; else 0 */
	int64_t array_index;		/* an element's index (its position in the array is
					 * id - array_id - 1: jd_job_elem_pos) */
	/* the journal's sequence number of the last record about this job (0: none since
	 * this start: a recovered job's records are all durable).  The one field the change
	 * hook writes: the journal's glue (persist.c) as it appends the record.  A reply that
	 * tells of this job only waits for the journal up to here (net/server.h jh_upto). */
	uint64_t jseq;
};

/* What the table reports (installed by the daemon).  ch and the job are valid during the
 * call only. */
enum jd_change_kind {
	JD_CHANGE_SUBMITTED,	/* job entered the table, waiting: its whole spec is set */
	JD_CHANGE_QUEUED,	/* job's gates opened: it entered its client's fair queue */
	JD_CHANGE_RUNNING,	/* a worker started job */
	JD_CHANGE_FINAL,	/* job reached its final state: state, cause, reason, finished
				 * time, and its result (value, or the exec part's) are set */
	JD_CHANGE_FORGOTTEN,	/* retention forgot job (freed after the call) */
	JD_CHANGE_CLIENT,	/* a client name's settings were changed at run time
				 * (set_client): name, conf, own */
	JD_CHANGE_CLIENT_FORGOTTEN,	/* idle client is forgotten (freed after the call;
					 * clients.h): it had no job; its pin stays */
	JD_CHANGE_NEXT_ID,	/* the id counter moved to next_id (ids are never reused) */
	JD_CHANGE_PROCESS,	/* running job's command started as process (group) pid */
	JD_CHANGE_ARRAY_STOP,	/* array parent job's elements not yet made ended in state
				 * `state` with cause `cause` (a cancel, a dependency ...) */
	JD_CHANGE_REMOTE,	/* job was handed to Slurm, which knows it as remote_id */
	JD_CHANGE_HOOK,		/* job's hook state changed (claimed, or its run reported) */
	JD_CHANGE_SCHEDULED,	/* job's gates opened before its not_before: it waits for
				 * its time in the timer heap */
	JD_CHANGE_RETRYING,	/* job's attempt failed and it will run again at
				 * next_attempt_ms: its last attempt is attempts[n - 1] */
	JD_CHANGE_RETRIED,	/* final job j was asked to run again (op retry): its last
				 * attempt (attempts[n - 1]) is kept, and it is waiting */
};

struct jd_change {
	enum jd_change_kind kind;
	const struct jd_job *job;	/* SUBMITTED ... FORGOTTEN, else NULL */
	const struct jd_client *client;	/* CLIENT_FORGOTTEN, else NULL */
	const char *name;		/* CLIENT: the client name */
	const struct jd_client_conf *conf;	/* CLIENT: its settings now */
	bool own;			/* CLIENT: conf is its pin (false: its config entry's
					 * again, no pin) */
	uint64_t next_id;		/* NEXT_ID */
	pid_t pid;			/* PROCESS */
	uint8_t state, cause;		/* ARRAY_STOP: enum jd_state, enum jp_cause */
	uint32_t remote_id;		/* REMOTE */
	const char *remote_tag;		/* REMOTE: what names its files there */
	/* SUBMITTED: the spec as submitted, which the journal records (NULL: none given);
	 * borrowed.  Passed here rather than kept in the job, which needs it no longer. */
	const struct jd_spec_src *spec;
};

struct jd_jobs_hooks {
	void *ctx;
	/* change: every change a client could be told of, in the order it happened. */
	void (*change)(void *ctx, const struct jd_change *ch);
	/* settled: j's final state is being settled (its dependents are judged next);
	 * settle_done: a jd_jobs_settle has settled everything (the table is trimmed). */
	void (*settled)(void *ctx, struct jd_job *j);
	void (*settle_done)(void *ctx);
	/* want_end: j (not final) has something that waits for its end (a dependent): the
	 * end must wake the loop when it comes from a worker (runner.h jd_runner_want_end). */
	void (*want_end)(void *ctx, struct jd_job *j);
	/* stop: running job j was asked to stop (its cancel_requested is set); it ends
	 * when whoever runs it reports back. */
	void (*stop)(void *ctx, struct jd_job *j);
	/* make_element: element pos of array parent's (array.h), a job with id parent->id +
	 * 1 + pos made from the shared spec, not yet in the table; NULL on ENOMEM. */
	struct jd_job *(*make_element)(void *ctx, struct jd_job *parent, uint64_t pos);
};

/* Why retention forgot a job: its age (retention.seconds), the count of final jobs
 * (retention.jobs), their bytes (retention.bytes). */
enum jd_forget_why { JD_FORGET_AGE, JD_FORGET_JOBS, JD_FORGET_BYTES, JD_FORGET_NWHY };

/* The id index's buckets at start, and the least it shrinks to (jd_jobs_shrink). */
#define JD_JOBS_BUCKETS 1024

/* The table.  Loop thread. */
struct jd_jobs {
	struct jd_job **buckets;
	size_t n_buckets, count;
	struct jd_job **kbuckets;	/* jobs with a key, by (uid, key); NULL until the first */
	size_t n_kbuckets, n_keyed;
	uint64_t shrinks;		/* jd_jobs_shrink's rehashes to fewer buckets */
	struct jd_idx all;		/* every job in id order (jd_jobs_walk) */
	struct jd_uid_jobs *uids[64];	/* each uid's jobs in id order, hashed by uid */
	uint64_t next_id;
	struct jd_job *retained_head, *retained_tail;	/* final jobs, oldest first */
	size_t n_retained;
	uint64_t retained_bytes;	/* their jd_job_mem_bytes */
	uint64_t live_bytes;		/* what jobs not yet final hold (jd_job_live_bytes) */
	struct jd_client *holders;	/* clients with retained jobs (their share's count) */
	size_t n_holders;
	struct jd_client *last_victim;	/* where retention forgot last (a holder, or NULL) */
	struct jd_job *to_settle;	/* final, not yet settled, in the order they ended */
	struct jd_job *to_settle_tail;
	uint64_t n_live;		/* not final */
	uint64_t by_state[JD_NSTATES];	/* jobs now in each non-final state; final states
					 * count every job ever ended so */
	uint64_t submitted, rejected, forgotten;
	uint64_t walked;		/* index slots jd_jobs_walk looked at, ever */
	uint64_t forgotten_by[JD_FORGET_NWHY];	/* forgotten, by the bound that did it */
	uint64_t releases;		/* jobs forgotten or args dropped, ever (main.c gives the
					 * freed heap back to the kernel when it moved) */

	uv_loop_t *loop;		/* waiting jobs' deadline timers, the timer heap's timer */
	struct jd_slab runs;		/* every job's run part (jd_job.run): slab.h says why */
	struct jd_slab names;		/* jobs' names of up to JD_NAME_SLAB - 1 bytes */
	struct jd_timeheap timers;	/* scheduled jobs, earliest first */
	uv_timer_t timer;		/* armed for the earliest of them (one for all) */
	bool timer_open;		/* timer initialised (at the first scheduled job) */
	uint64_t timer_armed_ms;	/* the due time it is armed for; 0: not armed */
	uint64_t timer_wakeups;		/* times the timer fired (metrics, the benchmark) */
	struct jd_fair *fair;		/* where released jobs are admitted */
	const struct jd_jobs_hooks *hooks;
	uint32_t retain_jobs;		/* final jobs kept */
	uint64_t retain_ns;		/* and for how long */
	uint64_t retain_bytes;		/* and their bytes (jd_job_mem_bytes) */
	uint64_t retain_min_ns;		/* a job is kept at least this long, unless its
					 * client is over its share of retain_bytes */
	bool stopping;			/* an immediate shutdown is under way */
	bool recovering;		/* jobs made now have no run part: recovery gives one to
					 * those that are to run (jd_job_run_part), not to the final
					 * ones, most of a large journal */

	/* job arrays (array.h): parents by id (increasing), and those releasing elements */
	struct jd_job **arrays;
	size_t n_arrays, cap_arrays;
	struct jd_array *active;
	struct jd_outfiles *outfiles;	/* exec jobs' output files (core/outfile.h), NULL: none */
	size_t value_spill_bytes;	/* results longer than this go to a file once the
					 * journal exists (limits.value_bytes) */
};

/* An iterator over every job in the table, in no particular order.  The table must not
 * change while it is used. */
struct jd_jobs_iter {
	size_t bucket;
	struct jd_job *next;
};

/* jd_jobs_init: set up an empty table that reports through hooks (borrowed, kept) and
 * arms its timers on loop; the fair instance is set (t->fair) before the first release.
 * Returns 0 or JSCHED_ENOMEM.  jd_jobs_free: release it (every job freed). */
int jd_jobs_init(struct jd_jobs *t, uv_loop_t *loop, const struct jd_jobs_hooks *hooks);
void jd_jobs_free(struct jd_jobs *t);

/* jd_jobs_stop_timers: close the timer heap's timer (before the loop closes); the heap
 * itself is freed by jd_jobs_free. */
void jd_jobs_stop_timers(struct jd_jobs *t);

/* jd_jobs_run_timers: release every scheduled job whose time has come by jd_now_ms (or
 * expire one whose deadline came first), settle, and re-arm the timer for the next.
 * The timer's callback; also run when the test clock moves.  Returns how many jobs came
 * due.  Loop thread. */
size_t jd_jobs_run_timers(struct jd_jobs *t);

/* jd_job_retry: run final job j again as a new attempt of the same id (the operation
 * retry): its outcome so far becomes an attempt of its record, it leaves retention and
 * is released as a new job is (its dependents judged on its first end stay judged).
 * Returns 0, or JSCHED_EINVAL if j is not final, JSCHED_ENOT_SUPPORTED for an array,
 * JSCHED_ENOMEM. */
int jd_job_retry(struct jd_jobs *t, struct jd_job *j);

/* jd_job_add_attempt: append an attempt to j's list (recovery, and the table itself).
 * Returns 0 or JSCHED_ENOMEM. */
int jd_job_add_attempt(struct jd_job *j, const struct jd_attempt *a);

/* jd_job_restore_retrying: a recovered job in state RETRYING (its attempts restored and
 * next_attempt_ms set): into the timer heap (jd_job_restore has counted it). */
void jd_job_restore_retrying(struct jd_jobs *t, struct jd_job *j);

/* jd_jobs_cancel_scheduled: cancel every scheduled or retrying job (cause shutdown): a
 * graceful shutdown without a journal, which cannot keep them for the next start. */
void jd_jobs_cancel_scheduled(struct jd_jobs *t);

/* jd_jobs_set_retention: keep at most cfg's retention.jobs final jobs, of at most
 * retention.bytes in all, each for at most retention.seconds and (unless its client is
 * over its share of the bytes) at least retention.min_seconds. */
struct jd_config;
void jd_jobs_set_retention(struct jd_jobs *t, const struct jd_config *cfg);

/* jd_job_value_spill: final job j's result, if longer than limits.value_bytes and the
 * journal's output directory exists, goes to a file there (core/outfile.h) and leaves
 * memory: records carry its size only (net/record.c), and `result` reads it back.  Called
 * once its FINAL change has been reported (the journal's record has the text: the durable
 * copy), and by recovery.  An array's element keeps its result (its slot holds it), and a
 * failed write keeps it in memory. */
void jd_job_value_spill(struct jd_jobs *t, struct jd_job *j);

/* jd_job_mem_bytes: the memory j holds: the job itself and every allocation it owns
 * (name, key, reason, result text, deps, the exec part with its argv, environment,
 * stdin and captured output, an array's slots, its hooks; args are not counted: a retained job has
 * none), each allocation with malloc's 16 bytes of overhead. */
size_t jd_job_mem_bytes(const struct jd_job *j);

/* jd_job_live_bytes: what j holds until it ends: jd_job_mem_bytes and its args' tree (an
 * estimate of jansson's allocations, on the high side).  Counted per client and in all
 * (live_bytes) from its insertion to its end, against limits.client_queued_bytes and
 * limits.queued_bytes (net/op_submit.c refuses a submit past them).  An array's element is
 * not counted (its parent holds the spec). */
size_t jd_job_live_bytes(const struct jd_job *j);

/* jd_args_bytes: the part of jd_job_live_bytes that a job's args count (0 for none); jobs
 * that share one args tree (a repeated spec's, proto/fastreq.c) count it each. */
size_t jd_args_bytes(const json_t *args);

/* jd_jobs_iter_init / jd_jobs_iter_next: walk the table; next returns NULL at the end. */
void jd_jobs_iter_init(const struct jd_jobs *t, struct jd_jobs_iter *it);
struct jd_job *jd_jobs_iter_next(const struct jd_jobs *t, struct jd_jobs_iter *it);

/* jd_jobs_walk: call keep(j, arg) for the jobs with id > after whose state is in the bit
 * mask `states`, in increasing id order, until keep returns false: only those charged to
 * `client` (NULL: any), and only uid's unless any_uid.  Costs what it visits: through the
 * index of the uid, the client or every job (jobs_index.h), chunks without a job in those
 * states skipped (t->walked counts the slots looked at).  keep must not add or forget
 * jobs. */
void jd_jobs_walk(struct jd_jobs *t, const struct jd_client *client, bool any_uid,
		  uid_t uid, uint64_t after, unsigned states,
		  bool (*keep)(struct jd_job *j, void *arg), void *arg);

/* jd_job_new: a job with the next id, in state WAITING, not yet in the table.  Returns
 * NULL on ENOMEM. */
struct jd_job *jd_job_new(struct jd_jobs *t);

/* jd_job_new_id: a job with the given id (an array's element: its ids were reserved with
 * its parent), in state WAITING, not yet in the table.  NULL on ENOMEM. */
struct jd_job *jd_job_new_id(struct jd_jobs *t, uint64_t id);

/* jd_job_reserve_ids: move the id counter past n more ids (an array's elements). */
void jd_job_reserve_ids(struct jd_jobs *t, uint64_t n);

/* jd_job_get: as jd_job_find, and for the id of an array's element that is not in the
 * table, the element made now (array.h: a view of a compacted one, or one not yet
 * released, waiting its turn).  NULL if no such job (or out of memory). */
struct jd_job *jd_job_get(struct jd_jobs *t, uint64_t id, bool *forgotten);

/* jd_job_report_array_stop: report JD_CHANGE_ARRAY_STOP for array parent p (array.c). */
void jd_job_report_array_stop(struct jd_jobs *t, const struct jd_job *p, enum jd_state s,
			      enum jp_cause cause);

/* jd_job_hook_set: job j's hooks are now in state s (exit code, signal, reason copied:
 * may be NULL), at wall-clock now_ms; reported (JD_CHANGE_HOOK).  The job's own state is
 * not touched. */
void jd_job_hook_set(struct jd_jobs *t, struct jd_job *j, enum jd_hook_state s, int exit_code,
		     int signal, const char *reason, uint64_t now_ms);

/* jd_hook_free: free a job's hooks (NULL is fine). */
void jd_hook_free(struct jd_hook *h);

/* jd_job_insert: put a job made by jd_job_new, with its spec set, into the table (counts
 * it submitted, indexes its key if it has one, reports JD_CHANGE_SUBMITTED with spec, the
 * spec as submitted, or NULL).  A job with a key that jd_job_find_key already finds for
 * its uid must not be inserted. */
void jd_job_insert(struct jd_jobs *t, struct jd_job *j, const struct jd_spec_src *spec);

/* jd_job_elem_pos: array element j's position in its array (its id was issued as the
 * parent's + 1 + the position). */
static inline uint64_t jd_job_elem_pos(const struct jd_job *j)
{
	return j->id - j->array_id - 1;
}

/* jd_job_restore: put a job recovered from the journal into the table in its recorded
 * state (j->state: waiting or final, with its spec, times and result set), with the
 * counts a job that got there would have left, and without a report.  A final job goes
 * on the retention list (restore them in the order they ended); a waiting one is then
 * linked and released by the caller as a new one would be (jd_job_link_deps,
 * jd_job_release).  The id counter moves past j's id. */
void jd_job_restore(struct jd_jobs *t, struct jd_job *j);

/* jd_job_drop_run: j has ended (or was recovered final): free what only running needs
 * (j->run: NULL after; NULL already is fine).  The settle does it for a job that ends;
 * recovery, for each job as its final record is read, so that the heap is reused by the
 * next job instead of keeping a hole per job. */
void jd_job_drop_run(struct jd_job *j);

/* jd_job_run_part: give j, a job of t, its run part if it has none (a job recovered final
 * that its records then run again).  0 or JSCHED_ENOMEM. */
int jd_job_run_part(struct jd_jobs *t, struct jd_job *j);

/* jd_job_discard: free a job made by jd_job_new that never entered the table (a submit
 * refused whole).  Its id is simply never used. */
void jd_job_discard(struct jd_job *j);

/* A job's name of up to JD_NAME_SLAB - 1 bytes is a JD_NAME_SLAB-byte record of the
 * table's names slab (slab.h), a longer one a malloc'd copy.  From malloc, a short name
 * ("job-123456") was a 32-byte chunk between the jobs' records (a million retained jobs
 * of names of their own: 32 MB, and a malloc and a free each); from the slab it is 16
 * bytes, on pages of their own that retention empties in the order it forgets. */
#define JD_NAME_SLAB 16u

/* jd_job_set_name: j, which has no name yet, is named a copy of name[0..len) (no NUL
 * inside).  0, or JSCHED_ENOMEM.  Loop thread. */
int jd_job_set_name(struct jd_jobs *t, struct jd_job *j, const char *name, size_t len);

/* jd_job_find: the job with `id`, or NULL; *forgotten says whether the id was issued
 * once and is no longer retained. */
struct jd_job *jd_job_find(const struct jd_jobs *t, uint64_t id, bool *forgotten);

/* jd_job_find_key: the job in the table that uid submitted with idempotency key `key`,
 * or NULL.  A job is found from its insertion until it is forgotten.  O(1). */
struct jd_job *jd_job_find_key(const struct jd_jobs *t, uid_t uid, const char *key);

/* jd_job_link_deps: register j with the targets of its deps and judge those that have
 * already ended.  Then the job is either ready (returns 1), doomed (finished cancelled;
 * returns 0), or waiting (returns 0). */
int jd_job_link_deps(struct jd_jobs *t, struct jd_job *j);

/* jd_job_release: a job whose gates opened enters its client's fair queue (or ends, if
 * the overflow strategy drops it or there is no room), or, if its not_before is still
 * ahead, becomes scheduled (the timer heap releases it then; returns JD_FAIR_QUEUED).
 * Returns what jd_fair_admit did (JD_FAIR_* or a negative code). */
int jd_job_release(struct jd_jobs *t, struct jd_job *j);

/* jd_job_set_running: the worker has started j. */
void jd_job_set_running(struct jd_jobs *t, struct jd_job *j);

/* jd_job_process_started: running job j's command runs as pid, the leader of its own
 * process group (reported: JD_CHANGE_PROCESS; the journal keeps it, so that a restart
 * after a crash can stop a command that outlived the daemon). */
void jd_job_process_started(struct jd_jobs *t, struct jd_job *j, pid_t pid);

/* jd_job_remote_submitted: exec job j was handed to Slurm, which knows it as job
 * remote_id, its files named by `tag` (reported: JD_CHANGE_REMOTE; the journal keeps it,
 * so that a restart re-attaches to the remote job instead of losing it). */
void jd_job_remote_submitted(struct jd_jobs *t, struct jd_job *j, uint32_t remote_id,
			     const char *tag);

/* jd_job_finish: put j in final state `s` with `cause` (JP_CAUSE_NONE for succeeded) and
 * a reason (copied; may be NULL), unless it is final already (then nothing happens and
 * false is returned).  Schedules the settling. */
bool jd_job_finish(struct jd_jobs *t, struct jd_job *j, enum jd_state s, enum jp_cause cause,
		   const char *reason);

/* jd_job_cancel: cancel j on behalf of a client (JP_CAUSE_CANCEL) or of an immediate
 * shutdown (JP_CAUSE_SHUTDOWN): waiting and queued jobs end now, a running one is asked
 * to stop (hooks->stop).  Returns true if the job is still running (asked to stop). */
bool jd_job_cancel(struct jd_jobs *t, struct jd_job *j, enum jp_cause cause);

/* jd_job_stop_cause: the cause a job that was asked to stop (or was not started) ends
 * with: JP_CAUSE_SHUTDOWN if an immediate shutdown cancelled it or is under way, else
 * JP_CAUSE_CANCEL.  The one place that decides "cancelled by shutdown". */
enum jp_cause jd_job_stop_cause(const struct jd_jobs *t, const struct jd_job *j);

/* jd_job_stop_asked: was j asked to stop (cancelled while running, or an immediate
 * shutdown is under way)? */
bool jd_job_stop_asked(const struct jd_jobs *t, const struct jd_job *j);

/* jd_job_finish_stopped: end j cancelled because it was asked to stop, with the cause
 * of jd_job_stop_cause and the matching reason (`started`: it had begun running).
 * Returns as jd_job_finish. */
bool jd_job_finish_stopped(struct jd_jobs *t, struct jd_job *j, bool started);

/* jd_jobs_cancel_all: an immediate shutdown: mark the table stopping and cancel every
 * job not final, those not started first (a running job asked to stop frees its worker,
 * which must not find a queued job still to start). */
void jd_jobs_cancel_all(struct jd_jobs *t);

/* jd_jobs_settle: finish the work of every state change since the last call (dependents,
 * retention here; waiters and watch events through hooks->settled), then trim and call
 * hooks->settle_done.  Loop thread, outside other job-table work. */
void jd_jobs_settle(struct jd_jobs *t);

/* jd_job_pin / jd_job_unpin: keep j in the table while a holder needs its record (a
 * pending wait reads it when it answers): a pinned job is never forgotten; a final job
 * unpinned for the last time enters retention then, with its own finish time, and is
 * trimmed by the next jd_jobs_trim if it is already past the limits. */
void jd_job_pin(struct jd_jobs *t, struct jd_job *j);
void jd_job_unpin(struct jd_jobs *t, struct jd_job *j);

/* jd_jobs_reserve: size the id index for n jobs at once (recovery, which knows how many
 * it restores), instead of doubling its way there: each doubling walks every chain. */
void jd_jobs_reserve(struct jd_jobs *t, size_t n);

/* jd_jobs_shrink: give back what the id and key indexes grew to for jobs that have gone:
 * each grows by doubling, to one bucket per job (1,000,000 queued jobs: 8 MiB of
 * buckets), and keeps that size; one holding under an eighth of its buckets is rehashed
 * to twice its count (at least JD_JOBS_BUCKETS).  And unmap the run parts' empty pages
 * but one (jd_slab_trim).  O(buckets) when it does, so called
 * where the loop can afford it: the 1 s tick and the moment a flood has drained
 * (jd_daemon_give_back).  No jd_jobs_iter may be open across it. */
void jd_jobs_shrink(struct jd_jobs *t);

/* jd_jobs_trim: forget final jobs older than the retention age, then, while the retained
 * ones are over the retention count or bytes, the oldest of a client over its share
 * (the mean over the clients holding retained jobs): one client's volume never makes
 * another's jobs go.  The count yields to retention.min_seconds; the bytes do not. */
void jd_jobs_trim(struct jd_jobs *t);

/* jd_state_name: "waiting" ... "dropped". */
const char *jd_state_name(enum jd_state s);

/* jd_prio_name: "critical" ... "low". */
const char *jd_prio_name(unsigned prio);

#endif /* JD_JOBS_H */
