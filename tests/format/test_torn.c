/* A torn end (issue 23, item 15): a trace cut inside its last block, as a SIGKILL during the
 * runtime's write leaves it, is read by the strict reader with STF_READ_TORN_END up to the cut
 * and described by stf_reader_torn, and `sledtrace dump --verify` says "torn at the end" with the
 * cut's offset and size and exits 0; damage before the cut, or anywhere in a trace, still fails
 * with its offset. The traces are built byte for byte (tracegen) and cut at chosen offsets:
 *
 *   0    header (32)
 *   32   block 1: BufferExtents NewBuffer Walltime Pid NewCPUId (80), 4 function records -> 144
 *   144  block 2: BufferExtents @144, NewBuffer @160, Walltime @176, Pid @192, NewCPUId @208,
 *        function @224, function @232, TypedEvent @240 (16 + 24 payload), function @280 -> 288
 */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void two_blocks(struct tg *g)
{
    tg_init(g, 5, 1000000000, 4096);
    tg_block_begin(g, 7, 7, 0, 1000);
    tg_func(g, 1, STF_ENTER, 1010);
    tg_func(g, 2, STF_ENTER, 1020);
    tg_func(g, 2, STF_EXIT, 1030);
    tg_func(g, 2, STF_ENTER, 1040);
    tg_block_end(g);
    tg_block_begin(g, 7, 7, 1, 1050);
    tg_func(g, 2, STF_EXIT, 1060);
    tg_func(g, 2, STF_ENTER, 1070);
    uint8_t payload[24] = {1, 2, 3};
    tg_typed(g, 1080, 0x1234, payload, sizeof payload);
    tg_func(g, 2, STF_EXIT, 1090);
    tg_block_end(g);
    cr_assert_eq(g->len, 288, "layout changed: %zu bytes", g->len);
}

struct verdict {
    int rc;
    uint64_t records, blocks;
    bool torn;
    struct stf_torn t;
    uint64_t err_off;
    char err[256];
};

/* Reads g cut to len bytes with flags. */
static struct verdict read_cut(const struct tg *g, size_t len, int flags)
{
    struct tg c = *g;
    c.len = len;
    char *path = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&c, path), 0);
    struct verdict v = {0};
    struct stf_reader *r = NULL;
    v.rc = stf_reader_open(&r, path, flags);
    if (v.rc == STF_OK) {
        struct stf_item it;
        while ((v.rc = stf_reader_next(r, &it)) == STF_OK)
            ;
    }
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    v.records = st.records;
    v.blocks = st.blocks;
    v.torn = stf_reader_torn(r, &v.t);
    snprintf(v.err, sizeof v.err, "%s", stf_reader_error(r, &v.err_off));
    stf_reader_close(r);
    unlink(path);
    free(path);
    return v;
}

static void expect_torn(size_t len, uint64_t records, uint64_t blocks, struct stf_torn want)
{
    struct tg g;
    two_blocks(&g);
    struct verdict v = read_cut(&g, len, STF_READ_STRICT | STF_READ_TORN_END);
    cr_assert_eq(v.rc, STF_END, "cut at %zu: %d %s @%llu", len, v.rc, v.err,
                 (unsigned long long)v.err_off);
    cr_assert(v.torn, "cut at %zu: no torn end reported", len);
    cr_assert_eq(v.t.block, want.block, "cut at %zu: block %llu", len,
                 (unsigned long long)v.t.block);
    cr_assert_eq(v.t.offset, want.offset, "cut at %zu: offset %llu", len,
                 (unsigned long long)v.t.offset);
    cr_assert_eq(v.t.partial, want.partial, "cut at %zu: partial %llu", len,
                 (unsigned long long)v.t.partial);
    cr_assert_eq(v.t.missing, want.missing, "cut at %zu: missing %llu", len,
                 (unsigned long long)v.t.missing);
    cr_assert_eq(v.records, records, "cut at %zu: %llu records", len,
                 (unsigned long long)v.records);
    cr_assert_eq(v.blocks, blocks, "cut at %zu: %llu blocks", len, (unsigned long long)v.blocks);
    /* without the flag, strict reading still fails there */
    v = read_cut(&g, len, STF_READ_STRICT);
    cr_assert_eq(v.rc, STF_ERR_TRUNCATED, "cut at %zu, plain strict: %d", len, v.rc);
    cr_assert_not(v.torn);
    tg_free(&g);
}

Test(torn, inside_a_function_record)
{
    /* block 1: 5 header records + 4; block 2: extents + 4 header + 2 functions + event */
    expect_torn(285, 17, 2,
                (struct stf_torn){.block = 144, .offset = 280, .partial = 5, .missing = 3});
}

Test(torn, at_a_record_boundary)
{
    expect_torn(280, 17, 2, (struct stf_torn){.block = 144, .offset = 280, .missing = 8});
}

Test(torn, inside_an_event_payload)
{
    expect_torn(260, 16, 2,
                (struct stf_torn){.block = 144, .offset = 240, .partial = 20, .missing = 28});
}

