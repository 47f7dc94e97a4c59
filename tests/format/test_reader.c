/* Reader tests: round trips of every record kind through the stf.h writer helpers, TSC
 * reconstruction (deltas, TSCWrap, NewCPUId, v5 event deltas), v1 fixed buffers, strict-mode
 * errors with exact offsets, lenient recovery, and a corruption loop that must never crash. */
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Read the whole trace into items; returns the final status (STF_END or an error). */
struct rd {
    struct stf_item it[256];
    uint8_t payload[256][16];
    size_t n;
    int rc;
    uint64_t err_off;
    char err[256];
    uint64_t warnings;
    struct stf_reader_stats st;
};

static void read_all(const struct tg *g, int flags, struct rd *out)
{
    char *path = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(g, path), 0);
    memset(out, 0, sizeof *out);
    struct stf_reader *r = NULL;
    int rc = stf_reader_open(&r, path, flags);
    if (rc == STF_OK) {
        struct stf_item it;
        while ((rc = stf_reader_next(r, &it)) == STF_OK) {
            if (out->n < 256) {
                out->it[out->n] = it;
                if (it.payload) {
                    memcpy(out->payload[out->n], it.payload,
                           it.payload_len < 16 ? it.payload_len : 16);
                    out->it[out->n].payload = NULL;
                }
            }
            out->n++;
        }
        stf_reader_stats(r, &out->st);
    }
    out->rc = rc;
    snprintf(out->err, sizeof out->err, "%s", stf_reader_error(r, &out->err_off));
    out->warnings = out->st.warnings;
    stf_reader_close(r);
    unlink(path);
    free(path);
}

/* Index of the first item of `kind` at or after `from`. */
static size_t find(const struct rd *d, int kind, size_t from)
{
    for (size_t i = from; i < d->n; i++)
        if (d->it[i].kind == kind)
            return i;
    cr_assert_fail("no %s item", stf_kind_name(kind));
    return 0;
}

Test(reader, header_decode)
{
    uint8_t b[STF_HEADER_SIZE];
    struct stf_header h = {
        .version = 5, .type = 1, .bits = 3, .cycle_freq = 2445425000ull, .buffer_size = 65536};
    stf_encode_header(b, &h);
    struct stf_header o;
    cr_assert_eq(stf_header_decode(b, sizeof b, &o), STF_OK);
    cr_assert_eq(o.version, 5);
    cr_assert_eq(o.bits, 3);
    cr_assert_eq(o.cycle_freq, 2445425000ull);
    cr_assert_eq(o.buffer_size, 65536);
    cr_assert_eq(stf_header_decode(b, 31, &o), STF_ERR_HEADER);
    b[2] = 0; /* type 0 = basic mode */
    cr_assert_eq(stf_header_decode(b, sizeof b, &o), STF_ERR_HEADER);
    b[2] = 1;
    b[0] = 6;
    cr_assert_eq(stf_header_decode(b, sizeof b, &o), STF_ERR_VERSION);
}

