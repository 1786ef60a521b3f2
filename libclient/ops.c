/* ops.c: the operations of the protocol, one function each (synchronous and, for the
 * common ones, asynchronous).
 *
 * Each builds its request (proto/PROTOCOL.md section 6), hands it to jc_call or jc_send
 * (conn.c) and reads the members of the reply it needs.  The asynchronous variants build
 * the same requests; the callback reads the reply with jsched_reply_*.
 */
#include "libclient/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static json_t *request(enum jp_op op)
{
	return json_pack("{s:s}", "op", jp_op_name(op));
}

/* add sets member key of *req to v (stolen).  If v is NULL or cannot be added, the whole
 * request is dropped (*req = NULL, which jc_call reports as JSCHED_ENOMEM): a request that
 * silently lost a member would mean something else (a drain of another client, a wait
 * without its timeout). */
static void add(json_t **req, const char *key, json_t *v)
{
	if (*req != NULL && (v == NULL || json_object_set_new(*req, key, v) < 0)) {
		json_decref(*req);
		*req = NULL;
	} else if (*req == NULL) {
		json_decref(v);
	}
}

/* Check ids: none zero or above the protocol's largest integer. */
static bool ids_ok(const uint64_t *ids, size_t n)
{
	if (ids == NULL || n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ids[i] == 0 || ids[i] > (uint64_t)JP_MAX_INT)
			return false;
	return true;
}

