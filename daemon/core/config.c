/* daemon/core/config.c: reading and checking jschedd's JSON configuration.
 *
 * The file is one JSON object; every key is optional.  The reader is strict, because a
 * typo in a config file that is silently ignored is worse than a daemon that refuses to
 * start: unknown keys, wrong types and out-of-range values are all errors, and the
 * message names the dotted key ("limits.frame_bytes: must be an integer in
 * [1024, 67108864]").  The table of keys lives in daemon/README.md.
 */
#include "daemon/core/config.h"

#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsched/error.h"
#include "proto/jproto.h"

static const char *const overflow_names[] = {"reject", "drop_oldest", "drop_newest", "block"};
static const char *const policy_names[] = {"fair", "wrr", "drr"};

const char *jd_overflow_name(enum jd_overflow o)
{
	return (unsigned)o < 4 ? overflow_names[o] : "?";
}

const char *jd_policy_conf_name(enum jd_policy_conf p)
{
	return (unsigned)p < 3 ? policy_names[p] : "?";
}

void jd_config_defaults(struct jd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->socket_mode = JD_SOCKET_MODE_AUTO;
	jd_exec_config_defaults(&c->exec);
	snprintf(c->cgroups.mode, sizeof(c->cgroups.mode), "auto");
	jd_backends_config_defaults(&c->backends);
	c->workers = 0;
	c->fibers = 256;
	c->idle_spin = false;
	c->loop_poll_us = JD_LOOP_POLL_US_DEFAULT;
	c->worker_sched = 2; /* "low" (config.h; daemon/README.md "The loop thread's CPU") */
	c->policy = JD_POLICY_FAIR;
	c->quantum = 0;
	c->fair_window_ms = 10000;
	c->fair_drf = true;
	c->backfill_max = 16;
	c->metrics_textfile_ms = 5000;
	c->journal_sync = JD_JOURNAL_ALWAYS;
	c->journal_batch_ms = 20;
	c->journal_cpu = JD_JOURNAL_CPU_AUTO;
	c->journal_gather_spin = true;
	c->journal_compact_bytes = 64u << 20;
	c->journal_segment_bytes = 64u << 20;
	c->default_client.weight = 1;
	c->default_client.max_queued = 10000;
	c->default_client.overflow = JD_OVERFLOW_REJECT;
	c->frame_bytes = 1u << 20;
	c->handshake_ms = 5000;
	c->output_buffer_bytes = 8u << 20;
	c->max_connections = 1024;
	c->max_connections_per_uid = 256;
	c->max_waits_per_conn = 64;
	c->max_wait_ids_per_uid = 100000;
	c->frame_ms = 30000;
	c->partial_frame_bytes = 64u << 20;
	c->value_bytes = 64u << 10;
	c->max_queued_total = 100000;
	c->max_batch = 10000;
	c->max_array = 100000;
	c->max_clients = 10000;
	c->client_idle_seconds = 3600;
	c->queued_bytes = 4ull << 30;
	c->client_queued_bytes = 1ull << 30;
	c->retain_jobs = 10000;
	c->retain_seconds = 3600;
	c->retain_bytes = 256ull << 20;
	c->retain_events = 10000;
}

void jd_config_free(struct jd_config *c)
{
	free(c->clients);
	c->clients = NULL;
	c->n_clients = 0;
	jd_security_config_free(&c->sec);
}

/* One reader pass: the error buffer and the dotted path of the object being read. */
struct reader {
	char *err;
	size_t errlen;
	char prefix[128];
};

__attribute__((format(printf, 3, 4)))
static int fail(struct reader *r, const char *key, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s%s: %s", r->prefix, key, what);
	return JSCHED_EINVAL;
}

/* check_keys: every key of obj must be one of `allowed` (NULL-terminated). */
static int check_keys(struct reader *r, json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				break;
		if (!allowed[i])
			return fail(r, key, "unknown key");
	}
	return 0;
}

