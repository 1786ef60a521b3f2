/* bench/common/daemon.c: a jschedd of a benchmark's own (daemon.h). */
#include "bench/common/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int bench_daemon_start(struct bench_daemon *d, const char *bin, const char *dir, const char *tag,
		       const char *members, const char *client, struct jsched_conn **c)
{
	char conf[320], state[340];
	char *argv[] = {(char *)(uintptr_t)bin, (char *)(uintptr_t)"-c", conf, NULL};
	posix_spawn_file_actions_t fa;
	char **env;
	size_t n_env;
	FILE *f;
	int rc;

	memset(d, 0, sizeof(*d));
	d->pid = -1;
	*c = NULL;
	if (dir) {
		snprintf(d->dir, sizeof(d->dir), "%s", dir);
	} else {
		snprintf(d->dir, sizeof(d->dir), "/tmp/bench-%s-XXXXXX", tag);
		if (!mkdtemp(d->dir)) {
			fprintf(stderr, "bench: mkdtemp %s: %s\n", d->dir, strerror(errno));
			return JSCHED_EIO;
		}
		d->own_dir = true;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/jschedd.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/jschedd.log", d->dir);
	snprintf(conf, sizeof(conf), "%s/jschedd.json", d->dir);
	if (!(f = fopen(conf, "w"))) {
		fprintf(stderr, "bench: %s: %s\n", conf, strerror(errno));
		return JSCHED_EIO;
	}
	fprintf(f, "{\"socket\": \"%s\"%s%s}\n", d->sock, members ? ", " : "", members ? members : "");
	fclose(f);
	/* Its journal, where systemd's StateDirectory= would put it, is in its folder (unless
	 * members name a journal.dir): never the system's /var/lib/jschedd. */
	snprintf(state, sizeof(state), "STATE_DIRECTORY=%s/state", d->dir);
	for (n_env = 0; environ[n_env]; n_env++)
		;
	if (!(env = calloc(n_env + 2, sizeof(*env))))
		return JSCHED_ENOMEM;
	for (size_t i = 0, k = 0; i <= n_env; i++)
		if (i == n_env)
			env[k] = state;
		else if (strncmp(environ[i], "STATE_DIRECTORY=", 16) != 0)
			env[k++] = environ[i];
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, d->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&d->pid, bin, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (rc != 0) {
		fprintf(stderr, "bench: cannot start %s: %s\n", bin, strerror(rc));
		d->pid = -1;
		return JSCHED_EIO;
	}
	for (int i = 0; i < 1000; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (jsched_connect(d->sock, client, c) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "bench: %s did not answer on %s within 10 s (its log: %s)\n", bin, d->sock,
		d->log);
	bench_daemon_kill(d);
	return JSCHED_ECONNECT;
}

void bench_daemon_kill(struct bench_daemon *d)
{
	if (d->pid > 0)
		kill(d->pid, SIGKILL);
}

int bench_daemon_stop(struct bench_daemon *d, int sig)
{
	int status = -1;

	if (d->pid > 0) {
		kill(d->pid, sig);
		waitpid(d->pid, &status, 0);
		d->pid = -1;
	}
	if (d->own_dir) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench: could not remove %s\n", d->dir);
		d->own_dir = false;
	}
	return status;
}