/* jc_put_ids: see internal.h. */
int jc_put_ids(json_t *req, const uint64_t *ids, size_t n, bool single)
{
	if (req == NULL)
		return JSCHED_ENOMEM;
	if (single && n == 1)
		return json_object_set_new(req, "job", json_integer((json_int_t)ids[0])) == 0 ? 0 : JSCHED_ENOMEM;
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++)
		if (json_array_append_new(arr, json_integer((json_int_t)ids[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	return arr != NULL && json_object_set_new(req, "jobs", arr) == 0 ? 0 : JSCHED_ENOMEM;
}

/* A request with the ids of n jobs, or NULL (bad ids: *err set). */
static json_t *ids_request(struct jsched_conn *c, enum jp_op op, const uint64_t *ids, size_t n, bool single,
			   int *err)
{
	*err = 0;
	if (!ids_ok(ids, n)) {
		*err = jc_set_error(c, JSCHED_EINVAL, "job ids must be between 1 and 2^53-1");
		return NULL;
	}
	json_t *req = request(op);
	if (jc_put_ids(req, ids, n, single) < 0) {
		json_decref(req);
		*err = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
		return NULL;
	}
	return req;
}

/* The text of member key of a reply whose payload is text (len bytes; NULL: unknown), inside
 * its "error" member when in_error: where the records of the reply are copied from, instead
 * of jansson writing them out again (text.c). */
static struct jc_text member_text(const char *text, size_t len, bool in_error, const char *key)
{
	struct jc_text t = { text, len };
	if (in_error && !jc_text_member(t, "error", &t))
		return (struct jc_text){ NULL, 0 };
	if (!jc_text_member(t, key, &t))
		return (struct jc_text){ NULL, 0 };
	return t;
}

/* Read one record (member "job") out of a reply whose payload is text. */
static int read_one(const json_t *from, const char *text, size_t len, struct jsched_result **out)
{
	*out = jc_result_from_json(json_object_get(from, "job"), member_text(text, len, false, "job"));
	return *out != NULL ? 0 : JSCHED_EPROTOCOL;
}

/* ---- requests written as text ------------------------------------------------------------
 *
 * The commonest requests (one submit, with or without its wait, and the wait for one job)
 * are written straight as text, and their replies read straight from theirs (jc_call_fast),
 * with no jansson tree on either side: building the tree of a noop submit with wait, writing
 * it out and reading the reply's tree took 87,700 instructions of the client's per round
 * trip (callgrind), 5.3 times the daemon's.  The text is byte for byte what the tree gave
 * (the members in the same order, the spec as jansson writes it with the same flags, once
 * per spec: jc_spec_text; tests/libclient/test_fastpath.c compares them), so the daemon cannot tell the two apart.  A
 * reply of any other shape (an error, a timeout, output) is read by jansson as before. */

/* put / put_int: append to b; *ok turns false when memory ran out. */
/* put: s appended (ok false when out of memory).  Inline, so that a literal's length is
 * known where it is written (a strlen call each, five a submit). */
static inline void put(struct jp_buf *b, const char *s, bool *ok)
{
	if (jp_buf_append(b, s, strlen(s)) < 0)
		*ok = false;
}

static void put_int(struct jp_buf *b, int64_t v, bool *ok)
{
	if (jp_buf_append_int(b, v) < 0)
		*ok = false;
}

/* submit_text: {"op":"submit","job":SPEC (single: one spec) or "jobs":[SPEC,...] into b
 * (the caller's, empty), then the wait member when wait: as the trees of submit_request and
 * submit_wait_request in the library before were written (the members in that order, each
 * spec's text as jansson writes its object: jc_spec_text).  0, or an error with c's last
 * error set (no spec, a NULL spec, a bad wait mode, out of memory). */
static int submit_text(struct jsched_conn *c, struct jp_buf *b, const struct jsched_spec *const *specs, size_t n,
		       bool single, bool wait, enum jsched_wait_mode mode, int64_t timeout_ms, bool output)
{
	bool ok = true;
	size_t need = 64;
	if (specs == NULL || n == 0)
		return jc_set_error(c, JSCHED_EINVAL, "no job spec");
	if (wait && (unsigned)mode > JSCHED_WAIT_ANY)
		return jc_set_error(c, JSCHED_EINVAL, "bad wait mode");
	for (size_t i = 0; i < n; i++) {
		if (specs[i] == NULL)
			return jc_set_error(c, JSCHED_EINVAL, "spec %zu is NULL", i);
		const struct jc_spec_text *t = jc_spec_text(specs[i]);
		if (t == NULL)
			return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
		need += t->len + 1;
	}
	if (jp_buf_reserve(b, need) < 0)
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	put(b, single ? "{\"op\":\"submit\",\"job\":" : "{\"op\":\"submit\",\"jobs\":[", &ok);
	for (size_t i = 0; i < n; i++) {
		const struct jc_spec_text *t = jc_spec_text(specs[i]); /* kept in the spec: no copy */
		if ((i > 0 && jp_buf_append(b, ",", 1) < 0) || jp_buf_append(b, t->s, t->len) < 0)
			ok = false;
	}
	if (!single)
		put(b, "]", &ok);
	if (wait) {
		const char *sep = "";
		put(b, ",\"wait\":{", &ok);
		if (mode == JSCHED_WAIT_ANY)
			put(b, "\"mode\":\"any\"", &ok), sep = ",";
		if (timeout_ms >= 0) {
			put(b, sep, &ok);
			put(b, "\"timeout_ms\":", &ok);
			put_int(b, timeout_ms, &ok);
			sep = ",";
		}
		if (output)
			put(b, sep, &ok), put(b, "\"output\":true", &ok);
		put(b, "}", &ok);
	}
	return ok ? 0 : jc_set_error(c, JSCHED_ENOMEM, "out of memory");
}

/* ids_text: {"op":OP,"job":ID (single and n == 1) or "jobs":[ID,...] into b (the caller's,
 * empty), as jc_put_ids's tree is written.  0, or an error with c's last error set (an id
 * out of range, out of memory). */
static int ids_text(struct jsched_conn *c, struct jp_buf *b, enum jp_op op, const uint64_t *ids, size_t n,
		    bool single)
{
	bool ok = true;
	if (!ids_ok(ids, n))
		return jc_set_error(c, JSCHED_EINVAL, "job ids must be between 1 and 2^53-1");
	if (jp_buf_reserve(b, 32 + 17 * n) < 0)
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	put(b, "{\"op\":\"", &ok);
	put(b, jp_op_name(op), &ok);
	put(b, single && n == 1 ? "\",\"job\":" : "\",\"jobs\":[", &ok);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			put(b, ",", &ok);
		put_int(b, (int64_t)ids[i], &ok);
	}
	if (!(single && n == 1))
		put(b, "]", &ok);
	return ok ? 0 : jc_set_error(c, JSCHED_ENOMEM, "out of memory");
}

/* wait_text: ids_text for a wait, then its mode, `fields` "brief" if asked, and
 * timeout_ms.  0, or an error with c's last error set. */
static int wait_text(struct jsched_conn *c, struct jp_buf *b, const uint64_t *ids, size_t n, bool single,
		     enum jsched_wait_mode mode, int64_t timeout_ms, bool brief)
{
	bool ok = true;
	if ((unsigned)mode > JSCHED_WAIT_ANY)
		return jc_set_error(c, JSCHED_EINVAL, "bad wait mode");
	int r = ids_text(c, b, JP_OP_WAIT, ids, n, single);
	if (r < 0)
		return r;
	if (mode == JSCHED_WAIT_ANY)
		put(b, ",\"mode\":\"any\"", &ok);
	if (brief)
		put(b, ",\"fields\":\"brief\"", &ok);
	if (timeout_ms >= 0) {
		put(b, ",\"timeout_ms\":", &ok);
		put_int(b, timeout_ms, &ok);
	}
	return ok ? 0 : jc_set_error(c, JSCHED_ENOMEM, "out of memory");
}

/* ids_send: the request of ids_text (wait: of wait_text, with mode and timeout_ms), queued
 * with its callback (jc_send_text). */
static int ids_send(struct jsched_conn *c, enum jp_op op, const uint64_t *ids, size_t n, bool single,
		    enum jsched_wait_mode mode, int64_t timeout_ms, jsched_reply_cb cb, void *arg)
{
	struct jp_buf b = { 0 };
	int r = op == JP_OP_WAIT ? wait_text(c, &b, ids, n, single, mode, timeout_ms, false)
				 : ids_text(c, &b, op, ids, n, single);
	if (r == 0)
		r = jc_send_text(c, op, (const char *)b.data, b.len, cb, arg);
	jp_buf_free(&b);
	return r;
}

/* ---- submit ----------------------------------------------------------------------------- */

/* submit_send: the request of submit_text, queued with its callback (jc_send_text). */
static int submit_send(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n, bool single,
		       bool wait, enum jsched_wait_mode mode, int64_t timeout_ms, jsched_reply_cb cb, void *arg)
{
	struct jp_buf b = { 0 };
	int r = submit_text(c, &b, specs, n, single, wait, mode, timeout_ms, false);
	if (r == 0)
		r = jc_send_text(c, JP_OP_SUBMIT, (const char *)b.data, b.len, cb, arg);
	jp_buf_free(&b);
	return r;
}

/* jsched_submit: see jsched.h. */
int jsched_submit(struct jsched_conn *c, const struct jsched_spec *spec, uint64_t *id)
{
	return jsched_submit_ex(c, spec, id, NULL);
}

/* jsched_submit_ex: see jsched.h. */
int jsched_submit_ex(struct jsched_conn *c, const struct jsched_spec *spec, uint64_t *id, bool *existing)
{
	if (c == NULL || id == NULL)
		return JSCHED_EINVAL;
	if (spec == NULL)
		return jc_set_error(c, JSCHED_EINVAL, "no job spec");
	struct jp_buf b = { 0 };
	struct jc_fast fast = { .kind = JC_FAST_SUBMIT };
	json_t *reply;
	int r = submit_text(c, &b, &spec, 1, true, false, JSCHED_WAIT_ALL, -1, false);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	r = jc_call_fast(c, JP_OP_SUBMIT, (const char *)b.data, b.len, 0, &fast, &reply, NULL, NULL);
	jp_buf_free(&b);
	if (fast.done) {
		*id = fast.job;
		if (existing != NULL)
			*existing = fast.existing;
		jc_fast_free(&fast);
		return 0;
	}
	if (r == 0 && !jc_get_u64(reply, "job", id))
		r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply without a job id");
	if (r == 0 && existing != NULL)
		*existing = json_is_true(json_object_get(reply, "existing"));
	json_decref(reply);
	return r;
}

/* jsched_submit_batch: see jsched.h. */
int jsched_submit_batch(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n, uint64_t *ids)
{
	if (c == NULL || ids == NULL)
		return JSCHED_EINVAL;
	struct jp_buf b = { 0 };
	struct jc_fast fast = { .kind = JC_FAST_IDS };
	json_t *reply;
	int r = submit_text(c, &b, specs, n, false, false, JSCHED_WAIT_ALL, -1, false);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	r = jc_call_fast(c, JP_OP_SUBMIT, (const char *)b.data, b.len, 0, &fast, &reply, NULL, NULL);
	jp_buf_free(&b);
	if (fast.done) {
		if (fast.n_ids == n)
			memcpy(ids, fast.ids, n * sizeof *ids);
		else
			r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply with %zu ids for %zu specs", fast.n_ids, n);
		jc_fast_free(&fast);
		return r;
	}
	const json_t *arr = json_object_get(reply, "jobs");
	if (r == 0 && json_array_size(arr) != n)
		r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply with %zu ids for %zu specs", json_array_size(arr), n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		json_int_t v = json_integer_value(json_array_get(arr, i));
		if (v <= 0)
			r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply with a bad id");
		ids[i] = (uint64_t)v;
	}
	json_decref(reply);
	return r;
}

/* jsched_submit_async: see jsched.h. */
int jsched_submit_async(struct jsched_conn *c, const struct jsched_spec *spec, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return submit_send(c, &spec, 1, true, false, JSCHED_WAIT_ALL, -1, cb, arg);
}

/* jsched_submit_batch_async: see jsched.h. */
int jsched_submit_batch_async(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n,
			      jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return submit_send(c, specs, n, false, false, JSCHED_WAIT_ALL, -1, cb, arg);
}

/* output_from: *out from an `output` reply body (borrowed: the reply, or a submit's
 * "output" member).  Returns 0 or the error (conn's last error set). */
static int output_from(struct jsched_conn *c, const json_t *body, struct jsched_output **out)
{
	struct jsched_output *o = calloc(1, sizeof *o);
	struct jp_err err;
	unsigned char *data;
	int r;

	*out = NULL;
	if (o == NULL)
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	r = jp_output_stream_parse(json_object_get(body, "stdout"), &data, &o->out_len, &o->out_truncated, &err);
	o->out = (char *)data;
	if (r == 0) {
		r = jp_output_stream_parse(json_object_get(body, "stderr"), &data, &o->err_len,
					   &o->err_truncated, &err);
		o->err = (char *)data;
	}
	o->complete = json_is_true(json_object_get(body, "complete"));
	if (r < 0) {
		jsched_output_free(o);
		return jc_set_error(c, r, "cannot read the output reply: %s", err.message);
	}
	*out = o;
	return 0;
}

/* count_final: how many of l's records are final (what jsched_wait_many returns). */
static int count_final(const struct jsched_results *l)
{
	int final = 0;

	for (size_t i = 0; i < l->count; i++)
		final += jsched_state_final(l->items[i]->state);
	return final;
}

/* fetch_rest: the records of ids[(*out)->count .. n) from status, appended to *out: a
 * reply that said "more" held the first ones only (final records do not change).
 * Returns 0, or the error with *out freed and NULL. */
static int fetch_rest(struct jsched_conn *c, const uint64_t *ids, size_t n, struct jsched_results **out)
{
	struct jsched_results *rest = NULL;
	size_t have = (*out)->count;
	int rr = jsched_status_many(c, ids + have, n - have, &rest);
	struct jsched_result **items = rr == 0 ? realloc((*out)->items, (have + rest->count + 1) * sizeof *items) : NULL;

	if (rr == 0 && items == NULL)
		rr = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	if (rr < 0) {
		jsched_results_free(rest);
		jsched_results_free(*out);
		*out = NULL;
		return rr;
	}
	(*out)->items = items;
	memcpy(items + have, rest->items, rest->count * sizeof *items);
	(*out)->count += rest->count;
	rest->count = 0;
	jsched_results_free(rest);
	return 0;
}

/* ---- submit with wait: one round trip ------------------------------------------------------ */

/* jsched_submit_wait: see jsched.h. */
int jsched_submit_wait(struct jsched_conn *c, const struct jsched_spec *spec, int64_t timeout_ms, uint64_t *id,
		       bool *existing, struct jsched_result **out, struct jsched_output **output)
{
	if (out != NULL)
		*out = NULL;
	if (output != NULL)
		*output = NULL;
	if (c == NULL || id == NULL || out == NULL)
		return JSCHED_EINVAL;
	*id = 0;
	if (spec == NULL)
		return jc_set_error(c, JSCHED_EINVAL, "no job spec");
	struct jp_buf b = { 0 };
	/* With output asked for, the reply carries it, read from the text too. */
	struct jc_fast fast = { .kind = JC_FAST_SUBMIT, .want_record = true, .want_output = output != NULL };
	int r = submit_text(c, &b, &spec, 1, true, true, JSCHED_WAIT_ALL, timeout_ms, output != NULL);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	json_t *reply;
	char *text;
	size_t len;
	r = jc_call_fast(c, JP_OP_SUBMIT, (const char *)b.data, b.len, timeout_ms, &fast, &reply, &text, &len);
	jp_buf_free(&b);
	if (fast.done) {
		*id = fast.job;
		if (existing != NULL)
			*existing = fast.existing;
		*out = fast.record;
		fast.record = NULL;
		if (output != NULL)
			*output = fast.output;
		fast.output = NULL;
		jc_fast_free(&fast);
		return 0;
	}
	/* A timeout is the daemon's "timed_out": the job exists, its record as it stands. */
	if ((r == 0 || (r == JSCHED_ETIMEOUT && reply != NULL)) && !jc_get_u64(reply, "job", id))
		r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply without a job id");
	if ((r == 0 || (r == JSCHED_ETIMEOUT && reply != NULL)) &&
	    (*out = jc_result_from_json(json_object_get(reply, "record"),
					member_text(text, len, false, "record"))) == NULL)
		r = jc_set_error(c, json_is_object(json_object_get(reply, "record")) ? JSCHED_ENOMEM : JSCHED_EPROTOCOL,
				 "cannot read the record of the submit's wait");
	if (*out != NULL && existing != NULL)
		*existing = json_is_true(json_object_get(reply, "existing"));
	if (*out != NULL && output != NULL && json_is_object(json_object_get(reply, "output"))) {
		int rr = output_from(c, json_object_get(reply, "output"), output);
		if (rr < 0) {
			jsched_result_free(*out);
			*out = NULL;
			r = rr;
		}
	}
	json_decref(reply);
	free(text);
	return r;
}

/* jsched_submit_batch_wait: see jsched.h. */
int jsched_submit_batch_wait(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n,
			     enum jsched_wait_mode mode, int64_t timeout_ms, uint64_t *ids,
			     struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || ids == NULL || out == NULL)
		return JSCHED_EINVAL;
	struct jp_buf b = { 0 };
	struct jc_fast none = { .kind = JC_FAST_NONE };
	json_t *reply;
	int r = submit_text(c, &b, specs, n, false, true, mode, timeout_ms, false);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	char *text;
	size_t len;
	r = jc_call_fast(c, JP_OP_SUBMIT, (const char *)b.data, b.len, timeout_ms, &none, &reply, &text, &len);
	jp_buf_free(&b);
	bool answered = r == 0 || (r == JSCHED_ETIMEOUT && reply != NULL);
	const json_t *arr = json_object_get(reply, "jobs");
	if (answered && json_array_size(arr) != n)
		r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply with %zu ids for %zu specs", json_array_size(arr), n);
	for (size_t i = 0; answered && r != JSCHED_EPROTOCOL && i < n; i++) {
		json_int_t v = json_integer_value(json_array_get(arr, i));
		if (v <= 0)
			r = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply with a bad id");
		ids[i] = (uint64_t)v;
	}
	if (r == 0 || r == JSCHED_ETIMEOUT) {
		int rr = answered ? jc_results_from_json(json_object_get(reply, "records"),
							 member_text(text, len, false, "records"), out)
				  : 0;
		if (rr < 0)
			r = jc_set_error(c, rr, "cannot read the records of the submit's wait");
	}
	bool more = *out != NULL && json_is_true(json_object_get(reply, "more"));
	json_decref(reply);
	free(text);
	/* Records past the daemon's reply budget ("more") come from status, as for a wait. */
	if (more && (*out)->count < n) {
		int rr = fetch_rest(c, ids, n, out);
		if (rr < 0)
			return rr;
	}
	if (r == 0)
		r = count_final(*out);
	return r;
}

