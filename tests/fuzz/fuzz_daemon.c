/* tests/fuzz/fuzz_daemon.c: fuzz target of the daemon's request handling, in process.
 *
 * The whole of jschedd (main.c compiled as jschedd_main) runs in a thread of the fuzzing
 * process, started once for hundreds of inputs, on a socket in a temp dir, so libFuzzer sees the
 * coverage of the server, the sessions and every operation, not only the codec's.  Input:
 * lines, each one frame payload (at most 64 lines), sent in one write on the harness's
 * session (kept from input to input while it lasts; a new one's hello goes in the same
 * write), or on a fresh connection if the first line is itself a hello (sent alone: it may
 * be refused).  Lines are skipped (not sent) that would stop the daemon (`shutdown`), start
 * commands (an `exec` spec: processes are not for fuzzing), reuse an id already used in
 * the same input or reserved by the harness (replies are matched by id), or ask for a
 * second `metrics` document in one input (the costliest reply, whatever the request).
 * Between inputs the daemon is brought back to rest, without sleeping: the jobs the
 * input's replies named (made, found by key, retried) are cancelled and the harness waits
 * (a `wait`) for those that were running; where a job may exist that no reply named (a
 * submit left unanswered, a cancel refused), every job that is not final is listed and
 * cancelled instead; the daemon and the harness's client are resumed if the input paused
 * them; and every 512th input the daemon is shut down and started afresh, which bounds
 * what no settle undoes (client names with settings, retained jobs, counters).  The
 * daemon is up when it says READY=1 on $NOTIFY_SOCKET.  Invariants:
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
 * The daemon leaves the process's signals alone (built with JD_OWN_SIGNALS=0): their
 * handlers are the same before its start and once it is ready.
 * At exit the daemon is shut down and its thread joined.  (main.c clears its state at
 * the start of each call, so jschedd_main runs again in the same process.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
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
#define START_MS 25000
#define STR_(x) #x
#define STR(x) STR_(x)
/* STALL_MS: how long the input's session may go without a frame before the harness
 * makes room (a submit held by `block`); only a cost when it fires, never a verdict. */
#define STALL_MS 20
/* RESTART_EVERY: inputs between two restarts of the daemon (an immediate shutdown, its
 * thread joined, a new one started: about 3 ms), which bound what inputs leave behind that
 * no settle undoes: client names with settings of their own, paused clients, retained
 * jobs and events, counters, histograms.  Between restarts `limits.clients` bounds the
 * names, and with them the metrics document (every client has its section). */
#define RESTART_EVERY 512
/* MADE_MAX: ids named by one input's replies past which the settle lists instead. */
#define MADE_MAX 1000

static char dir[64], sock_path[128], conf_path[128];
static pthread_t daemon_thread;
static bool started, registered;

/* A connection to the daemon and the bytes read from it but not yet taken as frames. */
struct conn {
	int fd;
	uint8_t *buf;
	size_t off, len, cap;
};

static struct conn control = {.fd = -1}, session = {.fd = -1}, own = {.fd = -1};

/* The harness's own JSON (the lines it classifies, the replies it checks) is not under
 * test, and under ASan each of its many small allocations costs more than reading the
 * reply: the values the harness thread makes come from an arena emptied at each input
 * (none lives longer), the daemon's threads keep the checked malloc.  jansson's
 * allocator is the process's; the thread decides. */
#define ARENA_BYTES (8u << 20)
static _Thread_local bool harness_thread;
static uint8_t *arena;
static size_t arena_used;

static void *arena_alloc(size_t n)
{
	size_t size = (n + 15) & ~(size_t)15;

	if (!harness_thread || !arena || size > ARENA_BYTES - arena_used)
		return malloc(n);
	arena_used += size;
	return arena + arena_used - size;
}

static void arena_free(void *p)
{
	if ((uint8_t *)p >= arena && (uint8_t *)p < arena + ARENA_BYTES)
		return;
	free(p);
}

/* arena_start: the arena for this thread's values, empty (none of the last input's is
 * left: every one was released before its input ended). */
