/* test_tool_top.c: `jsched top` as a person sees it: run in tmux (80x24) against a real
 * jschedd, typed at with send-keys and read back with capture-pane.  It checks that the
 * job list (running job, its client and command) stands beside the client table, that
 * durations are in a person's units, that no line wraps at 80x24 (capture-pane -J joins
 * wrapped lines: none may be longer than the width), that the keys switch views, that a
 * resize lays the screen out for the new size, that a redraw with nothing new sends a
 * small part of a full screen (curses sends the cells that changed: counted in bytes
 * through pipe-pane), and that q quits with status 0.  tmux runs on a server of this
 * test's own (-L), so nobody else's sessions are touched.  Skipped without tmux.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

#define JSCHED_BIN JSCHED_BUILD_DIR "/bin/jsched"

static struct jdt jd;
static char server[64];	 /* tmux -L name */
static char screen[16384];

static bool have_tmux(void)
{
	return system("command -v tmux >/dev/null 2>&1") == 0;
}

/* tmux: run `tmux -L server ARGS`; returns its exit status. */
static int tmux(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tmux(const char *fmt, ...)
{
	char args[8192], cmd[8400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "tmux -L %s %s", server, args);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* capture: the pane's text into screen (-J: wrapped lines joined).  Returns its length. */
static size_t capture(bool joined)
{
	char path[400];
	snprintf(path, sizeof path, "%s/pane", jd.dir);
	screen[0] = '\0';
	if (tmux("capture-pane -p %s -t top > %s 2>/dev/null", joined ? "-J" : "", path) != 0)
		return 0;
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(screen, 1, sizeof screen - 1, f) : 0;
	screen[n] = '\0';
	if (f != NULL)
		fclose(f);
	return n;
}

/* until_shows: capture until the pane shows text (bounded: 200 tries, 10 s). */
static void until_shows(const char *text)
{
	for (int i = 0; i < 200; i++) {
		capture(false);
		if (strstr(screen, text) != NULL)
			return;
		jdt_sleep_ms(50);
	}
	fail_msg("the screen never showed \"%s\":\n%s", text, screen);
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_top(void **state)
{
	(void)state;
	if (!have_tmux()) {
		fprintf(stderr, "skipped: tmux is not installed\n");
		skip();
	}
	struct jsched_conn *c = jdt_connect(&jd, "nightly-ci-pipeline-west");
	json_t *rep = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"sleep\", \"30\"], "
				"\"cwd\": \"/\"}}");
	uint64_t id = (uint64_t)json_integer_value(json_object_get(rep, "job"));
	json_decref(rep);
	jdt_until_state(c, id, "running");

	char done[400], bytes[400];
	snprintf(done, sizeof done, "%s/top-exit", jd.dir);
	snprintf(bytes, sizeof bytes, "%s/top-bytes", jd.dir);
	/* The interval is long: the screen changes only when a key asks. */
	assert_int_equal(tmux("new-session -d -s top -x 80 -y 24 \"TERM=xterm %s -s %s top --interval 1h; "
			      "echo \\$? > %s; sleep 30\"", JSCHED_BIN, jd.sock, done), 0);
	until_shows("sleep 30");
	capture(false);
	assert_non_null(strstr(screen, "nightly-ci")); /* the client table */
	assert_non_null(strstr(screen, "COMMAND"));    /* beside it, the job list */
	/* Durations in a person's units: the running job's age, the latency figures. */
	if (strstr(screen, " ms") == NULL && strstr(screen, " s ") == NULL)
		fail_msg("no duration in ms or s on the screen:\n%s", screen);
	/* No line wrapped: joined, none is longer than the 80 columns. */
	capture(true);
	for (char *line = screen; *line != '\0';) {
		size_t len = strcspn(line, "\n");
		if (len > 80)
			fail_msg("a line wrapped (%zu columns): %.*s", len, (int)len, line);
		line += len + (line[len] == '\n');
	}

	/* Redraws send what changed: 10 refreshes and a view switch, against the first
	 * screen's bytes. */
	assert_int_equal(tmux("pipe-pane -O -t top 'cat >> %s'", bytes), 0);
	assert_int_equal(tmux("send-keys -t top c"), 0); /* a full change, as a yardstick */
	until_shows("TARGET");
	jdt_sleep_ms(200); /* let pipe-pane's cat write what it has (not a pass/fail bound) */
	long full = file_size(bytes);
	assert_true(full > 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tmux("send-keys -t top Space"), 0);
	assert_int_equal(tmux("send-keys -t top w"), 0);
	until_shows("WORKER");
	jdt_sleep_ms(200);
	long after = file_size(bytes) - full;
	fprintf(stderr, "bytes: first view switch %ld, 10 refreshes and a view switch %ld\n", full, after);
	/* A full redraw of each would be 11 times "full" or more. */
	if (after > 3 * full)
		fail_msg("10 refreshes and a view switch sent %ld bytes, a first view switch %ld", after, full);
	assert_int_equal(tmux("pipe-pane -t top"), 0);

	assert_int_equal(tmux("send-keys -t top j"), 0);
	until_shows("COMMAND");
	/* A resize lays it out again: the status line moves to the new last row. */
	assert_int_equal(tmux("resize-window -t top -x 100 -y 30"), 0);
	for (int i = 0; i < 200; i++) {
		capture(false);
		int rows = 0;
		for (const char *p = screen; *p != '\0'; p++)
			rows += *p == '\n';
		const char *last = strstr(screen, "q quits");
		int row = 0;
		for (const char *p = screen; last != NULL && p < last; p++)
			row += *p == '\n';
		if (last != NULL && row == 29)
			break;
		if (i == 199)
			fail_msg("after the resize the status line is on row %d of %d:\n%s", row, rows, screen);
		jdt_sleep_ms(50);
	}

	assert_int_equal(tmux("send-keys -t top q"), 0);
	for (int i = 0; i < 200 && file_size(done) <= 0; i++)
		jdt_sleep_ms(50);
	FILE *f = fopen(done, "r");
	assert_non_null(f);
	int status = -1;
	assert_int_equal(fscanf(f, "%d", &status), 1);
	fclose(f);
	assert_int_equal(status, 0);
	jsched_close(c);
}

static int setup(void **state)
{
	(void)state;
	setenv("JSCHED_BUILD_DIR", JSCHED_BUILD_DIR, 0);
	char members[128];
	snprintf(members, sizeof members, "\"client_names\": {\"%u\": [\"*\"]}", (unsigned)getuid());
	jdt_start(&jd, members);
	snprintf(server, sizeof server, "jsched-test-%d", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmux("kill-server 2>/dev/null");
	jdt_stop(&jd, SIGINT);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
