/* args.h: the jsched tool's command line, parsed into one struct.
 *
 * Parsing is separate from doing so that the tests can check every option and every
 * error message without a daemon (tests/libclient/test_args.c).  Strings in struct
 * cli_cmd point into the argv that was parsed; nothing is allocated.
 */
#ifndef JSCHED_TOOL_ARGS_H
#define JSCHED_TOOL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes of the tool (also in `jsched --help` and libclient/README.md).  With --wait
 * (and for `wait` on one exec job) the tool exits with the job's own status instead. */
enum cli_exit {
	CLI_EXIT_OK = 0,	    /* done; or the job succeeded */
	CLI_EXIT_FAILED = 1,	    /* the daemon refused the request, or the job did not succeed */
	CLI_EXIT_USAGE = 64,	    /* bad command line (sysexits EX_USAGE) */
	CLI_EXIT_UNAVAILABLE = 69,  /* no daemon at the socket, or it hung up */
	CLI_EXIT_TIMEOUT = 75,	    /* --timeout expired before the jobs finished */
	CLI_EXIT_PERMISSION = 77,   /* the daemon said permission_denied */
	CLI_EXIT_CANNOT_RUN = 126,  /* submit --wait: the command could not be started */
	CLI_EXIT_NOT_FOUND = 127,   /* submit --wait: the command was not found */
};

enum cli_verb {
	CLI_HELP = 0, /* no subcommand, or `help [SUBCOMMAND]`, or --help */
	CLI_VERSION,
	CLI_SUBMIT,
	CLI_WAIT,
	CLI_STATUS,
	CLI_CANCEL,
	CLI_LS,
	CLI_OUTPUT,
	CLI_WATCH,
	CLI_METRICS,
	CLI_TOP,
	CLI_DRAIN,
	CLI_DASHBOARD,
	CLI_PAUSE,
	CLI_RESUME,
	CLI_HOLD,
	CLI_RELEASE,
	CLI_HOOKS,
	CLI_RETRY,
	CLI_RESULT,
	CLI_ADMIN_RELOAD,
	CLI_ADMIN_SET_CLIENT,
	CLI_ADMIN_SHUTDOWN,
	CLI_CALL,
	CLI_VERB_COUNT,
};

enum { CLI_MAX_IDS = 256, CLI_MAX_ENV = 256 };

/* What an --at TIME turned out to be (the submit says so when it is not plain). */
enum cli_at_when { CLI_AT_FUTURE, CLI_AT_TOMORROW, CLI_AT_PAST };

struct cli_cmd {
	enum cli_verb verb;
	enum cli_verb help_for; /* CLI_HELP: the subcommand asked about, or CLI_HELP for all */
	const char *socket;	/* --socket, or NULL for the default path */
	const char *client_name; /* --client-name, or NULL for the daemon's default */
	int64_t reply_timeout_ms; /* --reply-timeout, or -1: wait as long as it takes */
	bool json;		/* --json: print the protocol's JSON (made by jansson) */
	bool longform;		/* status -l: every member, one a line */

	/* submit */
	char **command;	     /* exec: the words after "--" (NULL-terminated, in argv) */
	const char *fn;	     /* --fn: a call job */
	const char *args;    /* --args JSON */
	const char *name;    /* --name */
	const char *key;     /* --key */
	const char *array;   /* --array INDICES (submit); ls --array ID goes to array_id */
	bool array_replace;  /* --array-replace */
	uint64_t array_id;   /* ls --array ID: the elements of that array */
	const char *on_exit; /* --on-exit CMD */
	bool notify;	     /* --notify */
	int64_t hook_timeout_ms; /* --hook-timeout, 0: the default */
	int priority;	     /* --priority, or -1 for the default */
	int64_t deadline_ms; /* --deadline, as a duration from now; 0 if none */
	const char *delay;   /* --delay as given, or NULL */
	const char *at;	     /* --at as given, or NULL */
	int64_t not_before_ms; /* --delay / --at: the instant (ms since the epoch); 0: none */
	uint32_t retries;    /* --retries: attempts after the first; 0: none */
	int64_t backoff_ms;  /* --backoff, or -1 for the default (1s) */
	double backoff_factor; /* --backoff-factor, or 0 for the default (2) */
	int64_t max_backoff_ms; /* --max-backoff, or -1 for the default (1h) */
	unsigned retry_on;   /* --retry-on: JSCHED_RETRY_ON_* bits; 0: the default (failure) */
	int retry_codes[255]; /* and its exit codes */
	size_t n_retry_codes;
	enum cli_at_when at_when; /* --at: whether TIME was today's, tomorrow's or past */
	int64_t time_limit_ms; /* --time-limit */
	uint64_t mem_bytes;  /* --mem, 0 if not given */
	uint64_t pids;	     /* --pids, 0 if not given */
	double cpus;	     /* --cpus, 0 if not given */
	const char *backend; /* --backend */
	char need_name[8][32]; /* --needs NAME=N (repeatable, or NAME=N,NAME=N) */
	uint32_t need_count[8];
	size_t n_needs;
	uint32_t cost;	     /* --cost, 0 if not given */
	const char *cwd;     /* --cwd, or NULL for the tool's own */
	bool clear_env;	     /* --clear-env: send only the --env variables */
	const char *env[CLI_MAX_ENV + 1]; /* --env NAME=VALUE, NULL-terminated */
	size_t n_env;
	const char *stdin_file; /* --stdin FILE ("-": the tool's stdin) */
	const char *batch;   /* --batch FILE: a JSON array of specs ("-": stdin) */
	uint64_t any_of[CLI_MAX_IDS]; /* --any-of (--after goes to ids) */
	size_t n_any_of;
	bool wait;	     /* --wait */

