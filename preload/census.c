/* What the runtime needs to know of threads below the interposers: whether the program's
 * threads are all gone, each thread's birth number, and how the runtime creates its own.
 *
 * threads.c interposes pthread_create and pthread_exit and keeps str_threads_live and
 * str_main_exited up to date; buffers.c (the flush thread) asks str_threads_alone. Neither this
 * file nor buffers.c calls threads.c, so the two do not call each other. Memory ordering: the
 * acquire loads here pair with threads.c's release decrement (a thread's last act) and release
 * store (pthread_exit in the main thread). str_census_early also resolves tasks.c's fork, for
 * the same reason as pthread_create here.
 */
#include "str.h"

#include <dlfcn.h>
#include <pthread.h>

_Atomic long str_threads_live;
_Atomic int str_main_exited;
__thread uint64_t str_thread_birth __attribute__((tls_model("initial-exec")));

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

/* Resolved once at start-up (str_threads_early): str_thread_create may run in a signal handler
 * (a fork child's first event starts its flush thread), where dlsym must not. */
void str_census_early(void)
{
    *(void **)&real_create = dlsym(RTLD_NEXT, "pthread_create");
    str_tasks_early(); /* fork's (tasks.c) */
}

int str_threads_alone(void)
{
    return atomic_load_explicit(&str_main_exited, memory_order_acquire) &&
           atomic_load_explicit(&str_threads_live, memory_order_acquire) == 0;
}

/* The runtime's own threads (the flush thread) are not the program's: not counted. Their stack
 * is small (STR_THREAD_STACK): the default (RLIMIT_STACK, 8 MiB here) would take that much of
 * a program's address space under `ulimit -v`. */
enum { STR_THREAD_STACK = 256 * 1024 };

int str_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    if (!real_create)
        str_census_early();
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return real_create(t, NULL, fn, arg);
    pthread_attr_setstacksize(&attr, STR_THREAD_STACK);
    int rc = real_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}
