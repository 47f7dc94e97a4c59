/* Tests of `sledtrace slowest` ($SLEDTRACE_BIN) on a crafted trace whose durations are known by
 * construction (1 GHz: a tick is a nanosecond), issue 25.2: the N slowest calls of a function in
 * order with their stacks and start times, replay's durations agreeing, and -o's Chrome JSON
 * holding exactly the calls that overlap the windows around them, clipped at the edges, nested
 * as viewers read them (chromecheck.h). */
#include "chromecheck.h"
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Thread 100 (base 100): main enters at 100 and calls f five times, 100, 500, 300, 500 and
 * 200 ns long (entries 1100, 2000, 3000, 4000, 5000), main exits at 6000. Thread 200: main at
 * 1500 calls g at 1600, which calls f at 1700 for 1000 ns; g exits at 2800, and f enters at
 * 2900 and never exits (unfinished). Names: 1 main, 2 f, 4 g. */
static char *slow_trace(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 100);
    tg_func(&g, 1, STF_ENTER, 100);
    static const uint64_t f[5][2] = {
        {1100, 1200}, {2000, 2500}, {3000, 3300}, {4000, 4500}, {5000, 5200}};
    for (int i = 0; i < 5; i++) {
        tg_func(&g, 2, STF_ENTER, f[i][0]);
        tg_func(&g, 2, STF_EXIT, f[i][1]);
    }
    tg_func(&g, 1, STF_EXIT, 6000);
    tg_block_end(&g);
    tg_block_begin(&g, 200, 100, 1, 1500);
    tg_func(&g, 1, STF_ENTER, 1500);
    tg_func(&g, 4, STF_ENTER, 1600);
    tg_func(&g, 2, STF_ENTER, 1700);
    tg_func(&g, 2, STF_EXIT, 2700);
    tg_func(&g, 4, STF_EXIT, 2800);
    tg_func(&g, 2, STF_ENTER, 2900);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                     "f\t0\t2\t0x1100\tf\nf\t0\t4\t0x1200\tg\n");
    tg_free(&g);
    return p;
}

static const char note[] =
    "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
    "sledtrace's), so each call's figures include the tracer's own\n";

/* The complete and instant events of a Chrome JSON file, one line each, sorted: "X pid tid
 * name start_ns end_ns clipped closed" (ns after the base: ts minus the export's 1 us, rounded
 * to the nanosecond) and "i pid tid name start_ns"; then the otherData object. */
static const char events_py[] =
    "import json, sys\n"
    "d = json.load(open(sys.argv[1]))\n"
    "out = []\n"
    "ns = lambda t: round(t * 1000) - 1000\n"
    "for e in d['traceEvents']:\n"
    "    if e['ph'] == 'X':\n"
    "        a = e['args']\n"
    "        out.append('X %d %d %s %d %d %s %s' % (e['pid'], e['tid'], e['name'], ns(e['ts']),\n"
    "                   ns(e['ts'] + e['dur']), a.get('clipped', '-'), a.get('closed', '-')))\n"
    "    elif e['ph'] == 'i':\n"
    "        out.append('i %d %d %s %d' % (e['pid'], e['tid'], e['name'], ns(e['ts'])))\n"
    "print('\\n'.join(sorted(out)))\n"
    "print(json.dumps(d['otherData'], sort_keys=True))\n";

