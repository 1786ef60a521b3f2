/* spec.c: building job specs.
 *
 * A spec is kept as the JSON object the protocol sends (proto/PROTOCOL.md section 4), and
 * each setter writes one member of it.  This keeps the builder and jsched_spec_from_json
 * the same thing, makes jsched_spec_to_json a dump, and leaves every limit and cross-member
 * rule to the daemon, which checks them anyway: the library rejects only what could never
 * be right (a NULL where a string is needed, an exec member on a call job, a cost out of
 * 1..1,000,000), so that a newer daemon's wider limits work without a new library.
 *
 * Why a builder and not a public struct: members can be added without breaking binaries,
 * and the common case stays one call per member.  Why not a json_t in the API: callers
 * would need jansson's headers and the same jansson as the library (see jsched.h).
 */
#include "libclient/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int new_spec(json_t *obj, struct jsched_spec **out)
{
	struct jsched_spec *spec = malloc(sizeof *spec);
	if (spec == NULL) {
		json_decref(obj);
		return JSCHED_ENOMEM;
	}
	spec->obj = obj;
	atomic_init(&spec->text, NULL);
	spec->env_text = NULL;
	spec->env_len = 0;
	*out = spec;
	return 0;
}

/* jsched_spec_exec: see jsched.h. */
int jsched_spec_exec(const char *const *argv, struct jsched_spec **out)
{
	if (out == NULL)
		return JSCHED_EINVAL;
	*out = NULL;
	if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0')
		return JSCHED_EINVAL;
	json_t *arr = json_array();
	if (arr == NULL)
		return JSCHED_ENOMEM;
	for (size_t i = 0; argv[i] != NULL; i++)
		if (json_array_append_new(arr, json_string(argv[i])) < 0) {
			json_decref(arr);
			/* json_string fails on bad UTF-8 as well as on memory */
			return JSCHED_EINVAL;
		}
	json_t *obj = json_pack("{s:s, s:o}", "kind", "exec", "argv", arr); /* steals arr */
	if (obj == NULL)
		return JSCHED_ENOMEM;
	return new_spec(obj, out);
}

/* jsched_spec_call: see jsched.h. */
int jsched_spec_call(const char *fn, const char *args_json, struct jsched_spec **out)
{
	if (out == NULL)
		return JSCHED_EINVAL;
	*out = NULL;
	if (fn == NULL || fn[0] == '\0')
		return JSCHED_EINVAL;
	json_t *args = NULL;
	if (args_json != NULL) {
		args = json_loads(args_json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
		if (args == NULL)
			return JSCHED_EINVAL;
	}
	json_t *obj = json_pack("{s:s, s:s}", "kind", "call", "fn", fn);
	if (obj == NULL) {
		json_decref(args);
		return JSCHED_EINVAL;
	}
	if (args != NULL && json_object_set_new(obj, "args", args) < 0) {
		json_decref(obj);
		return JSCHED_ENOMEM;
	}
	return new_spec(obj, out);
}

/* jsched_spec_from_json: see jsched.h. */
int jsched_spec_from_json(const char *json, struct jsched_spec **out)
{
	if (out == NULL)
		return JSCHED_EINVAL;
	*out = NULL;
	if (json == NULL)
		return JSCHED_EINVAL;
	json_t *obj = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return JSCHED_EINVAL;
	}
	return new_spec(obj, out);
}

/* jsched_spec_to_json: see jsched.h. */
int jsched_spec_to_json(const struct jsched_spec *spec, char **out)
{
	if (spec == NULL || out == NULL)
		return JSCHED_EINVAL;
	const json_t *obj = jc_spec_obj(spec);
	*out = obj != NULL ? jc_dup_json(obj) : NULL;
	return *out != NULL ? 0 : JSCHED_ENOMEM;
}

/* jsched_spec_free: see jsched.h. */
void jsched_spec_free(struct jsched_spec *spec)
{
	if (spec == NULL)
		return;
	json_decref(spec->obj);
	free(atomic_load(&spec->text));
	free(spec->env_text);
	free(spec);
}

/* mut: spec's object, about to change: the text jc_spec_text wrote of it is dropped.
 * Every change to a spec goes through here (spec.c is the only writer). */
static json_t *mut(struct jsched_spec *spec)
{
	free(atomic_exchange(&spec->text, NULL));
	return spec->obj;
}

/* jc_spec_obj: see internal.h.  Parsing the text it wrote gives the tree
 * jsched_spec_inherit made before it kept the text (test_spec compares them). */
