/* daemon/net/metrics.h: the metrics document (PROTOCOL.md section 8, every member listed in
 * daemon/README.md, "Metrics").  Built on demand from the counters the parts keep; the
 * daemon keeps no second copy.  Loop thread.
 */
#ifndef JD_METRICS_H
#define JD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct jd_net;

/* What jd_metrics adds on request: the lifetime histograms' bucket counts (`histograms`,
 * what the Prometheus text is made from). */
#define JD_METRICS_HISTOGRAMS 1u

/* jd_metrics: the whole document.  New reference (NULL on ENOMEM). */
json_t *jd_metrics(struct jd_net *d, unsigned flags);

/* jd_metrics_prometheus: the document as Prometheus text (malloc()ed, *len its length),
 * NULL on ENOMEM; `net` is the struct jd_net (a jd_prom_render_fn). */
char *jd_metrics_prometheus(void *net, size_t *len);

struct jd_job;

/* jd_metrics_job_ended: count a job that has settled: its latencies (in all and for its
 * client) and the throughput ring. */
void jd_metrics_job_ended(struct jd_net *d, const struct jd_job *j);

/* jd_throughput_tick: advance the per-second completion ring to now; call before
 * recording into it and before reading it. */
void jd_throughput_tick(struct jd_net *d, uint64_t now_ms);

/* jd_metrics_exports_start: start what the config asks for: GET /metrics on
 * metrics.listen, the text file metrics.textfile rewritten every textfile_interval_ms.
 * Returns 0, or a negative code with the reason in err (jschedd does not start).  Loop
 * thread. */
int jd_metrics_exports_start(struct jd_net *d, char *err, size_t errlen);

/* jd_metrics_tick: once a second: release the latency windows' slices that no window
 * covers any more (in all and per client), so idle clients hold no window memory. */
void jd_metrics_tick(struct jd_net *d);

/* jd_metrics_exports_stop: stop them (closing their handles).  Loop thread. */
void jd_metrics_exports_stop(struct jd_net *d);

#endif /* JD_METRICS_H */
