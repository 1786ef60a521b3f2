#!/bin/sh
# test_man: the manual pages cannot drift from the programs.
#   - every option that `jsched --help` or `jsched COMMAND --help` names is in jsched(1),
#     written as the page writes options (*--name* or *-x*), and every command too;
#   - every option of `jschedd --help` is in jschedd(8);
#   - every function jsched.h exports is in libjsched(3);
#   - each page rendered (scdoc ran) and names itself in its header.
# The build's paths are filled in by man/build.mk (@...@).
set -eu
src='@SRCDIR@'
build='@BUILD@'
fails=0
missing() { echo "FAIL  $1"; fails=$((fails + 1)); }

# options_of TEXT: the options a help text names, one a line (--long and -x).
options_of() {
	printf '%s\n' "$1" | grep -oE -- '(^|[ ,[|(])(--[a-z][a-z-]*|-[A-Za-z])([^A-Za-z-]|$)' |
		sed -E 's/^[ ,[|(]//; s/[^A-Za-z-]$//' | sort -u
}

page="$src/man/jsched.1.scd"
help=$("$build/bin/jsched" --help)
commands=$(printf '%s\n' "$help" | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 && $1 != "Commands:" {print $1}')
[ -n "$commands" ] || missing "jsched --help lists no commands"
all="$help"
for c in $commands; do
	grep -qE "^\*$c( |\*)" "$page" || missing "jsched(1) has no entry for the command $c"
	all="$all
$("$build/bin/jsched" "$c" --help)"
done
n=0
for o in $(options_of "$all"); do
	n=$((n + 1))
	grep -qF -- "*$o*" "$page" || missing "jsched(1) does not name the option $o (from --help)"
done
[ "$n" -gt 20 ] || missing "only $n options found in jsched's help: the reading of --help is broken"

page="$src/man/jschedd.8.scd"
for o in $(options_of "$("$build/bin/jschedd" --help 2>&1 || true)"); do
	grep -qF -- "*$o*" "$page" || missing "jschedd(8) does not name the option $o (from jschedd --help)"
done

page="$src/man/libjsched.3.scd"
for f in $(grep -oE '^JSCHED_API [^(]*\(' "$src/include/jsched/jsched.h" | grep -oE 'jsched_[a-z_]+\($' | tr -d '('); do
	grep -qF -- "*$f*" "$page" || missing "libjsched(3) does not name $f (from jsched.h)"
done

for p in jsched.1 jschedd.8 jschedd.json.5 libjsched.3; do
	name=${p%.*}
	sec=${p##*.}
	grep -q "^\.TH \"$name\" \"$sec\"" "$build/man/$p" || missing "$build/man/$p is not the rendered page of $name($sec)"
done

[ "$fails" = 0 ] && echo "the man pages name every option and function"
[ "$fails" = 0 ]
