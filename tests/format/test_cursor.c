/* Cursor API tests: on a two-thread trace with a CPU change, a TSC wrap, a custom event and a
 * loss marker, each thread's forward walk equals the streaming reader's items for that thread
 * (same offsets, kinds, TSCs, payloads), the backward walk is its exact reverse, next/prev
 * turn around on the same item, seek by time lands on the first item at or after the time, and
 * a damaged file fails with its offset. */
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *sample(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 1000);
    tg_func(&g, 1, STF_ENTER, 1010);
    tg_new_cpu(&g, 3, 1020);
    tg_func(&g, 2, STF_ENTER, 1030);
    tg_custom(&g, 1040, "hello", 5);
    tg_func(&g, 2, STF_EXIT, 1050);
    tg_func(&g, 1, STF_EXIT, (1ull << 33) + 5); /* does not fit a delta: TSCWrap first */
    tg_block_end(&g);
    tg_block_begin(&g, 200, 100, 1, 1100);
    tg_func(&g, 3, STF_ENTER, 1110);
    uint8_t loss[STF_LOSS_SIZE];
    stf_encode_loss(loss, 42);
    tg_custom(&g, 1120, loss + STF_META_SIZE, STF_LOSS_PAYLOAD);
    tg_func(&g, 3, STF_EXIT, 1130);
    tg_block_end(&g);
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    return p;
}

