/* daemon/net/op_hook.c: the `hook` operation: the submitting client, which runs a job's
 * completion hooks (its spec's on_exit and notify) once the job has ended, claims the run
 * and reports how it went.  The daemon only keeps the hooks' state in the job's record
 * (and journal): it never runs them and the job's own result never changes for them.
 *
 * A claim ("running") is granted once: to the first client that asks while the hooks are
 * pending, or again when an earlier claim is older than twice the hooks' time limit plus
 * 10 s (its runner died without reporting: a client that lost its connection, a machine
 * that restarted), so a hook is run at most once while its runner lives and is never
 * lost with it.
 */
#include <string.h>

#include "daemon/core/clock.h"
#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/net/session.h"

static void reply_hooks(struct jd_conn *c, int64_t id, const struct jd_job *j, int claimed)
{
	json_t *h = jd_hook_json(j->hook), *body;

	if (!h) {
		jd__reply_error(c, id, JSCHED_ENOMEM, NULL, "out of memory");
		return;
	}
	body = json_pack("{s:o}", "hooks", h);
	if (body && claimed >= 0)
		json_object_set_new(body, "claimed", json_boolean(claimed));
	jd_reply_ok(c, id, body);
}

void jd__op_hook(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job *j = jd__find_owned(c, r->id, jp_req_int(r, "job", 0), "job");
	const char *st = jp_req_str(r, "state", "");
	uint64_t now = jd_now_ms();
	struct jd_hook *h;

	if (!j)
		return;
	if (j->uid != c->uid) {
		/* An admin reads every job, but a hook runs as its submitter only. */
		jd__reply_error(c, r->id, JSCHED_EPERMISSION_DENIED, "job",
				"job %llu's hooks are run by its owner (uid %u)",
				(unsigned long long)j->id, (unsigned)j->uid);
		return;
	}
	if (!(h = j->hook)) {
		jd__reply_error(c, r->id, JSCHED_ENOT_SUPPORTED, "job",
				"job %llu has no hooks (on_exit or notify)", (unsigned long long)j->id);
		return;
	}
	if (!jd_state_final(j->state)) {
		jd__reply_error(c, r->id, JSCHED_EPROTOCOL, "job",
				"job %llu has not ended (%s): its hooks run once it has",
				(unsigned long long)j->id, jd_state_name(j->state));
		return;
	}
	if (strcmp(st, "running") == 0) {
		uint64_t stale = 2ull * h->timeout_ms + 10000u;
		bool ok = h->state == JD_HOOK_PENDING ||
			  (h->state == JD_HOOK_RUNNING && now - h->claimed_ms > stale);

		if (ok)
			jd_job_hook_set(c->d->jobs, j, JD_HOOK_RUNNING, -1, 0, NULL, now);
		reply_hooks(c, r->id, j, ok);
		return;
	}
	if (h->state == JD_HOOK_SUCCEEDED || h->state == JD_HOOK_FAILED) {
		jd__reply_error(c, r->id, JSCHED_EPROTOCOL, "state",
				"job %llu's hooks were reported already (%s)", (unsigned long long)j->id,
				h->state == JD_HOOK_SUCCEEDED ? "succeeded" : "failed");
		return;
	}
	jd_job_hook_set(c->d->jobs, j, strcmp(st, "succeeded") == 0 ? JD_HOOK_SUCCEEDED : JD_HOOK_FAILED,
			(int)jp_req_int(r, "exit_code", -1), (int)jp_req_int(r, "signal", 0),
			jp_req_str(r, "reason", NULL), now);
	reply_hooks(c, r->id, j, -1);
}
