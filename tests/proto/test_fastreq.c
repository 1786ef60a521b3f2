/* tests/proto/test_fastreq.c: proto/fastreq.c against the tree's way (fastdiff.h), over a
 * table of edge cases.  Each row is a frame and whether the fast path must take it: the
 * hot requests in the shapes clients send (member order, whitespace, escapes) must be
 * taken, and everything the tree's way refuses (duplicates at every level, invalid UTF-8,
 * \u0000 and lone surrogates, integers past 2^53, unknown members, wrong types, every
 * spec rule) must not.  Whatever is taken must read the same as the tree reads it, every
 * value; whatever is declined still gets the tree's answer, so a row that is declined
 * needs no answer here (test_message.c, test_jobspec.c and the fuzz targets check
 * those). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proto/jproto.h"
#include "tests/proto/fastdiff.h"

struct row {
	const char *text;
	bool taken;
};

#define T(s) {s, true}
#define N(s) {s, false}

static const struct row rows[] = {
	/* ping, status, wait, cancel */
	T("{\"op\":\"ping\",\"id\":1}"),
	T("{\"id\":0,\"op\":\"ping\"}"),
	T(" \t\r\n{ \"op\" : \"ping\" , \"id\" : 9007199254740991 } \n"),
	N("{\"op\":\"ping\",\"id\":9007199254740992}"),	/* 2^53: bad_frame */
	N("{\"op\":\"ping\",\"id\":99999999999999999999}"),	/* jansson: too big */
	N("{\"op\":\"ping\",\"id\":-1}"),
	N("{\"op\":\"ping\",\"id\":-0}"),
	N("{\"op\":\"ping\",\"id\":1.0}"),
	N("{\"op\":\"ping\",\"id\":1e2}"),
	N("{\"op\":\"ping\",\"id\":01}"),
	N("{\"op\":\"ping\",\"id\":1,\"id\":2}"),
	N("{\"op\":\"ping\",\"op\":\"ping\",\"id\":1}"),
	N("{\"op\":\"ping\",\"id\":1,\"x\":1}"),
	N("{\"op\":\"ping\",\"id\":1}x"),
	N("{\"op\":\"ping\",\"id\":1}}"),
	N("{\"op\":\"ping\",\"id\":1"),
	N("{\"op\":\"ping\",\"id\":1,}"),
	N("{\"op\":\"ping\"}"),
	N("{\"id\":1}"),
	N("{\"op\":\"pong\",\"id\":1}"),
	N("{\"op\":\"hello\",\"id\":1,\"version\":2}"),
	N("{\"op\":\"list\",\"id\":1}"),
	N("[{\"op\":\"ping\",\"id\":1}]"),
	N(""),
	N("{}"),
	T("{\"op\":\"st\\u0061tus\",\"id\":1,\"job\":5}"),	/* an escaped name */
	T("{\"op\":\"status\",\"id\":2,\"job\":5,\"detail\":true}"),
	T("{\"op\":\"status\",\"id\":2,\"detail\":false,\"jobs\":[1,2,3]}"),
	N("{\"op\":\"status\",\"id\":2,\"job\":0}"),
	N("{\"op\":\"status\",\"id\":2,\"jobs\":[]}"),
	N("{\"op\":\"status\",\"id\":2,\"jobs\":[1,0]}"),
	N("{\"op\":\"status\",\"id\":2,\"jobs\":[1,\"2\"]}"),
	N("{\"op\":\"status\",\"id\":2,\"job\":1,\"jobs\":[2]}"),
	N("{\"op\":\"status\",\"id\":2}"),
	N("{\"op\":\"status\",\"id\":2,\"job\":1,\"detail\":1}"),
	N("{\"op\":\"status\",\"id\":2,\"job\":1,\"mode\":\"any\"}"),
	N("{\"op\":\"status\",\"id\":2,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"}}"),
	T("{\"op\":\"wait\",\"id\":3,\"job\":7}"),
	T("{\"op\":\"wait\",\"id\":3,\"jobs\":[7,8],\"mode\":\"any\",\"timeout_ms\":0}"),
	T("{\"timeout_ms\":1500,\"mode\":\"all\",\"jobs\":[ 7 , 8 ],\"id\":3,\"op\":\"wait\"}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"mode\":\"some\"}"),
	T("{\"op\":\"wait\",\"id\":3,\"jobs\":[7,8],\"fields\":\"brief\"}"),
	T("{\"fields\":\"all\",\"op\":\"wait\",\"id\":3,\"job\":7,\"mode\":\"any\"}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"fields\":\"short\"}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"fields\":\"brief\",\"fields\":\"brief\"}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"fields\":true}"),
	N("{\"op\":\"status\",\"id\":3,\"job\":7,\"fields\":\"brief\"}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"timeout_ms\":-1}"),
	N("{\"op\":\"wait\",\"id\":3,\"job\":7,\"detail\":true}"),
	T("{\"op\":\"cancel\",\"id\":4,\"job\":7}"),
	T("{\"op\":\"cancel\",\"id\":4,\"jobs\":[7]}"),
	N("{\"op\":\"cancel\",\"id\":4,\"job\":7,\"detail\":true}"),
	/* submit: one spec */
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"fn\":\"noop\",\"kind\":\"call\"},\"wait\":true}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"wait\":false}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}},"
	  "\"wait\":{\"timeout_ms\":100,\"mode\":\"any\",\"output\":true}}"),
	T("{\"op\":\"submit\",\"id\":5,\"wait\":{},\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":null}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":[1,\"}\\\"]\",{\"a\":[{}]},true,null,-3,2.5e3]}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":\"x\" }}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":-12 }}"),
	/* args of the flat shapes (built without jansson) and of the others (jansson's) */
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":false,\"e\":null}}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{ } }}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"\":0,\"\\u00e9\":\"\\ud83d\\ude00\"}}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1.5,\"b\":-1,\"c\":[]}}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1,\"b\":{\"a\":1}}}}"),
	T("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":true}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1,\"a\":2}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1,\"\\u0061\":2}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":{},\"a\":[]}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":tru}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":nulll}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":1,}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\"}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":{\"a\":9007199254740992}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":[-9007199254740992]}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":\"\\u0000\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":\"\xff\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":[1 2]}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"f\",\"args\":1e999}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"wait\":1}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"wait\":{\"x\":1}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"wait\":{\"mode\":\"all\",\"mode\":\"any\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"wait\":true,\"wait\":true}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"fn\":\"noop\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"job\":{\"kind\":\"call\",\"fn\":\"noop\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"},\"jobs\":[{\"kind\":\"call\",\"fn\":\"noop\"}]}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"fn\":\"noop\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"cal\",\"fn\":\"noop\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"argv\":[\"x\"]}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"zzz\":1}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"retry\":{\"max_attempts\":2}}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"cost\":0}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"cost\":1000001}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"priority\":\"urgent\"}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"deadline_in_ms\":1,\"deadline_at_ms\":2}}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":[]}"),
	N("{\"op\":\"submit\",\"id\":5,\"job\":5}"),
	N("{\"op\":\"submit\",\"id\":5}"),
	/* strings: escapes and UTF-8 */
	T("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"n\\u00e9\\/\\\\\\\"\\b\\f\\n\\r\\t\","
	  "\"name\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \\ud83d\\ude00\"}}"),
	T("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\uffff\\u0800\\u07ff\\u0080\\u007f\"}}"),
	/* DEL as itself, where an escape would begin were it not plain (jp_json_plain) */
	T("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"a\x7fn\x7f\",\"name\":\"\x7f\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"a\\u0000b\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\ud83d\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\ud83dx\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\ud83d\\u0041\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\ude00\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\u12\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\u12g4\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\\x\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"a\tb\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\xc0\xaf\"}}"),	/* overlong */
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\xe0\x80\xaf\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\xed\xa0\x80\"}}"),	/* a surrogate */
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\xf4\x90\x80\x80\"}}"),	/* > U+10FFFF */
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\xc3\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"\x80\"}}"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"x\"}}\xc3\xa9"),
	N("{\"op\":\"submit\",\"id\":6,\"job\":{\"kind\":\"call\",\"fn\":\"x"),
	/* exec specs */
	T("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"/bin/true\"]}}"),
	T("{\"op\":\"submit\",\"id\":7,\"job\":{\"argv\":[\"sh\",\"-c\",\"echo \\\"$X\\\"\\n\",\"\"],"
	  "\"env\":{\"X\":\"1\",\"PATH\":\"/bin\",\"E\":\"\"},\"cwd\":\"/tmp\",\"timeout_ms\":5000,"
	  "\"backend\":\"local\",\"kind\":\"exec\",\"name\":\"n\",\"priority\":\"high\",\"cost\":3,"
	  "\"key\":\"k1\",\"deadline_in_ms\":100,\"not_before\":0}}"),
	T("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[]}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"\"]}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[1]}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\"}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"fn\":\"noop\"}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"args\":1}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A\":\"1\",\"A\":\"2\"}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A=B\":\"1\"}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"\":\"1\"}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A\":1}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"tmp\"}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":0}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"backend\":\"cloud\"}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"stdin\":\"eA==\"}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"pids\":1}}}"),
	N("{\"op\":\"submit\",\"id\":7,\"job\":{\"kind\":\"exec\",\"argv\":[\"x\"]},\"wait\":{\"output\":true},\"x\":1}"),
	/* batches, refs and deps */
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"noop\"},{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":0}}],\"wait\":true}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[ {\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"b\",\"after\":[\"a\"]} ,"
	  "{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"a\",\"any_of\":[3,{\"job\":4,\"on\":\"failure\"},{\"on\":\"any\",\"ref\":\"c\"}]},"
	  "{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"c\",\"after\":[]}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"key\":\"x\"},{\"kind\":\"call\",\"fn\":\"a\",\"key\":\"x\"}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"a\"}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"a\",\"after\":[\"b\"]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"a\",\"after\":[\"b\"]},{\"kind\":\"call\",\"fn\":\"a\",\"ref\":\"b\",\"after\":[\"a\"]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[0]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[{}]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[{\"job\":1,\"ref\":\"a\"}]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[{\"job\":1,\"job\":2}]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[{\"job\":1,\"on\":\"never\"}]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[{\"job\":1,\"x\":1}]}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},5]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},]}"),
	/* one spec repeated (read once, then copied), and specs one byte away from the last */
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}},{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}},"
	  "{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}},{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":100}},{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}},"
	  "{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":1}},{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":1}} ,{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\": 1}}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"ab\"},{\"kind\":\"call\",\"fn\":\"a\",\"name\":\"n\"}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"e\",\"args\":{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\"}},{\"kind\":\"call\",\"fn\":\"e\",\"args\":{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\"}}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"args\":7,\"name\":\"x\",\"priority\":\"high\",\"cost\":3,\"deadline_in_ms\":5},{\"kind\":\"call\",\"fn\":\"a\",\"args\":7,\"name\":\"x\",\"priority\":\"high\",\"cost\":3,\"deadline_in_ms\":5}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"after\":[1]},{\"kind\":\"call\",\"fn\":\"a\",\"after\":[1]}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"exec\",\"argv\":[\"a\",\"b\"],\"env\":{\"K\":\"v\"}},{\"kind\":\"exec\",\"argv\":[\"a\",\"b\"],\"env\":{\"K\":\"v\"}}]}"),
	T("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"key\":\"k\"},{\"kind\":\"call\",\"fn\":\"a\",\"key\":\"k\"}],\"wait\":{\"mode\":\"any\"}}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}x]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}{\"kind\":\"call\",\"fn\":\"a\"}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\",\"args\":{\"x\":1,\"x\":1}},{\"kind\":\"call\",\"fn\":\"a\",\"args\":{\"x\":1,\"x\":1}}]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[]}"),
	N("{\"op\":\"submit\",\"id\":8,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}],\"wait\":{\"output\":true}}"),
};

