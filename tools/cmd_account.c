/* sledtrace account: per-function call statistics in one streaming pass.
 *
 * The stack rule is callstack.h's, without close_open: ENTER / ENTER_ARGS push a frame; EXIT or
 * TAIL_EXIT of f closes the nearest open frame of f, frames above it close at the same TSC
 * (repairs); an exit with no open frame of f is ignored ("unmatched"); a loss marker drops the
 * thread's open frames (no call is measured across a gap). Frames dropped at a loss marker or
 * still open at the end are counted as unfinished calls of their function (in `count`, and on
 * their own: `unfinished`), with no duration: every entered function appears. A closed frame's
 * duration is exit TSC - entry TSC; self time is the duration minus that of its directly closed
 * children. total is the length of the union of the function's closed frames, per thread: a
 * closed frame adds its duration when no frame of the same function is open below it
 * (callstack's same_below), and a frame that never closes adds the closed frames of its function
 * nested in it (its rec). On well-formed traces the calls counted are exactly those
 * `llvm-xray account` counts; its sum adds the durations of every call, recursive ones too.
 *
 * Memory grows with the number of functions, threads and the stack depth, never with the trace
 * length (with --per-thread, statistics are kept per (thread, function) pair, so memory grows
 * with functions x threads): count, total, self, min and max are exact, and so are mean (sum:
 * every finished call's duration, nested ones too, / the finished calls) and self/call (self /
 * the finished calls), both rounded to the nearest tick, then nanosecond. median/p90/p99 follow
 * the nearest-rank rule: the q-quantile of n durations is the k-th smallest, k = ceil(q * n)
 * (1-based), always one of the durations recorded. They are exact while a function has at most
 * EXACT_MAX finished calls (its durations are kept, at most 8 KiB); past that, the durations
 * move to a log-linear histogram (values below 128 ticks exact; above, 128 buckets per power of
 * two, reported at the bucket midpoint and clamped to [min, max]): a bucket [lo, lo + w) has
 * w <= lo / 128, so the midpoint is within w / 2 <= lo / 256 <= v / 256 of any value v in it,
 * a relative error of at most 1/256 (under 0.4%), in ticks; the conversion to nanoseconds
 * rounds to the nearest, which can add half a nanosecond.
 * Call filters (window.h: --filter, --exclude, --max-depth, --min-duration): only the calls
 * shown count, each with its own figures (on_close asks tool_window_close). */
#include "callstack_walk.h"
#include "seek.h"
#include "window.h"
#include "suggest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUB_BITS = 7, SUB = 1 << SUB_BITS, ROWS = 64 - SUB_BITS + 1 };
/* Durations kept exactly per function (per thread and function with --per-thread). */
enum { EXACT_MAX = 1024 };

static void help(FILE *out)
{
    fputs("usage: sledtrace account TRACE [--format text|csv|json] [--sort KEY] [--top N]\n"
          "                         [--per-thread] [--raw-times] [--syms FILE]\n"
          "                         [--from TIME] [--to TIME] [--filter P] [--exclude P]\n"
          "                         [--max-depth N] [--min-duration TIME] [--tid N]\n"
          "\n"
          "Per-function call statistics: count, total, self, mean, self/call, min, median,\n"
          "p90, p99, max.\n"
          "total is the time the function was on the stack (at least one of its calls\n"
          "open; the union of its finished calls), per thread, summed over the threads: a\n"
          "recursive function's nested calls lie inside its outermost one and add nothing.\n"
          "Times are wall time. self is the time in the function that is in none of its\n"
          "traced callees: its own code, the untraced functions it calls (libc) but the\n"
          "blocking ones, which show as '[wait] NAME' calls of their own (SLEDTRACE_WAITS),\n"
          "and the time it was preempted; summed over its calls. mean, self/call, min, median, "
          "p90, p99 and max are per call: mean is the\n"
          "calls' durations (entry to exit, callees included; a recursion's nested calls\n"
          "too) summed and divided by the finished calls, self/call is self divided by the\n"
          "finished calls (both rounded to the nearest), the others one call's duration.\n"
          "share is total as a percentage of the summed wall time of all threads (each\n"
          "thread from its first to its last record), as perf report's percentages are\n"
          "shares of all threads' samples, so it never exceeds 100%; with --per-thread,\n"
          "of the thread's own wall time (a function that spans the thread: 100%).\n"
          "Each call counts once; an exit closes the nearest open frame of its function\n"
          "(frames above it are closed too and reported as stack repairs). A call that never\n"
          "returned (open at the end, or cut by a loss marker) counts as unfinished: in count,\n"
          "marked '(N unfinished)' (csv and json: an unfinished column), and its own\n"
          "duration, unknown, is in no time column.\n"
          "Percentiles use the nearest-rank rule: the p-th percentile of n calls is the\n"
          "k-th shortest, k = ceil(n * p / 100), so the median of 10ns and 30ns is 10ns.\n"
          "They are exact up to 1024 finished calls per function (per thread and function\n"
          "with --per-thread); beyond, they come from a histogram and are within 0.4%\n"
          "(1/256) relative error. The other columns are exact.\n"
          "Times are corrected: every traced call costs the tracer a few nanoseconds,\n"
          "which the runtime measures at start-up and records in the trace, and that cost\n"
          "is taken out of every figure (the footer says how much), so that short\n"
          "functions do not look hotter than they are. A figure marked ~ lies within the\n"
          "correction's error or the clock's step (csv, json: the approx column).\n"
          "--raw-times shows the times as measured; a trace that records no such cost\n"
          "(compiler-rt's, or an older sledtrace's) is shown as measured, and says so.\n"
          "\n",
          out);
    fputs("  --format F         text (default); csv with raw nanoseconds and share_pct\n"
          "                     (summary on stderr); json: one object with the trace,\n"
          "                     the rows in nanoseconds and a summary of the counters\n"
          "                     and the wall time (wall_ns)\n"
          "  --from TIME, --to TIME\n"
          "                     only the time in this window (since the earliest thread\n"
          "                     start, as replay shows it; 10us, 2.5ms, 1s): calls crossing\n"
          "                     an edge count with their part inside it (footer: clipped)\n"
          "  --filter P         only the calls of functions matching P and their callees\n"
          "                     (subtree); P: comma-separated [LIB:]GLOB, on names as\n"
          "                     shown (repeatable)\n"
          "  --exclude P        not the calls of functions matching P nor their subtree\n"
          "                     (wins over --filter)\n"
          "  --max-depth N      only calls at depth < N (top-level calls are depth 0)\n"
          "  --min-duration TIME  only calls lasting at least TIME\n"
          "                     With these four, rows and totals count the calls shown\n"
          "                     only, each with its own figures (a shown call's self time\n"
          "                     still leaves out its hidden callees); elided calls are\n"
          "                     left out; the footer says what was filtered\n"
          "  --tid N            only thread N\n"
          "  --sort KEY         total (default), self, count, max, median, p99, mean,\n"
          "                     selfcall (self/call): descending; name, id\n"
          "  --top N            only the first N rows (per thread with --per-thread)\n"
          "  --by-arg N         rows per function and value of its argument N (1..6, recorded\n"
          "                     with SLEDTRACE_ARGS): which fib(n) costs what; a row's total\n"
          "                     sums its calls' durations; not with --per-thread\n"
          "  --per-thread       statistics per (pid, tid) thread, threads in pid/tid order:\n"
          "                     text prints a 'thread PID/TID (wall time T)' heading\n"
          "                     before each table, csv adds leading pid,tid columns, json\n"
          "                     a threads array (pid, tid, wall_ns, functions)\n"
          "  --raw-times        times as measured, the tracer's own cost included\n"
          "                     (default: corrected, when the trace records that cost)\n"
          "  --syms FILE        symbols file (default: TRACE with .fdr replaced by .syms)\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n"
          "  --suggest-exclude[=N] [-o FILE]\n"
          "                     the functions whose tracing costs more than their own work,\n"
          "                     and a file that leaves them out of the next run (sledtrace\n"
          "                     account --suggest-exclude --help)\n",
          out);
}

