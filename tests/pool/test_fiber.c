/* tests/pool/test_fiber.c: fibers and waiting.
 *
 *   - exhaustion: one worker, 4 fibers, a fork-join tree of 127 fiber tasks that all wait
 *     for their children: it completes (the JLib deadlock does not happen);
 *   - guard page: a fiber that recurses without end dies of SIGSEGV in a child process,
 *     and stderr says "fiber stack overflow" with the task's function;
 *   - large stacks: a JD_TASK_LARGE_STACK task may use 300 KiB of stack;
 *   - external wake: a thread outside the pool sets the event a suspended fiber waits on;
 *   - timed waits in a fiber (the timer thread), in a plain task (helping), outside;
 *   - cancel tokens: fired before and during waits, racing sets and timeouts;
 *   - errno and TLS addresses across waits: a fiber stays on its thread (even when the
 *     other worker is idle and steals everything else); one that says JD_TASK_MIGRATE is
 *     made to move, and errno's value moves with it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/pool/pool.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

static struct jd_pool *make_pool(unsigned workers, unsigned fibers, enum jd_idle idle)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = workers;
	cfg.fibers = fibers;
	cfg.large_fibers = 2;
	cfg.idle = idle;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	return p;
}

static void wait_suspended(struct jd_pool *p, unsigned n)
{
	struct jd_pool_stats st;
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	do
		jd_pool_stats(p, &st, NULL, 0);
	while (st.fibers_suspended < n && test_now_ns() < give_up);
	assert_int_equal(st.fibers_suspended, n);
}

/* ---- exhaustion ----------------------------------------------------------------------- */

struct node {
	uint32_t depth;
	uint64_t sum;
};

static void node_task(void *arg)
{
	struct node *n = arg;
	if (!n->depth) {
		n->sum = 1;
		return;
	}
	struct node a = {n->depth - 1, 0}, b = {n->depth - 1, 0};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 2);
	assert_int_equal(jd_spawn(&(struct jd_task_spec){
				 .fn = node_task, .arg = &a, .flags = JD_TASK_FIBER, .wg = &wg}),
			 0);
	assert_int_equal(jd_spawn(&(struct jd_task_spec){
				 .fn = node_task, .arg = &b, .flags = JD_TASK_FIBER, .wg = &wg}),
			 0);
	assert_int_equal(jd_wg_wait(&wg), 0); /* suspends, or helps when out of fibers */
	n->sum = a.sum + b.sum + 1;
}

static void test_exhaustion(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(1, 4, JD_IDLE_SLEEP);
	for (int rep = 0; rep < 10; rep++) {
		struct node root = {6, 0};
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){
						   .fn = node_task, .arg = &root, .flags = JD_TASK_FIBER, .wg = &wg}),
				 0);
		assert_int_equal(jd_wg_wait_for(&wg, (int64_t)TEST_PATIENCE_NS, NULL), 0);
		assert_int_equal(root.sum, 127);
	}
	struct jd_pool_stats st;
	jd_pool_stats(p, &st, NULL, 0);
	assert_true(st.fiber_exhausted > 0);
	assert_int_equal(st.fibers_in_use, 0);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* ---- guard page ----------------------------------------------------------------------- */

static volatile int recurse_limit = 1 << 30; /* never reached: the stack ends first */

__attribute__((noinline)) static int recurse(volatile char *prev, int depth)
{
	volatile char buf[512];
	buf[0] = (char)depth;
	buf[511] = prev ? prev[0] : 0;
	if (depth >= recurse_limit)
		return buf[0];
	return recurse(buf, depth + 1) + buf[0];
}

void overflow_task(void *arg); /* exported (-rdynamic) so the report can name it */
void overflow_task(void *arg)
{
	(void)arg;
	recurse(NULL, 0);
}

