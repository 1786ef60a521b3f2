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

#include "daemon/daemon.h"
#include "jsched/error.h"

#define SYSTEM_SOCKET "/run/jschedd/jschedd.sock"
#define SYSTEM_GROUP "jsched"
#define MAX_GRANTS 4096
#define MAX_NAMES 256

/* valid_name: PROTOCOL.md's client names: 1 to 64 bytes of A-Z a-z 0-9 . _ - */
static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* key_uid: a "client_names" key: a user name or a decimal uid. */
static int key_uid(const char *key, uid_t *uid)
{
	char *end;
	unsigned long v;
	struct passwd *pw;

	errno = 0;
	v = strtoul(key, &end, 10);
	if (*key && !*end && !errno && v < UINT32_MAX) {
		*uid = (uid_t)v;
		return 0;
	}
	if (!(pw = getpwnam(key)))
		return -1;
	*uid = pw->pw_uid;
	return 0;
}

int jd_security_config_read(json_t *obj, struct jd_security_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "client_names: must be an object of user -> [client names]");
		return JSCHED_EINVAL;
	}
	if (json_object_size(obj) > MAX_GRANTS) {
		snprintf(err, errlen, "client_names: at most %d users", MAX_GRANTS);
		return JSCHED_EINVAL;
	}
	c->grants = calloc(json_object_size(obj) + 1, sizeof(*c->grants));
	if (!c->grants)
		return JSCHED_ENOMEM;
	json_object_foreach(obj, key, v) {
		struct jd_name_grant *g = &c->grants[c->n_grants++];
		size_t i;
		json_t *e;

		if (key_uid(key, &g->uid) < 0) {
			snprintf(err, errlen, "client_names.%.64s: no such user", key);
			return JSCHED_EINVAL;
		}
		if (!json_is_array(v) || json_array_size(v) > MAX_NAMES) {
			snprintf(err, errlen, "client_names.%.64s: must be an array of up to %d client "
				 "names (or \"*\")", key, MAX_NAMES);
			return JSCHED_EINVAL;
		}
		if (!(g->names = calloc(json_array_size(v) + 1, sizeof(*g->names))))
			return JSCHED_ENOMEM;
		json_array_foreach(v, i, e) {
			const char *s = json_string_value(e);

			if (s && strcmp(s, "*") == 0) {
				g->any = true;
				continue;
			}
			if (!s || !valid_name(s)) {
				snprintf(err, errlen, "client_names.%.64s: entry %zu must be a client "
					 "name (1 to 64 of A-Z a-z 0-9 . _ -) or \"*\"", key, i);
				return JSCHED_EINVAL;
			}
			memcpy(g->names[g->n++], s, strlen(s) + 1);
		}
	}
	return 0;
}

void jd_security_config_free(struct jd_security_config *c)
{
	for (size_t i = 0; c->grants && i < c->n_grants; i++)
		free(c->grants[i].names);
	free(c->grants);
	c->grants = NULL;
	c->n_grants = 0;
}

void jd_security_default_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	/* The same rule as hello's default (session.c): the login name if it fits. */
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res && res->pw_name[0] &&
	    strlen(res->pw_name) <= 64)
		snprintf(buf, len, "%s", res->pw_name);
	else
		snprintf(buf, len, "uid-%u", (unsigned)uid);
}

bool jd_security_name_allowed(struct jd_daemon *d, uid_t uid, const char *name)
{
	const struct jd_security_config *c = &d->cfg.sec;
	char own[80];

	if (jd_is_admin(d, uid))
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
	d->sec.denied_names++;
	return false;
}

bool jd_security_exec_allowed(struct jd_daemon *d, uid_t uid, char *why, size_t len)
{
	if (geteuid() == 0 || uid == geteuid() || d->cfg.exec.allow_other_uids)
		return true;
	snprintf(why, len, "jschedd runs as uid %u, not root: it cannot run commands as uid %u "
		 "(exec.allow_other_uids is false)", (unsigned)geteuid(), (unsigned)uid);
	d->sec.denied_exec++;
	return false;
}

int jd_security_run_as(struct jd_daemon *d, uid_t uid, gid_t gid, struct jd_run_as *out,
		       char *why, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (geteuid() != 0) {
		/* Our own user: the only identity we have (jd_security_exec_allowed let the
		 * job in). */
		if (uid != geteuid() && !d->cfg.exec.allow_other_uids) {
			snprintf(why, len, "not allowed to run commands of uid %u", (unsigned)uid);
			return JSCHED_EPERMISSION_DENIED;
		}
		return 0;
	}
	if (uid == 0)
		return 0; /* root's own job */
	if (!d->exec.helper[0]) {
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
	bool sys = strcmp(path, SYSTEM_SOCKET) == 0;
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

json_t *jd_security_metrics(struct jd_daemon *d)
{
	return json_pack("{s:I, s:I, s:I, s:b}", "denied", (json_int_t)d->sec.denied,
			 "denied_client_names", (json_int_t)d->sec.denied_names, "denied_exec",
			 (json_int_t)d->sec.denied_exec, "root", geteuid() == 0);
}
