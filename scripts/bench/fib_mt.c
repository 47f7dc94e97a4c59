/*
 * fib_mt.c - the multi-threaded workload of scripts/bench.sh.
 *
 * Starts T threads (argv[2], default 2) that each compute fib(N) (N = argv[1],
 * default 30) at the same time, and prints one line per thread, then the peak RSS:
 *   thread=<i> ns=<elapsed> calls=<fib calls> result=<fib(N)>
 *   ...
 *   hwm_kb=<VmHWM> rss_file_kb=<RssFile>      (KiB, from /proc/self/status)
 * Each thread times its own fib(N) call with clock_gettime(CLOCK_MONOTONIC). The
 * threads meet at a barrier first, so they run fib concurrently, and by then each has
 * already recorded its first event (the entry of worker()), so a tracer's per-thread
 * set-up is not timed. VmHWM is read after the threads are joined, just before main
 * returns: it covers the threads' buffers (peak, even though they are returned when a
 * thread exits) but not what a tracer does after main returns. RssFile (file-backed pages
 * mapped now, mostly shared libraries' code) is read at the same time; it tells how much
 * of the peak is libraries a tracer brings in rather than memory it allocates.
 *
 * fib() is the same as in fib.c: the empty asm statements keep both recursive calls
 * real calls, so fib(n) makes 2*F(n+1)-1 calls (fib(30): 2692537).
 */
#define _POSIX_C_SOURCE 200809L /* pthread barriers and clock_gettime under -std=c11 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64

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
    long f0 = 0, f1 = 1;
    for (int i = 0; i < n + 1; i++) {
        long t = f0 + f1;
        f0 = f1;
        f1 = t;
    }
    return 2 * f0 - 1;
}

struct job {
    int n;
    long result;
    long long ns;
};

static pthread_barrier_t start;

__attribute__((noinline)) static void *worker(void *arg)
{
    struct job *j = arg;
    pthread_barrier_wait(&start);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    j->result = fib(j->n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
    return NULL;
}

/* The value in KiB of the /proc/self/status field `key` (e.g. "VmHWM:"), or -1. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    size_t len = strlen(key);
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, len) == 0) {
            kb = strtol(line + len, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30;
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    if (n < 1 || n > 40 || nt < 1 || nt > MAX_THREADS) {
        fprintf(stderr, "fib_mt: N must be in 1..40 and T in 1..%d\n", MAX_THREADS);
        return 2;
    }
    struct job jobs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    if (pthread_barrier_init(&start, NULL, (unsigned)nt) != 0) {
        fprintf(stderr, "fib_mt: pthread_barrier_init failed\n");
        return 1;
    }
    for (int i = 0; i < nt; i++) {
        jobs[i] = (struct job){.n = n};
        int rc = pthread_create(&tids[i], NULL, worker, &jobs[i]);
        if (rc != 0) {
            fprintf(stderr, "fib_mt: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    for (int i = 0; i < nt; i++)
        pthread_join(tids[i], NULL);
    long calls = fib_calls(n);
    for (int i = 0; i < nt; i++)
        printf("thread=%d ns=%lld calls=%ld result=%ld\n", i, jobs[i].ns, calls, jobs[i].result);
    long hwm = status_kb("VmHWM:"), file = status_kb("RssFile:");
    printf("hwm_kb=%ld rss_file_kb=%ld\n", hwm, file);
    return 0;
}
