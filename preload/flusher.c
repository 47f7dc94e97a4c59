/* The flush thread, its wake-ups, and solo mode, where the program's threads write instead
 * (part of the buffers module: buffers.c lists its files).
 *
 * Wake-ups. The flush thread sleeps on a futex for at most SLEDTRACE_FLUSH_MS, and not while a
 * thread's mark is set (marks.c). A thread that hands a chunk over wakes it (one FUTEX_WAKE
 * syscall, once per chunk at most, only while it sleeps) when half of its pool is handed over
 * and unwritten, or when it has to wait for a free chunk (record.c, switch.c). The flush thread
 * runs as SCHED_BATCH (str_start_flusher), so such a wake-up never preempts the thread that
 * made it. Each time it writes the marked threads' chunks, each period what every thread has
 * handed over and committed (queue.c); it ends by itself once the program's last thread is
 * gone (final.c's final flush).
 *
 * Solo: a process without a flush thread (its task limits are tight, limits.c; its flush thread
 * could not be started; or it was stopped so that the program's fork or pthread_create could
 * succeed, str_reclaim). Nothing else changes: a thread that hands a chunk over writes the marked
 * threads' chunks itself right after (str_solo_write, under the writer flag), so its next chunk
 * is free at once and nothing waits or is lost; each thread's chunks still reach the file in
 * order (oldest first, by one writer at a time). The common switch (switch.c) is not taken solo. What is lost is the period: a thread's
 * current chunk reaches the file when it is full, when the thread exits, at sledtrace_flush()
 * and at the end, so a SIGKILL loses what the threads hold. The dump and toggle signals are
 * served at the next chunk switch of any thread (str_solo_requests). A vfork child never writes (it
 * must take no lock): when its chunks are all handed over it drops its events, counted.
 *
 * Memory ordering:
 *  - `state` (final.c), `solo` (final.c), `str_wake_seq` and `str_flusher_sleeping`: seq_cst, for
 * the
 *    sleep/wake handshake.
 *  - `solo` is set once, seq_cst, before the flush thread is woken to end, and read with acquire
 *    by the threads that would otherwise wait for it.
 *  - dump and toggle requests: release by the signal handlers (str_request_*), acq_rel exchange
 *    by the flush thread or str_solo_requests.
 * Calls final.c, queue.c, marks.c, trace_file.c, freq.c.
 */
#include "str.h"
#include "stp.h"
#include "bufs.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic int str_dump_requested;   /* flight policy: set by the dump signal's handler */
_Atomic int str_toggle_requested; /* set by the toggle signal's handler */
_Atomic uint32_t str_wake_seq;
_Atomic int str_flusher_sleeping;
pthread_t str_flusher;
/* str_flusher_live: a flush thread was started and not yet joined (under str_drop_lock once the
 * process runs); str_flusher_tid: its kernel task, to wait for its release. */
int str_flusher_live;
_Atomic int32_t str_flusher_tid;
pthread_mutex_t str_drop_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_flusher_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        str_flusher_cpu_ns = ns_of(&ts);
}

/* The header's first frequency, once 5 ms have passed (never waited for), so that a trace cut
 * short still has one. The caller holds the writer flag. */
static void first_frequency(void)
{
    if (str_freq_written)
        return;
    struct timespec raw;
    str_clock_raw(&raw);
    if (ns_of(&raw) - ns_of(&str_raw0) < 5000000u)
        return;
    str_freq_estimate = str_calibrate(0, 1);
    str_write_header(str_freq_estimate);
    str_freq_written = 1;
    str_set_min_ticks(str_freq_estimate);
}

