/* daemon/run/exec_cgroup.c: the control groups of the local exec path (cgroup.c does the
 * file work; this file decides when, for which client and job, and keeps the counts).
 *
 * At start (jd_exec_cgroups_open, after the socket is ours): detect what applies, say it
 * in the log, and kill and remove the groups a crashed daemon left (their job ids go to
 * the log and the metrics).  The subtree's name is cgroups.name, else "jschedd" for the
 * system socket and "jschedd-<hash of the socket path>" for any other, so two daemons
 * (tests, users) never share one, and a restarted daemon finds its own leftovers: only one
 * daemon can hold a socket at a time (net/server.c refuses a live one).
 *
 * Per command (exec.c): a group job-ID (a call handler's processes: job-ID-SEQ) under the
 * client's group, whose CPU weight follows the client's fair-share weight; it is checked
 * at each spawn, so a set_client or a reload reaches the kernel with the client's next
 * command.  When the command has ended, its usage is read into its result and the group
 * removed; a group that still holds a dying process is retried every 100 ms, and one that
 * never empties is left for the next start's recovery (and counted).
 *
 * Groups are reused where the mode allows it (cgroup.h, jd_cg_can_reuse: v1): a command's
 * group that ended empty, created without limits of its own, is parked (its job's name
 * taken off by one rename, its counters kept as the next command's base) instead of
 * removed, and the next command of the same client without limits that needs the same
 * hierarchies takes it by a rename instead of a mkdir in every hierarchy; at most
 * SPARES_MAX are kept, SPARES_PER_CLIENT per client, and they are removed at exit (a
 * crash leaves them empty for the next start's sweep).
 *
 * A command is attached only to the hierarchies it needs (cgroup.h, jd_cg_job_create's
 * skip): v1's pids hierarchy only when the job or its client has a pids limit.  Without
 * one, its group there would count forks refused at limits that are not jschedd's and
 * nothing else; kill (freezer), accounting (cpuacct, memory), the client's weight (cpu)
 * and OOM causes (memory) need the others.  The figures are in daemon/README.md
 * ("Commands in control groups").
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/clients.h"
#include "daemon/core/log.h"
#include "daemon/run/cgroup.h"
#include "daemon/run/exec.h"
#include "jsched/error.h"
#include "proto/jproto.h"

#define PENDING_TRIES 100	/* 100 ms apart: 10 s for a group to empty after its kill */
#define RECOVER_MAX 4096	/* a previous run's groups listed and settled, at most */
#define RECOVER_LISTED 64	/* of them, in the metrics */
#define SPARES_MAX 64		/* parked groups kept for reuse, in all */
#define SPARES_PER_CLIENT 8	/* and per client */

/* What was last written for one client's group. */
struct cg_client {
	const struct jd_client *client;
	uint32_t weight;
	struct jd_cg_limits l;
	struct cg_client *next;
};

static struct jd_cg_limits client_limits(const struct jd_client_conf *cc)
{
	return (struct jd_cg_limits){cc->memory_max, cc->pids_max, cc->cpu_milli};
}

/* same_limits: whether a and b set the same limits.  Member by member: the struct's
 * padding holds whatever the stack held, so a memcmp found differences at random (in
 * the exec benchmark's setting the client's group was written again before more than
 * half of its commands: five mkdirs and seven control files each time). */
static bool same_limits(const struct jd_cg_limits *a, const struct jd_cg_limits *b)
{
	return a->memory_max == b->memory_max && a->pids_max == b->pids_max &&
	       a->cpu_max_milli == b->cpu_max_milli;
}

/* A parked group (jd_cg_job_park), its client's name in g.client. */
struct cg_spare {
	struct jd_cg_job *g;
	struct cg_spare *next;
};

/* A finished command's group that still holds a process. */
struct cg_pending {
	struct jd_cg_job g;
	unsigned tries;
	struct cg_pending *next;
};

