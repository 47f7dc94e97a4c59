/* What `sledtrace account` and `graph` numbers mean, on crafted traces with exact timestamps
 * (1 tick = 1 ns): a recursive function's total counts its time once (the union of its calls'
 * intervals per thread), graph's nodes and edges agree with it; percentiles are measured
 * durations by the nearest-rank rule, exact up to 1024 calls and within the stated bound
 * beyond (exact there too for durations below 256 ticks); share is total over the threads' summed wall time. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAIN = 1, FIB = 2, G = 3, OTHER = 4, P = 5, Q = 6 };

/* Writes the sidecar naming the ids above beside trace p. */
static void write_syms(const char *p)
{
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                     "f\t0\t2\t0x1100\tfib\nf\t0\t3\t0x1200\tg\nf\t0\t4\t0x1300\tother\n"
                     "f\t0\t5\t0x1400\tp\nf\t0\t6\t0x1500\tq\n");
}

/* Thread 100: main[1000,2000] {
 *                fib[1100,1700] { fib[1200,1400] { fib[1250,1300] { g[1260,1280] } }
 *                                 fib[1500,1650] }
 *                other[1750,1800] { fib[1760,1790] }
 *                p[1850,1960] { q[1860,1950] { p[1870,1900] { q[1880,1890] } } } }
 * fib: 5 calls of 600, 200, 50, 150 and 30 ns, which sum to 1030 ns, but fib is on the stack
 * for 600 + 30 = 630 ns; self 250 + 150 + 30 + 150 + 30 = 610 ns. p: 110 + 30, on the stack
 * 110 ns; q: 90 + 10, on the stack 90 ns.
 * Thread 200: fib enters at 3000 and never exits; inside it fib[3100,3200] and
 * fib[3300,3400] { fib[3310,3320] }, then g[3450,3500]: the finished fib calls are on the stack
 * for 100 + 100 = 200 ns (self 100 + 90 + 10). */
static char *recursive_trace(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    static const struct {
        uint32_t id;
        enum stf_action a;
        uint64_t tsc;
    } t100[] =
        {
            {MAIN, STF_ENTER, 1000}, {FIB, STF_ENTER, 1100}, {FIB, STF_ENTER, 1200},
            {FIB, STF_ENTER, 1250},  {G, STF_ENTER, 1260},   {G, STF_EXIT, 1280},
            {FIB, STF_EXIT, 1300},   {FIB, STF_EXIT, 1400},  {FIB, STF_ENTER, 1500},
            {FIB, STF_EXIT, 1650},   {FIB, STF_EXIT, 1700},  {OTHER, STF_ENTER, 1750},
            {FIB, STF_ENTER, 1760},  {FIB, STF_EXIT, 1790},  {OTHER, STF_EXIT, 1800},
            {P, STF_ENTER, 1850},    {Q, STF_ENTER, 1860},   {P, STF_ENTER, 1870},
            {Q, STF_ENTER, 1880},    {Q, STF_EXIT, 1890},    {P, STF_EXIT, 1900},
            {Q, STF_EXIT, 1950},     {P, STF_EXIT, 1960},    {MAIN, STF_EXIT, 2000},
        },
      t200[] = {
          {FIB, STF_ENTER, 3000}, {FIB, STF_ENTER, 3100}, {FIB, STF_EXIT, 3200},
          {FIB, STF_ENTER, 3300}, {FIB, STF_ENTER, 3310}, {FIB, STF_EXIT, 3320},
          {FIB, STF_EXIT, 3400},  {G, STF_ENTER, 3450},   {G, STF_EXIT, 3500},
      };
    for (size_t i = 0; i < sizeof t100 / sizeof t100[0]; i++)
        tg_func(&g, t100[i].id, t100[i].a, t100[i].tsc);
    tg_block_end(&g);
    tg_block_begin(&g, 200, 100, 1, 2900);
    for (size_t i = 0; i < sizeof t200 / sizeof t200[0]; i++)
        tg_func(&g, t200[i].id, t200[i].a, t200[i].tsc);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    write_syms(p);
    tg_free(&g);
    return p;
}

