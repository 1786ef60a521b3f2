/* proto/jobspec.c: the job spec (PROTOCOL.md section 4), parsed strictly and built back.
 *
 * Strict means: every member is known, of its type, within its limit, and allowed for the
 * spec's kind; the first fault is reported with the member's full path
 * ("jobs[3].env.HOME"), because a typo must never silently change a job.  The parsed
 * struct borrows its strings from the JSON object (no copy of argv or env on the daemon's
 * admission path); only the arrays of pointers and the decoded stdin are allocated.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum scope { ANY, EXEC, CALL };

enum member {
	M_KIND, M_NAME, M_REF, M_PRIORITY, M_DEADLINE_AT, M_DEADLINE_IN, M_AFTER, M_ANY_OF,
	M_COST, M_ARGV, M_ENV, M_CWD, M_STDIN, M_TIMEOUT, M_FN, M_ARGS, M_RESOURCES, M_BACKEND,
	M_KEY, M_ARRAY, M_ARRAY_REPLACE, M_NEEDS, M_ON_EXIT, M_NOTIFY, M_HOOK_TIMEOUT,
	M_NOT_BEFORE, M_RETRY, M_COUNT
};

/* Indexed by enum member. */
static const struct {
	const char *name;
	enum scope scope;
} members[M_COUNT] = {
	{"kind", ANY},	   {"name", ANY},	    {"ref", ANY},     {"priority", ANY},
	{"deadline_at_ms", ANY}, {"deadline_in_ms", ANY}, {"after", ANY},   {"any_of", ANY},
	{"cost", ANY},	   {"argv", EXEC},	    {"env", EXEC},    {"cwd", EXEC},
	{"stdin", EXEC},   {"timeout_ms", EXEC},     {"fn", CALL},     {"args", CALL},
	{"resources", EXEC},
	{"backend", EXEC},
	{"key", ANY},
	{"array", ANY},
	{"array_replace", EXEC},
	{"needs", EXEC},
	{"on_exit", ANY},
	{"notify", ANY},
	{"hook_timeout_ms", ANY},
	{"not_before", ANY},
	{"retry", ANY},
};

/* lookup: the member named key, or M_COUNT.  The first byte is compared inline, so most
 * names are passed over without calling strcmp (the parser's hot spot, measured). */
static enum member lookup(const char *key)
{
	for (int m = 0; m < M_COUNT; m++)
		if (members[m].name[0] == key[0] && strcmp(members[m].name, key) == 0)
			return (enum member)m;
	return M_COUNT;
}

/* A parse in progress: where errors go and how to name the member at fault. */
struct ctx {
	const char *path;	/* the spec's own path, "" at top level ... */
	long index;		/* ... followed by [index] if index >= 0 */
	const struct jp_limits *lim;
	struct jp_err *err;
	char field[200];
};

/* A member's place in the spec: key, then [i] if i >= 0, then .sub if sub is not NULL
 * ("after" 2 "on" is after[2].on; "env" -1 "HOME" is env.HOME).  Kept in pieces and
 * formatted only on the error path, so a spec that parses costs no snprintf. */
struct place {
	const char *key;
	long i;
	const char *sub;
};

/* at: the full path of p, in c->field. */
static const char *at(struct ctx *c, struct place p)
{
	char base[64], idx[24] = "";
	const char *dot;

	if (c->index >= 0)
		snprintf(base, sizeof(base), "%s[%ld]", c->path, c->index);
	else
		snprintf(base, sizeof(base), "%s", c->path);
	if (p.i >= 0)
		snprintf(idx, sizeof(idx), "[%ld]", p.i);
	dot = *base && *p.key ? "." : "";
	snprintf(c->field, sizeof(c->field), "%s%s%s%s%s%.*s", base, dot, p.key, idx,
		 p.sub ? "." : "", p.sub ? jp_utf8_cut(p.sub, 64) : 0, p.sub ? p.sub : "");
	return c->field;
}

#define PLACE(key) ((struct place){(key), -1, NULL})

static int bad(struct ctx *c, struct place p, const char *what)
{
	const char *f = at(c, p);

	return jp_err_set(c->err, JSCHED_EBAD_REQUEST, f, "%s %s", f, what);
}