static void test_table(void **state)
{
	struct jp_limits lim;

	(void)state;
	jp_limits_default(&lim);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool fast;
		const char *why = fastdiff(rows[i].text, strlen(rows[i].text), &lim, &fast);

		if (why || fast != rows[i].taken)
			print_error("row %zu: %s (%s): %s\n", i, fast ? "taken" : "declined",
				    why ? why : "same answer", rows[i].text);
		assert_null(why);
		assert_int_equal(fast, rows[i].taken);
	}
}

/* test_limits: at each limit taken, one past it declined (the tree's way says
 * limit_exceeded). */
static void test_limits(void **state)
{
	struct jp_limits lim;
	char buf[4096];
	bool fast;

	(void)state;
	jp_limits_default(&lim);
	lim.jobs_per_submit = 3;
	lim.argv_items = 2;
	lim.env_items = 2;
	lim.deps_per_job = 2;
	static const struct row at[] = {
		T("{\"op\":\"status\",\"id\":1,\"jobs\":[1,2,3]}"),
		N("{\"op\":\"status\",\"id\":1,\"jobs\":[1,2,3,4]}"),
		T("{\"op\":\"submit\",\"id\":1,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}]}"),
		N("{\"op\":\"submit\",\"id\":1,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"},{\"kind\":\"call\",\"fn\":\"a\"}]}"),
		T("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"exec\",\"argv\":[\"a\",\"b\"],\"env\":{\"A\":\"\",\"B\":\"\"}}}"),
		N("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"exec\",\"argv\":[\"a\",\"b\",\"c\"]}}"),
		N("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"exec\",\"argv\":[\"a\"],\"env\":{\"A\":\"\",\"B\":\"\",\"C\":\"\"}}}"),
		T("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"a\",\"after\":[1],\"any_of\":[2]}}"),
		N("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"a\",\"after\":[1,2,3]}}"),
		N("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"a\",\"after\":[1,2],\"any_of\":[3]}}"),
	};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const char *why = fastdiff(at[i].text, strlen(at[i].text), &lim, &fast);

		if (why || fast != at[i].taken)
			print_error("limit row %zu: %s: %s\n", i, why ? why : "taken?", at[i].text);
		assert_null(why);
		assert_int_equal(fast, at[i].taken);
	}
	/* Lengths: name JP_NAME_MAX bytes taken, one more declined; ref likewise. */
	for (int extra = 0; extra < 2; extra++) {
		int n = snprintf(buf, sizeof(buf), "{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\","
				 "\"fn\":\"a\",\"name\":\"%0*d\",\"ref\":\"%0*d\"}}",
				 (int)JP_NAME_MAX + extra, 0, (int)JP_REF_MAX, 0);

		assert_null(fastdiff(buf, (size_t)n, &lim, &fast));
		assert_int_equal(fast, extra == 0);
	}
}

