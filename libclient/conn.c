/* conn.c: a connection to jschedd: the socket, the hello, requests in flight, replies and
 * events, and the two ways of driving it.
 *
 * Everything goes through one path.  A request is encoded into the output buffer with an
 * id and a callback, and remembered in a list of requests in flight; jsched_process (the
 * event-loop mode) writes what it can, reads what has arrived, feeds the codec's frame
 * decoder and dispatches each whole message: a reply to the callback of its id, an event to
 * the event callback or the queue of jsched_next_event.  A synchronous call is the same
 * request with a callback that stores the reply in a slot on the caller's stack, followed by
 * poll() and the same processing until the slot is filled.  So the two modes cannot drift
 * apart, and every synchronous test also exercises the event-loop machinery.
 *
 * The socket is non-blocking from the start; only the synchronous calls block, in poll().
 * Requests in flight are a singly linked list searched by id: replies mostly come back in
 * order, so the search ends at the head, and a program with thousands in flight is not what
 * a list would slow down measurably beside the socket round trip.
 */
#include "libclient/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct pending {
	int64_t id;
	enum jp_op op; /* to read the reply by type (submit ids) */
	jsched_reply_cb cb;
	void *arg;
	struct pending *next;
};

struct queued_event {
	struct jsched_event *ev;
	struct queued_event *next;
};

/* The reply a callback reads (jsched_reply_*). */
struct jsched_reply {
	const json_t *msg;  /* the whole reply, borrowed (or parsed: NULL until asked for) */
	json_t *parsed;	    /* the reply's tree made from text on demand (reply_msg), owned */
	struct jc_text text; /* and its payload as the daemon sent it (p NULL: none) */
	enum jp_op op;
	uint64_t *ids;	    /* submit: the ids, allocated here */
	size_t n_ids;
	char *json;	    /* jsched_reply_json, made on demand */
};

/* What a synchronous call waits for. */
struct sync_slot {
	bool done;
	int status;
	json_t *reply; /* new reference */
	bool want_text; /* jc_call_text: copy the payload too */
	char *text;	/* malloc'd; NULL when not wanted, absent or out of memory */
	size_t len;
	struct jc_fast *fast; /* what read_fast may read straight from the reply's text */
};

/* A connection is used by one thread at a time (jsched.h); nothing here is shared. */
struct jsched_conn {
	int fd;
	int dead;		  /* 0, or why the connection cannot be used any more */
	char dead_msg[512];	  /* and in words */
	struct jp_decoder dec;	  /* bytes read, not yet whole messages */
	struct jp_buf out;	  /* encoded requests not yet written */
	size_t frame_limit;	  /* the daemon's frame_bytes: larger requests are refused here */
	int64_t next_id;
	struct pending *inflight; /* oldest first */
	struct pending **inflight_tail;
	struct queued_event *events; /* for jsched_next_event, oldest first */
	struct queued_event **events_tail;
	jsched_event_cb event_cb;
	void *event_arg;
	int in_callback;	  /* > 0 while a callback runs: synchronous calls refused */
	int64_t reply_timeout;	  /* jsched_set_timeout: ms a synchronous call waits; < 0: no limit */
	int64_t fast_id;	  /* > 0: the synchronous call in flight whose reply read_fast
				     may read straight from its text */
	unsigned read_first_skip; /* sync_wait: calls left that poll before they read */
	unsigned read_first_misses; /* and the misses in a row since the last hit */

	bool hello_held;	  /* jsched_connect_deferred: the hello is queued, not written: it
				     goes out with the first request, in the same write */
	bool hello_pending;	  /* its reply has not been read yet (hello_cb) */
	json_t *hello;		  /* the hello reply (NULL when it was read from its text) */
	char *hello_text;
	char *hello_strs;	  /* read from its text: version, instance, client, each NUL-ended */
	const char *version, *instance, *client; /* borrowed from hello */

	/* The last error (jsched_error_*): its code, and its words (each NULL when absent, or
	 * when memory ran out while recording them). */
	int err_status;
	char *err_code, *err_message, *err_field, *err_json;
};

/* ---- errors ---------------------------------------------------------------------------- */

static void clear_error(struct jsched_conn *c)
{
	free(c->err_code);
	free(c->err_message);
	free(c->err_field);
	free(c->err_json);
	c->err_code = c->err_message = c->err_field = c->err_json = NULL;
	c->err_status = 0;
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

/* jc_set_error_obj: see internal.h. */
int jc_set_error_obj(struct jsched_conn *c, const json_t *error)
{
	struct jp_err e;
	jp_error_parse(error, &e); /* fills e even for a malformed error object */
	clear_error(c);
	const char *code = json_string_value(json_object_get(error, "code"));
	c->err_code = dup_or_null(code != NULL ? code : "protocol_error");
	c->err_message = strdup(e.message);
	c->err_field = e.field[0] != '\0' ? strdup(e.field) : NULL;
	c->err_json = jc_dup_json(error);
	c->err_status = e.code != 0 ? e.code : JSCHED_EPROTOCOL;
	return c->err_status;
}

/* jc_set_error: see internal.h. */
int jc_set_error(struct jsched_conn *c, int code, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap); /* before clearing: an argument may be the old message */
	va_end(ap);
	clear_error(c);
	c->err_message = strdup(buf);
	c->err_status = code;
	return code;
}

/* jsched_error_code and friends: see jsched.h. */
const char *jsched_error_code(const struct jsched_conn *c)
{
	return c != NULL ? c->err_code : NULL;
}

const char *jsched_error_message(const struct jsched_conn *c)
{
	if (c == NULL)
		return NULL;
	if (c->err_message == NULL && c->err_status != 0)
		return jsched_strerror(c->err_status); /* the words were lost to a failed allocation */
	return c->err_message;
}

const char *jsched_error_field(const struct jsched_conn *c)
{
	return c != NULL ? c->err_field : NULL;
}