static int over(struct ctx *c, const char *key, size_t n, uint32_t limit)
{
	const char *f = at(c, PLACE(key));

	return jp_err_set(c->err, JSCHED_ELIMIT_EXCEEDED, f, "%s has %zu; the limit is %u", f, n,
			  (unsigned)limit);
}

/* str: v as a NUL-free string of min..max bytes, else an error for p. */
static int str(struct ctx *c, const json_t *v, struct place p, size_t min, size_t max,
	       const char **out)
{
	size_t len;

	if (!json_is_string(v))
		return bad(c, p, "must be a string");
	len = json_string_length(v);
	if (len < min || len > max || strlen(json_string_value(v)) != len) {
		char what[80];

		snprintf(what, sizeof(what), "must be %zu to %zu bytes, without NUL", min, max);
		return bad(c, p, what);
	}
	*out = json_string_value(v);
	return 0;
}

static int integer(struct ctx *c, const json_t *v, struct place p, int64_t min, int64_t max,
		   int64_t *out)
{
	char what[96];

	if (json_is_integer(v) && json_integer_value(v) >= min && json_integer_value(v) <= max) {
		*out = (int64_t)json_integer_value(v);
		return 0;
	}
	snprintf(what, sizeof(what), "must be an integer from %lld to %lld", (long long)min,
		 (long long)max);
	return bad(c, p, what);
}

/* jp_size_parse: see jproto.h. */
int jp_size_parse(const json_t *v, uint64_t *out)
{
	const char *s, *end;
	char *endp;
	unsigned long long n;
	unsigned shift = 0;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return -1;
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || !(s = json_string_value(v))[0] || s[0] < '0' || s[0] > '9')
		return -1;
	n = strtoull(s, &endp, 10);
	end = endp;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (shift && *end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || n > (UINT64_MAX >> 24) || (shift && n > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)n << shift;
	return 0;
}

/* resources_of: "resources": {"memory": "2G", "pids": 100, "cpus": 1.5}, each optional. */
static int resources_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	const char *k;
	json_t *e;

	if (!json_is_object(v))
		return bad(c, PLACE("resources"), "must be an object of memory, pids, cpus");
	json_object_foreach(unconst(v), k, e) {
		if (strcmp(k, "memory") == 0) {
			if (jp_size_parse(e, &s->res_memory) < 0 || s->res_memory < (1u << 20) ||
			    s->res_memory > (1ull << 50))
				return bad(c, ((struct place){"resources", -1, "memory"}),
					   "must be a size from 1M to 1P: bytes, or a number with K, M, G or T");
		} else if (strcmp(k, "pids") == 0) {
			int64_t n;
			int rc = integer(c, e, ((struct place){"resources", -1, "pids"}), 1, 4194304, &n);

			if (rc < 0)
				return rc;
			s->res_pids = (uint64_t)n;
		} else if (strcmp(k, "cpus") == 0) {
			double d = json_is_number(e) ? json_number_value(e) : -1;

			if (d < 0.001 || d > 4096)
				return bad(c, ((struct place){"resources", -1, "cpus"}),
					   "must be a number from 0.001 to 4096");
			s->res_cpu_milli = (uint32_t)(d * 1000 + 0.5);
		} else {
			return bad(c, ((struct place){"resources", -1, k}), "is not a resource (memory, pids, cpus)");
		}
	}
	return 0;
}

bool jp_need_name_ok(const char *name)
{
	size_t n = 0;

	if (!name || name[0] < 'a' || name[0] > 'z')
		return false;
	for (; name[n]; n++)
		if (!((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= '0' && name[n] <= '9') ||
		      name[n] == '_'))
			return false;
	return n <= JP_NEED_NAME_MAX;
}

/* needs_of: "needs": {"gpu": 1, "licence_x": 2}: at most JP_NEEDS_MAX names, each
 * 1..JP_NEED_COUNT_MAX units.  Whether the daemon has them is the daemon's to judge. */
