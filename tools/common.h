/* Shared helpers for the sledtrace subcommands: exit codes, error/warning printing, trace and
 * symbols opening, duration formatting, and a small u64-keyed hash map. */
#ifndef SLEDTRACE_TOOLS_COMMON_H
#define SLEDTRACE_TOOLS_COMMON_H

#include "stf.h"
#include "vclock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes shared by all subcommands (run passes the program's status through instead). */
enum {
    EXIT_OK = 0,
    EXIT_BAD_TRACE = 1, /* unreadable / malformed trace or sidecar, verify failure */
    EXIT_USAGE = 2,     /* bad command line */
};

__attribute__((format(printf, 1, 2))) void tool_err(const char *fmt, ...);
/* Percent of the input read, on stderr ("sledtrace: WHAT: 42%"), only when stderr is a terminal,
 * the input is at least 4 MiB, and the command does not stream its output to that terminal;
 * nothing at all when stderr is a pipe or file. tool_progress_set(p, bytes) as reading goes,
 * tool_progress_done() at the end. */
struct tool_progress {
    bool on;
    unsigned pct;
    uint64_t total;
    const char *what;
};
void tool_progress_init(struct tool_progress *p, uint64_t total, const char *what,
                        bool streams_stdout);
void tool_progress_set(struct tool_progress *p, uint64_t done);
void tool_progress_done(struct tool_progress *p);

/* JSON string body (no quotes) of n bytes: '"' and '\\' escaped, control bytes (< 0x20, 0x7f)
 * as \u00XX, well-formed UTF-8 sequences passed through except C1 controls and bidi controls
 * (as tool_printable), which are written as \uXXXX escapes of their code points, and any other
 * byte >= 0x80 as \u00XX (its Latin-1 reading), so the output is always valid JSON, safe on a
 * terminal, and UTF-8 names stay readable. */
void tool_json_escape(FILE *f, const uint8_t *s, size_t n);

/* Text from a trace's sidecar or binary made safe to print: every byte a terminal could act
 * on is written as \xNN (lower-case hex): C0 controls (ESC, BEL, CR, newline, tab, ...), DEL,
 * bytes that are not well-formed UTF-8, and the UTF-8 encodings of the C1 controls
 * U+0080-U+009F and of the bidi embeddings, overrides and isolates U+202A-U+202E and
 * U+2066-U+2069 (all of the sequence's bytes); a backslash becomes \\ so that the rendering is
 * unambiguous. Other well-formed UTF-8 stays as it is. Returns a malloc'd string, or NULL when
 * text needs no change or memory ran out. */
char *tool_printable(const char *text);
/* The same into buf, which holds at least 4 * strlen(text) + 1 bytes. */
void tool_printable_to(char *buf, const char *text);

/* "--help"/"-h" among argv[1..]? */
bool tool_wants_help(int argc, char **argv);

/* Open a trace; on failure prints "sledtrace: FILE: offset N: reason" and returns NULL. In
 * lenient mode warnings are printed to stderr (first 10, then a count at tool_warn_summary). */
struct stf_reader *tool_open_trace(const char *path, int flags);
/* The same for a file opened at path but named name in messages (a temporary copy). */
struct stf_reader *tool_open_trace_as(const char *path, const char *name, int flags);
/* The arguments every analysis command shares, once its own options are tried: --syms FILE
 * (and --force-syms, see tool_option), else the trace (one; "-" is standard input). 1 when
 * taken, -1 after printing the error (a value missing, an unknown option, a second trace),
 * prefixed by cmd. */
int tool_trace_arg(int argc, char **argv, int *i, const char *cmd, const char **path,
                   const char **syms);
/* No TRACE given (*path NULL): the newest sledtrace.*.fdr in $SLEDTRACE_OUTPUT, else the
 * current directory, said on stderr; false (after saying there is none) when there is none. */
bool tool_default_trace(const char **path, const char *cmd);
/* Option --tid N at argv[*i]: 1 (N in *tid, *i advanced), 0 (not this option) or -1 (value
 * missing or not a 32-bit integer; error printed, prefixed by cmd). */
int tool_tid_option(int argc, char **argv, int *i, const char *cmd, int32_t *tid);
/* Option "--name VALUE" or "--name=VALUE" at argv[*i]: 1 (value in *val, *i advanced), 0 (not
 * this option) or -1 (value missing; error printed, prefixed by cmd). For name "--syms" it also
 * takes the flag --force-syms (1, *val untouched), which every command taking --syms thus
 * takes: tool_load_syms then uses a binary whose build id is not the trace's, with a warning. */
