/* daemon/core/exec_job.c: an exec job's data (see exec_job.h). */
#include "daemon/core/exec_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/outfile.h"
#include "jsched/error.h"
#include "proto/jproto.h"

void jd_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void jd_exec_spec_clear(struct jd_exec_spec *s)
{
	jd_strv_free(s->argv);
	jd_strv_free(s->env);
	free(s->cwd);
	free(s->stdin_data);
	memset(s, 0, sizeof(*s));
}

struct jd_exec_job *jd_exec_job_new(const struct jp_job_spec *sp)
{
	struct jd_exec_job *x = calloc(1, sizeof(*x));
	struct jd_exec_spec *s;

	if (!x)
		return NULL;
	s = &x->spec;
	s->argv = calloc(sp->argc + 1, sizeof(char *));
	s->env = calloc(sp->n_env + 1, sizeof(char *));
	s->cwd = strdup(sp->cwd ? sp->cwd : "/");
	if (!s->argv || !s->env || !s->cwd)
		goto fail;
	for (size_t i = 0; i < sp->argc; i++)
		if (!(s->argv[i] = strdup(sp->argv[i])))
			goto fail;
	for (size_t i = 0; i < sp->n_env; i++) {
		size_t n = strlen(sp->env[i].name), m = strlen(sp->env[i].value);

		if (!(s->env[i] = malloc(n + m + 2)))
			goto fail;
		memcpy(s->env[i], sp->env[i].name, n);
		s->env[i][n] = '=';
		memcpy(s->env[i] + n + 1, sp->env[i].value, m + 1);
	}
	s->has_stdin = sp->has_stdin;
	if (sp->stdin_len) {
		if (!(s->stdin_data = malloc(sp->stdin_len)))
			goto fail;
		memcpy(s->stdin_data, sp->stdin_data, sp->stdin_len);
		s->stdin_len = sp->stdin_len;
	}
	s->timeout_ms = sp->timeout_ms > 0 ? (uint64_t)sp->timeout_ms : 0;
	s->memory_max = sp->res_memory;
	s->pids_max = sp->res_pids;
	s->cpu_milli = sp->res_cpu_milli;
	for (size_t i = 0; i < sp->n_needs && i < JP_NEEDS_MAX; i++) {
		snprintf(s->needs[i].name, sizeof(s->needs[i].name), "%s", sp->needs[i].name);
		s->needs[i].count = sp->needs[i].count;
		s->need_units += sp->needs[i].count;
		s->n_needs++;
	}
	return x;
fail:
	jd_exec_job_free(x);
	return NULL;
}

void jd_exec_job_free(struct jd_exec_job *x)
{
	if (!x)
		return;
	jd_exec_spec_clear(&x->spec);
	free(x->assigned);
	free(x->res.out.data);
	free(x->res.err.data);
	free(x->remote_tag);
	jd_outlog_clear(&x->res.log);
	free(x);
}

void jd_exec_job_reset(struct jd_exec_job *x)
{
	if (!x)
		return;
	free(x->assigned);
	x->assigned = NULL;
	x->holding = false;
	free(x->res.out.data);
	free(x->res.err.data);
	jd_outlog_clear(&x->res.log);
	{
		/* The log's generation goes on: followers and the output files tell the
		 * next attempt's output from this one's by it (outlog.h). */
		uint32_t gen = x->res.log.gen;

		memset(&x->res, 0, sizeof(x->res));
		x->res.log.gen = gen;
	}
}

static size_t strv_mem(char *const *v)
{
	size_t n = 0, i = 0;

	if (!v)
		return 0;
	for (; v[i]; i++)
		n += strlen(v[i]) + 1 + 16;
	return n + (i + 1) * sizeof(*v) + 16;
}

size_t jd_exec_job_mem_bytes(const struct jd_exec_job *x)
{
	const struct jd_exec_spec *s = &x->spec;
	size_t n = sizeof(*x) + 16 + strv_mem(s->argv) + strv_mem(s->env);

	if (s->cwd)
		n += strlen(s->cwd) + 1 + 16;
	if (s->stdin_data)
		n += s->stdin_len + 16;
	if (x->res.out.data)
		n += x->res.out.len + 16;
	if (x->res.err.data)
		n += x->res.err.len + 16;
	return n + jd_outlog_mem_bytes(&x->res.log);
}

