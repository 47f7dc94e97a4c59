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
 * slots at a time; a region is address space until its slots are used. A slot's
 * guard page is installed once, when the slot is first carved: MADV_GUARD_INSTALL (Linux
 * 6.13) marks it in the page tables with the mmap lock taken for reading and splits no
 * mapping; older kernels get an mprotect. The guard stays through MADV_DONTNEED.
 *
 * Free slots. A freed slot goes on the warm list: its pages stay as the last thread left them
 * (the next thread finds its bookkeeping and the chunks it will use resident: no fault, no
 * populate). Warm slots past STR_KEEP are made cold in batches (cool): when 4 x STR_KEEP are
 * warm, and after each pass of the flush thread; a cold slot's pages are given back
 * (MADV_DONTNEED: zero again, not resident) and it leaves the memory budget. A thread takes
 * the warm slot freed last, else a cold one, else a fresh one, else a new region's. While more
 * than 64 slots are free, a region none of whose slots is in use (but the one being carved) is
 * unmapped whole, its warm slots with it: a burst of threads leaves neither address space nor,
 * under strict overcommit, commit charge behind (1000 threads: +1.1 GiB of address space kept
 * before, +75 MiB now).
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
/* Free slots (warm or cold) beyond which wholly free regions are unmapped (cool). */
enum { SPARE_MAX = 64 };

/* A free slot's link, in its first bytes (the pool's bookkeeping, rewritten when taken). */
struct free_slot {
    struct free_slot *next;
};

/* A region: its mapping (NULL: none, or unmapped), its slots (at most 64: one bit each), how
 * many are carved, in use by threads (or lost: a slot whose guard could not be made), warm,
 * and which are cold. carved = used + warm + cold bits. */
struct region {
    uint8_t *at;
    size_t len;
    unsigned n, carved, used, warm;
    uint64_t cold;
};

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pool_size, stack_size, slot_size; /* set by the first take */
static struct region regions[MAX_REGIONS];
static unsigned nregions;              /* entries of regions[] ever used (holes have at == NULL) */
static unsigned nmade;                 /* regions ever mapped: their sizes go 1, 1, 2, 4 ... 64 */
static unsigned carving = MAX_REGIONS; /* the region slots are carved from (all carved: none) */
/* Free slots, warm and cold: changed under slots_lock, read as a hint by str_slots_cool. */
static _Atomic unsigned spare;
static struct free_slot *warm;
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

/* A new region of up to `want` slots (fewer if the mapping fails for want of room), which
 * becomes the one slots are carved from; 0 if none. */
