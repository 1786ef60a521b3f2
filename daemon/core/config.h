/* daemon/core/config.h: jschedd's configuration, read from one JSON file.
 *
 * jd_config_load() turns a file (or no file: every key has a default that works) into a
 * struct jd_config, rejecting every bad value with the key's dotted name so the
 * administrator knows what to fix.  The struct is plain data: the loop thread owns the
 * live copy, and SIGHUP / `admin reload` load a fresh one and apply what can change
 * while running (jd_config_diff_static names what cannot).  The keys are documented in
 * daemon/README.md, section "Configuration".
 */
#ifndef JD_CONFIG_H
#define JD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* The socket mode meaning "decide from the path" (the default; security.c decides). */
#define JD_SOCKET_MODE_AUTO 01000u

/* The largest client weight, in the config and in set_client alike (net/op_admin.c checks
 * that the protocol's JP_WEIGHT_MAX is this). */
#define JD_CLIENT_WEIGHT_MAX 1000000u

/* "loop_poll_us": its default and its largest value (daemon/net/server.c, "The poll after
 * a request", has the figures that chose them). */
#define JD_LOOP_POLL_US_DEFAULT 0u
#define JD_LOOP_POLL_US_MAX 1000u

/* The "exec" section of the config (all changeable live). */
struct jd_exec_config {
	uint32_t max_processes;		/* commands running at once */
	uint32_t output_bytes;		/* captured bytes per stream per command */
	uint32_t kill_grace_ms;		/* SIGTERM to SIGKILL */
	bool allow_other_uids;		/* not root: run other uids' jobs as our own user */
	bool direct;			/* start commands of our own identity directly
					 * (run/process.c) where the build can; false:
					 * posix_spawn, or the helper for a group */
};

/* The "cgroups" section: where commands' control groups come from (fixed for the daemon's
 * lifetime; daemon/run/cgroup.h). */
struct jd_cgroup_config {
	char mode[8];		/* "auto" (default), "v2", "v1", "off" */
	char name[65];		/* the subtree's name; "" = from the socket path */
};

/* Where an exec job runs (run/backend.h): decided at submit from the spec's `backend`,
 * the client's default, then backends.default. */
enum jd_backend_kind {
	JD_BACKEND_UNSET = 0,	/* not given: the next default decides */
	JD_BACKEND_LOCAL,	/* this machine (run/exec.c) */
	JD_BACKEND_SLURM,	/* a Slurm batch job (run/backend_slurm.c) */
	JD_BACKEND_AUTO,	/* local while a process slot is free, Slurm once it waited
				 * longer than backends.slurm.overflow_after_ms */
};

/* jd_backend_name: "local", "slurm", "auto" ("" for UNSET).  jd_backend_parse: the kind
 * named, or JD_BACKEND_UNSET for any other text. */
const char *jd_backend_name(unsigned kind);
enum jd_backend_kind jd_backend_parse(const char *name);

/* The "backends" section (config_backends.c): where exec jobs run.  Fixed for the
 * daemon's lifetime. */
struct jd_backends_config {
	uint8_t default_backend;	/* enum jd_backend_kind: LOCAL */
	bool slurm;			/* "backends.slurm" present: the slurm backend is on */
	char slurm_conf[4096];		/* "conf": slurm.conf, "" for libslurm's default */
	char partition[128];		/* "" for the cluster's default */
	char account[128];		/* "" for the user's default */
	char output_dir[4096];		/* shared dir for the jobs' output files */
	uint32_t poll_ms;		/* slurm_load_jobs interval */
	uint32_t max_submitted;		/* the window: jobs handed to Slurm and not ended */
	uint32_t overflow_after_ms;	/* auto: queued this long without a slot: Slurm */
};

/* The "resources" section (config_resources.c): named, counted resources of this machine
 * (GPUs, licences) that a command claims in its spec's "needs".  Counts and env names
 * change live; the set of names is fixed for the daemon's lifetime (a reload that adds or
 * removes one keeps the running set and says "resources" needs a restart). */
#define JD_RESOURCES_MAX 5		/* the fair layer's 11 counted resources less the
					 * daemon's own six (process, fiber, call_fiber,
					 * slurm, cpus, memory) */
