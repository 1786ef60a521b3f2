/* daemon/net/session.c: the request dispatcher, hello, and the reply helpers.
 *
 * Every message goes through the same steps: the handshake gate, the codec's strict
 * check of the request (jp_request_parse: unknown members, types, limits), the admin
 * gate, then the operation.  The hot requests after hello (ping, status, wait, cancel,
 * submit) come through jd_session_frame instead, read straight from the frame's bytes
 * (jp_fast_parse), which takes only what it can read exactly as that check would; the
 * gates and operations after it are the same (dispatch).  hello is here; the other operations are in the op_*.c
 * files beside this one (op_submit.c, op_wait.c, op_jobs.c, op_admin.c; watch.c for
 * watch), each a short function.  Ownership is checked in one place (jd__find_owned): a
 * client sees only its own uid's jobs unless its uid is an admin.
 */
#include "daemon/net/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/core/log.h"
#include "daemon/net/metrics.h"
#include "daemon/net/record.h"
#include "daemon/net/ops.h"
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

/* send_reply: send r (borrowed; NULL when it could not be built) as the reply to request
 * id.  A reply that cannot be built or encoded is replaced by a fixed `internal` error,
 * so that every request still gets exactly one reply. */
static void send_reply(struct jd_conn *c, int64_t id, json_t *r)
{
	static const char failed[] = ",\"ok\":false,\"error\":{\"code\":\"internal\","
				     "\"message\":\"jschedd could not build the reply\"}}";
	struct jp_buf b;
	int rc = r ? jd_conn_send(c, r) : JSCHED_ENOMEM;

	if (rc == 0 || rc == JSCHED_EDISCONNECTED || c->closing)
		return;
	jp_buf_init(&b);
	if (jd_reply_text_start(&b, id) || jd_json_text_raw(&b, failed))
		jp_buf_free(&b);
	else
		jd_conn_send_frame(c, &b);
}

void jd_reply_ok(struct jd_conn *c, int64_t id, json_t *body)
{
	json_t *r;

	if (!body) {
		/* {"id":N,"ok":true}, written straight (what jansson would dump) */
		struct jp_buf b;

		jp_buf_init(&b);
		if (jd_reply_text_start(&b, id) == 0 && jd_json_text_raw(&b, ",\"ok\":true}") == 0) {
			jd_conn_send_frame(c, &b);
			return;
		}
		jp_buf_free(&b);
	}
	r = jp_reply_new(id);

	if (r && body)
		json_object_update(r, body);
	json_decref(body);
	send_reply(c, id, r);
	json_decref(r);
}

void jd_reply_error_obj(struct jd_conn *c, int64_t id, json_t *err)
{
	json_t *r = jp_reply_error_new(id, err);

	send_reply(c, id, r);
	json_decref(r);
}

void jd__reply_error(struct jd_conn *c, int64_t id, int code, const char *field, const char *fmt,
		     ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (code == JSCHED_EPERMISSION_DENIED)
		c->d->sec->denied++; /* every denial passes here (metrics: security.denied) */
	jd_reply_error_obj(c, id, jp_error_new(code, field, msg));
}

void jd_session_fatal(struct jd_conn *c, int code, const char *message)
{
	jd_reply_error_obj(c, JP_ID_NONE, jp_error_new(code, NULL, message));
	jd_conn_close(c, message);
}

/* limits_default: jp_limits_default's limits, made once (loop thread only, as every
 * caller of jd__limits_of): filling them row by row from names.c's table cost 150
 * instructions, twice per request (the frame's fast read and the submit). */
static const struct jp_limits *limits_default(void)
{
	static struct jp_limits dflt;
	static bool made;

	if (!made) {
		jp_limits_default(&dflt);
		made = true;
	}
	return &dflt;
}

void jd__limits_of(const struct jd_conn *c, struct jp_limits *lim)
{
	const struct jd_config *cfg = c->d->cfg;

	*lim = *limits_default();
	lim->frame_bytes = cfg->frame_bytes;
	lim->jobs_per_submit = cfg->max_batch;
	lim->array_elements = cfg->max_array;
	lim->max_queued = c->client ? c->client->conf.max_queued : cfg->default_client.max_queued;
	lim->events_retained = cfg->retain_events;
	lim->output_bytes = cfg->exec.output_bytes;
	lim->value_bytes = cfg->value_bytes;
}

