/* tests/daemon/test_daemon_powercut.c: no acknowledged job is lost to a power cut, for
 * the whole daemon under load.
 *
 * The real jschedd runs under tests/journal/powercut_shim.so (LD_PRELOAD), which logs,
 * in the order the calls returned, every create, write, sync, rename and unlink in its
 * journal directory.  Three client threads submit noops one at a time and a fourth in
 * batches of 20, each on its own connection; at every reply a thread notes the ids it
 * was given and the log's length then: the daemon replied only after the records it
 * waited for were synced, and the shim logs a sync before the call returns, so every
 * cut of the disk at or after that point of the log must still hold those jobs.  Then
 * the daemon is killed (SIGKILL).
 *
 * The checker replays the log into the disk model of tests/journal/pc_model.h and, at
 * the log position of many replies (and at moments spread over the run), builds six
 * images a power cut could leave (pending writes dropped, kept, or dropped / kept / torn
 * at 512-byte sectors at random, each with the directory as of its last fsync and as it
 * is), recovers each with the journal (read only, as --check-journal) and requires the
 * submit record of every acknowledged job; two images are also started by a real
 * jschedd, which must answer every acknowledged id.  Small segments
 * (journal.segment_bytes 256 KiB) so that the run rolls over and the images stay small.
 *
 * Negative control: the same run with journal.sync "batch" and a 2 s batch (a reply
 * goes out before its records are written) must lose acknowledged jobs in some image,
 * and the same check must say so; if it did not, the test would prove nothing.
 * Skipped in the ASan build (the shim cannot sit under ASan's runtime in the daemon).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/core/journal.h"
#include "jsched/jsched.h"
#include "tests/common/proc.h"
#include "tests/daemon/harness.h"
#include "tests/journal/pc_model.h"

#define SINGLES 3	/* threads submitting one job at a time */
#define PER_SINGLE 120
#define BATCHES 8	/* of 20, by a fourth thread */
#define BATCH 20
#define MAX_ACKS (SINGLES * PER_SINGLE + BATCHES)
#define MAX_ID 4096
#define MAX_CUTS 200
#define R_SUBMIT 1	/* daemon/persist.c's record type of a submit */

struct ack {
	uint64_t logpos;	/* the log's length when the reply came */
	uint64_t ids[BATCH];
	unsigned n;
};

struct run {
	struct jdt *t;
	char logp[PATH_MAX];
	pthread_mutex_t mu;
	struct ack acks[MAX_ACKS];
	size_t nacks;
};

