/* bench/e2e/connect.c: part 12, connections: what a client that connects, says hello and
 * closes costs, one connection after another (a CLI call's first round trip, or a
 * script's loop of them).
 *
 * Rows, each the median over --runs runs of N connections (5,000; 500 with --quick):
 *   - the baseline: one ping round trip on a connection kept open (N of them), what a
 *     request costs without the connection's set-up;
 *   - connect + hello + close through libjsched (jsched_connect, jsched_close), per
 *     connection and as connections per second;
 *   - counts over N more connections: the daemon's system calls and context switches
 *     per connection (perf stat, every thread), and, when the daemon has the metric, its
 *     login-name lookups per connection (security.login_name_lookups: a getpwuid_r each).
 * No client name is given, so each hello asks for the uid's login name (its default
 * client name), as the jsched tool does.  BENCH_E2E_JSCHEDD names an older build for an
 * A/B (bench/e2e/ab.sh OLD connect).
 *   - bare connect + close, no hello, N in a row, and the daemon's system calls per one
 *     (perf stat): not a floor of a connection (no request is read), but a loop of them
 *     outruns the daemon's reading of their ends, so the daemon accepts them past
 *     limits.connections_per_uid and looks for connections their peers have left
 *     (server.c hung_up).  It looked at every open one at every such accept, a poll
 *     each, and the loop slowed with the square of the connections it left open
 *     (1.4-3.2 ms per connect past ~1,000); now each is looked at once.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

/* pings: n jsched_ping on an open connection; µs per round trip. */
static double pings(struct jsched_conn *c, size_t n)
{
	uint64_t t0 = bench_now_ns();

	for (size_t i = 0; i < n; i++) {
		int r = jsched_ping(c);

		if (r < 0)
			e2e_die("ping: %s", jsched_strerror(r));
	}
	return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

/* hellos: n jsched_connect + jsched_close; µs per connection. */
static double hellos(const struct e2e_daemon *d, size_t n)
{
	uint64_t t0 = bench_now_ns();

	for (size_t i = 0; i < n; i++) {
		struct jsched_conn *c;
		int r = jsched_connect(d->sock, NULL, &c);

		if (r < 0)
			e2e_die("connect + hello: %s", jsched_strerror(r));
		jsched_close(c);
	}
	return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

/* bares: n bare connect + close (a socket, no hello); µs per connection. */
static double bares(const struct e2e_daemon *d, size_t n)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint64_t t0 = bench_now_ns();

	if (strlen(d->sock) >= sizeof(sa.sun_path))
		e2e_die("socket path too long: %s", d->sock);
	memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
	for (size_t i = 0; i < n; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			e2e_die("bare connect: %s", strerror(errno));
		close(fd);
	}
	return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

void e2e_connect_rate(struct e2e *e)
{
	size_t n = e->quick ? 500 : 5000;
	double png[64], hel[64], bar[64];
	int runs = e->runs < 64 ? e->runs : 64;
	struct e2e_counter ctr;
	struct e2e_counts dc;
	struct e2e_daemon d;
	struct jsched_conn *adm;
	double look0, look1;

	e2e_daemon_start(&d, "\"journal\": {\"sync\": \"off\"}");
	adm = e2e_connect(&d, "bench");
	hellos(&d, 200); /* warm-up */
	pings(adm, 200);
	for (int run = 0; run < runs; run++) {
		png[run] = pings(adm, n);
		hel[run] = hellos(&d, n);
	}
	double png50 = e2e_median_of(png, (size_t)runs), hel50 = e2e_median_of(hel, (size_t)runs);
	bench_row(e->rep, "connect: ping on an open connection, per round trip", "us", NULL, png50,
		  NULL, 0);
	bench_row(e->rep, "connect: connect + hello + close, per connection", "us", NULL, hel50,
		  "ping round trip", png50);
	bench_row(e->rep, "connect: connect + hello + close, connections per second", "conn/s", NULL,
		  1e6 / hel50, "pings per second", 1e6 / png50);

	look0 = e2e_metrics_number(adm, "security/login_name_lookups");
	if (e2e_counter_start(&ctr, d.pid)) {
		e2e_counter_enable(&ctr);
		hellos(&d, n);
		if (e2e_counter_stop(&ctr, &dc)) {
			bench_row(e->rep, "connect: daemon system calls per connect + hello + close", "calls",
				  NULL, dc.syscalls / (double)n, NULL, 0);
			bench_row(e->rep, "connect: daemon context switches per connect + hello + close",
				  "switches", NULL, dc.ctxsw / (double)n, NULL, 0);
		}
	} else {
		bench_note(e->rep, "connect: MISSING: the count rows (perf stat could not count; see stderr)");
		hellos(&d, n);
	}
	look1 = e2e_metrics_number(adm, "security/login_name_lookups");
	if (!isnan(look0) && !isnan(look1))
		bench_row(e->rep, "connect: daemon login-name lookups per connection", "lookups", NULL,
			  (look1 - look0) / (double)n, NULL, 0);
	else
		bench_note(e->rep, "connect: this jschedd does not count its login-name lookups");
	/* Bare connects last: the daemon's reading of their ends lags behind them. */
	for (int run = 0; run < runs; run++)
		bar[run] = bares(&d, n);
	double bar50 = e2e_median_of(bar, (size_t)runs);
	bench_row(e->rep, "connect: bare connect + close (no hello), per connection", "us", NULL,
		  bar50, "connect + hello + close", hel50);
	if (e2e_counter_start(&ctr, d.pid)) {
		e2e_counter_enable(&ctr);
		bares(&d, n);
		pings(adm, 2); /* the accepts done: the loop has come round twice since */
		if (e2e_counter_stop(&ctr, &dc))
			bench_row(e->rep, "connect: daemon system calls per bare connect + close",
				  "calls", NULL, dc.syscalls / (double)n, NULL, 0);
	}

	jsched_close(adm);
	e2e_daemon_stop(&d);
}
