/* daemon/net/prom_export.h: where the Prometheus text goes besides the `metrics`
 * operation: an HTTP endpoint (`metrics.listen`) and a text file rewritten atomically for
 * node_exporter's textfile collector (`metrics.textfile`).
 *
 * Both take the text from one render function that runs on the loop thread (the thread
 * that owns the figures), so neither needs the daemon's structures.  The endpoint is
 * libmicrohttpd's, in its own thread: a scrape asks the loop for a fresh text through one
 * uv_async and waits for it (at most 5 s), so a scrape sees the figures of the moment it
 * was made, and nothing is rendered while nobody scrapes.  libmicrohttpd rather than a
 * hand-written HTTP reader: request parsing, keep-alive, limits and timeouts are the
 * parts a metrics port must get right against anything that connects, and Debian ships a
 * maintained library for exactly that.
 */
#ifndef JD_PROM_EXPORT_H
#define JD_PROM_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

/* The render function: the text, in memory the callee allocated and the caller frees, and
 * its length; NULL when it cannot.  Called on the loop thread. */
typedef char *(*jd_prom_render_fn)(void *arg, size_t *len);

struct jd_prom_http;

/* jd_prom_http_start: serve GET /metrics on `listen` ("HOST:PORT" with an IPv4 address
 * or a bracketed IPv6 one, e.g. "127.0.0.1:9464", "[::1]:9464"; port 0 picks a free one).
 * Returns 0 and sets *out, or a negative JSCHED_E* with the reason in why[]: a bad
 * address (JSCHED_EINVAL) or one that cannot be bound (JSCHED_EIO).  Loop thread. */
int jd_prom_http_start(uv_loop_t *loop, const char *listen, jd_prom_render_fn render, void *arg,
		       struct jd_prom_http **out, char *why, size_t whylen);

/* jd_prom_http_port: the port it listens on (useful after port 0). */
unsigned jd_prom_http_port(const struct jd_prom_http *h);

/* jd_prom_http_counts: scrapes answered, and those that got no text (render failed or
 * timed out). */
void jd_prom_http_counts(struct jd_prom_http *h, uint64_t *scrapes, uint64_t *failed);

/* jd_prom_http_stop: stop serving and free it (the uv handle is closed; the memory goes
 * in its close callback).  Loop thread. */
void jd_prom_http_stop(struct jd_prom_http *h);

/* jd_prom_textfile_write: render and write the text to `path` atomically (a temp file
 * beside it, then rename), so the collector never reads half a file.  Returns 0 or a
 * negative JSCHED_E* with the reason in why[].  Loop thread (a few hundred kilobytes at
 * most; no fsync: the file is a view, rebuilt every few seconds). */
int jd_prom_textfile_write(const char *path, jd_prom_render_fn render, void *arg, char *why,
			   size_t whylen);

#endif /* JD_PROM_EXPORT_H */
