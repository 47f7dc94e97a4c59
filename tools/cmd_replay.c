/* sledtrace replay: per-thread call tree, one line per call.
 *
 * Two orders, both streaming (memory grows with threads and stack depth only):
 *  - entry (the default): time order, as uftrace replay shows it. A call that makes no call
 *    (its exit is the thread's next record) is one line with its duration; any other call opens
 *    with "name {" at its entry and closes with "} name" and its duration at its exit, so
 *    callees sit between. One record of lookahead (the next item of the same thread) tells the
 *    two apart. Frames closed by an outer exit close with [repaired]; frames dropped at a loss
 *    marker close with [gap] before the "-- N events lost --" line, frames still open at the
 *    end of their thread with [unfinished] (no duration is known for those two).
 *  - exit (--order exit): each call is one line printed when it returns (callees before their
 *    caller); the start column gives the entry order (`sort -s -k2,2n`).
 * --min-duration in entry order needs a call's duration at its entry: a second cursor, synced
 * to the first (stf_cursor_sync), walks on until the call ends or the threshold is passed, so
 * the extra reading is bounded by the call or by the threshold's worth of records; a call
 * found shorter hides its callees without looking (they are shorter still).
 * Stack rule, repairs and loss markers as in account (callstack.h).
 * --from/--to (window.h; callstack.h, "Windows"): the calls open at the window's start open
 * there ("NAME { [clipped]", never a leaf), calls crossing its end close there, and a line
 * closing a clipped call ends with [clipped]; durations and --min-duration are the window's
 * part. In entry order the lookahead for a clipped frame starts at the record being fed (the
 * one that reached the window), with the frames above it on its stack, and stops at the
 * window's end.
 * --filter, --exclude, --max-depth (window.h): decided at a call's entry (tool_window_enter) in
 * entry order, at its close in exit order; --filter shows a match's subtree, --filter-only
 * each call on its own name (replay's rule before the shared filters). */
#include "argtypes.h"
#include "callargs.h"
#include "callstack.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace replay TRACE [--order entry|exit] [--tid N] [--max-depth N]\n"
          "                        [--min-duration TIME] [--filter P [--filter-only]]\n"
          "                        [--exclude P] [--from TIME] [--to TIME]\n"
          "                        [--syms FILE [--force-syms]]\n"
          "\n"
          "Per-thread call tree, thread after thread:\n"
          "    TID  TIME  DURATION  <2 spaces per depth>NAME\n"
          "(TIME: seconds since the earliest thread start.) Indentation stops at depth 64:\n"
          "deeper lines keep 128 spaces and show their depth, as '[depth N] NAME'\n"
          "(top-level calls are depth 0), so output stays linear in the calls.\n"
          "In entry order (the default) a call that makes no call is one line; any other\n"
          "opens with 'NAME {' at its entry (TIME: entry) and closes with '} NAME' and its\n"
          "duration at its exit (TIME: exit). An exit closes the nearest open frame of its\n"
          "function; frames above it close at the same time, marked [repaired]. At a loss\n"
          "marker the thread's open frames close with [gap] and '-- N events lost --'\n"
          "follows; frames open at the end close with [unfinished]. A [wait] during which\n"
          "its thread came back on another CPU (it was descheduled) ends with [migrated].\n"
          "Times are wall time. '[wait] NAME' lines are the time the thread spent blocked\n"
          "in libc's NAME (a lock, a condition variable, a sleep, a read...), in its\n"
          "caller's frame; '[sledtrace] ...' lines are the tracer's own.\n"
          "In exit order each call is one line, printed when it returns (callees first;\n"
          "TIME: entry, so 'sort -s -k2,2n' gives entry order).\n"
          "\n"
          "  --order O          entry (default) or exit\n"
          "  --tid N            only thread N\n"
          "  --max-depth N      only calls at depth < N (top-level calls are depth 0);\n"
          "                     --depth N is the same\n"
          "  --min-duration TIME  only calls lasting at least TIME (10us, 2.5ms, 1s; a bare\n"
          "                     number is nanoseconds) (and, in entry\n"
          "                     order, callees of shown calls only: a shorter call hides\n"
          "                     its callees too, as they are shorter still)\n"
          "  --filter P         only the calls of functions matching P and everything they\n"
          "                     call (their subtree), as uftrace -F; P: comma-separated\n"
          "                     [LIB:]GLOB (fnmatch, e.g. 'f*', 'libz.so*:inflate*'), on\n"
          "                     names as shown (repeatable)\n"
          "  --exclude P        not the calls of functions matching P, nor their subtree\n"
          "                     (as uftrace -N; wins over --filter)\n"
          "  --filter-only      --filter and --exclude test each call on its own name:\n"
          "                     a match's callees are not shown unless they match too\n"
          "  --from TIME, --to TIME\n"
          "                     only the time in this window (TIME as shown; 10us, 2.5ms,\n"
          "                     1s): calls open at its start open there, calls open at its\n"
          "                     end close there, each marked [clipped], with the duration\n"
          "                     of their part inside\n"
          "  --no-args          hide the arguments and return values recorded with\n"
          "                     SLEDTRACE_ARGS (shown by default: by name and type from the\n"
          "                     binary's DWARF when it has -g, else as raw registers)\n"
          "  --raw-times        times as measured, the tracer's own cost included\n"
          "                     (default: corrected, when the trace records that cost)\n"
          "  --syms FILE        symbols file (default: TRACE with .fdr replaced by .syms), or\n"
          "                     the traced binary: refused if its build id is not the one\n"
          "                     the trace's symbols file records\n"
          "  --force-syms       use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n",
          out);
}

