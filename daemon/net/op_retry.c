/* daemon/net/op_retry.c: the `retry` operation: run finished jobs again, each as a new
 * attempt of the same id (core/jobs.h, jd_job_retry).
 *
 * All or nothing, as cancel: every id must name a job the caller owns (or any, for an
 * admin) that has ended and can run again, or nothing is retried.  A job that has not
 * ended is refused (protocol_error: it will end on its own, and its retry policy, if any,
 * decides what happens then); a call job, a command whose stdin was dropped when it ended,
 * and an array are refused with not_supported (what running them needs is gone, or an
 * array's elements are not single jobs).
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/net/net.h"
#include "daemon/net/ops.h"
#include "daemon/net/session.h"

/* refusal: why j cannot be retried (0: it can), with a message in why. */
static int refusal(const struct jd_job *j, char *why, size_t len)
{
	if (!jd_state_final(j->state)) {
		snprintf(why, len, "job %llu has not ended (%s): only a finished job can run again",
			 (unsigned long long)j->id, jd_state_name(j->state));
		return JSCHED_EPROTOCOL;
	}
	if (j->arr || j->elem_of) {
		snprintf(why, len, "job %llu is a job array or one of its elements: submit the array "
			 "again", (unsigned long long)j->id);
		return JSCHED_ENOT_SUPPORTED;
	}
	if (j->kind == JD_KIND_CALL) {
		snprintf(why, len, "job %llu is a call job, whose arguments are dropped when it ends: "
			 "submit it again", (unsigned long long)j->id);
		return JSCHED_ENOT_SUPPORTED;
	}
	if (j->exec && j->exec->spec.has_stdin && j->exec->spec.stdin_len && !j->exec->spec.stdin_data) {
		snprintf(why, len, "job %llu's stdin was dropped when it ended: submit it again",
			 (unsigned long long)j->id);
		return JSCHED_ENOT_SUPPORTED;
	}
	return 0;
}

void jd__op_retry(struct jd_conn *c, const struct jp_request *r)
{
	struct jd_job **jobs;
	size_t n;
	bool single;
	json_t *arr;
	char why[200], field[32];

	if (jd__find_all_owned(c, r, &jobs, &n, &single) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		int rc = refusal(jobs[i], why, sizeof(why));

		if (rc) {
			if (single)
				snprintf(field, sizeof(field), "job");
			else
				snprintf(field, sizeof(field), "jobs[%zu]", i);
			jd__reply_error(c, r->id, rc, field, "%s", why);
			free(jobs);
			return;
		}
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		struct jd_job *j = jobs[i];
		int rc = jd_job_retry(c->d->jobs, j);

		json_array_append_new(arr, json_pack("{s:I, s:s, s:I, s:b}", "job", (json_int_t)j->id,
						     "state", jd_state_name(j->state), "attempt",
						     (json_int_t)j->n_attempts + 1, "retried", rc == 0));
	}
	free(jobs);
	jd_reply_ok(c, r->id, json_pack("{s:o}", "jobs", arr));
}
