/* proto/internal.h: two helpers the codec's files share; not part of the API. */
#ifndef JPROTO_INTERNAL_H
#define JPROTO_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "proto/jproto.h"

/* unconst: jansson's iteration macros take json_t *, though they only read; the codec's
 * parsers take const json_t * to promise they do not modify what they parse. */
static inline json_t *unconst(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/* set: json_object_set_new that fails on a NULL value (an allocation that failed), so a
 * builder can chain every member in one condition and clean up once. */
static inline int set(json_t *o, const char *key, json_t *v)
{
	return v ? json_object_set_new(o, key, v) : -1;
}

/* jp_job_spec_parse_at is jp_job_spec_parse for the spec at path[index] (index -1: path
 * alone), so that a submit names "jobs[3]" in errors without formatting a path per spec. */
int jp_job_spec_parse_at(const json_t *obj, const char *path, long index,
			 const struct jp_limits *lim, struct jp_job_spec *out, struct jp_err *err);

/* jp__ints_exact: does every integer in v lie within +-(2^53 - 1) (PROTOCOL.md section 1)? */
bool jp__ints_exact(const json_t *v);

/* jp__submit_finish: the part of jp_submit_parse after the specs are read (s->specs[0..n)
 * and s->order allocated): refs unique and resolved, the order.  0, or the error (err
 * filled; s left for the caller to clear). */
int jp__submit_finish(struct jp_submit *s, struct jp_err *err);

#endif /* JPROTO_INTERNAL_H */
