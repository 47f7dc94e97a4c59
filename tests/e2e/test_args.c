/* LOG_ARGS_ENTER: each call of logged() is an enter-with-args record followed by a CallArgument
 * holding its first argument (100..104, in order); llvm-xray convert shows the same values. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

Test(log_args, first_argument_recorded)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], cmd[PATH_MAX * 2];
    const char *bin = BIN("argsprog-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "log args");

    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    struct stf_item it;
    uint64_t args[8];
    int nargs = 0, enters = 0, after_enter = 0;
    while (stf_reader_next(r, &it) == STF_OK) {
        if (it.kind == STF_K_FUNCTION) {
            after_enter = it.action == STF_ENTER_ARGS;
            enters += after_enter;
        } else if (it.kind == STF_M_CALL_ARG) {
            cr_assert(after_enter, "CallArgument not right after an enter-with-args record");
            cr_assert_lt(nargs, 8);
            args[nargs++] = it.value;
            after_enter = 0;
        }
    }
    stf_reader_close(r);
    cr_assert_eq(enters, 5);
    cr_assert_eq(nargs, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(args[i], (uint64_t)(100 + i), "argument %d is %" PRIu64, i, args[i]);

    snprintf(cmd, sizeof cmd,
             "%s convert --output-format=yaml '%s' | grep -o 'args: \\[ [0-9]* \\]' | tr -d '\\n'",
             E2E_LLVM_XRAY, trace);
    FILE *p = popen(cmd, "r");
    char got[256] = "";
    cr_assert(p && fgets(got, sizeof got, p), "no output from %s", cmd);
    pclose(p);
    cr_assert_str_eq(got, "args: [ 100 ]args: [ 101 ]args: [ 102 ]args: [ 103 ]args: [ 104 ]");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