const json_t *jc_spec_obj(const struct jsched_spec *spec)
{
	struct jsched_spec *s = (struct jsched_spec *)(uintptr_t)spec; /* the same spec, in another form */
	if (s->env_text != NULL) {
		json_t *env = json_loadb(s->env_text, s->env_len, JSON_REJECT_DUPLICATES, NULL);
		if (env == NULL || json_object_set_new(s->obj, "env", env) < 0)
			return NULL;
		free(s->env_text);
		s->env_text = NULL;
	}
	return s->obj;
}

/* member_key: an object's member name (klen bytes at key) as jansson writes it compactly,
 * after a comma unless it is the first: `,"key":`.  0 or JSCHED_ENOMEM. */
static int member_key(struct jp_buf *b, bool first, const char *key, size_t klen)
{
	int r = first ? 0 : jp_buf_append(b, ",", 1);
	if (r == 0)
		r = jp_buf_append_json_string(b, key, klen);
	return r != 0 ? r : jp_buf_append(b, ":", 1);
}

/* spec_text: spec's object as jp_buf_append_json writes it, into b; the environment kept
 * as text is copied into its member's place. */
static int spec_text(const struct jsched_spec *spec, struct jp_buf *b)
{
	if (spec->env_text == NULL)
		return jp_buf_append_json(b, spec->obj);
	int r = jp_buf_append(b, "{", 1);
	size_t i = 0;
	for (void *it = json_object_iter(spec->obj); r == 0 && it != NULL; it = json_object_iter_next(spec->obj, it)) {
		const char *key = json_object_iter_key(it);
		size_t klen = json_object_iter_key_len(it);
		r = member_key(b, i++ == 0, key, klen);
		if (r == 0)
			r = klen == 3 && memcmp(key, "env", 3) == 0 ? jp_buf_append(b, spec->env_text, spec->env_len)
								    : jp_buf_append_json(b, json_object_iter_value(it));
	}
	return r != 0 ? r : jp_buf_append(b, "}", 1);
}

/* jc_spec_text: see internal.h. */
const struct jc_spec_text *jc_spec_text(const struct jsched_spec *spec)
{
	struct jsched_spec *s = (struct jsched_spec *)(uintptr_t)spec; /* a cache of its text */
	struct jc_spec_text *t = atomic_load_explicit(&s->text, memory_order_acquire), *none = NULL;
	if (t != NULL)
		return t;
	/* jansson's bytes (jp_buf_append_json), without json_dumps: 117,000 instructions of
	 * every `jsched submit` of a command, for its environment. */
	struct jp_buf b = { 0 };
	if (spec_text(spec, &b) < 0 || (t = malloc(sizeof *t + b.len + 1)) == NULL) {
		jp_buf_free(&b);
		return NULL;
	}
	t->len = b.len;
	memcpy(t->s, b.data, b.len);
	t->s[b.len] = '\0';
	jp_buf_free(&b);
	/* Two threads that write it at once (not allowed, but harmless): the first wins. */
	if (!atomic_compare_exchange_strong_explicit(&s->text, &none, t, memory_order_acq_rel, memory_order_acquire)) {
		free(t);
		t = none;
	}
	return t;
}

/* Set member key to v (stolen); JSCHED_EINVAL if v is NULL (json_string refuses bad UTF-8). */
static int set(struct jsched_spec *spec, const char *key, json_t *v)
{
	if (v == NULL)
		return JSCHED_EINVAL;
	return json_object_set_new(mut(spec), key, v) == 0 ? 0 : JSCHED_ENOMEM;
}

static bool is_exec(const struct jsched_spec *spec)
{
	const char *kind = json_string_value(json_object_get(spec->obj, "kind")); /* const */
	return kind != NULL && strcmp(kind, "exec") == 0;
}

/* jsched_spec_set_name: see jsched.h. */
int jsched_spec_set_name(struct jsched_spec *spec, const char *name)
{
	if (spec == NULL || name == NULL)
		return JSCHED_EINVAL;
	return set(spec, "name", json_string(name));
}

/* jsched_spec_set_key: see jsched.h. */
int jsched_spec_set_key(struct jsched_spec *spec, const char *key)
{
	size_t n = key ? strlen(key) : 0;

	if (spec == NULL || n == 0 || n > 128)
		return JSCHED_EINVAL;
	return set(spec, "key", json_string(key));
}

