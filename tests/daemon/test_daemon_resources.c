/* tests/daemon/test_daemon_resources.c: named resources (config "resources", spec "needs")
 * against the real daemon.
 *
 * - A command that needs a unit of a resource starts only when one is free, gets the
 *   lowest free index in JSCHED_RESOURCE_<NAME> and in the resource's `env` variable,
 *   and gives it back at its end (the next one gets that index); the assignment is in
 *   its record ("assigned") while it runs and after.
 * - Bad needs are refused at submit with stable codes: an unknown resource
 *   (not_supported), more than the count (limit_exceeded), needs on a call job, a bad
 *   name or count (bad_request); more distinct sets of needs at once than the fair layer
 *   has classes (limit_exceeded), accepted again once those jobs ended.
 * - Reload: a raised count starts a queued command at once on the new index; a lowered
 *   count recalls nothing, and a freed index at or above the count is not handed out.
 * - kill -9 and restart: the running command's job fails (daemon_restart) keeping its
 *   recorded indices; the queued one keeps its needs and runs on the freed index.
 * Commands hold their units until the test creates their "go" file (each loop bounded
 * at 30 s); every wait is for a state, a metric or a file, bounded by the harness.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/jproto.h"
#include "tests/daemon/harness.h"

#define GPU2 "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 2, \"env\": \"CUDA_VISIBLE_DEVICES\"}, \"lic\": {\"count\": 64}}"

/* hold: a command that prints its indices (the resource's env, then JSCHED_RESOURCE_GPU)
 * and runs until <dir>/go.<n> exists (at most 30 s). */
static uint64_t hold(struct jsched_conn *c, const struct jdt *t, int n, const char *needs)
{
	return jdt_submit_spec(c,
			       "{\"kind\": \"exec\", \"needs\": %s, \"argv\": [\"sh\", \"-c\", "
			       "\"echo $CUDA_VISIBLE_DEVICES/$JSCHED_RESOURCE_GPU; i=0; while [ ! -e %s/go.%d ] "
			       "&& [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done\"]}",
			       needs, t->dir, n);
}

static void go(const struct jdt *t, int n)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/go.%d", t->dir, n);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
}

/* assigned: the record's assigned.<name>[0] (-1: none). */
static int assigned(struct jsched_conn *c, uint64_t id, const char *name)
{
	json_t *r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	json_t *a = json_object_get(json_object_get(json_object_get(r, "job"), "assigned"), name);
	int v = json_is_integer(json_array_get(a, 0)) ? (int)json_integer_value(json_array_get(a, 0)) : -1;

	json_decref(r);
	return v;
}

/* started: wait until running job id has been given its units (a job is "running"
 * from its worker's start; its command, and so its indices, follow on the loop thread):
 * returns assigned.<name>[0]. */
static int started(struct jsched_conn *c, uint64_t id, const char *name)
{
	int v = -1;

	jdt_until_state(c, id, "running");
	for (int i = 0; i < 3000 && (v = assigned(c, id, name)) < 0; i++)
		jdt_sleep_ms(10);
	assert_true(v >= 0);
	return v;
}

/* metric: the metrics' k1.k2 (k3 NULL) or k1.k2.k3, an integer (0 if absent). */
static json_int_t metric(struct jsched_conn *c, const char *k1, const char *k2, const char *k3)
{
	json_t *m = jdt_metrics(c);
	json_t *v = json_object_get(json_object_get(m, k1), k2);
	json_int_t n = json_integer_value(k3 ? json_object_get(v, k3) : v);

	json_decref(m);
	return n;
}

/* res_metric: metrics.resources.<name>.<key>. */
static json_int_t res_metric(struct jsched_conn *c, const char *name, const char *key)
{
	return metric(c, "resources", name, key);
}

/* out: the job's stdout, first line (static). */
static const char *out(struct jsched_conn *c, uint64_t id)
{
	static char buf[128];
	json_t *r = jdt_ok(c, "{\"op\": \"output\", \"job\": %llu}", (unsigned long long)id);
	const char *b64 = json_string_value(json_object_get(json_object_get(r, "stdout"), "data"));
	unsigned char *d = NULL;
	size_t n = 0;

	assert_non_null(b64);
	assert_int_equal(jp_base64_decode(b64, strlen(b64), 1024, &d, &n), 0);
	snprintf(buf, sizeof(buf), "%.*s", (int)strcspn((const char *)d, "\n"), (const char *)d);
	free(d);
	json_decref(r);
	return buf;
}

