/* tests/slurm/test_slurm_daemon.c: exec jobs sent to Slurm through the real jschedd, on
 * its real socket, against the one-node cluster of tests/slurm/cluster.sh.
 *
 * Each test starts its own jschedd (tests/daemon/harness.c) with a backends.slurm
 * section: submit, wait and output; exit codes and signals; a time limit; cancel of a
 * job still in jschedd's window and of a running one; a job as another uid; a local job
 * depending on a remote one that fails (jschedd's gate cancels it; Slurm never hears of
 * the dependency) and a remote one after a local success; the fair order of two
 * clients through a window of 2 (the order jobs reach Slurm is read from their Slurm
 * ids, which Slurm hands out in submission order); slurmctld stopped (the metrics say
 * so, the jobs are kept, a submit meanwhile is accepted, all end right once it is
 * back); a per-client default backend; `auto`; a backend the daemon lacks refused at
 * submit; `jsched submit --backend slurm`.
 *
 * Every wait is bounded (the harness's 30 s, or 60 s here); nothing is judged by time.
 * Outside `cluster.sh run`, or built without libslurm, it skips with the reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <grp.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef JD_WITH_SLURM
#include <slurm/slurm.h>
#endif

#include "jsched/jsched.h"
#include "tests/common/proc.h"
#include "tests/daemon/harness.h"
#include "tests/slurm/cluster.h"

#define TEST_USER "jsched-test"

static char members[2048];

/* start: a jschedd with the slurm backend (window `window`, `extra` members added). */
static void start(struct jdt *t, unsigned window, const char *extra)
{
	snprintf(members, sizeof(members),
		 "\"workers\": 2, \"backends\": {\"slurm\": {\"output_dir\": \"%s/out\", "
		 "\"partition\": \"%s\", \"poll_ms\": 100, \"max_submitted\": %u, "
		 "\"overflow_after_ms\": 300}}%s%s",
		 getenv("JSCHED_SLURM_DIR"), getenv("JSCHED_SLURM_PARTITION"), window,
		 extra[0] ? ", " : "", extra);
	jdt_start(t, members);
}

static bool is_final(const char *state)
{
	static const char *const finals[] = {"succeeded", "failed", "cancelled", "expired", "dropped"};

	for (size_t i = 0; state && i < 5; i++)
		if (strcmp(state, finals[i]) == 0)
			return true;
	return false;
}

static uint64_t submit(struct jsched_conn *c, const char *spec)
{
	json_t *r = jdt_ok(c, "{\"op\": \"submit\", \"job\": %s}", spec);
	uint64_t id = (uint64_t)json_integer_value(json_object_get(r, "job"));

	json_decref(r);
	assert_true(id > 0);
	return id;
}

static json_t *status(struct jsched_conn *c, uint64_t id)
{
	json_t *r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *rec = json_incref(json_object_get(r, "job"));

	json_decref(r);
	return rec;
}

/* wait_final: the final record of id (new reference), waiting up to 60 s. */
static json_t *wait_final(struct jsched_conn *c, uint64_t id)
{
	json_t *r = jdt_ok(c, "{\"op\": \"wait\", \"jobs\": [%llu], \"timeout_ms\": 60000}",
			   (unsigned long long)id);
	json_t *rec = json_incref(json_array_get(json_object_get(r, "jobs"), 0));

	json_decref(r);
	assert_non_null(rec);
	if (!is_final(json_string_value(json_object_get(rec, "state"))))
		fail_msg("job %llu not final after 60 s", (unsigned long long)id);
	return rec;
}

static const char *str(const json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));

	return s ? s : "";
}

static long long num(const json_t *rec, const char *key)
{
	json_t *v = json_object_get(rec, key);

	return v ? json_integer_value(v) : -1;
}

