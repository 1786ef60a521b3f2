/* tests/pool/test_pool.c: the pool's basic contract: every submitted task runs exactly
 * once (one at a time, in batches, spawned from tasks, from several submitters), payloads
 * are copied, bad specs are refused, the idle policy switches at run time, the feeder is
 * called after jd_pool_notify and its tasks all run, a task's jd_pool_feed_here feeds in
 * the feeder's place only where the worker would feed next, and the counters add up.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/pool/internal.h" /* the topology test reads the victim lists */
#include "daemon/pool/pool.h"
#include "jsched/error.h"
#include "tests/pool/testutil.h"

static struct jd_pool *make_pool(unsigned workers, enum jd_idle idle)
{
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = workers;
	cfg.idle = idle;
	cfg.fibers = 64;
	cfg.large_fibers = 4;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	return p;
}

struct counts {
	atomic_uint *hits;
	size_t n;
};

struct hit {
	struct counts *c;
	size_t i;
};

static void hit_task(void *arg)
{
	struct hit *h = arg; /* the payload copy */
	atomic_fetch_add(&h->c->hits[h->i], 1);
}

static void check_once(struct counts *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (atomic_load(&c->hits[i]) != 1)
			fail_msg("task %zu ran %u times", i, atomic_load(&c->hits[i]));
}

static void run_exactly_once(unsigned workers, enum jd_idle idle)
{
	struct jd_pool *p = make_pool(workers, idle);
	struct counts c = {calloc(100000, sizeof(atomic_uint)), 100000};
	struct jd_wg wg = JD_WG_INIT;
	/* One at a time... */
	jd_wg_add(&wg, 50000);
	for (size_t i = 0; i < 50000; i++) {
		struct hit h = {&c, i};
		struct jd_task_spec s = {
			.fn = hit_task, .payload = &h, .payload_len = sizeof(h), .wg = &wg};
		assert_int_equal(jd_pool_submit(p, &s), 0);
	}
	/* ... and in batches of 100. */
	struct jd_task_spec batch[100];
	struct hit hs[100];
	for (size_t b = 50000; b < 100000; b += 100) {
		for (size_t k = 0; k < 100; k++) {
			hs[k] = (struct hit){&c, b + k};
			batch[k] = (struct jd_task_spec){
				.fn = hit_task, .payload = &hs[k], .payload_len = sizeof(hs[k]), .wg = &wg};
		}
		jd_wg_add(&wg, 100);
		assert_int_equal(jd_pool_submit_batch(p, batch, 100), 0);
	}
	assert_int_equal(jd_wg_wait(&wg), 0);
	check_once(&c);
	struct jd_pool_stats st;
	jd_pool_stats(p, &st, NULL, 0);
	assert_int_equal(st.tasks_run, 100000);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(c.hits);
}

static void test_once_sleep(void **state)
{
	(void)state;
	run_exactly_once(2, JD_IDLE_SLEEP);
	run_exactly_once(1, JD_IDLE_SLEEP);
}

static void test_once_spin(void **state)
{
	(void)state;
	run_exactly_once(2, JD_IDLE_SPIN);
}

/* A tree of spawns: each task spawns `fan` children down to depth 0; every node counts
 * itself once. */
struct node {
	atomic_uint *hits;
	struct jd_wg *wg;
	uint32_t id, depth;
};
#define FAN 4

static void tree_task(void *arg)
{
	struct node n = *(struct node *)arg;
	atomic_fetch_add(&n.hits[n.id], 1);
	if (!n.depth)
		return;
	assert_true(jd_worker_index() >= 0);
	for (uint32_t k = 0; k < FAN; k++) {
		struct node ch = {n.hits, n.wg, n.id * FAN + 1 + k, n.depth - 1};
		jd_wg_add(n.wg, 1);
		struct jd_task_spec s = {
			.fn = tree_task, .payload = &ch, .payload_len = sizeof(ch), .wg = n.wg};
		assert_int_equal(jd_spawn(&s), 0);
	}
}

