/* Helpers of the end-to-end tests: running a program (optionally under the preload) with a
 * timeout, parsing what it says it did, and counting what the trace says it did. */
#ifndef E2E_H
#define E2E_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum { E2E_MAX_ENV = 12, E2E_MAX_FUNCS = 128, E2E_MAX_TIDS = 1024 };

struct e2e_spec {
    const char *prog;             /* path of the program */
    const char *argv1;            /* optional single argument */
    int preload;                  /* LD_PRELOAD the runtime, SLEDTRACE_OUTPUT = outdir */
    const char *outdir;           /* trace directory (default: <work>/out) */
    const char *env[E2E_MAX_ENV]; /* extra NAME=VALUE entries */
    void (*pre_exec)(void *ctx);  /* run in the child just before exec */
    void *ctx;
    int timeout_s; /* default 30 */
};

struct e2e_run {
    pid_t pid;
    int status; /* raw wait status */
    char *out, *err;
    size_t out_len, err_len;
};

/* A fresh temporary work directory (mkdtemp); <work>/out is not created. */
void e2e_workdir(char *buf, size_t len);
/* Removes a directory tree (best effort). */
void e2e_rmtree(const char *path);

/* Runs a program with stdout/stderr captured into files of `work`. Kills it (and fails the
 * test) when it exceeds its timeout. The environment is the test's own minus LD_PRELOAD,
 * SLEDTRACE_* and XRAY_*. */
void e2e_run(const char *work, const struct e2e_spec *spec, struct e2e_run *r);
void e2e_run_free(struct e2e_run *r);

/* Number of lines of `text` starting with `prefix`. */
int e2e_count_lines(const char *text, const char *prefix);

/* What a program says it did (see progs.h). */
struct e2e_expect {
    int nfuncs;
    struct {
        char name[64];
        long count, tail;
    } f[E2E_MAX_FUNCS];
    int threads;
    int nwork;
    long work[E2E_MAX_TIDS];
};
void e2e_parse_expect(const char *out, struct e2e_expect *e);

/* What the trace says. */
struct e2e_trace {
    int nfuncs;
    struct {
        char name[64];
        long enter, exit, tail;
    } f[E2E_MAX_FUNCS];
    int ntids;
    int32_t tid[E2E_MAX_TIDS];
    long tid_enters[E2E_MAX_TIDS];
    long records;        /* function records of the program's functions */
    long tracer_records; /* function records of pseudo-functions (the tracer's, waits: stf.h) */
    long open_waits;     /* waits entered and never left (the process died in one) */
    long blocks;
    char error[512]; /* first reader error or call-stack violation, "" if none */
    int unbalanced;  /* threads whose stack was not empty at the end */
    char path[PATH_MAX];
};
/* Reads `trace` in strict mode with its .syms sidecar. */
void e2e_read_trace(const char *trace, struct e2e_trace *t);

/* Asserts the trace matches the expectation exactly (counts per function, tail exits, threads,
 * per-thread work, balanced stacks, no reader error), and that `sledtrace account` on it gives
 * every function's exact call count with no repair, unmatched exit or unfinished frame. */
void e2e_check_trace(const struct e2e_trace *t, const struct e2e_expect *e, const char *what);
/* The two above in one: the counts the program printed (`printed`, its stdout) against the
 * trace at `trace`, read with e2e_read_trace (a large structure: allocated here). */
void e2e_check_printed(const char *trace, const char *printed, const char *what);

/* Path of the trace the runtime writes for `prog` run as `pid` in `dir`. */
void e2e_trace_path(char *buf, size_t len, const char *dir, const char *prog, pid_t pid,
                    const char *ext);
/* Number of directory entries (other than . and ..) in dir; -1 if it does not exist. */
int e2e_dir_entries(const char *dir);

/* Runs a shell command line, formatted, through a script in work (e2e_run passes a single
 * argument), with a 60 s timeout. */
void e2e_run_sh(const char *work, struct e2e_run *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Number of newline characters in s. */
int e2e_nlines(const char *s);
/* A pre_exec hook: no core files, so that runs compare the same on any machine. */
void e2e_no_core(void *ctx);

/* Reads a whole file (NUL-terminated); NULL if it cannot be opened. */
char *e2e_slurp(const char *path, size_t *len);

#endif
