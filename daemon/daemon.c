/* daemon/daemon.c: the daemon's lifecycle: start, signals, reload, shutdown, exit.
 *
 * Shutdown is a state, not an event.  Graceful (SIGTERM, `shutdown`): stop accepting
 * connections and jobs, let everything queued and running finish, then exit 0.
 * Immediate (`shutdown` with mode immediate, SIGINT, or a second SIGTERM during a
 * graceful one): also cancel every job that is not final (queued ones end at once,
 * running ones are asked to stop and end when they do), then exit 3.  Either way the
 * daemon exits only once every accepted job has reached its final state and its waiters
 * have been answered: jd_daemon_maybe_exit runs after every settle and stops the loop
 * when nothing is left.  main.c then flushes the connections and frees everything.
 */
#include "daemon/daemon.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"
#include "daemon/net/metrics.h"
#include "daemon/net/session.h"
#include "daemon/service.h"

/* The list op's state mask uses the codec's numbering; the job table's is the same. */
_Static_assert((int)JD_WAITING == (int)JP_STATE_WAITING && (int)JD_DROPPED == (int)JP_STATE_DROPPED &&
		       (int)JD_RUNNING == (int)JP_STATE_RUNNING && JD_NSTATES == JP_NSTATES,
	       "job states must be numbered as the codec's");

/* on_change: the job table's change hook: every change a client could be told of. */
static void on_change(void *ctx, const struct jd_change *ch)
{
	struct jd_daemon *d = ctx;

	/* First: the journal's record, in the order of changes.  With journal.sync "off"
	 * there is none, and the call is skipped: five changes a job reach this hook. */
	if (d->persist.j)
		jd_persist_change(d, ch);
	switch (ch->kind) {
	case JD_CHANGE_QUEUED:
		/* A worker should feed; the deadline timer is re-armed once the settle is
		 * done (the admission that follows this report sets the deadline's place). */
		jd_runner_kick(&d->runner);
		if (ch->job->deadline_ns)
			d->deadline_dirty = true;
		/* fall through */
	case JD_CHANGE_SUBMITTED:
	case JD_CHANGE_RUNNING:
	case JD_CHANGE_SCHEDULED:
	case JD_CHANGE_RETRYING:
	case JD_CHANGE_RETRIED:
		jd_watch_job(&d->net, ch->job);
		break;
	case JD_CHANGE_FORGOTTEN:
		jd_follow_forgotten(&d->net, ch->job);
		break;
	case JD_CHANGE_CLIENT_FORGOTTEN:
		jd_exec_client_forget(&d->runner.exec, ch->client);
		break;
	case JD_CHANGE_FINAL:	/* told when settled (on_settled) */
	case JD_CHANGE_CLIENT:
	case JD_CHANGE_NEXT_ID:
	case JD_CHANGE_PROCESS:
	case JD_CHANGE_ARRAY_STOP:
	case JD_CHANGE_REMOTE:
	case JD_CHANGE_HOOK:
		break;
	}
}

/* on_settled: the settle fan-out of one final job: its latencies, its watch event, the
 * waits on it. */
static void on_settled(void *ctx, struct jd_job *j)
{
	struct jd_daemon *d = ctx;

	jd_metrics_job_ended(&d->net, j);
	jd_watch_job(&d->net, j);
	jd_session_job_final(&d->net, j);
	jd_follow_final(&d->net, j);
}

/* on_output: the process machinery's hook: a command of job j wrote: its followers. */
static void on_output(void *ctx, struct jd_job *j)
{
	struct jd_daemon *d = ctx;

	jd_follow_output(&d->net, j);
}

