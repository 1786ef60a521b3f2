/* tests/daemon/test_daemon_lifecycle.c: start, reload and stop.
 *
 * - graceful shutdown (SIGTERM) with work queued and running: no new jobs, every accepted
 *   job finishes (succeeded), a pending wait is answered, exit status 0;
 * - during a graceful shutdown, new connections are answered (status, list, metrics, wait)
 *   and only their submits are refused (shutting_down), until the last job ends;
 * - immediate shutdown (admin op) with work queued, running and suspended: every job
 *   ends cancelled with cause "shutdown", the wait is answered, exit status 3;
 * - a second SIGTERM turns a graceful shutdown into an immediate one;
 * - SIGHUP and `reload` re-read the config: a changed weight applies live; a bad value
 *   is refused with the key's name and the old config stays;
 * - a stale socket from a dead daemon is replaced; a live daemon is refused;
 * - a daemon killed while a process it started still held its listening socket and its
 *   journal's lock (the moments between a command's clone and its close_range): the next
 *   daemon replaces the socket and waits for the lock;
 * - a bad config stops the daemon at start, naming the key. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common/proc.h"
#include "tests/daemon/harness.h"

/* run_jschedd: run the daemon with `conf` to its exit (bounded); its stderr into err. */
static int run_jschedd(struct jdt *t, const char *conf, const char *extra_arg, char *err,
		       size_t errlen)
{
	char bin[600], errpath[400];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", (char *)(uintptr_t)conf,
			(char *)(uintptr_t)extra_arg, NULL};
	struct jtc_spawn how = {.log = errpath};
	pid_t pid;
	int rc;
	FILE *f;
	size_t n;

	snprintf(bin, sizeof(bin), "%s/bin/jschedd", t->build);
	snprintf(errpath, sizeof(errpath), "%s/run.err", t->dir);
	pid = jtc_spawn(&how, argv);
	rc = jtc_wait_exit(pid, 30000);
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("jschedd %s did not exit", conf);
	}
	f = fopen(errpath, "r");
	n = f ? fread(err, 1, errlen - 1, f) : 0;
	err[n] = '\0';
	if (f)
		fclose(f);
	return rc;
}

static int wait_reply;
static struct jsched_results *wait_results;
static void wait_cb(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	(void)conn;
	(void)arg;
	wait_reply = status == 0 ? 1 : -1;
	if (status == 0)
		assert_int_equal(jsched_reply_results(reply, &wait_results), 0);
}

/* pump: process c until the wait callback ran (bounded 30 s). */
static void pump(struct jsched_conn *c)
{
	for (int i = 0; i < 3000 && wait_reply == 0; i++) {
		struct pollfd p = {.fd = jsched_fd(c), .events = POLLIN | (jsched_want_write(c) ? POLLOUT : 0)};

		if (poll(&p, 1, 10) > 0 && jsched_process(c) < 0)
			break;
	}
}

static void test_graceful_with_work_in_flight(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *w;
	struct jsched_conn *late = NULL;
	uint64_t ids[12];
	json_t *r;

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = jdt_connect(&t, "grace");
	w = jdt_connect(&t, "grace");
	/* One worker: naps suspend (running), spins queue behind each other. */
	for (int i = 0; i < 6; i++)
		ids[i] = jdt_submit_call(c, "example.nap", "{\"ms\": 200}");
	for (int i = 6; i < 12; i++)
		ids[i] = jdt_submit_call(c, "spin", "{\"us\": 20000}");
	wait_reply = 0;
	assert_true(jsched_wait_async(w, ids, 12, JSCHED_WAIT_ALL, -1, wait_cb, NULL) > 0);
	assert_int_equal(jsched_ping(c), 0); /* the wait is registered before the signal */
	kill(t.pid, SIGTERM);
	/* No new jobs (the existing connection is still answered) ... */
	{
		bool refused = false;

		/* Until the signal is handled a noop may still be accepted (and finish). */
		for (int i = 0; i < 3000 && !refused; i++) {
			r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
			refused = strcmp(jdt_err_code(r), "shutting_down") == 0;
			json_decref(r);
			if (!refused)
				jdt_sleep_ms(10);
		}
		assert_true(refused);
	}
	(void)late;
	pump(w);
	assert_int_equal(wait_reply, 1);
	assert_int_equal(wait_results->count, 12);
	for (size_t i = 0; i < 12; i++)
		assert_int_equal(wait_results->items[i]->state, JSCHED_STATE_SUCCEEDED);
	jsched_results_free(wait_results);
	jsched_close(c);
	jsched_close(w);
	assert_int_equal(jdt_wait_exit(&t, 30000), 0);
	assert_true(jdt_log_contains(&t, "exiting with status 0"));
	jdt_stop(&t, SIGTERM);
}

