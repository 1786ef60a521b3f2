# daemon/run/slurm.mk: the slurm backend (daemon/run/backend_slurm.c) and its tests.
#
#   $(B)/tests/slurm/unit_slurm_script   the batch script's quoting, with hostile argv
#                                        (no Slurm needed: part of `make test`)
#   $(B)/tests/slurm/test_slurm_backend  the backend against a real one-node cluster
#   $(B)/tests/slurm/test_slurm_daemon   the same through the real jschedd and its socket
#   test-slurm                           builds them and runs every Slurm test inside
#                                        tests/slurm/cluster.sh (a private cluster in its
#                                        own namespaces); needs root and `mk/deps.sh slurm`
#
# Whether the backend is built with libslurm is daemon/build.mk's decision (SLURM_LIBS).
SLURM_BACKEND_OBJS := $(B)/obj/daemon/run/backend_slurm.o $(B)/obj/daemon/run/slurm_script.o
$(B)/obj/daemon/run/backend_slurm.o: CPPFLAGS += $(SLURM_CPPFLAGS)
# The decision is a prerequisite, so that installing (or removing) libslurm-dev rebuilds
# the backend (and relinks jschedd) instead of keeping the object of the other decision:
# CI installs the packages after the first stages have built.
SLURM_DECISION := $(B)/gen/slurm_decision
$(SLURM_DECISION): FORCE
	@mkdir -p $(@D)
	@printf '%s %s\n' '$(SLURM_VERSION_NUMBER)' '$(SLURM_LIBS)' > $@.tmp.$$$$; \
	cmp -s $@.tmp.$$$$ $@ && rm -f $@.tmp.$$$$ || mv $@.tmp.$$$$ $@
$(B)/obj/daemon/run/backend_slurm.o: $(SLURM_DECISION)
$(B)/obj/daemon/run/backend_slurm.o: CFLAGS += $(UV_CFLAGS) $(JANSSON_CFLAGS)

SLURM_UNIT := $(B)/tests/slurm/unit_slurm_script
$(SLURM_UNIT): $(B)/obj/tests/slurm/unit_slurm_script.o $(B)/obj/daemon/run/slurm_script.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
TESTS += $(SLURM_UNIT)

SLURM_TESTS := $(B)/tests/slurm/test_slurm_backend $(B)/tests/slurm/test_slurm_daemon
$(B)/obj/tests/slurm/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS)
$(B)/tests/slurm/test_slurm_backend: $(B)/obj/tests/slurm/test_slurm_backend.o $(SLURM_BACKEND_OBJS) \
		$(B)/obj/daemon/core/exec_job.o $(B)/obj/daemon/core/outlog.o \
		$(B)/obj/daemon/core/outfile.o $(B)/obj/daemon/core/log.o \
		$(B)/obj/daemon/core/crc32c.o $(B)/obj/daemon/core/clock.o $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(UV_LIBS) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(SLURM_LIBS) $(LDLIBS)

# Through the real jschedd: the daemon's harness, like tests/daemon/.
# It reads what Slurm recorded for a job (slurm_load_job) when built with libslurm.
$(B)/obj/tests/slurm/test_slurm_daemon.o: CPPFLAGS += $(SLURM_CPPFLAGS)
$(B)/obj/tests/slurm/test_slurm_daemon.o: $(SLURM_DECISION)
$(B)/tests/slurm/test_slurm_daemon: $(B)/obj/tests/slurm/test_slurm_daemon.o \
		$(B)/obj/tests/daemon/harness.o $(TESTS_COMMON_PROC) $(LIBJSCHED_A) | $(JSCHEDD) \
		$(JSCHEDD_RUNAS) $(JSCHEDD_MODULE) $(B)/bin/jsched
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(SLURM_LIBS) $(LDLIBS)

.PHONY: test-slurm
test-slurm: $(SLURM_TESTS) $(SLURM_UNIT)
	@JSCHED_BUILD_DIR=$(B) LSAN_OPTIONS=suppressions=$(CURDIR)/tests/slurm/lsan.supp \
		TSAN_OPTIONS="$$TSAN_OPTIONS suppressions=$(CURDIR)/tests/slurm/tsan.supp" \
		sh tests/slurm/cluster.sh run sh mk/run-tests.sh \
		tests/slurm/test_cluster.sh $(SLURM_UNIT) $(SLURM_TESTS)
