/* daemon/pool/timer.c: the pool's timer thread, which ends fiber waits that time out.
 *
 * A fiber cannot sleep in the kernel without parking its worker, so a timed wait (and
 * jd_sleep) in a fiber puts its wait into this thread's min-heap by deadline and suspends.
 * At the deadline the thread claims the wait with JSCHED_ETIMEOUT (which queues the fiber
 * again) unless something else claimed it first.  The waiter removes its entry after it
 * resumes, under the timer lock, so the thread never touches a wait (or its event) whose
 * waiter has returned.  The heap's capacity is the number of fibers, which bounds the
 * number of suspended fiber waits, so adding never allocates.  Thread waiters time out by
 * themselves (a futex wait with a deadline) and never come here.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "daemon/pool/internal.h"
#include "jsched/error.h"

static bool earlier(const struct jd_wait *a, const struct jd_wait *b)
{
	return a->deadline < b->deadline;
}

static void place(struct jd_timer *t, size_t i, struct jd_wait *w)
{
	t->heap[i] = w;
	w->heap_index = i + 1;
}

static void sift_up(struct jd_timer *t, size_t i)
{
	struct jd_wait *w = t->heap[i];
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!earlier(w, t->heap[up]))
			break;
		place(t, i, t->heap[up]);
		i = up;
	}
	place(t, i, w);
}

static void sift_down(struct jd_timer *t, size_t i)
{
	struct jd_wait *w = t->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= t->n)
			break;
		if (c + 1 < t->n && earlier(t->heap[c + 1], t->heap[c]))
			c++;
		if (!earlier(t->heap[c], w))
			break;
		place(t, i, t->heap[c]);
		i = c;
	}
	place(t, i, w);
}

/* heap_remove: take the entry at i out (lock held). */
static void heap_remove(struct jd_timer *t, size_t i)
{
	struct jd_wait *gone = t->heap[i];
	gone->heap_index = 0;
	t->n--;
	if (i == t->n)
		return;
	place(t, i, t->heap[t->n]);
	sift_down(t, i);
	sift_up(t, i);
}

static void *timer_main(void *arg)
{
	struct jd_pool *p = arg;
	struct jd_timer *t = &p->timer;
	/* The default timer slack (50 µs) would make every timed fiber wait that late. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		if (t->n == 0) {
			pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		struct jd_wait *w = t->heap[0];
		uint64_t now = jd_now_ns();
		if (w->deadline <= now) {
			heap_remove(t, 0);
			jd_wait_claim(w, JSCHED_ETIMEOUT);
			continue;
		}
		struct timespec ts = {.tv_sec = (time_t)(w->deadline / 1000000000u),
				      .tv_nsec = (long)(w->deadline % 1000000000u)};
		pthread_cond_timedwait(&t->cond, &t->lock, &ts);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int jd_timer_init(struct jd_pool *p)
{
	struct jd_timer *t = &p->timer;
	t->n = 0;
	t->cap = (size_t)p->fclass[0].count + p->fclass[1].count + 1;
	t->heap = calloc(t->cap, sizeof(*t->heap));
	if (!t->heap)
		return JSCHED_ENOMEM;
	t->stop = false;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&t->lock, NULL);
	if (pthread_create(&t->thread, NULL, timer_main, p)) {
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->lock);
		free(t->heap);
		t->heap = NULL;
		return JSCHED_EINTERNAL;
	}
	pthread_setname_np(t->thread, "jd-timer");
	t->started = true;
	return 0;
}

void jd_timer_fini(struct jd_pool *p)
{
	struct jd_timer *t = &p->timer;
	if (!t->started)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t->heap);
	t->heap = NULL;
	t->started = false;
}

int jd_timer_add(struct jd_pool *p, struct jd_wait *w)
{
	struct jd_timer *t = &p->timer;
	pthread_mutex_lock(&t->lock);
	if (t->n == t->cap) { /* cannot happen: one entry per suspended fiber */
		pthread_mutex_unlock(&t->lock);
		return JSCHED_ENOMEM;
	}
	t->heap[t->n] = w;
	sift_up(t, t->n++);
	if (w->heap_index == 1)
		pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void jd_timer_remove(struct jd_pool *p, struct jd_wait *w)
{
	struct jd_timer *t = &p->timer;
	pthread_mutex_lock(&t->lock);
	if (w->heap_index)
		heap_remove(t, w->heap_index - 1);
	pthread_mutex_unlock(&t->lock);
}
