/* daemon/core/jobs.c: the job table, state changes, dependency gates and retention.
 *
 * The table is a chained hash on the id (ids are dense and increasing, so the low bits
 * spread perfectly), grown by doubling.  Final jobs also sit on a FIFO in the order they
 * ended, which is the order retention forgets them in.
 *
 * Gates.  A job's `after` deps must all be satisfied; if it has `any_of` deps, one of
 * them must be.  Each unjudged dep registers the job on its target's `dependents`; when
 * the target settles, every dependent judges its dep on it.  A job whose gate can no
 * longer open ends cancelled (cause "dependency"), which settles in turn and may doom its
 * own dependents: settling works through a list, never recursion, so a long chain costs
 * no stack.
 */
#include "daemon/core/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/core/log.h"
#include "daemon/net/metrics.h"
#include "daemon/run/runner.h"
#include "daemon/net/session.h"
#include "jsched/error.h"

static const char *const state_names[JD_NSTATES] = {
	"waiting", "queued", "running", "succeeded", "failed", "cancelled", "expired", "dropped",
};

const char *jd_state_name(enum jd_state s)
{
	return (unsigned)s < JD_NSTATES ? state_names[s] : "?";
}

const char *jd_prio_name(unsigned prio)
{
	static const char *const names[JD_FAIR_NPRIO] = {"critical", "high", "normal", "low"};

	return prio < JD_FAIR_NPRIO ? names[prio] : "?";
}

int jd_jobs_init(struct jd_jobs *t)
{
	memset(t, 0, sizeof(*t));
	t->n_buckets = 1024;
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	t->next_id = 1;
	return t->buckets ? 0 : JSCHED_ENOMEM;
}

static void job_free(struct jd_job *j)
{
	free(j->name);
	free(j->reason);
	free(j->deps);
	free(j->dependents);
	free(j->run_error);
	json_decref(j->value);
	json_decref(j->run_value);
	json_decref(j->args);
	jd_exec_job_free(j->exec);
	free(j);
}

void jd_jobs_free(struct jd_jobs *t)
{
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct jd_job *j = t->buckets[i];

			t->buckets[i] = j->hnext;
			job_free(j);
		}
	free(t->buckets);
	t->buckets = NULL;
}

struct jd_job *jd_job_new(struct jd_daemon *d)
{
	struct jd_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->id = d->jobs.next_id++;
	j->fj.id = j->id;
	j->state = JD_WAITING;
	j->prio = JD_FAIR_NORMAL;
	j->n_start.job = j;
	j->n_done.job = j;
	jd_cancel_init(&j->ctok);
	return j;
}

void jd_job_discard(struct jd_job *j)
{
	job_free(j);
}

static void grow(struct jd_jobs *t)
{
	size_t n = t->n_buckets * 2;
	struct jd_job **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct jd_job *j = t->buckets[i];

			t->buckets[i] = j->hnext;
			j->hnext = b[j->id & (n - 1)];
			b[j->id & (n - 1)] = j;
		}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

void jd_job_insert(struct jd_daemon *d, struct jd_job *j)
{
	struct jd_jobs *t = &d->jobs;
	size_t b;

	if (t->count >= t->n_buckets)
		grow(t);
	b = j->id & (t->n_buckets - 1);
	j->hnext = t->buckets[b];
	t->buckets[b] = j;
	t->count++;
	t->n_live++;
	t->submitted++;
	t->by_state[JD_WAITING]++;
	j->client->submitted++;
	j->client->live++;
	j->client->by_state[JD_WAITING]++;
	jd_watch_job(d, j);
}

struct jd_job *jd_job_find(struct jd_daemon *d, uint64_t id, bool *forgotten)
{
	struct jd_jobs *t = &d->jobs;

	if (forgotten)
		*forgotten = false;
	for (struct jd_job *j = t->buckets[id & (t->n_buckets - 1)]; j; j = j->hnext)
		if (j->id == id)
			return j;
	if (forgotten)
		*forgotten = id > 0 && id < t->next_id;
	return NULL;
}

