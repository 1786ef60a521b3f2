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
 *
 * Every request the library writes as text (submits of one spec or a batch, with or without
 * their wait; waits and statuses of one id or many) is checked against the tree the library
 * built before, written by jansson, over specs that include the unusual (escapes, UTF-8,
 * nested values, reals, the largest integers, every setter); and the reply to an
 * asynchronous submit, whose ids are read straight from its text, gives its callback what
 * the same reply read by jansson gives (a reply the reader does not take goes to jansson),
 * with no jansson allocation for a plain one.
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
#include <sys/un.h>
#include <unistd.h>

#include <jsched/jsched.h>

#include "libclient/internal.h" /* a spec's object: the trees the library built before */
#include "tests/libclient/peer.h"

static struct peer P;
static struct jsched_conn *C;
static int next_id = 2;

/* raw_to: send the frame `s` to p as is (no re-encoding by jansson). */
static void raw_to(struct peer *p, const char *s)
{
	uint32_t n = htonl((uint32_t)strlen(s));

	assert_int_equal(peer_write(p, &n, 4), 0);
	assert_int_equal(peer_write(p, s, strlen(s)), 0);
}

static void raw(const char *s)
{
	raw_to(&P, s);
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
	assert_int_equal(a->array_id, b->array_id);
	assert_int_equal(a->array_index, b->array_index);
	assert_int_equal(a->not_before_ms, b->not_before_ms);
	assert_int_equal(a->attempt, b->attempt);
	assert_int_equal(a->next_attempt_ms, b->next_attempt_ms);
	assert_int_equal(a->result_bytes, b->result_bytes);
	assert_int_equal(a->result_omitted, b->result_omitted);
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
	/* every member the reader knows, and names one letter away from them */
	both_ways("[{\"job\":8,\"name\":\"n\",\"client\":\"c\",\"kind\":\"exec\",\"priority\":\"low\","
		  "\"state\":\"failed\",\"cause\":\"exit\",\"reason\":\"r\",\"fn\":\"f\",\"command\":\"x\",\"uid\":3,"
		  "\"submitted_ms\":1,\"started_ms\":2,\"finished_ms\":3,\"exit_code\":4,\"signal\":5,"
		  "\"cancelling\":true,\"held\":true,\"array_id\":6,\"array_index\":7,\"not_before\":8,"
		  "\"attempt\":9,\"next_attempt_ms\":10,\"result_bytes\":11,\"result_omitted\":true,"
		  "\"value\":1},"
		  "{\"job\":9,\"jobs\":1,\"nam\":\"a\",\"Name\":\"b\",\"fx\":\"c\",\"uix\":4,\"submitted_mx\":5,"
		  "\"result_omitteD\":true,\"next_attempt_mss\":6,\"helt\":true,\"valuE\":1,\"a\":2,\"\":3}]",
		  2);
	both_ways("[{\"job\":6,\"exit_code\":-1e0,\"submitted_ms\":12345678901234567,\"state\":\"queued\"}]", 1);
	/* around the eight digits read at once: 7, 8, 9 and 15 digits, a sign, zeros, an
	 * integer ended by a space, a comma, a brace or a bracket */
	both_ways("[{\"job\":12345678,\"uid\":99999999,\"exit_code\":-87654321,\"signal\":1234567,"
		  "\"submitted_ms\":100000000,\"started_ms\":123456789012345,\"finished_ms\":10000000 ,"
		  "\"array_id\":90000009}, {\"job\":98765432 }, {\"job\":1,\"attempt\":0,\"value\":[12345678]}]",
		  3);
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


/* recv_text_from: the next frame from the library to p, as its bytes (static buffer), or
 * NULL. */
static const char *recv_text_from(struct peer *p)
{
	static char text[8192];

	for (int rounds = 0; rounds < 100; rounds++) {
		const unsigned char *payload;
		size_t len;
		int r = jp_decoder_next_frame(&p->dec, &payload, &len);
		if (r > 0 && len < sizeof(text)) {
			memcpy(text, payload, len);
			text[len] = '\0';
			return text;
		}
		if (r != 0)
			return NULL;
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		char buf[8192];
		if (poll(&pfd, 1, PEER_TIMEOUT_MS) <= 0)
			return NULL;
		ssize_t n = read(p->fd, buf, sizeof(buf));
		if (n <= 0 || jp_decoder_feed(&p->dec, buf, (size_t)n) < 0)
			return NULL;
	}
	return NULL;
}

static const char *recv_text(void)
{
	return recv_text_from(&P);
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

/* A record whose strings hold DEL (0x7f, which JSON writes as itself: jp_json_plain) is
 * plain: read from its text with no jansson allocation, to the same fields as jansson's
 * reading (the reader set DEL aside before, and such a record went to jansson). */
static void test_del_is_plain(void **state)
{
	char buf[1024];
	struct jsched_result *res = NULL;
	int r;

	(void)state;
	both_ways("[{\"job\":9,\"name\":\"a\x7f b\",\"state\":\"succeeded\",\"fn\":\"\x7f\"}]", 1);
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"job\":{\"job\":9,\"name\":\"a\x7f b\","
		 "\"state\":\"succeeded\",\"fn\":\"\x7f\"}}", next_id++);
	raw(buf);
	jansson_allocs = 0;
	json_set_alloc_funcs(count_malloc, free);
	r = jsched_wait(C, 9, 1000, &res);
	json_set_alloc_funcs(malloc, free);
	assert_int_equal(r, 0);
	assert_int_equal(jansson_allocs, 0);
	assert_string_equal(res->name, "a\x7f b");
	assert_string_equal(res->fn, "\x7f");
	jsched_result_free(res);
	json_decref(peer_recv(&P));
}

/* submit_output: answer jsched_submit_wait, output asked for, with the reply {"id", "ok":
 * true, body}; its status, with *res and *o set (each NULL when none), and in *allocs
 * jansson's allocations meanwhile. */
static int submit_output(const char *body, struct jsched_result **res, struct jsched_output **o, size_t *allocs)
{
	struct jsched_spec *noop;
	char buf[4096];
	uint64_t id = 0;
	int r;

	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	assert_non_null(jc_spec_text(noop)); /* the spec's text, written before the count starts */
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,%s}", next_id++, body);
	raw(buf);
	jansson_allocs = 0;
	json_set_alloc_funcs(count_malloc, free);
	r = jsched_submit_wait(C, noop, -1, &id, NULL, res, o);
	json_set_alloc_funcs(malloc, free);
	*allocs = jansson_allocs;
	json_decref(peer_recv(&P));
	jsched_spec_free(noop);
	return r;
}

