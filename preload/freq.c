/* The TSC's frequency, calibrated against CLOCK_MONOTONIC_RAW, for the trace's header and for
 * SLEDTRACE_MIN_DURATION (part of the buffers module: buffers.c lists its files).
 *
 * A start pair (TSC, raw clock: str_tsc_pair) is taken at start-up (buffers.c) and again in a fork
 * child, in the child's own clock (forks.c); a frequency is the TSC elapsed over the raw time
 * elapsed since then (calibrate), checked against what else is known of it (plausible). The
 * flush thread's first estimate goes into the header 5 ms after start-up (flusher.c
 * first_frequency), the final flush's over the whole run replaces it (final.c).
 *
 * Threads: tsc0, raw0 and str_parent_freq are written at start-up, before the flush thread exists,
 * or in a fork child while it has one thread; str_freq_estimate only by the holder of the writer
 * flag (trace_file.c), which also reads it. No atomics are needed: the flush thread's creation,
 * and the writer flag's release and acquire, order them. Nothing here calls another file of
 * the module.
 */
#include "str.h"
#include "bufs.h"

#include <stdint.h>
#include <time.h>

/* The TSC's calibration (calibrate): the start pair, taken at start-up and again in a fork
 * child; the flush thread's first estimate; a fork child's parent's calibration (0: unknown),
 * what the child's own is checked against. */
uint64_t str_tsc0;
uint64_t str_freq_estimate;
struct timespec str_raw0;
uint64_t str_parent_freq;
int str_implausible_said;

/* A (TSC, CLOCK_MONOTONIC_RAW) pair of one moment: the clock read bracketed between two TSC
 * reads, whose midpoint is taken; of three tries, the tightest bracket (an interrupt or a
 * preemption between the reads widens a try, and the pair it gives is off by up to that much). */
void str_tsc_pair(uint64_t *tsc, struct timespec *raw)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        struct timespec now;
        uint64_t a = str_now();
        str_clock_raw(&now);
        uint64_t b = str_now();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *raw = now;
        }
    }
}

/* TSC ticks per second between two pairs at least min_ns apart, else 0. */
uint64_t str_freq_between(uint64_t t0, const struct timespec *r0, uint64_t t1,
                          const struct timespec *r1, uint64_t min_ns)
{
    uint64_t n0 = ns_of(r0), n1 = ns_of(r1);
    if (n1 <= n0 || n1 - n0 < min_ns || t1 <= t0)
        return 0;
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)((u128)(t1 - t0) * 1000000000u / (n1 - n0));
}

/* A calibrated TSC frequency, checked against what else is known of it, so that a clock that
 * jumped under the calibration (issue 23.10: a fork child in a new time namespace, calibrated
 * from its parent's start pair, wrote 5837 Hz) cannot put an absurd frequency in the header. The
 * reference is the first of: CPUID leaf 0x15 (exact), the parent process's calibration (a fork
 * child: the same TSC), CPUID leaf 0x16 (the base frequency, nominal; clock.c). A value more
 * than an eighth away from one of the first two, not within a factor of 2 of the third, or
 * outside 100 MHz .. 20 GHz when there is none, is replaced by the reference (with none, by the
 * last accepted estimate), and an info line says so, once per process (say = 0 on the crash
 * path, which logs nothing). */
static uint64_t plausible(uint64_t f, int say)
{
    int exact;
    uint64_t cpu = str_clock_cpuid_hz(&exact);
    uint64_t ref = exact ? cpu : str_parent_freq ? str_parent_freq : cpu;
    const char *what = exact             ? "CPUID leaf 0x15"
                       : str_parent_freq ? "the parent process's calibration"
                                         : "CPUID leaf 0x16";
    uint64_t lo = 100000000u, hi = 20000000000u;
    if (exact || str_parent_freq) {
        lo = ref - ref / 8;
        hi = ref + ref / 8;
    } else if (ref) {
        lo = ref / 2;
        hi = ref * 2;
    }
    if (f > lo && f < hi)
        return f;
    uint64_t use = ref ? ref : str_freq_estimate ? str_freq_estimate : f;
    if (say && !str_implausible_said) {
        str_implausible_said = 1;
        if (ref)
            str_log(STR_INFO,
                    "the TSC's calibration gave %llu Hz, but %s says %llu Hz: the clock it was "
                    "calibrated against jumped meanwhile; the trace says %llu Hz",
                    (unsigned long long)f, what, (unsigned long long)ref, (unsigned long long)use);
        else
            str_log(STR_INFO,
                    "the TSC's calibration gave %llu Hz, no TSC runs at that; the trace says "
                    "%llu Hz",
                    (unsigned long long)f, (unsigned long long)use);
    }
    return use;
}

/* TSC ticks per second between the start pair and now, checked (plausible). Sleeps until at
 * least `min_ms` have passed since the start pair, so short runs still calibrate over a usable
 * interval. */
uint64_t str_calibrate(unsigned min_ms, int say)
{
    if (!str_clock_tsc)
        return 1000000000u; /* timestamps are nanoseconds */
    struct timespec now;
    str_clock_raw(&now);
    uint64_t elapsed = ns_of(&now) - ns_of(&str_raw0);
    if (ns_of(&now) >= ns_of(&str_raw0) && elapsed < min_ms * 1000000ull)
        pause_ns((long)(min_ms * 1000000ull - elapsed));
    uint64_t tsc = 0;
    str_tsc_pair(&tsc, &now);
    uint64_t f = str_freq_between(str_tsc0, &str_raw0, tsc, &now, 1);
    return plausible(f ? f : str_freq_estimate, say);
}

/* SLEDTRACE_MIN_DURATION in ticks of the calibrated clock (hot.c reads it relaxed: until it is
 * set, every call is recorded). */
void str_set_min_ticks(uint64_t freq)
{
    if (!str_cfg.min_duration_ns || !freq)
        return;
    __extension__ typedef unsigned __int128 u128;
    uint64_t t = (uint64_t)((u128)str_cfg.min_duration_ns * freq / 1000000000u);
    atomic_store_explicit(&str_min_ticks, t ? t : 1, memory_order_relaxed);
}
