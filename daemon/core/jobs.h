/* daemon/core/jobs.h: the job table, job states and the dependency gates.
 *
 * Every job the daemon ever accepts has a struct jd_job here from submission until it is
 * forgotten (its result retained for `retention.jobs` jobs and `retention.seconds`).
 * Ids are handed out in increasing order and never reused, so an id below the next one
 * that is no longer in the table is "forgotten", and any other id "never issued".
 *
 * State changes go through this file and nowhere else, so that each job reaches exactly
 * one final state, once: jd_job_finish() is the single door, and it is idempotent on
 * final jobs.  A final state is then "settled" (waiters answered, dependents judged,
 * watchers told, the record queued for retention) by jd_jobs_settle(), which the loop
 * thread runs after every message and every completion batch: the work that a state
 * change triggers never runs inside the code that caused it (a cancel in the middle of
 * a batch, a drop inside an admission).
 *
 * Threads: the loop thread owns the table and every field not marked otherwise.  A
 * running job's fields marked "worker" belong to the worker running it until it posts
 * its completion (runner.c), which hands them back to the loop thread.
 */
#ifndef JD_JOBS_H
#define JD_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/fair/fair.h"
#include "daemon/pool/pool.h"

struct jd_daemon;
struct jd_client;
struct jd_wait_link;
struct jd_wait_deadline;
struct jsched_handler;
struct jd_exec_job;

/* The states of section 5 of proto/PROTOCOL.md, in the order a job passes them. */
enum jd_state {
	JD_WAITING,
	JD_QUEUED,
	JD_RUNNING,
	JD_SUCCEEDED,
	JD_FAILED,
	JD_CANCELLED,
	JD_EXPIRED,
	JD_DROPPED,
};
#define JD_NSTATES 8

static inline bool jd_state_final(enum jd_state s)
{
	return s >= JD_SUCCEEDED;
}

/* What a dependency waits for (PROTOCOL.md section 4). */
enum jd_dep_on { JD_ON_SUCCESS, JD_ON_FAILURE, JD_ON_ANY };

enum jd_kind { JD_KIND_CALL, JD_KIND_EXEC };

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
};

struct jd_job {
	struct jd_fair_job fj;	/* admission record; fj.id == id */
	uint64_t id;
	struct jd_job *hnext;	/* hash chain */
	struct jd_job *rnext, *rprev;	/* retention list (final jobs, oldest first) */
	struct jd_job *settle_next;	/* on the to-settle list */
	bool on_settle;

	struct jd_client *client;	/* charged to */
	uid_t uid;			/* owned by */
	gid_t gid;			/* its primary gid (peer credentials at submit) */
	char *name;			/* or NULL */
	enum jd_kind kind;
	enum jd_state state;
	uint8_t prio;			/* enum jd_fair_prio */
	const char *cause;		/* static string, final and not succeeded */
	char *reason;			/* malloc'd, or NULL */
	json_t *value;			/* call result (new ref), or NULL */

	/* timestamps: wall clock for the record, monotonic for the histograms */
	uint64_t submitted_ms, started_ms, finished_ms;
	uint64_t submitted_ns, queued_ns, started_ns, finished_ns;

	/* dependencies */
	struct jd_dep *deps;
	uint32_t n_deps;
	uint32_t after_pending;	/* unjudged `after` deps */
	uint32_t n_any, any_failed;
	bool any_ok;
	struct jd_wait_deadline *wdl;	/* a waiting job's deadline timer, or NULL */
	struct jd_job **dependents;	/* jobs with an unjudged dep on this one */
	uint32_t n_dependents, cap_dependents;

	struct jd_wait_link *waiters;	/* pending waits (net/op_wait.c) */

	/* call job: set at submit, read by the worker (an exec job's handler is
	 * jd_exec_handler) */
	const struct jsched_handler *handler;
	struct jd_exec_job *exec;	/* exec job: spec, result, output (exec.h); else NULL */
	json_t *args;		/* new ref; read-only once admitted */

