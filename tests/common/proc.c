/* tests/common/proc.c: what the tests that run programs share (see proc.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/proc.h"

const char *jtc_build_dir(void)
{
	static char dir[PATH_MAX];
	const char *b = getenv("JSCHED_BUILD_DIR");

	if (!dir[0] && !realpath(b && b[0] ? b : "build/rel", dir)) {
		dir[0] = '\0';
		fail_msg("build directory %s: %s", b && b[0] ? b : "build/rel", strerror(errno));
	}
	return dir;
}

void jtc_tmpdir(char *buf, size_t len, const char *tag)
{
	int n = snprintf(buf, len, "/tmp/%s.XXXXXX", tag);

	if (n < 0 || (size_t)n >= len)
		fail_msg("temp dir name for %s does not fit in %zu bytes", tag, len);
	if (!mkdtemp(buf))
		fail_msg("mkdtemp %s: %s", buf, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

int jtc_rm_rf(const char *path)
{
	if (getenv("JDT_KEEP")) {
		fprintf(stderr, "keeping %s\n", path);
		return 0;
	}
	if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

/* child: the forked side of jtc_spawn; does not return. */
static void child(const struct jtc_spawn *how, const struct passwd *pw, char *const argv[])
{
	int null = open("/dev/null", O_RDWR);
	int log = -1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (how->log)
		log = open(how->log, O_WRONLY | O_CREAT | (how->log_append ? O_APPEND : O_TRUNC),
			   0644);
	if (null >= 0) {
		dup2(null, 0);
		dup2(how->log_stdout && log >= 0 ? log : null, 1);
		dup2(log >= 0 ? log : null, 2);
	}
	if (pw && (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		   setuid(pw->pw_uid) < 0 || (pw->pw_uid != 0 && setuid(0) == 0)))
		_exit(126);
	if (how->cwd && chdir(how->cwd) < 0) {
		fprintf(stderr, "chdir %s: %s\n", how->cwd, strerror(errno));
		_exit(127);
	}
	for (size_t i = 0; how->env && how->env[i]; i++)
		putenv((char *)(uintptr_t)how->env[i]);
	execvp(argv[0], argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

pid_t jtc_spawn(const struct jtc_spawn *how, char *const argv[])
{
	static const struct jtc_spawn defaults;
	struct passwd *pw = NULL;
	pid_t pid;

	if (!how)
		how = &defaults;
	if (how->user && !(pw = getpwnam(how->user)))
		fail_msg("no user %s", how->user);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0)
		child(how, pw, argv);
	return pid;
}

int jtc_wait_exit(pid_t pid, int ms)
{
	int st;

	for (int i = 0; i <= ms / 10; i++) {
		pid_t p = waitpid(pid, &st, WNOHANG);

		if (p == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (p < 0)
			fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
		jtc_sleep_ms(10);
	}
	return -1;
}

int jtc_stop(pid_t pid, int sig, int ms)
{
	int rc;

	kill(pid, sig);
	rc = jtc_wait_exit(pid, ms);
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("process %d did not exit within %d ms of signal %d", (int)pid, ms, sig);
	}
	return rc;
}

void jtc_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void jtc_print_tail(const char *path, int lines)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;
	long size;
	char *p;

	if (!f) {
		fprintf(stderr, "(no log at %s)\n", path);
		return;
	}
	/* The last 64 KiB hold more lines than anyone reads on a failure. */
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)sizeof(buf) - 1)
		fseek(f, size - (long)sizeof(buf) + 1, SEEK_SET);
	else
		rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = buf + n;
	if (p > buf && p[-1] == '\n')
		p--;
	while (p > buf && lines > 0)
		if (*--p == '\n')
			lines--;
	if (*p == '\n')
		p++;
	fputs(p, stderr);
	if (n && buf[n - 1] != '\n')
		fputc('\n', stderr);
}

int jtc_copy_file(const char *src, const char *dst, mode_t mode)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0) {
		rc = -errno;
		goto out_in;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out_out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out_out;
			}
			off += w;
		}
	}
	/* open's mode is filtered through the umask; the copy gets exactly `mode`. */
	if (fchmod(out, mode) < 0)
		rc = -errno;
out_out:
	if (close(out) < 0 && rc == 0)
		rc = -errno;
out_in:
	close(in);
	return rc;
}
