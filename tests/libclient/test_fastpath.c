/* tests/libclient/test_fastpath.c: the two ways libjsched reads job records agree.
 *
 * jsched_wait_many and jsched_status_many read a plain reply ({"id", "ok", "jobs": [...]}
 * whose records hold only ASCII strings without escapes, short integers, true/false/null)
 * straight from its text, and give anything else to jansson (libclient/text.c).  Each
 * body below is answered twice by a peer on a socketpair: once to jsched_wait_many (the
 * fast reader when the body is plain), once to jsched_wait_async, whose reply goes
 * through jansson; every field of every record must be the same.  The bodies cover plain
 * records, records the fast reader must refuse (escapes, UTF-8, nested values, huge or
 * negative-zero or exponent numbers, brackets inside strings, unknown members and states),
 * and a record's `json` and `value_json`, which are the daemon's own bytes.
 *
 * The same for the replies jsched_submit, jsched_submit_wait and jsched_wait read straight
 * from their text (a submit's id, its record, a wait's one record), beside the callbacks
 * of jsched_submit_wait_async and jsched_wait_async.  Those three calls also write their
 * requests as text: the bytes are checked against what the tree of the asynchronous calls
 * (and the library before) wrote, a spec changed after a submit is sent changed, and a
 * round trip of each whose reply is plain makes no jansson allocation at all (counted
 * through json_set_alloc_funcs).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <jsched/jsched.h>

#include "tests/libclient/peer.h"

static struct peer P;
static struct jsched_conn *C;
static int next_id = 2;

/* raw: send the frame `s` as is (no re-encoding by jansson). */
static void raw(const char *s)
{
	uint32_t n = htonl((uint32_t)strlen(s));

	assert_int_equal(peer_write(&P, &n, 4), 0);
	assert_int_equal(peer_write(&P, s, strlen(s)), 0);
}

static int setup(void **state)
{
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer_init(&P, sv[1]);
	assert_int_equal(peer_send(&P, peer_hello_reply(1)), 0);
	assert_int_equal(jsched_connect_fd(sv[0], NULL, &C), 0);
	json_decref(peer_recv(&P)); /* the hello */
	next_id = 2;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jsched_close(C);
	peer_free(&P);
	return 0;
}

static const char *S(const char *s)
{
	return s ? s : "(null)";
}

static void same(const struct jsched_result *a, const struct jsched_result *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->submitted_ms, b->submitted_ms);
	assert_int_equal(a->started_ms, b->started_ms);
	assert_int_equal(a->finished_ms, b->finished_ms);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_int_equal(a->signal, b->signal);
	assert_int_equal(a->cancelling, b->cancelling);
	assert_int_equal(a->held, b->held);
	assert_string_equal(S(a->name), S(b->name));
	assert_string_equal(S(a->client), S(b->client));
	assert_string_equal(S(a->kind), S(b->kind));
	assert_string_equal(S(a->priority), S(b->priority));
	assert_string_equal(S(a->state_name), S(b->state_name));
	assert_string_equal(S(a->value_json), S(b->value_json));
	assert_string_equal(S(a->cause), S(b->cause));
	assert_string_equal(S(a->reason), S(b->reason));
	assert_string_equal(S(a->json), S(b->json));
	assert_string_equal(S(a->fn), S(b->fn));
	assert_string_equal(S(a->command), S(b->command));
}

static struct jsched_results *async_results;

static void async_cb(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg)
{
	(void)c;
	(void)arg;
	assert_int_equal(status, 0);
	assert_int_equal(jsched_reply_results(r, &async_results), 0);
}

/* both_ways: answer one synchronous and one asynchronous wait with `jobs` and compare. */
static void both_ways(const char *jobs, size_t want)
{
	char buf[4096];
	uint64_t ids[] = {1};
	struct jsched_results *sync_results = NULL;
	int rounds = 0;

	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"jobs\":%s}", next_id++, jobs);
	raw(buf);
	assert_true(jsched_wait_many(C, ids, 1, JSCHED_WAIT_ALL, -1, &sync_results) >= 0);
	json_decref(peer_recv(&P));

	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"jobs\":%s}", next_id++, jobs);
	raw(buf);
	async_results = NULL;
	assert_true(jsched_wait_async(C, ids, 1, JSCHED_WAIT_ALL, -1, async_cb, NULL) > 0);
	while (async_results == NULL && rounds++ < 1000)
		assert_true(jsched_process(C) >= 0);
	assert_non_null(async_results);
	json_decref(peer_recv(&P));

	assert_int_equal(sync_results->count, want);
	assert_int_equal(async_results->count, want);
	for (size_t i = 0; i < want; i++)
		same(sync_results->items[i], async_results->items[i]);
	jsched_results_free(sync_results);
	jsched_results_free(async_results);
}

