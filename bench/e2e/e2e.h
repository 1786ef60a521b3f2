/* bench/e2e/e2e.h: what the parts of the end-to-end benchmark share.
 *
 * bench_e2e measures jschedd from the outside, through libjsched and a real daemon, beside
 * the tools a user would pick instead (beanstalkd, xargs, task-spooler, nq, a raw spawn
 * loop).  Each part lives in its own file (rtt.c, tput.c, exec.c, fair.c, scale.c) and is
 * one function that adds rows to the report; main.c picks the parts.  This header holds
 * the helpers they share: a daemon started in a temporary folder with a chosen config
 * (daemon.c), a beanstalkd started on a free loopback port and a tiny client for its text
 * protocol (beanstalk.c), and small utilities (util.c).
 *
 * The benchmark is one single-threaded process; where a part needs several clients or
 * workers at once it forks children, which never return from the part's helper (they
 * _exit).  Everything here is for that main thread (or a forked child), not thread-safe.
 */
#ifndef BENCH_E2E_H
#define BENCH_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <jsched/jsched.h>

#include "bench/common/bench.h"

/* ---- what every part is given ------------------------------------------------------- */

struct e2e {
	struct bench_report *rep;
	bool quick;
	int runs;	/* runs per short row (--runs; default 5) */
	int runs_long;	/* runs per long row: min(runs, 3) */
	unsigned cpus;	/* online CPUs: the daemon's default worker count and N for -P N */
	double tput_batch; /* part 2's batch throughput (jobs/s) once it ran, else 0 */
};

void e2e_rtt(struct e2e *e);	/* 1. round trip */
void e2e_tput(struct e2e *e);	/* 2. tiny-job throughput */
void e2e_exec(struct e2e *e);	/* 3. commands */
void e2e_fair(struct e2e *e);	/* 4. fairness */
void e2e_scale(struct e2e *e);	/* 5. scale */
void e2e_cgroup(struct e2e *e);	/* 6. control groups */
void e2e_durable(struct e2e *e);	/* 7. durability: the journal */
void e2e_hot(struct e2e *e);	/* 8. the hot path: the targets' rows, counts */
/* e2e_hot_placed: part 8's round trip by placement and sparse requests' CPU (pin.c). */
void e2e_hot_placed(struct e2e *e, double *lat, bool placement, bool sparse);
void e2e_array(struct e2e *e);	/* 9. job arrays */
void e2e_hostile(struct e2e *e);	/* 10. one client's large or repeated requests */
void e2e_output(struct e2e *e);	/* 11. output files */
void e2e_connect_rate(struct e2e *e); /* 12. connect + hello + close */

/* ---- a jschedd of our own (daemon.c) -------------------------------------------------- */

struct e2e_daemon {
	char dir[64];	/* the temporary folder: socket, config, log */
	char sock[128];
	char conf[128];
	char log[128];
	pid_t pid;
};

/* e2e_daemon_start: write {"socket": <dir>/s, <members>} as the config (members is a JSON
 * fragment, "" for none), start the build's jschedd -c on it with its stderr in the
 * folder, and wait (at most 10 s) until it answers a hello.  Exits the process on
 * failure, with the log's tail on stderr. */
void e2e_daemon_start(struct e2e_daemon *d, const char *members);

/* e2e_daemon_stop: SIGTERM, then SIGKILL after 5 s; waits; removes the folder. */
void e2e_daemon_stop(struct e2e_daemon *d);

/* e2e_daemon_restart: stop it (SIGTERM) and start it again in the same folder with a
 * new config; e2e_daemon_respawn: the same for a daemon that is no longer running (the
 * part killed and reaped it). */
void e2e_daemon_restart(struct e2e_daemon *d, const char *members);
void e2e_daemon_respawn(struct e2e_daemon *d, const char *members);

/* e2e_connect: a connection to d as `client` (NULL: the default name); exits on failure. */
struct jsched_conn *e2e_connect(struct e2e_daemon *d, const char *client);

/* e2e_rss_kib: the VmRSS of process pid in KiB (from /proc), or -1. */
long e2e_rss_kib(pid_t pid);

/* e2e_sched: the kernel's schedstat of every thread of process pid, summed: the time they
 * ran (*run_ns) and waited on a run queue to run (*wait_ns, from a wake-up to running);
 * false when /proc has none. */
bool e2e_sched(pid_t pid, double *run_ns, double *wait_ns);

/* e2e_metrics_number: the number at the slash-separated path in the daemon's metrics
 * (e.g. "jobs/succeeded"); NAN if it is absent. */
double e2e_metrics_number(struct jsched_conn *c, const char *path);

/* e2e_metrics_doc: the daemon's metrics document (new reference); dies on failure. */
json_t *e2e_metrics_doc(struct jsched_conn *c);

