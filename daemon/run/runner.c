/* daemon/run/runner.c: the fair layer and the pool, and the notices between workers and the
 * loop thread (see runner.h for the shape).
 *
 * A job's life across threads:
 *   loop thread   jd_fair_admit (jobs.c)                      state queued
 *   worker        feeder -> jd_fair_take -> run_job:
 *                   push START, run the handler, jd_fair_complete, push DONE
 *   loop thread   notices_cb: START -> running; DONE -> final state; then settle
 * The worker owns the job's "worker" fields between its START and its DONE; the release
 * of the push and the acquire of the take hand them over.  After pushing DONE the worker
 * never touches the job again (the loop thread may free it).
 *
 * Plain commands (class cls_exec) skip the workers: the loop thread takes them in
 * jd_runner_flush_kicks (start_commands) and starts them itself, and command_ended
 * completes them there; a feeder that takes one hands it over (exec.c).  Commands with
 * declared needs slot in at run_job: their handler, jd_exec_handler, runs on a fiber that
 * asks the loop thread to start the command (a request the other way, through the
 * process machinery's own uv_async, exec.c) and suspends on an event set when it has
 * ended.
 *
 * What a job needs while it runs is the fair layer's to count, so that a job that cannot
 * run yet stays in its client's queue under priorities, deadlines and the policy: three
 * resources, "process" (exec.max_processes), "fiber" (the pool's standard fibers) and
 * "call_fiber" (the fibers less those kept for commands, fiber_reserve), and two needs
 * classes, a command (a process slot and a fiber: its fiber waits for the process) and a
 * suspending call (a fiber and a call fiber).  So one client's sleepers can hold every
 * call fiber but never the fibers another's commands need.  Plain calls need neither.  A job takes its
 * units at dispatch and gives them back at jd_fair_complete; when that made room for a
 * job that had to wait, the worker notifies the pool, whose feeder then takes it.
 */
#include "daemon/run/runner.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/core/clock.h"
#include "daemon/core/log.h"
#include "daemon/core/wake.h"
#include "daemon/run/backend.h"
#include "daemon/run/handler.h"
#include "jsched/error.h"
#include "proto/jproto.h"

#define FEED_BATCH_MAX 16
#define JD_FEED_BATCH 2	/* jobs a worker takes from the fair layer at a time */

static struct jd_job *job_of(struct jd_fair_job *fj)
{
	return ((struct jd_job_run *)(void *)((char *)fj - offsetof(struct jd_job_run, fj)))
		->n_start.job;
}

/* send_wake: wake the loop for the notices: by the runner's own eventfd where the
 * loop is put ahead of the workers, else by libuv's uv_async (runner.h: own_wake says
 * why).  Any thread. */
static void send_wake(struct jd_runner *r)
{
	if (r->own_wake)
		jd_wake_send(&r->wake);
	else
		uv_async_send(&r->async);
}

/* Which ends wake the loop.  A worker's notice joins the list at once, but wakes the loop
 * only when something waits for it; the rest ride the next wake-up, or the next request,
 * whose handling takes the list first (jd_runner_drain from net/server.c), so no reply
 * reads a state the workers have moved past.  A START never wakes the loop (its RUNNING
 * state is only read by requests and watches).  An end wakes it when:
 *   - the loop asked for it (jd_runner_want_end: the job's DONE notice carries the bit):
 *     a wait on it (for a wait of all of many jobs, one of them at a time, net/op_wait.c),
 *     a dependent's gate, a cancel;
 *   - the completion made room for a job that had to wait (a slot, a fiber, a client's
 *     max_running: the loop may start a command or an inline job in it);
 *   - it is a command's (a fiber's) or an array element's (the parent releases the next);
 *   - the loop asked for every notice (jd_runner_eager: a watch stream, a shutdown);
 *   - an expiry found by a worker.
 * Notices that wake no one are taken by the next request (every request's handling takes
 * the list first), the next wake-up, or the sweep (runner.h): 10 ms after the list was
 * last found non-empty, then at doubling delays up to 1 s while jobs are queued or
 * running, so an end nobody waits for reaches its final state, the journal and retention
 * within that.  (The journal's promise is about what a client was told: such an end was
 * told to no one.)
 * Why: with the loop ahead of the workers (worker_scheduling "low") every wake-up
 * preempts a worker, and one per notice cost 10 us jobs 2.2-2.4 context switches and twice
 * the loop's CPU per job (daemon/README.md, "The loop thread's CPU").
 *
 * The bit's handshake: the worker sets PUSHED with one fetch-or before it pushes the DONE
 * (after the push the job may be freed), the loop sets WANT with one; whichever comes
 * second sees the other.  A loop that finds PUSHED may be early: the push itself may not
 * have happened yet, so it makes every push wake it until that DONE is taken (RACED, a
 * unit of `eager`) and wakes itself if the list is not empty: the worker's push and its
 * read of `eager`, the loop's raise of `eager` and its read of the list are sequentially
 * consistent, so one of the two sees the other. */