static int get_uint(struct reader *r, json_t *obj, const char *key, uint64_t lo, uint64_t hi,
		    uint64_t *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < lo || (uint64_t)json_integer_value(v) > hi)
		return fail(r, key, "must be an integer in [%llu, %llu]", (unsigned long long)lo,
			    (unsigned long long)hi);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

#define GET_U32(r, obj, key, lo, hi, dst)                                                \
	do {                                                                             \
		uint64_t v_ = (dst);                                                     \
		int rc_ = get_uint((r), (obj), (key), (lo), (hi), &v_);                  \
		if (rc_)                                                                 \
			return rc_;                                                      \
		(dst) = (__typeof__(dst))v_;                                             \
	} while (0)

static int get_string(struct reader *r, json_t *obj, const char *key, char *dst, size_t len)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return fail(r, key, "must be a string");
	if (json_string_length(v) >= len)
		return fail(r, key, "longer than %zu bytes", len - 1);
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int get_enum(struct reader *r, json_t *obj, const char *key, const char *const *names,
		    unsigned n, unsigned *out)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (json_is_string(v))
		for (unsigned i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return 0;
			}
	{
		char list[128] = "";

		for (unsigned i = 0; i < n; i++) {
			strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
			strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		}
		return fail(r, key, "must be one of %s", list);
	}
}

/* get_journal_cpu: "journal.cpu": "auto", "any" or a CPU number (0 to 1023). */
static int get_journal_cpu(struct reader *r, json_t *obj, int *out)
{
	json_t *v = json_object_get(obj, "cpu");

	if (!v)
		return 0;
	if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0)
		*out = JD_JOURNAL_CPU_AUTO;
	else if (json_is_string(v) && strcmp(json_string_value(v), "any") == 0)
		*out = JD_JOURNAL_CPU_ANY;
	else if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		 json_integer_value(v) < 1024)
		*out = (int)json_integer_value(v);
	else
		return fail(r, "cpu", "must be \"auto\", \"any\" or a CPU number (0 to 1023)");
	return 0;
}

static int read_client(struct reader *r, json_t *obj, struct jd_client_conf *cc)
{
	static const char *const keys[] = {"weight", "max_queued", "overflow", "max_running",
					   "max_processes", "memory_max", "pids_max", "cpu_max",
					   "backend", NULL};
	static const char *const backend_names[] = {"local", "slurm", "auto"};
	unsigned ov = cc->overflow, be = cc->backend ? cc->backend - 1u : 0;
	json_t *v;
	int rc;

	if (!json_is_object(obj))
		return fail(r, "", "must be an object");
	if ((rc = check_keys(r, obj, keys)))
		return rc;
	GET_U32(r, obj, "weight", 1, JD_CLIENT_WEIGHT_MAX, cc->weight);
	GET_U32(r, obj, "max_queued", 1, 100000000, cc->max_queued);
	/* Concurrency limits, applied by the fair layer; 0 or absent: none. */
	GET_U32(r, obj, "max_running", 0, 1000000, cc->max_running);
	GET_U32(r, obj, "max_processes", 0, 65536, cc->max_processes);
	/* Limits of the client's control group (run/cgroup.h); 0 or absent: none. */
	if ((v = json_object_get(obj, "memory_max")) &&
	    (jp_size_parse(v, &cc->memory_max) < 0 ||
	     (cc->memory_max && (cc->memory_max < (1u << 20) || cc->memory_max > (1ull << 50)))))
		return fail(r, "memory_max", "must be a size from 1M to 1P (bytes, or \"2G\"), or 0");
	GET_U32(r, obj, "pids_max", 0, 4194304, cc->pids_max);
	if ((v = json_object_get(obj, "cpu_max"))) {
		double d = json_is_number(v) ? json_number_value(v) : -1;

		if (!(d == 0 || (d >= 0.001 && d <= 4096)))
			return fail(r, "cpu_max", "must be a number of CPUs from 0.001 to 4096, or 0");
		cc->cpu_milli = (uint32_t)(d * 1000 + 0.5);
	}
	if ((rc = get_enum(r, obj, "overflow", overflow_names, 4, &ov)))
		return rc;
	cc->overflow = (enum jd_overflow)ov;
	if (json_object_get(obj, "backend")) {
		if ((rc = get_enum(r, obj, "backend", backend_names, 3, &be)))
			return rc;
		cc->backend = (uint8_t)(be + 1);
	}
	return 0;
}