/* jsched_spec_set_array: see jsched.h. */
int jsched_spec_set_array(struct jsched_spec *spec, const char *indices)
{
	struct jp_array a;
	int r;
	if (spec == NULL || indices == NULL || strlen(indices) > 1024 ||
	    jp_array_parse(indices, UINT32_MAX, &a, "array", NULL) < 0)
		return JSCHED_EINVAL;
	jp_array_clear(&a);
	r = set(spec, "array", json_string(indices));
	return r;
}

/* set_flag: member name true, or absent (its default, false). */
static int set_flag(struct jsched_spec *spec, const char *name, bool on)
{
	if (spec == NULL)
		return JSCHED_EINVAL;
	if (!on) {
		json_object_del(mut(spec), name);
		return 0;
	}
	return set(spec, name, json_true());
}

/* jsched_spec_set_array_replace: see jsched.h. */
int jsched_spec_set_array_replace(struct jsched_spec *spec, bool replace)
{
	return set_flag(spec, "array_replace", replace);
}

/* jsched_spec_set_on_exit: see jsched.h. */
int jsched_spec_set_on_exit(struct jsched_spec *spec, const char *command)
{
	if (spec == NULL || (command != NULL && (command[0] == '\0' || strlen(command) > JP_ON_EXIT_MAX)))
		return JSCHED_EINVAL;
	if (command == NULL) {
		json_object_del(mut(spec), "on_exit");
		return 0;
	}
	return set(spec, "on_exit", json_string(command));
}

/* jsched_spec_set_notify: see jsched.h. */
int jsched_spec_set_notify(struct jsched_spec *spec, bool notify)
{
	return set_flag(spec, "notify", notify);
}

/* jsched_spec_set_hook_timeout: see jsched.h. */
int jsched_spec_set_hook_timeout(struct jsched_spec *spec, int64_t ms)
{
	if (spec == NULL || ms < 1 || ms > JP_HOOK_TIMEOUT_MAX_MS)
		return JSCHED_EINVAL;
	return set(spec, "hook_timeout_ms", json_integer((json_int_t)ms));
}

/* jsched_spec_set_ref: see jsched.h. */
int jsched_spec_set_ref(struct jsched_spec *spec, const char *ref)
{
	if (spec == NULL || ref == NULL || ref[0] == '\0')
		return JSCHED_EINVAL;
	return set(spec, "ref", json_string(ref));
}

/* jsched_spec_set_priority: see jsched.h. */
int jsched_spec_set_priority(struct jsched_spec *spec, enum jsched_priority prio)
{
	static const char *const names[] = { "low", "normal", "high", "critical" };
	if (spec == NULL || (unsigned)prio > JSCHED_PRIORITY_CRITICAL)
		return JSCHED_EINVAL;
	return set(spec, "priority", json_string(names[prio]));
}

static int set_deadline(struct jsched_spec *spec, const char *key, const char *other, int64_t ms)
{
	if (spec == NULL || ms < 0)
		return JSCHED_EINVAL;
	int r = set(spec, key, json_integer(ms));
	if (r == 0)
		json_object_del(mut(spec), other);
	return r;
}

/* jsched_spec_set_deadline_at: see jsched.h. */
int jsched_spec_set_deadline_at(struct jsched_spec *spec, int64_t at_ms)
{
	return set_deadline(spec, "deadline_at_ms", "deadline_in_ms", at_ms);
}

/* jsched_spec_set_deadline_in: see jsched.h. */
int jsched_spec_set_deadline_in(struct jsched_spec *spec, int64_t in_ms)
{
	return set_deadline(spec, "deadline_in_ms", "deadline_at_ms", in_ms);
}

/* jsched_spec_set_not_before: see jsched.h. */
int jsched_spec_set_not_before(struct jsched_spec *spec, int64_t at_ms)
{
	if (spec == NULL || at_ms < 0 || at_ms > JP_MAX_INT)
		return JSCHED_EINVAL;
	if (at_ms == 0) {
		json_object_del(mut(spec), "not_before");
		return 0;
	}
	return set(spec, "not_before", json_integer(at_ms));
}