struct fstat {
    uint32_t id;
    uint32_t tix;     /* thread index (--per-thread), else 0 */
    uint32_t argslot; /* --by-arg: the argument's value (ARG_LARGE: 2^32 - 1 or more), else 0 */
    uint64_t count, total, self, min, max;
    uint64_t sum;        /* the finished calls' durations, nested ones too (mean) */
    uint64_t unfinished; /* entered, never exited: open at the end or cut at a loss marker */
    /* calls shorter than SLEDTRACE_MIN_DURATION, taken back by the runtime and counted in an
     * elided-calls event (stf.h): in count and total, in no per-call column */
    uint64_t elided, elided_ticks;
    bool recursive; /* a finished frame of it nested in another of its frames */
    /* The durations of the first EXACT_MAX finished calls (vals, nvals of capvals, sorted
     * before the output); then sketch is set, vals freed and the histogram rows hold them. */
    uint64_t *vals;
    uint32_t nvals, capvals;
    bool sketch;
    uint64_t *rows[ROWS];
};

struct acct {
    struct callstack cs; /* threads, stacks and the counters of the stack rule */
    struct u64map fmap;
    struct fstat *f;
    size_t nf, capf;
    bool per_thread; /* statistics keyed by (thread, function) */
    bool elided;     /* an elided-calls event was read */
    uint64_t shown;  /* closed calls the filters show (all without filters) */
    uint64_t no_arg; /* --by-arg: shown calls that did not record the argument */
    /* Lookup cache (indices, not pointers: the array moves when it grows); function ids are
     * few and small. */
    uint64_t fcache_key[1024]; /* (thread index << 32) | function id */
    uint32_t fcache_ix[1024];  /* index + 1; 0 = empty */
    uint64_t last_key;         /* the last lookup's key and index + 1 (0: none) */
    uint32_t last_ix;
};

/* --by-arg N (1..6; 0: off): rows per (function, value of its argument N), for the calls that
 * recorded it (SLEDTRACE_ARGS); values from 2^32 - 1 on share one row (ARG_LARGE): they are
 * addresses, whose distribution says nothing. The calls without argument N are counted only
 * (g_no_arg, summed over the walks after them). Read-only during the walks but for the count. */
#define ARG_LARGE UINT32_MAX
static unsigned g_by_arg;

/* Call filters (window.h): NULL or none given: every call; else only the calls they show count
 * (window.c's top), each with its own figures. Read-only during the walks. */
static const struct tool_window *g_filt;
static const struct stf_syms *g_syms;
static uint64_t g_freq;

/* Histogram row of f, allocated (zeroed) the first time; NULL on allocation failure. */
static __attribute__((noinline)) uint64_t *hist_row(struct fstat *f, unsigned row)
{
    if (!f->rows[row])
        f->rows[row] = calloc(SUB, sizeof *f->rows[row]);
    return f->rows[row];
}

/* Row 0 holds v < SUB exactly; row r >= 1 the values with highest bit e = r + SUB_BITS - 1, in
 * SUB slots of their next SUB_BITS bits. Without a branch on v: below SUB, e is clamped so
 * that the shift is 0 and the row 0. */
static inline int hist_add(struct fstat *f, uint64_t v)
{
    unsigned e = 63u - (unsigned)__builtin_clzll(v | 1);
    unsigned shift = e >= SUB_BITS ? e - SUB_BITS : 0;
    unsigned row = e >= SUB_BITS ? e - SUB_BITS + 1 : 0;
    unsigned slot = (unsigned)(v >> shift) & (SUB - 1);
    uint64_t *r = f->rows[row];
    if (__builtin_expect(!r, 0) && !(r = hist_row(f, row)))
        return -1;
    r[slot]++;
    return 0;
}

/* From exact durations to the histogram: the kept ones move into it. 0, or -1 (no memory). */
static int to_sketch(struct fstat *f)
{
    for (uint32_t i = 0; i < f->nvals; i++)
        if (hist_add(f, f->vals[i]) != 0)
            return -1;
    free(f->vals);
    f->vals = NULL;
    f->nvals = f->capvals = 0;
    f->sketch = true;
    return 0;
}

