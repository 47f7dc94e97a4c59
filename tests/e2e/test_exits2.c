/* Exits and sanitizers (issue 23, items 8, 9 and 5). Each program is run untraced and traced; the
 * traced run must end as the untraced one (wait status, stdout; stderr as said per test), and its
 * trace must hold exactly the calls the program prints (progs.h, strict reader).
 *
 *  - destructors at exit: a dlopen'd C++ plugin (exitsplug.cpp) whose static object and ELF
 *    destructor record calls at exit, dlclose'd or not, constructed before main or in it, and
 *    calling exit() again from its destructor. The runtime finished in its own ELF destructor,
 *    which the dynamic loader runs before those of every library loaded after it.
 *  - exits past the runtime: an AddressSanitizer or UBSan error report (the sanitizer's own exit
 *    system call), and _exit, _Exit or exec from a library dlopen'd with RTLD_DEEPBIND (bound to
 *    libc's, not the runtime's). The flush period is one minute, so that nothing reaches the
 *    trace unless the runtime completes it on that path.
 *  - ThreadSanitizer and MemorySanitizer builds: the runtime steps aside with one line.
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* Long enough that the flush thread never writes on its own during a run. */
#define NO_PERIODIC_FLUSH "SLEDTRACE_FLUSH_MS=60000"

struct pair {
    char work[PATH_MAX], out[PATH_MAX];
    struct e2e_run b, t;
};

/* The same program run without and with the preload (trace directory <work>/out); env: extra
 * variables for both runs. */
static void run_pair_env(struct pair *p, const char *bin, const char *arg, const char *env1,
                         const char *env2)
{
    e2e_workdir(p->work, sizeof p->work);
    snprintf(p->out, sizeof p->out, "%s/out", p->work);
    struct e2e_spec base = {.prog = bin, .argv1 = arg, .pre_exec = e2e_no_core};
    struct e2e_spec traced = {
        .prog = bin, .argv1 = arg, .preload = 1, .outdir = p->out, .pre_exec = e2e_no_core};
    base.env[0] = traced.env[0] = NO_PERIODIC_FLUSH;
    base.env[1] = traced.env[1] = env1;
    base.env[2] = traced.env[2] = env1 ? env2 : NULL;
    e2e_run(p->work, &base, &p->b);
    e2e_run(p->work, &traced, &p->t);
    cr_assert_eq(p->t.status, p->b.status, "%s %s: wait status %#x under the preload, %#x without",
                 bin, arg ? arg : "", p->t.status, p->b.status);
    cr_assert_str_eq(p->t.out, p->b.out, "%s %s: stdout differs under the preload", bin,
                     arg ? arg : "");
}

static void pair_free(struct pair *p)
{
    e2e_run_free(&p->b);
    e2e_run_free(&p->t);
    e2e_rmtree(p->work);
}

/* The trace of `prog` run as `pid` holds exactly what `out` says; its sidecar's exit line is
 * `exit_line` (NULL: it has none). */
static void check_trace_of(const char *dir, const char *prog, pid_t pid, const char *out,
                           const char *exit_line, const char *what)
{
    char trace[PATH_MAX], syms[PATH_MAX];
    e2e_trace_path(trace, sizeof trace, dir, prog, pid, "fdr");
    e2e_trace_path(syms, sizeof syms, dir, prog, pid, "syms");
    cr_assert_eq(access(trace, R_OK), 0, "%s: no trace %s", what, trace);
    struct e2e_expect e;
    e2e_parse_expect(out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, what);
    char *s = e2e_slurp(syms, NULL);
    cr_assert_not_null(s, "%s: no sidecar %s", what, syms);
    if (exit_line)
        cr_assert(strstr(s, exit_line), "%s: the sidecar lacks \"%s\":\n%s", what, exit_line, s);
    else
        cr_assert_null(strstr(s, "\nexit\t"), "%s: the sidecar has an exit line:\n%s", what, s);
    free(s);
}

