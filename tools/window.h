/* Time windows and call filters of the analysis commands (window.c): --from, --to, --max-depth,
 * --min-duration, --filter, --exclude, parsed alike by every command that reads calls.
 *
 * The window is applied by the walker (callstack.h, "Windows"): calls are clipped to it and
 * marked. The filters are decided here, once for every command (window.c's top gives the
 * rules): a frame's filter state is computed from its parent's (tool_window_vis, kept in
 * cs_frame.vis), and each command asks at a call's entry (tool_window_enter) or close
 * (tool_window_close) whether it shows it. */
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
    bool filter_only; /* replay --filter-only: each call tested on its own name, no subtrees */
    uint64_t serial;  /* set when patterns are added (window.c's cache of name tests) */
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
/* Does glob match name: fnmatch's rules, or the name exactly as written? A name the tools print
 * with brackets in it (`[sledtrace] buffer switch`, `[wait] read`, `v::operator[]`) is found by
 * itself, as copied from account's output, where fnmatch reads "[...]" as a set of characters. */
bool tool_glob_match(const char *glob, const char *name);
/* Does function id pass --filter and --exclude (its own name only)? */
bool tool_window_name(const struct tool_window *w, const struct stf_syms *syms, uint32_t id);
/* Are call filters given (--max-depth, --min-duration, --filter or --exclude)? */
bool tool_window_filtered(const struct tool_window *w);

/* cs_frame.vis: computed (KNOWN); inside the subtree of a --filter match, or no --filter given
 * (INSIDE); in the subtree of an --exclude match (EXCLUDED). */
enum { TW_KNOWN = 1, TW_INSIDE = 2, TW_EXCLUDED = 4 };
struct cs_frame;
struct cs_thread;
struct cs_close;
/* The filter state of frame f, at depth on the stack st (f is st[depth] or the frame just
 * popped from there, cs_close.f): from its parent's, itself computed (and kept in st[k].vis)
 * when not yet known, down to the first known one. */
uint8_t tool_window_vis(const struct tool_window *w, const struct stf_syms *syms,
                        struct cs_frame *st, size_t depth, const struct cs_frame *f);
/* Can the call of frame f (t's st[depth], just entered) be shown: its names pass and depth <
 * --max-depth? (--min-duration is known at its close only.) Keeps f's state in f->vis. */
bool tool_window_enter(const struct tool_window *w, const struct stf_syms *syms,
                       const struct cs_thread *t, struct cs_frame *f, size_t depth);
/* What becomes of a closed call: shown; hidden with its time folded into its parent (deeper
 * than --max-depth, shorter than --min-duration: stack and flamegraph keep widths true);
 * hidden and dropped (outside every --filter subtree, or inside an --exclude one). */
enum tool_show { TW_SHOW, TW_FOLD, TW_DROP };
enum tool_show tool_window_close(const struct tool_window *w, const struct stf_syms *syms,
                                 const struct cs_close *c, uint64_t freq);
/* A summary line "# filters: OPTIONS: N of M calls shown" (prefix before "filters"), when
 * call filters are given. */
void tool_window_note(FILE *out, const char *prefix, const struct tool_window *w, uint64_t shown,
                      uint64_t calls);
/* The options' --help lines (two leading spaces, as the commands' own); with filters, the
 * call filters' too. */
void tool_window_usage(FILE *out, bool filters);

struct cs_tree;
struct callstack;
struct tool_trace;
/* A timed window (--from/--to) set on a walk (window_tree.c): its ticks (time 0 at base) on cs
 * (cs_set_window) and on tr, which then reads each thread from near the window (seek.h); *from
 * and *to (may be NULL) get them. false, nothing done, without --from/--to. */
bool tool_window_begin(const struct tool_window *w, struct tool_trace *tr, struct callstack *cs,
                       uint64_t base, uint64_t *from, uint64_t *to);
/* cs_tree_load (callstack.h) under cs->window's call filters (window_tree.c): the stacks of
 * the shown calls, a hidden call's self time folded into its parent as tool_window_close says,
 * the callers above a --filter match kept as the path without weight of their own. *shown:
 * the calls shown. Without filters, cs_tree_load itself. */
int tool_window_tree_load(const char *path, const char *syms_opt, const int32_t *tid,
                          struct cs_tree *tree, struct callstack *cs, struct stf_syms **syms,
                          uint64_t *freq, uint64_t *shown);

#endif