/* may_see: job id if it exists and c may see it, else NULL (nothing replied). */
static struct jd_job *may_see(struct jd_conn *c, int64_t id)
{
	bool forgotten;
	struct jd_job *j = jd_job_get(c->d->jobs, (uint64_t)id, &forgotten);

	return j && (j->uid == c->uid || jd_security_is_admin(c->d->sec, c->uid)) ? j : NULL;
}

struct jd_job *jd__find_owned(struct jd_conn *c, int64_t req_id, int64_t id, const char *field)
{
	bool forgotten;
	struct jd_job *j = may_see(c, id);

	if (j)
		return j;
	j = jd_job_get(c->d->jobs, (uint64_t)id, &forgotten);
	if (!j) {
		if (forgotten)
			jd__reply_error(c, req_id, JSCHED_EJOB_FORGOTTEN, field,
				        "job %lld is no longer retained", (long long)id);
		else
			jd__reply_error(c, req_id, JSCHED_ENO_SUCH_JOB, field, "no job %lld",
				        (long long)id);
		return NULL;
	}
	if (j->uid != c->uid && !jd_security_is_admin(c->d->sec, c->uid)) {
		jd__reply_error(c, req_id, JSCHED_EPERMISSION_DENIED, field,
			        "job %lld belongs to another user", (long long)id);
		return NULL;
	}
	return j;
}

void jd__about_jobs(struct jd_conn *c, struct jd_job *const *jobs, size_t n)
{
	uint64_t upto = 0;

	for (size_t i = 0; i < n; i++) {
		if (jobs[i]->arr || jobs[i]->array_id)
			return;
		if (jobs[i]->jseq > upto)
			upto = jobs[i]->jseq;
	}
	c->jh_upto_set = true;
	c->jh_upto = upto;
}

void jd__about_end(struct jd_conn *c)
{
	c->jh_upto_set = false;
}

