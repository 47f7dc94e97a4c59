/* exec: the first image calls fib(12), then execs itself (the environment, LD_PRELOAD included,
 * is kept). Its trace must be complete before the new image replaces it. The second image has
 * the same pid and writes its own trace (PID.1.fdr) holding fib(13). main is never instrumented,
 * so neither trace has a frame left open by the exec. The second image prints the expectations
 * for its own trace and, as "first fib N", the first image's count. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    fibp = fib;
    if (argc > 1 && strcmp(argv[1], "second") == 0) {
        long b = fibp(13);
        printf("count fib %ld\nthreads 1\nthreadwork %ld\nfirst fib %ld\n", fib_calls(13),
               fib_calls(13), fib_calls(12));
        return b == fibonacci(13) ? 0 : 1;
    }
    if (fibp(12) != fibonacci(12))
        return 1;
    execl("/proc/self/exe", argv[0], "second", (char *)NULL);
    return 3;
}
