/* SLEDTRACE_FILTER / SLEDTRACE_EXCLUDE: comma-separated [LIB:]GLOB patterns on function names.
 * A function that is kept has exactly the count the program prints; one left out does not appear
 * in the trace at all (its sleds were never patched). With nothing kept there is no trace. */
#include <criterion/criterion.h>

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* Runs mix with `env`; `kept` is a comma-separated list of globs naming what must be in the
 * trace (everything else must be absent), or NULL when no trace may be written. */
static void check_filter(const char *env, const char *kept)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    if (!kept) {
        cr_assert_leq(e2e_dir_entries(out), 0, "%s: nothing was kept, yet files were written", env);
        e2e_run_free(&t);
        e2e_rmtree(work);
        return;
    }
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    cr_assert_str_empty(tr.error, "%s", tr.error);
    int nkept = 0;
    for (int i = 0; i < e.nfuncs; i++) {
        char globs[256];
        snprintf(globs, sizeof globs, "%s", kept);
        int keep = 0;
        for (char *g = strtok(globs, ","); g; g = strtok(NULL, ","))
            keep |= fnmatch(g, e.f[i].name, 0) == 0;
        long got = 0;
        for (int j = 0; j < tr.nfuncs; j++)
            if (strcmp(tr.f[j].name, e.f[i].name) == 0)
                got = tr.f[j].enter;
        cr_assert_eq(got, keep ? e.f[i].count : 0, "%s: %s entered %ld times, want %ld", env,
                     e.f[i].name, got, keep ? e.f[i].count : 0L);
        nkept += keep;
    }
    cr_assert_eq(tr.nfuncs, nkept, "%s: %d functions in the trace, %d kept", env, tr.nfuncs, nkept);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(filter, only)
{
    check_filter("SLEDTRACE_FILTER=is_*", "is_even,is_odd");
}
Test(filter, exclude)
{
    check_filter("SLEDTRACE_EXCLUDE=is_*,leaf", "main,chain,tailer,twoexits");
}
Test(filter, qualified_by_program)
{
    check_filter("SLEDTRACE_FILTER=mix-pie-*:chain", "chain");
}
Test(filter, other_library_only)
{
    check_filter("SLEDTRACE_FILTER=libother.so:chain", NULL);
}

/* 14.1: functions a filter leaves out cost nothing at start-up either: they are not proven
 * (the info line counts the functions swept with Capstone: 1 of mix's 7 with is_even; all 7
 * without a filter). */
