/* args.c: the jsched tool's command line: the help of every subcommand and the parser.
 *
 * A small table-driven parser instead of getopt_long: it keeps no global state (the tests
 * parse many command lines in one process), and it words its own errors, naming the
 * subcommand, the option and the bad value, which getopt's messages do not.  Options take
 * "--name VALUE", "--name=VALUE" and, for those with a short form, "-x VALUE"; "--" ends
 * the options; -h/--help works after every subcommand.
 */
#include "libclient/tool/args.h"

#include <jsched/jsched.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- help ------------------------------------------------------------------------ */

static const char help_main[] =
	"usage: jsched [-s PATH] [-C NAME] COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Talk to jschedd, the job server of this machine.\n"
	"\n"
	"Commands:\n"
	"  submit    submit a job: a command (after -- if it starts with -), or --fn\n"
	"  wait      wait for jobs to end\n"
	"  status    show jobs' state and result\n"
	"  cancel    cancel jobs\n"
	"  ls        list your jobs\n"
	"  output    print an exec job's captured stdout and stderr\n"
	"  result    print a call job's result, however large\n"
	"  watch     print events about your jobs as they happen\n"
	"  metrics   show the daemon's metrics (a table; --json for the document)\n"
	"  top       a live view of clients, queues, workers and latencies\n"
	"  drain     cancel all your jobs that have not started\n"
	"  dashboard a live web page of the daemon, on 127.0.0.1\n"
	"  pause     stop starting a client's jobs (-C CLIENT) or everyone's (--all)\n"
	"  resume    start them again\n"
	"  hold      keep queued jobs from starting until released\n"
	"  release   let held jobs start again, in their place\n"
	"  hooks     run the completion hooks (--on-exit, --notify) of jobs that ended\n"
	"  retry     run finished jobs again, as a new attempt of the same id\n"
	"  admin     reload | set-client | shutdown (admin uid only)\n"
	"  call      send any protocol request and print the reply\n"
	"  help      help [COMMAND]: this text, or a command's\n"
	"\n"
	"Options (before or after the command):\n"
	"  -s, --socket PATH  the daemon's socket (default: $JSCHED_SOCKET, else\n"
	"                     $XDG_RUNTIME_DIR/jschedd.sock, else /run/jschedd/jschedd.sock)\n"
	"  -C, --client-name NAME  the client (tenant) name to submit as; the daemon's\n"
	"                     config says which names a uid may use (default: login name)\n"
	"  --reply-timeout DURATION  give up when jschedd has not answered a request within\n"
	"                     DURATION (exit 75); a wait's own --timeout is added to it\n"
	"  -h, --help         this text; `jsched COMMAND --help` for a command's\n"
	"  -V, --version      the version of this tool\n"
	"\n"
	"Durations are a number with a unit: 500ms, 10s, 1.5m, 2h (a bare number is seconds).\n"
	"Every command that prints takes --json: the protocol's records and replies.\n"
	"\n"
	"Exit status:\n"
	"   0  success (wait, submit --wait: the job succeeded)\n"
	"   1  the daemon refused the request, or a job did not succeed\n"
	"  64  bad command line\n"
	"  69  no daemon at the socket, or it hung up\n"
	"  75  the --timeout expired before the jobs ended\n"
	"  77  permission denied\n"
	"  `submit --wait` and `wait` on one exec job exit with the job's status instead:\n"
	"  its exit code, 128+N when signal N killed it, 127 when the command was not\n"
	"  found and 126 when it could not be started, as a shell does.\n";

static const char help_submit[] =
	"usage: jsched submit [OPTIONS] [--] COMMAND [ARG...]\n"
	"       jsched submit [OPTIONS] --fn NAME [--args JSON]\n"
	"       jsched submit --batch FILE [--wait [--timeout DURATION]] [--json]\n"
	"\n"
	"Submit one job and print its id.  An exec job runs COMMAND with this shell's\n"
	"working directory and environment unless told otherwise (the first word that is\n"
	"not an option starts the command; put -- before a command that starts with -);\n"
	"a call job runs the daemon's handler NAME with the JSON arguments.  --batch\n"
	"submits a JSON array of job specs (PROTOCOL.md section 4; with \"ref\" and\n"
	"\"after\": [\"ref\"] a graph), all or none, and prints their ids in order; with\n"
	"--wait it waits for all and exits 0 if all succeeded.\n"
	"\n"
	"  --fn NAME            a call job of handler NAME\n"
	"  --args JSON          its arguments (default: null)\n"
	"  --name NAME          a name for the job, shown by status and ls\n"
	"  --key KEY            idempotency key: while a job of yours with KEY is retained,\n"
	"                       print its id instead of submitting again (safe to retry)\n"
	"  --array INDICES      a job array: one job per index, in Slurm's syntax: 1-100,\n"
	"                       1-99:2 (a step), 1,5,7 (a list), and %N at the end: at most\n"
	"                       N of them running at once (1-100%10).  Prints the array's\n"
	"                       id, which wait, status, cancel, hold and --after take as the\n"
	"                       whole array; each element sees $JSCHED_ARRAY_INDEX and\n"
	"                       $JSCHED_ARRAY_ID (ls --array ID lists the elements)\n"
	"  --array-replace      with --array: replace {} in the command's words by the index\n"
	"  --on-exit CMD        when the job has ended, run the shell command CMD here, as\n"
	"                       you, with $JSCHED_JOB_ID, $JSCHED_JOB_STATE and\n"
	"                       $JSCHED_JOB_EXIT_CODE (or $JSCHED_JOB_SIGNAL, $JSCHED_JOB_CAUSE)\n"
	"                       set; without --wait a background jsched waits for the job\n"
	"                       (jsched hooks runs hooks whose runner died)\n"
	"  --notify             when the job has ended, a desktop notification (notify-send)\n"
	"                       or, without one, a bell and a line on the terminal\n"
	"  --hook-timeout DURATION  stop a hook (its process group) after DURATION\n"
	"                       (default 60s); a hook's failure is shown in status, the\n"
	"                       job's result and jsched's exit status do not change\n"
	"  --priority P         low, normal (default), high or critical\n"
	"  --deadline DURATION  if not started within DURATION, the job expires unrun\n"
	"                       (counted from now, also with --delay or --at)\n"
	"  --delay DURATION     do not start it before DURATION from now (10m, 1.5h); until\n"
	"                       then it is scheduled: listed, cancellable, holdable\n"
	"  --at TIME            do not start it before TIME: HH:MM or HH:MM:SS (today, or\n"
	"                       tomorrow once past), or YYYY-MM-DDTHH:MM[:SS] (a time\n"
	"                       already past starts it at once); local time, Z at the end\n"
	"                       for UTC\n"
	"  --retries N          run it again after a failed attempt, at most N times (up\n"
	"                       to 999); between attempts it is retrying, and status\n"
	"                       lists every attempt; after the last it ends failed\n"
	"  --backoff DURATION   with --retries: wait this long before the first retry\n"
	"                       (default 1s), each next one --backoff-factor times longer\n"
	"  --backoff-factor F   1 to 1000 (default 2)\n"
	"  --max-backoff DURATION  the longest wait between attempts (default 1h)\n"
	"  --retry-on LIST      which failures: failure (any, the default), timeout,\n"
	"                       signal, exit codes (--retry-on 75,timeout)\n"
	"  --time-limit DURATION  exec: kill the command after it ran this long\n"
	"  --mem SIZE           exec: memory limit of its control group (512M, 2G)\n"
	"  --pids N             exec: at most N processes and threads\n"
	"  --cpus N             exec: at most N CPUs' time (1.5)\n"
	"  --needs NAME=N       exec: needs N units of the daemon's resource NAME (gpu=1;\n"
	"                       repeatable, or gpu=1,licence_x=2); it starts when they are\n"
	"                       free and finds their indices in JSCHED_RESOURCE_<NAME>\n"
	"  --backend B          exec: where it runs: local, slurm or auto (default: the\n"
	"                       client's, see the daemon's config)\n"
	"  --cost N             a hint of how much work the job is (default 1)\n"
	"  --after ID           run after job ID succeeded (repeat: after all of them)\n"
	"  --any-of ID          and after any one of these jobs succeeded (repeatable)\n"
	"  --cwd DIR            exec: working directory (default: the current one)\n"
	"  --env NAME=VALUE     exec: set a variable (repeatable)\n"
	"  --clear-env          exec: send only the --env variables, not this environment\n"
	"  --stdin FILE         exec: feed FILE to the command's stdin (- for jsched's stdin)\n"
	"  --batch FILE         submit the array of specs in FILE (- for stdin)\n"
	"  -w, --wait           wait for the job and exit with its status\n"
	"  --timeout DURATION   with --wait: give up after DURATION (exit 75)\n"
	"  -f, --follow         --wait, printing the command's output as it writes it\n"
	"  --merged             --follow with stderr on stdout, in the order written\n"
	"  --json               print the reply as JSON: {\"job\": ID} ({\"jobs\", \"refs\"}\n"
	"                       for --batch; \"existing\": true when --key found a job)\n"
	"                       for --batch); with --wait the job's record\n"
	"\n"
	"Examples:\n"
	"  jsched submit -- make test\n"
	"  jsched submit --wait --fn echo --args '{\"x\": 1}'\n"
	"  jsched submit --array 1-100%10 -- ./step.sh      # $JSCHED_ARRAY_INDEX: 1 ... 100\n"
	"  jsched submit --array 0-99:3 --array-replace -- ./render frame-{}.png\n"
	"  jsched submit --array 1,5,7 --wait --fn noop\n"
	"  jsched submit --notify --on-exit 'mail -s \"job $JSCHED_JOB_ID $JSCHED_JOB_STATE\" me' -- make\n";

