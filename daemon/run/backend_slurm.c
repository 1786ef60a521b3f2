/* daemon/run/backend_slurm.c: exec jobs as Slurm batch jobs (see backend_slurm.h).
 *
 * Two halves.  The loop half (jd_slurm_* and the async callback) owns the struct
 * jd_slurm_job of every live job, found by key, and the time-limit timers.  The slurm
 * thread (slurm_main) owns libslurm and the table of submitted jobs it watches
 * ("tracks"), keyed by Slurm job id; it also keeps the submits and cancels it could not
 * deliver while slurmctld was unreachable, to retry each poll interval.  They meet only
 * in struct msg, on two lists under one mutex.
 */
#include "daemon/run/backend_slurm.h"
#include "daemon/core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/run/slurm_script.h"
#include "jsched/error.h"

#ifdef JD_WITH_SLURM
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#endif

void jd_slurm_config_defaults(struct jd_slurm_config *c)
{
	memset(c, 0, sizeof(*c));
	c->poll_ms = 500;
	c->output_bytes = 1u << 20;
	snprintf(c->output_dir, sizeof(c->output_dir), "/var/spool/jschedd/slurm");
}

#ifndef JD_WITH_SLURM

#ifndef JD_SLURM_WHY
#define JD_SLURM_WHY "libslurm-dev was not found at build time"
#endif

const char *jd_slurm_build(void)
{
	return "not built: " JD_SLURM_WHY;
}

int jd_slurm_open(uv_loop_t *loop, const struct jd_slurm_config *c, jd_slurm_cb cb, void *ctx,
		  struct jd_slurm **out, char *err, size_t errlen)
{
	(void)loop, (void)c, (void)cb, (void)ctx;
	*out = NULL;
	snprintf(err, errlen, "the slurm backend is not built into this jschedd (%s)", JD_SLURM_WHY);
	return JSCHED_ENOT_SUPPORTED;
}

void jd_slurm_close(struct jd_slurm *s)
{
	(void)s;
}

int jd_slurm_submit(struct jd_slurm *s, struct jd_slurm_job *j)
{
	(void)s, (void)j;
	return JSCHED_ENOT_SUPPORTED;
}

int jd_slurm_attach(struct jd_slurm *s, struct jd_slurm_job *j)
{
	(void)s, (void)j;
	return JSCHED_ENOT_SUPPORTED;
}

void jd_slurm_cancel(struct jd_slurm *s, struct jd_slurm_job *j, enum jp_cause cause)
{
	(void)s, (void)j, (void)cause;
}

json_t *jd_slurm_metrics(struct jd_slurm *s)
{
	(void)s;
	return json_pack("{s:b, s:s}", "built", 0, "build", jd_slurm_build());
}

uint32_t jd_slurm_live(const struct jd_slurm *s)
{
	(void)s;
	return 0;
}

bool jd_slurm_up(const struct jd_slurm *s)
{
	(void)s;
	return false;
}

#else /* JD_WITH_SLURM */

#define KEY_BUCKETS 1024
#define TRACK_BUCKETS 1024

/* One message between the halves.  Requests (loop to thread): SUBMIT, ATTACH, KILL.
 * Results (thread to loop): SUBMITTED, REFUSED, STATE, HEALTH. */
enum msg_kind { M_SUBMIT, M_ATTACH, M_KILL, M_SUBMITTED, M_REFUSED, M_STATE, M_HEALTH };

struct msg {
	struct msg *next;
	enum msg_kind kind;
	uint64_t key;
	uint32_t slurm_id;
	/* M_SUBMIT */
	uid_t uid;
	gid_t gid;
	char *script;
	char **env;
	uint32_t env_n;
	char *cwd;
	unsigned char *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	uint32_t time_min;	/* NO_VAL: none */
	uint32_t nice;
	uint32_t output_bytes;
	char *partition, *account;	/* NULL: the config's */
	uint64_t memory_mb;	/* pn_min_memory (0: the cluster's default) */
	uint32_t min_cpus;	/* min_cpus and cpus_per_task (0: one) */
	char tag[64];		/* M_SUBMIT, M_ATTACH: names the files and the comment */
	bool find_first;	/* M_SUBMIT: watch a job Slurm has already (backend_slurm.h) */
	uint64_t not_before_ms;
	bool found;		/* M_SUBMITTED: it was found, not submitted */
	/* M_STATE */
	uint32_t state;		/* JOB_* base state; JOB_END: slurmctld forgot the job */
	bool final, never_ran;
	uint32_t status;	/* wait status */
	char node[64];
	uint64_t submit_ms, start_ms, end_ms;
	struct jd_exec_stream out, err;
	/* M_REFUSED, M_HEALTH */
	bool up;
	char text[256];
};

/* A submitted job the thread watches. */
struct track {
	struct track *next;
	uint64_t key;
	uint32_t slurm_id;
	uint32_t output_bytes;
	uint32_t state, status;	/* as last reported */
	bool reported, seen;
	char node[64];
	char tag[64];		/* names its files */
	uint64_t start_ms, end_ms;
};

/* A job of an earlier run of this jschedd found in Slurm's list (find_first). */
struct found {
	uint64_t key;
	uint32_t slurm_id;
	uint32_t uid;
	uint64_t submit_ms;
};

struct jd_slurm {
	uv_loop_t *loop;
	uv_async_t async;
	struct jd_slurm_config cfg;
	jd_slurm_cb cb;
	void *ctx;
	uv_thread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct msg *req_head, *req_tail;	/* under lock */
	struct msg *res_head, *res_tail;	/* under lock */
	bool stop;				/* under lock */

