/* proto/jproto.h: the protocol codec shared by jschedd and libjsched.
 *
 * proto/PROTOCOL.md is the specification; this header is its C face.  It has four layers,
 * each usable without the ones after it:
 *
 *   1. bytes:    a growable byte buffer (jp_buf) and base64 (for stdin and output bytes);
 *   2. frames:   the incremental frame decoder (bytes in, whole frames or a precise error
 *                out) and the frame encoder (a JSON object to length + payload);
 *   3. messages: requests (strict: every member of every op checked), replies, events,
 *                error objects, the hello exchange;
 *   4. jobs:     the job spec (strict), a whole submit (refs resolved, cycles found), and the
 *                job record (status and result).
 *
 * Conventions:
 * - Errors: 0 (or a count) on success, a negative JSCHED_E* code on failure.  Parsers also
 *   fill a struct jp_err with the protocol's words for the peer: the code, a message and,
 *   when one member is at fault, its path ("jobs[3].after[0].ref").
 * - jansson ownership is said at every function, in jansson's words: "new reference" (the
 *   caller must json_decref it), "borrowed" (valid while its owner lives), "steals" (the
 *   function takes over the caller's reference, even when it fails).
 * - Parsed structs borrow their strings from the json_t they were parsed from: they are
 *   valid while that object lives and is not modified.  Arrays in them are allocated and
 *   freed by the matching *_clear function.
 * - Threads: nothing here has global state; every function may be called from any thread,
 *   on objects that one thread uses at a time.
 * - Symbols are jp_* and hidden (-fvisibility=hidden): the codec links into libjsched.so
 *   without being exported from it.
 */
#ifndef JPROTO_H
#define JPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <jansson.h>

#include "jsched/error.h"

/* ---- the socket ---------------------------------------------------------------------- */

/* The system daemon's socket, the last step of the default rule. */
#define JP_SYSTEM_SOCKET "/run/jschedd/jschedd.sock"

/* jp_default_socket_path: write the socket path a daemon and its clients use by default
 * into buf: $JSCHED_SOCKET, else $XDG_RUNTIME_DIR/jschedd.sock (an absolute
 * XDG_RUNTIME_DIR only), else JP_SYSTEM_SOCKET; an empty variable counts as unset.
 * Returns the path's length, JSCHED_ELIMIT_EXCEEDED if it does not fit in buf or in a
 * socket address (buf is then ""), JSCHED_EINVAL for a NULL buf.  (socket_path.c) */
int jp_default_socket_path(char *buf, size_t size);

/* The protocol version of PROTOCOL.md, sent in hello, and the oldest one the daemon still
 * answers (PROTOCOL.md section 11: each version is a subset of the next, so answering the
 * older ones costs nothing). */
#define JP_PROTOCOL_VERSION 3
#define JP_PROTOCOL_OLDEST 1

/* Frame header size and the default limits of PROTOCOL.md section 10. */
#define JP_HEADER_BYTES 4u
#define JP_HANDSHAKE_FRAME_BYTES (64u * 1024u)
#define JP_DEFAULT_FRAME_BYTES (1024u * 1024u)
#define JP_DEFAULT_REPLY_FRAME_BYTES (16u * 1024u * 1024u)
/* The largest result (a call's value, a failed handler's detail) a job record carries
 * whole; a larger one is fetched alone with the `result` operation. */
#define JP_DEFAULT_VALUE_BYTES (64u * 1024u)

/* The largest integer the protocol carries (ids, sequence numbers, times): 2^53 - 1, so
 * that every JSON implementation reads it exactly. */
#define JP_MAX_INT ((int64_t)9007199254740991)

/* A request id meaning "none": replies to frames whose id could not be read say null. */
#define JP_ID_NONE ((int64_t)-1)

/* Fixed sizes of PROTOCOL.md section 10 (bytes). */
#define JP_NAME_MAX 256u	/* a job's name, a call job's fn */
#define JP_REF_MAX 64u		/* a ref, a client name */
#define JP_KEY_MAX 128u	/* a spec's idempotency key */
#define JP_COST_MAX 1000000u
#define JP_LIST_LIMIT_MAX 10000u
#define JP_WEIGHT_MAX 1000000u
#define JP_NEEDS_MAX 8u		/* named resources one spec's "needs" may name */
#define JP_NEED_NAME_MAX 31u	/* bytes of a resource's name */
#define JP_NEED_COUNT_MAX 1024u	/* units of one resource (a resource's count, too) */
#define JP_ON_EXIT_MAX 4096u	/* a spec's on_exit command line */
#define JP_HOOK_TIMEOUT_MS 60000	/* a hook's time limit unless the spec says */
#define JP_HOOK_TIMEOUT_MAX_MS 86400000	/* and at most */

/* ---- errors ------------------------------------------------------------------------ */

/* What went wrong, in the protocol's words: filled by the parsers, turned into an error
 * object by jp_error_new_from.  The strings are truncated to fit. */
struct jp_err {
	int code;		/* a JSCHED_E* code, 0 when nothing went wrong */
	char field[128];	/* the path of the member at fault, "" if none */
	char message[256];	/* for people */
};

/* jp_err_set fills err (which may be NULL) with code, field (NULL: none) and a printf-style
 * message, and returns code, so that a parser can `return jp_err_set(...)`.  Any thread. */