/* cs_frame.node bits, entry order: the frame's lines are shown; it is a leaf (one line); it is
 * known to last less than --min-duration, and so are its callees. */
enum { SHOWN = 1, LEAF = 2, SHORT = 4 };
enum { STR_KEEP = 1024 }; /* a string argument's bytes kept (the runtime records at most 256) */

struct replay {
    const struct stf_syms *syms;
    uint64_t freq, base;
    const struct tool_window *w; /* --filter, --exclude, --max-depth (window.h) */
    uint64_t min_ns;             /* --min-duration (w's), tested here with a look ahead */
    uint64_t win_to;             /* --to in ticks (UINT64_MAX: none) */
    uint64_t shown;
    bool next_exits;   /* entry order: the item being fed is an entry whose exit comes next */
    uint64_t pend_arg; /* entry order: the arguments logged after the entry being fed */
    uint32_t pend_nargs;
    /* entry order: all of them (SLEDTRACE_ARGS), the strings' bytes kept in pend_str, and the
     * return registers logged before the exit just read (ret_next), then before each of the two
     * items walk_entry holds (ret_of[which]) */
    struct tool_callargs pend;
    struct tool_argtypes *types; /* the parameters' names and types (DWARF), or NULL */
    bool no_args;                /* --no-args: arguments and return values not shown */
    uint8_t pend_str[CS_MAX_ARGS][STR_KEEP];
    uint64_t ret_next[4], ret_of[2][4];
    bool has_ret_next, has_ret_of[2];
    /* A CPU change (NewCPUId) read before the next stack item (cpu + 1, 0: none), fed to the
     * walker just before that item, so that it marks the frame it happened in ([migrated]) */
    uint32_t cpu_next, cpu_of[2];
    /* entry order with --min-duration: a second cursor looks ahead for a call's end */
    struct stf_cursor *look;
    const struct stf_cursor *main;
    const struct vclock *vc;    /* main's corrected clock (vclock.h), where main is */
    const struct stf_item *cur; /* the item being fed */
    const struct stf_item *nxt; /* the item after the one being fed (main is past it) */
    uint32_t *ids;              /* the lookahead's own stack of function ids */
    size_t cap;
    const char *fail; /* why the lookahead failed (else a failure is out of memory) */
    bool named;       /* a thread has been introduced (below) */
    int32_t named_pid, named_tid;
    uint64_t ctx_shown; /* the context whose lines follow (0: the thread's first, unnamed) */
};

/* Before a thread's first line: "# thread TID: NAME" when the sidecar names it (the name the
 * program gave it, pthread_setname_np or prctl). */
static void thread_header(struct replay *rp, int32_t pid, int32_t tid)
{
    if (rp->named && rp->named_pid == pid && rp->named_tid == tid)
        return;
    rp->named = true;
    rp->named_pid = pid;
    rp->named_tid = tid;
    rp->ctx_shown = 0;
    const char *nm = stf_syms_thread_name(rp->syms, pid, tid);
    if (!nm)
        return;
    char *shown = tool_printable(nm);
    printf("# thread %" PRId32 ": %s\n", tid, shown ? shown : nm);
    free(shown);
}

/* "TID     TIME " like printf("%-7d %12.9f "), at p; returns the end. Replay writes a line per
 * call, so its lines are put together without printf. The time is the integer nanosecond
 * count (tool_ticks_to_ns, rounded half up), which can differ in the last digit from printf
 * of the double ticks/frequency on exact half-nanosecond ties; it is the more exact one. */
