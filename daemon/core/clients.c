/* daemon/core/clients.c: the client registry (see clients.h). */
#include "daemon/core/clients.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/core/log.h"

static void fair_conf(const struct jd_client_conf *cc, struct jd_fair_client_config *fc)
{
	enum jd_fair_overflow o = JD_FAIR_REJECT;

	jd_fair_overflow_parse(jd_overflow_name(cc->overflow), &o);
	fc->weight = cc->weight;
	fc->max_queued = cc->max_queued;
	fc->overflow = o;
}

struct jd_client *jd_client_find(struct jd_daemon *d, const char *name)
{
	for (struct jd_client *c = d->clients.head; c; c = c->next)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

struct jd_client *jd_client_get(struct jd_daemon *d, const char *name)
{
	struct jd_client *c = jd_client_find(d, name), **tail;
	struct jd_fair_client_config fc;

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->d = d;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->conf = *jd_config_client(&d->cfg, name);
	fair_conf(&c->conf, &fc);
	if (jd_fair_client_add(d->runner.fair, c->name, &fc, c, &c->fc) < 0) {
		free(c);
		return NULL;
	}
	/* Append: metrics list clients in the order they first appeared. */
	for (tail = &d->clients.head; *tail; tail = &(*tail)->next)
		;
	*tail = c;
	d->clients.count++;
	jd_log(JD_LOG_DEBUG, "new client '%s' (weight %u)", c->name, c->conf.weight);
	return c;
}

int jd_client_apply(struct jd_daemon *d, struct jd_client *c)
{
	struct jd_fair_client_config fc;

	fair_conf(&c->conf, &fc);
	return jd_fair_client_set(d->runner.fair, c->fc, &fc);
}

void jd_clients_reconfigure(struct jd_daemon *d)
{
	for (struct jd_client *c = d->clients.head; c; c = c->next) {
		if (c->conf_pinned)
			continue;
		c->conf = *jd_config_client(&d->cfg, c->name);
		jd_client_apply(d, c);
	}
}

void jd_clients_free(struct jd_daemon *d)
{
	while (d->clients.head) {
		struct jd_client *c = d->clients.head;

		d->clients.head = c->next;
		if (c->lat)
			jd_latency_free(c->lat);
		free(c->lat);
		free(c);
	}
	d->clients.count = 0;
}
