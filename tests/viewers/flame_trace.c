/* Writes the crafted trace chromium-check.mjs renders besides the checked-in real ones: OUT.fdr
 * and its symbols file OUT.syms. Made for what a person sees of a flame graph and a call graph:
 * a frame whose long name is cut to fit ("..") and one whose UTF-8 name (more bytes than
 * characters) is as wide as its characters but not its bytes, a name with XML and
 * DOT specials (< > & " \), an id without a symbol (#9), a recursion, a function called from
 * three callers (three edges), frames too narrow for a label and two threads.
 * At 1 GHz: one tick is one nanosecond.
 * Usage: flame-trace OUT.fdr */
#include "stf.h"
#include "tracegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAIN = 1, LONG = 2, LEAF = 3, UTF8 = 4, SPECIAL = 5, REC = 6, WORKER = 7, UNKNOWN = 9 };

static void call(struct tg *g, uint32_t id, uint64_t from, uint64_t to)
{
    tg_func(g, id, STF_ENTER, from);
    tg_func(g, id, STF_EXIT, to);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: flame-trace OUT.fdr\n", stderr);
        return 2;
    }
    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 16);

    /* Thread 100: main [0, 100000] over everything else. */
    tg_block_begin(&g, 100, 100, 0, 0);
    tg_func(&g, MAIN, STF_ENTER, 0);
    tg_func(&g, LONG, STF_ENTER, 1000); /* 30 us of 108: about 328 px of 1180, cut */
    for (uint64_t t = 2000; t < 12000; t += 1000)
        call(&g, LEAF, t, t + 100); /* ten calls, one frame of 1 us */
    tg_func(&g, LONG, STF_EXIT, 31000);
    call(&g, UTF8, 31000, 53000); /* 22 us: about 240 px, room for 31 characters, not 34 bytes */
    tg_func(&g, SPECIAL, STF_ENTER, 53000);
    call(&g, UNKNOWN, 54000, 55000);
    tg_func(&g, SPECIAL, STF_EXIT, 63000);
    tg_func(&g, REC, STF_ENTER, 64000);
    tg_func(&g, REC, STF_ENTER, 64100);
    tg_func(&g, REC, STF_ENTER, 64200);
    call(&g, LEAF, 64300, 64400);
    tg_func(&g, REC, STF_EXIT, 65000);
    tg_func(&g, REC, STF_EXIT, 66000);
    tg_func(&g, REC, STF_EXIT, 67000);
    call(&g, LEAF, 68000, 68400);
    tg_func(&g, MAIN, STF_EXIT, 100000);
    tg_block_end(&g);

    /* Thread 200: worker [1000, 9000]. */
    tg_block_begin(&g, 200, 100, 1, 500);
    tg_func(&g, WORKER, STF_ENTER, 1000);
    call(&g, LEAF, 2000, 3000);
    tg_func(&g, REC, STF_ENTER, 4000);
    call(&g, REC, 4100, 4900);
    tg_func(&g, REC, STF_EXIT, 5000);
    tg_func(&g, WORKER, STF_EXIT, 9000);
    tg_block_end(&g);

    const char *out = argv[1];
    if (tg_write(&g, out) != 0) {
        perror(out);
        return 1;
    }
    tg_free(&g);
    char *syms = stf_syms_path_for(out);
    FILE *f = syms ? fopen(syms, "w") : NULL;
    if (!f) {
        perror("flame-trace: symbols file");
        return 1;
    }
    fputs("sledtrace-syms\t1\no\t0\t0x0\t/bin/flame\n"
          "f\t0\t1\t0x1000\tmain\n"
          "f\t0\t2\t0x1100\tcompute_the_checksum_of_every_block_in_the_input_buffer_twice\n"
          "f\t0\t3\t0x1200\tleaf\n"
          "f\t0\t4\t0x1300\tgr\xc3\xb6\xc3\x9f"
          "e_\xc3\xbc"
          "ber_alle_str\xc3\xb6me_z\xc3\xa4hlen\n"
          "f\t0\t5\t0x1400\tcmp<a&b>\"q\"\\x\n"
          "f\t0\t6\t0x1500\trec\n"
          "f\t0\t7\t0x1600\tworker\n",
          f);
    if (fclose(f) != 0) {
        perror(syms);
        return 1;
    }
    free(syms);
    return 0;
}