static int needs_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	const char *k;
	json_t *e;

	if (!json_is_object(v))
		return bad(c, PLACE("needs"), "must be an object of resource names and counts");
	if (json_object_size(v) > JP_NEEDS_MAX)
		return over(c, "needs", json_object_size(v), JP_NEEDS_MAX);
	s->n_needs = 0;
	json_object_foreach(unconst(v), k, e) {
		struct place p = {"needs", -1, k};
		int64_t n;
		int rc;

		if (!jp_need_name_ok(k))
			return bad(c, p, "is not a resource name (a-z, 0-9, _, a letter first, at most 31 bytes)");
		if ((rc = integer(c, e, p, 1, JP_NEED_COUNT_MAX, &n)) < 0)
			return rc;
		s->needs[s->n_needs++] = (struct jp_need){k, (uint32_t)n};
	}
	return 0;
}

/* retry_of: "retry": {"max_attempts": N, "backoff_ms", "factor", "max_backoff_ms",
 * "on": ["failure" | "timeout" | "signal" | exit codes]}; max_attempts required. */
static int retry_of(struct ctx *c, const json_t *v, struct jp_retry *r)
{
	const char *k;
	json_t *e;
	int64_t n;
	int rc;

	if (!json_is_object(v))
		return bad(c, PLACE("retry"), "must be an object: {\"max_attempts\": N, \"backoff_ms\", "
			   "\"factor\", \"max_backoff_ms\", \"on\"}");
	*r = (struct jp_retry){.backoff_ms = 1000, .factor = 2, .max_backoff_ms = 3600000,
			       .on = JP_RETRY_ON_FAILURE};
	json_object_foreach(unconst(v), k, e) {
		struct place p = {"retry", -1, k};

		if (strcmp(k, "max_attempts") == 0) {
			if ((rc = integer(c, e, p, 1, JP_RETRY_ATTEMPTS_MAX, &n)) < 0)
				return rc;
			r->max_attempts = (uint32_t)n;
		} else if (strcmp(k, "backoff_ms") == 0) {
			if ((rc = integer(c, e, p, 0, JP_MAX_INT, &r->backoff_ms)) < 0)
				return rc;
		} else if (strcmp(k, "max_backoff_ms") == 0) {
			if ((rc = integer(c, e, p, 0, JP_MAX_INT, &r->max_backoff_ms)) < 0)
				return rc;
		} else if (strcmp(k, "factor") == 0) {
			if (!json_is_number(e) || !(json_number_value(e) >= 1) ||
			    json_number_value(e) > JP_RETRY_FACTOR_MAX)
				return bad(c, p, "must be a number from 1 to 1000");
			r->factor = json_number_value(e);
		} else if (strcmp(k, "on") == 0) {
			size_t i;
			json_t *w;

			if (!json_is_array(e) || json_array_size(e) == 0)
				return bad(c, p, "must be a non-empty array of \"failure\", \"timeout\", "
					   "\"signal\" and exit codes 1 to 255");
			r->on = 0;
			json_array_foreach(e, i, w) {
				struct place q = {"retry.on", (long)i, NULL};

				if (json_is_integer(w) && json_integer_value(w) >= 1 &&
				    json_integer_value(w) <= 255) {
					unsigned code = (unsigned)json_integer_value(w);

					r->on |= JP_RETRY_ON_CODES;
					r->codes[code / 8] |= (uint8_t)(1u << (code % 8));
				} else if (json_is_string(w) && strcmp(json_string_value(w), "failure") == 0) {
					r->on |= JP_RETRY_ON_FAILURE;
				} else if (json_is_string(w) && strcmp(json_string_value(w), "timeout") == 0) {
					r->on |= JP_RETRY_ON_TIMEOUT;
				} else if (json_is_string(w) && strcmp(json_string_value(w), "signal") == 0) {
					r->on |= JP_RETRY_ON_SIGNAL;
				} else {
					return bad(c, q, "must be \"failure\", \"timeout\", \"signal\" or an "
						   "exit code from 1 to 255");
				}
			}
		} else {
			return bad(c, p, "is not a member of retry (max_attempts, backoff_ms, factor, "
				   "max_backoff_ms, on)");
		}
	}
	if (!r->max_attempts)
		return bad(c, ((struct place){"retry", -1, "max_attempts"}), "is required");
	return 0;
}

