#!/bin/sh
# mk/check-layers.sh [ROOT]: check that every #include in the daemon and the codec points
# down the layers (daemon/README.md, "Layers"), never up; exit 1 naming each include that
# does not.  mk/check-layers.sh --self-test: run the check on small trees made for it, one
# clean and some with a violation each, and fail unless it passes the first and catches
# every violation in the others.
#
# The layers, bottom up (a file may include its own layer and those below it):
#   0  below     proto/, daemon/fair/, daemon/pool/, arch/, include/jsched/ but jsched.h
#   1  core      daemon/core/
#   2  run       daemon/run/
#   3  net       daemon/net/
#   4  top       daemon/*.c, daemon/*.h
# The client library (libclient/, include/jsched/jsched.h) is no layer of the daemon: no
# file checked here may include it.  System headers (<...>) other than jsched.h are not
# looked at.
set -u

# layer_of PATH: the layer number of a file or include path, "client", or "" (not ours).
layer_of() {
	case $1 in
	include/jsched/jsched.h | jsched/jsched.h | libclient/*) echo client ;;
	proto/* | daemon/fair/* | daemon/pool/* | arch/* | include/jsched/* | jsched/*) echo 0 ;;
	daemon/core/*) echo 1 ;;
	daemon/run/*) echo 2 ;;
	daemon/net/*) echo 3 ;;
	daemon/*/*) echo "" ;;
	daemon/*) echo 4 ;;
	*) echo "" ;;
	esac
}

name_of() {
	case $1 in
	0) echo "below core" ;; 1) echo core ;; 2) echo run ;; 3) echo net ;; 4) echo top ;;
	*) echo "$1" ;;
	esac
}

# check ROOT: print each violation under ROOT; return 1 if there was one.
check() {
	root=$1
	bad=0
	files=$(cd "$root" && find daemon proto -name '*.[ch]' 2>/dev/null | sort)
	for f in $files; do
		from=$(layer_of "$f")
		[ -n "$from" ] || continue
		# Every quoted include, and a bracketed jsched/jsched.h.
		incs=$(sed -n -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
			-e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(jsched\/jsched\.h\)>.*/\1/p' \
			"$root/$f")
		for inc in $incs; do
			to=$(layer_of "$inc")
			[ -n "$to" ] || continue
			if [ "$to" = client ]; then
				echo "check-layers: $f includes $inc: the daemon and the codec do not use the client library"
				bad=1
			elif [ "$to" -gt "$from" ]; then
				echo "check-layers: $f ($(name_of "$from")) includes $inc ($(name_of "$to")): an include may not point up a layer"
				bad=1
			fi
		done
	done
	return $bad
}

# self_test: a clean tree passes, each tree with one violation fails and names it.
self_test() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mk() { mkdir -p "$(dirname "$1")" && printf '%s\n' "$2" >"$1"; }
	clean=$tmp/clean
	mk "$clean/daemon/core/jobs.h" '#include "daemon/fair/fair.h"'
	mk "$clean/daemon/run/runner.c" '#include "daemon/core/jobs.h"'
	mk "$clean/daemon/net/server.c" '#include "daemon/run/runner.h"
#include "proto/jproto.h"
#include <uv.h>'
	mk "$clean/daemon/main.c" '#include "daemon/net/server.h"'
	mk "$clean/proto/frame.c" '#include "jsched/error.h"'
	if ! out=$(check "$clean"); then
		echo "check-layers: self-test: a clean tree was refused:"
		echo "$out"
		return 1
	fi
	n=0
	for case in \
		'daemon/core/jobs.c|#include "daemon/net/session.h"|daemon/core/jobs.c (core) includes daemon/net/session.h' \
		'daemon/run/exec.c|#include "daemon/daemon.h"|daemon/run/exec.c (run) includes daemon/daemon.h' \
		'daemon/net/op_admin.c|  #  include "daemon/service.h"|daemon/net/op_admin.c (net) includes daemon/service.h' \
		'daemon/fair/fair.c|#include "daemon/core/clients.h"|daemon/fair/fair.c (below core) includes daemon/core/clients.h' \
		'proto/frame.c|#include "daemon/core/log.h"|proto/frame.c (below core) includes daemon/core/log.h' \
		'daemon/net/server.c|#include <jsched/jsched.h>|daemon/net/server.c includes jsched/jsched.h' \
		'daemon/main.c|#include "libclient/internal.h"|daemon/main.c includes libclient/internal.h'; do
		file=${case%%|*}
		rest=${case#*|}
		line=${rest%%|*}
		want=${rest#*|}
		n=$((n + 1))
		tree=$tmp/bad$n
		cp -R "$clean" "$tree"
		mkdir -p "$(dirname "$tree/$file")"
		printf '%s\n' "$line" >>"$tree/$file"
		if out=$(check "$tree"); then
			echo "check-layers: self-test: '$line' in $file was not caught"
			return 1
		fi
		case $out in
		*"$want"*) ;;
		*)
			echo "check-layers: self-test: '$line' in $file: expected \"$want\", got:"
			echo "$out"
			return 1
			;;
		esac
	done
	echo "check-layers: self-test: the clean tree passes, $n violations caught"
}

if [ "${1:-}" = --self-test ]; then
	self_test
	exit $?
fi
root=${1:-.}
if check "$root"; then
	echo "check-layers: every include in daemon/ and proto/ points down the layers"
else
	exit 1
fi
