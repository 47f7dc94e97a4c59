/* Crashes: the program dies exactly as it would without sledtrace (same wait status, core flag
 * included, same stdout and stderr) and its trace holds every call it made (crash.c says how each
 * case dies). Core files are disabled in both runs, so that the comparison does not depend on the
 * machine's core settings. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

static void check_crash(const char *bin, const char *how, int want_signal, int want_exit)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec base = {.prog = bin, .argv1 = how, .pre_exec = e2e_no_core};
    struct e2e_spec traced = {
        .prog = bin, .argv1 = how, .preload = 1, .outdir = out, .pre_exec = e2e_no_core};
    struct e2e_run b, t;
    e2e_run(work, &base, &b);
    e2e_run(work, &traced, &t);
    if (want_signal)
        cr_assert(WIFSIGNALED(b.status) && WTERMSIG(b.status) == want_signal,
                  "%s: untraced status %#x", how, b.status);
    else
        cr_assert(WIFEXITED(b.status) && WEXITSTATUS(b.status) == want_exit,
                  "%s: untraced status %#x", how, b.status);
    cr_assert_eq(t.status, b.status, "%s: wait status %#x under the preload, %#x without", how,
                 t.status, b.status);
    cr_assert_str_eq(t.out, b.out, "%s: stdout differs", how);
    cr_assert_str_eq(t.err, b.err, "%s: stderr differs", how);

    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, how);
    e2e_run_free(&b);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

#define CRASH(how, sig, code)                                                                      \
    Test(crash, how##_pie)                                                                         \
    {                                                                                              \
        check_crash(BIN("crash-pie-nort"), #how, sig, code);                                       \
    }                                                                                              \
    Test(crash, how##_nopie_xray_runtime)                                                          \
    {                                                                                              \
        check_crash(BIN("crash-nopie-rt"), #how, sig, code);                                       \
    }

CRASH(segv, SIGSEGV, 0)
CRASH(bus, SIGBUS, 0)
CRASH(fpe, SIGFPE, 0)
CRASH(ill, SIGILL, 0)
CRASH(abort, SIGABRT, 0)
CRASH(assert, SIGABRT, 0)
CRASH(raise, SIGSEGV, 0)
CRASH(handler, 0, 3)
/* A stack overflow in a thread without an alternate signal stack: the kernel could run no
 * handler there and killed the process before the trace was completed (nothing of it was in the
 * file). The runtime's own alternate stack lets the crash path run; the program still sees none
 * (crash.c prints what sigaltstack says). */
CRASH(overflow, SIGSEGV, 0)
CRASH(altstack, 0, 0)
CRASH(signal, 0, 3)

/* Signals whose default action ends the process, sent by someone else or by the kernel. */
#define DEATH(name, how, sig, code)                                                                \
    Test(crash, name##_pie)                                                                        \
    {                                                                                              \
        check_crash(BIN("crash-pie-nort"), how, sig, code);                                        \
    }                                                                                              \
    Test(crash, name##_nopie_xray_runtime)                                                         \
    {                                                                                              \
        check_crash(BIN("crash-nopie-rt"), how, sig, code);                                        \
    }

DEATH(sigterm, "term", SIGTERM, 0)
DEATH(sigint, "int", SIGINT, 0)
DEATH(sighup, "hup", SIGHUP, 0)
DEATH(sigalrm, "alrm", SIGALRM, 0)
DEATH(sigusr1, "usr1", SIGUSR1, 0)
DEATH(sigquit, "quit", SIGQUIT, 0)
DEATH(sigpipe, "pipe", SIGPIPE, 0)
DEATH(sigterm_threads, "term-threads", SIGTERM, 0)
DEATH(sigpipe_threads, "pipe-threads", SIGPIPE, 0)
DEATH(sigint_ignored, "int-ignored", 0, 3)
DEATH(sigpipe_ignored_across_spawn, "pipe-ignored-spawn", 0, 3)

/* The program's own SIGSEGV flags reach the kernel (sigflags.c): SA_NODEFER lets a fault nest in
 * its handler and a probe follow a siglongjmp that did not restore the mask; SA_ONSTACK (or its
 * absence) picks the stack; sa_mask is what the kernel blocks. Same output, status and counts. */
Test(crash, gc_probe_nodefer_onstack)
{
    check_crash(BIN("sigflags-pie-nort"), "onstack", 0, 0);
}

Test(crash, gc_probe_nodefer_normal_stack)
{
    check_crash(BIN("sigflags-nopie-rt"), "normal", 0, 0);
}
