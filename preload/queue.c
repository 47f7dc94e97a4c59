/* The flush queue, the registry of threads, and their writing to the file (part of the buffers
 * module: buffers.c lists its files).
 *
 * Threads. Each traced thread owns a fixed pool of `nchunks` chunks (memory is bounded and does
 * not grow with the trace). The thread fills one chunk at a time; a full chunk is QUEUED on a
 * lock-free LIFO (Treiber) list that the writer takes whole and reverses (str_write_queue), so each
 * thread's chunks reach the file in the order they were filled. The writer writes a chunk and
 * marks it FREE; a thread needing its next chunk waits (lossless) until that chunk is FREE again
 * (record.c). An exited thread's last chunk is `final`: once it is written, the thread's buffers
 * are freed (str_free_thread).
 *
 * Periods. The flush thread also writes what each registered thread has committed in its
 * current chunk (str_flush_committed), without involving the thread: an idle or blocked thread's
 * records reach the file within a period, and a SIGKILL loses at most one period. The rest of
 * that chunk follows later as a continuation block (trace_file.c str_write_chunk). The flight
 * policy writes each thread's ring instead (dump_thread).
 *
 * Memory ordering:
 *  - queue push: CAS with release on `str_queue_head`, pairs with the acquire exchange in
 * take_queue();
 *    it publishes the chunk's bytes and `used`.
 *  - chunk state FREE: release store by the writer after writing, pairs with the acquire
 *    load in str_next_chunk() (record.c) before the owner reuses the memory.
 *  - `pos`: release by the owner (hot.c), acquire in write_committed() (every period, at exit).
 * The registry (the threads with buffers, for the periods and the end) is under str_registry_lock.
 * Everything that writes runs under the writer flag (trace_file.c); this file calls only
 * trace_file.c's block writers.
 */
#include "str.h"
#include "stf.h"
#include "bufs.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

_Atomic(struct str_chunk *) str_queue_head;
pthread_mutex_t str_registry_lock = PTHREAD_MUTEX_INITIALIZER;
struct str_thread *str_registry;
int str_flushing_whole; /* the final flush or the crash path: up to pos, whatever stable says */

/* Writes what th has committed in chunk `idx` if that is the chunk it is filling: only bytes
 * below its published pos (acquire, pairing with the release in hot.c). A thread that just moved
 * to another chunk is caught next time. */
static void write_committed(struct str_thread *th, uint32_t idx)
{
    struct str_chunk *c = &th->chunks[idx];
    if (!th->cursor)
        return; /* the thread has exited: its last chunk is queued, `used` says what it holds */
    uintptr_t pos = atomic_load_explicit(&th->cursor->pos, memory_order_acquire);
    if (str_cfg.min_duration_ns && !str_flushing_whole) {
        /* Records above `stable` may still be taken back (hot.c exit_elide): not yet. Acquire:
         * pairs with the owner's release of stable, made after the records below it. */
        uintptr_t stable = atomic_load_explicit(&th->cursor->stable, memory_order_acquire);
        if (stable < pos)
            pos = stable;
    }
    uintptr_t base = (uintptr_t)c->base;
    if (atomic_load_explicit(&c->state, memory_order_relaxed) == STR_FILLING && pos > base &&
        pos <= base + str_cfg.chunk_size)
        str_write_chunk(th, c, pos - base);
}

/* Flight policy: writes what th's ring holds that is not in the file yet, oldest first: its kept
 * chunks from the one after the current one round to the current one (each taken KEPT ->
 * DUMPING while written, so the owner cannot overwrite it), then the committed part of the
 * current chunk if the owner is still on it. The owner, which must wait for the chunk being
 * written, can only trail the scan: whatever it records meanwhile lands behind it and goes out
 * with the next dump, so a thread's records reach the file in time order. */
