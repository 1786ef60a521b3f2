/* daemon/run/exec.c: exec jobs and handlers' commands, the job side (see exec.h): the
 * fiber's request and wait, the exec handler and jsched_task_run, cancelling, and an exec
 * job's final state from its command's result.  A process's life is process.c; the
 * process slots are slots.c.
 */
#include "daemon/run/exec.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon/run/exec_internal.h"
#include "daemon/run/handler.h"
#include "jsched/error.h"

/* ---- the fiber's side ------------------------------------------------------------------ */

/* request_push: put p on the loop thread's request list (lock-free, from any thread) and
 * wake the loop if the list was empty; the loop takes the whole list in jd__requests_cb. */
static void request_push(struct jd_exec *x, struct jd_proc *p)
{
	struct jd_proc *old = atomic_load_explicit(&x->requests, memory_order_relaxed);

	do {
		p->req_next = old;
	} while (!atomic_compare_exchange_weak_explicit(&x->requests, &old, p, memory_order_release,
							memory_order_relaxed));
	if (!old)
		uv_async_send(&x->async);
}

/* run_wait: ask the loop thread to run spec for job j and suspend until it has ended.
 * job_slot: the job already holds a process slot (an exec job).  Returns 0 or
 * JSCHED_ENOMEM (then nothing ran).  On the job's fiber (or any worker). */
static int run_wait(struct jsched_task *t, const struct jd_exec_spec *spec,
		    struct jd_exec_result *res, bool job_slot)
{
	struct jd_exec *x = t->exec;
	struct jd_proc *p = calloc(1, sizeof(*p));
	struct jd_event done;

	if (!p)
		return JSCHED_ENOMEM;
	jd_event_init(&done);
	p->pidfd = -1;
	p->x = x;
	p->job = t->job;
	p->spec = spec;
	p->res = res;
	p->done = &done;
	p->job_slot = job_slot;
	request_push(x, p);
	jd_event_wait(&done);
	t->child_ns += res->run_ns;
	return 0;
}

static int exec_handler_fn(struct jsched_task *t, const json_t *args, json_t **result)
{
	struct jd_exec_job *x = t->job->exec;
	int rc;

	(void)args;
	*result = NULL;
	rc = run_wait(t, &x->spec, &x->res, true);
	if (rc < 0)
		return rc;
	return x->res.end == JD_EXEC_EXITED && x->res.exit_code == 0 && !x->res.stop_cause &&
			       !x->res.timed_out
		       ? 0
		       : JSCHED_EINTERNAL;
}

const struct jsched_handler jd_exec_handler = {"(exec)", exec_handler_fn, JSCHED_HANDLER_SUSPENDS};

/* strv_dup: a NULL-terminated copy of v (NULL gives an empty vector). */
static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **c;

	while (v && v[n])
		n++;
	if (!(c = calloc(n + 1, sizeof(char *))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			jd_strv_free(c);
			return NULL;
		}
	return c;
}

int jsched_task_run(struct jsched_task *t, const struct jsched_process *proc,
		    struct jsched_process_result *out)
{
	struct jd_exec_spec spec = {0};
	struct jd_exec_result res;
	int rc = JSCHED_ENOMEM;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	if (!proc || !proc->argv || !proc->argv[0] || !proc->argv[0][0]) {
		jsched_task_set_error(t, "jsched_task_run: argv[0] is required");
		return JSCHED_EINVAL;
	}
	memset(&res, 0, sizeof(res));
	spec.argv = strv_dup(proc->argv);
	spec.env = strv_dup(proc->env);
	spec.cwd = strdup(proc->cwd ? proc->cwd : "/");
	spec.has_stdin = proc->stdin_data != NULL;
	spec.stdin_len = proc->stdin_len;
	spec.timeout_ms = proc->timeout_ms;
	spec.output_bytes = proc->output_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)proc->output_bytes;
	if (spec.stdin_len && (spec.stdin_data = malloc(spec.stdin_len)))
		memcpy(spec.stdin_data, proc->stdin_data, spec.stdin_len);
	if (!spec.argv || !spec.env || !spec.cwd || (spec.stdin_len && !spec.stdin_data))
		goto out;
	if ((rc = run_wait(t, &spec, &res, false)) < 0)
		goto out;
	out->timed_out = res.timed_out;
	{
		unsigned char *o = NULL, *e = NULL;

		if (jd_exec_stream_flat(&res, 0, &o, &out->out_len, &out->out_truncated) < 0 ||
		    jd_exec_stream_flat(&res, 1, &e, &out->err_len, &out->err_truncated) < 0) {
			free(o);
			out->out_len = 0;
			rc = JSCHED_ENOMEM;
			goto out;
		}
		out->out = (char *)o;
		out->err = (char *)e;
	}
	switch (res.end) {
	case JD_EXEC_EXITED:
		out->exit_code = res.exit_code;
		break;
	case JD_EXEC_SIGNALED:
		out->signal = res.signal;
		break;
	case JD_EXEC_SPAWN_FAILED:
		jsched_task_set_error(t, res.reason);
		rc = JSCHED_EIO;
		goto out;
	default:
		break;
	}
	rc = res.stop_cause || res.end == JD_EXEC_NOT_RUN ? JSCHED_ECANCELLED : 0;
