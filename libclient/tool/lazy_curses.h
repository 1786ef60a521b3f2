/* lazy_curses.h: ncurses for `jsched top`, loaded when top first draws (lazy.h says why).
 * Included after <curses.h>: the names top.c uses, and those the header's macros expand to
 * (stdscr, wmove ...), become the pointers tool_curses_initscr fills. */
#ifndef JSCHED_TOOL_LAZY_CURSES_H
#define JSCHED_TOOL_LAZY_CURSES_H

#include <curses.h>

#include "libclient/tool/lazy.h"

#if NCURSES_REENTRANT
#error "a reentrant ncurses reads stdscr, COLS and LINES through functions: lazy_curses.h wants variables"
#endif

#define TOOL_CURSES_SYMS(X)                                                                         \
	X(initscr) X(endwin) X(cbreak) X(noecho) X(curs_set) X(keypad) X(waddnstr) X(wattr_on)         \
	X(wattr_off) X(werase) X(wgetch) X(wmove) X(wrefresh) X(wtimeout) X(stdscr) X(COLS) X(LINES)
extern struct tool_curses {
	TOOL_CURSES_SYMS(TOOL_LAZY_SLOT)
} tool_curses;

/* tool_curses_initscr: initscr, ncurses loaded first (exits if it cannot be). */
WINDOW *tool_curses_initscr(void);

#define initscr tool_curses_initscr
#define endwin (*tool_curses.endwin_p)
#define cbreak (*tool_curses.cbreak_p)
#define noecho (*tool_curses.noecho_p)
#define curs_set (*tool_curses.curs_set_p)
#define keypad (*tool_curses.keypad_p)
#define waddnstr (*tool_curses.waddnstr_p)
#define wattr_on (*tool_curses.wattr_on_p)
#define wattr_off (*tool_curses.wattr_off_p)
#define werase (*tool_curses.werase_p)
#define wgetch (*tool_curses.wgetch_p)
#define wmove (*tool_curses.wmove_p)
#define wrefresh (*tool_curses.wrefresh_p)
#define wtimeout (*tool_curses.wtimeout_p)
#define stdscr (*tool_curses.stdscr_p)
#define COLS (*tool_curses.COLS_p)
#define LINES (*tool_curses.LINES_p)

#endif /* JSCHED_TOOL_LAZY_CURSES_H */
