/* fork in awkward places (issue 23, items 7 and 10).
 *
 * forksig: fork() from a SIGPROF handler that interrupted the tracer's hot path (forksig.c forks
 * only when the tracer's nesting word is set, so every child is such a case). Each child calls
 * leaf() a known number of times, in the handler, and leaves by _exit(0) there ("exit"), or
 * returns into the interrupted tracer code and calls leaf() more times before _exit(0)
 * ("return"). Every child's trace must hold exactly its leaf() calls, with nothing said on
 * stderr; the parent's trace must hold exactly its own calls. The children's traces begin after
 * the event the fork interrupted, which is the parent's (preload/hot.c, "Fork from a signal
 * handler"): in "return" mode the interrupted spin() call may so show as an exit without its
 * entry, and nothing else may be out of place.
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "stf.h"
#include "str.h"

#define BIN(name) E2E_DIR "/" name

/* Offset of the runtime's nesting word (str_cursor.nest) in its TLS segment: str_cursor's value
 * in the library's symbol table plus the field's offset. */
static unsigned long long nest_offset(const char *work)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "nm '%s' | grep ' str_cursor$'", E2E_PRELOAD);
    unsigned long long off = 0;
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && sscanf(r.out, "%llx", &off) == 1,
              "no str_cursor in the runtime's symbol table:\n%s%s", r.out, r.err);
    e2e_run_free(&r);
    return off + offsetof(struct str_cursor, nest);
}

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

static void check_forksig(const char *mode)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], env[64];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(env, sizeof env, "FORKSIG_NEST=%llu", nest_offset(work));
    struct e2e_spec s = {
        .prog = BIN("forksig"), .argv1 = mode, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x:\n%s%s", t.status,
              t.out, t.err);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);

    int children = -1;
    long leaf = -1;
    const char *p = strstr(t.out, "children ");
    cr_assert(p && sscanf(p, "children %d\nchild leaf %ld", &children, &leaf) == 2, "%s", t.out);
    cr_assert_eq(children, 50);
    cr_assert_eq(e2e_dir_entries(out), 2 * (children + 1), "a .fdr and a .syms per process");

    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, BIN("forksig"), t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");

    int seen = 0;
    for (p = strstr(t.out, "forked "); p; p = strstr(p + 1, "forked ")) {
        int child;
        cr_assert_eq(sscanf(p, "forked %d", &child), 1);
        seen++;
        char what[64];
        snprintf(what, sizeof what, "child %d", child);
        e2e_trace_path(trace, sizeof trace, out, BIN("forksig"), child, "fdr");
        e2e_read_trace(trace, &tr);
        if (strcmp(mode, "exit") == 0) {
            /* Only what the child did, all of it, in order. */
            struct e2e_expect ce;
            memset(&ce, 0, sizeof ce);
            ce.nfuncs = 1;
            snprintf(ce.f[0].name, sizeof ce.f[0].name, "leaf");
            ce.f[0].count = leaf;
            ce.threads = 1;
            ce.nwork = 1;
            ce.work[0] = leaf;
            e2e_check_trace(&tr, &ce, what);
            continue;
        }
        /* return: leaf's calls exactly; of spin, at most the interrupted call, whose entry (the
         * event the fork interrupted) may be the parent's alone. */
        long le = -1, lx = -1, se = 0, sx = 0;
        for (int i = 0; i < tr.nfuncs; i++) {
            if (strcmp(tr.f[i].name, "leaf") == 0) {
                le = tr.f[i].enter;
                lx = tr.f[i].exit;
            } else if (strcmp(tr.f[i].name, "spin") == 0) {
                se = tr.f[i].enter;
                sx = tr.f[i].exit;
            } else {
                cr_assert_fail("%s: a function nobody called: %s", what, tr.f[i].name);
            }
        }
        cr_assert(le == leaf && lx == leaf, "%s: leaf %ld enters, %ld exits, expected %ld", what,
                  le, lx, leaf);
        cr_assert(se <= sx && sx <= 1, "%s: spin %ld enters, %ld exits", what, se, sx);
        cr_assert_eq(tr.unbalanced, 0, "%s: calls that never returned", what);
        cr_assert(tr.error[0] == '\0' || (se == 0 && strstr(tr.error, "exit of spin at offset") &&
                                          strstr(tr.error, "empty stack")),
                  "%s: %s", what, tr.error);
        cr_assert_eq(account_row(work, trace, "leaf", NULL), leaf, "%s: account's count", what);
    }
    cr_assert_eq(seen, children);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(fork2, fork_in_handler_child_exits_there, .timeout = 120)
{
    check_forksig("exit");
}

Test(fork2, fork_in_handler_child_returns_into_tracer, .timeout = 120)
{
    check_forksig("return");
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
        cr_skip_test("SKIPPED: unshare(CLONE_NEWTIME) needs root (the CI runs the "
                     "tests as root)");
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