/* subtree_name: cgroups.name, or the name for this socket path. */
static void subtree_name(const struct jd_exec *x, char *out, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	if (x->cfg->cgroups.name[0]) {
		snprintf(out, len, "%s", x->cfg->cgroups.name);
		return;
	}
	if (strcmp(x->socket_path, "/run/jschedd/jschedd.sock") == 0) {
		snprintf(out, len, "jschedd");
		return;
	}
	for (const unsigned char *s = (const unsigned char *)x->socket_path; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	snprintf(out, len, "jschedd-%016llx", (unsigned long long)h);
}

/* usage_of: a group's usage as a command's (memory_max: the limit it had, 0 none). */
static void usage_of(const struct jd_cg_usage *u, uint64_t memory_max, struct jd_exec_usage *out)
{
	out->has = true;
	out->cpu_us = u->cpu_us;
	out->user_us = u->user_us;
	out->system_us = u->system_us;
	out->memory_peak = u->memory_peak;
	out->memory_max = memory_max;
	out->oom_kills = u->oom_kills;
	out->pids_max_hits = u->pids_max_hits;
}

int jd_exec_cgroups_open(struct jd_exec *x, char *err, size_t errlen)
{
	struct jd_cg_conf conf = {0};
	char name[80], list[256] = "";
	size_t n = 0, total = 0;
	struct jd_cg_usage *used;
	int rc;

	if (!(x->cg = calloc(1, sizeof(*x->cg))))
		return JSCHED_ENOMEM;
	subtree_name(x, name, sizeof(name));
	conf.name = name;
	conf.mode = x->cfg->cgroups.mode[0] ? x->cfg->cgroups.mode : "auto";
	if ((rc = jd_cg_open(x->cg, &conf)) < 0) {
		snprintf(err, errlen, "cgroups.mode %s: %s", conf.mode, x->cg->reason);
		return rc;
	}
	/* Without a journal no job outlives the process, so a restart has nothing to settle
	 * by a group's job id: reusable groups keep their neutral name (cgroup.h). */
	x->cg->unnamed = x->cfg->journal_sync == JD_JOURNAL_OFF;
	if (x->cg->mode != JD_CG_NONE && !x->helper[0]) {
		/* A command places itself in its group through the helper (cgroup.h). */
		jd_cg_close(x->cg);
		snprintf(x->cg->reason, sizeof(x->cg->reason),
			 "jschedd-runas, which places each command in its group, was not found");
	}
	jd_log(JD_LOG_INFO, "cgroups: %s: %s", jd_cg_mode_name(x->cg->mode), x->cg->reason);
	if (x->cg->mode == JD_CG_NONE)
		return 0;
	x->recovered = calloc(RECOVER_MAX, sizeof(*x->recovered));
	used = calloc(RECOVER_MAX, sizeof(*used));
	x->recovered_usage = calloc(RECOVER_MAX, sizeof(*x->recovered_usage));
	if (!x->recovered || !used || !x->recovered_usage) {
		free(used);
		snprintf(err, errlen, "out of memory");
		return JSCHED_ENOMEM;
	}
	rc = jd_cg_recover(x->cg, x->recovered, used, RECOVER_MAX, &n, &total);
	for (size_t i = 0; i < n; i++)
		usage_of(&used[i], 0, &x->recovered_usage[i]);
	free(used);
	x->n_recovered = n;
	for (size_t i = 0; i < n && strlen(list) + 24 < sizeof(list); i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%llu", i ? ", " : "",
			 (unsigned long long)x->recovered[i]);
	if (total)
		jd_log(JD_LOG_WARN, "cgroups: killed and removed %zu groups a previous run left: jobs %s%s",
		       total, list, total > n ? ", ..." : "");
	if (rc < 0)
		jd_log(JD_LOG_WARN, "cgroups: some groups of a previous run could not be removed: %s",
		       x->cg->error);
	return 0;
}

/* pending_cb: retry the removal of groups that still held a process. */
static void pending_cb(uv_timer_t *t)
{
	struct jd_exec *x = t->data;

	for (struct cg_pending **pp = &x->cg_pending; *pp;) {
		struct cg_pending *q = *pp;

		if (jd_cg_populated(x->cg, &q->g))
			(void)jd_cg_kill(x->cg, &q->g);
		if (jd_cg_job_remove(x->cg, &q->g) == 0 || ++q->tries >= PENDING_TRIES) {
			if (q->tries >= PENDING_TRIES) {
				x->cg_abandoned++;
				jd_log(JD_LOG_WARN, "cgroups: %s still holds a process; left for the next start",
				       q->g.dir[0]);
			}
			*pp = q->next;
			free(q);
			continue;
		}
		pp = &q->next;
	}
	if (!x->cg_pending)
		uv_timer_stop(t);
}

void jd_exec_client_forget(struct jd_exec *x, const struct jd_client *client)
{
	for (struct cg_client **pp = &x->cg_clients; *pp; pp = &(*pp)->next) {
		struct cg_client *c = *pp;

		if (c->client == client) {
			*pp = c->next;
			free(c);
			return;
		}
	}
}

void jd_exec_cgroups_close(struct jd_exec *x)
{

	while (x->cg_clients) {
		struct cg_client *c = x->cg_clients;

		x->cg_clients = c->next;
		free(c);
	}
	if (x->cg_timer_on) {
		uv_close((uv_handle_t *)&x->cg_timer, NULL);
		x->cg_timer_on = false;
	}
	while (x->cg_pending) {
		struct cg_pending *q = x->cg_pending;

		x->cg_pending = q->next;
		(void)jd_cg_kill(x->cg, &q->g);
		(void)jd_cg_job_remove(x->cg, &q->g);
		free(q);
	}
	while (x->cg_spares) {
		struct cg_spare *sp = x->cg_spares;

		x->cg_spares = sp->next;
		(void)jd_cg_job_remove(x->cg, sp->g);
		free(sp->g);
		free(sp);
	}
	x->n_spares = 0;
	if (x->cg) {
		jd_cg_close(x->cg);
		free(x->cg);
		x->cg = NULL;
	}
	free(x->recovered);
	free(x->recovered_usage);
	x->recovered = NULL;
	x->recovered_usage = NULL;
	x->n_recovered = 0;
}

bool jd_exec_recovered(const struct jd_exec *x, uint64_t id, struct jd_exec_usage *u)
{
	bool found = false;

	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < x->n_recovered; i++) {
		const struct jd_exec_usage *g = &x->recovered_usage[i];

		if (x->recovered[i] != id)
			continue;
		found = true;
		u->has = true;
		u->cpu_us += g->cpu_us;
		u->user_us += g->user_us;
		u->system_us += g->system_us;
		u->oom_kills += g->oom_kills;
		u->pids_max_hits += g->pids_max_hits;
		if (g->memory_peak > u->memory_peak)
			u->memory_peak = g->memory_peak;
	}
	return found;
}

