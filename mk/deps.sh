#!/bin/sh
# mk/deps.sh GROUP...: make sure the Debian packages a build step needs are present.
#
# Groups:
#   core   what `make`, `make run` and `make test` need (compiler, pkg-config, libuv,
#          jansson, cmocka, libmicrohttpd for the Prometheus endpoint; for the jsched tool
#          libsmartcols (its tables) and ncurses (`jsched top`); scdoc for the man pages;
#          tmux, zsh and fish for the tests of `jsched top` and of the shell completions)
#   ci     what .ci/run needs beyond core (clang and its sanitizer/fuzzer runtimes, the
#          AArch64 cross compiler and qemu-user to execute its output, the spin model
#          checker for the pool's park/wake models, promtool from prometheus to check the
#          Prometheus text, and headless Chromium with chromedriver, python3 and Chart.js
#          for the dashboard's browser test)
#   bench  the side-by-side baselines of bench/ (oneTBB, beanstalkd, task-spooler, nq)
#   cross  what `make test-cross` needs: the AArch64 cross compiler, qemu-user, and cmocka
#          for arm64 from Debian's multiarch archive (the arm64 architecture is added to
#          dpkg first; the library lands in /usr/lib/aarch64-linux-gnu beside the host's)
#   slurm  what `make test-slurm` needs: libslurm's headers (the slurm backend is compiled
#          only with them), slurmctld + slurmd for the one-node test cluster, the client
#          commands (sbatch, squeue, scancel, scontrol), and munge for authentication
#
# A package is missing when its probe (pkg-config module, or a file) is absent. As root the
# missing ones are installed with apt-get; otherwise the exact command is printed and the
# script fails, so the build stops with a clear message instead of a compiler error.
set -eu

need=""
want() { # want PACKAGE PROBE: PROBE is "pc:MODULE", "bin:NAME" or a file path
	case "$2" in
	pc:*) pkg-config --exists "${2#pc:}" 2>/dev/null && return 0 ;;
	bin:*) command -v "${2#bin:}" >/dev/null 2>&1 && return 0 ;;
	*) [ -e "$2" ] && return 0 ;;
	esac
	need="$need $1"
}

for group in "$@"; do
	case "$group" in
	core)
		want make bin:make
		want gcc bin:gcc
		want pkg-config bin:pkg-config
		if command -v pkg-config >/dev/null 2>&1; then
			want libuv1-dev pc:libuv
			want libjansson-dev pc:jansson
			want libcmocka-dev pc:cmocka
			want libmicrohttpd-dev pc:libmicrohttpd
			want libsmartcols-dev pc:smartcols
			want libncurses-dev pc:ncursesw
		else
			need="$need libuv1-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libsmartcols-dev libncurses-dev"
		fi
		want scdoc bin:scdoc
		want tmux bin:tmux
		want zsh bin:zsh
		want fish bin:fish
		;;
	ci)
		want clang bin:clang
		want libclang-rt-14-dev /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
		want gcc-aarch64-linux-gnu bin:aarch64-linux-gnu-gcc
		want qemu-user bin:qemu-aarch64
		want spin bin:spin
		want prometheus bin:promtool
		want python3 bin:python3
		want chromium bin:chromium
		want chromium-driver bin:chromedriver
		want libjs-chart.js /usr/share/javascript/chart.js/chart.min.js
		;;
	cross)
		want gcc-aarch64-linux-gnu bin:aarch64-linux-gnu-gcc
		want qemu-user bin:qemu-aarch64
		want libc6-dev-arm64-cross /usr/aarch64-linux-gnu/include/stdio.h
		want libcmocka-dev:arm64 /usr/lib/aarch64-linux-gnu/libcmocka.so
		;;
	bench)
		want g++ bin:g++
		want libtbb-dev /usr/include/oneapi/tbb.h
		want beanstalkd bin:beanstalkd
		want task-spooler bin:tsp
		want nq bin:nq
		want linux-perf bin:perf
		;;
	slurm)
		want libslurm-dev /usr/include/slurm/slurm.h
		want slurmctld /usr/sbin/slurmctld
		want slurmd /usr/sbin/slurmd
		want slurm-client /usr/bin/sbatch
		want munge /usr/sbin/munged
		;;
	*)
		echo "mk/deps.sh: unknown group '$group' (core, ci, bench, cross, slurm)" >&2
		exit 2
		;;
	esac
done

[ -z "$need" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "mk/deps.sh: installing:$need" >&2
	export DEBIAN_FRONTEND=noninteractive
	# A package for another architecture (NAME:arm64) needs that architecture in dpkg.
	for arch in $(printf '%s\n' $need | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
		dpkg --print-foreign-architectures | grep -qx "$arch" || dpkg --add-architecture "$arch"
	done
	# An empty or stale package list makes apt-get install fail; refresh once first.
	apt-get update -qq >&2 || true
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >&2
	exit 0
fi

echo "mk/deps.sh: missing Debian packages:$need" >&2
archs=$(printf '%s\n' $need | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u)
if [ -n "$archs" ]; then
	for arch in $archs; do
		echo "  first enable $arch packages:  sudo dpkg --add-architecture $arch" >&2
	done
	echo "  then:  sudo apt-get update && sudo apt-get install$need" >&2
else
	echo "  install them with:  sudo apt-get install$need" >&2
fi
exit 1
