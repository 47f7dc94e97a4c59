/* sledtrace convert --format chrome: Chrome trace_event JSON (the "JSON Array/Object Format"
 * that Perfetto, chrome://tracing, Chrome DevTools and speedscope load), streamed thread after
 * thread: one reading pass finds the trace's last timestamp (tool_trace_extent), the next writes.
 *
 *   {"traceEvents":[
 *   {"ph":"M","pid":P,"tid":P,"ts":1,"name":"process_name","args":{"name":"prog"}},
 *   {"ph":"M","pid":P,"tid":T,"ts":1,"name":"thread_name","args":{"name":"NAME (T)"}},
 *   (NAME: the thread's name from the sidecar; "thread T" when it records none)
 *   {"ph":"X","pid":P,"tid":T,"ts":1.25,"dur":3.000244140625,"cat":"function","name":"main",...},
 *   {"ph":"i","pid":P,"tid":T,"ts":2.5,"s":"t","cat":"event","name":"custom event",...},
 *   ...
 *   ],"displayTimeUnit":"ns","otherData":{"calls":N,"stack_repairs":R,...}}
 *
 * A complete event ("X") is written when its frame closes (callstack.h's walker with
 * close_open), so events are not in timestamp order; viewers sort them. Frames that
 * did not close with their own exit carry args.closed: "repaired" (closed by an exit of a
 * function below them), "gap" (open at a loss marker: closed at the thread's last timestamp
 * before it) or "unfinished" (open at the end: closed at the thread's last timestamp).
 * otherData (the format's free-form metadata) carries the walker's counts: calls, stack
 * repairs, unmatched exits, gaps and the events lost in them.
 *
 * Windows (--from, --to; callstack.h, "Windows"): only the calls and instants inside the window
 * are written, a call crossing an edge with its part inside, marked args.clipped "start",
 * "end" or "both"; otherData then counts them (clipped). The time grid stays the whole
 * trace's, so times are those of the unwindowed export. Memory: the walker's stacks, a
 * word per thread and the table of fractions below; nothing grows with the calls.
 * Call filters (window.h): a call hidden is not written, but its start and end still take
 * their places on the grid, so what is written nests exactly as in the whole export (a call's
 * parent in the file is its nearest shown ancestor); otherData.shown counts the calls written.
 *
 * Coroutines. A thread that switches between ucontexts runs one stack per context
 * (callstack.h, "Contexts"), whose calls overlap in time: a coroutine's call stays open while
 * another runs. No viewer nests overlapping calls of one track, so each context other than the
 * thread's first is a track of its own within the process: "tid" INT32_MAX - N (N: the walker's
 * number of the (thread, context), far above any Linux thread id, which is at most 2^22), named
 * "NAME (T) context C" (C: the runtime's context id) by a thread_name event written before its
 * first call. The thread's first context keeps the thread's track. The rule below (every start
 * and end after the one before) holds per track.
 *
 * Times nest exactly as viewers read them. Viewers parse ts and dur into IEEE doubles and nest
 * calls by comparing computed ends: Chrome DevTools (and its trace engine) takes ts + dur,
 * speedscope 1.25 (ts - the thread's first ts) + dur, Perfetto rounds ts*1000 and dur*1000 to
 * integer nanoseconds and adds those. Decimal microseconds with three digits (integer
 * nanoseconds) are not binary fractions: ts + dur of a child could round above its parent's
 * end, or above the next sibling's ts, and a viewer would open the sibling inside it or drop the
 * child (DevTools drops a call that ends after its parent). So:
 *  - Every ts and dur is a whole multiple of a power-of-two step, 2^-12 us (0.244 ns), written
 *    exactly in decimal ("1391.45703125"), and every time stays below 2^53 steps: as doubles
 *    they are exact, and so is any sum or difference of them, in whatever order a viewer
 *    computes it. A call's dur is its end minus its start, both on the grid, so ts + dur is
 *    exactly its end. A time is the step nearest its nanosecond (4.096 steps per ns): off by at
 *    most 0.122 ns, a dur by 0.244 ns, so Perfetto's rounding gives back the nanoseconds the
 *    other commands show. A trace that spans more than 2^41 us (25 days) gets the finest
 *    coarser step that keeps 2^53 (Perfetto still reads exact nanoseconds down to 2^-11 us).
 *  - Within a thread, every start and end written is after the one written before it, in the
 *    walker's order (a call's start when it enters, its end when it closes): a time that would
 *    not be is written one step after the previous one. Children then start after their parent
 *    and end before it, siblings start after the previous one ends, and every call lasts at
 *    least one step: intervals are strictly nested or disjoint, so no viewer is left a tie to
 *    break, and calls of length 0 (enter and exit in one nanosecond, a frame entered by a
 *    thread's last record and closed there, closed together with its parent) still hold their
 *    children and sit inside their parent (DevTools and Perfetto pop a call at a time where the
 *    call on top ends; speedscope opens a call of the same name and args before closing
 *    the one that ends at its start). It also keeps a thread's calls in order when a CPU change
 *    steps the counter back. A time moved by one step still rounds to its nanosecond in
 *    Perfetto, and so does a dur between two such; only where more than two times meet in one
 *    nanosecond can Perfetto see one a nanosecond later. Instants are never written before
 *    their thread's last start or end, and do not count as one.
 *  - Time 0 is 1 us before the earliest first timestamp of any thread (tool_trace_base): the
 *    DevTools trace engine leaves an event at ts 0 out of the trace's time range (0 is its "no
 *    timestamp"), which cut the first call off the window. Nothing is written before the base
 *    (a counter stepped back below it is clamped to it). Metadata events sit at the base too.
 * Why complete events and not begin/end ("B"/"E") pairs, which cannot overlap: the DevTools
 * trace engine pairs B with E on one stack for the whole file, not per thread, so pairs of
 * threads that interleave (frames closed at the end of the trace, after every thread) pair up
 * wrongly; it then turns each pair back into ts + (E - B), rounding again. Exact numbers need
 * no pairing, and each event is still written when its frame closes. */
