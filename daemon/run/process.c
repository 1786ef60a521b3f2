/* daemon/run/process.c: a process's life: spawned by the loop thread for a suspended
 * fiber, watched, captured, stopped (see exec.h for the whole machinery).
 *
 * A process's life, all on the loop thread once its request is taken:
 *   request   a fiber pushed a struct jd_proc and suspended on its event
 *   start     cancelled already?  not run.  No slot (a handler's process)?  wait for one.
 *   spawn     started directly (below: a clone, then the exec, in its group) or, when
 *             the identity changes, posix_spawn of jschedd-runas; watched through a
 *             pidfd; a failure ends it at once, or once the child's report says why
 *   running   stdout/stderr captured into the result's log (core/outlog.h: past the
 *             limit the beginning and the end are kept; the rest is read and dropped, so
 *             the command never blocks on a full pipe) and, for an exec job with the
 *             journal on, its output files (core/outfile.h); stdin written then closed;
 *             the timer is the time limit
 *   stopping  SIGTERM to the group, the timer becomes the grace, then SIGKILL; once more
 *             the grace, then the pipes are closed whoever still holds them
 *   finish    the leader has exited and every pipe is closed: the result is complete, the
 *             slot goes to the next waiter, the event wakes the fiber (with output files:
 *             once the files' thread has synced them, so the job's end is recorded after)
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
 * posix_spawn (0.74x of the raw loop's 3,217 in the same run; 1.30x xargs -P 2).  The
 * direct start (below) replaced posix_spawn for commands that keep jschedd's identity:
 * with a cgroup each it saves the helper's exec; figures in daemon/README.md.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch/rawsys.h"
#include "daemon/core/clock.h"
#include "daemon/core/log.h"
#include "daemon/core/outfile.h"
#include "daemon/run/exec_internal.h"
#include "daemon/run/resources.h"

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* ---- finishing ------------------------------------------------------------------------- */

static void handle_closed_cb(uv_handle_t *h)
{
	struct jd_proc *p = h->data;
	struct jd_exec *x;

	if (--p->open_handles > 0)
		return;
	x = p->x;
	if (p->prev)
		p->prev->next = p->next;
	else if (x->live == p)
		x->live = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p->dir);
	free(p);
}

static void close_handle(uv_handle_t *h, bool *open)
{
	if (!*open)
		return;
	*open = false;
	uv_close(h, handle_closed_cb);
}

/* watch_exit: p's pidfd into the exec machinery's epoll set (jd__pidfds_cb reaps it).
 * 0 or a negative errno.  unwatch_exit: out of it again (once reaped, or at finish). */
static int watch_exit(struct jd_proc *p)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };

	if (epoll_ctl(p->x->pidfds_ep, EPOLL_CTL_ADD, p->pidfd, &ev) < 0)
		return -errno;
	p->pidfd_watched = true;
	return 0;
}

static void unwatch_exit(struct jd_proc *p)
{
	if (!p->pidfd_watched)
		return;
	p->pidfd_watched = false;
	/* Explicitly, not by the close: an epoll entry lives until every copy of its file is
	 * closed, and a command cloned on a worker thread at this moment holds a copy of this
	 * pidfd until its close_range or exec; the entry would then outlive the process
	 * record and report it again (tried: a heap-use-after-free under ASan in
	 * jd__pidfds_cb, 1 run in 3 of test_daemon_retry). */
	epoll_ctl(p->x->pidfds_ep, EPOLL_CTL_DEL, p->pidfd, NULL);
}

static void live_add(struct jd_exec *x, struct jd_proc *p)
{
	p->prev = NULL;
	p->next = x->live;
	if (x->live)
		x->live->prev = p;
	x->live = p;
}

/* wake: hand the result to the fiber (or, for an on_loop command, to the runner's ended
 * hook); after this the job's memory is not ours. */
static void wake(struct jd_proc *p)
{
	struct jd_event *ev = p->done;
	struct jd_job *j = p->job;

	p->finished = true;
	p->job = NULL;
	p->spec = NULL;
	p->res = NULL;
	p->done = NULL;
	if (p->on_loop)
		p->x->ended(p->x->wake_ctx, j);
	else
		jd_event_set(ev);
}

/* needs_done: the command's named resources are free again (before its fiber completes
 * the job in the fair layer, which gives back the units: resources.h). */
static void needs_done(struct jd_proc *p)
{
	if (p->needs_x) {
		jd_resources_release(p->x->resources, p->needs_x);
		p->needs_x = NULL;
	}
	jd_strv_free(p->envp);
	p->envp = NULL;
}

/* A command's end waiting for its output files to be durable: a fiber's event, or (an
 * on_loop command, ev NULL) its job, which goes back to the loop thread on x->synced. */
struct jd_proc_end {
	struct jd_event *ev;
	struct jd_exec_result *res;
	struct jd_exec *x;
	struct jd_job *job;
	struct jd_proc_end *next;
};

/* synced_cb: the output files' thread: the files are durable (rc 0), or not (then the
 * final record carries the output from memory): wake the fiber, or hand the job's end
 * to the loop thread (jd__requests_cb takes it). */
static void synced_cb(void *arg, int rc)
{
	struct jd_proc_end *w = arg;
	struct jd_proc_end *old;

	if (rc < 0)
		w->res->files = false;
	if (w->ev) {
		jd_event_set(w->ev);
		free(w);
		return;
	}
	old = atomic_load_explicit(&w->x->synced, memory_order_relaxed);
	do {
		w->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&w->x->synced, &old, w, memory_order_release,
							memory_order_relaxed));
	if (!old)
		uv_async_send(&w->x->async);
}

