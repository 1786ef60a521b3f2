/* tests/slurm/test_slurm_backend.c: the slurm backend (daemon/run/backend_slurm.h)
 * against the real one-node cluster of tests/slurm/cluster.sh, driven from a libuv loop
 * as jschedd's loop thread drives it.
 *
 * Covered: a command's output, environment, working directory and stdin; exit codes and
 * signals from the wait status; node and times; hostile argv through Slurm; a time limit
 * shorter than Slurm's minute; cancel of a running job and of a pending one (the node's
 * CPUs filled first, so "pending" is a fact, not a race); a job as another uid; a job
 * slurmctld refuses; slurmctld stopped with jobs submitted and running (the backend says
 * the controller is down, keeps them, submits what was asked meanwhile, and every job
 * ends right once it is back); a job re-attached by its Slurm id; the poll cost counters.
 *
 * Every wait is for an event the backend reports, bounded (60 s) so that a broken
 * backend fails instead of hanging.  Outside `cluster.sh run`, or built without
 * libslurm, it skips with the reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/run/backend_slurm.h"
#include "tests/slurm/cluster.h"

#define TEST_USER "jsched-test"
#define BOUND_MS 60000

static uv_loop_t loop;
static struct jd_slurm *be;
static struct jd_slurm_config cfg;
static uint64_t next_key = 1;

/* One test job: spec, result, the backend's record, and what the callback saw. */
struct tjob {
	struct jd_exec_spec spec;
	struct jd_exec_result res;
	struct jd_slurm_job sj;
	char *argv[16];
	char *env[8];
	int submitted, started, done;
	int order;		/* 1 if STARTED came before DONE (when both came) */
};

static void on_event(void *ctx, struct jd_slurm_job *j, enum jd_slurm_event ev)
{
	struct tjob *t = j->user;

	(void)ctx;
	if (ev == JD_SLURM_EV_SUBMITTED)
		t->submitted++;
	else if (ev == JD_SLURM_EV_STARTED)
		t->started++;
	else {
		t->done++;
		t->order = t->started == 1;
	}
}

static void tjob_init(struct tjob *t, const char *const *argv, const char *const *env)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; argv[i] && i < 15; i++)
		t->argv[i] = (char *)(uintptr_t)argv[i];
	for (i = 0; env && env[i] && i < 7; i++)
		t->env[i] = (char *)(uintptr_t)env[i];
	t->spec.argv = t->argv;
	t->spec.env = t->env;
	t->spec.cwd = (char *)"/";
	t->sj.key = next_key++;
	t->sj.uid = getuid();
	t->sj.gid = getgid();
	t->sj.spec = &t->spec;
	t->sj.res = &t->res;
	t->sj.user = t;
}

static void tjob_free(struct tjob *t)
{
	free(t->res.out.data);
	free(t->res.err.data);
}

static void bound_cb(uv_timer_t *h)
{
	*(int *)h->data = 1;
}

/* run_until: run the loop until pred(arg) holds or BOUND_MS pass; returns pred's value. */
static int run_until(int (*pred)(void *), void *arg)
{
	uv_timer_t timer;
	int expired = 0;

	uv_timer_init(&loop, &timer);
	timer.data = &expired;
	uv_timer_start(&timer, bound_cb, BOUND_MS, 0);
	while (!pred(arg) && !expired)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	return pred(arg);
}

static int is_done(void *a)
{
	return ((struct tjob *)a)->done > 0;
}

static int is_started(void *a)
{
	return ((struct tjob *)a)->started > 0;
}

static int is_submitted(void *a)
{
	return ((struct tjob *)a)->submitted > 0;
}

static int is_down(void *a)
{
	(void)a;
	return !jd_slurm_up(be);
}

static int is_up(void *a)
{
	(void)a;
	return jd_slurm_up(be);
}

