/* The tracer's own time is never a user function's (issue 12.1). Eight threads, each running
 * thread_main, which calls work() twice; work calls a trivial leaf 20 times: well under a
 * microsecond of work per thread. A thread's first event sets up its buffers (about a
 * millisecond): that must show as the tracer's pseudo-call "[sledtrace] thread set-up", outside
 * thread_main, whose self time stays tiny. Argument "busy": main also runs fib(22) (a tiny
 * lossless buffer then makes the tracer wait for free buffers: those waits are pseudo-calls
 * too). Counts per progs.h. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "progs.h"

enum { THREADS = 8, LEAVES = 20 };

void (*volatile leafp)(void);
void (*volatile workp)(void);
long (*volatile fibp)(long);

KEEP void leaf(void)
{
    BARRIER();
}

KEEP void work(void)
{
    for (int i = 0; i < LEAVES; i++)
        leafp();
}

KEEP void *thread_main(void *arg)
{
    workp();
    workp();
    return arg;
}

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    int busy = argc > 1 && strcmp(argv[1], "busy") == 0;
    leafp = leaf;
    workp = work;
    fibp = fib;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
            return 2;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long per_thread = 1 + 2 + 2 * LEAVES;
    if (busy && fibp(22) != fibonacci(22))
        return 1;
    printf("count thread_main %d\ncount work %d\ncount leaf %d\n", THREADS, 2 * THREADS,
           2 * LEAVES * THREADS);
    printf("count fib %ld\nthreads %d\n", busy ? fib_calls(22) : 0, THREADS + busy);
    for (int i = 0; i < THREADS; i++)
        printf("threadwork %ld\n", per_thread);
    if (busy)
        printf("threadwork %ld\n", fib_calls(22));
    return 0;
}
