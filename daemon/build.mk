# daemon/build.mk: jschedd (daemon/README.md), its example module and its integration
# tests (tests/daemon/).
#
#   $(B)/bin/jschedd                    the daemon; `make run` starts it in the foreground
#   $(B)/tests/daemon/module_example.so the example handler module the tests load
#   $(B)/tests/daemon/unit_*            unit tests of the config reader and the histogram
#   $(B)/tests/daemon/test_*            integration tests: each starts a real jschedd in a
#                                       temp dir and talks to it through libjsched
#   test-daemon                         builds and runs those tests
#   check-layers                        every include in daemon/ and proto/ points down
#                                       the layers (mk/check-layers.sh, after its own
#                                       self-test); `make test` runs it
#
# The pool, fair and protocol libraries link in as their fragments define them; the
# daemon links nothing of the client library (the socket-path rule is the protocol's).
JSCHEDD := $(B)/bin/jschedd

# The slurm backend (daemon/run/backend_slurm.c) is compiled with libslurm only when its
# headers are present and their SLURM_VERSION_NUMBER is a release the tests ran against
# (libslurm's ABI changes with every release): 22.05 (tested: 22.05.8, Debian 12).
# Otherwise it is compiled as a stub that says why (jd_slurm_build), and nothing links
# libslurm.  Its tests are daemon/run/slurm.mk's.
SLURM_TESTED := 0x1605%
SLURM_VERSION_NUMBER := $(shell printf '\043include <slurm/slurm_version.h>\nSLURM_VERSION_NUMBER\n' | \
	$(CC) -E -P -x c - 2>/dev/null | tail -n 1)
ifneq ($(filter $(SLURM_TESTED),$(SLURM_VERSION_NUMBER)),)
SLURM_CPPFLAGS := -DJD_WITH_SLURM=1
SLURM_LIBS := -lslurm
else ifneq ($(filter 0x%,$(SLURM_VERSION_NUMBER)),)
SLURM_CPPFLAGS := '-DJD_SLURM_WHY="libslurm $(SLURM_VERSION_NUMBER) is not a release the tests ran against (22.05)"'
SLURM_LIBS :=
else
SLURM_CPPFLAGS := '-DJD_SLURM_WHY="libslurm-dev was not found at build time"'
SLURM_LIBS :=
endif

JSCHEDD_CORE_SRCS := daemon/core/jobs.c daemon/core/array.c daemon/core/jobs_index.c daemon/core/journal.c daemon/core/crc32c.c daemon/core/exec_job.c daemon/core/outlog.c daemon/core/outfile.c daemon/core/clients.c \
	daemon/core/config.c daemon/core/config_exec.c daemon/core/config_names.c \
	daemon/core/config_backends.c daemon/core/config_resources.c \
	daemon/core/security.c daemon/core/hist.c daemon/core/log.c daemon/core/clock.c \
	daemon/core/timeheap.c daemon/core/slab.c daemon/core/wake.c daemon/core/diskcpu.c
JSCHEDD_RUN_SRCS := daemon/run/runner.c daemon/run/exec.c daemon/run/slots.c daemon/run/process.c daemon/run/handler.c \
	daemon/run/builtins.c daemon/run/modules.c daemon/run/cgroup.c daemon/run/exec_cgroup.c \
	daemon/run/backend.c daemon/run/backend_slurm.c daemon/run/slurm_script.c daemon/run/resources.c
JSCHEDD_NET_SRCS := daemon/net/server.c daemon/net/session.c daemon/net/op_submit.c \
	daemon/net/op_wait.c daemon/net/op_jobs.c daemon/net/op_admin.c daemon/net/op_pause.c daemon/net/op_hook.c daemon/net/op_retry.c daemon/net/op_result.c daemon/net/watch.c daemon/net/follow.c daemon/net/record.c daemon/net/metrics.c \
	daemon/net/prometheus.c daemon/net/prom_export.c
JSCHEDD_TOP_SRCS := daemon/main.c daemon/daemon.c daemon/persist.c daemon/sdnotify.c daemon/service.c
JSCHEDD_SRCS := $(JSCHEDD_CORE_SRCS) $(JSCHEDD_RUN_SRCS) $(JSCHEDD_NET_SRCS) $(JSCHEDD_TOP_SRCS)
JSCHEDD_OBJS := $(JSCHEDD_SRCS:%.c=$(B)/obj/%.o)
$(JSCHEDD_OBJS): CFLAGS += $(UV_CFLAGS) $(JANSSON_CFLAGS) $(MHD_CFLAGS)
JSCHEDD_MODULE := $(B)/tests/daemon/module_example.so
JSCHEDD_BADMODULE := $(B)/tests/daemon/module_badabi.so
JSCHEDD_TESTS := $(patsubst tests/daemon/%.c,$(B)/tests/daemon/%,$(wildcard tests/daemon/test_*.c))