void jd_exec_record(const struct jd_job *j, json_t *rec)
{
	const struct jd_exec_job *x = j->exec;
	const struct jd_exec_result *r = &x->res;

	if (x->ran_on == JD_BACKEND_SLURM) {
		json_object_set_new(rec, "backend", json_string("slurm"));
		if (x->remote_id)
			json_object_set_new(rec, "slurm_job", json_integer(x->remote_id));
		if (x->remote_node[0])
			json_object_set_new(rec, "node", json_string(x->remote_node));
	}
	if (x->assigned) {
		json_t *o = json_object();
		size_t k = 0;

		for (size_t i = 0; o && i < x->spec.n_needs; i++) {
			json_t *a = json_array();

			for (uint32_t u = 0; a && u < x->spec.needs[i].count; u++)
				json_array_append_new(a, json_integer(x->assigned[k++]));
			json_object_set_new(o, x->spec.needs[i].name, a);
		}
		if (o)
			json_object_set_new(rec, "assigned", o);
	}
	if (!jd_state_final(j->state))
		return;
	if (r->end == JD_EXEC_EXITED)
		json_object_set_new(rec, "exit_code", json_integer(r->exit_code));
	else if (r->end == JD_EXEC_SIGNALED)
		json_object_set_new(rec, "signal", json_integer(r->signal));
	if (r->usage.has) {
		const struct jd_exec_usage *u = &r->usage;
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "cpu_us", (json_int_t)u->cpu_us,
				      "user_us", (json_int_t)u->user_us, "system_us",
				      (json_int_t)u->system_us, "oom_kills", (json_int_t)u->oom_kills,
				      "pids_limit_hits", (json_int_t)u->pids_max_hits);

		if (o && u->memory_peak)
			json_object_set_new(o, "memory_peak_bytes", json_integer((json_int_t)u->memory_peak));
		if (o && u->memory_max)
			json_object_set_new(o, "memory_max_bytes", json_integer((json_int_t)u->memory_max));
		if (o)
			json_object_set_new(rec, "usage", o);
	}
}

int jd_exec_output_load(struct jd_job *j, const struct jd_outfiles *of)
{
	struct jd_exec_result *r = &j->exec->res;
	int rc;

	if (!r->files || r->loaded || !of)
		return 0;
	jd_outlog_clear(&r->log);
	rc = jd_outfiles_load(of, j->id, &r->log);
	r->loaded = rc >= 0;
	return rc < 0 ? rc : 0;
}

int jd_exec_stream_flat(const struct jd_exec_result *r, unsigned s, unsigned char **data,
			size_t *len, bool *truncated)
{
	const struct jd_exec_stream *f = s ? &r->err : &r->out;

	if (r->log.first || r->log.total[s]) {
		*truncated = jd_outlog_truncated(&r->log, s);
		return jd_outlog_flat(&r->log, s, data, len);
	}
	*truncated = f->truncated;
	if (!(*data = malloc(f->len + 1)))
		return JSCHED_ENOMEM;
	if (f->len)
		memcpy(*data, f->data, f->len);
	(*data)[f->len] = 0;
	*len = f->len;
	return 0;
}

json_t *jd_exec_output(struct jd_job *j, const struct jd_outfiles *of)
{
	json_t *st[2] = {NULL, NULL}, *o = NULL;

	(void)jd_exec_output_load(j, of);
	for (unsigned s = 0; s < 2; s++) {
		unsigned char *d;
		size_t n;
		bool t;

		if (jd_exec_stream_flat(&j->exec->res, s, &d, &n, &t) < 0)
			goto out;
		st[s] = jp_output_stream_new(d, n, t);
		free(d);
		if (!st[s])
			goto out;
	}
	o = json_pack("{s:b, s:O, s:O}", "complete", jd_state_final(j->state), "stdout", st[0],
		      "stderr", st[1]);
out:
	json_decref(st[0]);
	json_decref(st[1]);
	return o;
}
