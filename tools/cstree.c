/* Aggregated stacks (callstack.h, "Aggregated stacks"): the tree of (parent, function) nodes
 * that stack, flamegraph and the Python module build from the walker's closed frames, and
 * cs_tree_load, which reads a trace into one: each thread of the trace walked apart
 * (tool_trace_parallel) into a tree of its own, the trees then merged in the order a sequential
 * walk reads the threads, so the result does not depend on the number of workers. A window
 * (cs.window) is read through the seek index (seek.h). */
#include "callstack_walk.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- stack tree -------------------------------------------------------------------------- */

int cs_tree_root(struct cs_tree *tr)
{
    if (tr->nn)
        return 0;
    tr->n = calloc(64, sizeof *tr->n);
    if (!tr->n)
        return -1;
    tr->capn = 64;
    tr->nn = 1;
    return 0;
}

long cs_tree_child(struct cs_tree *tr, uint32_t parent, uint32_t id)
{
    uint64_t key = ((uint64_t)parent << 32) | id;
    size_t slot = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 52);
    if (tr->cval[slot] && tr->ckey[slot] == key)
        return tr->cval[slot];
    if (cs_tree_root(tr) != 0)
        return -1;
    bool added;
    long i = u64map_get(&tr->map, key, &added);
    if (i < 0)
        return -1;
    tr->ckey[slot] = key;
    tr->cval[slot] = (uint32_t)i + 1;
    if (added) {
        if (tr->nn == tr->capn) {
            struct cs_node *n = tool_grow(tr->n, &tr->capn, sizeof *n, 64);
            if (!n)
                return -1;
            tr->n = n;
        }
        tr->n[tr->nn] = (struct cs_node){.parent = parent, .id = id, .self = 0, .calls = 0};
        tr->nn++;
    }
    return i + 1; /* map index i is node i + 1 (node 0 is the root) */
}

/* The node of thread (pid, tid) under the root (per_thread). */
long cs_tree_thread(struct cs_tree *tr, int32_t pid, int32_t tid)
{
    size_t k = 0;
    while (k < tr->nthreads && (tr->threads[k].pid != pid || tr->threads[k].tid != tid))
        k++;
    if (k == tr->nthreads) {
        if (k == tr->capthreads) {
            void *nt = tool_grow(tr->threads, &tr->capthreads, sizeof *tr->threads, 8);
            if (!nt)
                return -1;
            tr->threads = nt;
        }
        tr->threads[k].pid = pid;
        tr->threads[k].tid = tid;
        tr->nthreads++;
    }
    return cs_tree_child(tr, 0, CS_THREAD_NODE | (uint32_t)k);
}

static long thread_node(struct cs_tree *tr, const struct cs_thread *t)
{
    return cs_tree_thread(tr, t->pid, t->tid);
}

int cs_tree_merge(struct cs_tree *dst, const struct cs_tree *src)
{
    if (cs_tree_root(dst) != 0)
        return -1;
    uint32_t *map = malloc((src->nn ? src->nn : 1) * sizeof *map);
    if (!map)
        return -1;
    map[0] = 0;
    for (size_t i = 1; i < src->nn; i++) { /* a parent is older than its children */
        const struct cs_node *n = &src->n[i];
        long d;
        uint32_t k = n->id & ~CS_THREAD_NODE;
        if (n->parent == 0 && (n->id & CS_THREAD_NODE) == CS_THREAD_NODE && k < src->nthreads)
            d = cs_tree_thread(dst, src->threads[k].pid, src->threads[k].tid);
        else
            d = cs_tree_child(dst, map[n->parent], n->id);
        if (d < 0) {
            free(map);
            return -1;
        }
        dst->n[d].self += n->self;
        dst->n[d].calls += n->calls;
        map[i] = (uint32_t)d;
    }
    free(map);
    return 0;
}

static int tree_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct cs_tree *tr = ctx;
    long top = depth || !tr->per_thread ? 0 : thread_node(tr, t);
    if (top < 0)
        return -1;
    uint32_t parent = depth ? t->st[depth - 1].node : (uint32_t)top;
    long n = cs_tree_child(tr, parent, f->id);
    if (n < 0)
        return -1;
    f->node = (uint32_t)n;
    return 0;
}

static int tree_close(void *ctx, const struct cs_close *c)
{
    struct cs_tree *tr = ctx;
    tr->n[c->f->node].self += c->self;
    tr->n[c->f->node].calls++;
    return 0;
}

/* cs_tree_load's walk of one unit (tool_trace_parallel): a callstack and a tree of its own. */
struct tree_part {
    struct callstack cs;
    struct cs_tree tree;
};

struct tree_run {
    struct tree_part **part;
    struct cs_tree *tree;
    struct callstack *cs;
};

static void part_free(struct tree_part *p)
{
    if (!p)
        return;
    cs_free(&p->cs);
    cs_tree_free(&p->tree);
    free(p);
}

static int tree_walk(void *arg, size_t k, struct tool_trace *sub)
{
    struct tree_run *run = arg;
    struct tree_part *p = calloc(1, sizeof *p);
    if (!p)
        return CS_NOMEM;
    run->part[k] = p;
    p->cs.signed_dur = tool_trace_corrected(sub);
    if (run->cs->win)
        cs_set_window(&p->cs, run->cs->win_from, run->cs->win_to);
    p->tree.per_thread = run->tree->per_thread;
    if (cs_tree_root(&p->tree) != 0)
        return CS_NOMEM;
    static const struct cs_ops ops = {.enter = tree_enter, .close = tree_close, .loss = NULL};
    struct stf_item it;
    int rc;
    while ((rc = cs_walk_next_item(&p->cs, sub, &ops, &p->tree, &it)) == STF_OK)
        if (cs_feed(&p->cs, &it, &ops, &p->tree) != 0)
            return CS_NOMEM;
    return rc;
}