# jschedd-runas: starts a command as its owner when jschedd runs as root, and in its job's
# control group (daemon/run/runas.c); jschedd looks for it beside itself (here), or in
# ../libexec/jschedd/ (installed).  libc only (cgroup.o is).
JSCHEDD_RUNAS := $(B)/bin/jschedd-runas
$(JSCHEDD_RUNAS): $(B)/obj/daemon/run/runas.o $(B)/obj/daemon/run/cgroup.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^

BINS += $(JSCHEDD) $(JSCHEDD_RUNAS)
RUN_BIN := $(JSCHEDD)
RUN_ARGS :=
TESTS += $(JSCHEDD_TESTS)
# Modules see only the handler API (daemon/run/module.syms), not the daemon's internals.
$(JSCHEDD): $(JSCHEDD_OBJS) $(JD_FAIR_LIB) $(POOL_LIB) $(ARCH_OBJS) $(JPROTO_LIB) \
		daemon/run/module.syms
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -Wl,--dynamic-list=daemon/run/module.syms -o $@ $(JSCHEDD_OBJS) \
		$(JD_FAIR_LIB) $(POOL_LIB) $(ARCH_OBJS) $(JPROTO_LIB) \
		$(UV_LIBS) $(JANSSON_LIBS) $(MHD_LIBS) $(SLURM_LIBS) -ldl $(LDLIBS)

# ---- the example module, and one built for another ABI (which jschedd must refuse) ----
$(B)/obj/tests/daemon/module_example.o $(B)/obj/tests/daemon/module_badabi.o: \
	CFLAGS += -fvisibility=hidden $(JANSSON_CFLAGS)
$(JSCHEDD_MODULE) $(JSCHEDD_BADMODULE): $(B)/tests/daemon/%.so: $(B)/obj/tests/daemon/%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS)

# ---- unit tests of the parts that need no daemon ---------------------------------------
JSCHEDD_UNIT := $(B)/tests/daemon/unit_config $(B)/tests/daemon/unit_hist \
	$(B)/tests/daemon/unit_whist $(B)/tests/daemon/unit_prometheus $(B)/tests/daemon/unit_cgroup \
	$(B)/tests/daemon/unit_log $(B)/tests/daemon/unit_timeheap \
	$(B)/tests/daemon/unit_outlog $(B)/tests/daemon/unit_index $(B)/tests/daemon/unit_security \
	$(B)/tests/daemon/unit_wake $(B)/tests/daemon/unit_spin $(B)/tests/daemon/unit_diskcpu \
	$(B)/tests/daemon/unit_slab
# The config reader is core/config*.c alone (plain data, jansson): the unit test links
# only those.
JSCHEDD_CONFIG_OBJS := $(patsubst %.c,$(B)/obj/%.o,daemon/core/config.c daemon/core/config_exec.c \
	daemon/core/config_names.c daemon/core/config_backends.c daemon/core/config_resources.c)
$(B)/tests/daemon/unit_config: $(B)/obj/tests/daemon/unit_config.o $(JSCHEDD_CONFIG_OBJS) $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)
$(B)/tests/daemon/unit_hist: $(B)/obj/tests/daemon/unit_hist.o $(B)/obj/daemon/core/hist.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
$(B)/tests/daemon/unit_whist: $(B)/obj/tests/daemon/unit_whist.o \
		$(B)/obj/daemon/core/hist.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
$(B)/tests/daemon/unit_prometheus: $(B)/obj/tests/daemon/unit_prometheus.o \
		$(B)/obj/daemon/net/prometheus.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)
# unit_cgroup (daemon/run/cgroup.c, libc only): every mode's files on trees it builds, and
# real cgroup v1 groups when run as root where they exist (it prints what it skips, why).
$(B)/tests/daemon/unit_cgroup: $(B)/obj/tests/daemon/unit_cgroup.o $(B)/obj/daemon/run/cgroup.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# unit_log: the log lines' journal priorities (daemon/core/log.c, libc only).
$(B)/tests/daemon/unit_log: $(B)/obj/tests/daemon/unit_log.o $(B)/obj/daemon/core/log.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# unit_timeheap: the timer heap (daemon/core/timeheap.c) against a sorted reference, and
# the retry backoff's arithmetic.
$(B)/obj/tests/daemon/unit_timeheap.o: CFLAGS += $(JANSSON_CFLAGS)
$(B)/tests/daemon/unit_timeheap: $(B)/obj/tests/daemon/unit_timeheap.o $(B)/obj/daemon/core/timeheap.o \
		$(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)
