/* jsched/jsched.h: libjsched, the C client library of jschedd.
 *
 * A program connects to the daemon over its Unix socket (jsched_connect, which also does
 * the protocol's hello), builds job specs (jsched_spec_*), submits them and reads their
 * results (struct jsched_result).  Every operation of the protocol has a synchronous call
 * here.  A program with its own event loop uses the same connection in event-loop mode
 * instead: it polls jsched_fd(), calls jsched_process() when the fd is ready, and gets
 * replies and events through callbacks (the *_async calls and jsched_set_event_cb); many
 * requests may be in flight at once, each with its own id.
 *
 * Conventions, true of every function below:
 * - Errors: 0 (or a non-negative count or id) on success, a negative JSCHED_E* code on
 *   failure (jsched/error.h).  After a failed call on a connection, the daemon's own words
 *   are available until the next call on it: jsched_error_code() (the symbolic code, e.g.
 *   "queue_full"), jsched_error_message() and jsched_error_field().
 * - Ownership: a pointer a function gives back through an out-parameter is the caller's
 *   and is freed with the matching *_free function; a `const char *` returned directly is
 *   borrowed from the object it came from and stays valid as long as the text says.
 *   Functions never take ownership of what they are passed; they copy what they keep.
 * - Threads: a connection is not locked.  Use it from one thread at a time (one
 *   connection per thread is the simple way); callbacks run on the thread that called
 *   jsched_process() or a synchronous call, inside that call.  Different connections
 *   are independent.  Specs, results and the functions that take no connection are
 *   safe to use from any thread (a spec or result itself from one thread at a time).
 * - Times are integers: durations in milliseconds, instants in milliseconds since the
 *   Unix epoch (CLOCK_REALTIME; 0 in a record means "not yet").  A timeout_ms argument is
 *   negative for "no limit" and 0 for "only look".
 * - JSON (a call job's arguments and result, the metrics document, a spec written as
 *   JSON) crosses this API as UTF-8 text, never as a jansson object, so a program does
 *   not need jansson's headers or the same jansson build as the library; the cost is one
 *   parse in the caller, small beside a round trip through a socket.
 *
 * Only symbols that begin with jsched_ are exported by the shared library.
 */
#ifndef JSCHED_JSCHED_H
#define JSCHED_JSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jsched/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define JSCHED_API __attribute__((visibility("default")))
#else
#define JSCHED_API
#endif

/* ---- errors ---------------------------------------------------------------------- */

/* jsched_strerror returns the English message of a JSCHED_E* code (0 gives "success",
 * an unknown code "unknown error").  The string is static.  Any thread. */
JSCHED_API const char *jsched_strerror(int code);

/* jsched_err_name returns the symbolic (wire) name of a code, e.g. "queue_full" for
 * JSCHED_EQUEUE_FULL ("ok" for 0, "unknown" for an unknown code).  Static.  Any thread. */
JSCHED_API const char *jsched_err_name(int code);

/* jsched_err_from_name maps a symbolic name back to its code.  A name this build does not
 * know (a newer daemon's) gives JSCHED_EPROTOCOL.  Any thread. */
JSCHED_API int jsched_err_from_name(const char *name);

/* ---- where the daemon listens ------------------------------------------------------ */

/* jsched_default_socket_path writes the socket path the daemon and its clients use by
 * default into buf: $JSCHED_SOCKET if set and not empty, else $XDG_RUNTIME_DIR/jschedd.sock
 * if XDG_RUNTIME_DIR is an absolute path, else /run/jschedd/jschedd.sock.  Returns the
 * length written (without the NUL), JSCHED_ELIMIT_EXCEEDED if the path does not fit in
 * size bytes or in a sockaddr_un (buf is then ""), JSCHED_EINVAL if buf is NULL.  Reads
 * the environment: any thread, as long as no thread changes the environment meanwhile. */
JSCHED_API int jsched_default_socket_path(char *buf, size_t size);

/* ---- connections ------------------------------------------------------------------- */

/* A connection to jschedd.  Opaque; created by jsched_connect, freed by jsched_close. */
struct jsched_conn;

/* jsched_connect connects to the daemon at socket_path (NULL: jsched_default_socket_path),
 * says hello as client_name (NULL: the daemon's default, the login name of the caller's
 * uid) and waits for the daemon's answer.  On success *out is a connection the caller must
 * jsched_close.  Fails with JSCHED_ECONNECT (nothing listens there, or no such file:
 * jsched_connect_error says which, with the path),
 * JSCHED_EVERSION_MISMATCH (the daemon speaks another protocol version), JSCHED_EDISCONNECTED
 * (it hung up), or the code the daemon answered hello with (JSCHED_EPERMISSION_DENIED for a
 * client name the uid may not use, JSCHED_ESHUTTING_DOWN, JSCHED_EBAD_REQUEST for a bad
 * name).  On failure *out is NULL.  Blocks.  Any thread. */
JSCHED_API int jsched_connect(const char *socket_path, const char *client_name,
			      struct jsched_conn **out);

/* jsched_connect_error is jsched_connect that also keeps the daemon's or the library's
 * words when it fails: msg (size msglen) receives e.g. "cannot connect to jschedd at
 * /run/x.sock: No such file or directory", or the daemon's error message.  Any thread. */
JSCHED_API int jsched_connect_error(const char *socket_path, const char *client_name,
				    struct jsched_conn **out, char *msg, size_t msglen);