out:
	free(res.out.data);
	free(res.err.data);
	jd_outlog_clear(&res.log);
	jd_exec_spec_clear(&spec);
	return rc;
}

void jsched_process_result_free(struct jsched_process_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* ---- exec jobs without a fiber ---------------------------------------------------------
 *
 * An exec job of the plain commands' class (no declared needs) runs without a fiber: the
 * loop thread takes it from the fair layer itself when a slot is free (the runner's
 * flush, right after a command ended or a job was queued) or gets it from a worker's
 * feeder (jd_exec_hand_over), starts it, and ends it when the process has: no thread
 * hand-off between a command's end and the next one's start, where the fiber's way
 * crossed threads three times per command (a request from the fiber to the loop, the
 * wake-up of the fiber at the end, its DONE notice back to the loop) and woke a parked
 * worker each time.  Commands with declared needs, and handlers' processes, keep the
 * fiber's way (run_wait above). */

/* proc_for: a request of exec job j without a fiber, or NULL (no memory). */
static struct jd_proc *proc_for(struct jd_exec *x, struct jd_job *j)
{
	struct jd_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pidfd = -1;
	p->x = x;
	p->job = j;
	p->spec = &j->exec->spec;
	p->res = &j->exec->res;
	p->job_slot = true;
	p->on_loop = true;
	return p;
}

int jd_exec_start_job(struct jd_exec *x, struct jd_job *j)
{
	struct jd_proc *p = proc_for(x, j);

	if (!p)
		return JSCHED_ENOMEM;
	jd__proc_start(p);
	return 0;
}

bool jd_exec_hand_over(struct jd_exec *x, struct jd_job *j)
{
	struct jd_proc *p = proc_for(x, j);

	if (!p)
		return false;
	p->handed = true;
	request_push(x, p);
	return true;
}

/* ---- the loop thread's side ------------------------------------------------------------ */

int jd_exec_init(struct jd_exec *x, const struct jd_exec_env *env)
{
	int rc;

	x->loop = env->loop;
	x->jobs = env->jobs;
	x->fair = env->fair;
	x->cfg = env->cfg;
	x->sec = env->sec;
	x->res_proc = env->res_proc;
	x->cls_exec = env->cls_exec;
	x->wake = env->wake;
	x->wake_ctx = env->wake_ctx;
	x->ended = env->ended;
	x->resources = env->resources;
	snprintf(x->socket_path, sizeof(x->socket_path), "%s", env->socket_path ? env->socket_path : "");
	atomic_init(&x->requests, NULL);
	atomic_init(&x->synced, NULL);
	x->devnull = -1;
	jd_security_helper_path(x->helper, sizeof(x->helper));
	if ((rc = uv_async_init(x->loop, &x->async, jd__requests_cb)) < 0)
		return JSCHED_EINTERNAL;
	x->async.data = x;
	x->pidfds_ep = epoll_create1(EPOLL_CLOEXEC);
	if (x->pidfds_ep < 0 || uv_poll_init(x->loop, &x->pidfds, x->pidfds_ep) < 0) {
		if (x->pidfds_ep >= 0)
			close(x->pidfds_ep);
		uv_close((uv_handle_t *)&x->async, NULL);
		return JSCHED_EINTERNAL;
	}
	x->pidfds.data = x;
	uv_poll_start(&x->pidfds, UV_READABLE, jd__pidfds_cb);
	x->started = true;
	return 0;
}

void jd_exec_stop(struct jd_exec *x)
{

	if (!x->started)
		return;
	x->started = false;
	if (x->devnull >= 0)
		close(x->devnull);
	x->devnull = -1;
	jd_exec_cgroups_close(x);
	uv_close((uv_handle_t *)&x->async, NULL);
	uv_close((uv_handle_t *)&x->pidfds, NULL); /* stops the poll at once: the fd may go */
	close(x->pidfds_ep);
	x->pidfds_ep = -1;
}

void jd_exec_cancel(struct jd_exec *x, struct jd_job *j, enum jp_cause cause)
{
	struct jd_proc **pp;

	/* Handler spawns waiting for a slot end without running. */
	for (pp = &x->slot_waiters; *pp;) {
		struct jd_proc *w = *pp;

		if (w->job != j) {
			pp = &w->req_next;
			continue;
		}
		*pp = w->req_next;
		if (x->slot_waiters_tail == w) {
			x->slot_waiters_tail = NULL;
			for (struct jd_proc *q = x->slot_waiters; q; q = q->req_next)
				x->slot_waiters_tail = q;
		}
		jd__proc_not_run(w, cause);
		pp = &x->slot_waiters;
	}
	for (struct jd_proc *p = x->live; p; p = p->next)
		if (p->job == j && !p->finished) {
			p->res->stop_cause = cause;
			jd__proc_stop(p);
		}
}

static const char *sig_name(int sig)
{
	const char *s = sigabbrev_np(sig);

	return s ? s : "?";
}

void jd_exec_job_done(struct jd_exec *x, struct jd_job *j)
{
	const struct jd_exec_result *r = &j->exec->res;
	char why[320];

	jd_job_set_running(x->jobs, j);
	/* Its slot went back to the fair layer at its completion: handler spawns waiting
	 * for one may take it. */
	jd__slots_retry(x);
	if (r->end == JD_EXEC_PENDING) {
		/* The request never reached the loop (cancelled before the handler ran, or
		 * no memory for it). */
		if (jd_job_stop_asked(x->jobs, j))
			jd_job_finish_stopped(x->jobs, j, true);
		else
			jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_SPAWN, "out of memory");
	} else if (r->end == JD_EXEC_NOT_RUN || r->stop_cause) {
		jd_job_finish_stopped(x->jobs, j, true);
	} else if (r->end == JD_EXEC_SPAWN_FAILED) {
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_SPAWN, r->reason);
	} else if (r->timed_out) {
		snprintf(why, sizeof(why), "ran longer than its time limit of %llu ms",
			 (unsigned long long)j->exec->spec.timeout_ms);
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_TIMEOUT, why);
	} else if (r->usage.oom_kills && !(r->end == JD_EXEC_EXITED && r->exit_code == 0)) {
		/* The kernel killed a process of it at its group's memory limit. */
		if (r->usage.memory_max)
			snprintf(why, sizeof(why), "killed at its memory limit of %llu bytes (%llu OOM kills)",
				 (unsigned long long)r->usage.memory_max,
				 (unsigned long long)r->usage.oom_kills);
		else
			snprintf(why, sizeof(why), "killed at its client's memory limit (%llu OOM kills)",
				 (unsigned long long)r->usage.oom_kills);
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_MEMORY, why);
	} else if (r->end == JD_EXEC_SIGNALED) {
		snprintf(why, sizeof(why), "killed by signal %d (SIG%s)", r->signal, sig_name(r->signal));
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_SIGNAL, why);
	} else if (r->end == JD_EXEC_EXITED && r->exit_code == 0) {
		jd_job_finish(x->jobs, j, JD_SUCCEEDED, JP_CAUSE_NONE, NULL);
	} else if (r->end == JD_EXEC_EXITED) {
		snprintf(why, sizeof(why), "exited with status %d", r->exit_code);
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_EXIT, why);
	} else {
		jd_job_finish(x->jobs, j, JD_FAILED, JP_CAUSE_SPAWN, "the command did not run");
	}
}

