/* tests/daemon/test_daemon_limits.c: connection limits and what a client may leave open,
 * against the real daemon on raw sockets.
 *
 * - A connection that shuts its write side after its requests still gets its pending
 *   wait answered, and then the end of the stream.
 * - 1,000 connect, hello, submit, close loops with room for one connection at a time
 *   (limits.connections_per_uid 2, one held by the bystander): none is refused, since a
 *   closed connection stops counting at once.
 * - Past limits.connections, and past the open-file limit (lowered on the running daemon
 *   with prlimit), a connection is refused with one too_many_connections frame.
 * - Under `block`, a batch larger than the client's whole queue is refused
 *   (limit_exceeded), not admitted past the limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static int bystander = -1;

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 2, \"limits\": {\"connections_per_uid\": 2, "
		      "\"connections\": 40}, \"exec\": {\"max_processes\": 4}");
	bystander = jdt_raw_hello(&t, "bystander");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(bystander);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

/* ask: one request on fd, its reply (new reference), events skipped. */
static json_t *ask(int fd, const char *req)
{
	json_t *r;

	jdt_send_frame(fd, req);
	for (int i = 0; i < 1000; i++) {
		r = jdt_read_frame(fd);
		if (!r)
			fail_msg("connection closed without a reply to %s", req);
		if (!json_object_get(r, "event"))
			return r;
		json_decref(r);
	}
	fail_msg("no reply");
	return NULL;
}

static void test_half_closed_keeps_its_waits(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	json_t *r;
	char req[160];
	long long id;

	(void)state;
	r = ask(fd, "{\"op\": \"submit\", \"id\": 1, \"job\": {\"kind\": \"call\", \"fn\": \"sleep\", "
		    "\"args\": {\"ms\": 86400000}}}");
	id = (long long)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 2, \"job\": %lld}", id);
	jdt_send_frame(fd, req);
	/* The ping's reply proves the wait was read before the write side shuts. */
	json_decref(ask(fd, "{\"op\": \"ping\", \"id\": 3}"));
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	/* The job ends (cancelled from the bystander's connection): the wait answers. */
	snprintf(req, sizeof(req), "{\"op\": \"cancel\", \"id\": 9, \"job\": %lld}", id);
	json_decref(ask(bystander, req));
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 2);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "state")),
			    "cancelled");
	json_decref(r);
	assert_null(jdt_read_frame(fd)); /* and then the daemon closes */
	close(fd);
}

static void test_reconnect_loop_never_refused(void **state)
{
	(void)state;
	/* connections_per_uid is 2 and the bystander holds one: each loop's connection is
	 * the only other one, as soon as the last one is closed. */
	for (int i = 0; i < 1000; i++) {
		int fd = jdt_raw(&t);
		json_t *r;

		jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 1, \"client\": \"loop\"}");
		r = jdt_read_frame(fd);
		assert_non_null(r);
		if (!json_is_true(json_object_get(r, "ok")))
			fail_msg("connection %d refused: %s", i, json_dumps(r, 0));
		json_decref(r);
		r = ask(fd, "{\"op\": \"submit\", \"id\": 1, \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
		assert_true(json_is_true(json_object_get(r, "ok")));
		json_decref(r);
		close(fd);
	}
}

/* expect_refused: fd was refused with too_many_connections, then closed. */
static void expect_refused(int fd)
{
	json_t *r = jdt_read_frame(fd);

	assert_non_null(r);
	assert_string_equal(jdt_err_code(r), "too_many_connections");
	json_decref(r);
	assert_null(jdt_read_frame(fd));
	close(fd);
}

