# man/: the manual pages, one scdoc source each (man/README.md), rendered by scdoc into
# $(B)/man/ and installed into $(MANDIR)/manN by `make install`.
MAN_SRCS := $(wildcard man/*.scd)
MAN_PAGES := $(MAN_SRCS:man/%.scd=$(B)/man/%)
SCDOC ?= scdoc

$(B)/man/%: man/%.scd
	@mkdir -p $(@D)
	@$(if $(Q),echo "  SCDOC   $<")
	$(Q)$(SCDOC) < $< > $@.tmp && mv $@.tmp $@

all: $(MAN_PAGES)

# man_section PAGE: the N of PAGE.N.
man_section = $(patsubst .%,%,$(suffix $(1)))

.PHONY: install-man uninstall-man
install: install-man
install-man: $(MAN_PAGES)
	$(foreach p,$(MAN_PAGES),install -d $(DESTDIR)$(MANDIR)/man$(call man_section,$(p)) && \
		install -m 0644 $(p) $(DESTDIR)$(MANDIR)/man$(call man_section,$(p))/ &&) true

uninstall: uninstall-man
uninstall-man:
	rm -f $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(call man_section,$(p))/$(notdir $(p)))
	rmdir $(sort $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(call man_section,$(p)))) \
		$(DESTDIR)$(MANDIR) 2>/dev/null || true

# The check that the pages say what the programs do: every option of jsched's and each
# subcommand's --help, and of jschedd's, is in the page, and every function of jsched.h
# in libjsched(3) (tests/man/test_man.sh, with this build's paths filled in).
$(B)/tests/man/test_man: tests/man/test_man.sh man/build.mk $(MAN_PAGES) $(JSCHED_BIN) $(JSCHEDD)
	@mkdir -p $(@D)
	$(Q)sed -e 's|@SRCDIR@|$(CURDIR)|g' -e 's|@BUILD@|$(CURDIR)/$(B)|g' $< > $@.tmp
	$(Q)chmod +x $@.tmp && mv $@.tmp $@
TESTS += $(B)/tests/man/test_man
