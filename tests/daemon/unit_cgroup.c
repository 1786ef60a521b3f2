/* tests/daemon/unit_cgroup.c: daemon/run/cgroup.c.
 *
 * The file handling of every mode against directory trees the test builds (a fake
 * mountinfo and /proc/self/cgroup pointing at them): v2 delegated, v2 created by root,
 * v1 hierarchies, nothing usable, the leftovers of a crashed daemon.  Then, as root on a
 * machine with cgroup v1 hierarchies, real groups: a command that calls setsid and double-
 * forks is killed with its group, a memory limit ends in an OOM kill the group reports,
 * a pids limit refuses forks and says so, CPU time is accounted, leftovers are killed.
 * The real tests skip, with the reason, when not root or when a controller is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "daemon/run/cgroup.h"
#include "jsched/error.h"

/* ---- helpers --------------------------------------------------------------------------- */

static char tmp[64];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* file_text: path's contents (static buffer), "" when absent. */
__attribute__((format(printf, 1, 2))) static const char *file_text(const char *fmt, ...)
{
	static char buf[4096];
	char path[PATH_MAX];
	va_list ap;
	FILE *f;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	buf[0] = '\0';
	if (!(f = fopen(path, "r")))
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* file_path: the formatted path (static buffer). */
__attribute__((format(printf, 1, 2))) static const char *file_path(const char *fmt, ...)
{
	static char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return path;
}

__attribute__((format(printf, 1, 2))) static bool exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return access(path, F_OK) == 0;
}

__attribute__((format(printf, 1, 2))) static void mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

__attribute__((format(printf, 2, 3))) static void put_at(const char *text, const char *fmt,
							    ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	write_file(path, text);
}

static void rm_rf(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[PATH_MAX];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR)
			rm_rf(p);
		else
			unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int tree_setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/unit_cgroup.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int tree_teardown(void **state)
{
	(void)state;
	rm_rf(tmp);
	return 0;
}

/* conf_for: a conf reading tmp/mountinfo and tmp/self. */
static struct jd_cg_conf conf_for(const char *name, bool root)
{
	static char mi[PATH_MAX], self[PATH_MAX];
	struct jd_cg_conf c = {0};

	snprintf(mi, sizeof(mi), "%s/mountinfo", tmp);
	snprintf(self, sizeof(self), "%s/self", tmp);
	c.name = name;
	c.mountinfo = mi;
	c.self_cgroup = self;
	c.self_pid = 4242;
	c.is_root = root;
	c.is_root_set = true;
	return c;
}

/* v2_mount: tmp/mountinfo with a cgroup2 mount at tmp/<dir> (plus noise), and tmp/self. */
static void v2_mount(const char *dir, const char *self)
{
	char text[3 * PATH_MAX];

	snprintf(text, sizeof(text),
		 "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		 "30 22 0:26 / %s/%s rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
		 "31 22 0:27 / /proc rw - proc proc rw\n",
		 tmp, dir);
	put_at(text, "%s/mountinfo", tmp);
	put_at(self, "%s/self", tmp);
}

/* ---- v2, on a built tree --------------------------------------------------------------- */

