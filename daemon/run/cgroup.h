/* daemon/run/cgroup.h: control groups for commands: a group per client under jschedd's own
 * subtree, a group per job under its client's, limits, whole-group kill, accounting.
 *
 * This file knows cgroup file systems and nothing of the daemon: no sockets, no jobs
 * table, no loop.  The caller (the local exec path) names groups by client name and job
 * id and decides when to create, kill, read and remove them.  Every function is called
 * from one thread (the loop thread); jd_cg_enter is also safe in a forked child.
 *
 * Where the groups come from, decided once by jd_cg_open (the first that applies):
 *   v2, delegated   jschedd's own cgroup (from /proc/self/cgroup) is writable and offers
 *                   cpu/memory/pids: the system unit with Delegate=yes, or the user unit
 *                   under a delegated user manager.  jschedd moves itself into the leaf
 *                   <own>/daemon (cgroup v2 allows processes only in leaves once
 *                   controllers are enabled for children) and its clients' groups are
 *                   <own>/client-NAME/job-ID.
 *   v2, created     root, not delegated: jschedd creates <mount>/NAME (conf.name) and
 *                   enables the controllers down to it.
 *   v1              cgroup v1 (or hybrid) hierarchies for cpu, cpuacct, memory, pids,
 *                   freezer, each found in /proc/self/mountinfo; in each, the subtree is
 *                   <mount>/<jschedd's own group in it>/NAME, so an outer limit (a
 *                   container's, a session's) still applies.  Usable when at least one
 *                   hierarchy lets us create the subtree (root, or a delegated one).
 *   none            nothing usable: jd_cg_open still returns 0 with mode JD_CG_NONE and
 *                   `reason` saying why; the caller runs commands without groups and
 *                   refuses a job that asks for a limit.
 * A v2 mount with none of cpu, memory, pids (a hybrid machine whose controllers are all on
 * v1) is passed over for v1: kill and CPU accounting would work there, limits would not.
 *
 * What each mode uses:
 *                  v2                               v1
 *   CPU weight     cpu.weight = 100 x weight         cpu.shares = 1024 x weight
 *   cpu_max        cpu.max "QUOTA 100000"            cpu.cfs_quota_us / cfs_period_us
 *   memory_max     memory.max (+ memory.swap.max 0)  memory.limit_in_bytes (+ memsw equal)
 *   pids_max       pids.max                          pids.max
 *   kill           cgroup.kill (5.14), else freeze   freezer FROZEN, SIGKILL each pid,
 *                  + SIGKILL each pid + thaw         THAWED (no freezer: kill rounds)
 *   CPU used       cpu.stat usage_usec, user_usec,   cpuacct.usage, usage_user,
 *                  system_usec                       usage_sys (the split is by ticks)
 *   peak memory    memory.peak (5.19)                memory.max_usage_in_bytes
 *   OOM kills      memory.events oom_kill            memory.oom_control oom_kill
 *   pids limit hit pids.events max                   pids.events max
 * Swap is capped with memory so that a limit means an OOM kill, not a job swapping to a
 * crawl.  Weights are clamped to the controller's range (v2 1..10000, v1 2..262144).
 *
 * Placing a command.  A process must be in its job's group before it runs any user code,
 * or a quick double fork escapes.  glibc's posix_spawn (what exec.c uses) cannot place a
 * child (posix_spawnattr_setcgroup_np, clone3 with CLONE_INTO_CGROUP, arrives in glibc
 * 2.41; these machines have 2.36).  So the child places itself: the loop thread's directly
 * started child writes the group's files before its exec (daemon/run/process.c, raw
 * system calls), and the helper that starts a command as another user (jschedd-runas)
 * calls jd_cg_enter with the job's directories before it drops privileges and execs.
 * On v1 the file is `tasks`, not `cgroup.procs`: "0" written to `tasks` moves the calling
 * thread alone, and the kernel (since 5.17) moves the current thread without its global
 * threadgroup lock, whose write side waits for an RCU grace period whenever no writer
 * came within the last one.  Here that wait was most of a command's start: an attach
 * through cgroup.procs after 20 ms without one took 20 ms at the median (p90 57 ms; the
 * machine loaded), through tasks 52 us (back to back: 18 and 22 us).  The child is a
 * process of one thread (clone without CLONE_THREAD; the helper has one too), so moving
 * its thread moves the process, with its memory (its mm's owner is that thread), its
 * pids charge and its freezer state.  v2 has no tasks file (cgroup.threads works only
 * in threaded subtrees): cgroup.procs there, where CLONE_INTO_CGROUP is the better
 * answer.  The alternatives: moving the loop thread's own task into
 * the group around posix_spawn (v1 only, the group's pids limit would count the loop
 * thread, and the loop would wait on each attach, which takes the kernel's global
 * threadgroup lock); writing the pid from the parent after posix_spawn returns (too late:
 * the command has run by then).  Either way each attach is paid by the child, off the
 * loop thread.  jd_cg_place gives the directories.
 *
 * Groups left by a crashed daemon.  Job groups carry their job's name (job-ID[-SEQ], a
 * reusable one in one hierarchy: below), so jd_cg_recover, at
 * start, before any job runs, kills every job group it finds under the subtree, reads
 * what each used once it is empty, removes them and returns their ids and usage, for the
 * caller to settle (the journal's recovery: failed with cause daemon_restart).  Two daemons must not share a subtree: conf.name tells
 * them apart (tests give each daemon its own).
 *
 * A plain directory tree may stand in for a cgroup file system (the unit tests build one
 * and point conf.mountinfo at it): on a file system that is not cgroupfs, control files
 * are created when written (the kernel makes them at mkdir) and removed before rmdir.
 */
