/* Threads for scripts/bench/threads.sh (issue 24's rows). Usage:
 *   threads churn N   N threads created and joined 8 at a time, each calling work() 10 times
 *   threads live N    N threads (64 KiB stacks) alive at once, each calling work() 100 times
 * Prints "ns=<wall ns of the whole loop> hwm=<VmHWM KiB> calls=<work calls>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) long work(long x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static int calls_each;
static pthread_barrier_t all_alive;
static int live;

__attribute__((xray_never_instrument)) static void *run(void *arg)
{
    (void)arg;
    long s = 0;
    for (int i = 0; i < calls_each; i++)
        s += work(i);
    if (live)
        pthread_barrier_wait(&all_alive);
    return (void *)s;
}

__attribute__((xray_never_instrument)) static long vmhwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    live = strcmp(argv[1], "live") == 0;
    int n = atoi(argv[2]);
    calls_each = live ? 100 : 10;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (live) {
        pthread_attr_setstacksize(&attr, 64 * 1024);
        pthread_barrier_init(&all_alive, NULL, (unsigned)n);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int at_once = live ? n : 8;
    for (int i = 0; i < n; i += at_once) {
        int k = n - i < at_once ? n - i : at_once;
        for (int j = 0; j < k; j++)
            if (pthread_create(&t[j], &attr, run, NULL) != 0)
                return 3;
        for (int j = 0; j < k; j++)
            pthread_join(t[j], NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    printf("ns=%lld hwm=%ld calls=%ld\n", ns, vmhwm_kb(), (long)n * calls_each);
    return 0;
}