static void test_v2_delegated(void **state)
{
	struct jd_cg_limits cl = {.memory_max = 1ull << 30};
	struct jd_cg_limits jl = {.memory_max = 2ull << 30, .pids_max = 100, .cpu_max_milli = 1500};
	struct jd_cg_conf conf;
	struct jd_cg_job g;
	struct jd_cg_usage u;
	const char *dirs[JD_CG_MAX_HIER];
	size_t nd;
	struct jd_cg *cg = calloc(1, sizeof(*cg));
	const char *unit = "cg/system.slice/jschedd.service";

	(void)state;
	v2_mount("cg", "0::/system.slice/jschedd.service\n");
	mkdirs("%s/%s", tmp, unit);
	put_at("cpuset cpu io memory pids\n", "%s/%s/cgroup.controllers", tmp, unit);
	put_at("", "%s/%s/cgroup.subtree_control", tmp, unit);
	put_at("4242\n", "%s/%s/cgroup.procs", tmp, unit);
	put_at("", "%s/%s/cgroup.kill", tmp, unit); /* the kernel has cgroup.kill */
	if (geteuid() == 0) {
		/* Root goes by systemd's mark of a delegated group, not by write access. */
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/%s", tmp, unit);
		if (setxattr(dir, "trusted.delegate", "1", 1, 0) < 0) {
			fprintf(stderr, "skipped: cannot set trusted.delegate on %s: %s\n", dir,
				strerror(errno));
			free(cg);
			skip();
		}
	}
	conf = conf_for("ignored", false);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_V2);
	assert_string_equal(cg->how, "v2 delegated");
	assert_true(cg->plain);
	assert_true(cg->has_kill);
	assert_non_null(strstr(cg->reason, "controllers cpu,memory,pids"));
	/* The daemon moved itself into the leaf, and enabled the controllers for children. */
	assert_string_equal(file_text("%s/%s/daemon/cgroup.procs", tmp, unit), "4242");
	assert_string_equal(file_text("%s/%s/cgroup.subtree_control", tmp, unit), "+cpu +memory +pids");

	assert_int_equal(jd_cg_client(cg, "alice", 3, &cl), 0);
	assert_string_equal(file_text("%s/%s/client-alice/cpu.weight", tmp, unit), "300");
	assert_string_equal(file_text("%s/%s/client-alice/memory.max", tmp, unit), "1073741824");
	assert_string_equal(file_text("%s/%s/client-alice/pids.max", tmp, unit), "max");
	assert_string_equal(file_text("%s/%s/client-alice/cpu.max", tmp, unit), "max 100000");
	assert_string_equal(file_text("%s/%s/client-alice/cgroup.subtree_control", tmp, unit),
			    "+cpu +memory +pids");
	/* A weight past the controller's range is clamped. */
	assert_int_equal(jd_cg_client(cg, "alice", 500, NULL), 0);
	assert_string_equal(file_text("%s/%s/client-alice/cpu.weight", tmp, unit), "10000");
	assert_string_equal(file_text("%s/%s/client-alice/memory.max", tmp, unit), "max");

	assert_int_equal(jd_cg_job_create(cg, "alice", 7, 0, &jl, 0, &g), 0);
	assert_int_equal(g.ndir, 1);
	assert_string_equal(file_text("%s/%s/client-alice/job-7/memory.max", tmp, unit), "2147483648");
	assert_string_equal(file_text("%s/%s/client-alice/job-7/memory.swap.max", tmp, unit), "0");
	assert_string_equal(file_text("%s/%s/client-alice/job-7/pids.max", tmp, unit), "100");
	assert_string_equal(file_text("%s/%s/client-alice/job-7/cpu.max", tmp, unit), "150000 100000");
	jd_cg_place(&g, dirs, &nd);
	assert_int_equal(nd, 1);
	assert_non_null(strstr(dirs[0], "/client-alice/job-7"));

	put_at("populated 1\nfrozen 0\n", "%s/cgroup.events", g.dir[0]);
	assert_true(jd_cg_populated(cg, &g));
	assert_int_equal(jd_cg_kill(cg, &g), 0);
	assert_string_equal(file_text("%s/cgroup.kill", g.dir[0]), "1");
	put_at("populated 0\nfrozen 0\n", "%s/cgroup.events", g.dir[0]);
	assert_false(jd_cg_populated(cg, &g));

	put_at("usage_usec 300\nuser_usec 200\nsystem_usec 100\n", "%s/cpu.stat", g.dir[0]);
	put_at("12345\n", "%s/memory.peak", g.dir[0]);
	put_at("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n", "%s/memory.events",
	       g.dir[0]);
	put_at("max 2\n", "%s/pids.events", g.dir[0]);
	assert_int_equal(jd_cg_usage(cg, &g, &u, true), 0);
	assert_true(u.has_cpu && u.has_memory_peak && u.has_oom && u.has_pids);
	assert_int_equal(u.cpu_us, 300);
	assert_int_equal(u.user_us, 200);
	assert_int_equal(u.system_us, 100);
	assert_int_equal(u.memory_peak, 12345);
	assert_int_equal(u.oom_kills, 1);
	assert_int_equal(u.pids_max_hits, 2);
	assert_int_equal(cg->stats.oom_kills, 1);
	assert_int_equal(cg->stats.pids_max_hits, 2);

	assert_int_equal(jd_cg_job_remove(cg, &g), 0);
	assert_false(exists("%s/%s/client-alice/job-7", tmp, unit));
	assert_int_equal(cg->stats.created, 1);
	assert_int_equal(cg->stats.removed, 1);
	jd_cg_close(cg);
	/* systemd's group and our leaf stay; the client groups go. */
	assert_false(exists("%s/%s/client-alice", tmp, unit));
	assert_true(exists("%s/%s/daemon", tmp, unit));
	free(cg);
}

static void test_v2_created_by_root(void **state)
{
	struct jd_cg_limits pl = {.pids_max = 10}, ml = {.memory_max = 1 << 20};
	struct jd_cg_conf conf;
	struct jd_cg_job g;
	char why[512];
	struct jd_cg *cg = calloc(1, sizeof(*cg));

	(void)state;
	v2_mount("cg2", "0::/\n");
	mkdirs("%s/cg2", tmp);
	put_at("cpu memory hugetlb\n", "%s/cg2/cgroup.controllers", tmp);
	put_at("", "%s/cg2/cgroup.subtree_control", tmp);
	conf = conf_for("jt", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_V2);
	assert_string_equal(cg->how, "v2 created");
	assert_false(cg->has_kill);
	assert_non_null(strstr(cg->reason, "kill by freeze"));
	assert_string_equal(file_text("%s/cg2/cgroup.subtree_control", tmp), "+cpu +memory");
	assert_string_equal(file_text("%s/cg2/jt/cgroup.subtree_control", tmp), "+cpu +memory");
	/* No pids controller: a pids limit is refused, with the reason; memory is fine. */
	assert_int_equal(jd_cg_can_limit(cg, &pl, why, sizeof(why)), JSCHED_ENOT_SUPPORTED);
	assert_non_null(strstr(why, "pids"));
	assert_int_equal(jd_cg_can_limit(cg, &ml, why, sizeof(why)), 0);

	/* A client name with bytes outside the safe set is escaped. */
	assert_int_equal(jd_cg_job_create(cg, "a b/c", 1, 0, NULL, 0, &g), 0);
	assert_true(exists("%s/cg2/jt/client-a%%20b%%2Fc/job-1", tmp));
	/* Freeze-and-kill: frozen, then thawed again. */
	assert_int_equal(jd_cg_kill(cg, &g), 0);
	assert_string_equal(file_text("%s/cgroup.freeze", g.dir[0]), "0");
	assert_int_equal(jd_cg_job_remove(cg, &g), 0);
	jd_cg_close(cg);
	assert_false(exists("%s/cg2/jt", tmp));
	free(cg);
}

