# proto/build.mk: the protocol codec (proto/README.md), its tests and its fuzz targets.
#
#   JPROTO_LIB     $(B)/lib/libjproto.a: the codec, compiled -fPIC with hidden visibility so
#                  it can go into libjsched.so without being exported; link it with
#                  $(JANSSON_LIBS).  Include it as "proto/jproto.h" (with $(JANSSON_CFLAGS)).
#   JPROTO_TESTS   the cmocka tests of tests/proto, and the fuzz targets built as replay
#                  programs over their seed corpus (tests/fuzz), so `make test` runs the corpus
#                  with gcc too.  All in TESTS.
#   test-proto     builds and runs JPROTO_TESTS
#   fuzz-smoke     builds the fuzz targets with clang -fsanitize=fuzzer,address,undefined
#                  under build/fuzz and runs each for FUZZ_SECONDS (25) from the seed corpus

JPROTO_LIB := $(B)/lib/libjproto.a
JPROTO_SRCS := proto/error.c proto/buf.c proto/base64.c proto/frame.c proto/names.c \
	proto/request.c proto/message.c proto/jobspec.c proto/submit.c proto/job_record.c \
	proto/utf8.c proto/socket_path.c proto/array.c proto/fastreq.c proto/dump.c
JPROTO_OBJS := $(JPROTO_SRCS:%.c=$(B)/obj/%.o)

$(JPROTO_OBJS): CFLAGS += -fvisibility=hidden $(JANSSON_CFLAGS)

LIBS += $(JPROTO_LIB)

$(JPROTO_LIB): $(JPROTO_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# ---- tests/proto: cmocka ------------------------------------------------------------
# One program per tests/proto/test_*.c.
JPROTO_UNIT := $(patsubst tests/proto/%.c,$(B)/tests/proto/%,$(wildcard tests/proto/test_*.c))

$(B)/obj/tests/proto/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)

# test_oom makes allocations fail on purpose, through the shared wrappers (tests/build.mk).

$(JPROTO_UNIT): $(B)/tests/proto/%: $(B)/obj/tests/proto/%.o $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)

# ---- tests/fuzz: the fuzz targets as replay programs (any compiler) --------------------
# replay.c's main() feeds every file of the target's corpus folder (compiled in as an
# absolute path, so the program runs from anywhere) to LLVMFuzzerTestOneInput.
# One per tests/fuzz/fuzz_*.c.
# fuzz_daemon links the whole daemon: tests/fuzz/build.mk builds it.
FUZZ_NAMES := $(filter-out daemon,$(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
JPROTO_REPLAY := $(FUZZ_NAMES:%=$(B)/tests/fuzz/replay_%)

$(B)/obj/tests/fuzz/%.o: CFLAGS += $(JANSSON_CFLAGS)
$(B)/obj/tests/fuzz/replay_%.o: tests/fuzz/replay.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< ($*)")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DFUZZ_CORPUS='"$(CURDIR)/tests/fuzz/corpus/$*"' -c $< -o $@

$(JPROTO_REPLAY): $(B)/tests/fuzz/replay_%: $(B)/obj/tests/fuzz/replay_%.o \
		$(B)/obj/tests/fuzz/fuzz_%.o $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) $(LDLIBS)

JPROTO_TESTS := $(JPROTO_UNIT) $(JPROTO_REPLAY)
TESTS += $(JPROTO_TESTS)

.PHONY: test-proto
test-proto: $(JPROTO_TESTS)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(JPROTO_TESTS)

# ---- fuzz-smoke: libFuzzer, clang only ---------------------------------------------------
# Its own build folder and flags: the codec is instrumented for coverage (fuzzer-no-link)
# and checked by ASan+UBSan; jansson is not instrumented.  FUZZ_SECONDS per target.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 25
FUZZ_DIR := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(FUZZ_SAN) \
	-D_GNU_SOURCE -Iinclude -I. -MMD -MP $(JANSSON_CFLAGS)
FUZZ_TARGETS := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_CODEC_OBJS := $(JPROTO_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_TARGETS): $(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_CODEC_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(JANSSON_LIBS)

-include $(wildcard $(FUZZ_DIR)/obj/*/*.d $(FUZZ_DIR)/obj/*/*/*.d)

.PHONY: fuzz-smoke
fuzz-smoke: $(FUZZ_TARGETS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/smoke.sh $(FUZZ_DIR) $(FUZZ_TARGETS)
