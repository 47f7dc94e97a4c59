/* account --suggest-exclude (tools/suggest.c, tools/cmd_suggest.c) on a crafted trace where
 * every figure is known by hand, and the patterns it writes (tool_suggest_pattern).
 *
 * The clock runs at 1 GHz (a tick is a nanosecond) and the calibration's gaps are whole ticks:
 * E->E 5, E->X 4, X->E 6, X->X 5, E->T 4, T->E 6, so a call costs the tracer E->X + X->E = 10ns.
 * Each record comes exactly its gap after the one before, plus the callee's own work:
 *   leafy      5 calls, 1ns of own work each: 50ns to trace 5ns of work
 *   app::tiny  4 calls, 3ns each (object 1, libx.so; its symbol is mangled)
 *   odd*[x]?   3 calls, 2ns each (a symbol full of glob characters)
 *   #4         6 calls, 0ns each: no symbol in the sidecar, so no pattern can name it
 *   worker     2 calls, 1000ns each: worth tracing
 *   main       1 call, no own work (every interval in it is a gap): never suggested
 * and the tracer's own thread set-up before main, 2ns long (a pseudo-function: never suggested,
 * and not among the program's calls). The
 * program made 21 calls, so the tracer cost 210ns (account takes out the 204ns between the
 * thread's first and last records). */
#include "suggest.h"
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAIN = 1, LEAFY = 2, WORKER = 3, NONAME = 4, ODD = 5, TINY = (1 << 24) | 1 };

static void put_calib(struct tg *g, uint64_t tsc)
{
    struct stf_calib c = {.version = 1, .rounds = 9, .calls = 64, .step = 1};
    static const uint32_t gap[STF_GAPS] = {5, 4, 6, 5, 4, 6};
    for (int i = 0; i < STF_GAPS; i++)
        c.gap[i] = gap[i] * 256;
    uint8_t p[STF_CALIB_PAYLOAD];
    stf_encode_calib(p, &c);
    tg_typed(g, tsc, STF_TYPED_CALIB, p, sizeof p);
}

/* n calls of id, each `own` ns of work; *t is the time of the record before (whose kind is
 * *prev_exit: an exit, else an entry), and moves to the last exit. */
static void calls(struct tg *g, uint32_t id, int n, uint64_t own, uint64_t *t, int *prev_exit)
{
    for (int i = 0; i < n; i++) {
        *t += *prev_exit ? 6 : 5; /* X->E or E->E */
        tg_func(g, id, STF_ENTER, *t);
        *t += 4 + own; /* E->X */
        tg_func(g, id, STF_EXIT, *t);
        *prev_exit = 1;
    }
}

static char *write_trace(bool calib)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    if (calib) {
        tg_block_begin(&g, 100, 100, 0, 500);
        put_calib(&g, 500);
        tg_block_end(&g);
    }
    tg_block_begin(&g, 100, 100, 0, 890);
    tg_func(&g, STF_ID_TRACER_SETUP, STF_ENTER, 900);
    tg_func(&g, STF_ID_TRACER_SETUP, STF_EXIT, 902); /* 2ns: would qualify, if it could */
    uint64_t t = 1000;
    int prev_exit = 0;
    tg_func(&g, MAIN, STF_ENTER, t);
    calls(&g, LEAFY, 5, 1, &t, &prev_exit);
    calls(&g, WORKER, 2, 1000, &t, &prev_exit);
    calls(&g, ODD, 3, 2, &t, &prev_exit);
    calls(&g, TINY, 4, 3, &t, &prev_exit);
    calls(&g, NONAME, 6, 0, &t, &prev_exit);
    tg_func(&g, MAIN, STF_EXIT, t + 5); /* X->X */
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\no\t1\t0x0\t/usr/lib/libx.so\n"
                     "f\t0\t1\t0x1000\tmain\nf\t0\t2\t0x1100\tleafy\nf\t0\t3\t0x1200\tworker\n"
                     "f\t0\t5\t0x1400\todd*[x]?\nf\t1\t1\t0x2000\t_ZN3app4tinyEv\n");
    return p;
}

static struct tr_out run(const char *const *argv, int code)
{
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, code, "exit %d, want %d: %s", r.code, code, r.e);
    return r;
}

static const char *const footer =
    "# suggested: 3 of 6 functions; their 12 calls are 57.14% of the run's 21, about 120ns of its "
    "210ns of tracer time (10.0ns a call)\n"
    "# 1 more qualifies but no pattern can name it (no symbol, or one with a control "
    "character)\n";

