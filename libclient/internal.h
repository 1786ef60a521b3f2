/* internal.h: what the files of libjsched share and the library does not export.
 *
 * Internal names carry jc_ ("jsched client"): not jsched_, which the version script exports,
 * and not jp_/jd_, which belong to the codec and the daemon.
 */
#ifndef JSCHED_LIBCLIENT_INTERNAL_H
#define JSCHED_LIBCLIENT_INTERNAL_H

#include <jsched/jsched.h>

#include <jansson.h>
#include <stdatomic.h>

#include "proto/jproto.h"

/* JC_STATE_LAST: the highest enum jsched_state (states are appended after the final ones,
 * so loops over every state run to here). */
#define JC_STATE_LAST JSCHED_STATE_RETRYING

/* A spec's JSON text, as jansson writes its object compactly: len bytes at s (and a NUL). */
struct jc_spec_text {
	size_t len;
	char s[];
};

/* A spec is its JSON object, built member by member (spec.c), and the text of it that the
 * requests written as text (ops.c) copy, made at the first submit after a change: a
 * program that submits one spec many times writes it out once, not per request. */
struct jsched_spec {
	json_t *obj;			  /* owned */
	_Atomic(struct jc_spec_text *) text; /* owned; NULL until jc_spec_text, and after a change */
	char *env_text;			  /* owned: jsched_spec_inherit's environment as JSON text,
					     standing for obj's "env" (a null keeps its place) until
					     the tree is wanted (jc_spec_obj); NULL: obj is whole */
	size_t env_len;
};

/* jc_spec_obj returns spec's object whole (borrowed), the environment kept as text parsed
 * into its place first; NULL when memory ran out. */
const json_t *jc_spec_obj(const struct jsched_spec *spec);

/* jc_spec_text returns spec's text (borrowed from the spec, until it changes or is freed),
 * or NULL when memory ran out. */
const struct jc_spec_text *jc_spec_text(const struct jsched_spec *spec);

/* A value's JSON text as the daemon sent it: len bytes at p, inside a reply's payload (not
 * NUL-terminated).  p == NULL: not known (the text is then made with json_dumps). */
struct jc_text {
	const char *p;
	size_t len;
};

/* The scanners of text.c, over text that jansson has already accepted.
 * - jc_text_member: the value of obj's top-level member key; false if not found.
 * - jc_text_first / jc_text_next: iterate over the elements of an array.
 * - jc_text_elements: the texts of an array's n elements into elems; false unless the
 *   array has exactly n. */
bool jc_text_member(struct jc_text obj, const char *key, struct jc_text *out);
bool jc_text_first(struct jc_text arr, struct jc_text *cursor);
bool jc_text_next(struct jc_text *cursor, struct jc_text *elem);
bool jc_text_elements(struct jc_text arr, struct jc_text *elems, size_t n);

/* jc_result_from_json makes a record from a job record object (borrowed), whose text as
 * sent is text (p NULL: unknown).  Returns NULL when rec is not an object with a positive
 * "job" or memory ran out.  The record is one allocation: its strings follow the struct. */
struct jsched_result *jc_result_from_json(const json_t *rec, struct jc_text text);

/* jc_texts_of returns the texts of the elements of arr (borrowed), whose text is text: a
 * malloc'd array of json_array_size(arr) (the caller frees it), or NULL when they cannot be
 * found (text unknown, a mismatch, out of memory: the records are then written by jansson). */
struct jc_text *jc_texts_of(const json_t *arr, struct jc_text text);

/* jc_results_from_json makes a list from an array of records (borrowed), whose text is
 * text (p NULL: unknown). */
int jc_results_from_json(const json_t *arr, struct jc_text text, struct jsched_results **out);

/* The replies a synchronous call may read straight from their text, without jansson
 * (record.c: jc_fast_from_text), and what it keeps of one.  The kind says which shape the
 * call expects:
 * - JC_FAST_RECORDS: {"id", "ok": true, "jobs": [plain records]} (wait and status of many);
 * - JC_FAST_RECORD: {"id", "ok": true, "job": plain record} (wait of one);
 * - JC_FAST_SUBMIT: {"id", "ok": true, "job": id} with "record": plain record (required
 *   when want_record: a submit with wait), "existing": true/false (both optional) and,
 *   when want_output, "output": {"complete", "stdout", "stderr"}, each stream {"data"
 *   (base64), "bytes", "truncated"} and nothing else (optional: a call job has none);
 * - JC_FAST_IDS: {"id", "ok": true, "jobs": [ids]} or {"id", "ok": true, "job": id}, each
 *   id > 0 (a submit without wait, one spec or a batch; a reply with "existing" is not).
 * A reply of any other shape (an error, "timed_out", a member not listed, a
 * record that is not plain) goes through jansson, as every other message does. */
enum jc_fast_kind { JC_FAST_NONE, JC_FAST_RECORDS, JC_FAST_RECORD, JC_FAST_SUBMIT, JC_FAST_IDS };

