/* Thread churn: ROUNDS rounds of PER_ROUND short-lived threads; each round joins its threads
 * before the next starts. Thread i (0 <= i < ROUNDS * PER_ROUND) calls worker, then fib(4 + i % 5)
 * 1 + i % 3 times and leaf once, all through volatile pointers, and exits.
 *
 * It also measures its own resident memory (VmRSS) and prints it, so that a test can check that
 * whatever a thread's tracing costs is given back when the thread exits:
 *     rss_kb_before <n>   before the first thread (main has already run instrumented code)
 *     rss_kb_live <n>     in round 0, while all PER_ROUND threads are alive and have traced
 *     rss_kb_after <n>    after the last round, once memory has settled (polled for up to 2 s
 *                         until it is within SETTLE_KB of rss_kb_before)
 * These lines vary from run to run; the count lines (progs.h) do not. The measuring helpers are
 * never instrumented, so they do not appear in the counts. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define NOTRACE __attribute__((xray_never_instrument, noinline))

enum { ROUNDS = 20, PER_ROUND = 20, NT = ROUNDS * PER_ROUND, SETTLE_KB = 4096 };

long (*volatile fibp)(long);
long (*volatile leafp)(long);
static pthread_barrier_t traced, measured;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

KEEP long leaf(long x)
{
    BARRIER();
    return x ^ 0x5a;
}

__attribute__((xray_never_instrument)) static long fib_n(long i)
{
    return 4 + i % 5;
}
__attribute__((xray_never_instrument)) static long reps(long i)
{
    return 1 + i % 3;
}

KEEP void *worker(void *arg)
{
    long i = (long)arg, sum = 0;
    for (long r = 0; r < reps(i); r++)
        sum += fibp(fib_n(i));
    sum += leafp(i) == (i ^ 0x5a);
    if (i < PER_ROUND) {
        /* Round 0: stay alive until main has measured the memory of PER_ROUND traced threads. */
        pthread_barrier_wait(&traced);
        pthread_barrier_wait(&measured);
    }
    return (void *)(sum == reps(i) * fibonacci(fib_n(i)) + 1 ? 0L : 1L);
}

NOTRACE static long rss_kb(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nVmRSS:");
    return p ? strtol(p + 7, NULL, 10) : -1;
}

NOTRACE static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    fibp = fib;
    leafp = leaf;
    pthread_barrier_init(&traced, NULL, PER_ROUND + 1);
    pthread_barrier_init(&measured, NULL, PER_ROUND + 1);
    long before = rss_kb(), live = -1;
    int bad = 0;
    for (long r = 0; r < ROUNDS; r++) {
        pthread_t t[PER_ROUND];
        for (long k = 0; k < PER_ROUND; k++)
            if (pthread_create(&t[k], NULL, worker, (void *)(r * PER_ROUND + k)) != 0) {
                printf("pthread_create failed\n");
                return 2;
            }
        if (r == 0) {
            pthread_barrier_wait(&traced);
            live = rss_kb();
            pthread_barrier_wait(&measured);
        }
        for (long k = 0; k < PER_ROUND; k++) {
            void *rv;
            pthread_join(t[k], &rv);
            bad |= rv != NULL;
        }
    }
    long after = rss_kb();
    for (int w = 0; w < 200 && after - before > SETTLE_KB; w++) {
        sleep_ms(10);
        after = rss_kb();
    }
    if (bad) {
        printf("a worker computed a wrong result\n");
        return 1;
    }
    long fibs = 0;
    for (long i = 0; i < NT; i++)
        fibs += reps(i) * fib_calls(fib_n(i));
    printf("count fib %ld\n", fibs);
    printf("count leaf %d\n", NT);
    printf("count worker %d\n", NT);
    printf("count main 1\n");
    printf("threads %d\n", NT + 1);
    printf("threadwork 1\n"); /* main */
    for (long i = 0; i < NT; i++)
        printf("threadwork %ld\n", 2 + reps(i) * fib_calls(fib_n(i)));
    printf("rss_kb_before %ld\nrss_kb_live %ld\nrss_kb_after %ld\n", before, live, after);
    return 0;
}
