/* tests/fair/test_fair_oom.c: out of memory.  The allocation functions daemon/fair calls
 * are wrapped at link time (-Wl,--wrap, see daemon/fair/build.mk) so that the Nth call
 * fails; for every N up to the number of allocations a run makes, each call must fail
 * cleanly with JSCHED_ENOMEM and leave the instance usable and leak-free (ASan's leak
 * check is part of the assertion under SAN=address).  Admission, take and the rest never
 * allocate, which the run checks too.
 */
#include "tests/fair/fair_test.h"

void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
char *__real_strdup(const char *s);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
char *__wrap_strdup(const char *s);

static long calls, fail_at = -1;

static bool fail_now(void)
{
	return ++calls == fail_at;
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __real_realloc(p, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	return fail_now() ? NULL : __real_aligned_alloc(align, size);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

#define NCLIENTS 40	/* enough to grow the registry twice (16, 32, 64) */

static struct tjob jobs[NCLIENTS];

/* One run: an instance, clients, a job each, taken and completed.  Returns the number
 * of failures seen (0 or 1: the run stops at the first). */
static int run(void)
{
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair_client *c[NCLIENTS];
	struct jd_fair *f = NULL;
	int n = 0, rc, failures = 0;

	rc = jd_fair_new(&cfg, &f);
	if (rc != 0) {
		assert_int_equal(rc, JSCHED_ENOMEM);
		return 1;
	}
	for (; n < NCLIENTS; n++) {
		rc = jd_fair_client_add(f, "client", NULL, NULL, &c[n]);
		if (rc != 0) {
			assert_int_equal(rc, JSCHED_ENOMEM);
			failures = 1;
			break;
		}
	}
	/* Whatever was added works, with no allocation from here on. */
	long before = calls;
	for (int i = 0; i < n; i++)
		assert_int_equal(admit(f, c[i], &jobs[i], i, JD_FAIR_NORMAL, 5000, 1), 0);
	for (int i = 0; i < n; i++)
		complete1(f, take1(f), 100);
	assert_int_equal(jd_fair_cancel(f, &jobs[0].fj), JSCHED_ENO_SUCH_JOB);
	assert_int_equal(jd_fair_expire(f), 0);
	assert_int_equal(calls, before);
	for (int i = 0; i < n; i++)
		assert_int_equal(jd_fair_client_remove(f, c[i]), 0);
	jd_fair_free(f);
	return failures;
}

static void test_every_allocation_fails_cleanly(void **state)
{
	(void)state;
	calls = 0;
	fail_at = -1;
	assert_int_equal(run(), 0);
	long total = calls;
	assert_true(total > NCLIENTS);	/* the wrappers do see the library's calls */
	for (long k = 1; k <= total; k++) {
		calls = 0;
		fail_at = k;
		assert_int_equal(run(), 1);
	}
	fail_at = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