static void dump_thread(struct str_thread *th)
{
    uint32_t c0 = atomic_load_explicit(&th->cur, memory_order_relaxed);
    for (uint32_t i = 1; i <= th->nchunks; i++) {
        struct str_chunk *c = &th->chunks[(c0 + i) % th->nchunks];
        int st = STR_KEPT;
        if (!atomic_compare_exchange_strong_explicit(&c->state, &st, STR_DUMPING,
                                                     memory_order_acquire, memory_order_relaxed))
            continue;
        str_write_chunk(th, c, c->used);
        atomic_store_explicit(&c->state, STR_KEPT, memory_order_release);
    }
    if (atomic_load_explicit(&th->cur, memory_order_relaxed) == c0)
        write_committed(th, c0);
}

/* Writes what every registered thread has committed in its current chunk, so that an idle or
 * blocked thread's records reach the file within a period. The owner keeps appending meanwhile:
 * only bytes below its published pos (acquire, pairing with the release in hot.c) are read. A
 * thread that just moved to another chunk is caught next time. Adds up side-ring losses. */
void str_flush_committed_locked(struct str_losses *final)
{
    for (struct str_thread *th = str_registry; th; th = th->next) {
        if (final) {
            final->lost_nested += th->lost_nested;
            final->discarded += th->discarded + th->gap;
            if (th->dropping && th->gap)
                str_write_gap_block(th);
        }
        if (str_cfg.policy == STR_FLIGHT) {
            dump_thread(th);
            continue;
        }
        /* The thread's chunks must reach the file in order: any it has handed over (older than
         * its current one) go first. The acquire on cur pairs with the release in str_next_chunk,
         * so every chunk handed over before the current one is counted in `queued`. */
        uint32_t idx = atomic_load_explicit(&th->cur, memory_order_acquire);
        if (atomic_load_explicit(&th->queued, memory_order_acquire) != 0) {
            str_write_queue();
            idx = atomic_load_explicit(&th->cur, memory_order_acquire);
            if (atomic_load_explicit(&th->queued, memory_order_acquire) != 0)
                continue; /* it handed another over meanwhile: next time */
        }
        write_committed(th, idx);
        if (final)
            str_write_elided_block(th);
    }
}

void str_flush_committed(struct str_losses *final)
{
    pthread_mutex_lock(&str_registry_lock);
    str_flush_committed_locked(final);
    pthread_mutex_unlock(&str_registry_lock);
}

/* Set by the crash path: the process is about to die and nothing is freed any more (a slot's
 * free takes a lock the interrupted thread may hold). */
_Atomic int str_dying;

/* A thread's buffers, its last chunk written: a slot goes back to slots.c (unless its thread
 * retired running on the slot's alternate stack: then it is never reused), a pool of its own
 * is unmapped. */
void str_free_thread(struct str_thread *th)
{
    size_t size = th->map_size;
    if (atomic_load_explicit(&str_dying, memory_order_relaxed))
        return; /* a fatal signal's flush (str_emergency_write): it may have interrupted a free */
    if (th->slot) {
        if (!th->slot_lost)
            str_slot_give(th);
        return;
    }
    munmap(th, size);
    str_mem_give(size);
}

/* Takes the whole queue, oldest first. */
static struct str_chunk *take_queue(void)
{
    struct str_chunk *c = atomic_exchange_explicit(&str_queue_head, NULL, memory_order_acquire);
    struct str_chunk *rev = NULL;
    while (c) {
        struct str_chunk *next = c->next;
        c->next = rev;
        rev = c;
        c = next;
    }
    return rev;
}

void str_write_queue(void)
{
    for (struct str_chunk *c = take_queue(); c;) {
        struct str_chunk *next = c->next;
        struct str_thread *th = c->owner;
        if (c->final && str_cfg.policy == STR_FLIGHT)
            dump_thread(th); /* an exited thread's ring goes out with its last chunk */
        str_write_chunk(th, c, c->used);
        c->flushed = 0;
        if (c->final) {
            str_write_elided_block(th);
            str_free_thread(th);
        } else {
            atomic_fetch_sub_explicit(&th->queued, 1, memory_order_relaxed);
            atomic_store_explicit(&c->state, STR_FREE, memory_order_release);
        }
        c = next;
    }
}

void str_queue_push(struct str_chunk *c)
{
    struct str_chunk *head = atomic_load_explicit(&str_queue_head, memory_order_relaxed);
    do {
        c->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&str_queue_head, &head, c, memory_order_release,
                                                    memory_order_relaxed));
}
