/* tests/systemd/test_systemd.c: jschedd under systemd's protocols, with the real daemon.
 *
 * - The unit files, generated from the systemd/<unit>.in templates with ExecStart pointing at the built
 *   jschedd, pass `systemd-analyze verify` (system and user); a unit whose ExecStart does
 *   not exist fails it, so the check has teeth.
 * - Started directly with $NOTIFY_SOCKET set to a datagram socket the test binds: the
 *   first message is READY=1 with a STATUS= line, and by then the socket accepts (one
 *   connect, no retry); with $WATCHDOG_USEC the daemon pings WATCHDOG=1; a shutdown sends
 *   STOPPING=1.
 * - Socket activation: under `systemd-socket-activate -l PATH`, a client's connection
 *   starts jschedd, which takes the listening socket from $LISTEN_FDS, answers, and
 *   leaves the socket file (the manager's) in place when it exits.
 * A tool that is missing (systemd-analyze, systemd-socket-activate) skips its test with a
 * message.  Every wait is bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsched/jsched.h"
#include "tests/common/proc.h"

static const char *build;	/* absolute build dir */
static char dir[64];		/* this test's temp dir */

static int setup(void **state)
{
	(void)state;
	build = jtc_build_dir();
	jtc_tmpdir(dir, sizeof(dir), "jsd");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return jtc_rm_rf(dir) == 0 ? 0 : -1;
}

static bool have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* gen_unit: systemd/<name>.in with the install paths filled in, ExecStart in bindir. */
static void gen_unit(const char *name, const char *out, const char *bindir)
{
	char cmd[16384];

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p $(dirname %s) && sed -e 's|@BINDIR@|%s|g' -e 's|@SYSCONFDIR@|/etc|g' "
		 "-e 's|@DOCDIR@|/usr/share/doc/jschedd|g' -e 's|@LIBEXECDIR@|/usr/libexec|g' "
		 "systemd/%s.in > %s",
		 out, bindir, name, out);
	assert_int_equal(system(cmd), 0);
}

static int verify(const char *flags, const char *unit_dir, const char *units)
{
	char cmd[16384];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && XDG_RUNTIME_DIR=%s systemd-analyze %s verify --man=no %s >%s/verify.log 2>&1",
		 unit_dir, dir, flags, units, dir);
	return system(cmd);
}

static void test_units_verify(void **state)
{
	char bindir[PATH_MAX + 8], path[PATH_MAX + 64], sys[128], user[128];

	(void)state;
	if (!have("systemd-analyze")) {
		fprintf(stderr, "skipped: systemd-analyze is not installed\n");
		skip();
	}
	snprintf(bindir, sizeof(bindir), "%s/bin", build);
	snprintf(sys, sizeof(sys), "%s/units", dir);
	snprintf(user, sizeof(user), "%s/units/user", dir);
	snprintf(path, sizeof(path), "%s/jschedd.service", sys);
	gen_unit("jschedd.service", path, bindir);
	snprintf(path, sizeof(path), "%s/jschedd.socket", sys);
	gen_unit("jschedd.socket", path, bindir);
	snprintf(path, sizeof(path), "%s/jschedd.service", user);
	gen_unit("user/jschedd.service", path, bindir);
	snprintf(path, sizeof(path), "%s/jschedd.socket", user);
	gen_unit("user/jschedd.socket", path, bindir);
	if (verify("", sys, "jschedd.service jschedd.socket") != 0 ||
	    verify("--user", user, "jschedd.service jschedd.socket") != 0) {
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "cat %s/verify.log >&2", dir);
		assert_int_equal(system(cmd), 0);
		fail_msg("systemd-analyze verify failed");
	}
	/* The same check fails when ExecStart names no binary. */
	snprintf(path, sizeof(path), "%s/bad/jschedd.service", dir);
	gen_unit("jschedd.service", path, "/nonexistent/bin");
	snprintf(path, sizeof(path), "%s/bad", dir);
	assert_int_not_equal(verify("", path, "jschedd.service"), 0);
}

/* notify_bind: a datagram socket at <dir>/<name> (the test's NOTIFY_SOCKET). */
static int notify_bind(const char *name, char *path, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(path, len, "%s/%s", dir, name);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* notify_until: read messages (bounded 30 s) until one contains `what`; returns it
 * (static buffer). */
static const char *notify_until(int fd, const char *what)
{
	static char msg[4097];

	for (int i = 0; i < 300; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, msg, sizeof(msg) - 1, 0);
		if (n <= 0)
			continue;
		msg[n] = '\0';
		if (strstr(msg, what))
			return msg;
	}
	fail_msg("no %s from jschedd within 30 s", what);
	return NULL;
}

/* start: start argv with extra environment entries, its output in <dir>/jschedd.log. */
static pid_t start(char *const argv[], const char *const *env)
{
	char log[128];
	struct jtc_spawn how = {.log = log, .log_stdout = true, .log_append = true, .env = env};

	snprintf(log, sizeof(log), "%s/jschedd.log", dir);
	return jtc_spawn(&how, argv);
}

