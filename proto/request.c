/* proto/request.c: checking a request against PROTOCOL.md, and reading its members.
 *
 * Every operation's members are one table (name, type, range, required): the checker walks
 * the request's members, refuses any the table does not name, and checks each against its
 * row; then it checks that required members are present and that exactly one of `job` /
 * `jobs` was given where the op takes either.  A table rather than a function per op keeps
 * PROTOCOL.md section 6 and the code side by side, and gives every op the same error
 * words.  Job specs are only checked to be objects here; jp_submit_parse checks them whole,
 * because it needs the limits and the other specs of the message (refs).
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ftype {
	T_INT,		/* integer in [min, max] */
	T_ID,		/* a job id: integer 1..JP_MAX_INT */
	T_IDS,		/* non-empty array of job ids, at most jobs_per_submit */
	T_STR,		/* string of at most max bytes */
	T_CLIENT,	/* a client name */
	T_BOOL,
	T_SPEC,		/* an object (a job spec) */
	T_SPECS,	/* non-empty array of objects, at most jobs_per_submit */
	T_ENUM,		/* one of vals */
	T_ENUMS,	/* array of distinct-or-not values of vals */
	T_NUM,		/* a number (integer or not) in [min, max] */
	T_WAIT,		/* submit's `wait`: a boolean, or an object of the wait_fields */
};

#define REQ 1u		/* required */
#define ONE 2u		/* exactly one of the ONE members must be present */

struct field {
	const char *name;
	enum ftype type;
	unsigned flags;
	int64_t min, max;
	const char *const *vals;
};

static const char *const wait_modes[] = {"all", "any", NULL};
static const char *const wait_fields_vals[] = {"all", "brief", NULL};
/* The members of submit's `wait` object, named in errors with their path (wait.mode). */
static const struct {
	const char *name, *path;
} wait_fields[] = {{"timeout_ms", "wait.timeout_ms"}, {"mode", "wait.mode"},
		   {"output", "wait.output"}};
static const char *const state_names[] = {"waiting", "scheduled", "retrying", "queued", "running", "succeeded", "failed",
					  "cancelled", "expired", "dropped", NULL};
static const char *const overflows[] = {"reject", "drop_oldest", "drop_newest", "block", NULL};
static const char *const shutdown_modes[] = {"graceful", "immediate", NULL};
static const char *const hook_states[] = {"running", "succeeded", "failed", NULL};

