/* A plugin whose constructor starts a thread that calls the plugin's own traced functions in a
 * loop (issue 9.13): the runtime patches the plugin inside dlopen, after the constructor ran,
 * while that thread executes the pages being rewritten. The host stops and joins the thread
 * (ctor_stop) before dlclose, once it has made a call (ctor_calls). */
#include <pthread.h>
#include <stdatomic.h>

#include "progs.h"

static pthread_t worker;
static atomic_int stop;
static atomic_long calls;
long (*volatile ctor_fibp)(long);

KEEP long ctor_fib(long n)
{
    if (n < 2)
        return n;
    return ctor_fibp(n - 1) + ctor_fibp(n - 2);
}

__attribute__((xray_never_instrument)) static void *loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        ctor_fibp(6);
        atomic_fetch_add(&calls, 1);
    }
    return NULL;
}

__attribute__((constructor, xray_never_instrument)) static void start(void)
{
    ctor_fibp = ctor_fib;
    pthread_create(&worker, NULL, loop, NULL);
}

__attribute__((xray_never_instrument)) long ctor_calls(void)
{
    return atomic_load(&calls);
}

__attribute__((xray_never_instrument)) long ctor_stop(void)
{
    atomic_store(&stop, 1);
    pthread_join(worker, NULL);
    return atomic_load(&calls);
}
