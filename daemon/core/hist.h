/* daemon/core/hist.h: latency histograms with bounded memory.
 *
 * A log-linear histogram (the HdrHistogram idea, minus its configurability): values are
 * bucketed by their highest set bit and the next four bits, so every bucket is at most
 * 1/16 (6.25 %) wide relative to its values, from 1 ns to 2^64 ns, in a fixed 976
 * counters (7.8 KiB).  Percentiles are read back as the midpoint of the bucket holding
 * them, clamped to the exact minimum and maximum (so a run of one value reads back
 * exactly).  The daemon records queue wait, run time and end to end per client and in
 * all; only the loop thread touches them, so there is no lock.
 *
 * Windows.  A lifetime histogram cannot tell a spike an hour ago from a healthy last
 * minute, so each latency is also kept in time slices that rotate: six slices of 10 s
 * for "the last minute" and five slices of 1 min for "the last five minutes".  A value is
 * counted in the current 10 s slice only; when that slice is restarted for a later epoch
 * or trimmed, its values are folded into the slice of their minute (one pass over its
 * counters per 10 s, where counting each value in both rings cost ~45 instructions more
 * per value, six values a finished job).  Reading a window merges its ring's slices into
 * a dense histogram (for five minutes, also the 10 s slices not yet folded).  A window so covers the current (partial) slice and the
 * complete ones before it: between 50 and 60 s of the past for 1m, between 4 and 5 min
 * for 5m; jd_whist_read says exactly how much, so a rate is count / covered.
 *
 * A slice is dense, 976 32-bit counters (3.9 KiB), allocated at its first value (a
 * minute's at its first fold) and released once it lies outside its window
 * (jd_whist_trim), so recording a value is an index and an increment, and memory goes to what was active in the last five minutes:
 * at most 11 x 3.9 KiB = 43 KiB per latency, 129 KiB for a client's three, nothing for
 * an idle client.  Sparse slices (sorted (bucket, count) pairs, a few hundred bytes for
 * a steady latency) were tried first and removed: a value cost 540 ns against 47 ns for
 * the lifetime histogram in the same run of bench/hist (values spread over 17 octaves,
 * a loaded machine), 2.2 us per finished job, too much for a hot path that finishes
 * 300,000 jobs/s.  Time is passed in (ms on any monotonic clock), so tests drive it by
 * hand.
 */
#ifndef JD_HIST_H
#define JD_HIST_H

#include <stddef.h>
#include <stdint.h>

#define JD_HIST_BUCKETS 976

struct jd_hist {
	uint64_t count;
	uint64_t min, max;
	uint64_t sum;
	uint64_t bucket[JD_HIST_BUCKETS];
};

/* jd_hist_record: count one value (ns). */
void jd_hist_record(struct jd_hist *h, uint64_t v);

/* jd_hist_bucket: the index of the bucket that counts value v (< JD_HIST_BUCKETS). */
unsigned jd_hist_bucket(uint64_t v);

/* jd_hist_percentile: the value at quantile q (0 < q <= 1), 0 if empty. */
uint64_t jd_hist_percentile(const struct jd_hist *h, double q);

/* ---- over the last minute and the last five minutes ----------------------------------- */

#define JD_WHIST_FINE 6		/* 10 s slices: the last minute */
#define JD_WHIST_FINE_MS 10000u
#define JD_WHIST_COARSE 5	/* 1 min slices: the last five minutes */
#define JD_WHIST_COARSE_MS 60000u

enum jd_window {
	JD_WINDOW_1M = 0,
	JD_WINDOW_5M = 1,
};

struct jd_whist_slice {
	uint64_t epoch;			/* now_ms / slice length + 1 when it was (re)started */
	uint64_t count, sum, min, max;
	uint32_t *bucket;		/* JD_HIST_BUCKETS counters; NULL until a value came */
};

struct jd_whist {
	struct jd_whist_slice fine[JD_WHIST_FINE];
	struct jd_whist_slice coarse[JD_WHIST_COARSE];
	uint64_t lost;			/* values not counted in a window (no memory) */
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

/* jd_whist_trim: release the counters of slices that lie wholly outside their window at
 * now_ms (they hold nothing a read would count).  The daemon calls it every second per
 * client, so a client idle for five minutes holds no window memory. */
void jd_whist_trim(struct jd_whist *w, uint64_t now_ms);

/* jd_whist_free: release the slices' memory (the struct itself is the caller's). */
void jd_whist_free(struct jd_whist *w);

/* ---- the three latencies the daemon keeps, in all and per client (ns) ---------------- */

struct jd_latency {
	struct jd_hist queue_wait;	/* queued -> started */
	struct jd_hist run;		/* started -> finished */
	struct jd_hist end_to_end;	/* submitted -> finished */
	struct jd_whist w_queue_wait, w_run, w_end_to_end;	/* the same, windowed */
};

/* jd_latency_record: count a finished job at now_ms: its queue wait and run time if it
 * started (started != 0), and its end-to-end time. */
void jd_latency_record(struct jd_latency *l, uint64_t now_ms, int started, uint64_t queue_wait,
		       uint64_t run, uint64_t end_to_end);

/* jd_latency_record_pair: jd_latency_record into a and, if not NULL, b (in all and a
 * client's), each value's bucket found once for both. */
void jd_latency_record_pair(struct jd_latency *a, struct jd_latency *b, uint64_t now_ms, int started,
			    uint64_t queue_wait, uint64_t run, uint64_t end_to_end);

/* jd_latency_trim: jd_whist_trim of the three windows. */
void jd_latency_trim(struct jd_latency *l, uint64_t now_ms);

/* jd_latency_free: release the windows' memory (the struct is the caller's). */
void jd_latency_free(struct jd_latency *l);

#endif /* JD_HIST_H */
