/* The buffers module's entry points: start, finish, sledtrace_flush, the crash path's flush and
 * checkpoint, reclaiming memory and tasks for the program, munlock (str.h declares them).
 *
 * The module: per-thread chunks, their hand-over and the flush thread, writing the trace file.
 * Its files, each calling only files below it (preload/DESIGN.md has the table):
 *   buffers.c      these entry points
 *   retire.c       a thread's exit, strict seccomp, TLS sharing, vfork
 *   switch.c       the common chunk switch, on the hot path's terms (built with hot.c)
 *   record.c       the slow path: chunk switches, hand-over, a thread's first event
 *   thread_pool.c  a thread's buffers: mapping, population, registration
 *   forks.c        fork's handlers, a fork child's first event
 *   flusher.c      the flush thread, wake-ups, solo mode
 *   final.c        the final flush, the crash path's write, the sidecar's end, loss reports
 *   queue.c        writing handed-over chunks and committed records, the registry
 *   marks.c        which threads have chunks to write
 *   trace_file.c   the file: descriptor, writer flag, blocks, header, size cap
 *   freq.c         the TSC's calibration
 * bufs.h declares what they share, only to each other (the rest of the runtime sees str.h).
 * Shared state is defined in the lowest file that uses it, so that no file refers to anything
 * of a file above it.
 *
 * Exit. str_buffers_finish() (called once, from the exit path) stops the flush thread, then
 * writes what is handed over and, for every registered thread, the committed part of its current
 * chunk, then rewrites the header with the TSC frequency calibrated over the whole run
 * (final.c). The crash path (str_crash_flush) and a checkpoint write everything without waiting
 * for a lock (final.c str_emergency_write). Memory ordering: the ST_ACTIVE -> ST_STOPPING CAS is
 * seq_cst, like the flush thread's loads of `state` it pairs with (flusher.c).
 */
#include "str.h"
#include "bufs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int str_buffers_start(int fd, const char *path, const char *spath, const struct str_outputs *o)
{
    str_outs = *o; /* before the flush thread starts: pthread_create orders it for that thread */
    str_header_bits = str_clock_init();
    str_limits_read();   /* the memory budget and the task limits, before any thread's buffers */
    str_calib_measure(); /* before any sled is patched: the clock is chosen now */
    str_tsc_pair(&str_tsc0, &str_raw0);
    if (str_cfg.min_duration_ns) {
        /* The threshold in ticks from the first event on: 2 ms of calibration at start-up,
         * paid only when SLEDTRACE_MIN_DURATION asks for it (refined by the flush thread's). */
        str_set_min_ticks(str_calibrate(2, 1));
    }
    if (pthread_key_create(&str_exit_key, str_thread_exit) != 0 ||
        str_begin_file(fd, path, spath) != 0)
        return -1;
    return str_start_flusher();
}

/* The program's pthread_create (threads.c) or fork (tasks.c) failed with EAGAIN or ENOMEM: the
 * buffers of exited threads are written and freed now, and the flush thread, a task and a
 * stack of its own, is stopped for good (the process goes solo). 1 if a retry may succeed. */
int str_reclaim(void)
{
    int saved = errno;
    int r = str_reclaim_exited();
    r |= str_drop_flusher();
    errno = saved;
    return r;
}

/* The calling thread's side ring into its chunk: its cursor's, or a held fork child's
 * fork_cursor's (the other is the parent's). */
static void drain_own(void)
{
    struct str_cursor *c = str_tls.held ? &str_tls.fork_cursor : &str_cursor;
    c->nest++;
    str_drain_side(c);
    c->nest--;
}

void str_buffers_finish(void)
{
    /* A vfork child shares the parent's memory and must not touch its tracing state. */
    if ((int32_t)getpid() != str_pid)
        return;
    int expect = ST_ACTIVE;
    if (!atomic_compare_exchange_strong_explicit(&str_state, &expect, ST_STOPPING,
                                                 memory_order_seq_cst, memory_order_seq_cst))
        return;
    drain_own();
    str_wake_flusher();
    futex(&str_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
    /* pthread_join is a cancellation point: a cancellation pending on the exiting thread must
     * not act in here. Solo, there is no flush thread to join. */
    int old_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
    pthread_mutex_lock(&str_drop_lock);
    if (str_flusher_live) {
        pthread_join(str_flusher, NULL);
        str_flusher_live = 0;
    }
    pthread_mutex_unlock(&str_drop_lock);
    str_final_flush();
    pthread_setcancelstate(old_state, &old_state);
}

/* mlockall(MCL_CURRENT) locked the runtime's memory with the program's (memlock.c): the pools
 * and alternate stacks of registered threads and the flush thread's stack are unlocked. */
void str_buffers_munlock(void)
{
    sigset_t mask;
    block_async(&mask);
    pthread_mutex_lock(&str_registry_lock);
    for (struct str_thread *th = str_registry; th; th = th->next) {
        if (th->slot)
            continue; /* below, with its region */
        munlock(th, th->map_size);
        if (th->alt_map)
            munlock(th->alt_map, th->alt_size);
    }
    pthread_mutex_unlock(&str_registry_lock);
    str_slots_munlock();
    pthread_mutex_lock(&str_drop_lock);
    pthread_attr_t a;
    if (str_flusher_live && pthread_getattr_np(str_flusher, &a) == 0) {
        void *lo;
        size_t size, guard = 0;
        if (pthread_attr_getstack(&a, &lo, &size) == 0) {
            pthread_attr_getguardsize(&a, &guard);
            munlock((char *)lo - guard, size + guard);
        }
        pthread_attr_destroy(&a);
    }
    pthread_mutex_unlock(&str_drop_lock);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

int str_flush_now(void)
{
    if ((int32_t)syscall(SYS_getpid) != str_pid ||
        atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE) {
        errno = ENODEV; /* not tracing in this process */
        return -1;
    }
    /* No handler of the program runs while this thread holds the writer flag or the registry
     * lock (block_async); the caller's own side ring goes into its chunk first. */
    sigset_t mask;
    block_async(&mask);
    drain_own();
    int old_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
    str_writer_take_for(0);
    struct str_xfsz_guard g;
    str_xfsz_block(&g);
    str_write_marked();
    str_flush_committed(NULL); /* every thread's committed records; flight: every ring, as a dump */
    str_write_marked();
    int err = str_write_error;
    str_xfsz_unblock(&g);
    str_writer_give();
    pthread_setcancelstate(old_state, &old_state);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

/* A fatal signal is about to end the process (signals.c): everything goes out and tracing ends.
 * The writer flag is never given back. */
void str_crash_flush(void)
{
    if ((int32_t)getpid() != str_pid)
        return;
    int expect = ST_ACTIVE;
    if (!atomic_compare_exchange_strong_explicit(&str_state, &expect, ST_STOPPING,
                                                 memory_order_seq_cst, memory_order_seq_cst))
        return;
    if (!str_writer_take_for(1000))
        return;
    str_emergency_write();
    atomic_store_explicit(&str_state, ST_DONE, memory_order_seq_cst);
}

/* The process may be about to die, or may carry on (signals.c): everything so far goes out and
 * tracing continues. */
void str_checkpoint(void)
{
    if ((int32_t)getpid() != str_pid ||
        atomic_load_explicit(&str_state, memory_order_seq_cst) != ST_ACTIVE)
        return;
    if (!str_writer_take_for(1000))
        return;
    str_emergency_write();
    str_writer_give();
}
