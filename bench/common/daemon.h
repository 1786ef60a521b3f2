/* bench/common/daemon.h: a jschedd of a benchmark's own, on a socket in a folder of its
 * own, started and connected to in one call.  Apart from bench.h because it links
 * libjsched (the harness itself links only jansson): a benchmark that uses it links
 * $(BENCH_DAEMON_OBJ) before $(LIBJSCHED_A) (bench/build.mk). */
#ifndef BENCH_DAEMON_H
#define BENCH_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>

#include <jsched/jsched.h>

struct bench_daemon {
	char dir[256];		/* its folder: jschedd.json, jschedd.sock, jschedd.log */
	char sock[300];
	char log[300];
	pid_t pid;		/* -1 when not running */
	bool own_dir;		/* made by bench_daemon_start (removed by bench_daemon_stop) */
};

/* bench_daemon_start: start jschedd `bin` with -c DIR/jschedd.json, a config of
 * `"socket": DIR/jschedd.sock` followed by `members` (more JSON members, or NULL), its
 * stderr in DIR/jschedd.log; DIR is `dir` if not NULL (it must exist), else a new
 * /tmp/bench-TAG-XXXXXX; STATE_DIRECTORY=DIR/state in its environment, so that its
 * journal (unless members set journal.dir) is there, never the system's.  Then connect as
 * `client` (NULL: the default name), trying for up to 10 s.  Returns 0 with *c set, or a negative JSCHED_E* (the daemon, if started,
 * is killed again) with a reason on stderr. */
int bench_daemon_start(struct bench_daemon *d, const char *bin, const char *dir, const char *tag,
		       const char *members, const char *client, struct jsched_conn **c);

/* bench_daemon_stop: send the daemon `sig` (SIGTERM: a graceful exit; SIGKILL when what
 * is left does not matter), wait for it, and remove its folder if bench_daemon_start made
 * it.  Safe when it is not running.  Returns its wait status (-1 if none). */
int bench_daemon_stop(struct bench_daemon *d, int sig);

/* bench_daemon_kill: SIGKILL, no wait: for a benchmark's die() on its way out. */
void bench_daemon_kill(struct bench_daemon *d);

#endif /* BENCH_DAEMON_H */
