/*
 * fib.c - the benchmark workload of scripts/bench.sh.
 *
 * Computes fib(N) (N = argv[1], default 30) and prints one line:
 *   ns=<elapsed> calls=<fib calls> result=<fib(N)>
 * The elapsed time is measured in-process with clock_gettime(CLOCK_MONOTONIC)
 * around the single top-level fib(N) call only: process start, sled patching and
 * the tracer's final flush at exit are not included.
 *
 * fib(n) makes 2*F(n+1)-1 calls (fib(30): 2*1346269-1 = 2692537). The empty asm
 * statements keep both recursive calls real calls: without them clang -O2 turns
 * one of them into a loop and only F(n+1) calls remain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long fib(int n)
{
    if (n < 2)
        return n;
    long a = fib(n - 1);
    __asm__ volatile("" : "+r"(a));
    long b = fib(n - 2);
    __asm__ volatile("" : "+r"(b));
    return a + b;
}

static long fib_calls(int n)
{
    /* 2*F(n+1)-1, computed iteratively (F(0)=0, F(1)=1). */
    long f0 = 0, f1 = 1;
    for (int i = 0; i < n + 1; i++) {
        long t = f0 + f1;
        f0 = f1;
        f1 = t;
    }
    return 2 * f0 - 1;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30;
    if (n < 1 || n > 40) {
        fprintf(stderr, "fib: N must be in 1..40\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long r = fib(n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
    printf("ns=%lld calls=%ld result=%ld\n", ns, fib_calls(n), r);
    return 0;
}
