/* The call-stack walker and stack aggregation (see callstack.h); the walker's inner loop is
 * callstack_walk.h's, used here with the ops given at run time. */
#include "callstack_walk.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cs_thread *cs_thread_get(struct callstack *cs, int32_t pid, int32_t tid, uint64_t tsc,
                                const struct cs_ops *ops, void *ctx)
{
    uint64_t key = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    if (cs->last_ti && cs->last_key == key)
        return &cs->t[cs->last_ti - 1];
    bool added;
    long i = u64map_get(&cs->tmap, key, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (cs->nt == cs->capt) {
            struct cs_thread *n = tool_grow(cs->t, &cs->capt, sizeof *n, 16);
            if (!n)
                return NULL;
            cs->t = n;
        }
        uint32_t track = cs->ntracks++;
        cs->t[cs->nt] = (struct cs_thread){
            .pid = pid, .tid = tid, .first = tsc, .last = tsc, .track = track, .track0 = track};
        cs->nt++;
        if (ops && ops->thread && ops->thread(ctx, &cs->t[i]) != 0)
            return NULL;
    }
    cs->last_key = key;
    cs->last_ti = (size_t)i + 1;
    return &cs->t[i];
}

/* Every open frame dropped (a loss marker): no function or pair has one open any more. */
static void nest_clear(struct cs_thread *t)
{
    for (size_t k = 0; k < t->depth; k++) {
        if (t->st[k].fx < t->nest.nfn)
            t->nest.fn_top[t->st[k].fx] = 0;
        if (t->st[k].ex < t->nest.nedge)
            t->nest.edge_top[t->st[k].ex] = 0;
    }
}

