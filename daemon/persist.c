/* daemon/persist.c: the job table's changes as journal records, and recovery from them
 * (persist.h says what is recorded and what recovery does).
 *
 * Encoding is a small binary header per record plus text where the codec already has a
 * form (the spec's JSON, the call's value): a record costs the loop thread one copy
 * into the journal's buffer, and the state records (queued, running, forgotten) carry
 * no payload at all.
 */
#include "daemon/persist.h"
#include "daemon/core/clock.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/array.h"
#include "daemon/core/diskcpu.h"
#include "daemon/core/journal.h"
#include "daemon/core/le.h"
#include "daemon/core/log.h"
#include "daemon/core/outfile.h"
#include "daemon/core/proc.h"
#include "daemon/daemon.h"
#include "daemon/net/ops.h"
#include "daemon/net/session.h"
#include "daemon/run/backend.h"
#include "jsched/error.h"
#include "jsched/module.h"

enum {
	R_SUBMIT = 1,
	R_QUEUED = 2,
	R_RUNNING = 3,
	R_FINAL = 4,
	R_FORGOTTEN = 5,
	R_CLIENT = 6,
	R_NEXT_ID = 7,		/* snapshots only: the id counter (u64) */
	R_PROCESS = 8,		/* a running command's process group: pid, start time, boot */
	R_ARRAY_STOP = 9,	/* an array's elements not yet made ended: state, cause, ms */
	R_REMOTE = 10,		/* handed to Slurm: backend, Slurm job id, the tag of its files */
	R_ASSIGN = 11,		/* the named resources' indices a command was given */
	R_HOOK = 12,		/* a job's hooks: state, exit code, signal, claimed/finished ms, reason */
	R_ATTEMPT = 13,		/* an attempt of a job ended: its times, exit code, signal, state,
				 * cause, and the next attempt's time (0: it runs again now, the
				 * retry operation) */
};

/* ---- a growing byte buffer, little-endian fields ---- */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static void w_bytes(struct wbuf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		unsigned char *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void w_u64(struct wbuf *b, uint64_t v)
{
	unsigned char x[8];

	if (b->len + 8 <= b->cap) {
		jd_put64(b->p + b->len, v);
		b->len += 8;
		return;
	}
	jd_put64(x, v);
	w_bytes(b, x, 8);
}

static void w_u32(struct wbuf *b, uint32_t v)
{
	unsigned char x[4];

	if (b->len + 4 <= b->cap) {
		jd_put32(b->p + b->len, v);
		b->len += 4;
		return;
	}
	jd_put32(x, v);
	w_bytes(b, x, 4);
}

static void w_u8(struct wbuf *b, unsigned v)
{
	unsigned char x = (unsigned char)v;

	if (b->len < b->cap) {
		b->p[b->len++] = x;
		return;
	}
	w_bytes(b, &x, 1);
}

/* w_take: the loop thread's record buffer, empty (persist.scratch: kept between records,
 * so that a record costs no malloc); w_give puts it back. */
static struct wbuf w_take(struct jd_daemon *d)
{
	struct wbuf b = {d->persist.scratch, 0, d->persist.scratch_cap, false};

	d->persist.scratch = NULL;
	d->persist.scratch_cap = 0;
	return b;
}

static void w_give(struct jd_daemon *d, struct wbuf *b)
{
	if (d->persist.scratch || b->cap > 64 << 10) {
		free(b->p); /* a record's large payload is not kept */
	} else {
		d->persist.scratch = b->p;
		d->persist.scratch_cap = b->cap;
	}
	*b = (struct wbuf){0};
}

/* w_str: u32 length + bytes (NULL: length 0). */
static void w_str(struct wbuf *b, const char *s, size_t n)
{
	w_u32(b, (uint32_t)n);
	w_bytes(b, s, n);
}

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	bool bad;
};

static inline const unsigned char *r_take(struct rbuf *b, size_t n)
{
	const unsigned char *p;

	if (b->bad || b->len - b->off < n) {
		b->bad = true;
		return NULL;
	}
	p = b->p + b->off;
	b->off += n;
	return p;
}

static inline uint64_t r_u64(struct rbuf *b)
{
	const unsigned char *p = r_take(b, 8);

	return p ? jd_get64(p) : 0;
}

static inline uint32_t r_u32(struct rbuf *b)
{
	const unsigned char *p = r_take(b, 4);

	return p ? jd_get32(p) : 0;
}

static inline unsigned r_u8(struct rbuf *b)
{
	const unsigned char *p = r_take(b, 1);

	return p ? *p : 0;
}

static inline const char *r_str(struct rbuf *b, size_t *n)
{
	*n = r_u32(b);
	return (const char *)r_take(b, *n);
}

/* proc_start: the start time of process pid (clock ticks since boot, /proc/PID/stat
 * field 22), or 0 if it is gone.  With the boot id it names one process for good. */
static uint64_t proc_start(pid_t pid)
{
	char buf[1024];
	const char *p = jd_proc_stat(pid, buf, sizeof(buf));
	unsigned long long start = 0;

	/* the space before field 3 (state) follows the ')'; starttime is field 22 */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

static void boot_id(char out[40])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	out[0] = 0;
	if (f) {
		if (!fgets(out, 40, f))
			out[0] = 0;
		fclose(f);
	}
	out[strcspn(out, "\n")] = 0;
}

static void encode_process(struct wbuf *b, pid_t pid)
{
	char boot[40];

	boot_id(boot);
	w_u32(b, (uint32_t)pid);
	w_u64(b, proc_start(pid));
	w_str(b, boot, strlen(boot));
}

/* encode_remote: an R_REMOTE payload: the backend (1, Slurm), its job id, the tag. */
static void encode_remote(struct wbuf *b, uint32_t id, const char *tag)
{
	w_u8(b, JD_BACKEND_SLURM);
	w_u32(b, id);
	w_str(b, tag, tag ? strlen(tag) : 0);
}

/* encode_assign: an ASSIGN record's payload: the indices exec job x was given, in the
 * order of its spec's needs (their counts say which are whose). */
static void encode_assign(struct wbuf *b, const struct jd_exec_job *x)
{
	w_u32(b, x->spec.need_units);
	for (uint32_t i = 0; i < x->spec.need_units; i++)
		w_u32(b, x->assigned[i]);
}

/* ---- recording ---- */

/* wall_deadline: a job's deadline as wall-clock ms (0: none). */
static uint64_t wall_deadline(const struct jd_job *j)
{
	uint64_t now_ns = jd_now_ns(), now_ms = jd_now_ms();

	if (!j->deadline_ns)
		return 0;
	if (j->deadline_ns == UINT64_MAX)
		return UINT64_MAX;
	if (j->deadline_ns <= now_ns)
		return now_ms > 0 ? now_ms - (now_ns - j->deadline_ns) / 1000000u : 1;
	return now_ms + (j->deadline_ns - now_ns) / 1000000u;
}

static void append(struct jd_daemon *d, unsigned type, uint64_t id, const struct wbuf *b)
{
	int64_t rc;

	if (b && b->oom)
		rc = JSCHED_ENOMEM;
	else
		rc = jd_journal_append(d->persist.j, type, id, b ? b->p : NULL, b ? b->len : 0);
	if (rc < 0) {
		/* Out of memory, or a record over the journal's limit: the change is not
		 * durable; say so (the job itself goes on). */
		d->persist.append_failures++;
		jd_log(JD_LOG_ERR, "journal: record %u of job %" PRIu64 " not written: %s", type, id,
		       rc == JSCHED_ELIMIT_EXCEEDED ? "larger than a record may be" : "out of memory");
	}
}

/* encode_submit: a SUBMIT record's payload for j with its spec's JSON text spec[0..len)
 * (borrowed). */
static void encode_submit(struct wbuf *bp, const struct jd_job *j, const char *spec, size_t len)
{
	struct wbuf b = *bp;

	w_u32(&b, (uint32_t)j->uid);
	w_u32(&b, (uint32_t)j->gid);
	w_u64(&b, j->submitted_ms);
	w_u64(&b, wall_deadline(j));
	w_str(&b, j->client->name, strlen(j->client->name));
	w_u32(&b, j->n_deps);
	for (uint32_t k = 0; k < j->n_deps; k++) {
		w_u64(&b, j->deps[k].id);
		w_u8(&b, j->deps[k].on);
		w_u8(&b, j->deps[k].any);
	}
	w_str(&b, spec, len);
	/* The backend chosen at submit (the spec may name none: the client's default then,
	 * which may change before a restart). */
	w_u8(&b, j->exec ? j->exec->backend : 0);
	*bp = b;
}

/* encode_submit_json: encode_submit with the spec as JSON (borrowed). */
static void encode_submit_json(struct wbuf *bp, const struct jd_job *j, const json_t *specj)
{
	char *spec = json_dumps(specj, JSON_COMPACT);

	if (!spec) {
		bp->oom = true;
		return;
	}
	encode_submit(bp, j, spec, strlen(spec));
	free(spec);
}

static void rec_submit(struct jd_daemon *d, struct wbuf *b, const struct jd_job *j,
		       const struct jd_spec_src *spec)
{
	if (!spec || (!spec->json && !spec->text)) {
		jd_log(JD_LOG_ERR, "journal: job %" PRIu64 " submitted without its spec", j->id);
		return;
	}
	if (spec->json)
		encode_submit_json(b, j, spec->json);
	else
		encode_submit(b, j, spec->text, spec->len);
	append(d, R_SUBMIT, j->id, b);
}

/* A final state on disk: succeeded 3 ... dropped 7, whatever the table's numbering (the
 * non-final states before them may grow).  disk_state / state_of_disk convert; the
 * latter returns JD_NSTATES for a number that is not a final state. */
#define DISK_SUCCEEDED 3u
#define DISK_DROPPED 7u
_Static_assert(JD_DROPPED - JD_SUCCEEDED == DISK_DROPPED - DISK_SUCCEEDED,
	       "the final states are contiguous");

static unsigned disk_state(enum jd_state s)
{
	return (unsigned)(s - JD_SUCCEEDED) + DISK_SUCCEEDED;
}

static unsigned state_of_disk(unsigned v)
{
	return v >= DISK_SUCCEEDED && v <= DISK_DROPPED ? v - DISK_SUCCEEDED + JD_SUCCEEDED
							: JD_NSTATES;
}

/* encode_final: a FINAL record's payload for j (a result in its file read from
 * d_outfiles, the output directory). */
static void encode_final(struct wbuf *bp, const struct jd_job *j,
			 const struct jd_outfiles *d_outfiles)
{
	struct wbuf b = *bp;
	const struct jd_exec_result *x = j->exec ? &j->exec->res : NULL;
	unsigned char *out[2] = {NULL, NULL};
	size_t len[2] = {0, 0};
	bool trunc[2] = {false, false};

	/* The output: in the files (flag 8; read back from them), else the bytes. */
	for (unsigned s = 0; x && !x->files && s < 2; s++)
		if (jd_exec_stream_flat(x, s, &out[s], &len[s], &trunc[s]) < 0)
			b.oom = true;
	if (x && x->files) {
		trunc[0] = jd_outlog_truncated(&x->log, 0) || x->out.truncated;
		trunc[1] = jd_outlog_truncated(&x->log, 1) || x->err.truncated;
	}
	w_u8(&b, disk_state(j->state));
	w_u8(&b, j->cause);
	w_u8(&b, x ? x->end : 0);
	w_u8(&b, x ? (trunc[0] ? 1u : 0u) | (trunc[1] ? 2u : 0u) | (x->timed_out ? 4u : 0u) |
			     (x->files ? 8u : 0u)
		   : 0);
	w_u32(&b, x ? (uint32_t)x->exit_code : 0);
	w_u32(&b, x ? (uint32_t)x->signal : 0);
	w_u64(&b, j->finished_ms);
	w_u64(&b, j->started_ms);
	w_str(&b, j->reason, j->reason ? strlen(j->reason) : 0);
	if (j->value_file) {
		/* A large result lives in its file (jd_job_value_spill): a snapshot copies it
		 * back into the journal, which stays its durable copy. */
		char *v = malloc(j->value_len + 1);
		long got = v && d_outfiles ? jd_outfiles_value_read(d_outfiles, j->id, 0, v, j->value_len)
					   : -1;

		if (got != (long)j->value_len)
			jd_log(JD_LOG_ERR, "journal: job %" PRIu64 "'s result file cannot be read: "
			       "the snapshot keeps no result for it", j->id);
		w_str(&b, v, got == (long)j->value_len ? j->value_len : 0);
		free(v);
	} else {
		w_str(&b, j->value, j->value ? j->value_len : 0);
	}
	w_str(&b, (const char *)out[0], len[0]);
	w_str(&b, (const char *)out[1], len[1]);
	free(out[0]);
	free(out[1]);
	if (x && x->usage.has) {
		/* What its control group used (records without it end before). */
		w_u8(&b, 1);
		w_u64(&b, x->usage.cpu_us);
		w_u64(&b, x->usage.user_us);
		w_u64(&b, x->usage.system_us);
		w_u64(&b, x->usage.memory_peak);
		w_u64(&b, x->usage.memory_max);
		w_u64(&b, x->usage.oom_kills);
		w_u64(&b, x->usage.pids_max_hits);
	}
	*bp = b;
}