/* jsched_connect_deferred is jsched_connect_error whose hello does not wait: it is queued
 * and goes out with the connection's first request, in the same write, and its answer is
 * read before that request's.  A program that makes one request (the jsched tool's submit)
 * saves a round trip to the daemon.  It fails here only as the connect itself can
 * (JSCHED_ECONNECT, or JSCHED_ENOMEM).  A hello the daemon refuses fails the first request
 * instead, with the code jsched_connect would have returned (JSCHED_EPERMISSION_DENIED,
 * JSCHED_EVERSION_MISMATCH, ...) and the daemon's words in jsched_error_message; the
 * connection is then unusable, as after any lost connection (the daemon did not run the
 * request: it answers every request before a good hello with handshake_required).  Until
 * the hello's answer has been read, jsched_server_version, jsched_server_instance,
 * jsched_hello_json and jsched_client_name return NULL.  A first request larger than the
 * handshake's frame limit (64 KiB) waits for the hello's answer first.  Any thread. */
JSCHED_API int jsched_connect_deferred(const char *socket_path, const char *client_name,
				       struct jsched_conn **out, char *msg, size_t msglen);

/* jsched_connect_fd is jsched_connect over fd, a stream socket already connected to the
 * daemon (passed down by a parent, or one end of a socketpair in a test).  The connection
 * owns fd from the call on: it is closed by jsched_close, or at once if this fails. */
JSCHED_API int jsched_connect_fd(int fd, const char *client_name, struct jsched_conn **out);

/* jsched_close closes the connection and frees it.  Callbacks of requests still in flight
 * run with JSCHED_EDISCONNECTED before it returns, never after.  Not from a callback of the
 * same connection.  NULL is a no-op. */
JSCHED_API void jsched_close(struct jsched_conn *conn);

/* jsched_set_timeout bounds how long a synchronous call waits for its reply, in ms
 * (negative, the default: as long as it takes).  A wait's own timeout_ms is added to the
 * bound, and a wait with no limit of its own is not bounded.  When the bound passes, the
 * call returns JSCHED_ETIMEOUT with nothing in its out-parameters (jsched_wait's *out is
 * NULL, unlike the daemon's own timeout); the request may still take effect (a submit may
 * still be admitted), its late reply is dropped, and the connection stays usable. */
JSCHED_API void jsched_set_timeout(struct jsched_conn *conn, int64_t timeout_ms);

/* What the daemon said at hello.  Borrowed, valid until jsched_close.
 * - jsched_server_version: the daemon's release, e.g. "0.1.0".
 * - jsched_server_instance: differs each time the daemon starts (for jsched_watch).
 * - jsched_hello_json: the whole hello reply as JSON text: identity (uid, gid, pid, client,
 *   admin) and limits, as proto/PROTOCOL.md section 3 describes. */
JSCHED_API const char *jsched_server_version(const struct jsched_conn *conn);
JSCHED_API const char *jsched_server_instance(const struct jsched_conn *conn);
JSCHED_API const char *jsched_hello_json(const struct jsched_conn *conn);
/* The tenant name the daemon charges this connection's jobs to.  Borrowed, until close. */
JSCHED_API const char *jsched_client_name(const struct jsched_conn *conn);

/* After a call on conn fails (in a reply callback: during it), the details:
 * - jsched_error_code: the daemon's symbolic code ("queue_full"), also for a code this
 *   build does not know; NULL for a local failure (bad argument, connection lost).
 * - jsched_error_message: the daemon's message, or the library's own words; never NULL
 *   after a failure.
 * - jsched_error_field: the path to the offending request member ("jobs[3].argv"), or NULL.
 * - jsched_error_json: the daemon's whole error object as JSON text, for the members some
 *   codes add (supported, oldest_seq, instance, jobs), or NULL.
 * Borrowed, valid until the next call on conn. */
JSCHED_API const char *jsched_error_code(const struct jsched_conn *conn);
JSCHED_API const char *jsched_error_message(const struct jsched_conn *conn);
JSCHED_API const char *jsched_error_field(const struct jsched_conn *conn);
JSCHED_API const char *jsched_error_json(const struct jsched_conn *conn);

/* ---- job specs ----------------------------------------------------------------------- */

/* A job spec (proto/PROTOCOL.md section 4), built with the functions below.  Opaque, so
 * that members can be added without breaking programs built against an older header; for
 * members the setters do not cover, jsched_spec_from_json takes the spec as JSON.  One spec
 * may be submitted many times.  The setters copy what they are given and return 0,
 * JSCHED_EINVAL (a bad value, or a member of the other kind of job) or JSCHED_ENOMEM,
 * leaving the spec unchanged on failure.  The daemon checks the limits (argv items,
 * stdin bytes ...) at submission. */
struct jsched_spec;

enum jsched_priority {
	JSCHED_PRIORITY_LOW = 0,
	JSCHED_PRIORITY_NORMAL = 1, /* the default */
	JSCHED_PRIORITY_HIGH = 2,
	JSCHED_PRIORITY_CRITICAL = 3,
};

/* The two gates of a job: it runs when all of its `after` dependencies and (if it has any)
 * one of its `any_of` dependencies are satisfied. */
enum jsched_gate {
	JSCHED_GATE_AFTER = 0,
	JSCHED_GATE_ANY_OF = 1,
};

/* Which outcome of a dependency satisfies it. */
enum jsched_dep_on {
	JSCHED_DEP_SUCCESS = 0, /* the default: it succeeded */
	JSCHED_DEP_FAILURE = 1, /* it ended in any state but succeeded */
	JSCHED_DEP_ANY = 2,	/* it ended, however */
};

/* jsched_spec_exec makes a spec for an exec job running argv[0] (looked up in the job's
 * PATH when it has no '/') with the arguments argv[1..]; argv ends with NULL and has at
 * least one word, the first not empty.  By default the command gets an empty environment
 * and runs in "/" (the daemon never passes on its own environment); see set_env and
 * set_cwd, or jsched_spec_inherit, which copies the caller's.  Any thread. */