int jp_err_set(struct jp_err *err, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* jp_error_name returns the wire name of a JSCHED_E* code ("queue_full"), or NULL for a
 * number that is not in JSCHED_ERRNO_MAP.  Static string.  Any thread. */
const char *jp_error_name(int code);

/* jp_error_from_name returns the JSCHED_E* code of a wire name, or JSCHED_EPROTOCOL for a
 * name this build does not know (a newer peer's).  Any thread. */
int jp_error_from_name(const char *name);

/* jp_error_new builds an error object {"code", "message", "field"?} (new reference; NULL
 * when out of memory).  A code without a wire name is sent as "internal".  field may be
 * NULL or "".  Any thread. */
json_t *jp_error_new(int code, const char *field, const char *message);

/* jp_error_new_from is jp_error_new from a filled jp_err (new reference). */
json_t *jp_error_new_from(const struct jp_err *err);

/* jp_error_parse reads an error object (borrowed) into out: code (JSCHED_EPROTOCOL for an
 * unknown name), message and field (copied, truncated).  Returns 0, or JSCHED_EPROTOCOL if
 * obj is not an error object (out then says so). */
int jp_error_parse(const json_t *obj, struct jp_err *out);

/* ---- UTF-8 (utf8.c) ------------------------------------------------------------------ */

/* jp_utf8_seq returns the length (1 to 4) of the well-formed UTF-8 character that starts
 * at s (NUL-terminated), or 0 at the terminator or where none starts (a stray byte, an
 * overlong form, a surrogate, a sequence cut short).  Reads nothing past the NUL. */
size_t jp_utf8_seq(const char *s);

/* JP_UTF8_CUT_MAX: the largest prefix jp_utf8_cut measures (it returns an int). */
#define JP_UTF8_CUT_MAX 65536

/* jp_utf8_cut returns the length of the longest prefix of s (NUL-terminated) that is at
 * most max bytes and does not end inside a character: the precision for "%.*s" when
 * quoting the peer's text into a message, instead of a byte cut such as "%.64s". */
int jp_utf8_cut(const char *s, size_t max);

/* jp_utf8_valid: is s (NUL-terminated) well-formed UTF-8 throughout? */
bool jp_utf8_valid(const char *s);

/* jp_utf8_scrub removes from s, in place, every byte that is not part of a well-formed
 * character (a character split by a cut, stray bytes), so that jansson accepts it and a
 * JSON text of it is valid.  Returns the new length. */
size_t jp_utf8_scrub(char *s);

/* ---- bytes ------------------------------------------------------------------------- */

/* A growable byte buffer.  Zero-initialised (or jp_buf_init) is empty. */
struct jp_buf {
	unsigned char *data;
	size_t len;		/* bytes in use */
	size_t cap;		/* bytes allocated */
};

void jp_buf_init(struct jp_buf *b);
/* jp_buf_reserve makes room for `extra` more bytes.  0 or JSCHED_ENOMEM. */
int jp_buf_reserve(struct jp_buf *b, size_t extra);
/* jp_buf_append copies n bytes to the end.  0 or JSCHED_ENOMEM (b unchanged).  Inline:
 * the record and reply writers append a few bytes at a time, and the room is nearly
 * always there (measured: a record's appends through a call and jp_buf_reserve each
 * cost a sixth of a one-request round trip's instructions). */
static inline int jp_buf_append(struct jp_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (n > b->cap - b->len && jp_buf_reserve(b, n) < 0)
		return JSCHED_ENOMEM;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}
/* jp_buf_append_int appends v in decimal (as jansson writes an integer).  0 or
 * JSCHED_ENOMEM. */
int jp_buf_append_int(struct jp_buf *b, int64_t v);
/* jp_buf_append_json appends v (borrowed) as compact JSON text, byte for byte what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes (dump.c), in a fraction of its
 * instructions.  0, JSCHED_ENOMEM (b may hold part of it) or JSCHED_EINVAL (v NULL). */
int jp_buf_append_json(struct jp_buf *b, const json_t *v);
/* jp_buf_append_json_string appends the n bytes at s (valid UTF-8) as a JSON string, as
 * jp_buf_append_json writes a string.  0 or JSCHED_ENOMEM. */
int jp_buf_append_json_string(struct jp_buf *b, const char *s, size_t n);
/* jp_json_plain: 1 for the bytes that a JSON string holds as themselves and that need no
 * more checking to read (0x20-0x7f but '"' and '\\'), 0 for the rest (controls, the two
 * that are escaped, and every byte of UTF-8's multi-byte forms, which a reader checks).
 * The one table of the request reader (fastreq.c) and libjsched's plain-record reader.
 * DEL (0x7f) is plain: RFC 8259 asks an escape only below 0x20 and of '"' and '\\', and
 * jansson, jp_buf_append_json and the daemon's record writer all write DEL as itself, so
 * a reader that set it aside would decline what every writer here sends (libjsched's
 * did: a record with DEL went to jansson). */
extern const unsigned char jp_json_plain[256];

/* jp_json_plain_end: the first byte in [p, end) that is not plain (jp_json_plain), or
 * end.  While sixteen bytes remain they are looked at at once (SSE2, which every x86-64
 * has: a byte is not plain when it is '"' or '\\' or, as a signed byte, below 0x20, which
 * takes in the bytes from 0x80 up), else eight (a word, little-endian: its high bit set,
 * below 0x20, '"' or '\\'; the below-a-value and equal-to-zero tests of a word flag
 * wrongly only bytes above one they flag rightly, so the lowest flag is always right),
 * else one.  The byte loop over a reply's strings was the client's largest part of a
 * record read (callgrind, noop jsched_submit_wait: 655 of 7,000 instructions per round
 * trip), and the same loop reads a request's strings in the daemon.  Any thread. */
static inline const unsigned char *jp_json_plain_end(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__)
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x20);

	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
			_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmplt_epi8(v, low)));

		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;

	while (end - p >= 8) {
		uint64_t w, q, b, m;

		memcpy(&w, p, 8);
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		m = (w | (w - ones * 0x20) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
		if (m)
			return p + (__builtin_ctzll(m) >> 3);
		p += 8;
	}
#endif
	while (p < end && jp_json_plain[*p])
		p++;
	return p;
}
/* jp_buf_consume drops the first n bytes (n <= len). */
void jp_buf_consume(struct jp_buf *b, size_t n);
/* jp_buf_free frees the bytes and makes b empty. */
void jp_buf_free(struct jp_buf *b);