static int read_clients(struct reader *r, json_t *obj, struct jd_config *c)
{
	const char *name;
	json_t *v;
	size_t n = 0;
	int rc;

	if (!json_is_object(obj))
		return fail(r, "clients", "must be an object of client name -> settings");
	/* The default first, so named entries inherit from it. */
	v = json_object_get(obj, "default");
	if (v) {
		snprintf(r->prefix, sizeof(r->prefix), "clients.default.");
		if ((rc = read_client(r, v, &c->default_client)))
			return rc;
	}
	c->clients = calloc(json_object_size(obj) + 1, sizeof(*c->clients));
	if (!c->clients)
		return JSCHED_ENOMEM;
	json_object_foreach(obj, name, v) {
		struct jd_client_conf *cc = &c->clients[n];

		if (strcmp(name, "default") == 0)
			continue;
		snprintf(r->prefix, sizeof(r->prefix), "clients.");
		if (strlen(name) == 0 || strlen(name) >= sizeof(cc->name))
			return fail(r, name, "client names are 1 to %zu bytes", sizeof(cc->name) - 1);
		snprintf(r->prefix, sizeof(r->prefix), "clients.%.60s.", name);
		*cc = c->default_client;
		memcpy(cc->name, name, strlen(name) + 1);
		if ((rc = read_client(r, v, cc)))
			return rc;
		n++;
	}
	c->n_clients = n;
	r->prefix[0] = '\0';
	return 0;
}

static int read_admins(struct reader *r, json_t *arr, struct jd_config *c)
{
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return fail(r, "admins", "must be an array of user names or uids");
	if (json_array_size(arr) > sizeof(c->admins) / sizeof(c->admins[0]))
		return fail(r, "admins", "at most %zu entries",
			    sizeof(c->admins) / sizeof(c->admins[0]));
	json_array_foreach(arr, i, v) {
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) < (json_int_t)UINT32_MAX) {
			c->admins[c->n_admins++] = (uid_t)json_integer_value(v);
		} else if (json_is_string(v)) {
			struct passwd *pw = getpwnam(json_string_value(v));

			if (!pw)
				return fail(r, "admins", "no such user '%s'", json_string_value(v));
			c->admins[c->n_admins++] = pw->pw_uid;
		} else {
			return fail(r, "admins", "entries must be user names or uids");
		}
	}
	return 0;
}

static int read_modules(struct reader *r, json_t *arr, struct jd_config *c)
{
	size_t i;
	json_t *v;
	const size_t max = sizeof(c->modules) / sizeof(c->modules[0]);

	if (!json_is_array(arr))
		return fail(r, "modules", "must be an array of paths to shared objects");
	if (json_array_size(arr) > max)
		return fail(r, "modules", "at most %zu modules", max);
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) >= sizeof(c->modules[0]))
			return fail(r, "modules", "entry %zu must be a path", i);
		memcpy(c->modules[c->n_modules++], json_string_value(v), json_string_length(v) + 1);
	}
	return 0;
}

static int read_socket_mode(struct reader *r, json_t *v, struct jd_config *c)
{
	char *end;
	unsigned long m;

	if (!v)
		return 0;
	/* An octal string ("0660") is what people write; an integer is taken as is. */
	if (json_is_string(v)) {
		errno = 0;
		m = strtoul(json_string_value(v), &end, 8);
		if (errno || *end || end == json_string_value(v) || m > 0777)
			return fail(r, "socket_mode", "must be an octal string like \"0660\"");
	} else if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		   json_integer_value(v) <= 0777) {
		m = (unsigned long)json_integer_value(v);
	} else {
		return fail(r, "socket_mode", "must be an octal string like \"0660\"");
	}
	c->socket_mode = (unsigned)m;
	return 0;
}

