/* daemon/pool/pool.c: a pool's life: create, submit, idle policy, feeder, counters, destroy.
 *
 * Shutdown.  Graceful and immediate destroys both end when the pool is quiescent: every
 * task created so far has finished or been dropped.  Rather than one shared counter of
 * outstanding tasks (JLib measured such a counter at 27% of its per-task cost), each
 * worker counts the tasks it created and the tasks it completed, and non-workers count
 * on one shared counter; jd_quiescent() sums the completions first and the creations
 * after, so equal sums mean that at the moment between the two passes nothing was
 * outstanding (a completion is counted only after its creation is visible, and only
 * running tasks or outside submitters create tasks, and destroy forbids the latter).
 * Each worker checks quiescence when it runs out of work during a shutdown, and the one
 * that finds it tells the others to quit.  An immediate destroy also drops every user
 * task that has not started (its wait group is done all the same) and fires the stop
 * token of every fiber and worker, so suspended waits return JSCHED_ECANCELLED and their
 * tasks can finish.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/pool/internal.h"
#include "daemon/pool/topo.h"
#include "jsched/error.h"

static atomic_uint_least64_t next_pool_id = 1;
static _Thread_local unsigned submit_rr;

bool jd_quiescent(struct jd_pool *p)
{
	uint64_t done = 0, made = 0;
	for (unsigned i = 0; i < p->nworkers; i++)
		done += atomic_load_explicit(&p->workers[i].completed, memory_order_acquire);
	made = atomic_load_explicit(&p->ext_created, memory_order_acquire);
	for (unsigned i = 0; i < p->nworkers; i++)
		made += atomic_load_explicit(&p->workers[i].created, memory_order_acquire);
	return done == made;
}

void jd_pool_config_init(struct jd_pool_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->idle = JD_IDLE_SLEEP;
	cfg->wait_spin_ns = -1;
	cfg->park_after_ns = -1;
}

static void pool_free(struct jd_pool *p)
{
	jd_timer_fini(p); /* first: its claims reach fibers and workers */
	if (p->workers) {
		for (unsigned i = 0; i < p->nworkers; i++) {
			jd_deque_fini(&p->workers[i].deque);
			free(p->workers[i].victims);
		}
		free(p->workers);
	}
	jd_overflow_unregister(p);
	jd_fibers_fini(p);
	jd_tasks_fini(p);
	struct jd_feeder *fd = atomic_load_explicit(&p->feeder, memory_order_relaxed);
	while (fd) {
		struct jd_feeder *older = fd->older;
		free(fd);
		fd = older;
	}
	pthread_mutex_destroy(&p->feeder_lock);
	free(p);
}

/* stop_workers: make the first `started` workers quit and join them. */
static void stop_workers(struct jd_pool *p, unsigned started)
{
	atomic_store_explicit(&p->quit, 1, memory_order_release);
	jd_wake_all(p);
	for (unsigned i = 0; i < started; i++) {
		jd_unpark(&p->workers[i].parker);
		pthread_join(p->workers[i].thread, NULL);
	}
}

int jd_pool_create(struct jd_pool **out, const struct jd_pool_config *cfg_in)
{
	struct jd_pool_config cfg;
	if (cfg_in)
		cfg = *cfg_in;
	else
		jd_pool_config_init(&cfg);
	unsigned n = cfg.workers;
	if (!n) { /* the CPUs this process may use (a cpuset may allow fewer than online) */
		cpu_set_t set;
		long c = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
								      : sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (unsigned)c : 1;
	}
	if (n > 1024 || (cfg.idle != JD_IDLE_SLEEP && cfg.idle != JD_IDLE_SPIN))
		return JSCHED_EINVAL;

	void *mem;
	if (posix_memalign(&mem, JD_CACHELINE, sizeof(struct jd_pool)))
		return JSCHED_ENOMEM;
	struct jd_pool *p = mem;
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->feeder_lock, NULL);
	p->nworkers = n;
	p->id = atomic_fetch_add(&next_pool_id, 1);
	atomic_init(&p->idle_policy, cfg.idle);
	p->feed_batch = cfg.feed_batch ? (cfg.feed_batch > 64 ? 64 : cfg.feed_batch) : 8;
	p->pin = cfg.pin;
	p->sched = cfg.sched;
	p->park_after_ns = cfg.park_after_ns < 0 ? 10000 : (uint64_t)cfg.park_after_ns;
	jd_tasks_init(p);
	int rc = JSCHED_ENOMEM;
	if (posix_memalign(&mem, JD_CACHELINE, n * sizeof(struct jd_worker)))
		goto out_free;
	p->workers = mem;
	memset(p->workers, 0, n * sizeof(struct jd_worker));
	for (unsigned i = 0; i < n; i++) {
		struct jd_worker *w = &p->workers[i];
		w->pool = p;
		w->index = i;
		w->rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ p->id;
		jd_cancel_init(&w->stop);
		if (jd_deque_init(&w->deque, 10))
			goto out_free;
	}
	if ((rc = jd_topo_plan(p)) || (rc = jd_fibers_init(p, &cfg)) || (rc = jd_timer_init(p)))
		goto out_free;
	if (cfg.feeder) {
		struct jd_feeder *fd = calloc(1, sizeof(*fd));
		rc = JSCHED_ENOMEM;
		if (!fd)
			goto out_free;
		fd->fn = cfg.feeder;
		fd->ctx = cfg.feeder_ctx;
		atomic_store(&p->feeder, fd);
	}
	jd_overflow_register(p);
	jd_wait_set_thread_spin(cfg.wait_spin_ns < 0 ? 20000 : cfg.wait_spin_ns);

	const char *name = cfg.name ? cfg.name : "jd-pool";
	for (unsigned i = 0; i < n; i++) {
		struct jd_worker *w = &p->workers[i];
		if (pthread_create(&w->thread, NULL, jd_worker_main, w)) {
			stop_workers(p, i);
			rc = JSCHED_EINTERNAL;
			goto out_free;
		}
		char tn[16]; /* the kernel's limit, with the NUL */
		snprintf(tn, sizeof(tn), "%.10s/%u", name, i % 10000);
		pthread_setname_np(w->thread, tn);
	}
	*out = p;
	return 0;

