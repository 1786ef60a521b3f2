/* tests/daemon/test_daemon_badinput.c: bad input on raw sockets.  Garbage bytes, a huge
 * length, a malformed frame, a truncated frame, requests before hello, a silent client
 * past its handshake time, wrong member types, unknown ops, unknown job-spec members,
 * and a client that never reads its replies: each is answered or disconnected, and a
 * second client, connected all along, carries on (its ping still answers and its job
 * still finishes). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static struct jsched_conn *bystander;

/* bystander_ok: the other client is unaffected. */
static void bystander_ok(void)
{
	uint64_t id;

	assert_int_equal(jsched_ping(bystander), 0);
	id = jdt_submit_call(bystander, "echo", "\"still here\"");
	assert_string_equal(jdt_wait_final(bystander, id, NULL), "succeeded");
}

/* expect_error_then_close: one error reply with `code`, then end of stream. */
static void expect_error_then_close(int fd, const char *code)
{
	json_t *r = jdt_read_frame(fd);

	assert_non_null(r);
	assert_string_equal(jdt_err_code(r), code);
	json_decref(r);
	assert_null(jdt_read_frame(fd));
	close(fd);
}

static int hello(void)
{
	return jdt_raw_hello(&t, "raw");
}

static void test_garbage_and_huge_length(void **state)
{
	int fd = jdt_raw(&t);
	static const unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff};

	(void)state;
	/* An HTTP request: its first four bytes read as a length of 1.2 GB. */
	jdt_send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	expect_error_then_close(fd, "frame_too_large");
	fd = hello();
	jdt_send_all(fd, huge, 4);
	expect_error_then_close(fd, "frame_too_large");
	bystander_ok();
}

static void test_malformed_and_truncated(void **state)
{
	int fd = hello();

	(void)state;
	jdt_send_frame(fd, "{not json");
	expect_error_then_close(fd, "bad_frame");
	fd = hello();
	jdt_send_frame(fd, "[1, 2, 3]");
	expect_error_then_close(fd, "bad_frame");
	/* Half a frame, then the client goes away: nothing happens to anyone else. */
	fd = hello();
	jdt_send_all(fd, "\x00\x00\x00\x64{\"op\": \"pi", 14);
	close(fd);
	bystander_ok();
}

static void test_before_hello(void **state)
{
	int fd = jdt_raw(&t);

	(void)state;
	jdt_send_frame(fd, "{\"op\": \"ping\", \"id\": 1}");
	expect_error_then_close(fd, "handshake_required");
	/* Silent past the handshake time: closed with a timeout error. */
	fd = jdt_raw(&t);
	expect_error_then_close(fd, "timeout");
	bystander_ok();
}

/* ask: send req on fd and read its reply: its error code is `code` ("": ok) and, if field
 * is not NULL, the error names that field; the reply (new reference) if keep, else NULL. */
static json_t *ask(int fd, const char *req, const char *code, const char *field, bool keep)
{
	json_t *r;

	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_string_equal(jdt_err_code(r), code);
	if (field)
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    field);
	if (keep)
		return r;
	json_decref(r);
	return NULL;
}

static void test_bad_requests_answered(void **state)
{
	int fd = hello();
	json_t *r;

	(void)state;
	r = ask(fd, "{\"op\": \"status\", \"id\": 1, \"job\": \"seven\"}", "bad_request", "job", true);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 1);
	json_decref(r);
	ask(fd, "{\"op\": \"launch_missiles\", \"id\": 2}", "unknown_op", NULL, false);
	ask(fd, "{\"op\": \"submit\", \"id\": 3, \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"retries\": 3}}",
	    "bad_request", "job.retries", false);
	ask(fd, "{\"op\": \"hello\", \"id\": 4, \"version\": 1}", "protocol_error", NULL, false);
	/* The connection is still good after all that. */
	ask(fd, "{\"op\": \"ping\", \"id\": 5}", "", NULL, false);
	close(fd);
	/* A version the daemon does not speak: one past the newest, and one before the oldest. */
	fd = jdt_raw(&t);
	jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 4}");
	expect_error_then_close(fd, "version_mismatch");
	fd = jdt_raw(&t);
	jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 0}");
	expect_error_then_close(fd, "version_mismatch");
	/* Version 1 is still answered, in version 1, and its requests work as before. */
	fd = jdt_raw(&t);
	r = ask(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 1}", "", NULL, true);
	assert_int_equal(json_integer_value(json_object_get(r, "version")), 1);
	json_decref(r);
	ask(fd, "{\"op\": \"ping\", \"id\": 1}", "", NULL, false);
	close(fd);
	bystander_ok();
}