#include "argtypes.h"
#include "callargs.h"
#include "callstack_walk.h"
#include "convert.h"
#include "ticks.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { OFFSET_NS = 1000, FINEST = 12, OUT_BUF = 1 << 16 };

struct frac { /* a fraction of a step: "." and its decimals (NUL-padded: copied whole) */
    char s[16];
    uint8_t n;
};

struct chrome {
    FILE *f;
    const struct stf_syms *syms;
    struct tool_argtypes *types; /* parameters' names and types for args.call (DWARF) */
    uint64_t freq, base;
    bool first;
    int32_t named[8]; /* pids given a process_name (a trace has one, or a few after exec) */
    size_t nnamed;
    struct tool_names names; /* per function: the end of its events, see event_tail */
    uint32_t tail_id;        /* the last function looked up, its tail and the tail's length */
    char *tail; /* the last function's tail, copied with SHORT bytes of room after it */
    size_t tail_len, tail_cap;
    const struct cs_thread *head_t; /* the thread whose complete events' head is in head */
    char head[96];
    size_t head_len;
    char *ob; /* complete events are put together here, written out when it fills */
    size_t olen, ocap;
    bool nomem;
    const struct callstack *cs;
    int step;       /* times are whole multiples of 2^-step us (see the top) */
    uint64_t *last; /* per track (cs_thread.track): its last start or end written, in steps
                     * (0: none) */
    size_t nlast;
    bool *named_track; /* per track: its thread_name written */
    size_t nnamed_track;
    uint32_t head_track;            /* the track of head_t whose complete events' head is in head */
    struct frac *frac;              /* see frac_table */
    const struct tool_window *filt; /* call filters (window.h), NULL: none */
    uint64_t shown;                 /* calls written */
};

/* Nanoseconds from 1 us before the base (none before the base: a counter stepped back below it
 * is clamped), saturating. */
static uint64_t at_ns(const struct chrome *c, uint64_t tsc)
{
    uint64_t ns = tsc > c->base ? tool_ticks_ns(tsc - c->base, c->freq) : 0;
    return ns > UINT64_MAX - OFFSET_NS ? UINT64_MAX : ns + OFFSET_NS;
}

/* ns rounded to the nearest multiple of 2^-step us, in those steps (overflows unless the result
 * is below 2^53 steps, see pick_step). */
