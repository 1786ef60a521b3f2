# tests/build.mk: what the tests share (tests/common/, tests/README.md).
#
#   TESTS_COMMON_PROC        tests/common/proc.o: the build dir, temp dirs, a child with its
#                            output in a log (optionally as another user), bounded waits
#                            for its exit, a copy of a program where another user can run it
#   TESTS_COMMON_FAILALLOC   tests/common/failalloc.o: fail the Nth allocation, count the
#                            live blocks; link with TESTS_COMMON_FAILALLOC_LDFLAGS
#
# This fragment is read after the fragments that define the tests (arch, pool, fair,
# proto, libclient, daemon, systemd), so it names here which tests link which helper:
# the helpers' users are listed in one place, beside the helpers.

$(B)/obj/tests/common/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)

TESTS_COMMON_PROC := $(B)/obj/tests/common/proc.o
# The daemon's integration tests and their harness (tests/daemon/harness.c, which
# test_tool_daemon and test_tool_top use too), and the systemd test that runs jschedd under
# the protocols.
$(JSCHEDD_TESTS) $(B)/tests/libclient/test_tool_daemon $(B)/tests/libclient/test_tool_top \
	$(B)/tests/systemd/test_systemd: $(TESTS_COMMON_PROC)

# The fail-the-Nth-allocation wrappers: a program that links failalloc.o is linked with
# exactly the --wrap list its wrappers define (failalloc.c calls each __real_ name).
TESTS_COMMON_FAILALLOC := $(B)/obj/tests/common/failalloc.o
TESTS_COMMON_FAILALLOC_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free \
	-Wl,--wrap=strdup,--wrap=aligned_alloc
# The out-of-memory tests of the codec, the client library and the fair layer.
TESTS_FAILALLOC_USERS := $(B)/tests/proto/test_oom $(B)/tests/libclient/test_oom \
	$(B)/tests/fair/test_fair_oom
$(TESTS_FAILALLOC_USERS): $(TESTS_COMMON_FAILALLOC)
$(TESTS_FAILALLOC_USERS): LDFLAGS += $(TESTS_COMMON_FAILALLOC_LDFLAGS)