/* account: total is the time the function is on the stack (outermost frames; for the call that
 * never returned, the finished calls nested in it), per call figures stay per call (nearest
 * rank: g's median of 20 and 50 ns is 20 ns). mean is every finished call's duration, nested
 * ones too, per finished call: fib's 8 finished calls sum to 1030 + 210 = 1240 ns, a mean of
 * 155 ns (not total / count: 830 / 9); self/call 810 / 8 = 101.25, rounded to 101 ns; on
 * thread 200, 210 / 3 = 70 ns and self 200 / 3 = 66.7, rounded to 67 ns. */
Test(stats, recursion_counted_once)
{
    char *p = recursive_trace();
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "main,1,1,1000,66.67,240,1000,240,1000,1000,1000,1000,1000,0\n"
        "fib,2,9,830,55.33,810,155,101,10,100,600,600,600,1\n"
        "g,3,2,70,4.67,70,35,35,20,20,50,50,50,0\n"
        "other,4,1,50,3.33,20,50,20,50,50,50,50,50,0\n"
        "p,5,2,110,7.33,40,70,20,30,30,110,110,110,0\n"
        "q,6,2,90,6.00,70,50,35,10,10,90,90,90,0\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "account", p,   "--per-thread", "--format", "csv",
                           "--sort", "id",      NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "pid,tid,function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,"
        "p90_ns,p99_ns,max_ns,unfinished\n"
        "100,100,main,1,1,1000,100.00,240,1000,240,1000,1000,1000,1000,1000,0\n"
        "100,100,fib,2,5,630,63.00,610,206,122,30,150,600,600,600,0\n"
        "100,100,g,3,1,20,2.00,20,20,20,20,20,20,20,20,0\n"
        "100,100,other,4,1,50,5.00,20,50,20,50,50,50,50,50,0\n"
        "100,100,p,5,2,110,11.00,40,70,20,30,30,110,110,110,0\n"
        "100,100,q,6,2,90,9.00,70,50,35,10,10,90,90,90,0\n"
        "100,200,fib,2,4,200,40.00,200,70,67,10,100,100,100,100,1\n"
        "100,200,g,3,1,50,10.00,50,50,50,50,50,50,50,50,0\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* share: total as a percentage of the threads' summed wall time (thread 100: 1000 to 2000,
 * thread 200: 3000 to 3500, so 1500 ns), or with --per-thread of the thread's own (1000 and
 * 500 ns); in the table, in JSON (with the wall times) and in the footer. */