/* wake_synced: as wake, once the output files are durable (outfile.h: before the
 * job's end is recorded). */
static void wake_synced(struct jd_proc *p)
{
	struct jd_outfile *of = p->of;
	struct jd_proc_end *w = malloc(sizeof(*w));

	p->of = NULL;
	p->res->files = jd_outfile_wrote(of) && !jd_outfile_failed(of);
	if (!w) {
		p->res->files = false;
		jd_outfile_close(of, NULL, NULL);
		wake(p);
		return;
	}
	w->ev = p->done;
	w->res = p->res;
	w->x = p->x;
	w->job = p->on_loop ? p->job : NULL;
	p->finished = true;
	p->job = NULL;
	p->spec = NULL;
	p->res = NULL;
	p->done = NULL;
	jd_outfile_close(of, synced_cb, w);
}

/* ---- starting a command directly --------------------------------------------------------
 *
 * A command that needs no identity change starts without jschedd-runas, also when it
 * has a control group: the loop thread clones a child that shares its memory (CLONE_VM,
 * like posix_spawn's) but not its waiting (no CLONE_VFORK), on a stack of its own in
 * struct jd_direct; the child enters the job's group (a write to each of its tasks files
 * on v1, cgroup.procs on v2: cgroup.h, jd_cg_enter_file), starts a session, sets every
 * signal the daemon changed to its default (signals_known; with clone3 only the ignored
 * ones: clone3_start), puts the pipes at 0-2, enters the working directory, unblocks the
 * signals (blocked across a clone; none with clone3) and execs.  So the
 * command's first instruction runs in its group, as with the helper, without the helper's
 * exec (its loader's start-up is most of what the helper cost) and without the loop
 * waiting for the attaches (which can wait for an RCU grace period: cgroup.h).  Until it
 * execs the child shares the loop thread's memory and thread pointer, so it runs nothing
 * from libc: raw system calls only (arch/rawsys.h: no errno), no sanitizer
 * instrumentation, and nothing but its stack and jd_direct written.  A failure before the
 * exec is two numbers written into jd_direct (which step, errno: the memory is shared until
 * the exec), the child exits 127, and once the leader is reaped the job fails with cause
 * spawn and the reason (direct_reason).  Until they went there, the numbers went through a
 * report pipe, as jschedd-runas's still do: 8 of the loop thread's 66 system calls per
 * command (the pipe, its two ends' closes, libuv's set-up, the read of its EOF), and one
 * wake-up of the loop at every exec, when the pipe's close-on-exec end closed.  The struct
 * lives until the process is freed, after it was reaped, so the child never runs on freed
 * memory.  The alternative, a spawner thread doing the same with vfork and libc, would add
 * two hand-offs per command. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define JD_TSAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define JD_TSAN_BUILD 1
#endif
#if defined(JD_RAWSYS) && !defined(JD_TSAN_BUILD)
#define DIRECT 1
#else
/* Other CPUs: posix_spawn, and the helper for a group.  Also a TSan build: its runtime
 * keeps per-thread state behind the thread pointer the child shares, and gcc still calls
 * __tsan_func_entry in a no_sanitize("thread") function, so a direct child there writes
 * into the loop thread's state (commands died of SIGSEGV before their exec, with data
 * races reported against a "thread" TSan could not name). */
#define DIRECT 0
#endif

enum direct_step { STEP_GROUP = 1, STEP_FDS, STEP_CWD, STEP_EXEC };

#define DIRECT_STACK 8192

/* What a directly started child reads (the parent's, until the child is reaped). */
struct jd_direct {
	_Alignas(16) char stack[DIRECT_STACK];	/* the child's, until it execs */
	const char *file;
	char *const *argv, *const *envp;
	const char *cwd;
	int fds[3];		/* the command's 0, 1, 2 (-1: /dev/null) */
	int32_t report[2];	/* the child's: which step failed (0: none), its errno */
	size_t ngroups;
	const char *procs[JD_CG_MAX_HIER];	/* the job group's files to write "0" to */
	int enter[JD_CG_MAX_HIER];	/* those files open already (a held group:
					 * jd_cg_enter_fds), if nenter == ngroups */
	size_t nenter;
	uint8_t sigs[64];	/* the signals to set to SIG_DFL (signals_known) */
	int nsigs;
	char paths[];
};

