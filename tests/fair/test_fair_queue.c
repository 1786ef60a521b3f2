/* tests/fair/test_fair_queue.c: the promises about a queued job, one client at a time:
 * priority order, earliest deadline first within a priority, expiry without a dequeue,
 * each overflow strategy (and the global cap), cancel, drain, the in-flight window,
 * client removal, and exactly one final state per admitted job.  Virtual clock; no
 * threads.
 */
#include "tests/fair/fair_test.h"
#include "daemon/fair/pheap.h"

#define N_JOBS 64

static struct tjob jobs[N_JOBS];

static void count_client(struct jd_fair_client *c, void *arg)
{
	(void)c;
	(*(int *)arg)++;
}

static void assert_final(const struct tjob *t, enum jd_fair_final s)
{
	assert_int_equal(atomic_load(&t->finals), 1);
	assert_int_equal(atomic_load(&t->last), (int)s);
	assert_int_equal(t->fj.state, (int)s);
}

/* Take every job and complete it; assert each arrives in `order` (indices into jobs[]). */
static void expect_order(struct jd_fair *f, const int *order, int n)
{
	for (int i = 0; i < n; i++) {
		struct tjob *t = take1(f);
		assert_ptr_equal(t, &jobs[order[i]]);
		assert_final(t, JD_FAIR_DISPATCHED);
		complete1(f, t, 100);
	}
	struct jd_fair_job *none;
	assert_int_equal(jd_fair_take(f, &none, 1), 0);
}

static void test_priority_order(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	static const int prio[8] = {JD_FAIR_LOW, JD_FAIR_NORMAL, JD_FAIR_CRITICAL, JD_FAIR_HIGH,
				    JD_FAIR_LOW, JD_FAIR_CRITICAL, JD_FAIR_NORMAL, JD_FAIR_HIGH};
	for (int i = 0; i < 8; i++)
		assert_int_equal(admit(f, c, &jobs[i], 0, prio[i], 0, 1), JD_FAIR_QUEUED);
	/* Critical first, FIFO within each priority. */
	static const int order[8] = {2, 5, 3, 7, 1, 6, 0, 4};
	expect_order(f, order, 8);
	assert_int_equal(jd_fair_client_remove(f, c), 0);
	jd_fair_free(f);
}

static void test_edf_within_priority(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_WRR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	/* Normal: no deadline, 3000, none, 1000, 2000, 1000 (tie: FIFO); high: 5000. */
	assert_int_equal(admit(f, c, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[1], 0, JD_FAIR_NORMAL, 3000, 1), 0);
	assert_int_equal(admit(f, c, &jobs[2], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[3], 0, JD_FAIR_NORMAL, 1100, 1), 0);
	assert_int_equal(admit(f, c, &jobs[4], 0, JD_FAIR_NORMAL, 2000, 1), 0);
	assert_int_equal(admit(f, c, &jobs[5], 0, JD_FAIR_NORMAL, 1100, 1), 0);
	assert_int_equal(admit(f, c, &jobs[6], 0, JD_FAIR_HIGH, 5000, 1), 0);
	assert_int_equal(jd_fair_next_deadline(f), 1100);
	static const int order[7] = {6, 3, 5, 4, 1, 0, 2};
	expect_order(f, order, 7);
	assert_int_equal(jd_fair_next_deadline(f), UINT64_MAX);
	jd_fair_free(f);
}

