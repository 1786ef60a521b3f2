/* tests/proto/test_message.c: requests (every op, every way to get one wrong), replies,
 * events, the hello exchange, error names and objects, job records and output streams.
 *
 * Round trips go through the wire: built, encoded as a frame, decoded, parsed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"

/* wire: msg (stolen) through the encoder and decoder; returns the decoded copy. */
static json_t *wire(json_t *msg)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *back = NULL;

	assert_non_null(msg);
	assert_int_equal(jp_frame_append(&b, msg, JP_DEFAULT_FRAME_BYTES), 0);
	jp_decoder_init(&d, JP_DEFAULT_FRAME_BYTES);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next(&d, &back), 1);
	assert_true(json_equal(msg, back));
	json_decref(msg);
	jp_buf_free(&b);
	jp_decoder_free(&d);
	return back;
}

static json_t *parse_text(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, e.text);
	return j;
}

/* req_ok: text is a request that passes, with this op and id, also after a trip through
 * the encoder and decoder. */
static void req_ok(const char *text, enum jp_op op, int64_t id)
{
	json_t *j = wire(parse_text(text));
	struct jp_request r;
	struct jp_err err = {0};
	int rc = jp_request_parse(j, NULL, &r, &err);

	if (rc != 0)
		fail_msg("%s: refused: %s (%s)", text, err.message, err.field);
	assert_int_equal(r.op, op);
	assert_int_equal(r.id, id);
	assert_string_equal(jp_op_name(r.op), json_string_value(json_object_get(j, "op")));
	json_decref(j);
}

/* req_bad: text is refused with code, naming field, and the id read if it could be. */
static void req_bad(const char *text, int code, const char *field, int64_t id)
{
	json_t *j = parse_text(text);
	struct jp_request r;
	struct jp_err err = {0};
	struct jp_limits lim;

	jp_limits_default(&lim);
	lim.jobs_per_submit = 3;
	if (jp_request_parse(j, &lim, &r, &err) != code)
		fail_msg("%s: expected %s, got %s: %s", text, jp_error_name(code),
			 jp_error_name(err.code), err.message);
	assert_int_equal(err.code, code);
	assert_string_equal(err.field, field);
	assert_true(err.message[0] != '\0');
	assert_int_equal(r.id, id);
	json_decref(j);
}

static void test_every_op_accepted(void **state)
{
	(void)state;
	req_ok("{\"op\":\"hello\",\"id\":0,\"version\":1,\"client\":\"nightly-ci\"}", JP_OP_HELLO, 0);
	req_ok("{\"op\":\"hello\",\"id\":0,\"version\":1}", JP_OP_HELLO, 0);
	req_ok("{\"op\":\"submit\",\"id\":3,\"job\":{\"kind\":\"call\",\"fn\":\"echo\"}}", JP_OP_SUBMIT, 3);
	req_ok("{\"op\":\"submit\",\"id\":4,\"jobs\":[{},{}]}", JP_OP_SUBMIT, 4);
	req_ok("{\"op\":\"status\",\"id\":7,\"job\":42}", JP_OP_STATUS, 7);
	req_ok("{\"op\":\"status\",\"id\":7,\"jobs\":[42,43]}", JP_OP_STATUS, 7);
	req_ok("{\"op\":\"wait\",\"id\":9,\"jobs\":[102,103],\"mode\":\"any\",\"timeout_ms\":30000}",
	       JP_OP_WAIT, 9);
	req_ok("{\"op\":\"wait\",\"id\":9,\"job\":1,\"timeout_ms\":0}", JP_OP_WAIT, 9);
	req_ok("{\"op\":\"cancel\",\"id\":10,\"jobs\":[102,103,90]}", JP_OP_CANCEL, 10);
	req_ok("{\"op\":\"list\",\"id\":1}", JP_OP_LIST, 1);
	req_ok("{\"op\":\"list\",\"id\":1,\"states\":[\"queued\",\"running\"],\"client\":\"a.b-c_d\","
	       "\"all\":false,\"after_job\":100,\"limit\":10000}", JP_OP_LIST, 1);
	req_ok("{\"op\":\"output\",\"id\":11,\"job\":102}", JP_OP_OUTPUT, 11);
	req_ok("{\"op\":\"watch\",\"id\":13,\"from_seq\":117,\"instance\":\"1764460800123-4242\"}",
	       JP_OP_WATCH, 13);
	req_ok("{\"op\":\"watch\",\"id\":13}", JP_OP_WATCH, 13);
	req_ok("{\"op\":\"unwatch\",\"id\":14}", JP_OP_UNWATCH, 14);
	req_ok("{\"op\":\"metrics\",\"id\":15}", JP_OP_METRICS, 15);
	req_ok("{\"op\":\"drain\",\"id\":16,\"client\":\"batch\",\"running\":true}", JP_OP_DRAIN, 16);
	req_ok("{\"op\":\"ping\",\"id\":9007199254740991}", JP_OP_PING, 9007199254740991);
	req_ok("{\"op\":\"reload\",\"id\":17}", JP_OP_RELOAD, 17);
	req_ok("{\"op\":\"set_client\",\"id\":12,\"client\":\"batch\",\"weight\":3,"
	       "\"max_queued\":5,\"overflow\":\"drop_oldest\"}", JP_OP_SET_CLIENT, 12);
	req_ok("{\"op\":\"shutdown\",\"id\":18,\"mode\":\"immediate\"}", JP_OP_SHUTDOWN, 18);
	req_ok("{\"id\":19,\"op\":\"shutdown\"}", JP_OP_SHUTDOWN, 19);
	req_ok("{\"op\":\"result\",\"id\":20,\"job\":57}", JP_OP_RESULT, 20);
	req_ok("{\"op\":\"result\",\"id\":20,\"job\":57,\"offset\":16773120,\"max_bytes\":1}",
	       JP_OP_RESULT, 20);
}

