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
 *    load in next_chunk() before the owner reuses the memory.
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

/* ---- chunks, called by traced threads ---- */

static void start_block(struct str_cursor *cur, struct str_thread *th, uint64_t tsc)
{
    struct str_chunk *c = &th->chunks[atomic_load_explicit(&th->cur, memory_order_relaxed)];
    uint8_t *p = c->base;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    unsigned aux;
    __builtin_ia32_rdtscp(&aux);
    memset(p, 0, STF_META_SIZE); /* BufferExtents, filled when written */
    stf_meta_new_buffer(p + 16, th->tid);
    stf_meta_walltime(p + 32, wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
    stf_meta_pid(p + 48, th->pid);
    stf_meta_new_cpu(p + 64, (uint16_t)(aux & 0xfff), tsc);
    cur->last_tsc = tsc;
    atomic_store_explicit(&c->state, STR_FILLING, memory_order_relaxed);
    /* pos before end: pos == 0 must imply end == 0 (see struct str_cursor in str.h). */
    atomic_store_explicit(&cur->stable, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_store_explicit(&cur->pos, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&cur->end, (uintptr_t)p + c->ready, memory_order_relaxed);
}

/* Hands the current chunk over, filled up to pos, if it holds records. */
static void hand_over_at(struct str_thread *th, uintptr_t pos, int final)
{
    struct str_chunk *c = &th->chunks[atomic_load_explicit(&th->cur, memory_order_relaxed)];
    c->used = pos ? pos - (uintptr_t)c->base : 0;
    c->final = final;
    if (!final && c->used <= STR_BLOCK_HEAD)
        return;
    if (!final && str_cfg.policy == STR_FLIGHT) {
        /* Release: a dumper's acquire CAS on the state sees `used` and the records. */
        atomic_store_explicit(&c->state, STR_KEPT, memory_order_release);
        return;
    }
    atomic_store_explicit(&c->state, STR_QUEUED, memory_order_relaxed);
    uint32_t q = atomic_fetch_add_explicit(&th->queued, 1, memory_order_relaxed) + 1;
    str_queue_push(c);
    /* Acquire: pairs with the seq_cst store that made the process solo. Solo, th may be freed
     * by the write (its final chunk): not touched after it. */
    if (atomic_load_explicit(&str_solo, memory_order_acquire))
        str_solo_write();
    else if (final || q * 2 >= th->nchunks)
        str_wake_flusher();
}

/* Hands the current chunk over, filled up to the position of cursor cur (the caller's). */
static void hand_over(struct str_thread *th, struct str_cursor *cur, int final)
{
    hand_over_at(th, atomic_load_explicit(&cur->pos, memory_order_relaxed), final);
}

/* Waits (lossless) until the next chunk is free; 0 if tracing stopped meanwhile. */
/* Moves to the thread's next chunk once it is free. Lossless: waits for it (waking the flush
 * thread). Discard: does not wait. Returns 0 if it could not (not free, or tracing stopped). */
static int next_chunk(struct str_thread *th, int wait)
{
    unsigned next = (atomic_load_explicit(&th->cur, memory_order_relaxed) + 1) % th->nchunks;
    struct str_chunk *c = &th->chunks[next];
    int woke = 0;
    if (str_cfg.policy == STR_FLIGHT) {
        /* The oldest chunk is overwritten, unless a dump is writing it right now: wait for it. */
        for (;;) {
            int st = atomic_load_explicit(&c->state, memory_order_acquire);
            if (st == STR_FREE)
                break;
            if (st == STR_KEPT &&
                atomic_compare_exchange_strong_explicit(
                    &c->state, &st, STR_FILLING, memory_order_acq_rel, memory_order_acquire)) {
                /* Ours alone now: what a dump wrote of it is history. Published to the flush
                 * thread by the release store of pos in start_block. */
                c->flushed = 0;
                break;
            }
            if (atomic_load_explicit(&str_state, memory_order_relaxed) != ST_ACTIVE)
                return 0;
            str_tls.overhead = STF_ID_TRACER_WAIT;
            pause_ns(20000);
        }
        str_make_ready(c);
        /* Release: pairs with the acquire in str_flush_committed_locked (queued is already
         * counted). */
        atomic_store_explicit(&th->cur, next, memory_order_release);
        return 1;
    }
    while (atomic_load_explicit(&c->state, memory_order_acquire) != STR_FREE) {
        if (atomic_load_explicit(&str_state, memory_order_relaxed) != ST_ACTIVE)
            return 0;
        if (atomic_load_explicit(&str_solo, memory_order_acquire)) {
            /* No flush thread (any more): write the queue here; a vfork child cannot. */
            if (!str_solo_write())
                return 0;
            if (atomic_load_explicit(&c->state, memory_order_acquire) == STR_FREE)
                break;
            pause_ns(50000); /* a dump is writing it (flight): it comes back soon */
            continue;
        }
        if (!woke) {
            str_wake_flusher();
            woke = 1;
        }
        if (!wait)
            return 0;
        str_tls.overhead = STF_ID_TRACER_WAIT;
        pause_ns(50000);
    }
    str_make_ready(c);
    /* Release: pairs with the acquire in str_flush_committed_locked (queued is already counted). */
    atomic_store_explicit(&th->cur, next, memory_order_release);
    return 1;
}

/* Discard policy: the thread has a chunk again; its block starts with the loss marker. */
static void end_gap(struct str_cursor *cur, struct str_thread *th)
{
    uintptr_t pos = atomic_load_explicit(&cur->pos, memory_order_relaxed);
    stf_encode_loss((uint8_t *)pos, th->gap);
    th->discarded += th->gap;
    th->gap = 0;
    th->dropping = 0;
    atomic_store_explicit(&cur->pos, pos + STF_LOSS_SIZE, memory_order_release);
}

static void refill(struct str_cursor *cur, uint64_t tsc);

/* The slow path changes the thread's chunks in several steps (hand over, move on, start a
 * block): asynchronous cancellation must not cut through them (the thread's exit would hand
 * the same chunk over again), so it is held off meanwhile; deferred cancellation finds no
 * cancellation point here (pause_ns). */
void str_refill(void *arg)
{
    /* Asynchronous signals are blocked by the caller (hot.c slow_call): a handler that left
     * with longjmp from in here could leave the registry lock held or a chunk half handed
     * over (see the longjmp family in signals.c), one that calls _exit would wait for that
     * lock forever. */
    int old_type;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old_type);
    const struct str_refill_req *req = arg;
    refill(req->cursor, req->tsc);
    str_solo_requests();
    if (old_type != PTHREAD_CANCEL_DEFERRED)
        pthread_setcanceltype(old_type, &old_type);
}

int str_tracing(void)
{
    int st =
        atomic_load_explicit(&str_state, memory_order_relaxed); /* a hint: nothing is published */
    return st == ST_ACTIVE || st == ST_FORKED;
}

static void refill(struct str_cursor *cur, uint64_t tsc)
{
    struct str_tls *t = &str_tls;
    /* A held fork child's own cursor is the parent's, left to the tracer code the fork
     * interrupted, whose event is the parent's (hot.c): it gets nothing, and drops it unsaid. */
    if (t->held && cur == &str_cursor)
        return;
    struct str_thread **own = cur == &str_cursor ? &t->th : &t->fork_th;
    int saved = errno;
    int proc = str_new_process_check();
    if (proc == PROC_SHARED && !t->vfork) {
        /* A child sharing the memory (made by a raw system call: the wrappers of vfork.c did
         * not see it) on a cursor that is not its own: leave everything as it is. */
        errno = saved;
        return;
    }
    /* A vforking thread itself, between putting its state aside and the system call (a
     * signal handler's events): dropped and counted, its buffers are the child's now. */
    if (t->vfork && proc != PROC_SHARED)
        goto drop;
    struct str_thread *th = *own;
    int st = atomic_load_explicit(&str_state, memory_order_acquire);
    if (st == ST_FORKED)
        st = str_fork_activate();
    if (st != ST_ACTIVE || t->dead)
        goto drop;
    if (!th) {
        th = str_new_thread(t->vfork, cur);
        if (!th) {
            t->nomem = !t->vfork; /* for good: its events are dropped without a slow path */
            goto drop;
        }
        *own = th;
        start_block(cur, th, tsc);
        t->overhead = STF_ID_TRACER_SETUP;
        errno = saved;
        return;
    }
    t->overhead = STF_ID_TRACER_SWITCH; /* next_chunk makes it a wait when it waits */
    if (th->dropping) {
        /* In a gap (discard policy): its chunk was handed over when the gap began. */
        if (!next_chunk(th, 0))
            goto drop;
        start_block(cur, th, tsc);
        end_gap(cur, th);
        errno = saved;
        return;
    }
    uintptr_t pos = atomic_load_explicit(&cur->pos, memory_order_relaxed);
    struct str_chunk *c = &th->chunks[atomic_load_explicit(&th->cur, memory_order_relaxed)];
    if (c->ready < str_cfg.chunk_size && pos > (uintptr_t)c->base &&
        pos <= (uintptr_t)c->base + c->ready &&
        atomic_load_explicit(&cur->end, memory_order_relaxed) == (uintptr_t)c->base + c->ready) {
        /* The first chunk, filled as far as it is present: more of it, doubling (no new block:
         * its records go on where they are). */
        size_t more =
            c->ready < str_cfg.chunk_size - c->ready ? c->ready : str_cfg.chunk_size - c->ready;
        str_populate(c->base + c->ready, more);
        c->ready += more;
        atomic_store_explicit(&cur->end, (uintptr_t)c->base + c->ready, memory_order_relaxed);
        errno = saved;
        return;
    }
    if (pos > (uintptr_t)c->base + STR_BLOCK_HEAD) {
        hand_over(th, cur, 0);
        if (!next_chunk(th, str_cfg.policy == STR_LOSSLESS)) {
            /* Solo, only a vfork child gets here: its chunks wait for its parent (a gap). */
            if ((str_cfg.policy == STR_DISCARD ||
                 atomic_load_explicit(&str_solo, memory_order_relaxed)) &&
                atomic_load_explicit(&str_state, memory_order_relaxed) == ST_ACTIVE)
                th->dropping = 1;
            goto drop;
        }
    }
    start_block(cur, th, tsc);
    errno = saved;
    return;
drop:
    t->overhead = 0;
    /* end before pos: the fast path relies on pos == 0 implying end == 0. */
    atomic_store_explicit(&cur->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&cur->pos, 0, memory_order_relaxed);
    errno = saved;
}

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
        can_hand_over = next_chunk(th, 1);
        if (can_hand_over) {
            start_block(cur, th, tsc);
            end_gap(cur, th);
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
        hand_over_at(th, last, 1); /* the flush thread frees th after writing it */
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
