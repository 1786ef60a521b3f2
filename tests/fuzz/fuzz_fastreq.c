/* tests/fuzz/fuzz_fastreq.c: fuzz target for the fast request reader (proto/fastreq.c),
 * differential: the same bytes through jp_fast_parse and through jansson's way
 * (jp_frame_parse, jp_request_parse, jp_submit_parse).
 *
 * Input: a frame payload.  Invariant: whenever the fast path takes it, the tree's way
 * accepts it too and reads every value the same: id, op, the ids, detail, mode and
 * timeout_ms, and for a submit every field of every spec, the creation order, the wait
 * flags, each spec's text, and the reply text written straight beside jansson's dump
 * (tests/proto/fastdiff.h).  Declining is always allowed (the tree's way then answers).
 * Small limits, as fuzz_request's, so the limits are reached; every input runs twice,
 * with those and with the defaults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"
#include "tests/fuzz/fuzz.h"
#include "tests/proto/fastdiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jp_limits lim;
	const char *why;
	bool fast;

	jp_limits_default(&lim);
	lim.jobs_per_submit = 64;
	lim.argv_items = 16;
	lim.env_items = 16;
	lim.deps_per_job = 16;
	why = fastdiff(data, size, &lim, &fast);
	if (why)
		fprintf(stderr, "fuzz_fastreq: %s\n", why);
	check(why == NULL);
	why = fastdiff(data, size, NULL, &fast);
	if (why)
		fprintf(stderr, "fuzz_fastreq (default limits): %s\n", why);
	check(why == NULL);
	return 0;
}
