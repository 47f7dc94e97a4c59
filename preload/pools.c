/* Exited threads' pools, kept for the threads that come next.
 *
 * Why. A thread's pool (its bookkeeping and SLEDTRACE_BUFFERS chunks, buffers.c) used to be
 * mapped at its first event and unmapped once its last chunk was written: mmap, a populate and
 * munmap per thread, each taking the process's mmap lock, which a program that starts many
 * short threads (thread-per-connection servers, std::async per task) contends for with its own
 * thread stacks. A pool given back here is handed, as it is, to the next thread being set up:
 * no system call, and its chunks that were used are already resident.
 *
 * What. At most KEEP pools, of the default size only (a pool halved under a memory limit is
 * unmapped as before). A kept pool's memory stays counted in the buffers' budget (limits.c):
 * it is neither given back there nor taken again when reused. Resident memory held here is at
 * most KEEP pools' used chunks.
 *
 * Threads and signals. Givers are the flush thread, the final flush and a fork child freeing
 * what it inherited; takers are threads setting up (the slow path, asynchronous signals
 * blocked). The slots are atomic pointers: a give stores into an empty slot with a CAS, a take
 * empties a full one with an exchange, so each pool has one owner at any time, no lock is held
 * across fork (a child inherits the slots, and its pools are its own private copies), and
 * there is no ABA (a slot is never read and then written on the strength of that read).
 * Memory ordering: the giver's release CAS publishes the pool's last writes (its thread's
 * chunks were written out) to the taker's acquire exchange.
 */
#include "str.h"

#include <stdatomic.h>

enum { KEEP = 16 };

static _Atomic(void *) slots[KEEP];

int str_pool_give(void *pool, size_t size, size_t default_size)
{
    if (size != default_size)
        return 0;
    for (unsigned i = 0; i < KEEP; i++) {
        void *empty = NULL;
        /* Release: pairs with the acquire exchange in str_pool_take. */
        if (atomic_load_explicit(&slots[i], memory_order_relaxed) == NULL &&
            atomic_compare_exchange_strong_explicit(&slots[i], &empty, pool, memory_order_release,
                                                    memory_order_relaxed))
            return 1;
    }
    return 0;
}

void *str_pool_take(void)
{
    for (unsigned i = 0; i < KEEP; i++)
        if (atomic_load_explicit(&slots[i], memory_order_relaxed) != NULL) {
            /* Acquire: pairs with the release CAS in str_pool_give. */
            void *p = atomic_exchange_explicit(&slots[i], NULL, memory_order_acquire);
            if (p)
                return p;
        }
    return NULL;
}
