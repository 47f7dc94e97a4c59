/* fork in awkward places (issue 23, items 7 and 10), and the chunk switch cut short (28.9).
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
 * cutswitch: the common chunk switch (preload/switch.c) left at each of its instructions by a
 * signal handler that longjmps, forks, exits or ends its thread (issue 28.9): every completed call in the trace
 * exactly once, each fork child's calls in its own trace, nothing said on stderr.
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

/* ---- the chunk switch cut short at every instruction (issue 28.9; cutswitch.c) ---- */

/* A work directory, its trace directory, and cutswitch.c's environment: CUT_CURSOR, CUT_LO and
 * CUT_HI (str_cursor's offset in the runtime's TLS segment, str_fast_switch's range: nm -S),
 * and CUT_EXIT. */
struct cut {
    char work[PATH_MAX], out[PATH_MAX], env[4][64];
};

static void cut_begin(struct cut *c)
{
    const char *work = c->work;
    e2e_workdir(c->work, sizeof c->work);
    snprintf(c->out, sizeof c->out, "%s/out", c->work);
    struct e2e_run r;
    e2e_run_sh(work, &r, "nm -S '%s' | grep ' str_fast_switch$'", E2E_PRELOAD);
    unsigned long long lo = 0, size = 0;
    cr_assert(sscanf(r.out, "%llx %llx", &lo, &size) == 2 && size > 0,
              "no str_fast_switch in the runtime's symbol table:\n%s%s", r.out, r.err);
    e2e_run_free(&r);
    snprintf(c->env[0], 64, "CUT_CURSOR=%llu",
             nest_offset(work) - offsetof(struct str_cursor, nest) +
                 offsetof(struct str_cursor, pos));
    snprintf(c->env[1], 64, "CUT_LO=%llu", lo);
    snprintf(c->env[2], 64, "CUT_HI=%llu", lo + size);
}

/* Runs cutswitch in `mode` (CUT_EXIT=exit_at for "exit"); its exit status must be 0, its stderr
 * empty. Returns what it printed (free with e2e_run_free). */
static void run_cut(struct cut *c, const char *mode, int exit_at, struct e2e_run *t)
{
    snprintf(c->env[3], 64, "CUT_EXIT=%d", exit_at);
    struct e2e_spec s = {.prog = BIN("cutswitch"),
                         .argv1 = mode,
                         .preload = 1,
                         .outdir = c->out,
                         .env = {c->env[0], c->env[1], c->env[2], c->env[3],
                                 /* two chunks: the switch wakes the flush thread every time
                                  * (that branch is cut too), and the ring is used once sooner */
                                 "SLEDTRACE_BUFFERS=2", "CUT_WARM=10000"}};
    e2e_run(c->work, &s, t);
    cr_assert(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0, "%s: status %#x:\n%s%s", mode,
              t->status, t->out, t->err);
    cr_assert_str_empty(t->err, "%s: stderr:\n%s", mode, t->err);
}

/* leaf's entries and exits in `trace`, which must read without error and leave no frame open. */
static void leaf_calls(const char *trace, long *enter, long *exit, int exits_alone_ok)
{
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    *enter = *exit = -1;
    for (int i = 0; i < tr.nfuncs; i++)
        if (strcmp(tr.f[i].name, "leaf") == 0) {
            *enter = tr.f[i].enter;
            *exit = tr.f[i].exit;
        }
    cr_assert_eq(tr.unbalanced, 0, "%s: calls that never returned", trace);
    cr_assert(tr.error[0] == '\0' ||
                  (exits_alone_ok && strstr(tr.error, "exit of leaf at offset") &&
                   strstr(tr.error, "empty stack")),
              "%s: %s", trace, tr.error);
}

/* Runs cutswitch in `mode` over every instruction of the switch: the rounds (the switch's
 * instructions) must all have been cuts, and the program's own trace must hold exactly the
 * leaf() calls it completed (*leaf). Returns the rounds; *t is the run (e2e_run_free it). */
