/* daemon/run/exec.c: commands, spawned by the loop thread for suspended fibers (see exec.h).
 *
 * A process's life, all on the loop thread once its request is taken:
 *   request   a fiber pushed a struct jd_proc and suspended on its event
 *   start     cancelled already?  not run.  No slot (a handler's process)?  wait for one.
 *   spawn     posix_spawn, directly or through jschedd-runas, watched through a pidfd;
 *             failure ends it at once
 *   running   stdout/stderr captured up to the limit (the rest is read and dropped, so the
 *             command never blocks on a full pipe); stdin written then closed; the timer
 *             is the time limit
 *   stopping  SIGTERM to the group, the timer becomes the grace, then SIGKILL; once more
 *             the grace, then the pipes are closed whoever still holds them
 *   finish    the leader has exited and every pipe is closed: the result is complete, the
 *             slot goes to the next waiter, the event wakes the fiber
 *   free      after the last handle's close callback
 * The fiber never touches the struct jd_proc after pushing it; this file never touches
 * the fiber's result, spec or event after setting the event.
 *
 * Why not uv_spawn: libuv 1.44 forks, and fork copies the page tables of every mapping
 * of the daemon (hundreds: the fiber stacks and their guard pages), 40% of the daemon's
 * time at 2,000 /bin/true jobs.  glibc's posix_spawn uses clone(CLONE_VM | CLONE_VFORK),
 * which copies nothing; its exit is watched with a pidfd (Linux 5.3) polled by the loop,
 * so libuv never learns of these children and its SIGCHLD handler never reaps them.
 * Measured with bench/e2e (sh bench/e2e/run.sh exec): 2,000 /bin/true jobs, 913 jobs/s
 * with uv_spawn (0.28x a raw posix_spawn loop, 2 at a time), 2,375 jobs/s with
 * posix_spawn (0.74x of the raw loop's 3,217 in the same run; 1.30x xargs -P 2).
 */
#include "daemon/run/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/core/jobs.h"
#include "daemon/core/log.h"
#include "daemon/run/runner.h"
#include "daemon/core/security.h"
#include "daemon/run/handler.h"
#include "proto/jproto.h"

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* One command.  The fiber fills job/spec/res/done/has_slot and pushes it; from then on
 * every field belongs to the loop thread. */
struct jd_proc {
	uv_poll_t pexit;			/* readable on the pidfd: the leader exited */
	int pidfd;				/* -1 until spawned */
	uv_pipe_t pin, pout, perr, pstat;	/* pstat: jschedd-runas's report pipe (fd 3) */
	uv_timer_t timer;			/* time limit, then the grace periods */
	uv_write_t wreq;
	int open_handles;
	struct jd_daemon *d;
	struct jd_job *job;			/* on whose behalf; NULL after finish */
	const struct jd_exec_spec *spec;	/* borrowed until finish */
	struct jd_exec_result *res;		/* the owner's, written until finish */
	struct jd_event *done;			/* the fiber's, set at finish */
	bool has_slot, helper, spawned, exited, finished;
	bool in_open, out_open, err_open, stat_open;
	int stage;				/* 0 running, 1 SIGTERM sent, 2 SIGKILL sent */
	pid_t pid;
	uint64_t started_ns;
	size_t limit;				/* capture bytes per stream */
	char stat_buf[256];
	size_t stat_len;
	struct jd_proc *next, *prev;		/* jd_exec.live */
	struct jd_proc *req_next;		/* requests, then slot waiters */
	char rbuf[16384];			/* scratch for reads (one read at a time) */
};

/* ---- slots ----------------------------------------------------------------------------- */

static struct jd_exec *exec_of(struct jd_daemon *d)
{
	return &d->exec;
}

size_t jd_exec_take(struct jd_daemon *d, struct jd_fair *f, struct jd_fair_job **fjs,
		    size_t want, size_t *taken)
{
	struct jd_exec *x = exec_of(d);
	size_t n, k = 0;

	/* Lock order: ours, then the fair layer's (inside jd_fair_take); nothing takes
	 * ours while holding the fair lock (its hooks run without it). */
	pthread_mutex_lock(&x->lock);
	n = jd_fair_take(f, fjs, want);
	for (size_t i = 0; i < n; i++) {
		struct jd_job *j = (struct jd_job *)((char *)fjs[i] - offsetof(struct jd_job, fj));

		if (j->exec && x->slots_used >= x->cap) {
			j->exec->parked = true;
			j->exec->park_next = NULL;
			if (x->parked_tail)
				x->parked_tail->exec->park_next = j;
			else
				x->parked = j;
			x->parked_tail = j;
			x->n_parked++;
			continue;
		}
		if (j->exec)
			x->slots_used++;
		fjs[k++] = fjs[i];
	}
	pthread_mutex_unlock(&x->lock);
	*taken = n;
	return k;
}

