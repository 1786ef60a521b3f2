# libclient/build.mk: libjsched (shared + static + jsched.pc) and the jsched tool.
#
#   $(B)/lib/libjsched.so.$(VERSION)  the shared library; SONAME libjsched.so.$(JSCHED_SOMAJOR);
#                                     exports only jsched_* (libclient/libjsched.map)
#   $(B)/lib/libjsched.a              the static library; holds the protocol codec too, so a
#                                     static link needs only -ljsched and jansson
#   $(B)/lib/pkgconfig/jsched.pc      for pkg-config, with this build's PREFIX
#   $(B)/bin/jsched                   the command-line tool (linked statically with libjsched,
#                                     and static-pie where libc.a is installed: below);
#                                     `make run` builds it beside the daemon it starts
#   $(B)/bin/jsched-full              the same tool linked dynamically, which the static one
#                                     runs for tables, top and the dashboard (installed in
#                                     $(LIBEXECDIR)/jsched/); only built when jsched is static
#   install-libclient                 installs all of it under $(DESTDIR)$(PREFIX) (a
#                                     prerequisite of `make install`)
#   $(B)/tests/libclient/test_*       the tests (TESTS); `make test-libclient` runs them
#
# The library's objects are compiled with -fvisibility=hidden, and the version script
# hides everything else too (the codec's jp_* symbols come in from libjproto.a).

JSCHED_SOMAJOR := 0
JSCHED_SONAME := libjsched.so.$(JSCHED_SOMAJOR)
LIBJSCHED_SO := $(B)/lib/libjsched.so.$(VERSION)
LIBJSCHED_A := $(B)/lib/libjsched.a
JSCHED_PC := $(B)/lib/pkgconfig/jsched.pc
JSCHED_BIN := $(B)/bin/jsched

LIBJSCHED_SRCS := libclient/path.c libclient/strerror.c libclient/spec.c libclient/record.c libclient/text.c \
	libclient/conn.c libclient/ops.c
LIBJSCHED_OBJS := $(LIBJSCHED_SRCS:%.c=$(B)/obj/%.o)

JSCHED_CLI_SRCS := libclient/tool/main.c libclient/tool/args.c libclient/tool/jobs.c \
	libclient/tool/daemon.c libclient/tool/table.c libclient/tool/top.c libclient/tool/dashboard.c \
	libclient/tool/hooks.c libclient/tool/lazy.c
JSCHED_CLI_OBJS := $(JSCHED_CLI_SRCS:%.c=$(B)/obj/%.o) $(B)/obj/gen/dashboard_html.o