/* The list, most calls first, and the file: one exact pattern a line under its figures. */
Test(suggest, list_and_file_exact)
{
    char *p = write_trace(true);
    char *f = tg_tmpname(".exclude");
    const char *argv[] = {tr_bin(), "account", p, "--suggest-exclude", "-o", f, NULL};
    struct tr_out r = run(argv, 0);
    char want[4096];
    snprintf(want, sizeof want,
             "# functions whose tracing costs more than their own work, most calls first\n"
             "       count   own/call  cost/call   share       saving  function\n"
             "           5      1.0ns     10.0ns  23.81%%         50ns  leafy\n"
             "           4      3.0ns     10.0ns  19.05%%         40ns  app::tiny\n"
             "           3      2.0ns     10.0ns  14.29%%         30ns  odd*[x]?\n"
             "%s"
             "# times: corrected: 204ns of tracer time taken out (8.8%% of the 2.327us "
             "measured), about 10.0ns per call (+-0.0ns); ~ marks a figure within that error or "
             "the clock's step; --raw-times shows them as measured\n"
             "# %s: 3 patterns; the next run: sledtrace run --exclude-file %s -- PROGRAM\n",
             footer, f, f);
    cr_assert_str_eq(r.o, want);
    cr_assert_str_empty(r.e);
    char *text = tr_slurp(f);
    snprintf(want, sizeof want,
             "# sledtrace exclude file: functions whose tracing costs more than their own work,\n"
             "# most calls first. Written by sledtrace account --suggest-exclude from\n"
             "# %s\n"
             "# Read by: sledtrace run --exclude-file FILE (SLEDTRACE_EXCLUDE_FILE=FILE), one\n"
             "# pattern a line, LIB:NAME (LIB: the object's file name).\n"
             "# Tracer cost per call 10.0ns; these 3 functions make 57.14%% of the calls,\n"
             "# about 120ns of tracer time.\n"
             "# leafy: 5 calls, own 1.0ns, tracer 10.0ns per call\n"
             "prog:leafy\n"
             "# app::tiny: 4 calls, own 3.0ns, tracer 10.0ns per call\n"
             "libx.so:_ZN3app4tinyEv\n"
             "# odd*[x]?: 3 calls, own 2.0ns, tracer 10.0ns per call\n"
             "prog:odd\\*\\[x]\\?\n",
             p);
    cr_assert_str_eq(text, want);
    free(text);
    tr_out_free(&r);
    remove(f);
    free(f);
    tr_remove_trace(p);
}

/* csv: the same rows, full names as asked (--names mangled), totals on stderr; =N keeps the
 * first N and says how many more qualify. */