static void submit_ok(struct tjob *t)
{
	assert_int_equal(jd_slurm_submit(be, &t->sj), 0);
	assert_int_equal(t->sj.phase, JD_SLURM_SUBMITTING);
}

static void wait_done(struct tjob *t)
{
	if (!run_until(is_done, t))
		fail_msg("job %llu (Slurm %u) did not end within %d ms", (unsigned long long)t->sj.key,
			 t->sj.slurm_id, BOUND_MS);
	assert_int_equal(t->done, 1);
	assert_int_equal(t->sj.phase, JD_SLURM_DONE);
}

static void out_is(const struct jd_exec_stream *s, const char *want)
{
	if (s->len != strlen(want) || memcmp(s->data, want, s->len) != 0)
		fail_msg("output '%.*s', wanted '%s'", (int)s->len, s->data ? (char *)s->data : "", want);
}

static void test_output_env_cwd(void **state)
{
	const char *argv[] = {"/bin/sh", "-c", "echo \"out $FOO\"; pwd; echo err >&2; exit 0", NULL};
	const char *env[] = {"FOO=bar baz", NULL};
	struct tjob t;

	(void)state;
	tjob_init(&t, argv, env);
	t.spec.cwd = (char *)"/tmp";
	submit_ok(&t);
	wait_done(&t);
	assert_int_equal(t.submitted, 1);
	assert_true(t.sj.slurm_id > 0);
	assert_int_equal(t.started, 1);
	assert_true(t.order);
	assert_int_equal(t.res.end, JD_EXEC_EXITED);
	assert_int_equal(t.res.exit_code, 0);
	assert_false(t.res.timed_out);
	assert_int_equal(t.res.stop_cause, JP_CAUSE_NONE);
	out_is(&t.res.out, "out bar baz\n/tmp\n");
	out_is(&t.res.err, "err\n");
	assert_string_equal(t.sj.node, "jtest");
	assert_true(t.sj.start_ms > 0);
	assert_true(t.sj.end_ms >= t.sj.start_ms);
	tjob_free(&t);
}

static void test_stdin_and_path_lookup(void **state)
{
	const char *argv[] = {"cat", NULL};
	struct tjob t;

	(void)state;
	tjob_init(&t, argv, NULL); /* no PATH: the default directories */
	t.spec.has_stdin = true;
	t.spec.stdin_data = (unsigned char *)"from stdin\n";
	t.spec.stdin_len = 11;
	submit_ok(&t);
	wait_done(&t);
	assert_int_equal(t.res.end, JD_EXEC_EXITED);
	assert_int_equal(t.res.exit_code, 0);
	out_is(&t.res.out, "from stdin\n");
	tjob_free(&t);
}