static void test_indices(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t a, b, q;
	json_t *rec;
	int ia, ib;

	(void)state;
	jdt_start(&t, GPU2);
	c = jdt_connect(&t, NULL);
	a = hold(c, &t, 0, "{\"gpu\": 1}");
	b = hold(c, &t, 1, "{\"gpu\": 1}");
	q = hold(c, &t, 2, "{\"gpu\": 1, \"lic\": 3}");
	ia = started(c, a, "gpu");
	ib = started(c, b, "gpu");
	assert_true((ia == 0 && ib == 1) || (ia == 1 && ib == 0));
	/* Both units held: the third waits, queued, however long this takes. */
	assert_int_equal(res_metric(c, "gpu", "used"), 2);
	assert_string_equal(jdt_state(c, q), "queued");
	assert_int_equal(assigned(c, q, "gpu"), -1);
	/* a ends: its index goes to q. */
	go(&t, 0);
	assert_string_equal(jdt_wait_final(c, a, NULL), "succeeded");
	assert_int_equal(started(c, q, "gpu"), ia);
	assert_int_equal(assigned(c, q, "lic"), 0);
	go(&t, 1);
	go(&t, 2);
	assert_string_equal(jdt_wait_final(c, q, &rec), "succeeded");
	{
		char want[32];

		snprintf(want, sizeof(want), "%d/%d", ia, ia);
		assert_string_equal(out(c, q), want);
	}
	/* The record keeps the assignment after the end: lic 0, 1, 2. */
	{
		json_t *l = json_object_get(json_object_get(rec, "assigned"), "lic");

		assert_int_equal(json_array_size(l), 3);
		for (int i = 0; i < 3; i++)
			assert_int_equal(json_integer_value(json_array_get(l, (size_t)i)), i);
	}
	json_decref(rec);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
	assert_int_equal(res_metric(c, "gpu", "used"), 0);
	assert_int_equal(res_metric(c, "lic", "used"), 0);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void expect_refused(struct jsched_conn *c, const char *spec, const char *code,
			   const char *field)
{
	json_t *r = jdt_req(c, "{\"op\": \"submit\", \"job\": %s}", spec);

	assert_string_equal(jdt_err_code(r), code);
	if (field)
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "field")),
				    field);
	json_decref(r);
}

static void test_bad_needs(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t ids[16];
	size_t n = 0;
	json_t *r;

	(void)state;
	jdt_start(&t, GPU2);
	c = jdt_connect(&t, NULL);
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"tpu\": 1}}",
		       "not_supported", "job.needs.tpu");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"gpu\": 3}}",
		       "limit_exceeded", "job.needs.gpu");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"gpu\": 0}}",
		       "bad_request", "job.needs.gpu");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"GPU\": 1}}",
		       "bad_request", "job.needs.GPU");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": [\"gpu\"]}",
		       "bad_request", "job.needs");
	expect_refused(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"needs\": {\"gpu\": 1}}",
		       "bad_request", "job.needs");
	/* A batch with one bad spec makes no job. */
	r = jdt_req(c, "{\"op\": \"submit\", \"jobs\": [{\"kind\": \"exec\", \"argv\": [\"true\"]}, "
		       "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"gpu\": 9}}]}");
	assert_string_equal(jdt_err_code(r), "limit_exceeded");
	json_decref(r);
	assert_int_equal(jdt_jobs_submitted(c), 0);

	/* Distinct sets of needs at once: the fair layer's classes.  lic=1, lic=2, ... each a
	 * set, held running (or queued): the first refused is at most the 16th. */
	for (n = 0; n < 16; n++) {
		char spec[300];

		snprintf(spec, sizeof(spec), "{\"lic\": %zu}", n + 1);
		r = jdt_req(c,
			    "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"needs\": %s, \"argv\": [\"sh\", \"-c\", "
			    "\"i=0; while [ ! -e %s/go.9 ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done\"]}}",
			    spec, t.dir);
		if (strcmp(jdt_err_code(r), "") != 0) {
			assert_string_equal(jdt_err_code(r), "limit_exceeded");
			json_decref(r);
			break;
		}
		ids[n] = (uint64_t)json_integer_value(json_object_get(r, "job"));
		json_decref(r);
	}
	/* Class 0, suspending calls, inline calls and commands are the daemon's: 12 sets fit. */
	assert_int_equal(n, 12);
	go(&t, 9);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(jdt_wait_final(c, ids[i], NULL), "succeeded");
	/* Their classes come back: a new set is accepted and runs. */
	ids[0] = jdt_submit_spec(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"lic\": 7, \"gpu\": 2}}");
	assert_string_equal(jdt_wait_final(c, ids[0], NULL), "succeeded");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void wait_count(struct jsched_conn *c, json_int_t want)
{
	for (int i = 0; i < 3000 && res_metric(c, "gpu", "count") != want; i++)
		jdt_sleep_ms(10);
	assert_int_equal(res_metric(c, "gpu", "count"), want);
}