Test(stats, share_of_wall_time)
{
    char *p = recursive_trace();
    const char *argv[] = {tr_bin(), "account", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "     count        total   share         self         mean    self/call          min  "
             "     median          p90"
             "          p99          max         id  function\n"
             "         1      1.000us  66.67%        240ns      1.000us        240ns      1.000us  "
             "    1.000us      1.000us"
             "      1.000us      1.000us          1  main\n"
             "         9        830ns  55.33%        810ns        155ns        101ns         10ns  "
             "      100ns        600ns"
             "        600ns        600ns          2  fib  (1 unfinished)\n"
             "         2        110ns   7.33%         40ns         70ns         20ns         30ns  "
             "       30ns        110ns"
             "        110ns        110ns          5  p\n"
             "         2         90ns   6.00%         70ns         50ns         35ns         10ns  "
             "       10ns         90ns"
             "         90ns         90ns          6  q\n"
             "         2         70ns   4.67%         70ns         35ns         35ns         20ns  "
             "       20ns         50ns"
             "         50ns         50ns          3  g\n"
             "         1         50ns   3.33%         20ns         50ns         20ns         50ns  "
             "       50ns         50ns"
             "         50ns         50ns          4  other\n"
             "# functions: 6, calls: 16, stack repairs: 0, unmatched exits: 0, unfinished "
             "frames: 1\n"
             "# share: of 1.500us, the summed wall time of 2 threads (each from its first to its "
             "last record)\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);

    const char *argv2[] = {tr_bin(), "account", p, "--per-thread", "--top", "2", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "thread 100/100 (wall time 1.000us)\n"
             "     count        total   share         self         mean    self/call          min  "
             "     median          p90"
             "          p99          max         id  function\n"
             "         1      1.000us 100.00%        240ns      1.000us        240ns      1.000us  "
             "    1.000us      1.000us"
             "      1.000us      1.000us          1  main\n"
             "         5        630ns  63.00%        610ns        206ns        122ns         30ns  "
             "      150ns        600ns"
             "        600ns        600ns          2  fib\n"
             "\n"
             "thread 100/200 (wall time 500ns)\n"
             "     count        total   share         self         mean    self/call          min  "
             "     median          p90"
             "          p99          max         id  function\n"
             "         4        200ns  40.00%        200ns         70ns         67ns         10ns  "
             "      100ns        100ns"
             "        100ns        100ns          2  fib  (1 unfinished)\n"
             "         1         50ns  10.00%         50ns         50ns         50ns         50ns  "
             "       50ns         50ns"
             "         50ns         50ns          3  g\n"
             "\n"
             "# threads: 2, functions: 6, calls: 16, stack repairs: 0, unmatched exits: 0, "
             "unfinished frames: 1\n"
             "# share: of each thread's wall time (from its first to its last record)\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);

    const char *argv3[] = {tr_bin(), "account", p, "--format", "json", "--top", "1", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char want[2048];
    snprintf(want, sizeof want,
             "{\"trace\": \"%s\",\n"
             "  \"functions\": [\n"
             "    {\"function\": \"main\", \"id\": 1, \"count\": 1, \"total_ns\": 1000, "
             "\"share_pct\": 66.67, \"self_ns\": 240, \"mean_ns\": 1000, \"selfcall_ns\": 240, "
             "\"min_ns\": 1000, \"median_ns\": 1000, "
             "\"p90_ns\": 1000, \"p99_ns\": 1000, \"max_ns\": 1000, \"unfinished\": 0}\n"
             "  ],\n"
             "  \"summary\": {\"functions\": 6, \"calls\": 16, \"stack_repairs\": 0, "
             "\"unmatched_exits\": 0, \"unfinished_frames\": 1, \"gaps\": 0, \"gap_events\": 0, "
             "\"gap_frames\": 0, \"threads\": 2, \"wall_ns\": 1500}}\n",
             p);
    cr_assert_str_eq(r.o, want);
    cr_assert_str_eq(r.e,
                     "# functions: 6, calls: 16, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 1\n"
                     "# share: of 1.500us, the summed wall time of 2 threads (each from its "
                     "first to its last record)\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv4[] = {tr_bin(), "account",      p,   "--format", "json", "--top",
                           "1",      "--per-thread", NULL};
    r = tr_run(argv4);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "{\"pid\": 100, \"tid\": 100, \"wall_ns\": 1000, \"functions\": [\n"
                          "      {\"function\": \"main\", \"id\": 1, \"count\": 1, "
                          "\"total_ns\": 1000, \"share_pct\": 100.00, "),
              "%s", r.o);
    cr_assert(strstr(r.o, "{\"pid\": 100, \"tid\": 200, \"wall_ns\": 500, \"functions\": [\n"
                          "      {\"function\": \"fib\", \"id\": 2, \"count\": 4, "
                          "\"total_ns\": 200, \"share_pct\": 40.00, "),
              "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* graph: a node's total is account's total (every call closes in graph: the fib left open on
 * thread 200 closes at the thread's last timestamp, 3500); an edge's total is the time a call of
 * the callee made by that caller is on the stack, so q's one caller p has q's total, and fib's
 * callers main and other add up to fib's total on thread 100. */
Test(stats, graph_nodes_and_edges_agree)
{
    char *p = recursive_trace();
    const char *argv[] = {tr_bin(), "graph", p, "--tid", "100", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "digraph calls {\n"
                     "  node [shape=box];\n"
                     "  f1 [label=\"main\\ncalls: 1\\ntotal: 1.000us\"];\n"
                     "  f2 [label=\"fib\\ncalls: 5\\ntotal: 630ns\"];\n"
                     "  f3 [label=\"g\\ncalls: 1\\ntotal: 20ns\"];\n"
                     "  f4 [label=\"other\\ncalls: 1\\ntotal: 50ns\"];\n"
                     "  f5 [label=\"p\\ncalls: 2\\ntotal: 110ns\"];\n"
                     "  f6 [label=\"q\\ncalls: 2\\ntotal: 90ns\"];\n"
                     "  f2 -> f3 [label=\"calls: 1\\ntotal: 20ns\"];\n"
                     "  f2 -> f2 [label=\"calls: 3\\ntotal: 350ns\"];\n"
                     "  f1 -> f2 [label=\"calls: 1\\ntotal: 600ns\"];\n"
                     "  f4 -> f2 [label=\"calls: 1\\ntotal: 30ns\"];\n"
                     "  f1 -> f4 [label=\"calls: 1\\ntotal: 50ns\"];\n"
                     "  f5 -> f6 [label=\"calls: 2\\ntotal: 90ns\"];\n"
                     "  f6 -> f5 [label=\"calls: 1\\ntotal: 30ns\"];\n"
                     "  f1 -> f5 [label=\"calls: 1\\ntotal: 110ns\"];\n"
                     /* filled by self time: fib the most (red), main 240 ns */
                     "  f1 [style=filled, fillcolor=\"#ffb0b0\"];\n"
                     "  f2 [style=filled, fillcolor=\"#ff3737\"];\n"
                     "  f3 [style=filled, fillcolor=\"#fff8f8\"];\n"
                     "  f4 [style=filled, fillcolor=\"#fff8f8\"];\n"
                     "  f5 [style=filled, fillcolor=\"#fff2f2\"];\n"
                     "  f6 [style=filled, fillcolor=\"#ffe8e8\"];\n"
                     "  // calls: 12, stack repairs: 0, unmatched exits: 0, gaps: 0\n"
                     "  // times: as measured; this trace records no tracer cost (compiler-rt's, "
                     "or an older sledtrace's), so each call's figures include the tracer's own\n"
                     "}\n");
    tr_out_free(&r);
    /* both threads: fib's open frame on thread 200 counts 3500 - 3000 = 500 ns, which holds
     * its nested calls */
    const char *argv2[] = {tr_bin(), "graph", p, NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "  f2 [label=\"fib\\ncalls: 9\\ntotal: 1.130us\"];\n"), "%s", r.o);
    cr_assert(strstr(r.o, "  f2 -> f2 [label=\"calls: 6\\ntotal: 550ns\"];\n"), "%s", r.o);
    cr_assert(strstr(r.o, "  f2 -> f3 [label=\"calls: 2\\ntotal: 70ns\"];\n"), "%s", r.o);
    tr_out_free(&r);
    /* --focus q: q, what it calls (p) and what calls it, transitively (p, main); the rest
     * (fib, g, other) is not drawn (issue 28.3) */
    const char *fv[] = {tr_bin(), "graph", p, "--tid", "100", "--focus", "q", NULL};
    r = tr_run(fv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "  f1 [label=\"main\\ncalls: 1\\ntotal: 1.000us\"];\n"
                          "  f5 [label=\"p\\ncalls: 2\\ntotal: 110ns\"];\n"
                          "  f6 [label=\"q\\ncalls: 2\\ntotal: 90ns\"];\n"
                          "  f5 -> f6 [label=\"calls: 2\\ntotal: 90ns\"];\n"
                          "  f6 -> f5 [label=\"calls: 1\\ntotal: 30ns\"];\n"
                          "  f1 -> f5 [label=\"calls: 1\\ntotal: 110ns\"];\n"),
              "%s", r.o);
    cr_assert(!strstr(r.o, "fib") && strstr(r.o, "  // drawn: 3 of 6 functions"), "%s", r.o);
    tr_out_free(&r);
    /* --min-share 50: only main (1000 ns) and fib (630) have half of the largest total */
    const char *mv[] = {tr_bin(), "graph", p, "--tid", "100", "--min-share", "50", NULL};
    r = tr_run(mv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "  f1 [label") && strstr(r.o, "  f2 [label") &&
                  !strstr(r.o, "  f3 [label") && strstr(r.o, "  f1 -> f2 [label") &&
                  !strstr(r.o, "f5"),
              "%s", r.o);
    tr_out_free(&r);
    const char *bv[] = {tr_bin(), "graph", p, "--min-share", "x", NULL};
    r = tr_run(bv);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: graph: --min-share needs a percentage 0..100, not 'x'\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Percentiles of few calls are durations that were measured, by the nearest-rank rule (the
 * k-th shortest, k = ceil(n * p / 100)): 10 and 30 ns give a median of 10 ns, p90 and p99 of
 * 30 ns; 300, 600 and 1000 ns a median of 600 ns (not a histogram bucket's midpoint). */
Test(stats, percentiles_of_few_calls_are_exact)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    static const uint64_t two[][2] = {{1000, 1010}, {1100, 1130}},
                          three[][2] = {{2000, 3000}, {4000, 4300}, {5000, 5600}};
    for (size_t i = 0; i < 2; i++) {
        tg_func(&g, FIB, STF_ENTER, two[i][0]);
        tg_func(&g, FIB, STF_EXIT, two[i][1]);
    }
    for (size_t i = 0; i < 3; i++) {
        tg_func(&g, G, STF_ENTER, three[i][0]);
        tg_func(&g, G, STF_EXIT, three[i][1]);
    }
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    write_syms(p);
    tg_free(&g);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "fib,2,2,40,0.87,40,20,20,10,10,30,30,30,0\n"
        "g,3,3,1900,41.30,1900,633,633,300,600,1000,1000,1000,0\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t x = *(const uint64_t *)pa, y = *(const uint64_t *)pb;
    return x < y ? -1 : x > y;
}

/* Nearest rank of sorted v[0..n): the k-th smallest, k = ceil(n * pct / 100). */
static uint64_t nearest_rank(const uint64_t *v, size_t n, unsigned pct)
{
    size_t k = (n * pct + 99) / 100;
    return v[k - 1];
}

/* Function id's csv row: count, then total, self, mean, self/call, min, median, p90, p99, max
 * (ns); the share (between total and self) is skipped. */
static void csv_row(const char *csv, const char *name, uint64_t out[10])
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s,", name);
    const char *l = strstr(csv, pat);
    cr_assert(l, "no row for %s:\n%s", name, csv);
    unsigned id;
    int n = sscanf(l + strlen(pat),
                   "%u,%" SCNu64 ",%" SCNu64 ",%*f,%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64
                   ",%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64,
                   &id, &out[0], &out[1], &out[2], &out[3], &out[4], &out[5], &out[6], &out[7],
                   &out[8], &out[9]);
    cr_assert_eq(n, 11, "%s", l);
}