static void test_exit_codes_and_signals(void **state)
{
	const char *a_exit[] = {"/bin/sh", "-c", "exit 3", NULL};
	const char *a_sig[] = {"/bin/sh", "-c", "kill -KILL $$", NULL};
	const char *a_term[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
	const char *a_missing[] = {"no-such-command", NULL};
	struct tjob e, k, t, m;

	(void)state;
	tjob_init(&e, a_exit, NULL);
	tjob_init(&k, a_sig, NULL);
	tjob_init(&t, a_term, NULL);
	tjob_init(&m, a_missing, NULL);
	submit_ok(&e);
	submit_ok(&k);
	submit_ok(&t);
	submit_ok(&m);
	wait_done(&e);
	wait_done(&k);
	wait_done(&t);
	wait_done(&m);
	assert_int_equal(e.res.end, JD_EXEC_EXITED);
	assert_int_equal(e.res.exit_code, 3);
	assert_int_equal(k.res.end, JD_EXEC_SIGNALED);
	assert_int_equal(k.res.signal, SIGKILL);
	assert_int_equal(t.res.end, JD_EXEC_SIGNALED);
	assert_int_equal(t.res.signal, SIGTERM);
	assert_int_equal(m.res.end, JD_EXEC_EXITED);
	assert_int_equal(m.res.exit_code, 127);
	assert_non_null(strstr((char *)m.res.err.data, "no such command"));
	tjob_free(&e);
	tjob_free(&k);
	tjob_free(&t);
	tjob_free(&m);
}

static void test_hostile_argv_through_slurm(void **state)
{
	const char *argv[] = {"/usr/bin/printf", "[%s]", "'", "$(id)", "`id`", "a b", "*", "x\ny",
			      "\\'\"", "", "--", NULL};
	struct tjob t;

	(void)state;
	tjob_init(&t, argv, NULL);
	submit_ok(&t);
	wait_done(&t);
	assert_int_equal(t.res.exit_code, 0);
	out_is(&t.res.out, "[']"
			   "[$(id)][`id`][a b][*][x\ny][\\'\"][][--]");
	tjob_free(&t);
}

static void test_time_limit(void **state)
{
	const char *argv[] = {"/bin/sleep", "60", NULL};
	struct tjob t;

	(void)state;
	tjob_init(&t, argv, NULL);
	t.spec.timeout_ms = 300; /* well under Slurm's one-minute granularity */
	submit_ok(&t);
	wait_done(&t);
	assert_true(t.res.timed_out);
	assert_int_equal(t.res.stop_cause, JP_CAUSE_NONE);
	assert_int_equal(t.started, 1);
	assert_true(t.res.end == JD_EXEC_SIGNALED || t.res.end == JD_EXEC_EXITED);
	tjob_free(&t);
}

static void test_cancel_running(void **state)
{
	const char *argv[] = {"/bin/sleep", "60", NULL};
	struct tjob t;

	(void)state;
	tjob_init(&t, argv, NULL);
	submit_ok(&t);
	assert_true(run_until(is_started, &t));
	assert_int_equal(t.sj.phase, JD_SLURM_RUNNING);
	jd_slurm_cancel(be, &t.sj, JP_CAUSE_CANCEL);
	wait_done(&t);
	assert_int_equal(t.res.stop_cause, JP_CAUSE_CANCEL);
	assert_false(t.res.timed_out);
	/* Signalled, or (cancelled after Slurm allocated the node but before slurmd had
	 * launched the script, which a loaded machine makes possible) ended with status 0:
	 * either way the stop cause makes it cancelled. */
	assert_true(t.res.end == JD_EXEC_SIGNALED || t.res.end == JD_EXEC_EXITED);
	tjob_free(&t);
}

static void test_cancel_pending(void **state)
{
	const char *argv[] = {"/bin/sleep", "60", NULL};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct tjob fill[64], t;

	(void)state;
	assert_true(cpus > 0 && cpus <= 64);
	/* Fill every CPU of the node, then one more job must stay pending. */
	for (long i = 0; i < cpus; i++) {
		tjob_init(&fill[i], argv, NULL);
		submit_ok(&fill[i]);
	}
	for (long i = 0; i < cpus; i++)
		assert_true(run_until(is_started, &fill[i]));
	tjob_init(&t, argv, NULL);
	submit_ok(&t);
	assert_true(run_until(is_submitted, &t));
	assert_int_equal(t.sj.phase, JD_SLURM_PENDING);
	jd_slurm_cancel(be, &t.sj, JP_CAUSE_CANCEL);
	wait_done(&t);
	assert_int_equal(t.started, 0);
	assert_int_equal(t.res.end, JD_EXEC_NOT_RUN);
	assert_int_equal(t.res.stop_cause, JP_CAUSE_CANCEL);
	for (long i = 0; i < cpus; i++)
		jd_slurm_cancel(be, &fill[i].sj, JP_CAUSE_SHUTDOWN);
	for (long i = 0; i < cpus; i++) {
		wait_done(&fill[i]);
		assert_int_equal(fill[i].res.stop_cause, JP_CAUSE_SHUTDOWN);
		tjob_free(&fill[i]);
	}
	tjob_free(&t);
}

static void test_other_uid(void **state)
{
	const char *argv[] = {"/bin/sh", "-c", "id -u; id -g; echo x > mine; ls -n mine | cut -d' ' -f3", NULL};
	struct passwd *pw;
	char want[64], dir[4200];
	struct tjob t;

	(void)state;
	if (!getpwnam(TEST_USER) &&
	    system("useradd --no-create-home --shell /usr/sbin/nologin " TEST_USER " 2>/dev/null") != 0) {
		fprintf(stderr, "skipped: could not create the user " TEST_USER "\n");
		skip();
	}
	pw = getpwnam(TEST_USER);
	assert_non_null(pw);
	snprintf(dir, sizeof(dir), "%s/home", getenv("JSCHED_SLURM_DIR"));
	mkdir(dir, 0700);
	assert_int_equal(chown(dir, pw->pw_uid, pw->pw_gid), 0);
	tjob_init(&t, argv, NULL);
	t.spec.cwd = dir;
	t.sj.uid = pw->pw_uid;
	t.sj.gid = pw->pw_gid;
	submit_ok(&t);
	wait_done(&t);
	assert_int_equal(t.res.exit_code, 0);
	snprintf(want, sizeof(want), "%u\n%u\n%u\n", (unsigned)pw->pw_uid, (unsigned)pw->pw_gid,
		 (unsigned)pw->pw_uid);
	out_is(&t.res.out, want);
	tjob_free(&t);
}

static void test_refused(void **state)
{
	const char *argv[] = {"/bin/true", NULL};
	const char *dash[] = {"-x", NULL};
	struct tjob t, d;

	(void)state;
	tjob_init(&t, argv, NULL);
	t.sj.partition = "no-such-partition";
	submit_ok(&t);
	wait_done(&t);
	assert_int_equal(t.res.end, JD_EXEC_SPAWN_FAILED);
	assert_int_equal(t.started, 0);
	assert_int_equal(t.sj.slurm_id, 0);
	assert_non_null(strstr(t.res.reason, "slurm refused the job"));
	assert_non_null(strstr(t.res.reason, "partition"));
	tjob_free(&t);
	tjob_init(&d, dash, NULL);
	assert_int_equal(jd_slurm_submit(be, &d.sj), JSCHED_EINVAL);
	assert_non_null(strstr(d.res.reason, "'-'"));
	assert_int_equal(d.sj.phase, JD_SLURM_IDLE);
	/* A live key twice. */
	tjob_init(&t, argv, NULL);
	submit_ok(&t);
	d.sj.key = t.sj.key;
	d.argv[0] = (char *)"/bin/true";
	assert_int_equal(jd_slurm_submit(be, &d.sj), JSCHED_EEXISTS);
	wait_done(&t);
	tjob_free(&t);
}

static void test_controller_outage(void **state)
{
	const char *a_run[] = {"/bin/sh", "-c", "sleep 3; echo survived", NULL};
	const char *a_late[] = {"/bin/echo", "submitted late", NULL};
	struct tjob r, l;
	json_t *m;

	(void)state;
	tjob_init(&r, a_run, NULL);
	submit_ok(&r);
	assert_true(run_until(is_started, &r));
	assert_int_equal(jst_ctld("stop"), 0);
	assert_true(run_until(is_down, NULL));
	m = jd_slurm_metrics(be);
	assert_false(json_is_true(json_object_get(m, "controller_up")));
	assert_non_null(strstr(json_string_value(json_object_get(m, "error")), "poll"));
	assert_true(json_integer_value(json_object_get(m, "outages")) >= 1);
	json_decref(m);
	/* Asked while it is down: kept, not failed. */
	tjob_init(&l, a_late, NULL);
	submit_ok(&l);
	assert_int_equal(r.done, 0);
	assert_int_equal(l.done, 0);
	assert_int_equal(l.sj.phase, JD_SLURM_SUBMITTING);
	assert_int_equal(jst_ctld("start"), 0);
	assert_true(run_until(is_up, NULL));
	wait_done(&r);
	wait_done(&l);
	assert_int_equal(r.res.exit_code, 0);
	out_is(&r.res.out, "survived\n");
	assert_int_equal(l.res.exit_code, 0);
	out_is(&l.res.out, "submitted late\n");
	tjob_free(&r);
	tjob_free(&l);
}

static void test_attach(void **state)
{
	const char *argv[] = {"/bin/echo", "attached", NULL};
	struct tjob t, again;

	(void)state;
	/* As after a restart: a job known only by its key and Slurm id. */
	tjob_init(&t, argv, NULL);
	submit_ok(&t);
	wait_done(&t);
	tjob_init(&again, argv, NULL);
	again.sj.key = next_key++;
	again.sj.slurm_id = t.sj.slurm_id;
	assert_int_equal(jd_slurm_attach(be, &again.sj), 0);
	wait_done(&again);
	assert_int_equal(again.res.end, JD_EXEC_EXITED);
	assert_int_equal(again.res.exit_code, 0);
	assert_string_equal(again.sj.node, "jtest");
	tjob_free(&t);
	tjob_free(&again);
}

static void test_metrics(void **state)
{
	json_t *m = jd_slurm_metrics(be), *polls;

	(void)state;
	assert_non_null(m);
	assert_true(json_is_true(json_object_get(m, "built")));
	assert_true(json_is_true(json_object_get(m, "controller_up")));
	assert_int_equal(json_integer_value(json_object_get(m, "live")), 0);
	polls = json_object_get(m, "polls");
	assert_true(json_integer_value(json_object_get(polls, "count")) > 0);
	assert_true(json_integer_value(json_object_get(polls, "unchanged")) <=
		    json_integer_value(json_object_get(polls, "count")));
	assert_true(json_integer_value(json_object_get(json_object_get(m, "ended"), "complete")) > 0);
	json_decref(m);
}

static int setup(void **state)
{
	char err[512];

	(void)state;
	jd_slurm_config_defaults(&cfg);
	snprintf(cfg.output_dir, sizeof(cfg.output_dir), "%s/out", getenv("JSCHED_SLURM_DIR"));
	snprintf(cfg.partition, sizeof(cfg.partition), "%s", getenv("JSCHED_SLURM_PARTITION"));
	snprintf(cfg.instance, sizeof(cfg.instance), "t%d", (int)getpid());
	cfg.poll_ms = 100;
	uv_loop_init(&loop);
	if (jd_slurm_open(&loop, &cfg, on_event, NULL, &be, err, sizeof(err)) != 0) {
		fprintf(stderr, "jd_slurm_open: %s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jd_slurm_close(be);
	uv_run(&loop, UV_RUN_DEFAULT);
	return uv_loop_close(&loop) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_env_cwd),
		cmocka_unit_test(test_stdin_and_path_lookup),
		cmocka_unit_test(test_exit_codes_and_signals),
		cmocka_unit_test(test_hostile_argv_through_slurm),
		cmocka_unit_test(test_time_limit),
		cmocka_unit_test(test_cancel_running),
		cmocka_unit_test(test_cancel_pending),
		cmocka_unit_test(test_other_uid),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_controller_outage),
		cmocka_unit_test(test_attach),
		cmocka_unit_test(test_metrics),
	};

	if (strncmp(jd_slurm_build(), "not built", 9) == 0) {
		printf("skipped: %s\n", jd_slurm_build());
		return 0;
	}
	if (!getenv("JSCHED_SLURM_CLUSTER") || !getenv("JSCHED_SLURM_DIR")) {
		printf("skipped: needs the cluster of tests/slurm/cluster.sh (make test-slurm)\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