static void same_output(const struct jsched_output *a, const struct jsched_output *b)
{
	assert_int_equal(a->out_len, b->out_len);
	assert_memory_equal(a->out, b->out, a->out_len + 1); /* the NUL after too */
	assert_int_equal(a->err_len, b->err_len);
	assert_memory_equal(a->err, b->err, a->err_len + 1);
	assert_int_equal(a->out_truncated, b->out_truncated);
	assert_int_equal(a->err_truncated, b->err_truncated);
	assert_int_equal(a->complete, b->complete);
}

/* output_both: body (a submit-with-output reply's members after "ok") read from its text
 * and, with a member the text reader does not know added (so jansson reads it), by
 * jansson: the same status, record and output; fast says whether the first reading made
 * no jansson allocation (read from the text). */
static void output_both(const char *body, bool fast)
{
	struct jsched_result *a = NULL, *b = NULL;
	struct jsched_output *oa = NULL, *ob = NULL;
	char slow[4096];
	size_t allocs_a, allocs_b;

	snprintf(slow, sizeof(slow), "%s,\"later\":1", body);
	int ra = submit_output(body, &a, &oa, &allocs_a), rb = submit_output(slow, &b, &ob, &allocs_b);
	assert_int_equal(ra, rb);
	assert_true(allocs_b > 0);
	if (fast)
		assert_int_equal(allocs_a, 0);
	else
		assert_true(allocs_a > 0);
	assert_int_equal(a == NULL, b == NULL);
	if (a != NULL)
		same(a, b);
	assert_int_equal(oa == NULL, ob == NULL);
	if (oa != NULL)
		same_output(oa, ob);
	jsched_result_free(a);
	jsched_result_free(b);
	jsched_output_free(oa);
	jsched_output_free(ob);
}

#define EXEC_REC                                                                                       \
	"{\"job\":9,\"client\":\"root\",\"uid\":0,\"kind\":\"exec\",\"priority\":\"normal\","               \
	"\"state\":\"succeeded\",\"submitted_ms\":1796188496763,\"command\":\"/bin/echo hi\","                  \
	"\"started_ms\":1796188496763,\"finished_ms\":1796188496765,\"exit_code\":0,\"usage\":{\"cpu_us\":1120,"  \
	"\"user_us\":0,\"system_us\":0,\"oom_kills\":0,\"pids_limit_hits\":0,\"memory_peak_bytes\":409600}}"
#define STREAMS(out, err)                                                                              \
	"\"output\":{\"complete\":true,\"stdout\":{\"data\":\"" out "\",\"bytes\":3,\"truncated\":false},"      \
	"\"stderr\":{\"data\":\"" err "\",\"bytes\":0,\"truncated\":true}}"

/* A command's submit with wait and output, as the daemon writes it (its record with the
 * nested "usage", its output in base64), is read from the text with no jansson
 * allocation, and gives what jansson's reading gives; what the text reader does not take
 * (a stream's unknown member, bad base64, a deeper or repeated usage, a call's value
 * object) goes to jansson with the same outcome. */
