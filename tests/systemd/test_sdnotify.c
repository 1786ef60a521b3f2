/* tests/systemd/test_sdnotify.c: the sd_notify, socket-activation and watchdog protocols
 * of daemon/sdnotify.c, against a real datagram socket and real inherited descriptors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/sdnotify.h"
#include "jsched/error.h"

/* bind_dgram: a datagram socket bound to `name` (abstract when it starts with '@'). */
static int bind_dgram(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		unlink(name);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)), 0);
	return fd;
}

static void recv_expect(int fd, const char *want)
{
	char buf[4200];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_notify_unset_is_noop(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(jd_sd_notify("READY=1"), 0);
}

static void test_notify_path_socket(void **state)
{
	char path[64];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/jsched-sdn-%d", (int)getpid());
	fd = bind_dgram(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(jd_sd_notify("READY=1\nSTATUS=serving"), 1);
	recv_expect(fd, "READY=1\nSTATUS=serving");
	assert_int_equal(jd_sd_notifyf("STATUS=%d jobs queued", 42), 1);
	recv_expect(fd, "STATUS=42 jobs queued");
	close(fd);
	unlink(path);
	unsetenv("NOTIFY_SOCKET");
}

static void test_notify_abstract_socket(void **state)
{
	char name[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@jsched-sdn-%d", (int)getpid());
	fd = bind_dgram(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(jd_sd_notify("STOPPING=1"), 1);
	recv_expect(fd, "STOPPING=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_notify_bad_address(void **state)
{
	(void)state;
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(jd_sd_notify("READY=1"), JSCHED_EINVAL);
	setenv("NOTIFY_SOCKET", "/nonexistent/jsched/notify", 1);
	assert_int_equal(jd_sd_notify("READY=1"), JSCHED_EIO);
	unsetenv("NOTIFY_SOCKET");
}

/* In a child (descriptors 3.. are the process's own): pass two sockets as activation. */
static void test_listen_fds(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[32];
		int sv[2];
		int flags;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			_exit(10);
		if (dup2(sv[0], 3) < 0 || dup2(sv[1], 4) < 0)
			_exit(11);
		snprintf(buf, sizeof(buf), "%d", (int)getpid());
		setenv("LISTEN_PID", buf, 1);
		setenv("LISTEN_FDS", "2", 1);
		setenv("LISTEN_FDNAMES", "a:b", 1);
		if (jd_sd_listen_fds() != 2)
			_exit(12);
		flags = fcntl(4, F_GETFD);
		if (flags < 0 || !(flags & FD_CLOEXEC))
			_exit(13);
		if (getenv("LISTEN_PID") || getenv("LISTEN_FDS") || getenv("LISTEN_FDNAMES"))
			_exit(14);
		/* A second call sees nothing: the variables are gone. */
		if (jd_sd_listen_fds() != 0)
			_exit(15);
		/* Meant for another process: ignored, and still unset. */
		setenv("LISTEN_PID", "1", 1);
		setenv("LISTEN_FDS", "1", 1);
		if (jd_sd_listen_fds() != 0 || getenv("LISTEN_FDS"))
			_exit(16);
		setenv("LISTEN_PID", buf, 1);
		setenv("LISTEN_FDS", "two", 1);
		if (jd_sd_listen_fds() != JSCHED_EINVAL)
			_exit(17);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_watchdog(void **state)
{
	char buf[32];

	(void)state;
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(jd_sd_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "30000000", 1);
	assert_int_equal(jd_sd_watchdog_usec(), 30000000);
	snprintf(buf, sizeof(buf), "%d", (int)getpid());
	setenv("WATCHDOG_PID", buf, 1);
	assert_int_equal(jd_sd_watchdog_usec(), 30000000);
	setenv("WATCHDOG_PID", "1", 1);
	assert_int_equal(jd_sd_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "-5", 1);
	assert_int_equal(jd_sd_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notify_unset_is_noop),
		cmocka_unit_test(test_notify_path_socket),
		cmocka_unit_test(test_notify_abstract_socket),
		cmocka_unit_test(test_notify_bad_address),
		cmocka_unit_test(test_listen_fds),
		cmocka_unit_test(test_watchdog),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
