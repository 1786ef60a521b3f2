/* daemon/core/log.c: log lines on stderr (see log.h). */
#include "daemon/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static enum jd_log_level min_level = JD_LOG_INFO;
static bool to_journal;	/* stderr is the journal's stream: prefix <N> */

/* stderr_is_journal: whether $JOURNAL_STREAM ("DEVICE:INODE", set by systemd when it
 * connects stderr to the journal) names our stderr, not a stream we inherited and then
 * redirected. */
static bool stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return v && sscanf(v, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void jd_log_init(void)
{
	const char *v = getenv("JSCHED_LOG");

	min_level = JD_LOG_INFO;
	to_journal = stderr_is_journal();
	if (!v)
		return;
	if (strcmp(v, "debug") == 0)
		min_level = JD_LOG_DEBUG;
	else if (strcmp(v, "warn") == 0)
		min_level = JD_LOG_WARN;
	else if (strcmp(v, "error") == 0)
		min_level = JD_LOG_ERR;
}

void jd_log(enum jd_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warning", "error"};
	static const char *const prio[] = {"<7>", "<6>", "<4>", "<3>"}; /* syslog's numbers */
	char line[1024];
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%sjschedd: %s: %s\n", to_journal ? prio[level] : "", names[level], line);
}
