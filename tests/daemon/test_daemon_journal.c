/* tests/daemon/test_daemon_journal.c: what a submit reply said ok survives kill -9.
 *
 * restart: finished, running, waiting and queued jobs, a client's run-time settings and
 * the id counter come back after kill -9 as the journal recorded them (a running call
 * ends failed with cause daemon_restart, its dependent is judged, a queued job runs, a
 * deadline still holds), the instance changes, and `jschedd --check-journal` reads the
 * directory.
 *
 * kill9_rounds: three client threads submit as fast as they can (single submits,
 * pipelined batches of 20), each keeping the ids it saw acknowledged and the last state
 * it saw of a sample of them, while the daemon is killed with SIGKILL at a random moment
 * and restarted, for several rounds.  After each restart every acknowledged id exists,
 * in a state at least as far as last seen, a final state seen stays what it was, and no
 * id is handed out twice (every job is retained, so a missing one was lost).  The moment of the kill is random; what is checked does not
 * depend on it.
 *
 * Negative control: the same rounds with journal.sync "batch" and a 5 s batch (a reply
 * goes out before its records are written) must lose acknowledged ids, and the same
 * check must say so.
 *
 * restart_scanned: call jobs whose specs all differ (names, priorities, costs, deps,
 * deadlines, and args of every shape, strings with braces, quotes and escapes in them)
 * are recovered by a scan of their spec text, not a parse (the metric
 * journal.recovered_scanned counts them): the final ones show what they showed, and the
 * queued ones run after the restart with exactly the args they were submitted with
 * (echo returns them).  Specs the scan does not read (an escaped name, a retry policy)
 * come back through the parse as before.
 *
 * restart_records_same: final call jobs of specs that all differ (names of 1 to 256
 * bytes, across the 15 a name kept in the names slab may have; fn, priority, cost and
 * client changing, records of the same spec in a row among them) answer a
 * status after kill -9 and a restart with the very bytes they answered before it.
 *
 * restart_million: 1,000,000 retained jobs, each with a spec of its own, all come back
 * after kill -9 (a sample checked one by one: name, fn, value).
 *
 * no_direct: where the filesystem refuses O_DIRECT (fault_shim.so refusing it at the
 * open, then at the write), the journal writes through the page cache instead: the
 * metrics say "fdatasync", and what was acknowledged survives kill -9.
 *
 * journal_unavailable: the daemon runs with fault_shim.so preloaded, which fails every
 * write and sync of its journal segments with ENOSPC while a flag file exists: submits
 * are refused with journal_unavailable (a new connection's hello and the metrics still
 * answer, the fault in them; so do a status and a wait of a job whose records are on disk,
 * while one of the job whose end is stuck in memory is held), a job running through the
 * fault ends, and once the flag is gone it all goes on, through a kill -9 too.
 *
 * loop_waits_for_groups: the loop waits awake for a flush (journal.cycle.loop_waits) only
 * when the replies of two or more asks wait on it: one client submitting in turn never
 * does in 200 submits, two clients submitting at once do, and every submit is answered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/proc.h"
#include "tests/daemon/harness.h"

static struct jdt t;

static char *instance(struct jsched_conn *c)
{
	json_t *m = jdt_metrics(c);
	char *s = strdup(json_string_value(json_object_get(m, "instance")));

	json_decref(m);
	return s;
}

static uint64_t submit_spec(struct jsched_conn *c, const char *json)
{
	struct jsched_spec *spec = NULL;
	uint64_t id = 0;

	assert_int_equal(jsched_spec_from_json(json, &spec), 0);
	assert_int_equal(jsched_submit(c, spec, &id), 0);
	jsched_spec_free(spec);
	return id;
}

static void test_restart(void **state)
{
	struct jsched_conn *c;
	uint64_t done, running, dependent, queued, far, late, named[3], graph[3];
	char *inst1, *inst2, spec[256];
	json_t *r;
	const char *s;

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = jdt_connect(&t, "alice");
	inst1 = instance(c);
	done = jdt_submit_call(c, "echo", "{\"kept\": [1, 2, 3]}");
	assert_string_equal(jdt_wait_final(c, done, NULL), "succeeded");
	/* One worker: a long sleep runs, so the next call waits in the queue. */
	running = jdt_submit_call(c, "sleep", "{\"ms\": 600000}");
	jdt_until_state(c, running, "running");
	snprintf(spec, sizeof(spec), "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [%llu]}",
		 (unsigned long long)running);
	dependent = submit_spec(c, spec);
	queued = jdt_submit_call(c, "echo", "{\"q\": 1}");
	far = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"noop\", \"deadline_in_ms\": 3600000}");
	/* Two submits with one spec text, then another: recovery parses a spec once for a
	 * run of the same text; each job comes back with its own. */
	for (int i = 0; i < 3; i++)
		named[i] = submit_spec(c, i < 2 ? "{\"kind\": \"call\", \"fn\": \"noop\", \"name\": \"x\"}"
					 : "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"y\"}");
	/* The journal keeps a spec as the text the client sent: a graph with a ref, spaces
	 * and an escape in it, and a request whose "job" is written with an escape (its
	 * record made from the parsed spec instead). */
	r = jdt_ok(c, "{ \"op\" : \"submit\", \"jobs\" : [ {\"ref\": \"a\", \"kind\": \"call\", "
		   "\"fn\": \"noop\", \"name\": \"g\\\"1\"} ,\n {\"kind\": \"call\", \"fn\": \"echo\", "
		   "\"after\": [{\"ref\": \"a\"}], \"deadline_in_ms\": 3600000, \"name\": \"g2\"} ] }");
	graph[0] = (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), 0));
	graph[1] = (uint64_t)json_integer_value(json_array_get(json_object_get(r, "jobs"), 1));
	json_decref(r);
	r = jdt_ok(c, "{\"op\": \"submit\", \"j\\u006fb\": {\"kind\": \"call\", \"fn\": \"noop\", "
		   "\"name\": \"esc\"}}");
	graph[2] = (uint64_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	assert_true(graph[0] && graph[1] > graph[0] && graph[2] > graph[1]);
	jsched_close(c);
	{
		struct jsched_conn *a = jdt_connect(&t, NULL);

		r = jdt_ok(a, "{\"op\": \"set_client\", \"client\": \"alice\", \"weight\": 7}");
		json_decref(r);
		jsched_close(a);
	}
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "alice");
	inst2 = instance(c);
	assert_string_not_equal(inst1, inst2);
	/* the finished job, with its value */
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)done);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "state")),
			    "succeeded");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(
				 json_object_get(json_object_get(r, "job"), "value"), "kept"), 2)),
			 3);
	json_decref(r);
	/* the running call: failed, daemon_restart; its dependent cancelled for it */
	r = NULL;
	assert_string_equal(jdt_wait_final(c, running, &r), "failed");
	assert_string_equal(json_string_value(json_object_get(r, "cause")), "daemon_restart");
	json_decref(r);
	r = NULL;
	assert_string_equal(jdt_wait_final(c, dependent, &r), "cancelled");
	assert_string_equal(json_string_value(json_object_get(r, "cause")), "dependency");
	json_decref(r);
	/* the queued one runs now; the far deadline did not expire it */
	assert_string_equal(jdt_wait_final(c, queued, NULL), "succeeded");
	assert_string_equal(jdt_wait_final(c, far, NULL), "succeeded");
	for (int i = 0; i < 3; i++) {
		r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)named[i]);
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "name")),
				    i < 2 ? "x" : "y");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "fn")),
				    i < 2 ? "noop" : "echo");
		json_decref(r);
	}
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = {"g\"1", "g2", "esc"};

		assert_string_equal(jdt_wait_final(c, graph[i], &r), "succeeded");
		json_decref(r);
		r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)graph[i]);
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "name")),
				    names[i]);
		json_decref(r);
	}
	/* ids go on after the highest one issued */
	late = jdt_submit_call(c, "noop", NULL);
	assert_true(late > far);
	assert_string_equal(jdt_wait_final(c, late, NULL), "succeeded");
	/* the client's run-time weight */
	{
		json_t *m = jdt_metrics(c), *cl = jdt_client_metrics(m, "alice");

		assert_non_null(cl);
		assert_int_equal(json_integer_value(json_object_get(cl, "weight")), 7);
		json_decref(m);
	}
	s = jdt_state(c, done);
	assert_string_equal(s, "succeeded");
	jsched_close(c);
	free(inst1);
	free(inst2);
	jdt_kill9(&t);
	/* --check-journal reads it, and says what it holds */
	{
		char cmd[1400], jdir[300];
		FILE *p;
		char line[512];
		bool sound = false;

		snprintf(jdir, sizeof(jdir), "%s/journal", t.dir);
		snprintf(cmd, sizeof(cmd), "'%s/bin/jschedd' --check-journal '%s'", t.build, jdir);
		p = popen(cmd, "r");
		assert_non_null(p);
		while (fgets(line, sizeof(line), p))
			if (strstr(line, ": sound"))
				sound = true;
		assert_int_equal(pclose(p), 0);
		assert_true(sound);
	}
	jdt_restart(&t);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