static uint64_t to_steps(int step, uint64_t ns)
{
    if (step >= 0)
        return (ns / 1000 << step) + ((ns % 1000 << step) + 500) / 1000;
    uint64_t d = (uint64_t)1000 << -step, r = ns % d;
    return ns / d + (r >= d - r);
}

/* The finest step (FINEST at most) at which times up to ns, each moved up to `moves` steps later
 * (see the top), stay below 2^53 steps: exact as doubles, and so are their sums. */
static int pick_step(uint64_t ns, uint64_t moves)
{
    const uint64_t exact = (uint64_t)1 << 53;
    int step = FINEST;
    for (; step > -20; step--) {
        if (step >= 0 && ns / 1000 >= exact >> step)
            continue;
        uint64_t k = to_steps(step, ns);
        if (k < exact && moves < exact - k)
            break;
    }
    return step;
}

/* The track's last start or end (see struct chrome), its slot made if new; NULL when out of
 * memory. */
static uint64_t *last_of(struct chrome *c, uint32_t track)
{
    while (c->nlast <= track) {
        size_t old = c->nlast;
        uint64_t *n = tool_grow(c->last, &c->nlast, sizeof *n, 16);
        if (!n) {
            c->nomem = true;
            return NULL;
        }
        memset(n + old, 0, (c->nlast - old) * sizeof *n);
        c->last = n;
    }
    return &c->last[track];
}

/* The "tid" of t's running context's track (see the top). */
static int32_t track_tid(const struct cs_thread *t)
{
    return t->track == t->track0 ? t->tid : (int32_t)(INT32_MAX - t->track);
}

/* The time of tsc on thread t (its running context's track) in steps. A start or end (strict) is
 * after the track's last one written, at least by one step, and becomes the last; an instant is
 * not before it. Out of memory: 0, with c->nomem set. */
static uint64_t when(struct chrome *c, const struct cs_thread *t, uint64_t tsc, bool strict)
{
    uint64_t *last = last_of(c, t->track);
    if (!last)
        return 0;
    uint64_t k = to_steps(c->step, at_ns(c, tsc));
    if (k == 0) /* a coarse step: the base rounds to 0, and DevTools drops ts 0 */
        k = 1;
    if (k <= *last)
        k = strict ? *last + 1 : *last;
    if (strict)
        *last = k;
    return k;
}

/* The fraction frac / 2^step (0 < frac < 2^step) as "." and its decimals at p (at most
 * FINEST + 1 bytes); returns the end. A multiple of 2^-s has at most s decimals: the fraction
 * times 5^s is their integer. */
static char *put_frac(char *p, int step, uint64_t frac)
{
    for (int i = 0; i < step; i++)
        frac *= 5;
    int n = step;
    while (frac % 10 == 0) {
        frac /= 10;
        n--;
    }
    *p = '.';
    for (int i = n; i > 0; i--, frac /= 10)
        p[i] = (char)('0' + frac % 10);
    return p + n + 1;
}

/* The fractions of a step, written once (2^step of them, 56 KiB at FINEST): every time needs
 * one, and digits one by one cost a tenth of the conversion. NULL when the step is 0 or less or
 * memory is short (then each is written as it comes). */
static struct frac *frac_table(int step)
{
    if (step <= 0)
        return NULL;
    size_t n = (size_t)1 << step;
    struct frac *t = calloc(n, sizeof *t);
    for (size_t i = 1; t && i < n; i++)
        t[i].n = (uint8_t)(put_frac(t[i].s, step, i) - t[i].s);
    return t;
}

/* v in decimal at p (no terminator), two digits at a time; returns the end. What
 * tool_put_u64 writes, in a third of the time (every event has two times). */
static char *put_dec(char *p, uint64_t v)
{
    static const char pairs[] = "000102030405060708091011121314151617181920212223242526272829"
                                "303132333435363738394041424344454647484950515253545556575859"
                                "606162636465666768697071727374757677787980818283848586878889"
                                "90919293949596979899";
    size_t n = 1;
    for (uint64_t x = v; x >= 10; x /= 10)
        n++;
    char *q = p + n;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        memcpy(q, pairs + 2 * d, 2);
    }
    if (v >= 10)
        memcpy(q - 2, pairs + 2 * v, 2);
    else
        q[-1] = (char)('0' + v);
    return p + n;
}

