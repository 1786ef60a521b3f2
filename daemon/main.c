/* daemon/main.c: jschedd's entry point: the command line, start-up order, the loop, exit.
 *
 * Start-up order matters: the config first (a bad one stops us before anything is
 * touched), then the modules (a module that cannot load stops us too), then the socket
 * (bound while the process is still single-threaded, for the umask trick in server.c),
 * then the workers, then serving.  jschedd always runs in the foreground: systemd (or
 * the user's shell) supervises it; there is no self-daemonising.
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/run/backend.h"
#include "daemon/daemon.h"
#include "daemon/core/clock.h"
#include "daemon/core/log.h"
#include "daemon/sdnotify.h"
#include "daemon/service.h"
#include "daemon/net/metrics.h"
#include "daemon/net/session.h"
#include "jsched_version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jschedd [-c CONFIG] [--check-config] [--check-journal DIR] [--version]\n"
		"               [--test-clock] [--help]\n"
		"\n"
		"Run the job server in the foreground, on the socket named by the config's\n"
		"\"socket\", else $JSCHED_SOCKET, $XDG_RUNTIME_DIR/jschedd.sock or\n"
		"/run/jschedd/jschedd.sock.\n"
		"\n"
		"  -c, --config PATH   the JSON configuration (default: none, built-in defaults)\n"
		"      --config-optional PATH  the same if PATH exists, else the defaults\n"
		"      --check-config  read the configuration, report, and exit (0 if valid)\n"
		"      --check-journal DIR  read the journal in DIR without changing it, report\n"
		"                      what it holds or where it is damaged, exit (0 if sound)\n"
		"      --version       print the version line and exit\n"
		"      --test-clock    for tests only: the wall clock stands still and moves\n"
		"                      only by the admin operation test_clock\n"
		"\n"
		"Signals: SIGTERM graceful shutdown (a second one: immediate); SIGINT immediate;\n"
		"SIGHUP re-read the configuration.\n"
		"Exit status: 0 graceful shutdown, 1 could not start, 2 bad usage, 3 immediate\n"
		"shutdown (jobs were cancelled).\n");
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2) /* linux/close_range.h, Linux 5.11 */
#endif

/* cloexec_inherited: mark close-on-exec every descriptor from 3 up that jschedd was
 * started with, so that no command receives them: a command started directly closes all
 * but its own before its exec (run/process.c), but one started through posix_spawn or
 * jschedd-runas would get whatever its starter left open without close-on-exec (a
 * shell's, a test runner's, a lock's descriptor).  Marked, not closed: a socket passed
 * by socket activation (sdnotify.h) stays usable, and so does what a sanitizer's runtime
 * or an LD_PRELOAD library opened before main.  close_range(CLOSE_RANGE_CLOEXEC) where
 * the kernel has it (5.11), else each entry of /proc/self/fd. */
