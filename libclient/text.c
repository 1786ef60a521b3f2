/* text.c: finding values in a reply's own bytes, so that a record's JSON text can be a copy
 * of what the daemon sent instead of jansson writing the parsed record back out.
 *
 * Why: with batches of tiny jobs, one wait reply brings back 1,000 whole records, and
 * json_dumps of every record for struct jsched_result's `json` (and `value_json`) was a
 * quarter of the client's CPU (bench/e2e/README.md).  Copying the slice of the frame that
 * holds the record costs a memcpy.
 *
 * These scanners only ever run over a payload that jp_frame_parse has already accepted
 * (valid UTF-8 JSON, one object, no duplicate member names), so they only find where values
 * begin and end; they never decide what is valid.  Still, they never read outside the span
 * they are given, and whatever they cannot follow (a member name written with escapes, say)
 * they report as not found: the caller then falls back to json_dumps, which gives the same
 * value in jansson's spelling.
 */
#include "libclient/internal.h"

#include <string.h>

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Bytes that matter to the scanners: inside a string '"' and '\\' (bit 1), outside it
 * '"' and the brackets (bit 2).  Everything else is passed over in a tight loop. */
static const unsigned char classes[256] = {
	['"'] = 3, ['\\'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 2, [']'] = 2,
};

/* The end of the string that starts at p (on its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end;) {
		while (p < end && !(classes[(unsigned char)*p] & 1))
			p++;
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p + 1;
		p += end - p >= 2 ? 2 : 1; /* a backslash and the character it escapes (\uXXXX: the
					      hex digits are plain) */
	}
	return NULL;
}

/* The end of the value that starts at p, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p == '{' || *p == '[') {
		size_t depth = 0;
		while (p < end) {
			while (p < end && !(classes[(unsigned char)*p] & 2))
				p++;
			if (p >= end)
				return NULL;
			if (*p == '"') {
				p = skip_string(p, end);
				if (p == NULL)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if (--depth == 0)
				return p + 1;
			p++;
		}
		return NULL;
	}
	/* A number, true, false or null: up to the next delimiter. */
	const char *q = p;
	while (q < end && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\t' && *q != '\n' &&
	       *q != '\r')
		q++;
	return q > p ? q : NULL;
}

/* jc_text_member: see internal.h. */
bool jc_text_member(struct jc_text obj, const char *key, struct jc_text *out)
{
	if (obj.p == NULL)
		return false;
	const char *p = obj.p, *end = obj.p + obj.len;
	size_t klen = strlen(key);
	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		return false;
	for (p = skip_ws(p + 1, end); p < end && *p != '}';) {
		if (*p != '"')
			return false;
		const char *k = p + 1, *kend = skip_string(p, end);
		if (kend == NULL)
			return false;
		bool match = (size_t)(kend - 1 - k) == klen && memcmp(k, key, klen) == 0;
		p = skip_ws(kend, end);
		if (p >= end || *p != ':')
			return false;
		const char *v = skip_ws(p + 1, end), *vend = skip_value(v, end);
		if (vend == NULL)
			return false;
		if (match) {
			*out = (struct jc_text){ v, (size_t)(vend - v) };
			return true;
		}
		p = skip_ws(vend, end);
		if (p < end && *p == ',')
			p = skip_ws(p + 1, end);
		else if (p >= end || *p != '}')
			return false;
	}
	return false;
}

/* jc_text_first: see internal.h. */
bool jc_text_first(struct jc_text arr, struct jc_text *cursor)
{
	if (arr.p == NULL)
		return false;
	const char *p = skip_ws(arr.p, arr.p + arr.len);
	if (p >= arr.p + arr.len || *p != '[')
		return false;
	*cursor = (struct jc_text){ p + 1, arr.len - (size_t)(p + 1 - arr.p) };
	return true;
}

/* jc_text_next: see internal.h. */
bool jc_text_next(struct jc_text *cursor, struct jc_text *elem)
{
	if (cursor->p == NULL)
		return false;
	const char *end = cursor->p + cursor->len;
	const char *p = skip_ws(cursor->p, end);
	const char *vend = p < end && *p != ']' ? skip_value(p, end) : NULL;
	if (vend == NULL) {
		*cursor = (struct jc_text){ NULL, 0 };
		return false;
	}
	*elem = (struct jc_text){ p, (size_t)(vend - p) };
	const char *q = skip_ws(vend, end);
	if (q < end && *q == ',')
		q++;
	*cursor = (struct jc_text){ q, (size_t)(end - q) };
	return true;
}

/* jc_text_elements: see internal.h. */
bool jc_text_elements(struct jc_text arr, struct jc_text *elems, size_t n)
{
	struct jc_text cur, e;
	size_t i = 0;
	if (!jc_text_first(arr, &cur))
		return false;
	while (jc_text_next(&cur, &e)) {
		if (i == n)
			return false;
		elems[i++] = e;
	}
	return i == n;
}
