/* tests/fuzz/fuzz_daemon.c: fuzz target of the daemon's request handling, in process.
 *
 * The whole of jschedd (main.c compiled as jschedd_main) runs in a thread of the fuzzing
 * process, started once for every input, on a socket in a temp dir, so libFuzzer sees the
 * coverage of the server, the sessions and every operation, not only the codec's.  Input:
 * lines, each one frame payload (at most 64 lines), sent in one write on the harness's
 * session (kept from input to input while it lasts; a new one's hello goes in the same
 * write), or on a fresh connection if the first line is itself a hello (sent alone: it may
 * be refused).  Lines are skipped (not sent) that would stop the daemon (`shutdown`), start
 * commands (an `exec` spec: processes are not for fuzzing), or reuse an id already used in
 * the same input or reserved by the harness (replies are matched by id).  Between inputs the
 * daemon is brought back to rest, without sleeping: every job that is not final is
 * cancelled and the harness waits (a `wait`) for those that were running; the daemon and the
 * harness's client are resumed if the input paused them.  Invariants:
 *   - every frame the daemon sends is valid JSON (UTF-8 included, no duplicate members), an
 *     object, at most reply_frame_bytes, and a reply or an event as the client library reads
 *     them (jp_incoming_parse); an error carries a known code and a message, and is not
 *     `internal` (a reply the daemon failed to build);
 *   - a reply answers exactly one request sent, with the id the codec reads from it (null
 *     when the frame or, before hello, the request could not be read);
 *   - once the daemon has answered a `ping` sent after the input, every request before it is
 *     answered, except `wait`s and `submit`s held by the `block` overflow strategy;
 *   - those are answered too once every job is final: the harness cancels every non-final
 *     job (as admin, from a second connection) until none is left, within 10 s;
 *   - a connection the daemon closes was closed right after a reply whose code says it
 *     closes (bad_frame, frame_too_large, handshake_required, version_mismatch,
 *     shutting_down), and nothing after that request was answered.
 * At exit the daemon is shut down and its thread joined.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/fuzz/fuzz.h"

int jschedd_main(int argc, char **argv);

#define MAX_LINES 64
#define REPLY_FRAME_MAX (16u << 20)
#define SENTINEL_ID 9007199254740991LL
#define UNWATCH_ID 9007199254740990LL
#define HELLO_ID 9007199254740989LL
#define SETTLE_MS 10000

static char dir[64], sock_path[128], conf_path[128];
static pthread_t daemon_thread;
static int control = -1;
static bool started;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *daemon_run(void *arg)
{
	char *argv[] = {"jschedd", "-c", conf_path, NULL};

	(void)arg;
	jschedd_main(3, argv);
	return NULL;
}

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	check(fd >= 0);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_bytes(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the daemon closed: what it answered is judged on reading */
		b += w;
		n -= (size_t)w;
	}
}

static void send_payload(int fd, const void *p, size_t n)
{
	uint32_t len = htonl((uint32_t)n);

	send_bytes(fd, &len, 4);
	send_bytes(fd, p, n);
}

/* The frames of one input, sent in one write (as a client that pipelines would). */
static uint8_t *outq;
static size_t outq_n, outq_cap;

static void queue_payload(const void *p, size_t n)
{
	uint32_t len = htonl((uint32_t)n);

	if (outq_cap - outq_n < n + 4) {
		outq_cap = 2 * (outq_n + n + 4);
		outq = realloc(outq, outq_cap);
		check(outq != NULL);
	}
	memcpy(outq + outq_n, &len, 4);
	memcpy(outq + outq_n + 4, p, n);
	outq_n += n + 4;
}

static void send_queued(int fd)
{
	send_bytes(fd, outq, outq_n);
	outq_n = 0;
}

/* read_exact: n bytes, waiting at most until `deadline` (now_ms); 1, 0 at end of stream,
 * -1 when the time ran out. */
