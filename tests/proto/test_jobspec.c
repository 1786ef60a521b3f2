/* tests/proto/test_jobspec.c: the job spec (strict parsing, every field, every way to get
 * one wrong, with the path of the member at fault) and whole submits (batch, graph with
 * refs, duplicate and unknown refs, cycles, the creation order, the reply).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"

static json_t *parse_text(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, e.text);
	return j;
}

/* spec_bad: the spec text is refused with code, naming field (its path under "job"). */
static void spec_bad(const char *text, int code, const char *field)
{
	json_t *j = parse_text(text);
	struct jp_job_spec s;
	struct jp_err err = {0};
	struct jp_limits lim;

	jp_limits_default(&lim);
	lim.argv_items = 3;
	lim.env_items = 2;
	lim.deps_per_job = 3;
	lim.stdin_bytes = 5;
	if (jp_job_spec_parse(j, "job", &lim, &s, &err) != code)
		fail_msg("%s: expected %s, got %s (%s)", text, jp_error_name(code),
			 err.code ? jp_error_name(err.code) : "success", err.message);
	assert_string_equal(err.field, field);
	assert_non_null(strstr(err.message, field));
	/* The spec is left empty. */
	assert_null(s.argv);
	assert_null(s.after);
	assert_null(s.stdin_data);
	json_decref(j);
}

static void spec_ok(const char *text, struct jp_job_spec *s, json_t **keep)
{
	struct jp_err err = {0};

	*keep = parse_text(text);
	if (jp_job_spec_parse(*keep, "", NULL, s, &err) != 0)
		fail_msg("%s: refused: %s", text, err.message);
}

static void test_protocol_examples(void **state)
{
	struct jp_job_spec s;
	json_t *j;

	(void)state;
	spec_ok("{\"kind\": \"exec\", \"name\": \"unit tests\", \"argv\": [\"make\", \"test\"],"
		" \"cwd\": \"/home/ana/src/app\", \"env\": {\"PATH\": \"/usr/bin:/bin\","
		" \"HOME\": \"/home/ana\"}, \"timeout_ms\": 600000, \"priority\": \"high\","
		" \"after\": [{\"job\": 41, \"on\": \"success\"}]}", &s, &j);
	assert_int_equal(s.kind, JP_KIND_EXEC);
	assert_string_equal(s.name, "unit tests");
	assert_int_equal(s.argc, 2);
	assert_string_equal(s.argv[0], "make");
	assert_string_equal(s.argv[1], "test");
	assert_null(s.argv[2]);
	assert_string_equal(s.cwd, "/home/ana/src/app");
	assert_int_equal(s.n_env, 2);
	assert_string_equal(s.env[0].name, "PATH");
	assert_string_equal(s.env[1].value, "/home/ana");
	assert_int_equal(s.timeout_ms, 600000);
	assert_int_equal(s.priority, JP_PRIO_HIGH);
	assert_int_equal(s.n_after, 1);
	assert_int_equal(s.after[0].job, 41);
	assert_int_equal(s.after[0].on, JP_ON_SUCCESS);
	assert_int_equal(s.deadline, JP_DEADLINE_NONE);
	assert_int_equal(s.cost, 1);
	assert_false(s.has_stdin);
	jp_job_spec_clear(&s);
	json_decref(j);

	spec_ok("{\"kind\": \"exec\", \"argv\": [\"wc\", \"-c\"], \"stdin\": \"aGVsbG8K\","
		" \"env\": {}, \"after\": [], \"any_of\": []}", &s, &j);
	assert_int_equal(s.n_after + s.n_any_of, 0);
	assert_null(s.after);
	assert_true(s.has_stdin);
	assert_int_equal(s.stdin_len, 6);
	assert_memory_equal(s.stdin_data, "hello\n", 6);
	assert_string_equal(s.cwd, "/");
	assert_int_equal(s.n_env, 0);
	jp_job_spec_clear(&s);
	json_decref(j);

	spec_ok("{\"kind\": \"call\", \"fn\": \"sleep\", \"args\": {\"ms\": 250},"
		" \"deadline_in_ms\": 10000, \"cost\": 5}", &s, &j);
	assert_int_equal(s.kind, JP_KIND_CALL);
	assert_string_equal(s.fn, "sleep");
	assert_int_equal(json_integer_value(json_object_get(s.args, "ms")), 250);
	assert_int_equal(s.deadline, JP_DEADLINE_IN);
	assert_int_equal(s.deadline_ms, 10000);
	assert_int_equal(s.cost, 5);
	jp_job_spec_clear(&s);
	json_decref(j);

	spec_ok("{\"kind\":\"call\",\"fn\":\"noop\",\"deadline_at_ms\":1764460800000,"
		"\"after\":[41,\"build\",{\"ref\":\"x\",\"on\":\"any\"}],"
		"\"any_of\":[{\"job\":7,\"on\":\"failure\"}],\"ref\":\"me\",\"priority\":\"low\"}", &s, &j);
	assert_int_equal(s.deadline, JP_DEADLINE_AT);
	assert_int_equal(s.deadline_ms, 1764460800000);
	assert_int_equal(s.n_after, 3);
	assert_int_equal(s.after[0].job, 41);
	assert_null(s.after[0].ref);
	assert_int_equal(s.after[1].job, 0);
	assert_string_equal(s.after[1].ref, "build");
	assert_string_equal(s.after[2].ref, "x");
	assert_int_equal(s.after[2].on, JP_ON_ANY);
	assert_int_equal(s.n_any_of, 1);
	assert_int_equal(s.any_of[0].job, 7);
	assert_int_equal(s.any_of[0].on, JP_ON_FAILURE);
	assert_string_equal(s.ref, "me");
	assert_int_equal(s.priority, JP_PRIO_LOW);
	assert_null(s.args);
	jp_job_spec_clear(&s);
	json_decref(j);
}

