/* daemon/core/array.c: job arrays (array.h says what they are and what they cost). */
#include "daemon/core/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/clients.h"
#include "daemon/core/clock.h"
#include "daemon/core/exec_job.h"
#include "jsched/error.h"

struct jd_array *jd_array_new(struct jd_job *j, const struct jp_job_spec *sp)
{
	uint64_t n = sp->array.count;
	struct jd_array *a = calloc(1, sizeof(*a) + n * sizeof(a->el[0]));
	struct jp_job_spec copy = *sp;
	struct jp_limits lim;
	struct jp_err err;

	if (!a)
		return NULL;
	/* The elements' spec: what they share (their deps and deadline are the parent's,
	 * their key none). */
	copy.after = copy.any_of = NULL;
	copy.n_after = copy.n_any_of = 0;
	copy.deadline = JP_DEADLINE_NONE;
	copy.ref = copy.key = NULL;
	jp_limits_default(&lim);
	lim.argv_items = lim.env_items = lim.stdin_bytes = lim.deps_per_job = UINT32_MAX;
	lim.array_elements = UINT32_MAX;
	if (!(a->spec = jp_job_spec_to_json(&copy)) ||
	    jp_job_spec_parse(a->spec, "job", &lim, &a->sp, &err) < 0) {
		json_decref(a->spec);
		free(a);
		return NULL;
	}
	a->parent = j;
	a->n = n;
	a->window = sp->array.max_running ? sp->array.max_running : JD_ARRAY_WINDOW;
	a->counts[JD_WAITING] = n;
	a->first_bad = n;
	return a;
}

void jd_array_free(struct jd_array *a)
{
	if (!a)
		return;
	for (uint64_t i = 0; i < a->n; i++) {
		struct jd_array_extra *x = a->el[i].extra;

		if (!x)
			continue;
		free(x->reason);
		json_decref(x->value);
		free(x->out);
		free(x->err);
		free(x);
	}
	jp_job_spec_clear(&a->sp);
	json_decref(a->spec);
	free(a);
}

size_t jd_array_mem_bytes(const struct jd_array *a)
{
	size_t n = sizeof(*a) + a->n * sizeof(a->el[0]) + 16;

	for (uint64_t i = 0; i < a->n; i++) {
		const struct jd_array_extra *q = a->el[i].extra;

		if (!q)
			continue;
		n += sizeof(*q) + 16 + (q->reason ? strlen(q->reason) + 17 : 0) +
		     (q->value ? 64 : 0) + (q->out ? q->out_len + 16 : 0) +
		     (q->err ? q->err_len + 16 : 0);
	}
	return n;
}

int64_t jd_array_index_of(const struct jd_array *a, uint64_t pos)
{
	return jp_array_index(&a->sp.array, pos);
}

/* ---- the table's index of arrays ---- */