static void test_submit_output_reply(void **state)
{
	(void)state;
	output_both("\"job\":9,\"record\":" EXEC_REC "," STREAMS("aGkK", ""), true);
	output_both(STREAMS("", "ZTEK") ", \"record\" : " EXEC_REC " , \"job\":9", true);
	output_both("\"job\":9,\"record\":" PLAIN, true); /* a call job: no output */
	output_both("\"job\":9,\"record\":{\"job\":9,\"state\":\"succeeded\",\"usage\":{}}," STREAMS("aGkK", ""), true);
	output_both("\"job\":9,\"record\":" EXEC_REC ",\"output\":{\"complete\":false,\"stdout\":{\"data\":\"\","
		    "\"truncated\":false,\"x\":1},\"stderr\":{\"data\":\"\",\"truncated\":false}}", false);
	output_both("\"job\":9,\"record\":" EXEC_REC "," STREAMS("aGk", ""), false); /* not base64 */
	output_both("\"job\":9,\"record\":" EXEC_REC ",\"output\":{\"complete\":true,\"stdout\":{\"data\":\"\","
		    "\"truncated\":false}}", false); /* no stderr */
	output_both("\"job\":9,\"record\":{\"job\":9,\"state\":\"failed\",\"usage\":{\"a\":{\"b\":1}}},"
		    STREAMS("aGkK", ""), false);
	output_both("\"job\":9,\"record\":{\"job\":9,\"state\":\"failed\",\"value\":{\"a\":1}}", false);
}

/* A usage object with a repeated member is not read from the text: jansson refuses the
 * frame, and the connection with it. */
static void test_repeated_usage(void **state)
{
	struct jsched_result *res = NULL;
	struct jsched_output *o = NULL;
	size_t allocs;

	(void)state;
	assert_true(submit_output("\"job\":9,\"record\":{\"job\":9,\"state\":\"failed\",\"usage\":{\"a\":1,\"a\":2}}",
				  &res, &o, &allocs) < 0);
	assert_null(res);
	assert_null(o);
}

/* ---- a spec's inherited environment, kept as text ------------------------------------------- */

extern char **environ;

/* old_inherit_tree: the spec jsched_spec_inherit made of argv, env and cwd before it kept
 * the environment as text (its loop, word for word): new reference. */
static json_t *old_inherit_tree(const char *const *argv, char **env, const char *cwd)
{
	json_t *arr = json_array(), *e = json_object();
	for (size_t i = 0; argv[i] != NULL; i++)
		json_array_append_new(arr, json_string(argv[i]));
	for (char **p = env; *p != NULL; p++) {
		const char *eq = strchr(*p, '=');
		if (eq == NULL || eq == *p)
			continue;
		json_t *v = json_string(eq + 1);
		if (v != NULL)
			json_object_setn_new(e, *p, (size_t)(eq - *p), v);
	}
	json_t *o = json_pack("{s:s, s:o}", "kind", "exec", "argv", arr);
	json_object_set_new(o, "env", e);
	json_object_set_new(o, "cwd", json_string(cwd));
	return o;
}

/* inherit_same: with env as the environment, an inherited spec's text, its JSON and a
 * variable set after, each the old tree's bytes. */
static void inherit_same(char **env)
{
	static const char *const argv[] = { "echo", "a\tb", NULL };
	char **saved = environ, *cwd = getcwd(NULL, 0);
	struct jsched_spec *spec;

	environ = env;
	assert_int_equal(jsched_spec_exec(argv, &spec), 0);
	int r = jsched_spec_inherit(spec);
	environ = saved;
	assert_int_equal(r, 0);
	json_t *old = old_inherit_tree(argv, env, cwd);
	char *want = json_dumps(old, JSON_COMPACT);
	const struct jc_spec_text *t = jc_spec_text(spec);
	assert_non_null(t);
	assert_string_equal(t->s, want);
	assert_int_equal(t->len, strlen(want));
	char *js;
	assert_int_equal(jsched_spec_to_json(spec, &js), 0);
	assert_string_equal(js, want);
	jsched_free(js);
	free(want);
	/* Changed after: the tree is made from the text, and the text made again. */
	assert_int_equal(jsched_spec_setenv(spec, "ADDED", "1"), 0);
	assert_int_equal(jsched_spec_setenv(spec, "A", "changed"), 0);
	json_object_set_new(json_object_get(old, "env"), "ADDED", json_string("1"));
	json_object_set_new(json_object_get(old, "env"), "A", json_string("changed"));
	want = json_dumps(old, JSON_COMPACT);
	assert_string_equal(jc_spec_text(spec)->s, want);
	free(want);
	json_decref(old);
	jsched_spec_free(spec);
	free(cwd);
}

/* The environment jsched_spec_inherit keeps as text is the tree it made before, byte for
 * byte, whatever it holds: escapes, UTF-8, variables that are not UTF-8 (left out), no
 * '=' or an empty name (left out), empty values, a name given twice (the last value in
 * the first one's place), none at all. */
static void test_inherit_text(void **state)
{
	char *plain[] = { "A=1", "PATH=/usr/bin:/bin", "EMPTY=", NULL };
	char *odd[] = { "A=\"quoted\" \\ back", "TAB=a\tb\nc\x01\x1f", "U=caf\xc3\xa9 \xf0\x9f\x98\x80", "BAD=\xc3",
			"BAD2=\xed\xa0\x80", "N\xc3\xa9=name", "N\xff=x", "NOEQ", "=nameless", "E==x=", NULL };
	char *twice[] = { "A=1", "B=2", "A=3", NULL };
	char *none[] = { NULL };
	(void)state;
	inherit_same(plain);
	inherit_same(odd);
	inherit_same(twice);
	inherit_same(none);
	inherit_same(environ);
}