static char *put_head(const struct replay *rp, char *p, int32_t tid, uint64_t tsc)
{
    char *q = tool_put_i64(p, tid);
    while (q - p < 7)
        *q++ = ' ';
    *q++ = ' ';
    if (tsc >= rp->base)
        q = tool_put_secs(q, tool_ticks_to_ns(tsc - rp->base, rp->freq), 12);
    else /* not with the earliest thread start as zero; kept for safety */
        q += snprintf(q, 32, "%12.9f", -tool_ticks_to_s(rp->base - tsc, rp->freq));
    *q++ = ' ';
    return q;
}

/* Indentation stops growing at this depth: lines at it and deeper keep 2 * MAX_INDENT spaces
 * and say their depth ("[depth N] "), so that a line's length does not grow with the depth
 * (3 million nested calls fully indented are terabytes of spaces). */
enum { MAX_INDENT = 64 };

/* One line: head, the duration right-aligned in 10 columns, two spaces, two more per depth
 * (MAX_INDENT levels at most, then "[depth N] "), then pre, name, args and post. */
static void line(const struct replay *rp, int32_t tid, uint64_t tsc, const char *dur, size_t depth,
                 const char *pre, const char *name, const char *args, const char *post)
{
    static const char spaces[2 * MAX_INDENT + 1] =
        "                                                                "
        "                                                                ";
    char buf[128];
    char *q = put_head(rp, buf, tid, tsc);
    size_t dl = strlen(dur);
    if (dl > 32)
        dl = 32;
    for (size_t k = dl; k < 10; k++)
        *q++ = ' ';
    memcpy(q, dur, dl);
    q += dl;
    *q++ = ' ';
    *q++ = ' ';
    fwrite(buf, 1, (size_t)(q - buf), stdout);
    fwrite(spaces, 1, 2 * (depth < MAX_INDENT ? depth : MAX_INDENT), stdout);
    if (depth >= MAX_INDENT)
        printf("[depth %zu] ", depth);
    fputs(pre, stdout);
    fputs(name, stdout);
    fputs(args, stdout);
    fputs(post, stdout);
    putchar('\n');
}

/* Before a line of context id of thread t (callstack.h, "Contexts": coroutines), at time tsc:
 * "-- context N --" when the lines before were another context's. A thread that never
 * switches shows none. */
static void context_line(struct replay *rp, const struct cs_thread *t, uint64_t id, uint64_t tsc)
{
    if (!t->switched || id == rp->ctx_shown)
        return;
    rp->ctx_shown = id;
    char buf[64];
    fwrite(buf, 1, (size_t)(put_head(rp, buf, t->tid, tsc) - buf), stdout);
    if (id & STF_CTX_ADDRESS)
        printf("-- context at 0x%" PRIx64 " --\n", id & ~STF_CTX_ADDRESS);
    else
        printf("-- context %" PRIu64 " --\n", id);
}

/* A call's logged arguments (callargs.h: "(42, \"GET /\")", values of 2^32 and more, often
 * addresses, in hex) and its return value (" = 6765"), as uftrace's replay -a shows them, into
 * buf; "" without either. Frame f at index i of t's running stack, or a parked one. */
enum { ARGS_TEXT = 4096 };
static const struct tool_dw_func *types_of(struct replay *rp, uint32_t id)
{
    return rp->types ? tool_argtypes_func(rp->types, id) : NULL;
}

static const char *args_text(struct replay *rp, char *buf, size_t len, const struct cs_thread *t,
                             size_t i, const struct cs_frame *f, const uint64_t *ret)
{
    buf[0] = '\0';
    if (rp->no_args || (!f->nargs && !ret))
        return buf;
    struct tool_callargs a;
    tool_callargs_of(&a, t, i, f, ret);
    const struct tool_dw_func *dw = types_of(rp, f->id);
    tool_args_text(&a, dw, buf, len / 2);
    size_t n = strlen(buf);
    tool_ret_text(&a, dw, buf + n, len - n);
    return buf;
}

/* " = value" of a call with callees, at its "}". */
static const char *ret_only(struct replay *rp, char *buf, size_t len, uint32_t id,
                            const uint64_t *ret)
{
    buf[0] = '\0';
    if (rp->no_args || !ret)
        return buf;
    struct tool_callargs r = {.ret = ret};
    return tool_ret_text(&r, types_of(rp, id), buf, len);
}

/* What ends a closing line: [clipped] for a call crossing the window's edge, [repaired],
 * [migrated] for a call during which its thread came back on another CPU (descheduled). */
static const char *close_mark(const struct cs_close *c)
{
    static char buf[48];
    snprintf(buf, sizeof buf, "%s%s%s", c->clip ? " [clipped]" : "",
             c->repaired ? " [repaired]" : "", c->f->moved ? " [migrated]" : "");
    return buf;
}

/* ---- exit order ------------------------------------------------------------------------- */