JSCHED_API int jsched_spec_exec(const char *const *argv, struct jsched_spec **out);

/* jsched_spec_call makes a spec for a call job: the daemon's handler fn (a built-in: noop,
 * echo, sleep, spin, fail; or a module's) with the arguments args_json (JSON text; NULL
 * means null).  JSCHED_EINVAL if args_json does not parse.  Any thread. */
JSCHED_API int jsched_spec_call(const char *fn, const char *args_json, struct jsched_spec **out);

/* jsched_spec_from_json makes a spec from its JSON form (a "job spec" object of
 * proto/PROTOCOL.md).  Only the JSON syntax is checked here (JSCHED_EINVAL if json is not
 * an object); the daemon checks every member at submission.  Any thread. */
JSCHED_API int jsched_spec_from_json(const char *json, struct jsched_spec **out);

/* jsched_spec_to_json stores the spec's JSON form in *out; the caller frees it with
 * jsched_free. */
JSCHED_API int jsched_spec_to_json(const struct jsched_spec *spec, char **out);

/* jsched_spec_free frees a spec.  NULL is a no-op. */
JSCHED_API void jsched_spec_free(struct jsched_spec *spec);

JSCHED_API int jsched_spec_set_name(struct jsched_spec *spec, const char *name);
JSCHED_API int jsched_spec_set_priority(struct jsched_spec *spec, enum jsched_priority prio);
/* A job not started by its deadline ends expired without running.  deadline_at: an instant
 * (ms since the epoch); deadline_in: ms after the daemon receives the request.  A spec has
 * at most one deadline; setting one replaces the other. */
JSCHED_API int jsched_spec_set_deadline_at(struct jsched_spec *spec, int64_t at_ms);
JSCHED_API int jsched_spec_set_deadline_in(struct jsched_spec *spec, int64_t in_ms);
/* A delayed or scheduled job: not started before at_ms (ms since the epoch, on the daemon's
 * clock).  Until then it is in state JSCHED_STATE_SCHEDULED (cancellable, holdable); a time
 * already past starts it at once.  A deadline still counts from submission: one that
 * passes before at_ms expires the job.  0 removes it. */
JSCHED_API int jsched_spec_set_not_before(struct jsched_spec *spec, int64_t at_ms);
/* Retries: run the job again after a failed attempt, at most max_attempts attempts in all
 * (the first included; 1 removes the policy), waiting backoff_ms * factor^(retries so far)
 * between them, at most max_backoff_ms; on says which failures: JSCHED_RETRY_ON_* bits, and
 * with JSCHED_RETRY_ON_CODES the exit codes exit_codes[0..n_codes) (1 to 255).  Between
 * attempts the job is JSCHED_STATE_RETRYING; after the last it ends failed as usual. */
enum {
	JSCHED_RETRY_ON_FAILURE = 1u << 0, /* any failed attempt */
	JSCHED_RETRY_ON_TIMEOUT = 1u << 1, /* ran past its time limit */
	JSCHED_RETRY_ON_SIGNAL = 1u << 2,  /* killed by a signal (or at its memory limit) */
	JSCHED_RETRY_ON_CODES = 1u << 3,   /* exited with one of exit_codes */
};
JSCHED_API int jsched_spec_set_retry(struct jsched_spec *spec, uint32_t max_attempts, int64_t backoff_ms,
				     double factor, int64_t max_backoff_ms, unsigned on,
				     const int *exit_codes, size_t n_codes);
/* A hint of how much work the job is, 1 to 1,000,000 (default 1), for fair sharing. */
JSCHED_API int jsched_spec_set_cost(struct jsched_spec *spec, uint32_t cost);
/* The local name other specs of the same jsched_submit_batch depend on (add_dep_ref). */
JSCHED_API int jsched_spec_set_ref(struct jsched_spec *spec, const char *ref);
/* An idempotency key, 1 to 128 bytes: while the daemon retains a job this uid submitted
 * with the same key, submitting the spec again answers that job's id instead of making a
 * new job (jsched_submit_ex says which happened).  Makes "submit again after a lost
 * connection" safe. */
JSCHED_API int jsched_spec_set_key(struct jsched_spec *spec, const char *key);
/* A job array: one job per index of `indices`, in Slurm's syntax ("1-100", "1-99:2",
 * "1,5,7", any of them ending "%N": at most N elements run at once); the submit answers the
 * array's id, which wait, status, cancel, hold and dependencies take as the whole array.
 * Each element has its own id (the array's id + 1 + its position) and record (array_id,
 * array_index); a command finds its index in $JSCHED_ARRAY_INDEX and the array's id in
 * $JSCHED_ARRAY_ID.  JSCHED_EINVAL for indices that are not that syntax (the daemon
 * refuses more than its limits.array_elements).  set_array_replace (exec): replace "{}" in
 * the command's arguments by the index. */
JSCHED_API int jsched_spec_set_array(struct jsched_spec *spec, const char *indices);
/* Completion hooks, run by the submitting client (not the daemon) once the job has ended:
 * on_exit, a shell command line (1 to 4096 bytes; NULL removes it), and notify, a desktop
 * notification (notify-send) or else a terminal bell; hook_timeout: their time limit in ms
 * (default 60,000, at most 86,400,000).  The daemon keeps them with the job (journaled) and
 * its record's "hooks" says whether they ran (jsched_hook_claim, jsched_hook_report); they
 * never change the job's result.  The jsched tool runs them (jsched submit --on-exit). */
