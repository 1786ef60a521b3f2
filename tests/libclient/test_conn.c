/* test_conn.c: libjsched's connection against a fake daemon on a socketpair (peer.h):
 * the hello, synchronous calls and the requests they send, the daemon's errors as the
 * caller sees them, events arriving in the middle of calls, the event-loop mode with
 * pipelined requests answered out of order, and the ways a connection ends.
 *
 * The library numbers its requests 1 (hello), 2, 3 ...; the peer writes a synchronous
 * call's reply before the call is made (it waits in the socket), which keeps every test
 * single-threaded and deterministic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jsched/jsched.h>

#include "tests/libclient/peer.h"

struct fixture {
	struct peer peer;
	struct jsched_conn *conn;
};

/* Connect a library connection to a fresh peer that has already answered hello. */
static int setup(void **state)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	struct fixture *f = calloc(1, sizeof *f);
	peer_init(&f->peer, sv[1]);
	if (peer_send(&f->peer, peer_hello_reply(1)) < 0)
		return -1;
	if (jsched_connect_fd(sv[0], "tester", &f->conn) != 0)
		return -1;
	json_t *hello = peer_recv(&f->peer);
	int ok = hello != NULL && strcmp(json_string_value(json_object_get(hello, "op")), "hello") == 0;
	json_decref(hello);
	*state = f;
	return ok ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	jsched_close(f->conn);
	peer_free(&f->peer);
	free(f);
	return 0;
}

/* The next request the library sent (new reference); fails the test if none. */
static json_t *expect_request(struct fixture *f, const char *op, int id)
{
	json_t *req = peer_recv(&f->peer);
	assert_non_null(req);
	assert_string_equal(json_string_value(json_object_get(req, "op")), op);
	assert_int_equal(json_integer_value(json_object_get(req, "id")), id);
	return req;
}

static void test_hello(void **state)
{
	struct fixture *f = *state;
	assert_string_equal(jsched_server_version(f->conn), "0.1.0");
	assert_string_equal(jsched_server_instance(f->conn), "111-22");
	assert_string_equal(jsched_client_name(f->conn), "tester");
	assert_non_null(strstr(jsched_hello_json(f->conn), "\"identity\""));
	assert_true(jsched_fd(f->conn) >= 0);
	assert_false(jsched_want_write(f->conn));
}

/* The hello request itself: the protocol's version and the client name, nothing else. */
static void test_hello_request(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct peer p;
	peer_init(&p, sv[1]);
	assert_int_equal(peer_send(&p, peer_hello_reply(1)), 0);
	struct jsched_conn *c;
	assert_int_equal(jsched_connect_fd(sv[0], "nightly-ci", &c), 0);
	json_t *req = peer_recv(&p);
	assert_non_null(req);
	assert_int_equal(json_integer_value(json_object_get(req, "version")), JP_PROTOCOL_VERSION);
	assert_string_equal(json_string_value(json_object_get(req, "client")), "nightly-ci");
	assert_int_equal(json_object_size(req), 4); /* op, id, version, client */
	json_decref(req);
	jsched_close(c);
	peer_free(&p);
}

static int connect_with_hello_reply(const char *reply)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct peer p;
	peer_init(&p, sv[1]);
	if (reply != NULL) {
		assert_int_equal(peer_send(&p, reply), 0);
	} else { /* hang up at once */
		close(p.fd);
		p.fd = -1;
	}
	static char sentinel;
	struct jsched_conn *c = (struct jsched_conn *)(void *)&sentinel; /* must come back NULL */
	int r = jsched_connect_fd(sv[0], NULL, &c);
	assert_null(c);
	peer_free(&p);
	return r;
}

static void test_hello_failures(void **state)
{
	(void)state;
	assert_int_equal(connect_with_hello_reply("{\"id\": 1, \"ok\": false, \"error\": {\"code\": "
						  "\"version_mismatch\", \"message\": \"speaks 2\", "
						  "\"supported\": [2]}}"),
			 JSCHED_EVERSION_MISMATCH);
	/* A reply it cannot read at all is a version mismatch too (PROTOCOL.md section 3). */
	assert_int_equal(connect_with_hello_reply("{\"id\": 1, \"ok\": true}"), JSCHED_EVERSION_MISMATCH);
	assert_int_equal(connect_with_hello_reply("{\"id\": 1, \"ok\": false, \"error\": {\"code\": "
						  "\"permission_denied\", \"message\": \"no\"}}"),
			 JSCHED_EPERMISSION_DENIED);
	assert_int_equal(connect_with_hello_reply(NULL), JSCHED_EDISCONNECTED);
}

static void test_connect_path_errors(void **state)
{
	(void)state;
	char msg[256];
	struct jsched_conn *c;
	assert_int_equal(jsched_connect_error("/nonexistent/dir/jschedd.sock", NULL, &c, msg, sizeof msg),
			 JSCHED_ECONNECT);
	assert_null(c);
	assert_non_null(strstr(msg, "/nonexistent/dir/jschedd.sock"));
	assert_non_null(strstr(msg, "No such file"));
	char longpath[300];
	memset(longpath, 'x', sizeof longpath - 1);
	longpath[0] = '/';
	longpath[sizeof longpath - 1] = '\0';
	assert_int_equal(jsched_connect_error(longpath, NULL, &c, msg, sizeof msg), JSCHED_ECONNECT);
	assert_non_null(strstr(msg, "too long"));
}

