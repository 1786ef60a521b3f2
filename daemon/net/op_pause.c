/* daemon/net/op_pause.c: the operations pause, resume, hold and release.
 *
 * pause / resume act on a client (the fair layer skips a paused client's queued jobs
 * under every policy, lets its running ones run, and gives it no credit for the pause)
 * or, with `all`, on the whole daemon.  A client may be paused by an admin, or by a
 * connection bound to that client name (the names a uid may use are the security
 * rules'); `all` is for admins.  hold / release act on queued jobs the caller owns (or
 * any, for an admin): a held job stays queued, counted and cancellable, and expires at
 * its deadline, but is not started until released, when it goes back to its place in
 * its client's order.  A scheduled job may be held too: it enters the queue held when
 * its time comes.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/core/array.h"
#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/session.h"

static void pause_or_resume(struct jd_conn *c, const struct jp_request *r, bool paused)
{
	struct jd_net *d = c->d;
	const char *name = jp_req_str(r, "client", c->client->name);
	bool all = jp_req_bool(r, "all", false), admin = jd_security_is_admin(d->sec, c->uid);
	struct jd_client *cl;

	if (all) {
		if (!admin) {
			jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "all",
					"only an admin may pause or resume every client");
			return;
		}
		jd_fair_pause(d->runner->fair, NULL, paused);
		if (!paused)
			jd_runner_wake(d->runner);
		jd_reply_ok(c, r->id, json_pack("{s:b, s:b}", "all", 1, "paused", paused));
		return;
	}
	if (!admin && strcmp(name, c->client->name) != 0) {
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "client",
				"only an admin may pause or resume client '%s' (this connection is "
				"client '%s')", name, c->client->name);
		return;
	}
	if (!(cl = jd_client_find(d->clients, name))) {
		jd__reply_error(c, r->id, JSCHED_ENO_SUCH_CLIENT, "client", "no client '%s'", name);
		return;
	}
	jd_fair_pause(d->runner->fair, cl->fc, paused);
	cl->paused = paused; /* a paused client is not forgotten (core/clients.h) */
	if (!paused)
		jd_runner_wake(d->runner);
	jd_reply_ok(c, r->id, json_pack("{s:s, s:b}", "client", cl->name, "paused", paused));
}

void jd__op_pause(struct jd_conn *c, const struct jp_request *r)
{
	pause_or_resume(c, r, true);
}

void jd__op_resume(struct jd_conn *c, const struct jp_request *r)
{
	pause_or_resume(c, r, false);
}

/* hold_or_release: each job of the request; the reply says per job whether it is held
 * now (a job not queued cannot be held: it is reported with its state, unchanged). */
static void hold_or_release(struct jd_conn *c, const struct jp_request *r, bool hold)
{
	struct jd_fair *f = c->d->runner->fair;
	struct jd_job **jobs;
	size_t n;
	bool single, released = false;
	json_t *arr;

	if (jd__find_all_owned(c, r, &jobs, &n, &single) < 0)
		return;
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		struct jd_job *j = jobs[i];

		if (j->arr) {
			/* An array: its queued elements, and those not released yet. */
			released |= jd_array_hold(c->d->jobs, j, hold) && !hold;
		} else if (j->state == JD_QUEUED && hold != j->held &&
		    (hold ? jd_fair_hold(f, &j->run->fj) : jd_fair_release(f, &j->run->fj)) == 0) {
			j->held = hold;
			released |= !hold;
		} else if (j->state == JD_SCHEDULED || j->state == JD_RETRYING) {
			j->held = hold; /* held in the queue when its time comes */
		}
		json_array_append_new(arr, json_pack("{s:I, s:s, s:b}", "job", (json_int_t)j->id,
						     "state", jd_state_name(j->state), "held",
						     (j->state == JD_QUEUED || j->state == JD_SCHEDULED ||
						      j->state == JD_RETRYING ||
						      (j->arr && !jd_state_final(j->state))) &&
							     j->held));
	}
	free(jobs);
	if (released)
		jd_runner_wake(c->d->runner);
	jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
}

void jd__op_hold(struct jd_conn *c, const struct jp_request *r)
{
	hold_or_release(c, r, true);
}

void jd__op_release(struct jd_conn *c, const struct jp_request *r)
{
	hold_or_release(c, r, false);
}
