/* bench/e2e/daemon.c: a jschedd of the benchmark's own, and the client-side helpers the
 * parts share (pipelined submission, waiting for many ids, reading the metrics).
 *
 * Each part starts the daemon with the config it needs (workers, idle policy, limits,
 * client weights) in a fresh temporary folder, so no part's state leaks into the next and
 * a user's own jschedd is never touched. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/e2e/e2e.h"

static void log_tail(const struct e2e_daemon *d)
{
	char buf[2048];
	FILE *f = fopen(d->log, "r");

	if (!f)
		return;
	if (fseek(f, -(long)sizeof(buf) + 1, SEEK_END) < 0)
		rewind(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "--- jschedd log (%s) ---\n%s\n---\n", d->log, buf);
}

/* write_config: {"socket": ..., members, BENCH_E2E_CONF} into d->conf. */
static void write_config(struct e2e_daemon *d, const char *members)
{
	FILE *f = fopen(d->conf, "w");

	if (!f)
		e2e_die("%s: %s", d->conf, strerror(errno));
	/* BENCH_E2E_CONF: members appended to every part's config, for experiments.  The
	 * daemon refuses a duplicate key, so name only keys the part does not set itself. */
	const char *extra = getenv("BENCH_E2E_CONF");
	/* The journal off unless a part or BENCH_E2E_CONF sets it: the baselines here keep
	 * nothing on disk either (bench/journal and the durable part measure it). */
	bool journal = strstr(members, "\"journal\"") || (extra && strstr(extra, "\"journal\""));
	fprintf(f, "{\"socket\": \"%s\"%s%s%s%s%s}\n", d->sock,
		journal ? "" : ", \"journal\": {\"sync\": \"off\"}", members[0] ? ", " : "", members,
		extra && extra[0] ? ", " : "", extra ? extra : "");
	fclose(f);
}

/* spawn: start jschedd on d's config and wait (at most 60 s) until it answers. */
static void spawn(struct e2e_daemon *d, const char *members)
{
	/* BENCH_E2E_JSCHEDD: another jschedd binary (an older build), so that two builds are
	 * measured in one session by bench/e2e/ab.sh. */
	const char *bin = getenv("BENCH_E2E_JSCHEDD");
	char *argv[] = {(char *)(uintptr_t)(bin && bin[0] ? bin : JSCHEDD_BIN), (char *)(uintptr_t)"-c",
			d->conf, NULL};

	d->pid = e2e_spawn_server(argv, d->log);
	for (int i = 0; i < 6000; i++) {
		struct jsched_conn *c;
		int status;

		if (jsched_connect(d->sock, NULL, &c) == 0) {
			jsched_close(c);
			return;
		}
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			log_tail(d);
			e2e_die("jschedd exited at start (status 0x%x); config: {%s}", (unsigned)status, members);
		}
		e2e_sleep_ms(10);
	}
	log_tail(d);
	e2e_die("jschedd did not answer within 60 s");
}

void e2e_daemon_start(struct e2e_daemon *d, const char *members)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/bench-e2e-XXXXXX");
	if (!mkdtemp(d->dir))
		e2e_die("mkdtemp: %s", strerror(errno));
	e2e_track_dir(d->dir, true);
	snprintf(d->sock, sizeof(d->sock), "%s/s", d->dir);
	snprintf(d->conf, sizeof(d->conf), "%s/jschedd.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/jschedd.log", d->dir);
	write_config(d, members);
	spawn(d, members);
}

/* stop_only: SIGTERM, and wait (5 s, then SIGKILL). */
static void stop_only(struct e2e_daemon *d)
{
	int status = 0;

	kill(d->pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid)
			goto out;
		e2e_sleep_ms(10);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &status, 0);
out:
	e2e_untrack(d->pid);
}

void e2e_daemon_restart(struct e2e_daemon *d, const char *members)
{
	stop_only(d);
	e2e_daemon_respawn(d, members);
}

void e2e_daemon_respawn(struct e2e_daemon *d, const char *members)
{
	write_config(d, members);
	spawn(d, members);
}

void e2e_daemon_stop(struct e2e_daemon *d)
{
	stop_only(d);
	e2e_track_dir(d->dir, false);
	e2e_rm_rf(d->dir); /* the socket, config, log, and a journal if the part kept one */
}

struct jsched_conn *e2e_connect(struct e2e_daemon *d, const char *client)
{
	struct jsched_conn *c;
	char msg[256];
	int r = jsched_connect_error(d->sock, client, &c, msg, sizeof(msg));

	if (r < 0)
		e2e_die("connect as %s: %s (%s)", client ? client : "(default)", jsched_strerror(r), msg);
	return c;
}

long e2e_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

bool e2e_sched(pid_t pid, double *run_ns, double *wait_ns)
{
	char path[64];
	struct dirent *t;
	DIR *dir;
	bool any = false;

	*run_ns = *wait_ns = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return false;
	while ((t = readdir(dir))) {
		char file[384];
		unsigned long long run, wait;
		FILE *f;

		if (t->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/schedstat", path, t->d_name);
		if (!(f = fopen(file, "r")))
			continue;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
			*run_ns += (double)run;
			*wait_ns += (double)wait;
			any = true;
		}
		fclose(f);
	}
	closedir(dir);
	return any;
}

