/* daemon/core/proc.h: whether a process that held one of the daemon's resources is gone.
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

/* jd_proc_gone: true if process pid no longer runs (no such process, or a zombie);
 * pid <= 0 (not known, or not visible from this pid namespace) counts as gone. */
static inline bool jd_proc_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	if (pid <= 0)
		return true;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the state follows the command name's last ')' */
	p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

#endif /* JD_CORE_PROC_H */