static void arena_start(void)
{
	if (!arena) {
		arena = malloc(ARENA_BYTES);
		check(arena != NULL);
		json_set_alloc_funcs(arena_alloc, arena_free);
	}
	harness_thread = true;
	arena_used = 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* daemon_exit: jschedd_main's status once it has returned, -1 while it runs. */
static _Atomic int daemon_exit = -1;

static void *daemon_run(void *arg)
{
	char *argv[] = {"jschedd", "-c", conf_path, NULL};

	(void)arg;
	optind = 0; /* getopt starts afresh: the daemon may be started again */
	daemon_exit = jschedd_main(3, argv);
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

/* conn_open: c reading from fd, with nothing buffered. */
static void conn_open(struct conn *c, int fd)
{
	c->fd = fd;
	c->off = c->len = 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->off = c->len = 0;
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

/* The frames of one batch, sent in one write (as a client that pipelines would). */
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

/* conn_fill: read what the daemon has sent into c's buffer, which has room for at least
 * `want` bytes after its unread ones, waiting at most until `deadline` (now_ms).  Returns
 * 1 when bytes came, 0 at end of stream, -1 when the time ran out. */
static int conn_fill(struct conn *c, size_t want, uint64_t deadline)
{
	if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->cap - c->len < want || c->cap - c->len < 65536) {
		size_t cap = c->len + (want > 65536 ? want : 65536);

		c->buf = realloc(c->buf, cap);
		check(c->buf != NULL);
		c->cap = cap;
	}
	for (;;) {
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		uint64_t now;

		if (r > 0) {
			c->len += (size_t)r;
			return 1;
		}
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return 0;
		if (errno == EINTR)
			continue;
		now = now_ms();
		if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) == 0)
			return -1;
	}
}

/* read_msg: the next frame, checked (valid JSON object within the reply limit that the
 * client library reads as a reply or an event).  1 with *msg set, 0 at end of stream, -1
 * when the time ran out. */
static int read_msg(struct conn *c, json_t **msg, struct jp_incoming *in, uint64_t deadline)
{
	json_error_t jerr;
	uint32_t len;
	const char *body;
	int rc;

	*msg = NULL;
	while (c->len - c->off < 4) {
		rc = conn_fill(c, 4, deadline);
		if (rc == 0)
			check(c->len == c->off); /* a length is never cut short */
		if (rc <= 0)
			return rc;
	}
	memcpy(&len, c->buf + c->off, 4);
	len = ntohl(len);
	check(len > 0 && len <= REPLY_FRAME_MAX);
	while (c->len - c->off < 4 + (size_t)len)
		check(conn_fill(c, 4 + (size_t)len, now_ms() + SETTLE_MS) == 1); /* nor a frame */
	body = (const char *)c->buf + c->off + 4;
	c->off += 4 + (size_t)len;
	*msg = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!*msg)
		fprintf(stderr, "invalid JSON from the daemon (%s): %.300s\n", jerr.text, body);
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

/* ask_queued: send the requests queued (queue_payload) on the control connection, n of
 * them, in one write; their replies in order in replies[] (new references). */
static void ask_queued(json_t **replies, size_t n)
{
	struct jp_incoming in;
	json_t *msg;

	send_queued(control.fd);
	for (size_t i = 0; i < n;) {
		check(read_msg(&control, &msg, &in, now_ms() + SETTLE_MS) == 1);
		if (in.is_event) {
			json_decref(msg);
			continue;
		}
		replies[i++] = msg;
	}
}

/* ask: a request on the control connection, its reply (new reference). */
static json_t *ask(const char *req)
{
	json_t *reply;

	queue_payload(req, strlen(req));
	ask_queued(&reply, 1);
	return reply;
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
	conn_close(&control);
	conn_close(&session);
	nftw(dir, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
	started = false;
}

/* wait_ready: wait for the daemon's READY=1 (sd_notify, daemon/service.c) on `ready`:
 * a daemon that exits first failed to start; one not ready within START_MS (a start takes
 * milliseconds; a loaded machine has been seen to hold one for over 10 s, in the kernel's
 * cgroup operations beside others' tests) is reported as such, before libFuzzer's own
 * 30 s timeout would report the input. */
static void wait_ready(int ready)
{
	uint64_t start = now_ms();
	bool told = false;
	char msg[512];

	for (;;) {
		struct pollfd pfd = {.fd = ready, .events = POLLIN};
		uint64_t waited = now_ms() - start;
		ssize_t n;

		if (daemon_exit >= 0)
			fprintf(stderr, "the daemon exited (status %d) before it was ready\n",
				daemon_exit);
		check(daemon_exit < 0);
		if (waited >= START_MS)
			fprintf(stderr, "the daemon was not ready within %d s\n", START_MS / 1000);
		check(waited < START_MS);
		if (waited >= 5000 && !told) {
			fprintf(stderr, "still waiting for the daemon's start after 5 s\n");
			told = true;
		}
		if (poll(&pfd, 1, 1000) != 1)
			continue;
		n = recv(ready, msg, sizeof(msg) - 1, 0);
		if (n > 0 && strncmp(msg, "READY=1", 7) == 0)
			return;
	}
}

/* signals_note: the handlers of SIGINT, SIGTERM and SIGHUP now, into h. */
static void signals_note(void (*h[3])(int))
{
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};

	for (int i = 0; i < 3; i++) {
		struct sigaction sa;

		check(sigaction(sigs[i], NULL, &sa) == 0);
		h[i] = sa.sa_handler;
	}
}