static void test_plain_record(void **state)
{
	(void)state;
	both_ways("[{\"job\":1,\"client\":\"drv\",\"uid\":0,\"kind\":\"call\",\"priority\":\"normal\","
		  "\"state\":\"succeeded\",\"submitted_ms\":1796003895177,\"started_ms\":1796003895178,"
		  "\"finished_ms\":1796003895178,\"value\":null}]",
		  1);
}

static void test_odd_members_and_numbers(void **state)
{
	(void)state;
	both_ways("[ {\"job\" : 2, \"name\":\"x y\", \"state\":\"failed\", \"exit_code\": -3, \"signal\": 9,"
		  " \"cause\":\"exit\", \"reason\":\"r\", \"value\": \"str\", \"cancelling\": true, \"held\": true, \"uid\": -1,"
		  " \"started_ms\": -5, \"extra\": false, \"command\": \"sh -c 'exit 3'\"} , {\"job\":3,\"value\":12,\"name\":null,\"fn\":\"echo\","
		  "\"exit_code\":null,\"state\":\"weird\"},{\"job\":4,\"value\":true,\"cancelling\":false,"
		  "\"uid\":4294967297}]",
		  3);
	both_ways("[{\"job\":5,\"value\":-0,\"state\":7}]", 1);
	both_ways("[{\"job\":6,\"exit_code\":-1e0,\"submitted_ms\":12345678901234567,\"state\":\"queued\"}]", 1);
}

/* Escapes, UTF-8, brackets and quotes inside strings, nested values: jansson's way, and
 * json / value_json are still the daemon's own bytes. */
#define REC1                                                                                  \
	"{ \"job\" : 6 ,\"name\":\"a]}\\\"[{b\",\"state\":\"succeeded\", \"value\" : {\"k\": [1, " \
	"\"]\", {\"z\":null}]} , \"kind\":\"call\"}"
#define REC2                                                                                  \
	"{\"job\":7,\"state\":\"fail\\u0065d\",\"reason\":\"caf\\u00e9 \\ud83d\\ude00\","          \
	"\"exit_code\":-1e0,\"cause\":\"exit\"}"

static void test_escapes_and_nesting(void **state)
{
	char buf[1024];
	uint64_t ids[] = {6, 7};
	struct jsched_results *l = NULL;

	(void)state;
	both_ways("[" REC1 "," REC2 "]", 2);

	snprintf(buf, sizeof(buf), "{\"id\":%d, \"ok\":true, \"jobs\": [ " REC1 " ,\n" REC2 " ] }",
		 next_id++);
	raw(buf);
	assert_int_equal(jsched_wait_many(C, ids, 2, JSCHED_WAIT_ALL, -1, &l), 2);
	json_decref(peer_recv(&P));
	assert_string_equal(l->items[0]->json, REC1);
	assert_string_equal(l->items[1]->json, REC2);
	assert_string_equal(l->items[0]->value_json, "{\"k\": [1, \"]\", {\"z\":null}]}");
	assert_string_equal(l->items[0]->name, "a]}\"[{b");
	assert_int_equal(l->items[1]->state, JSCHED_STATE_FAILED);
	assert_string_equal(l->items[1]->reason, "caf\xc3\xa9 \xf0\x9f\x98\x80");
	jsched_results_free(l);
}

