/* test_oom.c: libjsched when memory runs out.  Every allocation the library makes (its
 * own, through the shared link-time wrappers of tests/common/failalloc.h, and jansson's,
 * through json_set_alloc_funcs) is made to fail in turn: the first, then the second, ...
 * until a whole scenario (build specs, inherited environments too, connect, submit,
 * status, a batch, an event, close)
 * runs without meeting the failure.  Each run must end without a crash, return errors as
 * codes with words for them (jsched_error_message), and leak nothing (the ASan build's
 * leak check runs at exit).  Some failures are absorbed: jansson recovers from a few of
 * its own, and an error's words may be lost while its code still stands.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include <jsched/jsched.h>

#include "tests/common/failalloc.h"
#include "tests/libclient/peer.h"

/* One whole use of the library with the n-th allocation failing: build specs, connect,
 * submit, status, a batch, a wait that times out, an event, close.  *all_ok tells whether
 * every call succeeded; returns whether the failure happened. */
/* The peer writes a frame, its allocations never counted. */
static void say(struct peer *p, const char *json)
{
	jtc_alloc_hold();
	assert_int_equal(peer_send(p, json), 0);
	jtc_alloc_release();
}

/* The daemon cannot answer a request before it is sent, so each reply is written just
 * before the call that sends its request (if an earlier call failed before sending, the
 * ids shift and the library sees a reply it did not ask for: a protocol error, one more
 * failure path, never a hang, since every call has a frame coming). */
static bool run_with_failure_at(long n, bool *all_ok)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct peer p;
	peer_init(&p, sv[1]);
	say(&p, peer_hello_reply(1));

	long live = jtc_alloc_live();
	jtc_alloc_fail_at(n);
	bool ok = true;
	struct jsched_spec *call = NULL, *exec = NULL;
	struct jsched_conn *c = NULL;
	const char *argv[] = { "make", "test", NULL };
	const char *env[] = { "PATH=/bin", "HOME=/root", NULL };
	int r = jsched_spec_call("echo", "{\"x\": [1, 2], \"y\": \"z\"}", &call);
	ok &= r == 0;
	if (r == 0)
		ok &= jsched_spec_set_name(call, "n") == 0;
	r = jsched_spec_exec(argv, &exec);
	ok &= r == 0;
	if (r == 0) {
		ok &= jsched_spec_set_env(exec, env) == 0;
		ok &= jsched_spec_set_stdin(exec, "abc", 3) == 0;
		ok &= jsched_spec_add_dep(exec, JSCHED_GATE_AFTER, 7, JSCHED_DEP_ANY) == 0;
		ok &= jsched_spec_add_dep_ref(exec, JSCHED_GATE_ANY_OF, "x", JSCHED_DEP_SUCCESS) == 0;
		char *text = NULL;
		ok &= jsched_spec_to_json(exec, &text) == 0;
		jsched_free(text);
	}
	/* Inherited environments, kept as text: one submitted as text (in the batch), one
	 * made a tree by a change and written out. */
	struct jsched_spec *inh = NULL, *inh2 = NULL;
	r = jsched_spec_exec(argv, &inh);
	ok &= r == 0;
	if (r == 0)
		ok &= jsched_spec_inherit(inh) == 0;
	r = jsched_spec_exec(argv, &inh2);
	ok &= r == 0;
	if (r == 0) {
		ok &= jsched_spec_inherit(inh2) == 0;
		ok &= jsched_spec_setenv(inh2, "ADDED", "1") == 0;
		char *text = NULL;
		ok &= jsched_spec_to_json(inh2, &text) == 0;
		jsched_free(text);
	}
	r = jsched_connect_fd(sv[0], "tester", &c);
#define CALL(expr, want)                                             \
	do {                                                         \
		int rc_ = (expr);                                    \
		ok &= rc_ == (want);                                 \
		if (rc_ < 0)                                         \
			assert_non_null(jsched_error_message(c));    \
	} while (0)
	ok &= r == 0;
	if (r == 0 && call != NULL && exec != NULL && inh != NULL) {
		uint64_t id = 0, ids[3];
		struct jsched_result *res = NULL;
		struct jsched_results *l = NULL;
		struct jsched_event *ev = NULL;
		say(&p, "{\"event\": \"job\", \"seq\": 1, \"job\": {\"job\": 101, \"state\": \"queued\"}}");
		say(&p, "{\"id\": 2, \"ok\": true, \"job\": 101}");
		CALL(jsched_submit(c, call, &id), 0);
		say(&p, "{\"id\": 3, \"ok\": true, \"job\": {\"job\": 101, \"kind\": \"call\", \"state\": "
			"\"succeeded\", \"value\": {\"x\": [1, 2]}, \"name\": \"n\"}}");
		CALL(jsched_status(c, 101, &res), 0);
		jsched_result_free(res);
		const struct jsched_spec *specs[] = { call, exec, inh };
		say(&p, "{\"id\": 4, \"ok\": true, \"jobs\": [102, 103, 104]}");
		CALL(jsched_submit_batch(c, specs, 3, ids), 0);
		say(&p, "{\"id\": 5, \"ok\": false, \"error\": {\"code\": \"timeout\", \"message\": \"t\", "
			"\"jobs\": [{\"job\": 102, \"state\": \"running\"}, {\"job\": 103, \"state\": \"queued\"}]}}");
		CALL(jsched_wait_many(c, ids, 2, JSCHED_WAIT_ALL, 10, &l), JSCHED_ETIMEOUT);
		jsched_results_free(l);
		CALL(jsched_next_event(c, 0, &ev), 0);
		jsched_event_free(ev);
	} else {
		ok = false;
	}
	jsched_close(c);
	jsched_spec_free(call);
	jsched_spec_free(exec);
	jsched_spec_free(inh);
	jsched_spec_free(inh2);
	jtc_alloc_fail_at(-1);
	peer_free(&p);
	if (jtc_alloc_live() != live)
		fail_msg("%ld blocks leaked with allocation %ld failing", jtc_alloc_live() - live, n);
	*all_ok = ok;
	return jtc_alloc_failed();
}

static void test_every_allocation_fails_in_turn(void **state)
{
	(void)state;
	json_set_alloc_funcs(jtc_malloc, jtc_free);
	long n;
	bool ok = false;
	/* Bounded: the scenario makes a few hundred allocations. */
	for (n = 0; n < 5000; n++) {
		if (!run_with_failure_at(n, &ok))
			break; /* the scenario no longer meets the failure: done */
	}
	print_message("the scenario makes %ld allocations; each failed in turn\n", n);
	assert_true(n > 50); /* it did reach the library's allocations */
	assert_true(n < 5000); /* and ended */
	assert_true(ok);       /* the run without a failure succeeded in full */
	json_set_alloc_funcs(malloc, free);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_fails_in_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