/* unpark: take j off the parked list.  Under x->lock. */
static void unpark(struct jd_exec *x, struct jd_job *j)
{
	struct jd_job **pp = &x->parked, *prev = NULL;

	while (*pp && *pp != j) {
		prev = *pp;
		pp = &(*pp)->exec->park_next;
	}
	if (!*pp)
		return;
	*pp = j->exec->park_next;
	if (x->parked_tail == j)
		x->parked_tail = prev;
	j->exec->parked = false;
	j->exec->park_next = NULL;
	x->n_parked--;
}

/* last_grant: when a parked job of client c last got a slot (0: never, or forgotten).
 * Loop thread. */
static uint64_t last_grant(const struct jd_exec *x, const struct jd_client *c)
{
	for (size_t i = 0; i < 64; i++)
		if (x->granted[i].client == c)
			return x->granted[i].at;
	return 0;
}

/* note_grant: remember that client c got a slot now (the table keeps the 64 most recent
 * clients; one forgotten counts as never served, which only helps it).  Loop thread. */
static void note_grant(struct jd_exec *x, const struct jd_client *c)
{
	size_t oldest = 0;

	x->grants++;
	for (size_t i = 0; i < 64; i++) {
		if (x->granted[i].client == c) {
			x->granted[i].at = x->grants;
			return;
		}
		if (x->granted[i].at < x->granted[oldest].at)
			oldest = i;
	}
	x->granted[oldest].client = c;
	x->granted[oldest].at = x->grants;
}

/* best_parked: the parked job whose client has the fewest running processes per unit of
 * weight; among equals, the client served least recently, then the oldest job.  Only the
 * oldest parked job of each client is a candidate, so one pass over the list with a small
 * table of clients does it.  Loop thread, under x->lock. */
static struct jd_job *best_parked(struct jd_exec *x)
{
	struct {
		const struct jd_client *c;
		unsigned running;
		bool seen;
	} cl[64];
	size_t nc = 0;
	struct jd_job *best = NULL;
	double best_load = 0;
	uint64_t best_at = 0;

	if (!x->parked || !x->parked->exec->park_next)
		return x->parked;
	for (struct jd_proc *p = x->live; p; p = p->next) {
		size_t i;

		if (p->finished || !p->job)
			continue;
		for (i = 0; i < nc && cl[i].c != p->job->client; i++)
			;
		if (i == nc && nc < 64)
			cl[nc++] = (__typeof__(cl[0])){p->job->client, 0, false};
		if (i < nc)
			cl[i].running++;
	}
	for (struct jd_job *j = x->parked; j; j = j->exec->park_next) {
		size_t i;
		double load;
		uint64_t at;

		for (i = 0; i < nc && cl[i].c != j->client; i++)
			;
		if (i == nc) {
			if (nc == 64)
				continue; /* past 64 clients: they wait for a later pass */
			cl[nc++] = (__typeof__(cl[0])){j->client, 0, false};
		}
		if (cl[i].seen)
			continue; /* an older job of this client was the candidate */
		cl[i].seen = true;
		load = (double)cl[i].running / (j->client->conf.weight ? j->client->conf.weight : 1);
		at = last_grant(x, j->client);
		if (!best || load < best_load || (load == best_load && at < best_at)) {
			best = j;
			best_load = load;
			best_at = at;
		}
	}
	return best ? best : x->parked;
}

static void spawn(struct jd_proc *p);
static void not_run(struct jd_proc *p, enum jd_cause cause);

/* slot_release: a process slot is free: hand it to a waiting handler spawn, else to the
 * best parked exec job (expiring those whose deadline passed while parked), else give it
 * back.  Loop thread. */
static void slot_release(struct jd_daemon *d)
{
	struct jd_exec *x = exec_of(d);

	for (;;) {
		struct jd_job *j = NULL;
		struct jd_proc *w = NULL;

		pthread_mutex_lock(&x->lock);
		if (x->slots_used > x->cap) {
			x->slots_used--; /* the cap was lowered: this slot is gone */
		} else if ((w = x->slot_waiters)) {
			x->slot_waiters = w->req_next;
			if (!x->slot_waiters)
				x->slot_waiters_tail = NULL;
		} else if ((j = best_parked(x))) {
			unpark(x, j);
			note_grant(x, j->client);
		} else {
			x->slots_used--;
		}
		pthread_mutex_unlock(&x->lock);
		if (w) {
			w->has_slot = true;
			spawn(w);
			return;
		}
		if (!j)
			return;
		if (j->fj.deadline_ns && jd_now_ns() > j->fj.deadline_ns) {
			/* It was dispatched in time but never started: its deadline says expired. */
			struct jd_fair_job *fj = &j->fj;

			jd_fair_complete(d->runner.fair, &fj, 1);
			jd_job_finish(&d->jobs, j, JD_EXPIRED, JD_CAUSE_DEADLINE, "not started before its deadline");
			continue;
		}
		jd_runner_dispatch(d, j);
		return;
	}
}

/* slot_try: take a slot for a handler's process, or queue it.  Loop thread. */
static bool slot_try(struct jd_exec *x, struct jd_proc *p)
{
	bool got;

	pthread_mutex_lock(&x->lock);
	got = x->slots_used < x->cap;
	if (got) {
		x->slots_used++;
	} else {
		p->req_next = NULL;
		if (x->slot_waiters_tail)
			x->slot_waiters_tail->req_next = p;
		else
			x->slot_waiters = p;
		x->slot_waiters_tail = p;
	}
	pthread_mutex_unlock(&x->lock);
	return got;
}

