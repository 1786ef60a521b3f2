/* tests/proto/test_dump.c: jp_buf_append_json writes what json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) writes, byte for byte: every byte value in a string and in a key,
 * UTF-8 of every width, a NUL inside a string, integers at the ends of their range, reals,
 * empty and nested containers, members in insertion order (also after a member is deleted
 * and set again), and 2,000 random trees from a fixed seed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"

/* same: v (taken) written both ways. */
static void same(json_t *v)
{
	struct jp_buf b = { 0 };
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	assert_non_null(want);
	assert_int_equal(jp_buf_append_json(&b, v), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.data, want, b.len);
	free(want);
	jp_buf_free(&b);
	json_decref(v);
}

static void test_every_byte(void **state)
{
	(void)state;
	for (int c = 1; c < 0x80; c++) {
		char s[4] = { 'a', (char)c, 'z', 0 };

		same(json_string(s));
		same(json_pack("{s:i}", s, c)); /* as a key too */
	}
	same(json_stringn("a\0b", 3));
	same(json_string(""));
	same(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f /slash/ \"q\" \\b\\"));
}

/* jp_json_plain is the rule the readers share: the bytes 0x20-0x7f but '"' and '\\', which
 * are exactly the ASCII bytes that jansson (and so jp_buf_append_json) writes as
 * themselves, DEL included. */
static void test_plain_table(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++)
		assert_int_equal(jp_json_plain[c], c >= 0x20 && c < 0x80 && c != '"' && c != '\\');
	for (int c = 1; c < 0x80; c++) {
		char s[2] = { (char)c, 0 };
		json_t *v = json_string(s);
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		bool itself = t && strlen(t) == 3 && t[1] == (char)c;

		assert_int_equal(itself, jp_json_plain[c]);
		free(t);
		json_decref(v);
	}
}

/* jp_json_plain_end finds the first byte that is not plain as a byte loop over the table
 * does: every byte value at every place of buffers of 0 to 24 bytes of plain filler (so
 * the word steps, the tail loop and the seam between them are all crossed), after a
 * second non-plain byte further on (a word's later flags must not win), and with two
 * non-plain bytes side by side (the borrow of a byte below 0x20 into the next). */
static const unsigned char *plain_end_loop(const unsigned char *p, const unsigned char *end)
{
	while (p < end && jp_json_plain[*p])
		p++;
	return p;
}

static void test_plain_end(void **state)
{
	unsigned char buf[24];

	(void)state;
	for (size_t len = 0; len <= sizeof buf; len++) {
		memset(buf, 'a', sizeof buf);
		assert_ptr_equal(jp_json_plain_end(buf, buf + len), buf + len);
		for (size_t at = 0; at < len; at++)
			for (int c = 0; c < 256; c++) {
				memset(buf, 'a', sizeof buf);
				buf[at] = (unsigned char)c;
				assert_ptr_equal(jp_json_plain_end(buf, buf + len), plain_end_loop(buf, buf + len));
				if (at + 1 < len) {
					buf[at + 1] = 0x1f;
					assert_ptr_equal(jp_json_plain_end(buf, buf + len),
							 plain_end_loop(buf, buf + len));
					buf[at + 1] = (unsigned char)(255 - c);
					assert_ptr_equal(jp_json_plain_end(buf, buf + len),
							 plain_end_loop(buf, buf + len));
				}
				/* from an odd start: a word read across the buffer's alignment */
				if (at > 0)
					assert_ptr_equal(jp_json_plain_end(buf + 1, buf + len),
							 plain_end_loop(buf + 1, buf + len));
			}
	}
}

static void test_numbers_and_containers(void **state)
{
	static const double reals[] = { 0.0, -0.0, 1.0, 0.5, 1e300, -1e-300, 3.14159265358979, 1e17, 123456789.0,
					2.5e-5, 100.0 };
	(void)state;
	same(json_integer(0));
	same(json_integer(-1));
	same(json_integer(INT64_MAX));
	same(json_integer(INT64_MIN));
	same(json_integer(9007199254740991));
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		same(json_real(reals[i]));
	same(json_true());
	same(json_false());
	same(json_null());
	same(json_object());
	same(json_array());
	same(json_pack("{s:[],s:{},s:[{},[[]]],s:{s:{s:n}}}", "a", "b", "c", "d", "e", "f"));
	json_t *o = json_pack("{s:i,s:i,s:i}", "z", 1, "a", 2, "m", 3);
	json_object_del(o, "a");
	json_object_set_new(o, "a", json_integer(4));
	json_object_set_new(o, "b", json_real(0.25));
	same(o);
	assert_int_equal(jp_buf_append_json(&(struct jp_buf){ 0 }, NULL), JSCHED_EINVAL);
}

/* A random tree of depth at most d from the generator's state *r. */
static json_t *random_tree(unsigned *r, int d)
{
	static const char *const pieces[] = { "a", "\n", "\"", "\\", "\x01", "\x1f", "\xc3\xa9", "\xf0\x9f\x98\x80",
					      "/", " ", "\t", "\x7f", "key" };
	char s[64] = "";
	int kind = rand_r(r) % (d > 0 ? 9 : 7);

	switch (kind) {
	case 0: return json_integer((json_int_t)rand_r(r) * (rand_r(r) % 2 ? 1 : -1) * 1000003);
	case 1: return json_real((double)rand_r(r) / 7.0);
	case 2: return json_true();
	case 3: return json_false();
	case 4: return json_null();
	case 5:
	case 6:
		for (int n = rand_r(r) % 5; n > 0; n--)
			strcat(s, pieces[(size_t)rand_r(r) % (sizeof pieces / sizeof pieces[0])]);
		return json_string(s);
	case 7: {
		json_t *a = json_array();
		for (int n = rand_r(r) % 4; n > 0; n--)
			json_array_append_new(a, random_tree(r, d - 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (int n = rand_r(r) % 4; n > 0; n--) {
			snprintf(s, sizeof s, "%s%d", pieces[(size_t)rand_r(r) % (sizeof pieces / sizeof pieces[0])],
				 rand_r(r) % 10);
			json_object_set_new(o, s, random_tree(r, d - 1));
		}
		return o;
	}
	}
}

static void test_random_trees(void **state)
{
	unsigned r = 20261202;

	(void)state;
	for (int i = 0; i < 2000; i++)
		same(random_tree(&r, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_plain_table),
		cmocka_unit_test(test_plain_end),
		cmocka_unit_test(test_numbers_and_containers),
		cmocka_unit_test(test_random_trees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
