/* Built by test_install.sh against an installed sledtrace with
 * `$(pkg-config --cflags --libs sledtrace)` (so linked with the runtime, not preloaded), and
 * with XRay sleds. f is called 3 times with every sled switched off, then 5 times with them on:
 * the trace must count exactly 5 calls of f. Prints the sum of f's results (21). */
#include <sledtrace.h>
#include <stdio.h>

long (*volatile fp)(long);

__attribute__((noinline)) long f(long x)
{
    return x + 1;
}

__attribute__((xray_never_instrument)) int main(void)
{
    long s = 0;
    fp = f;
    if (sledtrace_unpatch() != 0) {
        printf("sledtrace_unpatch failed\n");
        return 2;
    }
    for (int i = 0; i < 3; i++)
        s += fp(i);
    if (sledtrace_patch() != 0) {
        printf("sledtrace_patch failed\n");
        return 3;
    }
    for (int i = 0; i < 5; i++)
        s += fp(i);
    printf("%ld\n", s);
    return 0;
}
