/* Per-thread memory: slots carved from a few large regions.
 *
 * Why. Every traced thread needs a pool (its bookkeeping and SLEDTRACE_BUFFERS chunks,
 * thread_pool.c) and an alternate signal stack with a guard page below it (altstack.c). Mapped
 * for each thread, they cost five system calls that take the process's mmap lock for writing
 * (two mmap, an mprotect, two munmap), and the program's own thread stacks wait for that lock:
 * 4000 threads alive at once ran 2.6x their untraced wall time, most of it in the kernel's
 * mmap lock and TLB shootdowns (issue 24). Keeping up to 16 exited threads' mappings helped
 * threads that come and go, not threads that live together.
 *
 * What. A slot is [pool | guard page | alternate stack], one size for the whole process (the
 * default pool's: a pool halved under a memory limit, and a vfork child's, are still mapped
 * on their own by thread_pool.c). Slots are carved from regions mapped 1, 1, 2, 4 ... then 64
 * slots at a time, never unmapped; a region is address space until its slots are used. A slot's
 * guard page is installed once, when the slot is first carved: MADV_GUARD_INSTALL (Linux
 * 6.13) marks it in the page tables with the mmap lock taken for reading and splits no
 * mapping; older kernels get an mprotect. The guard stays through MADV_DONTNEED.
 *
 * Free slots. A freed slot goes on the warm list: its pages stay as the last thread left them
 * (the next thread finds its bookkeeping and the chunks it will use resident: no fault, no
 * populate). Warm slots past STR_KEEP are made cold in batches (cool): when 4 x STR_KEEP are
 * warm, and after each pass of the flush thread; a cold slot's pages are given back
 * (MADV_DONTNEED: zero again, not resident) and it leaves the memory budget. A thread takes
 * the warm slot freed last, else a cold one, else a fresh one, else a new region's.
 *
 * Budget (limits.c). A slot's pool counts from when it is taken cold or fresh until it is
 * made cold; warm slots stay counted, as the kept pools did.
 *
 * Threads and signals. All state is under slots_lock (the cooling bitmap under cool_lock, taken
 * first), mutexes taken with the asynchronous signals blocked by every caller (thread_pool.c:
 * thread set-up in the slow path; queue.c: frees by the flush thread, the final flush, a fork
 * child and a held child's end). MADV_DONTNEED runs outside them. Fork: str_slots_fork_prepare
 * takes both (forks.c, after the registry's), the parent releases them and the child
 * re-initialises them; a fork made without the atfork handlers may copy the lists in the
 * middle of an update, but every update is committed by one store of a list head or a count,
 * so the child can at worst lose a slot. A vfork child never comes here (it must take no
 * lock).
 */
#include "str.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

enum { MAX_REGIONS = 512, GUARD = 4096, STACK_MIN = 65536 };

/* A free slot's link, in its first bytes (the pool's bookkeeping, rewritten when taken). */
struct free_slot {
    struct free_slot *next;
};

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pool_size, stack_size, slot_size; /* set by the first take */
static uint8_t *region_at[MAX_REGIONS];
static size_t region_len[MAX_REGIONS];
static unsigned nregions;
static uint8_t *carve, *carve_end; /* the newest region's slots not handed out yet */
static struct free_slot *warm, *cold;
/* Warm slots: changed under slots_lock; read without it by str_slots_cool (relaxed: a hint,
 * checked again under the lock), so that the flush thread takes no lock when there is nothing
 * to cool: it loops from start-up on, while the program's own pthread_mutex_lock, which the
 * runtime's calls may reach (an interposing program), may not be ready to run. */
static _Atomic unsigned nwarm;
static int guard_by_mprotect; /* MADV_GUARD_INSTALL refused (older kernel) */

