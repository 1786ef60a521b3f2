/* daemon/core/hist.c: the log-linear latency histogram (see hist.h). */
#include "daemon/core/hist.h"

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

void jd_hist_record(struct jd_hist *h, uint64_t v)
{
	h->bucket[jd_hist_bucket(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (h->count == 1 || v < h->min)
		h->min = v;
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
