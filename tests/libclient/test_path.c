/* test_path.c: jsched_default_socket_path, the one place the daemon and its clients agree
 * on where to meet: $JSCHED_SOCKET, else $XDG_RUNTIME_DIR/jschedd.sock, else
 * /run/jschedd/jschedd.sock, with the edge cases (empty, relative, too long).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <jsched/jsched.h>

static void env(const char *sock, const char *xdg)
{
	if (sock != NULL)
		setenv("JSCHED_SOCKET", sock, 1);
	else
		unsetenv("JSCHED_SOCKET");
	if (xdg != NULL)
		setenv("XDG_RUNTIME_DIR", xdg, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
}

static void expect_path(const char *want)
{
	char buf[256];
	int n = jsched_default_socket_path(buf, sizeof buf);
	assert_int_equal(n, (int)strlen(want));
	assert_string_equal(buf, want);
}

static void test_order(void **state)
{
	(void)state;
	env(NULL, NULL);
	expect_path("/run/jschedd/jschedd.sock");
	env(NULL, "/run/user/1000");
	expect_path("/run/user/1000/jschedd.sock");
	env(NULL, "/run/user/1000/");
	expect_path("/run/user/1000/jschedd.sock");
	env("/tmp/x/j.sock", "/run/user/1000");
	expect_path("/tmp/x/j.sock");
	env("rel.sock", NULL); /* taken as given: connect() resolves it */
	expect_path("rel.sock");
}

static void test_empty_and_relative(void **state)
{
	(void)state;
	env("", "/run/user/7"); /* empty counts as unset */
	expect_path("/run/user/7/jschedd.sock");
	env(NULL, "");
	expect_path("/run/jschedd/jschedd.sock");
	env(NULL, "relative/dir"); /* the XDG spec says ignore a relative path */
	expect_path("/run/jschedd/jschedd.sock");
}

static void test_too_long(void **state)
{
	(void)state;
	char big[200];
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	big[sizeof big - 1] = '\0';
	char buf[512];
	env(big, NULL); /* longer than sun_path (108) */
	assert_int_equal(jsched_default_socket_path(buf, sizeof buf), JSCHED_ELIMIT_EXCEEDED);
	assert_string_equal(buf, "");
	env(NULL, NULL);
	char small[10];
	assert_int_equal(jsched_default_socket_path(small, sizeof small), JSCHED_ELIMIT_EXCEEDED);
	assert_string_equal(small, "");
	/* Exactly fits: 25 bytes and the NUL. */
	char exact[26];
	assert_int_equal(jsched_default_socket_path(exact, sizeof exact), 25);
	assert_int_equal(jsched_default_socket_path(exact, 25), JSCHED_ELIMIT_EXCEEDED);
	assert_int_equal(jsched_default_socket_path(NULL, 10), JSCHED_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_empty_and_relative),
		cmocka_unit_test(test_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
