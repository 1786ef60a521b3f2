/* tests/fair/test_fair_oom.c: out of memory.  The allocation functions daemon/fair calls
 * are wrapped at link time (tests/common/failalloc.h) so that the Nth call fails; for
 * every N up to the number of allocations a run makes, each call must fail cleanly with
 * JSCHED_ENOMEM and leave the instance usable and leak-free (the wrappers count the live
 * blocks; ASan's leak check adds to it under SAN=address).  Admission, take and the rest
 * never allocate, which the run checks too, except a client's first job of a needs class
 * other than 0 (its other flows, once).
 */
#include "tests/common/failalloc.h"
#include "tests/fair/fair_test.h"

#define NCLIENTS 40	/* enough to grow the registry twice (16, 32, 64) */

static struct tjob jobs[NCLIENTS], cjob;

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
	assert_int_equal(jd_fair_resource_add(f, "slot", 1), 0);
	for (; n < NCLIENTS; n++) {
		rc = jd_fair_client_add(f, "client", NULL, NULL, &c[n]);
		if (rc != 0) {
			assert_int_equal(rc, JSCHED_ENOMEM);
			failures = 1;
			break;
		}
	}
	/* A class after the clients: its heap arrays for the registry as it is. */
	uint32_t need[JD_FAIR_MAX_RES] = {1};
	int cls = jd_fair_class_add(f, need);
	if (cls < 0) {
		assert_int_equal(cls, JSCHED_ENOMEM);
		failures++;
	}
	/* Whatever was added works, with no allocation from here on. */
	long before = jtc_alloc_calls();
	for (int i = 0; i < n; i++)
		assert_int_equal(admit(f, c[i], &jobs[i], i, JD_FAIR_NORMAL, 5000, 1), 0);
	for (int i = 0; i < n; i++)
		complete1(f, take1(f), 100);
	assert_int_equal(jd_fair_cancel(f, &jobs[0].fj), JSCHED_ENO_SUCH_JOB);
	assert_int_equal(jd_fair_expire(f), 0);
	assert_int_equal(jtc_alloc_calls(), before);
	/* The first job of class 1 allocates the client's other flows; a failure leaves
	 * the job out and the instance as it was. */
	if (cls > 0 && n > 0) {
		memset(&cjob, 0, sizeof(cjob));
		cjob.fj.cls = (uint8_t)cls;
		rc = jd_fair_admit(f, c[0], &cjob.fj);
		if (rc != 0) {
			assert_int_equal(rc, JSCHED_ENOMEM);
			failures++;
			assert_int_equal(jd_fair_admit(f, c[0], &cjob.fj), 0);
		}
		complete1(f, take1(f), 100);
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(jd_fair_client_remove(f, c[i]), 0);
	jd_fair_free(f);
	return failures;
}

static void test_every_allocation_fails_cleanly(void **state)
{
	(void)state;
	long start = jtc_alloc_calls(), live = jtc_alloc_live();
	assert_int_equal(run(), 0);
	long total = jtc_alloc_calls() - start;
	assert_true(total > NCLIENTS);	/* the wrappers do see the library's calls */
	for (long k = 0; k < total; k++) {
		jtc_alloc_fail_at(k);
		assert_int_equal(run(), 1);
		assert_true(jtc_alloc_failed());
		jtc_alloc_fail_at(-1);
		assert_int_equal(jtc_alloc_live(), live);	/* nothing leaked */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
