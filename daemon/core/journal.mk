# daemon/core/journal.mk: the journal (daemon/core/journal.h), its tests and benchmark.
#
#   JD_JOURNAL_OBJS     the journal and CRC-32C objects (libc + pthread only): link the
#                       daemon with them
#   tests               $(B)/tests/journal/unit_journal (recovery, faults, snapshots, a
#                       stress test of the two threads), test_journal_powercut (the
#                       power-loss images of tests/journal/README.md, with its negative
#                       control)
# Its benchmark, bench/journal (`make bench-journal`), is built by bench/build.mk.

JD_JOURNAL_SRCS := daemon/core/journal.c daemon/core/crc32c.c
JD_JOURNAL_OBJS := $(JD_JOURNAL_SRCS:%.c=$(B)/obj/%.o)

JD_JOURNAL_TESTS := $(B)/tests/journal/unit_journal $(B)/tests/journal/test_journal_powercut
TESTS += $(JD_JOURNAL_TESTS)

$(B)/obj/tests/journal/%.o: CFLAGS += $(CMOCKA_CFLAGS)

$(B)/tests/journal/unit_journal: $(B)/obj/tests/journal/unit_journal.o $(JD_JOURNAL_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)

# The power-loss test: a writer program run under an LD_PRELOAD shim that logs every
# write and sync, and the checker that builds the disk images a power cut could leave.
# The shim is built without sanitizers (it is preloaded into the writer before their
# runtimes).  pc_writer_early is the negative control: the same writer with a journal
# that acknowledges before it syncs (-DJD_JOURNAL_ACK_EARLY).
JD_PC_SHIM := $(B)/tests/journal/powercut_shim.so
$(JD_PC_SHIM): tests/journal/powercut_shim.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CPPFLAGS) -std=c11 -O2 -g $(WARN) -fPIC -shared -o $@ $< -ldl -pthread

# The writers are built without sanitizers too: a sanitizer's runtime in the executable
# would take the calls the shim wraps before the shim saw them.
JD_PC_CFLAGS := $(CPPFLAGS) -std=c11 -O2 -g $(WARN) -pthread
$(B)/obj/nosan/%.o: %.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (no sanitizer)")
	$(Q)$(CC) $(JD_PC_CFLAGS) -c $< -o $@
$(B)/obj/nosan/daemon/core/journal-early.o: daemon/core/journal.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (acknowledging early, no sanitizer)")
	$(Q)$(CC) $(JD_PC_CFLAGS) -DJD_JOURNAL_ACK_EARLY -c $< -o $@

$(B)/tests/journal/pc_writer: $(B)/obj/nosan/tests/journal/pc_writer.o \
	$(B)/obj/nosan/daemon/core/journal.o $(B)/obj/nosan/daemon/core/crc32c.o
$(B)/tests/journal/pc_writer_early: $(B)/obj/nosan/tests/journal/pc_writer.o \
	$(B)/obj/nosan/daemon/core/journal-early.o $(B)/obj/nosan/daemon/core/crc32c.o
$(B)/tests/journal/pc_writer $(B)/tests/journal/pc_writer_early:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -pthread -o $@ $^ -lm

$(B)/tests/journal/test_journal_powercut: $(B)/obj/tests/journal/test_journal_powercut.o \
		$(B)/obj/tests/journal/pc_model.o $(JD_JOURNAL_OBJS) | $(JD_PC_SHIM) \
		$(B)/tests/journal/pc_writer \
		$(B)/tests/journal/pc_writer_early
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(CMOCKA_LIBS) $(LDLIBS)