/* ---- the hello's reply read from its text (jsched_connect_deferred) ------------------------ */

/* What a connection made of its hello's reply. */
struct hello_seen {
	int ping;		/* the first request's status (a submit's) */
	size_t allocs;		/* jansson's allocations while the reply was read */
	char version[64], instance[64], client[64], json[1024];
	int big_submit;		/* jsched_submit_async of a 300-byte spec: > 0, or refused */
	int big_reply;		/* a ping answered with a 300-byte frame: 0, or the connection's death */
	char request[256];	/* the hello request's bytes */
};

static void ignore_cb(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg);

/* with_id: reply (whose "%d" stands for the id) with id in its place, into out. */
static void with_id(char *out, size_t size, const char *reply, int id)
{
	const char *at = strstr(reply, "%d");
	assert_non_null(at);
	snprintf(out, size, "%.*s%d%s", (int)(at - reply), reply, id, at + 2);
}

/* hello_with: connect deferred to a listener of our own, answer the hello with `reply`
 * (%d: its id) and a submit, and see what the connection made of it. */
static struct hello_seen hello_with_name(const char *reply, const char *client)
{
	struct hello_seen h = { 0 };
	char dir[] = "/tmp/jsched-fastpath-XXXXXX", path[64], buf[1024];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct jsched_conn *c = NULL;
	struct peer p;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/s", dir);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(jsched_connect_deferred(path, client, &c, buf, sizeof buf), 0);
	int fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	peer_init(&p, fd);
	with_id(buf, sizeof buf, reply, 1);
	raw_to(&p, buf);
	snprintf(buf, sizeof buf, "{\"id\":2,\"ok\":true,\"job\":9}");
	raw_to(&p, buf);
	struct jsched_spec *noop;
	uint64_t id = 0;
	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	assert_non_null(jc_spec_text(noop)); /* written before the count starts */
	jansson_allocs = 0;
	json_set_alloc_funcs(count_malloc, free);
	/* a submit, whose request and (plain) reply take no allocation of jansson's */
	h.ping = jsched_submit(c, noop, &id);
	json_set_alloc_funcs(malloc, free);
	h.allocs = jansson_allocs;
	jsched_spec_free(noop);
	assert_true(h.ping < 0 || id == 9);
	const char *req = recv_text_from(&p);
	assert_non_null(req);
	snprintf(h.request, sizeof h.request, "%s", req);
	snprintf(h.version, sizeof h.version, "%s", S(jsched_server_version(c)));
	snprintf(h.instance, sizeof h.instance, "%s", S(jsched_server_instance(c)));
	snprintf(h.client, sizeof h.client, "%s", S(jsched_client_name(c)));
	snprintf(h.json, sizeof h.json, "%s", S(jsched_hello_json(c)));
	if (h.ping == 0) {
		struct jsched_spec *spec;
		char name[301];
		memset(name, 'n', 300);
		name[300] = '\0';
		assert_int_equal(jsched_spec_call("noop", NULL, &spec), 0);
		assert_int_equal(jsched_spec_set_name(spec, name), 0);
		h.big_submit = jsched_submit_async(c, spec, ignore_cb, NULL);
		jsched_spec_free(spec);
		snprintf(buf, sizeof buf, "{\"id\":%d,\"ok\":true,\"pad\":\"%s\"}", h.big_submit > 0 ? 4 : 3, name);
		raw_to(&p, buf);
		h.big_reply = jsched_ping(c);
	}
	jsched_close(c);
	peer_free(&p);
	close(lfd);
	unlink(path);
	rmdir(dir);
	return h;
}

static struct hello_seen hello_with(const char *reply)
{
	return hello_with_name(reply, NULL);
}

/* The version this library speaks, as text (a reply of another version goes to jansson). */
#define VERSION_TEXT_(v) #v
#define VERSION_TEXT(v) VERSION_TEXT_(v)
#define HELLO_VERSION VERSION_TEXT(JP_PROTOCOL_VERSION)
#define HELLO_HEAD "{\"id\":%d,\"ok\":true,\"version\":" HELLO_VERSION ",\"daemon\":\"0.1.0\",\"instance\":\"17-11\","
#define HELLO_ID "\"identity\":{\"uid\":0,\"gid\":0,\"pid\":9,\"client\":\"x\",\"admin\":true}"
#define HELLO_LIMITS(frame, reply) \
	"\"limits\":{\"frame_bytes\":" frame ",\"reply_frame_bytes\":" reply ",\"jobs_per_submit\":10000,\"new\":true}"

/* hello_both: the reply (a hello reply's text, "%d" its id, ending in "}") read from its
 * text and, with a member the text reader does not know added, by jansson: the same in
 * every respect but the allocations; fast: the first made none. */
