/* sledtrace slowest [TRACE] FUNC [-n N] [--tid T] [--from T] [--to T] [-o OUT.json]: the N
 * slowest calls of a function, and the timeline around them (issue 25.2: "show me the slow
 * one"). --from/--to: the walker's window (callstack.h), in pass 1; a clipped call competes
 * with its part inside.
 *
 * FUNC is an fnmatch glob (or a name exactly as written: window.c tool_glob_match) matched
 * against the name as the other commands show it (--names:
 * demangled, short by default; "#ID" for a function without a name), so 'parse*' or
 * 'ns::Box::*' pick several functions and their calls compete together.
 *
 * Pass 1 walks the trace with callstack.h's rule as account does (close_open false: a call cut by
 * a loss marker or open at the end has no duration, and counts as unfinished), sequentially,
 * its decoding ahead on a second processor (tool_trace_prefetch). The N slowest closed calls are
 * kept in a bounded heap (its root the least slow kept), each with its stack (the callers' ids,
 * outermost first), so memory grows with N times the depth, never with the calls. Calls of equal
 * duration rank by start, then pid, tid and depth: the output is the same on every run.
 * A call's duration is its corrected one (clamped at 0) unless --raw-times, as everywhere.
 *
 * Pass 2 (-o) writes Chrome trace_event JSON of the windows around them: for each slow call,
 * [start - margin, end + margin] on its thread (margin: a tenth of its duration, at least 1 us),
 * the windows of one thread merged where they overlap. Every call of such a thread that overlaps
 * a window is written as a complete event clipped to it (a call spanning two windows appears in
 * each: the pieces are disjoint), clipped ones marked args.clipped "start", "end" or "both", and
 * an instant "slowest #R" marks each slow call's start. The walker runs with close_open, as the
 * Chrome export's, so a call open at a gap or at the end is closed there and marked as there.
 * Times, names, pids, tids, thread names and coroutine tracks are the export's (convert.h's
 * chrome_* pieces): on its grid, and every start and end of a track after the one written before
 * it, so the calls nest exactly in every viewer. The file is small by construction: the calls of
 * N windows, each a fifth of its slow call's length more. Only function records of threads with
 * a window are fed; the others are read and skipped. */
#include "callstack.h"
#include "convert.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace slowest [TRACE] FUNC [-n N] [--tid T] [-o OUT.json [--max-calls M]]\n"
          "                         [--from TIME] [--to TIME] [--raw-times]\n"
          "                         [--syms FILE [--force-syms]] [--names MODE]\n"
          "\n"
          "The N slowest calls of FUNC, slowest first, one line each: rank, duration, start\n"
          "(seconds since the earliest thread start, as replay shows it), thread, and the\n"
          "call's stack, its callers outermost first ('main > run > FUNC'); then how many\n"
          "calls of FUNC there were. FUNC is a glob (fnmatch) matched against the names as\n"
          "the other commands show them ('parse*'), or such a name exactly as written\n"
          "('[sledtrace] buffer switch'); calls of every function it matches compete. A call that "
          "never returned (open at the end, or cut by a loss marker)\n"
          "has no duration and is counted apart. Calls of equal duration: earlier first.\n"
          "\n"
          "  -n N            how many calls (default 10)\n"
          "  --tid T         only thread T\n"
          "  --from TIME, --to TIME\n"
          "                  only the calls in this window (since the earliest thread start,\n"
          "                  as replay shows it; 10us, 2.5ms, 1s): a call crossing an edge\n"
          "                  competes with its part inside (summary: how many were clipped);\n"
          "                  OUT.json's windows are still around each call's part\n"
          "  -o OUT.json     also write the timeline around them as Chrome trace_event JSON\n"
          "                  (Perfetto, chrome://tracing, DevTools, speedscope): every call of\n"
          "                  their threads that overlaps [start - margin, end + margin] of a\n"
          "                  slow call, margin a tenth of its duration and at least 1 us,\n"
          "                  cut at the window's edges (args.clipped: start, end or both),\n"
          "                  and an instant 'slowest #R' at each slow call's start\n"
          "  --max-calls M   at most M calls in OUT.json (default 200000, about 30 MB, which\n"
          "                  any viewer loads; 0: no limit): when the windows hold more, the\n"
          "                  shortest are left out (a duration threshold, a power of two of\n"
          "                  the JSON's time step; otherData.shortest_kept and left_out say\n"
          "                  it, and one line on stderr); the trace is then read once more\n"
          "  --raw-times     times as measured, the tracer's own cost included\n"
          "                  (default: corrected, when the trace records that cost)\n"
          "  --syms FILE     symbols file (default: TRACE with .fdr replaced by .syms), or\n"
          "                  the traced binary: refused if its build id is not the one the\n"
          "                  trace's symbols file records\n"
          "  --force-syms    use a --syms binary even if its build id differs\n"
          "  --names MODE    C++ names: short (default: namespaces and name), full or mangled\n",
          out);
}