#ifdef JD_RAWSYS
#define SYS3(n, a, b, c) jd_rawsys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* direct_child: the child of spawn_direct (see above).  Never returns. */
__attribute__((noinline, no_sanitize("address"), no_sanitize("thread"), no_sanitize("undefined")))
static int direct_child(void *arg)
{
	/* The kernel's struct sigaction: SIG_DFL, no flags, no restorer, no mask. */
	static const unsigned long dfl[4];
	static const unsigned long no_signals;
	const struct jd_direct *d = arg;
	struct jd_direct *w = arg; /* the report's: the only member the child writes */
	int step = STEP_FDS;
	long rc = 0;
	long keep[JD_CG_MAX_HIER], src[3], from = 3;
	int nkeep = 0;

	/* First its three descriptors to 0-2 (a source below 3 that is not its own target
	 * is moved up first, so that no dup3 overwrites a source still to come), then,
	 * before anything that can wait (a group's attach can wait for an RCU grace period),
	 * every other descriptor closed but a held group's open tasks files (close-on-exec:
	 * cgroup.h, jd_cg_enter_fds): the daemon's listening socket and its journal's lock
	 * are shared with this copy of its table, and a daemon killed now must be able to
	 * start again at once, which it cannot while they are open here.  Moving the pipes
	 * first leaves one close_range above them, where keeping their numbers through the
	 * closes took one per gap between kept descriptors (seven with a held group). */
	for (int i = 0; i < 3; i++) {
		src[i] = d->fds[i];
		if (src[i] >= 0 && src[i] < 3 && src[i] != i &&
		    (src[i] = SYS3(SYS_fcntl, d->fds[i], F_DUPFD_CLOEXEC, 3)) < 0) {
			rc = src[i];
			goto fail;
		}
	}
	for (long i = 0; i < 3; i++) {
		long fd = src[i];

		if (fd < 0 && (fd = SYS3(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
			rc = fd;
			goto fail;
		}
		rc = fd == i ? SYS3(SYS_fcntl, fd, F_SETFD, 0) : SYS3(SYS_dup3, fd, i, 0);
		if (rc < 0)
			goto fail;
	}
	/* The kept ones in order (an insertion sort of at most five; spawn_direct keeps
	 * none below 3). */
	for (size_t i = 0; i < d->nenter; i++)
		keep[nkeep++] = d->enter[i];
	for (int i = 1; i < nkeep; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			long x = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = x;
		}
	for (int i = 0; i < nkeep; i++) {
		if (keep[i] > from)
			(void)SYS3(SYS_close_range, from, keep[i] - 1, 0);
		if (keep[i] >= from)
			from = keep[i] + 1;
	}
	(void)SYS3(SYS_close_range, from, ~0U, 0);

	step = STEP_GROUP;
	for (size_t i = 0; i < d->ngroups; i++) {
		long fd = d->nenter ? d->enter[i]
				    : SYS3(SYS_openat, AT_FDCWD, d->procs[i], O_WRONLY | O_CLOEXEC);

		if (fd < 0) {
			rc = fd;
			goto fail;
		}
		rc = SYS3(SYS_write, fd, "0", 1);
		if (!d->nenter)
			(void)SYS3(SYS_close, fd, 0, 0);
		if (rc < 0)
			goto fail;
	}
	(void)SYS3(SYS_setsid, 0, 0, 0);
	for (int i = 0; i < d->nsigs; i++)
		(void)jd_rawsys6(SYS_rt_sigaction, d->sigs[i], (long)dfl, 0, 8, 0, 0);
	step = STEP_CWD;
	if ((rc = SYS3(SYS_chdir, d->cwd, 0, 0)) < 0)
		goto fail;
	(void)jd_rawsys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&no_signals, 0, 8, 0, 0);
	step = STEP_EXEC;
	rc = SYS3(SYS_execve, d->file, d->argv, d->envp);
fail:
	/* Read by the loop once it has reaped the child (exit_cb): the kernel's exit and
	 * wait order these stores before that read; the atomics say so to the compiler. */
	__atomic_store_n(&w->report[1], (int32_t)-rc, __ATOMIC_RELAXED);
	__atomic_store_n(&w->report[0], step, __ATOMIC_RELEASE);
	(void)SYS3(SYS_exit_group, 127, 0, 0);
	return 127; /* not reached */
}

#if defined(__x86_64__)
/* clone3 with CLONE_CLEAR_SIGHAND (Linux 5.5), x86-64 only: the child starts with every
 * signal the daemon handles at its default, so it resets only the ignored ones (2 here,
 * of the 7 it resets after clone) and the loop thread
 * no longer blocks every signal around the clone (two rt_sigprocmask): a signal that
 * reaches the child before its exec meets no handler of the daemon's, only its default.
 * No exit signal either (exit_signal 0): its end is seen through the pidfd alone, and
 * the kernel queues no SIGCHLD to the daemon per command (waitid then needs __WALL).
 * glibc 2.36 has no clone3 wrapper, so the child's return on its own stack is the
 * assembly below.  AArch64 keeps clone: qemu-user, where CI runs that build, answers
 * clone3 with ENOSYS, so an AArch64 copy of it would never run in a test; the same
 * answer here (seccomp) falls back to clone for good (jd_exec.no_clone3). */
#define JD_CLONE3 1
#define JD_CLONE_CLEAR_SIGHAND 0x100000000ULL
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/* The kernel's struct clone_args up to tls (CLONE_ARGS_SIZE_VER0, 64 bytes). */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* clone3_start: clone3(ca); the child calls fn(arg) on ca's stack and exits with what it
 * returns.  Returns the child's pid to the caller, or -errno.  The kernel keeps every
 * register but rax, rcx and r11 in the child, so fn and arg reach it in rdx and r8, and
 * the stack's top (16-aligned) gives fn the ABI's entry alignment after the call. */
__attribute__((noinline, no_sanitize("address"), no_sanitize("thread"), no_sanitize("undefined")))
static long clone3_start(struct clone3_args *ca, int (*fn)(void *), void *arg)
{
	register long a0 __asm__("rdi") = (long)ca;
	register long a1 __asm__("rsi") = (long)sizeof(*ca);
	register long f __asm__("rdx") = (long)fn;
	register long v __asm__("r8") = (long)arg;
	long ret;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r8, %%rdi\n\t"
			 "call *%%rdx\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov %[exit], %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "a"((long)SYS_clone3), "r"(a0), "r"(a1), "r"(f), "r"(v),
			   [exit] "i"(SYS_exit_group)
			 : "rcx", "r11", "memory");
	return ret;
}
#endif

