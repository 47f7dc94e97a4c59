/* SLEDTRACE_MIN_DURATION past 256 functions (issue 27.5): 600 tiny functions f100..f699, each
 * called 2000 times in a row (argument "mixed": the 600 in turn, 2000 rounds), so a thread's
 * short calls span more functions than its elided table's 256 slots. Prints the exact counts
 * (progs.h). */
#include <stdio.h>
#include <string.h>

#include "progs.h"

enum { FUNCS = 600, CALLS = 2000 };

#define F1(n)                                                                                      \
    KEEP long f##n(long x)                                                                         \
    {                                                                                              \
        BARRIER();                                                                                 \
        return x + 1;                                                                              \
    }
#define F10(n)                                                                                     \
    F1(n##0) F1(n##1) F1(n##2) F1(n##3) F1(n##4) F1(n##5) F1(n##6) F1(n##7) F1(n##8) F1(n##9)
#define F100(n)                                                                                    \
    F10(n##0)                                                                                      \
    F10(n##1) F10(n##2) F10(n##3) F10(n##4) F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)
// clang-format off
F100(1) F100(2) F100(3) F100(4) F100(5) F100(6)
// clang-format on

#define P1(n) f##n,
#define P10(n)                                                                                     \
    P1(n##0) P1(n##1) P1(n##2) P1(n##3) P1(n##4) P1(n##5) P1(n##6) P1(n##7) P1(n##8) P1(n##9)
#define P100(n)                                                                                    \
    P10(n##0)                                                                                      \
    P10(n##1) P10(n##2) P10(n##3) P10(n##4) P10(n##5) P10(n##6) P10(n##7) P10(n##8) P10(n##9)
    long (*volatile fns[FUNCS])(long) = {P100(1) P100(2) P100(3) P100(4) P100(5) P100(6)};

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    int mixed = argc > 1 && strcmp(argv[1], "mixed") == 0;
    long s = 0;
    if (mixed) {
        for (int r = 0; r < CALLS; r++)
            for (int f = 0; f < FUNCS; f++)
                s += fns[f](r);
    } else {
        for (int f = 0; f < FUNCS; f++)
            for (int r = 0; r < CALLS; r++)
                s += fns[f](r);
    }
    for (int f = 0; f < FUNCS; f++)
        printf("count f%d %d\n", 100 + f, CALLS);
    printf("threads 1\nthreadwork %d\nsum %ld\n", FUNCS * CALLS, s);
    return 0;
}