/* One slow call: its thread and track ("tid" of its coroutine's track), ticks, stack. */
struct slow {
    int32_t pid, tid, track_tid;
    uint32_t id;
    uint64_t start, dur; /* ticks; dur clamped at 0 (cs_ticks) */
    uint32_t *stack;     /* the callers' ids, outermost first, then id */
    size_t depth;        /* callers */
    bool repaired;
    uint64_t mark; /* pass 2: its start on the grid (0: not met) */
};

struct slowest {
    const struct stf_syms *syms;
    const char *glob;
    struct u64map match; /* function id -> index in matched */
    uint8_t *matched;    /* per index: 1 matches FUNC, 0 does not */
    size_t cap_matched;
    size_t n;          /* -n */
    struct slow *heap; /* the least slow kept at heap[0] */
    size_t nheap;
    uint64_t calls;      /* closed calls of FUNC */
    uint64_t unfinished; /* dropped at a loss marker or open at the end */
    bool nomem;
};

/* Does function id match FUNC? Looked up once per function. -1 when out of memory. */
static int matches(struct slowest *s, uint32_t id)
{
    bool added;
    long i = u64map_get(&s->match, id, &added);
    if (i < 0)
        return -1;
    if (added) {
        if ((size_t)i >= s->cap_matched) {
            uint8_t *m = tool_grow(s->matched, &s->cap_matched, 1, 64);
            if (!m)
                return -1;
            s->matched = m;
        }
        char buf[24];
        const char *name = stf_syms_name(s->syms, id, buf, sizeof buf);
        s->matched[i] = tool_glob_match(s->glob, name);
    }
    return s->matched[i];
}

/* Is a slower (ranks before) b? Longer first, then earlier, then by pid, tid and depth. */
static bool slower(const struct slow *a, const struct slow *b)
{
    if (a->dur != b->dur)
        return a->dur > b->dur;
    if (a->start != b->start)
        return a->start < b->start;
    if (a->pid != b->pid)
        return a->pid < b->pid;
    if (a->tid != b->tid)
        return a->tid < b->tid;
    return a->depth < b->depth;
}

static int cmp_rank(const void *pa, const void *pb)
{
    const struct slow *a = pa, *b = pb;
    return slower(a, b) ? -1 : slower(b, a) ? 1 : 0;
}

/* Heap order: a parent ranks after its children (heap[0] is the least slow kept). */
static void sift_down(struct slow *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && slower(&h[m], &h[l]))
            m = l;
        if (r < n && slower(&h[m], &h[r]))
            m = r;
        if (m == i)
            return;
        struct slow t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct slow *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!slower(&h[p], &h[i]))
            return;
        struct slow t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static int on_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    (void)t;
    (void)depth;
    struct slowest *s = ctx;
    int m = matches(s, f->id);
    if (m < 0)
        return -1;
    f->node = (uint32_t)m; /* counted as unfinished until it closes */
    s->unfinished += (uint64_t)m;
    return 0;
}

