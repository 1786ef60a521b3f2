/* tests/daemon/test_daemon_edges.c: inputs at the edges of what the protocol allows, on raw
 * sockets against the real daemon.
 *
 * - Text cut to fit: every message and field that quotes the client's own text (an op
 *   name, a member name, an env name in a field path, a ref, a handler's error, a command
 *   that cannot start) is cut at every byte offset around its limit with 2-, 3- and 4-byte
 *   characters; each request is answered with valid JSON (jdt_read_frame asserts it).
 * - Integers: 2^53 - 1 is echoed; an id or any integer beyond +-(2^53 - 1) is a bad_frame
 *   (PROTOCOL.md section 1), answered with id null, and the connection is closed.
 * - Time: every time field at its extremes.  Far deadlines (deadline_in_ms up to 2^53 - 1,
 *   where ms * 10^6 no longer fits in 64 bits; deadline_at_ms 2^53 - 1) never expire a job;
 *   a past one expires it at once; time limits and wait timeouts of 2^53 - 1 ms do not
 *   fire; sleep accepts its maximum and refuses one more.
 * - Writes: replies queued behind a full socket, and held for the journal, are all flushed
 *   before a close; 50 pipelined requests are answered in one write.
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
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;

#define MEMBERS "\"workers\": 2, \"worker_scheduling\": \"low\", \"limits\": {\"output_buffer_bytes\": 67108864}"

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, MEMBERS);
	return 0;
}

/* reload: the daemon's config becomes MEMBERS plus more (a reload asked on fd). */
static void reload(int fd, const char *more)
{
	char members[512];

	snprintf(members, sizeof(members), "%s%s", MEMBERS, more);
	jdt_write_config(&t, members);
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"reload\", \"id\": 3}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
}

static int teardown(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");

	(void)state;
	/* A test that failed may have left its 24 h sleep running. */
	jdt_send_frame(fd, "{\"op\": \"drain\", \"id\": 1, \"running\": true}");
	json_decref(jdt_read_frame(fd));
	close(fd);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

/* expect_code: the reply to req has error `code` (and, if not NULL, `field`). */
static void expect_code(int fd, const char *req, const char *code, const char *field)
{
	json_t *r = jdt_raw_ask(fd, req);

	if (strcmp(jdt_err_code(r), code) != 0)
		fail_msg("%.120s: got %s, wanted %s", req, json_dumps(r, 0), code);
	if (field)
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"),
								      "field")),
				    field);
	json_decref(r);
}

static const char *const wide[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};

/* pad: n 'a's then the character w, NUL-terminated, in buf. */
static char *pad(char *buf, size_t n, const char *w)
{
	memset(buf, 'a', n);
	strcpy(buf + n, w);
	return buf;
}

static void test_text_cut_at_characters(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	char name[300], req[1024];

	(void)state;
	for (size_t w = 0; w < 3; w++)
		for (size_t n = 56; n <= 66; n++) {
			/* An op name, quoted in the message (64 bytes of it). */
			snprintf(req, sizeof(req), "{\"op\": \"%s\", \"id\": 1}", pad(name, n, wide[w]));
			expect_code(fd, req, "unknown_op", "op");
			/* A member name: quoted in the message and the field (128 bytes). */
			snprintf(req, sizeof(req), "{\"op\": \"ping\", \"id\": 2, \"%s\": 1}",
				 pad(name, n + 64, wide[w]));
			expect_code(fd, req, "bad_request", NULL);
			/* An env name at the end of a field path. */
			snprintf(req, sizeof(req),
				 "{\"op\": \"submit\", \"id\": 3, \"job\": {\"kind\": \"exec\", "
				 "\"argv\": [\"true\"], \"env\": {\"%s\": 7}}}",
				 pad(name, n, wide[w]));
			expect_code(fd, req, "bad_request", NULL);
			/* A ref nobody defines, and a ref defined twice. */
			snprintf(req, sizeof(req),
				 "{\"op\": \"submit\", \"id\": 4, \"jobs\": [{\"kind\": \"call\", "
				 "\"fn\": \"noop\", \"after\": [\"%s\"]}]}",
				 pad(name, n - 8, wide[w]));
			expect_code(fd, req, "unknown_dependency", "jobs[0].after[0]");
			snprintf(req, sizeof(req),
				 "{\"op\": \"submit\", \"id\": 5, \"jobs\": [{\"kind\": \"call\", "
				 "\"fn\": \"noop\", \"ref\": \"%s\"}, {\"kind\": \"call\", \"fn\": "
				 "\"noop\", \"ref\": \"%s\"}]}",
				 pad(name, n - 8, wide[w]), name);
			expect_code(fd, req, "bad_request", NULL);
		}
	close(fd);
}

