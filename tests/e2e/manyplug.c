/* More instrumented libraries than ids packed as (object << 24) can number (issue 23.14):
 * dlopens the plugin files given as arguments, in order, keeps them loaded, and calls the k-th
 * one's b_entry(5) k + 1 times. Prints "plugin K PATH CALLS" per plugin: the test checks that
 * every call is traced under the right object. */
#include <dlfcn.h>
#include <stdio.h>

#include "progs.h"

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    for (int k = 0; k + 1 < argc; k++) {
        void *h = dlopen(argv[k + 1], RTLD_NOW | RTLD_LOCAL);
        long (*entry)(long) = h ? (long (*)(long))dlsym(h, "b_entry") : NULL;
        if (!entry)
            return 3;
        for (int i = 0; i <= k; i++)
            if (entry(5) != fibonacci(5))
                return 4;
        printf("plugin %d %s %d\n", k, argv[k + 1], k + 1);
    }
    return 0;
}
