/* Live patching. "stress": 4 threads call fib(8) through a volatile pointer while main switches
 * every sled off and on 1000 times, then fib alone 100 times (sledtrace_unpatch/_patch and the
 * per-function variants, looked up with dlsym: the library is preloaded). Prints how many calls
 * failed. "signal": with SLEDTRACE_TOGGLE_SIGNAL=USR1 (which the program itself ignores),
 * fib(10) is traced, USR1 switches tracing off, fib(11) is not traced, USR1 switches it on,
 * fib(12) is traced. main and the workers are never instrumented. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);
static atomic_int stop;
static atomic_long calls;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        if (fibp(8) != fibonacci(8))
            return (void *)1;
        atomic_fetch_add(&calls, fib_calls(8));
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static int stress(void)
{
    int (*patch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_patch");
    int (*unpatch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_unpatch");
    int (*patch_fn)(const char *) =
        (int (*)(const char *))dlsym(RTLD_DEFAULT, "sledtrace_patch_function");
    int (*unpatch_fn)(const char *) =
        (int (*)(const char *))dlsym(RTLD_DEFAULT, "sledtrace_unpatch_function");
    if (!patch || !unpatch || !patch_fn || !unpatch_fn) {
        printf("control functions not found\n");
        return 3;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    int failures = 0;
    for (int i = 0; i < 1000; i++) {
        failures += unpatch() != 0;
        failures += patch() != 0;
    }
    for (int i = 0; i < 100; i++) {
        failures += unpatch_fn("fib") != 1;
        failures += patch_fn("fib") != 1;
    }
    atomic_store(&stop, 1);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    printf("toggles 1100 failures %d\ncalls %ld\n", failures, atomic_load(&calls));
    return failures || bad ? 1 : 0;
}

__attribute__((xray_never_instrument)) static int by_signal(void)
{
    signal(SIGUSR1, SIG_IGN);
    long a = fibp(10);
    raise(SIGUSR1);
    usleep(200000); /* the flush thread does the switching */
    long b = fibp(11);
    raise(SIGUSR1);
    usleep(200000);
    long c = fibp(12);
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(10) + fib_calls(12),
           fib_calls(10) + fib_calls(12));
    return a + b + c == fibonacci(10) + fibonacci(11) + fibonacci(12) ? 0 : 1;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    fibp = fib;
    return argc > 1 && strcmp(argv[1], "signal") == 0 ? by_signal() : stress();
}
