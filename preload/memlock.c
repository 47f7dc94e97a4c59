/* The program's locked memory is the program's: the runtime's mappings are never locked.
 *
 * Why. RLIMIT_MEMLOCK bounds the memory a process may lock (8 MiB by default on Debian). A
 * program that calls mlockall(MCL_CURRENT | MCL_FUTURE) locks every mapping it has and every one
 * it makes later: untraced, that is its own memory; traced, it would also be the runtime's
 * thread buffers (1 MiB per thread), its flush thread's stack, its alternate signal stacks and
 * its own object's pages, and the program's own 4 MiB mmap would then fail with EAGAIN where it
 * succeeds untraced.
 *
 * How. mlockall and munlockall are interposed (they stay the same system calls):
 *  - mlockall(MCL_CURRENT ...) that succeeded: the runtime unlocks what it had mapped
 *    (str_buffers_munlock: the slots' regions (slots.c), every registered thread's pool and
 *    alternate signal stack of its own, the flush thread's stack; and the pages of
 *    libsledtrace.so itself, found with dl_iterate_phdr).
 *  - MCL_FUTURE makes the kernel lock every new mapping as it is made, and count it against
 *    the limit: str_mlock_future remembers it (until munlockall, or an mlockall without it),
 *    and the runtime unlocks each mapping of its own right after mmap (str_munlock_new: the slots'
 *    regions in slots.c, pools and alternate stacks of their own in thread_pool.c and altstack.c,
 *    the flush thread's stack as it starts).
 *    A mapping that does not fit in what the limit leaves fails with EAGAIN: thread_pool.c then
 *    tries a smaller pool, and without any, the thread records nothing and that is counted and
 *    said at exit (limits.c, "memory limit").
 * Without MCL_FUTURE nothing is called at all: munlock is not a system call a seccomp
 * whitelist is likely to allow, and it is needed only then.
 *
 * What it costs. Unlocked, the runtime's pages can be reclaimed like any other (swap), and a
 * recording thread may then take a page fault it would not have taken locked; populating
 * (thread_pool.c, a chunk before its first use) still makes its pages present: munlock does not
 * evict pages. Between the mmap and the munlock (a few microseconds) the new pool counts
 * against the limit: another thread of the program locking memory at that very moment could
 * see EAGAIN. mlockall(MCL_CURRENT) itself checks the whole address space against the limit
 * (total_vm <= RLIMIT_MEMLOCK): the runtime's mappings (about 3 MiB of address space, and
 * 1.1 MiB per recording thread's slot, reserved in regions of up to 64: slots.c) still count
 * there, so a program whose address space is within that much of its limit sees that mlockall
 * fail traced. Left locked: Capstone's pages while sleds are proven (a library of the
 * program's as far as the kernel is concerned), the patcher's stub pages (4 KiB per
 * instrumented object) and what the runtime allocated with malloc.
 *
 * Threads: str_mlock_future is written by the thread calling mlockall and read, relaxed, by
 * threads mapping memory: a mapping made concurrently with the call may be missed, as it would
 * race with the call itself untraced.
 */
#include "str.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

_Atomic int str_mlock_future;

void str_munlock_new(void *addr, size_t len)
{
    if (!atomic_load_explicit(&str_mlock_future, memory_order_relaxed))
        return;
    int saved = errno;
    munlock(addr, len);
    errno = saved;
}

void str_munlock_stack(void)
{
    if (!atomic_load_explicit(&str_mlock_future, memory_order_relaxed))
        return;
    int saved = errno;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo;
        size_t size, guard = 0;
        if (pthread_attr_getstack(&a, &lo, &size) == 0) {
            pthread_attr_getguardsize(&a, &guard);
            munlock((char *)lo - guard, size + guard);
        }
        pthread_attr_destroy(&a);
    }
    errno = saved;
}

/* The pages of libsledtrace.so itself (text, data, and the .bss with the slow path's stacks). */
static int unlock_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine |= ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(page - 1);
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + (uintptr_t)page - 1) &
                       ~(uintptr_t)(page - 1);
        munlock((void *)lo, hi - lo);
    }
    return 1;
}

STR_EXPORT int mlockall(int flags)
{
    int rc = (int)syscall(SYS_mlockall, flags);
    if (rc != 0)
        return rc;
    int saved = errno;
    atomic_store_explicit(&str_mlock_future, (flags & MCL_FUTURE) != 0, memory_order_relaxed);
    if (flags & MCL_CURRENT) {
        str_buffers_munlock();
        dl_iterate_phdr(unlock_self, (void *)(uintptr_t)&unlock_self);
    }
    errno = saved;
    return 0;
}

STR_EXPORT int munlockall(void)
{
    int rc = (int)syscall(SYS_munlockall);
    if (rc == 0)
        atomic_store_explicit(&str_mlock_future, 0, memory_order_relaxed);
    return rc;
}
