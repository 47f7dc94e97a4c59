/* SIGKILLs itself in the middle of a loop of calls (issue 23, item 15), at a moment when the
 * runtime's flush thread is likely to be inside a write(2), which the kernel then cuts short: the
 * trace ends inside a block. main calls mid() and leaf() in batches of 1000 (some 50 us) and
 * between batches looks at the size of its own trace ($SLEDTRACE_OUTPUT/sledtrace.<prog>.<pid>
 * .fdr); once argv[1] KiB (default 1024) are written, it sends itself SIGKILL the first time
 * the size has moved since the batch before: a write is under way, and with large chunks
 * (SLEDTRACE_BUFFER_KB) it lasts milliseconds. (Polling from a thread of its own was tried: on
 * two processors, beside main and the flush thread, it ran too late.) Exit status 9 if nothing
 * killed it within 10 s. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

KEEP long leaf(long x)
{
    BARRIER();
    return x * 3 + 1;
}

KEEP long mid(long x)
{
    return leaf(x) + leaf(x + 1);
}

__attribute__((xray_never_instrument)) static long long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    long long min_size = (argc > 1 ? atoll(argv[1]) : 1024) * 1024;
    const char *dir = getenv("SLEDTRACE_OUTPUT");
    const char *base = strrchr(argv[0], '/');
    char trace[PATH_MAX];
    snprintf(trace, sizeof trace, "%s/sledtrace.%s.%d.fdr", dir ? dir : ".",
             base ? base + 1 : argv[0], (int)getpid());
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long s = 0;
    long long last = -1;
    do {
        for (int i = 0; i < 1000; i++)
            s += mid(i);
        long long size = size_of(trace);
        if (size >= min_size && last >= min_size && size != last)
            kill(getpid(), SIGKILL);
        last = size;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - t0.tv_sec < 10);
    return s == 0 ? 8 : 9;
}