enum { JD_END_WANT = 1, JD_END_PUSHED = 2, JD_END_RACED = 4 };

/* wake_loop: wake the loop unless a wake-up is already on its way (`woken`: set by the
 * sender, cleared by the loop before it takes the list, so a push before the clear is in
 * the list the loop takes).  Any thread. */
static void wake_loop(struct jd_runner *r)
{
	if (atomic_exchange_explicit(&r->woken, true, memory_order_seq_cst))
		return;
	atomic_fetch_add_explicit(&r->wakeups, 1, memory_order_relaxed);
	send_wake(r);
	/* The loop thread is runnable now: a worker that finds nothing to do yields to it
	 * once instead of spinning its grace on a CPU the loop may wait for. */
	if (r->pool)
		jd_pool_want_cpu(r->pool);
}

static void push(struct jd_runner *r, struct jd_notice *n, uint8_t what)
{
	struct jd_notice *old = atomic_load_explicit(&r->notices, memory_order_relaxed);

	n->what = what;
	do {
		n->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&r->notices, &old, n, memory_order_seq_cst,
							memory_order_relaxed));
}

static bool eager(struct jd_runner *r)
{
	return atomic_load_explicit(&r->eager, memory_order_seq_cst) != 0;
}

/* push_start: job j started on a worker.  Any thread. */
static void push_start(struct jd_runner *r, struct jd_job *j)
{
	push(r, &j->run->n_start, JD_NOTICE_START);
	if (eager(r))
		wake_loop(r);
}

/* push_end: job j ended on a worker (DONE), or a worker found it expired (EXPIRED);
 * `room`: its completion made room for a job that had to wait.  j is not touched after
 * the push.  Any thread. */
static void push_end(struct jd_runner *r, struct jd_job *j, uint8_t what, bool room)
{
	bool wake = room || what == JD_NOTICE_EXPIRED || j->exec || j->elem_of;
	uint8_t f = atomic_fetch_or_explicit(&j->run->n_done.flags, JD_END_PUSHED, memory_order_seq_cst);

	push(r, &j->run->n_done, what);
	if (wake || (f & JD_END_WANT) || eager(r))
		wake_loop(r);
}

void jd_runner_eager(struct jd_runner *r, int delta)
{
	if (delta < 0) {
		atomic_fetch_sub_explicit(&r->eager, 1, memory_order_seq_cst);
		return;
	}
	atomic_fetch_add_explicit(&r->eager, 1, memory_order_seq_cst);
	/* Notices pushed before: taken at the next iteration. */
	if (atomic_load_explicit(&r->notices, memory_order_seq_cst))
		wake_loop(r);
}

void jd_runner_want_end(struct jd_runner *r, struct jd_job *j)
{
	if (!j->run)
		return; /* ended and settled: nothing will come */
	uint8_t f = atomic_fetch_or_explicit(&j->run->n_done.flags, JD_END_WANT, memory_order_seq_cst);

	if (!(f & JD_END_PUSHED) || (f & JD_END_RACED))
		return; /* the worker will see WANT; or this race is counted already */
	atomic_fetch_or_explicit(&j->run->n_done.flags, JD_END_RACED, memory_order_relaxed);
	r->raced++;
	jd_runner_eager(r, 1);
}

/* end_taken: the loop took j's DONE (or EXPIRED): its PUSHED and RACED bits go (a retried
 * job runs again), WANT stays (what waited for it may wait for the next attempt). */
static void end_taken(struct jd_runner *r, struct jd_job *j)
{
	uint8_t f = atomic_load_explicit(&j->run->n_done.flags, memory_order_relaxed);

	if (f & JD_END_RACED) {
		r->raced--;
		jd_runner_eager(r, -1);
	}
	atomic_store_explicit(&j->run->n_done.flags, (uint8_t)(f & JD_END_WANT), memory_order_relaxed);
}

/* keep_result: keep a handler's result (stolen) as text in j->run->run_value (the record's, the
 * journal's): made where the handler ran, and the handler's tree freed there too.  A tree
 * jansson cannot write (a string that is not UTF-8, made by a module with
 * json_stringn_nocheck) fails the job rather than leaving a record that cannot be sent.
 * Returns the job's code: rc, or JSCHED_EINVAL for such a tree. */
static int keep_result(struct jd_job *j, int rc, json_t *value)
{
	if (!value)
		return rc;
	j->run->run_value = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
	j->run->run_value_len = j->run->run_value ? strlen(j->run->run_value) : 0;
	json_decref(value);
	if (!j->run->run_value && rc == 0) {
		rc = JSCHED_EINVAL;
		if (!j->run->run_error)
			j->run->run_error = strdup("its result cannot be written as JSON text");
	}
	return rc;
}

static size_t feed_jobs(struct jd_runner *r, struct jd_fair_job *done, bool *room,
			struct jd_task_spec *out, size_t max);

/* A job that has ended, for the feeder that completes it (feeder_completing). */
struct ended {
	struct jd_runner *r;
	struct jd_fair_job *fj;
	bool room;
};