/* record() once the first EXACT_MAX durations are kept: they all go to the histogram. */
static __attribute__((noinline)) int record_slow(struct fstat *f, uint64_t v)
{
    if (f->nvals == EXACT_MAX)
        return to_sketch(f) != 0 ? -1 : hist_add(f, v);
    size_t cap = f->capvals;
    uint64_t *n = tool_grow(f->vals, &cap, sizeof *n, 4);
    if (!n)
        return -1;
    f->vals = n;
    f->capvals = (uint32_t)cap;
    f->vals[f->nvals++] = v;
    return 0;
}

/* A finished call's duration: kept as it is up to EXACT_MAX calls, else in the histogram. */
static inline int record(struct fstat *f, uint64_t v)
{
    if (__builtin_expect(f->sketch, 1))
        return hist_add(f, v);
    if (f->nvals == f->capvals || f->nvals == EXACT_MAX)
        return record_slow(f, v);
    f->vals[f->nvals++] = v;
    return 0;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t x = *(const uint64_t *)pa, y = *(const uint64_t *)pb;
    return x < y ? -1 : x > y;
}

/* k-th smallest (0-based) recorded value, approximately. */
static uint64_t hist_rank(const struct fstat *f, uint64_t k)
{
    uint64_t seen = 0;
    for (unsigned row = 0; row < ROWS; row++) {
        if (!f->rows[row])
            continue;
        for (unsigned slot = 0; slot < SUB; slot++) {
            seen += f->rows[row][slot];
            if (seen <= k)
                continue;
            uint64_t v;
            if (row == 0) {
                v = slot;
            } else {
                unsigned shift = row - 1;
                uint64_t lo = (uint64_t)(SUB + slot) << shift;
                v = lo + (((uint64_t)1 << shift) >> 1);
            }
            if (v < f->min)
                v = f->min;
            if (v > f->max)
                v = f->max;
            return v;
        }
    }
    return f->max;
}

/* The pct-th percentile of f's n durations by the nearest-rank rule: the k-th smallest,
 * k = ceil(n * pct / 100) (1-based), exact while the durations are kept (sorted by then). */
static uint64_t rank(const struct fstat *f, uint64_t n, unsigned pct)
{
    if (n == 0)
        return 0;
    uint64_t k = n / 100 * pct + ((n % 100) * pct + 99) / 100; /* no overflow for any n */
    if (!f->sketch)
        return f->vals[k - 1];
    return hist_rank(f, k - 1);
}

/* fget past its first test. */
static __attribute__((noinline)) struct fstat *fget_slow(struct acct *a, uint32_t tix, uint32_t id,
                                                         uint64_t key)
{
    size_t slot = (id ^ (tix * 0x9e3779b1u)) & 1023;
    if (a->fcache_ix[slot] && a->fcache_key[slot] == key) {
        a->last_key = key;
        a->last_ix = a->fcache_ix[slot];
        return &a->f[a->fcache_ix[slot] - 1];
    }
    bool added;
    long i = u64map_get(&a->fmap, key, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (a->nf == a->capf) {
            struct fstat *n = tool_grow(a->f, &a->capf, sizeof *n, 64);
            if (!n)
                return NULL;
            a->f = n;
        }
        memset(&a->f[a->nf], 0, sizeof a->f[a->nf]);
        a->f[a->nf].id = id;
        a->f[a->nf].tix = g_by_arg ? 0 : tix;
        a->f[a->nf].argslot = g_by_arg ? (uint32_t)(key >> 32) : 0;
        a->nf++;
    }
    a->fcache_key[slot] = key;
    a->fcache_ix[slot] = (uint32_t)i + 1;
    a->last_key = key;
    a->last_ix = (uint32_t)i + 1;
    return &a->f[i];
}

/* Statistics of function id (on thread index tix with --per-thread). */
static inline struct fstat *fget(struct acct *a, uint32_t tix, uint32_t id)
{
    if (!a->per_thread)
        tix = 0;
    uint64_t key = ((uint64_t)tix << 32) | id;
    if (a->last_ix && a->last_key == key) /* the same function as the last lookup */
        return &a->f[a->last_ix - 1];
    return fget_slow(a, tix, id, key);
}

/* The walker's callback: a closed frame adds to its function's statistics. A function that
 * never exits gets its row from unfinished() (a loss marker's frames, or those open at the
 * end), so no row is made at entry: every entered function still appears. */
static inline int on_close(void *ctx, const struct cs_close *c)
{
    struct acct *a = ctx;
    if (__builtin_expect(g_filt != NULL, 0) &&
        tool_window_close(g_filt, g_syms, c, g_freq) != TW_SHOW)
        return 0;
    a->shown++;
    struct fstat *f;
    if (__builtin_expect(g_by_arg != 0, 0)) {
        if (c->f->nargs < g_by_arg) {
            a->no_arg++;
            return 0;
        }
        uint64_t v = cs_arg(c->t, c->depth, g_by_arg - 1);
        uint32_t slot = v < ARG_LARGE ? (uint32_t)v : ARG_LARGE;
        f = fget_slow(a, slot, c->f->id, (uint64_t)slot << 32 | c->f->id);
    } else {
        f = fget(a, (uint32_t)(c->t - a->cs.t), c->f->id);
    }
    if (!f)
        return -1;
    /* one call's figure: a corrected duration below zero counts as 0 (sums keep its sign) */
    uint64_t dur = cs_ticks(c->dur);
    if (f->count == 0 || dur < f->min)
        f->min = dur;
    if (dur > f->max)
        f->max = dur;
    f->count++;
    f->sum += dur;
    /* total: the union of the function's finished calls on this thread - only the outermost
     * frame of a recursion adds its duration (the nested ones lie inside it) */
    if (!c->f->same_below || g_by_arg) /* --by-arg: a row's calls rarely nest in each other */
        f->total += c->dur;
    else
        f->recursive = true;
    f->self += c->self;
    return record(f, dur);
}

/* A frame that never closes (dropped at a loss marker, or open at the end) is an unfinished
 * call. The finished calls of its function nested in it are in no outermost finished frame:
 * their union is its rec (the union of the maximal ones, whose nearest enclosing frame of the
 * function is open, hence unfinished too), so each unfinished frame adds its rec to the total. */