/* Up to SHORT bytes of s at p, copied as a whole SHORT-byte block when it is that short (a
 * fixed-size copy, inline): the bytes after the n wanted are scribbled on, and the caller
 * leaves room for them. Returns p + n. */
enum { SHORT = 64 };
static inline char *put_short(char *p, const char *s, size_t n)
{
    if (n <= SHORT)
        memcpy(p, s, SHORT);
    else
        memcpy(p, s, n);
    return p + n;
}

/* A string literal at p; returns the end. */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* k steps as an exact decimal number of microseconds at p (at most 34 bytes, and 16 more are
 * scribbled past the end); returns the end. */
static char *put_us(const struct chrome *c, char *p, uint64_t k)
{
    if (c->step <= 0)
        return put_dec(p, k << -c->step);
    p = put_dec(p, k >> c->step);
    uint64_t frac = k & (((uint64_t)1 << c->step) - 1);
    if (!frac)
        return p;
    if (!c->frac)
        return put_frac(p, c->step, frac);
    memcpy(p, c->frac[frac].s, sizeof c->frac[frac].s);
    return p + c->frac[frac].n;
}

/* An event object's start (separator, ph, pid, tid, ts) at p (96 bytes suffice); returns the
 * end. The converter writes one event per call, so events are put together without printf. */
static char *event_head(struct chrome *c, char *p, const char *ph, int32_t pid, int32_t tid,
                        uint64_t ts)
{
    p = tool_put_str(p, c->first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    c->first = false;
    p = tool_put_str(p, ph);
    p = tool_put_str(p, "\",\"pid\":");
    p = tool_put_i64(p, pid);
    p = tool_put_str(p, ",\"tid\":");
    p = tool_put_i64(p, tid);
    p = tool_put_str(p, ",\"ts\":");
    return put_us(c, p, ts);
}

/* The complete events put together so far, written out (before anything else is written). */
static void out_flush(struct chrome *c)
{
    if (c->olen)
        fwrite(c->ob, 1, c->olen, c->f);
    c->olen = 0;
}

static void begin_event(struct chrome *c, const char *ph, int32_t pid, int32_t tid, uint64_t ts)
{
    out_flush(c);
    char buf[128];
    fwrite(buf, 1, (size_t)(event_head(c, buf, ph, pid, tid, ts) - buf), c->f);
}

/* Metadata sit at the base. */
static uint64_t base_steps(const struct chrome *c)
{
    uint64_t k = to_steps(c->step, OFFSET_NS);
    return k ? k : 1;
}

/* A function's complete events end alike: ',"cat":"function","name":"NAME","args":{"id":ID'
 * (then the call's own args and "}}"), made once per function. */
static void event_tail(FILE *f, uint32_t id, void *ctx)
{
    const struct chrome *c = ctx;
    char buf[24];
    const char *name = stf_syms_name(c->syms, id, buf, sizeof buf);
    fputs(",\"cat\":\"function\",\"name\":\"", f);
    tool_json_escape(f, (const uint8_t *)name, strlen(name));
    fprintf(f, "\",\"args\":{\"id\":%" PRId64, (int64_t)id);
}

/* The process's name: the executable's base name from the sidecar, else "pid N". */
static void name_process(struct chrome *c, int32_t pid)
{
    for (size_t i = 0; i < c->nnamed; i++)
        if (c->named[i] == pid)
            return;
    if (c->nnamed < sizeof c->named / sizeof c->named[0])
        c->named[c->nnamed++] = pid;
    begin_event(c, "M", pid, pid, base_steps(c));
    fputs(",\"name\":\"process_name\",\"args\":{\"name\":\"", c->f);
    chrome_process_label(c->f, c->syms, pid);
    fputs("\"}}", c->f);
}

static int on_thread(void *ctx, const struct cs_thread *t)
{
    struct chrome *c = ctx;
    if (!last_of(c, t->track))
        return -1;
    name_process(c, t->pid);
    begin_event(c, "M", t->pid, t->tid, base_steps(c));
    fputs(",\"name\":\"thread_name\",\"args\":{\"name\":\"", c->f);
    chrome_thread_label(c->f, c->syms, t->pid, t->tid, false, 0);
    fputs("\"}}", c->f);
    return 0;
}

/* A context's track (other than the thread's first): named before its first event. */
static int name_track(struct chrome *c, const struct cs_thread *t)
{
    if (t->track == t->track0)
        return 0;
    while (c->nnamed_track <= t->track) {
        size_t old = c->nnamed_track;
        bool *n = tool_grow(c->named_track, &c->nnamed_track, sizeof *n, 16);
        if (!n) {
            c->nomem = true;
            return -1;
        }
        memset(n + old, 0, (c->nnamed_track - old) * sizeof *n);
        c->named_track = n;
    }
    if (c->named_track[t->track])
        return 0;
    c->named_track[t->track] = true;
    begin_event(c, "M", t->pid, track_tid(t), base_steps(c));
    fputs(",\"name\":\"thread_name\",\"args\":{\"name\":\"", c->f);
    chrome_thread_label(c->f, c->syms, t->pid, t->tid, true, t->ctx);
    fputs("\"}}", c->f);
    return 0;
}

static int on_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    (void)depth;
    if (name_track(ctx, t) != 0)
        return -1;
    f->mark = when(ctx, t, f->start, true);
    return ((struct chrome *)ctx)->nomem ? -1 : 0;
}

