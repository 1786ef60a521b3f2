/* dashboard.c: `jsched dashboard`, a live web page of the daemon, served on 127.0.0.1.
 *
 * The dashboard is a client of jschedd like any other: it connects with the user's own
 * identity, so the page shows exactly what that user may see and its buttons can do only
 * what the user may do.  It serves on loopback only, on a free port (or --port), and
 * prints the URL with a random 128-bit token; every request must carry the token (in the
 * query for the page, its script and the event stream; in the X-Jsched-Token header for the
 * API calls, which a cross-site form cannot set) and a Host header naming the loopback
 * address, which defeats DNS rebinding.
 *
 * What it serves:
 *   GET  /                   the page (dashboard.html, built in), with the token filled in
 *   GET  /chart.js           Debian's Chart.js (libjs-chart.js), from where it is installed
 *   GET  /api/events         server-sent events: `metrics` (the document) every second and
 *                            `job` (the record) whenever one of the user's jobs changes
 *   GET  /api/jobs           one page of `list` (after_job, limit <= 500, states): the daemon
 *                            pages, so 100,000 retained jobs cost one page per request
 *   GET  /api/output         `output` of one job
 *   POST /api/job            cancel, hold, release or retry one job
 * Each request runs in its own thread (libmicrohttpd's thread per connection, at most 32)
 * with its own connection to the daemon, since a libjsched connection belongs to one
 * thread; an event stream keeps its connection for its life and blocks at most a second
 * between writes, so a closed browser tab is noticed within a second.
 */
#include "libclient/tool/tool.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>

extern const char jsched_dashboard_html[];

#ifndef JSCHED_CHARTJS
#define JSCHED_CHARTJS "/usr/share/javascript/chart.js/chart.min.js"
#endif

/* The libmicrohttpd functions the dashboard calls, loaded when `jsched dashboard` starts
 * rather than linked (lazy.h): the library and what it pulls in (GnuTLS and its nine
 * libraries, whose constructors run at load) cost every run of jsched 1.6 ms of CPU and 170
 * page faults at start, of about 2.5 ms and 265 for the whole tool, and only this
 * subcommand uses them. */
#define MHD_FUNCS(X) X(MHD_add_response_header) X(MHD_create_response_from_buffer) \
	X(MHD_create_response_from_callback) X(MHD_create_response_from_fd) X(MHD_destroy_response) \
	X(MHD_get_daemon_info) X(MHD_lookup_connection_value) X(MHD_queue_response) X(MHD_start_daemon) \
	X(MHD_stop_daemon)
static struct {
	MHD_FUNCS(TOOL_LAZY_SLOT)
} lib;

/* load_mhd: fill lib from libmicrohttpd (the soname of the header's ABI, 12 since 0.9.x).
 * Returns 0, or -1 after saying why on stderr. */
