/* proto/message.c: building requests, replies and events, classifying what the daemon
 * sends, and the hello exchange (PROTOCOL.md sections 2 and 3).
 *
 * Builders return new references and NULL when out of memory; they never half-build: on
 * any failure the partial object is released.  jp_incoming_parse is the client's one entry
 * point for a frame from the daemon: reply or event, ok or error, with the error already
 * turned into a jp_err.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdio.h>

/* set: json_object_set_new that tolerates a NULL value (an earlier allocation failed) by
 * failing, so builders can chain calls and test once. */
static json_t *id_json(int64_t id)
{
	return id == JP_ID_NONE ? json_null() : json_integer(id);
}

json_t *jp_request_new(enum jp_op op, int64_t id)
{
	const char *name = jp_op_name(op);
	json_t *o = json_object();

	if (!o || !name || set(o, "op", json_string(name)) < 0 || set(o, "id", json_integer(id)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jp_reply_new(int64_t id)
{
	json_t *o = json_object();

	if (!o || set(o, "id", id_json(id)) < 0 || set(o, "ok", json_true()) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jp_reply_error_new(int64_t id, json_t *error)
{
	json_t *o = json_object();

	if (!o || !error || set(o, "id", id_json(id)) < 0 || set(o, "ok", json_false()) < 0) {
		json_decref(o);
		json_decref(error);
		return NULL;
	}
	if (json_object_set_new(o, "error", error) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jp_reply_err_new(int64_t id, const struct jp_err *err)
{
	return jp_reply_error_new(id, jp_error_new_from(err));
}

json_t *jp_event_job_new(int64_t seq, json_t *record)
{
	json_t *o = json_object();

	if (!o || !record || set(o, "event", json_string("job")) < 0 ||
	    set(o, "seq", json_integer(seq)) < 0) {
		json_decref(o);
		json_decref(record);
		return NULL;
	}
	if (json_object_set_new(o, "job", record) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jp_event_shutdown_new(const char *mode)
{
	json_t *o = json_object();

	if (!o || set(o, "event", json_string("shutdown")) < 0 ||
	    set(o, "mode", json_string(mode)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int jp_incoming_parse(const json_t *msg, struct jp_incoming *out, struct jp_err *err)
{
	const json_t *event, *id, *ok, *seq;

	*out = (struct jp_incoming){.id = JP_ID_NONE, .msg = msg};
	if (!json_is_object(msg))
		return jp_err_set(err, JSCHED_EPROTOCOL, NULL, "message is not an object");
	event = json_object_get(msg, "event");
	if (event) {
		if (!json_is_string(event))
			return jp_err_set(err, JSCHED_EPROTOCOL, "event", "event is not a string");
		seq = json_object_get(msg, "seq");
		if (seq && (!json_is_integer(seq) || json_integer_value(seq) < 0))
			return jp_err_set(err, JSCHED_EPROTOCOL, "seq", "seq is not a count");
		out->is_event = true;
		out->event = json_string_value(event);
		out->seq = seq ? (int64_t)json_integer_value(seq) : 0;
		return 0;
	}
	id = json_object_get(msg, "id");
	ok = json_object_get(msg, "ok");
	if (!id || !(json_is_null(id) || json_is_integer(id)) || !json_is_boolean(ok))
		return jp_err_set(err, JSCHED_EPROTOCOL, NULL,
				  "message is neither a reply (id, ok) nor an event");
	out->id = json_is_integer(id) ? (int64_t)json_integer_value(id) : JP_ID_NONE;
	out->ok = json_is_true(ok);
	if (!out->ok) {
		out->error_obj = json_object_get(msg, "error");
		if (jp_error_parse(out->error_obj, &out->error) < 0) {
			out->error_obj = NULL;
			return jp_err_set(err, JSCHED_EPROTOCOL, "error",
					  "error reply without a well-formed error object");
		}
	}
	return 0;
}

json_t *jp_hello_new(int64_t id, const char *client)
{
	json_t *o = jp_request_new(JP_OP_HELLO, id);

	if (!o || set(o, "version", json_integer(JP_PROTOCOL_VERSION)) < 0 ||
	    (client && set(o, "client", json_string(client)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *jp_hello_reply_new(int64_t id, int64_t version, const char *daemon_version, const char *instance,
			   const struct jp_identity *who, const struct jp_limits *lim)
{
	json_t *o = jp_reply_new(id), *ident = json_object();

	if (!o || !ident || set(ident, "uid", json_integer(who->uid)) < 0 ||
	    set(ident, "gid", json_integer(who->gid)) < 0 ||
	    set(ident, "pid", json_integer(who->pid)) < 0 ||
	    set(ident, "client", json_string(who->client ? who->client : "")) < 0 ||
	    set(ident, "admin", json_boolean(who->admin)) < 0 ||
	    set(o, "version", json_integer(version)) < 0 ||
	    set(o, "daemon", json_string(daemon_version)) < 0 ||
	    set(o, "instance", json_string(instance)) < 0) {
		json_decref(ident);
		json_decref(o);
		return NULL;
	}
	if (json_object_set_new(o, "identity", ident) < 0 ||
	    set(o, "limits", jp_limits_to_json(lim)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* get_int: obj[key] as an integer in [min, max], or fail. */
static bool get_int(const json_t *obj, const char *key, int64_t min, int64_t max, int64_t *v)
{
	const json_t *j = json_object_get(obj, key);

	if (!json_is_integer(j) || json_integer_value(j) < min || json_integer_value(j) > max)
		return false;
	*v = (int64_t)json_integer_value(j);
	return true;
}

int jp_hello_reply_parse(const json_t *msg, struct jp_hello_reply *out, struct jp_err *err)
{
	const json_t *ident = json_object_get(msg, "identity");
	const json_t *daemon = json_object_get(msg, "daemon");
	const json_t *instance = json_object_get(msg, "instance");
	const json_t *client = json_object_get(ident, "client");
	const json_t *admin = json_object_get(ident, "admin");
	const json_t *limits = json_object_get(msg, "limits");

	*out = (struct jp_hello_reply){0};
	jp_limits_default(&out->limits);
	if (!get_int(msg, "version", 0, JP_MAX_INT, &out->version) || !json_is_string(daemon) ||
	    !json_is_string(instance) || !json_is_object(ident) || !json_is_string(client) ||
	    !json_is_boolean(admin) || !get_int(ident, "uid", 0, JP_MAX_INT, &out->identity.uid) ||
	    !get_int(ident, "gid", 0, JP_MAX_INT, &out->identity.gid) ||
	    !get_int(ident, "pid", 0, JP_MAX_INT, &out->identity.pid))
		return jp_err_set(err, JSCHED_EPROTOCOL, NULL, "malformed hello reply");
	out->daemon = json_string_value(daemon);
	out->instance = json_string_value(instance);
	out->identity.client = json_string_value(client);
	out->identity.admin = json_is_true(admin);
	if (limits)
		return jp_limits_parse(limits, &out->limits, err);
	return 0;
}

json_t *jp_version_mismatch_new(int64_t asked, const char *daemon_version)
{
	json_t *e, *supported = json_array();
	char msg[160];

	snprintf(msg, sizeof(msg), "client speaks protocol %lld; jschedd %s speaks %d to %d",
		 (long long)asked, daemon_version, JP_PROTOCOL_OLDEST, JP_PROTOCOL_VERSION);
	e = jp_error_new(JSCHED_EVERSION_MISMATCH, "version", msg);
	if (!e || !supported) {
		json_decref(e);
		json_decref(supported);
		return NULL;
	}
	for (int v = JP_PROTOCOL_OLDEST; v <= JP_PROTOCOL_VERSION; v++) {
		if (json_array_append_new(supported, json_integer(v)) < 0) {
			json_decref(e);
			json_decref(supported);
			return NULL;
		}
	}
	if (json_object_set_new(e, "supported", supported) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}
