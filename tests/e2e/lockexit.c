/* _exit from a signal handler that interrupted the runtime while it held its lock (issue 9.9).
 * Built with -rdynamic: this program's pthread_mutex_lock comes before libc's (and is what the
 * preloaded runtime calls). Once a thread's start routine has returned, the next mutex the
 * thread locks is the runtime's, as it retires the thread; right after taking it, the wrapper
 * raises SIGALRM on the thread, and the handler calls _exit(3). Untraced nothing locks a mutex
 * there, so the program ends by returning 3 from main after joining the thread. Either way the
 * exit status is 3; under the preload the runtime must not deadlock on its own lock. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
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

static __thread int returned;

__attribute__((xray_never_instrument)) int pthread_mutex_lock(pthread_mutex_t *m)
{
    static int (*real)(pthread_mutex_t *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    int rc = real(m);
    if (returned) {
        returned = 0;
        raise(SIGALRM);
    }
    return rc;
}

__attribute__((xray_never_instrument)) static void on_alarm(int sig)
{
    (void)sig;
    _exit(3);
}

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    (void)arg;
    fibp(10);
    returned = 1;
    return NULL;
}

__attribute__((xray_never_instrument)) int main(void)
{
    fibp = fib;
    signal(SIGALRM, on_alarm);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    return 3;
}
