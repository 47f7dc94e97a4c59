/* The trace of tests/format/test_seek.c (see there), also written by the seek-trace program for
 * the Python module's test of calls(start=, end=). */
#include "seekgen.h"

#include "tracegen.h"

#include <stdbool.h>
#include <stdlib.h>

static uint64_t iteration(struct tg *g, int tid, uint64_t t, int i)
{
    if (i % LONG_EVERY == 0) {
        tg_func(g, 5, STF_ENTER, t);
        t += 10;
    }
    tg_func(g, 2, STF_ENTER_ARGS, t);
    tg_call_arg(g, (uint64_t)i);
    tg_func(g, 3, STF_ENTER, t += 10);
    bool tail = tid == 200 && i % 3 == 0; /* mid jumps to its last leaf: mid closes first */
    for (int k = 0; k < 3; k++) {
        if (k == 2 && tail)
            tg_func(g, 3, STF_TAIL_EXIT, t += 10);
        tg_func(g, 4, STF_ENTER, t += 10);
        tg_func(g, 4, STF_EXIT, t += 10);
    }
    if (!tail)
        tg_func(g, 3, STF_EXIT, t += 10);
    tg_func(g, 2, STF_EXIT, t += 10);
    if (i % LONG_EVERY == LONG_FOR)
        tg_func(g, 5, STF_EXIT, t += 10);
    return t + 10;
}

/* With calib, the runtime's calibration block first (gaps of 3 to 7 ticks, as test_correct.c's):
 * times are corrected, so the checkpoints keep the corrected clock's state. */
int seekgen_write(const char *path, bool calib)
{
    struct tg g;
    tg_init(&g, 5, 1000000000ull, 65536);
    if (calib) {
        struct stf_calib c = {.version = 1, .rounds = 9, .calls = 64, .step = 1};
        static const uint32_t gap[STF_GAPS] = {3, 4, 5, 6, 2, 7};
        for (int i = 0; i < STF_GAPS; i++) {
            c.gap[i] = gap[i] * 256;
            c.spread[i] = 64;
        }
        uint8_t pay[STF_CALIB_PAYLOAD];
        stf_encode_calib(pay, &c);
        tg_block_begin(&g, 100, 100, 0, 500);
        tg_typed(&g, 500, STF_TYPED_CALIB, pay, sizeof pay);
        tg_block_end(&g);
    }
    uint64_t t[2] = {1000, 1050};
    const int tids[2] = {100, 200};
    for (int b = 0; b * PER_BLOCK < ITERS; b++)
        for (int k = 0; k < 2; k++) {
            tg_block_begin(&g, tids[k], 100, 0, t[k]);
            if (b == 0)
                tg_func(&g, 1, STF_ENTER, t[k]);
            for (int i = b * PER_BLOCK; i < (b + 1) * PER_BLOCK && i < ITERS; i++)
                t[k] = iteration(&g, tids[k], t[k], i);
            if ((b + 1) * PER_BLOCK >= ITERS)
                tg_func(&g, 1, STF_EXIT, t[k]);
            tg_block_end(&g);
        }
    int rc = tg_write(&g, path);
    tg_free(&g);
    return rc;
}