static int unfinished(struct acct *a, size_t tix, struct cs_frame *st, size_t depth)
{
    const struct cs_frame *fr = &st[depth];
    if (g_filt) { /* no duration: it passes --min-duration, the other filters apply */
        uint8_t v = tool_window_vis(g_filt, g_syms, st, depth, fr);
        if (!(v & TW_INSIDE) || (v & TW_EXCLUDED) ||
            (g_filt->max_depth && depth >= g_filt->max_depth))
            return 0;
    }
    struct fstat *f = fget(a, (uint32_t)tix, fr->id);
    if (!f)
        return -1;
    f->unfinished++;
    f->total += fr->rec;
    return 0;
}

/* Frames a loss marker dropped (still readable in t->st, callstack.h). */
static int on_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, uint64_t lost,
                   size_t dropped)
{
    struct acct *a = ctx;
    (void)tsc, (void)lost;
    for (size_t k = 0; k < dropped; k++)
        if (unfinished(a, (size_t)(t - a->cs.t), t->st, k) != 0)
            return -1;
    return 0;
}

/* The same for another context of the thread (a coroutine switched out, callstack.h). */
static int on_parked_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, size_t dropped)
{
    return on_loss(ctx, t, tsc, 0, dropped);
}

static bool g_elided; /* the trace has elided calls: csv and json show them */
/* Corrected times (vclock.h): the approx marks need the calibration's spread (the larger of a
 * leaf's two gaps', ticks) and the clock's step (ticks). */
static bool g_corrected;
static double g_spread, g_step;

/* total with the elided calls' time: a recursive function's elided calls lie inside its
 * recorded outermost frames (whose union total already is), so theirs is added only to the
 * others'. LIMIT: a function recursive only through elided calls counts that time twice. */
static int64_t total_signed(const struct fstat *f)
{
    return (int64_t)(f->total + (f->recursive ? 0 : f->elided_ticks));
}

/* total as shown: a corrected sum below zero is 0 (and marked approximate). */
static uint64_t total_of(const struct fstat *f)
{
    return cs_ticks((uint64_t)total_signed(f));
}

/* self as shown: a sum of corrected self times below zero is 0 (and marked approximate). */
static uint64_t self_of(const struct fstat *f)
{
    return cs_ticks(f->self);
}

/* mean: the finished calls' durations (each call's own, a recursion's nested calls too; elided
 * calls not) per finished call, in ticks rounded to the nearest; 0 without a finished call. */
static uint64_t mean_of(const struct fstat *f)
{
    return f->count ? f->sum / f->count + (f->sum % f->count >= f->count - f->count / 2) : 0;
}

/* self/call: self as shown per finished call, in ticks rounded to the nearest. */
static uint64_t selfcall_of(const struct fstat *f)
{
    uint64_t s = self_of(f);
    return f->count ? s / f->count + (s % f->count >= f->count - f->count / 2) : 0;
}

/* An elided-calls event (SLEDTRACE_MIN_DURATION): each function's calls and time, added to its
 * count and total. With --per-thread, the thread's, once the walker knows it. */
static int add_elided(struct acct *a, const struct stf_item *it)
{
    uint32_t tix = 0;
    if (a->per_thread) {
        const struct cs_thread *t = cs_find(&a->cs, it->pid, it->tid);
        if (!t)
            return 0; /* a thread with no call recorded: its calls have no row to join */
        tix = (uint32_t)(t - a->cs.t);
    }
    uint32_t id, calls;
    uint64_t ticks;
    for (size_t i = 0; stf_decode_elided(it->payload, it->payload_len, i, &id, &calls, &ticks);
         i++) {
        struct fstat *f = fget(a, tix, id);
        if (!f)
            return -1;
        f->elided += calls;
        f->elided_ticks += ticks;
        a->elided = true;
    }
    return 0;
}

/* Frames still open at the end of the trace, in every context (callstack.h) of each thread. */
static int count_open(struct acct *a)
{
    for (size_t i = 0; i < a->cs.nt; i++) {
        const struct cs_thread *t = &a->cs.t[i];
        for (size_t k = 0; k < t->depth; k++)
            if (unfinished(a, i, t->st, k) != 0)
                return -1;
        for (size_t c = 0; c < t->nctx; c++)
            for (size_t k = 0; k < t->ctxs[c].depth; k++)
                if (unfinished(a, i, t->ctxs[c].st, k) != 0)
                    return -1;
    }
    return 0;
}

/* ---- walking the threads apart (tool_trace_parallel), then merging ------------------------- */

/* A walk's own failure (tool_trace_parallel: above STF_END). */

/* The statistics of each unit (a thread, or the whole trace), merged in order into all. */
/* --from / --to (window.h): the window in ticks, for every part of the walk. */
static bool g_win;
static uint64_t g_win_from, g_win_to;

struct run {
    bool per_thread;
    struct acct **part;
    struct acct *all;
};

static void acct_free(struct acct *a)
{
    for (size_t i = 0; i < a->nf; i++) {
        free(a->f[i].vals);
        for (int k = 0; k < ROWS; k++)
            free(a->f[i].rows[k]);
    }
    free(a->f);
    cs_free(&a->cs);
    u64map_free(&a->fmap);
}

static int acct_walk(void *arg, size_t k, struct tool_trace *sub)
{
    struct run *run = arg;
    struct acct *a = calloc(1, sizeof *a);
    if (!a)
        return CS_NOMEM;
    run->part[k] = a;
    a->per_thread = run->per_thread;
    a->cs.nesting = true;
    a->cs.signed_dur = tool_trace_corrected(sub);
    if (g_win)
        cs_set_window(&a->cs, g_win_from, g_win_to);
    static const struct cs_ops ops = {
        .enter = NULL, .close = on_close, .loss = on_loss, .parked_loss = on_parked_loss};
    struct stf_item it;
    int rc;
    while ((rc = cs_walk_next_item(&a->cs, sub, &ops, a, &it)) == STF_OK) {
        /* Function records, loss markers (a gap: no call is measured across it, the frames
         * open before it are dropped) and context switches (one stack per coroutine); threads
         * with none of them are not counted. With --by-arg, the CallArguments. */
        uint64_t lost;
        if (it.kind == STF_M_TYPED_EVENT && it.event_type == STF_TYPED_ELIDED) {
            if (!g_filt && add_elided(a, &it) != 0) /* no stack known: not with filters */
                return CS_NOMEM;
            continue;
        }
        if (it.kind != STF_K_FUNCTION &&
            !(it.kind == STF_M_CUSTOM_EVENT &&
              stf_decode_loss(it.payload, it.payload_len, &lost)) &&
            !(it.kind == STF_M_TYPED_EVENT && it.event_type == STF_TYPED_CONTEXT) &&
            !(g_by_arg && it.kind == STF_M_CALL_ARG)) /* --by-arg: the arguments too */
            continue;
        if (cs_feed(&a->cs, &it, &ops, a) != 0)
            return CS_NOMEM;
    }
    return rc;
}