static int new_region(unsigned want)
{
    unsigned r = 0;
    while (r < nregions && regions[r].at)
        r++;
    if (r == MAX_REGIONS)
        return 0;
    for (unsigned n = want; n >= 1; n /= 2) {
        size_t len = n * slot_size;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            continue;
        str_munlock_new(m, len); /* under mlockall(MCL_FUTURE): memlock.c */
        regions[r] = (struct region){.at = m, .len = len, .n = n};
        if (r == nregions)
            nregions++;
        nmade++;
        carving = r;
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

/* Slot s's region and index in it; MAX_REGIONS if it is in none. */
static unsigned region_of(const uint8_t *s, unsigned *index)
{
    for (unsigned r = 0; r < nregions; r++)
        if (regions[r].at && s >= regions[r].at && s < regions[r].at + regions[r].len) {
            *index = (unsigned)((size_t)(s - regions[r].at) / slot_size);
            return r;
        }
    return MAX_REGIONS;
}

/* A fresh slot from the region being carved (a new one when it is used up); NULL if none. */
static uint8_t *carve_one(void)
{
    for (;;) {
        if (carving == MAX_REGIONS || regions[carving].carved == regions[carving].n) {
            /* 1, 1, 2, 4 ... 64 slots: a process of one or two threads reserves no more
             * address space than their own mappings took (mlockall(MCL_CURRENT) is refused
             * when the whole address space is over RLIMIT_MEMLOCK: memlock.c). */
            unsigned want = nmade == 0 ? 1 : 1u << (nmade - 1 < 6 ? nmade - 1 : 6);
            if (!new_region(want)) {
                carving = MAX_REGIONS;
                return NULL;
            }
        }
        struct region *g = &regions[carving];
        uint8_t *c = g->at + g->carved * slot_size;
        g->carved++;
        g->used++; /* a slot without its guard stays counted as used: never handed out */
        if (guard(c))
            return c;
    }
}

void *str_slot_take(size_t pool, int *was_warm)
{
    int saved = errno;
    uint8_t *s = NULL;
    unsigned i, r;
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
        r = region_of(s, &i);
        regions[r].warm--;
        regions[r].used++;
        atomic_fetch_sub_explicit(&spare, 1, memory_order_relaxed);
        *was_warm = 1;
        goto out;
    }
    if (!str_mem_take(pool_size))
        goto out;
    for (r = 0; r < nregions && !s; r++)
        if (regions[r].at && regions[r].cold) {
            i = (unsigned)__builtin_ctzll(regions[r].cold);
            regions[r].cold &= ~((uint64_t)1 << i);
            regions[r].used++;
            atomic_fetch_sub_explicit(&spare, 1, memory_order_relaxed);
            s = regions[r].at + i * slot_size;
        }
    if (!s)
        s = carve_one();
    if (!s)
        str_mem_give(pool_size);
out:
    pthread_mutex_unlock(&slots_lock);
    if (s)
        ((struct free_slot *)s)->next = NULL; /* the link was all a free slot had written */
    errno = saved;
    return s;
}

/* Makes warm slots cold until `keep` are left: their pages go back in one MADV_DONTNEED per
 * run of neighbours (slots are carved in address order, so threads that exited together are
 * mostly neighbours: 4000 of them take a few dozen calls, not 4000, and as few TLB
 * shootdowns). Then, while more than SPARE_MAX slots are free, regions none of whose slots is
 * in use are unmapped whole (their warm slots leave the warm list), so that a burst of
 * threads leaves no address space, nor commit charge under strict overcommit, behind it; the
 * region being carved stays. One cooler at a time (cool_lock); the slots being cooled are on
 * no list meanwhile, but still counted in their region's `warm`. */
static pthread_mutex_t cool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cooling[MAX_REGIONS];

static void unmap_free_regions(void)
{
    for (unsigned r = 0;
         r < nregions && atomic_load_explicit(&spare, memory_order_relaxed) > SPARE_MAX; r++) {
        struct region *g = &regions[r];
        if (!g->at || g->used || r == carving)
            continue;
        for (struct free_slot **l = &warm; *l;) {
            uint8_t *f = (uint8_t *)*l;
            if (f >= g->at && f < g->at + g->len) {
                *l = (*l)->next;
                atomic_fetch_sub_explicit(&nwarm, 1, memory_order_relaxed);
            } else {
                l = &(*l)->next;
            }
        }
        str_mem_give(g->warm * pool_size);
        atomic_fetch_sub_explicit(&spare, g->carved - g->used, memory_order_relaxed);
        uint8_t *at = g->at;
        size_t len = g->len;
        *g = (struct region){0};
        /* Nothing can reach it any more: the lock is held only for the bookkeeping. */
        pthread_mutex_unlock(&slots_lock);
        munmap(at, len);
        pthread_mutex_lock(&slots_lock);
    }
}

static void cool(unsigned keep)
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
            madvise(regions[r].at + i * slot_size, (j - i) * slot_size, MADV_DONTNEED);
            i = j;
        }
    }
    str_mem_give(n * pool_size);
    pthread_mutex_lock(&slots_lock);
    for (unsigned r = 0; n && r < nreg; r++) {
        regions[r].cold |= cooling[r];
        regions[r].warm -= (unsigned)__builtin_popcountll(cooling[r]);
        cooling[r] = 0;
    }
    unmap_free_regions();
    pthread_mutex_unlock(&slots_lock);
    pthread_mutex_unlock(&cool_lock);
}

void str_slot_give(void *slot)
{
    int saved = errno;
    struct free_slot *f = slot;
    unsigned i;
    pthread_mutex_lock(&slots_lock);
    unsigned r = region_of(slot, &i);
    if (r < MAX_REGIONS) {
        regions[r].used--;
        regions[r].warm++;
        atomic_fetch_add_explicit(&spare, 1, memory_order_relaxed);
    }
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
    if (atomic_load_explicit(&nwarm, memory_order_relaxed) <= STR_KEEP &&
        atomic_load_explicit(&spare, memory_order_relaxed) <= SPARE_MAX)
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
    for (unsigned r = 0; r < nregions; r++)
        if (regions[r].at)
            munlock(regions[r].at, regions[r].len);
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
