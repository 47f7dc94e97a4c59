/* Marks: which threads have handed chunks over that the writer has not written yet (part of
 * the buffers module: buffers.c lists its files).
 *
 * Every thread with buffers has an index (taken when its buffers are made, given back when they
 * are freed), a slot of `by_index`, and a bit in `str_marks`. A hand-over (record.c, switch.c)
 * stores the thread's `handed` count and then sets its bit (str_mark, bufs.h): two
 * fetch_or, the bit's word and the word's bit in `str_marks_sum`. The writer (queue.c
 * str_write_marked, under the writer flag) takes the summary words, then the marked words,
 * and drains each marked thread. A mark is a hint, never a duty: setting it twice, setting it
 * for a thread the writer has just drained, or setting it and being cut short by a signal
 * handler that never returns before the summary bit, costs at most a drain that finds nothing
 * (or a period's delay: the flush thread drains every registered thread each period). So a
 * chunk switch needs no lock and no system call to be found (issue 28.9), and the writer's
 * cost per wake-up grows with the threads that handed something over, not with the threads.
 *
 * Memory ordering: the owner's release store of `handed` comes before its release fetch_or of
 * the bit, then of the summary bit; the writer's acquire exchange of a summary word, then of a
 * marked word, sees the bits and the counts stored before them. `by_index[i]`: release store
 * when the thread's buffers are made (thread_pool.c, before its first hand-over), acquire load
 * by the writer; cleared by the writer alone, when it frees the buffers (queue.c), so the writer
 * never reads freed buffers through it. Indices are taken and given back with CAS on `used`
 * (lock-free: a vfork child, which takes no lock, has an index too).
 */
#include "str.h"
#include "bufs.h"

#include <string.h>

_Atomic uint64_t str_marks[STR_MARKS / 64];
_Atomic uint64_t str_marks_sum[STR_MARKS / 64 / 64];

static _Atomic uint64_t used[STR_MARKS / 64];
static _Atomic(struct str_thread *) by_index[STR_MARKS];
/* Where the next search for a free index starts (a hint, relaxed), and one past the highest
 * index ever taken (what a fork child clears). */
static _Atomic uint32_t hint, high;

uint32_t str_index_take(struct str_thread *th)
{
    uint32_t start = atomic_load_explicit(&hint, memory_order_relaxed) % (STR_MARKS / 64);
    for (uint32_t k = 0; k < STR_MARKS / 64; k++) {
        uint32_t w = (start + k) % (STR_MARKS / 64);
        uint64_t bits = atomic_load_explicit(&used[w], memory_order_relaxed);
        while (bits != ~0ull) {
            unsigned b = (unsigned)__builtin_ctzll(~bits);
            if (atomic_compare_exchange_weak_explicit(&used[w], &bits, bits | (1ull << b),
                                                      memory_order_relaxed, memory_order_relaxed)) {
                uint32_t i = w * 64 + b;
                atomic_store_explicit(&hint, w, memory_order_relaxed);
                uint32_t h = atomic_load_explicit(&high, memory_order_relaxed);
                while (h <= i && !atomic_compare_exchange_weak_explicit(
                                     &high, &h, i + 1, memory_order_relaxed, memory_order_relaxed))
                    ;
                /* Release: pairs with the writer's acquire load in str_marks_take. */
                atomic_store_explicit(&by_index[i], th, memory_order_release);
                return i;
            }
        }
    }
    return STR_NO_INDEX;
}

void str_index_give(struct str_thread *th)
{
    uint32_t i = th->index;
    if (i >= STR_MARKS || atomic_load_explicit(&by_index[i], memory_order_relaxed) != th)
        return; /* not its own any more (a fork child cleared it) */
    atomic_store_explicit(&by_index[i], NULL, memory_order_relaxed);
    atomic_fetch_and_explicit(&used[i / 64], ~(1ull << (i % 64)), memory_order_relaxed);
}

int str_marks_any(void)
{
    for (unsigned s = 0; s < STR_MARKS / 64 / 64; s++)
        if (atomic_load_explicit(&str_marks_sum[s], memory_order_seq_cst))
            return 1;
    return 0;
}

void str_marks_take(void (*fn)(struct str_thread *))
{
    for (unsigned s = 0; s < STR_MARKS / 64 / 64; s++) {
        uint64_t sum = atomic_exchange_explicit(&str_marks_sum[s], 0, memory_order_acquire);
        while (sum) {
            unsigned w = s * 64 + (unsigned)__builtin_ctzll(sum);
            sum &= sum - 1;
            uint64_t bits = atomic_exchange_explicit(&str_marks[w], 0, memory_order_acquire);
            while (bits) {
                uint32_t i = w * 64 + (unsigned)__builtin_ctzll(bits);
                bits &= bits - 1;
                struct str_thread *th = atomic_load_explicit(&by_index[i], memory_order_acquire);
                if (th)
                    fn(th);
            }
        }
    }
}

/* In a fork child: the parent's marks and indices go; keep's (the child's one thread's buffers,
 * or NULL) stays. */
void str_marks_fork_child(struct str_thread *keep)
{
    uint32_t h = atomic_load_explicit(&high, memory_order_relaxed);
    memset(str_marks, 0, sizeof str_marks);
    memset(str_marks_sum, 0, sizeof str_marks_sum);
    memset(used, 0, (h + 63) / 64 * sizeof used[0]);
    memset(by_index, 0, h * sizeof by_index[0]);
    atomic_store_explicit(&hint, 0, memory_order_relaxed);
    if (keep && keep->index < STR_MARKS) {
        atomic_fetch_or_explicit(&used[keep->index / 64], 1ull << (keep->index % 64),
                                 memory_order_relaxed);
        atomic_store_explicit(&by_index[keep->index], keep, memory_order_relaxed);
    }
}
