# systemd/: unit files, generated from *.in with the install paths, installed by
# `make install` (PREFIX, DESTDIR).  systemd reads units from $(PREFIX)/lib/systemd/ for
# PREFIX=/usr and /usr/local alike.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
DOCDIR ?= $(PREFIX)/share/doc/jschedd
SYSTEMD_SYSTEM_DIR ?= $(PREFIX)/lib/systemd/system
SYSTEMD_USER_DIR ?= $(PREFIX)/lib/systemd/user
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d

SYSTEMD_UNITS := $(B)/systemd/jschedd.service $(B)/systemd/jschedd.socket \
	$(B)/systemd/user/jschedd.service $(B)/systemd/user/jschedd.socket

# systemd_subst BINDIR: the sed program that fills in a unit template.
systemd_subst = -e 's|@BINDIR@|$(1)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g'

$(B)/systemd/%: systemd/%.in Makefile systemd/build.mk
	@mkdir -p $(@D)
	$(Q)sed $(call systemd_subst,$(BINDIR)) $< > $@

all: $(SYSTEMD_UNITS)

.PHONY: install-systemd
install: install-systemd
install-systemd: $(SYSTEMD_UNITS)
	install -d $(DESTDIR)$(SYSTEMD_SYSTEM_DIR) $(DESTDIR)$(SYSTEMD_USER_DIR) $(DESTDIR)$(SYSUSERS_DIR)
	install -m 0644 $(B)/systemd/jschedd.service $(B)/systemd/jschedd.socket $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/
	install -m 0644 $(B)/systemd/user/jschedd.service $(B)/systemd/user/jschedd.socket $(DESTDIR)$(SYSTEMD_USER_DIR)/
	install -m 0644 systemd/jschedd.sysusers $(DESTDIR)$(SYSUSERS_DIR)/jschedd.conf
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 README.md proto/PROTOCOL.md $(DESTDIR)$(DOCDIR)/  # the units' Documentation=

# The programs the units start: jschedd, and beside it jschedd-runas (the helper that
# starts a command as its owner when jschedd runs as root; jschedd looks for it in its own
# directory).  And the module API header, for those who write handler modules.  The
# client library, its headers, the pkg-config file and jsched are libclient's.
.PHONY: install-jschedd
install: install-jschedd
install-jschedd: $(JSCHEDD) $(JSCHEDD_RUNAS)
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(JSCHEDD) $(JSCHEDD_RUNAS) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(INCLUDEDIR)/jsched
	install -m 0644 include/jsched/module.h $(DESTDIR)$(INCLUDEDIR)/jsched/

# The protocols' unit test (daemon/sdnotify.c needs nothing but libc).
$(B)/tests/systemd/test_sdnotify: $(B)/obj/tests/systemd/test_sdnotify.o $(B)/obj/daemon/sdnotify.o
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(CMOCKA_LIBS) $(LDLIBS) -o $@
TESTS += $(B)/tests/systemd/test_sdnotify

# The integration test: the units pass systemd-analyze verify, READY/STATUS/WATCHDOG/
# STOPPING arrive on a test NOTIFY_SOCKET, socket activation through
# systemd-socket-activate (tests/systemd/test_systemd.c).  It runs the built jschedd.
$(B)/obj/tests/systemd/test_systemd.o: CFLAGS += $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
$(B)/tests/systemd/test_systemd: $(B)/obj/tests/systemd/test_systemd.o $(LIBJSCHED_A) | $(JSCHEDD)
	@mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $(filter %.o %.a,$^) $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LDLIBS) -o $@
TESTS += $(B)/tests/systemd/test_systemd