/* retry_json: a spec's retry as the spec writes it (new reference). */
static json_t *retry_json(const struct jp_retry *r)
{
	json_t *o = json_pack("{s:I, s:I, s:f, s:I}", "max_attempts", (json_int_t)r->max_attempts,
			      "backoff_ms", (json_int_t)r->backoff_ms, "factor", r->factor,
			      "max_backoff_ms", (json_int_t)r->max_backoff_ms);
	json_t *on = json_array();

	if (!o || !on || json_object_set_new(o, "on", on) < 0) {
		json_decref(o);
		return NULL;
	}
	if (r->on & JP_RETRY_ON_FAILURE)
		json_array_append_new(on, json_string("failure"));
	if (r->on & JP_RETRY_ON_TIMEOUT)
		json_array_append_new(on, json_string("timeout"));
	if (r->on & JP_RETRY_ON_SIGNAL)
		json_array_append_new(on, json_string("signal"));
	for (unsigned code = 1; code < 256 && (r->on & JP_RETRY_ON_CODES); code++)
		if (r->codes[code / 8] & (1u << (code % 8)))
			json_array_append_new(on, json_integer(code));
	return o;
}

uint64_t jp_retry_backoff_ms(const struct jp_retry *r, uint32_t failed)
{
	double d = r->backoff_ms > 0 ? (double)r->backoff_ms : 0;
	double cap = r->max_backoff_ms > 0 ? (double)r->max_backoff_ms : 0;

	/* Multiplied step by step and stopped at the cap: never an overflow, and no pow()
	 * whose result could be inf or NaN for a large exponent. */
	for (uint32_t i = 1; i < failed && d < cap; i++)
		d *= r->factor;
	if (d >= cap)
		return (uint64_t)cap;
	return (uint64_t)d;
}

bool jp_retry_wanted(const struct jp_retry *r, int cause, int exit_code)
{
	switch (cause) {
	case JP_CAUSE_EXIT:
		if ((r->on & JP_RETRY_ON_CODES) && exit_code >= 1 && exit_code <= 255 &&
		    (r->codes[exit_code / 8] & (1u << (exit_code % 8))))
			return true;
		break;
	case JP_CAUSE_TIMEOUT:
		if (r->on & JP_RETRY_ON_TIMEOUT)
			return true;
		break;
	case JP_CAUSE_SIGNAL:
	case JP_CAUSE_MEMORY:
		if (r->on & JP_RETRY_ON_SIGNAL)
			return true;
		break;
	case JP_CAUSE_SPAWN:
	case JP_CAUSE_HANDLER:
	case JP_CAUSE_DAEMON_RESTART:
		break;
	default:
		return false; /* not a failure: cancel, deadline, dependency, overflow, shutdown */
	}
	return (r->on & JP_RETRY_ON_FAILURE) != 0;
}

/* dep: one element of an `after` or `any_of` array (key) at index i. */
static int dep(struct ctx *c, const json_t *e, const char *key, long i, struct jp_dep *d)
{
	const json_t *job, *ref, *on, *m;
	const char *k;
	int rc, o;

	d->on = JP_ON_SUCCESS;
	if (json_is_integer(e) && json_integer_value(e) >= 1 && json_integer_value(e) <= JP_MAX_INT) {
		d->job = (int64_t)json_integer_value(e);	/* shorthand: an id */
		return 0;
	}
	if (json_is_string(e))	/* shorthand: a ref */
		return str(c, e, (struct place){key, i, NULL}, 1, JP_REF_MAX, &d->ref);
	if (!json_is_object(e))
		return bad(c, (struct place){key, i, NULL},
			   "must be a job id, a ref, or {\"job\" or \"ref\", \"on\"}");
	json_object_foreach(unconst(e), k, m) {
		if (strcmp(k, "job") && strcmp(k, "ref") && strcmp(k, "on"))
			return bad(c, (struct place){key, i, k}, "is not a member of a dependency");
	}
	job = json_object_get(e, "job");
	ref = json_object_get(e, "ref");
	on = json_object_get(e, "on");
	if (!job == !ref)
		return bad(c, (struct place){key, i, NULL}, "must name exactly one of job and ref");
	if (job)
		rc = integer(c, job, (struct place){key, i, "job"}, 1, JP_MAX_INT, &d->job);
	else
		rc = str(c, ref, (struct place){key, i, "ref"}, 1, JP_REF_MAX, &d->ref);
	if (rc < 0)
		return rc;
	if (on) {
		o = json_is_string(on) ? jp_dep_on_from_name(json_string_value(on)) : -1;
		if (o < 0)
			return bad(c, (struct place){key, i, "on"},
				   "must be \"success\", \"failure\" or \"any\"");
		d->on = (enum jp_dep_on)o;
	}
	return 0;
}