static void test_expiry_without_dequeue(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *b = client_new(f, "b", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client_stats cs;

	/* Jobs with deadlines sit behind plenty of work without one; they expire when
	 * their deadline passes, not when they would reach the head. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(admit(f, a, &jobs[i], 0, JD_FAIR_CRITICAL, 0, 1), 0);
	assert_int_equal(admit(f, a, &jobs[10], 0, JD_FAIR_LOW, 5000, 1), 0);
	assert_int_equal(admit(f, b, &jobs[11], 1, JD_FAIR_LOW, 3000, 1), 0);
	assert_int_equal(admit(f, b, &jobs[12], 1, JD_FAIR_LOW, 9000, 1), 0);
	assert_int_equal(jd_fair_next_deadline(f), 3000);

	vclock_set(2999);
	assert_int_equal(jd_fair_expire(f), 0);
	vclock_set(3000);	/* a deadline is the last instant a job may start */
	assert_int_equal(jd_fair_expire(f), 1);
	assert_final(&jobs[11], JD_FAIR_EXPIRED);
	assert_int_equal(jd_fair_next_deadline(f), 5000);
	vclock_set(6000);
	assert_int_equal(jd_fair_expire(f), 1);
	assert_final(&jobs[10], JD_FAIR_EXPIRED);
	jd_fair_client_stats(f, a, NULL, &cs);
	assert_int_equal(cs.queued, 10);
	assert_int_equal(cs.counters.expired, 1);
	assert_int_equal(cs.counters.dispatched, 0);

	/* A take finds job 12 past its deadline without anyone calling expire: it expires
	 * instead of running. */
	vclock_set(10000);
	struct jd_fair_job *out[32];
	size_t n = jd_fair_take(f, out, 32);
	assert_int_equal(n, 10);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(TJOB(out[i])->client, 0);
	assert_final(&jobs[12], JD_FAIR_EXPIRED);
	jd_fair_complete(f, out, n);
	assert_int_equal(atomic_load(&hook_count[JD_FAIR_EXPIRED]), 3);
	assert_int_equal(atomic_load(&hook_count[JD_FAIR_DISPATCHED]), 10);
	jd_fair_free(f);
}

static void test_overflow_reject(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 2, JD_FAIR_REJECT);
	struct jd_fair_client_stats cs;

	assert_int_equal(admit(f, c, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[1], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[2], 0, JD_FAIR_CRITICAL, 0, 1), JSCHED_EQUEUE_FULL);
	assert_int_equal(atomic_load(&jobs[2].finals), 0);	/* rejected: no hook */
	assert_int_equal(jobs[2].fj.state, 0);
	jd_fair_client_stats(f, c, NULL, &cs);
	assert_int_equal(cs.counters.rejected, 1);
	assert_int_equal(cs.counters.submitted, 2);
	assert_int_equal(cs.queued, 2);
	/* Room again after a dispatch. */
	struct tjob *t = take1(f);
	assert_ptr_equal(t, &jobs[0]);
	assert_int_equal(admit(f, c, &jobs[2], 0, JD_FAIR_CRITICAL, 0, 1), 0);
	jd_fair_free(f);
}

