/* daemon/core/journal.h: the journal, a redo log with group commit, and its snapshots.
 *
 * What it is.  An append-only sequence of records, each (type, job id, sequence number,
 * payload) with a CRC-32C, kept in a directory as preallocated segment files plus at
 * most one snapshot.  It knows nothing of jobs, sockets or the daemon: the caller gives
 * it opaque payloads and gets them back, in order, when it opens the directory again.
 *
 * Threads.  One caller thread (the daemon's loop thread) appends records; jd_journal_append
 * only copies into a memory buffer (a short mutex, never I/O).  A flusher thread of the
 * journal's own takes everything that arrived since its last flush, writes it with one
 * pwrite and makes it durable with one fdatasync (or writes it through O_DSYNC, or in
 * whole blocks through O_DIRECT | O_DSYNC: enum jd_journal_io), then
 * publishes the durable sequence number and calls opts.notify_cb (from the flusher
 * thread: the daemon wires it to an eventfd write, core/wake.h).  The next flush
 * starts as soon as the last one ends, so under load every flush carries all the records of the submitters
 * that waited on the previous one ("group commit").  The caller thread never fsyncs.
 *
 * On disk (DIR):
 *   lock                  flock'ed while a journal is open (one daemon per directory)
 *   seg-<16 hex digits>   segments, by index: a 4 KiB header block, then records
 *   snap-<16 hex digits>  a snapshot covering every record up to that sequence number
 *   *.tmp                 a segment being preallocated or a snapshot being written:
 *                         removed at open
 * A segment is created at its full size and zeroed (off the caller's thread, ahead of
 * need), fsynced, renamed into place and the directory fsynced, so a flush never grows
 * a file (which costs a metadata journal commit in every fdatasync).  Its header is
 * written when it becomes the current segment, with the exact length of valid data in
 * the previous one ("prev_end"): bytes after that in the previous segment (the rest of
 * its zeros, or a write that failed) are not part of the log.
 *
 * Each flush is one "flush block", 32-byte aligned: a 32-byte header (u32 crc of the
 * header | u32 magic "JSFL" | u32 length of the records | u32 CRC-32C of the records |
 * u64 first seq | u64 last seq), the records, zero padding to 32.  A record
 * (little-endian, 8-byte aligned; its CRC covers bytes 4 .. 32+len):
 *   u32 crc | u32 len | u8 type | u8 flags (0) | u16 magic 0x524a | u32 0 |
 *   u64 seq | u64 id | len bytes of payload | zero padding to 8
 * Sequence numbers start at 1 and rise by one per record, across segments and restarts.
 *
 * Recovery (jd_journal_open): the newest complete snapshot is read, then the records of
 * the segments with a higher sequence number, each handed to replay_cb in order.  Only
 * the last flush can be torn by a crash (each flush starts after the previous one's
 * sync returned), and a flush header is never split across 512-byte sectors (it is
 * 32-byte aligned), so in the last segment: an all-zero flush header (with nothing but
 * zeros one JD_JOURNAL_FLUSH_MAX past it), or a flush whose checksum fails with nothing
 * but zeros after it, is where a crash interrupted the last flush (nothing in it was
 * acknowledged).  That tail is zeroed and fsynced, and appending continues there.  Any
 * other damage (a bad flush header, a checksum failing in a flush that others follow, a
 * gap in the sequence, a segment missing between the snapshot and the last one) fails
 * the open with the file and the offset in the message: acknowledged records are never
 * dropped silently.  (Limit: damage to the last flush of all cannot be told from a tear,
 * and is cut as one.)  Recovery maps each segment and checks it in one pass; it parses
 * no payload (that is the caller's, who may keep them unparsed until needed).
 *
 * Faults.  A write or fsync that fails (a full disk, EIO, a file-size limit) puts the
 * journal in an error state (jd_journal_status) that the caller reports to new writers;
 * the records not yet durable stay in memory and the flusher retries every
 * JD_JOURNAL_RETRY_MS, into a fresh segment (after a failed fsync a file's pages may
 * have been dropped by the kernel, so the failed one is never written again).  When a
 * flush succeeds, the state clears and notify_cb says so.  Nothing is reported durable
 * that was not.
 *
 * Snapshots.  jd_journal_snap_begin notes the last sequence number appended; the caller
 * then adds records describing the whole state in slices (jd_journal_snap_add, between
 * its other work), and commits.  A thread writes the snapshot to snap-N.tmp as the
 * slices come, and at commit waits until the records it covers are durable, fsyncs it,
 * renames it, fsyncs the directory, deletes older snapshots and the segments it covers
 * entirely, and calls notify_cb.  The caller's state can change between slices: the
 * snapshot is "fuzzy" (a slice may already show changes whose records come after N),
 * so replaying the records after N on top of it must be idempotent, which the job
 * table's records are (a state only moves forward; a submit of a known id is skipped).
 */
