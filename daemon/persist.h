/* daemon/persist.h: the daemon's state in its journal (daemon/core/journal.h), and back.
 *
 * The job table reports every change a client could be told of through its change hook
 * (daemon.c passes them here); each becomes one journal record, appended on the loop
 * thread (a memory copy; the journal's own thread writes and syncs).  With journal.sync
 * "always" every frame to a client (a submit's reply, a status, a wait's answer, an
 * event) is held while records appended before it are not yet durable (the net layer
 * asks through its journal_hold hook, net/net.h, which jd_persist_start installs), until the journal reports them durable through a wake-up of the loop (core/wake.h) that
 * releases every held frame up to the durable position at once: no client hears of a
 * job or a state the journal could still lose; "batch" answers at once and the journal flushes at most every
 * journal.batch_ms (a crash can lose the last batch_ms of acknowledged submits and
 * changes); "off" keeps nothing (the state dies with the process).
 *
 * The records (payloads little-endian; the job id is the record's id):
 *   SUBMIT    uid, gid, submitted_ms, deadline (wall ms, 0: none), client name, the
 *             resolved deps (id, on, any), then the spec as JSON without its deps and
 *             deadline (jp_job_spec_to_json)
 *   QUEUED    (nothing)
 *   RUNNING   started_ms
 *   FINAL     state, cause, finished and started ms, the exec result (end, exit code,
 *             signal, timed out), the reason, the call's value as JSON, the captured
 *             stdout and stderr (bounded by exec.output_bytes, truncation flags kept), or
 *             none with flag 8: the output is in the output files (core/outfile.h),
 *             synced before this record was appended; then, for a command that had a
 *             control group, 1 and its usage (CPU total, user, system, peak memory,
 *             memory limit, OOM kills, pids hits)
 *   FORGOTTEN (nothing): retention forgot the job
 *   CLIENT    a client name's settings set at run time (set_client): name, weight,
 *             max_queued, overflow, max_running, max_processes, memory_max, pids_max,
 *             cpu_milli, backend, then 0 (its own) or 1 (its config entry's again: no
 *             settings of its own); older records end after overflow or after backend
 *   PROCESS   a running command's process group: pid, its start time, the boot id
 *   REMOTE    Slurm took the job: backend (1), Slurm job id, the tag naming its files
 *   NEXT_ID   (snapshots only) the id counter
 *   PROCESS   a running command's process group (pid, its start time, the boot id)
 *   ASSIGN    the indices of the named resources a command was given at its start (the
 *             record's "assigned"; run/resources.h), after its PROCESS
 *   ARRAY_STOP an array's elements not yet made ended: state, cause, finished ms
 *   HOOK      a job's completion hooks claimed or reported (net/op_hook.c): state, exit
 *             code, signal, claimed and finished ms, reason
 * An array's elements (core/array.h) have no SUBMIT or QUEUED records (the parent's SUBMIT,
 * its spec with `array`, stands for them; a snapshot writes their FINAL records after it,
 * from their slots): only RUNNING, PROCESS and FINAL under the element's id.
 * Ids are never reused: recovery sets the next id past every id it saw (a SUBMIT, a
 * FORGOTTEN or a snapshot's NEXT_ID record).
 *
 * Compaction (jd_persist_tick): when the log is over journal.compact_bytes (64 MiB) and
 * over twice the live data, the table is written as a snapshot (per job its SUBMIT, with
 * the spec rebuilt from the job, then QUEUED, RUNNING or FINAL; the names' settings of
 * their own, core/clients.h; the id counter) in slices between the loop's other work;
 * the journal makes it durable and drops the segments it covers.  Replaying the records after the snapshot over it
 * is idempotent (a submit of a known id is skipped, a state only moves forward).
 *
 * Recovery (jd_persist_start, before the socket accepts): every record is replayed into
 * jobs; then jobs with a REMOTE record are watched in Slurm again (jd_backend_reattach),
 * jobs that were running here end failed with cause daemon_restart (the recorded process
 * group killed if it still runs), waiting and queued ones are linked and
 * released into their clients' fair queues again, deadlines still in force (a deadline
 * that passed while the daemon was down expires the job at once), and final ones are
 * retained as they were, in the order they ended.
 */
#ifndef JD_PERSIST_H
#define JD_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "daemon/core/wake.h"

struct jd_daemon;
struct jd_conn;
struct jd_change;
struct jd_journal;