const char *jsched_error_json(const struct jsched_conn *c)
{
	return c != NULL ? c->err_json : NULL;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static void reply_clear(struct jsched_reply *r)
{
	free(r->ids);
	free(r->json);
	json_decref(r->parsed);
}

/* reply_msg: r's tree; for a reply read straight from its text (read_fast_submit), made
 * from the text the first time it is asked for.  NULL when there is none (or memory ran
 * out). */
static const json_t *reply_msg(const struct jsched_reply *r)
{
	struct jsched_reply *w = (struct jsched_reply *)(uintptr_t)r; /* a cache, made once */
	struct jp_err err;
	if (w->msg == NULL && w->parsed == NULL && w->text.p != NULL &&
	    jp_frame_parse(w->text.p, w->text.len, &w->parsed, &err) == 0)
		w->msg = w->parsed;
	return w->msg;
}

/* Run the callback of one request with status and reply (msg may be NULL).  ids (n_ids of
 * them, taken): a submit's ids already read from text, whose reply has no tree yet. */
static void complete(struct jsched_conn *c, struct pending *p, int status, const json_t *msg,
		     struct jc_text text, uint64_t *ids, size_t n_ids)
{
	struct jsched_reply reply = { .msg = msg, .text = text, .op = p->op, .ids = ids, .n_ids = n_ids };
	if (status == 0 && msg != NULL && ids == NULL && p->op == JP_OP_SUBMIT) {
		/* Read the ids now so that jsched_reply_ids can lend them out. */
		const json_t *one = json_object_get(msg, "job");
		const json_t *many = json_object_get(msg, "jobs");
		size_t n = one != NULL ? 1 : json_array_size(many);
		reply.ids = calloc(n > 0 ? n : 1, sizeof *reply.ids);
		for (size_t i = 0; reply.ids != NULL && i < n; i++) {
			json_int_t v = json_integer_value(one != NULL ? one : json_array_get(many, i));
			if (v <= 0) {
				status = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply without job ids");
				break;
			}
			reply.ids[i] = (uint64_t)v;
		}
		if (reply.ids == NULL)
			status = jc_set_error(c, JSCHED_ENOMEM, "out of memory reading a reply");
		else if (n == 0)
			status = jc_set_error(c, JSCHED_EPROTOCOL, "submit reply without job ids");
		reply.n_ids = status == 0 ? n : 0;
		/* A submit's wait that ran out of time: the jobs exist (their ids are read),
		 * and the records stand as they were then. */
		if (status == 0 && json_is_true(json_object_get(msg, "timed_out")))
			status = jc_set_error(c, JSCHED_ETIMEOUT, "the jobs did not end within the submit's "
					      "wait.timeout_ms");
	}
	c->in_callback++;
	p->cb(c, status, &reply, p->arg);
	c->in_callback--;
	reply_clear(&reply);
	free(p);
}

/* Fail every request in flight with status (the connection is gone). */
static void fail_inflight(struct jsched_conn *c, int status)
{
	while (c->inflight != NULL) {
		struct pending *p = c->inflight;
		c->inflight = p->next;
		if (c->inflight == NULL)
			c->inflight_tail = &c->inflight;
		jc_set_error(c, status, "%s", c->dead_msg[0] != '\0' ? c->dead_msg : jsched_strerror(status));
		complete(c, p, status, NULL, (struct jc_text){ NULL, 0 }, NULL, 0);
	}
}

/* The connection cannot go on: remember why (the first reason wins). */
static int mark_dead(struct jsched_conn *c, int status, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static int mark_dead(struct jsched_conn *c, int status, const char *fmt, va_list ap)
{
	if (c->dead == 0) {
		vsnprintf(c->dead_msg, sizeof c->dead_msg, fmt, ap);
		c->dead = status;
	}
	jc_set_error(c, c->dead, "%s", c->dead_msg);
	return c->dead;
}

/* ... and fail what is in flight. */
static int kill_conn(struct jsched_conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int kill_conn(struct jsched_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mark_dead(c, status, fmt, ap);
	va_end(ap);
	fail_inflight(c, c->dead);
	jc_set_error(c, c->dead, "%s", c->dead_msg); /* callbacks may have said other things */
	return c->dead;
}

/* Only mark it: for jc_send, whose callers' callbacks must not run inside the call that
 * queued them.  The next jsched_process or synchronous call fails them. */
static int defer_kill(struct jsched_conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int defer_kill(struct jsched_conn *c, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mark_dead(c, status, fmt, ap);
	va_end(ap);
	return c->dead;
}

static void push_event(struct jsched_conn *c, struct jsched_event *ev)
{
	if (c->event_cb != NULL) {
		c->in_callback++;
		c->event_cb(c, ev, c->event_arg);
		c->in_callback--;
		return;
	}
	struct queued_event *q = malloc(sizeof *q);
	if (q == NULL) {
		/* Dropping an event silently would break watch's no-gap promise: say so. */
		jsched_event_free(ev);
		kill_conn(c, JSCHED_ENOMEM, "out of memory queueing an event");
		return;
	}
	q->ev = ev;
	q->next = NULL;
	*c->events_tail = q;
	c->events_tail = &q->next;
}

/* Dispatch one message from the daemon (borrowed), whose payload is text. */
static int dispatch(struct jsched_conn *c, const json_t *msg, struct jc_text text)
{
	struct jp_incoming in;
	struct jp_err err;
	if (jp_incoming_parse(msg, &in, &err) < 0)
		return kill_conn(c, JSCHED_EPROTOCOL, "unexpected message from jschedd: %s", err.message);
	if (in.is_event) {
		struct jsched_event *ev = jc_event_from_json(msg, text);
		if (ev == NULL) /* a "job" event without a readable record (or out of memory) */
			return kill_conn(c, JSCHED_EPROTOCOL, "cannot read an event from jschedd");
		push_event(c, ev);
		return 0;
	}
	if (in.id == JP_ID_NONE) {
		/* The daemon closes the connection and says why: a frame it could not read, or
		 * a connection over its limits (too_many_connections). */
		int code = in.error_obj != NULL ? jc_set_error_obj(c, in.error_obj) : JSCHED_EPROTOCOL;
		return kill_conn(c, code, "jschedd closed the connection: %s", c->err_message ? c->err_message : "");
	}
	struct pending **pp = &c->inflight, *p = NULL;
	for (; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->id == in.id) {
			p = *pp;
			*pp = p->next;
			if (*pp == NULL)
				c->inflight_tail = pp;
			break;
		}
	if (p == NULL)
		return kill_conn(c, JSCHED_EPROTOCOL, "jschedd replied to request %lld, which is not in flight",
				 (long long)in.id);
	int status = 0;
	if (!in.ok)
		status = jc_set_error_obj(c, in.error_obj);
	complete(c, p, status, msg, text, NULL, 0);
	return 0;
}

static void sync_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg);
static int64_t leading_id(const unsigned char *p, size_t len);

/* The reply to the synchronous call c->fast_id, if it has the shape its slot's jc_fast asks
 * for ({"id", "ok": true, "jobs": [...]}, a submit's id and record, ...), read straight from
 * its text into the slot with no jansson tree (jc_fast_from_text says which replies
 * qualify; the rest go through jansson as every other message does).  True when it was. */
static bool read_fast(struct jsched_conn *c, const unsigned char *payload, size_t len)
{
	int64_t id, lead = leading_id(payload, len);
	if (c->fast_id <= 0 || (lead >= 0 && lead != c->fast_id))
		return false; /* another request's reply (a deferred hello's): not read twice */
	struct pending **pp = &c->inflight;
	while (*pp != NULL && (*pp)->id != c->fast_id)
		pp = &(*pp)->next;
	if (*pp == NULL || (*pp)->cb != sync_cb)
		return false;
	struct sync_slot *slot = (*pp)->arg;
	if (jc_fast_from_text((const char *)payload, len, &id, slot->fast) != 1)
		return false;
	if (id != c->fast_id) {
		jc_fast_free(slot->fast);
		return false;
	}
	struct pending *p = *pp;
	*pp = p->next;
	if (*pp == NULL)
		c->inflight_tail = pp;
	slot->done = true; /* status 0, no reply, no text */
	c->fast_id = 0;
	free(p);
	return true;
}

static void hello_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg);

/* read_fast_hello: the reply to a deferred hello (jsched_connect_deferred) read straight
 * from its text when it is plain and speaks our version (jc_hello_from_text), with no
 * tree: jansson reading it, and writing it back out for jsched_hello_json, cost the tool
 * 94K and 44K instructions of every `jsched submit` (callgrind).  Anything else (a
 * refusal, another version, a member not known) goes to hello_cb through jansson.  True
 * when it was read here. */
static bool read_fast_hello(struct jsched_conn *c, const unsigned char *payload, size_t len)
{
	struct pending *p = c->inflight;
	struct jc_hello h;
	int64_t id, lead;
	/* The leading id is read only while a hello is pending (it was a scan per reply). */
	if (!c->hello_pending || p == NULL || p->cb != hello_cb ||
	    ((lead = leading_id(payload, len)) >= 0 && lead != p->id) ||
	    jc_hello_from_text((const char *)payload, len, &id, &h) != 1 || id != p->id ||
	    h.version != JP_PROTOCOL_VERSION)
		return false;
	size_t n = h.daemon.len + h.instance.len + h.client.len + 3;
	char *strs = malloc(n), *text = malloc(len + 1);
	if (strs == NULL || text == NULL) {
		free(strs);
		free(text);
		return false; /* jansson's way, which says out of memory if it is */
	}
	memcpy(text, payload, len);
	text[len] = '\0';
	c->hello_text = text;
	c->hello_strs = strs;
	c->version = strs;
	memcpy(strs, h.daemon.p, h.daemon.len);
	strs += h.daemon.len;
	*strs++ = '\0';
	c->instance = strs;
	memcpy(strs, h.instance.p, h.instance.len);
	strs += h.instance.len;
	*strs++ = '\0';
	c->client = strs;
	memcpy(strs, h.client.p, h.client.len);
	strs[h.client.len] = '\0';
	c->frame_limit = h.limits.frame_bytes;
	jp_decoder_set_limit(&c->dec, h.limits.reply_frame_bytes);
	c->hello_pending = false;
	c->inflight = p->next;
	if (c->inflight == NULL)
		c->inflight_tail = &c->inflight;
	free(p);
	return true;
}

/* leading_id: the id of a reply that begins {"id":N, (as the daemon writes every reply),
 * or -1. */
static int64_t leading_id(const unsigned char *p, size_t len)
{
	static const char head[] = "{\"id\":";
	const size_t at = sizeof head - 1;
	size_t i = at;
	int64_t id = 0;
	if (len < at + 2 || memcmp(p, head, at) != 0)
		return -1;
	for (; i < len && i < at + 15 && p[i] >= '0' && p[i] <= '9'; i++)
		id = id * 10 + (p[i] - '0');
	return i > at && i < len && p[i] == ',' ? id : -1;
}

/* The reply to an asynchronous submit (jsched_submit_async, jsched_submit_batch_async),
 * when it is {"id", "ok": true, "jobs": [ids]} (or "job": id): its ids read straight from
 * the text, and its callback run with them, with no tree (a batch of 1,000 ids read by
 * jansson cost the client 6,700 instructions a job); jsched_reply_results and
 * jsched_reply_json make what they need from the text.  True when it was. */
static bool read_fast_submit(struct jsched_conn *c, const unsigned char *payload, size_t len)
{
	int64_t id = leading_id(payload, len), got;
	if (id <= 0)
		return false;
	struct pending **pp = &c->inflight;
	while (*pp != NULL && (*pp)->id != id)
		pp = &(*pp)->next;
	if (*pp == NULL || (*pp)->cb == sync_cb || (*pp)->op != JP_OP_SUBMIT)
		return false;
	struct jc_fast fast = { .kind = JC_FAST_IDS };
	if (jc_fast_from_text((const char *)payload, len, &got, &fast) != 1)
		return false;
	if (got != id) {
		jc_fast_free(&fast);
		return false;
	}
	struct pending *p = *pp;
	*pp = p->next;
	if (*pp == NULL)
		c->inflight_tail = pp;
	complete(c, p, 0, NULL, (struct jc_text){ (const char *)payload, len }, fast.ids, fast.n_ids);
	return true;
}

/* ---- the socket -------------------------------------------------------------------------- */

/* Write what can be written.  0, or the connection's death (kill: also fail what is in
 * flight; else leave that to the next jsched_process or pump). */
static int flush_out(struct jsched_conn *c, bool kill)
{
	if (c->hello_held)
		return 0; /* it waits for the first request (jsched_connect_deferred) */
	while (c->out.len > 0) {
		ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (kill)
				return kill_conn(c, JSCHED_EDISCONNECTED, "connection to jschedd lost: write: %s",
						 strerror(errno));
			return defer_kill(c, JSCHED_EDISCONNECTED, "connection to jschedd lost: write: %s",
					  strerror(errno));
		}
		jp_buf_consume(&c->out, (size_t)n);
	}
	return 0;
}

/* Read what has arrived and dispatch every whole message.  Returns 0, or the connection's
 * death.  A bounded number of reads per call, so a daemon that keeps sending cannot keep
 * the caller here forever. */
static int read_in(struct jsched_conn *c)
{
	unsigned char buf[65536];
	for (int rounds = 0; rounds < 16 && c->dead == 0; rounds++) {
		ssize_t n = recv(c->fd, buf, sizeof buf, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return kill_conn(c, JSCHED_EDISCONNECTED, "connection to jschedd lost: read: %s",
					 strerror(errno));
		}
		if (n == 0)
			return kill_conn(c, JSCHED_EDISCONNECTED, "jschedd closed the connection%s",
					 jp_decoder_buffered(&c->dec) > 0 ? " in the middle of a message" : "");
		int r = jp_decoder_feed(&c->dec, buf, (size_t)n);
		for (;;) {
			/* jp_decoder_next_err, keeping the payload: replies' records are copied
			 * from it (text.c) instead of being written out again by jansson. */
			json_t *msg = NULL;
			/* Its members set, not all of its 388 bytes zeroed per frame (~50
			 * instructions a frame, two a reply: the last finds none). */
			struct jp_err err;
			err.code = 0;
			err.field[0] = err.message[0] = '\0';
			const unsigned char *payload = NULL;
			size_t len = 0;
			if (r >= 0)
				r = jp_decoder_next_frame(&c->dec, &payload, &len);
			if (r == JSCHED_EFRAME_TOO_LARGE)
				jp_err_set(&err, r, NULL, "frame larger than the limit of %zu bytes", c->dec.limit);
			else if (r == JSCHED_EBAD_FRAME)
				jp_err_set(&err, r, NULL, "empty frame");
			if (r == 0)
				break;
			if (r > 0 && (read_fast_hello(c, payload, len) || read_fast(c, payload, len)))
				continue;
			if (r > 0 && read_fast_submit(c, payload, len)) {
				if (c->dead != 0)
					return c->dead;
				continue;
			}
			if (r > 0)
				r = jp_frame_parse(payload, len, &msg, &err);
			if (r < 0)
				return kill_conn(c, r == JSCHED_ENOMEM ? r : JSCHED_EPROTOCOL,
						 "bad message from jschedd: %s", r == JSCHED_ENOMEM ? "out of memory"
												: err.message);
			dispatch(c, msg, (struct jc_text){ (const char *)payload, len });
			json_decref(msg);
			if (c->dead != 0)
				return c->dead;
		}
		if ((size_t)n < sizeof buf)
			return 0; /* drained, most likely; poll will say if not */
	}
	return c->dead;
}

/* jsched_process: see jsched.h. */
int jsched_process(struct jsched_conn *c)
{
	if (c == NULL)
		return JSCHED_EINVAL;
	if (c->in_callback > 0) /* dispatching inside a dispatch would reorder callbacks */
		return jc_set_error(c, JSCHED_EINVAL, "jsched_process from a callback");
	if (c->dead == 0)
		flush_out(c, true);
	if (c->dead == 0)
		read_in(c);
	if (c->dead == 0)
		flush_out(c, true);
	if (c->dead != 0) /* requests a deferred death left in flight; our own message */
		kill_conn(c, c->dead, "%s", c->dead_msg);
	return c->dead;
}

/* jsched_fd: see jsched.h. */
int jsched_fd(const struct jsched_conn *c)
{
	return c != NULL ? c->fd : JSCHED_EINVAL;
}

/* jsched_want_write: see jsched.h. */
bool jsched_want_write(const struct jsched_conn *c)
{
	return c != NULL && c->dead == 0 && c->out.len > 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to timeout_ms (negative: no limit) for the socket, then process.  Returns 0
 * (something may have happened, or the time ran out) or the connection's death. */
static int pump(struct jsched_conn *c, int64_t timeout_ms)
{
	if (c->dead != 0)
		return kill_conn(c, c->dead, "%s", c->dead_msg);
	struct pollfd pfd = { .fd = c->fd, .events = (short)(POLLIN | (c->out.len > 0 ? POLLOUT : 0)) };
	int t = timeout_ms < 0 ? -1 : timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
	int n = poll(&pfd, 1, t);
	if (n < 0 && errno != EINTR)
		return kill_conn(c, JSCHED_EIO, "poll: %s", strerror(errno));
	if (n > 0)
		return jsched_process(c);
	return 0;
}

/* ---- requests --------------------------------------------------------------------------- */

static void hello_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg);
static int hello_finish(struct jsched_conn *c);

/* jc_send: see internal.h. */
int jc_send(struct jsched_conn *c, json_t *req, jsched_reply_cb cb, void *arg)
{
	if (req == NULL)
		return c != NULL ? jc_set_error(c, JSCHED_ENOMEM, "out of memory building a request")
				 : JSCHED_ENOMEM;
	if (c == NULL || cb == NULL) {
		json_decref(req);
		return JSCHED_EINVAL;
	}
	if (c->dead != 0) {
		json_decref(req);
		return jc_set_error(c, c->dead, "%s", c->dead_msg);
	}
	int op = jp_op_from_name(json_string_value(json_object_get(req, "op")));
	struct pending *p = malloc(sizeof *p);
	int64_t id = c->next_id;
	if (p == NULL || json_object_set_new(req, "id", json_integer(id)) < 0) {
		free(p);
		json_decref(req);
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory building a request");
	}
	if (cb != hello_cb)
		c->hello_held = false; /* a deferred hello goes out with this request */
	int r = jp_frame_append(&c->out, req, c->frame_limit);
	if (r == JSCHED_EFRAME_TOO_LARGE && c->hello_pending && (r = hello_finish(c)) == 0)
		r = jp_frame_append(&c->out, req, c->frame_limit); /* under the hello's limit now */
	json_decref(req);
	if (r < 0) {
		free(p);
		if (r == JSCHED_EFRAME_TOO_LARGE)
			return jc_set_error(c, r, "request larger than jschedd's frame limit (%zu bytes)",
					    c->frame_limit);
		return jc_set_error(c, r, "cannot encode the request: %s", jsched_strerror(r));
	}
	c->next_id = c->next_id == INT_MAX ? 1 : c->next_id + 1;
	*p = (struct pending){ .id = id, .op = op < 0 ? JP_OP_PING : (enum jp_op)op, .cb = cb, .arg = arg };
	*c->inflight_tail = p;
	c->inflight_tail = &p->next;
	flush_out(c, false); /* a failure here reaches the callback later, as the contract says */
	return (int)id;
}

/* jc_send_text: see internal.h.  The frame is the body, then ,"id":N} (what jc_send's tree
 * would have been written as: the id last), so the two give the same bytes. */
int jc_send_text(struct jsched_conn *c, enum jp_op op, const char *body, size_t blen, jsched_reply_cb cb,
		 void *arg)
{
	if (c == NULL || cb == NULL || body == NULL || blen < 2 || body[0] != '{')
		return JSCHED_EINVAL;
	if (c->dead != 0)
		return jc_set_error(c, c->dead, "%s", c->dead_msg);
	int hr;
	if (cb != hello_cb) {
		c->hello_held = false; /* a deferred hello goes out with this request */
		if (blen + 32 > c->frame_limit && c->hello_pending && (hr = hello_finish(c)) < 0)
			return hr; /* over the limit before hello: the hello's answer first */
	}
	struct pending *p = malloc(sizeof *p);
	int64_t id = c->next_id;
	size_t start = c->out.len;
	if (p == NULL || jp_buf_reserve(&c->out, JP_HEADER_BYTES + blen + 32) < 0) {
		free(p);
		return jc_set_error(c, JSCHED_ENOMEM, "out of memory building a request");
	}
	c->out.len += JP_HEADER_BYTES;
	jp_buf_append(&c->out, body, blen); /* room reserved: these cannot fail */
	jp_buf_append(&c->out, ",\"id\":", 6);
	jp_buf_append_int(&c->out, id);
	jp_buf_append(&c->out, "}", 1);
	size_t n = c->out.len - start - JP_HEADER_BYTES;
	if (n > c->frame_limit || n > UINT32_MAX) {
		c->out.len = start;
		free(p);
		return jc_set_error(c, JSCHED_EFRAME_TOO_LARGE, "request larger than jschedd's frame limit (%zu bytes)",
				    c->frame_limit);
	}
	c->out.data[start] = (unsigned char)(n >> 24);
	c->out.data[start + 1] = (unsigned char)(n >> 16);
	c->out.data[start + 2] = (unsigned char)(n >> 8);
	c->out.data[start + 3] = (unsigned char)n;
	c->next_id = c->next_id == INT_MAX ? 1 : c->next_id + 1;
	*p = (struct pending){ .id = id, .op = op, .cb = cb, .arg = arg };
	*c->inflight_tail = p;
	c->inflight_tail = &p->next;
	flush_out(c, false); /* a failure here reaches the callback later, as jc_send's does */
	return (int)id;
}

/* The callback of a request whose caller stopped waiting: its reply goes nowhere. */
static void drop_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	(void)c, (void)status, (void)reply, (void)arg;
}

