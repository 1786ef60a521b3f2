/* table.c: how the jsched tool prints: tables through libsmartcols (widths from the
 * contents, the terminal's width, truncation of the columns marked so), JSON documents
 * through jansson, and durations and instants in a person's units.
 *
 * libsmartcols rather than printf widths: a column is as wide as its widest cell (a client
 * named nightly-ci-pipeline-west widens its column instead of shifting the ones after it),
 * and a table wider than the terminal shortens the columns marked to be truncated (the
 * command) instead of wrapping.  Its own JSON output is not used: --json prints the
 * protocol's records and replies, which are not the table's shape.
 */
#include "libclient/tool/tool.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* tool_now_ms: see tool.h. */
int64_t tool_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* tool_duration: see tool.h. */
const char *tool_duration(char *buf, size_t len, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	double s = (double)ms / 1000.0;
	if (ms < 1000)
		snprintf(buf, len, "%" PRId64 " ms", ms);
	else if (s < 10)
		snprintf(buf, len, "%.2f s", s);
	else if (s < 60)
		snprintf(buf, len, "%.1f s", s);
	else if (s < 3600)
		snprintf(buf, len, "%.1f min", s / 60);
	else if (s < 86400)
		snprintf(buf, len, "%.1f h", s / 3600);
	else
		snprintf(buf, len, "%.1f d", s / 86400);
	return buf;
}

/* tool_us: see tool.h. */
const char *tool_us(char *buf, size_t len, double us)
{
	if (us < 0)
		snprintf(buf, len, "-");
	else if (us < 1000)
		snprintf(buf, len, "%.0f us", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3g ms", us / 1e3);
	else
		snprintf(buf, len, "%.3g s", us / 1e6);
	return buf;
}

/* tool_count: see tool.h. */
const char *tool_count(char *buf, size_t len, double n)
{
	if (n < 0)
		snprintf(buf, len, "-");
	else if (n < 10000)
		snprintf(buf, len, "%.0f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.1fk", n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.1fM", n / 1e6);
	else
		snprintf(buf, len, "%.1fG", n / 1e9);
	return buf;
}

/* tool_instant: see tool.h. */
const char *tool_instant(char *buf, size_t len, int64_t at_ms)
{
	time_t secs = (time_t)(at_ms / 1000), now = time(NULL);
	struct tm tm, today;
	if (at_ms <= 0 || localtime_r(&secs, &tm) == NULL || localtime_r(&now, &today) == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	bool same_day = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
	if (strftime(buf, len, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M", &tm) == 0)
		snprintf(buf, len, "-");
	return buf;
}

/* tool_term_width: see tool.h. */
size_t tool_term_width(void)
{
	const char *cols = getenv("COLUMNS");
	if (cols != NULL && cols[0] >= '1' && cols[0] <= '9') {
		long w = strtol(cols, NULL, 10);
		if (w > 0 && w < 100000)
			return (size_t)w;
	}
	struct winsize ws;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

/* tool_table_new: see tool.h. */
struct libscols_table *tool_table_new(void)
{
	struct libscols_table *tb = scols_new_table();
	if (tb == NULL)
		return NULL;
	size_t width = tool_term_width();
	if (width > 0) {
		/* A terminal (or $COLUMNS, as in a script that wants a width): fit it. */
		scols_table_set_termforce(tb, SCOLS_TERMFORCE_ALWAYS);
		scols_table_set_termwidth(tb, width);
	} else {
		scols_table_set_termforce(tb, SCOLS_TERMFORCE_NEVER);
	}
	return tb;
}

/* tool_table_column: see tool.h. */
struct libscols_column *tool_table_column(struct libscols_table *tb, const char *name, double whint,
					  int flags)
{
	return scols_table_new_column(tb, name, whint, flags);
}

/* tool_table_print: see tool.h. */
int tool_table_print(struct libscols_table *tb)
{
	int r = scols_print_table(tb);
	scols_unref_table(tb);
	return r == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* tool_print_json: see tool.h. */
int tool_print_json(json_t *doc, bool figures)
{
	if (doc == NULL) {
		fprintf(stderr, "jsched: out of memory\n");
		return CLI_EXIT_FAILED;
	}
	/* Figures (metrics) with 15 significant digits, so 0.4 reads 0.4 and not
	 * 0.40000000000000002; anything else exactly as it came (17: every double). */
	char *text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(figures ? 15 : 17));
	json_decref(doc);
	if (text == NULL) {
		fprintf(stderr, "jsched: out of memory\n");
		return CLI_EXIT_FAILED;
	}
	puts(text);
	free(text);
	return CLI_EXIT_OK;
}

/* tool_record_json: see tool.h. */
json_t *tool_record_json(const struct jsched_result *r)
{
	return json_loads(r->json, JSON_DECODE_ANY, NULL);
}

/* tool_results_json: see tool.h. */
json_t *tool_results_json(const char *key, struct jsched_result *const *items, size_t n, long more)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (json_array_append_new(arr, tool_record_json(items[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (arr == NULL)
		return NULL;
	json_t *doc = json_pack("{s:o}", key, arr);
	if (doc != NULL && more >= 0 && json_object_set_new(doc, "not_shown", json_integer(more)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}
