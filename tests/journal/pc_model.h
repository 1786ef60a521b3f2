/* tests/journal/pc_model.h: the power-loss tests' model of a disk with a volatile cache,
 * fed by the log of tests/journal/powercut_shim.c (that file says what the log holds).
 *
 *   - a file's writes since its last fsync/fdatasync are pending: a power cut may drop
 *     each of them, keep it, or keep some of its 512-byte sectors (torn);
 *   - the directory's entries (create, rename, unlink) are durable at its fsync: a cut
 *     may leave the names as of the last directory fsync, or as they are now.
 *
 * Used by tests/journal/test_journal_powercut.c (the engine under a writer program) and
 * tests/daemon/test_daemon_powercut.c (the whole daemon under load).  Test code: it
 * fails the running cmocka test on a malformed log.
 */
#ifndef PC_MODEL_H
#define PC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SECTOR 512

struct event {
	char op;
	char *n1, *n2;
	const unsigned char *data;
	size_t len;
	uint64_t off;
};

struct pending {
	uint64_t off;
	size_t len;
	const unsigned char *data;
};

struct inode {
	unsigned char *buf;	/* durable content */
	size_t size, cap;
	struct pending *pend;
	size_t npend, cappend;
};

struct entry {
	char name[64];
	int ino;
};

struct model {
	struct inode *inodes;
	size_t ninodes, capinodes;
	struct entry cur[256], dur[256];
	size_t ncur, ndur;
	uint64_t acked;
};

/* pc_xrealloc: realloc, failing the test when out of memory. */
void *pc_xrealloc(void *p, size_t n);

/* pc_slurp: the whole file at path (malloc'd), its length in *len. */
unsigned char *pc_slurp(const char *path, size_t *len);

/* pc_parse: the events of a shim log (names copied, data pointing into b); *used is the
 * bytes of whole events (a writer killed while it logged leaves a partial last one).
 * Free with pc_free_events. */
struct event *pc_parse(const unsigned char *b, size_t len, size_t *nev, size_t *used);
void pc_free_events(struct event *ev, size_t nev);

/* pc_apply: one event into the model ('A' sets m->acked). */
void pc_apply(struct model *m, const struct event *e);
void pc_free_model(struct model *m);

/* pc_image: write the disk a cut now could leave into dir (created).  mode 0: pending
 * writes dropped, 1: kept, 2: each dropped, kept or torn at random (rand_r(seed)).
 * durable_names: the directory as of its last fsync, else as it is. */
void pc_image(const struct model *m, const char *dir, int mode, bool durable_names,
	      unsigned *seed);

/* pc_rm_dir: remove dir and the files in it. */
void pc_rm_dir(const char *dir);

#endif /* PC_MODEL_H */