Test(torn, inside_the_block_header)
{
    /* inside the Pid record, and right after it (before NewCPUId) */
    expect_torn(200, 12, 2,
                (struct stf_torn){.block = 144, .offset = 192, .partial = 8, .missing = 88});
    expect_torn(208, 13, 2, (struct stf_torn){.block = 144, .offset = 208, .missing = 80});
}

Test(torn, inside_the_buffer_extents)
{
    expect_torn(150, 9, 1, (struct stf_torn){.block = 144, .offset = 144, .partial = 6});
}

Test(torn, whole_trace_is_not_torn)
{
    struct tg g;
    two_blocks(&g);
    struct verdict v = read_cut(&g, g.len, STF_READ_STRICT | STF_READ_TORN_END);
    cr_assert_eq(v.rc, STF_END);
    cr_assert_not(v.torn);
    cr_assert_eq(v.records, 18);
    /* cut exactly between the blocks: a whole trace of one block */
    v = read_cut(&g, 144, STF_READ_STRICT | STF_READ_TORN_END);
    cr_assert_eq(v.rc, STF_END);
    cr_assert_not(v.torn);
    tg_free(&g);
}

/* Damage is not a tear: a bad record before the cut fails at its offset; extents that swallow
 * the next block fail where that block's BufferExtents is met. */
Test(torn, damage_still_fails)
{
    struct tg g;
    two_blocks(&g);
    g.buf[232] = 0xff; /* metadata kind 127 */
    struct verdict v = read_cut(&g, 285, STF_READ_STRICT | STF_READ_TORN_END);
    cr_assert_eq(v.rc, STF_ERR_FORMAT);
    cr_assert_eq(v.err_off, 232, "%s @%llu", v.err, (unsigned long long)v.err_off);
    cr_assert_not(v.torn);
    tg_free(&g);

    two_blocks(&g);
    uint64_t big = 1000;
    memcpy(g.buf + 32 + 1, &big, 8); /* block 1's extents run past the file's end */
    v = read_cut(&g, g.len, STF_READ_STRICT | STF_READ_TORN_END);
    cr_assert_eq(v.rc, STF_ERR_FORMAT);
    cr_assert_eq(v.err_off, 144, "%s @%llu", v.err, (unsigned long long)v.err_off);
    cr_assert(strstr(v.err, "BufferExtents inside block"), "%s", v.err);
    cr_assert_not(v.torn);
    tg_free(&g);
}

/* The flag is the reader's only: the cursor refuses it. */
Test(torn, flag_checked)
{
    struct tg g;
    two_blocks(&g);
    struct verdict v = read_cut(&g, g.len, STF_READ_STRICT | STF_READ_TORN_END | 4);
    cr_assert_eq(v.rc, STF_ERR_ARG);
    tg_free(&g);
}

/* ---- sledtrace dump --verify --------------------------------------------------------------- */

static struct tr_out verify_cut(size_t len, int damage_at)
{
    struct tg g;
    two_blocks(&g);
    if (damage_at >= 0)
        g.buf[damage_at] = 0xff;
    g.len = len;
    char *p = tr_write_trace(&g, false);
    const char *argv[] = {tr_bin(), "dump", p, "--verify", NULL};
    struct tr_out r = tr_run(argv);
    tr_remove_trace(p);
    tg_free(&g);
    return r;
}

Test(torn, verify_says_torn_at_the_end)
{
    struct tr_out r = verify_cut(285, -1);
    cr_assert_eq(r.code, 0, "%s%s", r.o, r.e);
    cr_assert_str_eq(r.o, "OK: 17 records, 2 blocks; torn at the end: the last 5 bytes (offset "
                          "280) are an incomplete record of the block at offset 144, which lacks "
                          "3 more bytes (a process killed while its trace was written; the "
                          "records before are valid)\n");
    cr_assert_str_empty(r.e);
    tr_out_free(&r);

    r = verify_cut(208, -1);
    cr_assert_eq(r.code, 0, "%s%s", r.o, r.e);
    cr_assert_str_eq(r.o, "OK: 13 records, 2 blocks; torn at the end: the block at offset 144 "
                          "ends at offset 208, a record boundary, 80 bytes short of its extents "
                          "(a process killed while its trace was written; the records before "
                          "are valid)\n");
    tr_out_free(&r);

    r = verify_cut(150, -1);
    cr_assert_eq(r.code, 0, "%s%s", r.o, r.e);
    cr_assert_str_eq(r.o, "OK: 9 records, 1 blocks; torn at the end: the last 6 bytes (offset "
                          "144) are an incomplete BufferExtents record (a process killed while "
                          "its trace was written; the records before are valid)\n");
    tr_out_free(&r);

    r = verify_cut(288, -1);
    cr_assert_eq(r.code, 0, "%s%s", r.o, r.e);
    cr_assert_str_eq(r.o, "OK: 18 records, 2 blocks\n");
    tr_out_free(&r);
}

Test(torn, verify_still_fails_on_damage)
{
    struct tr_out r = verify_cut(285, 232);
    cr_assert_eq(r.code, 1, "%s%s", r.o, r.e);
    cr_assert(strstr(r.e, ": offset 232: unknown metadata kind 127"), "%s", r.e);
    cr_assert_not(strstr(r.o, "torn"), "%s", r.o);
    tr_out_free(&r);
}
