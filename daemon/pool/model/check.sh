#!/bin/sh
# daemon/pool/model/check.sh OUTDIR: model-check the pool's two handshakes with SPIN.
#
# For each model: the real protocol must verify with no errors, and its negative control
# (-DBROKEN: the order a shipped bug had) must fail, which shows the property can fail at
# all.  Needs the Debian package `spin` and a C compiler.  Exit status 0 when all four
# results are as expected.
set -eu
out=${1:-build/model}
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
command -v spin >/dev/null 2>&1 || {
	echo "pool-model: spin is not installed; run: apt-get install spin" >&2
	exit 1
}
mkdir -p "$out"
status=0
passed=0
failed=0
for model in park suspend; do
	for variant in ok broken; do
		dir="$out/$model-$variant"
		rm -rf "$dir" && mkdir -p "$dir"
		cp "$here/$model.pml" "$dir/"
		flag=""
		[ "$variant" = broken ] && flag="-DBROKEN"
		(cd "$dir" && spin $flag -a "$model.pml" >/dev/null &&
			$cc -O2 -DSAFETY -w -o pan pan.c && ./pan -m200000 >pan.out 2>&1) || true
		errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out" | head -n 1)
		states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$dir/pan.out" | head -n 1)
		if [ "$variant" = ok ] && [ "$errors" = 0 ]; then
			echo "PASS  $model: verified, $states states"
			passed=$((passed + 1))
		elif [ "$variant" = broken ] && [ -n "$errors" ] && [ "$errors" != 0 ]; then
			echo "PASS  $model -DBROKEN: the checker finds the bug (negative control)"
			passed=$((passed + 1))
		else
			echo "FAIL  $model $variant: errors=${errors:-?} (see $dir/pan.out)"
			status=1
			failed=$((failed + 1))
		fi
	done
done
echo "$passed passed, $failed failed"
exit $status
