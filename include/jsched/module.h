/* jsched/module.h: the API between jschedd and the call-job handlers it loads.
 *
 * A module is a shared object that the administrator lists in jschedd's config
 * ("modules": ["/usr/lib/jsched/example.so"]); clients only ever name the handlers it
 * provides, never a file.  jschedd dlopen()s each module at start and looks up one
 * symbol, `jsched_module`, a struct jsched_module.  Its `abi` must equal the daemon's
 * JSCHED_MODULE_ABI, or the module is refused (and jschedd does not start): the structs
 * below are the contract, and any change to them bumps the number.
 *
 * A handler receives its job's JSON args and returns a JSON result:
 *
 *     static int add(struct jsched_task *t, const json_t *args, json_t **result)
 *     {
 *             json_int_t a = json_integer_value(json_object_get(args, "a"));
 *             json_int_t b = json_integer_value(json_object_get(args, "b"));
 *             *result = json_integer(a + b);
 *             return 0;
 *     }
 *     static const struct jsched_handler handlers[] = {{"example.add", add, 0}};
 *     JSCHED_MODULE_EXPORT const struct jsched_module jsched_module = {
 *             JSCHED_MODULE_ABI, "example", handlers, 1, NULL, NULL};
 *
 * Return 0 for success (the job ends "succeeded" with *result, a new reference, or
 * JSON null if left NULL), or a negative JSCHED_E* code (include/jsched/error.h) for
 * failure: the job ends "failed" with that code and the message set by
 * jsched_task_set_error(), and *result if set is kept as the failure's detail.  A
 * handler that returns JSCHED_ECANCELLED after seeing jsched_task_cancelled() ends
 * "cancelled".
 *
 * Threads: handlers run on jschedd's worker threads, many at once; they must be
 * thread-safe.  A handler flagged JSCHED_HANDLER_SUSPENDS runs on a fiber and may call
 * jsched_task_sleep() and jsched_task_join(); while it is suspended no worker thread is
 * held, and it may resume on a different worker thread than it started on, so it must
 * not keep pointers to thread-local storage (errno included) across those calls.  A
 * handler without the flag runs straight on the worker's stack and must not suspend
 * (the calls then block the worker, which works but wastes it).
 *
 * Child processes: run them with jsched_task_run() (below), which suspends the fiber
 * instead of blocking a worker in waitpid() and applies the daemon's identity rules and
 * process cap; posix_spawn() is the cheaper call for a handler's own children (fork()
 * copies the page tables of every fiber stack in the daemon).
 *
 * The jsched_task_* functions are provided by the jschedd binary (exported to modules
 * only); a module links against nothing of the daemon's.
 */
#ifndef JSCHED_MODULE_H
#define JSCHED_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jsched/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the structs and functions in this header. */
#define JSCHED_MODULE_ABI 1

/* Put on the jsched_module definition so it stays visible under -fvisibility=hidden. */
#define JSCHED_MODULE_EXPORT __attribute__((visibility("default")))

/* The running call job, as a handler sees it.  Opaque; valid until the handler returns. */
struct jsched_task;

/* A handler: args is borrowed (read only, valid until return); *result is a new
 * reference the daemon takes.  Returns 0 or a negative JSCHED_E* code. */
typedef int (*jsched_handler_fn)(struct jsched_task *t, const json_t *args, json_t **result);

/* The handler may suspend (sleep, join): run it on a fiber. */
#define JSCHED_HANDLER_SUSPENDS 0x1u

/* The handler is tiny: it returns within a few microseconds, never blocks, never
 * suspends and starts no sub-tasks or commands.  jschedd may then run it on its event
 * loop thread, in fair order among such jobs, instead of handing it to a worker (the
 * hand-off, a wake-up each way, costs more than such a job).  Ignored together with
 * JSCHED_HANDLER_SUSPENDS. */
#define JSCHED_HANDLER_INLINE 0x2u

struct jsched_handler {
	const char *name;	/* what clients put in "fn"; unique across all modules */
	jsched_handler_fn fn;
	unsigned flags;		/* JSCHED_HANDLER_* */
};

