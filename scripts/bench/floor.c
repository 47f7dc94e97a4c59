/*
 * floor.c - the cost floor of scripts/bench.sh: per modelled call, what any
 * in-memory tracer must at least do, i.e. read the TSC and store an 8-byte
 * record at entry and again at exit (two rdtsc, two 8-byte stores).
 *
 * Runs 2*F(N+1)-1 iterations (the number of calls fib(N) makes; N = argv[1],
 * default 30), storing into a 64 KiB ring (one sledtrace chunk, stays in cache).
 * Prints the same line format as fib.c: ns=<elapsed> calls=<iterations> result=<checksum>.
 * Build without -fxray-instrument.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#define RING_WORDS (64 * 1024 / 8)

uint64_t ring[RING_WORDS];

__attribute__((noinline)) static void run(long iters)
{
    size_t pos = 0;
    for (long i = 0; i < iters; i++) {
        ring[pos] = __rdtsc() | 1;     /* "entry" record */
        ring[pos + 1] = __rdtsc() | 2; /* "exit" record */
        pos = (pos + 2) & (RING_WORDS - 1);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30;
    if (n < 1 || n > 40) {
        fprintf(stderr, "floor: N must be in 1..40\n");
        return 2;
    }
    long f0 = 0, f1 = 1;
    for (int i = 0; i < n + 1; i++) {
        long t = f0 + f1;
        f0 = f1;
        f1 = t;
    }
    long iters = 2 * f0 - 1;

    for (size_t i = 0; i < RING_WORDS; i++) /* fault the ring in before timing */
        ring[i] = 0;

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run(iters);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);

    uint64_t sum = 0;
    for (size_t i = 0; i < RING_WORDS; i++)
        sum ^= ring[i];
    printf("ns=%lld calls=%ld result=%llu\n", ns, iters, (unsigned long long)(sum & 0xffff));
    return 0;
}