/* e2e_wait_ids: wait until every job in ids[0..n) is final, in chunks of 1,000 ids per
 * wait request; exits unless all succeeded. */
void e2e_wait_ids(struct jsched_conn *c, const uint64_t *ids, size_t n);
/* e2e_wait_ids_brief: e2e_wait_ids through jsched_wait_brief (records of id and state),
 * what a client that only needs to know its jobs ended would use. */
void e2e_wait_ids_brief(struct jsched_conn *c, const uint64_t *ids, size_t n);

/* e2e_submit_pipelined: submit n copies of spec over c, `batch` specs per submit message
 * (1: one job per message), with at most `window` messages in flight (event-loop mode),
 * and store the ids in ids[0..n).  Exits on failure. */
void e2e_submit_pipelined(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, size_t batch,
			  size_t window, uint64_t *ids);

/* e2e_submit_pipelined_each: the same with job i's spec specs[i]. */
void e2e_submit_pipelined_each(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n,
			       size_t batch, size_t window, uint64_t *ids);

/* e2e_exec_rate: n copies of the exec spec through d (batches of 500, 4 in flight, then
 * wait for all), in jobs/s (exec.c). */
double e2e_exec_rate(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n);

/* e2e_clients_run: fork nclients client processes (names client0 ...), each connected
 * before the clock starts; start them together; each submits per_client copies of spec
 * in batches of 1,000 (4 in flight) and waits for all of them.  Returns jobs/s over all,
 * until the last process is done (tput.c). */
double e2e_clients_run(struct e2e_daemon *d, const struct jsched_spec *spec, int nclients, size_t per_client);

/* ---- round trips (rtt.c) ---------------------------------------------------------------- */

/* e2e_echo_start: fork a process that echoes what it reads on a Unix socket pair until
 * end of file; returns our end.  e2e_pingpong: n 64-byte ping-pongs over it, lat[i] in µs
 * (lat may be NULL).  e2e_echo_stop: close our end and reap the peer. */
int e2e_echo_start(pid_t *pid);
void e2e_pingpong(int fd, size_t n, double *lat);
void e2e_echo_stop(int fd, pid_t pid);

/* e2e_minimal_start: fork the floor of a job server's round trip: a process that answers
 * libjsched on a Unix socket pair with one blocking read and one write per request, the
 * hello with hello_json (the daemon's own hello reply, id 1: jsched_hello_json) and every
 * other request with a noop's submit-with-wait reply of the daemon's shape and size (a
 * plain record, the job id counting up); of a request it reads only the frame header and
 * the id at its end.  Returns our end, for jsched_connect_fd; stop it with jsched_close
 * and e2e_wait_ok. */
int e2e_minimal_start(const char *hello_json, pid_t *pid);

/* e2e_rtt_wait: n times jsched_submit(spec) then jsched_wait, lat[i] in µs (may be NULL);
 * exits unless every job succeeded. */
void e2e_rtt_wait(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double *lat);

/* e2e_rtt_submit_wait: the same in one request each, the submit's `wait` flag
 * (jsched_submit_wait); false, having run none, if the daemon has no such flag. */
bool e2e_rtt_submit_wait(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double *lat);

/* ---- counting a process's system calls and context switches (counts.c) -------------- */

/* The system calls counted one by one beside the total (names of syscalls:sys_enter_*). */
enum { E2E_NCOUNT = 13 };
extern const char *const e2e_count_names[E2E_NCOUNT];

struct e2e_counts {
	double syscalls;	/* every system call, all threads */
	double ctxsw;		/* context switches, voluntary and involuntary, all threads */
	double by[E2E_NCOUNT];	/* per e2e_count_names */
};

struct e2e_counter {
	pid_t perf;
	int ctl, ack;
	bool ok;
	char dir[64];
	char out[128];
};

/* e2e_counter_start: attach perf stat to every thread of pid, events disabled; false
 * (saying why on stderr) when perf is missing or may not trace it.  e2e_counter_enable:
 * start counting (returns once perf has); e2e_counter_stop: stop counting, detach, and
 * fill out; false when nothing was counted. */
bool e2e_counter_start(struct e2e_counter *k, pid_t pid);
void e2e_counter_enable(struct e2e_counter *k);
bool e2e_counter_stop(struct e2e_counter *k, struct e2e_counts *out);

/* e2e_counts_breakdown: "futex 1.80, read 3.50, ..." per `per` (the calls at or above
 * 0.05 each) into buf. */
void e2e_counts_breakdown(const struct e2e_counts *c, double per, char *buf, size_t size);

/* ---- beanstalkd (beanstalk.c) -------------------------------------------------------- */

struct e2e_beanstalkd {
	pid_t pid;
	int port;
};