static const char help_wait[] =
	"usage: jsched wait [--any] [--timeout DURATION] [--json] [--all] [--name GLOB] [--array ID] [ID...]\n"
	"\n"
	"Wait until all the jobs (--any: one of them) have ended, and print their results.\n"
	"Exits 0 if they all succeeded (--any: the first to end did), 1 if not, 75 on timeout;\n"
	"for one exec job, with the job's own exit status.  Any number of ids: they are\n"
	"sent 10,000 to a request (--any: at most 10,000 in all).\n"
	"\n"
	"  --any                return when the first job ends\n"
	"  --timeout DURATION   give up after DURATION (default: no limit)\n"
	"  --all                and every job of yours not yet ended\n"
	"  --name GLOB          and every job of yours whose name matches GLOB ('ci-*')\n"
	"  --array ID           and every element of job array ID (waiting on ID itself\n"
	"                       waits for the whole array too, as one result)\n"
	"  --json               print the results as JSON\n";

static const char help_status[] =
	"usage: jsched status [-l] [--json] [--all] [--name GLOB] [--array ID] [ID...]\n"
	"\n"
	"Print each job's state, and its result once it has ended, one a line.  An id that\n"
	"does not exist (or is not yours) gets an error line; the others are still shown\n"
	"(exit 1 if any failed).\n"
	"\n"
	"  -l, --long  every member, one a line: client, times, and what the spec said\n"
	"              (argv, cwd, the environment's names, dependencies, arguments)\n"
	"  --all       and every job of yours not yet ended\n"
	"  --name GLOB and every job of yours whose name matches GLOB ('ci-*')\n"
	"  --array ID  and every element of job array ID\n"
	"  --json      print the records as JSON ({\"jobs\": [...]}; with -l, with the spec)\n";

static const char help_cancel[] =
	"usage: jsched cancel [--json] [--all] [--name GLOB] [--array ID] [ID...]\n"
	"\n"
	"Cancel jobs: a job not started yet never runs; a running one is told to stop.\n"
	"Exits 1 if any could not be cancelled (the reason is printed).\n"
	"\n"
	"  --all        and every job of yours not yet ended\n"
	"  --name GLOB  and every job of yours whose name matches GLOB ('ci-*')\n"
	"  --array ID   and every element of job array ID (cancelling ID itself does too)\n"
	"  --json  print the reply as JSON ({\"jobs\": [{\"job\", \"state\", \"cancelling\"}]})\n";

static const char help_ls[] =
	"usage: jsched ls [--state LIST] [--client NAME] [--name GLOB] [--array ID] [--all] [--limit N]\n"
	"                 [--sort [-]COLUMN] [-o COLUMNS] [--no-headings] [--json]\n"
	"\n"
	"List your jobs the daemon still knows, a table as wide as the terminal (the\n"
	"command is shortened to fit): by default the newest 50, and how many more\n"
	"there are.\n"
	"\n"
	"  --state LIST    only jobs in these states (comma-separated): waiting,\n"
	"                  scheduled, retrying, queued, running, succeeded, failed,\n"
	"                  cancelled, expired, dropped\n"
	"  --client NAME   only jobs charged to client NAME\n"
	"  --name GLOB     only jobs whose name matches GLOB (shell pattern: 'ci-*')\n"
	"  --array ID      the elements of job array ID, one a line (without it an array\n"
	"                  is one line: its RESULT counts its elements per state)\n"
	"  --all           every uid's jobs (admin only)\n"
	"  --limit N       show at most N jobs (default 50; 0: all of them)\n"
	"  --sort COLUMN   order by COLUMN (default id); -COLUMN for the other way\n"
	"  -o, --output COLUMNS  the columns, comma-separated (default\n"
	"                  id,state,client,age,run,result,name,command); also kind, uid,\n"
	"                  priority, submitted, started, finished, waited\n"
	"  --no-headings   no title line (for scripts and completions)\n"
	"  --json          print {\"jobs\": [records], \"not_shown\": N} as JSON\n"
	"\n"
	"Columns: AGE since submitted; WAITED from submitted to started (or to now);\n"
	"RUN the run time (so far, while running); RESULT the exit code, signal, value or\n"
	"cause; COMMAND the command line or the handler.\n";

static const char help_output[] =
	"usage: jsched output [-f] [--merged] [--tail N] [--stdout | --stderr] [--json] ID\n"
	"\n"
	"Print an exec job's captured standard output to stdout and its standard error to\n"
	"stderr, byte for byte.  A note on stderr says when the daemon truncated either (past\n"
	"its limit it keeps the beginning and the end, and shows the marker\n"
	"\"[jschedd: N bytes not kept]\" between them).\n"
	"\n"
	"  -f, --follow  go on printing the output as the job writes it, until it ends; exits\n"
	"                with the job: 0 if it succeeded, 1 if not\n"
	"  --merged      both streams to stdout, in the order the daemon received them\n"
	"  --tail N      begin at the last N lines (of the streams printed)\n"
	"  --stdout      only the standard output\n"
	"  --stderr      only the standard error\n"
	"  --json        print the reply as JSON (base64 data, bytes, truncated, complete)\n"
	"\n"
	"Examples:\n"
	"  jsched output -f 12                 follow job 12 (stderr to stderr)\n"
	"  jsched output --merged --tail 20 12 its last 20 lines, both streams in order\n";

static const char help_watch[] =
	"usage: jsched watch [--since SEQ [--instance ID]] [-n COUNT] [--json]\n"
	"\n"
	"Print events about your jobs as they happen, one a line, until interrupted: the event's\n"
	"number, when, the job, its state.  The first line (on stderr; with --json on\n"
	"stdout: {\"seq\", \"instance\"}, as the watch reply) names the daemon's instance\n"
	"and its last event number, for a later --since.\n"
	"\n"
	"  --since SEQ   first replay the retained events after SEQ (to resume without gaps)\n"
	"  --instance ID the instance SEQ belongs to; if the daemon restarted since, the\n"
	"                events are gone and watch says so (exit 1)\n"
	"  -n COUNT      stop after COUNT events\n"
	"  --json        print each event as JSON, one a line\n";

static const char help_metrics[] =
	"usage: jsched metrics [--json | --prometheus]\n"
	"\n"
	"Show the daemon's metrics: counters, latency percentiles, clients and their\n"
	"share, workers.\n"
	"\n"
	"  --json        print the metrics document as JSON\n"
	"  --prometheus  print them in Prometheus's text format (what metrics.listen serves)\n";

static const char help_dashboard[] =
	"usage: jsched dashboard [--port PORT] [--open]\n"
	"\n"
	"Serve a live web page of the daemon on 127.0.0.1 and print its URL, which carries a\n"
	"random token: queues and running jobs per client, realized against target share and\n"
	"Jain's index over time, throughput and latency over time, your jobs with their\n"
	"output, and buttons to cancel, hold, release or retry them.  It connects as you, so\n"
	"it shows what you may see.  Runs until interrupted (Ctrl-C).\n"
	"\n"
	"  --port PORT  the port (default: a free one)\n"
	"  --open       open the page with xdg-open\n";

static const char help_top[] =
	"usage: jsched top [--once | -n COUNT] [--interval DURATION]\n"
	"\n"
	"A live view of the daemon: clients and their queues beside the jobs (running,\n"
	"then queued), latencies, workers, redrawn every interval.  Keys: q quits; s sorts\n"
	"the clients by the next column; j, c, w switch between jobs, clients and workers\n"
	"views (tab: the next view); space redraws now.  Not on a terminal, it prints\n"
	"screens one after another.\n"
	"\n"
	"  --once               print one screen and exit (for scripts)\n"
	"  -n COUNT             print COUNT screens and exit\n"
	"  --interval DURATION  time between screens (default 1s)\n";

static const char help_drain[] =
	"usage: jsched drain [--client NAME] [--running] [--json]\n"
	"\n"
	"Cancel, in bulk, your jobs that have not started (queued and waiting) and print how\n"
	"many.  By default those charged to this connection's client name.\n"
	"\n"
	"  --client NAME  those charged to client NAME instead (another uid's needs admin)\n"
	"  --running      also ask the running ones to stop\n"
	"  --json         print the reply as JSON ({\"cancelled\", \"cancelling\"})\n";

static const char help_pause[] =
	"usage: jsched pause [-C CLIENT | --all] [--json]\n"
	"       jsched resume [-C CLIENT | --all] [--json]\n"
	"\n"
	"pause stops starting the jobs of this connection's client (-C CLIENT to name it),\n"
	"or with --all of every client; running jobs go on, queued ones stay queued (cancel\n"
	"and deadlines still act on them).  resume starts them again: a paused client keeps\n"
	"its place and gets no extra share for the time it was paused.  Its owner (a uid\n"
	"allowed that client name) or an admin; --all is for admins.\n"
	"\n"
	"  -C, --client-name CLIENT  the client to pause or resume (default: your login name)\n"
	"  --all                     every client (admin only)\n"
	"  --json                    print the daemon's reply as JSON\n"
	"\n"
	"Example: jsched pause -C nightly; jsched ls; jsched resume -C nightly\n";

static const char help_retry[] =
	"usage: jsched retry ID... [--json]\n"
	"\n"
	"Run finished jobs again, each as a new attempt of the same id: its outcome so far\n"
	"becomes an attempt in its record (status shows them all), and it is queued again\n"
	"as if just submitted (dependents that were judged on its first end stay judged).\n"
	"Yours, or any for an admin.  All or nothing: a job that has not ended, a call job\n"
	"and a command whose stdin was dropped when it ended are refused (exit 1).\n"
	"\n"
	"  --json    print each job's new state and attempt as JSON, one a line\n"
	"\n"
	"Example: jsched retry 42; jsched wait 42\n";

