/* tests/daemon/test_daemon_exec.c: exec jobs against a real jschedd: exit codes and
 * signals, output capture and truncation, stdin, env and cwd, the time limit, cancel of a
 * running command and of the children it started, commands that cannot start (also when the
 * exec itself fails, in the child), what a command starts with (session, signals,
 * descriptors, directory, group) when it starts without the helper, the cap on
 * concurrent processes (jobs past it stay queued and call jobs are not held up by them),
 * a handler's child process through jsched_task_run, no process left behind after
 * either kind of shutdown, and the config keys (a bad one is named).
 *
 * Nothing here depends on timing: commands that must be running are `sleep 300`, and the
 * test waits (bounded) for the state it needs before acting; a "time limit" test checks
 * the outcome (cause timeout, SIGTERM), not how long it took.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/daemon/harness.h"

static struct jdt t;

static int setup(void **state)
{
	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"output_bytes\": 1000, \"kill_grace_ms\": 2000}");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	return 0;
}

/* output: the decoded stdout (or stderr) of job id, NUL-terminated (free it); *trunc and
 * *complete if not NULL. */
static char *output(struct jsched_conn *c, uint64_t id, const char *stream, bool *trunc,
		    bool *complete)
{
	json_t *r = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	json_t *s = json_object_get(r, stream);
	unsigned char *data = NULL;
	size_t len = 0;
	bool tr = false;

	assert_int_equal(jp_output_stream_parse(s, &data, &len, &tr, NULL), 0);
	if (trunc)
		*trunc = tr;
	if (complete)
		*complete = json_is_true(json_object_get(r, "complete"));
	json_decref(r);
	return (char *)data;
}

static void expect_final(struct jsched_conn *c, uint64_t id, const char *state, const char *cause,
			 json_t **rec_out)
{
	json_t *rec;
	const char *s = jdt_wait_final(c, id, &rec);

	if (strcmp(s, state) != 0) {
		char *dump = json_dumps(rec, 0);

		fail_msg("job %llu ended %s, expected %s: %s", (unsigned long long)id, s, state, dump);
	}
	if (cause)
		assert_string_equal(json_string_value(json_object_get(rec, "cause")), cause);
	if (rec_out)
		*rec_out = rec;
	else
		json_decref(rec);
}

static void test_exit_codes_and_signals(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t ok = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"]}");
	uint64_t three = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"exit 3\"]}");
	uint64_t killed = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"kill -9 $$\"]}");
	json_t *rec;

	(void)state;
	expect_final(c, ok, "succeeded", NULL, &rec);
	assert_int_equal(json_integer_value(json_object_get(rec, "exit_code")), 0);
	assert_string_equal(json_string_value(json_object_get(rec, "kind")), "exec");
	assert_non_null(json_object_get(rec, "started_ms"));
	json_decref(rec);
	expect_final(c, three, "failed", "exit", &rec);
	assert_int_equal(json_integer_value(json_object_get(rec, "exit_code")), 3);
	assert_null(json_object_get(rec, "signal"));
	assert_string_equal(json_string_value(json_object_get(rec, "reason")), "exited with status 3");
	json_decref(rec);
	expect_final(c, killed, "failed", "signal", &rec);
	assert_int_equal(json_integer_value(json_object_get(rec, "signal")), 9);
	assert_null(json_object_get(rec, "exit_code"));
	json_decref(rec);
	jsched_close(c);
}

static void test_output_capture_and_truncation(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	/* `seq 1 2000` (8,893 bytes) on stdout against a limit of 1000 per stream; 4 on
	 * stderr: the first 500 bytes and the last 500 are kept, the marker between. */
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
			     "\"seq 1 2000; echo err >&2\"]}");
	char want[10000], mark[64];
	size_t n = 0;
	bool trunc, complete;
	char *out, *err;

	(void)state;
	for (int i = 1; i <= 2000; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%d\n", i);
	assert_int_equal(n, 8893);
	snprintf(mark, sizeof(mark), "\n[jschedd: %zu bytes not kept]\n", n - 1000);
	expect_final(c, id, "succeeded", NULL, NULL);
	out = output(c, id, "stdout", &trunc, &complete);
	assert_true(complete);
	assert_true(trunc);
	assert_int_equal(strlen(out), 1000 + strlen(mark));
	assert_memory_equal(out, want, 500);
	assert_memory_equal(out + 500, mark, strlen(mark));
	assert_memory_equal(out + 500 + strlen(mark), want + n - 500, 500);
	free(out);
	err = output(c, id, "stderr", &trunc, NULL);
	assert_false(trunc);
	assert_string_equal(err, "err\n");
	free(err);
	jsched_close(c);
}

