#!/bin/sh
# bench/e2e/ab.sh OLD_JSCHEDD PART [ROUNDS]: one part of the end-to-end benchmark against
# two builds of jschedd in one session, interleaved (old, new, old, new, ...: ROUNDS
# rounds, default 3, each of bench_e2e's own --runs 3), so both see the same machine.
# The client side (bench_e2e, libjsched) is this tree's for both, except the jsched tool
# of the CLI rows, which is the old build's for the old side when it has one; and when the
# old jschedd is a tree's build/<dir>/bin/jschedd whose build/<dir>/bench/bench_e2e exists,
# the old side runs that bench_e2e from that tree (an older daemon may refuse this tree's
# hello: protocol 3's libjsched refuses a daemon of [1, 2], PROTOCOL.md 11).  Prints each round's
# rows and, at the end, bench/compare.py's table of the last old and new rounds merged
# by median; the JSON files stay in the printed directory.
#   bench/e2e/ab.sh /work/wt/base/build/rel/bin/jschedd tput
set -eu
cd "$(dirname "$0")/../.."
old=$1
part=$2
rounds=${3:-3}
[ -x "$old" ] || { echo "bench/e2e/ab.sh: $old is not an executable jschedd" >&2; exit 2; }
# The old side's command-line tool, beside its jschedd (the CLI rows time the tool and the
# daemon together); this tree's if there is none.
oldtool=$(dirname "$old")/jsched
[ -x "$oldtool" ] || oldtool=$(pwd)/build/rel/bin/jsched
# The old build's own benchmark and the tree it runs from, if it has them.
old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
oldbench=$(dirname "$old")/../bench/bench_e2e
oldtree=$(dirname "$old")/../../..
if [ -x "$oldbench" ] && [ -f "$oldtree/Makefile" ]; then
	oldbench=$(cd "$(dirname "$oldbench")" && pwd)/bench_e2e
	oldtree=$(cd "$oldtree" && pwd)
else
	oldbench=$(pwd)/build/rel/bench/bench_e2e
	oldtree=$(pwd)
fi
make -j2 build/rel/bench/bench_e2e build/rel/bin/jschedd build/rel/bin/jsched bench-deps >&2
out=$(mktemp -d /tmp/bench-ab-XXXXXX)
echo "old: $("$old" --version)"
echo "old side's client: $oldbench"
echo "new: $(build/rel/bin/jschedd --version)"
i=1
while [ "$i" -le "$rounds" ]; do
	(cd "$oldtree" && BENCH_E2E_JSCHEDD=$old BENCH_E2E_JSCHED=$oldtool "$oldbench" --part "$part" --runs 3 --json "$out/old-$i.json" >"$out/old-$i.txt")
	build/rel/bench/bench_e2e --part "$part" --runs 3 --json "$out/new-$i.json" >"$out/new-$i.txt"
	i=$((i + 1))
done
python3 bench/e2e/ab_merge.py "$out" "$rounds"
echo "files: $out"