JSCHED_API int jsched_spec_set_on_exit(struct jsched_spec *spec, const char *command);
JSCHED_API int jsched_spec_set_notify(struct jsched_spec *spec, bool notify);
JSCHED_API int jsched_spec_set_hook_timeout(struct jsched_spec *spec, int64_t ms);
JSCHED_API int jsched_spec_set_array_replace(struct jsched_spec *spec, bool replace);

/* Exec jobs only.  set_env: the complete environment, "NAME=value" strings ending with NULL
 * (replaces the earlier one; NULL or empty: none).  inherit: this process's environment and
 * working directory, as the jsched tool sends by default.  set_cwd: an absolute path.
 * set_stdin: the bytes the command reads on stdin (copied; NULL/0: /dev/null).
 * set_timeout: the run-time limit, ms after the command starts. */
JSCHED_API int jsched_spec_set_env(struct jsched_spec *spec, const char *const *env);
JSCHED_API int jsched_spec_setenv(struct jsched_spec *spec, const char *name, const char *value);
JSCHED_API int jsched_spec_inherit(struct jsched_spec *spec);
JSCHED_API int jsched_spec_set_cwd(struct jsched_spec *spec, const char *cwd);
JSCHED_API int jsched_spec_set_stdin(struct jsched_spec *spec, const void *data, size_t len);
JSCHED_API int jsched_spec_set_timeout(struct jsched_spec *spec, int64_t timeout_ms);
/* set_resources: limits of the command's control group (PROTOCOL.md section 4,
 * "resources"): memory in bytes (at least 1 MiB), pids (processes and threads), cpus (1.5:
 * one and a half CPUs' time); 0 leaves one out, all 0 removes them.  A daemon that cannot
 * apply a limit refuses the job (not_supported) instead of ignoring it. */
JSCHED_API int jsched_spec_set_resources(struct jsched_spec *spec, uint64_t memory_bytes,
					 uint64_t pids, double cpus);
/* set_need: the command needs `count` units (1 to 1,024) of the daemon's named resource
 * `name` (PROTOCOL.md section 4, "needs"; the daemon's config "resources"): it starts
 * when they are free and is told which in JSCHED_RESOURCE_<NAME> (and the resource's own
 * variable, such as CUDA_VISIBLE_DEVICES).  Setting a name again replaces its count; 0
 * removes it.  At most 8 names.  A daemon without the resource, or with fewer units,
 * refuses the job at submit (not_supported, limit_exceeded). */
JSCHED_API int jsched_spec_set_need(struct jsched_spec *spec, const char *name, uint32_t count);
/* set_backend: where the command runs, "local", "slurm" or "auto" (PROTOCOL.md section 4;
 * default: the client's). */
JSCHED_API int jsched_spec_set_backend(struct jsched_spec *spec, const char *backend);

/* Dependencies: on a job already submitted (by id), or on another spec of the same batch
 * (by its ref), in one of the two gates, satisfied by the outcome `on`. */
JSCHED_API int jsched_spec_add_dep(struct jsched_spec *spec, enum jsched_gate gate, uint64_t job_id,
				   enum jsched_dep_on on);
JSCHED_API int jsched_spec_add_dep_ref(struct jsched_spec *spec, enum jsched_gate gate, const char *ref,
				       enum jsched_dep_on on);

/* ---- job records (status and results) ------------------------------------------------- */

enum jsched_state {
	JSCHED_STATE_UNKNOWN = 0, /* a state this build does not know (a newer daemon's) */
	JSCHED_STATE_WAITING,	  /* dependencies not met yet */
	JSCHED_STATE_QUEUED,	  /* runnable, in its client's queue */
	JSCHED_STATE_RUNNING,
	JSCHED_STATE_SUCCEEDED,	  /* the final states, from here on */
	JSCHED_STATE_FAILED,
	JSCHED_STATE_CANCELLED,
	JSCHED_STATE_EXPIRED,
	JSCHED_STATE_DROPPED,
	JSCHED_STATE_SCHEDULED,	  /* not final: its dependencies are met and it waits for
				     its not_before time (added after the final states, so
				     that their numbers stay) */
	JSCHED_STATE_RETRYING,	  /* not final: an attempt failed, and it runs again at
				     next_attempt_ms (jsched_spec_set_retry) */
};

/* jsched_state_name gives the wire name of a state ("queued"; "unknown"); static.
 * jsched_state_from_name is its inverse (JSCHED_STATE_UNKNOWN for an unknown name).
 * jsched_state_final tells a final state.  Any thread. */
JSCHED_API const char *jsched_state_name(enum jsched_state state);
JSCHED_API enum jsched_state jsched_state_from_name(const char *name);
JSCHED_API bool jsched_state_final(enum jsched_state state);

/* A job record: what the daemon knows of a job (proto/PROTOCOL.md section 5).  Allocated by
 * the library, read by the caller, freed with jsched_result_free, which frees its strings
 * (they share the record's allocation: never free or replace one on its own).
 * Members are only ever appended, so code built against this header keeps working with a
 * newer library.  Strings are NULL when the daemon did not send the member. */
