/* daemon/net/prometheus.h: the metrics document in Prometheus's text exposition format.
 *
 * One converter from the metrics document (PROTOCOL.md section 8, with its `histograms`
 * member) to text, used by every place that speaks Prometheus: the `metrics` operation
 * with "format": "prometheus" (what `jsched metrics --prometheus` prints), the HTTP
 * endpoint (`metrics.listen`) and the textfile writer (`metrics.textfile`).  Working from
 * the document rather than from the daemon's structures keeps the two views equal by
 * construction and keeps this file free of the daemon's internals.
 *
 * Names follow Prometheus's rules: a `jschedd_` prefix, base units (seconds, bytes),
 * `_total` on counters only, the client's name a label (escaped).  Latencies are real
 * histograms (`_bucket{le=...}`, `_sum`, `_count`) whose edges are bucket edges of the
 * daemon's log-linear histograms, so every count is exact (the edges are 2^k - 1 ns).
 * Only aggregate figures: never a job's argv, env or output.
 */
#ifndef JD_PROMETHEUS_H
#define JD_PROMETHEUS_H

#include <stddef.h>

#include <jansson.h>

/* jd_prometheus_text: the exposition text of metrics document `doc`, NUL-terminated, in
 * memory the caller frees; *len (if not NULL) its length.  NULL on ENOMEM.  Members the
 * document lacks are left out. */
char *jd_prometheus_text(const json_t *doc, size_t *len);

#endif /* JD_PROMETHEUS_H */