static void start_daemon(void)
{
	void (*before[3])(int), (*after[3])(int);
	static char notify[64];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	FILE *f;
	json_t *r;
	int ready;

	snprintf(dir, sizeof(dir), "/tmp/jsched-fuzz-XXXXXX");
	check(mkdtemp(dir) != NULL);
	snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/jschedd.json", dir);
	f = fopen(conf_path, "w");
	check(f != NULL);
	/* Small: one worker, few fibers, bounded queues, clients and retention, so that
	 * what one input leaves behind stays small until the next restart; no journal (it
	 * would be the default directory, shared by every run). */
	fprintf(f, "{\"socket\": \"%s\", \"workers\": 1, \"fibers\": 16, "
		   "\"limits\": {\"queued_jobs\": 4000, \"handshake_ms\": 5000, \"clients\": 32}, "
		   "\"retention\": {\"jobs\": 50, \"events\": 16}, "
		   "\"journal\": {\"sync\": \"off\"}}\n", sock_path);
	fclose(f);
	/* The daemon is up when it says so (READY=1 on $NOTIFY_SOCKET, a name of this
	 * process's in the abstract namespace, set once before any daemon thread reads the
	 * environment); the socket is closed after it, so later notices fail at once. */
	if (!notify[0]) {
		snprintf(notify, sizeof(notify), "@jsched-fuzz-%ld", (long)getpid());
		setenv("NOTIFY_SOCKET", notify, 1);
		setenv("JSCHED_LOG", "error", 0);
		signal(SIGPIPE, SIG_IGN);
	}
	ready = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	check(ready >= 0);
	memcpy(sa.sun_path + 1, notify + 1, strlen(notify) - 1);
	check(bind(ready, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(notify))) == 0);
	daemon_exit = -1;
	signals_note(before);
	check(pthread_create(&daemon_thread, NULL, daemon_run, NULL) == 0);
	wait_ready(ready);
	close(ready);
	/* The signals stay the process's (main.c's JD_OWN_SIGNALS): a ^C is libFuzzer's. */
	signals_note(after);
	check(memcmp(before, after, sizeof(before)) == 0);
	conn_open(&control, dial());
	check(control.fd >= 0);
	started = true;
	if (!registered)
		atexit(stop_daemon);
	registered = true;
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

/* A list of job ids. */
struct ids {
	int64_t *v;
	size_t n, cap;
};

static void ids_add(struct ids *l, int64_t id)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		check(l->v != NULL);
	}
	l->v[l->n++] = id;
}

/* The ids of the jobs the input's replies named, which the settle cancels; `unnamed`
 * when a job may exist that no reply named, and the settle lists them all. */
static struct ids made;
static bool unnamed;

/* note_made: the job ids a reply to a submit or a retry names, into `made`. */
static void note_made(int op, const json_t *reply)
{
	const json_t *job = json_object_get(reply, "job"), *jobs = json_object_get(reply, "jobs");
	const json_t *v;
	size_t i;

	if (op == JP_OP_SUBMIT && json_is_integer(job)) {
		ids_add(&made, json_integer_value(job));
	} else if (json_is_array(jobs)) {
		json_array_foreach(jobs, i, v) {
			const json_t *id = op == JP_OP_SUBMIT ? v : json_object_get(v, "job");

			if (json_is_integer(id))
				ids_add(&made, json_integer_value(id));
			else
				unnamed = true;
		}
	} else {
		unnamed = true;
	}
	if (made.n > MADE_MAX)
		unnamed = true;
}