static void test_stdin_env_cwd(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	/* "hello\n" in base64; no PATH in the job's environment: `sh` and `cat` are found in
	 * the default /usr/local/bin:/usr/bin:/bin. */
	uint64_t in = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"cat\"], \"stdin\": \"aGVsbG8K\"}");
	uint64_t env = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
			      "\"echo $FOO; pwd; echo ${HOME:-unset}\"], \"env\": {\"FOO\": \"bar\"}, "
			      "\"cwd\": \"/tmp\"}");
	uint64_t noin = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"wc\", \"-c\"]}");
	char *s;

	(void)state;
	expect_final(c, in, "succeeded", NULL, NULL);
	s = output(c, in, "stdout", NULL, NULL);
	assert_string_equal(s, "hello\n");
	free(s);
	/* The daemon's own environment (HOME, ...) is not passed on. */
	expect_final(c, env, "succeeded", NULL, NULL);
	s = output(c, env, "stdout", NULL, NULL);
	assert_string_equal(s, "bar\n/tmp\nunset\n");
	free(s);
	/* Without stdin the command reads /dev/null. */
	expect_final(c, noin, "succeeded", NULL, NULL);
	s = output(c, noin, "stdout", NULL, NULL);
	assert_string_equal(s, "0\n");
	free(s);
	jsched_close(c);
}

static void test_time_limit(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"], \"timeout_ms\": 100}");
	json_t *rec;

	(void)state;
	expect_final(c, id, "failed", "timeout", &rec);
	assert_int_equal(json_integer_value(json_object_get(rec, "signal")), SIGTERM);
	json_decref(rec);
	jsched_close(c);
}

/* pid_gone: wait (bounded 20 s) until pid no longer runs (gone, or a zombie nobody has
 * reaped yet); returns whether it did. */
static bool pid_gone(pid_t pid)
{
	for (int i = 0; i < 2000; i++) {
		char path[64], buf[256];
		FILE *f;
		const char *paren;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "r")))
			return true;
		buf[0] = '\0';
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
		paren = strrchr(buf, ')');
		if (paren && paren[1] == ' ' && paren[2] == 'Z')
			return true;
		jdt_sleep_ms(10);
	}
	return false;
}

/* started_pids: wait (bounded) until job id's stdout has two pids on its first line (the
 * shell's and its background child's). */
static void started_pids(struct jsched_conn *c, uint64_t id, pid_t *sh, pid_t *child)
{
	for (int i = 0; i < 3000; i++) {
		char *s = output(c, id, "stdout", NULL, NULL);
		int a = 0, b = 0;
		bool got = s && strchr(s, '\n') && sscanf(s, "%d %d", &a, &b) == 2;

		free(s);
		if (got) {
			*sh = a;
			*child = b;
			return;
		}
		jdt_sleep_ms(10);
	}
	fail_msg("job %llu never printed its pids", (unsigned long long)id);
}

#define SH_WITH_CHILD "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"sleep 300 & echo $$ $!; wait\"]}"

static void test_cancel_running_and_children(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t id = jdt_submit_spec(c, SH_WITH_CHILD);
	pid_t sh, child;
	json_t *r;

	(void)state;
	started_pids(c, id, &sh, &child);
	assert_string_equal(jdt_state(c, id), "running");
	assert_int_equal(kill(child, 0), 0);
	{
		/* The capture so far, while it runs. */
		bool complete = true;
		char *s = output(c, id, "stdout", NULL, &complete);

		assert_false(complete);
		free(s);
	}
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)id);
	json_decref(r);
	expect_final(c, id, "cancelled", "cancel", NULL);
	assert_true(pid_gone(sh));
	assert_true(pid_gone(child));
	jsched_close(c);
}