#ifndef JD_CGROUP_H
#define JD_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum jd_cg_mode { JD_CG_NONE, JD_CG_V1, JD_CG_V2 };

/* The controllers jschedd uses (bits of jd_cg.controllers). */
enum jd_cg_ctl {
	JD_CG_CPU,	/* weight and quota */
	JD_CG_CPUACCT,	/* v1 usage (v2: cpu.stat is always there) */
	JD_CG_MEMORY,
	JD_CG_PIDS,
	JD_CG_FREEZER,	/* v1 (v2: cgroup.freeze is always there) */
	JD_CG_NCTL
};

/* Limits of a client's or a job's group; 0 in a member: no limit. */
struct jd_cg_limits {
	uint64_t memory_max;	/* bytes */
	uint64_t pids_max;	/* processes and threads */
	uint32_t cpu_max_milli;	/* thousandths of a CPU: 1500 is 1.5 CPUs */
};

/* What a job's group used, read before it is removed. */
struct jd_cg_usage {
	uint64_t cpu_us;		/* CPU time of every process it held (exact) */
	uint64_t user_us, system_us;	/* its split (v1: sampled at ticks, so the two may
					 * sum to less than cpu_us for short commands) */
	uint64_t memory_peak;		/* bytes; 0 when the kernel does not say */
	uint64_t oom_kills;		/* processes the kernel killed at memory_max */
	uint64_t pids_max_hits;		/* forks refused at pids_max */
	bool has_cpu, has_memory_peak, has_oom, has_pids;	/* which were read */
};

/* How jd_cg_open finds things.  Every member optional (NULL / 0). */
struct jd_cg_conf {
	const char *name;	/* the subtree's name (v2 created, v1): default "jschedd" */
	const char *mode;	/* "auto" (default), "v2", "v1", "off" */
	const char *mountinfo;	/* default /proc/self/mountinfo */
	const char *self_cgroup;	/* default /proc/self/cgroup */
	pid_t self_pid;		/* moved into <own>/daemon when v2 is delegated; default getpid() */
	bool is_root;		/* treat as root (default: geteuid() == 0) */
	bool is_root_set;
};

/* Counters for the metrics document. */
struct jd_cg_stats {
	uint64_t created, removed;	/* job groups */
	uint64_t parked, reused;	/* job groups kept empty for the next job, taken again */
	uint64_t client_updates;	/* clients' groups written (jd_cg_client) */
	uint64_t files_read;		/* job groups' control files read (emptiness, usage) */
	uint64_t remove_busy;		/* removals refused: processes still in it */
	uint64_t kills;			/* whole-group kills */
	uint64_t killed_pids;		/* SIGKILLs sent by freeze-and-kill */
	uint64_t recovered;		/* groups of a previous daemon killed at start */
	uint64_t oom_kills, pids_max_hits;	/* summed from the jobs' usage */
	uint64_t errors;		/* file operations that failed (last in `error`) */
};