static int on_close(void *ctx, const struct cs_close *cl)
{
    struct chrome *c = ctx;
    const struct cs_frame *fr = cl->f;
    if (name_track(c, cl->t) != 0)
        return -1;
    uint64_t s = fr->mark, e = when(c, cl->t, cl->end, true);
    if (c->nomem)
        return -1;
    /* a call hidden is not written (its times stay on the grid, so what is written nests
     * exactly as before: a shown call's parent is its nearest shown ancestor) */
    if (c->filt && tool_window_close(c->filt, c->syms, cl, c->freq) != TW_SHOW)
        return 0;
    c->shown++;
    if (!c->tail || c->tail_id != fr->id) {
        const char *tail = tool_names_get(&c->names, fr->id, event_tail, c);
        size_t len = tail ? strlen(tail) : 0;
        if (tail && len + SHORT > c->tail_cap) {
            char *n = realloc(c->tail, len + SHORT);
            if (n) {
                c->tail = n;
                c->tail_cap = len + SHORT;
            }
        }
        if (!tail || len + SHORT > c->tail_cap) {
            c->nomem = true;
            return -1;
        }
        memcpy(c->tail, tail, len + 1);
        memset(c->tail + len + 1, 0, SHORT - 1); /* what put_short copies past it */
        c->tail_id = fr->id;
        c->tail_len = len;
    }
    if (c->first || c->head_t != cl->t || c->head_track != cl->t->track) {
        /* the event's start up to "ts": (event_head) */
        bool first = c->first;
        c->head_len =
            (size_t)(event_head(c, c->head, "X", cl->t->pid, track_tid(cl->t), 0) - c->head);
        c->head_len -= 1; /* the 0 */
        if (first) {      /* not the one for every later event: written as it is, made again */
            out_flush(c);
            fwrite(c->head, 1, c->head_len, c->f);
            c->head_t = NULL;
        } else {
            c->head_t = cl->t;
            c->head_track = cl->t->track;
        }
    }
    /* SLEDTRACE_ARGS: the call as replay shows it ("(5, \"GET /\") = 0", callargs.h) in
     * args.call, when it logged more than the one argument args.arg has, or a return value */
    char call[1024];
    size_t call_len = 0;
    if (fr->nargs > 1 || cl->ret || (fr->nargs && cl->t->nstrs)) {
        struct tool_callargs a;
        tool_callargs_of(&a, cl->t, cl->depth, fr, cl->ret);
        const struct tool_dw_func *dw = c->types ? tool_argtypes_func(c->types, fr->id) : NULL;
        tool_args_text(&a, dw, call, sizeof call / 2);
        size_t n = strlen(call);
        tool_ret_text(&a, dw, call + n, sizeof call - n);
        call_len = strlen(call);
    }
    /* the rest of the event: head, two times (34 bytes each, 16 scribbled past), the tail,
     * the args (80, and the call escaped: 6 bytes a byte at most), and what put_short
     * scribbles past the head and the tail */
    size_t need = c->head_len + c->tail_len + 200 + 6 * call_len + 2 * SHORT;
    if (c->olen + need > c->ocap) {
        out_flush(c);
        if (need > c->ocap) { /* a long name: room for it (memory grows with names only) */
            char *nb = realloc(c->ob, need);
            if (!nb) {
                c->nomem = true;
                return -1;
            }
            c->ob = nb;
            c->ocap = need;
        }
    }
    char *p = c->ob + c->olen;
    if (c->head_t) {
        p = put_short(p, c->head, c->head_len);
    }
    p = put_us(c, p, s);
    p = PUT_LIT(p, ",\"dur\":");
    p = put_us(c, p, e - s);
    p = put_short(p, c->tail, c->tail_len);
    if (fr->nargs) { /* the logged argument: a number while JSON keeps it exact, else hex */
        if (fr->arg < (1ull << 53)) {
            p = tool_put_str(p, ",\"arg\":");
            p = tool_put_u64(p, fr->arg);
        } else {
            p += snprintf(p, 32, ",\"arg\":\"0x%" PRIx64 "\"", fr->arg);
        }
    }
    if (call_len) {
        p = tool_put_str(p, ",\"call\":\"");
        for (size_t i = 0; i < call_len; i++) { /* JSON's escapes */
            unsigned char ch = (unsigned char)call[i];
            if (ch == '"' || ch == '\\') {
                *p++ = '\\';
                *p++ = (char)ch;
            } else if (ch < 0x20 || ch >= 0x7f) {
                p += snprintf(p, 8, "\\u%04x", ch);
            } else {
                *p++ = (char)ch;
            }
        }
        *p++ = '"';
    }
    static const char *const closed[] = {NULL, ",\"closed\":\"repaired\"", ",\"closed\":\"gap\"",
                                         ",\"closed\":\"unfinished\""};
    if (closed[cl->why])
        p = tool_put_str(p, closed[cl->why]);
    static const char *const clipped[] = {NULL, ",\"clipped\":\"start\"", ",\"clipped\":\"end\"",
                                          ",\"clipped\":\"both\""}; /* CS_CLIP_* */
    if (clipped[cl->clip & 3])
        p = tool_put_str(p, clipped[cl->clip & 3]);
    p = PUT_LIT(p, "}}");
    c->olen = (size_t)(p - c->ob);
    return 0;
}