	/* loop thread */
	struct jd_slurm_job *keys[KEY_BUCKETS];
	uint32_t live;
	bool up;
	char error[256];
	uint64_t submitted, refused, started, ended, cancels, timeouts, outages;
	uint64_t attached, found_jobs;	/* re-attached by id; found by tag (find_first) */
	uint64_t by_end[10];	/* ended jobs by Slurm state: COMPLETE .. OOM, then lost */

	/* slurm thread (read by the loop under lock: the stats) */
	struct track *tracks[TRACK_BUCKETS];
	uint32_t n_tracks;
	struct msg *retry_head, *retry_tail;	/* submits and kills to redo */
	time_t last_update;
	struct found *found;			/* find_first: Slurm's jobs of our tag, by key */
	size_t n_found;
	bool found_loaded;
	int h_last, h_last_e;			/* the health last posted: 0 none, 1 down, 2 up */
	uint64_t polls, polls_unchanged, polls_failed, poll_ns, poll_ns_max;	/* under lock */
	uint64_t rpcs;								/* under lock */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *jd_slurm_build(void)
{
	static char line[64];

	snprintf(line, sizeof(line), "libslurm %d.%02d.%d",
		 SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
		 SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
	return line;
}

static void msg_free(struct msg *m)
{
	if (!m)
		return;
	free(m->script);
	jd_strv_free(m->env);
	free(m->cwd);
	free(m->stdin_data);
	free(m->partition);
	free(m->account);
	free(m->out.data);
	free(m->err.data);
	free(m);
}

/* transient: whether a libslurm error means "slurmctld could not be reached" (retry)
 * rather than "slurmctld said no". */
static bool transient(int e)
{
	return (e >= SLURM_COMMUNICATIONS_CONNECTION_ERROR && e <= SLURM_COMMUNICATIONS_SHUTDOWN_ERROR) ||
	       (e >= SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR &&
		e <= SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR) ||
	       e == SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT || e == SLURM_PROTOCOL_AUTHENTICATION_ERROR ||
	       e == ESLURM_IN_STANDBY_MODE || e == ECONNREFUSED || e == ETIMEDOUT || e == EAGAIN;
}

/* ---- files ------------------------------------------------------------------------------- */

static void file_name(const struct jd_slurm *s, const char *tag, uint64_t key, const char *ext,
		      char *out, size_t len)
{
	snprintf(out, len, "%s/%s-%llu.%s", s->cfg.output_dir, tag[0] ? tag : s->cfg.instance,
		 (unsigned long long)key, ext);
}

/* make_file: create path for uid/gid (mode 0600), with data if any.  Returns 0 or -errno. */
static int make_file(const char *path, uid_t uid, gid_t gid, const unsigned char *data, size_t len)
{
	int fd, rc = 0;

	unlink(path); /* a leftover of an earlier run with the same name */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (geteuid() == 0 && fchown(fd, uid, gid) != 0)
		rc = -errno;
	while (rc == 0 && len) {
		ssize_t w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		data += w;
		len -= (size_t)w;
	}
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc)
		unlink(path);
	return rc;
}

/* read_back: up to limit bytes of path into st (the rest counted as truncated), then
 * remove the file.  A missing file is an empty stream. */
static void read_back(const char *path, size_t limit, struct jd_exec_stream *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		size_t want = (size_t)sb.st_size < limit ? (size_t)sb.st_size : limit;

		st->truncated = (size_t)sb.st_size > limit;
		if (want && (st->data = malloc(want))) {
			while (st->len < want) {
				ssize_t r = read(fd, st->data + st->len, want - st->len);

				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0)
					break;
				st->len += (size_t)r;
			}
		}
	}
	close(fd);
	unlink(path);
}

/* ---- the slurm thread ---------------------------------------------------------------------- */

static void post(struct jd_slurm *s, struct msg *m)
{
	bool wake;

	m->next = NULL;
	pthread_mutex_lock(&s->lock);
	wake = !s->res_head;
	if (s->res_tail)
		s->res_tail->next = m;
	else
		s->res_head = m;
	s->res_tail = m;
	pthread_mutex_unlock(&s->lock);
	if (wake)
		uv_async_send(&s->async);
}

/* post_health: tell the loop whether slurmctld answered, when that changed or the error
 * text did. */
static void post_health(struct jd_slurm *s, bool up, const char *what, int e)
{
	struct msg *m;

	if (s->h_last == (int)up + 1 && (up || s->h_last_e == e))
		return;
	s->h_last = (int)up + 1;
	s->h_last_e = e;
	if (!(m = calloc(1, sizeof(*m))))
		return;
	m->kind = M_HEALTH;
	m->up = up;
	if (!up)
		snprintf(m->text, sizeof(m->text), "%s: %s", what, slurm_strerror(e));
	post(s, m);
}

static void retry_later(struct jd_slurm *s, struct msg *m)
{
	m->next = NULL;
	if (s->retry_tail)
		s->retry_tail->next = m;
	else
		s->retry_head = m;
	s->retry_tail = m;
}

static struct track **track_slot(struct jd_slurm *s, uint32_t id)
{
	struct track **pp = &s->tracks[id % TRACK_BUCKETS];

	while (*pp && (*pp)->slurm_id != id)
		pp = &(*pp)->next;
	return pp;
}

static struct track *track_by_key(struct jd_slurm *s, uint64_t key)
{
	for (size_t b = 0; b < TRACK_BUCKETS; b++)
		for (struct track *t = s->tracks[b]; t; t = t->next)
			if (t->key == key)
				return t;
	return NULL;
}

