/* A library built by clang-22 with -fxray-shared (libxs.so, from shlib.c with PREFIX=c), which
 * registers itself with an XRay runtime, dlopen'd into this program that links none: sledtrace
 * provides what it needs to load, and traces it. argv[1] is the library's path. */
#include <dlfcn.h>
#include <stdio.h>

#include "progs.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 3;
    }
    long (*entry)(long) = (long (*)(long))dlsym(h, "c_entry");
    if (!entry || entry(12) != fibonacci(12))
        return 1;
    printf("count main 1\ncount c_entry 1\ncount c_fib %ld\n", fib_calls(12));
    printf("threads 1\nthreadwork %ld\n", 2 + fib_calls(12));
    return 0;
}