static const char *const scan_args[] = {
	"{\"i\": 1}", "[1, 2, {\"a\": [3, {}]}]", "\"x}]\\\"{[\"", "{\"s\": \"a}\\\"b]\", \"n\": -1.5e3}",
	"17", "true", "{\"u\": \"\\u00e9\\n\", \"e\": [] , \"z\":{ } }", "null",
};
enum { N_SCAN = sizeof(scan_args) / sizeof(scan_args[0]) };

static void test_restart_scanned(void **state)
{
	struct jsched_conn *c;
	uint64_t fin[N_SCAN], q[N_SCAN], running, noargs, parsed, retried;
	char spec[512];
	json_t *r, *m;

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = jdt_connect(&t, "bob");
	for (size_t i = 0; i < N_SCAN; i++) {
		snprintf(spec, sizeof(spec), "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"f%zu\", "
			 "\"priority\": \"%s\", \"cost\": %zu, \"args\": %s}", i,
			 i % 2 ? "high" : "low", i + 1, scan_args[i]);
		fin[i] = submit_spec(c, spec);
		assert_string_equal(jdt_wait_final(c, fin[i], NULL), "succeeded");
	}
	running = jdt_submit_call(c, "sleep", "{\"ms\": 600000}");
	jdt_until_state(c, running, "running");
	/* Paused: what comes now stays queued until after the restart. */
	json_decref(jdt_ok(c, "{\"op\": \"pause\"}"));
	for (size_t i = 0; i < N_SCAN; i++) {
		/* member order and spacing as a client may write them */
		snprintf(spec, sizeof(spec), "{ \"args\" :%s,\"name\":\"q%zu\",\"fn\":\"echo\", "
			 "\"deadline_in_ms\": 3600000, \"after\": [%llu], \"kind\":\"call\" }",
			 scan_args[i], i, (unsigned long long)fin[i]);
		q[i] = submit_spec(c, spec);
	}
	noargs = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"none\"}");
	parsed = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"p\\u0071\", "
			     "\"args\": {\"p\": 1}}");
	retried = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"args\": {\"r\": 2}, "
			      "\"retry\": {\"max_attempts\": 2}}");
	for (size_t i = 0; i < N_SCAN; i++)
		assert_string_equal(jdt_state(c, q[i]), "queued");
	jsched_close(c);
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "bob");
	json_decref(jdt_ok(c, "{\"op\": \"resume\"}")); /* if the pause outlived it */
	m = jdt_metrics(c);
	/* the finished echoes, the sleep, the queued ones and the one without args */
	assert_true(json_integer_value(json_object_get(json_object_get(m, "journal"),
						       "recovered_scanned")) >= 2 * N_SCAN + 1);
	json_decref(m);
	for (size_t i = 0; i < N_SCAN; i++) {
		json_t *job, *want = json_loads(scan_args[i], JSON_DECODE_ANY, NULL);

		assert_non_null(want);
		r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)fin[i]);
		job = json_object_get(r, "job");
		snprintf(spec, sizeof(spec), "f%zu", i);
		assert_string_equal(json_string_value(json_object_get(job, "name")), spec);
		assert_string_equal(json_string_value(json_object_get(job, "fn")), "echo");
		assert_string_equal(json_string_value(json_object_get(job, "priority")),
				    i % 2 ? "high" : "low");
		assert_true(json_equal(json_object_get(job, "value"), want));
		json_decref(r);
		r = NULL;
		assert_string_equal(jdt_wait_final(c, q[i], &r), "succeeded");
		if (!json_equal(json_object_get(r, "value"), want))
			fail_msg("job %zu ran with %s, submitted with %s", i,
				 json_dumps(json_object_get(r, "value"), JSON_ENCODE_ANY), scan_args[i]);
		snprintf(spec, sizeof(spec), "q%zu", i);
		assert_string_equal(json_string_value(json_object_get(r, "name")), spec);
		json_decref(r);
		json_decref(want);
	}
	r = NULL;
	assert_string_equal(jdt_wait_final(c, noargs, &r), "succeeded");
	assert_true(json_is_null(json_object_get(r, "value")));
	json_decref(r);
	r = NULL;
	assert_string_equal(jdt_wait_final(c, parsed, &r), "succeeded");
	assert_string_equal(json_string_value(json_object_get(r, "name")), "pq");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "value"), "p")), 1);
	json_decref(r);
	r = NULL;
	assert_string_equal(jdt_wait_final(c, retried, &r), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "value"), "r")), 2);
	json_decref(r);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* restart_scanned_repeated: records of one call spec in a row are recovered from the first
 * one's scan (the later ones are not scanned again), each with the spec's name and args;
 * a spec whose scan stops part way (its name read, then a member the scan does not read:
 * "key") is parsed instead, and the same spec as before it, after it, still gets its own
 * name (fails if the remembered scan were kept past the stopped one, whose name it would
 * show).  Queued (paused) at the kill, so that each runs after the restart with the args
 * it was recovered with. */