Test(filter, left_out_functions_are_not_proven)
{
    char work[PATH_MAX], out[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    for (int filtered = 0; filtered < 2; filtered++) {
        struct e2e_spec s = {
            .prog = bin,
            .preload = 1,
            .outdir = out,
            .env = {"SLEDTRACE_LOG=info", filtered ? "SLEDTRACE_FILTER=is_even" : NULL}};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
        char want[PATH_MAX + 64];
        snprintf(want, sizeof want,
                 "sledtrace: info: %s: 7 functions (%d proven, %d by the cache), 17 sleds, %d "
                 "patched\n",
                 bin, filtered ? 1 : 7, filtered ? 1 : 0, filtered ? 3 : 17);
        cr_assert_not_null(strstr(t.err, want), "no '%s' in:\n%s", want, t.err);
        e2e_run_free(&t);
        e2e_rmtree(out);
    }
    e2e_rmtree(work);
}

/* 12.5: a pattern that matches no function is said at the default level, once, whatever else
 * matches (a typo must not go unnoticed); the rest is traced as asked. */
Test(filter, pattern_matching_nothing_warns)
{
    char work[PATH_MAX], out[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin,
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_FILTER=is_*,is_evn", "SLEDTRACE_EXCLUDE=leaf,lef"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_eq(t.err,
                     "sledtrace: warning: SLEDTRACE_FILTER: 'is_evn' matches no function "
                     "(patterns are shell globs on function names, C++ names demangled or not; "
                     "LIB:GLOB limits one to an object)\n"
                     "sledtrace: warning: SLEDTRACE_EXCLUDE: 'lef' matches no function "
                     "(patterns are shell globs on function names, C++ names demangled or not; "
                     "LIB:GLOB limits one to an object)\n");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 12.5: C++ patterns on demangled names (cxxfilter.cpp): with or without the parameter list,
 * "::" never taken for the LIB: separator, mangled names still accepted. `want` is the exact
 * account CSV rows (function,count) of the program's functions, in any order. */
static void check_cxx(const char *filter, const char *const *want)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], env[256];
    const char *bin = BIN("cxxfilter");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(env, sizeof env, "SLEDTRACE_FILTER=%s", filter);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t, a;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "%s: stderr:\n%s", filter, t.err);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account --format csv --names full '%s'", trace);
    cr_assert_eq(a.status, 0, "%s", a.err);
    int rows = 0, nwant = 0;
    for (const char *p = strchr(a.out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        const char *line = p + 1;
        if (strncmp(line, "[sledtrace]", 11) == 0)
            continue;
        rows++;
        /* function,id,count,...: as "function=count" */
        char name[128], row[160];
        long id, count;
        const char *comma = strchr(line, ',');
        cr_assert(comma && comma - line < (long)sizeof name &&
                      sscanf(comma, ",%ld,%ld,", &id, &count) == 2,
                  "%s: bad row %.60s", filter, line);
        snprintf(name, sizeof name, "%.*s", (int)(comma - line), line);
        snprintf(row, sizeof row, "%s=%ld", name, count);
        int found = 0;
        for (int i = 0; want[i]; i++)
            found |= strcmp(row, want[i]) == 0;
        cr_assert(found, "%s: unexpected row %s", filter, row);
    }
    while (want[nwant])
        nwant++;
    cr_assert_eq(rows, nwant, "%s: %d functions traced, want %d:\n%s", filter, rows, nwant, a.out);
    e2e_run_free(&a);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(filter, cxx_demangled_patterns)
{
    check_cxx("app::risky*",
              (const char *const[]){"app::risky(long)=3", "app::risky(double)=2", NULL});
    check_cxx("app::safe", (const char *const[]){"app::safe(long)=5", NULL});
    check_cxx("app::*", (const char *const[]){"app::risky(long)=3", "app::risky(double)=2",
                                              "app::safe(long)=5",
                                              "app::Widget::risky_method(long)=4", NULL});
    check_cxx("cxxfilter:app::risky(double)", (const char *const[]){"app::risky(double)=2", NULL});
    check_cxx("_ZN3app4safeEl", (const char *const[]){"app::safe(long)=5", NULL});
}

/* envwipe.c writes over its environment block (as servers that set their process title do) and
 * chdirs to "/" before it forks a traced child and dlopens libslb.so: the filter, the relative
 * output directory and every other setting were copied (and the directory resolved) at
 * start-up. Both processes trace into <work>/out, with exact counts; `unlisted` stays out. */
Test(filter, survives_a_wiped_environment_and_chdir)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("envwipe-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    e2e_run_sh(work, &t,
               "env -C '%s' LD_PRELOAD='" E2E_PRELOAD "' SLEDTRACE_OUTPUT=out "
               "SLEDTRACE_FILTER='fib,libslb.so:b_*' '%s' '%s'",
               work, bin, BIN("libslb.so"));
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");

    int child = -1;
    const char *f = strstr(t.out, "forked ");
    cr_assert(f && sscanf(f, "forked %d", &child) == 1, "%s", t.out);
    char want[256];
    snprintf(want, sizeof want, "count fib %ld\nthreads 1\nthreadwork %ld\n", 177L, 177L);
    e2e_parse_expect(want, &e); /* fib(10): 2 F(11) - 1 = 177 calls */
    e2e_trace_path(trace, sizeof trace, out, bin, child, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "child");
    cr_assert_eq(e2e_dir_entries(out), 4, "the parent's and the child's trace and sidecar");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