static void test_reload_counts(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t a, b, q;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 1}}");
	c = jdt_connect(&t, NULL);
	a = hold(c, &t, 0, "{\"gpu\": 1}");
	b = hold(c, &t, 1, "{\"gpu\": 1}");
	assert_int_equal(started(c, a, "gpu"), 0);
	assert_string_equal(jdt_state(c, b), "queued");
	/* Raised to 2: b starts at once, on index 1, while a runs. */
	jdt_write_config(&t, "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 2}}");
	kill(t.pid, SIGHUP);
	assert_int_equal(started(c, b, "gpu"), 1);
	assert_string_equal(jdt_state(c, a), "running");
	/* Lowered to 1: nothing is recalled; when a ends, index 0 is free but the one unit
	 * is b's (index 1): q waits for b. */
	q = hold(c, &t, 2, "{\"gpu\": 1}");
	jdt_write_config(&t, "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 1}}");
	kill(t.pid, SIGHUP);
	wait_count(c, 1);
	go(&t, 0);
	assert_string_equal(jdt_wait_final(c, a, NULL), "succeeded");
	assert_string_equal(jdt_state(c, q), "queued");
	assert_string_equal(jdt_state(c, b), "running");
	go(&t, 1);
	assert_string_equal(jdt_wait_final(c, b, NULL), "succeeded");
	assert_int_equal(started(c, q, "gpu"), 0);
	/* A name added by a reload needs a restart: the running set stays. */
	jdt_write_config(&t, "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 1}, \"tpu\": {\"count\": 1}}");
	{
		json_t *r = jdt_ok(c, "{\"op\": \"reload\"}");
		json_t *rn = json_object_get(r, "restart_needed");
		bool found = false;
		size_t i;
		json_t *e;

		json_array_foreach(rn, i, e)
			found |= strcmp(json_string_value(e), "resources") == 0;
		assert_true(found);
		json_decref(r);
	}
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"tpu\": 1}}",
		       "not_supported", "job.needs.tpu");
	go(&t, 2);
	assert_string_equal(jdt_wait_final(c, q, NULL), "succeeded");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static void test_restart(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	uint64_t a, q;
	json_t *rec;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"resources\": {\"gpu\": {\"count\": 1, \"env\": \"CUDA_VISIBLE_DEVICES\"}}");
	c = jdt_connect(&t, NULL);
	a = hold(c, &t, 0, "{\"gpu\": 1}");
	q = hold(c, &t, 1, "{\"gpu\": 1}");
	assert_int_equal(started(c, a, "gpu"), 0);
	assert_string_equal(jdt_state(c, q), "queued");
	jsched_close(c);
	jdt_kill9(&t);
	go(&t, 1);
	jdt_restart(&t);
	c = jdt_connect(&t, NULL);
	assert_string_equal(jdt_wait_final(c, a, &rec), "failed");
	assert_string_equal(json_string_value(json_object_get(rec, "cause")), "daemon_restart");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(json_object_get(rec, "assigned"), "gpu"), 0)), 0);
	json_decref(rec);
	/* The queued one kept its needs: it ran on the one index, free again. */
	assert_string_equal(jdt_wait_final(c, q, NULL), "succeeded");
	assert_string_equal(out(c, q), "0/0");
	assert_int_equal(assigned(c, q, "gpu"), 0);
	assert_int_equal(res_metric(c, "gpu", "used"), 0);
	go(&t, 0);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* ---- CPUs and memory ------------------------------------------------------------ */

