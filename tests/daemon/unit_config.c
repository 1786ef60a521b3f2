/* tests/daemon/unit_config.c: the config reader on its own (no daemon): defaults with no
 * file, every kind of bad value refused with its dotted key, client entries inheriting
 * from "default", and the keys a reload cannot change. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/config.h"
#include "jsched/error.h"

static char path[64];

static int load(struct jd_config *c, const char *json, char *err, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	return jd_config_load(c, path, err, len);
}

/* refused: json must fail, with `key` at the start of the message. */
static void refused(const char *json, const char *key)
{
	struct jd_config c;
	char err[512];

	assert_int_equal(load(&c, json, err, sizeof(err)), JSCHED_EINVAL);
	if (strncmp(err, key, strlen(key)) != 0)
		fail_msg("config %s: message \"%s\" does not start with %s", json, err, key);
	jd_config_free(&c);
}

static void test_defaults(void **state)
{
	struct jd_config c;
	char err[256];

	(void)state;
	assert_int_equal(jd_config_load(&c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.default_client.weight, 1);
	assert_int_equal(c.frame_bytes, 1u << 20);
	assert_int_equal(c.policy, JD_POLICY_FAIR);
	assert_true(c.fair_drf);
	assert_int_equal(c.backfill_max, 16);
	assert_int_equal(jd_config_client(&c, "anyone")->weight, 1);
	jd_config_free(&c);
	assert_int_equal(load(&c, "{}", err, sizeof(err)), 0);
	jd_config_free(&c);
}

static void test_bad_values_named(void **state)
{
	(void)state;
	refused("{\"workers\": -1}", "workers");
	refused("{\"workers\": \"two\"}", "workers");
	refused("{\"idle_policy\": \"nap\"}", "idle_policy");
	refused("{\"worker_scheduling\": \"fast\"}", "worker_scheduling");
	refused("{\"loop_poll_us\": 1001}", "loop_poll_us");
	refused("{\"loop_poll_us\": -1}", "loop_poll_us");
	refused("{\"loop_poll_us\": \"50us\"}", "loop_poll_us");
	refused("{\"socket_mode\": \"0999\"}", "socket_mode");
	refused("{\"socket_group\": \"no-such-group-here\"}", "socket_group");
	refused("{\"limits\": {\"frame_bytes\": 10}}", "limits.frame_bytes");
	refused("{\"limits\": {\"handshake\": 10}}", "limits.handshake");
	refused("{\"limits\": 5}", "limits.");
	refused("{\"fairness\": {\"policy\": \"lottery\"}}", "fairness.policy");
	refused("{\"clients\": {\"default\": {\"weight\": 0}}}", "clients.default.weight");
	refused("{\"clients\": {\"ci\": {\"overflow\": \"spill\"}}}", "clients.ci.overflow");
	refused("{\"clients\": {\"ci\": {\"colour\": 1}}}", "clients.ci.colour");
	refused("{\"admins\": [\"no-such-user-here\"]}", "admins");
	refused("{\"modules\": [42]}", "modules");
	refused("{\"retention\": {\"events\": 1}}", "retention.events");
	refused("{\"limits\": {\"clients\": 0}}", "limits.clients");
	refused("{\"limits\": {\"client_idle_seconds\": 2592001}}", "limits.client_idle_seconds");
	refused("{\"limits\": {\"queued_bytes\": \"512K\"}}", "limits.queued_bytes");
	refused("{\"limits\": {\"client_queued_bytes\": \"lots\"}}", "limits.client_queued_bytes");
	refused("{\"limits\": {\"value_bytes\": 1000}}", "limits.value_bytes");
	refused("{\"limits\": {\"value_bytes\": 8388609}}", "limits.value_bytes");
	refused("{\"retention\": {\"bytes\": 4096}}", "retention.bytes");
	refused("{\"retention\": {\"bytes\": \"2X\"}}", "retention.bytes");
	refused("{\"retention\": {\"min_seconds\": -1}}", "retention.min_seconds");
	refused("{\"clients\": {\"ci\": {\"memory_max\": \"2X\"}}}", "clients.ci.memory_max");
	refused("{\"clients\": {\"ci\": {\"memory_max\": 4096}}}", "clients.ci.memory_max");
	refused("{\"clients\": {\"ci\": {\"cpu_max\": -1}}}", "clients.ci.cpu_max");
	refused("{\"clients\": {\"ci\": {\"pids_max\": 5000000}}}", "clients.ci.pids_max");
	refused("{\"cgroups\": {\"mode\": \"v3\"}}", "cgroups.mode");
	refused("{\"cgroups\": {\"name\": \"../x\"}}", "cgroups.name");
	refused("{\"cgroups\": {\"root\": \"/\"}}", "cgroups.root");
	refused("{\"cgroups\": true}", "cgroups");
	refused("{\"resources\": []}", "resources");
	refused("{\"resources\": {\"cpus\": 4}}", "resources.cpus");
	refused("{\"resources\": {\"cpus\": {\"count\": 0}}}", "resources.cpus.count");
	refused("{\"resources\": {\"cpus\": {\"count\": \"8\"}}}", "resources.cpus.count");
	refused("{\"resources\": {\"cpus\": {\"count\": 8, \"env\": \"X\"}}}", "resources.cpus.env");
	refused("{\"resources\": {\"memory\": {\"bytes\": \"2X\"}}}", "resources.memory.bytes");
	refused("{\"resources\": {\"memory\": {\"bytes\": 4096}}}", "resources.memory.bytes");
	refused("{\"resources\": {\"memory\": {\"reserve\": -1}}}", "resources.memory.reserve");
	refused("{\"resources\": {\"memory\": {\"count\": 4}}}", "resources.memory.count");
	refused("{\"resources\": {\"memory\": {\"bytes\": \"2G\", \"reserve\": \"1G\"}}}",
		"resources.memory");
	refused("{\"resources\": {\"GPU\": {\"count\": 1}}}", "resources.GPU");
	refused("{\"resources\": {\"process\": {\"count\": 1}}}", "resources.process");
	refused("{\"resources\": {\"gpu\": {}}}", "resources.gpu.count");
	refused("{\"resources\": {\"gpu\": {\"count\": 1025}}}", "resources.gpu.count");
	refused("{\"resources\": {\"gpu\": {\"count\": -1}}}", "resources.gpu.count");
	refused("{\"resources\": {\"gpu\": {\"count\": 1, \"colour\": 1}}}", "resources.gpu.colour");
	refused("{\"resources\": {\"gpu\": {\"count\": 1, \"env\": \"A=B\"}}}", "resources.gpu.env");
	refused("{\"resources\": {\"gpu\": {\"count\": 1, \"env\": \"JSCHED_X\"}}}", "resources.gpu.env");
	refused("{\"resources\": {\"a\": {\"count\": 1}, \"b\": {\"count\": 1}, \"c\": {\"count\": 1}, "
		"\"d\": {\"count\": 1}, \"e\": {\"count\": 1}, \"f\": {\"count\": 1}}}", "resources");
	refused("{\"fairness\": {\"drf\": 1}}", "fairness.drf");
	refused("{\"fairness\": {\"backfill_max\": -1}}", "fairness.backfill_max");
	refused("{\"journal\": {\"cpu\": \"fast\"}}", "journal.cpu");
	refused("{\"journal\": {\"cpu\": -1}}", "journal.cpu");
	refused("{\"journal\": {\"cpu\": 1024}}", "journal.cpu");
	refused("{\"journal\": {\"gather_spin\": 1}}", "journal.gather_spin");
	refused("{\"tuning\": 1}", "tuning");
	refused("[1, 2]", "");
}

static void test_not_json(void **state)
{
	struct jd_config c;
	char err[512];

	(void)state;
	assert_int_equal(load(&c, "{\"workers\": 2,}", err, sizeof(err)), JSCHED_EINVAL);
	assert_non_null(strstr(err, path)); /* file:line: what jansson says */
	assert_int_equal(load(&c, "{\"workers\": 1, \"workers\": 2}", err, sizeof(err)), JSCHED_EINVAL);
}

static void test_clients_inherit(void **state)
{
	struct jd_config c;
	char err[256];

	(void)state;
	assert_int_equal(load(&c, "{\"clients\": {\"default\": {\"max_queued\": 7, \"overflow\": \"block\"},"
				  " \"ci\": {\"weight\": 3}}}", err, sizeof(err)), 0);
	assert_int_equal(jd_config_client(&c, "ci")->weight, 3);
	assert_int_equal(jd_config_client(&c, "ci")->max_queued, 7);
	assert_int_equal(jd_config_client(&c, "ci")->overflow, JD_OVERFLOW_BLOCK);
	assert_int_equal(jd_config_client(&c, "other")->weight, 1);
	assert_int_equal(jd_config_client(&c, "other")->max_queued, 7);
	jd_config_free(&c);
}

/* resources: sorted by name; counts and env are live, the set of names is not. */
static void test_resources(void **state)
{
	struct jd_config a, b;
	char err[256], buf[256];

	(void)state;
	assert_int_equal(load(&a, "{\"resources\": {\"licence_x\": {\"count\": 5}, "
			      "\"gpu\": {\"count\": 2, \"env\": \"CUDA_VISIBLE_DEVICES\"}}}", err, sizeof(err)), 0);
	assert_int_equal(a.n_resources, 2);
	assert_string_equal(a.resources[0].name, "gpu");
	assert_string_equal(a.resources[0].env, "CUDA_VISIBLE_DEVICES");
	assert_int_equal(a.resources[0].count, 2);
	assert_string_equal(jd_resources_config_find(&a, "licence_x")->env, "");
	assert_null(jd_resources_config_find(&a, "tpu"));
	assert_int_equal(load(&b, "{\"resources\": {\"gpu\": {\"count\": 0}, \"licence_x\": {\"count\": 9}}}",
			      err, sizeof(err)), 0);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "");
	jd_config_free(&b);
	assert_int_equal(load(&b, "{\"resources\": {\"gpu\": {\"count\": 2}}}", err, sizeof(err)), 0);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "resources");
	jd_config_free(&a);
	jd_config_free(&b);
	/* cpus and memory: not names (5 names beside them), live. */
	assert_int_equal(load(&a, "{\"resources\": {\"cpus\": {\"count\": 7.5}, \"memory\": "
			      "{\"bytes\": \"16G\"}, \"a\": {\"count\": 1}, \"b\": {\"count\": 1}, "
			      "\"c\": {\"count\": 1}, \"d\": {\"count\": 1}, \"e\": {\"count\": 1}}}",
			      err, sizeof(err)), 0);
	assert_int_equal(a.n_resources, 5);
	assert_int_equal(a.machine.cpus_milli, 7500);
	assert_int_equal(a.machine.mem_bytes, 16ull << 30);
	assert_int_equal(a.machine.mem_reserve, 0);
	assert_null(jd_resources_config_find(&a, "cpus"));
	assert_int_equal(load(&b, "{\"resources\": {\"memory\": {\"reserve\": \"1G\"}, \"a\": {\"count\": 1}, "
			      "\"b\": {\"count\": 1}, \"c\": {\"count\": 1}, \"d\": {\"count\": 1}, "
			      "\"e\": {\"count\": 2}}}", err, sizeof(err)), 0);
	assert_int_equal(b.machine.cpus_milli, 0);	/* the machine's */
	assert_int_equal(b.machine.mem_bytes, 0);
	assert_int_equal(b.machine.mem_reserve, 1ull << 30);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "");
	jd_config_free(&a);
	jd_config_free(&b);
}