static void hello_both(const char *reply, bool fast)
{
	char slow[1024];
	size_t n = strlen(reply);

	snprintf(slow, sizeof slow, "%.*s,\"later\":1}", (int)(n - 1), reply);
	struct hello_seen a = hello_with(reply), b = hello_with(slow);
	assert_int_equal(a.ping, b.ping);
	assert_true(b.allocs > 0);
	if (fast)
		assert_int_equal(a.allocs, 0);
	else
		assert_true(a.allocs > 0);
	assert_string_equal(a.version, b.version);
	assert_string_equal(a.instance, b.instance);
	assert_string_equal(a.client, b.client);
	assert_int_equal(a.big_submit > 0, b.big_submit > 0);
	assert_int_equal(a.big_reply, b.big_reply);
	if (a.ping == 0 && fast) {
		/* the reply's own bytes, which are what jansson writes for a compact one */
		char want[1024];
		with_id(want, sizeof want, reply, 1);
		assert_string_equal(a.json, want);
	}
}

/* A deferred hello is written as text with no name or a plain one, by jansson with any
 * other: the bytes the tree gave (jp_hello_new without its id, the id set last). */
static void test_hello_request(void **state)
{
	static const char *const names[] = { NULL, "tester", "a b.c-d_e", "caf\xc3\xa9", "q\"uote", "back\\slash",
					     "tab\there", "" };
	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		json_t *tree = jp_hello_new(0, names[i]);
		assert_non_null(tree);
		json_object_del(tree, "id");
		json_object_set_new(tree, "id", json_integer(1));
		char *want = json_dumps(tree, JSON_COMPACT);
		json_decref(tree);
		struct hello_seen h = hello_with_name(HELLO_HEAD HELLO_ID "}", names[i]);
		assert_int_equal(h.ping, 0);
		assert_string_equal(h.request, want);
		free(want);
	}
}

/* jsched_connect's waiting hello goes the same way: with a plain reply (the test peer's,
 * and no client name, the connection is made with no jansson allocation; its strings
 * and jsched_hello_json are the reply's. */
static void test_waiting_hello(void **state)
{
	int sv[2];
	struct peer p;
	struct jsched_conn *c = NULL;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer_init(&p, sv[1]);
	assert_int_equal(peer_send(&p, peer_hello_reply(1)), 0);
	jansson_allocs = 0;
	json_set_alloc_funcs(count_malloc, free);
	int r = jsched_connect_fd(sv[0], NULL, &c);
	json_set_alloc_funcs(malloc, free);
	assert_int_equal(r, 0);
	assert_int_equal(jansson_allocs, 0);
	assert_string_equal(jsched_server_version(c), "0.1.0");
	assert_string_equal(jsched_server_instance(c), "111-22");
	assert_string_equal(jsched_client_name(c), "tester");
	json_t *sent = json_loads(peer_hello_reply(1), 0, NULL);
	char *wire = json_dumps(sent, JSON_COMPACT); /* what peer_send wrote */
	assert_string_equal(jsched_hello_json(c), wire);
	free(wire);
	json_decref(sent);
	jsched_close(c);
	peer_free(&p);
}

/* A deferred hello's plain reply is read from its text with no jansson allocation, its
 * strings and limits taken as jansson's reading takes them (a small frame_bytes refuses
 * a large request here, a small reply_frame_bytes a large reply); a reply the text reader
 * does not take (another version, a name with an escape, a limit that is not a count, an
 * identity member it does not know, a refusal) goes to jansson with the same outcome. */
static void test_hello_reply(void **state)
{
	(void)state;
	hello_both(HELLO_HEAD HELLO_ID "," HELLO_LIMITS("1048576", "16777216") "}", true);
	hello_both(HELLO_HEAD HELLO_ID "," HELLO_LIMITS("200", "16777216") "}", true);
	hello_both(HELLO_HEAD HELLO_ID "," HELLO_LIMITS("1048576", "100") "}", true);
	hello_both(HELLO_HEAD HELLO_ID "}", true); /* no limits: the defaults */
	hello_both("{ \"id\" : %d , " HELLO_ID ", \"ok\":true,\"version\":" HELLO_VERSION ",\"daemon\":\"0.1.0\",\"instance\":\"17-11\" }",
		   true);
	hello_both("{\"id\":%d,\"ok\":true,\"version\":1,\"daemon\":\"0.1.0\",\"instance\":\"17-11\"," HELLO_ID "}",
		   false);
	hello_both(HELLO_HEAD "\"identity\":{\"uid\":0,\"gid\":0,\"pid\":9,\"client\":\"caf\\u00e9\",\"admin\":true}}",
		   false);
	hello_both(HELLO_HEAD HELLO_ID "," HELLO_LIMITS("-1", "16777216") "}", false);
	hello_both(HELLO_HEAD HELLO_ID "," HELLO_LIMITS("\"big\"", "16777216") "}", false);
	hello_both(HELLO_HEAD "\"identity\":{\"uid\":0,\"gid\":0,\"pid\":9,\"client\":\"x\",\"admin\":true,\"n\":1}}",
		   false);
	hello_both("{\"id\":%d,\"ok\":false,\"error\":{\"code\":\"limit_exceeded\",\"message\":\"no\"}}", false);
}

