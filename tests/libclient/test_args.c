/* test_args.c: the jsched tool's command line (libclient/tool/args.c): every subcommand's
 * options, the defaults, and that each mistake is refused with a message naming the
 * subcommand, the option and the bad value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libclient/tool/args.h"

#include <jsched/jsched.h>

static struct cli_cmd cmd;
static char err[512];

/* Parse a NULL-terminated list of words (after "jsched"); returns cli_parse's status. */
static int parse(const char *first, ...)
{
	static char *argv[64];
	static char store[64][128];
	int argc = 0;
	argv[argc++] = (char *)(uintptr_t)"jsched";
	va_list ap;
	va_start(ap, first);
	for (const char *w = first; w != NULL && argc < 63; w = va_arg(ap, const char *)) {
		snprintf(store[argc], sizeof store[argc], "%s", w);
		argv[argc] = store[argc];
		argc++;
	}
	va_end(ap);
	argv[argc] = NULL;
	cli_cmd_free(&cmd);
	return cli_parse(argc, argv, &cmd, err, sizeof err);
}

#define OK(...) assert_int_equal(parse(__VA_ARGS__, NULL), CLI_EXIT_OK)
/* Refused, with a message containing `what`. */
#define BAD(what, ...)                                                             \
	do {                                                                       \
		assert_int_equal(parse(__VA_ARGS__, NULL), CLI_EXIT_USAGE);       \
		if (strstr(err, what) == NULL)                                     \
			fail_msg("message \"%s\" does not say \"%s\"", err, what); \
	} while (0)

static void test_global(void **state)
{
	(void)state;
	assert_int_equal(parse(NULL), CLI_EXIT_USAGE); /* no command */
	assert_int_equal(cmd.verb, CLI_HELP);
	OK("--help");
	assert_int_equal(cmd.verb, CLI_HELP);
	assert_int_equal(cmd.help_for, CLI_HELP);
	OK("-V");
	assert_int_equal(cmd.verb, CLI_VERSION);
	OK("-s", "/tmp/j.sock", "--client-name", "ci", "ls");
	assert_string_equal(cmd.socket, "/tmp/j.sock");
	assert_string_equal(cmd.client_name, "ci");
	assert_int_equal(cmd.verb, CLI_LS);
	OK("--reply-timeout", "2s", "metrics");
	assert_int_equal(cmd.reply_timeout_ms, 2000);
	OK("metrics");
	assert_int_equal(cmd.reply_timeout_ms, -1);
	BAD("--reply-timeout: expected a duration", "--reply-timeout", "soon", "ls");
	OK("--socket=/x.sock", "metrics");
	assert_string_equal(cmd.socket, "/x.sock");
	OK("help", "submit");
	assert_int_equal(cmd.verb, CLI_HELP);
	assert_int_equal(cmd.help_for, CLI_SUBMIT);
	OK("help", "admin");
	assert_int_equal(cmd.help_for, CLI_ADMIN_RELOAD);
	BAD("unknown command 'frobnicate'", "frobnicate");
	BAD("unknown option '--bogus'", "--bogus", "ls");
	BAD("--socket needs a value", "--socket");
	BAD("no such command 'nope'", "help", "nope");
	BAD("--socket: empty path", "--socket", "", "ls");
}

static void test_help_everywhere(void **state)
{
	(void)state;
	static const char *const verbs[] = { "submit", "wait", "status", "cancel", "ls", "output", "watch",
					     "metrics", "top", "drain", "admin" };
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
		OK(verbs[i], "--help");
		assert_int_equal(cmd.verb, CLI_HELP);
		assert_int_not_equal(cmd.help_for, CLI_HELP);
		const char *text = cli_help(cmd.help_for);
		char want[64];
		snprintf(want, sizeof want, "usage: jsched %s", verbs[i]);
		assert_non_null(strstr(text, want));
		OK(verbs[i], "-h");
		assert_int_equal(cmd.verb, CLI_HELP);
	}
	OK("admin", "set-client", "x", "--help");
	assert_int_equal(cmd.verb, CLI_HELP);
	/* The exit codes are documented in the main help. */
	const char *main_help = cli_help(CLI_HELP);
	assert_non_null(strstr(main_help, "Exit status"));
	assert_non_null(strstr(main_help, "69"));
	assert_non_null(strstr(main_help, "128+N"));
}