static void test_leftovers_stopped_when_leader_exits(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	/* The shell exits at once, leaving a background sleep that holds its stdout: the
	 * job ends when the group is stopped, and nothing of it remains. */
	uint64_t id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", \"sleep 300 & echo $$ $!\"]}");
	pid_t sh, child;
	char *s;

	(void)state;
	expect_final(c, id, "succeeded", NULL, NULL);
	s = output(c, id, "stdout", NULL, NULL);
	assert_int_equal(sscanf(s, "%d %d", &sh, &child), 2);
	free(s);
	assert_true(pid_gone(child));
	jsched_close(c);
}

/* file_in_dir: the file `name` in the test daemon's directory, holding text, with mode;
 * its path into path. */
static void file_in_dir(char *path, size_t len, const char *name, const char *text, mode_t mode)
{
	FILE *f;

	snprintf(path, len, "%s/%s", t.dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* A build without the direct start (TSan's, or a CPU without arch/rawsys.h) starts every
 * command through jschedd-runas or posix_spawn; what only the direct start does is
 * skipped there, saying so. */
#define NO_DIRECT_START "this build starts commands through jschedd-runas or posix_spawn " \
			"(no direct start: a TSan build, or a CPU without arch/rawsys.h)"

static void test_cannot_start(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t nofile = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"/nonexistent/cmd\"]}");
	uint64_t nopath = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"no-such-command-jsched\"]}");
	uint64_t noexec, badexec;
	char plain[400], garbage[400], want[500];

	/* A plain file, mode 0644: not executable, even for root. */
	file_in_dir(plain, sizeof(plain), "plain", "echo should not run\n", 0644);
	noexec = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"%s\"]}", plain);
	/* Executable but neither a program nor a script: the exec itself fails, after the
	 * fork, so the child reports it (process.c). */
	file_in_dir(garbage, sizeof(garbage), "garbage", "\x01\x02 not a program\n", 0755);
	badexec = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"%s\"]}", garbage);
	uint64_t nocwd = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"cwd\": \"/nonexistent\"}");
	json_t *rec;

	(void)state;
	expect_final(c, nofile, "failed", "spawn", &rec);
	assert_string_equal(json_string_value(json_object_get(rec, "reason")),
			    "no such file or directory: /nonexistent/cmd");
	json_decref(rec);
	expect_final(c, nopath, "failed", "spawn", &rec);
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "no such file"));
	json_decref(rec);
	expect_final(c, noexec, "failed", "spawn", &rec);
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "permission denied"));
	json_decref(rec);
	expect_final(c, nocwd, "failed", "spawn", &rec);
	assert_non_null(strstr(json_string_value(json_object_get(rec, "reason")), "working directory"));
	json_decref(rec);
	/* On every start path (test_daemon_start): not handed to sh. */
	expect_final(c, badexec, "failed", "spawn", &rec);
	snprintf(want, sizeof(want), "exec format error: %s", garbage);
	assert_string_equal(json_string_value(json_object_get(rec, "reason")), want);
	json_decref(rec);
	jsched_close(c);
}

/* test_started_directly: a command of the daemon's own uid (also root's, with cgroups)
 * starts without jschedd-runas (process.c's direct start), in its group when there is
 * one, with its pipes at 0-2, its own session, default signal
 * dispositions and an empty mask, in its working directory. */