static void sync_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	(void)c;
	struct sync_slot *slot = arg;
	slot->done = true;
	slot->status = status;
	slot->reply = reply->msg != NULL ? json_incref((json_t *)(uintptr_t)reply->msg) : NULL;
	if (slot->want_text && reply->text.p != NULL && (slot->text = malloc(reply->text.len + 1)) != NULL) {
		memcpy(slot->text, reply->text.p, reply->text.len);
		slot->text[reply->text.len] = '\0';
		slot->len = reply->text.len;
	}
}

/* jc_call: see internal.h. */
int jc_call(struct jsched_conn *c, json_t *req, json_t **reply, int64_t wait_ms)
{
	return jc_call_text(c, req, reply, wait_ms, NULL, NULL, NULL);
}

/* Read before the poll: a synchronous call first reads what has arrived, and polls only
 * if its reply is not there yet.  When the daemon runs on the caller's CPU it is woken by
 * the request and has answered by the time the caller runs again: the reply is there
 * (5,083 of 5,101 noop jsched_submit_wait, perf stat of the client and the daemon on one
 * CPU), and the poll was one system call of three per round trip (client CPU per round
 * trip 8.1 -> 7.5 us).  On another CPU it is nearly never there (5,092 of 5,101 missed),
 * and a read that finds nothing is one more call, so after a miss the next calls poll
 * first, as before: 1, 2, 4 ... up to READ_FIRST_SKIP of them after misses in a row (a
 * hit starts again from one), then one tries again.  A fixed 64 after any miss left 846
 * to 911 polls of 5,101 on one CPU at load 10 (a miss there now and then). */
