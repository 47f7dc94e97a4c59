/* Golden tests of `sledtrace replay`, `stack` and `flamegraph` (path in $SLEDTRACE_BIN) on a
 * small crafted two-thread trace with a tail exit, a stack repair, an unknown id and a loss
 * marker. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAIN = 1, F = 2, G = 3, H = 4, UNKNOWN = 9 };

/* 1 tick = 1 ns; the first record (NewCPUId of the first block) is at TSC 900.
 * Thread 100: main[1000,3000] { f[1100,1400] { g[1200,1300] } (closed by a tail exit);
 *             f[1500,2000] { h[1600,..] { #9[1700,..] } } } -- the exit of f at 2000 repairs
 *             #9 and h (both closed at 2000).
 * Thread 200: f[1050,1450] { g[1150,1250] }; h entered at 1600, then a loss marker (5 events)
 *             at 1700 drops it; g[1800,1850].
 * Closed top-level time: main 2000 + f 400 + g 50 = 2450 ns. */
static const uint64_t TOP_LEVEL_NS = 2000 + 400 + 50;

static void views_trace(struct tg *g)
{
    tg_init(g, 5, 1000000000, 4096);
    tg_block_begin(g, 100, 100, 0, 900);
    tg_func(g, MAIN, STF_ENTER, 1000);
    tg_func(g, F, STF_ENTER, 1100);
    tg_func(g, G, STF_ENTER_ARGS, 1200);
    tg_call_arg(g, 42);
    tg_func(g, G, STF_EXIT, 1300);
    tg_func(g, F, STF_TAIL_EXIT, 1400);
    tg_func(g, F, STF_ENTER, 1500);
    tg_func(g, H, STF_ENTER, 1600);
    tg_func(g, UNKNOWN, STF_ENTER, 1700);
    tg_func(g, F, STF_EXIT, 2000);
    tg_func(g, MAIN, STF_EXIT, 3000);
    tg_block_end(g);

    tg_block_begin(g, 200, 100, 1, 950);
    tg_func(g, F, STF_ENTER, 1050);
    tg_func(g, G, STF_ENTER, 1150);
    tg_func(g, G, STF_EXIT, 1250);
    tg_func(g, F, STF_EXIT, 1450);
    tg_func(g, H, STF_ENTER, 1600);
    tg_block_end(g);

    uint8_t loss[STF_LOSS_SIZE];
    stf_encode_loss(loss, 5);
    tg_block_begin(g, 200, 100, 1, 1700);
    tg_custom(g, 1700, loss + STF_META_SIZE, STF_LOSS_PAYLOAD);
    tg_func(g, G, STF_ENTER, 1800);
    tg_func(g, G, STF_EXIT, 1850);
    tg_block_end(g);
}

static char *write_trace(void)
{
    struct tg g;
    views_trace(&g);
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                     "f\t0\t2\t0x1100\tf\nf\t0\t3\t0x1200\tg\nf\t0\t4\t0x1300\th\n");
    return p;
}

/* Entry order (the default): leaves on one line (g, which logs its argument 42, is still one),
 * callers open with '{' at their entry and close at their exit, repaired frames close at the
 * exit that repaired them, the frame open at the loss marker closes there with [gap]. */
