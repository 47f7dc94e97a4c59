/* The walker's inner loop for function records (callstack.h's stack rule) as inline functions,
 * for the commands whose hot loop is the walk. A command that passes a pointer to a static const
 * struct cs_ops (cs_walk_funcs, cs_walk_next_item) gets its callbacks called directly, and
 * usually inlined, instead of through pointers at every record; callstack.c's cs_feed,
 * cs_feed_funcs and cs_next_item are the same code with the ops known at run time, so every
 * command walks by one rule. Nothing here is part of the walker's interface: use callstack.h's
 * functions, or these two. */
#ifndef SLEDTRACE_TOOLS_CALLSTACK_WALK_H
#define SLEDTRACE_TOOLS_CALLSTACK_WALK_H

#include "callstack.h"

#include <stdlib.h>
#include <string.h>

#define CS_INLINE static inline __attribute__((always_inline))

/* ---- open frames by function and by caller -> callee pair (callstack.nesting) ------------- */

/* The dense number of key in map (insertion order), through a direct-mapped cache of n slots;
 * -1 on allocation failure. */
CS_INLINE long cs_dense(struct u64map *map, uint64_t *ckey, uint32_t *cval, size_t n, uint64_t key)
{
    size_t slot = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (n - 1);
    if (ckey[slot] == key + 1)
        return cval[slot];
    bool added;
    long i = u64map_get(map, key, &added);
    if (i < 0)
        return -1;
    ckey[slot] = key + 1;
    cval[slot] = (uint32_t)i;
    return i;
}

/* The dense numbers, with the last lookup of each remembered first (a recursion pushes the
 * same function under the same caller again and again). */
CS_INLINE long cs_fn_index(struct callstack *cs, uint32_t id)
{
    if (cs->fx_last == (uint64_t)id + 1)
        return cs->fx_last_val;
    long i = cs_dense(&cs->fxmap, cs->fx_key, cs->fx_val, 256, id);
    if (i >= 0) {
        cs->fx_last = (uint64_t)id + 1;
        cs->fx_last_val = (uint32_t)i;
    }
    return i;
}

CS_INLINE long cs_edge_index(struct callstack *cs, uint32_t from_fx, uint32_t to_fx)
{
    uint64_t key = (uint64_t)from_fx << 32 | to_fx;
    if (cs->ex_last == key + 1)
        return cs->ex_last_val;
    long i = cs_dense(&cs->exmap, cs->ex_key, cs->ex_val, 1024, key);
    if (i >= 0) {
        cs->ex_last = key + 1;
        cs->ex_last_val = (uint32_t)i;
    }
    return i;
}

/* Slot i of a top array, grown (zeroed) to hold it; NULL on allocation failure. */
CS_INLINE size_t *cs_top_slot(size_t **a, size_t *n, size_t i)
{
    if (__builtin_expect(i >= *n, 0)) {
        size_t nn = *n ? *n : 16;
        while (nn <= i)
            nn *= 2;
        size_t *g = realloc(*a, nn * sizeof *g);
        if (!g)
            return NULL;
        memset(g + *n, 0, (nn - *n) * sizeof *g);
        *a = g;
        *n = nn;
    }
    return &(*a)[i];
}

/* Frame t->st[t->depth - 1], just pushed, becomes the topmost open frame of its function and of
 * its caller -> callee pair; its same_below and edge_below get the ones it covers. -1 on
 * allocation failure. */
CS_INLINE int cs_nest_push(struct callstack *cs, struct cs_thread *t)
{
    struct cs_frame *f = &t->st[t->depth - 1];
    long fx = cs_fn_index(cs, f->id);
    size_t *top = fx < 0 ? NULL : cs_top_slot(&t->nest.fn_top, &t->nest.nfn, (size_t)fx);
    if (!top)
        return -1;
    f->fx = (uint32_t)fx;
    f->same_below = *top;
    *top = t->depth;
    f->ex = UINT32_MAX;
    if (cs->edges && t->depth > 1) {
        long ex = cs_edge_index(cs, t->st[t->depth - 2].fx, f->fx);
        top = ex < 0 ? NULL : cs_top_slot(&t->nest.edge_top, &t->nest.nedge, (size_t)ex);
        if (!top)
            return -1;
        f->ex = (uint32_t)ex;
        f->edge_below = *top;
        *top = t->depth;
    }
    return 0;
}

/* Frame fr, the top one, closed: the frames it covered are the topmost ones again. */
CS_INLINE void cs_nest_pop(struct cs_thread *t, const struct cs_frame *fr)
{
    t->nest.fn_top[fr->fx] = fr->same_below;
    if (fr->ex != UINT32_MAX)
        t->nest.edge_top[fr->ex] = fr->edge_below;
}

/* The string records of frames at index >= i (closed, or dropped at a gap) are forgotten. */
void cs_strings_trim(struct cs_thread *t, size_t i);

