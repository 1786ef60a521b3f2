/* bench/common/bench.c: the shared benchmark harness (see bench.h for the contract).
 *
 * Three concerns, in file order: describing the machine (read from /proc and /sys only,
 * so that the description is the same whatever libc or tool is installed), parsing the
 * command line, and the report itself (an aligned table on stdout, mirrored into a
 * jansson document that is written out at the end).
 */
#include "bench/common/bench.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jsched_version.h"

struct bench_report {
	char *program;
	const char *json_path;	/* borrowed from argv; NULL without --json */
	int runs;
	bool quick;
	const char *only;	/* --only TEXT: the rows whose name contains it; NULL: all */
	bool header_printed;
	double cpu_start_s, busy_start_s; /* all CPUs' time and busy time at the start */
	double self_start_s;	/* this process's and its waited-for children's CPU time */
	json_t *doc;		/* the whole JSON document (owned) */
	json_t *rows;		/* borrowed from doc */
	json_t *notes;		/* borrowed from doc */
};

/* ---- the machine ------------------------------------------------------------------ */

/* Copy the first line of `path` into buf without its newline; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* Number of CPUs in a list such as "0-3,8,10-11" (the format of .../cpu/online). */
static long count_cpu_list(const char *s)
{
	long n = 0;
	while (*s) {
		char *end;
		long lo = strtol(s, &end, 10);
		if (end == s)
			break;
		long hi = lo;
		if (*end == '-') {
			s = end + 1;
			hi = strtol(s, &end, 10);
			if (end == s)
				break;
		}
		if (hi >= lo)
			n += hi - lo + 1;
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

/* The "model name" of the first CPU (or "CPU part" on ARM), and whether any CPU's
 * flags include "hypervisor", which the kernel sets when it runs under one. */
static void read_cpuinfo(char *model, size_t size, bool *vm)
{
	snprintf(model, size, "unknown");
	*vm = false;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[4096];
	bool have_model = false;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *val = colon + 1;
		while (*val == ' ' || *val == '\t')
			val++;
		val[strcspn(val, "\n")] = '\0';
		bool is_model = strncmp(line, "model name", 10) == 0;
		if (!have_model && (is_model || strncmp(line, "CPU part", 8) == 0)) {
			snprintf(model, size, "%s", val);
			have_model = is_model;
		} else if (strncmp(line, "flags", 5) == 0) {
			/* whole-word match: " hypervisor " within " <flags> " */
			char padded[sizeof line + 2];
			snprintf(padded, sizeof padded, " %s ", val);
			if (strstr(padded, " hypervisor "))
				*vm = true;
		}
	}
	fclose(f);
}

/* MemTotal from /proc/meminfo, in bytes; 0 if unknown. */
static long long read_mem_total(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	long long kib = 0;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "MemTotal: %lld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib * 1024;
}

/* The machine as a new JSON object; also printed as one line. */
static json_t *describe_machine(void)
{
	char model[256], kernel[256] = "unknown", ostype[64] = "", online[256];
	bool vm;
	read_cpuinfo(model, sizeof model, &vm);
	long cpus = 0;
	if (read_line("/sys/devices/system/cpu/online", online, sizeof online))
		cpus = count_cpu_list(online);
	if (cpus <= 0)
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char release[128];
	if (read_line("/proc/sys/kernel/osrelease", release, sizeof release)) {
		read_line("/proc/sys/kernel/ostype", ostype, sizeof ostype);
		snprintf(kernel, sizeof kernel, "%s%s%s", ostype, *ostype ? " " : "", release);
	}
	long long mem = read_mem_total();

	printf("machine: %s, %ld online CPUs, %s, %.1f GiB RAM, %s\n", model, cpus, kernel,
	       (double)mem / (1024.0 * 1024.0 * 1024.0), vm ? "virtual machine" : "bare metal");
	return json_pack("{s:s, s:I, s:s, s:I, s:b}", "cpu_model", model, "online_cpus",
			 (json_int_t)cpus, "kernel", kernel, "memory_bytes", (json_int_t)mem, "vm",
			 vm);
}

/* The 1-minute load average, or -1: printed at the start and the end of a run, because
 * on a shared machine a figure means little without it. */
static double read_loadavg(void)
{
	char line[128];
	double l;
	if (!read_line("/proc/loadavg", line, sizeof line) || sscanf(line, "%lf", &l) != 1)
		return -1.0;
	return l;
}

/* The machine's CPU time since boot, all of it and the busy part (not idle or iowait),
 * in seconds summed over the CPUs; false if /proc/stat is unreadable. */
static bool read_cpu_times(double *total_s, double *busy_s)
{
	char line[512];
	unsigned long long v[10] = {0};
	if (!read_line("/proc/stat", line, sizeof line) ||
	    sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]) < 8)
		return false;
	double hz = (double)sysconf(_SC_CLK_TCK);
	unsigned long long all = 0;
	for (int i = 0; i < 8; i++)
		all += v[i];
	*total_s = (double)all / hz;
	*busy_s = (double)(all - v[3] - v[4]) / hz;
	return true;
}