out_free:
	pool_free(p);
	return rc;
}

int jd_pool_destroy(struct jd_pool *p, enum jd_shutdown how)
{
	atomic_store_explicit(&p->stopping,
			      how == JD_SHUTDOWN_IMMEDIATE ? JD_STOP_IMMEDIATE : JD_STOP_GRACEFUL,
			      memory_order_seq_cst);
	if (how == JD_SHUTDOWN_IMMEDIATE) {
		for (int c = 0; c < 2; c++)
			for (unsigned i = 0; i < p->fclass[c].count; i++)
				jd_cancel_fire(&p->fclass[c].fibers[i].stop);
		for (unsigned i = 0; i < p->nworkers; i++)
			jd_cancel_fire(&p->workers[i].stop);
	}
	jd_wake_all(p);
	for (unsigned i = 0; i < p->nworkers; i++)
		pthread_join(p->workers[i].thread, NULL);
	/* A thread outside the pool may still be returning from waking the last fiber. */
	while (atomic_load_explicit(&p->outside_wakes, memory_order_acquire))
		sched_yield();
	uint64_t dropped = atomic_load(&p->dropped);
	pool_free(p);
	return dropped > INT32_MAX ? INT32_MAX : (int)dropped;
}

/* spawn_on: a task from inside the pool, onto the calling worker's deque. */
static int spawn_on(struct jd_worker *w, const struct jd_task_spec *s)
{
	struct jd_task *t = jd_task_alloc(w->pool, w);
	if (!t)
		return JSCHED_ENOMEM;
	jd_task_fill(t, s);
	jd_bump(&w->created, 1);
	if (jd_deque_push(&w->deque, t)) {
		t->wg = NULL; /* never queued: balance the count, leave the group alone */
		jd_task_complete(w, t);
		return JSCHED_ENOMEM;
	}
	jd_wake_one(w->pool, NULL);
	return 0;
}

int jd_spawn(const struct jd_task_spec *s)
{
	int rc = jd_task_check(s);
	if (rc)
		return rc;
	struct jd_worker *w = jd_self();
	if (!w)
		return JSCHED_EINVAL;
	return spawn_on(w, s);
}

int jd_pool_submit(struct jd_pool *p, const struct jd_task_spec *s)
{
	return jd_pool_submit_batch(p, s, 1);
}

int jd_pool_submit_batch(struct jd_pool *p, const struct jd_task_spec *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = jd_task_check(&s[i]);
		if (rc)
			return rc;
	}
	if (!n)
		return 0;
	struct jd_worker *w = jd_self();
	if (w && w->pool != p)
		w = NULL; /* a worker of another pool submits like an outsider */
	if (!w && atomic_load_explicit(&p->stopping, memory_order_relaxed))
		return JSCHED_ESHUTTING_DOWN;
	if (w && n == 1)
		return spawn_on(w, s);

	/* Allocate and fill the whole chain first, so that an error queues nothing. */
	struct jd_task *first = NULL, *last = NULL;
	for (size_t i = 0; i < n; i++) {
		struct jd_task *t = jd_task_alloc(p, w);
		if (!t) {
			while (first) {
				struct jd_task *next = first->next;
				jd_task_unalloc(p, w, first);
				first = next;
			}
			return JSCHED_ENOMEM;
		}
		jd_task_fill(t, &s[i]);
		if (last)
			last->next = t;
		else
			first = t;
		last = t;
	}
	if (w) { /* a worker's batch goes on its own deque, with one wake-up */
		jd_bump(&w->created, n);
		for (struct jd_task *t = first, *next; t; t = next) {
			next = t->next;
			if (jd_deque_push(&w->deque, t))
				jd_push_inbox(p, w, t, t, 1);
		}
		jd_wake_one(p, NULL);
		return 0;
	}
	atomic_fetch_add_explicit(&p->ext_created, n, memory_order_relaxed);
	struct jd_worker *target = &p->workers[submit_rr++ % p->nworkers];
	jd_push_inbox(p, target, first, last, n);
	return 0;
}

