/* A fork child killed with SIGKILL before its first flush (issue 27.7: redis's BGSAVE children,
 * killed by its test suite): the parent records a few calls and forks; the child records three,
 * says "child PID" and sleeps without another call; the parent waits for it, then exits 0. The child's trace is
 * its header alone (a fork child's trace gets no calibration block): every tool must accept it. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

KEEP long leaf(long x)
{
    BARRIER();
    return x + 1;
}

__attribute__((xray_never_instrument)) int main(void)
{
    long s = 0;
    for (long i = 0; i < 3; i++)
        s += leaf(i);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        for (long i = 0; i < 3; i++) /* recorded, never flushed */
            s += leaf(i);
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        sleep(30);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    return s == 6 ? 0 : 1;
}
