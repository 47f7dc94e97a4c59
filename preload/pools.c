/* Memory of exited threads, kept for the threads that come next: their pools (buffers.c) and
 * their alternate signal stacks (altstack.c).
 *
 * Why. A thread's pool (its bookkeeping and SLEDTRACE_BUFFERS chunks) used to be mapped at its
 * first event and unmapped once its last chunk was written, and its alternate stack mapped,
 * guarded and unmapped likewise: five system calls per thread that take the process's mmap
 * lock, which a program that starts many short threads (thread-per-connection servers,
 * std::async per task) contends for with its own thread stacks. What is given back here is
 * handed, as it is, to the next thread being set up: no system call, and what was used of it
 * is already resident.
 *
 * What. A `struct str_keep` holds at most STR_KEEP mappings of one size (pools of the default
 * size only: a pool halved under a memory limit is unmapped as before). A kept pool's memory
 * stays counted in the buffers' budget (limits.c): it is neither given back there nor taken
 * again when reused. Resident memory held here is at most STR_KEEP pools' used chunks and
 * STR_KEEP alternate stacks.
 *
 * Address space. What is kept counts against RLIMIT_AS: when a mapping fails with ENOMEM, its
 * caller drains its kept ones (str_keep_drain) and tries once more, so a program near its
 * limit is no worse off than when every thread's memory was unmapped at its exit.
 *
 * Threads and signals. Givers are the flush thread, the final flush, a fork child freeing what
 * it inherited and exiting threads; takers are threads setting up (the slow path, asynchronous
 * signals blocked). The slots are atomic pointers: a give stores into an empty slot with a
 * CAS, a take empties a full one with an exchange, so each mapping has one owner at any time,
 * no lock is held across fork (a child inherits the slots, and their memory is its own private
 * copy), and there is no ABA (a slot is never written on the strength of an earlier read).
 * Memory ordering: the giver's release CAS publishes its last writes to the mapping to the
 * taker's acquire exchange.
 */
#include "str.h"

#include <sys/mman.h>

int str_keep_give(struct str_keep *k, void *map)
{
    for (unsigned i = 0; i < STR_KEEP; i++) {
        void *empty = NULL;
        /* Release: pairs with the acquire exchange in str_keep_take. */
        if (atomic_load_explicit(&k->slots[i], memory_order_relaxed) == NULL &&
            atomic_compare_exchange_strong_explicit(&k->slots[i], &empty, map, memory_order_release,
                                                    memory_order_relaxed))
            return 1;
    }
    return 0;
}

size_t str_keep_drain(struct str_keep *k, size_t size)
{
    size_t n = 0;
    for (void *p; (p = str_keep_take(k)) != NULL; n++)
        munmap(p, size);
    return n;
}

void *str_keep_take(struct str_keep *k)
{
    for (unsigned i = 0; i < STR_KEEP; i++)
        if (atomic_load_explicit(&k->slots[i], memory_order_relaxed) != NULL) {
            /* Acquire: pairs with the release CAS in str_keep_give. */
            void *p = atomic_exchange_explicit(&k->slots[i], NULL, memory_order_acquire);
            if (p)
                return p;
        }
    return NULL;
}
