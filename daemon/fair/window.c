/* daemon/fair/window.c: the sliding window of service, and the unit the figures use.
 *
 * Each client keeps its service (jobs, declared cost and run time, all recorded when a
 * job completes: one touch of the window per job) in JD_FAIR_WINDOW_BUCKETS slices of window_ns / JD_FAIR_WINDOW_BUCKETS
 * each, indexed by clock / slice width; a slice older than the window is reused and
 * cleared.  The window therefore covers between 7/8 and all of window_ns, moves in steps
 * of one slice, and costs a constant amount per client whatever the job rate.  (An exact
 * window would need every dispatch kept until it leaves the window.)  A client counts in
 * the fairness figures if it was backlogged at some time in the window: it has queued
 * jobs now or its queue became empty less than window_ns ago.  Caller holds the lock.
 */
#include "daemon/fair/fair_internal.h"

/* jd_fw_epoch: the slice that time `now` falls in (never 0, which means "unused"). */
uint64_t jd_fw_epoch(const struct jd_fair *f, uint64_t now)
{
	return now / f->slice_ns + 1;
}

/* jd_fw_add: add service to client c's slice `epoch` (from jd_fw_epoch). */
void jd_fw_add(struct jd_fair_client *c, uint64_t epoch, uint64_t jobs, uint64_t cost,
	       uint64_t ns)
{
	struct jd_fair_bucket *b = &c->win[epoch % JD_FAIR_WINDOW_BUCKETS];

	if (b->epoch != epoch) {
		b->epoch = epoch;
		b->jobs = b->cost = b->ns = 0;
	}
	b->jobs += jobs;
	b->cost += cost;
	b->ns += ns;
}

/* jd_fw_metric: the unit JD_FAIR_METRIC_POLICY stands for under the current policy. */
enum jd_fair_metric jd_fw_metric(const struct jd_fair *f, enum jd_fair_metric m)
{
	if (m != JD_FAIR_METRIC_POLICY)
		return m;
	switch (f->policy) {
	case JD_FAIR_POLICY_DRR:
		return JD_FAIR_METRIC_COST;
	case JD_FAIR_POLICY_WRR:
		return JD_FAIR_METRIC_JOBS;
	case JD_FAIR_POLICY_FAIR:
	default:
		return JD_FAIR_METRIC_TIME;
	}
}

/* jd_fw_service: client c's service in the window ending at `now`, in unit m (not
 * JD_FAIR_METRIC_POLICY). */
double jd_fw_service(const struct jd_fair *f, const struct jd_fair_client *c, uint64_t now,
		     enum jd_fair_metric m)
{
	uint64_t epoch = jd_fw_epoch(f, now), sum = 0;

	for (int i = 0; i < JD_FAIR_WINDOW_BUCKETS; i++) {
		const struct jd_fair_bucket *b = &c->win[i];
		if (b->epoch == 0 || b->epoch > epoch || epoch - b->epoch >= JD_FAIR_WINDOW_BUCKETS)
			continue;
		sum += m == JD_FAIR_METRIC_JOBS ? b->jobs : m == JD_FAIR_METRIC_COST ? b->cost : b->ns;
	}
	return (double)sum;
}

/* jd_fw_in_window: whether client c was backlogged at some time in the window. */
bool jd_fw_in_window(const struct jd_fair *f, const struct jd_fair_client *c, uint64_t now)
{
	if (c->queued > 0)
		return true;
	return c->ever_backlogged && now - c->idle_since < f->window_ns;
}
