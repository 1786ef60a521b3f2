/* daemon/run/runas.c: jschedd-runas, the helper that starts a command as another user,
 * and in its job's control group.
 *
 *   jschedd-runas [-c DIR]... UID|- GID|- CWD -- ARGV...
 *
 * Each -c DIR is a control group directory the command must run in (daemon/run/cgroup.h):
 * the helper enters them first, while it still may, so the command's first instruction
 * already runs inside its job's group.  "-" for UID and GID keeps the identity (jschedd
 * running as the job's owner, cgroups on).
 *
 * jschedd, running as root, starts it (through posix_spawn, in the command's own new session,
 * with the command's environment and pipes already in place) for every exec job whose
 * owner is not root.  It sets the supplementary groups of UID's user (initgroups; just GID
 * if UID has no passwd entry), then GID, then UID, checks that root cannot be regained,
 * enters CWD as that user, and execs ARGV[0], looked up in the environment's PATH or, when
 * there is none, in /usr/local/bin:/usr/bin:/bin (PROTOCOL.md section 4); a file the kernel
 * cannot run fails with "exec format error" (no sh behind it, as without the helper).
 *
 * Why a helper: libuv's child calls setgroups(0, NULL) before setgid/setuid whenever
 * UV_PROCESS_SETUID or SETGID is given, so a command could never keep its user's groups,
 * and it enters the working directory while still root.  See daemon/run/exec.h.
 *
 * If anything fails before the exec, the reason goes to descriptor 3 (a pipe jschedd
 * reads; it is close-on-exec here, so a successful exec closes it with nothing written)
 * and the helper exits 127: the job then ends failed with cause "spawn" and that reason.
 * Nothing but libc (and cgroup.c's jd_cg_enter): it starts in well under a millisecond.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/run/cgroup.h"

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...);

/* lc: strerror(e) with a lower-case first letter, as jschedd words its own reasons
 * ("no such file or directory"). */
static const char *lc(int e)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s", strerror(e));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

static void fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > 0 && write(3, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0)
		_exit(127);
	_exit(127);
}

static unsigned long number(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v >= 0xffffffffUL)
		fail("jschedd-runas: bad %s '%s'", what, s);
	return v;
}

/* exec_path: argv[0] as it is when it has a '/', else in each directory of `path` (a
 * PATH value) in turn, as jschedd looks a command up for a start without the helper
 * (process.c).  Returns the most telling errno (EACCES over ENOENT) if none worked.  Not
 * execvp: that hands a file the kernel cannot run (ENOEXEC, a script without "#!") to
 * sh, where the start without the helper fails it; here ENOEXEC ends the search with
 * that error, so the same file fails the same way on both paths. */
static int exec_path(char **argv, const char *path)
{
	const char *dir = path;
	int err = ENOENT;
	char file[4096];

	if (strchr(argv[0], '/')) {
		execv(argv[0], argv);
		return errno;
	}
	while (*dir) {
		size_t n = strcspn(dir, ":");

		snprintf(file, sizeof(file), "%.*s/%s", (int)n, dir, argv[0]);
		execv(file, argv);
		if (errno == ENOEXEC)
			return errno;
		if (errno != ENOENT && errno != ENOTDIR)
			err = errno;
		dir += n + (dir[n] == ':');
	}
	return err;
}

int main(int argc, char **argv)
{
	const char *groups[JD_CG_MAX_HIER];
	size_t ngroups = 0;
	uid_t uid;
	gid_t gid;
	const char *cwd;
	struct passwd *pw;
	char **cmd;
	int a = 1, err;

	fcntl(3, F_SETFD, FD_CLOEXEC);
	while (a + 1 < argc && strcmp(argv[a], "-c") == 0 && ngroups < JD_CG_MAX_HIER) {
		groups[ngroups++] = argv[a + 1];
		a += 2;
	}
	if (argc - a < 5 || strcmp(argv[a + 3], "--") != 0)
		fail("usage: jschedd-runas [-c DIR]... UID|- GID|- CWD -- ARGV...");
	if ((err = jd_cg_enter(groups, ngroups)) < 0)
		fail("cannot enter the job's control group: %s", lc(-err));
	cwd = argv[a + 2];
	cmd = argv + a + 4;
	if (strcmp(argv[a], "-") != 0) {
		uid = (uid_t)number(argv[a], "uid");
		gid = (gid_t)number(argv[a + 1], "gid");
		if (uid == 0)
			fail("jschedd-runas: refusing to run as root");
		pw = getpwuid(uid);
		if (pw ? initgroups(pw->pw_name, gid) < 0 : setgroups(1, &gid) < 0)
			fail("cannot set the groups of uid %u: %s", (unsigned)uid, lc(errno));
		if (setgid(gid) < 0)
			fail("cannot set gid %u: %s", (unsigned)gid, lc(errno));
		if (setuid(uid) < 0)
			fail("cannot set uid %u: %s", (unsigned)uid, lc(errno));
		if (setuid(0) == 0 || geteuid() == 0)
			fail("jschedd-runas: root could be regained after switching to uid %u",
			     (unsigned)uid);
	}
	if (chdir(cwd) < 0)
		fail("cannot enter the working directory %s: %s", cwd, lc(errno));
	err = exec_path(cmd, getenv("PATH") ? getenv("PATH") : DEFAULT_PATH);
	fail("%s: %s", lc(err), cmd[0]); /* "no such file or directory: mak" */
}
