/* tests/fuzz/replay.c: a fuzz target as a plain test program.  main() feeds every file of
 * the target's corpus folder (FUZZ_CORPUS, compiled in; or the folders and files named on
 * the command line) to LLVMFuzzerTestOneInput, and every prefix of files up to 4 KiB too
 * (a truncated input is the commonest bad input).  A violated invariant aborts.  This way
 * `make test` exercises the corpus with gcc and without libFuzzer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS must name the corpus folder"
#endif

#define PREFIX_MAX 4096
/* REPLAY_WHOLE_FILES: a target whose inputs cost a round trip each (fuzz_daemon) replays
 * whole files only. */
#ifndef REPLAY_WHOLE_FILES
#define REPLAY_WHOLE_FILES 0
#endif

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -1;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	if (n <= PREFIX_MAX && !REPLAY_WHOLE_FILES)
		for (long i = 0; i < n; i++)
			LLVMFuzzerTestOneInput(buf, (size_t)i);
	free(buf);
	return 0;
}

/* replay: a file, or every regular file of a folder; returns how many, or -1. */
static long replay(const char *path)
{
	struct stat st;
	DIR *dir;
	struct dirent *e;
	long count = 0;

	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path) == 0 ? 1 : -1;
	dir = opendir(path);
	if (!dir) {
		perror(path);
		return -1;
	}
	while ((e = readdir(dir)) != NULL) {
		char full[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(full) != 0) {
			closedir(dir);
			return -1;
		}
		count++;
	}
	closedir(dir);
	return count;
}

int main(int argc, char **argv)
{
	long total = 0;

	for (int i = argc > 1 ? 1 : 0; i < (argc > 1 ? argc : 1); i++) {
		const char *path = argc > 1 ? argv[i] : FUZZ_CORPUS;
		long n = replay(path);

		if (n < 0)
			return 1;
		printf("replayed %ld inputs from %s\n", n, path);
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "no inputs: the corpus is missing\n");
		return 1;
	}
	return 0;
}