static size_t feeder_completing(void *ctx, struct jd_task_spec *out, size_t max)
{
	struct ended *e = ctx;

	return feed_jobs(e->r, e->fj, &e->room, out, max);
}

/* run_job: a pool task: run one call job's handler.  Worker thread (or fiber). */
static void run_job(void *arg)
{
	struct jd_job *j = arg;
	struct jd_runner *r = j->run->runner;
	struct jsched_task t;
	struct jd_fair_job *fjp = &j->run->fj;
	json_t *value = NULL;
	int rc;

	j->run->run_started_ns = jd_now_ns();
	j->run->run_started_ms = jd_now_ms();
	push_start(r, j);
	jd_task_begin(&t, j, r->pool, &r->exec, j->run->run_started_ns);
	if (jd_cancel_fired(&j->run->ctok))
		rc = JSCHED_ECANCELLED;
	else
		rc = j->handler->fn(&t, j->args, &value);
	fjp->run_ns = jd_task_end(&t, &j->run->run_finished_ns);
	j->run->run_rc = keep_result(j, rc, value);
	/* The job's completion in the fair layer.  Where this worker takes its next jobs from
	 * the fair layer as soon as this one returns, it does both under one lock (the
	 * feeder's take, in fair order as ever: jd_pool_feed_here); else it completes alone.
	 * A freed slot or fiber, or a client back under its limit: a worker that found
	 * nothing to take must look again (the pool calls the feeder only when told). */
	struct ended e = {.r = r, .fj = fjp};

	if (!jd_pool_feed_here(r->pool, feeder_completing, &e))
		e.room = jd_fair_complete(r->fair, &fjp, 1);
	if (e.room)
		jd_pool_notify(r->pool);
	push_end(r, j, JD_NOTICE_DONE, e.room);
}

/* feed_jobs: the next jobs in fair order for an idle worker, as tasks in out (only jobs
 * whose process slot and fiber are free: the fair layer counts them).  With `done`, that
 * job's completion first, under the same lock (*room: what jd_fair_complete says). */
static size_t feed_jobs(struct jd_runner *r, struct jd_fair_job *done, bool *room,
			struct jd_task_spec *out, size_t max)
{
	struct jd_fair_job *fjs[FEED_BATCH_MAX];
	size_t n, k = 0, want;

	if (max > FEED_BATCH_MAX)
		max = FEED_BATCH_MAX;

	/* Jobs that go to Slurm leave no task: take on while the fair layer gives as many
	 * as asked, so that returning less than max still means "nothing more". */
	do {
		want = max - k;
		if (done) {
			n = jd_fair_complete_take(r->fair, &done, 1, fjs, want, room);
			done = NULL;
		} else {
			n = jd_fair_take(r->fair, fjs, want);
		}
		for (size_t i = 0; i < n; i++) {
			struct jd_job *j = job_of(fjs[i]);

			if (jd_backend_take(r, j))
				continue; /* handed to the loop thread (backend.h): no worker */
			if (j->exec && j->cls == r->cls_exec && jd_exec_hand_over(&r->exec, j))
				continue; /* a command, started by the loop thread (exec.c) */
			j->run->runner = r;
			out[k++] = (struct jd_task_spec){
				.fn = run_job,
				.arg = j,
				.flags = (j->handler->flags & JSCHED_HANDLER_SUSPENDS) ? JD_TASK_FIBER : 0,
			};
		}
	} while (n == want && k < max);
	return k;
}

/* feeder: the pool's hook: hand an idle worker the next jobs in fair order. */
static size_t feeder(void *ctx, struct jd_task_spec *out, size_t max)
{
	return feed_jobs(ctx, NULL, NULL, out, max);
}

/* job_class: jd_runner_job_class's class (amount[] set for a counted command). */
static uint8_t job_class(struct jd_runner *r, const struct jd_job *j,
			 uint32_t amount[JD_FAIR_AMOUNTS])
{
	int remote = jd_backend_class(r, j);

	if (remote >= 0)
		return (uint8_t)remote; /* a Slurm job: one unit of the window */
	if (j->exec && jd_resources_counted(&j->exec->spec)) {
		/* Loop thread (at submit and recovery): the set's class, made if need be; a
		 * set that cannot have one keeps the commands' class and fails at spawn. */
		int cls = jd_resources_class(&r->resources, &j->exec->spec, amount);

		return cls >= 0 ? (uint8_t)cls : r->cls_exec;
	}
	if (j->exec)
		return r->cls_exec;
	if (j->handler->flags & JSCHED_HANDLER_SUSPENDS)
		return r->cls_fiber;
	return (j->handler->flags & JSCHED_HANDLER_INLINE) ? r->cls_inline : 0;
}

void jd_runner_job_class(struct jd_runner *r, struct jd_job *j)
{
	uint32_t amount[JD_FAIR_AMOUNTS] = {0};

	j->cls = job_class(r, j, amount);
	memcpy(j->amount, amount, sizeof(amount));
}

