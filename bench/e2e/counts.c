/* bench/e2e/counts.c: system calls and context switches of one process, counted over an
 * exact stretch of the benchmark.
 *
 * perf stat attaches to every thread of the process with its events disabled (-D -1),
 * and is told through a control FIFO (--control) to enable them just before the stretch
 * and to disable them just after it, each command acknowledged, so that the counts cover
 * the stretch and nothing else: attaching and detaching, which take perf tens of
 * milliseconds, fall outside.  The events: raw_syscalls:sys_enter (every system call),
 * the software event context-switches (voluntary and involuntary, every thread), and one
 * syscalls:sys_enter_NAME tracepoint per call the daemon's hot path makes, for the
 * breakdown.  Counts, unlike times, do not move with the machine's load, which is why
 * the hot part reports them (hot.c).
 *
 * Needs perf (Debian's linux-perf, mk/deps.sh bench) and the right to trace the process
 * (root, or perf_event_paranoid <= 1 for a process of one's own); e2e_counter_start
 * returns false, saying why on stderr, when either is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

static const char *const perf_bin = "/usr/bin/perf";

const char *const e2e_count_names[E2E_NCOUNT] = {
	"futex", "sched_yield", "epoll_wait", "epoll_pwait", "read", "write", "writev",
	"clock_gettime", "epoll_ctl", "getrusage", "poll", "recvmsg", "sendmsg",
};

/* ctl: send one command ("enable", "disable") and read perf's "ack". */
static bool ctl(struct e2e_counter *k, const char *cmd)
{
	char buf[32];
	size_t len = strlen(cmd);

	if (write(k->ctl, cmd, len) != (ssize_t)len || write(k->ctl, "\n", 1) != 1)
		return false;
	struct pollfd p = {.fd = k->ack, .events = POLLIN};
	for (int i = 0; i < 100; i++) { /* 10 s */
		if (poll(&p, 1, 100) == 1 && read(k->ack, buf, sizeof(buf)) > 0)
			return true;
	}
	return false;
}

bool e2e_counter_start(struct e2e_counter *k, pid_t pid)
{
	char ctl_path[96], ack_path[96], spec[256], events[1024], pidbuf[16];
	size_t len;

	memset(k, 0, sizeof(*k));
	k->ctl = k->ack = -1;
	if (access(perf_bin, X_OK) != 0) {
		fprintf(stderr, "bench-e2e: no %s (Debian: linux-perf): nothing counted\n", perf_bin);
		return false;
	}
	snprintf(k->dir, sizeof(k->dir), "/tmp/bench-e2e-perf-XXXXXX");
	if (!mkdtemp(k->dir))
		e2e_die("mkdtemp: %s", strerror(errno));
	e2e_track_dir(k->dir, true);
	snprintf(ctl_path, sizeof(ctl_path), "%s/ctl", k->dir);
	snprintf(ack_path, sizeof(ack_path), "%s/ack", k->dir);
	snprintf(k->out, sizeof(k->out), "%s/out", k->dir);
	if (mkfifo(ctl_path, 0600) < 0 || mkfifo(ack_path, 0600) < 0)
		e2e_die("mkfifo: %s", strerror(errno));
	len = (size_t)snprintf(events, sizeof(events), "raw_syscalls:sys_enter,context-switches");
	for (int i = 0; i < E2E_NCOUNT; i++)
		len += (size_t)snprintf(events + len, sizeof(events) - len, ",syscalls:sys_enter_%s",
					e2e_count_names[i]);
	snprintf(spec, sizeof(spec), "--control=fifo:%s,%s", ctl_path, ack_path);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	char *argv[] = {(char *)(uintptr_t)perf_bin, (char *)(uintptr_t)"stat", (char *)(uintptr_t)"-x,",
			(char *)(uintptr_t)"-o", k->out, (char *)(uintptr_t)"-D", (char *)(uintptr_t)"-1",
			spec, (char *)(uintptr_t)"-e", events, (char *)(uintptr_t)"-p", pidbuf, NULL};
	k->perf = e2e_spawn(argv, NULL, false);
	e2e_track(k->perf);
	/* perf opens both FIFOs once it has attached; a non-blocking open for writing fails
	 * (ENXIO) until then. */
	for (int i = 0; i < 1000 && k->ctl < 0; i++) {
		int status;

		k->ctl = open(ctl_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (k->ctl >= 0)
			break;
		if (waitpid(k->perf, &status, WNOHANG) == k->perf) {
			e2e_untrack(k->perf);
			fprintf(stderr, "bench-e2e: perf stat -p %d exited (status 0x%x): nothing counted\n",
				(int)pid, (unsigned)status);
			goto fail;
		}
		e2e_sleep_ms(10);
	}
	if (k->ctl < 0 || (k->ack = open(ack_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		fprintf(stderr, "bench-e2e: perf did not open its control FIFO: nothing counted\n");
		kill(k->perf, SIGKILL);
		waitpid(k->perf, NULL, 0);
		e2e_untrack(k->perf);
		goto fail;
	}
	k->ok = true;
	return true;
fail:
	if (k->ctl >= 0)
		close(k->ctl);
	k->ctl = -1;
	e2e_track_dir(k->dir, false);
	e2e_rm_rf(k->dir);
	return false;
}

void e2e_counter_enable(struct e2e_counter *k)
{
	if (k->ok && !ctl(k, "enable"))
		e2e_die("perf did not acknowledge 'enable'");
}

bool e2e_counter_stop(struct e2e_counter *k, struct e2e_counts *out)
{
	char line[512];
	int status;
	bool got = false;

	memset(out, 0, sizeof(*out));
	if (!k->ok)
		return false;
	if (!ctl(k, "disable"))
		e2e_die("perf did not acknowledge 'disable'");
	kill(k->perf, SIGINT);
	waitpid(k->perf, &status, 0);
	e2e_untrack(k->perf);
	close(k->ctl);
	close(k->ack);
	FILE *f = fopen(k->out, "r");
	while (f && fgets(line, sizeof(line), f)) {
		/* CSV: count,unit,event,... ("<not counted>" where perf could not) */
		char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL, *end;
		if (!c2)
			continue;
		double v = strtod(line, &end);
		if (end == line)
			continue;
		char *ev = c2 + 1, *c3 = strchr(ev, ',');
		if (c3)
			*c3 = '\0';
		if (strcmp(ev, "raw_syscalls:sys_enter") == 0) {
			out->syscalls = v;
			got = true;
		} else if (strcmp(ev, "context-switches") == 0) {
			out->ctxsw = v;
		} else {
			for (int i = 0; i < E2E_NCOUNT; i++) {
				char name[64];
				snprintf(name, sizeof(name), "syscalls:sys_enter_%s", e2e_count_names[i]);
				if (strcmp(ev, name) == 0)
					out->by[i] = v;
			}
		}
	}
	if (f)
		fclose(f);
	e2e_track_dir(k->dir, false);
	e2e_rm_rf(k->dir);
	k->ok = false;
	return got;
}

void e2e_counts_breakdown(const struct e2e_counts *c, double per, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < E2E_NCOUNT && len < size; i++)
		if (c->by[i] / per >= 0.05)
			len += (size_t)snprintf(buf + len, size - len, "%s%s %.2f", len ? ", " : "",
						e2e_count_names[i], c->by[i] / per);
}
