/* Trace cursor: random access to a trace, one thread at a time (see stf.h, "cursor").
 *
 * Design
 *  - stf_cursor_open reads the whole trace once with the lenient (or given) reader and keeps
 *    every item, grouped by (pid, tid) in file order: the cursor is for programs that walk back
 *    and forth or seek; the tools use the streaming reader instead. Memory is about
 *    sizeof(struct stf_item) + 16 bytes per record plus the event payloads, so a 100 MB trace
 *    of function records needs about 1.5 GB; open large traces with the reader.
 *  - Event payloads are copied into one arena and items point into it only when returned
 *    (the arena may move while loading).
 *  - Seeking uses each item's running maximum TSC in its thread, a non-decreasing key, so a
 *    binary search finds the first item at or after a time even when metadata records carry no
 *    TSC or a CPU change steps the counter back.
 *  - A block's records are staged until the block ends and then go to the thread of its last
 *    record (NewBuffer and Walltime come before the Pid record and carry pid 0 from the
 *    reader); the cursor's items carry the block's final pid and tid.
 *  - BufferExtents records are framing that comes before the block's NewBuffer (so belongs to
 *    no thread yet); they are not items. Every other record is.
 *  - Single-threaded: one cursor, one caller at a time.
 */
#include "stf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct stf_item it; /* it.payload unused: see pay */
    size_t pay;         /* payload offset in the arena */
    uint64_t key;       /* running max TSC of the thread up to this item */
};

struct cthread {
    int32_t pid, tid;
    struct entry *e;
    size_t n, cap;
    uint64_t max_tsc;
};

struct stf_cursor {
    struct stf_header header;
    struct cthread *t;
    size_t nt, capt;
    uint8_t *arena;
    size_t arena_len, arena_cap;
    struct entry *pend; /* items of the block being loaded */
    size_t np, capp;
    size_t sel; /* selected thread */
    size_t pos; /* next item index for stf_cursor_next */
};

static struct cthread *thread_for(struct stf_cursor *c, int32_t pid, int32_t tid, size_t *last)
{
    if (*last < c->nt && c->t[*last].pid == pid && c->t[*last].tid == tid)
        return &c->t[*last];
    for (size_t i = 0; i < c->nt; i++) {
        if (c->t[i].pid == pid && c->t[i].tid == tid) {
            *last = i;
            return &c->t[i];
        }
    }
    if (c->nt == c->capt) {
        size_t nc = c->capt ? c->capt * 2 : 8;
        struct cthread *n = realloc(c->t, nc * sizeof *n);
        if (!n)
            return NULL;
        c->t = n;
        c->capt = nc;
    }
    c->t[c->nt] = (struct cthread){.pid = pid, .tid = tid};
    *last = c->nt;
    return &c->t[c->nt++];
}

/* Stage an item of the current block: its payload goes to the arena now. */
static int stage(struct stf_cursor *c, const struct stf_item *it)
{
    if (c->np == c->capp) {
        size_t nc = c->capp ? c->capp * 2 : 256;
        struct entry *n = realloc(c->pend, nc * sizeof *n);
        if (!n)
            return STF_ERR_NOMEM;
        c->pend = n;
        c->capp = nc;
    }
    struct entry *e = &c->pend[c->np++];
    e->it = *it;
    e->it.payload = NULL;
    e->pay = c->arena_len;
    e->key = 0;
    if (it->payload_len) {
        if (c->arena_len + it->payload_len > c->arena_cap) {
            size_t nc = c->arena_cap ? c->arena_cap : 4096;
            while (nc < c->arena_len + it->payload_len)
                nc *= 2;
            uint8_t *n = realloc(c->arena, nc);
            if (!n)
                return STF_ERR_NOMEM;
            c->arena = n;
            c->arena_cap = nc;
        }
        memcpy(c->arena + c->arena_len, it->payload, it->payload_len);
        c->arena_len += it->payload_len;
    }
    return STF_OK;
}

/* A block's header records come before its Pid record, so they carry pid 0: the whole block
 * goes to the thread of its last record, and its items are relabelled with that pid/tid. */