/* test_reasons_cut_at_characters: a handler's error and a command that cannot start end up
 * in the job's reason through fixed buffers; the record stays valid and says so. */
static void test_reasons_cut_at_characters(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	char name[400], req[1024];

	(void)state;
	for (size_t w = 0; w < 3; w++)
		for (size_t n = 120; n <= 300; n += 3) {
			json_t *r, *rec;
			const char *reason;

			snprintf(req, sizeof(req),
				 "{\"op\": \"submit\", \"id\": 1, \"jobs\": [{\"kind\": \"call\", "
				 "\"fn\": \"fail\", \"args\": {\"message\": \"%s\"}}, {\"kind\": "
				 "\"exec\", \"argv\": [\"/nonexistent/%s\"]}]}",
				 pad(name, n, wide[w]), name);
			r = jdt_raw_ask(fd, req);
			assert_true(json_is_true(json_object_get(r, "ok")));
			snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 2, \"jobs\": [%lld, %lld]}",
				 (long long)json_integer_value(json_array_get(json_object_get(r, "jobs"), 0)),
				 (long long)json_integer_value(json_array_get(json_object_get(r, "jobs"), 1)));
			json_decref(r);
			r = jdt_raw_ask(fd, req);
			assert_true(json_is_true(json_object_get(r, "ok")));
			for (size_t k = 0; k < 2; k++) {
				rec = json_array_get(json_object_get(r, "jobs"), k);
				assert_string_equal(json_string_value(json_object_get(rec, "state")),
						    "failed");
				reason = json_string_value(json_object_get(rec, "reason"));
				assert_non_null(reason);
				/* Cut whole: no replacement character for half of one. */
				assert_null(strstr(reason, "\xef\xbf\xbd"));
			}
			json_decref(r);
		}
	close(fd);
}

