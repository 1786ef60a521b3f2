/* daemon/net/net.h: struct jd_net, what the net layer works with.
 *
 * The server, the sessions and their operations, the watch streams and the metrics are
 * the net layer: everything a client's socket reaches.  They keep their own state here
 * (the server, the watch streams, the latency histograms and throughput ring the metrics
 * report, the Prometheus exports) and borrow the parts below them (the job table, the
 * clients, the config in force, security, the handler table, the runner).  What only the
 * daemon above can do (reload, shut down) is reached through hooks it installs, as the
 * job table reports through its own (core/jobs.h).  The daemon (daemon.h) embeds one
 * struct jd_net and sets it up before serving.  Loop thread only.
 */
#ifndef JD_NET_H
#define JD_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/core/clients.h"
#include "daemon/core/clock.h"
#include "daemon/core/config.h"
#include "daemon/core/hist.h"
#include "daemon/core/jobs.h"
#include "daemon/core/security.h"
#include "daemon/net/server.h"
#include "daemon/net/follow.h"
#include "daemon/net/watch.h"
#include "daemon/run/modules.h"
#include "daemon/run/runner.h"

/* The lifecycle as the sessions see it (the daemon moves it, daemon.c). */
enum jd_run_state {
	JD_SERVING,	/* serving */
	JD_DRAINING,	/* graceful shutdown: no new jobs, finishing the rest */
	JD_STOPPING,	/* immediate shutdown: cancelling everything */
};

/* What the admin operations ask of the daemon. */
struct jd_net_hooks {
	void *ctx;
	/* reload: as jd_daemon_reload (daemon.h). */
	int (*reload)(void *ctx, json_t **applied, json_t **restart_needed, char *err,
		      size_t errlen);
	/* shutdown: begin a graceful or an immediate shutdown. */
	void (*shutdown)(void *ctx, bool immediate);
	/* journal_hold: the journal position a frame sent to a client now must wait for
	 * (every record appended so far), or 0 when it may go at once: nothing a client
	 * hears is ahead of the journal (daemon/persist.h).  NULL: no journal. */
	uint64_t (*journal_hold)(void *ctx);
	/* journal_hold_upto: as journal_hold for a frame that tells only of records up to
	 * seq: seq while it is not durable (the journal is asked for it), else 0. */
	uint64_t (*journal_hold_upto)(void *ctx, uint64_t seq);
	/* journal_refuse: 0, or the code (journal_unavailable) that new jobs are refused
	 * with because they cannot be made durable now, with the reason in why. */
	int (*journal_refuse)(void *ctx, char *why, size_t len);
	/* journal_metrics: the metrics document's "journal" member (new reference). */
	json_t *(*journal_metrics)(void *ctx);
};

struct jd_prom_http;

struct jd_net {
	/* borrowed, set by the daemon before serving */
	uv_loop_t *loop;
	const struct jd_config *cfg;	/* in force (replaced in place on reload) */
	struct jd_jobs *jobs;
	struct jd_clients *clients;
	struct jd_security *sec;
	const struct jd_modules *modules;
	struct jd_runner *runner;
	struct jd_net_hooks hooks;
	const char *instance;		/* PROTOCOL.md "instance" */
	const char *config_path;	/* -c PATH, "" for none */
	uint64_t start_ns;

	enum jd_run_state state;	/* the daemon's lifecycle (daemon.c moves it) */
	bool journal_specs;		/* a submit hands its specs to the journal (job->spec
					 * during JD_CHANGE_SUBMITTED) */
	uint64_t reloads, reload_failures;	/* SIGHUP and reload requests (daemon.c) */

	struct jd_server srv;
	struct jd_watch watch;
	struct jd_follow_stats follow;	/* output followers (follow.h) */

	/* latency histograms of every job (per client ones are in struct jd_client) */
	struct jd_latency lat;

	/* the Prometheus exports (metrics.listen, metrics.textfile): metrics.c */
	struct jd_prom_http *prom_http;
	uv_timer_t prom_file;
	bool prom_file_on;
	char prom_file_err[256];	/* the last textfile failure logged ("" = none) */

	/* throughput: jobs finished per second, ring of the last 64 seconds */
	uint64_t tp_sec[64];
	uint64_t tp_last_sec;
};

#endif /* JD_NET_H */
