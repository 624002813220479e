#ifndef STEPO_CNCURSESW_SHIM_H
#define STEPO_CNCURSESW_SHIM_H
/* SwiftPM drops ncursesw.pc's -D flags: the wide-char API needs these before the header. */
#define _XOPEN_SOURCE_EXTENDED 1
#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#include <locale.h>
#include <langinfo.h>
#include <string.h>
#include <wchar.h>
#include <stdio.h>
#include <ncursesw/curses.h>

/* Attribute macros are function-like or casts Swift cannot import. */
static inline attr_t stepo_a_normal(void) { return A_NORMAL; }
static inline attr_t stepo_a_bold(void) { return A_BOLD; }
static inline attr_t stepo_a_dim(void) { return A_DIM; }
static inline attr_t stepo_a_reverse(void) { return A_REVERSE; }
static inline attr_t stepo_a_underline(void) { return A_UNDERLINE; }
static inline attr_t stepo_a_italic(void) { return A_ITALIC; }
static inline int stepo_color_pair(int n) { return COLOR_PAIR(n); }
static inline WINDOW *stepo_stdscr(void) { return stdscr; }
static inline int stepo_lines(void) { return LINES; }
static inline int stepo_cols(void) { return COLS; }
static inline int stepo_colors(void) { return COLORS; }

/* Mouse masks are macros Swift cannot import. */
static inline mmask_t stepo_mouse_events(void) { return ALL_MOUSE_EVENTS; }
static inline int stepo_mouse_wheel_up(mmask_t b) { return (b & BUTTON4_PRESSED) != 0; }
static inline int stepo_mouse_wheel_down(mmask_t b) {
#ifdef BUTTON5_PRESSED
    return (b & BUTTON5_PRESSED) != 0;
#else
    return 0;
#endif
}
static inline int stepo_mouse_click(mmask_t b) { return (b & (BUTTON1_CLICKED | BUTTON1_PRESSED)) != 0; }
static inline int stepo_mouse_double_click(mmask_t b) { return (b & BUTTON1_DOUBLE_CLICKED) != 0; }

/* Whether the current locale's character set is UTF-8 (after setlocale). */
static inline int stepo_locale_is_utf8(void) {
    const char *codeset = nl_langinfo(CODESET);
    return codeset && (strcmp(codeset, "UTF-8") == 0 || strcmp(codeset, "utf8") == 0);
}

/* Terminal cells a code point takes under the current locale (-1: not printable). */
static inline int stepo_wcwidth(unsigned int c) { return wcwidth((wchar_t)c); }

/* How usable a terminal description is: -1 unknown to terminfo, 0 known but without cursor
   addressing (a "dumb" terminal: nothing can be drawn in place), 1 usable. */
#include <ncursesw/term.h>
static inline int stepo_term_usable(const char *name) {
    int error = 0;
    TERMINAL *saved = cur_term;
    if (setupterm((char *)name, 1, &error) != OK) { set_curterm(saved); return -1; }
    const char *cup = tigetstr("cup");
    int usable = (cup != NULL && cup != (char *)-1) ? 1 : 0;
    TERMINAL *probe = cur_term;
    set_curterm(saved);
    del_curterm(probe);
    return usable;
}

/* The C streams of the standard descriptors, for newterm. */
static inline FILE *stepo_stdout(void) { return stdout; }
static inline FILE *stepo_stdin(void) { return stdin; }
#endif
