/* tests/daemon/harness.c: the integration tests' daemon runner (see harness.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/proc.h"
#include "tests/daemon/harness.h"

void jdt_restart(struct jdt *t)
{
	char bin[600];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", t->conf,
			t->test_clock ? (char *)(uintptr_t)"--test-clock" : NULL, NULL};
	struct jtc_spawn how = {.log = t->log, .log_append = true};

	snprintf(bin, sizeof(bin), "%s/bin/jschedd", t->build);
	t->pid = jtc_spawn(&how, argv);
	jdt_wait_ready(t->sock, t->pid, t->log);
}

void jdt_kill9(struct jdt *t)
{
	kill(t->pid, SIGKILL);
	assert_int_equal(waitpid(t->pid, NULL, 0), t->pid);
	t->pid = 0;
}

/* proc_state: the state letter of thread tid of pid (/proc/pid/task/tid/stat, after the
 * command's closing parenthesis) and, when wchan is not NULL, where it sleeps; '?' if
 * the thread is gone. */
static char proc_state(pid_t pid, const char *tid, char *wchan, size_t len)
{
	char path[96], buf[512];
	const char *close_paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (!(close_paren = strrchr(buf, ')')) || close_paren[1] != ' ')
		return '?';
	if (wchan) {
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", (int)pid, tid);
		wchan[0] = '\0';
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			n = read(fd, wchan, len - 1);
			wchan[n > 0 ? n : 0] = '\0';
			close(fd);
		}
	}
	return close_paren[2];
}

/* all_stopped: whether every thread of pid is stopped (state T). */
static bool all_stopped(pid_t pid)
{
	char path[64];
	struct dirent *e;
	bool all = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return false;
	while (all && (e = readdir(d)))
		if (e->d_name[0] != '.')
			all = proc_state(pid, e->d_name, NULL, 0) == 'T';
	closedir(d);
	return all;
}

void jdt_pause(struct jdt *t)
{
	char tid[24], wchan[64];
	int i;

	/* The loop thread is the main thread. */
	snprintf(tid, sizeof(tid), "%d", (int)t->pid);
	for (i = 0; i < 3000; i++) {
		if (proc_state(t->pid, tid, wchan, sizeof(wchan)) == 'S' && strstr(wchan, "epoll"))
			break;
		jtc_sleep_ms(1);
	}
	if (i == 3000)
		fail_msg("jschedd's loop thread never slept in epoll_wait in 3 s (wchan '%s')", wchan);
	assert_int_equal(kill(t->pid, SIGSTOP), 0);
	for (i = 0; i < 3000 && !all_stopped(t->pid); i++)
		jtc_sleep_ms(1);
	if (i == 3000)
		fail_msg("jschedd's threads were not all stopped 3 s after SIGSTOP");
}

void jdt_resume(struct jdt *t)
{
	assert_int_equal(kill(t->pid, SIGCONT), 0);
}

json_int_t jdt_jobs_submitted(struct jsched_conn *c)
{
	json_t *m = jdt_metrics(c);
	json_int_t n = json_integer_value(json_object_get(json_object_get(m, "jobs"), "submitted"));

	json_decref(m);
	return n;
}

void jdt_sleep_ms(int ms)
{
	jtc_sleep_ms(ms);
}

void jdt_write_config(struct jdt *t, const char *members)
{
	FILE *f = fopen(t->conf, "w");
	bool own_journal = members && strstr(members, "\"journal\"");

	assert_non_null(f);
	fprintf(f, "{\"socket\": \"%s\", \"modules\": [\"%s/tests/daemon/module_example.so\"]",
		t->sock, t->build);
	/* The journal in the test's own directory, unless the test sets one. */
	if (!own_journal)
		fprintf(f, ", \"journal\": {\"dir\": \"%s/journal\"}", t->dir);
	if (members && members[0])
		fprintf(f, ", %s", members);
	fputs("}\n", f);
	fclose(f);
}