#ifndef JD_JOURNAL_H
#define JD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JD_JOURNAL_HDR 32u			/* bytes of a record header */
#define JD_JOURNAL_FLUSH_MAX (4u << 20)		/* bytes written per fdatasync, at most */
#define JD_JOURNAL_HEIR_WAIT_MS 3000	/* a lock held by a process a gone jschedd started:
					 * how long open waits for it (journal.c) */
#define JD_JOURNAL_RECORD_MAX (JD_JOURNAL_FLUSH_MAX - 128u)	/* payload bytes */
#define JD_JOURNAL_SEG_HDR 4096u		/* a segment's header block */
#define JD_JOURNAL_SEGMENT_DEFAULT (64u << 20)	/* bytes per segment file */
#define JD_JOURNAL_RETRY_MS 100u		/* a failed flush is retried after this */
#define JD_JOURNAL_GATHER_MAX_US 500u		/* on_demand: the longest wait for waiters */
#define JD_JOURNAL_BLOCK 4096u			/* IO_DIRECT: the unit (and alignment) of a write */

enum jd_journal_sync {
	JD_JOURNAL_SYNC_ALWAYS,	/* flush as soon as there is something to flush */
	JD_JOURNAL_SYNC_BATCH,	/* flush at most every batch_ms */
};

enum jd_journal_io {
	JD_JOURNAL_IO_FDATASYNC,	/* pwrite, then fdatasync */
	JD_JOURNAL_IO_DSYNC,		/* pwrite on a descriptor opened O_DSYNC */
	JD_JOURNAL_IO_DIRECT,		/* pwrite of whole blocks (JD_JOURNAL_BLOCK) on a
					 * descriptor opened O_DIRECT | O_DSYNC, from an
					 * aligned buffer: the block holding the end of the
					 * log is written again, whole, by the next flush.  A
					 * filesystem that refuses O_DIRECT (tmpfs, some
					 * overlays) gets FDATASYNC instead (the stats say
					 * which is in use) */
};

/* One record, as recovery hands it back.  `data` is valid during the callback only. */
struct jd_journal_rec {
	unsigned type;		/* 1..255, the caller's */
	uint64_t seq;		/* in the journal (or in the snapshot, with in_snapshot) */
	uint64_t id;		/* the caller's (a job id, or 0) */
	const void *data;
	size_t len;
	bool in_snapshot;
};

/* jd_journal_replay_fn: one recovered record; return 0 to go on, or a negative code to
 * stop the open (which then fails with that code). */
typedef int (*jd_journal_replay_fn)(void *arg, const struct jd_journal_rec *r);

struct jd_journal_opts {
	const char *dir;		/* created (0700, parents too) if missing */
	enum jd_journal_sync sync;
	unsigned batch_ms;		/* SYNC_BATCH: the longest a record waits for a flush */
	enum jd_journal_io io;
	uint64_t segment_bytes;		/* 0: JD_JOURNAL_SEGMENT_DEFAULT; at least 2 * FLUSH_MAX
					 * is sensible, at least SEG_HDR + 4096 is required */
	/* notify_cb: the durable position, the error state or a snapshot's state changed.
	 * Called from the journal's threads, never from jd_journal_append; it must only
	 * wake the caller's thread (the daemon: jd_wake_send). */
	void (*notify_cb)(void *arg);
	void *notify_arg;
	/* on_demand (SYNC_ALWAYS): flush only when a record is asked for (jd_journal_want),
	 * a chunk of JD_JOURNAL_FLUSH_MAX is full, or at kick and close; records nobody
	 * asked for wait, unflushed, for the next flush (the caller bounds how long, by
	 * asking for them in time).  The caller asks once per batch of work (the daemon:
	 * once per loop iteration, for the replies it holds), so everything that arrived in
	 * one batch goes in one flush, and records no one waits on (a job's later states)
	 * never cost a flush of their own.  false: every record as soon as the flusher is
	 * free. */
	bool on_demand;
	/* pin_flusher: the flusher runs on flusher_cpu only (the daemon: the CPU that takes
	 * the journal disk's interrupts, core/diskcpu.h); false: wherever the kernel puts it.
	 * A CPU the process may not use is ignored (jd_journal_stats says where it runs). */
	bool pin_flusher;
	int flusher_cpu;
	/* gather_spin (on_demand): while it gathers after a flush for two waiters or more,
	 * the flusher polls for them (sched_yield between looks) instead of sleeping until
	 * they ask, as long as the gather before ended with every waiter back in time (a
	 * gather that runs out of time would poll for all of it: that one sleeps).  false:
	 * it sleeps on every gather. */
	bool gather_spin;
	jd_journal_replay_fn replay_cb;	/* may be NULL: records are then only checked */
	void *replay_arg;
	bool read_only;			/* check only (--check-journal): nothing is written,
					 * no flusher started, a torn tail is reported, not cut */
};