/* jp_base64_encode encodes n bytes (RFC 4648, standard alphabet, padded) into a new
 * NUL-terminated string in *out (free() it).  0 or JSCHED_ENOMEM. */
int jp_base64_encode(const void *data, size_t n, char **out);

/* jp_base64_decode decodes text (len bytes; padding required, no whitespace) into a new
 * buffer in *out (free() it; NULL when the result is empty) of *outlen bytes.  Returns 0,
 * JSCHED_EBAD_REQUEST (not base64), JSCHED_ELIMIT_EXCEEDED (more than max bytes decoded)
 * or JSCHED_ENOMEM. */
int jp_base64_decode(const char *text, size_t len, size_t max, unsigned char **out,
		     size_t *outlen);

/* jp_base64_json builds a JSON string of the base64 of n bytes (new reference, NULL when
 * out of memory). */
json_t *jp_base64_json(const void *data, size_t n);

/* ---- frames ------------------------------------------------------------------------ */

/* The incremental frame decoder.  Feed it whatever bytes a read returned (half a header,
 * several frames at once); take whole frames out with jp_decoder_next (parsed) or
 * jp_decoder_next_frame (raw payload).  A frame's length is checked against the limit from
 * its header, before any memory is set aside for its payload.  One thread at a time.
 * Fields are private to frame.c. */
struct jp_decoder {
	struct jp_buf in;	/* bytes fed and not yet taken; frames start at in.data + pos */
	size_t pos;		/* start of the first frame not yet taken */
	size_t limit;		/* the largest payload accepted, bytes */
	int error;		/* sticky: JSCHED_EFRAME_TOO_LARGE once seen, else 0 */
};

/* jp_decoder_init makes an empty decoder accepting payloads up to limit bytes.  Returns 0
 * (it allocates nothing until fed).  Any thread. */
int jp_decoder_init(struct jp_decoder *d, size_t limit);

/* jp_decoder_set_limit changes the limit for frames not yet started (the daemon raises
 * it after hello). */
void jp_decoder_set_limit(struct jp_decoder *d, size_t limit);

/* jp_decoder_feed appends n bytes (copied).  Returns 0, JSCHED_ENOMEM, or the sticky
 * error if the decoder has already failed.  Bytes fed past a too-large header are not
 * kept. */
int jp_decoder_feed(struct jp_decoder *d, const void *data, size_t n);

/* jp_decoder_next_frame takes the next whole frame: returns 1 with *payload (borrowed,
 * valid until the next call on d) and *len set, 0 when no whole frame is buffered, or
 *   JSCHED_EFRAME_TOO_LARGE  the next header announces more than the limit (sticky: every
 *                            later call says so too; the stream cannot be resynchronised),
 *   JSCHED_EBAD_FRAME        a zero-length frame (its header is consumed; the decoder can
 *                            go on). */
int jp_decoder_next_frame(struct jp_decoder *d, const unsigned char **payload, size_t *len);

/* jp_decoder_next takes the next whole frame and parses it (jp_frame_parse): returns 1 with
 * *msg set (a JSON object, new reference), 0 when no whole frame is buffered, or the
 * errors of jp_decoder_next_frame and jp_frame_parse (JSCHED_EBAD_FRAME: the frame is
 * consumed; the decoder can go on).  err may be NULL. */
int jp_decoder_next(struct jp_decoder *d, json_t **msg);
int jp_decoder_next_err(struct jp_decoder *d, json_t **msg, struct jp_err *err);

/* jp_decoder_buffered returns the bytes held: a partial frame (or frames not yet taken).
 * Non-zero at end of stream means the peer hung up mid-frame. */
size_t jp_decoder_buffered(const struct jp_decoder *d);

/* jp_decoder_held returns the bytes the decoder has allocated (room set aside for a frame
 * announced by its header included): what a peer costs in memory right now. */
size_t jp_decoder_held(const struct jp_decoder *d);

/* jp_decoder_trim frees the decoder's buffer if it holds nothing and has more than `keep`
 * bytes allocated (a large frame came and went), so an idle peer costs at most `keep`. */
void jp_decoder_trim(struct jp_decoder *d, size_t keep);

/* jp_decoder_free frees what the decoder holds; it may be initialised again. */
void jp_decoder_free(struct jp_decoder *d);

/* jp_frame_parse parses one payload: UTF-8 JSON, one object, no duplicate member names, no
 * NUL in strings, nothing after it.  Returns 0 with *msg set (new reference), or
 * JSCHED_EBAD_FRAME (err says where) / JSCHED_ENOMEM.  err may be NULL.  (jansson reports
 * most of its own allocation failures as syntax errors, so out of memory inside the parser
 * may come back as JSCHED_EBAD_FRAME.) */
int jp_frame_parse(const void *payload, size_t len, json_t **msg, struct jp_err *err);

/* jp_frame_append appends msg (borrowed; an object) as one frame (header + compact JSON)
 * to out.  Returns 0, JSCHED_EFRAME_TOO_LARGE if the payload would exceed limit bytes
 * (out unchanged), JSCHED_EINVAL (not an object) or JSCHED_ENOMEM. */
int jp_frame_append(struct jp_buf *out, const json_t *msg, size_t limit);