void jd_runner_wake(struct jd_runner *r)
{
	unsigned w = jd_pool_workers(r->pool);

	for (unsigned i = 0; i < w; i++)
		jd_pool_notify(r->pool);
}

static void wake_hook(void *ctx)
{
	struct jd_runner *r = ctx;

	r->kicks++; /* a command may fit now: the loop thread's flush takes it */
	jd_runner_wake(r);
}

/* command_ended: the process machinery's hook: a command started without a fiber
 * (start_commands, or handed over by a feeder) has ended: its units go back to the fair
 * layer, then its final state, as a fiber's completion and DONE notice would do; the
 * kick makes the flush after this settle take the next command.  Loop thread. */
static void command_ended(void *ctx, struct jd_job *j)
{
	struct jd_runner *r = ctx;
	struct jd_fair_job *fjp = &j->run->fj;

	j->run->run_finished_ns = jd_now_ns();
	/* Charged its wall time, as jd_task_end charges a fiber's command. */
	fjp->run_ns = j->exec->res.run_ns;
	(void)jd_fair_complete(r->fair, &fjp, 1);
	jd_exec_job_done(&r->exec, j);
	r->kicks++;
}

/* The pool's standard fibers: what a fiber-needing job may count on. */
static uint32_t pool_fibers(struct jd_pool *pool)
{
	struct jd_pool_stats ps;

	jd_pool_stats(pool, &ps, NULL, 0);
	return ps.fibers;
}

/* fiber_reserve: the fibers kept for commands: as many as may run at once
 * (exec.max_processes), at most half of them, so that suspending calls keep the rest. */
static uint32_t fiber_reserve(const struct jd_runner *r)
{
	uint32_t fibers = pool_fibers(r->pool), procs = r->env.cfg->exec.max_processes;

	return procs < fibers / 2 ? procs : fibers / 2;
}

/* capacities: the three resources and the two needs classes (see the top). */
static int capacities(struct jd_runner *r)
{
	uint32_t need[JD_FAIR_MAX_RES] = {0};
	int proc, fiber, call, cls;

	proc = jd_fair_resource_add(r->fair, "process", r->env.cfg->exec.max_processes);
	fiber = jd_fair_resource_add(r->fair, "fiber", pool_fibers(r->pool));
	r->fibers_reserved = fiber_reserve(r);
	call = jd_fair_resource_add(r->fair, "call_fiber", pool_fibers(r->pool) - r->fibers_reserved);
	if (proc < 0 || fiber < 0 || call < 0)
		return proc < 0 ? proc : fiber < 0 ? fiber : call;
	r->res_proc = proc;
	r->res_fiber = fiber;
	r->res_call_fiber = call;
	/* The process slots count in dominant shares (a command holds one of them); the
	 * fibers and call fibers do not (internal limits). */
	jd_fair_resource_share(r->fair, proc, true);
	need[fiber] = 1;
	need[call] = 1;
	if ((cls = jd_fair_class_add(r->fair, need)) < 0)
		return cls;
	r->cls_fiber = (uint8_t)cls;
	need[call] = 0;
	need[proc] = 1;
	if ((cls = jd_fair_class_add(r->fair, need)) < 0)
		return cls;
	r->cls_exec = (uint8_t)cls;
	/* Inline handlers' jobs need nothing, as plain calls, but have a class of their
	 * own: the loop thread takes those alone (run_inline). */
	memset(need, 0, sizeof(need));
	if ((cls = jd_fair_class_add_own(r->fair, need)) < 0)
		return cls;
	r->cls_inline = (uint8_t)cls;
	return 0;
}

/* final_cb: the fair layer's hook.  `dispatched` needs nothing (the worker reports the
 * start).  The others end the job: at once on the loop thread (cancel, drain, expire,
 * a drop inside an admission), or through a notice from a worker (an expiry found by
 * jd_fair_take). */
static void final_cb(struct jd_fair_job *fj, enum jd_fair_final state, void *udata)
{
	struct jd_runner *r = udata;
	struct jd_job *j = job_of(fj);

	if (state == JD_FAIR_DISPATCHED)
		return;
	if (!pthread_equal(pthread_self(), r->loop_thread)) {
		push_end(r, j, JD_NOTICE_EXPIRED, false);
		return;
	}
	r->ended_here = true;
	switch (state) {
	case JD_FAIR_CANCELLED:
		jd_job_finish_stopped(r->env.jobs, j, false);
		break;
	case JD_FAIR_EXPIRED:
		jd_job_finish(r->env.jobs, j, JD_EXPIRED, JP_CAUSE_DEADLINE, "not started before its deadline");
		break;
	case JD_FAIR_DROPPED:
		jd_job_finish(r->env.jobs, j, JD_DROPPED, JP_CAUSE_OVERFLOW,
			      "dropped by its client's overflow strategy");
		break;
	default:
		break;
	}
}

/* wake_cb: the fair layer's: a blocked client has room (taken after the notices). */
static void wake_cb(void *udata)
{
	wake_loop(udata);
}

