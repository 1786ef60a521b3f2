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
#include <jansson.h>
#include "libclient/tool/lazy.h" /* libsmartcols, loaded with the first table */

#include "libclient/tool/args.h"

int cmd_submit(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_wait(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_status(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_cancel(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_ls(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_output(struct jsched_conn *conn, const struct cli_cmd *cmd);
/* cmd_result: print call job cmd->ids[0]'s result whole (jsched_value), a line. */
int cmd_result(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_watch(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_top(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_drain(struct jsched_conn *conn, const struct cli_cmd *cmd);
/* cmd_pause: pause or resume (cmd->verb) this connection's client (-C) or --all.
 * cmd_hold: hold or release (cmd->verb) the jobs cmd->ids; prints each one's outcome. */
int cmd_pause(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_hold(struct jsched_conn *conn, const struct cli_cmd *cmd);

/* cmd_retry: run the finished jobs cmd->ids again, each as a new attempt of its id; prints
 * each one's new attempt. */
int cmd_retry(struct jsched_conn *conn, const struct cli_cmd *cmd);
/* cmd_hooks: run the completion hooks of cmd->ids (or of every job of mine that ended with
 * them pending); hooks.c. */
int cmd_hooks(struct jsched_conn *conn, const struct cli_cmd *cmd);

/* tool_hooks_run: job r (final) has hooks: claim them and run them here, report how they
 * went.  Returns 0 if they succeeded (or another runner has them), 1 if they failed, or
 * a negative code from the daemon.  tty: a terminal for the bell, or -1.  (hooks.c) */
int tool_hooks_run(struct jsched_conn *conn, const struct jsched_result *r, int tty);

/* tool_hooks_background: run job id's hooks from a detached process once the job has
 * ended (reconnecting while the daemon restarts), so that submit can return at once.
 * Returns 0 once the process is started, -1 if it could not be.  (hooks.c) */
int tool_hooks_background(const struct cli_cmd *cmd, uint64_t id);
int cmd_admin(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_call(struct jsched_conn *conn, const struct cli_cmd *cmd);
int cmd_dashboard(struct jsched_conn *conn, const struct cli_cmd *cmd);

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

/* ---- printing (table.c) ---- */

/* tool_now_ms: the wall clock in ms since the epoch, as the records' instants. */
int64_t tool_now_ms(void);

/* tool_duration writes ms as a person reads it ("850 ms", "4.97 s", "12.5 min", "3.2 h",
 * "4.1 d") into buf and returns buf.  tool_us does the same for microseconds ("-" when
 * negative), tool_count for a count ("9876", "12.3k", "4.5M"). */
const char *tool_duration(char *buf, size_t len, int64_t ms);
const char *tool_us(char *buf, size_t len, double us);
const char *tool_count(char *buf, size_t len, double n);

/* tool_instant writes an instant (ms since the epoch) as local time: "HH:MM:SS" today,
 * "YYYY-MM-DD HH:MM" another day, "-" for 0.  Returns buf. */
const char *tool_instant(char *buf, size_t len, int64_t at_ms);

/* tool_term_width: $COLUMNS if set, else the terminal's width if stdout is one, else 0
 * (no limit). */
size_t tool_term_width(void);

/* tool_table_new: a libsmartcols table fitted to tool_term_width() (untruncated when 0),
 * or NULL.  tool_table_column adds a column (whint: its share of the width, or its
 * width in cells when >= 1; flags SCOLS_FL_*).  tool_table_print prints the table,
 * frees it, and returns an exit status. */
struct libscols_table *tool_table_new(void);
struct libscols_column *tool_table_column(struct libscols_table *tb, const char *name, double whint,
					  int flags);
int tool_table_print(struct libscols_table *tb);

/* tool_print_json prints doc (stolen; NULL: out of memory) as one line of compact JSON and
 * returns an exit status; `figures`: reals with 15 significant digits (metrics), else 17
 * (values as they came). */
int tool_print_json(json_t *doc, bool figures);

/* tool_record_json: a record as a jansson object (its own JSON text, parsed), or NULL. */
json_t *tool_record_json(const struct jsched_result *r);

/* tool_results_json: {"<key>": [records]} (with "not_shown": more when more >= 0), or NULL. */
json_t *tool_results_json(const char *key, struct jsched_result *const *items, size_t n, long more);

/* ---- the daemon's view (daemon.c), shared with top.c ---- */

/* tool_fetch_metrics: the metrics document, parsed (new), or NULL with the failure
 * printed and *rc set to the exit status. */
json_t *tool_fetch_metrics(struct jsched_conn *conn, const struct cli_cmd *cmd, int *rc);

/* tool_uptime writes the document's uptime ("3h 02m 10s") into buf; returns buf. */
const char *tool_uptime(char *buf, size_t len, const json_t *m);

/* The clients table of the metrics view: its titles (NULL-terminated), and
 * tool_fill_clients, which adds a row per client of the document arg to tb (false when
 * memory ran out). */
extern const char *const tool_client_titles[];
bool tool_fill_clients(struct libscols_table *tb, const void *arg);

#endif /* JSCHED_TOOL_TOOL_H */
