/* Seeking a window (tools/seek.h, issue 25.1): a window's walk starts each thread at its last
 * checkpoint before the window and stops after the window, and shows exactly what a walk from
 * each thread's start shows.
 *
 * The trace: two threads (tids 100 and 200, pid 100), 1 tick = 1 ns, blocks of 300 iterations
 * interleaved in the file, ~6 MiB per thread (so ~6 checkpoints each, one per MiB). Each thread:
 * main(1) open from t0 to the end; iteration i (120 ns) is outer(2, argument i) > mid(3) > 3 x
 * leaf(4); every 700 iterations long(5) opens at the outer level and closes 450 iterations later,
 * so frames open at checkpoints (main, long) cross blocks. Thread 200 runs 50 ns behind 100 and
 * has a tail exit (mid's last leaf tail-called) every 3rd iteration. */
#include "callstack.h"
#include "common.h"
#include "seek.h"
#include "toolrun.h"
#include "seekgen.h"
#include "tracegen.h"
#include "window.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *write_big(bool calib)
{
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(seekgen_write(p, calib), 0);
    tr_write_syms(p, SEEKGEN_SYMS);
    return p;
}

static char cache[256];

static void use_cache(bool on)
{
    if (!cache[0]) {
        char *d = tg_tmpname(".cache");
        unlink(d);
        snprintf(cache, sizeof cache, "%s", d);
        free(d);
    }
    setenv("SLEDTRACE_CACHE", on ? cache : "off", 1);
    setenv("SLEDTRACE_SEEK_MIN", "0", 1);
}

/* The cache's index files. */
static int indexes(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s 2>/dev/null | grep -c '\\.seek$'", cache);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* Thread 100's iteration i starts about 100 i ns after the base (plus 10 ns per long entered
 * or left), in block i / 300; long is open from iteration 700 k to 700 k + 450. */
static const char *const windows[][2] = {
    {"1ms", "1.2ms"},    /* long closes inside (iteration 10950) */
    {"3.6ms", "3.65ms"}, /* no long open */
    {"5ms", "5.03ms"},   /* long (from 49700) open across the start */
    {"30010ns", "40us"}, /* exactly the start of thread 100's second block (iteration 300) */
    {"5.9ms", NULL},     /* to the end: main closes inside */
    {"5.999ms", "8ms"},  /* the last microseconds */
};

/* Every command that reads a window shows the same with the index as without it, byte for
 * byte, for windows anywhere in the trace, at a block's start, and to the end. */
static void same_windows(bool calib)
{
    char *p = write_big(calib);
    static const char *const cmds[][4] = {
        {"account", NULL},
        {"replay", NULL},
        {"replay", "--order", "exit", NULL},
        {"stack", NULL},
        {"flamegraph", "-o", "-", NULL},
        {"convert", "--format", "chrome", NULL},
    };
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            const char *argv[16];
            size_t n = 0;
            argv[n++] = tr_bin();
            for (size_t k = 0; k < 4 && cmds[c][k]; k++)
                argv[n++] = cmds[c][k];
            argv[n++] = p;
            argv[n++] = "--from";
            argv[n++] = windows[w][0];
            if (windows[w][1]) {
                argv[n++] = "--to";
                argv[n++] = windows[w][1];
            }
            argv[n] = NULL;
            use_cache(false);
            struct tr_out a = tr_run(argv);
            use_cache(true);
            struct tr_out b = tr_run(argv);
            cr_assert_eq(a.code, 0, "%s %s: %s", cmds[c][0], windows[w][0], a.e);
            cr_assert_eq(b.code, 0, "%s %s: %s", cmds[c][0], windows[w][0], b.e);
            cr_assert(strlen(b.o) > 100, "%s %s: %s", cmds[c][0], windows[w][0], b.o);
            cr_assert_str_eq(b.o, a.o, "%s from %s", cmds[c][0], windows[w][0]);
            cr_assert_str_eq(b.e, a.e, "%s from %s", cmds[c][0], windows[w][0]);
            tr_out_free(&a);
            tr_out_free(&b);
        }
    cr_assert_eq(indexes(), 1);
    tr_remove_trace(p);
}

Test(seek, windows_read_as_from_the_start)
{
    same_windows(false);
}

/* The same with corrected times (a calibration record): 20 ns of tracer time per iteration
 * less, so the same windows fall elsewhere, and every checkpoint restores the clock. */
Test(seek, corrected_windows_read_as_from_the_start)
{
    same_windows(true);
}

/* What the window shows at its start, from a checkpoint: thread 100 at 5 ms (iteration about
 * 49985, inside long's span from iteration 49700) has main and long open, bottom first. */
