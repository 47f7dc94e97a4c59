/* Threads alive at once (issue 24.2): N threads (64 KiB stacks) each call work() 100 times,
 * then wait at a barrier until all have, so that all are alive with their buffers; then they
 * are joined. Prints the counts (progs.h) and the process's peak resident memory:
 *     vmhwm_kb <n>   VmHWM from /proc/self/status, read after the joins
 *     vmsize_after_kb <n>   VmSize then (see LIVE_VMSIZE_BELOW_KB below)
 * The measuring code is never instrumented. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

enum { N = 1000, CALLS = 100 };

static pthread_barrier_t all_alive;

KEEP long work(long x)
{
    BARRIER();
    return x + 1;
}

__attribute__((xray_never_instrument)) static void *run(void *arg)
{
    (void)arg;
    long s = 0;
    for (int i = 0; i < CALLS; i++)
        s += work(i);
    pthread_barrier_wait(&all_alive);
    return (void *)s;
}

/* A "Key:   N kB" line of /proc/self/status, in KiB; -1 if there is none. */
__attribute__((xray_never_instrument)) static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            kb = strtol(line + strlen(key), NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

__attribute__((xray_never_instrument)) static long vmhwm_kb(void)
{
    return status_kb("VmHWM:");
}

__attribute__((xray_never_instrument)) int main(void)
{
    static pthread_t t[N];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&all_alive, NULL, N);
    for (int i = 0; i < N; i++)
        if (pthread_create(&t[i], &attr, run, NULL) != 0)
            return 3;
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    printf("count work %d\nthreads %d\n", N * CALLS, N);
    for (int i = 0; i < N; i++)
        printf("threadwork %d\n", CALLS);
    printf("vmhwm_kb %ld\n", vmhwm_kb());
    /* The address space left once every thread has gone: polled for up to 2 s until it is
     * below LIVE_VMSIZE_BELOW_KB (the test's bound), as the runtime gives its threads' memory
     * back after its flush thread has written their last records. */
    const char *below = getenv("LIVE_VMSIZE_BELOW_KB");
    long after = status_kb("VmSize:");
    for (int i = 0; below && after >= atol(below) && i < 40; i++) {
        usleep(50000);
        after = status_kb("VmSize:");
    }
    printf("vmsize_after_kb %ld\n", after);
    return 0;
}