static int read_exact(int fd, void *p, size_t n, uint64_t deadline)
{
	char *b = p;

	while (n > 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ms();
		ssize_t r;

		if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) == 0)
			return -1;
		r = recv(fd, b, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		b += r;
		n -= (size_t)r;
	}
	return 1;
}

/* read_msg: the next frame, checked (valid JSON object within the reply limit that the
 * client library reads as a reply or an event).  1 with *msg set, 0 at end of stream, -1
 * when the time ran out. */
static int read_msg(int fd, json_t **msg, struct jp_incoming *in, uint64_t deadline)
{
	json_error_t jerr;
	uint32_t len;
	char *buf;
	int rc = read_exact(fd, &len, 4, deadline);

	*msg = NULL;
	if (rc <= 0)
		return rc;
	len = ntohl(len);
	check(len > 0 && len <= REPLY_FRAME_MAX);
	buf = malloc(len);
	check(buf != NULL);
	rc = read_exact(fd, buf, len, deadline + 10000);
	check(rc == 1); /* a frame is never cut short */
	*msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!*msg)
		fprintf(stderr, "invalid JSON from the daemon (%s): %.300s\n", jerr.text, buf);
	free(buf);
	check(*msg != NULL && json_is_object(*msg));
	check(jp_incoming_parse(*msg, in, NULL) == 0);
	if (!in->is_event && !in->ok) {
		const char *code = json_string_value(json_object_get(in->error_obj, "code"));
		const char *known = code ? jp_error_name(jp_error_from_name(code)) : NULL;

		check(known && strcmp(known, code) == 0);
		/* internal: the daemon could not build its reply (send_reply's fallback). */
		if (strcmp(code, "internal") == 0)
			fprintf(stderr, "an internal error: %s\n",
				json_string_value(json_object_get(in->error_obj, "message")));
		check(strcmp(code, "internal") != 0);
		check(json_is_string(json_object_get(in->error_obj, "message")));
	}
	return 1;
}

/* ask: a request on the control connection, its reply (new reference). */
static json_t *ask(const char *req)
{
	struct jp_incoming in;
	json_t *msg;

	send_payload(control, req, strlen(req));
	for (;;) {
		check(read_msg(control, &msg, &in, now_ms() + SETTLE_MS) == 1);
		if (!in.is_event)
			return msg;
		json_decref(msg);
	}
}

static int remove_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 ? 0 : 0;
}

