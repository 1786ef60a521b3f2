/* tests/daemon/test_daemon_result.c: a large result is fetched on its own, against the real
 * daemon.
 *
 * - Nine echo jobs with ~1 MiB results: their records (list, status, wait) carry
 *   "result_bytes" and "result_omitted" instead of the value, so `jsched ls` answers in a
 *   small reply; each result comes back whole and byte-identical from `jsched result`,
 *   from jsched_value, and from raw `result` requests in pieces of at most max_bytes that
 *   end on character boundaries (quotes, backslashes and a two-byte character in it).
 * - A 20 MiB result (frame_bytes raised to let its args in) is larger than a reply may be:
 *   `result` answers it in pieces within reply_frame_bytes (jdt_read_frame asserts every
 *   frame is within 16 MiB), and jsched_value joins them.
 * - A small result stays in its record; offsets past the end or inside a character are
 *   refused; a command, and a job that has not ended, have no result to fetch.
 * - With the journal a large result is kept in a file, not in memory, and read back after
 *   kill -9, after a snapshot, and removed with its job.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/daemon/harness.h"

static struct jdt t;

/* big_text: a JSON string of about `bytes` bytes as jansson writes it (compact: quotes
 * and backslashes escaped, UTF-8 as it is), different for each seed.  malloc'd. */
static char *big_text(size_t bytes, unsigned seed)
{
	static const char unit[] = "ab\\\"c\\\\d\xc3\xa9-"; /* ab\"c\\dé- */
	size_t u = sizeof(unit) - 1, n = 0;
	char *s = malloc(bytes + u + 32);

	assert_non_null(s);
	n += (size_t)sprintf(s, "\"%u:", seed);
	while (n < bytes) {
		memcpy(s + n, unit, u);
		n += u;
	}
	strcpy(s + n, "\"");
	return s;
}

static uint64_t submit_echo(struct jsched_conn *c, const char *args)
{
	struct jsched_spec *spec;
	uint64_t id;

	assert_int_equal(jsched_spec_call("echo", args, &spec), 0);
	if (jsched_submit(c, spec, &id) != 0)
		fail_msg("submit: %s", jsched_error_message(c));
	jsched_spec_free(spec);
	return id;
}

/* fetch_pieces: the result of job id through raw `result` requests of max_bytes each,
 * checking each piece; returns the joined text (malloc'd) and the number of pieces. */
static char *fetch_pieces(int fd, uint64_t id, size_t max, size_t *pieces)
{
	char req[160], *all = NULL;
	size_t have = 0, total = 0;
	bool more = true;

	*pieces = 0;
	while (more) {
		json_t *r;
		const char *data;
		size_t n;

		assert_true(*pieces < 100000);
		if (max)
			snprintf(req, sizeof req, "{\"op\": \"result\", \"id\": 9, \"job\": %llu, "
				 "\"offset\": %zu, \"max_bytes\": %zu}", (unsigned long long)id, have, max);
		else
			snprintf(req, sizeof req, "{\"op\": \"result\", \"id\": 9, \"job\": %llu, "
				 "\"offset\": %zu}", (unsigned long long)id, have);
		r = jdt_raw_ask(fd, req);
		assert_true(json_is_true(json_object_get(r, "ok")));
		data = json_string_value(json_object_get(r, "data"));
		assert_non_null(data);
		n = json_string_length(json_object_get(r, "data"));
		if (!all) {
			total = (size_t)json_integer_value(json_object_get(r, "bytes"));
			all = malloc(total + 1);
			assert_non_null(all);
		}
		assert_int_equal(json_integer_value(json_object_get(r, "offset")), have);
		assert_int_equal(json_integer_value(json_object_get(r, "next_offset")), have + n);
		assert_true(n > 0);
		if (max)
			assert_true(n <= max);
		assert_true(have + n <= total);
		memcpy(all + have, data, n);
		have += n;
		more = json_is_true(json_object_get(r, "more"));
		assert_int_equal(more, have < total);
		(*pieces)++;
		json_decref(r);
	}
	all[have] = '\0';
	return all;
}

/* status_forgotten: whether status of id says job_forgotten. */
static bool status_forgotten(struct jsched_conn *c, uint64_t id)
{
	json_t *r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	bool f = strcmp(jdt_err_code(r), "job_forgotten") == 0;

	json_decref(r);
	return f;
}

