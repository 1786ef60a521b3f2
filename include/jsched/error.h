/* jsched/error.h: the one error convention of the whole tree.
 *
 * Every function that can fail returns 0 (or a non-negative count) on success and a
 * negative JSCHED_E* code on failure.  The numbers are fixed (they are part of
 * libjsched's ABI) but never cross the wire: the protocol carries the symbolic name
 * ("queue_full"), which is the second column below.  jsched_strerror() (libjsched)
 * gives the third column.
 *
 * Add a code by appending a row with the next free number; never renumber or reuse one.
 */
#ifndef JSCHED_ERROR_H
#define JSCHED_ERROR_H

/* XX(NAME, number, "wire_name", "message") */
#define JSCHED_ERRNO_MAP(XX)                                                          \
	XX(NOMEM, -1, "no_memory", "out of memory")                                    \
	XX(INVAL, -2, "invalid_argument", "invalid argument")                          \
	XX(BAD_FRAME, -3, "bad_frame", "malformed frame")                              \
	XX(FRAME_TOO_LARGE, -4, "frame_too_large", "frame larger than the limit")      \
	XX(BAD_REQUEST, -5, "bad_request", "malformed request")                        \
	XX(UNKNOWN_OP, -6, "unknown_op", "unknown operation")                          \
	XX(VERSION_MISMATCH, -7, "version_mismatch", "protocol versions differ")       \
	XX(HANDSHAKE_REQUIRED, -8, "handshake_required", "hello must come first")      \
	XX(NO_SUCH_JOB, -9, "no_such_job", "no such job")                              \
	XX(JOB_FORGOTTEN, -10, "job_forgotten", "job result no longer retained")       \
	XX(PERMISSION_DENIED, -11, "permission_denied", "permission denied")           \
	XX(QUEUE_FULL, -12, "queue_full", "queue full")                                \
	XX(SHUTTING_DOWN, -13, "shutting_down", "daemon is shutting down")             \
	XX(TIMEOUT, -14, "timeout", "timed out")                                       \
	XX(CANCELLED, -15, "cancelled", "cancelled")                                   \
	XX(NO_SUCH_FUNCTION, -16, "no_such_function", "no such call handler")          \
	XX(DEPENDENCY_CYCLE, -17, "dependency_cycle", "dependency graph has a cycle")  \
	XX(UNKNOWN_DEPENDENCY, -18, "unknown_dependency", "unknown dependency")        \
	XX(LIMIT_EXCEEDED, -19, "limit_exceeded", "limit exceeded")                    \
	XX(NO_SUCH_CLIENT, -20, "no_such_client", "no such client")                    \
	XX(CONNECT, -21, "connect_failed", "cannot connect to jschedd")                \
	XX(DISCONNECTED, -22, "disconnected", "connection to jschedd lost")            \
	XX(PROTOCOL, -23, "protocol_error", "unexpected message from peer")            \
	XX(IO, -24, "io_error", "input/output error")                                  \
	XX(NOT_SUPPORTED, -25, "not_supported", "not supported")                       \
	XX(EXISTS, -26, "already_exists", "already exists")                            \
	XX(AGAIN, -27, "try_again", "resource temporarily unavailable")                \
	XX(INTERNAL, -28, "internal", "internal error")                                \
	XX(EVENTS_LOST, -29, "events_lost", "requested events are no longer retained")         \
	XX(JOURNAL, -30, "journal_unavailable", "the journal cannot be written (disk full or I/O error)") \
	XX(TOO_MANY_CONNECTIONS, -31, "too_many_connections", "too many connections to jschedd")

enum jsched_error {
	JSCHED_OK = 0,
#define JSCHED_XX_ENUM(name, num, wire, msg) JSCHED_E##name = (num),
	JSCHED_ERRNO_MAP(JSCHED_XX_ENUM)
#undef JSCHED_XX_ENUM
};

#endif /* JSCHED_ERROR_H */
