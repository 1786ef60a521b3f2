/* tests/fair/fair_test.h: what the daemon/fair tests share: a virtual clock, a test job
 * that records its final states, and small helpers.  Header-only (static functions), so
 * each test file stays one program.
 */
#ifndef JD_FAIR_TEST_H
#define JD_FAIR_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/fair/fair.h"
#include "tests/common/rnd.h"

/* The virtual clock: tests move it by hand. */
static _Atomic uint64_t vclock_ns;

static inline uint64_t vclock(void *ctx)
{
	(void)ctx;
	return atomic_load_explicit(&vclock_ns, memory_order_relaxed);
}

static inline void vclock_set(uint64_t t)
{
	atomic_store_explicit(&vclock_ns, t, memory_order_relaxed);
}

static inline void vclock_advance(uint64_t d)
{
	atomic_fetch_add_explicit(&vclock_ns, d, memory_order_relaxed);
}

/* A job as a test sees it: the embedded record plus what the hook saw. */
struct tjob {
	struct jd_fair_job fj;
	int client;			/* the test's index of its client */
	int tag;			/* free for the test (e.g. arrival number) */
	_Atomic int finals;		/* how many times the final hook reported it */
	_Atomic int last;		/* the last final state reported */
};

#define TJOB(p) ((struct tjob *)(void *)((char *)(p) - offsetof(struct tjob, fj)))

/* Hook totals by final state, and the order of non-dispatch finals. */
static _Atomic uint64_t hook_count[5];
static _Atomic int wake_count;

static inline void test_final_cb(struct jd_fair_job *job, enum jd_fair_final s, void *udata)
{
	struct tjob *t = TJOB(job);

	(void)udata;
	atomic_fetch_add(&t->finals, 1);
	atomic_store(&t->last, (int)s);
	atomic_fetch_add(&hook_count[s], 1);
}

static inline void test_wake_cb(void *udata)
{
	(void)udata;
	atomic_fetch_add(&wake_count, 1);
}

static inline void hooks_reset(void)
{
	for (int i = 0; i < 5; i++)
		atomic_store(&hook_count[i], 0);
	atomic_store(&wake_count, 0);
}

/* The final hooks reported so far, every state. */
static inline uint64_t hooks_total(void)
{
	uint64_t t = 0;
	for (int s = 1; s <= 4; s++)
		t += atomic_load(&hook_count[s]);
	return t;
}

/* For the stress tests: a pseudo-random sequence (tests/common/rnd.h), and the wall clock
 * in s (their bound). */

static inline uint64_t wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* A config with the virtual clock and the recording hooks. */
static inline struct jd_fair_config test_config(enum jd_fair_policy policy)
{
	struct jd_fair_config cfg = {0};

	cfg.policy = policy;
	cfg.clock = vclock;
	cfg.final_cb = test_final_cb;
	cfg.wake_cb = test_wake_cb;
	cfg.window_ns = UINT64_C(1000000000000); /* 1000 s: the whole test */
	return cfg;
}

static inline struct jd_fair *fair_new_or_die(const struct jd_fair_config *cfg)
{
	struct jd_fair *f = NULL;

	vclock_set(1000);
	hooks_reset();
	assert_int_equal(jd_fair_new(cfg, &f), 0);
	assert_non_null(f);
	return f;
}

static inline struct jd_fair_client *client_new(struct jd_fair *f, const char *name, uint32_t weight,
					 uint32_t max_queued, enum jd_fair_overflow ov)
{
	struct jd_fair_client_config cc = {.weight = weight, .max_queued = max_queued,
					   .overflow = ov};
	struct jd_fair_client *c = NULL;

	assert_int_equal(jd_fair_client_add(f, name, &cc, NULL, &c), 0);
	return c;
}

/* Fill in a test job of needs class cls (zeroing it) and admit it; returns
 * jd_fair_admit's result.  admit: the same in class 0. */
static inline int admit_in(struct jd_fair *f, struct jd_fair_client *c, struct tjob *t,
			   int client, int tag, uint8_t cls, int prio, uint64_t deadline,
			   uint32_t cost)
{
	memset(t, 0, sizeof(*t));
	t->client = client;
	t->tag = tag;
	t->fj.prio = (uint8_t)prio;
	t->fj.deadline_ns = deadline;
	t->fj.cost = cost;
	t->fj.cls = cls;
	return jd_fair_admit(f, c, &t->fj);
}

static inline int admit(struct jd_fair *f, struct jd_fair_client *c, struct tjob *t, int client,
		 int prio, uint64_t deadline, uint32_t cost)
{
	return admit_in(f, c, t, client, 0, 0, prio, deadline, cost);
}

/* Take one job (asserting there is one) and return it. */
static inline struct tjob *take1(struct jd_fair *f)
{
	struct jd_fair_job *j = NULL;

	assert_int_equal(jd_fair_take(f, &j, 1), 1);
	return TJOB(j);
}

static inline void complete1(struct jd_fair *f, struct tjob *t, uint64_t run_ns)
{
	struct jd_fair_job *j = &t->fj;

	t->fj.run_ns = run_ns;
	jd_fair_complete(f, &j, 1);
}

#endif /* JD_FAIR_TEST_H */