/* stdout_of: job id's captured stdout (static buffer). */
static const char *stdout_of(struct jsched_conn *c, uint64_t id)
{
	static char buf[4096];
	json_t *r = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	const char *b64 = json_string_value(json_object_get(json_object_get(r, "stdout"), "data"));
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;

	for (const char *p = b64 ? b64 : ""; *p && *p != '=' && n < sizeof(buf) - 1; p++) {
		const char *q = strchr(tbl, *p);

		if (!q)
			continue;
		acc = (acc << 6) | (unsigned)(q - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	buf[n] = '\0';
	json_decref(r);
	return buf;
}

static void test_submit_wait_output(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *rec, *m, *sl;
	uint64_t id;

	(void)state;
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	id = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", "
		       "\"echo out $X; echo err >&2\"], \"env\": {\"X\": \"y z\"}, \"cwd\": \"/tmp\"}");
	rec = wait_final(c, id);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_string_equal(str(rec, "backend"), "slurm");
	assert_true(num(rec, "slurm_job") > 0);
	assert_string_equal(str(rec, "node"), "jtest");
	assert_int_equal(num(rec, "exit_code"), 0);
	assert_true(num(rec, "started_ms") > 0);
	assert_true(num(rec, "finished_ms") >= num(rec, "started_ms"));
	json_decref(rec);
	assert_string_equal(stdout_of(c, id), "out y z\n");
	m = jdt_metrics(c);
	sl = json_object_get(json_object_get(m, "backends"), "slurm");
	assert_true(json_is_true(json_object_get(sl, "available")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(sl, "jobs"), "ended")), 1);
	assert_true(json_integer_value(json_object_get(json_object_get(sl, "polls"), "count")) > 0);
	json_decref(m);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_exit_codes_signals_time_limit(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *rec;
	uint64_t e, k, tl;

	(void)state;
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	e = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", \"exit 3\"]}");
	k = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", "
		      "\"kill -KILL $$\"]}");
	tl = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", \"60\"], "
		       "\"timeout_ms\": 300}");
	rec = wait_final(c, e);
	assert_string_equal(str(rec, "state"), "failed");
	assert_string_equal(str(rec, "cause"), "exit");
	assert_int_equal(num(rec, "exit_code"), 3);
	json_decref(rec);
	rec = wait_final(c, k);
	assert_string_equal(str(rec, "state"), "failed");
	assert_string_equal(str(rec, "cause"), "signal");
	assert_int_equal(num(rec, "signal"), 9);
	json_decref(rec);
	rec = wait_final(c, tl);
	assert_string_equal(str(rec, "state"), "failed");
	assert_string_equal(str(rec, "cause"), "timeout");
	json_decref(rec);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_cancel_pending_and_running(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *rec;
	uint64_t a, b, p;

	(void)state;
	start(&t, 2, "");
	c = jdt_connect(&t, NULL);
	a = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", \"60\"]}");
	b = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", \"60\"]}");
	/* The window (2) is full: the third waits in jschedd's queue, never seen by Slurm. */
	p = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/true\"]}");
	jdt_until_state(c, a, "running");
	jdt_until_state(c, b, "running");
	rec = status(c, p);
	assert_string_equal(str(rec, "state"), "queued");
	assert_int_equal(num(rec, "slurm_job"), -1);
	json_decref(rec);
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)p));
	rec = wait_final(c, p);
	assert_string_equal(str(rec, "state"), "cancelled");
	assert_string_equal(str(rec, "cause"), "cancel");
	json_decref(rec);
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)a));
	rec = wait_final(c, a);
	assert_string_equal(str(rec, "state"), "cancelled");
	assert_string_equal(str(rec, "cause"), "cancel");
	assert_true(num(rec, "slurm_job") > 0);
	json_decref(rec);
	/* An immediate shutdown stops the other through Slurm too. */
	assert_int_equal(jdt_stop(&t, SIGINT), 3);
	jsched_close(c);
}

