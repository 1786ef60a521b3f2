/* daemon/daemon.h: the one struct jd_daemon that ties the parts of jschedd together.
 *
 * main.c creates it, the loop thread owns it.  Each layer keeps its state in its own
 * member and its functions take that member, never the daemon: the core parts (jobs,
 * clients, security, the config), the runner (run/), the net layer (net/: server,
 * sessions, watch, metrics).  They report upward through hooks that daemon.c installs.
 * What is the daemon's own: the signals, the tick, systemd, the exit status.
 */
#ifndef JD_DAEMON_H
#define JD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "daemon/core/clients.h"
#include "daemon/core/clock.h"
#include "daemon/core/config.h"
#include "daemon/core/jobs.h"
#include "daemon/core/security.h"
#include "daemon/net/net.h"
#include "daemon/run/modules.h"
#include "daemon/run/runner.h"
#include "daemon/persist.h"

/* Exit statuses of jschedd (also in daemon/README.md). */
enum {
	JD_EXIT_OK = 0,		/* graceful shutdown, every job finished */
	JD_EXIT_FAILURE = 1,	/* could not start (config, socket, modules) */
	JD_EXIT_USAGE = 2,	/* bad command line */
	JD_EXIT_IMMEDIATE = 3,	/* immediate shutdown: queued and running jobs cancelled */
};

struct jd_daemon {
	uv_loop_t loop;
	struct jd_config cfg;	/* in force */
	char config_path[4096];	/* -c PATH, "" for none */
	uint64_t start_ns, start_ms;
	char instance[64];	/* PROTOCOL.md "instance" */
	char remote_tag[40];	/* names this jschedd's jobs in Slurm (jd_persist_remote_tag) */
	uid_t self_uid;

	struct jd_jobs jobs;
	struct jd_clients clients;
	struct jd_modules modules;
	struct jd_runner runner;
	struct jd_security sec;	/* rules in force, denial counters (security.h) */
	struct jd_net net;	/* server, sessions, watch, metrics (net/net.h) */
	struct jd_persist persist;	/* the journal (persist.h) */

	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick;	/* 1 s: retention by age, throughput ring, deadline re-arm */
	uint64_t watchdog_ms;	/* systemd watchdog ping interval, 0 if none */
	char service_status[512];	/* the last STATUS= sent (service.c) */

	struct jd_jobs_hooks hooks;	/* what the job table and clients report to (daemon.c) */
	bool deadline_dirty;	/* a job with a deadline was queued since the last settle */
	uint64_t trimmed_at;	/* jobs.forgotten at the last drained give-back */
	uint64_t trim_seen;	/* jobs.releases at the last give-back */
	uint64_t trim_next_ns;	/* no give-back from the tick before then */

	int exit_status;
	bool eager;		/* shutting down: every job end wakes the loop (jd_runner_eager) */
};

/* jd_daemon_init: set up the core parts (job table, clients, security) and install the
 * hooks through which they report (daemon.c).  After the config is loaded and self_uid
 * set.  Returns 0 or JSCHED_ENOMEM. */
int jd_daemon_init(struct jd_daemon *d);

/* jd_daemon_start_runner: start the fair layer, the pool and the process machinery, and
 * hand the fair instance to the job table and the clients.  Returns 0 or a negative code
 * with the reason in err. */
int jd_daemon_start_runner(struct jd_daemon *d, char *err, size_t errlen);

/* jd_daemon_shutdown: begin a shutdown (graceful or immediate; an immediate one during a
 * graceful one escalates).  Every connection gets the shutdown event.  Loop thread. */
void jd_daemon_shutdown(struct jd_daemon *d, bool immediate);

/* jd_daemon_reload: re-read the config file and apply what can change live.  Returns 0
 * (applied / restart_needed filled with new references to arrays of key names, if not
 * NULL) or a negative code with the reason in err (the old config stays). */
int jd_daemon_reload(struct jd_daemon *d, json_t **applied, json_t **restart_needed, char *err,
		     size_t errlen);

/* jd_daemon_give_back: hand the heap's free pages back to the kernel (glibc's malloc_trim:
 * the heap's free top, and whole free pages inside it madvised), after shrinking the job
 * table's indexes to the jobs left (jd_jobs_shrink), at the two moments the job table's
 * memory comes free.  Freed memory otherwise stays in the process: a 1 MiB
 * args array is a tree of 20 MiB, and 1,000,000 queued noops left 550 MiB resident after
 * they had ended and been forgotten.
 *   - drained false, from the 1 s tick: if the table has released memory since the last
 *     give-back (args dropped at a job's end, jobs forgotten: jobs.releases; or the run
 *     parts' slab holds more than one empty page, core/slab.h), paced by
 *     what a trim costs: after one that took T, none from the tick for 100 T, so it
 *     takes at most 1% of the loop thread;
 *   - drained true, after each settle: once 65,536 jobs were forgotten since the last
 *     drained give-back and nothing is ready to run (a flood has drained), or 8,192 and
 *     no job is left that is not final (the end of one: in one run of eight of
 *     bench_e2e's drained million, the give-back had come before the end, at a moment
 *     with nothing ready, and with fewer than 65,536 forgotten after it none came
 *     again: 17.1 MiB stayed where the others kept 11.7-11.8), at once,
 *     whatever the pace: the tick's trims during the flood (its memory in use again at
 *     once) pace the next one out for seconds, when the flood's memory is free now.  Not
 *     while jobs are ready: a trim of a large heap takes milliseconds of the loop.
 * Loop thread. */
void jd_daemon_give_back(struct jd_daemon *d, bool drained);

/* jd_daemon_maybe_exit: in a shutdown, stop the loop once no job is left.  Called after
 * each settle.  Loop thread. */
void jd_daemon_maybe_exit(struct jd_daemon *d);


#endif /* JD_DAEMON_H */
