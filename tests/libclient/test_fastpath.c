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
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_odd_members_and_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes_and_nesting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_and_single, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
