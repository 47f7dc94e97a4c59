/* dlmopen (issue 23.11): argv[1] (libslb.so) is loaded twice, with dlopen into the program's
 * own link-map namespace and with dlmopen into a new one (its own copy, at another address,
 * with its own libc), and each copy's b_entry(10) is called (3 and 5 times). Both copies must
 * be traced. The program's own functions are never traced (it has no sleds). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "progs.h"

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    enum { OWN = 3, OTHER = 5 };
    if (argc < 2)
        return 2;
    void *own = dlopen(argv[1], RTLD_NOW);
    void *other = dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW);
    if (!own || !other)
        return 3;
    long (*e1)(long) = (long (*)(long))dlsym(own, "b_entry");
    long (*e2)(long) = (long (*)(long))dlsym(other, "b_entry");
    if (!e1 || !e2 || e1 == e2)
        return 4;
    for (int i = 0; i < OWN; i++)
        if (e1(10) != fibonacci(10))
            return 5;
    for (int i = 0; i < OTHER; i++)
        if (e2(10) != fibonacci(10))
            return 5;
    dlclose(other);
    dlclose(own);
    printf("count b_entry %d\ncount b_fib %ld\nthreads 1\nthreadwork %ld\n", OWN + OTHER,
           (OWN + OTHER) * fib_calls(10), (OWN + OTHER) * (1 + fib_calls(10)));
    return 0;
}