static void test_integers_beyond_2_53(void **state)
{
	static const char *const bad[] = {
		"{\"op\": \"ping\", \"id\": 9007199254740992}",
		"{\"op\": \"ping\", \"id\": 9223372036854775807}",
		"{\"op\": \"status\", \"id\": 1, \"job\": 9007199254740992}",
		/* (one literal: clang's -Wstring-concatenation flags a split one in an array) */
		"{\"op\": \"submit\", \"id\": 1, \"job\": {\"kind\": \"call\", \"fn\": \"echo\", \"args\": [1, {\"x\": -9007199254740992}]}}",
		"{\"op\": \"wait\", \"id\": 1, \"job\": 1, \"timeout_ms\": 36028797018963968}",
	};
	json_t *r;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = jdt_raw_hello(&t, "edges");
		jdt_send_frame(fd, bad[i]);
		r = jdt_read_frame(fd);
		assert_non_null(r);
		assert_string_equal(jdt_err_code(r), "bad_frame");
		assert_true(json_is_null(json_object_get(r, "id")));
		json_decref(r);
		assert_null(jdt_read_frame(fd));
		close(fd);
	}
	/* The largest exact integer is an id like any other, and may sit in args. */
	fd = jdt_raw_hello(&t, "edges");
	r = jdt_raw_ask(fd, "{\"op\": \"ping\", \"id\": 9007199254740991}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 9007199254740991LL);
	json_decref(r);
	r = jdt_raw_ask(fd, "{\"op\": \"submit\", \"id\": 2, \"job\": {\"kind\": \"call\", \"fn\": "
		    "\"echo\", \"args\": [-9007199254740991]}}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	close(fd);
}

/* submit_id: submit the spec (JSON text) on fd; returns the new job's id. */
static long long submit_id(int fd, const char *spec)
{
	char req[1024];
	json_t *r;
	long long id;

	snprintf(req, sizeof(req), "{\"op\": \"submit\", \"id\": 1, \"job\": %s}", spec);
	r = jdt_raw_ask(fd, req);
	if (!json_is_true(json_object_get(r, "ok")))
		fail_msg("submit %s: %s", spec, json_dumps(r, 0));
	id = (long long)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	return id;
}

static const char *state_of(const json_t *rec)
{
	return json_string_value(json_object_get(rec, "state"));
}

static void test_time_fields_at_extremes(void **state)
{
	static const char *const far[] = {
		"\"deadline_in_ms\": 18446744073710",	/* ms * 10^6 just past 2^64 */
		"\"deadline_in_ms\": 9007199254740991", /* the largest the protocol allows */
		"\"deadline_at_ms\": 9007199254740991",
	};
	int fd = jdt_raw_hello(&t, "edges");
	long long gate, far_ids[6], past_in, past_at, limit;
	char spec[512], req[512];
	size_t n = 0;
	json_t *r;

	(void)state;
	/* A gate that stays shut until cancelled: jobs after it wait, with their deadline
	 * timers running.  Queued ones behind a busy client are the other case: a job of
	 * ours with a far deadline, queued behind nothing, just runs. */
	gate = submit_id(fd, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 86400000}}");
	for (size_t i = 0; i < 3; i++) {
		snprintf(spec, sizeof(spec),
			 "{\"kind\": \"call\", \"fn\": \"noop\", %s, \"after\": [{\"job\": %lld, "
			 "\"on\": \"any\"}]}",
			 far[i], gate);
		far_ids[n++] = submit_id(fd, spec);
		snprintf(spec, sizeof(spec), "{\"kind\": \"call\", \"fn\": \"noop\", %s}", far[i]);
		far_ids[n++] = submit_id(fd, spec);
	}
	snprintf(spec, sizeof(spec),
		 "{\"kind\": \"call\", \"fn\": \"noop\", \"deadline_in_ms\": 0, \"after\": [%lld]}",
		 gate);
	past_in = submit_id(fd, spec);
	snprintf(spec, sizeof(spec),
		 "{\"kind\": \"call\", \"fn\": \"noop\", \"deadline_at_ms\": 0, \"after\": [%lld]}",
		 gate);
	past_at = submit_id(fd, spec);
	/* A time limit of 2^53 - 1 ms on a command that finishes. */
	limit = submit_id(fd, "{\"kind\": \"exec\", \"argv\": [\"true\"], "
			      "\"timeout_ms\": 9007199254740991}");

	/* The past deadlines expire at once, while the gate is still shut. */
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 2, \"jobs\": [%lld, %lld], "
		 "\"timeout_ms\": 9007199254740991}", past_in, past_at);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	for (size_t k = 0; k < 2; k++)
		assert_string_equal(state_of(json_array_get(json_object_get(r, "jobs"), k)),
				    "expired");
	json_decref(r);
	/* The far ones: queued ones ran, waiting ones still wait.  A wrapped deadline is due
	 * within a millisecond of the submit; the 300 ms of this wait only give it time to
	 * show (the pass does not depend on them). */
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 3, \"jobs\": [%lld, %lld, %lld], "
		 "\"mode\": \"any\", \"timeout_ms\": 300}", far_ids[0], far_ids[2], far_ids[4]);
	r = jdt_raw_ask(fd, req);
	assert_string_equal(jdt_err_code(r), "timeout");
	for (size_t k = 0; k < 3; k++)
		assert_string_equal(state_of(json_array_get(json_object_get(json_object_get(r, "error"),
									    "jobs"), k)),
				    "waiting");
	json_decref(r);
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 4, \"jobs\": [%lld, %lld, %lld, %lld]}",
		 far_ids[1], far_ids[3], far_ids[5], limit);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	for (size_t k = 0; k < 4; k++)
		assert_string_equal(state_of(json_array_get(json_object_get(r, "jobs"), k)),
				    "succeeded");
	json_decref(r);
	/* Open the gate: the waiting jobs run rather than expire. */
	snprintf(req, sizeof(req), "{\"op\": \"cancel\", \"id\": 5, \"job\": %lld}", gate);
	json_decref(jdt_raw_ask(fd, req));
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 6, \"jobs\": [%lld, %lld, %lld]}",
		 far_ids[0], far_ids[2], far_ids[4]);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	for (size_t k = 0; k < 3; k++)
		assert_string_equal(state_of(json_array_get(json_object_get(r, "jobs"), k)),
				    "succeeded");
	json_decref(r);
	/* wait: timeout 0 polls; sleep: its maximum is accepted, one more refused. */
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 7, \"job\": %lld, \"timeout_ms\": 0}",
		 gate);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	{
		long long over = submit_id(fd, "{\"kind\": \"call\", \"fn\": \"sleep\", "
					       "\"args\": {\"ms\": 86400001}}");

		snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 8, \"job\": %lld}", over);
		r = jdt_raw_ask(fd, req);
		assert_string_equal(state_of(json_object_get(r, "job")), "failed");
		json_decref(r);
	}
	close(fd);
}

