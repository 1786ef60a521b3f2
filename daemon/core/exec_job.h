/* daemon/core/exec_job.h: an exec job's data: what to run, and how it ended.
 *
 * The part of struct jd_job (j->exec) that only exec jobs have: the command's spec,
 * copied at submit and immutable after, and its result and captured output, written by
 * the loop thread while the command runs (daemon/run/exec.c) and read by the record, the
 * `output` operation and the journal.  Plain data: nothing here runs anything.
 */
#ifndef JD_EXEC_JOB_H
#define JD_EXEC_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/core/config.h"
#include "daemon/core/jobs.h"
#include "daemon/core/outlog.h"
#include "proto/jproto.h"

/* One named resource an exec job needs (its spec's "needs"). */
struct jd_exec_need {
	char name[32];
	uint32_t count;
};

struct jd_outfiles;

/* What to run.  Owned copies (freed by jd_exec_spec_clear). */
struct jd_exec_spec {
	char **argv;			/* NULL-terminated */
	char **env;			/* "NAME=value", NULL-terminated */
	char *cwd;
	unsigned char *stdin_data;	/* NULL: stdin is /dev/null */
	size_t stdin_len;
	bool has_stdin;
	uint64_t timeout_ms;		/* 0: none */
	uint32_t output_bytes;		/* 0: the config's */
	/* "resources": limits of its control group (0: none) */
	uint64_t memory_max;		/* bytes */
	uint64_t pids_max;
	uint32_t cpu_milli;		/* thousandths of a CPU */
	/* "needs": units of named resources (run/resources.c) held while it runs */
	struct jd_exec_need needs[JP_NEEDS_MAX];
	uint8_t n_needs;
	uint32_t need_units;		/* the sum of their counts */
};

/* One captured stream as one buffer (a Slurm job's, read back from its files; a FINAL
 * record's from a journal without output files; a handler's process's result). */
struct jd_exec_stream {
	unsigned char *data;
	size_t len;
	bool truncated;
};

/* How a command ended. */
enum jd_exec_end {
	JD_EXEC_PENDING = 0,	/* not started or still running */
	JD_EXEC_EXITED,		/* exit_code */
	JD_EXEC_SIGNALED,	/* signal */
	JD_EXEC_SPAWN_FAILED,	/* could not start: reason */
	JD_EXEC_NOT_RUN,	/* cancelled before it started */
};

/* What a command's control group used (PROTOCOL.md section 5, `usage`); `has` is false
 * when it ran without one. */
struct jd_exec_usage {
	bool has;
	uint64_t cpu_us, user_us, system_us;	/* CPU time of all its processes */
	uint64_t memory_peak;			/* bytes, 0 unknown */
	uint64_t memory_max;			/* the memory limit in force, 0 none */
	uint64_t oom_kills;			/* processes killed at the memory limit */
	uint64_t pids_max_hits;			/* forks refused at the pids limit */
};

/* A command's result and output.  Written by the loop thread only; the waiting fiber
 * reads it after its event is set (the event's release/acquire hands it over). */
struct jd_exec_result {
	enum jd_exec_end end;
	int exit_code;			/* JD_EXEC_EXITED */
	int signal;			/* JD_EXEC_SIGNALED */
	bool timed_out;			/* stopped by its time limit */
	enum jp_cause stop_cause;	/* JP_CAUSE_CANCEL / _SHUTDOWN if stopped by request */
	char reason[256];		/* JD_EXEC_SPAWN_FAILED: why */
	uint64_t run_ns;		/* wall time from spawn to the end */
	struct jd_exec_usage usage;
	/* The output: a local command's in `log` (both streams, arrival order, the
	 * beginning and the end kept: outlog.h); otherwise, or when recovered from a FINAL
	 * record that carried it, in out/err.  files: it is in the journal's output files
	 * (core/outfile.h), read into `log` when asked for (loaded). */
	struct jd_outlog log;
	struct jd_exec_stream out, err;
	bool files, loaded;
};

/* An exec job's part of struct jd_job (j->exec).  spec: immutable after submit.  res:
 * loop thread.  remote_next: under the backends' hand-off lock (run/backend.c), for a
 * job on its way to Slurm.  backend and the other remote_* members: loop thread. */
struct jd_exec_job {
	struct jd_exec_spec spec;
	struct jd_exec_result res;
	struct jd_job *remote_next;
	uint8_t backend;		/* enum jd_backend_kind (core/config.h); AUTO stays AUTO */
	uint8_t ran_on;			/* JD_BACKEND_LOCAL / _SLURM once decided, else UNSET */
	uint32_t remote_id;		/* the Slurm job id, 0 until submitted */
	char remote_node[64];		/* where Slurm ran it ("" before) */
	char *remote_tag;		/* what names its files in Slurm (NULL before) */
	bool remote_find;		/* recovered without a record of its submit: look
					 * for it in Slurm before submitting (backend.c) */
	void *remote;			/* the backend's state of a remote job (run/backend.c) */
	/* The indices of its needs it was given at its start, need by need in spec order
	 * (spec.need_units of them; NULL before its start), kept for the record; `holding`
	 * while its command runs (run/resources.c gives them back at its end). */
	uint16_t *assigned;
	bool holding;
};

/* jd_exec_job_new: an exec job's part, copied from a parsed spec.  NULL on ENOMEM.
 * jd_exec_job_free: free it (NULL is fine).  Loop thread. */
struct jd_exec_job *jd_exec_job_new(const struct jp_job_spec *sp);
void jd_exec_job_free(struct jd_exec_job *x);

/* jd_exec_job_reset: forget how the last run ended (result, captured output, the
 * resources it was given), for another attempt; the spec stays.  NULL is fine. */
void jd_exec_job_reset(struct jd_exec_job *x);

/* jd_exec_job_mem_bytes: the memory x holds (itself, argv, environment, cwd, stdin,
 * captured output), each allocation with malloc's 16 bytes of overhead. */
size_t jd_exec_job_mem_bytes(const struct jd_exec_job *x);

/* jd_exec_spec_clear: free what a spec owns and zero it. */
void jd_exec_spec_clear(struct jd_exec_spec *s);

/* jd_strv_free: free a NULL-terminated vector of strings and the strings (NULL is fine). */
void jd_strv_free(char **v);

/* jd_exec_record: add exit_code / signal, usage, and backend / slurm_job / node for a
 * job that went to Slurm, to an exec job's record. */
void jd_exec_record(const struct jd_job *j, json_t *rec);

/* jd_exec_output: the `output` reply body for exec job j (new reference; NULL when out
 * of memory), its output read from the files of `of` first if it is there and not yet
 * in memory. */
json_t *jd_exec_output(struct jd_job *j, const struct jd_outfiles *of);

/* jd_exec_output_load: make j's output be in memory (its log), reading it from the files
 * of `of` if need be.  Returns 0 or a JSCHED_E* code (the output then is what memory
 * holds). */
int jd_exec_output_load(struct jd_job *j, const struct jd_outfiles *of);

/* jd_exec_stream_flat: stream s (0 stdout, 1 stderr) of a result as one buffer (new
 * malloc'd copy, NUL-terminated) and whether bytes were dropped.  Returns 0 or
 * JSCHED_ENOMEM. */
int jd_exec_stream_flat(const struct jd_exec_result *r, unsigned s, unsigned char **data,
			size_t *len, bool *truncated);

#endif /* JD_EXEC_JOB_H */
