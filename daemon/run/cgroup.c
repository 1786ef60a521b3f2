/* daemon/run/cgroup.c: jschedd's control groups (see cgroup.h for the shape and the
 * choices).  Plain files and directories only: every operation is an open/read/write/
 * close, a mkdir or an rmdir on the cgroup file system, and kill(2) for freeze-and-kill.
 */
#include "daemon/run/cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "jsched/error.h"

#define CGROUP_SUPER_MAGIC_V1 0x27e0eb
#define CGROUP_SUPER_MAGIC_V2 0x63677270
#define CFS_PERIOD_US 100000u
#define KILL_ROUNDS 100			/* kill rounds without a freezer */
#define FREEZE_WAIT_MS 200		/* longest wait for FROZEN */
#define RECOVER_WAIT_MS 2000		/* longest wait for killed leftovers to leave */

static const char *const ctl_names[JD_CG_NCTL] = {"cpu", "cpuacct", "memory", "pids", "freezer"};

/* ---- small file helpers ---------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void note_error(struct jd_cg *cg, int err,
							      const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(cg->error, sizeof(cg->error), fmt, ap);
	va_end(ap);
	n = strlen(cg->error);
	if (err && n < sizeof(cg->error))
		snprintf(cg->error + n, sizeof(cg->error) - n, ": %s", strerror(err));
	cg->stats.errors++;
}

/* join: dir/name into out (PATH_MAX).  Returns 0 or -ENAMETOOLONG. */
static int join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* put: write val to dir/file.  On a plain tree the file is created (the kernel makes
 * control files at mkdir).  Returns 0 or a negative errno. */