#define READ_FIRST_SKIP 64u

/* sync_wait: wait for the reply of request id (sent with sync_cb and slot), then hand it
 * out as jc_call_text says. */
static int sync_wait(struct jsched_conn *c, int id, struct sync_slot *slot, int64_t wait_ms, json_t **reply,
		     char **text, size_t *len)
{
	c->fast_id = slot->fast != NULL ? id : 0;
	int64_t limit = c->reply_timeout < 0 || wait_ms < 0 ? -1 : c->reply_timeout + wait_ms;
	int64_t end = limit < 0 ? -1 : now_ms() + limit;
	if (c->read_first_skip > 0) {
		c->read_first_skip--;
	} else if (!slot->done && c->dead == 0) {
		jsched_process(c);
		if (slot->done) {
			c->read_first_misses = 0;
		} else {
			c->read_first_skip = c->read_first_misses >= 6 ? READ_FIRST_SKIP : 1u << c->read_first_misses;
			c->read_first_misses += c->read_first_misses < 6;
		}
	}
	while (!slot->done) { /* the slot is filled even when the connection dies */
		int64_t left = end < 0 ? -1 : end - now_ms();
		if (end >= 0 && left <= 0) {
			/* Stop waiting; the request stays in flight with a callback that drops its
			 * reply, so the connection stays in step and usable. */
			for (struct pending *p = c->inflight; p != NULL; p = p->next)
				if (p->id == id) {
					p->cb = drop_cb;
					p->arg = NULL;
				}
			c->fast_id = 0;
			return jc_set_error(c, JSCHED_ETIMEOUT, "no reply from jschedd within %lld ms",
					    (long long)limit);
		}
		pump(c, left);
	}
	/* Later replies processed in the same pump may have set other errors: ours is the one
	 * the caller asks about. */
	const json_t *err = slot->reply != NULL ? json_object_get(slot->reply, "error") : NULL;
	if (slot->status != 0 && err != NULL)
		jc_set_error_obj(c, err);
	else if (slot->status == 0)
		clear_error(c);
	if (reply != NULL)
		*reply = slot->reply;
	else
		json_decref(slot->reply);
	c->fast_id = 0;
	if (slot->want_text) {
		*text = slot->text;
		*len = slot->len;
	}
	return slot->status;
}