static void test_started_directly(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	json_t *m0 = jdt_metrics(c), *m1, *rec;
	json_int_t direct0, helper0;
	char *out;
	uint64_t id;

	(void)state;
	direct0 = json_integer_value(json_object_get(json_object_get(m0, "exec"), "direct"));
	helper0 = json_integer_value(json_object_get(json_object_get(m0, "exec"), "run_as_helper"));
	json_decref(m0);
	id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"cwd\": \"/tmp\", \"argv\": [\"sh\", \"-c\", "
			     "\"pwd; "
			     "read -r a b c d e sid r < /proc/$$/stat; [ $sid -eq $$ ] && echo session; "
			     "grep -E '^Sig(Blk|Ign)' /proc/self/status; "
			     "grep -q job- /proc/self/cgroup && echo group; echo end\"]}");
	expect_final(c, id, "succeeded", NULL, &rec);
	json_decref(rec);
	if (jdt_metric_int(c, "exec/direct") == direct0) {
		jsched_close(c);
		fprintf(stderr, "skipped: %s\n", NO_DIRECT_START);
		skip();
	}
	out = output(c, id, "stdout", NULL, NULL);
	assert_non_null(strstr(out, "/tmp\n"));
	assert_non_null(strstr(out, "session\n"));
	assert_non_null(strstr(out, "SigBlk:\t0000000000000000\n"));
	assert_non_null(strstr(out, "SigIgn:\t0000000000000000\n"));
	assert_non_null(strstr(out, "end\n"));
	m1 = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m1, "exec"), "direct")),
			 direct0 + 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m1, "exec"), "run_as_helper")),
			 helper0);
	/* With groups on (root here), it ran in its job's. */
	if (strcmp(json_string_value(json_object_get(json_object_get(json_object_get(m1, "exec"), "cgroups"),
						      "mode")), "none") != 0)
		assert_non_null(strstr(out, "group\n"));
	json_decref(m1);
	free(out);
	jsched_close(c);
}

static void test_handler_child_process(void **state)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	uint64_t id = jdt_submit_call(c, "example.run", "{\"argv\": [\"sh\", \"-c\", \"echo from-child; exit 7\"]}");
	json_t *rec, *v;

	(void)state;
	expect_final(c, id, "succeeded", NULL, &rec);
	v = json_object_get(rec, "value");
	assert_int_equal(json_integer_value(json_object_get(v, "exit_code")), 7);
	assert_string_equal(json_string_value(json_object_get(v, "stdout")), "from-child\n");
	json_decref(rec);
	jsched_close(c);
}

static void test_process_cap(void **state)
{
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t ids[5], noop;
	int running = 0, queued = 0;
	json_t *r;

	(void)state;
	jdt_start(&t2, "\"workers\": 2, \"exec\": {\"max_processes\": 2}");
	c = jdt_connect(&t2, NULL);
	for (int i = 0; i < 5; i++)
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
	/* Two run; three wait for a slot, still queued, holding no fiber or worker. */
	for (int i = 0; i < 3000 && !(jdt_metric_int(c, "exec/running") == 2 &&
				      jdt_metric_int(c, "exec/queued") == 3); i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(c, "exec/running"), 2);
	assert_int_equal(jdt_metric_int(c, "exec/queued"), 3);
	for (int i = 0; i < 5; i++) {
		const char *s = jdt_state(c, ids[i]);

		running += strcmp(s, "running") == 0;
		queued += strcmp(s, "queued") == 0;
	}
	assert_int_equal(running, 2);
	assert_int_equal(queued, 3);
	/* A call job is not stuck behind them. */
	noop = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, noop, NULL), "succeeded");
	/* Cancel the oldest running one: a queued job takes its slot. */
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)ids[0]);
	json_decref(r);
	expect_final(c, ids[0], "cancelled", "cancel", NULL);
	for (int i = 0; i < 3000 && jdt_metric_int(c, "exec/queued") != 2; i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(c, "exec/queued"), 2);
	/* Cancel the rest: queued ones end at once, running ones when their group is gone. */
	r = jdt_ok(c, "{\"op\": \"cancel\", \"jobs\": [%llu, %llu, %llu, %llu]}",
		   (unsigned long long)ids[1], (unsigned long long)ids[2], (unsigned long long)ids[3],
		   (unsigned long long)ids[4]);
	json_decref(r);
	for (int i = 1; i < 5; i++)
		expect_final(c, ids[i], "cancelled", "cancel", NULL);
	assert_true(jdt_metric_int(c, "exec/peak_running") <= 2);
	/* A queued job whose deadline passes before it gets a slot ends expired, unrun. */
	{
		uint64_t hog = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
		uint64_t hog2 = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
		uint64_t late, t0;
		json_t *rec;

		jdt_until_state(c, hog, "running");
		jdt_until_state(c, hog2, "running");
		late = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"deadline_in_ms\": 300}");
		t0 = (uint64_t)time(NULL);
		/* Wait until the deadline is surely past (a clock check, not a pass criterion). */
		while ((uint64_t)time(NULL) < t0 + 2)
			jdt_sleep_ms(50);
		r = jdt_ok(c, "{\"op\": \"cancel\", \"jobs\": [%llu, %llu]}", (unsigned long long)hog,
			   (unsigned long long)hog2);
		json_decref(r);
		expect_final(c, late, "expired", "deadline", &rec);
		assert_null(json_object_get(rec, "started_ms"));
		json_decref(rec);
		expect_final(c, hog, "cancelled", "cancel", NULL);
		expect_final(c, hog2, "cancelled", "cancel", NULL);
	}
	assert_int_equal(jdt_metric_int(c, "exec/running"), 0);
	assert_int_equal(jdt_metric_int(c, "exec/slots_used"), 0);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

