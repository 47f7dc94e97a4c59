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
    cr_assert_str_eq(r.o,
                     "     count        total         self          min       median          p90"
                     "          p99          max         id  function\n"
                     "         1      3.000us      1.650us      3.000us      3.000us      3.000us"
                     "      3.000us      3.000us          1  main\n"
                     "         2      1.300us      1.300us        300ns      1.000us      1.000us"
                     "      1.000us      1.000us          2  f\n"
                     "         1         50ns         50ns         50ns         50ns         50ns"
                     "         50ns         50ns          3  #3\n"
                     "# functions: 3, calls: 4, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 0\n");
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
    cr_assert_str_eq(r.o, "function,id,count,total_ns,self_ns,min_ns,median_ns,p90_ns,p99_ns,"
                          "max_ns\n"
                          "f,2,2,1300,1300,300,1000,1000,1000,1000\n"
                          "main,1,1,3000,1650,3000,3000,3000,3000,3000\n"
                          "#3,3,1,50,50,50,50,50,50,50\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(),      "account", p,   "--format=csv",
                           "--sort=name", "--top",   "1", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "function,id,count,total_ns,self_ns,min_ns,median_ns,p90_ns,p99_ns,"
                          "max_ns\n#3,3,1,50,50,50,50,50,50,50\n");
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
    cr_assert_str_eq(r.o, "function,id,count,total_ns,self_ns,min_ns,median_ns,p90_ns,p99_ns,"
                          "max_ns\n"
                          "#1,1,1,100,10,100,100,100,100,100\n"
                          "#2,2,1,90,90,90,90,90,90,90\n");
    cr_assert(strstr(r.e, "stack repairs: 1, unmatched exits: 1, unfinished frames: 1"), "%s", r.e);
    cr_assert(strstr(r.e, "warning: no symbols file"), "%s", r.e);
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
        ("         100        100        2           19                 1000                 4000"
         "    0.000000000    0.000003000\n"),
        "decode time:   ",
        "peak memory:   ",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(r.o, want[i]), "missing '%s' in:\n%s", want[i], r.o);
    tr_out_free(&r);
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