/* jc_call_text: see internal.h. */
int jc_call_text(struct jsched_conn *c, json_t *req, json_t **reply, int64_t wait_ms, char **text,
		 size_t *len, struct jsched_results **results)
{
	struct jc_fast fast = { .kind = JC_FAST_RECORDS };
	if (results != NULL)
		*results = NULL;
	if (reply != NULL)
		*reply = NULL;
	if (text != NULL)
		*text = NULL;
	if (len != NULL)
		*len = 0;
	if (c != NULL && c->in_callback > 0) {
		json_decref(req);
		return jc_set_error(c, JSCHED_EINVAL, "synchronous call from a callback (use the _async calls)");
	}
	struct sync_slot slot = { .want_text = text != NULL && len != NULL, .fast = results != NULL ? &fast : NULL };
	int id = jc_send(c, req, sync_cb, &slot);
	if (id < 0)
		return id;
	int r = sync_wait(c, id, &slot, wait_ms, reply, text, len);
	if (results != NULL)
		*results = fast.results;
	return r;
}

/* jc_call_fast: see internal.h. */
int jc_call_fast(struct jsched_conn *c, enum jp_op op, const char *body, size_t blen, int64_t wait_ms,
		 struct jc_fast *fast, json_t **reply, char **text, size_t *len)
{
	if (reply != NULL)
		*reply = NULL;
	if (text != NULL)
		*text = NULL;
	if (len != NULL)
		*len = 0;
	jc_fast_free(fast);
	if (c != NULL && c->in_callback > 0)
		return jc_set_error(c, JSCHED_EINVAL, "synchronous call from a callback (use the _async calls)");
	struct sync_slot slot = { .want_text = text != NULL && len != NULL, .fast = fast };
	int id = jc_send_text(c, op, body, blen, sync_cb, &slot);
	if (id < 0)
		return id;
	return sync_wait(c, id, &slot, wait_ms, reply, text, len);
}