static int close_all(struct callstack *cs, struct cs_thread *t, enum cs_why why,
                     const struct cs_ops *ops, void *ctx)
{
    while (t->depth) {
        int rc = cs_close_top(cs, t, t->last, why, ops, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- contexts (callstack.h, "Contexts") ----------------------------------------------------- */

/* The running stack's frames become the open ones of their functions and pairs again (bottom
 * up, so the topmost of each wins): a resumed context's. Its frames' same_below and edge_below
 * are the stack's own and stay right. -1 on allocation failure. */
static int nest_rebuild(struct cs_thread *t)
{
    for (size_t k = 0; k < t->depth; k++) {
        const struct cs_frame *f = &t->st[k];
        size_t *top = cs_top_slot(&t->nest.fn_top, &t->nest.nfn, f->fx);
        if (!top)
            return -1;
        *top = k + 1;
        if (f->ex != UINT32_MAX) {
            if (!(top = cs_top_slot(&t->nest.edge_top, &t->nest.nedge, f->ex)))
                return -1;
            *top = k + 1;
        }
    }
    return 0;
}

/* Index of context id in t->ctxs, made (with a new track, or `track` when it is not
 * UINT32_MAX) if new; -1 on allocation failure. */
static long ctx_index(struct callstack *cs, struct cs_thread *t, uint64_t id, uint32_t track)
{
    bool added;
    long i = u64map_get(&t->ctxmap, id, &added);
    if (i < 0 || !added)
        return i;
    if (t->nctx == t->capctx) {
        struct cs_ctx *n = tool_grow(t->ctxs, &t->capctx, sizeof *n, 4);
        if (!n)
            return -1;
        t->ctxs = n;
    }
    t->ctxs[t->nctx++] =
        (struct cs_ctx){.id = id, .track = track != UINT32_MAX ? track : cs->ntracks++};
    return i;
}

/* The running stack goes into context i's entry (the running context's own). */
static void ctx_park(struct callstack *cs, struct cs_thread *t, size_t i)
{
    struct cs_ctx *e = &t->ctxs[i];
    if (cs->nesting)
        nest_clear(t);
    e->st = t->st;
    e->depth = t->depth;
    e->cap = t->cap;
    e->args_open = t->args_open;
    t->st = NULL;
    t->depth = t->cap = 0;
    t->args_open = false;
}

/* Context i's parked stack becomes the running one. */
static int ctx_resume(struct callstack *cs, struct cs_thread *t, size_t i)
{
    struct cs_ctx *e = &t->ctxs[i];
    t->st = e->st;
    t->depth = e->depth;
    t->cap = e->cap;
    t->args_open = e->args_open;
    t->ctx = e->id;
    t->track = e->track;
    e->st = NULL;
    e->depth = e->cap = 0;
    return cs->nesting ? nest_rebuild(t) : 0;
}

/* Index of the running context in t->ctxs (it has one once the thread has switched). */
static long ctx_running(struct callstack *cs, struct cs_thread *t)
{
    return ctx_index(cs, t, t->ctx, t->track);
}

int cs_run_context(struct callstack *cs, struct cs_thread *t, size_t i)
{
    if (i >= t->nctx)
        return -1;
    long r = ctx_running(cs, t);
    if (r < 0)
        return -1;
    if ((size_t)r == i)
        return 0;
    ctx_park(cs, t, (size_t)r);
    return ctx_resume(cs, t, i);
}

/* The running stack's frames, a context's that a loss marker did not find running (or one
 * named twice, below): closed at the thread's last timestamp (close_open) or dropped, counted as
 * at a gap; the callbacks see them in t->st. */
static int drop_running(struct callstack *cs, struct cs_thread *t, uint64_t tsc,
                        const struct cs_ops *ops, void *ctx)
{
    size_t open = t->depth;
    if (!open)
        return 0;
    cs->gap_frames += open;
    if (cs->close_open)
        return close_all(cs, t, CS_GAP, ops, ctx);
    cs->lost_ticks += t->st[0].child;
    int rc = ops && ops->parked_loss ? ops->parked_loss(ctx, t, tsc, open) : 0;
    if (cs->nesting)
        nest_clear(t);
    t->depth = 0;
    return rc;
}

/* A switch event: the running stack is `from`'s (the runtime's word), `to` runs from now on. */
static int ctx_switch(struct callstack *cs, struct cs_thread *t, uint64_t to, uint64_t from,
                      uint64_t tsc, const struct cs_ops *ops, void *ctx)
{
    cs->switches++;
    t->last = tsc;
    if (!t->switched) {
        /* the thread's first switch names the stack it ran so far */
        if (ctx_index(cs, t, from, t->track) < 0)
            return -1;
        t->switched = true;
        t->ctx = from;
    } else if (t->ctx != from) {
        /* Switches were lost (a gap): the running stack is `from`'s. Frames parked under `from`
         * before are dropped as at a gap, then the running stack takes its name. */
        long old = ctx_running(cs, t), i = ctx_index(cs, t, from, UINT32_MAX);
        if (old < 0 || i < 0)
            return -1;
        if (t->ctxs[i].depth) {
            ctx_park(cs, t, (size_t)old);
            int rc = ctx_resume(cs, t, (size_t)i);
            if (rc == 0)
                rc = drop_running(cs, t, tsc, ops, ctx);
            if (rc)
                return rc;
            ctx_park(cs, t, (size_t)i);
            if (ctx_resume(cs, t, (size_t)old) != 0)
                return -1;
        }
        t->ctx = from;
        t->track = t->ctxs[i].track;
    }
    long r = ctx_running(cs, t), n = ctx_index(cs, t, to, UINT32_MAX);
    if (r < 0 || n < 0)
        return -1;
    if (r != n) {
        ctx_park(cs, t, (size_t)r);
        if (ctx_resume(cs, t, (size_t)n) != 0)
            return -1;
    }
    return 0;
}

/* A loss marker: the frames of the thread's contexts other than the running one (whose own the
 * caller has handled) are closed or dropped (drop_running), each context made the running one
 * meanwhile; then the running one is back. */
static int ctx_loss(struct callstack *cs, struct cs_thread *t, uint64_t tsc,
                    const struct cs_ops *ops, void *ctx)
{
    if (!t->switched)
        return 0;
    long home = ctx_running(cs, t);
    if (home < 0)
        return -1;
    for (size_t i = 0; i < t->nctx; i++) {
        if ((long)i == home || t->ctxs[i].depth == 0)
            continue;
        if (cs_run_context(cs, t, i) != 0)
            return -1;
        int rc = drop_running(cs, t, tsc, ops, ctx);
        if (rc)
            return rc;
    }
    return cs_run_context(cs, t, (size_t)home);
}

/* The records the walker takes (the rest is block framing, which says nothing of the stack). */
static bool moves_stack(int kind)
{
    switch (kind) {
    case STF_K_FUNCTION:
    case STF_M_CUSTOM_EVENT:
    case STF_M_TYPED_EVENT:
    case STF_M_NEW_CPU:
    case STF_M_TSC_WRAP:
    case STF_M_CALL_ARG:
        return true;
    default:
        return false;
    }
}

/* ---- arguments (callstack.h: cs_arg, cs_strings) ---------------------------------------- */

/* A CallArgument of the topmost frame (the call that logs them). 0, or -1 out of memory. */
static int add_arg(struct cs_thread *t, uint64_t v)
{
    size_t i = t->depth - 1;
    struct cs_frame *f = &t->st[i];
    if (f->nargs == 0)
        f->arg = v;
    else if (f->nargs < CS_MAX_ARGS) {
        if (i >= t->capx) {
            size_t cap = t->capx ? t->capx : 8;
            while (cap <= i)
                cap *= 2;
            void *g = realloc(t->xargs, cap * sizeof *t->xargs);
            if (!g)
                return -1;
            t->xargs = g;
            t->capx = cap;
        }
        t->xargs[i][f->nargs] = v;
    }
    f->nargs++;
    return 0;
}

/* A string record: u32 frame index, u8 argno, u8 flags, u16 length, the bytes (padded to 8). */
enum { STR_HEAD = 8 };

static int add_string(struct cs_thread *t, unsigned argno, unsigned flags, const uint8_t *b,
                      size_t n)
{
    if (n > 0xffff)
        n = 0xffff;
    size_t need = STR_HEAD + ((n + 7) & ~(size_t)7);
    if (t->nstrs + need > t->capstrs) {
        size_t cap = t->capstrs ? t->capstrs : 256;
        while (cap < t->nstrs + need)
            cap *= 2;
        void *g = realloc(t->strs, cap);
        if (!g)
            return -1;
        t->strs = g;
        t->capstrs = cap;
    }
    uint8_t *r = t->strs + t->nstrs;
    uint32_t fi = (uint32_t)(t->depth - 1);
    uint16_t len = (uint16_t)n;
    memcpy(r, &fi, 4);
    r[4] = (uint8_t)argno;
    r[5] = (uint8_t)flags;
    memcpy(r + 6, &len, 2);
    memcpy(r + STR_HEAD, b, n);
    t->nstrs += need;
    return 0;
}

/* The records, oldest first, are of frames at non-decreasing indices (a frame's come after
 * its callers', and a closed frame's are trimmed before a new one pushes): so the records of
 * frames at index >= i are a suffix. Walking from the start finds it. */
void cs_strings_trim(struct cs_thread *t, size_t i)
{
    size_t at = 0;
    while (at < t->nstrs) {
        uint32_t fi;
        uint16_t len;
        memcpy(&fi, t->strs + at, 4);
        if (fi >= i)
            break;
        memcpy(&len, t->strs + at + 6, 2);
        at += STR_HEAD + (((size_t)len + 7) & ~(size_t)7);
    }
    t->nstrs = at;
}

void cs_strings(const struct cs_thread *t, size_t i,
                void (*fn)(void *arg, unsigned argno, unsigned flags, const uint8_t *b, size_t n),
                void *arg)
{
    for (size_t at = 0; at < t->nstrs;) {
        uint32_t fi;
        uint16_t len;
        memcpy(&fi, t->strs + at, 4);
        memcpy(&len, t->strs + at + 6, 2);
        if (fi == i)
            fn(arg, t->strs[at + 4], t->strs[at + 5], t->strs + at + STR_HEAD, len);
        at += STR_HEAD + (((size_t)len + 7) & ~(size_t)7);
    }
}

static int feed_item(struct callstack *cs, const struct stf_item *it, const struct cs_ops *ops,
                     void *ctx)
{
    if (!moves_stack(it->kind))
        return 0; /* block framing: says nothing about the stack */
    struct cs_thread *t = cs_thread_get(cs, it->pid, it->tid, it->tsc, ops, ctx);
    if (!t)
        return -1;
    if (it->kind != STF_K_FUNCTION) {
        uint64_t lost;
        if (it->kind == STF_M_CUSTOM_EVENT &&
            stf_decode_loss(it->payload, it->payload_len, &lost)) {
            size_t open = t->depth;
            cs->gaps++;
            cs->gap_events += lost;
            cs->gap_frames += open;
            if (cs->close_open) {
                int rc = close_all(cs, t, CS_GAP, ops, ctx);
                if (rc)
                    return rc;
            } else {
                if (open)
                    cs->lost_ticks += t->st[0].child;
                if (cs->nesting)
                    nest_clear(t);
                t->depth = 0;
            }
            t->last = it->tsc;
            int rc = ops && ops->loss ? ops->loss(ctx, t, it->tsc, lost, open) : 0;
            return rc ? rc : ctx_loss(cs, t, it->tsc, ops, ctx);
        }
        uint64_t to, from;
        uint32_t how;
        if (it->kind == STF_M_TYPED_EVENT &&
            stf_decode_context(it->event_type, it->payload, it->payload_len, &to, &from, &how))
            return ctx_switch(cs, t, to, from, it->tsc, ops, ctx);
        if (it->kind == STF_M_NEW_CPU) {
            /* a wait, whose both ends' CPUs the runtime records (preload/waits.c); any other
             * frame's CPU at its entry is not known */
            if (t->cpu1 && t->cpu1 != it->cpu + 1u && t->depth &&
                stf_wait_name(t->st[t->depth - 1].id))
                t->st[t->depth - 1].moved = 1;
            t->cpu1 = it->cpu + 1u;
            return 0;
        }
        if (it->kind == STF_M_CUSTOM_EVENT || it->kind == STF_M_TYPED_EVENT)
            t->last = it->tsc;
        if (it->kind == STF_M_CALL_ARG && t->args_open && t->depth)
            return add_arg(t, it->value);
        unsigned argno, flags;
        const uint8_t *b;
        size_t n;
        if (it->kind == STF_M_TYPED_EVENT && t->args_open && t->depth && !t->switched &&
            stf_decode_argstr(it->event_type, it->payload, it->payload_len, &argno, &flags, &b, &n))
            return add_string(t, argno, flags, b, n);
        if (it->kind == STF_M_TYPED_EVENT &&
            stf_decode_retval(it->event_type, it->payload, it->payload_len, t->ret))
            t->has_ret = true;
        return 0;
    }
    cs_last_func(t, it->tsc, it->action);
    return cs_feed_func(cs, t, it->func_id, it->action, it->tsc, ops, ctx);
}

/* ---- windows (callstack.h, "Windows") ----------------------------------------------------- */

void cs_set_window(struct callstack *cs, uint64_t from, uint64_t to)
{
    cs->win = true;
    cs->win_from = from;
    cs->win_to = to;
}

/* Every context of t, each made the running one in turn (the running one first), then the one
 * that ran runs again: fn(cs, t, arg) on each. 0, -1 on allocation failure, or fn's value. */
static int each_context(struct callstack *cs, struct cs_thread *t,
                        int (*fn)(struct callstack *, struct cs_thread *, bool, const void *),
                        const void *arg)
{
    int rc = fn(cs, t, true, arg);
    if (rc || !t->switched)
        return rc;
    long home = ctx_running(cs, t);
    if (home < 0)
        return -1;
    for (size_t k = 0; k < t->nctx; k++) {
        if ((long)k == home || t->ctxs[k].depth == 0)
            continue;
        if (cs_run_context(cs, t, k) != 0)
            return -1;
        if ((rc = fn(cs, t, false, arg)) != 0)
            return rc;
    }
    return cs_run_context(cs, t, (size_t)home);
}

struct win_call {
    const struct cs_ops *ops;
    void *ctx;
};

/* The window starts: the open frames are clipped to it (and entered, for the running one). */
static int win_clip_start(struct callstack *cs, struct cs_thread *t, bool running, const void *arg)
{
    const struct win_call *w = arg;
    for (size_t i = 0; i < t->depth; i++) {
        struct cs_frame *f = &t->st[i];
        f->start = cs->win_from;
        f->child = 0;
        f->rec = 0;
        f->clip = CS_CLIP_START;
        if (running && w->ops && w->ops->enter) {
            int rc = w->ops->enter(w->ctx, t, f, i);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The window ends: the open frames close at its end. */
static int win_clip_end(struct callstack *cs, struct cs_thread *t, bool running, const void *arg)
{
    (void)running;
    const struct win_call *w = arg;
    cs->clip_end = CS_CLIP_END;
    int rc = 0;
    while (t->depth && !rc)
        rc = cs_close_top(cs, t, cs->win_to, CS_EXIT, w->ops, w->ctx);
    cs->clip_end = 0;
    return rc;
}

/* Before feeding a record of t at tsc: 1 to feed it as usual, 0 to ignore it, 2 to feed it
 * unseen (before the window), or a callback's non-zero value (negative). */
static int win_gate(struct callstack *cs, struct cs_thread *t, uint64_t tsc,
                    const struct cs_ops *ops, void *ctx)
{
    if (t->win_done)
        return 0;
    struct win_call w = {ops, ctx};
    if (tsc > cs->win_to) {
        t->win_done = true;
        if (!t->win_in) { /* no record in the window: its open frames span it, clipped both */
            t->win_in = true;
            int rc = each_context(cs, t, win_clip_start, &w);
            if (rc)
                return rc < 0 ? rc : -rc;
        }
        int rc = each_context(cs, t, win_clip_end, &w);
        return rc ? (rc < 0 ? rc : -rc) : 0;
    }
    if (t->win_in)
        return 1;
    if (tsc < cs->win_from)
        return 2;
    t->win_in = true;
    int rc = each_context(cs, t, win_clip_start, &w);
    return rc ? (rc < 0 ? rc : -rc) : 1;
}

/* Feed unseen: the stack moves, no callback is called and no counter changes. */
struct win_saved {
    uint64_t calls, repairs, unmatched, gaps, gap_events, gap_frames, top_ticks, lost_ticks,
        switches;
};
static void win_save(const struct callstack *cs, struct win_saved *s)
{
    *s = (struct win_saved){cs->calls,     cs->repairs,    cs->unmatched,
                            cs->gaps,      cs->gap_events, cs->gap_frames,
                            cs->top_ticks, cs->lost_ticks, cs->switches};
}
static void win_restore(struct callstack *cs, const struct win_saved *s)
{
    cs->calls = s->calls;
    cs->repairs = s->repairs;
    cs->unmatched = s->unmatched;
    cs->gaps = s->gaps;
    cs->gap_events = s->gap_events;
    cs->gap_frames = s->gap_frames;
    cs->top_ticks = s->top_ticks;
    cs->lost_ticks = s->lost_ticks;
    cs->switches = s->switches;
}

int cs_win_funcs(struct callstack *cs, int32_t pid, int32_t tid, const struct stf_func *fn,
                 size_t n, const struct cs_ops *ops, void *ctx)
{
    struct cs_thread *t = cs_thread_get(cs, pid, tid, fn[0].tsc, ops, ctx);
    if (!t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int g = win_gate(cs, t, fn[i].tsc, ops, ctx);
        if (g < 0)
            return g == -1 ? -1 : -g;
        if (g == 0)
            continue;
        int rc;
        if (g == 2) {
            struct win_saved sv;
            win_save(cs, &sv);
            rc = cs_feed_func(cs, t, fn[i].id, fn[i].action, fn[i].tsc, NULL, NULL);
            win_restore(cs, &sv);
        } else {
            rc = cs_feed_func(cs, t, fn[i].id, fn[i].action, fn[i].tsc, ops, ctx);
        }
        cs_last_func(t, fn[i].tsc, fn[i].action);
        if (rc)
            return rc;
    }
    return 0;
}

int cs_feed(struct callstack *cs, const struct stf_item *it, const struct cs_ops *ops, void *ctx)
{
    if (!cs->win)
        return feed_item(cs, it, ops, ctx);
    if (!moves_stack(it->kind))
        return 0;
    struct cs_thread *t = cs_thread_get(cs, it->pid, it->tid, it->tsc, ops, ctx);
    if (!t)
        return -1;
    /* a CallArgument has no time of its own: it belongs with the entry before it */
    int g = it->kind == STF_M_CALL_ARG ? (t->win_done ? 0
                                          : t->win_in ? 1
                                                      : 2)
                                       : win_gate(cs, t, it->tsc, ops, ctx);
    if (g < 0)
        return g == -1 ? -1 : -g;
    if (g == 0)
        return 0;
    if (g == 1)
        return feed_item(cs, it, ops, ctx);
    struct win_saved sv;
    win_save(cs, &sv);
    int rc = feed_item(cs, it, NULL, NULL);
    win_restore(cs, &sv);
    return rc;
}

int cs_feed_funcs(struct callstack *cs, int32_t pid, int32_t tid, const struct stf_func *fn,
                  size_t n, const struct cs_ops *ops, void *ctx)
{
    return cs_walk_funcs(cs, pid, tid, fn, n, ops, ctx);
}

int cs_next_item(struct callstack *cs, struct tool_trace *t, const struct cs_ops *ops, void *ctx,
                 struct stf_item *it)
{
    return cs_walk_next_item(cs, t, ops, ctx, it);
}

int cs_finish(struct callstack *cs, const struct cs_ops *ops, void *ctx)
{
    for (size_t i = 0; cs->win && i < cs->nt; i++) {
        struct cs_thread *t = &cs->t[i];
        if (!t->win_in) { /* all its records before the window: nothing of it is shown */
            t->win_in = true;
            int rc = each_context(cs, t, win_clip_start, &(struct win_call){NULL, NULL});
            if (rc)
                return rc;
            t->depth = 0;
            for (size_t k = 0; k < t->nctx; k++)
                t->ctxs[k].depth = 0;
        }
    }
    if (!cs->close_open)
        return 0;
    for (size_t i = 0; i < cs->nt; i++) {
        struct cs_thread *t = &cs->t[i];
        int rc = close_all(cs, t, CS_END, ops, ctx);
        if (rc)
            return rc;
        if (!t->switched)
            continue;
        long home = ctx_running(cs, t);
        if (home < 0)
            return -1;
        for (size_t k = 0; k < t->nctx; k++) {
            if (t->ctxs[k].depth == 0)
                continue;
            if (cs_run_context(cs, t, k) != 0)
                return -1;
            if ((rc = close_all(cs, t, CS_END, ops, ctx)) != 0)
                return rc;
        }
        if (cs_run_context(cs, t, (size_t)home) != 0)
            return -1;
    }
    return 0;
}

const struct cs_thread *cs_find(const struct callstack *cs, int32_t pid, int32_t tid)
{
    uint64_t key = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    if (cs->last_ti && cs->last_key == key)
        return &cs->t[cs->last_ti - 1];
    for (size_t i = 0; i < cs->nt; i++) /* not the common case: threads end after their records */
        if (cs->t[i].pid == pid && cs->t[i].tid == tid)
            return &cs->t[i];
    return NULL;
}

uint64_t cs_open_frames(const struct callstack *cs)
{
    uint64_t n = 0;
    for (size_t i = 0; i < cs->nt; i++) {
        n += cs->t[i].depth;
        for (size_t k = 0; k < cs->t[i].nctx; k++)
            n += cs->t[i].ctxs[k].depth;
    }
    return n;
}

uint64_t cs_orphan_ticks(const struct callstack *cs)
{
    uint64_t n = cs->lost_ticks;
    for (size_t i = 0; i < cs->nt; i++) {
        if (cs->t[i].depth)
            n += cs->t[i].st[0].child;
        for (size_t k = 0; k < cs->t[i].nctx; k++)
            if (cs->t[i].ctxs[k].depth)
                n += cs->t[i].ctxs[k].st[0].child;
    }
    return n;
}

int cs_merge(struct callstack *dst, struct callstack *src)
{
    if (src->nt && dst->nt + src->nt > dst->capt) {
        size_t cap = dst->capt;
        struct cs_thread *n = dst->t;
        while (cap < dst->nt + src->nt)
            if (!(n = tool_grow(n, &cap, sizeof *n, 16)))
                return -1;
            else
                dst->t = n, dst->capt = cap;
    }
    for (size_t j = 0; j < src->nt; j++) {
        struct cs_thread *t = &src->t[j];
        bool added;
        long i =
            u64map_get(&dst->tmap, ((uint64_t)(uint32_t)t->pid << 32) | (uint32_t)t->tid, &added);
        if (i < 0 || !added || (size_t)i != dst->nt)
            return -1;
        struct cs_thread *d = &dst->t[dst->nt++];
        *d = *t;
        *t = (struct cs_thread){0}; /* moved: src frees nothing of it */
        d->track += dst->ntracks;   /* src's tracks follow dst's */
        d->track0 += dst->ntracks;
        for (size_t k = 0; k < d->nctx; k++)
            d->ctxs[k].track += dst->ntracks;
        if (!dst->nesting)
            continue;
        /* parked frames: numbered again too (they enter the open arrays when resumed) */
        for (size_t k = 0; k < d->nctx; k++) {
            struct cs_ctx *e = &d->ctxs[k];
            for (size_t j = 0; j < e->depth; j++) {
                long fx = cs_fn_index(dst, e->st[j].id);
                long ex = dst->edges && j > 0 ? cs_edge_index(dst, e->st[j - 1].fx, (uint32_t)fx)
                                              : UINT32_MAX;
                if (fx < 0 || ex < 0)
                    return -1;
                e->st[j].fx = (uint32_t)fx;
                e->st[j].ex = (uint32_t)ex;
            }
        }
        /* the frames' dense numbers were src's: number them again in dst */
        memset(d->nest.fn_top, 0, d->nest.nfn * sizeof *d->nest.fn_top);
        memset(d->nest.edge_top, 0, d->nest.nedge * sizeof *d->nest.edge_top);
        size_t depth = d->depth;
        for (d->depth = 1; d->depth <= depth; d->depth++) {
            struct cs_frame f = d->st[d->depth - 1];
            if (cs_nest_push(dst, d) != 0)
                return -1;
            d->st[d->depth - 1].same_below = f.same_below; /* unchanged, but keep them as were */
            d->st[d->depth - 1].edge_below = f.edge_below;
        }
        d->depth = depth;
    }
    dst->last_ti = 0;
    dst->calls += src->calls;
    dst->clipped += src->clipped;
    dst->repairs += src->repairs;
    dst->unmatched += src->unmatched;
    dst->gaps += src->gaps;
    dst->gap_events += src->gap_events;
    dst->gap_frames += src->gap_frames;
    dst->top_ticks += src->top_ticks;
    dst->lost_ticks += src->lost_ticks;
    dst->switches += src->switches;
    dst->ntracks += src->ntracks;
    src->nt = 0;
    return 0;
}

void cs_free(struct callstack *cs)
{
    for (size_t i = 0; i < cs->nt; i++) {
        free(cs->t[i].st);
        free(cs->t[i].nest.fn_top);
        free(cs->t[i].nest.edge_top);
        for (size_t k = 0; k < cs->t[i].nctx; k++)
            free(cs->t[i].ctxs[k].st);
        free(cs->t[i].ctxs);
        u64map_free(&cs->t[i].ctxmap);
        free(cs->t[i].xargs);
        free(cs->t[i].strs);
    }
    free(cs->t);
    u64map_free(&cs->tmap);
    u64map_free(&cs->fxmap);
    u64map_free(&cs->exmap);
    memset(cs, 0, sizeof *cs);
}
