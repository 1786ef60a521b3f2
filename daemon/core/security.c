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

#include "jsched/error.h"
#include "proto/jproto.h"

#define SYSTEM_GROUP "jsched"

void jd_security_default_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	/* The login name if it fits a client name. */
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res && res->pw_name[0] &&
	    strlen(res->pw_name) <= 64)
		snprintf(buf, len, "%s", res->pw_name);
	else
		snprintf(buf, len, "uid-%u", (unsigned)uid);
}

void jd_security_init(struct jd_security *s, const struct jd_config *cfg, uid_t self_uid)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->self_uid = self_uid;
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

bool jd_security_name_usable(const struct jd_security *s, uid_t uid, const char *name)
{
	const struct jd_security_config *c = &s->cfg->sec;
	char own[80];

	if (jd_security_is_admin(s, uid))
		return true;
	jd_security_default_name(uid, own, sizeof(own));
	if (strcmp(own, name) == 0)
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
	if (geteuid() == 0 || uid == geteuid() || s->cfg->exec.allow_other_uids)
		return true;
	snprintf(why, len, "jschedd runs as uid %u, not root: it cannot run commands as uid %u "
		 "(exec.allow_other_uids is false)", (unsigned)geteuid(), (unsigned)uid);
	s->denied_exec++;
	return false;
}

int jd_security_run_as(const struct jd_security *s, uid_t uid, gid_t gid, const char *helper,
		       struct jd_run_as *out, char *why, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (geteuid() != 0) {
		/* Our own user: the only identity we have (jd_security_exec_allowed let the
		 * job in). */
		if (uid != geteuid() && !s->cfg->exec.allow_other_uids) {
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
	return json_pack("{s:I, s:I, s:I, s:b}", "denied", (json_int_t)s->denied,
			 "denied_client_names", (json_int_t)s->denied_names, "denied_exec",
			 (json_int_t)s->denied_exec, "root", geteuid() == 0);
}
