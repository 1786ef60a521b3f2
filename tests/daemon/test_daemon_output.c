/* tests/daemon/test_daemon_output.c: commands' output in the journal's output files,
 * against the real daemon: what a command printed survives kill -9 (a finished job's
 * and a running one's), truncation keeps the beginning and the end (in memory, in the
 * files, after a restart), the files stay bounded for a command printing far more than
 * its limit, retention removes them, a restart sweeps files no job owns, and with
 * journal.sync "off" no file is written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/daemon/harness.h"

static struct jdt t;

/* output: stream `stream` of job id as the daemon answers it (malloc'd, NUL-terminated),
 * its length in *len. */
static char *output(struct jsched_conn *c, uint64_t id, const char *stream, size_t *len,
		    bool *trunc)
{
	json_t *r = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	unsigned char *data = NULL;
	size_t n = 0;
	bool tr = false;

	assert_int_equal(jp_output_stream_parse(json_object_get(r, stream), &data, &n, &tr, NULL), 0);
	if (len)
		*len = n;
	if (trunc)
		*trunc = tr;
	json_decref(r);
	return (char *)data;
}

/* expect_output: job id's stream `stream` is exactly `want`. */
static void expect_output(struct jsched_conn *c, uint64_t id, const char *stream, const char *want)
{
	char *o = output(c, id, stream, NULL, NULL);

	assert_string_equal(o, want);
	free(o);
}

/* crash_restart: close *c, kill -9 the daemon d, start it again on its journal and
 * connect *c anew. */
static void crash_restart(struct jdt *d, struct jsched_conn **c)
{
	jsched_close(*c);
	jdt_kill9(d);
	jdt_restart(d);
	*c = jdt_connect(d, NULL);
}

/* until_output: poll (bounded, 30 s) until job id's stdout holds `want`. */
static void until_output(struct jsched_conn *c, uint64_t id, const char *want)
{
	for (int i = 0; i < 3000; i++) {
		char *o = output(c, id, "stdout", NULL, NULL);
		bool has = strstr(o, want) != NULL;

		free(o);
		if (has)
			return;
		jdt_sleep_ms(10);
	}
	fail_msg("job %llu never printed '%s'", (unsigned long long)id, want);
}

static void path_of(char *buf, size_t len, uint64_t id, const char *ext)
{
	snprintf(buf, len, "%s/journal/output/%llu.%s", t.dir, (unsigned long long)id, ext);
}

static bool exists(uint64_t id, const char *ext)
{
	char p[600];

	path_of(p, sizeof(p), id, ext);
	return access(p, F_OK) == 0;
}

/* disk_bytes: the bytes stream `ext`'s files of job id take on disk (the head and the
 * two tail files). */
static long long disk_bytes(uint64_t id, const char *ext)
{
	static const char *const parts[] = {"", ".1", ".2"};
	long long n = 0;

	for (int k = 0; k < 3; k++) {
		char p[600], e[16];
		struct stat st;

		snprintf(e, sizeof(e), "%s%s", ext, parts[k]);
		path_of(p, sizeof(p), id, e);
		if (stat(p, &st) == 0)
			n += (long long)st.st_size;
	}
	return n;
}

/* out_metric: the metrics' journal.output.<name>. */
static json_int_t out_metric(struct jsched_conn *c, const char *name)
{
	json_t *m = jdt_metrics(c);
	json_int_t v = json_integer_value(
		json_object_get(json_object_get(json_object_get(m, "journal"), "output"), name));

	json_decref(m);
	return v;
}

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"output_bytes\": 65536, \"kill_grace_ms\": 500}");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jdt_stop(&t, SIGTERM);
	return 0;
}