/* cap_of: the cap in force: exec.max_processes, but no more than the pool's fibers (each
 * running command's job waits on one; past them, waits would nest on worker stacks). */
static uint32_t cap_of(const struct jd_daemon *d)
{
	uint32_t cap = d->cfg.exec.max_processes;

	if (d->cfg.fibers && cap > d->cfg.fibers) {
		jd_log(JD_LOG_WARN, "exec.max_processes %u is more than the %u fibers: %u apply",
		       (unsigned)cap, d->cfg.fibers, d->cfg.fibers);
		cap = d->cfg.fibers;
	}
	return cap;
}

void jd_exec_apply_config(struct jd_daemon *d)
{
	struct jd_exec *x = exec_of(d);
	uint32_t cap = cap_of(d), more = 0;

	pthread_mutex_lock(&x->lock);
	if (cap > x->cap)
		more = cap - x->cap;
	x->cap = cap;
	/* Each newly free slot is taken the way a released one is. */
	x->slots_used += more;
	pthread_mutex_unlock(&x->lock);
	while (more-- > 0)
		slot_release(d);
	jd_jobs_settle(&d->jobs); /* parked jobs found expired on the way */
}

/* ---- finishing ------------------------------------------------------------------------- */

static void handle_closed_cb(uv_handle_t *h)
{
	struct jd_proc *p = h->data;
	struct jd_exec *x;

	if (--p->open_handles > 0)
		return;
	x = exec_of(p->d);
	if (p->prev)
		p->prev->next = p->next;
	else if (x->live == p)
		x->live = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p);
}

static void close_handle(uv_handle_t *h, bool *open)
{
	if (!*open)
		return;
	*open = false;
	uv_close(h, handle_closed_cb);
}

static void live_add(struct jd_exec *x, struct jd_proc *p)
{
	p->prev = NULL;
	p->next = x->live;
	if (x->live)
		x->live->prev = p;
	x->live = p;
}

/* wake: hand the result to the fiber; after this the fiber's memory is not ours. */
static void wake(struct jd_proc *p)
{
	struct jd_event *ev = p->done;

	p->finished = true;
	p->job = NULL;
	p->spec = NULL;
	p->res = NULL;
	p->done = NULL;
	jd_event_set(ev);
}

/* finish: the leader has exited and every output pipe is closed. */
static void finish(struct jd_proc *p)
{
	struct jd_exec_result *res = p->res;
	bool timer_open = true;

	if (p->finished)
		return;
	uv_timer_stop(&p->timer);
	if (p->stat_len > 0) {
		res->end = JD_EXEC_SPAWN_FAILED;
		snprintf(res->reason, sizeof(res->reason), "%.*s", (int)p->stat_len, p->stat_buf);
		exec_of(p->d)->spawn_failed++;
	}
	res->run_ns = jd_now_ns() - p->started_ns;
	close_handle((uv_handle_t *)&p->pin, &p->in_open);
	close_handle((uv_handle_t *)&p->timer, &timer_open);
	if (p->pidfd >= 0) {
		bool poll_open = true;

		/* uv_close stops the poll (epoll_ctl DEL) at once: the fd may go now. */
		close_handle((uv_handle_t *)&p->pexit, &poll_open);
		close(p->pidfd);
		p->pidfd = -1;
	}
	if (p->has_slot) {
		p->has_slot = false;
		slot_release(p->d);
	}
	wake(p);
}

static void maybe_finish(struct jd_proc *p)
{
	if (p->exited && !p->out_open && !p->err_open && !p->stat_open)
		finish(p);
}

/* not_run: the request ends without a process (cancelled before it started). */
static void not_run(struct jd_proc *p, enum jd_cause cause)
{
	p->res->end = JD_EXEC_NOT_RUN;
	p->res->stop_cause = cause;
	if (p->has_slot) {
		p->has_slot = false;
		slot_release(p->d);
	}
	wake(p);
	free(p);
}

/* ---- signals --------------------------------------------------------------------------- */

static void kill_group(struct jd_proc *p, int sig)
{
	/* The group outlives its leader while members remain; ESRCH means none does. */
	if (p->pid > 0 && kill(-p->pid, sig) < 0 && errno != ESRCH && !p->exited)
		kill(p->pid, sig);
}

static void timer_cb(uv_timer_t *t);

/* stop: begin terminating the group (idempotent). */
static void stop(struct jd_proc *p)
{
	if (p->stage > 0 || p->finished)
		return;
	p->stage = 1;
	kill_group(p, SIGTERM);
	exec_of(p->d)->stopped++;
	uv_timer_start(&p->timer, timer_cb, p->d->cfg.exec.kill_grace_ms, 0);
}

