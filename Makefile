# jschedd: one non-recursive Makefile.
#
# Read it top to bottom: the knobs, the build variant (release, sanitizers, the portable
# context-switch fallback, a cross build), flags, the dependency check, the generic
# rules, then one fragment per part (*/build.mk).  A fragment adds its outputs to the
# lists below and defines its own link rules; nothing else needs to change to add a part.
#
#   make                  release build (-O2 -g) of everything under build/rel
#   make run              build and start jschedd in the foreground on its default socket
#   make test             build and run every test
#   make test SAN=address,undefined   the same tests under ASan+UBSan (build/address+undefined)
#   make test SAN=thread  the same tests under TSan (build/thread)
#   make test CTX=ucontext            with the portable context-switch fallback
#   make bench            build the benchmarks; make bench-NAME runs one (bench/build.mk)
#   make install PREFIX=/usr DESTDIR=/tmp/stage    (make uninstall with the same paths)
#
# Lists the fragments fill in (paths under $(B)):
#   BINS      programs that `make` builds
#   LIBS      libraries that `make` builds
#   TESTS     test programs that `make test` runs (each must exit 0)
#   BENCHES   benchmark programs that `make bench` builds

VERSION := $(shell cat VERSION)
# Install paths (GNU's names).  Nothing built depends on them: `make install` writes the
# units, jsched.pc and the rest straight into $(DESTDIR) with the paths of its own command
# line, so `make && make install PREFIX=/usr` installs files that name /usr.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
LIBEXECDIR ?= $(PREFIX)/libexec
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/jschedd
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
DESTDIR ?=

SAN ?=
CTX ?= asm
CROSS ?=
V ?= 0

CC := $(if $(filter default,$(origin CC)),$(CROSS)gcc,$(CC))
CXX := $(if $(filter default,$(origin CXX)),$(CROSS)g++,$(CXX))
AR := $(if $(filter default,$(origin AR)),$(CROSS)ar,$(AR))
PKG_CONFIG ?= pkg-config

comma := ,
VARIANT := rel
ifneq ($(SAN),)
VARIANT := $(subst $(comma),+,$(SAN))
endif
ifeq ($(CTX),ucontext)
VARIANT := $(VARIANT)-ucontext
endif
ifneq ($(CROSS),)
VARIANT := $(VARIANT)-$(patsubst %-,%,$(CROSS))
endif
ifneq ($(filter clang%,$(notdir $(CC))),)
VARIANT := $(VARIANT)-clang
endif
B := build/$(VARIANT)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# ---- flags ---------------------------------------------------------------------------
WARN := -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion \
	-Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith -Wvla -Wformat=2 \
	-Wundef -Wcast-qual
ifeq ($(SAN),)
OPT := -O2 -g
else
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SAN) -fno-sanitize-recover=all
endif
CPPFLAGS += -D_GNU_SOURCE -Iinclude -I. -I$(B)/gen -MMD -MP
ifeq ($(CTX),ucontext)
CPPFLAGS += -DJD_CTX_UCONTEXT=1
endif
CFLAGS ?=
CFLAGS += -std=c11 $(OPT) $(WARN) -fPIC -pthread
CXXFLAGS ?=
CXXFLAGS += -std=c++17 $(OPT) -Wall -Wextra -Werror -pthread
LDFLAGS ?=
LDFLAGS += $(if $(SAN),-fsanitize=$(SAN)) -pthread
LDLIBS += -lm

# ---- dependencies --------------------------------------------------------------------
# Missing Debian packages are installed when run as root, else the exact apt-get command
# is printed and the build stops (mk/deps.sh).  Cross builds use only libc and cmocka.
NODEPS_GOALS := clean help
ifeq ($(filter-out $(NODEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
else ifeq ($(CROSS),)
DEPS_OK := $(shell sh mk/deps.sh core >&2 && echo ok)
ifneq ($(DEPS_OK),ok)
$(error build dependencies are missing; see the message above)
endif
UV_CFLAGS := $(shell $(PKG_CONFIG) --cflags libuv)
UV_LIBS := $(shell $(PKG_CONFIG) --libs libuv)
JANSSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags jansson)
JANSSON_LIBS := $(shell $(PKG_CONFIG) --libs jansson)
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka)
MHD_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd)
SMARTCOLS_CFLAGS := $(shell $(PKG_CONFIG) --cflags smartcols)
SMARTCOLS_LIBS := $(shell $(PKG_CONFIG) --libs smartcols)
NCURSES_CFLAGS := $(shell $(PKG_CONFIG) --cflags ncursesw)
NCURSES_LIBS := $(shell $(PKG_CONFIG) --libs ncursesw)
else
CMOCKA_LIBS := -lcmocka
endif

.DEFAULT_GOAL := all
BINS :=
LIBS :=
TESTS :=
BENCHES :=
RUN_BIN :=
RUN_ARGS :=

# ---- generic rules -------------------------------------------------------------------
$(B)/obj/%.o: %.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/obj/%.o: %.S
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(CPPFLAGS) $(filter-out -std=c11,$(CFLAGS)) -c $< -o $@

$(B)/obj/%.o: %.cpp
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# The version line every program and benchmark prints: release, git commit, variant.
GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(B)/gen/jsched_version.h: FORCE
	@mkdir -p $(@D)
	@printf '#define JSCHED_VERSION "%s"\n#define JSCHED_VERSION_LINE "jschedd %s (git %s, %s, %s, ctx %s)"\n' \
		'$(VERSION)' '$(VERSION)' '$(GIT_REV)' '$(VARIANT)' '$(notdir $(CC))' '$(CTX)' > $@.tmp.$$$$; \
	cmp -s $@.tmp.$$$$ $@ && rm -f $@.tmp.$$$$ || mv $@.tmp.$$$$ $@

.PHONY: all test bench run install uninstall clean help FORCE
FORCE:

all:

# ---- the parts -----------------------------------------------------------------------
# In this order: tests/build.mk names which of the tests above it link the shared test
# helpers, and bench/build.mk links the libraries of every fragment before it.  A missing
# fragment stops make (no wildcard hides it).  tests/fuzz/build.mk links every daemon part.
include arch/build.mk daemon/pool/build.mk daemon/fair/build.mk proto/build.mk \
	libclient/build.mk daemon/build.mk daemon/core/journal.mk \
	tests/fuzz/build.mk systemd/build.mk man/build.mk completions/build.mk tests/build.mk \
	daemon/run/slurm.mk bench/build.mk

all: $(BINS) $(LIBS) $(TESTS)

# Each test runs in its own process with a time limit; the summary line is the last line.
test: $(TESTS) $(BINS)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(TESTS)

bench: $(BENCHES) $(BENCH_SCRIPTS)

run: $(RUN_BIN)
	exec $(RUN_BIN) $(RUN_ARGS)

install:

# Each fragment's uninstall-* removes the files its install-* wrote, then the folders
# that are left empty (never a folder that holds anything else).
uninstall:

clean:
	rm -rf build

help:
	@sed -n '3,20p' Makefile

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
# The compiler writes the .d files; make never remakes them.  Without this rule it would try,
# through its built-in rules, whenever a source is newer than its .d
# (replay_frame.d <- replay_frame.d.o <- tests/fuzz/replay.c, through replay_%.o).
%.d: ;
