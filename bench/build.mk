# bench/build.mk: the benchmarks (see bench/README.md).
#
#   BENCH_COMMON_LIB   the shared harness (bench/common/bench.h); link every benchmark
#                      with it and $(JANSSON_LIBS)
#   bench-pool         builds and runs the pool benchmark against oneTBB (bench/pool/)

BENCH_COMMON_LIB := $(B)/lib/libbenchcommon.a
BENCH_COMMON_OBJS := $(B)/obj/bench/common/bench.o

$(BENCH_COMMON_OBJS): CFLAGS += $(JANSSON_CFLAGS)

$(BENCH_COMMON_LIB): $(BENCH_COMMON_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) rcs $@ $^
