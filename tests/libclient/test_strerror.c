/* test_strerror.c: every JSCHED_E* code has its message and wire name, names map back to
 * codes, the numbers are distinct, and unknown ones are handled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <jsched/jsched.h>

struct row {
	int code;
	const char *wire, *msg;
};

static const struct row rows[] = {
#define XX(name, num, wire, msg) { JSCHED_E##name, wire, msg },
	JSCHED_ERRNO_MAP(XX)
#undef XX
};
#define NROWS (sizeof rows / sizeof rows[0])

static void test_every_code(void **state)
{
	(void)state;
	for (size_t i = 0; i < NROWS; i++) {
		assert_true(rows[i].code < 0);
		assert_string_equal(jsched_strerror(rows[i].code), rows[i].msg);
		assert_string_not_equal(jsched_strerror(rows[i].code), "unknown error");
		assert_string_equal(jsched_err_name(rows[i].code), rows[i].wire);
		assert_int_equal(jsched_err_from_name(rows[i].wire), rows[i].code);
		for (size_t j = 0; j < i; j++) {
			assert_int_not_equal(rows[i].code, rows[j].code);
			assert_string_not_equal(rows[i].wire, rows[j].wire);
		}
	}
}

static void test_unknown(void **state)
{
	(void)state;
	assert_string_equal(jsched_strerror(0), "success");
	assert_string_equal(jsched_err_name(0), "ok");
	assert_string_equal(jsched_strerror(-10000), "unknown error");
	assert_string_equal(jsched_strerror(5), "unknown error");
	assert_string_equal(jsched_err_name(-10000), "unknown");
	assert_int_equal(jsched_err_from_name("no_such_code"), JSCHED_EPROTOCOL);
	assert_int_equal(jsched_err_from_name(NULL), JSCHED_EPROTOCOL);
}

static void test_states(void **state)
{
	(void)state;
	for (int s = JSCHED_STATE_WAITING; s <= JSCHED_STATE_DROPPED; s++) {
		const char *name = jsched_state_name((enum jsched_state)s);
		assert_int_equal(jsched_state_from_name(name), s);
		assert_int_equal(jsched_state_final((enum jsched_state)s), s >= JSCHED_STATE_SUCCEEDED);
	}
	assert_int_equal(jsched_state_from_name("paused"), JSCHED_STATE_UNKNOWN);
	assert_string_equal(jsched_state_name((enum jsched_state)99), "unknown");
	assert_false(jsched_state_final(JSCHED_STATE_UNKNOWN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_code),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_states),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