/* test_big_batch: a 1,000-spec batch (the efficiency rows' shape) is taken, in one arena,
 * with every spec's text in place. */
static void test_big_batch(void **state)
{
	struct jp_buf b = {0};
	bool fast;
	static const char head[] = "{\"op\":\"submit\",\"id\":42,\"jobs\":[", tail[] = "],\"wait\":true}";

	(void)state;
	jp_buf_append(&b, head, strlen(head));
	for (int i = 0; i < 1000; i++) {
		char spec[128];
		int n = snprintf(spec, sizeof(spec), "%s{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":%d}}",
				 i ? "," : "", i);

		jp_buf_append(&b, spec, (size_t)n);
	}
	jp_buf_append(&b, tail, strlen(tail));
	assert_null(fastdiff(b.data, b.len, NULL, &fast));
	assert_true(fast);
	jp_buf_free(&b);
}

/* test_big_batch_one_spec: 1,000 copies of one spec (the efficiency rows' batches: read
 * once, then copied), every one read as the tree's way reads it. */
static void test_big_batch_one_spec(void **state)
{
	struct jp_buf b = {0};
	bool fast;
	static const char head[] = "{\"op\":\"submit\",\"id\":42,\"jobs\":[", tail[] = "]}",
			  spec[] = "{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":10}}";

	(void)state;
	jp_buf_append(&b, head, strlen(head));
	for (int i = 0; i < 1000; i++) {
		if (i)
			jp_buf_append(&b, ",", 1);
		jp_buf_append(&b, spec, strlen(spec));
	}
	jp_buf_append(&b, tail, strlen(tail));
	assert_null(fastdiff(b.data, b.len, NULL, &fast));
	assert_true(fast);
	jp_buf_free(&b);
}

