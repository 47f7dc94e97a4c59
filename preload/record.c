/* The slow path of recording: a thread's first event, chunk switches, the first chunk's
 * growth, and handing chunks over (part of the buffers module: buffers.c lists its files).
 *
 * str_refill is called by hot.c when the cursor's chunk has no room or is missing (str.h). The
 * thread hands its chunk over (QUEUED on the flush queue, queue.c; flight policy: KEPT), moves
 * to its next chunk once that is FREE (lossless: waits for it, waking the flush thread;
 * discard: drops its events in a gap, counted and marked), and starts a block there.
 *
 * Memory ordering:
 *  - chunk state FREE: acquire load in str_next_chunk(), pairs with the writer's release store
 * after
 *    writing (queue.c), before the owner reuses the memory.
 *  - `cur`: release in str_next_chunk(), pairs with the acquire in queue.c
 * str_flush_committed_locked
 *    (every chunk handed over before the current one is counted in `queued`).
 *  - `pos` and `stable`: release by the owner (str_start_block, str_end_gap, hot.c), acquire by the
 * writer.
 *  - `state`: acquire in refill, pairs with the release of ST_FORKED / ST_ACTIVE (forks.c).
 * Calls forks.c, thread_pool.c, flusher.c, queue.c.
 */
#include "str.h"
#include "stf.h"
#include "bufs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

void str_start_block(struct str_cursor *cur, struct str_thread *th, uint64_t tsc)
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
    cur->cpu = aux & 0xfff;
    cur->last_tsc = tsc;
    atomic_store_explicit(&c->state, STR_FILLING, memory_order_relaxed);
    /* pos before end: pos == 0 must imply end == 0 (see struct str_cursor in str.h). */
    atomic_store_explicit(&cur->stable, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_store_explicit(&cur->pos, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&cur->end, (uintptr_t)p + c->ready, memory_order_relaxed);
}

/* Hands the current chunk over, filled up to pos, if it holds records. */
void str_hand_over_at(struct str_thread *th, uintptr_t pos, int final)
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
    str_hand_over_at(th, atomic_load_explicit(&cur->pos, memory_order_relaxed), final);
}

/* Waits (lossless) until the next chunk is free; 0 if tracing stopped meanwhile. */
/* Moves to the thread's next chunk once it is free. Lossless: waits for it (waking the flush
 * thread). Discard: does not wait. Returns 0 if it could not (not free, or tracing stopped). */
int str_next_chunk(struct str_thread *th, int wait)
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
                 * thread by the release store of pos in str_start_block. */
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
void str_end_gap(struct str_cursor *cur, struct str_thread *th)
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
    if ((st == ST_STOPPING || st == ST_DONE) && th && !t->dead) {
        /* The process is ending (or a fatal signal's flush began): what the chunk holds up to
         * pos, recorded before, is still to be written by the final flush, which reads pos
         * (issue 24: zeroing it here lost those records, sometimes a whole trace, when a
         * thread filled its chunk while another called exit). end = pos: every later event
         * comes back here and is dropped (hot.c counts it). */
        atomic_store_explicit(&cur->end, atomic_load_explicit(&cur->pos, memory_order_relaxed),
                              memory_order_relaxed);
        t->overhead = 0;
        errno = saved;
        return;
    }
    if (st != ST_ACTIVE || t->dead)
        goto drop;
    if (!th) {
        th = str_new_thread(t->vfork, cur);
        if (!th) {
            t->nomem = !t->vfork; /* for good: its events are dropped without a slow path */
            goto drop;
        }
        *own = th;
        str_start_block(cur, th, tsc);
        t->overhead = STF_ID_TRACER_SETUP;
        errno = saved;
        return;
    }
    t->overhead = STF_ID_TRACER_SWITCH; /* str_next_chunk makes it a wait when it waits */
    if (th->dropping) {
        /* In a gap (discard policy): its chunk was handed over when the gap began. */
        if (!str_next_chunk(th, 0))
            goto drop;
        str_start_block(cur, th, tsc);
        str_end_gap(cur, th);
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
        if (!str_next_chunk(th, str_cfg.policy == STR_LOSSLESS)) {
            /* Solo, only a vfork child gets here: its chunks wait for its parent (a gap). */
            if ((str_cfg.policy == STR_DISCARD ||
                 atomic_load_explicit(&str_solo, memory_order_relaxed)) &&
                atomic_load_explicit(&str_state, memory_order_relaxed) == ST_ACTIVE)
                th->dropping = 1;
            goto drop;
        }
    }
    str_start_block(cur, th, tsc);
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