struct jsched_result {
	uint64_t id;
	char *name;	     /* the spec's name */
	char *client;	     /* the tenant it is charged to */
	uint32_t uid;	     /* the uid that owns it */
	char *kind;	     /* "exec" or "call" */
	char *priority;	     /* "low" ... "critical" */
	enum jsched_state state;
	char *state_name;    /* the wire name, also of a state this build does not know */
	int64_t submitted_ms; /* instants; 0 for "not yet" */
	int64_t started_ms;
	int64_t finished_ms;
	int exit_code;	     /* exec, exited: 0 to 255; else -1 */
	int signal;	     /* exec, killed by a signal: its number; else 0 */
	char *value_json;    /* call, succeeded: the handler's result as JSON text, as sent */
	char *cause;	     /* final but not succeeded: "exit", "signal", "timeout", "cancel" ... */
	char *reason;	     /* and a sentence for people */
	bool cancelling;     /* jsched_cancel_many: a running job asked to stop */
	char *json;	     /* the whole record as the daemon sent it (JSON text, its bytes) */
	char *fn;	     /* call: the handler's name */
	char *command;	     /* exec: the command line, quoted as a shell reads it, cut after
				256 bytes with "..." (status "detail" has the whole argv) */
	bool held;	     /* queued and held (jsched_hold): not started until released */
	uint64_t array_id;   /* an array's element: the array's id; else 0 */
	int64_t array_index; /* and its index */
	int64_t not_before_ms; /* the spec's not_before (jsched_spec_set_not_before); 0: none */
	uint32_t attempt;    /* with a retry policy or retried: the current attempt (1 ...); 0 */
	int64_t next_attempt_ms; /* retrying: when the next attempt starts; else 0 */
	uint64_t result_bytes; /* a result longer than the daemon's value_bytes: its size (the
				  record then has no value_json; jsched_value fetches it); 0 */
	bool result_omitted; /* so: the result is fetched alone (jsched_value) */
};

JSCHED_API void jsched_result_free(struct jsched_result *result);

/* A list of records (jsched_list, jsched_wait_many, jsched_status_many, jsched_cancel_many);
 * freed with jsched_results_free, which frees the records too. */
struct jsched_results {
	size_t count;
	struct jsched_result **items;
};

JSCHED_API void jsched_results_free(struct jsched_results *results);

/* An exec job's captured output (jsched_output).  Freed with jsched_output_free.  The
 * buffers hold bytes, not necessarily text; each is also NUL-terminated for convenience. */
struct jsched_output {
	char *out;
	size_t out_len;
	bool out_truncated; /* the command wrote more; the daemon kept the first bytes */
	char *err;
	size_t err_len;
	bool err_truncated;
	bool complete;	    /* false: the job has not ended, this is the capture so far */
};

JSCHED_API void jsched_output_free(struct jsched_output *output);

/* Following an exec job's output as it arrives (jsched_output_follow). */
#define JSCHED_STDOUT 1u
#define JSCHED_STDERR 2u

struct jsched_follow {
	unsigned streams;	/* JSCHED_STDOUT | JSCHED_STDERR; 0: both */
	bool follow;		/* true: until the job ends; false: what there is now */
	int64_t tail_lines;	/* >= 0: begin at the last N lines of those streams; < 0: at
				 * the offsets below */
	uint64_t from_stdout;	/* resume: the stream offsets to begin at (0: the start) */
	uint64_t from_stderr;
};

/* How a follow ended (jsched_output_follow's *end). */
struct jsched_follow_end {
	char state[16];		/* the job's state then ("succeeded", ...; "forgotten") */
	bool complete;		/* the job had ended: every byte it wrote was offered */
	uint64_t stdout_bytes;	/* what each stream wrote in all */
	uint64_t stderr_bytes;
};

/* jsched_output_fn receives one piece of output, in the order the daemon received them
 * across both streams: `stream` JSCHED_STDOUT or JSCHED_STDERR, `offset` the stream offset
 * of data[0] (to resume from offset + len), `dropped` bytes of that stream before it that
 * were not kept (past the daemon's limit the middle is dropped; a follower that fell that
 * far behind misses bytes).  Return 0 to go on, anything else to stop following. */
typedef int (*jsched_output_fn)(void *arg, unsigned stream, uint64_t offset, uint64_t dropped,
				const void *data, size_t len);

/* jsched_output_follow streams exec job id's output to fn as it arrives, from where opts
 * says (NULL: both streams from the start, until the end), and returns 0 once the job has
 * ended and everything was passed to fn (or at once with what there is, without
 * opts->follow), with *end (may be NULL) filled; JSCHED_ECANCELLED if fn stopped it.  It
 * reads the connection's events: other events arriving meanwhile are dropped, so follow on
 * a connection of its own.  The daemon sends only while this connection reads (it never
 * queues more than a bounded window for it), so a slow fn slows the stream, not the daemon. */
JSCHED_API int jsched_output_follow(struct jsched_conn *conn, uint64_t id,
				    const struct jsched_follow *opts, jsched_output_fn fn, void *arg,
				    struct jsched_follow_end *end);

/* jsched_free frees a string the library gave the caller (jsched_metrics, *_json out-
 * parameters).  NULL is a no-op. */
JSCHED_API void jsched_free(void *p);

/* ---- synchronous operations ------------------------------------------------------------
 * Each sends one request, waits for its reply and returns.  Events that arrive meanwhile
 * go to the event callback if one is set, else are kept for jsched_next_event.  Not from a
 * callback (JSCHED_EINVAL): a callback uses the *_async calls. */

/* jsched_submit submits one job and stores its id in *id. */
JSCHED_API int jsched_submit(struct jsched_conn *conn, const struct jsched_spec *spec, uint64_t *id);

/* jsched_submit_ex is jsched_submit that also stores in *existing (may be NULL) whether
 * the id is that of a job submitted earlier with the spec's key (no new job was made). */
JSCHED_API int jsched_submit_ex(struct jsched_conn *conn, const struct jsched_spec *spec, uint64_t *id,
				bool *existing);

/* jsched_submit_batch submits n specs (1 to the daemon's jobs_per_submit) in one message,
 * whole or not at all; ids[i] receives the id of specs[i].  Specs with refs may depend on
 * each other (jsched_spec_add_dep_ref): that is how a graph is submitted.  On failure,
 * jsched_error_field() names the spec at fault ("jobs[3].argv"). */