/* What the open found (also filled when it fails, as far as it got). */
struct jd_journal_info {
	uint64_t snapshot_seq;		/* 0: no snapshot */
	uint64_t snapshot_records;
	uint64_t segments;
	uint64_t records;		/* replayed from segments (after the snapshot) */
	uint64_t last_seq;
	uint64_t bytes;			/* of valid records in segments */
	bool torn_tail;			/* a torn last flush was found (and cut, unless read-only) */
	char tail_file[64];		/* where, if torn_tail */
	uint64_t tail_offset;
};

struct jd_journal;

/* jd_journal_open: open (creating if need be) the journal in opts->dir, recover it
 * through opts->replay_cb, and start its flusher (unless read_only).  Returns 0 with
 * *out set, or a negative code (JSCHED_EIO for a directory that cannot be created,
 * written or locked, or a journal that is damaged; JSCHED_ENOMEM; a code from
 * replay_cb) with the reason, naming the path (and offset), in err. */
int jd_journal_open(struct jd_journal **out, const struct jd_journal_opts *opts,
		    struct jd_journal_info *info, char *err, size_t errlen);

/* jd_journal_append: add a record (type 1..255, payload up to JD_JOURNAL_RECORD_MAX).
 * Returns its sequence number (> 0), or a negative code: JSCHED_ELIMIT_EXCEEDED (too
 * large), JSCHED_EINVAL, JSCHED_ENOMEM.  Never blocks on I/O.  Caller's thread. */
int64_t jd_journal_append(struct jd_journal *j, unsigned type, uint64_t id, const void *p,
			  size_t n);

/* jd_journal_append2: the same, with the payload in two pieces (a fixed header and a
 * text, say), saving the caller a copy. */
int64_t jd_journal_append2(struct jd_journal *j, unsigned type, uint64_t id, const void *p1,
			   size_t n1, const void *p2, size_t n2);

/* jd_journal_last: the sequence number of the last record appended.  Caller's thread. */
uint64_t jd_journal_last(const struct jd_journal *j);

/* jd_journal_last_io_ns: how long the last flush's write and sync took (ns; 0 before
 * the first).  Any thread. */
uint64_t jd_journal_last_io_ns(const struct jd_journal *j);

/* jd_journal_durable: every record up to this sequence number is durable.  Any thread. */
uint64_t jd_journal_durable(const struct jd_journal *j);

/* jd_journal_status: 0, or the negative code of the fault that stops records from
 * becoming durable now (JSCHED_EJOURNAL), with its reason (strerror of the failing call
 * and the file) in why.  Any thread. */
int jd_journal_status(struct jd_journal *j, char *why, size_t whylen);

/* jd_journal_want: `waiters` (replies, say; 0 for none) wait for every record up to seq
 * to be durable: flush them as soon as the flusher is free (with on_demand; without,
 * they are flushed anyway).  With on_demand the flusher also gathers: right after a
 * flush, while fewer waiters asked than there were in that flush and in its wake (they
 * are likely to come back at once: submitters waiting on their replies), it waits for
 * them up to twice the last flush's time (at most JD_JOURNAL_GATHER_MAX_US; one flush's
 * time cut a third of the gathers short at 8 submitters), so that one flush carries
 * them all instead of two flushes taking turns.  Returns whether the flusher waits for
 * no one more: no gather is under way, or this demand made its count (the flush it asks
 * for is taken as soon as the flusher is free).  Caller's thread; a mutex and, if the
 * flusher sleeps and is due, one wake-up. */