static int all_cuts(struct cut *c, const char *mode, struct e2e_run *t, long *leaf)
{
    char trace[PATH_MAX];
    run_cut(c, mode, -1, t);
    int rounds = -1, cuts = -1;
    long enter, exit;
    const char *p = strstr(t->out, "rounds ");
    cr_assert(p && sscanf(p, "rounds %d\ncuts %d\nleaf %ld", &rounds, &cuts, leaf) == 3, "%s: %s",
              mode, t->out);
    /* The switch's path is long (its checks, the hand-over, the mark, the block's head): every
     * one of its instructions was a cut. */
    cr_assert(rounds >= 40 && cuts == rounds, "%s: %d rounds, %d cuts", mode, rounds, cuts);
    e2e_trace_path(trace, sizeof trace, c->out, BIN("cutswitch"), t->pid, "fdr");
    leaf_calls(trace, &enter, &exit, 0);
    cr_assert(enter == *leaf && exit == *leaf, "%s: leaf %ld enters, %ld exits, %ld calls", mode,
              enter, exit, *leaf);
    return rounds;
}

/* A signal handler leaves the switch by siglongjmp at each of its instructions in turn: every
 * completed call is in the trace once, nothing else, nothing said. */
Test(fork2, switch_left_by_longjmp_at_every_instruction, .timeout = 120)
{
    char trace[PATH_MAX];
    struct cut c;
    cut_begin(&c);
    struct e2e_run t;
    long leaf;
    all_cuts(&c, "jump", &t, &leaf);
    e2e_trace_path(trace, sizeof trace, c.out, BIN("cutswitch"), t.pid, "fdr");
    cr_assert_eq(account_row(c.work, trace, "leaf", NULL), leaf);
    e2e_run_free(&t);
    e2e_rmtree(c.work);
}

/* A signal handler forks at each instruction of the switch in turn; both processes return into
 * it. Each child's trace holds its own 100 calls (and the exit of the call the fork
 * interrupted, whose entry is the parent's), the parent's all of its own. */
Test(fork2, switch_forked_at_every_instruction, .timeout = 120)
{
    char trace[PATH_MAX];
    struct cut c;
    cut_begin(&c);
    struct e2e_run t;
    long leaf, enter, exit;
    int rounds = all_cuts(&c, "fork", &t, &leaf);
    cr_assert_eq(e2e_count_lines(t.out, "forked "), rounds);
    for (const char *p = strstr(t.out, "forked "); p; p = strstr(p + 1, "forked ")) {
        int child;
        cr_assert_eq(sscanf(p, "forked %d", &child), 1);
        e2e_trace_path(trace, sizeof trace, c.out, BIN("cutswitch"), child, "fdr");
        leaf_calls(trace, &enter, &exit, 1);
        cr_assert(enter == 100 && (exit == 100 || exit == 101),
                  "child %d: %ld enters, %ld exits, 100 calls", child, enter, exit);
    }
    e2e_run_free(&t);
    e2e_rmtree(c.work);
}

/* exit() from a signal handler at each instruction of the switch in turn, one process each:
 * the final flush, on the thread whose switch is cut, writes every completed call once. */
Test(fork2, switch_left_by_exit_at_every_instruction, .timeout = 240)
{
    char trace[PATH_MAX];
    struct cut c;
    cut_begin(&c);
    struct e2e_run t;
    long leaf, enter, exit;
    int rounds = all_cuts(&c, "jump", &t, &leaf);
    e2e_run_free(&t);
    e2e_rmtree(c.out);
    for (int k = 0; k < rounds; k++) {
        run_cut(&c, "exit", k, &t);
        const char *p = strstr(t.out, "leaf ");
        cr_assert(p && sscanf(p, "leaf %ld", &leaf) == 1, "%s", t.out);
        e2e_trace_path(trace, sizeof trace, c.out, BIN("cutswitch"), t.pid, "fdr");
        leaf_calls(trace, &enter, &exit, 0);
        cr_assert(enter == leaf && exit == leaf, "exit at %d: %ld enters, %ld exits, %ld calls", k,
                  enter, exit, leaf);
        e2e_run_free(&t);
        e2e_rmtree(c.out);
    }
    e2e_rmtree(c.work);
}

/* pthread_exit() from a signal handler at each instruction of the switch in turn, each round
 * on a thread of its own: the thread's exit hands its buffers over from wherever the switch
 * was (between two chunks after the hand-over's store), and every completed call of every
 * thread is in the trace once. */
Test(fork2, switch_left_by_thread_exit_at_every_instruction, .timeout = 120)
{
    struct cut c;
    cut_begin(&c);
    struct e2e_run t;
    long leaf;
    all_cuts(&c, "thread", &t, &leaf);
    e2e_run_free(&t);
    e2e_rmtree(c.work);
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
