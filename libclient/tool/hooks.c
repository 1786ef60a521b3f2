/* libclient/tool/hooks.c: a job's completion hooks (--on-exit CMD, --notify), run by this
 * tool, as the user who runs it, once the job has ended.
 *
 * The daemon keeps the hooks with the job (its journal too) and never runs them: it only
 * says who may (a claim, granted once: net/op_hook.c) and records how they went, so a hook
 * is visible in the job's record and a failing one never changes the job's result.  Here:
 *
 *   - on_exit runs as `/bin/sh -c CMD` in this process's working directory and
 *     environment plus JSCHED_JOB_ID, JSCHED_JOB_STATE, JSCHED_JOB_EXIT_CODE (an exec job
 *     that exited), JSCHED_JOB_SIGNAL, JSCHED_JOB_CAUSE (a job that did not succeed), in
 *     a process group of its own, with stdin /dev/null;
 *   - notify runs notify-send where there is a desktop session (DISPLAY, WAYLAND_DISPLAY)
 *     and one is installed, else rings the terminal's bell with a line saying how the job
 *     ended;
 *   - both are bounded by the hooks' time limit (hook_timeout_ms, default 60 s): at it the
 *     process group gets SIGTERM, then SIGKILL 2 s later, and its CPU time is capped at the
 *     limit (RLIMIT_CPU), so a hook that loops is stopped with its group; and it may make
 *     at most HOOK_PROCS processes beyond those its user has (RLIMIT_NPROC), so one that
 *     forks without end fails to fork instead of filling the machine.  (A process that
 *     leaves its group escapes the kill, and the kernel does not hold root to
 *     RLIMIT_NPROC; the daemon's own commands have cgroups for that, a client has none
 *     of its own.)
 *
 * A hook run in the background (submit without --wait) is a detached process of this
 * tool: it waits for the job on its own connection and, when the daemon restarts under it,
 * connects again (every second, for at most an hour), because the job and its hooks
 * survive the restart in the journal.
 */
#include "libclient/tool/tool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* Processes a hook may add to those its user already has (RLIMIT_NPROC). */
#define HOOK_PROCS 256

/* user_procs: the processes (threads count too, as RLIMIT_NPROC counts them) of uid now,
 * from /proc; 0 if it cannot be read. */
static long user_procs(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char path[300], line[256];
		FILE *f;
		unsigned long u = (unsigned long)-1;
		long threads = 1;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "Uid: %lu", &u);
			sscanf(line, "Threads: %ld", &threads);
		}
		fclose(f);
		if (u == (unsigned long)uid)
			n += threads;
	}
	closedir(d);
	return n;
}

/* The hooks of a record, as its "hooks" member says. */
struct hooks {
	char *on_exit;
	bool notify;
	int64_t timeout_ms;
	char state[16];
};

/* hooks_of: r's hooks into h (h->on_exit malloc'd).  Returns false if r has none. */
static bool hooks_of(const struct jsched_result *r, struct hooks *h)
{
	json_t *rec = r->json ? json_loads(r->json, 0, NULL) : NULL;
	const json_t *o = json_object_get(rec, "hooks");
	const char *cmd = json_string_value(json_object_get(o, "on_exit"));

	memset(h, 0, sizeof(*h));
	if (!json_is_object(o)) {
		json_decref(rec);
		return false;
	}
	h->on_exit = cmd ? strdup(cmd) : NULL;
	h->notify = json_is_true(json_object_get(o, "notify"));
	h->timeout_ms = json_integer_value(json_object_get(o, "timeout_ms"));
	if (h->timeout_ms <= 0)
		h->timeout_ms = 60000;
	snprintf(h->state, sizeof(h->state), "%s", json_string_value(json_object_get(o, "state"))
				? json_string_value(json_object_get(o, "state")) : "");
	json_decref(rec);
	return true;
}

