/* bench/e2e/rtt.c: part 1, the round trip: one client submits one noop call job and waits
 * for its completion, 10,000 times; p50 and p99 in µs.
 *
 * Beside it, in the same run:
 *   - the floor: a raw 64-byte ping-pong between two processes over a Unix socket pair
 *     (no server, no protocol: what any request/reply over a Unix socket costs here);
 *   - beanstalkd: the client puts a job into tube "jobs", a worker process (bs_worker)
 *     reserves and deletes it and puts a reply into tube "replies", which the client
 *     reserves; the time is put to reply reserved (the client then deletes the reply,
 *     outside the timer).
 *
 * jschedd is measured two ways, each under both idle policies (the daemon restarted with
 * "idle_policy": "sleep", then "spin"):
 *   - submit + wait: jsched_submit then jsched_wait, two requests, what most programs do;
 *   - submit + event: the connection watches its jobs (jsched_watch), so one submit brings
 *     back its reply and the job's events (queued, running, succeeded), and the time ends
 *     at the final event: one request per job, the protocol's shortest path.
 * Each run's p50 and p99 are taken over its round trips; a row is the median over runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

enum { MSG = 64 };

static void full_io(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			e2e_die("ping-pong %s: %s", wr ? "write" : "read", n == 0 ? "closed" : strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

int e2e_echo_start(pid_t *pid)
{
	int sv[2];
	char buf[MSG];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		e2e_die("socketpair: %s", strerror(errno));
	*pid = fork();
	if (*pid < 0)
		e2e_die("fork: %s", strerror(errno));
	if (*pid == 0) {
		close(sv[0]);
		for (;;) {
			ssize_t n = read(sv[1], buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				_exit(0);
			full_io(sv[1], buf, (size_t)n, true);
		}
	}
	close(sv[1]);
	return sv[0];
}

void e2e_pingpong(int fd, size_t n, double *lat)
{
	char buf[MSG];

	memset(buf, 'x', sizeof(buf));
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();

		full_io(fd, buf, MSG, true);
		full_io(fd, buf, MSG, false);
		if (lat)
			lat[i] = (double)(bench_now_ns() - t0) / 1e3;
	}
}

void e2e_echo_stop(int fd, pid_t pid)
{
	close(fd);
	e2e_wait_ok(pid, "ping-pong peer");
}

/* minimal_reply: the reply to one request frame (payload text of len bytes) into out (the
 * frame, header included): the id found at the end of the request (libjsched writes it
 * last: ,"id":N}), a noop's submit-with-wait reply of the daemon's shape and size.  Returns
 * the frame's length, 0 if the request has no id there. */