/* A connect while the listener's backlog is full: the library's socket is non-blocking
 * from the start, so its connect is refused with EAGAIN at once; it connects again
 * blocking, as a blocking socket's connect would have waited, and the connection it
 * makes is non-blocking. */
struct backlog_call {
	const char *path;
	_Atomic pid_t tid;
	int rc;
	struct jsched_conn *conn;
};

static void *backlog_connect(void *arg)
{
	struct backlog_call *b = arg;
	char msg[256];

	atomic_store(&b->tid, (pid_t)syscall(SYS_gettid));
	b->rc = jsched_connect_deferred(b->path, "tester", &b->conn, msg, sizeof msg);
	return NULL;
}

/* blocked_in_connect: whether thread tid sleeps in connect(2) (its /proc syscall file's
 * first number, its state S). */
static bool blocked_in_connect(pid_t tid)
{
	char path[64], buf[256], state = 0;
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) != NULL && strrchr(buf, ')') != NULL)
		state = strrchr(buf, ')')[2];
	fclose(f);
	return nr == SYS_connect && state == 'S';
}

static void test_connect_backlog_full(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_conn-XXXXXX", path[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l, fill[16], nfill = 0;
	struct backlog_call b = { .path = path, .rc = 1 };
	pthread_t th;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/s", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	assert_true((l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(l, 0), 0);
	/* Fill the backlog: connects that nobody accepts, until one is refused. */
	for (;;) {
		assert_true(nfill < 16);
		fill[nfill] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(fill[nfill] >= 0);
		if (connect(fill[nfill], (struct sockaddr *)&sa, sizeof sa) < 0) {
			assert_int_equal(errno, EAGAIN);
			close(fill[nfill]);
			break;
		}
		nfill++;
	}
	assert_true(nfill >= 1);
	atomic_init(&b.tid, 0);
	assert_int_equal(pthread_create(&th, NULL, backlog_connect, &b), 0);
	/* Until the call waits in its blocking connect (10 s at most). */
	for (int i = 0; !(atomic_load(&b.tid) && blocked_in_connect(atomic_load(&b.tid))); i++) {
		struct timespec ms = { 0, 1000000 };

		assert_true(i < 10000);
		nanosleep(&ms, NULL);
	}
	int a = accept(l, NULL, NULL); /* room in the backlog: the call's connect is made */
	assert_true(a >= 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.rc, 0);
	assert_non_null(b.conn);
	assert_true(fcntl(jsched_fd(b.conn), F_GETFL) & O_NONBLOCK);
	jsched_close(b.conn);
	close(a);
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(l);
	unlink(path);
	rmdir(dir);
}

static void test_submit(void **state)
{
	struct fixture *f = *state;
	struct jsched_spec *spec;
	assert_int_equal(jsched_spec_call("echo", "{\"x\": 1}", &spec), 0);
	assert_int_equal(jsched_spec_set_priority(spec, JSCHED_PRIORITY_HIGH), 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": true, \"job\": 101}"), 0);
	uint64_t id = 0;
	assert_int_equal(jsched_submit(f->conn, spec, &id), 0);
	assert_int_equal(id, 101);
	assert_null(jsched_error_code(f->conn));

	json_t *req = expect_request(f, "submit", 2);
	json_t *job = json_object_get(req, "job");
	assert_string_equal(json_string_value(json_object_get(job, "fn")), "echo");
	assert_string_equal(json_string_value(json_object_get(job, "priority")), "high");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "args"), "x")), 1);
	/* The daemon's strict parser accepts what the library sent. */
	struct jp_request r;
	struct jp_submit s;
	struct jp_err err;
	assert_int_equal(jp_request_parse(req, NULL, &r, &err), 0);
	assert_int_equal(jp_submit_parse(&r, NULL, &s, &err), 0);
	assert_true(s.single);
	jp_submit_clear(&s);
	json_decref(req);

	/* A batch: refs and a dependency between them, ids in spec order. */
	struct jsched_spec *a, *b;
	const char *argv[] = { "true", NULL };
	assert_int_equal(jsched_spec_exec(argv, &a), 0);
	assert_int_equal(jsched_spec_set_ref(a, "first"), 0);
	assert_int_equal(jsched_spec_exec(argv, &b), 0);
	assert_int_equal(jsched_spec_add_dep_ref(b, JSCHED_GATE_AFTER, "first", JSCHED_DEP_ANY), 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": true, \"jobs\": [7, 8], \"refs\": {\"first\": 7}}"), 0);
	const struct jsched_spec *specs[] = { a, b };
	uint64_t ids[2];
	assert_int_equal(jsched_submit_batch(f->conn, specs, 2, ids), 0);
	assert_int_equal(ids[0], 7);
	assert_int_equal(ids[1], 8);
	req = expect_request(f, "submit", 3);
	assert_int_equal(jp_request_parse(req, NULL, &r, &err), 0);
	assert_int_equal(jp_submit_parse(&r, NULL, &s, &err), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.specs[1].n_after, 1);
	assert_int_equal(s.specs[1].after[0].index, 0);
	assert_int_equal(s.specs[1].after[0].on, JP_ON_ANY);
	jp_submit_clear(&s);
	json_decref(req);
	jsched_spec_free(a);
	jsched_spec_free(b);
	jsched_spec_free(spec);
}