static void test_envelope_errors(void **state)
{
	(void)state;
	req_bad("{\"op\":\"ping\"}", JSCHED_EBAD_REQUEST, "id", JP_ID_NONE);
	req_bad("{\"op\":\"ping\",\"id\":-1}", JSCHED_EBAD_REQUEST, "id", JP_ID_NONE);
	req_bad("{\"op\":\"ping\",\"id\":1.5}", JSCHED_EBAD_REQUEST, "id", JP_ID_NONE);
	req_bad("{\"op\":\"ping\",\"id\":\"7\"}", JSCHED_EBAD_REQUEST, "id", JP_ID_NONE);
	/* Beyond +-(2^53 - 1) anywhere: a frame rule (PROTOCOL.md section 1), not a member's. */
	req_bad("{\"op\":\"ping\",\"id\":9007199254740992}", JSCHED_EBAD_FRAME, "", JP_ID_NONE);
	req_bad("{\"op\":\"ping\",\"id\":9223372036854775807}", JSCHED_EBAD_FRAME, "", JP_ID_NONE);
	req_bad("{\"op\":\"submit\",\"id\":3,\"job\":{\"kind\":\"call\",\"fn\":\"echo\","
		"\"args\":{\"a\":[1,-9007199254740992]}}}", JSCHED_EBAD_FRAME, "", JP_ID_NONE);
	req_ok("{\"op\":\"submit\",\"id\":3,\"job\":{\"kind\":\"call\",\"fn\":\"echo\","
	       "\"args\":{\"a\":[1,-9007199254740991]}}}", JP_OP_SUBMIT, 3);
	req_bad("{\"id\":5}", JSCHED_EBAD_REQUEST, "op", 5);
	req_bad("{\"id\":5,\"op\":7}", JSCHED_EBAD_REQUEST, "op", 5);
	req_bad("{\"id\":5,\"op\":\"frobnicate\"}", JSCHED_EUNKNOWN_OP, "op", 5);
	req_bad("{\"id\":5,\"op\":\"PING\"}", JSCHED_EUNKNOWN_OP, "op", 5);
	req_bad("{\"id\":5,\"op\":\"ping\",\"extra\":1}", JSCHED_EBAD_REQUEST, "extra", 5);
}