static uint64_t log_len(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void note(struct run *r, const uint64_t *ids, unsigned n)
{
	uint64_t pos = log_len(r->logp);

	pthread_mutex_lock(&r->mu);
	assert_true(r->nacks < MAX_ACKS);
	r->acks[r->nacks].logpos = pos;
	memcpy(r->acks[r->nacks].ids, ids, n * sizeof(*ids));
	r->acks[r->nacks++].n = n;
	pthread_mutex_unlock(&r->mu);
}

static void *single_main(void *arg)
{
	struct run *r = arg;
	struct jsched_conn *c = jdt_connect(r->t, NULL);
	struct jsched_spec *sp;

	assert_int_equal(jsched_spec_call("noop", NULL, &sp), 0);
	for (int i = 0; i < PER_SINGLE; i++) {
		uint64_t id;

		assert_int_equal(jsched_submit(c, sp, &id), 0);
		note(r, &id, 1);
	}
	jsched_spec_free(sp);
	jsched_close(c);
	return NULL;
}

static void *batch_main(void *arg)
{
	struct run *r = arg;
	struct jsched_conn *c = jdt_connect(r->t, NULL);
	struct jsched_spec *sp;
	const struct jsched_spec *specs[BATCH];

	assert_int_equal(jsched_spec_call("noop", NULL, &sp), 0);
	for (int i = 0; i < BATCH; i++)
		specs[i] = sp;
	for (int b = 0; b < BATCHES; b++) {
		uint64_t ids[BATCH];

		assert_int_equal(jsched_submit_batch(c, specs, BATCH, ids), 0);
		note(r, ids, BATCH);
	}
	jsched_spec_free(sp);
	jsched_close(c);
	return NULL;
}

static int cmp_ack(const void *a, const void *b)
{
	const struct ack *x = a, *y = b;

	return x->logpos < y->logpos ? -1 : x->logpos > y->logpos;
}

/* ---- one image ---- */

static int submit_cb(void *arg, const struct jd_journal_rec *r)
{
	unsigned char *present = arg;

	if (r->type == R_SUBMIT && r->id < MAX_ID)
		present[r->id] = 1;
	return 0;
}

/* check_image: 0 if every job in acked[0..n) has its submit record in the journal at
 * dir, else 1 with the first failure described. */
static int check_image(const char *dir, const unsigned char *acked, char *what, size_t len)
{
	unsigned char present[MAX_ID] = {0};
	struct jd_journal_opts o = {.dir = dir, .replay_cb = submit_cb, .replay_arg = present,
				    .read_only = true};
	struct jd_journal *j;
	char err[512];

	if (jd_journal_open(&j, &o, NULL, err, sizeof(err)) < 0) {
		if (snprintf(what, len, "recovery failed: %s", err) >= (int)len)
			what[len - 1] = 0;
		return 1;
	}
	jd_journal_close(j);
	for (uint64_t id = 1; id < MAX_ID; id++)
		if (acked[id] && !present[id]) {
			snprintf(what, len, "acknowledged job %" PRIu64 " is lost", id);
			return 1;
		}
	return 0;
}

/* daemon_on_image: a real jschedd started on a copy of image `img` answers every
 * acknowledged id (status ok).  Returns the ids it does not know. */
static unsigned daemon_on_image(const char *img, const unsigned char *acked)
{
	struct jdt d;
	struct jsched_conn *c;
	char members[PATH_MAX + 200], cmd[3 * PATH_MAX];
	unsigned missing = 0;

	jdt_start(&d, "\"journal\": {\"sync\": \"off\"}");
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s/j'", img, d.dir);
	assert_int_equal(system(cmd), 0);
	snprintf(members, sizeof(members), "\"journal\": {\"dir\": \"%s/j\", \"segment_bytes\": "
		 "262144}", d.dir);
	jdt_write_config(&d, members);
	jdt_kill9(&d);
	jdt_restart(&d);
	c = jdt_connect(&d, NULL);
	for (uint64_t id = 1; id < MAX_ID; id++)
		if (acked[id]) {
			json_t *r = jdt_req(c, "{\"op\": \"status\", \"job\": %" PRIu64 "}", id);

			missing += jdt_err_code(r)[0] != 0;
			json_decref(r);
		}
	jsched_close(c);
	assert_int_equal(jdt_stop(&d, SIGTERM), 0);
	return missing;
}

/* powercut: one run of the daemon with `journal` members under load, then the images;
 * returns how many lost an acknowledged job. */
static unsigned powercut(const char *journal, unsigned *images, char *first, size_t firstlen)
{
	static struct run r;
	char base[] = "/tmp/jsched-dpc-XXXXXX", jdir[PATH_MAX], img[PATH_MAX + 8],
		shim[PATH_MAX], members[2 * PATH_MAX];
	struct jdt t;
	pthread_t th[SINGLES + 1];
	unsigned char *log, acked[MAX_ID];
	size_t loglen, used, nev, next_ack = 0, ncut = 0;
	struct event *ev;
	struct model m = {0};
	uint64_t *end;
	bool *cut;
	unsigned losses = 0, seed = 7, daemon_checks = 0;

	*images = 0;
	if (strstr(jtc_build_dir(), "address")) {
		/* Preloaded before ASan's runtime, the shim's open/openat wrappers run before
		 * it is set up, and the daemon dies at start. */
		printf("skipped: the power-cut shim cannot sit under ASan in the daemon (it "
		       "runs in the release and TSan builds)\n");
		return 0;
	}
	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.mu, NULL);
	assert_non_null(mkdtemp(base));
	snprintf(jdir, sizeof(jdir), "%s/j", base);
	snprintf(r.logp, sizeof(r.logp), "%s/log", base);
	snprintf(shim, sizeof(shim), "%s/tests/journal/powercut_shim.so", jtc_build_dir());
	/* Started once without the journal, to have its directory; then on the journal
	 * under the shim. */
	jdt_start(&t, "\"journal\": {\"sync\": \"off\"}");
	snprintf(members, sizeof(members), "\"journal\": {\"dir\": \"%s\", \"segment_bytes\": "
		 "262144%s}", jdir, journal);
	jdt_write_config(&t, members);
	jdt_kill9(&t);
	setenv("LD_PRELOAD", shim, 1);
	setenv("JSCHED_PC_DIR", jdir, 1);
	setenv("JSCHED_PC_LOG", r.logp, 1);
	jdt_restart(&t);
	unsetenv("LD_PRELOAD");
	unsetenv("JSCHED_PC_DIR");
	unsetenv("JSCHED_PC_LOG");
	r.t = &t;
	for (int i = 0; i < SINGLES; i++)
		assert_int_equal(pthread_create(&th[i], NULL, single_main, &r), 0);
	assert_int_equal(pthread_create(&th[SINGLES], NULL, batch_main, &r), 0);
	for (int i = 0; i <= SINGLES; i++)
		pthread_join(th[i], NULL);
	jdt_kill9(&t); /* the log is complete up to here */

	log = pc_slurp(r.logp, &loglen);
	ev = pc_parse(log, loglen, &nev, &used);
	assert_true(nev > 5); /* at least the segments made */
	qsort(r.acks, r.nacks, sizeof(r.acks[0]), cmp_ack);
	/* end[i]: the log's length after event i; the cut after event i sees the replies
	 * noted at a length up to it. */
	end = calloc(nev + 1, sizeof(*end));
	cut = calloc(nev + 1, sizeof(*cut));
	assert_non_null(end);
	assert_non_null(cut);
	for (size_t i = 0, off = 0; i < nev; i++) {
		off += 24 + strlen(ev[i].n1) + ev[i].len; /* as pc_parse read it */
		end[i] = off;
	}
	/* The moments: at the log position of every k-th reply, and spread over the run. */
	for (size_t a = 0, stride = r.nacks / (MAX_CUTS / 2) + 1; a < r.nacks; a += stride) {
		size_t i = 0;

		while (i < nev && end[i] <= r.acks[a].logpos)
			i++;
		cut[i] = true; /* after events 0..i-1 */
	}
	for (size_t k = 1; k <= MAX_CUTS / 2; k++)
		cut[(nev * k) / (MAX_CUTS / 2 + 1)] = true;
	cut[nev] = true;
	memset(acked, 0, sizeof(acked));
	snprintf(img, sizeof(img), "%s/img", base);
	*images = 0;
	for (size_t i = 0; i <= nev; i++) {
		uint64_t upto = i ? end[i - 1] : 0;

		while (next_ack < r.nacks && r.acks[next_ack].logpos <= upto) {
			for (unsigned k = 0; k < r.acks[next_ack].n; k++) {
				assert_true(r.acks[next_ack].ids[k] < MAX_ID);
				acked[r.acks[next_ack].ids[k]] = 1;
			}
			next_ack++;
		}
		if (cut[i]) {
			ncut++;
			for (int v = 0; v < 6; v++) {
				char what[256];
				int lost;

				pc_image(&m, img, v % 3, v >= 3, &seed);
				lost = check_image(img, acked, what, sizeof(what));
				/* The last moment, pending writes dropped and torn: a real
				 * daemon recovers it too. */
				if (!lost && i == nev && (v == 0 || v == 2)) {
					unsigned miss = daemon_on_image(img, acked);

					daemon_checks++;
					if (miss) {
						snprintf(what, sizeof(what), "jschedd on the image does "
							 "not know %u acknowledged jobs", miss);
						lost = 1;
					}
				}
				if (lost) {
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
	printf("journal {dir, segment_bytes%s}: %zu events, %zu replies, %zu cuts, %u images "
	       "(%u started by jschedd), %u lost acknowledged jobs or failed to recover\n",
	       journal, nev, r.nacks, ncut, *images, daemon_checks, losses);
	pc_free_events(ev, nev);
	pc_free_model(&m);
	free(log);
	free(end);
	free(cut);
	pc_rm_dir(jdir);
	unlink(r.logp);
	rmdir(base);
	assert_int_equal(jdt_stop(&t, SIGKILL), 0);
	return losses;
}

static void test_powercut(void **state)
{
	unsigned images, losses;
	char first[512] = "";

	(void)state;
	losses = powercut("", &images, first, sizeof(first));
	if (losses)
		fail_msg("%u of %u images lost acknowledged jobs; the first: %s", losses, images,
			 first);
}

static void test_negative_control(void **state)
{
	unsigned images, losses;
	char first[512] = "";

	(void)state;
	losses = powercut(", \"sync\": \"batch\", \"batch_ms\": 2000", &images, first, sizeof(first));
	printf("negative control (replies before the records are written): %u of %u images "
	       "lost jobs; the first: %s\n", losses, images, first);
	if (losses == 0 && images > 0)
		fail_msg("a daemon that replies before its journal is written was not caught");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_powercut),
		cmocka_unit_test(test_negative_control),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
