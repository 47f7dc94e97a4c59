/* Trace cursor: per-thread walks over a trace, forward and backward, and seek by time (see stf.h,
 * "cursor"). The analysis tools walk traces with it.
 *
 * Design
 *  - Opening reads only block headers: for each block the streaming reader decodes BufferExtents
 *    (v2+), NewBuffer, Walltime and Pid, and then skips the body unread. The result is an index:
 *    per (pid, tid), in first-seen order, the byte span of each of its blocks. A block belongs to
 *    the thread its header names; every item it yields is labelled with that pid and tid.
 *    Memory is the index (about 64 bytes per block: a 591 MB trace of 64 KiB blocks needs about
 *    580 KB) plus at most one decoded block; it does not grow with the records.
 *  - Forward walks are live: the reader is moved to the block's start and its items are handed
 *    out as they are decoded (no copy). At a block's end the cursor moves the reader to the
 *    thread's next block, so a thread's walk reads only its own blocks.
 *  - Walking backward, and seeking, decode one block into a cache (items plus a payload arena)
 *    and step inside it. Payload pointers stay valid until the next call that moves the cursor.
 *  - A block's item count and largest TSC are learnt the first time it is decoded. Seeking and
 *    stf_cursor_select's item count need them for all of a thread's blocks, and decode the
 *    blocks not yet seen (once). An item's time for seeking is the running maximum of its
 *    thread's TSCs up to and including it, a non-decreasing key even when metadata records
 *    carry no TSC or a CPU change steps the counter back.
 *  - Lenient-mode warnings are passed on once, when the bytes they concern are first read:
 *    opening reads framing between blocks and each block's header (up to its first body
 *    record); decoding reads the rest. Each block remembers the offset up to which its
 *    warnings were given (all of them once it has been decoded to its end); a warning about
 *    an earlier offset, met again by a later decode (prev, seek, sync, a walk restarted), is
 *    not passed on again.
 *  - Threads are found by (pid, tid) through a small open-addressing table, so opening a trace
 *    of many threads stays linear.
 *  - Errors (I/O; strict mode: grammar) are sticky; stf_cursor_error names offset and reason.
 *  - Function records in bulk (stf_cursor_funcs): on a forward walk, the reader decodes the
 *    run of function records at its position straight into the caller's array
 *    (stf_reader_funcs); in a cached block they are copied from the cache. Either way the
 *    position, the block's warned offset and its largest TSC move as stf_cursor_next's would.
 *  - Single-threaded: one cursor, one caller at a time. For several threads, stf_cursor_clone
 *    gives each its own cursor: a copy of the index and a reader of its own over the same
 *    file (stf_reader_dup: pread, no shared file offset), so nothing is shared after the copy.
 */
#include "stf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cblock {
    uint64_t off, end; /* byte span in the file */
    uint64_t index;    /* block number in file order */
    uint64_t first;    /* items of the thread before this block (valid when counted) */
    uint64_t key;      /* running max TSC of the thread at this block's end (when counted) */
    uint64_t max_tsc;  /* largest TSC in this block (when seen) */
    uint64_t warned;   /* warnings about bytes before this offset were given (see top) */
    uint32_t n;        /* items (when seen) */
    bool seen;         /* decoded once: n and max_tsc known, warnings given */
};

struct cthread {
    int32_t pid, tid;
    struct cblock *b;
    size_t nb, capb;
    bool counted; /* first and key valid for every block */
    uint64_t items;
};

struct stf_cursor {
    struct stf_reader *r;
    struct stf_header header;
    struct cthread *t;
    size_t nt, capt;

    /* position: before item bpos of block blk of thread sel */
    size_t sel, blk, bpos;
    bool live; /* the reader's next item of block blk is item bpos */

    /* one decoded block of thread sel */
    bool cached;
    size_t cblk;
    struct stf_item *items;
    size_t *pay; /* payload offsets in the arena */
    size_t nitems, capitems;
    uint8_t *arena;
    size_t alen, acap;

    stf_warn_fn warn;
    void *warn_ctx;
    struct cblock *wb; /* block being decoded: its warnings before wb->warned were given */
    uint64_t *tkeys;   /* (pid, tid) -> thread index + 1, open addressing; tcap a power of 2 */
    uint32_t *tvals;
    size_t tcap;
    uint64_t warnings, records, bytes;
    int err;
};