/* s's statistics added to d's, as if d had recorded s's calls after its own: the counters add
 * up, and the durations stay exact while both have kept theirs and there are at most EXACT_MAX
 * of them together (as record() keeps them), else all go to d's histogram. */
static int fmerge(struct fstat *d, const struct fstat *s)
{
    if (s->count && (d->count == 0 || s->min < d->min))
        d->min = s->min;
    if (s->max > d->max)
        d->max = s->max;
    d->count += s->count;
    d->sum += s->sum;
    d->total += s->total;
    d->self += s->self;
    d->unfinished += s->unfinished;
    d->elided += s->elided;
    d->elided_ticks += s->elided_ticks;
    d->recursive |= s->recursive;
    if (!d->sketch && !s->sketch && d->nvals + s->nvals <= EXACT_MAX) {
        for (uint32_t i = 0; i < s->nvals; i++)
            if (record(d, s->vals[i]) != 0)
                return -1;
        return 0;
    }
    if (!d->sketch && to_sketch(d) != 0)
        return -1;
    for (uint32_t i = 0; i < s->nvals; i++)
        if (hist_add(d, s->vals[i]) != 0)
            return -1;
    for (unsigned row = 0; s->sketch && row < ROWS; row++) {
        if (!s->rows[row])
            continue;
        if (!hist_row(d, row))
            return -1;
        for (unsigned slot = 0; slot < SUB; slot++)
            d->rows[row][slot] += s->rows[row][slot];
    }
    return 0;
}

static int acct_merge(void *arg, size_t k)
{
    struct run *run = arg;
    struct acct *s = run->part[k], *d = run->all;
    if (!s)
        return 0;
    run->part[k] = NULL;
    if (d->nf == 0 && d->cs.nt == 0 && !d->elided) { /* the first: taken as it is */
        *d = *s;
        free(s);
        return 0;
    }
    size_t base = d->cs.nt; /* s's thread i becomes d's base + i (cs_merge) */
    int rc = cs_merge(&d->cs, &s->cs) == 0 ? 0 : CS_NOMEM;
    for (size_t i = 0; rc == 0 && i < s->nf; i++) {
        struct fstat *f = g_by_arg ? fget_slow(d, s->f[i].argslot, s->f[i].id,
                                               (uint64_t)s->f[i].argslot << 32 | s->f[i].id)
                                   : fget(d, (uint32_t)(base + s->f[i].tix), s->f[i].id);
        if (!f || fmerge(f, &s->f[i]) != 0)
            rc = CS_NOMEM;
    }
    d->elided |= s->elided;
    d->shown += s->shown;
    d->no_arg += s->no_arg;
    acct_free(s);
    free(s);
    return rc;
}

enum sort_key {
    S_TOTAL,
    S_SELF,
    S_COUNT,
    S_MAX,
    S_NAME,
    S_ID,
    S_MEDIAN,
    S_P99,
    S_MEAN,
    S_SELFCALL
};

struct row {
    const struct fstat *f;
    const char *sym; /* symbol name, or NULL: then buf holds "#id" (rows move in qsort) */
    char buf[24];
    char *named; /* --by-arg: "name(argN=V)" (malloc'd), else NULL */
};

static const char *row_name(const struct row *r)
{
    return r->named ? r->named : r->sym ? r->sym : r->buf;
}

static enum sort_key g_sort;
static const struct cs_thread *g_threads; /* non-NULL with --per-thread: rows grouped by thread */

static int cmp_u64_desc(uint64_t x, uint64_t y)
{
    return x < y ? 1 : x > y ? -1 : 0;
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    int c = 0;
    if (g_threads) {
        const struct cs_thread *ta = &g_threads[a->f->tix], *tb = &g_threads[b->f->tix];
        if (ta->pid != tb->pid)
            return ta->pid < tb->pid ? -1 : 1;
        if (ta->tid != tb->tid)
            return ta->tid < tb->tid ? -1 : 1;
    }
    switch (g_sort) {
    case S_TOTAL:
        c = cmp_u64_desc(total_of(a->f), total_of(b->f));
        break;
    case S_SELF:
        c = cmp_u64_desc(self_of(a->f), self_of(b->f));
        break;
    case S_COUNT:
        c = cmp_u64_desc(a->f->count + a->f->unfinished + a->f->elided,
                         b->f->count + b->f->unfinished + b->f->elided);
        break;
    case S_MAX:
        c = cmp_u64_desc(a->f->max, b->f->max);
        break;
    case S_MEDIAN: /* per call: of the finished calls (none: 0, last) */
        c = cmp_u64_desc(rank(a->f, a->f->count, 50), rank(b->f, b->f->count, 50));
        break;
    case S_P99:
        c = cmp_u64_desc(rank(a->f, a->f->count, 99), rank(b->f, b->f->count, 99));
        break;
    case S_MEAN: /* the mean column: per finished call (recursion counted again) */
        c = cmp_u64_desc(mean_of(a->f), mean_of(b->f));
        break;
    case S_SELFCALL:
        c = cmp_u64_desc(selfcall_of(a->f), selfcall_of(b->f));
        break;
    case S_NAME:
        c = strcmp(row_name(a), row_name(b));
        break;
    case S_ID:
        break;
    }
    if (c)
        return c;
    return a->f->id < b->f->id ? -1 : a->f->id > b->f->id ? 1 : 0;
}

static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* A JSON string with its quotes (tool_json_escape: UTF-8 names stay UTF-8). */
static void json_str(const char *s)
{
    putchar('"');
    tool_json_escape(stdout, (const uint8_t *)s, strlen(s));
    putchar('"');
}