/* assert_omitted: rec (a record) has no value, and says the result's size. */
static void assert_omitted(const json_t *rec, size_t bytes)
{
	assert_null(json_object_get(rec, "value"));
	assert_true(json_is_true(json_object_get(rec, "result_omitted")));
	assert_int_equal(json_integer_value(json_object_get(rec, "result_bytes")), bytes);
}

static void test_nine_large_results(void **state)
{
	enum { N = 9 };
	struct jsched_conn *c = jdt_connect(&t, "big");
	int fd = jdt_raw_hello(&t, "big");
	char *texts[N], out[8192], path[400];
	uint64_t ids[N];
	struct jsched_results *res;
	json_t *r, *jobs;

	(void)state;
	for (int i = 0; i < N; i++) {
		texts[i] = big_text(1000000 + (size_t)i * 1000, (unsigned)i);
		ids[i] = submit_echo(c, texts[i]);
	}
	assert_int_equal(jsched_wait_many(c, ids, N, JSCHED_WAIT_ALL, 60000, &res), N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(res->items[i]->state, JSCHED_STATE_SUCCEEDED);
		assert_true(res->items[i]->result_omitted);
		assert_int_equal(res->items[i]->result_bytes, strlen(texts[i]));
		assert_null(res->items[i]->value_json);
	}
	jsched_results_free(res);

	/* The listing is small: sizes, not values. */
	jdt_send_frame(fd, "{\"op\": \"list\", \"id\": 1, \"client\": \"big\"}");
	r = jdt_read_frame(fd);
	assert_non_null(r);
	jobs = json_object_get(r, "jobs");
	assert_int_equal(json_array_size(jobs), N);
	for (int i = 0; i < N; i++)
		assert_omitted(json_array_get(jobs, (size_t)i), strlen(texts[i]));
	{
		char *all = json_dumps(r, JSON_COMPACT);

		assert_true(strlen(all) < 16384);
		free(all);
	}
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)ids[0]);
	assert_omitted(json_object_get(r, "job"), strlen(texts[0]));
	json_decref(r);

	/* The tool: ls answers and says how large; result prints each whole. */
	assert_int_equal(jdt_tool(&t, "big", out, sizeof out, "ls --client big --no-headings -o id,result"), 0);
	assert_non_null(strstr(out, "bytes"));
	for (int i = 0; i < N; i++) {
		char *got;
		size_t len;
		FILE *f;

		snprintf(path, sizeof path, "%s/result-%d", t.dir, i);
		assert_int_equal(jdt_tool(&t, "big", out, sizeof out, "result %llu > '%s'",
					  (unsigned long long)ids[i], path), 0);
		assert_non_null(f = fopen(path, "rb"));
		got = malloc(strlen(texts[i]) + 16);
		len = fread(got, 1, strlen(texts[i]) + 16, f);
		fclose(f);
		assert_int_equal(len, strlen(texts[i]) + 1);
		assert_memory_equal(got, texts[i], strlen(texts[i]));
		assert_int_equal(got[len - 1], '\n');
		free(got);
		/* The library, whole. */
		assert_int_equal(jsched_value(c, ids[i], &got, &len), 0);
		assert_int_equal(len, strlen(texts[i]));
		assert_string_equal(got, texts[i]);
		jsched_free(got);
	}
	/* --json of wait and status: the records with the value put back whole. */
	for (int k = 0; k < 2; k++) {
		json_error_t jerr;
		json_t *doc, *rec;
		char *back;

		snprintf(path, sizeof path, "%s/json-%d", t.dir, k);
		assert_int_equal(jdt_tool(&t, "big", out, sizeof out, "%s --json %llu > '%s'",
					  k ? "status" : "wait", (unsigned long long)ids[1], path), 0);
		doc = json_load_file(path, 0, &jerr);
		assert_non_null(doc);
		rec = json_array_get(json_object_get(doc, "jobs"), 0);
		assert_null(json_object_get(rec, "result_omitted"));
		back = json_dumps(json_object_get(rec, "value"), JSON_COMPACT | JSON_ENCODE_ANY);
		assert_string_equal(back, texts[1]);
		free(back);
		json_decref(doc);
	}
	/* Raw pieces: at most max_bytes each, on character boundaries, joined byte for byte. */
	{
		size_t pieces;
		char *got = fetch_pieces(fd, ids[3], 4099, &pieces);

		assert_string_equal(got, texts[3]);
		assert_true(pieces >= strlen(texts[3]) / 4099);
		free(got);
	}
	for (int i = 0; i < N; i++)
		free(texts[i]);
	close(fd);
	jsched_close(c);
}