static void test_submit(void **state)
{
	(void)state;
	OK("submit", "--", "make", "-j2", "test");
	assert_int_equal(cmd.verb, CLI_SUBMIT);
	assert_string_equal(cmd.command[0], "make");
	assert_string_equal(cmd.command[2], "test");
	assert_null(cmd.command[3]);
	assert_int_equal(cmd.priority, -1);
	assert_int_equal(cmd.timeout_ms, -1);
	assert_false(cmd.wait);

	/* Options after -- belong to the command. */
	OK("submit", "--name", "n", "--", "ls", "--help", "-w");
	assert_string_equal(cmd.command[1], "--help");
	assert_false(cmd.wait);

	OK("submit", "--fn", "echo", "--args", "{\"x\": 1}", "--priority", "high", "--deadline", "1.5m", "--cost", "9",
	   "--after", "4", "--after=5", "--name", "nightly", "-w", "--timeout", "500ms", "--json");
	assert_string_equal(cmd.fn, "echo");
	assert_string_equal(cmd.args, "{\"x\": 1}");
	assert_int_equal(cmd.priority, 2);
	assert_int_equal(cmd.deadline_ms, 90000);
	assert_int_equal(cmd.cost, 9);
	assert_int_equal(cmd.n_ids, 2);
	assert_int_equal(cmd.ids[1], 5);
	assert_int_equal(cmd.n_any_of, 0);
	assert_true(cmd.wait);
	assert_int_equal(cmd.timeout_ms, 500);
	assert_true(cmd.json);

	OK("submit", "--any-of", "4", "--any-of", "7", "--env", "A=1", "--env", "B=", "--clear-env", "--cwd", "/tmp",
	   "--stdin", "-", "--time-limit", "10s", "--", "cat");
	assert_int_equal(cmd.n_any_of, 2);
	assert_int_equal(cmd.any_of[1], 7);
	assert_int_equal(cmd.n_ids, 0);
	assert_int_equal(cmd.n_env, 2);
	assert_string_equal(cmd.env[1], "B=");
	assert_null(cmd.env[2]);
	assert_true(cmd.clear_env);
	assert_string_equal(cmd.cwd, "/tmp");
	assert_string_equal(cmd.stdin_file, "-");
	assert_int_equal(cmd.time_limit_ms, 10000);

	OK("submit", "--batch", "graph.json", "--wait", "--timeout", "1m", "--json");
	assert_string_equal(cmd.batch, "graph.json");
	assert_true(cmd.wait);
	assert_int_equal(cmd.timeout_ms, 60000);
	BAD("--priority cannot be combined with --batch", "submit", "--batch", "g.json", "--priority", "high");
	BAD("a command cannot be combined with --batch", "submit", "--batch", "g.json", "--", "ls");
	BAD("--timeout needs --wait", "submit", "--batch", "g.json", "--timeout", "1s");
	BAD("nothing to run", "submit");
	BAD("no command after --", "submit", "--");
	/* The first word that is not an option starts the command, without "--"; what
	 * follows is the command's, options included. */
	OK("submit", "sleep", "1");
	assert_string_equal(cmd.command[0], "sleep");
	assert_string_equal(cmd.command[1], "1");
	assert_null(cmd.command[2]);
	OK("submit", "--name", "x", "make", "-j8", "--wait");
	assert_string_equal(cmd.command[0], "make");
	assert_string_equal(cmd.command[2], "--wait");
	assert_false(cmd.wait);
	assert_string_equal(cmd.name, "x");
	/* jsched's own options after the subcommand, before the command. */
	OK("submit", "-s", "/tmp/x.sock", "--client-name", "ci", "--reply-timeout", "2s", "true");
	assert_string_equal(cmd.socket, "/tmp/x.sock");
	assert_string_equal(cmd.client_name, "ci");
	assert_int_equal(cmd.reply_timeout_ms, 2000);
	assert_string_equal(cmd.command[0], "true");
	BAD("either --fn NAME or a command", "submit", "--fn", "echo", "--", "ls");
	BAD("--priority: expected low, normal, high or critical, not 'urgent'", "submit", "--priority", "urgent",
	    "--", "ls");
	BAD("--deadline: expected a duration", "submit", "--deadline", "soon", "--", "ls");
	BAD("--deadline: must be more than 0", "submit", "--deadline", "0", "--", "ls");
	BAD("--after: expected a whole number above 0, not 'x'", "submit", "--after", "x", "--", "ls");
	BAD("--after: expected a whole number above 0, not '0'", "submit", "--after", "0", "--", "ls");
	OK("submit", "--after", "1", "--any-of", "2", "--any-of", "3", "--", "ls"); /* both gates */
	assert_int_equal(cmd.n_ids, 1);
	assert_int_equal(cmd.n_any_of, 2);
	BAD("--env: expected NAME=VALUE, not 'A'", "submit", "--env", "A", "--", "ls");
	BAD("--args needs --fn", "submit", "--args", "1", "--", "ls");
	BAD("--cwd applies to exec jobs", "submit", "--fn", "echo", "--cwd", "/");
	BAD("--timeout needs --wait", "submit", "--timeout", "1s", "--", "ls");
	BAD("--cost: expected a whole number above 0", "submit", "--cost", "0", "--", "ls");
	BAD("-w takes no value", "submit", "-wx", "--", "ls");
	BAD("--wait takes no value", "submit", "--wait=yes", "--", "ls");
	BAD("--name needs a value", "submit", "--name");
	BAD("unknown option '--prio'", "submit", "--prio", "high", "--", "ls");
	/* --needs: repeatable, or a comma list; a name again takes the later count. */
	OK("submit", "--needs", "gpu=1", "--needs", "licence_x=2,tpu=3,gpu=2", "--", "ls");
	assert_int_equal(cmd.n_needs, 3);
	assert_string_equal(cmd.need_name[0], "gpu");
	assert_int_equal(cmd.need_count[0], 2);
	assert_string_equal(cmd.need_name[2], "tpu");
	assert_int_equal(cmd.need_count[2], 3);
	BAD("--needs: expected NAME=N (gpu=1), not 'gpu'", "submit", "--needs", "gpu", "--", "ls");
	BAD("--needs gpu: expected a count from 1 to 1024", "submit", "--needs", "gpu=0", "--", "ls");
	BAD("--needs gpu: expected a count from 1 to 1024", "submit", "--needs", "gpu=1x", "--", "ls");
	BAD("--needs gpu: expected a count from 1 to 1024", "submit", "--needs", "gpu=2000", "--", "ls");
	BAD("'GPU' is not a resource name", "submit", "--needs", "GPU=1", "--", "ls");
	BAD("--needs: at most 8 resources", "submit", "--needs", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1", "--", "ls");
	BAD("--needs applies to exec jobs", "submit", "--fn", "echo", "--needs", "gpu=1");
	BAD("--needs cannot be combined with --batch", "submit", "--batch", "g.json", "--needs", "gpu=1");
}

static void test_job_commands(void **state)
{
	(void)state;
	OK("wait", "3", "--any", "4", "--timeout", "2s", "5");
	assert_int_equal(cmd.verb, CLI_WAIT);
	assert_int_equal(cmd.n_ids, 3);
	assert_int_equal(cmd.ids[2], 5);
	assert_true(cmd.any);
	assert_int_equal(cmd.timeout_ms, 2000);
	BAD("expected one or more job ids", "wait");
	OK("wait", "--all");
	assert_true(cmd.mine);
	assert_int_equal(cmd.n_ids, 0);
	OK("cancel", "--name", "ci-*", "7");
	assert_string_equal(cmd.name_glob, "ci-*");
	assert_int_equal(cmd.n_ids, 1);
	OK("status", "--all");
	BAD("unknown option", "hold", "--all");
	{
		/* More ids than the parser once held (256): they grow. */
		static char *argv[400];
		static char words[400][12];
		int argc = 0;
		argv[argc++] = (char *)(uintptr_t)"jsched";
		argv[argc++] = (char *)(uintptr_t)"status";
		for (int i = 1; i <= 300; i++) {
			snprintf(words[i], sizeof words[i], "%d", i);
			argv[argc++] = words[i];
		}
		argv[argc] = NULL;
		cli_cmd_free(&cmd);
		assert_int_equal(cli_parse(argc, argv, &cmd, err, sizeof err), CLI_EXIT_OK);
		assert_int_equal(cmd.n_ids, 300);
		assert_int_equal(cmd.ids[299], 300);
	}
	BAD("job id: expected a whole number above 0, not 'abc'", "wait", "abc");
	BAD("job id: expected a whole number above 0, not '-3'", "wait", "--", "-3");

	OK("status", "--json", "1", "2");
	assert_int_equal(cmd.verb, CLI_STATUS);
	assert_true(cmd.json);
	assert_int_equal(cmd.n_ids, 2);
	OK("status", "-l", "7");
	assert_true(cmd.longform);
	OK("cancel", "9");
	assert_int_equal(cmd.verb, CLI_CANCEL);
	OK("cancel", "--json", "9");
	assert_true(cmd.json);
	/* jsched's own options after the subcommand and its operands. */
	OK("status", "7", "-s", "/tmp/y.sock", "-C", "nightly");
	assert_string_equal(cmd.socket, "/tmp/y.sock");
	assert_string_equal(cmd.client_name, "nightly");
	assert_int_equal(cmd.n_ids, 1);
	BAD("--socket: empty path", "ls", "--socket", "");
	/* ls: --limit (default 50), --sort, -o, --name. */
	OK("ls");
	assert_int_equal(cmd.limit, CLI_LS_DEFAULT_LIMIT);
	assert_null(cmd.columns);
	OK("ls", "--limit", "0", "--sort", "-run", "-o", "ID,state,command", "--name", "ci-*");
	assert_int_equal(cmd.limit, 0);
	assert_string_equal(cmd.sort, "-run");
	assert_string_equal(cmd.columns, "ID,state,command");
	assert_string_equal(cmd.name_glob, "ci-*");
	BAD("-o: unknown column 'colour'", "ls", "-o", "id,colour");
	BAD("--sort: unknown column 'speed'", "ls", "--sort", "speed");
	BAD("--sort: one column", "ls", "--sort", "id,age");
	BAD("--limit: expected a whole number, not 'many'", "ls", "--limit", "many");
	/* call OP [JSON] */
	OK("call", "status", "{\"job\": 5}");
	assert_int_equal(cmd.verb, CLI_CALL);
	assert_string_equal(cmd.op, "status");
	assert_string_equal(cmd.op_json, "{\"job\": 5}");
	OK("call", "ping");
	assert_null(cmd.op_json);
	BAD("expected an operation", "call");
	BAD("unexpected argument 'x'", "call", "ping", "{}", "x");
	OK("drain", "--json");
	assert_true(cmd.json);
	OK("admin", "reload", "--json");
	assert_true(cmd.json);
	OK("admin", "-s", "/tmp/a.sock", "reload");
	assert_int_equal(cmd.verb, CLI_ADMIN_RELOAD);
	assert_string_equal(cmd.socket, "/tmp/a.sock");
	BAD("--json goes after the admin command", "admin", "--json", "reload");
	BAD("--socket: empty path", "admin", "--socket", "", "reload");
	OK("admin", "shutdown", "--immediate", "-C", "ops");
	assert_string_equal(cmd.client_name, "ops");

	OK("output", "--stderr", "12");
	assert_int_equal(cmd.verb, CLI_OUTPUT);
	assert_true(cmd.err_only);
	BAD("expected one job id, got 2", "output", "1", "2");
	BAD("cannot be combined", "output", "--stdout", "--stderr", "1");

	OK("ls", "--state", "queued,running", "--client", "batch", "--all");
	assert_string_equal(cmd.states, "queued,running");
	assert_string_equal(cmd.client, "batch");
	assert_true(cmd.all);
	BAD("unknown state 'runing'", "ls", "--state", "queued,runing");
	BAD("unexpected argument '5'", "ls", "5");

	OK("watch", "--since", "117", "-n", "3");
	assert_int_equal(cmd.since, 117);
	assert_int_equal(cmd.count, 3);
	OK("watch", "--since", "5", "--instance", "111-22");
	assert_string_equal(cmd.instance, "111-22");
	BAD("--instance needs --since", "watch", "--instance", "111-22");
	OK("watch");
	assert_int_equal(cmd.since, -1);
	assert_int_equal(cmd.count, 0);
	BAD("-n: expected a whole number above 0", "watch", "-n", "0");
}

static void test_daemon_commands(void **state)
{
	(void)state;
	OK("metrics", "--json");
	assert_int_equal(cmd.verb, CLI_METRICS);
	assert_true(cmd.json);
	OK("top", "--once");
	assert_int_equal(cmd.verb, CLI_TOP);
	assert_int_equal(cmd.count, 1);
	assert_int_equal(cmd.interval_ms, 1000);
	OK("top", "-n", "3", "--interval", "250ms");
	assert_int_equal(cmd.count, 3);
	assert_int_equal(cmd.interval_ms, 250);
	BAD("--interval: at least 10ms", "top", "--interval", "1ms");

	OK("drain", "--client", "batch", "--running");
	assert_int_equal(cmd.verb, CLI_DRAIN);
	assert_true(cmd.running);

	OK("admin", "reload");
	assert_int_equal(cmd.verb, CLI_ADMIN_RELOAD);
	OK("admin", "shutdown", "--immediate");
	assert_int_equal(cmd.verb, CLI_ADMIN_SHUTDOWN);
	assert_true(cmd.immediate);
	OK("admin", "shutdown");
	assert_false(cmd.immediate);
	OK("admin", "set-client", "batch", "--weight", "3", "--max-queued", "100", "--overflow", "drop_oldest");
	assert_int_equal(cmd.verb, CLI_ADMIN_SET_CLIENT);
	assert_string_equal(cmd.client, "batch");
	assert_int_equal(cmd.weight, 3);
	assert_int_equal(cmd.max_queued, 100);
	assert_string_equal(cmd.overflow, "drop_oldest");
	BAD("expected reload, set-client or shutdown", "admin");
	BAD("unknown admin command 'restart'", "admin", "restart");
	BAD("expected a client name first", "admin", "set-client", "--weight", "3");
	BAD("nothing to set", "admin", "set-client", "batch");
	BAD("--overflow: expected reject, drop_oldest, drop_newest or block", "admin", "set-client", "b", "--overflow",
	    "drop");
	BAD("--weight: expected a whole number above 0", "admin", "set-client", "b", "--weight", "-1");
	BAD("--weight: 99999999999 is too large", "admin", "set-client", "b", "--weight", "99999999999");
	BAD("jsched admin shutdown: unknown option '--now'", "admin", "shutdown", "--now");
}

static void test_durations(void **state)
{
	(void)state;
	int64_t ms;
	assert_int_equal(cli_parse_duration("500ms", &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(cli_parse_duration("10", &ms), 0);
	assert_int_equal(ms, 10000);
	assert_int_equal(cli_parse_duration("0.25s", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(cli_parse_duration("2h", &ms), 0);
	assert_int_equal(ms, 7200000);
	assert_int_equal(cli_parse_duration("1.5m", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(cli_parse_duration("-1s", &ms), -1);
	assert_int_equal(cli_parse_duration("5 s", &ms), -1);
	assert_int_equal(cli_parse_duration("5d", &ms), -1);
	assert_int_equal(cli_parse_duration("", &ms), -1);
	assert_int_equal(cli_parse_duration("nan", &ms), -1);
	assert_int_equal(cli_parse_duration("1e300h", &ms), -1);
}

/* --delay and --at: the instant sent, what an --at was (today's, tomorrow's, past), and
 * each bad form refused naming the option.  cli_parse_at is checked in UTC against a fixed
 * "now" (2026-12-01 11:00:00 UTC), so the answers are exact. */
static void test_delay_at(void **state)
{
	const int64_t now = 1796122800000; /* 2026-12-01T11:00:00Z */
	enum cli_at_when when;
	int64_t ms, t0;

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	assert_int_equal(cli_parse_at("14:30", now, &ms, &when), 0);
	assert_int_equal(ms, now + 3 * 3600000 + 30 * 60000);
	assert_int_equal(when, CLI_AT_FUTURE);
	assert_int_equal(cli_parse_at("10:59:59", now, &ms, &when), 0);
	assert_int_equal(ms, now - 1000 + 86400000);
	assert_int_equal(when, CLI_AT_TOMORROW);
	assert_int_equal(cli_parse_at("11:00", now, &ms, &when), 0); /* now is not ahead */
	assert_int_equal(when, CLI_AT_TOMORROW);
	assert_int_equal(cli_parse_at("2026-12-24T08:00", now, &ms, &when), 0);
	assert_int_equal(ms, 1798099200000);
	assert_int_equal(when, CLI_AT_FUTURE);
	assert_int_equal(cli_parse_at("2026-12-24 08:00:30Z", now, &ms, &when), 0);
	assert_int_equal(ms, 1798099230000);
	assert_int_equal(cli_parse_at("2026-01-01T00:00", now, &ms, &when), 0);
	assert_int_equal(when, CLI_AT_PAST);
	static const char *const bad[] = {
		"25:00", "14:60", "14:30:61", "1430", "14:3", "2:30", "14:30 ", "tomorrow", "",
		"2026-02-30T08:00", "2026-13-01T08:00", "2026-12-24", "2026-12-24T8:00",
		"2026-12-24X08:00", "+10m", "14:30ZZ",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (cli_parse_at(bad[i], now, &ms, &when) != -1)
			fail_msg("--at '%s' was accepted", bad[i]);

	/* Through the parser: the instant, and the refusals. */
	t0 = cli_now_ms();
	OK("submit", "--delay", "10m", "--", "true");
	assert_true(cmd.not_before_ms >= t0 + 600000 && cmd.not_before_ms <= cli_now_ms() + 600000);
	OK("submit", "--delay", "0", "--fn", "noop");
	assert_int_equal(cmd.not_before_ms, 0);
	OK("submit", "--at", "2030-01-01T00:00Z", "--fn", "noop");
	assert_int_equal(cmd.not_before_ms, 1893456000000);
	BAD("--delay: expected a duration such as 500ms, 10s, 1.5m or 2h, not 'soon'", "submit", "--delay",
	    "soon", "--", "true");
	BAD("--at: '25:00' is not a time", "submit", "--at", "25:00", "--", "true");
	BAD("--delay and --at: give one of them", "submit", "--delay", "1m", "--at", "14:30", "--", "true");
	BAD("--delay and --at: give one of them", "submit", "--at", "14:30", "--at", "15:30", "--", "true");
	BAD("--delay cannot be combined with --batch", "submit", "--delay", "1m", "--batch", "f.json");
}

/* --retries and its companions, and jsched retry. */
static void test_retries(void **state)
{
	(void)state;
	OK("submit", "--retries", "3", "--backoff", "2s", "--backoff-factor", "1.5", "--max-backoff", "1m",
	   "--retry-on", "75,timeout,signal", "--", "./flaky");
	assert_int_equal(cmd.retries, 3);
	assert_int_equal(cmd.backoff_ms, 2000);
	assert_true(cmd.backoff_factor == 1.5);
	assert_int_equal(cmd.max_backoff_ms, 60000);
	assert_int_equal(cmd.retry_on, JSCHED_RETRY_ON_CODES | JSCHED_RETRY_ON_TIMEOUT | JSCHED_RETRY_ON_SIGNAL);
	assert_int_equal(cmd.n_retry_codes, 1);
	assert_int_equal(cmd.retry_codes[0], 75);
	OK("submit", "--retries", "1", "--fn", "fail");
	assert_int_equal(cmd.backoff_ms, -1);
	assert_int_equal(cmd.retry_on, 0);
	BAD("--retries: expected", "submit", "--retries", "many", "--", "true");
	BAD("--retries: at most 999", "submit", "--retries", "1000", "--", "true");
	BAD("--backoff-factor: expected a number from 1 to 1000", "submit", "--retries", "2", "--backoff-factor",
	    "0.5", "--", "true");
	BAD("--retry-on: '0' is not failure, timeout, signal or an exit code", "submit", "--retries", "2",
	    "--retry-on", "0", "--", "true");
	BAD("--retry-on: 'often' is not", "submit", "--retries", "2", "--retry-on", "timeout,often", "--", "true");
	BAD("--backoff needs --retries", "submit", "--backoff", "1s", "--", "true");
	BAD("--retry-on needs --retries", "submit", "--retry-on", "timeout", "--", "true");
	BAD("--retries cannot be combined with --batch", "submit", "--retries", "2", "--batch", "f.json");
	OK("retry", "42", "43");
	assert_int_equal(cmd.verb, CLI_RETRY);
	assert_int_equal(cmd.n_ids, 2);
	assert_int_equal(parse("retry", NULL), CLI_EXIT_USAGE);
}

/* Which commands may load a shared library (a table, top, the dashboard): the static jsched
 * hands exactly those to jsched-full, and runs the rest, the one-call submit first, itself. */
static void test_loads_libs(void **state)
{
	(void)state;
	static const struct {
		const char *words[4];
		bool loads;
	} cases[] = {
		{ { "ls" }, true },
		{ { "ls", "--json" }, false },
		{ { "status", "3" }, true },
		{ { "status", "-l", "3" }, false },
		{ { "status", "--json", "3" }, false },
		{ { "metrics" }, true },
		{ { "metrics", "--json" }, false },
		{ { "metrics", "--prometheus" }, false },
		{ { "top", "--once" }, true },
		{ { "dashboard" }, true },
		{ { "submit", "--wait", "--", "/bin/true" }, false },
		{ { "submit", "--fn", "noop" }, false },
		{ { "wait", "3" }, false },
		{ { "cancel", "3" }, false },
		{ { "output", "3" }, false },
		{ { "watch" }, false },
		{ { "drain" }, false },
		{ { "call", "ping" }, false },
		{ { "admin", "reload" }, false },
		{ { "--version" }, false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *const *w = cases[i].words;
		assert_int_equal(parse(w[0], w[1], w[2], w[3], NULL), CLI_EXIT_OK);
		if (cli_cmd_loads_libs(&cmd) != cases[i].loads)
			fail_msg("jsched %s %s: cli_cmd_loads_libs should be %s", w[0], w[1] != NULL ? w[1] : "",
				 cases[i].loads ? "true" : "false");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_libs),
		cmocka_unit_test(test_global),
		cmocka_unit_test(test_help_everywhere),
		cmocka_unit_test(test_submit),
		cmocka_unit_test(test_job_commands),
		cmocka_unit_test(test_daemon_commands),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_delay_at),
		cmocka_unit_test(test_retries),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	cli_cmd_free(&cmd);
	return rc;
}
