/* Context switches (STF_TYPED_CONTEXT, issue 23 item 12) in crafted traces: the walker keeps one
 * stack per (thread, context) (tools/callstack.h, "Contexts"), and account, stack, replay and the
 * Chrome export read it so. 1 tick = 1 ns, no calibration: times as measured. */
#include "chromecheck.h"
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sw(struct tg *g, uint64_t tsc, uint64_t to, uint64_t from, uint32_t how)
{
    uint8_t p[STF_CONTEXT_PAYLOAD];
    stf_encode_context(p, to, from, how);
    tg_typed(g, tsc, STF_TYPED_CONTEXT, p, sizeof p);
}

/* Thread tid: main(1) calls f(2) twice; coroutine 2 runs g(3) across two of its slices; ids
 * offset by `id0`. main's stack before the first switch is context 1 (the switch's `from`). */
static void coroutine_thread(struct tg *g, int32_t tid, uint32_t id0, uint64_t t0)
{
    tg_block_begin(g, tid, 7, 0, t0 + 900);
    tg_func(g, id0 + 1, STF_ENTER, t0 + 1000);
    tg_func(g, id0 + 2, STF_ENTER, t0 + 1100);
    sw(g, t0 + 1200, 2, 1, STF_CTX_SWAP);
    tg_func(g, id0 + 3, STF_ENTER, t0 + 1300);
    sw(g, t0 + 1400, 1, 2, STF_CTX_SWAP);
    tg_func(g, id0 + 2, STF_EXIT, t0 + 1500);
    tg_func(g, id0 + 2, STF_ENTER, t0 + 1600);
    sw(g, t0 + 1700, 2, 1, STF_CTX_SWAP);
    tg_func(g, id0 + 3, STF_EXIT, t0 + 1800);
    sw(g, t0 + 1900, 1, 2, STF_CTX_RETURN);
    tg_func(g, id0 + 2, STF_EXIT, t0 + 2000);
    tg_func(g, id0 + 1, STF_EXIT, t0 + 2100);
    tg_block_end(g);
}

static char *write_syms_trace(const struct tg *g)
{
    char *p = tr_write_trace(g, false);
    tr_write_syms(p, "sledtrace-syms\t1\n"
                     "o\t0\t0x0\t/bin/prog\n"
                     "f\t0\t1\t0x1000\tmain\n"
                     "f\t0\t2\t0x1010\tf\n"
                     "f\t0\t3\t0x1020\tg\n"
                     "f\t0\t11\t0x1030\tmain2\n"
                     "f\t0\t12\t0x1040\tf2\n"
                     "f\t0\t13\t0x1050\tg2\n");
    return p;
}

static struct tr_out run(const char *const *argv)
{
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s: %s%s", argv[1], r.o, r.e);
    return r;
}

/* f's calls last from entry to exit, g's time is its own: a coroutine's frame includes the
 * time it was switched out (wall time), and no call of one context is another's callee. */
