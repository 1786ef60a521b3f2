/* daemon/net/prom_export.c: the Prometheus HTTP endpoint and text file (see prom_export.h).
 *
 * The hand-off between libmicrohttpd's thread and the loop: a scrape takes a ticket
 * (asked++), wakes the loop with uv_async_send and waits on a condition variable until
 * the loop has answered that ticket (answered >= ticket) or 5 s have passed.  The loop's
 * async callback renders once for every ticket taken before it ran (uv_async_send
 * coalesces), stores the text, and wakes the waiters, which copy it.  libmicrohttpd runs
 * one internal polling thread, so scrapes are answered one at a time; a scrape of a
 * daemon with a thousand clients renders in well under a millisecond.
 */
#include "daemon/net/prom_export.h"
#include "daemon/core/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "jsched/error.h"

#define SCRAPE_WAIT_MS 5000

struct jd_prom_http {
	uv_async_t async;	/* first: the close callback gets back to the struct */
	struct MHD_Daemon *mhd;
	jd_prom_render_fn render;
	void *arg;
	unsigned port;

	pthread_mutex_t mu;	/* guards everything below */
	pthread_cond_t cv;
	uint64_t asked, answered;
	char *text;		/* the last render, or NULL if it failed */
	size_t len;
	int closing;
	uint64_t scrapes, failed;
};

