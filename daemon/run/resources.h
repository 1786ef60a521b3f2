/* daemon/run/resources.h: named resources (config "resources": GPUs, licences) and the
 * commands that need them (spec "needs").
 *
 * Each configured resource is a counted resource of the fair layer with its count as
 * capacity, so a command that needs some stays in its client's queue, under the policy,
 * priorities, deadlines and cancel, until they are free, like one waiting for a process
 * slot.  Its needs class is the vector {process 1, fiber 1, and the units of each named
 * resource}: one class per distinct set of needs, made on first use.  The fair layer has
 * JD_FAIR_MAX_CLASSES (16) classes; the daemon's own take class 0, the suspending calls',
 * the inline calls' (runner.c: the loop thread takes those alone), the commands' and,
 * with the slurm backend, the Slurm window's, which leaves JD_NEEDS_CLASSES_MIN (11) for
 * sets of needs at once (12 without Slurm).  A class whose set no job in the
 * table (waiting, queued, running) uses any longer is given back when a new set needs
 * one, so the limit is on sets in use at once, not on sets ever seen; past it a submit is
 * refused (limit_exceeded).
 *
 * Indices.  The fair layer counts units; which units a command gets is decided here, on
 * the loop thread, as its process is spawned: the lowest free indices of each resource
 * (a bitmap per resource), put in its environment as JSCHED_RESOURCE_<NAME>=1,3 and in the
 * resource's `env` variable if it has one (CUDA_VISIBLE_DEVICES=1,3), recorded in its job
 * (the record's "assigned", the journal).  They come back when its process has ended,
 * before its fiber completes the job in the fair layer, so the indices free are never
 * fewer than the units the fair layer lets the next command take.
 *
 * CPUs and memory.  A command that declares --cpus or --mem (spec "resources": "cpus",
 * "memory": its cgroup limits) also holds that much of the daemon's CPUs and memory
 * while it runs: two more counted resources of the fair layer, "cpus" in thousandths of
 * a CPU and "memory" in MiB (a job's bytes rounded up), whose totals are the config's
 * ("resources": {"cpus": {"count"}, "memory": {"bytes" | "reserve"}}) or the machine's
 * (online CPUs, MemTotal), and which count in dominant shares (DRF).  A command that
 * declares neither is not counted against them (it holds a process slot, as before).  So
 * that every distinct --mem does not spend a needs class, their amounts are carried per
 * job (the fair layer's JD_FAIR_PER_JOB: jd_fair_job.amount[0] the CPUs, [1] the MiB):
 * the class of a command is {process 1, fiber 1, its named units, and "per job" of CPUs
 * and memory if it declares either}, so the classes are spent per set of named needs and
 * whether CPUs/memory are declared, not per size.  A submit that asks for more than the
 * total is refused (limit_exceeded, field resources.cpus / resources.memory).
 *
 * Reload.  Counts and env names change live: a lowered count recalls nothing (running
 * commands keep their indices, also those at or above the new count, until they end);
 * no command is given an index at or above the count in force; a queued command that
 * needs more than the new count stays queued until a reload raises it again (or it is
 * cancelled); a submit that needs more than the count is refused.  Adding or removing a
 * name needs a restart (the reload says so, and keeps the running set).
 */
#ifndef JD_RESOURCES_H
#define JD_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/core/config.h"
#include "daemon/core/exec_job.h"
#include "daemon/fair/fair.h"

struct jd_jobs;
struct jp_job_spec;

/* The fewest needs classes left for sets of needs (see above). */
#define JD_NEEDS_CLASSES_MIN 11u

struct jd_named_res {
	char name[32];
	char var[48];			/* JSCHED_RESOURCE_<NAME> */
	char env[64];			/* the config's `env`, "" none */
	uint32_t count;			/* the config's count in force */
	int fair;			/* the fair layer's resource */
	uint64_t used[JD_RESOURCE_COUNT_MAX / 64]; /* indices given to running commands */
	uint32_t n_used;
};