static bool same(const struct stf_item *a, const struct stf_item *b)
{
    return a->offset == b->offset && a->kind == b->kind && a->tsc == b->tsc &&
           a->func_id == b->func_id && a->action == b->action && a->cpu == b->cpu &&
           a->payload_len == b->payload_len &&
           (a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
}

Test(cursor, walks_agree_with_reader)
{
    char *p = sample();
    struct stf_cursor *c;
    char err[256];
    cr_assert_eq(stf_cursor_open(&c, p, 0, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_cursor_threads(c), 2);
    cr_assert_eq(stf_cursor_header(c)->version, 5);
    int kinds_seen = 0, losses = 0;
    for (size_t th = 0; th < 2; th++) {
        int32_t pid, tid;
        uint64_t n;
        cr_assert_eq(stf_cursor_select(c, th, &pid, &tid, &n), STF_OK);
        cr_assert_eq(tid, th ? 200 : 100);
        /* The reader's items of this thread, in file order; payloads copied. */
        struct stf_item want[64];
        uint8_t pay[64][128];
        size_t nw = 0;
        struct stf_reader *r;
        cr_assert_eq(stf_reader_open(&r, p, 0), STF_OK);
        struct stf_item it;
        while (stf_reader_next(r, &it) == STF_OK) {
            if (it.tid != tid || it.kind == STF_M_BUFFER_EXTENTS)
                continue;
            cr_assert(it.pid == pid || it.pid == 0); /* 0 before the block's Pid record */
            cr_assert_lt(nw, 64);
            cr_assert_leq(it.payload_len, 128);
            memcpy(pay[nw], it.payload, it.payload_len);
            want[nw] = it;
            want[nw].payload = pay[nw];
            nw++;
        }
        stf_reader_close(r);
        cr_assert_eq(n, nw);
        for (size_t i = 0; i < nw; i++) {
            cr_assert_eq(stf_cursor_next(c, &it), STF_OK);
            cr_assert(same(&it, &want[i]), "thread %d item %zu (offset %llu) differs", tid, i,
                      (unsigned long long)want[i].offset);
            cr_assert(it.pid == pid && it.tid == tid, "item %zu labelled %d/%d", i, it.pid, it.tid);
            kinds_seen |= 1 << it.kind;
            uint64_t lost;
            if (it.kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it.payload, it.payload_len, &lost))
                losses += lost == 42;
        }
        cr_assert_eq(stf_cursor_next(c, &it), STF_END);
        for (size_t i = nw; i-- > 0;) {
            cr_assert_eq(stf_cursor_prev(c, &it), STF_OK);
            cr_assert(same(&it, &want[i]), "backward: thread %d item %zu differs", tid, i);
        }
        cr_assert_eq(stf_cursor_prev(c, &it), STF_END);
        /* Turning around returns the same item again. */
        struct stf_item a, b;
        cr_assert_eq(stf_cursor_next(c, &a), STF_OK);
        cr_assert_eq(stf_cursor_next(c, &a), STF_OK);
        cr_assert_eq(stf_cursor_prev(c, &b), STF_OK);
        cr_assert(same(&a, &b));
    }
    /* Events are items of their own: CPU change, TSC wrap and custom event (+ loss marker). */
    cr_assert(kinds_seen & (1 << STF_M_NEW_CPU));
    cr_assert(kinds_seen & (1 << STF_M_TSC_WRAP));
    cr_assert(kinds_seen & (1 << STF_M_CUSTOM_EVENT));
    cr_assert(kinds_seen & (1 << STF_K_FUNCTION));
    cr_assert_eq(losses, 1);
    stf_cursor_close(c);
    unlink(p);
    free(p);
}

Test(cursor, seek_by_time)
{
    char *p = sample();
    struct stf_cursor *c;
    char err[256];
    cr_assert_eq(stf_cursor_open(&c, p, 0, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_cursor_select(c, 0, NULL, NULL, NULL), STF_OK);
    struct stf_item it;
    stf_cursor_seek(c, 1035); /* after f2's entry at 1030: the custom event at 1040 */
    cr_assert_eq(stf_cursor_next(c, &it), STF_OK);
    cr_assert_eq(it.kind, STF_M_CUSTOM_EVENT);
    cr_assert_eq(it.payload_len, 5);
    cr_assert_eq(memcmp(it.payload, "hello", 5), 0);
    stf_cursor_seek(c, 1030); /* exactly a record's time: that record */
    cr_assert_eq(stf_cursor_next(c, &it), STF_OK);
    cr_assert_eq(it.kind, STF_K_FUNCTION);
    cr_assert_eq(it.func_id, 2);
    cr_assert_eq(it.tsc, 1030);
    cr_assert_eq(stf_cursor_prev(c, &it), STF_OK); /* and back over it */
    cr_assert_eq(it.func_id, 2);
    cr_assert_eq(stf_cursor_prev(c, &it), STF_OK); /* the CPU change before it */
    cr_assert_eq(it.kind, STF_M_NEW_CPU);
    cr_assert_eq(it.cpu, 3);
    stf_cursor_seek(c, 1ull << 40); /* past the end */
    cr_assert_eq(stf_cursor_next(c, &it), STF_END);
    cr_assert_eq(stf_cursor_prev(c, &it), STF_OK);
    cr_assert_eq(it.tsc, (1ull << 33) + 5);
    cr_assert_eq(stf_cursor_seek(c, 0), 0);
    cr_assert_eq(stf_cursor_select(c, 2, NULL, NULL, NULL), STF_ERR_ARG);
    stf_cursor_rewind(c, true);
    cr_assert_eq(stf_cursor_next(c, &it), STF_END);
    stf_cursor_close(c);
    unlink(p);
    free(p);
}

Test(cursor, damaged_file_names_offset)
{
    char *p = tg_tmpname(".fdr");
    FILE *f = fopen(p, "wb");
    fwrite("XRAY", 1, 4, f);
    fclose(f);
    struct stf_cursor *c = (struct stf_cursor *)1;
    char err[256];
    int rc = stf_cursor_open(&c, p, 0, err, sizeof err);
    cr_assert_eq(rc, STF_ERR_HEADER, "rc %d: %s", rc, err);
    cr_assert_null(c);
    cr_assert(strstr(err, p) && strstr(err, "offset 0"), "%s", err);
    unlink(p);
    free(p);
}

/* ---- many blocks: random walks against the reader ------------------------------------------- */

struct ref {
    int32_t tid;
    struct stf_item *it; /* payloads malloc'd */
    size_t n;
};

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* Three threads, 90 blocks interleaved at random, 1-40 records each with events, CPU changes
 * and TSC wraps; optionally damaged: an undecodable record in one block, garbage between two
 * blocks and a torn last block (*bad_off: the bad record's offset). Returns the path. */
static char *many_blocks(bool damaged, uint64_t *bad_off)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    uint32_t s = 7;
    uint64_t tsc[3] = {1000, 1000, 1000};
    for (int b = 0; b < 90; b++) {
        int t = (int)(lcg(&s) % 3);
        size_t start = g.len;
        tg_block_begin(&g, 10 * (t + 1), 77, (uint16_t)t, tsc[t]);
        if (damaged && b == 70)
            g.buf[start + 32] = (STF_M_PID << 1) | 1; /* Walltime -> Pid: header out of order */
        int n = 1 + (int)(lcg(&s) % 40);
        for (int i = 0; i < n; i++) {
            uint32_t r = lcg(&s) % 20;
            tsc[t] += 1 + lcg(&s) % 50;
            if (damaged && b == 40 && i == n / 2 && bad_off) {
                *bad_off = g.len;
                uint8_t m[16] = {(12 << 1) | 1};
                tg_raw(&g, m, sizeof m);
            } else if (r == 0) {
                char p[8];
                int k = snprintf(p, sizeof p, "e%d.%d", b, i);
                tg_custom(&g, tsc[t], p, k);
            } else if (r == 1) {
                tg_new_cpu(&g, (uint16_t)(lcg(&s) % 4), tsc[t] - 20); /* steps back a little */
            } else if (r == 2) {
                tsc[t] += 1ull << 33;
                tg_func(&g, 5, STF_ENTER, tsc[t]); /* TSCWrap first */
            } else {
                tg_func(&g, 1 + r % 4, r % 2 ? STF_ENTER : STF_EXIT, tsc[t]);
            }
        }
        tg_block_end(&g);
        if (damaged && b == 60)
            tg_raw(&g, "\x42junk", 5);
        if (damaged && b == 80) {
            /* a block whose NewCPUId is a TSCWrap and that has nothing after it: warned at
             * the TSCWrap (a header record, seen by opening) and where the block ends */
            size_t hs = g.len;
            tg_block_begin(&g, 10 * (t + 1), 77, (uint16_t)t, tsc[t]);
            g.buf[hs + 64] = (STF_M_TSC_WRAP << 1) | 1;
            tg_block_end(&g);
        }
    }
    if (damaged)
        g.len -= 5; /* torn last block */
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    tg_free(&g);
    return p;
}

static size_t read_refs(const char *p, struct ref *refs, uint64_t *warnings)
{
    size_t nt = 0;
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, p, 0), STF_OK);
    struct stf_item it;
    while (stf_reader_next(r, &it) == STF_OK) {
        if (it.kind == STF_M_BUFFER_EXTENTS)
            continue;
        size_t t = 0;
        while (t < nt && refs[t].tid != it.tid)
            t++;
        if (t == nt) {
            cr_assert_lt(nt, 3);
            refs[nt++] = (struct ref){.tid = it.tid};
        }
        struct ref *f = &refs[t];
        f->it = realloc(f->it, (f->n + 1) * sizeof *f->it);
        uint8_t *pay = NULL;
        if (it.payload_len) {
            pay = malloc(it.payload_len);
            memcpy(pay, it.payload, it.payload_len);
        }
        it.payload = pay;
        f->it[f->n++] = it;
    }
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    *warnings = st.warnings;
    stf_reader_close(r);
    return nt;
}

