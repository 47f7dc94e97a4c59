/* Golden tests of the built `sledtrace` tool (path in $SLEDTRACE_BIN) on small crafted traces,
 * plus a cross-check against llvm-xray 14 ($LLVM_XRAY, skipped when not found): its verifier
 * and converter must accept a v5 trace we wrote, agree on absolute TSCs, and count the same
 * calls as `sledtrace account`. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* main(1) calls f(2) twice and #3 once; 1 tick = 1 ns. */
static void golden_trace(struct tg *g)
{
    tg_init(g, 5, 1000000000, 4096);
    tg_block_begin(g, 100, 100, 0, 900);
    tg_func(g, 1, STF_ENTER, 1000);
    tg_func(g, 2, STF_ENTER_ARGS, 1100);
    tg_call_arg(g, 7);
    tg_func(g, 2, STF_EXIT, 1400);
    tg_func(g, 2, STF_ENTER, 1500);
    tg_func(g, 2, STF_TAIL_EXIT, 2500);
    tg_func(g, 3, STF_ENTER, 2600);
    tg_block_end(g);
    tg_block_begin(g, 100, 100, 1, 2610);
    tg_func(g, 3, STF_EXIT, 2650);
    tg_func(g, 1, STF_EXIT, 4000);
    tg_block_end(g);
}

Test(tools, account_text_golden)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *argv[] = {tr_bin(), "account", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "     count        total   share         self         mean    self/call          min  "
             "     median          p90"
             "          p99          max         id  function\n"
             "         1      3.000us 100.00%      1.650us      3.000us      1.650us      3.000us  "
             "    3.000us      3.000us"
             "      3.000us      3.000us          1  main\n"
             "         2      1.300us  43.33%      1.300us        650ns        650ns        300ns  "
             "      300ns      1.000us"
             "      1.000us      1.000us          2  f\n"
             "         1         50ns   1.67%         50ns         50ns         50ns         50ns  "
             "       50ns         50ns"
             "         50ns         50ns          3  #3\n"
             "# functions: 3, calls: 4, stack repairs: 0, unmatched exits: 0, "
             "unfinished frames: 0\n"
             "# share: of 3.000us, the summed wall time of 1 thread (each from its first "
             "to its last record)\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, account_csv_sort_top)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "count", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "f,2,2,1300,43.33,1300,650,650,300,300,1000,1000,1000,0\n"
        "main,1,1,3000,100.00,1650,3000,1650,3000,3000,3000,3000,3000,0\n"
        "#3,3,1,50,1.67,50,50,50,50,50,50,50,50,0\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(),      "account", p,   "--format=csv",
                           "--sort=name", "--top",   "1", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n#3,3,1,50,1.67,50,50,50,50,50,50,50,50,0\n");
    tr_out_free(&r);
    const char *argv3[] = {tr_bin(), "account", p, "--sort", "bogus", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 2);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, account_repairs_and_unmatched)
{
    struct tg g;
    tg_init(&g, 5, 0, 4096); /* frequency unknown: ticks shown as ns */
    tg_block_begin(&g, 1, 1, 0, 0);
    tg_func(&g, 9, STF_EXIT, 5); /* unmatched */
    tg_func(&g, 1, STF_ENTER, 10);
    tg_func(&g, 2, STF_ENTER, 20); /* never exits: repaired by 1's exit */
    tg_func(&g, 1, STF_EXIT, 110);
    tg_func(&g, 4, STF_ENTER, 200); /* unfinished */
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "#1,1,1,100,51.28,10,100,10,100,100,100,100,100,0\n"
        "#2,2,1,90,46.15,90,90,90,90,90,90,90,90,0\n"
        "#4,4,1,0,0.00,0,0,0,0,0,0,0,0,1\n");
    cr_assert(strstr(r.e, "stack repairs: 1, unmatched exits: 1, unfinished frames: 1"), "%s", r.e);
    cr_assert(strstr(r.e, "warning: no symbols file"), "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* python3 must parse the file at path as JSON. */
static void json_parses(const char *path)
{
    char *res = tg_tmpname(".txt");
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' "
             "%s > %s 2>&1",
             path, res);
    int st = system(cmd);
    char *txt = tr_slurp(res);
    cr_assert_eq(st, 0, "JSON does not parse:\n%s", txt);
    free(txt);
    unlink(res);
    free(res);
}

/* Writes s to a new temporary file with the given suffix; returns its path (malloc'd). */
static char *write_tmp(const char *suffix, const char *s)
{
    char *p = tg_tmpname(suffix);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs(s, f);
    fclose(f);
    return p;
}

