/* daemon/core/whist.h: latency histograms over the last minute and the last five minutes.
 *
 * The lifetime histograms (hist.h) cannot tell a spike an hour ago from a healthy last
 * minute.  A windowed histogram keeps the same log-linear buckets in time slices that
 * rotate: six slices of 10 s for "the last minute" and five slices of 1 min for "the last
 * five minutes".  A value is counted in the current slice of each ring; reading a window
 * merges its ring's slices.  A window so covers the current (partial) slice and the
 * complete ones before it: between 50 and 60 s of the past for 1m, between 4 and 5 min for
 * 5m; jd_whist_read says exactly how much (covered_ms), so a rate is count / covered.
 *
 * Memory.  A slice is sparse: a sorted array of (bucket, count) pairs, grown as new
 * buckets appear, so it costs what the distribution spreads over (a steady latency
 * touches 10-40 buckets: under 0.5 KiB), never more than 976 pairs (7.8 KiB); an empty
 * slice holds no array.  A client that finished nothing for five minutes holds 11 empty
 * slices (about 0.6 KiB with the headers).  Chosen over dense slices (11 x 7.8 KiB per
 * latency, 258 KiB per client for the three latencies) because per-client windows are
 * kept for every client.
 *
 * Time is passed in (ms on any monotonic clock), so tests drive it by hand.  Loop thread
 * only, like the lifetime histograms: no lock.
 */
#ifndef JD_WHIST_H
#define JD_WHIST_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/hist.h"

#define JD_WHIST_FINE 6		/* 10 s slices: the last minute */
#define JD_WHIST_FINE_MS 10000u
#define JD_WHIST_COARSE 5	/* 1 min slices: the last five minutes */
#define JD_WHIST_COARSE_MS 60000u

enum jd_window {
	JD_WINDOW_1M = 0,
	JD_WINDOW_5M = 1,
};

struct jd_whist_pair {
	uint16_t bucket;
	uint32_t count;
};

struct jd_whist_slice {
	uint64_t epoch;			/* now_ms / slice length when it was (re)started */
	uint64_t count, sum, min, max;
	uint32_t n, cap;		/* pairs used and allocated */
	struct jd_whist_pair *pair;	/* sorted by bucket; NULL while empty */
};

struct jd_whist {
	struct jd_whist_slice fine[JD_WHIST_FINE];
	struct jd_whist_slice coarse[JD_WHIST_COARSE];
	uint64_t lost;			/* values not counted in a window (no memory) */
};

/* The three latencies, windowed, beside struct jd_latency. */
struct jd_wlatency {
	struct jd_whist queue_wait, run, end_to_end;
};

/* jd_whist_record: count value v (ns) at time now_ms in both windows.  Never fails: a
 * value that finds no memory for a new bucket is counted in `lost` instead. */
void jd_whist_record(struct jd_whist *w, uint64_t now_ms, uint64_t v);

/* jd_whist_read: merge window `win` as of now_ms into *out (overwritten: a dense
 * histogram that jd_hist_percentile reads) and return the milliseconds it covers (the
 * current slice's elapsed part plus the complete slices before it; at least 1). */
uint64_t jd_whist_read(const struct jd_whist *w, uint64_t now_ms, enum jd_window win,
		       struct jd_hist *out);

/* jd_whist_bytes: the heap memory the window holds now. */
size_t jd_whist_bytes(const struct jd_whist *w);

/* jd_whist_free: release the slices' memory (the struct itself is the caller's). */
void jd_whist_free(struct jd_whist *w);

#endif /* JD_WHIST_H */
