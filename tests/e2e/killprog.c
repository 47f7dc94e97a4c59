/* SIGKILL: a worker thread records fib(14), then main records fib(15); main prints the counts and
 * "recorded" (flushed), then both threads block without making another call (the worker in
 * pause(), main in sleep(20)) until the test kills the process with SIGKILL. Only what the flush
 * thread wrote periodically survives, and it must be every committed record. main and the
 * thread function are never instrumented, so no frame is open when the process dies. Exit
 * status 9 if nobody killed it. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

static pthread_barrier_t done;

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    (void)arg;
    long r = fibp(14);
    pthread_barrier_wait(&done);
    for (;;)
        pause();
    return (void *)r;
}

__attribute__((xray_never_instrument)) int main(void)
{
    fibp = fib;
    pthread_barrier_init(&done, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 2;
    pthread_barrier_wait(&done);
    if (fibp(15) != fibonacci(15))
        return 1;
    printf("count fib %ld\nthreads 2\nthreadwork %ld\nthreadwork %ld\nrecorded\n",
           fib_calls(15) + fib_calls(14), fib_calls(15), fib_calls(14));
    fflush(stdout);
    sleep(20);
    return 9;
}
