/* daemon/run/backend.c: exec jobs on a backend other than this machine (see backend.h).
 *
 * Threads: jd_backend_take and jd_backend_overflow run on workers (the feeder) and only
 * push the job on the hand-off list (under `lock`) and wake the loop thread; everything
 * else is the loop thread's.  A remote job's state here (struct remote) is created by
 * the loop thread when it takes the job off the hand-off list and freed when the slurm
 * backend reports its end.
 */
#include "daemon/run/backend.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/clock.h"
#include "daemon/core/jobs.h"
#include "daemon/core/log.h"
#include "daemon/run/backend_slurm.h"
#include "daemon/run/exec.h"
#include "daemon/run/runner.h"

struct remote {
	struct jd_slurm_job sj;
	struct jd_job *job;
	bool attached;			/* re-attached after a restart: not dispatched by
					 * the fair layer */
	bool unit;			/* attached and holding a unit of the window */
	bool running;			/* counted running (else pending) */
	struct remote *next, *prev;	/* every live remote job (freed at stop) */
};

struct jd_backends {
	struct jd_runner *r;
	struct jd_slurm *slurm;		/* NULL: no slurm backend */
	char why[384];			/* why not (config or build) */
	int cls;			/* needs class of a slurm job (fair layer) */
	int res;			/* the fair layer's "slurm" resource, or -1 */
	uint64_t overflow_ns;		/* auto: queued this long without a slot */
	uint32_t max_submitted;
	uv_async_t async;
	uv_timer_t tick;		/* auto: queued jobs past their overflow time */
	bool ticking;
	uint64_t *autos;		/* loop thread: ids of auto jobs not yet placed */
	size_t n_autos, cap_autos;
	pthread_mutex_t lock;
	struct jd_job *head, *tail;	/* under lock: handed off, via exec->remote_next */
	atomic_uint remote_live;	/* handed off and not ended */
	/* loop thread */
	struct remote *live;
	uint32_t pending, running, peak;
	uint64_t handed, overflowed, submitted, started, ended, refused, attached;
};

const char *jd_backends_build(void)
{
	static char line[256];

	if (strncmp(jd_slurm_build(), "not built", 9) == 0)
		snprintf(line, sizeof(line), "backends: local; slurm %s", jd_slurm_build());
	else
		snprintf(line, sizeof(line), "backends: local, slurm (%s)", jd_slurm_build());
	return line;
}

/* hand_off: j leaves the worker for the loop thread.  Any thread. */
static void hand_off(struct jd_backends *b, struct jd_job *j)
{
	bool wake;

	atomic_fetch_add_explicit(&b->remote_live, 1, memory_order_relaxed);
	pthread_mutex_lock(&b->lock);
	j->exec->remote_next = NULL;
	wake = !b->head;
	if (b->tail)
		b->tail->exec->remote_next = j;
	else
		b->head = j;
	b->tail = j;
	pthread_mutex_unlock(&b->lock);
	if (wake)
		uv_async_send(&b->async);
}

bool jd_backend_take(struct jd_runner *r, struct jd_job *j)
{
	struct jd_backends *b = r->backends;

	if (!b || !b->slurm || !j->exec || j->exec->backend != JD_BACKEND_SLURM)
		return false;
	hand_off(b, j);
	return true;
}

int jd_backend_class(const struct jd_runner *r, const struct jd_job *j)
{
	const struct jd_backends *b = r->backends;

	if (!b || !b->slurm || !j->exec || j->exec->backend != JD_BACKEND_SLURM)
		return -1;
	return b->cls;
}

static const int nice_of[] = {[JD_FAIR_CRITICAL] = 0, [JD_FAIR_HIGH] = 100,
			      [JD_FAIR_NORMAL] = 200, [JD_FAIR_LOW] = 300};

static void remote_free(struct jd_backends *b, struct remote *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		b->live = r->next;
	if (r->next)
		r->next->prev = r->prev;
	free(r);
}

/* finish_remote: a remote job has ended (res filled): give its unit back to the fair
 * layer (`attached`: one it was not dispatched by, holding a unit if `unit`) and end it
 * as a local command would. */
