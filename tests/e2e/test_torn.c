/* A trace whose process was SIGKILLed while the flush thread was writing (issue 23, item 15).
 *
 * selfkill.c calls mid() and leaf() and kills itself when its trace's size moves, i.e. while the
 * flush thread is writing one of its 8 MiB chunks; the kernel cuts that write(2) short, so the
 * file usually ends inside a block (8 of 12 runs by hand; before the fix `sledtrace dump
 * --verify` rejected such a trace with "BufferExtents overruns file", though `account` read it).
 * Every run's trace must now pass `dump --verify` (exit 0), and where it says "torn at the end"
 * the end it names (offset plus incomplete bytes, or the offset where the block stops) must be
 * the file's size. `account` reads each trace. How many runs tear is logged, not asserted (it is
 * up to the scheduler); the byte-exact cases (cut inside a record, inside a block header, inside
 * a BufferExtents record; damage before the cut) are tests/format/test_torn.c's.
 *
 * meson passes E2E_DIR, E2E_PRELOAD and E2E_SLEDTRACE. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

enum { RUNS = 6 };

/* The end the torn message names: offset + incomplete bytes, or the block's end offset. */
static long long torn_end_of(const char *out)
{
    const char *t = strstr(out, "; torn at the end: ");
    cr_assert_not_null(t);
    long long n, off;
    if (sscanf(t, "; torn at the end: the last %lld bytes (offset %lld)", &n, &off) == 2)
        return off + n;
    long long block;
    cr_assert_eq(
        sscanf(t, "; torn at the end: the block at offset %lld ends at offset %lld", &block, &off),
        2, "%s", out);
    return off;
}

Test(torn, sigkill_while_writing, .timeout = 120)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    int torn = 0;
    for (int i = 0; i < RUNS; i++) {
        snprintf(out, sizeof out, "%s/out%d", work, i);
        struct e2e_spec spec = {.prog = BIN("selfkill"),
                                .argv1 = "8192",
                                .preload = 1,
                                .outdir = out,
                                .env = {"SLEDTRACE_BUFFER_KB=8192", "SLEDTRACE_BUFFERS=4", NULL}};
        struct e2e_run r;
        e2e_run(work, &spec, &r);
        cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL, "run %d: status %#x\n%s",
                  i, r.status, r.err);
        char trace[PATH_MAX];
        e2e_trace_path(trace, sizeof trace, out, BIN("selfkill"), r.pid, "fdr");
        e2e_run_free(&r);
        struct stat st;
        cr_assert_eq(stat(trace, &st), 0, "run %d: no trace %s", i, trace);

        struct e2e_run v;
        e2e_run_sh(work, &v, "'" E2E_SLEDTRACE "' dump --verify '%s'", trace);
        cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0,
                  "run %d (%lld bytes): dump --verify: %#x\n%s%s", i, (long long)st.st_size,
                  v.status, v.out, v.err);
        cr_assert_eq(strncmp(v.out, "OK: ", 4), 0, "%s", v.out);
        if (strstr(v.out, "torn at the end")) {
            torn++;
            cr_assert_eq(torn_end_of(v.out), (long long)st.st_size, "run %d: %s", i, v.out);
        }
        e2e_run_free(&v);

        e2e_run_sh(work, &v, "'" E2E_SLEDTRACE "' account '%s' >/dev/null", trace);
        cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0, "run %d: account: %#x\n%s", i,
                  v.status, v.err);
        e2e_run_free(&v);
        e2e_rmtree(out);
    }
    cr_log_info("%d of %d traces torn at the end", torn, RUNS);
    e2e_rmtree(work);
}
