/* Writes the trace graph-size-check.mjs lays out with dot and renders in Chromium: a call graph
 * at the size of a real program's (xz's has 139 functions), OUT.fdr and its symbols file
 * OUT.syms, and prints the call graph it wrote as JSON on stdout, the ground truth the check
 * compares `sledtrace graph --focus` with:
 *   {"functions": [{"id": 1, "name": "main", "total_ns": 123, "callees": [2, 3]}, ...]}
 * (total_ns: the summed duration of the function's calls; no function is recursive, so that is
 * account's and graph's total.)
 *
 * The graph, 150 functions: main calls setup, 6 stages (stage0..stage5) and teardown, which
 * calls teardown_flush; stage S calls its 4 steps (stageS_stepK) twice each; step K of stage S
 * calls its 4 leaves (stageS_stepK_leafJ) and one of 10 shared utilities (util_N,
 * N = (4 S + K) mod 10, so a utility has two or three callers in different stages), which
 * calls its own helper (util_N_helper). Stage 2 is the hot one: its leaves 0 to 2 work 20 us a call, the other
 * stages' 250 ns; leaf 3 of every step works 3 ns. So with stage2_step1 in focus (main, stage2,
 * it, its leaves, util_9 and util_9_helper), everything but its leaf 3 has over 1% of main's
 * total (about 0.8 ms): --min-share 1 drops that leaf only. At 1 GHz: one tick is one
 * nanosecond.
 * Usage: graph-trace OUT.fdr */
#include "stf.h"
#include "tracegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STAGES = 6, STEPS = 4, LEAVES = 4, UTILS = 10, MAXF = 160, MAXC = 8 };

struct fn {
    char name[40];
    uint32_t callees[MAXC];
    int ncallees;
    int repeat;     /* calls of each callee per call of this function */
    uint64_t work;  /* its own time per call, ns, split before and after its callees */
    uint64_t total; /* summed duration of its calls */
};

static struct fn fns[MAXF + 1]; /* by id; 0 unused */
static uint32_t nfns;

static uint32_t add(const char *name, uint64_t work)
{
    struct fn *f = &fns[++nfns];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->work = work;
    f->repeat = 1;
    return nfns;
}

static void calls(uint32_t from, uint32_t to)
{
    fns[from].callees[fns[from].ncallees++] = to;
}

/* One call of id from tsc; returns its exit's tsc. */
static uint64_t emit(struct tg *g, uint32_t id, uint64_t tsc)
{
    struct fn *f = &fns[id];
    uint64_t start = tsc;
    tg_func(g, id, STF_ENTER, tsc);
    tsc += f->work / 2;
    for (int r = 0; r < f->repeat; r++)
        for (int k = 0; k < f->ncallees; k++)
            tsc = emit(g, f->callees[k], tsc) + 5;
    tsc += f->work - f->work / 2;
    tg_func(g, id, STF_EXIT, tsc);
    f->total += tsc - start;
    return tsc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: graph-trace OUT.fdr\n", stderr);
        return 2;
    }
    char name[40];
    uint32_t main_id = add("main", 1000);
    calls(main_id, add("setup", 400));
    uint32_t util[UTILS];
    for (int n = 0; n < UTILS; n++) {
        snprintf(name, sizeof name, "util_%d", n);
        util[n] = add(name, 3000);
        snprintf(name, sizeof name, "util_%d_helper", n);
        calls(util[n], add(name, 3000));
    }
    for (int s = 0; s < STAGES; s++) {
        snprintf(name, sizeof name, "stage%d", s);
        uint32_t st = add(name, 500);
        calls(main_id, st);
        fns[st].repeat = 2;
        for (int k = 0; k < STEPS; k++) {
            snprintf(name, sizeof name, "stage%d_step%d", s, k);
            uint32_t sp = add(name, 400);
            calls(st, sp);
            for (int j = 0; j < LEAVES; j++) {
                snprintf(name, sizeof name, "stage%d_step%d_leaf%d", s, k, j);
                calls(sp, add(name, j == LEAVES - 1 ? 3 : s == 2 ? 20000 : 250));
            }
            calls(sp, util[(STEPS * s + k) % UTILS]);
        }
    }
    uint32_t td = add("teardown", 400);
    calls(main_id, td);
    calls(td, add("teardown_flush", 300));
    if (nfns != 150) {
        fprintf(stderr, "graph-trace: %u functions, not 150\n", nfns);
        return 1;
    }

    struct tg g;
    tg_init(&g, 5, 1000000000, 1 << 20);
    tg_block_begin(&g, 300, 300, 0, 0);
    emit(&g, main_id, 1000);
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
        perror("graph-trace: symbols file");
        return 1;
    }
    fputs("sledtrace-syms\t1\no\t0\t0x0\t/bin/graphprog\n", f);
    for (uint32_t id = 1; id <= nfns; id++)
        fprintf(f, "f\t0\t%u\t0x%x\t%s\n", id, 0x1000 + 0x40 * id, fns[id].name);
    if (fclose(f) != 0) {
        perror(syms);
        return 1;
    }
    free(syms);

    printf("{\"functions\": [");
    for (uint32_t id = 1; id <= nfns; id++) {
        printf("%s\n  {\"id\": %u, \"name\": \"%s\", \"total_ns\": %llu, \"callees\": [",
               id > 1 ? "," : "", id, fns[id].name, (unsigned long long)fns[id].total);
        for (int k = 0; k < fns[id].ncallees; k++)
            printf("%s%u", k ? ", " : "", fns[id].callees[k]);
        printf("]}");
    }
    printf("\n]}\n");
    return 0;
}