/* test_exits_at_once: 100 commands released together (each waits for a shared lock on a
 * file the test holds exclusively, then releases) are all reaped and succeed: their
 * pidfds become readable close together, more at once than the 8 a pass of the loop's
 * epoll set hands out (process.c, jd__pidfds_cb; up to 11 seen here), so the rest must
 * come at the next pass.  A command that starts after the release takes the lock at
 * once: nothing waits on time. */
static void test_exits_at_once(void **state)
{
	enum { N = 100 };
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t ids[N];
	char lock[300];

	(void)state;
	jdt_start(&t2, "\"workers\": 2, \"exec\": {\"max_processes\": 100}");
	c = jdt_connect(&t2, NULL);
	snprintf(lock, sizeof lock, "%s/lock", t2.dir);
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	for (int i = 0; i < N; i++)
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"flock\", \"-s\", \"%s\", \"true\"]}",
					 lock);
	for (int i = 0; i < 3000 && jdt_metric_int(c, "exec/running") < N; i++)
		jdt_sleep_ms(10); /* the release below is the test either way */
	assert_int_equal(flock(fd, LOCK_UN), 0);
	close(fd);
	for (int i = 0; i < N; i++)
		expect_final(c, ids[i], "succeeded", NULL, NULL);
	assert_int_equal(jdt_metric_int(c, "exec/running"), 0);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

/* test_commands_need_no_worker: with the only worker busy in a spin job, commands still
 * start and end: the loop thread takes them from the fair layer and starts them itself,
 * no fiber and no worker involved (exec.c, "exec jobs without a fiber"); a command that
 * ends frees its slot for the next at once.  Before, an exec job's handler had to run on
 * a worker (its fiber asked the loop for the process), so these waited for the spin. */
static void test_commands_need_no_worker(void **state)
{
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t spin, ids[4];
	json_int_t before;
	json_t *r;

	(void)state;
	jdt_start(&t2, "\"workers\": 1, \"exec\": {\"max_processes\": 1}");
	c = jdt_connect(&t2, NULL);
	before = jdt_metric_int(c, "exec/without_fiber");
	spin = jdt_submit_call(c, "spin", "{\"us\": 60000000}");
	jdt_until_state(c, spin, "running");
	/* Four commands through one slot, one after the other. */
	for (int i = 0; i < 4; i++)
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", \"exit %d\"]}", i);
	for (int i = 0; i < 4; i++)
		assert_string_equal(jdt_wait_final(c, ids[i], NULL), i == 0 ? "succeeded" : "failed");
	/* The worker is still in its spin: it took no part. */
	assert_string_equal(jdt_state(c, spin), "running");
	assert_int_equal(jdt_metric_int(c, "exec/without_fiber") - before, 4);
	assert_true(jdt_metric_int(c, "exec/peak_running") <= 1);
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)spin);
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, spin, NULL), "cancelled");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