bool jd_exec_cgroups_on(const struct jd_exec *x)
{
	return x->cg && x->cg->mode != JD_CG_NONE;
}

/* sync_client: the client's group carries its current weight and limits. */
static int sync_client(struct jd_exec *x, const struct jd_client *client)
{
	struct cg_client *c = x->cg_clients;
	struct jd_cg_limits l = client_limits(&client->conf);
	int rc;

	while (c && c->client != client)
		c = c->next;
	if (c && c->weight == client->conf.weight && same_limits(&c->l, &l))
		return 0;
	if ((rc = jd_cg_client(x->cg, client->name, client->conf.weight, &l)) < 0)
		return rc;
	if (!c) {
		if (!(c = calloc(1, sizeof(*c))))
			return JSCHED_ENOMEM;
		c->client = client;
		c->next = x->cg_clients;
		x->cg_clients = c;
	}
	c->weight = client->conf.weight;
	c->l = l;
	return 0;
}

static bool no_limits(const struct jd_cg_limits *l)
{
	return !l || (!l->memory_max && !l->pids_max && !l->cpu_max_milli);
}

/* spare_take: a parked group of client `name`, made without the controllers `skip`,
 * made job id's (seq), or NULL (none, or the rename failed: that group is removed). */
static struct jd_cg_job *spare_take(struct jd_exec *x, const char *name, unsigned skip,
				    uint64_t id, uint64_t seq)
{
	for (struct cg_spare **pp = &x->cg_spares; *pp; pp = &(*pp)->next) {
		struct cg_spare *sp = *pp;
		struct jd_cg_job *g = sp->g;

		if (strcmp(g->client, name) != 0 || g->skip != skip)
			continue;
		*pp = sp->next;
		free(sp);
		x->n_spares--;
		if (jd_cg_job_reuse(x->cg, g, id, seq) == 0)
			return g;
		jd_log(JD_LOG_WARN, "cgroups: %s", x->cg->error);
		if (jd_cg_job_remove(x->cg, g) < 0)
			jd_log(JD_LOG_WARN, "cgroups: %s", x->cg->error);
		free(g);
		return NULL;
	}
	return NULL;
}