/* cm_skip: why commands with limits cannot run here (NULL: they can). */
static const char *cm_skip(struct jsched_conn *c)
{
	static char why[300];
	json_t *m = jdt_metrics(c);
	json_t *g = json_object_get(json_object_get(m, "exec"), "cgroups");
	const char *mode = json_string_value(json_object_get(g, "mode"));

	why[0] = '\0';
	if (geteuid() != 0)
		snprintf(why, sizeof(why), "--cpus and --mem are cgroup limits: needs root to create cgroups");
	else if (!mode || strcmp(mode, "none") == 0)
		snprintf(why, sizeof(why), "no usable cgroups here: %s",
			 json_string_value(json_object_get(g, "reason")));
	json_decref(m);
	return why[0] ? why : NULL;
}

/* hold_cm: a command declaring `cpus` CPUs and `mem` of memory that runs until
 * <dir>/go.<n> exists (at most 30 s). */
static uint64_t hold_cm(struct jsched_conn *c, const struct jdt *t, int n, const char *cpus,
			const char *mem)
{
	return jdt_submit_spec(c,
			       "{\"kind\": \"exec\", \"resources\": {\"cpus\": %s, \"memory\": \"%s\"}, "
			       "\"argv\": [\"sh\", \"-c\", \"i=0; while [ ! -e %s/go.%d ] && [ $i -lt 3000 ]; "
			       "do sleep 0.01; i=$((i+1)); done\"]}", cpus, mem, t->dir, n);
}

/* running_of: how many of ids[0..n) are running. */
static int running_of(struct jsched_conn *c, const uint64_t *ids, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += strcmp(jdt_state(c, ids[i]), "running") == 0;
	return k;
}

/* settle_res: wait until the daemon's units of resource `res` in use are `used` and
 * `jobs` of the commands ids[0..n) run (their fibers have started them).  settle: the same
 * for the CPUs, in thousandths. */
static void settle_res(struct jsched_conn *c, const char *res, const uint64_t *ids, int n,
		       json_int_t used, int jobs)
{
	for (int i = 0; i < 3000; i++) {
		if (res_metric(c, res, "used") == used && running_of(c, ids, n) == jobs)
			return;
		jdt_sleep_ms(10);
	}
	fail_msg("%s used %lld (want %lld), %d running (want %d)", res,
		 (long long)res_metric(c, res, "used"), (long long)used, running_of(c, ids, n), jobs);
}

static void settle(struct jsched_conn *c, const uint64_t *ids, int n, json_int_t cpus, int jobs)
{
	settle_res(c, "cpus", ids, n, cpus, jobs);
}

/* ---- a big command beside a stream of small ones ----------------------------------- */

/* What the two big-command tests differ in: the resource (two GPUs, named units; or two
 * CPUs, counted in thousandths), how a command holding `units` of it is submitted, and how
 * the daemon shows that a freed unit is kept for the big command. */
struct big_kind {
	const char *config;
	const char *res;	/* its name in metrics.resources */
	json_int_t unit;	/* one unit there */
	bool indices;		/* named units: the big one is assigned both indices */
	bool limits;		/* cgroup limits: skipped where they cannot be set (cm_skip) */
	uint64_t (*submit)(struct jsched_conn *c, const struct jdt *t, int n, int units);
	/* kept: the unit the last end freed is held for the big one (resv: the metrics'
	 * fairness.reservations before that end). */
	bool (*kept)(struct jsched_conn *c, json_int_t resv);
};

