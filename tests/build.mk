# tests/build.mk: what the tests share (tests/common/, tests/README.md).
#
#   TESTS_COMMON_PROC   tests/common/proc.o: copy a built program where another user can
#                       run it (libc only)
#
# This fragment is read after the fragments that define the tests (arch, pool, fair,
# proto, libclient, daemon, systemd), so it names here which tests link which helper:
# the helpers' users are listed in one place, beside the helpers.

$(B)/obj/tests/common/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)

TESTS_COMMON_PROC := $(B)/obj/tests/common/proc.o
# The daemon's integration tests: test_daemon_security starts jschedd as another user
# from a copy outside the checkout.
$(JSCHEDD_TESTS): $(TESTS_COMMON_PROC)
