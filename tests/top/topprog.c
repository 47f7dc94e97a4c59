/* sledtrace top (issue 16.3): a program that runs for ARGV[1] milliseconds (default 3000),
 * calling busy() (5 ms of work) and rest() (a 0.2 ms sleep, up to 2 ms as timers go) in turn,
 * so that a trace it is writing has a clear top function. Prints how many rounds it made (=
 * calls of each). */
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

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    double run = argc > 1 ? atof(argv[1]) : 3000, end = now_ms() + run;
    long rounds = 0;
    while (now_ms() < end) {
        busy();
        rest();
        rounds++;
    }
    printf("rounds %ld\n", rounds);
    return 0;
}