Test(seek, replay_starts_with_the_frames_open)
{
    char *p = write_big(false);
    use_cache(true);
    const char *argv[] = {tr_bin(), "replay", p,      "--tid",    "100",
                          "--from", "5ms",    "--to", "5.0001ms", NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    static const char head[] = "100      0.005000000             main { [clipped]\n"
                               "100      0.005000000               long { [clipped]\n";
    cr_assert(strncmp(r.o, head, strlen(head)) == 0, "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The reading a window costs: with the index, a window of 30 us reads at most 2 MiB of each
 * thread's 6 MiB (its checkpoint's MiB and the window's blocks); without it, everything up to
 * the window. Measured by the cursor's own count of bytes decoded. */
static uint64_t bytes_read(const char *p, const char *from, const char *to)
{
    struct tool_trace tr;
    cr_assert_eq(tool_trace_open(&tr, p, NULL, "reading", false), EXIT_OK);
    struct tool_window w = {0};
    uint64_t f, t;
    cr_assert(tool_parse_duration(from, &w.from_ns) && tool_parse_duration(to, &w.to_ns));
    w.has_from = w.has_to = true;
    tool_window_ticks(&w, tool_trace_base(&tr), tr.freq, &f, &t);
    struct callstack cs = {0};
    cs_set_window(&cs, f, t);
    tool_trace_window(&tr, f, t);
    struct stf_item it;
    int rc;
    while ((rc = cs_next_item(&cs, &tr, NULL, NULL, &it)) == STF_OK)
        cr_assert_eq(cs_feed(&cs, &it, NULL, NULL), 0);
    cr_assert_eq(rc, STF_END);
    struct stf_reader_stats st;
    stf_cursor_stats(tr.c, &st);
    cs_free(&cs);
    tool_trace_close(&tr);
    return st.bytes;
}

Test(seek, a_window_reads_near_it_only)
{
    char *p = write_big(false);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    use_cache(false);
    uint64_t plain = bytes_read(p, "5ms", "5.03ms");
    use_cache(true);
    uint64_t first = bytes_read(p, "5ms", "5.03ms"); /* builds the index (its own cursor) */
    uint64_t again = bytes_read(p, "5ms", "5.03ms");
    cr_assert_gt(plain, (uint64_t)sb.st_size * 6 / 10, "%llu of %lld", (unsigned long long)plain,
                 (long long)sb.st_size);
    cr_assert_lt(first, 4ull << 20, "%llu", (unsigned long long)first);
    cr_assert_eq(again, first);
    /* early in the trace, no index needed: reading stops after the window */
    use_cache(false);
    cr_assert_lt(bytes_read(p, "10us", "20us"), 1ull << 20);
    tr_remove_trace(p);
}

/* A damaged or stale index is not used: it is made again, and the output is the walk's. */
Test(seek, a_damaged_index_is_made_again)
{
    char *p = write_big(false);
    const char *argv[] = {tr_bin(), "account", p, "--from", "5ms", "--to", "5.03ms", NULL};
    use_cache(false);
    struct tr_out want = tr_run(argv);
    cr_assert_eq(want.code, 0);
    use_cache(true);
    struct tr_out r = tr_run(argv);
    cr_assert_str_eq(r.o, want.o);
    tr_out_free(&r);
    char cmd[600];
    /* every index in the cache: cut short, then garbage of the same size */
    snprintf(cmd, sizeof cmd, "for f in %s/*.seek; do truncate -s 1000 $f; done", cache);
    cr_assert_eq(system(cmd), 0);
    r = tr_run(argv);
    cr_assert_str_eq(r.o, want.o);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    snprintf(cmd, sizeof cmd,
             "for f in %s/*.seek; do s=$(stat -c %%s $f); head -c $s /dev/urandom >$f; done",
             cache);
    cr_assert_eq(system(cmd), 0);
    r = tr_run(argv);
    cr_assert_str_eq(r.o, want.o);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    /* the trace rewritten in place (another mtime): another index */
    int before = indexes();
    snprintf(cmd, sizeof cmd, "touch -d '2 hours ago' %s", p);
    cr_assert_eq(system(cmd), 0);
    r = tr_run(argv);
    cr_assert_str_eq(r.o, want.o);
    tr_out_free(&r);
    cr_assert_eq(indexes(), before + 1);
    /* a cache directory that cannot be made: no index, same output */
    setenv("SLEDTRACE_CACHE", "/proc/sledtrace-no-such-dir", 1);
    r = tr_run(argv);
    cr_assert_str_eq(r.o, want.o);
    cr_assert_str_eq(r.e, "");
    tr_out_free(&r);
    tr_out_free(&want);
    tr_remove_trace(p);
}
