/* fork in awkward places (issue 23, item 10).
 *
 * timens: a child forked into a new time namespace whose clocks run ten days ahead of its
 * parent's (timensprog.c): its trace's TSC frequency must be calibrated in its own clock, so its
 * 10 ms call shows in `sledtrace account` as what it took: at least 5 ms and at most twice what
 * the program saw of it from outside (a correctness bound, not a timing: before the fix it showed
 * as days), and the frequency is its parent's within 1%. The same of the parent's own call.
 * Needs root (unshare(CLONE_NEWTIME)); skipped, saying why, otherwise.
 *
 * meson passes E2E_DIR, E2E_PRELOAD and E2E_SLEDTRACE. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

/* The count column of `name` in `sledtrace account --format csv TRACE` (-1: no row), and its
 * total_ns in *total. */
static long account_row(const char *work, const char *trace, const char *name, long *total)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' account --format csv '%s' 2>/dev/null | grep '^%s,'", E2E_SLEDTRACE,
               trace, name);
    long id, count = -1, tot = -1;
    char fmt[96];
    snprintf(fmt, sizeof fmt, "%s,%%ld,%%ld,%%ld,", name);
    if (sscanf(r.out, fmt, &id, &count, &tot) != 3)
        count = -1;
    if (total)
        *total = tot;
    e2e_run_free(&r);
    return count;
}

/* The traced time of ten_ms (account's total) against what the program saw of the call. */
static void check_ten_ms(const char *work, const char *trace, const char *out, const char *who)
{
    char key[32];
    snprintf(key, sizeof key, "%s call_ns ", who);
    const char *p = strstr(out, key);
    long seen = -1, total = -1;
    cr_assert(p && sscanf(p + strlen(key), "%ld", &seen) == 1, "no '%s' line:\n%s", key, out);
    cr_assert_eq(account_row(work, trace, "ten_ms", &total), 1, "%s: ten_ms's count", who);
    cr_assert(total >= 5000000 && total <= 2 * seen,
              "%s: the 10 ms call shows as %ld ns; the program saw %ld ns", who, total, seen);
}

static uint64_t header_freq(const char *trace)
{
    struct stf_reader *r = NULL;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK, "%s", trace);
    uint64_t f = stf_reader_header(r)->cycle_freq;
    stf_reader_close(r);
    return f;
}

Test(fork2, child_in_new_time_namespace)
{
    if (geteuid() != 0)
        cr_skip_test("SKIPPED: unshare(CLONE_NEWTIME) needs root (the CI runs the tests as root)");
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = BIN("timensprog"), .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x:\n%s%s", t.status,
              t.out, t.err);
    if (strncmp(t.out, "skip: ", 6) == 0)
        cr_skip_test("SKIPPED: no time namespace here: %s", t.out + 6);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, BIN("timensprog"), t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");
    uint64_t parent_freq = header_freq(trace);
    check_ten_ms(work, trace, t.out, "parent");

    int child = -1;
    const char *p = strstr(t.out, "forked ");
    cr_assert(p && sscanf(p, "forked %d", &child) == 1, "%s", t.out);
    e2e_trace_path(trace, sizeof trace, out, BIN("timensprog"), child, "fdr");
    struct e2e_expect ce;
    memset(&ce, 0, sizeof ce);
    ce.nfuncs = 1;
    snprintf(ce.f[0].name, sizeof ce.f[0].name, "ten_ms");
    ce.f[0].count = 1;
    ce.threads = 1;
    ce.nwork = 1;
    ce.work[0] = 1;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &ce, "child");
    uint64_t child_freq = header_freq(trace);
    cr_assert(child_freq > parent_freq - parent_freq / 100 &&
                  child_freq < parent_freq + parent_freq / 100,
              "the child's TSC frequency %" PRIu64 " Hz, its parent's %" PRIu64 " Hz", child_freq,
              parent_freq);
    check_ten_ms(work, trace, t.out, "child");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