/* jsched_spec_set_retry: see jsched.h. */
int jsched_spec_set_retry(struct jsched_spec *spec, uint32_t max_attempts, int64_t backoff_ms,
			  double factor, int64_t max_backoff_ms, unsigned on, const int *exit_codes,
			  size_t n_codes)
{
	if (spec == NULL || max_attempts < 1 || max_attempts > JP_RETRY_ATTEMPTS_MAX || backoff_ms < 0 ||
	    backoff_ms > JP_MAX_INT || !(factor >= 1 && factor <= JP_RETRY_FACTOR_MAX) || max_backoff_ms < 0 ||
	    max_backoff_ms > JP_MAX_INT || on == 0 || on > 15 || (n_codes && exit_codes == NULL) ||
	    ((on & JSCHED_RETRY_ON_CODES) != 0) != (n_codes > 0))
		return JSCHED_EINVAL;
	if (max_attempts == 1) {
		json_object_del(mut(spec), "retry");
		return 0;
	}
	json_t *r = json_pack("{s:I, s:I, s:f, s:I, s:[]}", "max_attempts", (json_int_t)max_attempts,
			      "backoff_ms", (json_int_t)backoff_ms, "factor", factor, "max_backoff_ms",
			      (json_int_t)max_backoff_ms, "on");
	json_t *a = json_object_get(r, "on");
	if (r == NULL)
		return JSCHED_ENOMEM;
	static const char *const words[] = { "failure", "timeout", "signal" };
	for (unsigned b = 0; b < 3; b++)
		if ((on & (1u << b)) && json_array_append_new(a, json_string(words[b])) < 0)
			goto nomem;
	for (size_t i = 0; i < n_codes; i++) {
		if (exit_codes[i] < 1 || exit_codes[i] > 255) {
			json_decref(r);
			return JSCHED_EINVAL;
		}
		if (json_array_append_new(a, json_integer(exit_codes[i])) < 0)
			goto nomem;
	}
	return set(spec, "retry", r);
nomem:
	json_decref(r);
	return JSCHED_ENOMEM;
}

/* jsched_spec_set_cost: see jsched.h. */
int jsched_spec_set_cost(struct jsched_spec *spec, uint32_t cost)
{
	if (spec == NULL || cost < 1 || cost > 1000000)
		return JSCHED_EINVAL;
	return set(spec, "cost", json_integer(cost));
}

/* jsched_spec_set_env: see jsched.h. */
int jsched_spec_set_env(struct jsched_spec *spec, const char *const *env)
{
	if (spec == NULL || !is_exec(spec))
		return JSCHED_EINVAL;
	json_t *obj = json_object();
	if (obj == NULL)
		return JSCHED_ENOMEM;
	for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		json_t *v = eq != NULL && eq != env[i] ? json_string(eq + 1) : NULL;
		if (v == NULL || json_object_setn_new(obj, env[i], (size_t)(eq - env[i]), v) < 0) {
			json_decref(obj);
			return JSCHED_EINVAL; /* no '=', empty name, or not UTF-8 */
		}
	}
	free(spec->env_text); /* inherit's, replaced whole */
	spec->env_text = NULL;
	return set(spec, "env", obj);
}

/* jsched_spec_setenv: see jsched.h. */
int jsched_spec_setenv(struct jsched_spec *spec, const char *name, const char *value)
{
	if (spec == NULL || !is_exec(spec) || name == NULL || name[0] == '\0' || strchr(name, '=') != NULL ||
	    value == NULL)
		return JSCHED_EINVAL;
	if (jc_spec_obj(spec) == NULL) /* inherit's environment, as a tree to change */
		return JSCHED_ENOMEM;
	json_t *env = json_object_get(mut(spec), "env");
	if (env == NULL) {
		env = json_object();
		if (set(spec, "env", env) < 0)
			return JSCHED_ENOMEM;
	}
	if (!json_is_object(env))
		return JSCHED_EINVAL;
	json_t *v = json_string(value);
	if (v == NULL)
		return JSCHED_EINVAL;
	return json_object_set_new(env, name, v) == 0 ? 0 : JSCHED_EINVAL;
}

/* env_tree: this process's environment as an object (new reference, or NULL): a variable
 * that is not UTF-8 (JSON cannot carry it) is left out, not an error: a shell's
 * environment is whatever it is; of a name given twice the last value counts, in the
 * first one's place. */
static json_t *env_tree(void)
{
	json_t *env = json_object();
	for (char **e = environ; env != NULL && e != NULL && *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		if (eq == NULL || eq == *e)
			continue;
		json_t *v = json_string(eq + 1);
		if (v != NULL)
			json_object_setn_new(env, *e, (size_t)(eq - *e), v);
	}
	return env;
}

/* utf8: whether the n bytes at s are well-formed UTF-8 (as jansson requires of a string;
 * the byte after them is not a continuation byte: '=' or the NUL). */
