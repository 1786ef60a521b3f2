/* daemon/run/exec_internal.h: what the three files of the process machinery share
 * (internal to them: exec.c, the job glue; slots.c, the process slots; process.c, a
 * process's life).  Names shared here have the jd__ prefix.  Loop thread unless said.
 */
#ifndef JD_EXEC_INTERNAL_H
#define JD_EXEC_INTERNAL_H

#include "daemon/run/cgroup.h"
#include "daemon/run/exec.h"
#include "daemon/pool/pool.h"

/* One command.  The fiber fills job/spec/res/done/job_slot and pushes it; from then on
 * every field belongs to the loop thread.  job_slot: its job holds a process slot (an
 * exec job's, given back at the job's completion); has_slot: the process took one itself
 * (a handler's), given back when it ends. */
struct jd_direct;

struct jd_proc {
	int pidfd;				/* -1 until spawned; in jd_exec.pidfds' set
						 * (pidfd_watched) until the leader is reaped */
	bool pidfd_watched;
	uv_pipe_t pin, pout, perr, pstat;	/* pstat: jschedd-runas's report pipe (its fd 3) */
	uv_timer_t timer;			/* time limit, then the grace periods */
	uv_write_t wreq;
	int open_handles;
	struct jd_exec *x;			/* the machinery it belongs to */
	struct jd_job *job;			/* on whose behalf; NULL after finish */
	const struct jd_exec_spec *spec;	/* borrowed until finish */
	struct jd_exec_result *res;		/* the owner's, written until finish */
	struct jd_event *done;			/* the fiber's, set at finish (NULL: on_loop) */
	bool job_slot, has_slot, helper, spawned, exited, finished;
	bool on_loop;				/* no fiber: the end goes to jd_exec.ended, and
						 * the loop marks the job running at its start */
	bool handed;				/* on_loop, from a worker's feeder */
	bool direct;				/* started by spawn_direct: dir's report says why
						 * it failed */
	struct jd_direct *dir;			/* what that child reads, freed with p */
	bool in_open, out_open, err_open, stat_open;
	int stage;				/* 0 running, 1 SIGTERM sent, 2 SIGKILL sent */
	pid_t pid;
	uint64_t started_ns;
	size_t limit;				/* capture bytes per stream */
	struct jd_outfile *of;			/* an exec job's output files, NULL: none */
	char stat_buf[256];
	size_t stat_len;
	struct jd_proc *next, *prev;		/* jd_exec.live */
	struct jd_proc *req_next;		/* requests, then slot waiters */
	struct jd_cg_job *cgj;			/* its control group, NULL: none */
	struct jd_cg_limits lim;		/* the group's limits */
	unsigned cg_polls;			/* waits for the group to empty after the kill */
	struct jd_exec_job *needs_x;		/* its job's named resources, held (resources.h) */
	char **envp;				/* spec env + their variables; NULL: spec's */
	char rbuf[16384];			/* scratch for reads (one read at a time) */
};


/* jd__requests_cb: the async's callback: take every request fibers pushed and start
 * each (process.c). */
void jd__requests_cb(uv_async_t *h);

/* jd__proc_spawn: start p's command; p holds a slot.  Failure ends p at once.
 * jd__proc_not_run: end p without a process (cancelled before it started), `cause` the
 * request's stop cause.  jd__proc_stop: SIGTERM to p's group, SIGKILL after the grace.
 * (process.c) */
void jd__proc_spawn(struct jd_proc *p);
/* jd__proc_start: a request taken by the loop thread (a fiber's, or an on_loop job's,
 * whose job is marked running first): spawn it, or queue it for a slot (a handler's). */
void jd__proc_start(struct jd_proc *p);
void jd__proc_not_run(struct jd_proc *p, enum jp_cause cause);
void jd__proc_stop(struct jd_proc *p);

/* jd__slot_release: a handler process's slot is free: to a waiting handler spawn, else
 * back to the fair layer.  jd__slot_try: take a slot for a handler's process p, or queue
 * p (returns false; released slots spawn it).  jd__slots_retry: hand free slots to the
 * waiting.  (slots.c) */
void jd__slot_release(struct jd_exec *x);
bool jd__slot_try(struct jd_exec *x, struct jd_proc *p);
void jd__slots_retry(struct jd_exec *x);

/* jd__pidfds_cb: jd_exec.pidfds is readable: reap each process whose pidfd is (process.c). */
void jd__pidfds_cb(uv_poll_t *h, int status, int events);

#endif /* JD_EXEC_INTERNAL_H */
