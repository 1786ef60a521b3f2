/* daemon/core/hist.c: the log-linear latency histograms, lifetime and windowed (see hist.h). */
#include "daemon/core/hist.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

unsigned jd_hist_bucket(uint64_t v)
{
	unsigned msb;

	if (v < 16)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	return (msb - 3u) * 16u + (unsigned)((v >> (msb - 4u)) & 15u);
}

/* bucket_low / bucket_width: the range [low, low + width) a bucket stands for. */
static uint64_t bucket_low(unsigned i)
{
	unsigned msb;

	if (i < 16)
		return i;
	msb = i / 16u + 3u;
	return (1ull << msb) | ((uint64_t)(i % 16u) << (msb - 4u));
}

static uint64_t bucket_width(unsigned i)
{
	return i < 16 ? 1 : 1ull << (i / 16u + 3u - 4u);
}

/* hist_add: count v, whose bucket is b. */
static inline void hist_add(struct jd_hist *h, uint64_t v, unsigned b)
{
	h->bucket[b]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (h->count == 1 || v < h->min)
		h->min = v;
}

void jd_hist_record(struct jd_hist *h, uint64_t v)
{
	hist_add(h, v, jd_hist_bucket(v));
}

uint64_t jd_hist_percentile(const struct jd_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.5);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (unsigned i = 0; i < JD_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t mid = bucket_low(i) + bucket_width(i) / 2;

			return mid > h->max ? h->max : mid < h->min ? h->min : mid;
		}
	}
	return h->max;
}

/* ---- windows ----------------------------------------------------------------------- */

/* slice_reset: empty a slice for a new epoch, keeping its counters for reuse. */
static void slice_reset(struct jd_whist_slice *s, uint64_t epoch)
{
	s->epoch = epoch;
	s->count = s->sum = s->min = s->max = 0;
	if (s->bucket)
		memset(s->bucket, 0, JD_HIST_BUCKETS * sizeof(*s->bucket));
}