/* jsched_submit_wait_async: see jsched.h. */
int jsched_submit_wait_async(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n,
			     enum jsched_wait_mode mode, int64_t timeout_ms, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return submit_send(c, specs, n, false, true, mode, timeout_ms, cb, arg);
}

/* ---- status, wait, cancel ----------------------------------------------------------------- */

/* jsched_status: see jsched.h. */
int jsched_status(struct jsched_conn *c, uint64_t id, struct jsched_result **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = ids_request(c, JP_OP_STATUS, &id, 1, true, &r), *reply;
	if (req == NULL)
		return r;
	char *text;
	size_t len;
	r = jc_call_text(c, req, &reply, 0, &text, &len, NULL);
	if (r == 0 && read_one(reply, text, len, out) < 0)
		r = jc_set_error(c, JSCHED_EPROTOCOL, "status reply without a job record");
	json_decref(reply);
	free(text);
	return r;
}

/* jsched_status_many: see jsched.h. */
int jsched_status_many(struct jsched_conn *c, const uint64_t *ids, size_t n, struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	int r = 0;
	struct jsched_results *all = NULL;
	/* The daemon answers for a prefix of the ids when their records pass its reply budget
	 * ("more": true): ask again for the rest, from the id after the last record. */
	for (size_t done = 0; r == 0 && (done < n || all == NULL);) {
		struct jp_buf b = { 0 };
		struct jc_fast fast = { .kind = JC_FAST_RECORDS };
		struct jsched_results *page = NULL;
		json_t *reply;
		if ((r = ids_text(c, &b, JP_OP_STATUS, ids + done, n - done, false)) < 0) {
			jp_buf_free(&b);
			break;
		}
		char *text;
		size_t len;
		r = jc_call_fast(c, JP_OP_STATUS, (const char *)b.data, b.len, 0, &fast, &reply, &text, &len);
		jp_buf_free(&b);
		if (fast.done)
			page = fast.results;
		if (r == 0 && page == NULL &&
		    (r = jc_results_from_json(json_object_get(reply, "jobs"), member_text(text, len, false, "jobs"),
					      &page)) < 0)
			jc_set_error(c, r, "cannot read the status reply");
		bool more = r == 0 && json_is_true(json_object_get(reply, "more"));
		json_decref(reply);
		free(text);
		if (r < 0)
			break;
		if ((more && page->count == 0) || done + page->count > n || (!more && done + page->count < n)) {
			jsched_results_free(page);
			r = jc_set_error(c, JSCHED_EPROTOCOL, "status: the daemon answered for %zu of %zu ids",
					 done + page->count, n);
			break;
		}
		done += page->count;
		if (all == NULL) {
			all = page;
			continue;
		}
		struct jsched_result **items = realloc(all->items, (all->count + page->count + 1) * sizeof *items);
		if (items == NULL) {
			jsched_results_free(page);
			r = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
			break;
		}
		all->items = items;
		memcpy(all->items + all->count, page->items, page->count * sizeof *items);
		all->count += page->count;
		page->count = 0;
		jsched_results_free(page);
	}
	if (r < 0) {
		jsched_results_free(all);
		return r;
	}
	*out = all;
	return 0;
}