/* signals_known: the signals whose disposition is not SIG_DFL in the daemon, into
 * x->sig_set, and of them the ignored ones into x->sig_ign (all a child of clone3_start
 * resets: its handled ones start at their default), once (and again after a reload:
 * jd_exec_apply_config).  A child of clone resets the whole sig_set alone, where it
 * reset all 62 (62 of its 85 system calls before the exec):
 * an ignored one because the exec keeps SIG_IGN, a handled one because until its exec
 * the child runs on the daemon's memory, where that handler must not run (its signals
 * are blocked until it has reset them; the others are at their default already, which
 * the exec keeps).  Read with the raw call, which also sees glibc's two internal
 * signals (32 and 33) that sigaction() refuses.  A handler installed after this read
 * (none is: the daemon sets its signals at start) would be missed until the next reload:
 * such a signal arriving in the instant between the child's unblock and its exec would
 * run that handler in the child; exec would still reset it for the command. */
static void signals_known(struct jd_exec *x)
{
	if (x->sig_known)
		return;
	x->n_sig_set = x->n_sig_ign = 0;
	for (int sig = 1; sig <= 64; sig++) {
		unsigned long ksa[4] = {0, 0, 0, 0}; /* handler, flags, restorer, mask */
		bool known;

		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		known = syscall(SYS_rt_sigaction, sig, NULL, ksa, 8) == 0;
		if (known && ksa[0] == (unsigned long)SIG_DFL)
			continue;
		x->sig_set[x->n_sig_set++] = (uint8_t)sig; /* not default, or unknown */
		if (!known || ksa[0] == (unsigned long)SIG_IGN)
			x->sig_ign[x->n_sig_ign++] = (uint8_t)sig;
	}
	x->sig_known = true;
}

/* spawn_direct: start p's command as above: `file` (copied) with argv/env in `cwd` (those
 * three must live until p is freed: the spec's, or p's), child descriptors fds[0..3) (-1:
 * /dev/null: `devnull` if it is open, else the child opens it), failures reported in
 * p->dir (direct_report), in p's group if it has one.
 * Returns the pid, with its pidfd in *pidfd, or a negative errno. */
static pid_t spawn_direct(struct jd_proc *p, const char *file, char *const *argv,
			  char *const *env, const char *cwd, const int *fds, int devnull,
			  int *pidfd)
{
	const char *dirs[JD_CG_MAX_HIER];
	size_t need = 0, at = 0, ndir = 0;
	struct jd_direct *d;
	sigset_t all, old;
	pid_t pid;
	int e;

	/* Everything the child reads after this function returns is in d or in p's spec:
	 * `file` is the caller's buffer, so it is copied. */
	need = strlen(file) + 1;
	if (p->cgj)
		jd_cg_place(p->cgj, dirs, &ndir);
	for (size_t i = 0; i < ndir; i++)
		need += strlen(dirs[i]) + sizeof("/cgroup.procs"); /* the longer of the two */
	if (!(d = malloc(sizeof(*d) + need)))
		return -ENOMEM;
	memcpy(d->paths, file, strlen(file) + 1);
	at = strlen(file) + 1;
	d->file = d->paths;
	d->argv = argv;
	d->envp = env;
	d->cwd = cwd;
	memcpy(d->fds, fds, sizeof(d->fds));
	if (d->fds[0] < 0)
		d->fds[0] = devnull; /* -1 still: the child opens it */
	d->report[0] = d->report[1] = 0;
	d->ngroups = ndir;
	d->nenter = 0;
	if (p->cgj)
		jd_cg_enter_fds(p->cgj, d->enter, &d->nenter);
	for (size_t i = 0; i < d->nenter; i++)
		if (d->enter[i] < 3)
			d->nenter = 0; /* the child's 0-2 come first: by path then */
	if (d->nenter != ndir)
		d->nenter = 0;
	for (size_t i = 0; i < ndir && !d->nenter; i++) { /* the paths, when not held open */
		int n = sprintf(d->paths + at, "%s/%s", dirs[i], jd_cg_enter_file(p->x->cg));

		d->procs[i] = d->paths + at;
		at += (size_t)n + 1;
	}
	signals_known(p->x);
	p->dir = d;
	*pidfd = -1;
#ifdef JD_CLONE3
	if (!p->x->no_clone3) {
		struct clone3_args ca = {
			.flags = CLONE_VM | CLONE_PIDFD | JD_CLONE_CLEAR_SIGHAND,
			.pidfd = (uint64_t)(uintptr_t)pidfd,
			.exit_signal = 0,
			.stack = (uint64_t)(uintptr_t)d->stack,
			.stack_size = sizeof(d->stack),
		};
		long rc;

		memcpy(d->sigs, p->x->sig_ign, p->x->n_sig_ign);
		d->nsigs = p->x->n_sig_ign;
		rc = clone3_start(&ca, direct_child, d);
		if (rc >= 0 || (rc != -ENOSYS && rc != -EINVAL && rc != -E2BIG && rc != -EPERM))
			return (pid_t)rc;
		p->x->no_clone3 = true; /* and clone below, from now on */
		jd_log(JD_LOG_INFO, "clone3 refused (%s): commands start with clone", strerror((int)-rc));
	}
#endif
	memcpy(d->sigs, p->x->sig_set, p->x->n_sig_set);
	d->nsigs = p->x->n_sig_set;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(direct_child, d->stack + sizeof(d->stack), CLONE_VM | CLONE_PIDFD | SIGCHLD, d,
		    pidfd);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -e : pid;
}

/* direct_report: after the reap, a directly started child's report (step, errno) into
 * p's stat_buf, as the helper's report pipe leaves its text there (finish: a failed
 * start). */
