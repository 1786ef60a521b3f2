/* daemon/pool/model/park.pml: the park/notify handshake of worker.c, for the SPIN model
 * checker (`make pool-model`; Debian package `spin`).
 *
 * NW workers take items from one shared queue (standing for every deque, inbox, resume
 * queue and the feeder flag: the look reads them all) and park when they find none;
 * NP publishers each publish ITEMS items and wake a parked worker as worker.c does.  SPIN
 * explores every interleaving of these steps, which is sequential consistency: that is
 * what the two seq_cst fences buy for the accesses that matter (README.md, "Parking
 * without lost wake-ups").  The parker is the token parker of sync.h; a futex wait is a
 * guard that becomes true when the state leaves PARKED.
 *
 * Property: when nothing can move any more (SPIN's `timeout`), no item is left in the
 * queue, i.e. no published item waits while every worker sleeps.  Compile with -DBROKEN
 * for the negative control: the publisher reads nidle before it publishes (the order JLib
 * 1.3.0 effectively had), and SPIN finds the lost wake-up.
 */
#ifndef NW
#define NW 2
#endif
#ifndef NP
#define NP 2
#endif
#ifndef ITEMS
#define ITEMS 2
#endif

#define EMPTY 0
#define NOTIFIED 1
#define PARKED 2

byte queue = 0;		/* published, not taken */
byte nidle = 0;
bit idle[NW];
byte pstate[NW];	/* the parkers */

proctype worker(byte me)
{
	bit stay, was;
loop:
	atomic {
		if
		:: queue > 0 -> queue--; goto loop
		:: else -> skip
		fi
	}
	/* announce, then the parker's FENCE (SC here), then the look */
	idle[me] = 1;
	nidle++;
	if
	:: queue > 0 -> stay = 1
	:: else -> stay = 0
	fi;
	if
	:: stay -> skip
	:: else ->
		/* jd_park: consume a waiting token, or become PARKED and sleep */
		atomic {
			if
			:: pstate[me] == NOTIFIED -> pstate[me] = EMPTY; goto unannounce
			:: else -> skip
			fi
		}
		atomic {
			if
			:: pstate[me] == EMPTY -> pstate[me] = PARKED
			:: else -> pstate[me] = EMPTY; goto unannounce
			fi
		}
end_sleep:
		atomic { pstate[me] == NOTIFIED -> pstate[me] = EMPTY }
	fi;
unannounce:
	atomic { was = idle[me]; idle[me] = 0 }
	if
	:: was -> nidle--
	:: else -> skip
	fi;
	goto loop
}

proctype publisher()
{
	byte k = 0, v;
	bit was, look;
	do
	:: k < ITEMS ->
#ifdef BROKEN
		look = nidle > 0;
		queue++;
#else
		queue++;		/* publish, then the publisher's FENCE */
		look = nidle > 0;
#endif
		if
		:: look ->
			v = 0;
			do
			:: v < NW ->
				if
				:: idle[v] == 1 ->
					atomic { was = idle[v]; idle[v] = 0 }
					if
					:: was ->
						nidle--;
						pstate[v] = NOTIFIED; /* jd_unpark: exchange, futex wake */
						break
					:: else -> skip
					fi
				:: else -> skip
				fi;
				v++
			:: else -> break
			od
		:: else -> skip
		fi;
		k++
	:: else -> break
	od
}

init
{
	byte i;
	atomic {
		for (i : 0 .. NW - 1) {
			run worker(i)
		}
		for (i : 0 .. NP - 1) {
			run publisher()
		}
	}
}

/* When no process can move, the queue must be empty. */
active proctype monitor()
{
	timeout -> assert(queue == 0)
}
