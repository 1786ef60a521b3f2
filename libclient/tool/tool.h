/* tool.h: what the jsched tool's files share: one function per subcommand, and the few
 * helpers they all print with.
 *
 * Every cmd_* function takes a connected conn and the parsed command line, prints what it
 * has to say, and returns the tool's exit status (enum cli_exit in args.h, or a job's own
 * status).  Errors are printed as "jsched COMMAND: what went wrong".
 */
#ifndef JSCHED_TOOL_TOOL_H
#define JSCHED_TOOL_TOOL_H

#include <jsched/jsched.h>

#include "libclient/tool/args.h"

int cmd_submit(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_wait(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_status(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_cancel(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_ls(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_output(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_watch(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_top(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_drain(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_admin(struct jsched_conn *conn, const struct cli_cmd *cmd);

/* tool_fail prints "jsched VERB: " and the daemon's (or the library's) account of the last
 * failure on conn, and returns the exit status that code maps to. */
int tool_fail(struct jsched_conn *conn, const struct cli_cmd *cmd, int code);

/* tool_exit_of maps a JSCHED_E* code to the tool's exit status. */
int tool_exit_of(int code);

/* tool_verb_name names the subcommand for messages ("admin set-client"). */
const char *tool_verb_name(enum cli_verb verb);

/* tool_print_record prints one record in a line, or as JSON with --json. */
void tool_print_record(const struct jsched_result *r, bool json);

/* tool_job_exit: the exit status a finished job gives `submit --wait` and `wait` on one
 * exec job: its exit code, 128+N for signal N, 0 for any other success, else 1. */
int tool_job_exit(const struct jsched_result *r);

#endif /* JSCHED_TOOL_TOOL_H */
