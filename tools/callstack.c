/* The call-stack walker and stack aggregation (see callstack.h). */
#include "callstack.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cs_thread *tget(struct callstack *cs, const struct stf_item *it,
                              const struct cs_ops *ops, void *ctx)
{
    uint64_t key = ((uint64_t)(uint32_t)it->pid << 32) | (uint32_t)it->tid;
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
        cs->t[cs->nt] =
            (struct cs_thread){.pid = it->pid, .tid = it->tid, .first = it->tsc, .last = it->tsc};
        cs->nt++;
        if (ops && ops->thread && ops->thread(ctx, &cs->t[i]) != 0)
            return NULL;
    }
    cs->last_key = key;
    cs->last_ti = (size_t)i + 1;
    return &cs->t[i];
}

/* ---- open frames by key (callstack.nesting) ------------------------------------------------ */

/* Keys: a function id (28 bits) under a tag no caller -> callee pair can have, or the pair. */
static uint64_t fn_key(uint32_t id)
{
    return 0xffffffff00000000ull | id;
}

static uint64_t edge_key(uint32_t from, uint32_t to)
{
    return (uint64_t)from << 32 | to;
}

static size_t nest_hash(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

/* The slot of key, or the empty slot where it would go. */
static size_t nest_slot(const struct cs_nest *m, uint64_t key)
{
    size_t j = nest_hash(key, m->cap);
    while (m->top[j] && m->key[j] != key)
        j = (j + 1) & (m->cap - 1);
    return j;
}

/* The frame at index + 1 = top becomes the topmost open frame of key; returns the one it covers
 * (0: none). -1 (as SIZE_MAX) on allocation failure. */
static size_t nest_push(struct cs_nest *m, uint64_t key, size_t top)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        size_t *nt = calloc(ncap, sizeof *nt);
        if (!nk || !nt) {
            free(nk);
            free(nt);
            return SIZE_MAX;
        }
        struct cs_nest g = {.key = nk, .top = nt, .cap = ncap, .n = m->n};
        for (size_t i = 0; i < m->cap; i++)
            if (m->top[i]) {
                size_t j = nest_slot(&g, m->key[i]);
                nk[j] = m->key[i];
                nt[j] = m->top[i];
            }
        free(m->key);
        free(m->top);
        *m = g;
    }
    size_t j = nest_slot(m, key);
    size_t below = m->top[j];
    if (!below)
        m->n++;
    m->key[j] = key;
    m->top[j] = top;
    return below;
}

/* The topmost open frame of key closes: below (its same_below / edge_below) is the topmost one
 * again, or, when 0, key leaves the table (backward-shift deletion keeps probing intact). */
static void nest_pop(struct cs_nest *m, uint64_t key, size_t below)
{
    size_t j = nest_slot(m, key);
    if (!m->top[j])
        return; /* not there: cannot happen */
    if (below) {
        m->top[j] = below;
        return;
    }
    m->top[j] = 0;
    m->n--;
    size_t mask = m->cap - 1;
    for (size_t k = (j + 1) & mask; m->top[k]; k = (k + 1) & mask) {
        size_t d = nest_hash(m->key[k], m->cap);
        bool stays = j <= k ? (j < d && d <= k) : (j < d || d <= k);
        if (stays)
            continue;
        m->key[j] = m->key[k];
        m->top[j] = m->top[k];
        m->top[k] = 0;
        j = k;
    }
}

static void nest_clear(struct cs_nest *m)
{
    if (m->cap)
        memset(m->top, 0, m->cap * sizeof *m->top);
    m->n = 0;
}

static int close_top(struct callstack *cs, struct cs_thread *t, uint64_t tsc, enum cs_why why,
                     const struct cs_ops *ops, void *ctx)
{
    struct cs_frame fr = t->st[--t->depth];
    uint64_t dur = tsc >= fr.start ? tsc - fr.start : fr.start - tsc;
    uint64_t self = dur > fr.child ? dur - fr.child : 0;
    if (cs->nesting) {
        nest_pop(&t->nest, fn_key(fr.id), fr.same_below);
        if (t->depth)
            nest_pop(&t->nest, edge_key(t->st[t->depth - 1].id, fr.id), fr.edge_below);
        if (fr.same_below)
            t->st[fr.same_below - 1].rec += dur;
    }
    if (t->depth > 0)
        t->st[t->depth - 1].child += dur;
    else
        cs->top_ticks += dur;
    cs->calls++;
    if (why == CS_REPAIR)
        cs->repairs++;
    if (!ops || !ops->close)
        return 0;
    struct cs_close c = {.t = t,
                         .f = &fr,
                         .depth = t->depth,
                         .end = tsc,
                         .dur = dur,
                         .self = self,
                         .why = why,
                         .repaired = why == CS_REPAIR};
    return ops->close(ctx, &c);
}

