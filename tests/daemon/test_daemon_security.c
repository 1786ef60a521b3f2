/* tests/daemon/test_daemon_security.c: two users against one real jschedd running as root.
 *
 * User A is root (the test itself); user B is `jsched-test`, created here if absent
 * (useradd, with a supplementary group `jsched-test-x`).  B's side runs in a forked child
 * that switches to B's groups, gid and uid before it connects, so the daemon sees B's
 * peer credentials exactly as it would see another login.  The child sends the requests
 * it is given and writes each reply to a pipe; the parent makes the assertions.
 *
 * What is checked: B may use only its own client name (and those the config grants it);
 * B cannot see, wait on, read the output of, cancel or list A's jobs; admin operations
 * are refused to B; every refusal is permission_denied and is counted in the metrics; an
 * exec job of B's runs as B (uid, gid, supplementary groups), enters its working
 * directory as B, and an exec job of root's runs as root.  And a jschedd running as B
 * (not root) refuses root's exec jobs, unless exec.allow_other_uids lets them run as B.
 * Not root: every test skips.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/common/proc.h"
#include "tests/daemon/harness.h"

#define USER_B "jsched-test"
#define GROUP_X "jsched-test-x"

static struct jdt t;
static const char *b_sock;	/* the socket B's side connects to (NULL: t.sock) */
static uid_t uid_b;
static gid_t gid_b, gid_x;
static bool ready;

