# systemd/: unit files, generated from *.in with the install paths, installed by
# `make install` (PREFIX, DESTDIR).  systemd reads units from $(PREFIX)/lib/systemd/ for
# PREFIX=/usr and /usr/local alike.  The units in $(B)/systemd/ (with this build's paths)
# are for looking at; `make install` writes its own from the templates with the paths of
# its command line, so a `make` followed by `make install PREFIX=/usr` installs units
# that name /usr (nothing built depends on an install path).
SYSTEMD_SYSTEM_DIR ?= $(PREFIX)/lib/systemd/system
SYSTEMD_USER_DIR ?= $(PREFIX)/lib/systemd/user
SYSUSERS_DIR ?= $(PREFIX)/lib/sysusers.d

SYSTEMD_UNIT_NAMES := jschedd.service jschedd.socket user/jschedd.service user/jschedd.socket
SYSTEMD_UNITS := $(SYSTEMD_UNIT_NAMES:%=$(B)/systemd/%)

# systemd_subst: the sed program that fills in a unit template with the install paths.
systemd_subst = -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBEXECDIR@|$(LIBEXECDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g'

$(B)/systemd/%: systemd/%.in FORCE
	@mkdir -p $(@D)
	$(Q)sed $(systemd_subst) $< > $@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }

all: $(SYSTEMD_UNITS)

.PHONY: install-systemd uninstall-systemd
install: install-systemd
install-systemd:
	install -d $(DESTDIR)$(SYSTEMD_SYSTEM_DIR) $(DESTDIR)$(SYSTEMD_USER_DIR) $(DESTDIR)$(SYSUSERS_DIR)
	sed $(systemd_subst) systemd/jschedd.service.in > $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/jschedd.service
	sed $(systemd_subst) systemd/jschedd.socket.in > $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/jschedd.socket
	sed $(systemd_subst) systemd/user/jschedd.service.in > $(DESTDIR)$(SYSTEMD_USER_DIR)/jschedd.service
	sed $(systemd_subst) systemd/user/jschedd.socket.in > $(DESTDIR)$(SYSTEMD_USER_DIR)/jschedd.socket
	chmod 0644 $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/jschedd.* $(DESTDIR)$(SYSTEMD_USER_DIR)/jschedd.*
	install -m 0644 systemd/jschedd.sysusers $(DESTDIR)$(SYSUSERS_DIR)/jschedd.conf
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 README.md proto/PROTOCOL.md $(DESTDIR)$(DOCDIR)/  # the units' Documentation=
	install -m 0644 systemd/jschedd.example.json $(DESTDIR)$(DOCDIR)/examples/jschedd.json

uninstall: uninstall-systemd
uninstall-systemd:
	rm -f $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/jschedd.service $(DESTDIR)$(SYSTEMD_SYSTEM_DIR)/jschedd.socket \
		$(DESTDIR)$(SYSTEMD_USER_DIR)/jschedd.service $(DESTDIR)$(SYSTEMD_USER_DIR)/jschedd.socket \
		$(DESTDIR)$(SYSUSERS_DIR)/jschedd.conf $(DESTDIR)$(DOCDIR)/README.md \
		$(DESTDIR)$(DOCDIR)/PROTOCOL.md $(DESTDIR)$(DOCDIR)/examples/jschedd.json
	rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The programs the units start: jschedd in $(BINDIR), and jschedd-runas (the helper that
# starts a command as its owner when jschedd runs as root; not for people to run, hence
# libexec) in $(LIBEXECDIR)/jschedd/, where jschedd looks for it ($JSCHED_RUNAS first,
# then beside itself, as in the build tree, then ../libexec/jschedd/ from its own
# directory; the units set $JSCHED_RUNAS, for a LIBEXECDIR elsewhere).  And the module API
# header, for those who write handler modules.  The client library, its headers, the
# pkg-config file and jsched are libclient's.
.PHONY: install-jschedd uninstall-jschedd
install: install-jschedd
install-jschedd: $(JSCHEDD) $(JSCHEDD_RUNAS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/jschedd
	install -m 0755 $(JSCHEDD) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(JSCHEDD_RUNAS) $(DESTDIR)$(LIBEXECDIR)/jschedd/
	install -d $(DESTDIR)$(INCLUDEDIR)/jsched
	install -m 0644 include/jsched/module.h $(DESTDIR)$(INCLUDEDIR)/jsched/

uninstall: uninstall-jschedd
uninstall-jschedd:
	rm -f $(DESTDIR)$(BINDIR)/jschedd $(DESTDIR)$(LIBEXECDIR)/jschedd/jschedd-runas \
		$(DESTDIR)$(INCLUDEDIR)/jsched/module.h
	rmdir $(DESTDIR)$(LIBEXECDIR)/jschedd $(DESTDIR)$(INCLUDEDIR)/jsched 2>/dev/null || true

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

# The packager's check: `make install PREFIX=/usr DESTDIR=<tmp>` from this build, the
# staged units through `systemd-analyze verify`, jsched.pc relocated, `make uninstall`
# (tests/systemd/test_install.sh, with this build's variables filled in).  It depends on
# everything `make install` copies, so the inner make has nothing to build.
$(B)/tests/systemd/test_install: tests/systemd/test_install.sh systemd/build.mk $(LIBJSCHED_SO) \
		$(patsubst man/%.scd,$(B)/man/%,$(wildcard man/*.scd)) \
		$(LIBJSCHED_A) $(JSCHED_BIN) $(JSCHEDD) $(JSCHEDD_RUNAS)
	@mkdir -p $(@D)
	$(Q)sed -e 's|@SRCDIR@|$(CURDIR)|g' -e 's|@BUILD@|$(CURDIR)/$(B)|g' -e 's|@CC@|$(CC)$(if $(SAN), -fsanitize=$(SAN))|g' \
		-e 's|@MAKEVARS@|B=$(B) SAN=$(SAN) CTX=$(CTX) CROSS=$(CROSS) CC=$(CC)|g' \
		-e 's|@JSCHED_STATIC@|$(JSCHED_STATIC)|g' $< > $@.tmp
	$(Q)chmod +x $@.tmp && mv $@.tmp $@
TESTS += $(B)/tests/systemd/test_install
