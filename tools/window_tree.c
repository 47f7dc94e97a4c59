/* Stack trees under call filters (window.h: tool_window_tree_load), for stack and flamegraph.
 *
 * The tree is callstack.h's (struct cs_tree: (parent, function) nodes, node 0 the root, thread
 * nodes with --per-thread), built here by a walk of its own because the filters change what a
 * closed call adds (window.c's top gives the rules):
 *  - a call shown adds its self time, plus what its hidden callees folded into it, to its node,
 *    and counts as a call there;
 *  - a call deeper than --max-depth or shorter than --min-duration (TW_FOLD) passes the same sum
 *    up to its parent, so the widths stay true: its time shows in the nearest shown caller;
 *  - a call outside every --filter subtree, or in an --exclude subtree (TW_DROP), adds nothing
 *    and passes nothing up. Its node still exists when it lies above a --filter match, as the
 *    path of the match (a caller's name as context, with no weight).
 * The sum folded into an open frame waits in its cs_frame.mark (free for the caller). Nodes are
 * made for frames above --max-depth only (a deeper frame uses its parent's node, so a deep
 * recursion under --max-depth does not grow the tree), and not inside an --exclude subtree.
 * The walk is sequential (cs_tree_load's is per thread in parallel): one pass, memory as
 * cs_tree_load's. Nodes are made by cstree.c's own cs_tree_child and cs_tree_thread, so
 * cs_tree_names, cs_tree_merge and stackpaths work on the result.
 * Also here: tool_window_begin, a timed window set on a walk and its trace (the commands that
 * walk a trace themselves call it; this file calls none of them). */
#include "callstack.h"
#include "seek.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>

bool tool_window_begin(const struct tool_window *w, struct tool_trace *tr, struct callstack *cs,
                       uint64_t base, uint64_t *from, uint64_t *to)
{
    if (!tool_window_timed(w))
        return false;
    uint64_t lo, hi;
    tool_window_ticks(w, base, tr->freq, &lo, &hi);
    cs_set_window(cs, lo, hi);
    tool_trace_window(tr, lo, hi); /* seek.h: each thread from near the window */
    if (from)
        *from = lo;
    if (to)
        *to = hi;
    return true;
}

struct wt_ctx {
    struct cs_tree *tr;
    const struct tool_window *w;
    const struct stf_syms *syms;
    uint64_t freq, shown;
};

static int wt_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct wt_ctx *x = ctx;
    long top = depth || !x->tr->per_thread ? 0 : cs_tree_thread(x->tr, t->pid, t->tid);
    if (top < 0)
        return -1;
    uint32_t parent = depth ? t->st[depth - 1].node : (uint32_t)top;
    f->mark = 0;
    f->vis = tool_window_vis(x->w, x->syms, t->st, depth, f);
    if ((x->w->max_depth && depth >= x->w->max_depth) || (f->vis & TW_EXCLUDED)) {
        f->node = parent; /* never shown: no node of its own */
        return 0;
    }
    long n = cs_tree_child(x->tr, parent, f->id);
    if (n < 0)
        return -1;
    f->node = (uint32_t)n;
    return 0;
}

static int wt_close(void *ctx, const struct cs_close *c)
{
    struct wt_ctx *x = ctx;
    uint64_t sum = c->self + c->f->mark; /* modulo 2^64: corrected self times are signed */
    switch (tool_window_close(x->w, x->syms, c, x->freq)) {
    case TW_SHOW:
        x->tr->n[c->f->node].self += sum;
        x->tr->n[c->f->node].calls++;
        x->shown++;
        break;
    case TW_FOLD:
        if (c->depth)
            c->t->st[c->depth - 1].mark += sum;
        break;
    case TW_DROP:
        break;
    }
    return 0;
}

int tool_window_tree_load(const char *path, const char *syms_opt, const int32_t *tid,
                          struct cs_tree *tree, struct callstack *cs, struct stf_syms **syms,
                          uint64_t *freq, uint64_t *shown)
{
    if (!tool_window_filtered(cs->window)) {
        int st = cs_tree_load(path, syms_opt, tid, tree, cs, syms, freq);
        *shown = cs->calls;
        return st;
    }
    *syms = NULL;
    *shown = 0;
    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_opt, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    tr.one = tid != NULL;
    tr.tid = tid ? *tid : 0;
    *freq = tr.freq;
    cs->signed_dur = tool_trace_corrected(&tr);
    tool_window_begin(cs->window, &tr, cs, tool_trace_base(&tr), NULL, NULL);
    struct wt_ctx x = {.tr = tree, .w = cs->window, .syms = tr.syms, .freq = tr.freq};
    static const struct cs_ops ops = {.enter = wt_enter, .close = wt_close};
    tool_trace_prefetch(&tr);
    int rc = cs_tree_root(tree) == 0 ? STF_OK : CS_NOMEM;
    struct stf_item it;
    while (rc == STF_OK && (rc = cs_next_item(cs, &tr, &ops, &x, &it)) == STF_OK)
        if (cs_feed(cs, &it, &ops, &x) != 0)
            rc = CS_NOMEM;
    int status = EXIT_OK;
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    cs->times = tool_trace_times(&tr);
    *shown = x.shown;
    *syms = tr.syms;
    tr.syms = NULL;
    tool_trace_close(&tr);
    return status;
}