/* big_job: two clients keep commands of one unit running and two more queued, a third's
 * command needs both units: the running small ones are ended one at a time; within a few
 * ends a freed unit is kept for the big one (one unit free while small ones are queued),
 * and once the last small one running ends the big one starts on both. */
static void big_job(const struct big_kind *k)
{
	struct jdt t;
	struct jsched_conn *a, *b, *cc;
	uint64_t big, small[16];
	int n = 0, first = 0;
	bool kept = false;
	const char *why;

	jdt_start(&t, k->config);
	a = jdt_connect(&t, "big");
	if (k->limits && (why = cm_skip(a))) {
		fprintf(stderr, "skipped: %s\n", why);
		jsched_close(a);
		assert_int_equal(jdt_stop(&t, SIGTERM), 0);
		skip();
	}
	b = jdt_connect(&t, "small-b");
	cc = jdt_connect(&t, "small-c");
	small[n] = k->submit(b, &t, n, 1);
	n++;
	small[n] = k->submit(cc, &t, n, 1);
	n++;
	settle_res(a, k->res, small, n, 2 * k->unit, 2);
	big = k->submit(a, &t, 100, 2);
	/* The stream: two more queued for each small client at any time. */
	for (int i = 0; i < 4; i++, n++)
		small[n] = k->submit(i % 2 ? cc : b, &t, n, 1);
	for (int round = 0; round < 8 && !kept; round++) {
		json_int_t resv = metric(a, "fairness", "reservations", NULL);

		go(&t, first);
		assert_string_equal(jdt_wait_final(b, small[first], NULL), "succeeded");
		first++;
		for (int i = 0; i < 3000; i++) {
			if ((kept = k->kept(a, resv)))
				break;
			if (res_metric(a, k->res, "used") == 2 * k->unit)
				break;
			jdt_sleep_ms(10);
		}
		if (!kept) /* a small one took it: keep two of theirs queued */
			small[n] = k->submit(n % 2 ? cc : b, &t, n, 1), n++;
		assert_true(n < 16);
	}
	assert_true(kept);
	assert_int_equal(res_metric(a, k->res, "used"), k->unit);
	assert_string_equal(jdt_state(a, big), "queued");
	for (int j = first; j < n; j++)
		if (strcmp(jdt_state(a, small[j]), "running") == 0) {
			go(&t, j);
			assert_string_equal(jdt_wait_final(a, small[j], NULL), "succeeded");
		}
	settle_res(a, k->res, &big, 1, 2 * k->unit, 1);
	if (k->indices) {
		json_t *r = jdt_ok(a, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)big);
		json_t *g = json_object_get(json_object_get(json_object_get(r, "job"), "assigned"), k->res);

		assert_int_equal(json_array_size(g), 2);
		json_decref(r);
	}
	go(&t, 100);
	assert_string_equal(jdt_wait_final(a, big, NULL), "succeeded");
	for (int j = 0; j < n; j++)
		go(&t, j);
	for (int j = 0; j < n; j++)
		assert_string_equal(jdt_wait_final(a, small[j], NULL), "succeeded");
	jsched_close(a);
	jsched_close(b);
	jsched_close(cc);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static uint64_t gpus(struct jsched_conn *c, const struct jdt *t, int n, int units)
{
	char needs[32];

	snprintf(needs, sizeof(needs), "{\"gpu\": %d}", units);
	return hold(c, t, n, needs);
}

/* gpu_kept: a reservation was counted (metrics fairness.reservations). */
static bool gpu_kept(struct jsched_conn *c, json_int_t resv)
{
	return metric(c, "fairness", "reservations", NULL) > resv;
}

/* A command that needs both GPUs is not starved by two clients' stream of one-GPU
 * commands: once one of theirs has gone past it (fairness.backfill_max 1), a freed GPU is
 * held for it, and it starts when the other is free too. */
static void test_big_job_reservation(void **state)
{
	static const struct big_kind k = {
		.config = "\"workers\": 2, \"fairness\": {\"backfill_max\": 1}, "
			  "\"resources\": {\"gpu\": {\"count\": 2}}",
		.res = "gpu", .unit = 1, .indices = true, .submit = gpus, .kept = gpu_kept};

	(void)state;
	big_job(&k);
}

