/* daemon/run/modules.c: loading handler modules with dlopen (see modules.h). */
#include "daemon/run/modules.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/log.h"
#include "jsched/error.h"

static int add_handler(struct jd_modules *m, const struct jsched_handler *h, const char *from,
		       char *err, size_t errlen)
{
	const struct jsched_handler **t;

	if (!h->name || !h->name[0] || strlen(h->name) > 256 || !h->fn) {
		snprintf(err, errlen, "%s: a handler without a name or function", from);
		return JSCHED_EINVAL;
	}
	if (jd_handler_find(m, h->name)) {
		snprintf(err, errlen, "%s: handler '%s' is already defined", from, h->name);
		return JSCHED_EEXISTS;
	}
	t = realloc(m->table, (m->n_handlers + 1) * sizeof(*t));
	if (!t)
		return JSCHED_ENOMEM;
	m->table = t;
	m->table[m->n_handlers++] = h;
	return 0;
}

static int load_one(struct jd_modules *m, const char *path, char *err, size_t errlen)
{
	const struct jsched_module *mod;
	void *dl;
	int rc;

	/* RTLD_NOW: an unresolved symbol is found at start, not at the first call.
	 * RTLD_LOCAL: modules do not see each other's symbols. */
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, errlen, "module %s: %s", path, dlerror());
		return JSCHED_EIO;
	}
	mod = dlsym(dl, "jsched_module");
	if (!mod) {
		snprintf(err, errlen, "module %s: no jsched_module symbol", path);
		dlclose(dl);
		return JSCHED_EINVAL;
	}
	if (mod->abi != JSCHED_MODULE_ABI) {
		snprintf(err, errlen, "module %s: built for module ABI %u, jschedd speaks %u",
			 path, (unsigned)mod->abi, (unsigned)JSCHED_MODULE_ABI);
		dlclose(dl);
		return JSCHED_EVERSION_MISMATCH;
	}
	if (mod->init && mod->init() != 0) {
		snprintf(err, errlen, "module %s: its init failed", path);
		dlclose(dl);
		return JSCHED_EINVAL;
	}
	m->dl[m->n_mods] = dl;
	m->mod[m->n_mods++] = mod;
	for (size_t i = 0; i < mod->n_handlers; i++)
		if ((rc = add_handler(m, &mod->handlers[i], path, err, errlen)) < 0)
			return rc;
	jd_log(JD_LOG_INFO, "module %s (%s): %zu handlers", mod->name ? mod->name : "?", path,
	       mod->n_handlers);
	return 0;
}

int jd_modules_load(struct jd_modules *m, const char (*paths)[4096], size_t n, char *err,
		    size_t errlen)
{
	size_t nb;
	const struct jsched_handler *b = jd_builtins(&nb);
	int rc;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < nb; i++)
		if ((rc = add_handler(m, &b[i], "built-in", err, errlen)) < 0)
			return rc;
	if (n > JD_MAX_MODULES) {
		snprintf(err, errlen, "at most %d modules", JD_MAX_MODULES);
		return JSCHED_ELIMIT_EXCEEDED;
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = load_one(m, paths[i], err, errlen)) < 0)
			return rc;
	return 0;
}

void jd_modules_unload(struct jd_modules *m)
{
	while (m->n_mods > 0) {
		m->n_mods--;
		if (m->mod[m->n_mods]->fini)
			m->mod[m->n_mods]->fini();
		dlclose(m->dl[m->n_mods]);
	}
	free(m->table);
	m->table = NULL;
	m->n_handlers = 0;
}

const struct jsched_handler *jd_handler_find(const struct jd_modules *m, const char *name)
{
	/* A linear scan: a handful of built-ins and a few module handlers. */
	for (size_t i = 0; i < m->n_handlers; i++)
		if (strcmp(m->table[i]->name, name) == 0)
			return m->table[i];
	return NULL;
}
