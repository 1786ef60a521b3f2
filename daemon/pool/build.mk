# daemon/pool/build.mk: the fiber work-stealing pool (see daemon/pool/README.md).
#
# Exports:
#   POOL_LIB     $(B)/lib/libjdpool.a: link it, then $(ARCH_OBJS), into anything using
#                daemon/pool/pool.h (POOL_OBJS lists the same objects, pool and arch)
#   POOL_TESTS   the pool's test programs; none needs libuv (arch cross-builds them for
#                AArch64 and runs them under qemu), all are in TESTS too

POOL_SRCS := $(addprefix daemon/pool/,deque.c task.c topo.c fiber.c wait.c timer.c \
	worker.c pool.c forkjoin.c dag.c)
POOL_LIB := $(B)/lib/libjdpool.a
POOL_OBJS := $(POOL_SRCS:%.c=$(B)/obj/%.o) $(ARCH_OBJS)

$(POOL_LIB): $(POOL_SRCS:%.c=$(B)/obj/%.o)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^

LIBS += $(POOL_LIB)

# ---- the demo: a tour of the API in one program (`make run` starts jschedd) ------------
POOL_DEMO := $(B)/bin/pool_demo
$(POOL_DEMO): $(B)/obj/daemon/pool/pool_demo.o $(POOL_LIB) $(ARCH_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
BINS += $(POOL_DEMO)

# ---- tests/pool ----------------------------------------------------------------------
POOL_TEST_NAMES := test_deque test_pool test_forkjoin test_wake test_shutdown test_fiber
POOL_TESTS := $(POOL_TEST_NAMES:%=$(B)/tests/pool/%)

$(POOL_TEST_NAMES:%=$(B)/obj/tests/pool/%.o): CPPFLAGS += $(CMOCKA_CFLAGS)
# -rdynamic: the fiber-overflow report names the task's function through dladdr().
$(B)/tests/pool/%: $(B)/obj/tests/pool/%.o $(POOL_LIB) $(ARCH_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) -rdynamic $^ -o $@ $(CMOCKA_LIBS) $(LDLIBS)

TESTS += $(POOL_TESTS)

.PHONY: test-pool
test-pool: $(POOL_TESTS)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(POOL_TESTS)

# ---- model checking (optional: needs the Debian package spin) ---------------------------
# The park/notify handshake and the fiber suspend/wake protocol, each with a negative
# control that must fail (daemon/pool/model/).
.PHONY: pool-model
pool-model:
	$(Q)CC=$(CC) sh daemon/pool/model/check.sh $(B)/model