static const struct field f_none[] = {{NULL, T_INT, 0, 0, 0, NULL}};
static const struct field f_hello[] = {
	{"version", T_INT, REQ, 0, JP_MAX_INT, NULL},
	{"client", T_CLIENT, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_submit[] = {
	{"job", T_SPEC, ONE, 0, 0, NULL},
	{"jobs", T_SPECS, ONE, 0, 0, NULL},
	{"wait", T_WAIT, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_ids[] = {	/* cancel */
	{"job", T_ID, ONE, 0, 0, NULL},
	{"jobs", T_IDS, ONE, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_status[] = {
	{"job", T_ID, ONE, 0, 0, NULL},
	{"jobs", T_IDS, ONE, 0, 0, NULL},
	{"detail", T_BOOL, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_wait[] = {
	{"job", T_ID, ONE, 0, 0, NULL},
	{"jobs", T_IDS, ONE, 0, 0, NULL},
	{"mode", T_ENUM, 0, 0, 0, wait_modes},
	{"timeout_ms", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"fields", T_ENUM, 0, 0, 0, wait_fields_vals},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_list[] = {
	{"states", T_ENUMS, 0, 0, 0, state_names},
	{"client", T_CLIENT, 0, 0, 0, NULL},
	{"all", T_BOOL, 0, 0, 0, NULL},
	{"after_job", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"limit", T_INT, 0, 1, JP_LIST_LIMIT_MAX, NULL},
	{"array", T_ID, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const char *const stream_names[] = {"stdout", "stderr", "both", NULL};
static const struct field f_output[] = {
	{"job", T_ID, REQ, 0, 0, NULL},
	{"follow", T_BOOL, 0, 0, 0, NULL},
	{"events", T_BOOL, 0, 0, 0, NULL},
	{"streams", T_ENUM, 0, 0, 0, stream_names},
	{"from_stdout", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"from_stderr", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"tail_lines", T_INT, 0, 0, JP_MAX_INT, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_watch[] = {
	{"from_seq", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"instance", T_STR, 0, 0, 128, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_drain[] = {
	{"client", T_CLIENT, 0, 0, 0, NULL},
	{"running", T_BOOL, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const char *const backends[] = {"local", "slurm", "auto", NULL};
static const struct field f_set_client[] = {
	{"client", T_CLIENT, REQ, 0, 0, NULL},
	{"weight", T_INT, 0, 1, JP_WEIGHT_MAX, NULL},
	{"max_queued", T_INT, 0, 1, UINT32_MAX, NULL},
	{"overflow", T_ENUM, 0, 0, 0, overflows},
	{"max_running", T_INT, 0, 0, 1000000, NULL},
	{"max_processes", T_INT, 0, 0, 65536, NULL},
	{"memory_max", T_INT, 0, 0, (int64_t)1 << 50, NULL},
	{"pids_max", T_INT, 0, 0, 4194304, NULL},
	{"cpu_max", T_NUM, 0, 0, 4096, NULL},
	{"backend", T_ENUM, 0, 0, 0, backends},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_pause[] = {
	{"client", T_CLIENT, 0, 0, 0, NULL},
	{"all", T_BOOL, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const char *const metrics_formats[] = {"json", "prometheus", NULL};
static const struct field f_metrics[] = {
	{"format", T_ENUM, 0, 0, 0, metrics_formats},
	{"histograms", T_BOOL, 0, 0, 0, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_shutdown[] = {
	{"mode", T_ENUM, 0, 0, 0, shutdown_modes},
	{NULL, T_INT, 0, 0, 0, NULL},
};

static const struct field f_hook[] = {
	{"job", T_ID, REQ, 0, 0, NULL},
	{"state", T_ENUM, REQ, 0, 0, hook_states},
	{"exit_code", T_INT, 0, 0, 255, NULL},
	{"signal", T_INT, 0, 1, 128, NULL},
	{"reason", T_STR, 0, 0, 1024, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_result[] = {
	{"job", T_ID, REQ, 0, 0, NULL},
	{"offset", T_INT, 0, 0, JP_MAX_INT, NULL},
	{"max_bytes", T_INT, 0, 1, JP_MAX_INT, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};
static const struct field f_test_clock[] = {
	{"advance_ms", T_INT, 0, 0, JP_MAX_INT, NULL},
	{NULL, T_INT, 0, 0, 0, NULL},
};

/* Indexed by enum jp_op. */
static const struct field *const op_fields[JP_NOPS] = {
	[JP_OP_HELLO] = f_hello,	[JP_OP_SUBMIT] = f_submit,
	[JP_OP_STATUS] = f_status,		[JP_OP_WAIT] = f_wait,
	[JP_OP_CANCEL] = f_ids,		[JP_OP_LIST] = f_list,
	[JP_OP_OUTPUT] = f_output,	[JP_OP_WATCH] = f_watch,
	[JP_OP_UNWATCH] = f_none,	[JP_OP_METRICS] = f_metrics,
	[JP_OP_DRAIN] = f_drain,	[JP_OP_PING] = f_none,
	[JP_OP_RELOAD] = f_none,	[JP_OP_SET_CLIENT] = f_set_client,
	[JP_OP_SHUTDOWN] = f_shutdown,	[JP_OP_PAUSE] = f_pause,
	[JP_OP_RESUME] = f_pause,	[JP_OP_HOLD] = f_ids,
	[JP_OP_RELEASE] = f_ids,	[JP_OP_HOOK] = f_hook,
	[JP_OP_TEST_CLOCK] = f_test_clock, [JP_OP_RETRY] = f_ids,
	[JP_OP_RESULT] = f_result,
};

static bool in_vals(const char *const *vals, const char *s)
{
	for (; *vals; vals++)
		if (strcmp(*vals, s) == 0)
			return true;
	return false;
}

/* client_name_ok: 1 to JP_REF_MAX bytes of A-Z a-z 0-9 . _ - */
static bool client_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > JP_REF_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool is_id(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 1 &&
	       json_integer_value(v) <= JP_MAX_INT;
}

/* check_wait: submit's `wait`: true, false, or {"timeout_ms", "mode", "output"}, each
 * optional.  Returns 0 or the error (err filled, field the member's path). */
static int check_wait(const json_t *v, struct jp_err *err)
{
	const char *key;
	const json_t *e;
	size_t k;

	if (json_is_boolean(v))
		return 0;
	if (!json_is_object(v))
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "wait",
				  "wait must be true, false or an object {timeout_ms, mode, output}");
	json_object_foreach(unconst(v), key, e) {
		for (k = 0; k < sizeof(wait_fields) / sizeof(wait_fields[0]); k++)
			if (strcmp(key, wait_fields[k].name) == 0)
				break;
		if (k == sizeof(wait_fields) / sizeof(wait_fields[0])) {
			char path[80];

			snprintf(path, sizeof(path), "wait.%.*s", jp_utf8_cut(key, 64), key);
			return jp_err_set(err, JSCHED_EBAD_REQUEST, path,
					  "wait takes no member \"%.*s\"", jp_utf8_cut(key, 64), key);
		}
		if (k == 0 && (!json_is_integer(e) || json_integer_value(e) < 0))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, wait_fields[k].path,
					  "%s must be an integer from 0 to 2^53-1", wait_fields[k].path);
		if (k == 1 && (!json_is_string(e) || !in_vals(wait_modes, json_string_value(e))))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, wait_fields[k].path,
					  "%s must be \"all\" or \"any\"", wait_fields[k].path);
		if (k == 2 && !json_is_boolean(e))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, wait_fields[k].path,
					  "%s must be true or false", wait_fields[k].path);
	}
	return 0;
}

/* check: one member against its row.  Returns 0 or the error (err filled). */
static int check(const struct field *f, const json_t *v, const struct jp_limits *lim,
		 struct jp_err *err)
{
	char path[64];
	size_t i;
	const json_t *e;

	switch (f->type) {
	case T_INT:
		if (!json_is_integer(v) || json_integer_value(v) < f->min ||
		    json_integer_value(v) > f->max)
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be an integer from %lld to %lld", f->name,
					  (long long)f->min, (long long)f->max);
		return 0;
	case T_ID:
		if (!is_id(v))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a job id (a positive integer)", f->name);
		return 0;
	case T_IDS:
	case T_SPECS:
		if (!json_is_array(v) || json_array_size(v) == 0)
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a non-empty array", f->name);
		if (json_array_size(v) > lim->jobs_per_submit)
			return jp_err_set(err, JSCHED_ELIMIT_EXCEEDED, f->name,
					  "%s has %zu items; the limit is %u", f->name,
					  json_array_size(v), (unsigned)lim->jobs_per_submit);
		json_array_foreach(v, i, e) {
			if (f->type == T_IDS ? is_id(e) : json_is_object(e))
				continue;
			snprintf(path, sizeof(path), "%s[%zu]", f->name, i);
			return jp_err_set(err, JSCHED_EBAD_REQUEST, path, "%s must be %s", path,
					  f->type == T_IDS ? "a job id (a positive integer)"
							   : "a job spec object");
		}
		return 0;
	case T_STR:
		if (!json_is_string(v) || json_string_length(v) > (size_t)f->max)
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a string of at most %lld bytes", f->name,
					  (long long)f->max);
		return 0;
	case T_CLIENT:
		if (!json_is_string(v) || !client_name_ok(json_string_value(v), json_string_length(v)))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a client name: 1 to %u bytes of "
					  "A-Z a-z 0-9 . _ -", f->name, JP_REF_MAX);
		return 0;
	case T_BOOL:
		if (!json_is_boolean(v))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be true or false", f->name);
		return 0;
	case T_SPEC:
		if (!json_is_object(v))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a job spec object", f->name);
		return 0;
	case T_ENUM:
		if (!json_is_string(v) || !in_vals(f->vals, json_string_value(v)))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be one of the names in PROTOCOL.md", f->name);
		return 0;
	case T_NUM:
		if (!json_is_number(v) || json_number_value(v) < (double)f->min ||
		    json_number_value(v) > (double)f->max)
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be a number from %lld to %lld", f->name,
					  (long long)f->min, (long long)f->max);
		return 0;
	case T_WAIT:
		return check_wait(v, err);
	case T_ENUMS:
		if (!json_is_array(v))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name,
					  "%s must be an array of names", f->name);
		json_array_foreach(v, i, e) {
			if (json_is_string(e) && in_vals(f->vals, json_string_value(e)))
				continue;
			snprintf(path, sizeof(path), "%s[%zu]", f->name, i);
			return jp_err_set(err, JSCHED_EBAD_REQUEST, path,
					  "%s is not a known name", path);
		}
		return 0;
	}
	return jp_err_set(err, JSCHED_EINTERNAL, NULL, "unknown field type");
}

/* jp__ints_exact: does every integer in v lie within +-(2^53 - 1) (PROTOCOL.md section 1)?
 * jansson reads integers up to 2^63 - 1; beyond what every JSON implementation reads
 * exactly, a request is a malformed frame, wherever the integer is (call args too). */
bool jp__ints_exact(const json_t *v)
{
	const char *key;
	const json_t *e;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		return json_integer_value(v) >= -JP_MAX_INT && json_integer_value(v) <= JP_MAX_INT;
	case JSON_ARRAY:
		json_array_foreach(unconst(v), i, e) {
			if (!jp__ints_exact(e))
				return false;
		}
		return true;
	case JSON_OBJECT:
		json_object_foreach(unconst(v), key, e) {
			if (!jp__ints_exact(e))
				return false;
		}
		return true;
	default:
		return true;
	}
}

int jp_request_parse(const json_t *msg, const struct jp_limits *lim, struct jp_request *out,
		     struct jp_err *err)
{
	struct jp_limits dflt;
	const json_t *id, *op, *v;
	const struct field *fields, *f;
	const char *key;
	int o, rc, ones = 0, ones_seen = 0;

	out->id = JP_ID_NONE;
	out->op = JP_OP_PING;
	out->msg = msg;
	out->fast = NULL;
	if (!lim) {
		jp_limits_default(&dflt);
		lim = &dflt;
	}
	if (!json_is_object(msg))
		return jp_err_set(err, JSCHED_EBAD_REQUEST, NULL, "a request is a JSON object");
	if (!jp__ints_exact(msg))
		return jp_err_set(err, JSCHED_EBAD_FRAME, NULL,
				  "an integer is outside +-(2^53-1), which JSON does not carry exactly");
	id = json_object_get(msg, "id");
	if (!id)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "id", "the request has no id");
	if (!json_is_integer(id) || json_integer_value(id) < 0 ||
	    json_integer_value(id) > JP_MAX_INT)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "id",
				  "id must be an integer from 0 to 2^53-1");
	out->id = (int64_t)json_integer_value(id);
	op = json_object_get(msg, "op");
	if (!json_is_string(op))
		return jp_err_set(err, JSCHED_EBAD_REQUEST, "op",
				  op ? "op must be a string" : "the request has no op");
	o = jp_op_from_name(json_string_value(op));
	if (o < 0)
		return jp_err_set(err, JSCHED_EUNKNOWN_OP, "op", "unknown operation \"%.*s\"",
				  jp_utf8_cut(json_string_value(op), 64), json_string_value(op));
	out->op = (enum jp_op)o;
	fields = op_fields[o];

	json_object_foreach(unconst(msg), key, v) {
		if (strcmp(key, "id") == 0 || strcmp(key, "op") == 0)
			continue;
		for (f = fields; f->name; f++)
			if (f->name[0] == key[0] && strcmp(f->name, key) == 0)
				break;
		if (!f->name)
			return jp_err_set(err, JSCHED_EBAD_REQUEST, key,
					  "%s takes no member \"%.*s\"", jp_op_name(out->op),
					  jp_utf8_cut(key, 64), key);
		rc = check(f, v, lim, err);
		if (rc < 0)
			return rc;
		if (f->flags & ONE)
			ones_seen++;
	}
	for (f = fields; f->name; f++) {
		if (f->flags & ONE)
			ones++;
		if ((f->flags & REQ) && !json_object_get(msg, f->name))
			return jp_err_set(err, JSCHED_EBAD_REQUEST, f->name, "%s needs %s",
					  jp_op_name(out->op), f->name);
	}
	if (ones && ones_seen != 1)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, ones_seen ? "jobs" : "job",
				  "%s takes exactly one of job and jobs", jp_op_name(out->op));
	return 0;
}

int64_t jp_req_int(const struct jp_request *r, const char *key, int64_t dflt)
{
	const json_t *v;
	int64_t n;

	if (r->fast)
		return jp_fast_member_int(r->fast, key, &n) ? n : dflt;
	v = json_object_get(r->msg, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

bool jp_req_bool(const struct jp_request *r, const char *key, bool dflt)
{
	const json_t *v;
	bool b;

	if (r->fast)
		return jp_fast_member_bool(r->fast, key, &b) ? b : dflt;
	v = json_object_get(r->msg, key);

	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

const char *jp_req_str(const struct jp_request *r, const char *key, const char *dflt)
{
	const json_t *v;

	if (r->fast) {
		const char *s = jp_fast_member_str(r->fast, key);

		return s ? s : dflt;
	}
	v = json_object_get(r->msg, key);

	return json_is_string(v) ? json_string_value(v) : dflt;
}

int jp_req_ids(const struct jp_request *r, int64_t **ids, size_t *n, bool *single)
{
	const json_t *one, *many;
	size_t count;
	int64_t *a;

	if (r->fast)
		return jp_fast_ids(r->fast, ids, n, single);
	one = json_object_get(r->msg, "job");
	many = json_object_get(r->msg, "jobs");
	count = one ? 1 : json_array_size(many);
	*ids = NULL;
	*n = 0;
	*single = one != NULL;
	if (!json_is_integer(one) && !json_is_array(many))
		return JSCHED_EBAD_REQUEST;
	a = malloc(count * sizeof(*a));
	if (!a)
		return JSCHED_ENOMEM;
	for (size_t i = 0; i < count; i++)
		a[i] = (int64_t)json_integer_value(one ? one : json_array_get(many, i));
	*ids = a;
	*n = count;
	return 0;
}

unsigned jp_req_states(const struct jp_request *r)
{
	const json_t *v = r->fast ? NULL : json_object_get(r->msg, "states"), *e;
	unsigned mask = 0;
	size_t i;

	if (!json_is_array(v))
		return (1u << JP_NSTATES) - 1;
	json_array_foreach(v, i, e) {
		int s = jp_state_from_name(json_string_value(e));

		if (s >= 0)
			mask |= 1u << s;
	}
	return mask;
}
