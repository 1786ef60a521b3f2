/* test_spec.c: building job specs.  Each built spec is checked two ways: its members, and
 * that the daemon's own strict parser (jp_job_spec_parse, the codec) accepts it and reads
 * back what was set.  The setters refuse what could never be right and leave the spec as
 * it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jsched/jsched.h>

#include "proto/jproto.h"

/* The spec's JSON (new reference). */
static json_t *to_json(const struct jsched_spec *spec)
{
	char *text;
	assert_int_equal(jsched_spec_to_json(spec, &text), 0);
	json_t *v = json_loads(text, 0, NULL);
	jsched_free(text);
	assert_non_null(v);
	return v;
}

/* Parse it strictly as the daemon does; p must be cleared by the caller. */
static void daemon_parses(json_t *v, struct jp_job_spec *p)
{
	struct jp_err err;
	int r = jp_job_spec_parse(v, "job", NULL, p, &err);
	if (r != 0)
		fail_msg("the daemon refuses the spec: %s (%s)", err.message, err.field);
}

static void test_exec(void **state)
{
	(void)state;
	const char *argv[] = { "make", "-j2", "test", NULL };
	const char *env[] = { "PATH=/usr/bin:/bin", "HOME=/home/ana", "EMPTY=", NULL };
	struct jsched_spec *s;
	assert_int_equal(jsched_spec_exec(argv, &s), 0);
	assert_int_equal(jsched_spec_set_env(s, env), 0);
	assert_int_equal(jsched_spec_setenv(s, "LANG", "C.UTF-8"), 0);
	assert_int_equal(jsched_spec_set_cwd(s, "/srv/app"), 0);
	assert_int_equal(jsched_spec_set_stdin(s, "hi\0there", 8), 0);
	assert_int_equal(jsched_spec_set_timeout(s, 60000), 0);
	assert_int_equal(jsched_spec_set_name(s, "unit tests"), 0);
	assert_int_equal(jsched_spec_set_priority(s, JSCHED_PRIORITY_CRITICAL), 0);
	assert_int_equal(jsched_spec_set_deadline_in(s, 5000), 0);
	assert_int_equal(jsched_spec_set_cost(s, 7), 0);
	assert_int_equal(jsched_spec_set_need(s, "gpu", 1), 0);
	assert_int_equal(jsched_spec_set_need(s, "licence_x", 5), 0);
	assert_int_equal(jsched_spec_set_need(s, "tpu", 1), 0);
	assert_int_equal(jsched_spec_set_need(s, "gpu", 2), 0); /* replaces */
	assert_int_equal(jsched_spec_set_need(s, "tpu", 0), 0); /* removes */
	assert_int_equal(jsched_spec_set_need(s, "GPU", 1), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_need(s, "gpu", 1025), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_AFTER, 41, JSCHED_DEP_SUCCESS), 0);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_ANY_OF, 42, JSCHED_DEP_FAILURE), 0);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_ANY_OF, 43, JSCHED_DEP_ANY), 0);

	json_t *v = to_json(s);
	struct jp_job_spec p;
	daemon_parses(v, &p);
	assert_int_equal(p.kind, JP_KIND_EXEC);
	assert_int_equal(p.argc, 3);
	assert_string_equal(p.argv[2], "test");
	assert_int_equal(p.n_env, 4);
	assert_string_equal(p.cwd, "/srv/app");
	assert_true(p.has_stdin);
	assert_int_equal(p.stdin_len, 8);
	assert_memory_equal(p.stdin_data, "hi\0there", 8);
	assert_int_equal(p.timeout_ms, 60000);
	assert_string_equal(p.name, "unit tests");
	assert_int_equal(p.priority, JP_PRIO_CRITICAL);
	assert_int_equal(p.deadline, JP_DEADLINE_IN);
	assert_int_equal(p.deadline_ms, 5000);
	assert_int_equal(p.cost, 7);
	assert_int_equal(p.n_needs, 2);
	assert_string_equal(p.needs[0].name, "gpu");
	assert_int_equal(p.needs[0].count, 2);
	assert_string_equal(p.needs[1].name, "licence_x");
	assert_int_equal(p.needs[1].count, 5);
	assert_int_equal(p.n_after, 1);
	assert_int_equal(p.after[0].job, 41);
	assert_int_equal(p.after[0].on, JP_ON_SUCCESS);
	assert_int_equal(p.n_any_of, 2);
	assert_int_equal(p.any_of[0].on, JP_ON_FAILURE);
	assert_int_equal(p.any_of[1].on, JP_ON_ANY);
	jp_job_spec_clear(&p);
	/* Members equal to the defaults are left out, as a person would write them. */
	assert_null(json_object_get(json_array_get(json_object_get(v, "after"), 0), "on"));
	json_decref(v);

	/* Deadlines replace each other; stdin of length 0 removes it. */
	assert_int_equal(jsched_spec_set_deadline_at(s, 1764460812345), 0);
	assert_int_equal(jsched_spec_set_stdin(s, NULL, 0), 0);
	v = to_json(s);
	assert_null(json_object_get(v, "deadline_in_ms"));
	assert_null(json_object_get(v, "stdin"));
	daemon_parses(v, &p);
	assert_int_equal(p.deadline, JP_DEADLINE_AT);
	jp_job_spec_clear(&p);
	json_decref(v);
	jsched_spec_free(s);
}