static void on_warn(void *ctx, uint64_t offset, const char *msg)
{
    struct stf_cursor *c = ctx;
    if (c->wb && offset < c->wb->warned)
        return;
    c->warnings++;
    if (c->warn)
        c->warn(c->warn_ctx, offset, msg);
}

static int failed(struct stf_cursor *c, int rc)
{
    if (rc < 0)
        c->err = rc;
    return rc;
}

/* ---- index --------------------------------------------------------------------------------- */

static void *grow(void *p, size_t *cap, size_t elem, size_t need)
{
    if (need <= *cap)
        return p;
    size_t nc = *cap ? *cap : 4; /* small: a trace may have many threads */
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem)
            return NULL;
        nc *= 2;
    }
    void *n = realloc(p, nc * elem);
    if (n)
        *cap = nc;
    return n;
}

static uint64_t tkey(int32_t pid, int32_t tid)
{
    return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
}

static size_t tslot(const struct stf_cursor *c, uint64_t key)
{
    size_t s = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (c->tcap - 1);
    while (c->tvals[s] && c->tkeys[s] != key)
        s = (s + 1) & (c->tcap - 1);
    return s;
}

/* Index of thread (pid, tid), added if new; SIZE_MAX when out of memory. */
static size_t thread_index(struct stf_cursor *c, int32_t pid, int32_t tid)
{
    if (2 * (c->nt + 1) > c->tcap) { /* keep the table at most half full */
        size_t ncap = c->tcap ? 2 * c->tcap : 64;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        uint32_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return SIZE_MAX;
        }
        free(c->tkeys);
        free(c->tvals);
        c->tkeys = nk;
        c->tvals = nv;
        c->tcap = ncap;
        for (size_t i = 0; i < c->nt; i++) {
            size_t s = tslot(c, tkey(c->t[i].pid, c->t[i].tid));
            c->tkeys[s] = tkey(c->t[i].pid, c->t[i].tid);
            c->tvals[s] = (uint32_t)i + 1;
        }
    }
    uint64_t key = tkey(pid, tid);
    size_t s = tslot(c, key);
    if (c->tvals[s])
        return c->tvals[s] - 1;
    struct cthread *n = grow(c->t, &c->capt, sizeof *n, c->nt + 1);
    if (!n)
        return SIZE_MAX;
    c->t = n;
    c->t[c->nt] = (struct cthread){.pid = pid, .tid = tid};
    c->tkeys[s] = key;
    c->tvals[s] = (uint32_t)c->nt + 1;
    return c->nt++;
}

static int add_block(struct stf_cursor *c, int32_t pid, int32_t tid, uint64_t off, uint64_t end,
                     uint64_t warned, uint64_t index, size_t *last)
{
    size_t i = *last;
    if (!(i < c->nt && c->t[i].pid == pid && c->t[i].tid == tid)) {
        i = thread_index(c, pid, tid);
        if (i == SIZE_MAX)
            return STF_ERR_NOMEM;
        *last = i;
    }
    struct cthread *t = &c->t[i];
    struct cblock *nb = grow(t->b, &t->capb, sizeof *nb, t->nb + 1);
    if (!nb)
        return STF_ERR_NOMEM;
    t->b = nb;
    t->b[t->nb++] = (struct cblock){.off = off, .end = end, .warned = warned, .index = index};
    return STF_OK;
}

static bool header_kind(int kind)
{
    return kind == STF_M_NEW_BUFFER || kind == STF_M_WALLTIME || kind == STF_M_PID;
}

/* Read every block's header and skip its body. */
static int build_index(struct stf_cursor *c)
{
    struct stf_item it;
    bool pending = false;
    uint64_t pblock = 0, start = 0, end = 0;
    int32_t pid = 0, tid = 0;
    size_t last = 0;
    int rc;
    while ((rc = stf_reader_next(c->r, &it)) == STF_OK) {
        if (it.kind == STF_M_BUFFER_EXTENTS)
            continue;
        if (!pending || it.block != pblock) {
            /* a block that ended within its header was read, and warned about, whole */
            if (pending &&
                (rc = add_block(c, pid, tid, start, end, UINT64_MAX, pblock, &last)) != STF_OK)
                return rc;
            pending = true;
            pblock = it.block;
            stf_reader_block_span(c->r, &start, &end);
        }
        pid = it.pid;
        tid = it.tid;
        if (!header_kind(it.kind)) {
            pending = false;
            if ((rc = add_block(c, pid, tid, start, end, it.offset + it.size, pblock, &last)) !=
                STF_OK)
                return rc;
            if ((rc = stf_reader_skip_block(c->r)) != STF_OK)
                return rc;
        }
    }
    if (rc == STF_END && pending)
        rc = add_block(c, pid, tid, start, end, UINT64_MAX, pblock, &last);
    return rc == STF_END ? STF_OK : rc;
}