static void stop_daemon(void)
{
	if (!started)
		return;
	json_decref(ask("{\"op\":\"shutdown\",\"id\":1,\"mode\":\"immediate\"}"));
	pthread_join(daemon_thread, NULL);
	close(control);
	nftw(dir, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
	started = false;
}

static void start_daemon(void)
{
	FILE *f;
	json_t *r;

	snprintf(dir, sizeof(dir), "/tmp/jsched-fuzz-XXXXXX");
	check(mkdtemp(dir) != NULL);
	snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/jschedd.json", dir);
	f = fopen(conf_path, "w");
	check(f != NULL);
	/* Small: one worker, few fibers, bounded queues and retention, so that what one
	 * input leaves behind cannot grow without bound over millions of inputs; no journal
	 * (it would be the default directory, shared by every run). */
	fprintf(f, "{\"socket\": \"%s\", \"workers\": 1, \"fibers\": 16, "
		   "\"limits\": {\"queued_jobs\": 4000, \"handshake_ms\": 5000}, "
		   "\"retention\": {\"jobs\": 200, \"events\": 16}, "
		   "\"journal\": {\"sync\": \"off\"}}\n", sock_path);
	fclose(f);
	setenv("JSCHED_LOG", "error", 0);
	signal(SIGPIPE, SIG_IGN);
	check(pthread_create(&daemon_thread, NULL, daemon_run, NULL) == 0);
	for (int i = 0; i < 1000 && control < 0; i++) {
		control = dial();
		if (control < 0)
			usleep(10000);
	}
	check(control >= 0);
	started = true;
	atexit(stop_daemon);
	r = ask("{\"op\":\"hello\",\"id\":0,\"version\":1,\"client\":\"fuzz-control\"}");
	check(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
}

/* A request sent, as the codec reads it. */
struct sent {
	bool null_id;		/* the daemon cannot read its id: the reply's is null */
	int64_t id;
	int op;			/* enum jp_op, or -1 if it does not parse as a request */
	bool answered;
	bool closes;		/* its reply was one after which the daemon closes */
};

/* has_exec: does a submit (parsed) carry an exec spec? */
static bool has_exec(const json_t *msg)
{
	const json_t *job = json_object_get(msg, "job"), *jobs = json_object_get(msg, "jobs"), *s;
	size_t i;

	if (job && json_is_string(json_object_get(job, "kind")) &&
	    strcmp(json_string_value(json_object_get(job, "kind")), "exec") == 0)
		return true;
	json_array_foreach(jobs, i, s) {
		const json_t *k = json_object_get(s, "kind");

		if (json_is_string(k) && strcmp(json_string_value(k), "exec") == 0)
			return true;
	}
	return false;
}

/* classify: what the daemon will make of line (len bytes) on a connection past its hello,
 * in *out.  Returns false if the line must not be sent. */
static bool classify(const uint8_t *line, size_t len, const struct sent *prev, size_t n_prev,
		     struct sent *out)
{
	struct jp_request r;
	struct jp_err err;
	json_t *msg = NULL;
	bool send = true;
	int rc;

	memset(out, 0, sizeof(*out));
	out->null_id = true;
	out->op = -1;
	if (jp_frame_parse(line, len, &msg, &err) < 0)
		return true;
	/* A request the codec refuses is answered with its id if it could be read, but a
	 * frame rule broken always with null. */
	rc = jp_request_parse(msg, NULL, &r, &err);
	if (rc == 0 || (rc != JSCHED_EBAD_FRAME && r.id != JP_ID_NONE)) {
		out->null_id = false;
		out->id = r.id;
	}
	if (rc == 0) {
		out->op = (int)r.op;
		if (r.op == JP_OP_SHUTDOWN || (r.op == JP_OP_SUBMIT && has_exec(msg)))
			send = false;
	}
	json_decref(msg);
	if (!out->null_id &&
	    (out->id == SENTINEL_ID || out->id == UNWATCH_ID || out->id == HELLO_ID))
		send = false;
	for (size_t i = 0; i < n_prev && send && !out->null_id; i++)
		if (!prev[i].null_id && prev[i].id == out->id)
			send = false;
	return send;
}

/* closing_code: does the daemon close the connection after an error with this code? */
static bool closing_code(int code)
{
	return code == JSCHED_EBAD_FRAME || code == JSCHED_EFRAME_TOO_LARGE ||
	       code == JSCHED_EHANDSHAKE_REQUIRED || code == JSCHED_EVERSION_MISMATCH ||
	       code == JSCHED_ESHUTTING_DOWN;
}

/* settle_jobs: cancel every job that is not final, as admin, and wait (a `wait` request,
 * no sleep) until those that were running have ended.  Returns how many were not final
 * (0: nothing left to wait for). */
static size_t settle_jobs(void)
{
	json_t *r = ask("{\"op\":\"list\",\"id\":2,\"all\":true,\"limit\":10000,"
			"\"states\":[\"waiting\",\"queued\",\"running\"]}");
	json_t *jobs = json_object_get(r, "jobs"), *rec;
	size_t n = json_array_size(jobs), i;

	check(json_is_true(json_object_get(r, "ok")));
	if (n > 0) {
		json_t *ids = json_array(), *req, *reply, *stopping = json_array();
		char *text;

		json_array_foreach(jobs, i, rec)
			json_array_append(ids, json_object_get(rec, "job"));
		req = json_pack("{s:s, s:i, s:o}", "op", "cancel", "id", 3, "jobs", ids);
		text = json_dumps(req, JSON_COMPACT);
		reply = ask(text);
		free(text);
		json_decref(req);
		json_array_foreach(json_object_get(reply, "jobs"), i, rec)
			if (json_is_true(json_object_get(rec, "cancelling")))
				json_array_append(stopping, json_object_get(rec, "job"));
		json_decref(reply);
		/* A running job ends when its worker has stopped it: the wait's reply then
		 * (a wait pins what it names, so none is forgotten meanwhile). */
		if (json_array_size(stopping) > 0) {
			req = json_pack("{s:s, s:i, s:O, s:i}", "op", "wait", "id", 6, "jobs",
					stopping, "timeout_ms", SETTLE_MS);
			text = json_dumps(req, JSON_COMPACT);
			reply = ask(text);
			if (!json_is_true(json_object_get(reply, "ok")))
				fprintf(stderr, "cancelled jobs not final within %d s: %.300s\n",
					SETTLE_MS / 1000, text);
			check(json_is_true(json_object_get(reply, "ok")));
			json_decref(reply);
			free(text);
			json_decref(req);
		}
		json_decref(stopping);
	}
	json_decref(r);
	return n;
}

/* deferred: may a request with this op be answered after later ones? */
static bool deferred(int op)
{
	return op == JP_OP_WAIT || op == JP_OP_SUBMIT;
}

/* take: the request a reply with id `id` answers (JP_ID_NONE: null), or NULL. */
static struct sent *take(struct sent *sent, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (!sent[i].answered && (id == JP_ID_NONE ? sent[i].null_id
							   : !sent[i].null_id && sent[i].id == id))
			return &sent[i];
	return NULL;
}

/* hello_line: does line parse as a hello request? */
static bool hello_line(const uint8_t *line, size_t len)
{
	struct jp_request r;
	json_t *msg;
	bool yes;

	if (jp_frame_parse(line, len, &msg, NULL) < 0)
		return false;
	yes = jp_request_parse(msg, NULL, &r, NULL) == 0 && r.op == JP_OP_HELLO;
	json_decref(msg);
	return yes;
}

/* input_hello: the hello of an input whose first line is one, on a connection of its
 * own.  Sent alone, so that what follows is sent knowing it took.  Returns whether it
 * did (the daemon may also have closed: a version it does not speak). */
static bool input_hello(int fd, const uint8_t *line, size_t len)
{
	struct sent h = {.id = 0, .op = JP_OP_HELLO};
	struct jp_incoming in;
	json_t *msg;
	bool ok;

	classify(line, len, NULL, 0, &h);
	send_payload(fd, line, len);
	check(read_msg(fd, &msg, &in, now_ms() + SETTLE_MS) == 1);
	check(!in.is_event && !h.null_id && in.id == h.id);
	ok = in.ok;
	json_decref(msg);
	return ok;
}

/* rest: bring the daemon back to rest after an input: resumed if the input paused
 * anything (the whole daemon or the harness's client), and no job left that is not final. */
static void rest(bool paused, bool jobs)
{
	if (paused) {
		json_decref(ask("{\"op\":\"resume\",\"id\":4,\"all\":true}"));
		json_decref(ask("{\"op\":\"resume\",\"id\":5,\"client\":\"fuzz\"}"));
	}
	for (int i = 0; jobs && settle_jobs() > 0; i++)
		check(i < 1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char sentinel[] = "{\"op\":\"ping\",\"id\":9007199254740991}";
	static const char unwatch[] = "{\"op\":\"unwatch\",\"id\":9007199254740990}";
	static const char hello[] =
		"{\"op\":\"hello\",\"id\":9007199254740989,\"version\":1,\"client\":\"fuzz\"}";
	static int session = -1;
	bool jobs = false, watching = false, paused = false, greeting = false;
	const uint8_t *line[MAX_LINES];
	size_t len[MAX_LINES], n_lines = 0, n = 0, first = 0;
	struct sent sent[MAX_LINES];
	bool sentinel_seen = false, eof = false;
	uint64_t deadline;
	int fd;

	if (!started)
		start_daemon();
	for (size_t i = 0; i < size && n_lines < MAX_LINES;) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t end = nl ? (size_t)(nl - data) : size;

		line[n_lines] = data + i;
		len[n_lines++] = end - i;
		i = end + 1;
	}
	/* The harness's session carries over from input to input while the daemon keeps it
	 * open; a new one's hello (always accepted) goes ahead of the input's lines.  An
	 * input that says hello itself gets a connection of its own. */
	first = n_lines > 0 && hello_line(line[0], len[0]) ? 1 : 0;
	if (first) {
		fd = dial();
		check(fd >= 0);
		if (!input_hello(fd, line[0], len[0]))
			goto out; /* refused: the rest would only meet handshake_required */
	} else if (session < 0) {
		fd = session = dial();
		check(fd >= 0);
		queue_payload(hello, strlen(hello));
		greeting = true;
	} else {
		fd = session;
	}
	for (size_t i = first; i < n_lines; i++)
		if (classify(line[i], len[i], sent, n, &sent[n])) {
			queue_payload(line[i], len[i]);
			jobs |= sent[n].op == JP_OP_SUBMIT;
			watching |= sent[n].op == JP_OP_WATCH;
			paused |= sent[n].op == JP_OP_PAUSE;
			n++;
		}
	/* Events of a watch left on would pile up between inputs. */
	if (watching)
		queue_payload(unwatch, strlen(unwatch));
	queue_payload(sentinel, strlen(sentinel));
	send_queued(fd);

	deadline = now_ms() + SETTLE_MS;
	while (!eof) {
		struct jp_incoming in;
		struct sent *s;
		json_t *msg;
		bool all = true;
		int rc;

		for (size_t i = 0; i < n; i++)
			all &= sent[i].answered;
		if (sentinel_seen && all)
			break;
		/* Past the ping only waits and held submits are left: end their jobs. */
		if (sentinel_seen)
			settle_jobs();
		rc = read_msg(fd, &msg, &in, now_ms() + 5);
		if (rc == 0) {
			eof = true;
			break;
		}
		if (rc < 0) {
			if (now_ms() > deadline) {
				fprintf(stderr, "requests unanswered %d s after every job ended\n",
					SETTLE_MS / 1000);
				check(false);
			}
			/* A submit held by `block` stops the reading: make room.  (Also
			 * after 5 ms of a slow reply: cancelling then changes nothing the
			 * invariants need.) */
			settle_jobs();
			continue;
		}
		if (in.is_event) {
			json_decref(msg);
			continue;
		}
		if (greeting) {
			/* The harness's hello, answered first and accepted. */
			check(in.id == HELLO_ID && in.ok);
			greeting = false;
		} else if (in.id == UNWATCH_ID && watching) {
			check(in.ok);
			watching = false;
		} else if (in.id == SENTINEL_ID) {
			check(!sentinel_seen && in.ok);
			sentinel_seen = true;
			/* Everything before the ping was read and answered, but for waits
			 * and held submits. */
			for (size_t i = 0; i < n; i++)
				check(sent[i].answered || deferred(sent[i].op));
		} else {
			s = take(sent, n, in.id);
			if (!s)
				fprintf(stderr, "a reply that answers no request sent: id %lld\n",
					(long long)in.id);
			check(s != NULL);
			s->answered = true;
			s->closes = !in.ok && closing_code(in.error.code);
		}
		json_decref(msg);
	}
	if (eof) {
		/* Closed right after a reply that says so; nothing after that request
		 * answered; before it only waits and held submits left (dropped). */
		size_t last = n;

		check(!sentinel_seen);
		for (size_t i = 0; i < n; i++)
			if (sent[i].answered && sent[i].closes)
				last = i;
		if (last == n)
			fprintf(stderr, "the daemon closed the connection without saying why\n");
		check(last < n);
		for (size_t i = 0; i < n; i++) {
			if (i < last)
				check(sent[i].answered || deferred(sent[i].op));
			if (i > last)
				check(!sent[i].answered);
		}
	}
out:
	if (fd != session || eof) {
		close(fd);
		if (fd == session)
			session = -1;
	}
	/* The next input starts with no job of this one left running. */
	rest(paused, jobs);
	return 0;
}