/* A finished job's output and a running one's, across kill -9. */
static void test_kill9_keeps_output(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t done = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
				"\"echo done-out; echo done-err >&2\"]}");
	uint64_t run = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
			       "\"echo first; echo err1 >&2; echo second; exec sleep 60\"]}");
	json_t *rec;

	(void)state;
	assert_string_equal(jdt_wait_final(c, done, NULL), "succeeded");
	until_output(c, run, "second\n");
	assert_true(exists(done, "out"));
	assert_true(exists(done, "err"));
	/* Synced before its end was recorded: both files of the finished job at least. */
	assert_true(out_metric(c, "syncs") >= 2);
	crash_restart(&t, &c);
	expect_output(c, done, "stdout", "done-out\n");
	expect_output(c, done, "stderr", "done-err\n");
	/* The running one ended daemon_restart, with what it wrote before the crash. */
	assert_string_equal(jdt_wait_final(c, run, &rec), "failed");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "daemon_restart");
	json_decref(rec);
	expect_output(c, run, "stdout", "first\nsecond\n");
	expect_output(c, run, "stderr", "err1\n");
	/* And once more: its final record says "in the files", which still hold it. */
	crash_restart(&t, &c);
	expect_output(c, run, "stdout", "first\nsecond\n");
	jsched_close(c);
}

/* expect_truncated: a stream of `total` bytes `want` kept as its first half-limit, the
 * marker, its last half-limit. */
static void expect_truncated(const char *got, size_t len, const char *want, size_t total,
			     size_t limit)
{
	char mark[64];
	size_t h = limit / 2, tl = limit - h;

	snprintf(mark, sizeof(mark), "\n[jschedd: %zu bytes not kept]\n", total - limit);
	assert_int_equal(len, limit + strlen(mark));
	assert_memory_equal(got, want, h);
	assert_memory_equal(got + h, mark, strlen(mark));
	assert_memory_equal(got + h + strlen(mark), want + total - tl, tl);
}

/* `seq 1 N` as the command prints it. */
static char *seq_text(int n, size_t *len)
{
	size_t cap = (size_t)n * 8 + 1, k = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	for (int i = 1; i <= n; i++)
		k += (size_t)snprintf(s + k, cap - k, "%d\n", i);
	*len = k;
	return s;
}

/* Far more than the limit: the beginning and the end kept, the files bounded, the same
 * bytes after a kill -9 -- for a finished command and for one still running. */
static void test_truncation_keeps_begin_and_end(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	size_t total, len, lim = 65536;
	char *want = seq_text(300000, &total); /* 1,988,895 bytes */
	uint64_t fin = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"seq\", \"1\", \"300000\"]}");
	uint64_t run = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
			       "\"seq 1 300000; echo END >&2; exec sleep 60\"]}");
	bool trunc;
	char *o;

	(void)state;
	assert_int_equal(total, 1988895);
	assert_string_equal(jdt_wait_final(c, fin, NULL), "succeeded");
	o = output(c, fin, "stdout", &len, &trunc);
	assert_true(trunc);
	expect_truncated(o, len, want, total, lim);
	free(o);
	/* The running one: wait for its stderr line (written after all of stdout). */
	for (int i = 0;; i++) {
		char *e = output(c, run, "stderr", NULL, NULL);
		bool has = strcmp(e, "END\n") == 0;

		free(e);
		if (has)
			break;
		assert_true(i < 3000);
		jdt_sleep_ms(10);
	}
	o = output(c, run, "stdout", &len, &trunc);
	expect_truncated(o, len, want, total, lim);
	free(o);
	/* Bounded on disk: the head and two tail shares, 32 bytes a record of those (reads
	 * of at least 16 bytes: the command writes in blocks), where it printed 30 limits. */
	assert_true(disk_bytes(fin, "out") <= (long long)(lim * 3 / 2 * 3));
	assert_true(disk_bytes(run, "out") <= (long long)(lim * 3 / 2 * 3));
	assert_true(disk_bytes(fin, "out") >= (long long)lim);
	assert_true(out_metric(c, "tails_dropped") >= 2 * 20);
	crash_restart(&t, &c);
	o = output(c, fin, "stdout", &len, &trunc);
	assert_true(trunc);
	expect_truncated(o, len, want, total, lim);
	free(o);
	assert_string_equal(jdt_wait_final(c, run, NULL), "failed");
	o = output(c, run, "stdout", &len, &trunc);
	assert_true(trunc);
	expect_truncated(o, len, want, total, lim);
	free(o);
	o = output(c, run, "stderr", &len, &trunc);
	assert_false(trunc);
	assert_string_equal(o, "END\n");
	free(o);
	free(want);
	jsched_close(c);
}

