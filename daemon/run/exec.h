/* daemon/run/exec.h: running commands: exec jobs, and child processes of call-job handlers.
 *
 * A plain exec job (no declared needs) runs without a fiber: the loop thread takes it
 * from the fair layer (runner.c's flush) or gets it from a worker's feeder
 * (jd_exec_hand_over), starts it, and reports its end through jd_exec_env.ended.  Every
 * other command runs on behalf of a fiber: an exec job with declared needs on the job's
 * own (its handler is jd_exec_handler, run by runner.c like any suspending call
 * handler), a handler's process on the handler's, through jsched_task_run (module.h).
 * The fiber posts a spawn request to the loop thread (a lock-free list and a uv_async)
 * and suspends on an event; the loop thread owns everything about the process (posix_spawn
 * and a pidfd, the pipes, the time limit, the signals) and sets the event when the
 * process has exited and its output pipes are drained.  No worker thread is held while a command runs.
 *
 * Four files: exec.c (the job side: the fiber's request, the exec handler, cancel, the
 * final state), process.c (a process's life on the loop thread), slots.c (process slots
 * for handlers' processes), exec_cgroup.c (the commands' control groups).
 *
 * Process slots.  At most exec.max_processes commands run at once: a slot is a unit of the
 * fair layer's "process" resource.  An exec job needs a slot and a fiber and stays in its
 * client's fair queue, "queued", holding neither a fiber nor a worker, until both are
 * free; it takes them at dispatch and gives them back at its completion.  So priorities,
 * deadlines, the policy, cancel and drain act on commands waiting for a slot exactly as
 * on any queued job, and call jobs are never stuck behind them.  A handler's process
 * takes a slot of the same resource at spawn time (its fiber is already running) or waits
 * for one in slots.c, first in line when one comes back.  The shape before kept a second
 * queue of exec jobs taken from the fair layer with no slot free, which knew no
 * priorities, deadlines or policy (a critical command behind four queued ones ran last;
 * a 200 ms deadline behind a running `sleep 2` expired at 2 s).
 *
 * Process groups and stopping.  Each command is the leader of its own session and process
 * group (setsid).  Cancel, time-out and immediate shutdown send SIGTERM to the group, and
 * SIGKILL after exec.kill_grace_ms.  When the leader exits, whatever it left running in
 * its group is stopped the same way, so a job is over when its command is, and nothing of
 * it outlives it; the job ends when its output pipes are closed by every process that held
 * them.
 *
 * Control groups (exec_cgroup.c, cgroup.c), when usable.  Each command also runs in a group
 * of its own under its client's (the exec job's job-ID, a handler's process job-ID-SEQ),
 * entered before the command's first instruction (by the directly started child, or by
 * jschedd-runas when the identity changes: process.c), so the stopping above
 * reaches every process the command started, also one that left its session: SIGTERM goes
 * to each process in the group too, and the kill is the whole group's (freeze, SIGKILL
 * each, thaw on v1; cgroup.kill on v2).  A command is then over when its group is empty
 * as well; its usage (CPU, peak memory, OOM kills, pids limit hits) goes into its result,
 * and a kill at the memory limit fails the job with cause memory.  An ended command's
 * group is reused by its client's next command where the mode allows (exec_cgroup.c).
 *
 * Identity (core/security.c decides, process.c applies).  A command runs as the uid that owns
 * its job.  When that is jschedd's own, the loop thread starts it directly (process.c: a
 * clone sharing memory until the exec, on x86-64 and AArch64; posix_spawn elsewhere, and
 * then the helper for a group).  When jschedd runs as root and that uid is not root, the
 * command is started through the helper jschedd-runas (daemon/run/runas.c), which sets the supplementary groups
 * (initgroups), the gid and the uid, then enters the working directory and execs: libuv's
 * own UV_PROCESS_SETUID/SETGID cannot be used, because its child calls setgroups(0, NULL)
 * before setgid/setuid (libuv 1.44, src/unix/process.c), dropping every supplementary
 * group, and it enters the working directory while still root.
 */
#ifndef JD_EXEC_H
#define JD_EXEC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/core/exec_job.h"
#include "jsched/module.h"

#include "daemon/core/config.h"
#include "daemon/core/jobs.h"
#include "daemon/core/security.h"

struct jd_proc;
struct jd_fair;
struct jd_resources;
struct jd_fair_job;
struct jd_cg;
struct jd_cg_job;
struct jd_cg_limits;
struct jp_job_spec;
struct cg_client;
struct cg_pending;
struct cg_spare;
struct jd_proc_end;

