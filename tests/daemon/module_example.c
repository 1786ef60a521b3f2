/* tests/daemon/module_example.c: the example handler module, built as a shared object
 * and loaded by every integration test's jschedd (its config lists it).
 *
 * It shows the module API of include/jsched/module.h end to end:
 *   example.add     {"a": int, "b": int} -> a + b            (plain handler)
 *   example.psum    {"n": int, "parts": int} -> 1 + ... + n  (spawns `parts` sub-tasks
 *                   that the pool work-steals, and joins them)
 *   example.hold    {} -> null: holds its worker (no fiber) until the job is cancelled;
 *                   tests use it to keep a worker busy for exactly as long as they want
 *   example.nap     {"ms": int} -> "rested": suspends in jsched_task_sleep; "cancelled"
 *                   is a failure with JSCHED_ECANCELLED if the job is cancelled meanwhile
 *   example.run     {"argv": [...]} -> {"exit_code": N, "signal": N, "stdout": "..."}:
 *                   runs a command through jsched_task_run (its fiber suspends meanwhile)
 *   example.block   {"ms": int} -> null: blocks its thread in nanosleep (a handler's
 *                   blocking system call: wall time passes, almost no CPU time)
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "jsched/module.h"

static int add(struct jsched_task *t, const json_t *args, json_t **result)
{
	json_t *a = json_object_get(args, "a"), *b = json_object_get(args, "b");

	if (!json_is_integer(a) || !json_is_integer(b)) {
		jsched_task_set_error(t, "args must be {\"a\": integer, \"b\": integer}");
		return JSCHED_EINVAL;
	}
	*result = json_integer(json_integer_value(a) + json_integer_value(b));
	return 0;
}

struct part {
	int64_t lo, hi, sum;
};

static void sum_part(void *arg)
{
	struct part *p = arg;

	for (int64_t i = p->lo; i <= p->hi; i++)
		p->sum += i;
}

static int psum(struct jsched_task *t, const json_t *args, json_t **result)
{
	int64_t n = json_integer_value(json_object_get(args, "n"));
	int64_t parts = json_integer_value(json_object_get(args, "parts"));
	struct part *v;
	int64_t total = 0;

	if (n < 0 || parts < 1 || parts > 1024) {
		jsched_task_set_error(t, "args must be {\"n\": >= 0, \"parts\": 1..1024}");
		return JSCHED_EINVAL;
	}
	v = calloc((size_t)parts, sizeof(*v));
	if (!v)
		return JSCHED_ENOMEM;
	for (int64_t i = 0; i < parts; i++) {
		v[i].lo = n * i / parts + 1;
		v[i].hi = n * (i + 1) / parts;
		if (jsched_task_spawn(t, sum_part, &v[i]) != 0)
			sum_part(&v[i]);
	}
	jsched_task_join(t);
	for (int64_t i = 0; i < parts; i++)
		total += v[i].sum;
	free(v);
	*result = json_integer(total);
	return 0;
}

static int hold(struct jsched_task *t, const json_t *args, json_t **result)
{
	(void)args;
	*result = NULL;
	while (!jsched_task_cancelled(t))
		sched_yield();
	return JSCHED_ECANCELLED;
}

static int block(struct jsched_task *t, const json_t *args, json_t **result)
{
	json_int_t ms = json_integer_value(json_object_get(args, "ms"));
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};

	(void)t;
	*result = NULL;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

static int nap(struct jsched_task *t, const json_t *args, json_t **result)
{
	int rc = jsched_task_sleep(t, (uint64_t)json_integer_value(json_object_get(args, "ms")));

	*result = rc == 0 ? json_string("rested") : NULL;
	return rc;
}

static int run(struct jsched_task *t, const json_t *args, json_t **result)
{
	json_t *a = json_object_get(args, "argv");
	const char *argv[16] = {0};
	const char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct jsched_process p = {.argv = argv, .env = env};
	struct jsched_process_result res;
	size_t i;
	json_t *v;
	int rc;

	if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 15) {
		jsched_task_set_error(t, "args must be {\"argv\": [1 to 15 strings]}");
		return JSCHED_EINVAL;
	}
	json_array_foreach(a, i, v)
		argv[i] = json_string_value(v);
	rc = jsched_task_run(t, &p, &res);
	if (rc == 0)
		*result = json_pack("{s:i, s:i, s:s%}", "exit_code", res.exit_code, "signal",
				    res.signal, "stdout", res.out ? res.out : "", res.out_len);
	jsched_process_result_free(&res);
	return rc;
}

static const struct jsched_handler handlers[] = {
	{"example.add", add, 0},
	{"example.psum", psum, JSCHED_HANDLER_SUSPENDS},
	{"example.hold", hold, 0},
	{"example.nap", nap, JSCHED_HANDLER_SUSPENDS},
	{"example.run", run, JSCHED_HANDLER_SUSPENDS},
	{"example.block", block, 0},
};

JSCHED_MODULE_EXPORT const struct jsched_module jsched_module = {
	.abi = JSCHED_MODULE_ABI,
	.name = "example",
	.handlers = handlers,
	.n_handlers = sizeof(handlers) / sizeof(handlers[0]),
};
