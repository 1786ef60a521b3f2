/* tests/daemon/module_badabi.c: a module built for another module ABI.  jschedd must
 * refuse to start with it, naming the file (test_daemon_lifecycle). */
#include "jsched/module.h"

static int nothing(struct jsched_task *t, const json_t *args, json_t **result)
{
	(void)t;
	(void)args;
	*result = NULL;
	return 0;
}

static const struct jsched_handler handlers[] = {{"badabi.nothing", nothing, 0}};

JSCHED_MODULE_EXPORT const struct jsched_module jsched_module = {
	.abi = JSCHED_MODULE_ABI + 1,
	.name = "badabi",
	.handlers = handlers,
	.n_handlers = 1,
};