#define JD_RESOURCE_COUNT_MAX 1024u	/* units of one resource (= JP_NEED_COUNT_MAX) */
struct jd_resource_conf {
	char name[32];		/* a-z, 0-9, _, a letter first */
	char env[64];		/* "count" indices go here too ("CUDA_VISIBLE_DEVICES");
				 * "": only JSCHED_RESOURCE_<NAME> */
	uint32_t count;		/* units, indexed 0..count-1 */
};

/* The CPUs and memory that commands declaring --cpus / --mem (spec "resources") are
 * counted against: "resources": {"cpus": {"count": 8}, "memory": {"bytes": "16G"} or
 * {"reserve": "2G"}} (config_resources.c).  Not named resources: no indices, and a job
 * asks for them with its limits, not with "needs".  0: the machine's (online CPUs;
 * MemTotal less the reserve), read again at each reload. */
#define JD_CPUS_MAX 65536u		/* CPUs in "cpus.count" */
struct jd_machine_conf {
	uint32_t cpus_milli;		/* "cpus.count" x 1000, 0: online CPUs */
	uint64_t mem_bytes;		/* "memory.bytes", 0: MemTotal - mem_reserve */
	uint64_t mem_reserve;		/* "memory.reserve": kept out of MemTotal */
};

/* One entry of "client_names": uid -> names it may use. */
struct jd_name_grant {
	uid_t uid;
	bool any;		/* "*": every name */
	char (*names)[65];
	size_t n;
};

/* The config's security part (struct jd_config.sec).  Plain data. */
struct jd_security_config {
	struct jd_name_grant *grants;	/* malloc'd */
	size_t n_grants;
};


/* What to do when a client's queue (or the global cap) is full; mirrors daemon/fair's
 * strategies by name. */
enum jd_overflow {
	JD_OVERFLOW_REJECT,
	JD_OVERFLOW_DROP_OLDEST,
	JD_OVERFLOW_DROP_NEWEST,
	JD_OVERFLOW_BLOCK,
};

/* The per-client settings: "clients": {"default": {...}, "<name>": {...}}. */
struct jd_client_conf {
	char name[64];		/* "" for the default entry */
	uint32_t weight;	/* share of the machine, relative to other clients (>= 1) */
	uint32_t max_queued;	/* jobs waiting in this client's queues */
	enum jd_overflow overflow;
	uint32_t max_running;	/* its jobs running at once, of any kind (0: no limit) */
	uint32_t max_processes;	/* its commands running at once (0: no limit) */
	/* limits of the client's control group, over all its commands (0: none) */
	uint64_t memory_max;	/* bytes */
	uint64_t pids_max;
	uint32_t cpu_milli;	/* thousandths of a CPU */
	uint8_t backend;	/* enum jd_backend_kind: exec jobs that name none; UNSET:
				 * backends.default */
};

enum jd_policy_conf { JD_POLICY_FAIR, JD_POLICY_WRR, JD_POLICY_DRR };

struct jd_config {
	char path[4096];	/* the file it came from, "" for defaults only */

