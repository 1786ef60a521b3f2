/* proto/frame.c: framing (PROTOCOL.md section 1): a 4-byte big-endian length, then one
 * JSON object in UTF-8.
 *
 * The decoder keeps the bytes it is fed in one buffer and hands out whole frames as
 * pointers into it (no copy per frame).  A frame's length is judged from its header alone:
 * a too-large frame is refused before any room is set aside for it, and the bytes fed
 * after such a header are not even kept.  The buffer is compacted when new bytes come and
 * whole frames have been taken, so each byte moves at most once; the room for a partial
 * frame is reserved in one step once its (acceptable) header is known.
 *
 * Alternative considered: a decoder that consumes the caller's buffer in place and hands
 * back "bytes used" (no copy at all when a read holds whole frames).  It was set aside
 * because the daemon stops reading a connection under backpressure and would then have to
 * keep the unconsumed tail of its read buffer itself; owning the bytes here keeps that in
 * one place.  The copy costs one memcpy per read, small beside the JSON parse.
 *
 * The encoder dumps the object straight into the output buffer after a placeholder
 * header (one pass, no intermediate string), then fills the header in.
 */
#include "proto/jproto.h"

#include <stdlib.h>
#include <string.h>

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int jp_decoder_init(struct jp_decoder *d, size_t limit)
{
	jp_buf_init(&d->in);
	d->pos = 0;
	d->limit = limit;
	d->error = 0;
	return 0;
}

void jp_decoder_set_limit(struct jp_decoder *d, size_t limit)
{
	d->limit = limit;
}

void jp_decoder_free(struct jp_decoder *d)
{
	jp_buf_free(&d->in);
	d->pos = 0;
}

size_t jp_decoder_buffered(const struct jp_decoder *d)
{
	return d->in.len - d->pos;
}

size_t jp_decoder_held(const struct jp_decoder *d)
{
	return d->in.cap;
}

void jp_decoder_trim(struct jp_decoder *d, size_t keep)
{
	if (d->in.len == d->pos && d->in.cap > keep) {
		jp_buf_free(&d->in);
		d->pos = 0;
	}
}

/* too_large: the decoder met a header above its limit; nothing it holds matters now. */
static int too_large(struct jp_decoder *d)
{
	d->error = JSCHED_EFRAME_TOO_LARGE;
	jp_buf_free(&d->in);
	d->pos = 0;
	return d->error;
}

int jp_decoder_feed(struct jp_decoder *d, const void *data, size_t n)
{
	size_t have;

	if (d->error)
		return d->error;
	if (d->pos > 0) {	/* drop the frames already taken */
		jp_buf_consume(&d->in, d->pos);
		d->pos = 0;
	}
	have = d->in.len;
	if (have < JP_HEADER_BYTES && have + n >= JP_HEADER_BYTES) {
		/* The first header completes with these bytes: judge it before keeping them. */
		unsigned char h[JP_HEADER_BYTES];

		if (have > 0)
			memcpy(h, d->in.data, have);
		memcpy(h + have, data, JP_HEADER_BYTES - have);
		if (be32(h) > d->limit) {
			too_large(d);
			return 0;	/* jp_decoder_next* reports it */
		}
	}
	return jp_buf_append(&d->in, data, n);
}

int jp_decoder_next_frame(struct jp_decoder *d, const unsigned char **payload, size_t *len)
{
	size_t avail;
	uint32_t n;

	if (d->error)
		return d->error;
	avail = d->in.len - d->pos;
	if (avail < JP_HEADER_BYTES)
		return 0;
	n = be32(d->in.data + d->pos);
	if (n > d->limit)
		return too_large(d);
	if (n == 0) {
		d->pos += JP_HEADER_BYTES;
		return JSCHED_EBAD_FRAME;
	}
	if (avail - JP_HEADER_BYTES < n) {
		/* Set aside room for the rest of this frame once: its size is known and allowed.
		 * Failing to is not an error yet: jp_decoder_feed will report ENOMEM. */
		(void)jp_buf_reserve(&d->in, JP_HEADER_BYTES + n - avail);
		return 0;
	}
	*payload = d->in.data + d->pos + JP_HEADER_BYTES;
	*len = n;
	d->pos += JP_HEADER_BYTES + n;
	return 1;
}

