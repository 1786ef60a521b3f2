/* strerror.c: the names and messages of the JSCHED_E* codes.
 *
 * Both tables come from the one X-macro in jsched/error.h, so a code added there has its
 * message and wire name here without anyone touching this file.
 */
#include "libclient/internal.h"

/* jsched_strerror: see jsched.h. */
const char *jsched_strerror(int code)
{
	switch (code) {
	case JSCHED_OK:
		return "success";
#define XX(name, num, wire, msg) \
	case num:                \
		return msg;
		JSCHED_ERRNO_MAP(XX)
#undef XX
	default:
		return "unknown error";
	}
}

/* jsched_err_name: see jsched.h.  The codec's table is the same X-macro. */
const char *jsched_err_name(int code)
{
	const char *name = jp_error_name(code);

	if (code == JSCHED_OK)
		return "ok";
	return name ? name : "unknown";
}

/* jsched_err_from_name: see jsched.h.  The codec's table is the same X-macro. */
int jsched_err_from_name(const char *wire_name)
{
	return wire_name != NULL ? jp_error_from_name(wire_name) : JSCHED_EPROTOCOL;
}