	/* Fixed for the daemon's lifetime (a reload that changes them is refused for those
	 * keys and says so). */
	char socket[108];	/* "" = jp_default_socket_path() */
	unsigned socket_mode;	/* permission bits of the socket file, or JD_SOCKET_MODE_AUTO
				 * (security.h: 0660 + group jsched on the system path, else
				 * 0600) */
	char socket_group[64];	/* "" = the daemon's group */
	unsigned workers;	/* 0 = online CPUs */
	unsigned fibers;	/* fiber stacks in the pool (sleep/suspending jobs) */
	char modules[8][4096];	/* shared objects loaded at start */
	unsigned n_modules;
	char metrics_listen[64];	/* "metrics.listen": HOST:PORT of GET /metrics, "" = off */
	char metrics_textfile[4096];	/* "metrics.textfile": the file rewritten, "" = off */
	uint32_t metrics_textfile_ms;	/* "metrics.textfile_interval_ms" */
	char journal_dir[4096];		/* "journal.dir": "" = the default (jd_config_journal_dir) */
	enum jd_journal_sync_conf { JD_JOURNAL_ALWAYS, JD_JOURNAL_BATCH, JD_JOURNAL_OFF }
		journal_sync;		/* "journal.sync" */
	uint32_t journal_batch_ms;	/* "journal.batch_ms" */
	uint64_t journal_compact_bytes;	/* "journal.compact_bytes": the log's floor for a snapshot */
	uint64_t journal_segment_bytes;	/* "journal.segment_bytes": each preallocated segment */
	enum jd_journal_io_conf { JD_JOURNAL_IO_CONF_DIRECT, JD_JOURNAL_IO_CONF_FDATASYNC }
		journal_io;		/* "journal.io" */
	bool journal_gather_spin;	/* "journal.gather_spin": poll for a group's waiters */
	int journal_cpu;		/* "journal.cpu": the flusher's CPU, or one of: */
#define JD_JOURNAL_CPU_AUTO (-1)	/* "auto": the journal disk's interrupt CPU, if one */
#define JD_JOURNAL_CPU_ANY (-2)		/* "any": not pinned */

	/* Changeable live. */
	bool idle_spin;		/* idle policy: spin (true) or sleep */
	uint32_t loop_poll_us;	/* "loop_poll_us": after reading a request the loop thread polls
				 * without blocking this long before it sleeps, while the workers
				 * leave it a CPU (daemon/net/server.c, "The poll after a
				 * request"); 0: never */
	unsigned worker_sched;	/* worker_scheduling: 0 normal, 1 batch, 2 low (default), 3 idle (the
				 * pool's enum jd_worker_sched, in that order) */
	enum jd_policy_conf policy;
	uint32_t quantum;	/* drr quantum, in cost units (0: the largest cost seen) */
	uint32_t fair_window_ms;	/* the fairness figures' sliding window */
	bool fair_drf;		/* "fairness.drf": dominant resource fairness (fair policy) */
	uint32_t backfill_max;	/* "fairness.backfill_max": jobs that may pass a command
				 * waiting for named resources before they are held for it;
				 * 0: never held */
	struct jd_client_conf default_client;
	struct jd_client_conf *clients; /* named entries, malloc'd */
	size_t n_clients;
	uid_t admins[32];	/* uids allowed admin ops besides root and the daemon's uid */
	size_t n_admins;
	struct jd_exec_config exec;		/* "exec": commands (config_exec.c) */
	struct jd_cgroup_config cgroups;	/* "cgroups" (config_exec.c), fixed */
	struct jd_security_config sec;		/* "client_names" (config_names.c) */
	struct jd_backends_config backends;	/* "backends" (config_backends.c) */
	struct jd_resource_conf resources[JD_RESOURCES_MAX]; /* "resources", in name order */
	size_t n_resources;
	struct jd_machine_conf machine;	/* "resources": "cpus" and "memory" */

	/* limits */
	uint32_t frame_bytes;		/* largest frame after hello */
	uint32_t handshake_ms;		/* time from connect to hello */
	size_t output_buffer_bytes;	/* unsent replies per connection before disconnect */
	uint32_t max_connections;	/* in all */
	uint32_t max_connections_per_uid;
	uint32_t max_queued_total;	/* queued jobs over all clients */
	uint32_t max_batch;		/* jobs in one submit message */
	uint32_t max_array;		/* elements in one job array */
	uint32_t max_clients;		/* client names the registry holds (hello, set_client) */
	uint32_t client_idle_seconds;	/* an idle client is forgotten after this long */
	uint64_t queued_bytes;		/* what jobs not final hold, in all (jd_job_live_bytes) */
	uint64_t client_queued_bytes;	/* the same, per client */
	uint32_t max_waits_per_conn;	/* pending waits per connection */
	uint32_t max_wait_ids_per_uid;	/* ids named by a uid's pending waits, in all */
	uint32_t frame_ms;		/* time a frame may take to arrive, once begun */
	uint32_t partial_frame_bytes;	/* bytes held for frames not yet complete, in all */
	uint32_t value_bytes;		/* the largest result a record carries whole (above:
					 * its size, and the result operation) */