static void finish_remote(struct jd_backends *b, struct jd_job *j, bool attached, bool unit)
{
	struct jd_runner *r = b->r;
	struct jd_fair_job *fj = &j->run->fj;

	uint64_t now = jd_now_ns(), seen;

	atomic_fetch_sub_explicit(&b->remote_live, 1, memory_order_relaxed);
	if (!j->run->run_started_ns) {
		j->run->run_started_ns = now;
		j->run->run_started_ms = jd_now_ms();
	}
	/* The fairness charge: the wall time it ran, as Slurm's whole seconds say or as
	 * jschedd saw it (to the poll interval), whichever is longer, and at least 1 ms: a
	 * charge of 0 would make every remote job free and the order arbitrary. */
	seen = now - j->run->run_started_ns;
	fj->run_ns = j->exec->res.run_ns > seen ? j->exec->res.run_ns : seen;
	if (fj->run_ns < 1000000)
		fj->run_ns = 1000000;
	if (!attached)
		jd_fair_complete(r->fair, &fj, 1);
	else if (unit)
		jd_fair_resource_give(r->fair, b->res, 1);
	jd_exec_job_done(&r->exec, j);
	jd_runner_kick(r); /* room in the window: a worker may feed the next */
}

static void on_slurm(void *ctx, struct jd_slurm_job *sj, enum jd_slurm_event ev)
{
	struct jd_backends *b = ctx;
	struct remote *rj = sj->user;
	struct jd_job *j = rj->job;
	struct jd_exec_job *x = j->exec;

	bool attached, unit;

	switch (ev) {
	case JD_SLURM_EV_SUBMITTED:
		x->remote_id = sj->slurm_id;
		free(x->remote_tag);
		x->remote_tag = strdup(sj->tag);
		b->submitted++;
		/* The journal's record: a restart watches this Slurm job again. */
		jd_job_remote_submitted(b->r->env.jobs, j, sj->slurm_id, sj->tag);
		return;
	case JD_SLURM_EV_STARTED:
		snprintf(x->remote_node, sizeof(x->remote_node), "%s", sj->node);
		b->pending--;
		b->running++;
		b->started++;
		rj->running = true;
		if (j->state == JD_RUNNING)
			break; /* re-attached: it was running before the restart */
		j->run->run_started_ns = jd_now_ns();
		j->run->run_started_ms = sj->start_ms ? sj->start_ms : jd_now_ms();
		jd_job_set_running(b->r->env.jobs, j);
		break;
	case JD_SLURM_EV_DONE:
		if (sj->node[0])
			snprintf(x->remote_node, sizeof(x->remote_node), "%s", sj->node);
		if (rj->running)
			b->running--;
		else
			b->pending--;
		b->ended++;
		attached = rj->attached;
		unit = rj->unit;
		x->remote = NULL;
		remote_free(b, rj);
		finish_remote(b, j, attached, unit);
		break;
	}
	jd_jobs_settle(b->r->env.jobs);
}

/* remote_fill: the slurm backend's job for j. */
static void remote_fill(struct remote *rj, struct jd_job *j)
{
	rj->job = j;
	rj->sj.key = j->id;
	rj->sj.uid = j->uid;
	rj->sj.gid = j->gid;
	rj->sj.nice = nice_of[j->prio < 4 ? j->prio : JD_FAIR_NORMAL];
	rj->sj.spec = &j->exec->spec;
	rj->sj.res = &j->exec->res;
	rj->sj.user = rj;
}

/* remote_live: rj is the backend's now, pending. */
static void remote_live(struct jd_backends *b, struct remote *rj)
{
	rj->next = b->live;
	if (b->live)
		b->live->prev = rj;
	b->live = rj;
	rj->job->exec->remote = rj;
	b->pending++;
	if (b->pending + b->running > b->peak)
		b->peak = b->pending + b->running;
}