static void test_restart_scanned_repeated(void **state)
{
	static const char rep[] = "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"rep\", "
				  "\"args\": {\"a\": 1}}";
	uint64_t ids[5];
	struct jsched_conn *c;
	json_t *r;

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = jdt_connect(&t, "bob");
	json_decref(jdt_ok(c, "{\"op\": \"pause\"}"));
	for (size_t i = 0; i < 3; i++)
		ids[i] = submit_spec(c, rep);
	ids[3] = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"echo\", \"name\": \"other\", "
			     "\"key\": \"k-other\", \"args\": {\"b\": 2}}");
	ids[4] = submit_spec(c, rep);
	jsched_close(c);
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "bob");
	json_decref(jdt_ok(c, "{\"op\": \"resume\"}"));
	for (size_t i = 0; i < 5; i++) {
		bool other = i == 3;

		r = NULL;
		assert_string_equal(jdt_wait_final(c, ids[i], &r), "succeeded");
		assert_string_equal(json_string_value(json_object_get(r, "name")),
				    other ? "other" : "rep");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "value"),
								    other ? "b" : "a")),
				 other ? 2 : 1);
		json_decref(r);
	}
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* status_text: the record in the reply to a status of job id, as the daemon wrote it,
 * from its "job" member on (the reply's request id before it differs) (malloc'd). */
static char *status_text(struct jsched_conn *c, uint64_t id)
{
	char req[128], *reply = NULL, *rec, *out;

	snprintf(req, sizeof(req), "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)id);
	assert_int_equal(jsched_request(c, req, &reply), 0);
	assert_non_null(reply);
	rec = strstr(reply, "\"job\":{");
	assert_non_null(rec);
	out = strdup(rec);
	assert_non_null(out);
	free(reply);
	return out;
}

/* restart_records_same: see the top of the file. */
static void test_restart_records_same(void **state)
{
	static const size_t name_lens[] = {1, 14, 15, 16, 17, 64, 255, 256};
	enum { N = 3 * sizeof(name_lens) / sizeof(name_lens[0]) };
	static const char *const fns[] = {"echo", "noop", "echo"};
	static const char *const prios[] = {"low", "normal", "high", "critical"};
	uint64_t ids[N + 2];
	char *before[N + 2], spec[768], name[300];
	struct jsched_conn *c, *cs[2];

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	c = cs[0] = jdt_connect(&t, "bob");
	cs[1] = jdt_connect(&t, "carol");
	for (size_t i = 0; i < N; i++) {
		size_t len = name_lens[i % (sizeof(name_lens) / sizeof(name_lens[0]))];

		for (size_t k = 0; k < len; k++)
			name[k] = (char)('a' + (i + k) % 26);
		snprintf(name + len - (len > 3 ? 3 : len), 4, "%03zu", i); /* each its own */
		name[len] = 0;
		snprintf(spec, sizeof(spec), "{\"kind\":\"call\",\"fn\":\"%s\",\"args\":{\"i\":%zu},"
			 "\"name\":\"%s\",\"priority\":\"%s\",\"cost\":%zu}", fns[i % 3], i, name,
			 prios[i % 4], 1 + i % 5);
		ids[i] = submit_spec(cs[i / 3 % 2], spec); /* clients changing too */
	}
	jsched_close(cs[1]);
	/* the same spec twice in a row: the second from the first one's scan */
	ids[N] = submit_spec(c, spec);
	ids[N + 1] = submit_spec(c, spec);
	for (size_t i = 0; i < N + 2; i++) {
		assert_string_equal(jdt_wait_final(c, ids[i], NULL), "succeeded");
		before[i] = status_text(c, ids[i]);
	}
	jsched_close(c);
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "bob");
	assert_true(jdt_metric_int(c, "journal/recovered_scanned") >= N + 2);
	for (size_t i = 0; i < N + 2; i++) {
		char *after = status_text(c, ids[i]);

		if (strcmp(after, before[i]) != 0)
			fail_msg("job %llu before the restart: %s\nafter it: %s",
				 (unsigned long long)ids[i], before[i], after);
		free(after);
		free(before[i]);
	}
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* restart_million: a restart with 1,000,000 retained jobs (200,000 under a sanitizer,
 * whose daemon is several times slower and bigger) keeps them all: echo calls each with a
 * name and args of its own, so every one is recovered through the scan of its own spec
 * text.  After kill -9 every job is retained and succeeded, a sample of them (the first,
 * the last, and every 997th) shows its own name, fn and value, and the next id goes past
 * them.  What recovery keeps, not how long it takes (bench_e2e --part durable times it). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MILLION_JOBS 200000
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MILLION_JOBS 200000
#endif
#endif
#ifndef MILLION_JOBS
#define MILLION_JOBS 1000000
#endif

static void million_check(struct jsched_conn *c, uint64_t first, size_t i)
{
	char want[64];
	json_t *r, *job;

	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)(first + i));
	job = json_object_get(r, "job");
	assert_string_equal(json_string_value(json_object_get(job, "state")), "succeeded");
	assert_string_equal(json_string_value(json_object_get(job, "fn")), "echo");
	snprintf(want, sizeof(want), "m-%zu", i);
	assert_string_equal(json_string_value(json_object_get(job, "name")), want);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "value"), "i")),
			 (json_int_t)i);
	json_decref(r);
}

