/* daemon/core/jobs.c: the job table, state changes, dependency gates and retention.
 *
 * The table is a chained hash on the id (ids are dense and increasing, so the low bits
 * spread perfectly), grown by doubling.  Final jobs also sit on a FIFO in the order they
 * ended, which is the order retention forgets them in.
 *
 * Gates.  A job's `after` deps must all be satisfied; if it has `any_of` deps, one of
 * them must be.  Each unjudged dep registers the job on its target's `dependents`; when
 * the target settles, every dependent judges its dep on it.  A job whose gate can no
 * longer open ends cancelled (cause "dependency"), which settles in turn and may doom its
 * own dependents: settling works through a list, never recursion, so a long chain costs
 * no stack.
 */
#include "daemon/core/jobs.h"
#include "daemon/core/outfile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/array.h"
#include "daemon/core/clients.h"
#include "daemon/core/clock.h"
#include "daemon/core/config.h"
#include "daemon/core/exec_job.h"
#include "jsched/error.h"
#include "proto/jproto.h"

static const char *const state_names[JD_NSTATES] = {
	"waiting", "scheduled", "retrying", "queued", "running", "succeeded", "failed", "cancelled", "expired", "dropped",
};

const char *jd_state_name(enum jd_state s)
{
	return (unsigned)s < JD_NSTATES ? state_names[s] : "?";
}

const char *jd_prio_name(unsigned prio)
{
	static const char *const names[JD_FAIR_NPRIO] = {"critical", "high", "normal", "low"};

	return prio < JD_FAIR_NPRIO ? names[prio] : "?";
}

/* One uid's index (jd_jobs_walk), kept for the daemon's life once the uid has a job. */
struct jd_uid_jobs {
	uid_t uid;
	struct jd_idx idx;
	struct jd_uid_jobs *next;
};

#define UID_SLOTS (sizeof(((struct jd_jobs *)0)->uids) / sizeof(struct jd_uid_jobs *))

static struct jd_uid_jobs *uid_jobs(const struct jd_jobs *t, uid_t uid)
{
	struct jd_uid_jobs *u = t->uids[uid % UID_SLOTS];

	while (u && u->uid != uid)
		u = u->next;
	return u;
}

/* index_add: j into the indexes of every job, its uid's and its client's (an array's
 * element into none). */
static void index_add(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_uid_jobs *u;

	/* An array's elements are folded into its parent's record: listed through it. */
	if (j->array_id)
		return;
	u = uid_jobs(t, j->uid);
	if (!u && (u = calloc(1, sizeof(*u)))) {
		u->uid = j->uid;
		u->idx.pos_off = offsetof(struct jd_job, ipos_uid);
		u->next = t->uids[j->uid % UID_SLOTS];
		t->uids[j->uid % UID_SLOTS] = u;
	}
	/* Without memory a job is missing from a listing; it is still found by id. */
	jd_idx_add(&t->all, j);
	if (u)
		jd_idx_add(&u->idx, j);
	jd_idx_add(&j->client->idx, j);
}

static void index_remove(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_uid_jobs *u = uid_jobs(t, j->uid);

	jd_idx_remove(&t->all, j);
	if (u)
		jd_idx_remove(&u->idx, j);
	jd_idx_remove(&j->client->idx, j);
}

struct walk_filter {
	const struct jd_client *client;
	bool any_uid;
	uid_t uid;
	bool (*keep)(struct jd_job *j, void *arg);
	void *arg;
};

static bool walk_keep(struct jd_job *j, void *arg)
{
	const struct walk_filter *f = arg;

	if ((f->client && j->client != f->client) || (!f->any_uid && j->uid != f->uid))
		return true;
	return f->keep(j, f->arg);
}

void jd_jobs_walk(struct jd_jobs *t, const struct jd_client *client, bool any_uid,
		  uid_t uid, uint64_t after, unsigned states,
		  bool (*keep)(struct jd_job *j, void *arg), void *arg)
{
	struct walk_filter f = {client, any_uid, uid, keep, arg};
	const struct jd_uid_jobs *u;

	/* The narrowest index: the uid's (its jobs under any client), else the client's,
	 * else every job. */
	if (!any_uid) {
		if ((u = uid_jobs(t, uid)))
			t->walked += jd_idx_walk(&u->idx, after, states, walk_keep, &f);
	} else if (client) {
		t->walked += jd_idx_walk(&client->idx, after, states, walk_keep, &f);
	} else {
		t->walked += jd_idx_walk(&t->all, after, states, keep, arg);
	}
}

int jd_jobs_init(struct jd_jobs *t, uv_loop_t *loop, const struct jd_jobs_hooks *hooks)
{
	memset(t, 0, sizeof(*t));
	if (jd_slab_init(&t->runs, sizeof(struct jd_job_run)) < 0 ||
	    jd_slab_init(&t->names, JD_NAME_SLAB) < 0)
		return JSCHED_EINVAL;
	t->all.pos_off = offsetof(struct jd_job, ipos_all);
	t->n_buckets = JD_JOBS_BUCKETS;
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	t->next_id = 1;
	t->loop = loop;
	t->hooks = hooks;
	t->retain_jobs = UINT32_MAX;
	t->retain_ns = UINT64_MAX;
	t->retain_bytes = UINT64_MAX;
	return t->buckets ? 0 : JSCHED_ENOMEM;
}

void jd_jobs_set_retention(struct jd_jobs *t, const struct jd_config *cfg)
{
	t->retain_jobs = cfg->retain_jobs;
	t->retain_ns = (uint64_t)cfg->retain_seconds * 1000000000ull;
	t->retain_bytes = cfg->retain_bytes;
	t->value_spill_bytes = cfg->value_bytes;
	t->retain_min_ns = (uint64_t)(cfg->retain_min_seconds < cfg->retain_seconds
					      ? cfg->retain_min_seconds
					      : cfg->retain_seconds) *
			   1000000000ull;
}

/* ALLOC_OVERHEAD: what malloc adds to each allocation (glibc: 8 to 16 bytes of header
 * and rounding), counted once per allocation a job owns. */
#define ALLOC_OVERHEAD 16

static size_t str_mem(const char *s)
{
	return s ? strlen(s) + 1 + ALLOC_OVERHEAD : 0;
}

size_t jd_job_mem_bytes(const struct jd_job *j)
{
	size_t n = sizeof(*j) + ALLOC_OVERHEAD +
		   (j->name_slab ? JD_NAME_SLAB : str_mem(j->name)) + str_mem(j->key) +
		   str_mem(j->reason);

	if (j->run) {
		/* a slab record (slab.h): no malloc header */
		n += sizeof(*j->run) + str_mem(j->run->run_error);
		if (j->run->dependents)
			n += j->run->cap_dependents * sizeof(*j->run->dependents) + ALLOC_OVERHEAD;
	}

	if (j->value) /* in memory (not value_file) */
		n += j->value_len + 1 + ALLOC_OVERHEAD;
	if (j->deps)
		n += j->n_deps * sizeof(*j->deps) + ALLOC_OVERHEAD;
	if (j->exec)
		n += jd_exec_job_mem_bytes(j->exec);
	if (j->arr)
		n += jd_array_mem_bytes(j->arr);
	if (j->hook)
		n += sizeof(*j->hook) + ALLOC_OVERHEAD + str_mem(j->hook->on_exit) +
		     str_mem(j->hook->reason);
	return n;
}

