/* daemon/core/clients.h: the clients (tenants) jobs are charged to.
 *
 * A client is a name: by default the login name of the connecting uid, or what hello
 * asks for.  The daemon keeps one struct jd_client per name in use (names are few: users
 * and services), with its fair-admission handle, its settings, and its counters and
 * latency histograms for metrics: a client with no connection, no job in the table
 * (waiting, queued, running or retained) and no pause is idle, and an idle client is
 * forgotten once it has been idle limits.client_idle_seconds (the 1 s tick and the test
 * clock's advance sweep the registry), or at once when a new name would pass
 * limits.clients: so the cap refuses a name only when that many are really in use.  A
 * name forgotten and seen again starts afresh (its counters start at zero).
 *
 * Settings an admin gave a name at run time (set_client) are kept apart from the
 * registry, in the name's struct jd_client_pin, until set_client gives the name its
 * config entry's settings again (a pin equal to the entry is dropped): they are in force
 * whenever the name is in use, and the journal keeps them (a CLIENT record per change,
 * the pins in a snapshot).  So a client with settings of its own is forgotten like any
 * other when idle and nothing about forgetting it needs a record; its settings are what
 * it gets back.  The alternative, keeping such a client in the registry, made every name
 * set_client ever named hold a place under limits.clients for good (a long-lived daemon
 * fed new names then refused every new hello) and a 1.3 KB entry in every metrics
 * document; forgetting the settings too (journaled) would lose what an admin set for a
 * name that connects once a day.  The pins have a cap of their own, limits.clients
 * names, against which only set_client of a new name is refused.
 *
 * Lookups are a linear scan: with tens of clients that is faster than hashing and
 * simpler; a daemon with thousands of client names would want a hash here.  Loop thread
 * only.
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
	struct jd_client_conf conf;	/* in force (config, or its pin's) */
	bool conf_pinned;		/* conf is its pin's: a reload keeps it */
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

/* A name's settings of its own (set_client), kept whether or not the name is in use. */
struct jd_client_pin {
	struct jd_client_pin *next;
	char name[65];
	struct jd_client_conf conf;
};

struct jd_clients {
	struct jd_client *head;
	size_t count;
	struct jd_client_pin *pins;	/* in the order they were first set */
	size_t n_pins;
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

/* jd_client_idle: whether c is idle: no connection, no job in the table, no pause. */
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

/* jd_client_conf_of: the settings in force for the name `name`, whether or not it is in
 * use: its pin's, else its config entry's (borrowed: valid until the next change of the
 * pins or the config). */
const struct jd_client_conf *jd_client_conf_of(const struct jd_clients *cs, const char *name);

/* jd_client_pin_room: whether set_client may give `name` settings of its own: it has a
 * pin already, or fewer than cfg->max_clients names have one. */
bool jd_client_pin_room(const struct jd_clients *cs, const char *name);

/* jd_client_set: give the name `name` the settings conf at run time (set_client): its
 * pin, or no pin when conf equals its config entry (then it follows the config again);
 * pushed to the fair layer if the name is in use, and reported (JD_CHANGE_CLIENT).
 * The pins' cap is the caller's to check (recovery replays past it).  Returns 0 or a
 * JSCHED_E* code (nothing changed). */
int jd_client_set(struct jd_clients *cs, const char *name, const struct jd_client_conf *conf);

/* jd_client_reset: drop `name`'s pin whatever it holds: its config entry's settings are
 * in force again (recovery's replay of a CLIENT record saying so).  As jd_client_set. */
int jd_client_reset(struct jd_clients *cs, const char *name);

/* jd_clients_reconfigure: after a reload, give every client without a pin its entry
 * from the new config. */
void jd_clients_reconfigure(struct jd_clients *cs);

/* jd_clients_free: release every client and pin (the fair instance must still exist). */
void jd_clients_free(struct jd_clients *cs);

#endif /* JD_CLIENTS_H */