static void test_result_larger_than_a_reply(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "huge");
	int fd = jdt_raw_hello(&t, "huge");
	char *text = big_text(20u << 20, 77), *got;
	uint64_t id = submit_echo(c, text);
	size_t pieces, len;
	json_t *r;

	(void)state;
	r = jdt_ok(c, "{\"op\": \"wait\", \"job\": %llu, \"timeout_ms\": 60000}", (unsigned long long)id);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "state")),
			    "succeeded");
	assert_omitted(json_object_get(r, "job"), strlen(text));
	json_decref(r);
	/* Pieces as large as a reply allows: more than one, each frame within 16 MiB. */
	got = fetch_pieces(fd, id, 0, &pieces);
	assert_true(pieces >= 2);
	assert_string_equal(got, text);
	free(got);
	assert_int_equal(jsched_value(c, id, &got, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(got, text, len);
	jsched_free(got);
	free(text);
	close(fd);
	jsched_close(c);
}

static void test_small_and_refused(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, "small");
	uint64_t small = jdt_submit_call(c, "echo", "{\"x\": \"\\u00e9\"}");
	uint64_t big, cmd, sleeper;
	char *text = big_text(70000, 5), *got;
	size_t len, off;
	json_t *r;

	(void)state;
	big = submit_echo(c, text);
	cmd = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"/bin/true\"]}");
	sleeper = jdt_submit_spec(c, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 60000}}");
	assert_string_equal(jdt_wait_final(c, small, &r), "succeeded");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "value"), "x")),
			    "\xc3\xa9");
	assert_null(json_object_get(r, "result_omitted"));
	json_decref(r);
	assert_int_equal(jsched_value(c, small, &got, &len), 0);
	assert_string_equal(got, "{\"x\":\"\xc3\xa9\"}");
	jsched_free(got);
	assert_string_equal(jdt_wait_final(c, big, NULL), "succeeded");
	/* Offsets: past the end, inside the two-byte character. */
	r = jdt_req(c, "{\"op\": \"result\", \"job\": %llu, \"offset\": %zu}", (unsigned long long)big,
		    strlen(text) + 1);
	assert_string_equal(jdt_err_code(r), "bad_request");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "offset");
	json_decref(r);
	off = (size_t)(strstr(text, "\xc3\xa9") - text) + 1;
	r = jdt_req(c, "{\"op\": \"result\", \"job\": %llu, \"offset\": %zu}", (unsigned long long)big, off);
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	/* A piece of one byte where a character takes two still moves on, by the character. */
	r = jdt_ok(c, "{\"op\": \"result\", \"job\": %llu, \"offset\": %zu, \"max_bytes\": 1}",
		   (unsigned long long)big, off - 1);
	assert_string_equal(json_string_value(json_object_get(r, "data")), "\xc3\xa9");
	assert_int_equal(json_integer_value(json_object_get(r, "next_offset")), off + 1);
	json_decref(r);
	/* No result to fetch: a command, a job still running. */
	jdt_wait_final(c, cmd, NULL);
	assert_int_equal(jsched_value(c, cmd, &got, &len), JSCHED_ENOT_SUPPORTED);
	jdt_until_state(c, sleeper, "running");
	assert_int_equal(jsched_value(c, sleeper, &got, &len), JSCHED_ENOT_SUPPORTED);
	assert_null(got);
	assert_int_equal(jsched_cancel(c, sleeper), 0);
	free(text);
	jsched_close(c);
}

/* retained_bytes: client name's retained_bytes in the metrics. */
static json_int_t retained_bytes(struct jsched_conn *c, const char *name)
{
	json_t *doc = jdt_metrics(c);
	json_int_t n = json_integer_value(json_object_get(jdt_client_metrics(doc, name), "retained_bytes"));

	json_decref(doc);
	return n;
}

