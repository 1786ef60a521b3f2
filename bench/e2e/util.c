/* bench/e2e/util.c: small helpers of the end-to-end benchmark: dying cleanly (no daemon
 * left behind), percentiles, sleeping, and running child programs. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

extern char **environ;

/* The children e2e_die kills: daemons and helpers that would outlive a failed run. */
static pid_t tracked[16];

void e2e_track(pid_t pid)
{
	for (size_t i = 0; i < sizeof(tracked) / sizeof(tracked[0]); i++)
		if (tracked[i] == 0) {
			tracked[i] = pid;
			return;
		}
}

void e2e_untrack(pid_t pid)
{
	for (size_t i = 0; i < sizeof(tracked) / sizeof(tracked[0]); i++)
		if (tracked[i] == pid)
			tracked[i] = 0;
}

/* The temporary folders e2e_die removes (borrowed paths; the owners outlive the run). */
static const char *dirs[8];

void e2e_track_dir(const char *dir, bool track)
{
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (track ? dirs[i] == NULL : dirs[i] == dir) {
			dirs[i] = track ? dir : NULL;
			return;
		}
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	remove(path);
	return 0;
}

void e2e_rm_rf(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* What e2e_die runs before it exits (a server that is not our child, like tsp's). */
static void (*on_die)(void);

void e2e_on_die(void (*fn)(void))
{
	on_die = fn;
}

void e2e_die(const char *fmt, ...)
{
	va_list ap;

	fputs("bench-e2e: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (size_t i = 0; i < sizeof(tracked) / sizeof(tracked[0]); i++)
		if (tracked[i] > 0)
			kill(tracked[i], SIGKILL);
	if (on_die) { /* first: it may need a tracked folder (tsp's socket) */
		void (*fn)(void) = on_die;
		on_die = NULL;
		fn();
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (dirs[i])
			nftw(dirs[i], rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double e2e_percentile(double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t rank = (size_t)ceil(q * (double)n);
	return v[rank == 0 ? 0 : rank - 1];
}

double e2e_median_of(const double *v, size_t n)
{
	double copy[64];

	if (n > 64)
		n = 64;
	memcpy(copy, v, n * sizeof(*v));
	return bench_median(copy, n);
}

void e2e_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

pid_t e2e_spawn(char *const argv[], char *const extra_env[], bool keep_out)
{
	static char *env[512];
	size_t n = 0;
	posix_spawn_file_actions_t fa;
	pid_t pid;

	/* The extra variables first, so they win over inherited ones of the same name. */
	for (size_t i = 0; extra_env && extra_env[i] && n < 256; i++)
		env[n++] = extra_env[i];
	for (size_t i = 0; environ[i] && n < sizeof(env) / sizeof(env[0]) - 1; i++)
		env[n++] = environ[i];
	env[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!keep_out) {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		e2e_die("cannot run %s: %s", argv[0], strerror(rc));
	return pid;
}

pid_t e2e_spawn_server(char *const argv[], const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		e2e_die("fork: %s", strerror(errno));
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0600);

		/* Die with the benchmark, even when it is killed before it can stop us. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent || in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	e2e_track(pid);
	return pid;
}

void e2e_wait_ok(pid_t pid, const char *what)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			e2e_die("waitpid %s: %s", what, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		e2e_die("%s failed (status 0x%x)", what, (unsigned)status);
}

void e2e_run_ok(char *const argv[], char *const extra_env[], const char *what)
{
	e2e_wait_ok(e2e_spawn(argv, extra_env, false), what);
}