static void test_restart_million(void **state)
{
	enum { BATCH = 1000 };
	struct jsched_spec *specs[BATCH];
	struct jsched_results *res;
	struct jsched_conn *c;
	uint64_t *ids = calloc(MILLION_JOBS, sizeof(*ids)), late;

	(void)state;
	assert_non_null(ids);
	jdt_start(&t, "\"retention\": {\"jobs\": 2000000, \"bytes\": \"64G\"}, \"limits\": "
		  "{\"queued_jobs\": 2000000}, \"clients\": {\"default\": {\"max_queued\": 2000000}}");
	c = jdt_connect(&t, "many");
	for (size_t at = 0; at < MILLION_JOBS; at += BATCH) {
		char args[64], name[64];

		for (size_t i = 0; i < BATCH; i++) {
			snprintf(args, sizeof(args), "{\"i\": %zu}", at + i);
			snprintf(name, sizeof(name), "m-%zu", at + i);
			assert_int_equal(jsched_spec_call("echo", args, &specs[i]), 0);
			assert_int_equal(jsched_spec_set_name(specs[i], name), 0);
		}
		res = NULL;
		assert_int_equal(jsched_submit_batch_wait(c, (const struct jsched_spec *const *)specs,
							  BATCH, JSCHED_WAIT_ALL, 60000, ids + at,
							  &res),
				 BATCH);
		jsched_results_free(res);
		for (size_t i = 0; i < BATCH; i++)
			jsched_spec_free(specs[i]);
	}
	for (size_t i = 1; i < MILLION_JOBS; i++)
		assert_true(ids[i] == ids[0] + i); /* one client, one batch after another */
	jsched_close(c);
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "many");
	assert_int_equal(jdt_metric_int(c, "journal/recovered_jobs"), MILLION_JOBS);
	assert_true(jdt_metric_int(c, "journal/recovered_scanned") >= MILLION_JOBS);
	assert_int_equal(jdt_metric_int(c, "jobs/retained"), MILLION_JOBS);
	assert_int_equal(jdt_metric_int(c, "jobs/forgotten"), 0);
	for (size_t i = 0; i < MILLION_JOBS; i += 997)
		million_check(c, ids[0], i);
	million_check(c, ids[0], MILLION_JOBS - 1);
	late = jdt_submit_call(c, "noop", NULL);
	assert_true(late > ids[MILLION_JOBS - 1]);
	assert_string_equal(jdt_wait_final(c, late, NULL), "succeeded");
	jsched_close(c);
	free(ids);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* gone_or_zombie: is process pid gone (or dead, waiting to be reaped)? */