/* ---- events --------------------------------------------------------------------------------- */

/* jsched_set_timeout: see jsched.h. */
void jsched_set_timeout(struct jsched_conn *c, int64_t timeout_ms)
{
	if (c != NULL)
		c->reply_timeout = timeout_ms < 0 ? -1 : timeout_ms;
}

/* jsched_set_event_cb: see jsched.h. */
void jsched_set_event_cb(struct jsched_conn *c, jsched_event_cb cb, void *arg)
{
	if (c == NULL)
		return;
	c->event_cb = cb;
	c->event_arg = arg;
	/* Events already queued go to the new callback, in order. */
	while (cb != NULL && c->events != NULL) {
		struct queued_event *q = c->events;
		c->events = q->next;
		if (c->events == NULL)
			c->events_tail = &c->events;
		struct jsched_event *ev = q->ev;
		free(q);
		push_event(c, ev);
	}
}

/* jsched_next_event: see jsched.h. */
int jsched_next_event(struct jsched_conn *c, int64_t timeout_ms, struct jsched_event **out)
{
	if (out != NULL)
		*out = NULL;
	if (c == NULL || out == NULL)
		return JSCHED_EINVAL;
	if (c->event_cb != NULL)
		return jc_set_error(c, JSCHED_EINVAL, "events go to the event callback");
	int64_t end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	for (;;) {
		if (c->events != NULL) {
			struct queued_event *q = c->events;
			c->events = q->next;
			if (c->events == NULL)
				c->events_tail = &c->events;
			*out = q->ev;
			free(q);
			return 0;
		}
		if (c->dead != 0)
			return c->dead;
		if (c->in_callback > 0)
			return jc_set_error(c, JSCHED_EINVAL, "jsched_next_event from a callback can only take what "
							      "has already arrived");
		int64_t left = end < 0 ? -1 : end - now_ms();
		if (end >= 0 && left < 0)
			left = 0;
		int r = pump(c, left);
		if (r < 0 && c->events == NULL)
			return r;
		if (left == 0 && c->events == NULL)
			return jc_set_error(c, JSCHED_ETIMEOUT, "no event within %lld ms", (long long)timeout_ms);
	}
}

/* ---- connect and close --------------------------------------------------------------------- */

