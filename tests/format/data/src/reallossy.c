/* reallossy.c - the program that recorded tests/format/data/real-lossy.fdr (and .syms), by
 * scripts/record-test-traces.sh:
 *   clang -O2 -g0 -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps
 *   run as `taskset -c 0` (one CPU) under LD_PRELOAD=libsledtrace.so with
 *   SLEDTRACE_POLICY=discard, SLEDTRACE_BUFFER_KB=4, SLEDTRACE_BUFFERS=2 and
 *   SLEDTRACE_FLUSH_MS=60000 (the flush thread then runs only when woken: at the half-full
 *   watermark, when a chunk is missing, and at exit).
 *
 * One thread. burst() makes BURST back-to-back calls to tick(): 6002 records, where two 4 KiB
 * chunks hold about 1000. On one CPU the woken flush thread cannot run before main blocks, so
 * no chunk comes back during the burst: the runtime drops the rest of it and starts its next
 * block with a loss marker (custom event "sledtrace:lost" + count). main then sleeps, so that
 * the flush thread writes and frees the chunks, and makes a few calls that are recorded.
 * Prints nothing; exits 0.
 *
 * Calls per function made by the program (the trace holds fewer: the dropped ones are missing,
 * and a loss marker empties the thread's stack, so burst's and main's frames, open across a
 * gap, are not measured either):
 *   main      1
 *   burst     1
 *   tick      BURST = 3000
 *   after     AFTER = 5
 * Which events are lost, and how many, differ from run to run. */
#include <time.h>

#define KEEP __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

enum { BURST = 3000, AFTER = 5 };

long (*volatile tickp)(long);
long (*volatile afterp)(long);
volatile long sink;

KEEP long tick(long x)
{
    BARRIER();
    return x + 1;
}

KEEP long after(long x)
{
    BARRIER();
    return x * 2;
}

KEEP long burst(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += tickp(i);
    BARRIER();
    return s;
}

int main(void)
{
    tickp = tick;
    afterp = after;
    long s = burst(BURST);
    struct timespec ts = {0, 50 * 1000 * 1000}; /* 50 ms: the woken flush thread frees a chunk */
    nanosleep(&ts, 0);
    for (long i = 0; i < AFTER; i++)
        s += afterp(i);
    sink = s;
    return 0;
}
