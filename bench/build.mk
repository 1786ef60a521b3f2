# bench/build.mk: every benchmark (bench/README.md) and the harness they share.
#
#   make bench           builds them all (BENCHES)
#   make bench-NAME      builds and runs $(B)/bench/bench_NAME, NAME one of BENCH_NAMES:
#                        pool ctx fair proto client e2e journal hist dashboard timers; options through
#                        BENCH_ARGS, e.g.
#                        make bench-fair BENCH_ARGS="--json fair.json --runs 7"
#   make bench-smoke     each of them once with --quick --runs 1 (they build and run; it
#                        measures nothing)
#   BENCH_COMMON_LIB     the shared harness (bench/common/bench.h: the version line, the
#                        options --json FILE, --runs N, --quick, the rows); every benchmark
#                        links it and $(JANSSON_LIBS)
#
# Every rule of a benchmark is here, the parts' fragments hold none: this fragment is read
# last, so the libraries the benchmarks link (ARCH_OBJS, POOL_LIB, JD_FAIR_LIB, JPROTO_LIB,
# LIBJSCHED_A) are all defined by the time their prerequisite lists are read.
BENCH_NAMES := pool ctx fair proto client e2e journal hist dashboard timers

BENCH_COMMON_LIB := $(B)/lib/libbenchcommon.a
BENCH_COMMON_OBJS := $(B)/obj/bench/common/bench.o

$(BENCH_COMMON_OBJS): CFLAGS += $(JANSSON_CFLAGS)

$(BENCH_COMMON_LIB): $(BENCH_COMMON_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# A jschedd of a benchmark's own, started and connected (bench/common/daemon.h): apart from
# the harness since it needs libjsched; a benchmark that uses it links it before $(LIBJSCHED_A).
BENCH_DAEMON_OBJ := $(B)/obj/bench/common/daemon.o
$(BENCH_DAEMON_OBJ): CFLAGS += $(JANSSON_CFLAGS)

# The harness's own test: the JSON it writes is what compare.py and the README read.
BENCH_COMMON_TEST := $(B)/bench/test_bench_common
$(B)/obj/bench/common/test_bench.o: CFLAGS += $(JANSSON_CFLAGS) $(CMOCKA_CFLAGS)
$(BENCH_COMMON_TEST): $(B)/obj/bench/common/test_bench.o $(BENCH_COMMON_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)
TESTS += $(BENCH_COMMON_TEST)

# ---- bench/pool: jschedd's pool against oneTBB --------------------------------------
# tbb_bench is the oneTBB side, a C++ program of its own that bench_pool runs as a child
# (so the two pools never run at once); both sit in $(B)/bench/.
# tbb_bench is always built without sanitizers, with its own copy of the releaser: libtbb
# is not instrumented, and UBSan's vptr check trips on oneTBB's own flow-graph headers.
# (The target-specific OPT passes down to its two objects, and to nothing else; the link
# spells out its flags because SAN, given on the command line, cannot be overridden.)
BENCH_POOL_TBB := $(B)/bench/tbb_bench
BENCH_POOL_RELEASER := $(B)/obj/bench/pool/releaser.o

$(BENCH_POOL_TBB): OPT := -O2 -g
$(BENCH_POOL_TBB): $(B)/obj/bench/pool/tbb_bench.o $(B)/obj/bench/pool/releaser-tbb.o \
		$(B)/obj/bench/pool/kernels-tbb.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CXX) -pthread $^ -o $@ -ltbb -lm

$(B)/obj/bench/pool/%-tbb.o: bench/pool/%.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (for tbb_bench)")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# oneTBB comes from the bench group of mk/deps.sh (libtbb-dev), checked before compiling.
$(B)/obj/bench/pool/tbb_bench.o: | bench-deps
.PHONY: bench-deps
bench-deps:
	$(Q)sh mk/deps.sh bench

# bench_pool, the jschedd side and the driver: it runs tbb_bench first, so it depends on it.
BENCH_POOL := $(B)/bench/bench_pool
$(B)/obj/bench/pool/bench_pool.o: CFLAGS += $(JANSSON_CFLAGS)
$(BENCH_POOL): $(B)/obj/bench/pool/bench_pool.o $(BENCH_POOL_RELEASER) \
		$(B)/obj/bench/pool/kernels.o $(POOL_LIB) \
		$(ARCH_OBJS) $(BENCH_COMMON_LIB) | $(BENCH_POOL_TBB)
