/* daemon/core/clients.c: the client registry (see clients.h). */
#include "daemon/core/clients.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/clock.h"
#include "daemon/core/log.h"

/* fair_conf: the fair layer's view of a client's settings.  max_processes is a maximum
 * of the fair layer's "process" resource (the runner registers it before any client). */
static void fair_conf(struct jd_fair *f, const struct jd_client_conf *cc,
		      struct jd_fair_client_config *fc)
{
	enum jd_fair_overflow o = JD_FAIR_REJECT;
	int proc = jd_fair_resource_find(f, "process");

	memset(fc, 0, sizeof(*fc));
	jd_fair_overflow_parse(jd_overflow_name(cc->overflow), &o);
	fc->weight = cc->weight;
	fc->max_queued = cc->max_queued;
	fc->overflow = o;
	fc->max_running = cc->max_running;
	if (proc >= 0)
		fc->max_res[proc] = cc->max_processes;
}

void jd_clients_init(struct jd_clients *cs, const struct jd_config *cfg,
		     const struct jd_jobs_hooks *hooks)
{
	memset(cs, 0, sizeof(*cs));
	cs->cfg = cfg;
	cs->hooks = hooks;
}

struct jd_client *jd_client_find(const struct jd_clients *cs, const char *name)
{
	for (struct jd_client *c = cs->head; c; c = c->next)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

bool jd_client_idle(const struct jd_client *c)
{
	if (c->conns || c->conf_pinned || c->paused || c->n_retained)
		return false;
	for (int s = 0; s < JD_NSTATES; s++)
		if (c->by_state[s])
			return false;
	return true;
}

void jd_client_attach(struct jd_client *c)
{
	c->conns++;
	c->idle_since_ms = 0;
}

void jd_client_detach(struct jd_client *c)
{
	if (c->conns && --c->conns == 0 && jd_client_idle(c))
		c->idle_since_ms = jd_now_ms();
}

/* forget: unlink c (at *pp in the registry's list) and free it, once the fair layer has
 * let it go (it refuses a client with jobs: then c is kept).  Returns whether it went. */
static bool forget(struct jd_clients *cs, struct jd_client **pp)
{
	struct jd_client *c = *pp;
	struct jd_change ch = {.kind = JD_CHANGE_CLIENT_FORGOTTEN, .client = c};

	if (jd_fair_client_remove(cs->fair, c->fc) < 0) {
		c->idle_since_ms = 0;
		return false;
	}
	*pp = c->next;
	cs->count--;
	cs->forgotten++;
	if (cs->hooks && cs->hooks->change)
		cs->hooks->change(cs->hooks->ctx, &ch);
	jd_log(JD_LOG_DEBUG, "idle client '%s' forgotten", c->name);
	if (c->lat)
		jd_latency_free(c->lat);
	jd_idx_free(&c->idx);
	free(c->lat);
	free(c);
	return true;
}

size_t jd_clients_forget_idle(struct jd_clients *cs, uint64_t now_ms)
{
	uint64_t idle_ms = (uint64_t)cs->cfg->client_idle_seconds * 1000u;
	struct jd_client **pp = &cs->head;
	size_t n = 0;

	while (*pp) {
		struct jd_client *c = *pp;

		if (!jd_client_idle(c))
			c->idle_since_ms = 0;
		else if (!c->idle_since_ms)
			c->idle_since_ms = now_ms ? now_ms : 1;
		else if (now_ms >= c->idle_since_ms && now_ms - c->idle_since_ms >= idle_ms &&
			 forget(cs, pp)) {
			n++;
			continue;
		}
		pp = &c->next;
	}
	return n;
}

bool jd_client_room(struct jd_clients *cs, const char *name)
{
	struct jd_client **pp, **oldest = NULL;

	if (cs->count < cs->cfg->max_clients || jd_client_find(cs, name) != NULL)
		return true;
	/* At the cap: the client idle longest makes room (one not yet seen idle by a sweep
	 * counts as idle since now). */
	for (pp = &cs->head; *pp; pp = &(*pp)->next) {
		uint64_t since = (*pp)->idle_since_ms ? (*pp)->idle_since_ms : UINT64_MAX;

		if (jd_client_idle(*pp) && (!oldest || since < ((*oldest)->idle_since_ms
								     ? (*oldest)->idle_since_ms
								     : UINT64_MAX)))
			oldest = pp;
	}
	return oldest && forget(cs, oldest);
}

struct jd_client *jd_client_get(struct jd_clients *cs, const char *name)
{
	struct jd_client *c = jd_client_find(cs, name), **tail;
	struct jd_fair_client_config fc;

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->idx.pos_off = offsetof(struct jd_job, ipos_client);
	c->conf = *jd_config_client(cs->cfg, name);
	fair_conf(cs->fair, &c->conf, &fc);
	if (jd_fair_client_add(cs->fair, c->name, &fc, c, &c->fc) < 0) {
		free(c);
		return NULL;
	}
	/* Append: metrics list clients in the order they first appeared. */
	for (tail = &cs->head; *tail; tail = &(*tail)->next)
		;
	*tail = c;
	cs->count++;
	jd_log(JD_LOG_DEBUG, "new client '%s' (weight %u)", c->name, c->conf.weight);
	return c;
}

/* apply: push c->conf to the fair layer.  Returns 0 or a JSCHED_E* code. */
static int apply(struct jd_clients *cs, struct jd_client *c)
{
	struct jd_fair_client_config fc;

	fair_conf(cs->fair, &c->conf, &fc);
	return jd_fair_client_set(cs->fair, c->fc, &fc);
}

int jd_client_set(struct jd_clients *cs, struct jd_client *c, const struct jd_client_conf *conf)
{
	struct jd_change ch = {.kind = JD_CHANGE_CLIENT, .client = c};
	int rc;

	c->conf = *conf;
	c->conf_pinned = true;
	if ((rc = apply(cs, c)) < 0)
		return rc;
	if (cs->hooks && cs->hooks->change)
		cs->hooks->change(cs->hooks->ctx, &ch);
	return 0;
}

void jd_clients_reconfigure(struct jd_clients *cs)
{
	for (struct jd_client *c = cs->head; c; c = c->next) {
		if (c->conf_pinned)
			continue;
		c->conf = *jd_config_client(cs->cfg, c->name);
		apply(cs, c);
	}
}

void jd_clients_free(struct jd_clients *cs)
{
	while (cs->head) {
		struct jd_client *c = cs->head;

		cs->head = c->next;
		if (c->lat)
			jd_latency_free(c->lat);
		jd_idx_free(&c->idx);
		free(c->lat);
		free(c);
	}
	cs->count = 0;
}