/* test_close_flushes_queued_replies: replies queued behind a full socket, then a frame
 * that closes the connection: the client, reading only now, gets every reply and then the
 * error that says why, before the end of the stream. */
static void test_close_flushes_queued_replies(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	size_t replies = 0;
	char req[64];
	json_t *r;

	(void)state;
	/* 300 metrics replies, each several KB (about 2 MB): far more than a Unix socket
	 * buffers (~200 KB), so most wait in the daemon's queue when the bad frame arrives,
	 * and well under the 8 MiB a connection may leave unread before it is closed as
	 * not reading (a slow reader under a sanitizer must not be taken for one). */
	for (int i = 0; i < 300; i++) {
		snprintf(req, sizeof(req), "{\"op\": \"metrics\", \"id\": %d}", i + 1);
		jdt_send_frame(fd, req);
	}
	jdt_send_frame(fd, "{not json");
	while ((r = jdt_read_frame(fd)) != NULL) {
		if (json_is_true(json_object_get(r, "ok"))) {
			replies++;
		} else {
			assert_int_equal(replies, 300);
			assert_string_equal(jdt_err_code(r), "bad_frame");
			json_decref(r);
			assert_null(jdt_read_frame(fd));
			close(fd);
			return;
		}
		json_decref(r);
	}
	fail_msg("end of stream after %zu replies, without the bad_frame error", replies);
}

/* test_close_keeps_replies_held_for_the_journal: a submit's reply waits until the
 * journal has the job; a malformed frame right behind it closes the connection.  Both the
 * submit's reply and the bad_frame error still arrive, in that order, before the end. */
static void test_close_keeps_replies_held_for_the_journal(void **state)
{
	static const char two[] = "\0\0\0\x38{\"op\":\"submit\",\"id\":5,\"job\":{\"kind\":\"call\",\"fn\":\"noop\"}}"
				  "\0\0\0\x09{not json";
	int fd = jdt_raw_hello(&t, "edges");
	json_t *r;

	(void)state;
	jdt_send_all(fd, two, sizeof(two) - 1);
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_string_equal(jdt_err_code(r), "bad_frame");
	json_decref(r);
	assert_null(jdt_read_frame(fd));
	close(fd);
}

/* pings: n ping frames (ids 1 to n, each under 48 bytes) one after another in buf, as a
 * client that pipelines them would write them; returns their bytes. */
static size_t pings(char *buf, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		char req[44];
		int k = snprintf(req, sizeof(req), "{\"op\": \"ping\", \"id\": %d}", i + 1);

		buf[len] = buf[len + 1] = 0;
		buf[len + 2] = (char)(k >> 8);
		buf[len + 3] = (char)k;
		memcpy(buf + len + 4, req, (size_t)k);
		len += 4 + (size_t)k;
	}
	return len;
}

/* conn_counts: the metrics' connections.<n1> and connections.<n2> into *v1 and *v2, from
 * one metrics request asked on fd (one, so that a count of requests covers every request
 * before the next one and nothing after). */
static void conn_counts(int fd, const char *n1, json_int_t *v1, const char *n2, json_int_t *v2)
{
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 99}");
	json_t *conns = json_object_get(json_object_get(r, "metrics"), "connections");
	json_t *j1 = json_object_get(conns, n1), *j2 = json_object_get(conns, n2);

	assert_true(json_is_integer(j1) && json_is_integer(j2));
	*v1 = json_integer_value(j1);
	*v2 = json_integer_value(j2);
	json_decref(r);
}

/* test_pipelined_replies_one_write: 50 pings sent in one write(2) are read in one go, and
 * their 50 replies leave in one write, in order (the metrics count the daemon's writes and
 * the frames in them; before batching each reply was a write of its own). */
