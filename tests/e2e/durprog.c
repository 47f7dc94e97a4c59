/* SLEDTRACE_MIN_DURATION (issue 14.2): calls of known length. quick() spins for about 100 ns
 * and slow() for about 200 us (CLOCK_MONOTONIC, read in uninstrumented code); outer() makes 5
 * quick calls and one slow one. main: 2000 x outer(). With a 20 us threshold every quick call
 * is shorter (unless the machine preempts it in the middle) and no slow or outer call is.
 * Prints the exact counts (progs.h). Argument "fib": fib(22) instead (a fib-like workload for
 * the trace size). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "progs.h"

enum { ROUNDS = 2000, QUICK = 5 };

void (*volatile quickp)(void);
void (*volatile slowp)(void);
void (*volatile outerp)(void);
long (*volatile fibp)(long);

__attribute__((xray_never_instrument)) static void spin_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

KEEP void quick(void)
{
    spin_ns(100);
}

KEEP void slow(void)
{
    spin_ns(200000);
}

KEEP void outer(void)
{
    for (int i = 0; i < QUICK; i++)
        quickp();
    slowp();
    BARRIER(); /* not a tail call: outer's frame holds slow's */
}

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    quickp = quick;
    slowp = slow;
    outerp = outer;
    fibp = fib;
    if (argc > 1 && strcmp(argv[1], "fib") == 0) {
        if (fibp(22) != fibonacci(22))
            return 1;
        printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(22), fib_calls(22));
        return 0;
    }
    for (int r = 0; r < ROUNDS; r++)
        outerp();
    printf("count outer %d\ncount slow %d\ncount quick %d\nthreads 1\nthreadwork %d\n", ROUNDS,
           ROUNDS, ROUNDS * QUICK, ROUNDS * (2 + QUICK));
    return 0;
}
