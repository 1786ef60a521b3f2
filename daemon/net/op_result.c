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
 * With the journal a result that long lives in a file (core/jobs.h, value_file), and a
 * piece is read from there: only its window, never the whole result.
 *
 * A piece ends on a character boundary (the text is UTF-8, and a JSON string must be), and
 * an offset inside a character is refused.  A piece is a string rather than base64, since
 * the text is already UTF-8: JSON's escapes only double the quotes and backslashes, and
 * the writer stops where the escaped piece would pass the reply budget.  Loop thread.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/outfile.h"
#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"

/* escaped: the bytes character c (of n bytes) takes in a JSON string. */
static size_t escaped(unsigned char c, size_t n)
{
	return c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : n;
}

/* piece_text: append, as a JSON string, the whole characters at the start of win[0, wn)
 * (the result's text from some offset; NUL after it), at most max bytes of text (at
 * least one character) and no more than `room` bytes written; `last`: the window reaches
 * the text's end (else a character cut by the window's end waits for the next piece).
 * Stores the bytes taken in *took.  Returns 0 or JSCHED_ENOMEM. */
static int piece_text(struct jp_buf *out, const char *win, size_t wn, bool last, size_t max,
		      size_t room, size_t *took)
{
	size_t p = 0, used = 2;

	while (p < wn) {
		unsigned char c = (unsigned char)win[p];
		size_t n = c < 0x80 ? 1 : jp_utf8_seq(win + p), e;

		if (n > wn - p && !last)
			break;
		if (n == 0 || n > wn - p)
			n = 1; /* not UTF-8 (never from jansson): written as U+FFFD */
		e = n == 1 && c >= 0x80 ? 6 : escaped(c, n);
		if (p > 0 && (p + n > max || used + e > room))
			break;
		used += e;
		p += n;
	}
	*took = p;
	return jp_buf_reserve(out, used) ? JSCHED_ENOMEM : jd_json_text_stringn(out, win, p);
}

/* window: the result's text from off: in memory, j's own (*owned NULL); in its file, the
 * bytes a piece can use (at most want, and 4 more: a character cut there), read into
 * *owned (NUL-terminated).  Stores their count in *wn.  NULL when the file cannot be read
 * (JSCHED_EIO in *rc) or memory ran out. */
static const char *window(struct jd_net *d, const struct jd_job *j, size_t off, size_t len,
			  size_t want, char **owned, size_t *wn, int *rc)
{
	long got;

	*owned = NULL;
	*rc = 0;
	if (!j->value_file) {
		*wn = len - off;
		return (j->value ? j->value : "null") + off;
	}
	*wn = len - off < want + 4 ? len - off : want + 4;
	if (!(*owned = malloc(*wn + 1))) {
		*rc = JSCHED_ENOMEM;
		return NULL;
	}
	got = d->jobs->outfiles ? jd_outfiles_value_read(d->jobs->outfiles, j->id, off, *owned, *wn)
				: JSCHED_EIO;
	if (got < 0 || (size_t)got != *wn) {
		free(*owned);
		*owned = NULL;
		*rc = JSCHED_EIO;
		return NULL;
	}
	(*owned)[*wn] = '\0';
	return *owned;
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
	const char *win;
	char *owned;
	size_t len, wn, took = 0;
	struct jp_buf b;
	int rc;

	if (!j || !has_result(c, r->id, j))
		return;
	len = j->value || j->value_file ? j->value_len : 4; /* "null" */
	if (max > JD_REPLY_BUDGET)
		max = JD_REPLY_BUDGET;
	if (off > len) {
		jd__reply_error(c, r->id, JSCHED_EBAD_REQUEST, "offset",
				"offset %zu is past the result's %zu bytes", off, len);
		return;
	}
	if (!(win = window(c->d, j, off, len, max, &owned, &wn, &rc))) {
		jd__reply_error(c, r->id, rc, NULL, rc == JSCHED_EIO ? "job %llu's result file cannot "
				"be read" : "out of memory", (unsigned long long)j->id);
		return;
	}
	if (wn && ((unsigned char)win[0] & 0xc0) == 0x80) {
		free(owned);
		jd__reply_error(c, r->id, JSCHED_EBAD_REQUEST, "offset",
				"offset %zu is inside a character of the result's %zu bytes (ask "
				"from a next_offset)", off, len);
		return;
	}
	jp_buf_init(&b);
	rc = jd_reply_text_start(&b, r->id) || jd_json_text_raw(&b, ",\"ok\":true,\"job\":") ||
	     jd_json_text_int(&b, (int64_t)j->id) || jd_json_text_raw(&b, ",\"bytes\":") ||
	     jd_json_text_int(&b, (int64_t)len) || jd_json_text_raw(&b, ",\"offset\":") ||
	     jd_json_text_int(&b, (int64_t)off) || jd_json_text_raw(&b, ",\"data\":") ||
	     piece_text(&b, win, wn, off + wn == len, max, JD_REPLY_BUDGET - b.len, &took) ||
	     jd_json_text_raw(&b, ",\"next_offset\":") || jd_json_text_int(&b, (int64_t)(off + took)) ||
	     jd_json_text_raw(&b, off + took < len ? ",\"more\":true}" : ",\"more\":false}");
	free(owned);
	if (rc) {
		jp_buf_free(&b);
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	jd_conn_send_frame(c, &b);
}