	/* worker: written by the worker running the job, read by the loop thread after
	 * the completion notice */
	int run_rc;		/* handler's return */
	json_t *run_value;	/* handler's result (new ref) */
	char *run_error;	/* jsched_task_set_error message */
	uint64_t run_started_ns, run_finished_ns, run_started_ms;

	/* shared: fired by the loop thread, seen by the handler and its waits */
	struct jd_cancel ctok;
	bool cancel_requested;	/* loop: cancel asked while running */
	bool shutdown_cancel;	/* loop: cancelled by immediate shutdown */

	struct jd_notice n_start, n_done;
};

/* The table.  Loop thread. */
struct jd_jobs {
	struct jd_job **buckets;
	size_t n_buckets, count;
	uint64_t next_id;
	struct jd_job *retained_head, *retained_tail;	/* final jobs, oldest first */
	size_t n_retained;
	struct jd_job *to_settle;	/* final, not yet settled (LIFO; order is immaterial) */
	uint64_t n_live;		/* not final */
	uint64_t by_state[JD_NSTATES];	/* jobs now in each non-final state; final states
					 * count every job ever ended so */
	uint64_t submitted, rejected, forgotten;
};

/* jd_jobs_init / jd_jobs_free: set up / release the table (every job freed). */
int jd_jobs_init(struct jd_jobs *t);
void jd_jobs_free(struct jd_jobs *t);

/* jd_job_new: a job with the next id, in state WAITING, not yet in the table.  Returns
 * NULL on ENOMEM. */
struct jd_job *jd_job_new(struct jd_daemon *d);

/* jd_job_insert: put a job made by jd_job_new into the table (counts it submitted). */
void jd_job_insert(struct jd_daemon *d, struct jd_job *j);

/* jd_job_discard: free a job made by jd_job_new that never entered the table (a submit
 * refused whole).  Its id is simply never used. */
void jd_job_discard(struct jd_job *j);

/* jd_job_find: the job with `id`, or NULL; *forgotten says whether the id was issued
 * once and is no longer retained. */
struct jd_job *jd_job_find(struct jd_daemon *d, uint64_t id, bool *forgotten);

/* jd_job_link_deps: register j with the targets of its deps and judge those that have
 * already ended.  Then the job is either ready (returns 1), doomed (finished cancelled;
 * returns 0), or waiting (returns 0). */
int jd_job_link_deps(struct jd_daemon *d, struct jd_job *j);

/* jd_job_release: a job whose gates opened enters its client's fair queue (or ends, if
 * the overflow strategy drops it or there is no room).  Returns what jd_fair_admit did
 * (JD_FAIR_* or a negative code). */
int jd_job_release(struct jd_daemon *d, struct jd_job *j);

/* jd_job_set_running: the worker has started j. */
void jd_job_set_running(struct jd_daemon *d, struct jd_job *j);

/* jd_job_finish: put j in final state `s` with `cause` (static) and a reason (copied;
 * may be NULL), unless it is final already (then nothing happens and false is
 * returned).  Schedules the settling. */
bool jd_job_finish(struct jd_daemon *d, struct jd_job *j, enum jd_state s, const char *cause,
		   const char *reason);

/* jd_job_cancel: cancel j on behalf of a client (cause "cancel") or the daemon (cause
 * given): waiting and queued jobs end now, a running one is asked to stop.  Returns true
 * if the job is still running (asked to stop). */
bool jd_job_cancel(struct jd_daemon *d, struct jd_job *j, const char *cause);

/* jd_jobs_settle: finish the work of every state change since the last call (waiters,
 * dependents, watch events, retention).  Loop thread, outside other job-table work. */
void jd_jobs_settle(struct jd_daemon *d);

/* jd_jobs_trim: forget the oldest final jobs over the retention count and age. */
void jd_jobs_trim(struct jd_daemon *d);


/* jd_state_name: "waiting" ... "dropped". */
const char *jd_state_name(enum jd_state s);

/* jd_prio_name: "critical" ... "low". */
const char *jd_prio_name(unsigned prio);

#endif /* JD_JOBS_H */
