/* daemon/net/server.c: the Unix socket, accepted connections, framing and limits.
 *
 * Read path: libuv reads into one 64 KiB buffer shared by all connections (no allocation
 * per read; the decoder copies what it keeps), the codec's incremental decoder cuts frames, and each frame goes to
 * jd_session_frame() (the hot requests, read without a tree) or, parsed, to
 * jd_session_message().  A connection paused by backpressure keeps its undecoded bytes
 * in the decoder and is resumed by the session when its queue has room.
 *
 * Write path: a frame (the buffer the codec encoded it into, never copied) joins its
 * connection's batch, and the server's flush writes every connection's batch once per loop
 * iteration: in a uv_check handle after the poll phase's callbacks (the replies to what
 * was just read, what the workers' notices settled) and in a uv_prepare handle before the
 * next poll (what timers, the reaper and idle callbacks queued).  So every reply ready in
 * one iteration goes out in one writev(2) per connection: a client that pipelines
 * requests, or gets events beside its replies, costs one system call per iteration, not
 * one per frame.  A batch is written at once when it passes FLUSH_BYTES or FLUSH_FRAMES
 * (a large frame gains nothing from waiting).  The write is uv_try_write when libuv has
 * nothing queued for the connection (no request, no epoll_ctl); only what the socket did
 * not take goes through one uv_write request for the whole rest.  When the bytes libuv
 * holds queued for a connection (uv_stream_get_write_queue_size: what the kernel has not
 * taken) pass the configured limit, the peer is not reading, and the connection is closed
 * (the daemon lives on).  The alternative, writing each frame as it is made, cost a write(2) per
 * frame; holding frames longer (a timer) would add latency for nothing.
 *
 * Read budget: one connection gets at most READ_BUDGET_FRAMES frames, or the frame that takes
 * it past READ_BUDGET_BYTES, per loop iteration; then its reading stops and an idle handle
 * hands it the rest at the next iteration (before that iteration's poll, which serves every
 * other connection), so a client that pipelines many requests, or sends them faster than
 * they are answered, cannot hold the loop from the others.  The alternative, a budget in
 * time, would need a clock read per frame and cut at a place nobody can test.
 *
 * Busy time: each iteration's busy stretch, from the first callback after a poll to the
 * prepare phase before the next poll: the longest a request that arrived meanwhile can wait
 * to be read (metrics `loop`).  The callbacks that run after a poll and do work (requests
 * read, connections, write completions, the workers' notices, the journal's, a process's
 * exit and output, signals, the exec requests) stamp the clock at their top, the first of
 * an iteration only (jd_loop_woke, core/clock.c); an always-active check handle stamps it
 * when none of them ran (a timer's iteration: then the stretch starts at the check phase);
 * a prepare handle, always active, takes the stamp and records the stretch.  Two clock reads
 * per iteration (vDSO), no system call.  Before, libuv's idle-time metric
 * (UV_METRICS_IDLE_TIME) gave the time blocked in the poll, but with it on libuv polls with
 * a timeout of 0 before every poll that would block: one epoll_wait more per request
 * (4 system calls per one-request round trip instead of 3, hot part's count rows).
 *
 * The poll after a request ("loop_poll_us"): a client that waits for its reply sends
 * its next request soon after, and a loop that has gone to sleep in epoll_wait by then
 * is woken by the kernel, which on a virtual machine whose idle vCPU halts costs the
 * host's wake-up of that vCPU (tens of microseconds here, more than the round trip's
 * work).  So after reading a request the loop keeps polling without blocking for
 * loop_poll_us: an idle handle is active while the window is open, which makes libuv's
 * poll take a timeout of 0 (one epoll_wait per iteration; its callback closes the
 * window at its end).  A read while the window is open is a hit.  The loop polls only
 * while the workers leave it a CPU: the workers not parked (running jobs or searching
 * for them) plus the loop and the client it waits for fit in the online CPUs; else the
 * window stays shut (poll_skipped), so a loop never spins on a CPU a job could use.
 * This is the design of Linux's haltpoll cpuidle governor and of SO_BUSY_POLL (a
 * bounded poll before sleeping), which Unix sockets do not have.  Iterations that only
 * poll are not counted or timed in the busy metric: busy_check_cb does not stamp in a
 * window, so there the idle phase's own work (more_cb) stamps itself, and a timer's
 * callback that runs in a window is not timed (none of the hot path's do).
 *
 * Identity: SO_PEERCRED at accept gives uid, gid and pid; nothing the client says can
 * change them.
 */
#include "daemon/net/server.h"
#include "daemon/core/clock.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/net/net.h"
#include "daemon/core/log.h"
#include "daemon/core/proc.h"
#include "daemon/net/follow.h"
#include "daemon/run/cgroup.h"
#include "daemon/net/session.h"
#include "jsched/error.h"

/* Frames before hello are capped lower: an unauthenticated peer gets little memory. */
#define HELLO_FRAME_LIMIT (64u * 1024u)

/* FLUSH_BYTES, FLUSH_FRAMES: a batch this large is written at once. */
#define FLUSH_BYTES (64u * 1024u)
#define FLUSH_FRAMES 64u

/* One uv_write request: the frames of a batch the socket did not take at once. */
struct wreq {
	uv_write_t req;
	struct jd_conn *c;
	uint32_t n;
	char *bytes[];		/* the encoded frames (malloc'd), freed when written */
};

static struct jd_uid_count *uid_slot(struct jd_server *s, uid_t uid, bool create)
{
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i].uid == uid)
			return &s->uids[i];
	if (!create)
		return NULL;
	if (s->n_uids == s->cap_uids) {
		size_t cap = s->cap_uids ? s->cap_uids * 2 : 16;
		struct jd_uid_count *u = realloc(s->uids, cap * sizeof(*u));

		if (!u)
			return NULL;
		s->uids = u;
		s->cap_uids = cap;
	}
	s->uids[s->n_uids] = (struct jd_uid_count){.uid = uid};
	return &s->uids[s->n_uids++];
}

struct jd_uid_count *jd__uid_count(struct jd_net *d, uid_t uid)
{
	return uid_slot(&d->srv, uid, false);
}