int jd__find_all_owned(struct jd_conn *c, const struct jp_request *r, struct jd_job ***out,
		       size_t *n, bool *single)
{
	int64_t *ids;
	struct jd_job **jobs;
	int rc = jp_req_ids(r, &ids, n, single);

	if (rc < 0) {
		jd__reply_error(c, r->id, rc, "jobs", "job or jobs required");
		return rc;
	}
	jobs = calloc(*n ? *n : 1, sizeof(*jobs));
	if (!jobs) {
		free(ids);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return JSCHED_ENOMEM;
	}
	for (size_t i = 0; i < *n; i++) {
		char field[32];

		/* The member's name is written only for an error's reply: snprintf of
		 * "jobs[i]" for every id was 860 instructions a job of a wait of 1,000. */
		if ((jobs[i] = may_see(c, ids[i])))
			continue;
		if (*single)
			snprintf(field, sizeof(field), "job");
		else
			snprintf(field, sizeof(field), "jobs[%zu]", i);
		jobs[i] = jd__find_owned(c, r->id, ids[i], field);
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

/* op_metrics: the document, or with "format": "prometheus" its Prometheus text (`text`);
 * "histograms": true adds the histograms' bucket counts to the document. */
static void op_metrics(struct jd_conn *c, const struct jp_request *r)
{
	const char *format = jp_req_str(r, "format", "json");
	char *text;
	size_t len;

	if (strcmp(format, "prometheus") != 0) {
		unsigned flags = jp_req_bool(r, "histograms", false) ? JD_METRICS_HISTOGRAMS : 0;

		/* Counts, not a promise about any job: not held for the journal (while it
		 * cannot be written, its fault is in here). */
		c->jh_bypass = true;
		jd_reply_ok(c, r->id, json_pack("{s:o}", "metrics", jd_metrics(c->d, flags)));
		c->jh_bypass = false;
		return;
	}
	text = jd_metrics_prometheus(c->d, &len);
	if (!text) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory rendering the metrics");
		return;
	}
	jd_reply_ok(c, r->id, json_pack("{s:s%}", "text", text, len));
	free(text);
}

static void op_hello(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_net *d = c->d;
	int64_t version = jp_req_int(r, "version", 0);
	const char *name = jp_req_str(r, "client", NULL);
	char dflt[JP_REF_MAX + 1];
	struct jp_identity who;
	struct jp_limits lim;

	if (c->hello_done) {
		jd__reply_error(c, r->id, JSCHED_EPROTOCOL, NULL, "hello was already done");
		return;
	}
	/* Every version from the oldest on means the same to the daemon: a later one only adds
	 * members and operations (PROTOCOL.md section 11), so nothing below depends on it. */
	if (version < JP_PROTOCOL_OLDEST || version > JP_PROTOCOL_VERSION) {
		jd_reply_error_obj(c, r->id, jp_version_mismatch_new(version, JSCHED_VERSION));
		jd_conn_close(c, "version mismatch");
		return;
	}
	if (d->state == JD_STOPPING) {
		jd__reply_error(c, r->id, JSCHED_ESHUTTING_DOWN, NULL, "jschedd is shutting down");
		jd_conn_close(c, "shutting down");
		return;
	}
	if (!name) {
		snprintf(dflt, sizeof(dflt), "%s", jd_security_default_name(d->sec, c->uid));
		name = dflt;
	}
	/* Which uids may use which client names: the config's client_names (security.c). */
	if (!jd_security_name_allowed(d->sec, c->uid, name)) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "client",
			        "uid %u may not use the client name '%s'", (unsigned)c->uid, name);
		return;
	}
	if (!jd_client_room(d->clients, name)) {
		jd__reply_error(c, r->id, JSCHED_ELIMIT_EXCEEDED, "client",
				"the daemon knows %u client names, its limit (limits.clients): "
				"connect under a name it knows", d->cfg->max_clients);
		return;
	}
	c->client = jd_client_get(d->clients, name);
	if (!c->client) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	jd_client_attach(c->client); /* in use while the connection is open */
	who = (struct jp_identity){.uid = c->uid, .gid = c->gid, .pid = c->pid,
				   .client = c->client->name, .admin = jd_security_is_admin(d->sec, c->uid)};
	jd__limits_of(c, &lim);
	jd_conn_hello_done(c);
	jd_conn_set_frame_limit(c, d->cfg->frame_bytes);
	{
		json_t *rep = jp_hello_reply_new(r->id, version, JSCHED_VERSION, d->instance, &who, &lim);

		/* About the connection, not any job: not held for the journal (else no one
		 * could connect while it cannot be written). */
		c->jh_bypass = true;
		if (rep)
			jd_conn_send(c, rep);
		c->jh_bypass = false;
		json_decref(rep);
	}
}

/* dispatch: the checked request r (msg its tree; NULL for a request read without one)
 * past the handshake and admin gates to its operation, then the settle. */
static void dispatch(struct jd_conn *c, const struct jp_request *rq, json_t *msg)
{
	struct jd_net *d = c->d;
	const struct jp_request r = *rq;

	if (!c->hello_done && r.op != JP_OP_HELLO) {
		jd__reply_error(c, r.id, JSCHED_EHANDSHAKE_REQUIRED, "op", "hello must come first");
		jd_conn_close(c, "no hello");
		return;
	}
	if (jp_op_is_admin(r.op) && !jd_security_is_admin(d->sec, c->uid)) {
		jd__reply_error(c, r.id, JSCHED_EPERMISSION_DENIED, "op",
			        "%s needs an admin uid (uid %u is not one)", jp_op_name(r.op),
			        (unsigned)c->uid);
		return;
	}
	switch (r.op) {
	case JP_OP_HELLO:
		op_hello(c, &r);
		break;
	case JP_OP_SUBMIT:
		jd__op_submit(c, &r, msg);
		break;
	case JP_OP_STATUS:
		jd__op_status(c, &r);
		break;
	case JP_OP_WAIT:
		jd__op_wait(c, &r);
		break;
	case JP_OP_CANCEL:
		jd__op_cancel(c, &r);
		break;
	case JP_OP_LIST:
		jd__op_list(c, &r);
		break;
	case JP_OP_OUTPUT:
		jd__op_output(c, &r);
		break;
	case JP_OP_WATCH:
		jd__op_watch(c, &r);
		break;
	case JP_OP_UNWATCH:
		jd_watch_stop(d, c);
		jd_reply_ok(c, r.id, NULL);
		break;
	case JP_OP_METRICS:
		op_metrics(c, &r);
		break;
	case JP_OP_DRAIN:
		jd__op_drain(c, &r);
		break;
	case JP_OP_PING:
		jd_reply_ok(c, r.id, NULL);
		break;
	case JP_OP_RELOAD:
		jd__op_reload(c, &r);
		break;
	case JP_OP_SET_CLIENT:
		jd__op_set_client(c, &r);
		break;
	case JP_OP_SHUTDOWN:
		jd__op_shutdown(c, &r);
		break;
	case JP_OP_PAUSE:
		jd__op_pause(c, &r);
		break;
	case JP_OP_RESUME:
		jd__op_resume(c, &r);
		break;
	case JP_OP_HOLD:
		jd__op_hold(c, &r);
		break;
	case JP_OP_RELEASE:
		jd__op_release(c, &r);
		break;
	case JP_OP_HOOK:
		jd__op_hook(c, &r);
		break;
	case JP_OP_TEST_CLOCK:
		jd__op_test_clock(c, &r);
		break;
	case JP_OP_RETRY:
		jd__op_retry(c, &r);
		break;
	case JP_OP_RESULT:
		jd__op_result(c, &r);
		break;
	}
	/* Whatever the operation ended, settle it now, before the next message. */
	jd_jobs_settle(d->jobs);
}