/* ---- decoding one block -------------------------------------------------------------------- */

static int start_block(struct stf_cursor *c, struct cblock *b)
{
    c->live = false;
    c->wb = b;
    return failed(c, stf_reader_seek(c->r, b->off, b->index));
}

/* An item of block b was read: its warnings have been given. */
static void read_to(struct cblock *b, const struct stf_item *it)
{
    if (it->offset + it->size > b->warned)
        b->warned = it->offset + it->size;
}

/* The block's next item: STF_OK, STF_END at the block's end, or an error. */
static int block_next(struct stf_cursor *c, struct cblock *b, struct stf_item *it)
{
    for (;;) {
        int rc = stf_reader_next(c->r, it);
        if (rc != STF_OK) {
            if (rc == STF_END)
                b->warned = UINT64_MAX; /* read to its end: every warning of it given */
            return rc == STF_END ? STF_END : failed(c, rc);
        }
        if (it->block != b->index)
            return STF_END;
        if (it->kind == STF_M_BUFFER_EXTENTS)
            continue;
        read_to(b, it);
        const struct cthread *t = &c->t[c->sel];
        it->pid = t->pid;
        it->tid = t->tid;
        return STF_OK;
    }
}

static void saw(struct stf_cursor *c, struct cblock *b, uint64_t n, uint64_t max_tsc)
{
    b->warned = UINT64_MAX;
    if (b->seen)
        return;
    b->seen = true;
    b->n = (uint32_t)n;
    b->max_tsc = max_tsc;
    c->records += n;
    c->bytes += b->end - b->off;
}

/* Decode block i of the selected thread into the cache. */
static int load(struct stf_cursor *c, size_t i)
{
    if (c->cached && c->cblk == i)
        return STF_OK;
    struct cblock *b = &c->t[c->sel].b[i];
    c->cached = false;
    int rc = start_block(c, b);
    if (rc != STF_OK)
        return rc;
    c->nitems = c->alen = 0;
    uint64_t max_tsc = 0;
    struct stf_item it;
    while ((rc = block_next(c, b, &it)) == STF_OK) {
        if (c->nitems == c->capitems) {
            size_t cap = c->capitems;
            struct stf_item *ni = grow(c->items, &cap, sizeof *ni, c->nitems + 1);
            if (!ni)
                return failed(c, STF_ERR_NOMEM);
            c->items = ni;
            size_t *np = realloc(c->pay, cap * sizeof *np);
            if (!np)
                return failed(c, STF_ERR_NOMEM);
            c->pay = np;
            c->capitems = cap;
        }
        if (it.payload_len) {
            uint8_t *na = grow(c->arena, &c->acap, 1, c->alen + it.payload_len);
            if (!na)
                return failed(c, STF_ERR_NOMEM);
            c->arena = na;
            memcpy(c->arena + c->alen, it.payload, it.payload_len);
        }
        c->pay[c->nitems] = c->alen;
        c->alen += it.payload_len;
        it.payload = NULL;
        c->items[c->nitems++] = it;
        if (it.tsc > max_tsc)
            max_tsc = it.tsc;
    }
    if (rc < 0)
        return rc;
    saw(c, b, c->nitems, max_tsc);
    c->cached = true;
    c->cblk = i;
    return STF_OK;
}

static void from_cache(const struct stf_cursor *c, size_t i, struct stf_item *out)
{
    *out = c->items[i];
    out->payload = out->payload_len ? c->arena + c->pay[i] : NULL;
}

/* Item counts, first indexes and seek keys for every block of the selected thread. */
static int count(struct stf_cursor *c)
{
    struct cthread *t = &c->t[c->sel];
    if (t->counted)
        return STF_OK;
    uint64_t first = 0, key = 0;
    for (size_t i = 0; i < t->nb; i++) {
        struct cblock *b = &t->b[i];
        if (!b->seen) {
            int rc = start_block(c, b);
            if (rc != STF_OK)
                return rc;
            uint64_t n = 0, max_tsc = 0;
            struct stf_item it;
            while ((rc = block_next(c, b, &it)) == STF_OK) {
                n++;
                if (it.tsc > max_tsc)
                    max_tsc = it.tsc;
            }
            if (rc < 0)
                return rc;
            saw(c, b, n, max_tsc);
        }
        b->first = first;
        first += b->n;
        if (b->max_tsc > key)
            key = b->max_tsc;
        b->key = key;
    }
    t->items = first;
    t->counted = true;
    return STF_OK;
}