struct jc_fast {
	enum jc_fast_kind kind;		/* what the call expects (JC_FAST_NONE: nothing read so) */
	bool want_record;		/* JC_FAST_SUBMIT: "record" must be there */
	bool want_output;		/* JC_FAST_SUBMIT: "output" may be there */
	bool done;			/* the reply was read so: the members below are set */
	struct jsched_results *results; /* JC_FAST_RECORDS (the caller's) */
	struct jsched_result *record;	/* JC_FAST_RECORD, JC_FAST_SUBMIT's "record" (the caller's) */
	uint64_t job;			/* JC_FAST_SUBMIT: the id (> 0) */
	bool existing;			/* JC_FAST_SUBMIT: "existing": true */
	struct jsched_output *output;	/* JC_FAST_SUBMIT's "output", when there (the caller's) */
	uint64_t *ids;			/* JC_FAST_IDS: n_ids > 0 of them (malloc'd, the caller's) */
	size_t n_ids;
};

/* jc_fast_from_text reads a reply (len bytes of text) of f->kind's shape without jansson.
 * Returns 1 with *id and f's results set (f->done), or 0 when the reply is not of that shape
 * or memory ran out (nothing is kept: jansson reads it then). */
int jc_fast_from_text(const char *text, size_t len, int64_t *id, struct jc_fast *f);

/* jc_fast_free frees what f holds and empties it (its kind stays). */
void jc_fast_free(struct jc_fast *f);

/* What the hello reply says (jp_hello_reply_parse's members), read from its text: the
 * strings point into it, without their quotes. */
struct jc_hello {
	int64_t version;
	struct jc_text daemon, instance, client;
	int64_t uid, gid, pid;
	bool admin;
	struct jp_limits limits;
};

/* jc_hello_from_text reads a successful hello reply (len bytes of text) as
 * jp_hello_reply_parse reads its tree, when it holds only plain members (record.c) and
 * none that reader does not know.  Returns 1 with *id and *h set, or 0 (jansson reads it
 * then, and says what is wrong with it). */
int jc_hello_from_text(const char *text, size_t len, int64_t *id, struct jc_hello *h);

/* jc_event_from_json makes an event from an event message (borrowed) whose text is text. */
struct jsched_event *jc_event_from_json(const json_t *msg, struct jc_text text);

/* jc_dup_json returns a malloc'd compact JSON text of v (borrowed), or NULL. */
char *jc_dup_json(const json_t *v);

/* jc_set_error_obj records a daemon error object (borrowed) as conn's last error;
 * jc_set_error records a local one (code, and a printf-style message).  Both return code
 * (the error object's code), so that a call can `return jc_set_error(...)`. */
int jc_set_error_obj(struct jsched_conn *conn, const json_t *error);
int jc_set_error(struct jsched_conn *conn, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* jc_call sends req (steals it; {"op": ...} without "id") and waits for its reply: on
 * success *reply (may be NULL) receives it (new reference).  On an error reply, returns its
 * code with conn's last error set and *reply still set (a wait's timeout carries records).
 * wait_ms is how long the daemon may take by the request's own terms (a wait's timeout_ms;
 * negative: no limit; 0 for every other request): it is added to the connection's reply
 * timeout (jsched_set_timeout).  Not from a callback.  The thread that owns conn. */
int jc_call(struct jsched_conn *conn, json_t *req, json_t **reply, int64_t wait_ms);

/* jc_call_text is jc_call that also gives the reply's payload: *text (malloc'd, the caller
 * frees it; NULL when memory ran out or there was no reply) of *len bytes.  With results
 * not NULL, a reply {"id", "ok": true, "jobs": [...]} of plain records may be read straight
 * from its text (jc_results_from_text): then the call returns 0 with *results set (the
 * caller's) and *reply and *text NULL; else *results is NULL and the rest as jc_call. */
int jc_call_text(struct jsched_conn *conn, json_t *req, json_t **reply, int64_t wait_ms, char **text,
		 size_t *len, struct jsched_results **results);

/* jc_call_fast is jc_call_text for a request already written as text: body (blen bytes) is
 * the request's JSON object without its closing brace and without "id" ({"op": "submit",
 * ...), which jc_send_text appends; its reply is read straight from its text when it has
 * fast->kind's shape (then fast->done, *reply and *text NULL), else as jc_call_text does
 * (fast->done false).  The thread that owns conn. */
int jc_call_fast(struct jsched_conn *conn, enum jp_op op, const char *body, size_t blen, int64_t wait_ms,
		 struct jc_fast *fast, json_t **reply, char **text, size_t *len);

/* jc_send_text queues a request written as text (body as for jc_call_fast) with its
 * callback; returns the request id (> 0) or an error (then cb never runs). */
int jc_send_text(struct jsched_conn *conn, enum jp_op op, const char *body, size_t blen, jsched_reply_cb cb,
		 void *arg);

/* jc_send queues req (steals it) with its callback; returns the request id (> 0) or an
 * error (then cb never runs).  op is kept so the reply can be read by type. */
int jc_send(struct jsched_conn *conn, json_t *req, jsched_reply_cb cb, void *arg);

/* jc_ids_json builds the "job" (n == 1 and single) or "jobs" member for ids. */
int jc_put_ids(json_t *req, const uint64_t *ids, size_t n, bool single);

/* jc_get_u64 reads a non-negative integer member; false if absent or not one. */
bool jc_get_u64(const json_t *obj, const char *key, uint64_t *out);

#endif /* JSCHED_LIBCLIENT_INTERNAL_H */
