/* tests/daemon/test_daemon_follow.c: following a job's output (`output` with `follow`),
 * against the real daemon over raw frames: output reaches the follower while the command
 * still runs (it waits on a FIFO the test opens only after it saw the first line), every
 * byte arrives exactly once with contiguous offsets and the end event comes last with
 * the job's state; a follow resumes from an offset; --tail-style starts; a follower that
 * never reads holds the daemon to a bounded window (what it queued stays far below what
 * the command wrote, and it is not cut), then gets every byte once it reads; libjsched's
 * jsched_output_follow and `jsched output -f --merged` end with the job.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/daemon/harness.h"

static struct jdt t;

/* What a follower received. */
struct got {
	char *data[2];
	size_t len[2];
	size_t events;
	json_t *end;
};

static void got_free(struct got *g)
{
	free(g->data[0]);
	free(g->data[1]);
	json_decref(g->end);
}

/* take: one output event into g, asserting its offset continues its stream (no byte
 * twice, none missing). */
static void take(struct got *g, const json_t *ev)
{
	const char *st = json_string_value(json_object_get(ev, "stream"));
	unsigned s = st && strcmp(st, "stderr") == 0;
	unsigned char *d = NULL;
	size_t n = 0;
	const json_t *data = json_object_get(ev, "data");

	assert_non_null(st);
	assert_int_equal(json_integer_value(json_object_get(ev, "offset")), g->len[s]);
	assert_null(json_object_get(ev, "dropped"));
	assert_int_equal(jp_base64_decode(json_string_value(data), json_string_length(data), SIZE_MAX,
					  &d, &n), 0);
	g->data[s] = realloc(g->data[s], g->len[s] + n + 1);
	assert_non_null(g->data[s]);
	memcpy(g->data[s] + g->len[s], d, n);
	g->len[s] += n;
	g->data[s][g->len[s]] = 0;
	g->events++;
	free(d);
}

/* read_until_end: frames from fd into g until the output_end event (bounded: each frame
 * within the harness's 10 s, at most `max` frames). */
static void read_until_end(int fd, struct got *g, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		json_t *m = jdt_read_frame(fd);
		const char *ev;

		assert_non_null(m);
		ev = json_string_value(json_object_get(m, "event"));
		if (ev && strcmp(ev, "output") == 0) {
			take(g, m);
		} else if (ev && strcmp(ev, "output_end") == 0) {
			g->end = m;
			return;
		}
		if (m != g->end)
			json_decref(m);
	}
	fail_msg("no output_end within %zu frames", max);
}

static int follow_req(struct jdt *d, uint64_t id, const char *extra)
{
	int fd = jdt_raw_hello(d, NULL);
	char req[256];
	json_t *r;

	snprintf(req, sizeof(req), "{\"op\": \"output\", \"id\": 1, \"job\": %llu, \"follow\": true%s}",
		 (unsigned long long)id, extra);
	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	return fd;
}

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"output_bytes\": 33554432}");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

/* Live: the first line arrives while the command waits for the test. */
static void test_live_then_end(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	char fifo[400], spec[1024], want[200000];
	struct got g = {0};
	size_t wn = 0;
	uint64_t id;
	int fd, w;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/go", t.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(spec, sizeof(spec), "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
		 "\"echo first; echo E1 >&2; read x < %s; seq 1 20000; echo E2 >&2\"]}", fifo);
	id = jdt_submit_spec(c, "%s", spec);
	fd = follow_req(&t, id, "");
	/* "first\n" comes before the command can go on: it waits for the FIFO's writer. */
	while (g.len[0] < 6) {
		json_t *m = jdt_read_frame(fd);

		assert_non_null(m);
		assert_string_equal(json_string_value(json_object_get(m, "event")), "output");
		take(&g, m);
		json_decref(m);
	}
	assert_string_equal(g.data[0], "first\n");
	assert_string_equal(jdt_state(c, id), "running");
	assert_true((w = open(fifo, O_WRONLY)) >= 0);
	assert_int_equal(write(w, "go\n", 3), 3);
	close(w);
	read_until_end(fd, &g, 100000);
	wn = (size_t)snprintf(want, sizeof(want), "first\n");
	for (int i = 1; i <= 20000; i++)
		wn += (size_t)snprintf(want + wn, sizeof(want) - wn, "%d\n", i);
	assert_int_equal(g.len[0], wn);
	assert_memory_equal(g.data[0], want, wn);
	assert_string_equal(g.data[1], "E1\nE2\n");
	assert_string_equal(json_string_value(json_object_get(g.end, "state")), "succeeded");
	assert_true(json_is_true(json_object_get(g.end, "complete")));
	assert_int_equal(json_integer_value(json_object_get(g.end, "stdout_bytes")), wn);
	close(fd);
	got_free(&g);
	jsched_close(c);
}

