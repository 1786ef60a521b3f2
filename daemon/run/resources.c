/* daemon/run/resources.c: named resources and the commands that need them (resources.h
 * says what and why).  Loop thread throughout.
 */
#include "daemon/run/resources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/jobs.h"
#include "daemon/core/log.h"
#include "jsched/error.h"
#include "proto/jproto.h"

static struct jd_named_res *find(struct jd_resources *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->res[i].name, name) == 0)
			return &rs->res[i];
	return NULL;
}

static void set_conf(struct jd_named_res *r, const struct jd_resource_conf *c)
{
	snprintf(r->env, sizeof(r->env), "%s", c->env);
	r->count = c->count;
}

/* mem_total: MemTotal from /proc/meminfo in bytes, 0 if it cannot be read. */
static uint64_t mem_total(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/* mib_up: bytes in MiB, rounded up (what a job's --mem holds). */
static uint32_t mib_up(uint64_t bytes)
{
	uint64_t m = (bytes + (1u << 20) - 1) >> 20;

	return m > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)m;
}

/* machine: the CPUs and memory in force under cfg (the config's, else the machine's),
 * given to the fair layer. */
static void machine(struct jd_resources *rs, const struct jd_config *cfg)
{
	const struct jd_machine_conf *m = &cfg->machine;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t bytes = m->mem_bytes;

	rs->cpus_conf = m->cpus_milli != 0;
	rs->mem_conf = m->mem_bytes != 0;
	rs->cpus_milli = m->cpus_milli ? m->cpus_milli : (uint32_t)(cpus > 0 ? cpus : 1) * 1000;
	if (!bytes) {
		uint64_t total = mem_total();

		bytes = total > m->mem_reserve ? total - m->mem_reserve : 0;
	}
	rs->mem_mib = (uint32_t)((bytes >> 20) < UINT32_MAX - 1 ? bytes >> 20 : UINT32_MAX - 1);
	jd_fair_resource_set(rs->fair, rs->res_cpus, rs->cpus_milli);
	jd_fair_resource_set(rs->fair, rs->res_mem, rs->mem_mib);
}

int jd_resources_start(struct jd_resources *rs, struct jd_fair *f, struct jd_jobs *jobs,
		       const struct jd_config *cfg, int res_proc, int res_fiber, char *err,
		       size_t errlen)
{
	memset(rs, 0, sizeof(*rs));
	rs->fair = f;
	rs->jobs = jobs;
	rs->res_proc = res_proc;
	rs->res_fiber = res_fiber;
	for (size_t k = 0; k < JD_FAIR_MAX_CLASSES; k++)
		rs->classes[k].cls = -1;
	rs->res_cpus = jd_fair_resource_add(f, "cpus", 0);
	rs->res_mem = jd_fair_resource_add(f, "memory", 0);
	if (rs->res_cpus < 0 || rs->res_mem < 0 || rs->res_cpus > rs->res_mem) {
		snprintf(err, errlen, "resources: the fair layer has no room for cpus and memory");
		return rs->res_cpus < 0 ? rs->res_cpus : rs->res_mem < 0 ? rs->res_mem : JSCHED_EINTERNAL;
	}
	jd_fair_resource_share(f, rs->res_cpus, true); /* in dominant shares (DRF) */
	jd_fair_resource_share(f, rs->res_mem, true);
	machine(rs, cfg);
	jd_log(JD_LOG_INFO, "resources: %.3f CPUs (%s), %u MiB of memory (%s) for commands that "
	       "declare them", rs->cpus_milli / 1000.0, rs->cpus_conf ? "config" : "online CPUs",
	       rs->mem_mib, rs->mem_conf ? "config" : cfg->machine.mem_reserve ? "MemTotal less the reserve" : "MemTotal");
	for (size_t i = 0; i < cfg->n_resources; i++) {
		const struct jd_resource_conf *c = &cfg->resources[i];
		struct jd_named_res *r = &rs->res[rs->n];
		size_t k;

		snprintf(r->name, sizeof(r->name), "%s", c->name);
		snprintf(r->var, sizeof(r->var), "JSCHED_RESOURCE_");
		for (k = 0; c->name[k]; k++)
			r->var[16 + k] = (char)(c->name[k] >= 'a' && c->name[k] <= 'z' ? c->name[k] - 32
											: c->name[k]);
		r->var[16 + k] = '\0';
		set_conf(r, c);
		r->fair = jd_fair_resource_add(f, c->name, c->count);
		if (r->fair < 0) {
			snprintf(err, errlen, "resources.%s: the fair layer refused it (%s): at most %u "
				 "named resources", c->name, jp_error_name(r->fair), JD_RESOURCES_MAX);
			return r->fair;
		}
		jd_fair_resource_share(f, r->fair, true); /* in dominant shares (DRF) */
		rs->n++;
		jd_log(JD_LOG_INFO, "resource %s: %u%s%s", r->name, r->count, r->env[0] ? ", in " : "",
		       r->env);
	}
	return 0;
}

