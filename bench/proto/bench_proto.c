/* bench/proto/bench_proto.c: what the protocol codec costs per message, beside the JSON
 * parse or dump alone (jansson's json_loadb / json_dumpb of the same bytes).
 *
 * The baseline is the part no codec over jansson can avoid; value / baseline is then what
 * framing, the strict checks (every member of every op, every spec field, refs and cycles)
 * and building the parsed structs add on top.  Rows:
 *   - submit, 1 exec job: frame in, decode, check, parse the spec (what the daemon does per
 *     submitted job), against json_loadb of the payload;
 *   - 64 pipelined pings in one read: per message, against json_loadb;
 *   - graph of 1,000 specs chained by refs: per submit, against json_loadb;
 *   - job record reply out: build the record and frame it, against json_dumpb of the same
 *     object.
 * Each row is the median over --runs runs of the mean over a batch of iterations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common/bench.h"
#include "proto/jproto.h"

static volatile size_t sink;	/* keeps the compiler from dropping the work */

static const char submit_text[] =
	"{\"op\":\"submit\",\"id\":12345,\"job\":{\"kind\":\"exec\",\"name\":\"unit tests\","
	"\"argv\":[\"make\",\"-j8\",\"test\"],\"cwd\":\"/home/ana/src/app\",\"env\":{\"PATH\":"
	"\"/usr/local/bin:/usr/bin:/bin\",\"HOME\":\"/home/ana\",\"LANG\":\"C.UTF-8\",\"TERM\":"
	"\"xterm\"},\"timeout_ms\":600000,\"priority\":\"high\",\"after\":[{\"job\":41}]}}";

static json_t *must_parse(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	if (!j) {
		fprintf(stderr, "bench_proto: bad built-in JSON\n");
		exit(1);
	}
	return j;
}

/* frame_of: the frame bytes of msg (stolen). */
static struct jp_buf frame_of(json_t *msg)
{
	struct jp_buf b = {0};

	if (jp_frame_append(&b, msg, UINT32_MAX) < 0)
		exit(1);
	json_decref(msg);
	return b;
}

/* codec_in: feed `bytes`, take every message, check it, parse submits; ns per message. */
static double codec_in(const struct jp_buf *bytes, size_t msgs_per_feed, int iters)
{
	struct jp_decoder d;
	uint64_t t0 = bench_now_ns();

	jp_decoder_init(&d, JP_DEFAULT_FRAME_BYTES);
	for (int i = 0; i < iters; i++) {
		json_t *m;

		if (jp_decoder_feed(&d, bytes->data, bytes->len) < 0)
			exit(1);
		while (jp_decoder_next(&d, &m) == 1) {
			struct jp_request r;
			struct jp_submit s;

			if (jp_request_parse(m, NULL, &r, NULL) < 0)
				exit(1);
			if (r.op == JP_OP_SUBMIT) {
				if (jp_submit_parse(&r, NULL, &s, NULL) < 0)
					exit(1);
				sink += s.n;
				jp_submit_clear(&s);
			}
			json_decref(m);
		}
	}
	jp_decoder_free(&d);
	return (double)(bench_now_ns() - t0) / ((double)iters * (double)msgs_per_feed);
}

/* json_in: json_loadb of each payload of `bytes` (frames back to back); ns per message. */
static double json_in(const struct jp_buf *bytes, size_t msgs_per_feed, int iters)
{
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < iters; i++) {
		size_t off = 0;

		while (off < bytes->len) {
			const unsigned char *p = bytes->data + off;
			size_t n = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
			json_t *m = json_loadb((const char *)p + 4, n, 0, NULL);

			if (!m)
				exit(1);
			sink += json_object_size(m);
			json_decref(m);
			off += 4 + n;
		}
	}
	return (double)(bench_now_ns() - t0) / ((double)iters * (double)msgs_per_feed);
}

static void row_in(struct bench_report *r, const char *name, const struct jp_buf *bytes,
		   size_t msgs, int iters)
{
	int runs = bench_runs(r);
	double *a = calloc((size_t)runs, sizeof(double)), *b = calloc((size_t)runs, sizeof(double));

	if (!a || !b)
		exit(1);
	codec_in(bytes, msgs, iters / 10 + 1);	/* warm up */
	for (int i = 0; i < runs; i++) {
		a[i] = codec_in(bytes, msgs, iters);
		b[i] = json_in(bytes, msgs, iters);
	}
	bench_row(r, name, "ns/msg", NULL, bench_median(a, (size_t)runs), "json_loadb alone",
		  bench_median(b, (size_t)runs));
	free(a);
	free(b);
}

