/*
 * sample.c - the program scripts/demo.sh traces.
 *
 * Build (what demo.sh does; clang 19+ spells the last flag -fno-xray-link-deps):
 *   clang -O2 -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps -pthread \
 *         sample.c -o sample
 *
 * It starts two worker threads and joins them; the output is always the same.
 * Every function below has external linkage and is noinline so that clang -O2
 * keeps it as a separate, instrumented function.
 *
 * Call counts for one run (these are what `sledtrace account` must report):
 *   main            1
 *   worker          2     (once per thread, entered through pthread's start routine)
 *   fib         21891     fib(n) makes 2*F(n+1)-1 calls; thread 0 runs fib(20):
 *                         2*F(21)-1 = 2*10946-1. The empty asm statements stop
 *                         clang from turning one of the two recursive calls into
 *                         a loop (accumulator tail-recursion elimination), which
 *                         would leave only F(n+1) calls.
 *   scale        1000     thread 1 calls scale(i) for i = 1..1000
 *   mix          1000     reached only through scale's tail call: clang -O2 emits
 *                         `jmp mix` preceded by an XRay TAIL sled (kind 2), so
 *                         scale's exit is recorded as a tail exit.
 *   checksum        1     called by main after both threads are joined
 *
 * Expected output:
 *   fib(20) = 6765
 *   mix sum = 495449505
 *   checksum = 495659220
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define FIB_N 20
#define MIX_ITERS 1000

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

__attribute__((noinline)) long mix(long x)
{
    unsigned long h = (unsigned long)x * 0x9e3779b97f4a7c15ul;
    h ^= h >> 29;
    return (long)(h % 1000003ul);
}

/* A real tail call: nothing happens after mix returns. */
__attribute__((noinline)) long scale(long x)
{
    return mix(x * 3 + 1);
}

struct job {
    int which;
    long result;
};

__attribute__((noinline)) void *worker(void *arg)
{
    struct job *j = arg;
    if (j->which == 0) {
        j->result = fib(FIB_N);
    } else {
        long acc = 0;
        for (long i = 1; i <= MIX_ITERS; i++)
            acc += scale(i);
        j->result = acc;
    }
    return NULL;
}

__attribute__((noinline)) long checksum(long a, long b)
{
    return (a * 31 + b) % 1000000007l;
}

int main(void)
{
    struct job jobs[2] = {{0, 0}, {1, 0}};
    pthread_t tid[2];

    for (int i = 0; i < 2; i++) {
        if (pthread_create(&tid[i], NULL, worker, &jobs[i]) != 0) {
            fprintf(stderr, "sample: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < 2; i++)
        pthread_join(tid[i], NULL);

    printf("fib(%d) = %ld\n", FIB_N, jobs[0].result);
    printf("mix sum = %ld\n", jobs[1].result);
    printf("checksum = %ld\n", checksum(jobs[0].result, jobs[1].result));
    return 0;
}
