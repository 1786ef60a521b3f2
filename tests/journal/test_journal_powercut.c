/* tests/journal/test_journal_powercut.c: no acknowledged record is lost to a power cut.
 *
 * pc_writer runs under powercut_shim.so, which logs every write, sync, create, rename
 * and unlink in the journal's directory and every acknowledgement, in order.  This
 * program replays that log into a model of a disk with a volatile cache (pc_model.h).
 *
 * At many moments (right after every acknowledgement, and others spread over the run)
 * it builds the disk images a cut could leave (all pending writes dropped, all kept, and
 * random mixtures with torn writes, each with both directory states), recovers each
 * with the journal, and checks that every record acknowledged before the cut comes back
 * with its payload (from the snapshot or the log) and that recovery succeeds.
 *
 * The negative control: pc_writer_early, built with a journal that acknowledges before
 * its fdatasync, must be caught by the same check (at least one image loses an
 * acknowledged record).  If it is not, the test is not testing anything, and fails.
 *
 * Both ways of writing are cut: pwrite + fdatasync, and O_DIRECT | O_DSYNC (whole
 * blocks, the last one written again by every flush: the torn images then tear a
 * block that already held acknowledged records), each with its negative control.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/core/journal.h"
#include "tests/journal/pc_model.h"
#include "tests/journal/pc_payload.h"

#define N_RECORDS 700
#define MAX_CUTS 260

static char bindir[PATH_MAX];

/* run_writer: run `writer` under the shim; returns false if it could not write as asked
 * (exit 3: the filesystem refuses O_DIRECT). */