/* ---- API ----------------------------------------------------------------------------------- */

int stf_cursor_open_warn(struct stf_cursor **out, const char *path, int flags, stf_warn_fn warn,
                         void *warn_ctx, char *err, size_t errlen)
{
    if (!out || !path)
        return STF_ERR_ARG;
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    struct stf_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return STF_ERR_NOMEM;
    c->warn = warn;
    c->warn_ctx = warn_ctx;
    int rc = stf_reader_open(&c->r, path, flags);
    if (rc == STF_OK) {
        stf_reader_set_warn(c->r, on_warn, c);
        c->header = *stf_reader_header(c->r);
        rc = build_index(c);
    }
    if (rc != STF_OK) {
        if (err && errlen && c->r) {
            uint64_t off = 0;
            const char *m = stf_reader_error(c->r, &off);
            if (m && *m && (rc == STF_ERR_IO || rc == STF_ERR_NOMEM))
                snprintf(err, errlen, "%s: %s", path, m); /* no offset: not about the bytes */
            else if (m && *m)
                snprintf(err, errlen, "%s: offset %llu: %s", path, (unsigned long long)off, m);
        }
        if (err && errlen && !err[0])
            snprintf(err, errlen, "%s: %s", path, stf_strerror(rc));
        stf_cursor_close(c);
        return rc;
    }
    *out = c;
    return STF_OK;
}

int stf_cursor_open(struct stf_cursor **out, const char *path, int flags, char *err, size_t errlen)
{
    return stf_cursor_open_warn(out, path, flags, NULL, NULL, err, errlen);
}

void stf_cursor_close(struct stf_cursor *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nt; i++)
        free(c->t[i].b);
    free(c->t);
    free(c->tkeys);
    free(c->tvals);
    free(c->items);
    free(c->pay);
    free(c->arena);
    stf_reader_close(c->r);
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

const char *stf_cursor_error(const struct stf_cursor *c, uint64_t *offset)
{
    return stf_reader_error(c->r, offset);
}

void stf_cursor_stats(const struct stf_cursor *c, struct stf_reader_stats *out)
{
    struct stf_reader_stats rs;
    stf_reader_stats(c->r, &rs);
    uint64_t blocks = 0;
    for (size_t i = 0; i < c->nt; i++)
        blocks += c->t[i].nb;
    *out = (struct stf_reader_stats){.records = c->records,
                                     .blocks = blocks,
                                     .warnings = c->warnings,
                                     .bytes = STF_HEADER_SIZE + c->bytes,
                                     .file_size = rs.file_size};
}

int stf_cursor_select(struct stf_cursor *c, size_t thread, int32_t *pid, int32_t *tid,
                      uint64_t *items)
{
    if (thread >= c->nt)
        return STF_ERR_ARG;
    c->sel = thread;
    c->blk = c->bpos = 0;
    c->live = c->cached = false;
    if (pid)
        *pid = c->t[thread].pid;
    if (tid)
        *tid = c->t[thread].tid;
    if (items) {
        int rc = count(c);
        if (rc != STF_OK)
            return rc;
        *items = c->t[thread].items;
    }
    return STF_OK;
}

