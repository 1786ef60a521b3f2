/* lazy.h: the libraries the jsched tool loads when a subcommand first needs them, instead of
 * at every start: libsmartcols (tables), ncurses (top: lazy_curses.h) and libmicrohttpd
 * (dashboard.c).
 *
 * Linked, the dynamic loader mapped and relocated all of them before main for every run,
 * `jsched submit` included: of the 870,000 instructions of `jsched --version` (callgrind;
 * /bin/true: 128,000), ncurses and its libtinfo took 490,000 and libsmartcols 226,000
 * (empty programs linked with each); libmicrohttpd had cost 4.5 million more.  Each
 * library's functions are pointers filled by tool_lazy_load on first use, and the names
 * the code calls (scols_new_table ...) are macros for them, so the code reads as if the
 * library were linked; the headers still give every type and constant.  The soname is the
 * ABI of the header the tool is built against.
 */
#ifndef JSCHED_TOOL_LAZY_H
#define JSCHED_TOOL_LAZY_H

#include <stddef.h>

#include <libsmartcols.h>

/* tool_lazy_load: dlopen the first of sonames (NULL-terminated) that loads and look up
 * each of the n names in syms into *addrs[i], all of them or none.  Returns 0, or -1 after
 * saying on stderr,
 * after `what` ("jsched dashboard"), why the library is missing.  The libraries of tables
 * and of top are as necessary as when they were linked (the loader then refused to start
 * the tool without them): their loaders exit instead, with CLI_EXIT_FAILED. */
int tool_lazy_load(const char *what, const char *const *sonames, const char *const *syms,
		   void **const *addrs, size_t n);

/* The static jsched and jsched-full.  `jsched` is linked statically (-static-pie) where
 * the C library's static archive is installed (libclient/build.mk): no loader, no shared
 * library mapped or relocated at start, which was most of the one call a user waits on.
 * A static program cannot load these libraries (a dlopen from it brings a second C
 * library, whose stdout is not the program's), so the commands that need one
 * (cli_cmd_loads_libs) run in jsched-full, the same program linked dynamically: the
 * static one execs it with the same arguments and environment before it connects.
 * lazy.c built with JSCHED_TOOL_STATIC=1 is the static one's: tool_handoff execs and
 * tool_lazy_load refuses; built without, tool_handoff does nothing. */

/* tool_handoff: in the static jsched, exec jsched-full with argv (the tool's own,
 * argv[0] kept): $JSCHED_FULL if set, else jsched-full beside this program (the build
 * tree), else ../libexec/jsched/jsched-full from its directory (`make install`).  Returns
 * only if none could be run, with CLI_EXIT_FAILED after saying why on stderr, naming
 * verb.  In jsched-full (and a build whose jsched is dynamic) returns CLI_EXIT_OK at
 * once: the command runs here. */
int tool_handoff(char **argv, const char *verb);

/* TOOL_LAZY_SLOT(f): the pointer for function (or variable) f in a struct of them, f_p;
 * TOOL_LAZY_NAME(f) and TOOL_LAZY_ADDR(lib, f): its name and its slot's address, for the
 * lists tool_lazy_load takes (each made from one X-list of the names). */

/* The libsmartcols functions the tool calls (table.c, jobs.c, daemon.c, top.c). */
#define TOOL_SCOLS_SYMS(X)                                                                          \
	X(scols_new_table) X(scols_print_table) X(scols_print_table_to_string) X(scols_table_new_column) \
	X(scols_table_new_line) X(scols_line_set_data) X(scols_table_set_termforce)                    \
	X(scols_table_set_termwidth) X(scols_table_enable_noheadings) X(scols_unref_table)
#define TOOL_LAZY_SLOT(f) __typeof__(f) *f##_p;
#define TOOL_LAZY_NAME(f) #f,
#define TOOL_LAZY_ADDR(f) (void **)&TOOL_LAZY_LIB.f##_p,
extern struct tool_scols {
	TOOL_SCOLS_SYMS(TOOL_LAZY_SLOT)
} tool_scols;

/* tool_scols_new_table: scols_new_table, libsmartcols loaded first if it is not yet
 * (exits if it cannot be); NULL when memory ran out.  tool_scols_unref_table:
 * scols_unref_table, nothing for NULL.  Every other libsmartcols call takes a table that
 * the first made, so the library is loaded by then. */
struct libscols_table *tool_scols_new_table(void);
void tool_scols_unref_table(struct libscols_table *tb);

#define scols_new_table tool_scols_new_table
#define scols_print_table (*tool_scols.scols_print_table_p)
#define scols_print_table_to_string (*tool_scols.scols_print_table_to_string_p)
#define scols_table_new_column (*tool_scols.scols_table_new_column_p)
#define scols_table_new_line (*tool_scols.scols_table_new_line_p)
#define scols_line_set_data (*tool_scols.scols_line_set_data_p)
#define scols_table_set_termforce (*tool_scols.scols_table_set_termforce_p)
#define scols_table_set_termwidth (*tool_scols.scols_table_set_termwidth_p)
#define scols_table_enable_noheadings (*tool_scols.scols_table_enable_noheadings_p)
#define scols_unref_table tool_scols_unref_table

#endif /* JSCHED_TOOL_LAZY_H */