static int load_mhd(void)
{
#define TOOL_LAZY_LIB lib
	static const char *const sonames[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", NULL};
	static const char *const syms[] = {MHD_FUNCS(TOOL_LAZY_NAME)};
	void **const addrs[] = {MHD_FUNCS(TOOL_LAZY_ADDR)};

	return tool_lazy_load("jsched dashboard", sonames, syms, addrs, sizeof(syms) / sizeof(syms[0]));
#undef TOOL_LAZY_LIB
}

#define MAX_CONNECTIONS 32u
#define PAGE_LIMIT_MAX 500
#define METRICS_EVERY_MS 1000

struct dash {
	const struct cli_cmd *cmd;
	char token[33];
	unsigned port;
	char host_ip[32], host_name[32]; /* the Host headers accepted */
	char *page;
	size_t page_len;
	atomic_bool stopping;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* same: constant-time comparison of a presented token with ours. */
static bool same(const char *given, const char *ours)
{
	size_t n = strlen(ours);
	unsigned char diff = 0;

	if (given == NULL || strlen(given) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(given[i] ^ ours[i]);
	return diff == 0;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
			       const char *body, size_t len)
{
	struct MHD_Response *r = lib.MHD_create_response_from_buffer_p(len, (void *)(uintptr_t)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (r == NULL)
		return MHD_NO;
	lib.MHD_add_response_header_p(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	lib.MHD_add_response_header_p(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	lib.MHD_add_response_header_p(r, "Referrer-Policy", "no-referrer");
	lib.MHD_add_response_header_p(r, "X-Frame-Options", "DENY");
	lib.MHD_add_response_header_p(r, "X-Content-Type-Options", "nosniff");
	ret = lib.MHD_queue_response_p(c, status, r);
	lib.MHD_destroy_response_p(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return respond(c, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* respond_error_json: an API error in the daemon's reply shape. */
static enum MHD_Result respond_error_json(struct MHD_Connection *c, const char *code,
					  const char *message)
{
	json_t *o = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code, "message",
			      message);
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	enum MHD_Result ret;

	json_decref(o);
	if (s == NULL)
		return MHD_NO;
	ret = respond(c, MHD_HTTP_OK, "application/json", s, strlen(s));
	free(s);
	return ret;
}

/* daemon_call: one request to the daemon on a connection of its own; the reply's JSON as
 * the HTTP answer (the daemon's errors included: the page shows their messages). */
static enum MHD_Result daemon_call(struct dash *d, struct MHD_Connection *c, json_t *req)
{
	struct jsched_conn *conn = NULL;
	char why[256], *text = NULL, *reply = NULL;
	enum MHD_Result ret;
	int r;

	text = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (text == NULL)
		return respond_error_json(c, "no_memory", "out of memory");
	r = jsched_connect_error(d->cmd->socket, d->cmd->client_name, &conn, why, sizeof(why));
	if (r < 0) {
		free(text);
		return respond_error_json(c, jsched_err_name(r), why[0] ? why : jsched_strerror(r));
	}
	jsched_set_timeout(conn, 10000);
	r = jsched_request(conn, text, &reply);
	free(text);
	if (reply != NULL)
		ret = respond(c, MHD_HTTP_OK, "application/json", reply, strlen(reply));
	else
		ret = respond_error_json(c, jsched_err_name(r), jsched_strerror(r));
	jsched_free(reply);
	jsched_close(conn);
	return ret;
}

/* arg_id: a positive integer query argument, or 0. */
static uint64_t arg_id(struct MHD_Connection *c, const char *key)
{
	const char *v = lib.MHD_lookup_connection_value_p(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;
	unsigned long long n;

	if (v == NULL || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0' && n < (1ull << 53) ? n : 0;
}

static enum MHD_Result api_jobs(struct dash *d, struct MHD_Connection *c)
{
	const char *states = lib.MHD_lookup_connection_value_p(c, MHD_GET_ARGUMENT_KIND, "states");
	uint64_t limit = arg_id(c, "limit");
	json_t *req = json_pack("{s:s, s:I, s:I}", "op", "list", "after_job",
				(json_int_t)arg_id(c, "after_job"), "limit",
				(json_int_t)(limit == 0 || limit > PAGE_LIMIT_MAX ? PAGE_LIMIT_MAX : limit));

	if (req != NULL && states != NULL && states[0] != '\0') {
		json_t *arr = json_array();
		char buf[256];

		snprintf(buf, sizeof(buf), "%s", states);
		for (char *save = NULL, *s = strtok_r(buf, ",", &save); s != NULL;
		     s = strtok_r(NULL, ",", &save))
			json_array_append_new(arr, json_string(s));
		json_object_set_new(req, "states", arr);
	}
	return daemon_call(d, c, req);
}

static enum MHD_Result api_job(struct dash *d, struct MHD_Connection *c)
{
	static const char *const ops[] = {"cancel", "hold", "release", "retry", NULL};
	const char *op = lib.MHD_lookup_connection_value_p(c, MHD_GET_ARGUMENT_KIND, "op");
	uint64_t id = arg_id(c, "job");

	for (const char *const *o = ops; *o != NULL; o++)
		if (op != NULL && strcmp(op, *o) == 0) {
			if (id == 0)
				return respond_error_json(c, "bad_request", "job: a job id");
			return daemon_call(d, c, json_pack("{s:s, s:I}", "op", op, "job", (json_int_t)id));
		}
	return respond_error_json(c, "bad_request", "op: one of cancel, hold, release, retry");
}

/* ---- the event stream ------------------------------------------------------------------ */

struct stream {
	struct dash *d;
	struct jsched_conn *conn;
	char *buf;		/* what is ready to send: buf[off..len) */
	size_t off, len;
	uint64_t next_metrics;
	bool ended;
};

/* stream_put: an SSE message (event type, one line of data) to send. */
static void stream_put(struct stream *s, const char *type, const char *data)
{
	/* "event: " TYPE "\ndata: " DATA "\n\n" and the NUL snprintf writes. */
	size_t need = 7 + strlen(type) + 7 + strlen(data) + 2 + 1;
	char *b = malloc(need);

	if (b == NULL)
		return;
	free(s->buf);
	s->buf = b;
	s->off = 0;
	s->len = (size_t)snprintf(b, need, "event: %s\ndata: %s\n\n", type, data);
	if (s->len >= need) /* cannot happen with the sum above; never send the NUL */
		s->len = need - 1;
}

/* stream_refill: block (at most until the next metrics tick, never over a second) for the
 * next thing to send. */
static void stream_refill(struct stream *s)
{
	uint64_t now = now_ms();
	struct jsched_event *ev = NULL;
	char *text = NULL;
	int r;

	if (now >= s->next_metrics) {
		s->next_metrics = now + METRICS_EVERY_MS;
		r = jsched_metrics(s->conn, &text);
		if (r == 0)
			stream_put(s, "metrics", text);
		jsched_free(text);
		if (r == JSCHED_EDISCONNECTED || r == JSCHED_ECONNECT) {
			stream_put(s, "gone", "{\"message\": \"jschedd hung up\"}");
			s->ended = true;
		}
		return;
	}
	r = jsched_next_event(s->conn, (int64_t)(s->next_metrics - now), &ev);
	if (r == 0 && ev != NULL && strcmp(ev->type, "job") == 0)
		stream_put(s, "job", ev->json);
	else if (r == 0 && ev != NULL && strcmp(ev->type, "shutdown") == 0)
		stream_put(s, "shutdown", ev->json);
	else if (r == JSCHED_EDISCONNECTED) {
		stream_put(s, "gone", "{\"message\": \"jschedd hung up\"}");
		s->ended = true;
	}
	jsched_event_free(ev);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	size_t n;

	(void)pos;
	if (atomic_load(&s->d->stopping))
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (s->off == s->len) {
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		stream_refill(s);
	}
	if (s->off == s->len) {
		/* Nothing within the second: a comment line keeps the browser's idle timer
		 * content and makes a closed tab show up as a failed write. */
		static const char keepalive[] = ":\n\n";

		n = sizeof(keepalive) - 1 < max ? sizeof(keepalive) - 1 : max;
		memcpy(buf, keepalive, n);
		return (ssize_t)n;
	}
	n = s->len - s->off < max ? s->len - s->off : max;
	memcpy(buf, s->buf + s->off, n);
	s->off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;

	jsched_close(s->conn);
	free(s->buf);
	free(s);
}

static enum MHD_Result api_events(struct dash *d, struct MHD_Connection *c)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct MHD_Response *r;
	char why[256];
	enum MHD_Result ret;

	if (s == NULL)
		return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	s->d = d;
	if (jsched_connect_error(d->cmd->socket, d->cmd->client_name, &s->conn, why, sizeof(why)) < 0 ||
	    jsched_watch(s->conn, -1, NULL, NULL) < 0) {
		if (s->conn != NULL)
			jsched_close(s->conn);
		free(s);
		return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "cannot reach jschedd\n");
	}
	jsched_set_timeout(s->conn, 10000);
	r = lib.MHD_create_response_from_callback_p(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, s, stream_free);
	if (r == NULL) {
		stream_free(s);
		return MHD_NO;
	}
	lib.MHD_add_response_header_p(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	lib.MHD_add_response_header_p(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = lib.MHD_queue_response_p(c, MHD_HTTP_OK, r);
	lib.MHD_destroy_response_p(r);
	return ret;
}

/* ---- the server ------------------------------------------------------------------------ */

static enum MHD_Result serve_chartjs(struct MHD_Connection *c)
{
	int fd = open(JSCHED_CHARTJS, O_RDONLY | O_CLOEXEC);
	struct stat st;
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return respond_text(c, MHD_HTTP_NOT_FOUND,
				    "Chart.js is not installed (Debian's libjs-chart.js: "
				    JSCHED_CHARTJS ")\n");
	}
	r = lib.MHD_create_response_from_fd_p((uint64_t)st.st_size, fd);
	if (r == NULL) {
		close(fd);
		return MHD_NO;
	}
	lib.MHD_add_response_header_p(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/javascript");
	ret = lib.MHD_queue_response_p(c, MHD_HTTP_OK, r);
	lib.MHD_destroy_response_p(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **req_cls)
{
	struct dash *d = cls;
	const char *host = lib.MHD_lookup_connection_value_p(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *token = lib.MHD_lookup_connection_value_p(c, MHD_HEADER_KIND, "X-Jsched-Token");
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;

	(void)version;
	(void)upload;
	if (*req_cls == NULL) {
		*req_cls = d;
		return MHD_YES;
	}
	if (*upload_size != 0) { /* no request has a body: read and drop it */
		*upload_size = 0;
		return MHD_YES;
	}
	if (host == NULL || (strcmp(host, d->host_ip) != 0 && strcmp(host, d->host_name) != 0))
		return respond_text(c, MHD_HTTP_FORBIDDEN, "wrong Host header\n");
	if (token == NULL)
		token = lib.MHD_lookup_connection_value_p(c, MHD_GET_ARGUMENT_KIND, "token");
	if (!same(token, d->token))
		return respond_text(c, MHD_HTTP_FORBIDDEN,
				    "missing or wrong token: use the URL jsched dashboard printed\n");
	if (strncmp(url, "/api/", 5) == 0 && strcmp(url, "/api/events") != 0 &&
	    lib.MHD_lookup_connection_value_p(c, MHD_HEADER_KIND, "X-Jsched-Token") == NULL)
		return respond_text(c, MHD_HTTP_FORBIDDEN, "the API wants the X-Jsched-Token header\n");
	if (strcmp(url, "/api/job") == 0)
		return post ? api_job(d, c) : respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "POST\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET\n");
	if (strcmp(url, "/") == 0)
		return respond(c, MHD_HTTP_OK, "text/html; charset=utf-8", d->page, d->page_len);
	if (strcmp(url, "/chart.js") == 0)
		return serve_chartjs(c);
	if (strcmp(url, "/api/events") == 0)
		return api_events(d, c);
	if (strcmp(url, "/api/jobs") == 0)
		return api_jobs(d, c);
	if (strcmp(url, "/api/output") == 0) {
		uint64_t id = arg_id(c, "job");

		if (id == 0)
			return respond_error_json(c, "bad_request", "job: a job id");
		return daemon_call(d, c, json_pack("{s:s, s:I}", "op", "output", "job", (json_int_t)id));
	}
	return respond_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* make_page: the page with our token in place of every __TOKEN__. */
static int make_page(struct dash *d)
{
	const char *src = jsched_dashboard_html, *p;
	size_t n = 0, cap = strlen(src) + 4 * 64 + 1;
	char *out = malloc(cap);

	if (out == NULL)
		return -1;
	while ((p = strstr(src, "__TOKEN__")) != NULL) {
		size_t pre = (size_t)(p - src);

		if (n + pre + 32 + strlen(p) + 1 > cap) {
			char *bigger = realloc(out, cap *= 2);

			if (bigger == NULL) {
				free(out);
				return -1;
			}
			out = bigger;
		}
		memcpy(out + n, src, pre);
		memcpy(out + n + pre, d->token, 32);
		n += pre + 32;
		src = p + 9;
	}
	if (n + strlen(src) + 1 > cap) {
		char *bigger = realloc(out, n + strlen(src) + 1);

		if (bigger == NULL) {
			free(out);
			return -1;
		}
		out = bigger;
	}
	memcpy(out + n, src, strlen(src) + 1);
	d->page = out;
	d->page_len = n + strlen(src);
	return 0;
}

static void open_browser(const char *url)
{
	char *argv[] = {(char *)"xdg-open", (char *)(uintptr_t)url, NULL};
	extern char **environ;
	pid_t pid;

	if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
		fprintf(stderr, "jsched dashboard: cannot run xdg-open; open the URL yourself\n");
}

/* cmd_dashboard: see tool.h. */
int cmd_dashboard(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	static struct dash d;
	struct sockaddr_in addr = {.sin_family = AF_INET};
	unsigned char raw[16];
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *mhd;
	sigset_t stop_signals;
	char url[128];
	int sig = 0;

	(void)conn; /* reached already: the daemon answers; each request gets its own */
	if (load_mhd() < 0)
		return CLI_EXIT_FAILED;
	d.cmd = cmd;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		fprintf(stderr, "jsched dashboard: no random bytes for the token: %s\n", strerror(errno));
		return CLI_EXIT_FAILED;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(d.token + 2 * i, 3, "%02x", raw[i]);
	if (make_page(&d) < 0) {
		fprintf(stderr, "jsched dashboard: out of memory\n");
		return CLI_EXIT_FAILED;
	}
	/* SIGINT and SIGTERM stop the dashboard: blocked here (and so in every thread the
	 * server starts), taken by sigwait below. */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)cmd->port);
	mhd = lib.MHD_start_daemon_p(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				       MHD_USE_ERROR_LOG,
			       0, NULL, NULL, handler, &d, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
			       MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
			       MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
	if (mhd == NULL) {
		fprintf(stderr, "jsched dashboard: cannot listen on 127.0.0.1:%u: %s\n", cmd->port,
			errno ? strerror(errno) : "in use");
		free(d.page);
		return CLI_EXIT_UNAVAILABLE;
	}
	info = lib.MHD_get_daemon_info_p(mhd, MHD_DAEMON_INFO_BIND_PORT);
	d.port = info != NULL ? info->port : cmd->port;
	snprintf(d.host_ip, sizeof(d.host_ip), "127.0.0.1:%u", d.port);
	snprintf(d.host_name, sizeof(d.host_name), "localhost:%u", d.port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/?token=%s", d.port, d.token);
	printf("jsched dashboard: %s\n", url);
	fflush(stdout);
	if (cmd->open)
		open_browser(url);
	sigwait(&stop_signals, &sig);
	atomic_store(&d.stopping, true);
	lib.MHD_stop_daemon_p(mhd); /* streams notice within a second; then every thread is joined */
	free(d.page);
	return CLI_EXIT_OK;
}