/* submit: a handed-off job to Slurm.  Loop thread. */
static void submit(struct jd_backends *b, struct jd_job *j)
{
	struct jd_runner *r = b->r;
	struct jd_exec_job *x = j->exec;
	struct remote *rj;
	int rc;

	if (jd_job_stop_asked(r->env.jobs, j)) {
		/* Cancelled between the fair layer and here: it never reaches Slurm. */
		struct jd_fair_job *fj = &j->run->fj;

		atomic_fetch_sub_explicit(&b->remote_live, 1, memory_order_relaxed);
		jd_fair_complete(r->fair, &fj, 1);
		jd_job_finish_stopped(r->env.jobs, j, false);
		jd_runner_kick(r);
		return;
	}
	x->ran_on = JD_BACKEND_SLURM;
	if (!(rj = calloc(1, sizeof(*rj)))) {
		x->res.end = JD_EXEC_SPAWN_FAILED;
		snprintf(x->res.reason, sizeof(x->res.reason), "out of memory");
		finish_remote(b, j, false, false);
		return;
	}
	remote_fill(rj, j);
	/* Recovered without a record of its submit: it may be in Slurm already. */
	rj->sj.find_first = x->remote_find;
	rj->sj.not_before_ms = j->submitted_ms;
	if ((rc = jd_slurm_submit(b->slurm, &rj->sj)) < 0) {
		free(rj);
		x->res.end = JD_EXEC_SPAWN_FAILED;
		if (rc != JSCHED_EINVAL)
			snprintf(x->res.reason, sizeof(x->res.reason), "the slurm backend refused it (%s)",
				 rc == JSCHED_ENOMEM ? "out of memory" : "internal error");
		b->refused++;
		finish_remote(b, j, false, false);
		return;
	}
	remote_live(b, rj);
}

int jd_backend_reattach(struct jd_runner *r, struct jd_job *j, uint32_t slurm_id, const char *tag,
			char *why, size_t len)
{
	struct jd_backends *b = r->backends;
	struct jd_exec_job *x = j->exec;
	struct remote *rj;
	char *copy = NULL;
	int rc;

	if (!b || !b->slurm) {
		snprintf(why, len, "it was handed to Slurm (job %u) before jschedd stopped, and this "
			 "jschedd has no slurm backend to watch it (%s); it may still run there",
			 (unsigned)slurm_id, b ? b->why : "no backends");
		return JSCHED_ENOT_SUPPORTED;
	}
	if (!(rj = calloc(1, sizeof(*rj))) || !(copy = strdup(tag))) {
		free(rj);
		snprintf(why, len, "out of memory re-attaching to Slurm job %u", (unsigned)slurm_id);
		return JSCHED_ENOMEM;
	}
	free(x->remote_tag); /* tag may be it: copied first */
	x->remote_tag = copy;
	remote_fill(rj, j);
	snprintf(rj->sj.tag, sizeof(rj->sj.tag), "%s", copy);
	rj->sj.slurm_id = slurm_id;
	rj->attached = true;
	/* Its unit of the window, if there is room (a window made smaller since may be
	 * over its size until such jobs end). */
	rj->unit = jd_fair_resource_take(r->fair, b->res, 1) == 0;
	if ((rc = jd_slurm_attach(b->slurm, &rj->sj)) < 0) {
		if (rj->unit)
			jd_fair_resource_give(r->fair, b->res, 1);
		free(rj);
		snprintf(why, len, "cannot re-attach to Slurm job %u (%s)", (unsigned)slurm_id,
			 rc == JSCHED_ENOMEM ? "out of memory" : "already watched");
		return rc;
	}
	x->ran_on = JD_BACKEND_SLURM;
	x->remote_id = slurm_id;
	if (j->state == JD_RUNNING)
		j->run->run_started_ns = j->started_ns;
	atomic_fetch_add_explicit(&b->remote_live, 1, memory_order_relaxed);
	b->attached++;
	remote_live(b, rj);
	jd_log(JD_LOG_INFO, "job %" PRIu64 ": re-attached to Slurm job %u (%s before the restart)",
	       j->id, (unsigned)slurm_id, j->state == JD_RUNNING ? "running" : "submitted");
	return 0;
}

static void handoff_cb(uv_async_t *h)
{
	struct jd_backends *b = h->data;
	struct jd_job *j, *next;

	jd_loop_woke();

	pthread_mutex_lock(&b->lock);
	j = b->head;
	b->head = b->tail = NULL;
	pthread_mutex_unlock(&b->lock);
	for (; j; j = next) {
		next = j->exec->remote_next;
		j->exec->remote_next = NULL;
		b->handed++;
		submit(b, j);
	}
	jd_jobs_settle(b->r->env.jobs);
}

/* tick_cb: auto jobs still queued for a process slot past their overflow time go to
 * Slurm: held in the fair layer (so no worker takes them meanwhile), given the Slurm
 * class, released at their place in their client's order.  Jobs that started here, ended
 * or were forgotten leave the list. */
