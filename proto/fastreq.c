/* proto/fastreq.c: the hot requests read straight from their frame's bytes.
 *
 * jp_fast_parse reads a frame that is one of the requests a busy client sends all the time
 * (submit of one spec or a batch, with or without `wait`; wait; status; cancel; ping) into
 * the C structs the daemon uses (struct jp_request's members, struct jp_submit), in one
 * pass over the bytes: no json_t tree is built or freed, and strings are decoded into one
 * arena (a few hundred bytes on the caller's stack for a small request).  It only ever
 * accepts: whatever it does not take (another op, a member it does not read, any doubt,
 * every error) it declines, and the caller goes the tree's way (jp_frame_parse,
 * jp_request_parse, jp_submit_parse), which gives the answer, errors included.  So the
 * fast path cannot give a different answer, only the same one sooner; what it must get
 * right is never accepting a frame that the tree's way refuses, and reading every value
 * the same.  Its rules, the tree's (jansson 2.14 with JSON_REJECT_DUPLICATES, then the
 * request and spec checkers):
 *  - JSON: RFC 8259 with UTF-8 checked as jansson does (no overlong forms, surrogates or
 *    code points past U+10FFFF), \u escapes in pairs for astral characters, no \u0000, no
 *    control characters in strings, whitespace only after the object, no duplicate member
 *    in any object (args: jansson itself checks, below);
 *  - integers: at most 16 digits, no sign, no fraction or exponent (every integer the hot
 *    requests carry is a count, an id or a time: one that is not so is declined, and the
 *    tree's way says what is wrong with it, bad_frame past 2^53 included);
 *  - the request's members exactly as request.c's tables say for its op; each spec's as
 *    jobspec.c says, for the members the hot specs use (kind, name, ref, key, priority,
 *    cost, deadlines, not_before, after, any_of, fn, args, argv, env, cwd, timeout_ms,
 *    backend); a spec with any other member is declined;
 *  - a call's args become a json_t (the handler API takes them so): built here when they
 *    are a scalar or an object of scalars, else handed to jansson (json_loadb of their own
 *    bytes, duplicates refused, every integer within +-(2^53 - 1)).
 * tests/proto/test_fastreq.c runs a table of edge cases through both ways, and
 * tests/fuzz/fuzz_fastreq.c any bytes: whenever this accepts, the tree's way accepts with
 * the same values.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdlib.h>
#include <string.h>

/* The top-level members the fast ops have, as bits of jp_fast.seen. */
enum {
	F_ID = 1u << 0,
	F_OP = 1u << 1,
	F_JOB = 1u << 2,	/* an id (status, wait, cancel) */
	F_JOBS = 1u << 3,	/* ids */
	F_SPEC = 1u << 4,	/* submit's `job` */
	F_SPECS = 1u << 5,	/* submit's `jobs` */
	F_DETAIL = 1u << 6,
	F_MODE = 1u << 7,
	F_TIMEOUT = 1u << 8,
	F_WAIT = 1u << 9,
	F_FIELDS = 1u << 10,	/* wait's `fields` */
};

/* The deepest args taken (jansson's own limit, 2048 levels, counts the frame's). */
#define ARGS_DEPTH_MAX 512
/* The most env entries compared pairwise for duplicates; more go the tree's way. */
#define ENV_PAIRWISE_MAX 256

struct sc {
	const unsigned char *p, *e, *start;
	char *out;		/* the arena's next free byte */
	const struct jp_limits *lim;
	struct jp_fast *f;
};