static void test_spec_errors(void **state)
{
	(void)state;
	spec_bad("{}", JSCHED_EBAD_REQUEST, "job.kind");
	spec_bad("{\"kind\":\"shell\",\"argv\":[\"x\"]}", JSCHED_EBAD_REQUEST, "job.kind");
	spec_bad("{\"kind\":1}", JSCHED_EBAD_REQUEST, "job.kind");
	/* Unknown members: a typo must not silently change a job. */
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"prio\":\"high\"}", JSCHED_EBAD_REQUEST, "job.prio");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"Timeout_ms\":5}", JSCHED_EBAD_REQUEST,
		 "job.Timeout_ms");
	/* Members of the other kind. */
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"argv\":[\"x\"]}", JSCHED_EBAD_REQUEST, "job.argv");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"fn\":\"noop\"}", JSCHED_EBAD_REQUEST, "job.fn");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"args\":{}}", JSCHED_EBAD_REQUEST, "job.args");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"timeout_ms\":5}", JSCHED_EBAD_REQUEST,
		 "job.timeout_ms");
	/* Required members. */
	spec_bad("{\"kind\":\"exec\"}", JSCHED_EBAD_REQUEST, "job.argv");
	spec_bad("{\"kind\":\"call\"}", JSCHED_EBAD_REQUEST, "job.fn");
	/* argv. */
	spec_bad("{\"kind\":\"exec\",\"argv\":[]}", JSCHED_EBAD_REQUEST, "job.argv");
	spec_bad("{\"kind\":\"exec\",\"argv\":\"ls -l\"}", JSCHED_EBAD_REQUEST, "job.argv");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"\"]}", JSCHED_EBAD_REQUEST, "job.argv[0]");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"ls\",5]}", JSCHED_EBAD_REQUEST, "job.argv[1]");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"a\",\"b\",\"c\",\"d\"]}", JSCHED_ELIMIT_EXCEEDED,
		 "job.argv");
	/* env. */
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":[\"A=1\"]}", JSCHED_EBAD_REQUEST, "job.env");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A=B\":\"1\"}}", JSCHED_EBAD_REQUEST,
		 "job.env.A=B");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"\":\"1\"}}", JSCHED_EBAD_REQUEST,
		 "job.env.");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"HOME\":1}}", JSCHED_EBAD_REQUEST,
		 "job.env.HOME");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A\":\"1\",\"B\":\"2\",\"C\":\"3\"}}",
		 JSCHED_ELIMIT_EXCEEDED, "job.env");
	/* cwd, stdin, timeout. */
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"tmp\"}", JSCHED_EBAD_REQUEST, "job.cwd");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"\"}", JSCHED_EBAD_REQUEST, "job.cwd");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"stdin\":\"hello\"}", JSCHED_EBAD_REQUEST,
		 "job.stdin");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"stdin\":[1]}", JSCHED_EBAD_REQUEST, "job.stdin");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"stdin\":\"aGVsbG8K\"}", JSCHED_ELIMIT_EXCEEDED,
		 "job.stdin");	/* 6 bytes, limit 5 */
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":0}", JSCHED_EBAD_REQUEST,
		 "job.timeout_ms");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":1.5}", JSCHED_EBAD_REQUEST,
		 "job.timeout_ms");
	/* Common members. */
	spec_bad("{\"kind\":\"call\",\"fn\":\"\"}", JSCHED_EBAD_REQUEST, "job.fn");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"priority\":\"urgent\"}", JSCHED_EBAD_REQUEST,
		 "job.priority");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"priority\":3}", JSCHED_EBAD_REQUEST,
		 "job.priority");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"cost\":0}", JSCHED_EBAD_REQUEST, "job.cost");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"cost\":1000001}", JSCHED_EBAD_REQUEST, "job.cost");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"deadline_at_ms\":-1}", JSCHED_EBAD_REQUEST,
		 "job.deadline_at_ms");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"deadline_at_ms\":5,\"deadline_in_ms\":5}",
		 JSCHED_EBAD_REQUEST, "job.deadline_in_ms");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"deadline_in_ms\":5,\"deadline_at_ms\":5}",
		 JSCHED_EBAD_REQUEST, "job.deadline_in_ms");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"name\":7}", JSCHED_EBAD_REQUEST, "job.name");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"ref\":\"\"}", JSCHED_EBAD_REQUEST, "job.ref");
	/* Dependencies. */
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":5}", JSCHED_EBAD_REQUEST, "job.after");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[0]}", JSCHED_EBAD_REQUEST, "job.after[0]");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[1,true]}", JSCHED_EBAD_REQUEST,
		 "job.after[1]");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[\"\"]}", JSCHED_EBAD_REQUEST,
		 "job.after[0]");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[{}]}", JSCHED_EBAD_REQUEST,
		 "job.after[0]");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[{\"job\":1,\"ref\":\"a\"}]}",
		 JSCHED_EBAD_REQUEST, "job.after[0]");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"any_of\":[{\"job\":1,\"when\":\"any\"}]}",
		 JSCHED_EBAD_REQUEST, "job.any_of[0].when");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"any_of\":[2,{\"job\":1,\"on\":\"done\"}]}",
		 JSCHED_EBAD_REQUEST, "job.any_of[1].on");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[{\"job\":\"1\"}]}", JSCHED_EBAD_REQUEST,
		 "job.after[0].job");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[{\"ref\":3}]}", JSCHED_EBAD_REQUEST,
		 "job.after[0].ref");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[1,2,3,4]}", JSCHED_ELIMIT_EXCEEDED,
		 "job.after");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"after\":[1,2],\"any_of\":[3,4]}",
		 JSCHED_ELIMIT_EXCEEDED, "job.any_of");
}

