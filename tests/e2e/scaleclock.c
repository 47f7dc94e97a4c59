/* libscaleclock.so: a stand-in for libfaketime's "x10" (issue 23.10), preloaded before the
 * runtime: libc's clock_gettime, as the process sees it, runs ten times too fast for
 * CLOCK_MONOTONIC_RAW (the clock the runtime calibrates the TSC against). The runtime must not
 * be fooled: its calibration reads the vDSO or the system call, never the interposable symbol. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
    int r = real(id, ts);
    if (r == 0 && id == CLOCK_MONOTONIC_RAW) {
        uint64_t ns = ((uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec) * 10;
        ts->tv_sec = (time_t)(ns / 1000000000u);
        ts->tv_nsec = (long)(ns % 1000000000u);
    }
    return r;
}
