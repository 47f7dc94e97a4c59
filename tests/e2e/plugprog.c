/* An uninstrumented host (built without -fxray-instrument) that dlopens an instrumented plugin,
 * libslb.so (path as argv[1]), while a second thread of its own is running, calls it, and
 * closes it. Built twice: plugprog, which loads nothing instrumented before the dlopen (tracing
 * must start inside dlopen), and plugprog-linked (-DLINKED), also linked with libsla.so (tracing
 * starts at start-up with no sleds in the executable). Prints the plugin's exact counts; the
 * host's own functions have no sleds and are not counted. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "progs.h"

#ifdef LINKED
long a_entry(long n);
#endif

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *idle(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    while (!done)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0)
        return 5;
    long x = 0;
#ifdef LINKED
    x += a_entry(12);
#endif
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 3;
    long (*b_entry)(long) = (long (*)(long))dlsym(h, "b_entry");
    if (!b_entry)
        return 4;
    x += b_entry(11);
    dlclose(h);
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    long want = fibonacci(11);
    long work = 1 + fib_calls(11);
#ifdef LINKED
    want += fibonacci(12);
    work += 1 + fib_calls(12);
    printf("count a_entry 1\ncount a_fib %ld\n", fib_calls(12));
#endif
    if (x != want)
        return 1;
    printf("count b_entry 1\ncount b_fib %ld\n", fib_calls(11));
    printf("threads 1\nthreadwork %ld\n", work);
    return 0;
}