static bool gone_or_zombie(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

/* A command running when the daemon is killed outlives it (its own session); the
 * restart kills its process group and fails the job (daemon_restart). */
static void test_restart_command(void **state)
{
	struct jsched_conn *c;
	char spec[1400], pidfile[300];
	uint64_t id;
	pid_t pid = 0;
	json_t *r = NULL;
	FILE *f;

	(void)state;
	jdt_start(&t, "");
	c = jdt_connect(&t, NULL);
	snprintf(pidfile, sizeof(pidfile), "%s/cmd.pid", t.dir);
	snprintf(spec, sizeof(spec), "{\"kind\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", "
		 "\"echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 600\"]}", pidfile, pidfile, pidfile);
	id = submit_spec(c, spec);
	for (int i = 0; i < 3000 && !(f = fopen(pidfile, "r")); i++)
		jdt_sleep_ms(10);
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	/* A reply goes out only once what was recorded before it is durable: the
	 * process's record too (it was made at the spawn, before the command wrote). */
	assert_string_equal(jdt_state(c, id), "running");
	jsched_close(c);
	jdt_kill9(&t);
	assert_false(gone_or_zombie(pid)); /* it outlived the daemon */
	jdt_restart(&t);
	c = jdt_connect(&t, NULL);
	assert_string_equal(jdt_wait_final(c, id, &r), "failed");
	assert_string_equal(json_string_value(json_object_get(r, "cause")), "daemon_restart");
	assert_non_null(strstr(json_string_value(json_object_get(r, "reason")), "killed"));
	json_decref(r);
	for (int i = 0; i < 3000 && !gone_or_zombie(pid); i++)
		jdt_sleep_ms(10);
	assert_true(gone_or_zombie(pid));
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* metric_fault: the journal's fault in the metrics (static copy; "" for none). */
static const char *metric_fault(struct jsched_conn *c)
{
	static char buf[1024];
	json_t *m = jdt_metrics(c);
	const char *f = json_string_value(json_object_get(json_object_get(m, "journal"), "fault"));

	snprintf(buf, sizeof(buf), "%s", f ? f : "");
	json_decref(m);
	return buf;
}

/* start_under_shim: start t's daemon with config under tests/daemon/fault_shim.so
 * (LD_PRELOAD, and ASAN_OPTIONS letting the shim sit under ASan's runtime, which wants to
 * come first), then restore both for what the test runs next; the JSCHED_FAULT_* variables
 * are the caller's. */
static void start_under_shim(const char *config)
{
	char shim[700], asan[700];
	const char *old = getenv("ASAN_OPTIONS");
	char *old_asan = old ? strdup(old) : NULL;

	snprintf(shim, sizeof(shim), "%s/tests/daemon/fault_shim.so", jtc_build_dir());
	snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0", old_asan ? old_asan : "",
		 old_asan ? ":" : "");
	setenv("LD_PRELOAD", shim, 1);
	setenv("ASAN_OPTIONS", asan, 1);
	jdt_start(&t, config);
	unsetenv("LD_PRELOAD");
	if (old_asan)
		setenv("ASAN_OPTIONS", old_asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(old_asan);
}

static void test_no_direct(void **state)
{
	static const char *const hows[] = {"open", "write"};

	(void)state;
	for (int h = 0; h < 2; h++) {
		struct jsched_conn *c;
		uint64_t ids[5];
		json_t *m;

		setenv("JSCHED_FAULT_MATCH", "/journal/seg-", 1);
		setenv("JSCHED_FAULT_NO_DIRECT", hows[h], 1);
		start_under_shim("");
		unsetenv("JSCHED_FAULT_NO_DIRECT");
		c = jdt_connect(&t, NULL);
		for (int i = 0; i < 5; i++)
			ids[i] = jdt_submit_call(c, "echo", "{\"n\": 1}");
		m = jdt_metrics(c);
		assert_string_equal(json_string_value(json_object_get(json_object_get(m, "journal"), "io")),
				    "fdatasync");
		json_decref(m);
		jsched_close(c);
		jdt_kill9(&t);
		jdt_restart(&t); /* without the shim: O_DIRECT again, on the same journal */
		c = jdt_connect(&t, NULL);
		for (int i = 0; i < 5; i++)
			assert_string_equal(jdt_wait_final(c, ids[i], NULL), "succeeded");
		m = jdt_metrics(c);
		assert_string_equal(json_string_value(json_object_get(json_object_get(m, "journal"), "io")),
				    "direct");
		json_decref(m);
		jsched_close(c);
		assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	}
}

/* The fault flag of test_journal_unavailable, kept where its teardown can find it: a
 * failed assertion leaves the test at once, and a flag file (or the variables naming it)
 * left behind would make the disk "full" for every daemon the next tests start. */
static char fault_flagdir[] = "/tmp/jsched-fault-XXXXXX";
static char fault_flag[64];

static int fault_teardown(void **state)
{
	(void)state;
	unsetenv("JSCHED_FAULT_FLAG");
	unsetenv("JSCHED_FAULT_MATCH");
	if (fault_flag[0]) {
		unlink(fault_flag);
		rmdir(fault_flagdir);
	}
	if (t.pid > 0)
		(void)jdt_stop(&t, SIGKILL); /* and its directory */
	return 0;
}

static void test_journal_unavailable(void **state)
{
	char *const flagdir = fault_flagdir, *const flag = fault_flag;
	char req[128];
	struct jsched_conn *c, *c2;
	uint64_t before, through, after;
	json_t *r;
	FILE *f;
	int i, fd;

	(void)state;
	assert_non_null(mkdtemp(flagdir));
	snprintf(flag, sizeof(fault_flag), "%s/full", flagdir);
	setenv("JSCHED_FAULT_FLAG", flag, 1);
	setenv("JSCHED_FAULT_MATCH", "/journal/seg-", 1);
	start_under_shim("\"workers\": 2");
	c = jdt_connect(&t, NULL);
	before = jdt_submit_call(c, "noop", NULL);
	assert_string_equal(jdt_wait_final(c, before, NULL), "succeeded");
	through = jdt_submit_call(c, "sleep", "{\"ms\": 300}");
	jdt_until_state(c, through, "running");
	/* The disk is full.  The sleeper's end is the first record that cannot be written
	 * (nobody waits on it: it is asked for within journal.batch_ms). */
	assert_non_null(f = fopen(flag, "w"));
	fclose(f);
	for (i = 0; i < 3000 && !metric_fault(c)[0]; i++)
		jdt_sleep_ms(10);
	assert_non_null(strstr(metric_fault(c), "No space left on device"));
	/* A new connection is answered, and its submit refused, at once. */
	c2 = jdt_connect(&t, NULL);
	r = jdt_req(c2, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\"}}");
	assert_string_equal(jdt_err_code(r), "journal_unavailable");
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"),
								 "message")), "No space left"));
	json_decref(r);
	/* A status or a wait of a job whose records are all on disk answers at once (it
	 * tells nothing the journal could lose); one of the sleeper, whose end is stuck in
	 * memory, is held until the disk takes it. */
	fd = jdt_raw_hello(&t, NULL);
	snprintf(req, sizeof(req), "{\"op\": \"status\", \"id\": 1, \"job\": %llu}",
		 (unsigned long long)before);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "state")),
			    "succeeded");
	json_decref(r);
	snprintf(req, sizeof(req), "{\"op\": \"wait\", \"id\": 2, \"job\": %llu}",
		 (unsigned long long)before);
	r = jdt_raw_ask(fd, req);
	assert_true(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	snprintf(req, sizeof(req), "{\"op\": \"status\", \"id\": 3, \"job\": %llu}",
		 (unsigned long long)through);
	jdt_send_frame(fd, req);
	/* Space again: the fault clears (the flusher retries into a fresh segment), the
	 * sleeper's end is durable and told, submits are accepted. */
	assert_int_equal(unlink(flag), 0);
	for (i = 0; i < 3000 && metric_fault(c)[0]; i++)
		jdt_sleep_ms(10);
	assert_string_equal(metric_fault(c), "");
	r = jdt_read_frame(fd); /* the sleeper's status, held until now */
	assert_non_null(r);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "job"), "state")),
			    "succeeded");
	json_decref(r);
	close(fd);
	assert_string_equal(jdt_wait_final(c, through, NULL), "succeeded");
	after = jdt_submit_call(c2, "noop", NULL);
	assert_true(after > through);
	r = jdt_metrics(c);
	assert_true(json_integer_value(json_object_get(json_object_get(r, "journal"), "failures")) >= 1);
	json_decref(r);
	jsched_close(c2);
	jsched_close(c);
	/* What was told survives: the jobs from before, through and after the fault. */
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, NULL);
	assert_string_equal(jdt_state(c, before), "succeeded");
	assert_string_equal(jdt_state(c, through), "succeeded");
	assert_string_equal(jdt_wait_final(c, after, NULL), "succeeded");
	assert_true(jdt_submit_call(c, "noop", NULL) > after);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* compaction: with a small journal.compact_bytes the daemon writes a snapshot while
 * jobs keep coming; after kill -9 the snapshot plus the records after it give back the
 * same state: retained jobs with their values, forgotten ones forgotten, a running one
 * failed (daemon_restart), a queued one run, a waiting command's memory limit, a
 * client's weight and max_running, ids going on. */