static void test_pipelined_replies_one_write(void **state)
{
	enum { N = 50 };
	int fd = jdt_raw_hello(&t, "edges");
	json_int_t w0, f0, w1, f1;
	char buf[N * 64];
	size_t len = 0;

	(void)state;
	conn_counts(fd, "writes", &w0, "frames_written", &f0);
	len = pings(buf, N);
	jdt_send_all(fd, buf, len);
	for (int i = 0; i < N; i++) {
		json_t *r = jdt_read_frame(fd);

		assert_non_null(r);
		assert_int_equal(json_integer_value(json_object_get(r, "id")), i + 1);
		assert_true(json_is_true(json_object_get(r, "ok")));
		json_decref(r);
	}
	conn_counts(fd, "writes", &w1, "frames_written", &f1);
	/* The first metrics reply and the 50 pongs: 51 frames; 2 writes, or 3 if the kernel
	 * handed the daemon the 50 requests in two reads. */
	assert_int_equal(f1 - f0, N + 1);
	if (w1 - w0 > 3)
		fail_msg("%lld writes for %d pipelined replies", (long long)(w1 - w0 - 1), N);
	close(fd);
}

/* loop_counts: the metrics' loop.iterations and loop.busy_us.count, asked on fd. */
static void loop_counts(int fd, json_int_t *iterations, json_int_t *timed)
{
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 98}");
	json_t *loop = json_object_get(json_object_get(r, "metrics"), "loop");

	assert_true(json_is_integer(json_object_get(loop, "iterations")));
	assert_int_equal(json_integer_value(json_object_get(loop, "bound_us")), 200);
	assert_true(json_integer_value(json_object_get(loop, "over_bound")) <=
		    json_integer_value(json_object_get(loop, "iterations")));
	*iterations = json_integer_value(json_object_get(loop, "iterations"));
	*timed = json_integer_value(json_object_get(json_object_get(loop, "busy_us"), "count"));
	json_decref(r);
}

/* test_loop_iterations_timed: every loop iteration is counted and its busy time recorded:
 * ten pings asked one after another need at least ten iterations (each waits in a poll
 * for the next request). */
static void test_loop_iterations_timed(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	json_int_t i0, n0, i1, n1;

	(void)state;
	loop_counts(fd, &i0, &n0);
	for (int i = 0; i < 10; i++)
		json_decref(jdt_raw_ask(fd, "{\"op\": \"ping\", \"id\": 7}"));
	loop_counts(fd, &i1, &n1);
	assert_true(i1 - i0 >= 10);
	assert_int_equal(n0, i0);
	assert_int_equal(n1, i1);
	close(fd);
}

/* thread_nice: the nice value of thread tid of process pid (/proc stat field 19), or 99
 * when it cannot be read; *worker whether its name is a worker's (jd-work/N). */
static int thread_nice(pid_t pid, const char *tid, bool *worker)
{
	char path[96], buf[512], *p;
	int nice = 99;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	if (!(f = fopen(path, "r")))
		return 99;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
		*worker = strncmp(strchr(buf, '(') + 1, "jd-work/", 8) == 0;
		/* after ") ": state is field 3; nice is field 19 */
		p += 2;
		for (int field = 3; field < 19 && p; field++)
			p = strchr(p + 1, ' ');
		if (p)
			nice = atoi(p + 1);
	}
	fclose(f);
	return nice;
}

/* test_loop_ahead_of_workers: the loop thread runs ahead of the workers (worker_scheduling
 * "low", this group's daemon's): the workers at +10 (at most 19), and the loop lowered
 * itself to -10 from 0 where the kernel allows it; and a command it starts gets the
 * daemon's own nice back. */
