/* daemon/pool/model/suspend.pml: a fiber's suspend and wake (fiber.c, wait.c), for SPIN.
 *
 * The fiber marks itself WANTS_SUSPEND, links its wait (unless the event is already set),
 * puts it in the timer, and switches to its worker; the
 * worker, back on its own stack, CASes WANTS_SUSPEND -> SUSPENDED.  Two wakers (the setter
 * and the timer; a cancel claims like the timer) race to claim the wait (unlink it under
 * the event's lock);
 * the winner wakes the fiber: SUSPENDED -> RUNNING and queue its resume record, or
 * WANTS_SUSPEND -> RESUME_PENDING, whereupon the worker's CAS fails and it resumes the
 * fiber itself.  A second worker runs queued resume records.
 *
 * Properties: the fiber runs again exactly once; nobody resumes it while its registers
 * are still being saved (the switch has not completed); a woken fiber always runs again.
 * -DBROKEN publishes the wait before marking the fiber parkable (JLib 1.3.5's order): the
 * checker finds a waker that sees RUNNING, a wake-up that is lost.
 */
#define RUNNING 0
#define WANTS_SUSPEND 1
#define SUSPENDED 2
#define RESUME_PENDING 3

byte state = RUNNING;
bit ev_set = 0;		/* the event */
bit linked = 0;		/* the wait is in the event's list */
bit timed = 0;		/* the wait is in the timer's heap */
bit switched = 0;	/* the fiber's registers are saved (it is off its stack) */
bit queued = 0;		/* its resume record is queued */
byte resumed = 0;	/* times it ran again after deciding to wait */
bit lost = 0;		/* a waker found it in a state it cannot wake */

inline wake()
{
	atomic {
		if
		:: state == SUSPENDED -> state = RUNNING; queued = 1
		:: state == WANTS_SUSPEND -> state = RESUME_PENDING
		:: else -> lost = 1
		fi
	}
}

proctype fiber_and_worker()
{
#ifdef BROKEN
	atomic {
		if
		:: ev_set -> resumed++; goto done	/* already set: no wait */
		:: else -> linked = 1
		fi
	}
	state = WANTS_SUSPEND;
#else
	state = WANTS_SUSPEND;	/* parkable first ... */
	atomic {		/* ... then published (link_wait, under the event lock) */
		if
		:: ev_set -> state = RUNNING; resumed++; goto done
		:: else -> linked = 1
		fi
	}
#endif
	timed = 1;		/* jd_timer_add */
	switched = 1;		/* jd_ctx_switch to the worker: registers saved */
	/* the worker, back on its own stack */
	atomic {
		if
		:: state == WANTS_SUSPEND -> state = SUSPENDED
		:: else ->
			assert(state == RESUME_PENDING);
			state = RUNNING;
			assert(switched);
			switched = 0;
			resumed++
		fi
	}
done:
	skip
}

proctype setter()
{
	bit mine;
	atomic { ev_set = 1; mine = linked; linked = 0 }	/* jd_event_set */
	if
	:: mine -> wake()
	:: else -> skip
	fi
}

proctype timer()
{
	bit mine;
end_t:
	atomic { timed == 1 -> mine = linked; linked = 0 }	/* the deadline; claim */
	if
	:: mine -> wake()
	:: else -> skip
	fi
}

proctype other_worker()
{
end_idle:
	atomic {
		queued == 1 ->
		queued = 0;
		assert(switched);	/* never resumed mid-switch */
		switched = 0;
		resumed++
	}
}

init
{
	atomic {
		run fiber_and_worker();
		run setter();
		run timer();
		run other_worker()
	}
}

/* When nothing can move, the fiber has run again exactly once and no wake was lost. */
active proctype monitor()
{
	timeout -> assert(!lost && resumed == 1)
}