static void table_remove(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_job **p = &t->buckets[j->id & (t->n_buckets - 1)];

	while (*p && *p != j)
		p = &(*p)->hnext;
	if (*p)
		*p = j->hnext;
	t->count--;
}

/* move_state: bookkeeping of a state change (global and per-client counts). */
static void move_state(struct jd_daemon *d, struct jd_job *j, enum jd_state to)
{
	struct jd_client *c = j->client;

	if (!jd_state_final(j->state)) {
		d->jobs.by_state[j->state]--;
		c->by_state[j->state]--;
	}
	if (j->state <= JD_QUEUED && to > JD_QUEUED)
		c->live--;
	d->jobs.by_state[to]++;
	c->by_state[to]++;
	j->state = to;
}

static bool dep_satisfied(uint8_t on, enum jd_state s)
{
	switch (on) {
	case JD_ON_SUCCESS:
		return s == JD_SUCCEEDED;
	case JD_ON_FAILURE:
		return s != JD_SUCCEEDED;
	default:
		return true;
	}
}

static const char *const on_names[] = {"success", "failure", "any"};

/* judge: dep k of j has ended in state s.  Returns 1 if the gate is now open, -1 if it
 * can never open (j is then finished cancelled), 0 if still waiting. */
static int judge(struct jd_daemon *d, struct jd_job *j, uint32_t k, enum jd_state s)
{
	struct jd_dep *dep = &j->deps[k];
	bool ok = dep_satisfied(dep->on, s);
	char why[160];

	dep->target = NULL;
	if (!dep->any) {
		j->after_pending--;
		if (!ok) {
			snprintf(why, sizeof(why), "dependency %llu ended %s, wanted %s",
				 (unsigned long long)dep->id, jd_state_name(s), on_names[dep->on]);
			jd_job_finish(d, j, JD_CANCELLED, "dependency", why);
			return -1;
		}
	} else if (ok) {
		j->any_ok = true;
	} else if (++j->any_failed == j->n_any) {
		snprintf(why, sizeof(why), "no any_of dependency can be satisfied (the last, "
			 "%llu, ended %s, wanted %s)", (unsigned long long)dep->id,
			 jd_state_name(s), on_names[dep->on]);
		jd_job_finish(d, j, JD_CANCELLED, "dependency", why);
		return -1;
	}
	return j->after_pending == 0 && (j->n_any == 0 || j->any_ok) ? 1 : 0;
}

