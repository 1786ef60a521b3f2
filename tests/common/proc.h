/* tests/common/proc.h: what the tests that run programs share.
 *
 * Where the build is (jtc_build_dir), a fresh temp directory and its removal, a child
 * started with its output in a log file that dies with the test (jtc_spawn), bounded
 * waits for its exit, and a copy of a built program where another user can run it
 * (jtc_copy_file: a test that starts jschedd as an unprivileged user cannot run it from
 * the checkout, which may sit in a directory only its owner can enter, such as a clone
 * under `mktemp -d` or a 0700 home).  Every wait here is bounded; a bound that runs out
 * fails the test with a message (cmocka's fail_msg) instead of hanging it.
 */
#ifndef JTC_PROC_H
#define JTC_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* jtc_build_dir: the build directory as an absolute path ($JSCHED_BUILD_DIR, which
 * `make test` sets, else build/rel); a static string.  Fails the test if it is absent. */
const char *jtc_build_dir(void);

/* jtc_tmpdir: make a new directory /tmp/<tag>.XXXXXX (mode 0700) and write its path
 * into buf.  Fails the test if it cannot. */
void jtc_tmpdir(char *buf, size_t len, const char *tag);

/* jtc_rm_rf: remove `path` and everything under it (symlinks are removed, not
 * followed).  With $JDT_KEEP set, keeps it and says where.  Returns 0 or -errno. */
int jtc_rm_rf(const char *path);

/* How jtc_spawn starts a child.  Zero (or NULL) members: the defaults. */
struct jtc_spawn {
	const char *log;		/* stderr into this file (NULL: /dev/null) */
	bool log_stdout;		/* stdout into the log too (else /dev/null) */
	bool log_append;		/* append to the log (else truncate it) */
	const char *user;		/* become this user (groups, gid, uid) before exec */
	const char *cwd;		/* working directory (NULL: the test's) */
	const char *const *env;		/* NAME=VALUE entries added to the environment */
};

/* jtc_spawn: fork and exec argv (argv[0] a path, or a name looked up in PATH) the way
 * `how` says (NULL: all defaults); stdin is /dev/null, and the child gets SIGKILL when
 * the test dies, so a failed assertion leaves nothing running.  Returns the child's pid;
 * a child that cannot start exits 127 (126: it could not become `how->user`). */
pid_t jtc_spawn(const struct jtc_spawn *how, char *const argv[]);

/* jtc_wait_exit: wait up to `ms` for the child `pid` to exit; returns its exit status,
 * 128 + the signal that killed it, or -1 if it is still running. */
int jtc_wait_exit(pid_t pid, int ms);

/* jtc_stop: send `sig` to the child and wait up to `ms` for it; returns its status as
 * jtc_wait_exit.  A child that outlives the bound is killed and the test fails. */
int jtc_stop(pid_t pid, int sig, int ms);

/* jtc_sleep_ms: a short pause for polling loops (never a pass/fail criterion). */
void jtc_sleep_ms(int ms);

/* jtc_print_tail: copy the last `lines` lines of the file `path` to stderr (to show a
 * child's log when a test fails); says so if the file cannot be read. */
void jtc_print_tail(const char *path, int lines);

/* jtc_copy_file: copy the file `src` to `dst` (created or truncated) with mode `mode`.
 * Returns 0, or -errno of the step that failed. */
int jtc_copy_file(const char *src, const char *dst, mode_t mode);

#endif /* JTC_PROC_H */
