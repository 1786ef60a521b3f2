# libclient/build.mk: libjsched (shared + static + jsched.pc) and the jsched tool.
#
#   $(B)/lib/libjsched.so.$(VERSION)  the shared library; SONAME libjsched.so.$(JSCHED_SOMAJOR);
#                                     exports only jsched_* (libclient/libjsched.map)
#   $(B)/lib/libjsched.a              the static library; holds the protocol codec too, so a
#                                     static link needs only -ljsched and jansson
#   $(B)/lib/pkgconfig/jsched.pc      for pkg-config, with this build's PREFIX
#   $(B)/bin/jsched                   the command-line tool (linked statically with libjsched)
#   install-libclient                 installs all of it under $(DESTDIR)$(PREFIX)
#
# The library's objects are compiled with -fvisibility=hidden, and the version script
# hides everything else too (the codec's jp_* symbols come in from libjproto.a).

JSCHED_SOMAJOR := 0
JSCHED_SONAME := libjsched.so.$(JSCHED_SOMAJOR)
LIBJSCHED_SO := $(B)/lib/libjsched.so.$(VERSION)
LIBJSCHED_A := $(B)/lib/libjsched.a
JSCHED_PC := $(B)/lib/pkgconfig/jsched.pc
JSCHED_BIN := $(B)/bin/jsched

LIBJSCHED_SRCS := libclient/path.c libclient/strerror.c libclient/spec.c libclient/record.c \
	libclient/conn.c libclient/ops.c
LIBJSCHED_OBJS := $(LIBJSCHED_SRCS:%.c=$(B)/obj/%.o)

JSCHED_CLI_SRCS :=
JSCHED_CLI_OBJS := $(JSCHED_CLI_SRCS:%.c=$(B)/obj/%.o)

$(LIBJSCHED_OBJS) $(JSCHED_CLI_OBJS): CFLAGS += -fvisibility=hidden $(JANSSON_CFLAGS)

# Until proto/build.mk defines the codec (JPROTO_LIB), nothing here can link.
ifneq ($(JPROTO_LIB),)
LIBS += $(LIBJSCHED_SO) $(B)/lib/$(JSCHED_SONAME) $(B)/lib/libjsched.so $(LIBJSCHED_A) $(JSCHED_PC)
endif

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

# The static library starts as a copy of the codec's archive, so -ljsched is enough.
$(LIBJSCHED_A): $(LIBJSCHED_OBJS) $(JPROTO_LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && $(if $(JPROTO_LIB),cp $(JPROTO_LIB) $@ &&) $(AR) rcs $@ $(LIBJSCHED_OBJS)

# Regenerated when PREFIX, LIBDIR or INCLUDEDIR change (make install PREFIX=/usr after a
# plain make must not install a jsched.pc that points into /usr/local).
$(JSCHED_PC): libclient/jsched.pc.in FORCE
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

.PHONY: install-libclient
install: install-libclient
install-libclient: $(LIBJSCHED_SO) $(LIBJSCHED_A) $(JSCHED_PC)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/jsched
	install -m 755 $(LIBJSCHED_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBJSCHED_SO)) $(DESTDIR)$(LIBDIR)/$(JSCHED_SONAME)
	ln -sf $(JSCHED_SONAME) $(DESTDIR)$(LIBDIR)/libjsched.so
	install -m 644 $(LIBJSCHED_A) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(JSCHED_PC) $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 include/jsched/jsched.h include/jsched/error.h $(DESTDIR)$(INCLUDEDIR)/jsched/