/* test_batch_uneven_specs: the room reserved after a batch's first spec comes from its
 * length (fastreq.c, one_spec): a long first spec before 300 short ones (too little room:
 * the arrays grow on), a short one before 300 long ones (more room than is used), each
 * spec with args (their array is reserved too), read as the tree's way reads them. */
static void test_batch_uneven_specs(void **state)
{
	static const char head[] = "{\"op\":\"submit\",\"id\":7,\"jobs\":[", tail[] = "]}";

	(void)state;
	for (int first_long = 0; first_long < 2; first_long++) {
		struct jp_buf b = {0};
		bool fast;

		jp_buf_append(&b, head, strlen(head));
		for (int i = 0; i < 301; i++) {
			char spec[256];
			bool lng = (i == 0) == (first_long == 1);
			int n = snprintf(spec, sizeof(spec),
					 "%s{\"kind\":\"call\",\"fn\":\"spin\",\"args\":{\"us\":%d}%s%.*s%s}",
					 i ? "," : "", i % 7, lng ? ",\"name\":\"" : "", lng ? 150 : 0,
					 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
					 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
					 lng ? "\"" : "");

			jp_buf_append(&b, spec, (size_t)n);
		}
		jp_buf_append(&b, tail, strlen(tail));
		assert_null(fastdiff(b.data, b.len, NULL, &fast));
		assert_true(fast);
		jp_buf_free(&b);
	}
}

