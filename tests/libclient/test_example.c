/* test_example.c: the example program of README.md never rots.
 *
 * 1. The ```c block between the "example.c" markers in README.md is byte for byte
 *    libclient/example.c.
 * 2. example.c compiles with the installed-style include path and links against
 *    libjsched.so (as a user's program would, with no private header).
 * 3. It runs, against a fake jschedd on a thread of this test (hello, submit, wait, through
 *    the codec), found through $JSCHED_SOCKET, and prints the echo job's result.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* The fake daemon: one connection, hello, submit, wait. */
struct fake {
	int listen_fd;
	int served; /* requests answered */
	json_t *submitted_args;
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->listen_fd, NULL, NULL);
	if (fd < 0)
		return NULL;
	struct peer p;
	peer_init(&p, fd);
	for (json_t *req; (req = peer_recv(&p)) != NULL; json_decref(req)) {
		const char *op = json_string_value(json_object_get(req, "op"));
		int id = (int)json_integer_value(json_object_get(req, "id"));
		char buf[2048];
		if (strcmp(op, "hello") == 0) {
			snprintf(buf, sizeof buf, "%s", peer_hello_reply(id));
		} else if (strcmp(op, "submit") == 0) {
			f->submitted_args = json_incref(json_object_get(json_object_get(req, "job"), "args"));
			snprintf(buf, sizeof buf, "{\"id\": %d, \"ok\": true, \"job\": 1}", id);
		} else if (strcmp(op, "wait") == 0) {
			char *args = json_dumps(f->submitted_args, JSON_COMPACT | JSON_ENCODE_ANY);
			snprintf(buf, sizeof buf,
				 "{\"id\": %d, \"ok\": true, \"job\": {\"job\": 1, \"kind\": \"call\", \"state\": "
				 "\"succeeded\", \"value\": %s}}",
				 id, args != NULL ? args : "null");
			free(args);
		} else {
			snprintf(buf, sizeof buf, "{\"id\": %d, \"ok\": false, \"error\": {\"code\": \"unknown_op\", "
						  "\"message\": \"not in this fake\"}}", id);
		}
		if (peer_send(&p, buf) < 0)
			break;
		f->served++;
	}
	peer_free(&p);
	return NULL;
}

static void test_compiles_links_runs(void **state)
{
	(void)state;
	char dir[] = "/tmp/jsched-example-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char exe[256], sock[256], cmd[2048];
	snprintf(exe, sizeof exe, "%s/example", dir);
	snprintf(sock, sizeof sock, "%s/jschedd.sock", dir);

	/* As a user would: -I to the headers, -L/-l to the shared library. */
	snprintf(cmd, sizeof cmd,
		 "%s -std=c11 -Wall -Wextra -Werror %s -I%s/include -o %s %s/libclient/example.c -L%s/lib "
		 "-Wl,-rpath,%s/lib -ljsched",
		 JSCHED_TEST_CC, JSCHED_TEST_SANFLAGS, JSCHED_SRCDIR, exe, JSCHED_SRCDIR, JSCHED_BUILD_DIR,
		 JSCHED_BUILD_DIR);
	assert_int_equal(system(cmd), 0);

	struct fake f = { .listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) };
	assert_true(f.listen_fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	assert_true(strlen(sock) < sizeof sa.sun_path);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	assert_int_equal(bind(f.listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(f.listen_fd, 1), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, fake_main, &f), 0);

	snprintf(cmd, sizeof cmd, "JSCHED_SOCKET=%s %s", sock, exe);
	FILE *out = popen(cmd, "r");
	assert_non_null(out);
	char line[512] = "";
	char *got = fgets(line, sizeof line, out);
	int status = pclose(out);
	pthread_join(t, NULL);
	close(f.listen_fd);
	json_decref(f.submitted_args);
	unlink(sock);
	unlink(exe);
	rmdir(dir);
	assert_non_null(got);
	assert_string_equal(line, "job 1 succeeded: {\"hello\":\"world\"}\n");
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(f.served, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readme_block_is_the_file),
		cmocka_unit_test(test_compiles_links_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