static void test_error_reply(void **state)
{
	struct fixture *f = *state;
	const char *argv[] = { "make", NULL };
	struct jsched_spec *spec;
	assert_int_equal(jsched_spec_exec(argv, &spec), 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": false, \"error\": {\"code\": \"bad_request\", "
					     "\"message\": \"argv must be a non-empty array\", \"field\": \"job.argv\"}}"),
			 0);
	uint64_t id = 0;
	assert_int_equal(jsched_submit(f->conn, spec, &id), JSCHED_EBAD_REQUEST);
	assert_string_equal(jsched_error_code(f->conn), "bad_request");
	assert_string_equal(jsched_error_message(f->conn), "argv must be a non-empty array");
	assert_string_equal(jsched_error_field(f->conn), "job.argv");
	assert_non_null(strstr(jsched_error_json(f->conn), "\"field\""));
	json_decref(expect_request(f, "submit", 2));

	/* A code this build does not know: a failure, its name kept. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": false, \"error\": {\"code\": \"from_the_future\", "
					     "\"message\": \"new\"}}"),
			 0);
	assert_int_equal(jsched_submit(f->conn, spec, &id), JSCHED_EPROTOCOL);
	assert_string_equal(jsched_error_code(f->conn), "from_the_future");
	assert_null(jsched_error_field(f->conn));
	json_decref(expect_request(f, "submit", 3));

	/* The next success clears the error. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": true}"), 0);
	assert_int_equal(jsched_ping(f->conn), 0);
	assert_null(jsched_error_code(f->conn));
	json_decref(expect_request(f, "ping", 4));
	jsched_spec_free(spec);

	/* Bad arguments never reach the wire. */
	struct jsched_result *res;
	assert_int_equal(jsched_status(f->conn, 0, &res), JSCHED_EINVAL);
	assert_null(res);
	assert_non_null(jsched_error_message(f->conn));
}