static void test_dependencies_local_and_remote(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *r, *rec;
	uint64_t fail, dep, ok, after_ok;
	char spec[512];

	(void)state;
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	fail = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/false\"]}");
	snprintf(spec, sizeof(spec),
		 "{\"kind\": \"exec\", \"backend\": \"local\", \"argv\": [\"/bin/true\"], \"after\": [%llu]}",
		 (unsigned long long)fail);
	dep = submit(c, spec);
	rec = wait_final(c, dep);
	assert_string_equal(str(rec, "state"), "cancelled");
	assert_string_equal(str(rec, "cause"), "dependency");
	json_decref(rec);
	rec = wait_final(c, fail);
	assert_string_equal(str(rec, "state"), "failed");
	json_decref(rec);
	/* A remote job after a local success: a graph in one submit. */
	r = jdt_ok(c, "{\"op\": \"submit\", \"jobs\": ["
		      "{\"kind\": \"exec\", \"ref\": \"a\", \"argv\": [\"/bin/true\"]},"
		      "{\"kind\": \"exec\", \"backend\": \"slurm\", \"after\": [\"a\"], "
		      "\"argv\": [\"/bin/echo\", \"after local\"]}]}");
	ok = (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), 0));
	after_ok = (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), 1));
	json_decref(r);
	rec = wait_final(c, after_ok);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_string_equal(str(rec, "backend"), "slurm");
	json_decref(rec);
	rec = wait_final(c, ok);
	assert_int_equal(num(rec, "slurm_job"), -1); /* ran here */
	json_decref(rec);
	assert_string_equal(stdout_of(c, after_ok), "after local\n");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_fair_order_through_window(void **state)
{
	struct jdt t;
	struct jsched_conn *ca, *cb;
	uint64_t ids[12];
	long long sid[12];
	int order_b = 0;
	json_t *m, *sl;

	(void)state;
	start(&t, 2, "\"clients\": {\"a\": {\"weight\": 1}, \"b\": {\"weight\": 1}}");
	ca = jdt_connect(&t, "a");
	cb = jdt_connect(&t, "b");
	/* a's six first: by Slurm's queue alone they would all start before any of b's. */
	for (int i = 0; i < 6; i++)
		ids[i] = submit(ca, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", \"0.3\"]}");
	for (int i = 6; i < 12; i++)
		ids[i] = submit(cb, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", \"0.3\"]}");
	for (int i = 0; i < 12; i++) {
		json_t *rec = wait_final(i < 6 ? ca : cb, ids[i]);

		assert_string_equal(str(rec, "state"), "succeeded");
		sid[i] = num(rec, "slurm_job");
		assert_true(sid[i] > 0);
		json_decref(rec);
	}
	/* How many of b's jobs reached Slurm among the first six handed over. */
	for (int i = 6; i < 12; i++) {
		int rank = 0;

		for (int k = 0; k < 12; k++)
			rank += sid[k] < sid[i];
		order_b += rank < 6;
	}
	{
		char seq[13] = "";

		for (int r = 0; r < 12; r++)
			for (int k = 0; k < 12; k++) {
				int rank = 0;

				for (int q = 0; q < 12; q++)
					rank += sid[q] < sid[k];
				if (rank == r)
					seq[r] = k < 6 ? 'a' : 'b';
			}
		printf("order jobs reached Slurm: %s\n", seq);
		if (order_b < 2)
			fail_msg("only %d of b's jobs among the first 6 sent to Slurm (%s): the window "
				 "did not keep the fair order", order_b, seq);
	}
	m = jdt_metrics(ca);
	sl = json_object_get(json_object_get(m, "backends"), "slurm");
	assert_int_equal(json_integer_value(json_object_get(sl, "window")), 2);
	assert_int_equal(json_integer_value(json_object_get(sl, "peak_in_window")), 2);
	json_decref(m);
	jsched_close(ca);
	jsched_close(cb);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static bool controller_up(struct jsched_conn *c, char *err, size_t len)
{
	json_t *m = jdt_metrics(c);
	json_t *sl = json_object_get(json_object_get(m, "backends"), "slurm");
	bool up = json_is_true(json_object_get(sl, "controller_up"));

	snprintf(err, len, "%s", str(sl, "error"));
	json_decref(m);
	return up;
}

static void test_controller_outage(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char err[256];
	json_t *rec;
	uint64_t run, late;
	int i;

	(void)state;
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	run = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", "
			"\"sleep 3; echo survived\"]}");
	jdt_until_state(c, run, "running");
	assert_int_equal(jst_ctld("stop"), 0);
	for (i = 0; i < 600 && controller_up(c, err, sizeof(err)); i++)
		jdt_sleep_ms(50);
	assert_false(controller_up(c, err, sizeof(err)));
	assert_non_null(strstr(err, "poll"));
	/* Asked while it is down: accepted and kept. */
	late = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/echo\", \"late\"]}");
	rec = status(c, run);
	assert_string_equal(str(rec, "state"), "running");
	json_decref(rec);
	rec = status(c, late);
	assert_string_equal(str(rec, "state"), "queued");
	json_decref(rec);
	assert_int_equal(jst_ctld("start"), 0);
	rec = wait_final(c, run);
	assert_string_equal(str(rec, "state"), "succeeded");
	json_decref(rec);
	assert_string_equal(stdout_of(c, run), "survived\n");
	rec = wait_final(c, late);
	assert_string_equal(str(rec, "state"), "succeeded");
	json_decref(rec);
	assert_string_equal(stdout_of(c, late), "late\n");
	assert_true(controller_up(c, err, sizeof(err)));
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_other_uid(void **state)
{
	struct jdt t;
	struct passwd *pw;
	char dir[4200];
	int fds[2], st;
	pid_t pid;
	char line[4096] = "";
	FILE *in;

	(void)state;
	if (!getpwnam(TEST_USER) &&
	    system("useradd --no-create-home --shell /usr/sbin/nologin " TEST_USER " 2>/dev/null") != 0) {
		fprintf(stderr, "skipped: could not create the user " TEST_USER "\n");
		skip();
	}
	pw = getpwnam(TEST_USER);
	assert_non_null(pw);
	snprintf(dir, sizeof(dir), "%s/home-d", getenv("JSCHED_SLURM_DIR"));
	mkdir(dir, 0700);
	assert_int_equal(chown(dir, pw->pw_uid, pw->pw_gid), 0);
	start(&t, 4, "\"socket_mode\": \"0666\"");
	assert_int_equal(chmod(t.dir, 0711), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct jsched_conn *c = NULL;
		char why[256], req[4600], *reply = NULL;
		FILE *out = fdopen(fds[1], "w");
		json_t *r;
		uint64_t id;

		close(fds[0]);
		if (initgroups(TEST_USER, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0 || getuid() == 0)
			_exit(2);
		if (jsched_connect_error(t.sock, NULL, &c, why, sizeof(why)) != 0)
			_exit(3);
		snprintf(req, sizeof(req),
			 "{\"op\": \"submit\", \"id\": 1, \"job\": {\"kind\": \"exec\", \"backend\": \"slurm\", "
			 "\"cwd\": \"%s\", \"argv\": [\"/bin/sh\", \"-c\", \"id -u; touch f; stat -c %%u f\"]}}",
			 dir);
		if (jsched_request(c, req, &reply) != 0 || !(r = json_loads(reply, 0, NULL)))
			_exit(4);
		id = (uint64_t)json_integer_value(json_object_get(r, "job"));
		snprintf(req, sizeof(req),
			 "{\"op\": \"wait\", \"id\": 2, \"jobs\": [%llu], \"timeout_ms\": 60000}",
			 (unsigned long long)id);
		jsched_free(reply);
		if (jsched_request(c, req, &reply) != 0)
			_exit(5);
		fprintf(out, "%llu %s\n", (unsigned long long)id, reply);
		jsched_free(reply);
		jsched_close(c);
		fclose(out);
		_exit(0);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	assert_non_null(fgets(line, sizeof(line), in));
	fclose(in);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	{
		struct jsched_conn *c = jdt_connect(&t, NULL); /* root: an admin sees every job */
		unsigned long long id = strtoull(line, NULL, 10);
		json_t *rec = status(c, id);
		char want[64];

		assert_string_equal(str(rec, "state"), "succeeded");
		assert_int_equal(num(rec, "uid"), (long long)pw->pw_uid);
		json_decref(rec);
		snprintf(want, sizeof(want), "%u\n%u\n", (unsigned)pw->pw_uid, (unsigned)pw->pw_uid);
		assert_string_equal(stdout_of(c, id), want);
		jsched_close(c);
	}
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* gated: a remote command that waits (bounded, 60 s) for the file `go` in the cluster's
 * dir, then prints `word` and exits with `code`; the spec as JSON (static buffer). */
static const char *gated(const char *word, int code)
{
	static char spec[1024];

	snprintf(spec, sizeof(spec),
		 "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", "
		 "\"i=0; while [ ! -e '%s/go' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
		 "echo %s; exit %d\"]}", getenv("JSCHED_SLURM_DIR"), word, code);
	return spec;
}

static void go(bool on)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/go", getenv("JSCHED_SLURM_DIR"));
	if (on)
		fclose(fopen(path, "w"));
	else
		unlink(path);
}

/* test_restart_reattach: jschedd killed (SIGKILL) with two remote jobs running, one
 * submitted and pending in Slurm (the node's CPUs are taken) and one still in jschedd's
 * window; restarted on the same journal it watches the three Slurm jobs again (the
 * same Slurm ids, running / queued as before) and submits the fourth once; each ends
 * with its real exit code and output. */
static void test_restart_reattach(void **state)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct jdt t;
	struct jsched_conn *c;
	uint64_t run[2], pend, held;
	long long sid[2], psid;
	json_t *rec, *m, *sl;
	int i;

	(void)state;
	if (cpus != 2) {
		/* The node has this machine's CPUs: two jobs must fill it. */
		fprintf(stderr, "skipped: the node has %ld CPUs, the test fills 2\n", cpus);
		skip();
	}
	go(false);
	start(&t, 3, "");
	c = jdt_connect(&t, NULL);
	run[0] = submit(c, gated("first", 5));
	run[1] = submit(c, gated("second", 0));
	jdt_until_state(c, run[0], "running");
	jdt_until_state(c, run[1], "running");
	pend = submit(c, gated("pending", 7));
	held = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/echo\", \"held\"]}");
	/* Pending in Slurm: submitted (it has a Slurm id), not started (no CPU free). */
	for (i = 0; i < 600; i++) {
		rec = status(c, pend);
		psid = num(rec, "slurm_job");
		json_decref(rec);
		if (psid > 0)
			break;
		jdt_sleep_ms(50);
	}
	assert_true(psid > 0);
	for (i = 0; i < 2; i++) {
		rec = status(c, run[i]);
		sid[i] = num(rec, "slurm_job");
		json_decref(rec);
	}
	rec = status(c, held);
	assert_string_equal(str(rec, "state"), "queued");
	assert_int_equal(num(rec, "slurm_job"), -1); /* the window (3) is full */
	json_decref(rec);
	jsched_close(c);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, NULL);
	for (i = 0; i < 2; i++) {
		rec = status(c, run[i]);
		assert_string_equal(str(rec, "state"), "running");
		assert_int_equal(num(rec, "slurm_job"), sid[i]);
		json_decref(rec);
	}
	rec = status(c, pend);
	assert_string_equal(str(rec, "state"), "queued");
	assert_int_equal(num(rec, "slurm_job"), psid);
	json_decref(rec);
	m = jdt_metrics(c);
	sl = json_object_get(json_object_get(m, "backends"), "slurm");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(sl, "jobs"), "reattached")), 3);
	assert_int_equal(json_integer_value(json_object_get(sl, "attached")), 3);
	json_decref(m);
	go(true);
	rec = wait_final(c, run[0]);
	assert_string_equal(str(rec, "state"), "failed");
	assert_string_equal(str(rec, "cause"), "exit");
	assert_int_equal(num(rec, "exit_code"), 5);
	assert_int_equal(num(rec, "slurm_job"), sid[0]);
	assert_string_equal(str(rec, "node"), "jtest");
	json_decref(rec);
	assert_string_equal(stdout_of(c, run[0]), "first\n");
	rec = wait_final(c, run[1]);
	assert_string_equal(str(rec, "state"), "succeeded");
	json_decref(rec);
	assert_string_equal(stdout_of(c, run[1]), "second\n");
	rec = wait_final(c, pend);
	assert_string_equal(str(rec, "state"), "failed");
	assert_int_equal(num(rec, "exit_code"), 7);
	assert_int_equal(num(rec, "slurm_job"), psid);
	json_decref(rec);
	assert_string_equal(stdout_of(c, pend), "pending\n");
	rec = wait_final(c, held);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_true(num(rec, "slurm_job") > psid); /* submitted after the restart, once */
	json_decref(rec);
	assert_string_equal(stdout_of(c, held), "held\n");
	go(false);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* test_restart_finds_unrecorded: a job whose submit reached Slurm without jschedd's
 * record of it (as when jschedd is killed between the RPC and the record: simulated by
 * submitting it with sbatch, tagged as jschedd tags it, while jschedd's own submit is
 * held back by a stopped slurmctld) is found after the restart and watched, not
 * submitted again; a job that never reached Slurm is submitted once; a job of another
 * user carrying the same tag is not taken for ours. */
