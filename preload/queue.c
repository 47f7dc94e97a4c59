/* Writing the threads' chunks, and the registry of threads (part of the buffers module:
 * buffers.c lists its files).
 *
 * Threads. Each traced thread owns a fixed pool of `nchunks` chunks (memory is bounded and does
 * not grow with the trace), filled in turn as a ring. A full chunk is handed over by one store
 * of the thread's `handed` count, and the thread's mark is set (marks.c); the writer drains
 * each marked thread (str_write_marked): it writes the chunks from `taken` up to `handed`, in
 * the order they were filled, and gives each back by storing `taken` (record.c waits for it,
 * lossless, or drops until then, discard). An exited thread's last chunk is `final`: once it
 * is written, the thread's buffers are freed (str_free_thread). The flight policy keeps its
 * full chunks instead (KEPT) and writes them only when asked (dump_thread).
 *
 * Periods. The flush thread also writes what each registered thread has committed in its
 * current chunk (str_flush_committed), without involving the thread: an idle or blocked thread's
 * records reach the file within a period, and a SIGKILL loses at most one period. The rest of
 * that chunk follows later as a continuation block (trace_file.c str_write_chunk). The period's
 * walk drains every registered thread first, marked or not: a mark cut short (marks.c) delays
 * a chunk by a period at most.
 *
 * Memory ordering:
 *  - `handed`: release by the owner (record.c, switch.c), acquire here: publishes the chunk's
 *    bytes, `used` and `final`.
 *  - `taken`: release here after writing, acquire by the owner (record.c str_next_chunk,
 *    switch.c, str.h str_next_chunk_free) before it reuses the memory.
 *  - `pos`: release by the owner (hot.c), acquire in write_committed() (every period, at exit).
 * The registry (the threads with buffers, for the periods and the end) is under str_registry_lock.
 * Everything that writes runs under the writer flag (trace_file.c); this file calls marks.c and
 * trace_file.c's block writers.
 */
#include "str.h"
#include "stf.h"
#include "bufs.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

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
        return; /* the thread has exited: its last chunk is handed over, `used` says what it holds */
    uintptr_t pos = atomic_load_explicit(&th->cursor->pos, memory_order_acquire);
    if (str_cfg.min_duration_ns && !str_flushing_whole) {
        /* Records above `stable` may still be taken back (hot.c exit_elide): not yet. Acquire:
         * pairs with the owner's release of stable, made after the records below it. */
        uintptr_t stable = atomic_load_explicit(&th->cursor->stable, memory_order_acquire);
        if (stable < pos)
            pos = stable;
    }
    if (atomic_load_explicit(&c->state, memory_order_relaxed) == STR_FILLING &&
        str_in_chunk(c, pos))
        str_write_chunk(th, c, pos - (uintptr_t)c->base);
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

/* Writes th's chunks handed over and not yet written, oldest first, and gives each back;
 * frees th after its final chunk. Returns the `handed` count it drained up to. */
static uint32_t drain(struct str_thread *th)
{
    /* Acquire: pairs with the owner's release store of handed (record.c, switch.c). */
    uint32_t h = atomic_load_explicit(&th->handed, memory_order_acquire);
    uint32_t k = atomic_load_explicit(&th->taken, memory_order_relaxed); /* the writer's own */
    while (k != h) {
        struct str_chunk *c = &th->chunks[k % th->nchunks];
        if (str_cfg.policy == STR_FLIGHT) {
            /* Only the final chunk is counted: the ring goes out before it. */
            c = &th->chunks[atomic_load_explicit(&th->cur, memory_order_relaxed)];
            dump_thread(th);
        }
        str_write_chunk(th, c, c->used);
        c->flushed = 0;
        if (c->final) {
            /* Counted first: a crash's flush does not free th, and may drain it again. */
            atomic_store_explicit(&th->taken, h, memory_order_relaxed);
            str_write_elided_block(th);
            str_free_thread(th);
            return h;
        }
        atomic_store_explicit(&c->state, STR_FREE, memory_order_relaxed);
        /* Release: pairs with the owner's acquire of taken before it reuses the chunk. */
        atomic_store_explicit(&th->taken, ++k, memory_order_release);
    }
    return h;
}

static void drain_marked(struct str_thread *th)
{
    (void)drain(th);
}

void str_write_marked(void)
{
    str_marks_take(drain_marked);
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
         * its current one) go first. A registered thread has no final chunk: drain never frees
         * it here. */
        uint32_t h = drain(th);
        if (atomic_load_explicit(&th->handed, memory_order_acquire) != h)
            continue; /* it handed another over meanwhile: next time */
        write_committed(th, h % th->nchunks);
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
    str_index_give(th);
    if (th->slot) {
        if (!th->slot_lost)
            str_slot_give(th);
        return;
    }
    munmap(th, size);
    str_mem_give(size);
}