static void test_spawn_tree(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	const uint32_t depth = 7; /* (4^8 - 1) / 3 = 21845 nodes */
	size_t total = ((size_t)1 << (2 * (depth + 1))) / 3;
	atomic_uint *hits = calloc(total, sizeof(*hits));
	struct jd_wg wg = JD_WG_INIT;
	struct node root = {hits, &wg, 0, depth};
	jd_wg_add(&wg, 1);
	struct jd_task_spec s = {
		.fn = tree_task, .payload = &root, .payload_len = sizeof(root), .wg = &wg};
	assert_int_equal(jd_pool_submit(p, &s), 0);
	assert_int_equal(jd_wg_wait(&wg), 0);
	struct counts c = {hits, total};
	check_once(&c);
	/* Spawning outside a worker is refused. */
	assert_int_equal(jd_spawn(&s), JSCHED_EINVAL);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(hits);
}

/* Several outside threads submit at once. */
struct submitter {
	struct jd_pool *p;
	struct counts *c;
	struct jd_wg *wg;
	size_t lo, hi;
};

static void *submit_thread(void *arg)
{
	struct submitter *sb = arg;
	for (size_t i = sb->lo; i < sb->hi; i++) {
		struct hit h = {sb->c, i};
		struct jd_task_spec s = {
			.fn = hit_task, .payload = &h, .payload_len = sizeof(h), .wg = sb->wg};
		if (jd_pool_submit(sb->p, &s))
			abort();
	}
	return NULL;
}

