/* bench/e2e/main.c: bench_e2e, jschedd end to end beside what users would pick instead.
 *
 *   bench_e2e [--part rtt,tput,exec,fair,scale,cgroup,durable,hot,array,hostile,output,connect] [--json FILE] [--runs N] [--quick]
 *
 * Runs the chosen parts (all by default) in order; each starts its own daemons (jschedd in
 * a temporary folder, beanstalkd on a free loopback port) and stops them before the next
 * part, so only one server is ever busy at a time.  --part is this program's own option;
 * the rest go to the shared harness (bench/common/bench.h), which prints the version line
 * and the machine first.  The parts and their rows are described at the top of each file
 * and in bench/e2e/README.md.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/e2e/e2e.h"

static const struct {
	const char *name;
	void (*fn)(struct e2e *e);
} parts[] = {
	{"rtt", e2e_rtt}, {"tput", e2e_tput}, {"exec", e2e_exec}, {"fair", e2e_fair}, {"scale", e2e_scale},
	{"cgroup", e2e_cgroup},
	{"durable", e2e_durable},
	{"hot", e2e_hot},
	{"array", e2e_array},
	{"hostile", e2e_hostile},
	{"output", e2e_output},
	{"connect", e2e_connect_rate},
};
enum { NPARTS = sizeof(parts) / sizeof(parts[0]) };

/* Take "--part LIST" / "--part=LIST" out of argv (so the harness does not see it) and
 * mark the parts it names in want[]; exits 2 on an unknown name. */
static void take_parts(int *argc, char **argv, bool want[NPARTS])
{
	bool any = false;
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		const char *list = NULL;

		if (strcmp(argv[i], "--part") == 0 && i + 1 < *argc)
			list = argv[++i];
		else if (strncmp(argv[i], "--part=", 7) == 0)
			list = argv[i] + 7;
		if (!list) {
			argv[out++] = argv[i];
			continue;
		}
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", list);
		for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			size_t k = 0;

			while (k < NPARTS && strcmp(parts[k].name, tok) != 0)
				k++;
			if (k == NPARTS) {
				fprintf(stderr, "bench-e2e: unknown part '%s' (rtt, tput, exec, fair, scale, cgroup, durable, hot, array, hostile, output, connect)\n", tok);
				exit(2);
			}
			want[k] = any = true;
		}
	}
	argv[out] = NULL;
	*argc = out;
	if (!any)
		for (size_t k = 0; k < NPARTS; k++)
			want[k] = true;
}

int main(int argc, char **argv)
{
	bool want[NPARTS] = {false};
	struct rlimit rl;

	take_parts(&argc, argv, want);
	/* A client that dies mid-write to a daemon must not kill the benchmark with it. */
	signal(SIGPIPE, SIG_IGN);
	/* Scale connects 1,000 clients from this process, and the daemon inherits the limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct e2e e = {.rep = bench_report_new("bench-e2e", argc, argv)};
	e.quick = bench_quick(e.rep);
	e.runs = bench_runs(e.rep);
	e.runs_long = e.runs < 3 ? e.runs : 3;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	e.cpus = cpus > 0 ? (unsigned)cpus : 1;
	for (size_t k = 0; k < NPARTS; k++) {
		if (!want[k])
			continue;
		fflush(stdout);
		parts[k].fn(&e);
	}
	return bench_report_finish(e.rep);
}
