/* bench/pool/releaser.c: the timer thread of the blocking row (see releaser.h). */
#include "bench/pool/releaser.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

struct timer {
	uint64_t deadline_ns;
	void (*fire)(void *arg);
	void *arg;
};

struct releaser {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* signalled when the earliest deadline changes or on stop */
	struct timer *heap;	/* min-heap on deadline_ns; under lock */
	size_t n, cap;		/* under lock */
	bool stop;		/* under lock */
	uint64_t fired, late_sum_ns, late_max_ns; /* lateness so far; under lock */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void heap_swap(struct timer *h, size_t a, size_t b)
{
	struct timer t = h[a];
	h[a] = h[b];
	h[b] = t;
}

static void heap_push(struct releaser *r, struct timer t)
{
	size_t i = r->n++;
	r->heap[i] = t;
	while (i > 0 && r->heap[(i - 1) / 2].deadline_ns > r->heap[i].deadline_ns) {
		heap_swap(r->heap, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static struct timer heap_pop(struct releaser *r)
{
	struct timer top = r->heap[0];
	r->heap[0] = r->heap[--r->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->n && r->heap[l].deadline_ns < r->heap[m].deadline_ns)
			m = l;
		if (l + 1 < r->n && r->heap[l + 1].deadline_ns < r->heap[m].deadline_ns)
			m = l + 1;
		if (m == i)
			break;
		heap_swap(r->heap, i, m);
		i = m;
	}
	return top;
}

static void *releaser_main(void *arg)
{
	struct releaser *r = arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&r->lock);
	for (;;) {
		if (r->n == 0) {
			if (r->stop)
				break;
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		uint64_t now = now_ns();
		if (r->stop || r->heap[0].deadline_ns <= now) {
			struct timer t = heap_pop(r);
			if (!r->stop) {
				uint64_t late = now - t.deadline_ns;
				r->fired++;
				r->late_sum_ns += late;
				if (late > r->late_max_ns)
					r->late_max_ns = late;
			}
			pthread_mutex_unlock(&r->lock);
			t.fire(t.arg);
			pthread_mutex_lock(&r->lock);
			continue;
		}
		struct timespec until = {
			.tv_sec = (time_t)(r->heap[0].deadline_ns / 1000000000u),
			.tv_nsec = (long)(r->heap[0].deadline_ns % 1000000000u),
		};
		pthread_cond_timedwait(&r->cond, &r->lock, &until);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct releaser *releaser_start(void)
{
	struct releaser *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->cap = 1024;
	r->heap = malloc(r->cap * sizeof *r->heap);
	if (!r->heap)
		goto out_free;
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&r->lock, NULL);
	int err = pthread_create(&r->thread, NULL, releaser_main, r);
	if (err) {
		errno = err;
		goto out_destroy;
	}
	return r;

out_destroy:
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->heap);
out_free:
	free(r);
	return NULL;
}

int releaser_after(struct releaser *r, uint64_t deadline_ns, void (*fire)(void *arg), void *arg)
{
	pthread_mutex_lock(&r->lock);
	if (r->n == r->cap) {
		struct timer *h = realloc(r->heap, 2 * r->cap * sizeof *h);
		if (!h) {
			pthread_mutex_unlock(&r->lock);
			return -1;
		}
		r->heap = h;
		r->cap *= 2;
	}
	heap_push(r, (struct timer){deadline_ns, fire, arg});
	bool earliest = r->heap[0].arg == arg && r->heap[0].deadline_ns == deadline_ns;
	pthread_mutex_unlock(&r->lock);
	if (earliest)
		pthread_cond_signal(&r->cond);
	return 0;
}

void releaser_lateness(struct releaser *r, uint64_t *count, uint64_t *mean_ns,
		       uint64_t *max_ns)
{
	pthread_mutex_lock(&r->lock);
	*count = r->fired;
	*mean_ns = r->fired ? r->late_sum_ns / r->fired : 0;
	*max_ns = r->late_max_ns;
	r->fired = r->late_sum_ns = r->late_max_ns = 0;
	pthread_mutex_unlock(&r->lock);
}

void releaser_stop(struct releaser *r)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_mutex_unlock(&r->lock);
	pthread_cond_signal(&r->cond);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->heap);
	free(r);
}
