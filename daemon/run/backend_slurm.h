/* daemon/run/backend_slurm.h: exec jobs run as Slurm batch jobs, through libslurm.
 *
 * jschedd stays the front end: its fair queues decide the order, its gates the
 * dependencies; this file only hands a command to Slurm, watches it and reads back what
 * it wrote.  A job here is a struct jd_slurm_job that the caller owns and fills (the
 * command, its owner, its nice value); the backend tells the caller through one callback
 * when the job started and when it ended (its struct jd_exec_result filled in, as the
 * local path fills it, so the final state and the record come from the same code).
 *
 * Threads.  Every libslurm call blocks on an RPC to slurmctld, so none is made on the
 * loop thread: one thread of this file's own (the "slurm thread") submits, cancels and
 * polls, and creates, reads and removes the output files (a shared filesystem may be
 * slow too).  The loop thread hands it requests on a list under a mutex and a condition
 * variable; the slurm thread hands results back on another list and wakes the loop with
 * a uv_async, which takes the whole list at once.  The slurm thread never touches a
 * struct jd_slurm_job: requests and results carry copies and the job's key, and the loop
 * thread finds the job by key (a job freed in between is simply not found).
 *
 * Submitting.  slurm_submit_batch_job with the script of slurm_script.h, the job's
 * environment as the job's environment (Slurm adds its SLURM_* variables; jschedd adds
 * JSCHED_JOB_ID, because slurmctld refuses a batch job with an empty environment), its
 * working directory, the client's uid and gid (only root or SlurmUser may submit for
 * another uid; slurmctld refuses the rest, and that refusal ends the job), partition
 * and account from the config, nice from the priority, the job's resources (memory as
 * pn_min_memory in MiB and cpus as min_cpus and cpus_per_task, whole CPUs; both rounded
 * up, so a job never gets less than it asked for; pids has no Slurm equivalent and is
 * refused at submit), and a time limit.  Slurm's time
 * limits are whole minutes, so timeout_ms is enforced here instead (a timer from the
 * start time Slurm reports, then slurm_kill_job) and Slurm's own limit is set a minute
 * beyond as a backstop.
 *
 * Output.  Slurm's step writes stdout and stderr to files named by the job
 * (output_dir/INSTANCE-JOB.out and .err; stdin, if the job has one, comes from .in).
 * The slurm thread creates them before submitting, owned by the job's uid with mode
 * 0600, and reads them back (up to the output limit, the rest counted as truncated)
 * once the job has ended, then removes them.  output_dir must be on a filesystem that
 * the compute nodes and jschedd's host share (on the one-node test cluster it is the
 * same machine).
 *
 * Watching.  One slurm_load_jobs(last_update, ...) per poll interval while any job is
 * submitted: when nothing changed since the previous answer slurmctld says only
 * SLURM_NO_CHANGE_IN_DATA, so an idle poll costs one small RPC.  The states map:
 * PENDING (and SUSPENDED) is still "queued" for jschedd, RUNNING is running, and a final
 * Slurm state ends the job: COMPLETE with the wait status (exit code or signal),
 * CANCELLED (not run, or signalled), TIMEOUT (timed out), FAILED / NODE_FAIL / OOM /
 * BOOT_FAIL / DEADLINE / PREEMPTED with the wait status and the state named in the
 * reason.  A job slurmctld no longer knows (purged after MinJobAge) ends failed with a
 * reason saying so.
 *
 * Outages.  A submit, cancel or poll that cannot reach slurmctld (connection, send,
 * receive, time-out errors) is retried on the next poll interval; the job stays where
 * it was (submitted ones keep their Slurm id) and metrics say the controller is down,
 * with the error.  Any other submit error ends the job failed with cause "spawn" and
 * Slurm's message.
 *
 * Re-attaching.  A job's Slurm comment is "jschedd:TAG:KEY" and its files are
 * TAG-KEY.out/.err/.in, where TAG is the config's instance: with the journal on, one
 * that stays the same across restarts of one jschedd (its host and journal directory),
 * so that a restarted jschedd finds its jobs.  jd_slurm_attach watches a job again by
 * its Slurm id (the journal's record of the submit).  A job whose submit may have
 * reached slurmctld without the record (jschedd killed between the RPC and the
 * record) is submitted with find_first: the slurm thread loads Slurm's whole job list
 * once (at the first such submit; the jobs of an earlier run of this jschedd cannot
 * change after it, as that run is gone), and a job tagged TAG:KEY submitted no
 * earlier than not_before_ms is watched instead of submitting it again (reported
 * SUBMITTED with its id, like a submit).  Limit: a job that ended and was purged by
 * slurmctld (MinJobAge) while jschedd was down is not found, and is submitted again.
 *
 * Built only with a libslurm this file was tested against (JD_WITH_SLURM, set by the
 * Makefile from SLURM_VERSION_NUMBER): libslurm's ABI changes with each release.
 * Without it every function below exists, jd_slurm_open fails with JSCHED_ENOT_SUPPORTED
 * and jd_slurm_build says why.
 */
#ifndef JD_BACKEND_SLURM_H
#define JD_BACKEND_SLURM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/core/exec_job.h"

/* The "backends.slurm" section of the config. */
struct jd_slurm_config {
	char conf[4096];		/* slurm.conf, "" for libslurm's default ($SLURM_CONF) */
	char partition[128];		/* "" for the cluster's default */
	char account[128];		/* "" for the user's default */
	char output_dir[4096];		/* shared dir for the jobs' output files */
	uint32_t poll_ms;		/* watch interval */
	uint32_t output_bytes;		/* bytes kept per stream */
	char instance[64];		/* this jschedd's instance, in file and job names */
};