static void test_many_submitters(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	const size_t per = 20000;
	struct counts c = {calloc(4 * per, sizeof(atomic_uint)), 4 * per};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, (long long)(4 * per));
	pthread_t th[4];
	struct submitter sb[4];
	for (int i = 0; i < 4; i++) {
		sb[i] = (struct submitter){p, &c, &wg, i * per, (i + 1) * per};
		assert_int_equal(pthread_create(&th[i], NULL, submit_thread, &sb[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(jd_wg_wait(&wg), 0);
	check_once(&c);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(c.hits);
}

static void noop(void *arg)
{
	(void)arg;
}

static void test_bad_specs(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(1, JD_IDLE_SLEEP);
	char big[JD_TASK_PAYLOAD_MAX + 1] = {0};
	struct jd_task_spec none = {.fn = NULL};
	struct jd_task_spec fat = {.fn = noop, .payload = big, .payload_len = sizeof(big)};
	struct jd_task_spec nullpay = {.fn = noop, .payload = NULL, .payload_len = 4};
	assert_int_equal(jd_pool_submit(p, &none), JSCHED_EINVAL);
	assert_int_equal(jd_pool_submit(p, &fat), JSCHED_EINVAL);
	assert_int_equal(jd_pool_submit(p, &nullpay), JSCHED_EINVAL);
	struct jd_task_spec two[2] = {{.fn = noop}, {.fn = NULL}};
	assert_int_equal(jd_pool_submit_batch(p, two, 2), JSCHED_EINVAL);
	assert_int_equal(jd_pool_submit_batch(p, two, 0), 0);
	struct jd_pool_stats st;
	assert_int_equal(jd_pool_stats(p, &st, NULL, 0), 1);
	assert_int_equal(st.tasks_run, 0); /* nothing of the refused batch ran */
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.fiber_stack = 100; /* too small */
	assert_int_equal(jd_pool_create(&p, &cfg), JSCHED_EINVAL);
}

/* Where am I: outside, in a plain task, in a fiber. */
struct where {
	struct jd_pool *pool;
	int index;
	bool fiber;
};

static void where_task(void *arg)
{
	struct where *w = arg;
	w->pool = jd_current_pool();
	w->index = jd_worker_index();
	w->fiber = jd_in_fiber();
}

static void test_introspection(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	assert_int_equal(jd_pool_workers(p), 2);
	assert_false(jd_in_fiber());
	assert_int_equal(jd_worker_index(), -1);
	assert_null(jd_current_pool());
	assert_false(jd_pool_stopping(p));
	struct where plain = {0}, fiber = {0};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 2);
	jd_pool_submit(p, &(struct jd_task_spec){.fn = where_task, .arg = &plain, .wg = &wg});
	jd_pool_submit(p, &(struct jd_task_spec){
				  .fn = where_task, .arg = &fiber, .flags = JD_TASK_FIBER, .wg = &wg});
	jd_wg_wait(&wg);
	assert_ptr_equal(plain.pool, p);
	assert_ptr_equal(fiber.pool, p);
	assert_true(plain.index >= 0 && plain.index < 2);
	assert_true(fiber.index >= 0 && fiber.index < 2);
	assert_false(plain.fiber);
	assert_true(fiber.fiber);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* The idle policy switches while tasks run, both ways, many times. */
static void test_idle_switch(void **state)
{
	(void)state;
	struct jd_pool *p = make_pool(2, JD_IDLE_SLEEP);
	struct counts c = {calloc(20000, sizeof(atomic_uint)), 20000};
	struct jd_wg wg = JD_WG_INIT;
	for (size_t i = 0; i < c.n; i++) {
		if (i % 1000 == 0) {
			enum jd_idle want = (i / 1000) % 2 ? JD_IDLE_SPIN : JD_IDLE_SLEEP;
			jd_pool_set_idle(p, want);
			assert_int_equal(jd_pool_idle(p), want);
		}
		struct hit h = {&c, i};
		jd_wg_add(&wg, 1);
		struct jd_task_spec s = {
			.fn = hit_task, .payload = &h, .payload_len = sizeof(h), .wg = &wg};
		assert_int_equal(jd_pool_submit(p, &s), 0);
		if (i % 7 == 0)
			assert_int_equal(jd_wg_wait(&wg), 0);
	}
	assert_int_equal(jd_wg_wait(&wg), 0);
	check_once(&c);
	jd_pool_set_idle(p, JD_IDLE_SLEEP);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(c.hits);
}

/* The feeder: a thread-safe source of N tasks, announced with jd_pool_notify.  Several
 * workers may call it at once, so each task's argument lives in the source for good. */
struct source {
	pthread_mutex_t lock;
	size_t next, avail;
	struct jd_wg *wg;
	atomic_uint calls;
	struct hit *all;
};

static size_t feeder(void *ctx, struct jd_task_spec *out, size_t max)
{
	struct source *src = ctx;
	atomic_fetch_add(&src->calls, 1);
	assert_true(jd_worker_index() >= 0);
	pthread_mutex_lock(&src->lock);
	size_t n = 0;
	while (n < max && src->next < src->avail) {
		out[n++] = (struct jd_task_spec){
			.fn = hit_task, .arg = &src->all[src->next], .wg = src->wg};
		src->next++;
	}
	pthread_mutex_unlock(&src->lock);
	return n;
}

static struct hit *all_hits(struct counts *c)
{
	struct hit *h = calloc(c->n, sizeof(*h));
	for (size_t i = 0; i < c->n; i++)
		h[i] = (struct hit){c, i};
	return h;
}

static void test_feeder(void **state)
{
	(void)state;
	struct counts c = {calloc(5000, sizeof(atomic_uint)), 5000};
	struct jd_wg wg = JD_WG_INIT;
	struct source src = {.next = 0, .avail = 0, .wg = &wg, .all = all_hits(&c)};
	pthread_mutex_init(&src.lock, NULL);
	atomic_init(&src.calls, 0);
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = 2;
	cfg.feeder = feeder;
	cfg.feeder_ctx = &src;
	cfg.feed_batch = 16;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	jd_wg_add(&wg, 5000);
	/* Release the jobs in steps, as the daemon's loop thread would. */
	for (size_t released = 0; released < 5000;) {
		size_t step = 1 + released % 37;
		if (released + step > 5000)
			step = 5000 - released;
		pthread_mutex_lock(&src.lock);
		src.avail += step;
		pthread_mutex_unlock(&src.lock);
		released += step;
		jd_pool_notify(p);
	}
	assert_int_equal(jd_wg_wait(&wg), 0);
	check_once(&c);
	struct jd_pool_stats st;
	jd_pool_stats(p, &st, NULL, 0);
	assert_int_equal(st.feeds, 5000);
	assert_true(atomic_load(&src.calls) > 0);
	/* Replace the feeder at run time; the old one is not called any more. */
	struct counts c2 = {calloc(100, sizeof(atomic_uint)), 100};
	struct jd_wg wg2 = JD_WG_INIT;
	struct source src2 = {.avail = 100, .wg = &wg2, .all = all_hits(&c2)};
	pthread_mutex_init(&src2.lock, NULL);
	atomic_init(&src2.calls, 0);
	jd_wg_add(&wg2, 100);
	jd_pool_set_feeder(p, feeder, &src2);
	assert_int_equal(jd_wg_wait(&wg2), 0);
	check_once(&c2);
	/* Removed: notify no longer calls anyone (the pool keeps working without it).  A
	 * call already under way on a worker may still end in the old feeder (pool.h): at
	 * most one per worker.  Twenty notifies, each followed by a task run to its end,
	 * call a feeder left installed 19 or 20 times (ten runs), so at most two says it was
	 * removed. */
	jd_pool_set_feeder(p, NULL, NULL);
	unsigned calls = atomic_load(&src2.calls);
	struct hit h0 = {&c2, 0};
	for (int i = 0; i < 20; i++) {
		struct jd_wg wg3 = JD_WG_INIT;

		jd_pool_notify(p);
		jd_wg_add(&wg3, 1);
		jd_pool_submit(p, &(struct jd_task_spec){.fn = hit_task, .arg = &h0, .wg = &wg3});
		assert_int_equal(jd_wg_wait(&wg3), 0);
	}
	assert_true(atomic_load(&src2.calls) - calls <= cfg.workers);
	assert_int_equal(atomic_load(&c2.hits[0]), 21);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	free(c.hits);
	free(c2.hits);
	free(src.all);
	free(src2.all);
	pthread_mutex_destroy(&src.lock);
	pthread_mutex_destroy(&src2.lock);
}

/* Topology and pinning: more workers than CPUs, pinned; each worker's victims are every
 * other worker exactly once, in tiers; workers on the same CPU are in tier 0; tasks run. */
static void test_topology_pin(void **state)
{
	(void)state;
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cfg.workers = (unsigned)(ncpu > 0 ? ncpu : 1) * 2;
	cfg.pin = true;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	unsigned n = p->nworkers;
	for (unsigned i = 0; i < n; i++) {
		struct jd_worker *w = &p->workers[i];
		assert_int_equal(w->tier_end[2], n - 1);
		assert_true(w->tier_end[0] <= w->tier_end[1] && w->tier_end[1] <= w->tier_end[2]);
		bool *seen = calloc(n, sizeof(*seen));
		for (unsigned k = 0; k < n - 1; k++) {
			unsigned v = w->victims[k];
			assert_true(v < n && v != i && !seen[v]);
			seen[v] = true;
			if (w->cpu >= 0 && p->workers[v].cpu == w->cpu)
				assert_true(k < w->tier_end[0]); /* same CPU: nearest tier */
		}
		free(seen);
	}
	struct counts c = {calloc(1000, sizeof(atomic_uint)), 1000};
	struct jd_wg wg = JD_WG_INIT;
	jd_wg_add(&wg, 1000);
	for (size_t i = 0; i < 1000; i++) {
		struct hit h = {&c, i};
		assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = hit_task, .payload = &h,
									   .payload_len = sizeof(h), .wg = &wg}),
				 0);
	}
	assert_int_equal(jd_wg_wait(&wg), 0);
	check_once(&c);
	free(c.hits);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

/* fibers_dontfork: a child forked from outside the fibers runs, and the fiber arena is not
 * in it (touching a fiber stack faults), while without the flag it is. */
static int fork_and_touch(struct jd_pool *p)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		volatile char *stack = p->fclass[0].fibers[0].stack_lo;
		stack[0] = 1;
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* platform_dontfork: whether MADV_DONTFORK keeps a mapping out of a child here (qemu-user
 * accepts the advice and ignores it). */
static bool platform_dontfork(void)
{
	volatile char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (m == MAP_FAILED || madvise((void *)(uintptr_t)m, 4096, MADV_DONTFORK))
		return false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		m[0] = 1;
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	munmap((void *)(uintptr_t)m, 4096);
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_dontfork(void **state)
{
	(void)state;
	bool honoured = platform_dontfork();
	if (!honoured)
		print_message("    MADV_DONTFORK is ignored here (emulator?): only the flag's absence is checked\n");
	for (int flag = 0; flag <= (honoured ? 1 : 0); flag++) {
		struct jd_pool_config cfg;
		jd_pool_config_init(&cfg);
		cfg.workers = 1;
		cfg.fibers = 4;
		cfg.large_fibers = 1;
		cfg.fibers_dontfork = flag;
		struct jd_pool *p;
		assert_int_equal(jd_pool_create(&p, &cfg), 0);
		int status = fork_and_touch(p);
		if (!flag)
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		else
			assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
	}
}

/* jd_pool_feed_here, from a task on the only worker: no announcement, nothing is done; after
 * jd_pool_notify, fn is called in the feeder's place and its tasks run right after the
 * task, in order; with work of its own queued (or from a thread outside the pool) nothing
 * is done either. */
struct here {
	struct jd_pool *p;
	struct jd_wg *wg;	/* x's and y's */
	atomic_uint calls;	/* here_fn's */
	bool r_quiet, r_fed, r_busy;
	char order[8];
	atomic_uint at;
};

static void mark(struct here *h, char c)
{
	unsigned i = atomic_fetch_add(&h->at, 1);
	if (i < sizeof(h->order) - 1)
		h->order[i] = c;
}

static void mark_x(void *arg) { mark(arg, 'x'); }
static void mark_y(void *arg) { mark(arg, 'y'); }

static size_t here_fn(void *ctx, struct jd_task_spec *out, size_t max)
{
	struct here *h = ctx;
	unsigned k = atomic_fetch_add(&h->calls, 1);
	assert_true(max >= 2);
	if (k != 1)
		return 0; /* the first call takes the announcement jd_pool_set_feeder made */
	out[0] = (struct jd_task_spec){.fn = mark_x, .arg = h, .wg = h->wg};
	out[1] = (struct jd_task_spec){.fn = mark_y, .arg = h, .wg = h->wg};
	return 2;
}

static size_t no_feed(void *ctx, struct jd_task_spec *out, size_t max)
{
	(void)ctx;
	(void)out;
	(void)max;
	return 0;
}

static void here_task(void *arg)
{
	struct here *h = arg;
	/* Whatever jd_pool_set_feeder announced: taken now (fn gives nothing). */
	(void)jd_pool_feed_here(h->p, here_fn, h);
	atomic_store(&h->calls, 1);
	h->r_quiet = jd_pool_feed_here(h->p, here_fn, h); /* nothing announced */
	jd_pool_notify(h->p);
	h->r_fed = jd_pool_feed_here(h->p, here_fn, h);	  /* x and y queued here */
	jd_pool_notify(h->p);
	h->r_busy = jd_pool_feed_here(h->p, here_fn, h);  /* they are this worker's own */
	mark(h, 't');
}

static void test_feed_here(void **state)
{
	(void)state;
	struct jd_pool_config cfg;
	jd_pool_config_init(&cfg);
	cfg.workers = 1;
	cfg.feed_batch = 2;
	struct jd_pool *p;
	assert_int_equal(jd_pool_create(&p, &cfg), 0);
	struct jd_wg wg = JD_WG_INIT, wg_xy = JD_WG_INIT;
	struct here h = {.p = p, .wg = &wg_xy};
	atomic_init(&h.calls, 0);
	atomic_init(&h.at, 0);
	jd_pool_set_feeder(p, no_feed, NULL);
	jd_wg_add(&wg, 1);
	jd_wg_add(&wg_xy, 2);
	assert_int_equal(jd_pool_submit(p, &(struct jd_task_spec){.fn = here_task, .arg = &h, .wg = &wg}), 0);
	assert_int_equal(jd_wg_wait(&wg), 0);
	assert_int_equal(jd_wg_wait(&wg_xy), 0);
	assert_false(h.r_quiet);
	assert_true(h.r_fed);
	assert_false(h.r_busy);
	assert_int_equal(atomic_load(&h.calls), 2);
	assert_string_equal(h.order, "txy");
	jd_pool_notify(p);
	assert_false(jd_pool_feed_here(p, here_fn, &h)); /* not on a worker */
	assert_int_equal(atomic_load(&h.calls), 2);
	assert_int_equal(jd_pool_destroy(p, JD_SHUTDOWN_GRACEFUL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_sleep),     cmocka_unit_test(test_once_spin),
		cmocka_unit_test(test_spawn_tree),     cmocka_unit_test(test_many_submitters),
		cmocka_unit_test(test_bad_specs),      cmocka_unit_test(test_introspection),
		cmocka_unit_test(test_idle_switch),    cmocka_unit_test(test_feeder),
		cmocka_unit_test(test_topology_pin),   cmocka_unit_test(test_dontfork),
		cmocka_unit_test(test_feed_here),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