static void timer_cb(uv_timer_t *t)
{
	struct jd_proc *p = t->data;

	switch (p->stage) {
	case 0: /* the time limit */
		p->res->timed_out = true;
		exec_of(p->d)->timed_out++;
		stop(p);
		break;
	case 1:
		p->stage = 2;
		kill_group(p, SIGKILL);
		uv_timer_start(&p->timer, timer_cb, p->d->cfg.exec.kill_grace_ms + 100, 0);
		break;
	default:
		/* Killed and still not done: something outside the group holds the pipes. */
		jd_log(JD_LOG_WARN, "pid %d: output pipes still open after SIGKILL; closing them",
		       (int)p->pid);
		close_handle((uv_handle_t *)&p->pout, &p->out_open);
		close_handle((uv_handle_t *)&p->perr, &p->err_open);
		close_handle((uv_handle_t *)&p->pstat, &p->stat_open);
		maybe_finish(p);
		break;
	}
	jd_jobs_settle(&p->d->jobs);
}

/* exit_cb: the pidfd is readable: reap the leader and record how it ended. */
static void exit_cb(uv_poll_t *h, int status, int events)
{
	struct jd_proc *p = h->data;
	struct jd_exec *x = exec_of(p->d);
	siginfo_t si;
	int sig = 0;

	(void)events;
	memset(&si, 0, sizeof(si));
	if (p->exited)
		return;
	(void)status;
	if (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) < 0) {
		if (errno == EINTR)
			return;
		/* Nothing to reap (never expected): treat the leader as killed. */
		jd_log(JD_LOG_WARN, "pid %d: waitid: %s", (int)p->pid, strerror(errno));
		si.si_pid = p->pid;
		si.si_code = CLD_KILLED;
		si.si_status = SIGKILL;
	}
	if (si.si_pid == 0)
		return; /* not yet */
	uv_poll_stop(&p->pexit);
	if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
		sig = si.si_status;
	p->exited = true;
	x->running--;
	if (sig) {
		p->res->end = JD_EXEC_SIGNALED;
		p->res->signal = sig;
	} else {
		p->res->end = JD_EXEC_EXITED;
		p->res->exit_code = si.si_status;
	}
	/* What the leader left running in its group is stopped too (exec.h).  With the
	 * group gone, the timer only bounds the wait for pipes held from outside it. */
	if (p->stage == 0) {
		if (kill(-p->pid, 0) == 0) {
			stop(p);
		} else {
			p->stage = 2;
			uv_timer_start(&p->timer, timer_cb, p->d->cfg.exec.kill_grace_ms + 100, 0);
		}
	}
	maybe_finish(p);
	jd_jobs_settle(&p->d->jobs);
}

/* ---- pipes ----------------------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct jd_proc *p = h->data;

	(void)suggested;
	*buf = uv_buf_init(p->rbuf, sizeof(p->rbuf));
}

static void capture(struct jd_exec_stream *s, size_t limit, const char *data, size_t n)
{
	size_t room = limit > s->len ? limit - s->len : 0, take = n < room ? n : room;

	if (take) {
		unsigned char *m = realloc(s->data, s->len + take);

		if (!m) {
			s->truncated = true;
			return;
		}
		s->data = m;
		memcpy(s->data + s->len, data, take);
		s->len += take;
	}
	if (take < n)
		s->truncated = true;
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct jd_proc *p = st->data;

	if (nread == 0)
		return;
	if (nread < 0) {
		if (st == (uv_stream_t *)&p->pout)
			close_handle((uv_handle_t *)st, &p->out_open);
		else if (st == (uv_stream_t *)&p->perr)
			close_handle((uv_handle_t *)st, &p->err_open);
		else
			close_handle((uv_handle_t *)st, &p->stat_open);
		maybe_finish(p);
		jd_jobs_settle(&p->d->jobs);
		return;
	}
	if (st == (uv_stream_t *)&p->pout) {
		capture(&p->res->out, p->limit, buf->base, (size_t)nread);
	} else if (st == (uv_stream_t *)&p->perr) {
		capture(&p->res->err, p->limit, buf->base, (size_t)nread);
	} else {
		size_t room = sizeof(p->stat_buf) - 1 - p->stat_len;
		size_t n = (size_t)nread < room ? (size_t)nread : room;

		memcpy(p->stat_buf + p->stat_len, buf->base, n);
		p->stat_len += n;
	}
}

static void stdin_written_cb(uv_write_t *req, int status)
{
	struct jd_proc *p = req->data;

	(void)status; /* EPIPE: the command did not read it all; that is its business */
	close_handle((uv_handle_t *)&p->pin, &p->in_open);
}

/* ---- spawning -------------------------------------------------------------------------- */

/* env_path: the PATH of a spec's environment, or NULL. */
static const char *env_path(char *const *env)
{
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return NULL;
}

/* lookup: argv0 without a '/' in the directories of `path` (a PATH value), into out,
 * as execvp would find it.  Returns 0 or -ENOENT (or -EACCES if only a non-executable
 * file was found). */