static const char help_result[] =
	"usage: jsched result ID\n"
	"\n"
	"Print a call job's result (its value, or a failed handler's detail) as JSON, whole,\n"
	"however large: a job record carries a result only up to the daemon's value_bytes\n"
	"(64 KiB by default), and says how long it is instead past that (status, wait and ls\n"
	"show \"value of N bytes\"; submit --wait prints it whole, as this does, and the\n"
	"--json of status, wait and submit --wait put it back in the record).  Exits 1 for a\n"
	"command, an array, or a job that has not ended.\n"
	"\n"
	"Example: jsched result 42 > value.json\n";

static const char help_hold[] =
	"usage: jsched hold ID... [--json]\n"
	"       jsched release ID... [--json]\n"
	"\n"
	"hold keeps queued jobs from starting: they stay queued (ls shows them \"held\"),\n"
	"can be cancelled, and expire at their deadline.  release lets them start again, at\n"
	"their place in their client's order.  A job that is not queued is left as it is.\n"
	"Your own jobs, or any for an admin.\n"
	"\n"
	"  --json  print the daemon's reply as JSON\n"
	"\n"
	"Example: jsched hold 12 13; jsched release 12\n";

static const char help_admin[] =
	"usage: jsched admin reload [--json]\n"
	"       jsched admin set-client CLIENT [--weight W] [--max-queued N] [--overflow HOW]\n"
	"                               [--json]\n"
	"       jsched admin shutdown [--immediate] [--json]\n"
	"\n"
	"Administrative operations; the daemon allows them to admin uids only.\n"
	"\n"
	"  reload        re-read the configuration file\n"
	"  set-client    set a client's weight (its share, 1..1000000), its queued-job limit,\n"
	"                and what happens when its queue is full: --overflow reject,\n"
	"                drop_oldest, drop_newest or block; a client that has not connected\n"
	"                yet gets them when it does\n"
	"  shutdown      stop the daemon: by default after the jobs it holds have ended;\n"
	"                --immediate cancels them\n"
	"  --json        print the daemon's reply as JSON\n";

static const char help_hooks[] =
	"usage: jsched hooks [--json] [ID...]\n"
	"\n"
	"Run the completion hooks of jobs submitted with --on-exit or --notify: for each\n"
	"job (default: every job of yours that has ended with its hooks not yet run), wait\n"
	"until it has ended, then run them here, as you, and tell the daemon how they went\n"
	"(status shows it under hooks).  jsched submit --on-exit runs them itself; this is\n"
	"for hooks whose runner died (the machine restarted).  A hook another jsched is\n"
	"running is left to it.  Exits 1 if a hook failed; never changes a job's result.\n"
	"\n"
	"  --json  print each job's hooks as JSON, one a line\n"
	"\n"
	"Example: jsched hooks; jsched hooks 42\n";

static const char help_call[] =
	"usage: jsched call OP [JSON]\n"
	"\n"
	"Send one request of the protocol (proto/PROTOCOL.md section 6): op OP with the\n"
	"members of the JSON object (default {}); the tool adds \"op\" and \"id\".  Prints\n"
	"the reply as JSON, also when the daemon refused it (then exits as for any\n"
	"refusal).  The escape hatch for scripts and debugging:\n"
	"  jsched call status '{\"job\": 5, \"detail\": true}'\n";

static const char *const verb_names[CLI_VERB_COUNT] = {
	[CLI_HELP] = "help",
	[CLI_VERSION] = "version",
	[CLI_SUBMIT] = "submit",
	[CLI_WAIT] = "wait",
	[CLI_STATUS] = "status",
	[CLI_CANCEL] = "cancel",
	[CLI_LS] = "ls",
	[CLI_OUTPUT] = "output",
	[CLI_WATCH] = "watch",
	[CLI_METRICS] = "metrics",
	[CLI_TOP] = "top",
	[CLI_DRAIN] = "drain",
	[CLI_DASHBOARD] = "dashboard",
	[CLI_PAUSE] = "pause",
	[CLI_RESUME] = "resume",
	[CLI_HOLD] = "hold",
	[CLI_RELEASE] = "release",
	[CLI_HOOKS] = "hooks",
	[CLI_RETRY] = "retry",
	[CLI_RESULT] = "result",
	[CLI_ADMIN_RELOAD] = "admin reload",
	[CLI_ADMIN_SET_CLIENT] = "admin set-client",
	[CLI_ADMIN_SHUTDOWN] = "admin shutdown",
	[CLI_CALL] = "call",
};

/* cli_help: see args.h. */
const char *cli_help(enum cli_verb verb)
{
	switch (verb) {
	case CLI_SUBMIT: return help_submit;
	case CLI_WAIT: return help_wait;
	case CLI_STATUS: return help_status;
	case CLI_CANCEL: return help_cancel;
	case CLI_LS: return help_ls;
	case CLI_OUTPUT: return help_output;
	case CLI_WATCH: return help_watch;
	case CLI_METRICS: return help_metrics;
	case CLI_TOP: return help_top;
	case CLI_DRAIN: return help_drain;
	case CLI_DASHBOARD: return help_dashboard;
	case CLI_PAUSE:
	case CLI_RESUME: return help_pause;
	case CLI_HOLD:
	case CLI_RELEASE: return help_hold;
	case CLI_HOOKS: return help_hooks;
	case CLI_RETRY: return help_retry;
	case CLI_RESULT: return help_result;
	case CLI_ADMIN_RELOAD:
	case CLI_ADMIN_SET_CLIENT:
	case CLI_ADMIN_SHUTDOWN: return help_admin;
	case CLI_CALL: return help_call;
	default: return help_main;
	}
}

/* ---- the parser ---------------------------------------------------------------------- */

struct parser {
	int argc;
	char **argv;
	int i;		 /* the next argument to look at */
	const char *cmd; /* for messages: "jsched submit" */
	char *err;
	size_t errlen;
	const char *val; /* the value of the option just returned */
};

struct opt {
	const char *name; /* without the leading "--" */
	char shrt;	  /* the short form, or 0 */
	bool arg;	  /* takes a value */
	int id;
};

enum {
	O_FN = 1, O_ARGS, O_NAME, O_PRIORITY, O_DEADLINE, O_TIME_LIMIT, O_COST, O_AFTER, O_ANY_OF,
	O_CWD, O_ENV, O_CLEAR_ENV, O_STDIN, O_WAIT, O_TIMEOUT, O_JSON, O_ANY, O_STATE, O_STDOUT,
	O_STDERR, O_SINCE, O_COUNT, O_ONCE, O_INTERVAL, O_WEIGHT, O_MAX_QUEUED, O_IMMEDIATE,
	O_SOCKET, O_VERSION, O_CLIENT, O_RUNNING, O_ALL, O_OVERFLOW, O_BATCH, O_INSTANCE, O_REPLY_TIMEOUT,
	O_LONG, O_CLIENT_NAME, O_LIMIT, O_SORT, O_COLUMNS, O_NAME_GLOB, O_NO_HEADINGS, O_MEM, O_PIDS,
	O_CPUS, O_PROMETHEUS, O_PORT, O_OPEN, O_BACKEND, O_KEY, O_MINE, O_ARRAY, O_ARRAY_REPLACE,
	O_NEEDS,
	O_ON_EXIT, O_NOTIFY, O_HOOK_TIMEOUT, O_DELAY, O_AT, O_RETRIES, O_BACKOFF,
	O_BACKOFF_FACTOR, O_MAX_BACKOFF, O_RETRY_ON,
	O_FOLLOW, O_MERGED, O_TAIL,
};

/* The options of jsched itself, accepted before the command and after it. */
static const struct opt global_opts[] = {
	{ "socket", 's', true, O_SOCKET }, { "client-name", 'C', true, O_CLIENT_NAME },
	{ "reply-timeout", 0, true, O_REPLY_TIMEOUT }, { NULL, 0, false, 0 },
};

enum { OPT_END = -1, OPT_POSITIONAL = -2, OPT_ERROR = -3, OPT_HELP = -4, OPT_DASHDASH = -5 };

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
	int n = snprintf(p->err, p->errlen, "%s: ", p->cmd);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return OPT_ERROR;
}

/* next_opt returns the id of the next option (its value in p->val), OPT_POSITIONAL if the
 * next argument is not an option (left unconsumed), OPT_DASHDASH after consuming "--",
 * OPT_HELP for -h/--help, OPT_END when no argument is left, OPT_ERROR with p->err set. */
static int next_opt(struct parser *p, const struct opt *opts)
{
	if (p->i >= p->argc)
		return OPT_END;
	const char *a = p->argv[p->i];
	if (a[0] != '-' || a[1] == '\0')
		return OPT_POSITIONAL;
	p->i++;
	if (strcmp(a, "--") == 0)
		return OPT_DASHDASH;
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
		return OPT_HELP;
	const struct opt *o = NULL;
	const char *inline_val = NULL;
	if (a[1] == '-') {
		const char *name = a + 2;
		size_t len = strcspn(name, "=");
		for (const struct opt *q = opts; q && q->name; q++)
			if (strlen(q->name) == len && strncmp(q->name, name, len) == 0)
				o = q;
		for (const struct opt *q = global_opts; o == NULL && q->name; q++)
			if (strlen(q->name) == len && strncmp(q->name, name, len) == 0)
				o = q;
		if (o == NULL)
			return fail(p, "unknown option '%.*s' (see --help)", (int)(len + 2), a);
		if (name[len] == '=') {
			if (!o->arg)
				return fail(p, "--%s takes no value", o->name);
			inline_val = name + len + 1;
		}
	} else {
		for (const struct opt *q = opts; q && q->name; q++)
			if (q->shrt != 0 && q->shrt == a[1])
				o = q;
		for (const struct opt *q = global_opts; o == NULL && q->name; q++)
			if (q->shrt == a[1])
				o = q;
		if (o == NULL)
			return fail(p, "unknown option '-%c' (see --help)", a[1]);
		if (a[2] != '\0') {
			if (!o->arg)
				return fail(p, "-%c takes no value", a[1]);
			inline_val = a + 2;
		}
	}
	p->val = NULL;
	if (o->arg) {
		if (inline_val == NULL) {
			if (p->i >= p->argc)
				return fail(p, "--%s needs a value", o->name);
			inline_val = p->argv[p->i++];
		}
		p->val = inline_val;
	}
	return o->id;
}