static void track_add(struct jd_slurm *s, uint64_t key, uint32_t id, uint32_t output_bytes,
		      const char *tag)
{
	struct track **pp = track_slot(s, id), *t;

	if (*pp)
		return;
	if (!(t = calloc(1, sizeof(*t))))
		return; /* never watched: ends as lost when the loop asks; see the README */
	t->key = key;
	t->slurm_id = id;
	t->output_bytes = output_bytes;
	snprintf(t->tag, sizeof(t->tag), "%s", tag);
	t->state = JOB_PENDING;
	*pp = t;
	s->n_tracks++;
}

/* finish_track: the tracked job ended in Slurm: read its output back, report it final
 * and stop watching it. */
static void finish_track(struct jd_slurm *s, struct track *t, uint32_t state, uint32_t status,
			 bool never_ran)
{
	struct msg *m = calloc(1, sizeof(*m));
	char path[4200];

	if (m) {
		m->kind = M_STATE;
		m->key = t->key;
		m->slurm_id = t->slurm_id;
		m->state = state;
		m->status = status;
		m->final = true;
		m->never_ran = never_ran;
		memcpy(m->node, t->node, sizeof(m->node));
		m->start_ms = t->start_ms;
		m->end_ms = t->end_ms;
	}
	file_name(s, t->tag, t->key, "out", path, sizeof(path));
	read_back(path, t->output_bytes, m ? &m->out : &(struct jd_exec_stream){0});
	file_name(s, t->tag, t->key, "err", path, sizeof(path));
	read_back(path, t->output_bytes, m ? &m->err : &(struct jd_exec_stream){0});
	file_name(s, t->tag, t->key, "in", path, sizeof(path));
	unlink(path);
	if (m)
		post(s, m);
	*track_slot(s, t->slurm_id) = t->next;
	s->n_tracks--;
	free(t);
}

/* job_ms: a Slurm time_t as wall ms (0 stays 0). */
static uint64_t job_ms(time_t t)
{
	return t > 0 ? (uint64_t)t * 1000u : 0;
}

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->submit_ms < y->submit_ms ? -1 : x->submit_ms > y->submit_ms;
}

/* load_found: Slurm's whole job list, once: the jobs whose comment carries our tag, by
 * key.  Returns 0, or the libslurm error (nothing loaded: retried at the next submit
 * that needs it). */
static int load_found(struct jd_slurm *s)
{
	job_info_msg_t *info = NULL;
	char prefix[96];
	size_t plen;
	int rc = slurm_load_jobs(0, &info, SHOW_ALL), e = rc ? slurm_get_errno() : 0;

	pthread_mutex_lock(&s->lock);
	s->rpcs++;
	pthread_mutex_unlock(&s->lock);
	if (rc)
		return e ? e : SLURM_ERROR;
	snprintf(prefix, sizeof(prefix), "jschedd:%s:", s->cfg.instance);
	plen = strlen(prefix);
	if (!(s->found = calloc(info->record_count ? info->record_count : 1, sizeof(*s->found)))) {
		slurm_free_job_info_msg(info);
		return EAGAIN; /* retried, as an outage is */
	}
	for (uint32_t i = 0; i < info->record_count; i++) {
		const slurm_job_info_t *ji = &info->job_array[i];
		char *end;
		unsigned long long key;

		if (!ji->comment || strncmp(ji->comment, prefix, plen) != 0)
			continue;
		key = strtoull(ji->comment + plen, &end, 10);
		if (*end || !key)
			continue;
		s->found[s->n_found++] = (struct found){key, ji->job_id, ji->user_id,
							 job_ms(ji->submit_time)};
	}
	qsort(s->found, s->n_found, sizeof(*s->found), found_cmp);
	s->found_loaded = true;
	slurm_free_job_info_msg(info);
	return 0;
}

/* find_job: the job of an earlier run tagged with m's key, of m's uid (anyone may write
 * any comment: another user's job is never taken for ours) and submitted no earlier than
 * m->not_before_ms (the newest such), into *f (NULL: none).  Returns 0 or the libslurm
 * error of a list that could not be loaded. */
static int find_job(struct jd_slurm *s, const struct msg *m, const struct found **f)
{
	size_t lo = 0, hi;
	int rc;

	*f = NULL;
	if (!s->found_loaded && (rc = load_found(s)) != 0)
		return rc;
	if (strcmp(m->tag, s->cfg.instance) != 0)
		return 0; /* only our own tag is loaded */
	hi = s->n_found;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->found[mid].key < m->key)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Slurm's times are whole seconds: a job submitted in the same second counts. */
	for (; lo < s->n_found && s->found[lo].key == m->key; lo++)
		if (s->found[lo].uid == (uint32_t)m->uid &&
		    s->found[lo].submit_ms + 999 >= m->not_before_ms)
			*f = &s->found[lo];
	return 0;
}

/* do_submit: one submit request.  Returns false if slurmctld could not be reached (the
 * request is to be retried; m is kept), true when m was consumed. */