static void test_v2_not_delegated_not_root(void **state)
{
	struct jd_cg_limits ml = {.memory_max = 1 << 20};
	struct jd_cg_conf conf;
	struct jd_cg_job g;
	char why[1024];
	struct jd_cg *cg = calloc(1, sizeof(*cg));

	(void)state;
	/* The user's group has controllers but its files are not ours to write. */
	v2_mount("cg3", "0::/user.slice/user-1000.slice/session-1.scope\n");
	mkdirs("%s/cg3/user.slice/user-1000.slice/session-1.scope", tmp);
	put_at("cpu memory pids\n", "%s/cg3/user.slice/user-1000.slice/session-1.scope/cgroup.controllers",
	       tmp);
	put_at("", "%s/cg3/user.slice/user-1000.slice/session-1.scope/cgroup.subtree_control", tmp);
	put_at("", "%s/cg3/user.slice/user-1000.slice/session-1.scope/cgroup.procs", tmp);
	chmod(file_path("%s/cg3/user.slice/user-1000.slice/session-1.scope/cgroup.procs", tmp), 0444);
	chmod(file_path("%s/cg3/user.slice/user-1000.slice/session-1.scope/cgroup.subtree_control", tmp),
	      0444);
	chmod(file_path("%s/cg3/user.slice/user-1000.slice/session-1.scope", tmp), 0555);
	/* Not root: not writable, so not ours.  Root: no delegation mark, so not ours either,
	 * and the top of the tree offers no controllers to create a subtree with. */
	conf = conf_for("jt", geteuid() == 0);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_NONE);
	assert_non_null(strstr(cg->reason, geteuid() == 0 ? "offers none" : "not delegated"));
	chmod(file_path("%s/cg3/user.slice/user-1000.slice/session-1.scope", tmp), 0755);
	assert_int_equal(jd_cg_can_limit(cg, &ml, why, sizeof(why)), JSCHED_ENOT_SUPPORTED);
	assert_non_null(strstr(why, "memory limit needs cgroups"));
	assert_int_equal(jd_cg_job_create(cg, "alice", 1, 0, NULL, 0, &g), JSCHED_ENOT_SUPPORTED);
	free(cg);
}

static void test_modes_and_names(void **state)
{
	struct jd_cg_conf conf;
	struct jd_cg *cg = calloc(1, sizeof(*cg));

	(void)state;
	put_at("22 1 8:1 / / rw - ext4 /dev/vda rw\n", "%s/mountinfo", tmp);
	put_at("0::/\n", "%s/self", tmp);
	conf = conf_for("ok", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_NONE);
	assert_string_equal(cg->reason, "no cgroup file system is mounted");
	conf.mode = "v2";
	assert_int_equal(jd_cg_open(cg, &conf), JSCHED_EIO);
	conf.mode = "v3";
	assert_int_equal(jd_cg_open(cg, &conf), JSCHED_EINVAL);
	assert_non_null(strstr(cg->reason, "auto, v2, v1 or off"));
	conf.mode = "off";
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_non_null(strstr(cg->reason, "turned off"));
	conf.mode = NULL;
	conf.name = "../etc";
	assert_int_equal(jd_cg_open(cg, &conf), JSCHED_EINVAL);
	conf.name = "";
	assert_int_equal(jd_cg_open(cg, &conf), JSCHED_EINVAL);
	free(cg);
}

/* ---- v1, on a built tree --------------------------------------------------------------- */

static void v1_tree(void)
{
	char text[6 * PATH_MAX];

	/* A hybrid machine: cgroup2 with only hugetlb, the rest on v1 (cpu and cpuacct
	 * co-mounted), jschedd inside an outer memory group. */
	snprintf(text, sizeof(text),
		 "30 22 0:26 / %s/v1/unified rw - cgroup2 cgroup2 rw\n"
		 "31 22 0:27 / %s/v1/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		 "32 22 0:28 / %s/v1/memory rw - cgroup cgroup rw,memory\n"
		 "33 22 0:29 / %s/v1/pids rw - cgroup cgroup rw,pids\n"
		 "34 22 0:30 / %s/v1/freezer rw - cgroup cgroup rw,freezer\n"
		 "35 22 0:31 / %s/v1/systemd rw - cgroup cgroup rw,name=systemd\n",
		 tmp, tmp, tmp, tmp, tmp, tmp);
	put_at(text, "%s/mountinfo", tmp);
	put_at("6:freezer:/\n5:pids:/\n4:memory:/outer/box\n2:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n",
	       "%s/self", tmp);
	mkdirs("%s/v1/unified", tmp);
	put_at("hugetlb\n", "%s/v1/unified/cgroup.controllers", tmp);
	mkdirs("%s/v1/cpu,cpuacct", tmp);
	mkdirs("%s/v1/memory/outer/box", tmp);
	mkdirs("%s/v1/pids", tmp);
	mkdirs("%s/v1/freezer", tmp);
}

