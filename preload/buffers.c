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

/* Retires th, the calling thread's (TLS) buffers: its records go out, its counts are added to
 * the exited threads', the cursor is emptied. Asynchronous signals are blocked by the caller. */
static void retire(struct str_thread *th)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *cur = &str_cursor;
    cur->nest++;
    str_drain_side(cur);
    char name[16];
    str_names_get(th->self, th->birth, name);
    pthread_mutex_lock(&str_registry_lock);
    /* O(1): a walk of the list here, under the lock, made 4000 live threads exiting at once
     * cost 4000^2/2 visits of as many pages (retire was 15% of that run's CPU). */
    if (th->pprev) { /* a vfork child's buffers are never registered */
        *th->pprev = th->next;
        if (th->next)
            th->next->pprev = th->pprev;
        th->pprev = NULL;
    }
    if (str_nnamed < MAX_NAMED) {
        str_named[str_nnamed] = (struct str_named){.pid = th->pid, .tid = th->tid};
        memcpy(str_named[str_nnamed++].name, name, sizeof name);
    }
    pthread_mutex_unlock(&str_registry_lock);
    int can_hand_over = 1;
    if (th->dropping) {
        /* Its last chunk is already queued: wait for a free one to carry the gap's marker. */
        uint64_t tsc = str_now();
        can_hand_over = str_next_chunk(th, 1);
        if (can_hand_over) {
            str_start_block(cur, th, tsc);
            str_end_gap(cur, th);
        }
    }
    atomic_fetch_add_explicit(&str_exited_discarded, th->discarded, memory_order_relaxed);
    atomic_fetch_add_explicit(&str_exited_lost_nested, th->lost_nested, memory_order_relaxed);
    atomic_fetch_add_explicit(&str_exited_dropped, t->dropped, memory_order_relaxed);
    t->dropped = 0;
    t->th = NULL;
    /* The cursor is this thread's TLS, gone once it exits: nothing may read it through th from
     * now on (the flight policy's dump of an exited thread's ring, write_committed). hand_over
     * reads the cursor here, then publishes th with the chunk (release push, acquire in
     * take_queue). */
    uintptr_t last = atomic_load_explicit(&cur->pos, memory_order_relaxed);
    th->cursor = NULL;
    if (can_hand_over && atomic_load_explicit(&str_state, memory_order_relaxed) == ST_ACTIVE)
        str_hand_over_at(th, last, 1); /* the flush thread frees th after writing it */
    atomic_store_explicit(&cur->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&cur->pos, 0, memory_order_relaxed);
    cur->nest--;
}

