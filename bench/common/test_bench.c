/* bench/common/test_bench.c: tests of the benchmark harness (bench.h).
 *
 * The JSON a benchmark writes is what compare.py and the README tables are made from, so
 * the tests read it back with jansson and check every field; option errors must exit
 * with status 2 (checked in a child process, since the harness exits).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/common/bench.h"
#include "jsched_version.h"

static void test_median(void **state)
{
	(void)state;
	double odd[] = {5, 1, 3};
	assert_true(bench_median(odd, 3) == 3.0);
	assert_true(odd[0] == 1.0 && odd[2] == 5.0); /* sorted in place */
	double even[] = {4, 1, 3, 2};
	assert_true(bench_median(even, 4) == 2.5);
	double one[] = {7};
	assert_true(bench_median(one, 1) == 7.0);
	assert_true(isnan(bench_median(NULL, 0)));
}

static void test_now_is_monotonic(void **state)
{
	(void)state;
	uint64_t a = bench_now_ns(), b = bench_now_ns();
	assert_true(a > 0);
	assert_true(b >= a);
}

static void test_defaults(void **state)
{
	(void)state;
	char *argv[] = {"t", NULL};
	struct bench_report *r = bench_report_new("t", 1, argv);
	assert_int_equal(bench_runs(r), 5);
	assert_false(bench_quick(r));
	assert_int_equal(bench_report_finish(r), 0);
}

static void test_json_report(void **state)
{
	(void)state;
	char path[] = "/tmp/bench-test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);

	char *argv[] = {"t", "--runs", "7", "--quick", "--json", path, "--only", "trip", NULL};
	struct bench_report *r = bench_report_new("t", 8, argv);
	assert_int_equal(bench_runs(r), 7);
	assert_true(bench_quick(r));
	assert_true(bench_wanted(r, "round trip"));
	assert_false(bench_wanted(r, "no baseline"));
	bench_row(r, "round trip", "us", "spin", 1.5, "oneTBB 2021.8", 3.0);
	bench_row(r, "no baseline", "ms", NULL, 2.0, NULL, 0.0);
	bench_row(r, "bad baseline", "ms", "sleep", 2.0, "x", 0.0);
	bench_row(r, "nan value", "ms", "sleep", NAN, "x", 1.0);
	bench_note(r, "a note %d", 42);
	assert_int_equal(bench_report_finish(r), 0);

	json_error_t err;
	json_t *doc = json_load_file(path, 0, &err);
	unlink(path);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "version")),
			    JSCHED_VERSION_LINE);
	assert_string_equal(json_string_value(json_object_get(doc, "program")), "t");
	assert_int_equal(json_integer_value(json_object_get(doc, "runs")), 7);
	assert_true(json_is_true(json_object_get(doc, "quick")));
	assert_true(json_is_real(json_object_get(doc, "load_start")));
	assert_true(json_is_real(json_object_get(doc, "load_end")));
	double others = json_real_value(json_object_get(doc, "others_cpu_share"));
	assert_true(others >= 0.0 && others <= 1.0);
	json_t *m = json_object_get(doc, "machine");
	assert_true(json_is_object(m));
	assert_true(json_integer_value(json_object_get(m, "online_cpus")) >= 1);
	assert_true(json_integer_value(json_object_get(m, "memory_bytes")) > 0);
	assert_non_null(json_string_value(json_object_get(m, "cpu_model")));
	assert_non_null(json_string_value(json_object_get(m, "kernel")));
	assert_true(json_is_boolean(json_object_get(m, "vm")));

	json_t *rows = json_object_get(doc, "rows");
	assert_int_equal(json_array_size(rows), 4);
	json_t *r0 = json_array_get(rows, 0);
	assert_string_equal(json_string_value(json_object_get(r0, "name")), "round trip");
	assert_string_equal(json_string_value(json_object_get(r0, "unit")), "us");
	assert_string_equal(json_string_value(json_object_get(r0, "policy")), "spin");
	assert_true(json_real_value(json_object_get(r0, "value")) == 1.5);
	assert_string_equal(json_string_value(json_object_get(r0, "baseline")), "oneTBB 2021.8");
	assert_true(json_real_value(json_object_get(r0, "baseline_value")) == 3.0);
	assert_true(json_real_value(json_object_get(r0, "ratio")) == 0.5);

	json_t *r1 = json_array_get(rows, 1);
	assert_true(json_is_null(json_object_get(r1, "policy")));
	assert_true(json_is_null(json_object_get(r1, "baseline")));
	assert_true(json_is_null(json_object_get(r1, "baseline_value")));
	assert_true(json_is_null(json_object_get(r1, "ratio")));

	json_t *r2 = json_array_get(rows, 2);	/* a zero baseline has no ratio */
	assert_true(json_real_value(json_object_get(r2, "baseline_value")) == 0.0);
	assert_true(json_is_null(json_object_get(r2, "ratio")));

	json_t *r3 = json_array_get(rows, 3);	/* JSON has no NaN */
	assert_true(json_is_null(json_object_get(r3, "value")));
	assert_true(json_is_null(json_object_get(r3, "ratio")));

	json_t *notes = json_object_get(doc, "notes");
	assert_int_equal(json_array_size(notes), 1);
	assert_string_equal(json_string_value(json_array_get(notes, 0)), "a note 42");
	json_decref(doc);
}

static void test_unwritable_json_fails(void **state)
{
	(void)state;
	char *argv[] = {"t", "--json=/nonexistent-dir/x.json", NULL};
	struct bench_report *r = bench_report_new("t", 2, argv);
	bench_row(r, "x", "ms", NULL, 1.0, NULL, 0.0);
	assert_int_equal(bench_report_finish(r), 1);
}

/* The exit status of bench_report_new(argv) run in a child with its output discarded;
 * -1 if it returned instead of exiting. */
static int exit_status_of(int argc, char **argv)
{
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(100);
		bench_report_new("t", argc, argv);
		_exit(101);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	int code = WEXITSTATUS(status);
	return code == 101 ? -1 : code;
}

static void test_bad_options_exit_2(void **state)
{
	(void)state;
	char *unknown[] = {"t", "--bogus", NULL};
	assert_int_equal(exit_status_of(2, unknown), 2);
	char *zero[] = {"t", "--runs", "0", NULL};
	assert_int_equal(exit_status_of(3, zero), 2);
	char *junk[] = {"t", "--runs", "5x", NULL};
	assert_int_equal(exit_status_of(3, junk), 2);
	char *missing[] = {"t", "--json", NULL};
	assert_int_equal(exit_status_of(2, missing), 2);
	char *help[] = {"t", "--help", NULL};
	assert_int_equal(exit_status_of(2, help), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_now_is_monotonic),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_json_report),
		cmocka_unit_test(test_unwritable_json_fails),
		cmocka_unit_test(test_bad_options_exit_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
