/* daemon/net/metrics.h: the metrics document (PROTOCOL.md section 8, every member listed in
 * daemon/README.md, "Metrics").  Built on demand from the counters the parts keep; the
 * daemon keeps no second copy.  Loop thread.
 */
#ifndef JD_METRICS_H
#define JD_METRICS_H

#include <stdint.h>

#include <jansson.h>

struct jd_daemon;

/* jd_metrics: the whole document.  New reference (NULL on ENOMEM). */
json_t *jd_metrics(struct jd_daemon *d);

/* jd_throughput_tick: advance the per-second completion ring to now; call before
 * recording into it and before reading it. */
void jd_throughput_tick(struct jd_daemon *d, uint64_t now_ms);

#endif /* JD_METRICS_H */