#define JD_CG_MAX_HIER 5

/* The control files of a reusable job group kept open (jd_cg_job.fd), so that a command's
 * end reads them by pread instead of an open, a read to EOF and a close each: the open's
 * walk down a path of nine components, through kernfs, was most of what the end cost the
 * loop thread.  v1 only (the mode that reuses groups).  Not cgroup.procs: v1 lists its
 * pids from a list the kernel makes at an open file's first read and keeps for that file
 * while it is read again within a second, so a held one goes on listing a process that has
 * left (unit_cgroup test_real_setsid_double_fork waited in vain for its group to empty);
 * the emptiness check opens it afresh, relative to the group's directory held open
 * (JD_CG_FD_DIR: 4.8-6.0 us an open, read and close on this guest, 8.1-10.1 us by a
 * path five directories below the hierarchy's root). */
enum jd_cg_fd {
	JD_CG_FD_USAGE,		/* cpuacct.usage */
	JD_CG_FD_USAGE_ALL,	/* cpuacct.usage_all */
	JD_CG_FD_PEAK,		/* memory.max_usage_in_bytes, read and reset (read-write) */
	JD_CG_FD_OOM,		/* memory.oom_control */
	JD_CG_FD_PIDS,		/* pids.events */
	JD_CG_FD_DIR,		/* the first hierarchy's directory (O_PATH), where
				 * jd_cg_populated opens cgroup.procs */
	JD_CG_NFD
};

/* At most this many job groups hold their files open (jd_cg.held), so the descriptors
 * they take are bounded whatever exec.max_processes and the spares are: JD_CG_HELD_FDS
 * (the server keeps them out of the connections' budget).  A group past it reads by path. */
#define JD_CG_HELD_MAX 8
#define JD_CG_HELD_FDS (JD_CG_HELD_MAX * (JD_CG_NFD + JD_CG_MAX_HIER))

/* jschedd's subtree.  Filled by jd_cg_open; read-only to callers except `stats`. */
struct jd_cg {
	enum jd_cg_mode mode;
	const char *how;	/* "v2 delegated", "v2 created", "v1", "none" */
	char reason[2 * PATH_MAX];	/* what was found and why this mode */
	unsigned controllers;	/* bits (1u << enum jd_cg_ctl) usable under the subtree */
	bool has_kill;		/* v2 cgroup.kill */
	bool plain;		/* not cgroupfs: a test's directory tree */
	bool base_made;		/* the subtree's directories exist (made again on demand) */
	bool unnamed;		/* set by the caller: reusable groups never carry their job's
				 * name (nothing to settle after a crash: no journal), so
				 * parking and reusing one renames nothing */
	uint64_t slots;		/* the last g-N name given to a reusable job group */
	unsigned held;		/* job groups whose files are open (jd_cg_job.held) */
	size_t nhier;		/* v1: hierarchies in use; v2: 1 */
	struct {
		char base[PATH_MAX];	/* the subtree's directory */
		unsigned ctls;		/* controllers of this hierarchy we use */
	} hier[JD_CG_MAX_HIER];
	struct jd_cg_stats stats;
	char error[2 * PATH_MAX];	/* the last failure, with its path */
};

/* A job's group, as created: its directory in each hierarchy in use (dir[h] for
 * hierarchy h, "" where it has none: jd_cg_job_create's skip), ndir = the hierarchies
 * in use.  base: its counters when it was parked for reuse (jd_cg_job_park; zero for a
 * new group): jd_cg_usage reports what was used since.  slot: a reusable group's
 * number N (0: not reusable), skip: the controllers it was made without.  empty: the
 * caller's note that it found g empty after its command's leader had exited, so that it
 * need not read it again (nothing enters a group that is empty then: only a process in
 * it could fork into it); jd_cg_job_reuse clears it. */
struct jd_cg_job {
	char dir[JD_CG_MAX_HIER][PATH_MAX];
	size_t ndir;
	uint64_t id, seq, slot;
	unsigned skip;
	bool empty;
	char client[72];
	struct jd_cg_usage base;
	/* held: a reusable group (v1, not a test's plain tree) made while fewer than
	 * JD_CG_HELD_MAX were, whose files are open until jd_cg_job_remove: fd[] those its
	 * end reads (enum jd_cg_fd), enter[h] the tasks file of dir[h], what its command
	 * writes to enter it (jd_cg_enter_fds); -1 where one could not be opened (read by
	 * path then).  Not held (a zeroed struct too): every file by path. */
	bool held;
	int fd[JD_CG_NFD];
	int enter[JD_CG_MAX_HIER];
};

