/* daemon/net/op_admin.c: the admin operations: reload, set_client, shutdown, and
 * test_clock (only in a daemon started with --test-clock).  The dispatcher (session.c)
 * has checked that the caller's uid is an admin.
 */
#include <limits.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/core/log.h"
#include "daemon/net/ops.h"
#include "daemon/net/session.h"

_Static_assert(JP_WEIGHT_MAX == JD_CLIENT_WEIGHT_MAX, "set_client and the config take the same weights");

void jd__op_reload(struct jd_conn *c, const struct jp_request *r)
{
	json_t *applied = NULL, *restart = NULL;
	char err[512];
	int rc = c->d->hooks.reload(c->d->hooks.ctx, &applied, &restart, err, sizeof(err));

	if (rc < 0) {
		/* The config reader's messages start with the dotted key. */
		char field[128] = "";
		const char *colon = strstr(err, ": ");

		if (rc == JSCHED_EINVAL && colon && (size_t)(colon - err) < sizeof(field) &&
		    !strchr(err, '/'))
			memcpy(field, err, (size_t)(colon - err));
		jd__reply_error(c, r->id, rc, field[0] ? field : NULL, "%s", err);
		return;
	}
	jd_reply_ok(c, r->id, json_pack("{s:o, s:o}", "applied", applied, "restart_needed", restart));
}

void jd__op_set_client(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_net *d = c->d;
	const char *name = jp_req_str(r, "client", "");
	const char *ov = jp_req_str(r, "overflow", NULL);
	const char *be = jp_req_str(r, "backend", NULL);
	struct jd_client_conf conf;
	char why[PATH_MAX + 400];
	const json_t *cpu;
	int rc;

	/* The settings are the name's, kept whether or not it is in use (core/clients.h):
	 * a name not in use now is not made, and has them when it connects. */
	if (!jd_client_pin_room(d->clients, name)) {
		jd__reply_error(c, r->id, JSCHED_ELIMIT_EXCEEDED, "client",
				"the daemon keeps settings of their own for %u client names, its "
				"limit (limits.clients): set one back to its config entry's to make "
				"room", d->cfg->max_clients);
		return;
	}
	conf = *jd_client_conf_of(d->clients, name);
	conf.weight = (uint32_t)jp_req_int(r, "weight", conf.weight);
	conf.max_queued = (uint32_t)jp_req_int(r, "max_queued", conf.max_queued);
	conf.max_running = (uint32_t)jp_req_int(r, "max_running", conf.max_running);
	conf.max_processes = (uint32_t)jp_req_int(r, "max_processes", conf.max_processes);
	if (ov)
		for (unsigned o = 0; o < 4; o++)
			if (strcmp(ov, jd_overflow_name((enum jd_overflow)o)) == 0)
				conf.overflow = (enum jd_overflow)o;
	/* The limits of the client's control group: 0 removes one; one that cannot be
	 * applied here is refused, never ignored. */
	conf.memory_max = (uint64_t)jp_req_int(r, "memory_max", (int64_t)conf.memory_max);
	conf.pids_max = (uint64_t)jp_req_int(r, "pids_max", (int64_t)conf.pids_max);
	if ((cpu = json_object_get(r->msg, "cpu_max")))
		conf.cpu_milli = (uint32_t)(json_number_value(cpu) * 1000 + 0.5);
	if (conf.memory_max && conf.memory_max < (1u << 20)) {
		jd__reply_error(c, r->id, JSCHED_EINVAL, "memory_max",
			       "memory_max must be at least 1 MiB (1048576), or 0 for none");
		return;
	}
	if (jd_exec_client_limits_ok(&d->runner->exec, &conf, why, sizeof(why)) < 0) {
		jd__reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, NULL, "%s", why);
		return;
	}
	if (be)
		conf.backend = (uint8_t)jd_backend_parse(be);
	if ((rc = jd_client_set(d->clients, name, &conf)) < 0) {
		jd__reply_error(c, r->id, rc, NULL, "cannot apply the client settings");
		return;
	}
	jd_runner_wake(d->runner);	/* a raised limit: its jobs may start now */
	jd_reply_ok(c, r->id,
		    json_pack("{s:{s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:f, s:s}}", "client", "name",
			      name, "weight", (json_int_t)conf.weight, "max_queued",
			      (json_int_t)conf.max_queued, "overflow", jd_overflow_name(conf.overflow),
			      "max_running", (json_int_t)conf.max_running, "max_processes",
			      (json_int_t)conf.max_processes, "memory_max", (json_int_t)conf.memory_max,
			      "pids_max", (json_int_t)conf.pids_max, "cpu_max",
			      conf.cpu_milli / 1000.0, "backend",
			      conf.backend ? jd_backend_name(conf.backend)
					   : jd_backend_name(d->cfg->backends.default_backend)));
}

void jd__op_shutdown(struct jd_conn *c, const struct jp_request *r)
{
	bool immediate = strcmp(jp_req_str(r, "mode", "graceful"), "immediate") == 0;

	jd_reply_ok(c, r->id, NULL);
	jd_log(JD_LOG_INFO, "shutdown (%s) asked by uid %u pid %d",
	       immediate ? "immediate" : "graceful", (unsigned)c->uid, (int)c->pid);
	c->d->hooks.shutdown(c->d->hooks.ctx, immediate);
}

/* jd__op_test_clock: move the test clock (core/clock.h) advance_ms forward and run the
 * timer heap and the idle clients' sweep at the new time; the reply says the time and how many jobs came due.  A
 * daemon without --test-clock refuses it (not_supported): its wall clock is the
 * system's. */
void jd__op_test_clock(struct jd_conn *c, const struct jp_request *r)
{
	int64_t adv = jp_req_int(r, "advance_ms", 0);
	uint64_t now;
	size_t due;

	if (!jd_clock_test_on()) {
		jd__reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, "op", "the test clock is off: "
				"only a jschedd started with --test-clock has one");
		return;
	}
	now = jd_clock_test_advance((uint64_t)adv);
	due = jd_jobs_run_timers(c->d->jobs);
	jd_clients_forget_idle(c->d->clients, now); /* as the tick does, at the new time */
	jd_reply_ok(c, r->id, json_pack("{s:I, s:I}", "now_ms", (json_int_t)now, "due",
					(json_int_t)due));
}