int tool_option(int argc, char **argv, int *i, const char *cmd, const char *name, const char **val);

/* Index of v among names[0..n), or -1 after printing "CMD: unknown WHAT 'V' (a, b, c)". */
int tool_choice(const char *cmd, const char *what, const char *v, const char *const *names,
                size_t n);

/* Array growth for the tools' tables and stacks: returns p reallocated to twice *cap elements of
 * elem bytes (init when *cap is 0) and updates *cap, or NULL (p and *cap unchanged) on failure
 * or overflow. */
void *tool_grow(void *p, size_t *cap, size_t elem, size_t init);

/* A trace the tools can seek in: a regular file is used where it is; anything else (a pipe,
 * /dev/stdin, "-" for standard input) is first copied to an unlinked temporary file in $TMPDIR
 * (default /tmp), whose /proc/self/fd path goes to buf and whose descriptor to *fd (else -1;
 * the caller closes it). Returns the path to open, or NULL with the error printed. */
const char *tool_seekable(const char *path, char *buf, size_t len, int *fd);

/* How the analysis commands read a trace: through the cursor (stf.h), one thread after another,
 * main threads (tid == pid) first and then in first-seen order, each thread's items in its own
 * order; memory does not grow with the
 * trace. Opened leniently (warnings printed as tool_open_trace does) with its names (syms_opt,
 * else the sidecar beside it; syms may be NULL when there is none). */
struct tool_seek;
struct tool_seek_frame;
struct tool_trace {
    const char *path;
    struct stf_cursor *c;
    struct stf_syms *syms;
    uint64_t freq; /* the header's cycle frequency */
    size_t thread; /* thread of the last item */
    bool started;  /* a thread is selected */
    uint64_t n;    /* items handed out */
    struct tool_progress prog;
    int spool;      /* descriptor of the temporary copy of a piped trace, or -1 */
    bool one;       /* only thread tid (--tid): the others are skipped unread; a tid the trace does
                  not hold is an error (the first tool_trace_next fails, tool_trace_end says so) */
    uint64_t items; /* items in the trace, once tool_trace_extent counted them (progress), else 0 */
    int32_t tid;
    bool tid_checked;
    size_t *order; /* the cursor's threads, main threads (tid == pid) first */
    char src[64];  /* what was opened when not path itself (a piped trace's copy, /dev/stdin) */
    int32_t cur_pid, cur_tid; /* the thread being walked */
    size_t end;               /* walk the threads before order index end only (SIZE_MAX: all) */
    struct par *par;          /* a part of a parallel walk (trace.c), else NULL */
    bool par_main;            /* that part runs on the calling thread: it shows progress */
    uint64_t par_bytes;       /* its cursor's bytes already counted for progress */
    char err[256];            /* a parallel walk's error, for tool_trace_end ("" if none) */
    uint64_t err_off;
    struct pf *pf; /* decoding ahead on a thread of its own (tool_trace_prefetch), else NULL */
    /* Corrected times (vclock.h): the trace's calibration (has_calib), and the clock that takes
     * the tracer's cost out of every timestamp handed out, unless --raw-times (vc.on false). */
    struct stf_calib calib;
    bool has_calib;
    uint64_t calib_block; /* the calibration's block in file order, skipped (UINT64_MAX: none) */
    struct vclock vc;
    uint64_t removed; /* 1/256 tick: the correction of the threads walked to their end */
    /* A window (tool_trace_window), in the ticks handed out: each thread's walk starts at its
     * last checkpoint before win_from (seek.h; seek NULL: at its start) with the frames then
     * open handed out first as entries at the checkpoint's time (sf[0..nsf), sf_step: the
     * next item of sf[isf]: its entry, then its arguments), and ends after its first function
     * record past win_to (over). The index belongs to the trace, not to a parallel part. */
    bool win, over;
    uint64_t win_from, win_to;
    /* the thread's correction (vclock.acc) where its walk reached the window (win_in) and at
     * its last record inside it: what a window's walk adds to removed */
    bool win_in;
    uint64_t acc_from, acc_to;
    struct tool_seek *seek;
    const struct tool_seek_frame *sf;
    size_t nsf, isf;
    uint32_t sf_step;
    uint64_t sf_tsc;
};
/* True when the times handed out are corrected (the trace has a calibration, no --raw-times). */
static inline bool tool_trace_corrected(const struct tool_trace *t)
{
    return t->vc.on;
}
/* The footer line every command that shows times prints (to out, after pre: "# " or "// "):
 * whether the
 * times are corrected, how much tracer time was taken out (of wall, the corrected wall time the
 * command reports, in ticks; 0: unknown), or why they are as measured. */
