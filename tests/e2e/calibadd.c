/* calibadd TRACE COST_NS: gives a trace a calibration record (issue 22; format/stf.h,
 * STF_TYPED_CALIB) that says what the test wants, so that account --suggest-exclude can be tested
 * on real traces with a known cost per call (test_filter.c, test_run.c) and measured
 * (scripts/bench/suggest.sh).
 *
 * The record says a leaf call costs the tracer COST_NS (a decimal, ns): every one of the six
 * gaps is COST_NS / 2 in the header's ticks, spread 0, clock step 1 tick. It goes in a block of
 * its own right after the header, as the runtime writes it (the main thread's tid and pid, the
 * first block's CPU, one tick before its TSC). When the first block after the header is already
 * a calibration (the runtime's), its payload is replaced by this one. The file is rewritten
 * whole (a temporary file beside it, renamed). Exit status: 0, or 1 with a message. */
#include "stf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *path, const char *why)
{
    fprintf(stderr, "calibadd: %s: %s\n", path, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fail("usage", "calibadd TRACE COST_NS");
    const char *path = argv[1];
    char *end;
    double cost = strtod(argv[2], &end);
    if (*end || !(cost >= 0))
        return fail(argv[2], "not a cost in ns");
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(path, "cannot open");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    uint8_t *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return fail(path, "cannot read");
    }
    fclose(f);
    /* header: version, type, bits, cycle frequency; then the first block's five metadata
     * records: BufferExtents NewBuffer(tid) Walltime Pid(pid) NewCPUId(cpu, tsc) */
    uint16_t version;
    uint64_t freq;
    memcpy(&version, buf, 2);
    memcpy(&freq, buf + 8, 8);
    const uint8_t *b = buf + STF_HEADER_SIZE;
    if (len < STF_HEADER_SIZE + 6 * STF_META_SIZE || version < 5 || !freq ||
        b[0] != ((STF_M_BUFFER_EXTENTS << 1) | 1) || b[16] != ((STF_M_NEW_BUFFER << 1) | 1) ||
        b[48] != ((STF_M_PID << 1) | 1) || b[64] != ((STF_M_NEW_CPU << 1) | 1))
        return fail(path, "not a sledtrace trace (v5, blocks with extents)");
    uint16_t type;
    memcpy(&type, b + 80 + 9, 2);
    int32_t size;
    memcpy(&size, b + 80 + 1, 4);
    bool replace = b[80] == ((STF_M_TYPED_EVENT << 1) | 1) && type == STF_TYPED_CALIB &&
                   size >= STF_CALIB_PAYLOAD && len >= STF_HEADER_SIZE + 96 + STF_CALIB_PAYLOAD;
    int32_t tid, pid;
    uint16_t cpu;
    uint64_t tsc;
    memcpy(&tid, b + 17, 4);
    memcpy(&pid, b + 49, 4);
    memcpy(&cpu, b + 65, 2);
    memcpy(&tsc, b + 67, 8);

    struct stf_calib c = {.version = STF_CALIB_VERSION, .rounds = 1, .calls = 1, .step = 1};
    double gap = cost / 2 * (double)freq / 1e9 * 256;
    for (int i = 0; i < STF_GAPS; i++)
        c.gap[i] = (uint32_t)(gap + 0.5);
    uint8_t blk[6 * STF_META_SIZE + STF_CALIB_PAYLOAD];
    stf_meta_u64(blk, STF_M_BUFFER_EXTENTS, sizeof blk - STF_META_SIZE);
    stf_meta_new_buffer(blk + 16, tid);
    memcpy(blk + 32, b + 32, STF_META_SIZE); /* the first block's walltime */
    stf_meta_pid(blk + 48, pid);
    stf_meta_new_cpu(blk + 64, cpu, tsc - 1);
    stf_meta_typed_event(blk + 80, STF_CALIB_PAYLOAD, 0, STF_TYPED_CALIB);
    stf_encode_calib(blk + 96, &c);

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.calibadd", path);
    f = fopen(tmp, "wb");
    if (replace) /* the runtime's: its payload becomes ours, in place */
        stf_encode_calib(buf + STF_HEADER_SIZE + 96, &c);
    int ok = f && fwrite(buf, 1, STF_HEADER_SIZE, f) == STF_HEADER_SIZE &&
             (replace || fwrite(blk, 1, sizeof blk, f) == sizeof blk) &&
             fwrite(buf + STF_HEADER_SIZE, 1, (size_t)len - STF_HEADER_SIZE, f) ==
                 (size_t)len - STF_HEADER_SIZE;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return fail(path, "cannot write");
    }
    return 0;
}