static int parse_u64(struct parser *p, const char *what, const char *s, uint64_t min, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < min)
		return fail(p, "%s: expected a whole number%s, not '%s'", what, min > 0 ? " above 0" : "", s);
	*out = v;
	return 0;
}

static int parse_u32(struct parser *p, const char *what, const char *s, uint32_t min, uint32_t *out)
{
	uint64_t v;
	if (parse_u64(p, what, s, min, &v) < 0)
		return OPT_ERROR;
	if (v > UINT32_MAX)
		return fail(p, "%s: %s is too large (at most %u)", what, s, (unsigned)UINT32_MAX);
	*out = (uint32_t)v;
	return 0;
}

/* cli_parse_duration: see args.h. */
int cli_parse_duration(const char *s, int64_t *ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = { { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 } };
	if (s == NULL || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.'))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || v < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].unit) == 0) {
			double r = v * units[i].ms;
			if (r > 9.0e15) /* about 285,000 years: surely a mistake */
				return -1;
			*ms = (int64_t)(r + 0.5); /* r >= 0: llround, without libm */
			return 0;
		}
	}
	return -1;
}

/* cli_now_ms: see args.h. */
int64_t cli_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* digits: exactly n decimal digits at s, into *v. */
static bool digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/* clock_part: "HH:MM" or "HH:MM:SS" at s, ending at the string's end or at a 'Z' that
 * ends it (*utc).  Returns false for any other text or a field out of range. */
static bool clock_part(const char *s, struct tm *tm, bool *utc)
{
	size_t len = strlen(s);

	*utc = len > 0 && s[len - 1] == 'Z';
	if (*utc)
		len--;
	if ((len != 5 && len != 8) || s[2] != ':' || (len == 8 && s[5] != ':') ||
	    !digits(s, 2, &tm->tm_hour) || !digits(s + 3, 2, &tm->tm_min))
		return false;
	tm->tm_sec = 0;
	if (len == 8 && !digits(s + 6, 2, &tm->tm_sec))
		return false;
	return tm->tm_hour <= 23 && tm->tm_min <= 59 && tm->tm_sec <= 59;
}

/* to_ms: the instant of tm (local time, or UTC), or -1 when tm names no such instant (a
 * date that does not exist, such as February 30, is normalised by mktime: refused). */
static int64_t to_ms(const struct tm *want, bool utc)
{
	struct tm tm = *want;
	time_t t;

	tm.tm_isdst = -1;
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1 || tm.tm_mday != want->tm_mday || tm.tm_mon != want->tm_mon ||
	    tm.tm_year != want->tm_year)
		return -1;
	return (int64_t)t * 1000;
}

/* cli_parse_at: see args.h. */
int cli_parse_at(const char *s, int64_t now_ms, int64_t *at_ms, enum cli_at_when *when)
{
	struct tm tm = {0};
	time_t now = (time_t)(now_ms / 1000);
	bool utc;
	int64_t ms;

	if (s == NULL)
		return -1;
	if (strlen(s) >= 16 && s[4] == '-' && s[7] == '-' && (s[10] == 'T' || s[10] == ' ')) {
		int y, mo, d;

		if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
		    mo < 1 || mo > 12 || d < 1 || d > 31 || !clock_part(s + 11, &tm, &utc))
			return -1;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		if ((ms = to_ms(&tm, utc)) < 0)
			return -1;
		*when = ms <= now_ms ? CLI_AT_PAST : CLI_AT_FUTURE;
		*at_ms = ms;
		return 0;
	}
	/* A time of day: today's, or tomorrow's once it has passed. */
	{
		struct tm today;
		bool is_utc;

		if (!clock_part(s, &tm, &is_utc))
			return -1;
		if (is_utc ? !gmtime_r(&now, &today) : !localtime_r(&now, &today))
			return -1;
		tm.tm_year = today.tm_year;
		tm.tm_mon = today.tm_mon;
		tm.tm_mday = today.tm_mday;
		if ((ms = to_ms(&tm, is_utc)) < 0)
			return -1;
		*when = CLI_AT_FUTURE;
		if (ms <= now_ms) {
			tm.tm_mday++;
			tm.tm_isdst = -1;
			{
				time_t t = is_utc ? timegm(&tm) : mktime(&tm);

				if (t == (time_t)-1)
					return -1;
				ms = (int64_t)t * 1000;
			}
			*when = CLI_AT_TOMORROW;
		}
		*at_ms = ms;
		return 0;
	}
}

static int parse_duration(struct parser *p, const char *what, const char *s, int64_t *ms)
{
	if (cli_parse_duration(s, ms) < 0)
		return fail(p, "%s: expected a duration such as 500ms, 10s, 1.5m or 2h, not '%s'", what, s);
	return 0;
}

/* parse_positive_duration: parse_duration, refusing zero. */
static int parse_positive_duration(struct parser *p, const char *what, const char *s, int64_t *ms)
{
	if (parse_duration(p, what, s, ms) < 0)
		return OPT_ERROR;
	if (*ms == 0)
		return fail(p, "%s: must be more than 0", what);
	return 0;
}

/* Append a job id to ids[*n] (room for CLI_MAX_IDS). */
static int add_id(struct parser *p, uint64_t *ids, size_t *n, const char *what, const char *s)
{
	if (*n == CLI_MAX_IDS)
		return fail(p, "%s: too many job ids (at most %d)", what, CLI_MAX_IDS);
	uint64_t id;
	if (parse_u64(p, what, s, 1, &id) < 0)
		return OPT_ERROR;
	ids[(*n)++] = id;
	return 0;
}

/* add_cmd_id: append a job id to cmd->ids, which grows (operands: as many as the command
 * line holds).  Returns 0 or OPT_ERROR. */
static int add_cmd_id(struct parser *p, struct cli_cmd *cmd, const char *what, const char *s)
{
	if (cmd->n_ids == cmd->cap_ids) {
		size_t cap = cmd->cap_ids ? cmd->cap_ids * 2 : 16;
		uint64_t *ids = realloc(cmd->ids, cap * sizeof(*ids));
		if (ids == NULL)
			return fail(p, "out of memory");
		cmd->ids = ids;
		cmd->cap_ids = cap;
	}
	uint64_t id;
	if (parse_u64(p, what, s, 1, &id) < 0)
		return OPT_ERROR;
	cmd->ids[cmd->n_ids++] = id;
	return 0;
}

/* cli_cmd_free: see args.h. */
void cli_cmd_free(struct cli_cmd *cmd)
{
	free(cmd->ids);
	cmd->ids = NULL;
	cmd->n_ids = cmd->cap_ids = 0;
}

/* cli_cmd_loads_libs: see args.h.  The table printers are print_jobs (jobs.c: ls, and
 * status without -l) and print_view (daemon.c: metrics); top and the dashboard always. */
bool cli_cmd_loads_libs(const struct cli_cmd *cmd)
{
	switch (cmd->verb) {
	case CLI_TOP:
	case CLI_DASHBOARD: return true;
	case CLI_LS: return !cmd->json;
	case CLI_STATUS: return !cmd->json && !cmd->longform;
	case CLI_METRICS: return !cmd->json && !cmd->prometheus;
	default: return false;
	}
}

static int no_positional(struct parser *p)
{
	return fail(p, "unexpected argument '%s' (see --help)", p->argv[p->i]);
}

/* global_opt: take option id if it is one of jsched's own (global_opts), wherever it
 * stood.  Returns 1 if it was, 0 if not, OPT_ERROR with the message set. */
static int global_opt(struct parser *p, struct cli_cmd *cmd, int id)
{
	switch (id) {
	case O_CLIENT_NAME:
		cmd->client_name = p->val;
		return 1;
	case O_REPLY_TIMEOUT:
		return parse_duration(p, "--reply-timeout", p->val, &cmd->reply_timeout_ms) < 0 ? OPT_ERROR : 1;
	case O_SOCKET:
		if (p->val[0] == '\0')
			return fail(p, "--socket: empty path");
		cmd->socket = p->val;
		return 1;
	default:
		return 0;
	}
}

/* global_or_fail: take option id as one of jsched's own; an id no table of the caller's
 * handles is a bug, said as such.  Returns 0 or OPT_ERROR. */
static int global_or_fail(struct parser *p, struct cli_cmd *cmd, int id)
{
	int g = global_opt(p, cmd, id);
	if (g == 0)
		return fail(p, "internal error: option %d", id);
	return g < 0 ? OPT_ERROR : 0;
}

/* ---- the columns of ls ---------------------------------------------------------------- */

const char *const cli_ls_columns[] = { "id", "state", "kind", "client", "uid", "priority", "name",
				       "age", "waited", "run", "result", "command", "submitted",
				       "started", "finished", NULL };