static int read_root(struct reader *r, json_t *root, struct jd_config *c)
{
	static const char *const keys[] = {
		"socket", "socket_mode", "socket_group", "workers", "fibers", "idle_policy",
		"worker_scheduling", "loop_poll_us",
		"fairness", "clients", "admins", "limits", "retention", "modules", "exec",
		"client_names", "metrics", "cgroups", "backends", "journal", "resources", NULL};
	static const char *const journal_keys[] = {"dir", "sync", "batch_ms", "compact_bytes",
						   "segment_bytes", "io", "cpu", "gather_spin", NULL};
	static const char *const sync_names[] = {"always", "batch", "off"};
	static const char *const io_names[] = {"direct", "fdatasync"};
	static const char *const metrics_keys[] = {"listen", "textfile", "textfile_interval_ms",
						   NULL};
	static const char *const fair_keys[] = {"policy", "quantum", "window_ms", "drf",
						"backfill_max", NULL};
	static const char *const limit_keys[] = {
		"frame_bytes", "handshake_ms", "output_buffer_bytes", "connections",
		"connections_per_uid", "queued_jobs", "batch_jobs", "waits_per_connection",
		"wait_ids_per_uid", "frame_ms", "partial_frame_bytes", "array_elements", "clients",
		"value_bytes", "client_idle_seconds", "queued_bytes", "client_queued_bytes", NULL};
	static const char *const ret_keys[] = {"jobs", "seconds", "bytes", "min_seconds", "events",
					       NULL};
	static const char *const idle_names[] = {"sleep", "spin"};
	static const char *const sched_names[] = {"normal", "batch", "low", "idle"};
	unsigned u;
	json_t *v, *w;
	int rc;

	if (!json_is_object(root))
		return fail(r, "", "the configuration must be a JSON object");
	if ((rc = check_keys(r, root, keys)))
		return rc;
	if ((rc = get_string(r, root, "socket", c->socket, sizeof(c->socket))))
		return rc;
	if ((rc = read_socket_mode(r, json_object_get(root, "socket_mode"), c)))
		return rc;
	if ((rc = get_string(r, root, "socket_group", c->socket_group, sizeof(c->socket_group))))
		return rc;
	if (c->socket_group[0] && !getgrnam(c->socket_group))
		return fail(r, "socket_group", "no such group '%s'", c->socket_group);
	GET_U32(r, root, "workers", 0, 1024, c->workers);
	GET_U32(r, root, "fibers", 4, 100000, c->fibers);
	u = c->idle_spin;
	if ((rc = get_enum(r, root, "idle_policy", idle_names, 2, &u)))
		return rc;
	c->idle_spin = u == 1;
	u = c->worker_sched;
	if ((rc = get_enum(r, root, "worker_scheduling", sched_names, 4, &u)))
		return rc;
	c->worker_sched = u;
	GET_U32(r, root, "loop_poll_us", 0, JD_LOOP_POLL_US_MAX, c->loop_poll_us);

	if ((v = json_object_get(root, "fairness"))) {
		snprintf(r->prefix, sizeof(r->prefix), "fairness.");
		if (!json_is_object(v))
			return fail(r, "", "must be an object");
		if ((rc = check_keys(r, v, fair_keys)))
			return rc;
		u = c->policy;
		if ((rc = get_enum(r, v, "policy", policy_names, 3, &u)))
			return rc;
		c->policy = (enum jd_policy_conf)u;
		GET_U32(r, v, "quantum", 0, 1000000000, c->quantum);
		GET_U32(r, v, "window_ms", 100, 3600000, c->fair_window_ms);
		GET_U32(r, v, "backfill_max", 0, 1000000, c->backfill_max);
		if (json_object_get(v, "drf")) {
			if (!json_is_boolean(json_object_get(v, "drf")))
				return fail(r, "drf", "must be true or false");
			c->fair_drf = json_is_true(json_object_get(v, "drf"));
		}
		r->prefix[0] = '\0';
	}
	if ((v = json_object_get(root, "clients")) && (rc = read_clients(r, v, c)))
		return rc;
	if ((v = json_object_get(root, "admins")) && (rc = read_admins(r, v, c)))
		return rc;
	if ((v = json_object_get(root, "modules")) && (rc = read_modules(r, v, c)))
		return rc;
	if ((v = json_object_get(root, "exec")) &&
	    (rc = jd_exec_config_read(v, &c->exec, r->err, r->errlen)))
		return rc;
	if ((v = json_object_get(root, "cgroups")) &&
	    (rc = jd_cgroup_config_read(v, &c->cgroups, r->err, r->errlen)))
		return rc;
	if ((v = json_object_get(root, "backends")) &&
	    (rc = jd_backends_config_read(v, &c->backends, r->err, r->errlen)))
		return rc;
	if ((v = json_object_get(root, "resources")) &&
	    (rc = jd_resources_config_read(v, c, r->err, r->errlen)))
		return rc;
	if ((v = json_object_get(root, "client_names")) &&
	    (rc = jd_security_config_read(v, &c->sec, r->err, r->errlen)))
		return rc;
	if ((v = json_object_get(root, "limits"))) {
		snprintf(r->prefix, sizeof(r->prefix), "limits.");
		if (!json_is_object(v))
			return fail(r, "", "must be an object");
		if ((rc = check_keys(r, v, limit_keys)))
			return rc;
		GET_U32(r, v, "frame_bytes", 1024, 64u << 20, c->frame_bytes);
		GET_U32(r, v, "handshake_ms", 10, 3600000, c->handshake_ms);
		GET_U32(r, v, "output_buffer_bytes", 4096, 1u << 30, c->output_buffer_bytes);
		GET_U32(r, v, "connections", 1, 1000000, c->max_connections);
		GET_U32(r, v, "connections_per_uid", 1, 1000000, c->max_connections_per_uid);
		GET_U32(r, v, "queued_jobs", 1, 100000000, c->max_queued_total);
		GET_U32(r, v, "batch_jobs", 1, 1000000, c->max_batch);
		GET_U32(r, v, "array_elements", 1, 10000000, c->max_array);
		GET_U32(r, v, "clients", 1, 1000000, c->max_clients);
		GET_U32(r, v, "client_idle_seconds", 0, 2592000, c->client_idle_seconds);
		GET_U32(r, v, "waits_per_connection", 1, 1000000, c->max_waits_per_conn);
		GET_U32(r, v, "wait_ids_per_uid", 1, 100000000, c->max_wait_ids_per_uid);
		GET_U32(r, v, "frame_ms", 10, 3600000, c->frame_ms);
		GET_U32(r, v, "partial_frame_bytes", 65536, 1u << 31, c->partial_frame_bytes);
		GET_U32(r, v, "value_bytes", 1024, 8u << 20, c->value_bytes);
		if ((w = json_object_get(v, "queued_bytes")) &&
		    (jp_size_parse(w, &c->queued_bytes) < 0 || c->queued_bytes < (1u << 20) ||
		     c->queued_bytes > (1ull << 50)))
			return fail(r, "queued_bytes", "must be a size from 1M to 1P (bytes, or \"4G\")");
		if ((w = json_object_get(v, "client_queued_bytes")) &&
		    (jp_size_parse(w, &c->client_queued_bytes) < 0 || c->client_queued_bytes < (1u << 20) ||
		     c->client_queued_bytes > (1ull << 50)))
			return fail(r, "client_queued_bytes",
				    "must be a size from 1M to 1P (bytes, or \"1G\")");
		r->prefix[0] = '\0';
	}
	if ((v = json_object_get(root, "metrics"))) {
		snprintf(r->prefix, sizeof(r->prefix), "metrics.");
		if (!json_is_object(v))
			return fail(r, "", "must be an object");
		if ((rc = check_keys(r, v, metrics_keys)))
			return rc;
		if ((rc = get_string(r, v, "listen", c->metrics_listen, sizeof(c->metrics_listen))))
			return rc;
		if ((rc = get_string(r, v, "textfile", c->metrics_textfile,
				      sizeof(c->metrics_textfile))))
			return rc;
		if (c->metrics_textfile[0] && c->metrics_textfile[0] != '/')
			return fail(r, "textfile", "must be an absolute path");
		GET_U32(r, v, "textfile_interval_ms", 100, 3600000, c->metrics_textfile_ms);
		r->prefix[0] = '\0';
	}
	if ((v = json_object_get(root, "journal"))) {
		snprintf(r->prefix, sizeof(r->prefix), "journal.");
		if (!json_is_object(v))
			return fail(r, "", "must be an object");
		if ((rc = check_keys(r, v, journal_keys)))
			return rc;
		if ((rc = get_string(r, v, "dir", c->journal_dir, sizeof(c->journal_dir))))
			return rc;
		if (c->journal_dir[0] && c->journal_dir[0] != '/')
			return fail(r, "dir", "must be an absolute path");
		u = (unsigned)c->journal_sync;
		if ((rc = get_enum(r, v, "sync", sync_names, 3, &u)))
			return rc;
		c->journal_sync = (enum jd_journal_sync_conf)u;
		u = (unsigned)c->journal_io;
		if ((rc = get_enum(r, v, "io", io_names, 2, &u)))
			return rc;
		c->journal_io = (enum jd_journal_io_conf)u;
		if ((rc = get_journal_cpu(r, v, &c->journal_cpu)))
			return rc;
		if (json_object_get(v, "gather_spin")) {
			if (!json_is_boolean(json_object_get(v, "gather_spin")))
				return fail(r, "gather_spin", "must be true or false");
			c->journal_gather_spin = json_is_true(json_object_get(v, "gather_spin"));
		}
		GET_U32(r, v, "batch_ms", 1, 10000, c->journal_batch_ms);
		{
			uint64_t cb = c->journal_compact_bytes;

			if ((rc = get_uint(r, v, "compact_bytes", 4096, 1ull << 40, &cb)))
				return rc;
			c->journal_compact_bytes = cb;
			cb = c->journal_segment_bytes;
			if ((rc = get_uint(r, v, "segment_bytes", 65536, 1ull << 32, &cb)))
				return rc;
			c->journal_segment_bytes = cb;
		}
		r->prefix[0] = '\0';
	}
	if ((v = json_object_get(root, "retention"))) {
		snprintf(r->prefix, sizeof(r->prefix), "retention.");
		if (!json_is_object(v))
			return fail(r, "", "must be an object");
		if ((rc = check_keys(r, v, ret_keys)))
			return rc;
		GET_U32(r, v, "jobs", 0, 100000000, c->retain_jobs);
		GET_U32(r, v, "seconds", 0, 100000000, c->retain_seconds);
		GET_U32(r, v, "events", 16, 10000000, c->retain_events);
		GET_U32(r, v, "min_seconds", 0, 100000000, c->retain_min_seconds);
		if ((w = json_object_get(v, "bytes")) &&
		    (jp_size_parse(w, &c->retain_bytes) < 0 || c->retain_bytes < (1u << 20) ||
		     c->retain_bytes > (1ull << 50)))
			return fail(r, "bytes", "must be a size from 1M to 1P (bytes, or \"256M\")");
		r->prefix[0] = '\0';
	}
	return 0;
}