static void direct_report(struct jd_proc *p)
{
	int32_t rep[2];

	if (!p->direct || !p->dir || !(rep[0] = __atomic_load_n(&p->dir->report[0], __ATOMIC_ACQUIRE)))
		return;
	rep[1] = __atomic_load_n(&p->dir->report[1], __ATOMIC_RELAXED);
	memcpy(p->stat_buf, rep, sizeof(rep));
	p->stat_len = sizeof(rep);
}
#else
static pid_t spawn_direct(struct jd_proc *p, const char *file, char *const *argv,
			  char *const *env, const char *cwd, const int *fds, int devnull,
			  int *pidfd)
{
	(void)p, (void)file, (void)argv, (void)env, (void)cwd, (void)fds, (void)devnull;
	*pidfd = -1;
	return -ENOSYS;
}

static void direct_report(struct jd_proc *p)
{
	(void)p;
}
#endif

/* reason_of: errno e worded as jschedd-runas words it (strerror with a lower-case first
 * letter: "no such file or directory"), into buf; returns buf.  The same words on every
 * start path, for every errno (libuv's uv_strerror has no name for some, ENOEXEC's). */
static const char *reason_of(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", e > 0 ? strerror(e) : "unknown error");
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

/* direct_reason: why a directly started child failed (its report: step, errno). */
static void direct_reason(const struct jd_proc *p, char *out, size_t len)
{
	int32_t rep[2] = {0, 0};
	char why[128];

	if (p->stat_len >= sizeof(rep))
		memcpy(rep, p->stat_buf, sizeof(rep));
	reason_of(rep[1], why, sizeof(why));
	switch (rep[0]) {
	case STEP_GROUP:
		snprintf(out, len, "cannot enter the job's control group: %s", why);
		break;
	case STEP_FDS:
		snprintf(out, len, "cannot set up the command's standard descriptors: %s", why);
		break;
	case STEP_CWD:
		snprintf(out, len, "cannot enter the working directory %s: %s", p->spec->cwd, why);
		break;
	default:
		snprintf(out, len, "%s: %s", why, p->spec->argv[0]);
		break;
	}
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
		if (p->direct)
			direct_reason(p, res->reason, sizeof(res->reason));
		else
			snprintf(res->reason, sizeof(res->reason), "%.*s", (int)p->stat_len, p->stat_buf);
		p->x->spawn_failed++;
	}
	res->run_ns = jd_now_ns() - p->started_ns;
	if (p->cgj) {
		jd_exec_cgroup_done(p->x, p->cgj, &p->lim, &res->usage);
		p->cgj = NULL;
	}
	close_handle((uv_handle_t *)&p->pin, &p->in_open);
	close_handle((uv_handle_t *)&p->timer, &timer_open);
	if (p->pidfd >= 0) {
		unwatch_exit(p);
		close(p->pidfd);
		p->pidfd = -1;
	}
	if (p->has_slot) {
		p->has_slot = false;
		jd__slot_release(p->x);
	}
	needs_done(p);
	if (p->of)
		wake_synced(p);
	else
		wake(p);
}

static void timer_cb(uv_timer_t *t);

/* CG_WAIT_MS / cg_polls_max: how often, and how many times, the group is looked at after
 * its kill until it is empty (within the same bound as the wait for the pipes). */
#define CG_WAIT_MS 10
static unsigned cg_polls_max(const struct jd_proc *p)
{
	return 1 + (p->x->cfg->exec.kill_grace_ms + 100) / CG_WAIT_MS;
}

/* cg_busy: whether p's group still holds a process, once its leader has exited.  A
 * group found empty then stays so (cgroup.h, jd_cg_job.empty) and is not read again:
 * exit_cb, maybe_finish and jd_exec_cgroup_done each asked, three reads per command. */
static bool cg_busy(struct jd_proc *p)
{
	if (!p->cgj || p->cgj->empty)
		return false;
	p->cgj->empty = !jd_cg_populated(p->x->cg, p->cgj);
	return !p->cgj->empty;
}

static void maybe_finish(struct jd_proc *p)
{
	if (!p->exited || p->out_open || p->err_open || p->stat_open)
		return;
	/* With a control group, the command is over when its group is empty: what is left
	 * is stopped like the leader's process group (SIGTERM, the grace, the kill), then
	 * waited for. */
	if (p->cgj && p->cg_polls < cg_polls_max(p) && cg_busy(p)) {
		if (p->stage == 0) {
			jd__proc_stop(p);
		} else if (p->stage >= 2) {
			p->cg_polls++;
			uv_timer_start(&p->timer, timer_cb, CG_WAIT_MS, 0);
		}
		return;
	}
	finish(p);
}

/* not_run: the request ends without a process (cancelled before it started). */
void jd__proc_not_run(struct jd_proc *p, enum jp_cause cause)
{
	if (p->cgj) {
		jd_exec_cgroup_done(p->x, p->cgj, NULL, NULL);
		p->cgj = NULL;
	}
	p->res->end = JD_EXEC_NOT_RUN;
	p->res->stop_cause = cause;
	if (p->has_slot) {
		p->has_slot = false;
		jd__slot_release(p->x);
	}
	wake(p);
	free(p);
}

/* ---- signals --------------------------------------------------------------------------- */

static void kill_group(struct jd_proc *p, int sig)
{
	/* The group outlives its leader while members remain; ESRCH means none does, or
	 * none yet: a directly started child that has not reached its setsid (it may be
	 * waiting in its group's attach) gets the signal itself, held blocked until it has
	 * reset its signals (clone) or at its default from the start (clone3), so a cancel
	 * that early still stops it before its exec. */
	if (p->pid > 0 && kill(-p->pid, sig) < 0 && !p->exited)
		kill(p->pid, sig);
}