static int lookup(const char *argv0, const char *path, char *out, size_t len)
{
	const char *dir = path;
	int rc = -ENOENT;

	while (*dir) {
		size_t n = strcspn(dir, ":");
		struct stat st;

		snprintf(out, len, "%.*s/%s", (int)n, dir, argv0);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			rc = -EACCES;
		}
		dir += n + (dir[n] == ':');
	}
	return rc;
}

__attribute__((format(printf, 2, 3))) static void spawn_failed(struct jd_proc *p,
								const char *fmt, ...)
{
	va_list ap;

	p->res->end = JD_EXEC_SPAWN_FAILED;
	va_start(ap, fmt);
	vsnprintf(p->res->reason, sizeof(p->res->reason), fmt, ap);
	va_end(ap);
	exec_of(p->d)->spawn_failed++;
}

/* pipe_open: a pipe whose parent end `mine` (0: read, 1: write) becomes p's libuv handle
 * h (counted and flagged *open from here on, so the caller's failure path closes it like
 * the others); the child's end is returned in *theirs.  Both close-on-exec (posix_spawn's
 * dup2 into 0-3 clears the flag on the child's copy).  Returns 0 or a negative errno. */
static int pipe_open(struct jd_proc *p, uv_pipe_t *h, bool *open, int mine, int *theirs)
{
	int fds[2];
	int rc;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	uv_pipe_init(&p->d->loop, h, 0);
	h->data = p;
	*open = true;
	p->open_handles++;
	if ((rc = uv_pipe_open(h, fds[mine])) < 0) {
		close(fds[mine]);
		close(fds[!mine]);
		return rc;
	}
	*theirs = fds[!mine];
	return 0;
}

/* start_process: posix_spawn `file` with argv/env in a new session (its own process
 * group), in `cwd` (NULL: stay), with child descriptors fds[0..nfds) as 0, 1, 2 (and 3),
 * fds[0] < 0 meaning /dev/null, every signal at its default and none blocked, as libuv's
 * child would set it.  Returns the pid or a negative errno. */
static pid_t start_process(const char *file, char *const *argv, char *const *env,
			   const char *cwd, const int *fds, int nfds)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid = -1;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return -rc;
	if ((rc = posix_spawnattr_init(&at)) != 0)
		goto out_fa;
	rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&at, &all);
	for (int i = 0; !rc && i < nfds; i++)
		rc = fds[i] < 0 ? posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDONLY, 0)
				: posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	if (!rc && cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, cwd);
	if (!rc)
		rc = posix_spawn(&pid, file, &fa, &at, argv, env);
	posix_spawnattr_destroy(&at);
out_fa:
	posix_spawn_file_actions_destroy(&fa);
	return rc ? -rc : pid;
}

/* spawn: start p's command (it holds a slot).  On failure the result says why and the
 * request ends at once. */
