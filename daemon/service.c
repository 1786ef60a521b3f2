/* daemon/service.c: what jschedd tells its service manager (systemd), through the
 * sd_notify protocol of daemon/sdnotify.c.
 *
 *   READY=1     once, when the socket accepts connections and the workers run
 *               (main.c calls jd_service_ready after listening and starting the pool;
 *               under socket activation the socket accepted even earlier)
 *   STATUS=...  a one-line summary: at READY, then on the 1-second tick whenever it
 *               changed: "serving: 3 queued, 2 running, 4 clients connected; exec: 2
 *               processes, 0 waiting for a slot" (what `systemctl status` shows)
 *   STOPPING=1  once, when a shutdown begins (graceful or immediate), with its STATUS
 *   WATCHDOG=1  on the tick when $WATCHDOG_USEC is set: main.c runs the tick at half the
 *               interval (or every second, whichever is shorter)
 * Without $NOTIFY_SOCKET each call costs one getenv.  Loop thread only.
 */
#include "daemon/service.h"

#include <stdio.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/sdnotify.h"

/* summary: the STATUS line for the daemon's state now. */
static void summary(struct jd_daemon *d, char *buf, size_t len)
{
	char ex[96];
	const char *what = d->net.state == JD_SERVING    ? "serving"
			   : d->net.state == JD_DRAINING ? "draining (graceful shutdown)"
						     : "stopping (immediate shutdown)";

	jd_exec_status(&d->runner.exec, ex, sizeof(ex));
	snprintf(buf, len, "%s on %s: %llu waiting, %llu queued, %llu running, %u connections; exec: %s",
		 what, d->net.srv.path, (unsigned long long)d->jobs.by_state[JD_WAITING],
		 (unsigned long long)d->jobs.by_state[JD_QUEUED],
		 (unsigned long long)d->jobs.by_state[JD_RUNNING], (unsigned)d->net.srv.n_conns, ex);
}

void jd_service_ready(struct jd_daemon *d)
{
	summary(d, d->service_status, sizeof(d->service_status));
	jd_sd_notifyf("READY=1\nSTATUS=%s", d->service_status);
}

void jd_service_tick(struct jd_daemon *d)
{
	char now[sizeof(d->service_status)];

	summary(d, now, sizeof(now));
	if (strcmp(now, d->service_status) != 0) {
		memcpy(d->service_status, now, sizeof(now));
		jd_sd_notifyf("STATUS=%s", now);
	}
	if (d->watchdog_ms)
		jd_sd_notify("WATCHDOG=1");
}

void jd_service_stopping(struct jd_daemon *d)
{
	summary(d, d->service_status, sizeof(d->service_status));
	jd_sd_notifyf("STOPPING=1\nSTATUS=%s", d->service_status);
}