/* jp_frame_encode encodes msg (borrowed) as one frame in a new malloc()ed buffer *bytes of
 * *len bytes (free() it), without a size limit beyond the 32-bit length.  Returns 0,
 * JSCHED_EINVAL, JSCHED_EFRAME_TOO_LARGE or JSCHED_ENOMEM. */
int jp_frame_encode(const json_t *msg, char **bytes, size_t *len);

/* ---- limits ------------------------------------------------------------------------ */

/* A connection's limits: what the hello reply announces (PROTOCOL.md section 10). */
struct jp_limits {
	uint32_t frame_bytes;
	uint32_t reply_frame_bytes;
	uint32_t jobs_per_submit;
	uint32_t max_queued;
	uint32_t argv_items;
	uint32_t env_items;
	uint32_t stdin_bytes;
	uint32_t deps_per_job;
	uint32_t output_bytes;
	uint32_t events_retained;
	uint32_t array_elements;	/* elements in one job array */
	uint32_t value_bytes;		/* the largest result a record carries whole */
};

/* jp_limits_default fills l with the defaults of PROTOCOL.md. */
void jp_limits_default(struct jp_limits *l);

/* jp_limits_to_json builds the hello reply's "limits" object (new reference). */
json_t *jp_limits_to_json(const struct jp_limits *l);

/* jp_limits_parse reads a "limits" object (borrowed); members it does not know are
 * ignored, missing ones keep their defaults.  0 or JSCHED_EPROTOCOL (wrong type). */
int jp_limits_parse(const json_t *obj, struct jp_limits *out, struct jp_err *err);

/* jp_limits_set sets the limit named by the len bytes at name to v, as jp_limits_parse
 * reads one member (a client reading the hello reply from its text): 0 (also for a name
 * it does not know, ignored), or JSCHED_EPROTOCOL when v is not a count. */
int jp_limits_set(struct jp_limits *l, const char *name, size_t len, int64_t v);

/* ---- names ------------------------------------------------------------------------- */

enum jp_kind { JP_KIND_EXEC, JP_KIND_CALL };
/* In order of precedence, lowest first (as enum jsched_priority). */
enum jp_priority { JP_PRIO_LOW, JP_PRIO_NORMAL, JP_PRIO_HIGH, JP_PRIO_CRITICAL };
enum jp_dep_on { JP_ON_SUCCESS, JP_ON_FAILURE, JP_ON_ANY };
/* As enum jsched_state, minus UNKNOWN; the final states come last. */
enum jp_state {
	JP_STATE_WAITING,
	JP_STATE_SCHEDULED,
	JP_STATE_RETRYING,
	JP_STATE_QUEUED,
	JP_STATE_RUNNING,
	JP_STATE_SUCCEEDED,
	JP_STATE_FAILED,
	JP_STATE_CANCELLED,
	JP_STATE_EXPIRED,
	JP_STATE_DROPPED,
};
#define JP_NSTATES 10
/* Why a job did not succeed (the record's "cause", PROTOCOL.md section 5): one row per
 * cause, XX(NAME, "wire word"); the enum and the names table (names.c) come from it, and
 * the daemon decides a job's end in these values. */
#define JP_CAUSE_MAP(XX)                                                               \
	XX(NONE, "")			/* succeeded, or not final */                    \
	XX(EXIT, "exit")		/* a command exited non-zero */                  \
	XX(SIGNAL, "signal")		/* a command was killed by a signal */           \
	XX(TIMEOUT, "timeout")		/* a command ran past its time limit */          \
	XX(SPAWN, "spawn")		/* a command could not start */                  \
	XX(HANDLER, "handler")		/* a call handler failed */                      \
	XX(CANCEL, "cancel")		/* a client cancelled it */                      \
	XX(DEPENDENCY, "dependency")	/* a dependency can no longer be satisfied */    \
	XX(DEADLINE, "deadline")	/* not started before its deadline */            \
	XX(OVERFLOW, "overflow")	/* dropped by its client's overflow strategy */  \
	XX(SHUTDOWN, "shutdown")	/* cancelled by an immediate shutdown */            \
	XX(MEMORY, "memory")		/* killed at its memory limit (cgroups) */       \
	XX(DAEMON_RESTART, "daemon_restart")	/* running when the daemon stopped without \
						 * finishing it (a crash): may have run */

enum jp_cause {
#define JP_XX_CAUSE(name, wire) JP_CAUSE_##name,
	JP_CAUSE_MAP(JP_XX_CAUSE)
#undef JP_XX_CAUSE
	JP_NCAUSES
};

/* The operations of PROTOCOL.md section 6. */
enum jp_op {
	JP_OP_HELLO,
	JP_OP_SUBMIT,
	JP_OP_STATUS,
	JP_OP_WAIT,
	JP_OP_CANCEL,
	JP_OP_LIST,
	JP_OP_OUTPUT,
	JP_OP_WATCH,
	JP_OP_UNWATCH,
	JP_OP_METRICS,
	JP_OP_DRAIN,
	JP_OP_PING,
	JP_OP_RELOAD,
	JP_OP_SET_CLIENT,
	JP_OP_SHUTDOWN,
	JP_OP_PAUSE,
	JP_OP_RESUME,
	JP_OP_HOLD,
	JP_OP_RELEASE,
	JP_OP_HOOK,
	JP_OP_TEST_CLOCK,
	JP_OP_RETRY,
	JP_OP_RESULT,
};
#define JP_NOPS 23

/* Wire names of the enums above (static strings; NULL for a value out of range), and
 * back: the *_from_name functions return the value, or -1 for an unknown name. */