static void test_status_and_wait(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(peer_send(&f->peer,
				   "{\"id\": 2, \"ok\": true, \"job\": {\"job\": 42, \"name\": \"unit tests\", "
				   "\"client\": \"ana\", \"uid\": 1000, \"kind\": \"exec\", \"priority\": \"high\", "
				   "\"state\": \"failed\", \"submitted_ms\": 1000, \"started_ms\": 1005, "
				   "\"finished_ms\": 2000, \"exit_code\": 2, \"cause\": \"exit\", "
				   "\"reason\": \"exited with status 2\", \"new_member\": [1]}}"),
			 0);
	struct jsched_result *r;
	assert_int_equal(jsched_status(f->conn, 42, &r), 0);
	assert_int_equal(r->id, 42);
	assert_string_equal(r->name, "unit tests");
	assert_string_equal(r->client, "ana");
	assert_int_equal(r->uid, 1000);
	assert_int_equal(r->state, JSCHED_STATE_FAILED);
	assert_int_equal(r->exit_code, 2);
	assert_int_equal(r->signal, 0);
	assert_int_equal(r->started_ms, 1005);
	assert_string_equal(r->cause, "exit");
	assert_null(r->value_json);
	jsched_result_free(r);
	json_t *req = expect_request(f, "status", 2);
	assert_int_equal(json_integer_value(json_object_get(req, "job")), 42);
	json_decref(req);

	/* A state this build does not know is kept by name. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": true, \"job\": {\"job\": 5, \"state\": \"paused\"}}"), 0);
	assert_int_equal(jsched_status(f->conn, 5, &r), 0);
	assert_int_equal(r->state, JSCHED_STATE_UNKNOWN);
	assert_string_equal(r->state_name, "paused");
	jsched_result_free(r);
	json_decref(expect_request(f, "status", 3));

	/* wait: success with a value; then a timeout that carries the records. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": true, \"job\": {\"job\": 6, \"kind\": \"call\", "
					     "\"state\": \"succeeded\", \"value\": {\"x\": 1}}}"),
			 0);
	assert_int_equal(jsched_wait(f->conn, 6, -1, &r), 0);
	assert_string_equal(r->value_json, "{\"x\":1}");
	jsched_result_free(r);
	req = expect_request(f, "wait", 4);
	assert_null(json_object_get(req, "timeout_ms"));
	assert_null(json_object_get(req, "mode"));
	json_decref(req);

	assert_int_equal(peer_send(&f->peer, "{\"id\": 5, \"ok\": false, \"error\": {\"code\": \"timeout\", "
					     "\"message\": \"still running\", \"jobs\": [{\"job\": 6, \"state\": \"running\"}, "
					     "{\"job\": 7, \"state\": \"queued\"}]}}"),
			 0);
	uint64_t ids[] = { 6, 7 };
	struct jsched_results *l;
	assert_int_equal(jsched_wait_many(f->conn, ids, 2, JSCHED_WAIT_ANY, 250, &l), JSCHED_ETIMEOUT);
	assert_non_null(l);
	assert_int_equal(l->count, 2);
	assert_int_equal(l->items[0]->state, JSCHED_STATE_RUNNING);
	assert_int_equal(l->items[1]->state, JSCHED_STATE_QUEUED);
	jsched_results_free(l);
	req = expect_request(f, "wait", 5);
	assert_string_equal(json_string_value(json_object_get(req, "mode")), "any");
	assert_int_equal(json_integer_value(json_object_get(req, "timeout_ms")), 250);
	assert_int_equal(json_array_size(json_object_get(req, "jobs")), 2);
	json_decref(req);

	/* wait_many counts the final ones. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 6, \"ok\": true, \"jobs\": [{\"job\": 6, \"state\": "
					     "\"succeeded\"}, {\"job\": 7, \"state\": \"running\"}]}"),
			 0);
	assert_int_equal(jsched_wait_many(f->conn, ids, 2, JSCHED_WAIT_ANY, -1, &l), 1);
	jsched_results_free(l);
	json_decref(expect_request(f, "wait", 6));
}

static void test_cancel_list_output_metrics(void **state)
{
	struct fixture *f = *state;
	uint64_t ids[] = { 102, 103, 90 };
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": true, \"jobs\": [{\"job\": 102, \"state\": "
					     "\"cancelled\"}, {\"job\": 103, \"state\": \"running\", \"cancelling\": true}, "
					     "{\"job\": 90, \"state\": \"succeeded\"}]}"),
			 0);
	struct jsched_results *l;
	assert_int_equal(jsched_cancel_many(f->conn, ids, 3, &l), 0);
	assert_int_equal(l->count, 3);
	assert_false(l->items[0]->cancelling);
	assert_true(l->items[1]->cancelling);
	jsched_results_free(l);
	json_decref(expect_request(f, "cancel", 2));

	/* list pages through "more" with after_job (two requests in one call: a script). */
	static const char *const pages[] = {
		"{\"id\": %d, \"ok\": true, \"more\": true, \"jobs\": [{\"job\": 1, \"state\": \"queued\"}, "
		"{\"job\": 2, \"state\": \"queued\"}]}",
		"{\"id\": %d, \"ok\": true, \"more\": false, \"jobs\": [{\"job\": 3, \"state\": \"running\"}]}",
	};
	struct script script;
	assert_int_equal(script_start(&script, &f->peer, pages, 2), 0);
	unsigned mask = (1u << JSCHED_STATE_QUEUED) | (1u << JSCHED_STATE_RUNNING);
	assert_int_equal(jsched_list(f->conn, mask, NULL, false, &l), 0);
	assert_int_equal(script_join(&script), 2);
	assert_int_equal(l->count, 3);
	assert_int_equal(l->items[2]->id, 3);
	jsched_results_free(l);
	json_t *req = script.requests[0];
	assert_string_equal(json_string_value(json_object_get(req, "op")), "list");
	assert_null(json_object_get(req, "after_job"));
	json_t *states = json_object_get(req, "states");
	assert_int_equal(json_array_size(states), 2);
	assert_string_equal(json_string_value(json_array_get(states, 0)), "queued");
	assert_int_equal(json_integer_value(json_object_get(script.requests[1], "after_job")), 2);
	script_free(&script);

	/* Ids continue from 5. */
	/* output: base64 decoded, flags read. "aGVsbG8K" is "hello\n". */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 5, \"ok\": true, \"complete\": false, \"stdout\": {\"data\": "
					     "\"aGVsbG8K\", \"bytes\": 6, \"truncated\": true}, \"stderr\": {\"data\": \"\", "
					     "\"bytes\": 0, \"truncated\": false}}"),
			 0);
	struct jsched_output *o;
	assert_int_equal(jsched_output(f->conn, 9, &o), 0);
	assert_int_equal(o->out_len, 6);
	assert_memory_equal(o->out, "hello\n", 6);
	assert_true(o->out_truncated);
	assert_int_equal(o->err_len, 0);
	assert_false(o->complete);
	jsched_output_free(o);
	json_decref(expect_request(f, "output", 5));

	assert_int_equal(peer_send(&f->peer, "{\"id\": 6, \"ok\": true, \"metrics\": {\"uptime_ms\": 5}}"), 0);
	char *m;
	assert_int_equal(jsched_metrics(f->conn, &m), 0);
	assert_string_equal(m, "{\"uptime_ms\":5}");
	jsched_free(m);
	json_decref(expect_request(f, "metrics", 6));

	assert_int_equal(peer_send(&f->peer, "{\"id\": 7, \"ok\": true, \"cancelled\": 4, \"cancelling\": 1}"), 0);
	uint64_t cancelled = 0, cancelling = 0;
	assert_int_equal(jsched_drain(f->conn, "batch", true, &cancelled, &cancelling), 0);
	assert_int_equal(cancelled, 4);
	assert_int_equal(cancelling, 1);
	req = expect_request(f, "drain", 7);
	assert_string_equal(json_string_value(json_object_get(req, "client")), "batch");
	assert_true(json_is_true(json_object_get(req, "running")));
	json_decref(req);

	assert_int_equal(peer_send(&f->peer, "{\"id\": 8, \"ok\": true, \"client\": {\"name\": \"batch\", "
					     "\"weight\": 3}}"),
			 0);
	char *reply;
	assert_int_equal(jsched_admin_set_client(f->conn, "batch", 3, 0, "drop_oldest", &reply), 0);
	assert_non_null(strstr(reply, "\"weight\":3"));
	jsched_free(reply);
	req = expect_request(f, "set_client", 8);
	assert_null(json_object_get(req, "max_queued"));
	assert_string_equal(json_string_value(json_object_get(req, "overflow")), "drop_oldest");
	json_decref(req);

	assert_int_equal(peer_send(&f->peer, "{\"id\": 9, \"ok\": true}"), 0);
	assert_int_equal(jsched_admin_shutdown(f->conn, true), 0);
	req = expect_request(f, "shutdown", 9);
	assert_string_equal(json_string_value(json_object_get(req, "mode")), "immediate");
	json_decref(req);

	assert_int_equal(peer_send(&f->peer, "{\"id\": 10, \"ok\": true, \"pong\": 1}"), 0);
	assert_int_equal(jsched_request(f->conn, "{\"op\": \"ping\", \"id\": 99}", &reply), 0);
	assert_non_null(strstr(reply, "\"pong\":1"));
	jsched_free(reply);
	json_decref(expect_request(f, "ping", 10)); /* the library's id, not the text's */
	assert_int_equal(jsched_request(f->conn, "[1]", NULL), JSCHED_EINVAL);
}

