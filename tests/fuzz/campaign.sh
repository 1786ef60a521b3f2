#!/bin/sh
# tests/fuzz/campaign.sh FUZZER RUNS WORKDIR: a long campaign of one libFuzzer target (the
# ASan+UBSan build under build/fuzz/), at nice 19 (FUZZ_NICE: another niceness, 0 for the
# normal priority), in one process (-jobs=1 -workers=1), for
# RUNS executions, from a corpus in WORKDIR/corpus-<name> seeded from tests/fuzz/corpus/<name>
# (the repository's seeds are read, never written).  libFuzzer's log (runs, exec/s, coverage,
# new inputs, each line timestamped by its run count) is WORKDIR/fuzz-<name>.log; a crash
# leaves WORKDIR/crash-*.  Run from the top of the tree; one campaign at a time on a shared
# machine.  Prints the final stats and exits with libFuzzer's status.
set -eu
t=$1
runs=$2
work=$3
name=${t##*/fuzz_}
t=$(cd "$(dirname "$t")" && pwd)/$(basename "$t")
mkdir -p "$work/corpus-$name"
cp -n "tests/fuzz/corpus/$name"/* "$work/corpus-$name/" 2>/dev/null || true
dict=""
extra="-timeout=10 -rss_limit_mb=1024"
[ -f "tests/fuzz/$name.dict" ] && dict="-dict=$PWD/tests/fuzz/$name.dict"
[ "$name" = fastreq ] && dict="-dict=$PWD/tests/fuzz/request.dict"
if [ "$name" = daemon ]; then
	# As in smoke.sh: the request target's words, no per-input leak check (the daemon
	# keeps bounded state from input to input).
	dict="-dict=$PWD/tests/fuzz/request.dict"
	extra="-timeout=30 -rss_limit_mb=2048 -detect_leaks=0"
fi
start=$(date +%s)
cd "$work"
status=0
nice -n "${FUZZ_NICE:-19}" "$t" -runs="$runs" -jobs=1 -workers=1 -seed="${FUZZ_SEED:-0}" $extra \
	-max_len=65536 -artifact_prefix="$PWD/" -print_final_stats=1 $dict "corpus-$name" \
	>"fuzz-$name.out" 2>&1 || status=$?
mv -f fuzz-0.log "fuzz-$name.log" 2>/dev/null || true
end=$(date +%s)
echo "fuzz_$name: exit $status, $((end - start)) s"
grep -E '^stat::|INFO: Seed|Done [0-9]+ runs' "fuzz-$name.log" || true
ls crash-* leak-* timeout-* oom-* 2>/dev/null || true
exit "$status"
