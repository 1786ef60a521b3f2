/* main.c: the jsched tool: parse the command line, connect, run the subcommand, and turn
 * what happened into an exit status (the table is in args.h and `jsched --help`).
 */
#include "libclient/tool/tool.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "jsched_version.h"

static const char *const verb_names[CLI_VERB_COUNT] = {
	[CLI_HELP] = "help",	       [CLI_VERSION] = "version",
	[CLI_SUBMIT] = "submit",       [CLI_WAIT] = "wait",
	[CLI_STATUS] = "status",       [CLI_CANCEL] = "cancel",
	[CLI_LS] = "ls",	       [CLI_OUTPUT] = "output",
	[CLI_WATCH] = "watch",	       [CLI_METRICS] = "metrics",
	[CLI_TOP] = "top",	       [CLI_DRAIN] = "drain",
	[CLI_DASHBOARD] = "dashboard",
	[CLI_PAUSE] = "pause",	       [CLI_RESUME] = "resume",
	[CLI_HOLD] = "hold",	       [CLI_RELEASE] = "release",
	[CLI_RETRY] = "retry",	       [CLI_RESULT] = "result",
	[CLI_ADMIN_RELOAD] = "admin reload", [CLI_ADMIN_SET_CLIENT] = "admin set-client",
	[CLI_ADMIN_SHUTDOWN] = "admin shutdown", [CLI_CALL] = "call",
};

/* tool_verb_name: see tool.h. */
const char *tool_verb_name(enum cli_verb verb)
{
	return (unsigned)verb < CLI_VERB_COUNT ? verb_names[verb] : "?";
}

/* tool_exit_of: see tool.h. */
int tool_exit_of(int code)
{
	switch (code) {
	case 0:
		return CLI_EXIT_OK;
	case JSCHED_ECONNECT:
	case JSCHED_EDISCONNECTED:
	case JSCHED_ETOO_MANY_CONNECTIONS:
		return CLI_EXIT_UNAVAILABLE;
	case JSCHED_ETIMEOUT:
		return CLI_EXIT_TIMEOUT;
	case JSCHED_EPERMISSION_DENIED:
		return CLI_EXIT_PERMISSION;
	default:
		return CLI_EXIT_FAILED;
	}
}

/* tool_fail: see tool.h. */
int tool_fail(struct jsched_conn *conn, const struct cli_cmd *cmd, int code)
{
	const char *wire = jsched_error_code(conn);
	const char *msg = jsched_error_message(conn);
	const char *field = jsched_error_field(conn);
	fprintf(stderr, "jsched %s: %s%s%s", tool_verb_name(cmd->verb), wire != NULL ? wire : "",
		wire != NULL ? ": " : "", msg != NULL && msg[0] != '\0' ? msg : jsched_strerror(code));
	if (field != NULL)
		fprintf(stderr, " (in %s)", field);
	fputc('\n', stderr);
	return tool_exit_of(code);
}

static int run(struct jsched_conn *conn, const struct cli_cmd *cmd)
{
	switch (cmd->verb) {
	case CLI_SUBMIT: return cmd_submit(conn, cmd);
	case CLI_WAIT: return cmd_wait(conn, cmd);
	case CLI_STATUS: return cmd_status(conn, cmd);
	case CLI_CANCEL: return cmd_cancel(conn, cmd);
	case CLI_LS: return cmd_ls(conn, cmd);
	case CLI_OUTPUT: return cmd_output(conn, cmd);
	case CLI_WATCH: return cmd_watch(conn, cmd);
	case CLI_METRICS: return cmd_metrics(conn, cmd);
	case CLI_TOP: return cmd_top(conn, cmd);
	case CLI_DRAIN: return cmd_drain(conn, cmd);
	case CLI_DASHBOARD: return cmd_dashboard(conn, cmd);
	case CLI_PAUSE:
	case CLI_RESUME: return cmd_pause(conn, cmd);
	case CLI_HOLD:
	case CLI_RELEASE: return cmd_hold(conn, cmd);
	case CLI_HOOKS: return cmd_hooks(conn, cmd);
	case CLI_RETRY: return cmd_retry(conn, cmd);
	case CLI_RESULT: return cmd_result(conn, cmd);
	case CLI_ADMIN_RELOAD:
	case CLI_ADMIN_SET_CLIENT:
	case CLI_ADMIN_SHUTDOWN: return cmd_admin(conn, cmd);
	case CLI_CALL: return cmd_call(conn, cmd);
	default: return CLI_EXIT_USAGE;
	}
}