static void test_member_errors(void **state)
{
	(void)state;
	req_bad("{\"op\":\"hello\",\"id\":0}", JSCHED_EBAD_REQUEST, "version", 0);
	req_bad("{\"op\":\"hello\",\"id\":0,\"version\":\"1\"}", JSCHED_EBAD_REQUEST, "version", 0);
	req_bad("{\"op\":\"hello\",\"id\":0,\"version\":1,\"client\":\"\"}", JSCHED_EBAD_REQUEST,
		"client", 0);
	req_bad("{\"op\":\"hello\",\"id\":0,\"version\":1,\"client\":\"a b\"}", JSCHED_EBAD_REQUEST,
		"client", 0);
	req_bad("{\"op\":\"hello\",\"id\":0,\"version\":1,\"client\":"
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		JSCHED_EBAD_REQUEST, "client", 0);
	req_bad("{\"op\":\"submit\",\"id\":1}", JSCHED_EBAD_REQUEST, "job", 1);
	req_bad("{\"op\":\"submit\",\"id\":1,\"job\":{},\"jobs\":[{}]}", JSCHED_EBAD_REQUEST, "jobs", 1);
	req_bad("{\"op\":\"submit\",\"id\":1,\"job\":[]}", JSCHED_EBAD_REQUEST, "job", 1);
	req_bad("{\"op\":\"submit\",\"id\":1,\"jobs\":[]}", JSCHED_EBAD_REQUEST, "jobs", 1);
	req_bad("{\"op\":\"submit\",\"id\":1,\"jobs\":[{},3]}", JSCHED_EBAD_REQUEST, "jobs[1]", 1);
	req_bad("{\"op\":\"submit\",\"id\":1,\"jobs\":[{},{},{},{}]}", JSCHED_ELIMIT_EXCEEDED, "jobs", 1);
	req_bad("{\"op\":\"status\",\"id\":2,\"job\":0}", JSCHED_EBAD_REQUEST, "job", 2);
	req_bad("{\"op\":\"status\",\"id\":2,\"job\":\"42\"}", JSCHED_EBAD_REQUEST, "job", 2);
	req_bad("{\"op\":\"status\",\"id\":2,\"jobs\":[1,-2]}", JSCHED_EBAD_REQUEST, "jobs[1]", 2);
	req_bad("{\"op\":\"status\",\"id\":2,\"jobs\":[1,2,3,4]}", JSCHED_ELIMIT_EXCEEDED, "jobs", 2);
	req_bad("{\"op\":\"wait\",\"id\":3,\"job\":1,\"mode\":\"some\"}", JSCHED_EBAD_REQUEST, "mode", 3);
	req_bad("{\"op\":\"wait\",\"id\":3,\"job\":1,\"fields\":\"short\"}", JSCHED_EBAD_REQUEST, "fields", 3);
	req_bad("{\"op\":\"status\",\"id\":3,\"job\":1,\"fields\":\"brief\"}", JSCHED_EBAD_REQUEST, "fields", 3);
	req_bad("{\"op\":\"wait\",\"id\":3,\"job\":1,\"timeout_ms\":-1}", JSCHED_EBAD_REQUEST,
		"timeout_ms", 3);
	req_bad("{\"op\":\"wait\",\"id\":3,\"mode\":\"all\"}", JSCHED_EBAD_REQUEST, "job", 3);
	req_bad("{\"op\":\"cancel\",\"id\":4,\"job\":1,\"jobs\":[2]}", JSCHED_EBAD_REQUEST, "jobs", 4);
	req_bad("{\"op\":\"list\",\"id\":5,\"states\":[\"queued\",\"sleeping\"]}", JSCHED_EBAD_REQUEST,
		"states[1]", 5);
	req_bad("{\"op\":\"list\",\"id\":5,\"states\":\"queued\"}", JSCHED_EBAD_REQUEST, "states", 5);
	req_bad("{\"op\":\"list\",\"id\":5,\"all\":1}", JSCHED_EBAD_REQUEST, "all", 5);
	req_bad("{\"op\":\"list\",\"id\":5,\"limit\":0}", JSCHED_EBAD_REQUEST, "limit", 5);
	req_bad("{\"op\":\"list\",\"id\":5,\"limit\":10001}", JSCHED_EBAD_REQUEST, "limit", 5);
	req_bad("{\"op\":\"output\",\"id\":6}", JSCHED_EBAD_REQUEST, "job", 6);
	req_bad("{\"op\":\"output\",\"id\":6,\"jobs\":[1]}", JSCHED_EBAD_REQUEST, "jobs", 6);
	req_bad("{\"op\":\"watch\",\"id\":7,\"from_seq\":true}", JSCHED_EBAD_REQUEST, "from_seq", 7);
	req_bad("{\"op\":\"watch\",\"id\":7,\"instance\":5}", JSCHED_EBAD_REQUEST, "instance", 7);
	req_bad("{\"op\":\"unwatch\",\"id\":8,\"from_seq\":1}", JSCHED_EBAD_REQUEST, "from_seq", 8);
	req_bad("{\"op\":\"drain\",\"id\":9,\"running\":\"yes\"}", JSCHED_EBAD_REQUEST, "running", 9);
	req_bad("{\"op\":\"set_client\",\"id\":10,\"weight\":2}", JSCHED_EBAD_REQUEST, "client", 10);
	req_bad("{\"op\":\"set_client\",\"id\":10,\"client\":\"x\",\"weight\":0}", JSCHED_EBAD_REQUEST,
		"weight", 10);
	/* status takes "detail" (a boolean); cancel does not. */
	req_ok("{\"op\":\"status\",\"id\":13,\"jobs\":[1,2],\"detail\":true}", JP_OP_STATUS, 13);
	req_bad("{\"op\":\"status\",\"id\":13,\"job\":1,\"detail\":\"yes\"}", JSCHED_EBAD_REQUEST, "detail", 13);
	req_bad("{\"op\":\"cancel\",\"id\":13,\"job\":1,\"detail\":true}", JSCHED_EBAD_REQUEST, "detail", 13);
	/* The config's range: 1 to 1,000,000. */
	req_ok("{\"op\":\"set_client\",\"id\":10,\"client\":\"x\",\"weight\":1000000}", JP_OP_SET_CLIENT, 10);
	req_bad("{\"op\":\"set_client\",\"id\":10,\"client\":\"x\",\"weight\":1000001}",
		JSCHED_EBAD_REQUEST, "weight", 10);
	req_bad("{\"op\":\"set_client\",\"id\":10,\"client\":\"x\",\"overflow\":\"drop\"}",
		JSCHED_EBAD_REQUEST, "overflow", 10);
	req_bad("{\"op\":\"shutdown\",\"id\":11,\"mode\":\"now\"}", JSCHED_EBAD_REQUEST, "mode", 11);
	req_bad("{\"op\":\"metrics\",\"id\":12,\"verbose\":true}", JSCHED_EBAD_REQUEST, "verbose", 12);
	req_bad("{\"op\":\"result\",\"id\":14}", JSCHED_EBAD_REQUEST, "job", 14);
	req_bad("{\"op\":\"result\",\"id\":14,\"jobs\":[1]}", JSCHED_EBAD_REQUEST, "jobs", 14);
	req_bad("{\"op\":\"result\",\"id\":14,\"job\":1,\"offset\":-1}", JSCHED_EBAD_REQUEST,
		"offset", 14);
	req_bad("{\"op\":\"result\",\"id\":14,\"job\":1,\"max_bytes\":0}", JSCHED_EBAD_REQUEST,
		"max_bytes", 14);
}

