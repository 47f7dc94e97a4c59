/* Plugins loaded and unloaded by several threads (issue 23.1). THREADS threads each do ROUNDS
 * rounds of: dlopen one of the plugin files given as arguments (round-robin, so two threads
 * share each plugin and one's dlclose often unmaps it while the other's dlopen maps it again,
 * at the same address, before the runtime's next scan), call b_entry(10), dlclose. With
 * "toggle" as the first argument a further thread switches tracing off and on through
 * sledtrace.h meanwhile (looked up with dlsym: the program also runs without the runtime), and
 * the counts are not printed (calls made while tracing is off are not recorded).
 * Usage: plugrace [toggle] PLUGIN...; exit 0 when every call returned the right value. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "progs.h"

enum { THREADS = 8, ROUNDS = 150, MAX_PLUGINS = 16 };

static const char *plugins[MAX_PLUGINS];
static int nplugins;
static _Atomic int failed, done;

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    int t = (int)(long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        void *h = dlopen(plugins[(t + r) % nplugins], RTLD_NOW | RTLD_LOCAL);
        long (*entry)(long) = h ? (long (*)(long))dlsym(h, "b_entry") : NULL;
        if (!entry || entry(10) != fibonacci(10))
            atomic_store(&failed, 1);
        if (h)
            dlclose(h);
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static void *toggler(void *arg)
{
    (void)arg;
    int (*patch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_patch");
    int (*unpatch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_unpatch");
    while (patch && unpatch && !atomic_load(&done)) {
        unpatch();
        patch();
    }
    return NULL;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    int toggle = argc > 1 && strcmp(argv[1], "toggle") == 0;
    for (int i = 1 + toggle; i < argc && nplugins < MAX_PLUGINS; i++)
        plugins[nplugins++] = argv[i];
    if (nplugins == 0)
        return 2;
    pthread_t th[THREADS], tog;
    if (toggle && pthread_create(&tog, NULL, toggler, NULL) != 0)
        return 3;
    for (long t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0)
            return 3;
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&done, 1);
    if (toggle)
        pthread_join(tog, NULL);
    if (atomic_load(&failed))
        return 4;
    if (!toggle) {
        printf("count b_entry %d\ncount b_fib %ld\nthreads %d\n", THREADS * ROUNDS,
               THREADS * ROUNDS * fib_calls(10), THREADS);
        for (int t = 0; t < THREADS; t++)
            printf("threadwork %ld\n", ROUNDS * (1 + fib_calls(10)));
    }
    return 0;
}
