/* bufs: what the files of the buffers module (buffers.c lists them) share with each other, and
 * only with each other: the rest of the runtime sees str.h. Each variable is defined in the
 * lowest file that uses it (no file refers to one above it); its comment says who writes it, who
 * reads it, and under which lock or ordering. Everything is STR_HIDDEN.
 */
#ifndef SLEDTRACE_BUFS_H
#define SLEDTRACE_BUFS_H

#include "str.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ST_FORKED: a fork child that has not recorded an event yet; its first event opens its own
 * trace and starts its flush thread (lazily, so that fork + exec children that never trace leave
 * no files behind). */
enum { ST_OFF = 0, ST_ACTIVE = 1, ST_STOPPING = 2, ST_DONE = 3, ST_FORKED = 4 };

/* new_process_check (forks.c): the calling process is the one the state belongs to, or a vfork /
 * CLONE_VM child sharing its memory. */
enum { PROC_SAME, PROC_SHARED };

/* Sleeps ns nanoseconds (up to a second; the whole time even if a signal interrupts it). Not
 * a cancellation point, unlike libc's nanosleep: deferred cancellation must never act inside
 * the tracer (a thread cancelled while waiting for a chunk would leave it handed over twice),
 * and the exit paths that wait run in the program's threads. */
static inline void pause_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static inline uint64_t ns_of(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Blocks every asynchronous signal of the calling thread (old mask in *old): no handler of the
 * program runs on a thread while the runtime's lock or a half-made change is in its hands. The
 * synchronous ones (a fault, a trap, a seccomp SIGSYS) stay deliverable: blocked, the kernel
 * would kill the process on them. */
static inline void block_async(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

/* ---- freq.c ---- */
/* The start pair (start-up; a fork child's, forks.c), the flush thread's first estimate (under
 * the writer flag: flusher.c first_frequency; read by trace_file.c write_chunk), a fork child's
 * parent's calibration (0: unknown), and whether the implausible calibration was said (reset in
 * a fork child). */
STR_HIDDEN extern uint64_t str_tsc0;
STR_HIDDEN extern uint64_t str_freq_estimate;
STR_HIDDEN extern struct timespec str_raw0;
STR_HIDDEN extern uint64_t str_parent_freq;
STR_HIDDEN extern int str_implausible_said;
STR_HIDDEN void str_tsc_pair(uint64_t *tsc, struct timespec *raw);
STR_HIDDEN uint64_t str_freq_between(uint64_t t0, const struct timespec *r0, uint64_t t1,
                                     const struct timespec *r1, uint64_t min_ns);
STR_HIDDEN uint64_t str_calibrate(unsigned min_ms, int say);
STR_HIDDEN void str_set_min_ticks(uint64_t freq);

#endif