/* A timeout error carries the records too; a single status reply holds one. */
static void test_timeout_and_single(void **state)
{
	char buf[1024];
	uint64_t ids[] = {7};
	struct jsched_results *l = NULL;
	struct jsched_result *one = NULL;

	(void)state;
	snprintf(buf, sizeof(buf),
		 "{\"ok\":false,\"error\":{\"code\":\"timeout\",\"message\":\"m\",\"jobs\":[" REC2
		 "]},\"id\":%d}",
		 next_id++);
	raw(buf);
	assert_int_equal(jsched_wait_many(C, ids, 1, JSCHED_WAIT_ALL, 10, &l), JSCHED_ETIMEOUT);
	json_decref(peer_recv(&P));
	if (l) {
		assert_int_equal(l->count, 1);
		assert_string_equal(l->items[0]->json, REC2);
		jsched_results_free(l);
	}

	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":" REC1 "}", next_id++);
	raw(buf);
	assert_int_equal(jsched_status(C, 6, &one), 0);
	json_decref(peer_recv(&P));
	assert_string_equal(one->json, REC1);
	jsched_result_free(one);
}


/* recv_text: the next frame from the library, as its bytes (static buffer), or NULL. */
static const char *recv_text(void)
{
	static char text[8192];

	for (int rounds = 0; rounds < 100; rounds++) {
		const unsigned char *payload;
		size_t len;
		int r = jp_decoder_next_frame(&P.dec, &payload, &len);
		if (r > 0 && len < sizeof(text)) {
			memcpy(text, payload, len);
			text[len] = '\0';
			return text;
		}
		if (r != 0)
			return NULL;
		struct pollfd pfd = {.fd = P.fd, .events = POLLIN};
		char buf[8192];
		if (poll(&pfd, 1, PEER_TIMEOUT_MS) <= 0)
			return NULL;
		ssize_t n = read(P.fd, buf, sizeof(buf));
		if (n <= 0 || jp_decoder_feed(&P.dec, buf, (size_t)n) < 0)
			return NULL;
	}
	return NULL;
}

/* expect_text: the next request is `want` with ,"id":N} for the id the library gave it. */
static void expect_text(const char *want, int id)
{
	char buf[4096];
	const char *got = recv_text();

	snprintf(buf, sizeof(buf), "%s,\"id\":%d}", want, id);
	assert_non_null(got);
	assert_string_equal(got, buf);
}

static void reply_cb(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg)
{
	const uint64_t *ids;
	size_t n;

	(void)c;
	(void)arg;
	assert_int_equal(status, 0);
	assert_int_equal(jsched_reply_ids(r, &ids, &n), 0);
	assert_int_equal(n, 1);
	if (jsched_reply_results(r, &async_results) < 0)
		async_results = calloc(1, sizeof(*async_results)); /* no record: an empty list */
}

/* async_reply: answer an asynchronous request (already sent) with body and wait for it. */
static void async_reply(void)
{
	int rounds = 0;

	while (async_results == NULL && rounds++ < 1000)
		assert_true(jsched_process(C) >= 0);
	assert_non_null(async_results);
}

