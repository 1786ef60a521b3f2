# tests/fuzz/build.mk: the fuzz target of the whole daemon, fuzz_daemon (tests/fuzz/README.md).
# The codec's targets are proto/build.mk's; this fragment is read after daemon/build.mk,
# since it links every part of jschedd.
#
#   $(B)/tests/fuzz/replay_daemon   the target as a plain test over its corpus (make test):
#                                   jschedd in a thread of the test, whole inputs only
#   build/fuzz/fuzz_daemon          the libFuzzer build (fuzz-smoke runs it with the others)
#
# main.c is compiled a second time as jschedd_main(), which the target runs in a thread,
# with JD_OWN_SIGNALS=0: the process's signals stay the fuzzer's (main.c).
# Both link what $(JSCHEDD) links (daemon/build.mk): a part linked there must be here too.

FUZZ_DAEMON_SRCS := $(filter-out daemon/main.c,$(JSCHEDD_SRCS)) $(JD_FAIR_SRCS) $(POOL_SRCS) \
	libclient/path.c
FUZZ_DAEMON_LIBS := $(UV_LIBS) $(JANSSON_LIBS) $(MHD_LIBS) $(SLURM_LIBS) -ldl -lm -pthread

# ---- the replay program, with the build's own compiler and sanitizers -----------------
REPLAY_DAEMON := $(B)/tests/fuzz/replay_daemon
$(B)/obj/tests/fuzz/jschedd_main.o: daemon/main.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (as jschedd_main)")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(UV_CFLAGS) $(JANSSON_CFLAGS) $(MHD_CFLAGS) \
		-Dmain=jschedd_main -DJD_OWN_SIGNALS=0 -Wno-missing-prototypes -c $< -o $@
$(B)/obj/tests/fuzz/replay_daemon.o: CFLAGS += -DREPLAY_WHOLE_FILES=1
$(REPLAY_DAEMON): $(B)/obj/tests/fuzz/replay_daemon.o $(B)/obj/tests/fuzz/fuzz_daemon.o \
		$(B)/obj/tests/fuzz/jschedd_main.o $(filter-out %/main.o,$(JSCHEDD_OBJS)) \
		$(JD_FAIR_LIB) $(POOL_LIB) $(ARCH_OBJS) $(JPROTO_LIB) $(B)/obj/libclient/path.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(FUZZ_DAEMON_LIBS) $(LDLIBS)
TESTS += $(REPLAY_DAEMON)

# ---- libFuzzer ----------------------------------------------------------------------------
FUZZ_DAEMON := $(FUZZ_DIR)/fuzz_daemon
FUZZ_DAEMON_OBJS := $(FUZZ_DAEMON_SRCS:%.c=$(FUZZ_DIR)/obj/%.o) \
	$(patsubst $(B)/obj/%,$(FUZZ_DIR)/obj/%,$(ARCH_OBJS)) $(FUZZ_CODEC_OBJS)
$(FUZZ_DAEMON_OBJS) $(FUZZ_DIR)/obj/tests/fuzz/fuzz_daemon.o \
		$(FUZZ_DIR)/obj/tests/fuzz/jschedd_main.o: \
	FUZZ_CFLAGS += -I$(B)/gen $(UV_CFLAGS) $(MHD_CFLAGS) -pthread
$(FUZZ_DAEMON_OBJS) $(FUZZ_DIR)/obj/tests/fuzz/jschedd_main.o: | $(B)/gen/jsched_version.h
$(FUZZ_DIR)/obj/%.o: %.S
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZAS  $<")
	$(Q)$(FUZZ_CC) $(filter-out -std=c11,$(FUZZ_CFLAGS)) -c $< -o $@
$(FUZZ_DIR)/obj/tests/fuzz/jschedd_main.o: daemon/main.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $< (as jschedd_main)")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Dmain=jschedd_main -DJD_OWN_SIGNALS=0 -c $< -o $@
$(FUZZ_DAEMON): $(FUZZ_DIR)/obj/tests/fuzz/fuzz_daemon.o $(FUZZ_DIR)/obj/tests/fuzz/jschedd_main.o \
		$(FUZZ_DAEMON_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(FUZZ_DAEMON_LIBS)

FUZZ_TARGETS += $(FUZZ_DAEMON)
fuzz-smoke: $(FUZZ_DAEMON)