static void test_spec_limits_of_strings(void **state)
{
	char text[600], name[300];
	struct jp_job_spec s;
	json_t *j;

	(void)state;
	memset(name, 'n', 256);
	name[256] = '\0';
	snprintf(text, sizeof(text), "{\"kind\":\"call\",\"fn\":\"noop\",\"name\":\"%s\"}", name);
	spec_ok(text, &s, &j);
	jp_job_spec_clear(&s);
	json_decref(j);
	name[256] = 'n';
	name[257] = '\0';
	snprintf(text, sizeof(text), "{\"kind\":\"call\",\"fn\":\"noop\",\"name\":\"%s\"}", name);
	spec_bad(text, JSCHED_EBAD_REQUEST, "job.name");
	/* A NUL inside a string (possible in a json_t built by a program, not from the wire). */
	j = json_pack("{s:s, s:[s%]}", "kind", "exec", "argv", "a\0b", (size_t)3);
	struct jp_err err = {0};
	assert_int_equal(jp_job_spec_parse(j, "job", NULL, &s, &err), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.argv[0]");
	json_decref(j);
	assert_int_equal(jp_job_spec_parse(NULL, "job", NULL, &s, &err), JSCHED_EBAD_REQUEST);
}

/* spec_equal: two parsed specs say the same. */
static void spec_equal(const struct jp_job_spec *a, const struct jp_job_spec *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_true((a->name == NULL) == (b->name == NULL));
	if (a->name)
		assert_string_equal(a->name, b->name);
	assert_true((a->ref == NULL) == (b->ref == NULL));
	assert_int_equal(a->priority, b->priority);
	assert_int_equal(a->deadline, b->deadline);
	assert_int_equal(a->deadline_ms, b->deadline_ms);
	assert_int_equal(a->n_after, b->n_after);
	assert_int_equal(a->n_any_of, b->n_any_of);
	for (size_t i = 0; i < a->n_after + a->n_any_of; i++) {
		const struct jp_dep *x = i < a->n_after ? &a->after[i] : &a->any_of[i - a->n_after];
		const struct jp_dep *y = i < b->n_after ? &b->after[i] : &b->any_of[i - b->n_after];

		assert_int_equal(x->job, y->job);
		assert_int_equal(x->on, y->on);
		if (x->ref)
			assert_string_equal(x->ref, y->ref);
	}
	assert_int_equal(a->cost, b->cost);
	assert_int_equal(a->argc, b->argc);
	for (size_t i = 0; i < a->argc; i++)
		assert_string_equal(a->argv[i], b->argv[i]);
	assert_int_equal(a->n_env, b->n_env);
	for (size_t i = 0; i < a->n_env; i++) {
		assert_string_equal(a->env[i].name, b->env[i].name);
		assert_string_equal(a->env[i].value, b->env[i].value);
	}
	assert_string_equal(a->cwd, b->cwd);
	assert_int_equal(a->res_memory, b->res_memory);
	assert_int_equal(a->res_pids, b->res_pids);
	assert_int_equal(a->res_cpu_milli, b->res_cpu_milli);
	assert_int_equal(a->has_stdin, b->has_stdin);
	assert_int_equal(a->stdin_len, b->stdin_len);
	if (a->stdin_len)
		assert_memory_equal(a->stdin_data, b->stdin_data, a->stdin_len);
	assert_int_equal(a->timeout_ms, b->timeout_ms);
	if (a->fn)
		assert_string_equal(a->fn, b->fn);
	assert_true(a->args ? json_equal(a->args, b->args) : b->args == NULL);
}

/* round_trip: s -> JSON -> frame -> JSON -> spec equals s. */
static void round_trip(const struct jp_job_spec *s)
{
	json_t *j = jp_job_spec_to_json(s), *back = NULL;
	struct jp_buf b = {0};
	struct jp_decoder d;
	struct jp_job_spec t;
	struct jp_err err = {0};

	assert_non_null(j);
	assert_int_equal(jp_frame_append(&b, j, JP_DEFAULT_FRAME_BYTES), 0);
	jp_decoder_init(&d, JP_DEFAULT_FRAME_BYTES);
	assert_int_equal(jp_decoder_feed(&d, b.data, b.len), 0);
	assert_int_equal(jp_decoder_next(&d, &back), 1);
	if (jp_job_spec_parse(back, "job", NULL, &t, &err) != 0)
		fail_msg("round trip refused: %s", err.message);
	spec_equal(s, &t);
	jp_job_spec_clear(&t);
	json_decref(back);
	json_decref(j);
	jp_buf_free(&b);
	jp_decoder_free(&d);
}

/* resources: the sizes people write, and every bad one named. */
static void test_spec_resources(void **state)
{
	static const struct {
		const char *mem;
		uint64_t bytes;
	} sizes[] = {{"\"2G\"", 2ull << 30}, {"\"512M\"", 512ull << 20}, {"\"1536KiB\"", 1536ull << 10},
		     {"\"1T\"", 1ull << 40}, {"1048576", 1048576}, {"\"3000000B\"", 3000000}};
	struct jp_job_spec s;
	json_t *keep;
	char text[256];

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"memory\":%s,\"pids\":100,\"cpus\":1.5}}",
			 sizes[i].mem);
		spec_ok(text, &s, &keep);
		assert_int_equal(s.res_memory, sizes[i].bytes);
		assert_int_equal(s.res_pids, 100);
		assert_int_equal(s.res_cpu_milli, 1500);
		jp_job_spec_clear(&s);
		json_decref(keep);
	}
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"memory\":\"2X\"}}", JSCHED_EBAD_REQUEST,
		 "job.resources.memory");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"memory\":\"100K\"}}", JSCHED_EBAD_REQUEST,
		 "job.resources.memory"); /* below 1M */
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"memory\":\"-1G\"}}", JSCHED_EBAD_REQUEST,
		 "job.resources.memory");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"pids\":0}}", JSCHED_EBAD_REQUEST,
		 "job.resources.pids");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"cpus\":0}}", JSCHED_EBAD_REQUEST,
		 "job.resources.cpus");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"cpus\":\"2\"}}", JSCHED_EBAD_REQUEST,
		 "job.resources.cpus");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":{\"gpus\":1}}", JSCHED_EBAD_REQUEST,
		 "job.resources.gpus");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"resources\":[]}", JSCHED_EBAD_REQUEST, "job.resources");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"resources\":{}}", JSCHED_EBAD_REQUEST,
		 "job.resources");
}