Test(contexts, account_and_stack)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    coroutine_thread(&g, 100, 0, 0);
    char *p = write_syms_trace(&g);
    const char *acc[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = run(acc);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "main,1,1,1100,100.00,300,1100,300,1100,1100,1100,1100,1100,0\n"
        "f,2,2,800,72.73,800,400,400,400,400,400,400,400,0\n"
        "g,3,1,500,45.45,500,500,500,500,500,500,500,500,0\n");
    cr_assert(strstr(r.e, "calls: 4, stack repairs: 0, unmatched exits: 0, unfinished frames: 0"),
              "%s", r.e);
    tr_out_free(&r);
    const char *st[] = {tr_bin(), "stack", p, "--by", "count", NULL};
    r = run(st);
    cr_assert(strstr(r.o, "   2  50.00%  main;f\n"), "%s", r.o);
    cr_assert(strstr(r.o, "   1  25.00%  main\n"), "%s", r.o);
    cr_assert(strstr(r.o, "   1  25.00%  g\n"), "%s", r.o);
    cr_assert(strstr(r.o, "# stacks: 3, total weight: 4 calls"), "%s", r.o);
    tr_out_free(&r);
    const char *rp[] = {tr_bin(), "replay", p, NULL};
    r = run(rp);
    cr_assert(strstr(r.o, "-- context 2 --\n"), "%s", r.o);
    cr_assert(strstr(r.o, "-- context 1 --\n"), "%s", r.o);
    cr_assert_not(strstr(r.o, "[repaired]"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* A loss marker drops the frames of every context of its thread: the running one's and those
 * parked; account counts them all as unfinished, replay closes them all with [gap]. */
Test(contexts, loss_drops_every_context)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 7, 0, 900);
    tg_func(&g, 1, STF_ENTER, 1000);
    sw(&g, 1100, 2, 1, STF_CTX_SWAP);
    tg_func(&g, 3, STF_ENTER, 1200);
    sw(&g, 1300, 1, 2, STF_CTX_SWAP);
    tg_func(&g, 2, STF_ENTER, 1400);
    tg_block_end(&g);
    tg_block_begin(&g, 100, 7, 0, 1950);
    uint8_t loss[STF_LOSS_SIZE];
    stf_encode_loss(loss, 5);
    tg_custom(&g, 2000, loss + STF_META_SIZE, STF_LOSS_PAYLOAD);
    tg_func(&g, 2, STF_ENTER, 2100);
    tg_func(&g, 2, STF_EXIT, 2200);
    tg_block_end(&g);
    char *p = write_syms_trace(&g);
    const char *acc[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = run(acc);
    cr_assert(strstr(r.o, "\nmain,1,1,0,0.00,0,0,0,0,0,0,0,0,1\n"), "%s", r.o);
    cr_assert(strstr(r.o, "\nf,2,2,100,"), "%s", r.o);
    cr_assert(strstr(r.o, ",1\ng,3,1,0,0.00,0,0,0,0,0,0,0,0,1\n"), "%s", r.o);
    cr_assert(strstr(r.e, "gaps: 1 (5 events dropped by the runtime); 3 frames open at a gap"),
              "%s", r.e);
    tr_out_free(&r);
    const char *rp[] = {tr_bin(), "replay", p, NULL};
    r = run(rp);
    cr_assert(strstr(r.o, "} g [gap]\n"), "%s", r.o);
    cr_assert(strstr(r.o, "} main [gap]\n"), "%s", r.o);
    cr_assert_eq(strstr(r.o, "} g [gap]") > strstr(r.o, "-- 5 events lost --"), 1,
                 "the running context's frames first:\n%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}

/* Frames parked at the end are unfinished; the Chrome export closes them on their context's
 * track, which is a track of its own: tid INT32_MAX - 1 (the walker's track 1). */
Test(contexts, parked_at_the_end)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 7, 0, 900);
    tg_func(&g, 1, STF_ENTER, 1000);
    sw(&g, 1100, 2, 1, STF_CTX_SWAP);
    tg_func(&g, 3, STF_ENTER, 1200);
    tg_func(&g, 2, STF_ENTER, 1250);
    tg_func(&g, 2, STF_EXIT, 1280);
    sw(&g, 1300, 1, 2, STF_CTX_SWAP);
    tg_func(&g, 1, STF_EXIT, 1400);
    tg_block_end(&g);
    char *p = write_syms_trace(&g);
    const char *acc[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = run(acc);
    cr_assert(strstr(r.o, "\nmain,1,1,400,"), "%s", r.o);
    cr_assert(strstr(r.o, "\ng,3,1,0,0.00,0,0,0,0,0,0,0,0,1\n"), "%s", r.o);
    cr_assert(strstr(r.e, "unfinished frames: 1"), "%s", r.e);
    tr_out_free(&r);
    char *json = tg_tmpname(".json");
    const char *cv[] = {tr_bin(), "convert", p, "--format", "chrome", "-o", json, NULL};
    r = run(cv);
    tr_out_free(&r);
    char *s = tr_slurp(json);
    cr_assert(strstr(s, "\"tid\":2147483646,\"ts\":1,\"name\":\"thread_name\",\"args\":{\"name\":"
                        "\"thread 100 context 2\"}}"),
              "%s", s);
    cr_assert(strstr(s, "\"name\":\"g\",\"args\":{\"id\":3,\"closed\":\"unfinished\"}}"), "%s", s);
    free(s);
    struct cc_result got, want = {0};
    cc_check(json, &got);
    struct cc_thread *t = cc_thread_of(&want, 7, 100);
    t->calls = 1, t->depth[0] = 1;
    t = cc_thread_of(&want, 7, INT32_MAX - 1);
    t->calls = 2, t->depth[0] = 1, t->depth[1] = 1;
    cc_expect("parked", &got, &want);
    remove(json);
    free(json);
    tr_remove_trace(p);
    tg_free(&g);
}

/* Threads walked in parallel (tool_trace_parallel, cs_merge: tracks and open frames numbered
 * again) give what one walk gives. */
Test(contexts, parallel_walk_is_sequential_walk)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    coroutine_thread(&g, 100, 0, 0);
    coroutine_thread(&g, 200, 10, 5000);
    char *p = write_syms_trace(&g);
    const char *what[][8] = {{tr_bin(), "account", p, "--format", "csv", NULL},
                             {tr_bin(), "stack", p, "--by", "count", NULL},
                             {tr_bin(), "stack", p, "--per-thread", NULL}};
    for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
        setenv("SLEDTRACE_JOBS", "1", 1);
        struct tr_out one = run(what[i]);
        setenv("SLEDTRACE_JOBS", "2", 1);
        struct tr_out two = run(what[i]);
        unsetenv("SLEDTRACE_JOBS");
        cr_assert_str_eq(one.o, two.o);
        cr_assert_str_eq(one.e, two.e);
        cr_assert(strstr(one.o, "g2") && strstr(one.o, "main2"), "%s", one.o);
        tr_out_free(&one);
        tr_out_free(&two);
    }
    tr_remove_trace(p);
    tg_free(&g);
}

/* A switch whose `from` is not the running context (events lost before it) names the running
 * stack `from`; the frames parked under `from` before are dropped, as at a gap (account counts
 * them unfinished). */
Test(contexts, inconsistent_from)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 7, 0, 900);
    tg_func(&g, 1, STF_ENTER, 1000); /* context 1 */
    sw(&g, 1100, 2, 1, STF_CTX_SWAP);
    tg_func(&g, 3, STF_ENTER, 1200);  /* context 2 */
    sw(&g, 1300, 3, 1, STF_CTX_SWAP); /* says 1 runs: g's stack is 1's now, main's dropped */
    tg_func(&g, 2, STF_ENTER, 1400);  /* context 3 */
    tg_func(&g, 2, STF_EXIT, 1500);
    sw(&g, 1600, 1, 3, STF_CTX_SWAP);
    tg_func(&g, 3, STF_EXIT, 1700);
    tg_block_end(&g);
    char *p = write_syms_trace(&g);
    const char *acc[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = run(acc);
    cr_assert(strstr(r.o, "\nmain,1,1,0,0.00,0,0,0,0,0,0,0,0,1\n"), "%s", r.o);
    cr_assert(strstr(r.o, "\nf,2,1,100,"), "%s", r.o);
    cr_assert(strstr(r.o, "\ng,3,1,500,"), "%s", r.o);
    cr_assert(strstr(r.e, "calls: 2, stack repairs: 0, unmatched exits: 0, unfinished frames: 0"),
              "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
    tg_free(&g);
}