static void test_restart_finds_unrecorded(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char err[256], tag[64], cmd[8192], line[64] = "";
	uint64_t lost, never;
	long long sbid = 0;
	json_t *rec, *m, *sl;
	FILE *p;
	int i;

	(void)state;
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	m = jdt_metrics(c);
	sl = json_object_get(json_object_get(m, "backends"), "slurm");
	snprintf(tag, sizeof(tag), "%s", str(sl, "tag"));
	json_decref(m);
	assert_true(tag[0] == 'j' && strlen(tag) == 17);
	assert_int_equal(jst_ctld("stop"), 0);
	lost = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/echo\", \"resubmitted\"]}");
	never = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/echo\", \"never\"]}");
	/* The backend has tried (and failed) to submit: the controller is down to it. */
	for (i = 0; i < 600 && controller_up(c, err, sizeof(err)); i++)
		jdt_sleep_ms(50);
	assert_false(controller_up(c, err, sizeof(err)));
	jsched_close(c);
	jdt_kill9(&t);
	assert_int_equal(jst_ctld("start"), 0);
	/* What the killed jschedd's submit of `lost` would have left in Slurm. */
	snprintf(cmd, sizeof(cmd),
		 "sbatch --parsable -p '%s' -J jschedd-%llu --comment 'jschedd:%s:%llu' "
		 "-o '%s/out/%s-%llu.out' -e '%s/out/%s-%llu.err' --wrap 'echo from before the restart'",
		 getenv("JSCHED_SLURM_PARTITION"), (unsigned long long)lost, tag,
		 (unsigned long long)lost, getenv("JSCHED_SLURM_DIR"), tag, (unsigned long long)lost,
		 getenv("JSCHED_SLURM_DIR"), tag, (unsigned long long)lost);
	for (i = 0; i < 100 && !sbid; i++) { /* the controller may still be starting */
		p = popen(cmd, "r");
		assert_non_null(p);
		if (fgets(line, sizeof(line), p))
			sbid = strtoll(line, NULL, 10);
		pclose(p);
		if (!sbid)
			jdt_sleep_ms(100);
	}
	assert_true(sbid > 0);
	/* The same tag on another user's job (anyone may write any comment). */
	if (getpwnam(TEST_USER)) {
		snprintf(cmd, sizeof(cmd),
			 "sbatch --parsable -p '%s' --uid '%s' --comment 'jschedd:%s:%llu' -o /dev/null "
			 "--wrap true >/dev/null", getenv("JSCHED_SLURM_PARTITION"), TEST_USER, tag,
			 (unsigned long long)never);
		assert_int_equal(system(cmd), 0);
	}
	jdt_restart(&t);
	c = jdt_connect(&t, NULL);
	rec = wait_final(c, lost);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_int_equal(num(rec, "slurm_job"), sbid);
	json_decref(rec);
	assert_string_equal(stdout_of(c, lost), "from before the restart\n");
	rec = wait_final(c, never);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_true(num(rec, "slurm_job") > sbid);
	json_decref(rec);
	assert_string_equal(stdout_of(c, never), "never\n");
	m = jdt_metrics(c);
	sl = json_object_get(json_object_get(m, "backends"), "slurm");
	assert_int_equal(json_integer_value(json_object_get(sl, "found")), 1);
	assert_int_equal(json_integer_value(json_object_get(sl, "submitted")), 1);
	json_decref(m);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* test_resources: a job's memory and cpus reach Slurm (what slurmctld recorded, read with
 * slurm_load_job): memory in MiB rounded up, cpus as whole CPUs rounded up (1.5 -> 2,
 * which the batch step sees as SLURM_JOB_CPUS_PER_NODE); more memory than the node has is
 * Slurm's refusal, failing the job with its message. */
