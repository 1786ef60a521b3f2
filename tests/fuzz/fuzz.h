/* tests/fuzz/fuzz.h: the libFuzzer entry point every fuzz target defines.  Built with
 * clang -fsanitize=fuzzer it is driven by libFuzzer; built with any compiler and replay.c
 * it is driven by the seed corpus (tests/fuzz/corpus/<target>/), as a plain test. */
#ifndef JSCHED_FUZZ_H
#define JSCHED_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* check: an invariant of the target; a violation aborts, which libFuzzer and the replay
 * test both report as a failure with the input that caused it. */
#define check(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__,     \
				__LINE__, #cond);                                        \
			abort();                                                         \
		}                                                                        \
	} while (0)

#endif /* JSCHED_FUZZ_H */