static void free_refs(struct ref *refs, size_t nt)
{
    for (size_t t = 0; t < nt; t++) {
        for (size_t i = 0; i < refs[t].n; i++)
            free((void *)refs[t].it[i].payload);
        free(refs[t].it);
    }
}

static void count_warn(void *ctx, uint64_t off, const char *msg)
{
    (void)off;
    (void)msg;
    ++*(uint64_t *)ctx;
}

static void random_walks(bool damaged)
{
    uint64_t bad = 0;
    char *p = many_blocks(damaged, &bad);
    struct ref refs[3] = {{0}};
    uint64_t want_warn;
    size_t nt = read_refs(p, refs, &want_warn);
    cr_assert_eq(nt, 3);
    /* bad record, garbage, torn block, the header disorder (more than one warning), the block
     * without NewCPUId (two) */
    cr_assert(damaged ? want_warn > 6 : want_warn == 0, "reader: %llu warnings",
              (unsigned long long)want_warn);
    struct stf_cursor *c;
    char err[256];
    uint64_t warned = 0;
    cr_assert_eq(stf_cursor_open_warn(&c, p, 0, count_warn, &warned, err, sizeof err), STF_OK, "%s",
                 err);
    cr_assert_eq(stf_cursor_threads(c), 3);
    struct stf_reader_stats st;
    stf_cursor_stats(c, &st);
    cr_assert_eq(st.records, 0, "opening decoded %llu records", (unsigned long long)st.records);
    cr_assert_eq(st.blocks, damaged ? 91 : 90);
    /* Opening reads headers only: the garbage, the torn block, the disordered header and the
     * TSCWrap in place of NewCPUId are seen now; the bad record inside a body and the end of
     * the block without NewCPUId when their threads are walked. */
    cr_assert_eq(warned, damaged ? want_warn - 2 : 0, "%llu warnings at open",
                 (unsigned long long)warned);
    uint64_t seen_bytes = st.bytes;
    uint32_t s = 99;
    struct stf_cursor *c2;
    cr_assert_eq(stf_cursor_open(&c2, p, 0, err, sizeof err), STF_OK, "%s", err);
    for (size_t t = 0; t < 3; t++) {
        struct ref *f = &refs[t];
        int32_t tid;
        cr_assert_eq(stf_cursor_select(c, t, NULL, &tid, NULL), STF_OK);
        cr_assert_eq(tid, f->tid);
        /* A whole forward walk first: it decodes only this thread's blocks. */
        struct stf_item it;
        for (size_t i = 0; i < f->n; i++) {
            cr_assert_eq(stf_cursor_next(c, &it), STF_OK, "thread %zu item %zu", t, i);
            cr_assert(same(&it, &f->it[i]), "thread %zu item %zu differs", t, i);
        }
        cr_assert_eq(stf_cursor_next(c, &it), STF_END);
        stf_cursor_stats(c, &st);
        cr_assert_gt(st.bytes, seen_bytes);
        if (t < 2)
            cr_assert_lt(st.bytes, st.file_size, "thread %zu's walk read other threads", t);
        seen_bytes = st.bytes;
        uint64_t n;
        cr_assert_eq(stf_cursor_select(c, t, NULL, NULL, &n), STF_OK);
        cr_assert_eq(n, f->n);
        /* Then 3000 random moves; pos is the reference position. */
        size_t pos = 0;
        for (int step = 0; step < 3000; step++) {
            uint32_t op = lcg(&s) % 10;
            if (op < 4) {
                int rc = stf_cursor_next(c, &it);
                if (pos == f->n) {
                    cr_assert_eq(rc, STF_END);
                } else {
                    cr_assert_eq(rc, STF_OK);
                    cr_assert(same(&it, &f->it[pos]), "next at %zu differs (step %d)", pos, step);
                    pos++;
                }
            } else if (op < 8) {
                int rc = stf_cursor_prev(c, &it);
                if (pos == 0) {
                    cr_assert_eq(rc, STF_END);
                } else {
                    pos--;
                    cr_assert_eq(rc, STF_OK);
                    cr_assert(same(&it, &f->it[pos]), "prev at %zu differs (step %d)", pos, step);
                }
            } else if (op == 8) {
                uint64_t target = f->it[lcg(&s) % f->n].tsc + lcg(&s) % 3;
                uint64_t key = 0;
                size_t want = f->n;
                for (size_t i = 0; i < f->n; i++) {
                    if (f->it[i].tsc > key)
                        key = f->it[i].tsc;
                    if (key >= target) {
                        want = i;
                        break;
                    }
                }
                cr_assert_eq(stf_cursor_seek(c, target), want, "seek %llu",
                             (unsigned long long)target);
                pos = want;
            } else {
                bool end = lcg(&s) % 2;
                stf_cursor_rewind(c, end);
                pos = end ? f->n : 0;
            }
            if (step % 7 == 0) {
                /* A second cursor synced to this one sees the same items around it. */
                cr_assert_eq(stf_cursor_sync(c2, c), STF_OK);
                if (pos < f->n) {
                    cr_assert_eq(stf_cursor_next(c2, &it), STF_OK);
                    cr_assert(same(&it, &f->it[pos]), "synced next at %zu differs", pos);
                    cr_assert_eq(stf_cursor_prev(c2, &it), STF_OK);
                }
                if (pos > 0) {
                    cr_assert_eq(stf_cursor_prev(c2, &it), STF_OK);
                    cr_assert(same(&it, &f->it[pos - 1]), "synced prev at %zu differs", pos);
                }
            }
        }
    }
    stf_cursor_close(c2);
    stf_cursor_stats(c, &st);
    cr_assert_eq(warned, want_warn, "warnings passed on %llu, reader gave %llu",
                 (unsigned long long)warned, (unsigned long long)want_warn);
    cr_assert_eq(st.warnings, want_warn);
    if (!damaged)
        cr_assert_eq(st.bytes, st.file_size);
    stf_cursor_close(c);
    free_refs(refs, nt);
    unlink(p);
    free(p);
}