static void test_resources(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *rec;
	uint64_t id, big;
	long long sid;

	(void)state;
#ifndef JD_WITH_SLURM
	fprintf(stderr, "skipped: built without libslurm (reads the job from Slurm)\n");
	skip();
#else
	job_info_msg_t *info = NULL;

	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	id = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sh\", \"-c\", "
		       "\"echo $SLURM_JOB_CPUS_PER_NODE\"], \"resources\": {\"memory\": 67108865, \"cpus\": 1.5}}");
	rec = wait_final(c, id);
	assert_string_equal(str(rec, "state"), "succeeded");
	sid = num(rec, "slurm_job");
	json_decref(rec);
	assert_string_equal(stdout_of(c, id), "2\n");
	slurm_init(NULL);
	assert_int_equal(slurm_load_job(&info, (uint32_t)sid, SHOW_ALL), 0);
	assert_int_equal(info->record_count, 1);
	/* 64 MiB and one byte: 65 MiB, per node (not per CPU) */
	assert_true((info->job_array[0].pn_min_memory & MEM_PER_CPU) == 0);
	assert_int_equal(info->job_array[0].pn_min_memory, 65);
	assert_int_equal(info->job_array[0].num_cpus, 2);
	assert_int_equal(info->job_array[0].cpus_per_task, 2);
	slurm_free_job_info_msg(info);
	slurm_fini();
	big = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/true\"], "
			"\"resources\": {\"memory\": \"1024T\"}}");
	rec = wait_final(c, big);
	assert_string_equal(str(rec, "state"), "failed");
	assert_string_equal(str(rec, "cause"), "spawn");
	assert_non_null(strstr(str(rec, "reason"), "slurm refused the job"));
	json_decref(rec);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