static void test_typed_reads(void **state)
{
	json_t *j = parse_text("{\"op\":\"wait\",\"id\":1,\"jobs\":[5,6,7],\"mode\":\"any\","
			       "\"timeout_ms\":250}");
	struct jp_request r;
	int64_t *ids;
	size_t n;
	bool single;

	(void)state;
	assert_int_equal(jp_request_parse(j, NULL, &r, NULL), 0);
	assert_int_equal(jp_req_int(&r, "timeout_ms", -1), 250);
	assert_int_equal(jp_req_int(&r, "absent", -1), -1);
	assert_string_equal(jp_req_str(&r, "mode", "all"), "any");
	assert_string_equal(jp_req_str(&r, "absent", "all"), "all");
	assert_true(jp_req_bool(&r, "absent", true));
	assert_int_equal(jp_req_ids(&r, &ids, &n, &single), 0);
	assert_false(single);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[2], 7);
	free(ids);
	json_decref(j);

	j = parse_text("{\"op\":\"cancel\",\"id\":1,\"job\":9}");
	assert_int_equal(jp_request_parse(j, NULL, &r, NULL), 0);
	assert_int_equal(jp_req_ids(&r, &ids, &n, &single), 0);
	assert_true(single);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], 9);
	free(ids);
	json_decref(j);

	j = parse_text("{\"op\":\"list\",\"id\":1,\"states\":[\"queued\",\"failed\"],\"all\":true}");
	assert_int_equal(jp_request_parse(j, NULL, &r, NULL), 0);
	assert_int_equal(jp_req_states(&r), 1u << JP_STATE_QUEUED | 1u << JP_STATE_FAILED);
	assert_true(jp_req_bool(&r, "all", false));
	assert_int_equal(jp_req_ids(&r, &ids, &n, &single), JSCHED_EBAD_REQUEST);
	json_decref(j);
	j = parse_text("{\"op\":\"list\",\"id\":1}");
	assert_int_equal(jp_request_parse(j, NULL, &r, NULL), 0);
	assert_int_equal(jp_req_states(&r), (1u << JP_NSTATES) - 1);
	json_decref(j);
}

static void test_request_builder_round_trip(void **state)
{
	json_t *m = jp_request_new(JP_OP_STATUS, 77), *back;
	struct jp_request r;

	(void)state;
	assert_int_equal(json_object_set_new(m, "job", json_integer(5)), 0);
	back = wire(m);
	assert_int_equal(jp_request_parse(back, NULL, &r, NULL), 0);
	assert_int_equal(r.op, JP_OP_STATUS);
	assert_int_equal(r.id, 77);
	json_decref(back);
	for (int op = 0; op < JP_NOPS; op++) {
		assert_non_null(jp_op_name((enum jp_op)op));
		assert_int_equal(jp_op_from_name(jp_op_name((enum jp_op)op)), op);
	}
	assert_null(jp_op_name((enum jp_op)JP_NOPS));
	assert_null(jp_request_new((enum jp_op)99, 1));
	assert_true(jp_op_is_admin(JP_OP_SHUTDOWN));
	assert_false(jp_op_is_admin(JP_OP_DRAIN));
}

