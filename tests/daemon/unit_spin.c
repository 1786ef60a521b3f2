/* unit_spin.c: the built-in spin handler (daemon/run/builtins.c) called directly, with the
 * three task functions it may use stubbed here and clock_gettime wrapped at link time
 * (-Wl,--wrap=clock_gettime) so that its reads of the thread CPU clock are counted.
 *   - spin(N) spends at least N µs of its thread's CPU time, also when another thread
 *     shares its CPU (both pinned to one CPU), where N µs of wall time would be about half
 *     that: a spin paced by the wall clock alone fails here;
 *   - it reads the thread CPU clock (a system call) a bounded number of times, not once
 *     per round of its loop: the version that polled it made ~4,500 reads per 1 ms spin;
 *   - a cancel seen during the spin ends it with JSCHED_ECANCELLED; spin(0) returns at
 *     once; bad args fail with JSCHED_EINVAL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/run/modules.h"
#include "jsched/error.h"

/* ---- stubs of the handler API and the counting clock ---------------------------------- */

static atomic_uint cpu_reads;	/* CLOCK_THREAD_CPUTIME_ID reads through the wrapper */
static unsigned cancel_after;	/* jsched_task_cancelled says true from this call on (0: never) */
static unsigned cancel_calls;

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	if (id == CLOCK_THREAD_CPUTIME_ID)
		atomic_fetch_add(&cpu_reads, 1);
	return __real_clock_gettime(id, ts);
}

bool jsched_task_cancelled(const struct jsched_task *t)
{
	(void)t;
	cancel_calls++;
	return cancel_after && cancel_calls >= cancel_after;
}

void jsched_task_set_error(struct jsched_task *t, const char *message)
{
	(void)t;
	(void)message;
}

int jsched_task_sleep(struct jsched_task *t, uint64_t ms)
{
	(void)t;
	(void)ms;
	return 0;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	__real_clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static jsched_handler_fn spin_fn(void)
{
	size_t n;
	const struct jsched_handler *h = jd_builtins(&n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(h[i].name, "spin") == 0)
			return h[i].fn;
	fail_msg("no built-in spin");
	return NULL;
}

/* run_spin: spin with args `text`; its return code, the thread CPU time it took (ns) and
 * the CPU clock reads it made. */
static int run_spin(const char *text, uint64_t *cpu, unsigned *reads)
{
	json_t *args = json_loads(text, 0, NULL), *result = NULL;
	struct jsched_task *t = (struct jsched_task *)&cancel_calls; /* never looked into */

	assert_non_null(args);
	cancel_calls = 0;
	uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	unsigned r0 = atomic_load(&cpu_reads);
	int rc = spin_fn()(t, args, &result);

	*cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	*reads = atomic_load(&cpu_reads) - r0;
	assert_null(result);
	json_decref(args);
	return rc;
}

static void test_spin_alone(void **state)
{
	uint64_t cpu;
	unsigned reads;

	(void)state;
	cancel_after = 0;
	assert_int_equal(run_spin("{\"us\": 1000}", &cpu, &reads), 0);
	assert_true(cpu >= 1000000);
	/* Two when nothing preempts it, one more per round a preemption cut short. */
	assert_true(reads >= 2);
	assert_true(reads <= 20);
	print_message("spin 1000 us alone: %.1f us of CPU, %u CPU clock reads\n", (double)cpu / 1e3,
		      reads);
}

static atomic_bool burn_stop;

static void *burner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&burn_stop, memory_order_relaxed))
		;
	return NULL;
}

/* pin: the calling thread (or `th`) on `cpu` alone; false if the kernel refuses. */
static bool pin(pthread_t th, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(th, sizeof(set), &set) == 0;
}

static void test_spin_shared_cpu(void **state)
{
	int cpu = sched_getcpu();
	cpu_set_t old;
	pthread_t b;
	uint64_t cpu_ns, wall;
	unsigned reads;

	(void)state;
	cancel_after = 0;
	assert_true(cpu >= 0);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(old), &old), 0);
	if (!pin(pthread_self(), cpu)) {
		print_message("skipped: cannot pin a thread to CPU %d\n", cpu);
		return;
	}
	atomic_store(&burn_stop, false);
	assert_int_equal(pthread_create(&b, NULL, burner, NULL), 0);
	bool pinned = pin(b, cpu);

	uint64_t w0 = now_ns(CLOCK_MONOTONIC);
	int rc = run_spin("{\"us\": 30000}", &cpu_ns, &reads);

	wall = now_ns(CLOCK_MONOTONIC) - w0;
	atomic_store(&burn_stop, true);
	pthread_join(b, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	assert_true(pinned);
	assert_int_equal(rc, 0);
	/* The burner took part of the wall time; the spin still spent all 30 ms of CPU. */
	assert_true(cpu_ns >= 30000000);
	assert_true(reads <= 2 + wall / 100000); /* a read per preemption, at most */
	print_message("spin 30 ms beside a burner on CPU %d: %.2f ms of CPU in %.2f ms, %u CPU "
		      "clock reads\n",
		      cpu, (double)cpu_ns / 1e6, (double)wall / 1e6, reads);
}

static void test_spin_cancel_zero_bad(void **state)
{
	uint64_t cpu;
	unsigned reads;

	(void)state;
	cancel_after = 3;
	assert_int_equal(run_spin("{\"us\": 60000000}", &cpu, &reads), JSCHED_ECANCELLED);
	assert_int_equal(cancel_calls, 3);
	cancel_after = 0;
	assert_int_equal(run_spin("{\"us\": 0}", &cpu, &reads), 0);
	assert_int_equal(reads, 0);
	assert_int_equal(run_spin("{\"us\": -1}", &cpu, &reads), JSCHED_EINVAL);
	assert_int_equal(run_spin("{\"ms\": 1}", &cpu, &reads), JSCHED_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spin_alone),
		cmocka_unit_test(test_spin_shared_cpu),
		cmocka_unit_test(test_spin_cancel_zero_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