static void rec_final(struct jd_daemon *d, struct wbuf *b, const struct jd_job *j)
{
	encode_final(b, j, d->jobs.outfiles);
	append(d, R_FINAL, j->id, b);
}

/* encode_hook: a HOOK record's payload for job j (which has hooks). */
static void encode_hook(struct wbuf *b, const struct jd_job *j)
{
	const struct jd_hook *h = j->hook;

	w_u8(b, h->state);
	w_u32(b, (uint32_t)h->exit_code);
	w_u32(b, (uint32_t)h->signal);
	w_u64(b, h->claimed_ms);
	w_u64(b, h->finished_ms);
	w_str(b, h->reason, h->reason ? strlen(h->reason) : 0);
}

/* encode_client: a CLIENT record's payload: name's settings conf, then 0 when they are
 * its own (set_client's) or 1 when they are its config entry's again (no settings of its
 * own: recovery drops what earlier records set). */
static void encode_client(struct wbuf *b, const char *name, const struct jd_client_conf *conf,
			  bool own)
{
	w_str(b, name, strlen(name));
	w_u32(b, conf->weight);
	w_u32(b, conf->max_queued);
	w_u8(b, conf->overflow);
	/* the rest of what set_client sets (a record without it ends above) */
	w_u32(b, conf->max_running);
	w_u32(b, conf->max_processes);
	w_u64(b, conf->memory_max);
	w_u64(b, conf->pids_max);
	w_u32(b, conf->cpu_milli);
	w_u8(b, conf->backend);
	/* then whether they are its own (a record without it: they are) */
	w_u8(b, own ? 0 : 1);
}

/* want_now: ask for everything appended so far at the end of this loop iteration, with
 * no reply waiting on it ("always"; prepare_cb asks). */
static void want_now(struct jd_daemon *d)
{
	if (d->persist.hold)
		d->persist.want_held = jd_journal_last(d->persist.j);
}

/* encode_attempt: an ATTEMPT record's payload: attempt a of a job, next its next time. */
static void encode_attempt(struct wbuf *b, const struct jd_attempt *a, uint64_t next_ms)
{
	w_u64(b, a->started_ms);
	w_u64(b, a->finished_ms);
	w_u32(b, (uint32_t)a->exit_code);
	w_u32(b, (uint32_t)a->signal);
	w_u8(b, disk_state((enum jd_state)a->state));
	w_u8(b, a->cause);
	w_u64(b, next_ms);
}

void jd_persist_change(struct jd_daemon *d, const struct jd_change *ch)
{
	struct wbuf b;
	uint64_t before;

	if (!d->persist.j || d->persist.replaying)
		return;
	/* An array's elements: their parent's SUBMIT stands for theirs, and recovery
	 * releases them again; only where they got (running, final) is theirs to record,
	 * and views (core/array.h) are not recorded at all. */
	if (ch->job && ch->job->array_id &&
	    (ch->job->elem_view || ch->kind == JD_CHANGE_SUBMITTED || ch->kind == JD_CHANGE_QUEUED ||
	     ch->kind == JD_CHANGE_FORGOTTEN))
		return;
	before = jd_journal_last(d->persist.j);
	b = w_take(d);
	switch (ch->kind) {
	case JD_CHANGE_SUBMITTED:
		rec_submit(d, &b, ch->job, ch->spec);
		break;
	case JD_CHANGE_QUEUED:
		append(d, R_QUEUED, ch->job->id, NULL);
		break;
	case JD_CHANGE_RUNNING:
		w_u64(&b, ch->job->started_ms);
		append(d, R_RUNNING, ch->job->id, &b);
		if (ch->job->kind == JD_KIND_EXEC)
			want_now(d); /* a command that runs twice after a crash is worse */
		break;
	case JD_CHANGE_FINAL:
		rec_final(d, &b, ch->job);
		break;
	case JD_CHANGE_FORGOTTEN:
		append(d, R_FORGOTTEN, ch->job->id, NULL);
		if (d->jobs.outfiles && ch->job->exec)
			jd_outfiles_remove(d->jobs.outfiles, ch->job->id);
		else if (d->jobs.outfiles && ch->job->value_file)
			jd_outfiles_remove_value(d->jobs.outfiles, ch->job->id);
		break;
	case JD_CHANGE_CLIENT:
		encode_client(&b, ch->name, ch->conf, ch->own);
		append(d, R_CLIENT, 0, &b);
		break;
	case JD_CHANGE_CLIENT_FORGOTTEN:
		/* Nothing to undo: an idle client has no job, and its settings of its own,
		 * if any, stay in force for the name (its pin, core/clients.h). */
		break;
	case JD_CHANGE_NEXT_ID:
		/* The SUBMIT and FORGOTTEN records carry every id issued (persist.h). */
		break;
	case JD_CHANGE_SCHEDULED:
		/* Its not_before is in the SUBMIT record's spec: recovery schedules it again
		 * from there. */
		break;
	case JD_CHANGE_RETRYING:
	case JD_CHANGE_RETRIED:
		encode_attempt(&b, &ch->job->attempts[ch->job->n_attempts - 1],
			       ch->kind == JD_CHANGE_RETRYING ? ch->job->run->next_attempt_ms : 0);
		append(d, R_ATTEMPT, ch->job->id, &b);
		break;
	case JD_CHANGE_PROCESS:
		encode_process(&b, ch->pid);
		append(d, R_PROCESS, ch->job->id, &b);
		if (ch->job->exec && ch->job->exec->assigned && !ch->job->elem_of) {
			/* (An array's element keeps its indices in its live record only.) */
			b.len = 0;
			encode_assign(&b, ch->job->exec);
			append(d, R_ASSIGN, ch->job->id, &b);
		}
		/* So that a restart can find and kill it.  A command in a control group is
		 * found by its group's name (killed and settled at start: run/exec_cgroup.c),
		 * so its record rides the next flush (journal.batch_ms at most) instead of
		 * asking for one per command. */
		if (!jd_exec_cgroups_on(&d->runner.exec))
			want_now(d);
		break;
	case JD_CHANGE_HOOK:
		encode_hook(&b, ch->job);
		append(d, R_HOOK, ch->job->id, &b);
		break;
	case JD_CHANGE_ARRAY_STOP:
		w_u8(&b, disk_state((enum jd_state)ch->state));
		w_u8(&b, ch->cause);
		w_u64(&b, jd_now_ms());
		append(d, R_ARRAY_STOP, ch->job->id, &b);
		break;
	case JD_CHANGE_REMOTE:
		encode_remote(&b, ch->remote_id, ch->remote_tag);
		append(d, R_REMOTE, ch->job->id, &b);
		break;
	}
	w_give(d, &b);
	/* What a reply about this job waits for (jd_job.jseq): the hook's one write. */
	if (ch->job && jd_journal_last(d->persist.j) > before)
		((struct jd_job *)(uintptr_t)ch->job)->jseq = jd_journal_last(d->persist.j);
}

