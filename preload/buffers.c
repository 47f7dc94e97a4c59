/* Per-thread chunks, the flush queue and the flush thread.
 *
 * Threads. Each traced thread owns a fixed pool of `nchunks` chunks (memory is bounded and does
 * not grow with the trace). The thread fills one chunk at a time; a full chunk is QUEUED on a
 * lock-free LIFO (Treiber) list that the flush thread takes whole and reverses, so each thread's
 * chunks reach the file in the order they were filled. The flush thread writes a chunk and marks
 * it FREE; a thread needing its next chunk waits (lossless) until that chunk is FREE again.
 *
 * Wake-ups. The flush thread sleeps on a futex for at most SLEDTRACE_FLUSH_MS. A thread that
 * queues a chunk wakes it (one FUTEX_WAKE syscall, once per chunk at most, only while it sleeps)
 * when half of its pool is queued, or when it has to wait for a free chunk.
 *
 * Periods. Every period the flush thread also writes what each thread has committed in its
 * current chunk (str_flush_committed), without involving the thread: an idle or blocked thread's
 * records reach the file within a period, and a SIGKILL loses at most one period. The rest of
 * that chunk follows later as a continuation block (str_write_chunk).
 *
 * Memory ordering:
 *  - queue push: CAS with release on `str_queue_head`, pairs with the acquire exchange in
 * take_queue();
 *    it publishes the chunk's bytes and `used`.
 *  - chunk state FREE: release store by the flush thread after writing, pairs with the acquire
 *    load in str_next_chunk() before the owner reuses the memory.
 *  - `pos`: release by the owner (hot.c), acquire in str_flush_committed() (every period, at exit).
 *  - `running` and `str_wake_seq`: seq_cst, for the sleep/wake handshake.
 *
 * Exit. str_buffers_finish() (called once, from the exit path) stops the flush thread, then writes
 * what is queued and, for every registered thread, the committed part of its current chunk, then
 * rewrites the header with the TSC frequency calibrated over the whole run. When the main thread
 * has called pthread_exit and every other thread has exited, the flush thread does the same
 * itself and ends, so that glibc's last-thread exit(0) is not held up by it.
 *
 * Solo: a process without a flush thread (its task limits are tight, limits.c; its flush thread
 * could not be started; or it was stopped so that the program's fork or pthread_create could
 * succeed, str_reclaim). Nothing else changes: a thread that hands a chunk over writes the queue
 * itself right after (str_solo_write, under the writer flag), so its next chunk is free at once and
 * nothing waits or is lost; each thread's chunks still reach the file in order (the queue is
 * written whole, oldest first, by one writer at a time). What is lost is the period: a thread's
 * current chunk reaches the file when it is full, when the thread exits, at sledtrace_flush()
 * and at the end, so a SIGKILL loses what the threads hold. The dump and toggle signals are
 * served at the next chunk switch of any thread (str_solo_requests). A vfork child never writes (it
 * must take no lock): when its chunks are all queued it drops its events, counted.
 * Memory ordering: `solo` is set once, seq_cst, before the flush thread is woken to end, and
 * read with acquire by the threads that would otherwise wait for it.
 */
#include "str.h"
#include "stp.h"
#include "stf.h"
#include "bufs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
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
    str_write_queue();
    str_flush_committed(NULL); /* every thread's committed records; flight: every ring, as a dump */
    str_write_queue();
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
