/* The common chunk switch, on the hot path's terms (part of the buffers module: buffers.c lists
 * its files; built with hot.c, -mgeneral-regs-only).
 *
 * CONTRACT (hot.c's, kept here too): no lock, no libc call, no vector register, nothing
 * instrumented; it runs on the program's stack at the outermost level of the hot path (`nest`
 * is set: a signal handler's events meanwhile go to the side ring). Its one possible system
 * call is the flush thread's wake-up (futex), and only when that thread sleeps while the
 * thread has half its chunks or more handed over: no system call in the common case (issue
 * 28.9: the slow path's two rt_sigprocmask made every switch two system calls, and the
 * switch's tail on a loaded machine was the scheduler's).
 *
 * What it does, when everything is ordinary (else it returns 0 and the slow path, record.c,
 * does the whole of it with the asynchronous signals blocked): the lossless or discard
 * policy, a thread with its buffers whole, in the process they belong to, not solo, the
 * current chunk full of records and the next one written and present. Then:
 *   1. end = SWITCHING (1): from here on, any event at the outermost level goes to the slow
 *      path;
 *   2. the chunk's `used` and `final`;
 *   3. `handed` + 1 (release): the hand-over, one store;
 *   4. the thread's mark (marks.c), and the wake-up if due;
 *   5. a block in the next chunk (str_block_head): pos on it, then end.
 * Steps 1 and 5 store `end` by compare-and-swap against the value the switch last saw: a fork
 * child whose fork interrupted the switch (a handler's) is held, and forks.c's end = 0 must
 * survive the switch resuming in the child, or the child's events would go on into the
 * parent's buffers instead of reaching the slow path that ends the hold (hot.c).
 * Signals stay deliverable throughout. A handler that returns finds the switch where it left
 * it. One that never returns (longjmp, a thread's asynchronous cancellation, exit, fork)
 * leaves the steps before its arrival done and the others not: before 3, the chunk is still
 * the thread's current one, filled up to pos, and the slow path hands it over next time; after
 * 3, pos lies outside the current chunk (handed % nchunks), which every reader takes as
 * "between two chunks" (record.c refill and retire.c move on; queue.c write_committed writes
 * nothing of a chunk pos is not in; the final flush writes the handed chunk); steps 4 and 5
 * are repeated by whoever comes next (a mark is a hint; a block's start is made again). A
 * handler's fork leaves the child held (hot.c): the switch it resumes works on the parent's
 * buffers, whose marks the child's table does not know (marks.c str_marks_fork_child), and
 * cannot give the child's cursor room (the compare-and-swaps above).
 *
 * A child made by a raw vfork or clone(CLONE_VM) system call, on its parent's TLS and unseen by
 * vfork.c's wrappers, shares the same-process marker: its events go on into the suspended
 * parent's buffers, as the fast path's did before (only the slow path's getpid and kcmp tell
 * such a child apart). libc's own (posix_spawn, system) run no instrumented code there.
 *
 * Memory ordering: `taken` acquire (pairs with the writer's release after writing the next
 * chunk, queue.c); `handed` release (pairs with the writer's acquire in drain); the mark's
 * release fetch_or (marks.c); str_wake_seq / str_flusher_sleeping seq_cst (flusher.c's
 * handshake); pos/stable release in str_block_head. The compare-and-swaps on `end` are
 * relaxed: they order nothing with another thread, only with a handler on this one.
 */
#include "str.h"
#include "bufs.h"

#include <time.h>

/* `end` while a switch is under way: past nothing (every event goes to the slow path), and
 * not 0, the value a fork child's handler stores (below). */
#define SWITCHING ((uintptr_t)1)

int str_fast_switch(struct str_cursor *cur, uint64_t tsc)
{
    const struct str_tls *t = &str_tls;
    struct str_thread *th = t->th;
    /* end first, then `held`: a fork from a handler after this load makes end 0 (below). */
    uintptr_t e0 = atomic_load_explicit(&cur->end, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (cur != &str_cursor || !th || e0 == 0 || t->held || t->vfork || t->shared || t->dead ||
        th->dropping || str_cfg.policy == STR_FLIGHT || !str_vdso_clock)
        return 0;
    /* Acquire: pairs with the release of ST_ACTIVE (forks.c, flusher.c), as in refill. */
    if (atomic_load_explicit(&str_state, memory_order_acquire) != ST_ACTIVE ||
        atomic_load_explicit(&str_solo, memory_order_acquire) || !str_same_process_marked())
        return 0;
    uint32_t n = th->nchunks;
    uint32_t h = atomic_load_explicit(&th->handed, memory_order_relaxed); /* the owner's */
    struct str_chunk *c = &th->chunks[h % n], *next = &th->chunks[(h + 1) % n];
    uintptr_t pos = atomic_load_explicit(&cur->pos, memory_order_relaxed);
    if (c->ready != str_cfg.chunk_size || !str_in_chunk(c, pos) ||
        pos <= (uintptr_t)c->base + STR_BLOCK_HEAD || next->ready != str_cfg.chunk_size)
        return 0;
    /* Acquire: the next chunk is written (queue.c drain's release), its memory ours. */
    uint32_t q = h + 1 - atomic_load_explicit(&th->taken, memory_order_acquire);
    if (q >= n)
        return 0; /* not written yet: the slow path waits (lossless) or drops (discard) */
    struct timespec wall;
    if (str_vdso_clock(CLOCK_REALTIME, &wall) != 0)
        return 0;
    /* 1. One instruction, compared with what was read: a fork from a handler since then (the
     * child is held: forks.c stored end = 0, which must stay so) makes it fail, and the child
     * leaves the switch to the slow path, which leaves the parent's buffers alone. */
    if (!atomic_compare_exchange_strong_explicit(&cur->end, &e0, SWITCHING, memory_order_relaxed,
                                                 memory_order_relaxed))
        return 0;
    str_tls.overhead = STF_ID_TRACER_SWITCH;
    /* 2. */
    c->used = pos - (uintptr_t)c->base;
    c->final = 0;
    /* 3. Release: pairs with the writer's acquire (queue.c drain): the records and `used`. */
    atomic_store_explicit(&th->handed, h + 1, memory_order_release);
    /* 4. */
    str_mark(th->index);
    if (q * 2 >= n)
        str_wake_flusher();
    /* 5. pos on the new block (the pair pos, SWITCHING still sends every event to the slow
     * path), then end, compared again: a fork since step 1 left end = 0 in the child. */
    str_block_head(cur, next, th, tsc, &wall);
    uintptr_t sw = SWITCHING;
    atomic_compare_exchange_strong_explicit(&cur->end, &sw, (uintptr_t)next->base + next->ready,
                                            memory_order_relaxed, memory_order_relaxed);
    return 1;
}