/* A call is shown as window.c's rules say (--tid is tool_trace's: other threads' records never
 * arrive). */
static int on_close(void *ctx, const struct cs_close *c)
{
    struct replay *rp = ctx;
    if (tool_window_close(rp->w, rp->syms, c, rp->freq) != TW_SHOW)
        return 0;
    char buf[24];
    const char *name = stf_syms_name(rp->syms, c->f->id, buf, sizeof buf);
    uint64_t ns = tool_ticks_to_ns(cs_ticks(c->dur), rp->freq);
    char d[32];
    tool_fmt_ns(d, sizeof d, ns);
    char a[ARGS_TEXT];
    context_line(rp, c->t, c->t->ctx, c->end);
    line(rp, c->t->tid, c->f->start, d, c->depth, "", name,
         args_text(rp, a, sizeof a, c->t, c->depth, c->f, c->ret), close_mark(c));
    rp->shown++;
    return 0;
}

static void lost_line(struct replay *rp, const struct cs_thread *t, uint64_t tsc, uint64_t lost)
{
    context_line(rp, t, t->ctx, tsc);
    char buf[64];
    fwrite(buf, 1, (size_t)(put_head(rp, buf, t->tid, tsc) - buf), stdout);
    printf("-- %" PRIu64 " events lost --\n", lost);
}

static int on_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, uint64_t lost,
                   size_t dropped)
{
    (void)dropped;
    lost_line(ctx, t, tsc, lost);
    return 0;
}

/* ---- entry order -------------------------------------------------------------------------- */

static bool lasts(const struct replay *rp, uint64_t start, uint64_t end)
{
    if (end > rp->win_to)
        end = rp->win_to; /* the window's part */
    return tool_ticks_to_ns(end >= start ? end - start : start - end, rp->freq) >= rp->min_ns;
}

/* Does frame f (t->st[depth], just entered, not a leaf) last at least --min-duration? The look
 * cursor walks on from the item after f's entry with the stack rule, until f closes (its exit,
 * or an exit of a frame below it: a repair) or the time passes the threshold. A frame dropped at
 * a loss marker or still open at the end has no duration: no. 1, 0, or -1 on error. The walk
 * costs the records of the call or of --min-duration, whichever ends first. LIMIT: the call
 * is accepted at the first record the threshold after its entry; if the counter later steps
 * back inside the call (a TSCWrap to an earlier value, unsynchronised CPUs), its final
 * duration can be shorter and exit order would leave it out. The counters sledtrace's runtime
 * uses (an invariant TSC, else CLOCK_MONOTONIC) do not step back. */
static int long_enough(struct replay *rp, const struct cs_thread *t, const struct cs_frame *f,
                       size_t depth)
{
    bool clipped = f->clip & CS_CLIP_START; /* the walk starts at the record being fed */
    if (!rp->nxt && !clipped)
        return 0; /* the thread ends: unfinished */
    if (stf_cursor_sync(rp->look, rp->main) != STF_OK) {
        rp->fail = "the trace changed while it was read (--min-duration looks ahead in it)";
        return -1;
    }
    size_t n = 0;
    if (clipped) { /* the frames above f, open at the window's start, are on the stack */
        for (size_t k = depth + 1; k < t->depth; k++) {
            if (n == rp->cap) {
                uint32_t *ids = tool_grow(rp->ids, &rp->cap, sizeof *ids, 64);
                if (!ids)
                    return -1;
                rp->ids = ids;
            }
            rp->ids[n++] = t->st[k].id;
        }
    }
    int pre = clipped ? 0 : 1; /* items taken: 0 cur, 1 nxt, then the look cursor */
    struct stf_item it = clipped ? *rp->cur : *rp->nxt;
    struct vclock vc = *rp->vc; /* the look cursor's items get main's correction from here */
    /* f's context (coroutines, callstack.h): records of the others say nothing of f's end, only
     * of the time passing. Unknown before the thread's first switch: that switch's `from`. */
    uint64_t home = t->switched ? t->ctx : UINT64_MAX;
    bool away = false;
    for (;;) {
        uint64_t lost, to, from;
        uint32_t how;
        if (it.kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it.payload, it.payload_len, &lost))
            return 0;
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_context(it.event_type, it.payload, it.payload_len, &to, &from, &how)) {
            if (home == UINT64_MAX)
                home = from;
            away = to != home;
        }
        if (it.kind == STF_K_FUNCTION && it.tsc > rp->win_to)
            return lasts(rp, f->start, rp->win_to); /* closed at the window's end */
        if (it.kind == STF_K_FUNCTION && lasts(rp, f->start, it.tsc))
            return 1;
        if (it.kind == STF_K_FUNCTION && !away) {
            if (it.action == STF_ENTER || it.action == STF_ENTER_ARGS) {
                if (n == rp->cap) {
                    uint32_t *ids = tool_grow(rp->ids, &rp->cap, sizeof *ids, 64);
                    if (!ids)
                        return -1;
                    rp->ids = ids;
                }
                rp->ids[n++] = it.func_id;
            } else {
                size_t i = n;
                while (i > 0 && rp->ids[i - 1] != it.func_id)
                    i--;
                if (i > 0) {
                    n = i - 1; /* a callee of f returns (and the frames above it) */
                } else {
                    bool closes = it.func_id == f->id;
                    for (size_t k = 0; k < depth && !closes; k++)
                        closes = t->st[k].id == it.func_id;
                    if (closes)
                        return lasts(rp, f->start, it.tsc);
                    /* unmatched: ignored, as by the stack rule */
                }
            }
        }
        if (pre++ == 0) {
            if (!rp->nxt)
                return 0; /* the thread ends: unfinished */
            it = *rp->nxt;
            continue;
        }
        int rc = stf_cursor_next(rp->look, &it);
        if (rc == STF_OK)
            vclock_item(&vc, &it);
        if (rc != STF_OK) {
            if (rc == STF_END)
                return 0;
            rp->fail = stf_cursor_error(rp->look, NULL);
            return -1;
        }
    }
}

