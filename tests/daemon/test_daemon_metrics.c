/* tests/daemon/test_daemon_metrics.c: the metrics over time windows and in Prometheus's
 * format, against a real jschedd: the 1 and 5 minute windows count what just finished
 * (in all and per client), `metrics` with "format": "prometheus" and the HTTP endpoint on
 * loopback serve the same families with the live figures, the endpoint answers 404 and
 * 405 where it should, the text file is rewritten atomically, promtool accepts the text
 * when it is installed, and a bad metrics.listen stops the start with the reason. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;
static char textfile[128];

static int setup(void **state)
{
	char members[512];

	(void)state;
	/* The text file outside the daemon's temp dir, which exists only once it started. */
	snprintf(textfile, sizeof(textfile), "/tmp/jsched-test-metrics-%d.prom", (int)getpid());
	snprintf(members, sizeof(members),
		 "\"workers\": 2, \"metrics\": {\"listen\": \"127.0.0.1:0\", \"textfile\": \"%s\","
		 " \"textfile_interval_ms\": 100}",
		 textfile);
	jdt_start(&t, members);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	unlink(textfile);
	return 0;
}

/* run_jobs: submit n noop jobs as client `name` and wait for each. */
static void run_jobs(struct jsched_conn *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_string_equal(jdt_wait_final(c, jdt_submit_call(c, "noop", "{}"), NULL),
				    "succeeded");
}

static json_int_t count_at(json_t *o, const char *lat)
{
	return json_integer_value(json_object_get(json_object_get(o, lat), "count"));
}

static void test_windows(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "win");
	json_t *doc, *cl, *before;
	json_int_t base1, base5;

	(void)state;
	before = jdt_metrics(c);
	base1 = count_at(json_object_get(before, "latency_us_1m"), "end_to_end");
	base5 = count_at(json_object_get(before, "latency_us_5m"), "end_to_end");
	json_decref(before);
	run_jobs(c, 25);
	doc = jdt_metrics(c);
	/* The daemon's windows count this test's jobs (the test takes far less than the
	 * 50 s the last minute covers at least). */
	assert_int_equal(count_at(json_object_get(doc, "latency_us_1m"), "end_to_end"), base1 + 25);
	assert_int_equal(count_at(json_object_get(doc, "latency_us_5m"), "end_to_end"), base5 + 25);
	assert_true(count_at(json_object_get(doc, "latency_us_1m"), "run") >= 25);
	assert_true(json_real_value(json_object_get(json_object_get(doc, "throughput_windows"),
						    "1m")) > 0);
	cl = jdt_client_metrics(doc, "win");
	assert_non_null(cl);
	assert_int_equal(count_at(json_object_get(cl, "latency_us_1m"), "end_to_end"), 25);
	assert_int_equal(count_at(json_object_get(cl, "latency_us_5m"), "queue_wait"), 25);
	assert_int_equal(count_at(json_object_get(cl, "latency_us"), "end_to_end"), 25);
	json_decref(doc);
	jsched_close(c);
}

/* value_of: the value of the sample line that starts with `series ` in text, or -1. */
static double value_of(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static void check_promtool(const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		printf("promtool is not installed (Debian's prometheus package): not run\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/check.prom", t.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	assert_int_equal(system(cmd), 0);
}

static void test_op_prometheus(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "prom");
	json_t *r;
	const char *text;

	(void)state;
	run_jobs(c, 3);
	r = jdt_ok(c, "{\"op\": \"metrics\", \"id\": 1, \"format\": \"prometheus\"}");
	text = json_string_value(json_object_get(r, "text"));
	assert_non_null(text);
	assert_true(value_of(text, "jschedd_jobs_total{client=\"prom\",state=\"succeeded\"}") == 3);
	assert_true(value_of(text, "jschedd_client_end_to_end_seconds_count{client=\"prom\"}") == 3);
	assert_true(value_of(text, "jschedd_client_end_to_end_seconds_bucket{client=\"prom\","
				   "le=\"+Inf\"}") == 3);
	assert_non_null(strstr(text, "# TYPE jschedd_run_seconds histogram\n"));
	check_promtool(text);
	json_decref(r);
	/* A bad format is refused with the field named. */
	r = jdt_req(c, "{\"op\": \"metrics\", \"id\": 2, \"format\": \"xml\"}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	jsched_close(c);
}

/* http: one request to the endpoint; the whole response into buf. */
static size_t http(unsigned port, const char *request, char *buf, size_t size)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while (got + 1 < size && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return got;
}

static void test_http(void **state)
{
	static char buf[1 << 20];
	struct jsched_conn *c = jdt_connect(&t, "scrape");
	json_t *doc, *prom;
	unsigned port;
	const char *body;

	(void)state;
	run_jobs(c, 4);
	doc = jdt_metrics(c);
	prom = json_object_get(doc, "prometheus");
	port = (unsigned)json_integer_value(json_object_get(prom, "port"));
	assert_true(port > 0);
	json_decref(doc);

	http(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_memory_equal(buf + 8, " 200", 4);
	assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
	body = strstr(buf, "\r\n\r\n");
	assert_non_null(body);
	body += 4;
	/* The live figures: this client's four jobs. */
	assert_true(value_of(body, "jschedd_jobs_total{client=\"scrape\",state=\"succeeded\"}") == 4);
	assert_non_null(strstr(body, "jschedd_build_info{version=\"jschedd "));
	check_promtool(body);

	http(port, "GET /other HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_memory_equal(buf + 8, " 404", 4);
	http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", buf, sizeof(buf));
	assert_memory_equal(buf + 8, " 405", 4);

	/* Scrapes are counted. */
	doc = jdt_metrics(c);
	prom = json_object_get(doc, "prometheus");
	assert_true(json_integer_value(json_object_get(prom, "scrapes")) >= 1);
	assert_int_equal(json_integer_value(json_object_get(prom, "scrapes_failed")), 0);
	json_decref(doc);
	jsched_close(c);
}

static void test_textfile(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "file");
	static char text[1 << 16];
	const char *path = textfile;
	bool seen = false;

	(void)state;
	run_jobs(c, 2);
	/* Rewritten every 100 ms: within a bounded number of rewrites it shows the jobs.
	 * Never a half file: every read parses to the end. */
	for (int i = 0; i < 300 && !seen; i++) {
		FILE *f = fopen(path, "r");
		size_t n;

		if (f) {
			n = fread(text, 1, sizeof(text) - 1, f);
			text[n] = '\0';
			fclose(f);
			assert_true(n > 0);
			assert_non_null(strstr(text, "# TYPE jschedd_build_info gauge"));
			seen = value_of(text, "jschedd_jobs_total{client=\"file\","
					      "state=\"succeeded\"}") == 2;
		}
		if (!seen)
			jdt_sleep_ms(20);
	}
	assert_true(seen);
	jsched_close(c);
}

static void test_bad_listen(void **state)
{
	char cmd[2048], conf[600];
	FILE *f;
	int rc;

	(void)state;
	snprintf(conf, sizeof(conf), "%s/bad.json", t.dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "{\"socket\": \"%s/bad.sock\", \"metrics\": {\"listen\": \"localhost:9464\"}}",
		t.dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/bin/jschedd -c %s 2>%s/bad.log", t.build, conf, t.dir);
	rc = system(cmd);
	assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
	snprintf(cmd, sizeof(cmd), "grep -q 'the host must be an IPv4 address' %s/bad.log", t.dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_op_prometheus),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_textfile),
		cmocka_unit_test(test_bad_listen),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