static void tick_cb(uv_timer_t *t)
{
	struct jd_backends *b = t->data;
	struct jd_runner *r = b->r;
	uint64_t now = jd_now_ns();
	size_t k = 0;
	bool moved = false;

	for (size_t i = 0; i < b->n_autos; i++) {
		struct jd_job *j = jd_job_find(r->env.jobs, b->autos[i], NULL);

		if (!j || j->state > JD_QUEUED)
			continue; /* ran here, ended, or forgotten */
		if (j->state == JD_QUEUED && now >= j->run->queued_ns + b->overflow_ns &&
		    jd_fair_hold(r->fair, &j->run->fj) == 0) {
			j->exec->backend = JD_BACKEND_SLURM;
			j->cls = j->run->fj.cls = (uint8_t)b->cls; /* the job's, for a retry */
			jd_fair_release(r->fair, &j->run->fj);
			b->overflowed++;
			moved = true;
			continue;
		}
		b->autos[k++] = b->autos[i]; /* waiting, or queued and not yet due */
	}
	b->n_autos = k;
	if (!k) {
		uv_timer_stop(&b->tick);
		b->ticking = false;
	}
	if (moved)
		jd_runner_wake(r);
}

int jd_backends_start(struct jd_runner *r, char *err, size_t errlen)
{
	const struct jd_backends_config *c = &r->env.cfg->backends;
	struct jd_backends *b = calloc(1, sizeof(*b));
	struct jd_slurm_config sc;
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	int rc;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return JSCHED_ENOMEM;
	}
	b->r = r;
	b->res = -1;
	pthread_mutex_init(&b->lock, NULL);
	atomic_init(&b->remote_live, 0);
	uv_async_init(r->env.loop, &b->async, handoff_cb);
	b->async.data = b;
	uv_timer_init(r->env.loop, &b->tick);
	b->tick.data = b;
	r->backends = b;
	if (!c->slurm) {
		snprintf(b->why, sizeof(b->why), "the slurm backend is not configured (backends.slurm)");
		return 0;
	}
	jd_slurm_config_defaults(&sc);
	snprintf(sc.conf, sizeof(sc.conf), "%s", c->slurm_conf);
	snprintf(sc.partition, sizeof(sc.partition), "%s", c->partition);
	snprintf(sc.account, sizeof(sc.account), "%s", c->account);
	snprintf(sc.output_dir, sizeof(sc.output_dir), "%s", c->output_dir);
	snprintf(sc.instance, sizeof(sc.instance), "%s", r->env.remote_tag ? r->env.remote_tag : "jschedd");
	sc.poll_ms = c->poll_ms;
	sc.output_bytes = r->env.cfg->exec.output_bytes;
	b->max_submitted = c->max_submitted;
	b->overflow_ns = (uint64_t)c->overflow_after_ms * 1000000u;
	if ((rc = jd_slurm_open(r->env.loop, &sc, on_slurm, b, &b->slurm, err, errlen)) < 0)
		return rc;
	if ((b->res = jd_fair_resource_add(r->fair, "slurm", c->max_submitted)) < 0) {
		snprintf(err, errlen, "backends.slurm: cannot register the window with the fair layer");
		return b->res;
	}
	need[b->res] = 1;
	if ((b->cls = jd_fair_class_add(r->fair, need)) < 0) {
		snprintf(err, errlen, "backends.slurm: cannot register the window with the fair layer");
		return b->cls;
	}
	jd_log(JD_LOG_INFO, "slurm backend: %s, window %u, output in %s", jd_slurm_build(),
	       c->max_submitted, c->output_dir);
	return 0;
}

static void closed_cb(uv_handle_t *h)
{
	struct jd_backends *b = h->data;

	if (h == (uv_handle_t *)&b->async) {
		pthread_mutex_destroy(&b->lock);
		free(b);
	}
}

void jd_backends_stop(struct jd_runner *r)
{
	struct jd_backends *b = r->backends;

	if (!b)
		return;
	if (b->slurm)
		jd_slurm_close(b->slurm);
	while (b->live) {
		b->live->job->exec->remote = NULL;
		remote_free(b, b->live);
	}
	free(b->autos);
	b->autos = NULL;
	uv_close((uv_handle_t *)&b->tick, NULL);
	uv_close((uv_handle_t *)&b->async, closed_cb);
	r->backends = NULL;
}