static void test_hello(void **state)
{
	struct jp_request r;
	struct jp_identity who = {.uid = 1000, .gid = 100, .pid = 4242, .client = "ci",
				  .admin = true};
	struct jp_limits lim;
	struct jp_hello_reply h;
	struct jp_incoming in;
	json_t *m, *e;

	(void)state;
	m = wire(jp_hello_new(0, "ci"));
	assert_int_equal(jp_request_parse(m, NULL, &r, NULL), 0);
	assert_int_equal(r.op, JP_OP_HELLO);
	assert_int_equal(jp_req_int(&r, "version", 0), JP_PROTOCOL_VERSION);
	assert_string_equal(jp_req_str(&r, "client", NULL), "ci");
	json_decref(m);
	m = wire(jp_hello_new(0, NULL));
	assert_int_equal(jp_request_parse(m, NULL, &r, NULL), 0);
	assert_null(jp_req_str(&r, "client", NULL));
	json_decref(m);

	jp_limits_default(&lim);
	lim.stdin_bytes = 12345;
	m = wire(jp_hello_reply_new(0, JP_PROTOCOL_VERSION, "0.1.0", "123-4", &who, &lim));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_false(in.is_event);
	assert_true(in.ok);
	assert_int_equal(in.id, 0);
	assert_int_equal(jp_hello_reply_parse(m, &h, NULL), 0);
	assert_int_equal(h.version, JP_PROTOCOL_VERSION);
	assert_string_equal(h.daemon, "0.1.0");
	assert_string_equal(h.instance, "123-4");
	assert_int_equal(h.identity.uid, 1000);
	assert_int_equal(h.identity.gid, 100);
	assert_int_equal(h.identity.pid, 4242);
	assert_string_equal(h.identity.client, "ci");
	assert_true(h.identity.admin);
	assert_memory_equal(&h.limits, &lim, sizeof(lim));
	json_object_del(m, "limits");	/* optional: the defaults then */
	assert_int_equal(jp_hello_reply_parse(m, &h, NULL), 0);
	assert_int_equal(h.limits.stdin_bytes, 262144);
	json_object_del(json_object_get(m, "identity"), "uid");
	assert_int_equal(jp_hello_reply_parse(m, &h, NULL), JSCHED_EPROTOCOL);
	json_decref(m);

	e = jp_version_mismatch_new(JP_PROTOCOL_VERSION + 1, "0.1.0");
	m = wire(jp_reply_error_new(0, e));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_false(in.ok);
	assert_int_equal(in.error.code, JSCHED_EVERSION_MISMATCH);
	assert_non_null(strstr(in.error.message, "protocol 4"));
	/* supported: every version from the oldest answered to the newest, in order. */
	json_t *sup = json_object_get(in.error_obj, "supported");
	assert_int_equal(json_array_size(sup), JP_PROTOCOL_VERSION - JP_PROTOCOL_OLDEST + 1);
	assert_int_equal(json_integer_value(json_array_get(sup, 0)), JP_PROTOCOL_OLDEST);
	assert_int_equal(json_integer_value(json_array_get(sup, json_array_size(sup) - 1)),
			 JP_PROTOCOL_VERSION);
	json_decref(m);
}

static void test_limits(void **state)
{
	struct jp_limits a, b;
	json_t *j;

	(void)state;
	jp_limits_default(&a);
	assert_int_equal(a.frame_bytes, 1048576);
	assert_int_equal(a.reply_frame_bytes, 16777216);
	assert_int_equal(a.jobs_per_submit, 10000);
	assert_int_equal(a.stdin_bytes, 262144);
	assert_int_equal(a.events_retained, 4096);
	assert_int_equal(a.value_bytes, 65536);
	a.deps_per_job = 7;
	j = jp_limits_to_json(&a);
	assert_int_equal(json_object_size(j), sizeof(a) / sizeof(uint32_t));
	assert_int_equal(json_object_set_new(j, "future_limit", json_integer(3)), 0);
	assert_int_equal(jp_limits_parse(j, &b, NULL), 0);	/* unknown members ignored */
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(json_object_set_new(j, "argv_items", json_string("many")), 0);
	assert_int_equal(jp_limits_parse(j, &b, NULL), JSCHED_EPROTOCOL);
	json_decref(j);
	j = json_array();
	assert_int_equal(jp_limits_parse(j, &b, NULL), JSCHED_EPROTOCOL);
	json_decref(j);
}