/* ---- requests written as text, against the trees the library built before ---------------- */

/* old_submit: the tree of a submit of n specs as the library built it before (a deep copy of
 * each spec's object under "job" or "jobs"), with its wait member when wait, and "id". */
static char *old_submit(struct jsched_spec *const *specs, size_t n, bool single, bool wait,
			enum jsched_wait_mode mode, int64_t timeout_ms, int id)
{
	json_t *req = json_pack("{s:s}", "op", "submit"), *arr = json_array();

	for (size_t i = 0; i < n; i++)
		if (single)
			json_object_set_new(req, "job", json_deep_copy(jc_spec_obj(specs[i])));
		else
			json_array_append_new(arr, json_deep_copy(jc_spec_obj(specs[i])));
	if (!single)
		json_object_set_new(req, "jobs", arr);
	else
		json_decref(arr);
	if (wait) {
		json_t *w = json_object();
		if (mode == JSCHED_WAIT_ANY)
			json_object_set_new(w, "mode", json_string("any"));
		if (timeout_ms >= 0)
			json_object_set_new(w, "timeout_ms", json_integer(timeout_ms));
		json_object_set_new(req, "wait", w);
	}
	json_object_set_new(req, "id", json_integer(id));
	char *s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

/* old_ids: the same for a request of ids (wait: with mode and timeout_ms). */
static char *old_ids(const char *op, const uint64_t *ids, size_t n, enum jsched_wait_mode mode, int64_t timeout_ms,
		     int id)
{
	json_t *req = json_pack("{s:s}", "op", op), *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_integer((json_int_t)ids[i]));
	json_object_set_new(req, "jobs", arr);
	if (mode == JSCHED_WAIT_ANY)
		json_object_set_new(req, "mode", json_string("any"));
	if (timeout_ms >= 0)
		json_object_set_new(req, "timeout_ms", json_integer(timeout_ms));
	json_object_set_new(req, "id", json_integer(id));
	char *s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return s;
}

static void ignore_cb(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg)
{
	(void)c, (void)status, (void)r, (void)arg;
}

/* expect_old: the next request's bytes are old's (freed here). */
static void expect_old(char *old)
{
	const char *got = recv_text();

	assert_non_null(got);
	assert_string_equal(got, old);
	free(old);
}

#define NSPECS 9

/* make_specs: specs of every kind the builder and from_json make, the unusual included. */
static void make_specs(struct jsched_spec **s)
{
	static const char *const argv[] = {"printf", "caf\xc3\xa9 \xf0\x9f\x98\x80", "a\"b\\c\n\t\x01/", "", NULL};

	assert_int_equal(jsched_spec_call("noop", NULL, &s[0]), 0);
	assert_int_equal(jsched_spec_call("spin", "{\"us\": 10}", &s[1]), 0);
	assert_int_equal(jsched_spec_exec(argv, &s[2]), 0);
	assert_int_equal(jsched_spec_setenv(s[2], "K\xe2\x82\xac", "v\"\x1f"), 0);
	assert_int_equal(jsched_spec_set_priority(s[2], JSCHED_PRIORITY_HIGH), 0);
	assert_int_equal(jsched_spec_call("echo",
					  "{\"r\": 1.5, \"e\": 1e300, \"z\": -0.0, \"big\": 9007199254740991, "
					  "\"neg\": -9007199254740991, \"n\": [[], {}, [null, true, false]], "
					  "\"u\": \"\\u00e9\\ud83d\\ude00\\u001f\\\"\\\\\\/\"}",
					  &s[3]),
			 0);
	assert_int_equal(jsched_spec_call("noop", NULL, &s[4]), 0);
	assert_int_equal(jsched_spec_set_name(s[4], "name with \"quotes\" and \xc3\xa9"), 0);
	assert_int_equal(jsched_spec_set_key(s[4], "k/1"), 0);
	assert_int_equal(jsched_spec_set_deadline_in(s[4], 5000), 0);
	static const int codes[] = {1, 75};
	assert_int_equal(jsched_spec_set_retry(s[4], 3, 100, 2.5, 1000, JSCHED_RETRY_ON_CODES, codes, 2), 0);
	assert_int_equal(jsched_spec_set_cost(s[4], 7), 0);
	assert_int_equal(jsched_spec_from_json("{\"kind\":\"call\",\"fn\":\"noop\",\"name\":\"\\u0041\\t\"}", &s[5]), 0);
	assert_int_equal(jsched_spec_from_json("{\"fn\":\"noop\",\"kind\":\"call\"}", &s[6]), 0); /* order kept */
	assert_int_equal(jsched_spec_from_json("{\"kind\":\"exec\",\"argv\":[\"/bin/true\"],\"env\":{}}", &s[7]), 0);
	assert_int_equal(jsched_spec_call("spin", "{\"us\": 100}", &s[8]), 0);
	assert_int_equal(jsched_spec_set_on_exit(s[8], "echo done"), 0);
}

