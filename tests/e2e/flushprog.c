/* sledtrace_flush() (issue 16.2): main and a worker thread record fib(15) each, main calls
 * sledtrace_flush() (looked up with dlsym: the program does not link the runtime), prints its
 * counts and the call's result, and kills itself with SIGKILL: nothing is completed at exit, and
 * the flush period is a minute (the test sets it), so only the flush puts the calls in the
 * trace. With argv[1] "flight" the same under the flight policy. Prints "flush 0" on success. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);
static pthread_barrier_t done;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    fibp(15);
    pthread_barrier_wait(&done); /* then waits, alive, until the process is killed */
    for (;;)
        pause();
    return arg;
}

__attribute__((xray_never_instrument)) int main(void)
{
    fibp = fib;
    pthread_barrier_init(&done, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    fibp(15);
    pthread_barrier_wait(&done);
    int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_flush");
    int rc = flush ? flush() : -2;
    printf("count fib %ld\nthreads 2\nthreadwork %ld\nthreadwork %ld\nflush %d\n",
           2 * fib_calls(15), fib_calls(15), fib_calls(15), rc);
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 1;
}