/* A graceful shutdown keeps answering: a job held running (example.hold, until it is
 * cancelled) keeps the daemon draining for as long as the test wants, deterministically. */
static void test_graceful_answers_until_the_last_job(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *late;
	uint64_t held, done;
	json_t *r;

	(void)state;
	jdt_start(&t, "");
	c = jdt_connect(&t, "drain");
	done = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, done, NULL), "succeeded");
	held = jdt_submit_call(c, "example.hold", NULL);
	jdt_until_state(c, held, "running");
	kill(t.pid, SIGTERM);
	/* Once the signal is handled, submits are refused ... */
	{
		bool refused = false;

		for (int i = 0; i < 3000 && !refused; i++) {
			r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
			refused = strcmp(jdt_err_code(r), "shutting_down") == 0;
			if (!refused) /* accepted before the signal was handled: it ends at once */
				assert_string_equal(jdt_wait_final(c, (uint64_t)json_integer_value(
									      json_object_get(r, "job")), NULL),
						    "succeeded");
			json_decref(r);
			if (!refused)
				jdt_sleep_ms(10);
		}
		assert_true(refused);
	}
	/* ... but a new connection is answered: status, list, metrics, a wait, output. */
	late = jdt_connect(&t, "drain");
	assert_string_equal(jdt_state(late, held), "running");
	assert_string_equal(jdt_state(late, done), "succeeded");
	r = jdt_ok(late, "{\"op\": \"list\", \"states\": [\"running\"]}");
	assert_int_equal(json_array_size(json_object_get(r, "jobs")), 1);
	json_decref(r);
	r = jdt_metrics(late);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "jobs"), "running")), 1);
	json_decref(r);
	r = jdt_req(late, "{\"op\": \"wait\", \"job\": %llu, \"timeout_ms\": 0}", (unsigned long long)held);
	assert_string_equal(jdt_err_code(r), "timeout");
	json_decref(r);
	r = jdt_req(late, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
	assert_string_equal(jdt_err_code(r), "shutting_down");
	json_decref(r);
	/* The last job ends: the daemon exits, gracefully. */
	json_decref(jdt_ok(late, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)held));
	assert_int_equal(jdt_wait_exit(&t, 30000), 0);
	jsched_close(late);
	jsched_close(c);
	jdt_stop(&t, SIGTERM);
}

static void check_all_cancelled_by_shutdown(void)
{
	for (size_t i = 0; i < wait_results->count; i++) {
		assert_int_equal(wait_results->items[i]->state, JSCHED_STATE_CANCELLED);
		assert_string_equal(wait_results->items[i]->cause, "shutdown");
	}
	jsched_results_free(wait_results);
}

static void test_immediate_with_work_in_flight(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *w;
	uint64_t ids[6];

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = jdt_connect(&t, "now");
	w = jdt_connect(&t, "now");
	ids[0] = jdt_submit_call(c, "example.hold", NULL);	  /* running, on the worker */
	jdt_until_state(c, ids[0], "running");
	ids[1] = jdt_submit_call(c, "sleep", "{\"ms\": 60000}"); /* queued behind it */
	for (int i = 2; i < 6; i++) /* queued (not noop: the loop runs that itself) */
		ids[i] = jdt_submit_call(c, "spin", "{\"us\": 0}");
	wait_reply = 0;
	assert_true(jsched_wait_async(w, ids, 6, JSCHED_WAIT_ALL, -1, wait_cb, NULL) > 0);
	assert_int_equal(jsched_ping(c), 0);
	assert_int_equal(jsched_admin_shutdown(c, true), 0);
	pump(w);
	assert_int_equal(wait_reply, 1);
	assert_int_equal(wait_results->count, 6);
	check_all_cancelled_by_shutdown();
	jsched_close(c);
	jsched_close(w);
	assert_int_equal(jdt_wait_exit(&t, 30000), 3);
	jdt_stop(&t, SIGTERM);
}