static bool run_writer(const char *writer, const char *base, unsigned seed, bool direct)
{
	char dir[PATH_MAX], ack[PATH_MAX], logp[PATH_MAX], shim[PATH_MAX], exe[PATH_MAX],
		n[32], s[32];
	pid_t pid;
	int st;

	snprintf(dir, sizeof(dir), "%s/j", base);
	snprintf(ack, sizeof(ack), "%s/ack", base);
	snprintf(logp, sizeof(logp), "%s/log", base);
	if (snprintf(shim, sizeof(shim), "%s/powercut_shim.so", bindir) >= (int)sizeof(shim) ||
	    snprintf(exe, sizeof(exe), "%s/%s", bindir, writer) >= (int)sizeof(exe))
		fail_msg("path too long");
	snprintf(n, sizeof(n), "%d", N_RECORDS);
	snprintf(s, sizeof(s), "%u", seed);
	assert_int_equal(mkdir(dir, 0700), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", shim, 1);
		setenv("JSCHED_PC_DIR", dir, 1);
		setenv("JSCHED_PC_LOG", logp, 1);
		setenv("JSCHED_PC_ACK", ack, 1);
		execl(exe, exe, dir, ack, n, s, direct ? "direct" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (direct && WIFEXITED(st) && WEXITSTATUS(st) == 3)
		return false;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s exited with status %d", writer, st);
	return true;
}

/* ---- one image, recovered ---- */

struct check {
	unsigned char *present;
	uint64_t acked;
	bool bad_payload;
};

static int check_cb(void *arg, const struct jd_journal_rec *r)
{
	struct check *c = arg;
	char want[PC_PAYLOAD_MAX];
	size_t len;

	if (r->type != PC_TYPE || r->id == 0 || r->id > N_RECORDS ||
	    (!r->in_snapshot && r->id != r->seq)) {
		c->bad_payload = true;
		return 0;
	}
	len = pc_payload(r->id, want);
	if (r->len != len || memcmp(r->data, want, len) != 0)
		c->bad_payload = true;
	c->present[r->id] = 1;
	return 0;
}

/* recover_image: 0 if every acknowledged record came back intact, else 1 (and the
 * first such failure is described).  Read-only (as --check-journal reads) unless
 * `writable`: then the torn tail is cut as at a start, which costs fsyncs. */
static int recover_image(const char *dir, uint64_t acked, bool writable, char *what,
			 size_t whatlen)
{
	struct check c = {.acked = acked};
	struct jd_journal_opts o = {.dir = dir, .segment_bytes = 64 << 10,
				    .replay_cb = check_cb, .replay_arg = &c,
				    .read_only = !writable};
	struct jd_journal *j;
	char err[512];
	int rc;

	c.present = calloc(N_RECORDS + 1, 1);
	rc = jd_journal_open(&j, &o, NULL, err, sizeof(err));
	if (rc < 0) {
		if (snprintf(what, whatlen, "recovery failed: %s", err) >= (int)whatlen)
			what[whatlen - 1] = 0;
		free(c.present);
		return 1;
	}
	jd_journal_close(j);
	if (c.bad_payload) {
		snprintf(what, whatlen, "a record came back with the wrong payload");
		free(c.present);
		return 1;
	}
	for (uint64_t s = 1; s <= acked; s++)
		if (!c.present[s]) {
			snprintf(what, whatlen, "record %" PRIu64 " (acknowledged up to %" PRIu64
				 ") is lost", s, acked);
			free(c.present);
			return 1;
		}
	free(c.present);
	return 0;
}

/* run: write with `writer` (through O_DIRECT if direct), then cut; returns how many
 * images lost an acknowledged record (or failed to recover), and counts the images (none
 * if the filesystem refuses O_DIRECT). */
static unsigned run(const char *writer, unsigned seed, bool direct, unsigned *images, char *first,
		    size_t firstlen)
{
	char tmpl[] = "/tmp/jsched-powercut-XXXXXX", logp[PATH_MAX], img[PATH_MAX];
	char *base = mkdtemp(tmpl);
	unsigned char *log;
	size_t loglen, nev, used, ncut = 0, acks = 0;
	struct event *ev;
	struct model m = {0};
	unsigned losses = 0, rs = seed * 7u + 1u;
	bool *cut;

	assert_non_null(base);
	*images = 0;
	if (!run_writer(writer, base, seed, direct)) {
		char p[PATH_MAX + 8];

		snprintf(p, sizeof(p), "%s/j", base);
		pc_rm_dir(p);
		rmdir(base);
		return 0;
	}
	snprintf(logp, sizeof(logp), "%s/log", base);
	log = pc_slurp(logp, &loglen);
	ev = pc_parse(log, loglen, &nev, &used);
	assert_int_equal(used, loglen);
	assert_true(nev > 100);
	/* The moments to cut at: just after each acknowledgement, and others spread over
	 * the run, at most MAX_CUTS. */
	cut = calloc(nev + 1, sizeof(*cut));
	for (size_t i = 0; i < nev; i++)
		if (ev[i].op == 'A')
			acks++;
	for (size_t i = 0, a = 0, stride = acks / (MAX_CUTS / 2) + 1; i < nev; i++)
		if (ev[i].op == 'A' && a++ % stride == 0)
			cut[i + 1] = true;
	for (size_t k = 1; k <= MAX_CUTS / 2; k++)
		cut[(nev * k) / (MAX_CUTS / 2 + 1)] = true;
	snprintf(img, sizeof(img), "%s/img", base);
	*images = 0;
	for (size_t i = 0; i <= nev; i++) {
		if (cut[i]) {
			ncut++;
			for (int v = 0; v < 6; v++) {
				char what[256];

				pc_image(&m, img, v % 3, v >= 3, &rs);
				/* Every 8th image is recovered for real (a torn tail cut, a
				 * segment made) and then read again. */
				bool full = *images % 8 == 0;

				if (recover_image(img, m.acked, full, what, sizeof(what)) ||
				    (full && recover_image(img, m.acked, false, what, sizeof(what)))) {
					if (!losses)
						snprintf(first, firstlen, "cut after event %zu of %zu, "
							 "variant %d: %s", i, nev, v, what);
					losses++;
				}
				(*images)++;
				pc_rm_dir(img);
			}
		}
		if (i < nev)
			pc_apply(&m, &ev[i]);
	}
	printf("%s%s: %zu events, %zu acknowledgements, %zu cuts, %u images, %u lost "
	       "acknowledged records or failed to recover\n", writer, direct ? " (O_DIRECT)" : "",
	       nev, acks, ncut, *images, losses);
	pc_free_events(ev, nev);
	pc_free_model(&m);
	free(log);
	free(cut);
	{
		char p[PATH_MAX + 8];

		snprintf(p, sizeof(p), "%s/j", base);
		pc_rm_dir(p);
		snprintf(p, sizeof(p), "%s/ack", base);
		unlink(p);
		unlink(logp);
		rmdir(base);
	}
	return losses;
}

static void powercut(bool direct)
{
	unsigned images, losses;
	char first[512] = "";

	/* Two writer seeds through the page cache; one through O_DIRECT (its writes are
	 * fewer and whole blocks, and each is torn at the moment before its sync). */
	for (unsigned seed = 1; seed <= (direct ? 1u : 2u); seed++) {
		losses = run("pc_writer", seed, direct, &images, first, sizeof(first));
		if (!images) {
			printf("skipped: /tmp refuses O_DIRECT (the journal falls back to "
			       "fdatasync there)\n");
			skip();
		}
		if (losses)
			fail_msg("%u of %u images lost acknowledged records; the first: %s", losses,
				 images, first);
	}
}

static void negative_control(bool direct)
{
	unsigned images, losses;
	char first[512] = "";

	losses = run("pc_writer_early", 1, direct, &images, first, sizeof(first));
	if (!images) {
		printf("skipped: /tmp refuses O_DIRECT\n");
		skip();
	}
	printf("negative control (acknowledging before %s): %u of %u images lost "
	       "records; the first: %s\n", direct ? "the O_DIRECT write" : "fdatasync", losses,
	       images, first);
	if (losses == 0)
		fail_msg("a journal that acknowledges before it syncs was not caught");
}

static void test_powercut(void **state)
{
	(void)state;
	powercut(false);
}

static void test_negative_control(void **state)
{
	(void)state;
	negative_control(false);
}

static void test_powercut_direct(void **state)
{
	(void)state;
	powercut(true);
}

static void test_negative_control_direct(void **state)
{
	(void)state;
	negative_control(true);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_powercut),
		cmocka_unit_test(test_negative_control),
		cmocka_unit_test(test_powercut_direct),
		cmocka_unit_test(test_negative_control_direct),
	};
	ssize_t n = readlink("/proc/self/exe", bindir, sizeof(bindir) - 1);

	(void)argc;
	(void)argv;
	if (n < 0)
		return 1;
	bindir[n] = 0;
	*strrchr(bindir, '/') = 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