/* stop: begin terminating the group (idempotent). */
void jd__proc_stop(struct jd_proc *p)
{
	if (p->stage > 0 || p->finished)
		return;
	p->stage = 1;
	kill_group(p, SIGTERM);
	if (p->cgj)
		(void)jd_cg_signal(p->x->cg, p->cgj, SIGTERM);
	p->x->stopped++;
	uv_timer_start(&p->timer, timer_cb, p->x->cfg->exec.kill_grace_ms, 0);
}

static void timer_cb(uv_timer_t *t)
{
	struct jd_proc *p = t->data;

	switch (p->stage) {
	case 0: /* the time limit */
		p->res->timed_out = true;
		p->x->timed_out++;
		jd__proc_stop(p);
		break;
	case 1:
		p->stage = 2;
		kill_group(p, SIGKILL);
		if (p->cgj) {
			/* Every process of the job, wherever it moved its session. */
			(void)jd_cg_kill(p->x->cg, p->cgj);
			uv_timer_start(&p->timer, timer_cb, CG_WAIT_MS, 0);
			break;
		}
		uv_timer_start(&p->timer, timer_cb, p->x->cfg->exec.kill_grace_ms + 100, 0);
		break;
	default:
		if (p->cgj && p->cg_polls < cg_polls_max(p)) {
			/* The group was killed: its processes are going. */
			if (p->out_open || p->err_open || p->stat_open || !p->exited) {
				p->cg_polls++;
				uv_timer_start(&p->timer, timer_cb, CG_WAIT_MS, 0);
			} else {
				maybe_finish(p);
			}
			break;
		}
		/* Killed and still not done: something outside the group holds the pipes. */
		jd_log(JD_LOG_WARN, "pid %d: output pipes still open after SIGKILL; closing them",
		       (int)p->pid);
		close_handle((uv_handle_t *)&p->pout, &p->out_open);
		close_handle((uv_handle_t *)&p->perr, &p->err_open);
		close_handle((uv_handle_t *)&p->pstat, &p->stat_open);
		maybe_finish(p);
		break;
	}
	jd_jobs_settle(p->x->jobs);
}

/* exited: p's pidfd is readable: reap the leader and record how it ended. */
static void exited(struct jd_proc *p)
{
	struct jd_exec *x = p->x;
	siginfo_t si;
	int sig = 0;

	memset(&si, 0, sizeof(si));
	if (p->exited)
		return;
	if (waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG | __WALL) < 0) {
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
	unwatch_exit(p); /* a reaped pidfd stays readable */
	direct_report(p);
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
		if (kill(-p->pid, 0) == 0 || cg_busy(p)) {
			jd__proc_stop(p);
		} else {
			p->stage = 2;
			uv_timer_start(&p->timer, timer_cb, p->x->cfg->exec.kill_grace_ms + 100, 0);
		}
	}
	maybe_finish(p);
	jd_jobs_settle(p->x->jobs);
}

/* jd__pidfds_cb: see exec_internal.h.  Level-triggered: what a batch of 8 leaves is read
 * at the next loop iteration (exits seldom come more than a few at once: at most 11 in a
 * pass when 100 commands were released together, test_daemon_exec's test_exits_at_once,
 * which so goes through more than one pass).  A process stays allocated until its handles close,
 * after this returns, so each event's process is valid while the batch is handled. */
void jd__pidfds_cb(uv_poll_t *h, int status, int events)
{
	struct jd_exec *x = h->data;
	struct epoll_event ev[8];
	int n;

	jd_loop_woke();
	(void)status;
	(void)events;
	do
		n = epoll_wait(x->pidfds_ep, ev, (int)(sizeof ev / sizeof ev[0]), 0);
	while (n < 0 && errno == EINTR);
	for (int i = 0; i < n; i++) {
		struct jd_proc *p = ev[i].data.ptr;

		if (p->pidfd_watched)
			exited(p);
	}
}

/* ---- pipes ----------------------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct jd_proc *p = h->data;

	(void)suggested;
	*buf = uv_buf_init(p->rbuf, sizeof(p->rbuf));
}

/* capture: n bytes of stream s (0 stdout, 1 stderr) into the result's log and, for an
 * exec job with the journal on, its output files. */