# unit_outlog: a command's output in memory (daemon/core/outlog.c, libc only).
$(B)/tests/daemon/unit_outlog: $(B)/obj/tests/daemon/unit_outlog.o $(B)/obj/daemon/core/outlog.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# unit_security: the login names of recent uids (daemon/core/security.c) on the test clock.
$(B)/obj/tests/daemon/unit_security.o: CFLAGS += $(JANSSON_CFLAGS)
$(B)/tests/daemon/unit_security: $(B)/obj/tests/daemon/unit_security.o \
		$(B)/obj/daemon/core/security.o $(B)/obj/daemon/core/clock.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)
# unit_wake: the loop's wake-up (daemon/core/wake.c) under three sending threads.
$(B)/obj/tests/daemon/unit_wake.o: CFLAGS += $(UV_CFLAGS)
$(B)/tests/daemon/unit_wake: $(B)/obj/tests/daemon/unit_wake.o $(B)/obj/daemon/core/wake.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(UV_LIBS) $(CMOCKA_LIBS) $(LDLIBS) -lpthread
# unit_spin: the built-in spin handler (daemon/run/builtins.c) with the handler API stubbed
# and clock_gettime wrapped, to count its reads of the thread CPU clock.
$(B)/obj/tests/daemon/unit_spin.o: CFLAGS += $(JANSSON_CFLAGS)
$(B)/tests/daemon/unit_spin: $(B)/obj/tests/daemon/unit_spin.o $(B)/obj/daemon/run/builtins.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -Wl,--wrap=clock_gettime -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS) -lpthread
# unit_diskcpu: the CPU of a disk's interrupts (daemon/core/diskcpu.c) on made-up sysfs trees.
$(B)/tests/daemon/unit_diskcpu: $(B)/obj/tests/daemon/unit_diskcpu.o $(B)/obj/daemon/core/diskcpu.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# unit_index: the job table's id index (daemon/core/jobs_index.c) against a plain scan.
$(B)/tests/daemon/unit_index: $(B)/obj/tests/daemon/unit_index.o $(B)/obj/daemon/core/jobs_index.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
# unit_slab: the job table's record slab (daemon/core/slab.c), alone.
$(B)/tests/daemon/unit_slab: $(B)/obj/tests/daemon/unit_slab.o $(B)/obj/daemon/core/slab.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
TESTS += $(JSCHEDD_UNIT)

# ---- integration tests -----------------------------------------------------------------
# One program per tests/daemon/test_*.c, each with the shared harness (start a daemon in
# a temp dir, connect, wait for conditions with a bound).  They need the daemon and the
# module built, so those are order-only prerequisites.
$(B)/obj/tests/daemon/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
$(JSCHEDD_TESTS): $(B)/tests/daemon/%: $(B)/obj/tests/daemon/%.o \
		$(B)/obj/tests/daemon/harness.o $(LIBJSCHED_A) | $(JSCHEDD) $(JSCHEDD_RUNAS) \
		$(JSCHEDD_MODULE) $(JSCHEDD_BADMODULE)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)

.PHONY: test-daemon
# test_daemon_hooks, test_daemon_array, test_daemon_result and test_daemon_resources run the
# jsched tool (jdt_tool; it runs the hooks).
$(B)/tests/daemon/test_daemon_hooks $(B)/tests/daemon/test_daemon_array \
		$(B)/tests/daemon/test_daemon_result $(B)/tests/daemon/test_daemon_resources: | $(JSCHED_BIN)
# test_daemon_journal preloads fault_shim.so into its daemon (a full disk on demand);
# built without sanitizers, like the power-cut shim (daemon/core/journal.mk).
JD_FAULT_SHIM := $(B)/tests/daemon/fault_shim.so
$(JD_FAULT_SHIM): tests/daemon/fault_shim.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CPPFLAGS) -std=c11 -O2 -g $(WARN) -fPIC -shared -o $@ $< -ldl
$(B)/tests/daemon/test_daemon_journal: | $(JD_FAULT_SHIM)
# test_daemon_powercut: the daemon under the power-cut shim, the images checked with the
# disk model and the journal of tests/journal/.
$(B)/tests/daemon/test_daemon_powercut: $(B)/obj/tests/journal/pc_model.o \
		$(B)/obj/daemon/core/journal.o $(B)/obj/daemon/core/crc32c.o | \
		$(B)/tests/journal/powercut_shim.so

test-daemon: $(JSCHEDD_UNIT) $(JSCHEDD_TESTS) $(JSCHEDD) $(JSCHEDD_MODULE)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(JSCHEDD_UNIT) $(JSCHEDD_TESTS)

# ---- the layers ------------------------------------------------------------------------
# core <- run <- net <- top, with fair/, pool/ and proto/ below core (daemon/README.md).
# The checker first proves on trees of its own that it catches an upward include.
.PHONY: check-layers
check-layers:
	@sh mk/check-layers.sh --self-test
	@sh mk/check-layers.sh .
test: check-layers
