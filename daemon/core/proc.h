/* daemon/core/proc.h: a process's /proc/PID/stat line, and whether a process that held
 * one of the daemon's resources is gone.
 *
 * A daemon killed while it was starting a command leaves that command, for the few
 * microseconds (milliseconds on a loaded machine) between its clone and its close_range
 * or exec, holding a copy of the daemon's descriptors: its listening socket and its
 * journal's lock.  The next daemon then finds both held.  What they record of the process
 * that took them (the listener's SO_PEERCRED, the lock's pid in /proc/locks) tells such
 * a copy from a live daemon: that process is gone.
 */
#ifndef JD_CORE_PROC_H
#define JD_CORE_PROC_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* jd_proc_stat: read /proc/PID/stat into buf and return where its fields after the
 * command name start (the command's last ')': the name may hold spaces and parentheses;
 * the state is at [2]), or NULL with errno set (ENOENT: no such process; EINVAL: a line
 * without the name's end). */
static inline const char *jd_proc_stat(pid_t pid, char *buf, size_t size)
{
	char path[64];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')) || !p[1] || !p[2]) {
		errno = EINVAL;
		return NULL;
	}
	return p;
}

/* jd_proc_gone: true if process pid no longer runs (no such process, or a zombie);
 * pid <= 0 (not known, or not visible from this pid namespace) counts as gone. */
static inline bool jd_proc_gone(pid_t pid)
{
	char buf[512];
	const char *p;

	if (pid <= 0)
		return true;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	if (!(p = jd_proc_stat(pid, buf, sizeof(buf))))
		return errno == ENOENT;
	return p[2] == 'Z' || p[2] == 'X';
}

#endif /* JD_CORE_PROC_H */
