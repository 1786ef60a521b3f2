/* record.c: job records, lists of them, events and captured output, as the caller gets
 * them; and the small JSON helpers the library shares.
 *
 * Records are read leniently, not with the codec's strict jp_record_parse: a state, cause
 * or member this build does not know (a newer daemon's) is kept as its wire name rather
 * than failing the call, as PROTOCOL.md section 11 asks of clients.  Only "job" (the id) is
 * required; a cancel reply's partial records ({"job", "state", "cancelling"}) read the same
 * way.
 *
 * A record is one allocation (the struct, then its strings), and its JSON text is copied
 * from the reply's bytes when text.c can find them.  The plain records of a wait or status
 * reply are read straight from the text, with no jansson tree at all (the second half of
 * the file; libclient/README.md has the figures).
 */
#include "libclient/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* jc_dup_json: see internal.h.  json_dumps's bytes, written by jp_buf_append_json. */
char *jc_dup_json(const json_t *v)
{
	struct jp_buf b = { 0 };
	if (v == NULL || jp_buf_append_json(&b, v) < 0 || jp_buf_append(&b, "", 1) < 0) {
		jp_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
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
	[JSCHED_STATE_DROPPED] = "dropped",	[JSCHED_STATE_SCHEDULED] = "scheduled",
	[JSCHED_STATE_RETRYING] = "retrying",
};

/* jsched_state_name: see jsched.h. */
const char *jsched_state_name(enum jsched_state state)
{
	return (unsigned)state <= JC_STATE_LAST ? state_names[state] : "unknown";
}

/* jsched_state_from_name: see jsched.h. */
enum jsched_state jsched_state_from_name(const char *name)
{
	for (int s = JSCHED_STATE_WAITING; name != NULL && s <= JC_STATE_LAST; s++)
		if (name[0] == state_names[s][0] && strcmp(name, state_names[s]) == 0) /* a call for one */
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

enum { NAME, CLIENT, KIND, PRIORITY, STATE, VALUE, CAUSE, REASON, JSON, FN, COMMAND, NPIECES };

/* The record of the scalars in *tmpl and the strings pc[] (one malloc: the struct, then the
 * strings), or NULL when memory ran out. */
static struct jsched_result *assemble(const struct jsched_result *tmpl, const struct piece *pc)
{
	size_t size = sizeof(struct jsched_result);
	for (int i = 0; i < NPIECES; i++)
		size += pc[i].s != NULL ? pc[i].len + 1 : 0;
	struct jsched_result *r = malloc(size);
	if (r == NULL)
		return NULL;
	char *at = (char *)(r + 1);
	*r = *tmpl;
	r->name = place(&at, pc[NAME]);
	r->client = place(&at, pc[CLIENT]);
	r->kind = place(&at, pc[KIND]);
	r->priority = place(&at, pc[PRIORITY]);
	r->state_name = place(&at, pc[STATE]);
	r->state = jsched_state_from_name(r->state_name);
	r->value_json = place(&at, pc[VALUE]);
	r->cause = place(&at, pc[CAUSE]);
	r->reason = place(&at, pc[REASON]);
	r->json = place(&at, pc[JSON]);
	r->fn = place(&at, pc[FN]);
	r->command = place(&at, pc[COMMAND]);
	return r;
}

/* jc_result_from_json: see internal.h.  The struct and its strings are one malloc (the
 * strings right after the struct), so a record costs one allocation, not ten; and its JSON
 * text (and a call's value) is the slice of the reply it came in when that is known. */
struct jsched_result *jc_result_from_json(const json_t *rec, struct jc_text text)
{
	uint64_t id;
	if (!json_is_object(rec) || !jc_get_u64(rec, "job", &id) || id == 0)
		return NULL;
	struct piece pc[NPIECES];
	bool ok = true;
	pc[NAME] = str_piece(rec, "name");
	pc[CLIENT] = str_piece(rec, "client");
	pc[KIND] = str_piece(rec, "kind");
	pc[PRIORITY] = str_piece(rec, "priority");
	pc[STATE] = str_piece(rec, "state");
	pc[CAUSE] = str_piece(rec, "cause");
	pc[REASON] = str_piece(rec, "reason");
	pc[FN] = str_piece(rec, "fn");
	pc[COMMAND] = str_piece(rec, "command");
	const json_t *value = json_object_get(rec, "value");
	struct jc_text vtext = { NULL, 0 };
	if (json_is_null(value) || json_is_boolean(value)) /* no need to look for these */
		vtext = json_is_null(value) ? (struct jc_text){ "null", 4 }
			: json_is_true(value) ? (struct jc_text){ "true", 4 } : (struct jc_text){ "false", 5 };
	else if (value != NULL && text.p != NULL && !jc_text_member(text, "value", &vtext))
		vtext.p = NULL;
	pc[VALUE] = json_piece(value, vtext, &ok);
	pc[JSON] = json_piece(rec, text, &ok);
	uint64_t uid;
	const json_t *exit_code = json_object_get(rec, "exit_code"), *sig = json_object_get(rec, "signal");
	struct jsched_result tmpl = {
		.id = id,
		.uid = jc_get_u64(rec, "uid", &uid) ? (uint32_t)uid : 0,
		.submitted_ms = ms(rec, "submitted_ms"),
		.started_ms = ms(rec, "started_ms"),
		.finished_ms = ms(rec, "finished_ms"),
		.exit_code = json_is_integer(exit_code) ? (int)json_integer_value(exit_code) : -1,
		.signal = json_is_integer(sig) ? (int)json_integer_value(sig) : 0,
		.cancelling = json_is_true(json_object_get(rec, "cancelling")),
		.held = json_is_true(json_object_get(rec, "held")),
		.array_id = json_is_integer(json_object_get(rec, "array_id"))
				    ? (uint64_t)json_integer_value(json_object_get(rec, "array_id")) : 0,
		.array_index = json_is_integer(json_object_get(rec, "array_index"))
				       ? (int64_t)json_integer_value(json_object_get(rec, "array_index")) : 0,
		.not_before_ms = ms(rec, "not_before"),
		.attempt = json_is_integer(json_object_get(rec, "attempt"))
				   ? (uint32_t)json_integer_value(json_object_get(rec, "attempt")) : 0,
		.next_attempt_ms = ms(rec, "next_attempt_ms"),
		.result_bytes = json_is_integer(json_object_get(rec, "result_bytes"))
					? (uint64_t)json_integer_value(json_object_get(rec, "result_bytes")) : 0,
		.result_omitted = json_is_true(json_object_get(rec, "result_omitted")),
	};
	struct jsched_result *r = ok ? assemble(&tmpl, pc) : NULL;
	for (int i = 0; i < NPIECES; i++)
		free(pc[i].owned);
	return r;
}

/* ---- records read straight from a reply's text ----------------------------------------
 *
 * A wait for 1,000 tiny jobs brings back 1,000 records, and jansson building a tree of them
 * (a hash table per record, an allocation per value) was half of the client's CPU.  The
 * records the daemon writes are flat objects of plain members, so for them this reads the
 * members the struct needs straight from the text, with no tree.  It accepts only a strict
 * subset of JSON whose meaning is plain: member names and strings of ASCII that JSON
 * writes as itself (jp_json_plain: 0x20-0x7f but '"' and '\\', so no escapes), integers
 * of at most 15 digits, true, false, null, no nested values but one level of them in a
 * member the struct does not read (an exec job's "usage"), no repeated member.  Anything
 * else (an escape, UTF-8, a number with a fraction, a deeper value, a repeated member,
 * bad syntax) makes it give up, and the reply goes through jansson and
 * jc_result_from_json as before, which decide what is valid and what it means.
 * So a reply read here gives the same records as one read there. */

struct cursor {
	const char *p, *end;
};

static void ws_run(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

/* ws: skips whitespace.  The daemon writes compact JSON, so the next byte is nearly
 * always past ' ' (every JSON whitespace byte is at or below it): one test inline, and
 * the loop only when it may be whitespace. */
static inline void ws(struct cursor *c)
{
	if (c->p < c->end && (unsigned char)*c->p <= ' ')
		ws_run(c);
}

/* lit, plain_string: inlined where they are used (each was a call per member of a record,
 * with the cursor written back and read again around it). */
static inline __attribute__((always_inline)) bool lit(struct cursor *c, char ch)
{
	ws(c);
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

/* A plain string holds the bytes of jp_json_plain only (proto/: printable ASCII and DEL
 * but the quote and the backslash).  One load per byte instead of four comparisons: the
 * string loop below was the client's largest part of a record read (callgrind, noop
 * jsched_submit_wait: 1,760 of 8,400 instructions per round trip); then sixteen bytes a
 * step (jp_json_plain_end), the client 7,024 -> 6,702 instructions per round trip. */
/* A plain string (the cursor on its quote): its bytes without the quotes. */
static inline __attribute__((always_inline)) bool plain_string(struct cursor *c, struct jc_text *out)
{
	const char *p = c->p, *end = c->end;
	if (p >= end || *p != '"')
		return false;
	const char *s = ++p;
	p = (const char *)jp_json_plain_end((const unsigned char *)p, (const unsigned char *)end);
	if (p >= end || *p != '"')
		return false; /* the end, an escape, a control or non-ASCII byte */
	*out = (struct jc_text){ s, (size_t)(p - s) };
	c->p = p + 1;
	return true;
}

/* What a plain value is (V_OBJECT: a flat object of plain values, plain_flat). */
enum vtype { V_STRING, V_INT, V_TRUE, V_FALSE, V_NULL, V_OBJECT };

struct value {
	enum vtype type;
	struct jc_text text; /* the whole token; a string: without its quotes */
	int64_t i;	     /* V_INT */
};

/* eight_digits: whether the 8 bytes at p are all decimal digits, and then their value in
 * *v (SWAR: a digit's high nibble is 3 and it stays below 0x3a with 6 added; then pairs,
 * fours and eights of digits are combined by three multiplies).  Little-endian only;
 * elsewhere false, and the caller reads the digits one at a time. */
static inline bool eight_digits(const char *p, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w;

	memcpy(&w, p, 8);
	if (((w & 0xF0F0F0F0F0F0F0F0u) | (((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) >> 4)) !=
	    0x3333333333333333u)
		return false;
	w = (w & 0x0F0F0F0F0F0F0F0Fu) * 2561 >> 8;
	w = (w & 0x00FF00FF00FF00FFu) * 6553601 >> 16;
	*v = (w & 0x0000FFFF0000FFFFu) * 42949672960001u >> 32;
	return true;
#else
	(void)p;
	(void)v;
	return false;
#endif
}

/* short_eq: whether the n bytes (2 to 16) at a and b are the same, by two loads of each
 * that overlap (of 8, 4 or 2 bytes), within the n bytes: no call (memcmp was a call per
 * member of a record, ~25 instructions each). */
static inline bool short_eq(const char *a, const char *b, size_t n)
{
	if (n >= 8) {
		uint64_t x, y, x2, y2;

		memcpy(&x, a, 8), memcpy(&y, b, 8), memcpy(&x2, a + n - 8, 8), memcpy(&y2, b + n - 8, 8);
		return ((x ^ y) | (x2 ^ y2)) == 0;
	}
	if (n >= 4) {
		uint32_t x, y, x2, y2;

		memcpy(&x, a, 4), memcpy(&y, b, 4), memcpy(&x2, a + n - 4, 4), memcpy(&y2, b + n - 4, 4);
		return ((x ^ y) | (x2 ^ y2)) == 0;
	}
	uint16_t x, y, x2, y2;

	memcpy(&x, a, 2), memcpy(&y, b, 2), memcpy(&x2, a + n - 2, 2), memcpy(&y2, b + n - 2, 2);
	return ((x ^ y) | (x2 ^ y2)) == 0;
}

static bool word(struct cursor *c, const char *w, size_t n)
{
	if ((size_t)(c->end - c->p) < n || !short_eq(c->p, w, n))
		return false;
	c->p += n;
	return true;
}

/* plain_value_at: a plain value at the cursor (after whitespace) into *v.  Inlined in
 * plain_record, whose members it reads (a call per member, with *v and the cursor written
 * back and read again around it); plain_value is the same out of line. */
static inline __attribute__((always_inline)) bool plain_value_at(struct cursor *c, struct value *v)
{
	ws(c);
	const char *start = c->p;
	if (c->p >= c->end)
		return false;
	if (*c->p == '"') {
		v->type = V_STRING;
		return plain_string(c, &v->text);
	}
	if (*c->p == 't' || *c->p == 'f' || *c->p == 'n') {
		bool ok = word(c, "true", 4) ? (v->type = V_TRUE, true)
			: word(c, "false", 5) ? (v->type = V_FALSE, true)
			: word(c, "null", 4) ? (v->type = V_NULL, true) : false;
		v->text = (struct jc_text){ start, (size_t)(c->p - start) };
		return ok;
	}
	const char *p = c->p;
	bool neg = *p == '-';
	if (neg)
		p++;
	const char *digits = p;
	/* At most 16 digits are looked at (a 16th makes it too long): the bound once. */
	const char *stop = c->end - p > 16 ? p + 16 : c->end;
	int64_t x = 0;
	uint64_t first8;
	/* The first eight digits at once (a time in ms has 13: ten instructions a digit
	 * were a tenth of the client's per noop round trip, callgrind). */
	if (stop - p >= 8 && eight_digits(p, &first8)) {
		x = (int64_t)first8;
		p += 8;
	}
	while (p < stop && (unsigned)(*p - '0') <= 9)
		x = x * 10 + (*p++ - '0');
	size_t nd = (size_t)(p - digits);
	if (nd == 0 || nd > 15 || (nd > 1 && *digits == '0'))
		return false;
	if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))
		return false; /* a real, or too long: jansson decides */
	c->p = p;
	v->type = V_INT;
	v->i = neg ? -x : x;
	v->text = (struct jc_text){ start, (size_t)(p - start) };
	return true;
}

static bool plain_value(struct cursor *c, struct value *v)
{
	return plain_value_at(c, v);
}

static bool key_is(struct jc_text k, const char *name)
{
	size_t n = strlen(name);
	return k.len == n && memcmp(k.p, name, n) == 0;
}

#define MAX_PLAIN_MEMBERS 32

/* plain_flat: a flat object at the cursor ('{' next), whose members are plain values, none
 * repeated (jansson refuses a frame with a repeated member, at any depth): an exec job's
 * "usage".  Only its bytes are kept, in the record's text.  False when it is not one. */
static bool plain_flat(struct cursor *c, struct value *v)
{
	struct jc_text keys[MAX_PLAIN_MEMBERS];
	size_t n = 0;
	const char *start = c->p;
	if (!lit(c, '{'))
		return false;
	if (!lit(c, '}')) {
		do {
			struct value x;
			ws(c);
			if (n == MAX_PLAIN_MEMBERS || !plain_string(c, &keys[n]) || !lit(c, ':') || !plain_value(c, &x))
				return false;
			for (size_t i = 0; i < n; i++)
				if (keys[i].len == keys[n].len && memcmp(keys[i].p, keys[n].p, keys[n].len) == 0)
					return false;
			n++;
		} while (lit(c, ','));
		if (!lit(c, '}'))
			return false;
	}
	v->type = V_OBJECT;
	v->text = (struct jc_text){ start, (size_t)(c->p - start) };
	return true;
}

/* The members of a record that plain_record reads, by number (a bit each in its mask of
 * the members seen). */
enum plain_key {
	K_JOB, K_NAME, K_CLIENT, K_KIND, K_PRIORITY, K_STATE, K_CAUSE, K_REASON, K_FN, K_COMMAND, K_UID,
	K_SUBMITTED, K_STARTED, K_FINISHED, K_EXIT_CODE, K_SIGNAL, K_CANCELLING, K_HELD, K_ARRAY_ID,
	K_ARRAY_INDEX, K_NOT_BEFORE, K_ATTEMPT, K_NEXT_ATTEMPT, K_RESULT_BYTES, K_RESULT_OMITTED, K_VALUE,
	K_UNKNOWN
};

static const char *const plain_keys[K_UNKNOWN] = {
	[K_JOB] = "job", [K_NAME] = "name", [K_CLIENT] = "client", [K_KIND] = "kind",
	[K_PRIORITY] = "priority", [K_STATE] = "state", [K_CAUSE] = "cause", [K_REASON] = "reason",
	[K_FN] = "fn", [K_COMMAND] = "command", [K_UID] = "uid", [K_SUBMITTED] = "submitted_ms",
	[K_STARTED] = "started_ms", [K_FINISHED] = "finished_ms", [K_EXIT_CODE] = "exit_code",
	[K_SIGNAL] = "signal", [K_CANCELLING] = "cancelling", [K_HELD] = "held", [K_ARRAY_ID] = "array_id",
	[K_ARRAY_INDEX] = "array_index", [K_NOT_BEFORE] = "not_before", [K_ATTEMPT] = "attempt",
	[K_NEXT_ATTEMPT] = "next_attempt_ms", [K_RESULT_BYTES] = "result_bytes",
	[K_RESULT_OMITTED] = "result_omitted", [K_VALUE] = "value",
};

/* plain_key_of: which member k names.  The candidates are picked by length and first
 * letter, so a name costs one memcmp, not a comparison with each of the 26 (that chain of
 * key_is was a fifth of the client's instructions per record: 1,250 of 6,300). */
static enum plain_key plain_key_of(struct jc_text k)
{
	enum plain_key c = K_UNKNOWN;
	if (k.len < 2)
		return K_UNKNOWN;
	switch (k.len) {
	case 2: c = K_FN; break;
	case 3: c = k.p[0] == 'j' ? K_JOB : K_UID; break;
	case 4: c = k.p[0] == 'n' ? K_NAME : k.p[0] == 'k' ? K_KIND : K_HELD; break;
	case 5: c = k.p[0] == 's' ? K_STATE : k.p[0] == 'c' ? K_CAUSE : K_VALUE; break;
	case 6: c = k.p[0] == 'c' ? K_CLIENT : k.p[0] == 'r' ? K_REASON : K_SIGNAL; break;
	case 7: c = k.p[0] == 'c' ? K_COMMAND : K_ATTEMPT; break;
	case 8: c = k.p[0] == 'p' ? K_PRIORITY : K_ARRAY_ID; break;
	case 9: c = K_EXIT_CODE; break;
	case 10: c = k.p[0] == 's' ? K_STARTED : k.p[0] == 'c' ? K_CANCELLING : K_NOT_BEFORE; break;
	case 11: c = k.p[0] == 'f' ? K_FINISHED : K_ARRAY_INDEX; break;
	case 12: c = k.p[0] == 's' ? K_SUBMITTED : K_RESULT_BYTES; break;
	case 14: c = K_RESULT_OMITTED; break;
	case 15: c = K_NEXT_ATTEMPT; break;
	default: return K_UNKNOWN;
	}
	return short_eq(k.p, plain_keys[c], k.len) && plain_keys[c][k.len] == '\0' ? c : K_UNKNOWN;
}

/* One record at the cursor: true with *out set (NULL when memory ran out), false when it
 * is not plain. */
static bool plain_record(struct cursor *c, struct jsched_result **out)
{
	ws(c);
	const char *start = c->p;
	if (!lit(c, '{'))
		return false;
	struct jc_text others[MAX_PLAIN_MEMBERS]; /* the members not read, to find repeats */
	size_t nkeys = 0, nothers = 0;
	uint32_t seen = 0;
	struct piece pc[NPIECES] = { 0 };
	struct jsched_result tmpl = { .exit_code = -1 };
	ws(c);
	if (c->p < c->end && *c->p == '}') {
		return false; /* no "job": jc_result_from_json says what that is */
	}
	for (;;) {
		struct jc_text k;
		struct value v;
		ws(c);
		if (nkeys == MAX_PLAIN_MEMBERS || !plain_string(c, &k) || !lit(c, ':'))
			return false;
		nkeys++;
		enum plain_key key = plain_key_of(k);
		ws(c); /* plain_value_at's own then costs a test */
		/* A member the struct does not read may be a flat object ("usage"); the
		 * members it reads are never objects here (a value that is one: jansson). */
		if (c->p < c->end && *c->p == '{' ? key != K_UNKNOWN || !plain_flat(c, &v) : !plain_value_at(c, &v))
			return false;
		if (key == K_UNKNOWN) {
			for (size_t i = 0; i < nothers; i++)
				if (others[i].len == k.len && memcmp(others[i].p, k.p, k.len) == 0)
					return false; /* repeated: jansson refuses the frame */
			others[nothers++] = k;
		} else if (seen & (UINT32_C(1) << key)) {
			return false; /* repeated */
		}
		if (key != K_UNKNOWN)
			seen |= UINT32_C(1) << key;
		struct piece str = { v.type == V_STRING ? v.text.p : NULL, v.text.len, NULL };
		bool nonneg = v.type == V_INT && v.i >= 0;
		switch (key) {
		case K_JOB:
			if (!nonneg || v.i == 0)
				return false;
			tmpl.id = (uint64_t)v.i;
			break;
		case K_NAME: pc[NAME] = str; break;
		case K_CLIENT: pc[CLIENT] = str; break;
		case K_KIND: pc[KIND] = str; break;
		case K_PRIORITY: pc[PRIORITY] = str; break;
		case K_STATE: pc[STATE] = str; break;
		case K_CAUSE: pc[CAUSE] = str; break;
		case K_REASON: pc[REASON] = str; break;
		case K_FN: pc[FN] = str; break;
		case K_COMMAND: pc[COMMAND] = str; break;
		case K_UID: tmpl.uid = nonneg ? (uint32_t)v.i : 0; break;
		case K_SUBMITTED: tmpl.submitted_ms = nonneg ? v.i : 0; break;
		case K_STARTED: tmpl.started_ms = nonneg ? v.i : 0; break;
		case K_FINISHED: tmpl.finished_ms = nonneg ? v.i : 0; break;
		case K_EXIT_CODE: tmpl.exit_code = v.type == V_INT ? (int)v.i : -1; break;
		case K_SIGNAL: tmpl.signal = v.type == V_INT ? (int)v.i : 0; break;
		case K_CANCELLING: tmpl.cancelling = v.type == V_TRUE; break;
		case K_HELD: tmpl.held = v.type == V_TRUE; break;
		case K_ARRAY_ID: tmpl.array_id = nonneg ? (uint64_t)v.i : 0; break;
		case K_ARRAY_INDEX: tmpl.array_index = nonneg ? v.i : 0; break;
		case K_NOT_BEFORE: tmpl.not_before_ms = nonneg ? v.i : 0; break;
		case K_ATTEMPT: tmpl.attempt = nonneg ? (uint32_t)v.i : 0; break;
		case K_NEXT_ATTEMPT: tmpl.next_attempt_ms = nonneg ? v.i : 0; break;
		case K_RESULT_BYTES: tmpl.result_bytes = nonneg ? (uint64_t)v.i : 0; break;
		case K_RESULT_OMITTED: tmpl.result_omitted = v.type == V_TRUE; break;
		case K_VALUE:
			/* As jc_dup_json would write it: a string with its quotes. */
			pc[VALUE] = v.type == V_STRING ? (struct piece){ v.text.p - 1, v.text.len + 2, NULL }
						      : (struct piece){ v.text.p, v.text.len, NULL };
			break;
		case K_UNKNOWN: break;
		}
		/* '}' or ',' after one skip of whitespace (lit's two were a third of the
		 * record's whitespace tests) */
		ws(c);
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			break;
		}
		if (c->p >= c->end || *c->p != ',')
			return false;
		c->p++;
	}
	if (!(seen & (UINT32_C(1) << K_JOB)))
		return false;
	pc[JSON] = (struct piece){ start, (size_t)(c->p - start), NULL };
	*out = assemble(&tmpl, pc);
	return true;
}

/* plain_records: an array of plain records at the cursor into a new list (*out, NULL when
 * memory ran out); false when it is not one. */
static bool plain_records(struct cursor *c, struct jsched_results **out)
{
	size_t cap = 0;
	struct jsched_results *l = calloc(1, sizeof *l);
	*out = NULL;
	if (!lit(c, '[') || l == NULL) {
		free(l);
		return l == NULL;
	}
	ws(c);
	if (c->p < c->end && *c->p == ']') {
		c->p++;
		*out = l;
		return true;
	}
	bool ok = true;
	do {
		if (l->count == cap) {
			size_t ncap = cap > 0 ? 2 * cap : 64;
			struct jsched_result **items = realloc(l->items, ncap * sizeof *items);
			if (items == NULL) {
				ok = false;
				break;
			}
			l->items = items;
			cap = ncap;
		}
		struct jsched_result *r = NULL;
		if (!plain_record(c, &r) || r == NULL) {
			ok = false;
			break;
		}
		l->items[l->count++] = r;
	} while (lit(c, ','));
	if (!ok || !lit(c, ']')) {
		jsched_results_free(l);
		return false;
	}
	*out = l;
	return true;
}

/* plain_ids: an array of ids (integers > 0) at the cursor into *ids (malloc'd) and *n;
 * false when it is not one, is empty, or memory ran out (nothing kept). */
static bool plain_ids(struct cursor *c, uint64_t **ids, size_t *n)
{
	size_t cap = 0, k = 0;
	uint64_t *v = NULL;
	if (!lit(c, '['))
		return false;
	do {
		struct value x;
		if (!plain_value(c, &x) || x.type != V_INT || x.i <= 0)
			goto fail;
		if (k == cap) {
			size_t ncap = cap > 0 ? 2 * cap : 16;
			uint64_t *nv = realloc(v, ncap * sizeof *nv);
			if (nv == NULL)
				goto fail;
			v = nv;
			cap = ncap;
		}
		v[k++] = (uint64_t)x.i;
	} while (lit(c, ','));
	if (!lit(c, ']'))
		goto fail;
	*ids = v;
	*n = k;
	return true;
fail:
	free(v);
	return false;
}

/* plain_stream: one stream of a submit's "output" at the cursor, {"data": base64,
 * "bytes": N, "truncated": bool} (as jp_output_stream_parse reads it: data and truncated
 * required), decoded into *data (malloc'd, NUL-terminated even when empty) and *len.
 * False when it is not that (a member not listed, repeated, bad base64) or memory ran
 * out, with nothing kept. */
static bool plain_stream(struct cursor *c, char **data, size_t *len, bool *truncated)
{
	struct jc_text text = { NULL, 0 };
	bool seen_bytes = false, seen_trunc = false;
	if (!lit(c, '{'))
		return false;
	do {
		struct jc_text k;
		struct value v;
		ws(c);
		if (!plain_string(c, &k) || !lit(c, ':') || !plain_value(c, &v))
			return false;
		if (key_is(k, "data") && text.p == NULL && v.type == V_STRING)
			text = v.text;
		else if (key_is(k, "bytes") && !seen_bytes && v.type == V_INT)
			seen_bytes = true;
		else if (key_is(k, "truncated") && !seen_trunc && (v.type == V_TRUE || v.type == V_FALSE))
			seen_trunc = true, *truncated = v.type == V_TRUE;
		else
			return false;
	} while (lit(c, ','));
	unsigned char *d = NULL;
	if (!lit(c, '}') || text.p == NULL || !seen_trunc ||
	    jp_base64_decode(text.p, text.len, SIZE_MAX, &d, len) < 0)
		return false;
	if (d == NULL && (d = calloc(1, 1)) == NULL) /* empty: still a NUL-terminated buffer */
		return false;
	*data = (char *)d;
	return true;
}

/* plain_output: a submit's "output" at the cursor, {"complete": bool, "stdout": stream,
 * "stderr": stream}, into *out (the caller's); false when it is not that shape. */
static bool plain_output(struct cursor *c, struct jsched_output **out)
{
	struct jsched_output *o = calloc(1, sizeof *o);
	bool seen_complete = false;
	if (o == NULL || !lit(c, '{'))
		goto fail;
	do {
		struct jc_text k;
		struct value v;
		ws(c);
		if (!plain_string(c, &k) || !lit(c, ':'))
			goto fail;
		if (key_is(k, "stdout") && o->out == NULL) {
			if (!plain_stream(c, &o->out, &o->out_len, &o->out_truncated))
				goto fail;
		} else if (key_is(k, "stderr") && o->err == NULL) {
			if (!plain_stream(c, &o->err, &o->err_len, &o->err_truncated))
				goto fail;
		} else if (key_is(k, "complete") && !seen_complete) {
			if (!plain_value(c, &v) || (v.type != V_TRUE && v.type != V_FALSE))
				goto fail;
			seen_complete = true;
			o->complete = v.type == V_TRUE;
		} else {
			goto fail;
		}
	} while (lit(c, ','));
	if (!lit(c, '}') || o->out == NULL || o->err == NULL)
		goto fail;
	*out = o;
	return true;
fail:
	jsched_output_free(o);
	return false;
}

/* jc_fast_free: see internal.h. */
void jc_fast_free(struct jc_fast *f)
{
	jsched_results_free(f->results);
	jsched_result_free(f->record);
	jsched_output_free(f->output);
	free(f->ids);
	*f = (struct jc_fast){ .kind = f->kind, .want_record = f->want_record, .want_output = f->want_output };
}

/* jc_fast_from_text: see internal.h.  Every member is known and seen once; a record or a
 * list that is not plain, or memory that runs out, gives up with nothing kept. */
int jc_fast_from_text(const char *text, size_t len, int64_t *id, struct jc_fast *f)
{
	struct cursor c = { text, text + len };
	bool seen_id = false, seen_ok = false, seen_job = false, seen_existing = false;
	struct jc_fast got = { .kind = f->kind, .want_record = f->want_record, .want_output = f->want_output };
	if (f->kind == JC_FAST_NONE || !lit(&c, '{'))
		return 0;
	do {
		struct jc_text k;
		struct value v;
		ws(&c);
		if (!plain_string(&c, &k) || !lit(&c, ':'))
			goto out;
		if (key_is(k, "id") && !seen_id) {
			if (!plain_value(&c, &v) || v.type != V_INT)
				goto out;
			*id = v.i;
			seen_id = true;
		} else if (key_is(k, "ok") && !seen_ok) {
			if (!plain_value(&c, &v) || v.type != V_TRUE)
				goto out;
			seen_ok = true;
		} else if (key_is(k, "jobs") && got.kind == JC_FAST_RECORDS && got.results == NULL) {
			if (!plain_records(&c, &got.results) || got.results == NULL)
				goto out;
		} else if (key_is(k, "job") && got.kind == JC_FAST_RECORD && !seen_job) {
			seen_job = true;
			if (!plain_record(&c, &got.record) || got.record == NULL)
				goto out;
		} else if (key_is(k, "job") && got.kind == JC_FAST_SUBMIT && !seen_job) {
			seen_job = true;
			if (!plain_value(&c, &v) || v.type != V_INT || v.i <= 0)
				goto out;
			got.job = (uint64_t)v.i;
		} else if (key_is(k, "record") && got.kind == JC_FAST_SUBMIT && got.record == NULL) {
			if (!plain_record(&c, &got.record) || got.record == NULL)
				goto out;
		} else if (key_is(k, "output") && got.kind == JC_FAST_SUBMIT && got.want_output && got.output == NULL) {
			if (!plain_output(&c, &got.output))
				goto out;
		} else if (key_is(k, "jobs") && got.kind == JC_FAST_IDS && !seen_job) {
			seen_job = true;
			if (!plain_ids(&c, &got.ids, &got.n_ids))
				goto out;
		} else if (key_is(k, "job") && got.kind == JC_FAST_IDS && !seen_job) {
			seen_job = true;
			if (!plain_value(&c, &v) || v.type != V_INT || v.i <= 0 || (got.ids = malloc(sizeof *got.ids)) == NULL)
				goto out;
			got.ids[0] = (uint64_t)v.i;
			got.n_ids = 1;
		} else if (key_is(k, "existing") && got.kind == JC_FAST_SUBMIT && !seen_existing) {
			seen_existing = true;
			if (!plain_value(&c, &v) || (v.type != V_TRUE && v.type != V_FALSE))
				goto out;
			got.existing = v.type == V_TRUE;
		} else {
			goto out; /* a member this reader does not know: jansson reads the reply */
		}
	} while (lit(&c, ','));
	if (!lit(&c, '}'))
		goto out;
	ws(&c);
	if (c.p != c.end || !seen_id || !seen_ok)
		goto out;
	/* An empty "jobs" goes through jansson too (its list has an items array). */
	if ((got.kind == JC_FAST_RECORDS && (got.results == NULL || got.results->items == NULL)) || (got.kind == JC_FAST_RECORD && got.record == NULL) ||
	    (got.kind == JC_FAST_SUBMIT && (got.job == 0 || (got.want_record && got.record == NULL))) ||
	    (got.kind == JC_FAST_IDS && got.ids == NULL))
		goto out;
	got.done = true;
	*f = got;
	return 1;
out:
	jc_fast_free(&got);
	return 0;
}

/* plain_identity: the hello reply's "identity" at the cursor, as jp_hello_reply_parse
 * reads it (uid, gid, pid in 0..JP_MAX_INT, client a string, admin a boolean, each once);
 * false for anything else (a member not listed: jansson reads the reply). */
static bool plain_identity(struct cursor *c, struct jc_hello *h)
{
	unsigned seen = 0;
	if (!lit(c, '{'))
		return false;
	do {
		struct jc_text k;
		struct value v;
		unsigned bit;
		ws(c);
		if (!plain_string(c, &k) || !lit(c, ':') || !plain_value(c, &v))
			return false;
		bool count = v.type == V_INT && v.i >= 0 && v.i <= JP_MAX_INT;
		if (key_is(k, "uid") && count)
			bit = 1, h->uid = v.i;
		else if (key_is(k, "gid") && count)
			bit = 2, h->gid = v.i;
		else if (key_is(k, "pid") && count)
			bit = 4, h->pid = v.i;
		else if (key_is(k, "client") && v.type == V_STRING)
			bit = 8, h->client = v.text;
		else if (key_is(k, "admin") && (v.type == V_TRUE || v.type == V_FALSE))
			bit = 16, h->admin = v.type == V_TRUE;
		else
			return false;
		if (seen & bit)
			return false; /* repeated: jansson refuses the frame */
		seen |= bit;
	} while (lit(c, ','));
	return lit(c, '}') && seen == 31;
}

/* plain_limits: the hello reply's "limits" at the cursor into h->limits (jp_limits_set:
 * a name it does not know is ignored, as jp_limits_parse does); false when it is not a
 * flat object of plain values without repeats, or a limit is not a count. */
static bool plain_limits(struct cursor *c, struct jc_hello *h)
{
	struct cursor at = *c;
	struct value all;
	if (!plain_flat(c, &all)) /* plain, flat, no member repeated */
		return false;
	if (!lit(&at, '{') || lit(&at, '}'))
		return true;
	do {
		struct jc_text k;
		struct value v;
		ws(&at);
		if (!plain_string(&at, &k) || !lit(&at, ':') || !plain_value(&at, &v))
			return false;
		if (v.type == V_INT ? jp_limits_set(&h->limits, k.p, k.len, v.i) < 0
				    : jp_limits_set(&h->limits, k.p, k.len, -1) < 0)
			return false; /* a known limit that is not a count */
	} while (lit(&at, ','));
	return true;
}

/* jc_hello_from_text: see internal.h. */
int jc_hello_from_text(const char *text, size_t len, int64_t *id, struct jc_hello *h)
{
	struct cursor c = { text, text + len };
	unsigned seen = 0;
	*h = (struct jc_hello){ .version = -1 };
	jp_limits_default(&h->limits);
	if (!lit(&c, '{'))
		return 0;
	do {
		struct jc_text k;
		struct value v = { 0 };
		unsigned bit;
		bool ok;
		ws(&c);
		if (!plain_string(&c, &k) || !lit(&c, ':'))
			return 0;
		if (key_is(k, "identity")) {
			bit = 1, ok = plain_identity(&c, h);
		} else if (key_is(k, "limits")) {
			bit = 2, ok = plain_limits(&c, h);
		} else {
			if (!plain_value(&c, &v))
				return 0;
			if (key_is(k, "id") && v.type == V_INT)
				bit = 4, ok = true, *id = v.i;
			else if (key_is(k, "ok") && v.type == V_TRUE)
				bit = 8, ok = true;
			else if (key_is(k, "version") && v.type == V_INT && v.i >= 0)
				bit = 16, ok = true, h->version = v.i;
			else if (key_is(k, "daemon") && v.type == V_STRING)
				bit = 32, ok = true, h->daemon = v.text;
			else if (key_is(k, "instance") && v.type == V_STRING)
				bit = 64, ok = true, h->instance = v.text;
			else
				return 0; /* a member this reader does not know */
		}
		if (!ok || (seen & bit))
			return 0;
		seen |= bit;
	} while (lit(&c, ','));
	if (!lit(&c, '}'))
		return 0;
	ws(&c);
	/* limits is optional (jp_hello_reply_parse keeps the defaults without it) */
	return c.p == c.end && (seen | 2) == 127;
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