/* ---- destructors at exit (23.8) ------------------------------------------------------------ */

/* stderr is empty in both runs; exactly the trace's two files; the exit status in the sidecar. */
static void check_plugin(const char *bin, const char *how, int status)
{
    struct pair p;
    run_pair_env(&p, bin, how, NULL, NULL);
    cr_assert(WIFEXITED(p.b.status) && WEXITSTATUS(p.b.status) == status,
              "%s: untraced status %#x: %s%s", how, p.b.status, p.b.out, p.b.err);
    cr_assert_str_empty(p.b.err, "%s: untraced stderr:\n%s", how, p.b.err);
    cr_assert_str_empty(p.t.err, "%s: stderr:\n%s", how, p.t.err);
    char line[32];
    snprintf(line, sizeof line, "\nexit\tstatus\t%d\n", status);
    check_trace_of(p.out, bin, p.t.pid, p.t.out, line, how);
    cr_assert_eq(e2e_dir_entries(p.out), 2, "%s: %d files in the trace directory", how,
                 e2e_dir_entries(p.out));
    pair_free(&p);
}

/* The plugin stays loaded: its ELF destructor (500 calls) runs in the loader's _dl_fini, after
 * the runtime's; the C++ static (1000) on exit's list, before it. */
Test(exit_destructors, plugin_not_dlclosed)
{
    check_plugin(BIN("exitshost"), "dlopen", 0);
}

/* dlclose runs both destructors; the host's own ELF destructor runs at exit. */
Test(exit_destructors, plugin_dlclosed)
{
    check_plugin(BIN("exitshost"), "dlclose", 0);
}

/* The plugin was constructed before main (by a linked library's constructor): its C++ static
 * object too is destroyed from inside _dl_fini. */
Test(exit_destructors, plugin_loaded_before_main)
{
    check_plugin(BIN("exitshost-early"), "early", 0);
}

/* The plugin's ELF destructor calls exit(7): libc runs the rest of exit's list, the runtime's
 * final flush once, with status 7. */
Test(exit_destructors, exit_called_from_a_destructor)
{
    check_plugin(BIN("exitshost"), "exit", 7);
}

/* ---- RTLD_DEEPBIND (23.9) ------------------------------------------------------------------ */

static void check_deepbind(const char *how)
{
    struct pair p;
    run_pair_env(&p, BIN("deepbindprog"), how, NULL, NULL);
    cr_assert(WIFEXITED(p.b.status) && WEXITSTATUS(p.b.status) == 3,
              "%s: untraced status %#x: %s%s", how, p.b.status, p.b.out, p.b.err);
    cr_assert_str_empty(p.b.err, "%s: untraced stderr:\n%s", how, p.b.err);
    cr_assert_str_empty(p.t.err, "%s: stderr:\n%s", how, p.t.err);
    check_trace_of(p.out, BIN("deepbindprog"), p.t.pid, p.t.out,
                   strcmp(how, "exec") == 0 ? "\nexit\texec\n" : "\nexit\tstatus\t3\n", how);
    cr_assert_eq(e2e_dir_entries(p.out), 2, "%s: %d files in the trace directory", how,
                 e2e_dir_entries(p.out));
    pair_free(&p);
}

Test(deepbind, _exit)
{
    check_deepbind("_exit");
}

Test(deepbind, _Exit)
{
    check_deepbind("_Exit");
}

/* libdeepdep.so, loaded by the same dlopen, shares the deep scope. */
Test(deepbind, _exit_in_a_dependency)
{
    check_deepbind("dep");
}

Test(deepbind, exec)
{
    check_deepbind("exec");
}

/* RTLD_LAZY: the PLT slot is not bound yet when the runtime rewrites it. */
Test(deepbind, lazy_binding)
{
    check_deepbind("lazy");
}

/* ---- sanitizers (23.5, 23.9) --------------------------------------------------------------- */

