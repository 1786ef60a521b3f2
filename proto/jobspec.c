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

static const struct {
	const char *name;
	enum scope scope;
} members[] = {
	{"kind", ANY},	   {"name", ANY},	    {"ref", ANY},     {"priority", ANY},
	{"deadline_at_ms", ANY}, {"deadline_in_ms", ANY}, {"after", ANY},   {"any_of", ANY},
	{"cost", ANY},	   {"argv", EXEC},	    {"env", EXEC},    {"cwd", EXEC},
	{"stdin", EXEC},   {"timeout_ms", EXEC},     {"fn", CALL},     {"args", CALL},
};

/* A parse in progress: where errors go and how to name the member at fault. */
struct ctx {
	const char *path;	/* the spec's own path, "" at top level */
	const struct jp_limits *lim;
	struct jp_err *err;
	char field[200];	/* room for a path and a sub-member (sub[160] below) */
};

/* at: the path of member key (and index i if i >= 0) of the spec, in c->field. */
static const char *at(struct ctx *c, const char *key, long i)
{
	const char *dot = *c->path ? "." : "";

	if (i >= 0)
		snprintf(c->field, sizeof(c->field), "%s%s%s[%ld]", c->path, dot, key, i);
	else
		snprintf(c->field, sizeof(c->field), "%s%s%s", c->path, dot, key);
	return c->field;
}

static int bad(struct ctx *c, const char *key, long i, const char *what)
{
	const char *f = at(c, key, i);

	return jp_err_set(c->err, JSCHED_EBAD_REQUEST, f, "%s %s", f, what);
}

static int over(struct ctx *c, const char *key, size_t n, uint32_t limit)
{
	const char *f = at(c, key, -1);

	return jp_err_set(c->err, JSCHED_ELIMIT_EXCEEDED, f, "%s has %zu; the limit is %u", f, n,
			  (unsigned)limit);
}

/* str: v as a NUL-free string of min..max bytes, else an error for key. */
static int str(struct ctx *c, const json_t *v, const char *key, long i, size_t min, size_t max,
	       const char **out)
{
	size_t len;

	if (!json_is_string(v))
		return bad(c, key, i, "must be a string");
	len = json_string_length(v);
	if (len < min || len > max || strlen(json_string_value(v)) != len) {
		char what[80];

		snprintf(what, sizeof(what), "must be %zu to %zu bytes, without NUL", min, max);
		return bad(c, key, i, what);
	}
	*out = json_string_value(v);
	return 0;
}

static int integer(struct ctx *c, const json_t *v, const char *key, int64_t min, int64_t max,
		   int64_t *out)
{
	char what[96];

	if (json_is_integer(v) && json_integer_value(v) >= min && json_integer_value(v) <= max) {
		*out = (int64_t)json_integer_value(v);
		return 0;
	}
	snprintf(what, sizeof(what), "must be an integer from %lld to %lld", (long long)min,
		 (long long)max);
	return bad(c, key, -1, what);
}

/* deps: an `after` or `any_of` array into *out / *n. */
static int deps(struct ctx *c, const json_t *v, const char *key, struct jp_dep **out, size_t *n)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v))
		return bad(c, key, -1, "must be an array of dependencies");
	if (json_array_size(v) > c->lim->deps_per_job)
		return over(c, key, json_array_size(v), c->lim->deps_per_job);
	if (json_array_size(v) == 0)
		return 0;
	*out = calloc(json_array_size(v), sizeof(**out));
	if (!*out)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	*n = json_array_size(v);
	json_array_foreach(v, i, e) {
		struct jp_dep *d = &(*out)[i];
		const json_t *job, *ref, *on, *m;
		const char *k;
		char sub[160];
		int rc, o;

		d->on = JP_ON_SUCCESS;
		if (json_is_integer(e) && json_integer_value(e) >= 1 &&
		    json_integer_value(e) <= JP_MAX_INT) {
			d->job = (int64_t)json_integer_value(e);	/* shorthand: an id */
			continue;
		}
		if (json_is_string(e)) {	/* shorthand: a ref */
			rc = str(c, e, key, (long)i, 1, JP_REF_MAX, &d->ref);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!json_is_object(e))
			return bad(c, key, (long)i,
				   "must be a job id, a ref, or {\"job\" or \"ref\", \"on\"}");
		json_object_foreach(unconst(e), k, m) {
			if (strcmp(k, "job") && strcmp(k, "ref") && strcmp(k, "on")) {
				snprintf(sub, sizeof(sub), "%s[%zu].%s", key, i, k);
				return bad(c, sub, -1, "is not a member of a dependency");
			}
		}
		job = json_object_get(e, "job");
		ref = json_object_get(e, "ref");
		on = json_object_get(e, "on");
		if (!job == !ref)
			return bad(c, key, (long)i, "must name exactly one of job and ref");
		if (job) {
			snprintf(sub, sizeof(sub), "%s[%zu].job", key, i);
			rc = integer(c, job, sub, 1, JP_MAX_INT, &d->job);
		} else {
			snprintf(sub, sizeof(sub), "%s[%zu].ref", key, i);
			rc = str(c, ref, sub, -1, 1, JP_REF_MAX, &d->ref);
		}
		if (rc < 0)
			return rc;
		if (on) {
			o = json_is_string(on) ? jp_dep_on_from_name(json_string_value(on)) : -1;
			if (o < 0) {
				snprintf(sub, sizeof(sub), "%s[%zu].on", key, i);
				return bad(c, sub, -1, "must be \"success\", \"failure\" or \"any\"");
			}
			d->on = (enum jp_dep_on)o;
		}
	}
	return 0;
}