int stf_cursor_next(struct stf_cursor *c, struct stf_item *out)
{
    if (c->err)
        return c->err;
    if (c->nt == 0)
        return STF_END;
    struct cthread *t = &c->t[c->sel];
    if (c->live) { /* live implies the cache holds another block (load() ends live) */
        /* The common case, a forward walk: the reader's next item, as is. The reader stops at
         * the block's end (stf_reader_seek), and only the block's first item is framing. */
        int rc = stf_reader_next(c->r, out);
        if (rc == STF_OK && out->kind != STF_M_BUFFER_EXTENTS) {
            struct cblock *b = &t->b[c->blk];
            out->pid = t->pid;
            out->tid = t->tid;
            read_to(b, out);
            c->bpos++;
            if (!b->seen && out->tsc > b->max_tsc)
                b->max_tsc = out->tsc;
            return STF_OK;
        }
        if (rc < 0)
            return failed(c, rc);
        if (rc == STF_END) {
            c->live = false;
            saw(c, &t->b[c->blk], c->bpos, t->b[c->blk].max_tsc);
        }
        /* framing, or the block's end: the general path below */
    }
    for (;;) {
        if (c->blk >= t->nb)
            return STF_END;
        struct cblock *b = &t->b[c->blk];
        if (c->cached && c->cblk == c->blk) {
            if (c->bpos < c->nitems) {
                from_cache(c, c->bpos++, out);
                return STF_OK;
            }
        } else if (c->live) {
            int rc = block_next(c, b, out);
            if (rc == STF_OK) {
                c->bpos++;
                if (!b->seen && out->tsc > b->max_tsc)
                    b->max_tsc = out->tsc;
                return STF_OK;
            }
            if (rc < 0)
                return rc;
            c->live = false;
            saw(c, b, c->bpos, b->max_tsc);
        } else if (!b->seen || c->bpos < b->n) {
            int rc = start_block(c, b);
            if (rc != STF_OK)
                return rc;
            b->max_tsc = b->seen ? b->max_tsc : 0;
            struct stf_item skip;
            for (size_t i = 0; i < c->bpos; i++) {
                if ((rc = block_next(c, b, &skip)) != STF_OK)
                    return rc < 0 ? rc : failed(c, STF_ERR_FORMAT);
                if (!b->seen && skip.tsc > b->max_tsc)
                    b->max_tsc = skip.tsc;
            }
            c->live = true;
            continue;
        }
        if (c->blk + 1 >= t->nb)
            return STF_END; /* stays after the last item */
        c->blk++;
        c->bpos = 0;
        c->live = false;
    }
}

size_t stf_cursor_funcs(struct stf_cursor *c, struct stf_func *out, size_t max)
{
    if (!c || !out || c->err || c->nt == 0 || max == 0)
        return 0;
    struct cthread *t = &c->t[c->sel];
    if (c->blk >= t->nb)
        return 0;
    struct cblock *b = &t->b[c->blk];
    if (c->live) {
        size_t n = stf_reader_funcs(c->r, out, max);
        if (n == 0)
            return 0;
        uint64_t end = stf_reader_offset(c->r); /* what read_to would note for the last one */
        if (end > b->warned)
            b->warned = end;
        c->bpos += n;
        if (!b->seen)
            for (size_t i = 0; i < n; i++)
                if (out[i].tsc > b->max_tsc)
                    b->max_tsc = out[i].tsc;
        return n;
    }
    size_t n = 0;
    if (c->cached && c->cblk == c->blk)
        for (; n < max && c->bpos < c->nitems && c->items[c->bpos].kind == STF_K_FUNCTION; n++) {
            const struct stf_item *it = &c->items[c->bpos++];
            out[n] = (struct stf_func){.tsc = it->tsc, .id = it->func_id, .action = it->action};
        }
    return n;
}

int stf_cursor_clone(struct stf_cursor **out, const struct stf_cursor *c)
{
    if (!out)
        return STF_ERR_ARG;
    *out = NULL;
    if (!c)
        return STF_ERR_ARG;
    struct stf_cursor *d = calloc(1, sizeof *d);
    if (!d)
        return STF_ERR_NOMEM;
    int rc = stf_reader_dup(&d->r, c->r);
    if (rc != STF_OK) {
        free(d);
        return rc;
    }
    stf_reader_set_warn(d->r, on_warn, d);
    d->header = c->header;
    d->t = calloc(c->nt ? c->nt : 1, sizeof *d->t);
    d->tkeys = c->tcap ? calloc(c->tcap, sizeof *d->tkeys) : NULL;
    d->tvals = c->tcap ? calloc(c->tcap, sizeof *d->tvals) : NULL;
    if (!d->t || (c->tcap && (!d->tkeys || !d->tvals))) {
        stf_cursor_close(d);
        return STF_ERR_NOMEM;
    }
    d->capt = c->nt ? c->nt : 1;
    d->tcap = c->tcap;
    if (c->tcap) {
        memcpy(d->tkeys, c->tkeys, c->tcap * sizeof *d->tkeys);
        memcpy(d->tvals, c->tvals, c->tcap * sizeof *d->tvals);
    }
    for (size_t i = 0; i < c->nt; i++) {
        const struct cthread *s = &c->t[i];
        struct cthread *n = &d->t[d->nt];
        *n = *s;
        n->b = malloc((s->nb ? s->nb : 1) * sizeof *n->b);
        if (!n->b) {
            stf_cursor_close(d);
            return STF_ERR_NOMEM;
        }
        n->capb = s->nb ? s->nb : 1;
        memcpy(n->b, s->b, s->nb * sizeof *n->b);
        d->nt++;
    }
    *out = d;
    return STF_OK;
}