static int on_close(void *ctx, const struct cs_close *c)
{
    struct slowest *s = ctx;
    if (!c->f->node)
        return 0;
    s->unfinished--;
    s->calls++;
    struct slow k = {.pid = c->t->pid,
                     .tid = c->t->tid,
                     .track_tid = c->t->track == c->t->track0 ? c->t->tid
                                                              : (int32_t)(INT32_MAX - c->t->track),
                     .id = c->f->id,
                     .start = c->f->start,
                     .dur = cs_ticks(c->dur),
                     .depth = c->depth,
                     .repaired = c->repaired};
    if (s->nheap == s->n && !slower(&k, &s->heap[0]))
        return 0;
    k.stack = malloc((c->depth + 1) * sizeof *k.stack);
    if (!k.stack)
        return -1;
    for (size_t i = 0; i < c->depth; i++)
        k.stack[i] = c->t->st[i].id;
    k.stack[c->depth] = c->f->id;
    if (s->nheap == s->n) {
        free(s->heap[0].stack);
        s->heap[0] = k;
        sift_down(s->heap, s->nheap, 0);
    } else {
        s->heap[s->nheap] = k;
        sift_up(s->heap, s->nheap++);
    }
    return 0;
}

/* ---- pass 2: the windows as Chrome JSON ------------------------------------------------------ */

struct win {
    uint64_t lo, hi; /* ticks, inclusive */
};

/* A thread with windows: sorted, merged; cur the one the walk is in or before. */
struct wthread {
    int32_t pid, tid;
    struct win *w;
    size_t nw, cur;
    bool inside;
};

struct timeline {
    FILE *f;
    const struct stf_syms *syms;
    struct chrome_grid g;
    struct wthread *th;
    size_t nth;
    struct slow *slow; /* ranked */
    size_t nslow;
    uint64_t *last; /* per track: the last start or end written, in steps */
    size_t nlast;
    bool *named; /* per track: its thread_name written */
    size_t nnamed;
    int32_t *pids; /* processes named */
    size_t npids, cappids;
    uint64_t written;
    bool nomem;
    /* The budget (--max-calls): a counting walk first (counting: no output) fills hist with
     * the calls it would write by log2 of their duration in steps; the writing walk then
     * leaves out the calls shorter than min_steps, so that at most that many are written. */
    bool counting;
    uint64_t hist[65];
    uint64_t min_steps, left_out;
};

static struct wthread *wthread_of(struct timeline *tl, int32_t pid, int32_t tid)
{
    for (size_t i = 0; i < tl->nth; i++)
        if (tl->th[i].pid == pid && tl->th[i].tid == tid)
            return &tl->th[i];
    return NULL;
}

/* Grows a per-track array to hold track (zeroed), else sets nomem. */
static void *track_slot(struct timeline *tl, void *arr, size_t *n, size_t elem, uint32_t track)
{
    while (*n <= track) {
        size_t old = *n;
        char *a = tool_grow(arr, n, elem, 16);
        if (!a) {
            tl->nomem = true;
            return NULL;
        }
        memset(a + old * elem, 0, (*n - old) * elem);
        arr = a;
    }
    return arr;
}

/* The time of tsc on track as the export writes it: after the track's last start or end by at
 * least a step (convert_chrome.c's rule), and then the last. */
static uint64_t when(struct timeline *tl, uint32_t track, uint64_t tsc)
{
    uint64_t *l = track_slot(tl, tl->last, &tl->nlast, sizeof *l, track);
    if (!l)
        return 1;
    tl->last = l;
    uint64_t k = chrome_grid_steps(&tl->g, tsc);
    if (k <= l[track])
        k = l[track] + 1;
    l[track] = k;
    return k;
}

static void event_start(struct timeline *tl, const char *ph, int32_t pid, int32_t tid, uint64_t k)
{
    fprintf(tl->f, "%s\n{\"ph\":\"%s\",\"pid\":%" PRId32 ",\"tid\":%" PRId32 ",\"ts\":",
            tl->written++ ? "," : "", ph, pid, tid);
    chrome_put_time(tl->f, &tl->g, k);
}