json_t *jd_exec_metrics(struct jd_exec *x)
{
	struct jd_fair_stats st;

	jd_fair_stats(x->fair, JD_FAIR_METRIC_JOBS, &st);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s?, s:o}", "max_processes",
			 (json_int_t)st.res_cap[x->res_proc], "running", (json_int_t)x->running,
			 "slots_used", (json_int_t)st.res_used[x->res_proc], "queued",
			 (json_int_t)st.cls_queued[x->cls_exec], "peak_running",
			 (json_int_t)x->peak_running, "spawned", (json_int_t)x->spawned,
			 "spawn_failed", (json_int_t)x->spawn_failed, "timed_out",
			 (json_int_t)x->timed_out, "stopped", (json_int_t)x->stopped,
			 "run_as_helper", (json_int_t)x->helper_spawns, "direct",
			 (json_int_t)x->direct_spawns, "without_fiber", (json_int_t)x->on_loop,
			 "handed_over", (json_int_t)x->from_workers, "helper",
			 x->helper[0] ? x->helper : NULL, "cgroups", jd_exec_cgroups_metrics(x));
}

void jd_exec_status(struct jd_exec *x, char *buf, size_t len)
{
	struct jd_fair_stats st;

	jd_fair_stats(x->fair, JD_FAIR_METRIC_JOBS, &st);
	snprintf(buf, len, "%u processes, %llu waiting for a slot", (unsigned)x->running,
		 (unsigned long long)st.cls_queued[x->cls_exec]);
}
