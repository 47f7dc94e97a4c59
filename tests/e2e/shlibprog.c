/* Shared objects: calls into libsla.so (linked in, loaded at start-up) and libslb.so (dlopen'd
 * at run time, then dlclose'd), both instrumented; prints every function's exact count. */
#include <dlfcn.h>
#include <stdio.h>

#include "progs.h"

long a_entry(long n);

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fibp = fib;
    long x = fibp(10) + a_entry(12);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 3;
    long (*b_entry)(long) = (long (*)(long))dlsym(h, "b_entry");
    if (!b_entry)
        return 4;
    x += b_entry(11);
    dlclose(h);
    if (x != fibonacci(10) + fibonacci(12) + fibonacci(11))
        return 1;
    printf("count main 1\ncount fib %ld\n", fib_calls(10));
    printf("count a_entry 1\ncount a_fib %ld\n", fib_calls(12));
    printf("count b_entry 1\ncount b_fib %ld\n", fib_calls(11));
    printf("threads 1\nthreadwork %ld\n", 3 + fib_calls(10) + fib_calls(12) + fib_calls(11));
    return 0;
}