static int tree_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct replay *rp = ctx;
    char buf[24];
    const char *name = stf_syms_name(rp->syms, f->id, buf, sizeof buf);
    char a[ARGS_TEXT];
    bool show = tool_window_enter(rp->w, rp->syms, t, f, depth);
    bool clipped = f->clip & CS_CLIP_START; /* opened at the window's start: never a leaf */
    f->node = rp->next_exits && !clipped ? LEAF : 0; /* a leaf: one line, at its exit */
    /* its CallArguments were read with the lookahead (a clipped frame's not): walk_entry feeds
     * them right after (the leaf's line, at its close, reads them from the walker) */
    if (rp->min_ns && depth > 0 && (t->st[depth - 1].node & SHORT)) {
        f->node |= SHORT; /* inside a shorter call */
        show = false;
    } else if (rp->min_ns && show) {
        int r = f->node & LEAF ? lasts(rp, f->start, rp->nxt->tsc) : long_enough(rp, t, f, depth);
        if (r < 0)
            return -1;
        if (!r) {
            f->node |= SHORT;
            show = false;
        }
    }
    if (show) {
        f->node |= SHOWN;
        if (!(f->node & LEAF)) {
            context_line(rp, t, t->ctx, f->start);
            line(rp, t->tid, f->start, "", depth, "", name,
                 clipped || rp->no_args || !rp->pend.nargs
                     ? ""
                     : tool_args_text(&rp->pend, types_of(rp, f->id), a, sizeof a),
                 clipped ? " { [clipped]" : " {");
        }
    }
    return 0;
}

/* "} name" for a frame of context ctx that ends without a duration (gap, unfinished), at time
 * tsc. */
static void close_unknown(struct replay *rp, const struct cs_thread *t, uint64_t ctx,
                          const struct cs_frame *f, size_t depth, uint64_t tsc, const char *why)
{
    if (!(f->node & SHOWN))
        return;
    context_line(rp, t, ctx, tsc);
    char buf[24];
    const char *name = stf_syms_name(rp->syms, f->id, buf, sizeof buf);
    char a[ARGS_TEXT];
    line(rp, t->tid, tsc, "-", depth, f->node & LEAF ? "" : "} ", name,
         f->node & LEAF ? args_text(rp, a, sizeof a, t, depth, f, NULL) : "", why);
}

static int tree_close(void *ctx, const struct cs_close *c)
{
    struct replay *rp = ctx;
    if (!(c->f->node & SHOWN))
        return 0;
    char buf[24], d[32];
    const char *name = stf_syms_name(rp->syms, c->f->id, buf, sizeof buf);
    tool_fmt_ns(d, sizeof d, tool_ticks_to_ns(cs_ticks(c->dur), rp->freq));
    bool leaf = c->f->node & LEAF;
    char a[ARGS_TEXT];
    context_line(rp, c->t, c->t->ctx, leaf ? c->f->start : c->end);
    if (leaf)
        args_text(rp, a, sizeof a, c->t, c->depth, c->f, c->ret);
    else
        ret_only(rp, a, sizeof a, c->f->id, c->ret);
    line(rp, c->t->tid, leaf ? c->f->start : c->end, d, c->depth, leaf ? "" : "} ", name, a,
         close_mark(c));
    rp->shown++;
    return 0;
}