void jd_resources_apply(struct jd_resources *rs, const struct jd_config *cfg)
{
	uint32_t cpus = rs->cpus_milli, mem = rs->mem_mib;

	machine(rs, cfg);
	if (cpus != rs->cpus_milli || mem != rs->mem_mib)
		jd_log(JD_LOG_INFO, "resources: %.3f -> %.3f CPUs, %u -> %u MiB of memory", cpus / 1000.0,
		       rs->cpus_milli / 1000.0, mem, rs->mem_mib);
	for (size_t i = 0; i < cfg->n_resources; i++) {
		struct jd_named_res *r = find(rs, cfg->resources[i].name);

		if (!r)
			continue; /* a name added by the reload: needs a restart (the reload said so) */
		if (r->count != cfg->resources[i].count)
			jd_log(JD_LOG_INFO, "resource %s: count %u -> %u (%u in use)", r->name, r->count,
			       cfg->resources[i].count, r->n_used);
		set_conf(r, &cfg->resources[i]);
		jd_fair_resource_set(rs->fair, r->fair, r->count);
	}
}

void jd_resources_begin(struct jd_resources *rs)
{
	rs->epoch++;
}

/* vector: the fair layer's needs vector of a command with needs s: a process slot, a
 * fiber, the named units and, if it declares CPUs or memory (`per_job`), its own amounts
 * of both.  Returns 0 or JSCHED_ENOT_SUPPORTED (bad: the unknown name). */
static int vector(struct jd_resources *rs, const struct jd_exec_need *needs, size_t n,
		  bool per_job, uint32_t need[JD_FAIR_MAX_RES], const char **bad)
{
	memset(need, 0, sizeof(uint32_t) * JD_FAIR_MAX_RES);
	need[rs->res_proc] = 1;
	need[rs->res_fiber] = 1;
	if (per_job)
		need[rs->res_cpus] = need[rs->res_mem] = JD_FAIR_PER_JOB;
	for (size_t i = 0; i < n; i++) {
		struct jd_named_res *r = find(rs, needs[i].name);

		if (!r) {
			*bad = needs[i].name;
			return JSCHED_ENOT_SUPPORTED;
		}
		need[r->fair] = needs[i].count;
	}
	return 0;
}

/* reclaim: give back to the fair layer every class of a set of needs that no job in the
 * table still uses (nor a submit of this epoch asked for).  O(jobs), only when a new set
 * finds every class taken. */
static void reclaim(struct jd_resources *rs)
{
	unsigned used = 0;
	struct jd_jobs_iter it;
	struct jd_job *j;

	jd_jobs_iter_init(rs->jobs, &it);
	while ((j = jd_jobs_iter_next(rs->jobs, &it)))
		if (!jd_state_final(j->state) && j->exec && jd_resources_counted(&j->exec->spec))
			used |= 1u << j->cls;
	for (size_t k = 0; k < JD_FAIR_MAX_CLASSES; k++) {
		struct jd_needs_class *c = &rs->classes[k];

		if (c->cls < 0 || (used & (1u << c->cls)) || c->epoch == rs->epoch)
			continue;
		if (jd_fair_class_remove(rs->fair, c->cls) == 0) {
			c->cls = -1;
			rs->reclaimed++;
		}
	}
}

