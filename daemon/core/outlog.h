/* daemon/core/outlog.h: a command's output in memory, both streams in arrival order,
 * keeping the beginning and the end of each stream when it passes its limit.
 *
 * The log is a list of chunks in the order the bytes arrived (stdout and stderr
 * interleaved), each holding bytes of one stream that are contiguous in that stream.
 * Each byte has two positions: its offset in its stream (`off`) and its place in the
 * arrival order of both streams together (`seq`, the bytes of both that came before it).
 *
 * The limit (per stream, `limit` bytes): a stream's first limit/2 bytes (the head) are
 * always kept; of the rest only the last limit - limit/2 (the tail): older tail bytes are
 * dropped as newer ones come.  A stream of at most `limit` bytes is therefore kept whole.
 * Where bytes were dropped a view shows the marker
 *     "\n[jschedd: N bytes not kept]\n"
 * (N the count of bytes dropped there) in their place.  Chunks hold up to 4 KiB, so a
 * command writing a byte at a time costs one chunk per 4 KiB, not per write.
 *
 * Plain data: the loop thread writes and reads it (the process machinery adds, the
 * `output` operation, followers, the journal's output files and recovery read).
 */
#ifndef JD_OUTLOG_H
#define JD_OUTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JD_OUTLOG_CHUNK 4096u

struct jd_out_chunk {
	struct jd_out_chunk *prev, *next;	/* arrival order, both streams */
	struct jd_out_chunk *snext;		/* the stream's next tail chunk */
	uint64_t seq;				/* arrival position of data[skip] */
	uint64_t off;				/* stream offset of data[skip] */
	uint32_t len, cap, skip;		/* bytes data[skip .. skip+len) are kept */
	uint8_t stream;				/* 0 stdout, 1 stderr */
	bool tail;
	unsigned char data[];
};

struct jd_outlog {
	struct jd_out_chunk *first, *last;		/* arrival order */
	struct jd_out_chunk *tq[2], *tq_last[2];	/* each stream's tail chunks, oldest first */
	uint64_t total[2];		/* bytes each stream wrote (the offset of the next) */
	uint64_t kept[2];		/* bytes of each stream held */
	uint64_t tail_kept[2];		/* of those, in tail chunks */
	uint64_t seq;			/* bytes both wrote */
	uint64_t limit;			/* per stream */
	size_t chunks;			/* chunks held */
	uint32_t gen;			/* how many times it was cleared (a job run again) */
	bool oom[2];			/* a chunk could not be allocated: bytes were lost */
};

/* jd_outlog_init: an empty log keeping `limit` bytes per stream. */
void jd_outlog_init(struct jd_outlog *l, uint64_t limit);

/* jd_outlog_clear: free every chunk; the log is empty (its limit stays, its gen counts
 * one more). */
void jd_outlog_clear(struct jd_outlog *l);

/* jd_outlog_add: n bytes of stream s (0 or 1) arrived.  Returns 0, or JSCHED_ENOMEM
 * (the bytes not held are counted as not kept; the log stays sound). */
int jd_outlog_add(struct jd_outlog *l, unsigned s, const void *p, size_t n);

/* jd_outlog_add_at: as jd_outlog_add with the positions given (recovery from the output
 * files): `off` at least the stream's total, `seq` at least the log's; bytes between
 * count as not kept. */
int jd_outlog_add_at(struct jd_outlog *l, unsigned s, uint64_t seq, uint64_t off, const void *p,
		     size_t n);

/* jd_outlog_mem_bytes: the memory the log holds (for retention.bytes). */
size_t jd_outlog_mem_bytes(const struct jd_outlog *l);

/* jd_outlog_truncated: whether stream s lost bytes (dropped or never held). */
bool jd_outlog_truncated(const struct jd_outlog *l, unsigned s);

/* jd_outlog_flat: stream s's kept bytes in order, a marker where bytes are missing, as
 * one malloc'd buffer (NUL-terminated, never NULL on success) in *data, its length in
 * *len.  Returns 0 or JSCHED_ENOMEM. */
int jd_outlog_flat(const struct jd_outlog *l, unsigned s, unsigned char **data, size_t *len);

/* jd_outlog_marker: the marker for n bytes not kept into buf (at least 64 bytes);
 * returns its length. */
size_t jd_outlog_marker(uint64_t n, char *buf, size_t len);

/* jd_outlog_seek: the first chunk holding a byte of a stream in `mask` (bit 0 stdout,
 * bit 1 stderr) at or past from[stream] (stream offsets), in arrival order, or NULL. */
const struct jd_out_chunk *jd_outlog_seek(const struct jd_outlog *l, unsigned mask,
					  const uint64_t from[2]);

/* jd_outlog_tail_start: the stream offsets from which the last `lines` lines of the
 * streams in `mask` begin (their kept bytes in arrival order; a final line without its
 * newline counts as one), into from[0..1]. */
void jd_outlog_tail_start(const struct jd_outlog *l, unsigned mask, uint64_t lines,
			  uint64_t from[2]);

#endif /* JD_OUTLOG_H */