/* jsched_status_async: see jsched.h. */
int jsched_status_async(struct jsched_conn *c, const uint64_t *ids, size_t n, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return ids_send(c, JP_OP_STATUS, ids, n, false, JSCHED_WAIT_ALL, -1, cb, arg);
}

/* jsched_wait: see jsched.h. */
int jsched_wait(struct jsched_conn *c, uint64_t id, int64_t timeout_ms, struct jsched_result **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	if (!ids_ok(&id, 1))
		return jc_set_error(c, JSCHED_EINVAL, "job ids must be between 1 and 2^53-1");
	/* {"op":"wait","job":ID[,"timeout_ms":T]. */
	struct jp_buf b = { 0 };
	struct jc_fast fast = { .kind = JC_FAST_RECORD };
	int r = wait_text(c, &b, &id, 1, true, JSCHED_WAIT_ALL, timeout_ms, false);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	json_t *reply;
	char *text;
	size_t len;
	r = jc_call_fast(c, JP_OP_WAIT, (const char *)b.data, b.len, timeout_ms, &fast, &reply, &text, &len);
	jp_buf_free(&b);
	if (fast.done) {
		*out = fast.record;
		return 0;
	}
	if (r == 0 && read_one(reply, text, len, out) < 0) {
		r = jc_set_error(c, JSCHED_EPROTOCOL, "wait reply without a job record");
	} else if (r == JSCHED_ETIMEOUT && reply != NULL) {
		/* The daemon's timeout error carries the records as they stand ("jobs"); our own
		 * (jsched_set_timeout) has no reply. */
		const json_t *jobs = json_object_get(json_object_get(reply, "error"), "jobs");
		struct jc_text jtext = member_text(text, len, true, "jobs"), cur, first = { NULL, 0 };
		if (!jc_text_first(jtext, &cur) || !jc_text_next(&cur, &first))
			first.p = NULL;
		*out = jc_result_from_json(json_array_get(jobs, 0), first);
		if (*out == NULL)
			r = jc_set_error(c, json_is_object(json_array_get(jobs, 0)) ? JSCHED_ENOMEM : JSCHED_EPROTOCOL,
					 "cannot read the records of the wait's timeout");
	}
	json_decref(reply);
	free(text);
	return r;
}

