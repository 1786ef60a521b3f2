/* daemon/core/config_resources.c: the config's "resources" section, read strictly like the
 * rest of the file (config.c calls it).
 *
 *   "resources": {
 *     "gpu": {"count": 2, "env": "CUDA_VISIBLE_DEVICES"},   indices 0 and 1, also in
 *                                                          the named variable
 *     "licence_x": {"count": 5},                           JSCHED_RESOURCE_LICENCE_X only
 *     "cpus": {"count": 8},                                what --cpus is counted against
 *     "memory": {"bytes": "16G"} }                         what --mem is counted against
 *
 * "cpus" and "memory" are not named resources: they have no indices, a command asks for
 * them with its limits (spec "resources": {"cpus", "memory"}), and without them the
 * machine's online CPUs and MemTotal count ("memory": {"reserve": "2G"} keeps some of
 * MemTotal out).  "cpus.count" may have thousandths (7.5).
 *
 * A resource is a count of interchangeable units, each with an index (0 .. count-1); a
 * command that needs n of them starts only when n are free, and is told which in
 * JSCHED_RESOURCE_<NAME> (and `env`, if set), as a comma list ("0,1").  At most
 * JD_RESOURCES_MAX names, each count 0 .. JD_RESOURCE_COUNT_MAX (0: none available now,
 * e.g. taken out of service by a reload).  The names "process", "fiber", "call_fiber"
 * and "slurm" are the daemon's own counted resources and are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"
#include "jsched/error.h"
#include "proto/jproto.h"

static bool env_name_ok(const char *s)
{
	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* machine_read: "cpus" or "memory" (name) of the "resources" section into c->machine.
 * Returns 0 or JSCHED_EINVAL with err. */
static int machine_read(const char *name, json_t *v, struct jd_config *c, char *err,
			size_t errlen)
{
	struct jd_machine_conf *m = &c->machine;
	bool cpus = strcmp(name, "cpus") == 0;
	const char *key;
	json_t *e;

	if (!json_is_object(v)) {
		snprintf(err, errlen, "resources.%s: must be an object %s", name,
			 cpus ? "{\"count\"}" : "{\"bytes\"} or {\"reserve\"}");
		return JSCHED_EINVAL;
	}
	json_object_foreach(v, key, e) {
		if (cpus && strcmp(key, "count") == 0) {
			double d = json_is_number(e) ? json_number_value(e) : -1;

			if (!(d >= 0.001 && d <= JD_CPUS_MAX)) {
				snprintf(err, errlen, "resources.cpus.count: must be a number of CPUs "
					 "from 0.001 to %u", JD_CPUS_MAX);
				return JSCHED_EINVAL;
			}
			m->cpus_milli = (uint32_t)(d * 1000 + 0.5);
		} else if (!cpus && (strcmp(key, "bytes") == 0 || strcmp(key, "reserve") == 0)) {
			bool total = key[0] == 'b';
			uint64_t n;

			if (jp_size_parse(e, &n) < 0 || (total && n < (1u << 20)) || n > (1ull << 50)) {
				snprintf(err, errlen, "resources.memory.%s: must be a size (bytes, or "
					 "\"16G\")%s, at most 1P", key, total ? " of at least 1M" : "");
				return JSCHED_EINVAL;
			}
			*(total ? &m->mem_bytes : &m->mem_reserve) = n;
		} else {
			snprintf(err, errlen, "resources.%s.%.40s: unknown key (%s)", name, key,
				 cpus ? "\"count\"" : "\"bytes\" or \"reserve\"");
			return JSCHED_EINVAL;
		}
	}
	if (!cpus && m->mem_bytes && m->mem_reserve) {
		snprintf(err, errlen, "resources.memory: \"bytes\" or \"reserve\", not both");
		return JSCHED_EINVAL;
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct jd_resource_conf *)a)->name,
		      ((const struct jd_resource_conf *)b)->name);
}

int jd_resources_config_read(json_t *obj, struct jd_config *c, char *err, size_t errlen)
{
	const char *name, *key;
	json_t *v, *e;
	size_t n = 0;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "resources: must be an object of name -> {\"count\", \"env\"}");
		return JSCHED_EINVAL;
	}
	memset(&c->machine, 0, sizeof(c->machine));
	json_object_foreach(obj, name, v) {
		struct jd_resource_conf *rc = &c->resources[n];
		json_t *cnt;

		if (!strcmp(name, "cpus") || !strcmp(name, "memory")) {
			int rc2 = machine_read(name, v, c, err, errlen);

			if (rc2 < 0)
				return rc2;
			continue;
		}
		if (n == JD_RESOURCES_MAX) {
			snprintf(err, errlen, "resources: more than %u named resources (besides cpus "
				 "and memory)", JD_RESOURCES_MAX);
			return JSCHED_EINVAL;
		}

		if (!jp_need_name_ok(name)) {
			snprintf(err, errlen, "resources.%.40s: not a resource name (a-z, 0-9, _, a "
				 "letter first, at most %u bytes)", name, JP_NEED_NAME_MAX);
			return JSCHED_EINVAL;
		}
		if (!strcmp(name, "process") || !strcmp(name, "fiber") || !strcmp(name, "call_fiber") ||
		    !strcmp(name, "slurm")) {
			snprintf(err, errlen, "resources.%s: the name is the daemon's own", name);
			return JSCHED_EINVAL;
		}
		if (!json_is_object(v)) {
			snprintf(err, errlen, "resources.%s: must be an object {\"count\", \"env\"}", name);
			return JSCHED_EINVAL;
		}
		json_object_foreach(v, key, e) {
			if (strcmp(key, "count") && strcmp(key, "env")) {
				snprintf(err, errlen, "resources.%s.%.40s: unknown key", name, key);
				return JSCHED_EINVAL;
			}
		}
		cnt = json_object_get(v, "count");
		if (!cnt || !json_is_integer(cnt) || json_integer_value(cnt) < 0 ||
		    json_integer_value(cnt) > JD_RESOURCE_COUNT_MAX) {
			snprintf(err, errlen, "resources.%s.count: must be an integer in [0, %u]", name,
				 JD_RESOURCE_COUNT_MAX);
			return JSCHED_EINVAL;
		}
		memset(rc, 0, sizeof(*rc));
		snprintf(rc->name, sizeof(rc->name), "%s", name);
		rc->count = (uint32_t)json_integer_value(cnt);
		if ((e = json_object_get(v, "env"))) {
			const char *s = json_string_value(e);

			if (!s || !env_name_ok(s) || strlen(s) >= sizeof(rc->env) ||
			    !strncmp(s, "JSCHED_", 7)) {
				snprintf(err, errlen, "resources.%s.env: must be a variable name (A-Z, "
					 "a-z, 0-9, _; not a digit first, not JSCHED_*) of at most "
					 "%zu bytes", name, sizeof(rc->env) - 1);
				return JSCHED_EINVAL;
			}
			snprintf(rc->env, sizeof(rc->env), "%s", s);
		}
		n++;
	}
	qsort(c->resources, n, sizeof(c->resources[0]), by_name);
	c->n_resources = n;
	return 0;
}

const struct jd_resource_conf *jd_resources_config_find(const struct jd_config *c,
							const char *name)
{
	for (size_t i = 0; i < c->n_resources; i++)
		if (strcmp(c->resources[i].name, name) == 0)
			return &c->resources[i];
	return NULL;
}
