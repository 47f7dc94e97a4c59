/* Corrected times (tools/vclock.h): crafted traces with a calibration record, where every
 * corrected figure is known by hand. The clock runs at 1 GHz, so a tick is a nanosecond, and the
 * calibration's gaps are whole ticks: E->E 3, E->X 4, X->E 5, X->X 6, E->T 2, T->E 7, spread
 * 0.25, clock step 1. The comments give each record's corrected time: raw - the gaps so far. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

enum { MAIN = 1, F = 2, G = 3, H = 4, K = 5, A = 6, B = 7 };

static void put_calib(struct tg *g, uint64_t tsc)
{
    struct stf_calib c = {.version = 1, .rounds = 9, .calls = 64, .step = 1};
    static const uint32_t gap[STF_GAPS] = {3, 4, 5, 6, 2, 7};
    for (int i = 0; i < STF_GAPS; i++) {
        c.gap[i] = gap[i] * 256;
        c.spread[i] = 64;
    }
    uint8_t p[STF_CALIB_PAYLOAD];
    stf_encode_calib(p, &c);
    tg_typed(g, tsc, STF_TYPED_CALIB, p, sizeof p);
}

/* Thread 100: main calls f (which calls g), f again (a leaf), and h, which tail-calls k.
 * Thread 200: the tracer's thread set-up, then a (measured 2 ticks: below zero once corrected)
 * and b. With calib false, the same records without the calibration record. */
static char *write_trace(bool calib)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    if (calib) { /* as the runtime writes it: a block of its own, before the program runs */
        tg_block_begin(&g, 100, 100, 0, 500);
        put_calib(&g, 500);
        tg_block_end(&g);
    }
    tg_block_begin(&g, 100, 100, 0, 990);
    tg_func(&g, MAIN, STF_ENTER, 1000);  /* 1000 */
    tg_func(&g, F, STF_ENTER, 1010);     /* 1007 (E->E 3) */
    tg_func(&g, G, STF_ENTER, 1020);     /* 1014 (3) */
    tg_func(&g, G, STF_EXIT, 1030);      /* 1020 (E->X 4): g lasts 6 */
    tg_func(&g, F, STF_EXIT, 1050);      /* 1034 (X->X 6): f lasts 27 */
    tg_func(&g, F, STF_ENTER, 1060);     /* 1039 (X->E 5) */
    tg_func(&g, F, STF_EXIT, 1070);      /* 1045 (4): f lasts 6 */
    tg_func(&g, H, STF_ENTER, 1080);     /* 1050 (5) */
    tg_func(&g, H, STF_TAIL_EXIT, 1090); /* 1058 (E->T 2): h lasts 8 */
    tg_func(&g, K, STF_ENTER, 1100);     /* 1061 (T->E 7) */
    tg_func(&g, K, STF_EXIT, 1120);      /* 1077 (4): k lasts 16 */
    tg_func(&g, MAIN, STF_EXIT, 1200);   /* 1151 (6): main lasts 151; 49 taken out */
    tg_block_end(&g);
    tg_block_begin(&g, 200, 100, 1, 4900);
    tg_func(&g, STF_ID_TRACER_SETUP, STF_ENTER, 4900); /* 4900: no gap, no kind */
    tg_func(&g, STF_ID_TRACER_SETUP, STF_EXIT, 4990);  /* 4990 */
    tg_func(&g, A, STF_ENTER, 5000);                   /* 5000 (the thread's first event) */
    tg_func(&g, A, STF_EXIT, 5002);                    /* 4998 (4): a lasts -2 */
    tg_func(&g, B, STF_ENTER, 5010);                   /* 5001 (5) */
    tg_func(&g, B, STF_EXIT, 5030);                    /* 5017 (4): b lasts 16; 13 taken out */
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\n"
                     "f\t0\t2\t0x1100\tf\nf\t0\t3\t0x1200\tg\nf\t0\t4\t0x1300\th\n"
                     "f\t0\t5\t0x1400\tk\nf\t0\t6\t0x1500\ta\nf\t0\t7\t0x1600\tb\n");
    return p;
}

static struct tr_out run(const char *const *argv)
{
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s: %s", argv[1], r.e);
    return r;
}

/* Every column of account's csv, corrected: durations lose exactly the gaps inside them, self
 * times what their callees' gaps leave, and a call measured shorter than the correction keeps its
 * sign in the sums (a's self is -2, shown 0 and marked, its mean and self/call too). f's mean
 * is (27 + 6) / 2 = 16.5, rounded to 17 ns, its self/call 27 / 2 = 13.5, rounded to 14 ns. */