struct jd_persist {
	struct jd_journal *j;		/* NULL: journal.sync "off" */
	bool hold;			/* "always": submit replies wait for durability */
	bool replaying;			/* recovery: changes are not recorded */
	struct jd_wake wake;		/* the journal's notify: durable position, faults */
	bool async_open;		/* wake and the loop handles below are open */
	/* Asking the journal to flush ("always", on demand): once per loop iteration, for
	 * the replies held in it (want_held), and within journal.batch_ms for the records
	 * nobody waits on (lazy_timer). */
	uv_prepare_t prepare;
	uv_timer_t lazy_timer;
	uint64_t want_held, want_asked;
	unsigned want_n;		/* replies held since the last ask */
	unsigned group_n;		/* replies asked for since the journal's last notify */
	uint64_t loop_waits;		/* group flushes the loop waited for awake (prepare_cb) */
	int status;			/* the last fault reported (0: none) */
	char dir[4096];
	uint64_t records_replayed, jobs_recovered, recover_ms;
	uint64_t specs_scanned;		/* submit records recovered by a scan, not a parse */
	uint64_t append_failures;
	unsigned char *scratch;		/* a record's buffer, kept between records */
	size_t scratch_cap;
	uint64_t output_swept;		/* output files of forgotten jobs removed at start */

	/* compaction (jd_persist_tick): a snapshot written in slices */
	uv_timer_t snap_timer;		/* the next slice */
	uint64_t *snap_ids;		/* the jobs to write (NULL: not slicing) */
	size_t snap_n, snap_pos;
	uint64_t snap_from_bytes;	/* jd_journal_log_bytes at the last snapshot */
	uint64_t snap_slice_ns_max;
	uint64_t snapshots;

	/* The flush cycle's hand-off to the loop (metrics journal.cycle): from the journal's
	 * notify to wake_cb, and the release of the held replies there, summed. */
	uint64_t handoffs, handoff_ns, release_ns;
	char cpu_why[160];		/* where the flusher runs, and why (journal.cpu) */
};

/* jd_persist_start: open the journal (journal.dir, created if missing), recover the
 * jobs into the table, start recording, and install the net layer's journal hooks.  After the runner is up (the fair layer
 * exists) and before the loop runs.  Returns 0, or a negative code with the reason
 * (naming the directory, the file and offset of damage) in err. */
int jd_persist_start(struct jd_daemon *d, char *err, size_t errlen);

/* jd_persist_stop: flush and close the journal (every record appended is durable when
 * it returns, unless the journal is failing), send the replies held for it, close the
 * wake-up's handle.  Loop thread, at exit. */
void jd_persist_stop(struct jd_daemon *d);

/* jd_persist_close_output: close the output files (core/outfile.h: their pending syncs
 * done) once no command runs any more: at exit, after the runner stopped and the loop
 * ran its last callbacks.  Loop thread. */
void jd_persist_close_output(struct jd_daemon *d);

/* jd_persist_tick: the 1 s tick: when the log written since the last snapshot is over
 * journal.compact_bytes and over twice the live data, begin a snapshot of the table,
 * written in slices of 1,000 jobs between the loop's other work; collect one that is
 * done.  Loop thread. */
void jd_persist_tick(struct jd_daemon *d);

/* jd_persist_remote_tag: what names this jschedd's jobs in Slurm (their files and their
 * comment; backend_slurm.h): with the journal on, "j" and 16 hex digits of a hash of the
 * host name and the journal directory, the same across restarts, so that a restarted
 * jschedd finds the jobs it handed over; with it off, the instance (nothing is
 * re-attached then).  Before the runner starts. */
void jd_persist_remote_tag(const struct jd_daemon *d, char *out, size_t len);

/* jd_persist_change: the job table's change hook's part: one record. */
void jd_persist_change(struct jd_daemon *d, const struct jd_change *ch);

/* jd_persist_metrics: the metrics document's "journal" member (new reference): the
 * directory, sync mode, records appended, durable position, flushes, syncs, bytes
 * written, failures, the fault now (or null), recovery's figures. */
json_t *jd_persist_metrics(const struct jd_daemon *d);

/* jd_persist_check: `jschedd --check-journal DIR`: read the journal without changing
 * it, print what it holds (records, jobs by state, a torn tail) or the damage, and
 * return the exit status (0 sound, 1 damaged or unreadable). */
int jd_persist_check(const char *dir);

#endif /* JD_PERSIST_H */
