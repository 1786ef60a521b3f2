/* daemon/core/wake.h: a wake-up of the loop thread that never makes it wait for the waker.
 *
 * libuv's uv_async_send sets a flag, writes the loop's eventfd and sets the flag again;
 * the loop, woken by the write, spins (uv__async_spin) until every sender has finished
 * that second step.  A sender preempted between the two (the loop thread itself, woken
 * on the sender's CPU, is often what preempts it) holds the loop for the rest of its
 * time off the CPU: with the loop put ahead of the workers (`worker_scheduling` "low")
 * that cost short call jobs 20-40% of their rate, and beside threads the kernel runs
 * seldom it could hold the loop for good (daemon/README.md, "The loop thread's CPU").
 *
 * A jd_wake is an eventfd of its own, watched by a uv_poll_t: a sender's whole part is
 * one write(2) (which the kernel finishes whoever runs next); the loop reads the count
 * back (one read) and calls the callback.  Nothing the loop does depends on a sender
 * having returned.  Senders that want one wake-up per batch of work (the runner's notice
 * list) decide themselves when to send: a wake-up sent while the loop is busy costs one
 * more iteration, never a lost wake-up, provided the callback looks at the work after
 * the count was read (jd_wake reads it before calling back).
 *
 * Linux (eventfd), as the daemon.  The handle is the loop thread's; jd_wake_send is for
 * any thread.
 */
#ifndef JD_WAKE_H
#define JD_WAKE_H

#include <uv.h>

struct jd_wake {
	uv_poll_t poll;			/* the loop thread's */
	int fd;				/* the eventfd: any thread writes, the loop reads */
	void (*cb)(struct jd_wake *w);	/* loop thread, after the count was read */
	void *data;			/* the owner's */
};

/* jd_wake_init: make w's eventfd and start watching it on loop; cb runs on the loop
 * thread after every wake-up (one call for any number of sends since the last).
 * Returns 0 or a negative code (nothing to close then).  Loop thread. */
int jd_wake_init(uv_loop_t *loop, struct jd_wake *w, void (*cb)(struct jd_wake *w));

/* jd_wake_send: wake the loop: one write to the eventfd.  Any thread; safe against a
 * concurrent jd_wake_send and the loop's callback. */
void jd_wake_send(struct jd_wake *w);

/* jd_wake_close: stop watching and close the eventfd once the handle is closed (no
 * callback after this call).  Every sender must have stopped.  Loop thread. */
void jd_wake_close(struct jd_wake *w);

#endif /* JD_WAKE_H */
