/* Asynchronous signals landing anywhere, including inside the tracer's hot path: a 20 us
 * CLOCK_MONOTONIC timer whose handler runs instrumented code while main runs fib rounds for
 * ~40 ms. The counts printed vary from run to run (the test does not compare stdout) but are
 * exact: the handler counts its own invocations. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "progs.h"

long (*volatile fibp)(long);
long (*volatile leafp)(long);
static volatile long handled;

KEEP long sig_leaf(long x)
{
    BARRIER();
    return x + 1;
}

KEEP void on_signal(int sig)
{
    handled = leafp(handled);
    (void)sig;
}

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    fibp = fib;
    leafp = sig_leaf;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGALRM;
    if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0)
        return 2;
    struct itimerspec its = {{0, 20000}, {0, 20000}};
    timer_settime(tm, 0, &its, NULL);
    long rounds = 0;
    double end = now() + 0.04;
    while (now() < end) {
        if (fibp(14) != fibonacci(14))
            return 1;
        rounds++;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL); /* no handler after this point */
    timer_delete(tm);
    long h = handled;
    printf("count fib %ld\ncount on_signal %ld\ncount sig_leaf %ld\ncount main 1\n",
           rounds * fib_calls(14), h, h);
    printf("threads 1\nthreadwork %ld\n", rounds * fib_calls(14) + 2 * h + 1);
    return 0;
}