static int put(const struct jd_cg *cg, const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	size_t len = strlen(val);
	ssize_t w;
	int fd, rc = 0;

	if (join(path, dir, file) < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | (cg->plain ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		return -errno;
	w = write(fd, val, len);
	if (w < 0)
		rc = -errno;
	else if ((size_t)w != len)
		rc = -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* put_noted: put, with a failure recorded in cg->error.  Returns put's. */
static int put_noted(struct jd_cg *cg, const char *dir, const char *file, const char *val)
{
	int rc = put(cg, dir, file, val);

	if (rc < 0)
		note_error(cg, -rc, "cannot write '%s' to %s/%s", val, dir, file);
	return rc;
}

static ssize_t read_whole(int fd, char *buf, size_t len);

/* get: the text of dir/file (or of path when file is NULL) into buf, NUL-terminated.
 * Returns its length or a negative errno. */
static ssize_t get(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	int fd;

	if (file ? join(path, dir, file) < 0 : snprintf(path, sizeof(path), "%s", dir) >= PATH_MAX)
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	return read_whole(fd, buf, len);
}

/* get_in: as get, file opened relative to directory descriptor dfd. */
static ssize_t get_in(int dfd, const char *file, char *buf, size_t len)
{
	int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : read_whole(fd, buf, len);
}

/* read_whole: fd read to its end into buf (NUL-terminated), then closed.  Returns the
 * length or a negative errno. */
static ssize_t read_whole(int fd, char *buf, size_t len)
{
	size_t have = 0;

	while (have + 1 < len) {
		ssize_t r = read(fd, buf + have, len - 1 - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		have += (size_t)r;
	}
	close(fd);
	buf[have] = '\0';
	return (ssize_t)have;
}

/* fetch: as get, from fd when it is open (a held group's file, jd_cg_job.fd): a control
 * file other than cgroup.procs and tasks is one seq_file record, which one read at offset 0
 * gives whole (the kernel starts a read at 0 afresh), so one pread is the whole file. */
static ssize_t fetch(int fd, const char *dir, const char *file, char *buf, size_t len)
{
	ssize_t r;

	if (fd < 0)
		return get(dir, file, buf, len);
	while ((r = pread(fd, buf, len - 1, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return errno == ENODEV ? -ENOENT : -errno; /* ENODEV: the group was removed */
	buf[r] = '\0';
	return r;
}

/* key_u64: the number after "key " at the start of a line of text ("oom_kill 3").
 * Returns true when found. */
static bool key_u64(const char *text, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
			*v = strtoull(l + kl + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

/* get_u64: dir/file (or fd, when open: fetch) as one number ("max" and unreadable:
 * false); counted in cg's files_read. */
static bool get_u64(struct jd_cg *cg, int fd, const char *dir, const char *file, uint64_t *v)
{
	char buf[64];
	char *end;

	cg->stats.files_read++;
	if (fetch(fd, dir, file, buf, sizeof(buf)) <= 0 || !isdigit((unsigned char)buf[0]))
		return false;
	*v = strtoull(buf, &end, 10);
	return true;
}

/* get_key: the value of `key` in the key/value file dir/file (or fd: fetch); counted as
 * get_u64. */
static bool get_key(struct jd_cg *cg, int fd, const char *dir, const char *file, const char *key,
		    uint64_t *v)
{
	char buf[4096];

	cg->stats.files_read++;
	return fetch(fd, dir, file, buf, sizeof(buf)) > 0 && key_u64(buf, key, v);
}

/* make_dir: mkdir, an existing one being fine.  Returns 0 or a negative errno. */
static int make_dir(const char *dir)
{
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* drop_dir: rmdir dir (on a plain tree, its files first).  Returns 0 (also when it is
 * already gone), -EAGAIN while processes are in it, or a negative errno. */
static int drop_dir(const struct jd_cg *cg, const char *dir)
{
	if (cg->plain) {
		DIR *dh = opendir(dir);
		struct dirent *e;

		while (dh && (e = readdir(dh))) {
			char path[PATH_MAX];

			if (e->d_type == DT_REG && join(path, dir, e->d_name) == 0)
				unlink(path);
		}
		if (dh)
			closedir(dh);
	}
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0;
	return errno == EBUSY || errno == ENOTEMPTY ? -EAGAIN : -errno;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- detection ------------------------------------------------------------------------- */

/* One cgroup mount from mountinfo. */
struct mnt {
	char point[PATH_MAX];
	char root[PATH_MAX];
	unsigned ctls;		/* v1: our controllers on it */
	bool v2;
};

/* unescape: mountinfo's \ooo octal escapes (spaces in paths), in place. */
static void unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* ctl_bits: our controllers named in a comma-separated option list. */
static unsigned ctl_bits(const char *opts)
{
	unsigned bits = 0;

	while (*opts) {
		size_t n = strcspn(opts, ",");

		for (int c = 0; c < JD_CG_NCTL; c++)
			if (strlen(ctl_names[c]) == n && strncmp(opts, ctl_names[c], n) == 0)
				bits |= 1u << c;
		opts += n + (opts[n] == ',');
	}
	return bits;
}

/* read_mounts: the cgroup mounts in mountinfo `path`, into m[0..max).  Returns how many
 * or a negative errno. */
static int read_mounts(const char *path, struct mnt *m, int max)
{
	FILE *f = fopen(path, "re");
	char line[8192];
	int n = 0;

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *field[12], *save = NULL, *dash = strstr(line, " - ");
		char *fstype, *super;
		int nf = 0;

		if (!dash)
			continue;
		*dash = '\0';
		for (char *t = strtok_r(line, " ", &save); t && nf < 12; t = strtok_r(NULL, " ", &save))
			field[nf++] = t;
		fstype = strtok_r(dash + 3, " ", &save);
		(void)strtok_r(NULL, " ", &save); /* source */
		super = strtok_r(NULL, " \n", &save);
		if (nf < 5 || !fstype)
			continue;
		if (strcmp(fstype, "cgroup2") == 0) {
			m[n].v2 = true;
			m[n].ctls = 0;
		} else if (strcmp(fstype, "cgroup") == 0 && super && ctl_bits(super)) {
			m[n].v2 = false;
			m[n].ctls = ctl_bits(super);
		} else {
			continue;
		}
		snprintf(m[n].root, sizeof(m[n].root), "%s", field[3]);
		snprintf(m[n].point, sizeof(m[n].point), "%s", field[4]);
		unescape(m[n].root);
		unescape(m[n].point);
		n++;
	}
	fclose(f);
	return n;
}

/* own_path: jschedd's group in the hierarchy of controller `ctl` (-1: the v2 one) from
 * /proc/self/cgroup text, into out.  Returns true when listed. */
static bool own_path(const char *text, int ctl, char *out, size_t len)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *nl = strchr(l, '\n');
		size_t plen;

		if (!c2)
			continue;
		if (ctl < 0 ? !(c1 - l == 1 && l[0] == '0' && c2 == c1 + 1) : !(c2 > c1 + 1)) {
			continue;
		}
		if (ctl >= 0) {
			char ctls[256];
			size_t cl = (size_t)(c2 - c1 - 1);

			if (cl >= sizeof(ctls))
				continue;
			memcpy(ctls, c1 + 1, cl);
			ctls[cl] = '\0';
			if (!(ctl_bits(ctls) & (1u << ctl)))
				continue;
		}
		plen = nl ? (size_t)(nl - c2 - 1) : strlen(c2 + 1);
		if (plen >= len)
			return false;
		memcpy(out, c2 + 1, plen);
		out[plen] = '\0';
		return true;
	}
	return false;
}

/* group_dir: the directory of group `path` (as /proc/self/cgroup says it) under mount m,
 * into out (PATH_MAX).  Returns 0 or -ENAMETOOLONG. */
static int group_dir(const struct mnt *m, const char *path, char *out)
{
	size_t rl = strlen(m->root);
	int n;

	/* The mount shows the hierarchy from m->root down (a container's view). */
	if (strcmp(m->root, "/") != 0 && strncmp(path, m->root, rl) == 0 &&
	    (path[rl] == '/' || path[rl] == '\0'))
		path += rl;
	while (*path == '/')
		path++;
	n = *path ? snprintf(out, PATH_MAX, "%s/%s", m->point, path)
		  : snprintf(out, PATH_MAX, "%s", m->point);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* v2_ctls: our controllers listed in dir's cgroup.controllers (cpu, memory, pids). */
static unsigned v2_ctls(const char *dir)
{
	char buf[1024];
	unsigned bits = 0;

	if (get(dir, "cgroup.controllers", buf, sizeof(buf)) < 0)
		return 0;
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		bits |= ctl_bits(t);
	return bits & ((1u << JD_CG_CPU) | (1u << JD_CG_MEMORY) | (1u << JD_CG_PIDS));
}

/* v2_enable: "+cpu +memory +pids" (those in bits) into dir's cgroup.subtree_control. */
static int v2_enable(struct jd_cg *cg, const char *dir, unsigned bits)
{
	char val[64] = "";

	for (int c = 0; c < JD_CG_NCTL; c++)
		if (bits & (1u << c))
			snprintf(val + strlen(val), sizeof(val) - strlen(val), "%s+%s",
				 val[0] ? " " : "", ctl_names[c]);
	return val[0] ? put_noted(cg, dir, "cgroup.subtree_control", val) : 0;
}

static void ctl_list(unsigned bits, char *out, size_t len)
{
	out[0] = '\0';
	for (int c = 0; c < JD_CG_NCTL; c++)
		if (bits & (1u << c))
			snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? "," : "",
				 ctl_names[c]);
	if (!out[0])
		snprintf(out, len, "none");
}

static bool is_plain(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && sf.f_type != CGROUP_SUPER_MAGIC_V1 &&
	       sf.f_type != CGROUP_SUPER_MAGIC_V2;
}

/* delegated_to_us: whether group directory `own` is ours to manage.  systemd (251 and
 * later) marks a group it delegates with the xattr trusted.delegate (a user manager:
 * user.delegate).  Root may write any group, so for root the mark is what counts; for
 * anyone else, that the group's files are writable (what delegation to a user does). */
static bool delegated_to_us(const char *own, bool root)
{
	char path[PATH_MAX], v[8];

	if (root)
		return getxattr(own, "trusted.delegate", v, sizeof(v)) >= 0 ||
		       getxattr(own, "user.delegate", v, sizeof(v)) >= 0;
	return access(own, W_OK) == 0 && join(path, own, "cgroup.subtree_control") == 0 &&
	       access(path, W_OK) == 0 && join(path, own, "cgroup.procs") == 0 &&
	       access(path, W_OK) == 0;
}

/* try_v2: use cgroup v2 if it has controllers and a place for us.  Returns 1 when taken,
 * 0 when not (why appended to cg->reason), a negative JSCHED_E* code on a hard failure. */
static int try_v2(struct jd_cg *cg, const struct mnt *m, const char *self, const char *name,
		  pid_t pid, bool root)
{
	char own[PATH_MAX], path[256], leaf[PATH_MAX], pidtxt[24], lst[64];
	size_t rl = strlen(cg->reason);
	unsigned bits;
	bool delegated;

	cg->plain = is_plain(m->point);
	if (!own_path(self, -1, path, sizeof(path)) || group_dir(m, path, own) < 0) {
		snprintf(cg->reason + rl, sizeof(cg->reason) - rl,
			 "cgroup2 at %s: jschedd's group is not listed; ", m->point);
		return 0;
	}
	bits = v2_ctls(own);
	delegated = strcmp(path, "/") != 0 && delegated_to_us(own, root);
	if (delegated && bits) {
		/* Delegated: we own `own`; processes may only live in leaves, so we move
		 * into <own>/daemon before enabling controllers for children. */
		if (join(leaf, own, "daemon") < 0 || make_dir(leaf) < 0) {
			note_error(cg, errno, "cannot create %s/daemon", own);
			return JSCHED_EIO;
		}
		snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
		if (put_noted(cg, leaf, "cgroup.procs", pidtxt) < 0 || v2_enable(cg, own, bits) < 0)
			return JSCHED_EIO;
		snprintf(cg->hier[0].base, sizeof(cg->hier[0].base), "%s", own);
		cg->how = "v2 delegated";
	} else if (root) {
		unsigned top = v2_ctls(m->point);

		if (!top) {
			snprintf(cg->reason + rl, sizeof(cg->reason) - rl,
				 "cgroup2 at %s offers none of cpu, memory, pids; ", m->point);
			return 0;
		}
		bits = top;
		if (join(cg->hier[0].base, m->point, name) < 0 || v2_enable(cg, m->point, bits) < 0)
			return JSCHED_EIO;
		if (make_dir(cg->hier[0].base) < 0) {
			note_error(cg, errno, "cannot create %s", cg->hier[0].base);
			return JSCHED_EIO;
		}
		cg->how = "v2 created";
	} else {
		snprintf(cg->reason + rl, sizeof(cg->reason) - rl,
			 bits ? "cgroup2 group %s is not delegated to us and we are not root; "
			      : "cgroup2 group %s offers none of cpu, memory, pids; ",
			 own);
		return 0;
	}
	if (v2_enable(cg, cg->hier[0].base, bits) < 0)
		return JSCHED_EIO;
	cg->hier[0].ctls = bits;
	cg->nhier = 1;
	cg->base_made = true;
	cg->controllers = bits;
	cg->has_kill = join(leaf, cg->hier[0].base, "cgroup.kill") == 0 && access(leaf, F_OK) == 0;
	cg->mode = JD_CG_V2;
	ctl_list(bits, lst, sizeof(lst));
	snprintf(cg->reason, sizeof(cg->reason), "cgroup v2 (%s) at %s: controllers %s, kill by %s",
		 cg->how, cg->hier[0].base, lst, cg->has_kill ? "cgroup.kill" : "freeze");
	return 1;
}

/* try_v1: use the v1 hierarchies of our controllers where we can create the subtree.
 * Returns 1 when at least one is usable, else 0 (why appended to cg->reason). */
static int try_v1(struct jd_cg *cg, const struct mnt *m, int nm, const char *self,
		  const char *name)
{
	unsigned missing = (1u << JD_CG_NCTL) - 1;
	char lst[64], miss[64];
	size_t rl;

	cg->nhier = 0;
	for (int i = 0; i < nm && cg->nhier < JD_CG_MAX_HIER; i++) {
		char path[PATH_MAX], own[PATH_MAX];
		int first = -1;
		size_t h = cg->nhier;

		if (m[i].v2 || !(m[i].ctls & missing))
			continue;
		for (int c = 0; c < JD_CG_NCTL && first < 0; c++)
			if (m[i].ctls & (1u << c))
				first = c;
		if (!own_path(self, first, path, sizeof(path)) || group_dir(&m[i], path, own) < 0 ||
		    join(cg->hier[h].base, own, name) < 0)
			continue;
		if (make_dir(cg->hier[h].base) < 0) {
			rl = strlen(cg->reason);
			snprintf(cg->reason + rl, sizeof(cg->reason) - rl, "cannot create %s: %s; ",
				 cg->hier[h].base, strerror(errno));
			continue;
		}
		if (h == 0)
			cg->plain = is_plain(cg->hier[h].base);
		cg->hier[h].ctls = m[i].ctls & missing;
		missing &= ~m[i].ctls;
		cg->controllers |= cg->hier[h].ctls;
		if (cg->hier[h].ctls & (1u << JD_CG_MEMORY))
			(void)put(cg, cg->hier[h].base, "memory.use_hierarchy", "1");
		cg->nhier++;
	}
	if (!cg->nhier) {
		rl = strlen(cg->reason);
		snprintf(cg->reason + rl, sizeof(cg->reason) - rl,
			 "no cgroup v1 hierarchy of cpu, cpuacct, memory, pids or freezer is usable");
		return 0;
	}
	cg->mode = JD_CG_V1;
	cg->how = "v1";
	cg->base_made = true;
	ctl_list(cg->controllers, lst, sizeof(lst));
	ctl_list(missing, miss, sizeof(miss));
	snprintf(cg->reason, sizeof(cg->reason),
		 "cgroup v1 under %s (and %zu more hierarchies): controllers %s, missing %s, kill by %s",
		 cg->hier[0].base, cg->nhier - 1, lst, miss,
		 cg->controllers & (1u << JD_CG_FREEZER) ? "freezer" : "kill rounds");
	return 1;
}

static bool valid_name(const char *s)
{
	if (!s[0] || strlen(s) > 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
			return false;
	return true;
}

int jd_cg_open(struct jd_cg *cg, const struct jd_cg_conf *conf)
{
	static const struct jd_cg_conf none = {0};
	const char *name, *mode;
	struct mnt *m;
	char self[4096];
	ssize_t got;
	bool root;
	int nm, rc = 0;

	if (!conf)
		conf = &none;
	memset(cg, 0, sizeof(*cg));
	cg->mode = JD_CG_NONE;
	cg->how = "none";
	name = conf->name ? conf->name : "jschedd";
	mode = conf->mode ? conf->mode : "auto";
	root = conf->is_root_set ? conf->is_root : geteuid() == 0;
	if (!valid_name(name)) {
		snprintf(cg->reason, sizeof(cg->reason),
			 "cgroup name '%s': 1 to 64 of A-Z a-z 0-9 . _ -", name);
		return JSCHED_EINVAL;
	}
	if (strcmp(mode, "off") == 0) {
		snprintf(cg->reason, sizeof(cg->reason), "cgroups turned off by the configuration");
		return 0;
	}
	if (strcmp(mode, "auto") != 0 && strcmp(mode, "v1") != 0 && strcmp(mode, "v2") != 0) {
		snprintf(cg->reason, sizeof(cg->reason), "cgroup mode '%s': auto, v2, v1 or off", mode);
		return JSCHED_EINVAL;
	}
	if ((got = get(conf->self_cgroup ? conf->self_cgroup : "/proc/self/cgroup", NULL, self,
		       sizeof(self))) < 0) {
		snprintf(cg->reason, sizeof(cg->reason), "cannot read /proc/self/cgroup: %s",
			 strerror((int)-got));
		return strcmp(mode, "auto") == 0 ? 0 : JSCHED_EIO;
	}
	if (!(m = calloc(16, sizeof(*m))))
		return JSCHED_ENOMEM;
	nm = read_mounts(conf->mountinfo ? conf->mountinfo : "/proc/self/mountinfo", m, 16);
	if (nm < 0) {
		snprintf(cg->reason, sizeof(cg->reason), "cannot read mountinfo: %s", strerror(-nm));
		nm = 0;
	}
	if (strcmp(mode, "v1") != 0)
		for (int i = 0; i < nm && rc == 0; i++)
			if (m[i].v2)
				rc = try_v2(cg, &m[i], self, name, conf->self_pid ? conf->self_pid : getpid(),
					    root);
	if (rc == 0 && strcmp(mode, "v2") != 0 && nm > 0)
		rc = try_v1(cg, m, nm, self, name);
	free(m);
	if (rc < 0) {
		snprintf(cg->reason, sizeof(cg->reason), "%s", cg->error);
		cg->mode = JD_CG_NONE;
		cg->how = "none";
		cg->nhier = 0;
		cg->controllers = 0;
		return strcmp(mode, "auto") == 0 ? 0 : rc;
	}
	if (rc == 0) {
		size_t rl = strlen(cg->reason);

		if (!rl)
			snprintf(cg->reason, sizeof(cg->reason), "no cgroup file system is mounted");
		else if (rl >= 2 && cg->reason[rl - 2] == ';')
			cg->reason[rl - 2] = '\0';
		cg->nhier = 0;
		cg->controllers = 0;
		return strcmp(mode, "auto") == 0 ? 0 : JSCHED_EIO;
	}
	return 0;
}

const char *jd_cg_mode_name(enum jd_cg_mode mode)
{
	return mode == JD_CG_V2 ? "v2" : mode == JD_CG_V1 ? "v1" : "none";
}

int jd_cg_can_limit(const struct jd_cg *cg, const struct jd_cg_limits *l, char *why, size_t len)
{
	static const struct {
		int ctl;
		const char *what;
	} need[] = {{JD_CG_MEMORY, "memory"}, {JD_CG_PIDS, "pids"}, {JD_CG_CPU, "cpus"}};
	bool asks[3] = {l->memory_max != 0, l->pids_max != 0, l->cpu_max_milli != 0};

	for (size_t i = 0; i < 3; i++) {
		if (!asks[i] || (cg->controllers & (1u << need[i].ctl)))
			continue;
		if (cg->mode == JD_CG_NONE)
			snprintf(why, len, "a %s limit needs cgroups, and none are usable here (%s)",
				 need[i].what, cg->reason);
		else
			snprintf(why, len, "a %s limit needs the %s controller, which is not usable here (%s)",
				 need[i].what, ctl_names[need[i].ctl], cg->reason);
		return JSCHED_ENOT_SUPPORTED;
	}
	return 0;
}

/* ---- groups ---------------------------------------------------------------------------- */

/* client_rel: "client-NAME" with bytes outside [A-Za-z0-9._-] as %XX (config names may
 * hold any bytes). */
static void client_rel(const char *name, char *out, size_t len)
{
	size_t o = (size_t)snprintf(out, len, "client-");

	for (const unsigned char *s = (const unsigned char *)name; *s && o + 4 < len; s++) {
		if (isalnum(*s) || *s == '.' || *s == '_' || *s == '-')
			out[o++] = (char)*s;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", *s);
	}
	out[o] = '\0';
}

/* group_path: base/client-NAME[/job-ID] of hierarchy h into out. */
static int group_path(const struct jd_cg *cg, size_t h, const char *client, const uint64_t *id,
		      uint64_t seq, char *out)
{
	char rel[256];
	int n;

	client_rel(client, rel, sizeof(rel));
	if (!id)
		n = snprintf(out, PATH_MAX, "%s/%s", cg->hier[h].base, rel);
	else if (!seq)
		n = snprintf(out, PATH_MAX, "%s/%s/job-%llu", cg->hier[h].base, rel,
			     (unsigned long long)*id);
	else
		n = snprintf(out, PATH_MAX, "%s/%s/job-%llu-%llu", cg->hier[h].base, rel,
			     (unsigned long long)*id, (unsigned long long)seq);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* set_limits: write weight (0: leave it) and l into group directory dir of hierarchy h.
 * reset: write "no limit" for members that are 0 (a client's update), else leave them
 * (a new job's group starts unlimited).  Returns 0 or a negative errno. */
static int set_limits(struct jd_cg *cg, size_t h, const char *dir, uint32_t weight,
		      const struct jd_cg_limits *l, bool reset)
{
	unsigned ctls = cg->hier[h].ctls;
	char v[32];
	int rc;

	if (ctls & (1u << JD_CG_CPU)) {
		if (weight) {
			if (cg->mode == JD_CG_V2)
				snprintf(v, sizeof(v), "%llu",
					 (unsigned long long)clamp(100ull * weight, 1, 10000));
			else
				snprintf(v, sizeof(v), "%llu",
					 (unsigned long long)clamp(1024ull * weight, 2, 262144));
			if ((rc = put_noted(cg, dir, cg->mode == JD_CG_V2 ? "cpu.weight" : "cpu.shares",
					    v)) < 0)
				return rc;
		}
		if (l->cpu_max_milli || reset) {
			uint64_t quota = (uint64_t)l->cpu_max_milli * CFS_PERIOD_US / 1000;

			if (cg->mode == JD_CG_V2) {
				if (l->cpu_max_milli)
					snprintf(v, sizeof(v), "%llu %u", (unsigned long long)quota,
						 CFS_PERIOD_US);
				else
					snprintf(v, sizeof(v), "max %u", CFS_PERIOD_US);
				rc = put_noted(cg, dir, "cpu.max", v);
			} else {
				snprintf(v, sizeof(v), "%u", CFS_PERIOD_US);
				rc = put_noted(cg, dir, "cpu.cfs_period_us", v);
				if (!rc) {
					if (l->cpu_max_milli)
						snprintf(v, sizeof(v), "%llu", (unsigned long long)quota);
					else
						snprintf(v, sizeof(v), "-1");
					/* v1 refuses a job's quota above its client's (EINVAL):
					 * the client's, lower, is then the one in force. */
					rc = put(cg, dir, "cpu.cfs_quota_us", v);
					if (rc == -EINVAL && !reset)
						rc = 0;
					else if (rc < 0)
						note_error(cg, -rc, "cannot write '%s' to %s/cpu.cfs_quota_us",
							   v, dir);
				}
			}
			if (rc < 0)
				return rc;
		}
	}
	if ((ctls & (1u << JD_CG_MEMORY)) && (l->memory_max || reset)) {
		if (cg->mode == JD_CG_V2) {
			if (l->memory_max)
				snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_max);
			else
				snprintf(v, sizeof(v), "max");
			if ((rc = put_noted(cg, dir, "memory.max", v)) < 0)
				return rc;
			/* No swap under a limit (absent without swap accounting). */
			(void)put(cg, dir, "memory.swap.max", l->memory_max ? "0" : "max");
		} else {
			if (l->memory_max)
				snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_max);
			else
				snprintf(v, sizeof(v), "-1");
			/* memsw (memory + swap) must stay >= memory: when raising, memsw
			 * first; when lowering, memory first. */
			rc = put(cg, dir, "memory.limit_in_bytes", v);
			if (rc == -EINVAL) {
				(void)put(cg, dir, "memory.memsw.limit_in_bytes", v);
				rc = put(cg, dir, "memory.limit_in_bytes", v);
			} else if (rc == 0) {
				(void)put(cg, dir, "memory.memsw.limit_in_bytes", v);
			}
			if (rc < 0) {
				note_error(cg, -rc, "cannot write '%s' to %s/memory.limit_in_bytes", v, dir);
				return rc;
			}
		}
	}
	if ((ctls & (1u << JD_CG_PIDS)) && (l->pids_max || reset)) {
		if (l->pids_max)
			snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids_max);
		else
			snprintf(v, sizeof(v), "max");
		if ((rc = put_noted(cg, dir, "pids.max", v)) < 0)
			return rc;
	}
	return 0;
}

static bool delegated_base(const struct jd_cg *cg)
{
	return cg->mode == JD_CG_V2 && strcmp(cg->how, "v2 delegated") == 0;
}

/* make_base: the subtree's directories again, after jd_cg_recover removed them. */
static int make_base(struct jd_cg *cg)
{
	for (size_t h = 0; h < cg->nhier; h++) {
		if (make_dir(cg->hier[h].base) < 0) {
			note_error(cg, errno, "cannot create %s", cg->hier[h].base);
			return JSCHED_EIO;
		}
		if (cg->mode == JD_CG_V2 && v2_enable(cg, cg->hier[h].base, cg->hier[h].ctls) < 0)
			return JSCHED_EIO;
		if (cg->mode == JD_CG_V1 && (cg->hier[h].ctls & (1u << JD_CG_MEMORY)))
			(void)put(cg, cg->hier[h].base, "memory.use_hierarchy", "1");
	}
	cg->base_made = true;
	return 0;
}

/* make_client: create client's group in every hierarchy (v2: with the controllers enabled
 * for its jobs).  created: set when it did not exist. */
static int make_client(struct jd_cg *cg, const char *client, bool *created)
{
	*created = false;
	if (!cg->base_made && make_base(cg) < 0)
		return JSCHED_EIO;
	for (size_t h = 0; h < cg->nhier; h++) {
		char dir[PATH_MAX];

		if (group_path(cg, h, client, NULL, 0, dir) < 0) {
			note_error(cg, ENAMETOOLONG, "client group of '%s'", client);
			return JSCHED_EINVAL;
		}
		if (mkdir(dir, 0755) == 0) {
			*created = true;
		} else if (errno != EEXIST) {
			note_error(cg, errno, "cannot create %s", dir);
			return JSCHED_EIO;
		}
		if (cg->mode == JD_CG_V2 && *created && v2_enable(cg, dir, cg->hier[h].ctls) < 0)
			return JSCHED_EIO;
	}
	return 0;
}

int jd_cg_client(struct jd_cg *cg, const char *name, uint32_t weight, const struct jd_cg_limits *l)
{
	static const struct jd_cg_limits unlimited = {0};
	bool created;
	int rc;

	if (cg->mode == JD_CG_NONE)
		return JSCHED_ENOT_SUPPORTED;
	if ((rc = make_client(cg, name, &created)) < 0)
		return rc;
	for (size_t h = 0; h < cg->nhier; h++) {
		char dir[PATH_MAX];

		group_path(cg, h, name, NULL, 0, dir);
		if (set_limits(cg, h, dir, weight ? weight : 1, l ? l : &unlimited, true) < 0)
			return JSCHED_EIO;
	}
	cg->stats.client_updates++;
	return 0;
}

/* job_name: "job-ID[-SEQ]" into out (48 bytes). */
/* held_fd: g's open file f, or -1 (not held, or it could not be opened). */
static int held_fd(const struct jd_cg_job *g, enum jd_cg_fd f)
{
	return g->held ? g->fd[f] : -1;
}

/* open_at: dir/file opened with flags (close-on-exec), or -1. */
static int open_at(const char *dir, const char *file, int flags)
{
	char path[PATH_MAX];

	return join(path, dir, file) < 0 ? -1 : open(path, flags | O_CLOEXEC);
}

/* hold: open reusable group g's files (jd_cg_job.held), unless JD_CG_HELD_MAX groups
 * hold theirs already or g is on a test's plain tree (whose files come and go with
 * writes).  What cannot be opened stays -1 and is read by path. */
static void hold(struct jd_cg *cg, struct jd_cg_job *g)
{
	if (g->held || cg->plain || cg->mode != JD_CG_V1 || cg->held >= JD_CG_HELD_MAX)
		return;
	for (int f = 0; f < JD_CG_NFD; f++)
		g->fd[f] = -1;
	/* The tasks files first, one after the other: numbered without a gap between them
	 * (in a table without holes), a direct child keeps them through one close_range
	 * fewer per gap (process.c). */
	for (size_t h = 0; h < JD_CG_MAX_HIER; h++)
		g->enter[h] = h < g->ndir && g->dir[h][0] ? open_at(g->dir[h], "tasks", O_WRONLY) : -1;
	for (size_t h = 0; h < g->ndir; h++) {
		unsigned ctls = cg->hier[h].ctls;
		const char *dir = g->dir[h];

		if (!dir[0])
			continue;
		if (ctls & (1u << JD_CG_CPUACCT)) {
			g->fd[JD_CG_FD_USAGE] = open_at(dir, "cpuacct.usage", O_RDONLY);
			g->fd[JD_CG_FD_USAGE_ALL] = open_at(dir, "cpuacct.usage_all", O_RDONLY);
		}
		if (ctls & (1u << JD_CG_MEMORY)) {
			g->fd[JD_CG_FD_PEAK] = open_at(dir, "memory.max_usage_in_bytes", O_RDWR);
			g->fd[JD_CG_FD_OOM] = open_at(dir, "memory.oom_control", O_RDONLY);
		}
		if (ctls & (1u << JD_CG_PIDS))
			g->fd[JD_CG_FD_PIDS] = open_at(dir, "pids.events", O_RDONLY);
		if (g->fd[JD_CG_FD_DIR] < 0)
			g->fd[JD_CG_FD_DIR] = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	g->held = true;
	cg->held++;
}

/* release: close what hold opened. */
static void release(struct jd_cg *cg, struct jd_cg_job *g)
{
	if (!g->held)
		return;
	for (int f = 0; f < JD_CG_NFD; f++)
		if (g->fd[f] >= 0)
			close(g->fd[f]);
	for (size_t h = 0; h < JD_CG_MAX_HIER; h++)
		if (g->enter[h] >= 0)
			close(g->enter[h]);
	g->held = false;
	cg->held--;
}

static void job_name(uint64_t id, uint64_t seq, char *out)
{
	if (seq)
		snprintf(out, 48, "job-%llu-%llu", (unsigned long long)id, (unsigned long long)seq);
	else
		snprintf(out, 48, "job-%llu", (unsigned long long)id);
}

/* first_dir: the index of g's first directory (the one a reusable group's job name is
 * on), or ndir when it has none. */
static size_t first_dir(const struct jd_cg_job *g)
{
	size_t h = 0;

	while (h < g->ndir && !g->dir[h][0])
		h++;
	return h;
}

/* slot_dirs: a reusable group's directories for its job: job-ID[-SEQ]+g-N in the first
 * hierarchy it is in, g-N in the others (out->slot set), each created.  Returns 0 or
 * -errno (EEXIST: a directory of that slot is there already). */
static int slot_dirs(struct jd_cg *cg, const char *client, struct jd_cg_job *out)
{
	char rel[256], job[48];
	bool first = true;

	client_rel(client, rel, sizeof(rel));
	job_name(out->id, out->seq, job);
	for (size_t h = 0; h < cg->nhier; h++) {
		int n;

		out->dir[h][0] = '\0';
		if (!(cg->hier[h].ctls & ~out->skip))
			continue;
		if (first && !cg->unnamed)
			n = snprintf(out->dir[h], PATH_MAX, "%s/%s/%s+g-%llu", cg->hier[h].base, rel, job,
				     (unsigned long long)out->slot);
		else
			n = snprintf(out->dir[h], PATH_MAX, "%s/%s/g-%llu", cg->hier[h].base, rel,
				     (unsigned long long)out->slot);
		first = false;
		if (n < 0 || n >= PATH_MAX) {
			out->dir[h][0] = '\0';
			return -ENAMETOOLONG;
		}
		out->ndir = h + 1;
		if (mkdir(out->dir[h], 0755) < 0) {
			int e = errno;

			out->dir[h][0] = '\0';
			return -e;
		}
	}
	return 0;
}

/* drop_made: remove what a failed create made of out (its non-empty dirs, last first). */
static void drop_made(struct jd_cg *cg, struct jd_cg_job *out)
{
	while (out->ndir > 0) {
		out->ndir--;
		if (out->dir[out->ndir][0])
			(void)drop_dir(cg, out->dir[out->ndir]);
	}
}

int jd_cg_job_create(struct jd_cg *cg, const char *client, uint64_t id, uint64_t seq,
		     const struct jd_cg_limits *l, unsigned skip, struct jd_cg_job *out)
{
	static const struct jd_cg_limits unlimited = {0};
	bool created;
	int rc;

	memset(out, 0, sizeof(*out));
	if (cg->mode == JD_CG_NONE)
		return JSCHED_ENOT_SUPPORTED;
	if ((rc = make_client(cg, client, &created)) < 0)
		return rc;
	if (created)
		for (size_t h = 0; h < cg->nhier; h++) {
			char dir[PATH_MAX];

			group_path(cg, h, client, NULL, 0, dir);
			(void)set_limits(cg, h, dir, 1, &unlimited, false);
		}
	out->id = id;
	out->seq = seq;
	/* v2 has one hierarchy, which every job needs. */
	out->skip = cg->mode == JD_CG_V1 ? skip : 0;
	snprintf(out->client, sizeof(out->client), "%s", client);
	if (jd_cg_can_reuse(cg) && (!l || (!l->memory_max && !l->pids_max && !l->cpu_max_milli))) {
		/* A slot's name may be left from a run whose recovery could not remove it. */
		for (int tries = 0; tries < 8; tries++) {
			out->slot = ++cg->slots;
			if ((rc = slot_dirs(cg, client, out)) == 0) {
				cg->stats.created++;
				hold(cg, out);
				return 0;
			}
			note_error(cg, -rc, "cannot create the group of job %llu (g-%llu)",
				   (unsigned long long)id, (unsigned long long)out->slot);
			drop_made(cg, out);
			if (rc != -EEXIST)
				break;
		}
		out->slot = 0;
		return JSCHED_EIO;
	}
	for (size_t h = 0; h < cg->nhier; h++) {
		out->dir[h][0] = '\0';
		if (!(cg->hier[h].ctls & ~out->skip))
			continue;
		if (group_path(cg, h, client, &id, seq, out->dir[h]) < 0 || mkdir(out->dir[h], 0755) < 0) {
			note_error(cg, errno, "cannot create %s", out->dir[h]);
			out->dir[h][0] = '\0';
			rc = JSCHED_EIO;
			goto fail;
		}
		out->ndir = h + 1;
		if (l && set_limits(cg, h, out->dir[h], 0, l, false) < 0) {
			rc = JSCHED_EIO;
			goto fail;
		}
	}
	cg->stats.created++;
	return 0;
fail:
	drop_made(cg, out);
	return rc;
}

void jd_cg_place(const struct jd_cg_job *g, const char **dirs, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < g->ndir; i++)
		if (g->dir[i][0])
			dirs[(*n)++] = g->dir[i];
}

void jd_cg_enter_fds(const struct jd_cg_job *g, int *fds, size_t *n)
{
	*n = 0;
	if (!g->held)
		return;
	for (size_t i = 0; i < g->ndir; i++) {
		if (!g->dir[i][0])
			continue;
		if (g->enter[i] < 0) {
			*n = 0; /* one missing: all by path */
			return;
		}
		fds[(*n)++] = g->enter[i];
	}
}

const char *jd_cg_enter_file(const struct jd_cg *cg)
{
	return cg->mode == JD_CG_V1 ? "tasks" : "cgroup.procs";
}

int jd_cg_enter(const char *const *dirs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		size_t dl = strlen(dirs[i]);
		int fd;

		if (dl + sizeof("/cgroup.procs") > sizeof(path))
			return -ENAMETOOLONG;
		/* v1's tasks first (cgroup.h: no global lock for the calling thread). */
		memcpy(path, dirs[i], dl);
		memcpy(path + dl, "/tasks", sizeof("/tasks"));
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 && errno == ENOENT) {
			memcpy(path + dl, "/cgroup.procs", sizeof("/cgroup.procs"));
			fd = open(path, O_WRONLY | O_CLOEXEC);
		}
		if (fd < 0)
			return -errno;
		if (write(fd, "0", 1) != 1) {
			int e = errno;

			close(fd);
			return -e;
		}
		close(fd);
	}
	return 0;
}

/* kill_listed: sig (SIGKILL) to each pid in dir's cgroup.procs.  Returns how many. */
static int kill_listed(const char *dir, int sig)
{
	char buf[65536];
	int n = 0;

	if (get(dir, "cgroup.procs", buf, sizeof(buf)) <= 0)
		return 0;
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		long pid = strtol(t, NULL, 10);

		if (pid > 0 && kill((pid_t)pid, sig) == 0)
			n++;
	}
	return n;
}

/* freeze: set dir frozen (on) or thawed; on: wait (bounded) until the kernel says so. */
static bool freeze(struct jd_cg *cg, const char *dir, bool on)
{
	bool v2 = cg->mode == JD_CG_V2;

	if (put_noted(cg, dir, v2 ? "cgroup.freeze" : "freezer.state",
		      v2 ? (on ? "1" : "0") : (on ? "FROZEN" : "THAWED")) < 0)
		return false;
	for (unsigned waited = 0; on && !cg->plain && waited < FREEZE_WAIT_MS; waited++) {
		char buf[256];
		uint64_t frozen = 0;

		if (v2 ? get_key(cg, -1, dir, "cgroup.events", "frozen", &frozen) && frozen
		       : get(dir, "freezer.state", buf, sizeof(buf)) > 0 &&
				 strncmp(buf, "FROZEN", 6) == 0)
			return true;
		sleep_ms(1);
	}
	return on && cg->plain;
}

int jd_cg_signal(struct jd_cg *cg, const struct jd_cg_job *g, int sig)
{
	size_t h = first_dir(g);

	(void)cg;
	/* Every hierarchy lists the same processes: the first will do. */
	return h < g->ndir ? kill_listed(g->dir[h], sig) : 0;
}

int jd_cg_kill(struct jd_cg *cg, const struct jd_cg_job *g)
{
	int n = 0;

	if (cg->mode == JD_CG_NONE || !g->ndir)
		return JSCHED_ENOT_SUPPORTED;
	cg->stats.kills++;
	if (cg->mode == JD_CG_V2) {
		if (cg->has_kill)
			return put_noted(cg, g->dir[0], "cgroup.kill", "1") < 0 ? JSCHED_EIO : 0;
		/* Frozen, nothing can fork; SIGKILL reaches frozen tasks; then thaw. */
		(void)freeze(cg, g->dir[0], true);
		n = kill_listed(g->dir[0], SIGKILL);
		(void)freeze(cg, g->dir[0], false);
	} else {
		for (size_t h = 0; h < g->ndir; h++) {
			if (!g->dir[h][0] || !(cg->hier[h].ctls & (1u << JD_CG_FREEZER)))
				continue;
			/* Frozen tasks keep the SIGKILL pending and die as they thaw, before
			 * returning to user code. */
			(void)freeze(cg, g->dir[h], true);
			n += kill_listed(g->dir[h], SIGKILL);
			(void)freeze(cg, g->dir[h], false);
		}
		/* Without a freezer (or whatever the freeze missed): kill what is listed until
		 * nothing new appears; a fork bomb is bounded by pids.max and the rounds. */
		for (int round = 0; round < KILL_ROUNDS; round++) {
			int k = 0;

			for (size_t h = 0; h < g->ndir; h++)
				if (g->dir[h][0] && !(cg->hier[h].ctls & (1u << JD_CG_FREEZER)))
					k += kill_listed(g->dir[h], SIGKILL);
			n += k;
			if (!k)
				break;
		}
	}
	cg->stats.killed_pids += (uint64_t)n;
	return n;
}

bool jd_cg_populated(struct jd_cg *cg, const struct jd_cg_job *g)
{
	char buf[64];

	if (cg->mode == JD_CG_V2 && g->ndir) {
		uint64_t pop = 0;
		char ev[512];
		ssize_t r = get(g->dir[0], "cgroup.events", ev, sizeof(ev));

		cg->stats.files_read++;
		if (r == -ENOENT)
			return access(g->dir[0], F_OK) == 0 && !cg->plain;
		return r < 0 || !key_u64(ev, "populated", &pop) || pop != 0;
	}
	/* v1: every hierarchy's group holds the same processes (jd_cg_enter enters them
	 * all), so the first says it; a process that left one of them on its own is found
	 * by the removal (busy) and jd_cg_kill, which go through every hierarchy. */
	for (size_t h = 0; h < g->ndir; h++) {
		ssize_t r;

		if (!g->dir[h][0])
			continue;
		/* Opened afresh even when g is held: a held cgroup.procs lists what it listed
		 * at its first read (cgroup.h, enum jd_cg_fd); from the held directory when
		 * there is one (the first hierarchy's, as here). */
		r = held_fd(g, JD_CG_FD_DIR) >= 0 ? get_in(g->fd[JD_CG_FD_DIR], "cgroup.procs", buf, sizeof(buf))
						  : get(g->dir[h], "cgroup.procs", buf, sizeof(buf));
		cg->stats.files_read++;
		if (r > 0 || (r < 0 && r != -ENOENT))
			return true;
		if (r == 0)
			return false;
	}
	return false;
}


/* usage_all: the user and system time (ns) summed over the CPUs of v1's
 * cpuacct.usage_all (by fd when open: fetch) ("cpu user system" and a line per CPU): one file for what
 * cpuacct.usage_user and cpuacct.usage_sys say in two.  Returns false when it cannot be
 * read (before Linux 4.7; a test's tree without it). */
static bool usage_all(struct jd_cg *cg, int fd, const char *dir, uint64_t *user, uint64_t *sys)
{
	char buf[8192];
	const char *l;
	ssize_t n = fetch(fd, dir, "cpuacct.usage_all", buf, sizeof(buf));

	cg->stats.files_read++;
	if (n <= 0 || (size_t)n + 1 >= sizeof(buf) || strncmp(buf, "cpu user system\n", 16) != 0)
		return false;
	*user = *sys = 0;
	/* "CPU USER SYSTEM\n" per line, read with strtoull (sscanf's format machinery was a
	 * tenth of what a command's end cost the loop thread in user space). */
	for (l = buf + 16; *l;) {
		char *e1, *e2, *e3;
		unsigned long long us, sy;

		(void)strtoull(l, &e1, 10);
		us = strtoull(e1, &e2, 10);
		sy = strtoull(e2, &e3, 10);
		if (e1 == l || e2 == e1 || e3 == e2 || (*e3 != '\n' && *e3 != '\0'))
			return false;
		*user += us;
		*sys += sy;
		l = *e3 ? e3 + 1 : e3;
	}
	return true;
}

/* since: a counter's growth from its base (0 if it went back: the group was not ours). */
static uint64_t since(uint64_t v, uint64_t base)
{
	return v > base ? v - base : 0;
}

int jd_cg_usage(struct jd_cg *cg, const struct jd_cg_job *g, struct jd_cg_usage *u, bool count)
{
	uint64_t a, b;

	memset(u, 0, sizeof(*u));
	if (cg->mode == JD_CG_NONE || !g->ndir)
		return JSCHED_ENOT_SUPPORTED;
	if (cg->mode == JD_CG_V2) {
		const char *dir = g->dir[0];
		char st[1024];

		cg->stats.files_read++;
		if (get(dir, "cpu.stat", st, sizeof(st)) > 0 && key_u64(st, "usage_usec", &u->cpu_us) &&
		    key_u64(st, "user_usec", &a) && key_u64(st, "system_usec", &b)) {
			u->user_us = a;
			u->system_us = b;
			u->has_cpu = true;
		}
		u->has_memory_peak = get_u64(cg, -1, dir, "memory.peak", &u->memory_peak);
		u->has_oom = get_key(cg, -1, dir, "memory.events", "oom_kill", &u->oom_kills);
		u->has_pids = get_key(cg, -1, dir, "pids.events", "max", &u->pids_max_hits);
	} else {
		for (size_t h = 0; h < g->ndir; h++) {
			unsigned ctls = cg->hier[h].ctls;
			const char *dir = g->dir[h];

			if (!dir[0])
				continue;
			if ((ctls & (1u << JD_CG_CPUACCT)) &&
			    get_u64(cg, held_fd(g, JD_CG_FD_USAGE), dir, "cpuacct.usage", &u->cpu_us) &&
			    (usage_all(cg, held_fd(g, JD_CG_FD_USAGE_ALL), dir, &a, &b) ||
			     (get_u64(cg, -1, dir, "cpuacct.usage_user", &a) &&
			      get_u64(cg, -1, dir, "cpuacct.usage_sys", &b)))) {
				u->cpu_us /= 1000;
				u->user_us = a / 1000;
				u->system_us = b / 1000;
				u->has_cpu = true;
			}
			if (ctls & (1u << JD_CG_MEMORY)) {
				u->has_memory_peak = get_u64(cg, held_fd(g, JD_CG_FD_PEAK), dir,
							     "memory.max_usage_in_bytes", &u->memory_peak);
				u->has_oom = get_key(cg, held_fd(g, JD_CG_FD_OOM), dir,
						     "memory.oom_control", "oom_kill", &u->oom_kills);
			}
			if (ctls & (1u << JD_CG_PIDS))
				u->has_pids = get_key(cg, held_fd(g, JD_CG_FD_PIDS), dir, "pids.events",
						      "max", &u->pids_max_hits);
		}
	}
	/* A reused group's counters began with its previous commands (jd_cg_job_park). */
	u->cpu_us = since(u->cpu_us, g->base.cpu_us);
	u->user_us = since(u->user_us, g->base.user_us);
	u->system_us = since(u->system_us, g->base.system_us);
	u->oom_kills = since(u->oom_kills, g->base.oom_kills);
	u->pids_max_hits = since(u->pids_max_hits, g->base.pids_max_hits);
	if (count) {
		cg->stats.oom_kills += u->oom_kills;
		cg->stats.pids_max_hits += u->pids_max_hits;
	}
	return u->has_cpu || u->has_memory_peak || u->has_oom || u->has_pids ? 0 : JSCHED_EIO;
}

bool jd_cg_can_reuse(const struct jd_cg *cg)
{
	return cg->mode == JD_CG_V1;
}

/* rename_first: g's first directory (the one its job's name is on) renamed to `name`
 * under the same client group; g->dir follows.  Returns 0 or JSCHED_EIO. */
static int rename_first(struct jd_cg *cg, struct jd_cg_job *g, const char *name)
{
	size_t h = first_dir(g);
	char to[PATH_MAX];
	const char *slash;
	int n;

	if (h >= g->ndir || !(slash = strrchr(g->dir[h], '/')))
		return JSCHED_EINVAL;
	n = snprintf(to, sizeof(to), "%.*s/%s", (int)(slash - g->dir[h]), g->dir[h], name);
	if (n < 0 || n >= PATH_MAX) {
		note_error(cg, ENAMETOOLONG, "%s", g->dir[h]);
		return JSCHED_EIO;
	}
	if (rename(g->dir[h], to) < 0) {
		note_error(cg, errno, "cannot rename %s to %s", g->dir[h], name);
		return JSCHED_EIO;
	}
	memcpy(g->dir[h], to, (size_t)n + 1);
	return 0;
}

int jd_cg_job_park(struct jd_cg *cg, struct jd_cg_job *g, const struct jd_cg_usage *now)
{
	char name[32];

	if (!jd_cg_can_reuse(cg) || !g->slot || first_dir(g) >= g->ndir)
		return JSCHED_ENOT_SUPPORTED;
	for (size_t h = 0; h < g->ndir; h++) {
		int fd = held_fd(g, JD_CG_FD_PEAK);

		if (!g->dir[h][0] || !(cg->hier[h].ctls & (1u << JD_CG_MEMORY)))
			continue;
		if (fd >= 0 && pwrite(fd, "0", 1, 0) == 1)
			continue;
		if (put_noted(cg, g->dir[h], "memory.max_usage_in_bytes", "0") < 0)
			return JSCHED_EIO;
	}
	snprintf(name, sizeof(name), "g-%llu", (unsigned long long)g->slot);
	if (!cg->unnamed && rename_first(cg, g, name) < 0)
		return JSCHED_EIO;
	g->base = *now;
	g->id = 0;
	g->seq = 0;
	cg->stats.parked++;
	return 0;
}

int jd_cg_job_reuse(struct jd_cg *cg, struct jd_cg_job *g, uint64_t id, uint64_t seq)
{
	char job[48], name[80];

	job_name(id, seq, job);
	snprintf(name, sizeof(name), "%s+g-%llu", job, (unsigned long long)g->slot);
	if (!cg->unnamed && rename_first(cg, g, name) < 0)
		return JSCHED_EIO;
	g->id = id;
	g->seq = seq;
	g->empty = false;
	cg->stats.reused++;
	return 0;
}

/* remove_dirs: rmdir each of g's directories.  Returns 0 or JSCHED_EAGAIN (one is busy). */
static int remove_dirs(struct jd_cg *cg, struct jd_cg_job *g)
{
	bool busy = false;

	for (size_t h = g->ndir; h-- > 0;) {
		int rc = g->dir[h][0] ? drop_dir(cg, g->dir[h]) : 0;

		if (rc == -EAGAIN) {
			busy = true;
		} else if (rc < 0) {
			note_error(cg, -rc, "cannot remove %s", g->dir[h]);
			busy = true;
		}
	}
	if (busy)
		return JSCHED_EAGAIN;
	g->ndir = 0;
	return 0;
}

int jd_cg_job_remove(struct jd_cg *cg, struct jd_cg_job *g)
{
	int rc;

	release(cg, g);
	rc = remove_dirs(cg, g);

	if (rc < 0)
		cg->stats.remove_busy++;
	else
		cg->stats.removed++;
	return rc;
}

/* ---- leftovers ------------------------------------------------------------------------- */

/* slot_of: N when entry is a slot's neutral name g-N (or spare-N, an earlier build's
 * parked group), else 0. */
static uint64_t slot_of(const char *entry)
{
	const char *num = strncmp(entry, "g-", 2) == 0 ? entry + 2 :
			  strncmp(entry, "spare-", 6) == 0 ? entry + 6 : NULL;
	char *end;
	unsigned long long n;

	if (!num || !isdigit((unsigned char)*num))
		return 0;
	errno = 0;
	n = strtoull(num, &end, 10);
	return *end || errno ? 0 : n;
}

/* group_at: g->dir[h] = hierarchy h's base/cdir/name when it exists ("" otherwise).
 * Returns false when the path does not fit. */
static bool group_at(const struct jd_cg *cg, size_t h, const char *cdir, const char *name,
		     struct jd_cg_job *g)
{
	int n = snprintf(g->dir[h], PATH_MAX, "%s/%s/%s", cg->hier[h].base, cdir, name);

	if (n < 0 || n >= PATH_MAX)
		return false;
	if (access(g->dir[h], F_OK) != 0)
		g->dir[h][0] = '\0';
	return true;
}

/* job_of: the job group named `entry` in hierarchy `at` of client dir `cdir`
 * ("client-X") as a struct jd_cg_job across the hierarchies it is in: job-ID[-SEQ] in
 * each, or job-ID[-SEQ]+g-N here and g-N in the others (a reusable group).  Returns true
 * when entry names a job group. */
static bool job_of(const struct jd_cg *cg, size_t at, const char *cdir, const char *entry,
		   struct jd_cg_job *g)
{
	char *end, other[48];
	unsigned long long id, seq = 0, slot = 0;

	if (strncmp(entry, "job-", 4) != 0 || !isdigit((unsigned char)entry[4]))
		return false;
	errno = 0;
	id = strtoull(entry + 4, &end, 10);
	if (*end == '-' && isdigit((unsigned char)end[1]))
		seq = strtoull(end + 1, &end, 10);
	if (*end == '+' && !(slot = slot_of(end + 1)))
		return false;
	if ((*end && *end != '+') || errno)
		return false;
	memset(g, 0, sizeof(*g));
	g->id = id;
	g->seq = seq;
	g->slot = slot;
	snprintf(other, sizeof(other), "g-%llu", slot);
	for (size_t h = 0; h < cg->nhier; h++)
		if (!group_at(cg, h, cdir, h == at || !slot ? entry : other, g))
			return false;
	g->ndir = cg->nhier;
	return true;
}

/* client_dirs: call fn for each "client-*" directory name under every hierarchy's base
 * (names repeat across hierarchies; fn must not mind). */
static void client_dirs(struct jd_cg *cg, void (*fn)(struct jd_cg *, const char *, void *), void *arg)
{
	for (size_t h = 0; h < cg->nhier; h++) {
		DIR *dh = opendir(cg->hier[h].base);
		struct dirent *e;

		while (dh && (e = readdir(dh)))
			if (e->d_type == DT_DIR && strncmp(e->d_name, "client-", 7) == 0)
				fn(cg, e->d_name, arg);
		if (dh)
			closedir(dh);
	}
}

struct recover {
	uint64_t *ids;
	struct jd_cg_usage *usage;	/* NULL: not asked for */
	size_t max, n, total;
	int rc;
	unsigned waited_ms;
};

/* recover_group: kill g, wait (bounded) for it to empty, read its usage into u (when
 * asked) and remove it.  Returns 0 or JSCHED_EAGAIN (still busy). */
static int recover_group(struct jd_cg *cg, struct recover *r, struct jd_cg_job *g,
			 struct jd_cg_usage *u)
{
	(void)jd_cg_kill(cg, g);
	while (jd_cg_populated(cg, g) && r->waited_ms < RECOVER_WAIT_MS) {
		sleep_ms(5);
		r->waited_ms += 5;
	}
	/* What it used, while its counters still exist. */
	if (u && jd_cg_usage(cg, g, u, true) < 0)
		memset(u, 0, sizeof(*u));
	return remove_dirs(cg, g);
}

/* recover_pass: in each hierarchy's client dir cdir, the job groups (jobs true: reported)
 * or what is left after them, slots' neutral names (jobs false: parked groups, empty
 * unless a rename failed half-way; killed and removed without being reported). */
static void recover_pass(struct jd_cg *cg, const char *cdir, struct recover *r, bool jobs)
{
	for (size_t h = 0; h < cg->nhier; h++) {
		char dir[PATH_MAX];
		DIR *dh;
		struct dirent *e;

		if (snprintf(dir, sizeof(dir), "%s/%s", cg->hier[h].base, cdir) >= PATH_MAX ||
		    !(dh = opendir(dir)))
			continue;
		while ((e = readdir(dh))) {
			struct jd_cg_job g;
			struct jd_cg_usage u;

			if (e->d_type != DT_DIR)
				continue;
			if (!jobs) {
				if (!slot_of(e->d_name))
					continue;
				memset(&g, 0, sizeof(g));
				for (size_t k = 0; k < cg->nhier; k++)
					(void)group_at(cg, k, cdir, e->d_name, &g);
				g.ndir = cg->nhier;
				if (recover_group(cg, r, &g, NULL) < 0)
					r->rc = JSCHED_EAGAIN;
				continue;
			}
			if (!job_of(cg, h, cdir, e->d_name, &g))
				continue;
			if (recover_group(cg, r, &g, r->usage ? &u : NULL) < 0) {
				r->rc = JSCHED_EAGAIN;
				continue;
			}
			cg->stats.recovered++;
			if (r->n < r->max) {
				if (r->usage)
					r->usage[r->n] = u;
				r->ids[r->n++] = g.id;
			}
			r->total++;
		}
		closedir(dh);
	}
}

static void recover_client(struct jd_cg *cg, const char *cdir, void *arg)
{
	struct recover *r = arg;

	recover_pass(cg, cdir, r, true);
	recover_pass(cg, cdir, r, false);
	for (size_t h = 0; h < cg->nhier; h++) {
		char dir[PATH_MAX];

		if (snprintf(dir, sizeof(dir), "%s/%s", cg->hier[h].base, cdir) < PATH_MAX)
			(void)drop_dir(cg, dir);
	}
}

int jd_cg_recover(struct jd_cg *cg, uint64_t *ids, struct jd_cg_usage *usage, size_t max,
		  size_t *n, size_t *total)
{
	struct recover r = {ids, usage, max, 0, 0, 0, 0};

	if (cg->mode != JD_CG_NONE)
		client_dirs(cg, recover_client, &r);
	if (cg->mode != JD_CG_NONE && !delegated_base(cg) && r.rc == 0) {
		bool all = true;

		for (size_t h = 0; h < cg->nhier; h++)
			all &= drop_dir(cg, cg->hier[h].base) == 0;
		cg->base_made = !all;
	}
	*n = r.n;
	if (total)
		*total = r.total;
	return r.rc;
}

static void drop_client(struct jd_cg *cg, const char *cdir, void *arg)
{
	(void)arg;
	for (size_t h = 0; h < cg->nhier; h++) {
		char dir[PATH_MAX], spare[PATH_MAX];
		DIR *dh;
		struct dirent *e;

		if (snprintf(dir, sizeof(dir), "%s/%s", cg->hier[h].base, cdir) >= PATH_MAX)
			continue;
		/* Its parked groups first (jd_cg_job_park): empty, they go with it. */
		for (dh = opendir(dir); dh && (e = readdir(dh));)
			if (e->d_type == DT_DIR && slot_of(e->d_name) && join(spare, dir, e->d_name) == 0)
				(void)drop_dir(cg, spare);
		if (dh)
			closedir(dh);
		(void)drop_dir(cg, dir);
	}
}

void jd_cg_close(struct jd_cg *cg)
{
	if (cg->mode == JD_CG_NONE)
		return;
	client_dirs(cg, drop_client, NULL);
	if (!delegated_base(cg))
		for (size_t h = 0; h < cg->nhier; h++)
			(void)drop_dir(cg, cg->hier[h].base);
	cg->mode = JD_CG_NONE;
	cg->nhier = 0;
}