static void test_second_sigterm_escalates(void **state)
{
	struct jdt t;
	struct jsched_conn *c, *w;
	uint64_t ids[2];

	(void)state;
	jdt_start(&t, "\"workers\": 2");
	c = jdt_connect(&t, "twice");
	w = jdt_connect(&t, "twice");
	ids[0] = jdt_submit_call(c, "example.hold", NULL);
	jdt_until_state(c, ids[0], "running");
	ids[1] = jdt_submit_call(c, "example.nap", "{\"ms\": 60000}");
	jdt_until_state(c, ids[1], "running");
	wait_reply = 0;
	assert_true(jsched_wait_async(w, ids, 2, JSCHED_WAIT_ALL, -1, wait_cb, NULL) > 0);
	assert_int_equal(jsched_ping(c), 0);
	kill(t.pid, SIGTERM);
	/* Graceful: the hold never ends by itself, so the daemon keeps running ... */
	assert_int_equal(jdt_wait_exit(&t, 200), -1);
	assert_string_equal(jdt_state(c, ids[0]), "running");
	/* ... until the second SIGTERM. */
	kill(t.pid, SIGTERM);
	pump(w);
	assert_int_equal(wait_reply, 1);
	check_all_cancelled_by_shutdown();
	jsched_close(c);
	jsched_close(w);
	assert_int_equal(jdt_wait_exit(&t, 30000), 3);
	jdt_stop(&t, SIGTERM);
}

static json_int_t weight_of(struct jsched_conn *c, const char *name)
{
	json_t *m = jdt_metrics(c);
	json_int_t w = json_integer_value(json_object_get(jdt_client_metrics(m, name), "weight"));

	json_decref(m);
	return w;
}

static void test_reload(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *r;
	int i;

	(void)state;
	jdt_start(&t, "\"clients\": {\"tenant\": {\"weight\": 1}}");
	c = jdt_connect(&t, "tenant");
	assert_int_equal(weight_of(c, "tenant"), 1);
	/* SIGHUP: the new weight applies live. */
	jdt_write_config(&t, "\"clients\": {\"tenant\": {\"weight\": 5}}");
	kill(t.pid, SIGHUP);
	for (i = 0; i < 3000 && weight_of(c, "tenant") != 5; i++)
		jdt_sleep_ms(10);
	assert_int_equal(weight_of(c, "tenant"), 5);
	/* reload: a bad value is refused with its key; nothing changes. */
	jdt_write_config(&t, "\"clients\": {\"tenant\": {\"weight\": 0}}");
	r = jdt_req(c, "{\"op\": \"reload\"}");
	assert_string_equal(jdt_err_code(r), "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "clients.tenant.weight");
	json_decref(r);
	assert_int_equal(weight_of(c, "tenant"), 5);
	/* A good reload reports what it applied and what needs a restart. */
	jdt_write_config(&t, "\"clients\": {\"tenant\": {\"weight\": 2}}, \"workers\": 7");
	r = jdt_ok(c, "{\"op\": \"reload\"}");
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "applied"), 0)), "clients");
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "restart_needed"), 0)), "workers");
	json_decref(r);
	assert_int_equal(weight_of(c, "tenant"), 2);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_socket_stale_and_live(void **state)
{
	struct jdt t;
	char err[4096];
	struct jsched_conn *c;
	struct stat st;

	(void)state;
	jdt_start(&t, "");
	/* A second daemon on the same socket is refused while the first lives. */
	assert_int_equal(run_jschedd(&t, t.conf, NULL, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "already listening"));
	c = jdt_connect(&t, NULL); /* and the first is untouched */
	assert_int_equal(jsched_ping(c), 0);
	jsched_close(c);
	/* Killed without a chance to clean up, it leaves its socket file behind ... */
	kill(t.pid, SIGKILL);
	waitpid(t.pid, NULL, 0);
	t.pid = 0;
	assert_int_equal(stat(t.sock, &st), 0);
	/* ... which the next daemon replaces. */
	{
		char bin[600];
		char *argv[] = {bin, (char *)(uintptr_t)"-c", t.conf, NULL};

		struct jtc_spawn how = {.log = t.log};

		snprintf(bin, sizeof(bin), "%s/bin/jschedd", t.build);
		t.pid = jtc_spawn(&how, argv);
		jdt_wait_ready(t.sock, t.pid, t.log);
		c = jdt_connect(&t, NULL);
		assert_int_equal(jsched_ping(c), 0);
		jsched_close(c);
	}
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* fd_of: the number of a descriptor of process pid whose link ends with `end` ("" for
 * any) and starts with `start`, -1 if none. */
static int fd_of(pid_t pid, const char *start, const char *end)
{
	char dir[64], path[400], link[512];
	struct dirent *e;
	int found = -1;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(dir)))
		return -1;
	while (found < 0 && (e = readdir(d))) {
		ssize_t n;
		size_t len, elen = strlen(end);

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || (n = readlink(path, link, sizeof(link) - 1)) < 0)
			continue;
		link[n] = '\0';
		len = (size_t)n;
		if (strncmp(link, start, strlen(start)) == 0 && len >= elen &&
		    strcmp(link + len - elen, end) == 0)
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