static void cloexec_inherited(void)
{
	struct dirent *e;
	DIR *dir;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	if (!(dir = opendir("/proc/self/fd")))
		return;
	while ((e = readdir(dir))) {
		int fd = atoi(e->d_name), flags;

		if (fd < 3 || fd == dirfd(dir) || (flags = fcntl(fd, F_GETFD)) < 0)
			continue;
		if (!(flags & FD_CLOEXEC))
			(void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
	}
	closedir(dir);
}

/* JD_OWN_SIGNALS: whether jschedd takes SIGTERM, SIGINT and SIGHUP (1, the daemon's
 * build).  The fuzz target's builds, where this file is the daemon in a thread of the
 * fuzzing process (tests/fuzz/build.mk), pass 0: there the signals are the fuzzer's
 * (libFuzzer's ^C ends a campaign with its statistics), and the harness stops the daemon
 * with the shutdown operation.  When the daemon took them, a ^C shut it down under the
 * harness, whose next request went unanswered: a campaign stopped so wrote two false
 * crash inputs. */
#ifndef JD_OWN_SIGNALS
#define JD_OWN_SIGNALS 1
#endif

static void signal_cb(uv_signal_t *h, int signum)
{
	struct jd_daemon *d = h->data;
	json_t *applied = NULL, *restart = NULL;
	char err[512];

	jd_loop_woke();

	switch (signum) {
	case SIGHUP:
		if (jd_daemon_reload(d, &applied, &restart, err, sizeof(err)) < 0)
			jd_log(JD_LOG_ERR, "reload failed, keeping the running config: %s", err);
		else if (json_array_size(restart) > 0)
			jd_log(JD_LOG_WARN, "reload: %zu changed keys need a restart",
			       json_array_size(restart));
		json_decref(applied);
		json_decref(restart);
		break;
	case SIGTERM:
		jd_daemon_shutdown(d, d->net.state == JD_DRAINING);
		break;
	default:
		jd_daemon_shutdown(d, true);
		break;
	}
}

static void tick_cb(uv_timer_t *t)
{
	struct jd_daemon *d = t->data;

	jd_jobs_trim(&d->jobs);
	jd_clients_forget_idle(&d->clients, jd_now_ms());
	jd_daemon_give_back(d, false);
	jd_metrics_tick(&d->net);
	jd_persist_tick(d); /* compaction: a snapshot when the log has grown */
	jd_service_tick(d); /* STATUS= on change, WATCHDOG=1 (service.c) */
}

static void close_any_cb(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* flush_timeout_cb: the peers had their time to read their last replies. */
static void flush_timeout_cb(uv_timer_t *t)
{
	jd_server_close_all(t->data);
}

/* finish: after the loop stopped: let pending replies drain (bounded: a peer that does
 * not read gets 2 s), close every handle, free everything. */
static int finish(struct jd_daemon *d)
{
	uv_timer_t flush;

	jd_server_stop_accepting(&d->net);
	jd_persist_stop(d); /* durable, then the replies held for it */
	jd_server_flush_all(&d->net);
	if (JD_OWN_SIGNALS) {
		uv_close((uv_handle_t *)&d->sig_term, NULL);
		uv_close((uv_handle_t *)&d->sig_int, NULL);
		uv_close((uv_handle_t *)&d->sig_hup, NULL);
	}
	uv_close((uv_handle_t *)&d->tick, NULL);
	jd_metrics_exports_stop(&d->net);
	jd_runner_stop(&d->runner);
	jd_jobs_stop_timers(&d->jobs);
	uv_timer_init(&d->loop, &flush);
	flush.data = &d->net;
	uv_timer_start(&flush, flush_timeout_cb, 2000, 0);
	uv_unref((uv_handle_t *)&flush);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&flush, NULL);
	jd_server_free(&d->net);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	jd_persist_close_output(d); /* no command runs now */
	if (uv_loop_close(&d->loop) != 0)
		jd_log(JD_LOG_WARN, "a libuv handle was left open at exit");
	jd_jobs_free(&d->jobs);
	jd_clients_free(&d->clients);
	jd_latency_free(&d->net.lat);
	jd_watch_free(&d->net);
	jd_modules_unload(&d->modules);
	jd_config_free(&d->cfg);
	jd_log(JD_LOG_INFO, "exiting with status %d", d->exit_status);
	return d->exit_status;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"config-optional", required_argument, NULL, 'O'},
		{"check-config", no_argument, NULL, 'C'},
		{"check-journal", required_argument, NULL, 'J'},
		{"version", no_argument, NULL, 'V'},
		{"test-clock", no_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct jd_daemon daemon_state;
	struct jd_daemon *d = &daemon_state;
	bool check_only = false;
	char err[1024];
	int opt;

	/* Fresh state on every call: the in-process fuzz target (tests/fuzz/fuzz_daemon.c)
	 * starts the daemon again in the same process. */
	memset(d, 0, sizeof(*d));
	cloexec_inherited();
	jd_log_init();
	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			snprintf(d->config_path, sizeof(d->config_path), "%s", optarg);
			break;
		case 'O':
			/* The units' form: the file if it exists, else the built-in defaults
			 * (creating it later needs a restart, not a reload). */
			if (access(optarg, F_OK) == 0)
				snprintf(d->config_path, sizeof(d->config_path), "%s", optarg);
			break;
		case 'C':
			check_only = true;
			break;
		case 'J':
			return jd_persist_check(optarg);
		case 'T':
			jd_clock_test_start();
			break;
		case 'V':
			printf("%s\n%s\n", JSCHED_VERSION_LINE, jd_backends_build());
			return JD_EXIT_OK;
		case 'h':
			usage(stdout);
			return JD_EXIT_OK;
		default:
			usage(stderr);
			return JD_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "jschedd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return JD_EXIT_USAGE;
	}
	if (jd_config_load(&d->cfg, d->config_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "jschedd: config: %s\n", err);
		return JD_EXIT_FAILURE;
	}
	if (check_only) {
		printf("%s: valid\n", d->config_path[0] ? d->config_path : "(no file)");
		jd_config_free(&d->cfg);
		return JD_EXIT_OK;
	}
	signal(SIGPIPE, SIG_IGN);
	d->start_ns = jd_now_ns();
	d->start_ms = jd_now_ms();
	d->self_uid = getuid();
	snprintf(d->instance, sizeof(d->instance), "%llu-%d", (unsigned long long)d->start_ms,
		 (int)getpid());
	if (jd_modules_load(&d->modules, (const char (*)[4096])d->cfg.modules, d->cfg.n_modules, err,
			    sizeof(err)) < 0 ||
	    jd_daemon_init(d) < 0) {
		fprintf(stderr, "jschedd: %s\n", err[0] ? err : "out of memory");
		return JD_EXIT_FAILURE;
	}
	uv_loop_init(&d->loop);
	/* A socket passed by socket activation is descriptor 3 (sdnotify.h). */
	if (jd_server_listen(&d->net, jd_sd_listen_fds() >= 1 ? 3 : -1, err, sizeof(err)) < 0 ||
	    jd_daemon_start_runner(d, err, sizeof(err)) < 0 ||
	    jd_metrics_exports_start(&d->net, err, sizeof(err)) < 0) {
		fprintf(stderr, "jschedd: %s\n", err);
		jd_server_stop_accepting(&d->net);
		d->exit_status = JD_EXIT_FAILURE;
		uv_walk(&d->loop, close_any_cb, NULL);
		uv_run(&d->loop, UV_RUN_DEFAULT);
		uv_loop_close(&d->loop);
		return JD_EXIT_FAILURE;
	}
	if (JD_OWN_SIGNALS) {
		uv_signal_init(&d->loop, &d->sig_term);
		uv_signal_init(&d->loop, &d->sig_int);
		uv_signal_init(&d->loop, &d->sig_hup);
		d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
		uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
		uv_signal_start(&d->sig_int, signal_cb, SIGINT);
		uv_signal_start(&d->sig_hup, signal_cb, SIGHUP);
	}
	uv_timer_init(&d->loop, &d->tick);
	d->tick.data = d;
	d->watchdog_ms = jd_sd_watchdog_usec() / 2000;
	uv_timer_start(&d->tick, tick_cb, 1000,
		       d->watchdog_ms && d->watchdog_ms < 1000 ? d->watchdog_ms : 1000);
	/* The journal: recovered before the loop runs, so before the socket accepts, and
	 * after the timers exist (recovery queues jobs, which arms the deadline timer). */
	if (jd_persist_start(d, err, sizeof(err)) < 0) {
		fprintf(stderr, "jschedd: %s\n", err);
		jd_server_stop_accepting(&d->net);
		jd_persist_stop(d);
		jd_runner_stop(&d->runner);
		d->exit_status = JD_EXIT_FAILURE;
		uv_walk(&d->loop, close_any_cb, NULL);
		uv_run(&d->loop, UV_RUN_DEFAULT);
		jd_persist_close_output(d);
		uv_loop_close(&d->loop);
		return JD_EXIT_FAILURE;
	}
	if (jd_clock_test_on())
		jd_log(JD_LOG_WARN, "the test clock is on (--test-clock): the wall clock stands "
		       "still and moves only by the test_clock operation; not for production");
	jd_log(JD_LOG_INFO, "%s: %u workers, socket %s", JSCHED_VERSION_LINE,
	       jd_pool_workers(d->runner.pool), d->net.srv.path);
	d->net.state = JD_SERVING;
	jd_service_ready(d); /* the socket accepts and the workers run */
	uv_run(&d->loop, UV_RUN_DEFAULT);
	return finish(d);
}
