/* sledtrace top (issues 16.3, 28.7): a program that runs for ARGV[1] milliseconds (default
 * 3000) on ARGV[2] threads (default 1: the main thread alone; more: that many threads besides
 * it, main waiting), each calling busy() (5 ms of work), rest() (a 0.2 ms sleep, up to 2 ms
 * as timers go) and nest(3) (recursive: 4 calls) in turn, so that a trace it is writing has a
 * clear top function, threads whose blocks interleave in the file, and calls open across
 * flushes. Prints how many rounds it made in all (= calls of busy and of rest; nest: 4 each). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((xray_never_instrument)) static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

volatile long sink;

__attribute__((noinline)) void busy(void)
{
    double end = now_ms() + 5;
    while (now_ms() < end)
        sink++;
}

__attribute__((noinline)) void rest(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) int nest(int d)
{
    if (d == 0)
        return 0;
    int r = nest(d - 1);
    __asm__ volatile("" : "+r"(r)); /* a real call, not a loop */
    return r + 1;
}

static double g_run;

__attribute__((xray_never_instrument)) static void *loop(void *arg)
{
    long *rounds = arg;
    double end = now_ms() + g_run;
    while (now_ms() < end) {
        busy();
        rest();
        nest(3);
        ++*rounds;
    }
    return NULL;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    g_run = argc > 1 ? atof(argv[1]) : 3000;
    int n = argc > 2 ? atoi(argv[2]) : 1;
    if (n < 1 || n > 16)
        n = 1;
    long rounds[16] = {0}, all = 0;
    pthread_t th[16];
    if (n == 1) {
        loop(&rounds[0]);
    } else {
        for (int i = 0; i < n; i++)
            pthread_create(&th[i], NULL, loop, &rounds[i]);
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
    }
    for (int i = 0; i < n; i++)
        all += rounds[i];
    printf("rounds %ld\n", all);
    return 0;
}