static void set_msg(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	if (msg == NULL || msglen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

static int open_socket(const char *path, char *msg, size_t msglen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		set_msg(msg, msglen, "socket path too long (at most %zu bytes): %s", sizeof sa.sun_path - 1, path);
		return JSCHED_ECONNECT;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Non-blocking from the start, as the connection needs it (connect_fd), where a
	 * fcntl pair after the connect cost every connection two system calls.  A Unix
	 * socket's connect does not go in progress: it is made at once or refused, with
	 * EAGAIN when the listener's backlog is full, where a blocking connect would wait
	 * for room; so that case connects again blocking, then sets O_NONBLOCK. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		set_msg(msg, msglen, "socket: %s", strerror(errno));
		return JSCHED_ECONNECT;
	}
	int r;
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	while (r < 0 && errno == EINTR);
	if (r < 0 && errno == EAGAIN) {
		int fl = fcntl(fd, F_GETFL);
		r = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? 0 : -1;
		if (r == 0) {
			do
				r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
			while (r < 0 && errno == EINTR);
		}
		if (r == 0 && fcntl(fd, F_SETFL, fl) < 0)
			r = -1;
	}
	if (r < 0) {
		set_msg(msg, msglen, "cannot connect to jschedd at %s: %s", path, strerror(errno));
		close(fd);
		return JSCHED_ECONNECT;
	}
	return fd;
}

/* hello_req: the hello request, without its id (jc_send numbers it), or NULL. */
static json_t *hello_req(const char *client_name)
{
	json_t *req = jp_hello_new(0, client_name);
	if (req != NULL)
		json_object_del(req, "id");
	return req;
}

/* hello_send: queue the hello (hello_cb reads its reply), as text when the client name is
 * plain (jp_json_plain: ASCII that needs no escape) or none, else built by jansson: the same bytes
 * (test_fastpath), without the tree (20K instructions of every `jsched submit`).  The id or
 * an error, as jc_send. */
static int hello_send(struct jsched_conn *c, const char *client_name)
{
	char body[160];
	size_t n = client_name != NULL ? strlen(client_name) : 0;
	bool plain = n < sizeof body - 64;
	for (size_t i = 0; plain && i < n; i++)
		plain = jp_json_plain[(unsigned char)client_name[i]];
	if (!plain)
		return jc_send(c, hello_req(client_name), hello_cb, NULL);
	int len = snprintf(body, sizeof body, "{\"op\":\"hello\",\"version\":%d%s%s%s", JP_PROTOCOL_VERSION,
			   client_name != NULL ? ",\"client\":\"" : "", client_name != NULL ? client_name : "",
			   client_name != NULL ? "\"" : "");
	return jc_send_text(c, JP_OP_HELLO, body, (size_t)len, hello_cb, NULL);
}

/* hello_failed: the code of a hello the daemon refused (or whose reply could not be read):
 * r, or, PROTOCOL.md section 3, a version mismatch for a reply that cannot be read at all
 * (a daemon of a very different version); its words into msg. */
static int hello_failed(struct jsched_conn *c, int r, char *msg, size_t msglen)
{
	if (r == JSCHED_EPROTOCOL && c->err_code == NULL)
		r = JSCHED_EVERSION_MISMATCH;
	set_msg(msg, msglen, "%s", c->err_message != NULL ? c->err_message : jsched_strerror(r));
	return r;
}

static int hello_accept(struct jsched_conn *c, json_t *reply, char *msg, size_t msglen);

/* Say hello and read the answer; 0 or an error with msg set.  The same request and reply
 * as the deferred hello's (hello_send, read_fast_hello or hello_cb), waited for here: a
 * plain reply is read from its text (jsched_connect: 94K + 44K instructions of jansson
 * less per connection, callgrind), and a refusal is the connection's end with the
 * hello's code and words. */
static int hello(struct jsched_conn *c, const char *client_name, char *msg, size_t msglen)
{
	c->hello_pending = true;
	int r = hello_send(c, client_name);
	if (r < 0) {
		c->hello_pending = false;
		set_msg(msg, msglen, "%s", jsched_error_message(c));
		return r;
	}
	while (c->hello_pending && c->dead == 0)
		pump(c, -1);
	if (c->dead != 0) {
		set_msg(msg, msglen, "%s", c->dead_msg);
		return c->dead;
	}
	return 0;
}

/* hello_accept: the hello reply (taken) read into c; 0 or an error with msg set. */
static int hello_accept(struct jsched_conn *c, json_t *reply, char *msg, size_t msglen)
{
	struct jp_hello_reply h;
	struct jp_err err;
	if (jp_hello_reply_parse(reply, &h, &err) < 0 || h.version != JP_PROTOCOL_VERSION) {
		set_msg(msg, msglen, "jschedd's hello reply cannot be read (%s): a different protocol version?",
			err.message);
		json_decref(reply);
		return JSCHED_EVERSION_MISMATCH;
	}
	c->hello = reply;
	c->hello_text = jc_dup_json(reply);
	if (c->hello_text == NULL) {
		set_msg(msg, msglen, "out of memory");
		return JSCHED_ENOMEM;
	}
	c->version = h.daemon;
	c->instance = h.instance;
	c->client = h.identity.client;
	c->frame_limit = h.limits.frame_bytes;
	jp_decoder_set_limit(&c->dec, h.limits.reply_frame_bytes);
	return 0;
}

/* hello_cb: the reply to a deferred hello (jsched_connect_deferred), read before the
 * first request's.  A refusal ends the connection with the hello's code and words, so the
 * request sent with it (which the daemon answers handshake_required, then closes) fails
 * as jsched_connect would have. */
static void hello_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	char msg[sizeof c->dead_msg];
	(void)arg;
	c->hello_pending = false;
	if (status == 0 && reply->msg != NULL)
		status = hello_accept(c, json_incref((json_t *)(uintptr_t)reply->msg), msg, sizeof msg);
	else
		status = hello_failed(c, status < 0 ? status : JSCHED_EPROTOCOL, msg, sizeof msg);
	if (status < 0)
		kill_conn(c, status, "%s", msg);
}

/* hello_finish: a deferred hello's reply read now, before a request it cannot go with (one
 * over the frame limit before hello).  0 or the connection's death. */
static int hello_finish(struct jsched_conn *c)
{
	c->hello_held = false;
	if (c->in_callback > 0)
		return jc_set_error(c, JSCHED_EINVAL, "a request over %zu bytes before the hello's answer, "
				    "from a callback", c->frame_limit);
	flush_out(c, false);
	while (c->hello_pending && c->dead == 0)
		pump(c, c->reply_timeout);
	return c->dead != 0 ? jc_set_error(c, c->dead, "%s", c->dead_msg) : 0;
}

/* Make a connection over fd (connected, owned from here on; nonblocking: O_NONBLOCK set
 * already, as open_socket makes it) and say hello (deferred: queue
 * it for the first request's write instead of waiting for its answer). */
