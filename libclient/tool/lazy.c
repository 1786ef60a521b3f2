/* lazy.c: loading the tool's optional libraries when first needed (lazy.h says why). */
#include "libclient/tool/tool.h"
#include "libclient/tool/lazy_curses.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct tool_scols tool_scols;
struct tool_curses tool_curses;

/* tool_lazy_load: see lazy.h. */
int tool_lazy_load(const char *what, const char *const *sonames, const char *const *syms,
		   void **const *addrs, size_t n)
{
	void *h = NULL, *got[32];

	if (n > sizeof(got) / sizeof(got[0])) {
		fprintf(stderr, "%s: %zu functions to load, more than %zu\n", what, n, sizeof(got) / sizeof(got[0]));
		return -1;
	}
	for (size_t i = 0; h == NULL && sonames[i] != NULL; i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "%s: cannot load %s: %s\n", what, sonames[0], dlerror());
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if ((got[i] = dlsym(h, syms[i])) == NULL) {
			fprintf(stderr, "%s: %s has no %s: %s\n", what, sonames[0], syms[i], dlerror());
			return -1;
		}
	for (size_t i = 0; i < n; i++)
		*addrs[i] = got[i];
	return 0; /* h stays open for the process's life */
}

/* tool_scols_new_table: see lazy.h. */
struct libscols_table *tool_scols_new_table(void)
{
#define TOOL_LAZY_LIB tool_scols
	static const char *const sonames[] = {"libsmartcols.so.1", "libsmartcols.so", NULL};
	static const char *const syms[] = {TOOL_SCOLS_SYMS(TOOL_LAZY_NAME)};
	void **const addrs[] = {TOOL_SCOLS_SYMS(TOOL_LAZY_ADDR)};

	if (tool_scols.scols_new_table_p == NULL &&
	    tool_lazy_load("jsched: tables", sonames, syms, addrs, sizeof(syms) / sizeof(syms[0])) < 0)
		exit(CLI_EXIT_FAILED);
	return tool_scols.scols_new_table_p();
#undef TOOL_LAZY_LIB
}

/* tool_scols_unref_table: see lazy.h. */
void tool_scols_unref_table(struct libscols_table *tb)
{
	if (tb != NULL)
		tool_scols.scols_unref_table_p(tb);
}

/* tool_curses_initscr: see lazy_curses.h. */
WINDOW *tool_curses_initscr(void)
{
#define TOOL_LAZY_LIB tool_curses
	static const char *const sonames[] = {"libncursesw.so.6", "libncursesw.so", NULL};
	static const char *const syms[] = {TOOL_CURSES_SYMS(TOOL_LAZY_NAME)};
	void **const addrs[] = {TOOL_CURSES_SYMS(TOOL_LAZY_ADDR)};

	if (tool_curses.initscr_p == NULL &&
	    tool_lazy_load("jsched top", sonames, syms, addrs, sizeof(syms) / sizeof(syms[0])) < 0)
		exit(CLI_EXIT_FAILED);
	return tool_curses.initscr_p();
#undef TOOL_LAZY_LIB
}