Test(reader, v5_round_trip_every_kind)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 4242, 77, 3, 1000000);
    tg_func(&g, 1, STF_ENTER, 1000100);
    tg_func(&g, STF_MAX_FUNC_ID, STF_ENTER_ARGS, 1000200);
    tg_call_arg(&g, 0xdeadbeefcafef00dull);
    tg_custom(&g, 1000250, "hello", 5);
    tg_func(&g, STF_MAX_FUNC_ID, STF_EXIT, 1000300);
    tg_typed(&g, 1000240, 9, "xyz", 3); /* negative delta */
    tg_func(&g, 3, STF_ENTER, 1000400);
    tg_func(&g, 3, STF_TAIL_EXIT, 1000400 + 5000000000ull); /* needs TSCWrap */
    tg_new_cpu(&g, 65535, 9000000000ull);
    tg_func(&g, 1, STF_EXIT, 9000000007ull);
    tg_block_end(&g);

    struct rd d;
    read_all(&g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    cr_assert_eq(d.st.blocks, 1);

    size_t i = 0;
    cr_assert_eq(d.it[i].kind, STF_M_BUFFER_EXTENTS);
    cr_assert_eq(d.it[i].offset, 32);
    cr_assert_eq(d.it[i].value, g.len - 48);
    i = find(&d, STF_M_NEW_BUFFER, 0);
    cr_assert_eq(d.it[i].offset, 48);
    cr_assert_eq(d.it[i].tid, 4242);
    i = find(&d, STF_M_WALLTIME, 0);
    cr_assert_eq(d.it[i].wall_sec, 1700000000 + 64);
    cr_assert_eq(d.it[i].wall_usec, 123456);
    i = find(&d, STF_M_PID, 0);
    cr_assert_eq(d.it[i].pid, 77);
    i = find(&d, STF_M_NEW_CPU, 0);
    cr_assert_eq(d.it[i].cpu, 3);
    cr_assert_eq(d.it[i].tsc, 1000000);

    i = find(&d, STF_K_FUNCTION, 0);
    cr_assert_eq(d.it[i].offset, 112);
    cr_assert_eq(d.it[i].func_id, 1);
    cr_assert_eq(d.it[i].action, STF_ENTER);
    cr_assert_eq(d.it[i].delta, 100);
    cr_assert_eq(d.it[i].tsc, 1000100);
    cr_assert_eq(d.it[i].tid, 4242);
    cr_assert_eq(d.it[i].pid, 77);
    cr_assert_eq(d.it[i].cpu, 3);
    i = find(&d, STF_K_FUNCTION, i + 1);
    cr_assert_eq(d.it[i].func_id, STF_MAX_FUNC_ID);
    cr_assert_eq(d.it[i].action, STF_ENTER_ARGS);
    cr_assert_eq(d.it[i].tsc, 1000200);
    cr_assert_eq(d.it[i + 1].kind, STF_M_CALL_ARG);
    cr_assert_eq(d.it[i + 1].value, 0xdeadbeefcafef00dull);
    i = find(&d, STF_M_CUSTOM_EVENT, 0);
    cr_assert_eq(d.it[i].event_size, 5);
    cr_assert_eq(d.it[i].payload_len, 5);
    cr_assert_eq(d.it[i].size, 21);
    cr_assert_eq(memcmp(d.payload[i], "hello", 5), 0);
    cr_assert_eq(d.it[i].tsc, 1000250);
    i = find(&d, STF_K_FUNCTION, i);
    cr_assert_eq(d.it[i].action, STF_EXIT);
    cr_assert_eq(d.it[i].tsc, 1000300);
    i = find(&d, STF_M_TYPED_EVENT, 0);
    cr_assert_eq(d.it[i].event_type, 9);
    cr_assert_eq(d.it[i].event_delta, -60);
    cr_assert_eq(d.it[i].tsc, 1000240);
    cr_assert_eq(memcmp(d.payload[i], "xyz", 3), 0);
    i = find(&d, STF_K_FUNCTION, i);
    cr_assert_eq(d.it[i].tsc, 1000400);
    i = find(&d, STF_M_TSC_WRAP, i);
    cr_assert_eq(d.it[i].tsc, 5001000400ull);
    i = find(&d, STF_K_FUNCTION, i);
    cr_assert_eq(d.it[i].action, STF_TAIL_EXIT);
    cr_assert_eq(d.it[i].tsc, 5001000400ull);
    cr_assert_eq(d.it[i].delta, 0);
    i = find(&d, STF_M_NEW_CPU, i);
    cr_assert_eq(d.it[i].cpu, 65535);
    i = find(&d, STF_K_FUNCTION, i);
    cr_assert_eq(d.it[i].cpu, 65535);
    cr_assert_eq(d.it[i].tsc, 9000000007ull);
    cr_assert_eq(i, d.n - 1);
    tg_free(&g);
}

Test(reader, tsc_wrap_and_large_deltas)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 1, 0, UINT64_MAX - 10);
    tg_func_delta(&g, 1, STF_ENTER, 20); /* wraps around 2^64 */
    tg_func_delta(&g, 1, STF_EXIT, UINT32_MAX);
    tg_tsc_wrap(&g, 5);
    tg_func_delta(&g, 2, STF_ENTER, 1);
    tg_block_end(&g);
    struct rd d;
    read_all(&g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    size_t i = find(&d, STF_K_FUNCTION, 0);
    cr_assert_eq(d.it[i].tsc, 9);
    cr_assert_eq(d.it[i + 1].tsc, 9 + (uint64_t)UINT32_MAX);
    i = find(&d, STF_M_TSC_WRAP, 0);
    cr_assert_eq(d.it[i].tsc, 5);
    cr_assert_eq(d.it[i + 1].tsc, 6);
    tg_free(&g);
}

