/* daemon/run/slots.c: process slots for the processes call handlers start.
 *
 * At most exec.max_processes commands run at once.  A slot is a unit of the fair layer's
 * "process" resource (runner.c registers it): an exec job needs a slot and a fiber, and
 * stays in its client's fair queue, under priorities, deadlines and the policy, until
 * both are free; it holds them from its dispatch to its completion.  A process that a
 * running call handler starts (jsched_task_run) needs a slot too: it takes one from the
 * same resource here, or waits in slot_waiters (its job is running and holds a fiber),
 * first in line when one comes back: a handler's process ending (its slot goes straight
 * to the next waiter) or an exec job completing (jd__slots_retry from jd_exec_job_done).
 * The shape before kept a second queue here of exec jobs taken from the fair layer with
 * no slot free, which knew no priorities, deadlines or policy.
 */
#include "daemon/run/exec_internal.h"

static int slot_take(struct jd_exec *x)
{
	return jd_fair_resource_take(x->fair, x->res_proc, 1);
}

static void spawn_waiter(struct jd_exec *x)
{
	struct jd_proc *w = x->slot_waiters;

	x->slot_waiters = w->req_next;
	if (!x->slot_waiters)
		x->slot_waiters_tail = NULL;
	w->has_slot = true;
	jd__proc_spawn(w);
}

/* jd__slots_retry: hand the free slots to waiting handler spawns, oldest first. */
void jd__slots_retry(struct jd_exec *x)
{
	while (x->slot_waiters && slot_take(x) == 0)
		spawn_waiter(x);
}

/* jd__slot_release: a handler process's slot is free: to the next waiting handler spawn,
 * else back to the fair layer, waking the workers (a command may fit now). */
void jd__slot_release(struct jd_exec *x)
{
	if (x->slot_waiters) {
		spawn_waiter(x);
		return;
	}
	jd_fair_resource_give(x->fair, x->res_proc, 1);
	if (x->wake)
		x->wake(x->wake_ctx);
}

/* jd__slot_try: take a slot for a handler's process, or queue it behind the others. */
bool jd__slot_try(struct jd_exec *x, struct jd_proc *p)
{
	if (!x->slot_waiters && slot_take(x) == 0)
		return true;
	p->req_next = NULL;
	if (x->slot_waiters_tail)
		x->slot_waiters_tail->req_next = p;
	else
		x->slot_waiters = p;
	x->slot_waiters_tail = p;
	return false;
}

void jd_exec_apply_config(struct jd_exec *x)
{
	x->sig_known = false;	/* what a direct child resets: read again (process.c) */
	jd__slots_retry(x);	/* the runner has set the new cap: waiters first */
}
