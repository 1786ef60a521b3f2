/* daemon/pool/topo.c: who steals from whom first, read from the machine's topology.
 *
 * Worker i is associated with the i-th CPU the process may run on (wrapping around when
 * there are more workers than CPUs); with pinning it is also bound there.  For each worker
 * the other workers are sorted into three tiers: 0, the same core (SMT siblings, or the
 * same CPU when workers outnumber CPUs); 1, sharing the last-level cache; 2, the rest.
 * A thief tries tier 0 first, then 1, then 2, starting at a random place within each tier
 * (so thieves do not all hammer the same victim).  The facts come from sysfs:
 * /sys/devices/system/cpu/cpuN/topology/thread_siblings_list and, for the cache of the
 * highest level, cpuN/cache/indexK/{level,shared_cpu_list}.  If sysfs cannot be read,
 * every other worker is tier 2, which is plain random stealing.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/pool/internal.h"
#include "daemon/pool/topo.h"
#include "jsched/error.h"

/* read_cpulist: parse a sysfs CPU list ("0-3,8,10-11") into set; false if unreadable. */
static bool read_cpulist(const char *path, cpu_set_t *set)
{
	char buf[1024];
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	CPU_ZERO(set);
	char *s = buf;
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10);
		if (end == s)
			return false;
		long b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		for (long c = a; c <= b && c < CPU_SETSIZE; c++)
			if (c >= 0)
				CPU_SET((int)c, set);
		if (*s == ',')
			s++;
	}
	return true;
}

/* llc_of: the CPUs sharing the highest-level cache with cpu. */
static bool llc_of(int cpu, cpu_set_t *set)
{
	int best = -1;
	for (int k = 0; k < 16; k++) {
		char path[128];
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
			 cpu, k);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		int level = 0;
		if (fscanf(f, "%d", &level) != 1)
			level = 0;
		fclose(f);
		if (level > best) {
			snprintf(path, sizeof(path),
				 "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu,
				 k);
			if (read_cpulist(path, set))
				best = level;
		}
	}
	return best >= 0;
}

int jd_topo_plan(struct jd_pool *p)
{
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE];
	int ncpus = 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	}
	unsigned n = p->nworkers;
	cpu_set_t *smt = calloc(n, sizeof(*smt));
	cpu_set_t *llc = calloc(n, sizeof(*llc));
	bool *known = calloc(n, sizeof(*known));
	if (!smt || !llc || !known) {
		free(smt);
		free(llc);
		free(known);
		return JSCHED_ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		struct jd_worker *w = &p->workers[i];
		w->cpu = ncpus ? cpus[i % (unsigned)ncpus] : -1;
		if (w->cpu < 0)
			continue;
		char path[128];
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", w->cpu);
		known[i] = read_cpulist(path, &smt[i]) && llc_of(w->cpu, &llc[i]);
	}
	int rc = 0;
	for (unsigned i = 0; i < n; i++) {
		struct jd_worker *w = &p->workers[i];
		w->victims = calloc(n ? n : 1, sizeof(*w->victims));
		if (!w->victims) {
			rc = JSCHED_ENOMEM;
			break;
		}
		unsigned k = 0;
		for (unsigned tier = 0; tier < 3; tier++) {
			for (unsigned j = 0; j < n; j++) {
				if (j == i)
					continue;
				unsigned tj = 2;
				int cj = p->workers[j].cpu;
				if (known[i] && cj >= 0) {
					if (cj == w->cpu || CPU_ISSET(cj, &smt[i]))
						tj = 0;
					else if (CPU_ISSET(cj, &llc[i]))
						tj = 1;
				}
				if (tj == tier)
					w->victims[k++] = j;
			}
			w->tier_end[tier] = k;
		}
	}
	free(smt);
	free(llc);
	free(known);
	return rc;
}

int jd_topo_pin(struct jd_worker *w)
{
	if (w->cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ? JSCHED_EINTERNAL : 0;
}
