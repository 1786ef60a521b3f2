/* daemon/net/op_submit.c: the `submit` operation: one job, a batch, or a graph, whole or not
 * at all.
 *
 * Three passes.  1: the codec parses every spec strictly and resolves refs, rejecting
 * duplicates, unknown refs and cycles (jp_submit_parse).  2: everything the daemon must
 * judge is checked before anything is created: the state of the daemon, each call's
 * handler, each dependency on an existing job (exists, retained, same uid), and room in
 * the queues.  3: the jobs are created in the codec's topological order, entered in the
 * table, linked to their dependencies and, where their gates are open, admitted to the
 * fair queues.  Only pass 3 changes anything, and it cannot fail half-way except for
 * memory (then nothing has been entered yet either).
 *
 * Idempotent submits: a spec whose `key` names a job its uid submitted with that key and
 * that is still in the table (not yet forgotten) makes no job: its id in the reply is that
 * job's, marked "existing", and specs of the message that depend on it by ref depend on
 * that job.  The spec is not compared with the first one's: the key alone decides.  Two
 * specs of one message with the same key are refused (bad_request).
 *
 * Waiting in the submit (`wait`): the pending wait (op_wait.c) is allocated and checked
 * against the wait limits in pass 2, so a submit refused for them makes nothing, and it
 * begins on the jobs made (and those a key found) before any of them is released: a job
 * that ends at its release (a dependency already failed, a deadline already past) is
 * answered like any other.  The submit's reply members then wait for the records.
 *
 * Backpressure `block`: when a client's queue is full under `block`, its next submit is
 * held (the connection stops being read) and run again when the fair layer says the
 * client has room; a submit in progress is admitted whole even past the limit.
 *
 * Slices: a batch of more than SUBMIT_SLICE call specs, read without a tree, with no
 * keys, arrays or dependencies on existing jobs, has its jobs made SUBMIT_SLICE per loop
 * iteration (the first half of pass 3, which enters nothing anywhere), its connection not
 * read meanwhile (its later requests are answered after it, in order) and every other
 * connection served between the slices (server.c's more_cb, as for a connection whose read
 * budget ran out).  After the last slice, what pass 2 judged that may have changed
 * meanwhile is judged again (the daemon's state, the journal, the handlers, the queues'
 * room, which other clients' submits between the slices may have taken), and the batch
 * is admitted whole, or refused whole with every job made discarded (their ids are never
 * used, as for any refusal after pass 3 began).  A 1,000-job batch was ~3M instructions
 * of the loop in one go (its reading 0.8M, making the jobs 0.7M, entering them 0.4M,
 * releasing them 0.6M); the reading and the entering stay whole: a frame is read at once,
 * and the jobs enter the table, the journal and the reply together.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/net.h"
#include "daemon/core/log.h"
#include "daemon/net/session.h"
#include "daemon/net/ops.h"
#include "daemon/net/record.h"
#include "daemon/core/array.h"
#include "daemon/run/backend.h"

/* SUBMIT_SLICE: the jobs of a batch made per loop iteration (about 90K instructions for
 * call jobs). */
#define SUBMIT_SLICE 128u

/* spec_path: "job" or "jobs[i]" for error fields. */
static void spec_path(const struct jp_submit *s, size_t i, const char *member, char *buf,
		      size_t len)
{
	if (s->single)
		snprintf(buf, len, "job%s%s", member ? "." : "", member ? member : "");
	else
		snprintf(buf, len, "jobs[%zu]%s%s", i, member ? "." : "", member ? member : "");
}

/* check_dep: a dependency on an existing job: it must exist, be retained and be ours. */
static bool check_dep(struct jd_conn *c, int64_t req_id, const struct jp_dep *dep,
		      const char *field)
{
	bool forgotten;
	struct jd_job *t = jd_job_get(c->d->jobs, (uint64_t)dep->job, &forgotten);

	if (t && t->uid == c->uid)
		return true;
	if (forgotten)
		jd__reply_error(c, req_id, JSCHED_EJOB_FORGOTTEN, field,
			        "dependency %lld is no longer retained", (long long)dep->job);
	else
		jd__reply_error(c, req_id, JSCHED_EUNKNOWN_DEPENDENCY, field,
			        "dependency %lld does not exist (or is not yours)",
			        (long long)dep->job);
	return false;
}

struct keyent {
	const char *key;
	size_t index;
};