/* needs: names and counts, kept in order and built back; every bad one named. */
static void test_spec_needs(void **state)
{
	struct jp_job_spec s;
	json_t *keep, *back;

	(void)state;
	spec_ok("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"gpu\":2,\"licence_x\":1024}}", &s, &keep);
	assert_int_equal(s.n_needs, 2);
	assert_string_equal(s.needs[0].name, "gpu");
	assert_int_equal(s.needs[0].count, 2);
	assert_string_equal(s.needs[1].name, "licence_x");
	assert_int_equal(s.needs[1].count, 1024);
	back = jp_job_spec_to_json(&s);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(back, "needs"), "licence_x")), 1024);
	assert_int_equal(json_object_size(json_object_get(back, "needs")), 2);
	json_decref(back);
	jp_job_spec_clear(&s);
	json_decref(keep);
	spec_ok("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{}}", &s, &keep);
	assert_int_equal(s.n_needs, 0);
	back = jp_job_spec_to_json(&s);
	assert_null(json_object_get(back, "needs"));
	json_decref(back);
	jp_job_spec_clear(&s);
	json_decref(keep);
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"gpu\":0}}", JSCHED_EBAD_REQUEST,
		 "job.needs.gpu");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"gpu\":1025}}", JSCHED_EBAD_REQUEST,
		 "job.needs.gpu");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"gpu\":\"1\"}}", JSCHED_EBAD_REQUEST,
		 "job.needs.gpu");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"Gpu\":1}}", JSCHED_EBAD_REQUEST,
		 "job.needs.Gpu");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"9gpu\":1}}", JSCHED_EBAD_REQUEST,
		 "job.needs.9gpu");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"a234567890123456789012345678901x\":1}}",
		 JSCHED_EBAD_REQUEST, "job.needs.a234567890123456789012345678901x");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":[]}", JSCHED_EBAD_REQUEST, "job.needs");
	spec_bad("{\"kind\":\"exec\",\"argv\":[\"x\"],\"needs\":{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,"
		 "\"f\":1,\"g\":1,\"h\":1,\"i\":1}}", JSCHED_ELIMIT_EXCEEDED, "job.needs");
	spec_bad("{\"kind\":\"call\",\"fn\":\"noop\",\"needs\":{\"gpu\":1}}", JSCHED_EBAD_REQUEST,
		 "job.needs");
	assert_true(jp_need_name_ok("a"));
	assert_true(jp_need_name_ok("a_9"));
	assert_false(jp_need_name_ok(""));
	assert_false(jp_need_name_ok("_a"));
	assert_false(jp_need_name_ok("a-b"));
}

