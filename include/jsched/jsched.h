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
 *   Unix epoch (CLOCK_REALTIME), 0 meaning "none".
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

/* jsched_connect connects to the daemon at socket_path (NULL: the default path above),
 * says hello with client_name (NULL: the program's name) and waits for the daemon's
 * answer.  On success *out is a connection the caller must jsched_close.  Fails with
 * JSCHED_ECONNECT (no daemon there: nothing listens, or no such file), JSCHED_EVERSION_MISMATCH
 * (the daemon speaks another protocol version; the daemon's message says which), or any
 * code the daemon answers hello with; on failure *out is NULL.  Blocks. */
JSCHED_API int jsched_connect(const char *socket_path, const char *client_name,
			      struct jsched_conn **out);

/* jsched_close closes the connection and frees it.  Callbacks of requests still in flight
 * are called with JSCHED_ECANCELLED before it returns (never after).  NULL is a no-op. */
JSCHED_API void jsched_close(struct jsched_conn *conn);

/* What the daemon said at hello; borrowed, valid until jsched_close. */
JSCHED_API const char *jsched_server_version(const struct jsched_conn *conn);
/* The daemon's whole hello reply, as JSON text (identity as the daemon sees it: uid, gid,
 * pid, client name; its limits).  Borrowed, valid until jsched_close. */
JSCHED_API const char *jsched_hello_json(const struct jsched_conn *conn);

/* After a call on conn fails: the daemon's symbolic code ("queue_full"), its message,
 * and the name of the offending field ("spec.priority"), or NULL when the daemon did not
 * send one (a local error: the library's own message is then in jsched_error_message).
 * Borrowed, valid until the next call on conn. */
JSCHED_API const char *jsched_error_code(const struct jsched_conn *conn);
JSCHED_API const char *jsched_error_message(const struct jsched_conn *conn);
JSCHED_API const char *jsched_error_field(const struct jsched_conn *conn);

/* ---- job specs ----------------------------------------------------------------------- */

/* A job spec, built with the functions below (opaque, so that fields can be added without
 * breaking programs built against an older header).  One spec may be submitted many
 * times.  The setters copy what they are given, return 0 or JSCHED_EINVAL (bad value) /
 * JSCHED_ENOMEM, and leave the spec unchanged on failure. */
struct jsched_spec;

enum jsched_priority {
	JSCHED_PRIORITY_LOW = 0,
	JSCHED_PRIORITY_NORMAL = 1, /* the default */
	JSCHED_PRIORITY_HIGH = 2,
	JSCHED_PRIORITY_CRITICAL = 3,
};

/* Which outcome of a dependency releases the dependent job. */
enum jsched_dep_on {
	JSCHED_DEP_SUCCESS = 0, /* the default: the dependency succeeded */
	JSCHED_DEP_FAILURE = 1, /* it ended in any state but succeeded */
	JSCHED_DEP_ANY = 2,	/* it ended, however */
};

/* jsched_spec_exec makes a spec for an exec job running argv[0] (searched in PATH) with
 * the arguments argv[1..] (argv ends with NULL; argv[0] must not be NULL).  By default the
 * command gets an empty environment and the daemon's working directory; see
 * jsched_spec_set_env / set_cwd (the jsched tool sends its own).  Any thread. */
JSCHED_API int jsched_spec_exec(const char *const *argv, struct jsched_spec **out);

/* jsched_spec_call makes a spec for a call job: the daemon's handler named fn with the
 * arguments args_json (a JSON text; NULL means null).  JSCHED_EINVAL if args_json does not
 * parse.  Any thread. */
JSCHED_API int jsched_spec_call(const char *fn, const char *args_json, struct jsched_spec **out);

/* jsched_spec_from_json makes a spec from its JSON form (the "spec" object of
 * proto/PROTOCOL.md), for fields the setters below do not cover.  The daemon checks it
 * field by field at submission.  JSCHED_EINVAL if json is not a JSON object. */
JSCHED_API int jsched_spec_from_json(const char *json, struct jsched_spec **out);

/* jsched_spec_free frees a spec.  NULL is a no-op. */
JSCHED_API void jsched_spec_free(struct jsched_spec *spec);

/* jsched_spec_to_json returns the spec's JSON form in *out (the caller frees it with
 * jsched_free). */