static void test_guard_page(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		struct jd_pool *p = make_pool(1, 2, JD_IDLE_SLEEP);
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){
					  .fn = overflow_task, .flags = JD_TASK_FIBER, .wg = &wg});
		jd_wg_wait(&wg);
		_exit(0); /* not reached: the overflow kills the process */
	}
	close(fds[1]);
	char out[8192];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(out) - 1 && (r = read(fds[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!strstr(out, "fiber stack overflow"))
		fail_msg("child stderr lacks the report: %s", out);
	assert_non_null(strstr(out, "overflow_task"));
#ifndef TEST_ASAN
	/* (AddressSanitizer's own SIGSEGV handler may end the child with an exit code.) */
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
#else
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

/* ---- large stacks --------------------------------------------------------------------- */

static void big_frame(void *arg)
{
	volatile char buf[300 * 1024];
	for (size_t i = 0; i < sizeof(buf); i += 512)
		buf[i] = (char)i;
	*(int *)arg = buf[512] == (char)512 && jd_in_fiber();
}

struct big_wait {
	struct jd_event *go;
	atomic_int ok;
};

static void big_frame_wait(void *arg)
{
	struct big_wait *b = arg;
	volatile char buf[300 * 1024];
	for (size_t i = 0; i < sizeof(buf); i += 512)
		buf[i] = (char)i;
	jd_event_wait(b->go); /* holds its stack while it waits */
	atomic_store(&b->ok, buf[1024] == (char)1024);
}

static void test_large_stack(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 4, JD_IDLE_SLEEP); /* 2 large fibers */
	int ok = 0;
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1);
	jd_pool_submit(p, &(struct jd_task_spec){
				  .fn = big_frame, .arg = &ok, .flags = JD_TASK_LARGE_STACK, .wg = &wg});
	jd_wg_wait(&wg);
	assert_int_equal(ok, 1);
	/* Three large tasks waiting at once, two large fibers: the third must not get a
	 * standard fiber (it would overflow); it runs on a worker's stack. */
	struct jd_event go = JD_EVENT_INIT;
	struct big_wait b[3];
	jd_wg_add(&wg, 3);
	for (int i = 0; i < 3; i++) {
		b[i].go = &go;
		atomic_init(&b[i].ok, 0);
		jd_pool_submit(p, &(struct jd_task_spec){
					  .fn = big_frame_wait, .arg = &b[i], .flags = JD_TASK_LARGE_STACK, .wg = &wg});
	}
	wait_suspended(p, 2);
	struct jd_pool_stats st;
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	do
		jd_pool_stats(p, &st, NULL, 0);
	while (st.fiber_exhausted < 1 && test_now_ns() < give_up);
	assert_int_equal(st.fiber_exhausted, 1);
	jd_event_set(&go);
	assert_int_equal(jd_wg_wait(&wg), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&b[i].ok), 1);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* ---- external wake -------------------------------------------------------------------- */

struct ext {
	struct jd_event ev;
	atomic_int result;
	atomic_int worker_before, worker_after;
};

static void ext_waiter(void *arg)
{
	struct ext *e = arg;
	atomic_store(&e->worker_before, jd_worker_index());
	atomic_store(&e->result, jd_event_wait(&e->ev));
	atomic_store(&e->worker_after, jd_worker_index());
}

static void *setter(void *arg)
{
	jd_event_set(arg);
	return NULL;
}

static void set_task(void *arg)
{
	jd_event_set(arg);
}

static void test_external_wake(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 16, JD_IDLE_SLEEP);
	for (int rep = 0; rep < 200; rep++) {
		struct ext e;
		jd_event_init(&e.ev);
		atomic_init(&e.result, 99);
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){
					  .fn = ext_waiter, .arg = &e, .flags = JD_TASK_FIBER, .wg = &wg});
		wait_suspended(p, 1);
		if (rep == 0) { /* counted on the worker it suspended on */
			struct jd_pool_stats st;
			struct jd_worker_stats ws[2];
			assert_int_equal(jd_pool_stats(p, &st, ws, 2), 2);
			int on = atomic_load(&e.worker_before);
			assert_int_equal(ws[on].fibers_suspended, 1);
			assert_int_equal(ws[1 - on].fibers_suspended, 0);
		}
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, setter, &e.ev), 0);
		pthread_join(th, NULL);
		assert_int_equal(jd_wg_wait(&wg), 0);
		assert_int_equal(atomic_load(&e.result), 0);
		assert_true(jd_event_is_set(&e.ev));
	}
	/* The worker was free while the fiber waited: a plain task ran meanwhile. */
	struct ext e;
	jd_event_init(&e.ev);
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1);
	jd_pool_submit(p, &(struct jd_task_spec){
				  .fn = ext_waiter, .arg = &e, .flags = JD_TASK_FIBER, .wg = &wg});
	wait_suspended(p, 1);
	struct jd_wg wg2 = JD_WG_INIT;
	jd_wg_add(&wg2, 1);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = set_task, .arg = &e.ev, .wg = &wg2});
	assert_int_equal(jd_wg_wait(&wg2), 0);
	assert_int_equal(jd_wg_wait(&wg), 0);
	struct jd_pool_stats st;
	jd_pool_stats(p, &st, NULL, 0);
	assert_int_equal(st.fibers_suspended, 0);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* ---- timed waits ---------------------------------------------------------------------- */