static void test_events(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": true, \"seq\": 117, \"instance\": \"111-22\"}"), 0);
	uint64_t last = 0;
	assert_int_equal(jsched_watch(f->conn, 100, NULL, &last), 0);
	assert_int_equal(last, 117);
	json_t *req = expect_request(f, "watch", 2);
	assert_int_equal(json_integer_value(json_object_get(req, "from_seq")), 100);
	assert_string_equal(json_string_value(json_object_get(req, "instance")), "111-22");
	json_decref(req);

	/* Events that come before a reply wait for jsched_next_event, in order. */
	assert_int_equal(peer_send(&f->peer, "{\"event\": \"job\", \"seq\": 118, \"job\": {\"job\": 4, \"state\": "
					     "\"running\"}}"),
			 0);
	assert_int_equal(peer_send(&f->peer, "{\"event\": \"job\", \"seq\": 119, \"job\": {\"job\": 4, \"state\": "
					     "\"succeeded\"}}"),
			 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": true}"), 0);
	assert_int_equal(jsched_ping(f->conn), 0);
	json_decref(expect_request(f, "ping", 3));
	struct jsched_event *ev;
	assert_int_equal(jsched_next_event(f->conn, 0, &ev), 0);
	assert_string_equal(ev->type, "job");
	assert_int_equal(ev->seq, 118);
	assert_int_equal(ev->job->state, JSCHED_STATE_RUNNING);
	jsched_event_free(ev);
	assert_int_equal(jsched_next_event(f->conn, 0, &ev), 0);
	assert_int_equal(ev->seq, 119);
	jsched_event_free(ev);
	assert_int_equal(jsched_next_event(f->conn, 0, &ev), JSCHED_ETIMEOUT);
	assert_null(ev);

	/* One that arrives while jsched_next_event waits; then the shutdown event. */
	assert_int_equal(peer_send(&f->peer, "{\"event\": \"shutdown\", \"mode\": \"graceful\"}"), 0);
	assert_int_equal(jsched_next_event(f->conn, 5000, &ev), 0);
	assert_string_equal(ev->type, "shutdown");
	assert_string_equal(ev->mode, "graceful");
	assert_null(ev->job);
	jsched_event_free(ev);

	/* events_lost: the error's extra members are there. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": false, \"error\": {\"code\": \"events_lost\", "
					     "\"message\": \"gone\", \"oldest_seq\": 900, \"instance\": \"111-22\"}}"),
			 0);
	assert_int_equal(jsched_watch(f->conn, 5, "111-22", NULL), JSCHED_EEVENTS_LOST);
	assert_non_null(strstr(jsched_error_json(f->conn), "\"oldest_seq\":900"));
	json_decref(expect_request(f, "watch", 4));
}

/* ---- event-loop mode ------------------------------------------------------------------- */

struct log {
	int calls;
	int order[8];
	int status[8];
	uint64_t first_id[8];
	int events;
	uint64_t event_seq[8];
	struct jsched_conn *conn;
	int sync_status; /* what a synchronous call from a callback returned */
	int process_status; /* and jsched_process */
};