JSCHED_API int jsched_spec_to_json(const struct jsched_spec *spec, char **out);

JSCHED_API int jsched_spec_set_name(struct jsched_spec *spec, const char *name);
JSCHED_API int jsched_spec_set_priority(struct jsched_spec *spec, enum jsched_priority prio);
/* Not started by deadline_ms (ms since the epoch): the job expires without running. */
JSCHED_API int jsched_spec_set_deadline(struct jsched_spec *spec, int64_t deadline_ms);
/* A hint of how much work the job is (arbitrary units, default 1), for fair sharing. */
JSCHED_API int jsched_spec_set_cost(struct jsched_spec *spec, uint32_t cost);
/* Exec jobs: the environment ("NAME=value" strings ending with NULL; replaces any earlier
 * one), the working directory, the bytes given on stdin, the run-time limit. */
JSCHED_API int jsched_spec_set_env(struct jsched_spec *spec, const char *const *env);
JSCHED_API int jsched_spec_set_cwd(struct jsched_spec *spec, const char *cwd);
JSCHED_API int jsched_spec_set_stdin(struct jsched_spec *spec, const void *data, size_t len);
JSCHED_API int jsched_spec_set_timeout(struct jsched_spec *spec, int64_t timeout_ms);
/* Dependencies.  A spec's dependencies form one gate: all of them (the default) or any one
 * of them (set_dep_any(true)).  add_dep names a submitted job by id; add_dep_local names
 * another node of the same graph by its local name (jsched_graph_add).  on applies to the
 * whole gate; the last call wins. */
JSCHED_API int jsched_spec_add_dep(struct jsched_spec *spec, uint64_t job_id);
JSCHED_API int jsched_spec_add_dep_local(struct jsched_spec *spec, const char *local_name);
JSCHED_API int jsched_spec_set_dep_any(struct jsched_spec *spec, bool any);
JSCHED_API int jsched_spec_set_dep_on(struct jsched_spec *spec, enum jsched_dep_on on);

/* A graph: several specs submitted in one message, referring to each other by local names
 * (jsched_spec_add_dep_local).  The daemon accepts all of it or none of it. */
struct jsched_graph;

JSCHED_API int jsched_graph_new(struct jsched_graph **out);
/* jsched_graph_add adds a copy of spec as the node local_name (unique in the graph). */
JSCHED_API int jsched_graph_add(struct jsched_graph *graph, const char *local_name,
				const struct jsched_spec *spec);
JSCHED_API void jsched_graph_free(struct jsched_graph *graph);

/* ---- results ---------------------------------------------------------------------------- */

enum jsched_state {
	JSCHED_STATE_UNKNOWN = 0, /* a state this build does not know (a newer daemon's) */
	JSCHED_STATE_WAITING,	  /* dependencies not met yet */
	JSCHED_STATE_QUEUED,
	JSCHED_STATE_RUNNING,
	JSCHED_STATE_SUCCEEDED,	  /* final states from here on */
	JSCHED_STATE_FAILED,
	JSCHED_STATE_CANCELLED,
	JSCHED_STATE_EXPIRED,
	JSCHED_STATE_DROPPED,
};

/* jsched_state_name gives the wire name of a state ("queued"); static.  jsched_state_final
 * tells a final state. */
JSCHED_API const char *jsched_state_name(enum jsched_state state);
JSCHED_API bool jsched_state_final(enum jsched_state state);

/* What the daemon knows of a job.  Allocated by the library, read by the caller, freed with
 * jsched_result_free (which frees the strings too).  Fields are only ever appended, so
 * code built against this header keeps working with a newer library. */
struct jsched_result {
	uint64_t id;
	char *name;		/* client-chosen name, or NULL */
	char *kind;		/* "exec" or "call" */
	enum jsched_state state;
	char *state_name;	/* the wire name of the state, even one this build does not know */
	int exit_code;		/* exec, exited: its exit status; else -1 */
	int signal;		/* exec, killed by a signal: its number; else 0 */
	char *result_json;	/* call, succeeded: the handler's result as JSON text; else NULL */
	char *error_code;	/* failed/expired/dropped/cancelled: the symbolic reason, or NULL */
	char *error_message;	/* and its human words, or NULL */
	int64_t submitted_ms;	/* instants, 0 for not yet */
	int64_t started_ms;
	int64_t finished_ms;
};

