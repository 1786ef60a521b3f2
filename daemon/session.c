/* daemon/session.c: the request dispatcher and the small operations.
 *
 * Every message goes through the same steps: the handshake gate, the codec's strict
 * check of the request (jp_request_parse: unknown members, types, limits), the admin
 * gate, then the operation.  Submit lives in submit.c and wait in wait.c; the rest is
 * here, each a short function.  Ownership is checked in one place (find_owned): a
 * client sees only its own uid's jobs unless its uid is an admin.
 */
#include "daemon/session.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/record.h"
#include "daemon/session_ops.h"
#include "jsched_version.h"

json_t *jd_error_obj(int code, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return jp_error_new(code, field, msg);
}

void jd_reply_ok(struct jd_conn *c, int64_t id, json_t *body)
{
	json_t *r = jp_reply_new(id);

	if (r && body)
		json_object_update(r, body);
	json_decref(body);
	if (r)
		jd_conn_send(c, r);
	json_decref(r);
}

void jd_reply_error_obj(struct jd_conn *c, int64_t id, json_t *err)
{
	json_t *r = jp_reply_error_new(id, err);

	if (r)
		jd_conn_send(c, r);
	json_decref(r);
}

void jd_reply_error(struct jd_conn *c, int64_t id, int code, const char *field, const char *fmt,
		    ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (code == JSCHED_EPERMISSION_DENIED)
		c->d->sec.denied++; /* every denial passes here (metrics: security.denied) */
	jd_reply_error_obj(c, id, jp_error_new(code, field, msg));
}

void jd_session_fatal(struct jd_conn *c, int code, const char *message)
{
	jd_reply_error_obj(c, JP_ID_NONE, jp_error_new(code, NULL, message));
	jd_conn_close(c, message);
}

void jd_limits_of(const struct jd_conn *c, struct jp_limits *lim)
{
	const struct jd_config *cfg = &c->d->cfg;

	jp_limits_default(lim);
	lim->frame_bytes = cfg->frame_bytes;
	lim->jobs_per_submit = cfg->max_batch;
	lim->max_queued = c->client ? c->client->conf.max_queued : cfg->default_client.max_queued;
	lim->events_retained = cfg->retain_events;
	lim->output_bytes = cfg->exec.output_bytes;
}

struct jd_job *jd_find_owned(struct jd_conn *c, int64_t req_id, int64_t id, const char *field)
{
	bool forgotten;
	struct jd_job *j = jd_job_find(c->d, (uint64_t)id, &forgotten);

	if (!j) {
		if (forgotten)
			jd_reply_error(c, req_id, JSCHED_EJOB_FORGOTTEN, field,
				       "job %lld is no longer retained", (long long)id);
		else
			jd_reply_error(c, req_id, JSCHED_ENO_SUCH_JOB, field, "no job %lld",
				       (long long)id);
		return NULL;
	}
	if (j->uid != c->uid && !jd_is_admin(c->d, c->uid)) {
		jd_reply_error(c, req_id, JSCHED_EPERMISSION_DENIED, field,
			       "job %lld belongs to another user", (long long)id);
		return NULL;
	}
	return j;
}

int jd_find_all_owned(struct jd_conn *c, const struct jp_request *r, struct jd_job ***out,
		      size_t *n, bool *single)
{
	int64_t *ids;
	struct jd_job **jobs;
	int rc = jp_req_ids(r, &ids, n, single);

	if (rc < 0) {
		jd_reply_error(c, r->id, rc, "jobs", "job or jobs required");
		return rc;
	}
	jobs = calloc(*n ? *n : 1, sizeof(*jobs));
	if (!jobs) {
		free(ids);
		jd_reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return JSCHED_ENOMEM;
	}
	for (size_t i = 0; i < *n; i++) {
		char field[32];

		if (*single)
			snprintf(field, sizeof(field), "job");
		else
			snprintf(field, sizeof(field), "jobs[%zu]", i);
		jobs[i] = jd_find_owned(c, r->id, ids[i], field);
		if (!jobs[i]) {
			free(ids);
			free(jobs);
			return JSCHED_ENO_SUCH_JOB;
		}
	}
	free(ids);
	*out = jobs;
	return 0;
}

/* default_client_name: the login name of uid, else "uid-N". */
static void default_client_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res &&
	    strlen(res->pw_name) <= JP_REF_MAX)
		snprintf(buf, len, "%s", res->pw_name);
	else
		snprintf(buf, len, "uid-%u", (unsigned)uid);
}

