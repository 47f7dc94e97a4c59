/* Golden outputs of every trace-reading subcommand on real traces checked in beside this file,
 * each with its .syms, recorded by libsledtrace.so:
 *   real-mt.fdr      the bench program fib_mt (2 threads x fib(6): 2 x 25 fib calls);
 *   real-events.fdr  data/src/realev.cpp: C++ exceptions and longjmp leaving frames open, real
 *                    tail calls, a signal handler calling traced functions, custom and typed
 *                    events, C++ names, a second thread;
 *   real-lossy.fdr   data/src/reallossy.c under SLEDTRACE_POLICY=discard with two 4 KiB
 *                    chunks: a real loss marker.
 * scripts/record-test-traces.sh recorded the last two (once: timing differs per run). Each line of data/golden/commands.txt is
 * NAME|ARGS; the tool's stdout for ARGS, run in data/, must equal data/golden/NAME.out byte for
 * byte. scripts/update-goldens.sh rewrites the goldens after an intended output change. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *data_dir(void)
{
    const char *d = getenv("SLEDTRACE_DATA");
    cr_assert(d && *d, "SLEDTRACE_DATA not set");
    return d;
}

/* info's last two lines measure this run (decode time, peak memory): their values are blanked
 * on both sides. */
static void mask_measured(char *s)
{
    static const char *const keys[] = {"decode time:", "peak memory:"};
    for (int k = 0; k < 2; k++) {
        char *p = strstr(s, keys[k]);
        if (p && (p == s || p[-1] == '\n'))
            for (p += strlen(keys[k]); *p && *p != '\n'; p++)
                *p = '#';
    }
}

Test(golden, every_command_matches)
{
    cr_assert_eq(chdir(data_dir()), 0);
    char *list = tr_slurp("golden/commands.txt");
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char *bar = strchr(line, '|');
        cr_assert(bar, "commands.txt: no '|' in \"%s\"", line);
        *bar = '\0';
        const char *argv[16] = {tr_bin()};
        int argc = 1;
        char *save = NULL;
        for (char *a = strtok_r(bar + 1, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
            cr_assert_lt(argc, 15);
            argv[argc++] = a;
        }
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s: exit %d: %s", line, r.code, r.e);
        char path[256];
        snprintf(path, sizeof path, "golden/%s.out", line);
        char *want = tr_slurp(path);
        mask_measured(r.o);
        mask_measured(want);
        cr_assert_str_eq(r.o, want, "%s: output differs from %s", line, path);
        free(want);
        tr_out_free(&r);
        n++;
    }
    cr_assert_eq(n, 29);
    free(list);
}

/* The numbers the program knows, independent of the goldens: 2 x 25 fib calls, 2 workers. */
Test(golden, known_call_counts)
{
    cr_assert_eq(chdir(data_dir()), 0);
    const char *argv[] = {tr_bin(), "account", "real-mt.fdr", "--format", "csv", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "\nfib,1,50,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nworker,3,2,"), "%s", r.o);
    cr_assert(strstr(r.o, "\nmain,2,1,"), "%s", r.o);
    tr_out_free(&r);
}

/* real-events.fdr: the calls realev.cpp makes (its header lists them), and the 12 repairs its
 * two throws and two longjmps need (3 frames each). */
