/* bench/e2e/cgroup.c: part 6, control groups: what a group per command costs, and whether
 * the kernel keeps the clients' weights while their commands run.
 *
 *   - 2,000 /bin/true exec jobs (batches of 500, 4 in flight, as part 3) through a jschedd
 *     with cgroups (the default, auto: v1 here) beside one with cgroups.mode "off", runs
 *     alternated in one session; and the time a command's group adds, beside the whole
 *     command's time without one.
 *   - The cost of creating and removing one job's group (cgroup.c's jd_cg_job_create +
 *     jd_cg_job_remove, in this process, 500 times), without and with limits (memory,
 *     pids, CPU), beside a plain mkdir + rmdir of one directory in /tmp (the floor of a
 *     directory operation).
 *   - Two clients with weights 1 and 3, each running four CPU-bound commands (eight busy
 *     loops on the machine's CPUs, so that they compete on every CPU): the share of CPU
 *     time each client's group got over a 3 s window, from the groups' own usage counters
 *     (cpuacct.usage on v1, cpu.stat usage_usec on v2), as the ratio heavy / light,
 *     beside the 3.0 the weights ask for.
 * These need root and usable cgroups; without them the part says why in a note and adds
 * no rows.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"
#include "daemon/run/cgroup.h"

/* cgroups_of: the daemon's exec.cgroups metrics member (new reference). */
static json_t *cgroups_of(struct e2e_daemon *d)
{
	struct jsched_conn *c = e2e_connect(d, "cg");
	json_t *m = e2e_metrics_doc(c);
	json_t *g = json_object_get(json_object_get(m, "exec"), "cgroups");

	json_incref(g);
	json_decref(m);
	jsched_close(c);
	return g;
}

