/* Worker threads, all released at once by a barrier, each running a known amount of
 * instrumented work: thread i runs fib(BASE + i % 4) ROUNDS times, through a volatile pointer.
 * Argument: number of worker threads (default 2). Main runs instrumented code too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

enum { BASE = 11, ROUNDS = 12, MAXT = 64 };

long (*volatile fibp)(long);
static pthread_barrier_t start;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

KEEP void *worker(void *arg)
{
    long i = (long)arg, n = BASE + i % 4, sum = 0;
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++)
        sum += fibp(n);
    return (void *)(sum == ROUNDS * fibonacci(n) ? 0L : 1L);
}

int main(int argc, char **argv)
{
    int nt = argc > 1 ? atoi(argv[1]) : 2;
    if (nt < 1 || nt > MAXT)
        return 2;
    fibp = fib;
    pthread_t t[MAXT];
    pthread_barrier_init(&start, NULL, (unsigned)nt);
    for (long i = 0; i < nt; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 2;
    int bad = 0;
    for (int i = 0; i < nt; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        bad |= rv != NULL;
    }
    if (bad) {
        printf("a worker computed a wrong result\n");
        return 1;
    }
    long fibs = 0;
    for (long i = 0; i < nt; i++)
        fibs += ROUNDS * fib_calls(BASE + i % 4);
    printf("count fib %ld\n", fibs);
    printf("count worker %d\n", nt);
    printf("count main 1\n");
    printf("threads %d\n", nt + 1);
    printf("threadwork 1\n"); /* main */
    for (long i = 0; i < nt; i++)
        printf("threadwork %ld\n", 1 + ROUNDS * fib_calls(BASE + i % 4));
    return 0;
}