Test(golden, real_events_known_counts)
{
    cr_assert_eq(chdir(data_dir()), 0);
    const char *argv[] = {tr_bin(), "account", "real-events.fdr", "--format", "csv", "--names",
                          "full",   NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    static const struct {
        const char *name;
        int calls;
    } want[] = {
        {"main", 1},
        {"rt::chain(long)", 3},
        {"rt::tailer(long)", 3},
        {"rt::leaf(long)", 7},
        {"rt::catcher(int)", 4},
        {"rt::thrower1(int)", 4},
        {"rt::thrower2(int)", 4},
        {"rt::thrower3(int)", 4},
        {"rt::jumper(int)", 3},
        {"rt::deep1(int)", 3},
        {"rt::deep2(int)", 3},
        {"rt::deep3(int)", 3},
        {"rt::sigouter(long)", 2},
        {"rt::on_usr1(int)", 2},
        {"rt::mix(double)", 2},
        {"rt::mix(long)", 2},
        {"double rt::twice<double>(double)", 2},
        {"long rt::twice<long>(long)", 3},
        {"rt::Acc<long>::add(long)", 4},
        {"rt::emit(int)", 4},
        {"worker(void*)", 1},
    };
    int total = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char row[128];
        /* csv: name,id,count,... - the name may hold commas only inside quotes; none do here */
        snprintf(row, sizeof row, "\n%s,", want[i].name);
        const char *at = strstr(r.o, row);
        cr_assert(at, "no row for %s:\n%s", want[i].name, r.o);
        int id, calls;
        cr_assert_eq(sscanf(at + strlen(row), "%d,%d,", &id, &calls), 2);
        cr_assert_eq(calls, want[i].calls, "%s: %d calls, the program made %d", want[i].name, calls,
                     want[i].calls);
        total += calls;
    }
    cr_assert_eq(total, 64);
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "replay", "real-events.fdr", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "# shown: 64 of 64 calls, stack repairs: 12, unmatched exits: 0, "
                          "unfinished frames: 0\n"),
              "%s", r.o);
    tr_out_free(&r);
    const char *argv3[] = {tr_bin(), "dump", "real-events.fdr", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "%s", r.e);
    int custom = 0, typed = 0;
    for (const char *p = r.o; (p = strstr(p, "CustomEvent")) != NULL; p++)
        custom++;
    for (const char *p = r.o; (p = strstr(p, "TypedEvent")) != NULL; p++)
        typed++;
    cr_assert_eq(custom, 4);
    cr_assert_eq(typed, 4);
    tr_out_free(&r);
}

/* real-lossy.fdr: the runtime dropped 4999 events and said so in a loss marker; the 5 calls of
 * after() that follow the gap are all there. */
Test(golden, real_lossy_gap)
{
    cr_assert_eq(chdir(data_dir()), 0);
    const char *argv[] = {tr_bin(), "account", "real-lossy.fdr", "--format", "csv", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "\nafter,2,5,"), "%s", r.o);
    tr_out_free(&r);
    const char *argv2[] = {tr_bin(), "info", "real-lossy.fdr", NULL};
    r = tr_run(argv2);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "drops:         4999\n"), "%s", r.o);
    /* per thread: 3 blocks, 1031 records, 508 calls (main, burst, 501 ticks, 5 afters), no
     * events but the loss marker, which is counted as a loss instead */
    cr_assert(strstr(r.o, "\n       31991      31991        3         1031          508        0 "),
              "%s", r.o);
    cr_assert(strstr(r.o, "\n  tid 31991: 4999 events dropped in 1 gaps\n"), "%s", r.o);
    tr_out_free(&r);
    /* real-events: calls and events per thread (the worker emits 2 of the 8 events) */
    const char *argv3[] = {tr_bin(), "info", "real-events.fdr", NULL};
    r = tr_run(argv3);
    cr_assert_eq(r.code, 0, "%s", r.e);
    cr_assert(strstr(r.o, "\n       31983      31981        1           21            7        2 "),
              "%s", r.o);
    cr_assert(strstr(r.o, "\n       31981      31981        1          113           57        6 "),
              "%s", r.o);
    tr_out_free(&r);
}

/* convert --format fdr: the rewritten real traces (one block per thread) hold the same records,
 * as dump shows them (golden), pass dump --verify, and account the same as the originals. */
Test(golden, convert_fdr_rewrites)
{
    cr_assert_eq(chdir(data_dir()), 0);
    static const char *const traces[][3] = {
        {"real-mt.fdr", "real-mt.syms", "golden/convert-fdr.out"},
        {"real-events.fdr", "real-events.syms", "golden/ev-convert-fdr.out"},
    };
    for (int i = 0; i < 2; i++) {
        char *out = tg_tmpname(".fdr");
        const char *conv[] = {tr_bin(), "convert", traces[i][0], "--format",
                              "fdr",    "-o",      out,          NULL};
        struct tr_out r = tr_run(conv);
        cr_assert_eq(r.code, 0, "%s", r.e);
        tr_out_free(&r);
        const char *dump[] = {tr_bin(), "dump", out, "--syms", traces[i][1], NULL};
        r = tr_run(dump);
        cr_assert_eq(r.code, 0, "%s", r.e);
        char *want = tr_slurp(traces[i][2]);
        cr_assert_str_eq(r.o, want, "dump of the converted %s differs from %s", traces[i][0],
                         traces[i][2]);
        free(want);
        tr_out_free(&r);
        const char *verify[] = {tr_bin(), "dump", "--verify", out, NULL};
        r = tr_run(verify);
        cr_assert_eq(r.code, 0, "%s", r.e);
        tr_out_free(&r);
        const char *a1[] = {tr_bin(), "account", traces[i][0], NULL};
        const char *a2[] = {tr_bin(), "account", out, "--syms", traces[i][1], NULL};
        struct tr_out x = tr_run(a1), y = tr_run(a2);
        cr_assert_str_eq(x.o, y.o, "account differs after conversion of %s", traces[i][0]);
        tr_out_free(&x);
        tr_out_free(&y);
        unlink(out);
        free(out);
    }
}