static void test_v1_tree(void **state)
{
	struct jd_cg_limits jl = {.memory_max = 64 << 20, .pids_max = 8, .cpu_max_milli = 500};
	struct jd_cg_conf conf;
	struct jd_cg_job g;
	struct jd_cg_usage u;
	struct jd_cg *cg = calloc(1, sizeof(*cg));

	(void)state;
	v1_tree();
	conf = conf_for("jt", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_V1);
	assert_int_equal(cg->nhier, 4);
	assert_int_equal(cg->controllers, (1u << JD_CG_NCTL) - 1);
	assert_non_null(strstr(cg->reason, "kill by freezer"));
	/* v2 was looked at and passed over. */
	assert_true(exists("%s/v1/memory/outer/box/jt", tmp)); /* inside the outer group */
	assert_true(exists("%s/v1/cpu,cpuacct/jt", tmp));
	assert_false(exists("%s/v1/unified/jt", tmp));

	assert_int_equal(jd_cg_client(cg, "bob", 3, NULL), 0);
	assert_string_equal(file_text("%s/v1/cpu,cpuacct/jt/client-bob/cpu.shares", tmp), "3072");
	assert_string_equal(file_text("%s/v1/cpu,cpuacct/jt/client-bob/cpu.cfs_quota_us", tmp), "-1");
	assert_string_equal(file_text("%s/v1/memory/outer/box/jt/client-bob/memory.limit_in_bytes", tmp),
			    "-1");
	assert_int_equal(jd_cg_job_create(cg, "bob", 42, 0, &jl, 0, &g), 0);
	assert_int_equal(g.ndir, 4);
	assert_string_equal(file_text("%s/v1/cpu,cpuacct/jt/client-bob/job-42/cpu.cfs_quota_us", tmp),
			    "50000");
	assert_string_equal(file_text("%s/v1/cpu,cpuacct/jt/client-bob/job-42/cpu.cfs_period_us", tmp),
			    "100000");
	assert_string_equal(
		file_text("%s/v1/memory/outer/box/jt/client-bob/job-42/memory.limit_in_bytes", tmp),
		"67108864");
	assert_string_equal(
		file_text("%s/v1/memory/outer/box/jt/client-bob/job-42/memory.memsw.limit_in_bytes", tmp),
		"67108864");
	assert_string_equal(file_text("%s/v1/pids/jt/client-bob/job-42/pids.max", tmp), "8");

	/* Freeze, kill what is listed (nothing here), thaw. */
	assert_int_equal(jd_cg_kill(cg, &g), 0);
	assert_string_equal(file_text("%s/v1/freezer/jt/client-bob/job-42/freezer.state", tmp), "THAWED");
	put_at("11000000\n", "%s/v1/cpu,cpuacct/jt/client-bob/job-42/cpuacct.usage", tmp);
	put_at("7000000\n", "%s/v1/cpu,cpuacct/jt/client-bob/job-42/cpuacct.usage_user", tmp);
	put_at("3000000\n", "%s/v1/cpu,cpuacct/jt/client-bob/job-42/cpuacct.usage_sys", tmp);
	put_at("1048576\n", "%s/v1/memory/outer/box/jt/client-bob/job-42/memory.max_usage_in_bytes",
	       tmp);
	put_at("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
	       "%s/v1/memory/outer/box/jt/client-bob/job-42/memory.oom_control", tmp);
	put_at("max 0\n", "%s/v1/pids/jt/client-bob/job-42/pids.events", tmp);
	assert_int_equal(jd_cg_usage(cg, &g, &u, true), 0);
	assert_int_equal(u.cpu_us, 11000);
	assert_int_equal(u.user_us, 7000);
	assert_int_equal(u.system_us, 3000);
	assert_int_equal(u.memory_peak, 1048576);
	assert_int_equal(u.oom_kills, 2);
	assert_true(u.has_pids);
	assert_int_equal(u.pids_max_hits, 0);
	assert_false(jd_cg_populated(cg, &g));
	assert_int_equal(jd_cg_job_remove(cg, &g), 0);
	jd_cg_close(cg);
	assert_false(exists("%s/v1/memory/outer/box/jt", tmp));
	assert_false(exists("%s/v1/pids/jt", tmp));
	free(cg);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A group that can be reused: its job's name on one directory (job-ID+g-N, the others
 * g-N); parked: that one renamed g-N, its peak reset, its counters the base of the next
 * command's usage; the next job takes it by one rename; a group without the pids
 * hierarchy; a crash's sweep reports the running jobs of both namings and removes
 * parked groups without reporting them, as the close does; v2 refuses. */

