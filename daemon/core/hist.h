/* daemon/core/hist.h: latency histograms with bounded memory.
 *
 * A log-linear histogram (the HdrHistogram idea, minus its configurability): values are
 * bucketed by their highest set bit and the next four bits, so every bucket is at most
 * 1/16 (6.25 %) wide relative to its values, from 1 ns to 2^64 ns, in a fixed 976
 * counters (7.8 KiB).  Percentiles are read back as the midpoint of the bucket holding
 * them, clamped to the exact minimum and maximum (so a run of one value reads back
 * exactly).  The daemon records queue wait, run time and end
 * to end per client and in all; only the loop thread touches them, so there is no lock.
 */
#ifndef JD_HIST_H
#define JD_HIST_H

#include <stdint.h>

#define JD_HIST_BUCKETS 976

struct jd_hist {
	uint64_t count;
	uint64_t min, max;
	uint64_t sum;
	uint64_t bucket[JD_HIST_BUCKETS];
};

/* The three latencies the daemon keeps, in all and per client (ns). */
struct jd_latency {
	struct jd_hist queue_wait;	/* queued -> started */
	struct jd_hist run;		/* started -> finished */
	struct jd_hist end_to_end;	/* submitted -> finished */
};

/* jd_hist_record: count one value (ns). */
void jd_hist_record(struct jd_hist *h, uint64_t v);

/* jd_hist_bucket: the index of the bucket that counts value v (< JD_HIST_BUCKETS). */
unsigned jd_hist_bucket(uint64_t v);

/* jd_hist_percentile: the value at quantile q (0 < q <= 1), 0 if empty. */
uint64_t jd_hist_percentile(const struct jd_hist *h, double q);

#endif /* JD_HIST_H */