static void test_overflow_drop_oldest(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 3, JD_FAIR_DROP_OLDEST);
	struct jd_fair_client_stats cs;

	assert_int_equal(admit(f, c, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[1], 0, JD_FAIR_LOW, 7000, 1), 0);
	assert_int_equal(admit(f, c, &jobs[2], 0, JD_FAIR_LOW, 0, 1), 0);
	/* Full.  A normal job drops the oldest low one (which had a deadline: it leaves
	 * the expiry order too). */
	assert_int_equal(admit(f, c, &jobs[3], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);
	assert_final(&jobs[1], JD_FAIR_DROPPED);
	assert_int_equal(jd_fair_next_deadline(f), UINT64_MAX);
	/* Another normal one drops the remaining low one. */
	assert_int_equal(admit(f, c, &jobs[4], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);
	assert_final(&jobs[2], JD_FAIR_DROPPED);
	/* Only normal ones left: a normal arrival drops the oldest normal one. */
	assert_int_equal(admit(f, c, &jobs[5], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);
	assert_final(&jobs[0], JD_FAIR_DROPPED);
	/* A low arrival is below everything queued: it is the one dropped. */
	assert_int_equal(admit(f, c, &jobs[6], 0, JD_FAIR_LOW, 0, 1), JD_FAIR_DROPPED_NEW);
	assert_final(&jobs[6], JD_FAIR_DROPPED);
	jd_fair_client_stats(f, c, NULL, &cs);
	assert_int_equal(cs.queued, 3);
	assert_int_equal(cs.counters.dropped, 4);
	assert_int_equal(cs.counters.submitted, 7);
	static const int order[3] = {3, 4, 5};
	expect_order(f, order, 3);
	jd_fair_free(f);
}

static void test_overflow_drop_newest(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 3, JD_FAIR_DROP_NEWEST);

	assert_int_equal(admit(f, c, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[1], 0, JD_FAIR_LOW, 0, 1), 0);
	assert_int_equal(admit(f, c, &jobs[2], 0, JD_FAIR_LOW, 0, 1), 0);
	/* A low arrival at a full queue is the newest of the lowest: dropped itself. */
	assert_int_equal(admit(f, c, &jobs[3], 0, JD_FAIR_LOW, 0, 1), JD_FAIR_DROPPED_NEW);
	assert_final(&jobs[3], JD_FAIR_DROPPED);
	/* A high arrival outranks the queued low ones: the newest low one goes. */
	assert_int_equal(admit(f, c, &jobs[4], 0, JD_FAIR_HIGH, 0, 1), JD_FAIR_QUEUED);
	assert_final(&jobs[2], JD_FAIR_DROPPED);
	static const int order[3] = {4, 0, 1};
	expect_order(f, order, 3);
	jd_fair_free(f);
}

static void test_overflow_block(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "a", 1, 4, JD_FAIR_BLOCK);
	struct jd_fair_client *out[4];
	struct jd_fair_client_stats cs;

	for (int i = 0; i < 3; i++)
		assert_int_equal(admit(f, c, &jobs[i], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);
	/* The fourth fills the queue: accepted, and the caller must stop reading. */
	assert_int_equal(admit(f, c, &jobs[3], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_BLOCKED);
	/* A job already read (rest of a frame) is still accepted, over the limit. */
	assert_int_equal(admit(f, c, &jobs[4], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_BLOCKED);
	jd_fair_client_stats(f, c, NULL, &cs);
	assert_true(cs.blocked);
	assert_int_equal(cs.queued, 5);
	assert_int_equal(cs.counters.rejected + cs.counters.dropped, 0);
	/* Not unblocked until the queue is at half its limit (2). */
	for (int i = 0; i < 2; i++)
		complete1(f, take1(f), 10);
	assert_int_equal(atomic_load(&wake_count), 0);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 0);
	complete1(f, take1(f), 10);
	assert_int_equal(atomic_load(&wake_count), 1);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 1);
	assert_ptr_equal(out[0], c);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 0);
	jd_fair_client_stats(f, c, NULL, &cs);
	assert_false(cs.blocked);
	assert_int_equal(admit(f, c, &jobs[5], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);

	/* Raising the limit of a blocked client frees it at once. */
	assert_int_equal(admit(f, c, &jobs[6], 0, JD_FAIR_NORMAL, 0, 1), JD_FAIR_BLOCKED);
	struct jd_fair_client_config cc = {.weight = 1, .max_queued = 100,
					   .overflow = JD_FAIR_BLOCK};
	assert_int_equal(jd_fair_client_set(f, c, &cc), 0);
	assert_int_equal(atomic_load(&wake_count), 2);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 1);
	for (int i = 0; i < 4; i++)
		complete1(f, take1(f), 10);
	assert_int_equal(atomic_load(&hook_count[JD_FAIR_DISPATCHED]), 7);
	jd_fair_free(f);
}

static void test_global_cap(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	cfg.max_queued = 4;
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *r = client_new(f, "reject", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *b = client_new(f, "block", 1, 0, JD_FAIR_BLOCK);
	struct jd_fair_client *d = client_new(f, "drop", 1, 0, JD_FAIR_DROP_OLDEST);
	struct jd_fair_client *out[4];
	struct jd_fair_stats st;

	assert_int_equal(admit(f, r, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, d, &jobs[1], 2, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, b, &jobs[2], 1, JD_FAIR_NORMAL, 0, 1), 0);
	/* The block client's admission fills the global queue: it is told to stop. */
	assert_int_equal(admit(f, b, &jobs[3], 1, JD_FAIR_NORMAL, 0, 1), JD_FAIR_BLOCKED);
	/* Full: reject and block clients are refused; drop_oldest replaces its own. */
	assert_int_equal(admit(f, r, &jobs[4], 0, JD_FAIR_NORMAL, 0, 1), JSCHED_EQUEUE_FULL);
	assert_int_equal(admit(f, b, &jobs[5], 1, JD_FAIR_NORMAL, 0, 1), JSCHED_EQUEUE_FULL);
	assert_int_equal(admit(f, d, &jobs[6], 2, JD_FAIR_NORMAL, 0, 1), JD_FAIR_QUEUED);
	assert_final(&jobs[1], JD_FAIR_DROPPED);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.queued, 4);
	assert_int_equal(st.total.rejected, 2);
	assert_int_equal(st.total.dropped, 1);
	/* Two dispatches bring the queue to half the cap: the block client is freed. */
	complete1(f, take1(f), 10);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 0);
	complete1(f, take1(f), 10);
	assert_int_equal(atomic_load(&wake_count), 1);
	assert_int_equal(jd_fair_unblocked(f, out, 4), 1);
	assert_ptr_equal(out[0], b);
	jd_fair_free(f);
}