/* reap_orphans: wait for every child that has exited (without blocking), so that its
 * CPU time counts in RUSAGE_CHILDREN.  With this process a child subreaper
 * (bench_report_new), those include the benchmark's orphaned descendants: servers that
 * daemonize themselves (task-spooler's) and jobs that detach (nq's). */
static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* CPU time of this process and of its children that have been waited for, in seconds. */
static double self_cpu_s(void)
{
	double s = 0;
	struct rusage ru;
	int who[2] = {RUSAGE_SELF, RUSAGE_CHILDREN};
	for (int i = 0; i < 2; i++)
		if (getrusage(who[i], &ru) == 0)
			s += (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return s;
}

/* ---- the command line ------------------------------------------------------------- */

static void usage(FILE *out, const char *program)
{
	fprintf(out,
		"usage: %s [--json FILE] [--runs N] [--quick] [--only TEXT] [--help]\n"
		"  --json FILE  also write the rows as JSON to FILE (compare with bench/compare.py)\n"
		"  --runs N     runs per row; each row reports the median (default 5)\n"
		"  --quick      smaller sizes: a smoke test that the benchmark still runs\n"
		"  --only TEXT  only the rows whose name contains TEXT (where the benchmark\n"
		"               can skip the others: bench_wanted)\n"
		"  --help       this text\n",
		program);
}

static _Noreturn void usage_error(const char *program, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "program: <message>" and the usage to stderr, and exit with status 2. */
static _Noreturn void usage_error(const char *program, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", program);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr, program);
	exit(2);
}

/* The value of option `name` at argv[*i], given as "--name VALUE" or "--name=VALUE";
 * NULL if argv[*i] is not that option.  Advances *i past a separate value. */
static const char *option_value(const char *program, const char *name, int argc, char **argv,
				int *i)
{
	size_t len = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, len) != 0)
		return NULL;
	if (a[len] == '=')
		return a + len + 1;
	if (a[len] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		usage_error(program, "option %s needs a value", name);
	return argv[++*i];
}

static void parse_args(struct bench_report *r, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout, r->program);
			exit(0);
		} else if (strcmp(a, "--quick") == 0) {
			r->quick = true;
		} else if ((v = option_value(r->program, "--json", argc, argv, &i))) {
			if (!*v)
				usage_error(r->program, "%s: empty file name", "--json");
			r->json_path = v;
		} else if ((v = option_value(r->program, "--only", argc, argv, &i))) {
			r->only = v;
		} else if ((v = option_value(r->program, "--runs", argc, argv, &i))) {
			char *end;
			errno = 0;
			long n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 1 || n > 100000)
				usage_error(r->program, "--runs: '%s' is not a count from 1 to 100000",
					    v);
			r->runs = (int)n;
		} else {
			usage_error(r->program, "unknown option '%s'", a);
		}
	}
}

/* ---- the report ------------------------------------------------------------------- */

static _Noreturn void out_of_memory(void)
{
	fputs("bench: out of memory\n", stderr);
	exit(1);
}

struct bench_report *bench_report_new(const char *program, int argc, char **argv)
{
	struct bench_report *r = calloc(1, sizeof *r);
	if (!r || !(r->program = strdup(program)))
		out_of_memory();
	r->runs = 5;
	parse_args(r, argc, argv);

	printf("%s\n", JSCHED_VERSION_LINE);
	json_t *machine = describe_machine();
	double load = read_loadavg();
	printf("%s: median of %d run%s per row%s; load average %.2f\n\n", program, r->runs,
	       r->runs == 1 ? "" : "s", r->quick ? ", quick sizes" : "", load);
	fflush(stdout);

