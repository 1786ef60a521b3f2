/* test_example.c: the example program of README.md never rots.
 *
 * 1. The ```c block between the "example.c" markers in README.md is byte for byte
 *    libclient/example.c.
 * 2. example.c and example_loop.c (the event-loop mode) compile with the installed-style
 *    include path and link against libjsched.so, as a user's program would.
 * 3. They run, against a fake jschedd on a thread of this test (hello, submit, wait, through
 *    the codec), found through $JSCHED_SOCKET, and print what they should.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/libclient/peer.h"

#ifndef JSCHED_TEST_SANFLAGS
#define JSCHED_TEST_SANFLAGS ""
#endif

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static char buf[1 << 18];
	*len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[*len] = '\0';
	char *copy = malloc(*len + 1);
	assert_non_null(copy);
	memcpy(copy, buf, *len + 1);
	return copy;
}

static void test_readme_block_is_the_file(void **state)
{
	(void)state;
	size_t rlen, elen;
	char *readme = slurp(JSCHED_SRCDIR "/README.md", &rlen);
	char *example = slurp(JSCHED_SRCDIR "/libclient/example.c", &elen);
	const char *begin = strstr(readme, "<!-- begin libclient/example.c -->\n```c\n");
	assert_non_null(begin);
	begin = strchr(strchr(begin, '\n') + 1, '\n') + 1;
	const char *end = strstr(begin, "```\n<!-- end libclient/example.c -->");
	assert_non_null(end);
	if ((size_t)(end - begin) != elen || memcmp(begin, example, elen) != 0)
		fail_msg("README.md's example differs from libclient/example.c: copy the file into the block");
	free(readme);
	free(example);
}

/* The fake daemon's answers: submit (ids 1, 2, ...), and wait (one job or a list:
 * succeeded, the value being the last submitted args).  Only its thread touches this. */
struct fake {
	int served; /* requests answered */
	json_t *submitted_args;
	int next_job;
};

static char *answer(const json_t *req, void *arg)
{
	struct fake *f = arg;
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *reply = json_pack("{s:O, s:b}", "id", json_object_get(req, "id"), "ok", 1);
	if (strcmp(op, "submit") == 0) {
		json_decref(f->submitted_args);
		f->submitted_args = json_incref(json_object_get(json_object_get(req, "job"), "args"));
		json_object_set_new(reply, "job", json_integer(++f->next_job));
	} else if (strcmp(op, "wait") == 0) {
		const json_t *one = json_object_get(req, "job"), *many = json_object_get(req, "jobs");
		json_t *recs = json_array();
		for (size_t i = 0; i < (one != NULL ? 1 : json_array_size(many)); i++)
			json_array_append_new(recs, json_pack("{s:O, s:s, s:s, s:O}", "job",
							      one != NULL ? one : json_array_get(many, i), "kind",
							      "call", "state", "succeeded", "value", f->submitted_args));
		json_object_set(reply, one != NULL ? "job" : "jobs", one != NULL ? json_array_get(recs, 0) : recs);
		json_decref(recs);
	} else {
		json_decref(reply);
		reply = json_pack("{s:O, s:b, s:{s:s, s:s}}", "id", json_object_get(req, "id"), "ok", 0, "error",
				  "code", "unknown_op", "message", "not in this fake");
	}
	char *text = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	f->served++;
	return text;
}

/* Compile libclient/NAME.c as a user would (-I to the headers, -l to the shared library)
 * into exe. */
static void compile(const char *name, const char *exe)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "%s -std=c11 -Wall -Wextra -Werror %s -I%s/include -o %s %s/libclient/%s.c -L%s/lib "
		 "-Wl,-rpath,%s/lib -ljsched",
		 JSCHED_TEST_CC, JSCHED_TEST_SANFLAGS, JSCHED_SRCDIR, exe, JSCHED_SRCDIR, name, JSCHED_BUILD_DIR,
		 JSCHED_BUILD_DIR);
	assert_int_equal(system(cmd), 0);
}

/* Run exe with JSCHED_SOCKET=sock; its first line in line, its exit status returned. */
static int run_example(const char *exe, const char *sock, char *line, size_t size)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "JSCHED_SOCKET=%s %s", sock, exe);
	FILE *out = popen(cmd, "r");
	assert_non_null(out);
	line[0] = '\0';
	if (fgets(line, (int)size, out) == NULL)
		line[0] = '\0';
	int status = pclose(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_compiles_links_runs(void **state)
{
	(void)state;
	char dir[] = "/tmp/jsched-example-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char exe[256], loop_exe[256], sock[256];
	snprintf(exe, sizeof exe, "%s/example", dir);
	snprintf(loop_exe, sizeof loop_exe, "%s/example_loop", dir);
	snprintf(sock, sizeof sock, "%s/jschedd.sock", dir);
	compile("example", exe);
	compile("example_loop", loop_exe);

	struct fake f = { 0 };
	struct fake_server server;
	assert_int_equal(fake_start(&server, sock, answer, &f), 0);

	char line[512], loop_line[512];
	int status = run_example(exe, sock, line, sizeof line);
	int loop_status = run_example(loop_exe, sock, loop_line, sizeof loop_line);
	fake_stop(&server);
	json_decref(f.submitted_args);
	unlink(sock);
	unlink(exe);
	unlink(loop_exe);
	rmdir(dir);
	assert_string_equal(line, "job 1 succeeded: {\"hello\":\"world\"}\n");
	assert_int_equal(status, 0);
	assert_string_equal(loop_line, "10 jobs submitted, 10 final\n");
	assert_int_equal(loop_status, 0);
	assert_int_equal(f.served, 2 + 11); /* submit, wait; 10 submits, wait (hello aside) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readme_block_is_the_file),
		cmocka_unit_test(test_compiles_links_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