Test(tools, account_json_golden)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *argv[] = {tr_bin(), "account", p, "--format", "json", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char want[2048];
    snprintf(want, sizeof want,
             "{\"trace\": \"%s\",\n"
             "  \"functions\": [\n"
             "    {\"function\": \"main\", \"id\": 1, \"count\": 1, \"total_ns\": 3000, "
             "\"share_pct\": 100.00, "
             "\"self_ns\": 1650, \"mean_ns\": 3000, \"selfcall_ns\": 1650, \"min_ns\": 3000, "
             "\"median_ns\": 3000, \"p90_ns\": 3000, "
             "\"p99_ns\": 3000, \"max_ns\": 3000, \"unfinished\": 0},\n"
             "    {\"function\": \"f\", \"id\": 2, \"count\": 2, \"total_ns\": 1300, "
             "\"share_pct\": 43.33, "
             "\"self_ns\": 1300, \"mean_ns\": 650, \"selfcall_ns\": 650, \"min_ns\": 300, "
             "\"median_ns\": 300, \"p90_ns\": 1000, "
             "\"p99_ns\": 1000, \"max_ns\": 1000, \"unfinished\": 0},\n"
             "    {\"function\": \"#3\", \"id\": 3, \"count\": 1, \"total_ns\": 50, \"share_pct\": "
             "1.67, "
             "\"self_ns\": 50, \"mean_ns\": 50, \"selfcall_ns\": 50, \"min_ns\": 50, "
             "\"median_ns\": 50, \"p90_ns\": 50, "
             "\"p99_ns\": 50, \"max_ns\": 50, \"unfinished\": 0}\n"
             "  ],\n"
             "  \"summary\": {\"functions\": 3, \"calls\": 4, \"stack_repairs\": 0, "
             "\"unmatched_exits\": 0, \"unfinished_frames\": 0, \"gaps\": 0, \"gap_events\": 0, "
             "\"gap_frames\": 0, \"threads\": 1, \"wall_ns\": 3000}}\n",
             p);
    cr_assert_str_eq(r.o, want);
    /* the footer goes to stderr, as with csv */
    cr_assert_str_eq(r.e,
                     "# functions: 3, calls: 4, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# share: of 3.000us, the summed wall time of 1 thread (each from its "
                     "first to its last record)\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    char *j = write_tmp(".json", r.o);
    json_parses(j);
    unlink(j);
    free(j);
    tr_out_free(&r);

    /* names that need escaping (quote, backslash, a control byte; UTF-8 passed through),
     * --sort and --top. The name is the one every output shows (the control byte as \x01, the
     * backslash doubled), in JSON's quoting. */
    char *syms = write_tmp(".syms", "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\n"
                                    "f\t0\t1\t0x1000\tq\"b\\s\x01\xc3\xa9\n"
                                    "f\t0\t2\t0x1100\tf\n");
    const char *argv2[] = {tr_bin(), "account", p,       "--format=json",
                           "--sort", "count",   "--top", "2",
                           "--syms", syms,      NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    snprintf(want, sizeof want,
             "{\"trace\": \"%s\",\n"
             "  \"functions\": [\n"
             "    {\"function\": \"f\", \"id\": 2, \"count\": 2, \"total_ns\": 1300, "
             "\"share_pct\": 43.33, "
             "\"self_ns\": 1300, \"mean_ns\": 650, \"selfcall_ns\": 650, \"min_ns\": 300, "
             "\"median_ns\": 300, \"p90_ns\": 1000, "
             "\"p99_ns\": 1000, \"max_ns\": 1000, \"unfinished\": 0},\n"
             "    {\"function\": \"q\\\"b\\\\\\\\s\\\\x01\xc3\xa9\", \"id\": 1, \"count\": 1, "
             "\"total_ns\": 3000, \"share_pct\": 100.00, \"self_ns\": 1650, \"mean_ns\": 3000, "
             "\"selfcall_ns\": 1650, \"min_ns\": 3000, "
             "\"median_ns\": 3000, "
             "\"p90_ns\": 3000, \"p99_ns\": 3000, \"max_ns\": 3000, \"unfinished\": 0}\n"
             "  ],\n"
             "  \"summary\": {\"functions\": 3, \"calls\": 4, \"stack_repairs\": 0, "
             "\"unmatched_exits\": 0, \"unfinished_frames\": 0, \"gaps\": 0, \"gap_events\": 0, "
             "\"gap_frames\": 0, \"threads\": 1, \"wall_ns\": 3000}}\n",
             p);
    cr_assert_str_eq(r.o, want);
    j = write_tmp(".json", r.o);
    json_parses(j);
    /* the parsed name is the name as shown */
    char *res = tg_tmpname(".txt"), cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding=\"utf-8\")); "
             "n=d[\"functions\"][1][\"function\"]; assert n==\"q\\\"b\\\\\\\\s\\\\x01\\u00e9\", "
             "repr(n)' %s > %s 2>&1",
             j, res);
    int st = system(cmd);
    char *txt = tr_slurp(res);
    cr_assert_eq(st, 0, "%s", txt);
    free(txt);
    unlink(res);
    free(res);
    unlink(j);
    free(j);
    unlink(syms);
    free(syms);
    tr_out_free(&r);

    const char *argv3[] = {tr_bin(), "account", p, "--format", "xml", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.e, "(text, csv, json)"), "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* Thread 100/100 as in golden_trace; thread 100/200: f enters, 4 enters and never exits, f exits
 * (repairing 4), then main enters and stays open. 1 tick = 1 ns. */
static void two_thread_trace(struct tg *g)
{
    tg_init(g, 5, 1000000000, 4096);
    tg_block_begin(g, 100, 100, 0, 900);
    tg_func(g, 1, STF_ENTER, 1000);
    tg_func(g, 2, STF_ENTER_ARGS, 1100);
    tg_call_arg(g, 7);
    tg_func(g, 2, STF_EXIT, 1400);
    tg_func(g, 2, STF_ENTER, 1500);
    tg_func(g, 2, STF_TAIL_EXIT, 2500);
    tg_func(g, 3, STF_ENTER, 2600);
    tg_block_end(g);
    tg_block_begin(g, 200, 100, 3, 1200);
    tg_func(g, 2, STF_ENTER, 1300);
    tg_func(g, 4, STF_ENTER, 1320);
    tg_func(g, 2, STF_EXIT, 1900);
    tg_func(g, 1, STF_ENTER, 2000);
    tg_block_end(g);
    tg_block_begin(g, 100, 100, 1, 2610);
    tg_func(g, 3, STF_EXIT, 2650);
    tg_func(g, 1, STF_EXIT, 4000);
    tg_block_end(g);
}

Test(tools, account_per_thread)
{
    struct tg g;
    two_thread_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *hdr = "     count        total   share         self         mean    self/call      "
                      "    min       median          p90"
                      "          p99          max         id  function\n";
    const char *argv[] = {tr_bin(), "account", p, "--per-thread", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char want[4096];
    snprintf(want, sizeof want,
             "thread 100/100 (wall time 3.000us)\n%s"
             "         1      3.000us 100.00%%      1.650us      3.000us      1.650us      3.000us "
             "     3.000us      3.000us"
             "      3.000us      3.000us          1  main\n"
             "         2      1.300us  43.33%%      1.300us        650ns        650ns        300ns "
             "       300ns      1.000us"
             "      1.000us      1.000us          2  f\n"
             "         1         50ns   1.67%%         50ns         50ns         50ns         50ns "
             "        50ns         50ns"
             "         50ns         50ns          3  #3\n"
             "\n"
             "thread 100/200 (wall time 700ns)\n%s"
             "         1        600ns  85.71%%         20ns        600ns         20ns        600ns "
             "       600ns        600ns"
             "        600ns        600ns          2  f\n"
             "         1        580ns  82.86%%        580ns        580ns        580ns        580ns "
             "       580ns        580ns"
             "        580ns        580ns          4  #4\n"
             "         1            -       -            -            -            -            -  "
             "          -            -"
             "            -            -          1  main  (1 unfinished)\n"
             "\n"
             "# threads: 2, functions: 4, calls: 6, stack repairs: 1, unmatched exits: 0, "
             "unfinished frames: 1\n"
             "# share: of each thread's wall time (from its first to its last record)\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n",
             hdr, hdr);
    cr_assert_str_eq(r.o, want);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);

    /* without --per-thread the two threads are merged (f's median of 300, 600 and 1000 ns is
     * 600 ns, the 2nd shortest) */
    const char *argv1[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    r = tr_run(argv1);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "main,1,2,3000,81.08,1650,3000,1650,3000,3000,3000,3000,3000,1\n"
        "f,2,3,1900,51.35,1320,633,440,300,600,1000,1000,1000,0\n"
        "#3,3,1,50,1.35,50,50,50,50,50,50,50,50,0\n"
        "#4,4,1,580,15.68,580,580,580,580,580,580,580,580,0\n");
    tr_out_free(&r);

    /* csv: leading pid,tid; --top applies per thread */
    const char *argv2[] = {tr_bin(),   "account", p,        "--per-thread",
                           "--format", "csv",     "--sort", "count",
                           "--top",    "2",       NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "pid,tid,function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,"
        "p90_ns,p99_ns,max_ns,unfinished\n"
        "100,100,f,2,2,1300,43.33,1300,650,650,300,300,1000,1000,1000,0\n"
        "100,100,main,1,1,3000,100.00,1650,3000,1650,3000,3000,3000,3000,3000,0\n"
        "100,200,main,1,1,0,0.00,0,0,0,0,0,0,0,0,1\n"
        "100,200,f,2,1,600,85.71,20,600,20,600,600,600,600,600,0\n");
    cr_assert_str_eq(r.e,
                     "# threads: 2, functions: 4, calls: 6, stack repairs: 1, "
                     "unmatched exits: 0, unfinished frames: 1\n"
                     "# share: of each thread's wall time (from its first to its last "
                     "record)\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);

    /* json: a threads array instead of functions */
    const char *argv3[] = {tr_bin(), "account",      p,   "--format", "json", "--sort",
                           "id",     "--per-thread", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    snprintf(want, sizeof want,
             "{\"trace\": \"%s\",\n"
             "  \"threads\": [\n"
             "    {\"pid\": 100, \"tid\": 100, \"wall_ns\": 3000, \"functions\": [\n"
             "      {\"function\": \"main\", \"id\": 1, \"count\": 1, \"total_ns\": 3000, "
             "\"share_pct\": 100.00, "
             "\"self_ns\": 1650, \"mean_ns\": 3000, \"selfcall_ns\": 1650, \"min_ns\": 3000, "
             "\"median_ns\": 3000, \"p90_ns\": 3000, "
             "\"p99_ns\": 3000, \"max_ns\": 3000, \"unfinished\": 0},\n"
             "      {\"function\": \"f\", \"id\": 2, \"count\": 2, \"total_ns\": 1300, "
             "\"share_pct\": 43.33, "
             "\"self_ns\": 1300, \"mean_ns\": 650, \"selfcall_ns\": 650, \"min_ns\": 300, "
             "\"median_ns\": 300, \"p90_ns\": 1000, "
             "\"p99_ns\": 1000, \"max_ns\": 1000, \"unfinished\": 0},\n"
             "      {\"function\": \"#3\", \"id\": 3, \"count\": 1, \"total_ns\": 50, "
             "\"share_pct\": 1.67, "
             "\"self_ns\": 50, \"mean_ns\": 50, \"selfcall_ns\": 50, \"min_ns\": 50, "
             "\"median_ns\": 50, \"p90_ns\": 50, "
             "\"p99_ns\": 50, \"max_ns\": 50, \"unfinished\": 0}\n"
             "    ]},\n"
             "    {\"pid\": 100, \"tid\": 200, \"wall_ns\": 700, \"functions\": [\n"
             "      {\"function\": \"main\", \"id\": 1, \"count\": 1, \"total_ns\": 0, "
             "\"share_pct\": 0.00, "
             "\"self_ns\": 0, \"mean_ns\": 0, \"selfcall_ns\": 0, \"min_ns\": 0, \"median_ns\": 0, "
             "\"p90_ns\": 0, "
             "\"p99_ns\": 0, \"max_ns\": 0, \"unfinished\": 1},\n"
             "      {\"function\": \"f\", \"id\": 2, \"count\": 1, \"total_ns\": 600, "
             "\"share_pct\": 85.71, "
             "\"self_ns\": 20, \"mean_ns\": 600, \"selfcall_ns\": 20, \"min_ns\": 600, "
             "\"median_ns\": 600, \"p90_ns\": 600, "
             "\"p99_ns\": 600, \"max_ns\": 600, \"unfinished\": 0},\n"
             "      {\"function\": \"#4\", \"id\": 4, \"count\": 1, \"total_ns\": 580, "
             "\"share_pct\": 82.86, "
             "\"self_ns\": 580, \"mean_ns\": 580, \"selfcall_ns\": 580, \"min_ns\": 580, "
             "\"median_ns\": 580, \"p90_ns\": 580, "
             "\"p99_ns\": 580, \"max_ns\": 580, \"unfinished\": 0}\n"
             "    ]}\n"
             "  ],\n"
             "  \"summary\": {\"functions\": 4, \"calls\": 6, \"stack_repairs\": 1, "
             "\"unmatched_exits\": 0, \"unfinished_frames\": 1, \"gaps\": 0, \"gap_events\": 0, "
             "\"gap_frames\": 0, \"threads\": 2, \"wall_ns\": 3700}}\n",
             p);
    cr_assert_str_eq(r.o, want);
    char *j = write_tmp(".json", r.o);
    json_parses(j);
    unlink(j);
    free(j);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, dump_verify_ok_and_lines)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *argv[] = {tr_bin(), "dump", p, "--verify", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "OK: 19 records, 2 blocks\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "dump", p, NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "32 BufferExtents tid=0 pid=0 cpu=0 tsc=0 bytes=") == r.o, "%s", r.o);
    cr_assert(strstr(r.o, "\n112 Function tid=100 pid=100 cpu=0 tsc=1000 id=1 action=enter "
                          "name=main\n"),
              "%s", r.o);
    cr_assert(strstr(r.o, " tsc=2500 id=2 action=tail-exit name=f\n"), "%s", r.o);
    cr_assert(strstr(r.o, "CallArgument tid=100 pid=100 cpu=0 tsc=0 arg=0x7\n"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, dump_verify_reports_offset_and_rule)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    tg_func(&g, 1, STF_ENTER, 110);
    tg_call_arg(&g, 1); /* @120 */
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    const char *argv[] = {tr_bin(), "dump", "--verify", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 1);
    cr_assert_str_eq(r.o, "");
    char want[512];
    snprintf(want, sizeof want,
             "sledtrace: %s: offset 120: CallArgument not after "
             "enter-with-args\n",
             p);
    cr_assert_str_eq(r.e, want);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, info_golden_lines)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    const char *argv[] = {tr_bin(), "info", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    const char *want[] = {
        "format:        FDR version 5 (type 1)\n",
        "tsc:           constant=yes nonstop=yes (bits 0x3)\n",
        "cycle freq:    1000000000 Hz\n",
        /* 1e9 Hz with the constant-TSC bit: as compiler-rt writes on KVM guests */
        "clock:         nanoseconds of a clock, not a TSC (1e9 Hz: sledtrace's CLOCK_MONOTONIC, "
        "or compiler-rt's clock_gettime fallback)\n",
        /* steps 100, 100, 300, 100, 1000, 100 | 40, 1350 */
        "clock resolution: 10 ticks (10 ns) observed, smallest step 40 ticks (40 ns)\n",
        "buffer size:   4096 bytes\n",
        "blocks:        2\n",
        "records:       19\n",
        "  Function      8\n",
        "functions:     enter=3 exit=3 tail-exit=1 enter-args=1\n",
        "first tsc:     1000\n",
        "last tsc:      4000\n",
        "duration:      0.000003000 s\n",
        "drops:         0\n",
        "threads:       1\n",
        ("         100        100        2           19            4        0"
         "                 1000                 4000    0.000000000    0.000003000  -\n"),
        "decode time:   ",
        "peak memory:   ",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r.o, want[i]), "missing '%s' in:\n%s", want[i], r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* The info line of a crafted trace: line starting with prefix, its newline included. */
static void info_line(const struct tg *g, const char *prefix, char *buf, size_t len)
{
    char *p = tr_write_trace(g, false);
    const char *argv[] = {tr_bin(), "info", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    const char *l = strstr(r.o, prefix);
    cr_assert(l && (l == r.o || l[-1] == '\n'), "no '%s' line in:\n%s", prefix, r.o);
    snprintf(buf, len, "%.*s", (int)(strcspn(l, "\n") + 1), l);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* info measures the clock's resolution from the records: the gcd of the non-zero time steps
 * between a thread's consecutive function records (here multiples of 26 ticks of a 2.6 GHz
 * TSC: 10 ns), and the smallest step; steps of 0 (two records at one time) do not count. */
Test(tools, info_clock_resolution)
{
    struct tg g;
    char line[256];
    tg_init(&g, 5, 2600000000, 4096);
    tg_block_begin(&g, 1, 1, 0, 1000);
    tg_func(&g, 1, STF_ENTER, 1000); /* steps: 0 */
    tg_func(&g, 2, STF_ENTER, 1078); /* 78 */
    tg_func(&g, 2, STF_EXIT, 1130);  /* 52 */
    tg_func(&g, 2, STF_ENTER, 1390); /* 260 */
    tg_func(&g, 2, STF_EXIT, 1390);  /* 0 */
    tg_func(&g, 1, STF_EXIT, 1442);  /* 52 */
    tg_block_end(&g);
    tg_block_begin(&g, 2, 1, 1, 500);
    tg_func(&g, 1, STF_ENTER, 604); /* 104 */
    tg_func(&g, 1, STF_EXIT, 1254); /* 650 */
    tg_block_end(&g);
    info_line(&g, "clock resolution:", line, sizeof line);
    cr_assert_str_eq(
        line, "clock resolution: 26 ticks (10 ns) observed, smallest step 52 ticks (20 ns)\n");
    tg_free(&g);

    /* a coarse clock: nanoseconds in steps of 4 ms */
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 1, 0, 0);
    tg_func(&g, 1, STF_ENTER, 4000000);
    tg_func(&g, 2, STF_ENTER, 4000000);
    tg_func(&g, 2, STF_EXIT, 12000000);
    tg_func(&g, 1, STF_EXIT, 24000000);
    tg_block_end(&g);
    info_line(&g, "clock resolution:", line, sizeof line);
    cr_assert_str_eq(line, "clock resolution: 4000000 ticks (4 ms) observed, smallest step "
                           "4000000 ticks (4 ms)\n");
    tg_free(&g);

    /* one tick: singular */
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 1, 0, 0);
    tg_func(&g, 1, STF_ENTER, 7);
    tg_func(&g, 1, STF_EXIT, 15); /* steps 7 and 8 */
    tg_block_end(&g);
    info_line(&g, "clock resolution:", line, sizeof line);
    cr_assert_str_eq(line,
                     "clock resolution: 1 tick (1 ns) observed, smallest step 7 ticks (7 ns)\n");
    tg_free(&g);

    /* nothing to measure */
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 1, 0, 100);
    tg_func(&g, 1, STF_ENTER, 100);
    tg_block_end(&g);
    info_line(&g, "clock resolution:", line, sizeof line);
    cr_assert_str_eq(line, "clock resolution: - (no two records at different times)\n");
    tg_free(&g);
}

/* info lists the objects of the sidecar beside the trace: id, build id (aligned) and path, the
 * path escaped; one without a path line shows as such. Without a sidecar it says so. */
Test(tools, info_lists_objects_and_build_ids)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, false);
    tr_write_syms(p, "sledtrace-syms\t1\n"
                     "o\t0\t0x0\t/bin/prog\n"
                     "b\t0\t00112233445566778899AABBCCDDEEFF00112233\n"
                     "f\t0\t1\t0x1000\tmain\n"
                     "o\t1\t0x7f00\t/lib/lib\x1b[2Jx.so\n"
                     "b\t2\tabcd\n");
    char *s = stf_syms_path_for(p);
    const char *argv[] = {tr_bin(), "info", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    const char *want = "objects:       3 (id, build id, path)\n"
                       "   0  00112233445566778899aabbccddeeff00112233  /bin/prog\n"
                       "   1  (none recorded)                           /lib/lib\\x1b[2Jx.so\n"
                       "   2  abcd                                      (path unknown)\n"
                       "decode time:   ";
    cr_assert(strstr(r.o, want), "missing '%s' in:\n%s", want, r.o);
    tr_out_free(&r);
    unlink(s);
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char line[1024];
    snprintf(line, sizeof line, "\nobjects:       - (no symbols file %s)\ndecode time:   ", s);
    cr_assert(strstr(r.o, line), "missing '%s' in:\n%s", line, r.o);
    cr_assert_str_empty(r.e);
    tr_out_free(&r);
    free(s);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(tools, bad_inputs_fail_cleanly)
{
    char *empty = tg_tmpname(".fdr");
    const char *cmds[] = {"info", "dump", "account"};
    for (size_t c = 0; c < 3; c++) {
        const char *a1[] = {tr_bin(), cmds[c], "/nonexistent/t.fdr", NULL};
        struct tr_out r = tr_run(a1);
        cr_assert_eq(r.code, 1);
        cr_assert_str_eq(r.e, "sledtrace: /nonexistent/t.fdr: No such file or directory\n");
        tr_out_free(&r);
        const char *a2[] = {tr_bin(), cmds[c], "/", NULL};
        r = tr_run(a2);
        cr_assert_eq(r.code, 1);
        cr_assert_str_eq(r.e, "sledtrace: /: Is a directory\n");
        tr_out_free(&r);
        const char *a3[] = {tr_bin(), cmds[c], empty, NULL};
        r = tr_run(a3);
        cr_assert_eq(r.code, 1);
        char want[512];
        snprintf(want, sizeof want, "sledtrace: %s: offset 0: truncated header (0 of 32 bytes)\n",
                 empty);
        cr_assert_str_eq(r.e, want);
        tr_out_free(&r);
        const char *a4[] = {tr_bin(), cmds[c], "--help", NULL};
        r = tr_run(a4);
        cr_assert_eq(r.code, 0);
        cr_assert(strstr(r.o, "usage: sledtrace"));
        tr_out_free(&r);
    }
    const char *a5[] = {tr_bin(), "frobnicate", NULL};
    struct tr_out r = tr_run(a5);
    cr_assert_eq(r.code, 2);
    tr_out_free(&r);
    unlink(empty);
    free(empty);
}

Test(tools, corrupt_traces_never_crash_tools)
{
    struct tg g;
    golden_trace(&g);
    char *p = tg_tmpname(".fdr"), *svg = tg_tmpname(".svg");
    uint8_t *w = malloc(g.len);
    srand(99);
    for (int iter = 0; iter < 60; iter++) {
        memcpy(w, g.buf, g.len);
        for (int k = 0; k < 3; k++)
            w[32 + (size_t)rand() % (g.len - 32)] = (uint8_t)rand();
        size_t n = iter % 3 ? g.len : (size_t)rand() % g.len;
        FILE *f = fopen(p, "wb");
        fwrite(w, 1, n, f);
        fclose(f);
        /* Every command that reads a trace; each must exit 0, or 1 naming the file. */
        const char *cmds[][4] = {
            {"account", NULL},
            {"info", NULL},
            {"dump", "--verify", NULL},
            {"replay", NULL},
            {"stack", "--format", "folded", NULL},
            {"flamegraph", "-o", svg, NULL},
            {"graph", NULL},
            {"convert", "--format", "chrome", NULL},
            {"convert", "--format", "yaml", NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            const char *argv[7] = {tr_bin(), cmds[c][0], p};
            for (int a = 1; a < 4 && cmds[c][a]; a++)
                argv[2 + a] = cmds[c][a];
            struct tr_out r = tr_run(argv);
            cr_assert(r.code == 0 || r.code == 1, "exit %d for %s: %s", r.code, cmds[c][0], r.e);
            if (r.code == 1)
                cr_assert(strstr(r.e, p), "%s failed without naming the file: %s", cmds[c][0], r.e);
            tr_out_free(&r);
        }
    }
    free(w);
    unlink(p);
    unlink(svg);
    free(p);
    free(svg);
    tg_free(&g);
}

/* ---- llvm-xray cross-check ------------------------------------------------------------------ */

Test(llvm_xray, verify_convert_account_agree)
{
    const char *x = tr_llvm_xray();
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    tg_func(&g, 1, STF_ENTER, 1000);
    tg_func(&g, 2, STF_ENTER_ARGS, 1100);
    tg_call_arg(&g, 7);
    tg_custom(&g, 1150, "evt", 3);
    tg_func(&g, 2, STF_EXIT, 1400);
    tg_typed(&g, 1450, 4, "ty", 2);
    tg_func(&g, 3, STF_ENTER, 1500);
    tg_func(&g, 3, STF_TAIL_EXIT, 1500 + 7000000000ull);
    tg_block_end(&g);
    tg_zeros(&g, 24);
    tg_block_begin(&g, 100, 100, 1, 7000002000ull);
    tg_func(&g, 2, STF_ENTER, 7000002100ull);
    tg_func(&g, 2, STF_EXIT, 7000002300ull);
    tg_func(&g, 1, STF_EXIT, 7000003000ull);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);

    const char *v[] = {x, "fdr-dump", "--verify", p, NULL};
    struct tr_out r = tr_run(v);
    cr_assert_eq(r.code, 0, "llvm-xray fdr-dump --verify rejected our trace: %s", r.e);
    tr_out_free(&r);

    const char *c[] = {x, "convert", "-f", "yaml", p, NULL};
    r = tr_run(c);
    cr_assert_eq(r.code, 0, "llvm-xray convert failed: %s", r.e);
    const char *tscs[] = {"tsc: 1000,",       "tsc: 1100,",       "tsc: 1150,",
                          "tsc: 1400,",       "tsc: 1450,",       "tsc: 1500,",
                          "tsc: 7000001500,", "tsc: 7000002100,", "tsc: 7000002300,",
                          "tsc: 7000003000,", "args: [ 7 ]",      "data: evt"};
    for (size_t i = 0; i < sizeof tscs / sizeof tscs[0]; i++)
        cr_assert(strstr(r.o, tscs[i]), "llvm-xray convert lacks '%s':\n%s", tscs[i], r.o);
    tr_out_free(&r);

    /* call counts must match llvm-xray account */
    const char *a[] = {x, "account", "-f", "csv", p, NULL};
    r = tr_run(a);
    cr_assert_eq(r.code, 0, "llvm-xray account failed: %s", r.e);
    const char *ours[] = {tr_bin(), "account", "--format", "csv", "--sort", "id", p, NULL};
    struct tr_out o = tr_run(ours);
    cr_assert_eq(o.code, 0, "%s", o.e);
    /* llvm: "funcid,count,..." ; ours: "function,id,count,..." */
    for (int id = 1; id <= 3; id++) {
        char pat[32];
        snprintf(pat, sizeof pat, "\n%d,", id);
        const char *l = strstr(r.o, pat);
        cr_assert(l, "llvm-xray has no row for %d:\n%s", id, r.o);
        long lcount = strtol(l + strlen(pat), NULL, 10);
        snprintf(pat, sizeof pat, "#%d,%d,", id, id);
        const char *m = strstr(o.o, pat);
        cr_assert(m, "we have no row for %d:\n%s", id, o.o);
        long mcount = strtol(m + strlen(pat), NULL, 10);
        cr_assert_eq(lcount, mcount, "function %d: llvm-xray counts %ld, we count %ld", id, lcount,
                     mcount);
    }
    tr_out_free(&o);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

Test(llvm_xray, v1_trace_accepted)
{
    const char *x = tr_llvm_xray();
    struct tg g;
    tg_init(&g, 1, 1000000000, 256);
    tg_block_begin(&g, 7, 0, 0, 500);
    tg_func(&g, 1, STF_ENTER, 600);
    tg_func(&g, 1, STF_EXIT, 900);
    tg_block_end(&g);
    tg_block_begin(&g, 7, 0, 1, 1000);
    tg_func(&g, 2, STF_ENTER, 1100);
    tg_func(&g, 2, STF_EXIT, 1500);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    const char *c[] = {x, "convert", "-f", "yaml", p, NULL};
    struct tr_out r = tr_run(c);
    cr_assert_eq(r.code, 0, "llvm-xray convert failed: %s", r.e);
    cr_assert(strstr(r.o, "tsc: 1500,"), "%s", r.o);
    tr_out_free(&r);
    const char *ours[] = {tr_bin(), "dump", "--verify", p, NULL};
    r = tr_run(ours);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert_str_eq(r.o, "OK: 12 records, 2 blocks\n");
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* 10.4: commands that write a file (convert, graph, flamegraph) write it beside and rename it
 * at the end: a write that fails (here under a file size limit of 0, SIGXFSZ ignored) leaves an
 * existing file as it was and no temporary file behind; `-o -` writes to stdout. */
Test(tools, outputs_are_written_whole_or_not_at_all)
{
    struct tg g;
    golden_trace(&g);
    char *p = tr_write_trace(&g, true);
    char *dir = tg_tmpname(".d");
    unlink(dir); /* a unique name: a directory of that name instead */
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *cmds[] = {"convert '%s' --format chrome -o '%s/out'",
                          "convert '%s' --format yaml -o '%s/out'", "graph '%s' -o '%s/out'",
                          "flamegraph '%s' -o '%s/out'"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char path[1024], sub[1024], cmd[4096];
        snprintf(path, sizeof path, "%s/out", dir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs("old content\n", f);
        fclose(f);
        snprintf(sub, sizeof sub, cmds[i], p, dir);
        /* no byte may be written: every command fails at its first write */
        snprintf(cmd, sizeof cmd,
                 "sh -c \"trap '' XFSZ; ulimit -f 0; exec '%s' %s\" 2>/dev/null; test $? -eq 1",
                 tr_bin(), sub);
        cr_assert_eq(system(cmd), 0, "not exit 1: %s", sub);
        char *txt = tr_slurp(path);
        cr_assert_str_eq(txt, "old content\n", "%s: the old output was replaced", sub);
        free(txt);
        snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep sledtrace-)\"", dir);
        cr_assert_eq(system(cmd), 0, "%s: a temporary file was left behind", sub);
        unlink(path);
    }
    /* a destination that is not a regular file is written in place, never replaced */
    const char *argv0[] = {tr_bin(), "graph", p, "-o", "/dev/null", NULL};
    struct tr_out r = tr_run(argv0);
    cr_assert_eq(r.code, 0, "%s", r.e);
    tr_out_free(&r);
    struct stat st;
    cr_assert(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null was replaced");
    /* -o - is stdout */
    const char *argv[] = {tr_bin(), "flamegraph", p, "-o", "-", NULL};
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strncmp(r.o, "<?xml", 5) == 0, "%.40s", r.o);
    tr_out_free(&r);
    rmdir(dir);
    free(dir);
    tr_remove_trace(p);
    tg_free(&g);
}

/* diff's noise floor (issue 22.5; tools/cmd_diff.c, "Noise floor"). A trace of a 2.6 GHz TSC
 * that moves `step` ticks at a time: main(1) calls f(2) `calls` times, each call in a slot of 6
 * steps (f enters 1 step in and lasts `dur` steps), and exits 1 step after the last slot, so
 * that main's total is the same whatever f's duration. Every step between records is a whole
 * number of steps, at least one of them a single step: the resolution is `step` ticks. */
static char *noise_trace(uint64_t step, int calls, int dur)
{
    struct tg g;
    tg_init(&g, 5, 2600000000, 1 << 16);
    tg_block_begin(&g, 7, 7, 0, 1000 * step);
    uint64_t t = 1000 * step;
    tg_func(&g, 1, STF_ENTER, t);
    for (int i = 0; i < calls; i++) {
        tg_func(&g, 2, STF_ENTER, t + (uint64_t)(6 * i + 1) * step);
        tg_func(&g, 2, STF_EXIT, t + (uint64_t)(6 * i + 1 + dur) * step);
    }
    tg_func(&g, 1, STF_EXIT, t + (uint64_t)(6 * calls + 1) * step);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, true);
    tg_free(&g);
    return p;
}

/* sledtrace diff --format FMT [--sort KEY] --old ... --new ... of three runs a side, each side's
 * runs alike: old runs steps[0..2] ticks a step with f lasting old_dur steps, new runs steps[3..5]
 * with new_dur. Returns stdout (malloc'd); stderr must be empty. */
static char *noise_diff(const char *fmt, const char *key, const uint64_t steps[6], int calls,
                        int old_dur, int new_dur)
{
    char *p[6];
    for (int i = 0; i < 6; i++)
        p[i] = noise_trace(steps[i], calls, i < 3 ? old_dur : new_dur);
    const char *argv[] = {tr_bin(), "diff", "--format", fmt,  "--sort", key,  "--old", p[0],
                          p[1],     p[2],   "--new",    p[3], p[4],     p[5], NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.e, "");
    char *out = strdup(r.o);
    tr_out_free(&r);
    for (int i = 0; i < 6; i++)
        tr_remove_trace(p[i]);
    return out;
}

static const uint64_t steps_10ns[6] = {26, 26, 26, 26, 26, 26};

/* The case: one call of f goes from 30 to 40 ns on a clock of 10 ns steps, in each of
 * 3 runs a side. The old rule flagged it (spreads 30..30 and 40..40 apart, +33% >= 10%); it is
 * one step, which rounding alone makes of any duration between 30 and 40 ns (here the same in
 * every run): under the floor of 10 ns x sqrt(1) per side, shown as within the resolution. */
Test(tools, diff_one_call_one_step_not_flagged)
{
    char *o = noise_diff("csv", "total", steps_10ns, 1, 3, 4);
    cr_assert_str_eq(o, "function,flag,old_calls,new_calls,old,new,change,change_pct,old_min,"
                        "old_max,new_min,new_max,old_total,new_total,old_self,new_self,"
                        "old_median,new_median,old_p99,new_p99,noise_floor,within_resolution\n"
                        "f,,1,1,30,40,10,33.33,30,30,40,40,30,40,30,40,30,40,30,40,20,1\n"
                        "main,,1,1,70,70,0,0.00,70,70,70,70,70,70,40,30,70,70,70,70,20,1\n");
    free(o);
    /* the median call: one step per side, the same floor */
    o = noise_diff("csv", "median", steps_10ns, 1, 3, 4);
    cr_assert_not_null(strstr(o, "\nf,,1,1,30,40,10,33.33,30,30,40,40,30,40,30,40,30,40,30,40,"
                                 "20,1\n"),
                       "%s", o);
    free(o);
    /* text: ~ in the flag column, the resolutions in the summary */
    o = noise_diff("text", "total", steps_10ns, 1, 3, 4);
    cr_assert_str_eq(
        o, "flag        old calls    new calls   old (median)   new (median)       change         %"
           "  function\n"
           "~                   1            1           30ns           40ns        +10ns    +33.3%"
           "  f\n"
           "         runs: old 30ns..30ns, new 40ns..40ns\n"
           "~                   1            1           70ns           70ns         +0ns     +0.0%"
           "  main\n"
           "         runs: old 70ns..70ns, new 70ns..70ns\n"
           "# 2 functions; total compared, 3 old and 3 new runs; flagged: spreads apart, at least "
           "10% changed and not within the clock's resolution (~; old 10 ns, new 10 ns); every "
           "column: --format csv\n");
    free(o);
}

/* The same step on each of 1000 calls: the totals move by 10 us, over the floor of
 * 10 ns x sqrt(1000) per side (632 ns), and f is flagged; its median call still moves by one
 * step only, and is not. */
Test(tools, diff_thousand_calls_one_step_flagged)
{
    char *o = noise_diff("csv", "total", steps_10ns, 1000, 3, 4);
    cr_assert_str_eq(o, "function,flag,old_calls,new_calls,old,new,change,change_pct,old_min,"
                        "old_max,new_min,new_max,old_total,new_total,old_self,new_self,"
                        "old_median,new_median,old_p99,new_p99,noise_floor,within_resolution\n"
                        "f,slower,1000,1000,30000,40000,10000,33.33,30000,30000,40000,40000,"
                        "30000,40000,30000,40000,30,40,30,40,632,0\n"
                        "main,,1,1,60010,60010,0,0.00,60010,60010,60010,60010,60010,60010,30010,"
                        "20010,60010,60010,60010,60010,20,1\n");
    free(o);
    o = noise_diff("csv", "median", steps_10ns, 1000, 3, 4);
    cr_assert_not_null(strstr(o, "\nf,,1000,1000,30,40,10,33.33,30,30,40,40,30000,40000,30000,"
                                 "40000,30,40,30,40,20,1\n"),
                       "%s", o);
    free(o);
    /* two steps of the median call are beyond the floor of one step a side */
    o = noise_diff("csv", "median", steps_10ns, 1000, 3, 5);
    cr_assert_not_null(strstr(o, "\nf,slower,1000,1000,30,50,20,66.67,"), "%s", o);
    free(o);
}

/* A side's resolution is the coarsest of its traces': one old run on a 20 ns clock (52 ticks)
 * makes the old side's 20 ns, and the floor of one call 20 + 10 ns. f lasts 40 ns in every run,
 * main 70 ns on the 10 ns clock and 140 ns on the 20 ns one (seven steps). */
Test(tools, diff_side_resolution_is_the_coarsest)
{
    const uint64_t steps[6] = {26, 52, 26, 26, 26, 26};
    char *p[6];
    for (int i = 0; i < 6; i++)
        p[i] = noise_trace(steps[i], 1, steps[i] == 52 ? 2 : 4);
    const char *argv[] = {tr_bin(), "diff",  "--format", "json", "--old", p[0], p[1],
                          p[2],     "--new", p[3],       p[4],   p[5],    NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "{\"key\": \"total\", \"old_runs\": 3, \"new_runs\": 3, \"functions\": [\n"
             "  {\"function\": \"f\", \"flag\": \"\", \"old_calls\": 1, \"new_calls\": 1, "
             "\"old\": 40, \"new\": 40, \"change\": 0, \"change_pct\": 0.00, \"old_min\": 40, "
             "\"old_max\": 40, \"new_min\": 40, \"new_max\": 40, \"old_total\": 40, "
             "\"new_total\": 40, \"old_self\": 40, \"new_self\": 40, \"old_median\": 40, "
             "\"new_median\": 40, \"old_p99\": 40, \"new_p99\": 40, \"noise_floor\": 30, "
             "\"within_resolution\": true},\n"
             "  {\"function\": \"main\", \"flag\": \"\", \"old_calls\": 1, \"new_calls\": 1, "
             "\"old\": 70, \"new\": 70, \"change\": 0, \"change_pct\": 0.00, \"old_min\": 70, "
             "\"old_max\": 140, \"new_min\": 70, \"new_max\": 70, \"old_total\": 70, "
             "\"new_total\": 70, \"old_self\": 30, \"new_self\": 30, \"old_median\": 70, "
             "\"new_median\": 70, \"old_p99\": 70, \"new_p99\": 70, \"noise_floor\": 30, "
             "\"within_resolution\": true}\n"
             "], \"old_resolution_ns\": 20.000, \"new_resolution_ns\": 10.000}\n");
    tr_out_free(&r);
    for (int i = 0; i < 6; i++)
        tr_remove_trace(p[i]);
}