void jd_jobs_iter_init(const struct jd_jobs *t, struct jd_jobs_iter *it)
{
	it->bucket = 0;
	it->next = t->n_buckets ? t->buckets[0] : NULL;
}

struct jd_job *jd_jobs_iter_next(const struct jd_jobs *t, struct jd_jobs_iter *it)
{
	struct jd_job *j;

	while (!it->next && ++it->bucket < t->n_buckets)
		it->next = t->buckets[it->bucket];
	if (!(j = it->next))
		return NULL;
	it->next = j->hnext;
	return j;
}

/* report: tell the hooks of a change. */
static void report(struct jd_jobs *t, enum jd_change_kind kind, const struct jd_job *j)
{
	struct jd_change ch = {.kind = kind, .job = j, .next_id = t->next_id};

	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

void jd_job_drop_run(struct jd_job *j)
{
	if (!j->run)
		return;
	free(j->run->run_error);
	free(j->run->run_value);
	free(j->run->dependents);
	jd_slab_free(j->run);
	j->run = NULL;
}

/* run_alloc: j's run part, new (its notices pointing at j); 0 or JSCHED_ENOMEM. */
static int run_alloc(struct jd_jobs *t, struct jd_job *j)
{
	if (j->run)
		return 0;
	struct jd_job_run *r = jd_slab_alloc(&t->runs);

	if (!r)
		return JSCHED_ENOMEM;
	r->n_start.job = j;
	r->n_done.job = j;
	jd_cancel_init(&r->ctok);
	j->run = r;
	return 0;
}

int jd_job_run_part(struct jd_jobs *t, struct jd_job *j)
{
	return run_alloc(t, j);
}

static void job_free(struct jd_job *j)
{
	if (j->name_slab)
		jd_slab_free(j->name);
	else
		free(j->name);
	free(j->key);
	free(j->reason);
	free(j->deps);
	jd_job_drop_run(j);
	free(j->value);
	free(j->retry);
	free(j->attempts);
	json_decref(j->args);
	jd_exec_job_free(j->exec);
	jd_array_free(j->arr);
	jd_hook_free(j->hook);
	free(j);
}

void jd_jobs_free(struct jd_jobs *t)
{
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct jd_job *j = t->buckets[i];

			t->buckets[i] = j->hnext;
			job_free(j);
		}
	free(t->buckets);
	t->buckets = NULL;
	free(t->kbuckets);
	t->kbuckets = NULL;
	free(t->arrays);
	t->arrays = NULL;
	t->n_arrays = t->cap_arrays = 0;
	t->active = NULL;
	jd_timeheap_free(&t->timers);
	jd_slab_destroy(&t->runs);
	jd_slab_destroy(&t->names);
	jd_idx_free(&t->all);
	for (size_t i = 0; i < UID_SLOTS; i++)
		while (t->uids[i]) {
			struct jd_uid_jobs *u = t->uids[i];

			t->uids[i] = u->next;
			jd_idx_free(&u->idx);
			free(u);
		}
}

/* job_alloc: a job with id, waiting, not in the table. */
static struct jd_job *job_alloc(struct jd_jobs *t, uint64_t id)
{
	struct jd_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	if (!t->recovering && run_alloc(t, j) < 0) {
		free(j);
		return NULL;
	}
	j->id = id;
	j->state = JD_WAITING;
	j->prio = JD_FAIR_NORMAL;
	return j;
}

struct jd_job *jd_job_new_id(struct jd_jobs *t, uint64_t id)
{
	return job_alloc(t, id);
}

void jd_job_reserve_ids(struct jd_jobs *t, uint64_t n)
{
	t->next_id += n;
	report(t, JD_CHANGE_NEXT_ID, NULL);
}

struct jd_job *jd_job_new(struct jd_jobs *t)
{
	struct jd_job *j = job_alloc(t, t->next_id);

	if (!j)
		return NULL;
	t->next_id++;
	report(t, JD_CHANGE_NEXT_ID, NULL);
	return j;
}

void jd_job_discard(struct jd_job *j)
{
	job_free(j);
}

int jd_job_set_name(struct jd_jobs *t, struct jd_job *j, const char *name, size_t len)
{
	char *s;

	if (len < JD_NAME_SLAB) {
		if (!(s = jd_slab_alloc(&t->names)))
			return JSCHED_ENOMEM;
		j->name_slab = true;
	} else if (!(s = malloc(len + 1))) {
		return JSCHED_ENOMEM;
	}
	memcpy(s, name, len);
	s[len] = 0;
	j->name = s;
	return 0;
}

/* rehash: the id index with n buckets (a power of two).  Returns false without memory
 * (the index keeps its size: longer chains, still correct). */
static bool rehash(struct jd_jobs *t, size_t n)
{
	struct jd_job **b = calloc(n, sizeof(*b));

	if (!b)
		return false;
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct jd_job *j = t->buckets[i];

			t->buckets[i] = j->hnext;
			j->hnext = b[j->id & (n - 1)];
			b[j->id & (n - 1)] = j;
		}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
	return true;
}

static void grow(struct jd_jobs *t)
{
	(void)rehash(t, t->n_buckets * 2);
}

void jd_jobs_reserve(struct jd_jobs *t, size_t n)
{
	size_t b = t->n_buckets;

	while (b < n && b <= SIZE_MAX / 4)
		b *= 2;
	if (b > t->n_buckets)
		(void)rehash(t, b); /* without memory it grows as jobs come */
}

/* key_hash: FNV-1a of the key's bytes, then the uid's. */
static uint64_t key_hash(uid_t uid, const char *key)
{
	uint64_t h = 14695981039346656037u;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 1099511628211u;
	for (unsigned i = 0; i < sizeof(uid); i++)
		h = (h ^ (((uint64_t)uid >> (8 * i)) & 0xffu)) * 1099511628211u;
	return h;
}

/* key_rehash: the key index with n buckets (a power of two).  Returns false without
 * memory (the index keeps its size). */
static bool key_rehash(struct jd_jobs *t, size_t n)
{
	struct jd_job **b = calloc(n, sizeof(*b));

	if (!b)
		return false;
	for (size_t i = 0; i < t->n_kbuckets; i++)
		while (t->kbuckets[i]) {
			struct jd_job *j = t->kbuckets[i];
			size_t k = key_hash(j->uid, j->key) & (n - 1);

			t->kbuckets[i] = j->knext;
			j->knext = b[k];
			b[k] = j;
		}
	free(t->kbuckets);
	t->kbuckets = b;
	t->n_kbuckets = n;
	return true;
}

