/* tests/journal/pc_writer.c: the process whose disk the power-loss test cuts.
 *
 *	pc_writer DIR ACKFILE N SEED [direct]
 *
 * With "direct" the journal writes through O_DIRECT | O_DSYNC (JD_JOURNAL_IO_DIRECT);
 * where the filesystem refuses that, it exits 3 (the test then skips, saying why).
 * Opens a journal in DIR (64 KiB segments, so it rolls over often), appends N records
 * whose payloads are a function of their sequence number (pc_payload), keeping a random
 * 1..12 of them outstanding, and each time the durable position advances writes it (8
 * bytes) to ACKFILE: an acknowledgement, as a submit reply would be.  Halfway it takes a
 * snapshot of everything so far (one record per sequence number, id = that number)
 * while it keeps appending.  Run under powercut_shim.so, whose log then holds the
 * writes, syncs and acknowledgements in the order they happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/core/journal.h"
#include "tests/journal/pc_payload.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void notify_cb(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* wait_change: wait (up to 10 s) for the journal to report something. */
static void wait_change(struct jd_journal *j, uint64_t seen)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&mu);
	while (jd_journal_durable(j) == seen && jd_journal_snap_state(j) != JD_SNAP_DONE)
		if (pthread_cond_timedwait(&cv, &mu, &ts) == ETIMEDOUT) {
			fprintf(stderr, "pc_writer: the journal made no progress in 10 s\n");
			exit(1);
		}
	pthread_mutex_unlock(&mu);
}

int main(int argc, char **argv)
{
	struct jd_journal_opts o = {0};
	struct jd_journal *j;
	char err[512], buf[PC_PAYLOAD_MAX];
	uint64_t n, acked = 0, snap_at, snapped = 0;
	int ackfd;
	unsigned seed;

	if (argc != 5 && !(argc == 6 && strcmp(argv[5], "direct") == 0)) {
		fprintf(stderr, "usage: pc_writer DIR ACKFILE N SEED [direct]\n");
		return 2;
	}
	o.io = argc == 6 ? JD_JOURNAL_IO_DIRECT : JD_JOURNAL_IO_FDATASYNC;
	n = strtoull(argv[3], NULL, 10);
	seed = (unsigned)strtoul(argv[4], NULL, 10);
	snap_at = n / 2;
	o.dir = argv[1];
	o.segment_bytes = 64 << 10;
	o.notify_cb = notify_cb;
	if (jd_journal_open(&j, &o, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "pc_writer: %s\n", err);
		return 1;
	}
	if (o.io == JD_JOURNAL_IO_DIRECT) {
		struct jd_journal_stats st;

		jd_journal_stats(j, &st);
		if (st.io != JD_JOURNAL_IO_DIRECT) {
			fprintf(stderr, "pc_writer: %s refuses O_DIRECT\n", o.dir);
			jd_journal_close(j);
			return 3;
		}
	}
	ackfd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (ackfd < 0)
		return 1;
	for (uint64_t next = 1; acked < n;) {
		unsigned want = 1 + (unsigned)(rand_r(&seed) % 12);
		uint64_t d;

		while (next <= n && next - 1 - acked < want) {
			size_t len = pc_payload(next, buf);

			if (jd_journal_append(j, PC_TYPE, next, buf, len) != (int64_t)next) {
				fprintf(stderr, "pc_writer: append %" PRIu64 " failed\n", next);
				return 1;
			}
			next++;
		}
		if (next > snap_at && !snapped) {
			/* the state "so far", in slices between more appends */
			if (jd_journal_snap_begin(j) < 0)
				return 1;
			for (uint64_t s = 1; s < next; s++) {
				size_t len = pc_payload(s, buf);

				if (jd_journal_snap_add(j, PC_TYPE, s, buf, len) < 0)
					return 1;
			}
			if (jd_journal_snap_commit(j) < 0)
				return 1;
			snapped = 1;
		}
		wait_change(j, acked);
		d = jd_journal_durable(j);
		if (d > acked) {
			acked = d;
			if (write(ackfd, &acked, sizeof(acked)) != sizeof(acked))
				return 1;
		}
		if (snapped == 1 && jd_journal_snap_state(j) == JD_SNAP_DONE) {
			if (jd_journal_snap_finish(j) < 0)
				return 1;
			snapped = 2;
		}
	}
	if (snapped == 1) {
		while (jd_journal_snap_state(j) == JD_SNAP_WRITING ||
		       jd_journal_snap_state(j) == JD_SNAP_COMMITTING)
			wait_change(j, acked);
		jd_journal_snap_finish(j);
	}
	close(ackfd);
	return jd_journal_close(j) == 0 ? 0 : 1;
}
