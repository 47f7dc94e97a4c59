/* Flight recorder dump on demand: the program ignores SIGUSR2 itself, calls fib(18), raises
 * SIGUSR2 (the default SLEDTRACE_DUMP_SIGNAL), gives the flush thread time to dump, then kills
 * itself with SIGKILL: nothing else can write its trace. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) int main(void)
{
    fibp = fib;
    signal(SIGUSR2, SIG_IGN);
    if (fibp(18) != fibonacci(18))
        return 1;
    raise(SIGUSR2);
    usleep(300000);
    printf("dumped\n");
    fflush(stdout);
    raise(SIGKILL);
    return 2;
}