static void instant(struct chrome *c, const struct stf_item *it)
{
    uint64_t lost;
    const struct cs_thread *t = cs_find(c->cs, it->pid, it->tid);
    if (name_track(c, t) != 0)
        return;
    begin_event(c, "i", it->pid, track_tid(t), when(c, t, it->tsc, false));
    if (it->kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it->payload, it->payload_len, &lost)) {
        fprintf(
            c->f,
            ",\"s\":\"t\",\"cat\":\"loss\",\"name\":\"events lost\",\"args\":{\"count\":%" PRIu64
            "}}",
            lost);
        return;
    }
    uint64_t to, from;
    uint32_t how;
    if (it->kind == STF_M_TYPED_EVENT &&
        stf_decode_context(it->event_type, it->payload, it->payload_len, &to, &from, &how)) {
        /* on the track of the context that runs from here (the walker has switched already) */
        static const char *const hows[] = {"?", "swapcontext", "setcontext", "return", "resume"};
        fprintf(c->f,
                ",\"s\":\"t\",\"cat\":\"context\",\"name\":\"context switch\",\"args\":{"
                "\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"how\":\"%s\"}}",
                from, to, hows[how < 5 ? how : 0]);
        return;
    }
    if (it->kind == STF_M_TYPED_EVENT)
        fprintf(c->f,
                ",\"s\":\"t\",\"cat\":\"event\",\"name\":\"typed event\",\"args\":{\"type\":%u,"
                "\"payload\":\"",
                (unsigned)it->event_type);
    else
        fputs(",\"s\":\"t\",\"cat\":\"event\",\"name\":\"custom event\",\"args\":{\"payload\":\"",
              c->f);
    tool_json_escape(c->f, it->payload, it->payload_len);
    fputs("\"}}", c->f);
}