JSCHED_API void jsched_result_free(struct jsched_result *result);

/* A list of results (jsched_list, jsched_wait_many); freed with jsched_results_free. */
struct jsched_results {
	size_t count;
	struct jsched_result **items;
};

JSCHED_API void jsched_results_free(struct jsched_results *results);

/* An exec job's captured output.  Freed with jsched_output_free.  The buffers hold bytes,
 * not necessarily text, and are also NUL-terminated for convenience. */
struct jsched_output {
	char *out;
	size_t out_len;
	bool out_truncated; /* the daemon kept only the first bytes */
	char *err;
	size_t err_len;
	bool err_truncated;
};

JSCHED_API void jsched_output_free(struct jsched_output *output);

/* jsched_free frees a string the library gave the caller (jsched_metrics, jsched_spec_to_json). */
JSCHED_API void jsched_free(void *p);

/* ---- synchronous operations --------------------------------------------------------------
 * Each sends one request, waits for its reply and returns.  Events that arrive meanwhile go
 * to the event callback if one is set, else are kept for jsched_next_event. */

/* jsched_submit submits one job; its id is stored in *id. */
JSCHED_API int jsched_submit(struct jsched_conn *conn, const struct jsched_spec *spec, uint64_t *id);

/* jsched_submit_batch submits n jobs in one message, all or none; ids[i] receives the id
 * of specs[i].  On failure jsched_error_field() tells which spec (e.g. "jobs[3].argv"). */
JSCHED_API int jsched_submit_batch(struct jsched_conn *conn, const struct jsched_spec *const *specs,
				   size_t n, uint64_t *ids);

/* jsched_submit_graph submits a graph, all or none.  ids[i] receives the id of the i-th
 * node added (ids has room for as many nodes as were added). */
JSCHED_API int jsched_submit_graph(struct jsched_conn *conn, const struct jsched_graph *graph,
				   uint64_t *ids);

/* jsched_status stores what the daemon knows of job id in *out (the caller frees it). */
JSCHED_API int jsched_status(struct jsched_conn *conn, uint64_t id, struct jsched_result **out);

/* jsched_wait waits until job id is in a final state, at most timeout_ms (negative: no
 * limit; 0: just look).  *out receives the result (final, or the current state when it
 * timed out: the call then returns JSCHED_ETIMEOUT and *out is still set). */
JSCHED_API int jsched_wait(struct jsched_conn *conn, uint64_t id, int64_t timeout_ms,
			   struct jsched_result **out);

enum jsched_wait_mode {
	JSCHED_WAIT_ALL = 0, /* until every job is final */
	JSCHED_WAIT_ANY = 1, /* until at least one is */
};

/* jsched_wait_many waits for n jobs in the given mode, at most timeout_ms.  *out receives
 * one result per id, in order (final or current).  Returns the number of final ones, or
 * JSCHED_ETIMEOUT (with *out set) if the condition was not met in time. */
JSCHED_API int jsched_wait_many(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				enum jsched_wait_mode mode, int64_t timeout_ms,
				struct jsched_results **out);

/* jsched_cancel cancels job id (queued or waiting: it never runs; running: it is told to
 * stop).  Cancelling a job already final fails with the daemon's code. */
JSCHED_API int jsched_cancel(struct jsched_conn *conn, uint64_t id);

/* jsched_list lists the caller's own jobs whose state is in state_mask (a bit per state:
 * 1u << JSCHED_STATE_QUEUED ...; 0 means all). */
JSCHED_API int jsched_list(struct jsched_conn *conn, unsigned state_mask, struct jsched_results **out);

/* jsched_output stores an exec job's captured stdout and stderr in *out. */
JSCHED_API int jsched_output(struct jsched_conn *conn, uint64_t id, struct jsched_output **out);

/* jsched_metrics stores the daemon's metrics document (JSON text) in *out; the caller frees
 * it with jsched_free. */
JSCHED_API int jsched_metrics(struct jsched_conn *conn, char **out);

/* jsched_drain asks the daemon to stop admitting new jobs from this client... see
 * proto/PROTOCOL.md for the exact scope; returns when the daemon has acknowledged. */
JSCHED_API int jsched_drain(struct jsched_conn *conn);

