/* daemon/core/security.c: client names per uid, whom commands run as, socket defaults,
 * denial counts (see security.h).
 */
#include "daemon/core/security.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/core/clock.h"
#include "jsched/error.h"
#include "proto/jproto.h"

#define SYSTEM_GROUP "jsched"

/* look_up: uid's login name if it fits a client name, else "uid-N", into e; whether the
 * passwd database had a usable name. */
static bool look_up(uid_t uid, struct jd_login_name *e)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];
	bool found = getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res &&
		     res->pw_name[0] && strlen(res->pw_name) <= JP_REF_MAX;

	if (found)
		snprintf(e->name, sizeof(e->name), "%s", res->pw_name);
	else
		snprintf(e->name, sizeof(e->name), "uid-%u", (unsigned)uid);
	return found;
}

const char *jd_security_default_name(struct jd_security *s, uid_t uid)
{
	uint64_t now = jd_now_ms();
	struct jd_login_name *e, *victim = &s->names[0];

	for (size_t i = 0; i < JD_LOGIN_NAMES; i++) {
		e = &s->names[i];
		if (e->used && e->uid == uid) {
			/* Fresh: looked up less than its time to live ago (a clock set back
			 * makes it stale). */
			if (now >= e->at_ms && now - e->at_ms < e->ttl_ms) {
				s->name_hits++;
				return e->name;
			}
			victim = e;
			goto look;
		}
		/* Else the slot to take: a free one, else the longest since looked up. */
		if (victim->used && (!e->used || e->at_ms < victim->at_ms))
			victim = e;
	}
look:
	e = victim;
	e->used = true;
	e->uid = uid;
	e->at_ms = now;
	e->ttl_ms = look_up(uid, e) ? JD_LOGIN_NAME_TTL_MS : JD_LOGIN_NAME_MISS_TTL_MS;
	s->name_lookups++;
	return e->name;
}

void jd_security_init(struct jd_security *s, const struct jd_config *cfg, uid_t self_uid)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->self_uid = self_uid;
	s->euid = geteuid();
}

bool jd_security_is_admin(const struct jd_security *s, uid_t uid)
{
	if (uid == 0 || uid == s->self_uid)
		return true;
	for (size_t i = 0; i < s->cfg->n_admins; i++)
		if (s->cfg->admins[i] == uid)
			return true;
	return false;
}

bool jd_security_name_usable(struct jd_security *s, uid_t uid, const char *name)
{
	const struct jd_security_config *c = &s->cfg->sec;

	if (jd_security_is_admin(s, uid))
		return true;
	if (strcmp(jd_security_default_name(s, uid), name) == 0)
		return true;
	for (size_t i = 0; i < c->n_grants; i++) {
		if (c->grants[i].uid != uid)
			continue;
		if (c->grants[i].any)
			return true;
		for (size_t k = 0; k < c->grants[i].n; k++)
			if (strcmp(c->grants[i].names[k], name) == 0)
				return true;
	}
	return false;
}

bool jd_security_name_allowed(struct jd_security *s, uid_t uid, const char *name)
{
	if (jd_security_name_usable(s, uid, name))
		return true;
	s->denied_names++;
	return false;
}

bool jd_security_exec_allowed(struct jd_security *s, uid_t uid, char *why, size_t len)
{
	if (s->euid == 0 || uid == s->euid || s->cfg->exec.allow_other_uids)
		return true;
	snprintf(why, len, "jschedd runs as uid %u, not root: it cannot run commands as uid %u "
		 "(exec.allow_other_uids is false)", (unsigned)s->euid, (unsigned)uid);
	s->denied_exec++;
	return false;
}

int jd_security_run_as(const struct jd_security *s, uid_t uid, gid_t gid, const char *helper,
		       struct jd_run_as *out, char *why, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (s->euid != 0) {
		/* Our own user: the only identity we have (jd_security_exec_allowed let the
		 * job in). */
		if (uid != s->euid && !s->cfg->exec.allow_other_uids) {
			snprintf(why, len, "not allowed to run commands of uid %u", (unsigned)uid);
			return JSCHED_EPERMISSION_DENIED;
		}
		return 0;
	}
	if (uid == 0)
		return 0; /* root's own job */
	if (!helper || !helper[0]) {
		snprintf(why, len, "jschedd-runas not found ($JSCHED_RUNAS, beside jschedd, "
			 "../libexec/jschedd/): cannot switch to uid %u", (unsigned)uid);
		return JSCHED_EPERMISSION_DENIED;
	}
	out->helper = true;
	out->uid = uid;
	out->gid = gid;
	return 0;
}

void jd_security_helper_path(char *buf, size_t len)
{
	const char *env = getenv("JSCHED_RUNAS");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	buf[0] = '\0';
	if (env && env[0]) {
		if (access(env, X_OK) == 0)
			snprintf(buf, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		return;
	*slash = '\0';
	/* Beside jschedd (the build tree), else where `make install` puts it. */
	snprintf(buf, len, "%s/jschedd-runas", self);
	if (access(buf, X_OK) == 0)
		return;
	snprintf(buf, len, "%s/../libexec/jschedd/jschedd-runas", self);
	if (access(buf, X_OK) < 0)
		buf[0] = '\0';
}

int jd_security_socket_mode(const char *path, unsigned cfg_mode, const char *cfg_group,
			    unsigned *mode, gid_t *gid, char *err, size_t errlen)
{
	bool sys = strcmp(path, JP_SYSTEM_SOCKET) == 0;
	const char *group = cfg_group && cfg_group[0] ? cfg_group : NULL;
	struct group *g;

	*gid = (gid_t)-1;
	if (cfg_mode == JD_SOCKET_MODE_AUTO) {
		*mode = sys ? 0660 : 0600;
		if (sys && !group && getgrnam(SYSTEM_GROUP))
			group = SYSTEM_GROUP;
	} else {
		*mode = cfg_mode;
	}
	if (!group)
		return 0;
	if (!(g = getgrnam(group))) {
		snprintf(err, errlen, "socket_group: no such group '%s'", group);
		return JSCHED_EINVAL;
	}
	*gid = g->gr_gid;
	return 0;
}

json_t *jd_security_metrics(const struct jd_security *s)
{
	return json_pack("{s:I, s:I, s:I, s:b, s:I, s:I}", "denied", (json_int_t)s->denied,
			 "denied_client_names", (json_int_t)s->denied_names, "denied_exec",
			 (json_int_t)s->denied_exec, "root", s->euid == 0, "login_name_lookups",
			 (json_int_t)s->name_lookups, "login_name_hits", (json_int_t)s->name_hits);
}