static void op_hello(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_daemon *d = c->d;
	int64_t version = jp_req_int(r, "version", 0);
	const char *name = jp_req_str(r, "client", NULL);
	char dflt[JP_REF_MAX + 1];
	struct jp_identity who;
	struct jp_limits lim;

	if (c->hello_done) {
		jd_reply_error(c, r->id, JSCHED_EPROTOCOL, NULL, "hello was already done");
		return;
	}
	if (version != JP_PROTOCOL_VERSION) {
		jd_reply_error_obj(c, r->id, jp_version_mismatch_new(version, JSCHED_VERSION));
		jd_conn_close(c, "version mismatch");
		return;
	}
	if (d->state != JD_SERVING) {
		jd_reply_error(c, r->id, JSCHED_ESHUTTING_DOWN, NULL, "jschedd is shutting down");
		jd_conn_close(c, "shutting down");
		return;
	}
	if (!name) {
		default_client_name(c->uid, dflt, sizeof(dflt));
		name = dflt;
	}
	/* Which uids may use which client names: the config's client_names (security.c). */
	if (!jd_security_name_allowed(d, c->uid, name)) {
		jd_reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "client",
			       "uid %u may not use the client name '%s'", (unsigned)c->uid, name);
		return;
	}
	c->client = jd_client_get(d, name);
	if (!c->client) {
		jd_reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	who = (struct jp_identity){.uid = c->uid, .gid = c->gid, .pid = c->pid,
				   .client = c->client->name, .admin = jd_is_admin(d, c->uid)};
	jd_limits_of(c, &lim);
	jd_conn_hello_done(c);
	jd_conn_set_frame_limit(c, d->cfg.frame_bytes);
	{
		json_t *rep = jp_hello_reply_new(r->id, JSCHED_VERSION, d->instance, &who, &lim);

		if (rep)
			jd_conn_send(c, rep);
		json_decref(rep);
	}
}

static void op_status(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	struct jd_records recs;
	struct jp_buf b;
	bool single;

	if (jd_find_all_owned(c, r, &jobs, &recs.n, &single) < 0)
		return;
	recs.jobs = jobs;
	recs.texts = NULL;
	jp_buf_init(&b);
	if (jd_reply_text_start(&b, r->id) ||
	    jd_json_text_raw(&b, single ? ",\"ok\":true,\"job\":" : ",\"ok\":true,\"jobs\":") ||
	    jd_records_text(&b, c->d, &recs, single) || jd_json_text_raw(&b, "}")) {
		jp_buf_free(&b);
		jd_reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else {
		jd_conn_send_frame(c, &b);
	}
	free(jobs);
}

static void op_cancel(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	size_t n;
	bool single;
	json_t *arr;

	if (jd_find_all_owned(c, r, &jobs, &n, &single) < 0)
		return;
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		bool running = jd_job_cancel(c->d, jobs[i], "cancel");
		json_t *o = json_pack("{s:I, s:s}", "job", (json_int_t)jobs[i]->id, "state",
				      jd_state_name(jobs[i]->state));

		if (running)
			json_object_set_new(o, "cancelling", json_true());
		json_array_append_new(arr, o);
	}
	free(jobs);
	jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
}

