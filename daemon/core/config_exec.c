/* daemon/core/config_exec.c: the config's "exec" and "cgroups" sections (commands), read
 * strictly like the rest of the file (config.c calls them); the structs are in config.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "daemon/core/config.h"
#include "jsched/error.h"

void jd_exec_config_defaults(struct jd_exec_config *c)
{
	c->max_processes = 64;
	c->output_bytes = 1u << 20;
	c->kill_grace_ms = 5000;
	c->allow_other_uids = false;
	c->direct = true;
}

static int cfg_uint(const json_t *obj, const char *key, uint32_t lo, uint32_t hi, uint32_t *out,
		    char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, errlen, "exec.%s: must be an integer in [%u, %u]", key, lo, hi);
		return JSCHED_EINVAL;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int cfg_bool(const json_t *obj, const char *key, bool *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "exec.%s: must be true or false", key);
		return JSCHED_EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}

int jd_exec_config_read(json_t *obj, struct jd_exec_config *c, char *err, size_t errlen)
{
	static const char *const keys[] = {"max_processes", "output_bytes", "kill_grace_ms",
					   "allow_other_uids", "direct", NULL};
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "exec: must be an object");
		return JSCHED_EINVAL;
	}
	json_object_foreach(obj, key, v) {
		size_t i = 0;

		while (keys[i] && strcmp(keys[i], key) != 0)
			i++;
		if (!keys[i]) {
			snprintf(err, errlen, "exec.%s: unknown key", key);
			return JSCHED_EINVAL;
		}
	}
	if ((rc = cfg_uint(obj, "max_processes", 1, 65536, &c->max_processes, err, errlen)) ||
	    (rc = cfg_uint(obj, "output_bytes", 0, 1u << 30, &c->output_bytes, err, errlen)) ||
	    (rc = cfg_uint(obj, "kill_grace_ms", 0, 3600000, &c->kill_grace_ms, err, errlen)) ||
	    (rc = cfg_bool(obj, "allow_other_uids", &c->allow_other_uids, err, errlen)) ||
	    (rc = cfg_bool(obj, "direct", &c->direct, err, errlen)))
		return rc;
	return 0;
}

int jd_cgroup_config_read(json_t *obj, struct jd_cgroup_config *c, char *err, size_t errlen)
{
	static const char *const modes[] = {"auto", "v2", "v1", "off"};
	const char *key;
	json_t *v;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "cgroups: must be an object");
		return JSCHED_EINVAL;
	}
	json_object_foreach(obj, key, v) {
		if (strcmp(key, "mode") == 0) {
			size_t i = 0;

			while (i < 4 && !(json_is_string(v) && strcmp(json_string_value(v), modes[i]) == 0))
				i++;
			if (i == 4) {
				snprintf(err, errlen, "cgroups.mode: must be \"auto\", \"v2\", \"v1\" or \"off\"");
				return JSCHED_EINVAL;
			}
			snprintf(c->mode, sizeof(c->mode), "%s", modes[i]);
		} else if (strcmp(key, "name") == 0) {
			const char *s = json_is_string(v) ? json_string_value(v) : "";
			size_t n = strlen(s), ok = n >= 1 && n <= 64 && strcmp(s, ".") && strcmp(s, "..");

			for (size_t i = 0; ok && i < n; i++)
				ok = isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
			if (!ok) {
				snprintf(err, errlen, "cgroups.name: must be 1 to 64 of A-Z a-z 0-9 . _ -");
				return JSCHED_EINVAL;
			}
			snprintf(c->name, sizeof(c->name), "%s", s);
		} else {
			snprintf(err, errlen, "cgroups.%s: unknown key", key);
			return JSCHED_EINVAL;
		}
	}
	return 0;
}
