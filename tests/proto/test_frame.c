/* tests/proto/test_frame.c: the frame decoder and encoder, base64 and the byte buffer.
 *
 * The decoder is fed the ways a socket delivers bytes: one byte at a time, several frames
 * in one read, a header split across reads; and the ways a peer can be wrong: a length
 * over the limit (refused from the header, with nothing kept), zero length, a truncated
 * frame, payloads that are not UTF-8, not JSON, not an object, with duplicate keys, NUL or
 * trailing bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"

/* frame: append a raw frame (header announcing len, then len payload bytes) to b. */
static void frame(struct jp_buf *b, const char *payload, size_t len)
{
	unsigned char h[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
			      (unsigned char)(len >> 8), (unsigned char)len};

	assert_int_equal(jp_buf_append(b, h, 4), 0);
	assert_int_equal(jp_buf_append(b, payload, len), 0);
}

static void frame_str(struct jp_buf *b, const char *payload)
{
	frame(b, payload, strlen(payload));
}

/* expect_msg: the decoder yields one message whose "n" member is n. */
static void expect_msg(struct jp_decoder *d, json_int_t n)
{
	json_t *m = NULL;

	assert_int_equal(jp_decoder_next(d, &m), 1);
	assert_non_null(m);
	assert_int_equal(json_integer_value(json_object_get(m, "n")), n);
	json_decref(m);
}

static void test_encode_decode_round_trip(void **state)
{
	json_t *msg = json_pack("{s:s, s:I, s:[s,s], s:{s:b}}", "op", "ping", "id", (json_int_t)7,
				"list", "a", "é", "o", "k", 1);
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *back = NULL;

	(void)state;
	assert_int_equal(jp_frame_append(&b, msg, JP_DEFAULT_FRAME_BYTES), 0);
	/* Header: big-endian payload length. */
	assert_int_equal(((size_t)b.data[0] << 24 | (size_t)b.data[1] << 16 |
			  (size_t)b.data[2] << 8 | b.data[3]), b.len - 4);
	assert_memory_equal(b.data + 4, "{\"op\":\"ping\",\"id\":7", 18);
	jp_decoder_init(&d, JP_DEFAULT_FRAME_BYTES);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next(&d, &back), 1);
	assert_true(json_equal(msg, back));
	json_decref(back);
	assert_int_equal(jp_decoder_next(&d, &back), 0);
	assert_null(back);
	assert_int_equal(jp_decoder_buffered(&d), 0);
	json_decref(msg);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_encode_alloc(void **state)
{
	json_t *msg = json_pack("{s:s}", "op", "ping");
	char *bytes;
	size_t len;

	(void)state;
	assert_int_equal(jp_frame_encode(msg, &bytes, &len), 0);
	assert_int_equal(len, 4 + strlen("{\"op\":\"ping\"}"));
	assert_memory_equal(bytes, "\0\0\0\x0d{\"op\":\"ping\"}", len);
	free(bytes);
	json_decref(msg);
	msg = json_array();
	assert_int_equal(jp_frame_encode(msg, &bytes, &len), JSCHED_EINVAL);
	assert_null(bytes);
	json_decref(msg);
}

static void test_encode_over_limit(void **state)
{
	json_t *msg = json_pack("{s:s}", "k", "0123456789");	/* {"k":"0123456789"}: 18 */
	struct jp_buf b = {0};

	(void)state;
	assert_int_equal(jp_buf_append(&b, "xy", 2), 0);
	assert_int_equal(jp_frame_append(&b, msg, 17), JSCHED_EFRAME_TOO_LARGE);
	assert_int_equal(b.len, 2);	/* unchanged */
	assert_int_equal(jp_frame_append(&b, msg, 18), 0);
	assert_int_equal(b.len, 2 + 4 + 18);
	json_decref(msg);
	jp_buf_free(&b);
}

