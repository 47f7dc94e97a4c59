/*
 * top_busy.c - the traced program of scripts/bench/top.sh: a busy program whose trace grows
 * steadily while `sledtrace top` follows it.
 *
 * T threads (argv[2], default 2) run for S seconds (argv[1], default 20), each making R rounds
 * a second (argv[3], default 100) of fib(18) (8361 calls, about 134 KB of trace), spinning
 * untraced until the next round's time (none when it is late), so the processors stay busy
 * and the trace grows at a steady rate (2 x 100 x 134 KB: about 27 MB a second, hundreds of
 * MB in 20 s) without reaching gigabytes. Prints the rounds each thread made.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

__attribute__((xray_never_instrument)) static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double g_seconds = 20, g_rate = 100;

__attribute__((xray_never_instrument)) static void spin_until(double t)
{
    while (now_s() < t)
        __asm__ volatile("");
}

__attribute__((noinline)) static void *worker(void *arg)
{
    long *rounds = arg;
    double start = now_s(), end = start + g_seconds;
    while (now_s() < end) {
        long r = fib(18);
        __asm__ volatile("" : "+r"(r));
        ++*rounds;
        spin_until(start + (double)*rounds / g_rate);
    }
    return NULL;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    g_seconds = argc > 1 ? atof(argv[1]) : 20;
    int n = argc > 2 ? atoi(argv[2]) : 2;
    g_rate = argc > 3 ? atof(argv[3]) : 100;
    if (!(g_rate > 0))
        g_rate = 100;
    if (n < 1 || n > 64)
        n = 2;
    pthread_t th[64];
    long rounds[64] = {0};
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, worker, &rounds[i]);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        printf("thread=%d rounds=%ld\n", i, rounds[i]);
    }
    return 0;
}