/* The frames dropped at a loss marker are still in t->st[0, dropped): close them, top first. */
static int tree_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, uint64_t lost,
                     size_t dropped)
{
    struct replay *rp = ctx;
    for (size_t i = dropped; i-- > 0;)
        close_unknown(rp, t, t->ctx, &t->st[i], i, tsc, " [gap]");
    lost_line(rp, t, tsc, lost);
    return 0;
}

/* The frames of another context of the thread, dropped at the same loss marker. */
static int tree_parked_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, size_t dropped)
{
    for (size_t i = dropped; i-- > 0;)
        close_unknown(ctx, t, t->ctx, &t->st[i], i, tsc, " [gap]");
    return 0;
}

/* The end of a thread's records: the open frames of each of its contexts close as
 * [unfinished], top first, the running context's first. */
static void tree_thread_end(struct replay *rp, const struct callstack *cs, int32_t pid, int32_t tid)
{
    const struct cs_thread *t = cs_find(cs, pid, tid);
    if (!t || (cs->win && !t->win_in))
        return; /* none, or all its records before the window: nothing of it shown */
    for (size_t i = t->depth; i-- > 0;)
        close_unknown(rp, t, t->ctx, &t->st[i], i, t->last, " [unfinished]");
    for (size_t k = 0; k < t->nctx; k++)
        for (size_t i = t->ctxs[k].depth; i-- > 0;)
            close_unknown(rp, t, t->ctxs[k].id, &t->ctxs[k].st[i], i, t->last, " [unfinished]");
}

static bool same_thread(const struct stf_item *a, const struct stf_item *b)
{
    return a->pid == b->pid && a->tid == b->tid;
}

/* The next function record, loss marker or context switch (the only records that change a
 * stack; the others, call arguments and events included, are skipped so that a call with
 * arguments is still a leaf; the arguments are kept in rp for the entry before them). A loss
 * marker's or switch's payload is copied to pay: reading on may move the cursor's buffer. */
enum { STACK_PAYLOAD = 24 };
_Static_assert(STACK_PAYLOAD == (int)STF_LOSS_PAYLOAD && STACK_PAYLOAD == (int)STF_CONTEXT_PAYLOAD,
               "the payloads next_stack_item keeps");
static int next_stack_item(struct tool_trace *tr, struct stf_item *it, uint8_t *pay,
                           struct replay *rp)
{
    int rc;
    while ((rc = tool_trace_next(tr, it)) == STF_OK) {
        uint64_t lost, to, from;
        uint32_t how;
        if (it->kind == STF_K_FUNCTION)
            return rc;
        if (it->kind == STF_M_CALL_ARG) {
            if (rp->pend_nargs == 0)
                rp->pend_arg = it->value;
            if (rp->pend_nargs < CS_MAX_ARGS)
                rp->pend.v[rp->pend_nargs] = it->value;
            rp->pend.nargs = ++rp->pend_nargs;
        }
        unsigned argno, flags;
        const uint8_t *b;
        size_t n;
        if (it->kind == STF_M_TYPED_EVENT &&
            stf_decode_argstr(it->event_type, it->payload, it->payload_len, &argno, &flags, &b,
                              &n)) {
            n = n < STR_KEEP ? n : STR_KEEP;
            memcpy(rp->pend_str[argno - 1], b, n);
            rp->pend.s[argno - 1].have = true;
            rp->pend.s[argno - 1].flags = flags;
            rp->pend.s[argno - 1].b = rp->pend_str[argno - 1];
            rp->pend.s[argno - 1].n = n;
        }
        if (it->kind == STF_M_TYPED_EVENT &&
            stf_decode_retval(it->event_type, it->payload, it->payload_len, rp->ret_next))
            rp->has_ret_next = true; /* the exit record next */
        if (it->kind == STF_M_NEW_CPU)
            rp->cpu_next = it->cpu + 1u;
        if ((it->kind == STF_M_CUSTOM_EVENT &&
             stf_decode_loss(it->payload, it->payload_len, &lost)) ||
            (it->kind == STF_M_TYPED_EVENT &&
             stf_decode_context(it->event_type, it->payload, it->payload_len, &to, &from, &how))) {
            memcpy(pay, it->payload, STACK_PAYLOAD);
            it->payload = pay;
            it->payload_len = STACK_PAYLOAD;
            return rc;
        }
    }
    return rc;
}

/* Feeds the stack records with one of lookahead (entry order). */
/* After entry cur, its arguments (read with the lookahead, rp->pend) fed to the walker as the
 * records they were: the leaf's line, at its close, and the window's clipping read them there.
 * Before exit cur, its return registers (ret). */
