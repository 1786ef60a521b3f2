/* daemon/run/modules.h: the call-job handlers: built-ins and those of loaded modules.
 *
 * jd_modules_load() registers the built-ins (builtins.c) and then dlopen()s each module
 * the config lists, checks its ABI number (include/jsched/module.h), runs its init and
 * adds its handlers.  A handler name may be registered once; a module that repeats one
 * is refused, and so is a module whose ABI differs: the daemon does not start with a
 * configuration it cannot honour.  Lookups (jd_handler_find) happen at submit, on the
 * loop thread; the table does not change after start.
 */
#ifndef JD_MODULES_H
#define JD_MODULES_H

#include <stddef.h>

#include "jsched/module.h"

#define JD_MAX_MODULES 8

struct jd_modules {
	void *dl[JD_MAX_MODULES];
	const struct jsched_module *mod[JD_MAX_MODULES];
	size_t n_mods;
	const struct jsched_handler **table;	/* every handler, built-ins first */
	size_t n_handlers;
};

/* jd_modules_load: register the built-ins and load `n` module paths.  Returns 0, or a
 * negative code with the reason in err.  Main thread, before the workers start. */
int jd_modules_load(struct jd_modules *m, const char (*paths)[4096], size_t n, char *err,
		    size_t errlen);

/* jd_modules_unload: call each module's fini and dlclose it.  After the workers stop. */
void jd_modules_unload(struct jd_modules *m);

/* jd_handler_find: the handler called `name`, or NULL.  Any thread (read-only table). */
const struct jsched_handler *jd_handler_find(const struct jd_modules *m, const char *name);

/* jd_builtins: the built-in handlers (noop, echo, sleep, spin, fail) and their count. */
const struct jsched_handler *jd_builtins(size_t *n);

#endif /* JD_MODULES_H */