CS_INLINE int cs_close_top(struct callstack *cs, struct cs_thread *t, uint64_t tsc, enum cs_why why,
                           const struct cs_ops *ops, void *ctx)
{
    /* the popped slot stays as it is until the next push: no copy (the callbacks never push) */
    const struct cs_frame *fr = &t->st[--t->depth];
    const uint64_t *ret = NULL;
    if (__builtin_expect(t->has_ret, 0) && why == CS_EXIT) {
        ret = t->ret; /* the exit's: the typed event right before it */
        t->has_ret = false;
    }
    uint64_t dur, self;
    if (!ops || !ops->close) { /* the strings go now: no callback reads them */
        if (__builtin_expect(t->nstrs != 0, 0))
            cs_strings_trim(t, t->depth);
    }
    if (cs->signed_dur) { /* corrected times: modulo 2^64, so that sums stay exact */
        dur = tsc - fr->start;
        self = dur - fr->child;
    } else {
        dur = tsc >= fr->start ? tsc - fr->start : fr->start - tsc;
        self = dur > fr->child ? dur - fr->child : 0;
    }
    if (cs->nesting) {
        cs_nest_pop(t, fr);
        if (fr->same_below)
            t->st[fr->same_below - 1].rec += dur;
    }
    if (t->depth > 0)
        t->st[t->depth - 1].child += dur;
    else
        cs->top_ticks += dur;
    cs->calls++;
    if (why == CS_REPAIR)
        cs->repairs++;
    uint8_t clip = fr->clip | cs->clip_end;
    if (clip)
        cs->clipped++;
    if (!ops || !ops->close)
        return 0;
    struct cs_close c = {.t = t,
                         .f = fr,
                         .depth = t->depth,
                         .end = tsc,
                         .dur = dur,
                         .self = self,
                         .why = why,
                         .repaired = why == CS_REPAIR,
                         .clip = clip,
                         .ret = ret};
    int rc = ops->close(ctx, &c);
    if (__builtin_expect(t->nstrs != 0, 0))
        cs_strings_trim(t, t->depth);
    return rc;
}

/* t's last function record was at tsc with action: its last timestamp, and whether
 * CallArguments may follow. */
CS_INLINE void cs_last_func(struct cs_thread *t, uint64_t tsc, uint8_t action)
{
    t->last = tsc;
    t->args_open = action == STF_ENTER_ARGS;
}

/* A function record of thread t, but for cs_last_func, which the caller does (cs_walk_funcs
 * once per run: no callback reads them). */
CS_INLINE int cs_feed_func(struct callstack *cs, struct cs_thread *t, uint32_t id, uint8_t action,
                           uint64_t tsc, const struct cs_ops *ops, void *ctx)
{
    if (action == STF_ENTER || action == STF_ENTER_ARGS) {
        if (t->depth == t->cap) {
            struct cs_frame *n = tool_grow(t->st, &t->cap, sizeof *n, 8);
            if (!n)
                return -1;
            t->st = n;
        }
        if (__builtin_expect(t->nstrs != 0, 0))
            cs_strings_trim(t, t->depth); /* a dropped frame's, at this depth */
        t->has_ret = false;
        struct cs_frame *f = &t->st[t->depth++];
        *f = (struct cs_frame){.id = id, .start = tsc};
        if (cs->nesting && cs_nest_push(cs, t) != 0)
            return -1;
        return ops && ops->enter ? ops->enter(ctx, t, f, t->depth - 1) : 0;
    }
    size_t i = t->depth;
    while (i > 0 && t->st[i - 1].id != id)
        i--;
    if (i == 0) {
        cs->unmatched++;
        return 0;
    }
    while (t->depth > i) {
        int rc = cs_close_top(cs, t, tsc, CS_REPAIR, ops, ctx);
        if (rc)
            return rc;
    }
    return cs_close_top(cs, t, tsc, CS_EXIT, ops, ctx);
}

/* Thread (pid, tid), made known (ops->thread) if new, its first timestamp tsc; NULL on
 * allocation failure or when ops->thread returned non-zero. */
struct cs_thread *cs_thread_get(struct callstack *cs, int32_t pid, int32_t tid, uint64_t tsc,
                                const struct cs_ops *ops, void *ctx);

/* The same as cs_walk_funcs with a window (callstack.c). */
int cs_win_funcs(struct callstack *cs, int32_t pid, int32_t tid, const struct stf_func *fn,
                 size_t n, const struct cs_ops *ops, void *ctx);

/* cs_feed_funcs with ops inlined. */
CS_INLINE int cs_walk_funcs(struct callstack *cs, int32_t pid, int32_t tid,
                            const struct stf_func *fn, size_t n, const struct cs_ops *ops,
                            void *ctx)
{
    if (n == 0)
        return 0;
    if (__builtin_expect(cs->win, 0))
        return cs_win_funcs(cs, pid, tid, fn, n, ops, ctx);
    struct cs_thread *t = cs_thread_get(cs, pid, tid, fn[0].tsc, ops, ctx);
    if (!t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int rc = cs_feed_func(cs, t, fn[i].id, fn[i].action, fn[i].tsc, ops, ctx);
        if (rc) {
            cs_last_func(t, fn[i].tsc, fn[i].action);
            return rc;
        }
    }
    cs_last_func(t, fn[n - 1].tsc, fn[n - 1].action);
    return 0;
}

/* cs_next_item with ops inlined. */
CS_INLINE int cs_walk_next_item(struct callstack *cs, struct tool_trace *t,
                                const struct cs_ops *ops, void *ctx, struct stf_item *it)
{
    struct stf_func buf[512];
    const struct stf_func *run;
    size_t n;
    while ((n = tool_trace_run(t, buf, sizeof buf / sizeof buf[0], &run)) != 0)
        if (cs_walk_funcs(cs, t->cur_pid, t->cur_tid, run, n, ops, ctx) != 0)
            return CS_NOMEM;
    return tool_trace_next(t, it);
}

#endif