static int keycmp(const void *a, const void *b)
{
	const struct keyent *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* check_keys: find the specs whose key names an existing job of the uid (made[i] set to
 * it, existing[i] true) and refuse two specs with one key (sorted: O(n log n) for the
 * largest message).  Returns the number of jobs still to make, or -1 after replying the
 * error. */
static long check_keys(struct jd_conn *c, int64_t id, const struct jp_submit *s,
		       struct jd_job **made, bool *existing)
{
	struct keyent *keys = NULL;
	size_t nk = 0, fresh = s->n;
	char field[160];
	long rc = -1;

	for (size_t i = 0; i < s->n; i++) {
		if (!s->specs[i].key)
			continue;
		if (!keys && !(keys = calloc(s->n, sizeof(*keys)))) {
			jd__reply_error(c, id, JSCHED_ENOMEM, NULL, "out of memory");
			return -1;
		}
		keys[nk++] = (struct keyent){s->specs[i].key, i};
		if ((made[i] = jd_job_find_key(c->d->jobs, c->uid, s->specs[i].key))) {
			existing[i] = true;
			fresh--;
		}
	}
	if (nk > 1)
		qsort(keys, nk, sizeof(*keys), keycmp);
	for (size_t k = 1; k < nk; k++)
		if (strcmp(keys[k - 1].key, keys[k].key) == 0) {
			spec_path(s, keys[k].index, "key", field, sizeof(field));
			jd__reply_error(c, id, JSCHED_EBAD_REQUEST, field,
				        "the same key as jobs[%zu]", keys[k - 1].index);
			goto out;
		}
	rc = (long)fresh;
out:
	free(keys);
	return rc;
}

/* check: pass 2; n_new is the number of jobs the submit makes (specs without an existing
 * job of their key).  Returns false after replying the error. */
static bool check(struct jd_conn *c, int64_t id, const struct jp_submit *s,
		  const struct jsched_handler **handlers, size_t n_new)
{
	struct jd_net *d = c->d;
	char field[160];
	int rc;

	jd_resources_begin(&d->runner->resources);
	for (size_t i = 0; i < s->n; i++) {
		const struct jp_job_spec *sp = &s->specs[i];

		if (sp->kind == JP_KIND_EXEC) {
			char why[200];

			char cwhy[PATH_MAX + 400];
			int kind;

			if (!jd_security_exec_allowed(d->sec, c->uid, why, sizeof(why))) {
				spec_path(s, i, "kind", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_EPERMISSION_DENIED, field, "%s", why);
				return false;
			}
			if ((rc = jd_backend_choose(d->runner, c->client, c->uid, sp->backend, why, sizeof(why))) < 0) {
				spec_path(s, i, "backend", field, sizeof(field));
				jd__reply_error(c, id, rc, field, "%s", why);
				return false;
			}
			kind = rc;
			/* Slurm is told of memory and cpus (backend_slurm.h); it has no limit on
			 * a job's processes: a job that may go there with one is refused rather
			 * than run without it. */
			if ((kind == JD_BACKEND_SLURM || kind == JD_BACKEND_AUTO) && sp->res_pids) {
				spec_path(s, i, "resources.pids", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, field,
						"the slurm backend has no pids limit (Slurm has no per-job "
						"process limit): the limit would not apply (run it with "
						"backend local)");
				return false;
			}
			/* A job that Slurm may run is not retried here: its attempts would be
			 * Slurm's to make. */
			if ((kind == JD_BACKEND_SLURM || kind == JD_BACKEND_AUTO) && sp->retry.max_attempts > 1) {
				spec_path(s, i, "retry", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, field,
						"retries are not supported for jobs that may run on Slurm "
						"(backend slurm or auto): run it with backend local");
				return false;
			}
			/* Named resources are this machine's: Slurm is not told of them. */
			if ((rc == JD_BACKEND_SLURM || rc == JD_BACKEND_AUTO) && sp->n_needs) {
				spec_path(s, i, "needs", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, field,
						"needs are this machine's resources (config \"resources\"); "
						"a job that may go to Slurm cannot have them (run it with "
						"backend local)");
				return false;
			}
			/* Needs (local only, above); CPUs and memory against this machine's
			 * totals when it runs here (auto: Slurm may take what does not fit). */
			if (kind == JD_BACKEND_LOCAL || sp->n_needs) {
				char member[64];

				if ((rc = jd_resources_check(&d->runner->resources, sp, member,
							     sizeof(member), cwhy, sizeof(cwhy))) < 0) {
					spec_path(s, i, member, field, sizeof(field));
					jd__reply_error(c, id, rc, field, "%s", cwhy);
					return false;
				}
			}
			/* A limit that cannot be applied is refused, never ignored: the job's
			 * (here: Slurm applies a slurm job's), or its client's from the config. */
			if (kind != JD_BACKEND_SLURM &&
			    jd_exec_limits_ok(&d->runner->exec, sp, cwhy, sizeof(cwhy)) < 0) {
				spec_path(s, i, "resources", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, field, "%s", cwhy);
				return false;
			}
			if (jd_exec_client_limits_ok(&d->runner->exec, &c->client->conf, cwhy, sizeof(cwhy)) < 0) {
				spec_path(s, i, "kind", field, sizeof(field));
				jd__reply_error(c, id, JSCHED_ENOT_SUPPORTED, field, "%s", cwhy);
				return false;
			}
		}
		/* A call naming the previous call's function takes its handler: a batch is
		 * mostly one function (the lookup was ~140 instructions a job). */
		if (sp->kind == JP_KIND_EXEC)
			handlers[i] = &jd_exec_handler;
		else if (i > 0 && handlers[i - 1] != &jd_exec_handler &&
			 strcmp(s->specs[i - 1].fn, sp->fn) == 0)
			handlers[i] = handlers[i - 1];
		else
			handlers[i] = jd_handler_find(d->modules, sp->fn);
		if (!handlers[i]) {
			spec_path(s, i, "fn", field, sizeof(field));
			jd__reply_error(c, id, JSCHED_ENO_SUCH_FUNCTION, field,
				        "no call handler named '%s'", sp->fn);
			return false;
		}
		for (int gate = 0; gate < 2; gate++) {
			const struct jp_dep *deps = gate ? sp->any_of : sp->after;
			size_t nd = gate ? sp->n_any_of : sp->n_after;

			for (size_t k = 0; k < nd; k++) {
				char member[48];

				if (deps[k].ref)
					continue;
				snprintf(member, sizeof(member), "%s[%zu]", gate ? "any_of" : "after", k);
				spec_path(s, i, member, field, sizeof(field));
				if (!check_dep(c, id, &deps[k], field))
					return false;
			}
		}
	}
	/* Room: the client's limit counts its waiting and queued jobs; the global cap
	 * counts every job not yet final.  Drop strategies make room in the fair layer;
	 * reject refuses the whole submit here. */
	if (d->jobs->n_live + n_new > d->cfg->max_queued_total) {
		c->client->rejected += n_new;
		d->jobs->rejected += n_new;
		jd__reply_error(c, id, JSCHED_EQUEUE_FULL, NULL,
			        "the daemon's queue is full (%u jobs)", d->cfg->max_queued_total);
		return false;
	}
	/* Under `block` a submit is held until there is room: one larger than the whole
	 * queue would never fit, and admitting it whole would break the limit. */
	if (c->client->conf.overflow == JD_OVERFLOW_BLOCK && n_new > c->client->conf.max_queued) {
		c->client->rejected += n_new;
		d->jobs->rejected += n_new;
		jd__reply_error(c, id, JSCHED_ELIMIT_EXCEEDED, s->single ? "job" : "jobs",
			       "%zu jobs can never fit client '%s''s queue of %u (overflow block)",
			       n_new, c->client->name, c->client->conf.max_queued);
		return false;
	}
	if (c->client->conf.overflow == JD_OVERFLOW_REJECT &&
	    c->client->live + n_new > c->client->conf.max_queued) {
		c->client->rejected += n_new;
		d->jobs->rejected += n_new;
		jd__reply_error(c, id, JSCHED_EQUEUE_FULL, NULL,
			        "client '%s' has %llu jobs waiting or queued (limit %u)",
			        c->client->name, (unsigned long long)c->client->live,
			        c->client->conf.max_queued);
		return false;
	}
	return true;
}

/* bytes_room: whether the jobs the submit made (made[i] where !existing[i]) fit what
 * jobs not yet final may hold, the client's (limits.client_queued_bytes) and in all
 * (limits.queued_bytes); each one's bytes are kept in its mem for its insertion
 * (core/jobs.h, jd_job_live_bytes).  Replies limit_exceeded and returns false if not. */
static bool bytes_room(struct jd_conn *c, int64_t id, const struct jp_submit *s,
		       struct jd_job **made, const bool *existing, size_t n_new)
{
	struct jd_net *d = c->d;
	uint64_t sum = 0;
	const json_t *args = NULL;
	size_t args_bytes = 0;
	bool client_full;

	/* Jobs of a repeated spec share its args: their bytes are counted once, not walked
	 * again for each job (~200 instructions a job in the 10 us efficiency row). */
	for (size_t i = 0; i < s->n; i++)
		if (!existing[i] && !made[i]->array_id) {
			if (!args || made[i]->args != args)
				args_bytes = jd_args_bytes(args = made[i]->args);
			sum += (made[i]->mem = jd_job_mem_bytes(made[i]) + args_bytes);
		}
	client_full = c->client->live_bytes + sum > d->cfg->client_queued_bytes;
	if (!client_full && d->jobs->live_bytes + sum <= d->cfg->queued_bytes)
		return true;
	c->client->rejected += n_new;
	d->jobs->rejected += n_new;
	jd__reply_error(c, id, JSCHED_ELIMIT_EXCEEDED, s->single ? "job" : "jobs",
			"%s jobs not yet final hold %llu bytes; these %llu more would pass %llu "
			"(limits.%s)", client_full ? "this client's" : "the daemon's",
			(unsigned long long)(client_full ? c->client->live_bytes : d->jobs->live_bytes),
			(unsigned long long)sum,
			(unsigned long long)(client_full ? d->cfg->client_queued_bytes
							 : d->cfg->queued_bytes),
			client_full ? "client_queued_bytes" : "queued_bytes");
	return false;
}

/* ns_after: now_ns plus ms milliseconds, saturated at UINT64_MAX (never, in effect): a
 * deadline may lie up to 2^53 - 1 ms away, far more than uint64_t nanoseconds hold. */
static uint64_t ns_after(uint64_t now_ns, uint64_t ms)
{
	return ms > (UINT64_MAX - now_ns) / 1000000u ? UINT64_MAX : now_ns + ms * 1000000u;
}

static uint64_t deadline_ns(const struct jp_job_spec *sp, uint64_t now_ns, uint64_t now_ms)
{
	int64_t in_ms;

	switch (sp->deadline) {
	case JP_DEADLINE_IN:
		return ns_after(now_ns, (uint64_t)sp->deadline_ms);
	case JP_DEADLINE_AT:
		in_ms = sp->deadline_ms - (int64_t)now_ms;
		/* Already past: due now (1 ns, since 0 means "none"). */
		return in_ms <= 0 ? (now_ns ? now_ns : 1) : ns_after(now_ns, (uint64_t)in_ms);
	default:
		return 0;
	}
}

/* ---- the specs' text in the request's frame ---- */

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* skip_string: past the string whose opening quote is at p (NULL if it does not end). */
static const char *skip_string(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* skip_value: past the JSON value at p (well-formed: jansson parsed the frame), or
 * NULL. */
static const char *skip_value(const char *p, const char *e)
{
	size_t depth = 0;

	if (p >= e)
		return NULL;
	if (*p == '"')
		return skip_string(p, e);
	if (*p != '{' && *p != '[') {
		while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
		       *p != '\n' && *p != '\r')
			p++;
		return p;
	}
	for (; p < e; p++) {
		if (*p == '"') {
			if (!(p = skip_string(p, e)))
				return NULL;
			p--;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

/* spec_spans: where the request's specs lie in its frame's text f[0..len): the value of
 * its top-level "job", or each element of its "jobs", into out[0..n).  Returns false
 * when the text is not read that way (another count, a key written with an escape): the
 * caller then makes each spec's JSON from the parsed spec. */
static bool spec_spans(const char *f, size_t len, struct jp_fast_span *out, size_t n)
{
	const char *p = f, *e = f + len, *k, *v;
	size_t got = 0;

	p = skip_ws(p, e);
	if (p >= e || *p++ != '{')
		return false;
	for (;;) {
		p = skip_ws(p, e);
		if (p < e && *p == '}')
			break;
		if (p >= e || *p != '"' || !(v = skip_string(p, e)))
			return false;
		k = p + 1;
		if (memchr(k, '\\', (size_t)(v - 1 - k)))
			return false;
		p = skip_ws(v, e);
		if (p >= e || *p++ != ':')
			return false;
		p = skip_ws(p, e);
		if (v - 1 - k == 3 && memcmp(k, "job", 3) == 0) {
			if (got || !(v = skip_value(p, e)))
				return false;
			out[got++] = (struct jp_fast_span){p, (size_t)(v - p)};
			p = v;
		} else if (v - 1 - k == 4 && memcmp(k, "jobs", 4) == 0 && p < e && *p == '[') {
			if (got)
				return false;
			for (p++;;) {
				p = skip_ws(p, e);
				if (p < e && *p == ']') {
					p++;
					break;
				}
				if (got == n || !(v = skip_value(p, e)))
					return false;
				out[got++] = (struct jp_fast_span){p, (size_t)(v - p)};
				p = skip_ws(v, e);
				if (p < e && *p == ',')
					p++;
				else if (p >= e || *p != ']')
					return false;
			}
		} else if (!(p = skip_value(p, e))) {
			return false;
		}
		p = skip_ws(p, e);
		if (p < e && *p == ',')
			p++;
		else if (p >= e || *p != '}')
			return false;
	}
	return got == n;
}

/* spec_for_journal: the JSON of a spec without its deps and deadline (the journal
 * records those resolved: ids, and the deadline's time).  New reference, or NULL. */
static json_t *spec_for_journal(const struct jp_job_spec *sp)
{
	struct jp_job_spec copy = *sp;

	copy.after = copy.any_of = NULL;
	copy.n_after = copy.n_any_of = 0;
	copy.deadline = JP_DEADLINE_NONE;
	copy.ref = NULL;
	return jp_job_spec_to_json(&copy);
}

static const uint8_t fair_prio[] = {
	[JP_PRIO_LOW] = JD_FAIR_LOW,
	[JP_PRIO_NORMAL] = JD_FAIR_NORMAL,
	[JP_PRIO_HIGH] = JD_FAIR_HIGH,
	[JP_PRIO_CRITICAL] = JD_FAIR_CRITICAL,
};

/* job_from_spec: jd_job_from_spec, with the given id (an array's element) or the next
 * one (id 0). */
static struct jd_job *job_from_spec(struct jd_jobs *t, struct jd_runner *runner,
				    struct jd_client *cl, uid_t uid, gid_t gid,
				    const struct jp_job_spec *sp, const struct jsched_handler *h,
				    uint64_t now_ns, uint64_t now_ms, uint64_t id)
{
	struct jd_job *j = id ? jd_job_new_id(t, id) : jd_job_new(t);

	if (!j)
		return NULL;
	j->client = cl;
	j->uid = uid;
	j->gid = gid;
	j->kind = sp->kind == JP_KIND_EXEC ? JD_KIND_EXEC : JD_KIND_CALL;
	if (j->kind == JD_KIND_EXEC && !(j->exec = jd_exec_job_new(sp)))
		goto fail;
	if (j->exec) {
		char why[200];
		int k = jd_backend_choose(runner, cl, uid, sp->backend, why, sizeof(why));

		/* check() refused every spec that has no backend: k is one (a recovered one
		 * whose backend is gone since runs locally). */
		if (sp->array_text)
			j->exec->backend = (uint8_t)(k > 0 ? k : JD_BACKEND_LOCAL); /* never run itself */
		else
			jd_backend_assign(runner, j, k > 0 ? (enum jd_backend_kind)k : JD_BACKEND_LOCAL);
	}
	j->prio = fair_prio[sp->priority];
	j->cost = sp->cost;
	j->deadline_ns = deadline_ns(sp, now_ns, now_ms);
	j->handler = h;
	jd_runner_job_class(runner, j);
	j->args = json_incref(sp->args ? sp->args : json_null());
	j->submitted_ms = now_ms;
	j->submitted_ns = now_ns;
	j->not_before_ms = (uint64_t)sp->not_before_ms;
	if (sp->retry.max_attempts > 1) {
		if (!(j->retry = malloc(sizeof(*j->retry))))
			goto fail;
		*j->retry = sp->retry;
	}
	if (sp->deadline == JP_DEADLINE_AT)
		j->deadline_ms = sp->deadline_ms ? (uint64_t)sp->deadline_ms : 1;
	else if (sp->deadline == JP_DEADLINE_IN)
		j->deadline_ms = now_ms + (uint64_t)sp->deadline_ms; /* both below 2^53 */
	if (sp->name && jd_job_set_name(t, j, sp->name, strlen(sp->name)) < 0)
		goto fail;
	if (sp->key && !(j->key = strdup(sp->key)))
		goto fail;
	if (sp->on_exit || sp->notify) {
		if (!(j->hook = calloc(1, sizeof(*j->hook))) ||
		    (sp->on_exit && !(j->hook->on_exit = strdup(sp->on_exit))))
			goto fail;
		j->hook->notify = sp->notify;
		j->hook->timeout_ms = (uint32_t)(sp->hook_timeout_ms ? sp->hook_timeout_ms : JP_HOOK_TIMEOUT_MS);
		j->hook->exit_code = -1;
	}
	if (sp->array_text) {
		/* An array's parent: its elements' ids follow its own. */
		if (!(j->arr = jd_array_new(j, sp)))
			goto fail;
		jd_job_reserve_ids(t, j->arr->n);
	}
	return j;
fail:
	jd_job_discard(j);
	return NULL;
}

struct jd_job *jd_job_from_spec(struct jd_jobs *t, struct jd_runner *runner, struct jd_client *cl,
				uid_t uid, gid_t gid, const struct jp_job_spec *sp,
				const struct jsched_handler *h, uint64_t now_ns, uint64_t now_ms)
{
	return job_from_spec(t, runner, cl, uid, gid, sp, h, now_ns, now_ms, 0);
}

/* replace_index: arg with every "{}" replaced by idx (malloc'd), or NULL if it has none
 * (or out of memory: then the caller fails). */
static char *replace_index(const char *arg, const char *idx, bool *oom)
{
	size_t n = 0, il = strlen(idx);
	const char *p;
	char *out, *q;

	for (p = arg; (p = strstr(p, "{}")); p += 2)
		n++;
	if (!n)
		return NULL;
	if (!(out = malloc(strlen(arg) + n * il + 1))) {
		*oom = true;
		return NULL;
	}
	for (p = arg, q = out; *p;) {
		if (p[0] == '{' && p[1] == '}') {
			memcpy(q, idx, il);
			q += il;
			p += 2;
		} else {
			*q++ = *p++;
		}
	}
	*q = 0;
	return out;
}

struct jd_job *jd_session_make_element(struct jd_net *d, struct jd_job *p, uint64_t pos)
{
	static const char *const ours[] = {"JSCHED_ARRAY_ID", "JSCHED_ARRAY_INDEX"};
	struct jd_array *a = p->arr;
	struct jp_job_spec sp = a->sp;
	int64_t idx = jd_array_index_of(a, pos);
	char id_s[24], idx_s[24];
	struct jp_env *env = NULL;
	const char **argv = NULL;
	char **owned = NULL;
	struct jd_job *j = NULL;
	bool oom = false;

	snprintf(id_s, sizeof(id_s), "%llu", (unsigned long long)p->id);
	snprintf(idx_s, sizeof(idx_s), "%lld", (long long)idx);
	sp.array_text = NULL;
	memset(&sp.array, 0, sizeof(sp.array));
	sp.array_replace = false;
	sp.key = NULL;
	sp.on_exit = NULL; /* the array's hooks run once, when the whole array has ended */
	sp.notify = false;
	sp.hook_timeout_ms = 0;
	if (sp.kind == JP_KIND_EXEC) {
		size_t k = 0;

		/* Its index in its environment (replacing the spec's own of these names). */
		if (!(env = calloc(sp.n_env + 2, sizeof(*env))))
			goto out;
		for (size_t i = 0; i < sp.n_env; i++)
			if (strcmp(sp.env[i].name, ours[0]) != 0 && strcmp(sp.env[i].name, ours[1]) != 0)
				env[k++] = sp.env[i];
		env[k++] = (struct jp_env){ours[0], id_s};
		env[k++] = (struct jp_env){ours[1], idx_s};
		sp.env = env;
		sp.n_env = k;
		if (a->sp.array_replace) {
			if (!(argv = calloc(sp.argc + 1, sizeof(*argv))) ||
			    !(owned = calloc(sp.argc, sizeof(*owned))))
				goto out;
			for (size_t i = 0; i < sp.argc && !oom; i++) {
				owned[i] = replace_index(a->sp.argv[i], idx_s, &oom);
				argv[i] = owned[i] ? owned[i] : a->sp.argv[i];
			}
			if (oom)
				goto out;
			sp.argv = argv;
		}
	}
	j = job_from_spec(d->jobs, d->runner, p->client, p->uid, p->gid, &sp, p->handler,
			  p->submitted_ns, p->submitted_ms, p->id + 1 + pos);
	if (j) {
		j->deadline_ns = p->deadline_ns;
		j->array_id = p->id;
		j->array_index = idx;
	}
out:
	for (size_t i = 0; owned && i < sp.argc; i++)
		free(owned[i]);
	free(owned);
	free(argv);
	free(env);
	return j;
}

/* make_job: pass 3, one spec.  Returns NULL on ENOMEM. */
static struct jd_job *make_job(struct jd_conn *c, const struct jp_job_spec *sp,
			       const struct jsched_handler *h, struct jd_job **made,
			       uint64_t now_ns, uint64_t now_ms)
{
	struct jd_job *j = jd_job_from_spec(c->d->jobs, c->d->runner, c->client, c->uid, c->gid, sp,
					    h, now_ns, now_ms);
	size_t nd = sp->n_after + sp->n_any_of;

	if (!j)
		return NULL;
	if (nd && !(j->deps = calloc(nd, sizeof(*j->deps))))
		goto fail;
	for (size_t k = 0; k < nd; k++) {
		bool any = k >= sp->n_after;
		const struct jp_dep *dep = any ? &sp->any_of[k - sp->n_after] : &sp->after[k];
		struct jd_dep *jd = &j->deps[j->n_deps++];

		jd->on = (uint8_t)(dep->on == JP_ON_SUCCESS   ? JD_ON_SUCCESS
				   : dep->on == JP_ON_FAILURE ? JD_ON_FAILURE
							      : JD_ON_ANY);
		jd->any = any;
		jd->target = dep->ref ? made[dep->index] : jd_job_get(c->d->jobs, (uint64_t)dep->job, NULL);
		jd->id = jd->target->id;
		if (any)
			j->run->n_any++;
		else
			j->run->after_pending++;
	}
	return j;
fail:
	jd_job_discard(j);
	return NULL;
}

/* head_text: the members of the submit reply rep from `,"ok":true` on, its "id" taken
 * out (the answer writes its own).  Malloc'd, or NULL (rep NULL, out of memory). */
static char *head_text(json_t *rep)
{
	char *t = NULL;
	size_t len;

	/* `{"ok":true,...}` without its id becomes `,"ok":true,...`. */
	if (rep && json_object_del(rep, "id") == 0 && (t = json_dumps(rep, JSON_COMPACT)) &&
	    (len = strlen(t)) >= 2) {
		t[0] = ',';
		t[len - 1] = 0;
	}
	return t;
}

/* reply_head: the submit reply's members from `,"ok":true` on (what a wait's answer
 * takes as jd__wait_how.head), NUL-terminated; written straight, or with refs through
 * jansson (their names need its escaping).  Malloc'd, or NULL when out of memory. */
static char *reply_head(int64_t id, const struct jp_submit *s, const int64_t *ids,
			const bool *existing)
{
	struct jp_buf b;
	json_t *rep;
	char *t;

	if (s->has_refs) {
		rep = jp_submit_reply_new(id, s, ids, existing);
		t = head_text(rep);
		json_decref(rep);
		return t;
	}
	jp_buf_init(&b);
	if (jp_submit_reply_text(&b, s, ids, existing) < 0 || jp_buf_append(&b, "", 1) < 0) {
		jp_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}

/* send_ok: the submit reply, {"id": id plus head's members}. */
static void send_ok(struct jd_conn *c, int64_t id, const char *head)
{
	struct jp_buf b;

	jp_buf_init(&b);
	if (head && jd_reply_text_start(&b, id) == 0 && jd_json_text_raw(&b, head) == 0 &&
	    jd_json_text_raw(&b, "}") == 0) {
		jd_conn_send_frame(c, &b);
		return;
	}
	jp_buf_free(&b);
	jd__reply_error(c, id, JSCHED_ENOMEM, NULL, "out of memory");
}

/* A submit between its checks and its admission: what pass 3 needs.  On the stack for a
 * submit admitted in one go; malloc'd, with the request it was read from (its frame's copy
 * and its jp_fast), for one admitted in slices ("Slices" above). */
struct admit {
	struct jd_conn *c;
	int64_t id;
	struct jp_submit s;
	const struct jsched_handler **handlers;
	struct jd_job **made;
	int64_t *ids;		/* the four per-spec arrays are one allocation, ids first */
	bool *existing;
	struct jd_wait_req *w;
	long n_new;
	size_t k;		/* the specs made so far, in s.order */
	/* In slices, once entered: the specs whose jobs have been released so far (in
	 * s.order; every job made is pinned until then), and the reply's members to send
	 * after the last (NULL with `wait`: the wait answers). */
	bool entered;
	size_t released;
	char *head;
	uint64_t now_ns, now_ms;
	/* A submit in slices: its request's copy and jp_fast (owned), NULL otherwise. */
	struct jp_fast *fast;
	char *text;
	/* The four arrays' room for a submit of one spec, which is never made in slices (a
	 * copy of the struct would point into the one on the stack): no calloc and free per
	 * single submit (about 200 instructions of a noop submitted with wait). */
	int64_t one[4];
};

/* admit_free: free what a owns (not the jobs it made: admit_commit entered them, or
 * admit_refuse discarded them). */
static void admit_free(struct admit *a)
{
	if (a->w)
		jd__wait_discard(a->w);
	if (a->ids != a->one)
		free(a->ids);	/* and handlers, made, existing */
	jp_submit_clear(&a->s);
	if (a->fast) {
		jp_fast_free(a->fast);
		free(a->fast);
	}
	free(a->text);
	free(a->head);
}

/* admit_release: release the entered jobs of specs a->released up to `to` (in s.order)
 * whose gates are open, linking each to its dependencies; in slices, unpin them. */
static void admit_release(struct admit *a, size_t to)
{
	struct jd_jobs *t = a->c->d->jobs;

	for (; a->released < to; a->released++) {
		size_t i = a->s.order[a->released];
		struct jd_job *j = a->made[i];

		if (a->existing[i])
			continue;
		/* In slices a job may have been cancelled meanwhile (then it is final). */
		if (j->state == JD_WAITING && jd_job_link_deps(t, j) == 1)
			jd_job_release(t, j);
		if (a->fast)
			jd_job_unpin(t, j);
	}
}

/* admit_make: pass 3's first half: make the jobs of specs a->k up to `to` (in s.order),
 * entered nowhere yet.  Returns false when out of memory (a->k then stops short). */
static bool admit_make(struct admit *a, size_t to)
{
	for (; a->k < to; a->k++) {
		size_t i = a->s.order[a->k];

		if (a->existing[i])
			continue;
		a->made[i] = make_job(a->c, &a->s.specs[i], a->handlers[i], a->made, a->now_ns,
				      a->now_ms);
		if (!a->made[i])
			return false;
	}
	return true;
}

/* admit_discard: discard every job a made (the submit is refused whole). */
static void admit_discard(struct admit *a)
{
	for (size_t i = 0; i < a->s.n; i++)
		if (a->made[i] && !a->existing[i]) {
			jd_job_discard(a->made[i]);
			a->made[i] = NULL;
		}
}

/* admit_commit: pass 3's second half, once every job is made: the bytes' room (refused
 * whole if not, returning false), then every job entered in the table, the reply (or the
 * wait begun), and the jobs whose gates are open released to the fair queues.  A submit
 * in slices (a->fast) leaves the releases to admit_slice, its jobs pinned, and the reply
 * for after them (a->head). */
static bool admit_commit(struct admit *a, const struct jp_request *r, json_t *msg)
{
	struct jd_conn *c = a->c;
	struct jd_net *d = c->d;
	struct jp_fast_span *spans = NULL;
	const struct jp_fast_span *text = NULL;
	struct jp_submit *s = &a->s;
	size_t k;

	if (a->k < s->n || !bytes_room(c, a->id, s, a->made, a->existing, (size_t)a->n_new)) {
		if (a->k < s->n)
			jd__reply_error(c, a->id, JSCHED_ENOMEM, NULL, "out of memory");
		admit_discard(a);
		return false;
	}
	/* The journal records each spec from the insertion's report: the text the client
	 * sent, where the frame is this request's (making a spec's JSON again costs several
	 * times the copy of its text), else JSON made from the parsed spec. */
	if (d->journal_specs && r->fast) {
		text = r->fast->spans;
	} else if (d->journal_specs && msg && c->frame.msg == msg &&
		   (spans = calloc(s->n, sizeof(*spans))) &&
		   !spec_spans(c->frame.text, c->frame.len, spans, s->n)) {
		free(spans);
		spans = NULL;
	}
	if (spans)
		text = spans;
	for (k = 0; k < s->n; k++) {
		size_t i = s->order[k];
		struct jd_spec_src src = {0};
		json_t *spec = NULL;

		a->ids[i] = (int64_t)a->made[i]->id;
		if (a->existing[i])
			continue;
		if (text)
			src = (struct jd_spec_src){.text = text[i].text, .len = text[i].len};
		else if (d->journal_specs)
			src.json = spec = spec_for_journal(&s->specs[i]);
		jd_job_insert(d->jobs, a->made[i], d->journal_specs ? &src : NULL);
		json_decref(spec);
	}
	free(spans);
	/* Reply now, before any job can end: a wait pipelined behind this submit then
	 * always finds the ids issued.  (The `waiting` events went out at insertion.)  With
	 * journal.sync "always" it goes out once the submit's records are durable, and the
	 * connection's later replies queue behind it (server.c, the journal_hold hook).
	 * With `wait`, the same members wait for the records instead (and so go out once
	 * the jobs' final records are durable). */
	{
		/* A wait's answer for one new job without refs writes its members from the id
		 * (jd__wait_how.job); every other reply's members are text made here. */
		bool by_id = a->w && s->single && !s->has_refs && a->n_new == 1;
		char *head = by_id ? NULL
				   : reply_head(a->id, s, a->ids,
						a->n_new < (long)s->n ? a->existing : NULL);

		if (a->w) {
			struct jd__wait_how how = {.any = s->wait_any, .single = s->single,
						   .output = s->wait_output,
						   .timeout_ms = s->wait_timeout_ms, .head = head,
						   .job = by_id ? a->ids[0] : 0};
			struct jd_job **jobs = head || by_id ? jd__wait_jobs_new(a->w) : NULL;

			if (jobs) {
				memcpy(jobs, a->made, s->n * sizeof(*jobs));
				jd__wait_begin(a->w, jobs, &how);
			} else {
				free(head);
				jd__wait_discard(a->w);
				jd__reply_error(c, a->id, JSCHED_ENOMEM, NULL, "out of memory");
			}
			a->w = NULL;
		} else if (a->fast) {
			a->head = head;	/* sent after the last release (admit_slice) */
		} else {
			send_ok(c, a->id, head);
			free(head);
		}
	}
	a->entered = true;
	if (a->fast) {
		for (k = 0; k < s->n; k++)
			jd_job_pin(d->jobs, a->made[k]);
		return true;
	}
	admit_release(a, s->n);
	if (c->client->blocked)
		jd_conn_pause(c);
	return true;
}

/* refused_now: what would refuse a new submit of c's at this moment, the error replied
 * (the daemon shutting down, the journal not writable), or false. */
static bool refused_now(struct jd_conn *c, int64_t id)
{
	struct jd_net *d = c->d;

	if (d->state != JD_SERVING) {
		jd__reply_error(c, id, JSCHED_ESHUTTING_DOWN, NULL,
			        "jschedd is shutting down: no new jobs");
		return true;
	}
	if (d->hooks.journal_refuse) {
		char why[700];
		int rc = d->hooks.journal_refuse(d->hooks.ctx, why, sizeof(why));

		if (rc) {
			/* Not held for the journal: while it cannot be written nothing held
			 * becomes durable, and this says nothing it could lose. */
			c->jh_bypass = true;
			jd__reply_error(c, id, rc, NULL, "no new jobs while the journal cannot be "
					"written: %s", why);
			c->jh_bypass = false;
			return true;
		}
	}
	return false;
}

/* sliceable: may a's jobs be made in slices?  A batch of more than SUBMIT_SLICE call
 * specs read without a tree from a frame of its own (jd_session_frame kept it), without
 * keys, arrays or dependencies on existing jobs: nothing pass 2 judged on another job can
 * have changed when the last slice is made (refs name jobs of the same batch). */
static bool sliceable(const struct admit *a)
{
	if (a->s.n <= SUBMIT_SLICE || !a->c->frame.fast || a->n_new != (long)a->s.n)
		return false;
	for (size_t i = 0; i < a->s.n; i++) {
		const struct jp_job_spec *sp = &a->s.specs[i];

		if (sp->kind != JP_KIND_CALL || sp->key || sp->array_text)
			return false;
		for (size_t k = 0; k < sp->n_after; k++)
			if (!sp->after[k].ref)
				return false;
		for (size_t k = 0; k < sp->n_any_of; k++)
			if (!sp->any_of[k].ref)
				return false;
	}
	return true;
}

/* admit_done: the end of c's submit in slices: its reply (unless its wait answers), a
 * pause if its client is now blocked, and a freed. */
static void admit_done(struct jd_conn *c, struct admit *a)
{
	if (a->head)
		send_ok(c, a->id, a->head);
	if (a->entered && c->client->blocked)
		jd_conn_pause(c);
	admit_free(a);
	free(a);
}

/* admit_slice: the next slice of c's submit in slices.  While jobs are still to make, the
 * next SUBMIT_SLICE of them; after the last, judge again what may have changed since its
 * checks (the daemon's state, the journal, each spec's handler and the queues' room) and
 * enter it whole, or refuse it whole.  Once entered, release the next SUBMIT_SLICE jobs;
 * after the last, the reply.  Returns whether some of it is still to do. */
static bool admit_slice(struct jd_conn *c)
{
	struct admit *a = c->admitting;
	struct jd_net *d = c->d;
	size_t n = a->s.n;

	d->srv.submit_slices++;
	if (a->entered) {
		admit_release(a, n - a->released < SUBMIT_SLICE ? n : a->released + SUBMIT_SLICE);
		/* Settled as after any request: the released jobs reach the workers (or
		 * the loop's inline run) now, not after the last slice. */
		jd_jobs_settle(d->jobs);
		if (a->released < n)
			return true;
	} else {
		bool ok = admit_make(a, n - a->k < SUBMIT_SLICE ? n : a->k + SUBMIT_SLICE);
		struct jp_request r = {.id = a->id, .op = JP_OP_SUBMIT, .fast = a->fast};

		if (ok && a->k < n)
			return true;
		if (ok && !refused_now(c, a->id) && check(c, a->id, &a->s, a->handlers, (size_t)a->n_new)) {
			/* A reload may have replaced a module's handler since the jobs were
			 * made. */
			for (size_t i = 0; i < n; i++)
				a->made[i]->handler = a->handlers[i];
			if (admit_commit(a, &r, NULL)) {
				jd_jobs_settle(d->jobs);
				return true; /* its releases from the next iteration on */
			}
		} else {
			if (!ok)
				jd__reply_error(c, a->id, JSCHED_ENOMEM, NULL, "out of memory");
			admit_discard(a);
		}
	}
	c->admitting = NULL;
	d->srv.admitting--;
	admit_done(c, a);
	jd_jobs_settle(d->jobs);
	return false;
}

bool jd_session_admit_more(struct jd_conn *c)
{
	return c->admitting && admit_slice(c);
}

void jd__submit_drop(struct jd_conn *c)
{
	struct admit *a = c->admitting;

	if (!a)
		return;
	c->admitting = NULL;
	c->d->srv.admitting--;
	/* Entered, it is accepted: its jobs are released all at once (no one is told). */
	if (a->entered)
		admit_release(a, a->s.n);
	else
		admit_discard(a);
	free(a->head);
	a->head = NULL;
	admit_free(a);
	free(a);
}

void jd__op_submit(struct jd_conn *c, const struct jp_request *r, json_t *msg)
{
	struct jd_net *d = c->d;
	struct jp_limits lim;
	struct jp_err err;
	/* The time it was read: its iteration's (jd_loop_now_ns, no clock read of its own). */
	struct admit a = {.c = c, .id = r->id, .now_ns = jd_loop_now_ns(), .now_ms = jd_now_ms()};

	if (refused_now(c, r->id))
		return;
	if (c->client->blocked) {
		/* Hold this submit and stop reading until the client has room (a request
		 * read without a tree is held as one: its frame is valid JSON). */
		json_t *held = msg ? json_incref(msg) : NULL;

		if (!held && jp_frame_parse(c->frame.text, c->frame.len, &held, NULL) < 0) {
			jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
			return;
		}
		json_decref(c->blocked);
		c->blocked = held;
		jd_conn_pause(c);
		return;
	}
	jd__limits_of(c, &lim);
	if (jp_submit_parse(r, &lim, &a.s, &err) < 0) {
		jd_reply_error_obj(c, r->id, jp_error_new_from(&err));
		return;
	}
	/* The four per-spec arrays in one allocation (ids first: the widest alignment). */
	_Static_assert(sizeof(((struct admit *)0)->one) >= sizeof(*a.ids) + sizeof(*a.handlers) +
			       sizeof(*a.made) + sizeof(*a.existing), "room for one spec");
	a.ids = a.s.n == 1 ? a.one
			   : calloc(a.s.n, sizeof(*a.ids) + sizeof(*a.handlers) + sizeof(*a.made) +
						 sizeof(*a.existing));
	if (a.ids) {
		a.handlers = (const struct jsched_handler **)(void *)(a.ids + a.s.n);
		a.made = (struct jd_job **)(void *)(a.handlers + a.s.n);
		a.existing = (bool *)(void *)(a.made + a.s.n);
	}
	if (!a.ids) {
		jd__reply_error(c, r->id, JSCHED_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if ((a.n_new = check_keys(c, r->id, &a.s, a.made, a.existing)) < 0 ||
	    !check(c, r->id, &a.s, a.handlers, (size_t)a.n_new))
		goto out;
	/* A timeout of 0 only looks, as a wait's does: never refused for the limits. */
	if (a.s.wait && !(a.w = jd__wait_new(c, r->id, a.s.n, a.s.wait_timeout_ms ? "wait" : NULL)))
		goto out;
	if (sliceable(&a)) {
		struct admit *h = malloc(sizeof(*h));

		if (h) {
			/* It keeps the request's frame and jp_fast (the specs' strings and args
			 * are theirs); the first slice now, the others one per iteration. */
			*h = a;
			h->fast = c->frame.fast;
			h->text = c->frame.fast_text;
			c->frame.fast = NULL;
			c->frame.fast_text = NULL;
			c->admitting = h;
			d->srv.admitting++;
			d->srv.sliced_submits++;
			if (admit_slice(c))
				jd_conn_defer(c);
			return;
		}
	}
	admit_make(&a, a.s.n);
	admit_commit(&a, r, msg);
out:
	admit_free(&a);
}

void jd_session_client_unblocked(struct jd_net *d, struct jd_client *cl)
{
	cl->blocked = false;
	/* Resume the client's paused connections (each runs its held submit first) until
	 * one of them fills the queue again. */
	for (struct jd_conn *c = d->srv.conns; c && !cl->blocked; c = c->next)
		if (c->client == cl && c->read_paused)
			jd_conn_resume(c);
}