/* Item 4 of issue 25: JavaScript viewers (speedscope, the DevTools trace engine, chrome://tracing)
 * read the file into one string, and V8 refuses strings over 0x1fffffe8 characters, so an export
 * past that loads nowhere but in Perfetto's native trace processor. Before writing, the size is
 * estimated from the first pass (items: about two function records per call) and the format
 * above: per call 81 bytes of fixed text, two ids of 7 digits (pid, tid), a ts of the span's
 * integer digits and about 13 of fraction, a dur of about 14, a function id of 4 and a name of
 * 16 (the sqlite3 trace of the issue, 3.88 GB for 27 million calls, has 143 bytes a call). Over
 * the limit, one warning names the ways out; the file is written anyway (it is valid JSON, for
 * trace_processor, jq or a script), whether or not it goes to a terminal. With a window the
 * count of items is scaled by the window's share of the trace's span (the calls taken as spread
 * evenly over it): an estimate still, but of the file written.
 * SLEDTRACE_CHROME_LIMIT=BYTES sets the limit, for tests only. */
enum { CHROME_FIXED = 81 + 14 + 13 + 14 + 4 + 16 };
static const uint64_t CHROME_JS_LIMIT = 0x1fffffe8;

static void size_text(char *buf, size_t len, uint64_t bytes)
{
    if (bytes >= (1ull << 30))
        snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ull << 30));
    else if (bytes >= (1ull << 20))
        snprintf(buf, len, "%" PRIu64 " MiB", (uint64_t)((bytes + (1ull << 19)) >> 20));
    else
        snprintf(buf, len, "%" PRIu64 " KiB", (bytes + 1023) >> 10);
}

static void size_warning(const char *path, uint64_t items, uint64_t span_ns)
{
    uint64_t limit = CHROME_JS_LIMIT, v;
    const char *env = getenv("SLEDTRACE_CHROME_LIMIT");
    if (env && *env && tool_parse_u64(env, &v))
        limit = v;
    uint64_t digits = 1;
    for (uint64_t x = span_ns / 1000; x >= 10; x /= 10)
        digits++;
    uint64_t est = items / 2 * (CHROME_FIXED + digits);
    if (est <= limit)
        return;
    char e[32], l[32];
    size_text(e, sizeof e, est);
    size_text(l, sizeof l, limit);
    tool_err("warning: %s: the Chrome JSON will be about %s, over the %s that JavaScript viewers "
             "load (speedscope, DevTools, chrome://tracing); writing it anyway. Smaller: "
             "--format perfetto, 'sledtrace slowest FUNC -o OUT.json', or a window "
             "(--from/--to)",
             path, e, l);
}

/* The items of the window [from, to] (ticks) out of those of the trace [base, end]. */
static uint64_t window_items(uint64_t items, uint64_t base, uint64_t end, uint64_t from,
                             uint64_t to)
{
    uint64_t lo = from > base ? from : base, hi = to < end ? to : end;
    if (end <= base)
        return items;
    if (hi < lo)
        return 0;
    return (uint64_t)((long double)items * (long double)(hi - lo) / (long double)(end - base));
}