/* Administrative operations (the caller's uid must be an admin uid, else
 * JSCHED_EPERMISSION_DENIED).  set_client sets a client's weight and its queued-job
 * limit (0: leave unchanged). */
JSCHED_API int jsched_admin_reload(struct jsched_conn *conn);
JSCHED_API int jsched_admin_set_client(struct jsched_conn *conn, const char *client, uint32_t weight,
				       uint32_t max_queued);
JSCHED_API int jsched_admin_shutdown(struct jsched_conn *conn, bool immediate);

/* ---- events -------------------------------------------------------------------------------- */

/* An event the daemon pushes about one of the caller's jobs after jsched_watch. */
struct jsched_event {
	uint64_t seq;		     /* the daemon's sequence number, to resume after a reconnect */
	char *type;		     /* "state", ... (see PROTOCOL.md) */
	struct jsched_result *job;   /* the job as of the event */
};

JSCHED_API void jsched_event_free(struct jsched_event *event);

/* jsched_watch subscribes this connection to events about the caller's jobs, starting
 * after sequence number since (0: from now on).  JSCHED_EJOB_FORGOTTEN if the daemon no
 * longer retains events that old. */
JSCHED_API int jsched_watch(struct jsched_conn *conn, uint64_t since);

/* jsched_next_event waits at most timeout_ms (negative: no limit) for the next event and
 * stores it in *out (the caller frees it).  JSCHED_ETIMEOUT if none came.  Not for use
 * with an event callback set (JSCHED_EINVAL). */
JSCHED_API int jsched_next_event(struct jsched_conn *conn, int64_t timeout_ms, struct jsched_event **out);

/* ---- event-loop mode -------------------------------------------------------------------------
 * The caller polls jsched_fd(conn) for reading, and also for writing while
 * jsched_want_write(conn) is true, and calls jsched_process(conn) when it is ready.  The
 * *_async calls queue a request and return its id (> 0) at once; its callback runs later,
 * from jsched_process, exactly once.  If an *_async call fails, its callback never runs. */

/* A reply, handed to a callback; borrowed, valid only during the callback.  Read it with
 * the jsched_reply_* functions that fit the request. */
struct jsched_reply;

/* status is 0 or the error the request failed with (its details in jsched_error_*() during
 * the callback). */
typedef void (*jsched_reply_cb)(struct jsched_conn *conn, int status, const struct jsched_reply *reply,
				void *arg);
/* The event is the callee's: it frees it with jsched_event_free. */
typedef void (*jsched_event_cb)(struct jsched_conn *conn, struct jsched_event *event, void *arg);

JSCHED_API int jsched_fd(const struct jsched_conn *conn);
JSCHED_API bool jsched_want_write(const struct jsched_conn *conn);

/* jsched_process reads what has arrived and writes what it can, without blocking, and runs
 * the callbacks of the replies and events it completed.  Returns 0, or JSCHED_EDISCONNECTED
 * when the daemon hung up (callbacks of requests in flight then run with that error). */
JSCHED_API int jsched_process(struct jsched_conn *conn);

/* jsched_set_event_cb routes events to cb (NULL: keep them for jsched_next_event). */
JSCHED_API void jsched_set_event_cb(struct jsched_conn *conn, jsched_event_cb cb, void *arg);

JSCHED_API int jsched_submit_async(struct jsched_conn *conn, const struct jsched_spec *spec,
				   jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_status_async(struct jsched_conn *conn, uint64_t id, jsched_reply_cb cb, void *arg);
JSCHED_API int jsched_wait_async(struct jsched_conn *conn, const uint64_t *ids, size_t n,
				 enum jsched_wait_mode mode, int64_t timeout_ms, jsched_reply_cb cb,
				 void *arg);
JSCHED_API int jsched_cancel_async(struct jsched_conn *conn, uint64_t id, jsched_reply_cb cb, void *arg);

/* Reading a reply: the submitted job ids (borrowed array), the result(s) (new, the
 * caller's), the whole reply as JSON text (borrowed). */
JSCHED_API int jsched_reply_ids(const struct jsched_reply *reply, const uint64_t **ids, size_t *n);
JSCHED_API int jsched_reply_results(const struct jsched_reply *reply, struct jsched_results **out);
JSCHED_API const char *jsched_reply_json(const struct jsched_reply *reply);

#ifdef __cplusplus
}
#endif

#endif /* JSCHED_JSCHED_H */