static void ws_run(struct sc *s)
{
	while (s->p < s->e && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* ws: skips whitespace.  libjsched writes compact JSON, so the next byte is nearly always
 * past ' ' (every JSON whitespace byte is at or below it): one test inline, and the loop
 * only when it may be whitespace (the loop's four tests per call were 300 of a noop
 * submit's 3,000 instructions here, callgrind). */
static inline void ws(struct sc *s)
{
	if (s->p < s->e && *s->p <= ' ')
		ws_run(s);
}

/* eat: the byte c (after whitespace) is next, and is taken. */
static bool eat(struct sc *s, unsigned char c)
{
	ws(s);
	if (s->p < s->e && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

/* grow: the array a (of *cap elements of size bytes) with room for n elements, its room
 * doubled from first: a itself when it has the room, else the array moved (*cap updated),
 * or NULL when out of memory (a still valid, *cap unchanged). */
static void *grow(void *a, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;

	if (n <= *cap)
		return a;
	while (c < n)
		c *= 2;
	if (!(a = realloc(a, c * size)))
		return NULL;
	*cap = c;
	return a;
}

/* grow_from: grow for an array whose first room, for one element, is `room` (inline, not
 * malloc'd): room itself for the first, then malloc'd arrays (the element copied over from
 * room when leaving it).  NULL when out of memory (a still valid, *cap unchanged).  The
 * callers test n > *cap first (a call per spec of a batch was 32 instructions a job). */
static void *grow_from(void *a, void *room, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *t;

	if (*cap == 0 && n == 1) {
		*cap = 1;
		return room;
	}
	for (c = *cap ? *cap * 2 : 2; c < n;)
		c *= 2;
	if (a == room) {
		if ((t = malloc(c * size)))
			memcpy(t, room, *cap * size);
	} else {
		t = realloc(a, c * size);
	}
	if (!t)
		return NULL;
	*cap = c;
	return t;
}

static int hex4(const unsigned char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (int)(c - 'A' + 10);
		else
			return -1;
	}
	return v;
}

/* utf8_len: the length of the well-formed UTF-8 sequence at p (before e), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *e)
{
	char t[5] = {0};

	if (e - p >= 4)
		return jp_utf8_seq((const char *)p);
	memcpy(t, p, (size_t)(e - p));
	return jp_utf8_seq(t);
}

/* str: the string at the scanner (after whitespace), decoded into the arena and
 * NUL-terminated: *out and *len.  False for anything jansson refuses, and for a string
 * that is not there. */
static bool str(struct sc *s, const char **out, size_t *len)
{
	char *o = s->out, *begin = o;

	ws(s);
	if (s->p >= s->e || *s->p != '"')
		return false;
	for (s->p++;;) {
		const unsigned char *run = s->p, *q = jp_json_plain_end(run, s->e);

		s->p = q;
		memcpy(o, run, (size_t)(q - run));
		o += q - run;
		if (s->p >= s->e || *s->p < 0x20)
			return false;
		if (*s->p == '"') {
			s->p++;
			break;
		}
		if (*s->p >= 0x80) {
			size_t n = utf8_len(s->p, s->e);

			if (!n)
				return false;
			memcpy(o, s->p, n);
			o += n;
			s->p += n;
			continue;
		}
		/* an escape */
		if (s->e - s->p < 2)
			return false;
		switch (s->p[1]) {
		case '"': case '\\': case '/':
			*o++ = (char)s->p[1];
			break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			int32_t cp;

			if (s->e - s->p < 6 || (cp = hex4(s->p + 2)) <= 0)
				return false;	/* \u0000 included */
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return false;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				int32_t lo;

				if (s->e - s->p < 12 || s->p[6] != '\\' || s->p[7] != 'u' ||
				    (lo = hex4(s->p + 8)) < 0xdc00 || lo > 0xdfff)
					return false;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s->p += 6;
			}
			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xc0 | (cp >> 6));
				*o++ = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				*o++ = (char)(0xe0 | (cp >> 12));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*o++ = (char)(0x80 | (cp & 0x3f));
			} else {
				*o++ = (char)(0xf0 | (cp >> 18));
				*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*o++ = (char)(0x80 | (cp & 0x3f));
			}
			s->p += 4;
			break;
		}
		default:
			return false;
		}
		s->p += 2;
	}
	*o++ = 0;
	s->out = o;
	*out = begin;
	*len = (size_t)(o - 1 - begin);
	return true;
}

/* strn: str, min..max bytes. */
static bool strn(struct sc *s, size_t min, size_t max, const char **out)
{
	size_t len;

	return str(s, out, &len) && len >= min && len <= max;
}