/* pthread key destructor: the thread is exiting. */
void str_thread_exit(void *arg)
{
    struct str_thread *th = arg;
    struct str_tls *t = &str_tls;
    int saved = errno;
    if (!th || (t->th != th && !(t->held && t->fork_th == th)))
        return;
    /* No handler runs until the thread is retired (block_async): not while the lock is held,
     * nor between leaving the registry and queueing the last chunk (a handler calling _exit
     * there would find the thread's records nowhere). */
    sigset_t mask;
    block_async(&mask);
    if (t->held) {
        /* A held fork child's thread is ending (str_thread_strict and str_thread_share end the
         * hold before they get here): none of the code its fork interrupted runs again. Its
         * recording goes onto its cursor, the parent's buffers go; th may be those (the key's
         * value in a child that has recorded nothing): then there is nothing to retire. */
        str_end_hold(1);
        if (t->th != th) {
            pthread_sigmask(SIG_SETMASK, &mask, NULL);
            errno = saved;
            return;
        }
    }
    t->dead = 1;
    /* Before the buffers are handed over: once their last chunk is written, the flush thread
     * may give their slot, alternate stack included, to the next thread. */
    if (!str_altstack_thread_exit())
        th->slot_lost = 1;
    retire(th);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

void str_thread_share(void)
{
    str_tls.shared = 1;
    str_thread_strict();
}

void str_thread_unshare(void)
{
    str_tls.shared = 0;
    str_tls.dead = 0; /* the next event registers the thread afresh */
    str_thread_unstrict();
}

/* vfork: see str.h. Nothing is done unless the thread is tracing, outside the tracer (a vfork
 * from a handler that interrupted it leaves everything as it is: the child then records
 * nothing, see refill) and not already vforking or shared. The registry lock orders the switch
 * of th->cursor with the flush thread, which reads a thread's committed records through it. */
void str_vfork_begin(void)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *keep = &t->vfork_cursor;
    if (t->vfork) {
        t->vfork++; /* a vfork in a vfork child: its child records as the child's, see end */
        return;
    }
    int saved = errno;
    if (t->held && c->nest == 0) {
        /* A held fork child outside the tracer: no interrupted level is left, and the vfork
         * child must not end the hold in its parent's memory (hot.c would, at its first event). */
        sigset_t mask;
        block_async(&mask);
        str_end_hold(1);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (t->shared || t->dead || c->nest != 0 ||
        atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE ||
        (int32_t)syscall(SYS_getpid) != str_pid) {
        errno = saved;
        return;
    }
    sigset_t mask;
    block_async(&mask);
    c->nest++;
    str_drain_side(c);
    c->nest--;
    pthread_mutex_lock(&str_registry_lock);
    keep->last_tsc = c->last_tsc;
    keep->nest = 0;
    atomic_store_explicit(&keep->stable, atomic_load_explicit(&c->stable, memory_order_relaxed),
                          memory_order_relaxed);
    keep->side_r = c->side_r;
    atomic_store_explicit(&keep->side_w, atomic_load_explicit(&c->side_w, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&keep->end, atomic_load_explicit(&c->end, memory_order_relaxed),
                          memory_order_relaxed);
    /* Release: pairs with the acquire in write_committed, which reads pos through th->cursor. */
    atomic_store_explicit(&keep->pos, atomic_load_explicit(&c->pos, memory_order_relaxed),
                          memory_order_release);
    if (t->th)
        t->th->cursor = keep;
    pthread_mutex_unlock(&str_registry_lock);
    t->vfork_th = t->th;
    t->vfork_dropped = t->dropped;
    t->th = NULL;
    t->dropped = 0;
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->pos, 0, memory_order_relaxed);
    c->side_r = 0;
    atomic_store_explicit(&c->side_w, 0, memory_order_relaxed);
    t->vfork = 1;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

/* In the parent once vfork has returned (or failed): the child has exec'd or ended, and the
 * buffers it recorded into (t->th, not registered) are retired as an exiting thread's would
 * be, by this thread, on the cursor the child left. Then the thread's own state comes back. */
void str_vfork_end(void)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *keep = &t->vfork_cursor;
    if (!t->vfork)
        return;
    if (t->vfork > 1) {
        t->vfork--;
        return;
    }
    int saved = errno;
    sigset_t mask;
    block_async(&mask);
    if (t->th)
        retire(t->th);
    /* The child may have left the cursor anywhere (killed inside the tracer, or exec'd from a
     * handler): all of it is put back. */
    c->nest = 0;
    pthread_mutex_lock(&str_registry_lock);
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->pos, atomic_load_explicit(&keep->pos, memory_order_relaxed),
                          memory_order_release);
    c->last_tsc = keep->last_tsc;
    c->side_r = keep->side_r;
    atomic_store_explicit(&c->stable, atomic_load_explicit(&keep->stable, memory_order_relaxed),
                          memory_order_release);
    atomic_store_explicit(&c->side_w, atomic_load_explicit(&keep->side_w, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->end, atomic_load_explicit(&keep->end, memory_order_relaxed),
                          memory_order_relaxed);
    t->th = t->vfork_th;
    if (t->th)
        t->th->cursor = c;
    pthread_mutex_unlock(&str_registry_lock);
    t->dropped = t->vfork_dropped;
    t->vfork_th = NULL;
    t->vfork = 0;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    errno = saved;
}

void str_thread_strict(void)
{
    struct str_tls *t = &str_tls;
    if (t->held) {
        /* A held fork child's recording goes onto its cursor, to be retired with it; the
         * interrupted code may still run (strict mode entered from the handler that forked):
         * the parent's buffers stay mapped. */
        sigset_t mask;
        block_async(&mask);
        str_end_hold(0);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (t->th)
        str_thread_exit(t->th);
    atomic_signal_fence(memory_order_seq_cst);
    str_cursor.nest = STR_NEST_STRICT;
}

void str_thread_unstrict(void)
{
    str_cursor.nest = 0;
}

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