/* wait_many: jsched_wait_many, of brief records if `brief`. */
static int wait_many(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode,
		     int64_t timeout_ms, bool brief, struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	struct jp_buf b = { 0 };
	struct jc_fast fast = { .kind = JC_FAST_RECORDS };
	json_t *reply;
	int r = wait_text(c, &b, ids, n, false, mode, timeout_ms, brief);
	if (r < 0) {
		jp_buf_free(&b);
		return r;
	}
	char *text;
	size_t len;
	r = jc_call_fast(c, JP_OP_WAIT, (const char *)b.data, b.len, timeout_ms, &fast, &reply, &text, &len);
	jp_buf_free(&b);
	if (fast.done)
		*out = fast.results;
	if (*out == NULL && (r == 0 || (r == JSCHED_ETIMEOUT && reply != NULL))) {
		const json_t *from = r == 0 ? reply : json_object_get(reply, "error");
		int rr = jc_results_from_json(json_object_get(from, "jobs"), member_text(text, len, r != 0, "jobs"),
					      out);
		if (rr < 0) /* also on a timeout: the records were promised */
			r = jc_set_error(c, rr, "cannot read the records of the wait reply");
	}
	/* The daemon sends the records that fit its reply budget and says "more": the rest
	 * come from status (final ones do not change; with "any" the others as they stand). */
	if ((r == 0 || r == JSCHED_ETIMEOUT) && *out != NULL && (*out)->count < n && reply != NULL &&
	    json_is_true(json_object_get(r == 0 ? reply : json_object_get(reply, "error"), "more"))) {
		int rr = fetch_rest(c, ids, n, out);
		if (rr < 0) {
			json_decref(reply);
			free(text);
			return rr;
		}
	}
	if (r == 0)
		r = count_final(*out);
	json_decref(reply);
	free(text);
	return r;
}

/* jsched_wait_many: see jsched.h. */
int jsched_wait_many(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode,
		     int64_t timeout_ms, struct jsched_results **out)
{
	return wait_many(c, ids, n, mode, timeout_ms, false, out);
}

/* jsched_wait_brief: see jsched.h. */
int jsched_wait_brief(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode,
		      int64_t timeout_ms, struct jsched_results **out)
{
	return wait_many(c, ids, n, mode, timeout_ms, true, out);
}

/* jsched_wait_async: see jsched.h. */
int jsched_wait_async(struct jsched_conn *c, const uint64_t *ids, size_t n, enum jsched_wait_mode mode,
		      int64_t timeout_ms, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return ids_send(c, JP_OP_WAIT, ids, n, false, mode, timeout_ms, cb, arg);
}

/* jsched_cancel_many: see jsched.h. */
int jsched_cancel_many(struct jsched_conn *c, const uint64_t *ids, size_t n, struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = ids_request(c, JP_OP_CANCEL, ids, n, false, &r), *reply;
	if (req == NULL)
		return r;
	char *text;
	size_t len;
	r = jc_call_text(c, req, &reply, 0, out != NULL ? &text : NULL, &len, NULL);
	if (out == NULL)
		text = NULL;
	if (r == 0 && out != NULL &&
	    (r = jc_results_from_json(json_object_get(reply, "jobs"), member_text(text, len, false, "jobs"), out)) < 0)
		jc_set_error(c, r, "cannot read the cancel reply");
	json_decref(reply);
	free(text);
	return r;
}

/* ids_op: a request of `job`/`jobs` whose reply is {"jobs": [partial records]}. */
static int ids_op(struct jsched_conn *c, enum jp_op op, const uint64_t *ids, size_t n,
		  struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = ids_request(c, op, ids, n, false, &r), *reply;
	if (req == NULL)
		return r;
	r = jc_call(c, req, &reply, 0);
	if (r == 0 && out != NULL &&
	    (r = jc_results_from_json(json_object_get(reply, "jobs"), (struct jc_text){0}, out)) < 0)
		jc_set_error(c, r, "cannot read the reply");
	json_decref(reply);
	return r;
}

/* jsched_hold: see jsched.h. */
int jsched_hold(struct jsched_conn *c, const uint64_t *ids, size_t n, struct jsched_results **out)
{
	return ids_op(c, JP_OP_HOLD, ids, n, out);
}

/* jsched_retry: see jsched.h. */
int jsched_retry(struct jsched_conn *c, const uint64_t *ids, size_t n, struct jsched_results **out)
{
	return ids_op(c, JP_OP_RETRY, ids, n, out);
}

/* jsched_release: see jsched.h. */
int jsched_release(struct jsched_conn *c, const uint64_t *ids, size_t n,
		   struct jsched_results **out)
{
	return ids_op(c, JP_OP_RELEASE, ids, n, out);
}

/* jsched_hook_claim: see jsched.h. */
int jsched_hook_claim(struct jsched_conn *c, uint64_t id, bool *claimed)
{
	if (claimed != NULL)
		*claimed = false;
	if (c == NULL || id == 0 || claimed == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_HOOK), *reply = NULL;
	add(&req, "job", json_integer((json_int_t)id));
	add(&req, "state", json_string("running"));
	int r = jc_call(c, req, &reply, 0);
	if (r == 0)
		*claimed = json_is_true(json_object_get(reply, "claimed"));
	json_decref(reply);
	return r;
}