static uint64_t cpus(struct jsched_conn *c, const struct jdt *t, int n, int units)
{
	return hold_cm(c, t, n, units == 1 ? "1" : "2", "1M");
}

/* cpu_kept: nothing is ready to start (metrics fairness.ready 0, read before the CPUs in
 * use: a small one taken in between would show there) while one CPU is free. */
static bool cpu_kept(struct jsched_conn *c, json_int_t resv)
{
	json_int_t ready = metric(c, "fairness", "ready", NULL);

	(void)resv;
	return ready == 0 && res_metric(c, "cpus", "used") == 1000;
}

/* A command wanting both CPUs is not starved by a stream of one-CPU commands: once its
 * client's turn comes, the free CPU is left idle while one-CPU commands are queued, and it
 * starts when the other CPU comes back.  (One class: the job whose turn it is is not
 * passed by a smaller one of the same class.) */
static void test_cpus_big_job(void **state)
{
	static const struct big_kind k = {
		.config = "\"workers\": 2, \"exec\": {\"max_processes\": 16}, "
			  "\"resources\": {\"cpus\": {\"count\": 2}}",
		.res = "cpus", .unit = 1000, .limits = true, .submit = cpus, .kept = cpu_kept};

	(void)state;
	big_job(&k);
}

/* The DRF paper's example with real --cpus and --mem: <9 CPU, 18 GB> configured; A's
 * commands declare <1 CPU, 4 GB>, B's <3 CPU, 1 GB>; both queued before any runs (the
 * daemon paused).  DRF runs 3 of A's and 2 of B's (both at a dominant share of 2/3;
 * B's first would have been 3 of B's), holding <9 CPU, 14 GB>.  A command that declares
 * neither is not counted: it runs while every CPU is held.  (Round after round is the
 * fair layer's test, on its virtual clock: here later rounds would follow the commands'
 * measured wall times, which this test does not control.) */