int jp_decoder_next_err(struct jp_decoder *d, json_t **msg, struct jp_err *err)
{
	const unsigned char *p;
	size_t n;
	int rc;

	*msg = NULL;
	rc = jp_decoder_next_frame(d, &p, &n);
	if (rc == JSCHED_EFRAME_TOO_LARGE)
		return jp_err_set(err, rc, NULL, "frame larger than the limit of %zu bytes",
				  d->limit);
	if (rc == JSCHED_EBAD_FRAME)
		return jp_err_set(err, rc, NULL, "empty frame");
	if (rc <= 0)
		return rc;
	rc = jp_frame_parse(p, n, msg, err);
	return rc < 0 ? rc : 1;
}

int jp_decoder_next(struct jp_decoder *d, json_t **msg)
{
	return jp_decoder_next_err(d, msg, NULL);
}

int jp_frame_parse(const void *payload, size_t len, json_t **msg, struct jp_err *err)
{
	json_error_t jerr;
	json_t *j;

	*msg = NULL;
	if (len == 0)
		return jp_err_set(err, JSCHED_EBAD_FRAME, NULL, "empty frame");
	/* jansson checks UTF-8, refuses \u0000 (no JSON_ALLOW_NUL) and trailing bytes. */
	j = json_loadb(payload, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
		return jp_err_set(err, JSCHED_EBAD_FRAME, NULL, "not JSON: %s at byte %d",
				  jerr.text, jerr.position);
	}
	if (!json_is_object(j)) {
		json_decref(j);
		return jp_err_set(err, JSCHED_EBAD_FRAME, NULL, "the frame is not a JSON object");
	}
	*msg = j;
	return 0;
}

struct dump_ctx {
	struct jp_buf *out;
	size_t start;		/* where the payload begins */
	size_t limit;
	int error;		/* why the dump stopped */
};

static int dump_cb(const char *buffer, size_t size, void *data)
{
	struct dump_ctx *c = data;

	if (c->out->len - c->start + size > c->limit)
		c->error = JSCHED_EFRAME_TOO_LARGE;
	else if (jp_buf_append(c->out, buffer, size) < 0)
		c->error = JSCHED_ENOMEM;
	return c->error ? -1 : 0;
}

int jp_frame_append(struct jp_buf *out, const json_t *msg, size_t limit)
{
	size_t start = out->len, n;
	struct dump_ctx c;

	if (!json_is_object(msg))
		return JSCHED_EINVAL;
	if (limit > UINT32_MAX)
		limit = UINT32_MAX;
	if (jp_buf_reserve(out, JP_HEADER_BYTES + 256) < 0)
		return JSCHED_ENOMEM;
	out->len += JP_HEADER_BYTES;
	c = (struct dump_ctx){.out = out, .start = out->len, .limit = limit};
	if (json_dump_callback(msg, dump_cb, &c, JSON_COMPACT) < 0) {
		out->len = start;
		return c.error ? c.error : JSCHED_ENOMEM;
	}
	n = out->len - c.start;
	out->data[start] = (unsigned char)(n >> 24);
	out->data[start + 1] = (unsigned char)(n >> 16);
	out->data[start + 2] = (unsigned char)(n >> 8);
	out->data[start + 3] = (unsigned char)n;
	return 0;
}

int jp_frame_encode(const json_t *msg, char **bytes, size_t *len)
{
	struct jp_buf b;
	int rc;

	*bytes = NULL;
	*len = 0;
	jp_buf_init(&b);
	rc = jp_frame_append(&b, msg, UINT32_MAX);
	if (rc < 0) {
		jp_buf_free(&b);
		return rc;
	}
	*bytes = (char *)b.data;
	*len = b.len;
	return 0;
}