static void test_byte_at_a_time(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	int got = 0;

	(void)state;
	for (int i = 0; i < 5; i++) {
		char p[64];

		snprintf(p, sizeof(p), "{\"n\":%d,\"pad\":\"%.*s\"}", i, i * 7, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		frame_str(&b, p);
	}
	jp_decoder_init(&d, 1024);
	for (size_t i = 0; i < b.len; i++) {
		json_t *m = NULL;
		int rc;

		assert_int_equal(jp_decoder_feed(&d, b.data + i, 1), 0);
		rc = jp_decoder_next(&d, &m);
		assert_true(rc == 0 || rc == 1);
		if (rc == 1) {
			assert_int_equal(json_integer_value(json_object_get(m, "n")), got);
			got++;
			json_decref(m);
			assert_int_equal(jp_decoder_next(&d, &m), 0);
		}
	}
	assert_int_equal(got, 5);
	assert_int_equal(jp_decoder_buffered(&d), 0);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_several_frames_per_read(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;

	(void)state;
	frame_str(&b, "{\"n\":1}");
	frame_str(&b, "{\"n\":2}");
	frame_str(&b, "{\"n\":3}");
	frame_str(&b, "{\"n\":4}");
	jp_decoder_init(&d, 64);
	/* Three whole frames and half of the fourth in one read, the rest in another. */
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len - 5), 0);
	expect_msg(&d, 1);
	expect_msg(&d, 2);
	expect_msg(&d, 3);
	assert_int_equal(jp_decoder_next(&d, &m), 0);
	assert_int_equal(jp_decoder_buffered(&d), 6);
	assert_int_equal(jp_decoder_feed(&d, b.data + b.len - 5, 5), 0);
	expect_msg(&d, 4);
	assert_int_equal(jp_decoder_next(&d, &m), 0);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_split_header(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;

	(void)state;
	frame_str(&b, "{\"n\":9}");
	jp_decoder_init(&d, 64);
	for (size_t cut = 1; cut < 4; cut++) {
		assert_int_equal(jp_decoder_feed(&d, b.data, cut), 0);
		assert_int_equal(jp_decoder_next(&d, &m), 0);
		assert_int_equal(jp_decoder_feed(&d, b.data + cut, b.len - cut), 0);
		expect_msg(&d, 9);
	}
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_limit_exact(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;

	(void)state;
	frame_str(&b, "{\"n\":5}");	/* 7 bytes */
	jp_decoder_init(&d, 7);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	expect_msg(&d, 5);
	jp_decoder_free(&d);
	jp_decoder_init(&d, 6);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next(&d, &m), JSCHED_EFRAME_TOO_LARGE);
	assert_null(m);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_oversize_refused_from_header(void **state)
{
	const unsigned char huge[] = {0x7f, 0xff, 0xff, 0xff, '{', '"', 'a'};
	struct jp_decoder d;
	const unsigned char *p;
	size_t len;
	json_t *m;
	struct jp_err err = {0};

	(void)state;
	jp_decoder_init(&d, 1024);
	/* Header in two reads: nothing is kept once the header is known to be too large. */
	assert_int_equal(jp_decoder_feed(&d, huge, 2), 0);
	assert_int_equal(jp_decoder_next_frame(&d, &p, &len), 0);
	assert_int_equal(jp_decoder_feed(&d, huge + 2, sizeof(huge) - 2), 0);
	assert_int_equal(d.in.cap, 0);	/* freed: no room was set aside for the payload */
	assert_int_equal(jp_decoder_next_err(&d, &m, &err), JSCHED_EFRAME_TOO_LARGE);
	assert_int_equal(err.code, JSCHED_EFRAME_TOO_LARGE);
	assert_non_null(strstr(err.message, "1024"));
	/* Sticky: the stream cannot be resynchronised. */
	assert_int_equal(jp_decoder_next(&d, &m), JSCHED_EFRAME_TOO_LARGE);
	assert_int_equal(jp_decoder_feed(&d, "{}", 2), JSCHED_EFRAME_TOO_LARGE);
	assert_int_equal(d.in.cap, 0);
	jp_decoder_free(&d);
}

static void test_oversize_after_good_frames(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;
	const unsigned char big[] = {0, 0, 0x10, 0};	/* 4096 */

	(void)state;
	frame_str(&b, "{\"n\":1}");
	assert_int_equal(jp_buf_append(&b, big, 4), 0);
	assert_int_equal(jp_buf_append(&b, "{\"x\":", 5), 0);
	jp_decoder_init(&d, 4095);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	expect_msg(&d, 1);
	assert_int_equal(jp_decoder_next(&d, &m), JSCHED_EFRAME_TOO_LARGE);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_raised_limit(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	char payload[200];

	(void)state;
	snprintf(payload, sizeof(payload), "{\"n\":3,\"pad\":\"%0150d\"}", 0);
	frame_str(&b, payload);
	jp_decoder_init(&d, 64);
	jp_decoder_set_limit(&d, 1024);	/* as the daemon does after hello */
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	expect_msg(&d, 3);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_zero_length(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;

	(void)state;
	frame(&b, "", 0);
	frame_str(&b, "{\"n\":2}");
	jp_decoder_init(&d, 64);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next(&d, &m), JSCHED_EBAD_FRAME);
	expect_msg(&d, 2);	/* the length was sound: the decoder goes on */
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_truncated(void **state)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *m;

	(void)state;
	frame_str(&b, "{\"n\":1,\"more\":true}");
	jp_decoder_init(&d, 64);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len - 3), 0);
	assert_int_equal(jp_decoder_next(&d, &m), 0);
	assert_null(m);
	/* At end of stream, the caller sees a partial frame was left. */
	assert_int_equal(jp_decoder_buffered(&d), b.len - 3);
	/* Room for the whole frame was reserved once its header was accepted. */
	assert_true(d.in.cap >= b.len);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

/* A payload that must be refused as bad_frame, after which the decoder goes on. */
static void expect_bad(const char *payload, size_t len)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	struct jp_err err = {0};
	json_t *m = NULL;

	frame(&b, payload, len);
	frame_str(&b, "{\"n\":8}");
	jp_decoder_init(&d, 256);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next_err(&d, &m, &err), JSCHED_EBAD_FRAME);
	assert_null(m);
	assert_int_equal(err.code, JSCHED_EBAD_FRAME);
	assert_true(err.message[0] != '\0');
	expect_msg(&d, 8);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

static void test_bad_payloads(void **state)
{
	static const char *const texts[] = {
		"garbage", "{", "{\"a\":}", "[1,2]", "\"str\"", "42", "null", "true",
		"{\"a\":1}{\"b\":2}", "{\"a\":1} x", "{\"a\":1,\"a\":2}", "{\"a\":\"\\u0000\"}",
		"{'a':1}", "{\"a\":1,}", "{\"a\":99999999999999999999999}",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		expect_bad(texts[i], strlen(texts[i]));
	expect_bad("{\"a\":\"\xff\"}", 8);		/* not UTF-8 */
	expect_bad("{\"a\":\"\xc3\"}", 8);		/* truncated sequence */
	expect_bad("{\"a\":\"\xed\xa0\x80\"}", 10);	/* a surrogate in UTF-8 */
	expect_bad("{\"a\":1}\0", 8);			/* a NUL after the object */
}

static void test_garbage_stream(void **state)
{
	struct jp_decoder d;
	unsigned char junk[512];
	json_t *m;
	uint32_t x = 12345;
	int rc = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (unsigned char)(x >> 16);
	}
	junk[0] = 0x9c;	/* a length far above the limit */
	jp_decoder_init(&d, 65536);
	assert_int_equal(jp_decoder_feed(&d, junk, sizeof(junk)), 0);
	rc = jp_decoder_next(&d, &m);
	assert_int_equal(rc, JSCHED_EFRAME_TOO_LARGE);
	jp_decoder_free(&d);
}

static void test_parse_direct(void **state)
{
	json_t *m;
	struct jp_err err = {0};

	(void)state;
	assert_int_equal(jp_frame_parse("{}", 2, &m, &err), 0);
	assert_true(json_is_object(m));
	json_decref(m);
	assert_int_equal(jp_frame_parse("", 0, &m, &err), JSCHED_EBAD_FRAME);
	assert_int_equal(jp_frame_parse("[]", 2, &m, NULL), JSCHED_EBAD_FRAME);
	assert_null(m);
}

static void test_base64(void **state)
{
	static const struct {
		const char *plain, *enc;
	} vectors[] = {	/* RFC 4648 section 10 */
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
		{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
	};
	unsigned char bytes[256], *out;
	size_t n;
	char *s;

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		assert_int_equal(jp_base64_encode(vectors[i].plain, strlen(vectors[i].plain), &s), 0);
		assert_string_equal(s, vectors[i].enc);
		free(s);
		assert_int_equal(jp_base64_decode(vectors[i].enc, strlen(vectors[i].enc), 100, &out, &n), 0);
		assert_int_equal(n, strlen(vectors[i].plain));
		if (n)
			assert_memory_equal(out, vectors[i].plain, n);
		free(out);
	}
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof(bytes); len += 1 + len / 8) {
		assert_int_equal(jp_base64_encode(bytes, len, &s), 0);
		assert_int_equal(jp_base64_decode(s, strlen(s), len, &out, &n), 0);
		assert_int_equal(n, len);
		if (len)
			assert_memory_equal(out, bytes, len);
		free(out);
		if (len > 0)
			assert_int_equal(jp_base64_decode(s, strlen(s), len - 1, &out, &n),
					 JSCHED_ELIMIT_EXCEEDED);
		free(s);
	}
	/* Not base64: length, alphabet, padding in the middle, whitespace, leftover bits. */
	static const char *const bad[] = {"Zg=", "Zm9", "Zm9v\n", "Z!==", "Zg==Zg==", "=Zg=",
					  "Zh==", "Zm9=", "Zm-v", "Zm_v", "Z===", "===="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(jp_base64_decode(bad[i], strlen(bad[i]), 100, &out, &n),
				 JSCHED_EBAD_REQUEST);
}

static void test_buf(void **state)
{
	struct jp_buf b;

	(void)state;
	jp_buf_init(&b);
	assert_int_equal(jp_buf_append(&b, "hello", 5), 0);
	assert_int_equal(jp_buf_append(&b, NULL, 0), 0);
	jp_buf_consume(&b, 2);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "llo", 3);
	jp_buf_consume(&b, 10);
	assert_int_equal(b.len, 0);
	assert_int_equal(jp_buf_append(&b, "x", 1), 0);
	assert_int_equal(jp_buf_reserve(&b, SIZE_MAX), JSCHED_ENOMEM);	/* len + extra overflows */
	assert_int_equal(b.len, 1);
	jp_buf_free(&b);
	assert_null(b.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_decode_round_trip),
		cmocka_unit_test(test_encode_alloc),
		cmocka_unit_test(test_encode_over_limit),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_several_frames_per_read),
		cmocka_unit_test(test_split_header),
		cmocka_unit_test(test_limit_exact),
		cmocka_unit_test(test_oversize_refused_from_header),
		cmocka_unit_test(test_oversize_after_good_frames),
		cmocka_unit_test(test_raised_limit),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_payloads),
		cmocka_unit_test(test_garbage_stream),
		cmocka_unit_test(test_parse_direct),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_buf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
