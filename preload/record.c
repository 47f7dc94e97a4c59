/* The slow path of recording: a thread's first event, chunk switches the fast one
 * (switch.c) leaves to it, the first chunk's growth, and handing chunks over (part of the
 * buffers module: buffers.c lists its files).
 *
 * str_refill is called by hot.c when the cursor's chunk has no room or is missing (str.h), and
 * switch.c could not switch. The thread hands its chunk over (its `handed` count and its mark,
 * queue.c and marks.c; flight policy: KEPT), moves to its next chunk once that is written
 * (lossless: waits for it, waking the flush thread; discard: drops its events in a gap,
 * counted and marked), and starts a block there.
 *
 * A switch cut short. switch.c switches with the asynchronous signals deliverable: a handler
 * that leaves by longjmp, or a thread cancelled asynchronously, may leave it after it handed
 * its chunk over (one store) and before the cursor points at the next one. The cursor's pos
 * then lies outside the current chunk (str_in_chunk): refill and retire.c take that as "between
 * two chunks", never hand the old one over again, and take the next one as any switch does.
 *
 * Memory ordering:
 *  - `handed`: release store in hand-over, pairs with the writer's acquire (queue.c drain);
 *    `taken`: acquire load in str_next_chunk, pairs with the writer's release after writing.
 *  - flight: chunk state FREE / KEPT acquire loads and CAS here, paired with the dump's
 *    release stores (queue.c); `cur`: relaxed (the owner's; the dump reads it as a hint).
 *  - `pos` and `stable`: release by the owner (str_block_head, str_end_gap, hot.c), acquire by
 *    the writer.
 *  - `state`: acquire in refill, pairs with the release of ST_FORKED / ST_ACTIVE (forks.c).
 * Calls forks.c, thread_pool.c, flusher.c (and marks.c's inline str_mark).
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
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct str_chunk *c = str_cur_chunk(th);
    str_block_head(cur, c, th, tsc, &wall);
    atomic_store_explicit(&cur->end, (uintptr_t)c->base + c->ready, memory_order_relaxed);
}

/* Hands the current chunk over, filled up to pos (nothing of it if pos is not in it), if it
 * holds records; a final chunk always. */
void str_hand_over_at(struct str_thread *th, uintptr_t pos, int final)
{
    struct str_chunk *c = str_cur_chunk(th);
    c->used = str_in_chunk(c, pos) ? pos - (uintptr_t)c->base : 0;
    c->final = final;
    if (!final && c->used <= STR_BLOCK_HEAD)
        return;
    uint32_t h = atomic_load_explicit(&th->handed, memory_order_relaxed);
    if (str_cfg.policy == STR_FLIGHT && !final) {
        /* Release: a dumper's acquire CAS on the state sees `used` and the records. */
        atomic_store_explicit(&c->state, STR_KEPT, memory_order_release);
        return;
    }
    /* Read before the hand-over: once its final chunk is handed over, th may be freed. */
    uint32_t index = th->index, n = th->nchunks;
    uint32_t q = h + 1 - atomic_load_explicit(&th->taken, memory_order_relaxed);
    /* Release: pairs with the writer's acquire in queue.c drain (the records, used, final). */
    atomic_store_explicit(&th->handed, h + 1, memory_order_release);
    str_mark(index);
    /* Acquire: pairs with the seq_cst store that made the process solo. Solo, th may be freed
     * by the write (its final chunk): not touched after it. */
    if (atomic_load_explicit(&str_solo, memory_order_acquire))
        str_solo_write();
    else if (final || q * 2 >= n)
        str_wake_flusher();
}

/* Hands the current chunk over, filled up to the position of cursor cur (the caller's). */
static void hand_over(struct str_thread *th, struct str_cursor *cur, int final)
{
    str_hand_over_at(th, atomic_load_explicit(&cur->pos, memory_order_relaxed), final);
}

/* Moves to the thread's next chunk once it is free (written). Lossless: waits for it (waking
 * the flush thread). Discard: does not wait. Returns 0 if it could not (not free, or tracing
 * stopped). For the lossless and discard policies the next chunk is the current one
 * (handed % nchunks): the hand-over moved on already; this waits until it is written. */
int str_next_chunk(struct str_thread *th, int wait)
{
    int woke = 0;
    if (str_cfg.policy == STR_FLIGHT) {
        unsigned next = (atomic_load_explicit(&th->cur, memory_order_relaxed) + 1) % th->nchunks;
        struct str_chunk *c = &th->chunks[next];
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
        atomic_store_explicit(&th->cur, next, memory_order_relaxed);
        return 1;
    }
    struct str_chunk *c = str_cur_chunk(th);
    while (!str_next_chunk_free(th)) {
        if (atomic_load_explicit(&str_state, memory_order_relaxed) != ST_ACTIVE)
            return 0;
        if (atomic_load_explicit(&str_solo, memory_order_acquire)) {
            /* No flush thread (any more): write the handed chunks here; a vfork child cannot. */
            str_mark(th->index);
            if (!str_solo_write())
                return 0;
            if (!str_next_chunk_free(th))
                pause_ns(50000);
            continue;
        }
        if (!woke) {
            str_mark(th->index); /* cheap insurance: a mark cut short (marks.c) */
            str_wake_flusher();
            woke = 1;
        }
        if (!wait)
            return 0;
        str_tls.overhead = STF_ID_TRACER_WAIT;
        pause_ns(50000);
    }
    str_make_ready(c);
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
    struct str_chunk *c = str_cur_chunk(th);
    if (c->ready < str_cfg.chunk_size && str_in_chunk(c, pos) &&
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
    /* Between two chunks (the last handed over, by a switch cut short or one that could not
     * move on: see the top), or on a chunk with records: the next one, once it is free. On a
     * chunk with none (its block's head alone), a new block there. */
    int between = !str_in_chunk(c, pos) && str_cfg.policy != STR_FLIGHT;
    if (between || pos > (uintptr_t)c->base + STR_BLOCK_HEAD) {
        if (!between)
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