static bool do_submit(struct jd_slurm *s, struct msg *m)
{
	job_desc_msg_t desc;
	submit_response_msg_t *resp = NULL;
	char out[4200], err[4200], in[4200], name[64], comment[128];
	int rc, e;

	if (m->find_first) {
		/* Before its files are made anew: a job found keeps writing to them. */
		const struct found *f = NULL;

		if ((rc = find_job(s, m, &f)) != 0 && transient(rc)) {
			post_health(s, false, "the list of jobs (to find one submitted before a restart)", rc);
			return false;
		}
		/* Any other refusal of the list: submitted as if not found. */
		if (f) {
			track_add(s, m->key, f->slurm_id, m->output_bytes, m->tag);
			m->kind = M_SUBMITTED;
			m->slurm_id = f->slurm_id;
			m->found = true;
			post(s, m);
			return true;
		}
	}
	file_name(s, m->tag, m->key, "out", out, sizeof(out));
	file_name(s, m->tag, m->key, "err", err, sizeof(err));
	file_name(s, m->tag, m->key, "in", in, sizeof(in));
	if ((rc = make_file(out, m->uid, m->gid, NULL, 0)) || (rc = make_file(err, m->uid, m->gid, NULL, 0)) ||
	    (m->has_stdin && (rc = make_file(in, m->uid, m->gid, m->stdin_data, m->stdin_len)))) {
		m->kind = M_REFUSED;
		snprintf(m->text, sizeof(m->text), "cannot create the output files in %.160s: %s",
			 s->cfg.output_dir, strerror(-rc));
		unlink(out);
		unlink(err);
		post(s, m);
		return true;
	}
	slurm_init_job_desc_msg(&desc);
	snprintf(name, sizeof(name), "jschedd-%llu", (unsigned long long)m->key);
	snprintf(comment, sizeof(comment), "jschedd:%s:%llu", m->tag, (unsigned long long)m->key);
	desc.name = name;
	desc.comment = comment;
	desc.script = m->script;
	desc.environment = m->env;
	desc.env_size = m->env_n;
	desc.work_dir = m->cwd;
	desc.std_out = out;
	desc.std_err = err;
	desc.std_in = m->has_stdin ? in : (char *)"/dev/null";
	desc.user_id = m->uid;
	desc.group_id = m->gid;
	desc.time_limit = m->time_min;
	desc.nice = NICE_OFFSET + m->nice;
	desc.min_nodes = 1;
	desc.max_nodes = 1;
	desc.num_tasks = 1;
	if (m->memory_mb)
		desc.pn_min_memory = m->memory_mb;
	if (m->min_cpus) {
		desc.min_cpus = m->min_cpus;
		if (m->min_cpus <= UINT16_MAX) /* the batch step's own CPUs */
			desc.cpus_per_task = (uint16_t)m->min_cpus;
	}
	if (m->partition || s->cfg.partition[0])
		desc.partition = m->partition ? m->partition : s->cfg.partition;
	if (m->account || s->cfg.account[0])
		desc.account = m->account ? m->account : s->cfg.account;
	rc = slurm_submit_batch_job(&desc, &resp);
	e = rc ? slurm_get_errno() : 0;
	pthread_mutex_lock(&s->lock);
	s->rpcs++;
	pthread_mutex_unlock(&s->lock);
	if (rc == 0 && resp) {
		track_add(s, m->key, resp->job_id, m->output_bytes, m->tag);
		post_health(s, true, NULL, 0);
		m->kind = M_SUBMITTED;
		m->slurm_id = resp->job_id;
		slurm_free_submit_response_response_msg(resp);
		post(s, m);
		return true;
	}
	if (resp)
		slurm_free_submit_response_response_msg(resp);
	if (transient(e)) {
		post_health(s, false, "submit", e);
		return false;
	}
	unlink(out);
	unlink(err);
	unlink(in);
	m->kind = M_REFUSED;
	snprintf(m->text, sizeof(m->text), "slurm refused the job: %s", slurm_strerror(e));
	post(s, m);
	return true;
}

/* do_kill: one cancel request.  Returns false to retry later (m kept), true if consumed. */
static bool do_kill(struct jd_slurm *s, struct msg *m)
{
	struct track *t = track_by_key(s, m->key);
	int rc, e;

	if (!t) {
		/* Not submitted yet (its submit is waiting for slurmctld): drop the submit. */
		for (struct msg **pp = &s->retry_head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
			struct msg *r = *pp;

			if (r->kind != M_SUBMIT || r->key != m->key)
				continue;
			*pp = r->next;
			if (s->retry_tail == r)
				s->retry_tail = prev;
			msg_free(r);
			m->kind = M_STATE;
			m->state = JOB_CANCELLED;
			m->final = m->never_ran = true;
			post(s, m);
			return true;
		}
		msg_free(m); /* ended already */
		return true;
	}
	rc = slurm_kill_job(t->slurm_id, SIGKILL, 0);
	e = rc ? slurm_get_errno() : 0;
	pthread_mutex_lock(&s->lock);
	s->rpcs++;
	pthread_mutex_unlock(&s->lock);
	if (rc && transient(e)) {
		post_health(s, false, "cancel", e);
		return false;
	}
	if (!rc)
		post_health(s, true, NULL, 0);
	msg_free(m); /* done, or ESLURM_ALREADY_DONE / INVALID_JOB_ID: the poll tells */
	return true;
}