static void test_errors(void **state)
{
	struct jp_err err = {0};
	json_t *e, *m;
	struct jp_incoming in;

	(void)state;
	/* Every code of the map has a wire name that maps back to it. */
#define XX(name, num, wire_name, msg)                                   \
	assert_string_equal(jp_error_name(num), wire_name);             \
	assert_int_equal(jp_error_from_name(wire_name), num);
	JSCHED_ERRNO_MAP(XX)
#undef XX
	assert_null(jp_error_name(0));
	assert_null(jp_error_name(-9999));
	assert_int_equal(jp_error_from_name("a_newer_code"), JSCHED_EPROTOCOL);
	assert_int_equal(jp_error_from_name(NULL), JSCHED_EPROTOCOL);
	assert_string_equal(jp_error_name(JSCHED_EEVENTS_LOST), "events_lost");

	assert_int_equal(jp_err_set(&err, JSCHED_EBAD_REQUEST, "jobs[3].argv", "argv %s", "bad"),
			 JSCHED_EBAD_REQUEST);
	assert_int_equal(jp_err_set(NULL, JSCHED_ENOMEM, NULL, "x"), JSCHED_ENOMEM);
	m = wire(jp_reply_err_new(12, &err));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_false(in.is_event);
	assert_false(in.ok);
	assert_int_equal(in.id, 12);
	assert_int_equal(in.error.code, JSCHED_EBAD_REQUEST);
	assert_string_equal(in.error.field, "jobs[3].argv");
	assert_string_equal(in.error.message, "argv bad");
	assert_string_equal(json_string_value(json_object_get(in.error_obj, "code")), "bad_request");
	json_decref(m);

	/* id null for a frame whose id could not be read; no field member when none. */
	m = wire(jp_reply_error_new(JP_ID_NONE, jp_error_new(JSCHED_EBAD_FRAME, NULL, "not JSON")));
	assert_true(json_is_null(json_object_get(m, "id")));
	assert_null(json_object_get(json_object_get(m, "error"), "field"));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_int_equal(in.id, JP_ID_NONE);
	assert_int_equal(in.error.code, JSCHED_EBAD_FRAME);
	assert_string_equal(in.error.field, "");
	json_decref(m);

	/* A code without a wire name goes out as internal; an unknown name comes back as
	 * protocol_error with the daemon's message kept. */
	e = jp_error_new(-12345, NULL, "odd");
	assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
	json_decref(e);
	e = parse_text("{\"code\":\"brand_new\",\"message\":\"from the future\"}");
	assert_int_equal(jp_error_parse(e, &err), 0);
	assert_int_equal(err.code, JSCHED_EPROTOCOL);
	assert_string_equal(err.message, "from the future");
	json_decref(e);
	e = parse_text("{\"message\":\"no code\"}");
	assert_int_equal(jp_error_parse(e, &err), JSCHED_EPROTOCOL);
	json_decref(e);
	/* A long message is truncated, not overflowed. */
	char longmsg[1000];
	memset(longmsg, 'm', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	jp_err_set(&err, JSCHED_EINTERNAL, longmsg, "%s", longmsg);
	assert_int_equal(strlen(err.message), sizeof(err.message) - 1);
	assert_int_equal(strlen(err.field), sizeof(err.field) - 1);
}

static void test_incoming(void **state)
{
	struct jp_incoming in;
	struct jp_err err = {0};
	json_t *m;
	static const char *const bad[] = {
		"{}", "{\"id\":1}", "{\"id\":1,\"ok\":1}", "{\"id\":\"1\",\"ok\":true}",
		"{\"ok\":true}", "{\"id\":1,\"ok\":false}", "{\"id\":1,\"ok\":false,\"error\":{}}",
		"{\"event\":5}", "{\"event\":\"job\",\"seq\":-1}", "{\"event\":\"job\",\"seq\":\"1\"}",
	};

	(void)state;
	m = wire(jp_reply_new(5));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_true(in.ok);
	assert_int_equal(in.id, 5);
	assert_null(in.error_obj);
	json_decref(m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse_text(bad[i]);
		if (jp_incoming_parse(m, &in, &err) != JSCHED_EPROTOCOL)
			fail_msg("accepted %s", bad[i]);
		json_decref(m);
	}
	m = json_array();
	assert_int_equal(jp_incoming_parse(m, &in, NULL), JSCHED_EPROTOCOL);
	json_decref(m);
}

static void test_events(void **state)
{
	struct jp_record r;
	struct jp_incoming in;
	struct jp_record back;
	json_t *m;

	(void)state;
	jp_record_init(&r);
	r.job = 104;
	r.client = "ci";
	r.state = JP_STATE_RUNNING;
	r.submitted_ms = 1764460812345;
	r.started_ms = 1764460812350;
	m = wire(jp_event_job_new(118, jp_record_to_json(&r)));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_true(in.is_event);
	assert_string_equal(in.event, "job");
	assert_int_equal(in.seq, 118);
	assert_null(json_object_get(m, "id"));
	assert_int_equal(jp_record_parse(json_object_get(m, "job"), &back, NULL), 0);
	assert_int_equal(back.job, 104);
	assert_int_equal(back.state, JP_STATE_RUNNING);
	assert_int_equal(back.started_ms, 1764460812350);
	assert_int_equal(back.finished_ms, -1);
	json_decref(m);

	m = wire(jp_event_shutdown_new("graceful"));
	assert_int_equal(jp_incoming_parse(m, &in, NULL), 0);
	assert_true(in.is_event);
	assert_string_equal(in.event, "shutdown");
	assert_int_equal(in.seq, 0);
	assert_string_equal(json_string_value(json_object_get(m, "mode")), "graceful");
	json_decref(m);
	assert_null(jp_event_job_new(1, NULL));
}

/* record_round_trip: r through JSON and the wire equals itself. */
static void record_round_trip(const struct jp_record *r)
{
	json_t *j = wire(jp_record_to_json(r));
	struct jp_record b;

	assert_int_equal(jp_record_parse(j, &b, NULL), 0);
	assert_int_equal(b.job, r->job);
	if (r->name)
		assert_string_equal(b.name, r->name);
	else
		assert_null(b.name);
	assert_string_equal(b.client, r->client);
	assert_int_equal(b.uid, r->uid);
	assert_int_equal(b.kind, r->kind);
	assert_int_equal(b.priority, r->priority);
	assert_int_equal(b.state, r->state);
	assert_int_equal(b.submitted_ms, r->submitted_ms);
	assert_int_equal(b.started_ms, r->started_ms);
	assert_int_equal(b.finished_ms, r->finished_ms);
	assert_int_equal(b.exit_code, r->exit_code);
	assert_int_equal(b.signal, r->signal);
	assert_true(r->value ? json_equal(b.value, r->value) : b.value == NULL);
	assert_int_equal(b.cause, r->cause);
	if (r->reason)
		assert_string_equal(b.reason, r->reason);
	else
		assert_null(b.reason);
	json_decref(j);
}

static void test_records(void **state)
{
	struct jp_record r;
	json_t *value = json_pack("{s:i}", "x", 1);

	(void)state;
	for (int s = 0; s < JP_NSTATES; s++) {
		jp_record_init(&r);
		r.job = 42 + s;
		r.client = "nightly-ci";
		r.uid = 1000;
		r.state = (enum jp_state)s;
		r.submitted_ms = 1764460812345;
		if (s >= JP_STATE_RUNNING)
			r.started_ms = 1764460812350;
		if (jp_state_final(r.state))
			r.finished_ms = 1764460873002;
		record_round_trip(&r);
		assert_int_equal(jp_state_from_name(jp_state_name(r.state)), s);
	}
	jp_record_init(&r);
	r.job = 1;
	r.name = "unit tests";
	r.client = "ci";
	r.priority = JP_PRIO_HIGH;
	r.state = JP_STATE_FAILED;
	r.exit_code = 2;
	r.cause = JP_CAUSE_EXIT;
	r.reason = "exited with status 2";
	record_round_trip(&r);
	r.exit_code = -1;
	r.signal = 9;
	r.cause = JP_CAUSE_TIMEOUT;
	record_round_trip(&r);
	jp_record_init(&r);
	r.job = 2;
	r.client = "ci";
	r.kind = JP_KIND_CALL;
	r.state = JP_STATE_SUCCEEDED;
	r.value = value;
	r.priority = JP_PRIO_CRITICAL;
	record_round_trip(&r);
	for (int c = JP_CAUSE_EXIT; c <= JP_CAUSE_MEMORY; c++) {
		r.state = JP_STATE_CANCELLED;
		r.cause = (enum jp_cause)c;
		r.value = NULL;
		record_round_trip(&r);
	}
	assert_null(jp_cause_name(JP_CAUSE_NONE));
	assert_int_equal(jp_cause_from_name(""), -1);
	json_decref(value);
}

static void test_record_errors(void **state)
{
	static const char *const bad[] = {
		"[]", "{\"state\":\"queued\"}", "{\"job\":0,\"state\":\"queued\"}",
		"{\"job\":1}", "{\"job\":1,\"state\":\"sleeping\"}",
		"{\"job\":1,\"state\":\"failed\",\"exit_code\":256}",
		"{\"job\":1,\"state\":\"failed\",\"signal\":0}",
		"{\"job\":1,\"state\":\"failed\",\"cause\":\"gremlins\"}",
		"{\"job\":1,\"state\":\"queued\",\"kind\":\"script\"}",
		"{\"job\":1,\"state\":\"queued\",\"name\":7}",
		"{\"job\":1,\"state\":\"queued\",\"submitted_ms\":-5}",
		"{\"job\":1,\"state\":\"queued\",\"client\":[]}",
		"{\"job\":1,\"state\":\"queued\",\"uid\":-1}",
		"{\"job\":1,\"state\":\"queued\",\"priority\":\"urgent\"}",
		"{\"job\":1,\"state\":\"queued\",\"started_ms\":\"now\"}",
		"{\"job\":1,\"state\":\"queued\",\"finished_ms\":1.5}",
		"{\"job\":1,\"state\":\"failed\",\"reason\":false}",
	};
	struct jp_record r;
	struct jp_err err = {0};
	json_t *j;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = parse_text(bad[i]);
		if (jp_record_parse(j, &r, &err) != JSCHED_EPROTOCOL)
			fail_msg("accepted %s", bad[i]);
		json_decref(j);
	}
	/* Members a newer daemon adds are ignored. */
	j = parse_text("{\"job\":1,\"state\":\"queued\",\"queue_position\":3}");
	assert_int_equal(jp_record_parse(j, &r, NULL), 0);
	json_decref(j);
}