#define SKIP_UNLESS(have, what)                                                                    \
    do {                                                                                           \
        if (!(have)) {                                                                             \
            fprintf(                                                                               \
                stderr,                                                                            \
                "SKIPPED: clang cannot build -fsanitize=" what " programs here (meson "            \
                "said why at configure time; scripts/setup.sh installs libclang-rt-14-dev)\n");    \
            cr_skip_test("clang cannot build -fsanitize=" what " here");                           \
        }                                                                                          \
    } while (0)

/* Occurrences of `needle` in `text`. */
static int occurrences(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ASan and UBSan: traced exactly; an error report that ends the process leaves the calls before
 * it in the trace. The report itself is on stderr in both runs, with no line of the runtime's
 * (ASan's shows addresses and neighbouring heap bytes, which differ from run to run). */
static void check_traced_sanitizer(const char *bin, const char *how, int status, const char *report)
{
    struct pair p;
    run_pair_env(&p, bin, how, "ASAN_OPTIONS=symbolize=0", "UBSAN_OPTIONS=symbolize=0");
    cr_assert(WIFEXITED(p.b.status) && WEXITSTATUS(p.b.status) == status,
              "%s %s: untraced status %#x:\n%s", bin, how, p.b.status, p.b.err);
    cr_assert_eq(occurrences(p.t.err, "sledtrace"), 0, "%s %s: stderr:\n%s", bin, how, p.t.err);
    if (report) {
        cr_assert(strstr(p.b.err, report), "%s: untraced stderr lacks \"%s\":\n%s", bin, report,
                  p.b.err);
        cr_assert(strstr(p.t.err, report), "%s: stderr lacks \"%s\":\n%s", bin, report, p.t.err);
        cr_assert_eq(e2e_nlines(p.t.err), e2e_nlines(p.b.err), "%s: stderr:\n%s\nuntraced:\n%s",
                     bin, p.t.err, p.b.err);
    } else {
        cr_assert_str_empty(p.t.err, "%s: stderr:\n%s", bin, p.t.err);
    }
    /* an error exit: the sanitizer's exitcode is not known to the runtime (no exit line) */
    check_trace_of(p.out, bin, p.t.pid, p.t.out, report ? NULL : "\nexit\tstatus\t0\n", bin);
    pair_free(&p);
}

Test(sanitizers, asan_traced)
{
    SKIP_UNLESS(E2E_SAN_ASAN, "address");
    check_traced_sanitizer(BIN("sanprog-asan"), "ok", 0, NULL);
}

Test(sanitizers, asan_error_exit_completes_the_trace)
{
    SKIP_UNLESS(E2E_SAN_ASAN, "address");
    check_traced_sanitizer(BIN("sanprog-asan"), "error", 1,
                           "ERROR: AddressSanitizer: heap-buffer-overflow");
}

Test(sanitizers, ubsan_traced)
{
    SKIP_UNLESS(E2E_SAN_UBSAN, "undefined");
    check_traced_sanitizer(BIN("sanprog-ubsan"), "ok", 0, NULL);
}

Test(sanitizers, ubsan_error_exit_completes_the_trace)
{
    SKIP_UNLESS(E2E_SAN_UBSAN, "undefined");
    check_traced_sanitizer(BIN("sanprog-ubsan"), "error", 1,
                           "runtime error: signed integer overflow");
}

/* The one line the runtime writes for a program it steps aside from. */
static void step_aside_line(char *buf, size_t len, const char *bin, const char *san)
{
    if (strcmp(san, "ThreadSanitizer") == 0)
        snprintf(buf, len,
                 "sledtrace: warning: %s: built with ThreadSanitizer, which cannot follow the "
                 "tracer's own threads (it would report races in the tracer and stop the program "
                 "at exit); not tracing, the program runs as untraced\n",
                 bin);
    else
        snprintf(buf, len,
                 "sledtrace: warning: %s: built with MemorySanitizer, which takes the tracer's "
                 "own writes for uninitialised memory (it would stop the program at start-up); "
                 "not tracing, the program runs as untraced\n",
                 bin);
}

/* TSan and MSan: stdout and status as untraced, stderr as untraced after exactly the runtime's
 * one line (the sanitizer's own report, if any, has the same number of lines and names its
 * error), no files. */
static void check_stepped_aside(const char *bin, const char *how, int status, const char *san,
                                const char *report)
{
    struct pair p;
    run_pair_env(&p, bin, how, NULL, NULL);
    cr_assert(WIFEXITED(p.b.status) && WEXITSTATUS(p.b.status) == status,
              "%s %s: untraced status %#x:\n%s", bin, how, p.b.status, p.b.err);
    char line[1024];
    step_aside_line(line, sizeof line, bin, san);
    size_t ll = strlen(line);
    cr_assert(strncmp(p.t.err, line, ll) == 0, "%s %s: stderr does not start with\n%s\nbut is\n%s",
              bin, how, line, p.t.err);
    cr_assert_eq(occurrences(p.t.err, "sledtrace"), 1, "%s %s: stderr:\n%s", bin, how, p.t.err);
    if (report) {
        cr_assert(strstr(p.b.err, report), "untraced stderr lacks \"%s\":\n%s", report, p.b.err);
        cr_assert(strstr(p.t.err + ll, report), "stderr lacks \"%s\":\n%s", report, p.t.err);
        cr_assert_eq(e2e_nlines(p.t.err + ll), e2e_nlines(p.b.err), "stderr:\n%s\nuntraced:\n%s",
                     p.t.err, p.b.err);
    } else {
        cr_assert_str_empty(p.b.err, "untraced stderr:\n%s", p.b.err);
        cr_assert_str_eq(p.t.err + ll, "", "stderr after the runtime's line:\n%s", p.t.err + ll);
    }
    cr_assert_leq(e2e_dir_entries(p.out), 0, "%s: %d files in the trace directory", bin,
                  e2e_dir_entries(p.out));
    pair_free(&p);
}

Test(sanitizers, tsan_steps_aside)
{
    SKIP_UNLESS(E2E_SAN_TSAN, "thread");
    check_stepped_aside(BIN("sanprog-tsan"), "ok", 0, "ThreadSanitizer", NULL);
}

Test(sanitizers, tsan_race_report_as_untraced)
{
    SKIP_UNLESS(E2E_SAN_TSAN, "thread");
    check_stepped_aside(BIN("sanprog-tsan"), "error", 66, "ThreadSanitizer",
                        "WARNING: ThreadSanitizer: data race");
}

/* Without sleds there is nothing to trace: not a word (quiet descendants). */
Test(sanitizers, tsan_without_sleds_is_quiet)
{
    SKIP_UNLESS(E2E_SAN_TSAN, "thread");
    struct pair p;
    run_pair_env(&p, BIN("sanprog-tsan-plain"), "ok", NULL, NULL);
    cr_assert(WIFEXITED(p.b.status) && WEXITSTATUS(p.b.status) == 0, "untraced status %#x",
              p.b.status);
    cr_assert_str_empty(p.t.err, "stderr:\n%s", p.t.err);
    cr_assert_leq(e2e_dir_entries(p.out), 0, "%d files", e2e_dir_entries(p.out));
    pair_free(&p);
}

Test(sanitizers, msan_steps_aside)
{
    SKIP_UNLESS(E2E_SAN_MSAN, "memory");
    check_stepped_aside(BIN("sanprog-msan"), "ok", 0, "MemorySanitizer", NULL);
}

Test(sanitizers, msan_report_as_untraced)
{
    SKIP_UNLESS(E2E_SAN_MSAN, "memory");
    check_stepped_aside(BIN("sanprog-msan"), "error", 1, "MemorySanitizer",
                        "WARNING: MemorySanitizer: use-of-uninitialized-value");
}