/* key_grow: double the key index (at least 64 buckets).  Returns false on ENOMEM (the
 * index keeps its size: longer chains, still correct, unless it had none). */
static bool key_grow(struct jd_jobs *t)
{
	return key_rehash(t, t->n_kbuckets ? t->n_kbuckets * 2 : 64) || t->n_kbuckets > 0;
}

/* shrunk: the bucket count for `count` entries in an index of n buckets, grown by
 * doubling from `least`: n itself while it holds an eighth of n or more, else the least
 * power of two from `least` up that is at least twice the count (so the next growth is
 * a doubling of the count away, and a table that shrinks and fills again does not
 * rehash back and forth). */
static size_t shrunk(size_t n, size_t count, size_t least)
{
	size_t m = least;

	if (n <= least || count >= n / 8)
		return n;
	while (m < 2 * count)
		m *= 2;
	return m;
}

void jd_jobs_shrink(struct jd_jobs *t)
{
	size_t n = shrunk(t->n_buckets, t->count, JD_JOBS_BUCKETS);

	if (n < t->n_buckets && rehash(t, n))
		t->shrinks++;
	n = shrunk(t->n_kbuckets, t->n_keyed, 64);
	if (n < t->n_kbuckets && key_rehash(t, n))
		t->shrinks++;
	/* One empty page kept: the next job's run part maps nothing. */
	jd_slab_trim(&t->runs, 1);
	jd_slab_trim(&t->names, 1);
}

/* key_add: index j by (uid, key).  Without memory for a first bucket array the job is
 * simply not found by its key (a second submit then makes a new job). */
static void key_add(struct jd_jobs *t, struct jd_job *j)
{
	size_t k;

	if ((t->n_keyed >= t->n_kbuckets && !key_grow(t)) || !t->n_kbuckets)
		return;
	k = key_hash(j->uid, j->key) & (t->n_kbuckets - 1);
	j->knext = t->kbuckets[k];
	t->kbuckets[k] = j;
	t->n_keyed++;
}

static void key_remove(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_job **p;

	if (!t->n_kbuckets)
		return;
	p = &t->kbuckets[key_hash(j->uid, j->key) & (t->n_kbuckets - 1)];
	while (*p && *p != j)
		p = &(*p)->knext;
	if (*p) {
		*p = j->knext;
		t->n_keyed--;
	}
}

struct jd_job *jd_job_find_key(const struct jd_jobs *t, uid_t uid, const char *key)
{
	if (!t->n_kbuckets)
		return NULL;
	for (struct jd_job *j = t->kbuckets[key_hash(uid, key) & (t->n_kbuckets - 1)]; j; j = j->knext)
		if (j->uid == uid && strcmp(j->key, key) == 0)
			return j;
	return NULL;
}

/* table_add: enter j in the id table, the key index, the arrays and the list indexes
 * (table_remove's counterpart), for a new job and a recovered one alike. */
/* json_bytes: about what jansson allocated for v (structs, storage, keys, strings, each
 * allocation with malloc's overhead), on the high side. */
static size_t json_bytes(json_t *v)
{
	size_t n = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *m;

		n = 96 + 16 * json_object_size(v);
		json_object_foreach(v, k, m)
			n += 64 + strlen(k) + json_bytes(m);
		return n;
	}
	case JSON_ARRAY:
		n = 64 + 8 * json_array_size(v);
		for (size_t i = 0; i < json_array_size(v); i++)
			n += json_bytes(json_array_get(v, i));
		return n;
	case JSON_STRING:
		return 64 + json_string_length(v);
	case JSON_INTEGER:
	case JSON_REAL:
		return 48;
	default:
		return 0; /* true, false, null: shared */
	}
}

size_t jd_args_bytes(const json_t *args)
{
	return args ? json_bytes((json_t *)(uintptr_t)args) : 0;
}

size_t jd_job_live_bytes(const struct jd_job *j)
{
	return jd_job_mem_bytes(j) + jd_args_bytes(j->args);
}

/* live_add / live_sub: j enters (or leaves, at its end) the count of what jobs not final
 * hold, its client's and the table's. */
static void live_add(struct jd_jobs *t, struct jd_job *j)
{
	if (j->array_id || j->live_counted)
		return;
	if (!j->mem)
		j->mem = jd_job_live_bytes(j);
	j->live_counted = true;
	t->live_bytes += j->mem;
	j->client->live_bytes += j->mem;
}

static void live_sub(struct jd_jobs *t, struct jd_job *j)
{
	if (!j->live_counted)
		return;
	t->live_bytes -= j->mem;
	j->client->live_bytes -= j->mem;
	j->live_counted = false;
	j->mem = 0;
}

static void table_add(struct jd_jobs *t, struct jd_job *j)
{
	size_t b;

	if (t->count >= t->n_buckets)
		grow(t);
	b = j->id & (t->n_buckets - 1);
	j->hnext = t->buckets[b];
	t->buckets[b] = j;
	t->count++;
	if (j->key)
		key_add(t, j);
	if (j->arr)
		jd_arrays_add(t, j); /* without memory its elements are not found by id */
	index_add(t, j);
}

