/* The analysis commands that walk a trace's threads in parallel (account, stack, flamegraph,
 * through tool_trace_parallel) print exactly what they print walking them one after another:
 * the same stdout, stderr (warnings in the same order, the same count of those not shown) and
 * exit status with SLEDTRACE_JOBS=1 (the calling thread only) as with 2, 3 and 8 workers; so
 * do a walk of one thread (--tid) and convert --format chrome, decoded ahead on a second
 * thread (tool_trace_prefetch) unless SLEDTRACE_JOBS=1. The
 * trace has six threads, the main one not first in the file, whose blocks interleave; deep
 * recursion; loss markers; an elided-calls event; unmatched exits; frames left open; bad
 * records in several threads (more than the 10 warnings shown); one function with more than
 * 1024 calls over all threads but fewer in each (its percentiles move to the histogram only
 * when the threads' statistics are merged) and one with fewer in all. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nth threads (1 to 6), blocks rounds of blocks (8: the description above) */
static char *threads_trace(int nth, int blocks)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    uint64_t tsc[6] = {1000, 2000, 3000, 4000, 5000, 6000};
    int32_t tid[6] = {501, 502, 500, 503, 504, 505}; /* pid 500: the main thread is third */
    for (int b = 0; b < blocks; b++) {
        for (int th = 0; th < nth; th++) {
            uint64_t *t = &tsc[th];
            tg_block_begin(&g, tid[th], 500, (uint16_t)th, *t);
            if (b == 0)
                tg_func(&g, 1, STF_ENTER, *t += 5); /* main: open to the end */
            for (int i = 0; i < 12; i++) { /* f: 8 x 6 x 12 = 576 calls in all, 96 a thread */
                tg_func(&g, 2, STF_ENTER, *t += 3 + (uint64_t)((i * 7 + th) % 11));
                tg_func(&g, 2, STF_EXIT, *t += 1 + (uint64_t)((i * 5 + b) % 13));
            }
            for (int i = 0; i < 30; i++) { /* g: 8 x 6 x 30 = 1440 calls, 240 a thread */
                tg_func(&g, 4, STF_ENTER, *t += 2);
                tg_func(&g, 4, STF_EXIT, *t += 1 + (uint64_t)((i * 31 + th * 7 + b) % 97));
            }
            for (int d = 0; d < 5 + th; d++) /* recursion of h */
                tg_func(&g, 5, STF_ENTER, *t += 4);
            for (int d = 0; d < 5 + th; d++)
                tg_func(&g, 5, STF_EXIT, *t += 6 + (uint64_t)d);
            if (b % 3 == th % 3)
                tg_func(&g, 6, STF_EXIT, *t += 1); /* unmatched */
            if (b == 3 && th % 2) {
                tg_func(&g, 7, STF_ENTER, *t += 2); /* dropped at the loss marker */
                uint8_t loss[STF_LOSS_SIZE];
                stf_encode_loss(loss, 10 + (uint64_t)th);
                tg_custom(&g, *t += 1, loss + STF_META_SIZE, STF_LOSS_PAYLOAD);
            }
            if ((b == 2 || b == 5 || (b == 4 && th < 2)) && th != 2) { /* bad: rest skipped */
                uint8_t bad[8];
                stf_put32(bad, (2u << 4) | (6u << 1));
                stf_put32(bad + 4, 1);
                tg_raw(&g, bad, 8);
                tg_func(&g, 2, STF_ENTER, *t += 1);
            }
            if (b == 6) { /* a repair: 8 closed by the exit of 3 below it */
                tg_func(&g, 3, STF_ENTER, *t += 2);
                tg_func(&g, 8, STF_ENTER, *t += 2);
                tg_func(&g, 3, STF_EXIT, *t += 2);
            }
            if (b == 7 && th == 4) {
                uint8_t e[2 * STF_ELIDED_ENTRY];
                stf_encode_elided(e, 4, 33, 990);
                stf_encode_elided(e + STF_ELIDED_ENTRY, 9, 5, 50);
                tg_typed(&g, *t += 1, STF_TYPED_ELIDED, e, (int32_t)sizeof e);
            }
            tg_block_end(&g);
        }
    }
    char *p = tr_write_trace(&g, true);
    tg_free(&g);
    return p;
}

