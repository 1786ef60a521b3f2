/* proto/error.c: error codes on the wire, and the error objects that carry them.
 *
 * Numbers never cross the wire; names do ("queue_full").  Both directions of the mapping
 * come from the one X-macro in jsched/error.h, so a code appended there travels without
 * anyone touching this file.  struct jp_err is how the parsers report a fault in the
 * peer's words: code, message, and the path of the member at fault.
 */
#include "proto/jproto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jp_err_set(struct jp_err *err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	/* Either may quote the peer's text and end in a character cut by the buffer. */
	jp_utf8_scrub(err->field);
	jp_utf8_scrub(err->message);
	return code;
}

const char *jp_error_name(int code)
{
	switch (code) {
#define XX(name, num, wire, msg) \
	case num:                \
		return wire;
		JSCHED_ERRNO_MAP(XX)
#undef XX
	default:
		return NULL;
	}
}

int jp_error_from_name(const char *name)
{
	if (!name)
		return JSCHED_EPROTOCOL;
#define XX(name_, num, wire, msg)    \
	if (strcmp(name, wire) == 0) \
		return num;
	JSCHED_ERRNO_MAP(XX)
#undef XX
	return JSCHED_EPROTOCOL;
}

/* text_new: a JSON string of s, with the bytes that are not well-formed UTF-8 left out
 * (new reference; NULL when out of memory).  Error texts are built by every part of the
 * daemon, some from fixed buffers: none of them may make the error unsendable. */
static json_t *text_new(const char *s)
{
	json_t *j;
	char *t;

	if (jp_utf8_valid(s))
		return json_string(s);
	t = strdup(s);
	if (!t)
		return NULL;
	jp_utf8_scrub(t);
	j = json_string(t);
	free(t);
	return j;
}

json_t *jp_error_new(int code, const char *field, const char *message)
{
	const char *name = jp_error_name(code);
	json_t *e = json_object();

	if (!e)
		return NULL;
	if (json_object_set_new(e, "code", json_string(name ? name : "internal")) < 0 ||
	    json_object_set_new(e, "message", text_new(message ? message : "")) < 0 ||
	    (field && *field && json_object_set_new(e, "field", text_new(field)) < 0)) {
		json_decref(e);
		return NULL;
	}
	return e;
}

json_t *jp_error_new_from(const struct jp_err *err)
{
	return jp_error_new(err->code, err->field, err->message);
}

int jp_error_parse(const json_t *obj, struct jp_err *out)
{
	const json_t *code = json_object_get(obj, "code");
	const json_t *message = json_object_get(obj, "message");
	const json_t *field = json_object_get(obj, "field");

	if (!json_is_object(obj) || !json_is_string(code) ||
	    (message && !json_is_string(message)) || (field && !json_is_string(field)))
		return jp_err_set(out, JSCHED_EPROTOCOL, NULL, "malformed error object from peer");
	jp_err_set(out, jp_error_from_name(json_string_value(code)),
		   field ? json_string_value(field) : NULL, "%s",
		   message ? json_string_value(message) : json_string_value(code));
	return 0;
}