/* jd_daemon_give_back (daemon.h): one malloc_trim, for the two moments memory comes free. */
#define TRIM_AFTER 65536u
#define TRIM_EMPTY 8192u
void jd_daemon_give_back(struct jd_daemon *d, bool drained)
{
#ifdef __GLIBC__
	uint64_t t0;

	if (drained) {
		if (d->jobs.forgotten - d->trimmed_at < (d->jobs.n_live ? TRIM_AFTER : TRIM_EMPTY) ||
		    jd_fair_ready(d->runner.fair) != 0)
			return;
		d->trimmed_at = d->jobs.forgotten;
		t0 = jd_now_ns();
	} else {
		/* ended jobs' run parts leave empty pages even when nothing was forgotten */
		if (d->jobs.releases == d->trim_seen && d->jobs.runs.n_empty <= 1)
			return;
		t0 = jd_now_ns();
		if (t0 < d->trim_next_ns)
			return;
	}
	d->trim_seen = d->jobs.releases;
	jd_jobs_shrink(&d->jobs);
	malloc_trim(0);
	d->trim_next_ns = t0 + 100 * (jd_now_ns() - t0);
#else
	(void)drained;
	jd_jobs_shrink(&d->jobs);
#endif
}

/* on_settle_done: after a settle: wake the workers for what was queued, re-arm the
 * deadline timer, give freed memory back after a drain, and in a shutdown stop once
 * nothing is left. */
static void on_settle_done(void *ctx)
{
	struct jd_daemon *d = ctx;

	jd_runner_flush_kicks(&d->runner);
	if (d->deadline_dirty) {
		d->deadline_dirty = false;
		jd_runner_arm_deadline(&d->runner);
	}
	jd_daemon_give_back(d, true);
	jd_daemon_maybe_exit(d);
}

/* on_stop: a running job was asked to stop: its cancel token, its commands. */
static void on_stop(void *ctx, struct jd_job *j)
{
	struct jd_daemon *d = ctx;

	jd_runner_cancel(&d->runner, j);
}

/* on_want_end: the job table's hook: something (a dependent) waits for j's end. */
static void on_want_end(void *ctx, struct jd_job *j)
{
	struct jd_daemon *d = ctx;

	jd_runner_want_end(&d->runner, j);
}

/* on_unblocked: the runner's hook: a blocked client has room: retry its held submits. */
static void on_unblocked(void *ctx, struct jd_client *c)
{
	struct jd_daemon *d = ctx;

	jd_session_client_unblocked(&d->net, c);
}

/* net_reload / net_shutdown: the net layer's hooks for the admin operations. */
static int net_reload(void *ctx, json_t **applied, json_t **restart_needed, char *err,
		      size_t errlen)
{
	return jd_daemon_reload(ctx, applied, restart_needed, err, errlen);
}

static void net_shutdown(void *ctx, bool immediate)
{
	jd_daemon_shutdown(ctx, immediate);
}

static struct jd_job *on_make_element(void *ctx, struct jd_job *parent, uint64_t pos)
{
	struct jd_daemon *d = ctx;

	return jd_session_make_element(&d->net, parent, pos);
}

int jd_daemon_start_runner(struct jd_daemon *d, char *err, size_t errlen)
{
	struct jd_runner_env env = {
		.loop = &d->loop,
		.jobs = &d->jobs,
		.cfg = &d->cfg,
		.sec = &d->sec,
		.remote_tag = d->remote_tag,
		.unblocked = on_unblocked,
		.ctx = d,
		.socket_path = d->net.srv.path, /* bound by now: names the cgroup subtree */
	};
	int rc;

	jd_persist_remote_tag(d, d->remote_tag, sizeof(d->remote_tag));
	rc = jd_runner_start(&d->runner, &env, err, errlen);
	if (rc < 0)
		return rc;
	/* The fair instance the runner created is where the job table admits and the
	 * clients register. */
	d->jobs.fair = d->clients.fair = d->runner.fair;
	d->runner.exec.output_cb = on_output;
	d->runner.exec.output_ctx = d;
	return 0;
}

int jd_daemon_init(struct jd_daemon *d)
{
	d->hooks = (struct jd_jobs_hooks){
		.ctx = d,
		.change = on_change,
		.settled = on_settled,
		.settle_done = on_settle_done,
		.stop = on_stop,
		.want_end = on_want_end,
		.make_element = on_make_element,
	};
	jd_security_init(&d->sec, &d->cfg, d->self_uid);
	jd_clients_init(&d->clients, &d->cfg, &d->hooks);
	if (jd_jobs_init(&d->jobs, &d->loop, &d->hooks) < 0)
		return JSCHED_ENOMEM;
	jd_jobs_set_retention(&d->jobs, &d->cfg);
	d->net.loop = &d->loop;
	d->net.cfg = &d->cfg;
	d->net.jobs = &d->jobs;
	d->net.clients = &d->clients;
	d->net.sec = &d->sec;
	d->net.modules = &d->modules;
	d->net.runner = &d->runner;
	d->net.hooks = (struct jd_net_hooks){.ctx = d, .reload = net_reload, .shutdown = net_shutdown};
	d->net.instance = d->instance;
	d->net.config_path = d->config_path;
	d->net.start_ns = d->start_ns;
	return 0;
}