const char *jp_kind_name(enum jp_kind k);
int jp_kind_from_name(const char *s);
const char *jp_priority_name(enum jp_priority p);
int jp_priority_from_name(const char *s);
const char *jp_dep_on_name(enum jp_dep_on on);
int jp_dep_on_from_name(const char *s);
const char *jp_state_name(enum jp_state s);
int jp_state_from_name(const char *s);
const char *jp_cause_name(enum jp_cause c);
int jp_cause_from_name(const char *s);
const char *jp_op_name(enum jp_op op);
int jp_op_from_name(const char *s);

/* jp_state_final tells the five final states. */
bool jp_state_final(enum jp_state s);

/* jp_op_is_admin tells the ops that need an admin uid (reload, set_client, shutdown,
 * test_clock). */
bool jp_op_is_admin(enum jp_op op);

/* ---- requests ---------------------------------------------------------------------- */

/* A request whose envelope and members have been checked. */
struct jp_fast;
struct jp_request {
	int64_t id;		/* the client's id; JP_ID_NONE if it could not be read */
	enum jp_op op;
	const json_t *msg;	/* the whole request, borrowed; NULL when fast is set */
	struct jp_fast *fast;	/* a request read without a tree (jp_fast_parse), borrowed;
				 * the jp_req_* reads and jp_submit_parse take either */
};

/* jp_request_parse checks a request (borrowed) against PROTOCOL.md: `id` (0..2^53-1), `op`
 * (known), and every member of that op: no unknown member, none missing, each of its type
 * and range (enums by name, ids >= 1, counts within lim; NULL lim: the defaults).  Job specs
 * inside a submit are checked only as objects here; jp_submit_parse checks them in full.
 * Returns 0 with out filled, or JSCHED_EBAD_REQUEST / JSCHED_EUNKNOWN_OP /
 * JSCHED_ELIMIT_EXCEEDED with err filled and out->id set when it could be read (reply to
 * out->id, or null), or JSCHED_EBAD_FRAME (out->id JP_ID_NONE) for an integer anywhere in
 * msg beyond +-(2^53 - 1): section 1's frame rule, which jansson's parser does not check.
 * Any thread. */
int jp_request_parse(const json_t *msg, const struct jp_limits *lim, struct jp_request *out,
		     struct jp_err *err);

/* Typed reads of a request's members, for after jp_request_parse succeeded (types are then
 * known good).  Absent members give dflt.  Returned strings are borrowed from r->msg. */
int64_t jp_req_int(const struct jp_request *r, const char *key, int64_t dflt);
bool jp_req_bool(const struct jp_request *r, const char *key, bool dflt);
const char *jp_req_str(const struct jp_request *r, const char *key, const char *dflt);

/* jp_req_ids reads the `job` or `jobs` member: *ids (malloc()ed, free() it) and *n, and
 * *single tells which form was sent.  0 or JSCHED_ENOMEM; JSCHED_EBAD_REQUEST if the op
 * has neither. */
int jp_req_ids(const struct jp_request *r, int64_t **ids, size_t *n, bool *single);

/* jp_req_states reads list's `states` as a bit mask (1u << enum jp_state); absent: all. */
unsigned jp_req_states(const struct jp_request *r);

/* jp_request_new builds {"op": op, "id": id} (new reference); the caller adds the op's
 * members with json_object_set_new.  NULL when out of memory. */
json_t *jp_request_new(enum jp_op op, int64_t id);

/* ---- replies and events ------------------------------------------------------------- */

/* jp_reply_new builds {"id": id, "ok": true} (new reference), id JP_ID_NONE giving null. */
json_t *jp_reply_new(int64_t id);

/* jp_reply_error_new builds {"id": id, "ok": false, "error": error} (new reference); steals
 * error (an error object, e.g. from jp_error_new).  NULL when out of memory. */
json_t *jp_reply_error_new(int64_t id, json_t *error);

/* jp_reply_err_new is jp_reply_error_new(id, jp_error_new_from(err)). */
json_t *jp_reply_err_new(int64_t id, const struct jp_err *err);

/* jp_event_job_new builds {"event": "job", "seq": seq, "job": record} (new reference);
 * steals record. */
json_t *jp_event_job_new(int64_t seq, json_t *record);

/* jp_event_shutdown_new builds {"event": "shutdown", "mode": mode} (new reference). */
json_t *jp_event_shutdown_new(const char *mode);

/* A message from the daemon, as a client reads it. */
struct jp_incoming {
	bool is_event;
	int64_t id;		/* replies: the echoed id, JP_ID_NONE for null */
	bool ok;		/* replies */
	struct jp_err error;	/* replies with ok false: the daemon's code, message, field */
	const json_t *error_obj;	/* and the whole error object (borrowed), else NULL */
	const char *event;	/* events: the kind ("job", "shutdown"), borrowed */
	int64_t seq;		/* "job" events: the sequence number, else 0 */
	const json_t *msg;	/* the whole message, borrowed */
};

/* jp_incoming_parse classifies a message from the daemon (borrowed).  Returns 0, or
 * JSCHED_EPROTOCOL when it is neither a well-formed reply nor an event.  Any thread. */
int jp_incoming_parse(const json_t *msg, struct jp_incoming *out, struct jp_err *err);

/* ---- hello --------------------------------------------------------------------------- */

/* The identity the daemon sees (hello reply). */
struct jp_identity {
	int64_t uid, gid, pid;
	const char *client;	/* borrowed */
	bool admin;
};

/* jp_hello_new builds the hello request (new reference); client may be NULL. */
json_t *jp_hello_new(int64_t id, const char *client);

/* jp_hello_reply_new builds the daemon's hello reply (new reference) in protocol `version`,
 * the one the client asked for. */
json_t *jp_hello_reply_new(int64_t id, int64_t version, const char *daemon_version, const char *instance,
			   const struct jp_identity *who, const struct jp_limits *lim);

