#!/bin/sh
# mk/run-tests.sh TEST...: run each test program in its own process with a time limit
# (JSCHED_TEST_TIMEOUT seconds, default 300), print PASS/FAIL per program, keep the output
# of failures, and end with the line "N passed, N failed".  Exit status 1 if any failed.
# A test that skips a check prints "skipped: <why>" on stderr; a passing program's reasons
# are shown under its PASS line (as an ordinary user, the checks that need root).
set -u
limit=${JSCHED_TEST_TIMEOUT:-300}
pass=0
fail=0
failed=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	start=$(date +%s)
	if timeout -k 10 "$limit" "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS  $t  ($(($(date +%s) - start)) s)"
		# What a test could not check here, in its words ("skipped: why", once each).
		grep '^skipped: ' "$log" | sort | uniq -c | sed 's/^ *\([0-9]*\) skipped: \(.*\)/      skipped (\1): \2/'
	else
		rc=$?
		fail=$((fail + 1))
		failed="$failed $t"
		[ "$rc" = 124 ] && why="timed out after ${limit} s" || why="exit $rc"
		echo "FAIL  $t  ($why)"
		# A long log's tail may be all sanitizer reports (the leaks of the connections a
		# failed check left open): cmocka's own lines of the failure come first.
		if [ "$(wc -l <"$log")" -gt 60 ]; then
			grep -B 4 -E '^\[  (ERROR|FAILED|  LINE)|^ERROR: ' "$log" | head -n 40 | sed 's/^/    ! /'
		fi
		sed 's/^/    | /' "$log" | tail -n 60
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
