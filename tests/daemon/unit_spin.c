/* unit_spin.c: the built-in spin handler (daemon/run/builtins.c) called directly, with the
 * three task functions it may use stubbed here and clock_gettime wrapped at link time
 * (-Wl,--wrap=clock_gettime) so that its reads of the thread CPU clock are counted.
 *   - spin(N) spends at least N µs of its thread's CPU time, also when another thread
 *     shares its CPU (both pinned to one CPU), where N µs of wall time would be about half
 *     that: a spin paced by the wall clock alone fails here;
 *   - it reads the thread CPU clock (a system call) a bounded number of times, not once
 *     per round of its loop: the version that polled it made ~4,500 reads per 1 ms spin;
 *   - spins one after another on a thread, with work between them, each spend at least
 *     their N µs (the work between is not credited to the next), alone and beside a
 *     burner on the same CPU, and some start from the previous one's read (one read
 *     each);
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
	/* One or two when nothing preempts it (one if the spin before on this thread read
	 * the clock just before), one more per round a preemption cut short. */
	assert_true(reads >= 1);
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

/* A burner thread sharing one CPU with the calling thread, both pinned there. */
struct shared_cpu {
	int cpu;
	cpu_set_t old; /* the calling thread's affinity before */
	pthread_t burner;
	bool pinned; /* whether the burner was pinned too */
};

/* shared_cpu_start: pin the calling thread to the CPU it is on and start a burner pinned
 * beside it; false (and a message) if the kernel refuses the pin: the test is skipped. */
static bool shared_cpu_start(struct shared_cpu *sc)
{
	sc->cpu = sched_getcpu();
	assert_true(sc->cpu >= 0);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(sc->old), &sc->old), 0);
	if (!pin(pthread_self(), sc->cpu)) {
		print_message("skipped: cannot pin a thread to CPU %d\n", sc->cpu);
		return false;
	}
	atomic_store(&burn_stop, false);
	assert_int_equal(pthread_create(&sc->burner, NULL, burner, NULL), 0);
	sc->pinned = pin(sc->burner, sc->cpu);
	return true;
}

/* shared_cpu_stop: stop the burner, give the calling thread its affinity back, and check
 * that the burner did share the CPU. */
static void shared_cpu_stop(struct shared_cpu *sc)
{
	atomic_store(&burn_stop, true);
	pthread_join(sc->burner, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(sc->old), &sc->old);
	assert_true(sc->pinned);
}

static void test_spin_shared_cpu(void **state)
{
	struct shared_cpu sc;
	uint64_t cpu_ns, wall;
	unsigned reads;

	(void)state;
	cancel_after = 0;
	if (!shared_cpu_start(&sc))
		return;
	uint64_t w0 = now_ns(CLOCK_MONOTONIC);
	int rc = run_spin("{\"us\": 30000}", &cpu_ns, &reads);

	wall = now_ns(CLOCK_MONOTONIC) - w0;
	shared_cpu_stop(&sc);
	assert_int_equal(rc, 0);
	/* The burner took part of the wall time; the spin still spent all 30 ms of CPU. */
	assert_true(cpu_ns >= 30000000);
	assert_true(reads <= 2 + wall / 100000); /* a read per preemption, at most */
	print_message("spin 30 ms beside a burner on CPU %d: %.2f ms of CPU in %.2f ms, %u CPU "
		      "clock reads\n",
		      sc.cpu, (double)cpu_ns / 1e6, (double)wall / 1e6, reads);
}

/* busy: burn about ns of wall time on this thread (the worker's work between two jobs). */
static void busy(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + ns;

	while (now_ns(CLOCK_MONOTONIC) < end)
		;
}

/* spins_in_a_row: n spins of us µs with about gap_ns of work between; each must spend its
 * us µs of CPU. Returns how many read the CPU clock once. */
static unsigned spins_in_a_row(unsigned n, unsigned us, uint64_t gap_ns, unsigned *reads_all)
{
	char text[48];
	unsigned once = 0;

	snprintf(text, sizeof(text), "{\"us\": %u}", us);
	*reads_all = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t cpu;
		unsigned reads;

		busy(gap_ns);
		assert_int_equal(run_spin(text, &cpu, &reads), 0);
		if (cpu < (uint64_t)us * 1000)
			fail_msg("spin %u of %u: %llu ns of CPU for %u us", i, n, (unsigned long long)cpu, us);
		assert_true(reads >= 1);
		once += reads == 1;
		*reads_all += reads;
	}
	return once;
}

static void test_spin_in_a_row(void **state)
{
	unsigned reads, once;

	(void)state;
	cancel_after = 0;
	/* The work between is longer than the spin (and than the reuse window): still all of
	 * each spin's CPU, each reading for itself. */
	spins_in_a_row(20, 10, 30000, &reads);
	assert_true(reads >= 2 * 20);
	/* Back to back, the previous read reused: most read once (each run_spin's own CPU
	 * reads are work between, about 2 µs); 400 of them so that a loaded machine's
	 * preemptions cannot take every one. */
	once = spins_in_a_row(400, 10, 500, &reads);
	print_message("400 spins of 10 us in a row: %u CPU clock reads, %u spins read once\n", reads, once);
	assert_true(once > 0);
}

static void test_spin_in_a_row_shared_cpu(void **state)
{
	struct shared_cpu sc;
	unsigned reads, once;

	(void)state;
	cancel_after = 0;
	if (!shared_cpu_start(&sc))
		return;
	/* Preempted between and inside the spins: each still spends all of its CPU. */
	once = spins_in_a_row(100, 100, 500, &reads);
	shared_cpu_stop(&sc);
	print_message("100 spins of 100 us in a row beside a burner: %u CPU clock reads, %u read once\n",
		      reads, once);
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
		cmocka_unit_test(test_spin_in_a_row),
		cmocka_unit_test(test_spin_in_a_row_shared_cpu),
		cmocka_unit_test(test_spin_cancel_zero_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
