/* Shared by `sledtrace convert` (chrome, yaml, perfetto) and `sledtrace graph`: output files. The
 * call-stack walker they use is callstack.h's. */
#ifndef SLEDTRACE_TOOLS_CONVERT_H
#define SLEDTRACE_TOOLS_CONVERT_H

#include "common.h"
#include "output.h"

#include <stdio.h>

/* What a converter starts with: the trace opened (progress "converting", none while the output
 * goes to the terminal), read for one thread when tid is not NULL, and its output (output.h:
 * written whole or not at all) opened with a 64 KiB buffer. NULL, with the error printed and
 * nothing left open, on failure. */
FILE *conv_begin(struct tool_trace *tr, struct tool_out *o, const char *path, const char *out,
                 const char *syms_opt, const int32_t *tid);

struct tool_window;
/* Formats: convert_chrome.c, convert_yaml.c and convert_perfetto.c. chrome and perfetto take a
 * window and call filters (window.h; NULL or none given: every call; perfetto: no
 * --min-duration, as it writes a call's begin at its entry) and a thread (tid, NULL: all). */
int convert_chrome(const char *path, const char *out, const char *syms_opt,
                   const struct tool_window *win, const int32_t *tid);
int convert_perfetto(const char *path, const char *out, const char *syms_opt,
                     const struct tool_window *win, const int32_t *tid);
int convert_yaml(const char *path, const char *out, const char *syms_opt);
/* convert_speedscope.c: speedscope's own format; takes what perfetto takes. */
int convert_speedscope(const char *path, const char *out, const char *syms_opt,
                       const struct tool_window *win, const int32_t *tid);

/* Pieces of convert_chrome.c for another writer of the same JSON (sledtrace slowest -o), so that
 * both write times and names alike (convert_chrome.c's top explains the grid). */
struct chrome_grid {
    uint64_t base, freq; /* time 0 is 1 us before base (ticks at freq) */
    int step;            /* times are whole multiples of 2^-step us */
};
/* The grid the export picks for timestamps from base up to end, with up to moves times written
 * one step later than their own. */
void chrome_grid_init(struct chrome_grid *g, uint64_t base, uint64_t freq, uint64_t end,
                      uint64_t moves);
/* tsc in steps of the grid (at least 1: DevTools leaves out ts 0), and where metadata sit. */
uint64_t chrome_grid_steps(const struct chrome_grid *g, uint64_t tsc);
uint64_t chrome_grid_meta(const struct chrome_grid *g);
/* k steps as the exact decimal number of microseconds the export writes. */
void chrome_put_time(FILE *f, const struct chrome_grid *g, uint64_t k);
/* The body (escaped, no quotes) of a process_name (the executable's base name, else "pid N") and
 * of a thread_name ("NAME (T)" or "thread T", then " context C" for a coroutine's track). */
void chrome_process_label(FILE *f, const struct stf_syms *syms, int32_t pid);
void chrome_thread_label(FILE *f, const struct stf_syms *syms, int32_t pid, int32_t tid,
                         bool context, uint64_t ctx);

#endif