void jd_job_insert(struct jd_jobs *t, struct jd_job *j, const struct jd_spec_src *spec)
{
	struct jd_change ch = {.kind = JD_CHANGE_SUBMITTED, .job = j, .spec = spec};

	table_add(t, j);
	live_add(t, j);
	t->n_live++;
	t->submitted++;
	t->by_state[JD_WAITING]++;
	j->client->submitted++;
	j->client->live++;
	j->client->by_state[JD_WAITING]++;
	ch.next_id = t->next_id;
	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

static void retain(struct jd_jobs *t, struct jd_job *j);
static void unretain(struct jd_jobs *t, struct jd_job *j);
static void timer_arm(struct jd_jobs *t);
static void shed(struct jd_jobs *t, struct jd_job *j);

void jd_job_restore(struct jd_jobs *t, struct jd_job *j)
{
	enum jd_state s = j->state;

	table_add(t, j);
	if (j->arr && j->id + j->arr->n >= t->next_id)
		t->next_id = j->id + j->arr->n + 1;
	t->submitted++;
	j->client->submitted++;
	t->by_state[s]++;
	j->client->by_state[s]++;
	if (jd_state_final(s)) {
		shed(t, j);
		retain(t, j);
	} else {
		t->n_live++;
		if (s <= JD_QUEUED)
			j->client->live++;
		live_add(t, j);
	}
	if (j->id >= t->next_id)
		t->next_id = j->id + 1;
}

struct jd_job *jd_job_find(const struct jd_jobs *t, uint64_t id, bool *forgotten)
{
	if (forgotten)
		*forgotten = false;
	for (struct jd_job *j = t->buckets[id & (t->n_buckets - 1)]; j; j = j->hnext)
		if (j->id == id)
			return j;
	if (forgotten)
		*forgotten = id > 0 && id < t->next_id;
	return NULL;
}

static void table_remove(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_job **p = &t->buckets[j->id & (t->n_buckets - 1)];

	while (*p && *p != j)
		p = &(*p)->hnext;
	if (*p)
		*p = j->hnext;
	t->count--;
	if (j->key)
		key_remove(t, j);
	index_remove(t, j);
}

/* move_state: bookkeeping of a state change (global and per-client counts). */
static void move_state(struct jd_jobs *t, struct jd_job *j, enum jd_state to)
{
	struct jd_client *c = j->client;

	if (!jd_state_final(j->state)) {
		t->by_state[j->state]--;
		c->by_state[j->state]--;
	}
	/* Live (counted against the client's queue): waiting up to queued; a retrying job
	 * comes back from running. */
	if (!jd_state_final(j->state) && j->state <= JD_QUEUED && (jd_state_final(to) || to > JD_QUEUED))
		c->live--;
	else if ((jd_state_final(j->state) || j->state > JD_QUEUED) && !jd_state_final(to) &&
		 to <= JD_QUEUED)
		c->live++;
	jd_idx_move(&j->ipos_all, j->state, to);
	jd_idx_move(&j->ipos_uid, j->state, to);
	jd_idx_move(&j->ipos_client, j->state, to);
	t->by_state[to]++;
	c->by_state[to]++;
	if (j->elem_of) {
		j->elem_of->counts[j->state]--;
		j->elem_of->counts[to]++;
	}
	j->state = to;
}

static bool dep_satisfied(uint8_t on, enum jd_state s)
{
	switch (on) {
	case JD_ON_SUCCESS:
		return s == JD_SUCCEEDED;
	case JD_ON_FAILURE:
		return s != JD_SUCCEEDED;
	default:
		return true;
	}
}

static const char *const on_names[] = {"success", "failure", "any"};

/* judge: dep k of j has ended in state s.  Returns 1 if the gate is now open, -1 if it
 * can never open (j is then finished cancelled), 0 if still waiting. */
static int judge(struct jd_jobs *t, struct jd_job *j, uint32_t k, enum jd_state s)
{
	struct jd_dep *dep = &j->deps[k];
	bool ok = dep_satisfied(dep->on, s);
	char why[160];

	dep->target = NULL;
	if (!dep->any) {
		j->run->after_pending--;
		if (!ok) {
			snprintf(why, sizeof(why), "dependency %llu ended %s, wanted %s",
				 (unsigned long long)dep->id, jd_state_name(s), on_names[dep->on]);
			jd_job_finish(t, j, JD_CANCELLED, JP_CAUSE_DEPENDENCY, why);
			return -1;
		}
	} else if (ok) {
		j->run->any_ok = true;
	} else if (++j->run->any_failed == j->run->n_any) {
		snprintf(why, sizeof(why), "no any_of dependency can be satisfied (the last, "
			 "%llu, ended %s, wanted %s)", (unsigned long long)dep->id,
			 jd_state_name(s), on_names[dep->on]);
		jd_job_finish(t, j, JD_CANCELLED, JP_CAUSE_DEPENDENCY, why);
		return -1;
	}
	return j->run->after_pending == 0 && (j->run->n_any == 0 || j->run->any_ok) ? 1 : 0;
}

static int add_dependent(struct jd_job *target, struct jd_job *j)
{
	if (target->run->n_dependents == target->run->cap_dependents) {
		uint32_t cap = target->run->cap_dependents ? target->run->cap_dependents * 2 : 4;
		struct jd_job **v = realloc(target->run->dependents, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		target->run->dependents = v;
		target->run->cap_dependents = cap;
	}
	target->run->dependents[target->run->n_dependents++] = j;
	return 0;
}

/* want_end: tell the runner that target's end is waited for (a dependent's gate). */
static void want_end(struct jd_jobs *t, struct jd_job *target)
{
	if (t->hooks && t->hooks->want_end)
		t->hooks->want_end(t->hooks->ctx, target);
}

static void remove_dependent(struct jd_job *target, struct jd_job *j)
{
	for (uint32_t i = 0; i < target->run->n_dependents; i++)
		if (target->run->dependents[i] == j) {
			target->run->dependents[i] = target->run->dependents[--target->run->n_dependents];
			return;
		}
}

/* A waiting job's deadline.  The fair layer sees a job only once its gates open, so a
 * job still waiting when its deadline passes is expired by a timer of its own (armed
 * only for waiting jobs that have a deadline; closed when the job is released or ends). */
struct jd_wait_deadline {
	uv_timer_t timer;
	struct jd_job *job;
	struct jd_jobs *t;
};

static void wdl_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

static void wdl_stop(struct jd_job *j)
{
	if (!j->run->wdl)
		return;
	uv_close((uv_handle_t *)&j->run->wdl->timer, wdl_closed_cb);
	j->run->wdl = NULL;
}

static void wdl_fire_cb(uv_timer_t *t)
{
	struct jd_wait_deadline *w = t->data;

	jd_job_finish(w->t, w->job, JD_EXPIRED, JP_CAUSE_DEADLINE,
		      "its deadline passed while it waited for its dependencies");
	jd_jobs_settle(w->t);
}

static void wdl_arm(struct jd_jobs *t, struct jd_job *j)
{
	uint64_t now = jd_now_ns(), due = j->deadline_ns;
	struct jd_wait_deadline *w = calloc(1, sizeof(*w));

	if (!w)
		return; /* it expires when released instead */
	w->job = j;
	w->t = t;
	uv_timer_init(t->loop, &w->timer);
	w->timer.data = w;
	uv_timer_start(&w->timer, wdl_fire_cb, due > now ? (due - now + 999999) / 1000000 : 0, 0);
	j->run->wdl = w;
}

int jd_job_link_deps(struct jd_jobs *t, struct jd_job *j)
{
	int open = j->run->after_pending == 0 && (j->run->n_any == 0 || j->run->any_ok);

	for (uint32_t k = 0; k < j->n_deps && j->state == JD_WAITING; k++) {
		struct jd_job *target = j->deps[k].target;

		if (!target)
			continue;
		if (jd_state_final(target->state)) {
			open = judge(t, j, k, target->state);
		} else if (add_dependent(target, j) < 0) {
			jd_job_finish(t, j, JD_FAILED, JP_CAUSE_HANDLER,
				      "out of memory linking dependencies");
			return 0;
		} else {
			want_end(t, target);
		}
	}
	if (j->state == JD_WAITING && open != 1 && j->deadline_ns)
		wdl_arm(t, j);
	return j->state == JD_WAITING && open == 1;
}

/* job_of_timed: the job whose run part holds heap entry e. */
static struct jd_job *job_of_timed(struct jd_timed *e)
{
	return ((struct jd_job_run *)(void *)((char *)e - offsetof(struct jd_job_run, timer)))->n_start.job;
}

/* timer_arm: arm the heap's timer for its earliest entry, unless it is armed for that
 * time or earlier already (an early wake-up finds nothing due and re-arms).  With the
 * test clock on it is armed only for an entry already due (a retry without a backoff):
 * time itself moves only by jd_jobs_run_timers. */
static void timer_cb(uv_timer_t *tm);

static void timer_arm(struct jd_jobs *t)
{
	const struct jd_timed *top = jd_timeheap_top(&t->timers);
	uint64_t now = jd_now_ms(), in;

	if (!top || !t->loop || (jd_clock_test_on() && top->due_ms > now))
		return;
	if (t->timer_armed_ms && t->timer_armed_ms <= top->due_ms)
		return;
	if (!t->timer_open) {
		uv_timer_init(t->loop, &t->timer);
		t->timer.data = t;
		t->timer_open = true;
	}
	/* At most a minute ahead: a wall clock set forward is noticed within a minute (a
	 * libuv timer runs on the monotonic clock). */
	in = top->due_ms > now ? top->due_ms - now : 0;
	if (in > 60000)
		in = 60000;
	t->timer_armed_ms = now + in;
	uv_timer_start(&t->timer, timer_cb, in, 0);
}

static void timer_cb(uv_timer_t *tm)
{
	struct jd_jobs *t = tm->data;

	t->timer_wakeups++;
	t->timer_armed_ms = 0;
	jd_jobs_run_timers(t);
}

void jd_jobs_stop_timers(struct jd_jobs *t)
{
	if (t->timer_open) {
		uv_close((uv_handle_t *)&t->timer, NULL);
		t->timer_open = false;
	}
	t->timer_armed_ms = 0;
}

/* schedule: j waits in the heap until min(not_before, its deadline).  Returns false
 * without memory for its entry (then it is released at once: early rather than lost). */
static bool schedule(struct jd_jobs *t, struct jd_job *j)
{
	j->run->timer.due_ms = j->deadline_ms && j->deadline_ms < j->not_before_ms ? j->deadline_ms
									   : j->not_before_ms;
	j->run->timer.tie = j->id;
	if (jd_timeheap_push(&t->timers, &j->run->timer) < 0)
		return false;
	move_state(t, j, JD_SCHEDULED);
	report(t, JD_CHANGE_SCHEDULED, j);
	timer_arm(t);
	return true;
}

static int admit(struct jd_jobs *t, struct jd_job *j);

int jd_job_release(struct jd_jobs *t, struct jd_job *j)
{
	wdl_stop(j);
	if (j->not_before_ms && j->state != JD_SCHEDULED && j->not_before_ms > jd_now_ms() &&
	    schedule(t, j))
		return JD_FAIR_QUEUED;
	return admit(t, j);
}

size_t jd_jobs_run_timers(struct jd_jobs *t)
{
	uint64_t now = jd_now_ms();
	struct jd_timed *e;
	size_t n = 0;

	while ((e = jd_timeheap_pop_due(&t->timers, now))) {
		struct jd_job *j = job_of_timed(e);

		n++;
		if (j->state == JD_RETRYING) {
			admit(t, j); /* its next attempt; a deadline passed expires it there */
			continue;
		}
		if (j->state != JD_SCHEDULED)
			continue;
		if (now >= j->not_before_ms)
			admit(t, j);
		else
			jd_job_finish(t, j, JD_EXPIRED, JP_CAUSE_DEADLINE,
				      "its deadline passed before its not_before time");
	}
	jd_jobs_settle(t);
	timer_arm(t);
	return n;
}

void jd_jobs_cancel_scheduled(struct jd_jobs *t)
{
	struct jd_timed *e;

	while ((e = jd_timeheap_pop_due(&t->timers, UINT64_MAX))) {
		struct jd_job *j = job_of_timed(e);

		j->shutdown_cancel = true;
		jd_job_finish(t, j, JD_CANCELLED, JP_CAUSE_SHUTDOWN, "its time had not come at a "
			      "graceful shutdown, and without a journal it cannot be kept for the "
			      "next start");
	}
}

/* fair_inputs: j's record in the fair layer (j->run->fj) takes the job's admission
 * fields before it is admitted: its id, priority, cost, deadline, class and amounts. */
static void fair_inputs(struct jd_job *j)
{
	struct jd_fair_job *fj = &j->run->fj;

	fj->id = j->id;
	fj->prio = j->prio;
	fj->cost = j->cost;
	fj->deadline_ns = j->deadline_ns;
	fj->cls = j->cls;
	memcpy(fj->amount, j->amount, sizeof(fj->amount));
}

/* admit: the job enters its client's fair queue now. */
static int admit(struct jd_jobs *t, struct jd_job *j)
{
	int rc;

	move_state(t, j, JD_QUEUED);
	j->run->queued_ns = jd_now_ns();
	/* Reported before the admission, which may end the job at once (a drop): the
	 * queued state comes first.  The daemon's hook kicks a worker and re-arms the
	 * deadline timer once the settle is done. */
	report(t, JD_CHANGE_QUEUED, j);
	if (j->arr) {
		/* An array's parent is never run: its elements are. */
		jd_array_activate(t, j);
		return 0;
	}
	fair_inputs(j);
	rc = jd_fair_admit(t->fair, j->client->fc, &j->run->fj);
	if (rc < 0) {
		/* No room (a limit lowered under a waiting job, or the global cap). */
		jd_job_finish(t, j, JD_DROPPED, JP_CAUSE_OVERFLOW, "no room in the queue when its "
			      "dependencies were met");
		return rc;
	}
	if (rc == JD_FAIR_BLOCKED)
		j->client->blocked = true;
	/* Held while it was scheduled: held in the queue from its first moment there. */
	if (j->held && j->state == JD_QUEUED && jd_fair_hold(t->fair, &j->run->fj) < 0)
		j->held = false;
	return rc;
}

void jd_job_set_running(struct jd_jobs *t, struct jd_job *j)
{
	if (j->state != JD_QUEUED)
		return;
	move_state(t, j, JD_RUNNING);
	j->started_ms = j->run->run_started_ms;
	j->started_ns = j->run->run_started_ns;
	report(t, JD_CHANGE_RUNNING, j);
	if (j->elem_of && j->elem_of->parent->state == JD_QUEUED) {
		/* The first element to start: the array runs. */
		struct jd_job *p = j->elem_of->parent;

		move_state(t, p, JD_RUNNING);
		if (!p->started_ms) { /* a recovered array keeps its first start */
			p->started_ms = j->started_ms;
			p->started_ns = j->started_ns;
		}
		report(t, JD_CHANGE_RUNNING, p);
	}
}

void jd_job_report_array_stop(struct jd_jobs *t, const struct jd_job *p, enum jd_state s,
			      enum jp_cause cause)
{
	struct jd_change ch = {.kind = JD_CHANGE_ARRAY_STOP, .job = p, .state = (uint8_t)s,
			       .cause = (uint8_t)cause};

	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

void jd_hook_free(struct jd_hook *h)
{
	if (!h)
		return;
	free(h->on_exit);
	free(h->reason);
	free(h);
}

void jd_job_hook_set(struct jd_jobs *t, struct jd_job *j, enum jd_hook_state s, int exit_code,
		     int signal, const char *reason, uint64_t now_ms)
{
	struct jd_hook *h = j->hook;
	struct jd_change ch = {.kind = JD_CHANGE_HOOK, .job = j};

	h->state = (uint8_t)s;
	h->exit_code = exit_code;
	h->signal = signal;
	free(h->reason);
	h->reason = reason ? strdup(reason) : NULL;
	if (h->reason)
		jp_utf8_scrub(h->reason);
	if (s == JD_HOOK_RUNNING)
		h->claimed_ms = now_ms;
	else if (s != JD_HOOK_PENDING)
		h->finished_ms = now_ms;
	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

void jd_job_process_started(struct jd_jobs *t, struct jd_job *j, pid_t pid)
{
	struct jd_change ch = {.kind = JD_CHANGE_PROCESS, .job = j, .pid = pid};

	j->run->proc_pid = pid;

	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

void jd_job_remote_submitted(struct jd_jobs *t, struct jd_job *j, uint32_t remote_id,
			     const char *tag)
{
	struct jd_change ch = {.kind = JD_CHANGE_REMOTE, .job = j, .remote_id = remote_id,
			       .remote_tag = tag};

	if (t->hooks && t->hooks->change)
		t->hooks->change(t->hooks->ctx, &ch);
}

int jd_job_add_attempt(struct jd_job *j, const struct jd_attempt *a)
{
	if (j->n_attempts == j->cap_attempts) {
		uint32_t cap = j->cap_attempts ? j->cap_attempts * 2 : 4;
		struct jd_attempt *v = realloc(j->attempts, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		j->attempts = v;
		j->cap_attempts = cap;
	}
	j->attempts[j->n_attempts++] = *a;
	return 0;
}

/* attempt_of: how j's current attempt ended, in state s with cause. */
static struct jd_attempt attempt_of(const struct jd_job *j, enum jd_state s, enum jp_cause cause,
				    uint64_t now_ms)
{
	struct jd_attempt a = {.started_ms = j->started_ms, .finished_ms = now_ms, .exit_code = -1,
			       .state = (uint8_t)s, .cause = (uint8_t)cause};

	if (j->exec && j->exec->res.end == JD_EXEC_EXITED)
		a.exit_code = j->exec->res.exit_code;
	else if (j->exec && j->exec->res.end == JD_EXEC_SIGNALED)
		a.signal = j->exec->res.signal;
	return a;
}

/* new_attempt: forget how j's last attempt ran (its result, its worker's fields), so that
 * it can run again.  j has its run part (a final job is given a new one first). */
static void new_attempt(struct jd_job *j)
{
	jd_exec_job_reset(j->exec);
	free(j->value);
	j->value = NULL;
	j->value_len = 0;
	j->value_file = false; /* a stale file is written over (O_TRUNC) if it spills again */
	free(j->run->run_value);
	j->run->run_value = NULL;
	j->run->run_value_len = 0;
	free(j->run->run_error);
	j->run->run_error = NULL;
	j->run->run_rc = 0;
	j->run->proc_pid = 0;
	/* The notice's wake bit stays (runner.c): what waited for this end waits for the
	 * next. */
	jd_cancel_init(&j->run->ctok);
	j->started_ms = 0;
	j->started_ns = 0;
	j->cancel_requested = false;
}

/* retry_later: j's attempt failed with cause, and its policy wants another: record the
 * attempt, and wait in the timer heap for the next (state retrying).  Returns false
 * (nothing changed) when it cannot, and j then ends as it would have. */
static bool retry_later(struct jd_jobs *t, struct jd_job *j, enum jp_cause cause, const char *reason)
{
	uint64_t now = jd_now_ms(), wait;
	struct jd_attempt a = attempt_of(j, JD_FAILED, cause, now);

	if (t->stopping || j->cancel_requested || j->arr || j->elem_of ||
	    j->n_attempts + 1 >= j->retry->max_attempts ||
	    !jp_retry_wanted(j->retry, (int)cause, a.exit_code))
		return false;
	wait = jp_retry_backoff_ms(j->retry, j->n_attempts + 1);
	j->run->next_attempt_ms = wait > UINT64_MAX - now ? UINT64_MAX : now + wait;
	j->run->timer.due_ms = j->run->next_attempt_ms;
	j->run->timer.tie = j->id;
	if (jd_job_add_attempt(j, &a) < 0)
		return false;
	if (jd_timeheap_push(&t->timers, &j->run->timer) < 0) {
		j->n_attempts--;
		return false;
	}
	free(j->reason);
	j->reason = reason ? strdup(reason) : NULL; /* the last failure's, until the next */
	if (j->reason)
		jp_utf8_scrub(j->reason);
	move_state(t, j, JD_RETRYING);
	report(t, JD_CHANGE_RETRYING, j);
	new_attempt(j);
	timer_arm(t);
	return true;
}

void jd_job_restore_retrying(struct jd_jobs *t, struct jd_job *j)
{
	j->run->timer.due_ms = j->run->next_attempt_ms;
	j->run->timer.tie = j->id;
	if (jd_timeheap_push(&t->timers, &j->run->timer) < 0)
		j->run->timer.due_ms = 0; /* no memory: it is due now, at the first timer */
	timer_arm(t);
}

int jd_job_retry(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_attempt a;

	if (!jd_state_final(j->state) || j->on_settle)
		return JSCHED_EINVAL;
	/* What only running it needed was dropped when it ended (shed): a call's args, a
	 * command's stdin. */
	if (j->arr || j->elem_of || j->kind == JD_KIND_CALL ||
	    (j->exec && j->exec->spec.has_stdin && j->exec->spec.stdin_len && !j->exec->spec.stdin_data))
		return JSCHED_ENOT_SUPPORTED;
	if (run_alloc(t, j) < 0)
		return JSCHED_ENOMEM;
	a = attempt_of(j, j->state, j->cause, j->finished_ms);
	if (jd_job_add_attempt(j, &a) < 0)
		return JSCHED_ENOMEM;
	/* Out of retention (a pinned job is out of it already, and stays pinned). */
	if (j->retained)
		unretain(t, j);
	j->retain_deferred = false;
	t->n_live++;
	move_state(t, j, JD_WAITING);
	j->cause = JP_CAUSE_NONE;
	j->finished_ms = 0;
	j->finished_ns = 0;
	new_attempt(j);
	report(t, JD_CHANGE_RETRIED, j);
	jd_job_release(t, j);
	return 0;
}

void jd_job_value_spill(struct jd_jobs *t, struct jd_job *j)
{
	if (!t->outfiles || !j->value || j->value_len <= t->value_spill_bytes || j->array_id ||
	    j->arr || !jd_state_final(j->state))
		return;
	if (jd_outfiles_value_write(t->outfiles, j->id, j->value, j->value_len) < 0)
		return;
	free(j->value);
	j->value = NULL;
	j->value_file = true;
	t->releases++; /* the heap may give pages back (main.c) */
}

bool jd_job_finish(struct jd_jobs *t, struct jd_job *j, enum jd_state s, enum jp_cause cause,
		   const char *reason)
{
	if (jd_state_final(j->state))
		return false;
	if (s == JD_FAILED && j->retry && retry_later(t, j, cause, reason))
		return true;
	/* An array that ends before its elements did (a dependency, a deadline): they end
	 * with it. */
	if (j->arr && j->arr->done < j->arr->n)
		jd_array_finish_pending(t, j, s, cause, reason);
	/* A waiting job leaves its targets' dependents lists now: it may be forgotten
	 * (freed) before they end. */
	wdl_stop(j);
	jd_timeheap_remove(&t->timers, &j->run->timer);
	if (j->state == JD_WAITING)
		for (uint32_t k = 0; k < j->n_deps; k++)
			if (j->deps[k].target) {
				remove_dependent(j->deps[k].target, j);
				j->deps[k].target = NULL;
			}
	move_state(t, j, s);
	t->n_live--;
	j->finished_ms = jd_now_ms();
	j->finished_ns = jd_now_ns();
	j->cause = s == JD_SUCCEEDED ? JP_CAUSE_NONE : cause;
	free(j->reason);
	j->reason = reason && s != JD_SUCCEEDED ? strdup(reason) : NULL;
	if (j->reason)
		jp_utf8_scrub(j->reason); /* may end in a character a fixed buffer cut */
	/* Settled in the order jobs ended: retention keeps the newest, watch events and
	 * wait replies come in completion order. */
	j->run->settle_next = NULL;
	if (t->to_settle_tail)
		t->to_settle_tail->run->settle_next = j;
	else
		t->to_settle = j;
	t->to_settle_tail = j;
	j->on_settle = true;
	report(t, JD_CHANGE_FINAL, j);
	return true;
}

enum jp_cause jd_job_stop_cause(const struct jd_jobs *t, const struct jd_job *j)
{
	return j->shutdown_cancel || t->stopping ? JP_CAUSE_SHUTDOWN : JP_CAUSE_CANCEL;
}

bool jd_job_stop_asked(const struct jd_jobs *t, const struct jd_job *j)
{
	return j->cancel_requested || t->stopping;
}

bool jd_job_finish_stopped(struct jd_jobs *t, struct jd_job *j, bool started)
{
	enum jp_cause cause = jd_job_stop_cause(t, j);
	const char *why = cause != JP_CAUSE_SHUTDOWN ? "cancelled by request"
			  : started		    ? "stopped by an immediate shutdown"
						    : "cancelled by an immediate shutdown";

	return jd_job_finish(t, j, JD_CANCELLED, cause, why);
}

bool jd_job_cancel(struct jd_jobs *t, struct jd_job *j, enum jp_cause cause)
{
	if (cause == JP_CAUSE_SHUTDOWN && !jd_state_final(j->state))
		j->shutdown_cancel = true;
	if (j->arr)
		return jd_array_cancel(t, j, cause);
	switch (j->state) {
	case JD_WAITING:
	case JD_SCHEDULED:
	case JD_RETRYING:
		jd_job_finish_stopped(t, j, false);
		return false;
	case JD_QUEUED:
		/* Still in the fair queue, unless a worker has just taken it (then its
		 * start notice is on its way: treat it as running). */
		if (jd_fair_cancel(t->fair, &j->run->fj) == 0) {
			jd_job_finish_stopped(t, j, false);
			return false;
		}
		/* fall through */
	case JD_RUNNING:
		j->cancel_requested = true;
		if (t->hooks && t->hooks->stop)
			t->hooks->stop(t->hooks->ctx, j);
		return true;
	default:
		return false;
	}
}

void jd_jobs_cancel_all(struct jd_jobs *t)
{
	struct jd_job **v = malloc((t->count ? t->count : 1) * sizeof(*v));
	struct jd_jobs_iter it;
	struct jd_job *j;
	size_t n = 0;

	t->stopping = true;
	/* Collect first: cancelling changes the table's lists (never the hash, but the
	 * settle list), and keeps this loop simple to reason about.  Jobs that have not
	 * started go first: a running job asked to stop frees its worker at once, and that
	 * worker would otherwise start a queued job not yet cancelled (a noop then
	 * "succeeded" during an immediate shutdown, 4 runs in 20 of the lifecycle test under
	 * ASan). */
	if (!v)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (jd_jobs_iter_init(t, &it); (j = jd_jobs_iter_next(t, &it));)
			if (!jd_state_final(j->state) && (j->state == JD_RUNNING) == (pass == 1))
				v[n++] = j;
	for (size_t i = 0; i < n; i++)
		jd_job_cancel(t, v[i], JP_CAUSE_SHUTDOWN);
	free(v);
}

/* shed: j has ended: drop what only running it needed, its args (a call's) or its
 * stdin (a command's; stdin_len stays, for the record's detail). */
static void shed(struct jd_jobs *t, struct jd_job *j)
{
	live_sub(t, j);
	jd_job_drop_run(j);
	if (j->args || (j->exec && j->exec->spec.stdin_data))
		t->releases++;
	json_decref(j->args);
	j->args = NULL;
	if (j->exec && j->exec->spec.stdin_data) {
		free(j->exec->spec.stdin_data);
		j->exec->spec.stdin_data = NULL;
	}
}

/* retain: j has settled; keep its record for the retention period, its bytes counted.
 * An array's element (not a view) leaves the table instead: its slot keeps its result
 * (array.h). */
static void retain(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_client *c = j->client;

	if (j->array_id && !j->elem_view) {
		table_remove(t, j);
		job_free(j);
		return;
	}
	j->rprev = t->retained_tail;
	j->rnext = NULL;
	if (t->retained_tail)
		t->retained_tail->rnext = j;
	else
		t->retained_head = j;
	t->retained_tail = j;
	t->n_retained++;
	j->retained = true;
	j->mem = jd_job_mem_bytes(j);
	t->retained_bytes += j->mem;
	j->cprev = c->rtail;
	j->cnext = NULL;
	if (c->rtail)
		c->rtail->cnext = j;
	else
		c->rhead = j;
	c->rtail = j;
	if (c->n_retained++ == 0) {
		c->hprev = NULL;
		c->hnext = t->holders;
		if (t->holders)
			t->holders->hprev = c;
		t->holders = c;
		t->n_holders++;
	}
	c->retained_bytes += j->mem;
}

/* unretain: take j off the retention list. */
static void unretain(struct jd_jobs *t, struct jd_job *j)
{
	struct jd_client *c = j->client;

	if (j->rprev)
		j->rprev->rnext = j->rnext;
	else
		t->retained_head = j->rnext;
	if (j->rnext)
		j->rnext->rprev = j->rprev;
	else
		t->retained_tail = j->rprev;
	j->rnext = j->rprev = NULL;
	j->retained = false;
	t->n_retained--;
	t->retained_bytes -= j->mem;
	if (j->cprev)
		j->cprev->cnext = j->cnext;
	else
		c->rhead = j->cnext;
	if (j->cnext)
		j->cnext->cprev = j->cprev;
	else
		c->rtail = j->cprev;
	j->cnext = j->cprev = NULL;
	c->retained_bytes -= j->mem;
	if (--c->n_retained == 0) {
		if (c->hprev)
			c->hprev->hnext = c->hnext;
		else
			t->holders = c->hnext;
		if (c->hnext)
			c->hnext->hprev = c->hprev;
		c->hnext = c->hprev = NULL;
		t->n_holders--;
		if (t->last_victim == c)
			t->last_victim = NULL;
	}
}

void jd_job_pin(struct jd_jobs *t, struct jd_job *j)
{
	/* Already retained (it ended before the wait): out of the list until unpinned. */
	if (j->pins++ == 0 && j->retained) {
		unretain(t, j);
		j->retain_deferred = true;
	}
}

void jd_job_unpin(struct jd_jobs *t, struct jd_job *j)
{
	if (--j->pins == 0 && j->retain_deferred) {
		j->retain_deferred = false;
		retain(t, j);
	}
}

/* forget: retention drops j (retained) for reason `why`. */
static void forget(struct jd_jobs *t, struct jd_job *j, enum jd_forget_why why)
{
	/* Nothing references a retained job: pending waits pin theirs, which enter
	 * retention only once the last wait on them has answered. */
	unretain(t, j);
	t->forgotten++;
	t->forgotten_by[why]++;
	t->releases++;
	j->client->forgotten++;
	table_remove(t, j);
	if (j->arr)
		jd_arrays_remove(t, j);
	report(t, JD_CHANGE_FORGOTTEN, j);
	job_free(j);
}

/* over_share: does c hold more than the mean of the clients holding retained jobs (in
 * bytes, or in jobs)?  The largest holder always does while the total is over a bound. */
static bool over_share(const struct jd_jobs *t, const struct jd_client *c, bool bytes)
{
	return bytes ? c->retained_bytes * t->n_holders > t->retained_bytes
		     : c->n_retained * t->n_holders > t->n_retained;
}

/* victim: a client over its share: the client of the job retained last (under a flood,
 * the flooder), else the one retention took from last, else the largest holder (a scan
 * of the holders, which only a change of who is over its share needs). */
static struct jd_client *victim(struct jd_jobs *t, bool bytes)
{
	struct jd_client *c = t->retained_tail ? t->retained_tail->client : NULL, *best;

	if (c && c->n_retained && over_share(t, c, bytes))
		return c;
	if ((c = t->last_victim) && over_share(t, c, bytes))
		return c;
	best = t->holders;
	for (c = t->holders; c; c = c->hnext)
		if (bytes ? c->retained_bytes > best->retained_bytes : c->n_retained > best->n_retained)
			best = c;
	return best;
}

/* age: how long ago fin was, by *now: the loop iteration's time (jd_loop_now_ns), which
 * a job that ended in this iteration is younger than; then *now is read from the clock
 * (once), so such a job's age is what it was before the iteration's time was used (0 s
 * of retention still forgets it in the settle it ended in).  Only a job that passed an
 * age limit during the iteration is judged by the iteration's start, and so forgotten at
 * the next trim. */
static uint64_t age(uint64_t *now, bool *fresh, uint64_t fin)
{
	if (*now <= fin && !*fresh) {
		*now = jd_now_ns();
		*fresh = true;
	}
	return *now > fin ? *now - fin : 0;
}

void jd_jobs_trim(struct jd_jobs *t)
{
	uint64_t now = jd_loop_now_ns();
	bool fresh = false;

	while (t->retained_head && age(&now, &fresh, t->retained_head->finished_ns) > t->retain_ns)
		forget(t, t->retained_head, JD_FORGET_AGE);
	while (t->retained_head) {
		bool bytes = t->retained_bytes > t->retain_bytes;
		struct jd_client *c;
		struct jd_job *j;

		if (!bytes && t->n_retained <= t->retain_jobs)
			break;
		c = victim(t, bytes);
		j = c->rhead;
		/* The count waits for the reading time; the memory bound does not. */
		if (!bytes && age(&now, &fresh, j->finished_ns) < t->retain_min_ns)
			break;
		t->last_victim = c;
		forget(t, j, bytes ? JD_FORGET_BYTES : JD_FORGET_JOBS);
	}
}

void jd_jobs_settle(struct jd_jobs *t)
{
	while (t->to_settle) {
		struct jd_job *j = t->to_settle;
		struct jd_job **deps;
		uint32_t n;

		t->to_settle = j->run->settle_next;
		if (!t->to_settle)
			t->to_settle_tail = NULL;
		j->on_settle = false;
		if (t->hooks && t->hooks->settled)
			t->hooks->settled(t->hooks->ctx, j);
		/* Judge the dependents.  Detach the list first: judging may finish a
		 * dependent, whose own settling comes later through the same list. */
		deps = j->run->dependents;
		n = j->run->n_dependents;
		j->run->dependents = NULL;
		j->run->n_dependents = j->run->cap_dependents = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct jd_job *dj = deps[i];

			if (dj->state != JD_WAITING)
				continue;
			for (uint32_t k = 0; k < dj->n_deps; k++)
				if (dj->deps[k].target == j) {
					int r = judge(t, dj, k, j->state);

					if (r == 1)
						jd_job_release(t, dj);
					if (r != 0)
						break;
				}
		}
		free(deps);
		if (j->elem_of)
			jd_array_elem_settled(t, j);
		shed(t, j);
		if (j->pins)
			j->retain_deferred = true; /* a wait still reads it: not forgettable */
		else
			retain(t, j);
		if (!t->to_settle && t->active)
			jd_arrays_refill_all(t); /* room may have come back (array.h) */
	}
	jd_jobs_trim(t);
	if (t->hooks && t->hooks->settle_done)
		t->hooks->settle_done(t->hooks->ctx);
}

struct jd_job *jd_job_get(struct jd_jobs *t, uint64_t id, bool *forgotten)
{
	struct jd_job *j = jd_job_find(t, id, forgotten), *p;
	struct jd_array_elem *e;
	uint64_t pos;

	if (j || !(p = jd_arrays_find(t, id, &pos)) || !t->hooks || !t->hooks->make_element)
		return j;
	if (forgotten)
		*forgotten = false;
	e = &p->arr->el[pos];
	if (!(j = t->hooks->make_element(t->hooks->ctx, p, pos)))
		return NULL;
	if (!jd_state_final(e->state)) {
		/* Not released yet: made now, waiting its turn (the array releases it). */
		j->elem_of = p->arr;
		e->flags |= JD_ELEM_LIVE;
		jd_job_insert(t, j, NULL);
		return j;
	}
	/* Compacted: shown again from its slot, retained as any final job (no counts: it
	 * was counted when it ended). */
	jd_array_view_fill(j, p->arr, pos);
	if (t->count >= t->n_buckets)
		grow(t);
	j->hnext = t->buckets[j->id & (t->n_buckets - 1)];
	t->buckets[j->id & (t->n_buckets - 1)] = j;
	t->count++;
	retain(t, j);
	return j;
}