static int argv_of(struct ctx *c, const json_t *v, struct jp_job_spec *s)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return bad(c, "argv", -1, "must be a non-empty array of strings");
	if (json_array_size(v) > c->lim->argv_items)
		return over(c, "argv", json_array_size(v), c->lim->argv_items);
	s->argv = calloc(json_array_size(v) + 1, sizeof(*s->argv));
	if (!s->argv)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	json_array_foreach(v, i, e) {
		int rc = str(c, e, "argv", (long)i, i == 0 ? 1 : 0, SIZE_MAX, &s->argv[i]);

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
	char sub[160];
	int rc;

	if (!json_is_object(v))
		return bad(c, "env", -1, "must be an object of strings");
	if (json_object_size(v) > c->lim->env_items)
		return over(c, "env", json_object_size(v), c->lim->env_items);
	if (json_object_size(v) == 0)
		return 0;
	s->env = calloc(json_object_size(v), sizeof(*s->env));
	if (!s->env)
		return jp_err_set(c->err, JSCHED_ENOMEM, NULL, "out of memory");
	json_object_foreach(unconst(v), k, e) {
		snprintf(sub, sizeof(sub), "env.%s", k);
		if (*k == '\0' || strchr(k, '='))
			return bad(c, sub, -1, "is not a variable name (empty, or contains '=')");
		rc = str(c, e, sub, -1, 0, SIZE_MAX, &s->env[i].value);
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
		return bad(c, "stdin", -1, "must be a base64 string");
	rc = jp_base64_decode(json_string_value(v), json_string_length(v), c->lim->stdin_bytes,
			      &s->stdin_data, &s->stdin_len);
	if (rc == JSCHED_ELIMIT_EXCEEDED)
		return over(c, "stdin", json_string_length(v) / 4 * 3, c->lim->stdin_bytes);
	if (rc == JSCHED_ENOMEM)
		return jp_err_set(c->err, rc, NULL, "out of memory");
	if (rc < 0)
		return bad(c, "stdin", -1, "is not base64 (RFC 4648, padded, no whitespace)");
	s->has_stdin = true;
	return 0;
}

/* member: one member of the spec. */
static int member(struct ctx *c, const char *key, const json_t *v, struct jp_job_spec *s)
{
	int64_t n;
	int rc = 0, p;

	if (strcmp(key, "kind") == 0) {
		return 0;	/* read first, by jp_job_spec_parse */
	} else if (strcmp(key, "name") == 0) {
		rc = str(c, v, key, -1, 0, JP_NAME_MAX, &s->name);
	} else if (strcmp(key, "ref") == 0) {
		rc = str(c, v, key, -1, 1, JP_REF_MAX, &s->ref);
	} else if (strcmp(key, "priority") == 0) {
		p = json_is_string(v) ? jp_priority_from_name(json_string_value(v)) : -1;
		if (p < 0)
			return bad(c, key, -1, "must be \"low\", \"normal\", \"high\" or \"critical\"");
		s->priority = (enum jp_priority)p;
	} else if (strcmp(key, "deadline_at_ms") == 0 || strcmp(key, "deadline_in_ms") == 0) {
		if (s->deadline != JP_DEADLINE_NONE)
			return bad(c, "deadline_in_ms", -1,
				   "cannot be given with deadline_at_ms: one deadline per job");
		rc = integer(c, v, key, 0, JP_MAX_INT, &s->deadline_ms);
		s->deadline = key[9] == 'a' ? JP_DEADLINE_AT : JP_DEADLINE_IN;
	} else if (strcmp(key, "after") == 0) {
		rc = deps(c, v, key, &s->after, &s->n_after);
	} else if (strcmp(key, "any_of") == 0) {
		rc = deps(c, v, key, &s->any_of, &s->n_any_of);
	} else if (strcmp(key, "cost") == 0) {
		rc = integer(c, v, key, 1, JP_COST_MAX, &n);
		s->cost = (uint32_t)n;
	} else if (strcmp(key, "argv") == 0) {
		rc = argv_of(c, v, s);
	} else if (strcmp(key, "env") == 0) {
		rc = env_of(c, v, s);
	} else if (strcmp(key, "cwd") == 0) {
		rc = str(c, v, key, -1, 1, SIZE_MAX, &s->cwd);
		if (rc == 0 && s->cwd[0] != '/')
			return bad(c, key, -1, "must be an absolute path");
	} else if (strcmp(key, "stdin") == 0) {
		rc = stdin_of(c, v, s);
	} else if (strcmp(key, "timeout_ms") == 0) {
		rc = integer(c, v, key, 1, JP_MAX_INT, &s->timeout_ms);
	} else if (strcmp(key, "fn") == 0) {
		rc = str(c, v, key, -1, 1, JP_NAME_MAX, &s->fn);
	} else if (strcmp(key, "args") == 0) {
		s->args = unconst(v);
	}
	return rc;
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
	jp_job_spec_init(s);
}

int jp_job_spec_parse(const json_t *obj, const char *path, const struct jp_limits *lim,
		      struct jp_job_spec *out, struct jp_err *err)
{
	struct jp_limits dflt;
	struct ctx c = {.path = path ? path : "", .lim = lim, .err = err};
	const json_t *kind, *v;
	const char *key;
	size_t i;
	int k, rc;

	jp_job_spec_init(out);
	if (!lim) {
		jp_limits_default(&dflt);
		c.lim = &dflt;
	}
	if (!json_is_object(obj))
		return jp_err_set(err, JSCHED_EBAD_REQUEST, c.path, "a job spec is a JSON object");
	kind = json_object_get(obj, "kind");
	if (!kind)
		return bad(&c, "kind", -1, "is required (\"exec\" or \"call\")");
	k = json_is_string(kind) ? jp_kind_from_name(json_string_value(kind)) : -1;
	if (k < 0)
		return bad(&c, "kind", -1, "must be \"exec\" or \"call\"");
	out->kind = (enum jp_kind)k;
	json_object_foreach(unconst(obj), key, v) {
		for (i = 0; i < sizeof(members) / sizeof(members[0]); i++)
			if (strcmp(members[i].name, key) == 0)
				break;
		if (i == sizeof(members) / sizeof(members[0])) {
			rc = bad(&c, key, -1, "is not a member of a job spec");
			goto fail;
		}
		if ((members[i].scope == EXEC && out->kind != JP_KIND_EXEC) ||
		    (members[i].scope == CALL && out->kind != JP_KIND_CALL)) {
			rc = bad(&c, key, -1, members[i].scope == EXEC ? "is only for exec jobs"
								       : "is only for call jobs");
			goto fail;
		}
		rc = member(&c, key, v, out);
		if (rc < 0)
			goto fail;
	}
	if (out->kind == JP_KIND_EXEC && !out->argv) {
		rc = bad(&c, "argv", -1, "is required for an exec job");
		goto fail;
	}
	if (out->kind == JP_KIND_CALL && !out->fn) {
		rc = bad(&c, "fn", -1, "is required for a call job");
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
	    (s->priority != JP_PRIO_NORMAL &&
	     set(o, "priority", json_string(jp_priority_name(s->priority))) < 0) ||
	    (s->deadline == JP_DEADLINE_AT && set(o, "deadline_at_ms", json_integer(s->deadline_ms)) < 0) ||
	    (s->deadline == JP_DEADLINE_IN && set(o, "deadline_in_ms", json_integer(s->deadline_ms)) < 0) ||
	    (s->n_after && set(o, "after", deps_json(s->after, s->n_after)) < 0) ||
	    (s->n_any_of && set(o, "any_of", deps_json(s->any_of, s->n_any_of)) < 0) ||
	    (s->cost != 1 && set(o, "cost", json_integer(s->cost)) < 0) ||
	    (s->kind == JP_KIND_EXEC ? add_exec(o, s) : add_call(o, s)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