/* do_poll: one slurm_load_jobs; report what changed for the tracked jobs. */
static void do_poll(struct jd_slurm *s)
{
	job_info_msg_t *info = NULL;
	uint64_t t0 = mono_ns(), dt;
	int rc = slurm_load_jobs(s->last_update, &info, SHOW_ALL);
	int e = rc ? slurm_get_errno() : 0;

	dt = mono_ns() - t0;
	pthread_mutex_lock(&s->lock);
	s->polls++;
	s->rpcs++;
	s->poll_ns += dt;
	if (dt > s->poll_ns_max)
		s->poll_ns_max = dt;
	if (rc && e == SLURM_NO_CHANGE_IN_DATA)
		s->polls_unchanged++;
	else if (rc)
		s->polls_failed++;
	pthread_mutex_unlock(&s->lock);
	if (rc) {
		if (e == SLURM_NO_CHANGE_IN_DATA)
			post_health(s, true, NULL, 0);
		else
			post_health(s, false, "poll", e);
		return;
	}
	post_health(s, true, NULL, 0);
	s->last_update = info->last_update;
	for (size_t b = 0; b < TRACK_BUCKETS; b++)
		for (struct track *t = s->tracks[b]; t; t = t->next)
			t->seen = false;
	for (uint32_t i = 0; i < info->record_count; i++) {
		slurm_job_info_t *ji = &info->job_array[i];
		struct track *t = *track_slot(s, ji->job_id);
		uint32_t base = ji->job_state & JOB_STATE_BASE;
		bool final = base >= JOB_COMPLETE && base < JOB_END;
		bool completing = (ji->job_state & JOB_COMPLETING) != 0;
		struct msg *m;

		if (!t)
			continue;
		t->seen = true;
		if (ji->nodes && ji->nodes[0] && base != JOB_PENDING)
			snprintf(t->node, sizeof(t->node), "%s", ji->nodes);
		if (base != JOB_PENDING)
			t->start_ms = job_ms(ji->start_time);
		if (final)
			t->end_ms = job_ms(ji->end_time);
		if (final && !completing) {
			finish_track(s, t, base, ji->exit_code, t->node[0] == '\0');
			continue;
		}
		if (final)
			base = JOB_RUNNING; /* its epilog runs: output may not be complete yet */
		if (t->reported && t->state == base)
			continue;
		t->reported = true;
		t->state = base;
		if (!(m = calloc(1, sizeof(*m))))
			continue;
		m->kind = M_STATE;
		m->key = t->key;
		m->slurm_id = t->slurm_id;
		m->state = base;
		memcpy(m->node, t->node, sizeof(m->node));
		m->submit_ms = job_ms(ji->submit_time);
		m->start_ms = t->start_ms;
		post(s, m);
	}
	/* A full answer without a tracked job: slurmctld has purged it (MinJobAge). */
	for (size_t b = 0; b < TRACK_BUCKETS; b++) {
		struct track *t = s->tracks[b], *next;

		for (; t; t = next) {
			next = t->next;
			if (!t->seen)
				finish_track(s, t, JOB_END, 0, t->node[0] == '\0');
		}
	}
	slurm_free_job_info_msg(info);
}

static void slurm_main(void *arg)
{
	struct jd_slurm *s = arg;
	uint64_t next_poll = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct msg *reqs, *retry;
		uint64_t now = mono_ns();
		bool poll_now;

		if (s->stop)
			break;
		if (!s->req_head) {
			if (s->n_tracks == 0 && !s->retry_head) {
				pthread_cond_wait(&s->cond, &s->lock);
			} else if (now < next_poll) {
				struct timespec ts;
				uint64_t wait = next_poll - now;

				clock_gettime(CLOCK_MONOTONIC, &ts);
				ts.tv_sec += (time_t)(wait / 1000000000u);
				ts.tv_nsec += (long)(wait % 1000000000u);
				if (ts.tv_nsec >= 1000000000) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000;
				}
				pthread_cond_timedwait(&s->cond, &s->lock, &ts);
			}
			if (s->stop)
				break;
		}
		reqs = s->req_head;
		s->req_head = s->req_tail = NULL;
		pthread_mutex_unlock(&s->lock);

		now = mono_ns();
		poll_now = now >= next_poll;
		/* The retries first (in their order), then the new requests; once one cannot
		 * reach slurmctld the rest wait for the next interval too. */
		retry = poll_now ? s->retry_head : NULL;
		if (poll_now)
			s->retry_head = s->retry_tail = NULL;
		for (int pass = 0; pass < 2; pass++) {
			struct msg *m = pass ? reqs : retry, *next;

			for (; m; m = next) {
				bool done = true;

				next = m->next;
				if (s->retry_head && (m->kind == M_SUBMIT ||
						      (m->kind == M_KILL && track_by_key(s, m->key)))) {
					retry_later(s, m);
					continue;
				}
				switch (m->kind) {
				case M_SUBMIT:
					done = do_submit(s, m);
					break;
				case M_KILL:
					done = do_kill(s, m);
					break;
				case M_ATTACH:
					track_add(s, m->key, m->slurm_id, m->output_bytes, m->tag);
					s->last_update = 0; /* a full answer: it may have ended */
					msg_free(m);
					break;
				default:
					msg_free(m);
					break;
				}
				if (!done)
					retry_later(s, m);
			}
		}
		if (poll_now && (s->n_tracks || s->retry_head)) {
			if (s->n_tracks)
				do_poll(s);
			next_poll = mono_ns() + (uint64_t)s->cfg.poll_ms * 1000000u;
		} else if (reqs && next_poll < now) {
			next_poll = now; /* a first job: poll at once, then each interval */
		}
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- the loop half ------------------------------------------------------------------------- */

static struct jd_slurm_job **key_slot(struct jd_slurm *s, uint64_t key)
{
	struct jd_slurm_job **pp = &s->keys[key % KEY_BUCKETS];

	while (*pp && (*pp)->key != key)
		pp = &(*pp)->hnext;
	return pp;
}

static void request(struct jd_slurm *s, struct msg *m)
{
	m->next = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->req_tail)
		s->req_tail->next = m;
	else
		s->req_head = m;
	s->req_tail = m;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static void timer_drop(struct jd_slurm_job *j)
{
	if (j->timer) {
		j->timer->data = NULL;
		uv_close((uv_handle_t *)j->timer, timer_closed);
		j->timer = NULL;
	}
}

