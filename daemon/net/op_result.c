/* daemon/net/op_result.c: the `result` operation: a job's result alone, in pieces.
 *
 * A record carries a result (a call's value, a failed handler's detail) only up to
 * limits.value_bytes; past that it says "result_bytes": N, "result_omitted": true
 * (record.c), and this operation hands out the result's JSON text from an offset, as a
 * JSON string, as much as fits one reply (or `max_bytes` of it): the client asks again
 * from `next_offset` while `more` says so, and parses the pieces joined.  So no reply
 * passes reply_frame_bytes whatever a handler returned, and a listing of large results
 * costs what its records say, not what the results weigh.
 *
 * A piece ends on a character boundary (the text is UTF-8, and a JSON string must be), and
 * an offset inside a character is refused.  A piece is a string rather than base64, since
 * the text is already UTF-8: JSON's escapes only double the quotes and backslashes, and
 * the writer stops where the escaped piece would pass the reply budget.  Loop thread.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"

/* escaped: the bytes character c (of n bytes) takes in a JSON string. */
static size_t escaped(unsigned char c, size_t n)
{
	return c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : n;
}

/* piece_text: append text[off, ...) as a JSON string: whole characters, at most max bytes of
 * text (at least one character), and no more than `room` bytes written; text[0, len) is
 * the result's whole text.  Stores the offset after the piece in *end.  Returns 0 or
 * JSCHED_ENOMEM. */
static int piece_text(struct jp_buf *out, const char *text, size_t len, size_t off, size_t max,
		      size_t room, size_t *end)
{
	size_t p = off, used = 2;

	while (p < len) {
		unsigned char c = (unsigned char)text[p];
		size_t n = c < 0x80 ? 1 : jp_utf8_seq(text + p), e;

		if (n == 0 || n > len - p)
			n = 1; /* not UTF-8 (never from jansson): written as U+FFFD */
		e = n == 1 && c >= 0x80 ? 6 : escaped(c, n);
		if (p > off && (p + n - off > max || used + e > room))
			break;
		used += e;
		p += n;
	}
	*end = p;
	return jp_buf_reserve(out, used) ? JSCHED_ENOMEM : jd_json_text_stringn(out, text + off, p - off);
}

/* has_result: whether j's record has a result to fetch (a call job that has ended with a
 * value or a detail), else replies why not and returns false. */
static bool has_result(struct jd_conn *c, int64_t id, const struct jd_job *j)
{
	const char *why = NULL;

	if (j->exec)
		why = "is a command: its outcome is in its record, its output from output";
	else if (j->arr)
		why = "is a job array: each element has its own result";
	else if (!jd_state_final(j->state))
		why = "has not ended";
	else if (j->state != JD_SUCCEEDED && !j->value_len)
		why = "ended without a result";
	if (why)
		jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, "job", "job %llu %s",
				(unsigned long long)j->id, why);
	return !why;
}

void jd__op_result(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job *j = jd__find_owned(c, r->id, jp_req_int(r, "job", 0), "job");
	size_t off = (size_t)jp_req_int(r, "offset", 0);
	size_t max = (size_t)jp_req_int(r, "max_bytes", JP_MAX_INT);
	const char *text;
	size_t len, end = 0;
	struct jp_buf b;

	if (!j || !has_result(c, r->id, j))
		return;
	text = j->value ? j->value : "null";
	len = j->value ? j->value_len : 4;
	if (off > len || (off < len && ((unsigned char)text[off] & 0xc0) == 0x80)) {
		jd__reply_error(c, r->id, JSCHED_EBAD_REQUEST, "offset",
				off > len ? "offset %zu is past the result's %zu bytes"
					  : "offset %zu is inside a character of the result's %zu "
					    "bytes (ask from a next_offset)", off, len);
		return;
	}
	jp_buf_init(&b);
	if (jd_reply_text_start(&b, r->id) || jd_json_text_raw(&b, ",\"ok\":true,\"job\":") ||
	    jd_json_text_int(&b, (int64_t)j->id) || jd_json_text_raw(&b, ",\"bytes\":") ||
	    jd_json_text_int(&b, (int64_t)len) || jd_json_text_raw(&b, ",\"offset\":") ||
	    jd_json_text_int(&b, (int64_t)off) || jd_json_text_raw(&b, ",\"data\":") ||
	    piece_text(&b, text, len, off, max, JD_REPLY_BUDGET - b.len, &end) ||
	    jd_json_text_raw(&b, ",\"next_offset\":") || jd_json_text_int(&b, (int64_t)end) ||
	    jd_json_text_raw(&b, end < len ? ",\"more\":true}" : ",\"more\":false}")) {
		jp_buf_free(&b);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	jd_conn_send_frame(c, &b);
}
