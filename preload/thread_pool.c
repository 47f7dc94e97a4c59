/* A traced thread's buffers: its pool (struct str_thread, the side ring, the chunks) mapped or
 * taken as a slot (slots.c), populated as it is used, and registered (part of the buffers
 * module: buffers.c lists its files).
 *
 * Population. The bookkeeping (but the side ring's pages) and the first STR_FIRST_BYTES of the
 * first chunk are made present when the thread records its first event; that chunk grows,
 * doubling, as it fills (record.c refill), and any other chunk is populated whole when its owner
 * first takes it (str_make_ready), so that recording never takes a page fault.
 *
 * Threads: str_new_thread runs in the thread itself, on the slow path with the asynchronous signals
 * blocked; it adds the thread to the registry under the registry lock (queue.c). A vfork
 * child's buffers take no lock and are not registered. An address-space limit makes map_pool
 * ask the flush thread to free exited threads' buffers first (flusher.c str_reclaim_exited). The
 * buffers are freed by the writer once their last chunk is written (queue.c str_free_thread).
 * Calls flusher.c (str_reclaim_exited) and queue.c's registry.
 */
#include "str.h"
#include "bufs.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_key_t str_exit_key;

/* A pool of n chunks, each populated before its owner records into it (populate): a page
 * fault inside the recording path keeps the thread at nest 1 for as long as it lasts (on these
 * VMs, long enough for dozens of signal handlers to queue their events in the side ring); in
 * the slow path it is one uninterrupted cost, recorded as the tracer's. Never left locked
 * (memlock.c). */