static void test_round_trips(void **state)
{
	const char *argv[] = {"sh", "-c", "echo \"$X\" | tr a-z A-Z", NULL};
	struct jp_env env[] = {{"X", "héllo"}, {"PATH", "/usr/bin:/bin"}, {"EMPTY", ""}};
	struct jp_dep after[] = {{.job = 41, .on = JP_ON_SUCCESS}, {.job = 9007199254740991, .on = JP_ON_ANY}};
	struct jp_dep any[] = {{.ref = "other", .on = JP_ON_FAILURE}};
	unsigned char in[] = {0, 1, 2, 3, 255, '\n'};
	json_t *args = json_pack("{s:[i,i,{s:n}], s:f}", "list", 1, 2, "z", "pi", 3.25);
	struct jp_job_spec s;

	(void)state;
	jp_job_spec_init(&s);
	s.argv = argv;
	s.argc = 3;
	round_trip(&s);	/* the minimal exec spec */
	s.name = "upper";
	s.ref = "up";
	s.priority = JP_PRIO_CRITICAL;
	s.deadline = JP_DEADLINE_AT;
	s.deadline_ms = 1764460800000;
	s.after = after;
	s.n_after = 2;
	s.any_of = any;
	s.n_any_of = 1;
	s.cost = 1000000;
	s.env = env;
	s.n_env = 3;
	s.cwd = "/tmp";
	s.has_stdin = true;
	s.stdin_data = in;
	s.stdin_len = sizeof(in);
	s.timeout_ms = 1;
	s.res_memory = 2ull << 30;
	s.res_pids = 100;
	s.res_cpu_milli = 1500;
	round_trip(&s);
	s.has_stdin = true;	/* stdin present but empty is not the same as absent */
	s.stdin_data = NULL;
	s.stdin_len = 0;
	round_trip(&s);

	jp_job_spec_init(&s);
	s.kind = JP_KIND_CALL;
	s.fn = "echo";
	round_trip(&s);	/* args absent: null */
	s.args = args;
	s.deadline = JP_DEADLINE_IN;
	s.deadline_ms = 0;
	s.priority = JP_PRIO_LOW;
	round_trip(&s);
	json_decref(args);
}

/* submit_of: parse text as a request and then as a submit. */
static int submit_of(const char *text, struct jp_submit *out, struct jp_err *err, json_t **keep)
{
	struct jp_request r;
	int rc;

	*keep = parse_text(text);
	rc = jp_request_parse(*keep, NULL, &r, err);
	if (rc < 0)
		return rc;
	return jp_submit_parse(&r, NULL, out, err);
}