void jd_session_message(struct jd_conn *c, json_t *msg)
{
	struct jp_request r;
	struct jp_limits lim;
	struct jp_err err;

	c->d->srv.requests++;
	jd__limits_of(c, &lim);
	if (jp_request_parse(msg, &lim, &r, &err) < 0) {
		/* A frame rule broken (PROTOCOL.md section 1): answered and closed as the
		 * decoder's own bad_frame is. */
		if (!c->hello_done || err.code == JSCHED_EBAD_FRAME) {
			jd_session_fatal(c, err.code, err.message);
			return;
		}
		jd_reply_error_obj(c, r.id, jp_error_new_from(&err));
		return;
	}
	dispatch(c, &r, msg);
}

/* SLICE_FRAME_BYTES: a frame at least this large is read from a copy into a jp_fast of
 * its own, which a batch admitted in slices keeps across loop iterations (op_submit.c):
 * 129 of the shortest call specs. */
#define SLICE_FRAME_BYTES 4096u

bool jd_session_frame(struct jd_conn *c, const void *text, size_t len)
{
	struct jp_fast local, *f = &local;
	struct jp_request r;
	struct jp_limits lim;
	char *copy = NULL;

	if (!c->hello_done)
		return false;
	jd__limits_of(c, &lim);
	if (len >= SLICE_FRAME_BYTES) {
		f = malloc(sizeof(*f));
		copy = f ? malloc(len) : NULL;
		if (!copy) {
			free(f);
			return false; /* read with a tree (which out of memory refuses) */
		}
		memcpy(copy, text, len);
		text = copy;
	}
	jp_fast_init(f);
	if (!jp_fast_parse(text, len, &lim, f)) {
		if (copy) {
			free(f);
			free(copy);
		}
		return false;
	}
	c->d->srv.requests++;
	if (copy) {
		c->frame.fast = f;
		c->frame.fast_text = copy;
	}
	r = (struct jp_request){.id = f->id, .op = f->op, .msg = NULL, .fast = f};
	dispatch(c, &r, NULL);
	/* What a submit in slices did not take. */
	if (c->frame.fast) {
		jp_fast_free(c->frame.fast);
		free(c->frame.fast);
		free(c->frame.fast_text);
		c->frame.fast = NULL;
		c->frame.fast_text = NULL;
	} else if (!copy) {
		jp_fast_free(&local);
	}
	return true;
}

void jd_session_closed(struct jd_conn *c)
{
	if (c->client)
		jd_client_detach(c->client);
	jd__submit_drop(c);
	jd__waits_drop(c);
	jd_watch_stop(c->d, c);
	jd_follow_closed(c);
	json_decref(c->blocked);
	c->blocked = NULL;
}

void jd_session_broadcast_shutdown(struct jd_net *d, const char *mode)
{
	json_t *ev = jp_event_shutdown_new(mode);

	for (struct jd_conn *c = d->srv.conns; c && ev; c = c->next)
		jd_conn_send(c, ev);
	json_decref(ev);
}