void tool_times_note(FILE *out, const char *pre, const struct vtimes *v, uint64_t wall);
/* What the times of t's walk (so far) were. */
struct vtimes tool_trace_times(const struct tool_trace *t);
/* The tracer time taken out of the threads walked to their end, in ticks. */
static inline uint64_t tool_trace_removed(const struct tool_trace *t)
{
    return t->removed >> 8;
}
/* The file to open again for a second look at the trace (replay's lookahead). */
const char *tool_trace_source(const struct tool_trace *t);
/* what: progress label ("reading"); streams_stdout: the command writes its output while it
 * reads (no progress when stdout is the same terminal). EXIT_OK, or EXIT_BAD_TRACE with the error
 * printed and nothing left open. */
int tool_trace_open(struct tool_trace *t, const char *path, const char *syms_opt, const char *what,
                    bool streams_stdout);
/* The next item: STF_OK, STF_END, or a negative error (pass it to tool_trace_end). */
int tool_trace_next(struct tool_trace *t, struct stf_item *it);
/* The function records that follow, in bulk (stf_cursor_funcs), of the thread being walked
 * (t->cur_pid, t->cur_tid): up to max into out; 0 when the next item is anything else, or
 * before the first tool_trace_next of a thread: then ask tool_trace_next. */
size_t tool_trace_funcs(struct tool_trace *t, struct stf_func *out, size_t max);
/* The same, where *run gets the records: buf, or (prefetching) the decoded chunk itself,
 * valid until the next call. */
size_t tool_trace_run(struct tool_trace *t, struct stf_func *buf, size_t max,
                      const struct stf_func **run);
/* Walking the trace's threads in parallel (trace.c explains how). walk(arg, k, sub) walks unit k
 * with tool_trace_next / tool_trace_funcs on sub, until they return STF_END (return it) or an
 * error (return it); or returns a value > STF_END of its own (e.g. out of memory) to stop the
 * walk. Walks of different units run at the same time and must keep their results apart, by
 * k. Then, on the calling thread, for k = 0, 1, ... in order: the warnings of unit k are
 * printed, and if its walk ended with STF_END, merge(arg, k) is called (0, or a value > STF_END
 * to stop), else its value is returned. A unit is a thread of the trace (k in the order
 * tool_trace_next walks them); with --tid, one thread in the trace, one processor or
 * SLEDTRACE_JOBS=1, unit 0 is the whole trace walked on the calling thread with sub = t.
 * Returns STF_END, a negative error (pass it to tool_trace_end) or a walk's or merge's value.
 * Call it instead of tool_trace_next, before any. */
/* Decode ahead on a thread of its own while the caller walks (trace.c, "prefetch"), when the
 * machine has a second processor (SLEDTRACE_JOBS): tool_trace_next and tool_trace_funcs then
 * give the same items and runs, and the same warnings at the same points, except that a
 * function record taken with tool_trace_next instead of tool_trace_funcs carries only kind,
 * pid, tid, tsc, func_id and action. Call it before the walk's first tool_trace_next (after
 * tool_trace_base / tool_trace_extent); tool_trace_end and tool_trace_close end it. */
void tool_trace_prefetch(struct tool_trace *t);
typedef int (*tool_walk_fn)(void *arg, size_t k, struct tool_trace *sub);
typedef int (*tool_merge_fn)(void *arg, size_t k);
int tool_trace_parallel(struct tool_trace *t, tool_walk_fn walk, tool_merge_fn merge, void *arg);
/* After the last tool_trace_next: ends the progress line, prints the error for rc < 0 (file and
 * offset) and the warning summary. Returns EXIT_OK, or EXIT_BAD_TRACE when rc < 0. */