int convert_chrome(const char *path, const char *out, const char *syms_opt,
                   const struct tool_window *win, const int32_t *tid)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt, tid);
    if (!f)
        return EXIT_BAD_TRACE;
    static const struct cs_ops ops = {.thread = on_thread, .enter = on_enter, .close = on_close};
    struct callstack cs = {.close_open = true, .signed_dur = tool_trace_corrected(&tr)};
    struct chrome c = {
        .f = f, .syms = tr.syms, .freq = tr.freq, .first = true, .base = tool_trace_base(&tr)};
    uint64_t from = 0, to = UINT64_MAX;
    tool_window_begin(win, &tr, &cs, c.base, &from, &to); /* before the extent: the index */
    uint64_t items, end = tool_trace_extent(&tr, &items);
    c.cs = &cs;
    c.filt = tool_window_filtered(win) ? win : NULL;
    c.step = pick_step(at_ns(&c, end), 2 * items); /* a start and an end per item at most */
    uint64_t shown = cs.win ? window_items(items, c.base, end, from, to) : items;
    size_warning(path, shown, at_ns(&c, end));
    c.frac = frac_table(c.step);
    c.types = tool_argtypes_new(tr.syms);
    c.ob = malloc(OUT_BUF);
    c.ocap = c.ob ? OUT_BUF : 0;
    fputs("{\"traceEvents\":[", f);
    tool_trace_prefetch(&tr);

    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = cs_walk_next_item(&cs, &tr, &ops, &c, &it)) == STF_OK) {
        if (cs_feed(&cs, &it, &ops, &c) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        if ((it.kind == STF_M_CUSTOM_EVENT || it.kind == STF_M_TYPED_EVENT) &&
            (!cs.win || (it.tsc >= cs.win_from && it.tsc <= cs.win_to)))
            instant(&c, &it);
    }
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && cs_finish(&cs, &ops, &c) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    out_flush(&c);
    fprintf(f,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"calls\":%" PRIu64
            ",\"stack_repairs\":%" PRIu64 ",\"unmatched_exits\":%" PRIu64 ",\"gaps\":%" PRIu64
            ",\"events_lost\":%" PRIu64 ",\"times\":\"%s\",\"tracer_removed_ns\":%" PRIu64,
            cs.calls, cs.repairs, cs.unmatched, cs.gaps, cs.gap_events,
            tool_trace_corrected(&tr) ? "corrected"
            : tr.has_calib            ? "raw"
                                      : "as measured",
            tool_ticks_to_ns(tool_trace_removed(&tr), tr.freq));
    if (cs.win)
        fprintf(f, ",\"clipped\":%" PRIu64, cs.clipped);
    if (c.filt)
        fprintf(f, ",\"shown\":%" PRIu64, c.shown);
    fputs("}}\n", f);
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    cs_free(&cs);
    free(c.last);
    free(c.named_track);
    free(c.frac);
    free(c.ob);
    tool_argtypes_free(c.types);
    free(c.tail);
    tool_names_free(&c.names);
    tool_trace_close(&tr);
    return status;
}

/* ---- for other writers of the same JSON (convert.h) ------------------------------------------ */

void chrome_process_label(FILE *f, const struct stf_syms *syms, int32_t pid)
{
    const char *exe = stf_syms_object(syms, 0);
    const char *base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe;
    if (base && *base)
        tool_json_escape(f, (const uint8_t *)base, strlen(base));
    else
        fprintf(f, "pid %" PRId32, pid);
}

void chrome_thread_label(FILE *f, const struct stf_syms *syms, int32_t pid, int32_t tid,
                         bool context, uint64_t ctx)
{
    /* The name the program gave the thread (sidecar), with its tid: "worker-1 (1234)". */
    const char *nm = stf_syms_thread_name(syms, pid, tid);
    if (nm)
        tool_json_escape(f, (const uint8_t *)nm, strlen(nm));
    fprintf(f, nm ? " (%" PRId32 ")" : "thread %" PRId32, tid);
    if (context && (ctx & STF_CTX_ADDRESS))
        fprintf(f, " context at 0x%" PRIx64, ctx & ~STF_CTX_ADDRESS);
    else if (context)
        fprintf(f, " context %" PRIu64, ctx);
}

void chrome_grid_init(struct chrome_grid *g, uint64_t base, uint64_t freq, uint64_t end,
                      uint64_t moves)
{
    const struct chrome c = {.base = base, .freq = freq};
    g->base = base;
    g->freq = freq;
    g->step = pick_step(at_ns(&c, end), moves);
}

uint64_t chrome_grid_steps(const struct chrome_grid *g, uint64_t tsc)
{
    const struct chrome c = {.base = g->base, .freq = g->freq};
    uint64_t k = to_steps(g->step, at_ns(&c, tsc));
    return k ? k : 1;
}

uint64_t chrome_grid_meta(const struct chrome_grid *g)
{
    const struct chrome c = {.step = g->step};
    return base_steps(&c);
}

void chrome_put_time(FILE *f, const struct chrome_grid *g, uint64_t k)
{
    const struct chrome c = {.step = g->step};
    char buf[64];
    fwrite(buf, 1, (size_t)(put_us(&c, buf, k) - buf), f);
}