Test(cursor, random_walks_over_many_blocks)
{
    random_walks(false);
}

Test(cursor, random_walks_over_a_damaged_trace_warn_once)
{
    random_walks(true);
}

/* Damaged bytes anywhere: opening either fails or every walk ends; nothing crashes. */
Test(cursor, flipped_bytes_never_crash)
{
    uint64_t bad;
    char *src = many_blocks(false, &bad);
    FILE *f = fopen(src, "rb");
    cr_assert(f);
    uint8_t buf[65536];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert_lt(len, sizeof buf);
    char *p = tg_tmpname(".fdr");
    uint8_t w[65536];
    srand(4242);
    for (int iter = 0; iter < 400; iter++) {
        memcpy(w, buf, len);
        for (int k = 0; k < 1 + rand() % 6; k++)
            w[32 + (size_t)rand() % (len - 32)] = (uint8_t)rand();
        size_t n = rand() % 4 ? len : 32 + (size_t)rand() % (len - 32);
        FILE *o = fopen(p, "wb");
        fwrite(w, 1, n, o);
        fclose(o);
        struct stf_cursor *c;
        if (stf_cursor_open(&c, p, iter % 3 == 0, NULL, 0) != STF_OK)
            continue;
        for (size_t t = 0; t < stf_cursor_threads(c); t++) {
            stf_cursor_select(c, t, NULL, NULL, NULL);
            struct stf_item it;
            size_t guard = 0, fwd = 0, back = 0;
            while (stf_cursor_next(c, &it) == STF_OK)
                cr_assert_lt(++fwd, 100000);
            while (stf_cursor_prev(c, &it) == STF_OK)
                cr_assert_lt(++back, 100000);
            cr_assert(fwd == back || iter % 3 == 0, "forward %zu, backward %zu", fwd, back);
            stf_cursor_seek(c, 5000);
            while (stf_cursor_next(c, &it) == STF_OK && ++guard < 100000)
                ;
        }
        stf_cursor_close(c);
    }
    unlink(p);
    unlink(src);
    free(p);
    free(src);
}