/* deps: an `after` or `any_of` array into *out / *n. */
static int deps(struct ctx *c, const json_t *v, const char *key, struct jp_dep **out, size_t *n)
{
	const json_t *e;
	size_t i;
	int rc;

	if (!json_is_array(v))
		return bad(c, PLACE(key), "must be an array of dependencies");
	if (json_array_size(v) > c->lim->deps_per_job)
		return over(c, key, json_array_size(v), c->lim->deps_per_job);
	if (json_array_size(v) == 0)
		return 0;
	*out = calloc(json_array_size(v), sizeof(**out));
	if (!*out)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	*n = json_array_size(v);
	json_array_foreach(v, i, e) {
		rc = dep(c, e, key, (long)i, &(*out)[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int argv_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	const json_t *e;
	size_t i;
	int rc;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return bad(c, PLACE("argv"), "must be a non-empty array of strings");
	if (json_array_size(v) > c->lim->argv_items)
		return over(c, "argv", json_array_size(v), c->lim->argv_items);
	s->argv = calloc(json_array_size(v) + 1, sizeof(*s->argv));
	if (!s->argv)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	json_array_foreach(v, i, e) {
		rc = str(c, e, (struct place){"argv", (long)i, NULL}, i == 0 ? 1 : 0, SIZE_MAX,
			 &s->argv[i]);
		if (rc < 0)
			return rc;
	}
	s->argc = json_array_size(v);
	return 0;
}

static int env_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	const char *k;
	const json_t *e;
	size_t i = 0;
	int rc;

	if (!json_is_object(v))
		return bad(c, PLACE("env"), "must be an object of strings");
	if (json_object_size(v) > c->lim->env_items)
		return over(c, "env", json_object_size(v), c->lim->env_items);
	if (json_object_size(v) == 0)
		return 0;
	s->env = calloc(json_object_size(v), sizeof(*s->env));
	if (!s->env)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	json_object_foreach(unconst(v), k, e) {
		struct place p = {"env", -1, k};

		if (*k == '\0' || strchr(k, '='))
			return bad(c, p, "is not a variable name (empty, or contains '=')");
		rc = str(c, e, p, 0, SIZE_MAX, &s->env[i].value);
		if (rc < 0)
			return rc;
		s->env[i++].name = k;
	}
	s->n_env = i;
	return 0;
}

static int stdin_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	int rc;

	if (!json_is_string(v))
		return bad(c, PLACE("stdin"), "must be a base64 string");
	rc = jp_base64_decode(json_string_value(v), json_string_length(v), c->lim->stdin_bytes,
			      &s->stdin_data, &s->stdin_len);
	if (rc == JSCHED_ELIMIT_EXCEEDED)
		return over(c, "stdin", json_string_length(v) / 4 * 3, c->lim->stdin_bytes);
	if (rc == JSCHED_ENOMEM)
		return jp_err_set(c->err, rc, NULL, "out of memory");
	if (rc < 0)
		return bad(c, PLACE("stdin"), "is not base64 (RFC 4648, padded, no whitespace)");
	s->has_stdin = true;
	return 0;
}

/* member: one member of the spec, m naming it. */
static int member(struct ctx *c, enum member m, const json_t *v, struct jp_job_spec *s)
{
	const char *key = members[m].name;
	int64_t n;
	int rc = 0, p;

	switch (m) {
	case M_KIND:
		return 0;	/* read first, by jp_job_spec_parse_at */
	case M_NAME:
		return str(c, v, PLACE(key), 0, JP_NAME_MAX, &s->name);
	case M_REF:
		return str(c, v, PLACE(key), 1, JP_REF_MAX, &s->ref);
	case M_KEY:
		return str(c, v, PLACE(key), 1, JP_KEY_MAX, &s->key);
	case M_PRIORITY:
		p = json_is_string(v) ? jp_priority_from_name(json_string_value(v)) : -1;
		if (p < 0)
			return bad(c, PLACE(key), "must be \"low\", \"normal\", \"high\" or \"critical\"");
		s->priority = (enum jp_priority)p;
		return 0;
	case M_DEADLINE_AT:
	case M_DEADLINE_IN:
		if (s->deadline != JP_DEADLINE_NONE)
			return bad(c, PLACE("deadline_in_ms"),
				   "cannot be given with deadline_at_ms: one deadline per job");
		s->deadline = m == M_DEADLINE_AT ? JP_DEADLINE_AT : JP_DEADLINE_IN;
		return integer(c, v, PLACE(key), 0, JP_MAX_INT, &s->deadline_ms);
	case M_NOT_BEFORE:
		return integer(c, v, PLACE(key), 0, JP_MAX_INT, &s->not_before_ms);
	case M_RETRY:
		return retry_of(c, v, &s->retry);
	case M_AFTER:
		return deps(c, v, key, &s->after, &s->n_after);
	case M_ANY_OF:
		return deps(c, v, key, &s->any_of, &s->n_any_of);
	case M_COST:
		rc = integer(c, v, PLACE(key), 1, JP_COST_MAX, &n);
		s->cost = (uint32_t)n;
		return rc;
	case M_ARGV:
		return argv_of(c, v, s);
	case M_ENV:
		return env_of(c, v, s);
	case M_CWD:
		rc = str(c, v, PLACE(key), 1, SIZE_MAX, &s->cwd);
		if (rc == 0 && s->cwd[0] != '/')
			return bad(c, PLACE(key), "must be an absolute path");
		return rc;
	case M_STDIN:
		return stdin_of(c, v, s);
	case M_TIMEOUT:
		return integer(c, v, PLACE(key), 1, JP_MAX_INT, &s->timeout_ms);
	case M_FN:
		return str(c, v, PLACE(key), 1, JP_NAME_MAX, &s->fn);
	case M_ARGS:
		s->args = unconst(v);
		return 0;
	case M_RESOURCES:
		return resources_of(c, v, s);
	case M_BACKEND:
		if (!json_is_string(v) || (strcmp(json_string_value(v), "local") != 0 &&
					   strcmp(json_string_value(v), "slurm") != 0 &&
					   strcmp(json_string_value(v), "auto") != 0))
			return bad(c, PLACE(key), "must be \"local\", \"slurm\" or \"auto\"");
		s->backend = json_string_value(v);
		return 0;
	case M_ARRAY:
		if ((rc = str(c, v, PLACE(key), 1, 1024, &s->array_text)) < 0)
			return rc;
		return jp_array_parse(s->array_text, c->lim->array_elements, &s->array,
				      at(c, PLACE(key)), c->err);
	case M_ARRAY_REPLACE:
		if (!json_is_boolean(v))
			return bad(c, PLACE(key), "must be true or false");
		s->array_replace = json_is_true(v);
		return 0;
	case M_NEEDS:
		return needs_of(c, v, s);
	case M_ON_EXIT:
		return str(c, v, PLACE(key), 1, JP_ON_EXIT_MAX, &s->on_exit);
	case M_NOTIFY:
		if (!json_is_boolean(v))
			return bad(c, PLACE(key), "must be true or false");
		s->notify = json_is_true(v);
		return 0;
	case M_HOOK_TIMEOUT:
		return integer(c, v, PLACE(key), 1, JP_HOOK_TIMEOUT_MAX_MS, &s->hook_timeout_ms);
	case M_COUNT:
		break;
	}
	return jp_err_set(c->err, JSCHED_EINTERNAL, NULL, "unknown member");
}

void jp_job_spec_init(struct jp_job_spec *s)
{
	*s = (struct jp_job_spec){.kind = JP_KIND_EXEC, .priority = JP_PRIO_NORMAL, .cost = 1,
				  .cwd = "/"};
}

void jp_job_spec_clear(struct jp_job_spec *s)
{
	free(s->after);
	free(s->any_of);
	free(s->argv);
	free(s->env);
	free(s->stdin_data);
	jp_array_clear(&s->array);
	jp_job_spec_init(s);
}

int jp_job_spec_parse(const json_t *obj, const char *path, const struct jp_limits *lim,
		      struct jp_job_spec *out, struct jp_err *err)
{
	return jp_job_spec_parse_at(obj, path, -1, lim, out, err);
}

int jp_job_spec_parse_at(const json_t *obj, const char *path, long index,
			 const struct jp_limits *lim, struct jp_job_spec *out, struct jp_err *err)
{
	struct jp_limits dflt;
	struct ctx c = {.path = path ? path : "", .index = index, .lim = lim, .err = err};
	const json_t *kind, *v;
	const char *key;
	int k, rc;

	jp_job_spec_init(out);
	if (!lim) {
		jp_limits_default(&dflt);
		c.lim = &dflt;
	}
	if (!json_is_object(obj))
		return bad(&c, PLACE(""), "must be a job spec object");
	kind = json_object_get(obj, "kind");
	if (!kind)
		return bad(&c, PLACE("kind"), "is required (\"exec\" or \"call\")");
	k = json_is_string(kind) ? jp_kind_from_name(json_string_value(kind)) : -1;
	if (k < 0)
		return bad(&c, PLACE("kind"), "must be \"exec\" or \"call\"");
	out->kind = (enum jp_kind)k;
	json_object_foreach(unconst(obj), key, v) {
		enum member m = lookup(key);

		if (m == M_COUNT) {
			rc = bad(&c, PLACE(key), "is not a member of a job spec");
			goto fail;
		}
		if ((members[m].scope == EXEC && out->kind != JP_KIND_EXEC) ||
		    (members[m].scope == CALL && out->kind != JP_KIND_CALL)) {
			rc = bad(&c, PLACE(key), members[m].scope == EXEC ? "is only for exec jobs"
									  : "is only for call jobs");
			goto fail;
		}
		rc = member(&c, m, v, out);
		if (rc < 0)
			goto fail;
	}
	if (out->kind == JP_KIND_EXEC && !out->argv) {
		rc = bad(&c, PLACE("argv"), "is required for an exec job");
		goto fail;
	}
	if (out->kind == JP_KIND_CALL && !out->fn) {
		rc = bad(&c, PLACE("fn"), "is required for a call job");
		goto fail;
	}
	if (out->retry.max_attempts && out->array_text) {
		rc = bad(&c, PLACE("retry"), "cannot be combined with array (an element is not "
			 "retried on its own)");
		goto fail;
	}
	if (out->hook_timeout_ms && !out->on_exit && !out->notify) {
		rc = bad(&c, PLACE("hook_timeout_ms"), "is only for jobs with on_exit or notify");
		goto fail;
	}
	if (out->array_replace && !out->array_text) {
		rc = bad(&c, PLACE("array_replace"), "is only for job arrays (with array)");
		goto fail;
	}
	if (out->n_after + out->n_any_of > c.lim->deps_per_job) {
		rc = over(&c, "any_of", out->n_after + out->n_any_of, c.lim->deps_per_job);
		goto fail;
	}
	return 0;
fail:
	jp_job_spec_clear(out);
	return rc;
}

static json_t *deps_json(const struct jp_dep *d, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *o = json_object();

		if (!o || (d[i].ref ? set(o, "ref", json_string(d[i].ref))
				    : set(o, "job", json_integer(d[i].job))) < 0 ||
		    (d[i].on != JP_ON_SUCCESS && set(o, "on", json_string(jp_dep_on_name(d[i].on))) < 0) ||
		    json_array_append_new(a, o) < 0) {
			json_decref(o);
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* add_exec / add_call: the members of one kind. */
static int add_exec(json_t *o, const struct jp_job_spec *s)
{
	json_t *argv = json_array(), *env;

	if (set(o, "argv", argv) < 0)
		return -1;
	for (size_t i = 0; i < s->argc; i++)
		if (json_array_append_new(argv, json_string(s->argv[i])) < 0)
			return -1;
	if (s->n_env) {
		if (set(o, "env", env = json_object()) < 0)
			return -1;
		for (size_t i = 0; i < s->n_env; i++)
			if (set(env, s->env[i].name, json_string(s->env[i].value)) < 0)
				return -1;
	}
	if (s->cwd && strcmp(s->cwd, "/") != 0 && set(o, "cwd", json_string(s->cwd)) < 0)
		return -1;
	if (s->has_stdin && set(o, "stdin", jp_base64_json(s->stdin_data, s->stdin_len)) < 0)
		return -1;
	if (s->timeout_ms > 0 && set(o, "timeout_ms", json_integer(s->timeout_ms)) < 0)
		return -1;
	if (s->res_memory || s->res_pids || s->res_cpu_milli) {
		json_t *r = json_object();

		if (set(o, "resources", r) < 0 ||
		    (s->res_memory && set(r, "memory", json_integer((json_int_t)s->res_memory)) < 0) ||
		    (s->res_pids && set(r, "pids", json_integer((json_int_t)s->res_pids)) < 0) ||
		    (s->res_cpu_milli && set(r, "cpus", json_real(s->res_cpu_milli / 1000.0)) < 0))
			return -1;
	}
	if (s->backend && set(o, "backend", json_string(s->backend)) < 0)
		return -1;
	if (s->n_needs) {
		json_t *n = json_object();

		if (set(o, "needs", n) < 0)
			return -1;
		for (size_t i = 0; i < s->n_needs; i++)
			if (set(n, s->needs[i].name, json_integer(s->needs[i].count)) < 0)
				return -1;
	}
	return 0;
}

static int add_call(json_t *o, const struct jp_job_spec *s)
{
	if (set(o, "fn", json_string(s->fn ? s->fn : "")) < 0)
		return -1;
	if (s->args && json_object_set(o, "args", s->args) < 0)
		return -1;
	return 0;
}

json_t *jp_job_spec_to_json(const struct jp_job_spec *s)
{
	json_t *o = json_object();

	if (!o || set(o, "kind", json_string(jp_kind_name(s->kind))) < 0 ||
	    (s->name && set(o, "name", json_string(s->name)) < 0) ||
	    (s->ref && set(o, "ref", json_string(s->ref)) < 0) ||
	    (s->key && set(o, "key", json_string(s->key)) < 0) ||
	    (s->priority != JP_PRIO_NORMAL &&
	     set(o, "priority", json_string(jp_priority_name(s->priority))) < 0) ||
	    (s->deadline == JP_DEADLINE_AT && set(o, "deadline_at_ms", json_integer(s->deadline_ms)) < 0) ||
	    (s->deadline == JP_DEADLINE_IN && set(o, "deadline_in_ms", json_integer(s->deadline_ms)) < 0) ||
	    (s->not_before_ms && set(o, "not_before", json_integer(s->not_before_ms)) < 0) ||
	    (s->n_after && set(o, "after", deps_json(s->after, s->n_after)) < 0) ||
	    (s->n_any_of && set(o, "any_of", deps_json(s->any_of, s->n_any_of)) < 0) ||
	    (s->cost != 1 && set(o, "cost", json_integer(s->cost)) < 0) ||
	    (s->array_text && set(o, "array", json_string(s->array_text)) < 0) ||
	    (s->array_replace && set(o, "array_replace", json_true()) < 0) ||
	    (s->on_exit && set(o, "on_exit", json_string(s->on_exit)) < 0) ||
	    (s->notify && set(o, "notify", json_true()) < 0) ||
	    (s->hook_timeout_ms && set(o, "hook_timeout_ms", json_integer(s->hook_timeout_ms)) < 0) ||
	    (s->retry.max_attempts && set(o, "retry", retry_json(&s->retry)) < 0) ||
	    (s->kind == JP_KIND_EXEC ? add_exec(o, s) : add_call(o, s)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