#endif
}

static void test_client_default_and_auto(void **state)
{
	struct jdt t;
	struct jsched_conn *r, *l;
	json_t *rec;
	uint64_t d, busy, a, here;

	(void)state;
	start(&t, 4, "\"exec\": {\"max_processes\": 1}, \"clients\": {\"remote\": {\"backend\": \"slurm\"}}");
	r = jdt_connect(&t, "remote");
	l = jdt_connect(&t, "here");
	/* The client's default: no backend in the spec. */
	d = submit(r, "{\"kind\": \"exec\", \"argv\": [\"/bin/true\"]}");
	rec = wait_final(r, d);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_string_equal(str(rec, "backend"), "slurm");
	json_decref(rec);
	/* auto with a free slot: here. */
	here = submit(l, "{\"kind\": \"exec\", \"backend\": \"auto\", \"argv\": [\"/bin/true\"]}");
	rec = wait_final(l, here);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_int_equal(num(rec, "slurm_job"), -1);
	assert_string_equal(str(rec, "backend"), "");
	json_decref(rec);
	/* auto while the only slot is taken: to Slurm after overflow_after_ms. */
	busy = submit(l, "{\"kind\": \"exec\", \"backend\": \"local\", \"argv\": [\"/bin/sleep\", \"60\"]}");
	jdt_until_state(l, busy, "running");
	a = submit(l, "{\"kind\": \"exec\", \"backend\": \"auto\", \"argv\": [\"/bin/echo\", \"overflowed\"]}");
	rec = wait_final(l, a);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_string_equal(str(rec, "backend"), "slurm");
	json_decref(rec);
	assert_string_equal(stdout_of(l, a), "overflowed\n");
	json_decref(jdt_ok(l, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)busy));
	json_decref(wait_final(l, busy));
	/* set_client changes a client's default at run time. */
	rec = jdt_ok(l, "{\"op\": \"set_client\", \"client\": \"here\", \"backend\": \"slurm\"}");
	assert_string_equal(str(json_object_get(rec, "client"), "backend"), "slurm");
	json_decref(rec);
	d = submit(l, "{\"kind\": \"exec\", \"argv\": [\"/bin/true\"]}");
	rec = wait_final(l, d);
	assert_string_equal(str(rec, "backend"), "slurm");
	json_decref(rec);
	jsched_close(r);
	jsched_close(l);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* A queued command's backend survives a restart from a snapshot: the snapshot rebuilds
 * each job's spec, and the backend chosen at submit comes back with it (not the
 * client's default, here local).  The only window place is taken by a remote sleeper,
 * so the job is still queued in jschedd when the snapshot is written. */
