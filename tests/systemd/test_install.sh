#!/bin/sh
# test_install: what a packager does, checked.  After the build (with its default
# PREFIX), `make install PREFIX=/usr DESTDIR=<tmp>/stage`, then:
#   - every file is where it belongs: jschedd-runas in /usr/libexec/jschedd/, not in
#     /usr/bin; the units, sysusers entry, headers, library, man pages, completions, the
#     example config under the doc dir;
#   - no unit, sysusers entry or jsched.pc names /usr/local (the build's own PREFIX);
#   - `systemd-analyze verify --root` passes for the staged units (the system pair, and the
#     user pair verified the same way), and fails for a unit whose ExecStart names a
#     binary the stage does not have (the check has teeth);
#   - the system unit sets none of the sandboxing settings a job would inherit, and sets
#     OOMPolicy=continue and StateDirectory=jschedd;
#   - jsched.pc is ${prefix}-relative: a program built with `pkg-config --define-prefix`
#     against the stage compiles, links and runs;
#   - the staged jschedd finds the staged jschedd-runas (metrics exec.helper), and the
#     staged jsched, where it is static, its jsched-full in /usr/libexec/jsched/ (a table);
#   - the example config passes --check-config and is the one the README shows;
#   - `make uninstall` with the same paths leaves no file behind.
# The build's variables are filled in by systemd/build.mk (@...@).
set -eu
src='@SRCDIR@'
build='@BUILD@'
makevars='@MAKEVARS@'
cc='@CC@'
jsched_static='@JSCHED_STATIC@'