static int flush_block(struct stf_cursor *c, size_t *last)
{
    if (c->np == 0)
        return STF_OK;
    int32_t pid = c->pend[c->np - 1].it.pid, tid = c->pend[c->np - 1].it.tid;
    struct cthread *t = thread_for(c, pid, tid, last);
    if (!t)
        return STF_ERR_NOMEM;
    if (t->n + c->np > t->cap) {
        size_t nc = t->cap ? t->cap : 256;
        while (nc < t->n + c->np)
            nc *= 2;
        struct entry *n = realloc(t->e, nc * sizeof *n);
        if (!n)
            return STF_ERR_NOMEM;
        t->e = n;
        t->cap = nc;
    }
    for (size_t i = 0; i < c->np; i++) {
        struct entry *e = &t->e[t->n++];
        *e = c->pend[i];
        e->it.pid = pid;
        e->it.tid = tid;
        if (e->it.tsc > t->max_tsc)
            t->max_tsc = e->it.tsc;
        e->key = t->max_tsc;
    }
    c->np = 0;
    return STF_OK;
}

int stf_cursor_open(struct stf_cursor **out, const char *path, int flags, char *err, size_t errlen)
{
    if (!out || !path)
        return STF_ERR_ARG;
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    struct stf_reader *r = NULL;
    int rc = stf_reader_open(&r, path, flags);
    struct stf_cursor *c = NULL;
    if (rc == STF_OK) {
        c = calloc(1, sizeof *c);
        if (!c)
            rc = STF_ERR_NOMEM;
    }
    if (rc == STF_OK) {
        c->header = *stf_reader_header(r);
        struct stf_item it;
        size_t last = 0;
        uint64_t block = 0;
        while ((rc = stf_reader_next(r, &it)) == STF_OK) {
            if (it.kind == STF_M_BUFFER_EXTENTS)
                continue; /* framing; it precedes its block's NewBuffer, so has no thread */
            if (it.block != block && (rc = flush_block(c, &last)) != STF_OK)
                break;
            block = it.block;
            if ((rc = stage(c, &it)) != STF_OK)
                break;
        }
        if (rc == STF_END)
            rc = flush_block(c, &last);
    }
    if (rc != STF_OK) {
        if (err && errlen && r) {
            uint64_t off = 0;
            const char *m = stf_reader_error(r, &off);
            if (m && *m)
                snprintf(err, errlen, "%s: offset %llu: %s", path, (unsigned long long)off, m);
        }
        if (err && errlen && !err[0])
            snprintf(err, errlen, "%s: %s", path, stf_strerror(rc));
        stf_cursor_close(c);
        stf_reader_close(r);
        return rc;
    }
    stf_reader_close(r);
    *out = c;
    return STF_OK;
}

void stf_cursor_close(struct stf_cursor *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nt; i++)
        free(c->t[i].e);
    free(c->t);
    free(c->pend);
    free(c->arena);
    free(c);
}

const struct stf_header *stf_cursor_header(const struct stf_cursor *c)
{
    return &c->header;
}

size_t stf_cursor_threads(const struct stf_cursor *c)
{
    return c->nt;
}

int stf_cursor_select(struct stf_cursor *c, size_t thread, int32_t *pid, int32_t *tid,
                      uint64_t *items)
{
    if (thread >= c->nt)
        return STF_ERR_ARG;
    c->sel = thread;
    c->pos = 0;
    if (pid)
        *pid = c->t[thread].pid;
    if (tid)
        *tid = c->t[thread].tid;
    if (items)
        *items = c->t[thread].n;
    return STF_OK;
}

static int deliver(const struct stf_cursor *c, const struct entry *e, struct stf_item *out)
{
    *out = e->it;
    out->payload = e->it.payload_len ? c->arena + e->pay : NULL;
    return STF_OK;
}

int stf_cursor_next(struct stf_cursor *c, struct stf_item *out)
{
    if (c->nt == 0)
        return STF_END;
    const struct cthread *t = &c->t[c->sel];
    if (c->pos >= t->n)
        return STF_END;
    return deliver(c, &t->e[c->pos++], out);
}

int stf_cursor_prev(struct stf_cursor *c, struct stf_item *out)
{
    if (c->nt == 0 || c->pos == 0)
        return STF_END;
    return deliver(c, &c->t[c->sel].e[--c->pos], out);
}

void stf_cursor_rewind(struct stf_cursor *c, bool to_end)
{
    c->pos = to_end && c->nt ? c->t[c->sel].n : 0;
}

uint64_t stf_cursor_seek(struct stf_cursor *c, uint64_t tsc)
{
    if (c->nt == 0)
        return 0;
    const struct cthread *t = &c->t[c->sel];
    size_t lo = 0, hi = t->n; /* first index with key >= tsc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].key < tsc)
            lo = mid + 1;
        else
            hi = mid;
    }
    c->pos = lo;
    return lo;
}