static void test_compaction(void **state)
{
	struct jsched_conn *c;
	uint64_t first = 0, last = 0, running, dependent, queued, after, late, keyed, limited = 0;
	char members[600], spec[200];
	json_t *m, *r;

	(void)state;
	jdt_start(&t, "\"workers\": 1");
	snprintf(members, sizeof(members), "\"workers\": 1, \"retention\": {\"jobs\": 500}, "
		 "\"journal\": {\"dir\": \"%s/journal\", \"compact_bytes\": 65536}", t.dir);
	jdt_write_config(&t, members);
	jdt_kill9(&t);
	jdt_restart(&t);
	c = jdt_connect(&t, "bob");
	/* A keyed job that stays in the table, so the snapshot holds it (rebuilt from the
	 * job: its key must come back). */
	keyed = submit_spec(c, "{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 600000}, "
			       "\"key\": \"snap-key\"}");
	/* A command with a memory limit waiting for that one (the snapshot rebuilds its
	 * spec: the limit must come back); where cgroups cannot apply one it is refused, and
	 * that part is skipped. */
	r = jdt_req(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"exec\", \"argv\": [\"true\"], "
		       "\"resources\": {\"memory\": \"64M\"}, \"after\": [{\"job\": %llu, \"on\": \"any\"}]}}",
		    (unsigned long long)keyed);
	if (json_is_true(json_object_get(r, "ok")))
		limited = (uint64_t)json_integer_value(json_object_get(r, "job"));
	else
		assert_string_equal(jdt_err_code(r), "not_supported");
	json_decref(r);
	for (int i = 0; i < 3000; i++) {
		uint64_t id = jdt_submit_call(c, "echo", "{\"n\": 1}");

		if (!first)
			first = id;
		last = id;
	}
	assert_string_equal(jdt_wait_final(c, last, NULL), "succeeded");
	running = jdt_submit_call(c, "sleep", "{\"ms\": 600000}");
	jdt_until_state(c, running, "running");
	snprintf(spec, sizeof(spec), "{\"kind\": \"call\", \"fn\": \"noop\", \"after\": [%llu]}",
		 (unsigned long long)running);
	dependent = submit_spec(c, spec);
	queued = jdt_submit_call(c, "echo", "{\"q\": 2}");
	{
		struct jsched_conn *a = jdt_connect(&t, NULL);

		r = jdt_ok(a, "{\"op\": \"set_client\", \"client\": \"bob\", \"weight\": 5, "
			      "\"max_running\": 7}");
		json_decref(r);
		jsched_close(a);
	}
	/* the 1 s tick starts it; bounded wait for the metrics to say it is in place */
	jdt_wait_snapshots(c, 1);
	after = jdt_submit_call(c, "echo", "{\"after\": true}");
	assert_string_equal(jdt_wait_final(c, after, NULL), "succeeded");
	jsched_close(c);
	jdt_kill9(&t);

	jdt_restart(&t);
	c = jdt_connect(&t, "bob");
	r = jdt_req(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)first);
	assert_string_equal(jdt_err_code(r), "job_forgotten");
	json_decref(r);
	assert_string_equal(jdt_state(c, last), "succeeded");
	r = jdt_ok(c, "{\"op\": \"submit\", \"job\": {\"kind\": \"call\", \"fn\": \"noop\", \"key\": \"snap-key\"}}");
	assert_int_equal(json_integer_value(json_object_get(r, "job")), (json_int_t)keyed);
	assert_true(json_is_true(json_object_get(r, "existing")));
	json_decref(r);
	r = NULL;
	assert_string_equal(jdt_wait_final(c, running, &r), "failed");
	assert_string_equal(json_string_value(json_object_get(r, "cause")), "daemon_restart");
	json_decref(r);
	assert_string_equal(jdt_wait_final(c, dependent, NULL), "cancelled");
	if (limited) {
		r = NULL;
		assert_string_equal(jdt_wait_final(c, limited, &r), "succeeded");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "usage"),
								    "memory_max_bytes")), 64 << 20);
		json_decref(r);
	}
	assert_string_equal(jdt_wait_final(c, queued, NULL), "succeeded");
	r = jdt_ok(c, "{\"op\": \"status\", \"job\": %llu}", (unsigned long long)after);
	assert_true(json_is_true(json_object_get(json_object_get(json_object_get(r, "job"), "value"),
						 "after")));
	json_decref(r);
	late = jdt_submit_call(c, "noop", NULL);
	assert_true(late > after);
	m = jdt_metrics(c);
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(m, "bob"), "weight")), 5);
	/* every setting set_client made, not only the first three */
	assert_int_equal(json_integer_value(json_object_get(jdt_client_metrics(m, "bob"),
							    "max_running")), 7);
	json_decref(m);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* ---- kill -9 under load ---- */

#define CLIENTS 3
#define MAX_IDS 200000

struct seen {
	uint64_t id;
	char state[12];		/* "" until a status was seen */
};

struct client {
	pthread_t th;
	int k;
	struct seen *ids;
	size_t n;
	unsigned seed;
	bool batches;
};

static const char *const order[] = {"waiting", "queued", "running", "succeeded", "failed",
				    "cancelled", "expired", "dropped"};

static int rank(const char *s)
{
	for (int i = 0; i < 8; i++)
		if (strcmp(s, order[i]) == 0)
			return i < 3 ? i : 3;
	return -1;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct jsched_conn *c = NULL;
	struct jsched_spec *sp[20];
	char name[16];

	snprintf(name, sizeof(name), "c%d", cl->k);
	if (jsched_connect(t.sock, name, &c) != 0)
		return NULL;
	for (int i = 0; i < 20; i++)
		if (jsched_spec_call(i % 3 ? "noop" : "echo", "{\"x\": 1}", &sp[i]) != 0)
			abort();
	while (cl->n + 20 < MAX_IDS) {
		uint64_t ids[20];
		int rc;

		if (cl->batches) {
			rc = jsched_submit_batch(c, (const struct jsched_spec *const *)sp, 20, ids);
			if (rc != 0)
				break;
			for (int i = 0; i < 20; i++)
				cl->ids[cl->n++].id = ids[i];
		} else {
			rc = jsched_submit(c, sp[0], &ids[0]);
			if (rc != 0)
				break;
			cl->ids[cl->n++].id = ids[0];
		}
		/* now and then, the state of an earlier one */
		if (rand_r(&cl->seed) % 8 == 0) {
			struct seen *s = &cl->ids[(size_t)rand_r(&cl->seed) % cl->n];
			struct jsched_result *res = NULL;

			if (jsched_status(c, s->id, &res) != 0)
				break;
			snprintf(s->state, sizeof(s->state), "%s", res->state_name);
			jsched_result_free(res);
		}
	}
	for (int i = 0; i < 20; i++)
		jsched_spec_free(sp[i]);
	jsched_close(c);
	return NULL;
}