static void test_output_stream(void **state)
{
	const unsigned char bytes[] = {0, 1, 2, 0xff, 'a', '\n'};
	unsigned char *data;
	size_t len;
	bool trunc;
	json_t *j, *m;

	(void)state;
	m = jp_reply_new(11);
	assert_int_equal(json_object_set_new(m, "stdout", jp_output_stream_new(bytes, sizeof(bytes), true)), 0);
	assert_int_equal(json_object_set_new(m, "stderr", jp_output_stream_new(NULL, 0, false)), 0);
	m = wire(m);
	j = json_object_get(m, "stdout");
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), sizeof(bytes));
	assert_int_equal(jp_output_stream_parse(j, &data, &len, &trunc, NULL), 0);
	assert_int_equal(len, sizeof(bytes));
	assert_memory_equal(data, bytes, len);
	assert_true(trunc);
	free(data);
	assert_int_equal(jp_output_stream_parse(json_object_get(m, "stderr"), &data, &len, &trunc, NULL), 0);
	assert_int_equal(len, 0);
	assert_non_null(data);
	assert_int_equal(data[0], 0);
	assert_false(trunc);
	free(data);
	json_decref(m);
	j = parse_text("{\"data\":\"!!\",\"bytes\":1,\"truncated\":false}");
	assert_int_equal(jp_output_stream_parse(j, &data, &len, &trunc, NULL), JSCHED_EPROTOCOL);
	json_decref(j);
	j = parse_text("{\"data\":\"\",\"bytes\":0}");
	assert_int_equal(jp_output_stream_parse(j, &data, &len, &trunc, NULL), JSCHED_EPROTOCOL);
	json_decref(j);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(jp_kind_name(JP_KIND_CALL), "call");
	assert_int_equal(jp_kind_from_name("exec"), JP_KIND_EXEC);
	assert_int_equal(jp_kind_from_name("Exec"), -1);
	assert_int_equal(jp_kind_from_name(NULL), -1);
	assert_string_equal(jp_priority_name(JP_PRIO_CRITICAL), "critical");
	assert_int_equal(jp_priority_from_name("low"), JP_PRIO_LOW);
	assert_null(jp_priority_name((enum jp_priority)4));
	assert_string_equal(jp_dep_on_name(JP_ON_ANY), "any");
	assert_int_equal(jp_dep_on_from_name("failure"), JP_ON_FAILURE);
	assert_false(jp_state_final(JP_STATE_RUNNING));
	assert_true(jp_state_final(JP_STATE_DROPPED));
	assert_true(jp_state_final(JP_STATE_SUCCEEDED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op_accepted),
		cmocka_unit_test(test_envelope_errors),
		cmocka_unit_test(test_member_errors),
		cmocka_unit_test(test_typed_reads),
		cmocka_unit_test(test_request_builder_round_trip),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_incoming),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_record_errors),
		cmocka_unit_test(test_output_stream),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