static void test_submit_single_and_batch(void **state)
{
	struct jp_submit s;
	struct jp_err err = {0};
	json_t *j, *reply;
	int64_t ids[3] = {101, 102, 103};

	(void)state;
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":3,\"job\":{\"kind\":\"call\",\"fn\":\"echo\","
				   "\"args\":{\"x\":1}}}", &s, &err, &j), 0);
	assert_true(s.single);
	assert_int_equal(s.n, 1);
	assert_false(s.has_refs);
	assert_int_equal(s.order[0], 0);
	reply = jp_submit_reply_new(3, &s, ids, NULL);
	assert_int_equal(json_integer_value(json_object_get(reply, "job")), 101);
	assert_true(json_is_true(json_object_get(reply, "ok")));
	json_decref(reply);
	jp_submit_clear(&s);
	json_decref(j);

	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":4,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},"
				   "{\"kind\":\"call\",\"fn\":\"b\",\"after\":[101]},"
				   "{\"kind\":\"exec\",\"argv\":[\"c\"]}]}", &s, &err, &j), 0);
	assert_false(s.single);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.specs[1].fn, "b");
	assert_int_equal(s.specs[1].after[0].job, 101);
	reply = jp_submit_reply_new(4, &s, ids, NULL);
	assert_int_equal(json_array_size(json_object_get(reply, "jobs")), 3);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(reply, "jobs"), 2)), 103);
	assert_null(json_object_get(reply, "refs"));
	json_decref(reply);
	jp_submit_clear(&s);
	json_decref(j);

	/* A bad spec anywhere refuses the whole submit, naming that spec. */
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":4,\"jobs\":[{\"kind\":\"call\",\"fn\":\"a\"},"
				   "{\"kind\":\"exec\",\"argv\":[\"c\"],\"nmae\":\"typo\"}]}", &s, &err, &j),
			 JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "jobs[1].nmae");
	assert_null(s.specs);
	assert_int_equal(s.n, 0);
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":4,\"job\":{\"kind\":\"exec\"}}", &s, &err, &j),
			 JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.argv");
	json_decref(j);
}

/* test_submit_wait: submit's `wait`: true, false, the object's members, and every bad
 * form refused with the member's path. */
static void test_submit_wait(void **state)
{
	static const struct {
		const char *wait, *field;
	} bad[] = {
		{"1", "wait"}, {"\"yes\"", "wait"}, {"null", "wait"},
		{"{\"timeout_ms\": -1}", "wait.timeout_ms"}, {"{\"timeout_ms\": 2.5}", "wait.timeout_ms"},
		{"{\"mode\": \"every\"}", "wait.mode"}, {"{\"output\": \"yes\"}", "wait.output"},
		{"{\"x\": 1}", "wait.x"},
	};
	struct jp_submit s;
	struct jp_err err = {0};
	char text[256];
	json_t *j;

	(void)state;
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"n\"}}",
				   &s, &err, &j), 0);
	assert_false(s.wait);
	jp_submit_clear(&s);
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"n\"},"
				   "\"wait\":true}", &s, &err, &j), 0);
	assert_true(s.wait);
	assert_false(s.wait_any);
	assert_false(s.wait_output);
	assert_int_equal(s.wait_timeout_ms, -1);
	jp_submit_clear(&s);
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"n\"},"
				   "\"wait\":false}", &s, &err, &j), 0);
	assert_false(s.wait);
	jp_submit_clear(&s);
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\",\"fn\":\"n\"},"
				   "\"wait\":{\"timeout_ms\":0,\"mode\":\"any\",\"output\":true}}", &s, &err, &j), 0);
	assert_true(s.wait);
	assert_true(s.wait_any);
	assert_true(s.wait_output);
	assert_int_equal(s.wait_timeout_ms, 0);
	jp_submit_clear(&s);
	json_decref(j);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "{\"op\":\"submit\",\"id\":1,\"job\":{\"kind\":\"call\","
			 "\"fn\":\"n\"},\"wait\":%s}", bad[i].wait);
		assert_int_equal(submit_of(text, &s, &err, &j), JSCHED_EBAD_REQUEST);
		assert_string_equal(err.field, bad[i].field);
		json_decref(j);
	}
	/* The output only with one job. */
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":[{\"kind\":\"call\",\"fn\":\"n\"}],"
				   "\"wait\":{\"output\":true}}", &s, &err, &j), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "wait.output");
	assert_null(s.specs);
	json_decref(j);
}

/* position: where spec i comes in the creation order. */
static size_t position(const struct jp_submit *s, size_t i)
{
	for (size_t k = 0; k < s->n; k++)
		if (s->order[k] == i)
			return k;
	fail_msg("spec %zu not in the order", i);
	return 0;
}