static void send_kill(struct jd_slurm *s, struct jd_slurm_job *j)
{
	struct msg *m;

	if (j->kill_sent || !(m = calloc(1, sizeof(*m))))
		return;
	j->kill_sent = true;
	m->kind = M_KILL;
	m->key = j->key;
	request(s, m);
}

static void timeout_cb(uv_timer_t *t)
{
	struct jd_slurm_job *j = t->data;

	if (!j || j->phase == JD_SLURM_DONE)
		return;
	j->res->timed_out = true;
	j->owner->timeouts++;
	send_kill(j->owner, j);
}

/* start_timer: the time limit of a started job, counted from Slurm's start time. */
static void start_timer(struct jd_slurm *s, struct jd_slurm_job *j)
{
	uint64_t limit = j->spec->timeout_ms, now = wall_ms(), ran;

	if (!limit || j->timer || j->res->timed_out)
		return;
	if (!(j->timer = malloc(sizeof(*j->timer))))
		return; /* Slurm's own limit, a minute later, still applies */
	uv_timer_init(s->loop, j->timer);
	j->timer->data = j;
	ran = j->start_ms && now > j->start_ms ? now - j->start_ms : 0;
	uv_timer_start(j->timer, timeout_cb, ran >= limit ? 0 : limit - ran, 0);
}

/* fill_result: a final state into j->res, as the local path would have it. */
static void fill_result(struct jd_slurm *s, struct jd_slurm_job *j, struct msg *m)
{
	struct jd_exec_result *r = j->res;
	static const char *const names[] = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETE",
					    "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
					    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OOM"};

	r->out = m->out;
	r->err = m->err;
	m->out.data = m->err.data = NULL;
	if (j->cancel_asked)
		r->stop_cause = j->stop_cause;
	if (m->state == JOB_TIMEOUT)
		r->timed_out = true;
	if (m->state >= JOB_COMPLETE && m->state <= JOB_OOM)
		s->by_end[m->state - JOB_COMPLETE]++;
	else
		s->by_end[9]++;
	if (m->state == JOB_END) {
		r->end = JD_EXEC_SPAWN_FAILED;
		snprintf(r->reason, sizeof(r->reason),
			 "slurmctld no longer knows Slurm job %u (purged before jschedd saw it end)",
			 m->slurm_id);
	} else if (m->never_ran && (m->state == JOB_CANCELLED || m->state == JOB_DEADLINE)) {
		r->end = JD_EXEC_NOT_RUN;
		if (!r->stop_cause && !r->timed_out) {
			r->end = JD_EXEC_SPAWN_FAILED;
			snprintf(r->reason, sizeof(r->reason), "Slurm job %u ended %s before it started",
				 m->slurm_id, names[m->state]);
		}
	} else if (m->never_ran && m->state != JOB_COMPLETE && m->state != JOB_FAILED) {
		r->end = JD_EXEC_SPAWN_FAILED;
		snprintf(r->reason, sizeof(r->reason), "Slurm job %u ended %s before it started",
			 m->slurm_id, names[m->state]);
	} else if (WIFSIGNALED(m->status)) {
		r->end = JD_EXEC_SIGNALED;
		r->signal = WTERMSIG(m->status);
	} else {
		r->end = JD_EXEC_EXITED;
		r->exit_code = WEXITSTATUS(m->status);
	}
	if (r->end == JD_EXEC_EXITED && r->exit_code == 0 && m->state != JOB_COMPLETE &&
	    !r->stop_cause && !r->timed_out) {
		/* Slurm says it did not complete, whatever the status: not a success. */
		r->end = JD_EXEC_SPAWN_FAILED;
		snprintf(r->reason, sizeof(r->reason), "Slurm job %u ended %s", m->slurm_id,
			 names[m->state]);
	}
	if (j->start_ms && m->end_ms >= j->start_ms)
		r->run_ns = (m->end_ms - j->start_ms) * 1000000u;
}

static void done(struct jd_slurm *s, struct jd_slurm_job *j)
{
	timer_drop(j);
	*key_slot(s, j->key) = j->hnext;
	j->hnext = NULL;
	j->phase = JD_SLURM_DONE;
	s->live--;
	s->ended++;
	s->cb(s->ctx, j, JD_SLURM_EV_DONE);
}

static void on_state(struct jd_slurm *s, struct jd_slurm_job *j, struct msg *m)
{
	if (m->node[0])
		memcpy(j->node, m->node, sizeof(j->node));
	if (m->submit_ms)
		j->submit_ms = m->submit_ms;
	if (m->start_ms)
		j->start_ms = m->start_ms;
	if (m->end_ms)
		j->end_ms = m->end_ms;
	if (m->state != JOB_PENDING && m->state != JOB_SUSPENDED && !m->never_ran &&
	    j->phase < JD_SLURM_RUNNING) {
		j->phase = JD_SLURM_RUNNING;
		s->started++;
		start_timer(s, j);
		s->cb(s->ctx, j, JD_SLURM_EV_STARTED);
	}
	if (m->final) {
		fill_result(s, j, m);
		done(s, j);
	}
}

static void async_closed(uv_handle_t *h);