/* a / n rounded to the nearest (halves up), as account's mean and self/call are. */
static uint64_t div_nearest(uint64_t a, uint64_t n)
{
    return (2 * a + n) / (2 * n);
}

/* n calls of id of durations d[0..n), one after another from *tsc, 10 ns apart; their sum. */
static uint64_t calls_of(struct tg *g, uint32_t id, const uint64_t *d, size_t n, uint64_t *tsc)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        tg_func(g, id, STF_ENTER, *tsc);
        tg_func(g, id, STF_EXIT, *tsc += d[i]);
        sum += d[i];
        *tsc += 10;
    }
    return sum;
}

/* g's trace written with its sidecar (g freed), and account --format csv of it into *r: the
 * trace's path. */
static char *account_csv(struct tg *g, struct tr_out *r)
{
    char *p = tr_write_trace(g, false);
    write_syms(p);
    tg_free(g);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", NULL};
    *r = tr_run(argv);
    cr_assert_eq(r->code, 0, "stderr: %s", r->e);
    return p;
}

/* Short calls past the exact ones: g makes 4096 calls of 0 to 255 ns (each 16 times, in a
 * scattered order). In the histogram a duration below 256 ticks has a bucket of its own (below
 * 128 ticks: row 0, where the value is the slot), so its percentiles are still the exact ones;
 * a row or slot off by one for the short durations would show here. */
