/* tests/daemon/unit_security.c: the login names of recent uids (daemon/core/security.c,
 * jd_security_default_name) on the test clock: a name is read from the passwd database
 * once and then answered from the cache until its time to live runs out (60 s for a
 * name, 10 s for a uid without one), a clock set back makes it stale, and past the bound
 * of JD_LOGIN_NAMES uids the one looked up longest ago makes room.  Counted by the
 * lookups and hits the metrics show. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "daemon/core/clock.h"
#include "daemon/core/security.h"

static struct jd_config cfg;
static struct jd_security sec;

/* A uid far above any real one: no passwd entry. */
#define NOBODY_UID 4000000000u

/* name: the default name of uid, expecting `lookups` lookups in all since init. */
static void name(uid_t uid, const char *want, uint64_t lookups)
{
	assert_string_equal(jd_security_default_name(&sec, uid), want);
	assert_int_equal(sec.name_lookups, lookups);
}

static int setup(void **state)
{
	(void)state;
	jd_security_init(&sec, &cfg, 0);
	return 0;
}

static void test_names_kept_for_their_time(void **state)
{
	struct passwd *pw = getpwuid(0);
	char root[80], nobody[32];

	(void)state;
	snprintf(root, sizeof(root), "%s", pw && strlen(pw->pw_name) <= 64 ? pw->pw_name : "uid-0");
	snprintf(nobody, sizeof(nobody), "uid-%u", NOBODY_UID);
	name(0, root, 1);
	name(0, root, 1);
	assert_int_equal(sec.name_hits, 1);
	name(NOBODY_UID, nobody, 2);
	jd_clock_test_advance(JD_LOGIN_NAME_MISS_TTL_MS - 1);
	name(NOBODY_UID, nobody, 2);
	jd_clock_test_advance(1); /* a uid without a name: looked up again after 10 s */
	name(NOBODY_UID, nobody, 3);
	name(0, root, 3);
	jd_clock_test_advance(JD_LOGIN_NAME_TTL_MS - JD_LOGIN_NAME_MISS_TTL_MS - 1);
	name(0, root, 3);
	jd_clock_test_advance(1); /* a name: after 60 s */
	name(0, root, 4);
	name(0, root, 4);
	assert_int_equal(sec.name_hits, 5);
}

static void test_clock_set_back(void **state)
{
	(void)state;
	jd_security_default_name(&sec, 0);
	assert_int_equal(sec.name_lookups, 1);
	/* Stored as looked up in the future: the clock went back since. */
	for (size_t i = 0; i < JD_LOGIN_NAMES; i++)
		if (sec.names[i].used && sec.names[i].uid == 0)
			sec.names[i].at_ms = jd_now_ms() + 1000;
	jd_security_default_name(&sec, 0);
	assert_int_equal(sec.name_lookups, 2);
}

static void test_bounded(void **state)
{
	char want[32];

	(void)state;
	/* JD_LOGIN_NAMES uids, each a millisecond after the last: all kept. */
	for (uid_t i = 0; i < JD_LOGIN_NAMES; i++) {
		snprintf(want, sizeof(want), "uid-%u", NOBODY_UID + i);
		name(NOBODY_UID + i, want, i + 1);
		jd_clock_test_advance(1);
	}
	for (uid_t i = 0; i < JD_LOGIN_NAMES; i++)
		jd_security_default_name(&sec, NOBODY_UID + i);
	assert_int_equal(sec.name_lookups, JD_LOGIN_NAMES);
	/* One more uid takes the slot of the one looked up longest ago (the first), and
	 * nothing else is dropped. */
	name(NOBODY_UID + JD_LOGIN_NAMES, "uid-4000000064", JD_LOGIN_NAMES + 1);
	for (uid_t i = 1; i <= JD_LOGIN_NAMES; i++)
		jd_security_default_name(&sec, NOBODY_UID + i);
	assert_int_equal(sec.name_lookups, JD_LOGIN_NAMES + 1);
	name(NOBODY_UID, "uid-4000000000", JD_LOGIN_NAMES + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_names_kept_for_their_time, setup),
		cmocka_unit_test_setup(test_clock_set_back, setup),
		cmocka_unit_test_setup(test_bounded, setup),
	};

	jd_clock_test_start();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
