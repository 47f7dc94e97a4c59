/* Naive recursive fib through a volatile function pointer: clang cannot turn the recursion into
 * a loop, so fib(n) makes exactly 2 F(n+1) - 1 calls. Also built without -fxray-instrument for
 * the host-safety test. Optional argument: n (default 20: 21891 calls, 43784 events with main,
 * under the ~40k events per thread that keeps llvm-xray 14 away from its block-sorting bug
 * at the default 64 KiB buffers; the llvm-xray runs use large buffers anyway). */
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20;
    fibp = fib;
    long r = fibp(n);
    if (r != fibonacci(n)) {
        printf("wrong result %ld\n", r);
        return 1;
    }
    printf("fib(%ld) = %ld\n", n, r);
    printf("count fib %ld\n", fib_calls(n));
    printf("count main 1\n");
    printf("threads 1\n");
    printf("threadwork %ld\n", fib_calls(n) + 1);
    return 0;
}
