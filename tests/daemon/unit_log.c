/* unit_log.c: jschedd's log lines (daemon/core/log.c): with stderr the journal's stream
 * ($JOURNAL_STREAM names its device and inode) each line starts with its syslog priority
 * (<3> error, <4> warning, <6> info); with $JOURNAL_STREAM naming another stream (one
 * inherited, then redirected) or unset, lines are plain; JSCHED_LOG still filters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/core/log.h"

static char path[64];
static char text[4096];

/* logged: stderr to a fresh file, JOURNAL_STREAM as `journal` says ("self": that file's,
 * "other": another file's, NULL: unset), two lines logged; their text in `text`. */
static void logged(const char *journal)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char v[64];
	snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (journal != NULL && strcmp(journal, "other") == 0));
	if (journal != NULL)
		setenv("JOURNAL_STREAM", v, 1);
	else
		unsetenv("JOURNAL_STREAM");
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	jd_log_init();
	jd_log(JD_LOG_ERR, "disk %s", "gone");
	jd_log(JD_LOG_WARN, "slow");
	jd_log(JD_LOG_INFO, "ready");
	jd_log(JD_LOG_DEBUG, "hidden");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	FILE *f = fopen(path, "r");
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
}

static void test_journal_priorities(void **state)
{
	(void)state;
	logged("self");
	assert_string_equal(text, "<3>jschedd: error: disk gone\n<4>jschedd: warning: slow\n"
				  "<6>jschedd: info: ready\n");
}

static void test_plain_elsewhere(void **state)
{
	(void)state;
	logged("other");
	assert_string_equal(text, "jschedd: error: disk gone\njschedd: warning: slow\njschedd: info: ready\n");
	logged(NULL);
	assert_string_equal(text, "jschedd: error: disk gone\njschedd: warning: slow\njschedd: info: ready\n");
	setenv("JSCHED_LOG", "error", 1);
	logged("self");
	unsetenv("JSCHED_LOG");
	assert_string_equal(text, "<3>jschedd: error: disk gone\n");
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/jsched-unit-log-%d", (int)getpid());
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_priorities),
		cmocka_unit_test(test_plain_elsewhere),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}