void jd_daemon_maybe_exit(struct jd_daemon *d)
{
	/* Scheduled and retrying jobs do not hold up an exit: with a journal they are
	 * recovered at the next start (without one a shutdown has cancelled them). */
	if (d->net.state == JD_SERVING ||
	    d->jobs.n_live > d->jobs.by_state[JD_SCHEDULED] + d->jobs.by_state[JD_RETRYING])
		return;
	uv_stop(&d->loop);
}

void jd_daemon_shutdown(struct jd_daemon *d, bool immediate)
{
	if (d->net.state == JD_STOPPING || (d->net.state == JD_DRAINING && !immediate))
		return;
	jd_log(JD_LOG_INFO, "%s shutdown: %llu jobs not final",
	       immediate ? "immediate" : "graceful", (unsigned long long)d->jobs.n_live);
	d->net.state = immediate ? JD_STOPPING : JD_DRAINING;
	/* The exit waits for every job's end: each must wake the loop from now on. */
	if (!d->eager)
		jd_runner_eager(&d->runner, 1);
	d->eager = true;
	d->exit_status = immediate ? JD_EXIT_IMMEDIATE : JD_EXIT_OK;
	jd_service_stopping(d); /* STOPPING=1 to systemd (service.c) */
	/* Graceful: the socket stays, so status, wait, list and metrics keep working until the
	 * last job has ended (op_submit refuses new jobs); immediate: no one new. */
	if (immediate)
		jd_server_stop_accepting(&d->net);
	jd_session_broadcast_shutdown(&d->net, immediate ? "immediate" : "graceful");
	if (immediate)
		jd_jobs_cancel_all(&d->jobs);
	else if (d->cfg.journal_sync == JD_JOURNAL_OFF)
		jd_jobs_cancel_scheduled(&d->jobs);
	jd_jobs_settle(&d->jobs);
	jd_daemon_maybe_exit(d);
}

/* live_diff: the live keys that differ between two configs, as a JSON array. */
static json_t *live_diff(const struct jd_config *a, const struct jd_config *b)
{
	json_t *arr = json_array();
	bool clients = a->n_clients != b->n_clients ||
		       memcmp(&a->default_client, &b->default_client, sizeof(a->default_client));

	for (size_t i = 0; !clients && i < a->n_clients; i++)
		clients = memcmp(&a->clients[i], &b->clients[i], sizeof(a->clients[i])) != 0;
#define LIVE(cond, key)                                                                  \
	if (cond)                                                                        \
	json_array_append_new(arr, json_string(key))
	LIVE(a->idle_spin != b->idle_spin, "idle_policy");
	LIVE(a->policy != b->policy, "fairness.policy");
	LIVE(a->quantum != b->quantum, "fairness.quantum");
	LIVE(a->fair_drf != b->fair_drf, "fairness.drf");
	LIVE(a->backfill_max != b->backfill_max, "fairness.backfill_max");
	LIVE(clients, "clients");
	LIVE(a->n_admins != b->n_admins || memcmp(a->admins, b->admins, sizeof(a->admins)), "admins");
	LIVE(a->frame_bytes != b->frame_bytes, "limits.frame_bytes");
	LIVE(a->handshake_ms != b->handshake_ms, "limits.handshake_ms");
	LIVE(a->output_buffer_bytes != b->output_buffer_bytes, "limits.output_buffer_bytes");
	LIVE(a->max_connections != b->max_connections, "limits.connections");
	LIVE(a->max_connections_per_uid != b->max_connections_per_uid,
	     "limits.connections_per_uid");
	LIVE(a->max_queued_total != b->max_queued_total, "limits.queued_jobs");
	LIVE(a->max_batch != b->max_batch, "limits.batch_jobs");
	LIVE(a->max_array != b->max_array, "limits.array_elements");
	LIVE(a->max_clients != b->max_clients, "limits.clients");
	LIVE(a->max_waits_per_conn != b->max_waits_per_conn, "limits.waits_per_connection");
	LIVE(a->max_wait_ids_per_uid != b->max_wait_ids_per_uid, "limits.wait_ids_per_uid");
	LIVE(a->frame_ms != b->frame_ms, "limits.frame_ms");
	LIVE(a->partial_frame_bytes != b->partial_frame_bytes, "limits.partial_frame_bytes");
	LIVE(a->retain_jobs != b->retain_jobs, "retention.jobs");
	LIVE(a->retain_seconds != b->retain_seconds, "retention.seconds");
	LIVE(a->retain_bytes != b->retain_bytes, "retention.bytes");
	LIVE(a->retain_min_seconds != b->retain_min_seconds, "retention.min_seconds");
	LIVE(memcmp(&a->exec, &b->exec, sizeof(a->exec)) != 0, "exec");
	LIVE(a->n_resources == b->n_resources &&
		     memcmp(a->resources, b->resources, sizeof(a->resources)) != 0,
	     "resources");
	LIVE(a->sec.n_grants != b->sec.n_grants, "client_names");
#undef LIVE
	return arr;
}