static int cmp_job_id(const void *a, const void *b)
{
	uint64_t x = (*(struct jd_job *const *)a)->id, y = (*(struct jd_job *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* collect: every job in the table for which keep() says yes, sorted by id.  *out is
 * malloc'd.  O(table). */
static size_t collect(struct jd_daemon *d, bool (*keep)(const struct jd_job *, const void *),
		      const void *arg, struct jd_job ***out)
{
	struct jd_jobs *t = &d->jobs;
	struct jd_job **v = malloc((t->count ? t->count : 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (size_t b = 0; b < t->n_buckets; b++)
		for (struct jd_job *j = t->buckets[b]; j; j = j->hnext)
			if (keep(j, arg))
				v[n++] = j;
	qsort(v, n, sizeof(*v), cmp_job_id);
	return n;
}

struct list_filter {
	unsigned states;
	const char *client;
	bool all;
	uid_t uid;
	uint64_t after;
};

static bool list_keep(const struct jd_job *j, const void *arg)
{
	const struct list_filter *f = arg;

	return j->id > f->after && (f->states & (1u << j->state)) &&
	       (f->all || j->uid == f->uid) && (!f->client || strcmp(j->client->name, f->client) == 0);
}

static void op_list(struct jd_conn *c, const struct jp_request *r)
{
	struct list_filter f = {
		.states = jp_req_states(r),
		.client = jp_req_str(r, "client", NULL),
		.all = jp_req_bool(r, "all", false),
		.uid = c->uid,
		.after = (uint64_t)jp_req_int(r, "after_job", 0),
	};
	size_t limit = (size_t)jp_req_int(r, "limit", 1000);
	struct jd_job **v;
	struct jd_records recs = {0};
	struct jp_buf b;
	size_t n;

	if (f.all && !jd_is_admin(c->d, c->uid)) {
		jd_reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "all",
			       "listing every user's jobs needs an admin uid");
		return;
	}
	/* The jp_state numbering is ours too (checked in daemon.c). */
	n = collect(c->d, list_keep, &f, &v);
	recs.n = n < limit ? n : limit;
	recs.jobs = v;
	jp_buf_init(&b);
	if (jd_reply_text_start(&b, r->id) || jd_json_text_raw(&b, ",\"ok\":true,\"jobs\":") ||
	    jd_records_text(&b, c->d, &recs, false) ||
	    jd_json_text_raw(&b, n > limit ? ",\"more\":true}" : ",\"more\":false}")) {
		jp_buf_free(&b);
		jd_reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
	} else {
		jd_conn_send_frame(c, &b);
	}
	free(v);
}

static void op_output(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job *j = jd_find_owned(c, r->id, jp_req_int(r, "job", 0), "job");

	if (!j)
		return;
	if (j->exec) {
		jd_reply_ok(c, r->id, jd_exec_output(j));
		return;
	}
	jd_reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, "job",
		       "job %llu is a call job: it has no output (its result is in its record)",
		       (unsigned long long)j->id);
}

static void op_watch(struct jd_conn *c, const struct jp_request *r)
{
	json_t *from = json_object_get(r->msg, "from_seq");

	jd_watch_start(c->d, c, r->id, from != NULL, (uint64_t)jp_req_int(r, "from_seq", 0),
		       jp_req_str(r, "instance", NULL));
}

struct drain_filter {
	const struct jd_client *client;
	bool all_uids;
	uid_t uid;
	bool running;
};

static bool drain_keep(const struct jd_job *j, const void *arg)
{
	const struct drain_filter *f = arg;

	return j->client == f->client && (f->all_uids || j->uid == f->uid) &&
	       (j->state <= JD_QUEUED || (f->running && j->state == JD_RUNNING));
}

static void op_drain(struct jd_conn *c, const struct jp_request *r)
{
	const char *name = jp_req_str(r, "client", c->client->name);
	struct drain_filter f = {.uid = c->uid, .running = jp_req_bool(r, "running", false)};
	struct jd_job **v;
	size_t n, cancelled = 0, cancelling = 0;

	f.client = jd_client_find(c->d, name);
	if (!f.client) {
		jd_reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client", "no client '%s'", name);
		return;
	}
	/* An admin drains everyone's jobs charged to the client; others only their own. */
	f.all_uids = jd_is_admin(c->d, c->uid);
	n = collect(c->d, drain_keep, &f, &v);
	for (size_t i = 0; i < n; i++) {
		if (jd_job_cancel(c->d, v[i], "cancel"))
			cancelling++;
		else if (v[i]->state == JD_CANCELLED)
			cancelled++;
	}
	free(v);
	jd_reply_ok(c, r->id, json_pack("{s:I, s:I}", "cancelled", (json_int_t)cancelled,
					"cancelling", (json_int_t)cancelling));
}

static void op_reload(struct jd_conn *c, const struct jp_request *r)
{
	json_t *applied = NULL, *restart = NULL;
	char err[512];
	int rc = jd_daemon_reload(c->d, &applied, &restart, err, sizeof(err));

	if (rc < 0) {
		/* The config reader's messages start with the dotted key. */
		char field[128] = "";
		const char *colon = strstr(err, ": ");

		if (rc == JSCHED_EINVAL && colon && (size_t)(colon - err) < sizeof(field) &&
		    !strchr(err, '/'))
			memcpy(field, err, (size_t)(colon - err));
		jd_reply_error(c, r->id, rc, field[0] ? field : NULL, "%s", err);
		return;
	}
	jd_reply_ok(c, r->id, json_pack("{s:o, s:o}", "applied", applied, "restart_needed", restart));
}

static void op_set_client(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_daemon *d = c->d;
	const char *name = jp_req_str(r, "client", "");
	struct jd_client *cl = jd_client_find(d, name);
	const char *ov = jp_req_str(r, "overflow", NULL);
	bool in_config = false;
	int rc;

	for (size_t i = 0; i < d->cfg.n_clients; i++)
		in_config |= strcmp(d->cfg.clients[i].name, name) == 0;
	if (!cl && !in_config) {
		jd_reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client",
			       "no client '%s' (not in the config, never connected)", name);
		return;
	}
	if (!cl && !(cl = jd_client_get(d, name))) {
		jd_reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	cl->conf.weight = (uint32_t)jp_req_int(r, "weight", cl->conf.weight);
	cl->conf.max_queued = (uint32_t)jp_req_int(r, "max_queued", cl->conf.max_queued);
	if (ov)
		for (unsigned o = 0; o < 4; o++)
			if (strcmp(ov, jd_overflow_name((enum jd_overflow)o)) == 0)
				cl->conf.overflow = (enum jd_overflow)o;
	cl->conf_pinned = true;
	if ((rc = jd_client_apply(d, cl)) < 0) {
		jd_reply_error(c, r->id, rc, NULL, "cannot apply the client settings");
		return;
	}
	jd_reply_ok(c, r->id,
		    json_pack("{s:{s:s, s:I, s:I, s:s}}", "client", "name", cl->name, "weight",
			      (json_int_t)cl->conf.weight, "max_queued",
			      (json_int_t)cl->conf.max_queued, "overflow",
			      jd_overflow_name(cl->conf.overflow)));
}

static void op_shutdown(struct jd_conn *c, const struct jp_request *r)
{
	bool immediate = strcmp(jp_req_str(r, "mode", "graceful"), "immediate") == 0;

	jd_reply_ok(c, r->id, NULL);
	jd_log(JD_LOG_INFO, "shutdown (%s) asked by uid %u pid %d",
	       immediate ? "immediate" : "graceful", (unsigned)c->uid, (int)c->pid);
	jd_daemon_shutdown(c->d, immediate);
}

void jd_session_message(struct jd_conn *c, json_t *msg)
{
	struct jd_daemon *d = c->d;
	struct jp_request r;
	struct jp_limits lim;
	struct jp_err err;

	jd_limits_of(c, &lim);
	if (jp_request_parse(msg, &lim, &r, &err) < 0) {
		if (!c->hello_done) {
			jd_session_fatal(c, err.code, err.message);
			return;
		}
		jd_reply_error_obj(c, r.id, jp_error_new_from(&err));
		return;
	}
	if (!c->hello_done && r.op != JP_OP_HELLO) {
		jd_reply_error(c, r.id, JSCHED_EHANDSHAKE_REQUIRED, "op", "hello must come first");
		jd_conn_close(c, "no hello");
		return;
	}
	if (jp_op_is_admin(r.op) && !jd_is_admin(d, c->uid)) {
		jd_reply_error(c, r.id, JSCHED_EPERMISSION_DENIED, "op",
			       "%s needs an admin uid (uid %u is not one)", jp_op_name(r.op),
			       (unsigned)c->uid);
		return;
	}
	switch (r.op) {
	case JP_OP_HELLO:
		op_hello(c, &r);
		break;
	case JP_OP_SUBMIT:
		jd_op_submit(c, &r, msg);
		break;
	case JP_OP_STATUS:
		op_status(c, &r);
		break;
	case JP_OP_WAIT:
		jd_op_wait(c, &r);
		break;
	case JP_OP_CANCEL:
		op_cancel(c, &r);
		break;
	case JP_OP_LIST:
		op_list(c, &r);
		break;
	case JP_OP_OUTPUT:
		op_output(c, &r);
		break;
	case JP_OP_WATCH:
		op_watch(c, &r);
		break;
	case JP_OP_UNWATCH:
		jd_watch_stop(d, c);
		jd_reply_ok(c, r.id, NULL);
		break;
	case JP_OP_METRICS:
		jd_reply_ok(c, r.id, json_pack("{s:o}", "metrics", jd_metrics(d)));
		break;
	case JP_OP_DRAIN:
		op_drain(c, &r);
		break;
	case JP_OP_PING:
		jd_reply_ok(c, r.id, NULL);
		break;
	case JP_OP_RELOAD:
		op_reload(c, &r);
		break;
	case JP_OP_SET_CLIENT:
		op_set_client(c, &r);
		break;
	case JP_OP_SHUTDOWN:
		op_shutdown(c, &r);
		break;
	}
	/* Whatever the operation ended, settle it now, before the next message. */
	jd_jobs_settle(d);
}

void jd_session_closed(struct jd_conn *c)
{
	jd_waits_drop(c);
	jd_watch_stop(c->d, c);
	json_decref(c->blocked);
	c->blocked = NULL;
}

void jd_session_broadcast_shutdown(struct jd_daemon *d, const char *mode)
{
	json_t *ev = jp_event_shutdown_new(mode);

	for (struct jd_conn *c = d->srv.conns; c && ev; c = c->next)
		jd_conn_send(c, ev);
	json_decref(ev);
}