JSCHED_API int jsched_submit_batch(struct jsched_conn *conn, const struct jsched_spec *const *specs,
				   size_t n, uint64_t *ids);

/* jsched_status stores job id's record in *out (the caller frees it). */
JSCHED_API int jsched_status(struct jsched_conn *conn, uint64_t id, struct jsched_result **out);
/* jsched_status_many: n records in *out, in the order of ids; one bad id fails it all. */
JSCHED_API int jsched_status_many(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				  struct jsched_results **out);

/* jsched_wait waits until job id is final, at most timeout_ms (negative: no limit; 0: just
 * look), and stores its record in *out.  When the time runs out it returns JSCHED_ETIMEOUT
 * and *out still receives the record as it stands. */
JSCHED_API int jsched_wait(struct jsched_conn *conn, uint64_t id, int64_t timeout_ms,
			   struct jsched_result **out);

enum jsched_wait_mode {
	JSCHED_WAIT_ALL = 0, /* until every job is final */
	JSCHED_WAIT_ANY = 1, /* until at least one is */
};

/* jsched_wait_many waits for n jobs in the given mode, at most timeout_ms, and stores their
 * records in *out, in the order of ids (final, or as they stand).  Returns the number of
 * final ones, or JSCHED_ETIMEOUT with *out set all the same.  Records past the daemon's
 * reply limit (its reply says "more") are fetched with status, as jsched_status_many. */
JSCHED_API int jsched_wait_many(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				enum jsched_wait_mode mode, int64_t timeout_ms,
				struct jsched_results **out);

/* jsched_wait_brief is jsched_wait_many for a caller that needs only how the jobs stand:
 * each record of *out has its id, state and state_name, nothing else (the wait's
 * `"fields": "brief"`, PROTOCOL.md 6.4; a daemon of protocol 3).  Cheaper on both sides:
 * a call job's whole record is several times the bytes and the work. */
JSCHED_API int jsched_wait_brief(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				 enum jsched_wait_mode mode, int64_t timeout_ms,
				 struct jsched_results **out);

/* jsched_submit_wait submits one job and waits for it to end in the same request (one
 * round trip: PROTOCOL.md 6.2, "Waiting in the submit"), at most timeout_ms (negative: no
 * limit; 0: just look).  *id receives the job's id, *existing (may be NULL) whether the
 * spec's key named a job submitted earlier (as jsched_submit_ex), *out its record (the
 * caller frees it), and *output (NULL: not asked for) an exec job's captured output as
 * jsched_output gives it (NULL for a call job or an array).  When the time runs out it
 * returns JSCHED_ETIMEOUT with *id, *out (the record as it stands) and *output set all the
 * same: the job was made, and goes on.  Any other error: no job was made (or the reply
 * was lost: JSCHED_EDISCONNECTED, and jsched_set_timeout's own JSCHED_ETIMEOUT with *id
 * 0 and *out NULL, after which the job may exist). */
JSCHED_API int jsched_submit_wait(struct jsched_conn *conn, const struct jsched_spec *spec, int64_t timeout_ms,
				  uint64_t *id, bool *existing, struct jsched_result **out,
				  struct jsched_output **output);

/* jsched_submit_batch_wait submits n specs as jsched_submit_batch does and waits in the
 * same request, in the given mode, at most timeout_ms: ids[i] receives the id of specs[i]
 * and *out their records in the same order (final, or as they stand).  Returns the number
 * of final ones, or JSCHED_ETIMEOUT with ids and *out set all the same.  Records past the
 * daemon's reply limit (its reply says "more") are fetched with status. */
JSCHED_API int jsched_submit_batch_wait(struct jsched_conn *conn, const struct jsched_spec *const *specs,
					size_t n, enum jsched_wait_mode mode, int64_t timeout_ms, uint64_t *ids,
					struct jsched_results **out);

/* jsched_cancel cancels job id: not started yet, it ends cancelled at once; running, it is
 * asked to stop; already final, nothing happens (not an error). */
JSCHED_API int jsched_cancel(struct jsched_conn *conn, uint64_t id);
/* jsched_cancel_many cancels n jobs (none if any id is bad); *out (may be NULL) receives a
 * partial record per job: id, state after the request, cancelling. */
JSCHED_API int jsched_cancel_many(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				  struct jsched_results **out);

/* jsched_list lists the caller's jobs the daemon still retains, in increasing id order:
 * those in a state of state_mask (bit 1u << JSCHED_STATE_x; 0: every state), charged to
 * client (NULL: any), of every uid if all_uids (admins only).  It pages through the daemon's
 * answer itself, so *out holds every match. */
JSCHED_API int jsched_list(struct jsched_conn *conn, unsigned state_mask, const char *client, bool all_uids,
			   struct jsched_results **out);

/* jsched_hook_claim asks to run the hooks of job id, which has ended: *claimed is true
 * for the one caller that may run them now (the hooks were pending, or an earlier claim is
 * older than twice their time limit plus 10 s), false if another runs or ran them.  The
 * job's owner only.  jsched_hook_report says how the run went: ok, the command's exit code
 * (-1: none) or signal (0: none), and a reason for people (NULL: none).  JSCHED_EPROTOCOL
 * for a job not yet ended or hooks reported already, JSCHED_ENOT_SUPPORTED for a job
 * without hooks. */
JSCHED_API int jsched_hook_claim(struct jsched_conn *conn, uint64_t id, bool *claimed);
JSCHED_API int jsched_hook_report(struct jsched_conn *conn, uint64_t id, bool ok, int exit_code,
				  int signal, const char *reason);