/* slice_count: count v (in bucket b) in s, whose counters exist. */
static inline void slice_count(struct jd_whist_slice *s, uint64_t v, unsigned b)
{
	s->bucket[b]++;
	s->sum += v;
	if (s->count == 0 || v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	s->count++;
}

/* slice_add: count v (in bucket b) in s; returns 0, or -1 when its counters found no
 * memory. */
static int slice_add(struct jd_whist_slice *s, uint64_t v, unsigned b)
{
	if (!s->bucket && !(s->bucket = calloc(JD_HIST_BUCKETS, sizeof(*s->bucket))))
		return -1;
	slice_count(s, v, b);
	return 0;
}

/* coarse_of: the coarse epoch that holds fine epoch e (a minute is six 10 s slices). */
static uint64_t coarse_of(uint64_t e)
{
	return (e - 1) / (JD_WHIST_COARSE_MS / JD_WHIST_FINE_MS) + 1;
}

/* fold: move fine slice s's values into the coarse slice of their minute, as of coarse
 * epoch now_c, and empty s (its counters kept).  Values whose minute lies outside the
 * 5m window are dropped: no read would count them.  s's count is zeroed; its caller then
 * restarts or frees it. */
static void fold(struct jd_whist *w, struct jd_whist_slice *s, uint64_t now_c)
{
	uint64_t ce = coarse_of(s->epoch);
	struct jd_whist_slice *c;

	if (s->count == 0 || s->epoch == 0 || ce + JD_WHIST_COARSE <= now_c)
		goto out;
	c = &w->coarse[ce % JD_WHIST_COARSE];
	if (c->epoch > ce) /* taken by a newer minute: ce is out of the window too */
		goto out;
	if (c->epoch != ce)
		slice_reset(c, ce);
	if (!c->bucket && !(c->bucket = calloc(JD_HIST_BUCKETS, sizeof(*c->bucket)))) {
		w->lost += s->count;
		goto out;
	}
	for (unsigned i = 0; i < JD_HIST_BUCKETS; i++)
		c->bucket[i] += s->bucket[i];
	if (c->count == 0 || s->min < c->min)
		c->min = s->min;
	if (s->max > c->max)
		c->max = s->max;
	c->count += s->count;
	c->sum += s->sum;
out:
	s->count = 0;
}

/* whist_add_slow: whist_add where the slice holds an older epoch or no counters yet. */
static __attribute__((noinline, cold)) void whist_add_slow(struct jd_whist *w,
								  struct jd_whist_slice *s,
								  uint64_t fine, uint64_t v, unsigned b)
{
	if (s->epoch != fine) {
		fold(w, s, coarse_of(fine));
		slice_reset(s, fine);
	}
	if (slice_add(s, v, b) < 0)
		w->lost++;
}

/* whist_add: count v (bucket b) in the fine slice of epoch `fine`, restarted (its old
 * values folded into their minute) if it held an older epoch.  The coarse ring is
 * filled only by folds, once per 10 s slice: a value costs one slice's counting, not
 * two (each latency's coarse counting was ~45 instructions of a job's ~1K in the
 * histograms, callgrind of the 10 us efficiency row).  The common case (this epoch's
 * slice, its counters there) is inline, the rest out of line: as one function, the
 * registers it saved for fold's call were about half of each value's ~57 instructions,
 * six values a job. */
static inline void whist_add(struct jd_whist *w, uint64_t fine, uint64_t v, unsigned b)
{
	struct jd_whist_slice *s = &w->fine[fine % JD_WHIST_FINE];

	if (__builtin_expect(s->epoch != fine || !s->bucket, 0)) {
		whist_add_slow(w, s, fine, v, b);
		return;
	}
	slice_count(s, v, b);
}

void jd_whist_record(struct jd_whist *w, uint64_t now_ms, uint64_t v)
{
	/* Epochs start at 1 so that a zeroed slice (epoch 0) never passes for a live one. */
	whist_add(w, now_ms / JD_WHIST_FINE_MS + 1, v, jd_hist_bucket(v));
}

/* slice_merge: add slice s into the dense histogram out. */
static void slice_merge(const struct jd_whist_slice *s, struct jd_hist *out)
{
	for (unsigned k = 0; k < JD_HIST_BUCKETS; k++)
		out->bucket[k] += s->bucket[k];
	if (out->count == 0 || s->min < out->min)
		out->min = s->min;
	if (s->max > out->max)
		out->max = s->max;
	out->count += s->count;
	out->sum += s->sum;
}

uint64_t jd_whist_read(const struct jd_whist *w, uint64_t now_ms, enum jd_window win,
		       struct jd_hist *out)
{
	const struct jd_whist_slice *ring = win == JD_WINDOW_1M ? w->fine : w->coarse;
	unsigned n = win == JD_WINDOW_1M ? JD_WHIST_FINE : JD_WHIST_COARSE;
	uint64_t len = win == JD_WINDOW_1M ? JD_WHIST_FINE_MS : JD_WHIST_COARSE_MS;
	uint64_t epoch = now_ms / len + 1, covered;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < n; i++) {
		const struct jd_whist_slice *s = &ring[i];

		/* Live: one of the n most recent epochs (a future one cannot exist: the clock
		 * is monotonic). */
		if (s->epoch == 0 || s->epoch > epoch || s->epoch + n <= epoch || s->count == 0)
			continue;
		slice_merge(s, out);
	}
	/* 5m: and the fine slices not yet folded into their minute. */
	for (unsigned i = 0; win == JD_WINDOW_5M && i < JD_WHIST_FINE; i++) {
		const struct jd_whist_slice *s = &w->fine[i];
		uint64_t ce = s->epoch ? coarse_of(s->epoch) : 0;

		if (s->count == 0 || ce == 0 || ce > epoch || ce + n <= epoch)
			continue;
		slice_merge(s, out);
	}
	/* The current slice's elapsed part, and the n - 1 complete slices before it (all of
	 * them, even before the first value: the window is a span of time, not of data). */
	covered = now_ms % len + (uint64_t)(n - 1) * len;
	if (now_ms < covered)
		covered = now_ms;
	return covered ? covered : 1;
}