/* jd_cg_open: detect what applies, create the subtree, fill cg.  Returns 0 (mode may be
 * JD_CG_NONE, with the reason) or JSCHED_EINVAL for a bad conf.mode / conf.name, or
 * JSCHED_EIO when a forced mode cannot be had (reason says why). */
int jd_cg_open(struct jd_cg *cg, const struct jd_cg_conf *conf);

/* jd_cg_mode_name: "v2", "v1" or "none". */
const char *jd_cg_mode_name(enum jd_cg_mode m);

/* jd_cg_can_limit: 0 if limits `l` can be applied here, else JSCHED_ENOT_SUPPORTED with
 * what is missing in why ("memory limits need the memory controller ..."). */
int jd_cg_can_limit(const struct jd_cg *cg, const struct jd_cg_limits *l, char *why, size_t len);

/* jd_cg_client: create (or update) the group of client `name`: CPU weight from `weight`,
 * and the limits l (NULL: none).  Returns 0 or a JSCHED_E* code (cg->error says what). */
int jd_cg_client(struct jd_cg *cg, const char *name, uint32_t weight, const struct jd_cg_limits *l);

/* jd_cg_job_create: the group of job `id` under client `client` (created with weight 1 if
 * it does not exist yet), with limits l (NULL: none), into *out.  skip: controllers
 * (bits) the job needs no group in: v1 leaves out a hierarchy that holds nothing else
 * (the caller passes pids when neither the job nor its client has a pids limit), so the
 * command is not attached there and stays in jschedd's own group of it.  Its name:
 * job-ID, or job-ID-SEQ when seq is not 0 (a call handler's processes, one group each),
 * in every hierarchy; a group that can be reused (jd_cg_can_reuse, no limits) has the
 * job's name only in the first hierarchy it is in, job-ID[-SEQ]+g-N, and g-N in the
 * others, so that parking and reusing it renames one directory (cg->unnamed: g-N in
 * every hierarchy, and nothing is renamed).  Returns 0 or a
 * JSCHED_E* code; on failure nothing is left behind. */
int jd_cg_job_create(struct jd_cg *cg, const char *client, uint64_t id, uint64_t seq,
		     const struct jd_cg_limits *l, unsigned skip, struct jd_cg_job *out);

/* jd_cg_place: the directories a child must enter (jd_cg_enter), in dirs[0..*n). */
void jd_cg_place(const struct jd_cg_job *g, const char **dirs, size_t *n);

/* jd_cg_enter_fds: when g holds its files, their descriptors a child writes "0" to, to
 * enter g (one per directory jd_cg_place gives, in its order), into fds[0..*n); else
 * *n = 0.  They are close-on-exec. */
void jd_cg_enter_fds(const struct jd_cg_job *g, int *fds, size_t *n);

/* jd_cg_enter_file: the file of a group's directory that a process of one thread writes
 * "0" to, to enter it: "tasks" on v1, "cgroup.procs" on v2 (see "Placing a command"). */
const char *jd_cg_enter_file(const struct jd_cg *cg);

/* jd_cg_enter: move the calling process, which has one thread, into each of dirs[0..n)
 * (writes "0" to their tasks file, or where there is none (v2) cgroup.procs).
 * open/write/close only: safe between fork and exec.  Returns 0 or a negative errno
 * (the first failure). */
int jd_cg_enter(const char *const *dirs, size_t n);

/* jd_cg_populated: true when a process is still in g (or it cannot be read). */
bool jd_cg_populated(struct jd_cg *cg, const struct jd_cg_job *g);

/* jd_cg_signal: send sig to every process listed in g (a polite SIGTERM before the kill:
 * the processes may fork meanwhile, jd_cg_kill is what is sure).  Returns how many. */
int jd_cg_signal(struct jd_cg *cg, const struct jd_cg_job *g, int sig);

