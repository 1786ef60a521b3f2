/* daemon/record.h: job records written straight to JSON text, for replies that carry
 * many of them (`wait` on a batch), and as jansson objects for the others.
 *
 * A `wait` on a batch of 1,000 jobs carries 1,000 records.  Built as jansson objects
 * (the first version), serialised and freed, they made jansson and malloc/free the larger
 * part of the loop thread's time: end to end, one client submitting batches of 1,000
 * noops and waiting for each got ~81k jobs/s, against ~190k jobs/s when it did not wait
 * for records; written as text, ~103k (measured on this 2-core VM).  This file
 * writes the record (PROTOCOL.md section 5) as text directly into the reply's buffer,
 * and is the only place that knows its members: jd_job_record (declared in jobs.h) parses
 * that text into an object for the replies that want one.  Exec jobs, whose records carry
 * the exec part's members (added to an object by exec.c), go through jd_job_record.
 * Loop thread only.
 */
#ifndef JD_RECORD_H
#define JD_RECORD_H

#include "daemon/jobs.h"
#include "proto/jproto.h"

/* jd_record_text: append the record j had when it entered state s (as jd_job_record_as)
 * to out, as compact JSON text.  Returns 0 or JSCHED_ENOMEM. */
int jd_record_text(struct jp_buf *out, struct jd_daemon *d, const struct jd_job *j,
		   enum jd_state s);

/* jd_json_text_string: append s as a JSON string (quoted, escaped; invalid UTF-8 becomes
 * U+FFFD).  Returns 0 or JSCHED_ENOMEM. */
int jd_json_text_string(struct jp_buf *out, const char *s);

/* jd_json_text_int: append v in decimal.  Returns 0 or JSCHED_ENOMEM. */
int jd_json_text_int(struct jp_buf *out, int64_t v);

#endif /* JD_RECORD_H */