enum format { F_TEXT, F_CSV, F_JSON };

/* The time columns, in their order: two sums, then per call (mean, self/call, then ranks). */
enum { NCOLS = 9 };
static const char *const col_names[NCOLS] = {"total_ns",    "self_ns", "mean_ns",
                                             "selfcall_ns", "min_ns",  "median_ns",
                                             "p90_ns",      "p99_ns",  "max_ns"};

/* A thread's wall time: from its first to its last record that account reads (function
 * records and loss markers), in ticks. */
static uint64_t wall(const struct cs_thread *t)
{
    if (g_win) { /* the thread's part of the window: from its start, to its end if passed */
        uint64_t s = t->first > g_win_from ? t->first : g_win_from;
        uint64_t e = t->win_done ? g_win_to : t->last;
        return e > s ? e - s : 0;
    }
    return t->last >= t->first ? t->last - t->first : t->first - t->last;
}

/* share: the function's total as a percentage of wall (ticks), two decimals (0 when wall is). */
static void fmt_share(char *b, size_t len, uint64_t total, uint64_t wall_ticks, bool pct_sign)
{
    double v = wall_ticks ? 100.0 * (double)total / (double)wall_ticks : 0.0;
    snprintf(b, len, "%.2f%s", v, pct_sign ? "%" : "");
}

/* wall_ticks: the share's denominator for this row (the thread's wall time with --per-thread,
 * else the sum over threads). */
static void put_row(enum format fmt, bool per_thread, const struct cs_thread *th,
                    const struct row *r, uint64_t freq, uint64_t wall_ticks, bool first)
{
    const struct fstat *f = r->f;
    uint64_t n = f->count;
    char share[32];
    fmt_share(share, sizeof share, total_of(f), wall_ticks, fmt == F_TEXT);
    uint64_t v[NCOLS] = {
        total_of(f),    self_of(f),     mean_of(f),     selfcall_of(f), f->min,
        rank(f, n, 50), rank(f, n, 90), rank(f, n, 99), f->max,
    };
    /* corrected times: which figures are within the calibration's spread or the clock's step
     * (tools/DESIGN.md, "Corrected times"): bit k for column k */
    unsigned approx = 0;
    if (g_corrected) {
        double sums = 2.0 * (double)(n + f->unfinished) * g_spread + g_step;
        for (int k = 0; k < NCOLS; k++)
            if ((double)v[k] < (k < 2 ? sums : g_step > 2 * g_spread ? g_step : 2 * g_spread))
                approx |= 1u << k;
        if (total_signed(f) < 0)
            approx |= 1u;
        if ((int64_t)f->self < 0)
            approx |= 2u | 8u; /* self and self/call */
    }
    for (int k = 0; k < NCOLS; k++)
        v[k] = tool_ticks_to_ns(v[k], freq);
    /* count: every call entered; the other columns: only the calls that exited (none: '-'
     * in text, 0 in csv and json) */
    uint64_t all = n + f->unfinished + f->elided;
    if (fmt == F_CSV) {
        if (per_thread)
            printf("%" PRId32 ",%" PRId32 ",", th->pid, th->tid);
        csv_field(row_name(r));
        printf(",%" PRIu32 ",%" PRIu64, f->id, all);
        for (int k = 0; k < NCOLS; k++) {
            printf(",%" PRIu64, n ? v[k] : 0);
            if (k == 0)
                printf(",%s", share);
        }
        printf(",%" PRIu64, f->unfinished);
        if (g_elided)
            printf(",%" PRIu64 ",%" PRIu64, f->elided, tool_ticks_to_ns(f->elided_ticks, freq));
        if (g_corrected) {
            putchar(',');
            for (int k = 0, first_col = 1; k < NCOLS; k++)
                if (n && (approx >> k & 1)) {
                    printf("%s%s", first_col ? "" : ";", col_names[k]);
                    first_col = 0;
                }
        }
        putchar('\n');
    } else if (fmt == F_JSON) {
        fputs(first ? "\n" : ",\n", stdout);
        fputs(per_thread ? "      {\"function\": " : "    {\"function\": ", stdout);
        json_str(row_name(r));
        printf(", \"id\": %" PRIu32 ", \"count\": %" PRIu64, f->id, all);
        for (int k = 0; k < NCOLS; k++) {
            printf(", \"%s\": %" PRIu64, col_names[k], n ? v[k] : 0);
            if (k == 0)
                printf(", \"share_pct\": %s", share);
        }
        printf(", \"unfinished\": %" PRIu64, f->unfinished);
        if (g_elided)
            printf(", \"elided\": %" PRIu64 ", \"elided_ns\": %" PRIu64, f->elided,
                   tool_ticks_to_ns(f->elided_ticks, freq));
        if (g_corrected) {
            fputs(", \"approx\": [", stdout);
            for (int k = 0, first_col = 1; k < NCOLS; k++)
                if (n && (approx >> k & 1)) {
                    printf("%s\"%s\"", first_col ? "" : ", ", col_names[k]);
                    first_col = 0;
                }
            putchar(']');
        }
        putchar('}');
    } else {
        printf("%10" PRIu64, all);
        for (int k = 0; k < NCOLS; k++) {
            char b[32];
            if (n && (approx >> k & 1)) {
                b[0] = '~';
                tool_fmt_ns(b + 1, sizeof b - 1, v[k]);
            } else if (n)
                tool_fmt_ns(b, sizeof b, v[k]);
            else
                snprintf(b, sizeof b, "-");
            printf(" %12s", b);
            if (k == 0)
                printf(" %7s", n ? share : "-");
        }
        printf(" %10" PRIu32 "  %s", f->id, row_name(r));
        if (f->unfinished)
            printf("  (%" PRIu64 " unfinished)", f->unfinished);
        if (f->elided)
            printf("  (%" PRIu64 " elided)", f->elided);
        putchar('\n');
    }
}

