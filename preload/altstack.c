/* An alternate signal stack of the runtime's own, for traced threads that have none.
 *
 * Why. A thread that overflows its stack takes a SIGSEGV that no handler can run for, unless
 * the thread has an alternate signal stack: the kernel then kills the process outright, the
 * runtime's fatal-signal path (signals.c) never runs, and up to a flush period of the trace is
 * lost without a word. So each traced thread whose program has not given it one gets one of
 * the runtime's (str_altstack_thread, at the thread's set-up, on the slow path), and signals.c
 * installs its proxy with SA_ONSTACK while the program has no handler of its own.
 *
 * What the program sees. sigaltstack is interposed: while the runtime's stack is the thread's,
 * the program is told there is none ({NULL, SS_DISABLE, 0}), as untraced. A stack the program
 * sets replaces the runtime's in the kernel (and the program's is reported from then on); one
 * the program disables gives the runtime's back. Left visible: a handler the program installed
 * with SA_ONSTACK, in a thread where it set no alternate stack, runs on the runtime's
 * (STACK_MIN bytes) rather than on the thread's own stack.
 *
 * Threads: all state is the thread's own (initial-exec TLS); a signal handler of the program
 * that calls sigaltstack in the middle of the wrapper's update is the one race, as it would be
 * against the kernel's own state.
 *
 * Memory. A thread whose buffers are a slot (slots.c) gets the slot's stack, guard page below
 * it included; others (a pool halved under a memory limit) get a mapping of their own, guarded
 * with mprotect and unmapped at their exit. At the thread's retirement the stack is disabled
 * in the kernel (str_altstack_thread_exit) before its buffers are handed to the flush thread,
 * which may give the slot to the next thread as soon as it has written them; a thread that
 * retires while running on the stack (pthread_exit from a handler on it) keeps it: its slot
 * is never reused.
 */
#include "str.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1u << 31) /* linux/signal.h: disarm the stack while a handler runs on it */
#endif

enum { STACK_MIN = 64 * 1024, GUARD = 4096 };

struct alt {
    uint8_t *map;  /* the mapping (guard page, then the stack), or NULL */
    size_t size;   /* of the stack, without the guard */
    int installed; /* the kernel's alternate stack for this thread is the runtime's */
    int own;       /* mapped here (else a slot's, slots.c) */
};

static __thread struct alt alt __attribute__((tls_model("initial-exec")));

static int raw_sigaltstack(const stack_t *ss, stack_t *old)
{
    return (int)syscall(SYS_sigaltstack, ss, old);
}

static int install(void)
{
    stack_t ss = {.ss_sp = alt.map + GUARD, .ss_flags = 0, .ss_size = alt.size};
    if (raw_sigaltstack(&ss, NULL) != 0)
        return -1;
    alt.installed = 1;
    return 0;
}

void str_altstack_thread(void *stack, size_t size)
{
    int saved = errno;
    stack_t cur;
    if (alt.map || raw_sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) {
        errno = saved;
        return; /* already done, or the program has one */
    }
    if (stack) {
        alt.map = (uint8_t *)stack - GUARD;
        alt.size = size;
        alt.own = 0;
    } else {
        size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
        size = 4 * min > STACK_MIN ? 4 * min : STACK_MIN;
        size = (size + 4095) & ~(size_t)4095;
        void *m = mmap(NULL, size + GUARD, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            errno = saved;
            return;
        }
        str_munlock_new(m, size + GUARD); /* under mlockall(MCL_FUTURE): memlock.c */
        if (mprotect(m, GUARD, PROT_NONE) != 0) {
            munmap(m, size + GUARD);
            errno = saved;
            return;
        }
        alt.map = m;
        alt.size = size;
        alt.own = 1;
    }
    if (install() != 0) {
        if (alt.own)
            munmap(alt.map, alt.size + GUARD);
        alt.map = NULL;
    }
    errno = saved;
}

void str_altstack_range(void **map, size_t *len)
{
    *map = alt.map;
    *len = alt.map ? alt.size + GUARD : 0;
}

int str_altstack_thread_exit(void)
{
    if (!alt.map)
        return 1;
    int saved = errno;
    stack_t cur;
    if (raw_sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_ONSTACK)) {
        errno = saved;
        return 0; /* running on it (or cannot tell): it stays */
    }
    if (alt.installed) {
        stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
        if (raw_sigaltstack(&off, NULL) != 0) {
            errno = saved;
            return 0;
        }
        alt.installed = 0;
    }
    if (alt.own)
        munmap(alt.map, alt.size + GUARD);
    alt.map = NULL;
    errno = saved;
    return 1;
}

STR_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
    if (!alt.installed) {
        int r = raw_sigaltstack(ss, old);
        if (r == 0 && ss && (ss->ss_flags & SS_DISABLE) && alt.map) {
            int e = errno;
            install(); /* the program gave its stack up: the runtime's is the thread's again */
            errno = e;
        }
        return r;
    }
    /* The runtime's stack is installed; the program believes there is none. */
    if (ss && ((unsigned)ss->ss_flags & ~((unsigned)SS_DISABLE | SS_ONSTACK | SS_AUTODISARM))) {
        errno = EINVAL;
        return -1;
    }
    if (ss && !(ss->ss_flags & SS_DISABLE)) {
        if (raw_sigaltstack(ss, NULL) != 0)
            return -1; /* the kernel's errno (ENOMEM for a small stack, EFAULT...) */
        alt.installed = 0;
    }
    if (old)
        *old = (stack_t){.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
    return 0;
}
