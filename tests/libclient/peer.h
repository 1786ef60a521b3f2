/* peer.h: a fake jschedd for the libjsched tests: one end of a socket that reads the
 * library's frames and writes replies and events, through the codec (proto/jproto.h), so
 * the tests speak the protocol exactly as the daemon does without needing one.
 *
 * Header-only (static functions), included by the test programs that need it.  Every read
 * waits at most PEER_TIMEOUT_MS, so a test that expects a frame that never comes fails
 * instead of hanging.
 */
#ifndef JSCHED_TESTS_LIBCLIENT_PEER_H
#define JSCHED_TESTS_LIBCLIENT_PEER_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/jproto.h"

#include <jansson.h>

#include <stdbool.h>

#include "proto/jproto.h"

#define PEER_TIMEOUT_MS 10000

struct peer {
	int fd;
	struct jp_decoder dec;
};

static inline void peer_init(struct peer *p, int fd)
{
	p->fd = fd;
	jp_decoder_init(&p->dec, JP_DEFAULT_REPLY_FRAME_BYTES);
}

static inline void peer_free(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	jp_decoder_free(&p->dec);
}

/* peer_write writes n raw bytes; 0 or -1. */
static inline int peer_write(struct peer *p, const void *data, size_t n)
{
	const char *b = data;
	while (n > 0) {
		ssize_t w = write(p->fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* peer_send sends one frame whose payload is the JSON text; 0 or -1 (bad JSON too). */
static inline int peer_send(struct peer *p, const char *json)
{
	json_t *msg = json_loads(json, 0, NULL);
	char *bytes;
	size_t len;
	if (msg == NULL || jp_frame_encode(msg, &bytes, &len) < 0) {
		fprintf(stderr, "peer_send: cannot encode %s\n", json);
		json_decref(msg);
		return -1;
	}
	json_decref(msg);
	int r = peer_write(p, bytes, len);
	free(bytes);
	return r;
}

/* peer_recv returns the next frame from the library (new reference), or NULL after
 * PEER_TIMEOUT_MS or at end of stream. */
static inline json_t *peer_recv(struct peer *p)
{
	for (int rounds = 0; rounds < 1000; rounds++) {
		json_t *msg = NULL;
		int r = jp_decoder_next(&p->dec, &msg);
		if (r == 1)
			return msg;
		if (r < 0)
			return NULL;
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		if (poll(&pfd, 1, PEER_TIMEOUT_MS) <= 0)
			return NULL;
		char buf[65536];
		ssize_t n = read(p->fd, buf, sizeof buf);
		if (n <= 0)
			return NULL;
		if (jp_decoder_feed(&p->dec, buf, (size_t)n) < 0)
			return NULL;
	}
	return NULL;
}

/* peer_hello_reply: a successful hello reply's JSON text for request id (static buffer). */
static inline const char *peer_hello_reply(int id)
{
	static char buf[1024];
	snprintf(buf, sizeof buf,
		 "{\"id\": %d, \"ok\": true, \"version\": %d, \"daemon\": \"0.1.0\", \"instance\": \"111-22\", "
		 "\"identity\": {\"uid\": 1000, \"gid\": 1000, \"pid\": 42, \"client\": \"tester\", "
		 "\"admin\": false}, \"limits\": {\"frame_bytes\": 1048576, \"reply_frame_bytes\": "
		 "16777216, \"jobs_per_submit\": 10000, \"max_queued\": 10000, \"argv_items\": 4096, "
		 "\"env_items\": 4096, \"stdin_bytes\": 262144, \"deps_per_job\": 1024, \"output_bytes\": "
		 "1048576, \"events_retained\": 4096}}",
		 id, JP_PROTOCOL_VERSION);
	return buf;
}

/* A scripted daemon on a thread: for each reply in turn, it reads one request (kept in
 * requests[], new references) and answers with the reply's text, in which "%d" stands for
 * the request's id.  For calls that send several requests before returning (jsched_list
 * paging), where a reply written in advance would arrive before its request. */
struct script {
	struct peer *peer;
	const char *const *replies;
	size_t n;
	json_t *requests[16];
	size_t done;
	pthread_t thread;
};

static inline void *script_main(void *arg)
{
	struct script *s = arg;
	for (; s->done < s->n && s->done < 16; s->done++) {
		json_t *req = peer_recv(s->peer);
		if (req == NULL)
			break;
		s->requests[s->done] = req;
		char buf[4096];
		const char *tmpl = s->replies[s->done], *hole = strstr(tmpl, "%d");
		if (hole == NULL)
			snprintf(buf, sizeof buf, "%s", tmpl);
		else
			snprintf(buf, sizeof buf, "%.*s%d%s", (int)(hole - tmpl), tmpl,
				 (int)json_integer_value(json_object_get(req, "id")), hole + 2);
		if (peer_send(s->peer, buf) < 0)
			break;
	}
	return NULL;
}

static inline int script_start(struct script *s, struct peer *p, const char *const *replies, size_t n)
{
	memset(s, 0, sizeof *s);
	s->peer = p;
	s->replies = replies;
	s->n = n;
	return pthread_create(&s->thread, NULL, script_main, s) == 0 ? 0 : -1;
}

/* script_join waits for the thread and returns how many requests it answered. */
static inline size_t script_join(struct script *s)
{
	pthread_join(s->thread, NULL);
	return s->done;
}

static inline void script_free(struct script *s)
{
	for (size_t i = 0; i < 16; i++)
		json_decref(s->requests[i]);
}

/* A fake daemon on a listening Unix socket, for programs that connect by path (the tool,
 * the examples): a thread accepts connections one after another until fake_stop, answers
 * hello itself, and every other request with the text answer() returns (malloc()ed; ""
 * answers nothing, NULL hangs up).  The text may hold several frames split by \x1e (a reply
 * and events after it).
 * answer() runs on the fake's thread and borrows req. */
typedef char *(*fake_answer_fn)(const json_t *req, void *arg);

struct fake_server {
	int listen_fd;
	pthread_t thread;
	fake_answer_fn answer;
	void *arg;
};

static inline void *fake_server_main(void *arg)
{
	struct fake_server *f = arg;
	for (int fd; (fd = accept(f->listen_fd, NULL, NULL)) >= 0;) {
		struct peer p;
		peer_init(&p, fd);
		bool ok = true;
		for (json_t *req; ok && (req = peer_recv(&p)) != NULL; json_decref(req)) {
			int id = (int)json_integer_value(json_object_get(req, "id"));
			char *text = strcmp(json_string_value(json_object_get(req, "op")), "hello") == 0
					     ? strdup(peer_hello_reply(id))
					     : f->answer(req, f->arg);
			ok = text != NULL;
			for (char *frame = text, *next; ok && frame != NULL; frame = next) {
				next = strchr(frame, '\x1e');
				if (next != NULL)
					*next++ = '\0';
				if (frame[0] != '\0')
					ok = peer_send(&p, frame) == 0;
			}
			free(text);
		}
		peer_free(&p);
	}
	return NULL; /* fake_stop shut the socket down */
}

/* fake_start listens on path and starts the thread; 0 or -1. */
static inline int fake_start(struct fake_server *f, const char *path, fake_answer_fn answer, void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	f->answer = answer;
	f->arg = arg;
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->listen_fd < 0 || bind(f->listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(f->listen_fd, 4) < 0 || pthread_create(&f->thread, NULL, fake_server_main, f) != 0) {
		if (f->listen_fd >= 0)
			close(f->listen_fd);
		return -1;
	}
	return 0;
}

/* fake_stop ends the thread (after the connection it serves, if any, hangs up). */
static inline void fake_stop(struct fake_server *f)
{
	shutdown(f->listen_fd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->listen_fd);
}

#endif /* JSCHED_TESTS_LIBCLIENT_PEER_H */