static void test_v1_tree_reuse(void **state)
{
	struct jd_cg_conf conf;
	struct jd_cg_job g, h;
	struct jd_cg_usage u, now;
	uint64_t ids[4];
	const char *dirs[JD_CG_MAX_HIER];
	size_t n, total;
	struct jd_cg *cg = calloc(1, sizeof(*cg));
	const char *cpu = "v1/cpu,cpuacct/jt/client-bob", *mem = "v1/memory/outer/box/jt/client-bob";
	const char *pids = "v1/pids/jt/client-bob", *frz = "v1/freezer/jt/client-bob";

	(void)state;
	v1_tree();
	conf = conf_for("jt", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_true(jd_cg_can_reuse(cg));
	/* A group that can be reused carries its job's name in its first hierarchy only. */
	assert_int_equal(jd_cg_job_create(cg, "bob", 42, 0, NULL, 0, &g), 0);
	assert_int_equal(g.slot, 1);
	assert_true(exists("%s/%s/job-42+g-1", tmp, cpu));
	assert_true(exists("%s/%s/g-1", tmp, mem));
	assert_true(exists("%s/%s/g-1", tmp, pids));
	assert_true(exists("%s/%s/g-1", tmp, frz));
	put_at("11000000\n", "%s/%s/job-42+g-1/cpuacct.usage", tmp, cpu);
	put_at("7000000\n", "%s/%s/job-42+g-1/cpuacct.usage_user", tmp, cpu);
	put_at("3000000\n", "%s/%s/job-42+g-1/cpuacct.usage_sys", tmp, cpu);
	put_at("1048576\n", "%s/%s/g-1/memory.max_usage_in_bytes", tmp, mem);
	put_at("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "%s/%s/g-1/memory.oom_control", tmp,
	       mem);
	put_at("max 1\n", "%s/%s/g-1/pids.events", tmp, pids);
	assert_int_equal(jd_cg_usage(cg, &g, &now, true), 0);
	assert_int_equal(jd_cg_job_park(cg, &g, &now), 0);
	assert_false(exists("%s/%s/job-42+g-1", tmp, cpu));
	assert_true(exists("%s/%s/g-1", tmp, cpu));
	assert_true(exists("%s/%s/g-1", tmp, pids));
	assert_string_equal(file_text("%s/%s/g-1/memory.max_usage_in_bytes", tmp, mem), "0");

	/* The next job: same directories, one renamed, usage counted from the base; the
	 * split read from cpuacct.usage_all (ns per CPU) where it is there. */
	assert_int_equal(jd_cg_job_reuse(cg, &g, 43, 0), 0);
	assert_int_equal(g.id, 43);
	assert_true(exists("%s/%s/job-43+g-1", tmp, cpu));
	assert_true(exists("%s/%s/g-1", tmp, frz));
	assert_false(exists("%s/%s/g-1", tmp, cpu));
	put_at("15000000\n", "%s/%s/job-43+g-1/cpuacct.usage", tmp, cpu);
	put_at("cpu user system\n0 5000000 3000000\n1 4000000 1000000\n",
	       "%s/%s/job-43+g-1/cpuacct.usage_all", tmp, cpu);
	put_at("524288\n", "%s/%s/g-1/memory.max_usage_in_bytes", tmp, mem);
	assert_int_equal(jd_cg_usage(cg, &g, &u, true), 0);
	assert_int_equal(u.cpu_us, 4000);
	assert_int_equal(u.user_us, 2000);
	assert_int_equal(u.system_us, 1000);
	assert_int_equal(u.memory_peak, 524288); /* reset at parking, not subtracted */
	assert_int_equal(u.oom_kills, 0);
	assert_int_equal(u.pids_max_hits, 0);
	assert_int_equal(cg->stats.oom_kills, 2); /* the first job's, counted once */
	assert_int_equal(cg->stats.parked, 1);
	assert_int_equal(cg->stats.reused, 1);

	/* Without the pids controller (no pids limit anywhere): no group in its hierarchy,
	 * three places to enter, nothing read there. */
	assert_int_equal(jd_cg_job_create(cg, "bob", 44, 0, NULL, 1u << JD_CG_PIDS, &h), 0);
	assert_int_equal(h.slot, 2);
	assert_true(exists("%s/%s/job-44+g-2", tmp, cpu));
	assert_false(exists("%s/%s/g-2", tmp, pids));
	assert_true(exists("%s/%s/g-2", tmp, frz));
	jd_cg_place(&h, dirs, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(dirs[i], "/pids/"));
	put_at("max 5\n", "%s/%s/pids.events", tmp, pids); /* the client's: not the job's */
	put_at("2000\n", "%s/%s/job-44+g-2/cpuacct.usage", tmp, cpu);
	put_at("cpu user system\n0 0 0\n", "%s/%s/job-44+g-2/cpuacct.usage_all", tmp, cpu);
	assert_int_equal(jd_cg_usage(cg, &h, &u, true), 0);
	assert_int_equal(u.cpu_us, 2);
	assert_false(u.has_pids);
	assert_int_equal(jd_cg_kill(cg, &h), 0);
	assert_string_equal(file_text("%s/%s/g-2/freezer.state", tmp, frz), "THAWED");

	/* A crash with a parked group, a reusable group running job 44 and a job group of
	 * an earlier build's names: the jobs are reported, everything is removed. */
	assert_int_equal(jd_cg_job_park(cg, &g, &u), 0);
	mkdirs("%s/%s/job-50", tmp, cpu);
	mkdirs("%s/%s/spare-3", tmp, frz);
	assert_int_equal(jd_cg_recover(cg, ids, NULL, 4, &n, &total), 0);
	assert_int_equal(n, 2);
	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	assert_int_equal(ids[0], 44);
	assert_int_equal(ids[1], 50);
	assert_false(exists("%s/%s", tmp, cpu));
	assert_false(exists("%s/%s", tmp, frz));
	assert_false(exists("%s/%s", tmp, mem));

	/* The close removes what is parked (and then the client's group). */
	assert_int_equal(jd_cg_job_create(cg, "bob", 60, 0, NULL, 0, &g), 0);
	assert_int_equal(jd_cg_job_park(cg, &g, &u), 0);
	assert_true(exists("%s/%s/g-%llu", tmp, frz, (unsigned long long)g.slot));
	jd_cg_close(cg);
	assert_false(exists("%s/%s", tmp, frz));
	assert_false(exists("%s/v1/pids/jt", tmp));
	free(cg);

	/* v2: memory.peak cannot be reset for all readers, so no reuse. */
	cg = calloc(1, sizeof(*cg));
	mkdirs("%s/v2/jt", tmp);
	put_at("cpu memory pids\n", "%s/v2/cgroup.controllers", tmp);
	put_at("", "%s/v2/cgroup.subtree_control", tmp);
	v2_mount("v2", "0::/\n");
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(cg->mode, JD_CG_V2);
	assert_false(jd_cg_can_reuse(cg));
	assert_int_equal(jd_cg_job_create(cg, "bob", 1, 0, NULL, 0, &g), 0);
	assert_int_equal(jd_cg_job_park(cg, &g, &u), JSCHED_ENOT_SUPPORTED);
	assert_int_equal(jd_cg_job_remove(cg, &g), 0);
	jd_cg_close(cg);
	free(cg);
}


/* Unnamed groups (no journal: nothing to settle after a crash): a reusable group is g-N in
 * every hierarchy, and parking and reusing it rename nothing; a crash's sweep removes it
 * without reporting a job. */
static void test_v1_tree_unnamed(void **state)
{
	struct jd_cg_conf conf;
	struct jd_cg_job g;
	struct jd_cg_usage u = {0};
	uint64_t ids[4];
	size_t n, total;
	struct jd_cg *cg = calloc(1, sizeof(*cg));
	const char *cpu = "v1/cpu,cpuacct/jt/client-bob", *frz = "v1/freezer/jt/client-bob";

	(void)state;
	v1_tree();
	conf = conf_for("jt", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	cg->unnamed = true;
	assert_int_equal(jd_cg_job_create(cg, "bob", 70, 0, NULL, 0, &g), 0);
	assert_true(exists("%s/%s/g-1", tmp, cpu));
	assert_false(exists("%s/%s/job-70+g-1", tmp, cpu));
	assert_int_equal(jd_cg_job_park(cg, &g, &u), 0);
	assert_int_equal(jd_cg_job_reuse(cg, &g, 71, 0), 0);
	assert_int_equal(g.id, 71);
	assert_true(exists("%s/%s/g-1", tmp, cpu));
	assert_true(exists("%s/%s/g-1", tmp, frz));
	assert_int_equal(cg->stats.parked, 1);
	assert_int_equal(cg->stats.reused, 1);
	assert_int_equal(cg->stats.errors, 0);
	assert_int_equal(jd_cg_recover(cg, ids, NULL, 4, &n, &total), 0);
	assert_int_equal(total, 0);
	assert_false(exists("%s/%s", tmp, cpu));
	jd_cg_close(cg);
	free(cg);
}

static void test_v1_tree_recover(void **state)
{
	struct jd_cg_conf conf;
	uint64_t ids[8];
	size_t n, total;
	struct jd_cg *cg = calloc(1, sizeof(*cg));

	(void)state;
	v1_tree();
	/* What a crashed daemon left: two clients' job groups, not in every hierarchy, and a
	 * stray directory that is not a job group. */
	mkdirs("%s/v1/pids/jt/client-bob/job-5", tmp);
	mkdirs("%s/v1/memory/outer/box/jt/client-bob/job-5", tmp);
	mkdirs("%s/v1/pids/jt/client-bob/job-9", tmp);
	mkdirs("%s/v1/freezer/jt/client-eve/job-12", tmp);
	mkdirs("%s/v1/freezer/jt/client-eve/job-12x", tmp);
	conf = conf_for("jt", true);
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(jd_cg_recover(cg, ids, NULL, 2, &n, &total), 0);
	assert_int_equal(total, 3);
	assert_int_equal(n, 2); /* only room for two: all three removed */
	assert_int_equal(cg->stats.recovered, 3);
	assert_int_equal(jd_cg_recover(cg, ids, NULL, 8, &n, &total), 0);
	assert_int_equal(total, 0);
	assert_false(exists("%s/v1/pids/jt/client-bob", tmp));
	assert_false(exists("%s/v1/memory/outer/box/jt/client-bob/job-5", tmp));
	assert_true(exists("%s/v1/freezer/jt/client-eve/job-12x", tmp)); /* not ours to remove */
	jd_cg_close(cg);

	/* And the ids themselves. */
	mkdirs("%s/v1/pids/jt/client-bob/job-5", tmp);
	mkdirs("%s/v1/pids/jt/client-eve/job-12", tmp);
	mkdirs("%s/v1/freezer/jt/client-bob/job-9", tmp);
	mkdirs("%s/v1/freezer/jt/client-bob/job-9-2", tmp); /* a handler's second process */
	assert_int_equal(jd_cg_open(cg, &conf), 0);
	assert_int_equal(jd_cg_recover(cg, ids, NULL, 8, &n, &total), 0);
	assert_int_equal(n, 4);
	qsort(ids, n, sizeof(ids[0]), cmp_u64);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[1], 9);
	assert_int_equal(ids[2], 9);
	assert_int_equal(ids[3], 12);
	free(cg);
}

/* ---- real cgroup v1 groups (root) ------------------------------------------------------ */

static struct jd_cg *real;
static char real_skip[256];

static int real_setup(void **state)
{
	struct jd_cg_conf conf = {0};
	char name[64];

	(void)state;
	real_skip[0] = '\0';
	if (geteuid() != 0) {
		snprintf(real_skip, sizeof(real_skip), "needs root to create cgroups");
		return 0;
	}
	real = calloc(1, sizeof(*real));
	snprintf(name, sizeof(name), "jschedd-unit-%d", (int)getpid());
	conf.name = name;
	conf.mode = "v1";
	if (jd_cg_open(real, &conf) < 0 || real->mode != JD_CG_V1) {
		snprintf(real_skip, sizeof(real_skip), "no usable cgroup v1 here: %.200s", real->reason);
		free(real);
		real = NULL;
		return 0;
	}
	/* Orphans of the tests' commands become our children, so their end can be waited
	 * for (and reaped) instead of guessed. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return 0;
}

static int real_teardown(void **state)
{
	(void)state;
	if (real) {
		char base[PATH_MAX];
		uint64_t ids[8];
		size_t n;

		/* Whatever a failed test left is killed and removed like a crash's leftovers. */
		(void)jd_cg_recover(real, ids, NULL, 8, &n, NULL);
		snprintf(base, sizeof(base), "%s", real->hier[0].base);
		jd_cg_close(real);
		assert_false(access(base, F_OK) == 0);
		free(real);
		real = NULL;
	}
	return 0;
}