void jdt_wait_ready(const char *sock, pid_t pid, const char *log)
{
	/* Up to 30 s (a sanitizer build on a busy 2-core machine starts slowly). */
	for (int i = 0; i < 3000; i++) {
		int st = jtc_wait_exit(pid, 0);
		struct jsched_conn *c = NULL;

		/* The hello and a ping, each bounded (10 s: a sanitizer build on a busy machine): a process that accepts and never
		 * answers fails the test instead of hanging it. */
		if (jsched_connect_deferred(sock, NULL, &c, NULL, 0) == 0) {
			int rc;

			jsched_set_timeout(c, 10000);
			rc = jsched_ping(c);
			jsched_close(c);
			if (rc == 0)
				return;
			if (rc == JSCHED_ETIMEOUT) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				if (log)
					jtc_print_tail(log, 40);
				fail_msg("jschedd accepted on %s but did not answer a hello and a ping within 10 s",
					 sock);
			}
		}
		if (st >= 0) {
			if (log)
				jtc_print_tail(log, 40);
			fail_msg("jschedd exited at start (status %d)", st);
		}
		jtc_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (log)
		jtc_print_tail(log, 40);
	fail_msg("jschedd did not answer on %s within 30 s", sock);
}

/* start: jdt_start, with the test clock if `clock`. */
static void start(struct jdt *t, const char *members, bool clock)
{
	char bin[600];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", t->conf,
			clock ? (char *)(uintptr_t)"--test-clock" : NULL, NULL};
	struct jtc_spawn how = {.log = t->log};

	memset(t, 0, sizeof(*t));
	t->test_clock = clock;
	snprintf(t->build, sizeof(t->build), "%s", jtc_build_dir());
	jtc_tmpdir(t->dir, sizeof(t->dir), "jdt");
	snprintf(t->sock, sizeof(t->sock), "%s/s", t->dir);
	snprintf(t->conf, sizeof(t->conf), "%s/jschedd.json", t->dir);
	snprintf(t->log, sizeof(t->log), "%s/jschedd.log", t->dir);
	snprintf(bin, sizeof(bin), "%s/bin/jschedd", t->build);
	jdt_write_config(t, members);
	t->pid = jtc_spawn(&how, argv);
	jdt_wait_ready(t->sock, t->pid, t->log);
}

void jdt_start(struct jdt *t, const char *members)
{
	start(t, members, false);
}

void jdt_start_clocked(struct jdt *t, const char *members)
{
	start(t, members, true);
}

json_int_t jdt_clock_advance(struct jsched_conn *c, int64_t ms)
{
	json_t *rep = jdt_ok(c, "{\"op\": \"test_clock\", \"id\": 1, \"advance_ms\": %lld}",
			     (long long)ms);
	json_int_t now = json_integer_value(json_object_get(rep, "now_ms"));

	assert_true(now > 0);
	json_decref(rep);
	return now;
}

int jdt_wait_exit(struct jdt *t, int ms)
{
	int rc;

	siginfo_t info;

	/* Already reaped (by the test itself): nothing to wait for. */
	if (t->pid <= 0 || (waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 &&
			    errno == ECHILD)) {
		t->pid = 0;
		return 0;
	}
	rc = jtc_wait_exit(t->pid, ms);
	if (rc >= 0)
		t->pid = 0;
	return rc;
}

static void remove_dir(struct jdt *t)
{
	if (!t->dir[0])
		return;
	if (jtc_rm_rf(t->dir) != 0)
		fprintf(stderr, "could not remove %s\n", t->dir);
	t->dir[0] = '\0';
}

/* rmdir_tree: rmdir dir's subdirectories (two levels: client-X/job-N) and dir.  Only
 * empty cgroups can go: one that holds a process stays (EBUSY), as does everything
 * above it. */
static void rmdir_tree(const char *dir, int depth)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	char sub[PATH_MAX];

	while (dh && depth > 0 && (e = readdir(dh)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
		    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) < (int)sizeof(sub))
			rmdir_tree(sub, depth - 1);
	if (dh)
		closedir(dh);
	rmdir(dir);
}

