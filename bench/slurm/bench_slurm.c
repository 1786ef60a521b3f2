/* bench/slurm/bench_slurm.c: commands sent to Slurm through jschedd, beside the two ways
 * a user would drive Slurm without it, in the same run on the same one-node cluster
 * (tests/slurm/cluster.sh; `make bench-slurm` runs it there).
 *
 *   sbatch     one `sbatch --wrap` process per job (what a shell loop does)
 *   libslurm   slurm_submit_batch_job from this process, one call per job
 *   jschedd    one batch submit of N exec jobs with "backend": "slurm" to a jschedd started
 *              here (its slurm backend submits them from its own thread)
 *
 * Each job is `date +%s%N`: it prints the wall clock when it started on the node.  So
 * every method is timed the same way, from the job's own words, not from how each method
 * learns of the end:
 *   submit-to-start latency   the job's start minus the wall time its submit was issued
 *                             (median over the jobs of all runs)
 *   jobs/s                    N / (the last job's start - the first submit), per run
 * and, for jschedd, its CPU time (utime + stime from /proc) per remote job, beside this
 * process's own CPU time per job when it calls libslurm directly: what driving Slurm
 * costs at the least.
 *
 * Slurm's own scheduling dominates all three (its scheduler starts a submitted job from
 * its background loop, 1 to 2 s later here): the ratios say what each front end adds.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "bench/common/bench.h"
#include "bench/common/daemon.h"
#include "jsched/jsched.h"

static char dir[PATH_MAX];
static const char *partition;

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* read_ns: the number a job wrote into path, 0 if none (yet). */
static uint64_t read_ns(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");
	uint64_t v = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = strtoull(buf, NULL, 10);
	fclose(f);
	return v;
}

/* wait_files: until every job's file holds its start time (bounded: 120 s).  Returns 0
 * or -1. */
static int wait_files(const char *tag, int run, size_t n, uint64_t *start)
{
	char path[PATH_MAX + 64];

	for (int tries = 0; tries < 6000; tries++) {
		size_t done = 0;

		for (size_t i = 0; i < n; i++) {
			if (!start[i]) {
				snprintf(path, sizeof(path), "%s/%s-%d-%zu.out", dir, tag, run, i);
				start[i] = read_ns(path);
			}
			done += start[i] != 0;
		}
		if (done == n)
			return 0;
		usleep(20000);
	}
	return -1;
}