void jd_persist_remote_tag(const struct jd_daemon *d, char *out, size_t len)
{
	char dir[4096], host[256] = "";
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	if (d->cfg.journal_sync == JD_JOURNAL_OFF ||
	    jd_config_journal_dir(&d->cfg, dir, sizeof(dir)) < 0) {
		snprintf(out, len, "%s", d->instance);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	for (const unsigned char *p = (const unsigned char *)host; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	h = (h ^ '\n') * 1099511628211ull;
	for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	snprintf(out, len, "j%016llx", (unsigned long long)h);
}

/* hold_hook: the net layer's journal_hold (net/net.h): with sync "always", everything
 * appended so far, while some of it is not durable yet. */
static uint64_t hold_hook(void *ctx)
{
	struct jd_daemon *d = ctx;
	uint64_t last;

	if (!d->persist.j || !d->persist.hold)
		return 0;
	last = jd_journal_last(d->persist.j);
	if (last <= jd_journal_durable(d->persist.j))
		return 0;
	d->persist.want_held = last; /* asked for before the loop next sleeps (prepare_cb) */
	d->persist.want_n++;
	return last;
}

/* hold_upto_hook: the net layer's journal_hold_upto: with sync "always", seq while it
 * is not durable yet. */
static uint64_t hold_upto_hook(void *ctx, uint64_t seq)
{
	struct jd_daemon *d = ctx;

	if (!d->persist.j || !d->persist.hold || seq <= jd_journal_durable(d->persist.j))
		return 0;
	if (seq > d->persist.want_held)
		d->persist.want_held = seq; /* asked for before the loop next sleeps */
	d->persist.want_n++;
	return seq;
}

/* flusher_cpu: where the journal's flusher is to run (journal.cpu), or -1 for any CPU,
 * with why in persist.cpu_why.  "auto" is the CPU that takes the journal disk's
 * interrupts when there is one (core/diskcpu.h says what that saves). */
static int flusher_cpu(struct jd_daemon *d)
{
	struct jd_persist *p = &d->persist;
	char why[sizeof(p->cpu_why) - 32];
	int cpu = d->cfg.journal_cpu;

	if (cpu == JD_JOURNAL_CPU_ANY) {
		snprintf(p->cpu_why, sizeof(p->cpu_why), "journal.cpu \"any\"");
		return -1;
	}
	if (cpu >= 0) {
		snprintf(p->cpu_why, sizeof(p->cpu_why), "journal.cpu %d", cpu);
		return cpu;
	}
	cpu = jd_disk_irq_cpu(p->dir, why, sizeof(why));
	snprintf(p->cpu_why, sizeof(p->cpu_why), "auto: %s", why);
	return cpu;
}

/* lazy_cb: records nobody waited on for journal.batch_ms: ask for them now. */
static void lazy_cb(uv_timer_t *t)
{
	struct jd_daemon *d = t->data;

	if (d->persist.j)
		jd_journal_want(d->persist.j, jd_journal_last(d->persist.j), 0);
}

/* loop_wait: the flush asked for is a group's and is taken now: poll for its end, up to
 * twice the last flush's write and sync (io_ns) from now. */
static void loop_wait(struct jd_daemon *d, uint64_t io_ns)
{
	uint64_t bound = 2 * io_ns / 1000u;

	d->persist.loop_waits++;
	if (bound > JD_JOURNAL_GATHER_MAX_US)
		bound = JD_JOURNAL_GATHER_MAX_US;
	jd_server_poll_for(&d->net, (uint32_t)bound);
}

/* prepare_cb: the loop is about to wait for I/O, everything read in this iteration
 * handled: ask the journal to flush what the held replies wait for (one flush for the
 * whole iteration's records), and start the bound on the records nobody waits on.
 *
 * A group's flush (replies of two or more asks since the last notify) is waited for
 * awake once the flusher gathers for no one more (jd_journal_want's answer: before that
 * the submitters still on their way back run on this CPU and wake the loop there): the
 * loop polls without blocking (jd_server_poll_for) for up to twice the last flush's
 * write and sync (at most JD_JOURNAL_GATHER_MAX_US), the bound of the flusher's own
 * gather.  Asleep in epoll_wait, the loop's CPU halts on this VM while the flush is
 * in flight (nothing else runs there: its submitters wait for it too), and the
 * flusher's notify (an eventfd write from the disk's CPU) then costs the host's wake-up
 * of that vCPU: the hand-off was 25-50 of a 360-600 us cycle at 8 submitters.  A lone
 * waiter is not polled for (one submitter: its daemon CPU per submit doubled with
 * loop_poll_us 300, for no rate); nor while the workers need the CPUs (poll_room).  The
 * window closes at its bound, or when another thread takes the CPU (POLL_GAP_NS), as the
 * window after a request does; daemon/README.md has the figures. */
static void prepare_cb(uv_prepare_t *h)
{
	struct jd_daemon *d = h->data;
	struct jd_persist *p = &d->persist;
	uint64_t last;

	if (!p->j)
		return;
	if (p->want_held > p->want_asked) {
		bool due = jd_journal_want(p->j, p->want_held, p->want_n);

		p->want_asked = p->want_held;
		p->group_n += p->want_n;
		p->want_n = 0;
		if (due && p->group_n >= 2)
			loop_wait(d, jd_journal_last_io_ns(p->j));
	}
	last = jd_journal_last(p->j);
	if (last > p->want_asked && last > jd_journal_durable(p->j) &&
	    !uv_is_active((uv_handle_t *)&p->lazy_timer))
		uv_timer_start(&p->lazy_timer, lazy_cb, d->cfg.journal_batch_ms, 0);
}

/* refuse_hook: the net layer's journal_refuse: the journal's fault, if any. */
static int refuse_hook(void *ctx, char *why, size_t len)
{
	struct jd_daemon *d = ctx;

	return d->persist.j ? jd_journal_status(d->persist.j, why, len) : 0;
}

static json_t *metrics_hook(void *ctx)
{
	return jd_persist_metrics(ctx);
}

static void snap_settle(struct jd_daemon *d);

/* notify_cb: the journal's threads: wake the loop.  Through an eventfd of its own
 * (core/wake.h), not libuv's uv_async: the loop, woken by uv_async_send's write, spins
 * until the sender has also set the handle's flag after it, and the flusher is often
 * preempted between the two by the loop thread it woke on its own CPU (sched_yield 0.33
 * times per durable submit at one submitter, and 2% of the daemon's samples in that
 * spin at 8). */
static void notify_cb(void *arg)
{
	jd_wake_send(arg);
}

/* wake_cb: the loop thread: send the replies now durable, and log a fault's start and
 * end. */
static void wake_cb(struct jd_wake *w)
{
	struct jd_daemon *d = w->data;
	char why[600];
	int st;
	struct jd_journal_stats js;
	uint64_t t0;

	jd_loop_woke();

	if (!d->persist.j)
		return;
	jd_journal_stats(d->persist.j, &js);
	t0 = jd_now_ns();
	if (js.notified_ns && t0 > js.notified_ns) {
		d->persist.handoffs++;
		d->persist.handoff_ns += t0 - js.notified_ns;
	}
	d->persist.group_n = 0;
	jd_server_release_held(&d->net, jd_journal_durable(d->persist.j));
	d->persist.release_ns += jd_now_ns() - t0;
	if (!d->persist.snap_ids && jd_journal_snap_state(d->persist.j) != JD_SNAP_NONE)
		snap_settle(d);
	st = jd_journal_status(d->persist.j, why, sizeof(why));
	if (st != d->persist.status) {
		if (st)
			jd_log(JD_LOG_ERR, "journal: %s; new submits are refused (journal_unavailable) "
			       "until it can be written", why);
		else
			jd_log(JD_LOG_INFO, "journal: writable again; submits accepted");
		d->persist.status = st;
	}
}

/* ---- recovery ---- */

struct proc_rec {
	uint64_t id, start;
	pid_t pid;
	bool same_boot;
};

struct rec_state {
	struct jd_daemon *d;
	struct proc_rec *procs;		/* commands recorded running (the last per job) */
	size_t n_procs, cap_procs;
	char boot[40];
	struct jd_job **byid;		/* recovered jobs by id (NULL: none, or forgotten) */
	uint64_t cap, max_id;
	uint64_t *final_order;		/* ids in the order their FINAL records came */
	size_t n_final, cap_final;
	uint64_t now_ns, now_ms;
	uint64_t *arrays;		/* the ids of recovered array parents, increasing */
	size_t n_arrays, cap_arrays;
	/* the last submit record's spec, parsed: the next one with the same text (a batch's
	 * jobs, a client that submits one kind of job) is made from it without parsing */
	struct {
		char *text;
		size_t len;
		json_t *obj;
		struct jp_job_spec sp;
	} last;
	/* A call job's spec scanned, not parsed (scan_call): the strings it names, and the
	 * args' text of the jobs made so, by id (a job that is to run again parses them at
	 * restore; a final one never needs them) */
	char fn[JP_NAME_MAX + 1], name[JP_NAME_MAX + 1];
	size_t fn_len;			/* of fn (a scan that stops part way leaves it right) */
	struct lazy_args {
		uint64_t off;		/* in lazy_text */
		uint32_t len;		/* 0: none */
	} *lazy;
	uint64_t cap_lazy;
	char *lazy_text;		/* one buffer for them all (freed whole after restore) */
	size_t lazy_len, lazy_cap;
	uint64_t scanned;		/* submit records made by scan_call */
	/* the last submit record's client (by its name) and call handler (replay_submit) */
	struct jd_client *cl_last;
	char cl_name[65];
	size_t cl_len;
	const struct jsched_handler *h_last;
	/* the last spec scan_call read, whole (fn and name still in st->fn / st->name): the
	 * next record with the same text (a batch of one call spec) takes it without a scan */
	struct {
		char *text;		/* NULL: none */
		size_t len, cap;
		/* what the last scan read: made by jp_job_spec_init at the start, then written
		 * by each scan (kind, priority, cost, fn, name) and by nothing else */
		struct jp_job_spec sp;
		size_t args_off, args_len;
	} scan;
	int rc;
	char *err;
	size_t errlen;
};

static int slot_grow(struct rec_state *st, uint64_t id, struct jd_job ***out);

/* slot: *out is where job id's recovered job goes (grown to hold it); 0 or JSCHED_ENOMEM.
 * Every record looks its job up here: the usual case, an id already in range, is inline. */
static inline int slot(struct rec_state *st, uint64_t id, struct jd_job ***out)
{
	if (id >= st->cap)
		return slot_grow(st, id, out);
	if (id > st->max_id)
		st->max_id = id;
	*out = &st->byid[id];
	return 0;
}

static int slot_grow(struct rec_state *st, uint64_t id, struct jd_job ***out)
{
	if (id >= st->cap) {
		uint64_t cap = st->cap ? st->cap : 4096;
		struct jd_job **v;

		while (cap <= id)
			cap *= 2;
		v = realloc(st->byid, cap * sizeof(*v));
		if (!v)
			return JSCHED_ENOMEM;
		memset(v + st->cap, 0, (cap - st->cap) * sizeof(*v));
		st->byid = v;
		st->cap = cap;
	}
	if (id > st->max_id)
		st->max_id = id;
	*out = &st->byid[id];
	return 0;
}

/* mono_of: the monotonic time of a wall-clock ms in the past (for the histograms'
 * and retention's clocks), at least 1. */
static uint64_t mono_of(const struct rec_state *st, uint64_t wall_ms)
{
	uint64_t ago = st->now_ms > wall_ms ? (st->now_ms - wall_ms) * 1000000u : 0;

	return st->now_ns > ago ? st->now_ns - ago : 1;
}

/* deps_bad: a dep list that names id 0 or an "on" out of range. */
static bool deps_bad(const struct jd_dep *deps, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (deps[k].on > JD_ON_ANY || deps[k].id == 0)
			return true;
	return false;
}

/* room_u64: room for one more in the vector *v of *cap (n in use), doubling from
 * `first`.  0 or JSCHED_ENOMEM. */
static int room_u64(uint64_t **v, size_t *cap, size_t n, size_t first)
{
	size_t ncap;
	uint64_t *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	if (!(nv = realloc(*v, ncap * sizeof(*nv))))
		return JSCHED_ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* array_seen: note parent id among the recovered arrays (kept increasing: a snapshot
 * writes jobs in no particular order). */
static int array_seen(struct rec_state *st, uint64_t id)
{
	size_t at = st->n_arrays;

	if (room_u64(&st->arrays, &st->cap_arrays, st->n_arrays, 16) < 0)
		return JSCHED_ENOMEM;
	while (at > 0 && st->arrays[at - 1] > id)
		at--;
	if (at > 0 && st->arrays[at - 1] == id)
		return 0;
	memmove(st->arrays + at + 1, st->arrays + at, (st->n_arrays - at) * sizeof(*st->arrays));
	st->arrays[at] = id;
	st->n_arrays++;
	return 0;
}

/* array_of: the recovered parent whose array holds element id, or NULL; *pos its
 * position. */
static struct jd_job *array_of(const struct rec_state *st, uint64_t id, uint64_t *pos)
{
	size_t lo = 0, hi = st->n_arrays;
	struct jd_job *p;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->arrays[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || st->arrays[lo - 1] >= st->cap || !(p = st->byid[st->arrays[lo - 1]]) ||
	    !p->arr || id - p->id > p->arr->n)
		return NULL;
	*pos = id - p->id - 1;
	return p;
}

/* last_clear: forget the last submit record's parsed spec. */
static void last_clear(struct rec_state *st)
{
	if (st->last.obj)
		jp_job_spec_clear(&st->last.sp);
	json_decref(st->last.obj);
	free(st->last.text);
	memset(&st->last, 0, sizeof(st->last));
}

/* last_spec: st->last.sp is the spec of a submit record whose JSON text is text[0..len):
 * parsed unless it is the text of the last one (jansson's parse is most of a recovery's
 * time, and a journal holds runs of jobs submitted with the same spec).  Returns 0, or
 * JSCHED_EINVAL for a spec that does not parse (st->last then empty). */
static int last_spec(struct rec_state *st, const char *text, size_t len)
{
	static const char *const resolved[] = {"after", "any_of", "deadline_in_ms",
					       "deadline_at_ms", "ref"};
	struct jp_limits lim;
	struct jp_err perr;

	if (st->last.obj && st->last.len == len && memcmp(st->last.text, text, len) == 0)
		return 0;
	last_clear(st);
	if (!(st->last.text = malloc(len ? len : 1)))
		return JSCHED_ENOMEM;
	memcpy(st->last.text, text, len);
	st->last.len = len;
	st->last.obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	/* The text as the client sent it holds its deps and deadline, which the record
	 * has resolved (ids, the deadline's time), and its ref within the request. */
	for (size_t i = 0; st->last.obj && i < sizeof(resolved) / sizeof(resolved[0]); i++)
		json_object_del(st->last.obj, resolved[i]);
	/* The limits in force at the time were checked then: accept what was accepted. */
	jp_limits_default(&lim);
	lim.argv_items = lim.env_items = lim.stdin_bytes = lim.deps_per_job = UINT32_MAX;
	lim.array_elements = UINT32_MAX;
	if (!st->last.obj || jp_job_spec_parse(st->last.obj, "job", &lim, &st->last.sp, &perr) < 0) {
		json_decref(st->last.obj);
		st->last.obj = NULL;
		last_clear(st);
		return JSCHED_EINVAL;
	}
	return 0;
}

/* ---- a call job's spec, scanned ---- */

/* sc_ws: past JSON whitespace. */
static const char *sc_ws(const char *p, const char *e)
{
	if (p < e && (unsigned char)*p > ' ')
		return p; /* the usual case: compact JSON (libjsched's) */
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* sc_string: the string starting at p (its opening quote), its bytes in [*s, *s + *n):
 * returns the byte after its closing quote, or NULL at the end; *esc says whether it has
 * an escape (then [*s, *s + *n) is its raw text). */
static const char *sc_string(const char *p, const char *e, const char **s, size_t *n, bool *esc)
{
	const char *q = ++p;

	*esc = false;
	while (q < e && *q != '"') {
		if (*q == '\\') {
			*esc = true;
			if (++q == e)
				return NULL;
		}
		q++;
	}
	if (q == e)
		return NULL;
	*s = p;
	*n = (size_t)(q - p);
	return q + 1;
}

/* sc_value: past the JSON value at p (text jansson accepted once: only its extent is
 * found), or NULL. */
static const char *sc_value(const char *p, const char *e)
{
	const char *s;
	size_t n, depth = 0;
	bool esc;

	if (p == e)
		return NULL;
	if (*p == '"')
		return sc_string(p, e, &s, &n, &esc);
	if (*p != '{' && *p != '[') {
		const char *q = p;

		while (q < e && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\t' &&
		       *q != '\n' && *q != '\r')
			q++;
		return q > p ? q : NULL;
	}
	while (p < e) {
		if (*p == '"') {
			if (!(p = sc_string(p, e, &s, &n, &esc)))
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

/* scan_call: the spec text[0..len) of a submit record, if it is a call job's with only
 * the members a scan reads (kind, fn, name, priority, cost, args, and those the record
 * holds resolved: after, any_of, deadline_*, ref; strings without escapes), as *sp (made
 * by jp_job_spec_init before: only the members a scan reads are written), its
 * strings in st->fn / st->name and its args' text in [*args, *args + *args_len) (NULL:
 * none).  Returns false for any other spec: it is parsed (last_spec).  The text was
 * parsed and checked when it was submitted; a scan of its members costs a small part of
 * building and freeing its JSON tree, which recovery would do for every job whose spec
 * differs from the one before (names and args of their own). */
static bool scan_call(struct rec_state *st, const char *text, size_t len, struct jp_job_spec *sp,
		      const char **args, size_t *args_len)
{
	const char *p = text, *e = text + len;
	bool call = false, have_fn = false, esc;
	unsigned seen = 0;

	/* *sp was made by jp_job_spec_init once (jd_persist_start): a scan writes these alone */
	sp->kind = JP_KIND_EXEC;
	sp->priority = JP_PRIO_NORMAL;
	sp->cost = 1;
	sp->fn = sp->name = NULL;
	*args = NULL;
	*args_len = 0;
	p = sc_ws(p, e);
	if (p == e || *p++ != '{')
		return false;
	for (;;) {
		const char *v, *vs;
		size_t vn;
		unsigned bit;

		p = sc_ws(p, e);
		/* The member's name, quotes and all, against each the scan reads (the first
		 * four are the ones libjsched writes); any other, or one written with an
		 * escape, is not a scan's. */
#define KEY(s) ((size_t)(e - p) >= sizeof("\"" s "\"") - 1 && \
		memcmp(p, "\"" s "\"", sizeof("\"" s "\"") - 1) == 0 && \
		(p += sizeof("\"" s "\"") - 1, true))
		if (KEY("kind"))
			bit = 1;
		else if (KEY("fn"))
			bit = 2;
		else if (KEY("args"))
			bit = 32;
		else if (KEY("name"))
			bit = 4;
		else if (KEY("priority"))
			bit = 8;
		else if (KEY("cost"))
			bit = 16;
		else if (KEY("after"))
			bit = 64;
		else if (KEY("any_of"))
			bit = 128;
		else if (KEY("ref"))
			bit = 256;
		else if (KEY("deadline_in_ms"))
			bit = 512;
		else if (KEY("deadline_at_ms"))
			bit = 1024;
		else
			return false; /* a member the scan does not read */
#undef KEY
		if (seen & bit)
			return false;
		seen |= bit;
		p = sc_ws(p, e);
		if (p == e || *p++ != ':')
			return false;
		p = sc_ws(p, e);
		if (p == e)
			return false;
		if (bit == 1) {
			if ((size_t)(e - p) < 6 || memcmp(p, "\"call\"", 6) != 0)
				return false;
			p += 6;
			call = true;
		} else if (bit <= 8) {
			/* A string without escapes: jansson accepted the text, so it holds no
			 * control character either (no NUL). */
			if (*p != '"' || !(p = sc_string(p, e, &v, &vn, &esc)) || esc)
				return false;
			if (bit == 8) {
				char pr[16];
				int pv;

				if (vn >= sizeof(pr))
					return false;
				memcpy(pr, v, vn);
				pr[vn] = 0;
				if ((pv = jp_priority_from_name(pr)) < 0)
					return false;
				sp->priority = (enum jp_priority)pv;
			} else if (vn > JP_NAME_MAX || (bit == 2 && vn == 0)) {
				return false;
			} else if (bit == 2) {
				/* the last spec's fn, most often: kept as it is */
				if (st->fn_len != vn || memcmp(st->fn, v, vn) != 0) {
					memcpy(st->fn, v, vn);
					st->fn[vn] = 0;
					st->fn_len = vn;
				}
				sp->fn = st->fn;
				have_fn = true;
			} else {
				memcpy(st->name, v, vn);
				st->name[vn] = 0;
				sp->name = st->name;
			}
		} else if (bit == 16) {
			uint64_t c = 0;

			for (vs = p; p < e && *p >= '0' && *p <= '9' && p - vs < 8; p++)
				c = c * 10 + (uint64_t)(*p - '0');
			if (p == vs || c < 1 || c > JP_COST_MAX ||
			    (p < e && *p != ',' && *p != '}' && *p != ' ' && *p != '\n' && *p != '\t' &&
			     *p != '\r'))
				return false;
			sp->cost = (uint32_t)c;
		} else {
			vs = p;
			if (!(p = sc_value(p, e)))
				return false;
			if (bit == 32 && !(p - vs == 4 && memcmp(vs, "null", 4) == 0)) {
				*args = vs;
				*args_len = (size_t)(p - vs);
			}
		}
		p = sc_ws(p, e);
		if (p == e)
			return false;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p++ != '}')
			return false;
		break;
	}
	if (sc_ws(p, e) != e || !call || !have_fn)
		return false;
	sp->kind = JP_KIND_CALL;
	return true;
}

/* scan_forget: no spec text kept (st->scan.sp stays: the next scan sets what it reads). */
static void scan_forget(struct rec_state *st)
{
	free(st->scan.text);
	st->scan.text = NULL;
	st->scan.len = st->scan.cap = st->scan.args_off = st->scan.args_len = 0;
}

/* scan_keep: remember the spec text[0..len) that scan_call read as st->scan.sp (args at args,
 * args_len bytes, inside text), for the next record with the same text.  0 or
 * JSCHED_ENOMEM. */
static int scan_keep(struct rec_state *st, const char *text, size_t len, const char *args,
		     size_t args_len)
{
	if (len > st->scan.cap || !st->scan.text) {
		char *t = realloc(st->scan.text, len ? len : 1);

		if (!t) {
			scan_forget(st); /* its text is not st->scan.sp's */
			return JSCHED_ENOMEM;
		}
		st->scan.text = t;
		st->scan.cap = len ? len : 1;
	}
	memcpy(st->scan.text, text, len);
	st->scan.len = len;
	st->scan.args_off = args ? (size_t)(args - text) : 0;
	st->scan.args_len = args ? args_len : 0;
	return 0;
}

/* lazy_keep: job id (made by scan_call) has args' text a[0..n): kept until restore, in
 * one buffer (a million small copies would stay behind in the heap, between the jobs,
 * once freed). */
static int lazy_keep(struct rec_state *st, uint64_t id, const char *a, size_t n)
{
	if (n > UINT32_MAX)
		return JSCHED_EINVAL;
	if (id >= st->cap_lazy) {
		uint64_t cap = st->cap_lazy ? st->cap_lazy : 4096;
		struct lazy_args *v;

		while (cap <= id)
			cap *= 2;
		if (!(v = realloc(st->lazy, cap * sizeof(*v))))
			return JSCHED_ENOMEM;
		memset(v + st->cap_lazy, 0, (cap - st->cap_lazy) * sizeof(*v));
		st->lazy = v;
		st->cap_lazy = cap;
	}
	if (st->lazy_len + n > st->lazy_cap) {
		size_t cap = st->lazy_cap ? st->lazy_cap * 2 : 1u << 20;
		char *v;

		while (cap < st->lazy_len + n)
			cap *= 2;
		if (!(v = realloc(st->lazy_text, cap)))
			return JSCHED_ENOMEM;
		st->lazy_text = v;
		st->lazy_cap = cap;
	}
	memcpy(st->lazy_text + st->lazy_len, a, n);
	st->lazy[id] = (struct lazy_args){st->lazy_len, (uint32_t)n};
	st->lazy_len += n;
	return 0;
}

/* lazy_args: the args of job j (made by scan_call, to run again), parsed now from the
 * text kept; 0 or a negative code. */
static int lazy_args(struct rec_state *st, struct jd_job *j)
{
	struct lazy_args *l = j->id < st->cap_lazy ? &st->lazy[j->id] : NULL;
	json_t *a;

	if (!l || !l->len)
		return 0;
	a = json_loadb(st->lazy_text + l->off, l->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
		       NULL);
	l->len = 0;
	if (!a)
		return JSCHED_EINVAL;
	json_decref(j->args);
	j->args = a;
	return 0;
}

static int replay_submit(struct rec_state *st, const struct jd_journal_rec *r)
{
	struct jd_daemon *d = st->d;
	struct rbuf b = {r->data, r->len, 0, false};
	uid_t uid = (uid_t)r_u32(&b);
	gid_t gid = (gid_t)r_u32(&b);
	uint64_t sub_ms = r_u64(&b), dl_ms = r_u64(&b);
	size_t nlen, slen;
	const char *cname = r_str(&b, &nlen), *spec;
	uint32_t nd = r_u32(&b);
	struct jd_dep *deps = NULL;
	char name[65];
	struct jd_client *cl;
	struct jp_job_spec exec_sp;
	const struct jp_job_spec *sp;
	struct jd_job **sl, *j = NULL;
	const struct jsched_handler *h;
	const char *args = NULL;
	size_t args_len = 0;
	bool scanned = false;
	unsigned backend;
	int rc = JSCHED_EINVAL;

	if (b.bad || nlen > 64 || nd > 1u << 20)
		goto bad;
	memcpy(name, cname, nlen);
	name[nlen] = 0;
	if (nd && !(deps = calloc(nd, sizeof(*deps))))
		return JSCHED_ENOMEM;
	for (uint32_t k = 0; k < nd; k++) {
		deps[k].id = r_u64(&b);
		deps[k].on = (uint8_t)r_u8(&b);
		deps[k].any = r_u8(&b) != 0;
	}
	spec = r_str(&b, &slen);
	if (b.bad || deps_bad(deps, nd))
		goto bad;
	/* A record from before the chosen backend was recorded ends here. */
	backend = b.off < b.len ? r_u8(&b) : 0;
	/* sp: borrowed (the last one parsed, or scanned), job_from_spec copies */
	if (st->last.obj && st->last.len == slen && memcmp(st->last.text, spec, slen) == 0) {
		sp = &st->last.sp;
	} else if (st->scan.text && st->scan.len == slen && memcmp(st->scan.text, spec, slen) == 0) {
		sp = &st->scan.sp;
		if (st->scan.args_len) {
			args = spec + st->scan.args_off;
			args_len = st->scan.args_len;
		}
		scanned = true;
	} else if (scan_call(st, spec, slen, &st->scan.sp, &args, &args_len)) {
		sp = &st->scan.sp;
		scanned = true;
		if ((rc = scan_keep(st, spec, slen, args, args_len)) < 0)
			goto out;
	} else {
		/* a scan that stopped part way may have written over st->fn / st->name */
		scan_forget(st);
		if ((rc = last_spec(st, spec, slen)) == JSCHED_ENOMEM)
			goto out;
		if (rc < 0)
			goto bad;
		sp = &st->last.sp;
	}
	if (sp->kind == JP_KIND_EXEC && backend) {
		exec_sp = *sp;
		exec_sp.backend = jd_backend_name(backend); /* as chosen then (or local if gone) */
		sp = &exec_sp;
	}
	/* The last record's client and handler, most often the same again (a client's run
	 * of jobs, a batch): looked up only when they differ. */
	if (st->cl_last && st->cl_len == nlen && memcmp(st->cl_name, name, nlen) == 0) {
		cl = st->cl_last;
	} else if ((cl = jd_client_get(&d->clients, name))) {
		st->cl_last = cl;
		memcpy(st->cl_name, name, nlen);
		st->cl_len = nlen;
	}
	if (sp->kind == JP_KIND_EXEC)
		h = &jd_exec_handler;
	else if (st->h_last && strcmp(st->h_last->name, sp->fn) == 0)
		h = st->h_last;
	else if ((h = jd_handler_find(&d->modules, sp->fn)))
		st->h_last = h;
	j = cl ? jd_job_from_spec(&d->jobs, &d->runner, cl, uid, gid, sp, h, st->now_ns, st->now_ms)
	       : NULL;
	if (!j) {
		rc = JSCHED_ENOMEM;
		goto out;
	}
	j->id = r->id;
	j->submitted_ms = sub_ms;
	j->submitted_ns = mono_of(st, sub_ms);
	j->deadline_ms = dl_ms == UINT64_MAX ? 0 : dl_ms;
	if (dl_ms == UINT64_MAX)
		j->deadline_ns = UINT64_MAX;
	else if (dl_ms)
		j->deadline_ns = dl_ms > st->now_ms ? st->now_ns + (dl_ms - st->now_ms) * 1000000u
						       : (st->now_ns ? st->now_ns : 1);
	j->deps = deps;
	j->n_deps = nd;
	deps = NULL;
	if ((rc = slot(st, r->id, &sl)) < 0)
		goto out;
	if (*sl) {
		/* In the snapshot already (it was taken while records kept coming): the
		 * snapshot's is the newer state. */
		rc = 0;
		goto out;
	}
	*sl = j;
	if (scanned) {
		st->scanned++;
		if (args && (rc = lazy_keep(st, r->id, args, args_len)) < 0) {
			*sl = NULL;
			goto out;
		}
	}
	if (j->arr) {
		struct jd_job **last;

		/* Its elements' ids were issued with it. */
		if ((rc = slot(st, r->id + j->arr->n, &last)) < 0 || (rc = array_seen(st, r->id)) < 0) {
			*sl = NULL;
			goto out;
		}
	}
	j = NULL;
	rc = 0;
	goto out;
bad:
	snprintf(st->err, st->errlen, "journal: record %" PRIu64 " (submit of job %" PRIu64
		 ") cannot be read", r->seq, r->id);
	rc = JSCHED_EIO;
out:
	if (j)
		jd_job_discard(j);
	free(deps);
	return rc;
}

static int replay_final(struct rec_state *st, struct jd_job *j, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	unsigned state = state_of_disk(r_u8(&b)), cause = r_u8(&b), end = r_u8(&b), flags = r_u8(&b);
	int exit_code = (int)r_u32(&b), sig = (int)r_u32(&b);
	uint64_t fin = r_u64(&b), started = r_u64(&b);
	size_t rl, vl, ol, el;
	const char *reason = r_str(&b, &rl), *value = r_str(&b, &vl), *out = r_str(&b, &ol),
		   *errs = r_str(&b, &el);

	if (b.bad || state < JD_SUCCEEDED || state >= JD_NSTATES || cause >= JP_NCAUSES)
		return JSCHED_EIO;
	j->state = (enum jd_state)state;
	j->cause = (enum jp_cause)cause;
	j->finished_ms = fin;
	j->finished_ns = mono_of(st, fin);
	if (started) {
		j->started_ms = started;
		j->started_ns = mono_of(st, started);
	}
	free(j->reason);
	j->reason = rl ? strndup(reason, rl) : NULL;
	free(j->value);
	j->value = vl ? strndup(value, vl) : NULL;
	j->value_len = j->value ? vl : 0;
	if (j->exec) {
		struct jd_exec_result *x = &j->exec->res;

		x->end = (enum jd_exec_end)end;
		x->exit_code = exit_code;
		x->signal = sig;
		x->out.truncated = flags & 1;
		x->err.truncated = flags & 2;
		x->timed_out = flags & 4;
		x->files = flags & 8; /* in the output files: read when asked for */
		x->loaded = false;
		free(x->out.data);
		free(x->err.data);
		x->out.data = ol ? malloc(ol) : NULL;
		x->err.data = el ? malloc(el) : NULL;
		x->out.len = x->out.data ? ol : 0;
		x->err.len = x->err.data ? el : 0;
		if (x->out.data)
			memcpy(x->out.data, out, ol);
		if (x->err.data)
			memcpy(x->err.data, errs, el);
		if (b.off < b.len && r_u8(&b) == 1) {
			struct jd_exec_usage u = {.has = true};

			u.cpu_us = r_u64(&b);
			u.user_us = r_u64(&b);
			u.system_us = r_u64(&b);
			u.memory_peak = r_u64(&b);
			u.memory_max = r_u64(&b);
			u.oom_kills = r_u64(&b);
			u.pids_max_hits = r_u64(&b);
			if (b.bad)
				return JSCHED_EIO;
			x->usage = u;
		}
	}
	/* Final: what only running needs goes (a job replay ran again has one). */
	jd_job_drop_run(j);
	if (room_u64(&st->final_order, &st->cap_final, st->n_final, 4096) < 0)
		return JSCHED_ENOMEM;
	st->final_order[st->n_final++] = j->id;
	return 0;
}

static int replay_client(struct rec_state *st, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	size_t nlen;
	const char *n = r_str(&b, &nlen);
	struct jd_client_conf conf;
	bool own = true;
	char name[65];

	memset(&conf, 0, sizeof(conf));
	conf.weight = r_u32(&b);
	conf.max_queued = r_u32(&b);
	conf.overflow = (enum jd_overflow)r_u8(&b);
	if (!b.bad && b.off < b.len) {
		conf.max_running = r_u32(&b);
		conf.max_processes = r_u32(&b);
		conf.memory_max = r_u64(&b);
		conf.pids_max = r_u64(&b);
		conf.cpu_milli = r_u32(&b);
		conf.backend = (uint8_t)r_u8(&b);
	}
	if (!b.bad && b.off < b.len)
		own = r_u8(&b) == 0;
	if (b.bad || nlen >= sizeof(conf.name) || conf.weight == 0 ||
	    conf.overflow > JD_OVERFLOW_BLOCK || conf.backend > JD_BACKEND_AUTO)
		return JSCHED_EIO;
	memcpy(name, n, nlen);
	name[nlen] = 0;
	memcpy(conf.name, name, nlen + 1);
	return own ? jd_client_set(&st->d->clients, name, &conf)
		   : jd_client_reset(&st->d->clients, name);
}

/* replay_process: a PROCESS record: a command's process group, kept for the restore
 * (which kills one that outlived the daemon). */
static int replay_process(struct rec_state *st, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	struct proc_rec pr = {.id = r->id};
	size_t bl;
	const char *boot;

	pr.pid = (pid_t)r_u32(&b);
	pr.start = r_u64(&b);
	boot = r_str(&b, &bl);
	if (b.bad)
		return JSCHED_EIO;
	pr.same_boot = bl && bl == strlen(st->boot) && memcmp(boot, st->boot, bl) == 0;
	if (st->n_procs == st->cap_procs) {
		size_t cap = st->cap_procs ? st->cap_procs * 2 : 64;
		struct proc_rec *v = realloc(st->procs, cap * sizeof(*v));

		if (!v)
			return JSCHED_ENOMEM;
		st->procs = v;
		st->cap_procs = cap;
	}
	st->procs[st->n_procs++] = pr;
	return 0;
}

/* replay_element: a RUNNING or FINAL record of element pos of array p, into its slot. */
static int replay_element(struct jd_job *p, uint64_t pos, const struct jd_journal_rec *r)
{
	struct jd_array_elem *e = &p->arr->el[pos];
	struct rbuf b = {r->data, r->len, 0, false};

	if (jd_state_final(e->state))
		return 0; /* one final state, once */
	if (r->type == R_RUNNING) {
		e->flags |= JD_ELEM_WAS_RUNNING;
		e->started_ms = r_u64(&b);
		return b.bad ? JSCHED_EIO : 0;
	}
	if (r->type == R_FINAL) {
		struct jd_array_elem v = {0};
		unsigned flags;
		size_t rl, vl, ol, el;
		const char *reason, *value, *out, *errs;
		json_t *val;
		int32_t sig;
		int rc;

		v.state = (uint8_t)state_of_disk(r_u8(&b));
		v.cause = (uint8_t)r_u8(&b);
		v.end = (uint8_t)r_u8(&b);
		flags = r_u8(&b);
		v.code = (int32_t)r_u32(&b);	/* the exit code, */
		sig = (int32_t)r_u32(&b);	/* or the signal */
		if (v.end == JD_EXEC_SIGNALED)
			v.code = sig;
		v.finished_ms = r_u64(&b);
		v.started_ms = r_u64(&b);
		reason = r_str(&b, &rl);
		value = r_str(&b, &vl);
		out = r_str(&b, &ol);
		errs = r_str(&b, &el);
		if (b.bad || v.state < JD_SUCCEEDED || v.state >= JD_NSTATES || v.cause >= JP_NCAUSES)
			return JSCHED_EIO;
		v.flags = (uint8_t)((flags & 1 ? JD_ELEM_OUT_TRUNC : 0) | (flags & 2 ? JD_ELEM_ERR_TRUNC : 0) |
				    (flags & 4 ? JD_ELEM_TIMED_OUT : 0));
		val = vl ? json_loadb(value, vl, JSON_DECODE_ANY, NULL) : NULL;
		rc = jd_array_elem_restore(p->arr, pos, &v, reason, rl, val, out, ol, errs, el);
		json_decref(val);
		return rc;
	}
	return 0;
}

/* replay_hook: a HOOK record: where job j's hooks got. */
static int replay_hook(struct jd_job *j, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	struct jd_hook *h = j->hook;
	unsigned state = r_u8(&b);
	int exit_code = (int)r_u32(&b), sig = (int)r_u32(&b);
	uint64_t claimed = r_u64(&b), finished = r_u64(&b);
	size_t rl;
	const char *reason = r_str(&b, &rl);

	if (b.bad || state > JD_HOOK_FAILED)
		return JSCHED_EIO;
	h->state = (uint8_t)state;
	h->exit_code = exit_code;
	h->signal = sig;
	h->claimed_ms = claimed;
	h->finished_ms = finished;
	free(h->reason);
	h->reason = rl ? strndup(reason, rl) : NULL;
	return 0;
}

/* replay_array_stop: an ARRAY_STOP record: the elements of array p not recorded since
 * (neither running nor final) ended so. */
static int replay_array_stop(struct jd_job *p, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	struct jd_array_elem v = {0};

	v.state = (uint8_t)state_of_disk(r_u8(&b));
	v.cause = (uint8_t)r_u8(&b);
	v.finished_ms = r_u64(&b);
	if (b.bad || v.state < JD_SUCCEEDED || v.state >= JD_NSTATES || v.cause >= JP_NCAUSES)
		return JSCHED_EIO;
	for (uint64_t pos = 0; pos < p->arr->n; pos++) {
		const struct jd_array_elem *e = &p->arr->el[pos];

		if (!jd_state_final(e->state) && !(e->flags & JD_ELEM_WAS_RUNNING))
			jd_array_elem_restore(p->arr, pos, &v, NULL, 0, NULL, NULL, 0, NULL, 0);
	}
	p->arr->stopped = true;
	return 0;
}

/* replay_attempt: an ATTEMPT record: one more ended attempt of j, which is retrying now
 * (a next time) or runs again (the retry operation: it leaves the final jobs). */
static int replay_attempt(struct rec_state *st, struct jd_job *j, const struct jd_journal_rec *r)
{
	struct rbuf b = {r->data, r->len, 0, false};
	struct jd_attempt a = {0};
	uint64_t next;
	unsigned state;

	a.started_ms = r_u64(&b);
	a.finished_ms = r_u64(&b);
	a.exit_code = (int32_t)r_u32(&b);
	a.signal = (int32_t)r_u32(&b);
	state = state_of_disk(r_u8(&b));
	a.cause = (uint8_t)r_u8(&b);
	next = r_u64(&b);
	if (b.bad || state >= JD_NSTATES || a.cause >= JP_NCAUSES) {
		snprintf(st->err, st->errlen, "journal: record %" PRIu64 " (attempt of job %" PRIu64
			 ") cannot be read", r->seq, r->id);
		return JSCHED_EIO;
	}
	a.state = (uint8_t)state;
	/* It runs again: it needs its run part (dropped if it was final). */
	if (jd_job_add_attempt(j, &a) < 0 || jd_job_run_part(&st->d->jobs, j) < 0)
		return JSCHED_ENOMEM;
	if (next) {
		j->state = JD_RETRYING;
		j->run->next_attempt_ms = next;
	} else if (jd_state_final(j->state)) {
		/* Run again: no longer among the final jobs restored as such. */
		for (size_t i = st->n_final; i-- > 0;)
			if (st->final_order[i] == j->id) {
				st->final_order[i] = 0;
				break;
			}
		j->state = JD_WAITING;
		j->cause = JP_CAUSE_NONE;
		j->finished_ms = j->finished_ns = 0;
		j->started_ms = j->started_ns = 0;
		free(j->reason);
		j->reason = NULL;
		free(j->value);
		j->value = NULL;
		j->value_len = 0;
		j->value_file = false;
		jd_exec_job_reset(j->exec);
	}
	return 0;
}

/* replay_cb: one record from the journal. */
static int replay_cb(void *arg, const struct jd_journal_rec *r)
{
	struct rec_state *st = arg;
	struct jd_job **sl, *j;
	int rc;

	st->d->persist.records_replayed++;
	if (r->type == R_SUBMIT)
		return replay_submit(st, r);
	if (r->type == R_CLIENT)
		return replay_client(st, r);
	if (r->type == R_NEXT_ID) {
		struct rbuf b = {r->data, r->len, 0, false};
		uint64_t next = r_u64(&b);

		if (next > 1 && (rc = slot(st, next - 1, &sl)) < 0)
			return rc;
		return 0;
	}
	if (r->type == R_PROCESS)
		return replay_process(st, r);
	if ((rc = slot(st, r->id, &sl)) < 0)
		return rc;
	j = *sl;
	if (!j) {
		struct jd_job *p;
		uint64_t pos;

		/* An array's element (recorded from its start on), or a job forgotten
		 * already (or never recorded whole). */
		if ((p = array_of(st, r->id, &pos)) && (rc = replay_element(p, pos, r)) < 0)
			snprintf(st->err, st->errlen, "journal: record %" PRIu64 " (of array element "
				 "%" PRIu64 ") cannot be read", r->seq, r->id);
		return rc < 0 ? rc : 0;
	}
	switch (r->type) {
	case R_QUEUED:
		if (j->state == JD_WAITING || j->state == JD_RETRYING)
			j->state = JD_QUEUED;
		return 0;
	case R_ATTEMPT:
		return replay_attempt(st, j, r);
	case R_RUNNING:
		if (!jd_state_final(j->state)) {
			struct rbuf b = {r->data, r->len, 0, false};

			j->state = JD_RUNNING;
			j->started_ms = r_u64(&b);
			j->started_ns = mono_of(st, j->started_ms);
		}
		return 0;
	case R_FINAL:
		if (jd_state_final(j->state))
			return 0; /* one final state, once */
		if (replay_final(st, j, r) < 0) {
			snprintf(st->err, st->errlen, "journal: record %" PRIu64 " (final state of job "
				 "%" PRIu64 ") cannot be read", r->seq, r->id);
			return JSCHED_EIO;
		}
		return 0;
	case R_FORGOTTEN:
		jd_job_discard(j);
		*sl = NULL;
		return 0;
	case R_ARRAY_STOP:
		return j->arr ? replay_array_stop(j, r) : 0;
	case R_REMOTE: {
		struct rbuf b = {r->data, r->len, 0, false};
		unsigned kind = r_u8(&b);
		uint32_t rid = r_u32(&b);
		size_t tl;
		const char *tag = r_str(&b, &tl);

		if (b.bad || kind != JD_BACKEND_SLURM || !rid || tl >= 64)
			return JSCHED_EIO;
		if (j->exec && !jd_state_final(j->state)) {
			free(j->exec->remote_tag);
			if (!(j->exec->remote_tag = strndup(tag ? tag : "", tl)))
				return JSCHED_ENOMEM;
			j->exec->remote_id = rid;
		}
		return 0;
	}
	case R_ASSIGN: {
		struct rbuf b = {r->data, r->len, 0, false};
		uint32_t n = r_u32(&b);

		if (b.bad || !j->exec || n != j->exec->spec.need_units || n == 0)
			return b.bad ? JSCHED_EIO : 0; /* a spec that does not match: not shown */
		free(j->exec->assigned);
		if (!(j->exec->assigned = calloc(n, sizeof(uint16_t))))
			return JSCHED_ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			j->exec->assigned[i] = (uint16_t)r_u32(&b);
		return b.bad ? JSCHED_EIO : 0;
	}
	case R_HOOK:
		return j->hook ? replay_hook(j, r) : 0;
	default:
		snprintf(st->err, st->errlen, "journal: record %" PRIu64 " has an unknown type %u",
			 r->seq, r->type);
		return JSCHED_EIO;
	}
}

#define RUNNING_WHY                                                                      \
	"it was running when jschedd stopped without finishing it (a crash or a kill); it may " \
	"have run in part"
#define KILLED_WHY                                                                       \
	"it was running when jschedd stopped without finishing it (a crash or a kill); its "   \
	"command, still running at the restart, was killed"
#define GROUP_WHY                                                                        \
	"it was running when jschedd stopped without finishing it (a crash or a kill); its "   \
	"command's control group, left by the stopped jschedd, was killed at the restart"

/* kill_outliving: a command of job id that outlived the daemon: its process group, if the
 * very process recorded still runs (same boot, same start time).  Returns true if it was
 * killed. */
static bool kill_outliving(const struct rec_state *st, uint64_t id)
{
	for (size_t k = st->n_procs; k-- > 0;)
		if (st->procs[k].id == id) {
			const struct proc_rec *pr = &st->procs[k];

			if (pr->same_boot && pr->start && proc_start(pr->pid) == pr->start) {
				kill(-pr->pid, SIGKILL);
				jd_log(JD_LOG_WARN, "job %" PRIu64 ": its command (process group %d) "
				       "outlived jschedd: killed", id, (int)pr->pid);
				return true;
			}
			return false;
		}
	return false;
}

/* restore_elements: the elements of a recovered array that were running when the daemon
 * stopped end failed (daemon_restart) as any running job does; the parent then releases
 * the others again. */
static void restore_elements(struct rec_state *st, struct jd_job *p)
{
	struct jd_array *a = p->arr;

	for (uint64_t pos = 0; pos < a->n; pos++) {
		struct jd_array_elem *e = &a->el[pos];
		struct jd_job *j;

		if (!(e->flags & JD_ELEM_WAS_RUNNING) || jd_state_final(e->state))
			continue;
		e->flags &= (uint8_t)~JD_ELEM_WAS_RUNNING;
		if (!(j = jd_job_get(&st->d->jobs, p->id + 1 + pos, NULL)))
			continue; /* out of memory: it runs again */
		j->started_ms = e->started_ms;
		j->started_ns = mono_of(st, e->started_ms);
		jd_job_finish(&st->d->jobs, j, JD_FAILED, JP_CAUSE_DAEMON_RESTART,
			      kill_outliving(st, j->id) ? KILLED_WHY : RUNNING_WHY);
	}
}

/* restore: put the recovered jobs into the table and carry on with them: final ones
 * retained in the order they ended, those handed to Slurm watched again there, running
 * ones failed (daemon_restart), the rest linked and released. */
static int restore(struct rec_state *st)
{
	struct jd_daemon *d = st->d;
	struct jd_jobs *t = &d->jobs;

	/* Those that are to run again get their run part now (replay made none: most jobs
	 * of a large journal are final, and a part made and freed for each cost a malloc
	 * and a free each), before the table changes, so that no memory stops the start
	 * cleanly. */
	size_t n = 0;

	t->recovering = false;
	for (uint64_t id = 1; id <= st->max_id && id < st->cap; id++) {
		if (!st->byid[id])
			continue;
		n++;
		if (!jd_state_final(st->byid[id]->state) && jd_job_run_part(t, st->byid[id]) < 0)
			return JSCHED_ENOMEM;
	}
	jd_jobs_reserve(t, n);

	for (size_t i = 0; i < st->n_final; i++) {
		struct jd_job *j = st->final_order[i] < st->cap ? st->byid[st->final_order[i]] : NULL;

		if (j && jd_state_final(j->state)) {
			jd_job_value_spill(t, j); /* a large result back in its file, from the record */
			jd_job_restore(t, j);
			d->persist.jobs_recovered++;
		}
	}
	/* Not final: as they were a moment before they were acknowledged, then on. */
	for (uint64_t id = 1; id <= st->max_id && id < st->cap; id++) {
		struct jd_job *j = st->byid[id];
		enum jd_state was;

		if (!j || jd_state_final(j->state))
			continue;
		/* An array's parent is waiting again: it releases its elements not ended. */
		was = j->arr ? JD_WAITING : j->state;
		j->state = JD_WAITING;
		/* A call job whose spec was scanned: its args, which it runs with, now. */
		if (lazy_args(st, j) < 0)
			jd_log(JD_LOG_ERR, "journal: job %" PRIu64 "'s args cannot be read; it runs "
			       "with null", j->id);
		jd_job_restore(t, j);
		d->persist.jobs_recovered++;
		/* A job in Slurm (queued there, or running) stays as it was. */
		if (was == JD_QUEUED && j->exec && j->exec->remote_id) {
			t->by_state[JD_WAITING]--;
			j->client->by_state[JD_WAITING]--;
			t->by_state[JD_QUEUED]++;
			j->client->by_state[JD_QUEUED]++;
			j->state = JD_QUEUED;
		} else if (was == JD_RUNNING) {
			/* Counted as waiting by the restore: move it as a start would. */
			t->by_state[JD_WAITING]--;
			j->client->by_state[JD_WAITING]--;
			j->client->live--;
			t->by_state[JD_RUNNING]++;
			j->client->by_state[JD_RUNNING]++;
			j->state = JD_RUNNING;
		} else if (was == JD_RETRYING) {
			/* Between attempts: counted as waiting, and as live, which it is. */
			t->by_state[JD_WAITING]--;
			j->client->by_state[JD_WAITING]--;
			t->by_state[JD_RETRYING]++;
			j->client->by_state[JD_RETRYING]++;
			j->state = JD_RETRYING;
		}
	}
	if (t->next_id <= st->max_id)
		t->next_id = st->max_id + 1;
	d->persist.replaying = false;
	/* From here on every change is recorded again. */
	for (uint64_t id = 1; id <= st->max_id && id < st->cap; id++) {
		struct jd_job *j = st->byid[id];
		struct jd_exec_usage used;
		bool left;

		if (!j || jd_state_final(j->state))
			continue;
		if (j->exec && j->exec->remote_id) {
			char why[512];

			if (jd_backend_reattach(&d->runner, j, j->exec->remote_id,
						j->exec->remote_tag ? j->exec->remote_tag : "", why,
						sizeof(why)) < 0)
				jd_job_finish(t, j, JD_FAILED, JP_CAUSE_DAEMON_RESTART, why);
			continue;
		}
		if (j->state == JD_RETRYING) {
			/* Its next attempt at its time (at once if that passed meanwhile). */
			jd_job_restore_retrying(t, j);
			continue;
		}
		/* A control group the stopped daemon left for it: its processes were killed
		 * and its usage read at start (run/exec_cgroup.c, before this), so the job had
		 * started, whatever the journal last heard of it. */
		left = !j->arr && jd_exec_recovered(&d->runner.exec, j->id, &used);
		if (j->state == JD_RUNNING || left) {
			bool killed = kill_outliving(st, j->id);

			if (left && j->exec)
				j->exec->res.usage = used;
			/* What its command wrote before the crash, from its output files. */
			if (j->exec && t->outfiles) {
				struct jd_exec_result *x = &j->exec->res;

				jd_outlog_clear(&x->log);
				if (jd_outfiles_load(t->outfiles, j->id, &x->log) > 0)
					x->files = x->loaded = jd_outfiles_sync(t->outfiles, j->id) == 0;
			}
			/* The seam for retries: a job with a retry policy would be queued again
			 * here instead of failed (jobs have none yet). */
			jd_job_finish(t, j, JD_FAILED, JP_CAUSE_DAEMON_RESTART,
				      left ? GROUP_WHY : killed ? KILLED_WHY : RUNNING_WHY);
			continue;
		}
		if (j->arr)
			restore_elements(st, j);
		/* Deps: a target still in the table is judged (or waited for) as at submit;
		 * one no longer there was judged before it was forgotten, and this job was
		 * still waiting, so it was satisfied. */
		j->run->after_pending = j->run->n_any = j->run->any_failed = 0;
		j->run->any_ok = false;
		for (uint32_t k = 0; k < j->n_deps; k++) {
			struct jd_dep *dep = &j->deps[k];

			dep->target = jd_job_find(t, dep->id, NULL);
			if (dep->any)
				j->run->n_any++;
			if (!dep->target) {
				if (dep->any)
					j->run->any_ok = true;
			} else if (!dep->any) {
				j->run->after_pending++;
			}
		}
		if (!j->handler) {
			jd_job_finish(t, j, JD_FAILED, JP_CAUSE_HANDLER,
				      "its handler is no longer loaded (after a restart)");
			continue;
		}
		/* One that may go to Slurm may have reached it without a record of its
		 * submit (jschedd killed in between): the backend looks before it submits. */
		if (j->exec && (j->exec->backend == JD_BACKEND_SLURM || j->exec->backend == JD_BACKEND_AUTO))
			j->exec->remote_find = true;
		if (jd_job_link_deps(t, j) == 1)
			jd_job_release(t, j);
	}
	jd_jobs_settle(t);
	return 0;
}

/* keep_output: the sweep's test: job id is in the table. */
static bool keep_output(void *arg, uint64_t id)
{
	struct jd_daemon *d = arg;

	return jd_job_find(&d->jobs, id, NULL) != NULL;
}

/* rec_state_free: free what recovery gathered; with discard, the jobs too (a recovery
 * that failed: none of them entered the table). */
static void rec_state_free(struct rec_state *st, bool discard)
{
	for (uint64_t id = 0; discard && id < st->cap; id++)
		if (st->byid[id])
			jd_job_discard(st->byid[id]);
	free(st->byid);
	free(st->final_order);
	free(st->procs);
	free(st->arrays);
	free(st->lazy);
	free(st->lazy_text);
	free(st->scan.text);
	last_clear(st);
}

int jd_persist_start(struct jd_daemon *d, char *err, size_t errlen)
{
	struct jd_persist *p = &d->persist;
	struct rec_state st = {.d = d, .err = err, .errlen = errlen};
	struct jd_journal_opts o = {0};
	struct jd_journal_info info;
	uint64_t t0 = jd_now_ns();
	int rc;

	jp_job_spec_init(&st.scan.sp);
	d->net.hooks.journal_metrics = metrics_hook;
	if (d->cfg.journal_sync == JD_JOURNAL_OFF) {
		jd_log(JD_LOG_INFO, "journal: off (journal.sync \"off\"): jobs do not outlive the "
		       "process");
		return 0;
	}
	d->net.hooks.journal_hold = hold_hook;
	d->net.hooks.journal_hold_upto = hold_upto_hook;
	d->net.hooks.journal_refuse = refuse_hook;
	d->net.journal_specs = true;
	if ((rc = jd_config_journal_dir(&d->cfg, p->dir, sizeof(p->dir))) < 0) {
		if (snprintf(err, errlen, "%s", p->dir) >= (int)errlen)
			err[errlen - 1] = 0;
		return rc;
	}
	p->wake.data = d;
	if ((rc = jd_wake_init(&d->loop, &p->wake, wake_cb)) < 0) {
		snprintf(err, errlen, "journal: the loop's wake-up: %s", uv_strerror(rc));
		return JSCHED_EIO;
	}
	uv_timer_init(&d->loop, &p->snap_timer);
	p->snap_timer.data = d;
	p->async_open = true;
	p->hold = d->cfg.journal_sync == JD_JOURNAL_ALWAYS;
	uv_prepare_init(&d->loop, &p->prepare);
	p->prepare.data = d;
	uv_timer_init(&d->loop, &p->lazy_timer);
	p->lazy_timer.data = d;
	uv_unref((uv_handle_t *)&p->lazy_timer);
	if (p->hold) {
		uv_prepare_start(&p->prepare, prepare_cb);
		uv_unref((uv_handle_t *)&p->prepare);
	}
	o.on_demand = p->hold;
	o.dir = p->dir;
	o.sync = p->hold ? JD_JOURNAL_SYNC_ALWAYS : JD_JOURNAL_SYNC_BATCH;
	o.batch_ms = d->cfg.journal_batch_ms;
	o.segment_bytes = d->cfg.journal_segment_bytes;
	o.io = d->cfg.journal_io == JD_JOURNAL_IO_CONF_FDATASYNC ? JD_JOURNAL_IO_FDATASYNC
								 : JD_JOURNAL_IO_DIRECT;
	o.notify_cb = notify_cb;
	o.notify_arg = &p->wake;
	o.flusher_cpu = flusher_cpu(d);
	o.pin_flusher = o.flusher_cpu >= 0;
	o.gather_spin = d->cfg.journal_gather_spin;
	o.replay_cb = replay_cb;
	o.replay_arg = &st;
	st.now_ns = jd_now_ns();
	st.now_ms = jd_now_ms();
	boot_id(st.boot);
	p->replaying = true;
	d->jobs.recovering = true; /* until restore: no run parts (core/jobs.h) */
	err[0] = 0;
	rc = jd_journal_open(&p->j, &o, &info, err, errlen);
	if (rc < 0) {
		rec_state_free(&st, true);
		d->jobs.recovering = false;
		p->replaying = false;
		if (!err[0])
			snprintf(err, errlen, "journal %s: %s", p->dir, "recovery failed");
		return rc;
	}
	if ((rc = jd_outfiles_open(&d->jobs.outfiles, p->dir, err, errlen)) < 0) {
		rec_state_free(&st, true);
		d->jobs.recovering = false;
		p->replaying = false;
		return rc;
	}
	d->runner.exec.outfiles = d->jobs.outfiles;
	p->specs_scanned = st.scanned;
	if ((rc = restore(&st)) < 0) {
		rec_state_free(&st, true);
		p->replaying = false;
		snprintf(err, errlen, "journal %s: out of memory for the recovered jobs", p->dir);
		return rc;
	}
	p->output_swept = jd_outfiles_sweep(d->jobs.outfiles, keep_output, d);
	rec_state_free(&st, false);
	p->recover_ms = (jd_now_ns() - t0) / 1000000u;
	jd_log(JD_LOG_INFO, "journal %s: %" PRIu64 " records, %" PRIu64 " jobs recovered in %" PRIu64
	       " ms%s; sync %s", p->dir, p->records_replayed, p->jobs_recovered, p->recover_ms,
	       info.torn_tail ? " (a torn last flush was cut)" : "",
	       p->hold ? "always" : "batch");
	{
		struct jd_journal_stats js;

		jd_journal_stats(p->j, &js);
		if (js.flusher_cpu >= 0)
			jd_log(JD_LOG_INFO, "journal: flusher on CPU %d (%s)", js.flusher_cpu,
			       p->cpu_why);
		else
			jd_log(JD_LOG_INFO, "journal: flusher on any CPU (%s)", p->cpu_why);
	}
	return 0;
}

void jd_persist_stop(struct jd_daemon *d)
{
	struct jd_persist *p = &d->persist;

	if (p->snap_ids) {
		free(p->snap_ids);
		p->snap_ids = NULL;
	}
	free(p->scratch);
	p->scratch = NULL;
	p->scratch_cap = 0;
	if (p->j) {
		int rc = jd_journal_close(p->j); /* abandons a snapshot in progress */

		if (rc < 0)
			jd_log(JD_LOG_ERR, "journal %s: not everything was made durable at exit", p->dir);
		p->j = NULL;
		/* Every reply held for it can go now (or never will be durable: the peer
		 * learns nothing false either way, as a held reply says ok only once sent). */
		if (rc == 0)
			jd_server_release_held(&d->net, UINT64_MAX);
	}
	if (p->async_open) {
		jd_wake_close(&p->wake);
		uv_close((uv_handle_t *)&p->snap_timer, NULL);
		uv_close((uv_handle_t *)&p->prepare, NULL);
		uv_close((uv_handle_t *)&p->lazy_timer, NULL);
		p->async_open = false;
	}
}

void jd_persist_close_output(struct jd_daemon *d)
{
	jd_outfiles_close(d->jobs.outfiles);
	d->jobs.outfiles = NULL;
	d->runner.exec.outfiles = NULL;
}

json_t *jd_persist_metrics(const struct jd_daemon *d)
{
	const struct jd_persist *p = &d->persist;
	static const char *const modes[] = {"always", "batch", "off"};
	struct jd_journal_stats st = {0};
	char why[600] = "";
	int fault = 0;

	struct jd_outfiles_stats os = {0};
	json_t *doc;

	if (p->j) {
		jd_journal_stats(p->j, &st);
		fault = jd_journal_status(p->j, why, sizeof(why));
	}
	if (d->jobs.outfiles)
		jd_outfiles_stats(d->jobs.outfiles, &os);
	doc = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:f}",
			 "dir", p->dir, "sync", modes[d->cfg.journal_sync], "records",
			 (json_int_t)st.appended, "durable_seq", (json_int_t)st.durable_seq,
			 "flushes", (json_int_t)st.flushes, "syncs", (json_int_t)st.syncs,
			 "bytes_written", (json_int_t)st.bytes_written, "failures",
			 (json_int_t)st.failures, "disk_bytes", (json_int_t)st.disk_bytes, "fault",
			 fault ? json_string(why) : json_null(), "recovered_jobs",
			 (json_int_t)p->jobs_recovered, "recovered_records",
			 (json_int_t)p->records_replayed, "recover_ms", (json_int_t)p->recover_ms,
			 "snapshots", (json_int_t)p->snapshots, "snapshot_slice_ms_max",
			 (double)p->snap_slice_ns_max / 1e6);
	if (doc)
		json_object_set_new(doc, "recovered_scanned", json_integer((json_int_t)p->specs_scanned));
	if (doc && p->j) {
		json_object_set_new(doc, "flusher_cpu", st.flusher_cpu >= 0
				    ? json_integer(st.flusher_cpu) : json_null());
		json_object_set_new(doc, "flusher_cpu_why", json_string(p->cpu_why));
	}
	if (doc && p->j)
		json_object_set_new(doc, "io", json_string(st.io == JD_JOURNAL_IO_DIRECT ? "direct"
							   : st.io == JD_JOURNAL_IO_DSYNC ? "dsync"
											  : "fdatasync"));
	if (doc)
		json_object_set_new(doc, "cycle", json_pack("{s:f, s:f, s:I, s:I, s:f, s:I, s:f, s:I, s:I, s:I, s:f, s:f}",
			"io_us", (double)st.io_ns / 1e3, "gather_us", (double)st.gather_ns / 1e3,
			"gathers", (json_int_t)st.gathers, "gathers_late", (json_int_t)st.gathers_late,
			"gap_us", (double)st.cycle_gap_ns / 1e3, "wakes", (json_int_t)st.wakes,
			"wake_us", (double)st.wake_ns / 1e3, "gathers_spun", (json_int_t)st.gathers_spun,
			"handoffs", (json_int_t)p->handoffs, "loop_waits", (json_int_t)p->loop_waits,
			"handoff_us", (double)p->handoff_ns / 1e3, "release_us",
			(double)p->release_ns / 1e3));
	if (doc && d->jobs.outfiles)
		json_object_set_new(doc, "output", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"files", (json_int_t)os.files, "bytes_written", (json_int_t)os.bytes_written,
			"syncs", (json_int_t)os.syncs, "tails_dropped", (json_int_t)os.tails_dropped,
			"removed", (json_int_t)os.removed, "failures", (json_int_t)os.failures,
			"swept", (json_int_t)p->output_swept));
	return doc;
}

/* ---- compaction ---- */

/* spec_of_job: j's spec as JSON (without deps and deadline, as at submit), rebuilt from
 * what the job holds.  New reference, or NULL. */
static json_t *spec_of_job(const struct jd_job *j)
{
	static const enum jp_priority prios[] = {JP_PRIO_CRITICAL, JP_PRIO_HIGH, JP_PRIO_NORMAL,
						 JP_PRIO_LOW};
	struct jp_job_spec sp;
	struct jp_env *env = NULL;
	char **names = NULL;
	size_t n_env = 0;
	json_t *o = NULL;

	jp_job_spec_init(&sp);
	sp.kind = j->kind == JD_KIND_EXEC ? JP_KIND_EXEC : JP_KIND_CALL;
	sp.name = j->name;
	sp.key = j->key;
	sp.priority = j->prio < 4 ? prios[j->prio] : JP_PRIO_NORMAL;
	sp.cost = j->cost ? j->cost : 1;
	sp.not_before_ms = (int64_t)j->not_before_ms;
	if (j->retry)
		sp.retry = *j->retry;
	if (j->hook) {
		sp.on_exit = j->hook->on_exit;
		sp.notify = j->hook->notify;
		sp.hook_timeout_ms = j->hook->timeout_ms;
	}
	if (j->kind == JD_KIND_EXEC && j->exec) {
		const struct jd_exec_spec *x = &j->exec->spec;

		for (sp.argc = 0; x->argv[sp.argc]; sp.argc++)
			;
		sp.argv = (const char **)(void *)x->argv; /* read only, as the codec takes it */
		while (x->env && x->env[n_env])
			n_env++;
		env = calloc(n_env + 1, sizeof(*env));
		names = calloc(n_env + 1, sizeof(*names));
		if (!env || !names)
			goto out;
		for (size_t i = 0; i < n_env; i++) {
			const char *eq = strchr(x->env[i], '=');

			if (!eq || !(names[i] = strndup(x->env[i], (size_t)(eq - x->env[i]))))
				goto out;
			env[i].name = names[i];
			env[i].value = eq + 1;
		}
		sp.env = env;
		sp.n_env = n_env;
		sp.cwd = x->cwd;
		sp.has_stdin = x->has_stdin && x->stdin_data; /* a final job's is dropped */
		sp.stdin_data = x->stdin_data;
		sp.stdin_len = x->stdin_len;
		sp.timeout_ms = (int64_t)x->timeout_ms;
		for (size_t i = 0; i < x->n_needs; i++)
			sp.needs[sp.n_needs++] = (struct jp_need){x->needs[i].name, x->needs[i].count};
		sp.res_memory = x->memory_max;
		sp.res_pids = x->pids_max;
		sp.res_cpu_milli = x->cpu_milli;
		/* (the backend chosen at submit follows the spec in the record: encode_submit) */
	} else {
		sp.fn = j->handler ? j->handler->name : "";
		sp.args = j->args;
	}
	o = jp_job_spec_to_json(&sp);
out:
	for (size_t i = 0; names && i < n_env; i++)
		free(names[i]);
	free(names);
	free(env);
	return o;
}

static int snap_add(struct jd_daemon *d, unsigned type, uint64_t id, struct wbuf *b)
{
	int rc = b->oom ? JSCHED_ENOMEM
			: jd_journal_snap_add(d->persist.j, type, id, b->p, b->len);

	b->len = 0;
	return rc;
}

/* encode_final_slot: a FINAL record's payload for an array's compacted element (as
 * encode_final writes a job's). */
static void encode_final_slot(struct wbuf *bp, const struct jd_array_elem *e)
{
	struct wbuf b = *bp;
	const struct jd_array_extra *q = e->extra;
	char *value = q && q->value ? json_dumps(q->value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	w_u8(&b, disk_state((enum jd_state)e->state));
	w_u8(&b, e->cause);
	w_u8(&b, e->end);
	w_u8(&b, (e->flags & JD_ELEM_OUT_TRUNC ? 1u : 0u) | (e->flags & JD_ELEM_ERR_TRUNC ? 2u : 0u) |
			 (e->flags & JD_ELEM_TIMED_OUT ? 4u : 0u));
	w_u32(&b, e->end == JD_EXEC_SIGNALED ? 0 : (uint32_t)e->code);
	w_u32(&b, e->end == JD_EXEC_SIGNALED ? (uint32_t)e->code : 0);
	w_u64(&b, e->finished_ms);
	w_u64(&b, e->started_ms);
	w_str(&b, q ? q->reason : NULL, q && q->reason ? strlen(q->reason) : 0);
	w_str(&b, value, value ? strlen(value) : 0);
	w_str(&b, q ? (const char *)q->out : NULL, q ? q->out_len : 0);
	w_str(&b, q ? (const char *)q->err : NULL, q ? q->err_len : 0);
	free(value);
	*bp = b;
}

/* snap_running: a running job's RUNNING (and PROCESS) records. */
static int snap_running(struct jd_daemon *d, const struct jd_job *j, struct wbuf *b)
{
	int rc;

	w_u64(b, j->started_ms);
	if ((rc = snap_add(d, R_RUNNING, j->id, b)) < 0 || !j->run->proc_pid)
		return rc;
	encode_process(b, j->run->proc_pid);
	return snap_add(d, R_PROCESS, j->id, b);
}

/* snap_elements: after an array parent's SUBMIT, its elements: those ended (FINAL, from
 * their slots) and those running (RUNNING); the others are released again on recovery.
 * Written with the parent, so that each follows the record that makes it known. */
static int snap_elements(struct jd_daemon *d, const struct jd_job *p, struct wbuf *b)
{
	const struct jd_array *a = p->arr;
	int rc = 0;

	for (uint64_t pos = 0; pos < a->n && rc == 0; pos++) {
		const struct jd_array_elem *e = &a->el[pos];
		const struct jd_job *j;

		if (jd_state_final(e->state)) {
			encode_final_slot(b, e);
			rc = snap_add(d, R_FINAL, p->id + 1 + pos, b);
		} else if ((e->flags & JD_ELEM_LIVE) && (j = jd_job_find(&d->jobs, p->id + 1 + pos, NULL)) &&
			   j->state == JD_RUNNING) {
			rc = snap_running(d, j, b);
		}
	}
	return rc;
}

/* snap_job: j's state as snapshot records: its submit, then where it got.  An array's
 * elements come with their parent. */
static int snap_job(struct jd_daemon *d, const struct jd_job *j, struct wbuf *b)
{
	json_t *spec;
	int rc;

	if (j->array_id)
		return 0;
	spec = j->arr ? json_deep_copy(j->arr->spec) : spec_of_job(j);
	if (spec && j->arr && j->key && json_object_set_new(spec, "key", json_string(j->key)) < 0) {
		json_decref(spec);
		spec = NULL;
	}
	if (!spec)
		return JSCHED_ENOMEM;
	encode_submit_json(b, j, spec);
	json_decref(spec);
	if ((rc = snap_add(d, R_SUBMIT, j->id, b)) < 0)
		return rc;
	if (j->arr && (rc = snap_elements(d, j, b)) < 0)
		return rc;
	for (uint32_t k = 0; k < j->n_attempts; k++) {
		encode_attempt(b, &j->attempts[k], j->state == JD_RETRYING && k + 1 == j->n_attempts
							   ? j->run->next_attempt_ms : 0);
		if ((rc = snap_add(d, R_ATTEMPT, j->id, b)) < 0)
			return rc;
	}
	if (j->exec && j->exec->assigned) {
		encode_assign(b, j->exec);
		if ((rc = snap_add(d, R_ASSIGN, j->id, b)) < 0)
			return rc;
	}
	if (jd_state_final(j->state)) {
		encode_final(b, j, d->jobs.outfiles);
		if ((rc = snap_add(d, R_FINAL, j->id, b)) < 0 || !j->hook ||
		    j->hook->state == JD_HOOK_PENDING)
			return rc;
		encode_hook(b, j);
		return snap_add(d, R_HOOK, j->id, b);
	}
	if (j->state == JD_RUNNING && (rc = snap_running(d, j, b)) < 0)
		return rc;
	if (j->state == JD_QUEUED && (rc = snap_add(d, R_QUEUED, j->id, b)) < 0)
		return rc;
	if (j->state >= JD_QUEUED && j->exec && j->exec->remote_id) {
		encode_remote(b, j->exec->remote_id, j->exec->remote_tag);
		return snap_add(d, R_REMOTE, j->id, b);
	}
	return 0;
}

static void snap_abandon(struct jd_daemon *d, int rc)
{
	struct jd_persist *p = &d->persist;

	jd_journal_snap_finish(p->j);
	free(p->snap_ids);
	p->snap_ids = NULL;
	jd_log(JD_LOG_WARN, "journal: a snapshot was abandoned (error %d)", rc);
}

/* slice_cb: the next slice of the snapshot, at most SLICE jobs (a few ms), then back to
 * the loop; the last one adds the clients' settings and the id counter and commits. */
#define SLICE 1000
static void slice_cb(uv_timer_t *tm)
{
	struct jd_daemon *d = tm->data;
	struct jd_persist *p = &d->persist;
	struct wbuf b = {0};
	uint64_t t0 = jd_now_ns(), dt;
	size_t end = p->snap_pos + SLICE < p->snap_n ? p->snap_pos + SLICE : p->snap_n;
	int rc = 0;

	for (; p->snap_pos < end && rc == 0; p->snap_pos++) {
		const struct jd_job *j = jd_job_find(&d->jobs, p->snap_ids[p->snap_pos], NULL);

		if (j) /* a job forgotten since the snapshot began has its record after it */
			rc = snap_job(d, j, &b);
	}
	if (rc == 0 && p->snap_pos == p->snap_n) {
		for (const struct jd_client_pin *c = d->clients.pins; c && rc == 0; c = c->next) {
			encode_client(&b, c->name, &c->conf, true);
			rc = snap_add(d, R_CLIENT, 0, &b);
		}
		if (rc == 0) {
			w_u64(&b, d->jobs.next_id);
			rc = snap_add(d, R_NEXT_ID, 0, &b);
		}
		if (rc == 0)
			rc = jd_journal_snap_commit(p->j);
		free(p->snap_ids);
		p->snap_ids = NULL;
	}
	free(b.p);
	dt = jd_now_ns() - t0;
	if (dt > p->snap_slice_ns_max)
		p->snap_slice_ns_max = dt;
	if (rc < 0) {
		snap_abandon(d, rc);
		return;
	}
	if (p->snap_ids)
		uv_timer_start(&p->snap_timer, slice_cb, 0, 0);
}

/* snap_settle: a committed snapshot that is done (or failed): collect it. */
static void snap_settle(struct jd_daemon *d)
{
	struct jd_persist *p = &d->persist;
	enum jd_journal_snap_state st = jd_journal_snap_state(p->j);

	if (st != JD_SNAP_DONE && st != JD_SNAP_FAILED)
		return;
	if (jd_journal_snap_finish(p->j) == 0) {
		p->snapshots++;
		jd_log(JD_LOG_INFO, "journal: snapshot of %zu jobs in place, the segments it covers "
		       "removed (longest slice %.1f ms)", p->snap_n,
		       (double)p->snap_slice_ns_max / 1e6);
	} else {
		jd_log(JD_LOG_WARN, "journal: a snapshot could not be written; the log is kept whole");
	}
}

void jd_persist_tick(struct jd_daemon *d)
{
	struct jd_persist *p = &d->persist;
	uint64_t written, live;
	struct jd_jobs_iter it;
	struct jd_job *j;
	int rc;

	if (!p->j)
		return;
	if (jd_journal_snap_state(p->j) != JD_SNAP_NONE) {
		snap_settle(d);
		return;
	}
	/* Over twice the live data (about 512 bytes a job in the table) and over the floor
	 * (journal.compact_bytes): write the state once instead. */
	written = jd_journal_log_bytes(p->j) - p->snap_from_bytes;
	live = ((uint64_t)d->jobs.count + 1) * 512u;
	if (written < d->cfg.journal_compact_bytes || written < 2 * live)
		return;
	p->snap_ids = malloc((d->jobs.count + 1) * sizeof(*p->snap_ids));
	if (!p->snap_ids)
		return;
	if ((rc = jd_journal_snap_begin(p->j)) < 0) {
		free(p->snap_ids);
		p->snap_ids = NULL;
		return;
	}
	p->snap_n = p->snap_pos = 0;
	p->snap_slice_ns_max = 0;
	for (jd_jobs_iter_init(&d->jobs, &it); (j = jd_jobs_iter_next(&d->jobs, &it));)
		p->snap_ids[p->snap_n++] = j->id;
	p->snap_from_bytes = jd_journal_log_bytes(p->j);
	uv_timer_start(&p->snap_timer, slice_cb, 0, 0);
}

/* ---- --check-journal ---- */

struct check_state {
	uint64_t by_type[16];
	uint64_t max_id;
};

static int check_cb(void *arg, const struct jd_journal_rec *r)
{
	struct check_state *cs = arg;

	if (r->type < 16)
		cs->by_type[r->type]++;
	if (r->id > cs->max_id)
		cs->max_id = r->id;
	return 0;
}

int jd_persist_check(const char *dir)
{
	struct check_state cs = {0};
	struct jd_journal_opts o = {.dir = dir, .read_only = true, .replay_cb = check_cb,
				    .replay_arg = &cs};
	struct jd_journal_info info;
	struct jd_journal *j;
	char err[1024];
	int rc = jd_journal_open(&j, &o, &info, err, sizeof(err));

	if (rc < 0) {
		fprintf(stderr, "jschedd: %s\n", err);
		return 1;
	}
	jd_journal_close(j);
	printf("journal %s: sound\n", dir);
	printf("  snapshot: %s", info.snapshot_seq ? "" : "none\n");
	if (info.snapshot_seq)
		printf("covers records 1..%" PRIu64 ", %" PRIu64 " records\n", info.snapshot_seq,
		       info.snapshot_records);
	printf("  segments: %" PRIu64 ", %" PRIu64 " records after the snapshot, %" PRIu64
	       " bytes, last record %" PRIu64 "\n", info.segments, info.records, info.bytes,
	       info.last_seq);
	printf("  records: %" PRIu64 " submit, %" PRIu64 " queued, %" PRIu64 " running, %" PRIu64
	       " final, %" PRIu64 " forgotten, %" PRIu64 " client, %" PRIu64 " process, %" PRIu64
	       " remote; highest job id %" PRIu64 "\n",
	       cs.by_type[R_SUBMIT], cs.by_type[R_QUEUED], cs.by_type[R_RUNNING],
	       cs.by_type[R_FINAL], cs.by_type[R_FORGOTTEN], cs.by_type[R_CLIENT],
	       cs.by_type[R_PROCESS], cs.by_type[R_REMOTE], cs.max_id);
	if (info.torn_tail)
		printf("  a torn last flush at %s offset %" PRIu64 " (a crash during a flush; "
		       "nothing in it was acknowledged): the next start cuts it\n", info.tail_file,
		       info.tail_offset);
	return 0;
}