struct timed {
	struct jd_event *ev;
	int64_t timeout;
	atomic_int result;
	atomic_ullong elapsed;
	bool fiber;
};

static void timed_task(void *arg)
{
	struct timed *t = arg;
	t->fiber = jd_in_fiber();
	uint64_t t0 = test_now_ns();
	atomic_store(&t->result, jd_event_wait_for(t->ev, t->timeout, NULL));
	atomic_store(&t->elapsed, test_now_ns() - t0);
}

static void test_timed_waits(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 16, JD_IDLE_SLEEP);
	struct jd_event never = JD_EVENT_INIT;
	for (unsigned flags = 0; flags <= JD_TASK_FIBER; flags += JD_TASK_FIBER) {
		struct timed t = {.ev = &never, .timeout = 3000000};
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = timed_task, .arg = &t, .flags = flags, .wg = &wg});
		jd_wg_wait(&wg);
		assert_int_equal(t.fiber, flags != 0);
		assert_int_equal(atomic_load(&t.result), JSCHED_ETIMEOUT);
		assert_true(atomic_load(&t.elapsed) >= 3000000); /* never early */
	}
	/* Outside the pool. */
	uint64_t t0 = test_now_ns();
	assert_int_equal(jd_event_wait_for(&never, 2000000, NULL), JSCHED_ETIMEOUT);
	assert_true(test_now_ns() - t0 >= 2000000);
	assert_int_equal(jd_event_wait_for(&never, 0, NULL), JSCHED_ETIMEOUT);
	/* Set well before the deadline: 0 (in a fiber; the timer entry is removed). */
	struct jd_event ev = JD_EVENT_INIT;
	struct timed t = {.ev = &ev, .timeout = (int64_t)TEST_PATIENCE_NS};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = timed_task, .arg = &t, .flags = JD_TASK_FIBER, .wg = &wg});
	wait_suspended(p, 1);
	jd_event_set(&ev);
	jd_wg_wait(&wg);
	assert_int_equal(atomic_load(&t.result), 0);
	/* A sleeping fiber; jd_sleep outside. */
	assert_int_equal(jd_sleep(1000000, NULL), 0);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* Sets racing timeouts: exactly one wins, the fiber resumes once, nothing is lost. */
struct race {
	struct jd_event ev;
	int64_t timeout;
	atomic_int result;
};

static void race_task(void *arg)
{
	struct race *r = arg;
	atomic_store(&r->result, jd_event_wait_for(&r->ev, r->timeout, NULL));
}

static void test_set_timeout_race(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 64, JD_IDLE_SLEEP);
	enum { N = 32 };
	int outcomes[2] = {0, 0};
	for (int rep = 0; rep < 400 / TSAN_DIV + 10; rep++) {
		struct race r[N];
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, N);
		for (int i = 0; i < N; i++) {
			jd_event_init(&r[i].ev);
			r[i].timeout = 1000 * (i % 16); /* 0 ... 15 µs */
			atomic_init(&r[i].result, 99);
			jd_pool_submit(p, &(struct jd_task_spec){
						  .fn = race_task, .arg = &r[i], .flags = i % 2 ? JD_TASK_FIBER : 0, .wg = &wg});
		}
		for (int i = 0; i < N; i++)
			jd_event_set(&r[i].ev);
		assert_int_equal(jd_wg_wait(&wg), 0);
		for (int i = 0; i < N; i++) {
			int res = atomic_load(&r[i].result);
			if (res != 0 && res != JSCHED_ETIMEOUT)
				fail_msg("wait %d returned %d", i, res);
			outcomes[res == 0]++;
		}
	}
	print_message("    set won %d, timeout won %d\n", outcomes[1], outcomes[0]);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* ---- cancel --------------------------------------------------------------------------- */

struct cwait {
	struct jd_event *ev;
	struct jd_cancel *c;
	atomic_int result, sleep_result;
};

static void cancel_task(void *arg)
{
	struct cwait *w = arg;
	atomic_store(&w->result, jd_event_wait_for(w->ev, -1, w->c));
	atomic_store(&w->sleep_result, jd_sleep(1000000000, w->c));
}

static void *firer(void *arg)
{
	jd_cancel_fire(arg);
	return NULL;
}

