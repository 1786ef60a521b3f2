# daemon/run/slurm.mk: the slurm backend (daemon/run/backend_slurm.c) and its tests.
#
#   $(B)/tests/slurm/unit_slurm_script   the batch script's quoting, with hostile argv
#                                        (no Slurm needed: part of `make test`)
#   $(B)/tests/slurm/test_slurm_backend  the backend against a real one-node cluster
#   test-slurm                           builds them and runs every Slurm test inside
#                                        tests/slurm/cluster.sh (a private cluster in its
#                                        own namespaces); needs root and `mk/deps.sh slurm`
#
# The backend is compiled with libslurm only when its headers are present and their
# SLURM_VERSION_NUMBER is a release the tests ran against (libslurm's ABI changes with
# every release): 22.05 (tested: 22.05.8, Debian 12).  Otherwise it is compiled as a stub
# that says why (jd_slurm_build), and nothing links libslurm.
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

SLURM_BACKEND_OBJS := $(B)/obj/daemon/run/backend_slurm.o $(B)/obj/daemon/run/slurm_script.o
$(B)/obj/daemon/run/backend_slurm.o: CPPFLAGS += $(SLURM_CPPFLAGS)
$(B)/obj/daemon/run/backend_slurm.o: CFLAGS += $(UV_CFLAGS) $(JANSSON_CFLAGS)

SLURM_UNIT := $(B)/tests/slurm/unit_slurm_script
$(SLURM_UNIT): $(B)/obj/tests/slurm/unit_slurm_script.o $(B)/obj/daemon/run/slurm_script.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
TESTS += $(SLURM_UNIT)

SLURM_TESTS := $(B)/tests/slurm/test_slurm_backend
$(B)/obj/tests/slurm/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS)
$(B)/tests/slurm/test_slurm_backend: $(B)/obj/tests/slurm/test_slurm_backend.o $(SLURM_BACKEND_OBJS) \
		$(B)/obj/daemon/core/exec_job.o $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(UV_LIBS) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(SLURM_LIBS) $(LDLIBS)

.PHONY: test-slurm
test-slurm: $(SLURM_TESTS) $(SLURM_UNIT)
	@JSCHED_BUILD_DIR=$(B) LSAN_OPTIONS=suppressions=$(CURDIR)/tests/slurm/lsan.supp \
		sh tests/slurm/cluster.sh run sh mk/run-tests.sh \
		tests/slurm/test_cluster.sh $(SLURM_UNIT) $(SLURM_TESTS)
