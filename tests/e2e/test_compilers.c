/* Compilers and code shapes (clang 14 here): C++ at -O0, -O2 and -O3 (virtual calls, templates,
 * an exception thrown through an instrumented frame), and C with -fcf-protection=full, where an
 * endbr64 precedes the entry sled. Every named function's entries are exact; exits too, except
 * the 3 calls of checked() that throw. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

static const struct {
    const char *name;
    long enter, exit;
} shapes[] = {
    {"main", 1, 1},
    {"_Z7guardedl", 20, 20},
    {"_Z7checkedl", 20, 17}, /* throws for 0, 7, 14 */
    {"_Z5twiceIlET_S0_", 20, 20},
    {"_Z5twiceIdET_S0_", 20, 20},
    {"_ZNK2Sq4areaEl", 10, 10},
    {"_ZNK4Rect4areaEl", 10, 10},
};

static void check_shapes(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_eq(t.out, "2736\n");
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        long enter = 0, exit = 0;
        for (int j = 0; j < tr.nfuncs; j++)
            if (strcmp(tr.f[j].name, shapes[i].name) == 0) {
                enter = tr.f[j].enter;
                exit = tr.f[j].exit + tr.f[j].tail;
            }
        cr_assert_eq(enter, shapes[i].enter, "%s: %s entered %ld times", bin, shapes[i].name,
                     enter);
        cr_assert_eq(exit, shapes[i].exit, "%s: %s left %ld times", bin, shapes[i].name, exit);
    }
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(compilers, cxx_O0)
{
    check_shapes(BIN("shapes-O0"));
}
Test(compilers, cxx_O2)
{
    check_shapes(BIN("shapes-O2"));
}
Test(compilers, cxx_O3)
{
    check_shapes(BIN("shapes-O3"));
}

Test(compilers, cf_protection_full)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("fib-cet");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = "15", .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "-fcf-protection=full");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* A program built by another clang: exact counts, tail calls included, through the e2e checks. */
static void check_built_by(const char *bin, const char *arg)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = arg, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s: status %#x", bin, t.status);
    cr_assert_str_empty(t.err, "%s: stderr:\n%s", bin, t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, bin);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

#define BUILT_BY(cc, tag)                                                                          \
    Test(compilers, tag##_fib)                                                                     \
    {                                                                                              \
        check_built_by(BIN("fib-" cc), NULL);                                                      \
    }                                                                                              \
    Test(compilers, tag##_mix_tail_calls)                                                          \
    {                                                                                              \
        check_built_by(BIN("mix-" cc), NULL);                                                      \
    }                                                                                              \
    Test(compilers, tag##_threads)                                                                 \
    {                                                                                              \
        check_built_by(BIN("threads-" cc), "4");                                                   \
    }                                                                                              \
    Test(compilers, tag##_regs)                                                                    \
    {                                                                                              \
        check_built_by(BIN("regs-" cc), NULL);                                                     \
    }

BUILT_BY("clang-19", clang19)
BUILT_BY("clang-22", clang22)
