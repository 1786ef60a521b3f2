# arch/build.mk: the context switch (see arch/README.md), its test, and `make test-cross`,
# which runs the AArch64 switch and the pool's tests under qemu-user.  Its benchmark,
# bench/ctx, is built by bench/build.mk.
#
# Exports:
#   ARCH_IMPL    x86_64, aarch64 or ucontext: the switch this build uses
#   ARCH_OBJS    the objects to link into anything that calls arch/ctx.h
#   ARCH_TESTS   the arch test programs (also in TESTS)
#
# The switch is chosen by the target CPU (`$(CC) -dumpmachine`, so CROSS and CC=clang
# just work), or the ucontext fallback with CTX=ucontext or on any other CPU.
# arch/impl.h makes the same choice from the compiler's macros; if the two ever
# disagreed the link would fail (jd_arch_switch undefined), never mix silently.

ARCH_CPU := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))
ifeq ($(CTX),ucontext)
ARCH_IMPL := ucontext
else ifneq ($(filter x86_64 aarch64,$(ARCH_CPU)),)
ARCH_IMPL := $(ARCH_CPU)
else
ARCH_IMPL := ucontext
endif

ifeq ($(ARCH_IMPL),ucontext)
ARCH_OBJS := $(B)/obj/arch/ctx.o $(B)/obj/arch/ucontext.o
else
ARCH_OBJS := $(B)/obj/arch/ctx.o $(B)/obj/arch/frame.o $(B)/obj/arch/$(ARCH_IMPL).o
endif

# ---- tests/arch ----------------------------------------------------------------------
# probe.S holds the per-CPU helpers that load and read back registers around a switch.
ARCH_TESTS := $(B)/tests/arch/test_ctx

$(B)/obj/tests/arch/test_ctx.o: CPPFLAGS += $(CMOCKA_CFLAGS)
$(B)/tests/arch/test_ctx: $(B)/obj/tests/arch/test_ctx.o $(B)/obj/tests/arch/probe.o $(ARCH_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(CMOCKA_LIBS) $(LDLIBS)

TESTS += $(ARCH_TESTS)

.PHONY: test-arch
test-arch: $(ARCH_TESTS)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(ARCH_TESTS)

# ---- test-cross: the AArch64 build, executed under qemu-user -------------------------
# `make test-cross` installs what it needs (mk/deps.sh cross: the cross compiler, qemu,
# and cmocka for arm64 through Debian multiarch), then sub-makes with CROSS set build the
# arch tests and the pool tests that need no libuv (POOL_TESTS, from daemon/pool/build.mk),
# and the arch tests once more with the ucontext fallback (what any other CPU would get).
# Each build appends its test programs to one list; the last step runs every one through a
# two-line wrapper that starts it under qemu-aarch64, with mk/run-tests.sh printing the
# usual "N passed, N failed".  The lists are expanded inside recipes, after every fragment
# has been read, so POOL_TESTS is complete whatever the include order.
#
# The programs run with the arm64 C library of Debian multiarch (-L /: the loader and
# libc under /usr/lib/aarch64-linux-gnu, which libcmocka0:arm64 brought in), not the
# cross toolchain's copy in /usr/aarch64-linux-gnu: with -L there, that loader picks up
# the multiarch libc.so.6 (a different Debian revision) through ld.so.cache, and the mix
# hangs in pthread_create.
CROSS_AARCH64 := aarch64-linux-gnu-
QEMU_AARCH64 := qemu-aarch64 -L /
CROSS_LIST := build/cross-tests.list
CROSS_MAKE = $(MAKE) --no-print-directory CROSS=$(CROSS_AARCH64) CC=$(CROSS_AARCH64)gcc \
	SAN= CROSS_LIST=$(CROSS_LIST)

.PHONY: test-cross cross-build cross-run
test-cross:
	$(Q)sh mk/deps.sh cross
	$(Q)mkdir -p $(dir $(CROSS_LIST)) && : > $(CROSS_LIST)
	$(Q)$(CROSS_MAKE) CTX=asm cross-build
	$(Q)$(CROSS_MAKE) CTX=ucontext cross-build
	$(Q)$(CROSS_MAKE) cross-run

# Internal steps of test-cross (they expect CROSS to be set).
CROSS_BUILT = $(ARCH_TESTS) $(if $(filter ucontext,$(CTX)),,$(POOL_TESTS))
cross-build:
	$(Q)$(MAKE) --no-print-directory $(CROSS_BUILT)
	$(Q)for t in $(CROSS_BUILT); do echo "$$t" >> $(CROSS_LIST); done

cross-run:
	$(Q)wrappers=""; \
	for t in $$(cat $(CROSS_LIST)); do \
		w=build/qemu/$$t; mkdir -p "$${w%/*}"; \
		printf '#!/bin/sh\nexec $(QEMU_AARCH64) %s "$$@"\n' "$$PWD/$$t" > "$$w"; \
		chmod +x "$$w"; wrappers="$$wrappers $$w"; \
	done; \
	sh mk/run-tests.sh $$wrappers