static void test_cancel(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 16, JD_IDLE_SLEEP);
	struct jd_event never = JD_EVENT_INIT;
	/* Fired while a fiber, a plain task and an outside thread wait. */
	struct jd_cancel c = JD_CANCEL_INIT;
	assert_false(jd_cancel_fired(&c));
	struct cwait w[2] = {{.ev = &never, .c = &c}, {.ev = &never, .c = &c}};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 2);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = cancel_task, .arg = &w[0], .flags = JD_TASK_FIBER, .wg = &wg});
	jd_pool_submit(p, &(struct jd_task_spec){.fn = cancel_task, .arg = &w[1], .wg = &wg});
	wait_suspended(p, 1);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, firer, &c), 0);
	/* This thread waits too, and is cancelled by the same token. */
	int mine = jd_event_wait_for(&never, -1, &c);
	pthread_join(th, NULL);
	assert_int_equal(jd_wg_wait(&wg), 0);
	assert_int_equal(mine, JSCHED_ECANCELLED);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(atomic_load(&w[i].result), JSCHED_ECANCELLED);
		assert_int_equal(atomic_load(&w[i].sleep_result), JSCHED_ECANCELLED);
	}
	assert_true(jd_cancel_fired(&c));
	/* Already fired: returns at once, even on a set event it returns 0 (set wins). */
	assert_int_equal(jd_event_wait_for(&never, -1, &c), JSCHED_ECANCELLED);
	struct jd_event set = JD_EVENT_INIT;
	jd_event_set(&set);
	assert_int_equal(jd_event_wait_for(&set, -1, &c), 0);
	/* Cancels racing sets: each wait ends with one of the two codes. */
	for (int rep = 0; rep < 300 / TSAN_DIV + 10; rep++) {
		struct jd_cancel c2;
		jd_cancel_init(&c2);
		struct jd_event ev = JD_EVENT_INIT;
		struct cwait x = {.ev = &ev, .c = &c2};
		atomic_init(&x.result, 99);
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = cancel_task, .arg = &x, .flags = JD_TASK_FIBER, .wg = &wg});
		assert_int_equal(pthread_create(&th, NULL, firer, &c2), 0);
		jd_event_set(&ev);
		pthread_join(th, NULL);
		assert_int_equal(jd_wg_wait(&wg), 0);
		int res = atomic_load(&x.result);
		assert_true(res == 0 || res == JSCHED_ECANCELLED);
	}
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* ---- errno and thread-local storage across a suspend --------------------------------- */

static _Thread_local int tls_marker;

struct pingpong {
	struct jd_event *mine, *other;
	int rounds;
	atomic_int errno_bad, tls_bad, moves;
	int id;
};

__attribute__((noinline)) static int *tls_addr(void)
{
	__asm__ __volatile__("" ::: "memory");
	return &tls_marker;
}

/* read_errno: errno through a call of its own, so its address is computed afresh. */
__attribute__((noinline)) static int read_errno(void)
{
	__asm__ __volatile__("" ::: "memory");
	return errno;
}

/* Two fibers hand the turn to each other through two events, staying busy a little after
 * each hand-off so that an idle worker could take the partner's resume record. */
static void pingpong(struct pingpong *pp)
{
	for (int i = 0; i < pp->rounds; i++) {
		int before = jd_worker_index();
		*tls_addr() = before + 1; /* this thread's marker */
		int *marker = &tls_marker; /* a TLS address held across the wait */
		errno = 1000 + pp->id * 100000 + i;
		jd_event_set(pp->other);
		uint64_t until = test_now_ns() + 20000;
		while (test_now_ns() < until)
			;
		int rc = jd_event_wait(pp->mine);
		int after = jd_worker_index();
		/* Plain errno (the compiler may reuse its address from before the wait) and
		 * the held TLS address must both still be this thread's. */
		if (errno != 1000 + pp->id * 100000 + i)
			atomic_fetch_add(&pp->errno_bad, 1);
		if (*marker != after + 1)
			atomic_fetch_add(&pp->tls_bad, 1);
		if (after != before)
			atomic_fetch_add(&pp->moves, 1);
		jd_event_reset(pp->mine);
		assert_int_equal(rc, 0);
	}
	jd_event_set(pp->other);
}

static void pinned_task(void *arg)
{
	pingpong(arg);
}

static int run_pingpong(struct jd_pool *p, unsigned flags, int *errno_bad, int *tls_bad)
{
	struct jd_event a = JD_EVENT_INIT, b = JD_EVENT_INIT;
	struct pingpong pa = {.mine = &a, .other = &b, .rounds = 300, .id = 1};
	struct pingpong pb = {.mine = &b, .other = &a, .rounds = 300, .id = 2};
	jd_task_fn fn = pinned_task;
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 2);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = fn, .arg = &pa, .flags = flags, .wg = &wg});
	jd_pool_submit(p, &(struct jd_task_spec){.fn = fn, .arg = &pb, .flags = flags, .wg = &wg});
	assert_int_equal(jd_wg_wait(&wg), 0);
	*errno_bad += atomic_load(&pa.errno_bad) + atomic_load(&pb.errno_bad);
	*tls_bad += atomic_load(&pa.tls_bad) + atomic_load(&pb.tls_bad);
	return atomic_load(&pa.moves) + atomic_load(&pb.moves);
}