static void test_cancel(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_WRR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *b = client_new(f, "b", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client_stats cs;

	assert_int_equal(admit(f, a, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, a, &jobs[1], 0, JD_FAIR_NORMAL, 4000, 1), 0);
	assert_int_equal(admit(f, a, &jobs[2], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(admit(f, b, &jobs[3], 1, JD_FAIR_NORMAL, 0, 1), 0);
	/* Never admitted. */
	memset(&jobs[9], 0, sizeof(jobs[9]));
	assert_int_equal(jd_fair_cancel(f, &jobs[9].fj), JSCHED_ENO_SUCH_JOB);
	/* The middle one, with a deadline: gone from the expiry order as well. */
	assert_int_equal(jd_fair_cancel(f, &jobs[1].fj), 0);
	assert_final(&jobs[1], JD_FAIR_CANCELLED);
	assert_int_equal(jd_fair_next_deadline(f), UINT64_MAX);
	assert_int_equal(jd_fair_cancel(f, &jobs[1].fj), JSCHED_ENO_SUCH_JOB);
	/* b's only job: b leaves the round. */
	assert_int_equal(jd_fair_cancel(f, &jobs[3].fj), 0);
	static const int order[2] = {0, 2};
	expect_order(f, order, 2);
	/* Dispatched jobs are not ours to cancel. */
	assert_int_equal(jd_fair_cancel(f, &jobs[0].fj), JSCHED_ENO_SUCH_JOB);
	assert_final(&jobs[0], JD_FAIR_DISPATCHED);
	jd_fair_client_stats(f, a, NULL, &cs);
	assert_int_equal(cs.counters.cancelled, 1);
	assert_int_equal(cs.counters.completed, 2);
	/* A cancelled job may be admitted again, as a new job. */
	assert_int_equal(jd_fair_admit(f, b, &jobs[3].fj), 0);
	assert_int_equal(jd_fair_admit(f, b, &jobs[3].fj), JSCHED_EINVAL);	/* queued */
	jd_fair_free(f);
}

static void test_drain_and_remove(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_client *b = client_new(f, "b", 2, 0, JD_FAIR_REJECT);
	struct jd_fair_stats st;

	for (int i = 0; i < 20; i++)
		assert_int_equal(admit(f, i % 2 ? a : b, &jobs[i], i % 2, i % 4,
				       i % 3 ? 0 : 100000 + (uint64_t)i, 1), 0);
	struct tjob *t = take1(f);	/* in flight */
	assert_int_equal(jd_fair_client_remove(f, a), JSCHED_EAGAIN);
	size_t na = jd_fair_drain(f, a);
	assert_int_equal(na + (t->client == 0 ? 0u : 1u), 10);
	assert_int_equal(jd_fair_drain(f, a), 0);
	if (t->client == 1) {
		assert_int_equal(jd_fair_client_remove(f, a), JSCHED_EAGAIN);
		complete1(f, t, 10);
		t = NULL;
	}
	assert_int_equal(jd_fair_client_remove(f, a), 0);
	/* Only b is left. */
	struct jd_fair_job *out[32];
	size_t n = jd_fair_take(f, out, 32);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(TJOB(out[i])->client, 0);
	jd_fair_complete(f, out, n);
	if (t != NULL)
		complete1(f, t, 10);
	for (int i = 0; i < 20; i++)
		assert_int_equal(atomic_load(&jobs[i].finals), 1);
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	/* Removed clients' counters stay in the totals. */
	assert_int_equal(st.total.submitted, 20);
	assert_int_equal(st.total.cancelled + st.total.dispatched, 20);
	assert_int_equal(st.total.completed, st.total.dispatched);
	assert_int_equal(st.clients, 1);
	assert_int_equal(st.queued + st.inflight, 0);
	jd_fair_free(f);
}

static void test_inflight_window(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.max_inflight = 3;
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *a = client_new(f, "a", 1, 0, JD_FAIR_REJECT);
	struct jd_fair_job *out[8];

	for (int i = 0; i < 8; i++)
		assert_int_equal(admit(f, a, &jobs[i], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(jd_fair_ready(f), 3);
	assert_int_equal(jd_fair_take(f, out, 8), 3);
	assert_int_equal(jd_fair_ready(f), 0);
	assert_int_equal(jd_fair_take(f, out + 3, 8), 0);
	jd_fair_complete(f, out, 2);
	assert_int_equal(jd_fair_ready(f), 2);
	assert_int_equal(jd_fair_take(f, out + 3, 8), 2);
	/* Complete and take under one lock, in place: room for the 2 completed. */
	assert_int_equal(jd_fair_complete_take(f, out + 2, 2, out + 2, 8, NULL), 2);
	assert_int_equal(jd_fair_ready(f), 0);
	jd_fair_set_max_inflight(f, 0);
	assert_int_equal(jd_fair_ready(f), 1);
	struct jd_fair_stats st;
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.inflight, 3);
	assert_int_equal(st.total.completed, 4);
	assert_int_equal(st.total.dispatched, 7);
	jd_fair_free(f);
}

/* Removing clients from the middle of the registry while others are in the `fair` heap:
 * the survivors keep their places and are all served. */
static void test_remove_renumbers(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	struct jd_fair_client *c[16];

	for (int i = 0; i < 16; i++)
		c[i] = client_new(f, "c", (uint32_t)(1 + i % 3), 0, JD_FAIR_REJECT);
	/* Odd clients get 3 jobs each; even ones stay idle and are removed. */
	int k = 0;
	for (int i = 1; i < 16; i += 2)
		for (int j = 0; j < 3; j++)
			assert_int_equal(admit(f, c[i], &jobs[k++], i, JD_FAIR_NORMAL, 0, 1), 0);
	for (int i = 0; i < 16; i += 2)
		assert_int_equal(jd_fair_client_remove(f, c[i]), 0);
	int got[16] = {0};
	for (int j = 0; j < k; j++) {
		struct tjob *t = take1(f);
		got[t->client]++;
		complete1(f, t, 1000);
	}
	for (int i = 1; i < 16; i += 2)
		assert_int_equal(got[i], 3);
	struct jd_fair_stats st;
	jd_fair_stats(f, JD_FAIR_METRIC_JOBS, &st);
	assert_int_equal(st.clients, 8);
	jd_fair_free(f);
}

/* Hooks run without the lock: a hook may call back into the instance. */
static struct jd_fair *reentrant_f;
static struct jd_fair_client *reentrant_c;
static int reentrant_calls;

static void reentrant_cb(struct jd_fair_job *job, enum jd_fair_final s, void *udata)
{
	struct jd_fair_stats st;

	(void)udata;
	test_final_cb(job, s, NULL);
	jd_fair_stats(reentrant_f, JD_FAIR_METRIC_JOBS, &st);
	if (s == JD_FAIR_CANCELLED && reentrant_calls++ == 0)	/* resubmit once */
		assert_int_equal(admit(reentrant_f, reentrant_c, &jobs[40], 0, JD_FAIR_LOW, 0, 1), 0);
}

static void test_hook_may_call_in(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	cfg.final_cb = reentrant_cb;
	reentrant_f = fair_new_or_die(&cfg);
	reentrant_c = client_new(reentrant_f, "a", 1, 0, JD_FAIR_REJECT);
	reentrant_calls = 0;
	assert_int_equal(admit(reentrant_f, reentrant_c, &jobs[0], 0, JD_FAIR_NORMAL, 0, 1), 0);
	assert_int_equal(jd_fair_cancel(reentrant_f, &jobs[0].fj), 0);
	assert_final(&jobs[0], JD_FAIR_CANCELLED);
	assert_ptr_equal(take1(reentrant_f), &jobs[40]);
	jd_fair_free(reentrant_f);
}

/* Freeing an instance with queued jobs and clients frees everything it owns (ASan's
 * leak check is the assertion); the jobs are the caller's and are not touched. */
static void test_free_with_queued(void **state)
{
	(void)state;
	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_DRR);
	struct jd_fair *f = fair_new_or_die(&cfg);
	int count = 0;

	for (int i = 0; i < 40; i++) {
		struct jd_fair_client *c = client_new(f, "c", 1, 0, JD_FAIR_REJECT);
		assert_int_equal(admit(f, c, &jobs[i], i, i % 4, i % 2 ? 5000 : 0, 1), 0);
	}
	jd_fair_foreach_client(f, count_client, &count);
	assert_int_equal(count, 40);
	jd_fair_free(f);
	for (int i = 0; i < 40; i++)
		assert_int_equal(atomic_load(&jobs[i].finals), 0);
}

/* The pairing heap against a reference: random inserts, removals of arbitrary nodes and
 * pops of the least, checked at every step. */
struct pnode {
	struct jd_fair_hnode h;
	uint64_t key;
	bool in;
};

static bool pnode_less(const struct jd_fair_hnode *a, const struct jd_fair_hnode *b)
{
	return ((const struct pnode *)(const void *)a)->key <
	       ((const struct pnode *)(const void *)b)->key;
}

static void test_pheap_random(void **state)
{
	(void)state;
	enum { N = 2000 };
	static struct pnode nodes[N];
	struct jd_fair_hnode *root = NULL;
	uint64_t seed = 7;
	int in = 0;

	for (int step = 0; step < 40000; step++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		int i = (int)((seed >> 33) % N), op = (int)((seed >> 20) % 3);
		if (!nodes[i].in) {
			nodes[i].key = (seed >> 40) % 1000;	/* duplicates on purpose */
			nodes[i].in = true;
			jd_pheap_insert(&root, &nodes[i].h, pnode_less);
			in++;
		} else if (op == 0) {
			jd_pheap_remove(&root, &nodes[i].h, pnode_less);
			nodes[i].in = false;
			in--;
		} else if (op == 1 && root != NULL) {
			struct pnode *m = (struct pnode *)(void *)root;
			jd_pheap_remove(&root, root, pnode_less);
			m->in = false;
			in--;
		}
		/* The root is a least key among the nodes in. */
		uint64_t least = UINT64_MAX;
		for (int k = 0; k < N; k++)
			if (nodes[k].in && nodes[k].key < least)
				least = nodes[k].key;
		if (in == 0)
			assert_null(root);
		else
			assert_int_equal(((struct pnode *)(void *)root)->key, least);
	}
	/* Drain in order. */
	uint64_t prev = 0;
	while (root != NULL) {
		struct pnode *m = (struct pnode *)(void *)root;
		assert_true(m->key >= prev);
		prev = m->key;
		jd_pheap_remove(&root, root, pnode_less);
		in--;
	}
	assert_int_equal(in, 0);
}

static void test_names_and_args(void **state)
{
	(void)state;
	enum jd_fair_policy p;
	enum jd_fair_overflow o;
	struct jd_fair *f;
	struct jd_fair_config bad = {.policy = (enum jd_fair_policy)7};

	assert_int_equal(jd_fair_new(&bad, &f), JSCHED_EINVAL);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(jd_fair_policy_parse(jd_fair_policy_name((enum jd_fair_policy)i), &p), 0);
		assert_int_equal(p, i);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(jd_fair_overflow_parse(jd_fair_overflow_name((enum jd_fair_overflow)i), &o), 0);
		assert_int_equal(o, i);
	}
	assert_int_equal(jd_fair_policy_parse("lottery", &p), JSCHED_EINVAL);
	assert_string_equal(jd_fair_final_name(JD_FAIR_EXPIRED), "expired");

	struct jd_fair_config cfg = test_config(JD_FAIR_POLICY_FAIR);
	f = fair_new_or_die(&cfg);
	struct jd_fair_client *c = client_new(f, "name", 0, 0, JD_FAIR_REJECT);
	struct jd_fair_client_config cc = {.overflow = (enum jd_fair_overflow)9};
	assert_int_equal(jd_fair_client_set(f, c, &cc), JSCHED_EINVAL);
	assert_string_equal(jd_fair_client_name(c), "name");
	assert_int_equal(admit(f, c, &jobs[0], 0, 4, 0, 1), JSCHED_EINVAL);
	assert_int_equal(jd_fair_set_policy(f, (enum jd_fair_policy)3), JSCHED_EINVAL);
	struct jd_fair_client_stats cs;
	jd_fair_client_stats(f, c, NULL, &cs);
	assert_int_equal(cs.config.weight, 1);	/* 0 means 1 */
	jd_fair_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_edf_within_priority),
		cmocka_unit_test(test_expiry_without_dequeue),
		cmocka_unit_test(test_overflow_reject),
		cmocka_unit_test(test_overflow_drop_oldest),
		cmocka_unit_test(test_overflow_drop_newest),
		cmocka_unit_test(test_overflow_block),
		cmocka_unit_test(test_global_cap),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_drain_and_remove),
		cmocka_unit_test(test_inflight_window),
		cmocka_unit_test(test_pheap_random),
		cmocka_unit_test(test_remove_renumbers),
		cmocka_unit_test(test_hook_may_call_in),
		cmocka_unit_test(test_free_with_queued),
		cmocka_unit_test(test_names_and_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