static size_t minimal_reply(const char *text, size_t len, uint64_t *job, char *out, size_t cap)
{
	const char *p = text + len;
	long long id = 0, scale = 1;
	struct timespec ts;

	if (len < 8 || p[-1] != '}')
		return 0;
	for (p -= 2; p > text && *p >= '0' && *p <= '9'; p--, scale *= 10)
		id += (*p - '0') * scale;
	if (p - text < 5 || memcmp(p - 4, "\"id\":", 5) != 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long ms = (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
	unsigned long long j = ++*job;
	int n = snprintf(out + 4, cap - 4,
			 "{\"id\":%lld,\"ok\":true,\"job\":%llu,\"record\":{\"job\":%llu,\"client\":\"hot\",\"uid\":0,"
			 "\"kind\":\"call\",\"priority\":\"normal\",\"state\":\"succeeded\",\"submitted_ms\":%llu,"
			 "\"fn\":\"noop\",\"started_ms\":%llu,\"finished_ms\":%llu,\"value\":null}}",
			 id, j, j, ms, ms, ms);
	if (n < 0 || (size_t)n >= cap - 4)
		return 0;
	out[0] = (char)((unsigned)n >> 24);
	out[1] = (char)((unsigned)n >> 16);
	out[2] = (char)((unsigned)n >> 8);
	out[3] = (char)n;
	return (size_t)n + 4;
}

int e2e_minimal_start(const char *hello_json, pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		e2e_die("socketpair: %s", strerror(errno));
	*pid = fork();
	if (*pid < 0)
		e2e_die("fork: %s", strerror(errno));
	if (*pid > 0) {
		close(sv[1]);
		return sv[0];
	}
	close(sv[0]);
	static char in[1 << 16], out[1024];
	size_t have = 0, hlen = strlen(hello_json);
	uint64_t job = 0;
	bool hello = true;
	for (;;) {
		ssize_t n = read(sv[1], in + have, sizeof(in) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		have += (size_t)n;
		while (have >= 4) {
			size_t flen = (size_t)(unsigned char)in[0] << 24 | (size_t)(unsigned char)in[1] << 16 |
				      (size_t)(unsigned char)in[2] << 8 | (size_t)(unsigned char)in[3];
			size_t olen;

			if (flen + 4 > sizeof(in))
				_exit(1);
			if (have < flen + 4)
				break;
			if (hello) { /* the daemon's own reply to the library's hello (id 1) */
				if (hlen + 4 > sizeof(in))
					_exit(1);
				char hdr[4] = {(char)(hlen >> 24), (char)(hlen >> 16), (char)(hlen >> 8), (char)hlen};
				full_io(sv[1], hdr, 4, true);
				full_io(sv[1], (void *)(uintptr_t)hello_json, hlen, true);
				hello = false;
			} else if ((olen = minimal_reply(in + 4, flen, &job, out, sizeof(out))) > 0) {
				full_io(sv[1], out, olen, true);
			} else {
				_exit(1);
			}
			memmove(in, in + 4 + flen, have - 4 - flen);
			have -= 4 + flen;
		}
	}
}

/* The floor: n ping-pongs of MSG bytes with a forked echo process; lat[i] in µs. */
static void pingpong(size_t n, double *lat)
{
	pid_t pid;
	int fd = e2e_echo_start(&pid);

	e2e_pingpong(fd, n, lat);
	e2e_echo_stop(fd, pid);
}

/* beanstalkd: n put -> reserve -> delete -> reply round trips through one worker. */
static void beanstalk_rtt(int port, size_t n, double *lat)
{
	struct bs_conn *c = malloc(sizeof(*c));
	char line[64], body[64];

	if (!c)
		e2e_die("out of memory");
	pid_t pid = fork();
	if (pid < 0)
		e2e_die("fork: %s", strerror(errno));
	if (pid == 0)
		bs_worker(port, true);
	bs_connect(c, port);
	bs_cmd(c, "use jobs", "USING", line, sizeof(line));
	bs_cmd(c, "watch replies", "WATCHING", line, sizeof(line));
	bs_cmd(c, "ignore default", "WATCHING", line, sizeof(line));
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();

		bs_put(c, "noop", 4);
		uint64_t id = bs_reserve(c, body, sizeof(body));
		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
		bs_delete(c, id);
	}
	bs_put(c, "q", 1);
	e2e_wait_ok(pid, "beanstalkd worker");
	bs_close(c);
	free(c);
}

void e2e_rtt_wait(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double *lat)
{
	for (size_t i = 0; i < n; i++) {
		struct jsched_result *res = NULL;
		uint64_t id, t0 = bench_now_ns();
		int r = jsched_submit(c, spec, &id);

		if (r == 0)
			r = jsched_wait(c, id, 10000, &res);
		if (lat)
			lat[i] = (double)(bench_now_ns() - t0) / 1e3;
		if (r < 0 || res->state != JSCHED_STATE_SUCCEEDED)
			e2e_die("noop submit + wait: %s (%s)", jsched_strerror(r), jsched_error_message(c));
		jsched_result_free(res);
	}
}

bool e2e_rtt_submit_wait(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double *lat)
{
	for (size_t i = 0; i < n; i++) {
		struct jsched_result *res = NULL;
		uint64_t id, t0 = bench_now_ns();
		int r = jsched_submit_wait(c, spec, 10000, &id, NULL, &res, NULL);

		if (lat)
			lat[i] = (double)(bench_now_ns() - t0) / 1e3;
		if (i == 0 && r == JSCHED_EBAD_REQUEST && jsched_error_field(c) &&
		    strcmp(jsched_error_field(c), "wait") == 0)
			return false; /* a daemon from before the flag */
		if (r < 0 || res->state != JSCHED_STATE_SUCCEEDED)
			e2e_die("noop submit with wait: %s (%s)", jsched_strerror(r), jsched_error_message(c));
		jsched_result_free(res);
	}
	return true;
}

/* jschedd, submit + final event on a watching connection, n times. */
static void jsched_rtt_event(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, double *lat)
{
	int r = jsched_watch(c, -1, NULL, NULL);

	if (r < 0)
		e2e_die("watch: %s", jsched_strerror(r));
	for (size_t i = 0; i < n; i++) {
		uint64_t id, t0 = bench_now_ns();

		if ((r = jsched_submit(c, spec, &id)) < 0)
			e2e_die("submit: %s", jsched_strerror(r));
		for (int k = 0; k < 100; k++) {
			struct jsched_event *ev;

			if ((r = jsched_next_event(c, 10000, &ev)) < 0)
				e2e_die("waiting for job %llu's events: %s", (unsigned long long)id,
					jsched_strerror(r));
			bool done = ev->job && ev->job->id == id && jsched_state_final(ev->job->state);
			if (done && ev->job->state != JSCHED_STATE_SUCCEEDED)
				e2e_die("noop job ended %s", ev->job->state_name);
			jsched_event_free(ev);
			if (done)
				break;
		}
		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
	}
	if ((r = jsched_unwatch(c)) < 0)
		e2e_die("unwatch: %s", jsched_strerror(r));
}

/* Per-run percentiles of one measurement, and the medians over runs. */
struct pct {
	double p50[64], p99[64];
	int runs;
};

static void pct_add(struct pct *p, double *lat, size_t n)
{
	p->p50[p->runs] = e2e_percentile(lat, n, 0.50);
	p->p99[p->runs] = e2e_percentile(lat, n, 0.99);
	p->runs++;
}

void e2e_rtt(struct e2e *e)
{
	size_t n = e->quick ? 500 : 10000;
	double *lat = malloc(n * sizeof(*lat));
	struct pct floor = {0}, bs = {0};
	struct e2e_beanstalkd b;
	struct jsched_spec *spec;

	if (!lat || jsched_spec_call("noop", NULL, &spec) < 0)
		e2e_die("out of memory");
	e2e_beanstalkd_start(&b);
	for (int run = 0; run < e->runs && run < 64; run++) {
		pingpong(n, lat);
		pct_add(&floor, lat, n);
		beanstalk_rtt(b.port, n, lat);
		pct_add(&bs, lat, n);
	}
	e2e_beanstalkd_stop(&b);
	double floor50 = e2e_median_of(floor.p50, (size_t)floor.runs);
	double floor99 = e2e_median_of(floor.p99, (size_t)floor.runs);
	double bs50 = e2e_median_of(bs.p50, (size_t)bs.runs);
	double bs99 = e2e_median_of(bs.p99, (size_t)bs.runs);
	bench_row(e->rep, "rtt: unix ping-pong 64 B (floor), p50", "us", NULL, floor50, NULL, 0);
	bench_row(e->rep, "rtt: unix ping-pong 64 B (floor), p99", "us", NULL, floor99, NULL, 0);
	bench_row(e->rep, "rtt: beanstalkd put-reserve-delete-reply, p50", "us", NULL, bs50,
		  "unix ping-pong p50", floor50);
	bench_row(e->rep, "rtt: beanstalkd put-reserve-delete-reply, p99", "us", NULL, bs99,
		  "unix ping-pong p99", floor99);

	static const char *const policies[] = {"sleep", "spin"};
	for (size_t p = 0; p < 2; p++) {
		struct e2e_daemon d;
		struct pct wait = {0}, ev = {0};
		char conf[128];

		snprintf(conf, sizeof(conf), "\"workers\": %u, \"idle_policy\": \"%s\"", e->cpus, policies[p]);
		e2e_daemon_start(&d, conf);
		struct jsched_conn *c = e2e_connect(&d, "rtt");
		e2e_rtt_wait(c, spec, n / 10, lat); /* warm-up: first-touch of the daemon's tables */
		for (int run = 0; run < e->runs && run < 64; run++) {
			e2e_rtt_wait(c, spec, n, lat);
			pct_add(&wait, lat, n);
			jsched_rtt_event(c, spec, n, lat);
			pct_add(&ev, lat, n);
		}
		jsched_close(c);
		e2e_daemon_stop(&d);

		double w50 = e2e_median_of(wait.p50, (size_t)wait.runs);
		double w99 = e2e_median_of(wait.p99, (size_t)wait.runs);
		double e50 = e2e_median_of(ev.p50, (size_t)ev.runs);
		double e99 = e2e_median_of(ev.p99, (size_t)ev.runs);
		const char *pol = policies[p];
		bench_row(e->rep, "rtt: noop submit + wait, p50", "us", pol, w50, "unix ping-pong p50", floor50);
		bench_row(e->rep, "rtt: noop submit + wait, p50 vs beanstalkd", "us", pol, w50,
			  "beanstalkd p50", bs50);
		bench_row(e->rep, "rtt: noop submit + wait, p99", "us", pol, w99, "beanstalkd p99", bs99);
		bench_row(e->rep, "rtt: noop submit + final event, p50", "us", pol, e50, "unix ping-pong p50",
			  floor50);
		bench_row(e->rep, "rtt: noop submit + final event, p50 vs beanstalkd", "us", pol, e50,
			  "beanstalkd p50", bs50);
		bench_row(e->rep, "rtt: noop submit + final event, p99", "us", pol, e99, "beanstalkd p99", bs99);
	}
	bench_note(e->rep, "rtt: %zu round trips per run, %d runs; p50/p99 per run, median over runs; "
			   "jschedd with %u workers; processes not pinned to CPUs",
		   n, e->runs, e->cpus);
	jsched_spec_free(spec);
	free(lat);
}