/* The requests written as text are the bytes the trees gave. */
static void test_request_text(void **state)
{
	static const char *const argv[] = {"echo", "caf\xc3\xa9", "a\"b\\c\n", NULL};
	struct jsched_spec *noop, *ex;
	struct jsched_result *res = NULL;
	char buf[512];
	uint64_t id;

	(void)state;
	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	assert_int_equal(jsched_spec_exec(argv, &ex), 0);
	assert_int_equal(jsched_spec_setenv(ex, "K", "\xe2\x82\xac"), 0);
	assert_int_equal(jsched_spec_set_priority(ex, JSCHED_PRIORITY_HIGH), 0);

	/* submit: the text beside jsched_submit_async's tree, for both specs. */
	const struct jsched_spec *specs[] = {noop, ex};
	for (int i = 0; i < 2; i++) {
		snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%d}", next_id, 40 + i);
		raw(buf);
		assert_int_equal(jsched_submit(C, specs[i], &id), 0);
		assert_int_equal(id, 40 + i);
		char text[4096];
		snprintf(text, sizeof(text), "%s", recv_text());
		next_id++;
		async_results = NULL;
		assert_int_equal(jsched_submit_async(C, specs[i], reply_cb, NULL), next_id);
		char tree[4096];
		snprintf(tree, sizeof(tree), "%s", recv_text());
		snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%d}", next_id++, 40 + i);
		raw(buf);
		async_reply();
		jsched_results_free(async_results);
		char *id_at = strstr(text, ",\"id\":"), *tid_at = strstr(tree, ",\"id\":");
		assert_non_null(id_at);
		assert_non_null(tid_at);
		*id_at = *tid_at = '\0';
		assert_string_equal(text, tree);
	}

	/* submit with wait, and wait: the literal text (what the trees wrote, member order
	 * included: op, job, wait {mode, timeout_ms, output}, id). */
	static const char *const noop_text = "{\"op\":\"submit\",\"job\":{\"kind\":\"call\",\"fn\":\"noop\"}";
	static const char *const rec = "{\"job\":50,\"state\":\"succeeded\",\"value\":null}";
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":50,\"record\":%s}", next_id, rec);
	raw(buf);
	assert_int_equal(jsched_submit_wait(C, noop, 10000, &id, NULL, &res, NULL), 0);
	jsched_result_free(res);
	snprintf(buf, sizeof(buf), "%s,\"wait\":{\"timeout_ms\":10000}", noop_text);
	expect_text(buf, next_id++);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":50,\"record\":%s}", next_id, rec);
	raw(buf);
	assert_int_equal(jsched_submit_wait(C, noop, -1, &id, NULL, &res, NULL), 0);
	jsched_result_free(res);
	snprintf(buf, sizeof(buf), "%s,\"wait\":{}", noop_text);
	expect_text(buf, next_id++);
	struct jsched_output *o = NULL;
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":50,\"record\":%s}", next_id, rec);
	raw(buf);
	assert_int_equal(jsched_submit_wait(C, noop, 5, &id, NULL, &res, &o), 0);
	jsched_result_free(res);
	jsched_output_free(o);
	snprintf(buf, sizeof(buf), "%s,\"wait\":{\"timeout_ms\":5,\"output\":true}", noop_text);
	expect_text(buf, next_id++);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%s}", next_id, rec);
	raw(buf);
	assert_int_equal(jsched_wait(C, 50, 3, &res), 0);
	jsched_result_free(res);
	expect_text("{\"op\":\"wait\",\"job\":50,\"timeout_ms\":3", next_id++);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%s}", next_id, rec);
	raw(buf);
	assert_int_equal(jsched_wait(C, 50, -1, &res), 0);
	jsched_result_free(res);
	expect_text("{\"op\":\"wait\",\"job\":50", next_id++);

	/* A spec changed after it was sent is sent changed (its text is written again). */
	assert_int_equal(jsched_spec_set_name(noop, "n"), 0);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":51}", next_id);
	raw(buf);
	assert_int_equal(jsched_submit(C, noop, &id), 0);
	expect_text("{\"op\":\"submit\",\"job\":{\"kind\":\"call\",\"fn\":\"noop\",\"name\":\"n\"}",
		    next_id++);
	jsched_spec_free(noop);
	jsched_spec_free(ex);
}

/* submit_both: answer jsched_submit_wait and jsched_submit_wait_async with body (a reply's
 * members after "ok") and compare the records. */
static void submit_both(const char *body)
{
	struct jsched_spec *noop;
	struct jsched_result *res = NULL;
	char buf[4096];
	uint64_t id = 0;

	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,%s}", next_id++, body);
	raw(buf);
	assert_int_equal(jsched_submit_wait(C, noop, -1, &id, NULL, &res, NULL), 0);
	json_decref(peer_recv(&P));
	async_results = NULL;
	const struct jsched_spec *one[] = {noop};
	assert_true(jsched_submit_wait_async(C, one, 1, JSCHED_WAIT_ALL, -1, reply_cb, NULL) > 0);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,%s}", next_id++, body);
	raw(buf);
	async_reply();
	json_decref(peer_recv(&P));
	assert_int_equal(id, 9);
	assert_int_equal(async_results->count, 1);
	same(res, async_results->items[0]);
	jsched_result_free(res);
	jsched_results_free(async_results);
	jsched_spec_free(noop);
}