static char *events_of(const char *json)
{
    char *py = tg_tmpname(".py"), *res = tg_tmpname(".txt");
    FILE *f = fopen(py, "w");
    cr_assert(f);
    fputs(events_py, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s %s > %s 2>&1", py, json, res);
    int st = system(cmd);
    char *txt = tr_slurp(res);
    cr_assert_eq(st, 0, "python3 failed:\n%s", txt);
    unlink(py);
    unlink(res);
    free(py);
    free(res);
    return txt;
}

Test(slowest, ranks_stacks_and_counts)
{
    char *p = slow_trace();
    const char *argv[] = {tr_bin(), "slowest", p, "f", "-n", "3", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.e, "");
    char want[2048];
    /* starts after the base (TSC 100): 1700 - 100, 2000 - 100, 4000 - 100; the two 500 ns calls
     * tie, the earlier first */
    snprintf(want, sizeof want,
             "rank     duration            start      tid  stack\n"
             "   1      1.000us      0.000001600      200  main > g > f\n"
             "   2        500ns      0.000001900      100  main > f\n"
             "   3        500ns      0.000003900      100  main > f\n"
             "# 3 slowest of 6 calls of f (and 1 unfinished, without a duration)\n%s",
             note);
    cr_assert_str_eq(r.o, want);
    tr_out_free(&r);

    /* replay shows the same durations for those calls */
    const char *rv[] = {tr_bin(), "replay", p, "--order", "exit", "--filter", "f", NULL};
    r = tr_run(rv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "200      0.000001600    1.000us      f\n"), "%s", r.o);
    cr_assert(strstr(r.o, "100      0.000001900      500ns    f\n"), "%s", r.o);
    cr_assert(strstr(r.o, "100      0.000003900      500ns    f\n"), "%s", r.o);
    tr_out_free(&r);

    /* every call when N is larger; a glob; --tid; a function never called */
    const char *all[] = {tr_bin(), "slowest", p, "[fg]", "--tid", "100", NULL};
    r = tr_run(all);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    snprintf(want, sizeof want,
             "rank     duration            start      tid  stack\n"
             "   1        500ns      0.000001900      100  main > f\n"
             "   2        500ns      0.000003900      100  main > f\n"
             "   3        300ns      0.000002900      100  main > f\n"
             "   4        200ns      0.000004900      100  main > f\n"
             "   5        100ns      0.000001000      100  main > f\n"
             "# 5 slowest of 5 calls of [fg]\n%s",
             note);
    cr_assert_str_eq(r.o, want);
    tr_out_free(&r);
    const char *none[] = {tr_bin(), "slowest", p, "nothere", NULL};
    r = tr_run(none);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    snprintf(want, sizeof want,
             "rank     duration            start      tid  stack\n"
             "# 0 slowest of 0 calls of nothere\n%s",
             note);
    cr_assert_str_eq(r.o, want);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A name with brackets, as account prints it, found as written (tools/window.c
 * tool_glob_match): the tracer's pseudo-calls ("[sledtrace] buffer switch", which fnmatch reads
 * as one character of "sledtrace" and then " buffer switch") and a C++ operator[]. main (1)
 * at 100 holds a buffer switch of 400 ns (200-600) and v::operator[] (8) of 300 ns
 * (700-1000); main exits at 2000. */