static void spawn(struct jd_proc *p)
{
	struct jd_daemon *d = p->d;
	struct jd_exec *x = exec_of(d);
	const struct jd_exec_spec *s = p->spec;
	struct jd_run_as as;
	char exe[PATH_MAX], uid_s[16], gid_s[16], dashes[] = "--";
	char **hargv = NULL;
	const char *file, *cwd;
	char *const *args;
	int child[4] = {-1, -1, -1, -1};
	int nfds, rc;
	pid_t pid;

	p->pidfd = -1;
	if (jd_cancel_fired(&p->job->ctok)) {
		not_run(p, jd_job_stop_cause(&d->jobs, p->job));
		return;
	}
	p->limit = s->output_bytes ? s->output_bytes : d->cfg.exec.output_bytes;
	p->started_ns = jd_now_ns();
	if (jd_security_run_as(&d->sec, p->job->uid, p->job->gid, d->exec.helper, &as, exe,
			       sizeof(exe)) < 0) {
		spawn_failed(p, "%s", exe);
		goto fail_early;
	}
	p->helper = as.helper;
	if (!p->helper) {
		struct stat st;

		const char *why = NULL;

		/* The working directory, checked here for a clear reason (a failed chdir
		 * and a failed exec look alike from posix_spawn). */
		if (stat(s->cwd, &st) < 0 || (S_ISDIR(st.st_mode) && access(s->cwd, X_OK) < 0))
			why = uv_strerror(-errno);
		else if (!S_ISDIR(st.st_mode))
			why = "not a directory";
		if (why) {
			spawn_failed(p, "cannot enter the working directory %s: %s", s->cwd, why);
			goto fail_early;
		}
		if (strchr(s->argv[0], '/')) {
			snprintf(exe, sizeof(exe), "%s", s->argv[0]);
		} else if ((rc = lookup(s->argv[0], env_path(s->env) ? env_path(s->env) : DEFAULT_PATH,
					exe, sizeof(exe))) < 0) {
			spawn_failed(p, "%s: %s", uv_strerror(rc), s->argv[0]);
			goto fail_early;
		}
		file = exe;
		args = s->argv;
		cwd = s->cwd;
	} else {
		size_t argc = 0;

		while (s->argv[argc])
			argc++;
		hargv = calloc(argc + 6, sizeof(char *));
		if (!hargv) {
			spawn_failed(p, "out of memory");
			goto fail_early;
		}
		snprintf(uid_s, sizeof(uid_s), "%u", (unsigned)as.uid);
		snprintf(gid_s, sizeof(gid_s), "%u", (unsigned)as.gid);
		hargv[0] = x->helper;
		hargv[1] = uid_s;
		hargv[2] = gid_s;
		hargv[3] = s->cwd;
		hargv[4] = dashes;
		memcpy(hargv + 5, s->argv, argc * sizeof(char *));
		file = x->helper;
		args = hargv;
		cwd = "/";
		x->helper_spawns++;
	}

	/* The pipes: stdin (only with stdin bytes; else /dev/null), stdout, stderr, and the
	 * helper's report pipe as descriptor 3. */
	uv_timer_init(&d->loop, &p->timer);
	p->timer.data = p;
	p->open_handles++;
	live_add(x, p);
	nfds = p->helper ? 4 : 3;
	rc = s->has_stdin ? pipe_open(p, &p->pin, &p->in_open, 1, &child[0]) : 0;
	if (!rc)
		rc = pipe_open(p, &p->pout, &p->out_open, 0, &child[1]);
	if (!rc)
		rc = pipe_open(p, &p->perr, &p->err_open, 0, &child[2]);
	if (!rc && p->helper)
		rc = pipe_open(p, &p->pstat, &p->stat_open, 0, &child[3]);
	pid = rc ? rc : start_process(file, args, s->env, cwd, child, nfds);
	for (int i = 0; i < 4; i++)
		if (child[i] >= 0)
			close(child[i]);
	free(hargv);
	if (pid > 0) {
		p->pid = pid;
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (p->pidfd < 0) {
			/* Cannot watch it (a kernel before 5.3): do not leave it behind. */
			rc = -errno;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = rc;
		}
	}
	if (pid < 0) {
		spawn_failed(p, "%s: %s", uv_strerror((int)pid), s->argv[0]);
		/* No process: close the pipes now; finish closes the rest. */
		p->exited = true;
		close_handle((uv_handle_t *)&p->pin, &p->in_open);
		close_handle((uv_handle_t *)&p->pout, &p->out_open);
		close_handle((uv_handle_t *)&p->perr, &p->err_open);
		close_handle((uv_handle_t *)&p->pstat, &p->stat_open);
		finish(p);
		return;
	}
	uv_poll_init(&d->loop, &p->pexit, p->pidfd);
	p->pexit.data = p;
	p->open_handles++;
	uv_poll_start(&p->pexit, UV_READABLE, exit_cb);
	p->spawned = true;
	x->spawned++;
	if (++x->running > x->peak_running)
		x->peak_running = x->running;
	uv_read_start((uv_stream_t *)&p->pout, alloc_cb, read_cb);
	uv_read_start((uv_stream_t *)&p->perr, alloc_cb, read_cb);
	if (p->helper)
		uv_read_start((uv_stream_t *)&p->pstat, alloc_cb, read_cb);
	if (s->has_stdin) {
		uv_buf_t b = uv_buf_init((char *)s->stdin_data, (unsigned)s->stdin_len);

		p->wreq.data = p;
		if (s->stdin_len == 0 ||
		    uv_write(&p->wreq, (uv_stream_t *)&p->pin, &b, 1, stdin_written_cb) < 0)
			close_handle((uv_handle_t *)&p->pin, &p->in_open);
	}
	if (s->timeout_ms)
		uv_timer_start(&p->timer, timer_cb, s->timeout_ms, 0);
	return;
fail_early:
	p->res->run_ns = 0;
	if (p->has_slot) {
		p->has_slot = false;
		slot_release(d);
	}
	wake(p);
	free(p);
}

/* start: a request taken from a fiber. */
static void start(struct jd_daemon *d, struct jd_proc *p)
{
	if (jd_cancel_fired(&p->job->ctok)) {
		not_run(p, jd_job_stop_cause(&d->jobs, p->job));
		return;
	}
	if (!p->has_slot && !slot_try(exec_of(d), p))
		return; /* waits for a slot (slot_release spawns it) */
	p->has_slot = true;
	spawn(p);
}

static void requests_cb(uv_async_t *h)
{
	struct jd_daemon *d = h->data;
	struct jd_proc *p = atomic_exchange_explicit(&exec_of(d)->requests, NULL, memory_order_acquire);
	struct jd_proc *fifo = NULL;

	while (p) {
		struct jd_proc *next = p->req_next;

		p->req_next = fifo;
		fifo = p;
		p = next;
	}
	while (fifo) {
		struct jd_proc *next = fifo->req_next;

		start(d, fifo);
		fifo = next;
	}
	jd_jobs_settle(&d->jobs);
}

/* ---- the fiber's side ------------------------------------------------------------------ */

/* run_wait: ask the loop thread to run spec for job j and suspend until it has ended.
 * has_slot: the job already holds a process slot (an exec job).  Returns 0 or
 * JSCHED_ENOMEM (then nothing ran).  On the job's fiber (or any worker). */