BENCHES += $(BENCH_POOL)

# ---- bench/ctx: ns per switch, against swapcontext -----------------------------------
# variants.S holds switch shapes that were measured and not shipped (arch/README.md).
BENCH_CTX := $(B)/bench/bench_ctx
$(B)/obj/bench/ctx/bench_ctx.o: CPPFLAGS += $(JANSSON_CFLAGS)
$(BENCH_CTX): $(B)/obj/bench/ctx/bench_ctx.o $(B)/obj/bench/ctx/variants.o $(ARCH_OBJS) \
		$(BENCH_COMMON_LIB)
BENCHES += $(BENCH_CTX)

# ---- bench/fair: the fair layer's pick cost per policy, beside a scan of every client ---
BENCH_FAIR := $(B)/bench/bench_fair
$(BENCH_FAIR): $(B)/obj/bench/fair/bench_fair.o $(JD_FAIR_LIB) $(BENCH_COMMON_LIB)
BENCHES += $(BENCH_FAIR)

# ---- bench/journal: durable records/s through the journal, beside a sync per record ----
BENCH_JOURNAL := $(B)/bench/bench_journal
$(B)/obj/bench/journal/bench_journal.o: CFLAGS += $(JANSSON_CFLAGS)
$(BENCH_JOURNAL): $(B)/obj/bench/journal/bench_journal.o $(JD_JOURNAL_OBJS) \
		$(B)/obj/daemon/core/diskcpu.o $(BENCH_COMMON_LIB)
BENCHES += $(BENCH_JOURNAL)

# ---- bench/hist: what the latency windows add per finished job, beside the lifetime ones -
BENCH_HIST := $(B)/bench/bench_hist
$(BENCH_HIST): $(B)/obj/bench/hist/bench_hist.o $(B)/obj/daemon/core/hist.o $(BENCH_COMMON_LIB)
BENCHES += $(BENCH_HIST)

# ---- bench/proto: the codec's cost per message, beside jansson alone --------------------
BENCH_PROTO := $(B)/bench/bench_proto
$(B)/obj/bench/proto/bench_proto.o: CFLAGS += $(JANSSON_CFLAGS)
$(BENCH_PROTO): $(B)/obj/bench/proto/bench_proto.o $(JPROTO_LIB) $(BENCH_COMMON_LIB)
BENCHES += $(BENCH_PROTO)

# ---- bench/client: requests against a real jschedd, sync beside pipelined ----------------
# It starts the build's jschedd (its path compiled in), so the daemon is a prerequisite.
BENCH_CLIENT := $(B)/bench/bench_client
$(B)/obj/bench/client/bench_client.o: CFLAGS += -DJSCHEDD_BIN='"$(CURDIR)/$(B)/bin/jschedd"' \
	-DJSCHED_TOOL_BIN='"$(CURDIR)/$(JSCHED_BIN)"'
$(BENCH_CLIENT): $(B)/obj/bench/client/bench_client.o $(BENCH_DAEMON_OBJ) $(LIBJSCHED_A) $(BENCH_COMMON_LIB) | \
		$(B)/bin/jschedd $(JSCHED_BIN)
BENCHES += $(BENCH_CLIENT)

# ---- bench/timers: a delayed job's memory and wake-ups, beside the same job queued ----------
# It starts the build's jschedd (its path compiled in), so the daemon is a prerequisite.
BENCH_TIMERS := $(B)/bench/bench_timers
$(B)/obj/bench/timers/bench_timers.o: CFLAGS += $(JANSSON_CFLAGS) \
	-DJSCHEDD_BIN='"$(CURDIR)/$(B)/bin/jschedd"'
$(BENCH_TIMERS): $(B)/obj/bench/timers/bench_timers.o $(BENCH_DAEMON_OBJ) $(LIBJSCHED_A) $(BENCH_COMMON_LIB) | \
		$(B)/bin/jschedd
BENCHES += $(BENCH_TIMERS)

