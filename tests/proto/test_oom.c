/* tests/proto/test_oom.c: every allocation the codec makes can fail, and it copes.
 *
 * The program links the shared allocation wrappers (tests/common/failalloc.h: the codec's
 * own allocations come there through --wrap) and gives jansson the same allocator.
 * Each scenario runs again and again with the Nth allocation failing, N = 0, 1, 2 ...,
 * until a run meets no failure.  Every run must end either in a clean error (a negative
 * code or NULL, as the function documents) or in the right result, and must leave exactly
 * as many blocks allocated as before it: a leak on an error path fails the test even
 * without ASan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"
#include "tests/common/failalloc.h"

/* A scenario returns true when it completed; it must free everything either way. */
typedef bool (*scenario_fn)(void);

static void exhaust(scenario_fn fn, const char *name)
{
	long n;

	for (n = 0; n < 100000; n++) {
		long before = jtc_alloc_live();
		bool ok;

		jtc_alloc_fail_at(n);
		ok = fn();
		jtc_alloc_fail_at(-1);
		if (jtc_alloc_live() != before)
			fail_msg("%s: %ld blocks leaked with allocation %ld failing", name,
				 jtc_alloc_live() - before, n);
		if (!jtc_alloc_failed()) {
			assert_true(ok);	/* nothing failed: it must have worked */
			if (n == 0)	/* the wrappers never saw the codec allocate */
				fail_msg("%s: no allocation came through the wrappers", name);
			return;
		}
	}
	fail_msg("%s: still allocating after %ld runs", name, n);
}

static const char graph_text[] =
	"{\"op\":\"submit\",\"id\":4,\"jobs\":["
	"{\"ref\":\"fetch\",\"kind\":\"exec\",\"argv\":[\"git\",\"pull\"],\"cwd\":\"/srv\","
	" \"env\":{\"A\":\"1\",\"B\":\"2\"},\"stdin\":\"aGVsbG8K\"},"
	"{\"ref\":\"build\",\"kind\":\"exec\",\"argv\":[\"make\"],\"after\":[\"fetch\",7]},"
	"{\"kind\":\"call\",\"fn\":\"echo\",\"args\":[1,2],\"any_of\":[{\"ref\":\"build\",\"on\":\"any\"}]}]}";

static bool decode_stream(void)
{
	json_t *msgs[3] = {json_pack("{s:s,s:i}", "op", "ping", "id", 1),
			   json_pack("{s:s,s:i,s:[i,i,i]}", "op", "status", "id", 2, "jobs", 1, 2, 3),
			   json_loads(graph_text, 0, NULL)};
	struct jp_buf b = {0};
	struct jp_decoder d;
	bool ok = true;
	int got = 0;

	jp_decoder_init(&d, 4096);
	for (int i = 0; i < 3; i++)
		if (!msgs[i] || jp_frame_append(&b, msgs[i], 4096) < 0)
			ok = false;
	for (size_t off = 0; ok && off < b.len; off += 7) {
		size_t n = b.len - off < 7 ? b.len - off : 7;
		json_t *m;
		int rc;

		if (jp_decoder_feed(&d, b.data + off, n) < 0) {
			ok = false;
			break;
		}
		while ((rc = jp_decoder_next(&d, &m)) == 1) {
			assert_true(json_equal(m, msgs[got]));
			got++;
			json_decref(m);
		}
		if (rc < 0) {
			/* jansson reports most of its allocation failures as syntax errors. */
			assert_true(rc == JSCHED_ENOMEM || rc == JSCHED_EBAD_FRAME);
			ok = false;
		}
	}
	for (int i = 0; i < 3; i++)
		json_decref(msgs[i]);
	jp_buf_free(&b);
	jp_decoder_free(&d);
	return ok && got == 3;
}

static bool encode_alloc(void)
{
	json_t *m = json_loads(graph_text, 0, NULL);
	char *bytes = NULL;
	size_t len;
	int rc = m ? jp_frame_encode(m, &bytes, &len) : JSCHED_ENOMEM;

	json_decref(m);
	free(bytes);
	if (rc < 0)
		assert_int_equal(rc, JSCHED_ENOMEM);
	return rc == 0;
}

