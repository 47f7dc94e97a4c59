/* Live patching (toggleprog.c): under load, 1100 switches of every sled (or of fib alone) all
 * succeed, the program survives, and the trace is well formed (strict reading: no torn record,
 * no stray bytes) with no more fib calls than were made; a call in flight across a switch may
 * lose its entry or its exit, as sledtrace.h documents. By signal, tracing is off exactly
 * between the two USR1s: the trace holds fib(10)'s and fib(12)'s calls, none of fib(11)'s. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

Test(toggle, stress_1100_switches_under_4_threads)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("toggleprog-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s%s", t.status,
              t.out, t.err);
    long made = -1;
    const char *p = strstr(t.out, "calls ");
    cr_assert(p && sscanf(p, "calls %ld", &made) == 1, "%s", t.out);
    cr_assert_not_null(strstr(t.out, "failures 0"), "%s", t.out);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    struct stf_item it;
    long enters = 0, exits = 0;
    int rc;
    while ((rc = stf_reader_next(r, &it)) == STF_OK)
        if (it.kind == STF_K_FUNCTION && !stf_tracer_name(it.func_id)) {
            cr_assert_eq(it.func_id, 1u, "record of function %u: only fib is instrumented",
                         it.func_id);
            enters += it.action == STF_ENTER;
            exits += it.action == STF_EXIT;
        }
    cr_assert_eq(rc, STF_END, "%s", stf_reader_error(r, NULL));
    stf_reader_close(r);
    cr_assert_gt(enters, 0);
    cr_assert_leq(enters, made, "%ld entries recorded, %ld calls made", enters, made);
    cr_assert_leq(exits, made);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(toggle, by_signal_exactly_between_the_two)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("toggleprog-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin,
                         .argv1 = "signal",
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_TOGGLE_SIGNAL=USR1"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "toggle signal");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