/* The hello reply as a client reads it; strings borrowed from the reply. */
struct jp_hello_reply {
	int64_t version;
	const char *daemon;
	const char *instance;
	struct jp_identity identity;
	struct jp_limits limits;
};

/* jp_hello_reply_parse reads a successful hello reply (borrowed).  0 or JSCHED_EPROTOCOL. */
int jp_hello_reply_parse(const json_t *msg, struct jp_hello_reply *out, struct jp_err *err);

/* jp_version_mismatch_new builds the version_mismatch error object (new reference) for a
 * client that asked for `asked`; the daemon speaks JP_PROTOCOL_OLDEST to JP_PROTOCOL_VERSION. */
json_t *jp_version_mismatch_new(int64_t asked, const char *daemon_version);

/* ---- the job spec -------------------------------------------------------------------- */

/* One dependency: a job id, or a ref to another spec of the same submit. */
struct jp_dep {
	int64_t job;		/* >= 1: an existing job; 0: see ref */
	const char *ref;	/* borrowed; NULL when job is set */
	size_t index;		/* with ref, after jp_submit_parse: the spec it names */
	enum jp_dep_on on;
};

struct jp_env {
	const char *name, *value;	/* borrowed */
};

enum jp_deadline { JP_DEADLINE_NONE, JP_DEADLINE_AT, JP_DEADLINE_IN };

/* A spec's "retry" (PROTOCOL.md section 4): attempt again after a failure that `on`
 * names, after a backoff of backoff_ms * factor^(retries so far), at most max_backoff_ms. */
#define JP_RETRY_ATTEMPTS_MAX 1000u
#define JP_RETRY_FACTOR_MAX 1000.0
enum {
	JP_RETRY_ON_FAILURE = 1u << 0,	/* any failed attempt (every cause of "failed") */
	JP_RETRY_ON_TIMEOUT = 1u << 1,	/* cause timeout */
	JP_RETRY_ON_SIGNAL = 1u << 2,	/* cause signal (or memory: killed at the limit) */
	JP_RETRY_ON_CODES = 1u << 3,	/* cause exit with a code in `codes` */
};
struct jp_retry {
	uint32_t max_attempts;	/* 1..JP_RETRY_ATTEMPTS_MAX, the first attempt included; 0: none */
	int64_t backoff_ms;	/* default 1000 */
	double factor;		/* 1..JP_RETRY_FACTOR_MAX, default 2 */
	int64_t max_backoff_ms;	/* default 3,600,000 */
	uint8_t on;		/* JP_RETRY_ON_* (default: failure) */
	uint8_t codes[32];	/* exit codes 1..255 as bits (JP_RETRY_ON_CODES) */
};

/* jp_retry_backoff_ms: the wait before the attempt after `failed` failed attempts (>= 1):
 * backoff_ms * factor^(failed - 1), at most max_backoff_ms, saturating (never wraps,
 * whatever the inputs).  jp_retry_wanted: whether r retries an attempt that failed with
 * cause `cause` (an enum jp_cause) and, for cause exit, `exit_code`.  Any thread. */
uint64_t jp_retry_backoff_ms(const struct jp_retry *r, uint32_t failed);
bool jp_retry_wanted(const struct jp_retry *r, int cause, int exit_code);

/* A job array's indices (the spec's `array`, Slurm's syntax: "1-100", "1-99:2", "1,5,7",
 * each optionally ending "%N"), kept as increasing, non-overlapping ranges.  (array.c) */
#define JP_ARRAY_INDEX_MAX ((int64_t)2147483647)
struct jp_array_range {
	int64_t lo, hi, step;	/* lo, lo + step, ... hi (hi is the last index reached) */
	uint64_t first;		/* the position of lo among all the array's elements */
};
struct jp_array {
	struct jp_array_range *ranges;	/* owned */
	size_t n_ranges;
	uint64_t count;			/* elements */
	uint32_t max_running;		/* %N: at most N elements running at once; 0: no limit */
};

/* jp_array_parse: text in Slurm's syntax into out (ranges allocated; jp_array_clear frees
 * them).  Returns 0, or with err filled (field: the member's path) JSCHED_EBAD_REQUEST (not
 * the syntax, a range that runs backwards ("5-1"), a step or %N of 0, indices that do not
 * increase) or JSCHED_ELIMIT_EXCEEDED (more than max_elements elements).  Any thread. */
int jp_array_parse(const char *text, uint64_t max_elements, struct jp_array *out,
		   const char *field, struct jp_err *err);

/* jp_array_index: the index of the element at position pos (0 .. count - 1), or -1 past
 * the end.  O(log ranges). */
int64_t jp_array_index(const struct jp_array *a, uint64_t pos);

/* jp_array_clear: free what a owns and zero it. */
void jp_array_clear(struct jp_array *a);

/* A job spec (PROTOCOL.md section 4).  Strings and args are borrowed from the parsed
 * object; the arrays and stdin_data are owned (jp_job_spec_clear frees them). */