/* --syms may name a binary instead of a sidecar; one without an instrumentation map (the tool
 * itself) is refused with one line naming it, exit 1. */
Test(golden, syms_binary_without_map_refused)
{
    cr_assert_eq(chdir(data_dir()), 0);
    const char *argv[] = {tr_bin(), "account", "real-mt.fdr", "--syms", tr_bin(), NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 1, "%s", r.e);
    char want[1024];
    snprintf(want, sizeof want,
             "sledtrace: %s: no xray_instr_map section (not built with -fxray-instrument?)\n",
             tr_bin());
    cr_assert_str_eq(r.e, want);
    cr_assert_str_eq(r.o, "");
    tr_out_free(&r);
}

/* A trace read from a pipe ("-" is standard input): the analysis commands copy it to a
 * temporary file first (they read each thread's blocks in turn), dump and info stream it. The
 * output equals the one from the file itself. */
Test(golden, traces_from_standard_input)
{
    cr_assert_eq(chdir(data_dir()), 0);
    static const char *const cmds[] = {
        "account",
        "account --per-thread",
        "replay",
        "replay --order exit",
        "replay --min-duration 1000",
        "stack",
        "stack --format folded",
        "graph",
        "convert --format chrome",
        "convert --format yaml",
        "flamegraph -o /dev/stdout",
        "dump",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char a[1024], b[1024];
        snprintf(a, sizeof a, "'%s' %s real-events.fdr --syms real-events.syms", tr_bin(), cmds[i]);
        snprintf(b, sizeof b, "cat real-events.fdr | '%s' %s - --syms real-events.syms", tr_bin(),
                 cmds[i]);
        char d[1024]; /* standard input redirected from the file: "-" is a regular file then */
        snprintf(d, sizeof d, "'%s' %s - --syms real-events.syms < real-events.fdr", tr_bin(),
                 cmds[i]);
        const char *av[] = {"/bin/sh", "-c", a, NULL}, *bv[] = {"/bin/sh", "-c", b, NULL};
        const char *dv2[] = {"/bin/sh", "-c", d, NULL};
        struct tr_out x = tr_run(av), y = tr_run(bv), z = tr_run(dv2);
        cr_assert_eq(y.code, 0, "%s from a pipe: %s", cmds[i], y.e);
        cr_assert_eq(z.code, 0, "%s from a redirect: %s", cmds[i], z.e);
        cr_assert_gt(strlen(x.o), 100, "%s: %s", cmds[i], x.e);
        cr_assert_str_eq(y.o, x.o, "%s: output from a pipe differs", cmds[i]);
        cr_assert_str_eq(z.o, x.o, "%s: output from a redirect differs", cmds[i]);
        tr_out_free(&x);
        tr_out_free(&y);
        tr_out_free(&z);
    }
    /* convert --format fdr reads its input twice: from a pipe too */
    char *out = tg_tmpname(".fdr");
    char c[1024];
    snprintf(c, sizeof c, "cat real-events.fdr | '%s' convert - --format fdr -o '%s'", tr_bin(),
             out);
    const char *cv[] = {"/bin/sh", "-c", c, NULL};
    struct tr_out r = tr_run(cv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    tr_out_free(&r);
    const char *dv[] = {tr_bin(), "dump", out, "--syms", "real-events.syms", NULL};
    r = tr_run(dv);
    char *want = tr_slurp("golden/ev-convert-fdr.out");
    cr_assert_str_eq(r.o, want);
    free(want);
    tr_out_free(&r);
    unlink(out);
    free(out);
}