static int run_wait(struct jsched_task *t, const struct jd_exec_spec *spec,
		    struct jd_exec_result *res, bool has_slot)
{
	struct jd_daemon *d = (struct jd_daemon *)((char *)t->job->runner -
						   offsetof(struct jd_daemon, runner));
	struct jd_exec *x = exec_of(d);
	struct jd_proc *p = calloc(1, sizeof(*p));
	struct jd_proc *old;
	struct jd_event done;

	if (!p)
		return JSCHED_ENOMEM;
	jd_event_init(&done);
	p->pidfd = -1;
	p->d = d;
	p->job = t->job;
	p->spec = spec;
	p->res = res;
	p->done = &done;
	p->has_slot = has_slot;
	old = atomic_load_explicit(&x->requests, memory_order_relaxed);
	do {
		p->req_next = old;
	} while (!atomic_compare_exchange_weak_explicit(&x->requests, &old, p, memory_order_release,
							memory_order_relaxed));
	if (!old)
		uv_async_send(&x->async);
	jd_event_wait(&done);
	t->child_ns += res->run_ns;
	return 0;
}

static int exec_handler_fn(struct jsched_task *t, const json_t *args, json_t **result)
{
	struct jd_exec_job *x = t->job->exec;
	int rc;

	(void)args;
	*result = NULL;
	rc = run_wait(t, &x->spec, &x->res, true);
	if (rc < 0)
		return rc;
	return x->res.end == JD_EXEC_EXITED && x->res.exit_code == 0 && !x->res.stop_cause &&
			       !x->res.timed_out
		       ? 0
		       : JSCHED_EINTERNAL;
}

const struct jsched_handler jd_exec_handler = {"(exec)", exec_handler_fn, JSCHED_HANDLER_SUSPENDS};

/* strv_dup: a NULL-terminated copy of v (NULL gives an empty vector). */
static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **c;

	while (v && v[n])
		n++;
	if (!(c = calloc(n + 1, sizeof(char *))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			jd_strv_free(c);
			return NULL;
		}
	return c;
}

int jsched_task_run(struct jsched_task *t, const struct jsched_process *proc,
		    struct jsched_process_result *out)
{
	struct jd_exec_spec spec = {0};
	struct jd_exec_result res;
	int rc = JSCHED_ENOMEM;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	if (!proc || !proc->argv || !proc->argv[0] || !proc->argv[0][0]) {
		jsched_task_set_error(t, "jsched_task_run: argv[0] is required");
		return JSCHED_EINVAL;
	}
	memset(&res, 0, sizeof(res));
	spec.argv = strv_dup(proc->argv);
	spec.env = strv_dup(proc->env);
	spec.cwd = strdup(proc->cwd ? proc->cwd : "/");
	spec.has_stdin = proc->stdin_data != NULL;
	spec.stdin_len = proc->stdin_len;
	spec.timeout_ms = proc->timeout_ms;
	spec.output_bytes = proc->output_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)proc->output_bytes;
	if (spec.stdin_len && (spec.stdin_data = malloc(spec.stdin_len)))
		memcpy(spec.stdin_data, proc->stdin_data, spec.stdin_len);
	if (!spec.argv || !spec.env || !spec.cwd || (spec.stdin_len && !spec.stdin_data))
		goto out;
	if ((rc = run_wait(t, &spec, &res, false)) < 0)
		goto out;
	out->timed_out = res.timed_out;
	out->out = (char *)res.out.data;
	out->out_len = res.out.len;
	out->out_truncated = res.out.truncated;
	out->err = (char *)res.err.data;
	out->err_len = res.err.len;
	out->err_truncated = res.err.truncated;
	res.out.data = res.err.data = NULL;
	switch (res.end) {
	case JD_EXEC_EXITED:
		out->exit_code = res.exit_code;
		break;
	case JD_EXEC_SIGNALED:
		out->signal = res.signal;
		break;
	case JD_EXEC_SPAWN_FAILED:
		jsched_task_set_error(t, res.reason);
		rc = JSCHED_EIO;
		goto out;
	default:
		break;
	}
	rc = res.stop_cause || res.end == JD_EXEC_NOT_RUN ? JSCHED_ECANCELLED : 0;
out:
	free(res.out.data);
	free(res.err.data);
	jd_exec_spec_clear(&spec);
	return rc;
}