int jd_backend_choose(struct jd_runner *r, const struct jd_client *cl, uid_t uid,
		      const char *asked, char *why, size_t len)
{
	struct jd_backends *b = r->backends;
	enum jd_backend_kind k = asked ? jd_backend_parse(asked) : JD_BACKEND_UNSET;

	if (k == JD_BACKEND_UNSET && cl)
		k = (enum jd_backend_kind)cl->conf.backend;
	if (k == JD_BACKEND_UNSET)
		k = (enum jd_backend_kind)r->env.cfg->backends.default_backend;
	if (k == JD_BACKEND_UNSET || k == JD_BACKEND_LOCAL)
		return JD_BACKEND_LOCAL;
	if (!b || !b->slurm) {
		if (k == JD_BACKEND_AUTO && !asked)
			return JD_BACKEND_LOCAL; /* a default of auto without Slurm: here */
		snprintf(why, len, "backend '%s' is not available: %s", jd_backend_name(k),
			 b ? b->why : "no backends");
		return JSCHED_ENOT_SUPPORTED;
	}
	if (geteuid() != 0 && uid != geteuid()) {
		snprintf(why, len,
			 "Slurm jobs of uid %u need jschedd to run as root (it runs as uid %u and may "
			 "submit only its own)", (unsigned)uid, (unsigned)geteuid());
		return JSCHED_EPERMISSION_DENIED;
	}
	return k;
}

void jd_backend_assign(struct jd_runner *r, struct jd_job *j, enum jd_backend_kind kind)
{
	struct jd_backends *b = r->backends;

	j->exec->backend = (uint8_t)kind;
	if (kind != JD_BACKEND_AUTO || !b || !b->slurm)
		return;
	/* Here first; the tick moves it to Slurm if it is still queued when it is due. */
	if (b->n_autos == b->cap_autos) {
		size_t cap = b->cap_autos ? 2 * b->cap_autos : 64;
		uint64_t *v = realloc(b->autos, cap * sizeof(*v));

		if (!v)
			return; /* it stays local: no memory to watch it */
		b->autos = v;
		b->cap_autos = cap;
	}
	b->autos[b->n_autos++] = j->id;
	if (!b->ticking) {
		uint64_t every = b->overflow_ns / 4000000u;

		every = every < 10 ? 10 : every > 1000 ? 1000 : every;
		uv_timer_start(&b->tick, tick_cb, every, every);
		b->ticking = true;
	}
}

bool jd_backend_cancel(struct jd_runner *r, struct jd_job *j, enum jp_cause cause)
{
	struct jd_backends *b = r->backends;
	struct remote *rj;

	if (!b || !j->exec || !(rj = j->exec->remote))
		return false; /* local, or still being handed over (submit() sees the stop) */
	jd_slurm_cancel(b->slurm, &rj->sj, cause);
	return true;
}

json_t *jd_backends_metrics(struct jd_runner *r)
{
	struct jd_backends *b = r->backends;
	json_t *o, *sl;

	if (!b)
		return json_object();
	o = json_pack("{s:s}", "default", jd_backend_name(r->env.cfg->backends.default_backend));
	if (!o)
		return NULL;
	if (!b->slurm) {
		json_object_set_new(o, "slurm", json_pack("{s:b, s:s, s:s}", "available", 0, "why", b->why,
							  "build", jd_slurm_build()));
		return o;
	}
	sl = jd_slurm_metrics(b->slurm);
	if (sl) {
		json_object_set_new(sl, "available", json_true());
		json_object_set_new(sl, "window", json_integer(b->max_submitted));
		json_object_set_new(sl, "peak_in_window", json_integer(b->peak));
		json_object_set_new(sl, "in_window",
				    json_integer(atomic_load_explicit(&b->remote_live, memory_order_relaxed)));
		json_object_set_new(sl, "jobs", json_pack("{s:I, s:I, s:i, s:i, s:I, s:I, s:I, s:I}",
							  "handed", (json_int_t)b->handed,
							  "reattached", (json_int_t)b->attached,
							  "pending", (int)b->pending, "running", (int)b->running,
							  "started", (json_int_t)b->started,
							  "ended", (json_int_t)b->ended,
							  "refused", (json_int_t)b->refused,
							  "auto_overflowed", (json_int_t)b->overflowed));
		json_object_set_new(o, "slurm", sl);
	}
	return o;
}