/* jsched_list_array lists the elements of job array array_id (jsched_spec_set_array) in a
 * state of state_mask (0: every state), in index order; jsched_list shows an array as its
 * one record (the parent's, whose "array" member counts its elements per state). */
JSCHED_API int jsched_list_array(struct jsched_conn *conn, uint64_t array_id, unsigned state_mask,
				 struct jsched_results **out);

/* jsched_value stores job id's result, as JSON text, in *json (NUL-terminated; free with
 * jsched_free) and its length in *len (may be NULL): a call's value, or a failed handler's
 * detail, whole, however large (a record carries one only up to the daemon's value_bytes,
 * and says result_omitted past it).  It fetches the text in pieces that each fit a reply.
 * JSCHED_ENOT_SUPPORTED for a command, an array, or a job that has not ended. */
JSCHED_API int jsched_value(struct jsched_conn *conn, uint64_t id, char **json, size_t *len);

/* jsched_output stores an exec job's captured stdout and stderr in *out.  JSCHED_ENOT_SUPPORTED
 * for a call job. */
JSCHED_API int jsched_output(struct jsched_conn *conn, uint64_t id, struct jsched_output **out);

/* jsched_metrics stores the daemon's metrics document (JSON text, PROTOCOL.md section 8) in
 * *out; the caller frees it with jsched_free. */
JSCHED_API int jsched_metrics(struct jsched_conn *conn, char **out);

/* jsched_metrics_prometheus stores the same figures in Prometheus's text exposition format
 * (counters, gauges and latency histograms; no job's argv, env or output) in *out; the
 * caller frees it with jsched_free. */
JSCHED_API int jsched_metrics_prometheus(struct jsched_conn *conn, char **out);

/* jsched_ping does a round trip that does nothing. */
JSCHED_API int jsched_ping(struct jsched_conn *conn);

/* jsched_drain cancels, in bulk, the caller's queued and waiting jobs charged to client
 * (NULL: this connection's), and if running is true asks its running jobs to stop too.
 * *cancelled and *cancelling (each may be NULL) receive how many. */
JSCHED_API int jsched_drain(struct jsched_conn *conn, const char *client, bool running,
			    uint64_t *cancelled, uint64_t *cancelling);

/* jsched_pause / jsched_resume: stop starting the jobs of client `client` (NULL: this
 * connection's), or of every client when all is true, while running ones go on; resume
 * undoes it.  A paused client keeps its queued jobs and its place, and banks no credit.
 * An admin may pause any client and all; others only the client of their connection
 * (else JSCHED_EPERMISSION_DENIED).  Unknown client: JSCHED_ENO_SUCH_CLIENT. */
JSCHED_API int jsched_pause(struct jsched_conn *conn, const char *client, bool all);
JSCHED_API int jsched_resume(struct jsched_conn *conn, const char *client, bool all);

/* jsched_hold / jsched_release: hold n queued jobs (they stay queued, counted and
 * cancellable, and expire at their deadline, but do not start), or release held ones
 * (back to their place in their client's order).  Jobs of the caller's uid, or any for an
 * admin.  *out (may be NULL) receives one partial record per id ({"job", "state",
 * "held"}: a job not queued is left as it is, held false); free with jsched_results_free. */
JSCHED_API int jsched_hold(struct jsched_conn *conn, const uint64_t *ids, size_t n,
			   struct jsched_results **out);
JSCHED_API int jsched_release(struct jsched_conn *conn, const uint64_t *ids, size_t n,
			      struct jsched_results **out);

/* jsched_retry: run n finished jobs again, each as a new attempt of the same id (owner or
 * admin); *out has one partial record per job (id, state, attempt).  All or nothing:
 * JSCHED_EPROTOCOL if one has not ended, JSCHED_ENOT_SUPPORTED for a call job, a command
 * whose stdin was dropped when it ended, or an array. */
JSCHED_API int jsched_retry(struct jsched_conn *conn, const uint64_t *ids, size_t n,
			    struct jsched_results **out);

/* Administrative operations: the daemon allows them to admin uids only (else
 * JSCHED_EPERMISSION_DENIED).  reply_json (may be NULL) receives the daemon's reply as JSON
 * text (reload: the config keys applied and those needing a restart; set_client: the
 * client's settings now in force), freed with jsched_free.
 * - reload: re-read the config file.
 * - set_client: change a client's weight (1..1,000,000) and/or its queued-job limit and
 *   overflow strategy ("reject", "drop_oldest", "drop_newest", "block"); 0 or NULL leaves
 *   a setting as it is.
 * - shutdown: graceful (finish what is queued and running, then exit) or immediate
 *   (cancel and stop every job, then exit). */
JSCHED_API int jsched_admin_reload(struct jsched_conn *conn, char **reply_json);
JSCHED_API int jsched_admin_set_client(struct jsched_conn *conn, const char *client, uint32_t weight,
				       uint32_t max_queued, const char *overflow, char **reply_json);
JSCHED_API int jsched_admin_shutdown(struct jsched_conn *conn, bool immediate);

/* jsched_request sends any request (JSON text of an object with "op" and the operation's
 * members; the library adds "id") and stores the whole reply's JSON text in *reply_json
 * (freed with jsched_free; may be NULL), for operations this header has no call for.
 * A reply with "ok": false gives its error code, as every call does. */
JSCHED_API int jsched_request(struct jsched_conn *conn, const char *request_json, char **reply_json);

/* ---- events ---------------------------------------------------------------------------- */