struct jp_job_spec {
	enum jp_kind kind;
	const char *name;	/* NULL: none */
	const char *ref;	/* NULL: none */
	const char *key;	/* idempotency key, 1..JP_KEY_MAX bytes; NULL: none */
	enum jp_priority priority;
	enum jp_deadline deadline;
	int64_t deadline_ms;	/* AT: ms since the epoch; IN: ms after receipt */
	int64_t not_before_ms;	/* not started before this wall-clock time (ms since the
				 * epoch); 0: none */
	struct jp_dep *after;
	size_t n_after;
	struct jp_dep *any_of;
	size_t n_any_of;
	uint32_t cost;		/* 1..JP_COST_MAX */
	/* exec */
	const char **argv;	/* argc strings and a NULL */
	size_t argc;
	struct jp_env *env;
	size_t n_env;
	const char *cwd;	/* "/" when absent */
	bool has_stdin;
	unsigned char *stdin_data;	/* decoded; NULL when empty */
	size_t stdin_len;
	int64_t timeout_ms;	/* 0: none */
	/* "resources": limits of the command's control group, 0: none */
	uint64_t res_memory;	/* bytes */
	uint64_t res_pids;
	uint32_t res_cpu_milli;	/* thousandths of a CPU */
	const char *backend;	/* "local", "slurm", "auto"; NULL: the client's default */
	/* a job array: `array` (the text, borrowed; NULL: not an array) parsed into arr */
	const char *array_text;
	struct jp_array array;
	bool array_replace;	/* exec: "{}" in argv is replaced by each element's index */
	/* "needs": units of the daemon's named resources (config "resources") the command
	 * holds while it runs, in the order given; names borrowed */
	struct jp_need {
		const char *name;
		uint32_t count;	/* 1..JP_NEED_COUNT_MAX */
	} needs[JP_NEEDS_MAX];
	size_t n_needs;
	/* completion hooks, run by the submitting client when the job ends */
	const char *on_exit;	/* a shell command line; NULL: none */
	bool notify;		/* a desktop notification (else a terminal bell) */
	int64_t hook_timeout_ms;	/* 0: the default, JP_HOOK_TIMEOUT_MS */
	struct jp_retry retry;	/* "retry"; max_attempts 0: none */
	/* call */
	const char *fn;
	json_t *args;		/* borrowed; NULL: null */
};

/* jp_size_parse: a memory size as the protocol writes it: an integer of bytes, or a string
 * of digits with K, M, G or T (powers of 1024; "Ki"/"KiB"/"KB" read the same), into *out.
 * Returns 0, or -1 when v is neither (or overflows).  Any thread. */
int jp_size_parse(const json_t *v, uint64_t *out);

/* jp_need_name_ok: whether name is a resource name: 1..JP_NEED_NAME_MAX bytes of a-z,
 * 0-9 and '_', starting with a letter (so JSCHED_RESOURCE_<NAME> is a variable name). */
bool jp_need_name_ok(const char *name);

/* jp_job_spec_init fills s with the defaults (kind exec, priority normal, cost 1, cwd "/"). */
void jp_job_spec_init(struct jp_job_spec *s);

/* jp_job_spec_parse checks obj (borrowed) strictly against PROTOCOL.md section 4 and fills
 * out.  path is the spec's own path for error fields ("job", "jobs[3]").  Returns 0, or
 * JSCHED_EBAD_REQUEST / JSCHED_ELIMIT_EXCEEDED / JSCHED_ENOMEM with err filled (out is
 * then cleared).  Refs in deps are not resolved here (jp_submit_parse does).  NULL lim:
 * the defaults.  Any thread. */
int jp_job_spec_parse(const json_t *obj, const char *path, const struct jp_limits *lim,
		      struct jp_job_spec *out, struct jp_err *err);

/* jp_job_spec_to_json builds the JSON form of s (new reference; NULL when out of memory).
 * Members equal to their defaults are left out. */
json_t *jp_job_spec_to_json(const struct jp_job_spec *s);

/* jp_job_spec_clear frees what s owns and re-initialises it. */
void jp_job_spec_clear(struct jp_job_spec *s);

/* A whole submit: its specs, refs resolved to indexes, checked for cycles. */
struct jp_submit {
	bool single;		/* the request had `job` (one spec) rather than `jobs` */
	size_t n;
	struct jp_job_spec *specs;
	size_t *order;		/* a topological order of the specs: a spec comes after every
				 * spec it names by ref; create jobs in this order */
	bool has_refs;		/* some spec has a ref: the reply carries "refs" */
	/* The request's `wait` (PROTOCOL.md 6.2, "Waiting in the submit"): reply once the
	 * jobs have ended, with their records. */
	bool wait;		/* `wait` true or an object */
	bool wait_any;		/* its `mode` "any" */
	bool wait_output;	/* its `output`: the job's output in the reply too */
	int64_t wait_timeout_ms; /* its `timeout_ms`; -1: none */
	/* specs and order are not its own but the room for one spec of the jp_fast it was
	 * read into (jp_submit_clear clears the spec and frees neither): such a submit is
	 * cleared before that jp_fast is freed or goes out of scope. */
	bool borrowed;
};

/* jp_submit_parse parses the specs of a checked submit request (r from jp_request_parse):
 * every spec strictly, refs unique and resolved, the ref graph acyclic.  Dependencies on
 * existing job ids are the daemon's to check.  Returns 0, or JSCHED_EBAD_REQUEST,
 * JSCHED_ELIMIT_EXCEEDED, JSCHED_EUNKNOWN_DEPENDENCY, JSCHED_EDEPENDENCY_CYCLE or
 * JSCHED_ENOMEM with err filled (out then empty).  Any thread. */
int jp_submit_parse(const struct jp_request *r, const struct jp_limits *lim,
		    struct jp_submit *out, struct jp_err *err);

/* jp_submit_clear frees what out owns. */
void jp_submit_clear(struct jp_submit *out);

/* jp_submit_reply_new builds the submit reply for ids (one per spec, in spec order):
 * {"job": id} when s->single, else {"jobs": [...], "refs": {...}?} (new reference).
 * existing (NULL: none) marks the specs whose key named a job that already existed: the
 * reply then carries "existing": true (single) or "existing": [spec indexes]. */
json_t *jp_submit_reply_new(int64_t id, const struct jp_submit *s, const int64_t *ids,
			    const bool *existing);