static void reply_cb(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	struct log *log = arg;
	int n = log->calls++;
	assert_true(n < 8);
	log->status[n] = status;
	struct jsched_results *l;
	const uint64_t *ids;
	size_t count;
	if (status == 0 && jsched_reply_results(reply, &l) == 0) {
		log->first_id[n] = l->items[0]->id;
		jsched_results_free(l);
	} else if (status == 0 && jsched_reply_ids(reply, &ids, &count) == 0) {
		log->first_id[n] = ids[0];
	}
	if (status == 0)
		assert_non_null(jsched_reply_json(reply));
	log->sync_status = jsched_ping(conn);
	log->process_status = jsched_process(conn);
}

static void event_cb(struct jsched_conn *conn, struct jsched_event *ev, void *arg)
{
	(void)conn;
	struct log *log = arg;
	assert_true(log->events < 8);
	log->event_seq[log->events++] = ev->seq;
	jsched_event_free(ev);
}

/* Run jsched_process until `calls` callbacks have run (bounded in rounds and by poll). */
static void process_until(struct fixture *f, struct log *log, int calls)
{
	for (int rounds = 0; log->calls < calls && rounds < 100; rounds++) {
		struct pollfd pfd = { .fd = jsched_fd(f->conn),
				      .events = (short)(POLLIN | (jsched_want_write(f->conn) ? POLLOUT : 0)) };
		assert_true(poll(&pfd, 1, PEER_TIMEOUT_MS) > 0);
		if (jsched_process(f->conn) < 0)
			break;
	}
}

static void test_async_out_of_order(void **state)
{
	struct fixture *f = *state;
	struct log log = { .conn = f->conn };
	jsched_set_event_cb(f->conn, event_cb, &log);
	uint64_t a = 10, b = 20;
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), 2);
	assert_int_equal(jsched_wait_async(f->conn, &b, 1, JSCHED_WAIT_ALL, -1, reply_cb, &log), 3);
	const char *argv[] = { "true", NULL };
	struct jsched_spec *spec;
	assert_int_equal(jsched_spec_exec(argv, &spec), 0);
	assert_int_equal(jsched_submit_async(f->conn, spec, reply_cb, &log), 4);
	jsched_spec_free(spec);
	/* All three are on the wire before any reply. */
	json_decref(expect_request(f, "status", 2));
	json_decref(expect_request(f, "wait", 3));
	json_decref(expect_request(f, "submit", 4));
	assert_int_equal(log.calls, 0);

	/* Replies in another order, an event among them, and all in one write. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": true, \"job\": 30}"), 0);
	assert_int_equal(peer_send(&f->peer, "{\"event\": \"job\", \"seq\": 1, \"job\": {\"job\": 20, \"state\": "
					     "\"succeeded\"}}"),
			 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": true, \"jobs\": [{\"job\": 10, \"state\": "
					     "\"queued\"}]}"),
			 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": false, \"error\": {\"code\": \"no_such_job\", "
					     "\"message\": \"no job 20\"}}"),
			 0);
	process_until(f, &log, 3);
	assert_int_equal(log.calls, 3);
	assert_int_equal(log.status[0], 0);
	assert_int_equal(log.first_id[0], 30); /* the submit's id */
	assert_int_equal(log.status[1], 0);
	assert_int_equal(log.first_id[1], 10);
	assert_int_equal(log.status[2], JSCHED_ENO_SUCH_JOB);
	assert_int_equal(log.events, 1);
	assert_int_equal(log.event_seq[0], 1);
	/* A synchronous call or jsched_process from a callback is refused, not re-entered. */
	assert_int_equal(log.sync_status, JSCHED_EINVAL);
	assert_int_equal(log.process_status, JSCHED_EINVAL);
	/* With an event callback set, jsched_next_event is refused. */
	struct jsched_event *ev;
	assert_int_equal(jsched_next_event(f->conn, 0, &ev), JSCHED_EINVAL);
}

/* A reply split across writes, one byte at a time. */
static void test_partial_frames(void **state)
{
	struct fixture *f = *state;
	struct log log = { .conn = f->conn };
	uint64_t a = 10;
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), 2);
	json_decref(expect_request(f, "status", 2));
	json_t *msg = json_loads("{\"id\": 2, \"ok\": true, \"job\": {\"job\": 10, \"state\": \"queued\"}}", 0, NULL);
	char *bytes;
	size_t len;
	assert_int_equal(jp_frame_encode(msg, &bytes, &len), 0);
	json_decref(msg);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(log.calls, 0);
		assert_int_equal(peer_write(&f->peer, bytes + i, 1), 0);
		assert_int_equal(jsched_process(f->conn), 0);
	}
	free(bytes);
	assert_int_equal(log.calls, 1);
	assert_int_equal(log.first_id[0], 10);
}