/* ask_ids: the request `head` (an object's text up to its jobs member) with the ids of
 * l as `jobs` and `tail` after them, asked on the control connection; its reply (new
 * reference). */
static json_t *ask_ids(const char *head, const struct ids *l, const char *tail)
{
	size_t cap = strlen(head) + strlen(tail) + 24 * l->n + 4, n;
	char *text = malloc(cap);
	json_t *reply;

	check(text != NULL);
	n = (size_t)snprintf(text, cap, "%s[", head);
	for (size_t i = 0; i < l->n; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s%lld", i ? "," : "", (long long)l->v[i]);
	n += (size_t)snprintf(text + n, cap - n, "]%s", tail);
	check(n < cap);
	reply = ask(text);
	free(text);
	return reply;
}

/* stop_cancelled: wait (a `wait` request, no sleep) until the jobs a cancel reply says
 * are stopping have ended: a running job ends when its worker has stopped it (a wait pins
 * what it names, so none is forgotten meanwhile). */
static void stop_cancelled(const json_t *cancel_reply)
{
	static struct ids stopping;
	const json_t *rec;
	json_t *reply;
	size_t i;

	stopping.n = 0;
	json_array_foreach(json_object_get(cancel_reply, "jobs"), i, rec)
		if (json_is_true(json_object_get(rec, "cancelling")))
			ids_add(&stopping, json_integer_value(json_object_get(rec, "job")));
	if (stopping.n == 0)
		return;
	reply = ask_ids("{\"op\":\"wait\",\"id\":6,\"timeout_ms\":" STR(SETTLE_MS) ",\"jobs\":", &stopping, "}");
	if (!json_is_true(json_object_get(reply, "ok")))
		fprintf(stderr, "%zu cancelled jobs not final within %d s\n", stopping.n,
			SETTLE_MS / 1000);
	check(json_is_true(json_object_get(reply, "ok")));
	json_decref(reply);
}

/* settle_jobs: cancel every job that is not final, as admin, and wait until those that
 * were running have ended.  Returns how many were not final (0: nothing left to wait
 * for). */
static size_t settle_jobs(void)
{
	static struct ids all;
	json_t *r = ask("{\"op\":\"list\",\"id\":2,\"all\":true,\"limit\":10000,"
			"\"states\":[\"waiting\",\"scheduled\",\"retrying\",\"queued\",\"running\"]}");
	const json_t *rec;
	size_t i;

	check(json_is_true(json_object_get(r, "ok")));
	all.n = 0;
	json_array_foreach(json_object_get(r, "jobs"), i, rec)
		ids_add(&all, json_integer_value(json_object_get(rec, "job")));
	json_decref(r);
	if (all.n > 0) {
		json_t *reply = ask_ids("{\"op\":\"cancel\",\"id\":3,\"jobs\":", &all, "}");

		stop_cancelled(reply);
		json_decref(reply);
	}
	return all.n;
}

/* settle_all: settle_jobs until no job is left that is not final. */
static void settle_all(void)
{
	for (int i = 0; settle_jobs() > 0; i++)
		check(i < 1000);
	made.n = 0;
	unnamed = false;
}

/* settle_made: end the jobs the input's replies named (cancelled, those running waited
 * for), or every job not final where that is not known to be all. */
static void settle_made(void)
{
	json_t *reply;

	if (unnamed) {
		settle_all();
		return;
	}
	if (made.n == 0)
		return;
	reply = ask_ids("{\"op\":\"cancel\",\"id\":7,\"jobs\":", &made, "}");
	made.n = 0;
	/* Refused (a job forgotten meanwhile: nothing was cancelled): every job instead. */
	if (json_is_true(json_object_get(reply, "ok")))
		stop_cancelled(reply);
	else
		settle_all();
	json_decref(reply);
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

/* input_hello: the hello of an input whose first line is one, on a connection of its
 * own.  Sent alone, so that what follows is sent knowing it took.  Returns whether it
 * did (the daemon may also have closed: a version it does not speak). */
static bool input_hello(struct conn *c, const struct sent *h, const uint8_t *line, size_t len)
{
	struct jp_incoming in;
	json_t *msg;
	bool ok;

	queue_payload(line, len);
	send_queued(c->fd);
	check(read_msg(c, &msg, &in, now_ms() + SETTLE_MS) == 1);
	check(!in.is_event && !h->null_id && in.id == h->id);
	ok = in.ok;
	json_decref(msg);
	return ok;
}

/* rest: bring the daemon back to rest after an input: resumed if the input paused
 * anything (the whole daemon or the harness's client, in one write), and no job left that
 * is not final. */
static void rest(bool paused)
{
	static unsigned inputs;

	if (paused) {
		static const char all[] = "{\"op\":\"resume\",\"id\":4,\"all\":true}";
		static const char mine[] = "{\"op\":\"resume\",\"id\":5,\"client\":\"fuzz\"}";
		json_t *r[2];

		queue_payload(all, strlen(all));
		queue_payload(mine, strlen(mine));
		ask_queued(r, 2);
		json_decref(r[0]);
		json_decref(r[1]);
	}
	if (++inputs % RESTART_EVERY == 0) {
		stop_daemon();
		made.n = 0;
		unnamed = false;
		start_daemon();
		return;
	}
	settle_made();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char sentinel[] = "{\"op\":\"ping\",\"id\":9007199254740991}";
	static const char unwatch[] = "{\"op\":\"unwatch\",\"id\":9007199254740990}";
	static const char hello[] =
		"{\"op\":\"hello\",\"id\":9007199254740989,\"version\":1,\"client\":\"fuzz\"}";
	bool watching = false, paused = false, greeting = false, metrics = false;
	const uint8_t *line[MAX_LINES];
	size_t len[MAX_LINES], n_lines = 0, n = 0, first = 0;
	struct sent sent[MAX_LINES], h;
	bool sentinel_seen = false, eof = false, settled = false;
	uint64_t deadline, last_frame;
	struct conn *c;

	arena_start();
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
	first = n_lines > 0 && classify(line[0], len[0], NULL, 0, &h) && h.op == JP_OP_HELLO;
	if (first) {
		c = &own;
		conn_open(c, dial());
		check(c->fd >= 0);
		if (!input_hello(c, &h, line[0], len[0]))
			goto out; /* refused: the rest would only meet handshake_required */
	} else {
		c = &session;
		if (c->fd < 0) {
			conn_open(c, dial());
			check(c->fd >= 0);
			queue_payload(hello, strlen(hello));
			greeting = true;
		}
	}
	for (size_t i = first; i < n_lines; i++)
		if (classify(line[i], len[i], sent, n, &sent[n]) &&
		    !(sent[n].op == JP_OP_METRICS && metrics)) {
			queue_payload(line[i], len[i]);
			watching |= sent[n].op == JP_OP_WATCH;
			paused |= sent[n].op == JP_OP_PAUSE;
			metrics |= sent[n].op == JP_OP_METRICS;
			n++;
		}
	/* Events of a watch left on would pile up between inputs. */
	if (watching)
		queue_payload(unwatch, strlen(unwatch));
	queue_payload(sentinel, strlen(sentinel));
	send_queued(c->fd);

	deadline = now_ms() + SETTLE_MS;
	last_frame = now_ms();
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
		/* Past the ping only waits and held submits are left: end the jobs the
		 * replies named, then, if that was not enough, every job. */
		if (sentinel_seen && !settled) {
			settle_made();
			settled = true;
		}
		rc = read_msg(c, &msg, &in, last_frame + STALL_MS);
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
			/* A submit held by `block` stops the reading, and a wait on a job no
			 * reply named stays: make room.  (Also after a slow reply: cancelling
			 * then changes nothing the invariants need.) */
			settle_all();
			last_frame = now_ms();
			continue;
		}
		last_frame = now_ms();
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
			if (in.ok && (s->op == JP_OP_SUBMIT || s->op == JP_OP_RETRY)) {
				note_made(s->op, msg);
				settled = false;
			}
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
			/* A submit dropped unanswered may have made jobs. */
			if (sent[i].op == JP_OP_SUBMIT && !sent[i].answered)
				unnamed = true;
		}
	}
out:
	if (c != &session || eof)
		conn_close(c);
	/* The next input starts with no job of this one left running. */
	rest(paused);
	return 0;
}