/* An event the daemon pushed (PROTOCOL.md section 7).  Freed with jsched_event_free. */
struct jsched_event {
	char *type;		   /* "job", "shutdown", or a kind this build does not know */
	uint64_t seq;		   /* job: its number in the stream of the caller's uid; else 0 */
	struct jsched_result *job; /* job: the record as of the event; else NULL */
	char *mode;		   /* shutdown: "graceful" or "immediate"; else NULL */
	char *json;		   /* the whole event as JSON text */
};

JSCHED_API void jsched_event_free(struct jsched_event *event);

/* jsched_watch subscribes this connection to `job` events about the caller's jobs.
 * from_seq < 0: live events only; from_seq >= 0: first the retained events after from_seq,
 * then live ones, as long as instance (NULL: this daemon's) is the daemon's instance.
 * *last_seq (may be NULL) receives the number of the uid's last event so far.  Fails with
 * JSCHED_EEVENTS_LOST when the events asked for are gone; jsched_error_json() then holds
 * oldest_seq and instance; the way on is a live watch plus jsched_list. */
JSCHED_API int jsched_watch(struct jsched_conn *conn, int64_t from_seq, const char *instance,
			    uint64_t *last_seq);
JSCHED_API int jsched_unwatch(struct jsched_conn *conn);

/* jsched_next_event waits at most timeout_ms (negative: no limit; 0: only what has already
 * arrived) for the next event and stores it in *out (the caller frees it).  JSCHED_ETIMEOUT
 * if none came, JSCHED_EDISCONNECTED if the daemon hung up.  JSCHED_EINVAL when an event
 * callback is set (events go there instead), or from a callback when no event has
 * arrived yet (it would have to wait). */
JSCHED_API int jsched_next_event(struct jsched_conn *conn, int64_t timeout_ms, struct jsched_event **out);

/* ---- event-loop mode --------------------------------------------------------------------
 * A program with its own loop polls jsched_fd(conn) for reading, and for writing too while
 * jsched_want_write(conn) is true, and calls jsched_process(conn) when it is ready (or
 * whenever it likes: the fd is non-blocking).  The *_async calls queue a request and return
 * its request id (> 0) at once; its callback runs exactly once, later, from jsched_process
 * (or from a synchronous call, or jsched_close).  If an *_async call fails, its callback
 * never runs.  Many requests may be in flight; their replies may come in any order. */

/* A reply, handed to a reply callback; borrowed, valid only during the callback. */
struct jsched_reply;

/* status: 0, or the error the request failed with (details in jsched_error_*(conn) during
 * the callback; reply is then still readable, e.g. a wait's timeout carries records). */
typedef void (*jsched_reply_cb)(struct jsched_conn *conn, int status, const struct jsched_reply *reply,
				void *arg);
/* The event becomes the callee's: it frees it with jsched_event_free. */
typedef void (*jsched_event_cb)(struct jsched_conn *conn, struct jsched_event *event, void *arg);

JSCHED_API int jsched_fd(const struct jsched_conn *conn);
JSCHED_API bool jsched_want_write(const struct jsched_conn *conn);

/* jsched_process writes what it can and reads what has arrived, without blocking, and runs
 * the callbacks of the replies and events that completed.  Returns 0, or
 * JSCHED_EDISCONNECTED once the daemon has hung up (the callbacks of requests in flight
 * then run with that error; the connection can only be closed).  Not from a callback
 * (JSCHED_EINVAL). */
JSCHED_API int jsched_process(struct jsched_conn *conn);

/* jsched_set_event_cb routes events to cb (NULL: keep them for jsched_next_event; they are
 * kept without limit until read, so a watching program reads them). */
JSCHED_API void jsched_set_event_cb(struct jsched_conn *conn, jsched_event_cb cb, void *arg);

/* The asynchronous requests.  Each returns the request id (> 0) or an error.  The
 * operations without an _async call here (list, output, metrics, drain, watch, admin) go
 * through jsched_request_async with their JSON (PROTOCOL.md section 6), read back with
 * jsched_reply_json. */
JSCHED_API int jsched_submit_async(struct jsched_conn *conn, const struct jsched_spec *spec,
				   jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_submit_batch_async(struct jsched_conn *conn, const struct jsched_spec *const *specs,
					 size_t n, jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_status_async(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				   jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_wait_async(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				 enum jsched_wait_mode mode, int64_t timeout_ms, jsched_reply_cb cb,
				 void *arg);
/* jsched_submit_wait_async: a batch submit that waits in the same request (as
 * jsched_submit_batch_wait).  The callback reads the ids with jsched_reply_ids and the
 * records with jsched_reply_results; a wait that ran out of time has status
 * JSCHED_ETIMEOUT, with both still readable. */
JSCHED_API int jsched_submit_wait_async(struct jsched_conn *conn, const struct jsched_spec *const *specs,
					size_t n, enum jsched_wait_mode mode, int64_t timeout_ms,
					jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_cancel_async(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				   jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_request_async(struct jsched_conn *conn, const char *request_json,
				    jsched_reply_cb cb, void *arg);

/* Reading a reply in its callback:
 * - jsched_reply_ids: the job ids of a submit reply (one, or one per spec); borrowed array.
 * - jsched_reply_results: the records of a status/wait/cancel reply (also of a wait's
 *   timeout, and of a submit that waited), new, in *out, the caller's.
 * - jsched_reply_json: the whole reply as JSON text; borrowed. */
JSCHED_API int jsched_reply_ids(const struct jsched_reply *reply, const uint64_t **ids, size_t *n);
JSCHED_API int jsched_reply_results(const struct jsched_reply *reply, struct jsched_results **out);
JSCHED_API const char *jsched_reply_json(const struct jsched_reply *reply);

#ifdef __cplusplus
}
#endif

#endif /* JSCHED_JSCHED_H */