/* proc_line: the first line of /proc/pid/name into buf ("" if it cannot be read). */
static const char *proc_line(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	buf[0] = '\0';
	if ((f = fopen(path, "r"))) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	return buf;
}

/* is_jschedd: whether process pid runs jschedd by now (its comm). */
static bool is_jschedd(pid_t pid)
{
	char comm[32];

	return strcmp(proc_line(pid, "comm", comm, sizeof(comm)), "jschedd\n") == 0;
}

/* asleep: whether process pid's main thread sleeps in nanosleep (/proc/pid/wchan). */
static bool asleep(pid_t pid)
{
	char wchan[128];

	return strstr(proc_line(pid, "wchan", wchan, sizeof(wchan)), "nanosleep") != NULL;
}

/* listener_inode: the inode of the listening socket bound to path (/proc/net/unix: the
 * flags 00010000 are the listener's), 0 if none. */
static unsigned long listener_inode(const char *path)
{
	char line[700], name[600];
	unsigned long inode = 0, ino, flags;
	FILE *f = fopen("/proc/net/unix", "r");

	while (f && !inode && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %lu %599s", &flags, &ino, name) == 3 &&
		    (flags & 0x10000) && strcmp(name, path) == 0)
			inode = ino;
	if (f)
		fclose(f);
	return inode;
}

/* A daemon killed while it was starting a command: that command holds a copy of the
 * daemon's descriptors until its close_range (or exec), its listening socket and its
 * journal's lock among them.  The test takes that copy's place: it takes both from the
 * daemon (pidfd_getfd) and holds them across a kill -9.  The next daemon must replace the
 * socket (which still accepts connections, into a backlog nobody reads: its listener is
 * gone) and wait for the lock, which the test lets go of once the daemon has the lock
 * file open (so is at or past its flock, and still running).  Before, it stopped at once:
 * "another jschedd is already listening". */
