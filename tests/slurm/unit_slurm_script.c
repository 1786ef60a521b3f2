/* tests/slurm/unit_slurm_script.c: the slurm backend's batch script (slurm_script.h).
 *
 * No Slurm: each script is run here by /bin/sh (and by bash and dash when present, the
 * shells a compute node's /bin/sh is likely to be), with an argv whose command is this
 * very program in its --dump-argv mode, which writes its arguments NUL-separated.  So a
 * hostile word passes only if the shell handed it to the command byte for byte: quotes,
 * $(...), backquotes, globs, newlines, control bytes, invalid UTF-8, an empty word, a
 * 64 KiB word.  A marker file that a command substitution would create must not exist.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/run/slurm_script.h"

static char self[PATH_MAX];
static char tmpdir[PATH_MAX];

/* run_script: run text with `shell` in an environment of env (NULL-terminated); stdout
 * into out (NUL-terminated, *outlen bytes), stderr into err.  Returns the wait status. */
static int run_script(char *shell, const char *text, char *const *env, char *out, size_t cap,
		      size_t *outlen, char *err, size_t errcap)
{
	char path[PATH_MAX + 16];
	int fd, po[2], pe[2], status = -1;
	size_t n = 0, m = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/script", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(pipe(po), 0);
	assert_int_equal(pipe(pe), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {shell, path, NULL};

		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		execve(shell, argv, env);
		_exit(99);
	}
	close(po[1]);
	close(pe[1]);
	/* stderr is small (one line at most); drain stdout first, then stderr. */
	for (;;) {
		ssize_t r = read(po[0], out + n, cap - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		assert_true(n < cap - 1);
	}
	for (;;) {
		ssize_t r = read(pe[0], err + m, errcap - 1 - m);

		if (r <= 0)
			break;
		m += (size_t)r;
		if (m >= errcap - 1)
			break;
	}
	out[n] = '\0';
	err[m] = '\0';
	*outlen = n;
	close(po[0]);
	close(pe[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static char *shells[] = {"/bin/sh", "/bin/bash", "/bin/dash"};

static void test_quote(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(jd_sh_quote("abc", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "'abc'");
	assert_int_equal(jd_sh_quote("a'b", buf, sizeof(buf)), 8);
	assert_string_equal(buf, "'a'\\''b'");
	assert_int_equal(jd_sh_quote("", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "''");
	/* Too small: the needed length, and a NUL-terminated prefix. */
	assert_int_equal(jd_sh_quote("abcdef", buf, 4), 8);
	assert_string_equal(buf, "'ab");
	assert_int_equal(jd_sh_quote("x", NULL, 0), 3);
}

static void test_hostile_argv(void **state)
{
	static char big[65537];
	char marker[PATH_MAX + 16], subst[PATH_MAX + 64], back[PATH_MAX + 64];
	char ctl[40], high[8] = {(char)0xff, (char)0xfe, (char)0xc3, 'x', (char)0x80, 0};
	char *hostile[] = {
		"'", "''", "a'b'c", "'\\''", "\"", "\\", "\\'", "$HOME", "${HOME}", "$(id)", "`id`",
		subst, back, "*", "?", "[a]", "~", "~root", "{a,b}", "!", "!!", ";", "&&", "|", ">x",
		"<x", "a b", " lead", "trail ", "\t", "\n", "one\ntwo", "\r\n", "--", "-n", "-e", "%s%n",
		"#no comment", "x=y", "", ctl, high, big, "last",
	};
	size_t nh = sizeof(hostile) / sizeof(hostile[0]);
	char *argv[64];
	char *env[] = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", NULL};
	static char out[1 << 18];
	char err[4096];

	(void)state;
	snprintf(marker, sizeof(marker), "%s/pwned", tmpdir);
	snprintf(subst, sizeof(subst), "$(touch %s)", marker);
	snprintf(back, sizeof(back), "`touch %s`", marker);
	for (int i = 1; i < 32; i++)
		ctl[i - 1] = (char)i;
	ctl[31] = 0x7f;
	ctl[32] = 0;
	memset(big, 'q', sizeof(big) - 1);
	big[1000] = '\'';
	big[2000] = '\n';
	argv[0] = self;
	argv[1] = "--dump-argv";
	for (size_t i = 0; i < nh; i++)
		argv[2 + i] = hostile[i];
	argv[2 + nh] = NULL;

	for (size_t k = 0; k < sizeof(shells) / sizeof(shells[0]); k++) {
		char *text;
		size_t len, off = 0;
		int st;

		if (access(shells[k], X_OK) != 0)
			continue;
		text = jd_slurm_script(argv, tmpdir, 1, 42);
		assert_non_null(text);
		st = run_script(shells[k], text, env, out, sizeof(out), &len, err, sizeof(err));
		free(text);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("%s: status %d, stderr: %s", shells[k], st, err);
		for (size_t i = 0; i < nh; i++) {
			size_t l = strlen(hostile[i]);

			if (off + l + 1 > len || memcmp(out + off, hostile[i], l) != 0 || out[off + l])
				fail_msg("%s: word %zu (%.20s...) came out changed", shells[k], i, hostile[i]);
			off += l + 1;
		}
		assert_int_equal(off, len);
		assert_int_equal(access(marker, F_OK), -1);
	}
}

static void test_cwd_quoted(void **state)
{
	char dir[PATH_MAX + 64], out[PATH_MAX + 64], err[512];
	char *argv[] = {"/bin/pwd", "-P", NULL};
	char *env[] = {NULL};
	size_t len;
	char *text;
	int st;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/it's $(x) `y` dir", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	text = jd_slurm_script(argv, dir, 0, 1);
	assert_non_null(text);
	st = run_script("/bin/sh", text, env, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	strcat(dir, "\n");
	assert_string_equal(out, dir);
}

static void test_search_without_path(void **state)
{
	char *argv[] = {"printf", "%s-%s", "a", "b", NULL};
	char *env[] = {NULL};
	char out[256], err[512];
	size_t len;
	char *text;
	int st;

	(void)state;
	/* No PATH in the job's environment: the default directories, and no PATH set. */
	text = jd_slurm_script(argv, "/", 0, 7);
	assert_non_null(text);
	st = run_script("/bin/sh", text, env, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_string_equal(out, "a-b");
	argv[0] = "env";
	argv[1] = NULL;
	text = jd_slurm_script(argv, "/", 0, 7);
	st = run_script("/bin/sh", text, env, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_null(strstr(out, "PATH="));
}

static void test_not_found_and_bad_cwd(void **state)
{
	char *argv[] = {"no-such-command-'x", NULL};
	char *env_path[] = {"PATH=/usr/bin:/bin", NULL}, *env_none[] = {NULL};
	char out[256], err[512];
	size_t len;
	char *text;
	int st;

	(void)state;
	text = jd_slurm_script(argv, "/", 0, 7);
	st = run_script("/bin/sh", text, env_none, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 127);
	assert_non_null(strstr(err, "jschedd: no such command: no-such-command-'x"));
	text = jd_slurm_script(argv, "/", 1, 7);
	st = run_script("/bin/sh", text, env_path, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 127);
	argv[0] = "/bin/true";
	text = jd_slurm_script(argv, "/nonexistent/dir", 1, 7);
	st = run_script("/bin/sh", text, env_path, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 126);
	assert_non_null(strstr(err, "cannot enter the working directory"));
}

static void test_status_and_signal_pass_through(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
	char *env[] = {NULL};
	char out[64], err[512];
	size_t len;
	char *text;
	int st;

	(void)state;
	text = jd_slurm_script(argv, "/", 0, 1);
	st = run_script("/bin/sh", text, env, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	/* The command is exec'd: its own death by a signal is the script's status. */
	argv[2] = "kill -TERM $$";
	text = jd_slurm_script(argv, "/", 0, 1);
	st = run_script("/bin/sh", text, env, out, sizeof(out), &len, err, sizeof(err));
	free(text);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == 15);
}

static void test_dash_argv0_refused(void **state)
{
	char *argv[] = {"-c", "x", NULL};

	(void)state;
	errno = 0;
	assert_null(jd_slurm_script(argv, "/", 1, 1));
	assert_int_equal(errno, EINVAL);
}

static int dump_argv(int argc, char **argv)
{
	for (int i = 2; i < argc; i++)
		if (fwrite(argv[i], 1, strlen(argv[i]) + 1, stdout) != strlen(argv[i]) + 1)
			return 1;
	return fflush(stdout) != 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_hostile_argv),
		cmocka_unit_test(test_cwd_quoted),
		cmocka_unit_test(test_search_without_path),
		cmocka_unit_test(test_not_found_and_bad_cwd),
		cmocka_unit_test(test_status_and_signal_pass_through),
		cmocka_unit_test(test_dash_argv0_refused),
	};
	char cmd[PATH_MAX + 16];
	int rc;

	if (argc >= 2 && strcmp(argv[1], "--dump-argv") == 0)
		return dump_argv(argc, argv);
	if (!realpath("/proc/self/exe", self))
		return 1;
	snprintf(tmpdir, sizeof(tmpdir), "%s/jsched-script.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