static void jh_free(struct jd_conn *c);

/* out_drop: free c's batch unwritten and take c off the flush list. */
static void out_drop(struct jd_conn *c)
{
	struct jd_conn **pc = &c->d->srv.to_flush;

	for (uint32_t i = 0; i < c->n_out; i++)
		free(c->out[i].bytes);
	c->n_out = 0;
	c->out_bytes = 0;
	if (!c->on_flush)
		return;
	while (*pc != c)
		pc = &(*pc)->flush_next;
	*pc = c->flush_next;
	c->on_flush = false;
}

static void conn_handle_closed_cb(uv_handle_t *h)
{
	struct jd_conn *c = h->data;

	if (--c->open_handles == 0) {
		out_drop(c);
		free(c->out);
		jp_decoder_free(&c->dec);
		free(c);
	}
}

/* LINGER_MS: how long a closed connection may take to read what was written to it before
 * the close (an error reply saying why, the replies before it).  The bytes are bounded by
 * limits.output_buffer_bytes already; this bounds the time. */
#define LINGER_MS 2000

static void close_handles(struct jd_conn *c)
{
	out_drop(c);
	if (!uv_is_closing((uv_handle_t *)&c->pipe))
		uv_close((uv_handle_t *)&c->pipe, conn_handle_closed_cb);
	if (!uv_is_closing((uv_handle_t *)&c->hs_timer))
		uv_close((uv_handle_t *)&c->hs_timer, conn_handle_closed_cb);
}

static void lingered_cb(uv_shutdown_t *req, int status)
{
	(void)status;
	close_handles(req->data);
}

static void linger_timeout_cb(uv_timer_t *t)
{
	close_handles(t->data);
}

static void jh_free(struct jd_conn *c);
static void more_drop(struct jd_conn *c);

/* jh_drop: take c off the server's list of connections with held replies, and free them. */
static void jh_drop(struct jd_conn *c)
{
	if (c->on_jh) {
		struct jd_conn **pc = &c->d->srv.jh_conns;

		while (*pc != c)
			pc = &(*pc)->jh_next;
		*pc = c->jh_next;
		c->on_jh = false;
	}
	jh_free(c);
}

/* held_timeout_cb: a closed connection's held replies were not released within
 * LINGER_MS: drop them and close. */
static void held_timeout_cb(uv_timer_t *t)
{
	struct jd_conn *c = t->data;

	c->jh_linger = false;
	jh_drop(c);
	close_handles(c);
}

static int conn_flush(struct jd_conn *c);

/* linger: start flushing what is still queued for c (its batch, then libuv's queue), then
 * close it (lingered_cb), or after LINGER_MS whatever the peer read.  Returns false when
 * there is nothing to flush or the flush cannot start: close at once. */
static bool linger(struct jd_conn *c)
{
	if (!c->abort)
		conn_flush(c); /* the batch first: the reply that says why is in it */
	if (c->abort || uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) == 0)
		return false;
	c->shutdown_req.data = c;
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe, lingered_cb) < 0)
		return false;
	uv_timer_start(&c->hs_timer, linger_timeout_cb, LINGER_MS, 0);
	return true;
}

/* reap_cb: an idle callback, run at the top of the next loop iteration (outside every
 * other callback): finish closing the connections marked by jd_conn_close. */
static void reap_cb(uv_idle_t *h)
{
	struct jd_net *d = h->data;
	struct jd_server *s = &d->srv;

	while (s->to_close) {
		struct jd_conn *c = s->to_close;

		s->to_close = c->close_next;
		jd_session_closed(c);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		if (c->on_jh && !c->abort) {
			/* Replies held for the journal, the error that says why among them:
			 * they are released (jd_server_release_held) and flushed before the
			 * close, within LINGER_MS. */
			c->jh_linger = true;
			uv_timer_start(&c->hs_timer, held_timeout_cb, LINGER_MS, 0);
			continue;
		}
		jh_drop(c);
		/* The reply that says why (bad_frame, handshake_required ...) may sit behind
		 * others in the write queue: closing now would cancel it. */
		if (!linger(c))
			close_handles(c);
	}
	uv_idle_stop(h);
}

void jd_conn_close(struct jd_conn *c, const char *why)
{
	struct jd_server *s = &c->d->srv;

	struct jd_uid_count *u;

	if (c->closing)
		return;
	c->closing = true;
	/* It stops counting against the limits now, not when the reaper runs: a client
	 * that closes and connects again at once must find its place free.  (A refused one
	 * was counted off when it was refused.) */
	if (c->refused) {
		s->n_refusing--;
	} else {
		s->n_conns--;
		if ((u = uid_slot(s, c->uid, false)) && u->n > 0)
			u->n--;
	}
	s->held_bytes -= c->held;
	c->held = 0;
	c->frame_timing = false;
	jd_log(JD_LOG_DEBUG, "connection %llu (uid %u pid %d) closed: %s",
	       (unsigned long long)c->serial, (unsigned)c->uid, (int)c->pid, why);
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_timer_stop(&c->hs_timer);
	more_drop(c);
	c->close_next = s->to_close;
	s->to_close = c;
	uv_idle_start(&s->reaper, reap_cb);
}

static void write_cb(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct jd_conn *c = w->c;

	jd_loop_woke();

	for (uint32_t i = 0; i < w->n; i++)
		free(w->bytes[i]);
	free(w);
	if (status < 0 && status != UV_ECANCELED) {
		c->abort = true;
		jd_conn_close(c, uv_strerror(status));
		return;
	}
	jd_follow_drained(c); /* its followers may send again */
}

/* A frame held for the journal (struct jd_conn's held list). */
struct jd_jheld {
	struct jd_jheld *next;
	uint64_t seq;		/* sent once the journal is durable up to it */
	char *bytes;
	size_t len;
};

/* conn_flush: write c's batch: with nothing queued in libuv for c, at once
 * (uv_try_write: one writev(2), no request); what the socket did not take, or all of it
 * behind frames libuv still holds, through one uv_write request.  The batch is empty
 * afterwards.  Returns 0, or JSCHED_EIO / JSCHED_ENOMEM when c had to be closed. */