/* open_fds: how many descriptors the daemon has open. */
static int open_fds(pid_t pid)
{
	char path[64];
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

static void test_refusals_say_why(void **state)
{
	/* The daemon's own reserve of descriptors: 64 + 3 per process slot (4 here). */
	const rlim_t reserve = 64 + 3 * 4;
	struct rlimit was, low;
	int fds[64], n = 0, extra = jdt_raw(&t), fd;

	(void)state;
	/* Per uid: the bystander plus one more is the limit. */
	jdt_send_frame(extra, "{\"op\": \"hello\", \"id\": 0, \"version\": 1}");
	json_decref(jdt_read_frame(extra));
	expect_refused(jdt_raw(&t));
	close(extra);
	/* The open-file limit, lowered under the running daemon: ten connections' worth
	 * beside its reserve.  Connections past it are refused with a frame, not dropped
	 * by the kernel's EMFILE (the per-uid limit is raised first). */
	assert_true(open_fds(t.pid) < (int)reserve);
	assert_int_equal(prlimit(t.pid, RLIMIT_NOFILE, NULL, &was), 0);
	low = (struct rlimit){.rlim_cur = reserve + 10, .rlim_max = was.rlim_max};
	assert_int_equal(prlimit(t.pid, RLIMIT_NOFILE, &low, NULL), 0);
	json_decref(ask(bystander, "{\"op\": \"ping\", \"id\": 1}"));
	jdt_write_config(&t, "\"workers\": 2, \"limits\": {\"connections_per_uid\": 100, "
			     "\"connections\": 40}, \"exec\": {\"max_processes\": 4}");
	json_decref(ask(bystander, "{\"op\": \"reload\", \"id\": 2}"));
	for (;;) {
		json_t *r;

		assert_true(n < 64);
		fd = jdt_raw(&t);
		jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 1}");
		r = jdt_read_frame(fd);
		assert_non_null(r);
		if (!json_is_true(json_object_get(r, "ok"))) {
			assert_string_equal(jdt_err_code(r), "too_many_connections");
			json_decref(r);
			assert_null(jdt_read_frame(fd));
			close(fd);
			break;
		}
		json_decref(r);
		fds[n++] = fd;
	}
	/* The bystander is one of the ten. */
	assert_int_equal(n, 9);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(prlimit(t.pid, RLIMIT_NOFILE, &was, NULL), 0);
	/* And limits.connections (40) itself. */
	json_decref(ask(bystander, "{\"op\": \"ping\", \"id\": 3}"));
	for (n = 0;; n++) {
		json_t *r;

		assert_true(n < 64);
		fd = jdt_raw(&t);
		jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 1}");
		r = jdt_read_frame(fd);
		assert_non_null(r);
		if (!json_is_true(json_object_get(r, "ok"))) {
			assert_string_equal(jdt_err_code(r), "too_many_connections");
			json_decref(r);
			close(fd);
			break;
		}
		json_decref(r);
		fds[n] = fd;
	}
	assert_int_equal(n, 39);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	jdt_write_config(&t, "\"workers\": 2, \"limits\": {\"connections_per_uid\": 2, "
			     "\"connections\": 40}, \"exec\": {\"max_processes\": 4}");
	json_decref(ask(bystander, "{\"op\": \"reload\", \"id\": 4}"));
}

static void test_block_refuses_a_batch_larger_than_the_queue(void **state)
{
	int fd = jdt_raw_hello(&t, "blocky");
	char req[2048];
	size_t off;
	json_t *r;

	(void)state;
	json_decref(ask(fd, "{\"op\": \"set_client\", \"id\": 1, \"client\": \"blocky\", "
			    "\"max_queued\": 3, \"overflow\": \"block\"}"));
	off = (size_t)snprintf(req, sizeof(req), "{\"op\": \"submit\", \"id\": 2, \"jobs\": [");
	for (int i = 0; i < 4; i++)
		off += (size_t)snprintf(req + off, sizeof(req) - off, "%s{\"kind\": \"call\", \"fn\": \"noop\"}",
					i ? ", " : "");
	snprintf(req + off, sizeof(req) - off, "]}");
	r = ask(fd, req);
	assert_string_equal(jdt_err_code(r), "limit_exceeded");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "jobs");
	json_decref(r);
	/* Three fit. */
	snprintf(req + off - strlen(", {\"kind\": \"call\", \"fn\": \"noop\"}"),
		 sizeof(req) - off, "]}");
	r = ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_closed_keeps_its_waits),
		cmocka_unit_test(test_reconnect_loop_never_refused),
		cmocka_unit_test(test_refusals_say_why),
		cmocka_unit_test(test_block_refuses_a_batch_larger_than_the_queue),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