static void test_start_after_heir(void **state)
{
	struct jdt t;
	char bin[600], sockname[64];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", t.conf, NULL};
	struct jtc_spawn how = {.log = t.log, .log_append = true};
	struct jsched_conn *c;
	int pidfd, lockfd, sockfd, status, i;
	unsigned long inode;
	pid_t old;

	(void)state;
	jdt_start(&t, "");
	inode = listener_inode(t.sock);
	assert_true(inode > 0);
	snprintf(sockname, sizeof(sockname), "socket:[%lu]", inode);
	pidfd = (int)syscall(SYS_pidfd_open, t.pid, 0);
	if (pidfd < 0) {
		jdt_stop(&t, SIGTERM);
		fprintf(stderr, "skipped: pidfd_open: %s\n", strerror(errno));
		skip();
	}
	lockfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd_of(t.pid, "/", "/journal/lock"), 0);
	sockfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd_of(t.pid, sockname, ""), 0);
	close(pidfd);
	if (lockfd < 0 || sockfd < 0) {
		jdt_stop(&t, SIGTERM);
		fprintf(stderr, "skipped: pidfd_getfd: %s\n", strerror(errno));
		skip();
	}
	old = t.pid;
	jdt_kill9(&t);
	snprintf(bin, sizeof(bin), "%s/bin/jschedd", t.build);
	t.pid = jtc_spawn(&how, argv);
	/* The daemon's own (not the test's copy in its child before the exec: close-on-exec) */
	for (i = 0; i < 3000 && !(is_jschedd(t.pid) && fd_of(t.pid, "/", "/journal/lock") >= 0); i++) {
		if (waitpid(t.pid, &status, WNOHANG) == t.pid) {
			char tail[1024] = "";
			FILE *f = fopen(t.log, "r");

			if (f) {
				size_t n;

				fseek(f, -(long)sizeof(tail) + 1, SEEK_END);
				n = fread(tail, 1, sizeof(tail) - 1, f);
				tail[n] = '\0';
				fclose(f);
			}
			t.pid = 0;
			fail_msg("the daemon stopped (status %d) while the heir held its socket and "
				 "lock; its log ends: %s", status, tail);
		}
		jdt_sleep_ms(10);
	}
	assert_true(i < 3000);
	/* and until it waits for the lock (its main thread asleep between tries), so that a
	 * daemon that gave up after its first try fails here */
	for (i = 0; i < 3000 && !asleep(t.pid) && waitpid(t.pid, &status, WNOHANG) != t.pid; i++)
		jdt_sleep_ms(1);
	close(lockfd);
	jdt_wait_ready(t.sock, t.pid, t.log);
	{
		char want[128];

		snprintf(want, sizeof(want), "the jschedd that listened on it (pid %d) is gone",
			 (int)old);
		assert_true(jdt_log_contains(&t, want));
	}
	c = jdt_connect(&t, NULL);
	assert_int_equal(jsched_ping(c), 0);
	jsched_close(c);
	close(sockfd);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_bad_config_names_key(void **state)
{
	struct jdt t;
	char err[4096], path[400];
	FILE *f;

	(void)state;
	jdt_start(&t, "");
	snprintf(path, sizeof(path), "%s/bad.json", t.dir);
	f = fopen(path, "w");
	fprintf(f, "{\"limits\": {\"frame_bytes\": \"big\"}}");
	fclose(f);
	assert_int_equal(run_jschedd(&t, path, "--check-config", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "limits.frame_bytes"));
	f = fopen(path, "w");
	fprintf(f, "{\"fairness\": {\"polcy\": \"fair\"}}");
	fclose(f);
	assert_int_equal(run_jschedd(&t, path, NULL, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "fairness.polcy"));
	assert_non_null(strstr(err, "unknown key"));
	f = fopen(path, "w");
	fprintf(f, "{\"modules\": [\"/nonexistent/module.so\"], \"socket\": \"%s/other\"}", t.dir);
	fclose(f);
	assert_int_equal(run_jschedd(&t, path, NULL, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "/nonexistent/module.so"));
	/* A module built for another ABI is refused, by name. */
	f = fopen(path, "w");
	fprintf(f, "{\"modules\": [\"%s/tests/daemon/module_badabi.so\"], \"socket\": \"%s/other\"}",
		t.build, t.dir);
	fclose(f);
	assert_int_equal(run_jschedd(&t, path, NULL, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "module_badabi.so"));
	assert_non_null(strstr(err, "ABI"));
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_retention_by_age(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t id;
	json_t *r = NULL;
	bool forgotten = false;

	(void)state;
	jdt_start(&t, "\"retention\": {\"seconds\": 1}");
	c = jdt_connect(&t, "aging");
	id = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	/* Kept at first, forgotten once older than a second (the daemon checks every
	 * second): poll, bounded. */
	for (int i = 0; i < 1000 && !forgotten; i++) {
		r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
		forgotten = strcmp(jdt_err_code(r), "job_forgotten") == 0;
		json_decref(r);
		if (!forgotten)
			jdt_sleep_ms(10);
	}
	assert_true(forgotten);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graceful_with_work_in_flight),
		cmocka_unit_test(test_graceful_answers_until_the_last_job),
		cmocka_unit_test(test_immediate_with_work_in_flight),
		cmocka_unit_test(test_second_sigterm_escalates),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_retention_by_age),
		cmocka_unit_test(test_socket_stale_and_live),
		cmocka_unit_test(test_start_after_heir),
		cmocka_unit_test(test_bad_config_names_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