static int feed_args(struct callstack *cs, const struct cs_ops *ops, struct replay *rp,
                     const struct stf_item *cur)
{
    for (unsigned k = 0; k < rp->pend.nargs; k++) { /* past six: counted, not kept */
        struct stf_item a = {.kind = STF_M_CALL_ARG,
                             .pid = cur->pid,
                             .tid = cur->tid,
                             .tsc = cur->tsc,
                             .value = k < CS_MAX_ARGS ? rp->pend.v[k] : 0};
        if (cs_feed(cs, &a, ops, rp) != 0)
            return -1;
    }
    for (unsigned k = 0; k < CS_MAX_ARGS; k++) {
        if (!rp->pend.s[k].have)
            continue;
        uint8_t pay[STF_ARGSTR_HEAD + STR_KEEP] = {(uint8_t)(k + 1), (uint8_t)rp->pend.s[k].flags};
        memcpy(pay + STF_ARGSTR_HEAD, rp->pend.s[k].b, rp->pend.s[k].n);
        struct stf_item a = {.kind = STF_M_TYPED_EVENT,
                             .pid = cur->pid,
                             .tid = cur->tid,
                             .tsc = cur->tsc,
                             .event_type = STF_TYPED_ARGSTR,
                             .payload = pay,
                             .payload_len = (uint32_t)(STF_ARGSTR_HEAD + rp->pend.s[k].n)};
        if (cs_feed(cs, &a, ops, rp) != 0)
            return -1;
    }
    return 0;
}