/* A job run again (a retry): the second attempt's files hold only its own output, also
 * after kill -9 (none of the first attempt's tail files are left to mix in). */
static void test_retry_files_start_over(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	char spec[1024];
	uint64_t id;

	(void)state;
	snprintf(spec, sizeof(spec), "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
		 "\"if [ -e %s/once ]; then echo second; else touch %s/once; seq 1 300000; exit 1; fi\"], "
		 "\"retry\": {\"max_attempts\": 2, \"backoff_ms\": 10}}", t.dir, t.dir);
	id = jdt_submit_spec(c, "%s", spec);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	expect_output(c, id, "stdout", "second\n");
	crash_restart(&t, &c);
	expect_output(c, id, "stdout", "second\n");
	jsched_close(c);
}

/* Retention forgets a job: its files go; a restart sweeps files no job owns. */
static void test_retention_removes_files(void **state)
{
	struct jdt r;
	struct jsched_conn *c;
	uint64_t ids[4];
	char stray[600];
	FILE *f;

	(void)state;
	jdt_start(&r, "\"workers\": 1, \"retention\": {\"jobs\": 2}");
	c = jdt_connect(&r, NULL);
	for (int i = 0; i < 4; i++) {
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"echo\", \"job\"]}");
		assert_string_equal(jdt_wait_final(c, ids[i], NULL), "succeeded");
	}
	/* The first two are forgotten (only 2 retained); their removal is the output
	 * thread's: bounded wait. */
	for (int i = 0; i < 2; i++) {
		char p[600];
		int k;

		snprintf(p, sizeof(p), "%s/journal/output/%llu.out", r.dir, (unsigned long long)ids[i]);
		for (k = 0; k < 3000 && access(p, F_OK) == 0; k++)
			jdt_sleep_ms(10);
		assert_int_not_equal(access(p, F_OK), 0);
		assert_int_equal(errno, ENOENT);
	}
	for (int i = 2; i < 4; i++) {
		char p[600];

		snprintf(p, sizeof(p), "%s/journal/output/%llu.out", r.dir, (unsigned long long)ids[i]);
		assert_int_equal(access(p, F_OK), 0);
	}
	/* A file of no job (a crash between the forget and the unlink): swept at start. */
	snprintf(stray, sizeof(stray), "%s/journal/output/%llu.out", r.dir, 999999ull);
	assert_non_null(f = fopen(stray, "w"));
	fclose(f);
	crash_restart(&r, &c);
	assert_int_not_equal(access(stray, F_OK), 0);
	expect_output(c, ids[3], "stdout", "job\n");
	jsched_close(c);
	jdt_stop(&r, SIGTERM);
}

/* journal.sync "off": output in memory only, no output directory at all. */
static void test_journal_off_no_files(void **state)
{
	struct jdt r;
	struct jsched_conn *c;
	char p[600];
	uint64_t id;

	(void)state;
	jdt_start(&r, "\"workers\": 1, \"journal\": {\"sync\": \"off\"}");
	c = jdt_connect(&r, NULL);
	id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"echo\", \"mem\"]}");
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	expect_output(c, id, "stdout", "mem\n");
	snprintf(p, sizeof(p), "%s/journal/output", r.dir);
	assert_int_not_equal(access(p, F_OK), 0);
	jsched_close(c);
	jdt_stop(&r, SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kill9_keeps_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncation_keeps_begin_and_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_files_start_over, setup, teardown),
		cmocka_unit_test(test_retention_removes_files),
		cmocka_unit_test(test_journal_off_no_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
