# completions/: jsched's completions for bash, zsh and fish (completions/README.md),
# installed by `make install` where each shell looks: bash-completion's completions
# folder, zsh's vendor-completions (PREFIX=/usr, Debian's) or site-functions (elsewhere),
# fish's vendor_completions.d.
BASH_COMPLETION_DIR ?= $(DATADIR)/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(if $(filter /usr,$(PREFIX)),$(DATADIR)/zsh/vendor-completions,$(DATADIR)/zsh/site-functions)
FISH_COMPLETION_DIR ?= $(DATADIR)/fish/vendor_completions.d

.PHONY: install-completions uninstall-completions
install: install-completions
install-completions:
	install -d $(DESTDIR)$(BASH_COMPLETION_DIR) $(DESTDIR)$(ZSH_COMPLETION_DIR) $(DESTDIR)$(FISH_COMPLETION_DIR)
	install -m 0644 completions/jsched.bash $(DESTDIR)$(BASH_COMPLETION_DIR)/jsched
	install -m 0644 completions/_jsched $(DESTDIR)$(ZSH_COMPLETION_DIR)/_jsched
	install -m 0644 completions/jsched.fish $(DESTDIR)$(FISH_COMPLETION_DIR)/jsched.fish

uninstall: uninstall-completions
uninstall-completions:
	rm -f $(DESTDIR)$(BASH_COMPLETION_DIR)/jsched $(DESTDIR)$(ZSH_COMPLETION_DIR)/_jsched \
		$(DESTDIR)$(FISH_COMPLETION_DIR)/jsched.fish
	rmdir $(DESTDIR)$(BASH_COMPLETION_DIR) $(DESTDIR)$(ZSH_COMPLETION_DIR) $(DESTDIR)$(FISH_COMPLETION_DIR) \
		2>/dev/null || true