/* Warnings are passed on once even when blocks are decoded again after a partial walk (prev,
 * seek, a select that counts, a sync): each thread is walked a few items, back, to the middle
 * by seek, synced into a second cursor, then whole, forward and backward. */
Test(cursor, warnings_once_after_partial_walks)
{
    uint64_t bad = 0;
    char *p = many_blocks(true, &bad);
    struct ref refs[3] = {{0}};
    uint64_t want_warn;
    size_t nt = read_refs(p, refs, &want_warn);
    struct stf_cursor *c, *c2;
    char err[256];
    uint64_t warned = 0;
    cr_assert_eq(stf_cursor_open_warn(&c, p, 0, count_warn, &warned, err, sizeof err), STF_OK, "%s",
                 err);
    cr_assert_eq(stf_cursor_open(&c2, p, 0, err, sizeof err), STF_OK, "%s", err);
    struct stf_item it;
    for (size_t t = 0; t < nt; t++) {
        cr_assert_eq(stf_cursor_select(c, t, NULL, NULL, NULL), STF_OK);
        for (int k = 0; k < 7; k++)
            stf_cursor_next(c, &it);
        for (int k = 0; k < 3; k++)
            stf_cursor_prev(c, &it);
        stf_cursor_seek(c, refs[t].it[refs[t].n / 2].tsc);
        stf_cursor_next(c, &it);
        stf_cursor_sync(c2, c);
        uint64_t n;
        cr_assert_eq(stf_cursor_select(c, t, NULL, NULL, &n), STF_OK);
        while (stf_cursor_next(c, &it) == STF_OK)
            ;
        while (stf_cursor_prev(c, &it) == STF_OK)
            ;
    }
    cr_assert_eq(warned, want_warn, "warnings passed on %llu, reader gave %llu",
                 (unsigned long long)warned, (unsigned long long)want_warn);
    stf_cursor_close(c2);
    stf_cursor_close(c);
    free_refs(refs, nt);
    unlink(p);
    free(p);
}