Test(correct, account_csv_exact)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "name", NULL};
    struct tr_out r = run(argv);
    cr_assert_str_eq(r.o,
                     "function,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,"
                     "median_ns,p90_ns,p99_ns,max_ns,"
                     "unfinished,approx\n"
                     "[sledtrace] thread set-up,16777215,1,90,33.58,90,90,90,90,90,90,90,90,0,\n"
                     "a,6,1,0,0.00,0,0,0,0,0,0,0,0,0,total_ns;self_ns;mean_ns;selfcall_ns;min_ns;"
                     "median_ns;p90_ns;p99_ns;max_ns\n"
                     "b,7,1,16,5.97,16,16,16,16,16,16,16,16,0,\n"
                     "f,2,2,33,12.31,27,17,14,6,6,27,27,27,0,\n"
                     "g,3,1,6,2.24,6,6,6,6,6,6,6,6,0,\n"
                     "h,4,1,8,2.99,8,8,8,8,8,8,8,8,0,\n"
                     "k,5,1,16,5.97,16,16,16,16,16,16,16,16,0,\n"
                     "main,1,1,151,56.34,94,151,94,151,151,151,151,151,0,\n");
    /* share: of the corrected wall time, 151 + 117 (thread 200: 4900 to 5017) = 268 */
    cr_assert(strstr(r.e, "# share: of 268ns, the summed wall time of 2 threads"), "%s", r.e);
    cr_assert(strstr(r.e, "# times: corrected: 62ns of tracer time taken out (18.8% of the "
                          "330ns measured), about 9.0ns per call (+-0.2ns)"),
              "%s", r.e);
    tr_out_free(&r);

    /* --raw-times: the figures as measured, and the footer says so */
    const char *argv2[] = {tr_bin(), "account",     p,   "--format", "csv", "--sort",
                           "name",   "--raw-times", NULL};
    r = run(argv2);
    cr_assert(strstr(r.o, "\nmain,1,1,200,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nf,2,2,50,"), "%s", r.o);
    cr_assert(strstr(r.o, "\na,6,1,2,"), "%s", r.o);
    cr_assert(strstr(r.e, "# times: as measured (--raw-times): they include the tracer's own "
                          "cost, about 9.0ns per call (+-0.2ns)\n"),
              "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The text table marks the figures within the error with ~, and json lists them. */
Test(correct, approximate_figures_are_marked)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(), "account", p, "--sort", "name", NULL};
    struct tr_out r = run(argv);
    const char *a = strstr(r.o, "\n         1         ~0ns   0.00%         ~0ns         ~0ns");
    cr_assert(a, "%s", r.o);
    cr_assert(
        strstr(r.o, "        33ns  12.31%         27ns         17ns         14ns          6ns"),
        "%s", r.o);
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "account", p, "--format", "json", "--sort", "name", NULL};
    r = run(argv2);
    cr_assert(strstr(r.o, "\"function\": \"b\", \"id\": 7, \"count\": 1, \"total_ns\": 16, "
                          "\"share_pct\": 5.97, \"self_ns\": 16, \"mean_ns\": 16, \"selfcall_ns\": "
                          "16, \"min_ns\": 16, \"median_ns\": 16, "
                          "\"p90_ns\": 16, \"p99_ns\": 16, \"max_ns\": 16, \"unfinished\": 0, "
                          "\"approx\": []}"),
              "%s", r.o);
    cr_assert(strstr(r.o, "\"times\": \"corrected\", \"tracer_removed_ns\": 62}}"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* replay shows corrected durations and start times (from the first record, 990). */
Test(correct, replay_corrected)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(), "replay", p, "--tid", "100", NULL};
    struct tr_out r = run(argv);
    cr_assert_str_eq(r.o, "100      0.000000010             main {\n"
                          "100      0.000000017               f {\n"
                          "100      0.000000024        6ns      g\n"
                          "100      0.000000044       27ns    } f\n"
                          "100      0.000000049        6ns    f\n"
                          "100      0.000000060        8ns    h\n"
                          "100      0.000000071       16ns    k\n"
                          "100      0.000000161      151ns  } main\n"
                          "# shown: 6 of 6 calls, stack repairs: 0, unmatched exits: 0, "
                          "unfinished frames: 0\n"
                          "# times: corrected: 49ns of tracer time taken out, about 9.0ns per "
                          "call (+-0.2ns); ~ marks a figure within that error or the clock's "
                          "step; --raw-times shows them as measured\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* stack: the weights under main add up to its corrected duration (151); a's -2 is in thread
 * 200's sums but weighs 0, and a stack of no weight is not listed. */
Test(correct, stack_weights_add_up)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(), "stack", p, "--format=folded", NULL};
    struct tr_out r = run(argv);
    cr_assert_str_eq(r.o, "[sledtrace] thread set-up 90\n"
                          "b 16\n"
                          "main 94\n"
                          "main;f 27\n"
                          "main;f;g 6\n"
                          "main;h 8\n"
                          "main;k 16\n");
    cr_assert(strstr(r.e, "# times: corrected: 62ns of tracer time taken out"), "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The chrome export: corrected times, still nested (the checker in tests/format/chromecheck.c
 * runs in the exports suite; here, the numbers), and otherData says what was taken out. */
Test(correct, chrome_corrected)
{
    char *p = write_trace(true);
    const char *argv[] = {tr_bin(), "convert", p, "--format", "chrome", NULL};
    struct tr_out r = run(argv);
    cr_assert(strstr(r.o, "\"name\":\"g\""), "%s", r.o);
    cr_assert(strstr(r.o, "\"dur\":0.006103515625,\"cat\":\"function\",\"name\":\"g\""), "%s", r.o);
    cr_assert(strstr(r.o, "\"times\":\"corrected\",\"tracer_removed_ns\":62}}"), "%s", r.o);
    /* main: 151 ns */
    cr_assert(strstr(r.o, "\"dur\":0.15087890625,\"cat\":\"function\",\"name\":\"main\""), "%s",
              r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Without a calibration record the times are as measured, and every command says so. */
Test(correct, no_calibration_read_as_measured)
{
    char *p = write_trace(false);
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "name", NULL};
    struct tr_out r = run(argv);
    cr_assert(strstr(r.o, "\nmain,1,1,200,"), "%s", r.o);
    cr_assert(strstr(r.o, ",approx") == NULL, "%s", r.o);
    cr_assert(strstr(r.e, "# times: as measured; this trace records no tracer cost"), "%s", r.e);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The line of `sledtrace info` on p starting with prefix, its newline included. */
static char *info_line(const char *p, const char *prefix)
{
    const char *argv[] = {tr_bin(), "info", p, NULL};
    struct tr_out r = run(argv);
    const char *l = strstr(r.o, prefix);
    cr_assert(l && l[-1] == '\n', "no '%s' line in:\n%s", prefix, r.o);
    char *line = strndup(l, strcspn(l, "\n") + 1);
    cr_assert_not_null(line);
    tr_out_free(&r);
    return line;
}

/* info shows the calibration, each gap at the header's frequency (1 GHz: ticks are ns), and
 * does not count it as an event of thread 100 (2 blocks, 23 records, 6 calls, 0 events). */
Test(correct, info_shows_the_tracer_cost)
{
    char *p = write_trace(true);
    char *line = info_line(p, "tracer cost:");
    cr_assert_str_eq(line, "tracer cost:   entry->exit 4.0 ns (+-0.2), exit->entry 5.0 ns (+-0.2), "
                           "entry->entry 3.0 ns (+-0.2), exit->exit 6.0 ns (+-0.2), entry->tail "
                           "2.0 ns (+-0.2), tail->entry 7.0 ns (+-0.2) (calibrated at start-up: "
                           "9 rounds of 64 calls; clock step 1 tick)\n");
    free(line);
    line = info_line(p, "         100        100");
    cr_assert(strncmp(line, "         100        100        2           23            6        0 ",
                      64) == 0,
              "%s", line);
    free(line);
    tr_remove_trace(p);

    p = write_trace(false);
    line = info_line(p, "tracer cost:");
    cr_assert_str_eq(line, "tracer cost:   not recorded (times are as measured)\n");
    free(line);
    tr_remove_trace(p);
}

/* A calibration record after the first function record is not the runtime's (it writes its
 * own first): info, like the analyses (vclock_find), reads the trace as measured. */
Test(correct, info_ignores_a_late_calibration)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 990);
    tg_func(&g, MAIN, STF_ENTER, 1000);
    put_calib(&g, 1005);
    tg_func(&g, MAIN, STF_EXIT, 1200);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    char *line = info_line(p, "tracer cost:");
    cr_assert_str_eq(line, "tracer cost:   not recorded (times are as measured)\n");
    free(line);
    tr_remove_trace(p);
}
