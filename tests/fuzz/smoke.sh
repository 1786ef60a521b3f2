#!/bin/sh
# tests/fuzz/smoke.sh BUILD_DIR TARGET...: run each libFuzzer target for FUZZ_SECONDS
# (default 25) from its seed corpus (tests/fuzz/corpus/<name>), with what it finds kept in
# BUILD_DIR/corpus-<name>.  Prints PASS/FAIL per target and ends with "N passed, N failed",
# like mk/run-tests.sh.  A crash leaves its input in BUILD_DIR (crash-*); replay it with
# `TARGET FILE`, or with the gcc replay program build/<variant>/tests/fuzz/replay_<name> FILE.
set -u
dir=$1
shift
secs=${FUZZ_SECONDS:-25}
pass=0
fail=0
for t in "$@"; do
	name=${t##*/fuzz_}
	work=$dir/corpus-$name
	log=$dir/fuzz-$name.log
	mkdir -p "$work"
	dict=""
	[ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
	# fuzz_fastreq reads the same requests as fuzz_request: the same words.
	[ "$name" = fastreq ] && dict="-dict=tests/fuzz/request.dict"
	# -rss_limit_mb: the codec's limits keep memory small; anything above is a leak.
	# -timeout: one input taking seconds is a bug (quadratic behaviour).
	extra="-timeout=10 -rss_limit_mb=1024"
	if [ "$name" = daemon ]; then
		# The daemon speaks the request target's words; it keeps jobs and clients
		# from input to input (reachable, bounded by its config), so libFuzzer's
		# per-input leak check does not apply; an input waits up to 10 s for jobs.
		dict="-dict=tests/fuzz/request.dict"
		extra="-timeout=30 -rss_limit_mb=2048 -detect_leaks=0"
	fi
	# -seed: the same mutations in every CI run, so a failure reproduces (FUZZ_SEED=0:
	# a new seed each run, for longer campaigns).
	if "$t" -max_total_time="$secs" -seed="${FUZZ_SEED:-1}" $extra -max_len=65536 \
		-artifact_prefix="$dir/" -print_final_stats=1 $dict "$work" "tests/fuzz/corpus/$name" \
		>"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS  fuzz_$name  ($secs s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs, corpus $(ls "$work" | wc -l))"
	else
		fail=$((fail + 1))
		echo "FAIL  fuzz_$name"
		tail -n 40 "$log" | sed 's/^/    | /'
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