static void *map_pool(size_t size)
{
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED && errno == ENOMEM) {
        /* An address-space limit: exited threads' buffers are written (those of their own
         * unmapped: slots stay address space, slots.c), and the mapping is tried once more. */
        if (str_reclaim_exited())
            m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (m != MAP_FAILED)
        str_munlock_new(m, size);
    return m;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A write to each page of [p, p + len), zero memory of the caller's own: page faults, which take
 * no process-wide lock (the kernel's per-mapping locks), where madvise takes the mmap lock,
 * which the program's thread stacks need for writing: a few pages at a thread's set-up are
 * faulted in this way (4000 threads starting together spent 10% of their time in
 * MADV_POPULATE_WRITE). */
static void touch(void *p, size_t len)
{
    for (size_t off = 0; off < len; off += 4096)
        ((volatile uint8_t *)p)[off] = 0; /* a store the compiler keeps, not synchronisation */
}

/* Makes [p, p + len) present and writable, so that recording into it never takes a page fault:
 * one madvise (Linux >= 5.14), else a write per page (the memory is the caller's own, zero). A
 * pool is populated a chunk at a time, when its owner first takes the chunk (str_next_chunk): a
 * thread that records little costs one chunk of memory and of set-up time, not its whole pool
 * (a 1 MiB pool took 300 us to populate at every thread's first event, more under contention:
 * median 580 us, p99 44 ms over 400 short threads, 20 at a time). */
void str_populate(void *p, size_t len)
{
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return;
    touch(p, len);
}

/* Chunk c's pages, all of them, when its owner takes it. */
void str_make_ready(struct str_chunk *c)
{
    if (c->ready < str_cfg.chunk_size) {
        str_populate(c->base + c->ready, str_cfg.chunk_size - c->ready);
        c->ready = str_cfg.chunk_size;
    }
}

/* A fresh pool's first chunk grows as it fills (refill): STR_FIRST_BYTES at set-up, then
 * doubling, so that a thread that records little holds 16 KiB of chunk, not 64. */
static size_t first_bytes(void)
{
    return str_cfg.chunk_size < STR_FIRST_BYTES ? str_cfg.chunk_size : STR_FIRST_BYTES;
}

/* The bookkeeping's pages but the side ring's (pages holding nothing else): that ring is
 * written only by signal handlers that interrupt the tracer, which fault its pages in when they
 * first need them (a delay in that handler, not in the interrupted recording). */
static void populate_head(void *m, size_t head)
{
    size_t side_lo = (offsetof(struct str_thread, side) + 4095) & ~(size_t)4095;
    size_t side_hi = offsetof(struct str_thread, side[STR_SIDE_N]) & ~(size_t)4095;
    if (side_hi <= side_lo) {
        touch(m, head);
        return;
    }
    touch(m, side_lo);
    touch((uint8_t *)m + side_hi, head - side_hi);
}

static size_t pool_head(unsigned n)
{
    size_t head = sizeof(struct str_thread) + n * sizeof(struct str_chunk);
    return (head + 4095) & ~(size_t)4095;
}

/* The default pool's size: SLEDTRACE_BUFFERS chunks and their bookkeeping. */
static size_t default_pool(void)
{
    return pool_head(str_cfg.nchunks) + str_cfg.nchunks * str_cfg.chunk_size;
}

/* A thread's buffers, recorded into through cursor `cur` (the thread's, or a held fork child's
 * fork_cursor); a vfork child's (vfork_child) are neither registered nor keyed: the child must
 * take no lock (it may die holding it, and its parent would then wait forever), and its parent
 * retires them when the vfork returns (str_vfork_end). The pool is SLEDTRACE_BUFFERS chunks when
 * the memory budget (limits.c) and the mapping allow it, else halved down to 2; NULL when not
 * even 2 fit (counted for the exit's warning). */
struct str_thread *str_new_thread(int vfork_child, struct str_cursor *cur)
{
    unsigned n = str_cfg.nchunks;
    size_t size = 0;
    void *m = MAP_FAILED;
    int cause = 0;          /* 0: the budget; else the mapping's errno */
    size_t ready[64] = {0}; /* a warm slot's chunks' resident bytes (the first 64) */
    int slot = 0, warm = 0;
    void *s = NULL;
    if (!vfork_child) { /* a vfork child takes no lock: its pool is a mapping of its own */
        s = str_slot_take(default_pool(), &warm);
        /* No slot (an address-space limit, or the budget): exited threads' slots come back
         * once their last chunks are written (thread-churn under `ulimit -v 20000` left a
         * thread without buffers when it went straight to a mapping of its own). */
        if (!s && str_reclaim_exited())
            s = str_slot_take(default_pool(), &warm);
    }
    if (s) {
        m = s;
        slot = 1;
        size = default_pool();
        if (warm) {
            /* An exited thread's (slots.c): its bookkeeping starts again from zero, as a new
             * one's would (the side ring included: a stale entry could pass for a new one, so
             * its pages become resident here); its chunks' pages stay. */
            struct str_thread *old = m;
            for (unsigned i = 0; i < old->nchunks && i < 64; i++)
                ready[i] = old->chunks[i].ready;
            memset(m, 0, pool_head(n));
        }
    }
    while (m == MAP_FAILED) {
        size = pool_head(n) + n * str_cfg.chunk_size;
        if (str_mem_take(size)) {
            m = map_pool(size);
            if (m != MAP_FAILED)
                break;
            cause = errno;
            str_mem_give(size);
        }
        if (n <= 2)
            break;
        n = n / 2 < 2 ? 2 : n / 2;
    }
    if (m == MAP_FAILED || n < str_cfg.nchunks)
        str_mem_short(m == MAP_FAILED ? 0 : n, cause);
    if (m == MAP_FAILED)
        return NULL;
    size_t head = pool_head(n);
    if (!warm) { /* the bookkeeping and the start of the first chunk */
        populate_head(m, head);
        touch((uint8_t *)m + head, first_bytes());
        ready[0] = first_bytes();
    }
    struct str_thread *th = m;
    th->map_size = size;
    th->slot = (uint8_t)slot;
    th->cursor = cur;
    th->tid = (int32_t)syscall(SYS_gettid);
    th->pid = vfork_child ? (int32_t)syscall(SYS_getpid) : str_pid;
    th->self = pthread_self();
    th->birth = str_thread_birth;
    th->nchunks = n;
    for (unsigned i = 0; i < th->nchunks; i++) {
        th->chunks[i].owner = th;
        th->chunks[i].base = (uint8_t *)m + head + i * str_cfg.chunk_size;
        th->chunks[i].ready = i < 64 ? ready[i] : 0;
    }
    /* Its mark (marks.c), last: the writer may find it through its index at once. */
    th->index = str_index_take(th);
    if (th->index == STR_NO_INDEX) {
        str_mem_short(0, STR_SHORT_INDEX); /* the exit's warning says it, with the count */
        str_free_thread(th);
        return NULL;
    }
    if (vfork_child)
        return th;
    void *stack = NULL;
    size_t stack_size = 0;
    if (slot)
        str_slot_stack(th, &stack, &stack_size);
    str_altstack_thread(stack, stack_size);
    str_altstack_range(&th->alt_map, &th->alt_size);
    pthread_mutex_lock(&str_registry_lock);
    th->next = str_registry;
    th->pprev = &str_registry;
    if (str_registry)
        str_registry->pprev = &th->next;
    str_registry = th;
    pthread_mutex_unlock(&str_registry_lock);
    pthread_setspecific(str_exit_key, th);
    return th;
}