static int walk_entry(struct tool_trace *tr, struct callstack *cs, struct replay *rp, int *rc)
{
    static const struct cs_ops ops = {.enter = tree_enter,
                                      .close = tree_close,
                                      .loss = tree_loss,
                                      .parked_loss = tree_parked_loss};
    struct stf_item cur, nxt;
    uint8_t pay[2][STACK_PAYLOAD];
    int which = 0;
    rp->has_ret_next = false;
    rp->cpu_next = 0;
    *rc = next_stack_item(tr, &cur, pay[which], rp);
    rp->has_ret_of[which] = rp->has_ret_next;
    rp->cpu_of[which] = rp->cpu_next;
    memcpy(rp->ret_of[which], rp->ret_next, sizeof rp->ret_next);
    while (*rc == STF_OK) {
        which ^= 1;
        rp->pend_nargs = 0;
        memset(&rp->pend, 0, sizeof rp->pend);
        rp->has_ret_next = false;
        rp->cpu_next = 0;
        *rc = next_stack_item(tr, &nxt, pay[which], rp);
        rp->has_ret_of[which] = rp->has_ret_next; /* nxt's */
        rp->cpu_of[which] = rp->cpu_next;
        memcpy(rp->ret_of[which], rp->ret_next, sizeof rp->ret_next);
        if (!(cur.kind == STF_K_FUNCTION && cur.action == STF_ENTER_ARGS)) {
            rp->pend_nargs = 0; /* not cur's: a misplaced CallArgument (the reader warned) */
            memset(&rp->pend, 0, sizeof rp->pend);
        }
        bool more = *rc == STF_OK && same_thread(&cur, &nxt);
        rp->main = tr->c;
        rp->vc = &tr->vc;
        rp->cur = &cur;
        rp->nxt = more ? &nxt : NULL; /* NULL: cur is its thread's last stack record */
        rp->next_exits = more && cur.kind == STF_K_FUNCTION &&
                         (cur.action == STF_ENTER || cur.action == STF_ENTER_ARGS) &&
                         nxt.kind == STF_K_FUNCTION &&
                         (nxt.action == STF_EXIT || nxt.action == STF_TAIL_EXIT) &&
                         nxt.func_id == cur.func_id;
        thread_header(rp, cur.pid, cur.tid);
        if (rp->has_ret_of[which ^ 1] && cur.kind == STF_K_FUNCTION) { /* cur's return value */
            uint8_t rv[STF_RETVAL_PAYLOAD];
            memcpy(rv, rp->ret_of[which ^ 1], sizeof rv);
            struct stf_item r = {.kind = STF_M_TYPED_EVENT,
                                 .pid = cur.pid,
                                 .tid = cur.tid,
                                 .tsc = cur.tsc,
                                 .event_type = STF_TYPED_RETVAL,
                                 .payload = rv,
                                 .payload_len = STF_RETVAL_PAYLOAD};
            if (cs_feed(cs, &r, &ops, rp) != 0)
                return -1;
        }
        if (rp->cpu_of[which ^ 1]) { /* a CPU change before cur */
            struct stf_item m = {.kind = STF_M_NEW_CPU,
                                 .pid = cur.pid,
                                 .tid = cur.tid,
                                 .tsc = cur.tsc,
                                 .cpu = (uint16_t)(rp->cpu_of[which ^ 1] - 1)};
            if (cs_feed(cs, &m, &ops, rp) != 0)
                return -1;
        }
        if (cs_feed(cs, &cur, &ops, rp) != 0)
            return -1;
        if (cur.kind == STF_K_FUNCTION && cur.action == STF_ENTER_ARGS &&
            feed_args(cs, &ops, rp, &cur) != 0)
            return -1;
        if (!more && *rc >= 0)
            tree_thread_end(rp, cs, cur.pid, cur.tid);
        cur = nxt;
    }
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    const char *path = NULL, *syms_path = NULL;
    struct replay rp = {0};
    int order = -1; /* 0 entry, 1 exit; -1: not given */
    int32_t tid = 0;
    bool have_tid = false;
    struct tool_window win = {0};
    rp.win_to = UINT64_MAX;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = tool_option(argc, argv, &i, "replay", "--order", &v)) != 0) {
            static const char *const orders[] = {"entry", "exit"};
            if (m < 0 || (order = tool_choice("replay", "order", v, orders, 2)) < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "replay", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if ((m = tool_option(argc, argv, &i, "replay", "--depth", &v)) != 0) {
            /* --max-depth's former name, still taken */
            if (m < 0 || !tool_parse_u64(v, &win.max_depth) || win.max_depth == 0) {
                if (m > 0)
                    tool_err("replay: --depth: expected a positive integer, got '%s'", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--filter-only") == 0) {
            win.filter_only = true;
        } else if (strcmp(argv[i], "--no-args") == 0) {
            rp.no_args = true;
        } else if ((m = tool_window_option(argc, argv, &i, "replay", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if (tool_trace_arg(argc, argv, &i, "replay", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (!tool_default_trace(&path, "replay"))
        return EXIT_USAGE;
    bool exit_order = order == 1;
    bool have_min = win.min_ns != 0;
    rp.w = &win;
    rp.min_ns = win.min_ns;

    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_path, "reading", true) != EXIT_OK)
        return EXIT_BAD_TRACE;
    rp.syms = tr.syms;
    rp.freq = tr.freq;
    rp.types = rp.no_args ? NULL : tool_argtypes_new(tr.syms);
    rp.base = tool_trace_base(&tr);
    tr.one = have_tid;
    tr.tid = tid;
    if (have_min && !exit_order) {
        char err[512];
        if (stf_cursor_open(&rp.look, tool_trace_source(&tr), STF_READ_LENIENT, err, sizeof err) !=
            STF_OK) {
            tool_err("%s", err);
            tool_trace_close(&tr);
            return EXIT_BAD_TRACE;
        }
    }

    static const struct cs_ops ops = {
        .enter = NULL, .close = on_close, .loss = on_loss, .parked_loss = NULL};
    struct callstack cs = {.signed_dur = tool_trace_corrected(&tr)};
    tool_window_begin(&win, &tr, &cs, rp.base, NULL, &rp.win_to);
    struct stf_item it;
    int rc, status = EXIT_OK;
    if (!exit_order) {
        if (walk_entry(&tr, &cs, &rp, &rc) != 0) {
            if (rp.fail && *rp.fail)
                tool_err("%s: %s", path, rp.fail);
            else
                tool_err("out of memory");
            status = EXIT_BAD_TRACE;
        }
    } else {
        while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
            thread_header(&rp, it.pid, it.tid);
            if (cs_feed(&cs, &it, &ops, &rp) != 0) {
                tool_err("out of memory");
                status = EXIT_BAD_TRACE;
                break;
            }
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK) {
        printf("# shown: %" PRIu64 " of %" PRIu64 " calls, stack repairs: %" PRIu64
               ", unmatched exits: %" PRIu64 ", unfinished frames: %" PRIu64 "\n",
               rp.shown, cs.calls, cs.repairs, cs.unmatched, cs_open_frames(&cs));
        if (cs.gaps)
            printf("# gaps: %" PRIu64 " (%" PRIu64 " events dropped by the runtime); %" PRIu64
                   " frames open at a gap were left out\n",
                   cs.gaps, cs.gap_events, cs.gap_frames);
        if (cs.win)
            printf("# window: calls clipped at its edges: %" PRIu64 "\n", cs.clipped);
        const char *types = tool_argtypes_note(rp.types);
        if (types)
            printf("# %s\n", types);
        tool_window_note(stdout, "# ", &win, rp.shown, cs.calls);
        struct vtimes vt = tool_trace_times(&tr);
        tool_times_note(stdout, "# ", &vt, 0);
    }
    cs_free(&cs);
    tool_argtypes_free(rp.types);
    stf_cursor_close(rp.look);
    free(rp.ids);
    tool_trace_close(&tr);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