static bool parse_submit(void)
{
	json_t *m = json_loads(graph_text, 0, NULL), *reply = NULL;
	struct jp_request r;
	struct jp_submit s;
	struct jp_err err = {0};
	int64_t ids[3] = {1, 2, 3};
	bool ok = false;
	int rc;

	if (!m)
		return false;
	rc = jp_request_parse(m, NULL, &r, &err);
	assert_int_equal(rc, 0);	/* the checker allocates nothing */
	rc = jp_submit_parse(&r, NULL, &s, &err);
	if (rc == 0) {
		assert_int_equal(s.n, 3);
		assert_int_equal(s.specs[2].any_of[0].index, 1);
		reply = jp_submit_reply_new(4, &s, ids, NULL);
		ok = reply != NULL;
		for (size_t i = 0; ok && i < s.n; i++) {
			json_t *j = jp_job_spec_to_json(&s.specs[i]);

			ok = j != NULL;
			json_decref(j);
		}
		jp_submit_clear(&s);
	} else {
		assert_int_equal(rc, JSCHED_ENOMEM);
		assert_int_equal(err.code, JSCHED_ENOMEM);
		assert_null(s.specs);
	}
	json_decref(reply);
	json_decref(m);
	return ok;
}

/* fast_submit: the same graph through the fast reader (with args, which jansson makes):
 * out of memory anywhere, it declines and holds nothing; else it reads the graph whole. */
static bool fast_submit(void)
{
	static const char text[] = "{\"op\":\"submit\",\"id\":4,\"jobs\":["
		"{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"x\",\"args\":{\"k\":[1,2]}},"
		"{\"kind\":\"exec\",\"argv\":[\"b\",\"c\"],\"env\":{\"E\":\"1\"},\"ref\":\"y\","
		"\"after\":[\"x\",{\"job\":3,\"on\":\"any\"}]}],\"wait\":true}";
	struct jp_fast *f = malloc(sizeof(*f));
	bool ok;

	if (!f)
		return false;
	jp_fast_init(f);
	ok = jp_fast_parse(text, sizeof(text) - 1, NULL, f);
	if (ok) {
		assert_int_equal(f->submit.n, 2);
		assert_int_equal(f->submit.specs[1].after[0].index, 0);
		assert_int_equal(f->submit.order[1], 1);
	} else {
		assert_null(f->submit.specs);
		assert_int_equal(f->n_args, 0);
	}
	jp_fast_free(f);
	free(f);
	return ok;
}

static bool builders(void)
{
	struct jp_identity who = {.uid = 1, .gid = 2, .pid = 3, .client = "c"};
	struct jp_limits lim;
	struct jp_record rec;
	struct jp_err err = {0};
	json_t *objs[8];
	bool ok = true;
	unsigned char *data = NULL;
	size_t len;
	bool trunc;

	jp_limits_default(&lim);
	jp_record_init(&rec);
	rec.job = 5;
	rec.client = "c";
	rec.state = JP_STATE_FAILED;
	rec.reason = "exited with status 1";
	rec.cause = JP_CAUSE_EXIT;
	rec.exit_code = 1;
	jp_err_set(&err, JSCHED_EBAD_REQUEST, "job.argv", "bad");
	objs[0] = jp_hello_new(0, "c");
	objs[1] = jp_hello_reply_new(0, JP_PROTOCOL_VERSION, "0.1.0", "i", &who, &lim);
	objs[2] = jp_reply_err_new(3, &err);
	objs[3] = jp_reply_error_new(JP_ID_NONE, jp_version_mismatch_new(99, "0.1.0"));
	objs[4] = jp_event_job_new(9, jp_record_to_json(&rec));
	objs[5] = jp_event_shutdown_new("immediate");
	objs[6] = jp_output_stream_new("abc\0def", 7, true);
	objs[7] = jp_request_new(JP_OP_LIST, 8);
	for (int i = 0; i < 8; i++) {
		ok = ok && objs[i] != NULL;
		json_decref(objs[i]);
	}
	if (ok) {
		json_t *s = jp_output_stream_new("abc\0def", 7, true);
		int rc = s ? jp_output_stream_parse(s, &data, &len, &trunc, &err) : JSCHED_ENOMEM;

		if (rc == 0)
			assert_memory_equal(data, "abc\0def", 7);
		else
			ok = false;
		free(data);
		json_decref(s);
	}
	return ok;
}

static void test_oom(void **state)
{
	(void)state;
	json_set_alloc_funcs(jtc_malloc, jtc_free);
	exhaust(decode_stream, "decode_stream");
	exhaust(encode_alloc, "encode_alloc");
	exhaust(parse_submit, "parse_submit");
	exhaust(fast_submit, "fast_submit");
	exhaust(builders, "builders");
	json_set_alloc_funcs(malloc, free);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