# The dashboard's page is built into the tool: dashboard.html as one C string.
$(B)/gen/dashboard_html.c: libclient/tool/dashboard.html
	@mkdir -p $(@D)
	$(Q){ echo '/* generated from libclient/tool/dashboard.html: do not edit */'; \
	  echo 'extern const char jsched_dashboard_html[];'; \
	  echo 'const char jsched_dashboard_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp
	$(Q)mv $@.tmp $@
$(B)/obj/gen/dashboard_html.o: $(B)/gen/dashboard_html.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-overlength-strings -c -o $@ $<
$(B)/obj/libclient/tool/dashboard.o: CFLAGS += $(MHD_CFLAGS)

$(LIBJSCHED_OBJS) $(JSCHED_CLI_OBJS): CFLAGS += -fvisibility=hidden $(JANSSON_CFLAGS)
# The tool's tables (libsmartcols) and `jsched top` (ncurses); the library needs neither.
$(JSCHED_CLI_OBJS): CFLAGS += $(SMARTCOLS_CFLAGS) $(NCURSES_CFLAGS)

LIBS += $(LIBJSCHED_SO) $(B)/lib/$(JSCHED_SONAME) $(B)/lib/libjsched.so $(LIBJSCHED_A) $(JSCHED_PC)
BINS += $(JSCHED_BIN)
# `make run` builds the tool too: the README's next step is to submit a job to the daemon
# it started, from another shell.
run: $(JSCHED_BIN)

$(LIBJSCHED_SO): $(LIBJSCHED_OBJS) $(JPROTO_LIB) libclient/libjsched.map
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,$(JSCHED_SONAME) -Wl,--version-script=libclient/libjsched.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(LIBJSCHED_OBJS) $(JPROTO_LIB) $(JANSSON_LIBS) $(LDLIBS)

# The links a program finds at run time (SONAME) and at link time (-ljsched).
$(B)/lib/$(JSCHED_SONAME): $(LIBJSCHED_SO)
	$(Q)ln -sf $(notdir $<) $@
$(B)/lib/libjsched.so: $(B)/lib/$(JSCHED_SONAME)
	$(Q)ln -sf $(notdir $<) $@

# The static library holds the codec's objects too, so -ljsched is enough.  `ar q` appends
# without replacing members of the same base name (ar r would drop one of two record.o).
$(LIBJSCHED_A): $(LIBJSCHED_OBJS) $(JPROTO_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(AR) qcs $@ $(LIBJSCHED_OBJS) $(JPROTO_OBJS)

# jsched.pc with this build's PREFIX (for test_exports); `make install` writes its own with
# the paths of its command line.  libdir and includedir are written ${prefix}-relative
# when they lie under PREFIX, so a relocated tree (pkg-config --define-prefix) still works.
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
jsched_pc_subst = -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|g' \
	-e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g'
$(JSCHED_PC): libclient/jsched.pc.in FORCE
	@mkdir -p $(@D)
	$(Q)sed $(jsched_pc_subst) $< > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

# The tool maps no shared library but libc at start: jansson is linked in from its static
# library where one is installed (Debian's libjansson-dev has it; else the shared one), and
# --as-needed leaves out libm and libdl, which it does not use.  Each shared library costs
# every call its mapping and relocation (tool/README.md has the figures).  libjsched.so
# itself keeps jansson shared.
JANSSON_A := $(wildcard $(shell $(PKG_CONFIG) --variable=libdir jansson 2>/dev/null)/libjansson.a)

#
# jsched itself is static (-static-pie: no loader, no shared library at start; the
# address space still randomised) where it can be: not under the sanitizers (their
# runtimes are shared libraries), and only with the static archives of jansson and of the
# C library (libc.a, rcrt1.o: Debian's libc6-dev).  `submit --wait --fn noop`, the tool's
# own cost in one call: 0.78-0.82 ms of CPU and 66-68 page faults dynamic, 0.46 ms and 44
# static (perf stat -r 100); callgrind 253,865 -> 158,118 instructions for `submit --wait
# -- /bin/true` (tool/README.md).  A static program cannot dlopen libsmartcols, ncurses
# or libmicrohttpd (a second C library would come with them), so the commands that load
# one run in jsched-full, the dynamic link of the same objects: the static jsched execs it
# (lazy.h).  JSCHED_STATIC=0 builds jsched dynamically, as jsched-full is, and no
# jsched-full.
JSCHED_FULL_BIN := $(B)/bin/jsched-full
libc_static := $(filter /%,$(wildcard $(shell $(CC) -print-file-name=libc.a 2>/dev/null)))
rcrt1 := $(filter /%,$(wildcard $(shell $(CC) -print-file-name=rcrt1.o 2>/dev/null)))
ifeq ($(origin JSCHED_STATIC),undefined)
JSCHED_STATIC := $(if $(SAN),0,$(if $(and $(JANSSON_A),$(libc_static),$(rcrt1)),1,0))
endif
JSCHED_TOOL_LINK = $(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -Wl,--as-needed \
	$(if $(JANSSON_A),$(JANSSON_A),$(JANSSON_LIBS)) -ldl $(LDLIBS)

ifeq ($(JSCHED_STATIC),1)
# The static jsched's copy of lazy.c: tool_handoff execs jsched-full, no dlopen.
$(B)/obj/libclient/tool/lazy-static.o: libclient/tool/lazy.c | $(B)/gen/jsched_version.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (static)")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -DJSCHED_TOOL_STATIC=1 -c $< -o $@
$(B)/obj/libclient/tool/lazy-static.o: CFLAGS += -fvisibility=hidden $(JANSSON_CFLAGS) $(SMARTCOLS_CFLAGS) \
	$(NCURSES_CFLAGS)

# jsched-full is an order-only prerequisite: whatever runs jsched (tests, benchmarks,
# `make run`) gets both.
$(JSCHED_BIN): $(filter-out %/lazy.o,$(JSCHED_CLI_OBJS)) $(B)/obj/libclient/tool/lazy-static.o \
		$(LIBJSCHED_A) | $(JSCHED_FULL_BIN)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@ (static-pie)")
	$(Q)$(CC) $(LDFLAGS) -static-pie -o $@ $(filter %.o %.a,$^) $(JANSSON_A) $(LDLIBS)
$(JSCHED_FULL_BIN): $(JSCHED_CLI_OBJS) $(LIBJSCHED_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(JSCHED_TOOL_LINK)
BINS += $(JSCHED_FULL_BIN)
else
$(JSCHED_BIN): $(JSCHED_CLI_OBJS) $(LIBJSCHED_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(JSCHED_TOOL_LINK)
endif

# ---- tests/libclient ---------------------------------------------------------------------
# One program per tests/libclient/test_*.c, linked with the static library (and the tool's
# parser for test_args).  test_exports and test_example get paths they need compiled in.
LIBCLIENT_TESTS := $(patsubst tests/libclient/%.c,$(B)/tests/libclient/%,$(wildcard tests/libclient/test_*.c))
TESTS += $(LIBCLIENT_TESTS)

# test_dashboard drives `jsched dashboard` in headless Chromium (tests/libclient/
# test_dashboard.py, Python's standard library only); this wrapper skips, saying why, where
# python3 is missing.
$(B)/tests/libclient/test_dashboard: tests/libclient/test_dashboard.py $(JSCHED_BIN) \
		$(B)/bin/jschedd
	@mkdir -p $(@D)
	$(Q)printf '#!/bin/sh\ncommand -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is not installed: the dashboard was not tried in a browser" >&2; exit 0; }\nexec python3 %s "$$@"\n' \
		'$(CURDIR)/tests/libclient/test_dashboard.py' > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
TESTS += $(B)/tests/libclient/test_dashboard

$(B)/obj/tests/libclient/%.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS) \
	-DLIBJSCHED_SO='"$(CURDIR)/$(LIBJSCHED_SO)"' -DJSCHED_SRCDIR='"$(CURDIR)"' \
	-DJSCHED_TEST_CC='"$(CC)"' -DJSCHED_BUILD_DIR='"$(CURDIR)/$(B)"' \
	-DJSCHED_TEST_SANFLAGS='"$(if $(SAN),-fsanitize=$(SAN))"' \
	-DJSCHED_TOOL_JANSSON_STATIC=$(if $(JANSSON_A),1,0) -DJSCHED_TOOL_STATIC=$(JSCHED_STATIC)

$(B)/tests/libclient/test_args: $(B)/obj/libclient/tool/args.o
$(B)/tests/libclient/test_exports: $(LIBJSCHED_SO) $(B)/lib/$(JSCHED_SONAME) $(B)/lib/libjsched.so $(JSCHED_PC)
$(B)/tests/libclient/test_example: $(LIBJSCHED_A) $(B)/lib/$(JSCHED_SONAME) $(B)/lib/libjsched.so
$(B)/tests/libclient/test_tool: $(JSCHED_BIN)
# test_tool_daemon runs the tool against a real jschedd, through the daemon tests' harness
# (daemon/build.mk is read after this file: the paths are spelled out).
$(B)/tests/libclient/test_tool_daemon: $(B)/obj/tests/daemon/harness.o | $(JSCHED_BIN) $(B)/bin/jschedd \
	$(B)/tests/daemon/module_example.so
# test_tool_top runs `jsched top` in tmux against a real jschedd.
$(B)/tests/libclient/test_tool_top: $(B)/obj/tests/daemon/harness.o | $(JSCHED_BIN) $(B)/bin/jschedd \
	$(B)/tests/daemon/module_example.so
# test_oom fails the library's allocations in turn, through the shared wrappers
# (tests/build.mk).

$(LIBCLIENT_TESTS): $(B)/tests/libclient/%: $(B)/obj/tests/libclient/%.o $(LIBJSCHED_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS)

.PHONY: test-libclient
test-libclient: $(LIBCLIENT_TESTS) $(JSCHED_BIN)
	@JSCHED_BUILD_DIR=$(B) sh mk/run-tests.sh $(LIBCLIENT_TESTS)

.PHONY: install-libclient uninstall-libclient
install: install-libclient
install-libclient: $(LIBJSCHED_SO) $(LIBJSCHED_A) $(JSCHED_BIN) $(if $(filter 1,$(JSCHED_STATIC)),$(JSCHED_FULL_BIN))
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/jsched
	install -m 755 $(LIBJSCHED_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBJSCHED_SO)) $(DESTDIR)$(LIBDIR)/$(JSCHED_SONAME)
	ln -sf $(JSCHED_SONAME) $(DESTDIR)$(LIBDIR)/libjsched.so
	install -m 644 $(LIBJSCHED_A) $(DESTDIR)$(LIBDIR)/
	sed $(jsched_pc_subst) libclient/jsched.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/jsched.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/jsched.pc
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(JSCHED_BIN) $(DESTDIR)$(BINDIR)/
	$(if $(filter 1,$(JSCHED_STATIC)),install -d $(DESTDIR)$(LIBEXECDIR)/jsched && \
		install -m 755 $(JSCHED_FULL_BIN) $(DESTDIR)$(LIBEXECDIR)/jsched/)
	install -m 644 include/jsched/jsched.h include/jsched/error.h $(DESTDIR)$(INCLUDEDIR)/jsched/

uninstall: uninstall-libclient
uninstall-libclient:
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(LIBJSCHED_SO)) $(DESTDIR)$(LIBDIR)/$(JSCHED_SONAME) \
		$(DESTDIR)$(LIBDIR)/libjsched.so $(DESTDIR)$(LIBDIR)/libjsched.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/jsched.pc $(DESTDIR)$(BINDIR)/jsched \
		$(DESTDIR)$(INCLUDEDIR)/jsched/jsched.h $(DESTDIR)$(INCLUDEDIR)/jsched/error.h \
		$(DESTDIR)$(LIBEXECDIR)/jsched/jsched-full
	rmdir $(DESTDIR)$(INCLUDEDIR)/jsched $(DESTDIR)$(LIBEXECDIR)/jsched 2>/dev/null || true