static void test_cap_lowered_by_reload(void **state)
{
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t ids[3];
	json_t *r;

	(void)state;
	jdt_start(&t2, "\"workers\": 2, \"exec\": {\"max_processes\": 2}");
	c = jdt_connect(&t2, NULL);
	for (int i = 0; i < 3; i++)
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
	for (int i = 0; i < 3000 && !(jdt_metric_int(c, "exec/running") == 2 && jdt_metric_int(c, "exec/queued") == 1); i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(c, "exec/queued"), 1);
	/* The cap drops to 1 on reload: nothing running is touched... */
	jdt_write_config(&t2, "\"workers\": 2, \"exec\": {\"max_processes\": 1}");
	kill(t2.pid, SIGHUP);
	for (int i = 0; i < 3000 && jdt_metric_int(c, "exec/max_processes") != 1; i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(c, "exec/running"), 2);
	/* ...but the first slot freed is taken back, not handed to the queued job... */
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)ids[0]);
	json_decref(r);
	expect_final(c, ids[0], "cancelled", "cancel", NULL);
	assert_int_equal(jdt_metric_int(c, "exec/slots_used"), 1);
	assert_int_equal(jdt_metric_int(c, "exec/queued"), 1);
	/* ...and the next one goes to it. */
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)ids[1]);
	json_decref(r);
	jdt_until_state(c, ids[2], "running");
	r = jdt_ok(c, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)ids[2]);
	json_decref(r);
	expect_final(c, ids[2], "cancelled", "cancel", NULL);
	assert_int_equal(jdt_metric_int(c, "exec/slots_used"), 0);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

static void test_clients_take_turns_for_a_slot(void **state)
{
	struct jdt t2;
	struct jsched_conn *a, *b;
	uint64_t ja[3], jb;
	json_t *r;

	(void)state;
	jdt_start(&t2, "\"workers\": 2, \"exec\": {\"max_processes\": 1}");
	a = jdt_connect(&t2, "tenant-a");
	b = jdt_connect(&t2, "tenant-b");
	for (int i = 0; i < 3; i++)
		ja[i] = jdt_submit_spec(a, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
	jdt_until_state(a, ja[0], "running");
	for (int i = 0; i < 3000 && jdt_metric_int(a, "exec/queued") != 2; i++)
		jdt_sleep_ms(10);
	jb = jdt_submit_spec(b, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
	for (int i = 0; i < 3000 && jdt_metric_int(a, "exec/queued") != 3; i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(a, "exec/queued"), 3);
	/* A's first command ends: the slot goes to B, whose job came last but whose client
	 * has not been served, not to A's next job. */
	r = jdt_ok(a, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)ja[0]);
	json_decref(r);
	jdt_until_state(b, jb, "running");
	assert_string_equal(jdt_state(a, ja[1]), "queued");
	/* B's ends: back to A. */
	r = jdt_ok(b, "{\"op\": \"cancel\", \"job\": %llu}", (unsigned long long)jb);
	json_decref(r);
	jdt_until_state(a, ja[1], "running");
	assert_string_equal(jdt_state(a, ja[2]), "queued");
	r = jdt_ok(a, "{\"op\": \"cancel\", \"jobs\": [%llu, %llu]}", (unsigned long long)ja[1],
		   (unsigned long long)ja[2]);
	json_decref(r);
	expect_final(a, ja[2], "cancelled", "cancel", NULL);
	expect_final(a, ja[1], "cancelled", "cancel", NULL);
	jsched_close(a);
	jsched_close(b);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

static void test_immediate_shutdown_leaves_nothing(void **state)
{
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t a, b;
	pid_t sh1, ch1, sh2, ch2;
	json_t *r;

	(void)state;
	jdt_start(&t2, "\"workers\": 2, \"exec\": {\"kill_grace_ms\": 500}");
	c = jdt_connect(&t2, NULL);
	a = jdt_submit_spec(c, SH_WITH_CHILD);
	/* This one ignores SIGTERM: SIGKILL after the grace ends it. */
	b = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
		   "\"trap '' TERM; sleep 300 & echo $$ $!; wait; wait\"]}");
	started_pids(c, a, &sh1, &ch1);
	started_pids(c, b, &sh2, &ch2);
	r = jdt_ok(c, "{\"op\": \"shutdown\", \"mode\": \"immediate\"}");
	json_decref(r);
	jsched_close(c);
	assert_int_equal(jdt_wait_exit(&t2, 30000), 3);
	assert_true(pid_gone(sh1));
	assert_true(pid_gone(ch1));
	assert_true(pid_gone(sh2));
	assert_true(pid_gone(ch2));
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

/* frame_send / frame_recv: one raw protocol frame on fd (4-byte big-endian length). */
static void frame_send(int fd, const char *json)
{
	uint32_t n = (uint32_t)strlen(json);
	unsigned char h[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8), (unsigned char)n};

	assert_int_equal(write(fd, h, 4), 4);
	assert_int_equal(write(fd, json, n), (ssize_t)n);
}

static json_t *frame_recv(int fd)
{
	unsigned char h[4];
	char buf[65536];
	size_t n, got = 0;

	assert_int_equal(read(fd, h, 4), 4);
	n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
	assert_true(n < sizeof(buf));
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);

		assert_true(k > 0);
		got += (size_t)k;
	}
	return json_loadb(buf, n, 0, NULL);
}

