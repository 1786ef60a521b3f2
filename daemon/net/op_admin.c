/* daemon/net/op_admin.c: the admin operations: reload, set_client, shutdown.  The
 * dispatcher (session.c) has checked that the caller's uid is an admin.
 */
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/core/log.h"
#include "daemon/net/ops.h"
#include "daemon/net/session.h"

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
	struct jd_client *cl = jd_client_find(d->clients, name);
	const char *ov = jp_req_str(r, "overflow", NULL);
	struct jd_client_conf conf;
	bool in_config = false;
	int rc;

	for (size_t i = 0; i < d->cfg->n_clients; i++)
		in_config |= strcmp(d->cfg->clients[i].name, name) == 0;
	if (!cl && !in_config) {
		jd__reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client",
			        "no client '%s' (not in the config, never connected)", name);
		return;
	}
	if (!cl && !(cl = jd_client_get(d->clients, name))) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	conf = cl->conf;
	conf.weight = (uint32_t)jp_req_int(r, "weight", conf.weight);
	conf.max_queued = (uint32_t)jp_req_int(r, "max_queued", conf.max_queued);
	if (ov)
		for (unsigned o = 0; o < 4; o++)
			if (strcmp(ov, jd_overflow_name((enum jd_overflow)o)) == 0)
				conf.overflow = (enum jd_overflow)o;
	if ((rc = jd_client_set(d->clients, cl, &conf)) < 0) {
		jd__reply_error(c, r->id, rc, NULL, "cannot apply the client settings");
		return;
	}
	jd_reply_ok(c, r->id,
		    json_pack("{s:{s:s, s:I, s:I, s:s}}", "client", "name", cl->name, "weight",
			      (json_int_t)cl->conf.weight, "max_queued",
			      (json_int_t)cl->conf.max_queued, "overflow",
			      jd_overflow_name(cl->conf.overflow)));
}

void jd__op_shutdown(struct jd_conn *c, const struct jp_request *r)
{
	bool immediate = strcmp(jp_req_str(r, "mode", "graceful"), "immediate") == 0;

	jd_reply_ok(c, r->id, NULL);
	jd_log(JD_LOG_INFO, "shutdown (%s) asked by uid %u pid %d",
	       immediate ? "immediate" : "graceful", (unsigned)c->uid, (int)c->pid);
	c->d->hooks.shutdown(c->d->hooks.ctx, immediate);
}
