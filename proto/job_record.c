/* proto/job_record.c: the job record (PROTOCOL.md section 5), the one shape in which the daemon
 * describes a job (status, wait, list, events), and the output reply's stream objects.
 *
 * The builder leaves out what is absent (times not reached yet, exit code of a call job);
 * the reader is lenient where the protocol allows a newer daemon to add members, and
 * strict about the ones it knows.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdlib.h>
#include <string.h>

void jp_record_init(struct jp_record *r)
{
	*r = (struct jp_record){.submitted_ms = -1, .started_ms = -1, .finished_ms = -1,
				.not_before_ms = -1, .exit_code = -1, .kind = JP_KIND_EXEC, .priority = JP_PRIO_NORMAL,
				.state = JP_STATE_QUEUED};
}

json_t *jp_record_to_json(const struct jp_record *r)
{
	json_t *o = json_object();

	if (!o || set(o, "job", json_integer(r->job)) < 0 ||
	    (r->name && set(o, "name", json_string(r->name)) < 0) ||
	    set(o, "client", json_string(r->client ? r->client : "")) < 0 ||
	    set(o, "uid", json_integer(r->uid)) < 0 ||
	    set(o, "kind", json_string(jp_kind_name(r->kind))) < 0 ||
	    set(o, "priority", json_string(jp_priority_name(r->priority))) < 0 ||
	    set(o, "state", json_string(jp_state_name(r->state))) < 0 ||
	    (r->submitted_ms >= 0 && set(o, "submitted_ms", json_integer(r->submitted_ms)) < 0) ||
	    (r->started_ms >= 0 && set(o, "started_ms", json_integer(r->started_ms)) < 0) ||
	    (r->finished_ms >= 0 && set(o, "finished_ms", json_integer(r->finished_ms)) < 0) ||
	    (r->not_before_ms >= 0 && set(o, "not_before", json_integer(r->not_before_ms)) < 0) ||
	    (r->exit_code >= 0 && set(o, "exit_code", json_integer(r->exit_code)) < 0) ||
	    (r->signal > 0 && set(o, "signal", json_integer(r->signal)) < 0) ||
	    (r->value && json_object_set(o, "value", r->value) < 0) ||
	    (r->cause != JP_CAUSE_NONE && set(o, "cause", json_string(jp_cause_name(r->cause))) < 0) ||
	    (r->reason && set(o, "reason", json_string(r->reason)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* opt_int: obj[key] if present must be an integer in [min, max]. */
static bool opt_int(const json_t *obj, const char *key, int64_t min, int64_t max, int64_t *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return false;
	*out = (int64_t)json_integer_value(v);
	return true;
}

/* opt_enum: obj[key] if present must be a name that from_name knows. */
static bool opt_enum(const json_t *obj, const char *key, int (*from_name)(const char *), int *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return true;
	if (!json_is_string(v) || (*out = from_name(json_string_value(v))) < 0)
		return false;
	return true;
}

static bool opt_str(const json_t *obj, const char *key, const char **out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return true;
	if (!json_is_string(v))
		return false;
	*out = json_string_value(v);
	return true;
}

int jp_record_parse(const json_t *obj, struct jp_record *out, struct jp_err *err)
{
	int64_t exit_code = -1, sig = 0;
	int kind = JP_KIND_EXEC, prio = JP_PRIO_NORMAL, state = -1, cause = JP_CAUSE_NONE;
	const char *bad = NULL;

	jp_record_init(out);
	if (!json_is_object(obj))
		return jp_err_set(err, JSCHED_EPROTOCOL, NULL, "a job record is an object");
	if (!opt_int(obj, "job", 1, JP_MAX_INT, &out->job) || out->job == 0)
		bad = "job";
	else if (!opt_str(obj, "name", &out->name))
		bad = "name";
	else if (!opt_str(obj, "client", &out->client))
		bad = "client";
	else if (!opt_int(obj, "uid", 0, JP_MAX_INT, &out->uid))
		bad = "uid";
	else if (!opt_enum(obj, "kind", jp_kind_from_name, &kind))
		bad = "kind";
	else if (!opt_enum(obj, "priority", jp_priority_from_name, &prio))
		bad = "priority";
	else if (!opt_enum(obj, "state", jp_state_from_name, &state) || state < 0)
		bad = "state";
	else if (!opt_int(obj, "submitted_ms", 0, JP_MAX_INT, &out->submitted_ms))
		bad = "submitted_ms";
	else if (!opt_int(obj, "started_ms", 0, JP_MAX_INT, &out->started_ms))
		bad = "started_ms";
	else if (!opt_int(obj, "finished_ms", 0, JP_MAX_INT, &out->finished_ms))
		bad = "finished_ms";
	else if (!opt_int(obj, "not_before", 0, JP_MAX_INT, &out->not_before_ms))
		bad = "not_before";
	else if (!opt_int(obj, "exit_code", 0, 255, &exit_code))
		bad = "exit_code";
	else if (!opt_int(obj, "signal", 1, 127, &sig))
		bad = "signal";
	else if (!opt_enum(obj, "cause", jp_cause_from_name, &cause))
		bad = "cause";
	else if (!opt_str(obj, "reason", &out->reason))
		bad = "reason";
	if (bad)
		return jp_err_set(err, JSCHED_EPROTOCOL, bad, "job record: bad or missing %s", bad);
	out->kind = (enum jp_kind)kind;
	out->priority = (enum jp_priority)prio;
	out->state = (enum jp_state)state;
	out->exit_code = (int)exit_code;
	out->signal = (int)sig;
	out->cause = (enum jp_cause)cause;
	out->value = json_object_get(obj, "value");
	return 0;
}

json_t *jp_output_stream_new(const void *data, size_t len, bool truncated)
{
	json_t *o = json_object();

	if (!o || set(o, "data", jp_base64_json(data, len)) < 0 ||
	    set(o, "bytes", json_integer((json_int_t)len)) < 0 ||
	    set(o, "truncated", json_boolean(truncated)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int jp_output_stream_parse(const json_t *obj, unsigned char **data, size_t *len, bool *truncated,
			   struct jp_err *err)
{
	const json_t *d = json_object_get(obj, "data"), *t = json_object_get(obj, "truncated");
	int rc;

	*data = NULL;
	*len = 0;
	if (!json_is_string(d) || !json_is_boolean(t))
		return jp_err_set(err, JSCHED_EPROTOCOL, NULL, "malformed output stream");
	rc = jp_base64_decode(json_string_value(d), json_string_length(d), SIZE_MAX, data, len);
	if (rc == JSCHED_ENOMEM)
		return jp_err_set(err, rc, NULL, "out of memory");
	if (rc < 0)
		return jp_err_set(err, JSCHED_EPROTOCOL, "data", "output data is not base64");
	if (!*data) {	/* empty: still hand back a NUL-terminated buffer */
		*data = calloc(1, 1);
		if (!*data)
			return jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
	}
	*truncated = json_is_true(t);
	return 0;
}