Test(slowest, names_with_brackets_as_written)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 100);
    tg_func(&g, 1, STF_ENTER, 100);
    tg_func(&g, STF_ID_TRACER_SWITCH, STF_ENTER, 200);
    tg_func(&g, STF_ID_TRACER_SWITCH, STF_EXIT, 600);
    tg_func(&g, 8, STF_ENTER, 700);
    tg_func(&g, 8, STF_EXIT, 1000);
    tg_func(&g, 1, STF_EXIT, 2000);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                     "f\t0\t8\t0x1100\tv::operator[]\n");
    tg_free(&g);
    char want[1024];
    const char *sw[] = {tr_bin(), "slowest", p, "[sledtrace] buffer switch", NULL};
    struct tr_out r = tr_run(sw);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    snprintf(want, sizeof want,
             "rank     duration            start      tid  stack\n"
             "   1        400ns      0.000000100      100  main > [sledtrace] buffer switch\n"
             "# 1 slowest of 1 calls of [sledtrace] buffer switch\n%s",
             note);
    cr_assert_str_eq(r.o, want);
    tr_out_free(&r);
    const char *op[] = {tr_bin(), "slowest", p, "v::operator[]", NULL};
    r = tr_run(op);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "   1        300ns      0.000000600      100  main > v::operator[]\n"),
              "%s", r.o);
    tr_out_free(&r);
    /* the same rule for --filter (replay, and every command that takes it) */
    const char *rp[] = {tr_bin(), "replay", p, "--filter", "[sledtrace] buffer switch", NULL};
    r = tr_run(rp);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "[sledtrace] buffer switch") && !strstr(r.o, "operator"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

Test(slowest, usage_errors)
{
    const char *nofunc[] = {tr_bin(), "slowest", "/nonexistent.fdr", "f", "x", NULL};
    struct tr_out r = tr_run(nofunc);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: slowest: one trace and one function, not 'x' too\n");
    tr_out_free(&r);
    const char *badn[] = {tr_bin(), "slowest", "/nonexistent.fdr", "f", "-n", "0", NULL};
    r = tr_run(badn);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: slowest: -n needs an integer from 1 to 1000000, not '0'\n");
    tr_out_free(&r);
}

/* -o: windows [start - 1 us, end + 1 us] (a tenth of these calls is under the 1 us minimum):
 * thread 200's [700, 3700] holds all four of its calls (main and the last f unfinished at its
 * last record, 2900); thread 100's [1900, 3400] and [3900, 5400] (after the base) merge into
 * [1900, 5400], which holds the five f calls and main cut at both edges. */
Test(slowest, timeline_holds_the_windows)
{
    char *p = slow_trace();
    char *o = tg_tmpname(".json");
    const char *argv[] = {tr_bin(), "slowest", p, "f", "-n", "3", "-o", o, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    char *ev = events_of(o);
    cr_assert_str_eq(ev,
                     "X 100 100 f 1000 1100 - -\n"
                     "X 100 100 f 1900 2400 - -\n"
                     "X 100 100 f 2900 3200 - -\n"
                     "X 100 100 f 3900 4400 - -\n"
                     "X 100 100 f 4900 5100 - -\n"
                     "X 100 100 main 900 5400 both -\n"
                     "X 100 200 f 1600 2600 - -\n"
                     "X 100 200 f 2800 2800 - unfinished\n"
                     "X 100 200 g 1500 2700 - -\n"
                     "X 100 200 main 1400 2801 - unfinished\n"
                     "i 100 100 slowest #2 1900\n"
                     "i 100 100 slowest #3 3900\n"
                     "i 100 200 slowest #1 1600\n"
                     "{\"calls\": 6, \"function\": \"f\", \"left_out\": 0, \"margin\": \"a tenth "
                     "of each call, at least 1 us\", \"slowest\": 3, \"times\": \"as measured\", "
                     "\"windows\": 2}\n");
    free(ev);
    struct cc_result got = {0}, want = {0};
    cc_check(o, &got);
    struct cc_thread *t = cc_thread_of(&want, 100, 100);
    t->calls = 6;
    t->depth[0] = 1;
    t->depth[1] = 5;
    t = cc_thread_of(&want, 100, 200);
    t->calls = 4;
    t->depth[0] = 1;
    t->depth[1] = 2;
    t->depth[2] = 1;
    cc_expect("slowest -o", &got, &want);
    unlink(o);
    free(o);

    /* one window, main cut at both edges: [1900 - 1000, 2400 + 1000] */
    o = tg_tmpname(".json");
    const char *one[] = {tr_bin(), "slowest", p, "f", "-n", "1", "--tid", "100", "-o", o, NULL};
    r = tr_run(one);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    tr_out_free(&r);
    ev = events_of(o);
    cr_assert_str_eq(ev,
                     "X 100 100 f 1000 1100 - -\n"
                     "X 100 100 f 1900 2400 - -\n"
                     "X 100 100 f 2900 3200 - -\n"
                     "X 100 100 main 900 3400 both -\n"
                     "i 100 100 slowest #1 1900\n"
                     "{\"calls\": 5, \"function\": \"f\", \"left_out\": 0, \"margin\": \"a tenth "
                     "of each call, at least 1 us\", \"slowest\": 1, \"times\": \"as measured\", "
                     "\"windows\": 1}\n");
    free(ev);
    unlink(o);
    free(o);
    tr_remove_trace(p);
}

/* --max-calls: the windows above hold 10 calls: 4500, 1401, 1200 and 1000 ns long, then 500,
 * 500, 300, 200, 100 and 0. At most 4: the counting walk, by powers of two of the JSON's time
 * step, finds the 4 longest in the buckets above the one that would make 7, so every call
 * shorter than that power of two (here 1 us) is left out (6), said in otherData and in one
 * line on stderr; what is kept still nests. */
Test(slowest, timeline_within_max_calls)
{
    char *p = slow_trace();
    char *o = tg_tmpname(".json");
    const char *argv[] = {tr_bin(), "slowest",     p,   "f", "-n", "3", "-o",
                          o,        "--max-calls", "4", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char line[512];
    snprintf(line, sizeof line,
             "sledtrace: slowest: 6 calls shorter than the shortest kept left out of %s "
             "(--max-calls 4; otherData says which)\n",
             o);
    cr_assert_str_eq(r.e, line);
    tr_out_free(&r);
    char *ev = events_of(o);
    cr_assert_str_eq(ev,
                     "X 100 100 main 900 5400 both -\n"
                     "X 100 200 f 1600 2600 - -\n"
                     "X 100 200 g 1500 2700 - -\n"
                     "X 100 200 main 1400 2801 - unfinished\n"
                     "i 100 100 slowest #2 1900\n"
                     "i 100 100 slowest #3 3900\n"
                     "i 100 200 slowest #1 1600\n"
                     "{\"calls\": 6, \"function\": \"f\", \"left_out\": 6, \"margin\": \"a tenth "
                     "of each call, at least 1 us\", \"shortest_kept\": 1, \"slowest\": 3, "
                     "\"times\": \"as measured\", \"windows\": 2}\n");
    free(ev);
    struct cc_result got = {0}, want = {0};
    cc_check(o, &got);
    struct cc_thread *t = cc_thread_of(&want, 100, 100);
    t->calls = 1;
    t->depth[0] = 1;
    t = cc_thread_of(&want, 100, 200);
    t->calls = 3;
    t->depth[0] = 1;
    t->depth[1] = 1;
    t->depth[2] = 1;
    cc_expect("slowest -o --max-calls 4", &got, &want);
    unlink(o);
    free(o);
    tr_remove_trace(p);
}