/* What the process machinery works with (borrowed, kept; jd_exec_init). */
struct jd_exec_env {
	uv_loop_t *loop;
	struct jd_jobs *jobs;		/* ends exec jobs */
	struct jd_fair *fair;		/* counts the slots (resource res_proc) */
	const struct jd_config *cfg;	/* the config in force: "exec" */
	struct jd_security *sec;	/* as whom a command runs */
	int res_proc;			/* the fair layer's "process" resource */
	uint8_t cls_exec;		/* the needs class of exec jobs (for the metrics) */
	/* wake: a slot went back to the fair layer: idle workers should take (the
	 * runner's). */
	void (*wake)(void *ctx);
	void *wake_ctx;
	/* ended: an exec job started by jd_exec_start_job or jd_exec_hand_over has ended
	 * (its result in j->exec->res; it still holds its fair units): the runner's, with
	 * wake_ctx.  Loop thread. */
	void (*ended)(void *ctx, struct jd_job *j);
	const char *socket_path;	/* names the cgroup subtree (exec_cgroup.c) */
	struct jd_resources *resources;	/* named resources: indices at spawn (resources.h) */
};

/* The process machinery (the runner's: struct jd_runner.exec). */
struct jd_exec {
	uv_loop_t *loop;		/* from jd_exec_env, immutable */
	struct jd_jobs *jobs;
	struct jd_fair *fair;
	const struct jd_config *cfg;
	struct jd_security *sec;
	int res_proc;
	uint8_t cls_exec;
	void (*wake)(void *ctx);
	void *wake_ctx;
	void (*ended)(void *ctx, struct jd_job *j);
	struct jd_resources *resources;

	uv_async_t async;		/* loop thread's; fibers uv_async_send it */
	bool started;
	/* The live commands' pidfds, in one epoll set of our own watched by one uv_poll
	 * (process.c, watch_exit): a pidfd costs an epoll_ctl to add and one to drop, where
	 * a uv_poll of its own cost six and an ioctl.  Loop thread. */
	int pidfds_ep;
	uv_poll_t pidfds;
	_Atomic(struct jd_proc *) requests;	/* fibers (and feeders) push, the loop takes all */
	_Atomic(struct jd_proc_end *) synced;	/* loop-started commands whose output files
						 * are durable: the files' thread pushes */
	/* loop thread: */
	struct jd_proc *live;		/* processes alive or closing */
	struct jd_proc *slot_waiters, *slot_waiters_tail;	/* handler spawns waiting */
	uint32_t running;		/* processes alive now */
	uint64_t spawned, spawn_failed, timed_out, stopped, helper_spawns, direct_spawns;
	uint64_t on_loop, from_workers;	/* exec jobs started without a fiber (exec.c), and
					 * of them those a worker's feeder handed over */
	uint64_t peak_running;
	int devnull;			/* /dev/null (read-only, close-on-exec), opened at the
					 * first direct start: its child's stdin; -1: not open */
	uint8_t sig_set[64];		/* the signals not at SIG_DFL in the daemon (process.c,
					 * signals_known), which a direct child resets */
	uint8_t n_sig_set;
	uint8_t sig_ign[64];		/* of them the ignored ones: all a child cloned
					 * with CLONE_CLEAR_SIGHAND resets */
	uint8_t n_sig_ign;
	bool no_clone3;			/* clone3 refused (seccomp, a kernel before 5.5):
					 * direct starts take clone (process.c) */
	bool sig_known;			/* sig_set is read; cleared by a reload */
	char helper[4096];		/* path of jschedd-runas, "" if not found */
	/* control groups (exec_cgroup.c), loop thread: */
	char socket_path[108];		/* names the subtree */
	struct jd_cg *cg;		/* what applies; mode JD_CG_NONE: none */
	struct cg_client *cg_clients;	/* the weight and limits last written per client */
	struct cg_pending *cg_pending;	/* finished commands' groups not yet empty */
	uv_timer_t cg_timer;		/* retries cg_pending */
	bool cg_timer_on;
	uint64_t cg_seq;		/* handler processes' group numbers */
	uint64_t cg_abandoned;		/* groups that never emptied */
	struct cg_spare *cg_spares;	/* parked groups for reuse (exec_cgroup.c) */
	unsigned n_spares;
	uint64_t *recovered;		/* job ids of a previous run's groups, and what */
	struct jd_exec_usage *recovered_usage;	/* each used (jd_exec_recovered) */
	size_t n_recovered;
	struct jd_outfiles *outfiles;	/* exec jobs' output files (core/outfile.h), NULL:
					 * none (journal.sync "off"); set before serving */
	/* output_cb: an exec job's command wrote (its output log grew): its followers
	 * (net/follow.h); set before serving, NULL: none. */
	void (*output_cb)(void *ctx, struct jd_job *j);
	void *output_ctx;
};

/* jd_exec_handler: the handler every exec job runs (runner.c calls it on the job's fiber
 * like a call handler; the task's `exec` says where its command runs).  Returns 0 when the command exited 0, else JSCHED_EINTERNAL (the
 * final state comes from the job's result, jd_exec_job_done). */
extern const struct jsched_handler jd_exec_handler;

