/* Shared helpers for the sledtrace subcommands: exit codes, error/warning printing, trace and
 * symbols opening, duration formatting, and a small u64-keyed hash map. */
#ifndef SLEDTRACE_TOOLS_COMMON_H
#define SLEDTRACE_TOOLS_COMMON_H

#include "stf.h"

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
/* Percent of the input read, on stderr, only when stderr is a terminal and the input is at least
 * 4 MiB ("sledtrace: WHAT: 42%"); nothing at all when stderr is a pipe or file. Call
 * tool_progress() once per record and tool_progress_done() at the end. */
struct tool_progress {
    bool on;
    unsigned pct;
    uint64_t n;
    const char *what;
};
void tool_progress_init(struct tool_progress *p, const struct stf_reader *r, const char *what);
void tool_progress(struct tool_progress *p, const struct stf_reader *r);
void tool_progress_done(struct tool_progress *p);

/* JSON string body (no quotes) of n bytes: '"' and '\\' escaped, control bytes (< 0x20, 0x7f)
 * as \u00XX, well-formed UTF-8 sequences passed through, and any other byte >= 0x80 as \u00XX
 * (its Latin-1 reading), so the output is always valid JSON and UTF-8 names stay readable. */
void tool_json_escape(FILE *f, const uint8_t *s, size_t n);

/* "--help"/"-h" among argv[1..]? */
bool tool_wants_help(int argc, char **argv);

/* Open a trace; on failure prints "sledtrace: FILE: offset N: reason" and returns NULL. In
 * lenient mode warnings are printed to stderr (first 10, then a count at tool_warn_summary). */
struct stf_reader *tool_open_trace(const char *path, int flags);
/* Option "--name VALUE" or "--name=VALUE" at argv[*i]: 1 (value in *val, *i advanced), 0 (not
 * this option) or -1 (value missing; error printed, prefixed by cmd). */
int tool_option(int argc, char **argv, int *i, const char *cmd, const char *name, const char **val);

/* Array growth for the tools' tables and stacks: returns p reallocated to twice *cap elements of
 * elem bytes (init when *cap is 0) and updates *cap, or NULL (p and *cap unchanged) on failure
 * or overflow. */
void *tool_grow(void *p, size_t *cap, size_t elem, size_t init);

/* What the analysis commands start with: the trace opened leniently and its names (syms_opt,
 * else the sidecar beside it; *syms may be NULL when there is none). On failure the error is
 * printed, nothing stays open, and NULL is returned. */
struct stf_reader *tool_open_analysis(const char *path, const char *syms_opt,
                                      struct stf_syms **syms);
/* Print the reader's error for path. Always returns EXIT_BAD_TRACE. */
int tool_reader_fail(struct stf_reader *r, const char *path, int rc);
void tool_warn_summary(const char *path);

/* Symbols: explicit --syms FILE must load; the default sidecar may be missing (one warning).
 * Sets *ok = false (after printing the error) when the file is malformed/unreadable. */
struct stf_syms *tool_load_syms(const char *trace_path, const char *syms_opt, bool *ok);

/* Format a duration in nanoseconds: "512ns", "12.345us", "3.210ms", "1.500000s". */
void tool_fmt_ns(char *buf, size_t len, uint64_t ns);
/* ticks -> nanoseconds at the given frequency (frequency 0: ticks are taken as ns). */
uint64_t tool_ticks_to_ns(uint64_t ticks, uint64_t freq);
double tool_ticks_to_s(uint64_t ticks, uint64_t freq);

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

int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_account(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_convert(int argc, char **argv);

#endif
