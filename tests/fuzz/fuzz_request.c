/* tests/fuzz/fuzz_request.c: fuzz target for the request checker and the job-spec parser
 * (and, on the same inputs, the readers a client uses: replies, events, records).
 *
 * Input: a frame payload.  Invariants:
 *   - a payload is refused only as bad_frame (or no_memory);
 *   - a request is refused only with bad_request / unknown_op / limit_exceeded (or bad_frame,
 *     id null, for an integer beyond +-(2^53-1)), with a
 *     message, and the error reply built from it reads back with the same code and field;
 *   - an accepted submit yields specs whose creation order is a permutation of them in which
 *     every spec follows the specs it names by ref;
 *   - a spec that parses, built back to JSON, parses again and builds the same JSON (the
 *     parser and the builder agree on every member);
 *   - a job record that parses, built back, parses to the same record JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jproto.h"
#include "tests/fuzz/fuzz.h"

/* spec_round_trip: s (parsed) -> JSON -> spec -> JSON gives the same JSON twice. */
static void spec_round_trip(const struct jp_job_spec *s, const struct jp_limits *lim)
{
	json_t *j1 = jp_job_spec_to_json(s), *j2;
	struct jp_job_spec t;
	struct jp_err err = {0};

	check(j1 != NULL);
	check(jp_job_spec_parse(j1, "job", lim, &t, &err) == 0);
	j2 = jp_job_spec_to_json(&t);
	check(j2 != NULL);
	check(json_equal(j1, j2));
	json_decref(j2);
	jp_job_spec_clear(&t);
	json_decref(j1);
}

static void check_submit(const struct jp_request *r, const struct jp_limits *lim)
{
	struct jp_submit s;
	struct jp_err err = {0};
	int rc = jp_submit_parse(r, lim, &s, &err);
	int64_t *ids;
	bool *seen;
	json_t *reply;

	if (rc < 0) {
		check(rc == JSCHED_EBAD_REQUEST || rc == JSCHED_ELIMIT_EXCEEDED ||
		      rc == JSCHED_EUNKNOWN_DEPENDENCY || rc == JSCHED_EDEPENDENCY_CYCLE ||
		      rc == JSCHED_ENOMEM);
		check(err.code == rc && err.message[0]);
		check(s.n == 0 && s.specs == NULL);
		return;
	}
	check(s.n >= 1);
	ids = calloc(s.n, sizeof(*ids));
	seen = calloc(s.n, sizeof(*seen));
	check(ids && seen);
	for (size_t k = 0; k < s.n; k++) {
		size_t i = s.order[k];
		const struct jp_job_spec *sp = &s.specs[i];

		check(i < s.n && !seen[i]);
		for (size_t j = 0; j < sp->n_after + sp->n_any_of; j++) {
			const struct jp_dep *d = j < sp->n_after ? &sp->after[j]
								 : &sp->any_of[j - sp->n_after];

			if (d->ref) {
				check(d->index < s.n && seen[d->index]);
				check(strcmp(s.specs[d->index].ref, d->ref) == 0);
			} else {
				check(d->job >= 1);
			}
		}
		seen[i] = true;
		ids[i] = (int64_t)i + 1;
		spec_round_trip(sp, lim);
	}
	reply = jp_submit_reply_new(r->id, &s, ids, NULL);
	check(reply != NULL);
	json_decref(reply);
	free(seen);
	free(ids);
	jp_submit_clear(&s);
}

