/* daemon/net/server.h: the listening socket and the connections, on the loop thread.
 *
 * The server owns the Unix socket and every accepted connection: it reads bytes, cuts
 * them into frames with the protocol codec, hands each decoded message to the session
 * layer (session.c), and queues the replies and events the session writes back.  It
 * enforces the per-connection limits (handshake time, frame size, unsent output,
 * connections per uid and in all).  Everything here runs on the loop thread only.
 *
 * Teardown is never done inside the callback that decides it: jd_conn_close() marks the
 * connection and puts it on a list that a uv_idle handle drains once the current
 * callback has returned (the redis freeClientAsync idea), so code that is iterating
 * over waiters or watchers never sees a connection vanish under it.
 */
#ifndef JD_SERVER_H
#define JD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/core/hist.h"
#include "proto/jproto.h"

struct jd_wait_req;
struct admit;
struct jp_fast;

struct jd_net;
struct jd_client;

/* One accepted connection.  All fields: loop thread. */
struct jd_conn {
	uv_pipe_t pipe;
	uv_timer_t hs_timer;	/* handshake deadline, stopped at hello */
	uv_shutdown_t shutdown_req;	/* flushing at exit */
	struct jd_net *d;
	struct jd_conn *next, *prev;	/* the server's list of connections */
	struct jd_conn *close_next;	/* on the pending-close list */
	uint64_t serial;		/* for logs */

	uid_t uid;		/* SO_PEERCRED, at accept */
	gid_t gid;
	pid_t pid;
	struct jd_client *client;	/* set by hello */
	bool hello_done;
	bool refused;		/* over a connection limit: told so, closed at its first read */
	bool closing;		/* jd_conn_close called: no more reads, writes dropped */
	bool peer_left;		/* seen half-closed (or closed with requests unread) at a
				 * connection limit: counts against none (server.c hung_up) */
	bool abort;		/* closed for not reading (or a write failed): drop the queue
				 * instead of lingering to flush it */
	bool jh_linger;		/* closed, its held replies still to release and flush */
	bool read_eof;		/* the peer shut its write side: no more requests; open while
				 * waits are pending (jd_conn_maybe_done) */
	bool read_paused;	/* backpressure `block`: a submit waits for queue room */
	bool on_more;		/* its read budget ran out: whole frames wait for the next
				 * iteration (server.c "Read budget"), reading stopped */
	struct jd_conn *more_next;	/* on the server's list of such connections */
	/* an answer being written in slices (op_wait.c), reading stopped until it is sent;
	 * on the server's `more` list meanwhile */
	struct jd_wait_req *answering;
	/* a submit whose jobs are being made in slices (op_submit.c), likewise */
	struct admit *admitting;
	int open_handles;	/* pipe + timer; freed when both close callbacks ran */

	struct jp_decoder dec;	/* bytes in, frames out */
	/* the request being handled and its frame's JSON text (in dec's buffer), while
	 * jd_session_message runs for it; msg NULL otherwise (a held submit run again later
	 * has no text) */
	struct {
		const json_t *msg;
		const char *text;
		size_t len;
		/* a large frame read without a tree: its copy and its jp_fast, malloc'd, which
		 * a submit admitted in slices keeps (taking them, NULL here); else NULL */
		struct jp_fast *fast;
		char *fast_text;
	} frame;

	json_t *blocked;	/* the submit request waiting for room (new ref), or NULL */

	/* watch: this connection receives its uid's job events */
	bool watching;
	struct jd_conn *watch_next, *watch_prev;

	struct jd_wait_req *waits;	/* pending wait requests (op_wait.c) */
	uint32_t n_waits;		/* how many (limits.waits_per_connection) */
	size_t held;			/* bytes its decoder holds (counted in srv.held_bytes) */
	bool frame_timing;		/* hs_timer times a frame in progress (after hello) */

	/* frames held until the journal has made durable what was recorded before them,
	 * in order; every later frame queues behind them (server.c's queue) */
	struct jd_jheld *jh_head, *jh_tail;
	size_t jh_bytes;		/* their bytes */
	struct jd_conn *jh_next;	/* on the server's list of connections holding */
	bool on_jh;
	/* jh_bypass: the frame being sent now tells nothing the journal could still lose
	 * (a refusal for want of the journal, the metrics' counts): it goes out at once
	 * unless frames are held before it.  Set by the sender around one send. */
	bool jh_bypass;
	/* jh_upto_set: the frame being sent now tells only of what records up to jh_upto
	 * established (a status or a wait: the jobs it names, jd_jobs_jseq in ops.h), so it
	 * waits for the journal up to there, not for every record appended before it: with
	 * a record stuck in memory (a full disk) a status of jobs that are durable goes out
	 * at once.  Set by the sender around one send. */
	bool jh_upto_set;
	uint64_t jh_upto;