# ---- bench/e2e: jschedd end to end beside beanstalkd, xargs, task-spooler, nq ----------
# (bench/e2e/README.md).  bench_e2e starts the build's jschedd itself and runs the jsched
# tool for the CLI row, so both are prerequisites; the baselines come from the bench group
# of mk/deps.sh.  One part: BENCH_ARGS="--part rtt,tput".
BENCH_E2E := $(B)/bench/bench_e2e
BENCH_E2E_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(wildcard bench/e2e/*.c))
$(BENCH_E2E_OBJS): CFLAGS += $(JANSSON_CFLAGS) -DJSCHEDD_BIN='"$(CURDIR)/$(B)/bin/jschedd"' \
	-DJSCHED_TOOL_BIN='"$(CURDIR)/$(JSCHED_BIN)"'
# Part 6 (cgroup.c) also times the daemon's cgroup code in process: daemon/run/cgroup.o (libc only);
# the durable part's floor pins a flusher as the journal does: daemon/core/diskcpu.o (libc only).
$(BENCH_E2E): $(BENCH_E2E_OBJS) $(B)/obj/daemon/run/cgroup.o $(B)/obj/daemon/core/diskcpu.o \
		$(LIBJSCHED_A) $(BENCH_COMMON_LIB) | \
		$(B)/bin/jschedd $(JSCHED_BIN) bench-deps
BENCHES += $(BENCH_E2E)

# ---- bench/dashboard: the dashboard's cost in the daemon, and its page load ---------------
# A Python program (it drives headless Chromium like tests/libclient/test_dashboard.py);
# the wrapper in the build dir skips, saying why, where python3 is missing.
BENCH_DASHBOARD := $(B)/bench/bench_dashboard
$(BENCH_DASHBOARD): bench/dashboard/bench_dashboard.py | $(B)/bin/jschedd $(JSCHED_BIN)
	@mkdir -p $(@D)
	$(Q)printf '#!/bin/sh\ncommand -v python3 >/dev/null 2>&1 || { echo "bench-dashboard: python3 is not installed: nothing measured"; exit 0; }\nJSCHED_BUILD_DIR=%s exec python3 %s "$$@"\n' \
		'$(CURDIR)/$(B)' '$(CURDIR)/bench/dashboard/bench_dashboard.py' > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
BENCH_SCRIPTS := $(BENCH_DASHBOARD)

# ---- bench/slurm: commands to Slurm through jschedd, beside an sbatch loop and libslurm ----
# called directly, on the one-node cluster of tests/slurm/cluster.sh (make bench-slurm runs
# it inside one; root).  Built only with libslurm (SLURM_LIBS, daemon/build.mk).
ifneq ($(SLURM_LIBS),)
BENCH_SLURM := $(B)/bench/bench_slurm
$(B)/obj/bench/slurm/bench_slurm.o: CFLAGS += $(JANSSON_CFLAGS)
$(BENCH_SLURM): $(B)/obj/bench/slurm/bench_slurm.o $(BENCH_DAEMON_OBJ) $(LIBJSCHED_A) $(BENCH_COMMON_LIB) | \
		$(B)/bin/jschedd
$(BENCH_SLURM): LDLIBS += $(SLURM_LIBS)
BENCHES += $(BENCH_SLURM)
.PHONY: bench-slurm
bench-slurm: $(BENCH_SLURM)
	JSCHED_BUILD_DIR=$(B) sh tests/slurm/cluster.sh run $< $(BENCH_ARGS)
endif

# ---- linking and running them ------------------------------------------------------------
# Every C benchmark links the same way: its objects and libraries (listed above, the
# harness last), jansson, libc.  Order-only prerequisites (the daemon, the tool, tbb_bench)
# are not in $^.
$(BENCHES):
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

# make bench-NAME [BENCH_ARGS="--json out.json --runs 7"]: one rule for every benchmark.
BENCH_ARGS ?=
BENCH_RUN := $(BENCH_NAMES:%=bench-%)
.PHONY: $(BENCH_RUN)
$(BENCH_RUN): bench-%: $(B)/bench/bench_%
	$< $(BENCH_ARGS)

# make bench-smoke: every benchmark once with --quick --runs 1 (each takes the common
# options of bench/common/bench.h): proves they still build and run, measures nothing.
# Its prerequisite list is expanded when make reads it: every BENCHES += is above.
.PHONY: bench-smoke
bench-smoke: $(BENCHES) $(BENCH_SCRIPTS)
	$(Q)pass=0; fail=0; out=$$(mktemp); for b in $(BENCHES) $(BENCH_SCRIPTS); do \
		if timeout 300 $$b --quick --runs 1 >$$out 2>&1; then echo "PASS  $$b"; pass=$$((pass + 1)); \
		else echo "FAIL  $$b"; tail -n 20 $$out | sed 's/^/    | /'; fail=$$((fail + 1)); fi; \
	done; rm -f $$out; echo "$$pass passed, $$fail failed"; [ $$fail = 0 ]