static void test_cpus_memory_drf(void **state)
{
	struct jdt t;
	struct jsched_conn *a, *b, *adm;
	uint64_t ida[6], idb[6], plain;
	const char *why;

	(void)state;
	jdt_start(&t, "\"workers\": 2, \"exec\": {\"max_processes\": 16}, \"resources\": "
		      "{\"cpus\": {\"count\": 9}, \"memory\": {\"bytes\": \"18G\"}}");
	adm = jdt_connect(&t, NULL);
	if ((why = cm_skip(adm))) {
		fprintf(stderr, "skipped: %s\n", why);
		jsched_close(adm);
		assert_int_equal(jdt_stop(&t, SIGTERM), 0);
		skip();
	}
	a = jdt_connect(&t, "drf-a");
	b = jdt_connect(&t, "drf-b");
	assert_int_equal(res_metric(adm, "cpus", "count"), 9000);
	assert_int_equal(res_metric(adm, "memory", "count"), 18 * 1024);
	json_decref(jdt_ok(adm, "{\"op\": \"pause\", \"all\": true}"));
	for (int i = 0; i < 6; i++) {
		ida[i] = hold_cm(a, &t, i, "1", "4G");
		idb[i] = hold_cm(b, &t, 10 + i, "3", "1G");
	}
	json_decref(jdt_ok(adm, "{\"op\": \"resume\", \"all\": true}"));
	settle(adm, ida, 6, 9000, 3);
	assert_int_equal(running_of(adm, idb, 6), 2);
	assert_int_equal(res_metric(adm, "memory", "used"), 14 * 1024);
	/* Not counted: a command without --cpus / --mem runs with every CPU held. */
	plain = jdt_submit_spec(adm, "{\"kind\": \"exec\", \"argv\": [\"true\"]}");
	assert_string_equal(jdt_wait_final(adm, plain, NULL), "succeeded");
	assert_int_equal(res_metric(adm, "cpus", "used"), 9000);
	for (int i = 0; i < 6; i++) {
		go(&t, i);
		go(&t, 10 + i);
	}
	for (int i = 0; i < 6; i++) {
		assert_string_equal(jdt_wait_final(a, ida[i], NULL), "succeeded");
		assert_string_equal(jdt_wait_final(b, idb[i], NULL), "succeeded");
	}
	assert_int_equal(res_metric(adm, "cpus", "used"), 0);
	assert_int_equal(res_metric(adm, "memory", "used"), 0);
	jsched_close(a);
	jsched_close(b);
	jsched_close(adm);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* Refusals, the machine's totals, a reload. */
static void test_cpus_memory_limits(void **state)
{
	struct jdt t;
	struct jsched_conn *c;
	json_t *m, *r;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long kb = 0;
	char line[128];
	FILE *f;

	(void)state;
	/* The machine's: online CPUs, MemTotal. */
	jdt_start(&t, "\"workers\": 2");
	c = jdt_connect(&t, NULL);
	assert_non_null(f = fopen("/proc/meminfo", "r"));
	while (fgets(line, sizeof(line), f) && sscanf(line, "MemTotal: %llu kB", &kb) != 1)
		;
	fclose(f);
	assert_int_equal(res_metric(c, "cpus", "count"), cpus * 1000);
	assert_int_equal(res_metric(c, "memory", "count"), (json_int_t)(kb >> 10));
	m = jdt_metrics(c);
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(json_object_get(m, "resources"), "cpus"), "source")), "machine");
	json_decref(m);
	snprintf(line, sizeof(line), "{\"kind\": \"exec\", \"argv\": [\"true\"], \"resources\": "
		 "{\"cpus\": %ld.5}}", cpus);
	expect_refused(c, line, "limit_exceeded", "job.resources.cpus");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"resources\": {\"memory\": \"1000T\"}}",
		       "limit_exceeded", "job.resources.memory");
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"needs\": {\"cpus\": 1}}",
		       "not_supported", "job.needs.cpus");
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);

	/* Configured, then reloaded. */
	jdt_start(&t, "\"workers\": 2, \"resources\": {\"cpus\": {\"count\": 1.5}, "
		      "\"memory\": {\"bytes\": \"2G\"}}");
	c = jdt_connect(&t, NULL);
	assert_int_equal(res_metric(c, "cpus", "count"), 1500);
	assert_int_equal(res_metric(c, "memory", "count"), 2048);
	expect_refused(c, "{\"kind\": \"exec\", \"argv\": [\"true\"], \"resources\": {\"cpus\": 1.501}}",
		       "limit_exceeded", "job.resources.cpus");
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"true\"], "
		       "\"resources\": {\"memory\": \"3G\"}}}");
	assert_string_equal(jdt_err_code(r), "limit_exceeded");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
			       "2048 MiB"));
	json_decref(r);
	/* The tool's --cpus and --mem are those members. */
	{
		char out[1024];

		assert_int_not_equal(jdt_tool(&t, "cli", out, sizeof(out), "submit --cpus 1.6 -- true 2>&1"), 0);
		assert_non_null(strstr(out, "limit_exceeded"));
		assert_non_null(strstr(out, "resources.cpus"));
		assert_int_not_equal(jdt_tool(&t, "cli", out, sizeof(out), "submit --mem 3G -- true 2>&1"), 0);
		assert_non_null(strstr(out, "limit_exceeded"));
		assert_non_null(strstr(out, "resources.memory"));
	}
	jdt_write_config(&t, "\"workers\": 2, \"resources\": {\"cpus\": {\"count\": 3}, "
			     "\"memory\": {\"reserve\": \"1M\"}}");
	assert_int_equal(kill(t.pid, SIGHUP), 0);
	for (int i = 0; i < 3000 && res_metric(c, "cpus", "count") != 3000; i++)
		jdt_sleep_ms(10);
	assert_int_equal(res_metric(c, "cpus", "count"), 3000);
	assert_int_equal(res_metric(c, "memory", "count"), (json_int_t)((kb - 1024) >> 10));
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_indices),
		cmocka_unit_test(test_bad_needs),
		cmocka_unit_test(test_reload_counts),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_big_job_reservation),
		cmocka_unit_test(test_cpus_memory_drf),
		cmocka_unit_test(test_cpus_big_job),
		cmocka_unit_test(test_cpus_memory_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
