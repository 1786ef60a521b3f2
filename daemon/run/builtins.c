/* daemon/run/builtins.c: the built-in call handlers: noop, echo, sleep, spin, fail.
 *
 * They are written against include/jsched/module.h exactly as a module's handlers are,
 * so they double as its first test.  Arguments:
 *   noop   anything; returns null
 *   echo   anything; returns its args
 *   sleep  {"ms": N}; suspends its fiber N ms (no worker held), returns null
 *   spin   {"us": N}; burns N µs of CPU on the worker, returns null
 *   fail   {"message": "..."} (optional); fails with that reason
 * A bad argument fails the job with cause "handler" and says which.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "daemon/run/modules.h"

static int noop(struct jsched_task *t, const json_t *args, json_t **result)
{
	(void)t;
	(void)args;
	*result = NULL;
	return 0;
}

static int echo(struct jsched_task *t, const json_t *args, json_t **result)
{
	(void)t;
	*result = json_deep_copy(args ? args : json_null());
	return 0;
}

/* arg_uint: read {"<key>": non-negative integer} from args. */
static int arg_uint(struct jsched_task *t, const json_t *args, const char *key, uint64_t max,
		    uint64_t *out)
{
	json_t *v = json_object_get(args, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max) {
		char msg[96];

		snprintf(msg, sizeof(msg), "args must be {\"%s\": an integer from 0 to %llu}", key,
			 (unsigned long long)max);
		jsched_task_set_error(t, msg);
		return JSCHED_EINVAL;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int sleep_fn(struct jsched_task *t, const json_t *args, json_t **result)
{
	uint64_t ms;
	int rc = arg_uint(t, args, "ms", 86400000, &ms);

	*result = NULL;
	if (rc < 0)
		return rc;
	return jsched_task_sleep(t, ms);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* spin: burn `us` µs of this thread's CPU time, not wall time: the job burns what it asks
 * for even when the machine is oversubscribed (this is what the fairness tests charge).
 *
 * The thread CPU clock is a system call on Linux (no vDSO; ~200 ns here, more after a
 * stretch in user space), and polling it made a 10 µs spin 35-38 calls and 10.7-10.9 µs
 * of CPU, the surplus charged to the daemon in the efficiency rows.  So a spin paces
 * itself with the monotonic clock (vDSO, ~20 ns) and reads the CPU clock only to learn
 * what is still owed: a thread's CPU time never runs ahead of the wall clock, so pacing
 * `left` ns of wall time burns at most `left` ns of CPU, and a round that a preemption cut
 * short leaves the rest to the next round.  The first round is shortened by the time the
 * first read of the CPU clock took, about what the reads at the two ends of the rounds
 * add after and before their readings.  Two CPU clock reads when nothing preempts it; it
 * never returns before `us` µs of CPU are spent. */
static int spin(struct jsched_task *t, const json_t *args, json_t **result)
{
	uint64_t us;
	int rc = arg_uint(t, args, "us", 60000000, &us);

	*result = NULL;
	if (rc < 0 || us == 0)
		return rc;
	uint64_t want = us * 1000, w0 = clock_ns(CLOCK_MONOTONIC);
	uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), now = clock_ns(CLOCK_MONOTONIC);
	uint64_t reads = now - w0, used = 0;
	uint64_t pace = reads < want / 4 ? want - reads : want; /* a slow read: preempted */

	for (;;) {
		uint64_t end = now + pace;

		while ((now = clock_ns(CLOCK_MONOTONIC)) < end)
			if (jsched_task_cancelled(t))
				return JSCHED_ECANCELLED;
		used = clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
		if (used >= want)
			return 0;
		pace = want - used;
		now = clock_ns(CLOCK_MONOTONIC);
	}
}

static int fail(struct jsched_task *t, const json_t *args, json_t **result)
{
	json_t *m = json_object_get(args, "message");

	*result = NULL;
	jsched_task_set_error(t, json_is_string(m) ? json_string_value(m) : "failed as asked");
	return JSCHED_EINVAL;
}

static const struct jsched_handler builtins[] = {
	{"noop", noop, JSCHED_HANDLER_INLINE},
	{"echo", echo, JSCHED_HANDLER_INLINE},
	{"sleep", sleep_fn, JSCHED_HANDLER_SUSPENDS},
	{"spin", spin, 0},
	{"fail", fail, JSCHED_HANDLER_INLINE},
};

const struct jsched_handler *jd_builtins(size_t *n)
{
	*n = sizeof(builtins) / sizeof(builtins[0]);
	return builtins;
}