/* sweep_cgroups: remove what a killed daemon left of its cgroup subtree (named by its
 * socket path, as daemon/run/exec_cgroup.c names it, under the test's own group in each
 * hierarchy, or at a hierarchy's top for a v2 subtree root made): a daemon killed with
 * SIGKILL cannot, and a later one on the same socket would, but a test's socket is never
 * used again.  Only empty groups are removed, so a group a test kills on purpose and
 * leaves for the next daemon (processes still in it) stays. */
static void sweep_cgroups(const struct jdt *t)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a, as exec_cgroup.c */
	char name[40], line[4096], own[64][512], path[PATH_MAX];
	size_t n_own = 0;
	FILE *f;

	if (geteuid() != 0)
		return; /* an ordinary user's daemon makes no subtree here */
	for (const unsigned char *p = (const unsigned char *)t->sock; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	snprintf(name, sizeof(name), "jschedd-%016llx", (unsigned long long)h);
	snprintf(own[n_own++], sizeof(own[0]), "%s", "");
	if ((f = fopen("/proc/self/cgroup", "re"))) {
		while (n_own < 64 && fgets(line, sizeof(line), f)) {
			char *g = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;

			if (g && g[1] != '\n' && strcmp(g + 1, "/\n") != 0) {
				g[strcspn(g, "\n")] = '\0';
				snprintf(own[n_own++], sizeof(own[0]), "%s", g + 1);
			}
		}
		fclose(f);
	}
	if (!(f = fopen("/proc/self/mountinfo", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[1024], fstype[64];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s", fstype) != 1 || strncmp(fstype, "cgroup", 6) != 0)
			continue;
		for (size_t i = 0; i < n_own; i++)
			if (snprintf(path, sizeof(path), "%s%s/%s", mnt, own[i], name) < (int)sizeof(path) &&
			    access(path, F_OK) == 0)
				rmdir_tree(path, 2);
	}
	fclose(f);
}

int jdt_stop(struct jdt *t, int sig)
{
	int rc = 0;

	if (t->pid > 0) {
		kill(t->pid, sig);
		rc = jdt_wait_exit(t, 30000);
		if (rc < 0) {
			/* Not a pass: say so, but leave nothing behind. */
			kill(t->pid, SIGKILL);
			waitpid(t->pid, NULL, 0);
			t->pid = 0;
			remove_dir(t);
			fail_msg("jschedd did not exit within 30 s of signal %d", sig);
		}
	}
	if (rc != 0 && rc != 3)
		jtc_print_tail(t->log, 40);
	if (rc >= 128)
		sweep_cgroups(t); /* killed: it could not remove its cgroups */
	remove_dir(t);
	return rc;
}

/* The shared group of jdt_run_group: what its setup starts and its teardown stops. */
static struct {
	struct jdt *t;
	bool clocked;
	const char *members;
	struct jsched_conn **c;
	const char *client;
} group;

static int group_setup(void **state)
{
	(void)state;
	if (group.clocked)
		jdt_start_clocked(group.t, group.members);
	else
		jdt_start(group.t, group.members);
	if (group.c)
		*group.c = jdt_connect(group.t, group.client);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (group.c) {
		jsched_close(*group.c);
		*group.c = NULL;
	}
	assert_int_equal(jdt_stop(group.t, SIGTERM), 0);
	return 0;
}

int jdt_run_group(const char *name, const struct CMUnitTest *tests, size_t n, struct jdt *t,
		  bool clocked, const char *members, struct jsched_conn **c, const char *client)
{
	group.t = t;
	group.clocked = clocked;
	group.members = members;
	group.c = c;
	group.client = client;
	return _cmocka_run_group_tests(name, tests, n, group_setup, group_teardown);
}

struct jsched_conn *jdt_connect(struct jdt *t, const char *client)
{
	struct jsched_conn *c = NULL;
	char msg[256];
	int rc = jsched_connect_error(t->sock, client, &c, msg, sizeof(msg));

	if (rc != 0)
		fail_msg("connect: %s (%s)", jsched_strerror(rc), msg);
	return c;
}

int jdt_raw(struct jdt *t)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(t->sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, t->sock, strlen(t->sock) + 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void jdt_send_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		assert_true(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

void jdt_send_frame(int fd, const char *json)
{
	uint32_t len = htonl((uint32_t)strlen(json));

	jdt_send_all(fd, &len, 4);
	jdt_send_all(fd, json, strlen(json));
}

/* read_exact: n bytes within 10 s; false at end of stream. */
static bool read_exact(int fd, void *p, size_t n)
{
	char *b = p;

	while (n > 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, 10000) != 1)
			fail_msg("no data from the daemon within 10 s");
		r = recv(fd, b, n, 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return false;
		assert_true(r > 0);
		b += r;
		n -= (size_t)r;
	}
	return true;
}

json_t *jdt_read_frame(int fd)
{
	json_error_t jerr;
	uint32_t len;
	char *buf;
	json_t *j;

	if (!read_exact(fd, &len, 4))
		return NULL;
	len = ntohl(len);
	assert_true(len > 0 && len <= (1u << 24));
	buf = malloc(len);
	assert_non_null(buf);
	assert_true(read_exact(fd, buf, len));
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		fail_msg("a frame from the daemon is not valid JSON (%s): %.200s", jerr.text, buf);
	free(buf);
	return j;
}

json_t *jdt_raw_ask(int fd, const char *req)
{
	json_t *r;

	jdt_send_frame(fd, req);
	for (int i = 0; i < 100000; i++) {
		r = jdt_read_frame(fd);
		if (!r)
			fail_msg("connection closed without a reply to %.200s", req);
		if (!json_object_get(r, "event"))
			return r;
		json_decref(r);
	}
	fail_msg("no reply to %.200s among 100000 frames", req);
	return NULL;
}

int jdt_raw_hello(struct jdt *t, const char *client)
{
	int fd = jdt_raw(t);
	char req[160];
	json_t *r;

	if (client)
		snprintf(req, sizeof(req),
			 "{\"op\": \"hello\", \"id\": 0, \"version\": 1, \"client\": \"%s\"}", client);
	else
		snprintf(req, sizeof(req), "{\"op\": \"hello\", \"id\": 0, \"version\": 1}");
	jdt_send_frame(fd, req);
	r = jdt_read_frame(fd);
	assert_non_null(r);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	return fd;
}

__attribute__((format(printf, 2, 0))) static json_t *vreq(struct jsched_conn *c, const char *fmt,
						      va_list ap)
{
	char req[8192];
	char *reply = NULL;
	json_t *j;

	vsnprintf(req, sizeof(req), fmt, ap);
	jsched_request(c, req, &reply);
	if (!reply)
		fail_msg("no reply to %s: %s", req, jsched_error_message(c));
	j = json_loads(reply, 0, NULL);
	jsched_free(reply);
	assert_non_null(j);
	return j;
}

json_t *jdt_req(struct jsched_conn *c, const char *fmt, ...)
{
	va_list ap;
	json_t *j;

	va_start(ap, fmt);
	j = vreq(c, fmt, ap);
	va_end(ap);
	return j;
}

json_t *jdt_ok(struct jsched_conn *c, const char *fmt, ...)
{
	va_list ap;
	json_t *j;

	va_start(ap, fmt);
	j = vreq(c, fmt, ap);
	va_end(ap);
	if (!json_is_true(json_object_get(j, "ok"))) {
		char *s = json_dumps(j, 0);

		fail_msg("request failed: %s", s);
	}
	return j;
}

const char *jdt_err_code(const json_t *reply)
{
	const char *s = json_string_value(json_object_get(json_object_get(reply, "error"), "code"));

	return s ? s : "";
}

uint64_t jdt_submit_call(struct jsched_conn *c, const char *fn, const char *args_json)
{
	struct jsched_spec *spec = NULL;
	uint64_t id = 0;
	int rc;

	assert_int_equal(jsched_spec_call(fn, args_json, &spec), 0);
	rc = jsched_submit(c, spec, &id);
	jsched_spec_free(spec);
	if (rc != 0)
		fail_msg("submit %s: %s (%s)", fn, jsched_strerror(rc), jsched_error_message(c));
	return id;
}

uint64_t jdt_submit_spec(struct jsched_conn *c, const char *fmt, ...)
{
	char spec[4096];
	va_list ap;
	json_t *r;
	uint64_t id;

	va_start(ap, fmt);
	vsnprintf(spec, sizeof(spec), fmt, ap);
	va_end(ap);
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": %s}", spec);
	id = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	assert_true(id > 0);
	return id;
}

static const char *intern_state(const char *s)
{
	static const char *const names[] = {"waiting", "scheduled", "retrying", "queued", "running", "succeeded", "failed",
					    "cancelled", "expired", "dropped"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (s && strcmp(s, names[i]) == 0)
			return names[i];
	return "?";
}

const char *jdt_state(struct jsched_conn *c, uint64_t id)
{
	json_t *r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	const char *s = intern_state(json_string_value(json_object_get(json_object_get(r, "job"), "state")));

	json_decref(r);
	return s;
}

const char *jdt_wait_final(struct jsched_conn *c, uint64_t id, json_t **rec)
{
	json_t *r = jdt_ok(c, "{\"op\": \"wait\", \"job\": %llu, \"timeout_ms\": 30000}",
			   (unsigned long long)id);
	json_t *job = json_object_get(r, "job");
	const char *s = intern_state(json_string_value(json_object_get(job, "state")));

	if (rec)
		*rec = json_incref(job);
	json_decref(r);
	return s;
}

void jdt_until_state(struct jsched_conn *c, uint64_t id, const char *state)
{
	for (int i = 0; i < 3000; i++) {
		if (strcmp(jdt_state(c, id), state) == 0)
			return;
		jdt_sleep_ms(10);
	}
	fail_msg("job %llu never reached state %s (now %s)", (unsigned long long)id, state,
		 jdt_state(c, id));
}

json_t *jdt_metrics(struct jsched_conn *c)
{
	char *s = NULL;
	json_t *j;

	assert_int_equal(jsched_metrics(c, &s), 0);
	j = json_loads(s, 0, NULL);
	jsched_free(s);
	assert_non_null(j);
	return j;
}

json_int_t jdt_metric_int(struct jsched_conn *c, const char *path)
{
	json_t *doc = jdt_metrics(c), *v = doc;
	json_int_t n;

	for (const char *p = path; v && *p;) {
		char key[64];
		size_t len = strcspn(p, "/");

		snprintf(key, sizeof(key), "%.*s", (int)len, p);
		v = json_object_get(v, key);
		p += len + (p[len] == '/');
	}
	n = json_integer_value(v);
	json_decref(doc);
	return n;
}

json_t *jdt_client_metrics(json_t *doc, const char *name)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(doc, "clients"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	return NULL;
}

bool jdt_log_contains(struct jdt *t, const char *text)
{
	char buf[65536];
	FILE *f = fopen(t->log, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

int jdt_tool(struct jdt *t, const char *client, char *out, size_t len, const char *fmt, ...)
{
	char args[2048], cmd[4096];
	va_list ap;
	FILE *f;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "JSCHED_SOCKET='%s' '%s/bin/jsched' -C %s %s </dev/null", t->sock,
		 t->build, client, args);
	assert_non_null(f = popen(cmd, "r"));
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void jdt_wait_snapshots(struct jsched_conn *c, int n)
{
	int snaps = 0;

	for (int i = 0; i < 300 && snaps < n; i++) {
		json_t *m = jdt_metrics(c);

		snaps = (int)json_integer_value(json_object_get(json_object_get(m, "journal"), "snapshots"));
		json_decref(m);
		if (snaps < n)
			jdt_sleep_ms(100);
	}
	if (snaps < n)
		fail_msg("the journal put %d snapshots in place in 30 s, not %d", snaps, n);
}
