/* proto/array.c: a job array's indices in Slurm's syntax (PROTOCOL.md section 4, `array`).
 *
 * "1-100", "1-99:2", "1,5,7", "0-9,20-29:3" and any of them with "%N" at the end (at most N
 * elements running at once).  The indices are kept as their ranges, never as a list: an
 * array of a million elements costs one range, and the i-th index is found by a binary
 * search over the ranges' first positions.  Ranges must come in increasing order without
 * overlapping (each starts above the last index of the one before), so that every index
 * appears once and an element's position is its rank.
 */
#include "proto/jproto.h"
#include "proto/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jp_array_clear(struct jp_array *a)
{
	free(a->ranges);
	*a = (struct jp_array){0};
}

/* number: digits at *p (at most 10) into *out; advances *p.  Returns false when there are
 * none or the value is above JP_ARRAY_INDEX_MAX. */
static bool number(const char **p, int64_t *out)
{
	int64_t v = 0;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (++n > 10)
			return false;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	*out = v;
	return n > 0 && v <= JP_ARRAY_INDEX_MAX;
}

int jp_array_parse(const char *text, uint64_t max_elements, struct jp_array *out,
		   const char *field, struct jp_err *err)
{
	const char *p = text;
	size_t cap = 0;
	int rc;

	*out = (struct jp_array){0};
	if (!*p)
		return jp_err_set(err, JSCHED_EBAD_REQUEST, field,
				  "an array needs indices (\"1-100\", \"1-99:2\", \"1,5,7\", \"%%N\")");
	for (;;) {
		struct jp_array_range r = {.step = 1};

		if (!number(&p, &r.lo)) {
			rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
					"\"%.*s\": an index must be a number from 0 to %d (at \"%.*s\")",
					jp_utf8_cut(text, 64), text, (int)JP_ARRAY_INDEX_MAX,
					jp_utf8_cut(p, 16), p);
			goto fail;
		}
		r.hi = r.lo;
		if (*p == '-') {
			p++;
			if (!number(&p, &r.hi)) {
				rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
						"\"%.*s\": a range ends in a number from 0 to %d",
						jp_utf8_cut(text, 64), text, (int)JP_ARRAY_INDEX_MAX);
				goto fail;
			}
			if (r.hi < r.lo) {
				rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
						"\"%.*s\": the range %lld-%lld runs backwards",
						jp_utf8_cut(text, 64), text, (long long)r.lo,
						(long long)r.hi);
				goto fail;
			}
			if (*p == ':') {
				p++;
				if (!number(&p, &r.step) || r.step < 1) {
					rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
							"\"%.*s\": a step is a number of at least 1",
							jp_utf8_cut(text, 64), text);
					goto fail;
				}
			}
		}
		/* The last index the step reaches. */
		r.hi = r.lo + (r.hi - r.lo) / r.step * r.step;
		if (out->n_ranges && r.lo <= out->ranges[out->n_ranges - 1].hi) {
			rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
					"\"%.*s\": indices must increase (%lld comes after %lld)",
					jp_utf8_cut(text, 64), text, (long long)r.lo,
					(long long)out->ranges[out->n_ranges - 1].hi);
			goto fail;
		}
		r.first = out->count;
		out->count += (uint64_t)((r.hi - r.lo) / r.step) + 1;
		if (out->count > max_elements) {
			rc = jp_err_set(err, JSCHED_ELIMIT_EXCEEDED, field,
					"\"%.*s\" has more than %llu elements (limits.array_elements)",
					jp_utf8_cut(text, 64), text, (unsigned long long)max_elements);
			goto fail;
		}
		if (out->n_ranges == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			struct jp_array_range *v = realloc(out->ranges, ncap * sizeof(*v));

			if (!v) {
				rc = jp_err_set(err, JSCHED_ENOMEM, NULL, "out of memory");
				goto fail;
			}
			out->ranges = v;
			cap = ncap;
		}
		out->ranges[out->n_ranges++] = r;
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '%') {
		int64_t n;

		p++;
		if (!number(&p, &n) || n < 1 || *p) {
			rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
					"\"%.*s\": %%N is a number of at least 1 (at most N elements "
					"run at once)", jp_utf8_cut(text, 64), text);
			goto fail;
		}
		out->max_running = (uint32_t)n;
	}
	if (*p) {
		rc = jp_err_set(err, JSCHED_EBAD_REQUEST, field,
				"\"%.*s\": unexpected \"%.*s\" (indices are \"1-100\", \"1-99:2\", "
				"\"1,5,7\", then \"%%N\" if wanted)", jp_utf8_cut(text, 64), text,
				jp_utf8_cut(p, 16), p);
		goto fail;
	}
	return 0;
fail:
	jp_array_clear(out);
	return rc;
}

int64_t jp_array_index(const struct jp_array *a, uint64_t pos)
{
	size_t lo = 0, hi = a->n_ranges;

	if (pos >= a->count)
		return -1;
	/* The last range whose first position is <= pos. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->ranges[mid].first <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return a->ranges[lo].lo + (int64_t)(pos - a->ranges[lo].first) * a->ranges[lo].step;
}
