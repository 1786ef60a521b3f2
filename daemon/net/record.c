/* daemon/net/record.c: the job record, the one place that knows its members (PROTOCOL.md
 * section 5), written as JSON text (record.h says why). */
#include "daemon/net/record.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/run/exec.h"

int jd_json_text_raw(struct jp_buf *out, const char *s)
{
	return jp_buf_append(out, s, strlen(s));
}

static int put(struct jp_buf *b, const char *s)
{
	return jd_json_text_raw(b, s);
}

int jd_json_text_int(struct jp_buf *out, int64_t v)
{
	char t[24], *p = t + sizeof(t);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return jp_buf_append(out, p, (size_t)(t + sizeof(t) - p));
}

/* utf8_len: the length of the valid UTF-8 sequence at s (1 to 4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		       (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

int jd_json_text_string(struct jp_buf *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	int rc = jp_buf_append(out, "\"", 1);

	while (rc == 0 && *p) {
		const unsigned char *run = p;
		size_t n;

		/* Copy the longest run that needs no escaping in one append. */
		while (*p >= 0x20 && *p != '"' && *p != '\\' && (n = utf8_len(p)) > 0)
			p += n;
		if (p > run)
			rc = jp_buf_append(out, run, (size_t)(p - run));
		if (rc || !*p)
			break;
		if (*p == '"' || *p == '\\') {
			char e[2] = {'\\', (char)*p};

			rc = jp_buf_append(out, e, 2);
		} else if (*p < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};

			rc = jp_buf_append(out, e, 6);
		} else {
			rc = put(out, "\\ufffd"); /* a byte that is not valid UTF-8 */
		}
		p++;
	}
	return rc ? rc : jp_buf_append(out, "\"", 1);
}

/* member: `,"key":` (the first member of a record has no comma; jd_record_text writes
 * it itself). */
static int member(struct jp_buf *b, const char *key)
{
	return jp_buf_append(b, ",\"", 2) || put(b, key) || jp_buf_append(b, "\":", 2)
		       ? JSCHED_ENOMEM
		       : 0;
}

static int value_text(struct jp_buf *b, const json_t *v)
{
	char *s;
	int rc;

	if (!v || json_is_null(v))
		return put(b, "null");
	if (json_is_integer(v))
		return jd_json_text_int(b, json_integer_value(v));
	if (json_is_string(v))
		return jd_json_text_string(b, json_string_value(v));
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		return JSCHED_ENOMEM;
	rc = put(b, s);
	free(s);
	return rc;
}

/* base_text: the record with every member but the exec part's. */
static int base_text(struct jp_buf *out, const struct jd_job *j, enum jd_state s)
{
	int rc;

	rc = put(out, "{\"job\":") || jd_json_text_int(out, (int64_t)j->id) ||
	     member(out, "client") || jd_json_text_string(out, j->client->name) ||
	     member(out, "uid") || jd_json_text_int(out, (int64_t)j->uid) ||
	     member(out, "kind") || put(out, j->kind == JD_KIND_CALL ? "\"call\"" : "\"exec\"") ||
	     member(out, "priority") || jd_json_text_string(out, jd_prio_name(j->prio)) ||
	     member(out, "state") || jd_json_text_string(out, jd_state_name(s)) ||
	     member(out, "submitted_ms") || jd_json_text_int(out, (int64_t)j->submitted_ms);
	if (!rc && j->name)
		rc = member(out, "name") || jd_json_text_string(out, j->name);
	if (!rc && j->started_ms && s >= JD_RUNNING)
		rc = member(out, "started_ms") || jd_json_text_int(out, (int64_t)j->started_ms);
	if (!rc && jd_state_final(s)) {
		rc = member(out, "finished_ms") || jd_json_text_int(out, (int64_t)j->finished_ms);
		if (s == JD_SUCCEEDED) {
			/* A call's result; an exec job's outcome is the exec part's members. */
			if (!rc && j->kind == JD_KIND_CALL)
				rc = member(out, "value") || value_text(out, j->value);
		} else if (!rc) {
			enum jd_cause cause = j->cause != JD_CAUSE_NONE ? j->cause : JD_CAUSE_HANDLER;

			rc = member(out, "cause") || jd_json_text_string(out, jd_cause_name(cause)) ||
			     member(out, "reason") ||
			     jd_json_text_string(out, j->reason ? j->reason : jd_state_name(s)) ||
			     (j->value && (member(out, "detail") || value_text(out, j->value)));
		}
	}
	return rc || jp_buf_append(out, "}", 1) ? JSCHED_ENOMEM : 0;
}

/* exec_record: an exec job's record as an object, with the members exec.c adds to it.
 * New reference, or NULL. */
static json_t *exec_record(const struct jd_job *j, enum jd_state s)
{
	struct jp_buf b;
	json_t *r = NULL;

	jp_buf_init(&b);
	if (base_text(&b, j, s) == 0)
		r = json_loadb((const char *)b.data, b.len, 0, NULL);
	jp_buf_free(&b);
	if (r && jd_state_final(s))
		jd_exec_record(j, r);
	return r;
}

int jd_record_text(struct jp_buf *out, struct jd_daemon *d, const struct jd_job *j,
		   enum jd_state s)
{
	json_t *r;
	char *t;
	int rc;

	(void)d;
	if (!j->exec)
		return base_text(out, j, s);
	/* The exec part adds its members to a jansson object (exec.c): go through one. */
	r = exec_record(j, s);
	t = r ? json_dumps(r, JSON_COMPACT) : NULL;
	json_decref(r);
	rc = t ? put(out, t) : JSCHED_ENOMEM;
	free(t);
	return rc;
}

int jd_records_text(struct jp_buf *out, struct jd_daemon *d, const struct jd_records *r,
		    bool single)
{
	/* A call job's record is about 200 bytes: one allocation for a batch's reply, not a
	 * dozen doublings. */
	int rc = jp_buf_reserve(out, r->n * 200) || (!single && put(out, "["));

	for (size_t i = 0; i < r->n && !rc; i++) {
		if (i > 0)
			rc = put(out, ",");
		if (!rc)
			rc = r->texts && r->texts[i].len
				     ? jp_buf_append(out, r->texts[i].data, r->texts[i].len)
				     : jd_record_text(out, d, r->jobs[i], r->jobs[i]->state);
	}
	if (rc)
		return JSCHED_ENOMEM;
	return single ? 0 : put(out, "]");
}

int jd_reply_text_start(struct jp_buf *b, int64_t id)
{
	return jp_buf_reserve(b, JP_HEADER_BYTES + 64) ||
			       jp_buf_append(b, "\0\0\0\0", JP_HEADER_BYTES) || put(b, "{\"id\":") ||
			       (id == JP_ID_NONE ? put(b, "null") : jd_json_text_int(b, id))
		       ? JSCHED_ENOMEM
		       : 0;
}
