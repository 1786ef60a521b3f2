/* tests/daemon/harness.h: start a real jschedd for an integration test and talk to it.
 *
 * jdt_start() makes a temp dir, writes a config into it (the socket inside it, plus the
 * JSON members the test passes), starts $JSCHED_BUILD_DIR/bin/jschedd -c that config
 * (build/rel when unset) with its stderr in the temp dir, and waits until the socket
 * answers a hello.  What is not about jschedd (the build dir, temp dirs, starting and
 * reaping a child) is tests/common/proc.h's.  Every wait in here is bounded in count and time; a bound that runs
 * out fails the test with a message instead of hanging it.
 */
#ifndef JDT_HARNESS_H
#define JDT_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include <jansson.h>

#include "jsched/jsched.h"

struct jdt {
	char dir[256];
	char sock[300];
	char conf[300];
	char log[300];
	char build[512];	/* absolute build dir */
	pid_t pid;
	bool test_clock;	/* started with --test-clock (jdt_start_clocked) */
};

/* jdt_start: start a daemon whose config is {"socket": <temp>/s, <members>} where
 * `members` is a JSON fragment ("" or "\"workers\": 2, ...").  Asserts on failure. */
void jdt_start(struct jdt *t, const char *members);

/* jdt_run_group: cmocka_run_group_tests(tests) with the setup and teardown most test
 * programs share: before the first test the daemon *t started with members (jdt_start, or
 * jdt_start_clocked if clocked) and, if c is not NULL, *c connected as client (NULL: the
 * default name); after the last, *c closed and the daemon stopped by SIGTERM, a clean exit
 * (status 0) asserted.  Returns what cmocka's does (the failed count).  JDT_RUN_GROUP and
 * JDT_RUN_GROUP_CLOCKED take the tests array itself. */
int jdt_run_group(const char *name, const struct CMUnitTest *tests, size_t n, struct jdt *t,
		  bool clocked, const char *members, struct jsched_conn **c, const char *client);
#define JDT_RUN_GROUP(tests, t, members, c, client)                                           \
	jdt_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), t, false, members, c, client)
#define JDT_RUN_GROUP_CLOCKED(tests, t, members, c, client)                                   \
	jdt_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), t, true, members, c, client)

/* jdt_start_clocked: jdt_start with `jschedd --test-clock` (also at jdt_restart): the
 * daemon's wall clock stands still until jdt_clock_advance moves it. */
void jdt_start_clocked(struct jdt *t, const char *members);

/* jdt_clock_advance: move the test clock ms forward (the admin op test_clock, which also
 * runs every timer due by then); returns the daemon's new wall-clock time in ms. */
json_int_t jdt_clock_advance(struct jsched_conn *c, int64_t ms);

/* jdt_wait_ready: wait (bounded, 30 s) until the jschedd `pid` answers a hello and a
 * ping on `sock`; if it exits first, the bound runs out, or it accepts and leaves them
 * unanswered for 10 s, show the end of `log` (if not NULL) and fail the test. */
void jdt_wait_ready(const char *sock, pid_t pid, const char *log);

/* jdt_write_config: rewrite the config file with new members (for SIGHUP tests). */
void jdt_write_config(struct jdt *t, const char *members);

/* jdt_stop: SIGTERM (or `sig`) and wait (bounded) for the exit; returns the exit status
 * (or 128+signal).  Removes the temp dir. */
int jdt_stop(struct jdt *t, int sig);

/* jdt_restart: start jschedd again on the same directory and config (its log appended),
 * and wait until it answers.  jdt_kill9: SIGKILL the daemon and reap it. */
void jdt_restart(struct jdt *t);
void jdt_kill9(struct jdt *t);

/* jdt_pause: stop the daemon (SIGSTOP) with its loop thread asleep in epoll_wait, and
 * return once every one of its threads is stopped, so that what the test then writes to
 * several connections is all there when jdt_resume (SIGCONT) lets it go, and epoll reports
 * the connections in the order they became readable: the loop's poll has no entry left
 * from an earlier request (a level-triggered entry stays queued until the next poll
 * finds the socket empty).  kill(2) alone returns before the threads stop, and a loop
 * stopped between reading a request and its next poll kept that entry first.  Both
 * waits are bounded (3 s each); one that runs out fails the test. */
void jdt_pause(struct jdt *t);
void jdt_resume(struct jdt *t);

