/* lazy.c: loading the tool's optional libraries when first needed (lazy.h says why). */
#include "libclient/tool/tool.h"
#include "libclient/tool/lazy_curses.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef JSCHED_TOOL_STATIC
#define JSCHED_TOOL_STATIC 0 /* 1: the static jsched's copy of this file (libclient/build.mk) */
#endif
#if !JSCHED_TOOL_STATIC
#include <dlfcn.h>
#endif

struct tool_scols tool_scols;
struct tool_curses tool_curses;

#if JSCHED_TOOL_STATIC
/* run_full: execv path with argv; returns only when it could not, with errno. */
static void run_full(const char *path, char **argv, char *tried, size_t len, int *err)
{
	execv(path, argv);
	if (errno != ENOENT || *err == 0) {
		*err = errno;
		snprintf(tried, len, "%s", path);
	}
}

/* tool_handoff: see lazy.h. */
int tool_handoff(char **argv, const char *verb)
{
	const char *env = getenv("JSCHED_FULL");
	char self[PATH_MAX], path[PATH_MAX + 32], tried[PATH_MAX + 32] = "";
	int err = 0;

	if (env != NULL && env[0] != '\0') {
		execv(env, argv);
		fprintf(stderr, "jsched %s: cannot run $JSCHED_FULL (%s): %s\n", verb, env, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash = n > 0 ? memrchr(self, '/', (size_t)n) : NULL;
	if (slash == NULL) {
		fprintf(stderr, "jsched %s: cannot find jsched-full, which prints tables, top and the "
				"dashboard: /proc/self/exe does not say where jsched is (%s); set "
				"$JSCHED_FULL to its path\n", verb, n < 0 ? strerror(errno) : "no directory");
		return CLI_EXIT_FAILED;
	}
	*slash = '\0';
	/* Beside jsched (the build tree), else where `make install` puts it. */
	snprintf(path, sizeof path, "%s/jsched-full", self);
	run_full(path, argv, tried, sizeof tried, &err);
	snprintf(path, sizeof path, "%s/../libexec/jsched/jsched-full", self);
	run_full(path, argv, tried, sizeof tried, &err);
	if (err != ENOENT)
		fprintf(stderr, "jsched %s: cannot run %s, which prints tables, top and the dashboard: %s\n", verb,
			tried, strerror(err));
	else
		fprintf(stderr, "jsched %s: jsched-full, which prints tables, top and the dashboard, is neither "
				"beside jsched in %s nor in %s/../libexec/jsched/ (set $JSCHED_FULL to its "
				"path)\n", verb, self, self);
	return CLI_EXIT_FAILED;
}

/* tool_lazy_load: see lazy.h.  The static jsched has handed every command that loads a
 * library to jsched-full before it gets here; reaching this is a miss of
 * cli_cmd_loads_libs, said as such rather than loading a second C library. */
int tool_lazy_load(const char *what, const char *const *sonames, const char *const *syms,
		   void **const *addrs, size_t n)
{
	(void)syms;
	(void)addrs;
	(void)n;
	fprintf(stderr, "%s: the static jsched cannot load %s: this command should have run in "
			"jsched-full (a bug: cli_cmd_loads_libs missed it)\n", what, sonames[0]);
	return -1;
}
#else
/* tool_handoff: see lazy.h.  This is jsched-full, or a jsched linked dynamically: the
 * command runs here. */
int tool_handoff(char **argv, const char *verb)
{
	(void)argv;
	(void)verb;
	return CLI_EXIT_OK;
}

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
#endif

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