/* Resume from offsets, streams, the last N lines, and a finished job without follow. */
static void test_resume_and_tail(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
				      "\"printf 'l1\\\\nl2\\\\nl3\\\\n'; printf 'e1\\\\n' >&2\"]}");
	struct got g = {0}, h = {0}, k = {0};
	int fd;

	(void)state;
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	/* from stdout offset 3 ("l2\nl3\n"), stderr only past its end */
	fd = follow_req(&t, id, ", \"from_stdout\": 3, \"from_stderr\": 3");
	g.len[0] = 3;
	g.len[1] = 3;
	g.data[0] = calloc(1, 4);
	g.data[1] = calloc(1, 4);
	read_until_end(fd, &g, 100);
	assert_int_equal(g.len[0], 9);
	assert_memory_equal(g.data[0] + 3, "l2\nl3\n", 6);
	assert_int_equal(g.len[1], 3);
	close(fd);
	/* the last 2 lines of both streams, in arrival order: "l3\n" then "e1\n" */
	fd = follow_req(&t, id, ", \"tail_lines\": 2");
	{
		json_t *m = jdt_read_frame(fd);

		assert_int_equal(json_integer_value(json_object_get(m, "offset")), 6);
		assert_string_equal(json_string_value(json_object_get(m, "stream")), "stdout");
		h.len[0] = 6;
		h.data[0] = calloc(1, 7);
		take(&h, m);
		json_decref(m);
	}
	read_until_end(fd, &h, 100);
	assert_string_equal(h.data[0] + 6, "l3\n");
	assert_string_equal(h.data[1], "e1\n");
	close(fd);
	/* only stderr */
	fd = follow_req(&t, id, ", \"streams\": \"stderr\"");
	read_until_end(fd, &k, 100);
	assert_int_equal(k.len[0], 0);
	assert_string_equal(k.data[1], "e1\n");
	close(fd);
	got_free(&g);
	got_free(&h);
	got_free(&k);
	jsched_close(c);
}

static json_int_t follow_metric(struct jsched_conn *c, const char *name)
{
	json_t *m = jdt_metrics(c);
	json_int_t v = json_integer_value(json_object_get(json_object_get(m, "output_follow"), name));

	json_decref(m);
	return v;
}

/* A follower that does not read: the daemon queues a bounded window for it, not the 20 MB
 * the command writes; it is not cut; then it reads every byte. */
static void test_slow_follower_bounded(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	const size_t total = 20000000;
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
				      "\"echo go; read x; head -c 20000000 /dev/zero\"], "
				      "\"stdin\": \"eAo=\"}");
	struct got g = {0};
	json_int_t sent, waits;
	json_t *m;
	int fd;

	(void)state;
	fd = follow_req(&t, id, "");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	/* The command is done and every byte is in the daemon; the follower read nothing. */
	sent = follow_metric(c, "bytes");
	waits = follow_metric(c, "window_waits");
	assert_true(waits > 0);
	assert_true(sent < (json_int_t)(2u << 20)); /* the window, one event, the socket buffer */
	m = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "connections"),
							    "closed_over_limit")), 0);
	json_decref(m);
	read_until_end(fd, &g, 10000);
	assert_int_equal(g.len[0], 3 + total);
	assert_memory_equal(g.data[0], "go\n", 3);
	for (size_t i = 3; i < g.len[0]; i++)
		if (g.data[0][i] != 0)
			fail_msg("byte %zu is %d", i, g.data[0][i]);
	assert_string_equal(json_string_value(json_object_get(g.end, "state")), "succeeded");
	assert_int_equal(follow_metric(c, "followers"), 0);
	close(fd);
	got_free(&g);
	jsched_close(c);
}

struct lib_got {
	size_t out, err, calls;
};

static int lib_fn(void *arg, unsigned stream, uint64_t offset, uint64_t dropped, const void *data,
		  size_t len)
{
	struct lib_got *g = arg;

	(void)data;
	assert_int_equal(dropped, 0);
	assert_int_equal(offset, stream == JSCHED_STDOUT ? g->out : g->err);
	if (stream == JSCHED_STDOUT)
		g->out += len;
	else
		g->err += len;
	g->calls++;
	return 0;
}

/* A job that runs again (retry): the follower gets each attempt's output from offset 0,
 * and the end once the last attempt failed.  Each attempt first reads a line from a FIFO
 * that the test fills only once the follow is in place, so the first attempt cannot have
 * ended (and its output been replaced by the second's) before the follower came. */
