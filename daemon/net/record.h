/* daemon/net/record.h: job records, and the replies and events that carry them, written
 * straight to JSON text.
 *
 * A `wait` on a batch of 1,000 jobs carries 1,000 records.  Built as jansson objects
 * (the first version), serialised and freed, they made jansson and malloc/free the larger
 * part of the loop thread's time: end to end, one client submitting batches of 1,000
 * noops and waiting for each got ~81k jobs/s, against ~190k jobs/s when it did not wait
 * for records; written as text, ~103k (measured on this 2-core VM).  So every reply and
 * event with records (`wait`, `status`, `list`, watch events) is written as text into
 * the frame's buffer, and this file is the one place that knows the record's members.
 * Exec jobs, whose records carry the exec part's members (added to an object by exec.c),
 * go through a jansson object.  Loop thread only.
 */
#ifndef JD_RECORD_H
#define JD_RECORD_H

#include "daemon/core/jobs.h"
#include "proto/jproto.h"

struct jd_net;

/* jd_record_text: append the record j had when it entered state s (as jd_job_record_as)
 * to out, as compact JSON text.  Returns 0 or JSCHED_ENOMEM. */
int jd_record_text(struct jp_buf *out, struct jd_net *d, const struct jd_job *j,
		   enum jd_state s);

/* jd_record_detail: j's record as it stands, with what its spec said added (status with
 * "detail": true): `after` and `any_of` (ids), exec: `argv`, `cwd`, `env_keys` (the
 * environment's names, not its values), `stdin_bytes`, `timeout_ms`; call: `args`.  New
 * reference, or NULL when memory ran out. */
json_t *jd_record_detail(struct jd_net *d, const struct jd_job *j);

/* The records a reply carries: jobs[i]'s record built when the reply is written, unless
 * texts[i] holds one captured earlier (texts may be NULL). */
struct jd_records {
	size_t n;
	struct jd_job *const *jobs;
	const struct jp_buf *texts;
	bool brief;		/* each record `{"job":N,"state":"..."}` only (wait's `fields`) */
};

/* jd_records_text: append the records as a JSON array, or the one record itself if
 * `single`.  Returns 0 or JSCHED_ENOMEM. */
int jd_records_text(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
		    bool single);

/* JD_REPLY_BUDGET: the most a paged reply (list, status of several ids) writes before it
 * stops and says `more`: the protocol's reply_frame_bytes less room for the reply's own
 * members around the records. */
#define JD_REPLY_BUDGET ((size_t)JP_DEFAULT_REPLY_FRAME_BYTES - 4096)

/* jd_records_text_paged: jd_records_text that stops before the record that would take
 * out past `budget` bytes (0: no budget), the first one always written, and stores in
 * *written how many it wrote.  Returns 0 or JSCHED_ENOMEM. */
int jd_records_text_paged(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
			  bool single, size_t budget, size_t *written);

/* jd_records_text_range: the array of jd_records_text_paged written a part at a time:
 * appends the records from *next up to (not including) `to`, the array's "[" before the
 * first (*next 0), never its "]"; stops before a record that would take out past `budget`
 * (0: none; the first record of all always written) and sets *full; *next becomes the
 * index of the first record not written.  So a reply of many records is written over
 * several calls, other work between them (op_wait.c, "slices").  Returns 0 or
 * JSCHED_ENOMEM.  Loop thread. */
int jd_records_text_range(struct jp_buf *out, struct jd_net *d, const struct jd_records *r,
			  size_t to, size_t budget, size_t *next, bool *full);

/* jd_reply_text_start: begin a reply frame in the empty buffer b: room for the frame
 * header (jd_conn_send_frame fills it) and `{"id":N` (null for JP_ID_NONE).  The caller
 * writes the rest, from the comma on.  Returns 0 or JSCHED_ENOMEM. */
int jd_reply_text_start(struct jp_buf *b, int64_t id);

/* jd_json_text_raw: append s as it is (JSON the caller wrote).  0 or JSCHED_ENOMEM.
 * Inline, so that a literal's length is known where it is written (a call and a strlen
 * each were ~150 of a noop submit with wait's instructions, callgrind: six a reply). */
static inline int jd_json_text_raw(struct jp_buf *out, const char *s)
{
	return jp_buf_append(out, s, strlen(s));
}

/* jd_json_text_string: append s as a JSON string (quoted, escaped; invalid UTF-8 becomes
 * U+FFFD).  Returns 0 or JSCHED_ENOMEM. */
int jd_json_text_string(struct jp_buf *out, const char *s);

/* jd_json_text_stringn: jd_json_text_string of the len bytes at s (a NUL among them is
 * written as \u0000; a character is read whole only if it ends within them). */
int jd_json_text_stringn(struct jp_buf *out, const char *s, size_t len);

/* jd_json_text_int: append v in decimal.  Returns 0 or JSCHED_ENOMEM. */
int jd_json_text_int(struct jp_buf *out, int64_t v);

/* jd_hook_json: a job's "hooks" member (new reference; NULL on ENOMEM): on_exit, notify,
 * timeout_ms, state (pending, running, succeeded, failed), exit_code, signal, reason and
 * finished_ms once reported. */
json_t *jd_hook_json(const struct jd_hook *h);

#endif /* JD_RECORD_H */