int jd_config_load(struct jd_config *c, const char *path, char *err, size_t errlen)
{
	struct reader r = {.err = err, .errlen = errlen};
	json_error_t jerr;
	json_t *root;
	int rc;

	jd_config_defaults(c);
	if (errlen)
		err[0] = '\0';
	if (!path || !path[0])
		return 0;
	if (strlen(path) >= sizeof(c->path)) {
		snprintf(err, errlen, "config path too long");
		return JSCHED_EINVAL;
	}
	memcpy(c->path, path, strlen(path) + 1);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
		return JSCHED_EINVAL;
	}
	rc = read_root(&r, root, c);
	json_decref(root);
	if (rc) {
		if (rc == JSCHED_ENOMEM)
			snprintf(err, errlen, "out of memory");
		jd_config_free(c);
	}
	return rc;
}

const struct jd_client_conf *jd_config_client(const struct jd_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_clients; i++)
		if (strcmp(c->clients[i].name, name) == 0)
			return &c->clients[i];
	return &c->default_client;
}

/* resource_names_same: the two configs name the same resources (both are sorted). */
static bool resource_names_same(const struct jd_config *a, const struct jd_config *b)
{
	if (a->n_resources != b->n_resources)
		return false;
	for (size_t i = 0; i < a->n_resources; i++)
		if (strcmp(a->resources[i].name, b->resources[i].name) != 0)
			return false;
	return true;
}

