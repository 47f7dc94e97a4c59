/* Many tiny functions and a little real work: SLEDTRACE_EXCLUDE_FILE (test_filter.c), `account
 * --suggest-exclude` and its round trip (test_run.c), and scripts/bench/suggest.sh, which times
 * it traced before and after excluding what the suggestion names.
 *
 * 100 leaves tiny00..tiny99 of a few instructions each, whose tracing costs far more than their
 * own work; medium(), a loop of MEDIUM steps (microseconds); work(), a loop of WORK steps (tens
 * of microseconds). Each round calls tinyNN (NN % 4 + 1) times, medium() and work() once.
 * argv[1]: rounds (default 20); argv[2]: work()'s steps (default WORK). */
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

enum { NTINY = 100, MEDIUM = 2000, WORK = 20000 };

/* clang-format off */
#define TINY(n)                                                                                    \
    KEEP long tiny##n(long x)                                                                      \
    {                                                                                              \
        BARRIER();                                                                                 \
        return x * 3 + 1##n - 100;                                                                 \
    }
#define TEN(d) TINY(d##0) TINY(d##1) TINY(d##2) TINY(d##3) TINY(d##4) TINY(d##5) TINY(d##6)     \
    TINY(d##7) TINY(d##8) TINY(d##9)
TEN(0) TEN(1) TEN(2) TEN(3) TEN(4) TEN(5) TEN(6) TEN(7) TEN(8) TEN(9)

#define REF(n) tiny##n,
#define REFS(d) REF(d##0) REF(d##1) REF(d##2) REF(d##3) REF(d##4) REF(d##5) REF(d##6) REF(d##7)   \
    REF(d##8) REF(d##9)
long (*volatile tiny[NTINY])(long) = {
    REFS(0) REFS(1) REFS(2) REFS(3) REFS(4) REFS(5) REFS(6) REFS(7) REFS(8) REFS(9)
};
/* clang-format on */

/* A loop clang cannot fold: each step goes through memory. */
static long loop(long steps, long x)
{
    for (long i = 0; i < steps; i++) {
        x = x * 2862933555777941757L + 3037000493L;
        BARRIER();
    }
    return x;
}

KEEP long medium(long x)
{
    return loop(MEDIUM, x);
}

long work_steps = WORK;

KEEP long work(long x)
{
    return loop(work_steps, x);
}

long (*volatile mediump)(long) = medium;
long (*volatile workp)(long) = work;

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20;
    if (argc > 2)
        work_steps = atol(argv[2]);
    long sum = 0, calls = 0;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < NTINY; i++)
            for (int k = 0; k <= i % 4; k++)
                sum += tiny[i](r + k);
        sum += mediump(r);
        sum += workp(sum);
    }
    for (int i = 0; i < NTINY; i++) {
        printf("count tiny%02d %ld\n", i, rounds * (i % 4 + 1));
        calls += rounds * (i % 4 + 1);
    }
    printf("count main 1\ncount medium %ld\ncount work %ld\n", rounds, rounds);
    calls += 1 + 2 * rounds;
    printf("threads 1\nthreadwork %ld\nsum %ld\n", calls, sum);
    return 0;
}