static void test_snapshot_keeps_backend(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	char conf[3072];
	uint64_t blocker, x, last = 0;
	json_t *rec;

	(void)state;
	start(&t, 1, "");
	snprintf(conf, sizeof(conf), "%s, \"retention\": {\"jobs\": 20}, \"journal\": {\"dir\": "
		 "\"%s/journal\", \"compact_bytes\": 65536}", members, t.dir);
	jdt_write_config(&t, conf);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "here");
	blocker = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/sleep\", "
			    "\"20\"]}");
	jdt_until_state(c, blocker, "running");
	x = submit(c, "{\"kind\": \"exec\", \"backend\": \"slurm\", \"argv\": [\"/bin/echo\", "
		      "\"remote\"]}");
	for (int i = 0; i < 3000; i++)
		last = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, last, NULL), "succeeded");
	jdt_wait_snapshots(c, 1);
	/* still waiting for the window when the snapshot was taken (and now) */
	rec = status(c, x);
	assert_string_equal(str(rec, "state"), "queued");
	json_decref(rec);
	jsched_close(c);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "here");
	rec = wait_final(c, x);
	assert_string_equal(str(rec, "state"), "succeeded");
	assert_string_equal(str(rec, "backend"), "slurm");
	json_decref(rec);
	assert_string_equal(stdout_of(c, x), "remote\n");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_unavailable_and_cli(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *r;
	char cmd[2048];

	(void)state;
	jdt_start(&t, "\"workers\": 2");
	c = jdt_connect(&t, NULL);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"backend\": \"slurm\", "
		       "\"argv\": [\"/bin/true\"]}}");
	assert_string_equal(jdt_err_code(r), "not_supported");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "job.backend");
	json_decref(r);
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"backend\": \"mars\", "
		       "\"argv\": [\"/bin/true\"]}}");
	assert_string_equal(jdt_err_code(r), "bad_request");
	json_decref(r);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	/* The tool, against a daemon that has the backend. */
	start(&t, 4, "");
	c = jdt_connect(&t, NULL);
	/* A limit Slurm has no equivalent for: refused, never ignored. */
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"backend\": \"slurm\", "
		       "\"argv\": [\"/bin/true\"], \"resources\": {\"pids\": 10}}}");
	assert_string_equal(jdt_err_code(r), "not_supported");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
			    "job.resources.pids");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
			       "slurm backend has no pids limit"));
	json_decref(r);
	jsched_close(c);
	snprintf(cmd, sizeof(cmd), "JSCHED_SOCKET='%s' '%s/bin/jsched' submit --backend slurm -w -- "
		 "/bin/sh -c 'exit 4' >/dev/null", t.sock, t.build);
	assert_int_equal(WEXITSTATUS(system(cmd)), 4);
	snprintf(cmd, sizeof(cmd), "'%s/bin/jschedd' --version | grep -q 'slurm (libslurm 22.05'", t.build);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_submit_wait_output),
		cmocka_unit_test(test_exit_codes_signals_time_limit),
		cmocka_unit_test(test_cancel_pending_and_running),
		cmocka_unit_test(test_dependencies_local_and_remote),
		cmocka_unit_test(test_fair_order_through_window),
		cmocka_unit_test(test_controller_outage),
		cmocka_unit_test(test_restart_reattach),
		cmocka_unit_test(test_restart_finds_unrecorded),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_other_uid),
		cmocka_unit_test(test_client_default_and_auto),
		cmocka_unit_test(test_unavailable_and_cli),
		cmocka_unit_test(test_snapshot_keeps_backend),
	};
	char cmd[4200];

	if (!getenv("JSCHED_SLURM_CLUSTER") || !getenv("JSCHED_SLURM_DIR")) {
		printf("skipped: needs the cluster of tests/slurm/cluster.sh (make test-slurm)\n");
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "'%s/bin/jschedd' --version | grep -q 'slurm (libslurm'",
		 jtc_build_dir());
	if (system(cmd) != 0) {
		printf("skipped: this jschedd is built without the slurm backend\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