/* done: a DONE notice: the job's final state from its handler's return. */
static void done(struct jd_runner *r, struct jd_job *j)
{
	int rc = j->run->run_rc;
	char why[160];

	if (j->exec) {
		jd_exec_job_done(&r->exec, j);
		return;
	}
	jd_job_set_running(r->env.jobs, j);
	j->value = j->run->run_value;
	j->value_len = j->run->run_value_len;
	j->run->run_value = NULL;
	if (rc == 0) {
		jd_job_finish(r->env.jobs, j, JD_SUCCEEDED, JP_CAUSE_NONE, NULL);
	} else if (rc == JSCHED_ECANCELLED && jd_job_stop_asked(r->env.jobs, j)) {
		jd_job_finish_stopped(r->env.jobs, j, true);
	} else {
		snprintf(why, sizeof(why), "handler %s failed: %s", j->handler->name,
			 j->run->run_error ? j->run->run_error : jp_error_name(rc) ? jp_error_name(rc)
									 : "error");
		jd_job_finish(r->env.jobs, j, JD_FAILED, JP_CAUSE_HANDLER, why);
	}
	/* Its FINAL record has the text (the durable copy): a large one leaves memory. */
	jd_job_value_spill(r->env.jobs, j);
}

#define SWEEP_FIRST_MS 10
#define SWEEP_MAX_MS 1000

static void sweep_cb(uv_timer_t *t);

/* sweep_arm: (re)arm the sweep for ms from now.  Loop thread. */
static void sweep_arm(struct jd_runner *r, uint64_t ms)
{
	/* Not under the test clock: there a notice reaches the loop by a wake-up or a
	 * request only, so a test sees a skipped wake-up (tests/daemon/test_daemon_wake.c). */
	if (jd_clock_test_on())
		return;
	r->sweep_ms = ms;
	uv_timer_start(&r->sweep, sweep_cb, ms, 0);
}

static void take_notices(struct jd_runner *r);

/* sweep_cb: take what is in the list; with nothing there, look again later (twice as
 * late) while jobs may still end on a worker, else stop until a job is queued. */
static void sweep_cb(uv_timer_t *t)
{
	struct jd_runner *r = t->data;
	const struct jd_jobs *jobs = r->env.jobs;

	uint64_t last = r->sweep_ms;

	jd_loop_woke();
	r->sweep_ms = 0;
	if (atomic_load_explicit(&r->notices, memory_order_relaxed) && !r->draining) {
		r->swept++;
		take_notices(r); /* re-arms */
		return;
	}
	if (jobs->by_state[JD_QUEUED] + jobs->by_state[JD_RUNNING] > 0)
		sweep_arm(r, 2 * last < SWEEP_MAX_MS ? 2 * last : SWEEP_MAX_MS);
}

/* take_notices: the loop thread takes every notice pushed so far, then settles. */
static void take_notices(struct jd_runner *r)
{
	struct jd_notice *n = atomic_exchange_explicit(&r->notices, NULL, memory_order_seq_cst);
	struct jd_notice *fifo = NULL;
	struct jd_fair_client *unblocked[32];
	size_t nu;

	r->draining = true;
	/* The list is newest first; reverse it so each job's START precedes its DONE. */
	while (n) {
		struct jd_notice *next = n->next;

		n->next = fifo;
		fifo = n;
		n = next;
	}
	if (fifo) {
		r->batches++;
		if (r->sweep_ms != SWEEP_FIRST_MS)
			sweep_arm(r, SWEEP_FIRST_MS);
	}
	for (n = fifo; n;) {
		struct jd_notice *next = n->next; /* read before the job can be settled */

		r->noticed++;
		switch (n->what) {
		case JD_NOTICE_START:
			jd_job_set_running(r->env.jobs, n->job);
			break;
		case JD_NOTICE_DONE:
			end_taken(r, n->job);
			done(r, n->job);
			break;
		case JD_NOTICE_EXPIRED:
			end_taken(r, n->job);
			jd_job_finish(r->env.jobs, n->job, JD_EXPIRED, JP_CAUSE_DEADLINE,
				      "not started before its deadline");
			break;
		}
		n = next;
	}
	while ((nu = jd_fair_unblocked(r->fair, unblocked, 32)) > 0)
		for (size_t i = 0; i < nu; i++)
			r->env.unblocked(r->env.ctx, jd_fair_client_udata(unblocked[i]));
	jd_jobs_settle(r->env.jobs);
	r->draining = false;
}

/* notices_cb: a wake-up: the flag first (a push after this wakes the loop again), then
 * the list. */
static void notices_cb(struct jd_runner *r)
{
	jd_loop_woke();
	atomic_store_explicit(&r->woken, false, memory_order_seq_cst);
	if (r->pool)
		jd_pool_got_cpu(r->pool);
	if (!r->draining)
		take_notices(r);
}

void jd_runner_drain(struct jd_runner *r)
{
	if (r->draining || !atomic_load_explicit(&r->notices, memory_order_relaxed))
		return;
	r->drained++;
	take_notices(r);
}

static void own_wake_cb(struct jd_wake *w)
{
	notices_cb(w->data);
}

