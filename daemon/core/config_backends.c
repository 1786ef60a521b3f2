/* daemon/core/config_backends.c: the config's "backends" section (where exec jobs run),
 * read strictly like the rest of the file (config.c calls it).
 *
 *   "backends": {
 *     "default": "local" | "slurm" | "auto",     exec jobs that name none (after the
 *                                                client's own "backend")
 *     "slurm": {                                  present: the slurm backend is on
 *       "conf": "/etc/slurm/slurm.conf",          "" / absent: $SLURM_CONF or libslurm's
 *       "partition": "", "account": "",           "" / absent: the cluster's defaults
 *       "output_dir": "/var/spool/jschedd/slurm", shared with the compute nodes
 *       "poll_ms": 500, "max_submitted": 64, "overflow_after_ms": 2000 } }
 */
#include <stdio.h>
#include <string.h>

#include "daemon/core/config.h"
#include "jsched/error.h"

const char *jd_backend_name(unsigned kind)
{
	static const char *const names[] = {"", "local", "slurm", "auto"};

	return kind < 4 ? names[kind] : "";
}

enum jd_backend_kind jd_backend_parse(const char *name)
{
	for (unsigned k = JD_BACKEND_LOCAL; k <= JD_BACKEND_AUTO; k++)
		if (strcmp(jd_backend_name(k), name) == 0)
			return (enum jd_backend_kind)k;
	return JD_BACKEND_UNSET;
}

void jd_backends_config_defaults(struct jd_backends_config *c)
{
	memset(c, 0, sizeof(*c));
	c->default_backend = JD_BACKEND_LOCAL;
	snprintf(c->output_dir, sizeof(c->output_dir), "/var/spool/jschedd/slurm");
	c->poll_ms = 500;
	c->max_submitted = 64;
	c->overflow_after_ms = 2000;
}

/* only_keys: every key of obj is in keys, else JSCHED_EINVAL naming it. */
static int only_keys(const json_t *obj, const char *const *keys, const char *prefix, char *err,
		     size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)(uintptr_t)obj, key, v) {
		size_t i = 0;

		while (keys[i] && strcmp(keys[i], key) != 0)
			i++;
		if (!keys[i]) {
			snprintf(err, errlen, "%s%s: unknown key", prefix, key);
			return JSCHED_EINVAL;
		}
	}
	return 0;
}

static int get_u32(const json_t *obj, const char *key, uint32_t lo, uint32_t hi, uint32_t *out,
		   char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, errlen, "backends.slurm.%s: must be an integer in [%u, %u]", key, lo, hi);
		return JSCHED_EINVAL;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* get_str: a string member into out; `absolute`: "" or an absolute path; `required`: not
 * "". */
static int get_str(const json_t *obj, const char *key, bool absolute, bool required, char *out,
		   size_t cap, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	if (!v)
		return 0;
	s = json_string_value(v);
	if (!s || strlen(s) >= cap || (absolute && s[0] && s[0] != '/') || (required && !s[0])) {
		snprintf(err, errlen, "backends.slurm.%s: must be %s of at most %zu bytes", key,
			 absolute ? "an absolute path" : "a string", cap - 1);
		return JSCHED_EINVAL;
	}
	snprintf(out, cap, "%s", s);
	return 0;
}

int jd_backends_config_read(json_t *obj, struct jd_backends_config *c, char *err, size_t errlen)
{
	static const char *const keys[] = {"default", "slurm", NULL};
	static const char *const slurm_keys[] = {"conf", "partition", "account", "output_dir",
						 "poll_ms", "max_submitted", "overflow_after_ms", NULL};
	json_t *v, *sl;
	int rc;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "backends: must be an object");
		return JSCHED_EINVAL;
	}
	if ((rc = only_keys(obj, keys, "backends.", err, errlen)))
		return rc;
	if ((v = json_object_get(obj, "default"))) {
		enum jd_backend_kind k = json_is_string(v) ? jd_backend_parse(json_string_value(v))
							   : JD_BACKEND_UNSET;

		if (k == JD_BACKEND_UNSET) {
			snprintf(err, errlen, "backends.default: must be one of local, slurm, auto");
			return JSCHED_EINVAL;
		}
		c->default_backend = (uint8_t)k;
	}
	if (!(sl = json_object_get(obj, "slurm")))
		return 0;
	if (!json_is_object(sl)) {
		snprintf(err, errlen, "backends.slurm: must be an object");
		return JSCHED_EINVAL;
	}
	if ((rc = only_keys(sl, slurm_keys, "backends.slurm.", err, errlen)))
		return rc;
	c->slurm = true;
	if ((rc = get_str(sl, "conf", true, false, c->slurm_conf, sizeof(c->slurm_conf), err, errlen)) ||
	    (rc = get_str(sl, "partition", false, false, c->partition, sizeof(c->partition), err, errlen)) ||
	    (rc = get_str(sl, "account", false, false, c->account, sizeof(c->account), err, errlen)) ||
	    (rc = get_str(sl, "output_dir", true, true, c->output_dir, sizeof(c->output_dir), err, errlen)) ||
	    (rc = get_u32(sl, "poll_ms", 10, 600000, &c->poll_ms, err, errlen)) ||
	    (rc = get_u32(sl, "max_submitted", 1, 1000000, &c->max_submitted, err, errlen)) ||
	    (rc = get_u32(sl, "overflow_after_ms", 0, 86400000, &c->overflow_after_ms, err, errlen)))
		return rc;
	return 0;
}