Test(views, replay_entry_order)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "replay", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000100             main {\n"
                     "100      0.000000200               f {\n"
                     "100      0.000000300      100ns      g(arg1=0x2a)\n"
                     "100      0.000000500      300ns    } f\n"
                     "100      0.000000600               f {\n"
                     "100      0.000000700                 h {\n"
                     "100      0.000000800                   #9 {\n"
                     "100      0.000001100      300ns        } #9 [repaired]\n"
                     "100      0.000001100      400ns      } h [repaired]\n"
                     "100      0.000001100      500ns    } f\n"
                     "100      0.000002100    2.000us  } main\n"
                     "200      0.000000150             f {\n"
                     "200      0.000000250      100ns    g\n"
                     "200      0.000000550      400ns  } f\n"
                     "200      0.000000700             h {\n"
                     "200      0.000000800          -  } h [gap]\n"
                     "200      0.000000800 -- 5 events lost --\n"
                     "200      0.000000900       50ns  g\n"
                     "# shown: 9 of 9 calls, stack repairs: 2, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap "
                     "were left out\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Frames still open when their thread's records end close as [unfinished], top first, at the
 * thread's last timestamp; --depth and --filter hide lines, never change the tree. */
Test(views, replay_entry_order_unfinished_and_filters)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    tg_func(&g, MAIN, STF_ENTER, 1000);
    tg_func(&g, F, STF_ENTER, 1100);
    tg_func(&g, G, STF_ENTER, 1200);
    tg_func(&g, G, STF_EXIT, 1250);
    tg_block_end(&g);
    tg_block_begin(&g, 200, 100, 0, 950);
    tg_func(&g, H, STF_ENTER, 1300);
    tg_func(&g, H, STF_EXIT, 1400);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false); /* no sidecar: names are #id */
    tg_free(&g);
    const char *argv[] = {tr_bin(), "replay", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000100             #1 {\n"
                     "100      0.000000200               #2 {\n"
                     "100      0.000000300       50ns      #3\n"
                     "100      0.000000350          -    } #2 [unfinished]\n"
                     "100      0.000000350          -  } #1 [unfinished]\n"
                     "200      0.000000400      100ns  #4\n"
                     "# shown: 2 of 2 calls, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 2\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "replay", p, "--depth", "2", "--filter", "#[23]", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000200               #2 {\n"
                     "100      0.000000350          -    } #2 [unfinished]\n"
                     "# shown: 0 of 2 calls, stack repairs: 0, unmatched exits: 0, "
                     "unfinished frames: 2\n"
                     "# filters: --filter '#[23]' --max-depth 2: 0 of 2 calls shown\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* --min-duration in entry order looks ahead for each call's end: it must show exactly the calls
 * exit order shows (which knows every duration), for thresholds from 0 to above the longest
 * call, on the crafted trace (tail exit, repairs, a gap) and the real ones (exceptions,
 * longjmp, signals, a real loss marker). Compared as multisets of (duration, name) lines. */
static const char min_check_py[] =
    "import subprocess, sys\n"
    "tool, trace = sys.argv[1], sys.argv[2]\n"
    "def calls(order, ns):\n"
    "    out = subprocess.run([tool, 'replay', trace, '--order', order, '--min-duration', "
    "str(ns)],\n"
    "                         capture_output=True, text=True, check=True).stdout\n"
    "    got = []\n"
    "    for l in out.splitlines():\n"
    "        if l.startswith('#') or ' events lost --' in l or l.endswith(' {'):\n"
    "            continue\n"
    "        f = l.split(None, 3)\n"
    "        if f[2] == '-':\n"
    "            continue\n"
    "        name = f[3].strip()\n"
    "        if name.startswith('} '):\n"
    "            name = name[2:]\n"
    "        got.append((f[0], f[2], name))\n"
    "    return sorted(got)\n"
    "n = 0\n"
    "for ns in (0, 1, 10, 20, 30, 50, 100, 250, 300, 400, 1000, 3000, 10000, 60000, 500000,\n"
    "           10**6, 10**9):\n"
    "    a, b = calls('entry', ns), calls('exit', ns)\n"
    "    assert a == b, (ns, [x for x in a if x not in b], [x for x in b if x not in a])\n"
    "    n += len(a)\n"
    "print(n)\n";

Test(views, replay_min_duration_same_calls_in_both_orders)
{
    char *py = tg_tmpname(".py");
    FILE *f = fopen(py, "w");
    cr_assert(f);
    fputs(min_check_py, f);
    fclose(f);
    char *p = write_trace();
    const char *data = getenv("SLEDTRACE_DATA");
    cr_assert(data && *data);
    char ev[1024], lossy[1024];
    snprintf(ev, sizeof ev, "%s/real-events.fdr", data);
    snprintf(lossy, sizeof lossy, "%s/real-lossy.fdr", data);
    const char *traces[] = {p, ev, lossy};
    for (int i = 0; i < 3; i++) {
        const char *argv[] = {"/usr/bin/python3", py, tr_bin(), traces[i], NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s: %s", traces[i], r.e);
        cr_assert_gt(strtol(r.o, NULL, 10), 0, "%s: no call compared", traces[i]);
        tr_out_free(&r);
    }
    tr_remove_trace(p);
    unlink(py);
    free(py);
}

Test(views, replay_golden)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "replay", p, "--order", "exit", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000300      100ns      g(arg1=0x2a)\n"
                     "100      0.000000200      300ns    f\n"
                     "100      0.000000800      300ns        #9 [repaired]\n"
                     "100      0.000000700      400ns      h [repaired]\n"
                     "100      0.000000600      500ns    f\n"
                     "100      0.000000100    2.000us  main\n"
                     "200      0.000000250      100ns    g\n"
                     "200      0.000000150      400ns  f\n"
                     "200      0.000000800 -- 5 events lost --\n"
                     "200      0.000000900       50ns  g\n"
                     "# shown: 9 of 9 calls, stack repairs: 2, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap "
                     "were left out\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* 13.5: stack and flamegraph keep threads apart with --per-thread: a root per thread ("thread
 * TID" without a name in the sidecar) above exactly the stacks --tid shows for it. */
Test(views, per_thread_roots_in_stack_and_flamegraph)
{
    char *p = write_trace();
    const char *both[] = {tr_bin(), "stack", p, "--format", "folded", "--per-thread", NULL};
    struct tr_out r = tr_run(both);
    cr_assert_eq(r.code, 0, "%s", r.e);
    for (int k = 0; k < 2; k++) {
        const char *tid = k ? "200" : "100";
        const char *one[] = {tr_bin(), "stack", p, "--format", "folded", "--tid", tid, NULL};
        struct tr_out o = tr_run(one);
        cr_assert_eq(o.code, 0, "%s", o.e);
        /* every line of --tid's output, prefixed with the thread's root */
        for (char *line = o.o; *line;) {
            char *nl = strchr(line, '\n');
            char want[256];
            snprintf(want, sizeof want, "thread %s;%.*s\n", tid, (int)(nl - line), line);
            cr_assert(strstr(r.o, want), "no '%s' in:\n%s", want, r.o);
            line = nl + 1;
        }
        tr_out_free(&o);
    }
    for (char *line = r.o; *line; line = strchr(line, '\n') + 1)
        cr_assert(strncmp(line, "thread 100;", 11) == 0 || strncmp(line, "thread 200;", 11) == 0,
                  "a stack without its thread: %s", line);
    tr_out_free(&r);
    const char *svg[] = {tr_bin(), "flamegraph", p, "-o", "-", "--per-thread", NULL};
    r = tr_run(svg);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "<title>thread 100 (") && strstr(r.o, "<title>thread 200 ("), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* 13.5: --min-duration takes units; a bare number is nanoseconds, as it always was. The same
 * calls for 300, 300ns, 0.3us; 1us and 1000 agree; bad values are refused. */
Test(views, min_duration_takes_units)
{
    char *p = write_trace();
    const char *spellings[][2] = {
        {"300", "300ns"}, {"300", "0.3us"}, {"1000", "1us"}, {"1000", "0.001ms"}};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        const char *a[] = {tr_bin(), "replay", p, "--min-duration", spellings[i][0], NULL};
        const char *b[] = {tr_bin(), "replay", p, "--min-duration", spellings[i][1], NULL};
        struct tr_out ra = tr_run(a), rb = tr_run(b);
        cr_assert_eq(ra.code, 0, "%s", ra.e);
        cr_assert_eq(rb.code, 0, "%s", rb.e);
        cr_assert_str_eq(ra.o, rb.o, "%s vs %s", spellings[i][0], spellings[i][1]);
        tr_out_free(&ra);
        tr_out_free(&rb);
    }
    const char *big[] = {tr_bin(), "replay", p, "--min-duration", "1s", NULL};
    struct tr_out r = tr_run(big);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "# shown: 0 of "), "%s", r.o);
    tr_out_free(&r);
    const char *bad[] = {tr_bin(), "replay", p, "--min-duration", "10 us", NULL};
    r = tr_run(bad);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: replay: --min-duration: bad time '10 us' (e.g. 10us, 2.5ms, "
                          "1s; bare: ns)\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* C++ names in the sidecar are demangled (libstdc++'s __cxa_demangle) and shown short by
 * default (namespaces, classes and name: no return type, template arguments or parameters),
 * in full with --names full, as written with --names mangled or SLEDTRACE_NO_DEMANGLE; a name
 * that is not a valid mangling stays as written. */
Test(views, cxx_names_demangled)
{
    char *p = write_trace();
    tr_write_syms(
        p, "sledtrace-syms\t1\nf\t0\t1\t0x1000\tmain\nf\t0\t2\t0x1100\t_ZNK2ns3BoxIiE3getEv\n"
           "f\t0\t3\t0x1200\t_Z12plain_c_likei\nf\t0\t4\t0x1300\t_Zbroken\n");
    const char *argv[] = {tr_bin(), "stack", p, "--format", "folded", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "main;ns::Box::get;plain_c_like "), "%s", r.o);
    cr_assert(strstr(r.o, "main;ns::Box::get;_Zbroken "), "%s", r.o);
    cr_assert_null(strstr(r.o, "_ZNK2ns"), "%s", r.o);
    tr_out_free(&r);
    const char *full[] = {tr_bin(), "stack", p, "--format", "folded", "--names", "full", NULL};
    r = tr_run(full);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "main;ns::Box<int>::get() const;plain_c_like(int) "), "%s", r.o);
    cr_assert(strstr(r.o, "main;ns::Box<int>::get() const;_Zbroken "), "%s", r.o);
    tr_out_free(&r);
    const char *mangled[] = {tr_bin(), "stack", p, "--format", "folded", "--names=mangled", NULL};
    r = tr_run(mangled);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "main;_ZNK2ns3BoxIiE3getEv;_Z12plain_c_likei "), "%s", r.o);
    tr_out_free(&r);
    const char *bad[] = {tr_bin(), "stack", p, "--names", "pretty", NULL};
    r = tr_run(bad);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e,
                     "sledtrace: stack: --names must be short, full or mangled, not 'pretty'\n");
    tr_out_free(&r);
    setenv("SLEDTRACE_NO_DEMANGLE", "1", 1);
    r = tr_run(argv);
    unsetenv("SLEDTRACE_NO_DEMANGLE");
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "main;_ZNK2ns3BoxIiE3getEv;_Z12plain_c_likei "), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* With --tid the summary counts that thread only (its 6 calls; the gap is thread 200's). */
Test(views, replay_filters)
{
    char *p = write_trace();
    const char *argv0[] = {tr_bin(), "replay",         p,     "--tid",    "100", "--depth",
                           "2",      "--min-duration", "300", "--filter", "*",   NULL};
    struct tr_out r = tr_run(argv0);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000100             main {\n"
                     "100      0.000000200               f {\n"
                     "100      0.000000500      300ns    } f\n"
                     "100      0.000000600               f {\n"
                     "100      0.000001100      500ns    } f\n"
                     "100      0.000002100    2.000us  } main\n"
                     "# shown: 3 of 6 calls, stack repairs: 2, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# filters: --filter '*' --max-depth 2 --min-duration 300ns: 3 of 6 calls "
                     "shown\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv[] = {
        tr_bin(),         "replay", p,          "--tid", "100",     "--depth", "2",
        "--min-duration", "300",    "--filter", "*",     "--order", "exit",    NULL};
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "100      0.000000200      300ns    f\n"
                     "100      0.000000600      500ns    f\n"
                     "100      0.000000100    2.000us  main\n"
                     "# shown: 3 of 6 calls, stack repairs: 2, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# filters: --filter '*' --max-depth 2 --min-duration 300ns: 3 of 6 calls "
                     "shown\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "replay", p, "--filter=#*", "--order=exit", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    /* Loss lines are per thread: only --tid hides them. */
    cr_assert_str_eq(r.o,
                     "100      0.000000800      300ns        #9 [repaired]\n"
                     "200      0.000000800 -- 5 events lost --\n"
                     "# shown: 1 of 9 calls, stack repairs: 2, unmatched exits: 0, "
                     "unfinished frames: 0\n"
                     "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap "
                     "were left out\n"
                     "# filters: --filter '#*': 1 of 9 calls shown\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

static const char FOLDED_TIME[] = "f 300\n"
                                  "f;g 100\n"
                                  "g 50\n"
                                  "main 1200\n"
                                  "main;f 300\n"
                                  "main;f;g 100\n"
                                  "main;f;h 100\n"
                                  "main;f;h;#9 300\n";

Test(views, stack_folded_golden)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "stack", p, "--format", "folded", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, FOLDED_TIME);
    /* The self-time weights add up to exactly the time covered by closed top-level frames. */
    uint64_t sum = 0;
    for (const char *l = r.o; *l;) {
        const char *nl = strchr(l, '\n'), *sp = nl;
        cr_assert(nl);
        while (sp > l && sp[-1] != ' ')
            sp--;
        sum += strtoull(sp, NULL, 10);
        l = nl + 1;
    }
    cr_assert_eq(sum, TOP_LEVEL_NS, "sum %" PRIu64, sum);
    cr_assert(strstr(r.e, "# stacks: 8, total weight: 2450ns\n"), "%s", r.e);
    cr_assert(strstr(r.e, "stack repairs: 2"), "%s", r.e);
    tr_out_free(&r);

    const char *argv2[] = {tr_bin(), "stack", p, "--format=folded", "--by", "count", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "f 1\nf;g 1\ng 1\nmain 1\nmain;f 2\nmain;f;g 1\nmain;f;h 1\n"
                          "main;f;h;#9 1\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

Test(views, stack_text_golden)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "stack", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o,
                     "        self      calls       %  stack\n"
                     "     1.200us          1  48.98%  main\n"
                     "       300ns          1  12.24%  f\n"
                     "       300ns          2  12.24%  main;f\n"
                     "       300ns          1  12.24%  main;f;h;#9\n"
                     "       100ns          1   4.08%  f;g\n"
                     "       100ns          1   4.08%  main;f;g\n"
                     "       100ns          1   4.08%  main;f;h\n"
                     "        50ns          1   2.04%  g\n"
                     "# stacks: 8, total weight: 2450ns\n"
                     "# calls: 9, stack repairs: 2, unmatched exits: 0, unfinished frames: 0\n"
                     "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap were "
                     "left out\n"
                     "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
                     "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *q = strstr(s, needle); q; q = strstr(q + 1, needle))
        n++;
    return n;
}

Test(views, flamegraph_svg)
{
    char *p = write_trace();
    char *svg = tg_tmpname(".svg");
    const char *argv[] = {tr_bin(), "flamegraph", p, "-o", svg, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    tr_out_free(&r);

    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])\" '%s'",
             svg);
    cr_assert_eq(system(cmd), 0, "not well-formed XML: %s", svg);

    char *s = tr_slurp(svg);
    /* all, main, main;f, main;f;g, main;f;h, main;f;h;#9, f, f;g, g (h on thread 200 never
     * closed: no frame). One <title> per frame. */
    cr_assert_eq(count(s, "<g class=\"f\""), 9);
    cr_assert_eq(count(s, "<title>"), 9);
    cr_assert(strstr(s, "<title>all (2.450us, 100.00%)</title>"), "%s", s);
    cr_assert(strstr(s, "<title>main (2.000us, 81.63%)</title>"), "%s", s);
    cr_assert(strstr(s, "<title>#9 (300ns, 12.24%)</title>"), "%s", s);
    cr_assert(strstr(s, "<script"));
    cr_assert(strstr(s, "prompt("));
    cr_assert(!strstr(s, "http://") || !strstr(strstr(s, "http://") + 1, "http://"),
              "only the SVG namespace may name a URL");
    free(s);

    const char *argv2[] = {tr_bin(), "flamegraph", p, "--by=count", "--output", svg, NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    tr_out_free(&r);
    cr_assert_eq(system(cmd), 0, "not well-formed XML: %s", svg);
    s = tr_slurp(svg);
    cr_assert(strstr(s, "<title>all (9 calls, 100.00%)</title>"), "%s", s);
    cr_assert(strstr(s, "<title>main (6 calls, 66.67%)</title>"), "%s", s);
    free(s);
    unlink(svg);
    free(svg);
    tr_remove_trace(p);
}

/* replay --from/--to: the window of account_window_clips, TSC [1150, 1950] (0.000000250 to
 * 0.000001050 as replay shows times). Entry order: main and f open at the window's start
 * ("{ [clipped]", without the argument g logged), the calls open at its end close there; each
 * line closing a clipped call says [clipped]. Exit order: the same calls and durations. With
 * --min-duration 300 the durations are the window's part: thread 100's first f (250 ns inside)
 * hides g, and #9 (250 ns inside, 300 in all) is hidden; the lookahead of a clipped frame
 * starts at the record that reached the window (thread 200's f: 300 ns, shown). */
Test(views, replay_window_clips)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "replay", p,    "--from", "250",
                          "--to",   "1.05us", NULL, NULL,     NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "100      0.000000250             main { [clipped]\n"
             "100      0.000000250               f { [clipped]\n"
             "100      0.000000300      100ns      g(arg1=0x2a)\n"
             "100      0.000000500      250ns    } f [clipped]\n"
             "100      0.000000600               f {\n"
             "100      0.000000700                 h {\n"
             "100      0.000000800                   #9 {\n"
             "100      0.000001050      250ns        } #9 [clipped]\n"
             "100      0.000001050      350ns      } h [clipped]\n"
             "100      0.000001050      450ns    } f [clipped]\n"
             "100      0.000001050      800ns  } main [clipped]\n"
             "200      0.000000250             f { [clipped]\n"
             "200      0.000000250      100ns    g\n"
             "200      0.000000550      300ns  } f [clipped]\n"
             "200      0.000000700             h {\n"
             "200      0.000000800          -  } h [gap]\n"
             "200      0.000000800 -- 5 events lost --\n"
             "200      0.000000900       50ns  g\n"
             "# shown: 9 of 9 calls, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
             "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap were left out\n"
             "# window: calls clipped at its edges: 6\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    argv[7] = "--order";
    argv[8] = "exit";
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "100      0.000000300      100ns      g(arg1=0x2a)\n"
             "100      0.000000250      250ns    f [clipped]\n"
             "100      0.000000800      250ns        #9 [clipped]\n"
             "100      0.000000700      350ns      h [clipped]\n"
             "100      0.000000600      450ns    f [clipped]\n"
             "100      0.000000250      800ns  main [clipped]\n"
             "200      0.000000250      100ns    g\n"
             "200      0.000000250      300ns  f [clipped]\n"
             "200      0.000000800 -- 5 events lost --\n"
             "200      0.000000900       50ns  g\n"
             "# shown: 9 of 9 calls, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
             "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap were left out\n"
             "# window: calls clipped at its edges: 6\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    argv[7] = "--min-duration";
    argv[8] = "300";
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "100      0.000000250             main { [clipped]\n"
             "100      0.000000600               f {\n"
             "100      0.000000700                 h {\n"
             "100      0.000001050      350ns      } h [clipped]\n"
             "100      0.000001050      450ns    } f [clipped]\n"
             "100      0.000001050      800ns  } main [clipped]\n"
             "200      0.000000250             f { [clipped]\n"
             "200      0.000000550      300ns  } f [clipped]\n"
             "200      0.000000800 -- 5 events lost --\n"
             "# shown: 4 of 9 calls, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
             "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap were left out\n"
             "# window: calls clipped at its edges: 6\n"
             "# filters: --min-duration 300ns: 4 of 9 calls shown\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or an older "
             "sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A window with no record of a thread inside it, TSC [2100, 2900]: thread 100's main (open
 * from 1000 to 3000; f's exit at 2000 is its last record before) spans it and is shown clipped
 * at both edges, 800 ns, by every command, entered (replay's '{', the stack's node, Chrome's
 * start, ts 2.2 us on the step grid) before it closes; thread 200's records all lie before. */
Test(views, window_inside_one_call)
{
    char *p = write_trace();
    const char *st[] = {tr_bin(), "stack", p, "--format=folded", "--from=1.2us", "--to=2us", NULL};
    struct tr_out r = tr_run(st);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "main 800\n");
    cr_assert(strstr(r.e, "# window: calls clipped at its edges: 1\n"), "%s", r.e);
    tr_out_free(&r);
    const char *rp[] = {tr_bin(), "replay", p, "--from=1.2us", "--to=2us", NULL};
    r = tr_run(rp);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strncmp(r.o,
                      "100      0.000001200             main { [clipped]\n"
                      "100      0.000002000      800ns  } main [clipped]\n"
                      "# shown: 1 of 1 calls,",
                      strlen("100      0.000001200             main { [clipped]\n"
                             "100      0.000002000      800ns  } main [clipped]\n"
                             "# shown: 1 of 1 calls,")) == 0,
              "%s", r.o);
    tr_out_free(&r);
    const char *ch[] = {tr_bin(),       "convert",  p,   "--format=chrome",
                        "--from=1.2us", "--to=2us", NULL};
    r = tr_run(ch);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(
        strstr(r.o,
               "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":2.199951171875,\"dur\":0.800048828125,"
               "\"cat\":"
               "\"function\",\"name\":\"main\",\"args\":{\"id\":1,\"clipped\":\"both\"}}"),
        "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* convert --format chrome --from/--to: the window of account_window_clips, TSC [1150, 1950]
 * (ts 1.25 to 2.05 us: time 0 is 1 us before the base, 900). Calls crossing an edge keep their
 * part inside and say which edges in args.clipped (main both, thread 100's first f and thread
 * 200's f start, the second f, h and #9 end); otherData counts them. Thread 200's h still closes
 * at the gap (1600) and the loss marker at 1700 is inside; nothing before 1150 is written. */
Test(views, chrome_window_clips)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "convert", p,      "--format", "chrome",
                          "--from", "250",     "--to", "1.05us",   NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o, "{\"traceEvents\":[\n"
             "{\"ph\":\"M\",\"pid\":100,\"tid\":100,\"ts\":1,\"name\":\"process_name\",\"args\":{"
             "\"name\":\"prog\"}},\n"
             "{\"ph\":\"M\",\"pid\":100,\"tid\":100,\"ts\":1,\"name\":\"thread_name\",\"args\":{"
             "\"name\":\"thread 100\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.300048828125,\"dur\":0.099853515625,"
             "\"cat\":\"function\",\"name\":\"g\",\"args\":{\"id\":3,\"arg\":42}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.250244140625,\"dur\":0.249755859375,"
             "\"cat\":\"function\",\"name\":\"f\",\"args\":{\"id\":2,\"clipped\":\"start\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.800048828125,\"dur\":0.25,\"cat\":"
             "\"function\",\"name\":\"#9\",\"args\":{\"id\":9,\"clipped\":\"end\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.699951171875,\"dur\":0.350341796875,"
             "\"cat\":\"function\",\"name\":\"h\",\"args\":{\"id\":4,\"clipped\":\"end\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.60009765625,\"dur\":0.450439453125,"
             "\"cat\":\"function\",\"name\":\"f\",\"args\":{\"id\":2,\"clipped\":\"end\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":100,\"ts\":1.25,\"dur\":0.80078125,\"cat\":"
             "\"function\",\"name\":\"main\",\"args\":{\"id\":1,\"clipped\":\"both\"}},\n"
             "{\"ph\":\"M\",\"pid\":100,\"tid\":200,\"ts\":1,\"name\":\"thread_name\",\"args\":{"
             "\"name\":\"thread 200\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":200,\"ts\":1.250244140625,\"dur\":0.099853515625,"
             "\"cat\":\"function\",\"name\":\"g\",\"args\":{\"id\":3}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":200,\"ts\":1.25,\"dur\":0.300048828125,\"cat\":"
             "\"function\",\"name\":\"f\",\"args\":{\"id\":2,\"clipped\":\"start\"}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":200,\"ts\":1.699951171875,\"dur\":0.000244140625,"
             "\"cat\":\"function\",\"name\":\"h\",\"args\":{\"id\":4,\"closed\":\"gap\"}},\n"
             "{\"ph\":\"i\",\"pid\":100,\"tid\":200,\"ts\":1.800048828125,\"s\":\"t\",\"cat\":"
             "\"loss\",\"name\":\"events lost\",\"args\":{\"count\":5}},\n"
             "{\"ph\":\"X\",\"pid\":100,\"tid\":200,\"ts\":1.89990234375,\"dur\":0.050048828125,"
             "\"cat\":\"function\",\"name\":\"g\",\"args\":{\"id\":3}}\n"
             "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"calls\":10,\"stack_repairs\":0,"
             "\"unmatched_exits\":0,\"gaps\":1,\"events_lost\":5,\"times\":\"as measured\","
             "\"tracer_removed_ns\":0,\"clipped\":6}}\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    /* The size warning (exports/chrome_size_warning) estimates the file written: the whole
     * trace's (about 2.5 KB) scaled by the window's share of its span, 800 of 2100 ns (about
     * 1 KB). With the limit at 1500 bytes the window says nothing and the whole trace warns. */
    setenv("SLEDTRACE_CHROME_LIMIT", "1500", 1);
    r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    const char *whole[] = {tr_bin(), "convert", p, "--format", "chrome", NULL};
    r = tr_run(whole);
    unsetenv("SLEDTRACE_CHROME_LIMIT");
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    char want[1024];
    snprintf(want, sizeof want,
             "sledtrace: warning: %s: the Chrome JSON will be about 3 KiB, over the 2 KiB that "
             "JavaScript viewers load",
             p);
    cr_assert(strncmp(r.e, want, strlen(want)) == 0, "stderr: %s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* flamegraph --from/--to: stack_window_clips's stacks as frames, widths the clipped times (all
 * 1150 ns, main 800 ns, #9 250 ns); the summary on stderr says how many calls were clipped. */
Test(views, flamegraph_window_clips)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "flamegraph", p,      "-o",     "-",
                          "--from", "250",        "--to", "1.05us", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_eq(count(r.o, "<g class=\"f\""), 9);
    cr_assert(strstr(r.o, "<title>all (1.150us, 100.00%)</title>"), "%s", r.o);
    cr_assert(strstr(r.o, "<title>main (800ns, 69.57%)</title>"), "%s", r.o);
    cr_assert(strstr(r.o, "<title>#9 (250ns, 21.74%)</title>"), "%s", r.o);
    cr_assert(strstr(r.e, "# calls: 9, stack repairs: 0, unmatched exits: 0, unfinished "
                          "frames: 0\n"),
              "%s", r.e);
    size_t n = strlen(r.e), k = strlen("# window: calls clipped at its edges: 6\n");
    cr_assert(n >= k && strcmp(r.e + n - k, "# window: calls clipped at its edges: 6\n") == 0, "%s",
              r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Frame labels (issue 13): they fit their frame at 7.5 px per character (12px monospace fonts
 * advance 7.2 px; at 7 a cut label ran past its frame), and characters are counted, not bytes,
 * as the page's script counts them when it redraws after a zoom. At 1 GHz, of main's 1000 ns:
 * a 61-character name for 300 ns (354 px: 44 characters and ".."), a UTF-8 name of 29
 * characters in 34 bytes for 200 ns (236 px: 30 characters fit, the whole name). The
 * viewers-chromium test measures the same in Chromium. */
Test(views, flamegraph_labels_fit_and_count_characters)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 1, 0, 0);
    tg_func(&g, 1, STF_ENTER, 0);
    tg_func(&g, 2, STF_ENTER, 0);
    tg_func(&g, 2, STF_EXIT, 300);
    tg_func(&g, 3, STF_ENTER, 300);
    tg_func(&g, 3, STF_EXIT, 500);
    tg_func(&g, 1, STF_EXIT, 1000);
    tg_block_end(&g);
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    tr_write_syms(p,
                  "sledtrace-syms\t1\nf\t0\t1\t0x1000\tmain\n"
                  "f\t0\t2\t0x1100\tcompute_the_checksum_of_every_block_in_the_input_buffer_twice\n"
                  "f\t0\t3\t0x1200\tgr\xc3\xb6\xc3\x9f"
                  "e_\xc3\xbc"
                  "ber_alle_str\xc3\xb6me_z\xc3\xa4hlen\n");
    const char *argv[] = {tr_bin(), "flamegraph", p, "-o", "-", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "<title>compute_the_checksum_of_every_block_in_the_input_buffer_twice "
                          "(300ns, 30.00%)</title><rect x=\"10.00\" y=\"44\" width=\"354.00\""),
              "%s", r.o);
    cr_assert(strstr(r.o, ">compute_the_checksum_of_every_block_in_the_i..</text>"), "%s", r.o);
    cr_assert(strstr(r.o, " width=\"236.00\" height=\"15\" rx=\"2\" fill=\""), "%s", r.o);
    cr_assert(strstr(r.o, ">gr\xc3\xb6\xc3\x9f"
                          "e_\xc3\xbc"
                          "ber_alle_str\xc3\xb6me_z\xc3\xa4hlen</text>"),
              "%s", r.o);
    cr_assert(strstr(r.o, "Math.floor((w-6)/7.5),a=Array.from(n)"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

Test(views, truncated_file_errors)
{
    char *p = write_trace();
    cr_assert_eq(truncate(p, 20), 0);
    char *svg = tg_tmpname(".svg");
    const char *cmds[][6] = {
        {tr_bin(), "replay", p, NULL},
        {tr_bin(), "stack", p, NULL},
        {tr_bin(), "flamegraph", p, "-o", svg, NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        struct tr_out r = tr_run(cmds[i]);
        cr_assert_eq(r.code, 1, "%s: exit %d", cmds[i][1], r.code);
        cr_assert_str_eq(r.o, "");
        cr_assert(strncmp(r.e, "sledtrace: ", 11) == 0 && strstr(r.e, p) && strstr(r.e, "offset") &&
                      count(r.e, "\n") == 1,
                  "%s: %s", cmds[i][1], r.e);
        tr_out_free(&r);
    }
    unlink(svg);
    free(svg);
    tr_remove_trace(p);
}

Test(views, help_and_usage)
{
    const char *names[] = {"replay", "stack", "flamegraph"};
    for (size_t i = 0; i < 3; i++) {
        const char *argv[] = {tr_bin(), names[i], "--help", NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0);
        cr_assert(strncmp(r.o, "usage: sledtrace ", 17) == 0, "%s", r.o);
        tr_out_free(&r);
    }
    const char *bad[][5] = {
        {tr_bin(), "replay", "x.fdr", "--depth", NULL},
        {tr_bin(), "stack", "x.fdr", "--by", "size"},
        {tr_bin(), "flamegraph", "x.fdr", NULL, NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        struct tr_out r = tr_run(bad[i]);
        cr_assert_eq(r.code, 2, "%s", r.e);
        cr_assert_eq(count(r.e, "\n"), 1, "%s", r.e);
        tr_out_free(&r);
    }
}

/* Progress on a terminal only: a 6 MB trace read by account, stack, replay and convert --format
 * fdr under script(1) (stderr is a pty) shows "sledtrace: reading: 100%"; the same commands
 * with stderr going to a pipe print no progress at all, and replay, whose lines go to the
 * same terminal while it reads, prints none either. */
Test(views, progress_only_on_a_terminal)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    uint64_t tsc = 1000;
    for (int b = 0; b < 6; b++) {
        tg_block_begin(&g, 100, 100, 0, tsc);
        for (int i = 0; i < 62000; i++) {
            tg_func(&g, 2, STF_ENTER, tsc += 10);
            tg_func(&g, 2, STF_EXIT, tsc += 10);
        }
        tg_block_end(&g);
    }
    cr_assert_gt(g.len, (size_t)(4 << 20));
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    char *fdr = tg_tmpname(".fdr");
    char convert[600];
    snprintf(convert, sizeof convert, "convert --format fdr -o %s", fdr);
    const char *cmds[] = {"account", "stack", "replay", convert};
    for (int c = 0; c < 4; c++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s %s >/dev/null", tr_bin(), cmds[c], p);
        const char *argv[] = {"/usr/bin/script", "-qec", cmd, "/dev/null", NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s: %s", cmds[c], r.e);
        cr_assert(strstr(r.o, "sledtrace: reading: 100%"), "%s under a pty: %s", cmds[c], r.o);
        tr_out_free(&r);
        snprintf(cmd, sizeof cmd, "%s %s %s 2>&1 >/dev/null | cat", tr_bin(), cmds[c], p);
        const char *argv2[] = {"/bin/sh", "-c", cmd, NULL};
        r = tr_run(argv2);
        cr_assert_eq(r.code, 0);
        cr_assert_null(strstr(r.o, "reading:"), "%s piped: %s", cmds[c], r.o);
        tr_out_free(&r);
    }
    /* replay writes its lines while it reads: none when they go to the same terminal */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s replay %s --depth 1", tr_bin(), p);
    const char *argv3[] = {"/usr/bin/script", "-qec", cmd, "/dev/null", NULL};
    struct tr_out r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "# shown: "), "%s", r.o);
    cr_assert_null(strstr(r.o, "reading:"), "progress mixed into replay's terminal output");
    tr_out_free(&r);
    unlink(fdr);
    free(fdr);
    tr_remove_trace(p);
}

/* Streaming, item 5 of the analysis issue: memory grows with functions, threads and stack
 * depth, not with the trace. Two traces with the same functions, threads and depths, one 8
 * times longer (4 and 32 MiB, 2 threads, 1 MiB blocks, each a top-level call holding nested
 * calls): every analysis command's peak RSS on the long one stays within 2 MiB of the short
 * one's. (The old all-in-memory cursor needed ~120 B per record: 500 MB more here.) */
static char *sized_trace(int blocks)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    uint64_t tsc = 1000;
    for (int b = 0; b < blocks; b++) {
        tg_block_begin(&g, b % 2 ? 200 : 100, 100, 0, tsc);
        tg_func(&g, 1, STF_ENTER, tsc += 10);
        for (int i = 0; i < 20000; i++) {
            tg_func(&g, 2, STF_ENTER, tsc += 10);
            tg_func(&g, 3, STF_ENTER, tsc += 10);
            tg_func(&g, 3, STF_EXIT, tsc += 10);
            tg_func(&g, 2, STF_EXIT, tsc += 10);
        }
        tg_func(&g, 1, STF_EXIT, tsc += 10);
        tg_block_end(&g);
    }
    char *p = tr_write_trace(&g, true);
    tg_free(&g);
    return p;
}

Test(views, memory_does_not_grow_with_the_trace, .timeout = 120)
{
    char *small = sized_trace(4), *big = sized_trace(32);
    const char *cmds[][6] = {
        {"account", NULL},
        {"account", "--per-thread", NULL},
        {"stack", NULL},
        {"flamegraph", "-o", "/dev/null", NULL},
        {"graph", NULL},
        {"replay", "--depth", "1", NULL},
        {"convert", "--format", "chrome", "-o", "/dev/null", NULL},
        {"convert", "--format", "yaml", "-o", "/dev/null", NULL},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        long rss[2];
        for (int k = 0; k < 2; k++) {
            const char *argv[10] = {tr_bin(), cmds[c][0], k ? big : small};
            for (int a = 1; cmds[c][a]; a++)
                argv[2 + a] = cmds[c][a];
            struct tr_out r = tr_run(argv);
            cr_assert_eq(r.code, 0, "%s: %s", cmds[c][0], r.e);
            rss[k] = r.maxrss;
            tr_out_free(&r);
        }
        cr_assert_lt(rss[1], rss[0] + 2048, "%s %s: %ld KiB on 4 MiB, %ld KiB on 32 MiB",
                     cmds[c][0], cmds[c][1] ? cmds[c][1] : "", rss[0], rss[1]);
    }
    tr_remove_trace(small);
    tr_remove_trace(big);
}

/* Logged arguments (SLEDTRACE_ARGS, format/stf.h "Arguments"): replay shows every one as
 * uftrace's replay -a does (decimal, hex from 2^32 on, ", ..." past six), strings quoted with
 * their escapes and cuts (NULL, an unreadable pointer as its address, "..." after a cut one), the
 * return value after " = ", in both orders (a leaf on one line, a call with callees at its "}");
 * chrome puts the first in args.arg (a string in hex beyond 2^53, which JSON numbers cannot hold
 * exactly). */
static void argstr(struct tg *g, uint64_t tsc, unsigned argno, unsigned flags, const char *b)
{
    uint8_t p[64] = {(uint8_t)argno, (uint8_t)flags};
    size_t n = strlen(b);
    memcpy(p + STF_ARGSTR_HEAD, b, n);
    tg_typed(g, tsc, STF_TYPED_ARGSTR, p, (int32_t)(STF_ARGSTR_HEAD + n));
}

static void retval(struct tg *g, uint64_t tsc, uint64_t rax)
{
    uint64_t r[4] = {rax, 7, 8, 9};
    tg_typed(g, tsc, STF_TYPED_RETVAL, r, sizeof r);
}

Test(views, call_arguments_shown)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    tg_func(&g, MAIN, STF_ENTER_ARGS, 1000);
    tg_call_arg(&g, 0x123456789ull);
    tg_call_arg(&g, 5);
    tg_func(&g, F, STF_ENTER_ARGS, 1100);
    tg_call_arg(&g, 1ull << 60);
    retval(&g, 1200, 42);
    tg_func(&g, F, STF_EXIT, 1200);
    tg_func(&g, F, STF_ENTER_ARGS, 1210); /* strings: plain, NULL, unreadable, cut, escaped */
    for (uint64_t k = 1; k <= 7; k++)
        tg_call_arg(&g, k == 3 ? 0xdead0000beefull : k);
    argstr(&g, 1210, 1, 0, "GET /");
    argstr(&g, 1210, 2, STF_ARGSTR_NULL, "");
    argstr(&g, 1210, 3, STF_ARGSTR_FAULT, "");
    argstr(&g, 1210, 4, STF_ARGSTR_TRUNCATED, "abc");
    argstr(&g, 1210, 5, 0, "a\t\"b\x01");
    retval(&g, 1250, 0xffffffffffffffffull);
    tg_func(&g, F, STF_EXIT, 1250);
    retval(&g, 1300, 7);
    tg_func(&g, MAIN, STF_EXIT, 1300);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, true);
    tg_free(&g);
    const char *argv[] = {tr_bin(), "replay", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert_str_eq(
        r.o, "100      0.000000100             main(arg1=0x123456789, arg2=0x5) {\n"
             "100      0.000000200      100ns    f(arg1=0x1000000000000000) = 0x2a\n"
             "100      0.000000310       40ns    f(arg1=\"GET /\", arg2=NULL, arg3=0xdead0000beef, "
             "arg4=\"abc\"..., arg5=\"a\\t\\\"b\\x01\", arg6=0x6, ...) = 0xffffffffffffffff\n"
             "100      0.000000400      300ns  } main = 0x7\n"
             "# shown: 3 of 3 calls, stack repairs: 0, unmatched exits: 0, "
             "unfinished frames: 0\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
             "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "replay", p, "--order", "exit", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert_str_eq(
        r.o, "100      0.000000200      100ns    f(arg1=0x1000000000000000) = 0x2a\n"
             "100      0.000000310       40ns    f(arg1=\"GET /\", arg2=NULL, arg3=0xdead0000beef, "
             "arg4=\"abc\"..., arg5=\"a\\t\\\"b\\x01\", arg6=0x6, ...) = 0xffffffffffffffff\n"
             "100      0.000000100      300ns  main(arg1=0x123456789, arg2=0x5) = 0x7\n"
             "# shown: 3 of 3 calls, stack repairs: 0, unmatched exits: 0, "
             "unfinished frames: 0\n"
             "# times: as measured; this trace records no tracer cost (compiler-rt's, or "
             "an older sledtrace's), so each call's figures include the tracer's own\n");
    tr_out_free(&r);
    const char *argv3[] = {tr_bin(), "convert", p, "--format", "chrome", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "%s", r.e);

    cr_assert(strstr(r.o, "\"name\":\"main\",\"args\":{\"id\":1,\"arg\":4886718345,"
                          "\"call\":\"(arg1=0x123456789, arg2=0x5) = 0x7\"}}"),
              "%s", r.o);
    /* the first f: one argument (args.arg) and its value in args.call */
    cr_assert(
        strstr(r.o,
               "\"arg\":\"0x1000000000000000\",\"call\":\"(arg1=0x1000000000000000) = 0x2a\"}}"),
        "%s", r.o);
    /* the second f's strings, escaped twice (the call's own escapes, then JSON's) */
    cr_assert(strstr(r.o,
                     "\"call\":\"(arg1=\\\"GET /\\\", arg2=NULL, arg3=0xdead0000beef, "
                     "arg4=\\\"abc\\\"..., arg5=\\\"a\\\\t\\\\\\\"b\\\\x01\\\", arg6=0x6, ...) = "
                     "0xffffffffffffffff\"}}"),
              "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* --tid in stack, flamegraph and graph: only that thread's calls, other threads not read. */
Test(views, tid_option_in_stack_and_graph)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "stack", p, "--format", "folded", "--tid", "200", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert_str_eq(r.o, "f 300\nf;g 100\ng 50\n");
    cr_assert(strstr(r.e, "# calls: 3, stack repairs: 0"), "%s", r.e);
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "graph", p, "--tid=100", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "// calls: 6, stack repairs: 2, unmatched exits: 0, gaps: 0"), "%s", r.o);
    tr_out_free(&r);
    const char *argv3[] = {tr_bin(), "flamegraph", p, "-o", "/dev/null", "--tid", "1x", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: flamegraph: --tid needs an integer, not '1x'\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* 12.5: --tid naming no thread of the trace is an error in every command that takes it, not an
 * empty answer: exit 1, nothing on stdout, one line naming the trace's threads. */
Test(views, tid_not_in_the_trace_is_an_error)
{
    char *p = write_trace();
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want,
             "sledtrace: %s: no thread 999 in this trace (its threads: 100, 200)\n", p);
    const char *cmds[][8] = {
        {tr_bin(), "replay", p, "--tid", "999", NULL},
        {tr_bin(), "replay", p, "--tid", "999", "--min-duration", "1", NULL},
        {tr_bin(), "stack", p, "--tid", "999", NULL},
        {tr_bin(), "flamegraph", p, "-o", "-", "--tid", "999", NULL},
        {tr_bin(), "graph", p, "--tid", "999", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        struct tr_out r = tr_run(cmds[i]);
        cr_assert_eq(r.code, 1, "%s: exit %d", cmds[i][1], r.code);
        cr_assert_str_empty(r.o, "%s: stdout: %s", cmds[i][1], r.o);
        cr_assert_str_eq(r.e, want, "%s", cmds[i][1]);
        tr_out_free(&r);
    }
    tr_remove_trace(p);
}

/* --from / --to (window.h): times since the earliest record (TSC 900), so the window is TSC
 * [1150, 1950]. Calls crossing an edge count with their part inside it: main [1150,1950] (both
 * edges), thread 100's first f [1150,1400] and second f [1500,1950], h [1600,1950] and #9
 * [1700,1950]; thread 200's f [1150,1450] (start); g entered at 1150 is inside. The repairs at
 * 2000 lie after the window. */
Test(views, account_window_clips)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "account", p,          "--from", "250",
                          "--to",   "1.05us",  "--format", "csv",    NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(
        r.o,
        "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,median_ns,p90_ns,"
        "p99_ns,max_ns,unfinished\n"
        "f,2,3,1000,66.67,450,333,150,250,300,450,450,450,0\n"
        "main,1,1,800,53.33,100,800,100,800,800,800,800,800,0\n"
        "h,4,2,350,23.33,100,350,100,350,350,350,350,350,1\n"
        "g,3,3,250,16.67,250,83,83,50,100,100,100,100,0\n"
        "#9,9,1,250,16.67,250,250,250,250,250,250,250,250,0\n");
    cr_assert(strstr(r.e, "# functions: 5, calls: 9, stack repairs: 0, unmatched exits: 0, "
                          "unfinished frames: 0\n# window: calls clipped at its edges: 6\n"),
              "stderr: %s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* stack --from/--to: the window of account_window_clips, TSC [1150, 1950]. Self times of the
 * clipped calls: main 800 - f 250 - f 450 = 100; thread 100's f 250 - g 100 = 150 and f 450 -
 * h 350 = 100 (main;f: 250 in 2 calls); h 350 - #9 250 = 100; #9 250; thread 200's f 300 - g 100
 * = 200. Total 1150 = main's 800 + thread 200's f 300 and g 50. */
Test(views, stack_window_clips)
{
    char *p = write_trace();
    const char *argv[] = {tr_bin(), "stack", p, "--from", "250", "--to=1.05us", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "        self      calls       %  stack\n"
                          "       250ns          2  21.74%  main;f\n"
                          "       250ns          1  21.74%  main;f;h;#9\n"
                          "       200ns          1  17.39%  f\n"
                          "       100ns          1   8.70%  f;g\n"
                          "       100ns          1   8.70%  main\n"
                          "       100ns          1   8.70%  main;f;g\n"
                          "       100ns          1   8.70%  main;f;h\n"
                          "        50ns          1   4.35%  g\n"
                          "# stacks: 8, total weight: 1150ns\n"
                          "# calls: 9, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
                          "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap "
                          "were left out\n"
                          "# times: as measured; this trace records no tracer cost (compiler-rt's, "
                          "or an older sledtrace's), so each call's figures include the tracer's "
                          "own\n"
                          "# window: calls clipped at its edges: 6\n");
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    const char *fold[] = {tr_bin(), "stack", p,      "--format", "folded",
                          "--from", "250",   "--to", "1.05us",   NULL};
    r = tr_run(fold);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "f 200\nf;g 100\ng 50\nmain 100\nmain;f 250\nmain;f;g 100\n"
                          "main;f;h 100\nmain;f;h;#9 250\n");
    cr_assert_str_eq(r.e, "# stacks: 8, total weight: 1150ns\n"
                          "# calls: 9, stack repairs: 0, unmatched exits: 0, unfinished frames: 0\n"
                          "# gaps: 1 (5 events dropped by the runtime); 1 frames open at a gap "
                          "were left out\n"
                          "# times: as measured; this trace records no tracer cost (compiler-rt's, "
                          "or an older sledtrace's), so each call's figures include the tracer's "
                          "own\n"
                          "# window: calls clipped at its edges: 6\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* account --by-arg N: rows per function and value of its argument N (SLEDTRACE_ARGS), each
 * summing its calls; calls without the argument are counted in the footer only. f(1) twice
 * (10 and 5 ns, the second inside f(2), 20 ns), g and main without arguments. */
Test(views, account_by_arg)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    tg_func(&g, MAIN, STF_ENTER, 1000);
    tg_func(&g, F, STF_ENTER_ARGS, 1100);
    tg_call_arg(&g, 1);
    tg_func(&g, F, STF_EXIT, 1110);
    tg_func(&g, F, STF_ENTER_ARGS, 1200);
    tg_call_arg(&g, 2);
    tg_func(&g, F, STF_ENTER_ARGS, 1205);
    tg_call_arg(&g, 1);
    tg_func(&g, F, STF_EXIT, 1210);
    tg_func(&g, F, STF_EXIT, 1220);
    tg_func(&g, G, STF_ENTER, 1300);
    tg_func(&g, G, STF_EXIT, 1350);
    tg_func(&g, MAIN, STF_EXIT, 1400);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, true);
    tg_free(&g);
    const char *argv[] = {tr_bin(), "account", p, "--by-arg", "1", "--format", "csv", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    /* f(2): 20 ns, self 15; f(1): 10 and 5 ns, self 15, a mean of 7.5 rounded to 8 ns */
    cr_assert(strstr(r.o, "\nf(arg1=2),2,1,20,5.00,15,20,15,20,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nf(arg1=1),2,2,15,3.75,15,8,8,5,"), "%s", r.o);
    cr_assert(strstr(r.o, "main") == NULL, "%s", r.o);
    cr_assert(strstr(r.e, "2 calls that did not record it are left out"), "%s",
              r.e); /* csv: the footer on stderr */
    tr_out_free(&r);
    const char *bad[] = {tr_bin(), "account", p, "--by-arg", "7", NULL};
    r = tr_run(bad);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: account: --by-arg needs an argument number 1..6, not '7'\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* account --sort median, p99, mean, selfcall (issue 28.4): per-call keys, descending. f: 10,
 * 10 and 100 ns (median 10, p99 100, mean 40); g: 50 (all 50); h: 30 and 30 (all 30). The
 * mean and self/call columns show those figures (wall time 255 ns). */
Test(views, account_sort_per_call)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    uint64_t t = 1000;
    static const struct {
        uint32_t id;
        uint64_t dur;
    } calls[] = {{F, 10}, {F, 10}, {F, 100}, {G, 50}, {H, 30}, {H, 30}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        tg_func(&g, calls[i].id, STF_ENTER, t);
        tg_func(&g, calls[i].id, STF_EXIT, t += calls[i].dur);
        t += 5;
    }
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t2\t0x1100\tf\n"
                     "f\t0\t3\t0x1200\tg\nf\t0\t4\t0x1300\th\n");
    tg_free(&g);
    static const char *const keys[][2] = {
        {"median", "g,h,f"}, {"p99", "f,g,h"}, {"mean", "g,f,h"}, {"selfcall", "g,f,h"}};
    for (size_t k = 0; k < 4; k++) {
        const char *argv[] = {tr_bin(),   "account",  p,     "--sort",
                              keys[k][0], "--format", "csv", NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s", r.e);
        char order[64] = "";
        for (const char *l = strchr(r.o, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
            size_t n = strcspn(l + 1, ",");
            if (order[0])
                strcat(order, ",");
            strncat(order, l + 1, n);
        }
        cr_assert_str_eq(order, keys[k][1], "--sort %s: %s", keys[k][0], r.o);
        cr_assert(strstr(r.o, "\nf,2,3,120,47.06,120,40,40,10,10,100,100,100,0\n") &&
                      strstr(r.o, "\ng,3,1,50,19.61,50,50,50,50,50,50,50,50,0\n") &&
                      strstr(r.o, "\nh,4,2,60,23.53,60,30,30,30,30,30,30,30,0\n"),
                  "%s", r.o);
        tr_out_free(&r);
    }
    tr_remove_trace(p);
}

/* 28.8: a trace of a stripped binary (the sidecar lists its functions without names) says why
 * its functions show as #ID, and what names them; one unnamed function among named ones does
 * not. */
Test(views, stripped_binary_said)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 900);
    tg_func(&g, MAIN, STF_ENTER, 1000);
    tg_func(&g, F, STF_ENTER, 1100);
    tg_func(&g, F, STF_EXIT, 1200);
    tg_func(&g, MAIN, STF_EXIT, 1300);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    tr_write_syms(
        p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\t\nf\t0\t2\t0x1100\t\n");
    const char *argv[] = {tr_bin(), "account", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert_str_eq(r.e, "sledtrace: warning: /bin/prog: 2 of its 2 functions have no name (no "
                          "symbol table when traced: stripped?); they show as #ID; --syms with an "
                          "unstripped build of it names them\n");
    cr_assert(strstr(r.o, "  #2\n"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}