static void test_submit_graph(void **state)
{
	struct jp_submit s;
	struct jp_err err = {0};
	json_t *j, *reply, *refs;
	int64_t ids[4] = {102, 103, 104, 105};

	(void)state;
	/* PROTOCOL.md's example, with the specs listed dependents first. */
	assert_int_equal(submit_of(
		"{\"op\":\"submit\",\"id\":4,\"jobs\":["
		"{\"kind\":\"call\",\"fn\":\"echo\",\"args\":\"tests failed\","
		" \"after\":[{\"ref\":\"test\",\"on\":\"failure\"}]},"
		"{\"ref\":\"test\",\"kind\":\"exec\",\"argv\":[\"make\",\"test\"],\"after\":[\"build\"]},"
		"{\"ref\":\"build\",\"kind\":\"exec\",\"argv\":[\"make\"],\"after\":[\"fetch\"]},"
		"{\"ref\":\"fetch\",\"kind\":\"exec\",\"argv\":[\"git\",\"pull\"]}]}", &s, &err, &j), 0);
	assert_true(s.has_refs);
	assert_int_equal(s.specs[0].after[0].index, 1);
	assert_int_equal(s.specs[1].after[0].index, 2);
	assert_int_equal(s.specs[2].after[0].index, 3);
	assert_true(position(&s, 3) < position(&s, 2));
	assert_true(position(&s, 2) < position(&s, 1));
	assert_true(position(&s, 1) < position(&s, 0));
	reply = jp_submit_reply_new(4, &s, ids, NULL);
	refs = json_object_get(reply, "refs");
	assert_int_equal(json_object_size(refs), 3);
	assert_int_equal(json_integer_value(json_object_get(refs, "fetch")), 105);
	assert_int_equal(json_integer_value(json_object_get(refs, "test")), 103);
	json_decref(reply);
	jp_submit_clear(&s);
	json_decref(j);

	/* A diamond, mixing refs and job ids, all-of and any-of. */
	assert_int_equal(submit_of(
		"{\"op\":\"submit\",\"id\":5,\"jobs\":["
		"{\"ref\":\"d\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"b\"],\"any_of\":[\"c\",7]},"
		"{\"ref\":\"b\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"a\"]},"
		"{\"ref\":\"c\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"a\",3]},"
		"{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\"}]}", &s, &err, &j), 0);
	assert_int_equal(s.specs[0].any_of[0].index, 2);
	assert_int_equal(s.specs[0].any_of[1].job, 7);
	assert_true(position(&s, 3) < position(&s, 1));
	assert_true(position(&s, 3) < position(&s, 2));
	assert_true(position(&s, 1) < position(&s, 0));
	assert_true(position(&s, 2) < position(&s, 0));
	jp_submit_clear(&s);
	json_decref(j);
}

static void test_submit_ref_errors(void **state)
{
	struct jp_submit s;
	struct jp_err err = {0};
	json_t *j;

	(void)state;
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":["
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\"},"
				   "{\"ref\":\"b\",\"kind\":\"call\",\"fn\":\"n\"},"
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\"}]}", &s, &err, &j),
			 JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "jobs[2].ref");
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":["
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\"},"
				   "{\"kind\":\"call\",\"fn\":\"n\",\"any_of\":[\"a\",{\"ref\":\"zz\"}]}]}",
				   &s, &err, &j), JSCHED_EUNKNOWN_DEPENDENCY);
	assert_string_equal(err.field, "jobs[1].any_of[1]");
	assert_non_null(strstr(err.message, "zz"));
	json_decref(j);
	/* A ref in a single-job submit can only name itself. */
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"ref\":\"a\",\"kind\":\"call\","
				   "\"fn\":\"n\",\"after\":[\"b\"]}}", &s, &err, &j),
			 JSCHED_EUNKNOWN_DEPENDENCY);
	assert_string_equal(err.field, "job.after[0]");
	json_decref(j);
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"job\":{\"ref\":\"a\",\"kind\":\"call\","
				   "\"fn\":\"n\",\"after\":[\"a\"]}}", &s, &err, &j),
			 JSCHED_EDEPENDENCY_CYCLE);
	assert_string_equal(err.field, "job");
	json_decref(j);
}