static int connect_fd(int fd, const char *client_name, struct jsched_conn **out, char *msg, size_t msglen,
		      bool deferred, bool nonblocking)
{
	int fl = nonblocking ? 0 : fcntl(fd, F_GETFL);
	if (!nonblocking && (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
		set_msg(msg, msglen, "fcntl: %s", strerror(errno));
		close(fd);
		return JSCHED_ECONNECT;
	}
	struct jsched_conn *c = calloc(1, sizeof *c);
	if (c == NULL) {
		set_msg(msg, msglen, "out of memory");
		close(fd);
		return JSCHED_ENOMEM;
	}
	c->fd = fd;
	c->inflight_tail = &c->inflight;
	c->events_tail = &c->events;
	c->next_id = 1;
	c->frame_limit = JP_HANDSHAKE_FRAME_BYTES;
	c->reply_timeout = -1;
	jp_decoder_init(&c->dec, JP_DEFAULT_REPLY_FRAME_BYTES);
	int r;
	if (deferred) {
		c->hello_held = true; /* before jc_send, whose flush would write it */
		c->hello_pending = true;
		if ((r = hello_send(c, client_name)) >= 0) {
			*out = c;
			return 0;
		}
		set_msg(msg, msglen, "%s", jsched_error_message(c));
	} else {
		r = hello(c, client_name, msg, msglen);
	}
	if (r < 0) {
		jsched_close(c);
		return r;
	}
	*out = c;
	return 0;
}

/* connect_path: jsched_connect_error, its hello deferred or not (connect_fd). */
static int connect_path(const char *socket_path, const char *client_name, struct jsched_conn **out,
			char *msg, size_t msglen, bool deferred)
{
	set_msg(msg, msglen, "%s", "");
	if (out == NULL)
		return JSCHED_EINVAL;
	*out = NULL;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (socket_path == NULL) {
		int r = jsched_default_socket_path(path, sizeof path);
		if (r < 0) {
			set_msg(msg, msglen, "the default socket path is too long (check JSCHED_SOCKET and "
					     "XDG_RUNTIME_DIR)");
			return JSCHED_ECONNECT;
		}
		socket_path = path;
	}
	int fd = open_socket(socket_path, msg, msglen);
	if (fd < 0)
		return fd;
	return connect_fd(fd, client_name, out, msg, msglen, deferred, true);
}

/* jsched_connect_error: see jsched.h. */
int jsched_connect_error(const char *socket_path, const char *client_name, struct jsched_conn **out,
			 char *msg, size_t msglen)
{
	return connect_path(socket_path, client_name, out, msg, msglen, false);
}

/* jsched_connect_deferred: see jsched.h. */
int jsched_connect_deferred(const char *socket_path, const char *client_name, struct jsched_conn **out,
			    char *msg, size_t msglen)
{
	return connect_path(socket_path, client_name, out, msg, msglen, true);
}

/* jsched_connect_fd: see jsched.h. */
int jsched_connect_fd(int fd, const char *client_name, struct jsched_conn **out)
{
	if (out == NULL || fd < 0) {
		if (fd >= 0)
			close(fd);
		return JSCHED_EINVAL;
	}
	*out = NULL;
	return connect_fd(fd, client_name, out, NULL, 0, false, false);
}

/* jsched_connect: see jsched.h. */
int jsched_connect(const char *socket_path, const char *client_name, struct jsched_conn **out)
{
	return jsched_connect_error(socket_path, client_name, out, NULL, 0);
}

/* jsched_close: see jsched.h. */
void jsched_close(struct jsched_conn *c)
{
	if (c == NULL)
		return;
	if (c->dead == 0) {
		c->dead = JSCHED_EDISCONNECTED;
		snprintf(c->dead_msg, sizeof c->dead_msg, "the connection was closed");
	}
	fail_inflight(c, JSCHED_EDISCONNECTED);
	while (c->events != NULL) {
		struct queued_event *q = c->events;
		c->events = q->next;
		jsched_event_free(q->ev);
		free(q);
	}
	if (c->fd >= 0)
		close(c->fd);
	jp_decoder_free(&c->dec);
	jp_buf_free(&c->out);
	json_decref(c->hello);
	free(c->hello_text);
	free(c->hello_strs);
	clear_error(c);
	free(c);
}

/* jsched_server_version and friends: see jsched.h. */
const char *jsched_server_version(const struct jsched_conn *c)
{
	return c != NULL ? c->version : NULL;
}

const char *jsched_server_instance(const struct jsched_conn *c)
{
	return c != NULL ? c->instance : NULL;
}

const char *jsched_hello_json(const struct jsched_conn *c)
{
	return c != NULL ? c->hello_text : NULL;
}

const char *jsched_client_name(const struct jsched_conn *c)
{
	return c != NULL ? c->client : NULL;
}

/* ---- reading a reply ---------------------------------------------------------------------- */

/* jsched_reply_ids: see jsched.h. */
int jsched_reply_ids(const struct jsched_reply *r, const uint64_t **ids, size_t *n)
{
	if (r == NULL || ids == NULL || n == NULL)
		return JSCHED_EINVAL;
	*ids = r->ids;
	*n = r->n_ids;
	return r->ids != NULL && r->n_ids > 0 ? 0 : JSCHED_EINVAL;
}

/* jsched_reply_results: see jsched.h. */
int jsched_reply_results(const struct jsched_reply *r, struct jsched_results **out)
{
	if (out != NULL)
		*out = NULL;
	const json_t *from = r != NULL ? reply_msg(r) : NULL;
	if (out == NULL || from == NULL)
		return JSCHED_EINVAL;
	struct jc_text text = r->text;
	if (json_object_get(from, "error") != NULL) {
		from = json_object_get(from, "error"); /* a wait's timeout carries the records */
		if (!jc_text_member(text, "error", &text))
			text.p = NULL;
	}
	/* A submit with wait carries its records in "records" / "record" ("jobs" / "job" are
	 * its ids). */
	struct jc_text sub = { NULL, 0 };
	const char *mk = json_object_get(from, "records") != NULL ? "records" : "jobs";
	const char *ok = json_object_get(from, "record") != NULL ? "record" : "job";
	const json_t *many = json_object_get(from, mk);
	if (json_is_array(many)) {
		if (!jc_text_member(text, mk, &sub))
			sub.p = NULL;
		return jc_results_from_json(many, sub, out);
	}
	const json_t *one = json_object_get(from, ok);
	if (!json_is_object(one))
		return JSCHED_EINVAL;
	if (!jc_text_member(text, ok, &sub))
		sub.p = NULL;
	struct jsched_results *l = calloc(1, sizeof *l);
	struct jsched_result **items = l != NULL ? calloc(1, sizeof *items) : NULL;
	struct jsched_result *rec = items != NULL ? jc_result_from_json(one, sub) : NULL;
	if (rec == NULL) { /* one is an object: only memory can be missing */
		free(items);
		free(l);
		return JSCHED_ENOMEM;
	}
	items[0] = rec;
	*l = (struct jsched_results){ .count = 1, .items = items };
	*out = l;
	return 0;
}

/* jsched_reply_json: see jsched.h. */
const char *jsched_reply_json(const struct jsched_reply *r)
{
	if (r == NULL || (r->msg == NULL && r->text.p == NULL))
		return NULL;
	struct jsched_reply *w = (struct jsched_reply *)(uintptr_t)r; /* a cache, made once */
	if (w->json == NULL && r->text.p != NULL && (w->json = malloc(r->text.len + 1)) != NULL) {
		memcpy(w->json, r->text.p, r->text.len); /* the payload as the daemon sent it */
		w->json[r->text.len] = '\0';
	} else if (w->json == NULL) {
		w->json = jc_dup_json(reply_msg(r));
	}
	return w->json;
}
