/* daemon/core/clients.c: the client registry (see clients.h). */
#include "daemon/core/clients.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/clock.h"
#include "daemon/core/log.h"
#include "jsched/error.h"

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

/* pin_link: the link that holds `name`'s pin, or the list's end (*link NULL) if none. */
static struct jd_client_pin **pin_link(struct jd_clients *cs, const char *name)
{
	struct jd_client_pin **pp = &cs->pins;

	while (*pp && strcmp((*pp)->name, name) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* pin_find: `name`'s pin, or NULL. */
static const struct jd_client_pin *pin_find(const struct jd_clients *cs, const char *name)
{
	for (const struct jd_client_pin *p = cs->pins; p; p = p->next)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

const struct jd_client_conf *jd_client_conf_of(const struct jd_clients *cs, const char *name)
{
	const struct jd_client_pin *p = pin_find(cs, name);

	return p ? &p->conf : jd_config_client(cs->cfg, name);
}

bool jd_client_pin_room(const struct jd_clients *cs, const char *name)
{
	return cs->n_pins < cs->cfg->max_clients || pin_find(cs, name) != NULL;
}

bool jd_client_idle(const struct jd_client *c)
{
	if (c->conns || c->paused || c->n_retained)
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
	c->conf = *jd_client_conf_of(cs, name);
	c->conf_pinned = pin_find(cs, name) != NULL;
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

/* same_conf: whether a and b are the same settings (their names aside). */
static bool same_conf(const struct jd_client_conf *a, const struct jd_client_conf *b)
{
	return a->weight == b->weight && a->max_queued == b->max_queued &&
	       a->overflow == b->overflow && a->max_running == b->max_running &&
	       a->max_processes == b->max_processes && a->memory_max == b->memory_max &&
	       a->pids_max == b->pids_max && a->cpu_milli == b->cpu_milli &&
	       a->backend == b->backend;
}

/* set_conf: put conf in force for `name`: as its pin (own) or as its config entry's (no
 * pin), in its registry entry if it is in use; then report it.  Returns 0 or a JSCHED_E*
 * code from the fair layer or ENOMEM, with nothing changed. */
static int set_conf(struct jd_clients *cs, const char *name, const struct jd_client_conf *conf,
		    bool own)
{
	struct jd_change ch = {.kind = JD_CHANGE_CLIENT, .name = name, .conf = conf, .own = own};
	struct jd_client *c = jd_client_find(cs, name);
	struct jd_client_pin **pp = pin_link(cs, name), *p = *pp;
	struct jd_client_conf was;
	int rc;

	if (own && !p) {
		if (!(p = calloc(1, sizeof(*p))))
			return JSCHED_ENOMEM;
		snprintf(p->name, sizeof(p->name), "%s", name);
	}
	if (c) {
		was = c->conf;
		c->conf = *conf;
		if ((rc = apply(cs, c)) < 0) {
			c->conf = was;
			if (own && !*pp)
				free(p);
			return rc;
		}
		c->conf_pinned = own;
	}
	if (own) {
		p->conf = *conf;
		if (!*pp) {
			*pp = p;
			cs->n_pins++;
		}
	} else if (p) {
		*pp = p->next;
		cs->n_pins--;
		free(p);
	}
	if (cs->hooks && cs->hooks->change)
		cs->hooks->change(cs->hooks->ctx, &ch);
	return 0;
}

int jd_client_set(struct jd_clients *cs, const char *name, const struct jd_client_conf *conf)
{
	const struct jd_client_conf *entry = jd_config_client(cs->cfg, name);

	if (same_conf(conf, entry))
		return set_conf(cs, name, entry, false);
	return set_conf(cs, name, conf, true);
}

int jd_client_reset(struct jd_clients *cs, const char *name)
{
	return set_conf(cs, name, jd_config_client(cs->cfg, name), false);
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
	while (cs->pins) {
		struct jd_client_pin *p = cs->pins;

		cs->pins = p->next;
		free(p);
	}
	cs->n_pins = 0;
}