/* num: a non-negative integer of at most 16 digits, in [min, max]. */
static bool num(struct sc *s, int64_t min, int64_t max, int64_t *out)
{
	int64_t v = 0;
	int digits = 0;

	ws(s);
	if (s->p < s->e && *s->p == '0') {
		s->p++;
		digits = 1;
	} else {
		while (s->p < s->e && *s->p >= '0' && *s->p <= '9' && digits < 17) {
			v = v * 10 + (*s->p++ - '0');
			digits++;
		}
	}
	if (digits == 0 || digits > 16)
		return false;
	/* what may follow a number here; anything else (a fraction, an exponent, a digit
	 * after a leading 0) is declined */
	if (s->p < s->e && *s->p != ',' && *s->p != '}' && *s->p != ']' && *s->p != ' ' &&
	    *s->p != '\t' && *s->p != '\n' && *s->p != '\r')
		return false;
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* lit: the literal word (true, false, null) of n bytes, whole. */
static bool lit(struct sc *s, const char *word, size_t n)
{
	ws(s);
	if ((size_t)(s->e - s->p) < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return s->p == s->e || !((*s->p >= 'a' && *s->p <= 'z') || (*s->p >= '0' && *s->p <= '9'));
}

static bool boolean(struct sc *s, bool *out)
{
	ws(s);
	if (s->p < s->e && *s->p == 't' && lit(s, "true", 4))
		return (*out = true);
	if (s->p < s->e && *s->p == 'f' && lit(s, "false", 5)) {
		*out = false;
		return true;
	}
	return false;
}

/* peek: the next byte after whitespace, or 0 at the end. */
static unsigned char peek(struct sc *s)
{
	ws(s);
	return s->p < s->e ? *s->p : 0;
}

/* key: the next member's name, up to and past its ':'.  After the object's '{' or a ','. */
static bool key(struct sc *s, const char **k, size_t *len)
{
	return str(s, k, len) && eat(s, ':');
}

/* next: after a member's value: true with *more for a ',' (another member follows),
 * *more false at the closing c. */
static bool next(struct sc *s, unsigned char c, bool *more)
{
	ws(s);
	if (s->p < s->e && *s->p == ',') {
		s->p++;
		*more = true;
		return true;
	}
	if (s->p < s->e && *s->p == c) {
		s->p++;
		*more = false;
		return true;
	}
	return false;
}

/* skip: past one JSON value of at most ARGS_DEPTH_MAX levels, its strings' bytes and
 * escapes only delimited (json_loadb checks the value itself after). */
static bool skip(struct sc *s)
{
	size_t depth = 0;

	ws(s);
	do {
		if (s->p >= s->e)
			return false;
		switch (*s->p) {
		case '"':
			for (s->p++; s->p < s->e && *s->p != '"'; s->p++)
				if (*s->p == '\\')
					s->p++;
			if (s->p >= s->e)
				return false;
			s->p++;
			break;
		case '{': case '[':
			if (++depth > ARGS_DEPTH_MAX)
				return false;
			s->p++;
			break;
		case '}': case ']':
			if (depth == 0)
				return false;
			depth--;
			s->p++;
			break;
		default:
			s->p++;
			while (s->p < s->e && *s->p != ',' && *s->p != '}' && *s->p != ']' &&
			       *s->p != '"' && *s->p != '{' && *s->p != '[')
				s->p++;
			break;
		}
		while (depth && s->p < s->e && (*s->p == ',' || *s->p == ':' || *s->p == ' ' ||
						*s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
			s->p++;
	} while (depth);
	return true;
}

/* scalar: a string, a non-negative integer, true, false or null, as a json_t (new
 * reference), or NULL for anything else (the scanner then anywhere). */
static json_t *scalar(struct sc *s)
{
	unsigned char c = peek(s);
	const char *t;
	size_t len;
	int64_t n;

	if (c >= '0' && c <= '9')
		return num(s, 0, JP_MAX_INT, &n) ? json_integer(n) : NULL;
	if (c == '"')
		return str(s, &t, &len) ? json_stringn_nocheck(t, len) : NULL;
	if (c == 't' && lit(s, "true", 4))
		return json_true();
	if (c == 'f' && lit(s, "false", 5))
		return json_false();
	if (c == 'n' && lit(s, "null", 4))
		return json_null();
	return NULL;
}

/* flat: args that are a scalar or an object of scalars (the usual shape: {"us": 10}),
 * built here; NULL for any other shape or any doubt (a duplicate member included), and
 * then jansson reads them.  What this builds is what json_loadb would (the differential
 * tests compare them). */
static json_t *flat(struct sc *s)
{
	json_t *o, *v;
	bool more = true;

	if (peek(s) != '{')
		return scalar(s);
	s->p++;
	if (!(o = json_object()))
		return NULL;
	if (eat(s, '}'))
		return o;
	/* A duplicate member is seen by the size not growing (jansson's set replaces it), not
	 * looked up first: the lookup was ~130 instructions a member, callgrind of the 10 us
	 * efficiency row with args differing per job. */
	for (size_t n = 1; more; n++) {
		const char *k;
		size_t kl;

		if (!key(s, &k, &kl) || !(v = scalar(s)) || json_object_set_new_nocheck(o, k, v) < 0 ||
		    json_object_size(o) != n || !next(s, '}', &more)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* args: a call's args, any JSON value, kept in f->args until jp_fast_free: built here
 * when flat (above), else made by jansson after the same frame rules: no duplicate,
 * integers within 2^53 - 1. */
static bool args(struct sc *s, json_t **out)
{
	void *t;
	const unsigned char *from;
	char *arena = s->out;
	json_error_t jerr;
	json_t *v;
	struct jp_fast *f = s->f;

	if (!(t = grow(f->args, &f->cap_args, f->n_args + 1, sizeof(*f->args), 4)))
		return false;
	f->args = t;
	ws(s);
	from = s->p;
	if ((v = flat(s))) {
		f->args[f->n_args++] = v;
		*out = v;
		return true;
	}
	s->p = from;
	s->out = arena;
	if (!skip(s))
		return false;
	v = json_loadb((const char *)from, (size_t)(s->p - from),
		       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!v)
		return false;
	f->args[f->n_args++] = v;
	if (!jp__ints_exact(v))
		return false;
	*out = v;
	return true;
}

/* The spec members read here, by name; the others make the spec go the tree's way. */
enum smember {
	S_KIND, S_NAME, S_REF, S_KEY, S_PRIORITY, S_DEADLINE_AT, S_DEADLINE_IN, S_NOT_BEFORE,
	S_AFTER, S_ANY_OF, S_COST, S_FN, S_ARGS, S_ARGV, S_ENV, S_CWD, S_TIMEOUT, S_BACKEND,
	S_COUNT
};
static const char *const snames[S_COUNT] = {
	"kind", "name", "ref", "key", "priority", "deadline_at_ms", "deadline_in_ms",
	"not_before", "after", "any_of", "cost", "fn", "args", "argv", "env", "cwd", "timeout_ms",
	"backend",
};
#define S_EXEC_ONLY (1u << S_ARGV | 1u << S_ENV | 1u << S_CWD | 1u << S_TIMEOUT | 1u << S_BACKEND)
#define S_CALL_ONLY (1u << S_FN | 1u << S_ARGS)

static int slookup(const char *k)
{
	for (int m = 0; m < S_COUNT; m++)
		if (snames[m][0] == k[0] && strcmp(snames[m], k) == 0)
			return m;
	return -1;
}

/* dep: one element of after / any_of: an id, a ref, or {job | ref, on}. */
static bool dep(struct sc *s, struct jp_dep *d)
{
	unsigned char c = peek(s);
	unsigned seen = 0;
	bool more = true;

	d->on = JP_ON_SUCCESS;
	if (c >= '0' && c <= '9')
		return num(s, 1, JP_MAX_INT, &d->job);
	if (c == '"')
		return strn(s, 1, JP_REF_MAX, &d->ref);
	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return false;	/* names neither job nor ref */
	while (more) {
		const char *k, *on;
		size_t kl;
		int o;

		if (!key(s, &k, &kl))
			return false;
		if (strcmp(k, "job") == 0 && !(seen & 1)) {
			seen |= 1;
			if (!num(s, 1, JP_MAX_INT, &d->job))
				return false;
		} else if (strcmp(k, "ref") == 0 && !(seen & 2)) {
			seen |= 2;
			if (!strn(s, 1, JP_REF_MAX, &d->ref))
				return false;
		} else if (strcmp(k, "on") == 0 && !(seen & 4)) {
			seen |= 4;
			if (!str(s, &on, &kl) || (o = jp_dep_on_from_name(on)) < 0)
				return false;
			d->on = (enum jp_dep_on)o;
		} else {
			return false;
		}
		if (!next(s, '}', &more))
			return false;
	}
	return (seen & 3) == 1 || (seen & 3) == 2;
}

/* deps: an after / any_of array (at most deps_per_job). */
static bool deps(struct sc *s, struct jp_dep **out, size_t *n)
{
	void *t;
	size_t cap = 0;
	bool more = true;

	if (!eat(s, '['))
		return false;
	if (eat(s, ']'))
		return true;
	while (more) {
		if (*n == s->lim->deps_per_job)
			return false;
		if (!(t = grow(*out, &cap, *n + 1, sizeof(**out), 4)))
			return false;
		*out = t;
		(*out)[*n] = (struct jp_dep){0};
		if (!dep(s, &(*out)[*n]))
			return false;
		++*n;
		if (!next(s, ']', &more))
			return false;
	}
	return true;
}

static bool argv_of(struct sc *s, struct jp_job_spec *sp)
{
	void *t;
	size_t cap = 0, len;
	bool more = true;

	if (!eat(s, '[') || eat(s, ']'))
		return false;
	while (more) {
		if (sp->argc == s->lim->argv_items)
			return false;
		if (!(t = grow(sp->argv, &cap, sp->argc + 2, sizeof(*sp->argv), 8)))	/* and its NULL */
			return false;
		sp->argv = t;
		if (!str(s, &sp->argv[sp->argc], &len) || strlen(sp->argv[sp->argc]) != len ||
		    (sp->argc == 0 && len == 0))
			return false;
		sp->argv[++sp->argc] = NULL;
		if (!next(s, ']', &more))
			return false;
	}
	return true;
}

static bool env_of(struct sc *s, struct jp_job_spec *sp)
{
	void *t;
	size_t cap = 0, len;
	bool more = true;

	if (!eat(s, '{'))
		return false;
	if (eat(s, '}'))
		return true;
	while (more) {
		struct jp_env *v;

		if (sp->n_env == s->lim->env_items || sp->n_env == ENV_PAIRWISE_MAX)
			return false;
		if (!(t = grow(sp->env, &cap, sp->n_env + 1, sizeof(*sp->env), 8)))
			return false;
		sp->env = t;
		v = &sp->env[sp->n_env];
		if (!key(s, &v->name, &len) || len == 0 || strlen(v->name) != len ||
		    strchr(v->name, '='))
			return false;
		for (size_t i = 0; i < sp->n_env; i++)
			if (strcmp(sp->env[i].name, v->name) == 0)
				return false;	/* a duplicate member */
		if (!str(s, &v->value, &len) || strlen(v->value) != len)
			return false;
		sp->n_env++;
		if (!next(s, '}', &more))
			return false;
	}
	return true;
}

/* spec: one job spec object, as jp_job_spec_parse_at reads it (sp initialised). */
static bool spec(struct sc *s, struct jp_job_spec *sp)
{
	unsigned seen = 0;
	bool more = true;
	int64_t n;

	if (!eat(s, '{') || eat(s, '}'))
		return false;
	while (more) {
		const char *k, *v;
		size_t kl;
		int m, p;

		if (!key(s, &k, &kl) || (m = slookup(k)) < 0 || (seen & (1u << m)))
			return false;
		seen |= 1u << m;
		switch ((enum smember)m) {
		case S_KIND:
			if (!str(s, &v, &kl) || (p = jp_kind_from_name(v)) < 0)
				return false;
			sp->kind = (enum jp_kind)p;
			break;
		case S_NAME:
			if (!str(s, &sp->name, &kl) || kl > JP_NAME_MAX || strlen(sp->name) != kl)
				return false;
			break;
		case S_REF:
			if (!strn(s, 1, JP_REF_MAX, &sp->ref) || strlen(sp->ref) > JP_REF_MAX)
				return false;
			break;
		case S_KEY:
			if (!strn(s, 1, JP_KEY_MAX, &sp->key))
				return false;
			break;
		case S_PRIORITY:
			if (!str(s, &v, &kl) || (p = jp_priority_from_name(v)) < 0)
				return false;
			sp->priority = (enum jp_priority)p;
			break;
		case S_DEADLINE_AT:
		case S_DEADLINE_IN:
			if (sp->deadline != JP_DEADLINE_NONE || !num(s, 0, JP_MAX_INT, &sp->deadline_ms))
				return false;
			sp->deadline = m == S_DEADLINE_AT ? JP_DEADLINE_AT : JP_DEADLINE_IN;
			break;
		case S_NOT_BEFORE:
			if (!num(s, 0, JP_MAX_INT, &sp->not_before_ms))
				return false;
			break;
		case S_AFTER:
			if (!deps(s, &sp->after, &sp->n_after))
				return false;
			break;
		case S_ANY_OF:
			if (!deps(s, &sp->any_of, &sp->n_any_of))
				return false;
			break;
		case S_COST:
			if (!num(s, 1, JP_COST_MAX, &n))
				return false;
			sp->cost = (uint32_t)n;
			break;
		case S_FN:
			if (!str(s, &sp->fn, &kl) || kl < 1 || kl > JP_NAME_MAX || strlen(sp->fn) != kl)
				return false;
			break;
		case S_ARGS:
			if (!args(s, &sp->args))
				return false;
			break;
		case S_ARGV:
			if (!argv_of(s, sp))
				return false;
			break;
		case S_ENV:
			if (!env_of(s, sp))
				return false;
			break;
		case S_CWD:
			if (!str(s, &sp->cwd, &kl) || kl < 1 || strlen(sp->cwd) != kl || sp->cwd[0] != '/')
				return false;
			break;
		case S_TIMEOUT:
			if (!num(s, 1, JP_MAX_INT, &sp->timeout_ms))
				return false;
			break;
		case S_BACKEND:
			if (!str(s, &sp->backend, &kl) || (strcmp(sp->backend, "local") != 0 &&
							    strcmp(sp->backend, "slurm") != 0 &&
							    strcmp(sp->backend, "auto") != 0))
				return false;
			break;
		case S_COUNT:
			return false;
		}
		if (!next(s, '}', &more))
			return false;
	}
	if (!(seen & (1u << S_KIND)))
		return false;
	if (sp->kind == JP_KIND_EXEC)
		return !(seen & S_CALL_ONLY) && sp->argv &&
		       sp->n_after + sp->n_any_of <= s->lim->deps_per_job;
	return !(seen & S_EXEC_ONLY) && sp->fn && sp->n_after + sp->n_any_of <= s->lim->deps_per_job;
}

/* repeat: the spec at the scanner when its bytes are the previous spec's, byte for byte
 * (a batch of one spec many times): the previous spec's values copied instead of read
 * again, and true.  Reading {"kind":"call","fn":"spin","args":{"us":10}} cost the loop
 * thread 3,400 instructions a spec (keys decoded, the args' object built); the compare
 * costs about a byte's instruction.  The same bytes read the same way (nothing in spec()
 * depends on where the spec stands), so the values are the ones spec() would give.  Only
 * a spec that owns no memory of its own (no after, any_of, argv or env, which
 * jp_job_spec_clear frees) is copied; its args (a call's) are shared, one more reference
 * each (the handlers take them const, and jansson's reference count is atomic). */
static bool repeat(struct sc *s, struct jp_job_spec *sp)
{
	void *t;
	struct jp_fast *f = s->f;
	size_t i = f->submit.n - 1;
	const struct jp_job_spec *prev = i > 0 ? &f->submit.specs[i - 1] : NULL;
	const struct jp_fast_span *ps = i > 0 ? &f->spans[i - 1] : NULL;

	if (!prev || prev->after || prev->any_of || prev->argv || prev->env ||
	    (size_t)(s->e - s->p) < ps->len || memcmp(s->p, ps->text, ps->len) != 0)
		return false;
	if (prev->args) {
		if (!(t = grow(f->args, &f->cap_args, f->n_args + 1, sizeof(*f->args), 4)))
			return false;
		f->args = t;
		f->args[f->n_args++] = json_incref(prev->args);
	}
	*sp = *prev;
	s->p += ps->len;
	return true;
}

/* one_spec: a spec at the scanner into f->submit's next slot, its text's place kept. */
static bool one_spec(struct sc *s, size_t *cap)
{
	void *t;
	struct jp_submit *sub = &s->f->submit;
	struct jp_job_spec *sp;

	size_t want = sub->n + 1;

	if (sub->n == s->lim->jobs_per_submit)
		return false;
	/* A batch's second spec: room for as many as the rest of the frame holds at the
	 * first one's length (a batch mostly repeats one shape), at most jobs_per_submit,
	 * instead of doubling from two: ten reallocs of each array per 1,000 specs, the
	 * largest copying 200 KiB, were 137 instructions a job (callgrind, the 10 us
	 * efficiency row's batches).  A first spec shorter than the rest reserves more
	 * than is used, never more than that many specs; a longer one doubles on from
	 * there. */
	if (sub->n == 1 && *cap < 2) {
		size_t more = (size_t)(s->e - s->p) / (s->f->spans[0].len + 1);

		want = more < s->lim->jobs_per_submit - 1 ? 1 + more : s->lim->jobs_per_submit;
		if (want < 2)
			want = 2;
		if (s->f->n_args == 1 && s->f->cap_args < want) {
			if (!(t = grow(s->f->args, &s->f->cap_args, want, sizeof(*s->f->args), 4)))
				return false;
			s->f->args = t;
		}
	}
	if (sub->n + 1 > *cap) {
		if (!(t = grow_from(sub->specs, &s->f->one, cap, want, sizeof(*sub->specs))))
			return false;
		sub->specs = t;
		sub->borrowed = t == &s->f->one;
	}
	if (sub->n + 1 > s->f->cap_spans) {
		if (!(t = grow_from(s->f->spans, &s->f->one_span, &s->f->cap_spans, want,
				    sizeof(*s->f->spans))))
			return false;
		s->f->spans = t;
	}
	sp = &sub->specs[sub->n++];
	jp_job_spec_init(sp);
	ws(s);
	s->f->spans[sub->n - 1].text = (const char *)s->p;
	if (!repeat(s, sp) && !spec(s, sp))
		return false;
	s->f->spans[sub->n - 1].len = (size_t)((const char *)s->p - s->f->spans[sub->n - 1].text);
	return true;
}

/* ids: a non-empty array of job ids, at most jobs_per_submit. */
static bool ids(struct sc *s)
{
	void *t;
	struct jp_fast *f = s->f;
	size_t cap = 0;
	bool more = true;

	if (!eat(s, '[') || eat(s, ']'))
		return false;
	while (more) {
		if (f->n_ids == s->lim->jobs_per_submit)
			return false;
		if (!(t = grow(f->ids, &cap, f->n_ids + 1, sizeof(*f->ids), 8)))
			return false;
		f->ids = t;
		if (!num(s, 1, JP_MAX_INT, &f->ids[f->n_ids++]) || !next(s, ']', &more))
			return false;
	}
	return true;
}

/* wait_member: submit's `wait`: true, false, or {timeout_ms, mode, output}. */
static bool wait_member(struct sc *s)
{
	struct jp_submit *sub = &s->f->submit;
	unsigned seen = 0;
	bool more = true, b;

	sub->wait_timeout_ms = -1;
	if (peek(s) != '{') {
		if (!boolean(s, &b))
			return false;
		sub->wait = b;
		return true;
	}
	sub->wait = true;
	s->p++;
	if (eat(s, '}'))
		return true;
	while (more) {
		const char *k, *v;
		size_t kl;

		if (!key(s, &k, &kl))
			return false;
		if (strcmp(k, "timeout_ms") == 0 && !(seen & 1)) {
			seen |= 1;
			if (!num(s, 0, JP_MAX_INT, &sub->wait_timeout_ms))
				return false;
		} else if (strcmp(k, "mode") == 0 && !(seen & 2)) {
			seen |= 2;
			if (!str(s, &v, &kl) || (strcmp(v, "all") != 0 && strcmp(v, "any") != 0))
				return false;
			sub->wait_any = v[1] == 'n';
		} else if (strcmp(k, "output") == 0 && !(seen & 4)) {
			seen |= 4;
			if (!boolean(s, &sub->wait_output))
				return false;
		} else {
			return false;
		}
		if (!next(s, '}', &more))
			return false;
	}
	return true;
}

/* member: one top-level member; what it is for is judged with the op, after. */
static bool member(struct sc *s, const char *k)
{
	struct jp_fast *f = s->f;
	const char *v;
	const unsigned char *q;
	size_t kl, cap = 0;
	bool more = true;
	int o;

#define ONCE(bit) do { if (f->seen & (bit)) return false; f->seen |= (bit); } while (0)
	switch (k[0]) {
	case 'i':
		if (strcmp(k, "id") != 0)
			return false;
		ONCE(F_ID);
		return num(s, 0, JP_MAX_INT, &f->id);
	case 'o':
		if (strcmp(k, "op") != 0)
			return false;
		ONCE(F_OP);
		if (!str(s, &v, &kl) || (o = jp_op_from_name(v)) < 0)
			return false;
		f->op = (enum jp_op)o;
		return true;
	case 'j':
		/* job and jobs: exactly one of them (both: the tree's bad_request) */
		if (f->seen & (F_JOB | F_JOBS | F_SPEC | F_SPECS))
			return false;
		if (strcmp(k, "job") == 0) {
			if (peek(s) == '{') {
				f->seen |= F_SPEC;
				f->submit.single = true;
				return one_spec(s, &cap);
			}
			f->seen |= F_JOB;
			return num(s, 1, JP_MAX_INT, &f->job);
		}
		if (strcmp(k, "jobs") != 0 || peek(s) != '[')
			return false;
		/* ids or specs: the first element's first byte tells */
		for (q = s->p + 1; q < s->e && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r');)
			q++;
		if (q == s->e || *q != '{') {
			f->seen |= F_JOBS;
			return ids(s);
		}
		f->seen |= F_SPECS;
		s->p++;
		while (more)
			if (!one_spec(s, &cap) || !next(s, ']', &more))
				return false;
		return true;
	case 'd':
		if (strcmp(k, "detail") != 0)
			return false;
		ONCE(F_DETAIL);
		return boolean(s, &f->detail);
	case 'f':
		if (strcmp(k, "fields") != 0)
			return false;
		ONCE(F_FIELDS);
		if (!str(s, &v, &kl) || (strcmp(v, "all") != 0 && strcmp(v, "brief") != 0))
			return false;
		f->fields = v[0] == 'b' ? "brief" : "all";
		return true;
	case 'm':
		if (strcmp(k, "mode") != 0)
			return false;
		ONCE(F_MODE);
		if (!str(s, &v, &kl) || (strcmp(v, "all") != 0 && strcmp(v, "any") != 0))
			return false;
		f->mode = v[1] == 'n' ? "any" : "all";
		return true;
	case 't':
		if (strcmp(k, "timeout_ms") != 0)
			return false;
		ONCE(F_TIMEOUT);
		return num(s, 0, JP_MAX_INT, &f->timeout_ms);
	case 'w':
		if (strcmp(k, "wait") != 0)
			return false;
		ONCE(F_WAIT);
		return wait_member(s);
	default:
		return false;
	}
#undef ONCE
}

/* op_ok: the members seen are exactly what op takes (request.c's tables), one of job and
 * jobs where it takes either. */
static bool op_ok(const struct jp_fast *f)
{
	unsigned m = f->seen & ~(unsigned)(F_ID | F_OP);
	unsigned ids = m & (F_JOB | F_JOBS);

	switch (f->op) {
	case JP_OP_PING:
		return m == 0;
	case JP_OP_CANCEL:
		return ids && (ids & (ids - 1)) == 0 && m == ids;
	case JP_OP_STATUS:
		return ids && (ids & (ids - 1)) == 0 && (m & ~(unsigned)(F_JOB | F_JOBS | F_DETAIL)) == 0;
	case JP_OP_WAIT:
		return ids && (ids & (ids - 1)) == 0 &&
		       (m & ~(unsigned)(F_JOB | F_JOBS | F_MODE | F_TIMEOUT | F_FIELDS)) == 0;
	case JP_OP_SUBMIT:
		if ((m & (F_SPEC | F_SPECS)) != F_SPEC && (m & (F_SPEC | F_SPECS)) != F_SPECS)
			return false;
		if (m & ~(unsigned)(F_SPEC | F_SPECS | F_WAIT))
			return false;
		return !(f->submit.wait_output && !f->submit.single);
	default:
		return false;
	}
}

void jp_fast_init(struct jp_fast *f)
{
	memset(f, 0, offsetof(struct jp_fast, small));
	f->submit.wait_timeout_ms = -1;
}

void jp_fast_free(struct jp_fast *f)
{
	for (size_t i = 0; i < f->n_args; i++)
		json_decref(f->args[i]);
	free(f->args);
	free(f->ids);
	if (f->spans != &f->one_span)
		free(f->spans);
	jp_submit_clear(&f->submit);
	if (f->arena != f->small)
		free(f->arena);
	jp_fast_init(f);
}

bool jp_fast_parse(const void *payload, size_t len, const struct jp_limits *lim,
		   struct jp_fast *f)
{
	struct jp_limits dflt;
	struct sc s = {.p = payload, .e = (const unsigned char *)payload + len, .start = payload,
		       .lim = lim, .f = f};
	bool more = true;
	struct jp_err err;

	if (!lim) {
		jp_limits_default(&dflt);
		s.lim = &dflt;
	}
	/* Decoded strings are never longer than their text, plus one NUL each. */
	if (len + 1 > sizeof(f->small) / 2) {
		if (len > SIZE_MAX / 2 - 1 || !(f->arena = malloc(2 * len + 2)))
			return false;
	} else {
		f->arena = f->small;
	}
	s.out = f->arena;
	if (!eat(&s, '{') || eat(&s, '}'))
		goto decline;
	while (more) {
		const char *k;
		size_t kl;

		if (!key(&s, &k, &kl) || !member(&s, k) || !next(&s, '}', &more))
			goto decline;
	}
	ws(&s);
	if (s.p != s.e || (f->seen & (F_ID | F_OP)) != (F_ID | F_OP) || !op_ok(f))
		goto decline;
	if (f->op == JP_OP_SUBMIT) {
		f->submit.order = f->submit.borrowed ? &f->one_order
				  : malloc(f->submit.n * sizeof(*f->submit.order));
		if (!f->submit.order ||
		    jp__submit_finish(&f->submit, &err) < 0)
			goto decline;
	}
	return true;
decline:
	jp_fast_free(f);
	return false;
}

int jp_fast_member_int(const struct jp_fast *f, const char *key, int64_t *out)
{
	if (strcmp(key, "job") == 0 && (f->seen & F_JOB))
		*out = f->job;
	else if (strcmp(key, "timeout_ms") == 0 && (f->seen & F_TIMEOUT))
		*out = f->timeout_ms;
	else if (strcmp(key, "id") == 0)
		*out = f->id;
	else
		return 0;
	return 1;
}

int jp_fast_member_bool(const struct jp_fast *f, const char *key, bool *out)
{
	if (strcmp(key, "detail") == 0 && (f->seen & F_DETAIL))
		*out = f->detail;
	else if (strcmp(key, "wait") == 0 && (f->seen & F_WAIT))
		*out = f->submit.wait;
	else
		return 0;
	return 1;
}

const char *jp_fast_member_str(const struct jp_fast *f, const char *key)
{
	if (strcmp(key, "mode") == 0 && (f->seen & F_MODE))
		return f->mode;
	if (strcmp(key, "fields") == 0 && (f->seen & F_FIELDS))
		return f->fields;
	if (strcmp(key, "op") == 0)
		return jp_op_name(f->op);
	return NULL;
}

int jp_fast_ids(const struct jp_fast *f, int64_t **ids_out, size_t *n, bool *single)
{
	size_t count = (f->seen & F_JOB) ? 1 : f->n_ids;
	int64_t *a;

	*ids_out = NULL;
	*n = 0;
	*single = (f->seen & F_JOB) != 0;
	if (!(f->seen & (F_JOB | F_JOBS)))
		return JSCHED_EBAD_REQUEST;
	if (!(a = malloc(count * sizeof(*a))))
		return JSCHED_ENOMEM;
	if (*single)
		a[0] = f->job;
	else
		memcpy(a, f->ids, count * sizeof(*a));
	*ids_out = a;
	*n = count;
	return 0;
}