/* The requests written as text (submits of one spec or batches, with and without wait;
 * waits and statuses of ids) are the bytes of the trees the library built before. */
static void test_request_text_batches(void **state)
{
	struct jsched_spec *s[NSPECS];
	static const uint64_t ids[] = {1, 9, 10, 12345678901234, 9007199254740991, 2};
	static const int64_t timeouts[] = {-1, 0, 5, 1234567};
	int id;

	(void)state;
	make_specs(s);
	const struct jsched_spec *const *cs = (const struct jsched_spec *const *)s;
	for (size_t i = 0; i < NSPECS; i++) { /* one spec: async, and each batch prefix */
		id = jsched_submit_async(C, s[i], ignore_cb, NULL);
		assert_true(id > 0);
		expect_old(old_submit(&s[i], 1, true, false, JSCHED_WAIT_ALL, -1, id));
		id = jsched_submit_batch_async(C, cs, i + 1, ignore_cb, NULL);
		assert_true(id > 0);
		expect_old(old_submit(s, i + 1, false, false, JSCHED_WAIT_ALL, -1, id));
		id = jsched_submit_batch_async(C, cs + i, NSPECS - i, ignore_cb, NULL);
		assert_true(id > 0);
		expect_old(old_submit(s + i, NSPECS - i, false, false, JSCHED_WAIT_ALL, -1, id));
	}
	for (size_t t = 0; t < sizeof(timeouts) / sizeof(timeouts[0]); t++)
		for (int m = 0; m < 2; m++) {
			enum jsched_wait_mode mode = m ? JSCHED_WAIT_ANY : JSCHED_WAIT_ALL;
			size_t n = 1 + t * 2 % NSPECS;
			id = jsched_submit_wait_async(C, cs, n, mode, timeouts[t], ignore_cb, NULL);
			assert_true(id > 0);
			expect_old(old_submit(s, n, false, true, mode, timeouts[t], id));
			for (size_t k = 1; k <= sizeof(ids) / sizeof(ids[0]); k++) {
				id = jsched_wait_async(C, ids, k, mode, timeouts[t], ignore_cb, NULL);
				assert_true(id > 0);
				expect_old(old_ids("wait", ids, k, mode, timeouts[t], id));
				id = jsched_status_async(C, ids + 6 - k, k, ignore_cb, NULL);
				assert_true(id > 0);
				expect_old(old_ids("status", ids + 6 - k, k, JSCHED_WAIT_ALL, -1, id));
			}
		}
	/* What the trees refused is refused, and nothing is sent. */
	const struct jsched_spec *with_null[] = {s[0], NULL};
	static const uint64_t bad[] = {3, 0}, big[] = {9007199254740992};
	assert_int_equal(jsched_submit_batch_async(C, with_null, 2, ignore_cb, NULL), JSCHED_EINVAL);
	assert_int_equal(jsched_submit_batch_async(C, cs, 0, ignore_cb, NULL), JSCHED_EINVAL);
	assert_int_equal(jsched_submit_wait_async(C, cs, 1, (enum jsched_wait_mode)7, -1, ignore_cb, NULL),
			 JSCHED_EINVAL);
	assert_int_equal(jsched_wait_async(C, bad, 2, JSCHED_WAIT_ALL, -1, ignore_cb, NULL), JSCHED_EINVAL);
	assert_int_equal(jsched_status_async(C, big, 1, ignore_cb, NULL), JSCHED_EINVAL);
	/* The synchronous batch: the same bytes. */
	char buf[256];
	uint64_t got[2];
	snprintf(buf, sizeof(buf), "{\"id\":%d,\"ok\":true,\"jobs\":[7,8]}", (int)id + 1);
	raw(buf);
	assert_int_equal(jsched_submit_batch(C, cs + 2, 2, got), 0);
	assert_int_equal(got[0], 7);
	assert_int_equal(got[1], 8);
	expect_old(old_submit(s + 2, 2, false, false, JSCHED_WAIT_ALL, -1, id + 1));
	for (size_t i = 0; i < NSPECS; i++)
		jsched_spec_free(s[i]);
}

/* What an asynchronous submit's callback got. */
struct got_ids {
	int calls, status, results_rc;
	size_t n;
	uint64_t ids[8];
	char json[512];
};

static void ids_cb(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg)
{
	struct got_ids *g = arg;
	const uint64_t *ids = NULL;
	struct jsched_results *res = NULL;

	(void)c;
	g->calls++;
	g->status = status;
	g->n = 0;
	if (jsched_reply_ids(r, &ids, &g->n) == 0)
		memcpy(g->ids, ids, (g->n < 8 ? g->n : 8) * sizeof(*ids));
	g->results_rc = jsched_reply_results(r, &res);
	jsched_results_free(res);
	const char *j = jsched_reply_json(r);
	snprintf(g->json, sizeof(g->json), "%s", j ? j : "(null)");
}

