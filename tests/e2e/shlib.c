/* An instrumented shared object, built twice (libsla.so, linked in; libslb.so, dlopen'd) with
 * -DPREFIX=a / b so that their functions have distinct names. */
#include "progs.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(x) CAT(PREFIX, CAT(_, x))

long (*volatile NAME(fibp))(long);

KEEP long NAME(fib)(long n)
{
    if (n < 2)
        return n;
    return NAME(fibp)(n - 1) + NAME(fibp)(n - 2);
}

KEEP long NAME(entry)(long n)
{
    NAME(fibp) = NAME(fib);
    return NAME(fibp)(n);
}
