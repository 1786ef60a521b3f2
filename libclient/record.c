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

static int64_t ms(const json_t *obj, const char *key)
{
	uint64_t v;
	return jc_get_u64(obj, key, &v) ? (int64_t)v : 0;
}

/* One string of a record on its way into the record's allocation: len bytes at s (NULL:
 * absent), owned (to free) when json_dumps made it. */
struct piece {
	const char *s;
	size_t len;
	char *owned;
};

static struct piece str_piece(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = json_string_value(v);
	return (struct piece){ s, s != NULL ? json_string_length(v) : 0, NULL };
}

/* The JSON text of v (borrowed; NULL: absent): the slice text when it is known, else
 * json_dumps.  *ok turns false when memory ran out. */
static struct piece json_piece(const json_t *v, struct jc_text text, bool *ok)
{
	if (v == NULL)
		return (struct piece){ NULL, 0, NULL };
	if (text.p != NULL)
		return (struct piece){ text.p, text.len, NULL };
	char *d = jc_dup_json(v);
	if (d == NULL)
		*ok = false;
	return (struct piece){ d, d != NULL ? strlen(d) : 0, d };
}

/* Copy piece p to *at as a NUL-terminated string; returns where it went (NULL: absent). */
static char *place(char **at, struct piece p)
{
	if (p.s == NULL)
		return NULL;
	char *d = *at;
	memcpy(d, p.s, p.len);
	d[p.len] = '\0';
	*at += p.len + 1;
	return d;
}

/* jc_result_from_json: see internal.h.  The struct and its strings are one malloc (the
 * strings right after the struct), so a record costs one allocation, not ten; and its JSON
 * text (and a call's value) is the slice of the reply it came in when that is known. */
struct jsched_result *jc_result_from_json(const json_t *rec, struct jc_text text)
{
	uint64_t id;
	if (!json_is_object(rec) || !jc_get_u64(rec, "job", &id) || id == 0)
		return NULL;
	enum { NAME, CLIENT, KIND, PRIORITY, STATE, VALUE, CAUSE, REASON, JSON, NPIECES };
	struct piece pc[NPIECES];
	bool ok = true;
	pc[NAME] = str_piece(rec, "name");
	pc[CLIENT] = str_piece(rec, "client");
	pc[KIND] = str_piece(rec, "kind");
	pc[PRIORITY] = str_piece(rec, "priority");
	pc[STATE] = str_piece(rec, "state");
	pc[CAUSE] = str_piece(rec, "cause");
	pc[REASON] = str_piece(rec, "reason");
	const json_t *value = json_object_get(rec, "value");
	struct jc_text vtext = { NULL, 0 };
	if (json_is_null(value) || json_is_boolean(value)) /* no need to look for these */
		vtext = json_is_null(value) ? (struct jc_text){ "null", 4 }
			: json_is_true(value) ? (struct jc_text){ "true", 4 } : (struct jc_text){ "false", 5 };
	else if (value != NULL && text.p != NULL && !jc_text_member(text, "value", &vtext))
		vtext.p = NULL;
	pc[VALUE] = json_piece(value, vtext, &ok);
	pc[JSON] = json_piece(rec, text, &ok);
	size_t size = sizeof(struct jsched_result);
	for (int i = 0; i < NPIECES; i++)
		size += pc[i].s != NULL ? pc[i].len + 1 : 0;
	struct jsched_result *r = ok ? malloc(size) : NULL;
	if (r != NULL) {
		char *at = (char *)(r + 1);
		*r = (struct jsched_result){ .id = id };
		r->name = place(&at, pc[NAME]);
		r->client = place(&at, pc[CLIENT]);
		uint64_t uid;
		r->uid = jc_get_u64(rec, "uid", &uid) ? (uint32_t)uid : 0;
		r->kind = place(&at, pc[KIND]);
		r->priority = place(&at, pc[PRIORITY]);
		r->state_name = place(&at, pc[STATE]);
		r->state = jsched_state_from_name(r->state_name);
		r->submitted_ms = ms(rec, "submitted_ms");
		r->started_ms = ms(rec, "started_ms");
		r->finished_ms = ms(rec, "finished_ms");
		const json_t *v = json_object_get(rec, "exit_code");
		r->exit_code = json_is_integer(v) ? (int)json_integer_value(v) : -1;
		v = json_object_get(rec, "signal");
		r->signal = json_is_integer(v) ? (int)json_integer_value(v) : 0;
		r->value_json = place(&at, pc[VALUE]);
		r->cause = place(&at, pc[CAUSE]);
		r->reason = place(&at, pc[REASON]);
		r->cancelling = json_is_true(json_object_get(rec, "cancelling"));
		r->json = place(&at, pc[JSON]);
	}
	for (int i = 0; i < NPIECES; i++)
		free(pc[i].owned);
	return r;
}

/* jsched_result_free: see jsched.h.  The strings live in the record's own allocation. */
void jsched_result_free(struct jsched_result *r)
{
	free(r);
}

/* jc_texts_of: see internal.h. */
struct jc_text *jc_texts_of(const json_t *arr, struct jc_text text)
{
	size_t n = json_array_size(arr);
	struct jc_text *t = text.p != NULL && n > 0 ? malloc(n * sizeof *t) : NULL;
	if (t != NULL && !jc_text_elements(text, t, n)) {
		free(t);
		t = NULL;
	}
	return t;
}

/* jc_results_from_json: see internal.h.  Each record's text is its slice of text, when the
 * array's text can be followed element for element (else json_dumps makes it). */
int jc_results_from_json(const json_t *arr, struct jc_text text, struct jsched_results **out)
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
	struct jc_text *texts = jc_texts_of(arr, text);
	for (size_t i = 0; i < n; i++) {
		const json_t *rec = json_array_get(arr, i);
		l->items[i] = jc_result_from_json(rec, texts != NULL ? texts[i] : (struct jc_text){ NULL, 0 });
		if (l->items[i] == NULL) {
			free(texts);
			jsched_results_free(l);
			return json_is_object(rec) ? JSCHED_ENOMEM : JSCHED_EPROTOCOL;
		}
		l->count = i + 1;
	}
	free(texts);
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

/* jc_event_from_json: see internal.h. */
struct jsched_event *jc_event_from_json(const json_t *msg, struct jc_text text)
{
	struct jsched_event *ev = calloc(1, sizeof *ev);
	if (ev == NULL)
		return NULL;
	bool ok = true;
	ev->type = str(msg, "event", &ok);
	jc_get_u64(msg, "seq", &ev->seq);
	const json_t *job = json_object_get(msg, "job");
	struct jc_text jtext = { NULL, 0 };
	if (job != NULL && text.p != NULL && !jc_text_member(text, "job", &jtext))
		jtext.p = NULL;
	if (job != NULL && (ev->job = jc_result_from_json(job, jtext)) == NULL)
		ok = false;
	ev->mode = str(msg, "mode", &ok);
	struct piece whole = json_piece(msg, text, &ok);
	if (whole.s != NULL) {
		if (whole.owned != NULL) {
			ev->json = whole.owned;
		} else if ((ev->json = malloc(whole.len + 1)) != NULL) {
			memcpy(ev->json, whole.s, whole.len);
			ev->json[whole.len] = '\0';
		} else {
			ok = false;
		}
	}
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
