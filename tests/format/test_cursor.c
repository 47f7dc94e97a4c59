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