static void test_graceful_shutdown_waits(void **state)
{
	struct jdt t2;
	struct jsched_conn *c;
	uint64_t id;
	json_t *m;
	char req[256], go[400];
	int fd;
	FILE *f;

	(void)state;
	jdt_start(&t2, "\"workers\": 2");
	c = jdt_connect(&t2, NULL);
	/* The command waits for a file the test creates after the shutdown has begun. */
	snprintf(go, sizeof(go), "%s/go", t2.dir);
	id = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sh\", \"-c\", "
		    "\"while [ ! -e %s ]; do sleep 0.01; done; echo finished\"]}", go);
	jdt_until_state(c, id, "running");
	jsched_close(c);
	/* A raw connection with a wait outstanding before the shutdown begins. */
	fd = jdt_raw(&t2);
	frame_send(fd, "{\"op\": \"hello\", \"id\": 0, \"version\": 1}");
	json_decref(frame_recv(fd));
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 1, \"job\": %llu}", (unsigned long long)id);
	frame_send(fd, req);
	kill(t2.pid, SIGTERM);
	/* The shutdown event comes first: the daemon is draining, and the job still runs. */
	m = frame_recv(fd);
	assert_string_equal(json_string_value(json_object_get(m, "event")), "shutdown");
	json_decref(m);
	f = fopen(go, "w");
	assert_non_null(f);
	fclose(f);
	m = frame_recv(fd);
	assert_string_equal(json_string_value(json_object_get(json_object_get(m, "job"), "state")), "succeeded");
	json_decref(m);
	close(fd);
	assert_int_equal(jdt_wait_exit(&t2, 30000), 0);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

/* check_config: run `jschedd --check-config -c FILE` on a config with `members`; returns
 * its exit status and its stderr in err. */