tmp=$(mktemp -d /tmp/jsched-install.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
stage=$tmp/stage
fails=0
ok() { echo "ok    $1"; }
bad() { echo "FAIL  $1"; fails=$((fails + 1)); }
check() { # check NAME COMMAND...: COMMAND must succeed
	name=$1
	shift
	if "$@" >"$tmp/check.log" 2>&1; then ok "$name"; else bad "$name"; sed 's/^/      /' "$tmp/check.log"; fi
}
refute() { # refute NAME COMMAND...: COMMAND must fail
	name=$1
	shift
	if "$@" >"$tmp/check.log" 2>&1; then bad "$name"; sed 's/^/      /' "$tmp/check.log"; else ok "$name"; fi
}

# The inner make must not join the outer one's jobserver; it has nothing to build.
unset MAKEFLAGS MFLAGS MAKELEVEL
# shellcheck disable=SC2086
if ! make -C "$src" -s --no-print-directory $makevars install PREFIX=/usr DESTDIR="$stage" \
	>"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL  make install"
	exit 1
fi
ok "make install PREFIX=/usr DESTDIR=stage"

for f in usr/bin/jschedd usr/bin/jsched usr/libexec/jschedd/jschedd-runas \
	usr/lib/systemd/system/jschedd.service usr/lib/systemd/system/jschedd.socket \
	usr/lib/systemd/user/jschedd.service usr/lib/systemd/user/jschedd.socket \
	usr/lib/sysusers.d/jschedd.conf usr/lib/pkgconfig/jsched.pc usr/lib/libjsched.so.0 \
	usr/include/jsched/jsched.h usr/include/jsched/error.h usr/include/jsched/module.h \
	usr/share/doc/jschedd/README.md usr/share/doc/jschedd/examples/jschedd.json \
	usr/share/man/man1/jsched.1 usr/share/man/man8/jschedd.8 usr/share/man/man5/jschedd.json.5 \
	usr/share/man/man3/libjsched.3 usr/share/bash-completion/completions/jsched \
	usr/share/zsh/vendor-completions/_jsched usr/share/fish/vendor_completions.d/jsched.fish; do
	check "installed /$f" test -e "$stage/$f"
done
refute "no jschedd-runas in /usr/bin" test -e "$stage/usr/bin/jschedd-runas"
if [ "$jsched_static" = 1 ]; then
	check "installed /usr/libexec/jsched/jsched-full" test -x "$stage/usr/libexec/jsched/jsched-full"
	refute "no jsched-full in /usr/bin" test -e "$stage/usr/bin/jsched-full"
fi
refute "no unit, sysusers entry or jsched.pc names /usr/local" grep -rl /usr/local "$stage/usr/lib/systemd" \
	"$stage/usr/lib/sysusers.d" "$stage/usr/lib/pkgconfig"
check "ExecStart is the staged path" grep -qx 'ExecStart=/usr/bin/jschedd --config-optional /etc/jschedd/jschedd.json' \
	"$stage/usr/lib/systemd/system/jschedd.service"

# The sandbox: nothing a job would inherit.
units="$stage/usr/lib/systemd/system/jschedd.service $stage/usr/lib/systemd/user/jschedd.service"
inherited='NoNewPrivileges|RestrictSUIDSGID|CapabilityBoundingSet|ProtectSystem|ProtectHome|PrivateTmp|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|PrivateDevices|DevicePolicy|DeviceAllow|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|ProtectClock|ProtectHostname|LockPersonality|SystemCallArchitectures|SystemCallFilter|RestrictRealtime|RestrictNamespaces|RestrictAddressFamilies|PrivateNetwork|IPAddressDeny|MemoryDenyWriteExecute|ProtectProc|ProcSubset|DynamicUser|PrivateUsers'
# shellcheck disable=SC2086
refute "no inherited sandboxing setting is on" sh -c "grep -E '^($inherited)=' $units | grep -vE '=(no|false)\$'"
check "OOMPolicy=continue" grep -qx OOMPolicy=continue $units
check "StateDirectory=jschedd" grep -qx StateDirectory=jschedd "$stage/usr/lib/systemd/system/jschedd.service"

# systemd-analyze verify --root resolves every path in the root: the stage plus the
# distribution's targets and kill (ExecReload).  --user cannot take --root, so the user
# units are verified as units of a second root (their specifiers resolve there too).
if command -v systemd-analyze >/dev/null 2>&1 && [ -d /usr/lib/systemd/system ] && [ -x /bin/kill ]; then
	mkroot() { # mkroot DIR UNITDIR...: a root with the stage, the host's targets and kill
		mkdir -p "$1"
		cp -a "$stage/usr" "$1/"
		mkdir -p "$1/usr/lib/systemd/system" "$1/usr/bin"
		cp -a /usr/lib/systemd/system/*.target "$1/usr/lib/systemd/system/"
		cp /bin/kill "$1/usr/bin/kill"
		ln -s usr/bin "$1/bin"
	}
	verify() { # verify ROOT UNIT...
		root=$1
		shift
		(cd "$root/usr/lib/systemd/system" && systemd-analyze verify --root="$root" --man=no "$@")
	}
	mkroot "$tmp/root"
	check "systemd-analyze verify: system units" verify "$tmp/root" jschedd.service jschedd.socket
	mkroot "$tmp/uroot"
	cp "$stage/usr/lib/systemd/user/jschedd.service" "$stage/usr/lib/systemd/user/jschedd.socket" \
		"$tmp/uroot/usr/lib/systemd/system/"
	check "systemd-analyze verify: user units" verify "$tmp/uroot" jschedd.service jschedd.socket
	sed -i 's|^ExecStart=/usr/bin/|ExecStart=/usr/local/bin/|' "$tmp/root/usr/lib/systemd/system/jschedd.service"
	refute "systemd-analyze verify: a unit naming /usr/local fails" verify "$tmp/root" jschedd.service
else
	echo "skipped: systemd-analyze, /usr/lib/systemd/system or /bin/kill is not here"
fi

# jsched.pc, relocated with --define-prefix: compile, link and run a client against it.
check "jsched.pc: libdir is \${prefix}-relative" grep -qx 'libdir=${prefix}/lib' "$stage/usr/lib/pkgconfig/jsched.pc"
cat >"$tmp/t.c" <<'EOF'
#include <jsched/jsched.h>
#include <stdio.h>
int main(void) { puts(jsched_err_name(JSCHED_EQUEUE_FULL)); return 0; }
EOF
pcflags() { PKG_CONFIG_PATH="$stage/usr/lib/pkgconfig" pkg-config --define-prefix "$@" jsched; }
# shellcheck disable=SC2046
check "pkg-config --define-prefix: build and run a client" sh -c \
	"$cc -o '$tmp/t' '$tmp/t.c' $(pcflags --cflags) $(pcflags --libs) && LD_LIBRARY_PATH='$stage/usr/lib' '$tmp/t' | grep -qx queue_full"

# The staged jschedd finds the staged jschedd-runas.
printf '{"socket": "%s/s", "journal": {"dir": "%s/journal"}}\n' "$tmp" "$tmp" >"$tmp/conf.json"
env -u JSCHED_RUNAS "$stage/usr/bin/jschedd" -c "$tmp/conf.json" 2>"$tmp/jschedd.log" &
pid=$!
n=0
while [ ! -S "$tmp/s" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
check "jschedd finds \$(LIBEXECDIR)/jschedd/jschedd-runas" sh -c \
	"'$stage/usr/bin/jsched' -s '$tmp/s' metrics --json | grep -q '\"helper\": *\"[^\"]*/usr/bin/../libexec/jschedd/jschedd-runas\"'"
if [ "$jsched_static" = 1 ]; then
	check "jsched finds \$(LIBEXECDIR)/jsched/jsched-full (metrics prints its tables)" sh -c \
		"env -u JSCHED_FULL '$stage/usr/bin/jsched' -s '$tmp/s' metrics | grep -q '^LATENCY'"
fi
kill "$pid" && wait "$pid" || true
pid=

# The example config: valid, and the README shows this very file.
check "example config passes --check-config" "$stage/usr/bin/jschedd" --check-config \
	-c "$stage/usr/share/doc/jschedd/examples/jschedd.json"
sed -n '/^<!-- example config: systemd\/jschedd.example.json -->$/,/^```$/p' "$src/README.md" | sed '1,2d;$d' >"$tmp/readme.json"
check "the README shows the example config" cmp "$tmp/readme.json" "$src/systemd/jschedd.example.json"

# shellcheck disable=SC2086
check "make uninstall" make -C "$src" -s --no-print-directory $makevars uninstall PREFIX=/usr DESTDIR="$stage"
check "uninstall leaves no file" sh -c "test -z \"\$(find '$stage' ! -type d)\" || { find '$stage' ! -type d; exit 1; }"

[ "$fails" = 0 ] && echo "all install checks passed" || echo "$fails install checks failed"
[ "$fails" = 0 ]