static void test_static_diff(void **state)
{
	struct jd_config a, b;
	char err[256], buf[256];

	(void)state;
	assert_int_equal(load(&a, "{\"workers\": 2, \"idle_policy\": \"sleep\"}", err, sizeof(err)), 0);
	assert_int_equal(load(&b, "{\"workers\": 4, \"idle_policy\": \"spin\", \"socket_mode\": \"0660\"}",
			      err, sizeof(err)), 0);
	/* idle_policy is live; workers and socket_mode need a restart. */
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "socket_mode,workers");
	jd_config_free(&a);
	jd_config_free(&b);
	/* The workers' scheduling: "low" unless set; decided at start. */
	assert_int_equal(load(&a, "{}", err, sizeof(err)), 0);
	assert_int_equal(a.worker_sched, 2);
	assert_int_equal(load(&b, "{\"worker_scheduling\": \"idle\"}", err, sizeof(err)), 0);
	assert_int_equal(b.worker_sched, 3);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "worker_scheduling");
	jd_config_free(&a);
	jd_config_free(&b);
	/* The loop's poll after a request: off unless set; changeable live. */
	assert_int_equal(load(&a, "{}", err, sizeof(err)), 0);
	assert_int_equal(a.loop_poll_us, 0);
	assert_int_equal(load(&b, "{\"loop_poll_us\": 1000}", err, sizeof(err)), 0);
	assert_int_equal(b.loop_poll_us, 1000);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "");
	jd_config_free(&a);
	jd_config_free(&b);
	/* Client limits, inherited from the default like the rest. */
	assert_int_equal(load(&a, "{\"clients\": {\"default\": {\"memory_max\": \"2G\"}, "
			      "\"ci\": {\"pids_max\": 100, \"cpu_max\": 1.5}}}", err, sizeof(err)), 0);
	assert_int_equal(jd_config_client(&a, "ci")->memory_max, 2ull << 30);
	assert_int_equal(jd_config_client(&a, "ci")->pids_max, 100);
	assert_int_equal(jd_config_client(&a, "ci")->cpu_milli, 1500);
	assert_int_equal(jd_config_client(&a, "other")->pids_max, 0);
	jd_config_free(&a);
	/* The journal flusher's CPU: "auto" unless set; decided at start. */
	assert_int_equal(load(&a, "{}", err, sizeof(err)), 0);
	assert_int_equal(a.journal_cpu, JD_JOURNAL_CPU_AUTO);
	assert_int_equal(load(&b, "{\"journal\": {\"cpu\": \"any\"}}", err, sizeof(err)), 0);
	assert_int_equal(b.journal_cpu, JD_JOURNAL_CPU_ANY);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "journal.cpu");
	jd_config_free(&b);
	assert_int_equal(load(&b, "{\"journal\": {\"cpu\": 1}}", err, sizeof(err)), 0);
	assert_int_equal(b.journal_cpu, 1);
	assert_true(b.journal_gather_spin);
	jd_config_free(&b);
	assert_int_equal(load(&b, "{\"journal\": {\"gather_spin\": false}}", err, sizeof(err)), 0);
	assert_false(b.journal_gather_spin);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "journal.gather_spin");
	jd_config_free(&a);
	jd_config_free(&b);
	/* The cgroups are decided at start. */
	assert_int_equal(load(&a, "{}", err, sizeof(err)), 0);
	assert_string_equal(a.cgroups.mode, "auto");
	assert_int_equal(load(&b, "{\"cgroups\": {\"mode\": \"off\", \"name\": \"j1\"}}", err,
			      sizeof(err)), 0);
	assert_string_equal(jd_config_diff_static(&a, &b, buf, sizeof(buf)), "cgroups.mode,cgroups.name");
	jd_config_free(&a);
	jd_config_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_values_named),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_clients_inherit),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_static_diff),
	};
	int rc;

	snprintf(path, sizeof(path), "/tmp/jd-unit-config.%d.json", (int)getpid());
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}