void jd_pool_set_idle(struct jd_pool *p, enum jd_idle idle)
{
	atomic_store_explicit(&p->idle_policy, idle, memory_order_seq_cst);
	if (idle == JD_IDLE_SPIN)
		jd_wake_all(p);
}

enum jd_idle jd_pool_idle(const struct jd_pool *p)
{
	return (enum jd_idle)atomic_load_explicit(&p->idle_policy,
						  memory_order_relaxed);
}

void jd_pool_set_feeder(struct jd_pool *p, jd_feeder_fn fn, void *ctx)
{
	struct jd_feeder *fd = calloc(1, sizeof(*fd));
	pthread_mutex_lock(&p->feeder_lock);
	if (!fd) { /* keep the old one rather than lose work; report it */
		pthread_mutex_unlock(&p->feeder_lock);
		fprintf(stderr, "jschedd: pool: out of memory setting the feeder\n");
		return;
	}
	fd->fn = fn;
	fd->ctx = ctx;
	/* The old record stays allocated (chained) until destroy: a worker may be
	 * calling through it right now. */
	fd->older = atomic_load_explicit(&p->feeder, memory_order_relaxed);
	atomic_store_explicit(&p->feeder, fd, memory_order_release);
	pthread_mutex_unlock(&p->feeder_lock);
	jd_pool_notify(p);
}

void jd_pool_notify(struct jd_pool *p)
{
	atomic_store_explicit(&p->feed_pending, 1, memory_order_release);
	jd_wake_one(p, NULL);
}

void jd_pool_want_cpu(struct jd_pool *p)
{
	/* Read first: a flag already up costs no write to the searchers' cache line. */
	if (!atomic_load_explicit(&p->cpu_wanted, memory_order_relaxed))
		atomic_store_explicit(&p->cpu_wanted, 1, memory_order_relaxed);
}

void jd_pool_got_cpu(struct jd_pool *p)
{
	if (atomic_load_explicit(&p->cpu_wanted, memory_order_relaxed))
		atomic_store_explicit(&p->cpu_wanted, 0, memory_order_relaxed);
}

unsigned jd_pool_workers(const struct jd_pool *p)
{
	return p->nworkers;
}

unsigned jd_pool_parked(const struct jd_pool *p)
{
	int n = atomic_load_explicit(&p->nidle, memory_order_relaxed);

	return n > 0 ? (unsigned)n : 0;
}

bool jd_pool_stopping(const struct jd_pool *p)
{
	return atomic_load_explicit(&p->stopping, memory_order_acquire) != JD_RUNNING;
}

int jd_pool_stats(const struct jd_pool *cp, struct jd_pool_stats *out,
		  struct jd_worker_stats *per_worker, size_t n)
{
	const struct jd_pool *p = cp;
	memset(out, 0, sizeof(*out));
	out->workers = p->nworkers;
	out->idle = jd_pool_idle(p);
	for (unsigned i = 0; i < p->nworkers; i++) {
		const struct jd_worker *w = &p->workers[i];
		struct jd_worker_stats s = {
			.tasks_run = atomic_load_explicit(&w->tasks_run, memory_order_relaxed),
			.steals = atomic_load_explicit(&w->steals, memory_order_relaxed),
			.parks = atomic_load_explicit(&w->parks, memory_order_relaxed),
			.feeds = atomic_load_explicit(&w->feeds, memory_order_relaxed),
			.busy_ns = atomic_load_explicit(&w->busy_ns, memory_order_relaxed),
			.grace_yields = atomic_load_explicit(&w->grace_yields, memory_order_relaxed),
			.fibers_in_use =
				atomic_load_explicit(&w->fibers_in_use, memory_order_relaxed),
			.fibers_suspended =
				atomic_load_explicit(&w->fibers_suspended, memory_order_relaxed),
		};
		out->tasks_run += s.tasks_run;
		out->steals += s.steals;
		out->parks += s.parks;
		out->feeds += s.feeds;
		out->busy_ns += s.busy_ns;
		out->grace_yields += s.grace_yields;
		out->fibers_in_use += s.fibers_in_use;
		out->fibers_suspended += s.fibers_suspended;
		if (per_worker && i < n)
			per_worker[i] = s;
	}
	out->dropped = atomic_load_explicit(&p->dropped, memory_order_relaxed);
	out->fiber_exhausted = atomic_load_explicit(&p->fiber_exhausted, memory_order_relaxed);
	out->fibers = p->fclass[0].count;
	out->large_fibers = p->fclass[1].count;
	return (int)p->nworkers;
}