/* need: skip unless the real v1 groups exist and have controllers `bits`. */
static void need(unsigned bits)
{
	if (!real) {
		fprintf(stderr, "skipped: %s\n", real_skip);
		skip();
	}
	if ((real->controllers & bits) != bits) {
		fprintf(stderr, "skipped: a controller is missing here (%s)\n", real->reason);
		skip();
	}
}

/* wait_empty: poll (bounded: 5 s) until g holds no process.  Returns true if it emptied. */
static bool wait_empty(struct jd_cg_job *g)
{
	for (int i = 0; i < 5000; i++) {
		struct timespec ts = {0, 1000000};

		if (!jd_cg_populated(real, g))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* start_in: fork a child that enters g and runs fn(arg, fd) with the write end of a
 * pipe; returns the child's pid and the read end in *rfd. */
static pid_t start_in(struct jd_cg_job *g, void (*fn)(int), int *rfd)
{
	const char *dirs[JD_CG_MAX_HIER];
	int fds[JD_CG_MAX_HIER];
	size_t n, nfd;
	int p[2];
	pid_t pid;

	jd_cg_place(g, dirs, &n);
	jd_cg_enter_fds(g, fds, &nfd);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		/* As the daemon's directly started child: through the files a held group
		 * keeps open, else by path. */
		for (size_t i = 0; i < nfd; i++)
			if (write(fds[i], "0", 1) != 1)
				_exit(121);
		if (nfd != n && jd_cg_enter(dirs, n) < 0)
			_exit(120);
		fn(p[1]);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* escaper: setsid in a child, double fork, the grandchild reports its pid and waits
 * forever; both parents exit at once. */
static void escaper(int fd)
{
	pid_t a = fork();

	if (a == 0) {
		setsid();
		if (fork() == 0) {
			pid_t me = getpid();

			if (write(fd, &me, sizeof(me)) != sizeof(me))
				_exit(1);
			close(fd);
			for (;;)
				pause();
		}
		_exit(0);
	}
	waitpid(a, NULL, 0);
}

static void test_real_setsid_double_fork(void **state)
{
	struct jd_cg_job g;
	pid_t child, orphan = 0;
	int fd, st;

	(void)state;
	need(1u << JD_CG_FREEZER);
	assert_int_equal(jd_cg_job_create(real, "alice", 1, 0, NULL, 0, &g), 0);
	child = start_in(&g, escaper, &fd);
	assert_int_equal(read(fd, &orphan, sizeof(orphan)), sizeof(orphan));
	close(fd);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The command is gone, its grandchild runs on in a session of its own: killing the
	 * command's process group would miss it. */
	assert_int_equal(kill(orphan, 0), 0);
	assert_true(getsid(orphan) != child && getpgid(orphan) != child);
	assert_true(jd_cg_populated(real, &g));
	assert_int_equal(jd_cg_signal(real, &g, 0), 1); /* the orphan, listed in the group */
	assert_true(jd_cg_kill(real, &g) >= 1);
	assert_int_equal(waitpid(orphan, &st, 0), orphan); /* ours: we are the subreaper */
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_true(wait_empty(&g));
	assert_int_equal(jd_cg_job_remove(real, &g), 0);
}

/* hog: touch 256 MiB, page by page. */
static void hog(int fd)
{
	size_t len = 256u << 20;
	volatile char *m = malloc(len); /* volatile: the stores must happen */

	close(fd);
	for (size_t i = 0; m && i < len; i += 4096)
		m[i] = 1;
	_exit(m ? 0 : 3);
}

static void test_real_oom(void **state)
{
	struct jd_cg_limits l = {.memory_max = 32u << 20};
	struct jd_cg_usage u;
	struct jd_cg_job g;
	pid_t child;
	int fd, st;

	(void)state;
	need((1u << JD_CG_MEMORY) | (1u << JD_CG_CPUACCT));
	assert_int_equal(jd_cg_job_create(real, "alice", 2, 0, &l, 0, &g), 0);
	child = start_in(&g, hog, &fd);
	close(fd);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_true(wait_empty(&g));
	assert_int_equal(jd_cg_usage(real, &g, &u, true), 0);
	assert_true(u.has_oom);
	assert_true(u.oom_kills >= 1);
	assert_true(u.has_memory_peak);
	assert_true(u.memory_peak > (16u << 20) && u.memory_peak <= (32u << 20));
	assert_true(real->stats.oom_kills >= 1);
	assert_int_equal(jd_cg_job_remove(real, &g), 0);
}

/* threads_of_self: the Threads: line of /proc/self/status (a sanitizer adds its own). */
static int threads_of_self(void)
{
	const char *st = file_text("/proc/self/status"), *t = strstr(st, "Threads:");

	return t ? atoi(t + 8) : 1;
}

/* forker: fork 10 children that wait forever; report our thread count on the pipe, exit
 * with the count of refused forks. */
static void forker(int fd)
{
	int refused = 0, threads;

	for (int i = 0; i < 10; i++) {
		pid_t c = fork();

		if (c == 0) {
			close(fd);
			for (;;)
				pause();
		}
		if (c < 0)
			refused++;
	}
	threads = threads_of_self();
	if (write(fd, &threads, sizeof(threads)) != sizeof(threads))
		_exit(100);
	_exit(refused);
}

static void test_real_pids_limit(void **state)
{
	struct jd_cg_limits l = {.pids_max = 4};
	struct jd_cg_usage u;
	struct jd_cg_job g;
	pid_t child;
	int fd, st, threads = 0, refused;

	(void)state;
	need(1u << JD_CG_PIDS);
	assert_int_equal(jd_cg_job_create(real, "bob", 3, 0, &l, 0, &g), 0);
	child = start_in(&g, forker, &fd);
	assert_int_equal(read(fd, &threads, sizeof(threads)), sizeof(threads));
	close(fd);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	/* The forker and 3 children fit in 4: 7 of 10 forks were refused, and the group
	 * counted each refusal.  Under a sanitizer its runtime's threads take places too,
	 * some of the time: then at least 7 were refused, and the hits count its refused
	 * threads as well.  How many places they held while the forks ran is not what they
	 * number at the end (TSan's background thread comes and goes), so the thread count
	 * read afterwards bounds nothing more. */
	refused = WEXITSTATUS(st);
	if (threads == 1)
		assert_int_equal(refused, 7);
	else
		assert_true(refused >= 7 && refused <= 10);
	assert_int_equal(jd_cg_usage(real, &g, &u, true), 0);
	assert_true(u.has_pids);
	if (threads == 1)
		assert_int_equal(u.pids_max_hits, 7);
	else
		assert_true(u.pids_max_hits >= (uint64_t)refused);
	assert_true(jd_cg_kill(real, &g) >= 10 - refused);
	for (int i = 0; i < 10 - refused; i++) {
		pid_t w = wait(&st);

		assert_true(w > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	assert_true(wait_empty(&g));
	assert_int_equal(jd_cg_job_remove(real, &g), 0);
}

/* quick: end at once. */
static void quick(int fd)
{
	close(fd);
}

/* burn: 50 ms of CPU time from here, inside the group: counted from the child's own
 * start it would include what it used before it entered the group (under TSan a forked
 * child's runtime takes milliseconds there), which the group does not hold. */
static void burn(int fd)
{
	struct timespec t0, ts;
	long long used;

	close(fd);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		used = (long long)(ts.tv_sec - t0.tv_sec) * 1000000000LL + (ts.tv_nsec - t0.tv_nsec);
	} while (used < 50000000LL);
}

/* run_to_end: fn in g until it has exited and g is empty; what g used into *u. */
static void run_to_end(struct jd_cg_job *g, void (*fn)(int), struct jd_cg_usage *u)
{
	int fd, st;
	pid_t child = start_in(g, fn, &fd);

	close(fd);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(wait_empty(g));
	assert_int_equal(jd_cg_usage(real, g, u, false), 0);
}

static void test_real_cpu_and_weight(void **state)
{
	struct jd_cg_limits cl = {.cpu_max_milli = 1500};
	struct jd_cg_usage u;
	struct jd_cg_job g;
	char dir[PATH_MAX];

	(void)state;
	need((1u << JD_CG_CPU) | (1u << JD_CG_CPUACCT));
	assert_int_equal(jd_cg_client(real, "carol", 3, &cl), 0);
	for (size_t h = 0; h < real->nhier; h++)
		if (real->hier[h].ctls & (1u << JD_CG_CPU))
			snprintf(dir, sizeof(dir), "%s/client-carol", real->hier[h].base);
	assert_string_equal(file_text("%s/cpu.shares", dir), "3072\n");
	assert_string_equal(file_text("%s/cpu.cfs_quota_us", dir), "150000\n");
	/* Busy (EBUSY) when it has a job group; removing the job is what empties it. */
	assert_int_equal(jd_cg_job_create(real, "carol", 4, 0, NULL, 0, &g), 0);
	run_to_end(&g, burn, &u);
	assert_true(u.has_cpu);
	/* The group's total is exact and holds the command's CPU time from the moment it
	 * entered the group, which burn's 50 ms are part of (49 ms: the margin of the
	 * clocks' granularity); its user/system split is sampled at ticks. */
	assert_true(u.cpu_us >= 49000);
	assert_int_equal(jd_cg_job_remove(real, &g), 0);
}

static void sleeper(int fd);

/* burn_big: burn, with 64 MiB touched first. */
static void burn_big(int fd)
{
	size_t n = 64u << 20;
	volatile char *m = malloc(n);

	if (!m)
		_exit(1);
	for (size_t i = 0; i < n; i += 4096)
		m[i] = 1;
	burn(fd);
}

/* A real group reused: the second command's CPU time and peak memory are its own, not
 * the first's too.  The group holds its files open (cgroup.h, JD_CG_HELD_MAX: the
 * only one here), so its command enters it, and its end reads it and resets the peak,
 * through them. */
static void test_real_reuse(void **state)
{
	struct jd_cg_usage u, now;
	struct jd_cg_job g;

	(void)state;
	need((1u << JD_CG_CPUACCT) | (1u << JD_CG_MEMORY));
	assert_int_equal(jd_cg_job_create(real, "dave", 5, 0, NULL, 0, &g), 0);
	assert_true(g.held);
	assert_true(g.fd[JD_CG_FD_PEAK] >= 0 && g.fd[JD_CG_FD_USAGE] >= 0);
	run_to_end(&g, burn_big, &now);
	assert_true(now.cpu_us >= 49000);
	assert_true(now.has_memory_peak && now.memory_peak >= (64u << 20));
	assert_int_equal(jd_cg_job_park(real, &g, &now), 0);
	assert_int_equal(jd_cg_job_reuse(real, &g, 6, 0), 0);
	assert_non_null(strstr(g.dir[0], "/job-6"));
	run_to_end(&g, quick, &u);
	assert_true(u.has_cpu);
	assert_true(u.cpu_us < 40000); /* without the base it would be >= 49 ms */
	assert_true(u.has_memory_peak);
	assert_true(u.memory_peak < (32u << 20)); /* without the reset: >= 64 MiB */
	{
		/* Its emptiness is read afresh: seen populated, then, the process reaped, at
		 * once empty (a held cgroup.procs would list the reaped pid still: cgroup.h). */
		int fd, st;
		pid_t child = start_in(&g, sleeper, &fd), me = 0;

		assert_int_equal(read(fd, &me, sizeof(me)), sizeof(me));
		close(fd);
		assert_true(jd_cg_populated(real, &g));
		assert_int_equal(kill(child, SIGKILL), 0);
		assert_int_equal(waitpid(child, &st, 0), child);
		assert_false(jd_cg_populated(real, &g));
	}
	assert_int_equal(jd_cg_job_remove(real, &g), 0);
	assert_false(g.held);
}

/* sleeper: report our pid and wait forever (in the group, in its own session). */
static void sleeper(int fd)
{
	pid_t me;

	setsid();
	me = getpid();
	if (write(fd, &me, sizeof(me)) != sizeof(me))
		_exit(1);
	close(fd);
	for (;;)
		pause();
}

static void test_real_recover(void **state)
{
	struct jd_cg_conf conf = {0};
	struct jd_cg_job g;
	struct jd_cg *again;
	uint64_t ids[4];
	size_t n, total;
	char name[64];
	pid_t child, me = 0;
	int fd, st;

	(void)state;
	need(1u << JD_CG_FREEZER);
	assert_int_equal(jd_cg_job_create(real, "dave", 77, 0, NULL, 0, &g), 0);
	child = start_in(&g, sleeper, &fd);
	assert_int_equal(read(fd, &me, sizeof(me)), sizeof(me));
	close(fd);
	assert_int_equal(me, child);
	/* The daemon "crashes" (forgets g) and a new one opens the same subtree. */
	again = calloc(1, sizeof(*again));
	snprintf(name, sizeof(name), "jschedd-unit-%d", (int)getpid());
	conf.name = name;
	conf.mode = "v1";
	assert_int_equal(jd_cg_open(again, &conf), 0);
	assert_int_equal(jd_cg_recover(again, ids, NULL, 4, &n, &total), 0);
	/* (A group an earlier failed test left would be listed too.) */
	assert_true(n >= 1);
	while (n > 1 && ids[n - 1] != 77)
		n--;
	assert_int_equal(ids[n - 1], 77);
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_false(jd_cg_populated(again, &g));
	free(again);
}

int main(void)
{
	const struct CMUnitTest tree[] = {
		cmocka_unit_test_setup_teardown(test_v2_delegated, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v2_created_by_root, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v2_not_delegated_not_root, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_modes_and_names, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v1_tree, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v1_tree_recover, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v1_tree_reuse, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_v1_tree_unnamed, tree_setup, tree_teardown),
	};
	const struct CMUnitTest live[] = {
		cmocka_unit_test(test_real_setsid_double_fork),
		cmocka_unit_test(test_real_oom),
		cmocka_unit_test(test_real_pids_limit),
		cmocka_unit_test(test_real_cpu_and_weight),
		cmocka_unit_test(test_real_reuse),
		cmocka_unit_test(test_real_recover),
	};
	int rc = cmocka_run_group_tests_name("cgroup files on a built tree", tree, NULL, NULL);

	return rc | cmocka_run_group_tests_name("real cgroup v1 groups", live, real_setup, real_teardown);
}
