/* daemon/fair/window.c: the sliding window of service, and the fairness figures.
 *
 * Each client keeps its service (jobs, declared cost and run time, all recorded when a
 * job completes: one touch of the window per job) in JD_FAIR_WINDOW_BUCKETS slices of
 * window_ns / JD_FAIR_WINDOW_BUCKETS each, indexed by clock / slice width; a slice older
 * than the window is reused and cleared.  The window therefore covers between 7/8 and all
 * of window_ns, moves in steps of one slice, and costs a constant amount per client
 * whatever the job rate.  (An exact window would need every dispatch kept.)
 *
 * Fairness is judged slice by slice, among the clients that were backlogged in that
 * slice: Jain's index of service / weight is computed per slice and averaged over the
 * window, weighted by each slice's service; a client's realized share is its service
 * over the total, and its configured share its weight over the total weight, both only
 * in the slices where it was backlogged.  Why per slice: a client alone on the machine
 * for a while (the others idle or not yet connected) gets everything, fairly; one index
 * over the whole window would count that as unfairness once the others arrive (the
 * daemon's end-to-end test saw 0.976 for a perfectly fair run because of its ramp-up).
 *
 * "Backlogged in a slice": its queue was non-empty at some time in the slice.  The
 * record is kept without per-job cost: when a client's queue becomes empty, the slices
 * of the busy spell that just ended are marked (at most all of them, once per spell),
 * and a client backlogged now is busy in every slice since its spell began.  Caller
 * holds the lock for everything here.
 */
#include <string.h>

#include "daemon/fair/fair_internal.h"

#define NB JD_FAIR_WINDOW_BUCKETS

/* jd_fw_epoch: the slice that time `now` falls in (never 0, which means "unused"). */
uint64_t jd_fw_epoch(const struct jd_fair *f, uint64_t now)
{
	return now / f->slice_ns + 1;
}

/* Client c's bucket for slice `epoch`, cleared first if it held an older slice. */
static struct jd_fair_bucket *bucket(struct jd_fair_client *c, uint64_t epoch)
{
	struct jd_fair_bucket *b = &c->win[epoch % NB];

	if (b->epoch != epoch)
		*b = (struct jd_fair_bucket){.epoch = epoch};
	return b;
}

/* jd_fw_add: add service to client c's slice `epoch` (from jd_fw_epoch). */
void jd_fw_add(struct jd_fair_client *c, uint64_t epoch, uint64_t jobs, uint64_t cost,
	       uint64_t ns)
{
	struct jd_fair_bucket *b = bucket(c, epoch);

	b->jobs += jobs;
	b->cost += cost;
	b->ns += ns;
}

/* jd_fw_busy: client c's queue has just become non-empty at time `now`. */
void jd_fw_busy(struct jd_fair_client *c, uint64_t now)
{
	c->busy_since = now;
}

/* jd_fw_idle: client c's queue has just become empty at time `now`: mark the slices of
 * the busy spell that ended (those still in the window). */
void jd_fw_idle(struct jd_fair *f, struct jd_fair_client *c, uint64_t now)
{
	uint64_t last = jd_fw_epoch(f, now), first = jd_fw_epoch(f, c->busy_since);

	if (last >= NB && first < last - (NB - 1))
		first = last - (NB - 1);
	for (uint64_t e = first; e <= last; e++)
		bucket(c, e)->busy = true;
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

/* Whether client c was backlogged in slice e, and its service there (unit m). */
static bool slice_of(const struct jd_fair *f, const struct jd_fair_client *c, uint64_t e,
		     enum jd_fair_metric m, double *service)
{
	const struct jd_fair_bucket *b = &c->win[e % NB];
	bool mine = b->epoch == e;

	*service = !mine ? 0 : (double)(m == JD_FAIR_METRIC_JOBS ? b->jobs :
					m == JD_FAIR_METRIC_COST ? b->cost : b->ns);
	if (mine && b->busy)
		return true;
	return c->queued > 0 && jd_fw_epoch(f, c->busy_since) <= e;
}

/* The window's slices ending with slice `last`, oldest first: first .. last. */
static uint64_t first_slice(uint64_t last)
{
	return last > NB ? last - (NB - 1) : 1;
}

/* jd_fw_figures: the fairness figures of out (unit out->metric) at time `now`. */
void jd_fw_figures(const struct jd_fair *f, uint64_t now, struct jd_fair_stats *out)
{
	uint64_t last = jd_fw_epoch(f, now), first = first_slice(last);
	double sx[NB] = {0}, sxx[NB] = {0}, n[NB] = {0};

	out->slice_last = last;
	for (size_t i = 0; i < f->nclients; i++) {
		const struct jd_fair_client *c = f->clients[i];
		bool in = false;
		for (uint64_t e = first; e <= last; e++) {
			double s;
			if (!slice_of(f, c, e, out->metric, &s))
				continue;
			size_t k = (size_t)(e - first);
			double x = s / (double)c->cfg.weight;
			in = true;
			sx[k] += x;
			sxx[k] += x * x;
			n[k] += 1;
			out->slice_service[k] += s;
			out->slice_weight[k] += c->cfg.weight;
		}
		if (in) {
			out->window_clients++;
			out->window_weight += c->cfg.weight;
		}
	}
	double jsum = 0, wsum = 0;
	for (size_t k = 0; k <= (size_t)(last - first); k++) {
		out->window_service += out->slice_service[k];
		if (out->slice_service[k] <= 0)
			continue;
		double j = n[k] >= 2 ? sx[k] * sx[k] / (n[k] * sxx[k]) : 1;
		jsum += j * out->slice_service[k];
		wsum += out->slice_service[k];
	}
	out->jain = wsum > 0 ? jsum / wsum : 1;
}

/* jd_fw_client_figures: client c's window figures against `totals` (from
 * jd_fw_figures, same window). */
void jd_fw_client_figures(const struct jd_fair *f, const struct jd_fair_client *c,
			  const struct jd_fair_stats *totals, struct jd_fair_client_stats *out)
{
	uint64_t last = totals->slice_last, first = first_slice(last);
	double svc = 0, tot = 0, conf = 0, conf_n = 0, conf_unweighted = 0;

	for (uint64_t e = first; e <= last; e++) {
		double s;
		size_t k = (size_t)(e - first);
		if (!slice_of(f, c, e, totals->metric, &s))
			continue;
		out->in_window = true;
		out->window_service += s;
		svc += s;
		tot += totals->slice_service[k];
		if (totals->slice_weight[k] > 0) {
			double share = (double)c->cfg.weight / totals->slice_weight[k];
			conf += share * totals->slice_service[k];
			conf_unweighted += share;
			conf_n += 1;
		}
	}
	if (tot > 0) {
		out->realized_share = svc / tot;
		out->configured_share = conf / tot;
	} else if (conf_n > 0) {
		out->configured_share = conf_unweighted / conf_n;
	}
}