static int conn_flush(struct jd_conn *c)
{
	uv_buf_t bufs[FLUSH_FRAMES];
	uint32_t n = c->n_out, first = 0;
	size_t skip = 0;
	struct wreq *w;
	int rc;

	if (n == 0)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		bufs[i] = uv_buf_init(c->out[i].bytes, (unsigned)c->out[i].len);
	c->n_out = 0;
	c->out_bytes = 0;
	c->d->srv.flushes++;
	c->d->srv.flushed_frames += n;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) == 0) {
		rc = uv_try_write((uv_stream_t *)&c->pipe, bufs, n);
		if (rc < 0 && rc != UV_EAGAIN && rc != UV_ENOSYS) {
			for (uint32_t i = 0; i < n; i++)
				free(c->out[i].bytes);
			c->abort = true;
			jd_conn_close(c, uv_strerror(rc));
			return JSCHED_EIO;
		}
		/* Free what the kernel took whole; the rest from the first it did not. */
		for (size_t done = rc > 0 ? (size_t)rc : 0; first < n; first++) {
			if (done < bufs[first].len) {
				skip = done;
				break;
			}
			done -= bufs[first].len;
			free(c->out[first].bytes);
		}
		if (first == n)
			return 0;
		bufs[first].base += skip;
		bufs[first].len -= skip;
	}
	w = malloc(sizeof(*w) + (n - first) * sizeof(w->bytes[0]));
	if (!w) {
		for (uint32_t i = first; i < n; i++)
			free(c->out[i].bytes);
		c->abort = true;
		jd_conn_close(c, "out of memory");
		return JSCHED_ENOMEM;
	}
	w->c = c;
	w->n = n - first;
	for (uint32_t i = first; i < n; i++)
		w->bytes[i - first] = c->out[i].bytes;
	rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, bufs + first, n - first, write_cb);
	if (rc < 0) {
		for (uint32_t i = 0; i < w->n; i++)
			free(w->bytes[i]);
		free(w);
		c->abort = true;
		jd_conn_close(c, uv_strerror(rc));
		return JSCHED_EIO;
	}
	return 0;
}

/* flush_all: write every connection's batch (the flush handles' callback). */
static void flush_all(struct jd_server *s)
{
	while (s->to_flush) {
		struct jd_conn *c = s->to_flush;

		s->to_flush = c->flush_next;
		c->on_flush = false;
		conn_flush(c);
	}
	uv_check_stop(&s->flush_check);
	uv_prepare_stop(&s->flush_prepare);
}

/* busy_prepare_cb: count the iteration that ends here (before the next poll): its busy
 * time is the time since its first callback after the poll (jd_loop_woke). */
static void busy_prepare_cb(uv_prepare_t *h)
{
	struct jd_net *d = h->data;
	struct jd_server *s = &d->srv;
	uint64_t woke = jd_loop_woke_take();

	if (s->to_arm)
		jd_session_waits_arm(d); /* before the poll: no poll waits past a timeout */

	if (woke) {
		uint64_t now = jd_now_ns(), busy = now > woke ? now - woke : 0;

		s->iterations++;
		if (busy > JD_LOOP_BUSY_BOUND_NS)
			s->busy_over++;
		jd_hist_record(&s->busy, busy);
	}
}

/* busy_check_cb: an iteration in which no stamping callback ran (timers' work comes
 * after the check phase) is timed from here. */
static void busy_check_cb(uv_check_t *h)
{
	struct jd_server *s = h->data;

	if (!s->poll_until)
		jd_loop_woke();
}

/* poll_room: do the workers leave the loop a CPU to poll on (and its client one)? */
static bool poll_room(const struct jd_net *d)
{
	const struct jd_pool *p = d->runner ? d->runner->pool : NULL;

	if (!p)
		return d->srv.cpus >= 2;
	unsigned busy = jd_pool_workers(p) - jd_pool_parked(p);
	return busy + 2 <= d->srv.cpus;
}

/* POLL_GAP_NS: an iteration of the window that began this long after the one before
 * means another thread ran on the loop's CPU during its sched_yield (an iteration that
 * polls and yields takes 1-2 us): the CPU is wanted, and the window closes. */
#define POLL_GAP_NS 20000u

/* poll_cb: an iteration in the window: poll again without blocking (and yield the CPU to
 * whatever else is runnable on it, such as the client on the same CPU), or close it. */
static void poll_cb(uv_idle_t *h)
{
	struct jd_net *d = h->data;
	struct jd_server *s = &d->srv;

	uint64_t now = jd_now_ns();

	if (now >= s->poll_until || !poll_room(d) || now - s->poll_last > POLL_GAP_NS) {
		if (now < s->poll_until && now - s->poll_last > POLL_GAP_NS)
			s->poll_gaps++;
		s->poll_until = 0;
		uv_idle_stop(h);
		return;
	}
	s->poll_last = now;
	s->polls++;
	/* Not before the window's first poll: that poll also drops from epoll's ready list
	 * the connection just answered (level-triggered: it stays listed until a poll finds
	 * it empty), as the blocking poll did at once; yielding first let a peer on this CPU
	 * run and make other connections readable behind it, so the answered one was read
	 * first again (test_daemon_edges' pipelining client: 5 tries failed in 4 of 6 runs). */
	if (s->poll_fresh)
		s->poll_fresh = false;
	else
		sched_yield();
}

/* poll_window: open (or extend) the window for us microseconds from now, when the
 * workers leave the loop a CPU.  Returns whether it did. */
static bool poll_window(struct jd_net *d, uint32_t us)
{
	struct jd_server *s = &d->srv;
	uint64_t until;

	if (!poll_room(d))
		return false;
	s->poll_fresh = true;
	s->poll_last = jd_now_ns();
	until = s->poll_last + (uint64_t)us * 1000u;
	if (until > s->poll_until)
		s->poll_until = until;
	if (!uv_is_active((uv_handle_t *)&s->poll_idle))
		uv_idle_start(&s->poll_idle, poll_cb);
	return true;
}