void jsched_process_result_free(struct jsched_process_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* ---- the loop thread's side ------------------------------------------------------------ */

int jd_exec_init(struct jd_daemon *d)
{
	struct jd_exec *x = exec_of(d);
	int rc;

	atomic_init(&x->requests, NULL);
	pthread_mutex_init(&x->lock, NULL);
	x->cap = cap_of(d);
	jd_security_helper_path(x->helper, sizeof(x->helper));
	if ((rc = uv_async_init(&d->loop, &x->async, requests_cb)) < 0)
		return JSCHED_EINTERNAL;
	x->async.data = d;
	x->started = true;
	return 0;
}

void jd_exec_stop(struct jd_daemon *d)
{
	struct jd_exec *x = exec_of(d);

	if (!x->started)
		return;
	x->started = false;
	uv_close((uv_handle_t *)&x->async, NULL);
	pthread_mutex_destroy(&x->lock);
}

void jd_exec_cancel(struct jd_daemon *d, struct jd_job *j, enum jd_cause cause)
{
	struct jd_exec *x = exec_of(d);
	bool was_parked = false;
	struct jd_proc **pp;

	if (j->exec) {
		pthread_mutex_lock(&x->lock);
		if (j->exec->parked) {
			unpark(x, j);
			was_parked = true;
		}
		pthread_mutex_unlock(&x->lock);
	}
	if (was_parked) {
		struct jd_fair_job *fj = &j->fj;

		jd_fair_complete(d->runner.fair, &fj, 1);
		jd_job_finish_stopped(&d->jobs, j, false);
		return;
	}
	/* Handler spawns waiting for a slot end without running. */
	pthread_mutex_lock(&x->lock);
	for (pp = &x->slot_waiters; *pp;) {
		struct jd_proc *w = *pp;

		if (w->job != j) {
			pp = &w->req_next;
			continue;
		}
		*pp = w->req_next;
		if (x->slot_waiters_tail == w) {
			x->slot_waiters_tail = NULL;
			for (struct jd_proc *q = x->slot_waiters; q; q = q->req_next)
				x->slot_waiters_tail = q;
		}
		pthread_mutex_unlock(&x->lock);
		not_run(w, cause);
		pthread_mutex_lock(&x->lock);
		pp = &x->slot_waiters;
	}
	pthread_mutex_unlock(&x->lock);
	for (struct jd_proc *p = x->live; p; p = p->next)
		if (p->job == j && !p->finished) {
			p->res->stop_cause = cause;
			stop(p);
		}
}

static const char *sig_name(int sig)
{
	const char *s = sigabbrev_np(sig);

	return s ? s : "?";
}

void jd_exec_job_done(struct jd_daemon *d, struct jd_job *j)
{
	const struct jd_exec_result *r = &j->exec->res;
	char why[320];

	jd_job_set_running(&d->jobs, j);
	if (r->end == JD_EXEC_PENDING) {
		/* The request never reached the loop (cancelled before the handler ran, or
		 * no memory for it): the slot taken for it in the feeder is free again. */
		slot_release(d);
		if (jd_job_stop_asked(&d->jobs, j))
			jd_job_finish_stopped(&d->jobs, j, true);
		else
			jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_SPAWN, "out of memory");
	} else if (r->end == JD_EXEC_NOT_RUN || r->stop_cause) {
		jd_job_finish_stopped(&d->jobs, j, true);
	} else if (r->end == JD_EXEC_SPAWN_FAILED) {
		jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_SPAWN, r->reason);
	} else if (r->timed_out) {
		snprintf(why, sizeof(why), "ran longer than its time limit of %llu ms",
			 (unsigned long long)j->exec->spec.timeout_ms);
		jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_TIMEOUT, why);
	} else if (r->end == JD_EXEC_SIGNALED) {
		snprintf(why, sizeof(why), "killed by signal %d (SIG%s)", r->signal, sig_name(r->signal));
		jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_SIGNAL, why);
	} else if (r->end == JD_EXEC_EXITED && r->exit_code == 0) {
		jd_job_finish(&d->jobs, j, JD_SUCCEEDED, JD_CAUSE_NONE, NULL);
	} else if (r->end == JD_EXEC_EXITED) {
		snprintf(why, sizeof(why), "exited with status %d", r->exit_code);
		jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_EXIT, why);
	} else {
		jd_job_finish(&d->jobs, j, JD_FAILED, JD_CAUSE_SPAWN, "the command did not run");
	}
}

json_t *jd_exec_metrics(struct jd_daemon *d)
{
	struct jd_exec *x = exec_of(d);
	uint64_t parked, slots;
	uint32_t cap;

	pthread_mutex_lock(&x->lock);
	parked = x->n_parked;
	slots = x->slots_used;
	cap = x->cap;
	pthread_mutex_unlock(&x->lock);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s?}", "max_processes",
			 (json_int_t)cap, "running", (json_int_t)x->running, "slots_used",
			 (json_int_t)slots, "parked", (json_int_t)parked, "peak_running",
			 (json_int_t)x->peak_running, "spawned", (json_int_t)x->spawned,
			 "spawn_failed", (json_int_t)x->spawn_failed, "timed_out",
			 (json_int_t)x->timed_out, "stopped", (json_int_t)x->stopped,
			 "run_as_helper", (json_int_t)x->helper_spawns, "helper",
			 x->helper[0] ? x->helper : NULL);
}

void jd_exec_status(struct jd_daemon *d, char *buf, size_t len)
{
	struct jd_exec *x = exec_of(d);
	uint64_t parked;

	pthread_mutex_lock(&x->lock);
	parked = x->n_parked;
	pthread_mutex_unlock(&x->lock);
	snprintf(buf, len, "%u processes, %llu waiting for a slot", (unsigned)x->running,
		 (unsigned long long)parked);
}