static int add_dependent(struct jd_job *target, struct jd_job *j)
{
	if (target->n_dependents == target->cap_dependents) {
		uint32_t cap = target->cap_dependents ? target->cap_dependents * 2 : 4;
		struct jd_job **v = realloc(target->dependents, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		target->dependents = v;
		target->cap_dependents = cap;
	}
	target->dependents[target->n_dependents++] = j;
	return 0;
}

static void remove_dependent(struct jd_job *target, struct jd_job *j)
{
	for (uint32_t i = 0; i < target->n_dependents; i++)
		if (target->dependents[i] == j) {
			target->dependents[i] = target->dependents[--target->n_dependents];
			return;
		}
}

/* A waiting job's deadline.  The fair layer sees a job only once its gates open, so a
 * job still waiting when its deadline passes is expired by a timer of its own (armed
 * only for waiting jobs that have a deadline; closed when the job is released or ends). */
struct jd_wait_deadline {
	uv_timer_t timer;
	struct jd_job *job;
	struct jd_daemon *d;
};

static void wdl_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

static void wdl_stop(struct jd_job *j)
{
	if (!j->wdl)
		return;
	uv_close((uv_handle_t *)&j->wdl->timer, wdl_closed_cb);
	j->wdl = NULL;
}

static void wdl_fire_cb(uv_timer_t *t)
{
	struct jd_wait_deadline *w = t->data;

	jd_job_finish(w->d, w->job, JD_EXPIRED, "deadline",
		      "its deadline passed while it waited for its dependencies");
	jd_jobs_settle(w->d);
}

static void wdl_arm(struct jd_daemon *d, struct jd_job *j)
{
	uint64_t now = jd_now_ns(), due = j->fj.deadline_ns;
	struct jd_wait_deadline *w = calloc(1, sizeof(*w));

	if (!w)
		return; /* it expires when released instead */
	w->job = j;
	w->d = d;
	uv_timer_init(&d->loop, &w->timer);
	w->timer.data = w;
	uv_timer_start(&w->timer, wdl_fire_cb, due > now ? (due - now + 999999) / 1000000 : 0, 0);
	j->wdl = w;
}

int jd_job_link_deps(struct jd_daemon *d, struct jd_job *j)
{
	int open = j->after_pending == 0 && (j->n_any == 0 || j->any_ok);

	for (uint32_t k = 0; k < j->n_deps && j->state == JD_WAITING; k++) {
		struct jd_job *t = j->deps[k].target;

		if (!t)
			continue;
		if (jd_state_final(t->state)) {
			open = judge(d, j, k, t->state);
		} else if (add_dependent(t, j) < 0) {
			jd_job_finish(d, j, JD_FAILED, "handler", "out of memory linking dependencies");
			return 0;
		}
	}
	if (j->state == JD_WAITING && open != 1 && j->fj.deadline_ns)
		wdl_arm(d, j);
	return j->state == JD_WAITING && open == 1;
}

int jd_job_release(struct jd_daemon *d, struct jd_job *j)
{
	int rc;

	wdl_stop(j);
	move_state(d, j, JD_QUEUED);
	j->queued_ns = jd_now_ns();
	jd_watch_job(d, j);
	rc = jd_fair_admit(d->runner.fair, j->client->fc, &j->fj);
	if (rc < 0) {
		/* No room (a limit lowered under a waiting job, or the global cap). */
		jd_job_finish(d, j, JD_DROPPED, "overflow", "no room in the queue when its "
			      "dependencies were met");
		return rc;
	}
	if (rc == JD_FAIR_BLOCKED)
		j->client->blocked = true;
	if (j->fj.deadline_ns)
		jd_daemon_arm_deadline(d);
	jd_runner_kick(d);
	return rc;
}

void jd_job_set_running(struct jd_daemon *d, struct jd_job *j)
{
	if (j->state != JD_QUEUED)
		return;
	move_state(d, j, JD_RUNNING);
	j->started_ms = j->run_started_ms;
	j->started_ns = j->run_started_ns;
	jd_watch_job(d, j);
}

bool jd_job_finish(struct jd_daemon *d, struct jd_job *j, enum jd_state s, const char *cause,
		   const char *reason)
{
	if (jd_state_final(j->state))
		return false;
	/* A waiting job leaves its targets' dependents lists now: it may be forgotten
	 * (freed) before they end. */
	wdl_stop(j);
	if (j->state == JD_WAITING)
		for (uint32_t k = 0; k < j->n_deps; k++)
			if (j->deps[k].target) {
				remove_dependent(j->deps[k].target, j);
				j->deps[k].target = NULL;
			}
	move_state(d, j, s);
	d->jobs.n_live--;
	j->finished_ms = jd_now_ms();
	j->finished_ns = jd_now_ns();
	j->cause = s == JD_SUCCEEDED ? NULL : cause;
	free(j->reason);
	j->reason = reason && s != JD_SUCCEEDED ? strdup(reason) : NULL;
	if (j->reason)
		jp_utf8_scrub(j->reason); /* may end in a character a fixed buffer cut */
	j->settle_next = d->jobs.to_settle;
	d->jobs.to_settle = j;
	j->on_settle = true;
	return true;
}

bool jd_job_cancel(struct jd_daemon *d, struct jd_job *j, const char *cause)
{
	const char *why = strcmp(cause, "shutdown") == 0 ? "cancelled by an immediate shutdown"
							 : "cancelled by request";

	switch (j->state) {
	case JD_WAITING:
		jd_job_finish(d, j, JD_CANCELLED, cause, why);
		return false;
	case JD_QUEUED:
		/* Still in the fair queue, unless a worker has just taken it (then its
		 * start notice is on its way: treat it as running). */
		if (jd_fair_cancel(d->runner.fair, &j->fj) == 0) {
			jd_job_finish(d, j, JD_CANCELLED, cause, why);
			return false;
		}
		/* fall through */
	case JD_RUNNING:
		j->cancel_requested = true;
		j->shutdown_cancel = strcmp(cause, "shutdown") == 0;
		jd_runner_cancel(d, j);
		return true;
	default:
		return false;
	}
}

/* retain: j has settled; keep its record for the retention period. */
static void retain(struct jd_daemon *d, struct jd_job *j)
{
	struct jd_jobs *t = &d->jobs;

	j->rprev = t->retained_tail;
	j->rnext = NULL;
	if (t->retained_tail)
		t->retained_tail->rnext = j;
	else
		t->retained_head = j;
	t->retained_tail = j;
	t->n_retained++;
}

void jd_jobs_trim(struct jd_daemon *d)
{
	struct jd_jobs *t = &d->jobs;
	uint64_t now = jd_now_ns();
	uint64_t max_age = (uint64_t)d->cfg.retain_seconds * 1000000000ull;

	while (t->retained_head &&
	       (t->n_retained > d->cfg.retain_jobs ||
		now - t->retained_head->finished_ns > max_age)) {
		struct jd_job *j = t->retained_head;

		/* A final job can still be referenced by pending waits (answered during its
		 * settle, so none) and by nothing else: free it. */
		t->retained_head = j->rnext;
		if (t->retained_head)
			t->retained_head->rprev = NULL;
		else
			t->retained_tail = NULL;
		t->n_retained--;
		t->forgotten++;
		table_remove(t, j);
		job_free(j);
	}
}

/* record_latency: the histograms of a job that ended. */
static void record_latency(struct jd_daemon *d, struct jd_job *j)
{
	struct jd_client *c = j->client;

	/* A client's lifetime histograms cost 23 KiB (its windows what they hold): only
	 * clients that run jobs pay for them. */
	if (!c->lat)
		c->lat = calloc(1, sizeof(*c->lat));

	uint64_t qw = 0, run = 0, e2e = j->finished_ns - j->submitted_ns;
	uint64_t mono_ms = j->finished_ns / 1000000; /* the windows' clock: monotonic */

	if (j->started_ns) {
		/* Run time as the worker measured it (the loop thread may learn of the end a
		 * little later, with its batch); the other two end when the client can know. */
		uint64_t end = j->run_finished_ns ? j->run_finished_ns : j->finished_ns;

		qw = j->started_ns - (j->queued_ns ? j->queued_ns : j->submitted_ns);
		run = end > j->started_ns ? end - j->started_ns : 0;
	}
	jd_latency_record(&d->lat, mono_ms, j->started_ns != 0, qw, run, e2e);
	if (c->lat)
		jd_latency_record(c->lat, mono_ms, j->started_ns != 0, qw, run, e2e);
	jd_throughput_tick(d, j->finished_ms);
	d->tp_sec[(j->finished_ms / 1000) % 64]++;
}

void jd_jobs_settle(struct jd_daemon *d)
{
	struct jd_jobs *t = &d->jobs;

	while (t->to_settle) {
		struct jd_job *j = t->to_settle;
		struct jd_job **deps;
		uint32_t n;

		t->to_settle = j->settle_next;
		j->on_settle = false;
		record_latency(d, j);
		jd_watch_job(d, j);
		jd_session_job_final(d, j);
		/* Judge the dependents.  Detach the list first: judging may finish a
		 * dependent, whose own settling comes later through the same list. */
		deps = j->dependents;
		n = j->n_dependents;
		j->dependents = NULL;
		j->n_dependents = j->cap_dependents = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct jd_job *dj = deps[i];

			if (dj->state != JD_WAITING)
				continue;
			for (uint32_t k = 0; k < dj->n_deps; k++)
				if (dj->deps[k].target == j) {
					int r = judge(d, dj, k, j->state);

					if (r == 1)
						jd_job_release(d, dj);
					if (r != 0)
						break;
				}
		}
		free(deps);
		retain(d, j);
	}
	jd_runner_flush_kicks(d);
	jd_jobs_trim(d);
	jd_daemon_maybe_exit(d);
}