int tool_trace_end(struct tool_trace *t, int rc);
/* Time zero for displays: the earliest first timestamp (NewCPUId, TSCWrap or function record)
 * over all threads, 0 if none. Call before the first tool_trace_next. */
uint64_t tool_trace_base(struct tool_trace *t);
/* The largest timestamp (function record, CPU change, TSC wrap, event) over all threads, 0 if
 * none, and the number of items: reads the whole trace once (a reading error stops it; the walk
 * that follows meets the error again). Progress then counts items. Call before the first
 * tool_trace_next. */
uint64_t tool_trace_extent(struct tool_trace *t, uint64_t *items);
void tool_trace_close(struct tool_trace *t);
/* The lenient-mode warning callback of the tools (ctx: the path to name): prints the first 10
 * warnings, counts the rest (tool_warn_summary); tool_warn_more counts n more, unprinted. */
void tool_warn_cb(void *ctx, uint64_t off, const char *msg);
void tool_warn_more(uint64_t n);
/* One line for a reader or cursor error (message msg at offset off); returns EXIT_BAD_TRACE. */
int tool_report_error(const char *path, int rc, const char *msg, uint64_t off);
/* Print the reader's error for path. Always returns EXIT_BAD_TRACE. */
int tool_reader_fail(struct stf_reader *r, const char *path, int rc);
void tool_warn_summary(const char *path);

/* Symbols: explicit --syms FILE must load; the default sidecar may be missing (one warning).
 * Sets *ok = false (after printing the error) when the file is malformed/unreadable, or when
 * FILE is an instrumented binary whose GNU build id differs from the traced executable's as
 * the sidecar beside the trace records it (without --force-syms; nothing is compared when
 * there is no such sidecar or it records no build id). Names
 * are demangled, then names and object paths made printable (tool_printable), once here, so
 * that every output shows the same text and none reaches a terminal raw. */
struct stf_syms *tool_load_syms(const char *trace_path, const char *syms_opt, bool *ok);

/* Format a duration in nanoseconds: "512ns", "12.345us", "3.210ms", "1.500000s". */
void tool_fmt_ns(char *buf, size_t len, uint64_t ns);
/* A weight as stack, flamegraph and diff show it: a count as a plain number, else ns as
 * tool_fmt_ns does. */
void tool_fmt_weight(char *buf, size_t len, uint64_t v, bool count);
/* For output loops that avoid printf: ns as seconds with nine decimals ("12.000000345"),
 * right-aligned in width columns, and a signed decimal; both write at p, no terminator, and
 * return the end. */
char *tool_put_secs(char *p, uint64_t ns, int width);
char *tool_put_i64(char *p, int64_t v);
char *tool_put_u64(char *p, uint64_t v);
char *tool_put_str(char *p, const char *s); /* s without its terminator */
/* ticks -> nanoseconds at the given frequency (frequency 0: ticks are taken as ns). */
uint64_t tool_ticks_to_ns(uint64_t ticks, uint64_t freq);
double tool_ticks_to_s(uint64_t ticks, uint64_t freq);

/* A duration: a number (fraction allowed) with a unit ns, us, ms or s, or none for ns
 * ("10us", "2.5ms", "1500"); false if invalid or too large. */
bool tool_parse_duration(const char *s, uint64_t *ns);
/* Parse a non-negative decimal integer option value; false if invalid. */
bool tool_parse_u64(const char *s, uint64_t *out);

/* Open-addressing map from a u64 key to a dense index (insertion order). */
struct u64map {
    uint64_t *keys;
    uint32_t *vals; /* index + 1; 0 = empty */
    size_t cap, n;
};
/* Index for key, inserting index map->n if absent (*added = true). -1 on allocation failure. */
long u64map_get(struct u64map *m, uint64_t key, bool *added);
void u64map_free(struct u64map *m);

/* Per-function text made once: a converter's escaped or quoted name, kept by function id. */
struct tool_names {
    struct u64map map;
    char **s;
    size_t n, cap;
};
/* The text for id: make(id, ctx) writes it to f the first time (kept), after that it is
 * returned as is. NULL on allocation failure. */
const char *tool_names_get(struct tool_names *c, uint32_t id,
                           void (*make)(FILE *f, uint32_t id, void *ctx), void *ctx);
void tool_names_free(struct tool_names *c);

int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_account(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_live(int argc, char **argv); /* cmd_run.c */
int cmd_convert(int argc, char **argv);

#endif