static int close_all(struct callstack *cs, struct cs_thread *t, enum cs_why why,
                     const struct cs_ops *ops, void *ctx)
{
    while (t->depth) {
        int rc = close_top(cs, t, t->last, why, ops, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

int cs_feed(struct callstack *cs, const struct stf_item *it, const struct cs_ops *ops, void *ctx)
{
    switch (it->kind) {
    case STF_K_FUNCTION:
    case STF_M_CUSTOM_EVENT:
    case STF_M_TYPED_EVENT:
    case STF_M_NEW_CPU:
    case STF_M_TSC_WRAP:
    case STF_M_CALL_ARG:
        break;
    default:
        return 0; /* block framing: says nothing about the stack */
    }
    struct cs_thread *t = tget(cs, it, ops, ctx);
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
                t->depth = 0;
                nest_clear(&t->nest);
            }
            t->last = it->tsc;
            return ops && ops->loss ? ops->loss(ctx, t, it->tsc, lost, open) : 0;
        }
        if (it->kind == STF_M_CUSTOM_EVENT || it->kind == STF_M_TYPED_EVENT)
            t->last = it->tsc;
        if (it->kind == STF_M_CALL_ARG && t->args_open && t->depth) {
            struct cs_frame *f = &t->st[t->depth - 1]; /* the call that logs them */
            if (f->nargs++ == 0)
                f->arg = it->value;
        }
        return 0;
    }
    t->last = it->tsc;
    t->args_open = it->action == STF_ENTER_ARGS;
    if (it->action == STF_ENTER || it->action == STF_ENTER_ARGS) {
        if (t->depth == t->cap) {
            struct cs_frame *n = tool_grow(t->st, &t->cap, sizeof *n, 8);
            if (!n)
                return -1;
            t->st = n;
        }
        struct cs_frame *f = &t->st[t->depth++];
        *f = (struct cs_frame){.id = it->func_id, .start = it->tsc};
        if (cs->nesting) {
            size_t below = nest_push(&t->nest, fn_key(f->id), t->depth);
            if (below == SIZE_MAX)
                return -1;
            f->same_below = below;
            if (t->depth > 1) {
                below = nest_push(&t->nest, edge_key(t->st[t->depth - 2].id, f->id), t->depth);
                if (below == SIZE_MAX)
                    return -1;
                f->edge_below = below;
            }
        }
        return ops && ops->enter ? ops->enter(ctx, t, f, t->depth - 1) : 0;
    }
    size_t i = t->depth;
    while (i > 0 && t->st[i - 1].id != it->func_id)
        i--;
    if (i == 0) {
        cs->unmatched++;
        return 0;
    }
    while (t->depth > i) {
        int rc = close_top(cs, t, it->tsc, CS_REPAIR, ops, ctx);
        if (rc)
            return rc;
    }
    return close_top(cs, t, it->tsc, CS_EXIT, ops, ctx);
}

int cs_finish(struct callstack *cs, const struct cs_ops *ops, void *ctx)
{
    if (!cs->close_open)
        return 0;
    for (size_t i = 0; i < cs->nt; i++) {
        int rc = close_all(cs, &cs->t[i], CS_END, ops, ctx);
        if (rc)
            return rc;
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
    for (size_t i = 0; i < cs->nt; i++)
        n += cs->t[i].depth;
    return n;
}

uint64_t cs_orphan_ticks(const struct callstack *cs)
{
    uint64_t n = cs->lost_ticks;
    for (size_t i = 0; i < cs->nt; i++)
        if (cs->t[i].depth)
            n += cs->t[i].st[0].child;
    return n;
}

void cs_free(struct callstack *cs)
{
    for (size_t i = 0; i < cs->nt; i++) {
        free(cs->t[i].st);
        free(cs->t[i].nest.key);
        free(cs->t[i].nest.top);
    }
    free(cs->t);
    u64map_free(&cs->tmap);
    memset(cs, 0, sizeof *cs);
}

/* ---- stack tree -------------------------------------------------------------------------- */

static int tree_root(struct cs_tree *tr)
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

static long tree_child(struct cs_tree *tr, uint32_t parent, uint32_t id)
{
    if (tree_root(tr) != 0)
        return -1;
    bool added;
    long i = u64map_get(&tr->map, ((uint64_t)parent << 32) | id, &added);
    if (i < 0)
        return -1;
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

/* The node of thread t under the root (per_thread). */
static long thread_node(struct cs_tree *tr, const struct cs_thread *t)
{
    size_t k = 0;
    while (k < tr->nthreads && (tr->threads[k].pid != t->pid || tr->threads[k].tid != t->tid))
        k++;
    if (k == tr->nthreads) {
        if (k == tr->capthreads) {
            void *nt = tool_grow(tr->threads, &tr->capthreads, sizeof *tr->threads, 8);
            if (!nt)
                return -1;
            tr->threads = nt;
        }
        tr->threads[k].pid = t->pid;
        tr->threads[k].tid = t->tid;
        tr->nthreads++;
    }
    return tree_child(tr, 0, CS_THREAD_NODE | (uint32_t)k);
}

static int tree_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct cs_tree *tr = ctx;
    long top = depth || !tr->per_thread ? 0 : thread_node(tr, t);
    if (top < 0)
        return -1;
    uint32_t parent = depth ? t->st[depth - 1].node : (uint32_t)top;
    long n = tree_child(tr, parent, f->id);
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
    if (tree_root(tree) != 0) {
        tool_trace_close(&tr);
        tool_err("out of memory");
        return EXIT_BAD_TRACE;
    }
    static const struct cs_ops ops = {.enter = tree_enter, .close = tree_close, .loss = NULL};
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
        if (cs_feed(cs, &it, &ops, tree) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    *syms = tr.syms; /* the caller's now */
    tr.syms = NULL;
    tool_trace_close(&tr);
    return status;
}

uint64_t cs_node_weight(const struct cs_node *n, bool by_count, uint64_t freq)
{
    return by_count ? n->calls : tool_ticks_to_ns(n->self, freq);
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