/* The process's and the track's names, before the track's first event. */
static void name_track(struct timeline *tl, int32_t pid, int32_t tid, uint32_t track, bool first,
                       uint64_t ctx)
{
    bool *nm = track_slot(tl, tl->named, &tl->nnamed, sizeof *nm, track);
    if (!nm)
        return;
    tl->named = nm;
    if (nm[track])
        return;
    nm[track] = true;
    bool known = false;
    for (size_t i = 0; i < tl->npids; i++)
        known |= tl->pids[i] == pid;
    if (!known) {
        if (tl->npids == tl->cappids) {
            int32_t *p = tool_grow(tl->pids, &tl->cappids, sizeof *p, 4);
            if (!p) {
                tl->nomem = true;
                return;
            }
            tl->pids = p;
        }
        tl->pids[tl->npids++] = pid;
        event_start(tl, "M", pid, pid, chrome_grid_meta(&tl->g));
        fputs(",\"name\":\"process_name\",\"args\":{\"name\":\"", tl->f);
        chrome_process_label(tl->f, tl->syms, pid);
        fputs("\"}}", tl->f);
    }
    event_start(tl, "M", pid, first ? tid : (int32_t)(INT32_MAX - track), chrome_grid_meta(&tl->g));
    fputs(",\"name\":\"thread_name\",\"args\":{\"name\":\"", tl->f);
    chrome_thread_label(tl->f, tl->syms, pid, tid, !first, ctx);
    fputs("\"}}", tl->f);
}

/* cs_frame.node in pass 2: (window index + 1) << 1 while the frame is written in that window
 * (its start on the grid in mark), | 1 when its start was cut at the window's. */
static void emit(struct timeline *tl, const struct cs_thread *t, uint32_t track, uint64_t ctx,
                 const struct cs_frame *f, uint64_t e, bool cut_end, enum cs_why why)
{
    uint64_t steps = e > f->mark ? e - f->mark : 0;
    if (tl->counting) {
        tl->hist[steps ? 64 - __builtin_clzll(steps) : 0]++;
        return;
    }
    if (steps < tl->min_steps) {
        tl->left_out++;
        return;
    }
    bool first = track == t->track0;
    int32_t tid = first ? t->tid : (int32_t)(INT32_MAX - track);
    name_track(tl, t->pid, t->tid, track, first, ctx);
    event_start(tl, "X", t->pid, tid, f->mark);
    fputs(",\"dur\":", tl->f);
    chrome_put_time(tl->f, &tl->g, e - f->mark);
    char buf[24];
    const char *name = stf_syms_name(tl->syms, f->id, buf, sizeof buf);
    fputs(",\"cat\":\"function\",\"name\":\"", tl->f);
    tool_json_escape(tl->f, (const uint8_t *)name, strlen(name));
    fprintf(tl->f, "\",\"args\":{\"id\":%" PRId64, (int64_t)f->id);
    if (f->nargs)
        fprintf(tl->f, f->arg < (1ull << 53) ? ",\"arg\":%" PRIu64 : ",\"arg\":\"0x%" PRIx64 "\"",
                f->arg);
    bool cut_start = f->node & 1;
    if (cut_start || cut_end)
        fprintf(tl->f, ",\"clipped\":\"%s\"",
                cut_start && cut_end ? "both"
                : cut_start          ? "start"
                                     : "end");
    static const char *const closed[] = {NULL, ",\"closed\":\"repaired\"", ",\"closed\":\"gap\"",
                                         ",\"closed\":\"unfinished\""};
    if (!cut_end && closed[why])
        fputs(closed[why], tl->f);
    fputs("}}", tl->f);
}

/* The walk reaches window w of thread t: its open frames (every context's) start there, outermost
 * first. */
