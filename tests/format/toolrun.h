/* Test helper for the tests that run the built `sledtrace` tool: run a command capturing its
 * stdout, stderr and exit code, read a whole file, and remove a trace with its sidecar. Failures
 * are Criterion assertions, so these only run inside a test. */
#ifndef SLEDTRACE_TESTS_TOOLRUN_H
#define SLEDTRACE_TESTS_TOOLRUN_H

#include <stdbool.h>

struct tr_out {
    char *o, *e; /* stdout and stderr, NUL-terminated */
    int code;    /* exit status, or 200 + signal number */
    long maxrss; /* the command's peak resident set, KiB (wait4) */
};

/* Whole file as a NUL-terminated string (malloc'd). */
char *tr_slurp(const char *path);
/* Runs argv (argv[0] a path, NULL-terminated) and captures its output. */
struct tr_out tr_run(const char *const *argv);
void tr_out_free(struct tr_out *r);
/* The tool under test, from $SLEDTRACE_BIN. */
const char *tr_bin(void);
/* Writes g to a new temporary trace; with_syms adds a sidecar naming ids 1 "main", 2 "f" and 3
 * "" (an empty name), without it any stale sidecar is removed. Returns the path (malloc'd). */
struct tg;
char *tr_write_trace(const struct tg *g, bool with_syms);
/* Writes `text` as the sidecar of the trace at path `trace` (replacing any). */
void tr_write_syms(const char *trace, const char *text);
/* $LLVM_XRAY, or skips the test when it is not set. */
const char *tr_llvm_xray(void);
/* Unlinks the trace at p and its .syms sidecar, then frees p. */
void tr_remove_trace(char *p);

#endif