static void test_tls_pinned(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 16, JD_IDLE_SPIN);
	int errno_bad = 0, tls_bad = 0, moves = 0;
	for (int rep = 0; rep < 3; rep++)
		moves += run_pingpong(p, JD_TASK_FIBER, &errno_bad, &tls_bad);
	assert_int_equal(moves, 0);
	assert_int_equal(errno_bad, 0);
	assert_int_equal(tls_bad, 0);
	jd_pool_set_idle(p, JD_IDLE_SLEEP);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* A JD_TASK_MIGRATE fiber moves, deterministically: it suspends on worker A; two plain
 * tasks then run at once (so on both workers); the one on the other worker sets the event,
 * which queues the fiber on that worker's own deque, while the one on A keeps A busy until
 * the fiber has resumed.  So the fiber resumes on the other worker, with errno's value. */
struct mig {
	struct jd_event ev;
	atomic_int fiber_worker;	/* where it suspended */
	atomic_int resumed_on;		/* where it resumed (-1: not yet) */
	atomic_int errno_ok;
	atomic_int started;		/* spinners running */
	atomic_int spinner_worker[2];
};

static void mig_fiber(void *arg)
{
	struct mig *m = arg;
	atomic_store(&m->fiber_worker, jd_worker_index());
	errno = 4242;
	jd_event_wait(&m->ev);
	atomic_store(&m->errno_ok, read_errno() == 4242);
	atomic_store(&m->resumed_on, jd_worker_index());
}

struct spinner {
	struct mig *m;
	int id;
};

static void mig_spinner(void *arg)
{
	struct spinner *sp = arg;
	struct mig *m = sp->m;
	int me = jd_worker_index();
	atomic_store(&m->spinner_worker[sp->id], me);
	atomic_fetch_add(&m->started, 1);
	uint64_t give_up = test_now_ns() + TEST_PATIENCE_NS;
	while (atomic_load(&m->started) < 2 && test_now_ns() < give_up)
		;
	if (me != atomic_load(&m->fiber_worker)) {
		jd_event_set(&m->ev); /* the setter, on the other worker */
		return;
	}
	while (atomic_load(&m->resumed_on) < 0 && test_now_ns() < give_up)
		; /* the hog: keep the fiber's worker busy until it resumed elsewhere */
}

static void test_tls_migrating(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, 16, JD_IDLE_SLEEP);
	for (int rep = 0; rep < 50 / TSAN_DIV + 5; rep++) {
		struct mig m;
		jd_event_init(&m.ev);
		atomic_init(&m.fiber_worker, -1);
		atomic_init(&m.resumed_on, -1);
		atomic_init(&m.errno_ok, 0);
		atomic_init(&m.started, 0);
		struct jd_wg wg = JD_WG_INIT;
		jd_wg_add(&wg, 1);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = mig_fiber, .arg = &m,
							 .flags = JD_TASK_FIBER | JD_TASK_MIGRATE, .wg = &wg});
		wait_suspended(p, 1);
		struct spinner sp[2] = {{&m, 0}, {&m, 1}};
		jd_wg_add(&wg, 2);
		assert_int_equal(jd_pool_submit_batch(p, (struct jd_task_spec[2]){
			{.fn = mig_spinner, .arg = &sp[0], .wg = &wg},
			{.fn = mig_spinner, .arg = &sp[1], .wg = &wg}}, 2), 0);
		assert_int_equal(jd_wg_wait(&wg), 0);
		assert_int_not_equal(atomic_load(&m.spinner_worker[0]),
				     atomic_load(&m.spinner_worker[1]));
		assert_int_not_equal(atomic_load(&m.resumed_on), atomic_load(&m.fiber_worker));
		assert_int_equal(atomic_load(&m.errno_ok), 1);
	}
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exhaustion),	 cmocka_unit_test(test_guard_page),
		cmocka_unit_test(test_large_stack),	 cmocka_unit_test(test_external_wake),
		cmocka_unit_test(test_timed_waits),	 cmocka_unit_test(test_set_timeout_race),
		cmocka_unit_test(test_cancel),		 cmocka_unit_test(test_tls_pinned),
		cmocka_unit_test(test_tls_migrating),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
