#!/bin/sh
# bench/e2e/run.sh [PART...] [--json FILE] [--runs N] [--quick]
#
# Build the release variant's bench_e2e, jschedd and jsched, then run the named parts of
# the end-to-end benchmark (rtt, tput, exec, fair, scale, cgroup, durable, hot; all when none
# is named), e.g.
#   bench/e2e/run.sh rtt                 the round trips alone
#   bench/e2e/run.sh tput exec --runs 7  two parts, 7 runs per row
# Other options go to the benchmark (bench/README.md).  It warns when another benchmark
# seems to be running: the machine has 2 cores and the figures would mean little.
set -eu
cd "$(dirname "$0")/../.."

parts=""
n=$#
i=0
while [ "$i" -lt "$n" ]; do
	a=$1
	shift
	i=$((i + 1))
	case "$a" in
	rtt | tput | exec | fair | scale | cgroup | durable | hot) parts="${parts:+$parts,}$a" ;;
	*) set -- "$@" "$a" ;;
	esac
done

# By process name, not command line: a script that waits to run a benchmark is not one.
if pgrep '^bench_' >/dev/null 2>&1; then
	echo "bench/e2e/run.sh: another benchmark is running:" >&2
	pgrep -a '^bench_' >&2 || true
fi
make -j2 build/rel/bench/bench_e2e build/rel/bin/jschedd build/rel/bin/jsched bench-deps >&2
if [ -n "$parts" ]; then
	exec build/rel/bench/bench_e2e --part "$parts" "$@"
fi
exec build/rel/bench/bench_e2e "$@"