Test(reader, blocks_interleave_and_reset_state)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 10, 5, 0, 100);
    tg_func(&g, 1, STF_ENTER, 110);
    tg_block_end(&g);
    tg_zeros(&g, 40); /* zero gap between blocks is fine */
    tg_block_begin(&g, 20, 5, 1, 5000);
    tg_func(&g, 2, STF_ENTER, 5001);
    tg_block_end(&g);
    tg_block_begin(&g, 10, 5, 0, 200);
    tg_func(&g, 1, STF_EXIT, 230);
    tg_block_end(&g);
    struct rd d;
    read_all(&g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    cr_assert_eq(d.st.blocks, 3);
    size_t i = find(&d, STF_K_FUNCTION, 0);
    cr_assert_eq(d.it[i].tid, 10);
    cr_assert_eq(d.it[i].block, 0);
    i = find(&d, STF_K_FUNCTION, i + 1);
    cr_assert_eq(d.it[i].tid, 20);
    cr_assert_eq(d.it[i].cpu, 1);
    cr_assert_eq(d.it[i].tsc, 5001);
    cr_assert_eq(d.it[i].block, 1);
    i = find(&d, STF_K_FUNCTION, i + 1);
    cr_assert_eq(d.it[i].tid, 10);
    cr_assert_eq(d.it[i].tsc, 230);
    cr_assert_eq(d.it[i].block, 2);
    tg_free(&g);
}

Test(reader, v1_fixed_buffers)
{
    struct tg g;
    tg_init(&g, 1, 1000000000, 256);
    tg_block_begin(&g, 7, 0, 0, 500);
    tg_func(&g, 1, STF_ENTER, 600);
    tg_func(&g, 1, STF_EXIT, 900);
    tg_block_end(&g); /* EndOfBuffer + zero padding to 256 bytes */
    size_t second = g.len;
    cr_assert_eq(second, 32 + 256);
    tg_block_begin(&g, 8, 0, 1, 1000);
    tg_func(&g, 2, STF_ENTER, 1100);
    tg_block_end(&g);
    /* garbage in the padding of the last buffer must be skipped unread */
    g.buf[g.len - 3] = 0xff;
    struct rd d;
    read_all(&g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    cr_assert_eq(d.st.blocks, 2);
    cr_assert_eq(d.it[0].kind, STF_M_NEW_BUFFER);
    cr_assert_eq(d.it[0].offset, 32);
    size_t i = find(&d, STF_M_END_OF_BUFFER, 0);
    cr_assert_eq(d.it[i].offset, 32 + 64);
    i = find(&d, STF_M_NEW_BUFFER, 1);
    cr_assert_eq(d.it[i].offset, second);
    cr_assert_eq(d.it[i].tid, 8);
    i = find(&d, STF_K_FUNCTION, i);
    cr_assert_eq(d.it[i].tsc, 1100);
    cr_assert_eq(d.it[i].cpu, 1);
    tg_free(&g);
}

Test(reader, v4_custom_event_absolute)
{
    struct tg g;
    tg_init(&g, 4, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    uint8_t m[STF_META_SIZE];
    stf_meta_begin(m, STF_M_CUSTOM_EVENT);
    stf_put32(m + 1, 2);
    stf_put64(m + 5, 777777);
    stf_put16(m + 13, 5);
    tg_raw(&g, m, sizeof m);
    tg_raw(&g, "ab", 2);
    tg_func(&g, 1, STF_ENTER, 150);
    tg_block_end(&g);
    struct rd d;
    read_all(&g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    size_t i = find(&d, STF_M_CUSTOM_EVENT, 0);
    cr_assert_eq(d.it[i].tsc, 777777);
    cr_assert_eq(d.it[i].cpu, 5);
    i = find(&d, STF_K_FUNCTION, 0);
    cr_assert_eq(d.it[i].tsc, 150); /* v4 event does not move the delta base */
    tg_free(&g);
}

/* ---- strict errors ----------------------------------------------------------------------- */

static void good_v5(struct tg *g)
{
    tg_init(g, 5, 1000000000, 4096);
    tg_block_begin(g, 1, 2, 0, 100); /* extents @32, NB @48, WT @64, Pid @80, CPU @96 */
    tg_func(g, 1, STF_ENTER, 110);   /* @112 */
    tg_func(g, 1, STF_EXIT, 120);    /* @120 */
    tg_block_end(g);                 /* ends @128 */
}

static void expect_err(const struct tg *g, int code, uint64_t off, const char *needle)
{
    struct rd d;
    read_all(g, STF_READ_STRICT, &d);
    cr_assert_eq(d.rc, code, "rc %d (%s), expected %d", d.rc, d.err, code);
    cr_assert_eq(d.err_off, off, "offset %llu (%s), expected %llu", (unsigned long long)d.err_off,
                 d.err, (unsigned long long)off);
    cr_assert(strstr(d.err, needle), "message '%s' lacks '%s'", d.err, needle);
}

Test(strict, truncated_header)
{
    struct tg g;
    good_v5(&g);
    g.len = 20;
    expect_err(&g, STF_ERR_HEADER, 0, "truncated header");
    tg_free(&g);
}

/* A header alone (a process killed before its first flush: issue 27.7) is a trace of no block,
 * in strict mode too: every tool reads it the same. */
Test(strict, header_only)
{
    struct tg g;
    good_v5(&g);
    g.len = 32;
    char *p = tg_tmpname(".fdr");
    cr_assert_eq(tg_write(&g, p), 0);
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, p, STF_READ_STRICT), STF_OK);
    struct stf_item it;
    cr_assert_eq(stf_reader_next(r, &it), STF_END);
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    cr_assert_eq(st.records, 0);
    cr_assert_eq(st.blocks, 0);
    stf_reader_close(r);
    unlink(p);
    free(p);
    tg_free(&g);
}

Test(strict, extents_overrun)
{
    struct tg g;
    good_v5(&g);
    g.len -= 4;
    expect_err(&g, STF_ERR_TRUNCATED, 32, "BufferExtents overruns file");
    tg_free(&g);
}

Test(strict, function_before_new_cpu)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    uint8_t m[STF_META_SIZE];
    stf_meta_u64(m, STF_M_BUFFER_EXTENTS, 0);
    tg_raw(&g, m, sizeof m);
    stf_meta_new_buffer(m, 1);
    tg_raw(&g, m, sizeof m);
    stf_meta_walltime(m, 1, 2);
    tg_raw(&g, m, sizeof m);
    stf_meta_pid(m, 3);
    tg_raw(&g, m, sizeof m);
    tg_func_delta(&g, 1, STF_ENTER, 5); /* @96 */
    stf_put64(g.buf + 33, g.len - 48);
    expect_err(&g, STF_ERR_FORMAT, 96, "function record before NewCPUId in block");
    tg_free(&g);
}

