/* daemon/sdnotify.c: sd_notify and socket activation without libsystemd (see sdnotify.h).
 *
 * $NOTIFY_SOCKET is a path ("/run/systemd/notify") or, starting with '@', a name in the
 * abstract namespace.  Each message is one datagram of newline-separated KEY=VALUE lines.
 */
#include "daemon/sdnotify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "jsched/error.h"

int jd_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t len;
	socklen_t salen;
	ssize_t n;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return JSCHED_EINVAL;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return JSCHED_EIO;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	close(fd);
	return n < 0 ? JSCHED_EIO : 1;
}

int jd_sd_notifyf(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return jd_sd_notify(buf);
}

/* parse_u64: the decimal value of `s`, or -1 if it is not one. */
static long long parse_u64(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > (unsigned long long)INT64_MAX)
		return -1;
	return (long long)v;
}

int jd_sd_listen_fds(void)
{
	long long pid = parse_u64(getenv("LISTEN_PID"));
	long long n = parse_u64(getenv("LISTEN_FDS"));
	int rc = 0;

	if (!getenv("LISTEN_PID") && !getenv("LISTEN_FDS"))
		return 0;
	if (pid < 0 || n < 0 || n > 1024) {
		rc = JSCHED_EINVAL;
		goto out_unset;
	}
	if (pid != (long long)getpid())
		goto out_unset; /* meant for our parent: not ours to use */
	for (int fd = 3; fd < 3 + (int)n; fd++) {
		int flags = fcntl(fd, F_GETFD);
		if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
			rc = JSCHED_EINVAL;
			goto out_unset;
		}
	}
	rc = (int)n;
out_unset:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return rc;
}

uint64_t jd_sd_watchdog_usec(void)
{
	const char *wpid = getenv("WATCHDOG_PID");
	long long usec = parse_u64(getenv("WATCHDOG_USEC"));

	if (usec <= 0)
		return 0;
	if (wpid && parse_u64(wpid) != (long long)getpid())
		return 0;
	return (uint64_t)usec;
}
