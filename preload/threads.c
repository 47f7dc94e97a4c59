/* The program's threads, as far as the runtime needs to know them without /proc.
 *
 * Alone: glibc ends a process whose main thread called pthread_exit when its last thread exits,
 * and the flush thread counts as one: it must end by itself once the main thread has called
 * pthread_exit and every other thread of the program has ended. The runtime used to read
 * /proc/self/task every period to see that, which a sandbox (seccomp, chroot) forbids. Now
 * pthread_create and pthread_exit are interposed: each thread the program creates is counted
 * while its start routine runs (a wrapper around it; a cleanup handler covers pthread_exit and
 * cancellation), and pthread_exit in the main thread is noted. str_threads_alone() answers
 * from those two. Threads made without pthread_create (a raw clone with CLONE_THREAD) are not
 * seen: the trace would then end when the last counted thread does.
 *
 * Strict seccomp: a thread in SECCOMP_MODE_STRICT is killed by any system call but read,
 * write, exit and sigreturn, and the kernel turns rdtsc into a fault there: the runtime must
 * know before. prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) and seccomp(SECCOMP_SET_MODE_STRICT)
 * (through syscall(), glibc has no wrapper) are interposed: the thread is retired first (its
 * records go out) and then drops its events without reading any clock (str_thread_strict,
 * hot.c). They are counted and reported at exit.
 *
 * Memory: when the program's own pthread_create fails with EAGAIN or ENOMEM (an address-space
 * limit), the runtime may be holding the buffers of threads that have exited but whose last
 * chunk is not written yet, and its flush thread is a task and a stack of its own: str_reclaim
 * has those buffers written and freed at once and stops the flush thread for good (the process
 * goes on without one, flusher.c), and the creation is tried once more. Under a tight task
 * limit (limits.c) an EAGAIN is the program's own: no warning then.
 *
 * The counts themselves, and the runtime's own thread creation, are census.c's (buffers.c asks
 * them; this file only keeps them up to date). Memory ordering: str_threads_live and
 * str_main_exited are read by the flush thread with acquire (str_threads_alone), paired with
 * the release of the decrement / store made here by the exiting thread after its last event.
 */
#include "str.h"
#include "stf.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

_Atomic int str_seccomp_filter;
struct start {
    void *(*fn)(void *);
    void *arg;
    uint64_t birth;     /* names.c */
    struct start *next; /* on the list of records to free (start_done) */
};

static void gone(void *unused)
{
    (void)unused;
    /* Release: pairs with the acquire in str_threads_alone; the thread's records are handed
     * over by its TLS destructor, which the flush thread's final write waits for through the
     * queue. */
    atomic_fetch_sub_explicit(&str_threads_live, 1, memory_order_release);
}

/* The wrapper's start records are allocated by the creating thread and, once the new thread
 * has copied its own, handed back (a lock-free list, `done`) to be freed by the next
 * pthread_create, in a thread that allocates anyway. Not freed by the new thread: that free()
 * was its first call into malloc, which gives a thread an arena of its own (64 MiB of address
 * space, up to 8 per processor), where a thread that never allocates has none untraced.
 * Memory ordering: the new thread's release CAS pushing its record pairs with the acquire
 * exchange that takes the whole list (its copy is done before the record is freed). */
static _Atomic(struct start *) done;

static void start_done(struct start *s)
{
    struct start *head = atomic_load_explicit(&done, memory_order_relaxed);
    do {
        s->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&done, &head, s, memory_order_release,
                                                    memory_order_relaxed));
}

static void free_done(void)
{
    struct start *s = atomic_exchange_explicit(&done, NULL, memory_order_acquire);
    while (s) {
        struct start *next = s->next;
        free(s);
        s = next;
    }
}