struct jsched_module {
	uint32_t abi;		/* JSCHED_MODULE_ABI as the module was built */
	const char *name;	/* for logs and metrics */
	const struct jsched_handler *handlers;
	size_t n_handlers;
	/* Optional: called once after loading (return 0 or the module is refused) and once
	 * at shutdown, on the daemon's main thread. */
	int (*init)(void);
	void (*fini)(void);
};

/* jsched_task_cancelled: true once the job has been cancelled (by its client, an admin
 * or an immediate shutdown).  Cheap; poll it in long loops. */
bool jsched_task_cancelled(const struct jsched_task *t);

/* jsched_task_sleep: suspend the handler for `ms` milliseconds (the fiber is parked and
 * the worker runs other jobs).  Returns 0, or JSCHED_ECANCELLED early if the job is
 * cancelled meanwhile. */
int jsched_task_sleep(struct jsched_task *t, uint64_t ms);

/* A sub-task: runs fn(arg) on some worker, possibly in parallel with the handler. */
typedef void (*jsched_subtask_fn)(void *arg);

/* jsched_task_spawn: start fn(arg) as a sub-task that the pool may run on any worker
 * (idle workers steal it).  Returns 0 or JSCHED_ENOMEM. */
int jsched_task_spawn(struct jsched_task *t, jsched_subtask_fn fn, void *arg);

/* jsched_task_join: wait until every sub-task spawned so far by this handler has
 * returned.  Returns 0 (sub-tasks are not interrupted by cancellation; they should poll
 * jsched_task_cancelled themselves). */
int jsched_task_join(struct jsched_task *t);

/* jsched_task_set_error: the human-readable reason a failing handler gives (copied). */
void jsched_task_set_error(struct jsched_task *t, const char *message);

/* jsched_task_id: the job's id, as clients see it. */
uint64_t jsched_task_id(const struct jsched_task *t);

/* A child process for jsched_task_run.  Strings are copied before the call suspends. */
struct jsched_process {
	const char *const *argv;	/* argv[0] (required) without a '/' is looked up in
					 * env's PATH, else /usr/local/bin:/usr/bin:/bin */
	const char *const *env;		/* "NAME=value", NULL-terminated; NULL: empty.  The
					 * daemon's environment is never passed on */
	const char *cwd;		/* NULL: "/" */
	const void *stdin_data;		/* NULL: stdin is /dev/null */
	size_t stdin_len;
	uint64_t timeout_ms;		/* 0: none; then SIGTERM, SIGKILL after the grace */
	size_t output_bytes;		/* captured per stream; 0: the daemon's exec.output_bytes */
};

/* How it ended and what it wrote.  Free with jsched_process_result_free. */
struct jsched_process_result {
	int exit_code;			/* 0..255 if it exited, else -1 */
	int signal;			/* the signal that ended it, else 0 */
	bool timed_out;			/* stopped by timeout_ms */
	char *out, *err;		/* captured bytes (not NUL-terminated; may be NULL) */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
};

/* jsched_task_run: run a command as the job's owner would run an exec job (same identity,
 * own process group, the daemon's cap on concurrent processes) and wait for it: the fiber
 * suspends, no worker is held (without JSCHED_HANDLER_SUSPENDS the worker blocks).
 * Returns 0 once it has ended, whatever its status (see *res); JSCHED_ECANCELLED if the
 * job was cancelled (the process is stopped first; *res holds what it got); JSCHED_EIO if
 * it could not start (the reason is set as the task's error); JSCHED_EINVAL, or
 * JSCHED_ENOMEM.  Added to ABI 1 by jschedd 0.1: a module that calls it needs a daemon
 * that has it. */
int jsched_task_run(struct jsched_task *t, const struct jsched_process *p,
		    struct jsched_process_result *res);

/* jsched_process_result_free: free what jsched_task_run stored in *res. */
void jsched_process_result_free(struct jsched_process_result *res);

#ifdef __cplusplus
}
#endif

#endif /* JSCHED_MODULE_H */