Test(strict, call_argument_out_of_place)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    tg_func(&g, 1, STF_ENTER, 110); /* plain enter @112 */
    tg_call_arg(&g, 1);             /* @120 */
    tg_block_end(&g);
    expect_err(&g, STF_ERR_FORMAT, 120, "CallArgument not after enter-with-args");
    tg_free(&g);
}

Test(strict, garbage_after_last_buffer)
{
    struct tg g;
    good_v5(&g);
    tg_raw(&g, "\x42junk", 5);
    expect_err(&g, STF_ERR_FORMAT, 128, "bytes after last buffer");
    tg_free(&g);
}

Test(strict, zeros_after_last_buffer)
{
    struct tg g;
    good_v5(&g);
    tg_zeros(&g, 8);
    expect_err(&g, STF_ERR_FORMAT, 128, "bytes after last buffer");
    tg_free(&g);
}

Test(strict, end_of_buffer_in_v2_plus)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    uint8_t m[STF_META_SIZE];
    stf_meta_begin(m, STF_M_END_OF_BUFFER);
    tg_raw(&g, m, sizeof m); /* @112 */
    tg_block_end(&g);
    expect_err(&g, STF_ERR_FORMAT, 112, "EndOfBuffer in v2+");
    tg_free(&g);
}

Test(strict, unknown_metadata_kind)
{
    struct tg g;
    good_v5(&g);
    g.buf[112] = (12 << 1) | 1;
    expect_err(&g, STF_ERR_FORMAT, 112, "unknown metadata kind 12");
    tg_free(&g);
}

Test(strict, extents_too_short_for_record)
{
    struct tg g;
    good_v5(&g);
    stf_put64(g.buf + 33, 60); /* block ends at 108, NewCPUId @96 would cross it */
    expect_err(&g, STF_ERR_FORMAT, 96, "overruns BufferExtents");
    tg_free(&g);
}

Test(strict, bad_version)
{
    struct tg g;
    good_v5(&g);
    g.buf[0] = 9;
    expect_err(&g, STF_ERR_VERSION, 0, "unsupported FDR version 9");
    tg_free(&g);
}

