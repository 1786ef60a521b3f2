/* proto/names.c: the wire names of the protocol's enumerations (kinds, priorities,
 * dependency outcomes, states, causes, operations) and the connection limits with their
 * defaults.  Each table is indexed by its enum, so adding a value means adding one row. */
#include "proto/jproto.h"

#include <string.h>

static const char *const kinds[] = {"exec", "call"};
static const char *const priorities[] = {"low", "normal", "high", "critical"};
static const char *const dep_ons[] = {"success", "failure", "any"};
static const char *const states[] = {"waiting", "scheduled", "retrying", "queued", "running", "succeeded",
				     "failed", "cancelled", "expired", "dropped"};
static const char *const causes[] = {
#define JP_XX_CAUSE_NAME(name, wire) wire,
	JP_CAUSE_MAP(JP_XX_CAUSE_NAME)
#undef JP_XX_CAUSE_NAME
};
static const char *const ops[] = {"hello", "submit", "status", "wait", "cancel",
				  "list", "output", "watch", "unwatch", "metrics",
				  "drain", "ping", "reload", "set_client", "shutdown",
				  "pause", "resume", "hold", "release", "hook",
				  "test_clock", "retry", "result"};

_Static_assert(sizeof(states) / sizeof(states[0]) == JP_NSTATES, "states table");
_Static_assert(sizeof(ops) / sizeof(ops[0]) == JP_NOPS, "ops table");
_Static_assert(sizeof(causes) / sizeof(causes[0]) == JP_NCAUSES, "causes table");

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *t, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? t[v] : NULL;
}

static int find(const char *const *t, size_t n, const char *s)
{
	if (!s)
		return -1;
	/* The first byte before the call: a strcmp with each name in turn was 51-62
	 * instructions a lookup for the kind and the op of every request (callgrind), most of
	 * it calls that compared a first byte that differs. */
	for (size_t i = 0; i < n; i++)
		if (t[i][0] == s[0] && strcmp(t[i], s) == 0)
			return (int)i;
	return -1;
}

const char *jp_kind_name(enum jp_kind k) { return name_of(kinds, COUNT(kinds), (int)k); }
int jp_kind_from_name(const char *s) { return find(kinds, COUNT(kinds), s); }
const char *jp_priority_name(enum jp_priority p) { return name_of(priorities, COUNT(priorities), (int)p); }
int jp_priority_from_name(const char *s) { return find(priorities, COUNT(priorities), s); }
const char *jp_dep_on_name(enum jp_dep_on on) { return name_of(dep_ons, COUNT(dep_ons), (int)on); }
int jp_dep_on_from_name(const char *s) { return find(dep_ons, COUNT(dep_ons), s); }
const char *jp_state_name(enum jp_state st) { return name_of(states, COUNT(states), (int)st); }
int jp_state_from_name(const char *s) { return find(states, COUNT(states), s); }
const char *jp_op_name(enum jp_op op) { return name_of(ops, COUNT(ops), (int)op); }
int jp_op_from_name(const char *s) { return find(ops, COUNT(ops), s); }

const char *jp_cause_name(enum jp_cause c)
{
	return c == JP_CAUSE_NONE ? NULL : name_of(causes, COUNT(causes), (int)c);
}

int jp_cause_from_name(const char *s)
{
	int c = find(causes, COUNT(causes), s);

	return c == JP_CAUSE_NONE ? -1 : c;
}

bool jp_state_final(enum jp_state s)
{
	return s >= JP_STATE_SUCCEEDED && s <= JP_STATE_DROPPED;
}

bool jp_op_is_admin(enum jp_op op)
{
	return op == JP_OP_RELOAD || op == JP_OP_SET_CLIENT || op == JP_OP_SHUTDOWN ||
	       op == JP_OP_TEST_CLOCK;
}

/* The limits in one table, so that to_json, parse and the defaults cannot drift apart. */
static const struct {
	const char *name;
	size_t off;
	uint32_t dflt;
} limit_rows[] = {
#define L(f, d) {#f, offsetof(struct jp_limits, f), d}
	L(frame_bytes, JP_DEFAULT_FRAME_BYTES),
	L(reply_frame_bytes, JP_DEFAULT_REPLY_FRAME_BYTES),
	L(jobs_per_submit, 10000),
	L(max_queued, 10000),
	L(argv_items, 4096),
	L(env_items, 4096),
	L(stdin_bytes, 256u * 1024u),
	L(deps_per_job, 1024),
	L(output_bytes, 1024u * 1024u),
	L(events_retained, 4096),
	L(array_elements, 100000),
	L(value_bytes, JP_DEFAULT_VALUE_BYTES),
#undef L
};
_Static_assert(sizeof(limit_rows) / sizeof(limit_rows[0]) * sizeof(uint32_t) ==
		       sizeof(struct jp_limits),
	       "every field of struct jp_limits has a row");

static uint32_t *limit_field(struct jp_limits *l, size_t i)
{
	return (uint32_t *)(void *)((char *)l + limit_rows[i].off);
}

void jp_limits_default(struct jp_limits *l)
{
	for (size_t i = 0; i < COUNT(limit_rows); i++)
		*limit_field(l, i) = limit_rows[i].dflt;
}

json_t *jp_limits_to_json(const struct jp_limits *l)
{
	json_t *o = json_object();
	struct jp_limits copy = *l;

	for (size_t i = 0; o && i < COUNT(limit_rows); i++)
		if (json_object_set_new(o, limit_rows[i].name,
					json_integer(*limit_field(&copy, i))) < 0) {
			json_decref(o);
			o = NULL;
		}
	return o;
}

int jp_limits_set(struct jp_limits *l, const char *name, size_t len, int64_t v)
{
	for (size_t i = 0; i < COUNT(limit_rows); i++) {
		if (strncmp(limit_rows[i].name, name, len) != 0 || limit_rows[i].name[len] != '\0')
			continue;
		if (v < 0 || v > (int64_t)UINT32_MAX)
			return JSCHED_EPROTOCOL;
		*limit_field(l, i) = (uint32_t)v;
		return 0;
	}
	return 0;
}

int jp_limits_parse(const json_t *obj, struct jp_limits *out, struct jp_err *err)
{
	jp_limits_default(out);
	if (!json_is_object(obj))
		return jp_err_set(err, JSCHED_EPROTOCOL, "limits", "limits is not an object");
	for (size_t i = 0; i < COUNT(limit_rows); i++) {
		const json_t *v = json_object_get(obj, limit_rows[i].name);

		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX)
			return jp_err_set(err, JSCHED_EPROTOCOL, NULL, "limits.%s is not a count",
					  limit_rows[i].name);
		*limit_field(out, i) = (uint32_t)json_integer_value(v);
	}
	return 0;
}