/* ---- the hot requests without a tree (fastreq.c) --------------------------------------- */

/* Where a submit's spec lies in its frame's text. */
struct jp_fast_span {
	const char *text;
	size_t len;
};

/* A request read straight from its frame's bytes by jp_fast_parse: id, op and the
 * members of ping, status, wait, cancel or submit; strings point into the arena (or
 * into small), args are owned here.  Large (small is inline): one per request in
 * progress, on the stack. */
struct jp_fast {
	int64_t id;
	enum jp_op op;
	unsigned seen;		/* the members present (fastreq.c's F_* bits) */
	int64_t job;		/* `job` (an id) */
	int64_t timeout_ms;	/* wait's `timeout_ms` */
	int64_t *ids;		/* `jobs` (ids) */
	size_t n_ids;
	bool detail;		/* status's `detail` */
	const char *mode;	/* wait's `mode`, "all" or "any" */
	const char *fields;	/* wait's `fields`, "all" or "brief" */
	struct jp_submit submit;	/* a submit: whole (refs resolved, ordered) */
	struct jp_fast_span *spans;	/* a submit: each spec's text, in spec order */
	size_t cap_spans;
	json_t **args;		/* the specs' args (owned: decref'd by jp_fast_free) */
	size_t n_args, cap_args;
	char *arena;		/* the decoded strings: small, or malloc'd */
	char small[1024];
	/* The room for a submit of one spec: its spec, span and order, so that the commonest
	 * submit allocates no array (submit.borrowed; two reallocs, a malloc and their three
	 * frees, about 450 of the daemon's instructions per noop submitted with wait).  Past
	 * small: jp_fast_init does not clear them; one_spec fills them. */
	struct jp_job_spec one;
	struct jp_fast_span one_span;
	size_t one_order;
};

/* jp_fast_init makes f empty; jp_fast_free frees what it owns (and makes it empty). */
void jp_fast_init(struct jp_fast *f);
void jp_fast_free(struct jp_fast *f);

/* jp_fast_parse reads payload[0..len) (a frame's, not NUL-terminated, borrowed: spans
 * point into it) into f (initialised) when it is a request it takes, checked as
 * jp_frame_parse + jp_request_parse + jp_submit_parse would check it (NULL lim: the
 * defaults).  Returns true with f filled, or false with f empty: not taken (another op
 * or member, an error of any kind, out of memory), and the frame goes that way.  Never
 * true where that way would refuse the frame, and every value read the same (the
 * differential tests in tests/proto and tests/fuzz).  Any thread. */
bool jp_fast_parse(const void *payload, size_t len, const struct jp_limits *lim,
		   struct jp_fast *f);

/* jp_fast_member_int / _bool: a member of a fast request, 1 with *out set or 0 if absent
 * (jp_req_int and jp_req_bool read them).  jp_fast_member_str: the same, NULL if absent.
 * jp_fast_ids: jp_req_ids for a fast request. */
int jp_fast_member_int(const struct jp_fast *f, const char *key, int64_t *out);
int jp_fast_member_bool(const struct jp_fast *f, const char *key, bool *out);
const char *jp_fast_member_str(const struct jp_fast *f, const char *key);
int jp_fast_ids(const struct jp_fast *f, int64_t **ids, size_t *n, bool *single);

/* jp_submit_reply_text appends the members of jp_submit_reply_new's reply after its id,
 * from `,"ok":true` on, as the text jansson would dump (no closing brace), for a submit
 * without refs.  0, JSCHED_ENOMEM, or JSCHED_EINVAL when s has refs (use
 * jp_submit_reply_new: the refs' names need jansson's escaping). */
int jp_submit_reply_text(struct jp_buf *b, const struct jp_submit *s, const int64_t *ids,
			 const bool *existing);

/* ---- the job record -------------------------------------------------------------------- */

/* A job record (PROTOCOL.md section 5).  Absent times are -1, an absent exit code -1, an
 * absent signal 0.  Strings and value are borrowed. */
struct jp_record {
	int64_t job;
	const char *name;	/* NULL: none */
	const char *client;
	int64_t uid;
	enum jp_kind kind;
	enum jp_priority priority;
	enum jp_state state;
	int64_t submitted_ms, started_ms, finished_ms;
	int64_t not_before_ms;	/* the spec's not_before, while it matters (scheduled) */
	int exit_code;
	int signal;
	json_t *value;		/* call, succeeded: the handler's result; NULL: none */
	enum jp_cause cause;	/* JP_CAUSE_NONE: none */
	const char *reason;	/* NULL: none */
};

/* jp_record_init fills r with "absent" everywhere. */
void jp_record_init(struct jp_record *r);

/* jp_record_to_json builds the record object (new reference; value is copied by
 * reference count, not stolen).  NULL when out of memory. */
json_t *jp_record_to_json(const struct jp_record *r);

/* jp_record_parse reads a record (borrowed) into out.  Members it does not know are
 * ignored (a newer daemon may add some); a state or cause it does not know is
 * JSCHED_EPROTOCOL.  0 or JSCHED_EPROTOCOL. */
int jp_record_parse(const json_t *obj, struct jp_record *out, struct jp_err *err);

/* jp_output_stream_new builds an output reply's stream object {"data", "bytes",
 * "truncated"} (new reference). */
json_t *jp_output_stream_new(const void *data, size_t len, bool truncated);

/* jp_output_stream_parse reads one (borrowed): *data (malloc()ed, NUL-terminated, free()
 * it), *len, *truncated.  0, JSCHED_EPROTOCOL or JSCHED_ENOMEM. */
int jp_output_stream_parse(const json_t *obj, unsigned char **data, size_t *len, bool *truncated,
			   struct jp_err *err);

#endif /* JPROTO_H */