/* run_sbatch: n jobs through sbatch processes; submit times into sub[]. */
static int run_sbatch(int run, size_t n, uint64_t *sub, uint64_t *start)
{
	char out[PATH_MAX + 64];

	for (size_t i = 0; i < n; i++) {
		pid_t pid;
		int st;

		snprintf(out, sizeof(out), "%s/sbatch-%d-%zu.out", dir, run, i);
		sub[i] = wall_ns();
		if ((pid = fork()) == 0) {
			int null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			execlp("sbatch", "sbatch", "-Q", "-p", partition, "-o", out, "--wrap",
			       "date +%s%N", (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return -1;
	}
	return wait_files("sbatch", run, n, start);
}

/* run_libslurm: n jobs through slurm_submit_batch_job; submit times into sub[]. */
static int run_libslurm(int run, size_t n, uint64_t *sub, uint64_t *start)
{
	char out[PATH_MAX + 64], *env[] = {"PATH=/usr/bin:/bin", NULL};

	for (size_t i = 0; i < n; i++) {
		job_desc_msg_t d;
		submit_response_msg_t *resp = NULL;

		slurm_init_job_desc_msg(&d);
		snprintf(out, sizeof(out), "%s/libslurm-%d-%zu.out", dir, run, i);
		d.name = "bench";
		d.script = "#!/bin/sh\ndate +%s%N\n";
		d.environment = env;
		d.env_size = 1;
		d.work_dir = "/";
		d.std_out = out;
		d.std_err = "/dev/null";
		d.user_id = getuid();
		d.group_id = getgid();
		d.partition = (char *)(uintptr_t)partition;
		d.min_nodes = d.max_nodes = d.num_tasks = 1;
		sub[i] = wall_ns();
		if (slurm_submit_batch_job(&d, &resp) != 0) {
			fprintf(stderr, "slurm_submit_batch_job: %s\n", slurm_strerror(slurm_get_errno()));
			return -1;
		}
		slurm_free_submit_response_response_msg(resp);
	}
	return wait_files("libslurm", run, n, start);
}

/* run_jschedd: n jobs in one batch submit to the jschedd on sock. */
static int run_jschedd(struct jsched_conn *c, size_t n, uint64_t *sub, uint64_t *start)
{
	const char *argv[] = {"/bin/sh", "-c", "date +%s%N", NULL};
	struct jsched_spec **specs = calloc(n, sizeof(*specs));
	uint64_t *ids = calloc(n, sizeof(*ids)), t;
	struct jsched_results *res = NULL;
	int rc = -1;

	if (!specs || !ids)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (jsched_spec_exec(argv, &specs[i]) != 0 ||
		    jsched_spec_set_backend(specs[i], "slurm") != 0)
			goto out;
	t = wall_ns();
	if (jsched_submit_batch(c, (const struct jsched_spec *const *)specs, n, ids) != 0)
		goto out;
	if (jsched_wait_many(c, ids, n, JSCHED_WAIT_ALL, 120000, &res) != (int)n)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct jsched_output *o = NULL;

		sub[i] = t;
		if (jsched_output(c, ids[i], &o) != 0)
			goto out;
		start[i] = strtoull(o->out, NULL, 10);
		jsched_output_free(o);
		if (!start[i])
			goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; specs && i < n; i++)
		jsched_spec_free(specs[i]);
	free(specs);
	free(ids);
	jsched_results_free(res);
	return rc;
}

/* cpu_ns: utime + stime of process pid from /proc, in ns. */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (!(p = strrchr(buf, ')')))
		return 0;
	/* after ") ": state(3) ... utime is field 14, stime 15 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (uint64_t)(ut + st) * (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK));
}

static uint64_t self_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* start_jschedd: the build's jschedd (JSCHED_BUILD_DIR, default build/rel) in dir, with the
 * slurm backend on the cluster's partition; connected.  Returns 0 or a negative code. */
static int start_jschedd(struct bench_daemon *jd, struct jsched_conn **c)
{
	char members[PATH_MAX + 256], bin[PATH_MAX];
	const char *build = getenv("JSCHED_BUILD_DIR") ? getenv("JSCHED_BUILD_DIR") : "build/rel";

	snprintf(bin, sizeof(bin), "%s/bin/jschedd", build);
	snprintf(members, sizeof(members), "\"workers\": 2, \"backends\": {\"slurm\": {\"output_dir\": "
		 "\"%s/out\", \"partition\": \"%s\", \"poll_ms\": 100, \"max_submitted\": 1000}}",
		 dir, partition);
	return bench_daemon_start(jd, bin, dir, "slurm", members, NULL, c);
}

/* latency_ms: the median submit-to-start over every job of every run, in ms. */
static double latency_ms(double *lat, size_t n)
{
	return bench_median(lat, n) / 1e6;
}

int main(int argc, char **argv)
{
	struct bench_report *r = bench_report_new("bench-slurm", argc, argv);
	size_t n = bench_quick(r) ? 3 : 10;
	int runs = bench_runs(r);
	const char *names[3] = {"sbatch loop", "libslurm", "jschedd"};
	double *lat[3], tput[3][64], lat_ms[3], rate[3];
	size_t nlat[3] = {0, 0, 0};
	uint64_t sub[64], start[64], cpu_d = 0, cpu_self = 0, jobs_j = 0, jobs_l = 0;
	struct jsched_conn *c = NULL;
	struct bench_daemon jd;

	if (!getenv("JSCHED_SLURM_DIR") || !getenv("SLURM_CONF")) {
		bench_note(r, "skipped: needs the cluster of tests/slurm/cluster.sh (make bench-slurm)");
		return bench_report_finish(r);
	}
	if (runs > 64)
		runs = 64;
	partition = getenv("JSCHED_SLURM_PARTITION") ? getenv("JSCHED_SLURM_PARTITION") : "debug";
	snprintf(dir, sizeof(dir), "%s/bench", getenv("JSCHED_SLURM_DIR"));
	mkdir(dir, 0755);
	for (int m = 0; m < 3; m++)
		lat[m] = calloc((size_t)runs * n, sizeof(double));
	slurm_init(NULL);
	if (start_jschedd(&jd, &c) < 0)
		return 1;
	/* Methods alternate within each run, so that the machine's load falls on all three. */
	for (int run = 0; run < runs; run++) {
		for (int m = 0; m < 3; m++) {
			uint64_t first, last = 0, c0 = 0, s0 = 0;
			int rc;

			memset(start, 0, sizeof(start));
			if (m == 2)
				c0 = cpu_ns(jd.pid);
			if (m == 1)
				s0 = self_cpu_ns();
			rc = m == 0 ? run_sbatch(run, n, sub, start)
			     : m == 1 ? run_libslurm(run, n, sub, start)
				      : run_jschedd(c, n, sub, start);
			if (m == 2) {
				cpu_d += cpu_ns(jd.pid) - c0;
				jobs_j += n;
			}
			if (m == 1) {
				cpu_self += self_cpu_ns() - s0;
				jobs_l += n;
			}
			if (rc != 0) {
				fprintf(stderr, "bench-slurm: %s run %d failed\n", names[m], run);
				bench_daemon_stop(&jd, SIGTERM);
				return 1;
			}
			first = sub[0];
			for (size_t i = 0; i < n; i++) {
				lat[m][nlat[m]++] = start[i] > sub[i] ? (double)(start[i] - sub[i]) : 0;
				if (start[i] > last)
					last = start[i];
			}
			tput[m][run] = last > first ? (double)n / ((double)(last - first) / 1e9) : 0;
		}
	}
	for (int m = 0; m < 3; m++) {
		lat_ms[m] = latency_ms(lat[m], nlat[m]);
		rate[m] = bench_median(tput[m], (size_t)runs);
	}
	bench_row(r, "submit-to-start, jschedd", "ms", NULL, lat_ms[2], "sbatch loop", lat_ms[0]);
	bench_row(r, "submit-to-start, jschedd", "ms", NULL, lat_ms[2], "libslurm direct", lat_ms[1]);
	bench_row(r, "submit-to-start, libslurm direct", "ms", NULL, lat_ms[1], "sbatch loop", lat_ms[0]);
	bench_row(r, "jobs/s, jschedd", "jobs/s", NULL, rate[2], "sbatch loop", rate[0]);
	bench_row(r, "jobs/s, jschedd", "jobs/s", NULL, rate[2], "libslurm direct", rate[1]);
	bench_row(r, "CPU per remote job, jschedd", "us", NULL,
		  jobs_j ? (double)cpu_d / (double)jobs_j / 1e3 : 0, "libslurm direct (caller's CPU)",
		  jobs_l ? (double)cpu_self / (double)jobs_l / 1e3 : 0);
	bench_note(r, "%zu jobs per method per run, %d runs, methods alternating; each job is "
		      "`date +%%s%%N` on the one-node cluster of tests/slurm/cluster.sh", n, runs);
	bench_note(r, "jschedd: one batch submit, backend slurm, poll_ms 100; its CPU from "
		      "/proc/PID/stat over its runs (whole daemon: loop, slurm thread, workers)");
	jsched_close(c);
	bench_daemon_stop(&jd, SIGTERM);
	slurm_fini();
	for (int m = 0; m < 3; m++)
		free(lat[m]);
	return bench_report_finish(r);
}