void stf_cursor_set_warn(struct stf_cursor *c, stf_warn_fn warn, void *warn_ctx)
{
    if (!c)
        return;
    c->warn = warn;
    c->warn_ctx = warn_ctx;
}

int stf_cursor_prev(struct stf_cursor *c, struct stf_item *out)
{
    if (c->err)
        return c->err;
    if (c->nt == 0)
        return STF_END;
    struct cthread *t = &c->t[c->sel];
    for (;;) {
        if (c->blk >= t->nb)
            return STF_END;
        if (c->bpos > 0) {
            int rc = load(c, c->blk);
            if (rc != STF_OK)
                return rc;
            if (c->bpos > c->nitems)
                c->bpos = c->nitems;
            from_cache(c, --c->bpos, out);
            return STF_OK;
        }
        if (c->blk == 0)
            return STF_END;
        c->blk--;
        int rc = load(c, c->blk);
        if (rc != STF_OK)
            return rc;
        c->bpos = c->nitems;
    }
}

int stf_cursor_sync(struct stf_cursor *dst, const struct stf_cursor *src)
{
    if (!dst || !src || dst->nt != src->nt)
        return STF_ERR_ARG;
    if (dst->err)
        return dst->err;
    if (src->nt == 0)
        return STF_OK;
    const struct cthread *a = &src->t[src->sel], *b = &dst->t[src->sel];
    if (a->pid != b->pid || a->tid != b->tid || a->nb != b->nb)
        return STF_ERR_ARG;
    if (dst->sel != src->sel)
        dst->cached = false; /* the cache is per thread */
    dst->sel = src->sel;
    dst->blk = src->blk;
    dst->bpos = src->bpos;
    dst->live = false;
    return dst->blk < b->nb ? load(dst, dst->blk) : STF_OK;
}

void stf_cursor_rewind(struct stf_cursor *c, bool to_end)
{
    c->blk = c->bpos = 0;
    c->live = false;
    if (!to_end || c->nt == 0 || c->t[c->sel].nb == 0)
        return;
    struct cthread *t = &c->t[c->sel];
    c->blk = t->nb - 1;
    if (load(c, c->blk) == STF_OK)
        c->bpos = c->nitems;
}

uint64_t stf_cursor_seek(struct stf_cursor *c, uint64_t tsc)
{
    c->blk = c->bpos = 0;
    c->live = false;
    if (c->nt == 0 || count(c) != STF_OK)
        return 0;
    const struct cthread *t = &c->t[c->sel];
    size_t lo = 0, hi = t->nb; /* first block whose end key is >= tsc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->b[mid].key < tsc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->nb) {
        if (t->nb) {
            c->blk = t->nb - 1;
            c->bpos = t->b[c->blk].n;
        }
        return t->items;
    }
    c->blk = lo;
    if (load(c, lo) != STF_OK)
        return 0;
    uint64_t key = lo ? t->b[lo - 1].key : 0;
    size_t i = 0;
    for (; i < c->nitems; i++) {
        if (c->items[i].tsc > key)
            key = c->items[i].tsc;
        if (key >= tsc)
            break;
    }
    c->bpos = i;
    return t->b[lo].first + i;
}

size_t stf_cursor_where(const struct stf_cursor *c, uint64_t *pos)
{
    if (pos)
        *pos = c->bpos;
    return c->blk;
}

int stf_cursor_goto(struct stf_cursor *c, size_t block)
{
    if (c->nt == 0 || block >= c->t[c->sel].nb)
        return STF_ERR_ARG;
    c->blk = block;
    c->bpos = 0;
    c->live = false;
    return STF_OK;
}

size_t stf_cursor_blocks(const struct stf_cursor *c, uint64_t *bytes)
{
    uint64_t n = 0;
    const struct cthread *t = c->nt ? &c->t[c->sel] : NULL;
    for (size_t i = 0; t && i < t->nb; i++)
        n += t->b[i].end - t->b[i].off;
    if (bytes)
        *bytes = n;
    return t ? t->nb : 0;
}