static void check_request(const json_t *msg)
{
	struct jp_limits lim;
	struct jp_request r;
	struct jp_err err = {0};
	struct jp_incoming in;
	json_t *reply, *wire = NULL;
	struct jp_buf b = {0};
	struct jp_decoder d;
	int rc;

	jp_limits_default(&lim);
	lim.jobs_per_submit = 64;	/* small, so the fuzzer reaches the limits */
	lim.argv_items = 16;
	lim.env_items = 16;
	lim.deps_per_job = 16;
	lim.stdin_bytes = 64;
	rc = jp_request_parse(msg, &lim, &r, &err);
	if (rc < 0) {
		check(rc == JSCHED_EBAD_REQUEST || rc == JSCHED_EUNKNOWN_OP ||
		      rc == JSCHED_ELIMIT_EXCEEDED ||
		      (rc == JSCHED_EBAD_FRAME && r.id == JP_ID_NONE));
		check(err.code == rc && err.message[0]);
		/* Texts quoting the input are cut at characters: jansson takes them. */
		check(jp_utf8_valid(err.message) && jp_utf8_valid(err.field));
		/* The error reply the daemon would send reads back the same. */
		reply = jp_reply_err_new(r.id, &err);
		check(reply != NULL);
		check(jp_frame_append(&b, reply, UINT32_MAX) == 0);
		jp_decoder_init(&d, b.len);
		check(jp_decoder_feed(&d, b.data, b.len) == 0);
		check(jp_decoder_next(&d, &wire) == 1);
		check(jp_incoming_parse(wire, &in, NULL) == 0);
		check(!in.is_event && !in.ok && in.id == r.id);
		check(in.error.code == rc);
		check(strcmp(in.error.field, err.field) == 0);
		json_decref(wire);
		json_decref(reply);
		jp_decoder_free(&d);
		jp_buf_free(&b);
		return;
	}
	check(r.id >= 0 && r.msg == msg);
	switch (r.op) {
	case JP_OP_SUBMIT:
		check_submit(&r, &lim);
		break;
	case JP_OP_STATUS:
	case JP_OP_WAIT:
	case JP_OP_CANCEL: {
		int64_t *ids;
		size_t n;
		bool single;

		check(jp_req_ids(&r, &ids, &n, &single) == 0);
		check(n >= 1 && n <= lim.jobs_per_submit);
		for (size_t i = 0; i < n; i++)
			check(ids[i] >= 1);
		free(ids);
		break;
	}
	case JP_OP_LIST:
		check((jp_req_states(&r) >> JP_NSTATES) == 0);
		break;
	default:
		break;
	}
}

/* check_readers: the client-side readers on the same object must not misbehave. */
static void check_readers(const json_t *msg)
{
	struct jp_incoming in;
	struct jp_record rec, rec2;
	struct jp_hello_reply h;
	struct jp_job_spec s;
	struct jp_err err = {0};
	json_t *j1, *j2;

	(void)jp_incoming_parse(msg, &in, &err);
	(void)jp_hello_reply_parse(msg, &h, &err);
	(void)jp_error_parse(msg, &err);
	if (jp_record_parse(msg, &rec, &err) == 0) {
		j1 = jp_record_to_json(&rec);
		check(j1 != NULL);
		check(jp_record_parse(j1, &rec2, &err) == 0);
		j2 = jp_record_to_json(&rec2);
		check(j2 != NULL && json_equal(j1, j2));
		json_decref(j2);
		json_decref(j1);
	}
	/* The spec parser on the whole object, as if it were a spec. */
	if (jp_job_spec_parse(msg, "", NULL, &s, &err) == 0) {
		spec_round_trip(&s, NULL);
		jp_job_spec_clear(&s);
	} else {
		check(err.code == JSCHED_EBAD_REQUEST || err.code == JSCHED_ELIMIT_EXCEEDED ||
		      err.code == JSCHED_ENOMEM);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *msg = NULL;
	struct jp_err err = {0};
	int rc = jp_frame_parse(data, size, &msg, &err);

	if (rc < 0) {
		check(rc == JSCHED_EBAD_FRAME || rc == JSCHED_ENOMEM);
		check(msg == NULL && err.code == rc);
		return 0;
	}
	check(json_is_object(msg));
	check_request(msg);
	check_readers(msg);
	json_decref(msg);
	return 0;
}