bool jd_journal_want(struct jd_journal *j, uint64_t seq, unsigned waiters);

/* jd_journal_kick: flush now (SYNC_BATCH: without waiting out batch_ms). */
void jd_journal_kick(struct jd_journal *j);

/* jd_journal_close: flush what was appended (waiting for it, unless the journal is in
 * the error state), stop the threads (a snapshot in progress is abandoned), close
 * and free.  Returns 0 if everything appended is durable, else the fault's code. */
int jd_journal_close(struct jd_journal *j);

/* Counters, for metrics and the benchmark.  Any thread (relaxed reads). */
struct jd_journal_stats {
	uint64_t appended, durable_seq, flushes, bytes_written, syncs, failures,
		segments_created, segments_removed, snapshots;
	uint64_t flush_ns_max;		/* the longest write + sync */
	uint64_t disk_bytes;		/* segments and snapshot on disk, now */
	/* Where the flusher's time goes, summed over its flushes: the write + sync itself
	 * (io_ns), waiting for waiters to come back (gather_ns), and the time from a
	 * flush's end to the next flush's start (cycle_gap_ns, gathering included: the
	 * hand-off to the caller, its replies and the next demand). */
	uint64_t io_ns, gather_ns, cycle_gap_ns;
	/* The flusher's wake-ups by a demand (jd_journal_want): how many, and the time from
	 * the demand to the flusher taking the chunk, summed. */
	uint64_t wakes, wake_ns;
	/* Gathers begun (gathers), and those that ran out of time before every waiter
	 * came back (gathers_late): see jd_journal_want. */
	uint64_t gathers, gathers_late;
	uint64_t gathers_spun;		/* gathers polled for (gather_spin), not slept */
	uint64_t notified_ns;		/* CLOCK_MONOTONIC of the last notify_cb (0: none) */
	enum jd_journal_io io;		/* the way of writing in use (IO_DIRECT may have
					 * fallen back to IO_FDATASYNC) */
	int flusher_cpu;		/* the CPU the flusher is pinned to, or -1 */
};
void jd_journal_stats(struct jd_journal *j, struct jd_journal_stats *st);

/* ---- snapshots ---- */

enum jd_journal_snap_state {
	JD_SNAP_NONE,		/* no snapshot in progress */
	JD_SNAP_WRITING,	/* begun, taking slices */
	JD_SNAP_COMMITTING,	/* committed, being made durable */
	JD_SNAP_DONE,		/* durable and in place; collect with jd_journal_snap_finish */
	JD_SNAP_FAILED,		/* abandoned (I/O error); the journal is unaffected */
};

/* jd_journal_snap_begin: start a snapshot covering every record appended so far.
 * Returns 0, JSCHED_EAGAIN if one is in progress, or another negative code. */
int jd_journal_snap_begin(struct jd_journal *j);

/* jd_journal_snap_add: one record of the state (same types as the log's, or the
 * caller's own).  Buffered; every JD_JOURNAL_FLUSH_MAX bytes the buffer goes to the
 * snapshot's thread.  Returns 0 or a negative code (then abandon with snap_finish). */
int jd_journal_snap_add(struct jd_journal *j, unsigned type, uint64_t id, const void *p,
			size_t n);

/* jd_journal_snap_commit: the state is complete; make it durable and replace the
 * segments it covers (asynchronously: notify_cb fires when the state changes). */
int jd_journal_snap_commit(struct jd_journal *j);

/* jd_journal_snap_state: where the snapshot is.  Caller's thread. */
enum jd_journal_snap_state jd_journal_snap_state(struct jd_journal *j);

/* jd_journal_snap_finish: after DONE or FAILED (or to abandon one being written), join
 * the snapshot's thread and return to NONE.  Returns 0 if it was DONE, else the code of
 * what failed (or JSCHED_ECANCELLED for one abandoned). */
int jd_journal_snap_finish(struct jd_journal *j);

/* jd_journal_disk_bytes: bytes of segments and snapshot on disk, and the part of
 * the segments written so far (for a compaction policy).  Any thread. */
uint64_t jd_journal_log_bytes(struct jd_journal *j);

#endif /* JD_JOURNAL_H */