struct jd_needs_class {
	uint32_t need[JD_FAIR_MAX_RES];
	int cls;			/* the fair layer's class, -1: slot unused */
	uint64_t epoch;			/* the submit that last asked for it */
};

struct jd_resources {
	struct jd_fair *fair;
	struct jd_jobs *jobs;		/* the table: what is still in use */
	int res_proc, res_fiber;
	struct jd_named_res res[JD_RESOURCES_MAX];
	size_t n;
	struct jd_needs_class classes[JD_FAIR_MAX_CLASSES];
	/* CPUs and memory: the fair layer's resources (res_cpus < res_mem, so that a job's
	 * amount[0] is the CPUs), their totals in force and where they come from. */
	int res_cpus, res_mem;
	uint32_t cpus_milli, mem_mib;
	bool cpus_conf, mem_conf;	/* set in the config (else the machine's) */
	uint64_t epoch;			/* jd_resources_begin: one per submit message */
	uint64_t assigned, reclaimed;	/* commands given indices; classes given back */
};

/* jd_resources_start: register the config's resources with the fair layer.  Returns 0, or
 * a negative code with the reason in err.  Loop thread, at start. */
int jd_resources_start(struct jd_resources *rs, struct jd_fair *f, struct jd_jobs *jobs,
		       const struct jd_config *cfg, int res_proc, int res_fiber, char *err,
		       size_t errlen);

/* jd_resources_apply: the reloaded config's counts and env names (same names). */
void jd_resources_apply(struct jd_resources *rs, const struct jd_config *cfg);

/* jd_resources_begin: a submit message is being checked: the classes its specs ask for
 * are not given back until the next one.  Loop thread. */
void jd_resources_begin(struct jd_resources *rs);

/* jd_resources_counted: whether a command with spec s holds anything here beyond a
 * process slot and a fiber (named needs, or declared CPUs or memory). */
bool jd_resources_counted(const struct jd_exec_spec *s);

/* jd_resources_check: whether this daemon can run a command with sp's needs, CPUs and
 * memory: 0, or JSCHED_ENOT_SUPPORTED (no such resource), JSCHED_ELIMIT_EXCEEDED (more
 * than its count or total; or no needs class left), with the spec's member at fault in
 * `member` ("needs.gpu", "needs", "resources.memory") and the reason in why.  Makes the
 * class.  Loop thread, at submit. */
int jd_resources_check(struct jd_resources *rs, const struct jp_job_spec *sp, char *member,
		       size_t mlen, char *why, size_t len);

/* jd_resources_class: the needs class of an exec job with spec s (jd_resources_counted),
 * made if need be, with the amounts its job carries (jd_fair_job.amount: CPUs in
 * thousandths, memory in MiB) in amount[]; a negative code when it cannot be had (an
 * unknown resource: a job recovered from the journal after the config lost it; no class
 * left), then the job's spawn fails.  Loop thread. */
int jd_resources_class(struct jd_resources *rs, const struct jd_exec_spec *s,
		       uint32_t amount[JD_FAIR_AMOUNTS]);

/* jd_resources_assign: give exec job x's command its indices (x->assigned) and make the
 * environment it runs with: spec env plus the variables, in *env (malloc'd vector,
 * jd_strv_free).  Returns 0, or a negative code with why set (nothing held).
 * jd_resources_release: its command has ended: its indices are free.  Loop thread. */
int jd_resources_assign(struct jd_resources *rs, struct jd_exec_job *x, char ***env, char *why,
			size_t len);
void jd_resources_release(struct jd_resources *rs, struct jd_exec_job *x);

/* jd_resources_metrics: the metrics' "resources" member: per name count, used (queued
 * commands' units aside); for "cpus" and "memory" also the unit, the total and where it
 * comes from (new reference).  Loop thread. */
json_t *jd_resources_metrics(const struct jd_resources *rs);

#endif /* JD_RESOURCES_H */