	/* job ids: submit's --after, or the operands of wait/status/cancel/output */
	uint64_t *ids;	     /* malloc'd (cli_cmd_free) */
	size_t cap_ids;
	size_t n_ids;

	bool any;	     /* wait --any */
	int64_t timeout_ms;  /* wait --timeout, submit --wait --timeout; -1: no limit */
	const char *states;  /* ls --state, comma-separated */
	const char *columns; /* ls -o: column names, comma-separated (checked), or NULL */
	const char *sort;    /* ls --sort COLUMN ("-COLUMN": descending), or NULL: by id */
	long limit;	     /* ls --limit: rows shown (0: all) */
	const char *name_glob; /* ls --name: only jobs whose name matches this glob; wait,
				* status, cancel --name: and those jobs of mine */
	bool no_headings;    /* ls --no-headings */
	const char *op, *op_json; /* call OP [JSON] */
	bool out_only, err_only; /* output --stdout / --stderr */
	bool follow, merged;	 /* output -f / --merged */
	int64_t tail_lines;	 /* output --tail N, or -1 */
	int64_t since;	     /* watch --since, or -1: live events only */
	const char *instance; /* watch --instance */
	long count;	     /* watch -n, top -n: stop after COUNT (0: never) */
	int64_t interval_ms; /* top --interval */
	const char *client;  /* admin set-client CLIENT; ls, drain --client */
	bool all;	     /* ls --all, pause/resume --all */
	bool mine;	     /* wait/status/cancel --all: every job of mine not yet final */
	bool running;	     /* drain --running */
	uint32_t weight, max_queued; /* admin set-client --weight, --max-queued (0: unchanged) */
	const char *overflow; /* admin set-client --overflow */
	bool immediate;	     /* admin shutdown --immediate */
	bool prometheus;     /* metrics --prometheus */
	unsigned port;	     /* dashboard --port (0: a free one) */
	bool open;	     /* dashboard --open */
};

/* cli_parse parses argv (argv[0] is the program) into *cmd.  Returns CLI_EXIT_OK, or
 * CLI_EXIT_USAGE with a message naming what was wrong in err (size errlen), e.g.
 * "jsched submit: --priority: expected low, normal, high or critical, not 'urgent'". */
int cli_parse(int argc, char **argv, struct cli_cmd *cmd, char *err, size_t errlen);

/* cli_cmd_free frees what cli_parse allocated in cmd (the ids); cmd may be parsed again. */
void cli_cmd_free(struct cli_cmd *cmd);

/* cli_cmd_loads_libs: whether cmd may load one of the tool's optional shared libraries
 * (lazy.h): a table (ls, status, metrics, unless --json, status -l or --prometheus), top
 * (ncurses) or the dashboard (libmicrohttpd).  The static jsched hands such a command to
 * jsched-full (lazy.h, tool_handoff), which can load them; every other command it runs
 * itself.  A superset is harmless (one exec more), a miss is not: the static tool's
 * loader refuses. */
bool cli_cmd_loads_libs(const struct cli_cmd *cmd);

/* cli_help returns the help text of a subcommand (CLI_HELP: the whole tool's). */
const char *cli_help(enum cli_verb verb);

/* The columns of `jsched ls` (names as -o and --sort take them, in upper or lower case),
 * in their order, ending with NULL; cli_ls_default_columns is the default -o. */
extern const char *const cli_ls_columns[];
extern const char cli_ls_default_columns[];

/* cli_ls_column returns the index in cli_ls_columns of the column named by the len bytes
 * at s (any case), or -1. */
int cli_ls_column(const char *s, size_t len);

enum { CLI_LS_DEFAULT_LIMIT = 50 };

/* cli_now_ms: the wall clock, in ms since the epoch. */
int64_t cli_now_ms(void);

/* cli_parse_at parses an --at TIME relative to now_ms: "HH:MM" or "HH:MM:SS" is the next
 * time the clock shows it (today, or tomorrow once passed: *when says which), and
 * "YYYY-MM-DDTHH:MM[:SS]" (or with a space for the T) that instant, possibly past; local
 * time, UTC with a Z at the end.  *at_ms is ms since the epoch.  Returns 0, or -1 for any
 * other text or a date that does not exist. */
int cli_parse_at(const char *s, int64_t now_ms, int64_t *at_ms, enum cli_at_when *when);

/* cli_parse_duration parses "500ms", "10s", "1.5m", "2h" or a bare number of seconds into
 * milliseconds.  Returns 0 or -1 (not a duration, or negative). */
int cli_parse_duration(const char *s, int64_t *ms);

#endif /* JSCHED_TOOL_ARGS_H */