/* class_of: the class of needs vector `need`, made (reclaiming if need be) if missing. */
static int class_of(struct jd_resources *rs, const uint32_t need[JD_FAIR_MAX_RES])
{
	struct jd_needs_class *slot = NULL;
	int cls;

	for (size_t k = 0; k < JD_FAIR_MAX_CLASSES; k++) {
		struct jd_needs_class *c = &rs->classes[k];

		if (c->cls >= 0 && memcmp(c->need, need, sizeof(c->need)) == 0) {
			c->epoch = rs->epoch;
			return c->cls;
		}
	}
	cls = jd_fair_class_add(rs->fair, need);
	if (cls == JSCHED_ELIMIT_EXCEEDED) {
		reclaim(rs);
		cls = jd_fair_class_add(rs->fair, need);
	}
	if (cls < 0)
		return cls;
	for (size_t k = 0; k < JD_FAIR_MAX_CLASSES && !slot; k++)
		if (rs->classes[k].cls < 0)
			slot = &rs->classes[k];
	if (!slot) /* cannot be: the fair layer has no more classes than slots */
		return JSCHED_EINTERNAL;
	memcpy(slot->need, need, sizeof(slot->need));
	slot->cls = cls;
	slot->epoch = rs->epoch;
	return cls;
}

/* in_use: the classes of sets of needs held now (for the error). */
static unsigned in_use(const struct jd_resources *rs)
{
	unsigned n = 0;

	for (size_t k = 0; k < JD_FAIR_MAX_CLASSES; k++)
		n += rs->classes[k].cls >= 0;
	return n;
}

bool jd_resources_counted(const struct jd_exec_spec *s)
{
	return s->n_needs || s->cpu_milli || s->memory_max;
}

/* machine_check: whether sp's CPUs and memory are within the totals in force. */
static int machine_check(const struct jd_resources *rs, const struct jp_job_spec *sp,
			 char *member, size_t mlen, char *why, size_t len)
{
	if (sp->res_cpu_milli > rs->cpus_milli) {
		snprintf(member, mlen, "resources.cpus");
		snprintf(why, len, "asks for %.3f CPUs; this daemon counts %.3f (%s)",
			 sp->res_cpu_milli / 1000.0, rs->cpus_milli / 1000.0,
			 rs->cpus_conf ? "config resources.cpus" : "its online CPUs");
		return JSCHED_ELIMIT_EXCEEDED;
	}
	if (mib_up(sp->res_memory) > rs->mem_mib) {
		snprintf(member, mlen, "resources.memory");
		snprintf(why, len, "asks for %u MiB of memory; this daemon counts %u MiB (%s)",
			 mib_up(sp->res_memory), rs->mem_mib,
			 rs->mem_conf ? "config resources.memory" : "its MemTotal");
		return JSCHED_ELIMIT_EXCEEDED;
	}
	return 0;
}