static int check_config(const char *members, char *err, size_t len)
{
	char conf[300], cmd[1024];
	FILE *f;
	int st;
	size_t n;

	snprintf(conf, sizeof(conf), "%s/bad.json", t.dir);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "{%s}\n", members);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/bin/jschedd --check-config -c %s 2>&1 >/dev/null", t.build, conf);
	assert_non_null(f = popen(cmd, "r"));
	n = fread(err, 1, len - 1, f);
	err[n] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_config_keys(void **state)
{
	char err[1024];

	(void)state;
	assert_int_equal(check_config("\"exec\": {\"max_processes\": 8, \"output_bytes\": 0, "
				      "\"kill_grace_ms\": 0, \"allow_other_uids\": true, "
				      "\"direct\": false}, "
				      "\"client_names\": {\"root\": [\"ci\", \"*\"], \"0\": []}",
				      err, sizeof(err)), 0);
	assert_int_equal(check_config("\"exec\": {\"max_processes\": 0}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "exec.max_processes: must be an integer in [1, 65536]"));
	assert_int_equal(check_config("\"exec\": {\"colour\": 1}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "exec.colour: unknown key"));
	assert_int_equal(check_config("\"exec\": {\"allow_other_uids\": 1}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "exec.allow_other_uids: must be true or false"));
	assert_int_equal(check_config("\"exec\": {\"direct\": \"no\"}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "exec.direct: must be true or false"));
	assert_int_equal(check_config("\"client_names\": {\"no-such-user-jsched\": [\"a\"]}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "client_names.no-such-user-jsched: no such user"));
	assert_int_equal(check_config("\"client_names\": {\"root\": [\"bad name\"]}", err, sizeof(err)), 1);
	assert_non_null(strstr(err, "client_names.root: entry 0"));
}

static void test_socket_mode_and_cap_defaults(void **state)
{
	struct stat st;
	struct jdt t2;
	struct jsched_conn *c;

	(void)state;
	/* A socket outside /run/jschedd with no socket_mode: 0600, only our own user. */
	assert_int_equal(stat(t.sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* More slots than fibers: a command also needs a fiber (its job waits on one), so
	 * no more than the fibers run at once, the rest stay queued; both figures are the
	 * configured ones. */
	jdt_start(&t2, "\"workers\": 1, \"fibers\": 4, \"exec\": {\"max_processes\": 100}");
	c = jdt_connect(&t2, NULL);
	assert_int_equal(jdt_metric_int(c, "exec/max_processes"), 100);
	{
		json_t *m = jdt_metrics(c);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "fibers"),
								    "total")), 4);
		json_decref(m);
	}
	uint64_t ids[5];
	for (int i = 0; i < 5; i++)
		ids[i] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"sleep\", \"300\"]}");
	for (int i = 0; i < 3000 && !(jdt_metric_int(c, "exec/running") == 4 && jdt_metric_int(c, "exec/queued") == 1); i++)
		jdt_sleep_ms(10);
	assert_int_equal(jdt_metric_int(c, "exec/running"), 4);
	assert_int_equal(jdt_metric_int(c, "exec/queued"), 1);
	/* A plain call still runs on the one worker. */
	assert_string_equal(jdt_wait_final(c, jdt_submit_call(c, "noop", NULL), NULL), "succeeded");
	json_decref(jdt_ok(c, "{\"op\": \"cancel\", \"jobs\": [%llu, %llu, %llu, %llu, %llu]}",
			   (unsigned long long)ids[0], (unsigned long long)ids[1],
			   (unsigned long long)ids[2], (unsigned long long)ids[3],
			   (unsigned long long)ids[4]));
	for (int i = 0; i < 5; i++)
		expect_final(c, ids[i], "cancelled", "cancel", NULL);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t2, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_codes_and_signals),
		cmocka_unit_test(test_exits_at_once),
		cmocka_unit_test(test_output_capture_and_truncation),
		cmocka_unit_test(test_stdin_env_cwd),
		cmocka_unit_test(test_time_limit),
		cmocka_unit_test(test_cancel_running_and_children),
		cmocka_unit_test(test_leftovers_stopped_when_leader_exits),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_started_directly),
		cmocka_unit_test(test_handler_child_process),
		cmocka_unit_test(test_config_keys),
		cmocka_unit_test(test_socket_mode_and_cap_defaults),
	};
	const struct CMUnitTest own_daemon[] = {
		cmocka_unit_test(test_process_cap),
		cmocka_unit_test(test_commands_need_no_worker),
		cmocka_unit_test(test_cap_lowered_by_reload),
		cmocka_unit_test(test_clients_take_turns_for_a_slot),
		cmocka_unit_test(test_immediate_shutdown_leaves_nothing),
		cmocka_unit_test(test_graceful_shutdown_waits),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);

	return rc | cmocka_run_group_tests(own_daemon, NULL, NULL);
}