static void test_client_that_never_reads(void **state)
{
	int fd = hello();
	char req[64];
	json_t *m;
	int sent = 0;

	(void)state;
	/* Pipeline metrics requests (each reply a few KiB) and never read: the daemon's
	 * output buffer for this connection passes its 64 KiB limit and it hangs up.
	 * Stop sending once the daemon has closed (bounded anyway). */
	for (sent = 0; sent < 20000; sent++) {
		uint32_t len;
		ssize_t w;

		snprintf(req, sizeof(req), "{\"op\": \"metrics\", \"id\": %d}", sent);
		len = htonl((uint32_t)strlen(req));
		w = send(fd, &len, 4, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == 4)
			w = send(fd, req, strlen(req), MSG_NOSIGNAL);
		if (w < 0 && errno == EAGAIN) {
			/* The daemon is not reading fast enough; it reads on: wait a bit. */
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			poll(&p, 1, 100);
			continue;
		}
		if (w < 0)
			break; /* EPIPE / ECONNRESET: it hung up */
	}
	m = jdt_metrics(bystander);
	assert_true(json_integer_value(json_object_get(json_object_get(m, "connections"), "closed_over_limit")) >= 1);
	json_decref(m);
	close(fd);
	bystander_ok();
}

static void test_frame_limit_after_hello(void **state)
{
	int fd = hello();
	size_t n = 70000;
	char *big = malloc(n + 64);

	(void)state;
	/* Valid JSON, but larger than limits.frame_bytes (64 KiB here). */
	snprintf(big, n + 64, "{\"op\": \"ping\", \"id\": 1, \"pad\": \"");
	memset(big + strlen(big), 'x', n);
	snprintf(big + strlen(big), 8, "\"}");
	/* The daemon may hang up before reading it all (it reads only the header): a send
	 * that fails then is part of the expected outcome. */
	{
		uint32_t len = htonl((uint32_t)strlen(big));
		size_t off = 0, total = strlen(big);

		if (send(fd, &len, 4, MSG_NOSIGNAL) == 4)
			while (off < total) {
				ssize_t w = send(fd, big + off, total - off, MSG_NOSIGNAL);

				if (w <= 0)
					break;
				off += (size_t)w;
			}
	}
	free(big);
	expect_error_then_close(fd, "frame_too_large");
	bystander_ok();
}

static void test_connections_per_uid(void **state)
{
	int fds[16], n, refused = -1;

	(void)state;
	/* limits.connections_per_uid is 8 and the bystander holds one: the 8th raw
	 * connection from here is told so (too_many_connections, once it has written its
	 * hello: the write does not fail) and closed. */
	for (n = 0; n < 16 && refused < 0; n++) {
		json_t *r;

		static const char hello_req[] = "\0\0\0\x26{\"op\": \"hello\", \"id\": 0, \"version\": 1}";

		fds[n] = jdt_raw(&t);
		assert_int_equal(send(fds[n], hello_req, sizeof(hello_req) - 1, MSG_NOSIGNAL),
				 (ssize_t)sizeof(hello_req) - 1);
		r = jdt_read_frame(fds[n]);
		assert_non_null(r);
		if (!json_is_true(json_object_get(r, "ok"))) {
			assert_string_equal(jdt_err_code(r), "too_many_connections");
			assert_true(json_is_null(json_object_get(r, "id")));
			refused = n;
		}
		json_decref(r);
	}
	assert_int_equal(refused, 7);
	/* Through the library, every time: the reason, not a broken pipe. */
	for (int i = 0; i < 20; i++) {
		struct jsched_conn *c = NULL;
		char msg[256];

		int rc = jsched_connect_error(t.sock, NULL, &c, msg, sizeof(msg));

		if (rc != JSCHED_ETOO_MANY_CONNECTIONS)
			fail_msg("connect %d of 20: %s (%s)", i, jsched_err_name(rc), msg);
		assert_null(c);
		if (strstr(msg, "too many connections") == NULL)
			fail_msg("connect said: %s", msg);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	bystander_ok();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_garbage_and_huge_length),
		cmocka_unit_test(test_malformed_and_truncated),
		cmocka_unit_test(test_before_hello),
		cmocka_unit_test(test_bad_requests_answered),
		cmocka_unit_test(test_client_that_never_reads),
		cmocka_unit_test(test_frame_limit_after_hello),
		cmocka_unit_test(test_connections_per_uid),
	};

	signal(SIGPIPE, SIG_IGN);
	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"limits\": {\"handshake_ms\": 200, "
			     "\"output_buffer_bytes\": 65536, \"frame_bytes\": 65536, "
			     "\"connections_per_uid\": 8}",
			     &bystander, "bystander");
}
