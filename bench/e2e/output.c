/* bench/e2e/output.c: part 8, output files: what writing commands' output to the
 * journal's output files costs, beside the journal off (output in memory only), in the
 * same run, alternating:
 *
 *   - one command printing 10 MB (`head -c 10000000 /dev/zero`), submitted and waited for,
 *     one at a time: ms per job (the median of 5 per run).  With the default
 *     exec.output_bytes (1 MiB) the files keep the first and the last 512 KiB: every byte
 *     is still written to a file as it arrives, and aged tail files are deleted;
 *   - the counts behind it: bytes written to output files per job, bytes the last job's
 *     files hold at the end (head and two tail files), syncs per job (from the metrics:
 *     journal.output);
 *   - 500 commands printing one line each (`echo hi`), in batches of 100, waited for:
 *     jobs/s (each command's end waits for its files' fdatasync and the directory's fsync,
 *     shared by the commands that end together).
 * With the journal on the commands' ends are also recorded (and synced) in the journal;
 * the baseline keeps nothing, so the ratio is the whole price of durable output.
 * The journal lives in the part's temporary folder, on the machine's disk (/tmp here is
 * ext4, not a tmpfs, where a sync would be free).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/e2e/e2e.h"

/* start_with: a daemon with the journal (its dir inside the daemon's folder) or without. */
static void start_with(struct e2e_daemon *d, bool files)
{
	char members[512];

	e2e_daemon_start(d, "\"journal\": {\"sync\": \"off\"}");
	if (!files)
		return;
	snprintf(members, sizeof(members), "\"journal\": {\"dir\": \"%s/journal\"}", d->dir);
	e2e_daemon_restart(d, members);
}

static struct jsched_spec *spec_of(const char *json)
{
	struct jsched_spec *s = NULL;

	if (jsched_spec_from_json(json, &s) != 0)
		e2e_die("spec %s", json);
	return s;
}

/* big: per-job ms of `n` commands printing 10 MB, one at a time (the median). */
static double big(struct e2e_daemon *d, const struct jsched_spec *spec, int n)
{
	struct jsched_conn *c = e2e_connect(d, "out");
	double v[16];

	for (int i = 0; i < n && i < 16; i++) {
		uint64_t t0 = bench_now_ns(), id;
		struct jsched_result *r = NULL;

		if (jsched_submit(c, spec, &id) != 0 || jsched_wait(c, id, 60000, &r) != 0)
			e2e_die("a 10 MB command did not finish");
		jsched_result_free(r);
		v[i] = (double)(bench_now_ns() - t0) / 1e6;
	}
	jsched_close(c);
	return e2e_median_of(v, (size_t)(n < 16 ? n : 16));
}

/* small: jobs/s of n one-line commands, in batches of 100, waited for. */
static double small(struct e2e_daemon *d, const struct jsched_spec *spec, size_t n)
{
	struct jsched_conn *c = e2e_connect(d, "out");
	uint64_t *ids = calloc(n, sizeof(*ids)), t0 = bench_now_ns();
	double rate;

	if (!ids)
		e2e_die("out of memory");
	e2e_submit_pipelined(c, spec, n, 100, 4, ids);
	e2e_wait_ids(c, ids, n);
	rate = (double)n / ((double)(bench_now_ns() - t0) / 1e9);
	free(ids);
	jsched_close(c);
	return rate;
}

void e2e_output(struct e2e *e)
{
	struct jsched_spec *ten = spec_of("{\"kind\": \"exec\", \"argv\": [\"head\", \"-c\", "
					  "\"10000000\", \"/dev/zero\"]}");
	struct jsched_spec *line = spec_of("{\"kind\": \"exec\", \"argv\": [\"echo\", \"hi\"]}");
	int runs = e->runs_long, per = e->quick ? 2 : 5;
	size_t n_small = e->quick ? 100 : 500;
	double on[16], off[16], son[16], soff[16], written = 0, kept = 0, syncs = 0;
	struct e2e_daemon d;

	for (int r = 0; r < runs; r++) {
		struct jsched_conn *c;
		char path[256];
		struct stat st;

		start_with(&d, true);
		on[r] = big(&d, ten, per);
		c = e2e_connect(&d, "m");
		written = e2e_metrics_number(c, "journal/output/bytes_written") / per;
		syncs = e2e_metrics_number(c, "journal/output/syncs") / per;
		jsched_close(c);
		kept = 0;
		for (int k = 0; k < 3; k++) {
			static const char *const part[] = {"", ".1", ".2"};

			snprintf(path, sizeof(path), "%s/journal/output/%d.out%s", d.dir, per, part[k]);
			kept += stat(path, &st) == 0 ? (double)st.st_size : 0;
		}
		son[r] = small(&d, line, n_small);
		e2e_daemon_stop(&d);
		start_with(&d, false);
		off[r] = big(&d, ten, per);
		soff[r] = small(&d, line, n_small);
		e2e_daemon_stop(&d);
	}
	bench_row(e->rep, "a command printing 10 MB, submit to final", "ms", "output files",
		  e2e_median_of(on, (size_t)runs), "journal off (memory only)",
		  e2e_median_of(off, (size_t)runs));
	bench_row(e->rep, "output file bytes written per 10 MB job", "bytes", "output files",
		  written, "bytes printed", 10000000);
	bench_row(e->rep, "output file bytes kept per 10 MB job", "bytes", "output files", kept,
		  "exec.output_bytes (1 MiB)", 1048576);
	bench_row(e->rep, "output file syncs per 10 MB job", "syncs", "output files", syncs, NULL, 0);
	bench_row(e->rep, "one-line commands, batches of 100", "jobs/s", "output files",
		  e2e_median_of(son, (size_t)runs), "journal off (memory only)",
		  e2e_median_of(soff, (size_t)runs));
	jsched_spec_free(ten);
	jsched_spec_free(line);
	bench_note(e->rep, "output part: \"output files\" is journal.sync always with the output "
		   "written to files as it arrives and synced at each command's end; the baseline "
		   "keeps output in memory only");
}