Test(strict, event_payload_overrun)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    tg_custom(&g, 120, "abcd", 4); /* @112 */
    tg_block_end(&g);
    stf_put32(g.buf + 113, 1000);
    expect_err(&g, STF_ERR_FORMAT, 112, "overruns BufferExtents");
    tg_free(&g);
}

/* ---- lenient mode -------------------------------------------------------------------------- */

Test(lenient, torn_last_block_warns_once)
{
    struct tg g;
    good_v5(&g);
    tg_block_begin(&g, 1, 2, 0, 200);
    for (int k = 0; k < 10; k++)
        tg_func(&g, 5, STF_ENTER, 210 + (uint64_t)k);
    tg_block_end(&g);
    g.len -= 13; /* tear the last block mid-record */
    struct rd d;
    read_all(&g, STF_READ_LENIENT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    cr_assert_eq(d.warnings, 1);
    size_t funcs = 0;
    for (size_t i = 0; i < d.n; i++)
        funcs += d.it[i].kind == STF_K_FUNCTION;
    cr_assert_eq(funcs, 2 + 8); /* complete records before the tear are delivered */
    tg_free(&g);
}

Test(lenient, bad_block_skipped)
{
    struct tg g;
    good_v5(&g);
    g.buf[112] = (12 << 1) | 1; /* unknown kind in block 1 */
    tg_block_begin(&g, 9, 2, 0, 300);
    tg_func(&g, 4, STF_ENTER, 301);
    tg_block_end(&g);
    struct rd d;
    read_all(&g, STF_READ_LENIENT, &d);
    cr_assert_eq(d.rc, STF_END, "%s", d.err);
    cr_assert_eq(d.warnings, 1);
    size_t i = find(&d, STF_K_FUNCTION, 0);
    cr_assert_eq(d.it[i].tid, 9);
    cr_assert_eq(d.it[i].tsc, 301);
    tg_free(&g);
}

/* ---- robustness ------------------------------------------------------------------------------ */

static void read_bytes(const uint8_t *p, size_t n, int flags, const char *path)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    if (n)
        fwrite(p, 1, n, f);
    fclose(f);
    struct stf_reader *r = NULL;
    if (stf_reader_open(&r, path, flags) == STF_OK) {
        struct stf_item it;
        size_t guard = 0;
        while (stf_reader_next(r, &it) == STF_OK)
            cr_assert(++guard < 100000, "reader loops");
    }
    stf_reader_close(r);
}

Test(robust, flips_and_truncations_never_crash)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 1, 2, 0, 100);
    tg_func(&g, 1, STF_ENTER_ARGS, 110);
    tg_call_arg(&g, 5);
    tg_custom(&g, 115, "event", 5);
    tg_typed(&g, 118, 3, "typed!", 6);
    tg_func(&g, 1, STF_EXIT, 120 + 6000000000ull);
    tg_block_end(&g);
    tg_block_begin(&g, 2, 2, 1, 100);
    tg_func(&g, 2, STF_ENTER, 130);
    tg_block_end(&g);
    char *path = tg_tmpname(".fdr");
    uint8_t *w = malloc(g.len);
    cr_assert(w);
    srand(12345);
    for (size_t cut = 0; cut <= g.len; cut++) {
        read_bytes(g.buf, cut, STF_READ_STRICT, path);
        read_bytes(g.buf, cut, STF_READ_LENIENT, path);
    }
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(w, g.buf, g.len);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++) {
            size_t at = 32 + (size_t)rand() % (g.len - 32);
            if (rand() % 2)
                w[at] ^= (uint8_t)(1u << (rand() % 8));
            else
                w[at] = (uint8_t)rand();
        }
        size_t n = rand() % 4 ? g.len : (size_t)rand() % (g.len + 1);
        read_bytes(w, n, iter % 2 ? STF_READ_STRICT : STF_READ_LENIENT, path);
    }
    free(w);
    unlink(path);
    free(path);
    tg_free(&g);
}

Test(robust, directory_and_missing_file)
{
    struct stf_reader *r = NULL;
    cr_assert_eq(stf_reader_open(&r, "/", STF_READ_STRICT), STF_ERR_IO);
    cr_assert(strstr(stf_reader_error(r, NULL), "directory"));
    stf_reader_close(r);
    r = NULL;
    cr_assert_eq(stf_reader_open(&r, "/nonexistent/x.fdr", STF_READ_STRICT), STF_ERR_IO);
    stf_reader_close(r);
    cr_assert_str_eq(stf_strerror(STF_ERR_FORMAT), "malformed trace");
}