int jd_resources_check(struct jd_resources *rs, const struct jp_job_spec *sp, char *member,
		       size_t mlen, char *why, size_t len)
{
	struct jd_exec_need needs[JP_NEEDS_MAX];
	uint32_t need[JD_FAIR_MAX_RES];
	const char *bad = NULL;
	bool per_job = sp->res_cpu_milli || sp->res_memory;
	int rc;

	snprintf(member, mlen, "needs");
	if (!sp->n_needs && !per_job)
		return 0;
	if ((rc = machine_check(rs, sp, member, mlen, why, len)) < 0)
		return rc;
	for (size_t i = 0; i < sp->n_needs; i++) {
		struct jd_named_res *r = find(rs, sp->needs[i].name);

		snprintf(member, mlen, "needs.%s", sp->needs[i].name);
		if (!r && (!strcmp(sp->needs[i].name, "cpus") || !strcmp(sp->needs[i].name, "memory"))) {
			snprintf(why, len, "%s is asked for with the job's resources.%s (--%s), not "
				 "with needs", sp->needs[i].name, sp->needs[i].name,
				 sp->needs[i].name[0] == 'c' ? "cpus" : "mem");
			return JSCHED_ENOT_SUPPORTED;
		}
		if (!r) {
			char names[200] = "";

			for (size_t k = 0; k < rs->n; k++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 k ? ", " : "", rs->res[k].name);
			snprintf(why, len, "this daemon has no resource '%s' (config \"resources\": %s)",
				 sp->needs[i].name, rs->n ? names : "none");
			return JSCHED_ENOT_SUPPORTED;
		}
		if (sp->needs[i].count > r->count) {
			snprintf(why, len, "needs %u %s; this daemon has %u", sp->needs[i].count, r->name,
				 r->count);
			return JSCHED_ELIMIT_EXCEEDED;
		}
		snprintf(needs[i].name, sizeof(needs[i].name), "%s", sp->needs[i].name);
		needs[i].count = sp->needs[i].count;
	}
	snprintf(member, mlen, "needs");
	if ((rc = vector(rs, needs, sp->n_needs, per_job, need, &bad)) < 0)
		return rc;
	if ((rc = class_of(rs, need)) < 0) {
		snprintf(why, len, "%u distinct sets of needs are waiting, queued or running; the fair "
			 "layer has room for no more (at most %u at once with the daemon's own "
			 "classes)", in_use(rs), JD_FAIR_MAX_CLASSES);
		return JSCHED_ELIMIT_EXCEEDED;
	}
	return 0;
}

int jd_resources_class(struct jd_resources *rs, const struct jd_exec_spec *s,
		       uint32_t amount[JD_FAIR_AMOUNTS])
{
	uint32_t need[JD_FAIR_MAX_RES];
	const char *bad = NULL;
	bool per_job = s->cpu_milli || s->memory_max;
	int rc = vector(rs, s->needs, s->n_needs, per_job, need, &bad);

	amount[0] = per_job ? s->cpu_milli : 0;		/* res_cpus < res_mem */
	amount[1] = per_job ? mib_up(s->memory_max) : 0;
	return rc < 0 ? rc : class_of(rs, need);
}

static bool bit(const uint64_t *m, uint32_t i)
{
	return (m[i / 64] >> (i % 64)) & 1u;
}

/* list: "0,1,3" of n indices into buf. */
static void list(char *buf, size_t len, const uint16_t *idx, uint32_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", idx[i]);
}

