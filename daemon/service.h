/* daemon/service.h: readiness, status, stopping and watchdog messages to systemd
 * (service.c).  Loop thread only. */
#ifndef JD_SERVICE_H
#define JD_SERVICE_H

struct jd_daemon;

/* jd_service_ready: READY=1 with the first STATUS line.  Once, after the socket listens
 * and the workers run. */
void jd_service_ready(struct jd_daemon *d);

/* jd_service_tick: STATUS= if the summary changed; WATCHDOG=1 if the manager asked for a
 * watchdog.  From the daemon's tick timer. */
void jd_service_tick(struct jd_daemon *d);

/* jd_service_stopping: STOPPING=1 with the STATUS line.  When a shutdown begins. */
void jd_service_stopping(struct jd_daemon *d);

#endif /* JD_SERVICE_H */
