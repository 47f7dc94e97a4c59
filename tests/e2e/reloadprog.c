/* A plugin reloaded in a loop (issue 9.5): ROUNDS times, dlopen argv[1] (libslb.so), call
 * b_entry(10), switch tracing off and on again through sledtrace.h (looked up with dlsym, so
 * that the program also runs without the runtime), dlclose. The dynamic linker usually maps
 * the plugin at the same address each time. Every round's calls must be traced, and the
 * switches must never write into a reloaded image the runtime has not patched. */
#include <dlfcn.h>
#include <stdio.h>

#include "progs.h"

enum { ROUNDS = 20 };

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int (*patch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_patch");
    int (*unpatch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_unpatch");
    for (int r = 0; r < ROUNDS; r++) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h)
            return 3;
        long (*entry)(long) = (long (*)(long))dlsym(h, "b_entry");
        if (!entry || entry(10) != fibonacci(10))
            return 4;
        if (unpatch && patch) {
            unpatch();
            patch();
        }
        if (entry(10) != fibonacci(10)) /* after the switches */
            return 5;
        dlclose(h);
    }
    printf("count b_entry %d\ncount b_fib %ld\nthreads 1\nthreadwork %ld\n", 2 * ROUNDS,
           2 * ROUNDS * fib_calls(10), 2 * ROUNDS * (1 + fib_calls(10)));
    return 0;
}
