/* Threads that record while the process exits (the smallest form of connprog's termbusy): BUSY
 * threads each call mark() once and tell main so; main registers an atexit handler and calls
 * exit(0). The handler (run by exit before the runtime completes the trace) lets the threads
 * go: each then calls work() in a loop until the process is gone. Only mark() and work() are
 * instrumented.
 *
 * Every mark() call is made before main calls exit(), so the completed trace must hold BUSY of
 * them, each returned; how many work() calls it holds is not known (at most one open a thread).
 * Prints `count mark BUSY` and `busy work BUSY`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

#define NOTRACE __attribute__((xray_never_instrument, noinline))

enum { BUSY = 2 };

/* started: release by each thread after its mark() returned, acquire by main before exit.
 * go: release by the atexit handler, acquire by the threads. */
static atomic_int started, go;

KEEP long mark(long x)
{
    BARRIER();
    return x;
}

KEEP long work(long x)
{
    BARRIER();
    return x + 1;
}

NOTRACE static void *busy_thread(void *arg)
{
    mark((long)arg);
    atomic_fetch_add_explicit(&started, 1, memory_order_release);
    while (!atomic_load_explicit(&go, memory_order_acquire))
        ;
    for (long i = 0;; i++)
        work(i);
    return NULL;
}

NOTRACE static void let_go(void)
{
    atomic_store_explicit(&go, 1, memory_order_release);
}

NOTRACE int main(void)
{
    for (long i = 0; i < BUSY; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, busy_thread, (void *)i) != 0 || pthread_detach(t) != 0)
            return 2;
    }
    while (atomic_load_explicit(&started, memory_order_acquire) < BUSY)
        ;
    if (atexit(let_go) != 0)
        return 2;
    printf("count mark %d\nbusy work %d\n", BUSY, BUSY);
    exit(0);
}