/* jsched_hook_report: see jsched.h. */
int jsched_hook_report(struct jsched_conn *c, uint64_t id, bool ok, int exit_code, int signal,
		       const char *reason)
{
	if (c == NULL || id == 0 || exit_code > 255 || signal < 0 || signal > 128)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_HOOK);
	add(&req, "job", json_integer((json_int_t)id));
	add(&req, "state", json_string(ok ? "succeeded" : "failed"));
	if (exit_code >= 0)
		add(&req, "exit_code", json_integer(exit_code));
	if (signal > 0)
		add(&req, "signal", json_integer(signal));
	if (reason != NULL) {
		char cut[1025];
		snprintf(cut, sizeof cut, "%.*s", jp_utf8_cut(reason, 1024), reason);
		add(&req, "reason", json_string(cut));
	}
	return jc_call(c, req, NULL, 0);
}

/* pause_op: pause or resume a client, or all. */
static int pause_op(struct jsched_conn *c, enum jp_op op, const char *client, bool all)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(op);
	if (all)
		add(&req, "all", json_true());
	else if (client != NULL)
		add(&req, "client", json_string(client));
	return jc_call(c, req, NULL, 0);
}

/* jsched_pause: see jsched.h. */
int jsched_pause(struct jsched_conn *c, const char *client, bool all)
{
	return pause_op(c, JP_OP_PAUSE, client, all);
}

/* jsched_resume: see jsched.h. */
int jsched_resume(struct jsched_conn *c, const char *client, bool all)
{
	return pause_op(c, JP_OP_RESUME, client, all);
}

/* jsched_cancel: see jsched.h. */
int jsched_cancel(struct jsched_conn *c, uint64_t id)
{
	return jsched_cancel_many(c, &id, 1, NULL);
}

/* jsched_cancel_async: see jsched.h. */
int jsched_cancel_async(struct jsched_conn *c, const uint64_t *ids, size_t n, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = ids_request(c, JP_OP_CANCEL, ids, n, false, &r);
	return req != NULL ? jc_send(c, req, cb, arg) : r;
}

/* ---- list, output, metrics, ping ----------------------------------------------------------- */

/* Append the records of arr (whose text is text) to l (grown). */
static int append_records(struct jsched_results *l, const json_t *arr, struct jc_text text)
{
	size_t n = json_array_size(arr);
	struct jsched_result **items = realloc(l->items, (l->count + n + 1) * sizeof *items);
	if (items == NULL)
		return JSCHED_ENOMEM;
	l->items = items;
	struct jc_text *texts = jc_texts_of(arr, text);
	for (size_t i = 0; i < n; i++) {
		struct jsched_result *r =
			jc_result_from_json(json_array_get(arr, i), texts != NULL ? texts[i] : (struct jc_text){ NULL, 0 });
		if (r == NULL) {
			free(texts);
			return JSCHED_EPROTOCOL;
		}
		l->items[l->count++] = r;
	}
	free(texts);
	return 0;
}

/* list: jsched_list, or with array (not 0) jsched_list_array. */
static int list(struct jsched_conn *c, unsigned state_mask, const char *client, bool all_uids,
		uint64_t array, struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	struct jsched_results *l = calloc(1, sizeof *l);
	if (l == NULL)
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	uint64_t after = 0;
	int r = 0;
	/* Page through: each page ends where the next begins (after_job).  The count of pages
	 * is bounded by the jobs the daemon retains. */
	for (bool more = true; more && r == 0;) {
		json_t *req = request(JP_OP_LIST), *reply = NULL;
		json_t *states = state_mask != 0 ? json_array() : NULL;
		for (int s = JSCHED_STATE_WAITING; states != NULL && s <= JC_STATE_LAST; s++)
			if ((state_mask & (1u << s)) &&
			    json_array_append_new(states, json_string(jsched_state_name((enum jsched_state)s))) < 0) {
				json_decref(states);
				states = NULL; /* add() below drops the request */
			}
		if (state_mask != 0)
			add(&req, "states", states);
		if (client != NULL)
			add(&req, "client", json_string(client));
		if (all_uids)
			add(&req, "all", json_true());
		if (array > 0)
			add(&req, "array", json_integer((json_int_t)array));
		if (after > 0)
			add(&req, "after_job", json_integer((json_int_t)after));
		add(&req, "limit", json_integer(JP_LIST_LIMIT_MAX));
		char *text;
		size_t len;
		r = jc_call_text(c, req, &reply, 0, &text, &len, NULL);
		const json_t *jobs = json_object_get(reply, "jobs");
		if (r == 0 && (r = append_records(l, jobs, member_text(text, len, false, "jobs"))) < 0)
			jc_set_error(c, r, "cannot read the list reply");
		more = json_is_true(json_object_get(reply, "more")) && json_array_size(jobs) > 0;
		if (r == 0 && more)
			after = l->items[l->count - 1]->id;
		json_decref(reply);
		free(text);
	}
	if (r < 0) {
		jsched_results_free(l);
		return r;
	}
	*out = l;
	return 0;
}

/* jsched_list: see jsched.h. */
int jsched_list(struct jsched_conn *c, unsigned state_mask, const char *client, bool all_uids,
		struct jsched_results **out)
{
	return list(c, state_mask, client, all_uids, 0, out);
}

/* jsched_list_array: see jsched.h. */
int jsched_list_array(struct jsched_conn *c, uint64_t array_id, unsigned state_mask,
		      struct jsched_results **out)
{
	if (array_id == 0) {
		if (out != NULL)
			*out = NULL;
		return JSCHED_EINVAL;
	}
	return list(c, state_mask, NULL, false, array_id, out);
}

/* jsched_value: see jsched.h.  Each piece is asked from the offset after the last one;
 * a reply whose piece does not begin where asked, or that makes no progress, is the
 * daemon's error, not a reason to loop. */