static int tree_merge_part(void *arg, size_t k)
{
    struct tree_run *run = arg;
    struct tree_part *p = run->part[k];
    if (!p)
        return 0;
    run->part[k] = NULL;
    int rc = 0;
    if (run->cs->nt == 0 && run->tree->nn <= 1 && !run->cs->calls && !run->cs->unmatched &&
        !run->cs->gaps) { /* the first: taken as it is */
        cs_free(run->cs);
        cs_tree_free(run->tree);
        *run->cs = p->cs;
        *run->tree = p->tree;
        free(p);
        return 0;
    }
    if (cs_merge(run->cs, &p->cs) != 0 || cs_tree_merge(run->tree, &p->tree) != 0)
        rc = CS_NOMEM;
    part_free(p);
    return rc;
}

int cs_tree_load(const char *path, const char *syms_opt, const int32_t *tid, struct cs_tree *tree,
                 struct callstack *cs, struct stf_syms **syms, uint64_t *freq)
{
    *syms = NULL;
    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_opt, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    tr.one = tid != NULL;
    tr.tid = tid ? *tid : 0;
    *freq = tr.freq;
    if (tool_window_timed(cs->window)) {
        uint64_t from, to;
        tool_window_ticks(cs->window, tool_trace_base(&tr), tr.freq, &from, &to);
        cs_set_window(cs, from, to);
        tool_trace_window(&tr, from, to);
    }
    if (cs_tree_root(tree) != 0) {
        tool_trace_close(&tr);
        tool_err("out of memory");
        return EXIT_BAD_TRACE;
    }
    size_t units = stf_cursor_threads(tr.c) ? stf_cursor_threads(tr.c) : 1;
    struct tree_run run = {.part = calloc(units, sizeof *run.part), .tree = tree, .cs = cs};
    int rc = run.part ? tool_trace_parallel(&tr, tree_walk, tree_merge_part, &run) : CS_NOMEM;
    int status = EXIT_OK;
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    for (size_t k = 0; run.part && k < units; k++)
        part_free(run.part[k]); /* not merged: after a failure */
    free(run.part);
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    cs->times = tool_trace_times(&tr);
    *syms = tr.syms; /* the caller's now */
    tr.syms = NULL;
    tool_trace_close(&tr);
    return status;
}

uint64_t cs_node_weight(const struct cs_node *n, bool by_count, uint64_t freq)
{
    return by_count ? n->calls : tool_ticks_to_ns(cs_ticks(n->self), freq);
}

void cs_tree_free(struct cs_tree *tree)
{
    free(tree->threads);
    free(tree->n);
    u64map_free(&tree->map);
    memset(tree, 0, sizeof *tree);
}

void cs_summary(FILE *out, const struct callstack *cs, uint64_t freq)
{
    fprintf(out,
            "# calls: %" PRIu64 ", stack repairs: %" PRIu64 ", unmatched exits: %" PRIu64
            ", unfinished frames: %" PRIu64 "\n",
            cs->calls, cs->repairs, cs->unmatched, cs_open_frames(cs));
    uint64_t orphan = cs_orphan_ticks(cs);
    if (orphan)
        fprintf(out,
                "# %" PRIu64 "ns of closed calls lie under top-level frames that never closed\n",
                tool_ticks_to_ns(orphan, freq));
    if (cs->gaps)
        fprintf(out,
                "# gaps: %" PRIu64 " (%" PRIu64 " events dropped by the runtime); %" PRIu64
                " frames open at a gap were left out\n",
                cs->gaps, cs->gap_events, cs->gap_frames);
    tool_times_note(out, "# ", &cs->times, cs->top_ticks);
}

char **cs_tree_names(const struct cs_tree *tree, const struct stf_syms *syms)
{
    char **names = calloc(tree->nn ? tree->nn : 1, sizeof *names);
    if (!names)
        return NULL;
    for (size_t i = 0; i < tree->nn; i++) {
        char buf[64];
        const char *nm = i ? stf_syms_name(syms, tree->n[i].id, buf, sizeof buf) : "all";
        uint32_t k = tree->n[i].id & ~CS_THREAD_NODE;
        if (i && (tree->n[i].id & CS_THREAD_NODE) == CS_THREAD_NODE && k < tree->nthreads) {
            const char *tn = stf_syms_thread_name(syms, tree->threads[k].pid, tree->threads[k].tid);
            char *shown = tn ? tool_printable(tn) : NULL;
            if (tn)
                snprintf(buf, sizeof buf, "%s (%" PRId32 ")", shown ? shown : tn,
                         tree->threads[k].tid);
            else
                snprintf(buf, sizeof buf, "thread %" PRId32, tree->threads[k].tid);
            free(shown);
            nm = buf;
        }
        names[i] = strdup(nm);
        if (!names[i]) {
            cs_names_free(names, i);
            return NULL;
        }
        for (char *p = names[i]; *p; p++)
            if (*p == ';')
                *p = ':';
            else if (*p == '\n' || *p == '\r' || *p == '\t')
                *p = ' ';
    }
    return names;
}

void cs_names_free(char **names, size_t n)
{
    if (!names)
        return;
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int cs_parse_by(const char *cmd, const char *v, bool *by_count)
{
    static const char *const weights[] = {"time", "count"};
    int k = tool_choice(cmd, "weight", v, weights, 2);
    if (k < 0)
        return -1;
    *by_count = k == 1;
    return 0;
}