/* spare_park: keep ended group g (empty, without limits of its own; its counters now
 * `now`) for the next command of its client.  Returns true when it was kept (else the
 * caller removes it). */
static bool spare_park(struct jd_exec *x, struct jd_cg_job *g, const struct jd_cg_usage *now)
{
	struct cg_spare *sp;
	unsigned mine = 0;

	if (!jd_cg_can_reuse(x->cg) || x->n_spares >= SPARES_MAX)
		return false;
	for (const struct cg_spare *o = x->cg_spares; o; o = o->next)
		if (strcmp(o->g->client, g->client) == 0 && ++mine >= SPARES_PER_CLIENT)
			return false;
	if (!(sp = malloc(sizeof(*sp))))
		return false;
	if (jd_cg_job_park(x->cg, g, now) < 0) {
		free(sp);
		return false;
	}
	sp->g = g;
	sp->next = x->cg_spares;
	x->cg_spares = sp;
	x->n_spares++;
	return true;
}

int jd_exec_cgroup_create(struct jd_exec *x, const struct jd_job *j, bool own_group,
			  const struct jd_cg_limits *l, struct jd_cg_job **out, char *why, size_t len)
{
	struct jd_cg_job *g;
	uint64_t seq;
	unsigned skip = 0;
	int rc;

	*out = NULL;
	if ((rc = sync_client(x, j->client)) < 0) {
		snprintf(why, len, "cannot create the command's control group: %s", x->cg->error);
		return rc;
	}
	seq = own_group ? 0 : ++x->cg_seq;
	/* No pids limit of its own or its client's: no group in the pids hierarchy. */
	if ((!l || !l->pids_max) && !j->client->conf.pids_max)
		skip |= 1u << JD_CG_PIDS;
	if (no_limits(l) && (g = spare_take(x, j->client->name, skip, j->id, seq))) {
		*out = g;
		return 0;
	}
	if (!(g = malloc(sizeof(*g)))) {
		snprintf(why, len, "out of memory");
		return JSCHED_ENOMEM;
	}
	if ((rc = jd_cg_job_create(x->cg, j->client->name, j->id, seq, l, skip, g)) < 0) {
		snprintf(why, len, "cannot create the command's control group: %s", x->cg->error);
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void jd_exec_cgroup_done(struct jd_exec *x, struct jd_cg_job *g, const struct jd_cg_limits *l,
			 struct jd_exec_usage *usage)
{
	struct jd_cg_usage u;
	struct cg_pending *q;
	bool read = usage && jd_cg_usage(x->cg, g, &u, true) == 0;

	if (read)
		usage_of(&u, l ? l->memory_max : 0, usage);
	/* Reused when it ended empty and was read (its counters are the next base). */
	if (read && no_limits(l) && jd_cg_can_reuse(x->cg) &&
	    (g->empty || !jd_cg_populated(x->cg, g))) {
		struct jd_cg_usage now = u;

		now.cpu_us += g->base.cpu_us;
		now.user_us += g->base.user_us;
		now.system_us += g->base.system_us;
		now.oom_kills += g->base.oom_kills;
		now.pids_max_hits += g->base.pids_max_hits;
		if (spare_park(x, g, &now))
			return;
	}
	if (jd_cg_job_remove(x->cg, g) == 0)
		goto out;
	/* Something is still in it (a process that ignored the stop, or one on its way
	 * out): kill the group and try again later. */
	(void)jd_cg_kill(x->cg, g);
	if (jd_cg_job_remove(x->cg, g) == 0 || !(q = calloc(1, sizeof(*q))))
		goto out;
	q->g = *g;
	free(g);
	q->next = x->cg_pending;
	x->cg_pending = q;
	if (!x->cg_timer_on) {
		uv_timer_init(x->loop, &x->cg_timer);
		x->cg_timer.data = x;
		x->cg_timer_on = true;
	}
	if (!uv_is_active((uv_handle_t *)&x->cg_timer))
		uv_timer_start(&x->cg_timer, pending_cb, 100, 100);
	return;
out:
	free(g);
}

json_t *jd_exec_cgroups_metrics(const struct jd_exec *x)
{
	const struct jd_cg *cg = x->cg;
	json_t *ctl, *rec, *o;
	static const char *const names[JD_CG_NCTL] = {"cpu", "cpuacct", "memory", "pids", "freezer"};

	json_int_t pending = 0;

	if (!cg)
		return json_pack("{s:s, s:s}", "mode", "none", "reason", "not started");
	for (const struct cg_pending *q = x->cg_pending; q; q = q->next)
		pending++;
	ctl = json_array();
	rec = json_array();
	for (int c = 0; c < JD_CG_NCTL; c++)
		if (cg->controllers & (1u << c))
			json_array_append_new(ctl, json_string(names[c]));
	for (size_t i = 0; i < x->n_recovered && i < RECOVER_LISTED; i++)
		json_array_append_new(rec, json_integer((json_int_t)x->recovered[i]));
	o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I}",
		      "mode", jd_cg_mode_name(cg->mode), "how", cg->how, "reason", cg->reason,
		      "controllers", ctl, "created", (json_int_t)cg->stats.created, "removed",
		      (json_int_t)cg->stats.removed, "kills", (json_int_t)cg->stats.kills,
		      "oom_kills", (json_int_t)cg->stats.oom_kills, "pids_limit_hits",
		      (json_int_t)cg->stats.pids_max_hits, "errors", (json_int_t)cg->stats.errors,
		      "recovered", (json_int_t)cg->stats.recovered, "recovered_jobs", rec,
		      "abandoned", (json_int_t)x->cg_abandoned, "pending_removal",
		      pending);
	if (o) {
		json_object_set_new(o, "parked", json_integer((json_int_t)cg->stats.parked));
		json_object_set_new(o, "reused", json_integer((json_int_t)cg->stats.reused));
		json_object_set_new(o, "spares", json_integer((json_int_t)x->n_spares));
		json_object_set_new(o, "client_updates",
				    json_integer((json_int_t)cg->stats.client_updates));
		json_object_set_new(o, "files_read", json_integer((json_int_t)cg->stats.files_read));
	}
	if (o && cg->mode != JD_CG_NONE) {
		/* The subtree's directory per controller (v2: one for all). */
		json_t *roots = json_object();

		for (size_t h = 0; roots && h < cg->nhier; h++)
			for (int c = 0; c < JD_CG_NCTL; c++)
				if (cg->hier[h].ctls & (1u << c))
					json_object_set_new(roots, names[c], json_string(cg->hier[h].base));
		json_object_set_new(o, "root", json_string(cg->hier[0].base));
		json_object_set_new(o, "roots", roots);
	}
	return o;
}

/* limits_ok: 0 when l can be applied here, else JSCHED_ENOT_SUPPORTED with why. */
static int limits_ok(const struct jd_exec *x, const struct jd_cg_limits *l, char *why, size_t len)
{
	if (!l->memory_max && !l->pids_max && !l->cpu_max_milli)
		return 0;
	if (!x->cg) {
		snprintf(why, len, "resource limits need cgroups, which are not set up");
		return JSCHED_ENOT_SUPPORTED;
	}
	return jd_cg_can_limit(x->cg, l, why, len);
}

int jd_exec_limits_ok(const struct jd_exec *x, const struct jp_job_spec *sp, char *why,
		      size_t len)
{
	struct jd_cg_limits l = {sp->res_memory, sp->res_pids, sp->res_cpu_milli};

	return limits_ok(x, &l, why, len);
}

int jd_exec_client_limits_ok(const struct jd_exec *x, const struct jd_client_conf *cc,
			     char *why, size_t len)
{
	struct jd_cg_limits l = client_limits(cc);
	char inner[PATH_MAX + 300];
	int rc = limits_ok(x, &l, inner, sizeof(inner));

	if (rc < 0)
		snprintf(why, len, "the client's limits cannot be applied: %s", inner);
	return rc;
}