static void test_disconnect(void **state)
{
	struct fixture *f = *state;
	struct log log = { .conn = f->conn };
	uint64_t a = 10;
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), 2);
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), 3);
	json_decref(expect_request(f, "status", 2));
	/* Half a frame, then the daemon hangs up. */
	assert_int_equal(peer_write(&f->peer, "\0\0\0\x20{\"id\"", 9), 0);
	close(f->peer.fd);
	f->peer.fd = -1;
	process_until(f, &log, 2);
	assert_int_equal(log.calls, 2);
	assert_int_equal(log.status[0], JSCHED_EDISCONNECTED);
	assert_int_equal(log.status[1], JSCHED_EDISCONNECTED);
	assert_int_equal(jsched_process(f->conn), JSCHED_EDISCONNECTED);
	assert_non_null(strstr(jsched_error_message(f->conn), "middle"));
	/* Everything after fails at once, and no callback runs. */
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), JSCHED_EDISCONNECTED);
	assert_int_equal(jsched_ping(f->conn), JSCHED_EDISCONNECTED);
	assert_int_equal(log.calls, 2);
}

/* A request written to a daemon that has gone: its callback runs from the next
 * jsched_process, never inside the call that queued it. */
static void test_write_after_hangup(void **state)
{
	struct fixture *f = *state;
	struct log log = { .conn = f->conn };
	close(f->peer.fd);
	f->peer.fd = -1;
	uint64_t a = 10;
	int id = jsched_status_async(f->conn, &a, 1, reply_cb, &log);
	assert_true(id > 0);
	assert_int_equal(log.calls, 0);
	assert_int_equal(jsched_process(f->conn), JSCHED_EDISCONNECTED);
	assert_int_equal(log.calls, 1);
	assert_int_equal(log.status[0], JSCHED_EDISCONNECTED);
	assert_int_equal(jsched_process(f->conn), JSCHED_EDISCONNECTED);
	assert_int_equal(log.calls, 1);
}

static void test_oversized_frame(void **state)
{
	struct fixture *f = *state;
	struct log log = { .conn = f->conn };
	uint64_t a = 10;
	assert_int_equal(jsched_status_async(f->conn, &a, 1, reply_cb, &log), 2);
	/* A header announcing 2 GiB: refused from the header, nothing allocated. */
	assert_int_equal(peer_write(&f->peer, "\x7f\xff\xff\xff", 4), 0);
	process_until(f, &log, 1);
	assert_int_equal(log.status[0], JSCHED_EPROTOCOL);
	assert_int_equal(jsched_ping(f->conn), JSCHED_EPROTOCOL);
}

/* poll, counted: the library's calls come to this program's definition, and go on to the
 * kernel through ppoll (the scripted peers' threads poll too: an atomic count). */
static _Atomic size_t polls;

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000L };

	polls++;
	return ppoll(fds, n, timeout < 0 ? NULL : &ts, NULL);
}

/* ping_polls: a ping answered before it is made (its reply written first); the polls it
 * made. */
static size_t ping_polls(struct fixture *f, int id)
{
	char reply[64];
	size_t before, n;

	snprintf(reply, sizeof(reply), "{\"id\": %d, \"ok\": true}", id);
	assert_int_equal(peer_send(&f->peer, reply), 0);
	before = polls; /* the peer polls too */
	assert_int_equal(jsched_ping(f->conn), 0);
	n = polls - before;
	json_decref(expect_request(f, "ping", id));
	return n;
}

/* A synchronous call reads what has arrived before it polls: a reply already there takes
 * no poll.  After a call whose reply was not there at once (one that times out here), the
 * next polls first, then one reads first again; two misses in a row, the next two poll
 * first. */
static void test_read_before_poll(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(ping_polls(f, 2), 0);
	assert_int_equal(ping_polls(f, 3), 0);
	jsched_set_timeout(f->conn, 1);
	assert_int_equal(jsched_ping(f->conn), JSCHED_ETIMEOUT); /* a miss */
	json_decref(expect_request(f, "ping", 4));
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": true}"), 0); /* late: dropped */
	jsched_set_timeout(f->conn, -1);
	assert_int_equal(ping_polls(f, 5), 1);
	assert_int_equal(ping_polls(f, 6), 0);
	jsched_set_timeout(f->conn, 1);
	assert_int_equal(jsched_ping(f->conn), JSCHED_ETIMEOUT); /* misses in a row */
	json_decref(expect_request(f, "ping", 7));
	assert_int_equal(jsched_ping(f->conn), JSCHED_ETIMEOUT); /* polled first: no try */
	json_decref(expect_request(f, "ping", 8));
	assert_int_equal(jsched_ping(f->conn), JSCHED_ETIMEOUT);
	json_decref(expect_request(f, "ping", 9));
	jsched_set_timeout(f->conn, -1);
	assert_int_equal(ping_polls(f, 10), 1);
	assert_int_equal(ping_polls(f, 11), 1);
	assert_int_equal(ping_polls(f, 12), 0);
}

/* jsched_set_timeout: a call whose reply does not come returns JSCHED_ETIMEOUT; the late
 * reply is dropped and the connection goes on.  (The peer answers only after the call has
 * given up, so no timing decides the outcome.) */