static void ids_cb_plain(struct jsched_conn *c, int status, const struct jsched_reply *r, void *arg)
{
	struct got_ids *g = arg;
	const uint64_t *ids = NULL;

	(void)c;
	g->calls++;
	g->status = status;
	if (jsched_reply_ids(r, &ids, &g->n) == 0)
		memcpy(g->ids, ids, (g->n < 8 ? g->n : 8) * sizeof(*ids));
}

/* submit_reply: submit spec twice in one asynchronous batch with callback cb and answer
 * it with `reply` (%d: its id); with allocs, count jansson's allocations meanwhile. */
static struct got_ids submit_reply(const char *reply, struct jsched_spec *spec, jsched_reply_cb cb,
				   size_t *allocs)
{
	struct got_ids g = {0};
	char buf[512];
	int rounds = 0;

	const struct jsched_spec *two[] = {spec, spec};
	jansson_allocs = 0;
	if (allocs)
		json_set_alloc_funcs(count_malloc, free);
	int id = jsched_submit_batch_async(C, two, 2, cb, &g);
	json_set_alloc_funcs(malloc, free);
	assert_true(id > 0);
	assert_non_null(recv_text());
	const char *at = strstr(reply, "%d"); /* the reply's id goes there */
	assert_non_null(at);
	snprintf(buf, sizeof(buf), "%.*s%d%s", (int)(at - reply), reply, id, at + 2);
	raw(buf);
	if (allocs)
		json_set_alloc_funcs(count_malloc, free);
	while (g.calls == 0 && rounds++ < 1000)
		if (jsched_process(C) < 0)
			break;
	json_set_alloc_funcs(malloc, free);
	if (allocs)
		*allocs = jansson_allocs;
	assert_int_equal(g.calls, 1);
	return g;
}

/* The reply to an asynchronous submit read straight from its text gives its callback what
 * the same reply read by jansson gives (the member order moved so the fast reader leaves
 * it to jansson); the replies it does not take still work. */
static void test_async_submit_reply(void **state)
{
	static const char *const pairs[][2] = {
		{"{\"id\":%d,\"ok\":true,\"jobs\":[7,8]}", "{\"ok\":true,\"id\":%d,\"jobs\":[7,8]}"},
		{"{\"id\":%d,\"ok\":true,\"jobs\":[7, 900719925474099]}", "{\"ok\":true,\"jobs\":[7,900719925474099],\"id\":%d}"},
		{"{\"id\":%d,\"ok\":true,\"job\":5}", "{\"job\":5,\"ok\":true,\"id\":%d}"},
		/* not taken by the fast reader: each goes to jansson both times */
		{"{\"id\":%d,\"ok\":true,\"existing\":[1],\"jobs\":[7,8]}", "{\"ok\":true,\"existing\":[1],\"jobs\":[7,8],\"id\":%d}"},
		{"{\"id\":%d,\"ok\":true,\"jobs\":[7,0]}", "{\"ok\":true,\"jobs\":[7,0],\"id\":%d}"},
		{"{\"id\":%d,\"ok\":true,\"jobs\":[]}", "{\"ok\":true,\"jobs\":[],\"id\":%d}"},
		{"{\"id\":%d,\"ok\":true,\"jobs\":[7,8.0]}", "{\"ok\":true,\"jobs\":[7,8.0],\"id\":%d}"},
		{"{\"id\":%d,\"ok\":false,\"error\":{\"code\":\"queue_full\",\"message\":\"m\"}}",
		 "{\"ok\":false,\"error\":{\"code\":\"queue_full\",\"message\":\"m\"},\"id\":%d}"},
		{"{\"id\":%d,\"ok\":true,\"jobs\":[7,8],\"timed_out\":true,\"records\":[]}",
		 "{\"ok\":true,\"jobs\":[7,8],\"timed_out\":true,\"records\":[],\"id\":%d}"},
	};

	struct jsched_spec *noop;
	size_t allocs = 1;

	(void)state;
	assert_int_equal(jsched_spec_call("noop", NULL, &noop), 0);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct got_ids a = submit_reply(pairs[i][0], noop, ids_cb, NULL),
			       b = submit_reply(pairs[i][1], noop, ids_cb, NULL);

		assert_int_equal(a.status, b.status);
		assert_int_equal(a.n, b.n);
		for (size_t k = 0; k < a.n && k < 8; k++)
			assert_int_equal(a.ids[k], b.ids[k]);
		assert_int_equal(a.results_rc, b.results_rc);
		assert_string_not_equal(a.json, "(null)");
	}
	/* A plain reply to an asynchronous batch builds no tree (the spec's text is written). */
	struct got_ids g = submit_reply("{\"id\":%d,\"ok\":true,\"jobs\":[3,4]}", noop, ids_cb_plain, &allocs);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.ids[1], 4);
	assert_int_equal(allocs, 0);
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
		cmocka_unit_test_setup_teardown(test_del_is_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_output_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeated_usage, setup, teardown),
		cmocka_unit_test(test_inherit_text),
		cmocka_unit_test(test_hello_reply),
		cmocka_unit_test(test_hello_request),
		cmocka_unit_test(test_waiting_hello),
		cmocka_unit_test_setup_teardown(test_request_text_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_submit_reply, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
