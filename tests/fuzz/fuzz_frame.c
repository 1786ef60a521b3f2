/* tests/fuzz/fuzz_frame.c: fuzz target for the frame decoder (and the payload parser and
 * the encoder behind it).
 *
 * Input: one byte choosing the decoder's limit (16 to 16,336 bytes), then the byte stream
 * a peer might send.  The stream is decoded twice: fed all at once, and fed in chunks of
 * sizes drawn from the input itself (as reads return them).  Invariants:
 *   - both feedings yield the same sequence of frames and errors (chunking must not
 *     matter);
 *   - every error is one of frame_too_large (sticky), bad_frame or no_memory;
 *   - nothing is buffered beyond one frame (limit + header) plus one feed;
 *   - every message decoded re-encodes as a frame that decodes to an equal message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"
#include "tests/fuzz/fuzz.h"

/* record: append what one decoder step gave to the transcript. */
static void record(struct jp_buf *t, int rc, const json_t *msg)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%d:", rc);

	check(jp_buf_append(t, line, (size_t)n) == 0);
	if (msg) {
		char *s = json_dumps(msg, JSON_COMPACT);

		check(s != NULL);
		check(jp_buf_append(t, s, strlen(s)) == 0);
		free(s);
	}
	check(jp_buf_append(t, "\n", 1) == 0);
}

/* reencode: msg through the encoder and a fresh decoder comes back equal. */
static void reencode(const json_t *msg)
{
	struct jp_buf b = {0};
	struct jp_decoder d;
	json_t *back = NULL;

	check(jp_frame_append(&b, msg, UINT32_MAX) == 0);
	jp_decoder_init(&d, b.len);
	check(jp_decoder_feed(&d, b.data, b.len) == 0);
	check(jp_decoder_next(&d, &back) == 1);
	check(json_equal(msg, back));
	check(jp_decoder_buffered(&d) == 0);
	json_decref(back);
	jp_decoder_free(&d);
	jp_buf_free(&b);
}

/* run: decode data with the given limit, in chunks from `chunks` (NULL: all at once),
 * writing the transcript to t. */
static void run(const uint8_t *data, size_t size, size_t limit, const uint8_t *chunks,
		size_t nchunks, struct jp_buf *t)
{
	struct jp_decoder d;
	size_t off = 0, ci = 0;
	bool dead = false;

	jp_decoder_init(&d, limit);
	while (off < size && !dead) {
		size_t n = chunks ? 1u + chunks[ci++ % nchunks] % 97u : size;
		int rc;

		if (n > size - off)
			n = size - off;
		rc = jp_decoder_feed(&d, data + off, n);
		off += n;
		if (rc < 0) {
			check(rc == JSCHED_EFRAME_TOO_LARGE);
			record(t, rc, NULL);
			break;
		}
		check(jp_decoder_buffered(&d) <= limit + JP_HEADER_BYTES + n);
		for (;;) {
			json_t *msg = NULL;

			rc = jp_decoder_next(&d, &msg);
			if (rc == 0)
				break;
			record(t, rc, msg);
			if (rc == 1) {
				check(json_is_object(msg));
				reencode(msg);
				json_decref(msg);
				continue;
			}
			check(msg == NULL);
			check(rc == JSCHED_EBAD_FRAME || rc == JSCHED_EFRAME_TOO_LARGE ||
			      rc == JSCHED_ENOMEM);
			if (rc == JSCHED_EFRAME_TOO_LARGE) {
				check(jp_decoder_next(&d, &msg) == JSCHED_EFRAME_TOO_LARGE);
				dead = true;
				break;
			}
		}
	}
	jp_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jp_buf whole = {0}, chunked = {0};
	size_t limit;

	if (size < 1)
		return 0;
	limit = 16 + (size_t)data[0] * 64;
	data++;
	size--;
	run(data, size, limit, NULL, 0, &whole);
	/* Chunk sizes: the stream's own bytes, read backwards (any sequence will do, as long as
	 * it depends on the input so the fuzzer can steer it). */
	if (size > 0) {
		uint8_t *sizes = malloc(size);

		check(sizes != NULL);
		for (size_t i = 0; i < size; i++)
			sizes[i] = data[size - 1 - i];
		run(data, size, limit, sizes, size, &chunked);
		free(sizes);
	}
	check(whole.len == chunked.len);
	check(whole.len == 0 || memcmp(whole.data, chunked.data, whole.len) == 0);
	jp_buf_free(&whole);
	jp_buf_free(&chunked);
	return 0;
}
