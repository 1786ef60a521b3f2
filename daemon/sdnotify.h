/* daemon/sdnotify.h: the two small systemd protocols jschedd speaks, implemented directly
 * (no libsystemd): sd_notify (READY=1, STATUS=..., STOPPING=1, WATCHDOG=1 as datagrams to
 * $NOTIFY_SOCKET) and socket activation ($LISTEN_PID / $LISTEN_FDS, descriptors from 3).
 *
 * Both protocols are stable, documented in sd_notify(3) and sd_listen_fds(3), and take a
 * page of code each; linking libsystemd for them would add a dependency to every build
 * (and to the AArch64 cross build) for nothing we could not test as well here.
 *
 * All functions are loop-thread only (they read and change the environment).
 */
#ifndef JD_SDNOTIFY_H
#define JD_SDNOTIFY_H

#include <stdint.h>

/* jd_sd_notify: send `state` (e.g. "READY=1\nSTATUS=serving") to the service manager.
 * Returns 1 if sent, 0 if not running under a manager ($NOTIFY_SOCKET unset), or a
 * negative JSCHED_E* code (bad socket address, send failure). */
int jd_sd_notify(const char *state);

/* jd_sd_notifyf: jd_sd_notify with a printf format; the message is cut at 4 KiB. */
int jd_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* jd_sd_listen_fds: the number of sockets passed by socket activation (0 if none or if
 * they were meant for another process), with FD_CLOEXEC set on each; they are
 * descriptors 3 ... 3+n-1.  Unsets LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES so children
 * do not inherit them.  Returns the count, or JSCHED_EINVAL for malformed variables. */
int jd_sd_listen_fds(void);

/* jd_sd_watchdog_usec: the watchdog interval the manager asked for ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or ours), 0 if none.  Send "WATCHDOG=1" at half that interval. */
uint64_t jd_sd_watchdog_usec(void);

#endif /* JD_SDNOTIFY_H */