static size_t page_up(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

/* The geometry, from the first pool size asked for. */
static void set_geometry(size_t pool)
{
    size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
    size_t stack = 4 * min > STACK_MIN ? 4 * min : STACK_MIN;
    pool_size = page_up(pool);
    stack_size = page_up(stack);
    slot_size = pool_size + GUARD + stack_size;
}

/* A new region of up to `want` slots (fewer if the mapping fails for want of room); 0 if none. */
static int new_region(unsigned want)
{
    if (nregions == MAX_REGIONS)
        return 0;
    for (unsigned n = want; n >= 1; n /= 2) {
        size_t len = n * slot_size;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            continue;
        str_munlock_new(m, len); /* under mlockall(MCL_FUTURE): memlock.c */
        region_at[nregions] = m;
        region_len[nregions++] = len;
        carve = m;
        carve_end = (uint8_t *)m + len;
        return 1;
    }
    return 0;
}

/* The guard page below slot s's alternate stack; 0 if it could not be made. */
static int guard(uint8_t *s)
{
    uint8_t *g = s + pool_size;
    if (!guard_by_mprotect && madvise(g, GUARD, MADV_GUARD_INSTALL) == 0)
        return 1;
    if (!guard_by_mprotect && errno == EINVAL)
        guard_by_mprotect = 1;
    return mprotect(g, GUARD, PROT_NONE) == 0;
}

void *str_slot_take(size_t pool, int *was_warm)
{
    int saved = errno;
    uint8_t *s = NULL;
    *was_warm = 0;
    pthread_mutex_lock(&slots_lock);
    if (!slot_size)
        set_geometry(pool);
    if (page_up(pool) != pool_size)
        goto out;
    if (warm) {
        s = (uint8_t *)warm;
        warm = warm->next;
        atomic_fetch_sub_explicit(&nwarm, 1, memory_order_relaxed);
        *was_warm = 1;
        goto out;
    }
    if (!str_mem_take(pool_size))
        goto out;
    if (cold) {
        s = (uint8_t *)cold;
        cold = cold->next;
        goto out;
    }
    while (!s) {
        if (carve == carve_end) {
            /* 1, 1, 2, 4 ... 64 slots: a process of one or two threads reserves no more
             * address space than their own mappings took (mlockall(MCL_CURRENT) is refused
             * when the whole address space is over RLIMIT_MEMLOCK: memlock.c). */
            unsigned want = nregions == 0 ? 1 : 1u << (nregions - 1 < 6 ? nregions - 1 : 6);
            if (!new_region(want))
                break;
        }
        uint8_t *c = carve;
        carve += slot_size;
        if (guard(c))
            s = c; /* else that slot is never used: its stack would have no guard */
    }
    if (!s)
        str_mem_give(pool_size);
out:
    pthread_mutex_unlock(&slots_lock);
    if (s)
        ((struct free_slot *)s)->next = NULL; /* the link was all a free slot had written */
    errno = saved;
    return s;
}

/* Slot s's region and index in it (the region's slots are at most 64: one bit each). */
static unsigned region_of(const uint8_t *s, unsigned *index)
{
    for (unsigned r = 0; r < nregions; r++)
        if (s >= region_at[r] && s < region_at[r] + region_len[r]) {
            *index = (unsigned)((size_t)(s - region_at[r]) / slot_size);
            return r;
        }
    return MAX_REGIONS;
}

/* Makes warm slots cold until `keep` are left: their pages go back in one MADV_DONTNEED per
 * run of neighbours (slots are carved in address order, so threads that exited together are
 * mostly neighbours: 4000 of them take a few dozen calls, not 4000, and as few TLB
 * shootdowns). One cooler at a time (cool_lock); the slots being cooled are on no list. */
static pthread_mutex_t cool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cooling[MAX_REGIONS];

static size_t cool(unsigned keep)
{
    size_t n = 0;
    pthread_mutex_lock(&cool_lock);
    pthread_mutex_lock(&slots_lock);
    unsigned nreg = nregions;
    while (atomic_load_explicit(&nwarm, memory_order_relaxed) > keep) {
        struct free_slot *f = warm;
        warm = f->next;
        atomic_fetch_sub_explicit(&nwarm, 1, memory_order_relaxed);
        unsigned i, r = region_of((uint8_t *)f, &i);
        if (r < MAX_REGIONS) {
            cooling[r] |= (uint64_t)1 << i;
            n++;
        }
    }
    pthread_mutex_unlock(&slots_lock);
    for (unsigned r = 0; n && r < nreg; r++) {
        uint64_t bits = cooling[r];
        for (unsigned i = 0; i < 64;) {
            if (!(bits >> i & 1)) {
                i++;
                continue;
            }
            unsigned j = i;
            while (j < 64 && (bits >> j & 1))
                j++;
            /* The pools and the stacks go back (the guard pages between them stay guards). */
            madvise(region_at[r] + i * slot_size, (j - i) * slot_size, MADV_DONTNEED);
            i = j;
        }
    }
    str_mem_give(n * pool_size);
    pthread_mutex_lock(&slots_lock);
    for (unsigned r = 0; n && r < nreg; r++) {
        for (unsigned i = 0; i < 64; i++)
            if (cooling[r] >> i & 1) {
                struct free_slot *f = (struct free_slot *)(region_at[r] + i * slot_size);
                f->next = cold;
                cold = f;
            }
        cooling[r] = 0;
    }
    pthread_mutex_unlock(&slots_lock);
    pthread_mutex_unlock(&cool_lock);
    return n;
}

void str_slot_give(void *slot)
{
    int saved = errno;
    struct free_slot *f = slot;
    pthread_mutex_lock(&slots_lock);
    f->next = warm;
    warm = f;
    unsigned w = atomic_fetch_add_explicit(&nwarm, 1, memory_order_relaxed) + 1;
    pthread_mutex_unlock(&slots_lock);
    if (w >= 4 * STR_KEEP)
        cool(STR_KEEP);
    errno = saved;
}

void str_slots_cool(void)
{
    if (atomic_load_explicit(&nwarm, memory_order_relaxed) <= STR_KEEP)
        return;
    int saved = errno;
    cool(STR_KEEP);
    errno = saved;
}

void str_slot_stack(void *slot, void **stack, size_t *size)
{
    *stack = (uint8_t *)slot + pool_size + GUARD;
    *size = stack_size;
}

size_t str_slots_warm_bytes(void)
{
    return atomic_load_explicit(&nwarm, memory_order_relaxed) * pool_size;
}

void str_slots_munlock(void)
{
    pthread_mutex_lock(&slots_lock);
    for (unsigned i = 0; i < nregions; i++)
        munlock(region_at[i], region_len[i]);
    pthread_mutex_unlock(&slots_lock);
}

void str_slots_fork_prepare(void)
{
    pthread_mutex_lock(&cool_lock);
    pthread_mutex_lock(&slots_lock);
}

void str_slots_fork_parent(void)
{
    pthread_mutex_unlock(&slots_lock);
    pthread_mutex_unlock(&cool_lock);
}

/* Slots a cooler had taken off the lists when the fork copied the process (a fork made without
 * the atfork handlers) are lost to the child, not listed twice. */
void str_slots_fork_child(void)
{
    pthread_mutex_init(&cool_lock, NULL);
    pthread_mutex_init(&slots_lock, NULL);
    memset(cooling, 0, sizeof cooling);
}