static void open_window(struct timeline *tl, struct cs_thread *t, struct wthread *wt)
{
    if (!t)
        return; /* the thread has not started: nothing open */
    uint32_t tag = (uint32_t)(wt->cur + 1) << 1 | 1;
    uint64_t lo = wt->w[wt->cur].lo;
    for (size_t i = 0; i < t->depth; i++) {
        t->st[i].mark = when(tl, t->track, lo);
        t->st[i].node = tag;
    }
    for (size_t k = 0; k < t->nctx; k++)
        for (size_t i = 0; i < t->ctxs[k].depth; i++) {
            t->ctxs[k].st[i].mark = when(tl, t->ctxs[k].track, lo);
            t->ctxs[k].st[i].node = tag;
        }
}

/* The walk passes the end of the window: the frames written in it end there, innermost first. */
static void close_window(struct timeline *tl, struct cs_thread *t, struct wthread *wt)
{
    if (!t)
        return;
    uint32_t tag = (uint32_t)(wt->cur + 1) << 1;
    uint64_t hi = wt->w[wt->cur].hi;
    for (size_t i = t->depth; i-- > 0;)
        if ((t->st[i].node & ~1u) == tag) {
            emit(tl, t, t->track, t->ctx, &t->st[i], when(tl, t->track, hi), true, CS_EXIT);
            t->st[i].node = 0;
        }
    for (size_t k = 0; k < t->nctx; k++)
        for (size_t i = t->ctxs[k].depth; i-- > 0;) {
            struct cs_frame *f = &t->ctxs[k].st[i];
            if ((f->node & ~1u) != tag)
                continue;
            emit(tl, t, t->ctxs[k].track, t->ctxs[k].id, f, when(tl, t->ctxs[k].track, hi), true,
                 CS_EXIT);
            f->node = 0;
        }
}

/* Before a record of thread t (NULL before its first) at tsc: the windows it enters and
 * leaves. */
static void advance(struct timeline *tl, struct cs_thread *t, struct wthread *wt, uint64_t tsc)
{
    while (wt->cur < wt->nw) {
        if (!wt->inside) {
            if (tsc < wt->w[wt->cur].lo)
                return;
            wt->inside = true;
            open_window(tl, t, wt);
        }
        if (tsc <= wt->w[wt->cur].hi)
            return;
        close_window(tl, t, wt);
        wt->inside = false;
        wt->cur++;
    }
}

static int tl_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct timeline *tl = ctx;
    f->node = 0;
    struct wthread *wt = wthread_of(tl, t->pid, t->tid);
    if (!wt || !wt->inside)
        return 0;
    f->node = (uint32_t)(wt->cur + 1) << 1;
    f->mark = when(tl, t->track, f->start);
    for (size_t i = 0; i < tl->nslow; i++) {
        struct slow *s = &tl->slow[i];
        if (!s->mark && s->pid == t->pid && s->tid == t->tid && s->start == f->start &&
            s->id == f->id && s->depth == depth)
            s->mark = f->mark;
    }
    return tl->nomem ? -1 : 0;
}

static int tl_close(void *ctx, const struct cs_close *c)
{
    struct timeline *tl = ctx;
    struct wthread *wt = wthread_of(tl, c->t->pid, c->t->tid);
    if (!c->f->node || !wt || !wt->inside || (c->f->node >> 1) != wt->cur + 1)
        return 0;
    emit(tl, c->t, c->t->track, c->t->ctx, c->f, when(tl, c->t->track, c->end), false, c->why);
    return tl->nomem ? -1 : 0;
}