static void async_cb(uv_async_t *h)
{
	struct jd_slurm *s = h->data;
	struct msg *m, *next;

	jd_loop_woke();

	pthread_mutex_lock(&s->lock);
	m = s->res_head;
	s->res_head = s->res_tail = NULL;
	pthread_mutex_unlock(&s->lock);
	for (; m; m = next) {
		struct jd_slurm_job *j;

		next = m->next;
		if (m->kind == M_HEALTH) {
			if (s->up && !m->up)
				s->outages++;
			s->up = m->up;
			snprintf(s->error, sizeof(s->error), "%s", m->up ? "" : m->text);
			msg_free(m);
			continue;
		}
		j = *key_slot(s, m->key);
		if (!j) {
			msg_free(m);
			continue;
		}
		switch (m->kind) {
		case M_SUBMITTED:
			j->slurm_id = m->slurm_id;
			if (j->phase == JD_SLURM_SUBMITTING)
				j->phase = JD_SLURM_PENDING;
			if (m->found)
				s->found_jobs++;
			else
				s->submitted++;
			s->cb(s->ctx, j, JD_SLURM_EV_SUBMITTED);
			break;
		case M_REFUSED:
			s->refused++;
			j->res->end = JD_EXEC_SPAWN_FAILED;
			snprintf(j->res->reason, sizeof(j->res->reason), "%s", m->text);
			done(s, j);
			break;
		case M_STATE:
			on_state(s, j, m);
			break;
		default:
			break;
		}
		msg_free(m);
	}
}

int jd_slurm_open(uv_loop_t *loop, const struct jd_slurm_config *c, jd_slurm_cb cb, void *ctx,
		  struct jd_slurm **out, char *err, size_t errlen)
{
	struct jd_slurm *s;
	const char *conf = c->conf[0] ? c->conf : getenv("SLURM_CONF");
	struct stat st;
	int rc;

	*out = NULL;
	if (!conf || !*conf)
		conf = "/etc/slurm/slurm.conf";
	/* libslurm's slurm_init ends the process when it cannot read its config: look first. */
	if (access(conf, R_OK) != 0) {
		snprintf(err, errlen, "backends.slurm: cannot read the Slurm config %s: %s", conf,
			 strerror(errno));
		return JSCHED_EINVAL;
	}
	if (mkdir(c->output_dir, 0711) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "backends.slurm.output_dir: cannot create %s: %s", c->output_dir,
			 strerror(errno));
		return JSCHED_EINVAL;
	}
	if (stat(c->output_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "backends.slurm.output_dir: %s is not a directory", c->output_dir);
		return JSCHED_EINVAL;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		snprintf(err, errlen, "out of memory");
		return JSCHED_ENOMEM;
	}
	s->loop = loop;
	s->cfg = *c;
	s->cb = cb;
	s->ctx = ctx;
	s->up = true;
	pthread_mutex_init(&s->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	slurm_init(c->conf[0] ? c->conf : NULL);
	if ((rc = uv_async_init(loop, &s->async, async_cb)) != 0) {
		snprintf(err, errlen, "uv_async_init: %s", uv_strerror(rc));
		goto fail;
	}
	s->async.data = s;
	if ((rc = uv_thread_create(&s->thread, slurm_main, s)) != 0) {
		snprintf(err, errlen, "cannot start the slurm thread: %s", uv_strerror(rc));
		uv_close((uv_handle_t *)&s->async, async_closed); /* frees s */
		return JSCHED_EINTERNAL;
	}
	s->thread_started = true;
	*out = s;
	return 0;
fail:
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return JSCHED_EINTERNAL;
}