	/* retention of finished jobs and of watch events */
	uint32_t retain_jobs;
	uint32_t retain_seconds;
	uint64_t retain_bytes;		/* memory of the final jobs kept (jd_job_mem_bytes) */
	uint32_t retain_min_seconds;	/* the least a final job is kept (capped at seconds) */
	uint32_t retain_events;
};

/* jd_config_defaults: fill `c` with the defaults (no file).  Any thread. */
void jd_config_defaults(struct jd_config *c);

/* jd_config_load: read `path` (NULL or "" = defaults only) into `c`.  Returns 0, or a
 * negative JSCHED_E* code with a one-line reason naming the key in err[0..errlen).  `c`
 * is left freed (jd_config_free is a no-op on it) on failure.  Any thread. */
int jd_config_load(struct jd_config *c, const char *path, char *err, size_t errlen);

/* jd_config_journal_dir: the journal's directory: "journal.dir", else $STATE_DIRECTORY
 * (systemd's StateDirectory=), else /var/lib/jschedd for root, else
 * $XDG_STATE_HOME/jschedd or ~/.local/state/jschedd.  Returns 0, or JSCHED_EINVAL when
 * none can be formed (no HOME), with the reason in buf. */
int jd_config_journal_dir(const struct jd_config *c, char *buf, size_t len);

/* jd_config_free: release what jd_config_load allocated.  Safe on a zeroed struct. */
void jd_config_free(struct jd_config *c);

/* jd_config_client: the settings for client `name` (its own entry, else the default).
 * Borrowed from `c`. */
const struct jd_client_conf *jd_config_client(const struct jd_config *c, const char *name);

/* jd_config_diff_static: write into buf the comma-separated keys that differ between
 * `old` and `neu` but cannot change while running ("" if none).  Returns buf. */
const char *jd_config_diff_static(const struct jd_config *old, const struct jd_config *neu,
				  char *buf, size_t len);

/* jd_exec_config_defaults / jd_exec_config_read: the "exec" section (config_exec.c).
 * read returns 0 or JSCHED_EINVAL with "exec.<key>: ..." in err.  Any thread. */
void jd_exec_config_defaults(struct jd_exec_config *c);
int jd_exec_config_read(json_t *obj, struct jd_exec_config *c, char *err, size_t errlen);

/* jd_cgroup_config_read: the "cgroups" section (config_exec.c).  Returns 0 or JSCHED_EINVAL
 * with "cgroups.<key>: ..." in err.  Any thread. */
int jd_cgroup_config_read(json_t *obj, struct jd_cgroup_config *c, char *err, size_t errlen);
/* jd_backends_config_defaults / jd_backends_config_read: the "backends" section
 * (config_backends.c).  read returns 0 or JSCHED_EINVAL with "backends.<key>: ..." in
 * err.  Any thread. */
void jd_backends_config_defaults(struct jd_backends_config *c);
int jd_backends_config_read(json_t *obj, struct jd_backends_config *c, char *err, size_t errlen);

/* jd_resources_config_read: the "resources" object (config_resources.c), into
 * c->resources sorted by name.  Returns 0 or JSCHED_EINVAL ("resources.<name>...: ...")
 * in err.  jd_resources_config_find: the entry named `name`, or NULL.  Any thread. */
int jd_resources_config_read(json_t *obj, struct jd_config *c, char *err, size_t errlen);
const struct jd_resource_conf *jd_resources_config_find(const struct jd_config *c,
							const char *name);

/* jd_security_config_read: the "client_names" object (config_names.c).  Returns 0 or
 * JSCHED_EINVAL ("client_names.<key>: ...") / JSCHED_ENOMEM in err.
 * jd_security_config_free releases it (safe on a zeroed struct).  Any thread. */
int jd_security_config_read(json_t *obj, struct jd_security_config *c, char *err, size_t errlen);
void jd_security_config_free(struct jd_security_config *c);

/* jd_overflow_name / jd_policy_conf_name: the config spelling. */
const char *jd_overflow_name(enum jd_overflow o);
const char *jd_policy_conf_name(enum jd_policy_conf p);

#endif /* JD_CONFIG_H */