/* cmd (NULL-terminated words) on trace p with SLEDTRACE_JOBS=jobs. */
static struct tr_out run(const char *jobs, const char *p, const char *const *cmd)
{
    char env[32];
    snprintf(env, sizeof env, "SLEDTRACE_JOBS=%s", jobs);
    const char *argv[16] = {"/usr/bin/env", env, tr_bin()};
    size_t n = 3;
    for (; *cmd; cmd++)
        argv[n++] = strcmp(*cmd, "TRACE") == 0 ? p : *cmd;
    argv[n] = NULL;
    return tr_run(argv);
}

Test(parallel, same_output_with_any_number_of_workers, .timeout = 120)
{
    char *p = threads_trace(6, 8);
    const char *cmds[][8] = {
        {"account", "TRACE", NULL},
        {"account", "TRACE", "--per-thread", NULL},
        {"account", "TRACE", "--format", "json", NULL},
        {"account", "TRACE", "--format", "csv", "--sort", "count", NULL},
        {"stack", "TRACE", NULL},
        {"stack", "TRACE", "--per-thread", "--format", "folded", NULL},
        {"stack", "TRACE", "--by", "count", NULL},
        {"stack", "TRACE", "--diff", "TRACE", NULL},
        {"flamegraph", "TRACE", "-o", "-", NULL},
        /* one unit, decoded ahead on a second thread (tool_trace_prefetch) unless JOBS=1 */
        {"stack", "TRACE", "--tid", "501", "--format", "folded", NULL},
        {"convert", "TRACE", "--format", "chrome", NULL},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        struct tr_out one = run("1", p, cmds[c]);
        cr_assert_eq(one.code, 0, "%s: %s", cmds[c][0], one.e);
        cr_assert(strstr(one.e, "unknown function action"), "%s: %s", cmds[c][0], one.e);
        const char *jobs[] = {"2", "3", "8"};
        for (int j = 0; j < 3; j++) {
            struct tr_out par = run(jobs[j], p, cmds[c]);
            cr_assert_eq(par.code, one.code, "%s %s", cmds[c][0], cmds[c][2] ? cmds[c][2] : "");
            cr_assert_str_eq(par.o, one.o, "%s %s, %s jobs", cmds[c][0],
                             cmds[c][2] ? cmds[c][2] : "", jobs[j]);
            cr_assert_str_eq(par.e, one.e, "%s %s, %s jobs", cmds[c][0],
                             cmds[c][2] ? cmds[c][2] : "", jobs[j]);
            tr_out_free(&par);
        }
        tr_out_free(&one);
    }
    /* the percentiles of g (1440 calls, 240 a thread) come from the histogram: it is merged */
    const char *acct[] = {"account", "TRACE", "--format", "csv", NULL};
    struct tr_out r = run("3", p, acct);
    cr_assert(strstr(r.o, "#4,4,1473,"), "%s", r.o); /* 1440 + 33 elided */
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A trace of one thread: one unit, decoded ahead (tool_trace_prefetch) unless JOBS=1; 300
 * blocks of about 106 records, so the decoding thread goes round its chunks (3 of at most 8192
 * function records) several times. */
Test(parallel, one_thread_decoded_ahead, .timeout = 60)
{
    char *p = threads_trace(1, 300);
    const char *cmds[][6] = {
        {"account", "TRACE", "--format", "json", NULL},
        {"stack", "TRACE", NULL},
        {"convert", "TRACE", "--format", "chrome", NULL},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        struct tr_out one = run("1", p, cmds[c]), two = run("2", p, cmds[c]);
        cr_assert_eq(one.code, 0, "%s: %s", cmds[c][0], one.e);
        cr_assert(strstr(one.e, "unknown function action"), "%s: %s", cmds[c][0], one.e);
        cr_assert_eq(two.code, one.code);
        cr_assert_str_eq(two.o, one.o, "%s", cmds[c][0]);
        cr_assert_str_eq(two.e, one.e, "%s", cmds[c][0]);
        tr_out_free(&one);
        tr_out_free(&two);
    }
    tr_remove_trace(p);
}