static void async_cb(uv_async_t *h)
{
	notices_cb(h->data);
}

static void fair_config(const struct jd_config *c, struct jd_fair_config *fc)
{
	enum jd_fair_policy p = JD_FAIR_POLICY_FAIR;

	jd_fair_policy_parse(jd_policy_conf_name(c->policy), &p);
	fc->policy = p;
	fc->drr_quantum = c->quantum;
	fc->window_ns = (uint64_t)c->fair_window_ms * 1000000ull;
	/* Dominant resource fairness: the unit is one process slot's share, so a command
	 * that needs no named resource (and every call) is charged its time as before; a
	 * command holding 1 of 2 GPUs, half of them, is charged as max_processes / 2 such
	 * commands. */
	fc->drf_base = c->fair_drf && c->exec.max_processes ? 1.0 / c->exec.max_processes : 0;
	fc->backfill_max = c->backfill_max ? c->backfill_max : UINT32_MAX;
}

static void deadline_cb(uv_timer_t *t)
{
	struct jd_runner *r = t->data;

	jd_fair_expire(r->fair);
	jd_jobs_settle(r->env.jobs);
	jd_runner_arm_deadline(r);
}

void jd_runner_arm_deadline(struct jd_runner *r)
{
	uint64_t next = jd_fair_next_deadline(r->fair), now = jd_now_ns();

	if (next == UINT64_MAX) {
		uv_timer_stop(&r->deadline);
		return;
	}
	/* Round up: firing a little late expires the job; firing early would re-arm. */
	uv_timer_start(&r->deadline, deadline_cb, next > now ? (next - now + 999999) / 1000000 : 0,
		       0);
}

/* struct sched_attr_v1: the kernel's struct sched_attr (<linux/sched/types.h> cannot be
 * included beside <sched.h>), for sched_setattr(2). */