int jd_daemon_reload(struct jd_daemon *d, json_t **applied, json_t **restart_needed, char *err,
		     size_t errlen)
{
	struct jd_config neu;
	char fixed[512], fixed_keys[512];
	json_t *restart;
	int rc;

	d->net.reloads++;
	if (d->config_path[0] && access(d->config_path, R_OK) < 0) {
		snprintf(err, errlen, "cannot read %s", d->config_path);
		d->net.reload_failures++;
		return JSCHED_EIO;
	}
	rc = jd_config_load(&neu, d->config_path, err, errlen);
	if (rc < 0) {
		d->net.reload_failures++;
		return rc;
	}
	jd_config_diff_static(&d->cfg, &neu, fixed, sizeof(fixed));
	snprintf(fixed_keys, sizeof(fixed_keys), "%s", fixed); /* strtok cuts fixed */
	restart = json_array();
	for (char *k = strtok(fixed, ","); k; k = strtok(NULL, ","))
		json_array_append_new(restart, json_string(k));
	if (applied)
		*applied = live_diff(&d->cfg, &neu);
	if (restart_needed)
		*restart_needed = restart;
	else
		json_decref(restart);
	/* What cannot change live keeps its running value. */
	memcpy(neu.socket, d->cfg.socket, sizeof(neu.socket));
	neu.socket_mode = d->cfg.socket_mode;
	memcpy(neu.socket_group, d->cfg.socket_group, sizeof(neu.socket_group));
	neu.workers = d->cfg.workers;
	neu.fibers = d->cfg.fibers;
	neu.fair_window_ms = d->cfg.fair_window_ms;
	neu.retain_events = d->cfg.retain_events;
	memcpy(neu.journal_dir, d->cfg.journal_dir, sizeof(neu.journal_dir));
	neu.journal_sync = d->cfg.journal_sync;
	neu.journal_batch_ms = d->cfg.journal_batch_ms;
	memcpy(neu.modules, d->cfg.modules, sizeof(neu.modules));
	neu.n_modules = d->cfg.n_modules;
	if (strstr(fixed_keys, "resources")) { /* names added or removed: keep the running set */
		memcpy(neu.resources, d->cfg.resources, sizeof(neu.resources));
		neu.n_resources = d->cfg.n_resources;
	}
	jd_config_free(&d->cfg);
	d->cfg = neu;
	jd_clients_reconfigure(&d->clients);
	jd_runner_apply_config(&d->runner);
	jd_jobs_set_retention(&d->jobs, &d->cfg);
	jd_jobs_trim(&d->jobs);
	jd_log(JD_LOG_INFO, "configuration reloaded from %s",
	       d->config_path[0] ? d->config_path : "(defaults)");
	return 0;
}
