/* daemon/core/log.h: jschedd's log lines, on stderr (journald picks them up under systemd).
 *
 * One line per event, prefixed with a level.  When stderr is the journal ($JOURNAL_STREAM
 * names it), each line begins with its syslog priority, <3> error, <4> warning, <6> info,
 * <7> debug, which journald reads as the entry's priority (so `journalctl -p err` finds
 * the errors); anywhere else, lines are as they read.  Quiet by default about routine traffic;
 * JSCHED_LOG=debug turns on per-connection lines.  Any thread may log (stdio locks the
 * stream per call).
 */
#ifndef JD_LOG_H
#define JD_LOG_H

#include <stdbool.h>

enum jd_log_level { JD_LOG_DEBUG, JD_LOG_INFO, JD_LOG_WARN, JD_LOG_ERR };

/* jd_log: print one line at `level` if it is enabled.  Any thread. */
__attribute__((format(printf, 2, 3))) void jd_log(enum jd_log_level level, const char *fmt, ...);

/* jd_log_init: read JSCHED_LOG (debug, info, warn, error) and whether stderr is the
 * journal's stream ($JOURNAL_STREAM).  Main thread, at start. */
void jd_log_init(void);

#endif /* JD_LOG_H */