Test(suggest, csv_and_limit)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(),  "account", p,   "--suggest-exclude=2", "--format", "csv",
                          "--names", "mangled", NULL};
    struct tr_out r = run(argv, 0);
    cr_assert_str_eq(r.o, "function,pattern,count,own_ns,cost_ns,share_pct,saving_ns\n"
                          "leafy,prog:leafy,5,1.0,10.0,23.81,50\n"
                          "_ZN3app4tinyEv,libx.so:_ZN3app4tinyEv,4,3.0,10.0,19.05,40\n");
    cr_assert(strstr(r.e, "# suggested: 2 of 6 functions; their 9 calls are 42.86% of the run's "
                          "21, about 90ns of its 210ns of tracer time (10.0ns a call)\n"
                          "# 1 more qualifies beyond the first 2 (--suggest-exclude=N)\n"),
              "%s", r.e);
    tr_out_free(&r);
    /* -o -: the file on stdout, nothing else there */
    const char *argv2[] = {tr_bin(), "account", p, "--suggest-exclude=1", "-o", "-", NULL};
    r = run(argv2, 0);
    cr_assert(strstr(r.o, "# leafy: 5 calls, own 1.0ns, tracer 10.0ns per call\nprog:leafy\n"),
              "%s", r.o);
    cr_assert_null(strstr(r.o, "app::tiny"), "%s", r.o);
    cr_assert_null(strstr(r.o, "own/call"), "%s", r.o);
    cr_assert(strstr(r.e, "# suggested: 1 of 6 functions"), "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A trace without a calibration cannot be weighed: one line, exit 1, and no file. */
Test(suggest, no_calibration)
{
    char *p = write_trace(false);
    char *f = tg_tmpname(".exclude");
    remove(f);
    const char *argv[] = {tr_bin(), "account", p, "--suggest-exclude", "-o", f, NULL};
    struct tr_out r = run(argv, 1);
    char want[1024];
    snprintf(want, sizeof want,
             "sledtrace: %s: the trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so no function's tracing can be weighed against its work; trace the "
             "program again with this sledtrace\n",
             p);
    cr_assert_str_eq(r.e, want);
    cr_assert_str_empty(r.o);
    cr_assert_null(fopen(f, "r"), "%s was written", f);
    tr_out_free(&r);
    free(f);
    tr_remove_trace(p);
}

/* Options that do not go with it are usage errors. */
Test(suggest, usage)
{
    char *p = write_trace(true);
    static const char *const bad[][2] = {{"--top", "3"},        {"--per-thread", NULL},
                                         {"--raw-times", NULL}, {"--sort", "self"},
                                         {"--format", "xml"},   {"--suggest-exclude=0", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[] = {tr_bin(),  "account", p,   "--suggest-exclude",
                              bad[i][0], bad[i][1], NULL};
        struct tr_out r = run(argv, 2);
        cr_assert_eq(strchr(r.e, '\n'), r.e + strlen(r.e) - 1, "%s: not one line: %s", bad[i][0],
                     r.e);
        tr_out_free(&r);
    }
    const char *argv[] = {tr_bin(), "account", "--suggest-exclude", "--help", NULL};
    struct tr_out r = run(argv, 0);
    cr_assert(strstr(r.o, "usage: sledtrace account TRACE --suggest-exclude[=N] [-o FILE]"), "%s",
              r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The pattern that names a function exactly, as the runtime reads it (preload/filter.c). */
Test(suggest, patterns)
{
    static const char *const cases[][3] = {
        {"prog", "main", "prog:main"},
        {"libx.so", "_ZN3app4tinyEv", "libx.so:_ZN3app4tinyEv"},
        {"prog", "a*b?c[d]e\\f", "prog:a\\*b\\?c\\[d]e\\\\f"},
        {"lib[1].so", "f", "lib\\[1].so:f"},
        {NULL, "f", "f"},
        {NULL, "#f", "\\#f"},     /* not a comment line */
        {NULL, "a:b", "*:a:b"},   /* the ':' would end a LIB part */
        {"odd:lib.so", "f", "f"}, /* a LIB part cannot hold ':' */
        {"odd:lib.so", "a:b", "*:a:b"},
        {NULL, "ns::f", "ns::f"}, /* "::" is not LIB's end */
        {"", "f", "f"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = tool_suggest_pattern(cases[i][0], cases[i][1]);
        cr_assert_not_null(got, "%s", cases[i][1]);
        cr_assert_str_eq(got, cases[i][2]);
        free(got);
    }
    static const char *const none[] = {"", " f", "f ", "\tf", "a\nb", "a\x7f"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_assert_null(tool_suggest_pattern("prog", none[i]), "'%s'", none[i]);
}

/* The ranking on rows: qualify when calls x cost > self; kept rows never; ties by own work per
 * call, then name. */
Test(suggest, ranking)
{
    const struct suggest_row rows[] = {
        {.name = "b", .pattern = "b", .calls = 10, .timed = 10, .self_ns = 20},
        {.name = "a", .pattern = "a", .calls = 10, .timed = 10, .self_ns = 20},
        {.name = "c", .pattern = "c", .calls = 10, .timed = 10, .self_ns = 10},
        {.name = "even", .pattern = "even", .calls = 10, .timed = 10, .self_ns = 50},
        {.name = "main", .pattern = "main", .calls = 100, .timed = 100, .keep = true},
        {.name = "big", .pattern = "big", .calls = 20, .timed = 20, .self_ns = 90},
    };
    struct suggest_result r;
    cr_assert_eq(tool_suggest(rows, 6, 5.0, 0, &r), 0);
    /* even: 10 x 5 = 50, not more than its 50ns of work */
    cr_assert_eq(r.n, 4);
    static const char *const order[] = {"big", "c", "a", "b"};
    for (size_t k = 0; k < 4; k++)
        cr_assert_str_eq(rows[r.pick[k].row].name, order[k]);
    cr_assert_eq(r.calls, 160);
    cr_assert_eq(r.picked_calls, 50);
    cr_assert_float_eq(r.total_ns, 800.0, 1e-9);
    cr_assert_float_eq(r.saving_ns, 250.0, 1e-9);
    cr_assert_float_eq(r.pick[0].share, 20.0 / 160.0, 1e-12);
    cr_assert_float_eq(r.pick[0].own_ns, 4.5, 1e-12);
    tool_suggest_free(&r);
}