json_t *e2e_metrics_doc(struct jsched_conn *c)
{
	char *text = NULL;
	int r = jsched_metrics(c, &text);
	json_t *doc;

	if (r < 0)
		e2e_die("metrics: %s", jsched_strerror(r));
	doc = json_loads(text, 0, NULL);
	jsched_free(text);
	if (!doc)
		e2e_die("metrics: the daemon's document is not JSON");
	return doc;
}

double e2e_metrics_number(struct jsched_conn *c, const char *path)
{
	json_t *doc = e2e_metrics_doc(c);
	json_t *v = doc;
	char key[128];
	const char *p = path;
	while (v && *p) {
		size_t n = strcspn(p, "/");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		v = json_object_get(v, key);
		p += n + (p[n] == '/');
	}
	double x = v && json_is_number(v) ? json_number_value(v) : NAN;
	json_decref(doc);
	return x;
}

/* wait_ids: e2e_wait_ids, of brief records (jsched_wait_brief) if `brief`. */
static void wait_ids(struct jsched_conn *c, const uint64_t *ids, size_t n, bool brief)
{
	for (size_t at = 0; at < n; at += 1000) {
		size_t k = n - at < 1000 ? n - at : 1000;
		struct jsched_results *res = NULL;
		int r = brief ? jsched_wait_brief(c, ids + at, k, JSCHED_WAIT_ALL, 120000, &res)
			      : jsched_wait_many(c, ids + at, k, JSCHED_WAIT_ALL, 120000, &res);

		if (r < 0)
			e2e_die("wait: %s (%s)", jsched_strerror(r), jsched_error_message(c));
		for (size_t i = 0; i < res->count; i++)
			if (res->items[i]->state != JSCHED_STATE_SUCCEEDED)
				e2e_die("job %llu ended %s: %s", (unsigned long long)res->items[i]->id,
					res->items[i]->state_name,
					res->items[i]->reason ? res->items[i]->reason : "");
		jsched_results_free(res);
	}
}

void e2e_wait_ids(struct jsched_conn *c, const uint64_t *ids, size_t n)
{
	wait_ids(c, ids, n, false);
}

void e2e_wait_ids_brief(struct jsched_conn *c, const uint64_t *ids, size_t n)
{
	wait_ids(c, ids, n, true);
}

/* One pipelined submission in flight: where its ids go. */
struct pipe_state {
	size_t inflight;
	uint64_t *ids;
	int failed;
};

struct pipe_slot {
	struct pipe_state *st;
	size_t at, n;
};

static void submitted_cb(struct jsched_conn *c, int status, const struct jsched_reply *reply, void *arg)
{
	struct pipe_slot *slot = arg;
	const uint64_t *ids;
	size_t n;

	slot->st->inflight--;
	if (status < 0 || jsched_reply_ids(reply, &ids, &n) < 0 || n != slot->n) {
		if (!slot->st->failed)
			fprintf(stderr, "bench-e2e: submit: %s (%s)\n", jsched_strerror(status),
				jsched_error_message(c));
		slot->st->failed = status < 0 ? status : JSCHED_EPROTOCOL;
	} else {
		memcpy(slot->st->ids + slot->at, ids, n * sizeof(*ids));
	}
	free(slot);
}

/* submit_pipelined: e2e_submit_pipelined's loop; job i's spec is each[i], or spec for all
 * when each is NULL. */
static void submit_pipelined(struct jsched_conn *c, const struct jsched_spec *spec,
			     const struct jsched_spec *const *each, size_t n, size_t batch, size_t window,
			     uint64_t *ids)
{
	struct pipe_state st = {.ids = ids};
	const struct jsched_spec **specs = malloc(batch * sizeof(*specs));
	size_t sent = 0;

	if (!specs)
		e2e_die("out of memory");
	for (size_t i = 0; i < batch; i++)
		specs[i] = spec;
	while ((sent < n || st.inflight > 0) && !st.failed) {
		while (sent < n && st.inflight < window) {
			struct pipe_slot *slot = malloc(sizeof(*slot));
			size_t k = n - sent < batch ? n - sent : batch;
			int r;

			if (!slot)
				e2e_die("out of memory");
			*slot = (struct pipe_slot){.st = &st, .at = sent, .n = k};
			if (each && batch > 1)
				memcpy(specs, each + sent, k * sizeof(*specs));
			if (batch == 1)
				r = jsched_submit_async(c, each ? each[sent] : spec, submitted_cb, slot);
			else
				r = jsched_submit_batch_async(c, specs, k, submitted_cb, slot);
			if (r < 0)
				e2e_die("submit_async: %s", jsched_strerror(r));
			sent += k;
			st.inflight++;
		}
		struct pollfd pfd = {.fd = jsched_fd(c),
				     .events = (short)(POLLIN | (jsched_want_write(c) ? POLLOUT : 0))};
		if (poll(&pfd, 1, 60000) <= 0)
			e2e_die("no reply from jschedd within 60 s");
		int r = jsched_process(c);
		if (r < 0)
			e2e_die("jsched_process: %s", jsched_strerror(r));
	}
	free(specs);
	if (st.failed)
		e2e_die("submission failed");
}

void e2e_submit_pipelined(struct jsched_conn *c, const struct jsched_spec *spec, size_t n, size_t batch,
			  size_t window, uint64_t *ids)
{
	submit_pipelined(c, spec, NULL, n, batch, window, ids);
}

void e2e_submit_pipelined_each(struct jsched_conn *c, const struct jsched_spec *const *specs, size_t n,
			       size_t batch, size_t window, uint64_t *ids)
{
	submit_pipelined(c, NULL, specs, n, batch, window, ids);
}