size_t jd_whist_bytes(const struct jd_whist *w)
{
	size_t n = 0;

	for (unsigned i = 0; i < JD_WHIST_FINE; i++)
		n += w->fine[i].bucket != NULL;
	for (unsigned i = 0; i < JD_WHIST_COARSE; i++)
		n += w->coarse[i].bucket != NULL;
	return n * JD_HIST_BUCKETS * sizeof(uint32_t);
}

/* ring_trim: free the counters of ring[n]'s slices outside the window at epoch; a fine
 * slice's values are first folded into their minute (w, as of coarse epoch now_c) unless
 * all are freed. */
static void ring_trim(struct jd_whist *w, struct jd_whist_slice *ring, unsigned n, uint64_t epoch,
		      uint64_t now_c, bool all)
{
	for (unsigned i = 0; i < n; i++) {
		struct jd_whist_slice *s = &ring[i];

		if (s->bucket && (all || s->epoch + n <= epoch)) {
			if (!all && ring == w->fine)
				fold(w, s, now_c);
			free(s->bucket);
			s->bucket = NULL;
			s->count = 0;
		}
	}
}

void jd_whist_trim(struct jd_whist *w, uint64_t now_ms)
{
	uint64_t now_c = now_ms / JD_WHIST_COARSE_MS + 1;

	ring_trim(w, w->fine, JD_WHIST_FINE, now_ms / JD_WHIST_FINE_MS + 1, now_c, false);
	ring_trim(w, w->coarse, JD_WHIST_COARSE, now_c, now_c, false);
}

void jd_whist_free(struct jd_whist *w)
{
	ring_trim(w, w->fine, JD_WHIST_FINE, 0, 0, true);
	ring_trim(w, w->coarse, JD_WHIST_COARSE, 0, 0, true);
}

/* record_both: v (in bucket b) into a lifetime histogram and its window. */
static inline void record_both(struct jd_hist *h, struct jd_whist *w, uint64_t fine, uint64_t v,
			       unsigned b)
{
	hist_add(h, v, b);
	whist_add(w, fine, v, b);
}

void jd_latency_record_pair(struct jd_latency *a, struct jd_latency *b, uint64_t now_ms, int started,
			    uint64_t queue_wait, uint64_t run, uint64_t end_to_end)
{
	uint64_t fine = now_ms / JD_WHIST_FINE_MS + 1;
	unsigned bq = started ? jd_hist_bucket(queue_wait) : 0, br = started ? jd_hist_bucket(run) : 0;
	unsigned be = jd_hist_bucket(end_to_end);

	for (struct jd_latency *l = a; l; l = l == a ? b : NULL) {
		if (started) {
			record_both(&l->queue_wait, &l->w_queue_wait, fine, queue_wait, bq);
			record_both(&l->run, &l->w_run, fine, run, br);
		}
		record_both(&l->end_to_end, &l->w_end_to_end, fine, end_to_end, be);
	}
}

void jd_latency_record(struct jd_latency *l, uint64_t now_ms, int started, uint64_t queue_wait,
		       uint64_t run, uint64_t end_to_end)
{
	jd_latency_record_pair(l, NULL, now_ms, started, queue_wait, run, end_to_end);
}

void jd_latency_trim(struct jd_latency *l, uint64_t now_ms)
{
	jd_whist_trim(&l->w_queue_wait, now_ms);
	jd_whist_trim(&l->w_run, now_ms);
	jd_whist_trim(&l->w_end_to_end, now_ms);
}

void jd_latency_free(struct jd_latency *l)
{
	jd_whist_free(&l->w_queue_wait);
	jd_whist_free(&l->w_run);
	jd_whist_free(&l->w_end_to_end);
}