/* value_file_size: the size of job id's result file in daemon u's journal, or -1. */
static long value_file_size(struct jdt *u, uint64_t id)
{
	char path[400];
	struct stat st;

	snprintf(path, sizeof path, "%s/journal/output/%llu.value", u->dir, (unsigned long long)id);
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void assert_value(struct jsched_conn *c, uint64_t id, const char *text)
{
	char *got;
	size_t len;

	assert_int_equal(jsched_value(c, id, &got, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(got, text, len);
	jsched_free(got);
}

/* test_large_results_on_disk: with the journal, a result past value_bytes is kept in a
 * file in the journal's output directory, not in memory (the client's retained bytes
 * stay under value_bytes; without the journal they hold the whole result); `result`
 * reads it back whole after kill -9 and a restart, and after a snapshot took the journal
 * over; forgetting the job removes the file. */
static void test_large_results_on_disk(void **state)
{
	struct jdt u;
	struct jsched_conn *c, *mem;
	char *text = big_text(900000, 11), members[700];
	uint64_t id, other;
	json_t *r;

	(void)state;
	/* The same result without a journal: resident. */
	mem = jdt_connect(&t, "resident");
	other = submit_echo(mem, text);
	assert_string_equal(jdt_wait_final(mem, other, NULL), "succeeded");
	assert_true(retained_bytes(mem, "resident") > (json_int_t)strlen(text));
	jsched_close(mem);

	jdt_start(&u, "\"workers\": 2");
	c = jdt_connect(&u, "disk");
	id = submit_echo(c, text);
	assert_string_equal(jdt_wait_final(c, id, &r), "succeeded");
	assert_omitted(r, strlen(text));
	json_decref(r);
	assert_true(retained_bytes(c, "disk") < 65536);
	assert_int_equal(value_file_size(&u, id), strlen(text));
	assert_value(c, id, text);
	{
		size_t pieces;
		int fd = jdt_raw_hello(&u, "disk");
		char *got = fetch_pieces(fd, id, 100000, &pieces);

		assert_string_equal(got, text);
		assert_true(pieces >= 9);
		free(got);
		close(fd);
	}

	/* kill -9: the journal's record brings it back, to its file again. */
	jsched_close(c);
	jdt_kill9(&u);
	jdt_restart(&u);
	c = jdt_connect(&u, "disk");
	assert_value(c, id, text);
	assert_true(retained_bytes(c, "disk") < 65536);

	/* A snapshot copies it from the file into the journal: after it and kill -9, whole. */
	snprintf(members, sizeof members, "\"workers\": 2, \"journal\": {\"dir\": \"%s/journal\", "
		 "\"compact_bytes\": 4096}", u.dir);
	jdt_write_config(&u, members);
	assert_int_equal(kill(u.pid, SIGHUP), 0);
	{
		/* Log enough (past twice the live data, the result's 900 KB) for a snapshot. */
		char *filler = big_text(40000, 12);

		for (int i = 0; i < 80; i++)
			jdt_wait_final(c, submit_echo(c, filler), NULL);
		free(filler);
	}
	jdt_wait_snapshots(c, 1);
	jsched_close(c);
	jdt_kill9(&u);
	jdt_restart(&u);
	c = jdt_connect(&u, "disk");
	assert_value(c, id, text);

	/* Forgotten: its file goes (the output thread removes it). */
	snprintf(members, sizeof members, "\"workers\": 2, \"retention\": {\"jobs\": 1}, "
		 "\"journal\": {\"dir\": \"%s/journal\"}", u.dir);
	jdt_write_config(&u, members);
	assert_int_equal(kill(u.pid, SIGHUP), 0);
	for (int i = 0; i < 1000 && (status_forgotten(c, id) == false); i++) {
		jdt_wait_final(c, jdt_submit_call(c, "noop", NULL), NULL);
		jdt_sleep_ms(10);
	}
	assert_true(status_forgotten(c, id));
	for (int i = 0; i < 1000 && value_file_size(&u, id) >= 0; i++)
		jdt_sleep_ms(10);
	assert_int_equal(value_file_size(&u, id), -1);
	jsched_close(c);
	free(text);
	assert_int_equal(jdt_stop(&u, SIGTERM), 0);
}

static void test_hello_says_value_bytes(void **state)
{
	int fd = jdt_raw(&t);
	json_t *r;

	(void)state;
	jdt_send_frame(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 2}");
	r = jdt_read_frame(fd);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "limits"), "value_bytes")),
			 65536);
	json_decref(r);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_says_value_bytes),
		cmocka_unit_test(test_nine_large_results),
		cmocka_unit_test(test_result_larger_than_a_reply),
		cmocka_unit_test(test_small_and_refused),
		cmocka_unit_test(test_large_results_on_disk),
	};

	return JDT_RUN_GROUP(tests, &t, "\"workers\": 2, \"journal\": {\"sync\": \"off\"}, "
			     "\"limits\": {\"frame_bytes\": 25165824}",
			     NULL, NULL);
}
