/* cacheprog: three instrumented functions for the proof-cache tests (test_cache.c). main calls
 * twice() three times and prints 6; never_called() is never called, so the test may change a
 * byte of its code (the immediate 0x3039a5c7 of its multiplication) without changing what the
 * program does. */
#include <stdio.h>

__attribute__((noinline)) int never_called(int x)
{
    return x * 0x3039a5c7 + 7;
}

__attribute__((noinline)) int twice(int x)
{
    return 2 * x;
}

int main(int argc, char **argv)
{
    (void)argv;
    int s = 0;
    for (int i = 0; i < 3; i++)
        s += twice(i);
    if (argc > 100)
        s += never_called(argc);
    printf("%d\n", s);
    return 0;
}