	uint32_t n_follows;		/* jobs whose output it follows (follow.h) */

	/* frames ready to go, written together by the server's flush at the end of this
	 * loop iteration (server.c "Write path"): each a malloc'd encoded frame */
	struct jd_outbuf *out;
	uint32_t n_out, cap_out;
	size_t out_bytes;		/* their bytes */
	struct jd_conn *flush_next;	/* on the server's list of connections to flush */
	bool on_flush;
};

/* Per uid: open connections, and the ids its pending waits name (op_wait.c). */
struct jd_uid_count {
	uid_t uid;
	uint32_t n;
	uint64_t wait_ids;
};

/* jd__uid_count: the counters of uid (one of a connected peer's), or NULL. */
struct jd_uid_count *jd__uid_count(struct jd_net *d, uid_t uid);

/* A frame waiting in a connection's batch: the encoded bytes (malloc'd), their length. */
struct jd_outbuf {
	char *bytes;
	size_t len;
};

/* JD_LOOP_BUSY_BOUND_NS: the bound on one loop iteration's work that the read path keeps
 * to (metrics loop.over_bound counts the iterations past it). */
#define JD_LOOP_BUSY_BOUND_NS 200000u

struct jd_server {
	uv_pipe_t listener;
	uv_idle_t reaper;	/* drains the pending-close list */
	uv_idle_t more_idle;	/* reads on for connections whose read budget ran out */
	struct jd_conn *more;	/* those connections */
	uint64_t read_yields;	/* times a connection's budget ran out (metrics) */
	/* answers written in slices (op_wait.c): how many, their slices, how many now */
	uint64_t sliced_replies, reply_slices;
	uint32_t answering;
	/* submits admitted in slices (op_submit.c): how many, their slices, how many now */
	uint64_t sliced_submits, submit_slices;
	uint32_t admitting;
	uint64_t limit_polls;	/* connections polled for a peer gone at a limit (metrics) */
	/* The flush of the connections' batches: check runs after the poll phase's
	 * callbacks (replies to what was read), prepare before the next poll (what timers
	 * and the reaper queued); both active only while a batch is waiting. */
	uv_check_t flush_check;
	uv_prepare_t flush_prepare;
	struct jd_conn *to_flush;	/* connections with a batch waiting */
	uint64_t flushes, flushed_frames;	/* batches written, frames in them */
	/* The loop's busy time per iteration (server.c "Busy time"), measured from the
	 * first callback after a poll (jd_loop_woke; the check handle when none ran) to the
	 * prepare phase before the next poll. */
	uv_prepare_t busy_prepare;
	uv_check_t busy_check;
	/* Waits whose timeout the prepare phase arms (op_wait.c, jd_session_waits_arm). */
	struct jd_wait_req *to_arm;
	/* Ended waits of one job kept for the next (op_wait.c, "Spare waits"). */
	struct jd_wait_req *spare_waits;
	uint32_t n_spare_waits;
	uint64_t iterations, busy_over;	/* iterations; those busier than JD_LOOP_BUSY_BOUND_NS */
	struct jd_hist busy;			/* the iterations' busy times (ns), lifetime */
	/* The poll after a request (server.c): an idle handle, active while the window is
	 * open, makes each iteration's poll return at once. */
	uv_idle_t poll_idle;
	uint64_t poll_until;	/* the window's end (jd_now_ns), 0: closed */
	uint64_t poll_last;	/* when the window's last iteration began (or it opened) */
	bool poll_fresh;	/* no iteration of the window has polled yet */
	uint64_t poll_gaps;	/* windows closed early: another thread took the CPU */
	uint64_t poll_windows;	/* windows opened (or extended) by a request read */
	uint64_t polls;		/* iterations that polled without blocking in a window */
	uint64_t poll_hits;	/* reads that came while a window was open */
	uint64_t poll_skipped;	/* requests after which no window opened: the workers
				 * needed the CPUs */
	uint64_t poll_journal;	/* windows opened (or extended) for a group's flush
				 * (jd_server_poll_for) */
	unsigned cpus;		/* online CPUs at start */
	char path[108];
	bool listening;
	bool activated;		/* the socket came from systemd (LISTEN_FDS): not ours to unlink */
	struct jd_conn *conns;	/* all open connections */
	struct jd_conn *to_close;
	struct jd_conn *jh_conns;	/* connections holding frames for the journal */
	uint32_t n_conns;
	uint32_t n_refusing;	/* refused, told why, waiting for the peer's first bytes */
	struct jd_uid_count *uids;
	size_t n_uids, cap_uids;
	uint64_t next_serial;
	uint64_t accepted, refused, disconnected_limit;
	uint64_t requests;	/* frames read as requests (metrics connections.requests) */
	size_t held_bytes;	/* decoders' bytes, all connections (limits.partial_frame_bytes) */
	/* Every read lands here: read_cb hands the bytes to that connection's decoder
	 * (which copies them) before libuv reads again, so one buffer serves all
	 * connections, and an idle connection costs no read buffer. */
	char rbuf[65536];
};

