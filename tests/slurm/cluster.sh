#!/bin/sh
# tests/slurm/cluster.sh: a one-node Slurm cluster for the tests, private to one run.
#
#   cluster.sh check             exit 0 if a cluster can be made here, else print
#                                "skipped: REASON" and exit 1
#   cluster.sh run CMD [ARG...]  make a cluster and run CMD inside it; exit with CMD's
#                                status.  Cannot be made here: print the reason, exit 0
#                                without running CMD (a skip, as the other root-only tests)
#   cluster.sh selftest          run, with sbatch / squeue / scancel as CMD: the proof
#                                that the cluster takes, runs and cancels jobs
#   cluster.sh ctld stop|start   inside `run`: stop or start slurmctld (the outage tests)
#
# Everything is private to the run:
#   - namespaces: network (only a loopback, so the cluster's ports collide with nothing and
#     nothing outside can reach it), UTS (the host name is the node's name, "jtest"), PID
#     and mount (a private /proc).  The namespace's first process is `sh` running this
#     script; when it ends for any reason (CMD failed, a signal, the test runner's
#     time-out kills unshare, whose --kill-child passes SIGKILL on), the kernel kills every
#     process left in the PID namespace: slurmctld, slurmd, their job steps, jschedd.
#     Nothing of a run can outlive it.
#   - lo is brought up and given 127.0.0.2/8 besides 127.0.0.1: with only 127.0.0.1,
#     slurmctld could not resolve its own address and slurmd could not bind; the node and
#     the controller both live on 127.0.0.2.
#   - a temp dir (mode 0711) holds slurm.conf, the state and spool dirs, the logs and the
#     pid files; it is removed afterwards unless JSCHED_SLURM_KEEP=1 (its path is printed).
#   - auth/none and cred/none: no munged to start, no key to share.  Only processes inside
#     the namespace can reach the controller, and they all run as root or as a test user
#     the test made, so trusting the claimed uid is safe here (never on a real cluster).
#
# Inside CMD: SLURM_CONF names the config (libslurm and the client commands read it),
# JSCHED_SLURM_DIR the temp dir, JSCHED_SLURM_CLUSTER this script, JSCHED_SLURM_PARTITION
# the partition ("debug").  The node is idle before CMD starts (bounded wait: 10 s).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"
plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm

why_not() { # why_not: print why no cluster can be made here (nothing if one can)
	[ "$(id -u)" = 0 ] || { echo "the Slurm tests need root (namespaces, slurmd)"; return; }
	for f in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/bin/squeue \
		/usr/bin/scancel /usr/bin/sinfo /usr/bin/unshare /usr/sbin/ip; do
		[ -x "$f" ] || { echo "$f is missing (sh mk/deps.sh slurm)"; return; }
	done
	plugdir=$(dirname "$(find /usr/lib -name auth_none.so -path '*slurm*' 2>/dev/null | head -n 1)")
	[ -e "$plugdir/auth_none.so" ] || { echo "Slurm's auth/none plugin is missing"; return; }
	unshare -n -u -p -m --fork --mount-proc true 2>/dev/null ||
		{ echo "cannot create network/UTS/PID/mount namespaces here"; return; }
}

write_conf() { # write_conf DIR: slurm.conf for a one-node cluster in DIR
	cpus=$(nproc 2>/dev/null || echo 1)
	mem=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
	cat >"$1/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh for one test run; removed afterwards.
ClusterName=jtest
SlurmctldHost=jtest(127.0.0.2)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$1/state
SlurmdSpoolDir=$1/spool
SlurmctldPidFile=$1/slurmctld.pid
SlurmdPidFile=$1/slurmd.pid
SlurmctldLogFile=$1/slurmctld.log
SlurmdLogFile=$1/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Quick turnaround for tests: a cancelled job gets SIGKILL 1 s after SIGTERM, a finished
# job stays visible to squeue/slurm_load_jobs for 5 minutes, the controller notices a
# silent node late (it is never silent here).
KillWait=1
MinJobAge=300
SlurmdTimeout=300
MessageTimeout=5
NodeName=jtest NodeAddr=127.0.0.2 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=jtest Default=YES MaxTime=INFINITE State=UP
EOF
}

start_ctld() {
	/usr/sbin/slurmctld -f "$SLURM_CONF" -i
}

stop_daemon() { # stop_daemon PIDFILE: SIGTERM, then wait (bounded: 10 s) until it is gone
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	kill "$pid" 2>/dev/null || return 0
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$1"
}