static void test_submit_cycles(void **state)
{
	struct jp_submit s;
	struct jp_err err = {0};
	json_t *j;

	(void)state;
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":["
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"b\"]},"
				   "{\"ref\":\"b\",\"kind\":\"call\",\"fn\":\"n\",\"any_of\":[\"a\"]}]}",
				   &s, &err, &j), JSCHED_EDEPENDENCY_CYCLE);
	assert_true(strcmp(err.field, "jobs[0]") == 0 || strcmp(err.field, "jobs[1]") == 0);
	assert_null(s.specs);
	json_decref(j);
	/* A chain leading into a cycle: the spec named must be on the cycle (c, d or e), not
	 * on the chain (a, b) that only waits for it. */
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":["
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"b\"]},"
				   "{\"ref\":\"b\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"c\"]},"
				   "{\"ref\":\"c\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"d\"]},"
				   "{\"ref\":\"d\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"e\"]},"
				   "{\"ref\":\"e\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"c\"]},"
				   "{\"ref\":\"f\",\"kind\":\"call\",\"fn\":\"n\"}]}", &s, &err, &j),
			 JSCHED_EDEPENDENCY_CYCLE);
	assert_true(strcmp(err.field, "jobs[2]") == 0 || strcmp(err.field, "jobs[3]") == 0 ||
		    strcmp(err.field, "jobs[4]") == 0);
	json_decref(j);
	/* The same with the independent spec first. */
	assert_int_equal(submit_of("{\"op\":\"submit\",\"id\":1,\"jobs\":["
				   "{\"ref\":\"f\",\"kind\":\"call\",\"fn\":\"n\"},"
				   "{\"ref\":\"a\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"b\",\"f\"]},"
				   "{\"ref\":\"b\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"f\",\"c\"]},"
				   "{\"ref\":\"c\",\"kind\":\"call\",\"fn\":\"n\",\"after\":[\"b\"]}]}",
				   &s, &err, &j), JSCHED_EDEPENDENCY_CYCLE);
	assert_true(strcmp(err.field, "jobs[2]") == 0 || strcmp(err.field, "jobs[3]") == 0);
	json_decref(j);
	/* jp_submit_parse wants a checked submit request. */
	{
		json_t *m = parse_text("{\"op\":\"status\",\"id\":1,\"job\":3}");
		struct jp_request r;

		assert_int_equal(jp_request_parse(m, NULL, &r, NULL), 0);
		assert_int_equal(jp_submit_parse(&r, NULL, &s, &err), JSCHED_EBAD_REQUEST);
		json_decref(m);
	}
}

static void test_submit_big_chain(void **state)
{
	/* 10,000 specs (the default limit), each after the previous one by ref, listed in
	 * reverse: the order must come out exactly reversed. */
	const size_t n = 10000;
	json_t *req = jp_request_new(JP_OP_SUBMIT, 1), *jobs = json_array();
	struct jp_request r;
	struct jp_submit s;
	struct jp_err err = {0};

	(void)state;
	for (size_t i = 0; i < n; i++) {
		char ref[32], prev[32];
		size_t k = n - 1 - i;	/* listed last-first */
		json_t *spec;

		snprintf(ref, sizeof(ref), "n%zu", k);
		snprintf(prev, sizeof(prev), "n%zu", k - 1);
		spec = k ? json_pack("{s:s, s:s, s:s, s:[s]}", "kind", "call", "fn", "noop", "ref", ref,
				     "after", prev)
			 : json_pack("{s:s, s:s, s:s}", "kind", "call", "fn", "noop", "ref", ref);
		assert_int_equal(json_array_append_new(jobs, spec), 0);
	}
	assert_int_equal(json_object_set_new(req, "jobs", jobs), 0);
	assert_int_equal(jp_request_parse(req, NULL, &r, &err), 0);
	assert_int_equal(jp_submit_parse(&r, NULL, &s, &err), 0);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(s.order[k], n - 1 - k);
	jp_submit_clear(&s);
	json_decref(req);
}

/* test_hooks_round_trip: on_exit, notify and hook_timeout_ms parse and come back the same;
 * a time limit without a hook and an empty command are refused. */
static void test_hooks_round_trip(void **state)
{
	struct jp_job_spec sp;
	struct jp_err err;
	json_t *o, *back;

	(void)state;
	o = json_loads("{\"kind\": \"call\", \"fn\": \"noop\", \"on_exit\": \"echo $JSCHED_JOB_ID\", "
		       "\"notify\": true, \"hook_timeout_ms\": 1500}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", NULL, &sp, &err), 0);
	assert_string_equal(sp.on_exit, "echo $JSCHED_JOB_ID");
	assert_true(sp.notify);
	assert_int_equal(sp.hook_timeout_ms, 1500);
	back = jp_job_spec_to_json(&sp);
	assert_true(json_equal(back, o));
	json_decref(back);
	jp_job_spec_clear(&sp);
	json_decref(o);
	o = json_loads("{\"kind\": \"call\", \"fn\": \"noop\", \"hook_timeout_ms\": 1500}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", NULL, &sp, &err), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.hook_timeout_ms");
	json_decref(o);
	o = json_loads("{\"kind\": \"exec\", \"argv\": [\"true\"], \"on_exit\": \"\"}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", NULL, &sp, &err), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.on_exit");
	json_decref(o);
	o = json_loads("{\"kind\": \"exec\", \"argv\": [\"true\"], \"notify\": 1}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", NULL, &sp, &err), JSCHED_EBAD_REQUEST);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_protocol_examples),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_spec_limits_of_strings),
		cmocka_unit_test(test_spec_resources),
		cmocka_unit_test(test_spec_needs),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_submit_single_and_batch),
		cmocka_unit_test(test_submit_graph),
		cmocka_unit_test(test_submit_wait),
		cmocka_unit_test(test_submit_ref_errors),
		cmocka_unit_test(test_submit_cycles),
		cmocka_unit_test(test_submit_big_chain),
		cmocka_unit_test(test_hooks_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