int jsched_value(struct jsched_conn *c, uint64_t id, char **json, size_t *len)
{
	if (json != NULL)
		*json = NULL;
	if (len != NULL)
		*len = 0;
	if (c == NULL || json == NULL)
		return JSCHED_EINVAL;
	char *buf = NULL;
	size_t have = 0, total = 0;
	bool more = true;
	int r = 0;
	while (r == 0 && more) {
		json_t *req = ids_request(c, JP_OP_RESULT, &id, 1, true, &r), *reply = NULL;
		if (req == NULL)
			break;
		if (json_object_set_new(req, "offset", json_integer((json_int_t)have)) < 0) {
			json_decref(req);
			r = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
			break;
		}
		if ((r = jc_call(c, req, &reply, 0)) < 0) {
			json_decref(reply); /* an error reply is still handed over */
			break;
		}
		const json_t *data = json_object_get(reply, "data");
		json_int_t bytes = json_integer_value(json_object_get(reply, "bytes"));
		json_int_t next = json_integer_value(json_object_get(reply, "next_offset"));
		size_t n = json_string_length(data);
		more = json_is_true(json_object_get(reply, "more"));
		if (!json_is_string(data) || bytes < 0 || (buf != NULL && (size_t)bytes != total) ||
		    next != (json_int_t)(have + n) || (size_t)next > (size_t)bytes ||
		    (more && n == 0) || (!more && (size_t)next != (size_t)bytes)) {
			r = jc_set_error(c, JSCHED_EPROTOCOL, "job %" PRIu64 "'s result came in pieces "
					 "that do not add up", id);
		} else if (buf == NULL && (buf = malloc((size_t)bytes + 1)) == NULL) {
			r = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
		} else {
			total = (size_t)bytes;
			memcpy(buf + have, json_string_value(data), n);
			have += n;
		}
		json_decref(reply);
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[have] = '\0';
	*json = buf;
	if (len != NULL)
		*len = have;
	return 0;
}

/* jsched_output: see jsched.h. */
int jsched_output(struct jsched_conn *c, uint64_t id, struct jsched_output **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = ids_request(c, JP_OP_OUTPUT, &id, 1, true, &r), *reply;
	if (req == NULL)
		return r;
	r = jc_call(c, req, &reply, 0);
	if (r == 0)
		r = output_from(c, reply, out);
	json_decref(reply);
	return r;
}

/* follow_event: one event of a follow of job id: a piece of output to fn (returns its
 * value), or the end (returns 1, *end filled), or another event (0, ignored). */
static int follow_event(struct jsched_conn *c, const struct jsched_event *ev, uint64_t id,
			jsched_output_fn fn, void *arg, struct jsched_follow_end *end, bool *done)
{
	json_t *v = json_loads(ev->json, 0, NULL);
	int r = 0;

	if (v == NULL)
		return jc_set_error(c, JSCHED_ENOMEM, "cannot read an event");
	if ((uint64_t)json_integer_value(json_object_get(v, "job_id")) != id) {
		json_decref(v);
		return 0;
	}
	if (strcmp(ev->type, "output") == 0) {
		const json_t *d = json_object_get(v, "data");
		const char *st = json_string_value(json_object_get(v, "stream"));
		unsigned char *data = NULL;
		size_t n = 0;

		if (!json_is_string(d) || !st ||
		    jp_base64_decode(json_string_value(d), json_string_length(d), SIZE_MAX, &data, &n) < 0) {
			json_decref(v);
			return jc_set_error(c, JSCHED_EPROTOCOL, "a malformed output event");
		}
		r = fn(arg, strcmp(st, "stderr") == 0 ? JSCHED_STDERR : JSCHED_STDOUT,
		       (uint64_t)json_integer_value(json_object_get(v, "offset")),
		       (uint64_t)json_integer_value(json_object_get(v, "dropped")), data ? data : (void *)"", n);
		free(data);
		if (r != 0)
			r = jc_set_error(c, JSCHED_ECANCELLED, "the output callback stopped the follow");
	} else if (strcmp(ev->type, "output_end") == 0) {
		if (end != NULL) {
			snprintf(end->state, sizeof end->state, "%s",
				 json_string_value(json_object_get(v, "state")) ?
				 json_string_value(json_object_get(v, "state")) : "");
			end->complete = json_is_true(json_object_get(v, "complete"));
			end->stdout_bytes = (uint64_t)json_integer_value(json_object_get(v, "stdout_bytes"));
			end->stderr_bytes = (uint64_t)json_integer_value(json_object_get(v, "stderr_bytes"));
		}
		*done = true;
	}
	json_decref(v);
	return r;
}

/* jsched_output_follow: see jsched.h. */
int jsched_output_follow(struct jsched_conn *c, uint64_t id, const struct jsched_follow *opts,
			 jsched_output_fn fn, void *arg, struct jsched_follow_end *end)
{
	static const struct jsched_follow dflt = { 0, true, -1, 0, 0 };
	const struct jsched_follow *o = opts ? opts : &dflt;
	unsigned streams = o->streams ? o->streams : JSCHED_STDOUT | JSCHED_STDERR;
	bool done = false;
	json_t *reply;
	int r;

	if (end != NULL)
		memset(end, 0, sizeof *end);
	if (c == NULL || fn == NULL || streams > 3)
		return JSCHED_EINVAL;
	json_t *req = ids_request(c, JP_OP_OUTPUT, &id, 1, true, &r);
	if (req == NULL)
		return r;
	if (json_object_set_new(req, "events", json_true()) < 0 ||
	    json_object_set_new(req, "follow", json_boolean(o->follow)) < 0 ||
	    json_object_set_new(req, "streams", json_string(streams == JSCHED_STDOUT ? "stdout" :
							    streams == JSCHED_STDERR ? "stderr" : "both")) < 0 ||
	    (o->tail_lines >= 0 ? json_object_set_new(req, "tail_lines", json_integer(o->tail_lines))
				: json_object_set_new(req, "from_stdout", json_integer((json_int_t)o->from_stdout)) < 0 ||
				  json_object_set_new(req, "from_stderr", json_integer((json_int_t)o->from_stderr))) < 0) {
		json_decref(req);
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	}
	if ((r = jc_call(c, req, &reply, 0)) < 0)
		return r;
	json_decref(reply);
	while (!done) {
		struct jsched_event *ev = NULL;

		if ((r = jsched_next_event(c, -1, &ev)) < 0)
			return r;
		r = follow_event(c, ev, id, fn, arg, end, &done);
		jsched_event_free(ev);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Make a member of a reply the caller's JSON text (NULL out: not wanted). */
static int give_json(struct jsched_conn *c, const json_t *v, char **out)
{
	if (out == NULL)
		return 0;
	*out = jc_dup_json(v);
	return *out != NULL ? 0 : jc_set_error(c, JSCHED_ENOMEM, "out of memory");
}

/* jsched_metrics: see jsched.h. */
int jsched_metrics(struct jsched_conn *c, char **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	json_t *reply;
	int r = jc_call(c, request(JP_OP_METRICS), &reply, 0);
	const json_t *m = json_object_get(reply, "metrics");
	if (r == 0 && !json_is_object(m))
		r = jc_set_error(c, JSCHED_EPROTOCOL, "metrics reply without a metrics document");
	if (r == 0)
		r = give_json(c, m, out);
	json_decref(reply);
	return r;
}

/* jsched_metrics_prometheus: see jsched.h. */
int jsched_metrics_prometheus(struct jsched_conn *c, char **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_METRICS), *reply;
	add(&req, "format", json_string("prometheus"));
	int r = jc_call(c, req, &reply, 0);
	const json_t *text = json_object_get(reply, "text");
	if (r == 0 && !json_is_string(text))
		r = jc_set_error(c, JSCHED_EPROTOCOL, "metrics reply without the text");
	if (r == 0) {
		*out = strdup(json_string_value(text));
		if (*out == NULL)
			r = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	}
	json_decref(reply);
	return r;
}

/* jsched_ping: see jsched.h. */
int jsched_ping(struct jsched_conn *c)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return jc_call(c, request(JP_OP_PING), NULL, 0);
}

/* ---- drain and admin --------------------------------------------------------------------------- */

/* jsched_drain: see jsched.h. */
int jsched_drain(struct jsched_conn *c, const char *client, bool running, uint64_t *cancelled,
		 uint64_t *cancelling)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_DRAIN), *reply;
	if (client != NULL)
		add(&req, "client", json_string(client));
	if (running)
		add(&req, "running", json_true());
	int r = jc_call(c, req, &reply, 0);
	uint64_t dummy;
	if (r == 0) {
		jc_get_u64(reply, "cancelled", cancelled != NULL ? cancelled : &dummy);
		jc_get_u64(reply, "cancelling", cancelling != NULL ? cancelling : &dummy);
	}
	json_decref(reply);
	return r;
}