static void async_closed(uv_handle_t *h)
{
	struct jd_slurm *s = h->data;
	struct msg *m, *next;

	for (int i = 0; i < 3; i++) {
		m = i == 0 ? s->req_head : i == 1 ? s->res_head : s->retry_head;
		for (; m; m = next) {
			next = m->next;
			msg_free(m);
		}
	}
	for (size_t b = 0; b < TRACK_BUCKETS; b++) {
		struct track *t = s->tracks[b], *next_t;

		for (; t; t = next_t) {
			next_t = t->next;
			free(t);
		}
	}
	free(s->found);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void jd_slurm_close(struct jd_slurm *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		uv_thread_join(&s->thread);
	for (size_t b = 0; b < KEY_BUCKETS; b++)
		for (struct jd_slurm_job *j = s->keys[b]; j; j = j->hnext) {
			timer_drop(j);
			j->owner = NULL;
		}
	slurm_fini();
	uv_close((uv_handle_t *)&s->async, async_closed);
}

static int enlist(struct jd_slurm *s, struct jd_slurm_job *j)
{
	struct jd_slurm_job **pp = key_slot(s, j->key);

	if (*pp)
		return JSCHED_EEXISTS;
	j->hnext = NULL;
	j->owner = s;
	j->timer = NULL;
	j->cancel_asked = j->kill_sent = false;
	*pp = j;
	s->live++;
	return 0;
}

int jd_slurm_submit(struct jd_slurm *s, struct jd_slurm_job *j)
{
	const struct jd_exec_spec *sp = j->spec;
	struct msg *m;
	size_t n = 0;
	bool has_path = false;
	char idvar[64];
	int rc;

	if (*key_slot(s, j->key))
		return JSCHED_EEXISTS;
	if (sp->argv[0][0] == '-') {
		snprintf(j->res->reason, sizeof(j->res->reason),
			 "argv[0] may not begin with '-' for the slurm backend");
		return JSCHED_EINVAL;
	}
	while (sp->env && sp->env[n]) {
		if (strncmp(sp->env[n], "PATH=", 5) == 0)
			has_path = true;
		n++;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return JSCHED_ENOMEM;
	m->kind = M_SUBMIT;
	m->key = j->key;
	snprintf(j->tag, sizeof(j->tag), "%s", s->cfg.instance);
	memcpy(m->tag, j->tag, sizeof(m->tag));
	m->find_first = j->find_first;
	m->not_before_ms = j->not_before_ms;
	m->uid = j->uid;
	m->gid = j->gid;
	m->script = jd_slurm_script(sp->argv, sp->cwd ? sp->cwd : "/", has_path, j->key);
	m->env = calloc(n + 2, sizeof(char *));
	m->cwd = strdup(sp->cwd ? sp->cwd : "/");
	if (!m->script || !m->env || !m->cwd)
		goto nomem;
	if ((j->partition && !(m->partition = strdup(j->partition))) ||
	    (j->account && !(m->account = strdup(j->account))))
		goto nomem;
	for (size_t i = 0; i < n; i++)
		if (!(m->env[i] = strdup(sp->env[i])))
			goto nomem;
	snprintf(idvar, sizeof(idvar), "JSCHED_JOB_ID=%llu", (unsigned long long)j->key);
	if (!(m->env[n] = strdup(idvar)))
		goto nomem;
	m->env_n = (uint32_t)n + 1;
	m->has_stdin = sp->has_stdin;
	if (sp->stdin_len) {
		if (!(m->stdin_data = malloc(sp->stdin_len)))
			goto nomem;
		memcpy(m->stdin_data, sp->stdin_data, sp->stdin_len);
		m->stdin_len = sp->stdin_len;
	}
	/* Slurm's limit in whole minutes, a minute past ours: the backstop. */
	m->time_min = sp->timeout_ms ? (uint32_t)((sp->timeout_ms + 59999) / 60000 + 1) : NO_VAL;
	m->nice = j->nice < 0 ? 0 : (uint32_t)j->nice;
	/* resources: Slurm counts memory in MiB and allocates whole CPUs (both rounded up:
	 * a job never gets less than it asked for). */
	m->memory_mb = (sp->memory_max + (1u << 20) - 1) >> 20;
	m->min_cpus = (sp->cpu_milli + 999) / 1000;
	m->output_bytes = sp->output_bytes ? sp->output_bytes : s->cfg.output_bytes;
	if ((rc = enlist(s, j)))
		goto fail;
	j->phase = JD_SLURM_SUBMITTING;
	j->slurm_id = 0;
	j->node[0] = '\0';
	j->submit_ms = j->start_ms = j->end_ms = 0;
	request(s, m);
	return 0;
nomem:
	rc = JSCHED_ENOMEM;
fail:
	msg_free(m);
	return rc;
}

int jd_slurm_attach(struct jd_slurm *s, struct jd_slurm_job *j)
{
	struct msg *m;
	int rc;

	if (!(m = calloc(1, sizeof(*m))))
		return JSCHED_ENOMEM;
	if ((rc = enlist(s, j))) {
		free(m);
		return rc;
	}
	j->phase = JD_SLURM_PENDING;
	s->attached++;
	m->kind = M_ATTACH;
	m->key = j->key;
	m->slurm_id = j->slurm_id;
	snprintf(m->tag, sizeof(m->tag), "%s", j->tag[0] ? j->tag : s->cfg.instance);
	m->output_bytes = j->spec->output_bytes ? j->spec->output_bytes : s->cfg.output_bytes;
	request(s, m);
	return 0;
}

void jd_slurm_cancel(struct jd_slurm *s, struct jd_slurm_job *j, enum jp_cause cause)
{
	if (j->phase == JD_SLURM_IDLE || j->phase == JD_SLURM_DONE || j->cancel_asked)
		return;
	j->cancel_asked = true;
	j->stop_cause = cause;
	s->cancels++;
	send_kill(s, j);
}

uint32_t jd_slurm_live(const struct jd_slurm *s)
{
	return s ? s->live : 0;
}

bool jd_slurm_up(const struct jd_slurm *s)
{
	return s && s->up;
}

json_t *jd_slurm_metrics(struct jd_slurm *s)
{
	uint64_t polls, unchanged, failed, ns, ns_max, rpcs;
	json_t *ended;

	pthread_mutex_lock(&s->lock);
	polls = s->polls;
	unchanged = s->polls_unchanged;
	failed = s->polls_failed;
	ns = s->poll_ns;
	ns_max = s->poll_ns_max;
	rpcs = s->rpcs;
	pthread_mutex_unlock(&s->lock);
	ended = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			  "complete", (json_int_t)s->by_end[0], "cancelled", (json_int_t)s->by_end[1],
			  "failed", (json_int_t)s->by_end[2], "timeout", (json_int_t)s->by_end[3],
			  "node_fail", (json_int_t)s->by_end[4], "preempted", (json_int_t)s->by_end[5],
			  "boot_fail", (json_int_t)s->by_end[6], "deadline", (json_int_t)s->by_end[7],
			  "oom", (json_int_t)s->by_end[8], "lost", (json_int_t)s->by_end[9],
			  "total", (json_int_t)s->ended);
	return json_pack("{s:b, s:s, s:s, s:b, s:s, s:I, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
			 " s:o, s:{s:I, s:I, s:I, s:I, s:I}}",
			 "built", 1, "build", jd_slurm_build(), "tag", s->cfg.instance,
			 "controller_up", s->up, "error", s->error,
			 "outages", (json_int_t)s->outages, "live", s->live,
			 "submitted", (json_int_t)s->submitted, "attached", (json_int_t)s->attached,
			 "found", (json_int_t)s->found_jobs, "refused", (json_int_t)s->refused,
			 "started", (json_int_t)s->started, "cancels", (json_int_t)s->cancels,
			 "timeouts", (json_int_t)s->timeouts, "rpcs", (json_int_t)rpcs,
			 "ended", ended ? ended : json_object(),
			 "polls", "count", (json_int_t)polls, "unchanged", (json_int_t)unchanged,
			 "failed", (json_int_t)failed, "total_us", (json_int_t)(ns / 1000),
			 "max_us", (json_int_t)(ns_max / 1000));
}

#endif /* JD_WITH_SLURM */