/* group_us: the CPU time (us) client `name`'s group has used, from its counters. */
static double group_us(const char *cpuacct_root, const char *v2_root, const char *name)
{
	char path[4200], buf[4096];
	FILE *f;
	size_t n;

	if (cpuacct_root)
		snprintf(path, sizeof(path), "%s/client-%s/cpuacct.usage", cpuacct_root, name);
	else
		snprintf(path, sizeof(path), "%s/client-%s/cpu.stat", v2_root, name);
	if (!(f = fopen(path, "r")))
		e2e_die("%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (cpuacct_root)
		return strtod(buf, NULL) / 1000.0;
	const char *u = strstr(buf, "usage_usec ");
	return u ? strtod(u + 11, NULL) : NAN;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

#define BUSY 4	/* busy loops per client: with 8 on the CPUs, each CPU has both clients' */

/* share_ratio: heavy's CPU time / light's over window_ms while both run BUSY busy loops. */
static double share_ratio(struct e2e_daemon *d, const char *cpuacct_root, const char *v2_root,
			  unsigned window_ms)
{
	const char *const busy[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
	struct jsched_conn *light = e2e_connect(d, "light"), *heavy = e2e_connect(d, "heavy");
	struct jsched_spec *spec;
	uint64_t ids[2 * BUSY];

	if (jsched_spec_exec(busy, &spec) < 0 || jsched_spec_set_timeout(spec, 60000) < 0)
		e2e_die("out of memory");
	for (int i = 0; i < 2 * BUSY; i++)
		if (jsched_submit(i < BUSY ? light : heavy, spec, &ids[i]) < 0)
			e2e_die("submit of a busy loop failed");
	/* All running (bounded: 10 s), then a short settling of the scheduler. */
	for (int k = 0; k < 1000 && e2e_metrics_number(light, "jobs/running") < 2 * BUSY; k++)
		sleep_ms(10);
	if (e2e_metrics_number(light, "jobs/running") < 2 * BUSY)
		e2e_die("the busy loops did not all start");
	sleep_ms(200);
	double l0 = group_us(cpuacct_root, v2_root, "light"), h0 = group_us(cpuacct_root, v2_root, "heavy");
	sleep_ms(window_ms);
	double l1 = group_us(cpuacct_root, v2_root, "light"), h1 = group_us(cpuacct_root, v2_root, "heavy");
	for (int i = 0; i < 2 * BUSY; i++)
		(void)jsched_cancel(i < BUSY ? light : heavy, ids[i]);
	for (int i = 0; i < 2 * BUSY; i++) {
		struct jsched_result *res = NULL;

		if (jsched_wait(i < BUSY ? light : heavy, ids[i], 30000, &res) == 0)
			jsched_result_free(res);
	}
	jsched_spec_free(spec);
	jsched_close(light);
	jsched_close(heavy);
	return (h1 - h0) / (l1 - l0);
}

/* create_remove_us: us per jd_cg_job_create + jd_cg_job_remove (n pairs), limits l. */
static double create_remove_us(struct jd_cg *cg, const struct jd_cg_limits *l, int n)
{
	struct jd_cg_job g;
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < n; i++) {
		if (jd_cg_job_create(cg, "bench", (uint64_t)i + 1, 0, l, 0, &g) < 0 ||
		    jd_cg_job_remove(cg, &g) < 0)
			e2e_die("job group %d: %s", i, cg->error);
	}
	return (double)(bench_now_ns() - t0) / 1e3 / n;
}

/* mkdir_rmdir_us: us per mkdir + rmdir of one directory under /tmp (n pairs). */
static double mkdir_rmdir_us(int n)
{
	char dir[64];
	uint64_t t0;

	snprintf(dir, sizeof(dir), "/tmp/bench-e2e-cg-%d", (int)getpid());
	t0 = bench_now_ns();
	for (int i = 0; i < n; i++)
		if (mkdir(dir, 0755) < 0 || rmdir(dir) < 0)
			e2e_die("%s: %s", dir, strerror(errno));
	return (double)(bench_now_ns() - t0) / 1e3 / n;
}

void e2e_cgroup(struct e2e *e)
{
	size_t n = e->quick ? 200 : 2000;
	int pairs = e->quick ? 50 : 500;
	unsigned window = e->quick ? 500 : 3000;
	const char *const truth[] = {"/bin/true", NULL};
	double on[64], off[64], plain[64], bare[64], lim[64], ratio[64];
	struct jd_cg_limits limits = {.memory_max = 64u << 20, .pids_max = 64, .cpu_max_milli = 1000};
	struct e2e_daemon dc, doff;
	struct jsched_spec *spec;
	char conf[256], name[64], mode[8], how[32];
	struct jd_cg_conf cc = {0};
	struct jd_cg *cg;
	json_t *g;

	if (geteuid() != 0) {
		bench_note(e->rep, "cgroup: MISSING: needs root to create cgroups; no rows");
		return;
	}
	snprintf(conf, sizeof(conf),
		 "\"workers\": %u, \"clients\": {\"light\": {\"weight\": 1}, \"heavy\": {\"weight\": 3}}",
		 e->cpus);
	e2e_daemon_start(&dc, conf);
	g = cgroups_of(&dc);
	snprintf(mode, sizeof(mode), "%s", json_string_value(json_object_get(g, "mode")));
	snprintf(how, sizeof(how), "%s", json_string_value(json_object_get(g, "how")));
	if (strcmp(mode, "none") == 0) {
		bench_note(e->rep, "cgroup: MISSING: no usable cgroups here (%s); no rows",
			   json_string_value(json_object_get(g, "reason")));
		json_decref(g);
		e2e_daemon_stop(&dc);
		return;
	}
	json_t *roots = json_object_get(g, "roots");
	char cpuacct[4096] = "", v2root[4096] = "";
	if (json_object_get(roots, "cpuacct"))
		snprintf(cpuacct, sizeof(cpuacct), "%s", json_string_value(json_object_get(roots, "cpuacct")));
	else
		snprintf(v2root, sizeof(v2root), "%s", json_string_value(json_object_get(roots, "cpu")));
	json_decref(g);
	snprintf(conf, sizeof(conf), "\"workers\": %u, \"cgroups\": {\"mode\": \"off\"}", e->cpus);
	e2e_daemon_start(&doff, conf);
	if (jsched_spec_exec(truth, &spec) < 0)
		e2e_die("out of memory");

	for (int run = 0; run < e->runs && run < 64; run++) {
		on[run] = e2e_exec_rate(&dc, spec, n);
		off[run] = e2e_exec_rate(&doff, spec, n);
	}
	e2e_daemon_stop(&doff);
	for (int run = 0; run < e->runs_long; run++)
		ratio[run] = share_ratio(&dc, cpuacct[0] ? cpuacct : NULL, v2root, window);
	e2e_daemon_stop(&dc);

	/* The group operations alone, in this process, on a subtree of its own. */
	cg = calloc(1, sizeof(*cg));
	snprintf(name, sizeof(name), "bench-e2e-cg-%d", (int)getpid());
	cc.name = name;
	if (!cg || jd_cg_open(cg, &cc) < 0 || cg->mode == JD_CG_NONE)
		e2e_die("cgroups: %s", cg ? cg->reason : "out of memory");
	for (int run = 0; run < e->runs && run < 64; run++) {
		bare[run] = create_remove_us(cg, NULL, pairs);
		lim[run] = create_remove_us(cg, &limits, pairs);
		plain[run] = mkdir_rmdir_us(pairs);
	}
	jd_cg_close(cg);
	free(cg);
	jsched_spec_free(spec);

	size_t runs = (size_t)e->runs, lruns = (size_t)e->runs_long;
	double onm = e2e_median_of(on, runs), offm = e2e_median_of(off, runs);
	char row[128];
	snprintf(row, sizeof(row), "cgroup: jschedd /bin/true, a group each (%s)", how);
	bench_row(e->rep, row, "jobs/s", NULL, onm, "cgroups off", offm);
	bench_row(e->rep, "cgroup: time a group adds per command", "us", NULL, 1e6 / onm - 1e6 / offm,
		  "one command, cgroups off", 1e6 / offm);
	bench_row(e->rep, "cgroup: create + remove a job's group", "us", NULL,
		  e2e_median_of(bare, runs), "mkdir + rmdir in /tmp", e2e_median_of(plain, runs));
	bench_row(e->rep, "cgroup: the same with memory, pids, cpu limits", "us", NULL,
		  e2e_median_of(lim, runs), "mkdir + rmdir in /tmp", e2e_median_of(plain, runs));
	bench_row(e->rep, "cgroup: CPU heavy/light, weights 3:1, 4 busy each", "ratio", NULL,
		  e2e_median_of(ratio, lruns), "the weights' 3.0", 3.0);
	char list[256] = "";
	for (size_t i = 0; i < lruns && i < 16; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%.3f", i ? ", " : "", ratio[i]);
	bench_note(e->rep, "cgroup: CPU ratio heavy/light per run: %s (within 5%% of 3.0: 2.85 to 3.15)", list);
}