static void put_header(enum format fmt, bool per_thread)
{
    if (fmt == F_CSV)
        printf("%sfunction,id,count,total_ns,share_pct,self_ns,mean_ns,selfcall_ns,min_ns,"
               "median_ns,p90_ns,p99_ns,max_ns,unfinished%s%s\n",
               per_thread ? "pid,tid," : "", g_elided ? ",elided,elided_ns" : "",
               g_corrected ? ",approx" : "");
    else if (fmt == F_TEXT)
        printf("%10s %12s %7s %12s %12s %12s %12s %12s %12s %12s %12s %10s  %s\n", "count", "total",
               "share", "self", "mean", "self/call", "min", "median", "p90", "p99", "max", "id",
               "function");
}

int cmd_account(int argc, char **argv)
{
    const char *path = NULL, *syms_path = NULL;
    struct tool_window win = {0};
    enum format fmt = F_TEXT;
    bool per_thread = false, have_tid = false;
    int32_t tid = 0;
    uint64_t top = 0;
    g_sort = S_TOTAL;
    g_by_arg = 0;
    g_threads = NULL;
    g_elided = false;
    g_corrected = false;
    if (tool_suggest_wanted(argc, argv)) /* its own options and output: cmd_suggest.c */
        return cmd_suggest(argc, argv);
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = NULL;
        int m;
        if (strcmp(o, "--per-thread") == 0) {
            per_thread = true;
        } else if ((m = tool_option(argc, argv, &i, "account", "--format", &v)) != 0) {
            static const char *const formats[] = {"text", "csv", "json"}; /* enum format */
            int k = m < 0 ? -1 : tool_choice("account", "format", v, formats, 3);
            if (k < 0)
                return EXIT_USAGE;
            fmt = (enum format)k;
        } else if ((m = tool_option(argc, argv, &i, "account", "--sort", &v)) != 0) {
            static const char *const keys[] = {"total", "self",   "count", "max",  "name",
                                               "id",    "median", "p99",   "mean", "selfcall"};
            /* enum sort_key */
            int k = m < 0 ? -1 : tool_choice("account", "sort key", v, keys, 10);
            if (k < 0)
                return EXIT_USAGE;
            g_sort = (enum sort_key)k;
        } else if ((m = tool_option(argc, argv, &i, "account", "--by-arg", &v)) != 0) {
            uint64_t k;
            if (m < 0)
                return EXIT_USAGE;
            if (!tool_parse_u64(v, &k) || k < 1 || k > CS_MAX_ARGS) {
                tool_err("account: --by-arg needs an argument number 1..6, not '%s'", v);
                return EXIT_USAGE;
            }
            g_by_arg = (unsigned)k;
        } else if ((m = tool_option(argc, argv, &i, "account", "--top", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            if (!tool_parse_u64(v, &top) || top == 0) {
                tool_err("account: --top needs a positive integer, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_window_option(argc, argv, &i, "account", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "account", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (tool_trace_arg(argc, argv, &i, "account", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (g_by_arg && per_thread) {
        tool_err("account: --by-arg and --per-thread do not go together");
        return EXIT_USAGE;
    }
    if (!tool_default_trace(&path, "account"))
        return EXIT_USAGE;

    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_path, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    struct stf_syms *syms = tr.syms;
    uint64_t freq = tr.freq;
    tr.one = have_tid;
    tr.tid = tid;
    g_corrected = tool_trace_corrected(&tr);
    if (g_corrected) {
        g_spread = vclock_leaf_spread(&tr.calib);
        g_step = tr.calib.step;
    }

    if (tool_window_timed(&win)) {
        g_win = true;
        tool_window_ticks(&win, tool_trace_base(&tr), tr.freq, &g_win_from, &g_win_to);
        tool_trace_window(&tr, g_win_from, g_win_to);
    }
    g_filt = tool_window_filtered(&win) ? &win : NULL;
    g_syms = syms;
    g_freq = freq;
    struct acct a = {0};
    a.per_thread = per_thread;
    a.cs.nesting = true;
    size_t units = stf_cursor_threads(tr.c);
    struct run run = {
        .per_thread = per_thread, .part = calloc(units ? units : 1, sizeof *run.part), .all = &a};
    int rc = run.part ? tool_trace_parallel(&tr, acct_walk, acct_merge, &run) : CS_NOMEM;
    int status = EXIT_OK;
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    for (size_t k = 0; run.part && k < (units ? units : 1); k++)
        if (run.part[k]) { /* not merged: after a failure */
            acct_free(run.part[k]);
            free(run.part[k]);
        }
    free(run.part);
    g_elided = a.elided;
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && count_open(&a) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }

    struct row *rows = status == EXIT_OK ? calloc(a.nf ? a.nf : 1, sizeof *rows) : NULL;
    if (status == EXIT_OK && !rows) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    if (status == EXIT_OK) {
        size_t nrows = 0;
        for (size_t i = 0; i < a.nf; i++) {
            if (a.f[i].count == 0 && a.f[i].unfinished == 0 && a.f[i].elided == 0)
                continue;
            if (a.f[i].nvals)
                qsort(a.f[i].vals, a.f[i].nvals, sizeof *a.f[i].vals, cmp_u64);
            rows[nrows].f = &a.f[i];
            const char *nm = stf_syms_name(syms, a.f[i].id, rows[nrows].buf, sizeof rows[0].buf);
            rows[nrows].sym = nm == rows[nrows].buf ? NULL : nm;
            if (g_by_arg) {
                char v[24];
                if (a.f[i].argslot == ARG_LARGE)
                    snprintf(v, sizeof v, ">=0x%x", ARG_LARGE);
                else
                    snprintf(v, sizeof v, "%" PRIu32, a.f[i].argslot);
                size_t len = strlen(nm) + 40;
                rows[nrows].named = malloc(len);
                if (rows[nrows].named)
                    snprintf(rows[nrows].named, len, "%s(arg%u=%s)", nm, g_by_arg, v);
            }
            nrows++;
        }
        g_threads = per_thread ? a.cs.t : NULL;
        qsort(rows, nrows, sizeof *rows, row_cmp);
        uint64_t open = cs_open_frames(&a.cs);
        /* share's denominator without --per-thread: every thread's wall time, summed */
        uint64_t wall_sum = 0;
        for (size_t i = 0; i < a.cs.nt; i++)
            wall_sum += wall(&a.cs.t[i]);
        char wall_b[32];
        /* distinct functions with a finished call (rows are per thread with --per-thread) */
        size_t nfuncs = nrows;
        if (per_thread) {
            struct u64map seen = {0};
            nfuncs = 0;
            for (size_t i = 0; i < nrows; i++) {
                bool added;
                if (u64map_get(&seen, rows[i].f->id, &added) < 0) {
                    tool_err("out of memory");
                    status = EXIT_BAD_TRACE;
                    break;
                }
                nfuncs += added;
            }
            u64map_free(&seen);
        }

        if (status == EXIT_OK && fmt == F_JSON) {
            fputs("{\"trace\": ", stdout);
            json_str(path);
            fputs(per_thread ? ",\n  \"threads\": [" : ",\n  \"functions\": [", stdout);
        }
        if (status == EXIT_OK && fmt == F_CSV)
            put_header(fmt, per_thread);
        if (status == EXIT_OK && fmt == F_TEXT && !per_thread)
            put_header(fmt, per_thread);
        /* groups of rows: one per thread with --per-thread, else one */
        for (size_t g = 0; status == EXIT_OK && g < nrows;) {
            size_t e = g + 1;
            while (per_thread && e < nrows && rows[e].f->tix == rows[g].f->tix)
                e++;
            if (!per_thread)
                e = nrows;
            const struct cs_thread *th = &a.cs.t[rows[g].f->tix];
            size_t shown = top && top < e - g ? (size_t)top : e - g;
            if (per_thread && fmt == F_TEXT) {
                tool_fmt_ns(wall_b, sizeof wall_b, tool_ticks_to_ns(wall(th), freq));
                printf("%sthread %" PRId32 "/%" PRId32 " (wall time %s)\n", g ? "\n" : "", th->pid,
                       th->tid, wall_b);
                put_header(fmt, per_thread);
            } else if (per_thread && fmt == F_JSON) {
                printf("%s\n    {\"pid\": %" PRId32 ", \"tid\": %" PRId32 ", \"wall_ns\": %" PRIu64
                       ", \"functions\": [",
                       g ? "," : "", th->pid, th->tid, tool_ticks_to_ns(wall(th), freq));
            }
            for (size_t i = g; i < g + shown; i++)
                put_row(fmt, per_thread, th, &rows[i], freq, per_thread ? wall(th) : wall_sum,
                        i == g);
            if (per_thread && fmt == F_JSON)
                fputs(shown ? "\n    ]}" : "]}", stdout);
            g = e;
        }
        if (status == EXIT_OK && fmt == F_JSON) {
            fputs(nrows ? "\n  ],\n" : "],\n", stdout);
            printf("  \"summary\": {\"functions\": %zu, \"calls\": %" PRIu64
                   ", \"stack_repairs\": %" PRIu64 ", \"unmatched_exits\": %" PRIu64
                   ", \"unfinished_frames\": %" PRIu64 ", \"gaps\": %" PRIu64
                   ", \"gap_events\": %" PRIu64 ", \"gap_frames\": %" PRIu64
                   ", \"threads\": %zu, \"wall_ns\": %" PRIu64,
                   nfuncs, a.cs.calls, a.cs.repairs, a.cs.unmatched, open, a.cs.gaps,
                   a.cs.gap_events, a.cs.gap_frames, a.cs.nt, tool_ticks_to_ns(wall_sum, freq));
            if (tr.has_calib)
                printf(", \"times\": \"%s\", \"tracer_removed_ns\": %" PRIu64,
                       g_corrected ? "corrected" : "raw",
                       tool_ticks_to_ns(tool_trace_removed(&tr), freq));
            fputs("}}\n", stdout);
        }
        FILE *foot = fmt == F_TEXT ? stdout : stderr;
        if (status == EXIT_OK && fmt == F_TEXT && per_thread && nrows)
            putchar('\n');
        if (status == EXIT_OK) {
            fputs("# ", foot);
            if (per_thread)
                fprintf(foot, "threads: %zu, ", a.cs.nt);
            fprintf(foot,
                    "functions: %zu, calls: %" PRIu64 ", stack repairs: %" PRIu64
                    ", unmatched exits: %" PRIu64 ", unfinished frames: %" PRIu64 "\n",
                    nfuncs, a.cs.calls, a.cs.repairs, a.cs.unmatched, open);
            if (g_win)
                fprintf(foot, "# window: calls clipped at its edges: %" PRIu64 "\n", a.cs.clipped);
            tool_window_note(foot, "# ", &win, a.shown, a.cs.calls);
            tool_fmt_ns(wall_b, sizeof wall_b, tool_ticks_to_ns(wall_sum, freq));
            if (per_thread)
                fputs("# share: of each thread's wall time (from its first to its last record)\n",
                      foot);
            else
                fprintf(foot,
                        "# share: of %s, the summed wall time of %zu thread%s (each from its "
                        "first to its last record)\n",
                        wall_b, a.cs.nt, a.cs.nt == 1 ? "" : "s");
        }
        uint64_t elided = 0;
        for (size_t i = 0; i < a.nf; i++)
            elided += a.f[i].elided;
        if (status == EXIT_OK && elided)
            fprintf(foot,
                    "# elided: %" PRIu64 " calls shorter than the runtime's SLEDTRACE_MIN_DURATION "
                    "were counted, not recorded: count and total include them; self, mean, "
                    "self/call, min, median, p90, p99 and max are of the recorded calls only\n",
                    elided);
        if (status == EXIT_OK && a.cs.gaps)
            fprintf(foot,
                    "# gaps: %" PRIu64 " (%" PRIu64 " events dropped by the runtime); %" PRIu64
                    " frames open at a gap count as unfinished\n",
                    a.cs.gaps, a.cs.gap_events, a.cs.gap_frames);
        if (status == EXIT_OK && g_by_arg)
            fprintf(foot,
                    "# by argument %u: rows per function and value (values from 0x%x on in one "
                    "row); %" PRIu64 " calls that did not record it are left out\n",
                    g_by_arg, ARG_LARGE, a.no_arg);
        if (status == EXIT_OK) {
            struct vtimes vt = tool_trace_times(&tr);
            tool_times_note(foot, "# ", &vt, wall_sum);
        }
    }
    for (size_t i = 0; rows && i < a.nf; i++)
        free(rows[i].named);
    free(rows);
    acct_free(&a);
    tool_trace_close(&tr);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