static void capture(struct jd_proc *p, unsigned s, const char *data, size_t n)
{
	struct jd_outlog *l = &p->res->log;
	uint64_t seq = l->seq, off = l->total[s];

	(void)jd_outlog_add(l, s, data, n); /* out of memory: counted as not kept */
	if (p->of)
		jd_outfile_write(p->of, s, seq, off, data, n);
	if (p->x->output_cb && p->job->exec && p->spec == &p->job->exec->spec)
		p->x->output_cb(p->x->output_ctx, p->job);
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct jd_proc *p = st->data;

	jd_loop_woke();

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
		jd_jobs_settle(p->x->jobs);
		return;
	}
	if (st == (uv_stream_t *)&p->pout) {
		capture(p, 0, buf->base, (size_t)nread);
	} else if (st == (uv_stream_t *)&p->perr) {
		capture(p, 1, buf->base, (size_t)nread);
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
	p->x->spawn_failed++;
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
	uv_pipe_init(p->x->loop, h, 0);
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
 * fds[0] < 0 meaning /dev/null, every signal at its default and none blocked, as the
 * direct start sets them.  Returns the pid or a negative errno.
 *
 * The default set is every bit, not sigfillset's: glibc's sigfillset leaves out its two
 * internal signals (32 and 33, thread cancellation and setxid), and its posix_spawn
 * child sets a signal outside that set which it handles to SIG_IGN, which the exec
 * keeps, so the command would start with those two ignored (SigIgn 0x180000000). */
static pid_t start_process(const char *file, char *const *argv, char *const *env,
			   const char *cwd, const int *fds, int nfds)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid = -1;
	int rc;

	sigemptyset(&none);
	memset(&all, 0xff, sizeof(all));
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
void jd__proc_spawn(struct jd_proc *p)
{
	struct jd_exec *x = p->x;
	const struct jd_exec_spec *s = p->spec;
	struct jd_run_as as;
	char exe[PATH_MAX], uid_s[16], gid_s[16], dashes[] = "--", dash_c[] = "-c";
	char **hargv = NULL;
	const char *file = NULL, *cwd = NULL;
	char *const *args = NULL;
	int child[4] = {-1, -1, -1, -1};
	int nfds, rc;
	bool again;
	pid_t pid;

	p->pidfd = -1;
	if (jd_cancel_fired(&p->job->run->ctok)) {
		jd__proc_not_run(p, jd_job_stop_cause(x->jobs, p->job));
		return;
	}
	p->limit = s->output_bytes ? s->output_bytes : x->cfg->exec.output_bytes;
	again = p->res->log.gen > 0; /* a job run again (a retry): its old files go */
	jd_outlog_clear(&p->res->log);
	p->res->log.limit = p->limit;
	p->res->files = false;
	p->res->loaded = true; /* memory holds it from here on */
	/* Output files for exec jobs; not for an array's elements, whose output moves into
	 * their array's slots when they settle (core/array.h) and stays in their records. */
	if (x->outfiles && p->job->exec && p->spec == &p->job->exec->spec && !p->job->elem_of)
		p->of = jd_outfile_new(x->outfiles, p->job->id, p->limit, again);
	p->started_ns = jd_now_ns();
	if (jd_security_run_as(x->sec, p->job->uid, p->job->gid, x->helper, &as, exe,
			       sizeof(exe)) < 0) {
		spawn_failed(p, "%s", exe);
		goto fail_early;
	}
	p->helper = as.helper;
	if (p->job->exec && p->spec == &p->job->exec->spec && jd_resources_counted(s) &&
	    p->job->cls == x->cls_exec && p->job->exec->backend == JD_BACKEND_LOCAL) {
		spawn_failed(p, "its needs, CPUs or memory could not be given a needs class (at "
			     "most %u sets at once)", JD_FAIR_MAX_CLASSES);
		goto fail_early;
	}
	if (p->job->exec && p->spec == &p->job->exec->spec && s->n_needs) {
		char why[256];

		if (jd_resources_assign(x->resources, p->job->exec, &p->envp, why, sizeof(why)) < 0) {
			spawn_failed(p, "%s", why);
			goto fail_early;
		}
		p->needs_x = p->job->exec;
	}
	if (jd_exec_cgroups_on(x)) {
		char why[PATH_MAX + 64];
		bool own = p->job->exec && p->spec == &p->job->exec->spec;

		p->lim.memory_max = s->memory_max;
		p->lim.pids_max = s->pids_max;
		p->lim.cpu_max_milli = s->cpu_milli;
		if (jd_exec_cgroup_create(x, p->job, own, &p->lim, &p->cgj, why, sizeof(why)) < 0) {
			spawn_failed(p, "%s", why);
			goto fail_early;
		}
	}
	p->direct = DIRECT && !p->helper && x->cfg->exec.direct;
	if (!p->helper) {
		struct stat st;
		char buf[128];
		const char *why = NULL;

		/* The working directory, checked here for a clear reason (a failed chdir
		 * and a failed exec look alike from posix_spawn).  A direct child's chdir
		 * reports its own errno (direct_reason: the same words), so its start
		 * does without the stat and the access. */
		if (p->direct)
			;
		else if (stat(s->cwd, &st) < 0 || (S_ISDIR(st.st_mode) && access(s->cwd, X_OK) < 0))
			why = reason_of(errno, buf, sizeof(buf));
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
			spawn_failed(p, "%s: %s", reason_of(-rc, buf, sizeof(buf)), s->argv[0]);
			goto fail_early;
		}
		file = exe;
		args = s->argv;
		cwd = s->cwd;
	}
	if (p->helper || (p->cgj && !p->direct)) {
		/* jschedd-runas [-c DIR]... UID|- GID|- CWD -- ARGV: it enters the command's
		 * group, then takes the owner's identity (runas.c). */
		const char *dirs[JD_CG_MAX_HIER];
		size_t argc = 0, k = 0, ndir = 0;

		if (p->cgj)
			jd_cg_place(p->cgj, dirs, &ndir);

		while (s->argv[argc])
			argc++;
		hargv = calloc(argc + 2 * ndir + 6, sizeof(char *));
		if (!hargv) {
			spawn_failed(p, "out of memory");
			goto fail_early;
		}
		if (p->helper) {
			snprintf(uid_s, sizeof(uid_s), "%u", (unsigned)as.uid);
			snprintf(gid_s, sizeof(gid_s), "%u", (unsigned)as.gid);
			x->helper_spawns++;
		} else {
			snprintf(uid_s, sizeof(uid_s), "-");
			snprintf(gid_s, sizeof(gid_s), "-");
		}
		hargv[k++] = x->helper;
		for (size_t i = 0; i < ndir; i++) {
			hargv[k++] = dash_c;
			hargv[k++] = (char *)(uintptr_t)dirs[i];
		}
		hargv[k++] = uid_s;
		hargv[k++] = gid_s;
		hargv[k++] = s->cwd;
		hargv[k++] = dashes;
		memcpy(hargv + k, s->argv, argc * sizeof(char *));
		file = x->helper;
		args = hargv;
		cwd = "/";
		p->helper = true; /* its report pipe, descriptor 3 */
	}

	/* The pipes: stdin (only with stdin bytes; else /dev/null), stdout, stderr, and the
	 * helper's report pipe (its descriptor 3; a direct child reports in p->dir). */
	uv_timer_init(x->loop, &p->timer);
	p->timer.data = p;
	p->open_handles++;
	live_add(x, p);
	nfds = p->helper ? 4 : 3;
	rc = s->has_stdin ? pipe_open(p, &p->pin, &p->in_open, 1, &child[0]) : 0;
	/* A direct child's /dev/null is the loop's, dup'd at 0 (an open and a close less
	 * in every child); child[0] stays -1 so that it is not closed below. */
	if (p->direct && !s->has_stdin && x->devnull < 0)
		x->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!rc)
		rc = pipe_open(p, &p->pout, &p->out_open, 0, &child[1]);
	if (!rc)
		rc = pipe_open(p, &p->perr, &p->err_open, 0, &child[2]);
	if (!rc && p->helper)
		rc = pipe_open(p, &p->pstat, &p->stat_open, 0, &child[3]);
	if (rc)
		pid = rc;
	else if (p->direct)
		pid = spawn_direct(p, file, args, p->envp ? p->envp : s->env, cwd, child,
				   s->has_stdin ? -1 : x->devnull, &p->pidfd);
	else
		pid = start_process(file, args, p->envp ? p->envp : s->env, cwd, child, nfds);
	for (int i = 0; i < 4; i++)
		if (child[i] >= 0)
			close(child[i]);
	free(hargv);
	if (pid > 0) {
		p->pid = pid;
		if (p->pidfd < 0)
			p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		else
			x->direct_spawns++;
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
		char why[128];

		spawn_failed(p, "%s: %s", reason_of(-(int)pid, why, sizeof(why)), s->argv[0]);
		/* No process: close the pipes now; finish closes the rest. */
		p->exited = true;
		close_handle((uv_handle_t *)&p->pin, &p->in_open);
		close_handle((uv_handle_t *)&p->pout, &p->out_open);
		close_handle((uv_handle_t *)&p->perr, &p->err_open);
		close_handle((uv_handle_t *)&p->pstat, &p->stat_open);
		finish(p);
		return;
	}
	bool unwatched = (rc = watch_exit(p)) < 0;
	if (unwatched) {
		/* No room for an epoll entry (never seen): a command whose end nothing would
		 * notice is killed, and reaped below once it has died. */
		siginfo_t si;

		jd_log(JD_LOG_WARN, "pid %d: cannot watch its exit (%s): killed", (int)pid, strerror(-rc));
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOWAIT | __WALL);
	}
	p->spawned = true;
	if (p->job)
		jd_job_process_started(p->x->jobs, p->job, p->pid); /* the journal keeps it */
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
	if (unwatched)
		exited(p);
	return;