static bool utf8(const char *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if ((k = (unsigned char)s[i] < 0x80 ? 1 : jp_utf8_seq(s + i)) == 0 || k > n - i)
			return false;
	return true;
}

/* env_text: env_tree's object written straight as its text into b, without the tree
 * (building it, writing it out and freeing it was 90K instructions of a 1.4 KB
 * environment, a third of `jsched submit`'s own).  0; 1 when a name is given twice
 * (env_tree decides then, rather than this repeating jansson's rule); JSCHED_ENOMEM. */
static int env_text(struct jp_buf *b)
{
	size_t n = 0, kept = 0;
	for (char **e = environ; e != NULL && *e != NULL; e++)
		n++;
	struct jc_text *names = malloc((n > 0 ? n : 1) * sizeof *names);
	int r = names != NULL ? jp_buf_append(b, "{", 1) : JSCHED_ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *s = environ[i], *eq = strchr(s, '=');
		if (eq == NULL || eq == s)
			continue;
		size_t nl = (size_t)(eq - s), vl = strlen(eq + 1);
		if (!utf8(s, nl) || !utf8(eq + 1, vl))
			continue;
		for (size_t j = 0; j < kept; j++)
			if (names[j].len == nl && memcmp(names[j].p, s, nl) == 0)
				r = 1;
		names[kept++] = (struct jc_text){ s, nl };
		if (r == 0)
			r = member_key(b, kept == 1, s, nl);
		if (r == 0)
			r = jp_buf_append_json_string(b, eq + 1, vl);
	}
	free(names);
	return r != 0 ? r : jp_buf_append(b, "}", 1);
}

/* jsched_spec_inherit: see jsched.h.  The environment is kept as text (env_text) in the
 * spec, its member a null in the tree, until the tree is wanted (jc_spec_obj). */
int jsched_spec_inherit(struct jsched_spec *spec)
{
	if (spec == NULL || !is_exec(spec))
		return JSCHED_EINVAL;
	/* Into a buffer of ours first: getcwd's own allocation is libc's, which the
	 * allocation-failure test cannot see. */
	char here[4096], *cwd = getcwd(here, sizeof here), *long_cwd = NULL;
	if (cwd == NULL && errno == ERANGE)
		cwd = long_cwd = getcwd(NULL, 0);
	if (cwd == NULL)
		return JSCHED_EIO;
	struct jp_buf b = { 0 };
	int r = env_text(&b);
	free(spec->env_text);
	spec->env_text = NULL;
	if (r == 0 && (r = set(spec, "env", json_null())) == 0) {
		spec->env_text = (char *)b.data; /* owned by the spec now */
		spec->env_len = b.len;
		b = (struct jp_buf){ 0 };
	} else if (r == 1) {
		r = set(spec, "env", env_tree());
		if (r == JSCHED_EINVAL)
			r = JSCHED_ENOMEM; /* env_tree's NULL: only memory */
	}
	jp_buf_free(&b);
	if (r == 0)
		r = set(spec, "cwd", json_string(cwd));
	free(long_cwd);
	return r;
}

/* jsched_spec_set_cwd: see jsched.h. */
int jsched_spec_set_cwd(struct jsched_spec *spec, const char *cwd)
{
	if (spec == NULL || !is_exec(spec) || cwd == NULL || cwd[0] != '/')
		return JSCHED_EINVAL;
	return set(spec, "cwd", json_string(cwd));
}

/* jsched_spec_set_stdin: see jsched.h. */
int jsched_spec_set_stdin(struct jsched_spec *spec, const void *data, size_t len)
{
	if (spec == NULL || !is_exec(spec) || (data == NULL && len > 0))
		return JSCHED_EINVAL;
	if (len == 0) {
		json_object_del(mut(spec), "stdin");
		return 0;
	}
	json_t *b64 = jp_base64_json(data, len);
	if (b64 == NULL)
		return JSCHED_ENOMEM;
	return set(spec, "stdin", b64);
}

/* jsched_spec_set_timeout: see jsched.h. */
int jsched_spec_set_timeout(struct jsched_spec *spec, int64_t timeout_ms)
{
	if (spec == NULL || !is_exec(spec) || timeout_ms < 1)
		return JSCHED_EINVAL;
	return set(spec, "timeout_ms", json_integer(timeout_ms));
}

