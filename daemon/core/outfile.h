/* daemon/core/outfile.h: commands' output in files in the journal directory, written as
 * it arrives, so that a crash loses none of it.
 *
 * Files (in JOURNAL_DIR/output/, created 0700 with the journal), per exec job and stream
 * ("out" for stdout, "err" for stderr; a stream that wrote nothing has none, so a job
 * without output costs nothing here):
 *   <id>.out              the head: the stream's first limit/2 bytes
 *   <id>.out.1, .out.2    the tail, in two files taking turns (below)
 *   <id>.value            a call job's large result, plain text (jd_outfiles_value_write)
 * Each file: a 32-byte header (u32 crc | "JSOF" | u32 stream | u32 part | u64 job id |
 * u64 limit), then one record per read from the command's pipe (8-byte aligned; the crc,
 * CRC-32C, covers bytes 4 .. 32+len):
 *   u32 crc | u32 len | u32 "JSOR" | u32 0 | u64 seq | u64 off | len bytes | zeros to 8
 * `off` is the bytes' offset in their stream, `seq` their place in the arrival order of
 * both streams (core/outlog.h): reading the files back and ordering the records by seq
 * gives the merged view in the order the bytes arrived.
 *
 * Bounds.  The files keep what the memory log keeps (outlog.h): each stream's first
 * limit/2 bytes and its last limit - limit/2 (the tail's share).  Tail records go to the
 * current tail file; once it holds the tail's share, the other tail file (the older) is
 * deleted and the next records start it again, so the two always hold the last share of
 * the stream and a stream's files hold at most 1.5 x limit plus 32 bytes a record,
 * however much the command writes.  Deleting rather than punching holes: on ext4 a
 * punch writes the dirty pages of its range out first (the loop thread would wait for
 * the disk, and write what it then drops); an unlinked file's dirty pages are dropped.
 * Reading takes every record of the three files, in seq order, through the memory log,
 * which keeps exactly the head and the tail's share; a record torn by a power cut fails
 * its checksum and is skipped.
 *
 * Durability.  Records are written (pwrite, on the loop thread: into the page cache, no
 * sync) as the bytes arrive, so a kill -9 of the daemon loses none of what the files
 * hold.  When a command ends, its files are fdatasync'ed and the directory fsync'ed by
 * this module's thread (the ends of many commands share one directory sync) before the
 * command's end is reported (the callback of jd_outfile_close); only then is the job's
 * final state recorded in the journal, so an acknowledged final state never outlives its
 * output at a power cut.  While a command runs nothing is synced: a power cut keeps what
 * the kernel had written back by then.
 *
 * Threads: the loop thread creates, writes, closes and removes; the module's thread
 * syncs, closes and unlinks.
 */
#ifndef JD_OUTFILE_H
#define JD_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jd_outlog;
struct jd_outfiles;
struct jd_outfile;

/* jd_outfiles_open: the output directory (journal_dir/output, created if missing, the
 * creation fsync'ed) and its thread.  Returns 0 with *out set, or JSCHED_EIO (err names
 * the path and the reason) or JSCHED_ENOMEM. */
int jd_outfiles_open(struct jd_outfiles **out, const char *journal_dir, char *err, size_t errlen);

/* jd_outfiles_close: finish what is queued (syncs, removals), stop the thread, free.
 * After every command's files were closed.  NULL is fine. */
void jd_outfiles_close(struct jd_outfiles *o);

/* jd_outfiles_path: the output directory. */
const char *jd_outfiles_path(const struct jd_outfiles *o);

/* jd_outfile_new: the files of job `id`'s command, keeping `limit` bytes per stream
 * (created at the first byte of a stream); `again`: the job ran before (a retry), its
 * files are deleted first.  NULL when out of memory. */
struct jd_outfile *jd_outfile_new(struct jd_outfiles *o, uint64_t id, uint64_t limit, bool again);

/* jd_outfile_write: n bytes of stream s that arrived at (seq, off).  A failing write
 * (a full disk) marks the files failed and logs once; the output stays in memory. */
void jd_outfile_write(struct jd_outfile *f, unsigned s, uint64_t seq, uint64_t off,
		      const void *p, size_t n);

/* jd_outfile_failed: whether a write failed (the files do not hold the output). */
bool jd_outfile_failed(const struct jd_outfile *f);

/* jd_outfile_wrote: whether any file was created. */
bool jd_outfile_wrote(const struct jd_outfile *f);

/* jd_outfile_close: the command has ended: hand the files to the thread, which syncs
 * them and the directory, closes them and calls done(arg, rc) from its thread, rc 0
 * when the files are durable and hold the output, else JSCHED_EIO; at once on the
 * caller's thread (rc 0) when nothing was written.  Frees f. */
void jd_outfile_close(struct jd_outfile *f, void (*done)(void *arg, int rc), void *arg);

/* jd_outfiles_remove: delete job id's files (queued to the thread). */
void jd_outfiles_remove(struct jd_outfiles *o, uint64_t id);

/* jd_outfiles_load: read job id's files into the empty log l (its limit from the files).
 * Returns 1 if a file was found, 0 if none (no output), or JSCHED_ENOMEM / JSCHED_EIO. */
int jd_outfiles_load(const struct jd_outfiles *o, uint64_t id, struct jd_outlog *l);

/* jd_outfiles_sync: make job id's files and the directory durable now (recovery, for
 * a command that was running at the crash).  Returns 0 or JSCHED_EIO.  Blocks. */
int jd_outfiles_sync(struct jd_outfiles *o, uint64_t id);

/* jd_outfiles_sweep: delete the files of every job for which keep(arg, id) is false
 * (recovery: jobs forgotten while their files were being removed), results' too.  Returns how many
 * files were deleted. */
size_t jd_outfiles_sweep(struct jd_outfiles *o, bool (*keep)(void *arg, uint64_t id), void *arg);

/* Large results (core/jobs.h, value_file): a call job's result text in "<id>.value",
 * written whole by jd_outfiles_value_write (loop thread: into the page cache, no sync;
 * the journal's FINAL record holds the durable copy, and recovery writes the file again
 * from it), read back by jd_outfiles_value_read (n bytes at off into buf; returns the
 * bytes read, or JSCHED_EIO), removed by jd_outfiles_remove_value (queued to the
 * thread).  Returns 0 or JSCHED_EIO (logged). */
int jd_outfiles_value_write(struct jd_outfiles *o, uint64_t id, const char *text, size_t len);
long jd_outfiles_value_read(const struct jd_outfiles *o, uint64_t id, uint64_t off, void *buf,
			    size_t n);
void jd_outfiles_remove_value(struct jd_outfiles *o, uint64_t id);

/* jd_outfiles_stats: counters for the metrics. */
struct jd_outfiles_stats {
	uint64_t files, bytes_written, syncs, tails_dropped, removed, failures;
};
void jd_outfiles_stats(struct jd_outfiles *o, struct jd_outfiles_stats *st);

#endif /* JD_OUTFILE_H */