const char *jd_config_diff_static(const struct jd_config *old, const struct jd_config *neu,
				  char *buf, size_t len)
{
	bool mods = old->n_modules != neu->n_modules;

	buf[0] = '\0';
	for (unsigned i = 0; !mods && i < old->n_modules; i++)
		mods = strcmp(old->modules[i], neu->modules[i]) != 0;
#define DIFF(cond, key)                                                                  \
	if (cond)                                                                        \
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "", key)
	DIFF(strcmp(old->socket, neu->socket), "socket");
	DIFF(old->socket_mode != neu->socket_mode, "socket_mode");
	DIFF(strcmp(old->socket_group, neu->socket_group), "socket_group");
	DIFF(old->workers != neu->workers, "workers");
	DIFF(old->fibers != neu->fibers, "fibers");
	DIFF(old->worker_sched != neu->worker_sched, "worker_scheduling");
	DIFF(old->fair_window_ms != neu->fair_window_ms, "fairness.window_ms");
	DIFF(old->retain_events != neu->retain_events, "retention.events");
	DIFF(mods, "modules");
	DIFF(strcmp(old->cgroups.mode, neu->cgroups.mode), "cgroups.mode");
	DIFF(strcmp(old->cgroups.name, neu->cgroups.name), "cgroups.name");
	DIFF(memcmp(&old->backends, &neu->backends, sizeof(old->backends)), "backends");
	DIFF(!resource_names_same(old, neu), "resources");
	DIFF(strcmp(old->metrics_listen, neu->metrics_listen), "metrics.listen");
	DIFF(strcmp(old->metrics_textfile, neu->metrics_textfile), "metrics.textfile");
	DIFF(old->metrics_textfile_ms != neu->metrics_textfile_ms, "metrics.textfile_interval_ms");
	DIFF(strcmp(old->journal_dir, neu->journal_dir), "journal.dir");
	DIFF(old->journal_sync != neu->journal_sync, "journal.sync");
	DIFF(old->journal_batch_ms != neu->journal_batch_ms, "journal.batch_ms");
	DIFF(old->journal_segment_bytes != neu->journal_segment_bytes, "journal.segment_bytes");
	DIFF(old->journal_io != neu->journal_io, "journal.io");
	DIFF(old->journal_cpu != neu->journal_cpu, "journal.cpu");
	DIFF(old->journal_gather_spin != neu->journal_gather_spin, "journal.gather_spin");
#undef DIFF
	return buf;
}

int jd_config_journal_dir(const struct jd_config *c, char *buf, size_t len)
{
	const char *sd = getenv("STATE_DIRECTORY"), *xdg = getenv("XDG_STATE_HOME"),
		   *home = getenv("HOME");

	if (c->journal_dir[0])
		snprintf(buf, len, "%s", c->journal_dir);
	else if (sd && sd[0] == '/')
		snprintf(buf, len, "%.*s", (int)strcspn(sd, ":"), sd); /* the first of a list */
	else if (geteuid() == 0)
		snprintf(buf, len, "/var/lib/jschedd");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, len, "%s/jschedd", xdg);
	else if (home && home[0] == '/')
		snprintf(buf, len, "%s/.local/state/jschedd", home);
	else {
		snprintf(buf, len, "journal.dir: not set, and there is no $HOME to put it under");
		return JSCHED_EINVAL;
	}
	return 0;
}
