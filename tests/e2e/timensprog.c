/* Fork children in a new time namespace (issue 23.10). The program enters a new time namespace
 * for its children (unshare(CLONE_NEWTIME): root only) whose CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW
 * and CLOCK_BOOTTIME run OFFSET_S seconds ahead of its own, set through
 * /proc/self/timens_offsets before the first child exists. Then it calls ten_ms() once, forks a
 * child that calls ten_ms() once and leaves with _exit(0), waits for it, and prints its counts
 * (progs.h), "forked PID" and "child ten_ms 1". ten_ms() busy-waits until 10 ms of
 * CLOCK_MONOTONIC have passed (read in uninstrumented code). Each process also prints how long
 * the call took as it saw it, from just before to just after ("parent call_ns N", "child
 * call_ns N", the child's printed before it leaves): the traced time lies within that, longer
 * than 10 ms when the machine is busy.
 * When the namespace cannot be made (not root, or a kernel without time namespaces), it prints
 * "skip: REASON" and exits 0 without forking. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

enum { OFFSET_S = 864000 }; /* ten days */

void (*volatile ten_msp)(void);

__attribute__((xray_never_instrument)) static long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

KEEP void ten_ms(void)
{
    long start = mono_ns();
    while (mono_ns() - start < 10000000L)
        BARRIER();
}

__attribute__((xray_never_instrument)) int main(void)
{
    ten_msp = ten_ms;
    if (unshare(CLONE_NEWTIME) != 0) {
        printf("skip: unshare(CLONE_NEWTIME): %s\n", strerror(errno));
        return 0;
    }
    int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
    char line[128];
    int len = snprintf(line, sizeof line, "monotonic %d 0\nboottime %d 0\n", OFFSET_S, OFFSET_S);
    if (fd < 0 || write(fd, line, (size_t)len) != len) {
        printf("skip: /proc/self/timens_offsets: %s\n", strerror(errno));
        return 0;
    }
    close(fd);
    long t0 = mono_ns();
    ten_msp();
    long parent_ns = mono_ns() - t0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        t0 = mono_ns();
        ten_msp();
        printf("child call_ns %ld\n", mono_ns() - t0);
        fflush(stdout);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed (%#x)\n", st);
        return 1;
    }
    printf("count ten_ms 1\nthreads 1\nthreadwork 1\nforked %d\nchild ten_ms 1\n", (int)pid);
    printf("parent call_ns %ld\n", parent_ns);
    return 0;
}