/* test_append_int: the reply writers' integers are what printf (and jansson) write. */
static void test_append_int(void **state)
{
	static const int64_t v[] = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 1764460800123,
				    9007199254740991, -1, -10, -100, -9007199254740991, INT64_MAX,
				    INT64_MIN};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct jp_buf b = {0};
		char want[32];

		snprintf(want, sizeof(want), "%lld", (long long)v[i]);
		assert_int_equal(jp_buf_append_int(&b, v[i]), 0);
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.data, want, b.len);
		jp_buf_free(&b);
	}
	/* Every power of ten and its neighbours, both signs, appended after text already in
	 * the buffer and past its first allocation (the digits go in place). */
	struct jp_buf b = {0};
	char want[8192];
	size_t at = 0;
	assert_int_equal(jp_buf_append(&b, "x", 1), 0);
	at += (size_t)snprintf(want + at, sizeof(want) - at, "x");
	for (uint64_t p = 1; p <= 1000000000000000000ull; p *= 10)
		for (int d = -1; d <= 1; d++)
			for (int sign = 1; sign >= -1; sign -= 2) {
				int64_t x = sign * ((int64_t)p + d);
				assert_int_equal(jp_buf_append_int(&b, x), 0);
				assert_int_equal(jp_buf_append(&b, ",", 1), 0);
				at += (size_t)snprintf(want + at, sizeof(want) - at, "%lld,", (long long)x);
			}
	assert_int_equal(b.len, at);
	assert_memory_equal(b.data, want, at);
	jp_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_big_batch),
		cmocka_unit_test(test_big_batch_one_spec),
		cmocka_unit_test(test_batch_uneven_specs),
		cmocka_unit_test(test_append_int),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