static void *run(void *p)
{
    struct start s = *(struct start *)p;
    start_done(p);
    str_thread_birth = s.birth;
    void *ret;
    pthread_cleanup_push(gone, NULL);
    ret = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return ret;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;
static void (*real_exit)(void *);
static int (*real_prctl)(int, ...);
static long (*real_syscall)(long, ...);

/* The next definitions, resolved once at start-up: the runtime's own syscall() calls come here
 * too, some of them from signal handlers, where dlsym must not run. */
void str_threads_early(void)
{
    *(void **)&real_create = dlsym(RTLD_NEXT, "pthread_create");
    *(void **)&real_exit = dlsym(RTLD_NEXT, "pthread_exit");
    *(void **)&real_prctl = dlsym(RTLD_NEXT, "prctl");
    *(void **)&real_syscall = dlsym(RTLD_NEXT, "syscall");
    str_census_early();
}

STR_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg)
{
    if (!real_create)
        str_threads_early();
    create_fn real = real_create;
    free_done();
    struct start *s = malloc(sizeof *s);
    if (!s) /* no room for the wrapper: the thread is not counted (documented) */
        return real(t, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    s->birth = str_names_seq(); /* names given to *t from now on are this thread's */
    atomic_fetch_add_explicit(&str_threads_live, 1, memory_order_relaxed);
    int rc = real(t, attr, run, s);
    if ((rc == EAGAIN || rc == ENOMEM) && str_reclaim())
        rc = real(t, attr, run, s); /* exited threads' buffers were still held: once more */
    const char *tight;
    /* Under a tight task limit the failure is the program's own (the runtime has no flush
     * thread there, limits.c): said by the program, not here. */
    if (rc == ENOMEM || (rc == EAGAIN && !str_tasks_tight(&tight))) {
        static _Atomic int said;
        if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
            str_log(STR_WARN,
                    "the program's pthread_create failed for lack of memory; the tracer holds "
                    "SLEDTRACE_BUFFER_KB x SLEDTRACE_BUFFERS of buffers per tracing thread and "
                    "about 32 KiB more (see \"What the runtime needs from the program\" in the "
                    "README)");
    }
    if (rc != 0) {
        atomic_fetch_sub_explicit(&str_threads_live, 1, memory_order_relaxed);
        free(s);
    }
    return rc;
}

STR_EXPORT __attribute__((noreturn)) void pthread_exit(void *ret)
{
    if (!real_exit)
        str_threads_early();
    void (*real)(void *) = real_exit;
    if (gettid() == getpid())
        atomic_store_explicit(&str_main_exited, 1,
                              memory_order_release); /* see str_threads_alone */
    real(ret);
    __builtin_unreachable();
}

/* ---- strict seccomp ---- */

STR_EXPORT int prctl(int option, ...)
{
    if (!real_prctl)
        str_threads_early();
    int (*real)(int, ...) = real_prctl;
    va_list ap;
    va_start(ap, option);
    unsigned long a[4];
    for (int i = 0; i < 4; i++)
        a[i] = va_arg(ap, unsigned long);
    va_end(ap);
    int strict = option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_STRICT;
    if (strict)
        str_thread_strict(); /* before: afterwards no system call is allowed */
    int rc = real(option, a[0], a[1], a[2], a[3]);
    if (option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_FILTER && rc == 0)
        atomic_store_explicit(&str_seccomp_filter, 1, memory_order_relaxed);
    if (option == PR_SET_NAME && rc == 0) {
        int e = errno;
        str_names_set(pthread_self(), (const char *)a[0]);
        errno = e;
    }
    if (strict && rc != 0)
        str_thread_unstrict();
    return rc;
}

/* ---- thread names (names.c) ---- */

STR_EXPORT int pthread_setname_np(pthread_t t, const char *name)
{
    static int (*real)(pthread_t, const char *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_setname_np");
    int rc = real ? real(t, name) : ENOSYS;
    if (rc == 0)
        str_names_set(t, name);
    return rc;
}

STR_EXPORT long syscall(long number, ...)
{
    if (!real_syscall)
        str_threads_early();
    long (*real)(long, ...) = real_syscall;
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    int strict = (number == SYS_seccomp && a[0] == SECCOMP_SET_MODE_STRICT) ||
                 (number == SYS_prctl && a[0] == PR_SET_SECCOMP && a[1] == SECCOMP_MODE_STRICT);
    if (strict)
        str_thread_strict();
    if (number == SYS_futex && str_wait_futex_op(a[1])) /* recorded as "[wait] futex" */
        STR_WAITING(STF_WAIT_FUTEX, real(number, a[0], a[1], a[2], a[3], a[4], a[5]));
    long rc = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (strict && rc != 0)
        str_thread_unstrict();
    if (rc == 0 && ((number == SYS_seccomp && a[0] == SECCOMP_SET_MODE_FILTER) ||
                    (number == SYS_prctl && a[0] == PR_SET_SECCOMP && a[1] == SECCOMP_MODE_FILTER)))
        atomic_store_explicit(&str_seccomp_filter, 1, memory_order_relaxed);
    return rc;
}