/* jsched_spec_set_resources: see jsched.h. */
int jsched_spec_set_resources(struct jsched_spec *spec, uint64_t memory_bytes, uint64_t pids,
			      double cpus)
{
	json_t *r;

	if (spec == NULL || !is_exec(spec) || (memory_bytes && memory_bytes < (1u << 20)) ||
	    pids > 4194304 || !(cpus == 0 || (cpus >= 0.001 && cpus <= 4096)))
		return JSCHED_EINVAL;
	if (!memory_bytes && !pids && cpus == 0) {
		json_object_del(mut(spec), "resources");
		return 0;
	}
	if ((r = json_object()) == NULL)
		return JSCHED_ENOMEM;
	if ((memory_bytes && json_object_set_new(r, "memory", json_integer((json_int_t)memory_bytes)) < 0) ||
	    (pids && json_object_set_new(r, "pids", json_integer((json_int_t)pids)) < 0) ||
	    (cpus > 0 && json_object_set_new(r, "cpus", json_real(cpus)) < 0)) {
		json_decref(r);
		return JSCHED_ENOMEM;
	}
	return set(spec, "resources", r);
}

/* jsched_spec_set_need: see jsched.h. */
int jsched_spec_set_need(struct jsched_spec *spec, const char *name, uint32_t count)
{
	json_t *n;

	if (spec == NULL || !is_exec(spec) || !jp_need_name_ok(name) || count > JP_NEED_COUNT_MAX)
		return JSCHED_EINVAL;
	n = json_object_get(mut(spec), "needs");
	if (count == 0) {
		if (n != NULL) {
			json_object_del(n, name);
			if (json_object_size(n) == 0)
				json_object_del(mut(spec), "needs");
		}
		return 0;
	}
	if (n == NULL) {
		if ((n = json_object()) == NULL || set(spec, "needs", n) < 0)
			return JSCHED_ENOMEM;
	}
	if (json_object_get(n, name) == NULL && json_object_size(n) >= JP_NEEDS_MAX)
		return JSCHED_EINVAL;
	return json_object_set_new(n, name, json_integer(count)) < 0 ? JSCHED_ENOMEM : 0;
}

/* jsched_spec_set_backend: see jsched.h. */
int jsched_spec_set_backend(struct jsched_spec *spec, const char *backend)
{
	if (spec == NULL || !is_exec(spec) || backend == NULL ||
	    (strcmp(backend, "local") != 0 && strcmp(backend, "slurm") != 0 && strcmp(backend, "auto") != 0))
		return JSCHED_EINVAL;
	return set(spec, "backend", json_string(backend));
}

static int add_dep(struct jsched_spec *spec, enum jsched_gate gate, json_t *dep, enum jsched_dep_on on)
{
	static const char *const ons[] = { "success", "failure", "any" };
	if (dep == NULL)
		return JSCHED_EINVAL;
	if (spec == NULL || (unsigned)gate > JSCHED_GATE_ANY_OF || (unsigned)on > JSCHED_DEP_ANY) {
		json_decref(dep);
		return JSCHED_EINVAL;
	}
	/* The default outcome is left implicit, as a person would write it. */
	if (on != JSCHED_DEP_SUCCESS && json_object_set_new(dep, "on", json_string(ons[on])) < 0) {
		json_decref(dep);
		return JSCHED_ENOMEM;
	}
	const char *key = gate == JSCHED_GATE_AFTER ? "after" : "any_of";
	json_t *arr = json_object_get(mut(spec), key);
	if (arr == NULL) {
		arr = json_array();
		if (set(spec, key, arr) < 0) {
			json_decref(dep);
			return JSCHED_ENOMEM;
		}
	}
	if (!json_is_array(arr)) {
		json_decref(dep);
		return JSCHED_EINVAL;
	}
	return json_array_append_new(arr, dep) == 0 ? 0 : JSCHED_ENOMEM;
}

/* jsched_spec_add_dep: see jsched.h. */
int jsched_spec_add_dep(struct jsched_spec *spec, enum jsched_gate gate, uint64_t job_id, enum jsched_dep_on on)
{
	if (job_id == 0 || job_id > (uint64_t)JP_MAX_INT)
		return JSCHED_EINVAL;
	return add_dep(spec, gate, json_pack("{s:I}", "job", (json_int_t)job_id), on);
}

/* jsched_spec_add_dep_ref: see jsched.h. */
int jsched_spec_add_dep_ref(struct jsched_spec *spec, enum jsched_gate gate, const char *ref, enum jsched_dep_on on)
{
	if (ref == NULL || ref[0] == '\0')
		return JSCHED_EINVAL;
	return add_dep(spec, gate, json_pack("{s:s}", "ref", ref), on);
}