/* async_cb: the loop's half of a scrape: render for every ticket taken so far. */
static void async_cb(uv_async_t *a)
{
	struct jd_prom_http *h = (struct jd_prom_http *)a;
	uint64_t upto;
	size_t len = 0;
	char *text;

	jd_loop_woke();

	pthread_mutex_lock(&h->mu);
	upto = h->asked;
	pthread_mutex_unlock(&h->mu);
	text = h->render(h->arg, &len);
	pthread_mutex_lock(&h->mu);
	free(h->text);
	h->text = text;
	h->len = text ? len : 0;
	h->answered = upto;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* fetch: the scrape's half: a fresh text copied into memory the response frees, or NULL. */
static char *fetch(struct jd_prom_http *h, size_t *len)
{
	struct timespec until;
	uint64_t ticket;
	char *copy = NULL;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += SCRAPE_WAIT_MS / 1000;
	pthread_mutex_lock(&h->mu);
	ticket = ++h->asked;
	pthread_mutex_unlock(&h->mu);
	uv_async_send(&h->async);
	pthread_mutex_lock(&h->mu);
	while (h->answered < ticket && !h->closing)
		if (pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT)
			break;
	if (h->answered >= ticket && h->text) {
		copy = malloc(h->len ? h->len : 1);
		if (copy) {
			memcpy(copy, h->text, h->len);
			*len = h->len;
		}
	}
	h->scrapes++;
	if (!copy)
		h->failed++;
	pthread_mutex_unlock(&h->mu);
	return copy;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
			      void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* handler: GET /metrics (HEAD too, which libmicrohttpd answers without the body); every
 * other path 404, every other method 405.  A request body is read and discarded. */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **req_cls)
{
	/* Not const: the library takes a void *, and PERSISTENT memory is never written. */
	static char not_found[] = "not found: the metrics are at /metrics\n";
	static char bad_method[] = "method not allowed\n";
	static char unavailable[] = "the metrics could not be rendered\n";
	struct jd_prom_http *h = cls;
	size_t len = 0;
	char *text;

	(void)version;
	(void)upload;
	if (*req_cls == NULL) { /* first call for this request: headers only */
		*req_cls = h;
		return MHD_YES;
	}
	if (*upload_size != 0) { /* a body: discarded; the answer comes after it */
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", bad_method,
			      sizeof(bad_method) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return answer(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
			      sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
	text = fetch(h, &len);
	if (!text)
		return answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
			      unavailable, sizeof(unavailable) - 1,
			      MHD_RESPMEM_PERSISTENT);
	return answer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len,
		      MHD_RESPMEM_MUST_FREE);
}

/* parse_listen: "HOST:PORT" into *ss; 0 or -1 with why[]. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, char *why, size_t whylen)
{
	char host[64];
	const char *colon = strrchr(listen, ':');
	char *end;
	unsigned long port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!colon || colon == listen) {
		snprintf(why, whylen, "metrics.listen \"%.64s\": expected HOST:PORT", listen);
		return -1;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno || port > 65535) {
		snprintf(why, whylen, "metrics.listen \"%.64s\": the port must be 0 to 65535", listen);
		return -1;
	}
	hl = (size_t)(colon - listen);
	if (listen[0] == '[' && hl >= 2 && listen[hl - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (hl - 2 >= sizeof(host))
			goto bad_host;
		memcpy(host, listen + 1, hl - 2);
		host[hl - 2] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad_host;
		return 0;
	}
	if (hl >= sizeof(host))
		goto bad_host;
	memcpy(host, listen, hl);
	host[hl] = '\0';
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) == 1)
			return 0;
	}
bad_host:
	snprintf(why, whylen,
		 "metrics.listen \"%.64s\": the host must be an IPv4 address or a bracketed IPv6"
		 " one (e.g. 127.0.0.1:9464, [::1]:9464)",
		 listen);
	return -1;
}

int jd_prom_http_start(uv_loop_t *loop, const char *listen, jd_prom_render_fn render, void *arg,
		       struct jd_prom_http **out, char *why, size_t whylen)
{
	struct sockaddr_storage ss;
	struct jd_prom_http *h;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

	if (parse_listen(listen, &ss, why, whylen) < 0)
		return JSCHED_EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return JSCHED_ENOMEM;
	h->render = render;
	h->arg = arg;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (uv_async_init(loop, &h->async, async_cb) < 0) {
		snprintf(why, whylen, "metrics.listen: cannot create the loop's wake-up");
		free(h);
		return JSCHED_EIO;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 64u,
				  MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(why, whylen, "metrics.listen \"%.64s\": cannot listen there (in use, or"
				      " not an address of this machine)", listen);
		jd_prom_http_stop(h);
		return JSCHED_EIO;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	*out = h;
	return 0;
}

unsigned jd_prom_http_port(const struct jd_prom_http *h)
{
	return h->port;
}

void jd_prom_http_counts(struct jd_prom_http *h, uint64_t *scrapes, uint64_t *failed)
{
	pthread_mutex_lock(&h->mu);
	*scrapes = h->scrapes;
	*failed = h->failed;
	pthread_mutex_unlock(&h->mu);
}

static void close_cb(uv_handle_t *handle)
{
	struct jd_prom_http *h = (struct jd_prom_http *)handle;

	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h->text);
	free(h);
}

void jd_prom_http_stop(struct jd_prom_http *h)
{
	pthread_mutex_lock(&h->mu);
	h->closing = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (h->mhd)
		MHD_stop_daemon(h->mhd); /* joins its thread: no scrape is left waiting */
	h->mhd = NULL;
	uv_close((uv_handle_t *)&h->async, close_cb);
}

int jd_prom_textfile_write(const char *path, jd_prom_render_fn render, void *arg, char *why,
			   size_t whylen)
{
	char tmp[4096];
	size_t len = 0, off = 0;
	char *text = render(arg, &len);
	int fd, r = 0;

	if (!text) {
		snprintf(why, whylen, "metrics.textfile: the metrics could not be rendered");
		return JSCHED_ENOMEM;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		free(text);
		snprintf(why, whylen, "metrics.textfile: the path is too long");
		return JSCHED_EINVAL;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, whylen, "metrics.textfile %.200s: %s", tmp, strerror(errno));
		free(text);
		return JSCHED_EIO;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "metrics.textfile %.200s: %s", tmp,
				 n < 0 ? strerror(errno) : "short write");
			r = JSCHED_EIO;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0 && r == 0) {
		snprintf(why, whylen, "metrics.textfile %.200s: %s", tmp, strerror(errno));
		r = JSCHED_EIO;
	}
	if (r == 0 && rename(tmp, path) < 0) {
		snprintf(why, whylen, "metrics.textfile %.200s: %s", path, strerror(errno));
		r = JSCHED_EIO;
	}
	if (r < 0)
		unlink(tmp);
	free(text);
	return r;
}