/* A simple request whose whole reply the caller may want. */
static int call_giving_reply(struct jsched_conn *c, json_t *req, char **reply_json)
{
	if (reply_json != NULL)
		*reply_json = NULL;
	json_t *reply;
	int r = jc_call(c, req, &reply, 0);
	if (r == 0)
		r = give_json(c, reply, reply_json);
	json_decref(reply);
	return r;
}

/* jsched_admin_reload: see jsched.h. */
int jsched_admin_reload(struct jsched_conn *c, char **reply_json)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return call_giving_reply(c, request(JP_OP_RELOAD), reply_json);
}

/* jsched_admin_set_client: see jsched.h. */
int jsched_admin_set_client(struct jsched_conn *c, const char *client, uint32_t weight, uint32_t max_queued,
			    const char *overflow, char **reply_json)
{
	if (reply_json != NULL)
		*reply_json = NULL;
	if (c == NULL)
		return JSCHED_EINVAL;
	if (client == NULL)
		return jc_set_error(c, JSCHED_EINVAL, "no client name");
	json_t *req = request(JP_OP_SET_CLIENT);
	add(&req, "client", json_string(client));
	if (weight > 0)
		add(&req, "weight", json_integer(weight));
	if (max_queued > 0)
		add(&req, "max_queued", json_integer(max_queued));
	if (overflow != NULL)
		add(&req, "overflow", json_string(overflow));
	return call_giving_reply(c, req, reply_json);
}

/* jsched_admin_shutdown: see jsched.h. */
int jsched_admin_shutdown(struct jsched_conn *c, bool immediate)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_SHUTDOWN);
	add(&req, "mode", json_string(immediate ? "immediate" : "graceful"));
	return jc_call(c, req, NULL, 0);
}

/* ---- watch ------------------------------------------------------------------------------------- */

/* jsched_watch: see jsched.h. */
int jsched_watch(struct jsched_conn *c, int64_t from_seq, const char *instance, uint64_t *last_seq)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	json_t *req = request(JP_OP_WATCH), *reply;
	if (from_seq >= 0) {
		add(&req, "from_seq", json_integer(from_seq));
		const char *inst = instance != NULL ? instance : jsched_server_instance(c);
		if (inst != NULL)
			add(&req, "instance", json_string(inst));
	}
	int r = jc_call(c, req, &reply, 0);
	uint64_t dummy;
	if (r == 0)
		jc_get_u64(reply, "seq", last_seq != NULL ? last_seq : &dummy);
	json_decref(reply);
	return r;
}

/* jsched_unwatch: see jsched.h. */
int jsched_unwatch(struct jsched_conn *c)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	return jc_call(c, request(JP_OP_UNWATCH), NULL, 0);
}

/* ---- any request ------------------------------------------------------------------------------- */

static json_t *parse_request(struct jsched_conn *c, const char *text, int *err)
{
	json_t *req = text != NULL ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (!json_is_object(req) || !json_is_string(json_object_get(req, "op"))) {
		json_decref(req);
		*err = jc_set_error(c, JSCHED_EINVAL, "a request is a JSON object with an \"op\"");
		return NULL;
	}
	json_object_del(req, "id");
	return req;
}

/* jsched_request: see jsched.h. */
int jsched_request(struct jsched_conn *c, const char *request_json, char **reply_json)
{
	if (reply_json != NULL)
		*reply_json = NULL;
	if (c == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = parse_request(c, request_json, &r), *reply;
	if (req == NULL)
		return r;
	r = jc_call(c, req, &reply, 0);
	if (reply != NULL && reply_json != NULL && (*reply_json = jc_dup_json(reply)) == NULL && r == 0)
		r = jc_set_error(c, JSCHED_ENOMEM, "out of memory");
	json_decref(reply);
	return r;
}

/* jsched_request_async: see jsched.h. */
int jsched_request_async(struct jsched_conn *c, const char *request_json, jsched_reply_cb cb, void *arg)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	int r;
	json_t *req = parse_request(c, request_json, &r);
	return req != NULL ? jc_send(c, req, cb, arg) : r;
}