static void test_loop_ahead_of_workers(void **state)
{
	int fd = jdt_raw_hello(&t, "edges");
	json_t *r = jdt_raw_ask(fd, "{\"op\": \"metrics\", \"id\": 97}");
	const char *how = json_string_value(json_object_get(json_object_get(json_object_get(r, "metrics"), "loop"),
							    "priority"));
	int base, loop, workers = 0;
	char path[64], out[64], pid[16];
	struct dirent *e;
	DIR *dir;

	(void)state;
	errno = 0;
	base = getpriority(PRIO_PROCESS, 0); /* the daemon's, which it inherited */
	assert_int_equal(errno, 0);
	assert_non_null(how);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	bool w;
	loop = thread_nice(t.pid, pid, &w);
	if (strcmp(how, "loop thread at nice -10, workers at nice +10") == 0)
		assert_int_equal(loop, base - 10);
	else
		assert_string_equal(how, "workers at nice +10");
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t.pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((e = readdir(dir))) {
		int n;

		if (e->d_name[0] == '.')
			continue;
		w = false;
		n = thread_nice(t.pid, e->d_name, &w);
		if (!w)
			continue;
		workers++;
		assert_int_equal(n, base + 10 > 19 ? 19 : base + 10);
	}
	closedir(dir);
	assert_true(workers >= 1);
	assert_int_equal(jdt_tool(&t, "edges", out, sizeof(out),
				  "submit --wait -- sh -c 'cut -d\" \" -f19 /proc/self/stat'"), 0);
	assert_int_equal(atoi(out), base);
	json_decref(r);
	close(fd);
}

/* test_pipelining_client_yields: one client's 2,000 pipelined pings do not hold the loop
 * from another client.  With the daemon stopped (SIGSTOP) the first writes 2,000 pings,
 * then the second asks for the metrics; continued, the daemon finds both readable in one
 * poll.  When it reads the first first, the metrics reply counts fewer than the 2,000 pings
 * read before it, because the first connection's budget for the iteration ran out
 * (read_yields); without the budget it counts all of them.  epoll usually reports the two
 * in the order they became readable, but not always (a level-triggered entry of the second
 * may still be queued from its last request), so up to 5 tries until the first is read
 * first.  All 2,000 replies come, in order, each time. */
static void test_pipelining_client_yields(void **state)
{
	enum { N = 2000, TRIES = 5 };
	static char buf[N * 48];
	int a = jdt_raw_hello(&t, "edges"), b = jdt_raw_hello(&t, "edges"), try;
	size_t len;

	(void)state;
	/* The loop asleep in its poll when stopped, as this method needs: without the poll
	 * after a request (loop_poll_us), which yields the loop's CPU to this process, the
	 * second connection was read first in every try of 4 runs in 10. */
	reload(a, ", \"loop_poll_us\": 0");
	len = pings(buf, N);
	for (try = 0; try < TRIES; try++) {
		json_int_t req0, yields0, before, yields1;
		json_t *r, *conns;

		conn_counts(b, "requests", &req0, "read_yields", &yields0);
		jdt_pause(&t);
		jdt_send_all(a, buf, len);
		jdt_send_frame(b, "{\"op\": \"metrics\", \"id\": 2}");
		jdt_resume(&t);
		r = jdt_read_frame(b);
		assert_non_null(r);
		conns = json_object_get(json_object_get(r, "metrics"), "connections");
		/* this metrics request and the pings read before it */
		before = json_integer_value(json_object_get(conns, "requests")) - req0 - 1;
		yields1 = json_integer_value(json_object_get(conns, "read_yields"));
		json_decref(r);
		for (int i = 0; i < N; i++) {
			r = jdt_read_frame(a);
			assert_non_null(r);
			assert_int_equal(json_integer_value(json_object_get(r, "id")), i + 1);
			assert_true(json_is_true(json_object_get(r, "ok")));
			json_decref(r);
		}
		if (before == 0)
			continue; /* the second was read first: no evidence either way */
		if (before >= N)
			fail_msg("all %d pipelined pings were read before another client's request", N);
		assert_true(yields1 > yields0);
		break;
	}
	if (try == TRIES)
		fail_msg("in %d tries the daemon never read the pipelining client first", TRIES);
	reload(a, "");
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_cut_at_characters),
		cmocka_unit_test(test_reasons_cut_at_characters),
		cmocka_unit_test(test_integers_beyond_2_53),
		cmocka_unit_test(test_time_fields_at_extremes),
		cmocka_unit_test(test_close_flushes_queued_replies),
		cmocka_unit_test(test_close_keeps_replies_held_for_the_journal),
		cmocka_unit_test(test_pipelined_replies_one_write),
		cmocka_unit_test(test_loop_iterations_timed),
		cmocka_unit_test(test_loop_ahead_of_workers),
		cmocka_unit_test(test_pipelining_client_yields),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
