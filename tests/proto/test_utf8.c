/* tests/proto/test_utf8.c: proto/utf8.c, and the error texts built with it.  A cut never
 * splits a character at any offset, for every width; scrubbing keeps every well-formed
 * character and only those; an error that quotes text cut by its buffer still becomes an
 * error object jansson accepts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proto/jproto.h"

static const char *const wide[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};

static void test_seq(void **state)
{
	(void)state;
	assert_int_equal(jp_utf8_seq("a"), 1);
	assert_int_equal(jp_utf8_seq(""), 0);
	for (size_t w = 0; w < 3; w++) {
		char cut[8];

		assert_int_equal(jp_utf8_seq(wide[w]), w + 2);
		/* Every proper prefix is no character. */
		for (size_t k = 1; k < w + 2; k++) {
			memcpy(cut, wide[w], k);
			cut[k] = '\0';
			assert_int_equal(jp_utf8_seq(cut), 0);
		}
	}
	assert_int_equal(jp_utf8_seq("\xc0\xaf"), 0);	      /* overlong '/' */
	assert_int_equal(jp_utf8_seq("\xed\xa0\x80"), 0);     /* a surrogate */
	assert_int_equal(jp_utf8_seq("\xf4\x90\x80\x80"), 0); /* above U+10FFFF */
	assert_int_equal(jp_utf8_seq("\x80"), 0);
}

static void test_cut_every_offset(void **state)
{
	char s[64];

	(void)state;
	for (size_t w = 0; w < 3; w++)
		for (size_t lead = 0; lead < 8; lead++) {
			memset(s, 'a', lead);
			strcpy(s + lead, wide[w]);
			strcat(s, "z");
			for (size_t max = 0; max < strlen(s) + 2; max++) {
				int n = jp_utf8_cut(s, max);
				char t[64];

				assert_true((size_t)n <= max && (size_t)n <= strlen(s));
				/* The longest such prefix: one character more would not fit. */
				if ((size_t)n < strlen(s))
					assert_true(n + (int)(jp_utf8_seq(s + n) ? jp_utf8_seq(s + n) : 1) >
						    (int)max);
				snprintf(t, sizeof(t), "%.*s", n, s);
				assert_true(jp_utf8_valid(t));
			}
		}
}

static void test_scrub(void **state)
{
	char s[64];

	(void)state;
	strcpy(s, "a\xc3\xa9" "b\xe2\x82" "c\xf0\x9f\x98\x80" "\x80" "d\xed\xa0\x80");
	assert_false(jp_utf8_valid(s));
	assert_int_equal(jp_utf8_scrub(s), strlen("a\xc3\xa9" "bc\xf0\x9f\x98\x80" "d"));
	assert_string_equal(s, "a\xc3\xa9" "bc\xf0\x9f\x98\x80" "d");
	assert_true(jp_utf8_valid(s));
}

/* test_error_texts: quoted text of every length around the buffers' sizes. */
static void test_error_texts(void **state)
{
	char text[600];

	(void)state;
	for (size_t w = 0; w < 3; w++)
		for (size_t n = 100; n < 300; n++) {
			struct jp_err err;
			json_t *e;

			memset(text, 'a', n);
			strcpy(text + n, wide[w]);
			jp_err_set(&err, JSCHED_EBAD_REQUEST, text, "quoting \"%s\"", text);
			assert_true(jp_utf8_valid(err.message) && jp_utf8_valid(err.field));
			e = jp_error_new_from(&err);
			assert_non_null(e);
			json_decref(e);
			/* A text cut elsewhere (a daemon's own buffer) is scrubbed too. */
			text[n + 1] = '\0';
			e = jp_error_new(JSCHED_EINTERNAL, text, text);
			assert_non_null(e);
			assert_int_equal(strlen(json_string_value(json_object_get(e, "message"))), n);
			json_decref(e);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seq),
		cmocka_unit_test(test_cut_every_offset),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_error_texts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