/* jd_exec_init: set up the async handle and the slots.  Loop thread, before serving.
 * jd_exec_stop: close it; every process has ended by then.  Loop thread, at exit. */
int jd_exec_init(struct jd_exec *x, const struct jd_exec_env *env);
void jd_exec_stop(struct jd_exec *x);

/* jd_exec_apply_config: after the runner set the live config's cap in the fair layer:
 * handler spawns waiting for a slot take the new ones.  Loop thread.  (slots.c) */
void jd_exec_apply_config(struct jd_exec *x);

/* jd_exec_cancel: stop j's processes (SIGTERM to each group, SIGKILL after the grace);
 * its handler's processes still waiting for a slot end unrun.  Loop thread. */
void jd_exec_cancel(struct jd_exec *x, struct jd_job *j, enum jp_cause cause);

/* jd_exec_start_job: start exec job j's command from the loop thread, without a fiber:
 * j was dispatched by the fair layer (it holds its process slot) and is marked running
 * here; its end comes through jd_exec_env.ended, on the loop thread, after which the
 * runner completes it in the fair layer and calls jd_exec_job_done.  Returns 0, or
 * JSCHED_ENOMEM (nothing started; the caller ends the job).  Loop thread.
 * jd_exec_hand_over: the same from a worker's feeder: the job goes to the loop thread
 * (the requests list and its uv_async), which starts it as above.  Returns false when
 * there is no memory for it (then the caller runs it on a fiber).  Any thread. */
int jd_exec_start_job(struct jd_exec *x, struct jd_job *j);
bool jd_exec_hand_over(struct jd_exec *x, struct jd_job *j);

/* jd_exec_job_done: an exec job's DONE notice: its final state from its result.  Loop
 * thread. */
void jd_exec_job_done(struct jd_exec *x, struct jd_job *j);

/* ---- control groups (exec_cgroup.c) ---------------------------------------------------
 * jd_exec_cgroups_open: detect and set up the commands' cgroups, kill and remove a
 * previous run's (after the socket is ours).  Returns 0 (also when none are usable: then
 * commands run without) or a JSCHED_E* code with err set when a forced cgroups.mode
 * cannot be had.  jd_exec_cgroups_close: remove what is left (at exit).
 * jd_exec_cgroups_on: true when commands get groups.
 * jd_exec_cgroup_create: the group for a command of job j (own_group: the exec job's
 * job-ID; else a handler's process, job-ID-SEQ) with limits l (NULL: none), into *out;
 * returns 0 or a JSCHED_E* code with why set.
 * jd_exec_cgroup_done: the command has ended: its usage into *usage (NULL: not wanted),
 * then the group is killed if need be and removed (later, if it still holds a process);
 * frees g.
 * jd_exec_recovered: whether a previous run left a group of job id (killed and removed
 * by jd_exec_cgroups_open), with what its groups used summed into *u (CPU times, kills
 * and limit hits added, the highest peak); for the journal's recovery to settle it.
 * jd_exec_cgroups_metrics: the "cgroups" member of "exec" in the metrics.
 * jd_exec_limits_ok / jd_exec_client_limits_ok: 0 when a spec's resources / a client's
 * limits can be applied here, else JSCHED_ENOT_SUPPORTED with the reason in why.
 * Loop thread. */
int jd_exec_cgroups_open(struct jd_exec *x, char *err, size_t errlen);
void jd_exec_cgroups_close(struct jd_exec *x);
bool jd_exec_cgroups_on(const struct jd_exec *x);
int jd_exec_cgroup_create(struct jd_exec *x, const struct jd_job *j, bool own_group,
			  const struct jd_cg_limits *l, struct jd_cg_job **out, char *why, size_t len);
void jd_exec_cgroup_done(struct jd_exec *x, struct jd_cg_job *g, const struct jd_cg_limits *l,
			 struct jd_exec_usage *usage);
bool jd_exec_recovered(const struct jd_exec *x, uint64_t id, struct jd_exec_usage *u);
json_t *jd_exec_cgroups_metrics(const struct jd_exec *x);
/* jd_exec_client_forget: client is being forgotten (core/clients.h): drop what was last
 * written for its group (keyed by the client's address, which a new client may reuse;
 * the group itself stays, empty, and a client of that name finds it again). */
void jd_exec_client_forget(struct jd_exec *x, const struct jd_client *client);
int jd_exec_limits_ok(const struct jd_exec *x, const struct jp_job_spec *sp, char *why,
		      size_t len);
int jd_exec_client_limits_ok(const struct jd_exec *x, const struct jd_client_conf *cc,
			     char *why, size_t len);

/* jd_exec_metrics: the metrics document's "exec" member (new reference).  Loop thread. */
json_t *jd_exec_metrics(struct jd_exec *x);

/* jd_exec_status: a short text for STATUS= ("3 processes, 2 waiting for a slot"). */
void jd_exec_status(struct jd_exec *x, char *buf, size_t len);

#endif /* JD_EXEC_H */
