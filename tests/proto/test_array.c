/* tests/proto/test_array.c: a job array's indices in Slurm's syntax (proto/array.c): ranges,
 * steps, lists, %N; the i-th index found from the ranges; every malformed text refused with
 * its code and the member's path; the element limit; the spec member and array_replace. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "proto/jproto.h"

static void test_forms(void **state)
{
	struct jp_array a;
	struct jp_err err;

	(void)state;
	assert_int_equal(jp_array_parse("1-100%10", 1000, &a, "job.array", &err), 0);
	assert_int_equal(a.count, 100);
	assert_int_equal(a.max_running, 10);
	assert_int_equal(jp_array_index(&a, 0), 1);
	assert_int_equal(jp_array_index(&a, 99), 100);
	assert_int_equal(jp_array_index(&a, 100), -1);
	jp_array_clear(&a);

	/* A step: the last index is the one the step reaches. */
	assert_int_equal(jp_array_parse("1-10:3", 1000, &a, "job.array", &err), 0);
	assert_int_equal(a.count, 4); /* 1 4 7 10 */
	assert_int_equal(jp_array_index(&a, 3), 10);
	jp_array_clear(&a);
	assert_int_equal(jp_array_parse("0-9:4", 1000, &a, "job.array", &err), 0);
	assert_int_equal(a.count, 3); /* 0 4 8 */
	assert_int_equal(jp_array_index(&a, 2), 8);
	jp_array_clear(&a);

	/* A list of single indices and ranges: positions run through them in order. */
	assert_int_equal(jp_array_parse("1,5,7,10-12,20-30:5", 1000, &a, "job.array", &err), 0);
	assert_int_equal(a.count, 9);
	assert_int_equal(a.max_running, 0);
	{
		static const int64_t want[] = {1, 5, 7, 10, 11, 12, 20, 25, 30};

		for (uint64_t i = 0; i < 9; i++)
			assert_int_equal(jp_array_index(&a, i), want[i]);
	}
	jp_array_clear(&a);

	assert_int_equal(jp_array_parse("7", 1, &a, "job.array", &err), 0);
	assert_int_equal(a.count, 1);
	assert_int_equal(jp_array_index(&a, 0), 7);
	jp_array_clear(&a);
}

static void bad(const char *text, uint64_t max, int code)
{
	struct jp_array a;
	struct jp_err err = {0};

	assert_int_equal(jp_array_parse(text, max, &a, "jobs[2].array", &err), code);
	assert_int_equal(err.code, code);
	assert_string_equal(err.field, "jobs[2].array");
	assert_null(a.ranges);
	assert_int_equal(a.count, 0);
}

static void test_refused(void **state)
{
	(void)state;
	bad("5-1", 1000, JSCHED_EBAD_REQUEST);	     /* backwards */
	bad("1-10%0", 1000, JSCHED_EBAD_REQUEST);   /* %0 */
	bad("1-10:0", 1000, JSCHED_EBAD_REQUEST);   /* a step of 0 */
	bad("3,1", 1000, JSCHED_EBAD_REQUEST);	     /* not increasing */
	bad("1-5,5", 1000, JSCHED_EBAD_REQUEST);    /* overlapping */
	bad("", 1000, JSCHED_EBAD_REQUEST);
	bad("a", 1000, JSCHED_EBAD_REQUEST);
	bad("1-", 1000, JSCHED_EBAD_REQUEST);
	bad("1,,2", 1000, JSCHED_EBAD_REQUEST);
	bad("1-10%", 1000, JSCHED_EBAD_REQUEST);
	bad("1-10%2x", 1000, JSCHED_EBAD_REQUEST);
	bad("-1", 1000, JSCHED_EBAD_REQUEST);
	bad("1 -2", 1000, JSCHED_EBAD_REQUEST);
	bad("2147483648", 1000, JSCHED_EBAD_REQUEST); /* past the largest index */
	bad("0-1000", 1000, JSCHED_ELIMIT_EXCEEDED);  /* 1,001 elements */
	bad("1-10,20-2147483647", 1000000, JSCHED_ELIMIT_EXCEEDED);
}

static void test_in_spec(void **state)
{
	struct jp_job_spec sp;
	struct jp_err err;
	struct jp_limits lim;
	json_t *o, *back;

	(void)state;
	jp_limits_default(&lim);
	assert_int_equal(lim.array_elements, 100000);
	o = json_loads("{\"kind\": \"exec\", \"argv\": [\"echo\", \"{}\"], \"array\": \"1-99:2%5\", "
		       "\"array_replace\": true}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", &lim, &sp, &err), 0);
	assert_string_equal(sp.array_text, "1-99:2%5");
	assert_int_equal(sp.array.count, 50);
	assert_int_equal(sp.array.max_running, 5);
	assert_true(sp.array_replace);
	back = jp_job_spec_to_json(&sp);
	assert_string_equal(json_string_value(json_object_get(back, "array")), "1-99:2%5");
	assert_true(json_is_true(json_object_get(back, "array_replace")));
	json_decref(back);
	jp_job_spec_clear(&sp);
	json_decref(o);

	/* The limit of the connection; array_replace needs an array, and a command. */
	lim.array_elements = 10;
	o = json_loads("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-11\"}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", &lim, &sp, &err), JSCHED_ELIMIT_EXCEEDED);
	assert_string_equal(err.field, "job.array");
	json_decref(o);
	o = json_loads("{\"kind\": \"exec\", \"argv\": [\"true\"], \"array_replace\": true}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", &lim, &sp, &err), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.array_replace");
	json_decref(o);
	o = json_loads("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": \"1-2\", \"array_replace\": true}",
		       0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", &lim, &sp, &err), JSCHED_EBAD_REQUEST);
	assert_string_equal(err.field, "job.array_replace");
	json_decref(o);
	o = json_loads("{\"kind\": \"call\", \"fn\": \"noop\", \"array\": 5}", 0, NULL);
	assert_int_equal(jp_job_spec_parse(o, "job", &lim, &sp, &err), JSCHED_EBAD_REQUEST);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_in_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