/* poll_open: after a request was read, open (or extend) the window of loop_poll_us. */
static void poll_open(struct jd_net *d)
{
	uint32_t us = d->cfg->loop_poll_us;

	if (!us)
		return;
	if (poll_window(d, us))
		d->srv.poll_windows++;
	else
		d->srv.poll_skipped++;
}

void jd_server_poll_for(struct jd_net *d, uint32_t us)
{
	if (us && poll_window(d, us))
		d->srv.poll_journal++;
}

static void flush_check_cb(uv_check_t *h)
{
	flush_all(h->data);
}

static void flush_prepare_cb(uv_prepare_t *h)
{
	flush_all(h->data);
}

/* queue_now: add one encoded frame (takes `bytes`, malloc'd) to c's batch, enforcing the
 * output limit; the batch goes out at this loop iteration's flush, or at once when it is
 * large.  Returns 0 or a negative JSCHED_E* code (c is then closed). */
static int queue_now(struct jd_conn *c, char *bytes, size_t len)
{
	struct jd_server *s = &c->d->srv;
	size_t before = uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);

	/* The limit counts what libuv holds queued before this frame: a client that reads
	 * gets one whole reply of any size the protocol allows (reply_frame_bytes, above the
	 * default limit) without being cut; one that does not read is cut at its next frame.
	 * The batch is not counted: it is written within this iteration, and is at most
	 * FLUSH_BYTES before it is written at once. */
	if (before > c->d->cfg->output_buffer_bytes) {
		free(bytes);
		s->disconnected_limit++;
		jd_log(JD_LOG_WARN, "connection %llu (uid %u pid %d): %zu bytes unread, over the "
		       "output limit; disconnecting", (unsigned long long)c->serial,
		       (unsigned)c->uid, (int)c->pid, before);
		c->abort = true; /* it is not reading: what is queued is dropped */
		jd_conn_close(c, "output buffer limit");
		return JSCHED_ELIMIT_EXCEEDED;
	}
	if (c->n_out == c->cap_out) {
		uint32_t cap = c->cap_out ? FLUSH_FRAMES : 4;
		struct jd_outbuf *o = realloc(c->out, cap * sizeof(*o));

		if (!o) {
			free(bytes);
			return JSCHED_ENOMEM;
		}
		c->out = o;
		c->cap_out = cap;
	}
	c->out[c->n_out++] = (struct jd_outbuf){bytes, len};
	c->out_bytes += len;
	if (c->out_bytes >= FLUSH_BYTES || c->n_out == FLUSH_FRAMES) {
		if (c->on_flush) /* written now: off the list */
			for (struct jd_conn **pc = &s->to_flush;; pc = &(*pc)->flush_next)
				if (*pc == c) {
					*pc = c->flush_next;
					c->on_flush = false;
					break;
				}
		return conn_flush(c);
	}
	if (!c->on_flush) {
		if (!s->to_flush) {
			uv_check_start(&s->flush_check, flush_check_cb);
			uv_prepare_start(&s->flush_prepare, flush_prepare_cb);
		}
		c->on_flush = true;
		c->flush_next = s->to_flush;
		s->to_flush = c;
	}
	return 0;
}

/* hold: keep a frame until the journal is durable up to seq.  Takes `bytes`. */
static int hold(struct jd_conn *c, char *bytes, size_t len, uint64_t seq)
{
	struct jd_jheld *h = malloc(sizeof(*h));

	if (!h) {
		free(bytes);
		return JSCHED_ENOMEM;
	}
	if (c->jh_tail && c->jh_tail->seq > seq)
		seq = c->jh_tail->seq; /* in order: never before what is held already */
	*h = (struct jd_jheld){NULL, seq, bytes, len};
	c->jh_bytes += len;
	if (c->jh_tail)
		c->jh_tail->next = h;
	else
		c->jh_head = h;
	c->jh_tail = h;
	if (!c->on_jh) {
		c->on_jh = true;
		c->jh_next = c->d->srv.jh_conns;
		c->d->srv.jh_conns = c;
	}
	return 0;
}

/* queue: send a frame now, or hold it until the journal has made durable what was
 * recorded before it (and behind the frames held on c already). */
static int queue(struct jd_conn *c, char *bytes, size_t len)
{
	const struct jd_net_hooks *h = &c->d->hooks;
	uint64_t need = !h->journal_hold || c->jh_bypass ? 0
			: c->jh_upto_set ? h->journal_hold_upto(h->ctx, c->jh_upto)
					 : h->journal_hold(h->ctx);

	return need || c->jh_head ? hold(c, bytes, len, need) : queue_now(c, bytes, len);
}

static void jh_free(struct jd_conn *c)
{
	while (c->jh_head) {
		struct jd_jheld *h = c->jh_head;

		c->jh_head = h->next;
		free(h->bytes);
		free(h);
	}
	c->jh_tail = NULL;
	c->jh_bytes = 0;
}

size_t jd_conn_pending(const struct jd_conn *c)
{
	return uv_stream_get_write_queue_size((const uv_stream_t *)&c->pipe) + c->out_bytes +
	       c->jh_bytes;
}

void jd_server_release_held(struct jd_net *d, uint64_t durable)
{
	struct jd_conn **pc = &d->srv.jh_conns;

	while (*pc) {
		struct jd_conn *c = *pc;

		bool open = !c->closing || (c->jh_linger && !c->abort);

		while (c->jh_head && c->jh_head->seq <= durable && open) {
			struct jd_jheld *h = c->jh_head;

			c->jh_head = h->next;
			if (!c->jh_head)
				c->jh_tail = NULL;
			c->jh_bytes -= h->len;
			queue_now(c, h->bytes, h->len);
			free(h);
		}
		if (c->jh_head && open && !c->abort) {
			pc = &c->jh_next;
			continue;
		}
		jh_free(c);
		c->on_jh = false;
		*pc = c->jh_next;
		if (c->jh_linger) {
			/* Closed, and every held reply is out: flush them, then close. */
			c->jh_linger = false;
			uv_timer_stop(&c->hs_timer);
			if (!linger(c))
				close_handles(c);
			continue;
		}
		jd_conn_maybe_done(c); /* a half-closed one waited for these answers */
	}
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct jd_conn *c = h->data;

	(void)suggested;
	*buf = uv_buf_init(c->d->srv.rbuf, sizeof(c->d->srv.rbuf));
}

