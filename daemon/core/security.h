/* daemon/core/security.h: who may do what, in one place.
 *
 * Identity is the socket's peer credentials (server.c, SO_PEERCRED at accept), never
 * anything a client says.  On top of it this file decides:
 * - which client names a uid may use in hello (the config's "client_names"; by default
 *   only the user's own login name, or "uid-N"; admins may use any);
 * - whether an exec job of a uid may run at all, and as whom (jd_security_run_as):
 *   jschedd as root runs each command as its owner's uid, gid and supplementary groups
 *   (root's own jobs as root), never as root for someone else; jschedd as an ordinary
 *   user runs its own uid's commands, and another uid's only if exec.allow_other_uids
 *   says so (then as jschedd's user: it has no other identity to give);
 * - the socket file's mode and group when the config leaves them unset ("auto"): 0660
 *   and group `jsched` on the system path /run/jschedd/jschedd.sock, 0600 elsewhere;
 * - the count of denials (every permission_denied reply), for the metrics.
 * Ownership of jobs (a client sees, waits on, reads and cancels only its own uid's jobs
 * unless it is an admin) is enforced where jobs are looked up: session.c's
 * jd__find_owned, used by every operation that names a job.  Loop thread only.
 */
#ifndef JD_SECURITY_H
#define JD_SECURITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/core/config.h"


/* Login names by uid (jd_security_default_name): a hello asks for its uid's, once for the
 * default client name and once more, for a uid that is not an admin, to check the name it
 * asked for, and each is a getpwuid_r (a read and parse of /etc/passwd, or a round trip
 * to a directory service through NSS).  So the last JD_LOGIN_NAMES uids' names are kept,
 * each for a time: users are renamed, created and removed while jschedd runs, and a name
 * decides what a uid may call itself, so it is looked up again after a minute
 * (JD_LOGIN_NAME_TTL_MS, the time a rename takes to be seen; nscd keeps names ten), and a
 * uid with no name after 10 s (a user just created gets its name soon).  Past the bound
 * the uid looked up longest ago makes room.  The alternative, no cache and no lookup in
 * hello (the name looked up only when the client gives none), still looks up per
 * connection for every client that connects without a name, which is the CLI's way. */
#define JD_LOGIN_NAMES 64
#define JD_LOGIN_NAME_TTL_MS 60000u
#define JD_LOGIN_NAME_MISS_TTL_MS 10000u

struct jd_login_name {
	bool used;
	uid_t uid;
	uint32_t ttl_ms;	/* JD_LOGIN_NAME_TTL_MS, or _MISS_ when it has no name */
	uint64_t at_ms;		/* looked up then (jd_now_ms) */
	char name[65];		/* the login name, or "uid-N" */
};

/* The rules in force, the denial counters, the login names.  Loop thread. */
struct jd_security {
	const struct jd_config *cfg;	/* the config in force (replaced in place on reload) */
	uid_t self_uid;			/* the daemon's own uid: an admin */
	uid_t euid;			/* its effective uid, read once at init: the daemon
					 * never changes identity (another user's commands
					 * go through jschedd-runas), and each exec job asked
					 * geteuid twice (its submit, its start) */
	uint64_t denied;		/* permission_denied replies, all causes */
	uint64_t denied_names;		/* hello with a client name the uid may not use */
	uint64_t denied_exec;		/* exec jobs refused for their uid */
	uint64_t name_lookups;		/* getpwuid_r calls for login names */
	uint64_t name_hits;		/* login names answered from names[] */
	struct jd_login_name names[JD_LOGIN_NAMES];
};

/* jd_security_init: the rules of cfg (borrowed, kept), for a daemon running as
 * self_uid; the counters at zero. */
void jd_security_init(struct jd_security *s, const struct jd_config *cfg, uid_t self_uid);

/* jd_security_is_admin: may this uid use the admin operations?  Root, the daemon's own
 * uid, and the config's `admins`. */
bool jd_security_is_admin(const struct jd_security *s, uid_t uid);

/* jd_security_default_name: the client name a uid gets without asking: its login name
 * if that fits a client name, else "uid-N"; from names[] while fresh (above).  The string
 * is s's, valid until the next call. */
const char *jd_security_default_name(struct jd_security *s, uid_t uid);

/* jd_security_name_allowed: may `uid` use client name `name`?  Counts a denial. */
bool jd_security_name_allowed(struct jd_security *s, uid_t uid, const char *name);

/* jd_security_name_usable: the same question, asked about a name the uid does not take
 * on (drain's `client`): counts nothing. */
bool jd_security_name_usable(struct jd_security *s, uid_t uid, const char *name);

/* jd_security_exec_allowed: may an exec job of `uid` run here at all?  If not, why is
 * written to `why`.  Counts a denial. */
bool jd_security_exec_allowed(struct jd_security *s, uid_t uid, char *why, size_t len);

/* How to start a command for its owner. */
struct jd_run_as {
	bool helper;		/* through jschedd-runas, switching to uid/gid */
	uid_t uid;
	gid_t gid;
};

/* jd_security_run_as: how to start a command owned by uid (primary gid `gid` from its
 * peer credentials), with the helper at `helper` ("" if there is none).  Returns 0, or
 * JSCHED_EPERMISSION_DENIED with the reason in why. */
int jd_security_run_as(const struct jd_security *s, uid_t uid, gid_t gid, const char *helper,
		       struct jd_run_as *out, char *why, size_t len);

/* jd_security_helper_path: where jschedd-runas is: $JSCHED_RUNAS if set, else beside
 * the jschedd binary (the build tree), else ../libexec/jschedd/ from the binary's folder
 * (the installed layout).  "" if it is not there. */
void jd_security_helper_path(char *buf, size_t len);

/* jd_security_socket_mode: the mode and group (gid, or (gid_t)-1 to leave it) for the
 * socket at `path` from the configured mode (JD_SOCKET_MODE_AUTO or bits) and group
 * name ("" for none).  Returns 0 or JSCHED_EINVAL (no such group) with the reason. */
int jd_security_socket_mode(const char *path, unsigned cfg_mode, const char *cfg_group,
			    unsigned *mode, gid_t *gid, char *err, size_t errlen);

/* jd_security_metrics: the metrics document's "security" member (new reference). */
json_t *jd_security_metrics(const struct jd_security *s);

#endif /* JD_SECURITY_H */