static void test_call_and_refs(void **state)
{
	(void)state;
	struct jsched_spec *s;
	assert_int_equal(jsched_spec_call("sleep", "{\"ms\": 250}", &s), 0);
	assert_int_equal(jsched_spec_set_ref(s, "nap"), 0);
	assert_int_equal(jsched_spec_add_dep_ref(s, JSCHED_GATE_AFTER, "build", JSCHED_DEP_SUCCESS), 0);
	json_t *v = to_json(s);
	struct jp_job_spec p;
	daemon_parses(v, &p);
	assert_int_equal(p.kind, JP_KIND_CALL);
	assert_string_equal(p.fn, "sleep");
	assert_int_equal(json_integer_value(json_object_get(p.args, "ms")), 250);
	assert_string_equal(p.ref, "nap");
	assert_string_equal(p.after[0].ref, "build");
	jp_job_spec_clear(&p);
	json_decref(v);

	/* Exec-only members are refused on a call job, and the spec is unchanged. */
	const char *env[] = { "A=1", NULL };
	assert_int_equal(jsched_spec_set_env(s, env), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_setenv(s, "A", "1"), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_cwd(s, "/"), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_stdin(s, "x", 1), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_timeout(s, 5), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_inherit(s), JSCHED_EINVAL);
	json_t *after = to_json(s);
	json_t *before = json_loads("{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 250}, \"ref\": \"nap\", "
				    "\"after\": [{\"ref\": \"build\"}]}", 0, NULL);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
	jsched_spec_free(s);

	/* args: absent means null; any JSON value; not JSON is refused. */
	assert_int_equal(jsched_spec_call("noop", NULL, &s), 0);
	v = to_json(s);
	assert_null(json_object_get(v, "args"));
	json_decref(v);
	jsched_spec_free(s);
	assert_int_equal(jsched_spec_call("echo", "\"text\"", &s), 0);
	jsched_spec_free(s);
	s = (struct jsched_spec *)1;
	assert_int_equal(jsched_spec_call("echo", "{oops", &s), JSCHED_EINVAL);
	assert_null(s);
	assert_int_equal(jsched_spec_call("", NULL, &s), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_call(NULL, NULL, &s), JSCHED_EINVAL);
}

static void test_bad_values(void **state)
{
	(void)state;
	const char *empty[] = { NULL };
	struct jsched_spec *s;
	assert_int_equal(jsched_spec_exec(empty, &s), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_exec(NULL, &s), JSCHED_EINVAL);
	const char *empty_cmd[] = { "", "x", NULL };
	assert_int_equal(jsched_spec_exec(empty_cmd, &s), JSCHED_EINVAL);
	const char *bad_utf8[] = { "echo", "\xff\xfe", NULL };
	assert_int_equal(jsched_spec_exec(bad_utf8, &s), JSCHED_EINVAL);

	const char *argv[] = { "true", NULL };
	assert_int_equal(jsched_spec_exec(argv, &s), 0);
	assert_int_equal(jsched_spec_set_cost(s, 0), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_cost(s, 1000001), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_priority(s, (enum jsched_priority)4), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_cwd(s, "relative"), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_timeout(s, 0), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_set_deadline_in(s, -1), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_AFTER, 0, JSCHED_DEP_SUCCESS), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_AFTER, (uint64_t)1 << 53, JSCHED_DEP_SUCCESS), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep(s, (enum jsched_gate)2, 1, JSCHED_DEP_SUCCESS), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep(s, JSCHED_GATE_AFTER, 1, (enum jsched_dep_on)3), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_add_dep_ref(s, JSCHED_GATE_AFTER, "", JSCHED_DEP_SUCCESS), JSCHED_EINVAL);
	const char *bad_env[] = { "NOEQUALS", NULL };
	assert_int_equal(jsched_spec_set_env(s, bad_env), JSCHED_EINVAL);
	const char *bad_env2[] = { "=value", NULL };
	assert_int_equal(jsched_spec_set_env(s, bad_env2), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_setenv(s, "A=B", "x"), JSCHED_EINVAL);
	json_t *v = to_json(s);
	json_t *want = json_loads("{\"kind\": \"exec\", \"argv\": [\"true\"]}", 0, NULL);
	assert_true(json_equal(v, want)); /* nothing above changed it */
	json_decref(want);
	json_decref(v);
	jsched_spec_free(s);
	jsched_spec_free(NULL);
}

static void test_inherit(void **state)
{
	(void)state;
	setenv("JSCHED_TEST_VAR", "value with spaces", 1);
	const char *argv[] = { "env", NULL };
	struct jsched_spec *s;
	assert_int_equal(jsched_spec_exec(argv, &s), 0);
	assert_int_equal(jsched_spec_inherit(s), 0);
	json_t *v = to_json(s);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "env"), "JSCHED_TEST_VAR")),
			    "value with spaces");
	char *cwd = getcwd(NULL, 0);
	assert_string_equal(json_string_value(json_object_get(v, "cwd")), cwd);
	free(cwd);
	struct jp_job_spec p;
	daemon_parses(v, &p);
	jp_job_spec_clear(&p);
	json_decref(v);
	jsched_spec_free(s);
}

static void test_from_json(void **state)
{
	(void)state;
	struct jsched_spec *s;
	assert_int_equal(jsched_spec_from_json("{\"kind\": \"exec\", \"argv\": [\"wc\", \"-c\"], \"stdin\": \"aGVsbG8K\"}", &s),
			 0);
	assert_int_equal(jsched_spec_set_timeout(s, 10), 0); /* an exec spec: exec setters work */
	json_t *v = to_json(s);
	struct jp_job_spec p;
	daemon_parses(v, &p);
	assert_int_equal(p.stdin_len, 6);
	jp_job_spec_clear(&p);
	json_decref(v);
	jsched_spec_free(s);
	assert_int_equal(jsched_spec_from_json("[1, 2]", &s), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_from_json("{\"a\": 1, \"a\": 2}", &s), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_from_json("not json", &s), JSCHED_EINVAL);
	assert_int_equal(jsched_spec_from_json(NULL, &s), JSCHED_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_call_and_refs),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_inherit),
		cmocka_unit_test(test_from_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