/* upper: the number of parents with an id <= id. */
static size_t upper(const struct jd_jobs *t, uint64_t id)
{
	size_t lo = 0, hi = t->n_arrays;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->arrays[mid]->id <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int jd_arrays_add(struct jd_jobs *t, struct jd_job *parent)
{
	size_t at;

	if (t->n_arrays == t->cap_arrays) {
		size_t cap = t->cap_arrays ? t->cap_arrays * 2 : 16;
		struct jd_job **v = realloc(t->arrays, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		t->arrays = v;
		t->cap_arrays = cap;
	}
	at = upper(t, parent->id);
	memmove(t->arrays + at + 1, t->arrays + at, (t->n_arrays - at) * sizeof(*t->arrays));
	t->arrays[at] = parent;
	t->n_arrays++;
	return 0;
}

void jd_arrays_remove(struct jd_jobs *t, struct jd_job *parent)
{
	size_t at = upper(t, parent->id);

	if (at == 0 || t->arrays[at - 1] != parent)
		return;
	at--;
	memmove(t->arrays + at, t->arrays + at + 1, (t->n_arrays - at - 1) * sizeof(*t->arrays));
	t->n_arrays--;
}

struct jd_job *jd_arrays_find(const struct jd_jobs *t, uint64_t id, uint64_t *pos)
{
	size_t at = upper(t, id);
	struct jd_job *p;

	if (at == 0)
		return NULL;
	p = t->arrays[at - 1];
	if (id <= p->id || id - p->id > p->arr->n)
		return NULL;
	*pos = id - p->id - 1;
	return p;
}

/* ---- releasing elements ---- */

static void active_add(struct jd_jobs *t, struct jd_array *a)
{
	if (a->aprev || t->active == a)
		return;
	a->anext = t->active;
	a->aprev = NULL;
	if (t->active)
		t->active->aprev = a;
	t->active = a;
}

static void active_remove(struct jd_jobs *t, struct jd_array *a)
{
	if (!a->aprev && t->active != a)
		return;
	if (a->aprev)
		a->aprev->anext = a->anext;
	else
		t->active = a->anext;
	if (a->anext)
		a->anext->aprev = a->aprev;
	a->anext = a->aprev = NULL;
}

static void parent_finish(struct jd_jobs *t, struct jd_array *a);

/* element_make: element pos as a job of the table, waiting (the array's own). */
static struct jd_job *element_make(struct jd_jobs *t, struct jd_array *a, uint64_t pos)
{
	struct jd_job *j = t->hooks && t->hooks->make_element
				   ? t->hooks->make_element(t->hooks->ctx, a->parent, pos)
				   : NULL;

	if (!j)
		return NULL;
	j->elem_of = a;
	a->el[pos].flags |= JD_ELEM_LIVE;
	jd_job_insert(t, j, NULL);
	return j;
}

void jd_array_refill(struct jd_jobs *t, struct jd_array *a)
{
	struct jd_client *cl = a->parent->client;

	if (!a->active || a->held || a->stopped || t->stopping)
		return;
	while (a->released < a->window && a->next < a->n) {
		uint64_t pos = a->next;
		struct jd_array_elem *e = &a->el[pos];
		struct jd_job *j;

		if (jd_state_final(e->state)) {
			a->next++;
			continue;
		}
		/* Room in the client's queue (the array never makes its client drop or
		 * refuse jobs): it goes on when some job of the client ends. */
		if (cl->live >= cl->conf.max_queued)
			return;
		j = e->flags & JD_ELEM_LIVE ? jd_job_find(t, a->parent->id + 1 + pos, NULL)
					    : element_make(t, a, pos);
		if (!j)
			return; /* out of memory: again at the next settle */
		a->next++;
		if (j->state != JD_WAITING)
			continue; /* ended before its turn (a cancel of the element) */
		e->flags |= JD_ELEM_RELEASED;
		a->released++;
		jd_job_release(t, j);
	}
	if (a->next == a->n)
		active_remove(t, a);
}

void jd_arrays_refill_all(struct jd_jobs *t)
{
	struct jd_array *a = t->active, *next;

	for (; a; a = next) {
		next = a->anext;
		if (a->released < a->window)
			jd_array_refill(t, a);
	}
}

void jd_array_activate(struct jd_jobs *t, struct jd_job *parent)
{
	struct jd_array *a = parent->arr;

	a->active = true;
	active_add(t, a);
	jd_array_refill(t, a);
	if (a->done == a->n)
		parent_finish(t, a); /* recovered with every element ended */
}

/* ---- ending ---- */

static uint64_t elem_id(const struct jd_array *a, uint64_t pos)
{
	return a->parent->id + 1 + pos;
}

/* parent_finish: every element is final: the parent ends as they did. */
static void parent_finish(struct jd_jobs *t, struct jd_array *a)
{
	static const enum jd_state order[] = {JD_FAILED, JD_CANCELLED, JD_EXPIRED, JD_DROPPED};
	enum jd_state s = JD_SUCCEEDED;
	char why[400];
	const struct jd_array_elem *e;
	uint64_t bad;

	active_remove(t, a);
	if (jd_state_final(a->parent->state))
		return;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && s == JD_SUCCEEDED; i++)
		if (a->counts[order[i]])
			s = order[i];
	if (s == JD_SUCCEEDED || a->first_bad >= a->n) {
		jd_job_finish(t, a->parent, s, JP_CAUSE_NONE, NULL);
		return;
	}
	e = &a->el[a->first_bad];
	bad = a->n - a->counts[JD_SUCCEEDED];
	snprintf(why, sizeof(why),
		 "%llu of %llu elements did not succeed (%llu failed, %llu cancelled, %llu expired, "
		 "%llu dropped); the first, index %lld (job %llu), ended %s%s%.200s",
		 (unsigned long long)bad, (unsigned long long)a->n,
		 (unsigned long long)a->counts[JD_FAILED], (unsigned long long)a->counts[JD_CANCELLED],
		 (unsigned long long)a->counts[JD_EXPIRED], (unsigned long long)a->counts[JD_DROPPED],
		 (long long)jd_array_index_of(a, a->first_bad),
		 (unsigned long long)elem_id(a, a->first_bad), jd_state_name(e->state),
		 e->extra && e->extra->reason ? ": " : "",
		 e->extra && e->extra->reason ? e->extra->reason : "");
	jd_job_finish(t, a->parent, s, e->cause ? (enum jp_cause)e->cause : JP_CAUSE_HANDLER, why);
}

/* slot_final: element pos (not live) ends in state s now. */
static void slot_final(struct jd_array *a, uint64_t pos, enum jd_state s, enum jp_cause cause)
{
	struct jd_array_elem *e = &a->el[pos];

	e->state = (uint8_t)s;
	e->cause = (uint8_t)cause;
	e->finished_ms = jd_now_ms();
	a->counts[JD_WAITING]--;
	a->counts[s]++;
	a->done++;
	if (s != JD_SUCCEEDED && pos < a->first_bad)
		a->first_bad = pos;
}

void jd_array_elem_settled(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_array *a = j->elem_of;
	uint64_t pos = jd_job_elem_pos(j);
	struct jd_array_elem *e = &a->el[pos];
	const struct jd_exec_result *x = j->exec ? &j->exec->res : NULL;
	bool extra = j->reason || j->value ||
		     (x && (x->out.len || x->err.len || x->log.kept[0] || x->log.kept[1] ||
			    x->log.total[0] || x->log.total[1]));

	e->state = (uint8_t)j->state;
	e->cause = (uint8_t)j->cause;
	e->started_ms = j->started_ms;
	e->finished_ms = j->finished_ms;
	if (x) {
		e->end = (uint8_t)x->end;
		e->code = x->end == JD_EXEC_SIGNALED ? x->signal : x->exit_code;
		e->flags |= (x->out.truncated || jd_outlog_truncated(&x->log, 0) ? JD_ELEM_OUT_TRUNC : 0) |
			    (x->err.truncated || jd_outlog_truncated(&x->log, 1) ? JD_ELEM_ERR_TRUNC : 0) |
			    (x->timed_out ? JD_ELEM_TIMED_OUT : 0);
	}
	/* Only what there is: most elements have no reason, value or output. */
	if (extra && (e->extra = calloc(1, sizeof(*e->extra)))) {
		struct jd_array_extra *q = e->extra;

		q->reason = j->reason ? strdup(j->reason) : NULL;
		/* The element keeps its result as a tree (array.h); the job holds text. */
		q->value = j->value ? json_loadb(j->value, j->value_len, JSON_DECODE_ANY, NULL) : NULL;
		for (unsigned k = 0; x && k < 2; k++) {
			unsigned char *d = NULL;
			size_t n = 0;
			bool tr;

			/* the output as one buffer (the log's, or a recovered record's) */
			if (jd_exec_stream_flat(x, k, &d, &n, &tr) < 0 || n == 0) {
				free(d);
				continue;
			}
			if (k == 0) {
				q->out = d;
				q->out_len = n;
			} else {
				q->err = d;
				q->err_len = n;
			}
		}
	}
	if (e->flags & JD_ELEM_RELEASED)
		a->released--;
	e->flags &= (uint8_t)~(JD_ELEM_LIVE | JD_ELEM_RELEASED);
	a->done++;
	if (e->state != JD_SUCCEEDED && pos < a->first_bad)
		a->first_bad = pos;
	j->elem_of = NULL; /* compacted: the job leaves the table once no wait reads it */
	if (a->done == a->n)
		parent_finish(t, a);
	else
		jd_array_refill(t, a);
}

/* stop_elements: every element of a not yet final ends in state s with cause: those not
 * made at once (one ARRAY_STOP report for them all), the live ones through jd_job_cancel
 * (cancel; those not started first, as jd_jobs_cancel_all does: a running element asked
 * to stop frees its worker, which must not find a queued one still to start) or
 * jd_job_finish with reason.  Nothing more is released.  Returns true if a running
 * element was asked to stop. */
static bool stop_elements(struct jd_jobs *t, struct jd_array *a, enum jd_state s,
			  enum jp_cause cause, const char *reason, bool cancel)
{
	bool running = false, stopped = false;

	a->stopped = true;
	active_remove(t, a);
	for (int pass = 0; pass < (cancel ? 2 : 1); pass++)
		for (uint64_t pos = 0; pos < a->n; pos++) {
			struct jd_array_elem *e = &a->el[pos];
			struct jd_job *j;

			if (jd_state_final(e->state))
				continue;
			if (!(e->flags & JD_ELEM_LIVE)) {
				slot_final(a, pos, s, cause);
				stopped = true;
				continue;
			}
			if (!(j = jd_job_find(t, elem_id(a, pos), NULL)) || jd_state_final(j->state))
				continue;
			if (!cancel)
				jd_job_finish(t, j, s, cause, reason);
			else if ((j->state == JD_RUNNING) == (pass == 1))
				running |= jd_job_cancel(t, j, cause);
		}
	if (stopped)
		jd_job_report_array_stop(t, a->parent, s, cause);
	return running;
}

bool jd_array_cancel(struct jd_jobs *t, struct jd_job *parent, enum jp_cause cause)
{
	struct jd_array *a = parent->arr;
	bool running;

	if (jd_state_final(parent->state))
		return false;
	running = stop_elements(t, a, JD_CANCELLED, cause, NULL, true);
	if (a->done == a->n)
		parent_finish(t, a);
	return running;
}

void jd_array_finish_pending(struct jd_jobs *t, struct jd_job *parent, enum jd_state s,
			     enum jp_cause cause, const char *reason)
{
	stop_elements(t, parent->arr, s, cause, reason, false);
}

bool jd_array_hold(struct jd_jobs *t, struct jd_job *parent, bool hold)
{
	struct jd_array *a = parent->arr;
	bool changed = false;

	if (jd_state_final(parent->state) || a->held == hold)
		return false;
	a->held = hold;
	parent->held = hold;
	for (uint64_t pos = 0; pos < a->next; pos++) {
		struct jd_job *j;

		if (!(a->el[pos].flags & JD_ELEM_RELEASED) ||
		    !(j = jd_job_find(t, elem_id(a, pos), NULL)) || j->state != JD_QUEUED ||
		    j->held == hold)
			continue;
		if ((hold ? jd_fair_hold(t->fair, &j->run->fj)
			  : jd_fair_release(t->fair, &j->run->fj)) == 0) {
			j->held = hold;
			changed = true;
		}
	}
	if (!hold) {
		active_add(t, a);
		jd_array_refill(t, a);
	}
	return changed || !hold;
}

enum jd_state jd_array_elem_state(const struct jd_jobs *t, const struct jd_job *parent,
				  uint64_t pos)
{
	const struct jd_array_elem *e = &parent->arr->el[pos];
	const struct jd_job *j;

	if (jd_state_final(e->state))
		return (enum jd_state)e->state;
	if ((e->flags & JD_ELEM_LIVE) && (j = jd_job_find(t, parent->id + 1 + pos, NULL)))
		return j->state;
	return JD_WAITING;
}

void jd_array_view_fill(struct jd_job *j, const struct jd_array *a, uint64_t pos)
{
	const struct jd_array_elem *e = &a->el[pos];
	const struct jd_array_extra *q = e->extra;

	j->state = (enum jd_state)e->state;
	j->cause = (enum jp_cause)e->cause;
	j->started_ms = e->started_ms;
	j->finished_ms = e->finished_ms;
	j->finished_ns = jd_now_ns();
	j->elem_view = true;
	if (q && q->reason)
		j->reason = strdup(q->reason);
	else if (e->state != JD_SUCCEEDED)
		j->reason = strdup(e->cause == JP_CAUSE_CANCEL ? "its array was cancelled before it started"
				   : e->cause == JP_CAUSE_SHUTDOWN ? "cancelled by an immediate shutdown before it started"
				   : a->parent->reason ? a->parent->reason
						       : "its array ended before it started");
	if (q && q->value && (j->value = json_dumps(q->value, JSON_COMPACT | JSON_ENCODE_ANY)))
		j->value_len = strlen(j->value);
	if (j->exec) {
		struct jd_exec_result *x = &j->exec->res;

		x->end = e->end ? (enum jd_exec_end)e->end : JD_EXEC_NOT_RUN;
		if (x->end == JD_EXEC_SIGNALED)
			x->signal = e->code;
		else
			x->exit_code = e->code;
		x->out.truncated = e->flags & JD_ELEM_OUT_TRUNC;
		x->err.truncated = e->flags & JD_ELEM_ERR_TRUNC;
		x->timed_out = e->flags & JD_ELEM_TIMED_OUT;
		if (q && q->out_len && (x->out.data = malloc(q->out_len))) {
			memcpy(x->out.data, q->out, q->out_len);
			x->out.len = q->out_len;
		}
		if (q && q->err_len && (x->err.data = malloc(q->err_len))) {
			memcpy(x->err.data, q->err, q->err_len);
			x->err.len = q->err_len;
		}
	}
}

int jd_array_elem_restore(struct jd_array *a, uint64_t pos, const struct jd_array_elem *v,
			  const char *reason, size_t rl, json_t *value, const void *out, size_t ol,
			  const void *err, size_t el)
{
	struct jd_array_elem *e = &a->el[pos];
	struct jd_array_extra *q = NULL;

	if (rl || value || ol || el) {
		if (!(q = calloc(1, sizeof(*q))) || (rl && !(q->reason = strndup(reason, rl))) ||
		    (ol && !(q->out = malloc(ol))) || (el && !(q->err = malloc(el)))) {
			if (q) {
				free(q->reason);
				free(q->out);
				free(q);
			}
			return JSCHED_ENOMEM;
		}
		q->value = json_incref(value);
		if (ol)
			memcpy(q->out, out, ol);
		if (el)
			memcpy(q->err, err, el);
		q->out_len = ol;
		q->err_len = el;
	}
	*e = *v;
	e->extra = q;
	a->counts[JD_WAITING]--;
	a->counts[e->state]++;
	a->done++;
	if (e->state != JD_SUCCEEDED && pos < a->first_bad)
		a->first_bad = pos;
	return 0;
}
