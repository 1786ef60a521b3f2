/* daemon/net/record.c: the job record, the one place that knows its members (PROTOCOL.md
 * section 5), written as JSON text (record.h says why). */
#include "daemon/net/record.h"
#include "daemon/core/array.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/run/exec.h"

static int put(struct jp_buf *b, const char *s)
{
	return jd_json_text_raw(b, s);
}

int jd_json_text_int(struct jp_buf *out, int64_t v)
{
	return jp_buf_append_int(out, v);
}

int jd_json_text_string(struct jp_buf *out, const char *s)
{
	return jd_json_text_stringn(out, s, strlen(s));
}

int jd_json_text_stringn(struct jp_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	int rc = jp_buf_append(out, "\"", 1);

	while (rc == 0 && p < end) {
		const unsigned char *run = p;
		size_t n;

		/* Copy the longest run that needs no escaping in one append (plain ASCII, a
		 * load per byte, without a call per byte). */
		for (;;) {
			p = jp_json_plain_end(p, end);
			if (p < end && *p >= 0x80 && (n = jp_utf8_seq((const char *)p)) > 0 &&
			    n <= (size_t)(end - p))
				p += n;
			else
				break;
		}
		if (p > run)
			rc = jp_buf_append(out, run, (size_t)(p - run));
		if (rc || p == end)
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
	size_t n = strlen(key);
	unsigned char *p;

	if (jp_buf_reserve(b, n + 4) < 0)
		return JSCHED_ENOMEM;
	p = b->data + b->len;
	p[0] = ',';
	p[1] = '"';
	memcpy(p + 2, key, n);
	p[n + 2] = '"';
	p[n + 3] = ':';
	b->len += n + 4;
	return 0;
}

/* put_lit: n bytes at s (a literal: the copy is inlined), without a call when there is
 * room.  MEMBER: member() for a literal key.  A record's dozen members written through
 * member() cost 78 instructions each (strlen, the reserve's call, a memcpy call), a third
 * of a noop's record; this way about 15 (callgrind, the one-request round trip). */
static inline int put_lit(struct jp_buf *b, const char *s, size_t n)
{
	if (b->cap - b->len < n && jp_buf_reserve(b, n) < 0)
		return JSCHED_ENOMEM;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

#define MEMBER(b, key) put_lit((b), ",\"" key "\":", sizeof(",\"" key "\":") - 1)

/* A record member's integer as the last record written on this thread had it, digits
 * and all.  The records of one reply mostly repeat their neighbours' uid and times: a
 * batch's jobs share their submitted_ms, and short jobs a hundred at a time their
 * started_ms and finished_ms.  A repeated value is copied (one compare and a fixed
 * 24-byte copy) instead of converted again (about 105 instructions for a 13-digit time,
 * proto/buf.c).  Thread-local: a record written on another thread has its own. */
struct int_memo {
	int64_t v;
	size_t n; /* 0: nothing kept yet */
	unsigned char t[24];
};

enum { MEMO_UID, MEMO_SUBMITTED, MEMO_STARTED, MEMO_FINISHED, MEMO_N };

static _Thread_local struct int_memo memos[MEMO_N];

/* memo_int: append v in decimal as jd_json_text_int does, through memo m. */
static int memo_int(struct jp_buf *out, struct int_memo *m, int64_t v)
{
	if (m->n != 0 && m->v == v) {
		if (out->cap - out->len >= sizeof(m->t)) {
			memcpy(out->data + out->len, m->t, sizeof(m->t)); /* past n: room */
			out->len += m->n;
			return 0;
		}
		return jp_buf_append(out, m->t, m->n);
	}
	size_t before = out->len;

	if (jp_buf_append_int(out, v) < 0)
		return JSCHED_ENOMEM;
	m->v = v;
	m->n = out->len - before; /* 1 to 20 */
	memcpy(m->t, out->data + before, m->n);
	return 0;
}

/* quoted: a name of the daemon's own (a state's, a priority's: ASCII that needs no
 * escape) as a JSON string. */
static int quoted(struct jp_buf *b, const char *name)
{
	size_t n = strlen(name);

	if (jp_buf_reserve(b, n + 2) < 0)
		return JSCHED_ENOMEM;
	b->data[b->len] = '"';
	memcpy(b->data + b->len + 1, name, n);
	b->data[b->len + 1 + n] = '"';
	b->len += n + 2;
	return 0;
}

/* json_text: v as compact JSON text (null for NULL). */
static int json_text(struct jp_buf *b, const json_t *v)
{
	char *s;
	int rc;

	if (!v || json_is_null(v))
		return put(b, "null");
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		return JSCHED_ENOMEM;
	rc = put(b, s);
	free(s);
	return rc;
}

/* result_member: a job's result, kept as JSON text (jobs.h), as the member `name`
 * ("value", or "detail" for a failed handler's), or null; one longer than value_max bytes
 * as its size instead, "result_bytes": N, "result_omitted": true (the `result` operation
 * fetches it alone, op_result.c), so that no record outgrows a reply. */
static int result_member(struct jp_buf *b, const struct jd_job *j, const char *name,
			 size_t value_max)
{
	if (j->value_len > value_max || j->value_file)
		return MEMBER(b, "result_bytes") || jd_json_text_int(b, (int64_t)j->value_len) ||
		       put(b, ",\"result_omitted\":true");
	return member(b, name) ||
	       (j->value ? jp_buf_append(b, j->value, j->value_len) : put(b, "null"));
}

/* COMMAND_MAX: the most bytes of an exec job's argv the record's "command" carries (the
 * whole argv can be 64 KiB: the record is for showing it, status "detail" for all of it). */
#define COMMAND_MAX 256

/* word_plain: whether a word reads the same to a shell without quotes. */
static bool word_plain(const char *w)
{
	if (!*w)
		return false;
	for (; *w; w++)
		if (!((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z') || (*w >= '0' && *w <= '9') ||
		      strchr("-_./=:,+%@", *w)))
			return false;
	return true;
}

/* A command line being written, cut at COMMAND_MAX bytes. */
struct line {
	char s[COMMAND_MAX + 4];
	size_t n;
	bool cut;
};

static void line_add(struct line *l, const char *s, size_t len)
{
	if (l->cut || l->n + len > COMMAND_MAX) {
		l->cut = true;
		return;
	}
	memcpy(l->s + l->n, s, len);
	l->n += len;
}

/* command_text: argv as one line a shell would read back (words with anything but
 * [A-Za-z0-9-_./=:,+%@] in single quotes), cut at COMMAND_MAX bytes with "..." after the
 * cut (never inside a UTF-8 sequence), written as a JSON string.  Returns 0 or
 * JSCHED_ENOMEM. */
static int command_text(struct jp_buf *out, char *const *argv)
{
	struct line l = {.n = 0, .cut = false};

	for (size_t i = 0; argv[i] && !l.cut; i++) {
		bool q = !word_plain(argv[i]);

		if (i > 0)
			line_add(&l, " ", 1);
		if (q)
			line_add(&l, "'", 1);
		for (const char *c = argv[i]; *c; c++)
			line_add(&l, *c == '\'' && q ? "'\\''" : c, *c == '\'' && q ? 4 : 1);
		if (q)
			line_add(&l, "'", 1);
	}
	if (l.cut) {
		size_t lead = l.n;

		while (lead > 0 && ((unsigned char)l.s[lead - 1] & 0xc0) == 0x80)
			lead--;
		if (lead > 0 && (unsigned char)l.s[lead - 1] >= 0xc0) {
			unsigned c = (unsigned char)l.s[lead - 1];
			size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

			if (l.n - (lead - 1) < want)
				l.n = lead - 1; /* the last character was cut: drop it whole */
		}
		memcpy(l.s + l.n, "...", 3);
		l.n += 3;
	}
	l.s[l.n] = '\0';
	return jd_json_text_string(out, l.s);
}

/* array_text: an array parent's "array" member: its indices and its elements per state. */
static int array_text(struct jp_buf *out, const struct jd_array *a)
{
	int rc = put(out, "{\"indices\":") || jd_json_text_string(out, a->sp.array_text) ||
		 put(out, ",\"count\":") || jd_json_text_int(out, (int64_t)a->n) ||
		 put(out, ",\"max_running\":") || jd_json_text_int(out, a->sp.array.max_running) ||
		 put(out, ",\"states\":{");

	for (int s = 0; !rc && s < JD_NSTATES; s++)
		rc = (s && put(out, ",")) || jd_json_text_string(out, jd_state_name((enum jd_state)s)) ||
		     put(out, ":") || jd_json_text_int(out, (int64_t)a->counts[s]);
	return rc || put(out, "}}");
}

json_t *jd_hook_json(const struct jd_hook *h)
{
	static const char *const states[] = {"pending", "running", "succeeded", "failed"};
	json_t *o = json_object();

	if (!o || (h->on_exit && json_object_set_new(o, "on_exit", json_string(h->on_exit)) < 0) ||
	    (h->notify && json_object_set_new(o, "notify", json_true()) < 0) ||
	    json_object_set_new(o, "timeout_ms", json_integer(h->timeout_ms)) < 0 ||
	    json_object_set_new(o, "state", json_string(states[h->state & 3])) < 0 ||
	    (h->exit_code >= 0 && json_object_set_new(o, "exit_code", json_integer(h->exit_code)) < 0) ||
	    (h->signal > 0 && json_object_set_new(o, "signal", json_integer(h->signal)) < 0) ||
	    (h->reason && json_object_set_new(o, "reason", json_string(h->reason)) < 0) ||
	    (h->finished_ms &&
	     json_object_set_new(o, "finished_ms", json_integer((json_int_t)h->finished_ms)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* attempt_text: one attempt as an object: its number, times, how it ended. */
static int attempt_text(struct jp_buf *out, uint32_t number, const struct jd_attempt *a)
{
	int rc = put(out, "{\"attempt\":") || jd_json_text_int(out, number);

	if (!rc && a->started_ms)
		rc = MEMBER(out, "started_ms") || jd_json_text_int(out, (int64_t)a->started_ms);
	if (!rc)
		rc = MEMBER(out, "finished_ms") || jd_json_text_int(out, (int64_t)a->finished_ms) ||
		     MEMBER(out, "state") || jd_json_text_string(out, jd_state_name((enum jd_state)a->state));
	if (!rc && a->exit_code >= 0)
		rc = MEMBER(out, "exit_code") || jd_json_text_int(out, a->exit_code);
	if (!rc && a->signal > 0)
		rc = MEMBER(out, "signal") || jd_json_text_int(out, a->signal);
	if (!rc && a->cause != JP_CAUSE_NONE)
		rc = MEMBER(out, "cause") || jd_json_text_string(out, jp_cause_name((enum jp_cause)a->cause));
	return rc || put(out, "}");
}

/* attempts_text: a job with a retry policy or more than one attempt: "attempt" (the
 * current one's number), "max_attempts", "next_attempt_ms" while retrying, and
 * "attempts", every attempt that ended (the last one too, once final). */
static int attempts_text(struct jp_buf *out, const struct jd_job *j, enum jd_state s)
{
	int rc = MEMBER(out, "attempt") || jd_json_text_int(out, (int64_t)j->n_attempts + 1);

	if (!rc && j->retry)
		rc = MEMBER(out, "max_attempts") || jd_json_text_int(out, j->retry->max_attempts);
	if (!rc && s == JD_RETRYING)
		rc = MEMBER(out, "next_attempt_ms") ||
		     jd_json_text_int(out, (int64_t)(j->run ? j->run->next_attempt_ms : 0)) ||
		     (j->reason && (MEMBER(out, "reason") || jd_json_text_string(out, j->reason)));
	if (!rc)
		rc = MEMBER(out, "attempts") || put(out, "[");
	for (uint32_t k = 0; !rc && k < j->n_attempts; k++)
		rc = (k && put(out, ",")) || attempt_text(out, k + 1, &j->attempts[k]);
	if (!rc && jd_state_final(s)) {
		struct jd_attempt last = {.started_ms = j->started_ms, .finished_ms = j->finished_ms,
					  .exit_code = -1, .state = (uint8_t)s, .cause = (uint8_t)j->cause};

		if (j->exec && j->exec->res.end == JD_EXEC_EXITED)
			last.exit_code = j->exec->res.exit_code;
		else if (j->exec && j->exec->res.end == JD_EXEC_SIGNALED)
			last.signal = j->exec->res.signal;
		rc = (j->n_attempts && put(out, ",")) || attempt_text(out, j->n_attempts + 1, &last);
	}
	return rc || put(out, "]");
}

/* base_text: the record with every member but the exec part's; results longer than
 * value_max bytes by their size (result_member). */
static int base_text(struct jp_buf *out, const struct jd_job *j, enum jd_state s,
		     size_t value_max)
{
	int rc;

	rc = put_lit(out, "{\"job\":", 7) || jd_json_text_int(out, (int64_t)j->id) ||
	     MEMBER(out, "client") || jd_json_text_string(out, j->client->name) ||
	     MEMBER(out, "uid") || memo_int(out, &memos[MEMO_UID], (int64_t)j->uid) ||
	     MEMBER(out, "kind") || put(out, j->kind == JD_KIND_CALL ? "\"call\"" : "\"exec\"") ||
	     MEMBER(out, "priority") || quoted(out, jd_prio_name(j->prio)) ||
	     MEMBER(out, "state") || quoted(out, jd_state_name(s)) ||
	     MEMBER(out, "submitted_ms") ||
	     memo_int(out, &memos[MEMO_SUBMITTED], (int64_t)j->submitted_ms);
	if (!rc && j->name)
		rc = MEMBER(out, "name") || jd_json_text_string(out, j->name);
	if (!rc && (s == JD_QUEUED || s == JD_SCHEDULED || s == JD_RETRYING) && j->held)
		rc = MEMBER(out, "held") || put(out, "true");
	if (!rc && (j->retry || j->n_attempts))
		rc = attempts_text(out, j, s);
	if (!rc && j->not_before_ms)
		rc = MEMBER(out, "not_before") || jd_json_text_int(out, (int64_t)j->not_before_ms);
	if (!rc && j->key)
		rc = MEMBER(out, "key") || jd_json_text_string(out, j->key);
	if (!rc && j->arr)
		rc = MEMBER(out, "array") || array_text(out, j->arr);
	if (!rc && j->hook) {
		json_t *h = jd_hook_json(j->hook);

		rc = !h || MEMBER(out, "hooks") || json_text(out, h);
		json_decref(h);
	}
	if (!rc && j->array_id)
		rc = MEMBER(out, "array_id") || jd_json_text_int(out, (int64_t)j->array_id) ||
		     MEMBER(out, "array_index") || jd_json_text_int(out, j->array_index);
	/* What runs: a call's handler, an exec job's command line. */
	if (!rc && j->kind == JD_KIND_CALL && j->handler)
		rc = MEMBER(out, "fn") || jd_json_text_string(out, j->handler->name);
	if (!rc && j->exec && j->exec->spec.argv)
		rc = MEMBER(out, "command") || command_text(out, j->exec->spec.argv);
	if (!rc && j->started_ms && s >= JD_RUNNING)
		rc = MEMBER(out, "started_ms") ||
		     memo_int(out, &memos[MEMO_STARTED], (int64_t)j->started_ms);
	if (!rc && jd_state_final(s)) {
		rc = MEMBER(out, "finished_ms") ||
		     memo_int(out, &memos[MEMO_FINISHED], (int64_t)j->finished_ms);
		if (s == JD_SUCCEEDED) {
			/* A call's result; an exec job's outcome is the exec part's members. */
			if (!rc && j->kind == JD_KIND_CALL)
				rc = result_member(out, j, "value", value_max);
		} else if (!rc) {
			/* A final job that did not succeed always has a cause; the fallback
			 * keeps the record whole if one is ever missed. */
			enum jp_cause cause = j->cause != JP_CAUSE_NONE ? j->cause : JP_CAUSE_HANDLER;

			rc = MEMBER(out, "cause") || jd_json_text_string(out, jp_cause_name(cause)) ||
			     MEMBER(out, "reason") ||
			     jd_json_text_string(out, j->reason ? j->reason : jd_state_name(s)) ||
			     (j->value_len && result_member(out, j, "detail", value_max));
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
	if (base_text(&b, j, s, SIZE_MAX) == 0)
		r = json_loadb((const char *)b.data, b.len, 0, NULL);
	jp_buf_free(&b);
	/* A remote job's Slurm id and node while it runs, too; and a command's indices of
	 * its named resources. */
	if (r && (jd_state_final(s) || j->exec->ran_on == JD_BACKEND_SLURM || j->exec->assigned))
		jd_exec_record(j, r);
	return r;
}

int jd_record_text(struct jp_buf *out, struct jd_net *d, const struct jd_job *j,
		   enum jd_state s)
{
	json_t *r;
	char *t;
	int rc;

	if (!j->exec)
		return base_text(out, j, s, d->cfg->value_bytes);
	/* The exec part adds its members to a jansson object (exec.c): go through one. */
	r = exec_record(j, s);
	t = r ? json_dumps(r, JSON_COMPACT) : NULL;
	json_decref(r);
	rc = t ? put(out, t) : JSCHED_ENOMEM;
	free(t);
	return rc;
}

int jd_records_text(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
		    bool single)
{
	return jd_records_text_paged(out, d, r, single, 0, NULL);
}

/* brief_text: a brief record, the job's id and state (wait's `fields` "brief"), for a
 * client that waits only to learn how its jobs ended (bench/e2e/README.md has the count). */
static int brief_text(struct jp_buf *out, const struct jd_job *j)
{
	return put_lit(out, "{\"job\":", 7) || jd_json_text_int(out, (int64_t)j->id) ||
	       MEMBER(out, "state") || quoted(out, jd_state_name(j->state)) || jp_buf_append(out, "}", 1)
	       ? JSCHED_ENOMEM : 0;
}

/* one_text: record i of r, as r asks (a text given, brief, or whole). */
static int one_text(struct jp_buf *out, struct jd_net *d, const struct jd_records *r, size_t i)
{
	if (r->texts && r->texts[i].len)
		return jp_buf_append(out, r->texts[i].data, r->texts[i].len);
	if (r->brief)
		return brief_text(out, r->jobs[i]);
	return jd_record_text(out, d, r->jobs[i], r->jobs[i]->state);
}

int jd_records_text_paged(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
			  bool single, size_t budget, size_t *written)
{
	size_t i = 0;
	bool full;

	/* `single`: one id asked for, its record alone (no array). */
	if (single) {
		if (r->n && one_text(out, d, r, 0))
			return JSCHED_ENOMEM;
		if (written)
			*written = r->n ? 1 : 0;
		return 0;
	}
	if (jd_records_text_range(out, d, r, r->n, budget, &i, &full) || put(out, "]"))
		return JSCHED_ENOMEM;
	if (written)
		*written = i;
	return 0;
}

int jd_records_text_range(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
			  size_t to, size_t budget, size_t *next, bool *full)
{
	size_t i = *next;
	int rc = 0;

	/* A call job's record is about 200 bytes, a brief one about 40: one allocation for a
	 * batch's reply, not a dozen doublings. */
	if (i == 0)
		rc = jp_buf_reserve(out, r->n * (r->brief ? 40 : 200)) || put(out, "[");
	*full = false;
	for (; i < to && !rc; i++) {
		size_t before = out->len;

		if (i > 0)
			rc = put(out, ",");
		if (!rc)
			rc = one_text(out, d, r, i);
		/* Past the budget: this record goes to the next page (never the first). */
		if (!rc && budget && i > 0 && out->len > budget) {
			out->len = before;
			*full = true;
			break;
		}
	}
	*next = i;
	return rc ? JSCHED_ENOMEM : 0;
}

int jd_reply_text_start(struct jp_buf *b, int64_t id)
{
	return jp_buf_reserve(b, JP_HEADER_BYTES + 64) ||
			       jp_buf_append(b, "\0\0\0\0", JP_HEADER_BYTES) || put(b, "{\"id\":") ||
			       (id == JP_ID_NONE ? put(b, "null") : jd_json_text_int(b, id))
		       ? JSCHED_ENOMEM
		       : 0;
}

/* strv_json: a NULL-terminated string vector as an array of strings, cut at '=' when
 * `names` (an environment's names only).  New reference, or NULL. */
static json_t *strv_json(char *const *v, bool names)
{
	json_t *a = json_array();

	for (size_t i = 0; a && v && v[i]; i++) {
		size_t len = names ? strcspn(v[i], "=") : strlen(v[i]);

		if (json_array_append_new(a, json_stringn(v[i], len)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *jd_record_detail(struct jd_net *d, const struct jd_job *j)
{
	struct jp_buf b;
	json_t *rec = NULL, *after = json_array(), *any_of = json_array();
	int rc;

	jp_buf_init(&b);
	rc = jd_record_text(&b, d, j, j->state);
	if (!rc)
		rec = json_loadb((const char *)b.data, b.len, 0, NULL);
	jp_buf_free(&b);
	rc = !rec || !after || !any_of;
	for (uint32_t i = 0; !rc && i < j->n_deps; i++)
		rc = json_array_append_new(j->deps[i].any ? any_of : after,
					   json_integer((json_int_t)j->deps[i].id));
	if (!rc && json_array_size(after))
		rc = json_object_set(rec, "after", after);
	if (!rc && json_array_size(any_of))
		rc = json_object_set(rec, "any_of", any_of);
	if (!rc && j->exec) {
		const struct jd_exec_spec *s = &j->exec->spec;

		rc = json_object_set_new(rec, "argv", strv_json(s->argv, false)) ||
		     json_object_set_new(rec, "cwd", json_string(s->cwd ? s->cwd : "/")) ||
		     json_object_set_new(rec, "env_keys", strv_json(s->env, true)) ||
		     json_object_set_new(rec, "stdin_bytes", json_integer((json_int_t)s->stdin_len)) ||
		     (s->timeout_ms &&
		      json_object_set_new(rec, "timeout_ms", json_integer((json_int_t)s->timeout_ms)));
	} else if (!rc && !jd_state_final(j->state)) {
		rc = json_object_set_new(rec, "args", j->args ? json_incref(j->args) : json_null());
	} else if (!rc) {
		rc = json_object_set_new(rec, "args_dropped", json_true()); /* jobs.h: shed */
	}
	json_decref(after);
	json_decref(any_of);
	if (rc) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}
