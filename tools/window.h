/* Time windows and call filters of the analysis commands (window.c): --from, --to, --max-depth,
 * --min-duration, --filter, --exclude, parsed alike by every command that reads calls.
 *
 * The window is applied by the walker (callstack.h, "Windows"): calls are clipped to it and
 * marked; the filters are per call, applied by each command where it shows a call
 * (tool_window_show). */
#ifndef SLEDTRACE_TOOLS_WINDOW_H
#define SLEDTRACE_TOOLS_WINDOW_H

#include "common.h"

struct tool_window {
    bool has_from, has_to;
    uint64_t from_ns, to_ns; /* since the earliest thread start, as replay shows times */
    uint64_t max_depth;      /* calls at depth < max_depth (top level: 0); 0: no limit */
    uint64_t min_ns;         /* calls lasting at least this (clipped duration) */
    const char *filter[16], *exclude[16]; /* comma-separated [LIB:]GLOB lists */
    size_t nfilter, nexclude;
};

/* One of the options above at argv[*i]: 1 (taken, *i advanced), 0 (not one of them) or -1 (bad
 * value; error printed, prefixed by cmd). Times take ns, us, ms or s ("1.5ms"; bare: ns). */
int tool_window_option(int argc, char **argv, int *i, const char *cmd, struct tool_window *w);
/* Only --from or --to at argv[*i] (the commands that take no call filters): as above. */
int tool_window_time_option(int argc, char **argv, int *i, const char *cmd, struct tool_window *w);
/* Does the window limit times (--from or --to)? */
bool tool_window_timed(const struct tool_window *w);
/* The window in the trace's ticks, for a trace whose times start at base (tool_trace_base) and
 * run at freq: *from is the first tick shown at or after from_ns, *to the last at or before
 * to_ns (0 and UINT64_MAX when not given). */
void tool_window_ticks(const struct tool_window *w, uint64_t base, uint64_t freq, uint64_t *from,
                       uint64_t *to);
/* Is a call of function id (name as shown: syms, --names) at depth, lasting dur_ns, shown under
 * --max-depth, --min-duration, --filter and --exclude? */
bool tool_window_show(const struct tool_window *w, const struct stf_syms *syms, uint32_t id,
                      size_t depth, uint64_t dur_ns);
/* Does function id pass --filter and --exclude (its name only)? */
bool tool_window_name(const struct tool_window *w, const struct stf_syms *syms, uint32_t id);
/* The options' --help lines (two leading spaces, as the commands' own). */
void tool_window_usage(FILE *out);

#endif