/* Where a job is, as the caller sees it. */
enum jd_slurm_phase {
	JD_SLURM_IDLE = 0,	/* not handed to the backend */
	JD_SLURM_SUBMITTING,	/* the slurm thread has it; no Slurm id yet */
	JD_SLURM_PENDING,	/* submitted; Slurm has not started it */
	JD_SLURM_RUNNING,	/* started on a node */
	JD_SLURM_DONE,		/* ended; res filled, output read */
};

/* What the callback reports. */
enum jd_slurm_event { JD_SLURM_EV_SUBMITTED, JD_SLURM_EV_STARTED, JD_SLURM_EV_DONE };

/* One job.  The caller fills the first block, then calls jd_slurm_submit; the rest is
 * the backend's (loop thread) until DONE is reported, after which the caller may free it.
 * spec and res must stay valid until then. */
struct jd_slurm_job {
	uint64_t key;			/* jschedd job id: unique among live jobs */
	uid_t uid;
	gid_t gid;
	int nice;			/* 0 .. 10000: larger runs later */
	const char *partition;		/* NULL: the config's */
	const char *account;		/* NULL: the config's */
	const struct jd_exec_spec *spec;
	struct jd_exec_result *res;
	void *user;			/* the caller's */
	/* What names its files and tags it in Slurm (see Re-attaching): jd_slurm_submit
	 * sets it to the config's instance; for jd_slurm_attach the caller gives the one
	 * it was submitted with ("": the config's). */
	char tag[64];
	/* jd_slurm_submit only: first look for a job Slurm already has with this tag and
	 * key, submitted at or after not_before_ms (wall), and watch that one instead. */
	bool find_first;
	uint64_t not_before_ms;

	enum jd_slurm_phase phase;
	uint32_t slurm_id;		/* 0 until submitted */
	char node[64];			/* where it ran ("" before) */
	uint64_t submit_ms, start_ms, end_ms;	/* Slurm's times (wall, ms) */
	/* backend internals: */
	bool cancel_asked, kill_sent, output_asked;
	enum jp_cause stop_cause;
	uv_timer_t *timer;		/* the time limit, once running */
	struct jd_slurm_job *hnext;	/* key hash */
	struct jd_slurm *owner;
};

struct jd_slurm;

/* jd_slurm_cb: job j reached `ev`.  For DONE, j->res is final and j is no longer the
 * backend's.  Loop thread. */
typedef void (*jd_slurm_cb)(void *ctx, struct jd_slurm_job *j, enum jd_slurm_event ev);

/* jd_slurm_build: what this build has: "libslurm 22.05.8" or "not built: <why>". */
const char *jd_slurm_build(void);

/* jd_slurm_config_defaults: poll 500 ms, output 1 MiB, output_dir /var/spool/jschedd/slurm. */
void jd_slurm_config_defaults(struct jd_slurm_config *c);

/* jd_slurm_open: start the backend on `loop` (its thread, its async), reading c (copied).
 * Creates output_dir (mode 0711) if missing.  Returns 0, JSCHED_ENOT_SUPPORTED (built
 * without libslurm), or another negative code, with the reason in err.  Loop thread. */
int jd_slurm_open(uv_loop_t *loop, const struct jd_slurm_config *c, jd_slurm_cb cb, void *ctx,
		  struct jd_slurm **out, char *err, size_t errlen);

/* jd_slurm_close: stop the thread and close the handles.  Jobs still live are left to
 * Slurm (their files stay); the caller frees them after the loop has run the close
 * callbacks.  Loop thread. */
void jd_slurm_close(struct jd_slurm *s);

/* jd_slurm_submit: hand j to Slurm.  Returns 0 (j is SUBMITTING; the callback reports
 * SUBMITTED, or DONE with JD_EXEC_SPAWN_FAILED if Slurm refused it), JSCHED_EINVAL with
 * the reason in j->res->reason (a job this backend cannot express: argv[0] beginning
 * with '-'), JSCHED_EEXISTS (the key is live) or JSCHED_ENOMEM.  Loop thread. */
int jd_slurm_submit(struct jd_slurm *s, struct jd_slurm_job *j);

/* jd_slurm_attach: watch j again by its slurm_id (after a restart of jschedd: the id
 * came from the journal); its files are looked for under the names of j->tag (or the
 * config's instance).  j is PENDING until a poll says otherwise (STARTED, then DONE, are
 * reported as for a job submitted here).  Returns 0, JSCHED_EEXISTS or JSCHED_ENOMEM.
 * Loop thread. */
int jd_slurm_attach(struct jd_slurm *s, struct jd_slurm_job *j);

/* jd_slurm_cancel: stop j (slurm_kill_job): a pending job ends not run, a running one
 * is signalled and ends when Slurm says so; `cause` (JP_CAUSE_CANCEL, _SHUTDOWN) goes
 * into res->stop_cause.  Nothing if j has ended.  Loop thread. */
void jd_slurm_cancel(struct jd_slurm *s, struct jd_slurm_job *j, enum jp_cause cause);

/* jd_slurm_metrics: counters, the controller's health, poll cost.  New reference, NULL
 * on ENOMEM.  Loop thread. */
json_t *jd_slurm_metrics(struct jd_slurm *s);

/* jd_slurm_live: jobs handed to Slurm and not yet ended (submitting, pending, running).
 * Loop thread. */
uint32_t jd_slurm_live(const struct jd_slurm *s);

/* jd_slurm_up: false while the last RPC could not reach slurmctld.  Loop thread. */
bool jd_slurm_up(const struct jd_slurm *s);

#endif /* JD_BACKEND_SLURM_H */