fail_early:
	p->res->run_ns = 0;
	needs_done(p);
	if (p->of) {
		jd_outfile_close(p->of, NULL, NULL); /* nothing was written */
		p->of = NULL;
	}
	if (p->cgj) {
		jd_exec_cgroup_done(x, p->cgj, NULL, NULL);
		p->cgj = NULL;
	}
	if (p->has_slot) {
		p->has_slot = false;
		jd__slot_release(x);
	}
	wake(p);
	free(p);
}

void jd__proc_start(struct jd_proc *p)
{
	struct jd_exec *x = p->x;

	if (p->on_loop) {
		/* What a worker's START notice does for a job run on a fiber. */
		x->on_loop++;
		x->from_workers += p->handed;
		p->job->run->run_started_ns = jd_now_ns();
		p->job->run->run_started_ms = jd_now_ms();
		jd_job_set_running(x->jobs, p->job);
	}
	if (jd_cancel_fired(&p->job->run->ctok)) {
		jd__proc_not_run(p, jd_job_stop_cause(x->jobs, p->job));
		return;
	}
	if (!p->job_slot && !p->has_slot && !jd__slot_try(x, p))
		return; /* waits for a slot (a released one spawns it) */
	p->has_slot = !p->job_slot;
	jd__proc_spawn(p);
}

void jd__requests_cb(uv_async_t *h)
{
	struct jd_exec *x = h->data;
	struct jd_proc *p = atomic_exchange_explicit(&x->requests, NULL, memory_order_acquire);
	struct jd_proc_end *e = atomic_exchange_explicit(&x->synced, NULL, memory_order_acquire);
	struct jd_proc *fifo = NULL;

	jd_loop_woke();

	/* Loop-started commands whose output files are durable now: their ends. */
	while (e) {
		struct jd_proc_end *next = e->next;

		x->ended(x->wake_ctx, e->job);
		free(e);
		e = next;
	}
	while (p) {
		struct jd_proc *next = p->req_next;

		p->req_next = fifo;
		fifo = p;
		p = next;
	}
	while (fifo) {
		struct jd_proc *next = fifo->req_next;

		jd__proc_start(fifo);
		fifo = next;
	}
	jd_jobs_settle(x->jobs);
}