/* wait_both: the same for jsched_wait beside jsched_wait_async, a reply {"job": record}. */
static void wait_both(const char *record)
{
	struct jsched_result *res = NULL;
	char buf[4096];
	uint64_t ids[] = {9};

	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%s}", next_id++, record);
	raw(buf);
	assert_int_equal(jsched_wait(C, 9, -1, &res), 0);
	json_decref(peer_recv(&P));
	async_results = NULL;
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":%s}", next_id++, record);
	raw(buf);
	assert_true(jsched_wait_async(C, ids, 1, JSCHED_WAIT_ALL, -1, async_cb, NULL) > 0);
	async_reply();
	json_decref(peer_recv(&P));
	assert_int_equal(async_results->count, 1);
	same(res, async_results->items[0]);
	jsched_result_free(res);
	jsched_results_free(async_results);
}

#define PLAIN                                                                                          \
	"{\"job\":9,\"client\":\"drv\",\"uid\":0,\"kind\":\"call\",\"priority\":\"normal\",\"state\":\"succeeded\","  \
	"\"submitted_ms\":1796003895177,\"started_ms\":1796003895178,\"finished_ms\":1796003895178,\"fn\":\"noop\","     \
	"\"value\":null}"
#define ODD "{ \"job\" : 9, \"name\":\"x y\", \"state\":\"failed\", \"exit_code\": -3, \"value\": \"str\", \"extra\": 1}"
#define NESTED "{\"job\":9,\"state\":\"succeeded\",\"value\":{\"k\":[1,\"]\"]},\"reason\":\"caf\\u00e9\"}"

static void test_submit_and_wait_replies(void **state)
{
	(void)state;
	submit_both("\"job\":9,\"record\":" PLAIN);
	submit_both("\"record\":" ODD ", \"job\" : 9 , \"existing\":true");
	submit_both("\"job\":9,\"record\":" NESTED);
	submit_both("\"job\":9,\"record\":" PLAIN ",\"later\":{\"x\":1}");
	wait_both(PLAIN);
	wait_both(ODD);
	wait_both(NESTED);
}

/* jansson's allocations, counted. */
static size_t jansson_allocs;

static void *count_malloc(size_t n)
{
	jansson_allocs++;
	return malloc(n);
}

/* A noop submit with wait, a submit and a wait with plain replies: no jansson allocation
 * (no tree built or read), once the spec's text is written. */
static void test_no_tree(void **state)
{
	struct jsched_spec *noop;
	struct jsched_result *res = NULL;
	char buf[1024];
	uint64_t id;

	(void)state;
	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":9}", next_id++);
	raw(buf);
	assert_int_equal(jsched_submit(C, noop, &id), 0); /* writes the spec's text once */
	json_decref(peer_recv(&P));
	for (int i = 0; i < 3; i++) {
		size_t allocs = 0;
		int r;

		snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":9,\"record\":" PLAIN "}", next_id++);
		raw(buf);
		jansson_allocs = 0;
		json_set_alloc_funcs(count_malloc, free);
		r = jsched_submit_wait(C, noop, 1000, &id, NULL, &res, NULL);
		json_set_alloc_funcs(malloc, free);
		allocs += jansson_allocs;
		assert_int_equal(r, 0);
		assert_int_equal(res->state, JSCHED_STATE_SUCCEEDED);
		jsched_result_free(res);
		json_decref(peer_recv(&P));

		snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":9}", next_id++);
		raw(buf);
		jansson_allocs = 0;
		json_set_alloc_funcs(count_malloc, free);
		r = jsched_submit(C, noop, &id);
		json_set_alloc_funcs(malloc, free);
		allocs += jansson_allocs;
		assert_int_equal(r, 0);
		assert_int_equal(id, 9);
		json_decref(peer_recv(&P));

		snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":" PLAIN "}", next_id++);
		raw(buf);
		jansson_allocs = 0;
		json_set_alloc_funcs(count_malloc, free);
		r = jsched_wait(C, 9, 1000, &res);
		json_set_alloc_funcs(malloc, free);
		allocs += jansson_allocs;
		assert_int_equal(r, 0);
		assert_int_equal(res->state, JSCHED_STATE_SUCCEEDED);
		jsched_result_free(res);
		json_decref(peer_recv(&P));
		assert_int_equal(allocs, 0);
	}
	jsched_spec_free(noop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_odd_members_and_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes_and_nesting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_and_single, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_and_wait_replies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_tree, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
