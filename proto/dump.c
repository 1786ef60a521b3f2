/* dump.c: a jansson tree written as compact JSON text, byte for byte what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes, into a jp_buf.
 *
 * Why not json_dumps: it walks a string one code point at a time (decoding its UTF-8
 * again) and hands the text to a callback in small pieces; a spec with the caller's
 * environment (the `jsched submit` of a command: 1.4 KB) cost it 117,000 instructions,
 * a fifth of the tool's.  This copies every run of bytes that needs no escape in one
 * append (the tree's strings are valid UTF-8 already: jansson checked them when they were
 * made) and escapes the rest as jansson does: \" \\ \b \f \n \r \t, any other byte below
 * 0x20 as \u00XX with capital hex digits, nothing else (not '/', not DEL, not non-ASCII).
 * Objects in their insertion order, as json_dumps without JSON_SORT_KEYS.  A real is
 * written by json_dumps itself (its "%.17g" with ".0" added and the exponent trimmed is
 * not worth copying, and specs rarely hold one), so reals agree by construction.
 * tests/proto/test_dump.c compares the two over every byte and over random trees.
 */
#include "proto/jproto.h"

#include <stdlib.h>
#include <string.h>

const unsigned char jp_json_plain[256] = {
	/* 0x00-0x7f; 0x80-0xff are 0 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

int jp_buf_append_json_string(struct jp_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	if (jp_buf_reserve(b, n + 2) < 0)
		return JSCHED_ENOMEM;
	b->data[b->len++] = '"';
	while (p < end) {
		const unsigned char *run = p;
		char e[6] = { '\\', 0, '0', '0', 0, 0 };
		size_t en = 2;

		while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (jp_buf_append(b, run, (size_t)(p - run)) < 0)
			return JSCHED_ENOMEM;
		if (p == end)
			break;
		switch (*p) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		default:
			e[1] = 'u';
			e[4] = hex[*p >> 4];
			e[5] = hex[*p & 15];
			en = 6;
		}
		if (jp_buf_append(b, e, en) < 0)
			return JSCHED_ENOMEM;
		p++;
	}
	return jp_buf_append(b, "\"", 1);
}

/* real: v (a real) as json_dumps writes it alone. */
static int real(struct jp_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	int rc = s != NULL ? jp_buf_append(b, s, strlen(s)) : JSCHED_ENOMEM;

	free(s);
	return rc;
}

int jp_buf_append_json(struct jp_buf *b, const json_t *v)
{
	size_t i = 0;
	int rc = 0;

	if (v == NULL)
		return JSCHED_EINVAL;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rc = jp_buf_append(b, "{", 1);
		for (void *it = json_object_iter((json_t *)(uintptr_t)v); rc == 0 && it != NULL;
		     it = json_object_iter_next((json_t *)(uintptr_t)v, it), i++) {
			if (i > 0)
				rc = jp_buf_append(b, ",", 1);
			if (rc == 0)
				rc = jp_buf_append_json_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
			if (rc == 0)
				rc = jp_buf_append(b, ":", 1);
			if (rc == 0)
				rc = jp_buf_append_json(b, json_object_iter_value(it));
		}
		return rc ? rc : jp_buf_append(b, "}", 1);
	case JSON_ARRAY:
		rc = jp_buf_append(b, "[", 1);
		for (; rc == 0 && i < json_array_size(v); i++) {
			if (i > 0)
				rc = jp_buf_append(b, ",", 1);
			if (rc == 0)
				rc = jp_buf_append_json(b, json_array_get(v, i));
		}
		return rc ? rc : jp_buf_append(b, "]", 1);
	case JSON_STRING:
		return jp_buf_append_json_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return jp_buf_append_int(b, (int64_t)json_integer_value(v));
	case JSON_REAL:
		return real(b, v);
	case JSON_TRUE:
		return jp_buf_append(b, "true", 4);
	case JSON_FALSE:
		return jp_buf_append(b, "false", 5);
	case JSON_NULL:
		return jp_buf_append(b, "null", 4);
	}
	return JSCHED_EINVAL;
}