static int wait_exit(pid_t pid)
{
	int rc = jtc_wait_exit(pid, 30000);

	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("jschedd did not exit within 30 s");
	}
	return rc;
}

static void shutdown_daemon(const char *sock)
{
	struct jsched_conn *c = NULL;
	char *reply = NULL;

	assert_int_equal(jsched_connect(sock, NULL, &c), 0);
	assert_true(jsched_request(c, "{\"op\": \"shutdown\"}", &reply) >= 0);
	assert_non_null(strstr(reply, "\"ok\":true"));
	jsched_free(reply);
	jsched_close(c);
}

static void test_ready_status_watchdog_stopping(void **state)
{
	char npath[128], sock[128], conf[128], bin[PATH_MAX + 16], env_n[160];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", conf, NULL};
	const char *env[] = {env_n, "WATCHDOG_USEC=200000", NULL};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *m;
	int nfd, cfd;
	pid_t pid;
	FILE *f;

	(void)state;
	nfd = notify_bind("notify", npath, sizeof(npath));
	snprintf(env_n, sizeof(env_n), "NOTIFY_SOCKET=%s", npath);
	snprintf(sock, sizeof(sock), "%s/direct.sock", dir);
	snprintf(conf, sizeof(conf), "%s/direct.json", dir);
	snprintf(bin, sizeof(bin), "%s/bin/jschedd", build);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "{\"socket\": \"%s\", \"workers\": 1, \"journal\": {\"dir\": \"%s/direct.journal\"}}\n",
		sock, dir);
	fclose(f);
	pid = start(argv, env);
	m = notify_until(nfd, "READY=1");
	assert_non_null(strstr(m, "STATUS=serving"));
	/* READY means the socket accepts now: one connect, no retry. */
	cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(cfd);
	notify_until(nfd, "WATCHDOG=1");
	shutdown_daemon(sock);
	m = notify_until(nfd, "STOPPING=1");
	assert_non_null(strstr(m, "STATUS=draining"));
	assert_int_equal(wait_exit(pid), 0);
	close(nfd);
}

static void test_socket_activation(void **state)
{
	char npath[128], sock[128], listen_arg[160], env_arg[160], bin[PATH_MAX + 16],
		state_arg[200];
	/* No config: the defaults, with the journal where systemd's StateDirectory= would
	 * say ($STATE_DIRECTORY). */
	char *argv[] = {(char *)(uintptr_t)"systemd-socket-activate", (char *)(uintptr_t)"-l",
			sock, (char *)(uintptr_t)"-E", env_arg, (char *)(uintptr_t)"-E", state_arg, bin,
			(char *)(uintptr_t)"--config-optional", (char *)(uintptr_t)"/nonexistent/jschedd.json",
			NULL};
	struct jsched_conn *c = NULL;
	struct stat st;
	const char *m;
	uint64_t id = 0;
	struct jsched_spec *spec = NULL;
	struct jsched_result *res = NULL;
	int nfd;
	pid_t pid;

	(void)state;
	(void)listen_arg;
	if (!have("systemd-socket-activate")) {
		fprintf(stderr, "skipped: systemd-socket-activate is not installed\n");
		skip();
	}
	nfd = notify_bind("notify2", npath, sizeof(npath));
	snprintf(env_arg, sizeof(env_arg), "NOTIFY_SOCKET=%s", npath);
	snprintf(state_arg, sizeof(state_arg), "STATE_DIRECTORY=%s/state", dir);
	snprintf(sock, sizeof(sock), "%s/activated.sock", dir);
	snprintf(bin, sizeof(bin), "%s/bin/jschedd", build);
	pid = start(argv, NULL);
	/* The socket exists before jschedd runs; the first connection starts it.  The file
	 * appears at the manager's bind, a moment before its listen: until then a connect is
	 * refused (JSCHED_ECONNECT, seen once under TSan), so try until one is taken. */
	int rc = JSCHED_ECONNECT;
	for (int i = 0; i < 3000 && (rc = jsched_connect(sock, NULL, &c)) == JSCHED_ECONNECT; i++)
		jtc_sleep_ms(10);
	assert_int_equal(rc, 0);
	assert_int_equal(stat(sock, &st), 0);
	m = notify_until(nfd, "READY=1");
	assert_non_null(strstr(m, sock));
	assert_int_equal(jsched_spec_call("echo", "{\"via\": \"activation\"}", &spec), 0);
	assert_int_equal(jsched_submit(c, spec, &id), 0);
	assert_int_equal(jsched_wait(c, id, 30000, &res), 0);
	assert_int_equal(res->state, JSCHED_STATE_SUCCEEDED);
	jsched_result_free(res);
	jsched_spec_free(spec);
	jsched_close(c);
	shutdown_daemon(sock);
	notify_until(nfd, "STOPPING=1");
	assert_int_equal(wait_exit(pid), 0);
	/* The socket file is the manager's: jschedd leaves it. */
	assert_int_equal(stat(sock, &st), 0);
	close(nfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_units_verify),
		cmocka_unit_test(test_ready_status_watchdog_stopping),
		cmocka_unit_test(test_socket_activation),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