/* jd_cg_kill: SIGKILL every process in g, so that none escapes by setsid or a double fork.
 * Returns the number of processes signalled (v2 cgroup.kill: 0, the kernel does it) or a
 * JSCHED_E* code.  The processes are gone once jd_cg_populated says so.  Freeze-and-kill
 * waits for the freeze on the calling thread, at most 200 ms (a task in uninterruptible
 * sleep can delay it; what is listed then is killed anyway, and the rounds after the thaw
 * catch the rest). */
int jd_cg_kill(struct jd_cg *cg, const struct jd_cg_job *g);

/* jd_cg_usage: what g used (the members that could be read are flagged), since it was
 * created or last parked.  Adds its OOM kills and pids limit hits to cg->stats when count
 * is true.  Returns 0 or JSCHED_EIO. */
int jd_cg_usage(struct jd_cg *cg, const struct jd_cg_job *g, struct jd_cg_usage *u, bool count);

/* Reusing job groups.  Creating a group and removing it cost about 250 us on v1 (five
 * mkdirs and five rmdirs, a memory cgroup allocated and taken offline each time), and a
 * process's first attach to a group that is new costs a multiple of an attach to one that
 * has held processes before (the kernel's css_set for the combination is made anew; 1.9
 * against 0.3 ms per command for five hierarchies, measured on this 2-vCPU guest).  So a
 * group whose command has ended, empty, with no limits of its own, is parked under a
 * neutral name and given to the next command of the same client by a rename: of one
 * directory, the one that carries the job's name (job-ID+g-N, g-N while parked); its
 * other hierarchies' directories are g-N throughout (a rename costs about as much as an
 * attach, mostly the path walk: ten per command were 9% of the daemon's and its
 * children's CPU in perf).
 *   jd_cg_can_reuse: whether this mode's counters allow it.  v1: CPU, OOM kills and pids
 *     limit hits only grow, so the counters at parking are the next command's base; the
 *     peak is reset by writing memory.max_usage_in_bytes.  v2 no: memory.peak can be reset
 *     only per open file (6.12), so a reused group would report an earlier command's peak.
 *   jd_cg_job_park: g (empty, reusable: g->slot set) ended with its counters at `now`
 *     (absolute: jd_cg_usage's figures plus g's base): the peak reset, its job's name
 *     taken off (g-N).  Returns 0, or a JSCHED_E* code: then remove it (its
 *     directories are named as they are at that point, whatever failed).
 *   jd_cg_job_reuse: a parked g becomes the group of job id (seq as for jd_cg_job_create).
 *     Returns 0 or a JSCHED_E* code (then remove it, as above, and create one instead).
 * A daemon that dies leaves its spare groups empty; jd_cg_recover removes them without
 * reporting them (g-N, and spare-N, the names of earlier builds). */
bool jd_cg_can_reuse(const struct jd_cg *cg);
int jd_cg_job_park(struct jd_cg *cg, struct jd_cg_job *g, const struct jd_cg_usage *now);
int jd_cg_job_reuse(struct jd_cg *cg, struct jd_cg_job *g, uint64_t id, uint64_t seq);

/* jd_cg_job_remove: remove g's directories.  Returns 0, or JSCHED_EAGAIN while a process
 * is still in it (kill it, wait for jd_cg_populated to turn false, try again). */
int jd_cg_job_remove(struct jd_cg *cg, struct jd_cg_job *g);

/* jd_cg_recover: kill and remove every job group under the subtree (a crashed daemon's:
 * job-ID[-SEQ] in each hierarchy, or job-ID[-SEQ]+g-N in one and g-N in the others),
 * the client groups, and the subtree itself (v1, v2 created; it is made again with the
 * first group, so a daemon killed while idle leaves nothing behind).  The job ids found
 * go to ids[0..*n), once per group, and (usage not NULL) what each group used to
 * usage[0..*n), read after the kill and before the removal (at most max; more are
 * removed but not listed, *total counts them all).  Waits at most ~2 s in all for killed
 * processes to leave.  Returns 0 or JSCHED_EAGAIN when a group could not be removed. */
int jd_cg_recover(struct jd_cg *cg, uint64_t *ids, struct jd_cg_usage *usage, size_t max,
		  size_t *n, size_t *total);

/* jd_cg_close: remove the client groups and (v1, v2 created) the subtree itself, when
 * empty.  The v2 delegated group stays (systemd owns it).  Nothing runs by then. */
void jd_cg_close(struct jd_cg *cg);

#endif /* JD_CGROUP_H */