static void test_reply_timeout(void **state)
{
	struct fixture *f = *state;
	jsched_set_timeout(f->conn, 20);
	assert_int_equal(jsched_ping(f->conn), JSCHED_ETIMEOUT);
	assert_non_null(strstr(jsched_error_message(f->conn), "within 20 ms"));
	json_decref(expect_request(f, "ping", 2));
	/* A wait gets its own time on top; with the daemon silent it times out too, with no
	 * records (the daemon's timeout would have sent them). */
	struct jsched_result *r = (struct jsched_result *)1;
	assert_int_equal(jsched_wait(f->conn, 5, 10, &r), JSCHED_ETIMEOUT);
	assert_null(r);
	json_decref(expect_request(f, "wait", 3));
	/* The late replies arrive; the next call gets its own. */
	assert_int_equal(peer_send(&f->peer, "{\"id\": 2, \"ok\": true}"), 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 3, \"ok\": true, \"job\": {\"job\": 5, \"state\": \"queued\"}}"), 0);
	assert_int_equal(peer_send(&f->peer, "{\"id\": 4, \"ok\": true, \"job\": 77}"), 0);
	jsched_set_timeout(f->conn, -1);
	struct jsched_spec *spec;
	assert_int_equal(jsched_spec_call("noop", NULL, &spec), 0);
	uint64_t id = 0;
	assert_int_equal(jsched_submit(f->conn, spec, &id), 0);
	assert_int_equal(id, 77);
	jsched_spec_free(spec);
	json_decref(expect_request(f, "submit", 4));
}

static void test_reply_to_unknown_id(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(peer_send(&f->peer, "{\"id\": 77, \"ok\": true}"), 0);
	assert_int_equal(jsched_ping(f->conn), JSCHED_EPROTOCOL);
	assert_non_null(strstr(jsched_error_message(f->conn), "77"));
}

static void test_close_runs_callbacks(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct peer p;
	peer_init(&p, sv[1]);
	assert_int_equal(peer_send(&p, peer_hello_reply(1)), 0);
	struct jsched_conn *c;
	assert_int_equal(jsched_connect_fd(sv[0], NULL, &c), 0);
	struct log log = { .conn = c };
	uint64_t a = 1;
	assert_true(jsched_status_async(c, &a, 1, reply_cb, &log) > 0);
	assert_true(jsched_cancel_async(c, &a, 1, reply_cb, &log) > 0);
	jsched_close(c);
	assert_int_equal(log.calls, 2);
	assert_int_equal(log.status[0], JSCHED_EDISCONNECTED);
	assert_int_equal(log.status[1], JSCHED_EDISCONNECTED);
	peer_free(&p);
}

/* Many requests in flight, answered in reverse: each callback once, with its own reply. */
struct many {
	int calls;
	int bad;
};

struct many_arg {
	struct many *m;
	uint64_t job;
};

static void many_cb(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	(void)conn;
	struct many_arg *a = arg;
	struct jsched_results *l;
	a->m->calls++;
	if (status != 0 || jsched_reply_results(reply, &l) != 0) {
		a->m->bad++;
		return;
	}
	if (l->count != 1 || l->items[0]->id != a->job)
		a->m->bad++;
	a->job = 0; /* a second call with the same arg would count as bad */
	jsched_results_free(l);
}

static void test_many_in_flight(void **state)
{
	struct fixture *f = *state;
	enum { N = 200 };
	struct many m = { 0, 0 };
	struct many_arg args[N];
	for (int i = 0; i < N; i++) {
		args[i] = (struct many_arg){ &m, (uint64_t)(i + 1) };
		assert_int_equal(jsched_status_async(f->conn, &args[i].job, 1, many_cb, &args[i]), i + 2);
	}
	for (int i = 0; i < N; i++)
		json_decref(expect_request(f, "status", i + 2));
	for (int i = N - 1; i >= 0; i--) {
		char buf[128];
		snprintf(buf, sizeof buf, "{\"id\": %d, \"ok\": true, \"job\": {\"job\": %d, \"state\": \"queued\"}}",
			 i + 2, i + 1);
		assert_int_equal(peer_send(&f->peer, buf), 0);
	}
	for (int rounds = 0; m.calls < N && rounds < 1000; rounds++) {
		struct pollfd pfd = { .fd = jsched_fd(f->conn), .events = POLLIN };
		assert_true(poll(&pfd, 1, PEER_TIMEOUT_MS) > 0);
		assert_int_equal(jsched_process(f->conn), 0);
	}
	assert_int_equal(m.calls, N);
	assert_int_equal(m.bad, 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello, setup, teardown),
		cmocka_unit_test(test_hello_request),
		cmocka_unit_test(test_hello_failures),
		cmocka_unit_test(test_connect_path_errors),
		cmocka_unit_test(test_connect_backlog_full),
		cmocka_unit_test_setup_teardown(test_submit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_and_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_list_output_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_after_hangup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_before_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_to_unknown_id, setup, teardown),
		cmocka_unit_test(test_close_runs_callbacks),
		cmocka_unit_test_setup_teardown(test_many_in_flight, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