static void test_retry_starts_over(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	char fifo[400];
	int gate, fd, starts = 0;
	uint64_t id;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/attempts", t.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Read and write: the FIFO keeps what is written while the attempts come and go. */
	assert_true((gate = open(fifo, O_RDWR)) >= 0);
	id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
			     "\"read x < %s; echo attempt; exit 1\"], \"retry\": {\"max_attempts\": 2, "
			     "\"backoff_ms\": 200}}", fifo);
	fd = follow_req(&t, id, "");
	assert_int_equal(write(gate, "go\ngo\n", 6), 6); /* one line per attempt */
	for (int i = 0; i < 100; i++) {
		json_t *m = jdt_read_frame(fd);
		const char *ev;

		assert_non_null(m);
		ev = json_string_value(json_object_get(m, "event"));
		if (ev && strcmp(ev, "output_end") == 0) {
			assert_string_equal(json_string_value(json_object_get(m, "state")), "failed");
			json_decref(m);
			break;
		}
		if (ev && strcmp(ev, "output") == 0 && json_integer_value(json_object_get(m, "offset")) == 0)
			starts++;
		json_decref(m);
	}
	assert_int_equal(starts, 2);
	close(gate);
	close(fd);
	jsched_close(c);
}

/* libjsched and the CLI. */
static void test_library_and_cli(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL), *f = jdt_connect(&t, NULL);
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
				      "\"seq 1 1000; echo oops >&2; exit 4\"]}");
	struct jsched_follow_end end;
	struct lib_got g = {0};
	char cmd[1200], line[64];
	FILE *p;
	size_t n = 0;

	(void)state;
	assert_int_equal(jsched_output_follow(f, id, NULL, lib_fn, &g, &end), 0);
	assert_int_equal(g.out, 3893);
	assert_int_equal(g.err, 5);
	assert_string_equal(end.state, "failed");
	assert_true(end.complete);
	assert_int_equal(end.stdout_bytes, 3893);
	/* jsched output -f --merged: both streams on stdout, exit 1 for a failed job */
	snprintf(cmd, sizeof(cmd), "'%s/bin/jsched' -s '%s' output -f --merged %llu; echo rc=$?",
		 t.build, t.sock, (unsigned long long)id);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p))
		n += strlen(line);
	assert_int_equal(pclose(p), 0);
	assert_int_equal(n, 3893 + 5 + strlen("rc=1\n"));
	jsched_close(f);
	jsched_close(c);
}

/* jsched submit --follow: the first line arrives while the command is still blocked (it
 * waits on a FIFO that is opened only after "a" was read), the exit status is the job's;
 * --merged puts stderr on stdout; the refusals. */
static void test_submit_follow(void **state)
{
	char fifo[512], cmd[2048], line[256], out[256];
	FILE *p;
	int fd;

	(void)state;
	alarm(120); /* the reads below block: a follow that does not stream must fail, not hang */
	snprintf(fifo, sizeof(fifo), "%s/gate", t.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(cmd, sizeof(cmd), "'%s/bin/jsched' -s '%s' submit --follow -- sh -c "
		 "'echo a; read x < %s; echo b; echo e >&2; exit 3' 2>/dev/null; echo rc=$?",
		 t.build, t.sock, fifo);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(line, sizeof(line), p));
	assert_string_equal(line, "a\n"); /* before the command could go on */
	assert_true((fd = open(fifo, O_WRONLY)) >= 0);
	assert_int_equal(write(fd, "go\n", 3), 3);
	close(fd);
	assert_non_null(fgets(line, sizeof(line), p));
	assert_string_equal(line, "b\n");
	assert_non_null(fgets(line, sizeof(line), p));
	assert_string_equal(line, "rc=3\n");
	assert_null(fgets(line, sizeof(line), p));
	assert_int_equal(pclose(p), 0);

	assert_int_equal(jdt_tool(&t, "m", out, sizeof(out), "submit --merged -- sh -c 'echo o; echo e >&2'"), 0);
	/* Both streams on stdout (the pipes are read as they become ready, so either order). */
	assert_true(strcmp(out, "o\ne\n") == 0 || strcmp(out, "e\no\n") == 0);
	assert_int_equal(jdt_tool(&t, "m", out, sizeof(out), "submit --follow --fn noop 2>/dev/null"), 64);
	assert_int_equal(jdt_tool(&t, "m", out, sizeof(out), "submit --follow --json -- true 2>/dev/null"), 64);
	assert_int_equal(jdt_tool(&t, "m", out, sizeof(out), "submit -f --timeout 1s -- true 2>/dev/null"), 64);
	assert_int_equal(jdt_tool(&t, "m", out, sizeof(out), "submit -f --array 1-2 -- true 2>/dev/null"), 64);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_live_then_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resume_and_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_follower_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_starts_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_library_and_cli, setup, teardown),
		cmocka_unit_test_setup_teardown(test_submit_follow, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