const char cli_ls_default_columns[] = "id,state,client,age,run,result,name,command";

/* cli_ls_column: see args.h. */
int cli_ls_column(const char *s, size_t len)
{
	for (int i = 0; cli_ls_columns[i] != NULL; i++)
		if (strlen(cli_ls_columns[i]) == len && strncasecmp(cli_ls_columns[i], s, len) == 0)
			return i;
	return -1;
}

/* check_columns: every name in the comma-separated list is a column of ls. */
static int check_columns(struct parser *p, const char *what, const char *list)
{
	if (list[0] == '\0')
		return fail(p, "%s: no column named", what);
	for (const char *s = list; *s != '\0';) {
		size_t len = strcspn(s, ",");
		if (cli_ls_column(s, len) < 0)
			return fail(p, "%s: unknown column '%.*s' (id, state, kind, client, uid, priority, name, "
				       "age, waited, run, result, command, submitted, started, finished)",
				    what, (int)len, s);
		s += len + (s[len] == ',');
	}
	return 0;
}


/* parse_mem: a size of at least 1 MiB: bytes, or a number with K, M, G or T (powers of
 * 1024), as the job spec's "resources.memory" takes it. */
static int parse_mem(struct parser *p, const char *s, uint64_t *out)
{
	char *end;
	unsigned shift = 0;
	unsigned long long n;

	errno = 0;
	n = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	if (s[0] >= '0' && s[0] <= '9' && *end && strchr("KkMmGgTt", *end)) {
		shift = (unsigned)(strchr("KkMmGgTt", *end) - "KkMmGgTt") / 2 * 10 + 10;
		end++;
	}
	if (s[0] < '0' || s[0] > '9' || errno || *end || (n << shift >> shift) != n ||
	    (n << shift) < (1u << 20))
		return fail(p, "--mem: expected a size of at least 1M (512M, 2G, or bytes), not '%s'", s);
	*out = (uint64_t)n << shift;
	return 0;
}

/* array_ok: s looks like a job array's indices (libjsched and the daemon check the rest:
 * the order, the ranges, the limit). */
static bool array_ok(const char *s)
{
	return s[0] != '\0' && strlen(s) <= 1024 && strspn(s, "0123456789-:,%") == strlen(s);
}

#define NEEDS_MAX 8	 /* PROTOCOL.md section 4, "needs" */
#define NEED_COUNT_MAX 1024

/* need_name_ok: a-z, 0-9 and _, a letter first, at most 31 bytes (PROTOCOL.md). */
static bool need_name_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_");

	return s[0] >= 'a' && s[0] <= 'z' && s[n] == '\0' && n <= 31;
}

/* parse_needs: --needs NAME=N[,NAME=N...]: a name given again takes the later count. */
static int parse_needs(struct parser *p, const char *s, struct cli_cmd *cmd)
{
	while (*s) {
		size_t nl = strcspn(s, "="), k;
		const char *num = s + nl + 1;
		char name[32], *end;
		unsigned long n;

		if (s[nl] != '=' || nl == 0 || nl >= sizeof(name))
			return fail(p, "--needs: expected NAME=N (gpu=1), not '%s'", s);
		memcpy(name, s, nl);
		name[nl] = '\0';
		if (!need_name_ok(name))
			return fail(p, "--needs: '%s' is not a resource name (a-z, 0-9, _, a letter first)",
				    name);
		errno = 0;
		n = num[0] >= '0' && num[0] <= '9' ? strtoul(num, &end, 10) : 0;
		if (num[0] < '0' || num[0] > '9' || errno || (*end && *end != ',') || n < 1 ||
		    n > NEED_COUNT_MAX)
			return fail(p, "--needs %s: expected a count from 1 to %d", name, NEED_COUNT_MAX);
		for (k = 0; k < cmd->n_needs && strcmp(cmd->need_name[k], name) != 0; k++)
			;
		if (k == cmd->n_needs) {
			if (cmd->n_needs == NEEDS_MAX)
				return fail(p, "--needs: at most %d resources", NEEDS_MAX);
			snprintf(cmd->need_name[cmd->n_needs++], sizeof(cmd->need_name[0]), "%s", name);
		}
		cmd->need_count[k] = (uint32_t)n;
		s = *end ? end + 1 : end;
	}
	return 0;
}

/* parse_retry_on: --retry-on LIST, comma-separated: failure, timeout, signal, exit codes. */
static int parse_retry_on(struct parser *p, struct cli_cmd *cmd, const char *list)
{
	cmd->retry_on = 0;
	cmd->n_retry_codes = 0;
	for (const char *s = list; *s != '\0';) {
		size_t len = strcspn(s, ",");
		char w[16];
		snprintf(w, sizeof w, "%.*s", (int)(len < sizeof w ? len : sizeof w - 1), s);
		char *end;
		long code = strtol(w, &end, 10);
		if (len < sizeof w && strcmp(w, "failure") == 0)
			cmd->retry_on |= JSCHED_RETRY_ON_FAILURE;
		else if (len < sizeof w && strcmp(w, "timeout") == 0)
			cmd->retry_on |= JSCHED_RETRY_ON_TIMEOUT;
		else if (len < sizeof w && strcmp(w, "signal") == 0)
			cmd->retry_on |= JSCHED_RETRY_ON_SIGNAL;
		else if (len < sizeof w && len > 0 && *end == '\0' && code >= 1 && code <= 255 &&
			 cmd->n_retry_codes < sizeof cmd->retry_codes / sizeof cmd->retry_codes[0]) {
			cmd->retry_on |= JSCHED_RETRY_ON_CODES;
			cmd->retry_codes[cmd->n_retry_codes++] = (int)code;
		} else
			return fail(p, "--retry-on: '%.*s' is not failure, timeout, signal or an exit code "
				       "from 1 to 255", (int)len, s);
		s += len + (s[len] == ',');
	}
	if (cmd->retry_on == 0)
		return fail(p, "--retry-on: expected a comma-separated list of failure, timeout, signal "
			       "and exit codes");
	return 0;
}

