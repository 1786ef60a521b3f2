/* daemon/core/log.c: log lines on stderr (see log.h). */
#include "daemon/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum jd_log_level min_level = JD_LOG_INFO;

void jd_log_init(void)
{
	const char *v = getenv("JSCHED_LOG");

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
	char line[1024];
	va_list ap;

	if (level < min_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "jschedd: %s: %s\n", names[level], line);
}
