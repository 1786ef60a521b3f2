/* tests/daemon/unit_prometheus.c: the Prometheus text of a metrics document: the figures
 * land under their names with their labels, histograms are cumulative and end in +Inf =
 * count, every family is declared once before its samples, label values are escaped, and
 * (when promtool is installed) `promtool check metrics` accepts the text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/net/prometheus.h"

static const char doc_text[] =
	"{\"version\": \"jschedd 0.1.0 (git abc, release)\", \"uptime_ms\": 12500,"
	" \"jobs\": {\"submitted\": 10, \"rejected\": 1, \"waiting\": 0, \"queued\": 2,"
	"  \"running\": 1, \"succeeded\": 5, \"failed\": 1, \"cancelled\": 1, \"expired\": 0,"
	"  \"dropped\": 0, \"retained\": 7, \"forgotten\": 0},"
	" \"clients\": [{\"name\": \"alice\", \"weight\": 3, \"share\": 0.75, \"target_share\": 0.75,"
	"   \"running\": 1, \"submitted\": 6, \"succeeded\": 4, \"failed\": 1, \"cancelled\": 0,"
	"   \"expired\": 0, \"dropped\": 0, \"service_us\": 1500000,"
	"   \"queued\": {\"critical\": 0, \"high\": 1, \"normal\": 1, \"low\": 0}},"
	"  {\"name\": \"b\\\"ob\", \"weight\": 1, \"share\": 0.25, \"target_share\": 0.25,"
	"   \"running\": 0, \"submitted\": 4, \"succeeded\": 1, \"failed\": 0, \"cancelled\": 1,"
	"   \"expired\": 0, \"dropped\": 0, \"service_us\": 500000,"
	"   \"queued\": {\"critical\": 0, \"high\": 0, \"normal\": 0, \"low\": 0}}],"
	" \"fairness\": {\"jain_index\": 0.99, \"backlogged\": 1, \"reservations\": 3},"
	" \"resources\": {\"gpu\": {\"count\": 2, \"used\": 1}, \"licence_x\": {\"count\": 5, \"used\": 0}},"
	" \"workers\": [{\"tasks\": 7, \"steals\": 1, \"parks\": 2, \"feeds\": 7, \"busy_ms\": 30},"
	"  {\"tasks\": 3, \"steals\": 0, \"parks\": 5, \"feeds\": 3, \"busy_ms\": 10}],"
	" \"fibers\": {\"total\": 64, \"in_use\": 1, \"suspended\": 1, \"exhausted\": 0},"
	" \"connections\": {\"open\": 2, \"watching\": 0, \"total_accepted\": 9,"
	"  \"closed_over_limit\": 0, \"refused\": 0},"
	" \"histograms\": {\"edges_ns\": [1023, 2047, 4095],"
	"  \"all\": {\"queue_wait\": {\"counts\": [1, 4, 6], \"count\": 7, \"sum_ns\": 20000},"
	"   \"run\": {\"counts\": [0, 0, 7], \"count\": 7, \"sum_ns\": 28000},"
	"   \"end_to_end\": {\"counts\": [0, 2, 6], \"count\": 7, \"sum_ns\": 29000}},"
	"  \"clients\": {\"alice\": {\"queue_wait\": {\"counts\": [1, 3, 5], \"count\": 5,"
	"   \"sum_ns\": 9000}}}}}";

static char *render(void)
{
	json_error_t err;
	json_t *doc = json_loads(doc_text, 0, &err);
	char *text;
	size_t len = 0;

	if (!doc)
		fail_msg("test document: %s", err.text);
	text = jd_prometheus_text(doc, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	json_decref(doc);
	return text;
}

static void has(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	for (; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	fail_msg("missing line: %s", line);
}

static void test_figures(void **state)
{
	char *t = render();

	(void)state;
	has(t, "jschedd_build_info{version=\"jschedd 0.1.0 (git abc, release)\"} 1");
	has(t, "jschedd_uptime_seconds 12.5");
	has(t, "jschedd_jobs{state=\"queued\"} 2");
	has(t, "jschedd_jobs_total{client=\"alice\",state=\"succeeded\"} 4");
	has(t, "jschedd_jobs_total{client=\"b\\\"ob\",state=\"cancelled\"} 1");
	has(t, "jschedd_queue_depth{client=\"alice\",priority=\"high\"} 1");
	has(t, "jschedd_fair_share{client=\"alice\"} 0.75");
	has(t, "jschedd_fair_jain_index 0.98999999999999999");
	has(t, "jschedd_client_service_seconds_total{client=\"alice\"} 1.5");
	has(t, "jschedd_worker_busy_seconds_total{worker=\"1\"} 0.01");
	has(t, "jschedd_fibers 64");
	has(t, "jschedd_fair_reservations_total 3");
	has(t, "jschedd_resource_units{resource=\"gpu\"} 2");
	has(t, "jschedd_resource_used{resource=\"gpu\"} 1");
	has(t, "jschedd_resource_units{resource=\"licence_x\"} 5");
	has(t, "# TYPE jschedd_queue_wait_seconds histogram");
	has(t, "jschedd_queue_wait_seconds_bucket{le=\"1.023e-06\"} 1");
	has(t, "jschedd_queue_wait_seconds_bucket{le=\"4.095e-06\"} 6");
	has(t, "jschedd_queue_wait_seconds_bucket{le=\"+Inf\"} 7");
	has(t, "jschedd_queue_wait_seconds_sum 0.000020000");
	has(t, "jschedd_queue_wait_seconds_count 7");
	has(t, "jschedd_client_queue_wait_seconds_bucket{client=\"alice\",le=\"2.047e-06\"} 3");
	free(t);
}

/* Every sample's family was declared by the last TYPE line (families are contiguous),
 * and no family is declared twice. */
static void test_families(void **state)
{
	char *t = render(), *save = NULL, declared[256][96];
	char current[96] = "";
	unsigned n = 0;

	(void)state;
	for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96];

		if (strncmp(line, "# TYPE ", 7) == 0) {
			sscanf(line + 7, "%95s", current);
			for (unsigned i = 0; i < n; i++)
				if (strcmp(declared[i], current) == 0)
					fail_msg("family declared twice: %s", current);
			assert_true(n < 256);
			strcpy(declared[n++], current);
			continue;
		}
		if (line[0] == '#')
			continue;
		sscanf(line, "%95[a-z_]", name);
		if (strncmp(name, current, strlen(current)) != 0)
			fail_msg("sample %s outside its family (%s)", name, current);
	}
	assert_true(n > 30);
	free(t);
}

static void test_promtool(void **state)
{
	char *t = render(), path[] = "/tmp/jsched-prom-XXXXXX";
	int fd, status;
	FILE *p;

	(void)state;
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		printf("skipped: promtool is not installed (Debian's prometheus package)\n");
		free(t);
		skip();
	}
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
	close(fd);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
		p = popen(cmd, "r");
	}
	assert_non_null(p);
	{
		char out[512];

		while (fgets(out, sizeof(out), p))
			printf("promtool: %s", out);
	}
	status = pclose(p);
	unlink(path);
	free(t);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_promtool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