struct sched_attr_v1 {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

#define SCHED_RESET_ON_FORK_FLAG 0x01u

/* LOOP_AHEAD: how many nice levels the loop thread is put ahead of the workers by
 * `worker_scheduling` "low" (a weight ratio of about 9: daemon/README.md "The loop
 * thread's CPU"). */
#define LOOP_AHEAD 10

/* loop_ahead: put the calling thread (the loop's, before the pool exists) LOOP_AHEAD nice
 * levels below its nice of 0, with reset-on-fork so that the threads and processes it
 * starts afterwards (workers, commands) get nice 0 back.  Only from nice 0 (reset-on-fork
 * would give any other nice's children 0) and where the kernel allows a lower nice
 * (CAP_SYS_NICE or RLIMIT_NICE).  Returns whether it did. */
static bool loop_ahead(void)
{
	struct sched_attr_v1 a = {.size = sizeof(a)};
	int policy = sched_getscheduler(0);

	errno = 0;
	if (policy != SCHED_OTHER || getpriority(PRIO_PROCESS, 0) != 0 || errno)
		return false;
	a.policy = SCHED_OTHER;
	a.flags = SCHED_RESET_ON_FORK_FLAG;
	a.nice = -LOOP_AHEAD;
	return syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

/* worker_priority: what `worker_scheduling` (config.h) makes of the workers and the loop
 * thread (the caller); *how gets the pool's setting, r->priority the words for it.  "low"
 * puts the workers at +10 also where the loop thread could take -10: then a client's own
 * process at nice 0 is ahead of the jobs too, not only the loop (daemon/README.md, "The
 * loop thread's CPU": a light client under a flood waited 38-44 us on a run queue per
 * round trip with the workers at 0, 7-27 us with them at +10). */
static void worker_priority(struct jd_runner *r, unsigned conf, enum jd_worker_sched *how)
{
	switch (conf) {
	case JD_WORKER_LOW:
		if (loop_ahead()) {
			*how = JD_WORKER_LOW;
			r->priority = "loop thread at nice -10, workers at nice +10";
		} else {
			*how = JD_WORKER_LOW;
			r->priority = "workers at nice +10";
		}
		return;
	case JD_WORKER_BATCH:
		*how = JD_WORKER_BATCH;
		r->priority = "workers SCHED_BATCH";
		return;
	case JD_WORKER_IDLE:
		*how = JD_WORKER_IDLE;
		r->priority = "workers SCHED_IDLE";
		return;
	default:
		*how = JD_WORKER_NORMAL;
		r->priority = "none";
	}
}

int jd_runner_start(struct jd_runner *r, const struct jd_runner_env *env, char *err,
		    size_t errlen)
{
	const struct jd_config *cfg = env->cfg;
	struct jd_exec_env xe;
	struct jd_fair_config fc = {0};
	struct jd_pool_config pc;
	int rc;

	r->env = *env;
	r->loop_thread = pthread_self();
	atomic_init(&r->notices, NULL);
	atomic_init(&r->wakeups, 0);
	atomic_init(&r->woken, false);
	atomic_init(&r->eager, 0);
	uv_timer_init(env->loop, &r->deadline);
	r->deadline.data = r;
	uv_timer_init(env->loop, &r->sweep);
	r->sweep.data = r;
	r->sweep_ms = 0;
	/* The wake-up's kind follows worker_scheduling (runner.h, own_wake). */
	r->own_wake = cfg->worker_sched != JD_WORKER_NORMAL;
	r->wake.fd = -1;
	r->wake.data = r;
	r->async.data = r;
	if ((rc = r->own_wake ? jd_wake_init(env->loop, &r->wake, own_wake_cb)
			      : uv_async_init(env->loop, &r->async, async_cb)) < 0) {
		snprintf(err, errlen, "cannot make the workers' wake-up of the loop: %s",
			 uv_strerror(rc));
		return rc;
	}
	fair_config(cfg, &fc);
	fc.final_cb = final_cb;
	fc.wake_cb = wake_cb;
	fc.udata = r;
	if ((rc = jd_fair_new(&fc, &r->fair)) < 0) {
		snprintf(err, errlen, "cannot create the admission layer: %s",
			 jp_error_name(rc) ? jp_error_name(rc) : "?");
		return rc;
	}
	jd_pool_config_init(&pc);
	pc.workers = cfg->workers;
	pc.idle = cfg->idle_spin ? JD_IDLE_SPIN : JD_IDLE_SLEEP;
	pc.fibers = cfg->fibers;
	pc.feeder = feeder;
	pc.feeder_ctx = r;
	/* Small batches keep the window tight: a job leaves its client's queue only when
	 * a worker is about to run it, so weights act on what actually runs. */
	pc.feed_batch = JD_FEED_BATCH;
	pc.name = "jd-work";
	worker_priority(r, cfg->worker_sched, &pc.sched);
	/* Not fibers_dontfork.  While exec jobs were started with libuv's uv_spawn (fork),
	 * each spawn copied the page tables of every mapping, 544 of 591 of them fiber
	 * stacks, and leaving the arena out of children raised 2,000 /bin/true jobs from 590
	 * to 895 jobs/s.  exec.c now uses posix_spawn (clone with CLONE_VM, nothing copied:
	 * 2,375 jobs/s), so the flag would only forbid handlers to fork() on a fiber. */
	if ((rc = jd_pool_create(&r->pool, &pc)) < 0) {
		snprintf(err, errlen, "cannot start the worker pool: %s",
			 jp_error_name(rc) ? jp_error_name(rc) : "?");
		jd_fair_free(r->fair);
		r->fair = NULL;
		return rc;
	}
	if ((rc = capacities(r)) < 0) {
		snprintf(err, errlen, "cannot set up the process slots and fibers: %s",
			 jp_error_name(rc) ? jp_error_name(rc) : "?");
		return rc;
	}
	if ((rc = jd_resources_start(&r->resources, r->fair, env->jobs, cfg, r->res_proc,
				     r->res_fiber, err, errlen)) < 0)
		return rc;
	xe = (struct jd_exec_env){.loop = env->loop, .jobs = env->jobs, .fair = r->fair, .cfg = cfg,
				  .sec = env->sec, .res_proc = r->res_proc, .cls_exec = r->cls_exec,
				  .wake = wake_hook, .wake_ctx = r, .ended = command_ended,
				  .socket_path = env->socket_path,
				  .resources = &r->resources};
	if ((rc = jd_exec_init(&r->exec, &xe)) < 0) {
		snprintf(err, errlen, "cannot set up process handling");
		return rc;
	}
	if ((rc = jd_exec_cgroups_open(&r->exec, err, errlen)) < 0)
		return rc;
	return jd_backends_start(r, err, errlen);
}

void jd_runner_stop(struct jd_runner *r)
{
	if (r->pool)
		jd_pool_destroy(r->pool, JD_SHUTDOWN_GRACEFUL);
	r->pool = NULL;
	jd_backends_stop(r);
	jd_exec_stop(&r->exec);
	/* Notices pushed by the last tasks are about jobs already final (or freed with
	 * the table); they need no processing. */
	if (r->own_wake)
		jd_wake_close(&r->wake);
	else
		uv_close((uv_handle_t *)&r->async, NULL);
	uv_close((uv_handle_t *)&r->deadline, NULL);
	uv_close((uv_handle_t *)&r->sweep, NULL);
	if (r->fair)
		jd_fair_free(r->fair);
	r->fair = NULL;
}

void jd_runner_kick(struct jd_runner *r)
{
	r->kicks++;
}

/* run_here: run call job j (taken by run_inline) on the loop thread and end it. */
static void run_here(struct jd_runner *r, struct jd_job *j)
{
	struct jd_fair_job *fjp = &j->run->fj;
	struct jsched_task t;
	json_t *value = NULL;

	j->run->runner = r;
	j->run->run_started_ns = jd_now_ns();
	j->run->run_started_ms = jd_now_ms();
	jd_task_begin(&t, j, r->pool, &r->exec, j->run->run_started_ns);
	int rc = jd_cancel_fired(&j->run->ctok) ? JSCHED_ECANCELLED : j->handler->fn(&t, j->args, &value);
	fjp->run_ns = jd_task_end(&t, &j->run->run_finished_ns);
	j->run->run_rc = keep_result(j, rc, value);
	if (jd_fair_complete(r->fair, &fjp, 1))
		jd_pool_notify(r->pool);
	done(r, j); /* running, then final: what the START and DONE notices do */
	r->inlined++;
}

/* run_inline: take inline handlers' jobs in fair order among them and run them here, at
 * most INLINE_MAX per call (the rest go to the workers, which take them as any other, so
 * a flood of them does not hold the loop from its connections).  Returns the number run.
 *
 * Why here: a noop handed to a parked worker costs a futex wake, the worker's wake-up
 * (40-70 µs on a 2-vCPU guest), an eventfd write and the loop's own wake-up for the
 * notices, against a few hundred nanoseconds to run it; and with every worker busy
 * (a flood of long jobs) it would wait behind them.  Run here, a submit's job is final
 * before the loop reads the next request. */
#define INLINE_MAX 256
static size_t run_inline(struct jd_runner *r)
{
	struct jd_fair_job *fjs[16];
	size_t ran = 0, n;

	do {
		n = jd_fair_take_classes(r->fair, fjs, 16, 1u << r->cls_inline);
		for (size_t i = 0; i < n; i++)
			run_here(r, job_of(fjs[i]));
		ran += n;
	} while (n == 16 && ran < INLINE_MAX);
	return ran;
}

/* start_commands: take plain commands (the class cls_exec: no declared needs) in fair
 * order among them and start them here, without a fiber (exec.c, "exec jobs without a
 * fiber"), while process slots are free.  Returns the number taken.  Loop thread. */
static size_t start_commands(struct jd_runner *r)
{
	struct jd_fair_job *fjs[16];
	size_t taken = 0, n;

	do {
		n = jd_fair_take_classes(r->fair, fjs, 16, 1u << r->cls_exec);
		for (size_t i = 0; i < n; i++) {
			struct jd_job *j = job_of(fjs[i]);

			j->run->runner = r;
			if (jd_backend_take(r, j))
				continue;
			if (jd_exec_start_job(&r->exec, j) < 0)
				command_ended(r, j); /* no memory: it ends failed (spawn) */
		}
		taken += n;
	} while (n != 0); /* a command that failed at once gave its slot back */
	return taken;
}

void jd_runner_flush_kicks(struct jd_runner *r)
{
	unsigned n = r->kicks, w = jd_pool_workers(r->pool);

	r->kicks = 0;
	if (n && !r->sweep_ms)
		sweep_arm(r, SWEEP_FIRST_MS); /* a worker may end it, waking no one */
	/* The jobs the loop thread runs itself first; their settling (a nested settle,
	 * whose own flush comes back here and only kicks) answers the waits on them.
	 * Commands too when any job is ready (a slot may have come back through a worker's
	 * completion, a resume or a raised cap, which kick nothing here). */
	if ((n || jd_fair_ready(r->fair)) && !r->inlining) {
		size_t ran;

		r->inlining = true;
		r->ended_here = false;
		ran = n ? run_inline(r) : 0;
		ran += start_commands(r);
		if (ran || r->ended_here)
			jd_jobs_settle(r->env.jobs);
		r->inlining = false;
		if (jd_fair_ready(r->fair) == 0)
			n = 0; /* nothing left for the workers */
	}
	for (unsigned i = 0; i < n && i < w; i++)
		jd_pool_notify(r->pool);
}

void jd_runner_cancel(struct jd_runner *r, struct jd_job *j)
{
	jd_runner_want_end(r, j); /* the canceller is told when it has stopped */
	jd_cancel_fire(&j->run->ctok);
	/* Its commands (an exec job's, or a handler's): SIGTERM to each group. */
	jd_exec_cancel(&r->exec, j, jd_job_stop_cause(r->env.jobs, j));
	jd_backend_cancel(r, j, jd_job_stop_cause(r->env.jobs, j)); /* a remote job: slurm_kill_job */
}

void jd_runner_apply_config(struct jd_runner *r)
{
	struct jd_fair_config fc = {0};

	fair_config(r->env.cfg, &fc);
	jd_fair_set_policy(r->fair, fc.policy);
	jd_fair_set_drf(r->fair, fc.drf_base);
	jd_fair_set_backfill_max(r->fair, fc.backfill_max);
	jd_fair_resource_set(r->fair, r->res_proc, r->env.cfg->exec.max_processes);
	r->fibers_reserved = fiber_reserve(r);
	jd_fair_resource_set(r->fair, r->res_call_fiber, pool_fibers(r->pool) - r->fibers_reserved);
	jd_resources_apply(&r->resources, r->env.cfg);
	jd_pool_set_idle(r->pool, r->env.cfg->idle_spin ? JD_IDLE_SPIN : JD_IDLE_SLEEP);
	jd_exec_apply_config(&r->exec);
	jd_runner_wake(r);	/* a raised cap: jobs may fit now */
}