/* How one command of a hook ended. */
struct ran {
	int exit_code;	/* -1: none */
	int signal;	/* 0: none */
	bool timed_out;
	bool not_started;
	char why[256];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* run: argv (argv[0] a path, or a name looked up in PATH) with the job's variables, bounded
 * by timeout_ms; fills *out. */
static void run(char *const argv[], const struct jsched_result *r, int64_t timeout_ms, struct ran *out)
{
	char id[32], code[32], sig[32];
	int status = 0, pidfd;
	long procs;
	pid_t pid;
	int64_t deadline = now_ms() + timeout_ms, kill_at = -1;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	snprintf(id, sizeof(id), "%" PRIu64, r->id);
	snprintf(code, sizeof(code), "%d", r->exit_code);
	snprintf(sig, sizeof(sig), "%d", r->signal);
	procs = user_procs(getuid()) + HOOK_PROCS;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		out->not_started = true;
		snprintf(out->why, sizeof(out->why), "cannot fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		struct rlimit cpu = {(rlim_t)(timeout_ms / 1000 + 1), (rlim_t)(timeout_ms / 1000 + 2)};
		struct rlimit nproc;
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setpgid(0, 0);
		setrlimit(RLIMIT_CPU, &cpu);
		if (getrlimit(RLIMIT_NPROC, &nproc) == 0 && (nproc.rlim_cur == RLIM_INFINITY ||
							     nproc.rlim_cur > (rlim_t)procs)) {
			nproc.rlim_cur = (rlim_t)procs;
			setrlimit(RLIMIT_NPROC, &nproc);
		}
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		setenv("JSCHED_JOB_ID", id, 1);
		setenv("JSCHED_JOB_STATE", r->state_name ? r->state_name : "", 1);
		unsetenv("JSCHED_JOB_EXIT_CODE");
		unsetenv("JSCHED_JOB_SIGNAL");
		unsetenv("JSCHED_JOB_CAUSE");
		if (r->exit_code >= 0)
			setenv("JSCHED_JOB_EXIT_CODE", code, 1);
		if (r->signal > 0)
			setenv("JSCHED_JOB_SIGNAL", sig, 1);
		if (r->cause != NULL)
			setenv("JSCHED_JOB_CAUSE", r->cause, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no race with the kill below */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		siginfo_t si;
		int64_t now, until;
		int w;

		/* Ended? (not reaped yet: while its zombie holds the pid, the group's id cannot
		 * be anyone else's, so the kill after the loop is safe) */
		si.si_pid = 0;
		w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
		now = now_ms();
		if (w == 0 && si.si_pid == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(out->why, sizeof(out->why), "lost the hook's process: %s", strerror(errno));
			out->not_started = true;
			break;
		}
		if (kill_at < 0 && now >= deadline) {
			/* Its time is up: the whole group, gently, then not. */
			kill(-pid, SIGTERM);
			out->timed_out = true;
			kill_at = now + 2000;
		} else if (kill_at >= 0 && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = INT64_MAX;
		}
		until = kill_at < 0 ? deadline : kill_at == INT64_MAX ? now + 1000 : kill_at;
		if (pidfd >= 0) {
			struct pollfd pf = {pidfd, POLLIN, 0};

			poll(&pf, 1, (int)(until - now > 0 ? (until - now < 1000 ? until - now : 1000) : 1));
		} else {
			struct timespec ts = {0, 10 * 1000000};

			nanosleep(&ts, NULL); /* no pidfd (before Linux 5.3): a short poll */
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (out->not_started)
		return;
	kill(-pid, SIGKILL); /* what it left in its group goes with it */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		out->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		out->signal = WTERMSIG(status);
	if (out->timed_out)
		snprintf(out->why, sizeof(out->why), "stopped after its time limit of %" PRId64 " ms",
			 timeout_ms);
	else if (out->exit_code == 127)
		snprintf(out->why, sizeof(out->why), "exited with status 127 (a command not found?)");
	else if (out->exit_code > 0)
		snprintf(out->why, sizeof(out->why), "exited with status %d", out->exit_code);
	else if (out->signal > 0)
		snprintf(out->why, sizeof(out->why), "killed by signal %d", out->signal);
}

/* in_path: whether name is an executable in $PATH. */
static bool in_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, name);
		if (n && access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/* notify: a desktop notification, or a bell on tty (else stderr).  Returns true if it
 * worked. */
static bool notify(const struct jsched_result *r, int64_t timeout_ms, int tty, struct ran *out)
{
	char title[96], body[400];

	snprintf(title, sizeof(title), "jsched: job %" PRIu64 " %s", r->id, r->state_name ? r->state_name : "ended");
	snprintf(body, sizeof(body), "%s%s%s", r->command ? r->command : r->fn ? r->fn : "",
		 r->reason ? "\n" : "", r->reason ? r->reason : "");
	if ((getenv("DISPLAY") || getenv("WAYLAND_DISPLAY")) && in_path("notify-send")) {
		char *argv[] = {"notify-send", "--", title, body, NULL};

		run(argv, r, timeout_ms, out);
		return out->exit_code == 0;
	}
	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	dprintf(tty >= 0 ? tty : STDERR_FILENO, "\a%s\n", title);
	return true;
}

int tool_hooks_run(struct jsched_conn *conn, const struct jsched_result *r, int tty)
{
	struct hooks h;
	struct ran ran = {.exit_code = -1}, bell;
	bool claimed = false, ok = true;
	char reason[600] = "";
	int rc;

	if (!hooks_of(r, &h))
		return 0;
	if ((rc = jsched_hook_claim(conn, r->id, &claimed)) < 0 || !claimed) {
		free(h.on_exit);
		return rc < 0 ? rc : 0; /* another runner has them (or had) */
	}
	if (h.notify && !notify(r, h.timeout_ms, tty, &bell)) {
		ok = false;
		snprintf(reason, sizeof(reason), "notify-send %s", bell.why[0] ? bell.why : "failed");
	}
	if (h.on_exit != NULL) {
		char *argv[] = {"/bin/sh", "-c", h.on_exit, NULL};

		run(argv, r, h.timeout_ms, &ran);
		if (ran.exit_code != 0) {
			ok = false;
			snprintf(reason, sizeof(reason), "on_exit %s", ran.why[0] ? ran.why : "failed");
		}
	}
	rc = jsched_hook_report(conn, r->id, ok, ran.exit_code, ran.signal, reason[0] ? reason : NULL);
	if (!ok)
		fprintf(stderr, "jsched: job %" PRIu64 ": its hook failed: %s\n", r->id, reason);
	free(h.on_exit);
	return rc < 0 ? rc : ok ? 0 : 1;
}

int cmd_hooks(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	struct jsched_results *l = NULL;
	int r, worst = CLI_EXIT_OK;
	size_t n;

	if (cmd->n_ids > 0)
		r = jsched_wait_many(conn, cmd->ids, cmd->n_ids, JSCHED_WAIT_ALL, -1, &l);
	else
		r = jsched_list(conn, (1u << JSCHED_STATE_SUCCEEDED) | (1u << JSCHED_STATE_FAILED) |
				       (1u << JSCHED_STATE_CANCELLED) | (1u << JSCHED_STATE_EXPIRED) |
				       (1u << JSCHED_STATE_DROPPED), NULL, false, &l);
	if (r < 0)
		return tool_fail(conn, cmd, r);
	n = l->count;
	for (size_t i = 0; i < n; i++) {
		const struct jsched_result *res = l->items[i];
		struct hooks h;
		struct jsched_result *now = NULL;
		bool has = hooks_of(res, &h);

		free(h.on_exit);
		if (!has || (cmd->n_ids == 0 && strcmp(h.state, "pending") != 0))
			continue;
		r = tool_hooks_run(conn, res, isatty(STDERR_FILENO) ? STDERR_FILENO : -1);
		if (r < 0)
			return tool_fail(conn, cmd, r);
		if (r > 0)
			worst = CLI_EXIT_FAILED;
		if (jsched_status(conn, res->id, &now) == 0) {
			json_t *rec = json_loads(now->json, 0, NULL);

			if (cmd->json)
				tool_print_json(json_pack("{s:I,s:O}", "job", (json_int_t)res->id, "hooks",
							  json_object_get(rec, "hooks")), false);
			else
				printf("%" PRIu64 " hooks %s\n", res->id,
				       json_string_value(json_object_get(json_object_get(rec, "hooks"), "state")));
			json_decref(rec);
			jsched_result_free(now);
		}
	}
	jsched_results_free(l);
	return worst;
}

/* background: the detached process: wait for job id (connecting again while the daemon
 * restarts), then run its hooks.  Never returns. */
static void background(const struct cli_cmd *cmd, uint64_t id, int tty)
{
	for (int tries = 0; tries < 3600; tries++) {
		struct jsched_conn *conn = NULL;
		struct jsched_result *res = NULL;
		char msg[256];

		if (jsched_connect_error(cmd->socket, cmd->client_name, &conn, msg, sizeof(msg)) == 0) {
			int r = jsched_wait(conn, id, -1, &res);

			if (r == 0) {
				tool_hooks_run(conn, res, tty);
				jsched_result_free(res);
				jsched_close(conn);
				_exit(0);
			}
			jsched_close(conn);
			if (r != JSCHED_EDISCONNECTED && r != JSCHED_ECONNECT)
				_exit(1); /* the job is gone (forgotten) or not ours: nothing to run */
		}
		sleep(1);
	}
	_exit(1);
}

int tool_hooks_background(const struct cli_cmd *cmd, uint64_t id)
{
	int tty = isatty(STDERR_FILENO) ? dup(STDERR_FILENO) : -1;
	pid_t pid;
	int status;

	fflush(NULL);
	if ((pid = fork()) < 0) {
		if (tty >= 0)
			close(tty);
		return -1;
	}
	if (pid == 0) {
		/* Detached twice over: its own session, and not our child (no zombie, no wait). */
		int null = open("/dev/null", O_RDWR);

		setsid();
		if (fork() != 0)
			_exit(0);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		/* Nothing else the submitting process had open stays open for the hour this
		 * process may wait: not a lock its caller holds, not a pipe someone reads to
		 * its end (the terminal kept for the hooks' messages moves to descriptor 3). */
		if (tty >= 0 && tty != STDERR_FILENO + 1) {
			dup2(tty, STDERR_FILENO + 1);
			tty = STDERR_FILENO + 1;
		}
		close_range(tty >= 0 ? (unsigned)tty + 1 : STDERR_FILENO + 1, ~0U, 0);
		background(cmd, id, tty);
	}
	if (tty >= 0)
		close(tty);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}