	r->rows = json_array();
	r->notes = json_array();
	/* The benchmark's whole process tree is its own: a baseline's server that
	 * daemonizes (task-spooler's) or a job that detaches (nq's) is reparented to us
	 * instead of init, and reaped at the end (reap_orphans), so that its CPU time is
	 * not counted as "other processes" below. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (!read_cpu_times(&r->cpu_start_s, &r->busy_start_s))
		r->cpu_start_s = -1;
	r->self_start_s = self_cpu_s();
	r->doc = json_pack("{s:s, s:s, s:i, s:b, s:o, s:f, s:o, s:o}", "version",
			   JSCHED_VERSION_LINE, "program", program, "runs", r->runs, "quick",
			   r->quick, "machine", machine, "load_start", load, "rows", r->rows,
			   "notes", r->notes);
	if (!r->doc)
		out_of_memory();
	return r;
}

int bench_runs(const struct bench_report *r)
{
	return r->runs;
}

bool bench_quick(const struct bench_report *r)
{
	return r->quick;
}

bool bench_wanted(const struct bench_report *r, const char *name)
{
	return r->only == NULL || strstr(name, r->only) != NULL;
}

#define COLS "%-40s %-6s %12s %-8s %-16s %14s %8s\n"

/* A number as text for the table: enough significant digits for any magnitude. */
static void fmt_value(char *buf, size_t size, double v)
{
	if (isnan(v))
		snprintf(buf, size, "-");
	else if (fabs(v) >= 1000.0)
		snprintf(buf, size, "%.0f", v);
	else if (fabs(v) >= 10.0)
		snprintf(buf, size, "%.2f", v);
	else
		snprintf(buf, size, "%.3f", v);
}

void bench_row(struct bench_report *r, const char *name, const char *unit,
	       const char *policy, double value, const char *baseline, double baseline_value)
{
	bool has_base = baseline != NULL;
	bool has_ratio = has_base && isfinite(baseline_value) && baseline_value > 0.0 &&
			 isfinite(value);
	double ratio = has_ratio ? value / baseline_value : NAN;

	if (!r->header_printed) {
		printf(COLS, "row", "policy", "value", "unit", "baseline", "baseline value",
		       "ratio");
		r->header_printed = true;
	}
	char v[32], bv[32], rt[32];
	fmt_value(v, sizeof v, value);
	fmt_value(bv, sizeof bv, has_base ? baseline_value : NAN);
	if (has_ratio)
		snprintf(rt, sizeof rt, "%.2fx", ratio);
	else
		snprintf(rt, sizeof rt, "-");
	printf(COLS, name, policy ? policy : "-", v, unit, has_base ? baseline : "-", bv, rt);
	fflush(stdout);

	/* JSON has no NaN: a value that is not finite is recorded as null. */
	json_t *row = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "name", name, "unit", unit,
				"policy", policy ? json_string(policy) : json_null(), "value",
				isfinite(value) ? json_real(value) : json_null(), "baseline",
				has_base ? json_string(baseline) : json_null(), "baseline_value",
				has_base && isfinite(baseline_value) ? json_real(baseline_value)
								      : json_null(),
				"ratio", has_ratio ? json_real(ratio) : json_null());
	if (!row || json_array_append_new(r->rows, row) != 0)
		out_of_memory();
}

void bench_note(struct bench_report *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	printf("  note: %s\n", buf);
	fflush(stdout);
	if (json_array_append_new(r->notes, json_string(buf)) != 0)
		out_of_memory();
}

int bench_report_finish(struct bench_report *r)
{
	int rc = 0;
	double load = read_loadavg();
	printf("\n%s: load average %.2f at the end", r->program, load);
	if (json_object_set_new(r->doc, "load_end", json_real(load)) != 0)
		out_of_memory();
	/* What others used of the machine while this ran: the one figure that says whether
	 * the rows above are worth keeping (the load average lags by a minute). */
	double total, busy;
	reap_orphans();
	if (r->cpu_start_s >= 0 && read_cpu_times(&total, &busy) && total > r->cpu_start_s) {
		double others = (busy - r->busy_start_s) - (self_cpu_s() - r->self_start_s);
		double share = others > 0 ? others / (total - r->cpu_start_s) : 0.0;
		printf("; other processes used %.0f%% of the CPUs during the run", 100.0 * share);
		if (json_object_set_new(r->doc, "others_cpu_share", json_real(share)) != 0)
			out_of_memory();
	}
	printf("\n");
	if (r->json_path) {
		if (json_dump_file(r->doc, r->json_path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) !=
		    0) {
			fprintf(stderr, "%s: cannot write %s\n", r->program, r->json_path);
			rc = 1;
		} else {
			printf("wrote %s\n", r->json_path);
		}
	}
	json_decref(r->doc);
	free(r->program);
	free(r);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
