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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"
#include "daemon/service.h"
#include "daemon/net/session.h"

/* The list op's state mask uses the codec's numbering; the job table's is the same. */
_Static_assert((int)JD_WAITING == (int)JP_STATE_WAITING && (int)JD_DROPPED == (int)JP_STATE_DROPPED &&
		       (int)JD_RUNNING == (int)JP_STATE_RUNNING && JD_NSTATES == JP_NSTATES,
	       "job states must be numbered as the codec's");

bool jd_is_admin(const struct jd_daemon *d, uid_t uid)
{
	if (uid == 0 || uid == d->self_uid)
		return true;
	for (size_t i = 0; i < d->cfg.n_admins; i++)
		if (d->cfg.admins[i] == uid)
			return true;
	return false;
}

static void deadline_cb(uv_timer_t *t)
{
	struct jd_daemon *d = t->data;

	jd_fair_expire(d->runner.fair);
	jd_jobs_settle(d);
	jd_daemon_arm_deadline(d);
}

void jd_daemon_arm_deadline(struct jd_daemon *d)
{
	uint64_t next = jd_fair_next_deadline(d->runner.fair), now = jd_now_ns();

	if (next == UINT64_MAX) {
		uv_timer_stop(&d->deadline);
		return;
	}
	/* Round up: firing a little late expires the job; firing early would re-arm. */
	uv_timer_start(&d->deadline, deadline_cb, next > now ? (next - now + 999999) / 1000000 : 0,
		       0);
}

void jd_daemon_maybe_exit(struct jd_daemon *d)
{
	if (d->state == JD_SERVING || d->jobs.n_live > 0)
		return;
	uv_stop(&d->loop);
}

static void cancel_everything(struct jd_daemon *d)
{
	struct jd_jobs *t = &d->jobs;
	struct jd_job **v = malloc((t->count ? t->count : 1) * sizeof(*v));
	size_t n = 0;

	/* Collect first: cancelling changes the table's lists (never the hash, but the
	 * settle list), and keeps this loop simple to reason about.  Jobs that have not
	 * started go first: a running job asked to stop frees its worker at once, and that
	 * worker would otherwise start a queued job not yet cancelled (a noop then
	 * "succeeded" during an immediate shutdown, 4 runs in 20 of the lifecycle test under
	 * ASan). */
	if (!v)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (size_t b = 0; b < t->n_buckets; b++)
			for (struct jd_job *j = t->buckets[b]; j; j = j->hnext)
				if (!jd_state_final(j->state) && (j->state == JD_RUNNING) == (pass == 1))
					v[n++] = j;
	for (size_t i = 0; i < n; i++)
		jd_job_cancel(d, v[i], "shutdown");
	free(v);
}

void jd_daemon_shutdown(struct jd_daemon *d, bool immediate)
{
	if (d->state == JD_STOPPING || (d->state == JD_DRAINING && !immediate))
		return;
	jd_log(JD_LOG_INFO, "%s shutdown: %llu jobs not final",
	       immediate ? "immediate" : "graceful", (unsigned long long)d->jobs.n_live);
	d->state = immediate ? JD_STOPPING : JD_DRAINING;
	d->exit_status = immediate ? JD_EXIT_IMMEDIATE : JD_EXIT_OK;
	jd_service_stopping(d); /* STOPPING=1 to systemd (service.c) */
	jd_server_stop_accepting(d);
	jd_session_broadcast_shutdown(d, immediate ? "immediate" : "graceful");
	if (immediate)
		cancel_everything(d);
	jd_jobs_settle(d);
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
	LIVE(a->retain_jobs != b->retain_jobs, "retention.jobs");
	LIVE(a->retain_seconds != b->retain_seconds, "retention.seconds");
	LIVE(memcmp(&a->exec, &b->exec, sizeof(a->exec)) != 0, "exec");
	LIVE(a->sec.n_grants != b->sec.n_grants, "client_names");
#undef LIVE
	return arr;
}

int jd_daemon_reload(struct jd_daemon *d, json_t **applied, json_t **restart_needed, char *err,
		     size_t errlen)
{
	struct jd_config neu;
	char fixed[512];
	json_t *restart;
	int rc;

	d->reloads++;
	if (d->config_path[0] && access(d->config_path, R_OK) < 0) {
		snprintf(err, errlen, "cannot read %s", d->config_path);
		d->reload_failures++;
		return JSCHED_EIO;
	}
	rc = jd_config_load(&neu, d->config_path, err, errlen);
	if (rc < 0) {
		d->reload_failures++;
		return rc;
	}
	jd_config_diff_static(&d->cfg, &neu, fixed, sizeof(fixed));
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
	memcpy(neu.modules, d->cfg.modules, sizeof(neu.modules));
	neu.n_modules = d->cfg.n_modules;
	jd_config_free(&d->cfg);
	d->cfg = neu;
	jd_clients_reconfigure(d);
	jd_runner_apply_config(d);
	jd_jobs_trim(d);
	jd_log(JD_LOG_INFO, "configuration reloaded from %s",
	       d->config_path[0] ? d->config_path : "(defaults)");
	return 0;
}