static int cmp_win(const void *pa, const void *pb)
{
    const struct win *a = pa, *b = pb;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The windows of the ranked slow calls, per thread, sorted and merged. */
static int make_windows(struct timeline *tl, uint64_t freq)
{
    tl->th = calloc(tl->nslow ? tl->nslow : 1, sizeof *tl->th);
    if (!tl->th)
        return -1;
    uint64_t us = freq ? (freq + 999999) / 1000000 : 1000; /* ticks in 1 us, rounded up */
    for (size_t i = 0; i < tl->nslow; i++) {
        const struct slow *s = &tl->slow[i];
        struct wthread *wt = wthread_of(tl, s->pid, s->tid);
        if (!wt) {
            wt = &tl->th[tl->nth++];
            *wt = (struct wthread){.pid = s->pid, .tid = s->tid};
            wt->w = calloc(tl->nslow, sizeof *wt->w);
            if (!wt->w)
                return -1;
        }
        uint64_t m = s->dur / 10 > us ? s->dur / 10 : us;
        uint64_t end = s->start + s->dur;
        wt->w[wt->nw++] = (struct win){.lo = s->start > m ? s->start - m : 0,
                                       .hi = end > UINT64_MAX - m ? UINT64_MAX : end + m};
    }
    for (size_t i = 0; i < tl->nth; i++) {
        struct wthread *wt = &tl->th[i];
        qsort(wt->w, wt->nw, sizeof *wt->w, cmp_win);
        size_t n = 0;
        for (size_t j = 0; j < wt->nw; j++) {
            if (n && wt->w[j].lo <= wt->w[n - 1].hi) {
                if (wt->w[j].hi > wt->w[n - 1].hi)
                    wt->w[n - 1].hi = wt->w[j].hi;
            } else {
                wt->w[n++] = wt->w[j];
            }
        }
        wt->nw = n;
    }
    return 0;
}

/* Pass 2: the JSON of the windows to out. Returns an exit status. */
/* One walk of the trace through the windows (tl->counting: counting, else writing). */
static int walk(struct tool_trace *tr, struct timeline *tl)
{
    static const struct cs_ops ops = {.enter = tl_enter, .close = tl_close};
    struct callstack cs = {.close_open = true, .signed_dur = tool_trace_corrected(tr)};
    struct stf_item it;
    int status = EXIT_OK, rc = STF_END;
    while (status == EXIT_OK && (rc = tool_trace_next(tr, &it)) == STF_OK) {
        struct wthread *wt = wthread_of(tl, it.pid, it.tid);
        if (!wt)
            continue;
        if (it.kind == STF_K_FUNCTION || it.kind == STF_M_CUSTOM_EVENT ||
            it.kind == STF_M_TYPED_EVENT) {
            advance(tl, (struct cs_thread *)cs_find(&cs, it.pid, it.tid), wt, it.tsc);
        }
        if (cs_feed(&cs, &it, &ops, tl) != 0 || tl->nomem) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
        }
    }
    if (tool_trace_end(tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && (cs_finish(&cs, &ops, tl) != 0 || tl->nomem)) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    cs_free(&cs);
    return status;
}

static void timeline_free(struct timeline *tl)
{
    for (size_t i = 0; i < tl->nth; i++)
        free(tl->th[i].w);
    free(tl->th);
    free(tl->last);
    free(tl->named);
    free(tl->pids);
}

/* --max-calls: the counting walk, on a second opening of the trace, then tl->min_steps, the
 * smallest power of two of steps that keeps at most max_calls calls (0 when all fit). */
static int budget(struct timeline *tl, const char *path, const char *syms_opt, uint64_t freq,
                  uint64_t max_calls)
{
    struct tool_trace tc;
    if (tool_trace_open(&tc, path, syms_opt, "counting", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    struct timeline cnt = {
        .syms = tc.syms, .g = tl->g, .slow = tl->slow, .nslow = tl->nslow, .counting = true};
    int status = EXIT_OK;
    if (make_windows(&cnt, freq) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    if (status == EXIT_OK)
        status = walk(&tc, &cnt);
    uint64_t above = 0;
    for (int b = 64; b >= 0 && status == EXIT_OK; b--) {
        if (above + cnt.hist[b] > max_calls) {
            tl->min_steps = b >= 64 ? UINT64_MAX : (uint64_t)1 << b;
            break;
        }
        above += cnt.hist[b];
    }
    timeline_free(&cnt);
    for (size_t i = 0; i < tl->nslow; i++)
        tl->slow[i].mark = 0; /* found again by the writing walk */
    tool_trace_close(&tc);
    return status;
}

static int write_timeline(const char *path, const char *out, const char *syms_opt,
                          struct slow *slow, size_t nslow, const char *glob, uint64_t calls,
                          uint64_t end_tsc, uint64_t frames, uint64_t max_calls)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt, NULL);
    if (!f)
        return EXIT_BAD_TRACE;
    struct timeline tl = {.f = f, .syms = tr.syms, .slow = slow, .nslow = nslow};
    uint64_t base = tool_trace_base(&tr);
    int status = EXIT_OK;
    if (make_windows(&tl, tr.freq) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    /* every frame's start and end, in each window at most once, may move a step */
    chrome_grid_init(&tl.g, base, tr.freq, end_tsc, 2 * (frames + 1) * (nslow + 1));
    if (status == EXIT_OK && max_calls)
        status = budget(&tl, path, syms_opt, tr.freq, max_calls);
    fputs("{\"traceEvents\":[", f);
    if (status == EXIT_OK)
        status = walk(&tr, &tl);
    for (size_t i = 0; status == EXIT_OK && i < nslow; i++) {
        const struct slow *s = &slow[i];
        event_start(&tl, "i", s->pid, s->track_tid,
                    s->mark ? s->mark : chrome_grid_steps(&tl.g, s->start));
        char d[32];
        tool_fmt_ns(d, sizeof d, tool_ticks_to_ns(s->dur, tr.freq));
        fprintf(f,
                ",\"s\":\"t\",\"cat\":\"slowest\",\"name\":\"slowest #%zu\",\"args\":{\"rank\":%zu"
                ",\"dur_ns\":%" PRIu64 ",\"dur\":\"%s\"}}",
                i + 1, i + 1, tool_ticks_to_ns(s->dur, tr.freq), d);
    }
    size_t nw = 0;
    for (size_t i = 0; i < tl.nth; i++)
        nw += tl.th[i].nw;
    fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"function\":\"", f);
    tool_json_escape(f, (const uint8_t *)glob, strlen(glob));
    fprintf(f, "\",\"calls\":%" PRIu64 ",\"slowest\":%zu,\"windows\":%zu,\"left_out\":%" PRIu64,
            calls, nslow, nw, tl.left_out);
    if (tl.min_steps) {
        fputs(",\"shortest_kept\":", f);
        chrome_put_time(f, &tl.g, tl.min_steps);
    }
    fprintf(f,
            ",\"margin\":\"a tenth of "
            "each call, at least 1 us\",\"times\":\"%s\"}}\n",
            tool_trace_corrected(&tr) ? "corrected"
            : tr.has_calib            ? "raw"
                                      : "as measured");
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    if (status == EXIT_OK && tl.left_out)
        fprintf(stderr,
                "sledtrace: slowest: %" PRIu64 " calls shorter than the shortest kept left out "
                "of %s (--max-calls %" PRIu64 "; otherData says which)\n",
                tl.left_out, out, max_calls);
    timeline_free(&tl);
    tool_trace_close(&tr);
    return status;
}

/* ---- the command ------------------------------------------------------------------------------ */

int cmd_slowest(int argc, char **argv)
{
    const char *pos[2] = {NULL, NULL}, *syms_path = NULL, *out = NULL;
    size_t npos = 0;
    uint64_t n = 10, max_calls = 200000;
    int32_t tid = 0;
    bool have_tid = false;
    struct tool_window win = {0};
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL, *dummy = NULL;
        int m;
        if ((m = tool_window_time_option(argc, argv, &i, "slowest", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_option(argc, argv, &i, "slowest", "-n", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &n) || n == 0 || n > 1000000) {
                if (m > 0)
                    tool_err("slowest: -n needs an integer from 1 to 1000000, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "slowest", "--max-calls", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &max_calls)) {
                if (m > 0)
                    tool_err("slowest: --max-calls needs an integer (0: no limit), not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "slowest", "-o", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            out = v;
        } else if ((m = tool_tid_option(argc, argv, &i, "slowest", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0) {
            if (npos == 2) {
                tool_err("slowest: one trace and one function, not '%s' too", argv[i]);
                return EXIT_USAGE;
            }
            pos[npos++] = argv[i];
        } else if (tool_trace_arg(argc, argv, &i, "slowest", &dummy, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (npos == 0) {
        tool_err("slowest: which function? (sledtrace slowest [TRACE] FUNC)");
        return EXIT_USAGE;
    }
    const char *path = npos == 2 ? pos[0] : NULL, *glob = pos[npos - 1];
    if (!tool_default_trace(&path, "slowest"))
        return EXIT_USAGE;

    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_path, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    tr.one = have_tid;
    tr.tid = tid;
    uint64_t base = tool_trace_base(&tr);
    struct slowest s = {.syms = tr.syms, .glob = glob, .n = (size_t)n};
    s.heap = calloc(s.n, sizeof *s.heap);
    static const struct cs_ops ops = {.enter = on_enter, .close = on_close};
    struct callstack cs = {.signed_dur = tool_trace_corrected(&tr)};
    tool_window_begin(&win, &tr, &cs, base, NULL, NULL);
    int status = EXIT_OK, rc = STF_END;
    if (!s.heap) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    } else {
        tool_trace_prefetch(&tr);
        struct stf_item it;
        while ((rc = cs_next_item(&cs, &tr, &ops, &s, &it)) == STF_OK)
            if (cs_feed(&cs, &it, &ops, &s) != 0)
                break;
        if (rc == STF_OK || rc == CS_NOMEM) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            rc = STF_END;
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    uint64_t end_tsc = 0;
    for (size_t i = 0; i < cs.nt; i++)
        if (cs.t[i].last > end_tsc)
            end_tsc = cs.t[i].last;
    qsort(s.heap, s.nheap, sizeof *s.heap, cmp_rank);
    if (status == EXIT_OK) {
        printf("%4s %12s %16s %8s  %s\n", "rank", "duration", "start", "tid", "stack");
        for (size_t i = 0; i < s.nheap; i++) {
            const struct slow *k = &s.heap[i];
            char d[32], st[40];
            tool_fmt_ns(d, sizeof d, tool_ticks_to_ns(k->dur, tr.freq));
            *tool_put_secs(st, tool_ticks_to_ns(k->start >= base ? k->start - base : 0, tr.freq),
                           16) = '\0';
            printf("%4zu %12s %s %8" PRId32 "  ", i + 1, d, st, k->tid);
            for (size_t j = 0; j <= k->depth; j++) {
                char buf[24];
                fputs(j ? " > " : "", stdout);
                fputs(stf_syms_name(tr.syms, k->stack[j], buf, sizeof buf), stdout);
            }
            puts(k->repaired ? " [repaired]" : "");
        }
        printf("# %zu slowest of %" PRIu64 " calls of %s", s.nheap, s.calls, glob);
        if (s.unfinished)
            printf(" (and %" PRIu64 " unfinished, without a duration)", s.unfinished);
        putchar('\n');
        if (cs.win)
            printf("# window: calls clipped at its edges: %" PRIu64 "\n", cs.clipped);
        struct vtimes vt = tool_trace_times(&tr);
        tool_times_note(stdout, "# ", &vt, 0);
        if (fflush(stdout) != 0)
            status = EXIT_BAD_TRACE;
    }
    if (status == EXIT_OK && out) /* the file read again: a piped trace's copy */
        status = write_timeline(tool_trace_source(&tr), out, syms_path, s.heap, s.nheap, glob,
                                s.calls, end_tsc, cs.calls + cs_open_frames(&cs), max_calls);
    for (size_t i = 0; i < s.nheap; i++)
        free(s.heap[i].stack);
    free(s.heap);
    free(s.matched);
    u64map_free(&s.match);
    cs_free(&cs);
    tool_trace_close(&tr);
    return status;
}