wait_idle() { # wait_idle: until the node is idle (bounded: 10 s); 1 if it never was
	i=0
	while [ $i -lt 100 ]; do
		state=$(sinfo -h -n jtest -o %T 2>/dev/null || true)
		case "$state" in idle*) return 0 ;; esac
		sleep 0.1
		i=$((i + 1))
	done
	echo "cluster.sh: node jtest not idle after 10 s (state '$state')" >&2
	return 1
}

inside() { # inside CMD...: the namespace's first process
	ip link set lo up
	ip addr add 127.0.0.2/8 dev lo
	hostname jtest
	dir=$JSCHED_SLURM_DIR
	mkdir -p "$dir/state" "$dir/spool"
	write_conf "$dir"
	export SLURM_CONF="$dir/slurm.conf" JSCHED_SLURM_CLUSTER="$self"
	export JSCHED_SLURM_PARTITION=debug
	start_ctld
	/usr/sbin/slurmd -f "$SLURM_CONF" -N jtest
	if ! wait_idle; then
		tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
		exit 1
	fi
	rc=0
	"$@" || rc=$?
	stop_daemon "$dir/slurmd.pid"
	stop_daemon "$dir/slurmctld.pid"
	if [ $rc != 0 ]; then
		echo "cluster.sh: '$*' exited $rc; the last lines of the cluster's logs:" >&2
		tail -n 15 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
	fi
	exit $rc
}

selftest() { # selftest: sbatch, squeue and scancel against the cluster
	out="$JSCHED_SLURM_DIR/selftest.%j.out"
	id=$(sbatch --parsable -o "$out" --wrap 'echo "hello from $(hostname)"')
	i=0
	while [ -n "$(squeue -h -j "$id" 2>/dev/null)" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	got=$(cat "$JSCHED_SLURM_DIR/selftest.$id.out")
	[ "$got" = "hello from jtest" ] || { echo "selftest: job $id wrote '$got'" >&2; return 1; }
	echo "selftest: job $id ran on the node: '$got'"
	long=$(sbatch --parsable -o /dev/null --wrap 'sleep 60')
	i=0
	while [ "$(squeue -h -j "$long" -o %T)" != RUNNING ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(squeue -h -j "$long" -o %T)" = RUNNING ] || { echo "selftest: $long never ran" >&2; return 1; }
	scancel "$long"
	i=0
	while [ -n "$(squeue -h -j "$long" 2>/dev/null)" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -z "$(squeue -h -j "$long")" ] || { echo "selftest: $long still queued" >&2; return 1; }
	state=$(scontrol show job "$long" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
	[ "$state" = CANCELLED ] || { echo "selftest: $long ended $state" >&2; return 1; }
	echo "selftest: job $long ran and was cancelled"
}

case "${1:-}" in
check)
	reason=$(why_not)
	[ -z "$reason" ] && exit 0
	echo "skipped: $reason"
	exit 1
	;;
run | selftest)
	[ "$1" = run ] && [ $# -lt 2 ] && { echo "usage: cluster.sh run CMD [ARG...]" >&2; exit 2; }
	reason=$(why_not)
	if [ -n "$reason" ]; then
		echo "skipped: $reason"
		exit 0
	fi
	if [ "$1" = selftest ]; then
		set -- "$self" __selftest
	else
		shift
	fi
	JSCHED_SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/jsched-slurm.XXXXXX")
	chmod 0711 "$JSCHED_SLURM_DIR" # a test user's jobs reach their files below it
	export JSCHED_SLURM_DIR
	rc=0
	unshare -n -u -p -m --fork --mount-proc --kill-child "$self" __inside "$@" || rc=$?
	if [ "${JSCHED_SLURM_KEEP:-0}" = 1 ]; then
		echo "cluster.sh: kept $JSCHED_SLURM_DIR" >&2
	else
		rm -rf "$JSCHED_SLURM_DIR"
	fi
	exit $rc
	;;
__inside)
	shift
	inside "$@"
	;;
__selftest)
	selftest
	;;
ctld)
	: "${SLURM_CONF:?cluster.sh ctld: only inside cluster.sh run}"
	case "${2:-}" in
	stop) stop_daemon "$JSCHED_SLURM_DIR/slurmctld.pid" ;;
	start) start_ctld ;;
	*) echo "usage: cluster.sh ctld stop|start" >&2; exit 2 ;;
	esac
	;;
*)
	sed -n '2,12p' "$0" >&2
	exit 2
	;;
esac
