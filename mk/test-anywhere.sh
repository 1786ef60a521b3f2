#!/bin/sh
# mk/test-anywhere.sh WHERE [MAKE-ARGS...]: `make test` from a fresh clone of HEAD, in a
# place where a test that reaches into the checkout from another user's side would fail.
#
#   private   as the caller, from a clone in a directory of mode 0700 (`mktemp -d`) that
#             no other user can enter (as root: the security tests' second user cannot
#             reach the build there)
#   user      as an ordinary user (JSCHED_CI_USER, default jsched-ci, created if absent),
#             from a clone that user owns under its own `mktemp -d`; needs root to create
#             and become that user, and says so (exit 0) otherwise
#
# The clone is of the committed HEAD (what CI checks out), built from nothing and removed
# afterwards; the output ends with mk/run-tests.sh's "N passed, N failed"; the exit status
# is make's.
set -eu
where=${1:?usage: mk/test-anywhere.sh private|user [MAKE-ARGS...]}
shift
src=$(git rev-parse --show-toplevel)
rev=$(git rev-parse HEAD)
# clone DIR: a clone of the source at exactly its HEAD (detached there, as CI's may be).
clone() {
	git clone -q "$src" "$1"
	git -C "$1" checkout -q --detach "$rev"
}
jobs=$(nproc 2>/dev/null || echo 2)

case "$where" in
private)
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	chmod 0700 "$dir"
	clone "$dir/j"
	echo "test-anywhere: make test of $(git rev-parse --short "$rev") in $dir/j" \
		"($(stat -c '%a %U' "$dir"), as $(id -un))"
	cd "$dir/j" && make -j"$jobs" test "$@"
	;;
user)
	user=${JSCHED_CI_USER:-jsched-ci}
	if [ "$(id -u)" != 0 ]; then
		echo "test-anywhere: skipped: running the tests as another user needs root"
		exit 0
	fi
	id -u "$user" >/dev/null 2>&1 ||
		useradd --create-home --shell /bin/sh "$user"
	dir=$(runuser -u "$user" -- mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	# Cloned as root (the checkout may be where that user cannot read), then handed over.
	clone "$dir/j"
	chown -R "$user:" "$dir/j"
	echo "test-anywhere: make test of $(git rev-parse --short "$rev") in $dir/j (as $user)"
	home=$(getent passwd "$user" | cut -d: -f6)
	cd "$dir/j" && runuser -u "$user" -- env HOME="$home" USER="$user" LOGNAME="$user" \
		make -j"$jobs" test "$@"
	;;
*)
	echo "mk/test-anywhere.sh: WHERE is private or user, not '$where'" >&2
	exit 2
	;;
esac