/* jdt_wait_exit: wait (bounded, `ms`) for the daemon to exit on its own; returns the
 * status as jdt_stop, or -1 if it did not exit. */
int jdt_wait_exit(struct jdt *t, int ms);

/* jdt_connect: a libjsched connection as `client` (NULL: default name).  Asserts. */
struct jsched_conn *jdt_connect(struct jdt *t, const char *client);

/* jdt_raw: a plain connected socket fd (no hello). */
int jdt_raw(struct jdt *t);

/* Raw frames on a jdt_raw socket.  jdt_send_all: all n bytes (asserts).  jdt_send_frame:
 * the JSON text (or any bytes) as one frame.  jdt_read_frame: the next frame from the
 * daemon within 10 s, parsed (new reference), or NULL at end of stream; asserts that the
 * payload is valid JSON, UTF-8 included, and at most 16 MiB.  jdt_raw_hello: a raw
 * connection that has done its hello as `client` (NULL: the default name). */
void jdt_send_all(int fd, const void *p, size_t n);
void jdt_send_frame(int fd, const char *json);
json_t *jdt_read_frame(int fd);
int jdt_raw_hello(struct jdt *t, const char *client);

/* jdt_raw_ask: send one request on a raw connection and return its reply (new
 * reference), skipping events; fails the test if the daemon closes first. */
json_t *jdt_raw_ask(int fd, const char *req);

/* jdt_req: send a raw request (printf format, JSON) and return the parsed reply (new
 * reference; asserts it is a reply).  */
json_t *jdt_req(struct jsched_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* jdt_ok: jdt_req that asserts ok:true; returns the reply. */
json_t *jdt_ok(struct jsched_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* jdt_err_code: the error code of a reply ("" if ok). */
const char *jdt_err_code(const json_t *reply);

/* jdt_submit_call: submit one call job, assert success, return its id. */
uint64_t jdt_submit_call(struct jsched_conn *c, const char *fn, const char *args_json);
/* jdt_submit_spec: submit one job from its JSON spec (printf format), assert success,
 * return its id. */
uint64_t jdt_submit_spec(struct jsched_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* jdt_wait_state: wait for job `id` to be final (bounded 30 s); returns its state name
 * (static) and, if rec is not NULL, its record (new reference). */
const char *jdt_wait_final(struct jsched_conn *c, uint64_t id, json_t **rec);

/* jdt_state: the job's current state name (static). */
const char *jdt_state(struct jsched_conn *c, uint64_t id);

/* jdt_until_state: poll until job id is in `state` (bounded 30 s). */
void jdt_until_state(struct jsched_conn *c, uint64_t id, const char *state);

/* jdt_jobs_submitted: the metrics' jobs.submitted, the jobs the daemon has accepted. */
json_int_t jdt_jobs_submitted(struct jsched_conn *c);

/* jdt_metrics: the metrics document (new reference). */
json_t *jdt_metrics(struct jsched_conn *c);

/* jdt_metric_int: the integer at `path` in the metrics document, members separated by
 * '/' ("exec/direct", "resources/gpu/used"); 0 if there is none. */
json_int_t jdt_metric_int(struct jsched_conn *c, const char *path);

/* jdt_client_metrics: the metrics entry of client `name` in doc (borrowed), or NULL. */
json_t *jdt_client_metrics(json_t *doc, const char *name);

/* jdt_sleep_ms: a short pause for polling loops (never a pass/fail criterion). */
void jdt_sleep_ms(int ms);

/* jdt_wait_snapshots: poll the metrics (bounded: 30 s) until the daemon's journal has
 * put at least n snapshots in place (the 1 s tick starts one once the log is large enough);
 * fails the test if it never does. */
void jdt_wait_snapshots(struct jsched_conn *c, int n);

/* jdt_tool: run the build's `jsched -C CLIENT ARGS` (printf format; ARGS through the
 * shell) against daemon t, stdin /dev/null, its stdout into out (at most len - 1 bytes,
 * NUL-terminated); returns its exit status (128 if it did not exit).  Needs bin/jsched
 * built (an order-only prerequisite of the test). */
int jdt_tool(struct jdt *t, const char *client, char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* jdt_log_contains: whether the daemon's stderr contains `text`. */
bool jdt_log_contains(struct jdt *t, const char *text);

#endif /* JDT_HARNESS_H */