/* jd_server_listen: listen on activated_fd if it is >= 0 (a socket passed by the service
 * manager), else resolve the path (config, else the standard resolution), replace a
 * stale socket from a dead daemon, refuse a live one (message in err), bind, set the
 * mode and group, listen.  Returns 0 or a negative JSCHED_E* code.  Loop thread. */
int jd_server_listen(struct jd_net *d, int activated_fd, char *err, size_t errlen);

/* jd_server_stop_accepting: close the listening socket and unlink its file.  The
 * connections stay open (a graceful shutdown still answers them).  Loop thread. */
void jd_server_stop_accepting(struct jd_net *d);

/* jd_server_close_all: close every connection now (deferred as usual: pending writes
 * are dropped).  Loop thread. */
void jd_server_close_all(struct jd_net *d);

/* jd_server_flush_all: stop reading every connection and close each once its pending
 * replies are written (uv_shutdown).  Loop thread, at exit. */
void jd_server_flush_all(struct jd_net *d);

/* jd_server_free: close the server's own handles and free its memory; after every
 * connection has closed.  Loop thread, at exit. */
void jd_server_free(struct jd_net *d);

/* jd_conn_send: encode msg (borrowed) as one frame and queue it.  Over the output
 * limit the connection is closed (the client does not read).  Returns 0 or a negative
 * JSCHED_E* code (the message is then dropped).  Loop thread. */
int jd_conn_send(struct jd_conn *c, json_t *msg);

/* jd_server_poll_for: keep the loop polling without blocking for us microseconds from
 * now (the window of "The poll after a request", server.c), unless the workers need the
 * CPUs: for a wake-up that is due soon from another thread (the journal's flush of held
 * replies, daemon/persist.c), which then costs no wake-up of a sleeping CPU.  Loop
 * thread. */
void jd_server_poll_for(struct jd_net *d, uint32_t us);

/* jd_server_release_held: the journal is durable up to `durable`: send every held frame
 * that waited for it (and what queued behind them).  Loop thread. */
void jd_server_release_held(struct jd_net *d, uint64_t durable);

/* jd_conn_pending: bytes queued for c and not yet taken by the kernel (libuv's write
 * queue and the frames held for the journal).  Loop thread. */
size_t jd_conn_pending(const struct jd_conn *c);

/* jd_conn_send_frame: send a payload the caller wrote as JSON text into b after
 * JP_HEADER_BYTES reserved bytes (the header is filled in here).  Takes b's memory (b is
 * left empty), also on failure.  Returns as jd_conn_send.  Loop thread. */
int jd_conn_send_frame(struct jd_conn *c, struct jp_buf *b);

/* jd_conn_close: close c after the current callback returns; `why` goes to the log.
 * Idempotent.  Loop thread. */
void jd_conn_close(struct jd_conn *c, const char *why);

/* jd_conn_maybe_done: close c if its peer has shut its write side and nothing is left to
 * answer (no wait pending, no submit held).  Called when a wait ends.  Loop thread. */
void jd_conn_maybe_done(struct jd_conn *c);

/* jd_server_connection_cap: open connections allowed now: limits.connections, or fewer if
 * the open-file limit leaves less room (each needs a descriptor; jobs' pipes keep a
 * reserve).  Loop thread. */
uint32_t jd_server_connection_cap(const struct jd_net *d);

/* jd_conn_in_slices: has c a request in slices (an answer, a submit), and so is not read
 * until it is done? */
static inline bool jd_conn_in_slices(const struct jd_conn *c)
{
	return c->answering || c->admitting;
}

/* jd_conn_defer: stop reading c and go on with it at the next loop iteration, after
 * every other connection has been served: its answer in slices (c->answering) first,
 * then its frames.  Loop thread. */
void jd_conn_defer(struct jd_conn *c);

/* jd_conn_pause / jd_conn_resume: stop / restart reading from c (backpressure).  Resume
 * first runs the submit held in c->blocked, if any, then the frames already read. */
void jd_conn_pause(struct jd_conn *c);
void jd_conn_resume(struct jd_conn *c);

/* jd_conn_set_frame_limit: the largest frame c may send from now on (after hello). */
void jd_conn_set_frame_limit(struct jd_conn *c, size_t bytes);

/* jd_conn_hello_done: the handshake succeeded: stop the handshake timer. */
void jd_conn_hello_done(struct jd_conn *c);

#endif /* JD_SERVER_H */
