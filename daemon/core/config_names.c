/* daemon/core/config_names.c: the config's "client_names" section: which uids may use
 * which client names (security.c applies it).  Read strictly like the rest of the file
 * (config.c calls it); struct jd_security_config is in config.h.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"
#include "jsched/error.h"

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