/* FRAME_KEEP: decoder room an idle connection keeps between frames (one read's worth);
 * more, left by a large frame, is freed once the frame is taken. */
#define FRAME_KEEP (64u * 1024u)

static void frame_timeout_cb(uv_timer_t *t)
{
	jd_session_fatal(t->data, JSCHED_ETIMEOUT,
			 "a frame did not complete within its time limit (limits.frame_ms)");
}

/* account_input: after c's input was decoded, free an idle decoder's large buffer, keep
 * the count of bytes every connection holds for frames (s->held_bytes), refuse c if that
 * count passes limits.partial_frame_bytes while c has a frame in progress, and time such
 * a frame (after hello; before it, the handshake time limit covers it).  A connection
 * paused by `block` holds whole frames we chose not to read: not timed. */
static void account_input(struct jd_conn *c)
{
	struct jd_server *s = &c->d->srv;
	bool partial;
	size_t held;

	if (c->closing)
		return;
	jp_decoder_trim(&c->dec, FRAME_KEEP);
	held = jp_decoder_held(&c->dec);
	s->held_bytes = s->held_bytes - c->held + held;
	c->held = held;
	partial = jp_decoder_buffered(&c->dec) > 0 && !c->read_paused && !c->on_more && !jd_conn_in_slices(c);
	if (partial && s->held_bytes > c->d->cfg->partial_frame_bytes) {
		jd_session_fatal(c, JSCHED_ELIMIT_EXCEEDED,
				 "the frames in progress on all connections together pass "
				 "limits.partial_frame_bytes");
		return;
	}
	if (!c->hello_done || partial == c->frame_timing)
		return;
	c->frame_timing = partial;
	if (partial)
		uv_timer_start(&c->hs_timer, frame_timeout_cb, c->d->cfg->frame_ms, 0);
	else
		uv_timer_stop(&c->hs_timer);
}

/* READ_BUDGET_FRAMES, READ_BUDGET_BYTES: what one connection may have handled per loop
 * iteration ("Read budget" above). */
#define READ_BUDGET_FRAMES 64u
#define READ_BUDGET_BYTES (64u * 1024u)

static void more_cb(uv_idle_t *h);

/* defer_rest: c's budget ran out with whole frames perhaps left: stop reading it and hand
 * it the rest at the next iteration. */
static void defer_rest(struct jd_conn *c)
{
	c->d->srv.read_yields++;
	jd_conn_defer(c);
}

void jd_conn_defer(struct jd_conn *c)
{
	struct jd_server *s = &c->d->srv;

	uv_read_stop((uv_stream_t *)&c->pipe);
	if (c->on_more)
		return;
	c->on_more = true;
	c->more_next = s->more;
	s->more = c;
	uv_idle_start(&s->more_idle, more_cb);
}

/* more_drop: take c off the list of connections with frames left (it is closing). */
static void more_drop(struct jd_conn *c)
{
	struct jd_conn **pc = &c->d->srv.more;

	if (!c->on_more)
		return;
	while (*pc != c)
		pc = &(*pc)->more_next;
	*pc = c->more_next;
	c->on_more = false;
}

/* drain_frames: hand the whole frames in the decoder to the session, until the connection
 * pauses or closes, or its budget for this iteration runs out (then the rest waits for the
 * next, defer_rest).  A decoding error is answered and ends the connection (the stream can
 * no longer be trusted to be in sync). */
static void drain_frames(struct jd_conn *c)
{
	unsigned frames = 0;
	size_t bytes = 0;

	/* The workers' notices first: an end that woke no one (nothing waited for it) is
	 * in the jobs' states before any request reads them (runner.c, "Which ends wake
	 * the loop"). */
	if (c->d->runner)
		jd_runner_drain(c->d->runner);
	while (!c->closing && !c->read_paused && !jd_conn_in_slices(c)) {
		const unsigned char *text;
		size_t len;
		json_t *msg = NULL;
		int rc;

		if (frames >= READ_BUDGET_FRAMES || bytes >= READ_BUDGET_BYTES) {
			defer_rest(c);
			return;
		}
		rc = jp_decoder_next_frame(&c->dec, &text, &len);
		if (rc == 0)
			return;
		if (rc > 0) {
			frames++;
			bytes += len;
			/* The hot requests are read without a tree, the others with one. */
			c->frame.msg = NULL;
			c->frame.text = (const char *)text;
			c->frame.len = len;
			if (jd_session_frame(c, text, len))
				continue;
			rc = jp_frame_parse(text, len, &msg, NULL);
		}
		if (rc < 0) {
			jd_session_fatal(c, rc, rc == JSCHED_EFRAME_TOO_LARGE
						     ? "frame larger than the limit"
						     : "malformed frame");
			return;
		}
		/* The submit's journal record takes its specs' text from here. */
		c->frame.msg = msg;
		jd_session_message(c, msg);
		c->frame.msg = NULL;
		json_decref(msg);
	}
}

/* peer_gone: has the peer hung up (POLLHUP: closed both ways) or, with POLLRDHUP too,
 * shut its write side?  A poll of one fd, without waiting. */
