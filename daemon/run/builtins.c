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
#include <string.h>
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

/* arg_member: args' member `key`, or NULL.  The built-ins' args are one member most
 * often ({"us": 10}): a small object's keys are compared in order (~50 instructions for
 * one), where json_object_get hashes the key first (~220 a call: callgrind, a 10 us spin
 * job's lookup on its worker).  Borrowed reference. */
static json_t *arg_member(const json_t *args, const char *key)
{
	json_t *o = (json_t *)(uintptr_t)args; /* jansson's iterators take no const */

	if (json_object_size(o) > 4)
		return json_object_get(o, key);
	for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
		if (strcmp(json_object_iter_key(it), key) == 0)
			return json_object_iter_value(it);
	return NULL;
}

/* arg_uint: read {"<key>": non-negative integer} from args. */
static int arg_uint(struct jsched_task *t, const json_t *args, const char *key, uint64_t max,
		    uint64_t *out)
{
	json_t *v = arg_member(args, key);
	json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;

	if (n < 0 || (uint64_t)n > max) {
		char msg[96];

		snprintf(msg, sizeof(msg), "args must be {\"%s\": an integer from 0 to %llu}", key,
			 (unsigned long long)max);
		jsched_task_set_error(t, msg);
		return JSCHED_EINVAL;
	}
	*out = (uint64_t)n;
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

/* The thread CPU clock as the last spin on this thread read it, and the monotonic clock
 * just before that read.  Thread-local: a spin never suspends, so it starts and ends on
 * one thread. */
static _Thread_local uint64_t spin_cpu, spin_mono;

/* SPIN_REUSE_NS: how recent that read must be for the next spin to start from it rather
 * than read the clock again.  Whatever the thread did since (the worker's feeding and
 * notices between two jobs, a few µs) is counted as if it had all run on this thread, so
 * a gap in which it was preempted makes the spin burn up to the gap more, never less;
 * 10 µs bounds that excess.  SPIN_SLACK_NS: what a spin starting from such a read paces
 * beyond its `us`, so that the two reads' differing delays to their samples seldom leave
 * it short and reading again (measured alone, 10 µs spins with 1.5 µs between: 0 ns of
 * slack read 1.26 times per spin, 100 ns 1.02-1.04). */
#define SPIN_REUSE_NS 10000
#define SPIN_SLACK_NS 100

/* spin: burn `us` µs of this thread's CPU time, not wall time: the job burns what it asks
 * for even when the machine is oversubscribed (this is what the fairness tests charge).
 *
 * The thread CPU clock is a system call on Linux (no vDSO; ~200 ns on one machine, 830 ns
 * on a Firecracker VM), and polling it made a 10 µs spin 35-38 calls and 10.7-10.9 µs
 * of CPU, the surplus charged to the daemon in the efficiency rows.  So a spin paces
 * itself with the monotonic clock (vDSO, ~20-35 ns) and reads the CPU clock only to learn
 * what is still owed: a thread's CPU time never runs ahead of the wall clock, so pacing
 * `left` ns of wall time burns at most `left` ns of CPU, and a round that a preemption cut
 * short leaves the rest to the next round.
 *
 * Its start: where the previous spin on this thread read the CPU clock less than
 * SPIN_REUSE_NS ago, that reading plus the wall time since the monotonic read before it
 * (at least the CPU time the thread has now: the sample lies after that monotonic read,
 * and CPU time grows no faster than wall time), so back-to-back jobs read the clock once
 * each; else a read of its own, and the first round shortened by the time it took, about
 * what the reads at the two ends of the rounds add after and before their readings.  One
 * or two CPU clock reads when nothing preempts it; it never returns before `us` µs of CPU
 * are spent. */
static int spin(struct jsched_task *t, const json_t *args, json_t **result)
{
	uint64_t us;
	int rc = arg_uint(t, args, "us", 60000000, &us);

	*result = NULL;
	if (rc < 0 || us == 0)
		return rc;
	uint64_t want = us * 1000, now = clock_ns(CLOCK_MONOTONIC), start, pace;

	if (spin_cpu != 0 && now - spin_mono <= SPIN_REUSE_NS) {
		start = spin_cpu + (now - spin_mono);
		pace = want + SPIN_SLACK_NS;
	} else {
		uint64_t w0 = now, reads;

		start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		now = clock_ns(CLOCK_MONOTONIC);
		reads = now - w0;
		pace = reads < want / 4 ? want - reads : want; /* a slow read: preempted */
	}
	for (;;) {
		uint64_t end = now + pace, cpu, used;

		while ((now = clock_ns(CLOCK_MONOTONIC)) < end)
			if (jsched_task_cancelled(t))
				return JSCHED_ECANCELLED;
		cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		spin_cpu = cpu;
		spin_mono = now; /* read before it */
		used = cpu > start ? cpu - start : 0;
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
