/* daemon/core/clients.h: the clients (tenants) jobs are charged to.
 *
 * A client is a name: by default the login name of the connecting uid, or what hello
 * asks for.  The daemon keeps one struct jd_client per name (names are few: users and
 * services), with its fair-admission handle, its settings from the config, and its
 * counters and latency histograms for metrics, while the name is in use: a client with
 * no connection, no job in the table (waiting, queued, running or retained), no settings
 * of its own (set_client's, which the journal keeps, or a pause) is idle, and an idle
 * client is forgotten once it has been idle limits.client_idle_seconds (the 1 s tick and
 * the test clock's advance sweep the registry), or at once when a new name would pass
 * limits.clients: so the cap refuses a name only when that many are really in use.  A
 * name forgotten and seen again starts afresh (its config entry applies again; its
 * counters start at zero).  Lookups are a linear scan: with tens of clients that is
 * faster than hashing and simpler; a daemon with thousands of client names would want a
 * hash here.  Loop thread only.
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
	bool paused;			/* paused by the `pause` operation (not forgotten) */
	uint32_t conns;			/* connections whose hello named it */
	uint64_t idle_since_ms;		/* wall clock: idle since then (0: in use, or not
					 * seen idle yet) */

	uint64_t live;			/* waiting + queued (its limit's count) */
	uint64_t by_state[JD_NSTATES];	/* as in struct jd_jobs */
	uint64_t submitted, rejected;
	uint64_t n_retained, retained_bytes;	/* its final jobs kept, and their bytes */
	uint64_t live_bytes;			/* its jobs not final: jd_job_live_bytes */
	struct jd_job *rhead, *rtail;		/* those jobs, oldest first (core/jobs.c) */
	struct jd_client *hnext, *hprev;	/* on the table's holders list while it has any */
	struct jd_idx idx;			/* its jobs in id order (core/jobs_index.h) */
	uint64_t forgotten;			/* its jobs forgotten by retention */
	struct jd_latency *lat;		/* allocated at its first finished job (23 KiB) */
};

struct jd_clients {
	struct jd_client *head;
	size_t count;
	uint64_t forgotten;		/* idle names forgotten (jd_clients_forget_idle) */
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

/* jd_client_room: whether a client named `name` is known or may be made: a new one
 * while the registry holds cfg->max_clients (limits.clients) only if an idle client can
 * be forgotten for it (the one idle longest is).  */
bool jd_client_room(struct jd_clients *cs, const char *name);

/* jd_client_idle: whether c is idle: no connection, no job in the table, no settings
 * of its own (set_client's, a pause). */
bool jd_client_idle(const struct jd_client *c);

/* jd_client_attach / jd_client_detach: a connection took c's name (hello) / closed;
 * the last one to close starts c's idle time if it has nothing else. */
void jd_client_attach(struct jd_client *c);
void jd_client_detach(struct jd_client *c);

/* jd_clients_forget_idle: forget the clients idle for cfg->client_idle_seconds by the
 * wall clock's now_ms, and start the idle time of those seen idle for the first time
 * (reported JD_CHANGE_CLIENT_FORGOTTEN, then freed).  Returns how many were forgotten. */
size_t jd_clients_forget_idle(struct jd_clients *cs, uint64_t now_ms);

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