/* check_all: every acknowledged id of every client exists, at least as far as seen.
 * Returns the number that do not (each one printed up to a few). */
static bool allow_forgotten;	/* retention may have forgotten acknowledged jobs */

static size_t check_all(struct client *cls, uint64_t *max_id)
{
	struct jsched_conn *c = jdt_connect(&t, NULL);
	size_t bad = 0;

	*max_id = 0;
	for (int k = 0; k < CLIENTS; k++)
		for (size_t i = 0; i < cls[k].n; i += 200) {
			uint64_t ids[200];
			struct jsched_results *res = NULL;
			size_t n = cls[k].n - i < 200 ? cls[k].n - i : 200;
			int rc;

			for (size_t m = 0; m < n; m++) {
				ids[m] = cls[k].ids[i + m].id;
				if (ids[m] > *max_id)
					*max_id = ids[m];
			}
			rc = jsched_status_many(c, ids, n, &res);
			if (rc != 0) {
				/* one missing: find which, one by one */
				for (size_t m = 0; m < n; m++) {
					struct jsched_result *r1 = NULL;

					int rc1 = jsched_status(c, ids[m], &r1);

					if (rc1 == JSCHED_EJOB_FORGOTTEN && allow_forgotten) {
						cls[k].ids[i + m].state[0] = 0;
						continue;
					}
					if (rc1 != 0) {
						if (bad < 5)
							fprintf(stderr, "acknowledged job %llu is lost\n",
								(unsigned long long)ids[m]);
						bad++;
						continue;
					}
					jsched_result_free(r1);
				}
				continue;
			}
			for (size_t m = 0; m < n; m++) {
				const struct seen *s = &cls[k].ids[i + m];
				const char *st = res->items[m]->state_name;
				int was = s->state[0] ? rank(s->state) : 0, now = rank(st);

				if (now < was || (was == 3 && strcmp(s->state, st) != 0)) {
					if (bad < 5)
						fprintf(stderr, "job %llu was %s, now %s\n",
							(unsigned long long)s->id, s->state, st);
					bad++;
				}
			}
			jsched_results_free(res);
		}
	jsched_close(c);
	return bad;
}

/* rounds: returns the number of acknowledged ids lost or gone backwards over all
 * rounds, or handed out twice.  `journal`: the config's journal members after the
 * directory (NULL: the defaults); `retain`: final jobs retained (with few, retention
 * forgets acknowledged jobs, which answer job_forgotten: allowed then). */
static size_t rounds(const char *journal, int n_rounds, unsigned retain)
{
	struct client cls[CLIENTS];
	size_t bad = 0;
	uint64_t prev_max = 0;
	unsigned seed = (unsigned)time(NULL);
	char members[800];

	allow_forgotten = retain < 10000000;
	snprintf(members, sizeof(members), "\"workers\": 2, \"retention\": {\"jobs\": %u}", retain);
	jdt_start(&t, members);
	if (journal) {
		snprintf(members, sizeof(members), "\"workers\": 2, \"retention\": {\"jobs\": "
			 "%u}, \"journal\": {\"dir\": \"%s/journal\", %s}", retain, t.dir, journal);
		jdt_write_config(&t, members);
		jdt_kill9(&t);
		jdt_restart(&t);
	}
	memset(cls, 0, sizeof(cls));
	for (int k = 0; k < CLIENTS; k++) {
		cls[k].k = k;
		cls[k].ids = calloc(MAX_IDS, sizeof(*cls[k].ids));
		cls[k].seed = seed + (unsigned)k;
		cls[k].batches = k == 2;
	}
	printf("seed %u\n", seed);
	for (int round = 0; round < n_rounds; round++) {
		size_t before[CLIENTS];
		uint64_t max_id;
		int delay = 50 + rand_r(&seed) % 250;

		for (int k = 0; k < CLIENTS; k++) {
			before[k] = cls[k].n;
			pthread_create(&cls[k].th, NULL, client_main, &cls[k]);
		}
		jdt_sleep_ms(delay); /* the random moment of the kill */
		jdt_kill9(&t);
		for (int k = 0; k < CLIENTS; k++)
			pthread_join(cls[k].th, NULL);
		jdt_restart(&t);
		bad += check_all(cls, &max_id);
		/* no id handed out twice: each round's new ids lie above the last round's */
		for (int k = 0; k < CLIENTS; k++)
			for (size_t i = before[k]; i < cls[k].n; i++)
				if (cls[k].ids[i].id <= prev_max) {
					if (bad < 5)
						fprintf(stderr, "id %llu was handed out again (round %d)\n",
							(unsigned long long)cls[k].ids[i].id, round);
					bad++;
				}
		prev_max = max_id;
		printf("round %d: kill after %d ms; %zu, %zu, %zu acknowledged; %zu lost so far\n",
		       round, delay, cls[0].n, cls[1].n, cls[2].n, bad);
	}
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
	for (int k = 0; k < CLIENTS; k++)
		free(cls[k].ids);
	return bad;
}

static void test_kill9_rounds(void **state)
{
	(void)state;
	/* Every job retained: one missing can only be lost. */
	assert_int_equal(rounds(NULL, 6, 10000000), 0);
}

/* The same with compaction running: few jobs retained and a small compact_bytes, so
 * snapshots are taken (and cut short by the kills) while the clients submit. */
static void test_kill9_rounds_compacting(void **state)
{
	(void)state;
	assert_int_equal(rounds("\"compact_bytes\": 65536", 6, 300), 0);
}

static void test_negative_control(void **state)
{
	size_t lost;

	(void)state;
	lost = rounds("\"sync\": \"batch\", \"batch_ms\": 5000", 3, 10000000);
	printf("negative control (replies before the records are written): %zu acknowledged "
	       "jobs lost\n", lost);
	if (lost == 0)
		fail_msg("a daemon that acknowledges before its journal is written was not caught");
}

/* flusher_cpus: the CPU list the journal's flusher thread ("jd-journal") of pid may run
 * on, from /proc, into buf; and the process's own (its main thread's) into all. */
