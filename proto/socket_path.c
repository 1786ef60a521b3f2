/* proto/socket_path.c: where jschedd listens by default (see jproto.h).
 *
 * One rule, the protocol's, used by the daemon and by libjsched (jsched_default_socket_path),
 * so that a client and a daemon started in the same environment always meet on the same
 * socket:
 *   $JSCHED_SOCKET, else $XDG_RUNTIME_DIR/jschedd.sock, else /run/jschedd/jschedd.sock.
 * An empty variable counts as unset.  A relative XDG_RUNTIME_DIR is ignored, as the XDG
 * base-directory specification asks; JSCHED_SOCKET is taken as given (a relative path is
 * resolved against the working directory by connect(), which is handy in tests).
 */
#include "proto/jproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Room for a path in struct sockaddr_un, counting its terminating NUL. */
enum { SUN_PATH_SIZE = sizeof(((struct sockaddr_un *)0)->sun_path) };

static int put(char *buf, size_t size, const char *a, const char *b)
{
	int n = snprintf(buf, size, "%s%s", a, b);
	if (n < 0)
		return JSCHED_EINVAL;
	/* A path that does not fit in sun_path could never be connected to: refuse it here
	 * rather than let connect() fail later with a less precise error. */
	if ((size_t)n >= size || (size_t)n >= SUN_PATH_SIZE) {
		if (size > 0)
			buf[0] = '\0';
		return JSCHED_ELIMIT_EXCEEDED;
	}
	return n;
}

int jp_default_socket_path(char *buf, size_t size)
{
	if (buf == NULL)
		return JSCHED_EINVAL;
	const char *env = getenv("JSCHED_SOCKET");
	if (env != NULL && env[0] != '\0')
		return put(buf, size, env, "");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg != NULL && xdg[0] == '/')
		return put(buf, size, xdg, xdg[strlen(xdg) - 1] == '/' ? "jschedd.sock" : "/jschedd.sock");
	return put(buf, size, JP_SYSTEM_SOCKET, "");
}
