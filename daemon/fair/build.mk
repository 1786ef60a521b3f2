# daemon/fair/build.mk: fair admission (daemon/fair/README.md) and its tests; its
# benchmark, bench/fair (`make bench-fair`), is built by bench/build.mk.
#
#   JD_FAIR_LIB        $(B)/lib/libjdfair.a: link the daemon with it (libc + pthread only)
#   tests              $(B)/tests/fair/test_fair_{queue,policy,caps,stress,caps_stress,oom,drf}

JD_FAIR_LIB := $(B)/lib/libjdfair.a
JD_FAIR_SRCS := daemon/fair/fair.c daemon/fair/queue.c daemon/fair/policy.c \
	daemon/fair/window.c daemon/fair/pheap.c
JD_FAIR_OBJS := $(JD_FAIR_SRCS:%.c=$(B)/obj/%.o)

LIBS += $(JD_FAIR_LIB)

$(JD_FAIR_LIB): $(JD_FAIR_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

JD_FAIR_TESTS := $(B)/tests/fair/test_fair_queue $(B)/tests/fair/test_fair_policy \
	$(B)/tests/fair/test_fair_caps $(B)/tests/fair/test_fair_stress \
	$(B)/tests/fair/test_fair_caps_stress $(B)/tests/fair/test_fair_oom \
	$(B)/tests/fair/test_fair_drf
TESTS += $(JD_FAIR_TESTS)

# The out-of-memory test fails the library's allocations one by one through the shared
# link-time wrappers (tests/build.mk).

$(B)/obj/tests/fair/%.o: CFLAGS += $(CMOCKA_CFLAGS)

$(JD_FAIR_TESTS): $(B)/tests/fair/%: $(B)/obj/tests/fair/%.o $(JD_FAIR_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(LDLIBS)