static int parse_submit(struct parser *p, struct cli_cmd *cmd)
{
	static const struct opt opts[] = {
		{ "fn", 0, true, O_FN }, { "args", 0, true, O_ARGS }, { "name", 0, true, O_NAME },
		{ "key", 0, true, O_KEY },
		{ "array", 0, true, O_ARRAY }, { "array-replace", 0, false, O_ARRAY_REPLACE },
		{ "on-exit", 0, true, O_ON_EXIT }, { "notify", 0, false, O_NOTIFY },
		{ "hook-timeout", 0, true, O_HOOK_TIMEOUT },
		{ "priority", 0, true, O_PRIORITY }, { "deadline", 0, true, O_DEADLINE },
		{ "delay", 0, true, O_DELAY }, { "at", 0, true, O_AT },
		{ "retries", 0, true, O_RETRIES }, { "backoff", 0, true, O_BACKOFF },
		{ "backoff-factor", 0, true, O_BACKOFF_FACTOR }, { "max-backoff", 0, true, O_MAX_BACKOFF },
		{ "retry-on", 0, true, O_RETRY_ON },
		{ "time-limit", 0, true, O_TIME_LIMIT }, { "cost", 0, true, O_COST },
		{ "mem", 0, true, O_MEM }, { "pids", 0, true, O_PIDS }, { "cpus", 0, true, O_CPUS },
		{ "after", 0, true, O_AFTER }, { "any-of", 0, true, O_ANY_OF },
		{ "backend", 0, true, O_BACKEND }, { "needs", 0, true, O_NEEDS },
		{ "cwd", 0, true, O_CWD }, { "env", 0, true, O_ENV },
		{ "clear-env", 0, false, O_CLEAR_ENV }, { "stdin", 0, true, O_STDIN }, { "batch", 0, true, O_BATCH },
		{ "wait", 'w', false, O_WAIT }, { "timeout", 0, true, O_TIMEOUT },
		{ "follow", 'f', false, O_FOLLOW }, { "merged", 0, false, O_MERGED },
		{ "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const char *const prios[] = { "low", "normal", "high", "critical" };
	bool timeout = false;
	for (;;) {
		int id = next_opt(p, opts);
		switch (id) {
		case OPT_END:
			goto done;
		case OPT_DASHDASH:
			cmd->command = p->argv + p->i;
			p->i = p->argc;
			goto done;
		case OPT_POSITIONAL:
			/* The command's first word: the rest is the command's. */
			cmd->command = p->argv + p->i;
			p->i = p->argc;
			goto done;
		case OPT_ERROR:
			return OPT_ERROR;
		case OPT_HELP:
			cmd->help_for = cmd->verb;
			cmd->verb = CLI_HELP;
			return 0;
		case O_FN: cmd->fn = p->val; break;
		case O_ARGS: cmd->args = p->val; break;
		case O_NAME: cmd->name = p->val; break;
		case O_KEY:
			if (p->val[0] == '\0' || strlen(p->val) > 128)
				return fail(p, "--key: expected 1 to 128 bytes, not %zu", strlen(p->val));
			cmd->key = p->val;
			break;
		case O_ARRAY:
			if (!array_ok(p->val))
				return fail(p, "--array: expected indices such as 1-100, 1-99:2, 1,5,7 "
					    "(increasing), optionally ending %%N with N >= 1, not '%s'", p->val);
			cmd->array = p->val;
			break;
		case O_ARRAY_REPLACE: cmd->array_replace = true; break;
		case O_ON_EXIT:
			if (p->val[0] == '\0' || strlen(p->val) > 4096)
				return fail(p, "--on-exit: expected a command line of 1 to 4096 bytes");
			cmd->on_exit = p->val;
			break;
		case O_NOTIFY: cmd->notify = true; break;
		case O_HOOK_TIMEOUT:
			if (parse_duration(p, "--hook-timeout", p->val, &cmd->hook_timeout_ms) < 0)
				return OPT_ERROR;
			if (cmd->hook_timeout_ms < 1 || cmd->hook_timeout_ms > 86400000)
				return fail(p, "--hook-timeout: expected 1ms to 24h, not '%s'", p->val);
			break;
		case O_PRIORITY:
			cmd->priority = -1;
			for (int i = 0; i < 4; i++)
				if (strcmp(p->val, prios[i]) == 0)
					cmd->priority = i;
			if (cmd->priority < 0)
				return fail(p, "--priority: expected low, normal, high or critical, not '%s'",
					    p->val);
			break;
		case O_DEADLINE:
			if (parse_positive_duration(p, "--deadline", p->val, &cmd->deadline_ms) < 0)
				return OPT_ERROR;
			break;
		case O_DELAY: {
			int64_t d;

			if (cmd->at != NULL || cmd->delay != NULL)
				return fail(p, "--delay and --at: give one of them, once");
			if (parse_duration(p, "--delay", p->val, &d) < 0)
				return OPT_ERROR;
			cmd->delay = p->val;
			cmd->not_before_ms = d > 0 ? cli_now_ms() + d : 0;
			break;
		}
		case O_RETRIES:
			if (parse_u32(p, "--retries", p->val, 1, &cmd->retries) < 0)
				return OPT_ERROR;
			if (cmd->retries > 999)
				return fail(p, "--retries: at most 999, not %u", (unsigned)cmd->retries);
			break;
		case O_BACKOFF:
			if (parse_duration(p, "--backoff", p->val, &cmd->backoff_ms) < 0)
				return OPT_ERROR;
			break;
		case O_MAX_BACKOFF:
			if (parse_duration(p, "--max-backoff", p->val, &cmd->max_backoff_ms) < 0)
				return OPT_ERROR;
			break;
		case O_BACKOFF_FACTOR: {
			char *end;

			cmd->backoff_factor = strtod(p->val, &end);
			if (*end || end == p->val || !(cmd->backoff_factor >= 1 && cmd->backoff_factor <= 1000))
				return fail(p, "--backoff-factor: expected a number from 1 to 1000 (2), not '%s'",
					    p->val);
			break;
		}
		case O_RETRY_ON:
			if (parse_retry_on(p, cmd, p->val) < 0)
				return OPT_ERROR;
			break;
		case O_AT:
			if (cmd->at != NULL || cmd->delay != NULL)
				return fail(p, "--delay and --at: give one of them, once");
			if (cli_parse_at(p->val, cli_now_ms(), &cmd->not_before_ms, &cmd->at_when) < 0)
				return fail(p, "--at: '%s' is not a time: expected HH:MM or HH:MM:SS (the next "
					    "time the clock shows it), or YYYY-MM-DDTHH:MM[:SS] (a date; local "
					    "time, or UTC with Z at the end)", p->val);
			cmd->at = p->val;
			break;
		case O_TIME_LIMIT:
			if (parse_positive_duration(p, "--time-limit", p->val, &cmd->time_limit_ms) < 0)
				return OPT_ERROR;
			break;
		case O_COST:
			if (parse_u32(p, "--cost", p->val, 1, &cmd->cost) < 0)
				return OPT_ERROR;
			break;
		case O_MEM:
			if (parse_mem(p, p->val, &cmd->mem_bytes) < 0)
				return OPT_ERROR;
			break;
		case O_PIDS:
			if (parse_u64(p, "--pids", p->val, 1, &cmd->pids) < 0)
				return OPT_ERROR;
			break;
		case O_CPUS: {
			char *end;

			cmd->cpus = strtod(p->val, &end);
			if (*end || !(cmd->cpus >= 0.001 && cmd->cpus <= 4096))
				return fail(p, "--cpus: expected a number of CPUs from 0.001 to 4096 (1.5), not '%s'",
					    p->val);
			break;
		}
		case O_BACKEND:
			if (strcmp(p->val, "local") != 0 && strcmp(p->val, "slurm") != 0 &&
			    strcmp(p->val, "auto") != 0)
				return fail(p, "--backend: expected local, slurm or auto, not '%s'", p->val);
			cmd->backend = p->val;
			break;
		case O_NEEDS:
			if (parse_needs(p, p->val, cmd) < 0)
				return OPT_ERROR;
			break;
		case O_AFTER:
			if (cmd->n_ids == CLI_MAX_IDS)
				return fail(p, "--after: too many job ids (at most %d)", CLI_MAX_IDS);
			if (add_cmd_id(p, cmd, "--after", p->val) < 0)
				return OPT_ERROR;
			break;
		case O_ANY_OF:
			if (add_id(p, cmd->any_of, &cmd->n_any_of, "--any-of", p->val) < 0)
				return OPT_ERROR;
			break;
		case O_CWD: cmd->cwd = p->val; break;
		case O_ENV:
			if (strchr(p->val, '=') == NULL || p->val[0] == '=')
				return fail(p, "--env: expected NAME=VALUE, not '%s'", p->val);
			if (cmd->n_env == CLI_MAX_ENV)
				return fail(p, "--env: at most %d", CLI_MAX_ENV);
			cmd->env[cmd->n_env++] = p->val;
			break;
		case O_CLEAR_ENV: cmd->clear_env = true; break;
		case O_STDIN: cmd->stdin_file = p->val; break;
		case O_BATCH: cmd->batch = p->val; break;
		case O_WAIT: cmd->wait = true; break;
		case O_FOLLOW: cmd->follow = true; break;
		case O_MERGED: cmd->merged = cmd->follow = true; break;
		case O_TIMEOUT:
			if (parse_duration(p, "--timeout", p->val, &cmd->timeout_ms) < 0)
				return OPT_ERROR;
			timeout = true;
			break;
		case O_JSON: cmd->json = true; break;
		default:
			if (global_or_fail(p, cmd, id) < 0)
				return OPT_ERROR;
			break;
		}
	}
done:
	if (cmd->batch != NULL) {
		/* The file says everything about its jobs; only how to wait may be added. */
		const char *spec_opt = cmd->command ? "a command" : cmd->fn ? "--fn" : cmd->args ? "--args"
			: cmd->name ? "--name" : cmd->key ? "--key" : cmd->array ? "--array"
			: cmd->array_replace ? "--array-replace" : cmd->on_exit ? "--on-exit"
			: cmd->notify ? "--notify" : cmd->hook_timeout_ms ? "--hook-timeout" : cmd->priority >= 0 ? "--priority" : cmd->deadline_ms ? "--deadline"
			: cmd->delay ? "--delay" : cmd->at ? "--at" : cmd->retries ? "--retries"
			: cmd->time_limit_ms ? "--time-limit" : cmd->cost ? "--cost" : cmd->n_ids ? "--after"
			: cmd->n_any_of ? "--any-of" : cmd->cwd ? "--cwd" : cmd->n_env ? "--env"
			: cmd->clear_env ? "--clear-env" : cmd->stdin_file ? "--stdin" : cmd->mem_bytes ? "--mem"
			: cmd->pids ? "--pids" : cmd->cpus > 0 ? "--cpus" : cmd->backend ? "--backend"
			: cmd->n_needs ? "--needs" : NULL;
		if (spec_opt != NULL)
			return fail(p, "%s cannot be combined with --batch (write it in the file's specs)", spec_opt);
		if (cmd->follow)
			return fail(p, "%s follows one job, not a --batch", cmd->merged ? "--merged" : "--follow");
		if (timeout && !cmd->wait)
			return fail(p, "--timeout needs --wait");
		return 0;
	}
	if (cmd->fn != NULL && cmd->command != NULL)
		return fail(p, "give either --fn NAME or a command, not both");
	if (cmd->fn == NULL && cmd->command == NULL)
		return fail(p, "nothing to run: give a command, --fn NAME or --batch FILE");
	if (cmd->command != NULL && cmd->command[0] == NULL)
		return fail(p, "no command after --");
	if (cmd->args != NULL && cmd->fn == NULL)
		return fail(p, "--args needs --fn (it is the arguments of a call job)");
	if (cmd->fn != NULL) {
		const char *exec_only = cmd->cwd ? "--cwd" : cmd->n_env ? "--env" : cmd->clear_env ? "--clear-env"
			: cmd->stdin_file ? "--stdin" : cmd->time_limit_ms ? "--time-limit" : cmd->mem_bytes ? "--mem"
			: cmd->pids ? "--pids" : cmd->cpus > 0 ? "--cpus" : cmd->backend ? "--backend"
			: cmd->n_needs ? "--needs" : NULL;
		if (exec_only != NULL)
			return fail(p, "%s applies to exec jobs, not to a call job (--fn)", exec_only);
	}
	if (cmd->retries == 0 && (cmd->backoff_ms >= 0 || cmd->backoff_factor > 0 || cmd->max_backoff_ms >= 0 ||
				  cmd->retry_on))
		return fail(p, "%s needs --retries", cmd->backoff_ms >= 0 ? "--backoff" : cmd->backoff_factor > 0
			    ? "--backoff-factor" : cmd->max_backoff_ms >= 0 ? "--max-backoff" : "--retry-on");
	if (cmd->follow) {
		/* --follow is --wait with the output printed as it comes (cmd_submit). */
		const char *opt = cmd->merged ? "--merged" : "--follow";
		if (cmd->fn != NULL)
			return fail(p, "%s follows a command's output; a call job (--fn) has none", opt);
		if (cmd->array != NULL)
			return fail(p, "%s follows one job; follow an array's elements one by one "
				    "(jsched output -f ID)", opt);
		if (cmd->json)
			return fail(p, "%s prints the output as it comes; it does not go with --json", opt);
		if (timeout)
			return fail(p, "%s ends with the job; it does not go with --timeout", opt);
		cmd->wait = true;
	}
	if (timeout && !cmd->wait)
		return fail(p, "--timeout needs --wait");
	return 0;
}

static const char *const state_names[] = { "waiting", "scheduled", "retrying", "queued", "running", "succeeded", "failed",
					   "cancelled", "expired", "dropped" };

enum operands { NO_IDS, ONE_ID, SOME_IDS };

/* Every subcommand but submit: options from opts, in any order with the operands (job
 * ids, as many as `operands` says). */
static int parse_generic(struct parser *p, struct cli_cmd *cmd, const struct opt *opts,
			 enum operands operands)
{
	bool dashdash = false;
	for (;;) {
		int id = dashdash ? (p->i < p->argc ? OPT_POSITIONAL : OPT_END) : next_opt(p, opts);
		switch (id) {
		case OPT_END:
			if (cmd->instance != NULL && cmd->since < 0)
				return fail(p, "--instance needs --since");
			if (operands == NO_IDS)
				return 0;
			if (operands == SOME_IDS && (cmd->mine || cmd->name_glob != NULL || cmd->array_id))
				return 0;
			if (cmd->n_ids == 0)
				return fail(p, "expected %s", operands == ONE_ID ? "a job id"
					    : "one or more job ids (or --all, --name NAME)");
			if (operands == ONE_ID && cmd->n_ids > 1)
				return fail(p, "expected one job id, got %zu", cmd->n_ids);
			if (cmd->out_only && cmd->err_only)
				return fail(p, "--stdout and --stderr cannot be combined (give neither for both)");
			return 0;
		case OPT_POSITIONAL:
			if (operands == NO_IDS)
				return no_positional(p);
			if (add_cmd_id(p, cmd, "job id", p->argv[p->i++]) < 0)
				return OPT_ERROR;
			break;
		case OPT_DASHDASH:
			dashdash = true;
			break;
		case OPT_ERROR:
			return OPT_ERROR;
		case OPT_HELP:
			cmd->help_for = cmd->verb;
			cmd->verb = CLI_HELP;
			return 0;
		case O_JSON: cmd->json = true; break;
		case O_STATE: {
			/* Check every name now, so a typo is an error and not an empty list. */
			const char *s = p->val;
			while (*s != '\0') {
				size_t len = strcspn(s, ",");
				bool known = false;
				for (size_t k = 0; k < sizeof state_names / sizeof state_names[0]; k++)
					if (strlen(state_names[k]) == len && strncmp(state_names[k], s, len) == 0)
						known = true;
				if (!known)
					return fail(p, "--state: unknown state '%.*s' (waiting, scheduled, retrying, queued, "
						       "running, succeeded, failed, cancelled, expired, dropped)",
						    (int)len, s);
				s += len + (s[len] == ',');
			}
			cmd->states = p->val;
			break;
		}
		case O_SINCE: {
			uint64_t seq;
			if (parse_u64(p, "--since", p->val, 0, &seq) < 0)
				return OPT_ERROR;
			if (seq > (uint64_t)INT64_MAX)
				return fail(p, "--since: %s is too large", p->val);
			cmd->since = (int64_t)seq;
			break;
		}
		case O_COUNT: {
			uint64_t n;
			if (parse_u64(p, "-n", p->val, 1, &n) < 0)
				return OPT_ERROR;
			cmd->count = n > LONG_MAX ? LONG_MAX : (long)n;
			break;
		}
		case O_ONCE: cmd->count = 1; break;
		case O_FOLLOW: cmd->follow = true; break;
		case O_MERGED: cmd->merged = true; break;
		case O_TAIL: {
			uint64_t n;
			if (parse_u64(p, "--tail", p->val, 0, &n) < 0)
				return OPT_ERROR;
			cmd->tail_lines = n > INT64_MAX ? INT64_MAX : (int64_t)n;
			break;
		}
		case O_PROMETHEUS: cmd->prometheus = true; break;
		case O_OPEN: cmd->open = true; break;
		case O_PORT: {
			uint64_t port;
			if (parse_u64(p, "--port", p->val, 1, &port) < 0)
				return OPT_ERROR;
			if (port > 65535)
				return fail(p, "--port: %s is not a port (1 to 65535)", p->val);
			cmd->port = (unsigned)port;
			break;
		}
		case O_LONG: cmd->longform = true; break;
		case O_INSTANCE: cmd->instance = p->val; break;
		case O_INTERVAL:
			if (parse_duration(p, "--interval", p->val, &cmd->interval_ms) < 0)
				return OPT_ERROR;
			if (cmd->interval_ms < 10)
				return fail(p, "--interval: at least 10ms");
			break;
		case O_TIMEOUT:
			if (parse_duration(p, "--timeout", p->val, &cmd->timeout_ms) < 0)
				return OPT_ERROR;
			break;
		case O_WEIGHT:
			if (parse_u32(p, "--weight", p->val, 1, &cmd->weight) < 0)
				return OPT_ERROR;
			break;
		case O_MAX_QUEUED:
			if (parse_u32(p, "--max-queued", p->val, 1, &cmd->max_queued) < 0)
				return OPT_ERROR;
			break;
		case O_IMMEDIATE: cmd->immediate = true; break;
		case O_CLIENT: cmd->client = p->val; break;
		case O_RUNNING: cmd->running = true; break;
		case O_ALL: cmd->all = true; break;
		case O_MINE: cmd->mine = true; break;
		case O_OVERFLOW:
			if (strcmp(p->val, "reject") != 0 && strcmp(p->val, "drop_oldest") != 0 &&
			    strcmp(p->val, "drop_newest") != 0 && strcmp(p->val, "block") != 0)
				return fail(p, "--overflow: expected reject, drop_oldest, drop_newest or block, "
					       "not '%s'", p->val);
			cmd->overflow = p->val;
			break;
		case O_ANY: cmd->any = true; break;
		case O_STDOUT: cmd->out_only = true; break;
		case O_STDERR: cmd->err_only = true; break;
		case O_ARRAY:
			if (parse_u64(p, "--array", p->val, 1, &cmd->array_id) < 0)
				return OPT_ERROR;
			break;
		case O_LIMIT: {
			uint64_t n;
			if (parse_u64(p, "--limit", p->val, 0, &n) < 0)
				return OPT_ERROR;
			cmd->limit = n > LONG_MAX ? LONG_MAX : (long)n;
			break;
		}
		case O_SORT:
			if (check_columns(p, "--sort", p->val + (p->val[0] == '-')) < 0)
				return OPT_ERROR;
			if (strchr(p->val, ',') != NULL)
				return fail(p, "--sort: one column, not '%s'", p->val);
			cmd->sort = p->val;
			break;
		case O_COLUMNS:
			if (check_columns(p, "-o", p->val) < 0)
				return OPT_ERROR;
			cmd->columns = p->val;
			break;
		case O_NAME_GLOB: cmd->name_glob = p->val; break;
		case O_NO_HEADINGS: cmd->no_headings = true; break;
		default:
			if (global_or_fail(p, cmd, id) < 0)
				return OPT_ERROR;
			break;
		}
	}
}

/* call OP [JSON]: two operands, jsched's own options anywhere. */
static int parse_call(struct parser *p, struct cli_cmd *cmd, const struct opt *opts)
{
	for (;;) {
		int id = next_opt(p, opts);
		switch (id) {
		case OPT_END:
			if (cmd->op == NULL)
				return fail(p, "expected an operation (jsched call status '{\"job\": 5}')");
			return 0;
		case OPT_POSITIONAL:
		case OPT_DASHDASH:
			if (id == OPT_DASHDASH && p->i >= p->argc)
				break;
			if (cmd->op == NULL)
				cmd->op = p->argv[p->i++];
			else if (cmd->op_json == NULL)
				cmd->op_json = p->argv[p->i++];
			else
				return no_positional(p);
			break;
		case OPT_ERROR:
			return OPT_ERROR;
		case OPT_HELP:
			cmd->help_for = cmd->verb;
			cmd->verb = CLI_HELP;
			return 0;
		default:
			if (global_or_fail(p, cmd, id) < 0)
				return OPT_ERROR;
			break;
		}
	}
}

static int parse_admin(struct parser *p, struct cli_cmd *cmd)
{
	static const struct opt none[] = { { "json", 0, false, O_JSON }, { NULL, 0, false, 0 } };
	static const struct opt set_client[] = {
		{ "weight", 0, true, O_WEIGHT }, { "max-queued", 0, true, O_MAX_QUEUED },
		{ "overflow", 0, true, O_OVERFLOW }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt shutdown[] = {
		{ "immediate", 0, false, O_IMMEDIATE }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	int r, g = 1;
	/* jsched's own options may come before the admin command too. */
	while ((r = next_opt(p, none)) >= 0 && (g = global_opt(p, cmd, r)) > 0)
		;
	if (r >= 0) /* --json, or a bad value of one of jsched's options */
		return g < 0 ? OPT_ERROR : fail(p, "--json goes after the admin command (jsched admin reload --json)");
	if (r == OPT_HELP || r == OPT_END) {
		cmd->help_for = CLI_ADMIN_RELOAD;
		cmd->verb = CLI_HELP;
		return r == OPT_HELP ? 0 : fail(p, "expected reload, set-client or shutdown");
	}
	if (r != OPT_POSITIONAL)
		return r == OPT_ERROR ? OPT_ERROR : fail(p, "expected reload, set-client or shutdown");
	const char *sub = p->argv[p->i++];
	if (strcmp(sub, "reload") == 0) {
		cmd->verb = CLI_ADMIN_RELOAD;
		p->cmd = "jsched admin reload";
		return parse_generic(p, cmd, none, NO_IDS);
	}
	if (strcmp(sub, "shutdown") == 0) {
		cmd->verb = CLI_ADMIN_SHUTDOWN;
		p->cmd = "jsched admin shutdown";
		return parse_generic(p, cmd, shutdown, NO_IDS);
	}
	if (strcmp(sub, "set-client") == 0) {
		cmd->verb = CLI_ADMIN_SET_CLIENT;
		p->cmd = "jsched admin set-client";
		/* The client first, then the options: "admin set-client alice --weight 2".  (The
		 * client is an operand here, not --client: it is what the command is about.) */
		if (p->i >= p->argc || p->argv[p->i][0] == '-')
			return fail(p, "expected a client name first (jsched admin set-client CLIENT "
				       "--weight W)");
		cmd->client = p->argv[p->i++];
		r = parse_generic(p, cmd, set_client, NO_IDS);
		if (r != 0 || cmd->verb == CLI_HELP)
			return r;
		if (cmd->client == NULL)
			return fail(p, "expected a client name");
		if (cmd->weight == 0 && cmd->max_queued == 0 && cmd->overflow == NULL)
			return fail(p, "nothing to set: give --weight, --max-queued or --overflow");
		return 0;
	}
	return fail(p, "unknown admin command '%s' (reload, set-client, shutdown)", sub);
}

/* cli_parse: see args.h. */
int cli_parse(int argc, char **argv, struct cli_cmd *cmd, char *err, size_t errlen)
{
	static const struct opt global[] = { { "version", 'V', false, O_VERSION }, { NULL, 0, false, 0 } };
	static const struct opt no_opts[] = { { NULL, 0, false, 0 } };
	static const struct opt hold_opts[] = { { "json", 0, false, O_JSON }, { NULL, 0, false, 0 } };
	static const struct opt cancel_opts[] = {
		{ "all", 0, false, O_MINE }, { "name", 0, true, O_NAME_GLOB }, { "array", 0, true, O_ARRAY },
		{ "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt status_opts[] = {
		{ "long", 'l', false, O_LONG }, { "all", 0, false, O_MINE }, { "name", 0, true, O_NAME_GLOB },
		{ "array", 0, true, O_ARRAY }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt wait_opts[] = {
		{ "any", 0, false, O_ANY }, { "timeout", 0, true, O_TIMEOUT }, { "all", 0, false, O_MINE },
		{ "name", 0, true, O_NAME_GLOB }, { "array", 0, true, O_ARRAY }, { "json", 0, false, O_JSON },
		{ NULL, 0, false, 0 },
	};
	static const struct opt output_opts[] = {
		{ "stdout", 0, false, O_STDOUT }, { "stderr", 0, false, O_STDERR },
		{ "follow", 'f', false, O_FOLLOW }, { "merged", 0, false, O_MERGED },
		{ "tail", 0, true, O_TAIL }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt ls_opts[] = {
		{ "state", 0, true, O_STATE }, { "client", 0, true, O_CLIENT }, { "all", 0, false, O_ALL },
		{ "name", 0, true, O_NAME_GLOB }, { "limit", 0, true, O_LIMIT }, { "sort", 0, true, O_SORT },
		{ "output", 'o', true, O_COLUMNS }, { "no-headings", 0, false, O_NO_HEADINGS },
		{ "array", 0, true, O_ARRAY }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt watch_opts[] = {
		{ "since", 0, true, O_SINCE }, { "instance", 0, true, O_INSTANCE }, { "count", 'n', true, O_COUNT },
		{ "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt top_opts[] = {
		{ "once", 0, false, O_ONCE }, { "count", 'n', true, O_COUNT },
		{ "interval", 0, true, O_INTERVAL }, { NULL, 0, false, 0 },
	};
	static const struct opt metrics_opts[] = {
		{ "json", 0, false, O_JSON }, { "prometheus", 0, false, O_PROMETHEUS }, { NULL, 0, false, 0 },
	};
	static const struct opt dashboard_opts[] = {
		{ "port", 0, true, O_PORT }, { "open", 0, false, O_OPEN }, { NULL, 0, false, 0 },
	};
	static const struct opt drain_opts[] = {
		{ "client", 0, true, O_CLIENT }, { "running", 0, false, O_RUNNING },
		{ "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};
	static const struct opt pause_opts[] = {
		{ "all", 0, false, O_ALL }, { "json", 0, false, O_JSON }, { NULL, 0, false, 0 },
	};

	memset(cmd, 0, sizeof *cmd);
	cmd->priority = -1;
	cmd->timeout_ms = -1;
	cmd->interval_ms = 1000;
	cmd->since = -1;
	cmd->tail_lines = -1;
	cmd->reply_timeout_ms = -1;
	cmd->backoff_ms = -1;
	cmd->max_backoff_ms = -1;
	cmd->limit = CLI_LS_DEFAULT_LIMIT;
	if (errlen > 0)
		err[0] = '\0';
	struct parser p = { .argc = argc, .argv = argv, .i = 1, .cmd = "jsched", .err = err, .errlen = errlen };

	for (;;) {
		int id = next_opt(&p, global);
		if (id == OPT_ERROR)
			return CLI_EXIT_USAGE;
		if (id == OPT_HELP) {
			cmd->verb = CLI_HELP;
			return CLI_EXIT_OK;
		}
		if (id == OPT_END) {
			cmd->verb = CLI_HELP;
			fail(&p, "expected a command (see jsched --help)");
			return CLI_EXIT_USAGE;
		}
		if (id == O_VERSION) {
			cmd->verb = CLI_VERSION;
			return CLI_EXIT_OK;
		}
		int g = global_opt(&p, cmd, id);
		if (g < 0)
			return CLI_EXIT_USAGE;
		if (g > 0)
			continue;
		if (id == OPT_DASHDASH) {
			fail(&p, "expected a command before -- (see jsched --help)");
			return CLI_EXIT_USAGE;
		}
		break; /* OPT_POSITIONAL: the subcommand */
	}

	const char *verb = argv[p.i++];
	char cmdname[64];
	int v;
	for (v = 0; v < CLI_VERB_COUNT; v++)
		if (strcmp(verb, verb_names[v]) == 0)
			break;
	if (strcmp(verb, "admin") == 0)
		v = CLI_ADMIN_RELOAD; /* refined by parse_admin */
	if (v == CLI_VERB_COUNT) {
		fail(&p, "unknown command '%s' (see jsched --help)", verb);
		return CLI_EXIT_USAGE;
	}
	cmd->verb = (enum cli_verb)v;
	snprintf(cmdname, sizeof cmdname, "jsched %s", verb);
	p.cmd = cmdname;

	int r;
	switch (cmd->verb) {
	case CLI_VERSION: r = p.i < argc ? no_positional(&p) : 0; break;
	case CLI_HELP:
		cmd->help_for = CLI_HELP;
		if (p.i < argc) {
			const char *what = argv[p.i++];
			if (strcmp(what, "-h") == 0 || strcmp(what, "--help") == 0)
				return CLI_EXIT_OK; /* help --help: the tool's help */
			for (v = CLI_SUBMIT; v < CLI_VERB_COUNT; v++)
				if (strcmp(what, verb_names[v]) == 0 || (strcmp(what, "admin") == 0 &&
									 v == CLI_ADMIN_RELOAD))
					break;
			if (v == CLI_VERB_COUNT) {
				fail(&p, "no such command '%s'", what);
				return CLI_EXIT_USAGE;
			}
			cmd->help_for = (enum cli_verb)v;
		}
		r = p.i < argc ? no_positional(&p) : 0;
		break;
	case CLI_SUBMIT: r = parse_submit(&p, cmd); break;
	case CLI_WAIT: r = parse_generic(&p, cmd, wait_opts, SOME_IDS); break;
	case CLI_STATUS: r = parse_generic(&p, cmd, status_opts, SOME_IDS); break;
	case CLI_CANCEL: r = parse_generic(&p, cmd, cancel_opts, SOME_IDS); break;
	case CLI_CALL: r = parse_call(&p, cmd, no_opts); break;
	case CLI_OUTPUT: r = parse_generic(&p, cmd, output_opts, ONE_ID); break;
	case CLI_LS: r = parse_generic(&p, cmd, ls_opts, NO_IDS); break;
	case CLI_WATCH: r = parse_generic(&p, cmd, watch_opts, NO_IDS); break;
	case CLI_METRICS: r = parse_generic(&p, cmd, metrics_opts, NO_IDS); break;
	case CLI_DASHBOARD: r = parse_generic(&p, cmd, dashboard_opts, NO_IDS); break;
	case CLI_TOP: r = parse_generic(&p, cmd, top_opts, NO_IDS); break;
	case CLI_DRAIN: r = parse_generic(&p, cmd, drain_opts, NO_IDS); break;
	case CLI_PAUSE:
	case CLI_RESUME: r = parse_generic(&p, cmd, pause_opts, NO_IDS); break;
	case CLI_HOLD:
	case CLI_RELEASE: r = parse_generic(&p, cmd, hold_opts, SOME_IDS); break;
	case CLI_HOOKS: cmd->mine = true; r = parse_generic(&p, cmd, hold_opts, SOME_IDS); break;
	case CLI_RETRY: r = parse_generic(&p, cmd, hold_opts, SOME_IDS); break;
	case CLI_RESULT: r = parse_generic(&p, cmd, no_opts, ONE_ID); break;
	default: r = parse_admin(&p, cmd); break;
	}
	return r < 0 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