/* explain_connect: after a failed connect to path, say what is there in words (libuv
 * reports a missing directory as "permission denied"): the directory is missing, nothing
 * is at the path, or it is not a socket.  Returns true if it printed something. */
static bool explain_connect(const struct cli_cmd *cmd, const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	const char *verb = tool_verb_name(cmd->verb);
	if (stat(dir, &st) < 0 && errno == ENOENT) {
		fprintf(stderr, "jsched %s: no jschedd at %s: the directory %s does not exist (is jschedd "
				"running? see --socket)\n", verb, path, dir);
		return true;
	}
	if (stat(path, &st) < 0 && errno == ENOENT) {
		fprintf(stderr, "jsched %s: no jschedd at %s: nothing is there (is jschedd running? see "
				"--socket)\n", verb, path);
		return true;
	}
	if (stat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "jsched %s: no jschedd at %s: that is not a socket\n", verb, path);
		return true;
	}
	return false;
}

/* The command line, parsed; what it allocated is freed at exit (free_cmd). */
static struct cli_cmd parsed;

static void free_cmd(void)
{
	cli_cmd_free(&parsed);
}

/* seed_json: jansson's hash seed from one getrandom call, before the first object.
 * Seeded by itself, jansson opens /dev/urandom, reads 4 bytes and closes it: three
 * system calls and a path walk in every run of the tool, where this is one (README.md
 * has the count).  If getrandom cannot answer at once, jansson seeds itself as before. */
static void seed_json(void)
{
	uint32_t seed = 0;

	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed && seed != 0)
		json_object_seed(seed);
}

int main(int argc, char **argv)
{
	char err[512];
	seed_json();
	atexit(free_cmd);
	int rc = cli_parse(argc, argv, &parsed, err, sizeof err);
	if (rc != CLI_EXIT_OK) {
		fprintf(stderr, "%s\n", err);
		return rc;
	}
	if (parsed.verb == CLI_HELP) {
		fputs(cli_help(parsed.help_for), stdout);
		return CLI_EXIT_OK;
	}
	if (parsed.verb == CLI_VERSION) {
		printf("jsched %s\n%s\n", JSCHED_VERSION, JSCHED_VERSION_LINE);
		return CLI_EXIT_OK;
	}
	/* A table, top or the dashboard: the static jsched runs jsched-full instead (lazy.h). */
	if (cli_cmd_loads_libs(&parsed) && (rc = tool_handoff(argv, tool_verb_name(parsed.verb))) != CLI_EXIT_OK)
		return rc;
	struct jsched_conn *conn;
	char msg[512];
	/* submit's hello goes out with its request (one write, one round trip: the call
	 * that waits for a /bin/true spent one of its two round trips on the hello); a
	 * refused hello fails that request, with the words it had here.  The other verbs
	 * read what the hello said (top, watch) or are not the one call a user waits on. */
	if (parsed.verb == CLI_SUBMIT)
		rc = jsched_connect_deferred(parsed.socket, parsed.client_name, &conn, msg, sizeof msg);
	else
		rc = jsched_connect_error(parsed.socket, parsed.client_name, &conn, msg, sizeof msg);
	char path[4096];
	if (rc == JSCHED_ECONNECT &&
	    (parsed.socket != NULL ? snprintf(path, sizeof path, "%s", parsed.socket) : jsched_default_socket_path(path, sizeof path)) > 0 &&
	    explain_connect(&parsed, path))
		return tool_exit_of(rc);
	if (rc < 0) {
		fprintf(stderr, "jsched %s: %s\n", tool_verb_name(parsed.verb), msg[0] != '\0' ? msg : jsched_strerror(rc));
		return tool_exit_of(rc);
	}
	jsched_set_timeout(conn, parsed.reply_timeout_ms);
	rc = run(conn, &parsed);
	jsched_close(conn);
	if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
		perror("jsched: stdout");
		rc = CLI_EXIT_FAILED;
	}
	return rc;
}