/* The record reply out: build + frame, or the JSON dump alone. */
static double record_out(int iters, bool codec)
{
	struct jp_record rec;
	struct jp_buf out = {0};
	json_t *built = NULL;
	uint64_t t0;
	char dump[1024];

	jp_record_init(&rec);
	rec.job = 123456;
	rec.name = "unit tests";
	rec.client = "nightly-ci";
	rec.uid = 1000;
	rec.priority = JP_PRIO_HIGH;
	rec.state = JP_STATE_FAILED;
	rec.submitted_ms = 1764460812345;
	rec.started_ms = 1764460812350;
	rec.finished_ms = 1764460873002;
	rec.exit_code = 2;
	rec.cause = JP_CAUSE_EXIT;
	rec.reason = "exited with status 2";
	if (!codec)
		built = jp_record_to_json(&rec);
	t0 = bench_now_ns();
	for (int i = 0; i < iters; i++) {
		if (codec) {
			json_t *reply = jp_reply_new(i);

			json_object_set_new(reply, "job", jp_record_to_json(&rec));
			out.len = 0;
			if (jp_frame_append(&out, reply, JP_DEFAULT_REPLY_FRAME_BYTES) < 0)
				exit(1);
			sink += out.len;
			json_decref(reply);
		} else {
			sink += json_dumpb(built, dump, sizeof(dump), JSON_COMPACT);
		}
	}
	json_decref(built);
	jp_buf_free(&out);
	return (double)(bench_now_ns() - t0) / iters;
}

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench-proto", argc, argv);
	int scale = bench_quick(r) ? 20 : 1;
	struct jp_buf one, pings = {0}, graph;
	json_t *req, *jobs;
	int runs = bench_runs(r);
	double *a, *b;

	one = frame_of(must_parse(submit_text));
	for (int i = 0; i < 64; i++) {
		json_t *p = jp_request_new(JP_OP_PING, i);

		if (jp_frame_append(&pings, p, UINT32_MAX) < 0)
			exit(1);
		json_decref(p);
	}
	req = jp_request_new(JP_OP_SUBMIT, 1);
	jobs = json_array();
	for (int i = 0; i < 1000; i++) {
		char ref[16], prev[16];

		snprintf(ref, sizeof(ref), "n%d", i);
		snprintf(prev, sizeof(prev), "n%d", i - 1);
		json_array_append_new(jobs, i ? json_pack("{s:s,s:s,s:s,s:[s]}", "kind", "call", "fn",
							  "noop", "ref", ref, "after", prev)
					      : json_pack("{s:s,s:s,s:s}", "kind", "call", "fn", "noop",
							  "ref", ref));
	}
	json_object_set_new(req, "jobs", jobs);
	graph = frame_of(req);

	row_in(r, "submit, 1 exec job: decode + check + spec", &one, 1, 20000 / scale);
	row_in(r, "64 pipelined pings per read: decode + check", &pings, 64, 2000 / scale);
	row_in(r, "graph of 1,000 refs: decode + check + order", &graph, 1, 40 / scale);

	a = calloc((size_t)runs, sizeof(double));
	b = calloc((size_t)runs, sizeof(double));
	if (!a || !b)
		exit(1);
	for (int i = 0; i < runs; i++) {
		a[i] = record_out(20000 / scale, true);
		b[i] = record_out(20000 / scale, false);
	}
	bench_row(r, "job record reply: build + frame", "ns/msg", NULL,
		  bench_median(a, (size_t)runs), "json_dumpb alone", bench_median(b, (size_t)runs));
	bench_note(r, "messages: %zu-byte submit frame, %zu bytes of 64 pings, %zu-byte graph",
		   one.len, pings.len, graph.len);
	free(a);
	free(b);
	jp_buf_free(&one);
	jp_buf_free(&pings);
	jp_buf_free(&graph);
	return bench_report_finish(r);
}