static void flusher_cpus(pid_t pid, char *buf, size_t len, char *all, size_t alllen)
{
	char path[128], line[256], comm[64];
	bool found = false;
	FILE *f;

	for (int pass = 0; pass < 2; pass++) {
		char task[64];
		pid_t tid = pid;

		if (pass == 1) { /* the flusher: the task named jd-journal */
			char cmd[160];
			FILE *ls;

			snprintf(cmd, sizeof(cmd), "grep -lx jd-journal /proc/%d/task/*/comm", (int)pid);
			assert_non_null(ls = popen(cmd, "r"));
			if (fgets(comm, sizeof(comm), ls)) {
				int n = 0;

				sscanf(comm, "/proc/%*d/task/%d/comm%n", &tid, &n);
				found = n > 0;
			}
			pclose(ls);
			assert_true(found);
		}
		snprintf(task, sizeof(task), "%d", (int)tid);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, task);
		assert_non_null(f = fopen(path, "r"));
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
				char *v = line + 18;

				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = 0;
				snprintf(pass ? buf : all, pass ? len : alllen, "%s", v);
			}
		fclose(f);
	}
}

/* The journal's flusher runs where journal.cpu says: on that CPU (the thread's affinity
 * and the metrics' journal.flusher_cpu), on any CPU the process may use with "any", and
 * with "auto" (the default) on the CPU that takes the journal disk's interrupts when
 * core/diskcpu.c finds one, else anywhere; jobs are durable either way. */
static void test_flusher_cpu(void **state)
{
	static const char *const cpus[] = {"0", "\"any\"", "\"auto\""};

	(void)state;
	jdt_start(&t, "");
	for (int i = 0; i < 3; i++) {
		char members[600], mine[64] = "", all[64] = "";
		struct jsched_conn *c;
		json_t *m, *cpu;
		const char *why;
		uint64_t id;

		snprintf(members, sizeof(members), "\"journal\": {\"dir\": \"%s/journal\", \"cpu\": %s}",
			 t.dir, cpus[i]);
		kill(t.pid, SIGTERM); /* the directory stays, for the next config */
		assert_int_equal(jdt_wait_exit(&t, 30000), 0);
		jdt_write_config(&t, members);
		jdt_restart(&t);
		c = jdt_connect(&t, NULL);
		id = jdt_submit_call(c, "echo", "{\"n\": 1}");
		assert_string_equal(jdt_wait_final(c, id, NULL), "succeeded");
		m = jdt_metrics(c);
		cpu = json_object_get(json_object_get(m, "journal"), "flusher_cpu");
		why = json_string_value(json_object_get(json_object_get(m, "journal"), "flusher_cpu_why"));
		assert_non_null(cpu);
		assert_non_null(why);
		flusher_cpus(t.pid, mine, sizeof(mine), all, sizeof(all));
		if (i == 0) {
			assert_int_equal(json_integer_value(cpu), 0);
			assert_string_equal(mine, "0");
			assert_string_equal(why, "journal.cpu 0");
		} else if (i == 1) {
			assert_true(json_is_null(cpu));
			assert_string_equal(mine, all);
			assert_string_equal(why, "journal.cpu \"any\"");
		} else {
			char want[16];

			assert_true(strncmp(why, "auto: ", 6) == 0);
			if (json_is_integer(cpu)) {
				snprintf(want, sizeof(want), "%d", (int)json_integer_value(cpu));
				assert_string_equal(mine, want);
			} else {
				assert_true(json_is_null(cpu));
				assert_string_equal(mine, all);
			}
		}
		json_decref(m);
		jsched_close(c);
	}
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

/* journal_windows: the group flushes the loop waited for awake (journal.cycle). */
static int64_t journal_windows(struct jsched_conn *c)
{
	json_t *m = jdt_metrics(c);
	json_t *n = json_object_get(json_object_get(json_object_get(m, "journal"), "cycle"),
				    "loop_waits");
	int64_t v;

	assert_true(json_is_integer(n));
	v = (int64_t)json_integer_value(n);
	json_decref(m);
	return v;
}

#define GROUP_SUBMITS 200

struct group_submitter {
	struct jsched_conn *c;
	struct jsched_spec *spec;
	int ok;			/* submits answered ok */
};

/* group_submitter: GROUP_SUBMITS submits in turn on its own connection (no cmocka
 * assertion off the main thread: it counts). */
static void *group_submitter(void *arg)
{
	struct group_submitter *g = arg;

	for (int i = 0; i < GROUP_SUBMITS; i++) {
		uint64_t id = 0;

		if (jsched_submit(g->c, g->spec, &id) == 0 && id > 0)
			g->ok++;
	}
	return NULL;
}

static void test_loop_waits_for_groups(void **state)
{
	struct group_submitter g[2];
	struct jsched_conn *c;
	pthread_t th[2];
	int64_t before;

	(void)state;
	jdt_start(&t, "");
	c = jdt_connect(&t, NULL);
	before = journal_windows(c);
	for (int i = 0; i < GROUP_SUBMITS; i++)
		jdt_submit_call(c, "noop", NULL);
	assert_int_equal(journal_windows(c), before); /* a lone waiter: never polled for */
	for (int i = 0; i < 2; i++) {
		g[i].c = jdt_connect(&t, NULL);
		g[i].spec = NULL;
		g[i].ok = 0;
		assert_int_equal(jsched_spec_call("noop", NULL, &g[i].spec), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, group_submitter, &g[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(g[i].ok, GROUP_SUBMITS);
		jsched_spec_free(g[i].spec);
		jsched_close(g[i].c);
	}
	assert_true(journal_windows(c) > before);
	jsched_close(c);
	assert_int_equal(jdt_stop(&t, SIGTERM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_restart_scanned),
		cmocka_unit_test(test_restart_scanned_repeated),
		cmocka_unit_test(test_restart_records_same),
		cmocka_unit_test(test_restart_million),
		cmocka_unit_test(test_restart_command),
		cmocka_unit_test(test_compaction),
		cmocka_unit_test(test_kill9_rounds),
		cmocka_unit_test(test_kill9_rounds_compacting),
		cmocka_unit_test(test_negative_control),
		cmocka_unit_test_teardown(test_journal_unavailable, fault_teardown),
		cmocka_unit_test(test_no_direct),
		cmocka_unit_test(test_flusher_cpu),
		cmocka_unit_test(test_loop_waits_for_groups),
	};

	if (getenv("JDT_ONLY")) /* one test, by name (a pattern): JDT_ONLY=test_restart_million */
		cmocka_set_test_filter(getenv("JDT_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