/* e2e_beanstalkd_start: start beanstalkd on 127.0.0.1 and a free port, in memory (no
 * binlog), and wait (at most 10 s) until it accepts a connection. */
void e2e_beanstalkd_start(struct e2e_beanstalkd *b);
/* e2e_beanstalkd_start_binlog: the same with its binlog in dir (-b dir), fsync at most
 * every fsync_ms (-f; 0: after every write). */
void e2e_beanstalkd_start_binlog(struct e2e_beanstalkd *b, const char *dir, int fsync_ms);
void e2e_beanstalkd_stop(struct e2e_beanstalkd *b);

/* A connection speaking beanstalkd's text protocol (doc/protocol.txt of beanstalkd):
 * a TCP socket with TCP_NODELAY and a read buffer. */
struct bs_conn {
	int fd;
	size_t len, off;
	char buf[65536];
};

/* bs_connect: connect to the beanstalkd on 127.0.0.1:port; exits on failure. */
void bs_connect(struct bs_conn *c, int port);
void bs_close(struct bs_conn *c);
/* bs_send: write all of buf; exits on failure. */
void bs_send(struct bs_conn *c, const void *buf, size_t len);
/* bs_line: read one reply line (without CRLF) into line[0..size); exits on failure. */
void bs_line(struct bs_conn *c, char *line, size_t size);
/* bs_cmd: send one command line (CRLF added) and read its reply line; exits unless the
 * reply starts with `expect`. */
void bs_cmd(struct bs_conn *c, const char *cmd, const char *expect, char *line, size_t size);
/* bs_put: put a job with body body[0..len) into the used tube; returns its id (the
 * INSERTED reply is read). */
uint64_t bs_put(struct bs_conn *c, const char *body, size_t len);
/* bs_reserve: reserve a job from the watched tubes; returns its id and copies its body
 * (NUL-terminated, cut to size) into body. */
uint64_t bs_reserve(struct bs_conn *c, char *body, size_t size);
/* bs_delete: delete job id. */
void bs_delete(struct bs_conn *c, uint64_t id);

/* bs_worker: the worker process's body: watch tube "jobs", and for each job reserve it,
 * delete it and, if reply, put its body into tube "replies"; a job whose body is "q" ends
 * the worker.  Never returns (_exit(0)); call it in a forked child. */
__attribute__((noreturn)) void bs_worker(int port, bool reply);

/* ---- utilities (util.c) -------------------------------------------------------------- */

/* e2e_die: print "bench-e2e: <what>: <why>" and exit 1 (killing any daemons started). */
__attribute__((noreturn, format(printf, 1, 2))) void e2e_die(const char *fmt, ...);

/* e2e_track / e2e_untrack: remember a child process that e2e_die must kill. */
void e2e_track(pid_t pid);
void e2e_untrack(pid_t pid);

/* e2e_percentile: the q-quantile (0..1) of v[0..n), nearest rank; sorts v in place. */
double e2e_percentile(double *v, size_t n, double q);

/* e2e_sleep_ms: sleep, restarting after signals. */
void e2e_sleep_ms(int ms);

/* e2e_spawn: posix_spawn argv (argv[0] a path) with stdout and stderr to /dev/null (unless
 * keep_out) and the given extra environment ("NAME=value" strings ending with NULL; may
 * be NULL); returns the pid; exits on failure. */
pid_t e2e_spawn(char *const argv[], char *const extra_env[], bool keep_out);

/* e2e_spawn_server: fork and exec a server (argv[0] a path) with stdout and stderr
 * appended to log (NULL: /dev/null), tied to this process: it gets SIGKILL when the
 * benchmark dies, however it dies, and e2e_die kills it too.  Returns the pid. */
pid_t e2e_spawn_server(char *const argv[], const char *log);

/* e2e_track_dir: remember (track) or forget a temporary folder that e2e_die removes with
 * its contents; dir must stay valid while tracked. */
void e2e_track_dir(const char *dir, bool track);

/* e2e_rm_rf: remove dir and everything in it. */
void e2e_rm_rf(const char *dir);

/* e2e_on_die: fn runs in e2e_die before the exit (one at a time; NULL: none). */
void e2e_on_die(void (*fn)(void));

/* e2e_wait_ok: wait for child pid; exits unless it exited 0.  what names it. */
void e2e_wait_ok(pid_t pid, const char *what);

/* e2e_run_ok: e2e_spawn + e2e_wait_ok. */
void e2e_run_ok(char *const argv[], char *const extra_env[], const char *what);

/* e2e_median_of: the median of v[0..n) (a copy is sorted, v is left as it is). */
double e2e_median_of(const double *v, size_t n);

#endif /* BENCH_E2E_H */
