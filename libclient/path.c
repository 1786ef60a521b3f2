/* path.c: where jschedd listens by default: the protocol's rule (proto/socket_path.c),
 * shared with the daemon so that both always meet on the same socket. */
#include <jsched/jsched.h>

#include "proto/jproto.h"

/* jsched_default_socket_path: see jsched.h. */
int jsched_default_socket_path(char *buf, size_t size)
{
	return jp_default_socket_path(buf, size);
}
