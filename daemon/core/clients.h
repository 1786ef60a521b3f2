/* daemon/core/clients.h: the clients (tenants) jobs are charged to.
 *
 * A client is a name: by default the login name of the connecting uid, or what hello
 * asks for.  The daemon keeps one struct jd_client per name for its lifetime (names are
 * few: users and services), with its fair-admission handle, its settings from the
 * config, and its counters and latency histograms for metrics.  Lookups are a linear
 * scan: with tens of clients that is faster than hashing and simpler; a daemon with
 * thousands of client names would want a hash here.  Loop thread only.
 */
#ifndef JD_CLIENTS_H
#define JD_CLIENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/core/config.h"
#include "daemon/fair/fair.h"
#include "daemon/core/hist.h"
#include "daemon/core/jobs.h"

struct jd_client {
	char name[65];
	struct jd_client *next;
	struct jd_fair_client *fc;
	struct jd_client_conf conf;	/* in force (config, or set_client since) */
	bool conf_pinned;		/* set_client changed it: a reload keeps it */
	bool blocked;			/* overflow `block`: queue full, reading paused */

	uint64_t live;			/* waiting + queued (its limit's count) */
	uint64_t by_state[JD_NSTATES];	/* as in struct jd_jobs */
	uint64_t submitted, rejected;
	uint64_t n_retained, retained_bytes;	/* its final jobs kept, and their bytes */
	struct jd_job *rhead, *rtail;		/* those jobs, oldest first (core/jobs.c) */
	struct jd_client *hnext, *hprev;	/* on the table's holders list while it has any */
	struct jd_idx idx;			/* its jobs in id order (core/jobs_index.h) */
	uint64_t forgotten;			/* its jobs forgotten by retention */
	struct jd_latency *lat;		/* allocated at its first finished job (23 KiB) */
};

struct jd_clients {
	struct jd_client *head;
	size_t count;
	const struct jd_config *cfg;	/* the config in force (its client entries) */
	struct jd_fair *fair;		/* where clients are registered */
	const struct jd_jobs_hooks *hooks;	/* the job table's: JD_CHANGE_CLIENT */
};

/* jd_clients_init: an empty registry reading its entries from cfg (borrowed: the
 * config in force, replaced in place on reload) and reporting through hooks; the fair
 * instance is set (cs->fair) before the first client. */
void jd_clients_init(struct jd_clients *cs, const struct jd_config *cfg,
		     const struct jd_jobs_hooks *hooks);

/* jd_client_get: the client named `name`, created (with its config entry or the
 * defaults, and registered with the fair layer) if new.  NULL on ENOMEM. */
struct jd_client *jd_client_get(struct jd_clients *cs, const char *name);

/* jd_client_room: whether a client named `name` is known or may be made: the registry
 * keeps every name for the daemon's life, so a new one is refused once it holds
 * cfg->max_clients (limits.clients). */
bool jd_client_room(const struct jd_clients *cs, const char *name);

/* jd_client_find: the client named `name`, or NULL. */
struct jd_client *jd_client_find(const struct jd_clients *cs, const char *name);

/* jd_client_set: change c's settings at run time (set_client): they are pinned (a reload
 * keeps them), pushed to the fair layer and reported (JD_CHANGE_CLIENT).  Returns 0 or a
 * JSCHED_E* code. */
int jd_client_set(struct jd_clients *cs, struct jd_client *c, const struct jd_client_conf *conf);

/* jd_clients_reconfigure: after a reload, give every client not pinned by set_client its
 * entry from the new config. */
void jd_clients_reconfigure(struct jd_clients *cs);

/* jd_clients_free: release every client (the fair instance must still exist). */
void jd_clients_free(struct jd_clients *cs);

#endif /* JD_CLIENTS_H */