Test(stats, percentiles_of_many_short_calls_are_exact)
{
    enum { NG = 4096 };
    static uint64_t dg[NG];
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    tg_block_begin(&g, 100, 100, 0, 900);
    for (size_t i = 0; i < NG; i++)
        dg[i] = (i * 37) % 256;
    uint64_t tsc = 1000, sum = calls_of(&g, G, dg, NG, &tsc);
    tg_block_end(&g);
    struct tr_out r;
    char *p = account_csv(&g, &r);
    qsort(dg, NG, sizeof *dg, cmp_u64);
    static const unsigned pcts[] = {50, 90, 99}; /* 127, 230 and 253 ns: rows 0 and 1 */
    uint64_t f[10];
    csv_row(r.o, "g", f);
    cr_assert_eq(f[0], NG);
    cr_assert_eq(f[1], sum);
    cr_assert_eq(f[3], div_nearest(sum, NG)); /* mean and self/call: every call a leaf */
    cr_assert_eq(f[4], div_nearest(sum, NG));
    cr_assert_eq(f[5], 0);
    cr_assert_eq(f[9], 255);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(f[6 + k], nearest_rank(dg, NG, pcts[k]), "g p%u: %" PRIu64 ", exact %" PRIu64,
                     pcts[k], f[6 + k], nearest_rank(dg, NG, pcts[k]));
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Many calls of known durations: fib makes exactly 1024 (the most kept exactly): its
 * percentiles are the exact ones; g makes 20000 spread over 1 ns to 4 ms: its percentiles come
 * from the histogram and are within 1/256 of the exact ones (the bound account --help states),
 * the other columns exact. The test computes the exact values from the durations it wrote. */
Test(stats, percentiles_of_many_calls_within_the_stated_bound)
{
    enum { NF = 1024, NG = 20000 };
    static uint64_t df[NF], dg[NG];
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    tg_block_begin(&g, 100, 100, 0, 900);
    uint64_t tsc = 1000, x = 12345;
    for (size_t i = 0; i < NF; i++)
        df[i] = 1000 + (i * 7919) % 100003; /* distinct values from 1 us to 101 us */
    uint64_t sumf = calls_of(&g, FIB, df, NF, &tsc);
    tg_block_end(&g);
    tg_block_begin(&g, 100, 100, 0, tsc);
    for (size_t i = 0; i < NG; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        dg[i] = 1 + ((x >> 33) >> ((x >> 20) % 22)) % 4000000; /* log-spread over 1 ns..4 ms */
    }
    uint64_t sumg = calls_of(&g, G, dg, NG, &tsc);
    tg_block_end(&g);
    struct tr_out r;
    char *p = account_csv(&g, &r);
    qsort(df, NF, sizeof *df, cmp_u64);
    qsort(dg, NG, sizeof *dg, cmp_u64);
    static const unsigned pcts[] = {50, 90, 99};

    uint64_t f[10];
    csv_row(r.o, "fib", f);
    cr_assert_eq(f[0], NF);
    cr_assert_eq(f[1], sumf);
    cr_assert_eq(f[2], sumf);
    cr_assert_eq(f[3], div_nearest(sumf, NF)); /* mean, self/call: exact past the kept ones */
    cr_assert_eq(f[4], div_nearest(sumf, NF));
    cr_assert_eq(f[5], df[0]);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(f[6 + k], nearest_rank(df, NF, pcts[k]),
                     "fib p%u: %" PRIu64 ", exact %" PRIu64, pcts[k], f[6 + k],
                     nearest_rank(df, NF, pcts[k]));
    cr_assert_eq(f[9], df[NF - 1]);

    csv_row(r.o, "g", f);
    cr_assert_eq(f[0], NG);
    cr_assert_eq(f[1], sumg);
    cr_assert_eq(f[2], sumg);
    cr_assert_eq(f[3], div_nearest(sumg, NG));
    cr_assert_eq(f[4], div_nearest(sumg, NG));
    cr_assert_eq(f[5], dg[0]);
    cr_assert_eq(f[9], dg[NG - 1]);
    for (int k = 0; k < 3; k++) {
        uint64_t want = nearest_rank(dg, NG, pcts[k]), got = f[6 + k];
        uint64_t err = got > want ? got - want : want - got;
        cr_assert_leq(err * 256, want, "g p%u: %" PRIu64 ", exact %" PRIu64 ", beyond 1/256",
                      pcts[k], got, want);
    }
    tr_out_free(&r);

    /* the bound is the one --help states */
    const char *argv2[] = {tr_bin(), "account", "--help", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.o, "exact up to 1024 finished calls per function"), "%s", r.o);
    cr_assert(strstr(r.o, "within 0.4%\n(1/256) relative error"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}