static void *flush_main(void *arg)
{
    (void)arg;
    atomic_store_explicit(&str_flusher_tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
    str_munlock_stack(); /* a program under mlockall(MCL_FUTURE): memlock.c */
    /* CPUID's word on the TSC's frequency (clock.c), read here, off the program's threads:
     * three CPUID instructions, each a trap to the hypervisor on a VM (about 7 us apiece on the
     * development VM), that the exit's calibration check would otherwise run. */
    int exact;
    (void)str_clock_cpuid_hz(&exact);
    /* The waits' libc definitions (waits.c), resolved here rather than at their first call,
     * which may be in a signal handler, or at start-up, which every process would pay for. */
    str_waits_resolve();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    uint64_t period = str_cfg.flush_ms * 1000000ull;
    uint64_t deadline = ns_of(&next) + period;
    /* Solo, once set (str_reclaim), ends the loop: the program's threads write from then on. */
    while (atomic_load_explicit(&str_state, memory_order_seq_cst) == ST_ACTIVE &&
           !atomic_load_explicit(&str_solo, memory_order_seq_cst)) {
        uint32_t seq = atomic_load_explicit(&str_wake_seq, memory_order_seq_cst);
        str_writer_take_for(0);
        if (atomic_load_explicit(&str_state, memory_order_seq_cst) != ST_ACTIVE) {
            str_writer_give();
            break;
        }
        str_write_marked();
        str_slots_cool(); /* exited threads' slots past the ones kept warm */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        first_frequency();
        int period_due = ns_of(&now) >= deadline;
        if (str_cfg.policy == STR_FLIGHT) {
            /* A flight recorder writes only when asked (or at the end). */
            if (atomic_exchange_explicit(&str_dump_requested, 0, memory_order_acq_rel)) {
                str_flush_committed(NULL);
                str_log(STR_INFO, "flight recorder dumped: %llu bytes so far",
                        (unsigned long long)str_bytes_written);
            }
        } else if (period_due) {
            str_flush_committed(NULL);
        }
        str_writer_give();
        if (atomic_exchange_explicit(&str_toggle_requested, 0, memory_order_acq_rel))
            str_outs.toggle();
        if (period_due) {
            deadline = ns_of(&now) + period;
            int expect = ST_ACTIVE;
            if (str_threads_alone() &&
                atomic_compare_exchange_strong_explicit(
                    &str_state, &expect, ST_STOPPING, memory_order_seq_cst, memory_order_seq_cst)) {
                /* Everything the exited threads recorded is handed over: write it, then end, so that
                 * glibc's last-thread exit(0) runs as it would have without us. */
                note_flusher_cpu();
                str_final_flush();
                return NULL;
            }
        }
        uint64_t left = deadline - ns_of(&now);
        if (left > period)
            left = period;
        if (!str_freq_written && left > 5000000u)
            left = 5000000u;
        struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
        atomic_store_explicit(&str_flusher_sleeping, 1, memory_order_seq_cst);
        if (!str_marks_any() &&
            atomic_load_explicit(&str_state, memory_order_seq_cst) == ST_ACTIVE &&
            !atomic_load_explicit(&str_solo, memory_order_seq_cst))
            futex(&str_wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
        atomic_store_explicit(&str_flusher_sleeping, 0, memory_order_seq_cst);
    }
    note_flusher_cpu();
    return NULL;
}

/* Starts the flush thread and makes tracing active; or, when the process's task limits are
 * tight (limits.c) or the thread cannot be started, makes it active solo (see the top), with
 * an info line: the trace loses nothing. A fork child of a solo process is solo too. The flush
 * thread must never receive the program's signals: it is created with all of them blocked. */
int str_start_flusher(void)
{
    const char *why = NULL;
    if (!atomic_load_explicit(&str_solo, memory_order_relaxed) && str_tasks_tight(&why)) {
        /* The toggle and dump signals need a thread that acts while the program's may be
         * idle: kept for them (str_reclaim still stops it if the program runs into the limit). */
        if (str_cfg.toggle_signal || str_cfg.policy == STR_FLIGHT) {
            str_log(STR_INFO,
                    "%s: the flush thread is kept for %s; it is stopped if the program cannot "
                    "make a thread or process",
                    why, str_cfg.toggle_signal ? "SLEDTRACE_TOGGLE_SIGNAL" : "the dump signal");
        } else {
            str_log(STR_INFO,
                    "%s: no flush thread (it would count against that limit); each thread "
                    "writes the chunks it fills",
                    why);
            atomic_store_explicit(&str_solo, 1, memory_order_seq_cst);
        }
    }
    atomic_store_explicit(&str_state, ST_ACTIVE, memory_order_seq_cst);
    if (atomic_load_explicit(&str_solo, memory_order_relaxed))
        return 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = str_thread_create(&str_flusher, flush_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        str_log(STR_INFO,
                "cannot start the flush thread (%s); each thread writes the chunks it fills",
                strerror(rc));
        /* Seq_cst: a thread that handed a chunk over meanwhile and waits sees it
         * (str_next_chunk). */
        atomic_store_explicit(&str_solo, 1, memory_order_seq_cst);
        return 0;
    }
    str_flusher_live = 1;
    /* SCHED_BATCH (same weight, same nice value): a thread of the program that wakes the flush
     * thread (str_wake_flusher, from a chunk switch) is never preempted by the wake-up; the
     * flush thread runs at the waker's next tick or on a free CPU. On a machine with more
     * runnable threads than CPUs the wake-up preemption put the whole write of the chunks (ms)
     * inside the waker's switch (issue 28.9). Set here, by the creating thread, not by the
     * flush thread itself: at start-up this is the constructor, before the program can have
     * installed a seccomp filter (a filter installed with TSYNC while the new thread started
     * killed the process for this call: hostile.c seccomp-list); later (a fork child's first
     * event, a lazy start) not under a known filter. Only from SCHED_OTHER: a flush thread
     * that inherited a real-time policy from a real-time program keeps it. A refusal changes
     * nothing else. */
    int policy;
    struct sched_param sp;
    if (!atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed) &&
        pthread_getschedparam(str_flusher, &policy, &sp) == 0 && policy == SCHED_OTHER) {
        sp.sched_priority = 0;
        (void)pthread_setschedparam(str_flusher, SCHED_BATCH, &sp);
    }
    return 0;
}

/* Waits (at most 100 ms) until the kernel has released task tid of this process: its slot in
 * RLIMIT_NPROC and the pids cgroup is given back only then, a little after pthread_join
 * returns (the join is woken as the thread's memory is released, before the task is). */
static void wait_task_gone(int32_t tid)
{
    for (int i = 0; tid > 0 && i < 2000; i++) {
        if (syscall(SYS_tgkill, (long)str_pid, (long)tid, 0L) != 0 && errno == ESRCH)
            return;
        pause_ns(50000);
    }
}

/* Stops the flush thread for good: the process goes solo. 1 if there was one to stop. */
int str_drop_flusher(void)
{
    if (atomic_load_explicit(&str_solo, memory_order_acquire) ||
        atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE ||
        (int32_t)syscall(SYS_getpid) != str_pid)
        return 0;
    sigset_t mask;
    block_async(&mask);
    int old_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
    pthread_mutex_lock(&str_drop_lock);
    int dropped = 0;
    if (str_flusher_live && atomic_load_explicit(&str_state, memory_order_seq_cst) == ST_ACTIVE) {
        atomic_store_explicit(&str_solo, 1, memory_order_seq_cst);
        str_wake_flusher();
        futex(&str_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
        pthread_join(str_flusher, NULL);
        str_flusher_live = 0;
        wait_task_gone(atomic_load_explicit(&str_flusher_tid, memory_order_relaxed));
        str_solo_write(); /* what it left handed over */
        dropped = 1;
    }
    pthread_mutex_unlock(&str_drop_lock);
    pthread_setcancelstate(old_state, &old_state);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (dropped)
        str_log(STR_INFO,
                "the program could not make a thread or process: the flush thread was stopped "
                "to make room; each thread writes the chunks it fills%s",
                str_cfg.toggle_signal || str_cfg.policy == STR_FLIGHT
                    ? " (the toggle and dump signals act at the next chunk switch)"
                    : "");
    return dropped;
}

/* The memory of threads that have exited is freed by the flush thread once their last chunk is
 * written, up to a period later. Wakes it and waits (at most 200 ms) until no mark is left
 * (solo: writes it). Returns 1 if there was anything to wait for, i.e. if a retry may succeed.
 * Logs once that it happened. */
int str_reclaim_exited(void)
{
    if (atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE || !str_marks_any())
        return 0;
    if (atomic_load_explicit(&str_solo, memory_order_acquire))
        return str_solo_write();
    static _Atomic int said;
    if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
        str_log(STR_INFO,
                "the program ran short of memory; released exited threads' buffers early");
    str_wake_flusher();
    futex(&str_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    for (int i = 0; i < 200 && str_marks_any(); i++)
        pause_ns(1000000);
    pause_ns(1000000); /* the last chunk taken may still be being written */
    return 1;
}

void str_request_toggle(void)
{
    atomic_store_explicit(&str_toggle_requested, 1, memory_order_release);
    str_wake_flusher();
    futex(&str_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void str_request_dump(void)
{
    atomic_store_explicit(&str_dump_requested, 1, memory_order_release);
    str_wake_flusher();
    futex(&str_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Solo: the calling thread writes what is handed over (see the top). Not in a vfork child, which
 * shares its parent's memory but must take no lock: 0 then. */
int str_solo_write(void)
{
    if ((int32_t)syscall(SYS_getpid) != str_pid)
        return 0;
    struct str_xfsz_guard g;
    str_xfsz_block(&g);
    str_writer_take_for(0);
    str_write_marked();
    first_frequency();
    str_writer_give();
    str_xfsz_unblock(&g);
    return 1;
}

static void *toggle_main(void *arg)
{
    (void)arg;
    str_outs.toggle();
    return NULL;
}

/* Solo: the dump signal's request (flight policy) and the toggle signal's, at the end of a
 * chunk switch (str_refill, asynchronous signals blocked, no lock held). The dump is written
 * here; the sleds are switched by a thread started for it (patching from inside the tracer,
 * perhaps in a handler that interrupted sledtrace_patch(), could wait for itself), which
 * ends with the switch. */
void str_solo_requests(void)
{
    if (!atomic_load_explicit(&str_dump_requested, memory_order_relaxed) &&
        !atomic_load_explicit(&str_toggle_requested, memory_order_relaxed))
        return;
    if (!atomic_load_explicit(&str_solo, memory_order_acquire) ||
        atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE ||
        (int32_t)syscall(SYS_getpid) != str_pid)
        return;
    if (atomic_exchange_explicit(&str_dump_requested, 0, memory_order_acq_rel)) {
        struct str_xfsz_guard g;
        str_xfsz_block(&g);
        str_writer_take_for(0);
        str_flush_committed(NULL);
        str_writer_give();
        str_xfsz_unblock(&g);
        str_log(STR_INFO, "flight recorder dumped: %llu bytes so far",
                (unsigned long long)str_bytes_written);
    }
    if (atomic_exchange_explicit(&str_toggle_requested, 0, memory_order_acq_rel)) {
        pthread_t t;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = str_thread_create(&t, toggle_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0)
            pthread_detach(t);
        else
            str_log(STR_WARN, "SLEDTRACE_TOGGLE_SIGNAL ignored: no thread to switch the sleds (%s)",
                    strerror(rc));
    }
}