static bool peer_gone(const struct jd_conn *c, short events)
{
	struct pollfd p = {.events = events};
	uv_os_fd_t fd;

	if (uv_fileno((const uv_handle_t *)&c->pipe, &fd) < 0)
		return true;
	p.fd = fd;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

void jd_conn_maybe_done(struct jd_conn *c)
{
	if (c->read_eof && !c->closing && !c->waits && !c->read_paused && !c->on_more && !jd_conn_in_slices(c) &&
	    !c->jh_head)
		jd_conn_close(c, "end of stream, every answer sent");
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct jd_conn *c = stream->data;
	int rc;

	jd_loop_woke();
	if (nread == 0)
		return;
	if (c->d->srv.poll_until && nread > 0)
		c->d->srv.poll_hits++;
	if (c->refused) {
		jd_conn_close(c, "over a connection limit");
		return;
	}
	if (nread < 0) {
		if (nread == UV_EOF && !peer_gone(c, POLLHUP)) {
			/* The peer shut its write side only: no more requests, but it may still
			 * read the answers to those it sent (waits).  Any partial frame is
			 * dropped. */
			c->read_eof = true;
			uv_read_stop(stream);
			uv_timer_stop(&c->hs_timer);
			jd_conn_maybe_done(c);
			return;
		}
		jd_conn_close(c, nread == UV_EOF ? "end of stream" : uv_strerror((int)nread));
		return;
	}
	rc = jp_decoder_feed(&c->dec, buf->base, (size_t)nread);
	if (rc < 0) {
		jd_session_fatal(c, rc, "cannot buffer input");
		return;
	}
	drain_frames(c);
	account_input(c);
	poll_open(c->d);
}

int jd_conn_send(struct jd_conn *c, json_t *msg)
{
	size_t len;
	char *bytes;
	int rc;

	if (c->closing)
		return JSCHED_EDISCONNECTED;
	rc = jp_frame_encode(msg, &bytes, &len);
	return rc < 0 ? rc : queue(c, bytes, len);
}

int jd_conn_send_frame(struct jd_conn *c, struct jp_buf *b)
{
	size_t n = b->len - JP_HEADER_BYTES;
	unsigned char *p = b->data;

	jp_buf_init(b);
	if (c->closing || n > UINT32_MAX) {
		free(p);
		return c->closing ? JSCHED_EDISCONNECTED : JSCHED_EFRAME_TOO_LARGE;
	}
	p[0] = (unsigned char)(n >> 24);
	p[1] = (unsigned char)(n >> 16);
	p[2] = (unsigned char)(n >> 8);
	p[3] = (unsigned char)n;
	return queue(c, (char *)p, n + JP_HEADER_BYTES);
}

void jd_conn_pause(struct jd_conn *c)
{
	if (c->read_paused || c->closing)
		return;
	c->read_paused = true;
	uv_read_stop((uv_stream_t *)&c->pipe);
}

/* drain_and_read: hand c the frames its decoder holds (as its budget allows), then read
 * it again unless it closed, paused or has frames left for the next iteration; at the end
 * of its stream, close it if nothing is left to answer. */
static void drain_and_read(struct jd_conn *c)
{
	drain_frames(c);
	account_input(c);
	if (c->closing || c->read_paused || c->on_more || jd_conn_in_slices(c))
		return;
	if (c->read_eof)
		jd_conn_maybe_done(c);
	else
		uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
}

void jd_conn_resume(struct jd_conn *c)
{
	json_t *held = c->blocked;

	if (!c->read_paused || c->closing)
		return;
	c->read_paused = false;
	/* The held submit first (it may pause the connection again), then the frames
	 * already buffered, then new bytes. */
	c->blocked = NULL;
	if (held) {
		jd_session_message(c, held);
		json_decref(held);
	}
	drain_and_read(c);
}

/* more_cb: the idle handle's callback, at the top of the next iteration: hand each
 * connection whose budget ran out its next frames, and read it again once it has none
 * left. */
static void more_cb(uv_idle_t *h)
{
	struct jd_server *s = h->data;
	struct jd_conn *list = s->more;

	jd_loop_woke(); /* in a poll window the check phase before did not stamp */
	s->more = NULL;
	uv_idle_stop(h);
	while (list) {
		struct jd_conn *c = list;

		list = c->more_next;
		c->on_more = false;
		if (c->closing)
			continue;
		/* An answer in slices first: its frame goes out before any later request's. */
		if (jd_session_answer_more(c) || jd_session_admit_more(c)) {
			jd_conn_defer(c);
			continue;
		}
		drain_and_read(c); /* may put it on s->more again (and start the handle) */
	}
}

void jd_conn_set_frame_limit(struct jd_conn *c, size_t bytes)
{
	jp_decoder_set_limit(&c->dec, bytes);
}

void jd_conn_hello_done(struct jd_conn *c)
{
	c->hello_done = true;
	uv_timer_stop(&c->hs_timer);
}

static void handshake_timeout_cb(uv_timer_t *t)
{
	struct jd_conn *c = t->data;

	if (c->refused) /* it was told why already */
		jd_conn_close(c, "over a connection limit");
	else
		jd_session_fatal(c, JSCHED_ETIMEOUT, "no hello within the handshake time");
}

/* refuse: a connection over a limit gets one frame saying why (too_many_connections,
 * id null), and is closed when it first sends (its hello) or after REFUSED_LINGER_MS.
 * Closing at once would make the client's hello fail to write (EPIPE) before it read the
 * reason.  At most REFUSING_MAX wait so at once (their descriptors come out of the
 * open-file reserve of jd_server_connection_cap); past that, a storm is refused at once. */
#define REFUSED_LINGER_MS 1000
#define REFUSING_MAX 32
static void refuse(struct jd_conn *c, const char *why)
{
	struct jd_server *s = &c->d->srv;
	struct jd_uid_count *u;

	s->refused++;
	if (s->n_refusing >= REFUSING_MAX) {
		jd_session_fatal(c, JSCHED_ETOO_MANY_CONNECTIONS, why); /* a storm: at once */
		return;
	}
	/* Told why, it no longer counts against the limits, as if closed (jd_conn_close does
	 * not count it off again). */
	c->refused = true;
	s->n_refusing++;
	s->n_conns--;
	if ((u = uid_slot(s, c->uid, false)) && u->n > 0)
		u->n--;
	jd_reply_error_obj(c, JP_ID_NONE, jp_error_new(JSCHED_ETOO_MANY_CONNECTIONS, NULL, why));
	uv_timer_start(&c->hs_timer, handshake_timeout_cb, REFUSED_LINGER_MS, 0);
	uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
}

/* hung_up: of c's uid's connections (any uid's with any_uid) but c, those the peer has
 * left, looked at when a limit is reached: the event loop has not read their end of stream
 * yet (it may come in the same batch as this connect), so they no longer count.  One the
 * peer has closed both ways, with nothing left to read and nothing in progress (no wait,
 * no frame waiting for a read budget or a blocked submit), is closed here, as its end of
 * stream would close it: it stops counting at once and is not looked at again.  One
 * half-closed, or with requests still to read, is marked (peer_left) and counted, and
 * not polled again: the peer cannot take a shutdown back.  Returns how many of those
 * marked ones there are.  Before, every connection was polled at every accept past the
 * limit, and a loop of bare connect + close, which outruns the reading of their ends,
 * cost the square of the connections open: 1.4-3.2 ms per connect past ~1,000. */
static uint32_t hung_up(struct jd_server *s, const struct jd_conn *c, bool any_uid)
{
	uint32_t n = 0;

	for (struct jd_conn *o = s->conns; o; o = o->next) {
		uv_os_fd_t fd;
		int unread = 1;

		if (o == c || o->closing || o->refused || o->waits || (!any_uid && o->uid != c->uid))
			continue;
		if (o->peer_left) {
			n++;
			continue;
		}
		s->limit_polls++;
		if (!peer_gone(o, POLLRDHUP | POLLHUP))
			continue;
		if (!o->read_eof && !o->read_paused && !o->on_more &&
		    uv_fileno((const uv_handle_t *)&o->pipe, &fd) == 0 && peer_gone(o, POLLHUP) &&
		    ioctl(fd, FIONREAD, &unread) == 0 && unread == 0) {
			jd_conn_close(o, "end of stream (seen at a connection limit)");
			continue;
		}
		o->peer_left = true;
		n++;
	}
	return n;
}

uint32_t jd_server_connection_cap(const struct jd_net *d)
{
	/* Of the open-file limit (read at each accept: it can change under a running
	 * process), a reserve for all but connections: the listener, the loop's own,
	 * the journal, exec jobs' pipes (three per process slot), the control files the
	 * exec path keeps open (run/cgroup.h).  Past it a connection is refused with a
	 * frame that says so; without it the kernel would refuse the accept (EMFILE) and
	 * libuv drop the connection silently. */
	uint64_t reserve = 64 + 3 * (uint64_t)d->cfg->exec.max_processes + JD_CG_HELD_FDS, budget;
	uint32_t cap = d->cfg->max_connections;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return cap;
	budget = rl.rlim_cur > reserve + 1 ? rl.rlim_cur - reserve : 1;
	return budget < cap ? (uint32_t)budget : cap;
}

static void connection_cb(uv_stream_t *listener, int status)
{
	struct jd_net *d = listener->data;
	struct jd_server *s = &d->srv;
	struct jd_conn *c;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct jd_uid_count *u;
	uv_os_fd_t fd;
	uint32_t left;

	jd_loop_woke();

	if (status < 0) {
		jd_log(JD_LOG_WARN, "accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || jp_decoder_init(&c->dec, HELLO_FRAME_LIMIT) < 0) {
		/* Nothing to accept into: take the connection off the backlog and drop it,
		 * so the listener does not stay readable forever. */
		int lfd, cfd;

		free(c);
		if (uv_fileno((uv_handle_t *)listener, &lfd) == 0 &&
		    (cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
			close(cfd);
		jd_log(JD_LOG_WARN, "out of memory: dropped a connection");
		return;
	}
	c->d = d;
	c->serial = ++s->next_serial;
	uv_pipe_init(d->loop, &c->pipe, 0);
	uv_timer_init(d->loop, &c->hs_timer);
	c->pipe.data = c;
	c->hs_timer.data = c;
	c->open_handles = 2;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0 ||
	    uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		c->uid = (uid_t)-1;
		jd_conn_close(c, "accept failed");
		return;
	}
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	s->accepted++;
	u = uid_slot(s, c->uid, true);
	if (u)
		u->n++;
	/* (hung_up closes connections, which counts them off: it is called before the
	 * count is read again.) */
	if (s->n_conns > jd_server_connection_cap(d) &&
	    (left = hung_up(s, c, true), s->n_conns - left > jd_server_connection_cap(d))) {
		refuse(c, "too many connections to jschedd (limits.connections, or the open-file "
			  "limit)");
		return;
	}
	if (!u || (u->n > d->cfg->max_connections_per_uid &&
		   (left = hung_up(s, c, false), u->n - left > d->cfg->max_connections_per_uid))) {
		refuse(c, "too many connections from this uid (limits.connections_per_uid)");
		return;
	}
	/* A graceful shutdown still answers everything but submits, on new connections too,
	 * until the last job has ended; an immediate one takes no one new. */
	if (d->state == JD_STOPPING) {
		jd_session_fatal(c, JSCHED_ESHUTTING_DOWN, "jschedd is shutting down");
		return;
	}
	uv_timer_start(&c->hs_timer, handshake_timeout_cb, d->cfg->handshake_ms, 0);
	uv_read_start((uv_stream_t *)&c->pipe, alloc_cb, read_cb);
}

/* probe_live: true if a daemon accepts connections on path.  A socket that accepts is
 * not always one: a daemon killed while it was starting a command leaves that command
 * holding a copy of its listening socket until the command's close_range or exec
 * (core/proc.h), and the kernel still queues connections on it that nobody will read.
 * The listener's credentials (SO_PEERCRED: the process that called listen) tell: if that
 * process is gone, the socket is stale, *heir_of its pid. */
static bool probe_live(const char *path, pid_t *heir_of)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cr;
	socklen_t len = sizeof(cr);
	bool live;

	*heir_of = 0;
	if (fd < 0)
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		live = !(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid > 0 &&
			 jd_proc_gone(cr.pid));
		if (!live)
			*heir_of = cr.pid;
	} else {
		live = errno == EAGAIN;
	}
	close(fd);
	return live;
}

/* raise_fd_limit: the soft open-file limit up to the hard one, at start. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int jd_server_listen(struct jd_net *d, int activated_fd, char *err, size_t errlen)
{
	struct jd_server *s = &d->srv;
	struct stat st;
	mode_t old_umask;
	unsigned mode;
	gid_t group;
	int rc;

	raise_fd_limit();
	uv_idle_init(d->loop, &s->reaper);
	s->reaper.data = d;
	uv_idle_init(d->loop, &s->more_idle);
	s->more_idle.data = s;
	uv_check_init(d->loop, &s->flush_check);
	uv_prepare_init(d->loop, &s->flush_prepare);
	s->flush_check.data = s->flush_prepare.data = s;
	uv_prepare_init(d->loop, &s->busy_prepare);
	s->busy_prepare.data = d;
	uv_prepare_start(&s->busy_prepare, busy_prepare_cb);
	uv_unref((uv_handle_t *)&s->busy_prepare); /* it never keeps the loop running */
	uv_check_init(d->loop, &s->busy_check);
	s->busy_check.data = s;
	uv_check_start(&s->busy_check, busy_check_cb);
	uv_unref((uv_handle_t *)&s->busy_check);
	uv_idle_init(d->loop, &s->poll_idle);
	s->poll_idle.data = d;
	uv_unref((uv_handle_t *)&s->poll_idle);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->cpus = ncpu > 0 ? (unsigned)ncpu : 1;
	uv_pipe_init(d->loop, &s->listener, 0);
	s->listener.data = d;
	if (d->cfg->socket[0]) {
		snprintf(s->path, sizeof(s->path), "%s", d->cfg->socket);
	} else if (jp_default_socket_path(s->path, sizeof(s->path)) < 0) {
		snprintf(err, errlen, "the default socket path does not fit in a socket address");
		return JSCHED_EINVAL;
	}
	/* Socket activation (systemd's jschedd.socket): the listening socket is fd 3, bound
	 * and owned by the service manager, which also removes the file. */
	if (activated_fd >= 0) {
		rc = uv_pipe_open(&s->listener, activated_fd);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&s->listener, 128, connection_cb);
		if (rc < 0) {
			snprintf(err, errlen, "cannot use the socket passed by systemd: %s",
				 uv_strerror(rc));
			return JSCHED_EIO;
		}
		s->listening = s->activated = true;
		{
			size_t len = sizeof(s->path);

			if (uv_pipe_getsockname(&s->listener, s->path, &len) < 0)
				snprintf(s->path, sizeof(s->path), "(fd %d)", activated_fd);
		}
		jd_log(JD_LOG_INFO, "listening on the socket passed by systemd: %s", s->path);
		return 0;
	}
	if (lstat(s->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket; not touching it",
				 s->path);
			return JSCHED_EEXISTS;
		}
		pid_t heir_of;

		if (probe_live(s->path, &heir_of)) {
			snprintf(err, errlen, "another jschedd is already listening on %s", s->path);
			return JSCHED_EEXISTS;
		}
		if (heir_of)
			jd_log(JD_LOG_WARN, "replacing stale socket %s: the jschedd that listened "
			       "on it (pid %d) is gone, and a process it started still holds it",
			       s->path, (int)heir_of);
		else
			jd_log(JD_LOG_INFO, "replacing stale socket %s (no daemon behind it)", s->path);
		unlink(s->path);
	}
	if (strcmp(s->path, "/run/jschedd/jschedd.sock") == 0)
		mkdir("/run/jschedd", 0755);

	/* The mode and group: as configured, else the safe defaults for the path
	 * (security.c: 0660 + group jsched for the system socket, 0600 otherwise). */
	if ((rc = jd_security_socket_mode(s->path, d->cfg->socket_mode, d->cfg->socket_group,
					  &mode, &group, err, errlen)) < 0)
		return rc;
	/* Bind under a umask that leaves no window in which the socket is more open than
	 * configured; single-threaded here (the pool starts later). */
	old_umask = umask(0777 & ~(mode_t)mode);
	rc = uv_pipe_bind(&s->listener, s->path);
	umask(old_umask);
	if (rc == 0 && chmod(s->path, (mode_t)mode) < 0)
		rc = -errno;
	if (rc == 0 && group != (gid_t)-1 && chown(s->path, (uid_t)-1, group) < 0)
		rc = -errno;
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->listener, 128, connection_cb);
	if (rc < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", s->path, uv_strerror(rc));
		unlink(s->path);
		return JSCHED_EIO;
	}
	s->listening = true;
	jd_log(JD_LOG_INFO, "listening on %s", s->path);
	return 0;
}