static int setup(void **state)
{
	struct passwd *pw;
	struct group *gr;

	(void)state;
	if (geteuid() != 0)
		return 0;
	if (!getpwnam(USER_B) &&
	    system("(getent group " GROUP_X " >/dev/null || groupadd " GROUP_X ") && "
		   "useradd --no-create-home --shell /usr/sbin/nologin --groups " GROUP_X " " USER_B
		   " >/dev/null 2>&1") != 0)
		return 0;
	pw = getpwnam(USER_B);
	gr = getgrnam(GROUP_X);
	if (!pw || !gr)
		return 0;
	uid_b = pw->pw_uid;
	gid_b = pw->pw_gid;
	gid_x = gr->gr_gid;
	/* B reaches the socket: the temp dir is traversable and the socket 0666. */
	jdt_start(&t, "\"workers\": 2, \"socket_mode\": \"0666\", "
		      "\"client_names\": {\"" USER_B "\": [\"ci-b\"]}");
	assert_int_equal(chmod(t.dir, 0711), 0);
	ready = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (ready)
		assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

static void need_root(void)
{
	if (!ready) {
		if (geteuid() != 0)
			fprintf(stderr, "skipped: the security tests need root (to create and become "
					"a second user)\n");
		else
			fprintf(stderr, "skipped: could not create the user " USER_B "\n");
		skip();
	}
}

/* as_b: connect as B with client name `client` (NULL: default) and send each request;
 * replies[i] gets each reply (new references).  Returns NULL, or the connect error's
 * message (static buffer) if the hello was refused. */
static const char *as_b(const char *client, const char *const *reqs, size_t n, json_t **replies)
{
	static char connect_err[512];
	int fds[2];
	pid_t pid;
	FILE *in;
	char line[1 << 16];
	int st;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct jsched_conn *c = NULL;
		char why[256];
		FILE *out = fdopen(fds[1], "w");

		close(fds[0]);
		if (initgroups(USER_B, gid_b) < 0 || setgid(gid_b) < 0 || setuid(uid_b) < 0 ||
		    getuid() == 0)
			_exit(2);
		if (jsched_connect_error(b_sock ? b_sock : t.sock, client, &c, why, sizeof(why)) != 0) {
			json_t *e = json_pack("{s:s}", "connect_error", why);
			char *s = json_dumps(e, 0);

			fprintf(out, "%s\n", s);
			fclose(out);
			_exit(0);
		}
		for (size_t i = 0; i < n; i++) {
			char *reply = NULL;

			jsched_request(c, reqs[i], &reply);
			fprintf(out, "%s\n", reply ? reply : "{}");
			jsched_free(reply);
		}
		jsched_close(c);
		fclose(out);
		_exit(0);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	assert_non_null(in);
	for (size_t i = 0; i < n + 1 && fgets(line, sizeof(line), in); i++) {
		json_t *j = json_loads(line, 0, NULL);

		assert_non_null(j);
		if (json_object_get(j, "connect_error")) {
			snprintf(connect_err, sizeof(connect_err), "%s",
				 json_string_value(json_object_get(j, "connect_error")));
			json_decref(j);
			fclose(in);
			assert_int_equal(waitpid(pid, &st, 0), pid);
			return connect_err;
		}
		assert_true(i < n);
		replies[i] = j;
	}
	fclose(in);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return NULL;
}

static void test_client_names(void **state)
{
	const char *req[] = {"{\"op\": \"ping\"}"};
	json_t *rep[1];
	const char *err;

	(void)state;
	need_root();
	/* Its own login name (the default) and the name the config grants it. */
	assert_null(as_b(NULL, req, 1, rep));
	assert_true(json_is_true(json_object_get(rep[0], "ok")));
	json_decref(rep[0]);
	assert_null(as_b("ci-b", req, 1, rep));
	json_decref(rep[0]);
	/* Anyone else's: refused. */
	err = as_b("root", req, 1, rep);
	assert_non_null(err);
	assert_non_null(strstr(err, "may not use the client name"));
	assert_non_null(as_b("nightly", req, 1, rep));
}

static const char *code(const json_t *reply)
{
	return jdt_err_code(reply);
}

static void test_other_users_jobs_are_invisible(void **state)
{
	struct jsched_conn *a;
	uint64_t running, done;
	char r[11][160];
	const char *reqs[11];
	json_t *rep[11], *m;
	json_int_t denied0, denied1;

	(void)state;
	need_root();
	a = jdt_connect(&t, "alpha");
	{
		json_t *x = jdt_ok(a, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}}");

		running = (uint64_t)json_integer_value(json_object_get(x, "job"));
		json_decref(x);
	}
	done = jdt_submit_call(a, "noop", NULL);
	assert_string_equal(jdt_wait_final(a, done, NULL), "succeeded");
	jdt_until_state(a, running, "running");
	m = jdt_metrics(a);
	denied0 = json_integer_value(json_object_get(json_object_get(m, "security"), "denied"));
	json_decref(m);

	snprintf(r[0], sizeof(r[0]), "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)done);
	snprintf(r[1], sizeof(r[1]), "{\"op\": \"wait\", \"job\": %llu, \"timeout_ms\": 0}", (unsigned long long)running);
	snprintf(r[2], sizeof(r[2]), "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)running);
	snprintf(r[3], sizeof(r[3]), "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)running);
	snprintf(r[4], sizeof(r[4]), "{\"op\": \"list\"}");
	snprintf(r[5], sizeof(r[5]), "{\"op\": \"list\", \"all\": true}");
	snprintf(r[6], sizeof(r[6]), "{\"op\": \"shutdown\", \"mode\": \"immediate\"}");
	snprintf(r[7], sizeof(r[7]), "{\"op\": \"set_client\", \"client\": \"alpha\", \"weight\": 9}");
	snprintf(r[8], sizeof(r[8]), "{\"op\": \"reload\"}");
	snprintf(r[9], sizeof(r[9]), "{\"op\": \"drain\", \"client\": \"alpha\", \"running\": true}");
	snprintf(r[10], sizeof(r[10]), "{\"op\": \"status\", \"job\": 900000000}");
	for (int i = 0; i < 11; i++)
		reqs[i] = r[i];
	assert_null(as_b(NULL, reqs, 11, rep));
	assert_string_equal(code(rep[0]), "permission_denied");
	assert_string_equal(code(rep[1]), "permission_denied");
	assert_string_equal(code(rep[2]), "permission_denied");
	assert_string_equal(code(rep[3]), "permission_denied");
	/* B's own list does not show A's jobs. */
	assert_true(json_is_true(json_object_get(rep[4], "ok")));
	assert_int_equal(json_array_size(json_object_get(rep[4], "jobs")), 0);
	assert_string_equal(code(rep[5]), "permission_denied");
	assert_string_equal(code(rep[6]), "permission_denied");
	assert_string_equal(code(rep[7]), "permission_denied");
	assert_string_equal(code(rep[8]), "permission_denied");
	/* A client name B may not use is not B's to drain (not "0 cancelled"). */
	assert_string_equal(code(rep[9]), "permission_denied");
	/* Existence is not hidden: ids are sequential and shared, so another user's id is
	 * permission_denied and an id never issued is no_such_job (PROTOCOL.md section 3). */
	assert_string_equal(code(rep[10]), "no_such_job");
	for (int i = 0; i < 11; i++)
		json_decref(rep[i]);
	/* A's job is untouched, and every refusal was counted. */
	assert_string_equal(jdt_state(a, running), "running");
	m = jdt_metrics(a);
	denied1 = json_integer_value(json_object_get(json_object_get(m, "security"), "denied"));
	json_decref(m);
	assert_int_equal(denied1 - denied0, 9);
	{
		json_t *x = jdt_ok(a, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)running);

		json_decref(x);
	}
	assert_string_equal(jdt_wait_final(a, running, NULL), "cancelled");
	jsched_close(a);
}

/* b_exec: as B, submit an exec job (spec JSON), wait for it and return its record and
 * stdout (decoded, in *out: free it). */
static json_t *b_exec(const char *spec, char **out)
{
	char sub[1024], wait[128], outp[128];
	const char *reqs[1] = {sub};
	json_t *rep[1], *w[2], *rec;
	uint64_t id;
	const char *wreqs[2] = {wait, outp};

	snprintf(sub, sizeof(sub), "{\"op\": \"submit\", \"job\": %s}", spec);
	assert_null(as_b(NULL, reqs, 1, rep));
	id = (uint64_t)json_integer_value(json_object_get(rep[0], "job"));
	json_decref(rep[0]);
	assert_true(id > 0);
	snprintf(wait, sizeof(wait), "{\"op\": \"wait\", \"job\": %llu, \"timeout_ms\": 30000}", (unsigned long long)id);
	snprintf(outp, sizeof(outp), "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	assert_null(as_b(NULL, wreqs, 2, w));
	rec = json_incref(json_object_get(w[0], "job"));
	{
		unsigned char *data = NULL;
		size_t len = 0;
		bool tr;

		assert_int_equal(jp_output_stream_parse(json_object_get(w[1], "stdout"), &data, &len,
							&tr, NULL), 0);
		*out = (char *)data;
	}
	json_decref(w[0]);
	json_decref(w[1]);
	return rec;
}

static void test_exec_runs_as_its_owner(void **state)
{
	struct jsched_conn *a;
	char *out, expect[256];
	json_t *rec;
	uint64_t id;

	(void)state;
	need_root();
	/* B's job: B's uid, gid and supplementary groups. */
	rec = b_exec("{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"id -u; id -g; id -G\"]}", &out);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
	snprintf(expect, sizeof(expect), "%u\n%u\n", (unsigned)uid_b, (unsigned)gid_b);
	assert_int_equal(strncmp(out, expect, strlen(expect)), 0);
	{
		char g[32];
		const char *groups = out + strlen(expect);

		snprintf(g, sizeof(g), "%u", (unsigned)gid_x);
		assert_non_null(strstr(groups, g));
		assert_null(strstr(groups, " 0 ")); /* not root's group */
		assert_false(strncmp(groups, "0 ", 2) == 0 || strcmp(groups, "0\n") == 0);
	}
	free(out);
	json_decref(rec);
	/* B cannot enter root's home: the directory is entered as B. */
	rec = b_exec("{\"kind\": \"exec\", \"argv\": [\"true\"], \"cwd\": \"/root\"}", &out);
	assert_string_equal(json_string_value(json_object_get(rec, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "spawn");
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "working directory"));
	free(out);
	json_decref(rec);
	/* A command B cannot start: the helper reports why, in jschedd's words. */
	rec = b_exec("{\"kind\": \"exec\", \"argv\": [\"no-such-command-jsched\"]}", &out);
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "spawn");
	assert_string_equal(json_string_value(json_object_get(rec, "reason")),
			    "no such file or directory: no-such-command-jsched");
	free(out);
	json_decref(rec);
	/* Root's own job runs as root. */
	a = jdt_connect(&t, NULL);
	{
		json_t *x = jdt_ok(a, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"id\", \"-u\"]}}");

		id = (uint64_t)json_integer_value(json_object_get(x, "job"));
		json_decref(x);
	}
	assert_string_equal(jdt_wait_final(a, id, NULL), "succeeded");
	{
		json_t *o = jdt_ok(a, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);

		/* "0\n" in base64 */
		assert_string_equal(json_string_value(json_object_get(json_object_get(o, "stdout"), "data")), "MAo=");
		json_decref(o);
	}
	jsched_close(a);
}

/* stage_bin: copy the build's program `name` into dir (0755), where B can run it. */
static void stage_bin(const char *dir, const char *name)
{
	char src[900], dst[300];
	int rc;

	snprintf(src, sizeof(src), "%s/bin/%s", t.build, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	rc = jtc_copy_file(src, dst, 0755);
	if (rc != 0)
		fail_msg("copy %s to %s: %s", src, dst, strerror(-rc));
}

/* start_as_b: run jschedd as B with `members` in its config, in a directory of B's;
 * waits (bounded) until it answers.  Fills sock (and dir).  B runs copies of jschedd
 * and jschedd-runas (which jschedd looks for beside itself) in that directory: the
 * checkout may be where B cannot enter (a clone under `mktemp -d`, a 0700 home). */
static pid_t start_as_b(const char *members, char *d, size_t dlen, char *sock, size_t slen)
{
	char conf[256], bin[300], log[300];
	char *argv[] = {bin, (char *)(uintptr_t)"-c", conf, NULL};
	struct jtc_spawn how = {.log = log, .user = USER_B, .cwd = d};
	FILE *f;
	pid_t pid;

	jtc_tmpdir(d, dlen, "jds");
	assert_int_equal(chown(d, uid_b, gid_b), 0);
	assert_int_equal(chmod(d, 0711), 0);
	snprintf(sock, slen, "%s/s", d);
	snprintf(conf, sizeof(conf), "%s/c.json", d);
	snprintf(log, sizeof(log), "%s/log", d);
	stage_bin(d, "jschedd");
	stage_bin(d, "jschedd-runas");
	snprintf(bin, sizeof(bin), "%s/jschedd", d);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "{\"socket\": \"%s\", \"socket_mode\": \"0666\", \"workers\": 1, "
		"\"journal\": {\"dir\": \"%s/journal\"}%s%s}\n", sock, d, members[0] ? ", " : "",
		members);
	fclose(f);
	assert_int_equal(chmod(conf, 0644), 0);
	/* B's own directory is its working directory too: the test's may be one B cannot
	 * enter. */
	pid = jtc_spawn(&how, argv);
	jdt_wait_ready(sock, pid, log);
	return pid;
}

static void stop_b_daemon(pid_t pid, const char *d)
{
	assert_int_equal(jtc_stop(pid, SIGTERM, 30000), 0);
	assert_int_equal(jtc_rm_rf(d), 0);
}

/* root_exec: as root (not the daemon's user), submit `id -u` to the daemon at sock;
 * returns the reply (new reference). */
static json_t *root_exec(const char *sock, struct jsched_conn **c)
{
	assert_int_equal(jsched_connect(sock, NULL, c), 0);
	return jdt_req(*c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"id\", \"-u\"]}}");
}

static void test_daemon_not_root(void **state)
{
	char d[64], sock[128], expect[32];
	struct jsched_conn *c;
	json_t *r, *m, *rec;
	char *out;
	pid_t pid;
	uint64_t id;

	(void)state;
	need_root();
	/* jschedd running as B refuses root's exec jobs: it could only run them as B. */
	pid = start_as_b("", d, sizeof(d), sock, sizeof(sock));
	r = root_exec(sock, &c);
	assert_string_equal(jdt_err_code(r), "permission_denied");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")), "job.kind");
	json_decref(r);
	m = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "security"), "denied_exec")), 1);
	assert_false(json_is_true(json_object_get(json_object_get(m, "security"), "root")));
	json_decref(m);
	jsched_close(c);
	/* B's own job runs, as B. */
	b_sock = sock;
	rec = b_exec("{\"kind\": \"exec\", \"argv\": [\"id\", \"-u\"]}", &out);
	b_sock = NULL;
	snprintf(expect, sizeof(expect), "%u\n", (unsigned)uid_b);
	assert_string_equal(out, expect);
	free(out);
	json_decref(rec);
	stop_b_daemon(pid, d);
	/* With exec.allow_other_uids, root's job is accepted and runs as the daemon's user. */
	pid = start_as_b("\"exec\": {\"allow_other_uids\": true}", d, sizeof(d), sock, sizeof(sock));
	r = root_exec(sock, &c);
	assert_true(json_is_true(json_object_get(r, "ok")));
	id = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
	{
		json_t *o = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
		unsigned char *data = NULL;
		size_t len;
		bool tr;

		assert_int_equal(jp_output_stream_parse(json_object_get(o, "stdout"), &data, &len, &tr, NULL), 0);
		assert_string_equal((char *)data, expect);
		free(data);
		json_decref(o);
	}
	jsched_close(c);
	stop_b_daemon(pid, d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_names),
		cmocka_unit_test(test_other_users_jobs_are_invisible),
		cmocka_unit_test(test_exec_runs_as_its_owner),
		cmocka_unit_test(test_daemon_not_root),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
