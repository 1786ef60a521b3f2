/* record.c: job records, lists of them, events and captured output, as the caller gets
 * them; and the small JSON helpers the library shares.
 *
 * Records are read leniently, not with the codec's strict jp_record_parse: a state, cause
 * or member this build does not know (a newer daemon's) is kept as its wire name rather
 * than failing the call, as PROTOCOL.md section 11 asks of clients.  Only "job" (the id) is
 * required; a cancel reply's partial records ({"job", "state", "cancelling"}) read the same
 * way.
 */
#include "libclient/internal.h"

#include <stdlib.h>
#include <string.h>

/* jc_dup_json: see internal.h. */
char *jc_dup_json(const json_t *v)
{
	return v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

/* jc_get_u64: see internal.h. */
bool jc_get_u64(const json_t *obj, const char *key, uint64_t *out)
{
	const json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static const char *const state_names[] = {
	[JSCHED_STATE_UNKNOWN] = "unknown",	[JSCHED_STATE_WAITING] = "waiting",
	[JSCHED_STATE_QUEUED] = "queued",	[JSCHED_STATE_RUNNING] = "running",
	[JSCHED_STATE_SUCCEEDED] = "succeeded", [JSCHED_STATE_FAILED] = "failed",
	[JSCHED_STATE_CANCELLED] = "cancelled", [JSCHED_STATE_EXPIRED] = "expired",
	[JSCHED_STATE_DROPPED] = "dropped",
};

/* jsched_state_name: see jsched.h. */
const char *jsched_state_name(enum jsched_state state)
{
	return (unsigned)state <= JSCHED_STATE_DROPPED ? state_names[state] : "unknown";
}

/* jsched_state_from_name: see jsched.h. */
enum jsched_state jsched_state_from_name(const char *name)
{
	for (int s = JSCHED_STATE_WAITING; name != NULL && s <= JSCHED_STATE_DROPPED; s++)
		if (strcmp(name, state_names[s]) == 0)
			return (enum jsched_state)s;
	return JSCHED_STATE_UNKNOWN;
}

/* jsched_state_final: see jsched.h. */
bool jsched_state_final(enum jsched_state state)
{
	return state >= JSCHED_STATE_SUCCEEDED && state <= JSCHED_STATE_DROPPED;
}

/* A string member, copied; NULL when absent.  *ok turns false when memory ran out. */
static char *str(const json_t *obj, const char *key, bool *ok)
{
	const char *s = json_string_value(json_object_get(obj, key));
	if (s == NULL)
		return NULL;
	char *d = strdup(s);
	if (d == NULL)
		*ok = false;
	return d;
}

static int64_t ms(const json_t *obj, const char *key)
{
	uint64_t v;
	return jc_get_u64(obj, key, &v) ? (int64_t)v : 0;
}

/* jc_result_from_json: see internal.h. */
struct jsched_result *jc_result_from_json(const json_t *rec)
{
	uint64_t id;
	if (!json_is_object(rec) || !jc_get_u64(rec, "job", &id) || id == 0)
		return NULL;
	struct jsched_result *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	bool ok = true;
	r->id = id;
	r->name = str(rec, "name", &ok);
	r->client = str(rec, "client", &ok);
	uint64_t uid;
	r->uid = jc_get_u64(rec, "uid", &uid) ? (uint32_t)uid : 0;
	r->kind = str(rec, "kind", &ok);
	r->priority = str(rec, "priority", &ok);
	r->state_name = str(rec, "state", &ok);
	r->state = jsched_state_from_name(r->state_name);
	r->submitted_ms = ms(rec, "submitted_ms");
	r->started_ms = ms(rec, "started_ms");
	r->finished_ms = ms(rec, "finished_ms");
	const json_t *v = json_object_get(rec, "exit_code");
	r->exit_code = json_is_integer(v) ? (int)json_integer_value(v) : -1;
	v = json_object_get(rec, "signal");
	r->signal = json_is_integer(v) ? (int)json_integer_value(v) : 0;
	v = json_object_get(rec, "value");
	if (v != NULL && (r->value_json = jc_dup_json(v)) == NULL)
		ok = false;
	r->cause = str(rec, "cause", &ok);
	r->reason = str(rec, "reason", &ok);
	r->cancelling = json_is_true(json_object_get(rec, "cancelling"));
	if ((r->json = jc_dup_json(rec)) == NULL)
		ok = false;
	if (!ok) {
		jsched_result_free(r);
		return NULL;
	}
	return r;
}

/* jsched_result_free: see jsched.h. */
void jsched_result_free(struct jsched_result *r)
{
	if (r == NULL)
		return;
	free(r->name);
	free(r->client);
	free(r->kind);
	free(r->priority);
	free(r->state_name);
	free(r->value_json);
	free(r->cause);
	free(r->reason);
	free(r->json);
	free(r);
}

/* jc_results_from_json: see internal.h. */
int jc_results_from_json(const json_t *arr, struct jsched_results **out)
{
	*out = NULL;
	if (!json_is_array(arr))
		return JSCHED_EPROTOCOL;
	struct jsched_results *l = calloc(1, sizeof *l);
	size_t n = json_array_size(arr);
	if (l == NULL || (l->items = calloc(n > 0 ? n : 1, sizeof *l->items)) == NULL) {
		free(l);
		return JSCHED_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *rec = json_array_get(arr, i);
		l->items[i] = jc_result_from_json(rec);
		if (l->items[i] == NULL) {
			jsched_results_free(l);
			return json_is_object(rec) ? JSCHED_ENOMEM : JSCHED_EPROTOCOL;
		}
		l->count = i + 1;
	}
	*out = l;
	return 0;
}

/* jsched_results_free: see jsched.h. */
void jsched_results_free(struct jsched_results *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->count; i++)
		jsched_result_free(l->items[i]);
	free(l->items);
	free(l);
}

/* jc_event_from_json: see internal.h. */
struct jsched_event *jc_event_from_json(const json_t *msg)
{
	struct jsched_event *ev = calloc(1, sizeof *ev);
	if (ev == NULL)
		return NULL;
	bool ok = true;
	ev->type = str(msg, "event", &ok);
	jc_get_u64(msg, "seq", &ev->seq);
	const json_t *job = json_object_get(msg, "job");
	if (job != NULL && (ev->job = jc_result_from_json(job)) == NULL)
		ok = false;
	ev->mode = str(msg, "mode", &ok);
	if ((ev->json = jc_dup_json(msg)) == NULL)
		ok = false;
	if (!ok || ev->type == NULL) {
		jsched_event_free(ev);
		return NULL;
	}
	return ev;
}

/* jsched_event_free: see jsched.h. */
void jsched_event_free(struct jsched_event *ev)
{
	if (ev == NULL)
		return;
	free(ev->type);
	jsched_result_free(ev->job);
	free(ev->mode);
	free(ev->json);
	free(ev);
}

/* jsched_output_free: see jsched.h. */
void jsched_output_free(struct jsched_output *o)
{
	if (o == NULL)
		return;
	free(o->out);
	free(o->err);
	free(o);
}

/* jsched_free: see jsched.h. */
void jsched_free(void *p)
{
	free(p);
}