void jd_server_stop_accepting(struct jd_net *d)
{
	struct jd_server *s = &d->srv;

	if (!s->listening)
		return;
	s->listening = false;
	uv_close((uv_handle_t *)&s->listener, NULL);
	if (!s->activated)
		unlink(s->path);
}

void jd_server_close_all(struct jd_net *d)
{
	for (struct jd_conn *c = d->srv.conns; c; c = c->next)
		jd_conn_close(c, "daemon exiting");
}

static void flushed_cb(uv_shutdown_t *req, int status)
{
	struct jd_conn *c = req->data;

	(void)status;
	jd_conn_close(c, "daemon exiting");
}

void jd_server_flush_all(struct jd_net *d)
{
	for (struct jd_conn *c = d->srv.conns; c; c = c->next) {
		if (c->closing)
			continue;
		uv_read_stop((uv_stream_t *)&c->pipe);
		if (conn_flush(c) < 0)
			continue;
		c->shutdown_req.data = c;
		if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe, flushed_cb) < 0)
			jd_conn_close(c, "daemon exiting");
	}
}

void jd_server_free(struct jd_net *d)
{
	if (!uv_is_closing((uv_handle_t *)&d->srv.reaper))
		uv_close((uv_handle_t *)&d->srv.reaper, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.more_idle))
		uv_close((uv_handle_t *)&d->srv.more_idle, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.flush_check))
		uv_close((uv_handle_t *)&d->srv.flush_check, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.flush_prepare))
		uv_close((uv_handle_t *)&d->srv.flush_prepare, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.busy_prepare))
		uv_close((uv_handle_t *)&d->srv.busy_prepare, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.busy_check))
		uv_close((uv_handle_t *)&d->srv.busy_check, NULL);
	if (!uv_is_closing((uv_handle_t *)&d->srv.poll_idle))
		uv_close((uv_handle_t *)&d->srv.poll_idle, NULL);
	free(d->srv.uids);
	d->srv.uids = NULL;
	jd_session_waits_free(d);
}