/* env_with: the spec's env without the variables set here, plus them. */
static char **env_with(char *const *base, char **vars, size_t nvars)
{
	size_t n = 0, k = 0;
	char **env;

	while (base && base[n])
		n++;
	if (!(env = calloc(n + nvars + 1, sizeof(char *))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool ours = false;

		for (size_t v = 0; v < nvars && !ours; v++) {
			size_t nl = strcspn(vars[v], "=");

			ours = strncmp(base[i], vars[v], nl + 1) == 0;
		}
		if (!ours && !(env[k++] = strdup(base[i])))
			goto fail;
	}
	for (size_t v = 0; v < nvars; v++) {
		env[k++] = vars[v];
		vars[v] = NULL;
	}
	return env;
fail:
	jd_strv_free(env);
	return NULL;
}

int jd_resources_assign(struct jd_resources *rs, struct jd_exec_job *x, char ***env, char *why,
			size_t len)
{
	const struct jd_exec_spec *s = &x->spec;
	char *vars[2 * JP_NEEDS_MAX] = {0};
	size_t nvars = 0, k = 0;
	int rc = JSCHED_ENOMEM;

	*env = NULL;
	free(x->assigned);
	if (!(x->assigned = calloc(s->need_units, sizeof(uint16_t)))) {
		snprintf(why, len, "out of memory");
		return JSCHED_ENOMEM;
	}
	for (size_t i = 0; i < s->n_needs; i++) {
		struct jd_named_res *r = find(rs, s->needs[i].name);
		uint16_t *idx = x->assigned + k;
		uint32_t got = 0;
		size_t vlen = (size_t)s->needs[i].count * 5 + 64;

		if (!r) {
			snprintf(why, len, "needs resource '%s', which this daemon no longer has",
				 s->needs[i].name);
			rc = JSCHED_ENOT_SUPPORTED;
			goto fail;
		}
		for (uint32_t u = 0; u < r->count && got < s->needs[i].count; u++)
			if (!bit(r->used, u))
				idx[got++] = (uint16_t)u;
		if (got < s->needs[i].count) {
			/* The fair layer gave it the units: the bitmap must have them.  Never
			 * hand an index out twice. */
			snprintf(why, len, "%u of %u %s indices free (internal: counts disagree)", got,
				 s->needs[i].count, r->name);
			rc = JSCHED_EINTERNAL;
			goto fail;
		}
		for (size_t e = 0; e < 2; e++) {
			const char *name = e ? r->env : r->var;

			if (!name[0])
				continue;
			if (!(vars[nvars] = malloc(strlen(name) + 1 + vlen)))
				goto fail;
			sprintf(vars[nvars], "%s=", name);
			list(vars[nvars] + strlen(name) + 1, vlen, idx, got);
			nvars++;
		}
		k += got;
	}
	if (!(*env = env_with(s->env, vars, nvars)))
		goto fail;
	/* Held from here until jd_resources_release. */
	k = 0;
	for (size_t i = 0; i < s->n_needs; i++) {
		struct jd_named_res *r = find(rs, s->needs[i].name);

		for (uint32_t u = 0; u < s->needs[i].count; u++, k++) {
			r->used[x->assigned[k] / 64] |= 1ull << (x->assigned[k] % 64);
			r->n_used++;
		}
	}
	x->holding = true;
	rs->assigned++;
	return 0;
fail:
	if (rc == JSCHED_ENOMEM)
		snprintf(why, len, "out of memory");
	for (size_t v = 0; v < nvars; v++)
		free(vars[v]);
	free(x->assigned);
	x->assigned = NULL;
	return rc;
}

void jd_resources_release(struct jd_resources *rs, struct jd_exec_job *x)
{
	size_t k = 0;

	if (!x->holding)
		return;
	x->holding = false;
	for (size_t i = 0; i < x->spec.n_needs; i++) {
		struct jd_named_res *r = find(rs, x->spec.needs[i].name);

		for (uint32_t u = 0; u < x->spec.needs[i].count; u++, k++) {
			if (r && bit(r->used, x->assigned[k])) {
				r->used[x->assigned[k] / 64] &= ~(1ull << (x->assigned[k] % 64));
				r->n_used--;
			}
		}
	}
}

json_t *jd_resources_metrics(const struct jd_resources *rs)
{
	json_t *o = json_object();
	struct jd_fair_stats st;

	jd_fair_stats(rs->fair, JD_FAIR_METRIC_JOBS, &st);
	if (o) {
		json_object_set_new(o, "cpus", json_pack("{s:I, s:I, s:s, s:f, s:s}", "count",
							 (json_int_t)rs->cpus_milli, "used",
							 (json_int_t)st.res_used[rs->res_cpus], "unit",
							 "1/1000 CPU", "cpus", rs->cpus_milli / 1000.0,
							 "source", rs->cpus_conf ? "config" : "machine"));
		json_object_set_new(o, "memory", json_pack("{s:I, s:I, s:s, s:I, s:s}", "count",
							   (json_int_t)rs->mem_mib, "used",
							   (json_int_t)st.res_used[rs->res_mem], "unit",
							   "MiB", "bytes", (json_int_t)rs->mem_mib << 20,
							   "source", rs->mem_conf ? "config" : "machine"));
	}

	for (size_t i = 0; o && i < rs->n; i++) {
		const struct jd_named_res *r = &rs->res[i];

		json_object_set_new(o, r->name, json_pack("{s:I, s:I, s:s?}", "count", (json_int_t)r->count,
							  "used", (json_int_t)r->n_used, "env",
							  r->env[0] ? r->env : NULL));
	}
	return o;
}
